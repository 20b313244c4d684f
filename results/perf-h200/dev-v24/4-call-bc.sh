#!/bin/bash
# v24 call 4: option q8t_wu=2 of library C (e4fa971d53b8's kernels byte-identical, two kernels more:
# matvec_q8t_bc_kernel<12|17>): the down projection's 8 warps split each stage by dot lanes, so every x
# block read from shared memory serves 8 rows (v24 bounds: the down's dots alone 0.63 ms per 27B token,
# shared-memory bound). test_kernels (bit for bit against the CPU twin at 5 x 17408, 136 x 12288,
# 2640 x 17408); same bits (tol 0) q8t_wu=2 vs the default; bench dtma (full / dots alone / stream alone /
# skeleton, default vs _bc); the suite 4-q71.yaml; ab on the 27B and the 9B.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead (C); copy this script and 4-q71.yaml.
set -u
. tools/devcall.sh
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
for m in w27 w9; do devcall_same cuda "" cuda "q8t_wu=2" $DEVCALL_TMP/$m.gguf; done
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,q8t_wu=2" $DEVCALL_TMP/w27.gguf
timeout 120 $B/bench_gemv --shape dtma > $OUT/bench_dtma.tsv 2>&1; echo "dtma rc $?"; grep down_tma200 $OUT/bench_dtma.tsv | cut -f2,5
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 4-q71.yaml --db $OUT/q71.db > $OUT/q71-log.txt 2>&1; echo "q71 rc $?"
grep -E "^\[" $OUT/q71-log.txt | cut -c1-110
$B/kestrel-eval query --db $OUT/q71.db --format csv "select c.name, k.kernel, k.calls, round(k.ms_per_step,4) from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" > $OUT/q71-kernels.csv
grep -E "matvec_add|swiglu" $OUT/q71-kernels.csv
KESTREL_ENGINE_DIR=$E timeout 120 $B/kestrel-eval ab 4-q71.yaml --case B-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,q8t_wu=2" --rounds 6 --db $OUT/ab.db --label "q8t_wu=2 (B) vs 1 (A), library C, 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 60 $B/kestrel-eval ab 4-q71.yaml --case q9-B --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,q8t_wu=2" --rounds 6 --db $OUT/ab.db --label "q8t_wu=2 (B) vs 1 (A), library C, 9B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q71.db $OUT/ab.db
