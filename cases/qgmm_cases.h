/*
 * qgmm_cases.h — the case library: every (op, variant, dtype, shape class) qgmm is
 * checked and timed on, as data. The conformance suite (tests/conformance/) and the
 * nightly runner (ci/, qgmm-bench) link the same library, so a case means the same
 * inputs, the same check and the same thresholds everywhere. Adding a backend needs
 * no new code here: every case runs through the public API on any qgmm_context.
 *
 * Life of a case:
 *   const qgmm_case *c = qgmm_case_get("conformance", i);
 *   qgmm_case_instance *inst;
 *   qgmm_case_prepare(c, ctx, &inst);        // allocate on ctx, random inputs, poison
 *   qgmm_case_execute(inst);                 // enqueue the op once (timing loops)
 *   qgmm_case_check(inst, ref_ctx, NULL, &r);// poison, run, sync, compare vs reference
 *   qgmm_case_release(inst);
 *
 * What "reference" means per check kind:
 *   EXACT   (casts, layout, padding): the same case run on ref_ctx (the CPU backend);
 *           every byte of every output buffer compared — data, scales, padding bytes,
 *           group starts and the poisoned bytes around and between the elements.
 *   NUMERIC (GEMMs, recipes): a float64 GEMM on the host of the dequantized operands the
 *           backend consumed (kernel error), and of the original bf16 operands (recipe
 *           error, SQNR). ref_ctx is not needed for these.
 * Thresholds come from qgmm_thresholds.h (mirrored in docs/numerics.md).
 */
#ifndef QGMM_CASES_H
#define QGMM_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "qgmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ descriptors */
typedef enum qgmm_case_op {
    QGMM_CASE_FP8_ROWWISE = 0,      /* qgmm_quantize_fp8_rowwise */
    QGMM_CASE_FP8_ROWWISE_DUAL,     /* qgmm_quantize_fp8_rowwise_dual (two tensors, one offs) */
    QGMM_CASE_MXFP8,                /* qgmm_quantize_mxfp8 */
    QGMM_CASE_FP8_BLOCKWISE,        /* qgmm_quantize_fp8_blockwise */
    QGMM_CASE_DEQUANTIZE,           /* qgmm_dequantize (q and scales made on the host) */
    QGMM_CASE_SCALES_TO_BLOCKED,    /* qgmm_scales_to_blocked */
    QGMM_CASE_SCALES_FROM_BLOCKED,  /* qgmm_scales_from_blocked */
    QGMM_CASE_PAD,                  /* qgmm_pad_token_groups */
    QGMM_CASE_UNPAD,                /* qgmm_unpad_token_groups */
    QGMM_CASE_GROUP_ROW_IDS,        /* qgmm_group_row_ids */
    QGMM_CASE_GROUPED_GEMM,         /* qgmm_grouped_gemm on host-quantized operands */
    QGMM_CASE_RECIPE,               /* the backend's own casts (+ layout) feeding its GEMM */
    QGMM_CASE_MOE_FORWARD,          /* qgmm_moe_experts_forward (composite) */
    QGMM_CASE_MOE_BACKWARD,         /* qgmm_moe_experts_backward: dx and dw both checked */
    QGMM_CASE_OP_COUNT
} qgmm_case_op;

typedef enum qgmm_case_family {
    QGMM_FAMILY_CAST = 0,    /* quantize, dequantize */
    QGMM_FAMILY_LAYOUT,      /* scales to/from blocked */
    QGMM_FAMILY_DATA,        /* pad / unpad / row ids */
    QGMM_FAMILY_GEMM,
    QGMM_FAMILY_RECIPE,
    QGMM_FAMILY_COMPOSITE    /* the one-call MoE expert forward / backward */
} qgmm_case_family;

typedef enum qgmm_check_kind {
    QGMM_CHECK_EXACT = 0,    /* byte for byte vs the CPU reference */
    QGMM_CHECK_NUMERIC = 1   /* rel. Frobenius / SQNR vs float64 */
} qgmm_check_kind;

