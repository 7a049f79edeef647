/*
 * qgmm.h — the one public header of qgmm: low-precision casts and grouped GEMMs for
 * mixture-of-experts training, one C API over CPU, CUDA, HIP and Vulkan backends.
 *
 * C99, usable from C++ and through ctypes. Exact op semantics: docs/ops-spec.md (the
 * "§N" below are its sections) and docs/numerics.md; a worked example: docs/api.md; the
 * operand layouts of each GEMM recipe and the calls that make them: docs/gemm-layouts.md;
 * the composite MoE ops: docs/moe.md. Installed as <qgmm/qgmm.h>.
 *
 * Conventions that hold for every function below:
 *  - Every call returns a qgmm_status. On any status other than QGMM_OK the call has
 *    changed nothing (no output written, no handle created) and qgmm_last_error(ctx)
 *    holds one sentence that names the offending argument and its value; on QGMM_OK it
 *    holds "" (each call that returns a status clears the message first).
 *  - Ops are asynchronous: they enqueue on the context's stream/queue and return.
 *    qgmm_synchronize waits; qgmm_buffer_download waits for prior work on the context.
 *    No op reads device memory on the host.
 *  - Group offsets ("offs") are int32 cumulative END offsets of G groups, living in a
 *    qgmm buffer (device memory for GPU backends): group g spans [offs[g-1], offs[g]),
 *    offs[-1] = 0; empty groups are legal. Offsets that decrease or exceed the extent
 *    they index are detected on the device: the op then writes NOTHING and raises the
 *    context's status word, which the next qgmm_synchronize reports (and clears) as
 *    QGMM_ERR_BAD_OFFSETS, naming the op and its offsets argument. This is the same on
 *    every backend, the CPU one included.
 *  - Tensors carry shapes and strides in elements. Unless a function says otherwise,
 *    inputs may have any positive strides and outputs are written through their strides,
 *    so "row-major" vs "column-major" output is chosen by the output tensor's strides.
 *    Backends may have fast paths for common layouts; the result bytes never differ.
 *    Extents are at most 2^40, and a tensor's element count and byte span must fit in
 *    int64 (checked exactly, never modulo 2^64).
 *  - Aliasing: no output of a call may share a byte with any of its inputs (group offsets
 *    and scales included), with another output, or with itself (strides that send two
 *    elements to one address); a composite's workspace counts as an output. Byte ranges
 *    [offset, offset + span) are compared within one buffer, across two wraps of one
 *    native handle, and across buffers whose native handles are pointers (cpu, cuda, hip).
 *    A call that breaks the rule is refused with QGMM_ERR_INVALID_ARGUMENT.
 *  - Parameter structs (qgmm_*_params, qgmm_quant_format) each have an initializer macro,
 *    QGMM_<STRUCT>_INIT(required fields), that sets every other field to its documented
 *    default; it works in C99 and C++ alike (a braced list of every field, enum constants
 *    for enum fields), e.g.  qgmm_moe_params p = QGMM_MOE_PARAMS_INIT(QGMM_RECIPE_MXFP8);
 *    Two defaults differ from a zeroed field, whose meaning stays what it always was:
 *    scale_kind (RECIPROCAL, zero is MULTIPLIER) and the MX mode (RCEIL, zero is FLOOR).
 */
#ifndef QGMM_H
#define QGMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define QGMM_API __declspec(dllexport)
#else
#define QGMM_API __attribute__((visibility("default")))
#endif

/* The version of the loaded libqgmm, "MAJOR.MINOR.PATCH" (its SONAME is libqgmm.so.MAJOR).
 * Build systems get the same number from find_package(qgmm) (qgmm_VERSION) and
 * pkg-config (--modversion qgmm). */
QGMM_API const char *qgmm_version(void);

/* ------------------------------------------------------------------ status codes */
typedef enum qgmm_status {
    QGMM_OK = 0,
    QGMM_ERR_INVALID_ARGUMENT = 1,   /* null, wrong dtype/shape/stride, misaligned, ... */
    QGMM_ERR_UNSUPPORTED = 2,        /* op/dtype/layout/arch not available on this backend */
    QGMM_ERR_BACKEND_UNAVAILABLE = 3,/* backend library or vendor runtime missing */
    QGMM_ERR_OUT_OF_MEMORY = 4,
    QGMM_ERR_DEVICE = 5,             /* the vendor runtime reported an error */
    QGMM_ERR_BAD_OFFSETS = 6,        /* device-side group offsets were invalid (at synchronize) */
    QGMM_ERR_INTERNAL = 7
} qgmm_status;

/* A static string naming the status ("QGMM_ERR_BAD_OFFSETS"). Never NULL. */
QGMM_API const char *qgmm_status_string(qgmm_status s);

/* ------------------------------------------------------------------ dtypes */
typedef enum qgmm_dtype {
    QGMM_DTYPE_INVALID = 0,
    QGMM_F32 = 1,
    QGMM_BF16 = 2,
    QGMM_F16 = 3,
    QGMM_F8E4M3FN = 4,    /* OCP e4m3, max 448, NaN 0x7F/0xFF */
    QGMM_F8E4M3FNUZ = 5,  /* AMD MI300 e4m3, max 240, NaN 0x80, no -0 */
    QGMM_F8E5M2 = 6,      /* max 57344, has inf */
    QGMM_E8M0 = 7,        /* MX block scale: byte b means 2^(b-127), 255 = NaN */
    QGMM_I32 = 8,
    QGMM_U8 = 9
} qgmm_dtype;

QGMM_API size_t qgmm_dtype_size(qgmm_dtype t);          /* bytes; 0 for invalid */
QGMM_API const char *qgmm_dtype_name(qgmm_dtype t);     /* "f8e4m3fn"; "invalid" */
QGMM_API int qgmm_dtype_is_fp8(qgmm_dtype t);

/* ------------------------------------------------------------------ backends */
#define QGMM_MAX_RANK 3

typedef struct qgmm_backend_info {
    char name[16];          /* "cpu", "cuda", "hip", "vulkan", or a plugin's name */
    int available;          /* 1 when a context can be created */
    int device_count;       /* devices seen (0 when unavailable) */
    char reason[256];       /* why unavailable; empty when available */
    char library[256];      /* the shared library it came from ("built-in" for cpu) */
} qgmm_backend_info;

/* Number of known backends (built-in cpu, the compiled-in plugin names, and any name
 * listed in the environment variable QGMM_EXTRA_BACKENDS, colon-separated). Loading is
 * attempted on the first call; a missing library or runtime marks the backend
 * unavailable with the reason and is not an error. */
QGMM_API int qgmm_backend_count(void);
QGMM_API qgmm_status qgmm_backend_get_info(int index, qgmm_backend_info *out);

