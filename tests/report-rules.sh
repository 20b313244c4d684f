#!/bin/bash
# report-rules.sh - the accuracy, gate, crash and like-with-like rules of
# `kestrel-eval report` (docs/methodology.md) on a results DB built row by row
# with known numbers: each case is constructed to land on one side of one rule.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/report-lib.sh"
need_sqlite3
plan 32

DB=$T/r.db
newdb "$DB"
E1=$(sha_of engine-1) E2=$(sha_of engine-2) M1=$(sha_of model-1) M2=$(sha_of model-2)
add_run "$DB" 1 "$E1" "$M1"   # the baseline
add_run "$DB" 2 "$E2" "$M1"   # a new engine build: an intended difference
add_run "$DB" 3 "$E1" "$M1"   # the baseline's numbers again (unchanged rerun)
add_run "$DB" 4 "$E1" "$M2" H200   # different model file and GPU: suspect

G='<= 1e-05'
# case ids: run*100 + k
for r in 1 3; do
  add_case "$DB" $r $((r * 100 + 1)) acc-ok oracle pass
  add_metric "$DB" $((r * 100 + 1)) max_rel 1e-6 "$G" 1
  add_metric "$DB" $((r * 100 + 1)) argmax_agree 1 all 1 86/86
  add_case "$DB" $r $((r * 100 + 2)) acc-grow oracle pass
  add_metric "$DB" $((r * 100 + 2)) max_rel 1e-6 "$G" 1
  add_case "$DB" $r $((r * 100 + 3)) acc-floor oracle pass
  add_metric "$DB" $((r * 100 + 3)) max_rel 1e-9 "$G" 1
  add_case "$DB" $r $((r * 100 + 4)) acc-growth4 oracle pass '{"gates":{"max_rel_growth":4}}'
  add_metric "$DB" $((r * 100 + 4)) max_rel 1e-6 "$G" 1
  add_case "$DB" $r $((r * 100 + 5)) argmax-drop oracle pass
  add_metric "$DB" $((r * 100 + 5)) argmax_agree 1 '>= 0.9' 1 86/86
  add_case "$DB" $r $((r * 100 + 6)) greedy oracle pass
  add_metric "$DB" $((r * 100 + 6)) greedy_match 1 '' '' '16/16 tokens'
  add_output_i32 "$DB" $((r * 100 + 6)) p0.greedy.tokens 5 6 7 8
  add_case "$DB" $r $((r * 100 + 7)) gate-fail oracle pass
  add_metric "$DB" $((r * 100 + 7)) max_rel 5e-6 "$G" 1
  add_case "$DB" $r $((r * 100 + 8)) crashy oracle pass
  add_metric "$DB" $((r * 100 + 8)) max_rel 1e-6 "$G" 1
  add_case "$DB" $r $((r * 100 + 9)) better oracle pass
  add_metric "$DB" $((r * 100 + 9)) max_rel 8e-6 "$G" 1
  add_case "$DB" $r $((r * 100 + 10)) gone oracle pass
  add_metric "$DB" $((r * 100 + 10)) max_rel 1e-6 "$G" 1
  add_case "$DB" $r $((r * 100 + 11)) bx-same bitexact pass
  add_output_i32 "$DB" $((r * 100 + 11)) p0.tokens 1 2 3 4
  add_case "$DB" $r $((r * 100 + 12)) bx-diff bitexact pass
  add_output_i32 "$DB" $((r * 100 + 12)) p0.tokens 1 2 3 4
done
# run 2: the current run, each case on one side of its rule
add_case "$DB" 2 201 acc-ok oracle pass
add_metric "$DB" 201 max_rel 1.9e-6 "$G" 1                    # x1.9 <= x2
add_metric "$DB" 201 argmax_agree 1 all 1 86/86
add_case "$DB" 2 202 acc-grow oracle pass
add_metric "$DB" 202 max_rel 2.1e-6 "$G" 1                    # x2.1 > x2: regressed
add_case "$DB" 2 203 acc-floor oracle pass
add_metric "$DB" 203 max_rel 3e-9 "$G" 1                      # x3 but under the floor: ok
add_case "$DB" 2 204 acc-growth4 oracle pass '{"gates":{"max_rel_growth":4}}'
add_metric "$DB" 204 max_rel 3e-6 "$G" 1                      # x3 <= suite's x4: ok
add_case "$DB" 2 205 argmax-drop oracle pass
add_metric "$DB" 205 argmax_agree 0.98837 '>= 0.9' 1 85/86    # still passes its gate, but dropped
add_case "$DB" 2 206 greedy oracle pass
add_metric "$DB" 206 greedy_match 0 '' '' 'diverges at 2'
add_output_i32 "$DB" 206 p0.greedy.tokens 5 6 9 9
add_case "$DB" 2 207 gate-fail oracle fail
add_metric "$DB" 207 max_rel 9e-6 "$G" 0                      # within x2, but its absolute gate says fail
add_case "$DB" 2 208 crashy oracle crash '' 'killed by SIGSEGV'
add_case "$DB" 2 209 better oracle pass
add_metric "$DB" 209 max_rel 1e-6 "$G" 1                      # 8x smaller: improved
add_case "$DB" 2 211 bx-same bitexact pass
add_output_i32 "$DB" 211 p0.tokens 1 2 3 4
add_case "$DB" 2 212 bx-diff bitexact pass
add_output_i32 "$DB" 212 p0.tokens 1 2 3 5
add_case "$DB" 2 213 brand-new oracle pass
add_metric "$DB" 213 max_rel 1e-6 "$G" 1
# run 4: run 1's acc-ok on another model file and GPU
add_case "$DB" 4 401 acc-ok oracle pass
add_metric "$DB" 401 max_rel 1e-6 "$G" 1
add_metric "$DB" 401 argmax_agree 1 all 1 86/86

