#!/bin/sh
# run-bitexact: the bitexact case kind. First run: no reference, passes and
# archives; a rerun: 0 unequal against it; an engine that changes one bit
# per logits row (fault engine perturb=1): fails with k/N unequal; the
# reference is the latest PASSING run with the same model sha256; --against
# a baseline pins the reference to the baseline's run.
. "$top_srcdir/tests/lib.sh"
[ -f "$FIX/mini27-q8_0.gguf" ] || skip_all "fixtures not built (tests/fixtures)"
. "$top_srcdir/tests/run-lib.sh"
[ -f "$FAULT" ] || skip_all "fault engine not built ($FAULT)"
plan 13

DB=$T/k.db
mk_suite() { # FILE ENGINE-LINE MODEL
  cat >"$1" <<YAML
suite: be
engines:
  e: $2
models: {m: $3}
prompts:
  p: {tokens: [[5, 6, 7, 8], [100, 3]]}
defaults: {engine: e, threads: 1}
cases:
  - {name: be, kind: bitexact, model: m, prompts: p, gates: {bitexact: true}}
YAML
}
mk_suite "$T/cpu.yaml" "cpu" "$FIX/mini27-q8_0.gguf"
mk_suite "$T/perturb.yaml" "{lib: $FAULT, options: perturb=1}" "$FIX/mini27-q8_0.gguf"
mk_suite "$T/other-model.yaml" "cpu" "$FIX/mini27-q4_0.gguf"
m() { sql "SELECT ifnull(CAST(m.value AS INTEGER), 'NULL') || ' ' || m.text FROM metrics m JOIN cases c ON c.id = m.case_id WHERE c.run_id = $1 AND m.name = '$2'"; }

run_cmd "$KESTREL_EVAL" run "$T/cpu.yaml" --db "$DB"
is 0 "$RC" "run 1: no reference yet, passes"
is "NULL no archived outputs: this run is the reference" "$(m 1 reference_run)" "run 1: reference_run NULL with the note"
is "p0.argmax p0.logits p0.tokens p1.argmax p1.logits p1.tokens" "$(sql "SELECT group_concat(name, ' ') FROM (SELECT name FROM outputs ORDER BY name)")" "run 1: outputs archived"
run_cmd "$KESTREL_EVAL" run "$T/cpu.yaml" --db "$DB"
is 0 "$RC" "run 2: same engine passes"
is "0 0/1548" "$(m 2 unequal)" "run 2: 0/1548 unequal (2 prompts: 6 tokens, 6x256 logits, 6 argmax)"
is "1 latest passing run 1" "$(m 2 reference_run)" "run 2: reference is run 1"
run_cmd "$KESTREL_EVAL" run "$T/perturb.yaml" --db "$DB"
is 1 "$RC" "run 3: a one-bit change per logits row fails (exit 1)"
is "6 6/1548" "$(m 3 unequal)" "run 3: 6/1548 unequal (one per position)"
like "$(sql "SELECT error FROM cases WHERE run_id = 3")" "^6/1548 elements differ from latest passing run 2$" "run 3: error text"
run_cmd "$KESTREL_EVAL" run "$T/cpu.yaml" --db "$DB"
is "0 0/1548|2 latest passing run 2" "$(m 4 unequal)|$(m 4 reference_run)" "run 4: the failed run 3 is never a reference"
run_cmd "$KESTREL_EVAL" run "$T/other-model.yaml" --db "$DB"
is "NULL no archived outputs: this run is the reference" "$(m 5 reference_run)" "run 5: another model file has no reference"
"$KESTREL_EVAL" baseline set 1 be-base --db "$DB" >/dev/null 2>&1
run_cmd "$KESTREL_EVAL" run "$T/cpu.yaml" --db "$DB" --against be-base
is "1 baseline 'be-base' (run 1)" "$(m 6 reference_run)" "--against a baseline pins the reference to its run"
is 0 "$RC" "--against: identical outputs, nothing regressed, exit 0"
done_testing
