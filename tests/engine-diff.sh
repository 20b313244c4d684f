#!/bin/sh
# engine-diff.sh - cuda/engine_diff (two engine libraries on one GGUF, tools/gpu_check.sh's
# CUDA-vs-CPU check) exercised with the CPU engine on both sides, so it runs without a GPU:
#   - the same engine and options: max_rel 0, PASS, exit 0;
#   - dot=f32 vs dot=q8 on a q4_0 fixture (the q8 rounding moves the logits by ~1e-2): FAIL at the
#     default tol 1e-3, PASS with the coarse q8 gates of gpu_check.sh, FAIL again when only
#     --median-tol is tight (the median gate is checked), and when --argmax-min demands more
#     agreement than there is (dot=f32 vs q8 disagree on some argmax of this prompt);
#   - --tol 0 demands bit-identical logits: the same engine passes it, dot=f32 vs dot=q8 fails it;
#   - --b-kernel / --b-no-kernel read B's profile (profile=1): an op that ran passes the first and fails
#     the second, an unknown name fails the first, B without profile=1 fails with the reason;
#   - usage errors (a negative tol, argmax-min outside [0, 1], an unknown argument, a ninth
#     --b-kernel) exit 2 with one line.
. "$top_srcdir/tests/lib.sh"
ED=$top_builddir/cuda/engine_diff
CPU=${KESTREL_ENGINE_DIR:-$top_builddir/engines}/libkestrel-cpu.so
[ -x "$ED" ] || skip_all "no cuda/engine_diff in the build tree"
[ -f "$CPU" ] || skip_all "no CPU engine"
M=$FIX/minivk-q4_0.gguf
TOK=1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64
plan 21

run_cmd "$ED" --a "$CPU" --b "$CPU" --model "$M" --tokens "$TOK" --greedy 4
is 0 "$RC" "same engine, same options: exit 0"
like "$OUT" "^prompt: 16 positions, worst max_rel 0\.000e\+00 at position 0 \(tol 1e-03\), median 0\.000e\+00, argmax equal 16/16$" \
  "same engine: max_rel 0, median 0, argmax 16/16"
like "$OUT" "^PASS$" "same engine: PASS"

run_cmd "$ED" --a "$CPU" --a-options dot=f32 --b "$CPU" --b-options dot=q8 --model "$M" --tokens "$TOK" --greedy 0
is 1 "$RC" "dot=f32 vs dot=q8 at the default tol 1e-3: exit 1"
like "$OUT" "^FAIL$" "dot=f32 vs dot=q8 at 1e-3: FAIL"

run_cmd "$ED" --a "$CPU" --a-options dot=f32 --b "$CPU" --b-options dot=q8 --model "$M" --tokens "$TOK" --greedy 0 \
  --tol 0.5 --median-tol 0.2 --argmax-min 0.5
is 0 "$RC" "dot=f32 vs dot=q8 with coarse gates (tol 0.5, median 0.2, argmax >= 50%): exit 0 ($(echo "$OUT" | head -1))"

run_cmd "$ED" --a "$CPU" --a-options dot=f32 --b "$CPU" --b-options dot=q8 --model "$M" --tokens "$TOK" --greedy 0 \
  --tol 0.5 --median-tol 1e-6 --argmax-min 0
is 1 "$RC" "the median gate alone fails it (median-tol 1e-6)"
like "$OUT" "median [0-9.e+-]+ \(tol 1e-06\)" "the median and its gate are printed"

run_cmd "$ED" --a "$CPU" --a-options dot=f32 --b "$CPU" --b-options dot=q8 --model "$M" --tokens "$TOK" --greedy 0 \
  --tol 0.5 --median-tol 0.2 --argmax-min 1
is 1 "$RC" "the argmax gate alone fails it (every position demanded; $(echo "$OUT" | grep -o 'argmax equal [0-9/]*'))"

run_cmd "$ED" --a "$CPU" --b "$CPU" --model "$M" --tokens "$TOK" --greedy 4 --tol 0
is 0 "$RC" "same engine at tol 0 (bit for bit): exit 0"
run_cmd "$ED" --a "$CPU" --a-options dot=f32 --b "$CPU" --b-options dot=q8 --model "$M" --tokens "$TOK" --greedy 0 --tol 0
is 1 "$RC" "dot=f32 vs dot=q8 at tol 0: exit 1"
run_cmd "$ED" --a "$CPU" --b "$CPU" --model "$M" --tokens "$TOK" --tol -1
is 2 "$RC" "a negative tol is a usage error (exit 2)"
run_cmd "$ED" --a "$CPU" --b "$CPU" --model "$M" --tokens "$TOK" --argmax-min 1.5
is 2 "$RC" "argmax-min outside [0, 1] is a usage error (exit 2)"
run_cmd "$ED" --a "$CPU" --b "$CPU" --model "$M" --tokens "$TOK" --bogus 1
like "$ERR" "^engine_diff: unknown argument '--bogus'$" "unknown argument: one line naming it"

# the kernel expectations on B's profile (the CPU engine names its ops: attention, lm_head, ...)
run_cmd "$ED" --a "$CPU" --b "$CPU" --b-options profile=1 --model "$M" --tokens "$TOK" --greedy 2 --b-kernel attention \
  --b-no-kernel attention_gqa
is 0 "$RC" "--b-kernel of an op that ran and --b-no-kernel of one that did not: exit 0"
like "$OUT" "^kernel b: attention: [1-9][0-9]* calls \(expected some\)$" "--b-kernel: the op's calls printed"
like "$OUT" "^kernel b: attention_gqa: 0 calls \(expected none\)$" "--b-no-kernel: 0 calls printed"
run_cmd "$ED" --a "$CPU" --b "$CPU" --b-options profile=1 --model "$M" --tokens "$TOK" --greedy 2 --b-no-kernel attention
is "1|yes" "$RC|$(echo "$OUT" | grep -q '^kernel b: attention: [1-9][0-9]* calls (expected none) MISMATCH$' && echo yes)" \
  "--b-no-kernel of an op that ran: MISMATCH, exit 1"
run_cmd "$ED" --a "$CPU" --b "$CPU" --b-options profile=1 --model "$M" --tokens "$TOK" --greedy 2 --b-kernel attention_short_cl
is 1 "$RC" "--b-kernel of an op that did not run: exit 1"
run_cmd "$ED" --a "$CPU" --b "$CPU" --model "$M" --tokens "$TOK" --greedy 2 --b-kernel attention
is "1|kernel b: no profile (open B with profile=1)" "$RC|$(echo "$OUT" | grep '^kernel b')" \
  "--b-kernel without profile=1: exit 1 with the reason"
run_cmd "$ED" --a "$CPU" --b "$CPU" --model "$M" --tokens "$TOK" --b-kernel 1 --b-kernel 2 --b-kernel 3 --b-kernel 4 \
  --b-kernel 5 --b-kernel 6 --b-kernel 7 --b-kernel 8 --b-kernel 9
is "2|engine_diff: --b-kernel '9': at most 8 non-empty names" "$RC|$ERR" "a ninth --b-kernel: exit 2, one line"
done_testing
