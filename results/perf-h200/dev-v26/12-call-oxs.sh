#!/bin/bash
# v26 call 12: option q8t_oxs=1 — the out projections (ssm_out, attn_output: 5120 x 6144 on the 27B) with
# x in shared memory, loaded once per block by its 256 consumer threads in one round trip, instead of
# every consumer warp loading all of x (6.9 KB) into registers. Why: call 11's gdnwin timeline (and
# v25 row 7 with no weight copies at all) has the out projection ~1 us from its wait to warp 0's first
# stage and ~2.8 us more for 3 stages whose weights are already in shared memory; call 11 showed the
# residual loads are not that time (their chunked form: out projections -0.02 ms/step only). With 16
# warps per SM each fetching the same 6.9 KB from L2 (~110 KB per SM) after the wait, the warps get x
# one after another. Also q8t_xs=1 (every x-stationary GEMV so; its x load is now one round trip for
# every width, as the wide kernel's). The default kernels' PTX is unchanged (tools/ptx_diff.sh: only
# the XS instantiations with fewer than 8 blocks per lane differ). Predicted: -1 to -2 us per out
# projection, up to -0.1 ms per 27B token. bench gdnwin with KC_GDNWIN_XS=0/1 first.
# Pack: tools/gpu_check.sh --pack BUILD; copy this script, 12-q83.yaml and base.so.xz (HEAD's library)
# into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz
echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do devcall_same cuda "" cuda "q8t_oxs=1" $DEVCALL_TMP/$m.gguf; done
devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/w27.gguf
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,q8t_oxs=1" $DEVCALL_TMP/w27.gguf
for x in 0 1; do
    KC_GDNWIN_XS=$x timeout 60 $B/bench_gemv --shape gdnwin > $OUT/gdnwin-xs$x.txt 2>&1; echo "gdnwin xs=$x rc $?"
    grep "^# gdnwin" $OUT/gdnwin-xs$x.txt | sed 's/, us from.*max\]://'
done
wait
devcall_suite 12-q83.yaml q83 "matvec_out|matvec2|matvec3|delta|rmsnorm"
cd $G
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 12-q83.yaml --case O-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,q8t_oxs=1" --rounds 6 --db $OUT/ab.db --label "q8t_oxs=1 (B) vs 0 (A), 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval ab 12-q83.yaml --case q9-O --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,q8t_oxs=1" --rounds 6 --db $OUT/ab.db --label "q8t_oxs=1 (B) vs 0 (A), 9B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q83.db $OUT/ab.db
