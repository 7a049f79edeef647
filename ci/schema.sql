-- qgmm results store — the SQLite schema written by `qgmm-bench` and read by `qgmm-dash`.
--
-- This file IS the migration list: qgmm-bench embeds it at build time, splits it at the
-- `-- @migration N` markers and, on open, applies every section whose N is greater than
-- `PRAGMA user_version`, each in its own transaction, then sets user_version = N.
-- A database whose user_version is greater than the newest N here is refused (an older
-- binary must not write into a newer schema). Rules for editing: never change a section
-- that has shipped; add a new section with the next N; only additive changes (new tables,
-- new nullable/defaulted columns, new indexes) so that older readers keep working. The one
-- exception is migration 3, which rebuilds `regression` in place to rename its triage
-- states (a CHECK constraint cannot be altered); it keeps every row and id.
--
-- Connection settings (applied by every writer at open, not stored here):
--   PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON;
--
-- Conventions:
--   * timestamps are INTEGER unix seconds, UTC;
--   * times are microseconds (REAL), sizes bytes (INTEGER), rates GB/s = 1e9 B/s and
--     TFLOP/s = 1e12 FLOP/s (REAL);
--   * TEXT columns that hold JSON say so; JSON objects there are compact, keys sorted;
--   * hashes are "<algorithm>:<lowercase hex>", e.g. "fnv1a64:0123456789abcdef".
-- The meaning of every field is in docs/run-format.md (same names as the JSON run format).

-- @migration 1: machines, devices, revisions, runs, contexts, series, results, samples
CREATE TABLE machine (
    id            INTEGER PRIMARY KEY,
    hostname      TEXT NOT NULL,
    cpu           TEXT NOT NULL,                 -- CPU model string (/proc/cpuinfo)
    os            TEXT NOT NULL DEFAULT '',      -- "Linux 6.1.0-18-amd64 x86_64" (latest seen)
    cores         INTEGER,                       -- logical CPUs
    memory_bytes  INTEGER,
    UNIQUE (hostname, cpu)
) STRICT;

-- A physical device on a machine; the same GPU seen through cuda, vulkan and torch is
-- ONE device (the backend is part of the series, not of the device).
CREATE TABLE device (
    id            INTEGER PRIMARY KEY,
    machine_id    INTEGER NOT NULL REFERENCES machine(id),
    name          TEXT NOT NULL,                 -- "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.7, 256 bits)", CPU model for cpu
    kind          TEXT NOT NULL DEFAULT 'other' CHECK (kind IN ('cpu', 'gpu', 'other')),
    arch          TEXT NOT NULL DEFAULT '',      -- "sm_90", "gfx942", "x86_64"; '' when unknown
    memory_bytes  INTEGER,
    UNIQUE (machine_id, name)
) STRICT;

CREATE TABLE revision (
    id            INTEGER PRIMARY KEY,
    sha           TEXT NOT NULL UNIQUE,          -- full 40-hex git sha, or 'unknown'
    commit_time   INTEGER,                       -- committer time; NULL when unknown
    subject       TEXT NOT NULL DEFAULT '',
    branch        TEXT NOT NULL DEFAULT ''
) STRICT;

-- One invocation of `qgmm-bench run` (or one imported/uploaded run file). An imported run
-- is written in ONE transaction; since migration 4 a measured run is written as it goes
-- and carries a state (running / complete / interrupted, see there).
CREATE TABLE run (
    id             INTEGER PRIMARY KEY,
    uuid           TEXT NOT NULL UNIQUE,         -- RFC 4122 v4, lowercase; the idempotency key of import/upload
    machine_id     INTEGER NOT NULL REFERENCES machine(id),
    revision_id    INTEGER NOT NULL REFERENCES revision(id),
    suite          TEXT NOT NULL,                -- "smoke", "nightly", or a suite file name
    reason         TEXT NOT NULL DEFAULT 'manual', -- "nightly", "ci", "manual", "rerun", free text
    started_at     INTEGER NOT NULL,
    finished_at    INTEGER NOT NULL,
    runner         TEXT NOT NULL,                -- producer: "qgmm-bench" or "qgmm-peers-torch"
    runner_version TEXT NOT NULL,
    dirty          INTEGER NOT NULL DEFAULT 0 CHECK (dirty IN (0, 1)), -- uncommitted changes in the tree
    env            TEXT NOT NULL DEFAULT '{}',   -- JSON object: build type, compiler, OMP threads, ...
    source         TEXT NOT NULL DEFAULT 'local' CHECK (source IN ('local', 'import', 'upload')),
    imported_at    INTEGER                       -- when source <> 'local'
) STRICT;
CREATE INDEX run_started ON run (started_at);
CREATE INDEX run_revision ON run (revision_id);

