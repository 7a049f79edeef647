#!/usr/bin/env python3
"""qgmm.torch on a CUDA GPU: correctness, torch.compile, CUDA graphs, timings.

    QGMM_LIBRARY=<build>/lib/libqgmm.so QGMM_PLUGIN_PATH=<build>/lib PYTHONPATH=python \\
        python3 python/tests/gpu/gpu_check.py [--out DIR] [--quick]

Checks (exit 1 if one fails):
  1. a context on PyTorch's default stream (native stream 0), and casts on CUDA tensors
     byte-identical to the cpu backend on the same data;
  2. grouped_mm forward, dgrad and wgrad of every recipe against a float64 PyTorch
     reference, SQNR at or above docs/numerics.md's floors (27 / 25 / 24 dB for the FP8
     recipes; BF16 held to 40 dB);
  3. torch.compile(fullgraph=True) of a small MoE block (router, top-k, permutation,
     GroupedExperts, weighted unpermute): forward and backward, no graph break;
  4. one CUDA graph of GroupedExperts' forward + backward, replayed 100 times with
     bit-identical outputs, then replayed with new offsets written into the same tensor;
  5. timings: the qgmm layer per recipe vs the same layer on torch._grouped_mm (BF16), and
     the host time per call of qgmm.torch.grouped_mm, of the ops-level wrapper and of the
     bare ctypes C call on a tiny problem (the difference is the Python layer's overhead).
Results go to stdout and, as JSON, to DIR/gpu_check.json.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import qgmm  # noqa: E402
import qgmm.torch as qt  # noqa: E402
from qgmm import _lib, ops  # noqa: E402
from qgmm.arrays import Call  # noqa: E402

FLOORS = {"bf16": (40.0, 40.0, 40.0), "fp8_rowwise": (27.0, 25.0, 24.0),
          "fp8_blockwise": (27.0, 25.0, 24.0), "mxfp8": (27.0, 25.0, 24.0)}
RESULTS = {"checks": [], "timings": {}}
FAILED = []


def record(name, ok, **info):
    RESULTS["checks"].append(dict(name=name, ok=bool(ok), **info))
    print(f"[{'PASS' if ok else 'FAIL'}] {name} {json.dumps(info) if info else ''}", flush=True)
    if not ok:
        FAILED.append(name)


def sqnr(ref, got):
    ref, got = ref.detach().double(), got.detach().double()
    err = torch.linalg.vector_norm(ref - got)
    return float("inf") if err == 0 else float(20 * torch.log10(torch.linalg.vector_norm(ref) / err))


def make_offs(M, E, device, empty=1, seed=0):
    """Cumulative ends of E groups covering M rows, group `empty` empty, sizes uneven."""
    g = torch.Generator().manual_seed(seed)
    w = torch.rand(E, generator=g) + 0.2
    w[empty] = 0
    sizes = (w / w.sum() * M).floor().to(torch.int64)
    sizes[-1] += M - sizes.sum()
    return torch.cumsum(sizes, 0).to(torch.int32).to(device)


# ------------------------------------------------------------------ 1. streams and casts
def check_streams_and_casts(dev):
    ctx = qgmm.Context("cuda", dev.index or 0, stream=0)
    record("context on the default stream (native stream 0)", "adopted" in ctx.describe(),
           describe=ctx.describe())
    ctx.close()
    x = torch.randn(512, 1024, device=dev) * 3
    x[5, 7] = 0
    with torch.cuda.stream(torch.cuda.default_stream(dev)):
        q, s = qgmm.quantize_fp8_rowwise(x, 1)
    xc = x.cpu().numpy()
    cases = [("fp8_rowwise rowwise", (q, s), qgmm.quantize_fp8_rowwise(xc, 1)),
             ("fp8_rowwise colwise", qgmm.quantize_fp8_rowwise(x, 0), qgmm.quantize_fp8_rowwise(xc, 0)),
             ("mxfp8 dim0 rceil", qgmm.quantize_mxfp8(x, 1, mode="rceil"),
              qgmm.quantize_mxfp8(xc, 1, mode="rceil")),
             ("fp8_blockwise 1x128", qgmm.quantize_fp8_blockwise(x), qgmm.quantize_fp8_blockwise(xc))]
    for name, (gq, gs), (cq, cs) in cases:
        same = (gq.view(torch.uint8).cpu().numpy().tobytes() == np.asarray(cq).tobytes() and
                gs.contiguous().view(torch.uint8).cpu().numpy().tobytes()
                == np.ascontiguousarray(cs).tobytes())
        record(f"cuda {name} byte-identical to the cpu backend", same)
    qt.synchronize(x)


# ------------------------------------------------------------------ 2. recipes vs float64
def check_recipes(dev, M, K, N, E):
    torch.manual_seed(1)
    x0 = torch.randn(M, K, device=dev).bfloat16()
    w0 = (torch.randn(E, N, K, device=dev) / math.sqrt(K)).bfloat16()
    dy = torch.randn(M, N, device=dev).bfloat16()
    offs = make_offs(M, E, dev)
    bounds = [0] + offs.tolist()  # host copy for the reference only
    xd, wd, dyd = x0.double(), w0.double(), dy.double()
    y_ref, dx_ref, dw_ref = torch.zeros(M, N, device=dev, dtype=torch.float64), \
        torch.zeros(M, K, device=dev, dtype=torch.float64), torch.zeros(E, N, K, device=dev, dtype=torch.float64)
    for g in range(E):
        a, b = bounds[g], bounds[g + 1]
        y_ref[a:b] = xd[a:b] @ wd[g].T
        dx_ref[a:b] = dyd[a:b] @ wd[g]
        dw_ref[g] = dyd[a:b].T @ xd[a:b]
    for recipe, floors in FLOORS.items():
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        y = qt.grouped_mm(x, w, offs, recipe=recipe)
        y.backward(dy)
        got = (sqnr(y_ref, y), sqnr(dx_ref, x.grad), sqnr(dw_ref, w.grad))
        ok = all(g >= f for g, f in zip(got, floors))
        record(f"grouped_mm {recipe} vs float64 (fwd, dgrad, wgrad dB)", ok,
               sqnr=[round(v, 2) for v in got], floors=list(floors), shape=[M, K, N, E])
    qt.synchronize(x0)


# ------------------------------------------------------------------ 3. torch.compile
class MoEBlock(torch.nn.Module):
    """Router, top-k, sort by expert, GroupedExperts, weighted scatter back."""

    def __init__(self, dim, hidden, experts, top_k, recipe, device):
        super().__init__()
        self.router = torch.nn.Linear(dim, experts, bias=False, device=device, dtype=torch.bfloat16)
        self.experts = qt.GroupedExperts(experts, dim, hidden, recipe=recipe, device=device)
        self.num_experts, self.top_k = experts, top_k

    def forward(self, x):
        probs = torch.softmax(self.router(x).float(), dim=-1)
        weights, ids = torch.topk(probs, self.top_k, dim=-1)
        flat = ids.reshape(-1)
        order = torch.argsort(flat, stable=True)
        token = order // self.top_k
        counts = torch.zeros(self.num_experts, dtype=torch.int64, device=x.device).scatter_add_(
            0, flat, torch.ones_like(flat))
        offs = torch.cumsum(counts, 0).to(torch.int32)
        y = self.experts(x[token], offs)
        y = y.float() * weights.reshape(-1)[order].unsqueeze(1)
        return torch.zeros_like(x, dtype=torch.float32).index_add_(0, token, y).to(x.dtype)


def check_compile(dev, recipe="fp8_rowwise"):
    torch.manual_seed(2)
    block = MoEBlock(256, 512, 8, 2, recipe, dev)
    x = torch.randn(1024, 256, device=dev).bfloat16()
    eager_y = block(x)
    eager_y.float().square().mean().backward()
    eager_g = block.experts.w1.grad.clone()
    block.zero_grad()
    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True)
    try:
        y = compiled(x)
        y.float().square().mean().backward()
        g = block.experts.w1.grad
        ok = sqnr(eager_y, y) > 30 and sqnr(eager_g, g) > 30
        record(f"torch.compile(fullgraph=True) MoE block ({recipe}) forward+backward", ok,
               sqnr_y=round(sqnr(eager_y, y), 1), sqnr_dw1=round(sqnr(eager_g, g), 1))
    except Exception as e:  # a graph break under fullgraph=True raises
        record(f"torch.compile(fullgraph=True) MoE block ({recipe})", False, error=repr(e)[:600])


# ------------------------------------------------------------------ 4. CUDA graphs
def check_cuda_graph(dev, recipe="fp8_rowwise", M=2048, dim=512, hidden=1024, E=8):
    torch.manual_seed(3)
    layer = qt.GroupedExperts(E, dim, hidden, recipe=recipe, device=dev)
    params = [layer.w1, layer.w3, layer.w2]
    x = torch.randn(M, dim, device=dev).bfloat16().requires_grad_()
    dy = torch.randn(M, dim, device=dev).bfloat16()
    offs = make_offs(M, E, dev, seed=4)

    def step():
        y = layer(x, offs)
        return (y,) + torch.autograd.grad(y, [x] + params, dy)

    s = torch.cuda.Stream(dev)
    s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s):  # warm-up on the capture stream: creates qgmm's context there
        for _ in range(3):
            eager = step()
    torch.cuda.current_stream(dev).wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, stream=s):
            static = step()
    except Exception as e:
        record(f"CUDA graph capture of GroupedExperts forward+backward ({recipe})", False,
               error=repr(e)[:600])
        return
    graph.replay()
    torch.cuda.synchronize(dev)
    first = [t.clone() for t in static]
    same = True
    for _ in range(100):
        graph.replay()
        torch.cuda.synchronize(dev)
        same &= all(torch.equal(a, b) for a, b in zip(first, static))
    eq_eager = all(torch.equal(a, b) for a, b in zip(first, eager))
    record(f"CUDA graph of GroupedExperts forward+backward ({recipe}): 100 replays identical", same,
           equal_to_eager=eq_eager)
    # new offsets written into the captured tensor: the replay follows them (device-side)
    offs.copy_(make_offs(M, E, dev, empty=3, seed=5))
    graph.replay()
    with torch.cuda.stream(s):
        fresh = step()
    torch.cuda.synchronize(dev)
    record("CUDA graph replay follows new device offsets",
           all(torch.equal(a, b) for a, b in zip(fresh, static)))


# ------------------------------------------------------------------ 5. timings
def cuda_time_ms(fn, iters=20, warmup=3):
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def time_layers(dev, M, K, N, E):
    torch.manual_seed(6)
    x = torch.randn(M, K, device=dev).bfloat16().requires_grad_()
    w = (torch.randn(E, N, K, device=dev) / math.sqrt(K)).bfloat16().requires_grad_()
    dy = torch.randn(M, N, device=dev).bfloat16()
    offs = make_offs(M, E, dev, empty=-1 if E < 2 else 1, seed=7)
    flops = 2 * M * N * K
    out = {"shape": dict(M=M, K=K, N=N, E=E), "card": torch.cuda.get_device_name(dev)}

    def torch_fwd():
        return torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)

    def torch_fb():
        y = torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)
        torch.autograd.grad(y, [x, w], dy)

    def maybe(fn):
        try:
            return cuda_time_ms(fn)
        except Exception as e:  # e.g. no backward for torch._grouped_mm in this PyTorch
            out.setdefault("torch_errors", []).append(repr(e)[:300])
            return None

    rows = {"torch._grouped_mm bf16": (maybe(torch_fwd), maybe(torch_fb))}
    for recipe in FLOORS:
        def fwd(r=recipe):
            return qt.grouped_mm(x, w, offs, recipe=r)

        def fb(r=recipe):
            y = qt.grouped_mm(x, w, offs, recipe=r)
            torch.autograd.grad(y, [x, w], dy)

        rows[f"qgmm {recipe}"] = (cuda_time_ms(fwd), cuda_time_ms(fb))
    base = rows["torch._grouped_mm bf16"]
    print(f"\nlayer M={M} K={K} N={N} E={E} on {out['card']} (median ms; TFLOP/s; x torch bf16)")
    def cell(ms, fl, ref):
        if ms is None:
            return f"{'-':>8s} ms {'-':>7s} TFLOP/s {'':7s}"
        speed = f"({ref / ms:.2f}x)" if ref else ""
        return f"{ms:8.3f} ms {fl / ms / 1e9:7.1f} TFLOP/s {speed:7s}"

    for name, (f, fb) in rows.items():
        print(f"  {name:26s} fwd {cell(f, flops, base[0])}  fwd+bwd {cell(fb, 3 * flops, base[1])}")
        out[name] = dict(fwd_ms=f, fwd_bwd_ms=fb)
    return out


def host_overhead(dev, calls=2000):
    """Host microseconds per call on a tiny problem: the custom op, the ops-level wrapper,
    and the C call with tensors built once (what any binding must at least spend)."""
    M, K, N, E = 64, 128, 128, 2
    x = torch.randn(M, K, device=dev).bfloat16()
    w = torch.randn(E, N, K, device=dev).bfloat16()
    offs = torch.tensor([32, 64], dtype=torch.int32, device=dev)
    y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    p = _lib.MoeParams(0, 4, 0)
    c = Call(None, x)
    tx, tw, to, ty = c.tensor("x", x), c.tensor("w", w), c.tensor("offs", offs), c.tensor("y", y)
    ctxh, fn = c.ctx.handle, _lib.lib.qgmm_moe_experts_forward
    args = (ctxh, ctypes.byref(p), ctypes.byref(tx), ctypes.byref(tw), ctypes.byref(to),
            ctypes.byref(ty), None)

    def per_call_us(f):
        for _ in range(50):
            f()
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        t1 = time.perf_counter()
        torch.cuda.synchronize(dev)
        return (t1 - t0) / calls * 1e6

    res = {
        "C call (ctypes, prebuilt tensors)": per_call_us(lambda: fn(*args)),
        "qgmm.moe_experts_forward (ops wrapper)": per_call_us(
            lambda: ops.moe_experts_forward(x, w, offs, recipe="bf16")),
        "qgmm.torch.grouped_mm (custom op)": per_call_us(lambda: qt.grouped_mm(x, w, offs)),
        "torch._grouped_mm (for scale)": per_call_us(
            lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)),
    }
    c.__exit__()
    base = res["C call (ctypes, prebuilt tensors)"]
    print(f"\nhost time per call, tiny problem (M={M} K={K} N={N} E={E}, bf16, {calls} calls):")
    for k, v in res.items():
        print(f"  {k:42s} {v:8.1f} us")
    print(f"  Python layer overhead over the C call: wrapper {res['qgmm.moe_experts_forward (ops wrapper)'] - base:.1f} us, "
          f"custom op {res['qgmm.torch.grouped_mm (custom op)'] - base:.1f} us")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="directory for gpu_check.json")
    ap.add_argument("--quick", action="store_true", help="smaller shapes, no timing of large layers")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: casts,recipes,compile,graph,time")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    if not torch.cuda.is_available():
        print("no CUDA device")
        return 77
    dev = torch.device("cuda", 0)
    RESULTS["env"] = dict(torch=torch.__version__, card=torch.cuda.get_device_name(dev),
                          qgmm=qgmm.library_version, library=qgmm.library_path,
                          backends=[(b.name, b.available, b.reason) for b in qgmm.backends()])
    print(json.dumps(RESULTS["env"], indent=1), flush=True)
    recipe_shape = (1024, 256, 256, 4) if a.quick else (4096, 1024, 1024, 8)
    layer_shape = (4096, 1024, 1024, 8) if a.quick else (16384, 2048, 4096, 8)

    def timings():
        RESULTS["timings"]["overhead_us"] = host_overhead(dev)
        RESULTS["timings"]["layer"] = time_layers(dev, *layer_shape)

    parts = [("casts", lambda: check_streams_and_casts(dev)),
             ("recipes", lambda: check_recipes(dev, *recipe_shape)),
             ("graph", lambda: check_cuda_graph(dev)),
             ("time", timings),
             ("compile", lambda: check_compile(dev))]  # last: the slowest to start
    for name, fn in parts:
        if name in skip:
            continue
        try:
            fn()
        except Exception as e:
            record(f"{name}: raised", False, error=repr(e)[:800])
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "gpu_check.json"), "w") as f:
        json.dump(RESULTS, f, indent=1, default=str)
    print(f"\n{len(RESULTS['checks']) - len(FAILED)} passed, {len(FAILED)} failed: {FAILED}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
