#!/usr/bin/env python3
"""qgmm-dash at the limits the ingest accepts, and against what a store or a request may hold
(issue 27 items 8, 9, 10, 12).

  test_limits.py --dash BIN --bench BIN --workdir DIR

- paths: a decoded NUL or control byte is 400 (JSON on /api/), routes match the exact path;
- one document the runner's validator refuses is refused by the ingest with the same field,
  and JSON answers stay valid JSON whatever bytes the store holds;
- a read-only store: views answer, ingest says the store is read-only; an unrelated SQLite
  file is not a store;
- one run of 150,000 results: matrix, run and compare pages and their API answers are
  paginated, small, and every JSON route answers JSON."""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid as uuidlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402

check = dashlib.check


def is_json(data):
    try:
        json.loads(data)
        return True
    except ValueError:
        return False


def doc(n_results=3, host="limits-host", uid=None, t="2026-11-22T15:40:00Z"):
    return {
        "format": "qgmm-run", "version": 1, "uuid": uid or str(uuidlib.uuid4()), "suite": "limits",
        "started_at": t, "finished_at": t, "runner": "qgmm-bench", "runner_version": "0.1.0",
        "machine": {"hostname": host, "cpu": "Test CPU"}, "revision": {"sha": "unknown"},
        "contexts": [{"backend": "cpu", "device": {"name": "Test CPU", "kind": "cpu"}}],
        "results": [{"context": 0, "benchmark": "b", "params": {"i": i}, "status": "ok", "verdict": "pass",
                     "samples_us": [1.0 + i % 7]} for i in range(n_results)],
    }


def test_paths(srv):
    for path in ("/api/v1/health%00xyz", "/api/v1/overview%00", "/api/v1/runs%0a"):
        st, hd, body = srv.request("GET", path)
        check(st == 400 and is_json(body) and "error" in json.loads(body), "%s is a JSON 400 (%s %r)" % (path, st, body[:80]))
    for path in ("/static/app.js%00.css", "/runs%00", "/matrix%0d%0aX:%20y"):
        st, hd, body = srv.request("GET", path)
        check(st == 400 and b"console" not in body, "%s is 400 (%s)" % (path, st))
    st, hd, body = srv.request("GET", "/api/v1/health")
    check(st == 200, "the exact path still answers")
    st, hd, body = srv.request("GET", "/static/app.js")
    check(st == 200 and hd.get("content-type", "").startswith("text/javascript"), "app.js still served")


def test_one_validator(srv, a, db, tok):
    """The documents qgmm-bench import used to accept and the ingest refused: both refuse
    them now, naming the same field; and whatever bytes a store holds, answers parse."""
    base = json.dumps(doc(1, uid="8c5a0a3e-3f51-4d8e-9a57-2f4ad1c3b0aa")).encode()
    bad = [("invalid UTF-8", base.replace(b'"unknown"}', b'"unknown", "subject": "x\xff\xfey"}'), None),
           ("100 KB subject", base.replace(b'"unknown"}', b'"unknown", "subject": "' + b"s" * 102400 + b'"}'),
            "revision.subject"),
           ("1 MB hostname", base.replace(b"limits-host", b"h" * (1 << 20)), "machine.hostname")]
    for name, body, field in bad:
        st, j = srv.post_run(None, tok, raw=body)
        check(st == 400 and j and j.get("field") == field, "ingest refuses %s naming %s (%s %s)"
              % (name, field, st, str(j)[:120]))
        if a.bench:
            path = os.path.join(a.workdir, "bad.json")
            open(path, "wb").write(body)
            p = subprocess.run([a.bench, "import", "--db", os.path.join(a.workdir, "import.db"), path],
                               capture_output=True, text=True, errors="replace")
            check(p.returncode == 1 and "nothing written" in p.stderr and (field or "malformed") in p.stderr,
                  "qgmm-bench import refuses %s naming %s (%d %s)" % (name, field, p.returncode, p.stderr[:160]))
    st, j = srv.post_run(json.loads(base), tok)
    check(st == 201, "the valid document is stored (%s)" % st)
    # A store written by an older runner may hold any bytes: the answers stay JSON.
    con = sqlite3.connect(db)
    con.execute("UPDATE machine SET hostname = CAST(X'6869FF2D80C0AF' AS TEXT), "
                "cpu = CAST(X'C3' AS TEXT) WHERE hostname = 'limits-host'")
    con.commit()
    con.close()
    for path in ("/api/v1/runs", "/api/v1/runs/8c5a0a3e-3f51-4d8e-9a57-2f4ad1c3b0aa", "/api/v1/overview"):
        st, hd, body = srv.request("GET", path)
        check(st == 200 and is_json(body), "%s is valid JSON over invalid stored UTF-8 (%s)" % (path, st))
    st, j = srv.get_json("/api/v1/runs")
    hosts = [r["hostname"] for r in j["runs"]]
    check("hi\ufffd-\ufffd\ufffd\ufffd" in hosts, "each invalid byte is written as U+FFFD (%r)" % hosts)


