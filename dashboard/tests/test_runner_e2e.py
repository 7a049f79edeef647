#!/usr/bin/env python3
"""End to end with the real runner: `qgmm-bench run --suite smoke --backend cpu` fills a
store, qgmm-dash serves it, and `qgmm-bench upload` feeds a second (central) dashboard.

  test_runner_e2e.py --dash BIN --bench QGMM_BENCH --workdir DIR

Checks: the pages and API answer over the runner's store; the uploaded run is stored (201),
re-uploading is idempotent (200), uploading a run to the store it came from is 200 (the
dashboard's identity digest agrees with the runner's storage), and the central store gets
the same series fingerprints and statistics as the runner computed."""
import argparse
import hashlib
import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402

check = dashlib.check


def rows(db, q):
    con = sqlite3.connect(db)
    r = con.execute(q).fetchall()
    con.close()
    return r



def test_schema2_store(a, local):
    """A store as schema 2 left it (old triage names, the dash_token table qgmm-dash used to
    create on its own) is upgraded in place by qgmm-dash: states mapped, tokens still valid."""
    old = os.path.join(a.workdir, "v2.db")
    for s in ("", "-wal", "-shm"):
        if os.path.exists(old + s):
            os.remove(old + s)
    src, dst = sqlite3.connect(local), sqlite3.connect(old)
    src.backup(dst)
    src.close()
    schema = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ci", "schema.sql")).read()
    sec2 = schema[schema.index("-- @migration 2"):schema.index("-- @migration 3")]
    token = "qgmmdash_schema2token"
    # the copy is of a current store: take back what migrations after 2 added (to `run`, result_step)
    later = "DROP VIEW run_status; DROP TABLE result_step;" + "".join("ALTER TABLE run DROP COLUMN %s;" % c for c in (
        "state", "heartbeat_at", "runner_pid", "options", "results_expected"))
    dst.executescript(later + "DROP TABLE regression; DROP TABLE IF EXISTS dash_token;" + sec2 +
                      "CREATE TABLE dash_token ( id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token_hash TEXT "
                      "NOT NULL UNIQUE, scope TEXT NOT NULL CHECK (scope IN ('ingest','triage','all')), created_at "
                      "INTEGER NOT NULL, revoked_at INTEGER, last_used_at INTEGER) STRICT; PRAGMA user_version = 2;")
    dst.execute("INSERT INTO dash_token(name, token_hash, scope, created_at) VALUES('old', ?, 'all', 1)",
                ("sha256:" + hashlib.sha256(token.encode()).hexdigest(),))
    sids = [r[0] for r in dst.execute("SELECT series_id FROM result ORDER BY id LIMIT 2")]
    for sid, st in zip(sids, ("confirmed", "wontfix")):
        dst.execute("INSERT INTO regression(series_id, run_id, kind, severity, reason, status, detected_at, updated_at) "
                    "VALUES(?, 1, 'perf', 'fail', 'old row', ?, 1, 1)", (sid, st))
    dst.commit()
    dst.close()
    srv = dashlib.Server(a.dash, old, a.workdir, extra=("--quiet",))
    try:
        st, g = srv.get_json("/api/v1/regressions")
        got = sorted(x["status"] for x in g.get("regressions", []))
        check(st == 200 and got == ["acknowledged", "ignored"], "schema-2 store upgraded: states %s" % got)
        check(rows(old, "PRAGMA user_version")[0][0] >= 3, "user_version raised in place")
        check(any("wontfix" in x["note"] for x in g["regressions"]), "the old state kept in the note")
        rid = [x["id"] for x in g["regressions"] if x["status"] == "ignored"][0]
        st, _, _ = srv.request("POST", "/api/v1/regressions/%d" % rid, '{"status": "fixed"}',
                               {"Content-Type": "application/json", "Authorization": "Bearer " + token})
        check(st == 200 and rows(old, "SELECT status FROM regression WHERE id = %d" % rid) == [("fixed",)],
              "a token created before the migration still authorizes (%s)" % st)
    finally:
        srv.stop()

