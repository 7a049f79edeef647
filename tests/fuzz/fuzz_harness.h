/*
 * fuzz_harness.h — the machinery under the API fuzz target (fuzz_api.c): an input reader,
 * the tensors of one call with their mutations and placement, the buffers they live in,
 * and the invariants checked around every call. docs/fuzzing.md describes the whole.
 */
#ifndef QGMM_FUZZ_HARNESS_H
#define QGMM_FUZZ_HARNESS_H

#include "qgmm.h"

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ input bytes
 * Reads past the end give 0, and 0 always decodes to the plain valid choice, so a short
 * input is a valid call and the mutator's work is spent on departures from it. */
typedef struct fz_in {
    const uint8_t *p;
    size_t n, i;
} fz_in;

uint8_t fz_u8(fz_in *in);
uint32_t fz_u32(fz_in *in);
uint64_t fz_u64(fz_in *in);
/* A byte that is 0 (nothing special) for most values, 1..3 for the top quarter. */
int fz_rare(fz_in *in);
/* A dimension: a multiple of `granule` in [granule, max(cap, granule)] for most bytes,
 * otherwise one of the edge values (0, granule +- 1, 2^31, 2^40, INT64_MAX, -1, ...). */
int64_t fz_dim(fz_in *in, int64_t granule, int64_t cap);
/* A group count: 1..8 mostly, else 32767, 32768, 65536, 65537, 0, -1, ... */
int64_t fz_groups(fz_in *in);
/* One of three fp8 dtypes (two when `ocp_only`). */
qgmm_dtype fz_fp8(fz_in *in, int ocp_only);

/* ------------------------------------------------------------------ one call */
#define FZ_MAX_SLOTS 8
#define FZ_MAX_BUFS 8
#define FZ_BUF_CAP ((size_t)1 << 20)     /* no buffer above 1 MiB */
#define FZ_TOTAL_CAP ((size_t)4 << 20)   /* all buffers of one call together */

typedef enum fz_role { FZ_IN = 0, FZ_OUT = 1, FZ_WS = 2 } fz_role;

typedef struct fz_slot {
    const char *name;
    qgmm_tensor t;
    fz_role role;
    int absent;          /* passed with a NULL buffer (the API's "absent") */
    int null_ptr;        /* passed as a NULL pointer */
    int buf;             /* index of the buffer it lives in */
    int place;           /* FZ_FRESH / FZ_OVERLAP / FZ_ABS (fuzz_harness.c) */
    int ref;             /* FZ_OVERLAP: the slot overlapped */
    int64_t delta;       /* FZ_OVERLAP: byte distance from that slot's offset */
    size_t abs_off;      /* FZ_ABS: the offset as given */
    size_t adj;          /* added to the offset after placement (misalignment, wrap) */
    /* group offsets written into the tensor before the call */
    int is_offs;
    int offs_mode;
    uint32_t offs_seed;
    int64_t offs_len;    /* the extent the generated values partition */
    int64_t offs_granule;
    int offs_from;       /* >= 0: padded offsets of that slot's values, alignment offs_align */
    int offs_align;
    /* where the op takes the extent the offsets index from (-1: unknown, not checked) */
    int ext_slot, ext_dim;
    int64_t ext_mult;
    int64_t ext_multiple;  /* group sizes the op requires a multiple of (1: none) */
} fz_slot;

typedef struct fz_call {
    const char *op;
    fz_slot s[FZ_MAX_SLOTS];
    int n;
    qgmm_buffer *buf[FZ_MAX_BUFS];
    uint8_t *host[FZ_MAX_BUFS];     /* host view: native pointer (cpu) */
    uint8_t *owned[FZ_MAX_BUFS];    /* memory we malloc'd for a wrapped buffer */
    uint8_t *snap[FZ_MAX_BUFS];     /* roots only */
    size_t size[FZ_MAX_BUFS];
    int root[FZ_MAX_BUFS];          /* the buffer whose memory this one wraps (itself mostly) */
    size_t base[FZ_MAX_BUFS];       /* where in the root's memory it starts */
    int32_t *offs_vals[FZ_MAX_SLOTS]; /* the values generated for each offsets slot */
    size_t ws_need;                 /* the composite's workspace region [0, ws_need) */
    int tls_error;                  /* errors may have no context (buffer calls on NULL) */
    int ws_slot;                    /* -1 when the op has no workspace */
    char sentinel[1024];            /* last_error before the call */
} fz_call;

void fz_begin(fz_call *c, const char *op);
/* Adds a contiguous tensor slot living in its own buffer; returns its index. */
int fz_add(fz_call *c, const char *name, fz_role role, qgmm_dtype dt, int rank, int64_t d0,
           int64_t d1, int64_t d2);
/* Adds an i32 offsets slot of `groups` entries whose values partition [0, len) in
 * multiples of `granule` (or break that, as the input decides). */
int fz_add_offs(fz_call *c, fz_in *in, const char *name, int64_t groups, int64_t len,
                int64_t granule);
/* The op reads the extent its offsets index from slot `ext_slot`'s dim `dim` times `mult`. */
void fz_offs_extent(fz_call *c, int offs_slot, int ext_slot, int dim, int64_t mult);
/* Input-chosen departures from the plain call: dtype, rank, shape, strides, offset,
 * absence, placement in a shared buffer or on top of another slot. */
void fz_mutate(fz_call *c, fz_in *in);
/* Places the slots, sizes, allocates and fills the buffers, writes the offsets. Returns 0
 * when nothing can be run (no memory). */
int fz_layout(fz_call *c, fz_in *in);
/* Snapshots every buffer and sets a sentinel last_error, right before the call. */
void fz_arm(fz_call *c);
/* Checks every invariant after the call returned `rc` (aborts on a violation). */
void fz_check(fz_call *c, qgmm_status rc);
void fz_release(fz_call *c);

const qgmm_tensor *fz_t(const fz_call *c, int slot);
qgmm_buffer *fz_ws(const fz_call *c);

/* The context every call runs on. */
extern qgmm_context *fz_ctx;
void fz_init(void);
/* Reports a violated invariant: prints it with the call and aborts (libFuzzer then saves
 * the input), unless QGMM_FUZZ_IGNORE names it, alone or as invariant@op (triage only),
 * when it returns 1 and the caller skips the rest of its checks. */
int fz_report(const fz_call *c, const char *invariant, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Checks a status an op (or buffer call) returned against the documented set, and that
 * an error left a message. */
void fz_check_status(const fz_call *c, qgmm_status rc);

#endif /* QGMM_FUZZ_HARNESS_H */
