/*
 * qgmm_backend.h — the contract between libqgmm and a backend (built-in cpu or a
 * dlopen'ed plugin). Not part of the public API; backends include it.
 *
 * The API layer validates every argument (dtypes, shapes, strides, alignment, extents
 * inside buffers, parameter values) BEFORE calling a backend, so a backend op only sees
 * well-formed tensors. What it must still do itself:
 *  - read group offsets on the device, check them (monotonic, 0 <= offs, offs[G-1] <=
 *    the extent, plus any per-op multiple-of rule), and if they are bad write nothing
 *    and raise QGMM_DEVICE_STATUS_BAD_OFFSETS in its context status word;
 *  - report an unsupported combination with QGMM_ERR_UNSUPPORTED and a message
 *    (qgmm_set_error) — a NULL vtable slot means "unsupported" for the whole op.
 *
 * A plugin exports one symbol, QGMM_PLUGIN_ENTRY_SYMBOL, of type qgmm_plugin_entry_fn.
 * It must not abort if its vendor runtime is missing: it returns NULL with a reason.
 */
#ifndef QGMM_BACKEND_H
#define QGMM_BACKEND_H

#include "qgmm.h"
#include "qgmm_problem.h"
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QGMM_BACKEND_ABI_VERSION 7u
#define QGMM_PLUGIN_ENTRY_SYMBOL "qgmm_plugin_entry"

/* What context_create receives when the caller adopts the NULL stream (a valid
 * cudaStream_t / hipStream_t: the default stream) — NULL itself means "no stream given".
 * Numerically CUDA's cudaStreamLegacy handle. */
#define QGMM_NATIVE_STREAM_DEFAULT ((void *)(uintptr_t)1)

/* Bits of the per-context device status word. */
#define QGMM_DEVICE_STATUS_BAD_OFFSETS 0x1u

typedef struct qgmm_backend_vtable qgmm_backend_vtable;

/* ---- expert parallelism (docs/ep.md, "Backend contract")
 * One plan's device state on one rank, built once in api/ep.c and handed to the backend's
 * routing ops. Every tensor is i32, contiguous, on the rank's context. The wire buffers
 * hold nranks slots of cap rows: slot p of a send buffer goes to rank p, slot r of a
 * receive buffer came from rank r; a call's rows are row_bytes apart (a multiple of 16)
 * and slot p starts at byte p * cap * row_bytes. */
typedef struct qgmm_ep_desc {
    int nranks, rank;
    int top_k;
    int alignment;            /* 16, 32 or 128 */
    int64_t num_experts;      /* E */
    int64_t local;            /* L, this rank's experts */
    int64_t local_max;        /* the most experts on one rank; counts hold local_max + 1 per peer */
    int64_t tokens;           /* T of the current route */
    int64_t cap;              /* rows per wire slot (max_rows_per_peer) */
    int64_t max_recv_rows;    /* rows of the receive layout */
    qgmm_tensor expert_rank;  /* (E): rank of expert e */
    qgmm_tensor expert_local; /* (E): index of expert e among its rank's experts */
    qgmm_tensor pos;          /* (max_tokens * k): send wire row p * cap + i of (t, j) */
    qgmm_tensor send_src;     /* (nranks * cap): t * k + j of each send wire row */
    qgmm_tensor send_counts;  /* (nranks * (local_max + 1)): per peer, its rows for each of
                                 the peer's local experts, then this rank's route status */
    qgmm_tensor recv_counts;  /* the same, as received from each peer */
    qgmm_tensor send_rows;    /* (nranks): rows this rank sends each peer */
    qgmm_tensor recv_rows;    /* (nranks): rows it receives from each peer */
    qgmm_tensor recv_dst;     /* (nranks * cap): receive-layout row of each receive wire row */
    qgmm_tensor offs;         /* (max(L, 1)): padded cumulative end offsets of the local experts */
    qgmm_tensor state;        /* (1): 0, or 1 when this step is refused on this rank */
    /* The wire rows [win_lo, win_hi) of every slot that pack and the dispatch's unpack move
     * (the dispatch's unpack zero-fills only when win_lo is 0 and not own_direct). The API
     * passes the whole slot [0, cap) except with a transport that exchanges in chunks
     * (exchange_chunk), which only a backend of its own (CUDA with NCCL) has. */
    int64_t win_lo, win_hi;
    /* 1: the own slot stays off the wire. The API sets it exactly when the transport has
     * exchange_chunk (a backend's own, CUDA with NCCL; that backend must have ep_own_rows);
     * then ep_pack and the transport skip slot `rank`, the dispatch's ep_unpack neither zero-fills nor reads slot
     * `rank` (ep_own_rows does both), and ep_own_rows forms the combine's sums. 0: whole
     * slots through the wire (every other backend and transport). */
    int own_direct;
} qgmm_ep_desc;

