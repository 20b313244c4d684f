#!/bin/bash
# v29 call 3: the official job of the library HEAD builds at the canonical place (/tmp/build-lead, srcdir
# /work/main): 62c23104ea05. Call 2 measured a094cf8dd0ee, the same sources built from a worktree at
# /tmp/v29/src: the two differ only in the source paths compiled into them (__FILE__ in the host error
# messages, the file names of the kernels' line tables), so the shipped library's own official run is this
# one. Also: engine_diff --tol 0 of the two on the 27B- and 9B-wide models, and ab 62c23104ea05 vs a21521bc56b1
# (6 pairs, 27B ctx 1: the third measurement of the change).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 2-q97.yaml, base.so.xz (a21521bc56b1) and
# a094.so.xz (a094cf8dd0ee) into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
xz -dkf $G/a094.so.xz
echo "base $(devcall_sha $G/base.so) a094 $(devcall_sha $G/a094.so)"
bash tools/official_h200.sh; echo "official rc $?"
devcall_models 27b 9b
devcall_wide 27b 9b
for m in w27 w9; do devcall_same $G/a094.so "" cuda "" $DEVCALL_TMP/$m.gguf; done
devcall_ab 2-q97.yaml L-a $G/base.so "graph=1,ctx=4608" cuda "graph=1,ctx=4608" "62c23104ea05 (B, q8t_half=1) vs a21521bc56b1 (A), 27B ctx 1"
devcall_close $OUT/ab.db
