#!/bin/bash
# v29 call 2: library L = a21521bc56b1 + q8t_half=1 as the default (a094cf8dd0ee; call 1 measured the option in one
# library: ab 0.9976 [0.9929, 0.9995], 6 pairs). The official job of L (GPU check with the new q8t_half pairs, then
# the perf job), then ab L vs a21521bc56b1 (both defaults: one variable, the library) on the 27B with 12 pairs and
# on the 9B with 6. Ship rule (written before call 1): ship if call 1's ab and this call's 27B ab both have their
# interval below 1 and the 9B is not slower beyond noise.
# Pack: tools/gpu_check.sh --pack /tmp/v29/build; copy this script, 2-q97.yaml and base.so.xz (a21521bc56b1, xz -9).
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
echo "base $(devcall_sha $G/base.so)"
bash tools/official_h200.sh; echo "official rc $?"
devcall_models 27b 9b
DEVCALL_AB_ROUNDS=12 DEVCALL_AB_TIMEOUT=200 devcall_ab 2-q97.yaml L-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "L a094cf8dd0ee (B, q8t_half=1) vs a21521bc56b1 (A), 27B ctx 1, 12 pairs"
DEVCALL_AB_TIMEOUT=80 devcall_ab 2-q97.yaml q9-L $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "L a094cf8dd0ee (B) vs a21521bc56b1 (A), 9B ctx 1"
devcall_close $OUT/ab.db
