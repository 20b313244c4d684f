#!/bin/sh
# run-floor.sh - every run carries its own floor: a decode-bench case that runs after a
# passing bandwidth case gets pct_of_bandwidth and floor_ms_per_token computed from that
# probe; one that runs before it (or without one) gets neither.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/run-lib.sh"
plan 8
DB=$T/floor.db
cat >"$T/floor.yaml" <<YAML
suite: floor
engines:
  cpu: cpu
models:
  m: $FIX/minitied-q8_0.gguf
defaults:
  engine: cpu
  threads: 1
  timeout: 60
cases:
  - name: bench-before
    kind: decode-bench
    model: m
    iterations: 8
  - name: probe
    kind: bandwidth
    bytes: 16777216
    iterations: 3
  - name: bench-after
    kind: decode-bench
    model: m
    iterations: 8
YAML
run_cmd "$KESTREL_EVAL" run "$T/floor.yaml" --db "$DB"
is 0 "$RC" "suite with a bandwidth case runs"
[ "$RC" -eq 0 ] || printf '%s\n' "$ERR" | head -20 | sed 's/^/#   /'
is 3 "$(sql "SELECT count(*) FROM cases WHERE status = 'pass'")" "all three cases recorded as passed"
is 0 "$(sql "SELECT count(*) FROM metrics m JOIN cases c ON c.id = m.case_id WHERE c.name = 'bench-before' AND m.name IN ('pct_of_bandwidth', 'floor_ms_per_token')")" \
  "a decode-bench before the probe has no floor metrics"
is "pct_of_bandwidth|%" "$(sql "SELECT m.name, m.unit FROM metrics m JOIN cases c ON c.id = m.case_id WHERE c.name = 'bench-after' AND m.name = 'pct_of_bandwidth'")" \
  "a decode-bench after the probe has pct_of_bandwidth"
# pct = 100 * gbps_effective / probe gbps, recomputed here from the stored metrics
is 1 "$(sql "SELECT abs(p.value - 100.0 * e.value / g.value) < 1e-9 * p.value
  FROM metrics p JOIN cases c ON c.id = p.case_id AND c.name = 'bench-after'
  JOIN metrics e ON e.case_id = c.id AND e.name = 'gbps_effective'
  JOIN cases pc ON pc.run_id = c.run_id AND pc.name = 'probe'
  JOIN metrics g ON g.case_id = pc.id AND g.name = 'gbps'
  WHERE p.name = 'pct_of_bandwidth'")" "pct_of_bandwidth = 100 x gbps_effective / probe gbps"
# floor = median ms/token x pct / 100 (bytes per token at the probe's rate)
is 1 "$(sql "SELECT abs(f.value - m.value * p.value / 100.0) < 1e-9 * f.value
  FROM metrics f JOIN cases c ON c.id = f.case_id AND c.name = 'bench-after'
  JOIN metrics m ON m.case_id = c.id AND m.name = 'ms_per_token_median'
  JOIN metrics p ON p.case_id = c.id AND p.name = 'pct_of_bandwidth'
  WHERE f.name = 'floor_ms_per_token'")" "floor_ms_per_token = median x pct / 100"
like "$(sql "SELECT text FROM metrics m JOIN cases c ON c.id = m.case_id WHERE c.name = 'bench-after' AND m.name = 'pct_of_bandwidth'")" \
  "of [0-9.e+]+ GB/s measured by case 'probe' in this run$" "the metric names the probe case it used"
is 2 "$(sql "SELECT count(*) FROM v_results WHERE case_name = 'bench-after' AND metric IN ('pct_of_bandwidth', 'floor_ms_per_token')")" \
  "both appear in v_results"
done_testing
