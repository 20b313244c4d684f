#!/bin/bash
# v30 call 4. Call 3's suite again (its YAML description had a ': ' the parser refused, named at 3-q99.yaml:2:110):
# 3-q99.yaml and `ab` ffn=splitka vs split, same library and prediction as call 3.
set -u
. tools/devcall.sh
echo "default $(devcall_sha)"
devcall_models 27b 9b
devcall_suite 3-q99.yaml q99 "swiglu|matvec_add|ffn_splitk|rmsnorm|out_add"
devcall_ab 3-q99.yaml C-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,ffn=splitka" "ffn=splitka (B) vs split (A), one library, 27B ctx 1"
devcall_close $OUT/q99.db $OUT/ab.db
