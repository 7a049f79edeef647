"""Expert parallelism (api/qgmm.h "expert parallelism", docs/ep.md) on arrays.

Experts are spread over R ranks, one qgmm context each. A Comm is one rank's
communicator: `Comm.loopback(R)` makes R in-process ranks (cpu contexts by default: the
CPU and CI transport), `Comm.from_nccl` wraps the caller's ncclComm_t and
`Comm.from_unique_id` has qgmm create one (CUDA/HIP builds with NCCL/RCCL). A Plan is the
static shape of one layer on one rank; `route`, `dispatch` and `combine` are its
collectives. MoeLayer is the whole expert-parallel layer (route -> dispatch -> local
experts -> combine, and the backward through the same plan).

Collective calls must be made by every rank in the same order; loopback ranks each from
their own thread (`run_ranks` does that). An argument error raised on one rank before
the C call leaves the other ranks waiting for it, as with NCCL: make every rank's
arguments agree. Like the other ops these enqueue and return; `comm.ctx.synchronize()`
waits and raises BadOffsetsError for a step refused on the device (a bad expert id on
any rank).
"""
import ctypes
import threading
import time

import numpy as np

from . import _lib
from ._lib import lib
from .arrays import Call, dtype_of
from .constants import DTYPES, lookup
from .context import Context, check
from .ops import _moe_params, _ref


def _run(call, fn, *args):
    """An ep call (its first argument a plan or layer handle, not a context)."""
    check(fn(*args), call.ctx.handle)


def wire_row_bytes(dtype, cols, scale_bytes=0):
    """The bytes of one wire row: `cols` elements of `dtype` and `scale_bytes` of scales,
    rounded up to 16 (qgmm_ep_wire_row_bytes)."""
    return lib.qgmm_ep_wire_row_bytes(lookup(DTYPES, "dtype", dtype), cols, scale_bytes)


def nccl_unique_id(ctx):
    """NCCL's 128-byte unique id (qgmm_ep_nccl_unique_id) from a context of a backend with
    NCCL; broadcast it to every rank for Comm.from_unique_id. UnsupportedError elsewhere."""
    raw = ctypes.create_string_buffer(_lib.EP_UNIQUE_ID_BYTES)
    check(lib.qgmm_ep_nccl_unique_id(ctx.handle, raw), ctx.handle)
    return raw.raw


class Comm:
    """One rank's qgmm_ep_comm, on the Context `ctx` (kept alive with it)."""

    def __init__(self, ctx, handle):
        self.ctx = ctx
        self.handle = handle

    @classmethod
    def loopback(cls, ranks, backend="cpu", device=0):
        """R in-process ranks (qgmm_ep_comm_create_loopback): `ranks` is a count (each rank
        gets a new context of `backend`) or a list of distinct Contexts. Returns the R Comms."""
        ctxs = [Context(backend, device) for _ in range(ranks)] if isinstance(ranks, int) else list(ranks)
        n = len(ctxs)
        handles = (ctypes.c_void_p * max(n, 1))(*[c.handle for c in ctxs])
        out = (ctypes.c_void_p * max(n, 1))()
        check(lib.qgmm_ep_comm_create_loopback(n, handles, out), None)
        return [cls(ctxs[i], out[i]) for i in range(n)]

    @classmethod
    def from_nccl(cls, ctx, nccl_comm):
        """Over the caller's ncclComm_t (an int address; it stays the caller's and must
        outlive this Comm): qgmm_ep_comm_create_nccl."""
        h = ctypes.c_void_p()
        check(lib.qgmm_ep_comm_create_nccl(ctx.handle, ctypes.c_void_p(nccl_comm), ctypes.byref(h)),
              ctx.handle)
        return cls(ctx, h.value)

    @classmethod
    def from_unique_id(cls, ctx, unique_id, nranks, rank):
        """A communicator qgmm creates and owns, from nccl_unique_id()'s bytes as broadcast
        to every rank (qgmm_ep_comm_create_nccl_id; collective: every rank calls it)."""
        if len(unique_id) != _lib.EP_UNIQUE_ID_BYTES:
            raise ValueError(f"unique_id has {len(unique_id)} bytes; NCCL's has {_lib.EP_UNIQUE_ID_BYTES}")
        raw = ctypes.create_string_buffer(bytes(unique_id), _lib.EP_UNIQUE_ID_BYTES)
        h = ctypes.c_void_p()
        check(lib.qgmm_ep_comm_create_nccl_id(ctx.handle, raw, nranks, rank, ctypes.byref(h)), ctx.handle)
        return cls(ctx, h.value)

    @property
    def rank(self):
        return lib.qgmm_ep_comm_rank(self.handle)

    @property
    def nranks(self):
        return lib.qgmm_ep_comm_nranks(self.handle)

    def close(self):
        """Frees the communicator (plans made from it hold a reference, so it goes last)."""
        if self.handle and self.ctx.handle:
            lib.qgmm_ep_comm_destroy(self.handle)
        self.handle = None

    def __del__(self):
        if getattr(self, "handle", None) and lib is not None:
            self.close()

    def __repr__(self):
        return f"qgmm.ep.Comm(rank {self.rank} of {self.nranks}, {self.ctx.describe()!r})"