/* ------------------------------------------------------------------ context */
typedef struct qgmm_context qgmm_context;

/* Creates a context on backend `backend` ("cpu", "cuda", "hip", "vulkan") and device
 * index `device` (0 for the first; Vulkan also honours QGMM_VULKAN_DEVICE). */
QGMM_API qgmm_status qgmm_context_create(const char *backend, int device, qgmm_context **out);

/* Same, but the context enqueues on the caller's native stream: a cudaStream_t for
 * "cuda", a hipStream_t for "hip". NULL is the runtime's default (legacy NULL) stream,
 * e.g. PyTorch's default stream (torch.cuda.current_stream().cuda_stream == 0). The
 * stream stays owned by the caller and must outlive the context. QGMM_ERR_UNSUPPORTED
 * on backends without streams. */
QGMM_API qgmm_status qgmm_context_create_with_stream(const char *backend, int device,
                                                     void *native_stream, qgmm_context **out);

/* Waits for pending work, then frees the context. NULL is ignored. */
QGMM_API void qgmm_context_destroy(qgmm_context *ctx);

/* Waits for every op enqueued on ctx. Returns QGMM_ERR_BAD_OFFSETS (and clears the
 * status word) when an op since the last synchronize saw invalid device offsets;
 * QGMM_ERR_DEVICE when the runtime reported an asynchronous error. The BAD_OFFSETS
 * message names the op and its offsets argument ("qgmm_grouped_gemm: offs holds ..."):
 * the status word is one flag per context, so when several ops with device offsets were
 * enqueued since the last synchronize it names each of them (a composite counts as
 * itself, not its steps). The names are recorded on the host at enqueue time. */
QGMM_API qgmm_status qgmm_synchronize(qgmm_context *ctx);

/* The message of the last call on ctx that returns a qgmm_status: one sentence when it
 * failed, "" when it returned QGMM_OK. Every such call clears the message as it starts;
 * the calls that return no status (accessors, *_destroy, qgmm_buffer_free, the size
 * helpers) leave it alone. With ctx NULL: the calling thread's own copy, the message of
 * its last such call on any context or none (e.g. after a failed qgmm_context_create),
 * which calls made by other threads never change. The text is valid until the next call
 * on ctx (for NULL, by the thread); the pointer while ctx (the thread) lives. */
QGMM_API const char *qgmm_last_error(const qgmm_context *ctx);

/* One line: backend, device name, arch/driver, and the kernel paths chosen. */
QGMM_API const char *qgmm_context_describe(const qgmm_context *ctx);
QGMM_API const char *qgmm_context_backend_name(const qgmm_context *ctx);

/* ------------------------------------------------------------------ buffers */
typedef struct qgmm_buffer qgmm_buffer;

/* Device memory of `bytes` bytes (host memory for the cpu backend), 256-byte aligned.
 * Contents are unspecified. bytes may be 0; above 2^63 - 1 (or whatever the device cannot
 * hold) it is QGMM_ERR_OUT_OF_MEMORY and nothing is allocated. */
QGMM_API qgmm_status qgmm_buffer_alloc(qgmm_context *ctx, size_t bytes, qgmm_buffer **out);

/* Wraps caller-owned memory without copying: a device pointer for cuda/hip, a VkBuffer
 * handle (cast to void*) for vulkan, a host pointer for cpu. qgmm never frees it. bytes is
 * at most 2^63 - 1. */
QGMM_API qgmm_status qgmm_buffer_wrap(qgmm_context *ctx, void *native, size_t bytes,
                                      qgmm_buffer **out);

/* Blocking copies between host memory and [offset, offset+bytes) of buf. upload returns
 * once `src` may be reused; download first waits for all work enqueued on the context. */
QGMM_API qgmm_status qgmm_buffer_upload(qgmm_buffer *buf, size_t offset, const void *src,
                                        size_t bytes);
QGMM_API qgmm_status qgmm_buffer_download(qgmm_buffer *buf, size_t offset, void *dst,
                                          size_t bytes);
/* Enqueues a fill of [offset, offset+bytes) with `byte` (used to poison outputs). */
QGMM_API qgmm_status qgmm_buffer_fill(qgmm_buffer *buf, size_t offset, size_t bytes,
                                      uint8_t byte);
/* Enqueues a device-side copy (same context). Regions must not overlap. */
QGMM_API qgmm_status qgmm_buffer_copy(qgmm_buffer *dst, size_t dst_offset,
                                      const qgmm_buffer *src, size_t src_offset, size_t bytes);
QGMM_API size_t qgmm_buffer_size(const qgmm_buffer *buf);
/* The native handle: device pointer, VkBuffer, or host pointer. */
QGMM_API void *qgmm_buffer_native(const qgmm_buffer *buf);
/* Frees (waits for the context's pending work first). NULL is ignored. */
QGMM_API void qgmm_buffer_free(qgmm_buffer *buf);

/* ------------------------------------------------------------------ timing */
/* Device timestamps on the context's stream/queue (CUDA/HIP events, Vulkan timestamp
 * queries, the host clock on cpu whose ops are synchronous). */
typedef struct qgmm_event qgmm_event;
QGMM_API qgmm_status qgmm_event_create(qgmm_context *ctx, qgmm_event **out);
QGMM_API qgmm_status qgmm_event_record(qgmm_event *ev);
/* Waits for `end`, then gives the device time between the two recordings. */
QGMM_API qgmm_status qgmm_event_elapsed_ms(qgmm_event *start, qgmm_event *end, double *ms);
QGMM_API void qgmm_event_destroy(qgmm_event *ev);

/* ------------------------------------------------------------------ tensors */
typedef struct qgmm_tensor {
    qgmm_buffer *buffer;            /* NULL means "absent" where a tensor is optional */
    size_t offset;                  /* bytes; a multiple of the dtype size */
    qgmm_dtype dtype;
    int rank;                       /* 1..3 */
    int64_t shape[QGMM_MAX_RANK];
    int64_t strides[QGMM_MAX_RANK]; /* elements; >= 1 for dims of extent > 1 */
} qgmm_tensor;

/* Fills a contiguous (row-major) tensor view. dims beyond rank ignored. */
QGMM_API qgmm_tensor qgmm_tensor_make(qgmm_buffer *buf, size_t offset, qgmm_dtype dtype,
                                      int rank, const int64_t *shape);
/* A rank-2 (rows, cols) view stored column-major: strides (1, rows). */
QGMM_API qgmm_tensor qgmm_tensor_make_colmajor(qgmm_buffer *buf, size_t offset, qgmm_dtype dtype,
                                               int64_t rows, int64_t cols);
