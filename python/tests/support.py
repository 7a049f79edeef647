"""Test helpers: deterministic data, bf16 rounding, and the same op run through the C API
directly (library-owned buffers, upload, hand-built qgmm_tensor structs, download), the
path the package's in-place NumPy wrapping is compared against."""
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import qgmm  # noqa: E402
from qgmm import _lib  # noqa: E402
from qgmm.constants import DTYPE_SIZES, DTYPES  # noqa: E402

lib = _lib.lib


def rng(seed):
    return np.random.default_rng(seed)


def f32(shape, seed, scale=1.0):
    return (rng(seed).standard_normal(shape) * scale).astype(np.float32)


def bf16(a):
    """f32 -> bf16 bits (round to nearest even), tagged for qgmm."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return qgmm.typed(r, "bf16")


def bf16_to_f32(a):
    return (np.asarray(a).astype(np.uint32) << 16).view(np.float32)


def offsets(*ends):
    return np.array(ends, np.int32)


def raw_bytes(a):
    """The bytes of a's logical elements in row-major order."""
    return np.ascontiguousarray(np.asarray(a)).tobytes()


class CRef:
    """Ops through the C API on their own cpu context: inputs uploaded into qgmm-owned
    buffers, outputs allocated and poisoned; run() returns the outputs made since the
    last run(), downloaded after qgmm_synchronize."""

    def __init__(self):
        self.ctx = ctypes.c_void_p()
        assert lib.qgmm_context_create(b"cpu", 0, ctypes.byref(self.ctx)) == 0
        self.bufs = []
        self.outs = []

    def _buffer(self, nbytes):
        h = ctypes.c_void_p()
        assert lib.qgmm_buffer_alloc(self.ctx, max(nbytes, 1), ctypes.byref(h)) == 0, \
            lib.qgmm_last_error(self.ctx)
        self.bufs.append(h)
        return h

    def inp(self, array, dtype=None):
        """A contiguous input tensor holding array's bytes (dtype: the qgmm dtype name)."""
        a = np.ascontiguousarray(np.asarray(array))
        dt = dtype or getattr(array, "qgmm_dtype", None) or {
            "float32": "f32", "int32": "i32", "uint8": "u8", "float16": "f16"}[a.dtype.name]
        h = self._buffer(a.nbytes)
        raw = a.tobytes()
        assert lib.qgmm_buffer_upload(h, 0, raw, len(raw)) == 0
        dims = (ctypes.c_int64 * 3)(*a.shape)
        return lib.qgmm_tensor_make(h, 0, DTYPES[dt], a.ndim, dims)

    def out(self, shape, dtype, strides=None, nbytes=None):
        """An output tensor (contiguous, or with element strides over nbytes), poisoned."""
        isz = DTYPE_SIZES[dtype]
        if strides is None:
            nbytes = int(np.prod(shape)) * isz
        h = self._buffer(nbytes)
        assert lib.qgmm_buffer_fill(h, 0, max(nbytes, 1), 0xA5) == 0
        dims = (ctypes.c_int64 * 3)(*shape)
        t = lib.qgmm_tensor_make(h, 0, DTYPES[dtype], len(shape), dims)
        if strides is not None:
            for i, s in enumerate(strides):
                t.strides[i] = s
        self.outs.append((t, h, shape, dtype, strides, nbytes))
        return t

    def workspace(self, nbytes):
        return self._buffer(nbytes) if nbytes else None

    def run(self, fn, *args):
        st = fn(self.ctx, *[ctypes.byref(a) if isinstance(a, ctypes.Structure) else a for a in args])
        assert st == 0, lib.qgmm_last_error(self.ctx)
        assert lib.qgmm_synchronize(self.ctx) == 0
        results = []
        for t, h, shape, dtype, strides, nbytes in self.outs:
            raw = ctypes.create_string_buffer(max(nbytes, 1))
            assert lib.qgmm_buffer_download(h, 0, raw, max(nbytes, 1)) == 0
            store = {1: np.uint8, 2: np.uint16, 4: np.uint32}[DTYPE_SIZES[dtype]]
            flat = np.frombuffer(raw.raw[:nbytes], store)
            if strides is None:
                results.append(flat.reshape(shape))
            else:
                isz = DTYPE_SIZES[dtype]
                results.append(np.lib.stride_tricks.as_strided(
                    flat, shape, tuple(s * isz for s in strides)).copy())
        self.outs.clear()
        return results

    def close(self):
        for h in self.bufs:
            lib.qgmm_buffer_free(h)
        lib.qgmm_context_destroy(self.ctx)


def ptr(t):
    return ctypes.byref(t) if t is not None else None