typedef enum qgmm_ep_dir { QGMM_EP_DISPATCH = 0, QGMM_EP_COMBINE = 1 } qgmm_ep_dir;

/* A transport moves bytes between the ranks' device buffers, enqueued on the rank's
 * context's stream (qgmm_tensor_data gives the device pointer on cuda/hip) in order with
 * the ops around it; it reads no device memory on the host unless its docs say so. */
typedef void qgmm_ep_transport;
typedef struct qgmm_ep_transport_vtable {
    const char *name; /* "loopback", "nccl" */
    /* All-to-all of `per_peer` int32 per rank: send[p * per_peer, +per_peer) goes to rank
     * p and lands at recv[rank * per_peer, +per_peer) there. */
    qgmm_status (*exchange_counts)(qgmm_ep_transport *t, qgmm_context *ctx, const qgmm_tensor *send,
                                   const qgmm_tensor *recv, int64_t per_peer);
    /* The slotted all-to-all of wire rows (u8 rank-1 tensors): the first send_rows[p] rows
     * of send slot p go to rank p's receive slot `rank`. The counts are device i32 (nranks);
     * recv_rows[r] equals rank r's send_rows[rank]. A transport may copy whole slots
     * (cap_rows rows) instead of reading the counts: rows past the count are never read. */
    qgmm_status (*alltoallv)(qgmm_ep_transport *t, qgmm_context *ctx, const qgmm_tensor *send,
                             const qgmm_tensor *recv, int64_t row_bytes, int64_t cap_rows,
                             const qgmm_tensor *send_rows, const qgmm_tensor *recv_rows);
    void (*destroy)(qgmm_ep_transport *t);
    /* Optional, both or neither: the slotted all-to-all in chunks that overlap the pack and
     * unpack around them. exchange_chunk moves rows [lo, hi) of every peer's slot (whole,
     * like alltoallv; not the own slot: with it the plan runs own_direct, see qgmm_ep_desc)
     * once the context's stream has reached it, on a stream of the transport's own, and
     * returns at once; wait_chunk makes the context's stream wait for chunk c. Chunk
     * numbers c < QGMM_EP_MAX_CHUNKS; each is waited for before it is reused. */
    qgmm_status (*exchange_chunk)(qgmm_ep_transport *t, qgmm_context *ctx, const qgmm_tensor *send,
                                  const qgmm_tensor *recv, int64_t row_bytes, int64_t cap_rows, int64_t lo,
                                  int64_t hi, int c);
    qgmm_status (*wait_chunk)(qgmm_ep_transport *t, qgmm_context *ctx, int c);
} qgmm_ep_transport_vtable;
#define QGMM_EP_MAX_CHUNKS 8

/* What a backend's ep_transport_create is asked for. */
typedef enum qgmm_ep_transport_kind {
    QGMM_EP_TRANSPORT_NCCL_COMM = 0,     /* handle: the caller's ncclComm_t (not owned) */
    QGMM_EP_TRANSPORT_NCCL_UNIQUE_ID = 1 /* handle: QGMM_EP_UNIQUE_ID_BYTES bytes; nranks, rank */
} qgmm_ep_transport_kind;

/* Opaque per-backend state hung off the public handles. */
typedef void qgmm_backend_ctx;
typedef void qgmm_backend_buf;
typedef void qgmm_backend_event;

struct qgmm_backend_vtable {
    uint32_t abi_version;  /* QGMM_BACKEND_ABI_VERSION */
    const char *name;      /* "cpu", "cuda", ... */

    /* ---- devices and contexts */
    int (*device_count)(void);
    /* native_stream NULL: the backend creates (or uses) a queue of its own;
     * QGMM_NATIVE_STREAM_DEFAULT: adopt the runtime's NULL (default) stream, which the
     * caller passed as NULL to qgmm_context_create_with_stream; else the stream to adopt. */
    qgmm_status (*context_create)(qgmm_context *ctx, int device, void *native_stream,
                                  qgmm_backend_ctx **out);
    void (*context_destroy)(qgmm_backend_ctx *bctx);
    /* Fills `out` (cap bytes) with one descriptive line. */
    void (*context_describe)(qgmm_backend_ctx *bctx, char *out, size_t cap);
    /* Waits for queued work; returns the status word bits raised since the last call
     * (and clears them) in *device_status. */
    qgmm_status (*synchronize)(qgmm_context *ctx, uint32_t *device_status);

