#!/bin/bash
# report-timing.sh - timing verdicts of `kestrel-eval report`: slower/faster
# only when |median ratio - 1| >= min_effect AND Mann-Whitney p < alpha, else
# same; fewer than 5 samples: inconclusive. First on stored samples with known
# numbers, then end to end: real runs of a decode-bench case on the fault test
# engine, which sleeps sleep_us per decode step (an injected slowdown).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/report-lib.sh"
need_sqlite3
plan 18

verdict_of() { printf '%s\n' "$OUT" | sed -n "s/^$1 ([^)]*): \([a-z]*\).*/\1/p"; }
line_of() { printf '%s\n' "$OUT" | awk -v c="$1" -v m="$2" '/^[^ ]/ { cur = ($1 == c) } cur && $1 == m { print; exit }'; }

# ---- part 1: stored samples with known numbers
DB=$T/t.db
newdb "$DB"
E=$(sha_of engine) M=$(sha_of model)
add_run "$DB" 1 "$E" "$M"
add_run "$DB" 2 "$E" "$M"
BASE=$(seq_samples 10.00 0.01 20)                 # 10.00 .. 10.19 ms
k=0
for name in t-slow t-aa t-small t-few t-fast t-effect1; do
  k=$((k + 1))
  params=''
  [ $name = t-effect1 ] && params='{"gates":{"min_effect":0.01}}'
  add_case "$DB" 1 $((100 + k)) $name decode-bench pass "$params"
  add_case "$DB" 2 $((200 + k)) $name decode-bench pass "$params"
  if [ $name = t-few ]; then
    add_samples "$DB" $((100 + k)) ms_per_token 10 10.1 10.2
    add_samples "$DB" $((200 + k)) ms_per_token 12 12.1 12.2
  else
    add_samples "$DB" $((100 + k)) ms_per_token $BASE
  fi
done
add_samples "$DB" 201 ms_per_token $(seq_samples 10.80 0.01 20)  # +8%, fully separated
add_samples "$DB" 202 ms_per_token $(seq_samples 10.005 0.01 20) # interleaved with the baseline
add_samples "$DB" 203 ms_per_token $(seq_samples 10.20 0.01 20)  # +2%: significant but below 3%
add_samples "$DB" 205 ms_per_token $(seq_samples 9.00 0.01 20)   # -10%
add_samples "$DB" 206 ms_per_token $(seq_samples 10.20 0.01 20)  # +2% with min_effect 1%

run_cmd "$KESTREL_EVAL" report 2 --against 1 --db "$DB"
is 1 "$RC" "timing: a slower case exits 1"
is regressed "$(verdict_of t-slow)" "+8% with separated samples: regressed"
like "$(line_of t-slow ms_per_token)" 'slower +MWU p=[0-9.e-]+ < 0.01, \+7\.[0-9]% >= 3%' "slower line: MWU p < alpha and effect >= min_effect"
is ok "$(verdict_of t-aa)" "interleaved samples (A/A): ok"
like "$(line_of t-aa ms_per_token)" 'same +MWU p=[0-9.]+ >= 0.01' "A/A line: same, p >= alpha"
is ok "$(verdict_of t-small)" "+2% although significant: ok"
like "$(line_of t-small ms_per_token)" 'same +MWU p=[0-9.e-]+ < 0.01, \+2\.0% < 3%' "small effect line: same, effect < min_effect"
like "$(line_of t-few ms_per_token)" 'inconclusive +too few samples: 3 vs 3' "3 samples each: inconclusive, not a pass"
is improved "$(verdict_of t-fast)" "-10%: improved"
like "$(line_of t-fast ms_per_token)" 'faster' "faster line"
is regressed "$(verdict_of t-effect1)" "+2% with the case's min_effect 1%: regressed"

# ---- part 2: real runs on the fault engine
# Steps are dominated by the engine's sleep so that the verdicts do not depend on
# the machine's load. The case sets min_effect 0.25: between two processes on a
# loaded 2-core CI machine the median ms/token of an unchanged engine drifted by
# up to 17% (measured, load average 10), which the default 3% would call a
# change; within one process the noise is much lower (see docs/methodology.md).
# The injected slowdown (+50 ms per step on ~55 ms) is far beyond 25%.
FAULT=$top_builddir/tests/engines/.libs/libkestrel-fault.so
[ -f "$FAULT" ] || { echo "# no $FAULT (built by make check)"; }
suite() { # FILE SLEEP_US ITERATIONS
  cat >"$1" <<EOF
suite: timing
engines:
  slow: {lib: $FAULT, options: "sleep_us=$2"}
models:
  m: $FIX/mini27-q8_0.gguf
defaults: {engine: slow, threads: 1, warmup: 1}
cases:
  - name: decode
    kind: decode-bench
    model: m
    prompt_len: 4
    step_tokens: 1
    iterations: $3
    gates: {min_effect: 0.25}
EOF
}
DB2=$T/e2e.db
suite "$T/base.yaml" 50000 20
suite "$T/slow.yaml" 100000 20
suite "$T/few.yaml" 50000 3
run_cmd "$KESTREL_EVAL" run "$T/base.yaml" --db "$DB2"
is 0 "$RC" "e2e: baseline run of the decode case"
"$KESTREL_EVAL" baseline set latest timing-main --db "$DB2" >/dev/null
run_cmd "$KESTREL_EVAL" run "$T/base.yaml" --db "$DB2"
run_cmd "$KESTREL_EVAL" report latest --against timing-main --db "$DB2"
is "0|ok" "$RC|$(verdict_of decode)" "e2e: A/A rerun of the unchanged engine: ok, exit 0"
like "$(line_of decode ms_per_token)" ' same ' "e2e: A/A timing line says same"
run_cmd "$KESTREL_EVAL" run "$T/slow.yaml" --db "$DB2"
run_cmd "$KESTREL_EVAL" report latest --against timing-main --db "$DB2"
is "1|regressed" "$RC|$(verdict_of decode)" "e2e: 50 ms more sleep per step: regressed, exit 1"
like "$(line_of decode ms_per_token)" 'slower +MWU p=[0-9.e-]+ < 0.01, \+[0-9.]+% >= 25%' "e2e: slower with the test and threshold shown"
run_cmd "$KESTREL_EVAL" run "$T/few.yaml" --db "$DB2"
run_cmd "$KESTREL_EVAL" report latest --against timing-main --db "$DB2"
like "$(line_of decode ms_per_token)" 'inconclusive +too few samples: 20 vs 3' "e2e: 3 iterations: inconclusive"
is 0 "$RC" "e2e: inconclusive alone does not fail the report"
done_testing
