#!/usr/bin/env python3
"""perf_table.py BENCH_JSON — the docs/PERF.md tables from bench_grouped.py --json output.

One row per (kind, shape): the PyTorch peer, qgmm's auto path (with the kernel that ran)
and qgmm's portable kernel, in TFLOP/s, the qgmm/peer ratio and % of the measured dense
ceiling of the same precision; then FP8 blockwise and MXFP8 (no peer on sm_90)."""
import json
import sys

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if len(sys.argv) == 2 else 2)
d = json.load(open(sys.argv[1]))
bf, f8 = d["bf16_ceiling"], d["fp8_ceiling"]
rows = d["rows"]


def find(kind, recipe, impl, shape):
    for r in rows:
        if (r["kind"], r["recipe"], r["impl"], (r["M"], r["N"], r["K"], r["G"])) == (kind, recipe, impl, shape):
            return r
    return None


shapes = []
for r in rows:
    s = (r["M"], r["N"], r["K"], r["G"])
    if r["kind"] != "dense" and s not in shapes:
        shapes.append(s)

print("Dense ceilings (same run): bf16 torch.mm %.0f TFLOP/s, fp8 torch._scaled_mm %.0f TFLOP/s (8192^3)\n" % (bf, f8))
for recipe, peer, ceil in (("bf16", "torch._grouped_mm", bf), ("fp8_rowwise", "torch._scaled_grouped_mm", f8)):
    print("**%s** (TFLOP/s; ratio = qgmm auto / peer; %% of the dense %s ceiling)\n" % (recipe, recipe))
    print("| kind | M | N | K | G | peer | qgmm auto (kernel) | ratio | % ceil | qgmm portable | rel err vs peer |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for kind in ("M", "K"):
        for s in shapes:
            p, a, q = find(kind, recipe, peer, s), find(kind, recipe, "qgmm-auto", s), find(kind, recipe, "qgmm-portable", s)
            if not a:
                continue
            print("| %s | %d | %d | %d | %d | %s | %.0f (%s) | %s | %.0f%% | %s | %s |" % (
                kind, *s, "%.0f" % p["tflops"] if p else "n/a", a["tflops"], a.get("path", ""),
                "%.2fx" % (a["tflops"] / p["tflops"]) if p else "n/a", 100 * a["tflops"] / ceil,
                "%.0f" % q["tflops"] if q else ("= auto" if a.get("path") == "portable" else "-"),
                "%.1e" % a["rel_err_vs_peer"] if "rel_err_vs_peer" in a else ""))
    print()
print("**FP8 rowwise, f32 output; FP8 blockwise; MXFP8** (qgmm auto; TFLOP/s, % of the fp8 ceiling)\n")
print("| kind | M | N | K | G | rowwise f32-out (kernel) | blockwise (kernel) | mxfp8 (kernel) |")
print("|---|---|---|---|---|---|---|---|")
for kind in ("M", "K"):
    for s in shapes:
        cells = []
        for rc in ("fp8_rowwise_f32out", "fp8_blockwise", "mxfp8"):
            r = find(kind, rc, "qgmm-auto", s)
            cells.append("%.0f, %.0f%% (%s)" % (r["tflops"], 100 * r["tflops"] / f8, r.get("path", "?")) if r else "-")
        print("| %s | %d | %d | %d | %d | %s |" % (kind, *s, " | ".join(cells)))
