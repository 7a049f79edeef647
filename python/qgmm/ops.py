"""Every op of api/qgmm.h as a function on arrays (NumPy on the cpu backend, PyTorch
tensors on any backend their device has). Shapes, layouts and numerics are those of the C
header; this module only allocates outputs (unless given), builds the tensor views and
raises a QgmmError subclass on a failed status. Like the C ops, these enqueue and return:
`context_for(array).synchronize()` waits and reports device-side offset errors.

Each function takes `ctx=` to run on an explicit Context instead of the one
`context_for` picks for its first array argument.
"""
import ctypes

from . import _lib
from ._lib import lib
from .arrays import Call, dtype_of
from .constants import (BLOCK_SHAPES, BLOCKED_VARIANTS, BLOCKWISE_LAYOUTS, DTYPES, GEMM_KINDS,
                        MX_MODES, QUANT_KINDS, RECIPES, SCALE_KINDS, SCALE_LAYOUTS, lookup)
from .context import check


def _ref(t):
    return ctypes.byref(t) if t is not None else None


def _fp8(name):
    lookup(DTYPES, "fp8_dtype", name)
    return name


def _rowwise_params(reduce_dim, power_of_2, scale_kind):
    return _lib.Fp8RowwiseParams(reduce_dim, int(bool(power_of_2)),
                                 lookup(SCALE_KINDS, "scale_kind", scale_kind))


def _rowwise_scales_shape(shape, reduce_dim, groups):
    """The scales shape qgmm_quantize_fp8_rowwise takes; (1,) where the arguments are
    wrong, so the C call names the problem."""
    r = len(shape)
    if r == 2 and reduce_dim in (0, 1):
        other = shape[1 - reduce_dim]
        return (groups, other) if groups is not None else (other,)
    if r == 3 and reduce_dim in (1, 2):
        return (shape[0], shape[2 if reduce_dim == 1 else 1])
    return (1,)


def _groups(offs):
    return None if offs is None else offs.shape[0]


# ------------------------------------------------------------------ casts
def quantize_fp8_rowwise(x, reduce_dim=1, offs=None, *, fp8_dtype="f8e4m3fn", power_of_2=False,
                         scale_kind="reciprocal", q=None, scales=None, ctx=None):
    """FP8 rowwise quantize (qgmm_quantize_fp8_rowwise): returns (q, scales).

    reduce_dim: the dim each scale's amax runs along (rank 2: 1 rowwise, 0 colwise;
    rank 3: 2 per (e, r), 1 per (e, c)). offs: int32 group ends partitioning reduce_dim
    (rank 2), giving group-major scales (G, other). scale_kind: "reciprocal" (what the
    GEMMs take) or "multiplier". Pass q to choose its strides (e.g. a transposed layout)."""
    with Call(ctx, x) as c:
        tx, to = c.tensor("x", x), c.tensor("offs", offs)
        if q is None:
            q = c.empty(tuple(x.shape), _fp8(fp8_dtype))
        if scales is None:
            scales = c.empty(_rowwise_scales_shape(tuple(x.shape), reduce_dim, _groups(offs)), "f32")
        p = _rowwise_params(reduce_dim, power_of_2, scale_kind)
        c.run(lib.qgmm_quantize_fp8_rowwise, ctypes.byref(p), ctypes.byref(tx), _ref(to),
              ctypes.byref(c.tensor("q", q)), ctypes.byref(c.tensor("scales", scales)))
    return q, scales


def quantize_fp8_rowwise_dual(x0, x1, offs, *, reduce_dims=(1, 0), fp8_dtype="f8e4m3fn",
                              power_of_2=False, scale_kind="reciprocal", ctx=None):
    """Two jagged FP8 rowwise quantizes sharing offs in one call (the wgrad operands):
    returns (q0, scales0, q1, scales1)."""
    with Call(ctx, x0) as c:
        tx0, tx1, to = c.tensor("x0", x0), c.tensor("x1", x1), c.tensor("offs", offs)
        fp8 = _fp8(fp8_dtype)
        q0, q1 = c.empty(tuple(x0.shape), fp8), c.empty(tuple(x1.shape), fp8)
        g = _groups(offs)
        s0 = c.empty(_rowwise_scales_shape(tuple(x0.shape), reduce_dims[0], g), "f32")
        s1 = c.empty(_rowwise_scales_shape(tuple(x1.shape), reduce_dims[1], g), "f32")
        p0 = _rowwise_params(reduce_dims[0], power_of_2, scale_kind)
        p1 = _rowwise_params(reduce_dims[1], power_of_2, scale_kind)
        c.run(lib.qgmm_quantize_fp8_rowwise_dual, ctypes.byref(p0), ctypes.byref(tx0),
              ctypes.byref(c.tensor("q0", q0)), ctypes.byref(c.tensor("scales0", s0)),
              ctypes.byref(p1), ctypes.byref(tx1), ctypes.byref(c.tensor("q1", q1)),
              ctypes.byref(c.tensor("scales1", s1)), _ref(to))
    return q0, s0, q1, s1