def as_nobody(a, name):
    """A wrapper that runs qgmm-dash as an unprivileged user when the test runs as root (root
    writes a 0444 file anyway), or None when that is not possible."""
    if os.geteuid() != 0:
        return a.dash
    if not shutil.which("setpriv"):
        return None
    path = os.path.join(a.workdir, name)
    with open(path, "w") as f:
        f.write('#!/bin/sh\nexec setpriv --reuid 65534 --regid 65534 --clear-groups "%s" "$@"\n' % a.dash)
    os.chmod(path, 0o755)
    return path


def test_store_access(a, db, tok):
    """Views open the store read-only; ingest on a read-only store says so; a SQLite file
    that is not a store is refused and left as it was."""
    rodir = os.path.join(a.workdir, "ro")
    os.makedirs(rodir)
    ro = os.path.join(rodir, "results.db")
    src, dst = sqlite3.connect(db), sqlite3.connect(ro)
    src.backup(dst)
    src.close()
    dst.execute("PRAGMA journal_mode=WAL")
    dst.close()
    os.chmod(ro, 0o444)
    os.chmod(rodir, 0o555)
    dash = as_nobody(a, "dash-nobody.sh")
    if dash is None:
        print("test_limits: no setpriv to drop root; read-only store part skipped")
    else:
        srv = dashlib.Server(dash, ro, a.workdir, extra=("--quiet",))
        try:
            for path in ("/api/v1/runs", "/api/v1/overview", "/api/v1/matrix"):
                st, hd, body = srv.request("GET", path)
                check(st == 200 and is_json(body), "%s on a read-only store is 200 (%s %r)" % (path, st, body[:160]))
            st, hd, body = srv.request("GET", "/")
            check(st == 200, "overview page on a read-only store (%s)" % st)
            st, j = srv.post_run(doc(1), tok)
            check(st == 503 and j and "read-only" in j["error"] and "token" not in j["error"],
                  "ingest on a read-only store says so (%s %s)" % (st, j))
        finally:
            srv.stop()
        check(sorted(os.listdir(rodir)) == ["results.db"], "nothing written beside the read-only store: %s"
              % os.listdir(rodir))
    os.chmod(rodir, 0o755)
    os.chmod(ro, 0o644)

    foreign = os.path.join(a.workdir, "foreign.db")
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT)")
    con.execute("INSERT INTO notes(text) VALUES('mine')")
    con.commit()
    con.close()
    before = open(foreign, "rb").read()
    srv = dashlib.Server(a.dash, foreign, a.workdir, extra=("--quiet",))
    try:
        st, j = srv.get_json("/api/v1/overview")
        check(st == 503 and j["store"] == "foreign" and "not a qgmm results store" in j["error"],
              "a foreign file is not a store (%s %s)" % (st, j))
        st, j = srv.post_run(doc(1), tok)
        check(st == 503, "no ingest into a foreign file (%s)" % st)
    finally:
        srv.stop()
    p = subprocess.run([a.dash, "--db", foreign, "token", "add", "x"], capture_output=True, text=True)
    check(p.returncode != 0, "token add refuses a foreign file (%d %s)" % (p.returncode, p.stderr))
    check(open(foreign, "rb").read() == before, "the foreign file is unchanged")