/* Elements; 0 for a bad rank, -1 when an extent is negative or the product overflows. */
QGMM_API int64_t qgmm_tensor_numel(const qgmm_tensor *t);
/* Bytes from the first to one past the last element addressed (0 when numel == 0);
 * SIZE_MAX when that does not fit in int64 or a stride of an extent > 1 is negative. */
QGMM_API size_t qgmm_tensor_span_bytes(const qgmm_tensor *t);

/* ================================================================== OPS */

/* ---------------------------------------------------------- FP8 rowwise quantize
 * x: f32 or bf16, rank 2 (R, C) or rank 3 (E, R, C). The scale is taken over
 * `reduce_dim` (the amax of each 1-D slice along it) — docs/ops-spec.md §1:
 *   amax = max|v| (NaN if any NaN), scale = f32(fp8max / max(amax, 1e-12)) in f64,
 *   optional power-of-2 rounding down, q = to_fp8(f32(x) * scale).
 *   rank 2, reduce_dim 1: rowwise,  scales (R)      [forward A, dgrad dOut]
 *   rank 2, reduce_dim 0: colwise,  scales (C)
 *   rank 3, reduce_dim 2: per (e, r), scales (E, R) [forward weights: per (e, n)]
 *   rank 3, reduce_dim 1: per (e, c), scales (E, C) [dgrad weights: the "3D transpose
 *       rhs"; give q strides (R*C, 1, R) to transpose each expert in memory]
 * offs (optional, int32, shape (G)): jagged per-group scaling — the groups partition
 *   reduce_dim (rank 2 only). Scales become (G, other_dim), group-major:
 *   scales[g * other + i]. Empty groups give scale fp8max/1e-12 (amax clamps).
 *   rank 2, reduce_dim 1 + offs over C: jagged per-group rowwise (wgrad dOut^T)
 *   rank 2, reduce_dim 0 + offs over R: jagged per-group colwise (wgrad activations)
 *   Elements past offs[G-1] belong to no group and are not written.
 * q: same shape as x, dtype f8e4m3fn / f8e4m3fnuz / f8e5m2 (chooses fp8max), any strides.
 * scales: f32, contiguous, shape as above. What is stored is chosen by
 *   scale_kind: the quantization multiplier `scale` (torchao's stored scale) or its
 *   reciprocal 1/scale (f32, correctly rounded: what torch._scaled_mm and qgmm's GEMMs
 *   take). */
typedef enum qgmm_scale_kind {
    QGMM_SCALE_MULTIPLIER = 0,   /* q = x * s */
    QGMM_SCALE_RECIPROCAL = 1    /* x ~= q * s */
} qgmm_scale_kind;

typedef struct qgmm_fp8_rowwise_params {
    int reduce_dim;              /* see above; no default */
    int power_of_2;              /* 1: round scale down to a power of two; default 0 */
    qgmm_scale_kind scale_kind;  /* default QGMM_SCALE_RECIPROCAL, the form the GEMMs take */
} qgmm_fp8_rowwise_params;
#define QGMM_FP8_ROWWISE_PARAMS_INIT(reduce_dim) {(reduce_dim), 0, QGMM_SCALE_RECIPROCAL}

QGMM_API qgmm_status qgmm_quantize_fp8_rowwise(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                               const qgmm_tensor *x, const qgmm_tensor *offs,
                                               const qgmm_tensor *q, const qgmm_tensor *scales);

/* The torchao "dual" form: two tensors sharing one offs, quantized in one call (e.g. the
 * two wgrad operands). Same rules as two qgmm_quantize_fp8_rowwise calls; with offs, x0 and
 * x1 must have the same extent along their reduce_dim (the token dim the groups run along), so
 * bad offsets leave both halves unwritten. */
QGMM_API qgmm_status qgmm_quantize_fp8_rowwise_dual(qgmm_context *ctx,
                                                    const qgmm_fp8_rowwise_params *p0,
                                                    const qgmm_tensor *x0, const qgmm_tensor *q0,
                                                    const qgmm_tensor *scales0,
                                                    const qgmm_fp8_rowwise_params *p1,
                                                    const qgmm_tensor *x1, const qgmm_tensor *q1,
                                                    const qgmm_tensor *scales1,
                                                    const qgmm_tensor *offs);

/* ---------------------------------------------------------- MXFP8 quantize
 * Blocks of 32 consecutive elements along `block_dim`, one E8M0 scale per block.
 * x: f32/bf16, rank 2 (R, C) or rank 3 (E, R, C). block_dim is the last dim (1 or 2,
 * "dim0 / 1x32") or the one before it (0 or 1, "dim1 / 32x1"); its extent must be a
 * multiple of 32. q: same shape as x, fp8 dtype, any strides (dim1 users give q
 * strides (1, R) to get torchao's (C, R) row-major transpose).
 * scales (dtype e8m0 or u8):
 *   layout PLAIN: contiguous, shape (E?, other, blocks) — for block along the last dim
 *     (R, C/32) [per expert: (E, R, C/32)]; along the other dim (C, R/32) [(E, C, R/32)].
 *   layout BLOCKED: rank 1 of qgmm_blocked_scales_bytes(other, blocks) bytes per expert
 *     (experts concatenated): the §4 swizzle, padding bytes zero. The grouped GEMMs want
 *     the grouped layouts instead: qgmm_quantize_mxfp8_grouped below writes them.
 * mode, the E8M0 scale rule (§2): RCEIL, NVIDIA's rule and the one torchao's MXFP8
 *   training recipes use, is the default of the INIT macros (here and in
 *   qgmm_moe_params). FLOOR, the OCP rule, puts a block's amax in [256, 512) so that 448
 *   clips about a fifth of the block maxima: on ordinary data its forward GEMM sits at or
 *   under the 27 dB SQNR floor of docs/numerics.md where RCEIL has 1-2 dB of margin.
 *   FLOOR keeps the value 0 so that zeroed structs and existing callers keep their
 *   meaning. */
typedef enum qgmm_mx_mode { QGMM_MX_FLOOR = 0, QGMM_MX_RCEIL = 1 } qgmm_mx_mode;
/* PLAIN and BLOCKED are written by qgmm_quantize_mxfp8; the two grouped layouts, the
 * QGMM_BLOCKED_M_GROUPS / QGMM_BLOCKED_K_GROUPS variants of qgmm_scales_to_blocked, by
 * qgmm_quantize_mxfp8_grouped (they need the group offsets). */
typedef enum qgmm_scale_layout {
    QGMM_SCALES_PLAIN = 0,
    QGMM_SCALES_BLOCKED = 1,
    QGMM_SCALES_BLOCKED_M_GROUPS = 2,
    QGMM_SCALES_BLOCKED_K_GROUPS = 3
} qgmm_scale_layout;

