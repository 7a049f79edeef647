#!/usr/bin/env python3
"""torch_cols_peer.py — PyTorch peers (torch.compile) of the Vulkan casts timed by
vk_cast_bench's ops 8-11, on the same shapes: colwise, jagged rowwise (16 column groups),
jagged colwise (16 row groups, column-major q) and the 3D per-(e, c) cast with q transposed
per expert. The math is bench/cuda/torch_peer.py's (torchao is not installed on the lent
machine). Bytes counted as vk_cast_bench counts them: x read + q written + scales written.
Median of --reps CUDA-event-timed calls after 5 warm-ups; x bf16, random normal.

usage: torch_cols_peer.py [--rows M] [--cols K] [--reps N]
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
    a = ap.parse_args()
    M, K, G, E = a.rows, a.cols, 16, 16
    dev = "cuda"
    x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    offs_m = tp.offsets(M, G, 1, 1, dev)
    offs_k = tp.offsets(K, G, 1, 2, dev)
    mk = M * K
    ops = [
        ("FP8 colwise (reduce_dim 0)", torch.compile(tp.colwise_t, dynamic=True), (x,), 3 * mk + 4 * K),
        ("FP8 jagged rowwise (16 column groups)", torch.compile(tp.jagged_rowwise, dynamic=True), (x, offs_k),
         3 * mk + 4 * G * M),
        ("FP8 jagged colwise (16 row groups), column-major q", torch.compile(tp.jagged_colwise, dynamic=True),
         (x, offs_m), 3 * mk + 4 * G * K),
        ("FP8 3D per (e, c), q transposed per expert (E 16)", torch.compile(tp.transpose_rhs_3d, dynamic=True),
         (x.view(E, M // E, K),), 3 * mk + 4 * E * K),
    ]
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, x bf16 ({M}, {K}), median of {a.reps}")
    print("| op (torch.compile peer) | ms | GB/s |\n|---|---|---|")
    for name, fn, args, nbytes in ops:
        us = tp.time_us(lambda: fn(*args), a.reps)
        print(f"| {name} | {us / 1e3:.4f} | {nbytes / (us * 1e3):.0f} |", flush=True)


if __name__ == "__main__":
    main()
