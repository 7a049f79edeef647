"""libqgmm.so through ctypes: finding the library, the C structs mirrored field by field,
and every function of api/qgmm.h declared with its argument and result types.

The library is looked for, in order: the file named by QGMM_LIBRARY; libqgmm.so next to
this package (an installed wheel or a copy); the build tree's lib/ beside a source
checkout (build/lib); the loader path (LD_LIBRARY_PATH, ldconfig). The GPU backends are
plugins (libqgmm-cuda.so, ...) that libqgmm itself opens from QGMM_PLUGIN_PATH, else the
directory libqgmm.so was loaded from, else the loader path; nothing here needs to find them.
"""
import ctypes
import ctypes.util
import os

MAX_RANK = 3


class Tensor(ctypes.Structure):
    """qgmm_tensor."""
    _fields_ = [
        ("buffer", ctypes.c_void_p),
        ("offset", ctypes.c_size_t),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("strides", ctypes.c_int64 * MAX_RANK),
    ]


class BackendInfo(ctypes.Structure):
    """qgmm_backend_info."""
    _fields_ = [
        ("name", ctypes.c_char * 16),
        ("available", ctypes.c_int),
        ("device_count", ctypes.c_int),
        ("reason", ctypes.c_char * 256),
        ("library", ctypes.c_char * 256),
    ]


class Fp8RowwiseParams(ctypes.Structure):
    """qgmm_fp8_rowwise_params."""
    _fields_ = [("reduce_dim", ctypes.c_int), ("power_of_2", ctypes.c_int),
                ("scale_kind", ctypes.c_int)]


class Mxfp8Params(ctypes.Structure):
    """qgmm_mxfp8_params."""
    _fields_ = [("block_dim", ctypes.c_int), ("mode", ctypes.c_int), ("scale_layout", ctypes.c_int)]


class Fp8BlockwiseParams(ctypes.Structure):
    """qgmm_fp8_blockwise_params."""
    _fields_ = [("block", ctypes.c_int)]


class QuantFormat(ctypes.Structure):
    """qgmm_quant_format."""
    _fields_ = [("kind", ctypes.c_int), ("rowwise", Fp8RowwiseParams), ("mx", Mxfp8Params),
                ("blockwise", Fp8BlockwiseParams)]


class GroupedGemmParams(ctypes.Structure):
    """qgmm_grouped_gemm_params."""
    _fields_ = [("kind", ctypes.c_int), ("recipe", ctypes.c_int)]


class MoeParams(ctypes.Structure):
    """qgmm_moe_params."""
    _fields_ = [("recipe", ctypes.c_int), ("fp8_dtype", ctypes.c_int), ("mx_mode", ctypes.c_int)]


MOE_PROFILE_MAX_STEPS = 16


class MoeProfile(ctypes.Structure):
    """qgmm_moe_profile: the caller's events in, the steps' names out."""
    _fields_ = [("events", ctypes.c_void_p * (MOE_PROFILE_MAX_STEPS + 1)), ("steps", ctypes.c_int),
                ("phase", ctypes.c_char_p * MOE_PROFILE_MAX_STEPS),
                ("step", ctypes.c_char_p * MOE_PROFILE_MAX_STEPS)]


EP_UNIQUE_ID_BYTES = 128


class EpPlanParams(ctypes.Structure):
    """qgmm_ep_plan_params (expert_rank: a host int32 array of num_experts, or None)."""
    _fields_ = [("num_experts", ctypes.c_int64), ("top_k", ctypes.c_int), ("max_tokens", ctypes.c_int64),
                ("max_row_bytes", ctypes.c_int64), ("alignment", ctypes.c_int),
                ("max_rows_per_peer", ctypes.c_int64), ("max_recv_rows", ctypes.c_int64),
                ("expert_rank", ctypes.POINTER(ctypes.c_int32))]


# Every struct above, by its C name (the layout test compares each against the compiler).
STRUCTS = {
    "qgmm_tensor": Tensor,
    "qgmm_backend_info": BackendInfo,
    "qgmm_fp8_rowwise_params": Fp8RowwiseParams,
    "qgmm_mxfp8_params": Mxfp8Params,
    "qgmm_fp8_blockwise_params": Fp8BlockwiseParams,
    "qgmm_quant_format": QuantFormat,
    "qgmm_grouped_gemm_params": GroupedGemmParams,
    "qgmm_moe_params": MoeParams,
    "qgmm_moe_profile": MoeProfile,
    "qgmm_ep_plan_params": EpPlanParams,
}