def test_big_run(srv, tok, bench, workdir):
    """One valid upload of 150,000 results (14 MiB: under the body cap and the result
    limit): the views it feeds stay paginated and small, their aggregates cover every row."""
    n = 150000
    big = doc(n, host="big-host", t="2026-11-23T00:00:00Z")
    big["suite"] = "big"
    body = json.dumps(big, separators=(",", ":")).encode()
    check(len(body) < 16 << 20, "the document is under the cap (%d bytes)" % len(body))
    t0 = time.time()
    st, hd, data = srv.request("POST", "/api/v1/runs", body, {"Content-Type": "application/json",
                                                              "Authorization": "Bearer " + tok}, timeout=300)
    j = json.loads(data) if is_json(data) else {}
    check(st == 201 and j.get("results") == n, "150,000 results stored (%s %s, %.1f s)" % (st, str(j)[:100], time.time() - t0))
    uid = big["uuid"]
    limits = {"/api/v1/matrix?suite=big": 2 << 20, "/matrix?suite=big": 2 << 20,
              "/api/v1/runs/" + uid: 2 << 20, "/runs/" + uid: 2 << 20,
              "/api/v1/compare?a=%s&b=%s" % (uid, uid): 2 << 20, "/compare?a=%s&b=%s" % (uid, uid): 2 << 20,
              "/series": 2 << 20, "/api/v1/series": 2 << 20}
    for path, cap in limits.items():
        t0 = time.time()
        st, hd, data = srv.request("GET", path, timeout=120)
        check(st == 200 and len(data) < cap, "%s answers 200 in %d bytes (%s, %.1f s)" % (path, len(data), st, time.time() - t0))
    st, m = srv.get_json("/api/v1/matrix?suite=big")
    check(m["total"] == n and len(m["rows"]) == 200 and m["offset"] == 0, "matrix: first 200 of %s rows" % m.get("total"))
    check(m["columns"][0]["geomean_rows"] == n and abs(m["columns"][0]["geomean_ratio"] - 1) < 1e-12,
          "matrix geomean over every row, not the page")
    st, m2 = srv.get_json("/api/v1/matrix?suite=big&offset=149900&limit=1000")
    check(st == 200 and len(m2["rows"]) == 100 and m2["rows"][-1]["cells"], "matrix: the last page")
    st, hd, page = srv.request("GET", "/matrix?suite=big")
    check(b"offset=200&amp;limit=200" in page, "the matrix page links the next page")
    st, r = srv.get_json("/api/v1/runs/" + uid + "?limit=100&offset=1000")
    check(st == 200 and r["results_total"] == n and len(r["results"]) == 100 and r["run"]["pass"] == n,
          "run: one page of results, counts over all")
    st, sl = srv.get_json("/api/v1/series?benchmark=b&offset=1000")
    check(st == 200 and sl["total"] >= n and len(sl["series"]) == 500 and sl["offset"] == 1000,
          "series list: one page, total over all (%s)" % {k: sl.get(k) for k in ("total", "limit", "offset")})
    st, c = srv.get_json("/api/v1/compare?a=%s&b=%s" % (uid, uid))
    check(st == 200 and c["total"] == n and len(c["rows"]) == 500 and c["summary"]["same"] == n,
          "compare: one page of rows, summary over all")
    for path in ("/api/v1/matrix?limit=0", "/api/v1/runs/%s?offset=-1" % uid, "/api/v1/compare?a=%s&b=%s&limit=x" % (uid, uid)):
        st, hd, data = srv.request("GET", path)
        check(st == 400 and is_json(data) and json.loads(data).get("field", 1) is None,
              "%s is a JSON 400 in the error shape (%s %r)" % (path, st, data[:100]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dash", required=True)
    ap.add_argument("--bench")
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    db = os.path.join(a.workdir, "limits.db")
    tok = dashlib.add_token(a.dash, db, "limits")
    srv = dashlib.Server(a.dash, db, a.workdir, extra=("--quiet",))
    try:
        test_paths(srv)
        test_one_validator(srv, a, db, tok)
        test_big_run(srv, tok, a.bench, a.workdir)
    finally:
        srv.stop()
    test_store_access(a, db, tok)
    return dashlib.summary("test_limits")


if __name__ == "__main__":
    sys.exit(main())
