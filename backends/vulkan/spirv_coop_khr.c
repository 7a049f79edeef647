/*
 * spirv_coop_khr.c — build-time tool: rewrites a SPIR-V module that glslc compiled with
 * GL_NV_cooperative_matrix into the equivalent SPV_KHR_cooperative_matrix module, and with
 * --bf16 turns its 16-bit float type into bfloat16 (SPV_KHR_bfloat16). Writes the result
 * as a C array initializer, the format of `glslc -mfmt=c`, for embedding.
 *
 * Why: Debian 12's glslc (glslang 11.13) predates GL_KHR_cooperative_matrix and bfloat16,
 * but the drivers we run on expose VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16, and
 * bf16 x bf16 -> f32 MMAs exist only there. The two extensions differ mechanically:
 *  - KHR matrix types carry a Use (A, B or accumulator), NV types do not. Where one NV type
 *    serves as both A and B (16x16x16 shapes), its values and Function variables are split
 *    into two KHR types by following loads, stores, copies and phis from each
 *    OpCooperativeMatrixMulAddNV operand (union-find). Arrays of such matrices, access chains
 *    into them and calls taking them are refused: the shader keeps A/B fragments in plain
 *    variables (backends/vulkan/glsl/gemm_coopmat.comp);
 *  - loads and stores take an integer MemoryLayout id before the stride instead of a bool
 *    after it; the other opcodes are renumbered.
 * Anything this tool does not understand is an error at build time, never a silent
 * miscompile. --help: usage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_NAME = 5, OP_MEMBER_NAME = 6, OP_EXTENSION = 10, OP_CAPABILITY = 17, OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22, OP_TYPE_VECTOR = 23, OP_TYPE_ARRAY = 28, OP_TYPE_RUNTIME_ARRAY = 29,
    OP_TYPE_STRUCT = 30, OP_TYPE_POINTER = 32, OP_TYPE_FUNCTION = 33, OP_CONSTANT_TRUE = 41,
    OP_CONSTANT_FALSE = 42, OP_CONSTANT = 43, OP_SPEC_CONSTANT_OP = 52, OP_FUNCTION_CALL = 57,
    OP_VARIABLE = 59, OP_LOAD = 61, OP_STORE = 62, OP_ACCESS_CHAIN = 65, OP_IN_BOUNDS_ACCESS_CHAIN = 66,
    OP_DECORATE = 71, OP_MEMBER_DECORATE = 72, OP_COPY_OBJECT = 83, OP_SELECT = 169, OP_PHI = 245,
    OP_UNDEF = 1,
    NV_TYPE = 5358, NV_LOAD = 5359, NV_STORE = 5360, NV_MULADD = 5361, NV_LENGTH = 5362,
    KHR_TYPE = 4456, KHR_LOAD = 4457, KHR_STORE = 4458, KHR_MULADD = 4459, KHR_LENGTH = 4460,
    CAP_FLOAT16 = 9, CAP_COOP_NV = 5357, CAP_COOP_KHR = 6022, CAP_BF16_TYPE = 5116, CAP_BF16_COOP = 5118,
    USE_A = 0, USE_B = 1, USE_ACC = 2,
};

static const char *g_in;
static void die(const char *msg, uint32_t id)
{
    fprintf(stderr, "spirv_coop_khr: %s: %s (id %u)\n", g_in, msg, id);
    exit(1);
}

static uint32_t *parent, *type_of, bound0;
/* the result type of id, 0 where unknown or where a literal word is not an id */
static uint32_t TY(uint32_t id) { return id < bound0 ? type_of[id] : 0; }

static uint32_t find(uint32_t x)
{
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
}
static void unite(uint32_t a, uint32_t b) { parent[find(a)] = find(b); }

