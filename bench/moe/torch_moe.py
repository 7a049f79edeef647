#!/usr/bin/env python3
"""torch_moe.py: the MoE expert layer of bench/moe/moe_bench.c written in PyTorch, timed the same
way (CUDA events, median after warm-up), for the same shapes and group sizes.

  bf16         forward  y  = torch._grouped_mm(x, w.transpose(-2, -1), offs)
               dgrad    dx = torch._grouped_mm(dy, w, offs)
               wgrad    dw = torch._grouped_mm(x.t(), dy, offs) (E, K, N), what autograd does for
                        the 2D x 3D case (a 2D x 2D grouped GEMM with offs over the token dim)
  fp8_rowwise  torch.compile'd casts written with plain torch ops + torch._scaled_grouped_mm:
               forward  x per row, w per (e, n);  dgrad dy per row, w per (e, k);
               wgrad    dy^T and x with jagged per-group scales (per (g, n) and (g, k)).

Prints a markdown row per (shape, recipe): ms fwd, ms fwd+bwd, speedup over the torch bf16
baseline of the same shape. Needs torch with CUDA (sm_90 for _scaled_grouped_mm); --help does not.
"""
import argparse
import sys

DEFAULT_SHAPES = ["16384,2048,7168,8", "32768,8192,5120,8", "65536,2048,7168,16", "32768,4096,7168,64"]  # issue 21
FP8_MAX = 448.0  # float8_e4m3fn


def group_sizes(M, E):
    """Ragged groups, multiples of 16, summing to M: mirrors moe_group_sizes() in moe_bench.c."""
    units = M // 16
    weights = [2 + (5 * g + 3) % 7 for g in range(E)]
    wsum = sum(weights)
    offs, at = [], 0
    for g in range(E):
        sz = units - at if g == E - 1 else units * weights[g] // wsum
        at += sz
        offs.append(at * 16)
    return offs


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", help="M,N,K,E (repeatable); default: " + " and ".join(DEFAULT_SHAPES))
    ap.add_argument("--reps", type=int, default=20, help="timed repetitions, median reported (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--check", action="store_true", help="also print the fp8 rowwise SQNR vs the bf16 outputs")
    return ap.parse_args(argv)


def build(torch):
    """The casts and the two compositions; torch imported by the caller."""
    f8 = torch.float8_e4m3fn

    def q_rows(t):
        # per row of a 2-D tensor (last dim reduced): scale = fp8max / max(amax, 1e-12)
        amax = t.abs().amax(dim=-1, keepdim=True).float().clamp(min=1e-12)
        s = FP8_MAX / amax
        q = (t.float() * s).clamp(-FP8_MAX, FP8_MAX).to(f8)
        return q, (1.0 / s).squeeze(-1)

    @torch.compile(fullgraph=True, dynamic=False)
    def cast_fwd(x, w):
        xq, xs = q_rows(x)                       # (M, K), (M,)
        wq, ws = q_rows(w)                       # (E, N, K) per (e, n), (E, N)
        return xq, xs, wq.transpose(-2, -1), ws  # B column-major (E, K, N)

    @torch.compile(fullgraph=True, dynamic=False)
    def cast_dgrad(dy, w):
        dyq, dys = q_rows(dy)                                  # (M, N), (M,)
        wtq, wts = q_rows(w.transpose(-2, -1))                 # (E, K, N) per (e, k), (E, K)
        return dyq, dys, wtq.contiguous().transpose(-2, -1), wts  # B (E, N, K) column-major

    @torch.compile(fullgraph=True, dynamic=False)
    def cast_wgrad(dy, x, offs):
        # jagged per-group scales along the token dim. Groups are multiples of 16 (what
        # _scaled_grouped_mm needs), so amax is first taken per 16-row block, then per group
        # over the blocks with a mask (E is small): two dense reductions, no host sync.
        M = dy.shape[0]
        E = offs.shape[0]
        gid = torch.searchsorted(offs, torch.arange(M, device=dy.device, dtype=offs.dtype), right=True)
        bgid = gid[::16]                                                   # (M/16,)
        mask = bgid[None, :] == torch.arange(E, device=dy.device)[:, None]  # (E, M/16)

        def jagged(t):  # t (M, C) -> q^T (C, M) row-major, scales (E*C,) group-major
            blk = t.abs().view(M // 16, 16, -1).amax(1).float()           # (M/16, C)
            amax = torch.where(mask[:, :, None], blk[None], 0.0).amax(1).clamp(min=1e-12)  # (E, C)
            s = FP8_MAX / amax
            srow = s[gid.clamp(max=E - 1)]                                 # (M, C)
            q = (t.float() * srow).clamp(-FP8_MAX, FP8_MAX).to(f8)
            return q.t().contiguous(), (1.0 / s).reshape(-1)

        dytq, dyts = jagged(dy)   # (N, M) row-major, (E*N,)
        xtq, xts = jagged(x)      # (K, M) contiguous -> .t() is (M, K) column-major
        return dytq, dyts, xtq.t(), xts

    def bf16_fwd(x, w, offs):
        return torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)

    wgrad_copy = []  # set once if this torch refuses a column-major A for the wgrad

    def bf16_bwd(x, w, dy, offs):
        dx = torch._grouped_mm(dy, w, offs=offs)
        if not wgrad_copy:
            try:
                return dx, torch._grouped_mm(x.t(), dy, offs=offs)  # (E, K, N): the grad of w^T
            except RuntimeError as e:
                print(f"torch_moe: _grouped_mm refused x.t() ({str(e)[:120]}); wgrad now copies x.t() "
                      "to row-major first (counted in the time)", flush=True)
                wgrad_copy.append(1)
        return dx, torch._grouped_mm(x.t().contiguous(), dy, offs=offs)

    def fp8_fwd(x, w, offs):
        xq, xs, wq, ws = cast_fwd(x, w)
        return torch._scaled_grouped_mm(xq, wq, xs, ws, offs=offs, out_dtype=torch.bfloat16, use_fast_accum=True)

    def fp8_bwd(x, w, dy, offs):
        dyq, dys, wtq, wts = cast_dgrad(dy, w)
        dx = torch._scaled_grouped_mm(dyq, wtq, dys, wts, offs=offs, out_dtype=torch.bfloat16, use_fast_accum=True)
        dytq, dyts, xq, xts = cast_wgrad(dy, x, offs)
        dw = torch._scaled_grouped_mm(dytq, xq, dyts, xts, offs=offs, out_dtype=torch.bfloat16, use_fast_accum=True)
        return dx, dw  # dw (E, N, K)

    return {"bf16": (bf16_fwd, bf16_bwd), "fp8_rowwise": (fp8_fwd, fp8_bwd)}


