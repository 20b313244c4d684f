#!/bin/bash
# v25 call 9 - PREPARED, NOT RUN (the session's device time was spent): After v25 item 2's first step,
# option delta_trig=3 — the delta rule lets the out projection launch between delta_column's two loops,
# once every loaded value of the state is used (the trigger's asm takes delta as an operand), so the
# projection's 18 MB preload starts after the state's 3 MB have come back and still has the delta rule's
# second loop, stores and gated norm (~4 us) to land in. Row 7: the state's loads took ~3.8 us longer
# with the preload beside them; row 5: launching after the loads were issued (1) or after the columns (2)
# only moved time. delta_trig=3's kernel compiles to 168 registers and no stack (the default: 255 and a
# 64-byte spill). Code: 9-delta-trig3.patch (delta_trig 1-3, against commit 7e15138; built with
# --enable-werror, CPU-side CUDA tests pass; the default kernels' PTX unchanged). test_kernels (the trig
# forms bit for bit against delta_step_norm_q8), same bits, the suite 9-q80.yaml with traces, ab 3 vs 0.
# Pack: git apply 9-delta-trig3.patch; build; tools/gpu_check.sh --pack BUILD; copy this script and
# 9-q80.yaml into .carry/gpu-check/.
set -u
. tools/devcall.sh
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
grep -E "delta_step_norm_q8_trig" $OUT/tk.tap | cut -c1-160
for m in w27 w9; do devcall_same cuda "" cuda "delta_trig=3" $DEVCALL_TMP/$m.gguf; done
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,delta_trig=3" $DEVCALL_TMP/w27.gguf
wait
devcall_suite 9-q80.yaml q80 "delta|matvec_out|gdn_prep"
cd $G
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 9-q80.yaml --case N-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,delta_trig=3" --rounds 6 --db $OUT/ab.db --label "delta_trig=3 (B) vs 0 (A), 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval ab 9-q80.yaml --case q9-N --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,delta_trig=3" --rounds 6 --db $OUT/ab.db --label "delta_trig=3 (B) vs 0 (A), 9B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q80.db $OUT/ab.db
