#!/bin/sh
# run-crash: crash isolation. Cases on the fault engine (segv in forward,
# abort in forward, segv in open, hang past a 2 s timeout) between normal
# cases: statuses crash/crash/crash/timeout with the signal name and the
# child's stderr tail, the normal cases pass, the run goes on, exit 1.
. "$top_srcdir/tests/lib.sh"
[ -f "$FIX/mini27-f32.gguf" ] && [ -f "$FIX/mini27.oracle.gguf.zst" ] || skip_all "fixtures not built (tests/fixtures)"
. "$top_srcdir/tests/run-lib.sh"
[ -f "$FAULT" ] || skip_all "fault engine not built ($FAULT)"
plan 19

DB=$T/k.db
# under --enable-sanitizers, let SIGSEGV kill the case process as it would without ASan
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"; export ASAN_OPTIONS
cat >"$T/crash.yaml" <<YAML
suite: crash
engines:
  cpu: cpu
  segv: {lib: $FAULT, options: "fault=segv,fault_after=1"}
  abrt: {lib: $FAULT, options: "fault=abort,fault_after=3"}
  segv-open: {lib: $FAULT, options: "fault=segv,fault_on=open"}
  hang: {lib: $FAULT, options: "fault=hang,fault_after=2"}
  badopt: {lib: cpu, options: "no_such_option=1"}
models:
  m: $FIX/mini27-q8_0.gguf
oracles:
  o: $FIX/mini27.oracle.gguf.zst
defaults: {engine: cpu, threads: 1, timeout: 30, warmup: 1, iterations: 5}
cases:
  - {name: first-ok, kind: decode-bench, model: m}
  - {name: segv-forward, kind: oracle, model: m, oracle: o, engine: segv}
  - {name: abort-forward, kind: decode-bench, model: m, engine: abrt}
  - {name: segv-open, kind: decode-bench, model: m, engine: segv-open}
  - {name: hang-forward, kind: decode-bench, model: m, engine: hang, timeout: 2}
  - {name: last-ok, kind: decode-bench, model: m}
  - {name: open-error, kind: decode-bench, model: m, engine: badopt}
  - {name: gate-fail, kind: oracle, model: m, oracle: o, gates: {max_rel: 1e-9, argmax: all}}
YAML
run_cmd "$KESTREL_EVAL" run "$T/crash.yaml" --db "$DB"
is 1 "$RC" "a crashed / timed-out case makes the run exit 1"
is "first-ok|pass
segv-forward|crash
abort-forward|crash
segv-open|crash
hang-forward|timeout
last-ok|pass
open-error|error
gate-fail|fail" "$(sql "SELECT name, status FROM cases ORDER BY id")" "statuses in suite order; the run goes on after each fault"
is failed "$(sql "SELECT status FROM runs")" "run status failed"
E_SEGV=$(sql "SELECT error FROM cases WHERE name = 'segv-forward'")
like "$E_SEGV" "^killed by SIGSEGV \(Segmentation fault\)" "segv: signal name"
like "$E_SEGV" "fault engine: injecting segv in forward \(forward calls before: 1\)" "segv: stderr tail"
like "$E_SEGV" "case segv-forward: engine .*libkestrel-fault.so" "segv: stderr tail has the case's own log line"
E_ABRT=$(sql "SELECT error FROM cases WHERE name = 'abort-forward'")
like "$E_ABRT" "^killed by SIGABRT \(Aborted\)" "abort: signal name"
like "$E_ABRT" "injecting abort in forward \(forward calls before: 3\)" "abort: stderr tail"
like "$(sql "SELECT error FROM cases WHERE name = 'segv-open'")" "^fault engine: injecting segv in open" "segv in open(): crash with its tail"
E_HANG=$(sql "SELECT error FROM cases WHERE name = 'hang-forward'")
like "$E_HANG" "^timed out after 2\.0 s \(child killed with SIGKILL\)" "hang: timeout message"
like "$E_HANG" "injecting hang in forward" "hang: stderr tail"
# upper bound: slack for a loaded CI machine, still far below the suite's 30 s default timeout
is 1 "$(sql "SELECT duration_s >= 2.0 AND duration_s < 10.0 FROM cases WHERE name = 'hang-forward'")" "hang: killed at the 2 s timeout"
is 0 "$(sql "SELECT count(*) FROM metrics m JOIN cases c ON c.id = m.case_id WHERE c.status IN ('crash','timeout')")" "no half results from a crashed case"
is 5 "$(sql "SELECT count(*) FROM samples s JOIN cases c ON c.id = s.case_id WHERE c.name = 'last-ok'")" "the case after the crashes stored its samples"
like "$OUT" "\[2/8\] segv-forward  crash  .*killed by SIGSEGV" "log line of the crash"
like "$(sql "SELECT error FROM cases WHERE name = 'open-error'")" "^engine 'badopt': cannot open model 'm': .*no_such_option" "engine open() error: status error with the engine's message"
like "$(sql "SELECT error FROM cases WHERE name = 'gate-fail'")" "^max_rel [0-9.e+-]+ > 1e-09 \(prompt [0-9]+ pos [0-9]+\)" "failed gate: the error names metric, value, limit and where"
is "0|<= 1e-09" "$(sql "SELECT m.gate_pass, m.gate FROM metrics m JOIN cases c ON c.id = m.case_id WHERE c.name = 'gate-fail' AND m.name = 'max_rel'")" "failed gate: gate and gate_pass 0 stored"
is 3 "$(sql "SELECT count(DISTINCT v.case_name) FROM v_results v WHERE v.status IN ('crash') AND v.metric IS NULL")" "crashed cases appear in v_results with metric NULL"
done_testing
