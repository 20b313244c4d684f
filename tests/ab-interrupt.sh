#!/bin/sh
# ab interrupted (SIGTERM from a `timeout` wrapper, SIGINT from a terminal): the running round is
# killed, the pairs completed so far are recorded with their statistics, the unfinished pair is
# dropped, the run is marked interrupted, exit 128 + signal.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/ab-lib.sh"
plan 16

# wait_for CMD: up to 120 s for the shell condition (a slow CI machine starts rounds slowly)
wait_for() { for _ in $(seq 1 1200); do eval "$1" && return 0; sleep 0.1; done; return 1; }
# the number of complete pairs ab has printed (its table lines: pair number, order, two medians, ratio)
pairs_done() { grep -cE '^ +[0-9]+ +(AB|BA) ' "$T/t.out" 2>/dev/null || true; }

# start_ab PAIRS: an A/A session of 20 ms steps in the background, its pid in $pid
start_ab() {
  "$KESTREL_EVAL" ab "$T/ab.yaml" --case tiny-decode --a "$FAULT" --b "$FAULT" --a-options sleep_us=20000 \
    --b-options sleep_us=20000,threads=1 --rounds "$1" --db "$T/ab.db" >"$T/t.out" 2>"$T/t.err" &
  pid=$!
}

# SIGTERM after at least 3 complete pairs of 40: a verdict over the complete pairs
start_ab 40
wait_for '[ "$(pairs_done)" -ge 3 ]'
kill -TERM "$pid"
wait "$pid"
RC=$?
is 143 "$RC" "SIGTERM: exit 143"
n=$(pairs_done)
like "$(head -1 "$T/t.err")" "^kestrel-eval: ab: interrupted by SIGTERM during pair $((n + 1)) of 40: $n complete pair\(s\) recorded$" \
  "SIGTERM: one line naming the signal, the pair and what was kept"
is interrupted "$(q "SELECT status FROM runs WHERE id = (SELECT max(id) FROM runs)")" "SIGTERM: run status interrupted"
is "error|interrupted by SIGTERM during pair $((n + 1)) of 40: $n complete pair(s) recorded" \
  "$(q "SELECT status || '|' || error FROM cases WHERE run_id = (SELECT max(id) FROM runs)")" "SIGTERM: case status and error"
is "$((2 * n))" "$(q "SELECT count(*) FROM ab_rounds r JOIN cases c ON c.id = r.case_id WHERE c.run_id = (SELECT max(id) FROM runs)")" \
  "SIGTERM: the complete pairs' rounds recorded, the unfinished one dropped"
is "$n|$n" "$(q "SELECT sum(side = 'A') || '|' || sum(side = 'B') FROM ab_rounds r JOIN cases c ON c.id = r.case_id WHERE c.run_id = (SELECT max(id) FROM runs)")" \
  "SIGTERM: as many A rounds as B rounds"
is "$((12 * n))" "$(q "SELECT count(*) FROM samples s JOIN cases c ON c.id = s.case_id WHERE c.run_id = (SELECT max(id) FROM runs) AND series = 'B.ms_per_token'")" \
  "SIGTERM: every sample of the recorded B rounds"
like "$(q "SELECT text FROM metrics m JOIN cases c ON c.id = m.case_id WHERE c.run_id = (SELECT max(id) FROM runs) AND m.name = 'verdict'")" \
  "^(no difference beyond noise|B (faster|slower)(, below min_effect)?)$" "SIGTERM: a verdict over the complete pairs"
like "$(cat "$T/t.out")" "recorded: run [0-9]+ .* \(interrupted\)$" "SIGTERM: the record line says interrupted"
ok '! pgrep -f "round-child $T/" >/dev/null 2>&1' "SIGTERM: no round process left behind"

# SIGINT while the first round runs: nothing to compare, the session still recorded as interrupted
start_ab 5
wait_for 'pgrep -P "$pid" >/dev/null 2>&1'
kill -INT "$pid"
wait "$pid"
RC=$?
is 130 "$RC" "SIGINT: exit 130"
is "kestrel-eval: ab: interrupted by SIGINT during pair 1 of 5: 0 complete pair(s) recorded, too few for a verdict" \
  "$(head -1 "$T/t.err")" "SIGINT in the first pair: message"
is interrupted "$(q "SELECT status FROM runs WHERE id = (SELECT max(id) FROM runs)")" "SIGINT: run status interrupted"
is 0 "$(q "SELECT count(*) FROM ab_rounds r JOIN cases c ON c.id = r.case_id WHERE c.run_id = (SELECT max(id) FROM runs)")" \
  "SIGINT in the first pair: no rounds recorded"
is 0 "$(q "SELECT count(*) FROM metrics m JOIN cases c ON c.id = m.case_id WHERE c.run_id = (SELECT max(id) FROM runs)")" \
  "SIGINT in the first pair: no statistics"
ok '! pgrep -f "round-child $T/" >/dev/null 2>&1' "SIGINT: no round process left behind"
done_testing
