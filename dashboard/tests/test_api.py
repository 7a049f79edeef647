#!/usr/bin/env python3
"""API and security tests of qgmm-dash against a server on 127.0.0.1 over a fixture store.

  test_api.py --dash BIN --workdir DIR

Covers every /api/v1 route's JSON shape, ingest rules (201/200/409/400/401/403/413/415),
malformed and hostile JSON with nothing written, escaping of hostile strings in every page,
hardening headers, triage, missing/empty stores, and 8 concurrent ingesters x 50 runs while
the views keep answering."""
import argparse
import copy
import json
import os
import re
import sqlite3
import sys
import threading
import time
import uuid as uuidlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402

check = dashlib.check


def counts(db):
    con = sqlite3.connect(db)
    r = {t: con.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
         for t in ("run", "result", "sample", "series", "machine", "device", "context", "revision")}
    con.close()
    return r


def small_doc(host="load-host", n_results=3, seed=0):
    return {
        "format": "qgmm-run", "version": 1, "uuid": str(uuidlib.uuid4()), "suite": "load",
        "started_at": "2026-11-22T15:40:00Z", "finished_at": "2026-11-22T15:40:09.123456Z",
        "runner": "qgmm-bench", "runner_version": "0.1.0",
        "machine": {"hostname": host, "cpu": "Test CPU"},
        "revision": {"sha": "unknown"},
        "contexts": [{"backend": "cpu", "device": {"name": "Test CPU", "kind": "cpu"}}],
        "results": [{"context": 0, "benchmark": "quantize_fp8_rowwise",
                     "params": {"m": 1024 * (i + 1), "k": 2048, "variant": "rowwise"},
                     "status": "ok", "verdict": "pass", "samples_us": [10.0 + i, 11.0 + i, 12.5 + seed],
                     "bytes": 6295552} for i in range(n_results)],
    }


HEADERS = ("content-security-policy", "x-content-type-options")


def hardened(hd):
    return all(h in hd for h in HEADERS) and hd.get("x-content-type-options") == "nosniff" and \
        "access-control-allow-origin" not in hd