def _mx_scales(shape, block_dim, scale_layout, groups=None):
    """(shape of the E8M0 scales, normalised block_dim)."""
    r = len(shape)
    bd = block_dim + r if block_dim < 0 else block_dim
    if r not in (2, 3) or bd not in (r - 1, r - 2):
        return (1,), bd
    other = shape[r - 2] if bd == r - 1 else shape[r - 1]
    blocks = shape[bd] // 32
    experts = shape[0] if r == 3 else 1
    if scale_layout == "blocked":
        return (experts * lib.qgmm_blocked_scales_bytes(other, blocks),), bd
    if scale_layout in ("m_groups", "k_groups") and groups is not None:
        fn = lib.qgmm_blocked_m_groups_bytes if scale_layout == "m_groups" else lib.qgmm_blocked_k_groups_bytes
        return (fn(other, blocks, groups),), bd
    return ((other, blocks) if r == 2 else (experts, other, blocks)), bd


def quantize_mxfp8(x, block_dim=-1, offs=None, *, mode="rceil", scale_layout="plain", fp8_dtype="f8e4m3fn",
                   q=None, scales=None, ctx=None):
    """MXFP8 quantize (qgmm_quantize_mxfp8): blocks of 32 along block_dim (the last dim or
    the one before it), one E8M0 scale each; returns (q, scales). scale_layout "plain"
    gives (E?, other, blocks) scales, "blocked" the swizzled bytes of the 3D weights.
    With offs (int32 group ends over the tokens, x's rows) the scales go straight into the
    grouped GEMMs' layouts (qgmm_quantize_mxfp8_grouped): "m_groups" (block_dim 1, the
    M-grouped GEMM's activations) or "k_groups" (block_dim 0, the K-grouped GEMM's
    operands; groups of whole 32-token blocks) — the bytes scales_to_blocked makes from
    the plain scales."""
    grouped = scale_layout in ("m_groups", "k_groups")
    with Call(ctx, x) as c:
        tx, to = c.tensor("x", x), c.tensor("offs", offs)
        sshape, bd = _mx_scales(tuple(x.shape), block_dim, scale_layout, _groups(offs))
        p = _lib.Mxfp8Params(bd, lookup(MX_MODES, "mode", mode),
                             lookup(SCALE_LAYOUTS, "scale_layout", scale_layout))
        if q is None:
            q = c.empty(tuple(x.shape), _fp8(fp8_dtype))
        if scales is None:
            scales = c.empty(sshape, "e8m0")
        tq, ts = c.tensor("q", q), c.tensor("scales", scales)
        if grouped or offs is not None:
            c.run(lib.qgmm_quantize_mxfp8_grouped, ctypes.byref(p), ctypes.byref(tx), _ref(to),
                  ctypes.byref(tq), ctypes.byref(ts))
        else:
            c.run(lib.qgmm_quantize_mxfp8, ctypes.byref(p), ctypes.byref(tx), ctypes.byref(tq),
                  ctypes.byref(ts))
    return q, scales


def blockwise_scales_layout(shape, block="1x128", layout="row_major"):
    """(scales shape, element strides, bytes spanned) of the blockwise scales of data of
    `shape` (rows, K) or (E, rows, K) in `layout` (qgmm_blockwise_scales_view)."""
    view, nbytes = _lib.Tensor(), ctypes.c_size_t()
    dims = (ctypes.c_int64 * 3)(*shape)
    check(lib.qgmm_blockwise_scales_view(lookup(BLOCK_SHAPES, "block", block),
                                         lookup(BLOCKWISE_LAYOUTS, "layout", layout), len(shape),
                                         dims, None, 0, ctypes.byref(view), ctypes.byref(nbytes)))
    return tuple(view.shape[:view.rank]), tuple(view.strides[:view.rank]), nbytes.value


