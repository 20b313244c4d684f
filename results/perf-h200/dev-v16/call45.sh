#!/bin/bash
# review call: the refactored route choice (q8t_route) and x loads (q8x_load_x<NBL, XM>) against the shipped engine e59eae4ff368, bit for bit; test_kernels; the persistent chain bench after folding its two kernels into one
set -u
R=$PWD; S=$R/.carry/scratch; B=$R/.carry/gpu-check/bin; E=$R/.carry/gpu-check/engines
export LD_LIBRARY_PATH=$R/.carry/gpu-check/lib
sha256sum $E/libkestrel-cuda.so $S/shipped.so | cut -c1-16
timeout 150 $B/test_kernels tests/fixtures > /tmp/tk.tap 2>&1; echo "test_kernels rc $?"; grep -E "^(not ok|Bail)" /tmp/tk.tap | head; tail -1 /tmp/tk.tap
$B/kestrel-eval gen-model --preset qwen3.5-2b --type q4_0 --seed 3 --layers 4 --vocab 4096 -o /tmp/w2.gguf > /dev/null
$B/kestrel-eval gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o /tmp/w27.gguf > /dev/null
for W in /tmp/w2.gguf /tmp/w27.gguf; do
  for o in "" "q8t_xs=1" "q8t_wkb=0" "q8gemv=xs" "q8gemv=stream" "norm_tail=1"; do
    timeout 60 stdbuf -oL $B/engine_diff --a $S/shipped.so --b $E/libkestrel-cuda.so ${o:+--a-options $o --b-options $o} --model $W --tokens 1,2,3,4,5,6,7,8 --greedy 8 --tol 0 > /tmp/ed.log 2>&1
    echo "$W [$o] rc $? $(tail -1 /tmp/ed.log)"
  done
done
timeout 120 $B/bench_gemv --shape l2 2>&1 | grep -E "chain16.*(none|persistent|p2_xshare)|MISMATCH|^#  +(1|2|9) " | head -30
