#!/bin/bash
# v28 call 1b, on call 1's warm machine (the same pack): L against 0192d12e010b again with 12 rounds (27B), the
# option inside L (attn_early=0 against the default 1, 27B) and L against 0192d12e010b on the 9B.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
devcall_models 27b 9b
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=200 devcall_ab 1-q94.yaml L-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "L (B) vs 0192d12e010b (A), 27B ctx 1, 12 rounds"
DEVCALL_AB_TIMEOUT=120 devcall_ab 1-q94.yaml L-a cuda "graph=1,ctx=4608,attn_early=0" cuda "graph=1,ctx=4608" "attn_early=1 (B, the default) vs 0 (A), L, 27B ctx 1"
DEVCALL_AB_TIMEOUT=100 devcall_ab 1-q94.yaml q9-L $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "L (B) vs 0192d12e010b (A), 9B ctx 1"
devcall_close $OUT/ab.db
