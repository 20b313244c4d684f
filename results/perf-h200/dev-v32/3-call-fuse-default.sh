#!/bin/bash
# v32 call 3. Call 2: attn_fuse=1 (attn_prep inside the one-block short attention) `ab` 27B 0.9927 [0.9904,
# 0.9985], 9B 0.9910 [0.9873, 0.9969], same bits: its ship rule met. F = this tree: attn_fuse=1 the default
# (its kernel's prologue now a helper shared with the new clustered form, attention_short_cl_prep, bit 2 of
# the option; every other kernel's PTX the same as 018446a's).
# (a) the default on this binary against attn_fuse=0 (27B ctx 1, 12 pairs) — the shipped library's own ab;
# (b) attn_fuse=3 (also inside the clustered attention, the kernel of 129..8192 positions) against 1 at prompt
#     512 (27B 8 pairs, 9B 6). Prediction: (a) as call 2; (b) 0.99-0.997.
# Ship rules, written before the call: F stays the shipped candidate if test_kernels passes, every same-bits
# pair passes and (a)'s upper end is below 1 (then the official run, call 4); attn_fuse=3 becomes the default
# if its 27B prompt-512 ab's upper end is below 1 and the 9B's is not "B slower" with its upper end at most 1.01.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script and 3-q107.yaml.
set -u
. tools/devcall.sh
echo "F $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'attention_short_(cl_)?prep' $OUT/tk.tap | cut -c1-240
devcall_wide 27b 9b
for m in w27 w9; do
  devcall_same cuda "" cuda "attn_fuse=0" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "pdl=0" cuda "pdl=0,attn_fuse=0" $DEVCALL_TMP/$m.gguf
  devcall_same cuda "attn_short=4,attn_fuse=3" cuda "attn_short=4,attn_fuse=0" $DEVCALL_TMP/$m.gguf
done
devcall_same cuda "graph=0" cuda "graph=0,attn_fuse=0" $DEVCALL_TMP/w27.gguf
devcall_same cuda "graph=0,attn_short=4,attn_fuse=3" cuda "graph=0,attn_short=4" $DEVCALL_TMP/w27.gguf
wait
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=220 devcall_ab 3-q107.yaml F-a cuda "graph=1,ctx=4608,attn_fuse=0" cuda "graph=1,ctx=4608" "F attn_fuse=1 default (B) vs 0 (A), 27B ctx 1"
DEVCALL_AB_ROUNDS=8 DEVCALL_AB_TIMEOUT=200 devcall_ab 3-q107.yaml p512-F-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_fuse=3" "attn_fuse=3 (B) vs 1 (A), 27B prompt 512"
DEVCALL_AB_ROUNDS=6 DEVCALL_AB_TIMEOUT=120 devcall_ab 3-q107.yaml q9-p512-F-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_fuse=3" "attn_fuse=3 (B) vs 1 (A), 9B prompt 512"
devcall_suite 3-q107.yaml q107
devcall_close $OUT/q107.db $OUT/ab.db
