#!/usr/bin/env python3
"""Runs torch_peers.py against a mock `torch` (no GPU, no PyTorch needed) on the cases of
`qgmm-bench cases --json`, then checks that `qgmm-bench import` accepts the document it
wrote: the peer script's output format is tested on every CI run, even though its
timings can only be taken on a GPU machine.
usage: test_torch_peers_mock.py QGMM_BENCH WORKDIR"""
import json, os, subprocess, sys, types
from unittest import mock

bench, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
cases = os.path.join(work, "cases.json")
out = os.path.join(work, "torch.json")
db = os.path.join(work, "peers.db")
for p in (db, db + "-wal", db + "-shm"):
    if os.path.exists(p):
        os.remove(p)
with open(cases, "w") as f:
    subprocess.run([bench, "cases", "--suite", "smoke", "--json"], stdout=f, check=True)

t = mock.MagicMock(name="torch")
t.__version__ = "0.0.0+mock"
t.__file__ = os.path.join(work, "torch", "__init__.py")
t.version.cuda = "0.0"
t.cuda.is_available.return_value = True
t.cuda.Event.return_value.elapsed_time.return_value = 0.25   # ms
props = t.cuda.get_device_properties.return_value
props.name, props.major, props.minor, props.total_memory = "Mock GPU", 9, 0, 80 << 30
t.compile.side_effect = lambda f: f
sys.modules["torch"] = t
sys.argv = ["torch_peers.py", "--cases", cases, "--out", out, "--budget-ms", "2", "--sha", "0" * 40]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peers  # noqa: E402
torch_peers.main()

doc = json.load(open(out))
n_ok = sum(r["status"] == "ok" for r in doc["results"])
n_uns = sum(r["status"] == "unsupported" for r in doc["results"])
assert doc["contexts"][0]["backend"] == "torch", doc["contexts"]
n_err = [r["benchmark"] + ": " + r.get("message", "") for r in doc["results"] if r["status"] == "error"]
assert not n_err, n_err
assert n_ok >= 7, f"only {n_ok} peers timed"
assert all(r["samples_us"] for r in doc["results"] if r["status"] == "ok")
assert not any(r.get("verdict") == "pass" for r in doc["results"]), "peers are never judged as pass here"
r = subprocess.run([bench, "import", "--db", db, out], capture_output=True, text=True)
assert r.returncode == 0 and "imported" in r.stdout, r.stdout + r.stderr
print(f"torch_peers mock: {len(doc['results'])} results ({n_ok} timed, {n_uns} unsupported) imported")
