#!/bin/bash
# v26 call 17: call 16's two stages per iteration only where the block's whole share of stages fits in its ring
# (u1 - u0 <= ns: every stage preloaded, no slot refilled — the out projections), the one-stage loop elsewhere.
# Why: call 16 made the out projections faster (trace 0.4545 -> 0.4130 ms/step) and qkv+z and q/k/v slower
# (0.417 -> 0.459, 0.115 -> 0.130: where stages stream, waiting for two before using the first delays the
# slots' refill). Predicted: -0.03 to -0.04 ms per 27B token. Same bits.
# Pack: tools/gpu_check.sh --pack BUILD; copy this script, 17-q86.yaml, base.so.xz and base-trace.so.xz into
# .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz $G/base-trace.so.xz
echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf; done
devcall_same $G/base.so "pdl=0,graph=0" cuda "pdl=0,graph=0" $DEVCALL_TMP/w27.gguf
wait
devcall_suite 17-q86.yaml q86 "matvec_out|matvec2|matvec3"
cd $G
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 17-q86.yaml --case P-a --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "two stages per iteration where the share fits (B) vs 7e10b2082a80 (A), 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval ab 17-q86.yaml --case q9-P --a $G/base.so --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "two stages per iteration where the share fits (B) vs 7e10b2082a80 (A), 9B ctx 1" 2>&1 | tail -3
rm -f $OUT/tk.tap.xz; xz -9 $OUT/tk.tap
devcall_close $OUT/q86.db $OUT/ab.db
