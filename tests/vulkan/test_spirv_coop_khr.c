/*
 * test_spirv_coop_khr.c — checks the KHR cooperative-matrix modules that spirv_coop_khr
 * wrote at build time (embedded here from the .spv.inc files of the build), without a GPU: no NV
 * opcode or capability is left, every matrix type carries a Use, the A, B and accumulator
 * types are distinct, every MulAdd takes (A, B, accumulator) typed operands, loads and
 * stores name an integer layout constant, and the BF16 module's 16-bit float is bfloat16
 * with no Float16 capability left. The driver is the final judge (conformance on a GPU);
 * this catches a rewrite that goes wrong on a machine without one.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const uint32_t bf16_khr[] =
#include "gemm_coop_bf16_khr.spv.inc"
    ;
static const uint32_t bf16_wg_khr[] =
#include "gemm_coop_bf16_wg_khr.spv.inc"
    ;
static const uint32_t fp8_wg_khr[] =
#include "gemm_coop_fp8_wg_khr.spv.inc"
    ;
static const uint32_t fp8_khr[] =
#include "gemm_coop_fp8_khr.spv.inc"
    ;
static const uint32_t fp8_blk_khr[] =
#include "gemm_coop_fp8_blk_khr.spv.inc"
    ;

static int fails;
#define CHECK(c, ...)                                   \
    do {                                                \
        if (!(c)) {                                     \
            fprintf(stderr, "FAIL %s: ", name);         \
            fprintf(stderr, __VA_ARGS__);               \
            fputc('\n', stderr);                        \
            fails++;                                    \
        }                                               \
    } while (0)

/* scope: the matrices' (3 subgroup, 2 workgroup); min_muladd: MulAdds the build must hold */
static void check(const char *name, const uint32_t *w, size_t nw, int bf16, uint32_t scope, int min_muladd)
{
    enum { MAXID = 1 << 20 };
    static uint32_t use_of[MAXID], type_of[MAXID], const_val[MAXID], is_const[MAXID], is_coop[MAXID];
    memset(use_of, 0, sizeof use_of);
    memset(type_of, 0, sizeof type_of);
    memset(is_const, 0, sizeof is_const);
    memset(is_coop, 0, sizeof is_coop);
    const int fails0 = fails;
    CHECK(w[0] == 0x07230203u && w[3] < MAXID, "header");
    int ncoop = 0, nmuladd = 0, nload = 0, bf16_type = 0, float16_cap = 0, khr_cap = 0, uses[3] = {0, 0, 0};
    for (size_t p = 5; p < nw;) {
        const uint32_t wc = w[p] >> 16, op = w[p] & 0xFFFF;
        CHECK(wc && p + wc <= nw, "instruction at word %zu", p);
        if (!wc || p + wc > nw) return;
        const uint32_t *o = &w[p + 1];
        CHECK(op < 5357 || op > 5362, "NV opcode %u left", op);
        if (op == 17) { /* OpCapability */
            CHECK(o[0] != 5357, "CooperativeMatrixNV capability left");
            float16_cap |= o[0] == 9;
            khr_cap |= o[0] == 6022;
        }
        if (op == 43 && wc == 4) { is_const[o[1]] = 1; const_val[o[1]] = o[2]; } /* OpConstant */
        if (op == 22 && o[1] == 16) bf16_type |= wc == 4 && o[2] == 0;        /* OpTypeFloat 16 BFloat16 */
        if (op == 4456) {                                                       /* OpTypeCooperativeMatrixKHR */
            ncoop++;
            CHECK(wc == 7 && is_const[o[5]] && const_val[o[5]] <= 2, "matrix type %u without a Use", o[0]);
            if (wc == 7 && is_const[o[5]] && const_val[o[5]] <= 2) {
                use_of[o[0]] = const_val[o[5]] + 1;
                uses[const_val[o[5]]]++;
            }
            is_coop[o[0]] = 1;
            CHECK(wc == 7 && is_const[o[2]] && const_val[o[2]] == scope, "matrix type %u: scope is not %u", o[0], scope);
        }
        if (wc >= 3 && o[0] < MAXID && is_coop[o[0]] && o[1] < MAXID) type_of[o[1]] = o[0];
        if (op == 4457) { /* load: rtype id ptr layout stride */
            nload++;
            CHECK(is_const[o[3]] && const_val[o[3]] <= 1, "load %u: layout is not a 0/1 constant", o[1]);
        }
        if (op == 4458) CHECK(is_const[o[2]] && const_val[o[2]] <= 1, "store: layout is not a 0/1 constant");
        if (op == 4459) { /* MulAdd: rtype id a b c */
            nmuladd++;
            CHECK(use_of[type_of[o[2]]] == 1, "MulAdd %u: A operand not of a MatrixA type", o[1]);
            CHECK(use_of[type_of[o[3]]] == 2, "MulAdd %u: B operand not of a MatrixB type", o[1]);
            CHECK(use_of[type_of[o[4]]] == 3 && use_of[o[0]] == 3, "MulAdd %u: accumulator types", o[1]);
        }
        p += wc;
    }
    CHECK(khr_cap, "no CooperativeMatrixKHR capability");
    CHECK(ncoop >= 3 && uses[0] && uses[1] && uses[2], "matrix types %d (A %d, B %d, acc %d)", ncoop, uses[0],
          uses[1], uses[2]);
    CHECK(nmuladd >= min_muladd && nload >= 6, "%d MulAdds, %d loads", nmuladd, nload);
    if (bf16) CHECK(bf16_type && !float16_cap, "bfloat16 type %d, Float16 capability %d", bf16_type, float16_cap);
    else CHECK(!bf16_type, "an f16 module with a bfloat16 type");
    printf("%s: %zu words, %d matrix types, %d MulAdds, %d loads: %s\n", name, nw, ncoop, nmuladd, nload,
           fails > fails0 ? "FAIL" : "ok");
}

int main(void)
{
    check("gemm_coop_bf16_khr", bf16_khr, sizeof bf16_khr / 4, 1, 3, 8);
    check("gemm_coop_bf16_wg_khr", bf16_wg_khr, sizeof bf16_wg_khr / 4, 1, 2, 4);
    check("gemm_coop_fp8_khr", fp8_khr, sizeof fp8_khr / 4, 0, 3, 8);
    check("gemm_coop_fp8_wg_khr", fp8_wg_khr, sizeof fp8_wg_khr / 4, 0, 2, 4);
    check("gemm_coop_fp8_blk_khr", fp8_blk_khr, sizeof fp8_blk_khr / 4, 0, 3, 8);
    printf("test_spirv_coop_khr: %d failures\n", fails);
    return fails != 0;
}