-- One (backend, device) pair used by a run: the environment of the numbers measured
-- through it. The gate compares a series only across runs with the same driver here.
CREATE TABLE context (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    backend       TEXT NOT NULL,                 -- "cpu", "cuda", "hip", "vulkan", "torch", ...
    device_id     INTEGER NOT NULL REFERENCES device(id),
    describe      TEXT NOT NULL DEFAULT '',      -- qgmm_context_describe() line (or the peer's equivalent)
    driver        TEXT NOT NULL DEFAULT '',      -- "NVIDIA 580.65.06", "Mesa 22.3.6"; '' for cpu
    runtime       TEXT NOT NULL DEFAULT '',      -- "CUDA 13.0", "torch 2.9.0+cu130"; '' when none
    clocks        TEXT NOT NULL DEFAULT '{}',    -- JSON object of clocks readable at run time (MHz)
    code_hash     TEXT NOT NULL DEFAULT '',      -- hash of the backend library file
    UNIQUE (run_id, backend, device_id)
) STRICT;

-- A time series: one benchmark with fixed parameters on one device through one backend,
-- one metric. Identity = fingerprint (see docs/run-format.md, "Series identity").
CREATE TABLE series (
    id            INTEGER PRIMARY KEY,
    fingerprint   TEXT NOT NULL UNIQUE,
    benchmark     TEXT NOT NULL,                 -- op name: "quantize_fp8_rowwise", "grouped_gemm", "ceiling.copy", ...
    params        TEXT NOT NULL,                 -- canonical JSON object (string/integer values, keys sorted)
    label         TEXT NOT NULL DEFAULT '',      -- human name of the case, e.g. "rowwise bf16->e4m3fn"
    shape         TEXT NOT NULL DEFAULT '',      -- display shape, e.g. "M=16384 K=5120" or "32768x8192x5120 G=8"
    role          TEXT NOT NULL DEFAULT 'case' CHECK (role IN ('case', 'ceiling', 'canary')),
    device_id     INTEGER NOT NULL REFERENCES device(id),
    backend       TEXT NOT NULL,
    metric        TEXT NOT NULL DEFAULT 'time',  -- what the samples measure; 'time' = kernel time (lower is better)
    unit          TEXT NOT NULL DEFAULT 'us'
) STRICT;
CREATE INDEX series_device_backend ON series (device_id, backend);
CREATE INDEX series_benchmark ON series (benchmark, params);

-- One measurement of one series in one run.
CREATE TABLE result (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    series_id      INTEGER NOT NULL REFERENCES series(id),
    context_id     INTEGER NOT NULL REFERENCES context(id) ON DELETE CASCADE,
    status         TEXT NOT NULL CHECK (status IN ('ok', 'error', 'unsupported')),
    verdict        TEXT NOT NULL CHECK (verdict IN ('pass', 'fail', 'unchecked')),
    message        TEXT NOT NULL DEFAULT '',     -- error text or the numerics detail
    -- statistics of the raw samples (NULL when there are none: status <> 'ok')
    n_samples      INTEGER NOT NULL DEFAULT 0,
    warmup         INTEGER NOT NULL DEFAULT 0,   -- warm-up iterations not recorded
    min_us         REAL,
    q1_us          REAL,
    median_us      REAL,
    q3_us          REAL,
    max_us         REAL,
    mean_us        REAL,
    stddev_us      REAL,
    -- work per iteration and the rates at the median
    bytes          INTEGER,                      -- bytes read + written by one execution
    flops          INTEGER,                      -- 2*M*N*K summed over groups (GEMMs); NULL for casts
    gbps           REAL,                         -- bytes / median
    tflops         REAL,                         -- flops / median
    ceiling        TEXT NOT NULL DEFAULT '',     -- benchmark name of the ceiling series used ('' = none)
    pct_of_ceiling REAL,                         -- 100 * rate / ceiling rate of the same context in this run
    -- numerics (NULL when not applicable)
    mismatched_bytes INTEGER,                    -- casts: bytes differing from the CPU reference
    checked_bytes  INTEGER,
    max_abs_err    REAL,                         -- GEMMs: vs float64 reference of the dequantized operands
    rel_err        REAL,                         -- relative Frobenius error, same reference
    sqnr_db        REAL,                         -- GEMMs: recipe SQNR vs the high-precision operands
    threshold      TEXT NOT NULL DEFAULT '',     -- the rule applied, e.g. "bit-exact", "rel<=1e-2 sqnr>=27"
    output_hash    TEXT NOT NULL DEFAULT '',
    code_hash      TEXT NOT NULL DEFAULT '',
    UNIQUE (run_id, series_id)
) STRICT;
CREATE INDEX result_series ON result (series_id, run_id);

-- The raw timing samples of a result, in the order measured.
CREATE TABLE sample (
    result_id     INTEGER NOT NULL REFERENCES result(id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    time_us       REAL NOT NULL,
    PRIMARY KEY (result_id, idx)
) STRICT, WITHOUT ROWID;

-- @migration 2: regression triage
-- Written by `qgmm-bench gate` (one row per series per run flagged); `status` and `note`
-- are for people (the dashboard may update them). kind 'perf' rows carry the statistics
-- of the decision; kind 'numerics' rows carry the failing result.
CREATE TABLE regression (
    id               INTEGER PRIMARY KEY,
    series_id        INTEGER NOT NULL REFERENCES series(id),
    run_id           INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    result_id        INTEGER REFERENCES result(id) ON DELETE CASCADE,
    kind             TEXT NOT NULL CHECK (kind IN ('perf', 'numerics')),
    severity         TEXT NOT NULL CHECK (severity IN ('fail', 'warn')),
    baseline_runs    INTEGER NOT NULL DEFAULT 0, -- runs in the baseline window
    baseline_median_us REAL,
    current_median_us  REAL,
    change           REAL,                       -- relative change of the median, +0.20 = 20 % slower
    threshold        REAL,                       -- max(0.05, 3 * noise) applied
    noise            REAL,                       -- the series' relative noise over the baseline
    p_value          REAL,                       -- Mann-Whitney U, two-sided, current vs baseline samples
    last_good_revision_id INTEGER REFERENCES revision(id),  -- newest baseline run's revision
    first_bad_revision_id INTEGER REFERENCES revision(id),  -- this run's revision
    reason           TEXT NOT NULL DEFAULT '',   -- one sentence: why it was flagged
    status           TEXT NOT NULL DEFAULT 'open'
                     CHECK (status IN ('open', 'confirmed', 'false_positive', 'fixed', 'wontfix')),
    note             TEXT NOT NULL DEFAULT '',
    detected_at      INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (series_id, run_id, kind)
) STRICT;
CREATE INDEX regression_status ON regression (status, detected_at);

-- @migration 3: triage states named as in the dashboard issue, change points, dashboard tokens
-- (a) The triage vocabulary becomes detected / acknowledged / fixed / ignored, and the
-- regression table gains kind 'changepoint' (rows written by `qgmm-bench changepoints`:
-- run_id is the first run after the shift, first_bad/last_good name the revisions around
-- it). SQLite cannot alter a CHECK constraint, so this one migration rebuilds the table
-- (the documented exception to "additive only"; nothing references regression, ids are
-- kept). Mapping: open -> detected, confirmed -> acknowledged, fixed -> fixed,
-- false_positive and wontfix -> ignored, the old word kept in the note so nothing is lost.
CREATE TABLE regression_v3 (
    id               INTEGER PRIMARY KEY,
    series_id        INTEGER NOT NULL REFERENCES series(id),
    run_id           INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    result_id        INTEGER REFERENCES result(id) ON DELETE CASCADE,
    kind             TEXT NOT NULL CHECK (kind IN ('perf', 'numerics', 'changepoint')),
    severity         TEXT NOT NULL CHECK (severity IN ('fail', 'warn')),
    baseline_runs    INTEGER NOT NULL DEFAULT 0, -- runs in the baseline window (changepoint: runs before the shift)
    baseline_median_us REAL,                     -- changepoint: median of the runs' medians before the shift
    current_median_us  REAL,                     -- changepoint: the same after the shift
    change           REAL,                       -- relative change of the median, +0.20 = 20 % slower
    threshold        REAL,                       -- max(0.05, 3 * noise) applied
    noise            REAL,                       -- the series' relative noise (1.4826 MAD / median of run medians)
    p_value          REAL,                       -- Mann-Whitney U, two-sided
    last_good_revision_id INTEGER REFERENCES revision(id),  -- perf: newest baseline run's; changepoint: last run before the shift
    first_bad_revision_id INTEGER REFERENCES revision(id),  -- perf: this run's; changepoint: first run after the shift
    reason           TEXT NOT NULL DEFAULT '',   -- one sentence: why it was flagged
    status           TEXT NOT NULL DEFAULT 'detected'
                     CHECK (status IN ('detected', 'acknowledged', 'fixed', 'ignored')),
    note             TEXT NOT NULL DEFAULT '',
    detected_at      INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    after_runs       INTEGER,                    -- changepoint: runs after the shift in the analysed window
    driver           TEXT,                       -- changepoint: the driver of the analysed history
    UNIQUE (series_id, run_id, kind)
) STRICT;
INSERT INTO regression_v3 (id, series_id, run_id, result_id, kind, severity, baseline_runs, baseline_median_us,
    current_median_us, change, threshold, noise, p_value, last_good_revision_id, first_bad_revision_id, reason,
    status, note, detected_at, updated_at)
SELECT id, series_id, run_id, result_id, kind, severity, baseline_runs, baseline_median_us, current_median_us,
    change, threshold, noise, p_value, last_good_revision_id, first_bad_revision_id, reason,
    CASE status WHEN 'open' THEN 'detected' WHEN 'confirmed' THEN 'acknowledged' WHEN 'fixed' THEN 'fixed'
                ELSE 'ignored' END,
    CASE WHEN status IN ('false_positive', 'wontfix')
         THEN trim(note || ' [triaged ' || status || ' before schema 3]') ELSE note END,
    detected_at, updated_at
FROM regression;
DROP TABLE regression;
ALTER TABLE regression_v3 RENAME TO regression;
CREATE INDEX regression_status ON regression (status, detected_at);
CREATE INDEX regression_series ON regression (series_id, kind);

-- (b) Bearer tokens of the dashboard's ingest and triage APIs (`qgmm-dash token add`).
-- Only 'sha256:<hex>' of the whole token is stored, never the token. IF NOT EXISTS: stores
-- that a qgmm-dash of schema 2 already gave this table (same definition) keep their tokens.
CREATE TABLE IF NOT EXISTS dash_token (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,          -- [A-Za-z0-9._-]{1,64}
    token_hash    TEXT NOT NULL UNIQUE,          -- 'sha256:<hex>' of the whole token
    scope         TEXT NOT NULL CHECK (scope IN ('ingest','triage','all')),
    created_at    INTEGER NOT NULL,
    revoked_at    INTEGER,                       -- NULL while valid
    last_used_at  INTEGER
) STRICT;

-- @migration 4: durable runs — a local run is written while it is measured
-- `qgmm-bench run` inserts its run row when it starts (state 'running'), commits each result
-- in its own short transaction, refreshes heartbeat_at every few seconds while the runner
-- lives, and closes the row as 'complete', or as 'interrupted' after SIGINT/SIGTERM. A runner
-- killed outright (SIGKILL, power loss) leaves 'running' with a heartbeat that stopped: the
-- view run_status shows such a run as 'interrupted' once its heartbeat is over 60 s old, and
-- every reader takes a run's state from that view. `qgmm-bench run --resume RUN` finishes an
-- interrupted run under the same id with the options stored here. Imported and uploaded
-- runs are written whole and are 'complete' (the default, so older rows are too).
ALTER TABLE run ADD COLUMN state TEXT NOT NULL DEFAULT 'complete'
    CHECK (state IN ('running', 'complete', 'interrupted'));
ALTER TABLE run ADD COLUMN heartbeat_at INTEGER;            -- unix s of the runner's last sign of life; NULL when written whole
ALTER TABLE run ADD COLUMN runner_pid INTEGER;              -- process id of the runner on its machine (resume checks it is gone)
ALTER TABLE run ADD COLUMN options TEXT NOT NULL DEFAULT '{}'; -- JSON object: the run's options, re-applied by --resume
ALTER TABLE run ADD COLUMN results_expected INTEGER;        -- results the run will store when complete (progress); NULL when unknown
CREATE VIEW run_status AS
SELECT id AS run_id,
       CASE WHEN state = 'running'
                 AND coalesce(heartbeat_at, started_at) < CAST(strftime('%s', 'now') AS INTEGER) - 60
            THEN 'interrupted' ELSE state END AS state
FROM run;

-- @migration 5: the steps of composite cases
-- The per-step device times of a composite case (the MoE expert layer's casts, paddings and
-- GEMMs of forward, dgrad and wgrad), from the composite's profiled calls: one row per step
-- in the order run, the median over the profiled executions.
CREATE TABLE result_step (
    result_id     INTEGER NOT NULL REFERENCES result(id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    phase         TEXT NOT NULL,                 -- "forward", "dgrad" or "wgrad"
    step          TEXT NOT NULL,                 -- op and operand, e.g. "quantize_mxfp8 w"
    median_us     REAL NOT NULL,
    n             INTEGER NOT NULL,              -- profiled executions
    PRIMARY KEY (result_id, idx)
) STRICT, WITHOUT ROWID;
