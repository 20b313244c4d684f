#!/bin/bash
# v23 call 2: (a) the FFN's per-block records of 20 more captures (bench_gemv KC_Q8T_DUMP): whether the
# blocks that end late do so on the same SMs every time (a per-SM rate: a static weighting would fix it)
# or not (noise: only dealing at run time would); (b) O = 8192a5b49fe6's kernels with one host option
# more, q8t_ogrid=N (the out projections' grid in blocks): call 1's ncu puts 46% of the out projection's
# warp samples on its stage wait; during the delta rule (48 blocks at 255 registers x 128 threads) an SM
# holds one 92-register out-projection block beside it, not two, so with 264 blocks 48 of them preload
# only after the delta rule exits; at 216 blocks every block fits while the delta rule runs, and the
# largest block share stays 3 stages. Same bits (a grid of another size: other blocks, the same rows),
# the suite 2-q64.yaml, ab of the best grid vs the default.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead (O); copy this script, 2-q64.yaml, base.so.xz.
set -u
. tools/devcall.sh
xz -dk $G/base.so.xz; echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
for m in w27 w9; do devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/$m.gguf; for g in 216 180 160; do devcall_same cuda "" cuda "q8t_ogrid=$g" $DEVCALL_TMP/$m.gguf; done; done
devcall_same cuda "pdl=0" cuda "pdl=0,q8t_ogrid=216" $DEVCALL_TMP/w27.gguf
KC_Q8T_DUMP=$OUT/ffn-blocks.tsv KC_Q8T_DUMP_REPS=20 timeout 150 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; echo "ffn rc $? $(wc -l < $OUT/ffn-blocks.tsv) records"
grep "# timeline" $OUT/bench_ffn.tsv
xz -9 $OUT/ffn-blocks.tsv
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 330 $B/kestrel-eval run 2-q64.yaml --db $OUT/q64.db > $OUT/q64-log.txt 2>&1; echo "q64 rc $?"
grep -E "^\[" $OUT/q64-log.txt | cut -c1-110
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 2-q64.yaml --case O216-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,q8t_ogrid=216" --rounds 6 --db $OUT/ab.db --label "q8t_ogrid=216 (B) vs the default 264 (A), library O, 27B ctx 1" 2>&1 | tail -4
devcall_close $OUT/q64.db $OUT/ab.db