typedef struct qgmm_mxfp8_params {
    int block_dim;                  /* no default */
    qgmm_mx_mode mode;              /* default QGMM_MX_RCEIL (zero is FLOOR) */
    qgmm_scale_layout scale_layout; /* default QGMM_SCALES_PLAIN */
} qgmm_mxfp8_params;
#define QGMM_MXFP8_PARAMS_INIT(block_dim) {(block_dim), QGMM_MX_RCEIL, QGMM_SCALES_PLAIN}

QGMM_API qgmm_status qgmm_quantize_mxfp8(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                         const qgmm_tensor *x, const qgmm_tensor *q,
                                         const qgmm_tensor *scales);

/* MXFP8 quantize of token-grouped activations with the scales written straight into the
 * grouped blocked layout the grouped GEMM reads (one call instead of qgmm_quantize_mxfp8
 * with PLAIN scales followed by qgmm_scales_to_blocked; the bytes are the same).
 * x (T, D) rank 2, offs (G) over its rows, the tokens: group g holds rows
 * [offs[g-1], offs[g]). q (T, D) as in qgmm_quantize_mxfp8: every row is quantized, rows
 * past offs[G-1] included. p->scale_layout picks the layout and p->block_dim must match:
 *   QGMM_SCALES_BLOCKED_M_GROUPS, block_dim 1 (blocks of 32 along D; M-grouped GEMM a):
 *     scales rank 1 of qgmm_blocked_m_groups_bytes(T, D/32, G) bytes, the layout of
 *     qgmm_scales_to_blocked(QGMM_BLOCKED_M_GROUPS) of the plain (T, D/32) scales; group
 *     sizes are free, rows past offs[G-1] have no scales there.
 *   QGMM_SCALES_BLOCKED_K_GROUPS, block_dim 0 (blocks of 32 tokens; K-grouped GEMM a and
 *     b, e.g. padded by qgmm_pad_token_groups with alignment 32): scales rank 1 of
 *     qgmm_blocked_k_groups_bytes(D, T/32, G) bytes, the layout of
 *     qgmm_scales_to_blocked(QGMM_BLOCKED_K_GROUPS) of the plain (D, T/32) scales; every
 *     group size must be a multiple of 32, or the offsets are bad.
 * Every byte of scales is written (padding 0). Bad offsets: nothing is written, q
 * included (QGMM_ERR_BAD_OFFSETS at the next qgmm_synchronize). */
QGMM_API qgmm_status qgmm_quantize_mxfp8_grouped(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                                 const qgmm_tensor *x, const qgmm_tensor *offs,
                                                 const qgmm_tensor *q, const qgmm_tensor *scales);

/* ---------------------------------------------------------- FP8 blockwise quantize
 * docs/ops-spec.md §3. The stored scale is always the reciprocal 1/scale (f32).
 *   BLOCK_1X128: x (M, K) [or (E, M, K)], K % 128 == 0; logical scales (M, K/128).
 *   BLOCK_128X128: x (N, K) or (E, N, K), K % 128 == 0 (N may be ragged: the last tile
 *     row holds fewer rows); logical scales (ceil(N/128), K/128) per expert.
 * q: same shape, fp8 dtype, any strides.
 * scales: f32 with the LOGICAL shape above and any strides; the layouts of torchao and
 *   DeepGEMM are strides — use qgmm_blockwise_scales_view() to build them. */
typedef enum qgmm_block_shape { QGMM_BLOCK_1X128 = 0, QGMM_BLOCK_128X128 = 1 } qgmm_block_shape;
typedef enum qgmm_blockwise_layout {
    QGMM_BLOCKWISE_ROW_MAJOR = 0,  /* scales (M, K/128) row-major */
    QGMM_BLOCKWISE_TORCHAO = 1,    /* 1x128: (M, K/128) column-major, strides (1, M);
                                      128x128: row-major */
    QGMM_BLOCKWISE_DEEPGEMM = 2    /* 1x128: MN-major with M padded to a multiple of 4
                                      (16-byte TMA alignment), strides (1, align4(M));
                                      128x128: row-major (E, N/128, K/128) */
} qgmm_blockwise_layout;

typedef struct qgmm_fp8_blockwise_params {
    qgmm_block_shape block;         /* no default */
} qgmm_fp8_blockwise_params;
#define QGMM_FP8_BLOCKWISE_PARAMS_INIT(block) {(block)}

QGMM_API qgmm_status qgmm_quantize_fp8_blockwise(qgmm_context *ctx,
                                                 const qgmm_fp8_blockwise_params *p,
                                                 const qgmm_tensor *x, const qgmm_tensor *q,
                                                 const qgmm_tensor *scales);

/* Builds the scales tensor view for a blockwise layout over `buf` at `offset`, for data
 * of `rank` 2 (rows, K) or 3 (E, rows, K). Returns the bytes the view spans in *bytes
 * (bytes may be NULL). buf may be NULL: the call then only sizes the view, so one call
 * with buf NULL gives the bytes to allocate and a second call with the buffer gives the
 * view to pass to qgmm_quantize_fp8_blockwise / qgmm_grouped_gemm. */
QGMM_API qgmm_status qgmm_blockwise_scales_view(qgmm_block_shape block, qgmm_blockwise_layout layout,
                                                int rank, const int64_t *data_shape,
                                                qgmm_buffer *buf, size_t offset,
                                                qgmm_tensor *out_view, size_t *bytes);

/* ---------------------------------------------------------- dequantize
 * The inverse of any quantize above, written as f32 or bf16 (round to nearest even):
 * out = f32(q) * s for reciprocal / blockwise / E8M0 scales, out = f32(q) / s for
 * QGMM_SCALE_MULTIPLIER rowwise scales (a division, not a multiply by 1/s: the two can
 * differ in the last bit). Jagged: elements past offs[G-1] are not written. `format` names which quantize produced q and
 * with which params; offs only for jagged rowwise. */
typedef enum qgmm_quant_kind {
    QGMM_QUANT_FP8_ROWWISE = 0,
    QGMM_QUANT_MXFP8 = 1,
    QGMM_QUANT_FP8_BLOCKWISE = 2
} qgmm_quant_kind;

typedef struct qgmm_quant_format {
    qgmm_quant_kind kind;
    qgmm_fp8_rowwise_params rowwise;     /* read when kind is QGMM_QUANT_FP8_ROWWISE */
    qgmm_mxfp8_params mx;                /* ... QGMM_QUANT_MXFP8 */
    qgmm_fp8_blockwise_params blockwise; /* ... QGMM_QUANT_FP8_BLOCKWISE */
} qgmm_quant_format;
/* The format of a quantize made with the matching params INIT macro (the members of the
 * other kinds get their defaults and are not read). */