/* How group offsets are drawn (all from the case seed; host side, deterministic). */
typedef enum qgmm_group_pattern {
    QGMM_GROUPS_NONE = 0,    /* the op takes no offsets */
    QGMM_GROUPS_EVEN,        /* G equal sizes (rounded to the group multiple), last takes the rest */
    QGMM_GROUPS_RAGGED,      /* random sizes, every group non-empty where the extent allows */
    QGMM_GROUPS_EMPTY,       /* ragged, with the first, one middle and the last group empty */
    QGMM_GROUPS_SINGLE,      /* G = 1, one group over the whole extent */
    QGMM_GROUPS_SHORT,       /* ragged, offs[G-1] < extent: a tail no group covers */
    QGMM_GROUPS_BAD          /* INVALID offsets (a decreasing pair, or offs[G-1] past the
                                extent, by seed): the op must write nothing and the next
                                qgmm_synchronize must return QGMM_ERR_BAD_OFFSETS */
} qgmm_group_pattern;

/* How the high-precision inputs are drawn. Never all zeros. */
typedef enum qgmm_input_pattern {
    QGMM_INPUT_NORMAL = 0,   /* ~N(0,1), each row scaled by a random 2^[-4,4] */
    QGMM_INPUT_EDGE,         /* NORMAL plus planted NaN, +-inf, +-0, f32 subnormals, +-fp8max,
                                values just above fp8max, rounding ties, all-equal blocks and
                                all-zero blocks (casts only: a GEMM over NaN has no SQNR) */
    QGMM_INPUT_WIDE          /* magnitudes spread over 2^[-30,30] per row/block */
} qgmm_input_pattern;

/* Which training pass a RECIPE case is (fixes operands, casts and its SQNR floor). */
typedef enum qgmm_recipe_pass {
    QGMM_PASS_FORWARD = 0,   /* out = x . w_g^T          (M-grouped) */
    QGMM_PASS_DGRAD = 1,     /* dx = dy . w_g            (M-grouped, weights transposed) */
    QGMM_PASS_WGRAD = 2      /* dw_g = dy_g^T . x_g      (K-grouped) */
} qgmm_recipe_pass;

/* Dimensions. Meaning per op (unused ones are 0):
 *   casts, dequantize:  x (M, K), or (E, M, K) when E > 0; G groups for jagged scaling
 *                       (over K for reduce_dim 1, over M for reduce_dim 0).
 *   scales to/from blocked: data (M, K) [(E, M, K)] whose MX scales are (M, K/32);
 *                       M_GROUPS: G groups over M; K_GROUPS: G groups over K.
 *   pad/unpad/row ids:  tokens M, width K, G groups, alignment in the descriptor.
 *   GEMM M-grouped:     a (M, K), b (E, N, K), G = E groups over M.
 *   GEMM K-grouped:     a (M, N), b (M, K), out (G, N, K), G groups over M.
 *   RECIPE, MOE_*:      the layer's x (M, K), w (E, N, K), dy (M, N), G = E groups. */
typedef struct qgmm_case_shape {
    int64_t M, N, K, E, G;
} qgmm_case_shape;

#define QGMM_CASE_NAME_MAX 96
#define QGMM_CASE_ID_MAX 192

