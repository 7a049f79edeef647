#!/usr/bin/env python3
"""Builds the qgmm-dash test store: make_fixture.py --dash BIN --db FILE [--workdir DIR]."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dash", required=True, help="qgmm-dash binary")
    ap.add_argument("--db", required=True, help="store to (re)create")
    ap.add_argument("--workdir", default=None, help="where server logs go (default: next to --db)")
    a = ap.parse_args()
    wd = a.workdir or os.path.dirname(os.path.abspath(a.db))
    os.makedirs(wd, exist_ok=True)
    docs, _ = dashlib.build_fixture(a.dash, a.db, wd)
    print("fixture: %d runs in %s" % (len(docs), a.db))


if __name__ == "__main__":
    main()