/* output buffer */
static uint32_t *out;
static size_t nout, capout;
static void put(uint32_t w)
{
    if (nout == capout) {
        capout = capout ? 2 * capout : 4096;
        out = realloc(out, capout * sizeof *out);
        if (!out) die("out of memory", 0);
    }
    out[nout++] = w;
}
static void put_string_inst(uint16_t op, const char *s)
{
    const size_t n = strlen(s) + 1, words = (n + 3) / 4;
    put((uint32_t)((1 + words) << 16) | op);
    for (size_t i = 0; i < words; ++i) {
        uint32_t w = 0;
        for (size_t b = 0; b < 4; ++b)
            if (4 * i + b < n) w |= (uint32_t)(uint8_t)s[4 * i + b] << (8 * b);
        put(w);
    }
}

int main(int argc, char **argv)
{
    int bf16 = 0;
    const char *in = NULL, *outp = NULL;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: spirv_coop_khr [--bf16] IN.spv OUT.inc\n"
                   "  rewrites a GL_NV_cooperative_matrix SPIR-V module to SPV_KHR_cooperative_matrix\n"
                   "  (--bf16: its 16-bit float type becomes bfloat16) and writes a C array initializer\n");
            return 0;
        } else if (!strcmp(argv[i], "--bf16")) bf16 = 1;
        else if (!in) in = argv[i];
        else if (!outp) outp = argv[i];
        else { fprintf(stderr, "spirv_coop_khr: unexpected argument %s\n", argv[i]); return 2; }
    }
    if (!in || !outp) { fprintf(stderr, "usage: spirv_coop_khr [--bf16] IN.spv OUT.inc\n"); return 2; }
    g_in = in;
    FILE *f = fopen(in, "rb");
    if (!f) { perror(in); return 1; }
    fseek(f, 0, SEEK_END);
    const long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (bytes < 20 || bytes % 4) die("not a SPIR-V module", 0);
    uint32_t *w = malloc((size_t)bytes);
    if (!w || fread(w, 1, (size_t)bytes, f) != (size_t)bytes) die("read failed", 0);
    fclose(f);
    const size_t nw = (size_t)bytes / 4;
    if (w[0] != 0x07230203u) die("bad magic (expects little-endian SPIR-V)", 0);
    uint32_t bound = w[3];

    /* ---- pass 1: what is declared */
    type_of = calloc(bound, 4);
    bound0 = bound;
    uint32_t *ptr_pointee = calloc(bound, 4), *is_coop = calloc(bound, 4);
    uint32_t *coop_comp = calloc(bound, 4), *use_mask = calloc(bound, 4), *bool_val = calloc(bound, 4);
    parent = malloc(bound * 4 + 64);
    if (!type_of || !ptr_pointee || !is_coop || !coop_comp || !use_mask || !bool_val || !parent)
        die("out of memory", 0);
    for (uint32_t i = 0; i < bound; ++i) parent[i] = i;
    uint32_t int32_type = 0, half_type = 0;
    size_t first_coop_type = 0, int32_pos = 0;
    int any_nv = 0;
    for (size_t p = 5; p < nw;) {
        const uint32_t wc = w[p] >> 16, op = w[p] & 0xFFFF;
        if (!wc || p + wc > nw) die("truncated instruction", 0);
        const uint32_t *o = &w[p + 1];
        switch (op) {
        case OP_TYPE_INT:
            if (o[1] == 32 && !int32_type) { int32_type = o[0]; int32_pos = p; }
            break;
        case OP_TYPE_FLOAT: if (o[1] == 16) half_type = o[0]; break;
        case OP_TYPE_POINTER: ptr_pointee[o[0]] = o[2]; break;
        case OP_CONSTANT_TRUE: bool_val[o[1]] = 2; break;
        case OP_CONSTANT_FALSE: bool_val[o[1]] = 1; break;
        case NV_TYPE:
            is_coop[o[0]] = 1;
            coop_comp[o[0]] = o[1];
            if (!first_coop_type) first_coop_type = p;
            any_nv = 1;
            break;
        default: break;
        }
        /* result types of the value-producing instructions that can carry a matrix */
        if (op == OP_LOAD || op == NV_LOAD || op == NV_MULADD || op == OP_PHI || op == OP_COPY_OBJECT ||
            op == OP_SELECT || op == OP_UNDEF || op == OP_VARIABLE || op == OP_ACCESS_CHAIN ||
            op == OP_IN_BOUNDS_ACCESS_CHAIN || op == OP_FUNCTION_CALL || op == 44 /* ConstantComposite */ ||
            op == 46 /* ConstantNull */ || op == 80 /* CompositeConstruct */ || op == 82 /* CompositeInsert */ ||
            op == 127 /* FNegate */ || op == 129 /* FAdd */ || op == 131 /* FSub */ || op == 143 /* MatrixTimesScalar */)
            if (wc >= 3) type_of[o[1]] = o[0];
        p += wc;
    }
    if (!any_nv) die("no OpTypeCooperativeMatrixNV: nothing to rewrite", 0);
    if (!int32_type || int32_pos > first_coop_type) die("no 32-bit integer type before the first matrix type", 0);

    /* ---- pass 2: which use each matrix type has (MulAdd operands) */
    for (size_t p = 5; p < nw; p += w[p] >> 16) {
        const uint32_t op = w[p] & 0xFFFF, *o = &w[p + 1];
        if (op != NV_MULADD) continue;
        if (!TY(o[2]) || !TY(o[3]) || !TY(o[4]) || o[0] >= bound0) die("MulAdd operand of unknown type", o[1]);
        use_mask[o[0]] |= 1u << USE_ACC;
        use_mask[TY(o[2])] |= 1u << USE_A;
        use_mask[TY(o[3])] |= 1u << USE_B;
        use_mask[TY(o[4])] |= 1u << USE_ACC;
    }
    uint32_t split = 0; /* the NV type used as both A and B */
    for (uint32_t t = 0; t < bound; ++t) {
        if (!is_coop[t]) continue;
        const uint32_t m = use_mask[t];
        if (m == ((1u << USE_A) | (1u << USE_B))) {
            if (split) die("more than one matrix type is used as both A and B", t);
            split = t;
        } else if (m & (m - 1)) die("matrix type with conflicting uses", t);
    }

    /* ---- pass 3: split the shared A/B type by data flow */
    uint32_t *label = calloc(bound, 4);
    if (!label) die("out of memory", 0);
    if (split) {
        for (size_t p = 5; p < nw; p += w[p] >> 16) {
            const uint32_t wc = w[p] >> 16, op = w[p] & 0xFFFF, *o = &w[p + 1];
            const int val_T = wc >= 3 && TY(o[1]) == split && o[0] == split;
            switch (op) {
            case OP_TYPE_ARRAY: case OP_TYPE_RUNTIME_ARRAY: case OP_TYPE_STRUCT:
                for (uint32_t k = 1; k < wc - 1; ++k)
                    if (o[k] == split) die("array/struct of a matrix used as both A and B", o[0]);
                break;
            case OP_TYPE_POINTER:
                if (o[2] == split && o[1] != 7 /* Function */)
                    die("non-Function pointer to a matrix used as both A and B", o[0]);
                break;
            case OP_ACCESS_CHAIN: case OP_IN_BOUNDS_ACCESS_CHAIN:
                if (o[0] < bound0 && ptr_pointee[o[0]] == split) die("access chain to a matrix used as both A and B", o[1]);
                break;
            case OP_FUNCTION_CALL:
                for (uint32_t k = 3; k < wc - 1; ++k)
                    if (TY(o[k]) == split) die("call taking a matrix used as both A and B", o[1]);
                if (o[0] == split) die("call returning a matrix used as both A and B", o[1]);
                break;
            case OP_LOAD: if (val_T) unite(o[1], o[2]); break;
            case OP_STORE: if (TY(o[1]) == split) unite(o[0], o[1]); break;
            case OP_COPY_OBJECT: if (val_T) unite(o[1], o[2]); break;
            case OP_SELECT: if (val_T) { unite(o[1], o[3]); unite(o[1], o[4]); } break;
            case OP_PHI:
                if (val_T)
                    for (uint32_t k = 2; k + 1 < wc; k += 2) unite(o[1], o[k]);
                break;
            case NV_LOAD: case OP_UNDEF: case OP_VARIABLE: break;
            default:
                if (val_T) die("unsupported instruction producing a matrix used as both A and B", o[1]);
            }
        }
        for (size_t p = 5; p < nw; p += w[p] >> 16) {
            const uint32_t op = w[p] & 0xFFFF, *o = &w[p + 1];
            if (op != NV_MULADD) continue;
            label[find(o[2])] |= 1;
            label[find(o[3])] |= 2;
        }
        for (uint32_t i = 0; i < bound; ++i)
            if (label[i] == 3) die("one matrix value flows into both the A and the B operand", i);
    }
    const uint32_t split_b = split ? bound++ : 0, split_b_ptr = split ? bound++ : 0;
    const uint32_t c_use[3] = {bound, bound + 1, bound + 2};
    bound += 3;