    /* ---- buffers; offsets/sizes are checked by the API */
    qgmm_status (*buffer_alloc)(qgmm_context *ctx, size_t bytes, qgmm_backend_buf **out,
                                void **native);
    qgmm_status (*buffer_wrap)(qgmm_context *ctx, void *native, size_t bytes,
                               qgmm_backend_buf **out);
    void (*buffer_free)(qgmm_context *ctx, qgmm_backend_buf *b, int owned);
    qgmm_status (*buffer_upload)(qgmm_context *ctx, qgmm_backend_buf *b, size_t off,
                                 const void *src, size_t bytes);
    qgmm_status (*buffer_download)(qgmm_context *ctx, qgmm_backend_buf *b, size_t off,
                                   void *dst, size_t bytes);
    qgmm_status (*buffer_fill)(qgmm_context *ctx, qgmm_backend_buf *b, size_t off,
                               size_t bytes, uint8_t byte);
    qgmm_status (*buffer_copy)(qgmm_context *ctx, qgmm_backend_buf *dst, size_t dst_off,
                               qgmm_backend_buf *src, size_t src_off, size_t bytes);

    /* ---- timing */
    qgmm_status (*event_create)(qgmm_context *ctx, qgmm_backend_event **out);
    qgmm_status (*event_record)(qgmm_context *ctx, qgmm_backend_event *ev);
    qgmm_status (*event_elapsed_ms)(qgmm_context *ctx, qgmm_backend_event *start,
                                    qgmm_backend_event *end, double *ms);
    void (*event_destroy)(qgmm_context *ctx, qgmm_backend_event *ev);

    /* ---- expert parallelism (docs/ep.md, "Backend contract"); each slot optional (NULL:
     * unsupported). Arguments validated by api/ep.c; every op enqueues, none syncs. */
    /* From expert_ids (T, k) i32 fill pos, send_src, send_counts (status entries 0),
     * send_rows, and state = 0. The rows for peer p are ordered by its local expert, then
     * token, then slot (the order is part of the contract: it fixes the GEMMs' summation
     * order). An id outside [0, E) or more than cap rows for one peer: every count and row
     * 0, pos and send_src -1, status entries and state 1, and raise
     * QGMM_DEVICE_STATUS_BAD_OFFSETS. */
    qgmm_status (*ep_route)(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *expert_ids);
    /* After the count exchange: from recv_counts fill recv_rows, recv_dst and offs (local
     * expert l's rows from rank 0, then rank 1, ..., each expert's block padded to the
     * alignment). A peer's status entry nonzero: send_rows and recv_rows all 0, state 1,
     * raise. offs[L-1] above max_recv_rows: state 1, raise. */
    qgmm_status (*ep_layout)(qgmm_context *ctx, const qgmm_ep_desc *d);
    /* Fill the send wire (state nonzero: write nothing). DISPATCH: row (p, i <
     * send_rows[p]) is x's row t = send_src / k (times weights[t, j] in f32, rounded to
     * x's dtype, when weights are given) followed by x_scales' row bytes. COMBINE: row
     * (p, i < recv_rows[p]) is x's row recv_dst[p * cap + i]; offs[L-1] above x's rows:
     * raise, write nothing. With own_direct, slot `rank` is left alone. */
    qgmm_status (*ep_pack)(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir,
                           const qgmm_tensor *x, const qgmm_tensor *x_scales,
                           const qgmm_tensor *weights, const qgmm_tensor *wire, int64_t row_bytes);
    /* Read the receive wire (state nonzero: write nothing). DISPATCH: offs[L-1] above
     * out's rows: raise, write nothing; else out and out_scales zero (plain rows, or with
     * scales_blocked the M-groups blocked layout over offs), then receive row (r, i <
     * recv_rows[r]) to row recv_dst[r * cap + i]; offs_out (optional) = offs. COMBINE:
     * out[t] = sum over j in order of weights[t, j] (1 when absent) * the row at pos[t, j],
     * in f32, for t < T; wire's dtype (bf16 or f32) is the rows' dtype. With own_direct
     * the API calls it for the DISPATCH only, which then neither zero-fills nor reads slot
     * `rank` (ep_own_rows does both). */
    qgmm_status (*ep_unpack)(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir,
                             const qgmm_tensor *wire, int64_t row_bytes, const qgmm_tensor *weights,
                             const qgmm_tensor *out, const qgmm_tensor *out_scales,
                             int scales_blocked, const qgmm_tensor *offs_out);
    /* Optional (own_direct): the own slot's rows, which never go on the wire (state
     * nonzero: write nothing). DISPATCH (x, x_scales, weights, out, out_scales,
     * scales_blocked, offs_out as in ep_pack and ep_unpack): with win_lo 0, out and
     * out_scales' zero fill of ep_unpack first (and offs_out = offs); then row (rank, i) for
     * i in [win_lo, win_hi), i < recv_rows[rank], straight from x's row send_src[rank * cap +
     * i] / k (weighted, + scales: the bytes ep_pack would put on the wire) to out's row
     * recv_dst[rank * cap + i]; offs[L-1] above out's rows: raise, write nothing. COMBINE:
     * ep_unpack's sums over the whole step, the rows at pos[t, j] of slot `rank` read from
     * x (y) at recv_dst[pos[t, j]] instead of the wire; offs[L-1] above x's rows: raise,
     * write nothing. */
    qgmm_status (*ep_own_rows)(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir,
                               const qgmm_tensor *x, const qgmm_tensor *x_scales,
                               const qgmm_tensor *weights, const qgmm_tensor *wire, int64_t row_bytes,
                               const qgmm_tensor *out, const qgmm_tensor *out_scales,
                               int scales_blocked, const qgmm_tensor *offs_out);
    /* A transport of the backend's own (NCCL/RCCL): *vt and *out, the communicator's size
     * and this rank in *out_nranks and *out_rank. */
    qgmm_status (*ep_transport_create)(qgmm_context *ctx, qgmm_ep_transport_kind kind,
                                       const void *handle, int nranks, int rank,
                                       const qgmm_ep_transport_vtable **vt, qgmm_ep_transport **out,
                                       int *out_nranks, int *out_rank);
    /* ncclGetUniqueId into QGMM_EP_UNIQUE_ID_BYTES bytes of host memory. */
    qgmm_status (*ep_unique_id)(qgmm_context *ctx, void *id_out);