typedef struct qgmm_case {
    /* Variant name without the shape, e.g. "mxfp8.dim0.blocked.rceil.e4m3fn"; the same
     * for every shape of the variant (a series key for the runner). */
    char name[QGMM_CASE_NAME_MAX];
    /* name + "/" + shape class, e.g. "mxfp8.dim0.blocked.rceil.e4m3fn/M256.K512.edge":
     * unique within a suite. */
    char id[QGMM_CASE_ID_MAX];
    qgmm_case_op op;
    qgmm_case_family family;
    qgmm_check_kind check;

    /* ---- op parameters (only the op's own are meaningful) */
    qgmm_fp8_rowwise_params rowwise;      /* FP8_ROWWISE, DUAL (both tensors), DEQUANTIZE */
    qgmm_mxfp8_params mx;                 /* MXFP8, DEQUANTIZE, RECIPE (mode) */
    qgmm_fp8_blockwise_params blockwise;  /* FP8_BLOCKWISE, DEQUANTIZE */
    qgmm_blockwise_layout blockwise_layout;
    qgmm_quant_kind dequant_kind;         /* DEQUANTIZE: which quantize made q */
    qgmm_blocked_variant blocked;         /* SCALES_TO/FROM_BLOCKED */
    int alignment;                        /* PAD, UNPAD, GROUP_ROW_IDS (16/32/128) */
    int row_ids_padded;                   /* GROUP_ROW_IDS: with padded_offs */
    qgmm_grouped_gemm_params gemm;        /* GROUPED_GEMM, RECIPE, MOE_* (recipe; kind from pass) */
    qgmm_recipe_pass pass;                /* RECIPE; GROUPED_GEMM: which floor applies */
    int transposed_out;                   /* q written transposed / column-major */
    int transposed_in;                    /* casts: x the transposed view of a row-major
                                             tensor (the MoE composite's blockwise wgrad
                                             operands and dgrad weights) */
    int padded_pitch;                     /* casts: x and q rows (columns when transposed) 32
                                             elements apart from the next: strided input, and
                                             gaps in the output that must stay untouched */

    /* ---- dtypes */
    qgmm_dtype in_dtype;    /* high-precision input (f32/bf16); layout ops: u8 */
    qgmm_dtype q_dtype;     /* fp8 dtype of casts and of the GEMM operands */
    qgmm_dtype out_dtype;   /* GEMM / dequantize output (bf16 or f32) */

    /* ---- shape class */
    qgmm_case_shape shape;
    qgmm_group_pattern groups;
    int group_multiple;     /* every drawn group size is a multiple of this (1 = any) */
    qgmm_input_pattern input;
    uint64_t seed;

    /* ---- cost of one qgmm_case_execute, for GB/s and TFLOP/s. bytes: every input
     * element read once plus every output byte written (logical sizes, not padding
     * slack); flops: 2 * (rows actually covered by groups) * N * K for GEMMs, 0 else. */
    double bytes;
    double flops;
} qgmm_case;

/* ------------------------------------------------------------------ suites */
/* Suites: "conformance" (small/medium shapes, every op x variant x dtype x shape class),
 * "smoke" (a few small MoE-like shapes, seconds on a GPU), "nightly" (the MoE benchmark
 * shapes of ops-spec §8). Unknown suite: count 0, get NULL. The returned pointers stay
 * valid for the life of the process. */
int qgmm_case_count(const char *suite);
const qgmm_case *qgmm_case_get(const char *suite, int index);
/* The suite names, NULL-terminated. */
const char *const *qgmm_case_suites(void);
/* The names case ids, the runner's series parameters and suite files use for a recipe
 * ("bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"), a group pattern ("none", "even",
 * "ragged", "empty", "single", "short", "badoffs") and an input pattern ("normal", "edge",
 * "wide"); "?" for a value out of range. */
const char *qgmm_case_recipe_name(qgmm_recipe r);
const char *qgmm_case_groups_name(qgmm_group_pattern g);
const char *qgmm_case_input_name(qgmm_input_pattern p);

/* A case by its id (or, failing that, the first case whose name matches) in `suite`. */
const qgmm_case *qgmm_case_find(const char *suite, const char *id_or_name);

/* A copy of `tmpl` with another shape (and group count/pattern kept), its id, bytes and
 * flops recomputed: how the runner builds its own shape lists from any conformance
 * variant. Returns QGMM_ERR_INVALID_ARGUMENT (with a message in *why, may be NULL) when
 * the shape breaks the op's rules (e.g. K not a multiple of 32 for MXFP8). */
qgmm_status qgmm_case_reshape(const qgmm_case *tmpl, const qgmm_case_shape *shape,
                              qgmm_case *out, char *why, size_t why_cap);

/* The case's group end offsets (G int32 values, drawn from the seed): what prepare
 * uploads. Returns G (0 for ops without groups); offs may be NULL to just count. */
int64_t qgmm_case_offsets(const qgmm_case *c, int32_t *offs, int64_t cap);

/* One human line describing the case (op, params, dtypes, shape, groups, input). */
void qgmm_case_describe(const qgmm_case *c, char *out, size_t cap);

/* ------------------------------------------------------------------ instances */
typedef struct qgmm_case_instance qgmm_case_instance;

/* Allocates every buffer on ctx (outputs with poisoned guard bands around them), fills
 * the inputs with fresh random data from the seed and poisons the outputs. Returns the
 * API status; on failure *out is NULL and the message is in qgmm_last_error(ctx).
 * QGMM_ERR_UNSUPPORTED when the backend refuses a needed buffer layout. */
