// qgmm.h from C++: every parameter INIT macro initialises its struct with no cast (no int
// converted to an enum), under -std=c++11 -Wall -Wextra -pedantic -Werror
// (tests/CMakeLists.txt), gives the documented defaults, and the structs run a cpu op.
#include "qgmm.h"

#include <cstdio>
#include <cstring>

static int g_failures = 0;

static void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "FAIL: %s\n", what);
        ++g_failures;
    }
}

int main()
{
    const qgmm_fp8_rowwise_params rw = QGMM_FP8_ROWWISE_PARAMS_INIT(1);
    const qgmm_mxfp8_params mx = QGMM_MXFP8_PARAMS_INIT(1);
    const qgmm_fp8_blockwise_params bw = QGMM_FP8_BLOCKWISE_PARAMS_INIT(QGMM_BLOCK_1X128);
    const qgmm_quant_format f_rw = QGMM_QUANT_FORMAT_FP8_ROWWISE_INIT(1);
    const qgmm_quant_format f_mx = QGMM_QUANT_FORMAT_MXFP8_INIT(1);
    const qgmm_quant_format f_bw = QGMM_QUANT_FORMAT_FP8_BLOCKWISE_INIT(QGMM_BLOCK_128X128);
    const qgmm_grouped_gemm_params gp = QGMM_GROUPED_GEMM_PARAMS_INIT(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_FP8_ROWWISE);
    const qgmm_moe_params mp = QGMM_MOE_PARAMS_INIT(QGMM_RECIPE_MXFP8);
    // also as members of an aggregate, and assigned through a named temporary
    struct layer { qgmm_moe_params p; qgmm_grouped_gemm_params g; };
    const layer l = {QGMM_MOE_PARAMS_INIT(QGMM_RECIPE_BF16), QGMM_GROUPED_GEMM_PARAMS_INIT(QGMM_GEMM_K_GROUPED, QGMM_RECIPE_BF16)};
    qgmm_mxfp8_params assigned = QGMM_MXFP8_PARAMS_INIT(0);
    const qgmm_mxfp8_params other = QGMM_MXFP8_PARAMS_INIT(1);
    assigned = other;

    check(rw.reduce_dim == 1 && rw.power_of_2 == 0 && rw.scale_kind == QGMM_SCALE_RECIPROCAL, "rowwise defaults");
    check(mx.mode == QGMM_MX_RCEIL && mx.scale_layout == QGMM_SCALES_PLAIN, "mxfp8 defaults (RCEIL, PLAIN)");
    check(bw.block == QGMM_BLOCK_1X128, "blockwise");
    check(f_rw.kind == QGMM_QUANT_FP8_ROWWISE && f_mx.kind == QGMM_QUANT_MXFP8 && f_mx.mx.mode == QGMM_MX_RCEIL &&
              f_bw.kind == QGMM_QUANT_FP8_BLOCKWISE && f_bw.blockwise.block == QGMM_BLOCK_128X128,
          "quant formats");
    check(gp.kind == QGMM_GEMM_M_GROUPED && gp.recipe == QGMM_RECIPE_FP8_ROWWISE, "gemm params");
    check(mp.recipe == QGMM_RECIPE_MXFP8 && mp.fp8_dtype == QGMM_F8E4M3FN && mp.mx_mode == QGMM_MX_RCEIL,
          "moe defaults (e4m3fn, RCEIL)");
    check(l.p.recipe == QGMM_RECIPE_BF16 && l.g.kind == QGMM_GEMM_K_GROUPED, "nested");
    check(assigned.block_dim == 1, "assignment");

    // one MXFP8 quantize and its dequantize on cpu, straight from the macros
    qgmm_context *ctx = 0;
    if (qgmm_context_create("cpu", 0, &ctx) != QGMM_OK) {
        std::fprintf(stderr, "FAIL: no cpu context: %s\n", qgmm_last_error(0));
        return 1;
    }
    float x[4 * 64];
    for (int i = 0; i < 4 * 64; ++i) x[i] = static_cast<float>(i % 17) - 8.0f;
    qgmm_buffer *bx = 0, *bq = 0, *bs = 0, *by = 0;
    qgmm_buffer_alloc(ctx, sizeof x, &bx);
    qgmm_buffer_alloc(ctx, 4 * 64, &bq);
    qgmm_buffer_alloc(ctx, 4 * 2, &bs);
    qgmm_buffer_alloc(ctx, sizeof x, &by);
    qgmm_buffer_upload(bx, 0, x, sizeof x);
    const int64_t shape[2] = {4, 64}, sshape[2] = {4, 2};
    const qgmm_tensor tx = qgmm_tensor_make(bx, 0, QGMM_F32, 2, shape);
    const qgmm_tensor tq = qgmm_tensor_make(bq, 0, QGMM_F8E4M3FN, 2, shape);
    const qgmm_tensor ts = qgmm_tensor_make(bs, 0, QGMM_E8M0, 2, sshape);
    const qgmm_tensor ty = qgmm_tensor_make(by, 0, QGMM_F32, 2, shape);
    check(qgmm_quantize_mxfp8(ctx, &mx, &tx, &tq, &ts) == QGMM_OK, "quantize");
    check(qgmm_dequantize(ctx, &f_mx, &tq, &ts, 0, &ty) == QGMM_OK, "dequantize");
    check(qgmm_synchronize(ctx) == QGMM_OK && qgmm_last_error(ctx)[0] == 0, "synchronize");
    float y[4 * 64];
    qgmm_buffer_download(by, 0, y, sizeof y);
    check(std::memcmp(x, y, sizeof x) == 0, "small integers round-trip exactly through MXFP8");
    qgmm_buffer_free(bx);
    qgmm_buffer_free(bq);
    qgmm_buffer_free(bs);
    qgmm_buffer_free(by);
    qgmm_context_destroy(ctx);
    std::printf("C++ parameter initializers: %d failed\n", g_failures);
    return g_failures ? 1 : 0;
}
