#!/bin/bash
# v16 call 4: test_kernels (norm_tail shapes), and why same_bits "" "ffn=fused,pdl=0" prints nothing on the 2B-wide model
set -u
R=$PWD; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
sha256sum $E/libkestrel-cuda.so | cut -c1-16
T0=$(date +%s)
timeout 150 $B/test_kernels tests/fixtures > /tmp/tk.tap 2>&1; echo "test_kernels rc $? in $(( $(date +%s) - T0 )) s"
grep -E "^(not ok|Bail)" /tmp/tk.tap | head; grep -E "norm_tail" /tmp/tk.tap | cut -c1-220; tail -1 /tmp/tk.tap
$B/kestrel-eval gen-model --preset qwen3.5-2b --type q4_0 --seed 3 --layers 4 --vocab 4096 -o /tmp/w2.gguf > /dev/null
for o in "ffn=fused" "ffn=fused,pdl=0" "ffn=fused,graph=0" "ffn=fused,pdl=0,graph=0"; do
  T0=$(date +%s)
  timeout 60 stdbuf -oL -eL $B/engine_diff --a $E/libkestrel-cuda.so --b $E/libkestrel-cuda.so --b-options "$o" --model /tmp/w2.gguf --tokens 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 --greedy 16 --tol 0 > /tmp/ed.log 2>&1
  echo "== $o: rc $? in $(( $(date +%s) - T0 )) s"; tail -4 /tmp/ed.log
done
