#!/bin/sh
# run-kill9: a runner killed with SIGKILL mid-run leaves a valid database
# with every finished case complete; its case process dies with it; the next
# read-write open marks the run 'interrupted'. SIGTERM to a runner: the case
# process is killed, the run marked 'interrupted', exit 143.
. "$top_srcdir/tests/lib.sh"
[ -f "$FIX/mini27-q8_0.gguf" ] || skip_all "fixtures not built (tests/fixtures)"
. "$top_srcdir/tests/run-lib.sh"
[ -f "$FAULT" ] || skip_all "fault engine not built ($FAULT)"
plan 14

DB=$T/k.db
# 6 slow cases: 0.15 s per forward call x (1 prompt + 6 steps) ~ 1 s each
cat >"$T/slow.yaml" <<YAML
suite: slow
engines:
  slow: {lib: $FAULT, options: "sleep_us=150000"}
  cpu: cpu
models:
  m: $FIX/mini27-q8_0.gguf
defaults: {engine: slow, threads: 1, timeout: 60, warmup: 1, iterations: 5}
cases:
  - {name: slow-1, kind: decode-bench, model: m}
  - {name: slow-2, kind: decode-bench, model: m}
  - {name: slow-3, kind: decode-bench, model: m}
  - {name: slow-4, kind: decode-bench, model: m}
  - {name: slow-5, kind: decode-bench, model: m}
  - {name: slow-6, kind: decode-bench, model: m}
  - {name: fast, kind: decode-bench, model: m, engine: cpu}
YAML

# the case process of a runner: its child (own process group)
child_of() { ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ' | head -1; }
wait_child() { # RUNNER: wait (<= 30 s) until the runner has a case process; print its pid
  i=0
  while [ $i -lt 300 ]; do
    c=$(child_of "$1")
    [ -n "$c" ] && { echo "$c"; return 0; }
    sleep 0.1; i=$((i + 1))
  done
  return 1
}
wait_cases() { # DB N: wait (<= 30 s) until the DB holds >= N cases
  i=0
  while [ $i -lt 300 ]; do
    n=$(sql "SELECT count(*) FROM cases" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge "$2" ] && return 0
    sleep 0.1; i=$((i + 1))
  done
  return 1
}

"$KESTREL_EVAL" run "$T/slow.yaml" --db "$DB" >"$T/run1.out" 2>&1 &
RUNNER=$!
ok "wait_cases '$DB' 1" "at least one case finished"
# the next case's process (polled, not a fixed sleep: a loaded machine may take a while to start it)
CHILD=$(wait_child $RUNNER)
ok "[ -n '$CHILD' ]" "a case process is running (pid ${CHILD:-none})"
kill -9 $RUNNER
wait $RUNNER 2>/dev/null
i=0; while [ -n "$CHILD" ] && kill -0 "$CHILD" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
ok "! kill -0 ${CHILD:-0} 2>/dev/null" "the case process died with the runner"
is ok "$(sql "PRAGMA integrity_check")" "integrity_check ok after kill -9"
N=$(sql "SELECT count(*) FROM cases")
ok "[ $N -ge 1 ] && [ $N -lt 7 ]" "finished cases are present ($N of 7)"
is "$N" "$(sql "SELECT count(*) FROM cases c WHERE c.status = 'pass'
   AND (SELECT count(*) FROM samples s WHERE s.case_id = c.id) = 5
   AND (SELECT count(*) FROM metrics m WHERE m.case_id = c.id AND m.name = 'ms_per_token_median') = 1")" "every stored case is complete (status, 5 samples, median)"
is running "$(sql "SELECT status FROM runs WHERE id = 1")" "before any open the run still says running"
# the next read-write open (another run) marks it interrupted
run_cmd "$KESTREL_EVAL" run "$T/slow.yaml" --db "$DB" --case fast
is 0 "$RC" "a new run on the same database works"
is "1|interrupted|0
2|passed|1" "$(sql "SELECT id, status, ended_at IS NOT NULL FROM runs ORDER BY id")" "run 1 marked interrupted (ended_at NULL), run 2 passed"

# SIGTERM: the runner kills its case, marks the run interrupted, exits 143
"$KESTREL_EVAL" run "$T/slow.yaml" --db "$DB" >"$T/run3.out" 2>"$T/run3.err" &
RUNNER=$!
ok "wait_cases '$DB' $((N + 2))" "third run finished a case"
CHILD=$(wait_child $RUNNER)
kill -TERM $RUNNER
wait $RUNNER; RC=$?
is 143 "$RC" "SIGTERM: exit 143"
like "$(cat "$T/run3.err")" "^kestrel-eval: interrupted by SIGTERM during case 'slow-[0-9]': run 3 marked interrupted$" "SIGTERM: message"
is interrupted "$(sql "SELECT status FROM runs WHERE id = 3")" "SIGTERM: run 3 interrupted"
ok "! kill -0 ${CHILD:-0} 2>/dev/null" "SIGTERM: the case process is gone"
done_testing
