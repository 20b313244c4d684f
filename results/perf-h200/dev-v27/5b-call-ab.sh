#!/bin/bash
# v27 call 5b - PREPARED, NOT RUN: after call 5, on its warm machine (the same pack): the option inside L with
# 12 rounds (prep_early=0 against the default 2) on the 27B, and L against 0192d12e010b on the 9B.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
devcall_models 27b 9b
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=200 devcall_ab 5-q92.yaml L-a cuda "graph=1,ctx=4608,prep_early=0" cuda "graph=1,ctx=4608" "prep_early=2 (B, the default) vs 0 (A), L, 27B ctx 1, 12 rounds"
DEVCALL_AB_TIMEOUT=100 devcall_ab 5-q92.yaml q9-L $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "L (B) vs 0192d12e010b (A), 9B ctx 1"
devcall_close $OUT/ab.db
