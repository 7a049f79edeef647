"""Helpers shared by the qgmm-dash tests: the check tally, start/stop a server, HTTP calls,
fixture runs."""
import hashlib
import http.client
import json
import os
import random
import re
import sqlite3
import subprocess
import time
import uuid as uuidlib

CHECKS = 0
FAILS = []


def check(cond, what):
    """Counts one check; a failing one is printed at once and kept for the summary."""
    global CHECKS
    CHECKS += 1
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


def summary(name):
    """Prints the tally of every check so far; returns the test's exit status."""
    print("%s: %d checks, %d failed" % (name, CHECKS, len(FAILS)))
    return 1 if FAILS else 0


class Server:
    """qgmm-dash on 127.0.0.1 with a kernel-chosen port (read back from its stderr)."""

    def __init__(self, dash, db, workdir, extra=()):
        self.log_path = os.path.join(workdir, "server-%d.log" % int(time.time() * 1000))
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([dash, "--db", db, "--listen", "127.0.0.1:0", *extra],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        self.port = None
        deadline = time.time() + 20
        while time.time() < deadline and self.port is None:
            if self.proc.poll() is not None:
                raise RuntimeError("qgmm-dash exited: " + open(self.log_path).read())
            m = re.search(r"at http://127\.0\.0\.1:(\d+)/", open(self.log_path).read())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.05)
        if self.port is None:
            self.stop()
            raise RuntimeError("qgmm-dash did not report its port")
        self.base = "http://127.0.0.1:%d" % self.port

    def request(self, method, path, body=None, headers=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            c.close()

    def get_json(self, path):
        st, hd, data = self.request("GET", path)
        return st, json.loads(data) if data else None

    def post_run(self, doc, token, raw=None, ctype="application/json"):
        body = raw if raw is not None else json.dumps(doc).encode()
        hdr = {"Content-Type": ctype}
        if token is not None:
            hdr["Authorization"] = "Bearer " + token
        st, hd, data = self.request("POST", "/api/v1/runs", body, hdr)
        try:
            j = json.loads(data)
        except ValueError:
            j = None
        return st, j

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def add_token(dash, db, name, scope="ingest"):
    out = subprocess.run([dash, "--db", db, "token", "add", name, "--scope", scope],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


# ------------------------------------------------------------------ fixture runs
MACHINES = [
    {"hostname": "ci-1", "cpu": "AMD EPYC 7B13", "os": "Linux 6.1.0-18-amd64 x86_64", "cores": 2,
     "memory_bytes": 8331620352,
     "contexts": [("cpu", "AMD EPYC 7B13", "cpu", "x86_64", "", ""),
                  ("vulkan", "llvmpipe (LLVM 15.0.7, 256 bits)", "cpu", "x86_64", "Mesa 22.3.6", "Vulkan 1.3")]},
    {"hostname": "gpu-h100-a", "cpu": "Intel Xeon Platinum 8480+", "os": "Linux 6.8.0 x86_64", "cores": 16,
     "memory_bytes": 137438953472,
     "contexts": [("cuda", "NVIDIA H100 80GB HBM3", "gpu", "sm_90", "NVIDIA 580.65.06", "CUDA 13.0"),
                  ("vulkan", "NVIDIA H100 80GB HBM3", "gpu", "sm_90", "NVIDIA 580.65.06", "Vulkan 1.4"),
                  ("torch", "NVIDIA H100 80GB HBM3", "gpu", "sm_90", "NVIDIA 580.65.06", "torch 2.9.0+cu130")]},
    {"hostname": "mi300x-1", "cpu": "AMD EPYC 9654", "os": "Linux 6.8.0 x86_64", "cores": 192,
     "memory_bytes": 1649267441664,
     "contexts": [("hip", "AMD Instinct MI300X", "gpu", "gfx942", "ROCm 6.4", "HIP 6.4"),
                  ("torch", "AMD Instinct MI300X", "gpu", "gfx942", "ROCm 6.4", "torch 2.9.0+rocm6.4")]},
]

# benchmark, params, label, shape, role, bytes, flops, base time (us) on a 1x device
CASES = [
    ("ceiling.copy", {"bytes": 268435456}, "device copy", "256 MiB", "ceiling", 536870912, None, 200.0),
    ("quantize_fp8_rowwise", {"variant": "rowwise", "in": "bf16", "out": "f8e4m3fn", "m": 16384, "k": 5120},
     "rowwise bf16->f8e4m3fn", "16384x5120", "case", 251658240, None, 110.0),
    ("quantize_fp8_rowwise", {"variant": "jagged_col", "in": "bf16", "out": "f8e4m3fn", "m": 32768, "k": 7168, "g": 8},
     "jagged colwise bf16->f8e4m3fn", "32768x7168 G=8", "case", 704643072, None, 310.0),
    ("quantize_mxfp8", {"dim": "dim0", "mode": "rceil", "blocked": 1, "m": 16384, "k": 5120},
     "mxfp8 dim0 rceil, blocked scales", "16384x5120", "case", 254279680, None, 120.0),
    ("grouped_gemm", {"recipe": "bf16", "kind": "m", "m": 32768, "n": 8192, "k": 5120, "g": 8},
     "grouped GEMM bf16 (M-grouped)", "M=32768 N=8192 K=5120 G=8", "case", None, 2748779069440, 4200.0),
    ("grouped_gemm", {"recipe": "fp8_rowwise", "kind": "m", "m": 32768, "n": 8192, "k": 5120, "g": 8},
     "grouped GEMM fp8 rowwise (M-grouped)", "M=32768 N=8192 K=5120 G=8", "case", None, 2748779069440, 2500.0),
    ("canary", {"m": 1024, "k": 1024}, "canary", "1024x1024", "canary", 3145728, None, 9.0),
]

SPEED = {"cpu": 40.0, "vulkan@llvm": 60.0, "cuda": 1.0, "vulkan": 1.35, "torch": 1.1, "hip": 1.2}
SPEED_TORCH_AMD = 1.4


def _rev(i):
    return hashlib.sha1(b"qgmm fixture revision %d" % i).hexdigest()


def fixture_docs(n_revs=8, seed=7, t0=1795000000):
    """Deterministic runs: n_revs nightly runs per machine; the CUDA mxfp8 case gets 25 %
    slower in the last two revisions (a regression), the Vulkan fp8 GEMM fails numerics at
    revision 5, HIP reports the fp8 rowwise GEMM unsupported."""
    rnd = random.Random(seed)
    docs = []
    for ri in range(n_revs):
        for mi, m in enumerate(MACHINES):
            start = t0 + ri * 86400 + mi * 600
            ctxs, results = [], []
            for (be, dev, kind, arch, drv, rt) in m["contexts"]:
                ctxs.append({"backend": be, "device": {"name": dev, "kind": kind, "arch": arch},
                             "describe": "%s: %s" % (be, dev), "driver": drv, "runtime": rt,
                             "clocks": {"sm": 1980} if kind == "gpu" else {},
                             "code_hash": "fnv1a64:%016x" % (hash((be, ri)) & (2**64 - 1))})
            for ci, (be, dev, kind, arch, drv, rt) in enumerate(m["contexts"]):
                speed = SPEED["vulkan@llvm"] if (be == "vulkan" and kind == "cpu") else SPEED[be]
                if be == "torch" and "MI300" in dev:
                    speed = SPEED_TORCH_AMD
                for (bench, params, label, shape, role, nbytes, flops, base) in CASES:
                    if be == "torch" and role != "case":
                        continue
                    r = {"context": ci, "benchmark": bench, "params": params, "label": label,
                         "shape": shape, "role": role, "status": "ok",
                         "verdict": "pass" if role == "case" and be != "torch" else "unchecked",
                         "warmup": 3}
                    t = base * speed
                    if be == "cuda" and bench == "quantize_mxfp8" and ri >= n_revs - 2:
                        t *= 1.25
                    if be == "hip" and bench == "grouped_gemm" and params["recipe"] == "fp8_rowwise":
                        r.update(status="unsupported", verdict="unchecked",
                                 message="QGMM_ERR_UNSUPPORTED: fp8 rowwise grouped GEMM not built for gfx942")
                        r["samples_us"] = []
                        results.append(r)
                        continue
                    r["samples_us"] = [round(t * (1 + rnd.gauss(0, 0.01)), 3) for _ in range(9)]
                    if nbytes:
                        r["bytes"] = nbytes
                    if flops:
                        r["flops"] = flops
                        r["ceiling"] = ""
                    elif role == "case":
                        r["ceiling"] = "ceiling.copy"
                    if role == "case" and be != "torch":
                        if bench.startswith("quantize"):
                            r["numerics"] = {"mismatched_bytes": 0, "checked_bytes": nbytes // 3,
                                             "threshold": "bit-exact"}
                        else:
                            r["numerics"] = {"max_abs_err": 0.01, "rel_err": 0.004, "sqnr_db": 31.5,
                                             "threshold": "rel<=1e-2 sqnr>=27"}
                    if be == "vulkan" and kind == "gpu" and bench == "grouped_gemm" and \
                            params["recipe"] == "fp8_rowwise" and ri == 5:
                        r["verdict"] = "fail"
                        r["numerics"] = {"max_abs_err": 3.2, "rel_err": 0.19, "sqnr_db": 14.2,
                                         "threshold": "rel<=1e-2 sqnr>=27"}
                        r["message"] = "rel_err 0.19 > 1e-2"
                    results.append(r)
            docs.append({
                "format": "qgmm-run", "version": 1,
                "uuid": str(uuidlib.UUID(int=rnd.getrandbits(128), version=4)),
                "suite": "nightly", "reason": "nightly",
                "started_at": iso(start), "finished_at": iso(start + 540),
                "runner": "qgmm-bench", "runner_version": "0.1.0",
                "env": {"build_type": "RelWithDebInfo", "compiler": "GNU 12.2.0"},
                "machine": {k: m[k] for k in ("hostname", "cpu", "os", "cores", "memory_bytes")},
                "revision": {"sha": _rev(ri), "commit_time": iso(start - 3600),
                             "subject": "change %d: tune kernels" % ri, "branch": "main", "dirty": False},
                "contexts": ctxs, "results": results})
    return docs


HOSTILE = "<script>alert('x')</script>\"'; DROP TABLE run; --"


def hostile_doc(t0=1795000000):
    """A run whose every name field carries script and SQL injection text."""
    return {
        "format": "qgmm-run", "version": 1, "uuid": "00000000-0000-4000-8000-00000000bad1",
        "suite": "smoke", "reason": HOSTILE,
        "started_at": iso(t0 + 30 * 86400), "finished_at": iso(t0 + 30 * 86400 + 5),
        "runner": "qgmm-bench", "runner_version": "0.1.0", "env": {"note": HOSTILE},
        "machine": {"hostname": "evil<img src=x onerror=alert(1)>", "cpu": HOSTILE},
        "revision": {"sha": "unknown", "subject": HOSTILE, "branch": "</title><script>alert(2)</script>"},
        "contexts": [{"backend": "cpu<b>", "device": {"name": "dev\"><svg onload=alert(3)>", "kind": "cpu"},
                      "describe": HOSTILE}],
        "results": [{"context": 0, "benchmark": "bench<script>",
                     "params": {"variant": "<script>alert(4)</script>", "m": 1},
                     "label": "<script>alert(5)</script>", "shape": "1x1'--", "status": "error",
                     "verdict": "unchecked", "message": "<iframe src=javascript:alert(6)>",
                     "samples_us": []}],
    }


def add_regressions(db):
    """The rows `qgmm-bench gate` would write for the fixture (it has no ingest route)."""
    con = sqlite3.connect(db)
    cur = con.cursor()
    now = int(time.time())

    def series_id(bench, backend, recipe_or_none=None):
        q = ("SELECT s.id FROM series s WHERE s.benchmark = ? AND s.backend = ? "
             "AND s.device_id IN (SELECT id FROM device WHERE name LIKE '%H100%')")
        args = [bench, backend]
        if recipe_or_none:
            q += " AND s.params LIKE ?"
            args.append('%"recipe":"' + recipe_or_none + '"%')
        return cur.execute(q, args).fetchone()[0]

    def run_of(series, newest=True):
        return cur.execute("SELECT x.run_id, x.id, x.median_us FROM result x JOIN run r ON r.id = x.run_id "
                           "WHERE x.series_id = ? ORDER BY r.started_at %s LIMIT 1"
                           % ("DESC" if newest else "ASC"), (series,)).fetchone()

    rev = lambda run: cur.execute("SELECT revision_id FROM run WHERE id = ?", (run,)).fetchone()[0]
    s1 = series_id("quantize_mxfp8", "cuda")
    run, res, med = run_of(s1)
    cur.execute("INSERT INTO regression (series_id, run_id, result_id, kind, severity, baseline_runs, "
                "baseline_median_us, current_median_us, change, threshold, noise, p_value, "
                "first_bad_revision_id, reason, status, detected_at, updated_at) "
                "VALUES (?, ?, ?, 'perf', 'fail', 5, ?, ?, 0.25, 0.05, 0.01, 0.0004, ?, "
                "'median 25 % above the 5-run baseline (threshold 5 %)', 'detected', ?, ?)",
                (s1, run, res, med / 1.25, med, rev(run), now, now))
    s2 = series_id("grouped_gemm", "vulkan", "fp8_rowwise")
    row = cur.execute("SELECT x.run_id, x.id FROM result x WHERE x.series_id = ? AND x.verdict = 'fail'",
                      (s2,)).fetchone()
    cur.execute("INSERT INTO regression (series_id, run_id, result_id, kind, severity, reason, status, "
                "note, first_bad_revision_id, detected_at, updated_at) VALUES (?, ?, ?, 'numerics', "
                "'fail', 'rel_err 0.19 > 1e-2', 'fixed', 'fixed by the next revision', ?, ?, ?)",
                (s2, row[0], row[1], rev(row[0]), now - 86400, now))
    con.commit()
    con.close()


def build_fixture(dash, db, workdir):
    """Creates the store through the dashboard itself (token add creates the schema, runs
    go through POST /api/v1/runs), then adds the gate's regression rows."""
    if os.path.exists(db):
        os.remove(db)
    tok = add_token(dash, db, "fixture")
    srv = Server(dash, db, workdir, extra=("--quiet",))
    try:
        docs = fixture_docs() + [hostile_doc()]
        for d in docs:
            st, j = srv.post_run(d, tok)
            if st != 201:
                raise RuntimeError("fixture ingest failed: %s %s" % (st, j))
    finally:
        srv.stop()
    add_regressions(db)
    return docs, tok