#define QGMM_QUANT_FORMAT_FP8_ROWWISE_INIT(reduce_dim)                                   \
    {QGMM_QUANT_FP8_ROWWISE, QGMM_FP8_ROWWISE_PARAMS_INIT(reduce_dim),                   \
     QGMM_MXFP8_PARAMS_INIT(1), QGMM_FP8_BLOCKWISE_PARAMS_INIT(QGMM_BLOCK_1X128)}
#define QGMM_QUANT_FORMAT_MXFP8_INIT(block_dim)                                          \
    {QGMM_QUANT_MXFP8, QGMM_FP8_ROWWISE_PARAMS_INIT(1), QGMM_MXFP8_PARAMS_INIT(block_dim), \
     QGMM_FP8_BLOCKWISE_PARAMS_INIT(QGMM_BLOCK_1X128)}
#define QGMM_QUANT_FORMAT_FP8_BLOCKWISE_INIT(block)                                      \
    {QGMM_QUANT_FP8_BLOCKWISE, QGMM_FP8_ROWWISE_PARAMS_INIT(1), QGMM_MXFP8_PARAMS_INIT(1), \
     QGMM_FP8_BLOCKWISE_PARAMS_INIT(block)}

QGMM_API qgmm_status qgmm_dequantize(qgmm_context *ctx, const qgmm_quant_format *format,
                                     const qgmm_tensor *q, const qgmm_tensor *scales,
                                     const qgmm_tensor *offs, const qgmm_tensor *out);

/* ---------------------------------------------------------- scales to blocked layout
 * docs/ops-spec.md §4. in: u8/e8m0 scales, contiguous. out: u8/e8m0 rank 1, exactly the
 * size the matching *_bytes function gives; every byte of it is written (padding 0).
 *   BLOCKED_2D:       in (R, C)                     -> R'C' bytes
 *   BLOCKED_3D:       in (E, R, C)                  -> E * R'C' bytes, experts in order
 *   BLOCKED_M_GROUPS: in (M, C), offs (G) over rows -> blocked rows sized for M + 128 G;
 *                     group g starts at padded row sum_{h<g} 128 ceil(size_h/128);
 *                     group_starts (optional, i32 (G)) receives those start rows.
 *   BLOCKED_K_GROUPS: in (R, K/32), offs (G) over K in ELEMENTS (multiples of 32; the
 *                     scale column range of g is [offs[g-1]/32, offs[g]/32)); each
 *                     group's columns start at a multiple of 4 scale columns;
 *                     group_starts (optional, i32 (G)) receives the start scale columns. */
typedef enum qgmm_blocked_variant {
    QGMM_BLOCKED_2D = 0,
    QGMM_BLOCKED_3D = 1,
    QGMM_BLOCKED_M_GROUPS = 2,
    QGMM_BLOCKED_K_GROUPS = 3
} qgmm_blocked_variant;

/* Each returns SIZE_MAX when the size does not fit in int64. */
QGMM_API size_t qgmm_blocked_scales_bytes(int64_t rows, int64_t cols);
QGMM_API size_t qgmm_blocked_m_groups_bytes(int64_t rows, int64_t cols, int64_t groups);
QGMM_API size_t qgmm_blocked_k_groups_bytes(int64_t rows, int64_t cols, int64_t groups);

QGMM_API qgmm_status qgmm_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant variant,
                                            const qgmm_tensor *in, const qgmm_tensor *offs,
                                            const qgmm_tensor *out, const qgmm_tensor *group_starts);
/* The inverse: `in` is the blocked buffer, `out` the plain (R, C) / (E, R, C) scales. */
QGMM_API qgmm_status qgmm_scales_from_blocked(qgmm_context *ctx, qgmm_blocked_variant variant,
                                              const qgmm_tensor *in, const qgmm_tensor *offs,
                                              const qgmm_tensor *out);

/* ---------------------------------------------------------- token-group padding
 * docs/ops-spec.md §5. x (T, D) any dtype, row-major rows (stride(1) == 1); offs (G) over
 * T; alignment 16, 32 or 128. out (qgmm_padded_rows_bound(T, G, A), D): group g's rows
 * at [padded_start[g], padded_start[g] + size_g), every other row zero. padded_start and
 * padded_offs: i32 (G), both optional. The padded offsets are int32, so pad and unpad
 * refuse a bound above INT32_MAX; qgmm_padded_rows_bound gives INT64_MAX on overflow. */
QGMM_API int64_t qgmm_padded_rows_bound(int64_t tokens, int64_t groups, int alignment);
QGMM_API qgmm_status qgmm_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                           const qgmm_tensor *offs, const qgmm_tensor *out,
                                           const qgmm_tensor *padded_start,
                                           const qgmm_tensor *padded_offs);
/* The inverse gather: x_padded as produced above, out (T, D). */
QGMM_API qgmm_status qgmm_unpad_token_groups(qgmm_context *ctx, int alignment,
                                             const qgmm_tensor *x_padded, const qgmm_tensor *offs,
                                             const qgmm_tensor *out);

/* DeepGEMM's per-row expert ids ("grouped_layout") from offsets: row_ids (rows) i32.
 * Without padded_offs, row r gets the g with offs[g-1] <= r < offs[g], -1 past the end.
 * With padded_offs (from qgmm_pad_token_groups with the same offs), rows are in the
 * padded space: rows holding group g's tokens get g, padding rows -1. */
QGMM_API qgmm_status qgmm_group_row_ids(qgmm_context *ctx, const qgmm_tensor *offs,
                                        const qgmm_tensor *padded_offs, const qgmm_tensor *row_ids);

