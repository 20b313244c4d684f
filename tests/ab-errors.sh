#!/bin/sh
# ab: refusals and errors exit 2 with one clear line and write nothing; a crashed round
# exits 1 and is recorded as a crash.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/ab-lib.sh"
plan 31

AB() { run_cmd "$KESTREL_EVAL" ab "$T/ab.yaml" "$@"; }
first() { printf '%s\n' "$ERR" | grep -v '^usage:' | head -1; }

AB --case bw --a "$FAULT" --b "$FAULT" --db "$T/ab.db"
is 2 "$RC" "not a decode-bench case: exit 2"
like "$(first)" "^kestrel-eval: $T/ab.yaml:[0-9]+:[0-9]+: case 'bw' is a bandwidth case; ab needs a decode-bench case$" \
  "not a decode-bench case: message with file:line:col"

AB --case nope --a "$FAULT" --b "$FAULT" --db "$T/ab.db"
is 2 "$RC" "unknown case: exit 2"
is "kestrel-eval: $T/ab.yaml: no case 'nope'" "$(first)" "unknown case: message"

AB --case tiny-decode --a "$FAULT" --db "$T/ab.db"
is 2 "$RC" "missing --b: exit 2"
is "kestrel-eval: ab: missing --b LIB_B" "$(first)" "missing --b: message"

AB --case tiny-decode --a "$FAULT" --b "$FAULT" --rounds 2 --db "$T/ab.db"
is 2 "$RC" "--rounds 2: exit 2"
is "kestrel-eval: ab: --rounds '2': expected an integer in 3..1000 (pairs of rounds)" "$(first)" "--rounds 2: message"

AB --case tiny-decode --a nosuchengine --b "$FAULT" --db "$T/ab.db"
is 2 "$RC" "unknown engine: exit 2"
like "$(first)" "^kestrel-eval: ab: --a: engine 'nosuchengine': libkestrel-nosuchengine.so not found" "unknown engine: message"

# two variables at once: another library AND other options
AB --case tiny-decode --a "$CPU" --b "$FAULT" --b-options sleep_us=10 --db "$T/ab.db"
is 2 "$RC" "library and options both differ: exit 2"
like "$(first)" "^kestrel-eval: ab: refusing: A and B differ in both the library .* and the options .*--force$" \
  "library and options both differ: message"

# the two sides report different models (the CPU engine's KV cache size via its ctx option)
AB --case tiny-decode --a "$CPU" --b "$CPU" --a-options ctx=64 --b-options ctx=128 --rounds 3 --db "$T/ab.db"
is 2 "$RC" "engines report different models: exit 2"
like "$(first)" "^kestrel-eval: ab: refusing: engines report different models: max_context 64 vs 128 \(A: .*libkestrel-cpu.so, B: .*libkestrel-cpu.so\)$" \
  "engines report different models: message"

# an engine that refuses its options: an input error, not a crash
AB --case tiny-decode --a "$CPU" --b "$CPU" --a-options bogus_option=1 --b-options threads=1 --db "$T/ab.db"
is 2 "$RC" "engine refuses the options: exit 2"
like "$(first)" "^kestrel-eval: ab: round 1 \(A, .*libkestrel-cpu.so\): .*bogus_option" "engine refuses the options: engine's message"
ok '[ ! -e "$T/ab.db" ]' "no database written by any refusal"

# the model file changes during the session (a byte appended after the first rounds)
"$KESTREL_EVAL" ab "$T/ab.yaml" --case tiny-decode --a "$FAULT" --b "$FAULT" --a-options sleep_us=20000 \
  --b-options sleep_us=20000,threads=1 --rounds 4 --db "$T/ab.db" >"$T/chg.out" 2>"$T/chg.err" &
pid=$!
# append only once the first round's process exists: the session hashed the model before
# spawning it, so the change is seen however slowly this machine starts the rounds
for _ in $(seq 1 200); do pgrep -P "$pid" >/dev/null 2>&1 && break; sleep 0.1; done
printf 'x' >>"$T/tiny.gguf"
wait $pid
RC=$?
is 2 "$RC" "model changed between rounds: exit 2"
like "$(head -1 "$T/chg.err")" "^kestrel-eval: ab: refusing: model 'tiny' changed during the session: $T/tiny.gguf sha256 was [0-9a-f]{12}\.\.\., is now [0-9a-f]{12}\.\.\.$" \
  "model changed between rounds: message"
ok '[ ! -e "$T/ab.db" ]' "model changed: nothing written"
"$KESTREL_EVAL" gen-model --preset tiny --type q8_0 --layers 1 --vocab 64 --seed 5 -o "$T/tiny.gguf" >/dev/null 2>&1

# with --force the differing models are accepted and recorded
AB --case tiny-decode --a "$CPU" --b "$CPU" --a-options ctx=64 --b-options ctx=128 --rounds 3 --force --db "$T/ab.db"
is 0 "$RC" "--force: runs despite the difference"
is '1' "$(q "SELECT count(*) FROM cases WHERE kind='ab' AND params LIKE '%\"force\":true%'")" "--force: recorded with force in params"

# a round that crashes: exit 1, the case recorded as a crash with the signal
AB --case tiny-decode --a "$FAULT" --b "$FAULT" --b-options fault=segv,fault_on=forward,sleep_us=0 --rounds 3 --db "$T/ab.db"
is 1 "$RC" "crashed round: exit 1"
# (a --enable-sanitizers build reports the null store itself and exits 1 instead of dying of SIGSEGV)
like "$(first)" "^kestrel-eval: ab: round 2 \(B\) crash: (killed by signal 11|round exited with status 1)" \
  "crashed round: message names the round and the signal"
is "crash" "$(q "SELECT status FROM cases WHERE run_id = (SELECT max(id) FROM runs)")" "crashed round: case status crash"
like "$(q "SELECT error FROM cases WHERE run_id = (SELECT max(id) FROM runs)")" "round 2 \(B\) crash: .*(signal 11|runtime error|SEGV)" \
  "crashed round: the error text is stored"
is 12 "$(q "SELECT count(*) FROM samples s JOIN cases c ON c.id = s.case_id WHERE c.run_id = (SELECT max(id) FROM runs) AND series = 'A.ms_per_token'")" \
  "crashed round: the samples of the finished round are kept"

# a round that hangs: killed at the case's 2 s timeout, exit 1, recorded as a timeout
AB --case tiny-decode-short --a "$FAULT" --b "$FAULT" --b-options fault=hang,fault_on=forward --rounds 3 --db "$T/ab.db"
is 1 "$RC" "hung round: exit 1"
is "kestrel-eval: ab: round 2 (B) timeout: timed out after 2 s" "$(first)" "hung round: message"
is "timeout" "$(q "SELECT status FROM cases WHERE run_id = (SELECT max(id) FROM runs)")" "hung round: case status timeout"
is "failed" "$(q "SELECT status FROM runs WHERE id = (SELECT max(id) FROM runs)")" "hung round: run status failed"
done_testing
