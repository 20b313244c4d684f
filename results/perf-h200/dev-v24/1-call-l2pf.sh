#!/bin/bash
# v24 call 1: option l2pf of library N (e4fa971d53b8's kernels byte-identical, two kernels more:
# delta_step_l2pf_kernel<1|2>). The delta rule of each GDN layer prefetches into L2 the SwiGLU's stages
# [s0, s0 + l2pf) of every SwiGLU block (s0 auto: the stages after the ring's preload), while HBM would
# idle (the out projection's 18 MB are in its rings during the delta rule). test_kernels; same bits
# (tol 0) with l2pf on against off, and N against base; the suite 1-q68.yaml (27B ctx 1 interleaved a/b,
# the 9B, the trace of N and of l2pf=2); ab l2pf=2 vs 0.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead (N); copy this script, 1-q68.yaml, base.so.xz.
set -u
. tools/devcall.sh
xz -dk $G/base.so.xz; echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do
  devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf
  for o in l2pf=2 l2pf=3,l2pf_at=wait l2pf=1,l2pf_s0=0; do devcall_same cuda "" cuda "$o" $DEVCALL_TMP/$m.gguf; done
done
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,l2pf=2" $DEVCALL_TMP/w27.gguf
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 1-q68.yaml --db $OUT/q68.db > $OUT/q68-log.txt 2>&1; echo "q68 rc $?"
grep -E "^\[" $OUT/q68-log.txt | cut -c1-110
KESTREL_ENGINE_DIR=$E $B/kestrel-eval report latest --db $OUT/q68.db > $OUT/q68-report.txt 2>&1
grep -iE -A14 "kernel" $OUT/q68-report.txt | head -60
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 1-q68.yaml --case P2-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,l2pf=2" --rounds 6 --db $OUT/ab.db --label "l2pf=2 (B) vs 0 (A), library N, 27B ctx 1" 2>&1 | tail -4
devcall_close $OUT/q68.db $OUT/ab.db