#define IN_B(id) (split && (id) < bound0 && label[find(id)] == 2)

    /* ---- pass 4: emit */
    for (int i = 0; i < 5; ++i) put(w[i]);
    size_t last_cap = 0;
    for (size_t p = 5; p < nw; p += w[p] >> 16)
        if ((w[p] & 0xFFFF) == OP_CAPABILITY) last_cap = p;
    for (size_t p = 5; p < nw;) {
        const uint32_t wc = w[p] >> 16, op = w[p] & 0xFFFF, *o = &w[p + 1];
        size_t start = nout;
        int copied = 0;
        switch (op) {
        case OP_CAPABILITY:
            if (o[0] == CAP_COOP_NV) { put((2u << 16) | OP_CAPABILITY); put(CAP_COOP_KHR); }
            else if (!(bf16 && o[0] == CAP_FLOAT16)) copied = 1;
            if (p == last_cap && bf16) {
                if (copied) { for (uint32_t k = 0; k < wc; ++k) put(w[p + k]); copied = 0; }
                put((2u << 16) | OP_CAPABILITY); put(CAP_BF16_TYPE);
                put((2u << 16) | OP_CAPABILITY); put(CAP_BF16_COOP);
            }
            break;
        case OP_EXTENSION:
            if (!strcmp((const char *)o, "SPV_NV_cooperative_matrix")) {
                put_string_inst(OP_EXTENSION, "SPV_KHR_cooperative_matrix");
                if (bf16) put_string_inst(OP_EXTENSION, "SPV_KHR_bfloat16");
            } else copied = 1;
            break;
        case OP_TYPE_INT:
            copied = 1;
            if (o[0] == int32_type) {
                for (uint32_t k = 0; k < wc; ++k) put(w[p + k]);
                copied = 0;
                for (int u = 0; u < 3; ++u) { put((4u << 16) | OP_CONSTANT); put(int32_type); put(c_use[u]); put((uint32_t)u); }
            }
            break;
        case OP_TYPE_FLOAT:
            if (bf16 && o[0] == half_type) { put((4u << 16) | OP_TYPE_FLOAT); put(o[0]); put(16); put(0 /* BFloat16KHR */); }
            else copied = 1;
            break;
        case NV_TYPE: {
            const uint32_t m = use_mask[o[0]];
            const uint32_t use = (m & (1u << USE_A)) ? USE_A : (m & (1u << USE_B)) ? USE_B
                               : (m & (1u << USE_ACC)) ? USE_ACC : (coop_comp[o[0]] == half_type ? USE_A : USE_ACC);
            put((7u << 16) | KHR_TYPE); put(o[0]); put(o[1]); put(o[2]); put(o[3]); put(o[4]); put(c_use[use]);
            if (o[0] == split) {
                put((7u << 16) | KHR_TYPE); put(split_b); put(o[1]); put(o[2]); put(o[3]); put(o[4]); put(c_use[USE_B]);
                put((4u << 16) | OP_TYPE_POINTER); put(split_b_ptr); put(7); put(split_b);
            }
            break;
        }
        case NV_LOAD: { /* rtype id ptr stride colmajor [mem...] -> rtype id ptr layout stride [mem...] */
            if (!bool_val[o[4]]) die("column-major flag of a load is not a constant", o[1]);
            put((wc << 16) | KHR_LOAD);
            put(IN_B(o[1]) ? split_b : o[0]); put(o[1]); put(o[2]); put(c_use[bool_val[o[4]] - 1]); put(o[3]);
            for (uint32_t k = 5; k < wc - 1; ++k) put(o[k]);
            break;
        }
        case NV_STORE: { /* ptr obj stride colmajor [mem...] -> ptr obj layout stride [mem...] */
            if (!bool_val[o[3]]) die("column-major flag of a store is not a constant", o[1]);
            put((wc << 16) | KHR_STORE);
            put(o[0]); put(o[1]); put(c_use[bool_val[o[3]] - 1]); put(o[2]);
            for (uint32_t k = 4; k < wc - 1; ++k) put(o[k]);
            break;
        }
        case NV_MULADD: for (uint32_t k = 0; k < wc; ++k) put(k ? w[p + k] : (wc << 16) | KHR_MULADD); break;
        case NV_LENGTH: for (uint32_t k = 0; k < wc; ++k) put(k ? w[p + k] : (wc << 16) | KHR_LENGTH); break;
        case OP_SPEC_CONSTANT_OP:
            if (o[2] == NV_LENGTH) die("OpSpecConstantOp CooperativeMatrixLengthNV: use a fixed length", o[1]);
            copied = 1;
            break;
        default:
            copied = 1;
        }
        if (copied) {
            for (uint32_t k = 0; k < wc; ++k) put(w[p + k]);
            /* retype the B side of the split type */
            if (split && wc >= 3 && op != OP_STORE && op != OP_NAME && op != OP_DECORATE && o[1] < bound) {
                if (op == OP_VARIABLE && o[0] < bound0 && ptr_pointee[o[0]] == split && IN_B(o[1])) out[start + 1] = split_b_ptr;
                else if (op != OP_VARIABLE && TY(o[1]) == split && o[0] == split && IN_B(o[1])) out[start + 1] = split_b;
            }
        }
        /* bf16: the 16-bit float may be nothing but a matrix component */
        if (bf16 && half_type && op > OP_CAPABILITY && op != NV_TYPE && op != OP_TYPE_FLOAT && op != OP_NAME && op != OP_MEMBER_NAME &&
            op != OP_DECORATE && op != OP_MEMBER_DECORATE) {
            int bad = wc >= 2 && o[0] == half_type;
            if (op == OP_TYPE_POINTER) bad = o[2] == half_type;
            if (op == OP_TYPE_VECTOR || op == OP_TYPE_ARRAY || op == OP_TYPE_RUNTIME_ARRAY) bad = o[1] == half_type;
            if (op == OP_TYPE_STRUCT || op == OP_TYPE_FUNCTION)
                for (uint32_t k = 1; k < wc - 1; ++k) bad |= o[k] == half_type;
            if (bad) die("--bf16: the 16-bit float type is used outside a matrix type", half_type);
        }
        p += wc;
    }
    out[3] = bound;

    FILE *g = fopen(outp, "w");
    if (!g) { perror(outp); return 1; }
    fputc('{', g);
    for (size_t i = 0; i < nout; ++i) fprintf(g, "0x%08x%s", out[i], i + 1 == nout ? "}\n" : (i % 4 == 3 ? ",\n" : ","));
    if (fclose(g)) { perror(outp); return 1; }
    free(w); free(out); free(type_of); free(ptr_pointee); free(is_coop); free(coop_comp); free(use_mask);
    free(bool_val); free(parent); free(label);
    return 0;
}
