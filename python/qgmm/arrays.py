"""Arrays in, qgmm tensors out: NumPy arrays and PyTorch tensors are used in place.

Every array argument is wrapped with qgmm_buffer_wrap over its own memory for the length
of one call (the cpu backend wraps host pointers, so NumPy arrays are neither uploaded
nor downloaded; CUDA/HIP tensors are wrapped at their device pointer). Outputs are
allocated like the first array argument: np.empty, or torch.empty on its device.

NumPy has no bf16 or fp8 dtypes: such arrays are stored as uint16 / uint8 and tagged with
`typed(array, "bf16")`; outputs of those dtypes come back tagged (a TypedArray, an ndarray
subclass) and can be passed on as they are. PyTorch's own dtypes map directly.
"""
import ctypes
import threading

import numpy as np

from . import errors
from ._lib import Tensor, lib
from .constants import DTYPE_SIZES, DTYPES
from .context import Context, check

_NUMPY_NATURAL = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
                  np.dtype(np.int32): "i32", np.dtype(np.uint8): "u8"}
_NUMPY_STORAGE = {1: np.uint8, 2: np.uint16}  # the bits of bf16 / fp8 / e8m0
_NUMPY_OF = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "u8": np.uint8}


class TypedArray(np.ndarray):
    """An ndarray whose bytes hold a qgmm dtype NumPy lacks (bf16, fp8, e8m0)."""

    def __array_finalize__(self, obj):
        self.qgmm_dtype = getattr(obj, "qgmm_dtype", None)


def typed(array, dtype):
    """Tags `array` (whose items have the size of `dtype`) as holding qgmm dtype `dtype`."""
    a = np.asarray(array)
    if dtype not in DTYPES:
        raise ValueError(f"dtype is {dtype!r}; one of {', '.join(DTYPES)}")
    if a.dtype.itemsize != DTYPE_SIZES[dtype]:
        raise ValueError(f"array items are {a.dtype.itemsize} bytes; {dtype} needs {DTYPE_SIZES[dtype]}")
    t = a.view(TypedArray)
    t.qgmm_dtype = dtype
    return t


def _invalid(message):
    return errors.InvalidArgumentError(1, "QGMM_ERR_INVALID_ARGUMENT", message)


def _is_torch(x):
    mod = type(x).__module__
    return mod.startswith("torch") and hasattr(x, "data_ptr")


_torch_dtypes = None


def torch_dtype_map():
    """{torch dtype: qgmm dtype name}, built on first use (torch is optional)."""
    global _torch_dtypes
    if _torch_dtypes is None:
        import torch
        names = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float8_e4m3fn": "f8e4m3fn",
                 "float8_e4m3fnuz": "f8e4m3fnuz", "float8_e5m2": "f8e5m2", "float8_e8m0fnu": "e8m0",
                 "int32": "i32", "uint8": "u8"}
        _torch_dtypes = {getattr(torch, k): v for k, v in names.items() if hasattr(torch, k)}
    return _torch_dtypes


def torch_dtype_of(name):
    import torch
    for td, n in torch_dtype_map().items():
        if n == name:
            return td
    if name == "e8m0":
        return torch.uint8  # PyTorch before float8_e8m0fnu: the bytes as uint8
    raise ValueError(f"PyTorch has no dtype for {name}")


