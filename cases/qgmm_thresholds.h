/*
 * qgmm_thresholds.h — THE numerics thresholds: read by the conformance suite, the case
 * library and the runner's gate (qgmm-bench). docs/numerics.md mirrors this table; change
 * both together. Header-only so anything can include it without linking.
 *
 * Two kinds of GEMM error (ops-spec §7):
 *  - kernel error: the backend's output vs a float64 GEMM of the DEQUANTIZED operands it
 *    was given (what the kernel alone got wrong: accumulation order, output rounding).
 *    Metric: relative Frobenius error ||out - ref||_F / ||ref||_F, upper bound per
 *    (recipe, GEMM kind, output dtype).
 *  - recipe error: the output vs a float64 GEMM of the ORIGINAL bf16 operands (what the
 *    whole recipe loses: the casts' quantization plus the kernel). Metric: SQNR in dB,
 *    20 log10(||ref|| / ||ref - out||), lower bound per (recipe, training pass).
 * Casts, layout and padding ops: zero mismatching bytes, always.
 */
#ifndef QGMM_THRESHOLDS_H
#define QGMM_THRESHOLDS_H

#include "qgmm.h"

/* Casts / layout / padding: mismatching bytes allowed vs the CPU reference. */
#define QGMM_THRESH_CAST_MISMATCHED_BYTES 0

typedef struct qgmm_kernel_threshold {
    qgmm_recipe recipe;
    qgmm_gemm_kind kind;
    qgmm_dtype out_dtype;
    double max_rel_fro;      /* vs float64 of the dequantized operands */
} qgmm_kernel_threshold;

/* bf16 output: one bf16 rounding of each output is ~2^-9 relative (rms ~1e-3), so 1e-2
 * leaves room for accumulation order and nothing else. f32 output: f32 accumulation
 * over K <= a few thousand terms stays ~1e-6; 1e-5 is torchao's bound. Every recipe
 * accumulates in f32, so the bounds do not depend on the recipe — the table keeps one
 * row per recipe anyway so a recipe can be tightened alone. */
static const qgmm_kernel_threshold qgmm_kernel_thresholds[] = {
    {QGMM_RECIPE_BF16, QGMM_GEMM_M_GROUPED, QGMM_BF16, 1e-2},
    {QGMM_RECIPE_BF16, QGMM_GEMM_M_GROUPED, QGMM_F32, 1e-5},
    {QGMM_RECIPE_BF16, QGMM_GEMM_K_GROUPED, QGMM_BF16, 1e-2},
    {QGMM_RECIPE_BF16, QGMM_GEMM_K_GROUPED, QGMM_F32, 1e-5},
    {QGMM_RECIPE_FP8_ROWWISE, QGMM_GEMM_M_GROUPED, QGMM_BF16, 1e-2},
    {QGMM_RECIPE_FP8_ROWWISE, QGMM_GEMM_M_GROUPED, QGMM_F32, 1e-5},
    {QGMM_RECIPE_FP8_ROWWISE, QGMM_GEMM_K_GROUPED, QGMM_BF16, 1e-2},
    {QGMM_RECIPE_FP8_ROWWISE, QGMM_GEMM_K_GROUPED, QGMM_F32, 1e-5},
    {QGMM_RECIPE_FP8_BLOCKWISE, QGMM_GEMM_M_GROUPED, QGMM_BF16, 1e-2},
    {QGMM_RECIPE_FP8_BLOCKWISE, QGMM_GEMM_M_GROUPED, QGMM_F32, 1e-5},
    {QGMM_RECIPE_FP8_BLOCKWISE, QGMM_GEMM_K_GROUPED, QGMM_BF16, 1e-2},
    {QGMM_RECIPE_FP8_BLOCKWISE, QGMM_GEMM_K_GROUPED, QGMM_F32, 1e-5},
    {QGMM_RECIPE_MXFP8, QGMM_GEMM_M_GROUPED, QGMM_BF16, 1e-2},
    {QGMM_RECIPE_MXFP8, QGMM_GEMM_M_GROUPED, QGMM_F32, 1e-5},
    {QGMM_RECIPE_MXFP8, QGMM_GEMM_K_GROUPED, QGMM_BF16, 1e-2},
    {QGMM_RECIPE_MXFP8, QGMM_GEMM_K_GROUPED, QGMM_F32, 1e-5},
};

typedef struct qgmm_recipe_threshold {
    qgmm_recipe recipe;
    int pass;                /* 0 forward, 1 dgrad (input grad), 2 wgrad (weight grad) */
    double min_sqnr_db;      /* vs float64 of the bf16 operands */
} qgmm_recipe_threshold;

/* torchao's floors (test/prototype/moe_training/test_*_grouped_mm.py, test_training.py):
 * forward 27 dB, input grad 25 dB, weight grad 24 dB, for every low-precision recipe.
 * BF16 has no quantization step: its recipe error IS its kernel error, bounded above. */
static const qgmm_recipe_threshold qgmm_recipe_thresholds[] = {
    {QGMM_RECIPE_FP8_ROWWISE, 0, 27.0},   {QGMM_RECIPE_FP8_ROWWISE, 1, 25.0},
    {QGMM_RECIPE_FP8_ROWWISE, 2, 24.0},   {QGMM_RECIPE_FP8_BLOCKWISE, 0, 27.0},
    {QGMM_RECIPE_FP8_BLOCKWISE, 1, 25.0}, {QGMM_RECIPE_FP8_BLOCKWISE, 2, 24.0},
    {QGMM_RECIPE_MXFP8, 0, 27.0},         {QGMM_RECIPE_MXFP8, 1, 25.0},
    {QGMM_RECIPE_MXFP8, 2, 24.0},
};

/* The max relative Frobenius error allowed; -1 when the combination has no row (a
 * caller must treat that as "no threshold: fail", never as pass). */
static inline double qgmm_threshold_max_rel_fro(qgmm_recipe r, qgmm_gemm_kind k, qgmm_dtype out)
{
    for (size_t i = 0; i < sizeof qgmm_kernel_thresholds / sizeof qgmm_kernel_thresholds[0]; ++i) {
        const qgmm_kernel_threshold *t = &qgmm_kernel_thresholds[i];
        if (t->recipe == r && t->kind == k && t->out_dtype == out) return t->max_rel_fro;
    }
    return -1.0;
}

/* The SQNR floor in dB for recipe r in training pass `pass`; -1 when none applies
 * (BF16). */
static inline double qgmm_threshold_min_sqnr_db(qgmm_recipe r, int pass)
{
    for (size_t i = 0; i < sizeof qgmm_recipe_thresholds / sizeof qgmm_recipe_thresholds[0]; ++i) {
        const qgmm_recipe_threshold *t = &qgmm_recipe_thresholds[i];
        if (t->recipe == r && t->pass == pass) return t->min_sqnr_db;
    }
    return -1.0;
}

#endif /* QGMM_THRESHOLDS_H */