verdict_of() { printf '%s\n' "$OUT" | sed -n "s/^$1 ([^)]*): \([a-z]*\).*/\1/p"; }
line_of() { printf '%s\n' "$OUT" | awk -v c="$1" -v m="$2" '/^[^ ]/ { cur = ($1 == c) } cur && $1 == m { print; exit }'; }

baseline() { "$KESTREL_EVAL" baseline "$@" --db "$DB"; }
baseline set 1 main >/dev/null

run_cmd "$KESTREL_EVAL" report 2 --against main --db "$DB"
is 1 "$RC" "report: exit 1 when something regressed or crashed"
is ok "$(verdict_of acc-ok)" "max_rel x1.9 within the default growth x2: ok"
is regressed "$(verdict_of acc-grow)" "max_rel x2.1 beyond growth x2: regressed"
like "$(line_of acc-grow max_rel)" '2\.1e-06 > 2 x max\(base 1e-06, floor 1e-07\)' "regressed line names the rule and its numbers"
is ok "$(verdict_of acc-floor)" "max_rel 1e-9 -> 3e-9 under the noise floor: ok"
is ok "$(verdict_of acc-growth4)" "max_rel x3 within the case's max_rel_growth 4: ok"
is regressed "$(verdict_of argmax-drop)" "argmax agreement 86/86 -> 85/86 (gate still passes): regressed"
is regressed "$(verdict_of greedy)" "greedy no longer matching: regressed"
like "$(line_of greedy 'output')" 'regressed .*tokens must equal .*2 of 4 differ, first at 2' "greedy tokens compared with the archived baseline tokens"
is regressed "$(verdict_of gate-fail)" "a failed absolute gate counts though max_rel grew < x2"
like "$(line_of gate-fail max_rel)" 'fail +gate <= 1e-05: FAIL' "the gate line says which gate failed"
is crashed "$(verdict_of crashy)" "crashed case: crashed"
like "$(line_of crashy status)" 'case crash: killed by SIGSEGV' "the crash line carries the error"
is improved "$(verdict_of better)" "max_rel 8x smaller: improved"
is ok "$(verdict_of bx-same)" "bitexact outputs identical: ok"
is regressed "$(verdict_of bx-diff)" "bitexact outputs with one element changed: regressed"
like "$(line_of bx-diff output)" "1/4 unequal +regressed +values must equal|1/4 unequal +regressed +tokens must equal" "bitexact line counts unequal elements"
is new "$(verdict_of brand-new)" "case only in the current run: new"
is missing "$(verdict_of gone)" "case only in the baseline: missing"
like "$OUT" "intended +engine 'cpu' sha256: $E1 -> $E2" "like with like: engine difference marked intended"
ok "! printf '%s' \"\$OUT\" | grep -q SUSPECT" "same model and GPU: not suspect"
like "$OUT" '^13 cases: 4 ok, 1 improved, 5 regressed, 1 new, 1 missing, 1 crashed; 1 gate failures' "summary counts"

run_cmd "$KESTREL_EVAL" report 2 --against main --only-regressions --db "$DB"
is "acc-grow argmax-drop greedy gate-fail crashy bx-diff" "$(printf '%s\n' "$OUT" | sed -n 's/^\([a-z0-9-]*\) ([a-z-]*): .*/\1/p' | tr '\n' ' ' | sed 's/ $//')" \
  "--only-regressions lists only regressed and crashed cases"

run_cmd "$KESTREL_EVAL" report 3 --against 1 --db "$DB"
is 0 "$RC" "unchanged rerun against a run id: exit 0"
is "" "$(printf '%s\n' "$OUT" | sed -n 's/^[a-z0-9-]* ([a-z-]*): //p' | grep -v '^ok$')" "unchanged rerun: every case ok"

run_cmd "$KESTREL_EVAL" report 4 --against main --db "$DB"
like "$OUT" 'SUSPECT COMPARISON' "different model hash and GPU: comparison marked suspect"
like "$OUT" "suspect +model 'mini' sha256: $M1 -> $M2" "the model difference is listed as suspect"
like "$OUT" 'suspect +gpu: \(none\) -> H200' "the GPU difference is listed as suspect"

run_cmd "$KESTREL_EVAL" report 2 --db "$DB"
is 1 "$RC" "without --against (no suite baseline): gates only, the failed gate still exits 1"
like "$OUT" 'against: nothing' "gates-only report says so"

run_cmd "$KESTREL_EVAL" report 2 --against nosuch --db "$DB"
is "2|kestrel-eval: $DB: no baseline or run 'nosuch'" "$RC|$ERR" "unknown baseline: one error line, exit 2"
run_cmd "$KESTREL_EVAL" report 99 --db "$DB"
is 2 "$RC" "unknown run id: exit 2"
done_testing