qgmm_status qgmm_case_prepare(const qgmm_case *c, qgmm_context *ctx, qgmm_case_instance **out);

/* The case of `from` on ctx with from's inputs: the host bytes `from` drew are uploaded
 * again (nothing is drawn anew) and its output masks and host operands kept, then `from`
 * is released (also on failure). What a run that checks one case on several backends
 * prepares after the first: each case's inputs are generated once. */
qgmm_status qgmm_case_prepare_from(qgmm_case_instance *from, qgmm_context *ctx, qgmm_case_instance **out);

/* Enqueues the op (a RECIPE case: its casts, layout op and GEMM) once; does not
 * synchronize. Outputs are overwritten identically every time. QGMM_ERR_UNSUPPORTED
 * when the backend does not implement this variant. */
qgmm_status qgmm_case_execute(qgmm_case_instance *inst);

/* qgmm_case_execute through the composite's _profiled call (qgmm_moe_profile: the caller's
 * events, the steps run, their phases and names): MOE_FORWARD and MOE_BACKWARD cases only,
 * QGMM_ERR_UNSUPPORTED for the others. */
qgmm_status qgmm_case_execute_profiled(qgmm_case_instance *inst, qgmm_moe_profile *prof);

const qgmm_case *qgmm_case_of(const qgmm_case_instance *inst);
qgmm_context *qgmm_case_context(const qgmm_case_instance *inst);

typedef enum qgmm_verdict {
    QGMM_VERDICT_PASS = 0,
    QGMM_VERDICT_FAIL = 1,         /* wrong bytes/numerics, touched poison, or an op error */
    QGMM_VERDICT_UNSUPPORTED = 2,  /* the backend returned QGMM_ERR_UNSUPPORTED */
    QGMM_VERDICT_SKIPPED = 3       /* could not be checked here (e.g. no reference context) */
} qgmm_verdict;

const char *qgmm_verdict_name(qgmm_verdict v);   /* "PASS", "FAIL", "unsupported", "skipped" */

typedef struct qgmm_check_options {
    /* NUMERIC checks: 0 compares every output element with the float64 reference; N > 0
     * compares N output elements drawn from the seed (for nightly shapes, where a full
     * float64 GEMM on the host would take hours). Poison checks always cover everything. */
    int64_t gemm_sample_elems;
    /* EXACT checks: 1 makes no reference instance: the two runs' coverage and determinism
     * and the output hash only, which the caller compares with a reference's hash (the
     * nightly runner's reference cache). ref_ctx is then not used. */
    int hash_only;
    /* With hash_only: 1 runs the op once and hashes its outputs, no coverage or determinism
     * check. For a reference whose hash the checked backend's is compared with: bytes it
     * left unwritten hash as poison and fail every backend against it, never pass one. */
    int single_run;
} qgmm_check_options;

typedef struct qgmm_case_result {
    qgmm_verdict verdict;
    qgmm_status status;          /* first non-OK API status seen, QGMM_OK otherwise */
    char message[512];           /* why it failed / was skipped; "" on PASS */
    qgmm_check_kind check;
    int reference_is_same_backend; /* EXACT vs a reference of the same backend name (cpu vs
                                      cpu): the check then only shows determinism */

    /* EXACT */
    uint64_t compared_bytes;     /* every byte of every output buffer (guards included) */
    uint64_t mismatched_bytes;
    char first_mismatch[128];    /* "scales+0x1a4: got 0x7f want 0x7e" */

    /* NUMERIC: kernel error vs float64 of the dequantized operands */
    double rel_fro_err;          /* ||out - ref||_F / ||ref||_F */
    double sqnr_db;              /* 20 log10(||ref|| / ||out - ref||); +inf when equal */
    double max_abs_err;
    double max_rel_fro_allowed;  /* the threshold applied */
    /* NUMERIC: recipe error vs float64 of the bf16 operands (NAN when not applicable) */
    double recipe_sqnr_db;
    double min_recipe_sqnr_db;   /* the floor applied (NAN when none) */
    int64_t compared_elems;
    int64_t nonfinite_elems;     /* NaN/inf in the backend's output where ref is finite */

    /* both kinds */
    uint64_t poison_violations;  /* bytes that must keep their poison but changed */
    uint64_t output_hash;        /* qgmm_case_hash of the backend's output regions, in order */
    double ms;                   /* wall time of the checked execution incl. synchronize */
} qgmm_case_result;

