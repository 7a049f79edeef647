#!/usr/bin/env python3
"""torch_peers.py — time the PyTorch equivalents of a qgmm suite on one CUDA GPU and
write a run document (docs/run-format.md) with backend "torch", for `qgmm-bench import`.

    qgmm-bench cases --suite nightly --json > cases.json     # the exact cases qgmm runs
    python3 ci/peers/torch_peers.py --cases cases.json --out torch.json [--budget-ms 300]
    qgmm-bench import --db results.db torch.json

Peers per case (same benchmark names and params as qgmm, so the store and the dashboard
line them up on the same series keys), each doing its case's work or recorded unsupported:
  * grouped GEMMs with bf16 output: torch._grouped_mm (bf16) and torch._scaled_grouped_mm
    (FP8 rowwise, e4m3fn, use_fast_accum=True: the accumulation qgmm's FP8 GEMM uses, stated
    in each result's message) with the case's own group offsets, M- and K-grouped;
  * 2D casts: torch.compile'd rowwise (reciprocal scales), MXFP8 dim0 floor and 1x128
    blockwise rules, reading the case's input dtype (bf16, f32) and writing its fp8 dtype.
`qgmm-bench run --peers torch` runs this script itself after qgmm's backends and stores
the results in the same run.
Timing: warm-up, then N samples of CUDA-event time around one call, N from the budget.
A case torch has no equivalent for is recorded as status "unsupported" (never a pass);
a failing call as "error" with the exception text. Numerics of the peers are not judged
against qgmm's reference ("unchecked"): this script measures speed.
"""
import argparse, datetime, hashlib, json, os, platform, socket, subprocess, sys, uuid

torch = None  # imported in main(), so --help works on machines without torch

FP8MAX = {"f8e4m3fn": 448.0, "f8e4m3fnuz": 240.0, "f8e5m2": 57344.0}


def tdtype(name):
    return {"bf16": torch.bfloat16, "f32": torch.float32, "f16": torch.float16,
            "f8e4m3fn": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2,
            "f8e4m3fnuz": getattr(torch, "float8_e4m3fnuz", None)}[name]


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def time_fn(fn, budget_ms, min_n=10, max_n=200, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    est = max(s.elapsed_time(e), 1e-3)
    n = int(min(max(budget_ms / est, min_n), max_n))
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for a, b in evs:
        a.record(); fn(); b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) * 1e3 for a, b in evs], warmup + 1


# ---- casts (torch.compile of the op-spec rules; the compiled kernel is what users would pick).
# Each peer reads the case's input dtype and writes its fp8 dtype and scale dtype, so it moves
# the bytes qgmm's op moves; a case whose work this script cannot reproduce is unsupported.
def rowwise_cast(x, fp8):
    fmax = FP8MAX[fp8]
    amax = x.float().abs().amax(dim=1, keepdim=True)
    scale = (fmax / amax.double().clamp(min=1e-12)).float()
    return (x.float() * scale).clamp(-fmax, fmax).to(tdtype(fp8)), (1.0 / scale)


