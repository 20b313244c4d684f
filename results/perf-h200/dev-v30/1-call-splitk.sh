#!/bin/bash
# v30 call 1. ffn=splitk (cuda/gemv_q8t.cuh ffn_splitk_kernel): the FFN as one launch whose blocks each take a
# contiguous share of the inner dimension's chunks of 32 (gate/up stages, then the chunk's column of the down
# projection, repacked at load), so no block waits for another until the partial sums' grid barrier at the end.
# Prediction (written before the call): bench_gemv --shape ffn, FFN after FFN, 42.8 us (two launches) -> 36-39 us;
# the 27B step -0.1 to -0.3 ms (the SwiGLU's tail, the down's wait and its 26 KB x load go; the partials' barrier
# and sums come). Ship rule: ffn=splitk becomes the default only if this call's `ab` (K vs C, one library) and a
# second `ab` of 12 pairs in the next call both have their interval below 1 and the 9B is not slower.
# (1) test_kernels (the kernel bit for bit against its CPU twin, 27B/9B shapes); (2) same bits of ffn=splitk
# against itself with pdl=0 and graph=0 on the 27B- and 9B-wide models, and within the q8 tolerance of the
# default; (3) bench_gemv --shape ffn; (4) the suite 1-q98.yaml; (5) `ab` K vs C.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead (HEAD's working tree); copy this script and 1-q98.yaml.
set -u
. tools/devcall.sh
echo "default $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'ffn_splitk' $OUT/tk.tap | cut -c1-230
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same cuda "ffn=splitk" cuda "ffn=splitk,pdl=0" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "ffn=splitk" cuda "ffn=splitk,graph=0" $DEVCALL_TMP/$m.gguf
  timeout 120 $B/engine_diff --a $E/libkestrel-cuda.so --b $E/libkestrel-cuda.so --a-options ffn=split \
    --b-options ffn=splitk,profile=1 --model $DEVCALL_TMP/$m.gguf --tokens $DEVCALL_TOKENS --greedy 0 --tol 0.1 \
    --median-tol 0.05 --argmax-min 0.75 --b-kernel ffn_splitk > $OUT/diff-$m.txt 2>&1; echo "diff $m rc $?: $(tail -1 $OUT/diff-$m.txt | cut -c1-160)"
done
timeout 200 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; echo "ffn rc $?"
grep -v timeline $OUT/bench_ffn.tsv
wait
devcall_suite 1-q98.yaml q98 "swiglu|matvec_add|ffn_splitk|rmsnorm|out_add"
devcall_ab 1-q98.yaml C-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,ffn=splitk" "ffn=splitk (B) vs split (A), one library, 27B ctx 1"
devcall_close $OUT/q98.db $OUT/ab.db