def describe(what, x):
    """(pointer, qgmm dtype name, shape, element strides, itemsize, device) of one array."""
    if _is_torch(x):
        dt = torch_dtype_map().get(x.dtype)
        if dt is None:
            raise _invalid(f"{what} has dtype {x.dtype}; qgmm takes "
                           + ", ".join(str(k) for k in torch_dtype_map()))
        dev = x.device
        device = ("cpu", 0) if dev.type == "cpu" else (dev.type, dev.index or 0)
        return x.data_ptr(), dt, tuple(x.shape), tuple(x.stride()), x.element_size(), device
    a = x if isinstance(x, np.ndarray) else np.asarray(x)
    tag = getattr(a, "qgmm_dtype", None)
    dt = tag if tag and DTYPE_SIZES[tag] == a.dtype.itemsize else _NUMPY_NATURAL.get(a.dtype)
    if dt is None:
        raise _invalid(f"{what} has NumPy dtype {a.dtype}; qgmm takes float32, float16, int32, "
                       "uint8, or uint16/uint8 arrays tagged with qgmm.typed(a, 'bf16' / 'f8e4m3fn' / ...)")
    isz = a.dtype.itemsize
    if any(s % isz for s in a.strides):
        raise _invalid(f"{what} has byte strides {a.strides}; not multiples of its {isz}-byte items")
    return (a.__array_interface__["data"][0], dt, a.shape, tuple(s // isz for s in a.strides), isz,
            ("cpu", 0))


def _span_bytes(shape, strides, itemsize):
    if 0 in shape:
        return 0
    return (sum((n - 1) * s for n, s in zip(shape, strides)) + 1) * itemsize


_PAD = {1: (0, 0), 2: (0,), 3: ()}


# ------------------------------------------------------------------ contexts
_lock = threading.Lock()
_contexts = {}


def _gpu_backend():
    import torch
    return "hip" if getattr(torch.version, "hip", None) else "cuda"


def context_for(x):
    """The context an op on array `x` runs on: the process's cpu context for host arrays;
    for a GPU tensor, the context on its device that enqueues on PyTorch's current stream
    of that device (created on first use and kept: one per (device, stream))."""
    if not _is_torch(x) or x.device.type == "cpu":
        key = ("cpu", 0, None)
    else:
        import torch
        dev = x.device.index if x.device.index is not None else torch.cuda.current_device()
        key = (_gpu_backend(), dev, torch.cuda.current_stream(dev).cuda_stream)
    ctx = _contexts.get(key)
    if ctx is not None:
        return ctx
    if key[2] is not None:
        import torch
        if torch.cuda.is_current_stream_capturing():
            raise _invalid(f"qgmm: the first op on {key[0]} device {key[1]} stream {key[2]:#x} runs "
                           "during CUDA graph capture; creating its context is not capturable: "
                           "run the captured code once on the capture stream first (warm-up)")
    with _lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = Context(key[0], key[1], key[2])
            _contexts[key] = ctx
    return ctx


class Call:
    """The wrapped buffers of one op call, freed when the call returns (no wait: wrapped
    memory is the caller's)."""

    def __init__(self, ctx, first):
        self.ctx = ctx if ctx is not None else context_for(first)
        self.first = first
        self.bufs = []
        self.keep = []
        on_host = self.ctx.backend not in ("cuda", "hip")
        self.device = ("cpu", 0) if on_host else ("cuda", self.ctx.device)
        self.torch = _is_torch(first)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for b in self.bufs:
            lib.qgmm_buffer_free(b)
        self.bufs.clear()
        self.keep.clear()

    def tensor(self, what, x):
        """A qgmm_tensor over x's memory (x must live where the context runs); None -> None."""
        if x is None:
            return None
        ptr, dt, shape, strides, isz, device = describe(what, x)
        if device != self.device:
            where = "host memory" if self.device[0] == "cpu" else f"cuda device {self.device[1]}"
            raise _invalid(f"{what} lives on {device[0]}:{device[1]}; this {self.ctx.backend} "
                           f"context needs {where}")
        rank = len(shape)
        if not 1 <= rank <= 3:
            raise _invalid(f"{what} has rank {rank}; qgmm tensors have rank 1 to 3")
        if min(strides) < 0:
            raise _invalid(f"{what} has strides {strides}; negative strides are not accepted")
        if 0 in shape:  # NumPy gives empty arrays zero strides; no element is addressed
            strides = tuple(int(np.prod(shape[i + 1:])) for i in range(rank))
        h = ctypes.c_void_p()
        check(lib.qgmm_buffer_wrap(self.ctx.handle, ptr or None, _span_bytes(shape, strides, isz),
                                   ctypes.byref(h)), self.ctx.handle)
        self.bufs.append(h.value)
        pad = _PAD[rank]
        return Tensor(h.value, 0, DTYPES[dt], rank, tuple(shape) + pad, tuple(strides) + pad)

    def empty(self, shape, dtype):
        """A new contiguous array of qgmm dtype `dtype`, of the kind and device of the
        call's first array."""
        if self.torch:
            import torch
            return torch.empty(shape, dtype=torch_dtype_of(dtype), device=self.first.device)
        np_dt = _NUMPY_OF.get(dtype)
        if np_dt is not None:
            return np.empty(shape, np_dt)
        return typed(np.empty(shape, _NUMPY_STORAGE[DTYPE_SIZES[dtype]]), dtype)

    def empty_strided(self, shape, strides, nbytes, dtype):
        """An array of `shape` with element `strides` over a new allocation of nbytes."""
        isz = DTYPE_SIZES[dtype]
        n = max(1, (nbytes + isz - 1) // isz)
        if self.torch:
            return self.empty((n,), dtype).as_strided(shape, strides)
        flat = self.empty((n,), dtype)
        view = np.lib.stride_tricks.as_strided(flat, shape, tuple(s * isz for s in strides))
        return typed(view, dtype) if dtype not in _NUMPY_OF else view

    def run(self, fn, *args):
        check(fn(self.ctx.handle, *args), self.ctx.handle)


def dtype_of(x):
    """The qgmm dtype name of an array (as the ops see it)."""
    return describe("x", x)[1]

