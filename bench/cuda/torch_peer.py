#!/usr/bin/env python3
"""torch_peer.py — the PyTorch peers of qgmm's CUDA casts, timed in the same run.

Each op of bench/cuda/cuda_casts_bench.c written in plain PyTorch and compiled with
torch.compile (dynamic=True: one compile per op, reused for every shape, so the peer
costs seconds of device time, not minutes). torchao is not installed on the lent
machine (and could not be fetched), so these are our own torch.compile versions of the
same math, not torchao's Triton kernels; they are the "torch.compile peer" of the issue.

Timing: CUDA events around each call, median of --reps runs after 5 warm-ups; the
device-to-device copy bandwidth is measured in the same process. With --qgmm-csv the
table joins qgmm's numbers (CSV from qgmm-cuda-casts-bench): op, shape, qgmm us,
peer us, speedup, qgmm GB/s, % of copy.

  --wait-file F  compile first, then wait until F exists before timing (lets the caller
                 run other GPU work while Inductor compiles, without disturbing timings)
"""
import argparse
import csv
import os
import sys
import time

import torch

F8 = torch.float8_e4m3fn
FMAX = 448.0


def mx_dim0(x):
    m, k = x.shape
    xb = x.float().reshape(m, k // 32, 32)
    amax = xb.abs().amax(-1)
    e = ((amax.view(torch.int32) >> 23) & 0xFF) - 127 - 8
    e = e.clamp(-127, 128)
    code = (e + 127).to(torch.uint8)
    q = (xb * torch.exp2(-e.float()).unsqueeze(-1)).clamp(-FMAX, FMAX).to(F8).reshape(m, k)
    return q, code


def mx_dim1(x):
    # torchao's reference: the transpose, then the dim0 cast (output (K, M) row-major)
    return mx_dim0(x.t().contiguous())


def rowwise(x):
    amax = x.float().abs().amax(1, keepdim=True)
    scale = FMAX / amax.clamp(min=1e-12)
    q = (x.float() * scale).clamp(-FMAX, FMAX).to(F8)
    return q, (1.0 / scale).squeeze(1)


def colwise_t(x):
    amax = x.float().abs().amax(0, keepdim=True)
    scale = FMAX / amax.clamp(min=1e-12)
    q = (x.float() * scale).clamp(-FMAX, FMAX).to(F8)
    return q.t().contiguous().t(), (1.0 / scale).squeeze(0)


def jagged_colwise(x, offs):
    # per-group column amax with scatter_reduce (device-side group ids, no host sync)
    t, k = x.shape
    g = torch.searchsorted(offs, torch.arange(t, device=x.device, dtype=offs.dtype), right=True)
    amax = torch.zeros(offs.numel(), k, device=x.device, dtype=torch.float32)
    amax = amax.scatter_reduce(0, g.unsqueeze(1).expand(t, k), x.float().abs(), "amax")
    scale = FMAX / amax.clamp(min=1e-12)
    q = (x.float() * scale[g]).clamp(-FMAX, FMAX).to(F8)
    return q.t().contiguous().t(), 1.0 / scale


def jagged_rowwise(x, offs):
    # x (dim, tokens), groups over the columns
    return [t.t() for t in jagged_colwise(x.t(), offs)]


def blockwise_1x128(x):
    m, k = x.shape
    xb = x.float().reshape(m, k // 128, 128)
    amax = xb.abs().amax(-1, keepdim=True)
    scale = FMAX / amax.clamp(min=1e-12)
    q = (xb * scale).clamp(-FMAX, FMAX).to(F8).reshape(m, k)
    return q, (1.0 / scale).squeeze(-1)


def dequant_mx_dim0(q, code):
    m, k = q.shape
    return (q.float().reshape(m, k // 32, 32) * torch.exp2(code.float() - 127).unsqueeze(-1)).reshape(m, k).to(torch.bfloat16)


def transpose_rhs_3d(w):
    amax = w.float().abs().amax(1, keepdim=True)
    scale = FMAX / amax.clamp(min=1e-12)
    q = (w.float() * scale).clamp(-FMAX, FMAX).to(F8)
    return q.transpose(1, 2).contiguous(), (1.0 / scale).squeeze(1)


def mx_3d(w):
    e, n, k = w.shape
    q, s = mx_dim0(w.reshape(e * n, k))
    return q.reshape(e, n, k), s


def blockwise_128x128(w):
    e, n, k = w.shape
    wb = w.float().reshape(e, n // 128, 128, k // 128, 128)
    amax = wb.abs().amax(dim=(2, 4), keepdim=True)
    scale = FMAX / amax.clamp(min=1e-12)
    q = (wb * scale).clamp(-FMAX, FMAX).to(F8).reshape(e, n, k)
    return q, (1.0 / scale).reshape(e, n // 128, k // 128)


def to_blocked_3d(s):
    # torchao mx_formats/utils.py:to_blocked per expert (shapes here need no padding)
    e, r, c = s.shape
    b = s.reshape(e, r // 128, 128, c // 4, 4).permute(0, 1, 3, 2, 4)
    b = b.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1, 32, 16)
    return b.flatten()


def pad_groups(x, offs, bound):
    t, d = x.shape
    starts = torch.cat([offs.new_zeros(1), offs[:-1]])
    sizes = offs - starts
    padded = (sizes + 31) // 32 * 32
    pstart = torch.cumsum(padded, 0) - padded
    g = torch.searchsorted(offs, torch.arange(t, device=x.device, dtype=offs.dtype), right=True)
    dest = pstart[g] + torch.arange(t, device=x.device) - starts[g]
    out = x.new_zeros(bound, d)
    out[dest] = x
    return out, pstart, pstart + padded


OPS = {
    "mxfp8_dim0_floor": mx_dim0,
    "mxfp8_dim1_floor": mx_dim1,
    "fp8_rowwise": rowwise,
    "fp8_colwise_t": colwise_t,
    "fp8_jagged_colwise_g16": jagged_colwise,
    "fp8_jagged_colwise_g64": jagged_colwise,
    "fp8_jagged_rowwise_g16": jagged_rowwise,
    "fp8_blockwise_1x128": blockwise_1x128,
    "dequant_mxfp8_dim0": dequant_mx_dim0,
    "fp8_3d_transpose_rhs": transpose_rhs_3d,
    "mxfp8_3d_dim0_blocked": mx_3d,
    "fp8_blockwise_128x128": blockwise_128x128,
    "swizzle_3d": to_blocked_3d,
    "pad_a32": pad_groups,
}


def offsets(extent, g, multiple, seed, dev):
    gen = torch.Generator().manual_seed(seed)
    cuts = torch.randint(0, extent // multiple + 1, (g - 1,), generator=gen).sort().values * multiple
    return torch.cat([cuts, torch.tensor([extent])]).to(torch.int32).to(dev)


def time_us(fn, reps):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    e0 = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    e1 = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        e0[i].record()
        fn()
        e1[i].record()
    torch.cuda.synchronize()
    ms = sorted(a.elapsed_time(b) for a, b in zip(e0, e1))
    return ms[reps // 2] * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qgmm-csv", help="CSV written by qgmm-cuda-casts-bench")
    ap.add_argument("--base-csv", help="the same bench on an earlier build: adds its us and GB/s columns")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--wait-file")
    ap.add_argument("--out", help="write the joined table (markdown) here too")
    ap.add_argument("--quick", action="store_true", help="one shape per family")
    ap.add_argument("--focus", action="store_true",
                    help="the shapes of qgmm-cuda-casts-bench --focus (casts only, no jagged rowwise)")
    args = ap.parse_args()

    dev = "cuda"
    torch._dynamo.config.cache_size_limit = 64
    comp = {k: torch.compile(v, dynamic=True) for k, v in OPS.items()}
    # compile on small shapes (dynamic, so the big shapes reuse the kernels)
    t0 = time.time()
    xs = torch.randn(512, 1024, device=dev, dtype=torch.bfloat16)
    o16 = offsets(512, 16, 16, 1, dev)
    w = torch.randn(2, 256, 512, device=dev, dtype=torch.bfloat16)
    for name, f in comp.items():
        try:
            if name.startswith("fp8_jagged_colwise"):
                f(xs, o16)
            elif name.startswith("fp8_jagged_rowwise"):
                f(xs.t().contiguous(), o16)
            elif name == "dequant_mxfp8_dim0":
                f(*mx_dim0(xs))
            elif name in ("fp8_3d_transpose_rhs", "mxfp8_3d_dim0_blocked", "fp8_blockwise_128x128"):
                f(w)
            elif name == "swizzle_3d":
                f(torch.randint(0, 255, (2, 256, 16), device=dev, dtype=torch.uint8))
            elif name == "pad_a32":
                f(xs, o16, 512 + 16 * 32)
            else:
                f(xs)
        except Exception as ex:  # a peer that does not compile is reported, not hidden
            print(f"# peer {name}: compile failed: {type(ex).__name__}: {ex}".splitlines()[0], flush=True)
            comp[name] = None
    torch.cuda.synchronize()
    print(f"# compiled {sum(v is not None for v in comp.values())} peers in {time.time() - t0:.0f} s", flush=True)
    if args.wait_file:
        while not os.path.exists(args.wait_file):
            time.sleep(0.2)

    # copy bandwidth, same process
    a = torch.empty(1 << 30, device=dev, dtype=torch.uint8).random_()
    b = torch.empty_like(a)
    copy_us = time_us(lambda: b.copy_(a), 21)
    torch_copy = 2 * a.numel() / (copy_us * 1e-6) / 1e9
    del a, b

    def read_csv(path):
        rows, copy_gbps = {}, None
        if path and os.path.exists(path):
            for row in csv.reader(open(path)):
                if len(row) == 2 and row[0] == "copy_gbps":
                    copy_gbps = float(row[1])
                elif len(row) >= 6 and row[0] not in ("op",) and row[2] not in ("NA", "us"):
                    rows[(row[0], row[1])] = (float(row[2]), float(row[3]), float(row[4]))
        return rows, copy_gbps

    qg, qgmm_copy = read_csv(args.qgmm_csv)
    base, base_copy = read_csv(args.base_csv)

    peer = {}
    toks = [16384, 65536, 131072] if not args.quick else [16384]
    dims = [2048, 5120, 7168] if not args.quick else [7168]
    shapes2d = [(m, k) for m in toks for k in dims]
    shapes3d = [(e, n, k) for e in ([1, 16, 128] if not args.quick else [16]) for n, k in ((8192, 5120), (5120, 8192))]
    if args.focus:
        shapes2d = [(65536, 5120), (16384, 7168)]
        shapes3d = [(16, 8192, 5120), (16, 5120, 8192)]
    for m, k in shapes2d:
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        shape = f"{m}x{k}"
        o = offsets(m, 16, 16, 11, dev)
        o64 = offsets(m, 64, 16, 11, dev)
        for name in ("mxfp8_dim0_floor", "mxfp8_dim1_floor", "fp8_rowwise", "fp8_colwise_t",
                     "fp8_blockwise_1x128", "fp8_jagged_colwise_g16", "fp8_jagged_colwise_g64"):
            f = comp[name]
            if f is None:
                continue
            oo = o64 if name.endswith("g64") else o
            peer[(name, shape)] = time_us((lambda f=f, oo=oo: f(x, oo)) if "jagged" in name else (lambda f=f: f(x)),
                                          args.reps)
        if comp["dequant_mxfp8_dim0"] is not None:
            q, c = mx_dim0(x)
            peer[("dequant_mxfp8_dim0", shape)] = time_us(lambda: comp["dequant_mxfp8_dim0"](q, c), args.reps)
            del q, c
        if comp["fp8_jagged_rowwise_g16"] is not None and not args.focus:
            xt = x.view(k, m)
            peer[("fp8_jagged_rowwise_g16", f"{k}x{m}")] = time_us(lambda: comp["fp8_jagged_rowwise_g16"](xt, o), args.reps)
        del x
        torch.cuda.empty_cache()
    for e, n, k in shapes3d:
        w = torch.randn(e, n, k, device=dev, dtype=torch.bfloat16)
        shape = f"{e}x{n}x{k}"
        for name in ("fp8_3d_transpose_rhs", "mxfp8_3d_dim0_blocked", "fp8_blockwise_128x128"):
            if comp[name] is not None:
                peer[(name, shape)] = time_us(lambda f=comp[name]: f(w), args.reps)
        del w
        torch.cuda.empty_cache()
    if args.focus:
        shapes_sw, pads = [], []
    else:
        shapes_sw = [(e, r, c) for e in ([1, 2, 4, 8, 16] if not args.quick else [16]) for r, c in ((8192, 160), (5120, 256))]
        pads = [(d, g) for d in ([1536, 2048, 5120, 7168] if not args.quick else [7168])
                for g in ([1, 4, 8, 16] if not args.quick else [16])]
    for e, r, c in shapes_sw:
        s = torch.randint(0, 255, (e, r, c), device=dev, dtype=torch.uint8)
        if comp["swizzle_3d"] is not None:
            peer[("swizzle_3d", f"{e}x{r}x{c}")] = time_us(lambda: comp["swizzle_3d"](s), args.reps)
    for d, g in pads:
        x = torch.randn(16384, d, device=dev, dtype=torch.bfloat16)
        o = offsets(16384, g, 1, 3, dev)
        bound = (16384 + g * 32 + 31) // 32 * 32
        if comp["pad_a32"] is not None:
            peer[("pad_a32", f"16384x{d}.g{g}")] = time_us(lambda: comp["pad_a32"](x, o, bound), args.reps)

    copy = qgmm_copy or torch_copy
    lines = [f"device: {torch.cuda.get_device_name()}; copy bandwidth (read+write): qgmm {qgmm_copy or float('nan'):.0f} GB/s"
             + (f" (base run {base_copy:.0f})" if base_copy else "")
             + f", torch {torch_copy:.0f} GB/s; peers: torch.compile(dynamic=True) of plain PyTorch (torchao not installed)",
             ""]
    bcols = " base us | base GB/s | base % |" if base else ""
    lines += ["| op | shape |" + bcols + " qgmm us | peer us | speedup | qgmm GB/s | % of copy |",
              "|---|---|" + ("---:|" * 3 if base else "") + "---:|---:|---:|---:|---:|"]
    keys = list(qg.keys()) + [k for k in peer if k not in qg]
    for key in keys:
        q = qg.get(key)
        p = peer.get(key)
        b = base.get(key)
        qs = f"{q[0]:.1f}" if q else "-"
        ps = f"{p:.1f}" if p else "-"
        sp = f"{p / q[0]:.2f}x" if (p and q) else "-"
        gb = f"{q[1]:.0f}" if q else "-"
        pc = f"{q[2]:.0f}%" if q else "-"
        bs = (f" {b[0]:.1f} | {b[1]:.0f} | {b[2]:.0f}% |" if b else " - | - | - |") if base else ""
        lines.append(f"| {key[0]} | {key[1]} |{bs} {qs} | {ps} | {sp} | {gb} | {pc} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as fo:
            fo.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
