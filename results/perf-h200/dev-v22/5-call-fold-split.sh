#!/bin/bash
# v22 call 5: L3 = 11149ade4ed0's kernels (PTX identical) with rms_fold split by norm (in / ffn): same bits
# (each vs the default, --tol 0, 27B-wide), then 5-q62.yaml: which fold loses on the 27B (ab 1.0163 for
# both) and wins on the 9B (ab 0.9686). Pack: tools/gpu_check.sh --pack of L3; copy this script and 5-q62.yaml.
set -u
R=$PWD; G=$R/.carry/gpu-check; B=$G/bin; E=$G/engines
export LD_LIBRARY_PATH=$G/lib
strip -o /tmp/s.so $E/libkestrel-cuda.so && sha256sum /tmp/s.so | cut -c1-16
mkdir -p /tmp/kestrel-perf
( [ -s /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-27b-q4_0.gguf >/dev/null;
  [ -s /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf ] || $B/kestrel-eval gen-model --preset qwen3.5-9b --type q4_0 --seed 1 -o /tmp/kestrel-perf/qwen3.5-9b-q4_0.gguf >/dev/null ) &
toks="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf >/dev/null
for o in rms_fold=in rms_fold=ffn; do
  timeout 60 $B/engine_diff --a $E/libkestrel-cuda.so --b $E/libkestrel-cuda.so --b-options $o --model /tmp/w27.gguf --tokens "$toks" --greedy 16 --tol 0 > /tmp/ed.txt 2>&1; echo "default vs $o rc $? $(tail -1 /tmp/ed.txt | cut -c1-100)"
done
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 5-q62.yaml --db $OUT/q62.db > $OUT/q62.log 2>&1; echo "q62 rc $?"
grep -E "^\[" $OUT/q62.log | cut -c1-100
cd $OUT && sqlite3 q62.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1; rm -f *.db-*; xz -9 q62.db
