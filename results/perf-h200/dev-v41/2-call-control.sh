#!/bin/bash
# v41 call 2: call 1's control (refused there: ab will not compare two libraries with different options unless
# told, so devcall_ab now passes --force with DEVCALL_AB_FORCE=1) and a second ab of the defaults, both at 27B prompt
# 4096 against HEAD's a02143b17a5c, 3 pairs each. Same pack as call 1 (bbbf8cdcefba, 1-q135.yaml).
# Call 1: the defaults (both push merges) vs a02143b17a5c, prompt 4096 0.9996 [0.9909, 1.0033], prompt 512 1.0013
# [0.9967, 1.0050]: call 1's rule met by its second clause (median below 1, lower end below 0.997; prompt 512's lower
# end not above 1), the control still owed.
# Prediction: control (both options 0: the same kernels as A, the host code differs) 0.995-1.005; the defaults again
# 0.993-1.003.
# Rule, written before the call: ship the patch with both defaults 1, then the official run, if the control's CI
# holds 1 and this call's ab of the defaults is not slower beyond noise (its CI's lower end at or below 1). If the
# control is slower beyond noise, nothing ships (the host code to look at); if the defaults' second ab is slower
# beyond noise, nothing ships (call 1's clause-2 pass taken as noise).
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
OLD=$E/libkestrel-cuda-a02143b17a5c.so
echo "A $(devcall_sha $OLD)"
devcall_models 27b > $OUT/models.txt 2>&1
devcall_mark models
DEVCALL_AB_FORCE=1 DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=200 devcall_ab 1-q135.yaml q27-p4096 $OLD "graph=1,ctx=4608" cuda "graph=1,ctx=4608,attn_kvc_push=0,attn_cl_push=0" "control: the patch with both push options 0 (B) vs a02143b17a5c (A), 27B prompt 4096"
devcall_mark ab-control
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=200 devcall_ab 1-q135.yaml q27-p4096 $OLD "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "again: the push kernels (B, defaults) vs a02143b17a5c (A), 27B prompt 4096"
devcall_mark ab-again
devcall_close $OUT/ab.db
