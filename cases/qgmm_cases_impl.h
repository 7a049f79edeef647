/*
 * qgmm_cases_impl.h — internals shared by the qgmm_cases*.c files (not for users of the
 * case library: include qgmm_cases.h).
 */
#ifndef QGMM_CASES_IMPL_H
#define QGMM_CASES_IMPL_H

#include "qgmm_cases.h"

/* ------------------------------------------------------------------ random numbers */
/* splitmix64: tiny, good enough, and identical on every machine. Inputs are made from
 * integer arithmetic and exact float operations only (no libm), so a case's inputs —
 * and hence the runner's output hashes — are the same bytes everywhere. */
typedef struct qc_rng { uint64_t s; } qc_rng;
#define QC_RNG_STEP 0x9E3779B97F4A7C15ull   /* what each qc_next adds to the state */
double qc_uniform(qc_rng *r);                 /* [0, 1) */
int64_t qc_range(qc_rng *r, int64_t lo, int64_t hi);  /* [lo, hi] */
uint64_t qc_mix_seed(uint64_t seed, uint64_t salt);

/* Inline (the library is built position-independent, where a global function is never
 * inlined into its callers): the input fills draw one value per element. */
static inline uint64_t qc_next(qc_rng *r)
{
    uint64_t z = (r->s += QC_RNG_STEP);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Irwin-Hall(4), mean 0, var ~1: four 16-bit uniforms (k + 1/2) / 2^16 from one draw; their
 * sum minus 2 has variance 1/3, scaled by sqrt(3). The integer sum is exact in a float, one
 * rounded multiply: the same bits everywhere (no libm). One draw per value, not four: the
 * nightly suite draws about 10^11 values per backend. */
static inline float qc_normalish(qc_rng *r)
{
    const uint64_t z = qc_next(r);
    const int32_t s = (int32_t)(z & 0xffff) + (int32_t)(z >> 16 & 0xffff) + (int32_t)(z >> 32 & 0xffff) +
                      (int32_t)(z >> 48) - 131070;
    return (float)s * (1.7320508075688772f / 65536.0f);
}

/* ------------------------------------------------------------------ host data */
/* Fills `n` logical (rows x cols) values, row-major, per the input pattern of c, in f32;
 * `fp8_dtype` picks the special values (fp8max) planted by QGMM_INPUT_EDGE; NORMAL rows
 * are scaled by 2^k, k uniform in [-row_exp, row_exp]. */
void qc_fill_f32(float *dst, int64_t rows, int64_t cols, qgmm_input_pattern pat,
                 qgmm_dtype fp8_dtype, int allow_subnormal, int row_exp, uint64_t seed);
/* qc_fill_f32's values stored as dt (f32, or bf16 rounded to nearest even) into dst, without
 * an f32 copy of the whole array. */
void qc_fill_as(uint8_t *dst, qgmm_dtype dt, int64_t rows, int64_t cols, qgmm_input_pattern pat,
                qgmm_dtype fp8_dtype, int allow_subnormal, int row_exp, uint64_t seed);
/* Reads element i of a host array of dtype dt as double (f32, bf16, fp8 kinds). */
double qc_load_as_f64(const uint8_t *src, qgmm_dtype dt, int64_t i);

/* ------------------------------------------------------------------ clocks */
/* This thread's phase totals (qgmm_case_clocks_get) and a monotonic clock in seconds. */
extern _Thread_local qgmm_case_clocks qc_clk;
double qc_now(void);

/* ------------------------------------------------------------------ instances */
typedef enum qc_role { QC_IN = 0, QC_OUT = 1, QC_TMP = 2 } qc_role;

#define QC_MAX_SLOTS 12
#define QC_GUARD 256u   /* poisoned bytes before and after each output tensor */

typedef struct qc_slot {
    char name[24];
    qc_role role;
    qgmm_buffer *buf;
    size_t span;          /* bytes of the region the tensor view addresses */
    size_t total;         /* span + 2 guards (outputs) or span (inputs) */
    size_t guard;         /* offset of the region inside the buffer */
    uint8_t *host;        /* inputs: the bytes uploaded; outputs: the last download */
    uint8_t *mask;        /* outputs: 1 for bytes the op must write, 0 must-not-touch */
    qgmm_tensor view;     /* outputs: the (last) view marked as must-write, for messages */
} qc_slot;

struct qgmm_case_instance {
    qgmm_case c;
    qgmm_context *ctx;
    qc_slot slots[QC_MAX_SLOTS];
    int nslots;
    int64_t G;
    int32_t *offs;        /* host copy of the group offsets (G values) */
    int offs_slot;        /* slot index of the offsets buffer, -1 when none */
    int sl[QC_MAX_SLOTS]; /* op-specific slot indices (see qgmm_cases_ops.c) */
    qgmm_tensor v[QC_MAX_SLOTS]; /* op-specific tensor views, same numbering */
    /* GEMM / recipe bookkeeping (see qgmm_cases_gemm.c) */
    void *gemm;
};

/* Adds a slot of `span` bytes; for QC_IN `init` (span bytes) is copied and uploaded (init
 * NULL: the caller fills slot->host and calls qc_upload_slot). Returns the slot index or -1
 * (status in *st). */
int qc_add_slot(qgmm_case_instance *in, const char *name, qc_role role, size_t span,
                const void *init, qgmm_status *st);
/* Uploads an input slot's host bytes. */
qgmm_status qc_upload_slot(qgmm_case_instance *in, int s);
/* A tensor view over slot s. */
qgmm_tensor qc_view(qgmm_case_instance *in, int s, qgmm_dtype dt, int rank, const int64_t *shape,
                    const int64_t *strides);
/* Marks in slot s's mask every byte of every element that the view addresses
 * (restricted to dim-0 indices [lo0, hi0) when hi0 >= 0). */
void qc_mark_view(qc_slot *s, const qgmm_tensor *v, int64_t lo0, int64_t hi0);

/* Per-op prepare and execute (qgmm_cases_ops.c) and the GEMM/recipe ones
 * (qgmm_cases_gemm.c). */
qgmm_status qc_prepare_op(qgmm_case_instance *in);
qgmm_status qc_execute_op(qgmm_case_instance *in);
qgmm_status qc_prepare_gemm(qgmm_case_instance *in);
qgmm_status qc_execute_gemm(qgmm_case_instance *in);
/* prof non-NULL: the MoE composite's _profiled calls (other GEMM cases: unsupported). */
qgmm_status qc_execute_gemm_profiled(qgmm_case_instance *in, qgmm_moe_profile *prof);
/* Fills r's numeric fields from the downloaded outputs of `in`. */
qgmm_status qc_check_gemm(qgmm_case_instance *in, const qgmm_check_options *opts,
                          qgmm_case_result *r);
void qc_release_gemm(qgmm_case_instance *in);
/* The GEMM state's tensor views (n of them), for qgmm_case_prepare_from; NULL when none. */
qgmm_tensor *qc_gemm_tensors(qgmm_case_instance *in, int *n);

/* A CPU context owned by the library for host-side helper ops (building blocked scale
 * layouts for GEMM operands, reading them back). NULL when cpu cannot be created. */
qgmm_context *qc_helper_ctx(void);

/* The extent a case's groups partition (M, or K for groups along columns). */
int64_t qc_group_extent(const qgmm_case *c);

/* Case cost (bytes, flops) and id from the descriptor. */
void qc_finish_case(qgmm_case *c);
int qc_family_of(qgmm_case_op op);

#endif /* QGMM_CASES_IMPL_H */
