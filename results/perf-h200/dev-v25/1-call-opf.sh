#!/bin/bash
# v25 call 1 - option opf (PERF-NOTES v25): the out projections' producer warps L2-prefetch the last K
# stages of each block of the SwiGLU after them while the delta rule (or the attention) runs and HBM
# would idle; evict_last with an L2 set-aside (opf_pol=last, opf_l2) or the default priority; at issue or
# once the out projection's own stages have landed. Against the default and the shipped 7e10b2082a80
# (base.so): test_kernels (opf bit for bit), same bits (tol 0), the suite 1-q75.yaml, traces, one ab.
# Pack: tools/gpu_check.sh --pack BUILD; copy this script, 1-q75.yaml and base.so.xz into .carry/gpu-check/.
set -u
. tools/devcall.sh
xz -dk $G/base.so.xz; echo "base $(devcall_sha $G/base.so)"
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
devcall_same $G/base.so "" cuda "" $DEVCALL_TMP/w27.gguf
for m in w27 w9; do
  for o in opf=2 opf=3,opf_pol=last,opf_l2=40 opf=1,opf_at=landed; do devcall_same cuda "" cuda "$o" $DEVCALL_TMP/$m.gguf; done
done
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,opf=2,opf_pol=last,opf_l2=32" $DEVCALL_TMP/w27.gguf
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 1-q75.yaml --db $OUT/q75.db > $OUT/q75-log.txt 2>&1; echo "q75 rc $?"
grep -E "^\[" $OUT/q75-log.txt | cut -c1-110
$B/kestrel-eval query --db $OUT/q75.db --format csv "select c.name, k.kernel, k.calls, round(k.ms_per_step,4) from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" > $OUT/q75-kernels.csv
grep -E "swiglu|matvec_out|delta|rmsnorm_q8" $OUT/q75-kernels.csv
AB=${AB_OPTS:-opf=2,opf_pol=last,opf_l2=32}
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 1-q75.yaml --case N-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,$AB" --rounds 6 --db $OUT/ab.db --label "$AB (B) vs default (A), 27B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q75.db $OUT/ab.db
