#!/bin/sh
# suite-fuzz.sh - `kestrel-eval check` on deterministic mutants of the test
# suites (lines dropped, duplicated, swapped, re-indented; bytes replaced,
# inserted, truncated): it never crashes or leaks (exit 0 or 2 only, which
# under the ASan build also catches memory errors and leaks), every failure is
# exactly one "kestrel-eval: FILE:..." line with nothing on stdout, and every
# success prints "FILE: ok (N cases)". Mutants come from a seeded PRNG, so a
# failure names a mutant that can be regenerated.
. "$top_srcdir/tests/lib.sh"

[ -n "${PYTHON:-}" ] || skip_all "no python3 to generate the mutants"
N=${SUITE_FUZZ_N:-150}
plan 4

# the mutants live two levels below a stand-in lib.sh so the suites' relative paths resolve
mkdir -p "$T/m/a/b/prompts"
: >"$T/m/lib.sh"
cp "$top_srcdir/tests/suites/valid/prompts/long.txt" "$T/m/a/b/prompts/"
"$PYTHON" - "$T/m/a/b" "$N" "$top_srcdir"/tests/suites/valid/*.yaml <<'PY'
import random, sys
out, n, seeds = sys.argv[1], int(sys.argv[2]), [open(p, "rb").read() for p in sys.argv[3:]]
rng = random.Random(20261129)
junk = b":-[]{}#&*!|>'\"%@`,? \t0123456789\n\x00\xff\xc3"
for i in range(n):
    data = bytearray(rng.choice(seeds))
    for _ in range(rng.randint(1, 3)):
        lines = data.split(b"\n")
        op = rng.randrange(7)
        j = rng.randrange(len(lines))
        if op == 0:
            del lines[j]
        elif op == 1:
            lines.insert(j, lines[j])
        elif op == 2:
            k = rng.randrange(len(lines)); lines[j], lines[k] = lines[k], lines[j]
        elif op == 3:
            lines[j] = b" " * rng.randint(0, 6) + lines[j].lstrip()
        data = bytearray(b"\n".join(lines))
        if not data:
            continue
        p = rng.randrange(len(data))
        if op == 4:
            data[p] = rng.choice(junk)
        elif op == 5:
            data[p:p] = bytes([rng.choice(junk)])
        elif op == 6:
            del data[p:]
    open("%s/mutant-%03d.yaml" % (out, i), "wb").write(data)
PY

cd "$T/m/a/b" || exit 1
crashed="" multi="" badok="" n_ok=0 n_err=0
for f in mutant-*.yaml; do
  "$KESTREL_EVAL" check "$f" >"$T/out" 2>"$T/err"
  rc=$?
  case $rc in
    0) n_ok=$((n_ok + 1))
       grep -Eq "^$f: ok \([0-9]+ cases?\)\$" "$T/out" || badok="$badok $f" ;;
    2) n_err=$((n_err + 1))
       { [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "^kestrel-eval: " "$T/err" && [ ! -s "$T/out" ]; } ||
         multi="$multi $f" ;;
    *) crashed="$crashed $f(rc=$rc)"; sed 's/^/#   /' "$T/err" | head -20 ;;
  esac
done
echo "# $N mutants: $n_ok valid, $n_err rejected"
is "" "$crashed" "no mutant crashes check (exit 0 or 2 only)"
is "" "$multi" "every rejected mutant gets one error line and nothing on stdout"
is "" "$badok" "every accepted mutant prints 'FILE: ok (N cases)'"
ok "[ $n_err -gt $((N / 2)) ]" "most mutants are rejected (the mutator does mutate)"
done_testing