def test_shapes(srv, docs):
    st, o = srv.get_json("/api/v1/overview")
    check(st == 200 and set(o) >= {"store", "latest", "regressions", "families"}, "overview shape")
    check(o["store"]["runs"] == len(docs), "overview counts every run (%s)" % o["store"]["runs"])
    backends = {x["backend"] for x in o["latest"]}
    check({"cpu", "cuda", "vulkan", "hip", "torch"} <= backends, "overview has every backend: %s" % backends)
    cuda = [x for x in o["latest"] if x["backend"] == "cuda"][0]
    check(cuda["gate"] == "fail" and cuda["regressions_fail"] == 1, "cuda gate fails on its open regression")
    check(all(f["points"] for f in o["families"]), "every family has trend points")

    st, m = srv.get_json("/api/v1/matrix?suite=nightly")
    check(st == 200 and m["suite"] == "nightly", "matrix answers for the nightly suite")
    cols = {c["key"]: c for c in m["columns"]}
    check(any(c["backend"] == "torch" for c in cols.values()), "matrix has a torch peer column")
    check(m["ref"] in cols and cols[m["ref"]]["backend"] == "torch", "default reference is the torch peer")
    check(abs(cols[m["ref"]]["geomean_ratio"] - 1.0) < 1e-12, "reference geomean is 1")
    ops = [r for r in m["rows"] if r["role"] == "case"]
    check(len(ops) == 5 and all("cells" in r for r in ops), "matrix has the 5 op rows")
    for r in ops:
        for k, c in r["cells"].items():
            if c.get("ratio") is not None:
                ref = r["cells"][m["ref"]]
                check(abs(c["ratio"] - ref["median_us"] / c["median_us"]) < 1e-9, "ratio = ref/cell")
    st, e = srv.get_json("/api/v1/matrix?ref=nope")
    check(st == 400 and "ref" in e["error"], "matrix refuses an unknown reference column")
    other = [k for k, c in cols.items() if c["backend"] == "cuda"][0]
    st, m2 = srv.get_json("/api/v1/matrix?suite=nightly&ref=" + other)
    check(st == 200 and m2["ref"] == other, "matrix takes ?ref=")

    st, sl = srv.get_json("/api/v1/series?benchmark=grouped_gemm")
    check(st == 200 and sl["series"] and all(x["benchmark"] == "grouped_gemm" for x in sl["series"]),
          "series list filters by benchmark")
    sid = sl["series"][0]["series_id"]
    st, s = srv.get_json("/api/v1/series/%d" % sid)
    check(st == 200 and set(s) >= {"series", "points", "siblings", "regressions"}, "series shape")
    check(len(s["points"]) == sl["series"][0]["results"], "series returns every point")
    check(all(s["points"][i]["started_at"] <= s["points"][i + 1]["started_at"]
              for i in range(len(s["points"]) - 1)), "series points oldest first")
    p = s["points"][-1]
    check(set(p) >= {"run", "revision", "median_us", "q1_us", "q3_us", "min_us", "verdict", "status"},
          "series point fields")
    st, _ = srv.get_json("/api/v1/series/%d?limit=2" % sid)
    st2, lim = srv.get_json("/api/v1/series/%d?limit=2" % sid)
    check(st2 == 200 and len(lim["points"]) == 2 and lim["points"][-1]["run"] == p["run"], "series ?limit keeps the newest")
    check(srv.get_json("/api/v1/series/999999")[0] == 404, "unknown series is 404")
    check(srv.get_json("/api/v1/series/abc")[0] == 400, "non-numeric series id is 400")
    check(srv.get_json("/api/v1/series/1;DROP")[0] == 400, "injected series id is 400")

    st, rl = srv.get_json("/api/v1/runs?limit=5")
    check(st == 200 and len(rl["runs"]) == 5 and rl["total"] == len(docs), "runs list with limit")
    st, rl2 = srv.get_json("/api/v1/runs?limit=5&offset=5")
    check(rl2["runs"][0]["run"] != rl["runs"][0]["run"], "runs list pages with offset")
    check(srv.get_json("/api/v1/runs?limit=0")[0] == 400, "runs limit 0 refused")
    uid = docs[4]["uuid"]
    st, r = srv.get_json("/api/v1/runs/" + uid)
    check(st == 200 and r["run"]["run"] == uid and len(r["results"]) == len(docs[4]["results"]),
          "run detail has every result")
    check(len(r["contexts"]) == len(docs[4]["contexts"]), "run detail has every context")
    check(srv.get_json("/api/v1/runs/" + str(uuidlib.uuid4()))[0] == 404, "unknown run is 404")
    check(srv.get_json("/api/v1/runs/ABC")[0] == 400, "malformed run uuid is 400")

    same_host = [d for d in docs if d["machine"]["hostname"] == "mi300x-1"]  # has an unsupported case
    a, b = same_host[-2]["uuid"], same_host[-1]["uuid"]
    st, c = srv.get_json("/api/v1/compare?a=%s&b=%s" % (a, b))
    check(st == 200 and set(c) >= {"a", "b", "summary", "rows"}, "compare shape")
    check(all(x["verdict"] in ("faster", "slower", "same", "numerics_fail", "numerics_fixed", "not_ok",
                               "now_ok", "not_run", "only_a", "only_b") for x in c["rows"]), "compare verdicts")
    unsup = [x for x in c["rows"] if x["a_status"] == "unsupported"]
    check(len(unsup) == 1 and unsup[0]["verdict"] == "not_run", "unsupported in both runs is not_run, not a failure")
    check(srv.get_json("/api/v1/compare?a=%s" % a)[0] == 400, "compare needs both runs")

    st, g = srv.get_json("/api/v1/regressions")
    check(st == 200 and len(g["regressions"]) == 2 and "states" in g, "regressions list")
    check(g["states"] == ["detected", "acknowledged", "fixed", "ignored"], "the issue's triage states: %s" % g["states"])
    st, g1 = srv.get_json("/api/v1/regressions?status=detected")
    check(len(g1["regressions"]) == 1 and g1["regressions"][0]["kind"] == "perf", "regressions filter by status")
    check(srv.get_json("/api/v1/regressions?status=bogus")[0] == 400, "unknown status filter is 400")
    check(srv.get_json("/api/v1/regressions?status=open")[0] == 400, "the old state names are gone (400)")
    st, gk = srv.get_json("/api/v1/regressions?kind=changepoint")
    check(st == 200 and gk["regressions"] == [], "kind=changepoint filter (none in the fixture)")
    st, _, page = srv.request("GET", "/regressions")
    fb = g1["regressions"][0]["first_bad_revision"]
    check(st == 200 and b"introduced in" in page and fb and fb[:10].encode() in page,
          "regressions page shows the revision the regression was introduced in")
    rid = g1["regressions"][0]["id"]
    st, one = srv.get_json("/api/v1/regressions/%d" % rid)
    check(st == 200 and one["id"] == rid and one["change"] == 0.25, "one regression")
    st, h = srv.get_json("/api/v1/health")
    check(st == 200 and h["ok"] is True, "health")
    st, nf = srv.get_json("/api/v1/nope")
    check(st == 404 and "error" in nf, "unknown API route is JSON 404")
    return rid


