"""qgmm for Python: the qgmm C library (low-precision casts and grouped GEMMs for
mixture-of-experts training) through ctypes, on NumPy arrays and PyTorch tensors.

    import qgmm
    q, s = qgmm.quantize_fp8_rowwise(x)            # x: float32 NumPy array, cpu backend
    import qgmm.torch                              # PyTorch custom ops and autograd
    y = qgmm.torch.grouped_mm(x, w, offs, recipe="fp8_rowwise")
    comms = qgmm.ep.Comm.loopback(2)               # expert parallelism (qgmm.ep, docs/ep.md)

docs/python.md has the whole picture; api/qgmm.h the semantics of every op.
"""
from . import ep, errors
from ._lib import lib as _clib
from .arrays import TypedArray, context_for, typed
from .context import Backend, Buffer, Context, Event, backends
from .errors import (BackendUnavailableError, BadOffsetsError, DeviceError, InternalError,
                     InvalidArgumentError, OutOfMemoryError, QgmmError, UnsupportedError)
from .ops import (blocked_k_groups_bytes, blocked_m_groups_bytes, blocked_scales_bytes,
                  blockwise_scales_layout, dequantize, group_row_ids, grouped_gemm,
                  moe_experts_backward, moe_experts_forward, moe_workspace_bytes,
                  pad_token_groups, padded_rows_bound, quantize_fp8_blockwise,
                  quantize_fp8_rowwise, quantize_fp8_rowwise_dual, quantize_mxfp8,
                  scales_from_blocked, scales_to_blocked, unpad_token_groups)

__version__ = "0.1.0"
library_path = _clib.qgmm_path
library_version = _clib.qgmm_version().decode()


def dtype_size(name):
    """Bytes per element of a qgmm dtype name ("bf16" -> 2)."""
    from .constants import DTYPES, lookup
    return _clib.qgmm_dtype_size(lookup(DTYPES, "dtype", name))