    /* ---- ops (arguments already validated; absent optional tensors have buffer NULL) */
    /* Every cast (the quantize ops, the grouped MXFP8 layouts, dequantize) as the one
     * description api/problem_cast.c builds (qgmm_problem.h). */
    qgmm_status (*cast)(qgmm_context *ctx, const qgmm_cast_problem *p);
    /* Optional: when NULL the API runs the two FP8 rowwise casts through cast. */
    qgmm_status (*quantize_fp8_rowwise_dual)(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p0,
                                             const qgmm_tensor *x0, const qgmm_tensor *q0,
                                             const qgmm_tensor *s0,
                                             const qgmm_fp8_rowwise_params *p1,
                                             const qgmm_tensor *x1, const qgmm_tensor *q1,
                                             const qgmm_tensor *s1, const qgmm_tensor *offs);
    /* Optional: pad x's token groups and quantize the padded rows along the tokens in one
     * pass, without the padded tensor (api/ops_pad_cast.c, the composite's wgrad operands).
     * p is the cast of the padded rows (MXFP8 K-groups, or FP8 blockwise 1x128 of the
     * transposed view), except that p->x is the unpadded source: its r index is a token of
     * x, and padded position j reads token src(j) of g->offs's groups (or zero), as
     * qgmm_pad_token_groups would have placed it. Writes g->padded_offs first (the offsets
     * p->offs refers to for MXFP8), then q and the scales; bad g->offs: raise, write
     * nothing. QGMM_ERR_UNSUPPORTED before enqueuing anything: the API runs the two ops. */
    qgmm_status (*pad_cast)(qgmm_context *ctx, const qgmm_cast_problem *p, const qgmm_pad_gather *g);
    /* Optional: the MXFP8 round trip, out = bf16(dequantize(quantize_mxfp8(x))), in one pass
     * (api/ops_mx_round_trip.c). p is the quantize of bf16 x into q with plain scales; q and
     * the scales are not written (q's dtype names the format); out (bf16) is indexed as x.
     * A backend offers it where its MXFP8 GEMM multiplies the dequantized bf16 operands
     * anyway (the composite then runs round trips and BF16 GEMMs, which give the MXFP8
     * GEMM's values without the fp8 bytes and scales going through memory), and takes
     * every problem the API passes without g: x and out with their blocks (s_r == 1) or
     * their lines (s_o == 1) contiguous, whole blocks (r a multiple of 32); x may be out
     * (in place). With g (the wgrad operands): x (T, D) unpadded with contiguous lines, the
     * blocks along the tokens, p and out describing the padded rows as pad_cast's p does
     * (out's r index a padded position, p->r their count); padded_offs written first, then
     * every padded row of out (padding zero); bad g->offs: raise, write nothing;
     * QGMM_ERR_UNSUPPORTED before enqueuing anything: the API pads and round-trips in place. */
    qgmm_status (*mx_round_trip)(qgmm_context *ctx, const qgmm_cast_problem *p, const qgmm_cast_operand *out,
                                 const qgmm_pad_gather *g);
    qgmm_status (*scales_to_blocked)(qgmm_context *ctx, qgmm_blocked_variant v,
                                     const qgmm_tensor *in, const qgmm_tensor *offs,
                                     const qgmm_tensor *out, const qgmm_tensor *group_starts);
    qgmm_status (*scales_from_blocked)(qgmm_context *ctx, qgmm_blocked_variant v,
                                       const qgmm_tensor *in, const qgmm_tensor *offs,
                                       const qgmm_tensor *out);
    qgmm_status (*pad_token_groups)(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                    const qgmm_tensor *offs, const qgmm_tensor *out,
                                    const qgmm_tensor *padded_start,
                                    const qgmm_tensor *padded_offs);
    qgmm_status (*unpad_token_groups)(qgmm_context *ctx, int alignment,
                                      const qgmm_tensor *x_padded, const qgmm_tensor *offs,
                                      const qgmm_tensor *out);
    qgmm_status (*group_row_ids)(qgmm_context *ctx, const qgmm_tensor *offs,
                                 const qgmm_tensor *padded_offs, const qgmm_tensor *row_ids);
    /* The problem as api/problem_gemm.c describes it (qgmm_problem.h). */
    qgmm_status (*grouped_gemm)(qgmm_context *ctx, const qgmm_gemm_problem *p);
};