def test_headers_and_methods(srv):
    for path in ["/", "/matrix", "/series", "/runs", "/regressions", "/api/v1/overview",
                 "/static/app.js", "/static/uplot.min.js", "/nope", "/api/v1/nope",
                 "/static/../../etc/passwd", "/static/schema.sql", "/series/abc"]:
        st, hd, body = srv.request("GET", path)
        check(hardened(hd), "hardening headers on GET %s (%d)" % (path, st))
        if path.startswith("/static/..") or path.endswith("schema.sql"):
            check(st == 404 and b"root:" not in body, "no file served for %s" % path)
    st, hd, body = srv.request("GET", "/")
    csp = hd["content-security-policy"]
    check("script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp,
          "CSP forbids inline script and framing")
    check(b"<script>" not in body.replace(b'<script src="/static/', b""), "no inline script in pages")
    check(hd.get("x-frame-options") == "DENY" and hd.get("referrer-policy") == "no-referrer",
          "frame and referrer headers")
    for method, path in [("DELETE", "/api/v1/runs"), ("PUT", "/"), ("OPTIONS", "/api/v1/runs"),
                         ("POST", "/"), ("POST", "/matrix")]:
        st, hd, _ = srv.request(method, path)
        check(st == 405 and hardened(hd), "%s %s is 405 with headers (%d)" % (method, path, st))
    st, hd, body = srv.request("GET", "/static/uplot.min.js")
    check(st == 200 and hd["content-type"].startswith("text/javascript") and body.startswith(b"/*! https://github.com/leeoniya/uPlot"),
          "uPlot served from the binary")


