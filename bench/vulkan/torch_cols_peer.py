#!/usr/bin/env python3
"""torch_cols_peer.py — PyTorch peers (torch.compile) of the Vulkan casts timed by
vk_cast_bench, on the same shapes: ops 8-11 (colwise, jagged rowwise with 16 column groups,
jagged colwise with 16 row groups and column-major q, the 3D per-(e, c) cast with q
transposed per expert) and, with --rows-ops, ops 0, 1, 3, 4, 5 (rowwise, MX dim0, MX dim1,
1x128, 128x128 as (1, M, K) tiles), after PyTorch's copy_ of 1 GiB (the copy-rate yardstick,
read + write). The math is bench/cuda/torch_peer.py's (torchao is not installed on the lent
machine). Bytes counted as vk_cast_bench counts them: x read + q written + scales written. Median of --reps CUDA-event-timed calls after 5 warm-ups; x
random normal, bf16 or (--f32) f32.

usage: torch_cols_peer.py [--rows M] [--cols K] [--reps N] [--f32] [--rows-ops]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cuda"))
import torch_peer as tp  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=32768)
    ap.add_argument("--cols", type=int, default=5120)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--f32", action="store_true", help="x f32 instead of bf16")
    ap.add_argument("--rows-ops", action="store_true", help="also ops 0, 1, 3, 4, 5")
    a = ap.parse_args()
    M, K, G, E = a.rows, a.cols, 16, 16
    dev = "cuda"
    x = torch.randn(M, K, device=dev, dtype=torch.float32 if a.f32 else torch.bfloat16)
    offs_m = tp.offsets(M, G, 1, 1, dev)
    offs_k = tp.offsets(K, G, 1, 2, dev)
    mk = M * K
    xb = (4 if a.f32 else 2) * mk  # x read
    c = lambda f: torch.compile(f, dynamic=True)  # noqa: E731
    ops = []
    if a.rows_ops:
        ops += [
            ("FP8 rowwise e4m3fn, reciprocal scales", c(tp.rowwise), (x,), xb + mk + 4 * M),
            ("MXFP8 dim0 (plain scales)", c(tp.mx_dim0), (x,), xb + mk + mk / 32),
            ("MXFP8 dim1 (the transpose, then dim0)", c(tp.mx_dim1), (x,), xb + mk + mk / 32),
            ("FP8 blockwise 1x128", c(tp.blockwise_1x128), (x,), xb + mk + 4 * mk / 128),
            ("FP8 blockwise 128x128", c(tp.blockwise_128x128), (x.view(1, M, K),), xb + mk + 4 * mk / 16384),
        ]
    ops += [
        ("FP8 colwise (reduce_dim 0)", c(tp.colwise_t), (x,), xb + mk + 4 * K),
        ("FP8 jagged rowwise (16 column groups)", c(tp.jagged_rowwise), (x, offs_k), xb + mk + 4 * G * M),
        ("FP8 jagged colwise (16 row groups), column-major q", c(tp.jagged_colwise), (x, offs_m), xb + mk + 4 * G * K),
        ("FP8 3D per (e, c), q transposed per expert (E 16)", c(tp.transpose_rhs_3d), (x.view(E, M // E, K),),
         xb + mk + 4 * E * K),
    ]
    dt = "f32" if a.f32 else "bf16"
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, x {dt} ({M}, {K}), median of {a.reps}")
    print("| op (torch.compile peer) | ms | GB/s |\n|---|---|---|")
    src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    src.random_(0, 255)
    dst = torch.empty_like(src)
    us = tp.time_us(lambda: dst.copy_(src), a.reps)
    print(f"| torch copy_ 1 GiB (read + write) | {us / 1e3:.4f} | {2 * src.numel() / (us * 1e3):.0f} |", flush=True)
    del src, dst
    for name, fn, args, nbytes in ops:
        us = tp.time_us(lambda: fn(*args), a.reps)
        print(f"| {name} | {us / 1e3:.4f} | {nbytes / (us * 1e3):.0f} |", flush=True)


if __name__ == "__main__":
    main()
