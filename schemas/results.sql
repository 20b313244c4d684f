-- Kestrel Eval results store, schema version 1.
-- Applied by kestrel-eval on open of a new database; later versions live in
-- schemas/migrations/NNN-*.sql and are applied in order (forward only).
-- The supported query surface for users is the view v_results
-- (docs/results-db.md); tables may change between versions, the view does not.

CREATE TABLE schema_version (
    version INTEGER NOT NULL
);

-- One invocation of `kestrel-eval run` (or `ab`).
CREATE TABLE runs (
    id             INTEGER PRIMARY KEY,
    started_at     TEXT NOT NULL,            -- ISO 8601 UTC, e.g. 2026-11-29T10:00:00Z
    ended_at       TEXT,                     -- NULL while running or when interrupted
    status         TEXT NOT NULL CHECK (status IN ('running','passed','failed','interrupted','error')),
    label          TEXT,
    suite_name     TEXT,
    suite_path     TEXT,
    suite_sha256   TEXT,
    host           TEXT,
    os             TEXT,
    cpu            TEXT,
    gpu_name       TEXT,
    gpu_driver     TEXT,
    cuda_runtime   TEXT,
    kestrel_version TEXT,                    -- PACKAGE_VERSION
    git_describe   TEXT,                     -- of the source tree kestrel-eval was built from
    command_line   TEXT,
    pid            INTEGER,                  -- runner pid, to tell a live run from an interrupted one
    imported_from  TEXT                      -- baseline archive name when imported
);

-- Files a run used, hashed once per run.
CREATE TABLE artifacts (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind           TEXT NOT NULL CHECK (kind IN ('engine','model','oracle','prompts')),
    name           TEXT NOT NULL,            -- the name the suite gives it
    path           TEXT NOT NULL,
    sha256         TEXT NOT NULL,
    size           INTEGER,
    mtime          TEXT,
    engine_name    TEXT,                     -- engine-reported (kind = 'engine' only)
    engine_version TEXT,
    build_flags    TEXT,
    device         TEXT,
    UNIQUE (run_id, kind, name)
);

-- One case of a suite within a run.
CREATE TABLE cases (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    kind            TEXT NOT NULL,           -- oracle | decode-bench | bitexact | bandwidth | engine-diff | ab
    status          TEXT NOT NULL CHECK (status IN ('pass','fail','crash','timeout','error','skip')),
    error           TEXT,                    -- gate failures, crash signal + stderr tail, ...
    started_at      TEXT,
    duration_s      REAL,
    engine_artifact  INTEGER REFERENCES artifacts(id),
    model_artifact   INTEGER REFERENCES artifacts(id),
    oracle_artifact  INTEGER REFERENCES artifacts(id),
    prompts_artifact INTEGER REFERENCES artifacts(id),
    params          TEXT,                    -- JSON: the case's resolved parameters and gates
    UNIQUE (run_id, name)
);

-- Scalar results of a case. text carries counts like "3/80" next to value.
CREATE TABLE metrics (
    case_id   INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    name      TEXT NOT NULL,                 -- docs/metrics.md defines every name
    value     REAL,
    unit      TEXT,
    text      TEXT,
    gate      TEXT,                          -- the gate applied, e.g. "<= 1e-05"; NULL if none
    gate_pass INTEGER,                       -- 1 pass, 0 fail, NULL if no gate
    PRIMARY KEY (case_id, name)
);

-- Raw timing samples (never only the mean).
CREATE TABLE samples (
    case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    series  TEXT NOT NULL,                   -- e.g. 'ms_per_token'
    idx     INTEGER NOT NULL,
    value   REAL NOT NULL,
    PRIMARY KEY (case_id, series, idx)
);

-- Archived outputs for later bit-exact comparison.
CREATE TABLE outputs (
    case_id    INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,                -- e.g. 'p0.tokens', 'p0.logits'
    dtype      TEXT NOT NULL CHECK (dtype IN ('f32','i32')),
    shape      TEXT NOT NULL,                -- JSON array, outermost first, e.g. [80,256]
    n_elements INTEGER NOT NULL,
    sha256     TEXT NOT NULL,                -- of the uncompressed little-endian bytes
    codec      TEXT NOT NULL DEFAULT 'zstd' CHECK (codec IN ('zstd','raw')),
    data       BLOB NOT NULL,
    PRIMARY KEY (case_id, name)
);

-- Per-kernel time breakdown of a decode step (engine profile=1).
CREATE TABLE kernel_profile (
    case_id   INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    kernel    TEXT NOT NULL,
    calls     INTEGER NOT NULL,
    total_ms  REAL NOT NULL,
    ms_per_step REAL,
    PRIMARY KEY (case_id, kernel)
);

-- Named baselines point at runs.
CREATE TABLE baselines (
    name       TEXT PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    note       TEXT
);

-- Interleaved A/B rounds (kestrel-eval ab): the ab case's own results.
CREATE TABLE ab_rounds (
    case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    round   INTEGER NOT NULL,
    side    TEXT NOT NULL CHECK (side IN ('A','B')),
    seq     INTEGER NOT NULL,                -- order of execution within the session
    median_ms REAL NOT NULL,                 -- median ms/token of this round
    n_samples INTEGER NOT NULL,
    PRIMARY KEY (case_id, round, side)
);

CREATE INDEX idx_cases_run ON cases(run_id);
CREATE INDEX idx_cases_name ON cases(name);
CREATE INDEX idx_artifacts_run ON artifacts(run_id);

-- The stable query surface (docs/results-db.md). One row per metric of a case;
-- a case without metrics (crash, timeout) appears once with metric NULL.
CREATE VIEW v_results AS
SELECT r.id          AS run_id,
       r.started_at  AS started_at,
       r.suite_name  AS suite,
       c.name        AS case_name,
       c.kind        AS kind,
       ae.sha256     AS engine_sha256,
       am.sha256     AS model_sha256,
       m.name        AS metric,
       m.value       AS value,
       m.unit        AS unit,
       c.status      AS status
FROM cases c
JOIN runs r ON r.id = c.run_id
LEFT JOIN artifacts ae ON ae.id = c.engine_artifact
LEFT JOIN artifacts am ON am.id = c.model_artifact
LEFT JOIN metrics m ON m.case_id = c.id;

INSERT INTO schema_version (version) VALUES (1);