def test_interrupted_run(a):
    """A run stopped by SIGTERM is stored as interrupted: the runs list says so, and neither the
    run page nor the overview shows it as passing."""
    import signal
    import time
    db = os.path.join(a.workdir, "stopped.db")
    for delay in (0.15, 0.3, 0.5, 0.8, 1.5, 3.0):  # the run itself takes 0.6 s on an idle machine
        for s in ("", "-wal", "-shm"):
            if os.path.exists(db + s):
                os.remove(db + s)
        p = subprocess.Popen([a.bench, "run", "--suite", "smoke", "--backend", "cpu", "--filter", "recip", "--db", db,
                              "--ref-cache", "none"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGTERM)
        p.wait()
        if p.returncode == 143 and os.path.exists(db) and rows(db, "SELECT state FROM run") == [("interrupted",)]:
            break
    check(rows(db, "SELECT state FROM run") == [("interrupted",)], "a SIGTERMed run is stored as interrupted")
    (uuid,) = rows(db, "SELECT uuid FROM run")[0]
    srv = dashlib.Server(a.dash, db, a.workdir, extra=("--quiet",))
    try:
        st, runs = srv.get_json("/api/v1/runs")
        check(st == 200 and runs["runs"][0]["state"] == "interrupted", "runs list: state interrupted")
        st, run = srv.get_json("/api/v1/runs/" + uuid)
        check(st == 200 and run["run"]["state"] == "interrupted" and run["run"]["gate"] == "incomplete",
              "run page: interrupted, gate incomplete")
        st, ov = srv.get_json("/api/v1/overview")
        check(st == 200 and all(x["gate"] == "incomplete" for x in ov["latest"]), "overview: gate incomplete")
        st, hd, body = srv.request("GET", "/runs")
        check(st == 200 and b">interrupted<" in body, "runs page: an interrupted badge")
    finally:
        srv.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dash", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    local, central = os.path.join(a.workdir, "local.db"), os.path.join(a.workdir, "central.db")
    for f in (local, central):
        for s in ("", "-wal", "-shm"):
            if os.path.exists(f + s):
                os.remove(f + s)
    env = dict(os.environ)
    r = subprocess.run([a.bench, "run", "--suite", "smoke", "--backend", "cpu", "--db", local,
                        "--budget-ms", "20", "--reason", "ci"], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print("SKIP: qgmm-bench run failed here (rc %d): %s" % (r.returncode, r.stderr[-500:]))
        sys.exit(77)
    (uuid,) = rows(local, "SELECT uuid FROM run")[0]
    # The gate writes its flags (numerics failures at least) into the regression table.
    gate = subprocess.run([a.bench, "gate", "--db", local], capture_output=True, text=True)
    check(gate.returncode in (0, 1), "qgmm-bench gate ran (rc %d)" % gate.returncode)
    n_reg = rows(local, "SELECT count(*) FROM regression")[0][0]
    cp = subprocess.run([a.bench, "changepoints", "--db", local], capture_output=True, text=True)
    check(cp.returncode == 0 and "histories analysed" in cp.stdout,
          "qgmm-bench changepoints over the store (rc %d): %s" % (cp.returncode, (cp.stdout + cp.stderr)[-300:]))
    test_schema2_store(a, local)
    test_interrupted_run(a)
    tok_local = dashlib.add_token(a.dash, local, "self")
    tok_central = dashlib.add_token(a.dash, central, "runner-1")

    srv = dashlib.Server(a.dash, local, a.workdir, extra=("--quiet",))
    try:
        for p in ["/", "/matrix", "/runs", "/runs/" + uuid, "/series", "/regressions"]:
            st, hd, body = srv.request("GET", p)
            check(st == 200, "runner store: %s answers 200 (%s)" % (p, st))
        st, run = srv.get_json("/api/v1/runs/" + uuid)
        n = rows(local, "SELECT count(*) FROM result")[0][0]
        check(st == 200 and len(run["results"]) == n, "run detail shows the runner's %d results" % n)
        st, m = srv.get_json("/api/v1/matrix")
        check(st == 200 and m["suite"] == "smoke" and len(m["columns"]) == 1, "matrix over the smoke run")
        st, g = srv.get_json("/api/v1/regressions")
        check(st == 200 and len(g["regressions"]) == n_reg, "the gate's %d regression rows are listed" % n_reg)
        if n_reg:
            ttok = dashlib.add_token(a.dash, local, "triage", "triage")
            rid = g["regressions"][0]["id"]
            st, _, _ = srv.request("POST", "/api/v1/regressions/%d" % rid, '{"status": "acknowledged"}',
                                   {"Content-Type": "application/json", "Authorization": "Bearer " + ttok})
            check(st == 200 and rows(local, "SELECT status FROM regression WHERE id = %d" % rid) == [("acknowledged",)],
                  "triage of a gate-written regression")
            st, hd, body = srv.request("GET", "/regressions")
            check(st == 200 and b"acknowledged" in body, "regressions page shows the triage state")
        up = subprocess.run([a.bench, "upload", srv.base + "/api/v1/runs", "--token", tok_local, "--db", local,
                             "--run", "latest"], capture_output=True, text=True)
        check(up.returncode == 0 and "already_present" in up.stdout + up.stderr,
              "upload to the run's own store is 200 already_present: %s" % (up.stdout + up.stderr)[-300:])
    finally:
        srv.stop()

    srv = dashlib.Server(a.dash, central, a.workdir, extra=("--quiet",))
    try:
        cmd = [a.bench, "upload", srv.base + "/api/v1/runs", "--token", tok_central, "--db", local, "--run", "latest"]
        up = subprocess.run(cmd, capture_output=True, text=True)
        check(up.returncode == 0 and "HTTP 201" in up.stdout + up.stderr, "upload stores the run (201): %s" % (up.stdout + up.stderr)[-300:])
        up = subprocess.run(cmd, capture_output=True, text=True)
        check(up.returncode == 0 and "HTTP 200" in up.stdout + up.stderr, "second upload is 200")
        bad = subprocess.run(cmd[:3] + ["--token", "wrong"] + cmd[5:], capture_output=True, text=True)
        check(bad.returncode != 0, "upload with a wrong token fails")
    finally:
        srv.stop()
    q = "SELECT s.fingerprint, x.median_us, x.q1_us, x.q3_us, x.gbps, x.tflops, x.n_samples FROM result x " \
        "JOIN series s ON s.id = x.series_id ORDER BY s.fingerprint"
    def close(x, y):
        if isinstance(x, float) and isinstance(y, float):
            return abs(x - y) <= 1e-12 * max(abs(x), abs(y))  # rates: the last ulp may differ
        return x == y
    ra, rb = rows(local, q), rows(central, q)
    check(len(ra) == len(rb) and all(close(x, y) for u, v in zip(ra, rb) for x, y in zip(u, v)),
          "central store has the runner's fingerprints and statistics")
    check(rows(central, "SELECT source FROM run") == [("upload",)], "central run is marked source=upload")
    sys.exit(dashlib.summary("dash runner e2e"))


if __name__ == "__main__":
    main()