def quantize_fp8_blockwise(x, block="1x128", *, layout="row_major", fp8_dtype="f8e4m3fn", q=None,
                           scales=None, ctx=None):
    """FP8 blockwise quantize (qgmm_quantize_fp8_blockwise): 1x128 or 128x128 blocks,
    reciprocal f32 scales in `layout` ("row_major", "torchao", "deepgemm"); returns (q, scales)."""
    with Call(ctx, x) as c:
        tx = c.tensor("x", x)
        p = _lib.Fp8BlockwiseParams(lookup(BLOCK_SHAPES, "block", block))
        if q is None:
            q = c.empty(tuple(x.shape), _fp8(fp8_dtype))
        if scales is None:
            if len(x.shape) in (2, 3) and x.shape[-1] % 128 == 0 and x.shape[-1] > 0:
                shape, strides, nbytes = blockwise_scales_layout(tuple(x.shape), block, layout)
                scales = c.empty_strided(shape, strides, nbytes, "f32")
            else:  # the C call names what is wrong with x
                scales = c.empty((1, 1), "f32")
        c.run(lib.qgmm_quantize_fp8_blockwise, ctypes.byref(p), ctypes.byref(tx),
              ctypes.byref(c.tensor("q", q)), ctypes.byref(c.tensor("scales", scales)))
    return q, scales


def dequantize(q, scales, kind, offs=None, *, reduce_dim=1, power_of_2=False,
               scale_kind="reciprocal", block_dim=-1, mode="rceil", scale_layout="plain",
               block="1x128", out_dtype="f32", out=None, ctx=None):
    """The inverse of a quantize (qgmm_dequantize). kind: "fp8_rowwise", "mxfp8" or
    "fp8_blockwise", with the parameters that quantize was given. Returns out."""
    f = _lib.QuantFormat()
    f.kind = lookup(QUANT_KINDS, "kind", kind)
    f.rowwise = _rowwise_params(reduce_dim, power_of_2, scale_kind)
    r = len(q.shape)
    f.mx = _lib.Mxfp8Params(block_dim + r if block_dim < 0 else block_dim,
                            lookup(MX_MODES, "mode", mode),
                            lookup(SCALE_LAYOUTS, "scale_layout", scale_layout))
    f.blockwise = _lib.Fp8BlockwiseParams(lookup(BLOCK_SHAPES, "block", block))
    with Call(ctx, q) as c:
        tq, ts, to = c.tensor("q", q), c.tensor("scales", scales), c.tensor("offs", offs)
        if out is None:
            out = c.empty(tuple(q.shape), out_dtype)
        c.run(lib.qgmm_dequantize, ctypes.byref(f), ctypes.byref(tq), ctypes.byref(ts), _ref(to),
              ctypes.byref(c.tensor("out", out)))
    return out


# ------------------------------------------------------------------ scale layouts
def blocked_scales_bytes(rows, cols):
    return lib.qgmm_blocked_scales_bytes(rows, cols)


def blocked_m_groups_bytes(rows, cols, groups):
    return lib.qgmm_blocked_m_groups_bytes(rows, cols, groups)


def blocked_k_groups_bytes(rows, cols, groups):
    return lib.qgmm_blocked_k_groups_bytes(rows, cols, groups)


def _blocked_bytes(variant, shape, groups):
    r, cdim = (shape[-2], shape[-1]) if len(shape) >= 2 else (0, 0)
    if variant == "2d":
        return blocked_scales_bytes(r, cdim)
    if variant == "3d":
        return (shape[0] if len(shape) == 3 else 1) * blocked_scales_bytes(r, cdim)
    if variant == "m_groups":
        return blocked_m_groups_bytes(r, cdim, groups or 0)
    return blocked_k_groups_bytes(r, cdim, groups or 0)


