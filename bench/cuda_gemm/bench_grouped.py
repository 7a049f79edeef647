#!/usr/bin/env python3
"""bench_grouped.py — qgmm's CUDA grouped GEMMs vs PyTorch on the same GPU, same process.

Times, at the ops-spec §8 shapes (M-grouped forward and the K-grouped wgrad of each):
  BF16         qgmm (auto path, portable path)  vs torch._grouped_mm
  FP8 rowwise  qgmm (auto path, portable path)  vs torch._scaled_grouped_mm (use_fast_accum)
  FP8 blockwise, MXFP8: qgmm only (no PyTorch peer on sm_90); the error column compares
               with qgmm's portable kernel
and the dense ceilings torch.mm (bf16) and torch._scaled_mm (fp8 rowwise) at 8192^3.
Median of CUDA-event timings after warm-up, random data, jagged group sizes (multiples of
16, seeded). Each qgmm result is compared with the peer's (relative Frobenius error) so a
fast wrong kernel cannot pass unnoticed.

BF16 layouts (--layouts): "k" feeds both kinds contraction-contiguous operands (K-grouped
dy and x column-major); "mn" the MoE layer's own: M-grouped with the weights as the
(E, K, N) view of dgrad, K-grouped with row-major dy and x; the peer gets the same tensors.
For "mn" the same problem on contraction-contiguous copies also runs (row
"qgmm-kmajor-copy": the copy plus the K-major kernel, what a relayout costs) and its output
must equal the MN-major output bit for bit.

usage: bench_grouped.py [--lib PATH] [--reps N] [--quick | --shapes LIST] [--variants LIST]
                        [--recipes LIST] [--layouts k,mn] [--no-portable] [--no-ref] [--json FILE]
  --lib       libqg_bench.so (bench/cuda_gemm/build_bench.sh); default build-cudagemm/lib/
  --quick     three shapes only
  --shapes    M,N,K,G;M,N,K,G;... or "issue20" (the shapes of issue 20)
  --variants  Hopper kernel configurations to time, e.g. 0,1,2 (0 = the default the ops
              run; others: gemm_hopper.cu QG_*_CONFS, 1-based; MXFP8: 1 K-major, 2 MN-major
              bf16 operands, qg_mx_mn); rows say qgmm-auto / qgmm-vN
  --recipes   subset of bf16,fp8_rowwise,fp8_blockwise,mxfp8
  --kinds     M, K or M,K (default): which of the forward / wgrad problems to run
  --layouts   k, mn or k,mn (default k): the BF16 operand layouts (see above)
  --no-portable  skip the portable-path rows
  --no-ref    skip the portable kernel's reference of FP8 blockwise and MXFP8 (one slow
              portable run per shape and kind; their error column stays empty)
"""
import argparse
import ctypes as C
import json
import math
import os
import statistics
import sys
import time

torch = None  # imported in main(), so --help works without PyTorch

QG_M, QG_K = 0, 1
EL_BF16, EL_E4M3 = 0, 1
SC_NONE, SC_ROW, SC_BLOCK, SC_MX = 0, 1, 2, 3
PATH_AUTO, PATH_PORTABLE, PATH_HOPPER = 0, 1, 2


class Operand(C.Structure):
    _fields_ = [("ptr", C.c_void_p), ("s_row", C.c_int64), ("s_k", C.c_int64), ("s_grp", C.c_int64)]


class Scales(C.Structure):
    _fields_ = [("ptr", C.c_void_p), ("s_grp", C.c_int64), ("s_row", C.c_int64), ("s_k", C.c_int64),
                ("i_div", C.c_int)]


class Problem(C.Structure):
    _fields_ = [("kind", C.c_int), ("elem", C.c_int), ("scale_mode", C.c_int), ("out_f32", C.c_int),
                ("groups", C.c_int), ("rows", C.c_int64), ("cols", C.c_int64), ("kdim", C.c_int64),
                ("offs_multiple", C.c_int), ("a", Operand), ("b", Operand), ("sa", Scales),
                ("sb", Scales), ("offs", C.c_void_p), ("out", C.c_void_p), ("so_g", C.c_int64),
                ("so_r", C.c_int64), ("so_c", C.c_int64), ("status", C.c_void_p),
                ("variant", C.c_int), ("ws", C.c_void_p), ("ws_bytes", C.c_int64)]


