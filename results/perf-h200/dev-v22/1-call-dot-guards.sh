#!/bin/bash
# v22 call 1 (after call 0 = dev-v21/6-call-ncu-down.sh): L1 = the TMA GEMVs' dots without block guards
# when nb == 32 * NBL (q8t_dot / q8t_dot_xs_u FULL) and the XS prologue's x loads all in flight, against
# the shipped 99b5960eceab (base.so, base-bench_gemv): test_kernels, same bits (--tol 0), bench dtma
# both, ncu of the new down kernel, the suite 1-q58.yaml, ab L1 vs base.
# Pack: tools/gpu_check.sh --pack of L1; copy this script, 1-q58.yaml, base.so, base-bench_gemv into .carry/gpu-check/.
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
for m in /tmp/w27.gguf /tmp/w9.gguf; do for o in "" "pdl=0" "graph=0"; do
  timeout 60 $B/engine_diff --a $G/base.so ${o:+--a-options $o} --b $E/libkestrel-cuda.so ${o:+--b-options $o} --model $m --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "base vs L1 $m $o rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
done; done
for b in base-bench_gemv bin/bench_gemv; do timeout 60 $G/$b --shape dtma > $OUT/dtma-$(basename $b).tsv 2>&1; echo "$b dtma rc $?"; grep -E "down_tma200_skip|swiglu" $OUT/dtma-$(basename $b).tsv | head -12; done
for skip in 10 560; do
  timeout 100 ncu --clock-control none --kill yes -k regex:matvec_q8t_kernel --launch-skip $skip --launch-count 1 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    $B/bench_gemv --shape dtma > $OUT/ncu-down-sass-$skip.csv 2> /dev/null; echo "ncu $skip rc $?"
done
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 200 $B/kestrel-eval run 1-q58.yaml --db $OUT/q58.db > $OUT/q58.log 2>&1; echo "q58 rc $?"
grep -E "^\[" $OUT/q58.log | cut -c1-100
KESTREL_ENGINE_DIR=$E timeout 170 $B/kestrel-eval ab 1-q58.yaml --case L1-a --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "L1 (B, dots without guards, down x loads in flight) vs 99b5960eceab (A), 27B ctx 1" 2>&1 | tail -4
cd $OUT && for d in q58.db ab.db; do sqlite3 $d "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; done; rm -f *.db-*; tar czf all.tgz q58.db q58.log ab.db tk.tap && rm -f q58.db q58.log ab.db tk.tap