def test_ingest(srv, db, dash, tok):
    before = counts(db)
    doc = small_doc("ingest-host")
    st, j = srv.post_run(doc, None)
    check(st == 401, "ingest without a token is 401 (%s)" % st)
    st, j = srv.post_run(doc, "qgmmdash_" + "0" * 48)
    check(st == 401, "unknown token is 401")
    st, hd, _ = srv.request("POST", "/api/v1/runs", json.dumps(doc), {"Content-Type": "application/json"})
    check(hd.get("www-authenticate", "").startswith("Bearer"), "401 names the Bearer scheme")
    triage_tok = dashlib.add_token(dash, db, "triager", "triage")
    st, j = srv.post_run(doc, triage_tok)
    check(st == 403, "triage-scope token cannot ingest (403, got %s)" % st)
    revoked = dashlib.add_token(dash, db, "to-revoke", "ingest")
    import subprocess
    subprocess.run([dash, "--db", db, "token", "revoke", "to-revoke"], check=True, capture_output=True)
    st, j = srv.post_run(doc, revoked)
    check(st == 401 and "revoked" in j["error"], "revoked token is 401")
    lst = subprocess.run([dash, "--db", db, "token", "list"], check=True, capture_output=True, text=True).stdout
    check("to-revoke" in lst and "revoked" in lst and revoked not in lst, "token list shows state, never the token")
    con = sqlite3.connect(db)
    hashes = [r[0] for r in con.execute("SELECT token_hash FROM dash_token")]
    con.close()
    check(all(h.startswith("sha256:") and len(h) == 71 for h in hashes) and tok not in str(hashes),
          "tokens stored as sha256 hashes only")
    st, j = srv.post_run(doc, tok, ctype="text/plain")
    check(st == 415, "non-JSON content type is 415")
    check(counts(db) == before, "refused requests wrote nothing")

    st, j = srv.post_run(doc, tok)
    check(st == 201 and j["status"] == "stored" and j["uuid"] == doc["uuid"], "new run is 201 stored")
    after = counts(db)
    check(after["run"] == before["run"] + 1 and after["result"] == before["result"] + 3 and
          after["sample"] == before["sample"] + 9, "run, results and samples written")
    st, j = srv.post_run(doc, tok)
    check(st == 200 and j["status"] == "already_present", "same run again is 200")
    reordered = copy.deepcopy(doc)
    reordered["results"].reverse()
    reordered["env"] = {"extra": "ignored for identity"}
    st, j = srv.post_run(reordered, tok)
    check(st == 200, "same content in another order is still 200 (%s)" % st)
    changed = copy.deepcopy(doc)
    changed["results"][0]["samples_us"][0] += 1
    st, j = srv.post_run(changed, tok)
    check(st == 409 and j["field"] == "uuid", "same uuid, different samples is 409")
    changed = copy.deepcopy(doc)
    changed["suite"] = "other"
    check(srv.post_run(changed, tok)[0] == 409, "same uuid, different suite is 409")
    check(counts(db) == after, "200/409 wrote nothing")
    st, r = srv.get_json("/api/v1/runs/" + doc["uuid"])
    res = r["results"][0]
    check(res["median_us"] == 11.0 and res["n_samples"] == 3 and abs(res["gbps"] - 6295552 / 11.0 / 1e3) < 1e-9,
          "stats and rates recomputed from samples")

    # field-by-field validation: (mutation, expected field)
    def mut(fn):
        d = small_doc("bad-host")
        fn(d)
        return d
    cases = [
        (mut(lambda d: d.pop("uuid")), "uuid"),
        (mut(lambda d: d.update(uuid="NOT-A-UUID")), "uuid"),
        (mut(lambda d: d.update(format="other")), "format"),
        (mut(lambda d: d.update(version=2)), "version"),
        (mut(lambda d: d.update(version="1")), "version"),
        (mut(lambda d: d.update(started_at="yesterday")), "started_at"),
        (mut(lambda d: d.update(finished_at="2026-11-22T15:39:00Z")), "finished_at"),
        (mut(lambda d: d.update(started_at="2026-02-30T00:00:00Z")), "started_at"),
        (mut(lambda d: d["machine"].pop("hostname")), "machine.hostname"),
        (mut(lambda d: d["machine"].update(cores=2.5)), "machine.cores"),
        (mut(lambda d: d["revision"].update(sha="xyz")), "revision.sha"),
        (mut(lambda d: d["revision"].update(dirty="no")), "revision.dirty"),
        (mut(lambda d: d.update(contexts={})), "contexts"),
        (mut(lambda d: d["contexts"][0]["device"].update(kind="tpu")), "contexts[0].device.kind"),
        (mut(lambda d: d["contexts"].append(copy.deepcopy(d["contexts"][0]))), "contexts[1]"),
        (mut(lambda d: d["results"][1].update(context=3)), "results[1].context"),
        (mut(lambda d: d["results"][0]["samples_us"].__setitem__(1, "x")), "results[0].samples_us[1]"),
        (mut(lambda d: d["results"][0]["samples_us"].__setitem__(1, -1)), "results[0].samples_us[1]"),
        (mut(lambda d: d["results"][2].update(status="okay")), "results[2].status"),
        (mut(lambda d: d["results"][2].update(verdict=True)), "results[2].verdict"),
        (mut(lambda d: d["results"][0].update(samples_us=[])), "results[0].samples_us"),
        (mut(lambda d: d["results"][0]["params"].update({"Bad-Key": 1})), "results[0].params.Bad-Key"),
        (mut(lambda d: d["results"][0]["params"].update(m=1.5)), "results[0].params.m"),
        (mut(lambda d: d["results"][0]["params"].update(v='a"b')), "results[0].params.v"),
        (mut(lambda d: d["results"][0].update(numerics={"sqnr_db": "high"})), "results[0].numerics.sqnr_db"),
        (mut(lambda d: d["results"].append(copy.deepcopy(d["results"][0]))), "results[3]"),
        (mut(lambda d: d.update(env={"nested": {"x": 1}})), "env.nested"),
    ]
    for d, field in cases:
        st, j = srv.post_run(d, tok)
        check(st == 400 and j and j.get("field") == field and j["error"].startswith(field),
              "400 names %s (got %s %s)" % (field, st, j))
    check(counts(db) == after, "invalid documents wrote nothing")

    # malformed / hostile JSON
    good = json.dumps(small_doc("raw-host")).encode()
    raws = [("truncated", good[: len(good) // 2]), ("empty", b""), ("not UTF-8", good.replace(b"raw-host", b"raw-\xff\xfe")),
            ("deep nesting", b'{"format":"qgmm-run","x":' + b"[" * 100000 + b"]" * 100000 + b"}"),
            ("duplicate key", b'{"uuid":"a","uuid":"b"}'), ("NaN", b'{"version": NaN}'),
            ("huge number", b'{"version": 1e999}'), ("trailing garbage", good + b"x"),
            ("top-level array", b"[]"), ("BOM", b"\xef\xbb\xbf" + good),
            ("NUL escape", good.replace(b"raw-host", b"raw\\u0000host")),
            ("lone surrogate", good.replace(b"raw-host", b"raw\\ud800host"))]
    for name, body in raws:
        st, j = srv.post_run(None, tok, raw=body)
        check(st == 400, "%s body is 400 (got %s)" % (name, st))
    check(counts(db) == after, "malformed bodies wrote nothing")
    return after


def test_body_cap(dash, db, workdir, tok):
    srv = dashlib.Server(dash, db, workdir, extra=("--max-body", "65536", "--quiet"))
    try:
        before = counts(db)
        d = small_doc("big-host", n_results=600)
        body = json.dumps(d).encode()
        check(len(body) > 65536, "oversized body is %d bytes" % len(body))
        st, j = srv.post_run(None, tok, raw=body)
        check(st == 413, "body over the cap is 413 (got %s)" % st)
        # chunked transfer (no Content-Length): the cap holds while reading
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        c.request("POST", "/api/v1/runs", body=(body[i:i + 8192] for i in range(0, len(body), 8192)),
                  headers={"Content-Type": "application/json", "Authorization": "Bearer " + tok,
                           "Transfer-Encoding": "chunked"}, encode_chunked=True)
        r = c.getresponse()
        st, hd = r.status, dict((k.lower(), v) for k, v in r.getheaders())
        r.read()
        c.close()
        check(st == 413 and hardened(hd), "chunked body over the cap is 413 (got %s)" % st)
        st, j = srv.post_run(small_doc("small-host"), tok)
        check(st == 201, "a body under the cap still works (%s)" % st)
        after = counts(db)
        check(after["run"] == before["run"] + 1, "only the small run was written")
    finally:
        srv.stop()


def test_hostile_views(srv, db):
    bad = re.compile(rb"<script>alert|<img src=x|<svg onload|<iframe src|<b>x</b>|</title><script")
    con = sqlite3.connect(db)
    sid = con.execute("SELECT id FROM series WHERE benchmark = 'bench<script>'").fetchone()[0]
    con.close()
    pages = ["/", "/runs", "/series", "/matrix?suite=smoke", "/runs/" + dashlib.hostile_doc()["uuid"],
             "/series/%d" % sid, "/regressions", "/series?benchmark=bench%3Cscript%3E",
             "/compare?a=%s&b=%s" % (dashlib.hostile_doc()["uuid"], dashlib.hostile_doc()["uuid"])]
    for p in pages:
        st, hd, body = srv.request("GET", p)
        check(st == 200, "%s answers 200 (%s)" % (p, st))
        check(not bad.search(body), "no live markup from stored strings on %s" % p)
    st, hd, body = srv.request("GET", "/runs/" + dashlib.hostile_doc()["uuid"])
    check(b"&lt;script&gt;alert(5)&lt;/script&gt;" in body and b"DROP TABLE run; --" in body,
          "hostile strings shown escaped")
    st, hd, body = srv.request("GET", "/api/v1/runs/" + dashlib.hostile_doc()["uuid"])
    check(b"<" not in body and json.loads(body)["results"][0]["label"] == "<script>alert(5)</script>",
          "API escapes < and round-trips the string")
    st, hd, body = srv.request("GET", "/?x=<script>alert(1)</script>")
    check(not bad.search(body), "query strings are not reflected")
    check(counts(db)["run"] > 0, "SQL text in names did not drop anything")


def test_triage(srv, rid, tok, dash, db):
    body = json.dumps({"status": "acknowledged", "note": "<b>x</b> seen on two reruns"})
    hdr = {"Content-Type": "application/json"}
    st, _, _ = srv.request("POST", "/api/v1/regressions/%d" % rid, body, hdr)
    check(st == 401, "triage without a token is 401")
    st, _, _ = srv.request("POST", "/api/v1/regressions/%d" % rid, body, dict(hdr, Authorization="Bearer " + tok))
    check(st == 403, "ingest-scope token cannot triage (%s)" % st)
    ttok = dashlib.add_token(dash, db, "triage2", "triage")
    auth = dict(hdr, Authorization="Bearer " + ttok)
    st, _, _ = srv.request("POST", "/api/v1/regressions/%d" % rid, body, auth)
    check(st == 200, "triage with a triage token is 200 (%s)" % st)
    st, g = srv.get_json("/api/v1/regressions/%d" % rid)
    check(g["status"] == "acknowledged" and g["note"].startswith("<b>x</b>"), "triage state and note stored")
    st, hd, page = srv.request("GET", "/regressions")
    check(b"&lt;b&gt;x&lt;/b&gt;" in page, "triage note shown escaped")
    for bad in ("done", "confirmed", "wontfix", "open"):
        st, _, _ = srv.request("POST", "/api/v1/regressions/%d" % rid, json.dumps({"status": bad}), auth)
        check(st == 400, "unknown triage state %r is 400" % bad)
    st, _, _ = srv.request("POST", "/api/v1/regressions/%d" % rid, json.dumps({"status": "ignored"}), auth)
    check(st == 200 and srv.get_json("/api/v1/regressions/%d" % rid)[1]["status"] == "ignored", "triage to ignored")
    st, _, _ = srv.request("POST", "/api/v1/regressions/999999", json.dumps({"status": "fixed"}), auth)
    check(st == 404, "triage of an unknown regression is 404")
    st, _, _ = srv.request("POST", "/api/v1/regressions/%d" % rid, json.dumps({"status": "detected"}), auth)
    check(st == 200, "triage back to detected")


def test_load(srv, db, tok):
    before = counts(db)["run"]
    errors, lat, stop = [], [], threading.Event()

    def ingester(k):
        for i in range(50):
            st, j = srv.post_run(small_doc("load-%d" % k, seed=i), tok)
            if st != 201:
                errors.append((k, i, st, j))

    def reader():
        while not stop.is_set():
            t = time.time()
            st, _, _ = srv.request("GET", "/api/v1/overview")
            lat.append(time.time() - t)
            if st != 200:
                errors.append(("view", st))

    rd = threading.Thread(target=reader)
    rd.start()
    t0 = time.time()
    th = [threading.Thread(target=ingester, args=(k,)) for k in range(8)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    wall = time.time() - t0
    stop.set()
    rd.join()
    n = counts(db)["run"] - before
    check(not errors, "8 concurrent ingesters x 50 runs without an error (%s)" % errors[:3])
    check(n == 400, "all 400 runs stored (%d)" % n)
    check(len(lat) > 0 and max(lat) < 10, "views kept answering during ingest (%d reads, max %.2fs)" %
          (len(lat), max(lat) if lat else -1))
    lat.sort()
    print("load: 400 runs by 8 ingesters in %.2fs (%.0f runs/s); %d overview reads meanwhile, "
          "median %.1f ms, max %.1f ms" % (wall, 400 / wall, len(lat), 1e3 * lat[len(lat) // 2], 1e3 * lat[-1]))


def test_missing_and_empty(dash, workdir):
    missing = os.path.join(workdir, "does-not-exist.db")
    srv = dashlib.Server(dash, missing, workdir, extra=("--quiet",))
    try:
        st, hd, body = srv.request("GET", "/")
        check(st == 503 and b"No results database" in body and hardened(hd), "missing store: clear page")
        st, j = srv.get_json("/api/v1/overview")
        check(st == 503 and j["store"] == "missing", "missing store: API says so")
        st, j = srv.post_run(small_doc(), "qgmmdash_x")
        check(st == 503 and not os.path.exists(missing), "ingest does not create a store by itself")
    finally:
        srv.stop()
    empty = os.path.join(workdir, "empty.db")
    if os.path.exists(empty):
        os.remove(empty)
    sqlite3.connect(empty).close()
    open(empty, "ab").close()
    srv = dashlib.Server(dash, empty, workdir, extra=("--quiet",))
    try:
        st, hd, body = srv.request("GET", "/matrix")
        check(st == 503 and b"no qgmm results yet" in body, "empty store: clear page (%s)" % st)
        st, j = srv.get_json("/api/v1/runs")
        check(st == 503 and j["store"] == "empty", "empty store: API says so")
    finally:
        srv.stop()


def raw_exchange(port, data, wait=5):
    import socket
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(wait)
    s.sendall(data)
    out = b""
    try:
        while True:
            c = s.recv(4096)
            if not c:
                break
            out += c
    except OSError:
        pass
    s.close()
    return out


def test_slow_and_malformed_clients(dash, workdir, db):
    """Thread cap + request timeout: stalled clients cannot starve the server for long, and
    civetweb's own error answers carry the CSP and nosniff headers too."""
    import socket
    srv = dashlib.Server(dash, db, workdir, extra=("--quiet", "--threads", "2", "--timeout-ms", "500"))
    try:
        stalled = []
        for _ in range(4):  # twice the thread count, each sending half a request
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            stalled.append(s)
        t = time.time()
        st, _, _ = srv.request("GET", "/api/v1/health", timeout=20)
        dt = time.time() - t
        check(st == 200 and dt < 5, "server answers within %.1fs while 4 clients stall 2 threads" % dt)
        for s in stalled:
            s.close()
        for name, data in [("garbage request line", b"GARBAGE\r\n\r\n"),
                           ("oversized headers", b"GET / HTTP/1.1\r\nX: " + b"a" * 40000 + b"\r\n\r\n"),
                           ("stalled request", b"GET / HTTP/1.1\r\nHost: x\r\n")]:
            out = raw_exchange(srv.port, data)
            head = out.split(b"\r\n\r\n")[0].lower()
            check((out.startswith(b"HTTP/1.") and b" 4" in out[:13] and b"content-security-policy" in head
                   and b"x-content-type-options: nosniff" in head) or out == b"",
                  "%s: refused with hardening headers (%r)" % (name, out[:60]))
    finally:
        srv.stop()


def test_listen_default(dash, workdir, db):
    srv = dashlib.Server(dash, db, workdir, extra=("--quiet",))
    try:
        log = open(srv.log_path).read()
        check("http://127.0.0.1:" in log, "binds 127.0.0.1")
    finally:
        srv.stop()
    import subprocess
    out = subprocess.run([dash, "--help"], capture_output=True, text=True)
    check(out.returncode == 0 and "--listen" in out.stdout, "--help documents --listen")
    out = subprocess.run([dash], capture_output=True, text=True)
    check(out.returncode == 2 and "--db" in out.stderr, "missing --db is a usage error")


def test_changepoint_rows(srv, db):
    """A row of `qgmm-bench changepoints` (kind changepoint) is listed with the revision it
    names, but is not part of a run's gate verdict."""
    st, o = srv.get_json("/api/v1/overview")
    hip = [x for x in o["latest"] if x["backend"] == "hip"][0]
    con = sqlite3.connect(db)
    run_id, rev = con.execute("SELECT id, revision_id FROM run WHERE uuid = ?", (hip["run"],)).fetchone()
    sid = con.execute("SELECT r.series_id FROM result r JOIN series s ON s.id = r.series_id WHERE r.run_id = ? "
                      "AND s.backend = 'hip' LIMIT 1", (run_id,)).fetchone()[0]
    good = con.execute("SELECT id FROM revision WHERE id <> ? LIMIT 1", (rev,)).fetchone()[0]
    sha = con.execute("SELECT sha FROM revision WHERE id = ?", (rev,)).fetchone()[0]
    con.execute("INSERT INTO regression(series_id, run_id, kind, severity, baseline_runs, after_runs, change, "
                "threshold, p_value, last_good_revision_id, first_bad_revision_id, reason, driver, detected_at, "
                "updated_at) VALUES(?, ?, 'changepoint', 'fail', 6, 4, 0.2, 0.05, 1e-9, ?, ?, 'median +20.0%', "
                "'', 1, 1)", (sid, run_id, good, rev))
    con.commit()
    try:
        st, g = srv.get_json("/api/v1/regressions?kind=changepoint")
        check(st == 200 and len(g["regressions"]) == 1 and g["regressions"][0]["first_bad_revision"] == sha and
              g["regressions"][0]["after_runs"] == 4 and g["regressions"][0]["status"] == "detected",
              "changepoint row listed with its first bad revision")
        st, _, page = srv.request("GET", "/regressions?status=detected")
        check(st == 200 and b"changepoint" in page and sha[:10].encode() in page, "changepoint row on the page")
        st, o2 = srv.get_json("/api/v1/overview")
        hip2 = [x for x in o2["latest"] if x["backend"] == "hip" and x["run"] == hip["run"]][0]
        check(hip2["gate"] == hip["gate"] and hip2["regressions_fail"] == hip["regressions_fail"],
              "a change point does not change the run's gate verdict on the overview")
        check(any(x["kind"] == "changepoint" for x in o2["regressions"]), "overview lists the change point")
    finally:
        con.execute("DELETE FROM regression WHERE kind = 'changepoint'")
        con.commit()
        con.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dash", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    db = os.path.join(a.workdir, "api.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    docs, tok = dashlib.build_fixture(a.dash, db, a.workdir)
    docs = docs[:-1]  # the hostile run is checked on its own
    srv = dashlib.Server(a.dash, db, a.workdir, extra=("--quiet",))
    try:
        rid = test_shapes(srv, docs + [dashlib.hostile_doc()])
        test_headers_and_methods(srv)
        test_hostile_views(srv, db)
        test_ingest(srv, db, a.dash, tok)
        test_triage(srv, rid, tok, a.dash, db)
        test_load(srv, db, tok)
        test_changepoint_rows(srv, db)
    finally:
        srv.stop()
    test_body_cap(a.dash, db, a.workdir, tok)
    test_slow_and_malformed_clients(a.dash, a.workdir, db)
    test_missing_and_empty(a.dash, a.workdir)
    test_listen_default(a.dash, a.workdir, db)
    sys.exit(dashlib.summary("dash api"))


if __name__ == "__main__":
    main()
