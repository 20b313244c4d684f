-- Migration 002: an index for the per-metric queries of `history`, `report`
-- and users of v_results (`WHERE metric = 'max_rel'`). Applied by
-- kestrel-eval on the first read-write open of a version-1 database.
CREATE INDEX IF NOT EXISTS idx_metrics_name ON metrics(name);