class Lib:
    def __init__(self, path):
        self.lib = C.CDLL(path)
        self.lib.qg_bench_run.restype = C.c_int
        self.lib.qg_bench_problem_size.restype = C.c_int
        self.lib.qg_bench_ws_bytes.restype = C.c_longlong
        assert self.lib.qg_bench_problem_size() == C.sizeof(Problem), "qg_problem layout mismatch"
        self.status = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.ws = None  # the workspace the plugin takes from its context's scratch (MXFP8)

    def run(self, p, path, variant=0):
        p.status = self.status.data_ptr()
        p.variant = variant
        p.ws, p.ws_bytes = None, 0
        need = self.lib.qg_bench_ws_bytes(C.byref(p)) if path != PATH_PORTABLE else 0
        if need > 0:
            if self.ws is None or self.ws.numel() < need:
                self.ws = None
                self.ws = torch.empty(need, dtype=torch.uint8, device="cuda")
            p.ws, p.ws_bytes = self.ws.data_ptr(), self.ws.numel()
        why = C.create_string_buffer(256)
        used = C.create_string_buffer(32)
        rc = self.lib.qg_bench_run(C.byref(p), path, C.c_void_p(torch.cuda.current_stream().cuda_stream),
                                   why, 256, used, 32)
        if rc != 0:
            raise RuntimeError("qgmm rc=%d: %s" % (rc, why.value.decode()))
        return used.value.decode()


def elem_of(dt):
    return EL_BF16 if dt == torch.bfloat16 else EL_E4M3


def m_problem(a, b, offs, out, mode=SC_NONE, sa=None, sb=None):
    """a (M,K), b (E,N,K), out (M,N); sa/sb per the mode (see gemm_problem.cuh)."""
    p = Problem()
    p.kind, p.elem, p.scale_mode = QG_M, elem_of(a.dtype), mode
    p.out_f32 = int(out.dtype == torch.float32)
    p.groups = offs.numel()
    p.rows, p.cols, p.kdim = a.shape[0], b.shape[1], a.shape[1]
    p.offs_multiple = 1
    p.a = Operand(a.data_ptr(), a.stride(0), a.stride(1), 0)
    p.b = Operand(b.data_ptr(), b.stride(1), b.stride(2), b.stride(0))
    p.offs, p.out = offs.data_ptr(), out.data_ptr()
    p.so_g, p.so_r, p.so_c = 0, out.stride(0), out.stride(1)
    if mode == SC_ROW:
        p.sa = Scales(sa.data_ptr(), 0, sa.stride(0), 0, 1)
        p.sb = Scales(sb.data_ptr(), sb.stride(0), sb.stride(1), 0, 1)
    elif mode == SC_BLOCK:
        p.sa = Scales(sa.data_ptr(), 0, sa.stride(0), sa.stride(1), 1)
        p.sb = Scales(sb.data_ptr(), sb.stride(0), sb.stride(1), sb.stride(2), 128)
    elif mode == SC_MX:
        p.sa = Scales(sa.data_ptr(), 0, 0, 0, 1)
        p.sb = Scales(sb.data_ptr(), 0, 0, 0, 1)
    return p


def k_problem(a, b, offs, out, mode=SC_NONE, sa=None, sb=None):
    """a (M,N), b (M,K) (column-major for the fast path), out (G,N,K)."""
    p = Problem()
    p.kind, p.elem, p.scale_mode = QG_K, elem_of(a.dtype), mode
    p.out_f32 = int(out.dtype == torch.float32)
    p.groups = offs.numel()
    p.rows, p.cols, p.kdim = a.shape[1], b.shape[1], a.shape[0]
    p.offs_multiple = {SC_BLOCK: 128, SC_MX: 32}.get(mode, 1)
    p.a = Operand(a.data_ptr(), a.stride(1), a.stride(0), 0)
    p.b = Operand(b.data_ptr(), b.stride(1), b.stride(0), 0)
    p.offs, p.out = offs.data_ptr(), out.data_ptr()
    p.so_g, p.so_r, p.so_c = out.stride(0), out.stride(1), out.stride(2)
    if mode == SC_ROW:
        p.sa = Scales(sa.data_ptr(), sa.stride(0), sa.stride(1), 0, 1)
        p.sb = Scales(sb.data_ptr(), sb.stride(0), sb.stride(1), 0, 1)
    elif mode == SC_BLOCK:
        p.sa = Scales(sa.data_ptr(), 0, sa.stride(0), sa.stride(1), 1)
        p.sb = Scales(sb.data_ptr(), 0, sb.stride(0), sb.stride(1), 1)
    elif mode == SC_MX:
        p.sa = Scales(sa.data_ptr(), 0, 0, 0, 1)
        p.sb = Scales(sb.data_ptr(), 0, 0, 0, 1)
    return p