def median_ms(torch, fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    n = len(times)
    return times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])


def sqnr(ref, got):
    ref, got = ref.float(), got.float()
    return (10 * (ref.pow(2).sum() / (ref - got).pow(2).sum().clamp(min=1e-30)).log10()).item()


def main(argv):
    args = parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("torch_moe: no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    print(f"torch_moe: torch {torch.__version__}, {torch.cuda.get_device_name()}, reps {args.reps} (median), "
          f"warm-up {args.warmup}; outputs bf16; fp8 e4m3fn, use_fast_accum=True", flush=True)
    impl = build(torch)
    rc = 0
    for spec in args.shape or DEFAULT_SHAPES:
        M, N, K, E = (int(v) for v in spec.split(","))
        offs_l = group_sizes(M, E)
        print(f"\nshape M={M} N={N} K={K} E={E}  offs=[{','.join(map(str, offs_l))}]\n\n"
              "| M | N | K | E | recipe | fwd ms | fwd+bwd ms | fwd TFLOP/s | fwd+bwd TFLOP/s | "
              "fwd speedup vs bf16 | fwd+bwd speedup vs bf16 |\n|---|---|---|---|---|---|---|---|---|---|---|",
              flush=True)
        g = torch.Generator(device=dev).manual_seed(0)
        x = (torch.rand(M, K, device=dev, generator=g) * 2 - 1).bfloat16()
        w = ((torch.rand(E, N, K, device=dev, generator=g) * 2 - 1) * 0.05).bfloat16()
        dy = (torch.rand(M, N, device=dev, generator=g) * 2 - 1).bfloat16()
        offs = torch.tensor(offs_l, dtype=torch.int32, device=dev)
        flop = 2.0 * M * N * K
        base = None
        outs = {}
        for name, (fwd, bwd) in impl.items():
            try:
                f = median_ms(torch, lambda: fwd(x, w, offs), args.reps, args.warmup)
                fb = median_ms(torch, lambda: (fwd(x, w, offs), bwd(x, w, dy, offs)), args.reps, args.warmup)
                if args.check:
                    outs[name] = (fwd(x, w, offs),) + tuple(bwd(x, w, dy, offs))
            except Exception as e:  # report the row as failed, keep going
                msg = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
                print(f"| {M} | {N} | {K} | {E} | {name} | error | error | | | | |  <!-- {msg} -->", flush=True)
                rc = 1
                continue
            if name == "bf16":
                base = (f, fb)
            sp = f"{base[0] / f:.2f}x | {base[1] / fb:.2f}x" if base else "n/a | n/a"
            print(f"| {M} | {N} | {K} | {E} | {name} | {f:.3f} | {fb:.3f} | {flop / f * 1e-9:.0f} | "
                  f"{3 * flop / fb * 1e-9:.0f} | {sp} |", flush=True)
        if args.check and len(outs) == 2:
            r, q = outs["bf16"], outs["fp8_rowwise"]
            print(f"fp8_rowwise vs bf16 outputs SQNR dB: y {sqnr(r[0], q[0]):.1f}, dx {sqnr(r[1], q[1]):.1f}, "
                  f"dw {sqnr(r[2].transpose(-2, -1), q[2]):.1f}", flush=True)
        del x, w, dy, outs
        torch.cuda.empty_cache()
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
