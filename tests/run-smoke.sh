#!/bin/sh
# run-smoke: `kestrel-eval run suites/smoke.yaml` end to end into a temp DB:
# exit 0, one run row, artifact hashes equal sha256sum of the files, per-case
# metric rows, every timing sample stored, v_results rows; a second run's
# bitexact cases compare against the first run's archived outputs.
. "$top_srcdir/tests/lib.sh"
[ -f "$FIX/mini27-f32.gguf" ] && [ -f "$FIX/mini27.oracle.gguf.zst" ] || skip_all "fixtures not built (tests/fixtures)"
. "$top_srcdir/tests/run-lib.sh"
plan 23

SUITE=$top_srcdir/suites/smoke.yaml
DB=$T/k.db
run_cmd "$KESTREL_EVAL" run "$SUITE" --db "$DB" --label smoke-test
is 0 "$RC" "smoke suite exits 0"
[ "$RC" -eq 0 ] || printf '%s\n%s\n' "$OUT" "$ERR" | sed 's/^/#   /'
N_CASES=$(sql "SELECT count(*) FROM cases")
like "$OUT" "^\[$N_CASES/$N_CASES\] " "one progress line per case, $N_CASES cases"
like "$OUT" "smoke: run 1 passed: $N_CASES pass, 0 fail" "summary line"
is 1 "$(sql "SELECT count(*) FROM runs")" "one run row"
is "passed|smoke-test|smoke|1" "$(sql "SELECT status, label, suite_name, pid > 0 FROM runs")" "run status, label, suite, pid"
is 1 "$(sql "SELECT ended_at IS NOT NULL AND started_at <= ended_at FROM runs")" "run has ended_at"
is "$(sha "$SUITE")" "$(sql "SELECT suite_sha256 FROM runs")" "suite sha256 recorded"
LIB=$(readlink -f "$KESTREL_ENGINE_DIR/libkestrel-cpu.so")
is "$(sha "$LIB")" "$(sql "SELECT sha256 FROM artifacts WHERE kind = 'engine' AND name = 'cpu'")" "engine artifact sha256 == sha256sum of the library"
is "$LIB|$(stat -c %s "$LIB")" "$(sql "SELECT path, size FROM artifacts WHERE kind = 'engine'")" "engine artifact path and size"
is "kestrel-cpu|cpu (2 threads)" "$(sql "SELECT engine_name, device FROM artifacts WHERE kind = 'engine'")" "engine-reported name and device"
is "$(sha "$FIX/mini27-f32.gguf")" "$(sql "SELECT sha256 FROM artifacts WHERE kind = 'model' AND name = 'mini27-f32'")" "model artifact sha256"
is "$(sha "$FIX/mini27.oracle.gguf.zst")" "$(sql "SELECT sha256 FROM artifacts WHERE kind = 'oracle' AND name = 'mini27'")" "oracle artifact sha256"
is 0 "$(sql "SELECT count(*) FROM cases WHERE status <> 'pass'")" "every case passed"
# oracle cases: the gated metrics, with gate and pass flag
N_ORACLE=$(sql "SELECT count(*) FROM cases WHERE kind = 'oracle'")
is "$N_ORACLE" "$(sql "SELECT count(*) FROM metrics m JOIN cases c ON c.id = m.case_id
   WHERE c.kind = 'oracle' AND m.name = 'max_rel' AND m.gate = '<= 1e-05' AND m.gate_pass = 1 AND m.value < 1e-5")" "max_rel row with its gate per oracle case"
is "$N_ORACLE" "$(sql "SELECT count(*) FROM metrics m JOIN cases c ON c.id = m.case_id
   WHERE c.kind = 'oracle' AND m.name = 'argmax_agree' AND m.value = 1.0 AND m.text = '86/86' AND m.gate = 'all'")" "argmax_agree 86/86 per oracle case"
is "$N_ORACLE" "$(sql "SELECT count(*) FROM metrics m JOIN cases c ON c.id = m.case_id
   WHERE c.kind = 'oracle' AND m.name = 'greedy_match' AND m.value = 1 AND m.text LIKE '%/% tokens'")" "greedy_match per oracle case"
# decode-bench: the median and every sample
# (the expected count from the suite file itself, not from what the runner stored)
ITER=$(sed -n '/kind: decode-bench/,/^  - name:/s/^ *iterations: *\([0-9][0-9]*\).*/\1/p' "$SUITE" | head -1)
is "$ITER" "$(sql "SELECT json_extract(params, '\$.iterations') FROM cases WHERE kind = 'decode-bench'")" "params record the suite's iterations (${ITER:-none found in $SUITE})"
is "$ITER" "$(sql "SELECT count(*) FROM samples s JOIN cases c ON c.id = s.case_id WHERE c.kind = 'decode-bench' AND s.series = 'ms_per_token' AND s.value > 0")" "samples stored: count == iterations ($ITER)"
is 1 "$(sql "SELECT count(*) FROM metrics m JOIN cases c ON c.id = m.case_id WHERE c.kind = 'decode-bench'
   AND m.name = 'ms_per_token_median' AND m.unit = 'ms' AND m.value > 0")" "ms_per_token_median row"
# v_results: one row per metric of every case
is "$(sql "SELECT count(*) FROM metrics")" "$(sql "SELECT count(*) FROM v_results WHERE run_id = 1")" "v_results has a row per metric"
is "$(sha "$LIB")" "$(sql "SELECT DISTINCT engine_sha256 FROM v_results")" "v_results carries the engine sha256"
# a second run: bitexact cases compare with run 1's archived outputs
run_cmd "$KESTREL_EVAL" run "$SUITE" --db "$DB" --case '*-bitexact'
is 0 "$RC" "second run (bitexact only) exits 0"
is "0|1" "$(sql "SELECT group_concat(DISTINCT CAST(m.value AS INTEGER)) FROM metrics m JOIN cases c ON c.id = m.case_id
   WHERE c.run_id = 2 AND m.name = 'unequal'")|$(sql "SELECT DISTINCT CAST(m.value AS INTEGER) FROM metrics m JOIN cases c ON c.id = m.case_id
   WHERE c.run_id = 2 AND m.name = 'reference_run'")" "bitexact: 0 unequal elements against reference run 1"
done_testing