def scales_to_blocked(scales, variant="2d", offs=None, *, out=None, group_starts=None, ctx=None):
    """E8M0/u8 scales to the blocked (swizzled) layout (qgmm_scales_to_blocked). variant:
    "2d", "3d", "m_groups", "k_groups" (the last two take offs). Returns the blocked bytes,
    rank 1, dtype of `scales`. group_starts: an int32 (G) array to receive the groups'
    start rows/columns (grouped variants)."""
    v = lookup(BLOCKED_VARIANTS, "variant", variant)
    with Call(ctx, scales) as c:
        ti, to = c.tensor("in", scales), c.tensor("offs", offs)
        if out is None:
            out = c.empty((_blocked_bytes(variant, tuple(scales.shape), _groups(offs)),),
                          dtype_of(scales))
        c.run(lib.qgmm_scales_to_blocked, v, ctypes.byref(ti), _ref(to),
              ctypes.byref(c.tensor("out", out)), _ref(c.tensor("group_starts", group_starts)))
    return out


def scales_from_blocked(blocked, shape, variant="2d", offs=None, *, out=None, ctx=None):
    """The inverse of scales_to_blocked: the plain scales of `shape` ((R, C) or (E, R, C))."""
    v = lookup(BLOCKED_VARIANTS, "variant", variant)
    with Call(ctx, blocked) as c:
        ti, to = c.tensor("in", blocked), c.tensor("offs", offs)
        if out is None:
            out = c.empty(tuple(shape), dtype_of(blocked))
        c.run(lib.qgmm_scales_from_blocked, v, ctypes.byref(ti), _ref(to),
              ctypes.byref(c.tensor("out", out)))
    return out


# ------------------------------------------------------------------ token groups
def padded_rows_bound(tokens, groups, alignment):
    return lib.qgmm_padded_rows_bound(tokens, groups, alignment)


def pad_token_groups(x, offs, alignment=16, *, out=None, ctx=None):
    """Pads every token group to a multiple of `alignment` rows (qgmm_pad_token_groups):
    returns (out, padded_start, padded_offs); out has padded_rows_bound(T, G, alignment) rows."""
    with Call(ctx, x) as c:
        tx, to = c.tensor("x", x), c.tensor("offs", offs)
        g = offs.shape[0]
        if out is None:
            out = c.empty((padded_rows_bound(x.shape[0], g, alignment),) + tuple(x.shape[1:]),
                          dtype_of(x))
        start, poffs = c.empty((g,), "i32"), c.empty((g,), "i32")
        c.run(lib.qgmm_pad_token_groups, alignment, ctypes.byref(tx), _ref(to),
              ctypes.byref(c.tensor("out", out)), ctypes.byref(c.tensor("padded_start", start)),
              ctypes.byref(c.tensor("padded_offs", poffs)))
    return out, start, poffs


def unpad_token_groups(x_padded, offs, tokens, alignment=16, *, out=None, ctx=None):
    """The inverse gather of pad_token_groups: (tokens, D) rows."""
    with Call(ctx, x_padded) as c:
        tx, to = c.tensor("x_padded", x_padded), c.tensor("offs", offs)
        if out is None:
            out = c.empty((tokens,) + tuple(x_padded.shape[1:]), dtype_of(x_padded))
        c.run(lib.qgmm_unpad_token_groups, alignment, ctypes.byref(tx), _ref(to),
              ctypes.byref(c.tensor("out", out)))
    return out


def group_row_ids(offs, rows, padded_offs=None, *, out=None, ctx=None):
    """Per-row expert ids (DeepGEMM's grouped_layout) of `rows` rows (qgmm_group_row_ids)."""
    with Call(ctx, offs) as c:
        to, tp = c.tensor("offs", offs), c.tensor("padded_offs", padded_offs)
        if out is None:
            out = c.empty((rows,), "i32")
        c.run(lib.qgmm_group_row_ids, _ref(to), _ref(tp), ctypes.byref(c.tensor("row_ids", out)))
    return out


# ------------------------------------------------------------------ GEMMs
def grouped_gemm(a, b, offs, *, kind="m_grouped", recipe="bf16", a_scales=None, b_scales=None,
                 out_dtype="bf16", out=None, ctx=None):
    """The grouped GEMM (qgmm_grouped_gemm). m_grouped: a (M, K), b (E, N, K), out (M, N)
    = a_g . b_g^T per group (rows past offs[-1] untouched); k_grouped: a (M, N), b (M, K),
    out (G, N, K) = a_g^T . b_g. Scales per recipe as in api/qgmm.h (dequant multipliers)."""
    k = lookup(GEMM_KINDS, "kind", kind)
    p = _lib.GroupedGemmParams(k, lookup(RECIPES, "recipe", recipe))
    with Call(ctx, a) as c:
        ta, tb, to = c.tensor("a", a), c.tensor("b", b), c.tensor("offs", offs)
        tsa, tsb = c.tensor("a_scales", a_scales), c.tensor("b_scales", b_scales)
        if out is None:
            if kind == "m_grouped":
                shape = (a.shape[0], b.shape[1] if len(b.shape) == 3 else 0)
            else:
                shape = (offs.shape[0], a.shape[1], b.shape[1])
            out = c.empty(shape, out_dtype)
        c.run(lib.qgmm_grouped_gemm, ctypes.byref(p), ctypes.byref(ta), ctypes.byref(tb), _ref(tsa),
              _ref(tsb), _ref(to), ctypes.byref(c.tensor("out", out)))
    return out


