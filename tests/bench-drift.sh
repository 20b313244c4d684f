#!/bin/sh
# bench-drift.sh - ms_per_token_drift_pct of decode-bench (docs/metrics.md) and its gate
# max_drift_pct, end to end on the fault test engine: a steady engine (10 ms sleep per step)
# stays within 30%; one whose every step sleeps 2 ms longer than the one before (sleep_grow_us)
# drifts by ~+80% and fails the gate with one line naming the quarters; without the gate the
# signed metric is stored; fewer than 8 iterations with the gate -> the case errors; a negative
# limit, or the gate on another kind -> exit 2 naming file:line:col.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/run-lib.sh"
[ -f "$FAULT" ] || skip_all "no $FAULT (built by make check)"
plan 12
DB=$T/drift.db
cat >"$T/drift.yaml" <<YAML
suite: drift
engines:
  steady: {lib: $FAULT, options: "sleep_us=10000"}
  growing: {lib: $FAULT, options: "sleep_us=10000,sleep_grow_us=2000"}
models:
  m: $FIX/mini27-q8_0.gguf
defaults: {threads: 1, warmup: 1, iterations: 16}
cases:
  - {name: steady, kind: decode-bench, engine: steady, model: m, prompt_len: 4, step_tokens: 1, gates: {max_drift_pct: 30}}
  - {name: growing, kind: decode-bench, engine: growing, model: m, prompt_len: 4, step_tokens: 1, gates: {max_drift_pct: 30}}
  - {name: growing-nogate, kind: decode-bench, engine: growing, model: m, prompt_len: 4, step_tokens: 1}
  - {name: few, kind: decode-bench, engine: steady, model: m, prompt_len: 4, step_tokens: 1, iterations: 4, gates: {max_drift_pct: 30}}
YAML
run_cmd "$KESTREL_EVAL" run "$T/drift.yaml" --db "$DB"
is 1 "$RC" "a failing drift gate fails the run (exit 1)"
is "pass|fail|pass|error" "$(sql "SELECT group_concat(status, '|') FROM (SELECT status FROM cases ORDER BY id)")" \
  "statuses: steady pass, growing fail, growing without the gate pass, 4 iterations error"
is 1 "$(sql "SELECT abs(value) <= 30 AND gate_pass = 1 AND gate = '|x| <= 30' FROM metrics m JOIN cases c ON c.id = m.case_id
  WHERE c.name = 'steady' AND m.name = 'ms_per_token_drift_pct'")" "steady: |drift| within 30%, gate stored and passed"
is 1 "$(sql "SELECT value > 30 AND gate_pass = 0 FROM metrics m JOIN cases c ON c.id = m.case_id
  WHERE c.name = 'growing' AND m.name = 'ms_per_token_drift_pct'")" "growing: drift > +30% (signed, upward), gate failed"
like "$(sql "SELECT error FROM cases WHERE name = 'growing'")" \
  '^ms_per_token_drift_pct [0-9.]+: \|drift\| > 30 \(first quarter [0-9.]+ ms, last quarter [0-9.]+ ms\)$' \
  "the case's error names the drift, the limit and both quarters"
is "1|%" "$(sql "SELECT value > 30 AND gate IS NULL AND gate_pass IS NULL, unit FROM metrics m JOIN cases c ON c.id = m.case_id
  WHERE c.name = 'growing-nogate' AND m.name = 'ms_per_token_drift_pct'")" "without the gate: the signed metric alone, in %"
like "$(sql "SELECT error FROM cases WHERE name = 'few'")" '^gate max_drift_pct needs iterations >= 8 \(got 4\)$' \
  "4 iterations with the gate: one clear error"

run_cmd "$KESTREL_EVAL" check "$T/drift.yaml" --json
like "$OUT" '"max_drift_pct": 30' "check --json prints the gate"

sed 's/max_drift_pct: 30}}$/max_drift_pct: -1}}/' "$T/drift.yaml" >"$T/neg.yaml"
run_cmd "$KESTREL_EVAL" check "$T/neg.yaml"
is 2 "$RC" "a negative max_drift_pct: exit 2"
like "$ERR" "neg\.yaml:[0-9]+:[0-9]+: .*'max_drift_pct' must be a percentage >= 0, got -1" "the error names file:line:col"
cat >"$T/kind.yaml" <<YAML
suite: kind
engines: {cpu: cpu}
cases:
  - {name: bw, kind: bandwidth, engine: cpu, gates: {max_drift_pct: 5}}
YAML
run_cmd "$KESTREL_EVAL" check "$T/kind.yaml"
is 2 "$RC" "the gate on a bandwidth case: exit 2"
like "$ERR" "kind\.yaml:[0-9]+:[0-9]+: .*max_drift_pct" "... with one line naming file:line:col and the gate"
done_testing