/* A plugin's entry: returns its vtable, or NULL and a reason (e.g. "libcuda.so.1 not
 * found") when it cannot run on this machine. Called once per process. */
typedef const qgmm_backend_vtable *(*qgmm_plugin_entry_fn)(uint32_t abi_version, char *reason,
                                                            size_t reason_cap);

/* ---- services libqgmm gives backends (exported from libqgmm) */

/* Sets ctx's last error (printf-style) and returns `s` for `return qgmm_set_error(...)`. */
QGMM_API qgmm_status qgmm_set_error(const qgmm_context *ctx, qgmm_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The backend state of a context / buffer. */
QGMM_API qgmm_backend_ctx *qgmm_context_impl(const qgmm_context *ctx);
QGMM_API qgmm_backend_buf *qgmm_buffer_impl(const qgmm_buffer *buf);
/* The data pointer of a tensor's first element for backends whose native buffer handle is
 * a pointer (cpu, cuda, hip): native + offset. */
QGMM_API void *qgmm_tensor_data(const qgmm_tensor *t);
/* The same for a problem's reference (NULL where absent). */
QGMM_API void *qgmm_ref_data(const qgmm_ref *r);
/* The description of a validated cast that the API hands the cast slot (dequantize: x is
 * the output, q and scales the inputs). */
QGMM_API void qgmm_cast_problem_make(const qgmm_quant_format *f, int dequantize, const qgmm_tensor *x,
                                     const qgmm_tensor *q, const qgmm_tensor *scales,
                                     const qgmm_tensor *offs, qgmm_cast_problem *p);
/* The problem the API hands the mx_round_trip slot: the quantize of x (the blocks' view: x
 * itself, or the padded rows) with plain scales, q laid out as out, q and the scales absent
 * (q's dtype names the format); *o is out as q's operand. Tests that call the slot directly
 * build theirs with it. */
QGMM_API void qgmm_mx_round_trip_problem_make(const qgmm_mxfp8_params *prm, qgmm_dtype fp8, const qgmm_tensor *x,
                                              const qgmm_tensor *out, qgmm_cast_problem *p, qgmm_cast_operand *o);
/* The description of a validated grouped GEMM that the API hands grouped_gemm; tests that
 * drive a backend's translation directly build theirs with it. */
QGMM_API void qgmm_gemm_problem_make(const qgmm_grouped_gemm_params *prm, const qgmm_tensor *a,
                                     const qgmm_tensor *b, const qgmm_tensor *a_scales,
                                     const qgmm_tensor *b_scales, const qgmm_tensor *offs,
                                     const qgmm_tensor *out, qgmm_gemm_problem *p);

#ifdef __cplusplus
}
#endif
#endif /* QGMM_BACKEND_H */