/* ---------------------------------------------------------- grouped GEMM
 * M_GROUPED (forward, dgrad): a (M, K), b (E, N, K) [each expert N x K, used
 *   transposed], offs (E) over M: out[rows of g] = a_g . b_g^T, out (M, N). Rows past
 *   offs[E-1] are untouched.
 * K_GROUPED (wgrad): a (M, N), b (M, K), offs (G) over M: out[g] = a_g^T . b_g,
 *   out (G, N, K); an empty group gives zeros.
 * Operands may have any strides (the GPU fast paths want K-contiguous operands for
 * M_GROUPED and M-contiguous, i.e. column-major, operands for K_GROUPED; others may give
 * QGMM_ERR_UNSUPPORTED on a GPU backend, never wrong results). out: bf16 or f32.
 * Recipes and their scales (all scales are DEQUANT multipliers, i.e. reciprocals of the
 * quantize multipliers; f32 unless noted):
 *   BF16:          a, b bf16; no scales.
 *   FP8_ROWWISE:   a, b fp8. M_GROUPED: a_scales (M), b_scales (E, N);
 *                  out = acc * a_scales[m] * b_scales[e, n].
 *                  K_GROUPED: a_scales (G, N), b_scales (G, K) (jagged per-group scales);
 *                  out[g][n][k] = acc * a_scales[g, n] * b_scales[g, k].
 *   FP8_BLOCKWISE: a, b fp8, scales per 128 along the contraction dim, any strides.
 *                  M_GROUPED: a_scales (M, K/128), b_scales (E, ceil(N/128), K/128);
 *                  K % 128 == 0. K_GROUPED: a_scales (N, M/128), b_scales (K, M/128);
 *                  every group size a multiple of 128 (else BAD_OFFSETS).
 *   MXFP8:         a, b fp8 (e4m3fn/e5m2), e8m0 scales per 32 along the contraction dim
 *                  in the BLOCKED layout. M_GROUPED: a_scales as produced by
 *                  QGMM_BLOCKED_M_GROUPS from (M, K/32), b_scales as QGMM_BLOCKED_3D
 *                  from (E, N, K/32); K % 32 == 0. K_GROUPED: a_scales = BLOCKED_K_GROUPS
 *                  of (N, M/32), b_scales = BLOCKED_K_GROUPS of (K, M/32); group sizes
 *                  multiples of 32 (else BAD_OFFSETS). qgmm_quantize_mxfp8_grouped
 *                  writes both grouped layouts in the cast.
 * Accumulation is f32 on every backend. */
typedef enum qgmm_gemm_kind { QGMM_GEMM_M_GROUPED = 0, QGMM_GEMM_K_GROUPED = 1 } qgmm_gemm_kind;
typedef enum qgmm_recipe {
    QGMM_RECIPE_BF16 = 0,
    QGMM_RECIPE_FP8_ROWWISE = 1,
    QGMM_RECIPE_FP8_BLOCKWISE = 2,
    QGMM_RECIPE_MXFP8 = 3
} qgmm_recipe;

typedef struct qgmm_grouped_gemm_params {
    qgmm_gemm_kind kind;            /* no default */
    qgmm_recipe recipe;             /* no default */
} qgmm_grouped_gemm_params;
#define QGMM_GROUPED_GEMM_PARAMS_INIT(kind, recipe) {(kind), (recipe)}

QGMM_API qgmm_status qgmm_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *p,
                                       const qgmm_tensor *a, const qgmm_tensor *b,
                                       const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                                       const qgmm_tensor *offs, const qgmm_tensor *out);

/* ---------------------------------------------------------- composite MoE experts
 * One recipe's casts + padding + GEMMs for a routed expert layer, implemented once in the
 * API on top of the ops above (every backend gets it).
 *   forward:  y (M, N) = x (M, K) . w_g^T per group, w (E, N, K) bf16, x bf16, offs (E).
 *   backward: dx (M, K) = dy . w_g, dw (E, N, K) = dy_g^T . x_g.
 * N, K >= 1. FP8 blockwise and MXFP8 backward pad x and dy by whole rows: their rows must
 * be contiguous (stride 1 along the last dim).
 * workspace: a buffer of at least qgmm_moe_workspace_bytes() bytes (query once, reuse;
 *   SIZE_MAX means the sizes overflow). It is written: no argument may lie in it.
 * All or nothing: every step is validated before the first is enqueued, and errors name
 * the composite's own arguments. With bad device offsets the call returns QGMM_OK, the
 * next qgmm_synchronize reports QGMM_ERR_BAD_OFFSETS once, and y (forward) or dx and dw
 * (backward) are left untouched; only the workspace is scribbled on. An error the backend
 * itself raises while enqueuing (QGMM_ERR_OUT_OF_MEMORY, QGMM_ERR_DEVICE, or
 * QGMM_ERR_UNSUPPORTED for a layout its kernels lack) can come after dgrad was enqueued:
 * then dx may be written and dw not. */
typedef struct qgmm_moe_params {
    qgmm_recipe recipe;          /* no default */
    qgmm_dtype fp8_dtype;        /* default f8e4m3fn (also what 0 means); or f8e4m3fnuz, f8e5m2 */
    qgmm_mx_mode mx_mode;        /* MXFP8 only; default QGMM_MX_RCEIL (zero is FLOOR) */
} qgmm_moe_params;
#define QGMM_MOE_PARAMS_INIT(recipe) {(recipe), QGMM_F8E4M3FN, QGMM_MX_RCEIL}

QGMM_API size_t qgmm_moe_workspace_bytes(const qgmm_moe_params *p, int64_t M, int64_t N, int64_t K,
                                         int64_t E);
QGMM_API qgmm_status qgmm_moe_experts_forward(qgmm_context *ctx, const qgmm_moe_params *p,
                                              const qgmm_tensor *x, const qgmm_tensor *w,
                                              const qgmm_tensor *offs, const qgmm_tensor *y,
                                              qgmm_buffer *workspace);
QGMM_API qgmm_status qgmm_moe_experts_backward(qgmm_context *ctx, const qgmm_moe_params *p,
                                               const qgmm_tensor *x, const qgmm_tensor *w,
                                               const qgmm_tensor *dy, const qgmm_tensor *offs,
                                               const qgmm_tensor *dx, const qgmm_tensor *dw,
                                               qgmm_buffer *workspace);

/* Per-step device timing of the composite (docs/moe.md, "Per-step breakdown"). The
 * _profiled calls run the same steps as the plain ones and record prof->events[0] before
 * the first step and prof->events[i + 1] after step i, on the context's stream; nothing
 * waits. The events are the caller's (qgmm_event_create on the same context; at least
 * steps + 1 of them, or all QGMM_MOE_PROFILE_MAX_STEPS + 1): read step i's time with
 * qgmm_event_elapsed_ms(events[i], events[i + 1]) after the call. prof NULL is the plain
 * call; a NULL or foreign event among those needed is QGMM_ERR_INVALID_ARGUMENT and
 * nothing runs. */
#define QGMM_MOE_PROFILE_MAX_STEPS 16
typedef struct qgmm_moe_profile {
    qgmm_event *events[QGMM_MOE_PROFILE_MAX_STEPS + 1]; /* in: the caller's events */
    int steps;                                      /* out: steps run, events[0..steps] recorded */
    const char *phase[QGMM_MOE_PROFILE_MAX_STEPS];  /* out: "forward", "dgrad" or "wgrad" */
    const char *step[QGMM_MOE_PROFILE_MAX_STEPS];   /* out: op and operand, e.g. "quantize_mxfp8 w" */
} qgmm_moe_profile;
QGMM_API qgmm_status qgmm_moe_experts_forward_profiled(qgmm_context *ctx, const qgmm_moe_params *p,
                                                       const qgmm_tensor *x, const qgmm_tensor *w,
                                                       const qgmm_tensor *offs, const qgmm_tensor *y,
                                                       qgmm_buffer *workspace, qgmm_moe_profile *prof);
