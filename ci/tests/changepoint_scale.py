#!/usr/bin/env python3
"""Scale check of `qgmm-bench changepoints` (not a ctest): a store of SERIES series x RUNS
runs x 20 samples with 1 % night-to-night and 1 % in-run noise, every 10th series 20 %
slower from the middle run on; prints the pass's time and how many planted steps it named
at the exact revision (and nothing else).

usage: changepoint_scale.py BENCH DB [--series 100] [--runs 365]"""
import argparse
import os
import random
import sqlite3
import subprocess
import time

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("bench")
ap.add_argument("db")
ap.add_argument("--series", type=int, default=100)
ap.add_argument("--runs", type=int, default=365)
a = ap.parse_args()
bench, db = a.bench, a.db
for s in ("", "-wal", "-shm"):
    if os.path.exists(db + s): os.remove(db + s)
subprocess.run([bench, "runs", "--db", db], capture_output=True)
con = sqlite3.connect(db)
c = con.cursor()
c.execute("INSERT INTO machine(hostname, cpu) VALUES('h', 'c')")
c.execute("INSERT INTO device(machine_id, name) VALUES(1, 'd')")
NS, NR, NSMP = a.series, a.runs, 20
for s in range(NS):
    c.execute("INSERT INTO series(fingerprint, benchmark, params, device_id, backend) VALUES(?, ?, '{}', 1, 'cpu')", ("f%d" % s, "b%d" % s))
random.seed(1)
for r in range(NR):
    c.execute("INSERT INTO revision(sha) VALUES(?)", ("%040x" % (r + 1),))
    c.execute("INSERT INTO run(uuid, machine_id, revision_id, suite, started_at, finished_at, runner, runner_version) VALUES(?, 1, ?, 's', ?, ?, 't', '0')", ("u%d" % r, r + 1, 1000 + r, 1001 + r))
    c.execute("INSERT INTO context(run_id, backend, device_id) VALUES(?, 'cpu', 1)", (r + 1,))
    ctx = c.lastrowid
    for s in range(NS):
        lvl = 100.0 * (1.2 if (s % 10 == 0 and r >= NR // 2) else 1.0) * (1 + 0.01 * random.gauss(0, 1))
        smp = [lvl * (1 + 0.01 * random.gauss(0, 1)) for _ in range(NSMP)]
        med = sorted(smp)[NSMP // 2]
        c.execute("INSERT INTO result(run_id, series_id, context_id, status, verdict, n_samples, median_us) VALUES(?, ?, ?, 'ok', 'pass', ?, ?)", (r + 1, s + 1, ctx, NSMP, med))
        rid = c.lastrowid
        c.executemany("INSERT INTO sample(result_id, idx, time_us) VALUES(?, ?, ?)", [(rid, i, v) for i, v in enumerate(smp)])
con.commit()
t = time.time()
p = subprocess.run([bench, "changepoints", "--db", db, "--all"], capture_output=True, text=True)
print("changepoints: %.2f s, rc %d, %s" % (time.time() - t, p.returncode, p.stdout.strip().splitlines()[-1]))
n, exact = con.execute("SELECT count(*), sum(first_bad_revision_id = ?) FROM regression WHERE kind = 'changepoint'",
                       (NR // 2 + 1,)).fetchone()
print("planted %d steps; recorded %d change points, %d at the planted revision" % ((NS + 9) // 10, n, exact or 0))