class Plan:
    """One layer's static shape on one rank (qgmm_ep_plan_create): num_experts E (global),
    top_k, max_tokens (the most tokens one route takes), max_row_bytes (the widest wire
    row: wire_row_bytes(...)), alignment 16/32/128 of each local expert's block,
    max_rows_per_peer / max_recv_rows (0: the never-overflowing defaults), expert_rank
    (E ints: the rank of each expert; None: an even split)."""

    def __init__(self, comm, num_experts, top_k, max_tokens, max_row_bytes, *, alignment=16,
                 max_rows_per_peer=0, max_recv_rows=0, expert_rank=None):
        self.comm = comm
        self.handle = None
        self.tokens = None
        self._expert_rank = None
        if expert_rank is not None:
            self._expert_rank = np.ascontiguousarray(expert_rank, np.int32)
            if self._expert_rank.shape != (num_experts,):
                raise ValueError(f"expert_rank has shape {self._expert_rank.shape}; needs ({num_experts},)")
        ranks = (self._expert_rank.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
                 if self._expert_rank is not None else None)
        p = _lib.EpPlanParams(num_experts, top_k, max_tokens, max_row_bytes, alignment,
                              max_rows_per_peer, max_recv_rows, ranks)
        h = ctypes.c_void_p()
        check(lib.qgmm_ep_plan_create(comm.handle, ctypes.byref(p), ctypes.byref(h)), comm.ctx.handle)
        self.handle = h.value
        self.top_k = top_k

    @property
    def local_experts(self):
        """L, this rank's expert count (may be 0)."""
        return lib.qgmm_ep_plan_local_experts(self.handle)

    @property
    def local_expert_ids(self):
        """The global id of each local expert, in order (local expert l is group l)."""
        return [lib.qgmm_ep_plan_local_expert_id(self.handle, i) for i in range(self.local_experts)]

    @property
    def recv_rows(self):
        """R_rows, the rows of the worst-case receive layout."""
        return lib.qgmm_ep_plan_recv_rows(self.handle)

    def route(self, expert_ids):
        """Collective: where every (token, slot) row of expert_ids (T, top_k) int32 goes."""
        with Call(self.comm.ctx, expert_ids) as c:
            _run(c, lib.qgmm_ep_route, self.handle, ctypes.byref(c.tensor("expert_ids", expert_ids)))
        self.tokens = expert_ids.shape[0]

    def received_rows(self):
        """The padded rows this rank receives from the last route. ONE HOST SYNCHRONISATION
        (the exact-size mode): size dispatch's out with it."""
        rows = ctypes.c_int64()
        check(lib.qgmm_ep_received_rows(self.handle, ctypes.byref(rows)), self.comm.ctx.handle)
        return rows.value

    def _scales_out(self, c, x, x_scales, rows, scale_layout):
        dt = dtype_of(x_scales)
        D = x.shape[1]
        if dt == "e8m0":
            if scale_layout == "m_groups":
                n = lib.qgmm_blocked_m_groups_bytes(rows, D // 32, max(self.local_experts, 1))
                return c.empty((n,), "e8m0")
            return c.empty((rows, D // 32), "e8m0")
        if len(x_scales.shape) == 1:
            return c.empty((rows,), dt)
        return c.empty((rows,) + tuple(x_scales.shape[1:]), dt)

    def dispatch(self, x, *, x_scales=None, weights=None, rows=None, out=None, out_scales=None,
                 scale_layout="plain", offs=None):
        """Collective: x (T, D) to its experts' ranks (qgmm_ep_dispatch). Returns
        (out (rows, D), out_scales or None, offs int32 (L)): local expert l's rows at
        [offs[l-1], offs[l-1] + count), zero elsewhere. rows: out's rows (default
        recv_rows; received_rows() for the exact size). x_scales: a quantized x's row
        scales, travelling with it (out_scales plain, or scale_layout="m_groups" for
        MXFP8's blocked grouped layout). weights (T, top_k): send x[t] * weights[t, j]."""
        with Call(self.comm.ctx, x) as c:
            tx, ts, tw = c.tensor("x", x), c.tensor("x_scales", x_scales), c.tensor("weights", weights)
            n = self.recv_rows if rows is None else rows
            if out is None:
                out = c.empty((n, x.shape[1] if len(x.shape) == 2 else 0), dtype_of(x))
            if out_scales is None and x_scales is not None:
                out_scales = self._scales_out(c, x, x_scales, n, scale_layout)
            if offs is None and self.local_experts:
                offs = c.empty((self.local_experts,), "i32")
            _run(c, lib.qgmm_ep_dispatch, self.handle, ctypes.byref(tx), _ref(ts), _ref(tw),
                 ctypes.byref(c.tensor("out", out)), _ref(c.tensor("out_scales", out_scales)),
                 _ref(c.tensor("offs", offs)))
        return out, out_scales, offs

    def combine(self, y, weights=None, *, out=None, out_dtype=None):
        """Collective: the expert outputs y (rows, H), in dispatch's layout, back to their
        tokens: out (T, H)[t] = sum_j weights[t, j] * y[row of (t, j)] in f32
        (qgmm_ep_combine; no weights: a plain sum, the backward of dispatch)."""
        if self.tokens is None:
            raise ValueError("combine: the plan was never routed (Plan.route)")
        with Call(self.comm.ctx, y) as c:
            ty, tw = c.tensor("y", y), c.tensor("weights", weights)
            if out is None:
                out = c.empty((self.tokens, y.shape[1] if len(y.shape) == 2 else 0),
                              out_dtype or dtype_of(y))
            _run(c, lib.qgmm_ep_combine, self.handle, ctypes.byref(ty), _ref(tw),
                 ctypes.byref(c.tensor("out", out)))
        return out

    def close(self):
        if self.handle and self.comm.ctx.handle:
            lib.qgmm_ep_plan_destroy(self.handle)
        self.handle = None

    def __del__(self):
        if getattr(self, "handle", None) and lib is not None:
            self.close()


class MoeLayer:
    """The expert-parallel MoE layer on one rank (qgmm_ep_moe_*): y (T, N) =
    sum_j weights[t, j] * x[t] . w_{ids[t, j]}^T with this rank's experts' weights
    w_local (L, N, K) bf16. Makes its own Plan unless given one (its max_row_bytes must
    cover wire_row_bytes(out_dtype, max(N, K))). Each backward belongs to the forward
    before it (the layer keeps that step's received tokens)."""

    def __init__(self, comm, num_experts, top_k, max_tokens, N, K, *, recipe="bf16", out_dtype="bf16",
                 fp8_dtype="f8e4m3fn", mx_mode="rceil", plan=None, **plan_args):
        self.comm = comm
        self.handle = None
        self.N, self.K = N, K
        self.out_dtype = out_dtype
        if plan is None:
            plan = Plan(comm, num_experts, top_k, max_tokens, wire_row_bytes(out_dtype, max(N, K)), **plan_args)
        self.plan = plan
        p = _moe_params(recipe, fp8_dtype, mx_mode)
        h = ctypes.c_void_p()
        check(lib.qgmm_ep_moe_create(plan.handle, ctypes.byref(p), N, K, lookup(DTYPES, "out_dtype", out_dtype),
                                     ctypes.byref(h)), comm.ctx.handle)
        self.handle = h.value
        self.local_experts = plan.local_experts
        self.local_expert_ids = plan.local_expert_ids

    def forward(self, x, expert_ids, weights, w_local, *, y=None):
        """Collective: x (T, K) bf16, expert_ids (T, k) int32, weights (T, k) f32/bf16,
        w_local (L, N, K) bf16 (None when L is 0) -> y (T, N) of out_dtype."""
        with Call(self.comm.ctx, x) as c:
            tx, ti, tw = c.tensor("x", x), c.tensor("expert_ids", expert_ids), c.tensor("weights", weights)
            twl = c.tensor("w_local", w_local)
            if y is None:
                y = c.empty((x.shape[0], self.N), self.out_dtype)
            _run(c, lib.qgmm_ep_moe_forward, self.handle, ctypes.byref(tx), ctypes.byref(ti),
                 ctypes.byref(tw), _ref(twl), ctypes.byref(c.tensor("y", y)))
        self.plan.tokens = x.shape[0]
        return y

    def backward(self, dy, weights, w_local, *, dx=None, dw_local=None):
        """Collective, after this step's forward: dy (T, N) bf16 -> (dx (T, K),
        dw_local (L, N, K)) of out_dtype (dw_local None when L is 0). The router weights
        get no gradient."""
        with Call(self.comm.ctx, dy) as c:
            tdy, tw, twl = c.tensor("dy", dy), c.tensor("weights", weights), c.tensor("w_local", w_local)
            if dx is None:
                dx = c.empty((dy.shape[0], self.K), self.out_dtype)
            if dw_local is None and self.local_experts:
                dw_local = c.empty((self.local_experts, self.N, self.K), self.out_dtype)
            _run(c, lib.qgmm_ep_moe_backward, self.handle, ctypes.byref(tdy), ctypes.byref(tw), _ref(twl),
                 ctypes.byref(c.tensor("dx", dx)), _ref(c.tensor("dw_local", dw_local)))
        return dx, dw_local

    def close(self):
        if self.handle and self.comm.ctx.handle:
            lib.qgmm_ep_moe_destroy(self.handle)
        self.handle = None

    def __del__(self):
        if getattr(self, "handle", None) and lib is not None:
            self.close()


def run_ranks(fn, per_rank, timeout=300.0):
    """Runs fn(item) for every item of per_rank (one per loopback rank) on a thread each,
    as the loopback transport needs, and returns the results in order. A rank's exception
    is re-raised as soon as it happens (the other ranks may then wait forever in a
    collective it never entered: their threads are daemons, left behind); a rank still
    running after `timeout` seconds raises TimeoutError instead of hanging."""
    items = list(per_rank)
    results, failures = [None] * len(items), []
    done = threading.Semaphore(0)

    def body(i):
        try:
            results[i] = fn(items[i])
        except BaseException as e:  # re-raised in the caller's thread
            failures.append((i, e))
        finally:
            done.release()

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(len(items))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for _ in threads:
        if not done.acquire(timeout=max(0.0, deadline - time.monotonic())):
            late = [i for i, t in enumerate(threads) if t.is_alive()]
            raise TimeoutError(f"run_ranks: ranks {late} still running after {timeout} s (a collective "
                               "that another rank did not enter?)")
        if failures:
            raise failures[0][1]
    return results