def _moe_params(recipe, fp8_dtype, mx_mode):
    return _lib.MoeParams(lookup(RECIPES, "recipe", recipe), lookup(DTYPES, "fp8_dtype", fp8_dtype),
                          lookup(MX_MODES, "mx_mode", mx_mode))


def moe_workspace_bytes(recipe, M, N, K, E, *, fp8_dtype="f8e4m3fn", mx_mode="rceil"):
    p = _moe_params(recipe, fp8_dtype, mx_mode)
    return lib.qgmm_moe_workspace_bytes(ctypes.byref(p), M, N, K, E)


def _workspace(c, p, M, N, K, E, workspace):
    need = lib.qgmm_moe_workspace_bytes(ctypes.byref(p), M, N, K, E)
    if need == 0:
        return None
    if workspace is None:
        workspace = c.empty((need,), "u8")
    c.keep.append(workspace)  # alive until the call returns (the op is enqueued by then)
    return c.tensor("workspace", workspace).buffer


def moe_experts_forward(x, w, offs, *, recipe="bf16", fp8_dtype="f8e4m3fn", mx_mode="rceil",
                        out_dtype="bf16", y=None, workspace=None, ctx=None):
    """A routed expert layer's forward in one recipe (qgmm_moe_experts_forward):
    y (M, N) = x_g . w_g^T; x bf16 (M, K), w bf16 (E, N, K). The workspace (a u8 array
    of moe_workspace_bytes) is allocated per call unless given."""
    p = _moe_params(recipe, fp8_dtype, mx_mode)
    with Call(ctx, x) as c:
        tx, tw, to = c.tensor("x", x), c.tensor("w", w), c.tensor("offs", offs)
        if y is None:
            y = c.empty((x.shape[0], w.shape[1] if len(w.shape) == 3 else 0), out_dtype)
        ty = c.tensor("y", y)
        M, K = (tuple(x.shape) + (0, 0))[:2]
        E, N = (tuple(w.shape) + (0, 0))[:2]
        ws = _workspace(c, p, M, N, K, E, workspace)
        c.run(lib.qgmm_moe_experts_forward, ctypes.byref(p), ctypes.byref(tx), ctypes.byref(tw),
              _ref(to), ctypes.byref(ty), ws)
    return y


def moe_experts_backward(x, w, dy, offs, *, recipe="bf16", fp8_dtype="f8e4m3fn", mx_mode="rceil",
                         out_dtype="bf16", dx=None, dw=None, workspace=None, ctx=None):
    """The layer's backward (qgmm_moe_experts_backward): returns (dx (M, K), dw (E, N, K))."""
    p = _moe_params(recipe, fp8_dtype, mx_mode)
    with Call(ctx, x) as c:
        tx, tw, tdy, to = c.tensor("x", x), c.tensor("w", w), c.tensor("dy", dy), c.tensor("offs", offs)
        if dx is None:
            dx = c.empty(tuple(x.shape), out_dtype)
        if dw is None:
            dw = c.empty(tuple(w.shape), out_dtype)
        tdx, tdw = c.tensor("dx", dx), c.tensor("dw", dw)
        M, K = (tuple(x.shape) + (0, 0))[:2]
        E, N = (tuple(w.shape) + (0, 0))[:2]
        ws = _workspace(c, p, M, N, K, E, workspace)
        c.run(lib.qgmm_moe_experts_backward, ctypes.byref(p), ctypes.byref(tx), ctypes.byref(tw),
              ctypes.byref(tdy), _ref(to), ctypes.byref(tdx), ctypes.byref(tdw), ws)
    return dx, dw
