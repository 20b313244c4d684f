#!/bin/bash
# next session's first call (written in session 11, not run: the device time was spent):
# 9-wide-half-stages.patch - the down projection over stages of 4 rows, warps 0-3 and 4-7 alternating
# stages (q8t_wu=2; the default kernels' PTX unchanged): test_kernels, same bits vs shipped, bench
# dtma (down_tma200_half_*), the step against the default of the same library, ab.
# Pack: build the committed tree and keep its libkestrel-cuda.so (c67314982e5d) as p9.so; git apply
# results/perf-h200/dev-v19/9-wide-half-stages.patch; build; tools/gpu_check.sh --pack; copy p9.so, this
# script and 9-q51.yaml into .carry/gpu-check/; carry [".carry/gpu-check"] (drop the trace library from
# the pack: the working tree and the carry together must stay under 64 MiB).
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
mkdir -p /tmp/kestrel-perf
( [ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null;
  [ -s /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null ) &
timeout 150 $B/test_kernels tests/fixtures > $OUT/tk.tap 2>&1; echo "test_kernels rc $? $(grep -c '^ok' $OUT/tk.tap) ok, $(grep -c '^not ok' $OUT/tk.tap) not ok"
grep -E "^not ok" $OUT/tk.tap | cut -c1-300
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf >/dev/null
$B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w9.gguf >/dev/null
for m in /tmp/w27.gguf /tmp/w9.gguf; do for o in "" "q8t_wu=2" "q8t_wu=2,pdl=0" "q8t_wu=2,graph=0" "q8t_wu=2,norm_tail=1"; do
  timeout 60 $B/engine_diff --a $G/p9.so --b $E/libkestrel-cuda.so ${o:+--b-options $o} --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "c67314982e5d vs new $m $o rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
done; done
timeout 100 $B/bench_gemv --shape dtma > $OUT/bench_dtma.tsv 2>&1; echo "bench rc $?"; grep -E "down" $OUT/bench_dtma.tsv
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval run 9-q51.yaml --db $OUT/q51.db > $OUT/q51.log 2>&1; echo "q51 rc $?"
grep -E "^\[" $OUT/q51.log | cut -c1-100
KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval ab 9-q51.yaml --case d-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,q8t_wu=2" --rounds 6 --db $OUT/ab.db --label "q8t_wu=2 half stages (B) vs the default (A), same library, 27B ctx 1" 2>&1 | tail -5
cd $OUT && for d in q51.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q51.db q51.log ab.db tk.tap bench_dtma.tsv && rm -f q51.db q51.log ab.db tk.tap bench_dtma.tsv
