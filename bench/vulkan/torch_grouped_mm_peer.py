"""torch_grouped_mm_peer.py — the peer of bench/vulkan/vk_gemm_bench.c: torch._grouped_mm (bf16,
bf16 out) on the same shapes and group layouts (M-grouped: x (M, K) x w (E, N, K)^T; K-grouped
wgrad: a (M, N)^T x b (M, K) -> (E, N, K)), and torch._scaled_grouped_mm with FP8 rowwise scales
on the same layouts (e4m3fn operands), CUDA-event timed, median of --iters after warm-up.
Group sizes: an even split in multiples of 16 (the peer's time does not depend on the split's
randomness at these sizes). Usage: python3 torch_grouped_mm_peer.py [--iters N] [--shape M,N,K,G]..."""
import argparse, torch

def median_ms(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--shape", action="append", default=[])
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shape] or [(16384, 1536, 5120, 16), (32768, 2048, 7168, 8)]
    dev = "cuda"
    print("| shape (M,N,K,G) | op | torch ms | TFLOP/s |")
    print("|---|---|---|---|")
    for M, N, K, G in shapes:
        offs = torch.arange(1, G + 1, device=dev, dtype=torch.int32) * (M // G // 16 * 16)
        offs[-1] = M
        x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        w = torch.randn(G, N, K, device=dev, dtype=torch.bfloat16)
        ms = median_ms(lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs, out_dtype=torch.bfloat16), args.iters)
        print(f"| {M},{N},{K},{G} | _grouped_mm M-grouped | {ms:.3f} | {2 * M * N * K / ms / 1e9:.1f} |")
        a = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
        b = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        ms = median_ms(lambda: torch._grouped_mm(a.t(), b, offs=offs, out_dtype=torch.bfloat16), args.iters)
        print(f"| {M},{N},{K},{G} | _grouped_mm K-grouped | {ms:.3f} | {2 * M * N * K / ms / 1e9:.1f} |")
        # FP8 rowwise peer (the recipe torchao's MoE training runs on sm90): e4m3fn operands,
        # f32 scales per row of x / per (expert, n) of w; wgrad per (group, n) and (group, k)
        f8 = torch.float8_e4m3fn
        try:
            xq, wq = x.to(f8), w.to(f8)
            sa = torch.rand(M, device=dev) + 0.5
            sb = torch.rand(G, N, device=dev) + 0.5
            ms = median_ms(lambda: torch._scaled_grouped_mm(xq, wq.transpose(-2, -1), sa, sb, offs=offs,
                                                            out_dtype=torch.bfloat16), args.iters)
            print(f"| {M},{N},{K},{G} | _scaled_grouped_mm FP8 rowwise M-grouped | {ms:.3f} | {2 * M * N * K / ms / 1e9:.1f} |")
        except Exception as e:  # an older torch or another GPU: say so, do not invent a figure
            print(f"| {M},{N},{K},{G} | _scaled_grouped_mm FP8 rowwise M-grouped | n/a | {type(e).__name__}: {str(e)[:80]} |")
        try:
            aq = a.t().contiguous().to(f8)                 # (N, M) row-major
            bq = b.to(f8).t().contiguous().t()              # (M, K) column-major
            sa = torch.rand(G * N, device=dev) + 0.5
            sb = torch.rand(G * K, device=dev) + 0.5
            ms = median_ms(lambda: torch._scaled_grouped_mm(aq, bq, sa, sb, offs=offs, out_dtype=torch.bfloat16),
                           args.iters)
            print(f"| {M},{N},{K},{G} | _scaled_grouped_mm FP8 rowwise K-grouped | {ms:.3f} | {2 * M * N * K / ms / 1e9:.1f} |")
        except Exception as e:
            print(f"| {M},{N},{K},{G} | _scaled_grouped_mm FP8 rowwise K-grouped | n/a | {type(e).__name__}: {str(e)[:80]} |")

if __name__ == "__main__":
    main()