QGMM_API qgmm_status qgmm_moe_experts_backward_profiled(qgmm_context *ctx, const qgmm_moe_params *p,
                                                        const qgmm_tensor *x, const qgmm_tensor *w,
                                                        const qgmm_tensor *dy, const qgmm_tensor *offs,
                                                        const qgmm_tensor *dx, const qgmm_tensor *dw,
                                                        qgmm_buffer *workspace, qgmm_moe_profile *prof);

/* ---------------------------------------------------------- expert parallelism
 * docs/ep.md. Experts are spread over R ranks (one context each); every rank routes its
 * own tokens to the ranks that hold their experts and gets the results back:
 *
 *   qgmm_ep_route     expert ids (T, k) -> a plan: who sends which rows where (collective)
 *   qgmm_ep_dispatch  tokens (T, D) -> this rank's experts' tokens (R_rows, D), contiguous
 *                     per local expert, each expert's block padded to the plan's alignment,
 *                     and the padded group offsets for the grouped GEMM (collective)
 *   qgmm_ep_combine   expert outputs (R_rows, H) -> (T, H), the top-k rows of each token
 *                     weighted and summed in f32 (collective)
 *
 * The backward of dispatch is combine (without weights) and the backward of combine is
 * dispatch (with weights), over the same plan. Collective calls are made by every rank of
 * the communicator, in the same order (loopback ranks from one thread each). No call
 * reads device memory on the host except qgmm_ep_received_rows, the exact-size mode's one
 * labelled synchronisation; counts travel on the device and receive buffers are sized
 * for the worst case the plan declares. Bad expert ids are found on the device: then no
 * rank sends anything for the step, dispatch and combine write nothing, and each rank's
 * next qgmm_synchronize reports QGMM_ERR_BAD_OFFSETS naming qgmm_ep_route and expert_ids. */
typedef struct qgmm_ep_comm qgmm_ep_comm;
typedef struct qgmm_ep_plan qgmm_ep_plan;

/* An in-process group of `nranks` ranks (1..1024), rank i on ctxs[i] (any backends, one
 * context per rank, distinct): comms[i] receives rank i's communicator. The loopback
 * transport copies through host memory (qgmm_buffer_download / upload) and meets the
 * ranks at a barrier, so each rank's collective calls must come from its own thread;
 * it synchronises its rank's context (it exists for the cpu and Vulkan backends and
 * CI, not for speed). */
QGMM_API qgmm_status qgmm_ep_comm_create_loopback(int nranks, qgmm_context *const *ctxs,
                                                  qgmm_ep_comm **comms);
/* Over the caller's NCCL (RCCL) communicator: nccl_comm is an ncclComm_t, e.g. the one
 * behind a PyTorch process group; it stays the caller's. The rank and size are NCCL's.
 * QGMM_ERR_UNSUPPORTED on a backend without NCCL (cpu, vulkan: use loopback). */
QGMM_API qgmm_status qgmm_ep_comm_create_nccl(qgmm_context *ctx, void *nccl_comm, qgmm_ep_comm **out);
/* NCCL's 128-byte unique id (ncclGetUniqueId), to be broadcast by the caller to every rank
 * before qgmm_ep_comm_create_nccl_id, which creates (and owns) an NCCL communicator. */
#define QGMM_EP_UNIQUE_ID_BYTES 128
QGMM_API qgmm_status qgmm_ep_nccl_unique_id(qgmm_context *ctx, void *id_out);
QGMM_API qgmm_status qgmm_ep_comm_create_nccl_id(qgmm_context *ctx, const void *unique_id, int nranks,
                                                 int rank, qgmm_ep_comm **out);
/* Frees the communicator (the caller's ncclComm_t is left alone). Plans made from it must
 * be destroyed first. NULL is ignored. */
QGMM_API void qgmm_ep_comm_destroy(qgmm_ep_comm *comm);
QGMM_API int qgmm_ep_comm_rank(const qgmm_ep_comm *comm);   /* -1 for NULL */
QGMM_API int qgmm_ep_comm_nranks(const qgmm_ep_comm *comm); /* 0 for NULL */
QGMM_API qgmm_context *qgmm_ep_comm_context(const qgmm_ep_comm *comm);

/* The static shape of one expert-parallel layer on one rank. Every rank of the
 * communicator passes the same num_experts, top_k, alignment and expert_rank. */
typedef struct qgmm_ep_plan_params {
    int64_t num_experts;       /* E, global; no default */
    int top_k;                 /* k, expert ids per token (1..1024); no default */
    int64_t max_tokens;        /* the most tokens T this rank routes in one call; no default */
    int64_t max_row_bytes;     /* the widest wire row dispatched or combined through the plan
                                  (qgmm_ep_wire_row_bytes); no default */
    int alignment;             /* 16, 32 or 128: each local expert's block of received rows is
                                  padded to it; default 16 */
    int64_t max_rows_per_peer; /* declared worst case of rows this rank sends to one rank;
                                  0 (default) = max_tokens * top_k, which never overflows */
    int64_t max_recv_rows;     /* rows of the receive layout; 0 (default) =
                                  qgmm_padded_rows_bound(nranks * max_rows_per_peer, L, alignment) */
    const int32_t *expert_rank;/* host array (E): the rank holding each expert; NULL (default):
                                  an even split, expert e on rank e / (E / nranks) */
} qgmm_ep_plan_params;
#define QGMM_EP_PLAN_PARAMS_INIT(num_experts, top_k, max_tokens, max_row_bytes) \
    {(num_experts), (top_k), (max_tokens), (max_row_bytes), 16, 0, 0, NULL}

/* The bytes of one wire row carrying `cols` elements of `dtype` and `scale_bytes` bytes of
 * scales (0 when none): rounded up to 16. Gives 0 for a bad dtype or negative sizes. */
QGMM_API int64_t qgmm_ep_wire_row_bytes(qgmm_dtype dtype, int64_t cols, int64_t scale_bytes);

/* Allocates the plan's device state on the communicator's context: index tables, counts,
 * and two wire buffers of nranks * max_rows_per_peer * max_row_bytes bytes. Not
 * collective. Local experts of this rank are the experts mapped to it, in increasing id
 * order; local expert l's block is group l of the received layout. */