def jagged_offs(M, G, mult, gen):
    """G cumulative end offsets over M, sizes multiples of mult, random cut points."""
    units = M // mult
    cuts = sorted(torch.randint(0, units + 1, (G - 1,), generator=gen).tolist()) + [units]
    return torch.tensor([c * mult for c in cuts], dtype=torch.int32, device="cuda")


def bench(fn, reps, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def relerr(x, ref):
    x, ref = x.double(), ref.double()
    d = torch.linalg.vector_norm(ref)
    return (torch.linalg.vector_norm(x - ref) / d).item() if d > 0 else torch.linalg.vector_norm(x).item()


def rand_fp8(shape, gen_scale=1.0):
    return (torch.randn(shape, device="cuda") * gen_scale).to(torch.float8_e4m3fn)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build-cudagemm/lib/libqg_bench.so")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--shapes", default=None)
    ap.add_argument("--variants", default="0")
    ap.add_argument("--recipes", default="bf16,fp8_rowwise,fp8_blockwise,mxfp8")
    ap.add_argument("--no-portable", action="store_true")
    ap.add_argument("--no-ref", action="store_true")
    ap.add_argument("--kinds", default="M,K")
    ap.add_argument("--layouts", default="k")
    args = ap.parse_args()
    layouts = args.layouts.split(",")
    variants = [int(v) for v in args.variants.split(",")]
    recipes = set(args.recipes.split(","))
    kinds = set(args.kinds.split(","))
    global torch
    import torch as _torch
    torch = _torch
    lib = Lib(os.path.abspath(args.lib))
    dev = torch.cuda.get_device_name()
    gen = torch.Generator().manual_seed(1234)
    torch.manual_seed(0)
    rows = []

    def rec(**kw):
        rows.append(kw)
        print(json.dumps(kw), flush=True)

    # ---- dense ceilings
    n = 8192
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    t = bench(lambda: torch.mm(x, y), args.reps)
    bf16_ceiling = 2 * n ** 3 / t / 1e9
    xf, yf = rand_fp8((n, n)), rand_fp8((n, n)).t()
    sx = torch.rand(n, 1, device="cuda") + 0.5
    sy = torch.rand(1, n, device="cuda") + 0.5
    t = bench(lambda: torch._scaled_mm(xf, yf, sx, sy, out_dtype=torch.bfloat16, use_fast_accum=True), args.reps)
    fp8_ceiling = 2 * n ** 3 / t / 1e9
    rec(kind="dense", recipe="bf16", impl="torch.mm", M=n, N=n, K=n, G=1, tflops=bf16_ceiling)
    rec(kind="dense", recipe="fp8_rowwise", impl="torch._scaled_mm", M=n, N=n, K=n, G=1, tflops=fp8_ceiling)
    del x, y, xf, yf

    shapes = [(32768, 8192, 5120, 1), (32768, 8192, 5120, 2), (32768, 8192, 5120, 8),
              (128000, 8192, 5120, 2), (32768, 2048, 7168, 4), (32768, 2048, 7168, 8),
              (128000, 2048, 7168, 8), (16384, 1536, 5120, 16), (16384, 2048, 7168, 64)]
    if args.quick:
        shapes = [shapes[2], shapes[7], shapes[8]]
    if args.shapes == "issue20":
        shapes = [(32768, 8192, 5120, 8), (32768, 2048, 7168, 8), (65536, 2048, 7168, 16),
                  (16384, 1536, 5120, 16), (32768, 4096, 7168, 64), (128000, 8192, 5120, 2)]
    elif args.shapes:
        shapes = [tuple(int(x) for x in sh.split(",")) for sh in args.shapes.split(";")]

    def timed(pr, path, out, ref, tp, flops, **kw):
        """Times qgmm on pr for each variant (the auto path) or once (portable)."""
        for v in (variants if path == PATH_AUTO else [0]):
            if ref is not None:
                out.fill_(float("nan"))
            used = lib.run(pr, path, v)
            err = relerr(out, ref) if ref is not None else None
            t = bench(lambda: lib.run(pr, path, v), args.reps)
            name = "qgmm-portable" if path == PATH_PORTABLE else ("qgmm-auto" if v == 0 else "qgmm-v%d" % v)
            row = dict(impl=name, path=used, ms=t, tflops=flops / t / 1e9, **kw)
            if tp is not None:
                row["vs_peer"] = tp / t
            if err is not None:
                row["rel_err_vs_peer"] = err
            rec(**row)

    paths = (PATH_AUTO,) if args.no_portable else (PATH_AUTO, PATH_PORTABLE)
    def kmajor_copy(pr, out, copies, make, tp, flops, **kw):
        """The MN-major problem pr (output in out) again on contraction-contiguous copies
        (dst, src) of its operands, make(output) giving that problem: the outputs must be
        bit-identical; times the copies plus the K-major kernel."""
        outc = torch.empty_like(out)
        pk = make(outc)
        for d, s_ in copies:
            d.copy_(s_)
        lib.run(pk, PATH_AUTO)
        lib.run(pr, PATH_AUTO)
        same = bool(torch.equal(out, outc))

        def step():
            for d, s_ in copies:
                d.copy_(s_)
            lib.run(pk, PATH_AUTO)
        t = bench(step, args.reps)
        rec(impl="qgmm-kmajor-copy", ms=t, tflops=flops / t / 1e9, vs_peer=tp / t, bit_identical_to_mn=same, **kw)

    def portable_ref(make, out):
        """The portable kernel's result (f32 sums of exact products) of the problem make(o):
        the reference of recipes without a PyTorch peer, so a fast wrong kernel shows."""
        if args.no_ref:
            return None
        ref = torch.empty_like(out)
        lib.run(make(ref), PATH_PORTABLE)
        return ref

    for (M, N, K, G) in shapes:
        offs = jagged_offs(M, G, 16, gen)
        offs128 = jagged_offs(M, G, 128, gen)
        flops = 2.0 * M * N * K
        sh = dict(M=M, N=N, K=K, G=G)
        # ---------------- M-grouped (forward): x (M,K) . w_g^T, w (G,N,K)
        out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        mrec = recipes if "M" in kinds else set()
        krec = recipes if "K" in kinds else set()
        for lay in (layouts if "bf16" in mrec else []):
            a16 = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            if lay == "mn":  # the weights as dgrad reads them: (G, N, K) view of (G, K, N) storage
                b16 = (torch.randn(G, K, N, device="cuda", dtype=torch.bfloat16) * 0.05).transpose(-2, -1)
            else:
                b16 = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16) * 0.05
            peer = lambda: torch._grouped_mm(a16, b16.transpose(-2, -1), offs=offs, out_dtype=torch.bfloat16)
            tp = bench(peer, args.reps)
            ref = peer()
            lk = dict(recipe="bf16", layout=lay, **sh)
            rec(kind="M", impl="torch._grouped_mm", ms=tp, tflops=flops / tp / 1e9, **lk)
            pr = m_problem(a16, b16, offs, out)
            for path in paths:
                timed(pr, path, out, ref, tp, flops, kind="M", **lk)
            if lay == "mn":
                bk = torch.empty(G, N, K, device="cuda", dtype=torch.bfloat16)
                kmajor_copy(pr, out, [(bk, b16)], lambda o: m_problem(a16, bk, offs, o), tp, flops, kind="M", **lk)
                del bk
            del a16, b16, ref
        a8 = rand_fp8((M, K))
        b8 = rand_fp8((G, N, K))
        if "fp8_rowwise" in mrec:
            sa = torch.rand(M, device="cuda") * 0.01 + 0.001
            sb = torch.rand(G, N, device="cuda") * 0.01 + 0.001
            peer = lambda: torch._scaled_grouped_mm(a8, b8.transpose(-2, -1), sa, sb, offs=offs,
                                                    out_dtype=torch.bfloat16, use_fast_accum=True)
            try:
                tp = bench(peer, args.reps)
                ref = peer()
                rec(kind="M", recipe="fp8_rowwise", impl="torch._scaled_grouped_mm", ms=tp, tflops=flops / tp / 1e9,
                    **sh)
            except Exception as e:  # noqa: BLE001 - report and carry on
                print("peer failed:", e)
                tp, ref = None, None
            pr = m_problem(a8, b8, offs, out, SC_ROW, sa, sb)
            for path in paths:
                timed(pr, path, out, ref, tp, flops, kind="M", recipe="fp8_rowwise", **sh)
            # FP8 rowwise with f32 output (the portable kernel on Hopper: f32 sums of exact products)
            out32 = torch.empty(M, N, device="cuda", dtype=torch.float32)
            pr = m_problem(a8, b8, offs, out32, SC_ROW, sa, sb)
            timed(pr, PATH_AUTO, out32, ref, tp, flops, kind="M", recipe="fp8_rowwise_f32out", **sh)
            del out32, ref
        if "fp8_blockwise" in mrec:
            sab = torch.rand(M, K // 128, device="cuda") * 0.01 + 0.001
            sbb = torch.rand(G, (N + 127) // 128, K // 128, device="cuda") * 0.01 + 0.001
            pr = m_problem(a8, b8, offs, out, SC_BLOCK, sab, sbb)
            ref = portable_ref(lambda o: m_problem(a8, b8, offs, o, SC_BLOCK, sab, sbb), out)
            timed(pr, PATH_AUTO, out, ref, None, flops, kind="M", recipe="fp8_blockwise", **sh)
            del sab, sbb
        if "mxfp8" in mrec:
            cpad = ((K // 32 + 3) // 4) * 4
            sam = torch.randint(120, 134, ((M + 128 * G + 127) // 128 * 128 * cpad,), dtype=torch.uint8,
                                device="cuda")
            sbm = torch.randint(120, 134, (G * ((N + 127) // 128 * 128) * cpad,), dtype=torch.uint8, device="cuda")
            pr = m_problem(a8, b8, offs, out, SC_MX, sam, sbm)
            ref = portable_ref(lambda o: m_problem(a8, b8, offs, o, SC_MX, sam, sbm), out)
            timed(pr, PATH_AUTO, out, ref, None, flops, kind="M", recipe="mxfp8", **sh)
            del sam, sbm
        del a8, b8, out
        torch.cuda.empty_cache()

        # ---------------- K-grouped (wgrad): dW[g] (N,K) = dy_g^T (N x M_g) . x_g (M_g x K)
        outk = torch.empty(G, N, K, device="cuda", dtype=torch.bfloat16)
        for lay in (layouts if "bf16" in krec else []):
            if lay == "mn":  # row-major dy (M,N) and x (M,K), as the layer has them
                dy = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
                x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            else:  # stored M-contiguous
                dy = torch.randn(N, M, device="cuda", dtype=torch.bfloat16).t()
                x = torch.randn(K, M, device="cuda", dtype=torch.bfloat16).t()
            peer = lambda: torch._grouped_mm(dy.t(), x, offs=offs, out_dtype=torch.bfloat16)
            tp = bench(peer, args.reps)
            ref = peer()
            lk = dict(recipe="bf16", layout=lay, **sh)
            rec(kind="K", impl="torch._grouped_mm", ms=tp, tflops=flops / tp / 1e9, **lk)
            pr = k_problem(dy, x, offs, outk)
            timed(pr, PATH_AUTO, outk, ref, tp, flops, kind="K", **lk)
            if lay == "mn":
                dyk = torch.empty(N, M, device="cuda", dtype=torch.bfloat16).t()
                xk = torch.empty(K, M, device="cuda", dtype=torch.bfloat16).t()
                kmajor_copy(pr, outk, [(dyk, dy), (xk, x)], lambda o: k_problem(dyk, xk, offs, o), tp, flops,
                            kind="K", **lk)
                del dyk, xk
            del dy, x, ref
        dyT8, xT8 = rand_fp8((N, M)), rand_fp8((K, M))
        dy8, x8 = dyT8.t(), xT8.t()
        if "fp8_rowwise" in krec:
            sa = torch.rand(G, N, device="cuda") * 0.01 + 0.001
            sb = torch.rand(G, K, device="cuda") * 0.01 + 0.001
            peer = lambda: torch._scaled_grouped_mm(dyT8, x8, sa.reshape(-1), sb.reshape(-1), offs=offs,
                                                    out_dtype=torch.bfloat16, use_fast_accum=True)
            try:
                tp = bench(peer, args.reps)
                ref = peer()
                rec(kind="K", recipe="fp8_rowwise", impl="torch._scaled_grouped_mm", ms=tp, tflops=flops / tp / 1e9,
                    **sh)
            except Exception as e:  # noqa: BLE001
                print("peer failed:", str(e)[:300])
                tp, ref = None, None
            pr = k_problem(dy8, x8, offs, outk, SC_ROW, sa, sb)
            timed(pr, PATH_AUTO, outk, ref, tp, flops, kind="K", recipe="fp8_rowwise", **sh)
            del ref
        if "fp8_blockwise" in krec:
            sab = torch.rand(N, (M + 127) // 128, device="cuda") * 0.01 + 0.001
            sbb = torch.rand(K, (M + 127) // 128, device="cuda") * 0.01 + 0.001
            pr = k_problem(dy8, x8, offs128, outk, SC_BLOCK, sab, sbb)
            ref = portable_ref(lambda o: k_problem(dy8, x8, offs128, o, SC_BLOCK, sab, sbb), outk)
            timed(pr, PATH_AUTO, outk, ref, None, flops, kind="K", recipe="fp8_blockwise", **sh)
            del sab, sbb
        if "mxfp8" in krec:
            mc = (M + 31) // 32
            sam = torch.randint(120, 134, (((N + 127) // 128 * 128) * ((mc + 4 * G + 3) // 4 * 4),),
                                dtype=torch.uint8, device="cuda")
            sbm = torch.randint(120, 134, (((K + 127) // 128 * 128) * ((mc + 4 * G + 3) // 4 * 4),),
                                dtype=torch.uint8, device="cuda")
            pr = k_problem(dy8, x8, offs128, outk, SC_MX, sam, sbm)
            ref = portable_ref(lambda o: k_problem(dy8, x8, offs128, o, SC_MX, sam, sbm), outk)
            timed(pr, PATH_AUTO, outk, ref, None, flops, kind="K", recipe="mxfp8", **sh)
            del sam, sbm
        del dyT8, xT8, dy8, x8, outk
        torch.cuda.empty_cache()

    st = lib.status.item()
    print("status word after the benchmark: %d (0 expected)" % st)
    # ---- table
    print("\n%s, %s, torch %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), dev, torch.__version__))
    print("dense ceilings: bf16 %.0f TFLOP/s, fp8 %.0f TFLOP/s" % (bf16_ceiling, fp8_ceiling))
    print("| kind | recipe | layout | M | N | K | G | impl | path | ms | TFLOP/s | % dense | vs peer | rel err vs peer |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["kind"] == "dense":
            continue
        ceil = bf16_ceiling if r["recipe"] == "bf16" else fp8_ceiling
        print("| %s | %s | %s | %d | %d | %d | %d | %s | %s | %.3f | %.0f | %.0f%% | %s | %s |" % (
            r["kind"], r["recipe"], r.get("layout", "k"), r["M"], r["N"], r["K"], r["G"], r["impl"],
            r.get("path", "") + ("" if "bit_identical_to_mn" not in r else
                                 " (bits %s)" % ("equal" if r["bit_identical_to_mn"] else "DIFFER")), r["ms"],
            r["tflops"], 100 * r["tflops"] / ceil,
            ("%.2fx" % r["vs_peer"]) if "vs_peer" in r and not math.isnan(r["vs_peer"]) else "",
            ("%.1e" % r["rel_err_vs_peer"]) if "rel_err_vs_peer" in r else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "bf16_ceiling": bf16_ceiling,
                       "fp8_ceiling": fp8_ceiling, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