_P = ctypes.c_void_p
_I = ctypes.c_int
_SZ = ctypes.c_size_t
_I64 = ctypes.c_int64
_TP = ctypes.POINTER(Tensor)
_STR = ctypes.c_char_p

# name: (restype, argtypes). Statuses are ints; handles are void pointers.
SIGNATURES = {
    "qgmm_version": (_STR, []),
    "qgmm_status_string": (_STR, [_I]),
    "qgmm_dtype_size": (_SZ, [_I]),
    "qgmm_dtype_name": (_STR, [_I]),
    "qgmm_dtype_is_fp8": (_I, [_I]),
    "qgmm_backend_count": (_I, []),
    "qgmm_backend_get_info": (_I, [_I, ctypes.POINTER(BackendInfo)]),
    "qgmm_context_create": (_I, [_STR, _I, ctypes.POINTER(_P)]),
    "qgmm_context_create_with_stream": (_I, [_STR, _I, _P, ctypes.POINTER(_P)]),
    "qgmm_context_destroy": (None, [_P]),
    "qgmm_synchronize": (_I, [_P]),
    "qgmm_last_error": (_STR, [_P]),
    "qgmm_context_describe": (_STR, [_P]),
    "qgmm_context_backend_name": (_STR, [_P]),
    "qgmm_buffer_alloc": (_I, [_P, _SZ, ctypes.POINTER(_P)]),
    "qgmm_buffer_wrap": (_I, [_P, _P, _SZ, ctypes.POINTER(_P)]),
    "qgmm_buffer_upload": (_I, [_P, _SZ, _P, _SZ]),
    "qgmm_buffer_download": (_I, [_P, _SZ, _P, _SZ]),
    "qgmm_buffer_fill": (_I, [_P, _SZ, _SZ, ctypes.c_uint8]),
    "qgmm_buffer_copy": (_I, [_P, _SZ, _P, _SZ, _SZ]),
    "qgmm_buffer_size": (_SZ, [_P]),
    "qgmm_buffer_native": (_P, [_P]),
    "qgmm_buffer_free": (None, [_P]),
    "qgmm_event_create": (_I, [_P, ctypes.POINTER(_P)]),
    "qgmm_event_record": (_I, [_P]),
    "qgmm_event_elapsed_ms": (_I, [_P, _P, ctypes.POINTER(ctypes.c_double)]),
    "qgmm_event_destroy": (None, [_P]),
    "qgmm_tensor_make": (Tensor, [_P, _SZ, _I, _I, ctypes.POINTER(_I64)]),
    "qgmm_tensor_make_colmajor": (Tensor, [_P, _SZ, _I, _I64, _I64]),
    "qgmm_tensor_numel": (_I64, [_TP]),
    "qgmm_tensor_span_bytes": (_SZ, [_TP]),
    "qgmm_quantize_fp8_rowwise": (_I, [_P, ctypes.POINTER(Fp8RowwiseParams), _TP, _TP, _TP, _TP]),
    "qgmm_quantize_fp8_rowwise_dual": (_I, [_P, ctypes.POINTER(Fp8RowwiseParams), _TP, _TP, _TP,
                                            ctypes.POINTER(Fp8RowwiseParams), _TP, _TP, _TP, _TP]),
    "qgmm_quantize_mxfp8": (_I, [_P, ctypes.POINTER(Mxfp8Params), _TP, _TP, _TP]),
    "qgmm_quantize_mxfp8_grouped": (_I, [_P, ctypes.POINTER(Mxfp8Params), _TP, _TP, _TP, _TP]),
    "qgmm_quantize_fp8_blockwise": (_I, [_P, ctypes.POINTER(Fp8BlockwiseParams), _TP, _TP, _TP]),
    "qgmm_blockwise_scales_view": (_I, [_I, _I, _I, ctypes.POINTER(_I64), _P, _SZ, _TP,
                                        ctypes.POINTER(_SZ)]),
    "qgmm_dequantize": (_I, [_P, ctypes.POINTER(QuantFormat), _TP, _TP, _TP, _TP]),
    "qgmm_blocked_scales_bytes": (_SZ, [_I64, _I64]),
    "qgmm_blocked_m_groups_bytes": (_SZ, [_I64, _I64, _I64]),
    "qgmm_blocked_k_groups_bytes": (_SZ, [_I64, _I64, _I64]),
    "qgmm_scales_to_blocked": (_I, [_P, _I, _TP, _TP, _TP, _TP]),
    "qgmm_scales_from_blocked": (_I, [_P, _I, _TP, _TP, _TP]),
    "qgmm_padded_rows_bound": (_I64, [_I64, _I64, _I]),
    "qgmm_pad_token_groups": (_I, [_P, _I, _TP, _TP, _TP, _TP, _TP]),
    "qgmm_unpad_token_groups": (_I, [_P, _I, _TP, _TP, _TP]),
    "qgmm_group_row_ids": (_I, [_P, _TP, _TP, _TP]),
    "qgmm_grouped_gemm": (_I, [_P, ctypes.POINTER(GroupedGemmParams), _TP, _TP, _TP, _TP, _TP, _TP]),
    "qgmm_moe_workspace_bytes": (_SZ, [ctypes.POINTER(MoeParams), _I64, _I64, _I64, _I64]),
    "qgmm_moe_experts_forward": (_I, [_P, ctypes.POINTER(MoeParams), _TP, _TP, _TP, _TP, _P]),
    "qgmm_moe_experts_backward": (_I, [_P, ctypes.POINTER(MoeParams), _TP, _TP, _TP, _TP, _TP, _TP,
                                       _P]),
    "qgmm_moe_experts_forward_profiled": (_I, [_P, ctypes.POINTER(MoeParams), _TP, _TP, _TP, _TP, _P,
                                               ctypes.POINTER(MoeProfile)]),
    "qgmm_moe_experts_backward_profiled": (_I, [_P, ctypes.POINTER(MoeParams), _TP, _TP, _TP, _TP, _TP, _TP,
                                                _P, ctypes.POINTER(MoeProfile)]),
    # expert parallelism: communicators, plans and the layer are handles
    "qgmm_ep_comm_create_loopback": (_I, [_I, ctypes.POINTER(_P), ctypes.POINTER(_P)]),
    "qgmm_ep_comm_create_nccl": (_I, [_P, _P, ctypes.POINTER(_P)]),
    "qgmm_ep_nccl_unique_id": (_I, [_P, _P]),
    "qgmm_ep_comm_create_nccl_id": (_I, [_P, _P, _I, _I, ctypes.POINTER(_P)]),
    "qgmm_ep_comm_destroy": (None, [_P]),
    "qgmm_ep_comm_rank": (_I, [_P]),
    "qgmm_ep_comm_nranks": (_I, [_P]),
    "qgmm_ep_comm_context": (_P, [_P]),
    "qgmm_ep_wire_row_bytes": (_I64, [_I, _I64, _I64]),
    "qgmm_ep_plan_create": (_I, [_P, ctypes.POINTER(EpPlanParams), ctypes.POINTER(_P)]),
    "qgmm_ep_plan_destroy": (None, [_P]),
    "qgmm_ep_plan_local_experts": (_I64, [_P]),
    "qgmm_ep_plan_local_expert_id": (_I64, [_P, _I64]),
    "qgmm_ep_plan_recv_rows": (_I64, [_P]),
    "qgmm_ep_route": (_I, [_P, _TP]),
    "qgmm_ep_received_rows": (_I, [_P, ctypes.POINTER(_I64)]),
    "qgmm_ep_dispatch": (_I, [_P, _TP, _TP, _TP, _TP, _TP, _TP]),
    "qgmm_ep_combine": (_I, [_P, _TP, _TP, _TP]),
    "qgmm_ep_moe_create": (_I, [_P, ctypes.POINTER(MoeParams), _I64, _I64, _I, ctypes.POINTER(_P)]),
    "qgmm_ep_moe_destroy": (None, [_P]),
    "qgmm_ep_moe_forward": (_I, [_P, _TP, _TP, _TP, _TP, _TP]),
    "qgmm_ep_moe_backward": (_I, [_P, _TP, _TP, _TP, _TP, _TP]),
}


def _candidates():
    env = os.environ.get("QGMM_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, "libqgmm.so"),
             os.path.join(os.path.dirname(os.path.dirname(here)), "build", "lib", "libqgmm.so")]
    found.append(ctypes.util.find_library("qgmm") or "libqgmm.so")
    return found


def _load():
    errors = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            errors.append(f"{path}: no such file")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
            continue
        missing = [name for name in SIGNATURES if not hasattr(lib, name)]
        if missing:
            errors.append(f"{path}: lacks {', '.join(missing[:3])} (a libqgmm older than this package)")
            continue
        for name, (restype, argtypes) in SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        lib.qgmm_path = path
        return lib
    raise ImportError("qgmm: no usable libqgmm.so (set QGMM_LIBRARY to its path, or put it on "
                      "the loader path); tried: " + "; ".join(errors))


lib = _load()
