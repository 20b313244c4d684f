#!/bin/bash
# v25 call 5 - option delta_trig (PERF-NOTES v25): the delta rule's griddepcontrol.launch_dependents after
# its loads are issued (1) or after its columns are computed (2) instead of at its start, so the out
# projection's ring preload (18 MB) does not queue in front of the state's 3 MB of loads (the bounds: the
# delta rule takes 0.28 ms per token with no weight traffic, 0.37 with it). test_kernels, same bits, the
# suite 5-q79.yaml with traces, ab of the faster form against the default (same library).
set -u
. tools/devcall.sh
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
grep -E "delta_step_norm_q8_trig" $OUT/tk.tap | cut -c1-160
for m in w27 w9; do for o in delta_trig=1 delta_trig=2; do devcall_same cuda "" cuda "$o" $DEVCALL_TMP/$m.gguf; done; done
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,delta_trig=1" $DEVCALL_TMP/w27.gguf
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 5-q79.yaml --db $OUT/q79.db > $OUT/q79-log.txt 2>&1; echo "q79 rc $?"
grep -E "^\[" $OUT/q79-log.txt | cut -c1-110
$B/kestrel-eval query --db $OUT/q79.db --format csv "select c.name, k.kernel, k.calls, round(k.ms_per_step,4) from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" > $OUT/q79-kernels.csv
grep -E "delta|matvec_out|gdn_prep|swiglu" $OUT/q79-kernels.csv
best=$($B/kestrel-eval query --db $OUT/q79.db --format csv "select e, avg(v) m from (select substr(c.name, 1, instr(c.name, '-') - 1) e, m.value v from metrics m join cases c on c.id = m.case_id where m.name = 'ms_per_token_median' and c.name like 'D%') group by e order by m limit 1" | tail -1 | cut -d, -f1)
t=${best#D}; echo "faster form: delta_trig=$t"
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 5-q79.yaml --case N-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,delta_trig=$t" --rounds 6 --db $OUT/ab.db --label "delta_trig=$t (B) vs 0 (A), 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval ab 5-q79.yaml --case q9-N --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,delta_trig=$t" --rounds 6 --db $OUT/ab.db --label "delta_trig=$t (B) vs 0 (A), 9B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q79.db $OUT/ab.db