/* Poisons the outputs, runs the case once, synchronizes, downloads every output and
 * compares (see the top of this file). ref_ctx: a CPU context (required for EXACT
 * cases: without it the verdict is SKIPPED). opts may be NULL (defaults: full check).
 * Returns QGMM_OK when a verdict was reached (PASS, FAIL, UNSUPPORTED or SKIPPED), an
 * error only for harness failures (out of host memory). */
qgmm_status qgmm_case_check(qgmm_case_instance *inst, qgmm_context *ref_ctx,
                            const qgmm_check_options *opts, qgmm_case_result *out);

void qgmm_case_release(qgmm_case_instance *inst);

/* Where the calling thread's time in the case library went, in seconds since the thread
 * started (each thread has its own totals; read twice and subtract for an interval). */
typedef struct qgmm_case_clocks {
    double generate;   /* inputs drawn from the seed; GEMM operands quantized on the host */
    double upload;     /* inputs copied to the backend */
    double setup;      /* buffers allocated, output masks marked, outputs poisoned */
    double execute;    /* the check's runs of the op, synchronize included */
    double download;   /* outputs copied back to the host */
    double compare;    /* coverage, output hash, byte comparison, float64 GEMM reference */
} qgmm_case_clocks;
void qgmm_case_clocks_get(qgmm_case_clocks *out);

/* Test hook: called on every output downloaded from the backend under test, before the
 * comparison (output_name e.g. "q", "scales", "out"; bytes include the guard bands).
 * Used by tests/test_conformance_selfcheck.c to plant a wrong byte and see FAIL.
 * NULL removes it. Process-wide; not thread safe. */
typedef void (*qgmm_case_output_hook)(const qgmm_case *c, const char *output_name,
                                      uint8_t *bytes, size_t n, size_t guard_bytes,
                                      void *user);
void qgmm_case_set_output_hook(qgmm_case_output_hook hook, void *user);

/* ------------------------------------------------------------------ helpers */
/* FNV-1a 64-bit, chained: pass the previous hash (QGMM_FNV1A_INIT to start). */
#define QGMM_FNV1A_INIT 0xcbf29ce484222325ull
uint64_t qgmm_fnv1a64(uint64_t h, const void *data, size_t n);
/* The output hash ("fnv1a64c"), chained like qgmm_fnv1a64: the FNV-1a 64 of each
 * QGMM_CASE_HASH_CHUNK-byte piece of data (the last one shorter), computed in parallel,
 * then FNV-1a 64 over those values as 8 little-endian bytes each: FNV-1a is byte-serial,
 * so one stream of it over the nightly suite's hundreds of GB would dominate the run. */
#define QGMM_CASE_HASH_CHUNK ((size_t)1 << 20)
uint64_t qgmm_case_hash(uint64_t h, const void *data, size_t n);

/* Float64 reference GEMM: c[m][n] = sum_k a(m,k) * b(n,k) with element (i,j) of a at
 * a[i*a_rs + j*a_cs] (same for b). All float64. */
void qgmm_ref_gemm_f64(int64_t M, int64_t N, int64_t K, const double *a, int64_t a_rs,
                       int64_t a_cs, const double *b, int64_t b_rs, int64_t b_cs, double *c);

/* Error statistics of `out` against `ref` (n values): relative Frobenius error, SQNR in
 * dB (+inf when identical), max abs error; values where ref is finite and out is not
 * are counted in `nonfinite` and make rel_fro/sqnr/max_abs infinite-bad (inf, -inf, inf). */
typedef struct qgmm_err_stats {
    double rel_fro, sqnr_db, max_abs;
    int64_t n, nonfinite;
} qgmm_err_stats;
qgmm_err_stats qgmm_error_stats(const double *out, const double *ref, int64_t n);
double qgmm_sqnr_db(const double *out, const double *ref, int64_t n);

#ifdef __cplusplus
}
#endif
#endif /* QGMM_CASES_H */
