#!/usr/bin/env python3
"""Scale check of qgmm-dash (not a ctest: it takes minutes). Fills a store through the
ingest API with RUNS nightly-sized runs (CASES cases x BACKENDS backends, SAMPLES samples
each) and times ingest and every view.

  scale_bench.py --dash BIN --workdir DIR [--runs 120] [--cases 150] [--samples 20]"""
import argparse
import os
import random
import sys
import time
import uuid as uuidlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402


def doc(i, cases, samples, rnd):
    backends = ["cuda", "vulkan", "torch", "cpu"]
    ctxs = [{"backend": b, "device": {"name": "NVIDIA H100 80GB HBM3" if b != "cpu" else "Xeon", "kind": "gpu"}}
            for b in backends]
    res = []
    for c in range(cases):
        for ci, b in enumerate(backends):
            t = 100.0 + c
            res.append({"context": ci, "benchmark": "op%d" % (c % 12), "params": {"case": c, "m": 1024 * (c % 7 + 1)},
                        "label": "case %d" % c, "shape": "%dx5120" % (1024 * (c % 7 + 1)), "status": "ok",
                        "verdict": "pass" if b != "torch" else "unchecked",
                        "samples_us": [round(t * (1 + rnd.gauss(0, 0.02)), 3) for _ in range(samples)],
                        "bytes": 1 << 26})
    return {"format": "qgmm-run", "version": 1, "uuid": str(uuidlib.UUID(int=rnd.getrandbits(128), version=4)),
            "suite": "nightly", "started_at": dashlib.iso(1795000000 + i * 86400),
            "finished_at": dashlib.iso(1795000000 + i * 86400 + 600), "runner": "qgmm-bench",
            "runner_version": "0.1.0", "machine": {"hostname": "h100-box", "cpu": "Xeon"},
            "revision": {"sha": "%040x" % (i + 1)}, "contexts": ctxs, "results": res}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dash", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--runs", type=int, default=120)
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--samples", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    db = os.path.join(a.workdir, "scale.db")
    for s in ("", "-wal", "-shm"):
        if os.path.exists(db + s):
            os.remove(db + s)
    tok = dashlib.add_token(a.dash, db, "scale")
    srv = dashlib.Server(a.dash, db, a.workdir, extra=("--quiet",))
    rnd = random.Random(1)
    try:
        t_ing, size = 0.0, 0
        for i in range(a.runs):
            d = doc(i, a.cases, a.samples, rnd)
            import json
            body = json.dumps(d).encode()
            size = len(body)
            t = time.time()
            st, j = srv.post_run(None, tok, raw=body)
            t_ing += time.time() - t
            if st != 201:
                raise SystemExit("ingest failed: %s %s" % (st, j))
        n_res = a.runs * a.cases * 4
        print("ingest: %d runs of %d results (%d KB each) in %.1fs, %.0f ms/run" %
              (a.runs, a.cases * 4, size // 1024, t_ing, 1e3 * t_ing / a.runs))
        st, s = srv.get_json("/api/v1/series?benchmark=op3")
        sid = s["series"][0]["series_id"]
        st, r = srv.get_json("/api/v1/runs?limit=2")
        ua, ub = r["runs"][1]["run"], r["runs"][0]["run"]
        for p in ["/", "/matrix", "/series", "/series/%d" % sid, "/runs", "/runs/" + ub,
                  "/compare?a=%s&b=%s" % (ua, ub), "/regressions", "/api/v1/overview", "/api/v1/matrix"]:
            ts = []
            for _ in range(3):
                t = time.time()
                st, hd, body = srv.request("GET", p)
                ts.append(time.time() - t)
                assert st == 200, (p, st)
            print("  %-60s %7.1f ms  (%d KB)" % (p[:60], 1e3 * min(ts), len(body) // 1024))
        print("store: %d results, %d samples, %.0f MB" % (n_res, n_res * a.samples, os.path.getsize(db) / 1e6))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