QGMM_API qgmm_status qgmm_ep_plan_create(qgmm_ep_comm *comm, const qgmm_ep_plan_params *p,
                                         qgmm_ep_plan **out);
QGMM_API void qgmm_ep_plan_destroy(qgmm_ep_plan *plan);
/* L, this rank's expert count (may be 0), and the global id of local expert l. */
QGMM_API int64_t qgmm_ep_plan_local_experts(const qgmm_ep_plan *plan);
QGMM_API int64_t qgmm_ep_plan_local_expert_id(const qgmm_ep_plan *plan, int64_t l);
/* R_rows, the rows of the receive layout (max_recv_rows as resolved). */
QGMM_API int64_t qgmm_ep_plan_recv_rows(const qgmm_ep_plan *plan);

/* Collective. expert_ids: i32 (T, k), T <= max_tokens, any strides. Computes on the device
 * where each (token, slot) row goes, exchanges the counts, and lays out the receive side.
 * The plan then describes this step until the next qgmm_ep_route: forward and backward of
 * one layer share it. Device-side refusals (each rank's next synchronize names them):
 * an id outside [0, E) on any rank, more than max_rows_per_peer rows from a rank to one
 * rank: nothing is sent by any rank; more received rows than max_recv_rows on a rank: that
 * rank's dispatch and combine write nothing (and what it returns to others is undefined,
 * so treat the step as failed everywhere). */
QGMM_API qgmm_status qgmm_ep_route(qgmm_ep_plan *plan, const qgmm_tensor *expert_ids);

/* Exact-size mode. ONE HOST SYNCHRONISATION: waits for the last qgmm_ep_route on this
 * rank and gives the padded rows this rank receives (offs[L-1] of the dispatch), so the
 * caller can size dispatch's out exactly. Not collective. */
QGMM_API qgmm_status qgmm_ep_received_rows(qgmm_ep_plan *plan, int64_t *rows);

/* Collective. x (T, D): the routed tokens, any dtype, rows contiguous (stride 1 along D);
 * row t goes to the ranks of expert_ids[t, :] (once per slot).
 * x_scales (optional): the per-row scales of a quantized x travelling with it, rows
 *   contiguous: f32 (T) [FP8 rowwise], f32 (T, D/128) [1x128 blockwise], e8m0 (T, D/32)
 *   [MXFP8, plain]. Quantize x first with the cast ops (each is row-local).
 * weights (optional): f32 or bf16 (T, k); then each row sent is x[t] * weights[t, j]
 *   (f32 product rounded to x's dtype; x bf16 or f32, no x_scales): the backward of combine.
 * out (rows >= the received padded rows, D), x's dtype, rows contiguous: local expert l's
 *   rows at [offs[l-1], offs[l-1] + count_l), from rank 0's tokens first, each rank's in
 *   token order then slot order; every other row zero.
 * out_scales: with x_scales: f32 (rows) / (rows, D/128) / e8m0 (rows, D/32) plain, or for
 *   e8m0 a rank-1 tensor of qgmm_blocked_m_groups_bytes(rows, D/32, L) bytes: the blocked
 *   M-groups layout over offs, what the MXFP8 grouped GEMM takes. Padding rows' scales 0.
 * offs (optional): i32 (L), the padded cumulative end offsets (multiples of the alignment).
 * A received row count above out's rows is found on the device: nothing is written. */
QGMM_API qgmm_status qgmm_ep_dispatch(qgmm_ep_plan *plan, const qgmm_tensor *x,
                                      const qgmm_tensor *x_scales, const qgmm_tensor *weights,
                                      const qgmm_tensor *out, const qgmm_tensor *out_scales,
                                      const qgmm_tensor *offs);

/* Collective. y (rows, H) bf16 or f32, rows contiguous, in the layout dispatch wrote (rows
 * >= the received padded rows; padding rows are not read). out (T, H) bf16 or f32:
 * out[t] = sum over j = 0..k-1 in order of weights[t, j] * y[row of (t, j)], in f32;
 * weights optional (f32 or bf16 (T, k); absent = 1: the backward of dispatch). */
QGMM_API qgmm_status qgmm_ep_combine(qgmm_ep_plan *plan, const qgmm_tensor *y,
                                     const qgmm_tensor *weights, const qgmm_tensor *out);

/* ---------------------------------------------------------- expert-parallel MoE layer
 * docs/ep.md. route -> dispatch -> qgmm_moe_experts_forward on the local experts -> combine,
 * and the backward through the same plan. The layer object holds what the backward needs
 * (the received tokens, the padded offsets) and its temporaries, all allocated once.
 *   forward:  y (T, N) = sum_j weights[t, j] * (x[t] . w_{ids[t,j]}^T)
 *   backward: dx (T, K), dw_local (L, N, K) given dy (T, N) and the forward's weights.
 * x, dy bf16; w_local (L, N, K) bf16, local expert l = qgmm_ep_plan_local_expert_id(l);
 * y, dx (and the expert outputs that travel back) of out_dtype, bf16 or f32; dw bf16 or f32.
 * Byte-identical to qgmm_moe_experts_forward/backward on one device over all ranks' tokens
 * sorted by expert, each expert's rows padded with zero rows to the plan's alignment,
 * followed by the same weighted sum (docs/ep.md, "Equivalence"). */
typedef struct qgmm_ep_moe qgmm_ep_moe;
/* N, K: the expert weights' (N, K); out_dtype: bf16 or f32. The plan needs max_row_bytes >=
 * qgmm_ep_wire_row_bytes(out_dtype, max(N, K), 0). Allocates on the plan's context. */
QGMM_API qgmm_status qgmm_ep_moe_create(qgmm_ep_plan *plan, const qgmm_moe_params *p, int64_t N,
                                        int64_t K, qgmm_dtype out_dtype, qgmm_ep_moe **out);
QGMM_API void qgmm_ep_moe_destroy(qgmm_ep_moe *layer);
/* Collective (routes the plan). expert_ids (T, k) i32, weights (T, k) f32 or bf16. */
QGMM_API qgmm_status qgmm_ep_moe_forward(qgmm_ep_moe *layer, const qgmm_tensor *x,
                                         const qgmm_tensor *expert_ids, const qgmm_tensor *weights,
                                         const qgmm_tensor *w_local, const qgmm_tensor *y);
/* Collective; after qgmm_ep_moe_forward of the same step (same plan, same weights). */
QGMM_API qgmm_status qgmm_ep_moe_backward(qgmm_ep_moe *layer, const qgmm_tensor *dy,
                                          const qgmm_tensor *weights, const qgmm_tensor *w_local,
                                          const qgmm_tensor *dx, const qgmm_tensor *dw_local);

#ifdef __cplusplus
}
#endif
#endif /* QGMM_H */