def mx_cast(x, fp8):
    M, K = x.shape[0], x.shape[1]
    fmax, emax = FP8MAX[fp8], FP8EMAX[fp8]
    xb = x.float().reshape(M, K // 32, 32)
    amax = xb.abs().amax(dim=-1, keepdim=True)
    e = torch.floor(torch.log2(amax.clamp(min=2.0 ** -127))) - emax
    q = (xb * torch.exp2(-e)).clamp(-fmax, fmax).to(tdtype(fp8))
    return q.reshape(M, K), (e + 127).to(torch.uint8).reshape(M, K // 32)


def block_cast(x, fp8):
    M, K = x.shape[0], x.shape[1]
    fmax = FP8MAX[fp8]
    xb = x.float().reshape(M, K // 128, 128)
    amax = xb.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12)
    scale = fmax / amax
    return (xb * scale).clamp(-fmax, fmax).to(tdtype(fp8)).reshape(M, K), (1.0 / scale).reshape(M, K // 128)


FP8EMAX = {"f8e4m3fn": 8, "f8e4m3fnuz": 7, "f8e5m2": 15}
# What the FP8 GEMM peers accumulate with, stated in every such result: qgmm's FP8 kernels
# accumulate the products in fp32 without periodic promotion, which is use_fast_accum=True.
FAST_ACCUM_NOTE = ("torch._scaled_grouped_mm(use_fast_accum=True): the accumulation qgmm's FP8 GEMM uses "
                   "(fp32, no periodic promotion)")


def make_offs(c, dev):
    return torch.tensor(c["offs"], dtype=torch.int32, device=dev)


def unsupported(why):
    raise NotImplementedError(why)


def gemm_peer(c, dev):
    """(callable, note) for a grouped GEMM case, or NotImplementedError."""
    M, N, K, G = c["M"], c["N"], c["K"], len(c["offs"])
    kind, recipe = c["gemm_kind"], c["recipe"]
    if c["out_dtype"] != "bf16":
        unsupported("torch's grouped GEMMs write bf16 here; this case writes " + c["out_dtype"])
    if recipe not in ("bf16", "fp8_rowwise"):
        unsupported("no torch grouped GEMM with " + recipe + " scales on this GPU in this script")
    if recipe == "fp8_rowwise" and c["q_dtype"] != "f8e4m3fn":
        unsupported("torch._scaled_grouped_mm takes e4m3fn operands; this case's are " + c["q_dtype"])
    offs = make_offs(c, dev)
    dt = torch.bfloat16 if recipe == "bf16" else torch.float8_e4m3fn
    if kind == "m":   # a (M, K) x b (G, N, K)^T -> (M, N)
        a = torch.randn(M, K, device=dev).to(dt)
        b = torch.randn(G, N, K, device=dev).to(dt).transpose(-2, -1)
        if recipe == "bf16":
            return (lambda: torch._grouped_mm(a, b, offs=offs, out_dtype=torch.bfloat16)), ""
        sa = torch.ones(M, device=dev, dtype=torch.float32)
        sb = torch.ones(G, N, device=dev, dtype=torch.float32)
        return (lambda: torch._scaled_grouped_mm(a, b, sa, sb, offs=offs, out_dtype=torch.bfloat16,
                                                  use_fast_accum=True)), FAST_ACCUM_NOTE
    # K-grouped (wgrad): out (G, N, K) = per group of tokens, X^T (N, M) x Y (M, K)
    x = torch.randn(N, M, device=dev).to(dt)
    y = torch.randn(K, M, device=dev).to(dt).t()
    if recipe == "bf16":
        return (lambda: torch._grouped_mm(x, y, offs=offs, out_dtype=torch.bfloat16)), ""
    sx = torch.ones(G * N, device=dev, dtype=torch.float32)
    sy = torch.ones(G * K, device=dev, dtype=torch.float32)
    return (lambda: torch._scaled_grouped_mm(x, y, sx, sy, offs=offs, out_dtype=torch.bfloat16,
                                              use_fast_accum=True)), FAST_ACCUM_NOTE


def cast_peer(c, dev):
    """(callable, note) for a 2D cast case the script reproduces, or NotImplementedError."""
    name, M, K = c["benchmark"], c["M"], c["K"]
    xdt, q = c["in_dtype"], c["q_dtype"]
    if c["E"] != 0 or c["G"] != 0 or c["params"].get("groups", "none") != "none":
        unsupported("no torch peer for a 3D or grouped cast in this script")
    if xdt not in ("bf16", "f32", "f16") or q not in FP8MAX or tdtype(q) is None:
        unsupported(f"no torch peer for {xdt} -> {q}")
    x = torch.randn(M, K, device=dev, dtype=tdtype(xdt))
    if name.startswith("fp8_rowwise.row.recip."):
        f = torch.compile(lambda t: rowwise_cast(t, q))
    elif name.startswith("mxfp8.dim0.plain.floor."):
        f = torch.compile(lambda t: mx_cast(t, q))
    elif name.startswith("fp8_blockwise.1x128."):
        f = torch.compile(lambda t: block_cast(t, q))
    else:
        unsupported("no torch equivalent of " + name + " in this script")
    return (lambda: f(x)), ""


def peer_for(c, dev):
    """(zero-argument callable running the peer once, note), or NotImplementedError."""
    if c["benchmark"].startswith(("gemm.m.", "gemm.k.")):
        return gemm_peer(c, dev)
    return cast_peer(c, dev)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", required=True, help="output of `qgmm-bench cases --suite S --json`")
    ap.add_argument("--out", required=True, help="run document to write")
    ap.add_argument("--budget-ms", type=float, default=300.0)
    ap.add_argument("--filter", default="", help="only cases whose id contains this")
    ap.add_argument("--reason", default="peers")
    ap.add_argument("--sha", default="", help="qgmm revision the peers run is filed under")
    args = ap.parse_args()
    global torch
    try:
        import torch as _torch
    except ImportError:
        sys.exit("torch_peers.py: PyTorch is not installed (pip install torch)")
    torch = _torch
    # one compiled function per cast rule, its shapes made dynamic after the first change; the
    # default limit of 8 compilations would fall back to eager PyTorch past the 8th shape
    torch._dynamo.config.cache_size_limit = 256
    if not torch.cuda.is_available():
        sys.exit("torch_peers.py: no CUDA device visible to torch")
    dev = torch.device("cuda:0")
    doc_cases = json.load(open(args.cases))
    started = now()
    props = torch.cuda.get_device_properties(0)
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip(); break
    except OSError:
        pass
    drv = ""
    try:
        drv = open("/proc/driver/nvidia/version").read().split("Kernel Module")[1].split()[0]
    except (OSError, IndexError):
        pass
    sha = args.sha
    if not sha:
        try:
            sha = subprocess.check_output(["git", "rev-parse", "HEAD"], text=True).strip()
        except Exception:
            sha = "unknown"
    tlib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")
    code_hash = ""
    if os.path.exists(tlib):
        code_hash = "sha256:" + hashlib.sha256(open(tlib, "rb").read()).hexdigest()
    results = []
    for c in doc_cases["cases"]:
        if args.filter and args.filter not in c["id"]:
            continue
        r = {"context": 0, "benchmark": c["benchmark"], "params": c["params"], "shape": c["shape"],
             "status": "ok", "verdict": "unchecked", "samples_us": [], "bytes": int(c["bytes"]),
             "ceiling": "ceiling.gemm." + c["recipe"] if c["ceiling"] == "gemm" else "ceiling.copy"}
        if c["flops"] > 0:
            r["flops"] = int(c["flops"])
        try:
            fn, note = peer_for(c, dev)
            r["samples_us"], r["warmup"] = time_fn(fn, args.budget_ms)
            if note:
                r["message"] = note
        except NotImplementedError as e:
            r["status"], r["message"] = "unsupported", str(e)
        except Exception as e:  # a failing peer is recorded, not fatal
            r["status"], r["message"] = "error", f"{type(e).__name__}: {e}"[:500]
        print(f"[torch] {c['id']}: {r['status']}", file=sys.stderr)
        results.append(r)
    doc = {
        "format": "qgmm-run", "version": 1, "uuid": str(uuid.uuid4()),
        "suite": doc_cases.get("suite", "peers"), "reason": args.reason,
        "started_at": started, "finished_at": now(),
        "runner": "qgmm-peers-torch", "runner_version": "0.1.0",
        "env": {"python": platform.python_version(), "torch": torch.__version__},
        "machine": {"hostname": socket.gethostname(), "cpu": cpu,
                    "os": f"{platform.system()} {platform.release()} {platform.machine()}",
                    "cores": os.cpu_count()},
        "revision": {"sha": sha},
        "contexts": [{"backend": "torch",
                      "device": {"name": props.name, "kind": "gpu", "arch": f"sm_{props.major}{props.minor}",
                                 "memory_bytes": props.total_memory},
                      "describe": f"torch {torch.__version__} on {props.name}; FP8 GEMMs with use_fast_accum=True",
                      "driver": f"NVIDIA {drv}" if drv else "",
                      "runtime": f"torch {torch.__version__}", "code_hash": code_hash}],
        "results": results,
    }
    json.dump(doc, open(args.out, "w"), indent=1)
    print(f"wrote {args.out}: {len(results)} results", file=sys.stderr)


if __name__ == "__main__":
    main()
