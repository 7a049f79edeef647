"""The enums of api/qgmm.h, by the names the Python functions accept."""

STATUS_OK = 0

DTYPES = {"f32": 1, "bf16": 2, "f16": 3, "f8e4m3fn": 4, "f8e4m3fnuz": 5, "f8e5m2": 6,
          "e8m0": 7, "i32": 8, "u8": 9}
DTYPE_SIZES = {"f32": 4, "bf16": 2, "f16": 2, "f8e4m3fn": 1, "f8e4m3fnuz": 1, "f8e5m2": 1,
               "e8m0": 1, "i32": 4, "u8": 1}
FP8_DTYPES = ("f8e4m3fn", "f8e4m3fnuz", "f8e5m2")

SCALE_KINDS = {"multiplier": 0, "reciprocal": 1}
MX_MODES = {"floor": 0, "rceil": 1}
SCALE_LAYOUTS = {"plain": 0, "blocked": 1, "m_groups": 2, "k_groups": 3}
BLOCK_SHAPES = {"1x128": 0, "128x128": 1}
BLOCKWISE_LAYOUTS = {"row_major": 0, "torchao": 1, "deepgemm": 2}
QUANT_KINDS = {"fp8_rowwise": 0, "mxfp8": 1, "fp8_blockwise": 2}
BLOCKED_VARIANTS = {"2d": 0, "3d": 1, "m_groups": 2, "k_groups": 3}
GEMM_KINDS = {"m_grouped": 0, "k_grouped": 1}
RECIPES = {"bf16": 0, "fp8_rowwise": 1, "fp8_blockwise": 2, "mxfp8": 3}


def lookup(table, what, value):
    """table[value], or a ValueError naming the argument, its value and the choices."""
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError(f"{what} is {value!r}; one of {', '.join(map(repr, table))}") from None
