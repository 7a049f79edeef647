/*
 * run_peers.h — `qgmm-bench run --peers torch`: the PyTorch peers of a suite's cases
 * (ci/peers/torch_peers.py), timed after qgmm's backends and stored in the same run.
 *
 * The script is found as ./ci/peers/torch_peers.py (a run started in the checkout), else in
 * the source tree qgmm-bench was built from. It is run by `python3` from PATH; a machine
 * whose python3 cannot import torch or sees no CUDA GPU has no peers: one line says why and
 * the run goes on (it is not an error).
 */
#ifndef QGMM_CI_RUN_PEERS_H
#define QGMM_CI_RUN_PEERS_H

#include <stddef.h>

#include "runrec.h"

/* Checks the peer list of --peers (comma separated; only "torch" is known). Returns 0, or
 * -1 with a sentence in err naming the unknown peer. */
int peers_parse(const char *list, char *err, size_t cap);

/* 1 when python3 imports torch and torch sees a CUDA GPU (version: "2.11.0+cu130"), 0 with
 * one sentence in why when not. */
int peers_torch_probe(char *version, size_t vcap, char *why, size_t cap);

/* Runs the script on the cases of cases_json (`qgmm-bench cases --json`) and parses the
 * run document it writes into *out (rr_init'ed by the caller). budget_ms: per-case timing
 * budget; sha: the revision the results belong to. Returns 0, or -1 with err (the script
 * failed, was stopped by a signal, or wrote a document the run format refuses). */
int peers_torch_run(const char *cases_json, double budget_ms, const char *sha, run_record *out, char *err,
                    size_t cap);

#endif
