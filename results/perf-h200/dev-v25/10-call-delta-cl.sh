#!/bin/bash
# v25 call 10 - PREPARED, NOT RUN: After v25 item 2, option delta_cl=2|4 — the delta rule with its gated norm
# over a thread-block cluster of C blocks per head (128/C columns each, one thread per column as today,
# delta_column's arithmetic; the norm's head sum in block_sum's order through distributed shared memory):
# each SM loads and stores 64/C KB of state instead of 64 (bench_gemv --shape gdnwin, row 7: the delta
# rule's columns 3 us after its wait with nothing beside it, 6.9 with the out projection's preload, then a
# 3 us tail). Code: 10-delta-cl.patch (against the commit that added it; built with --enable-werror,
# CPU-side CUDA tests pass, the default kernels' PTX unchanged; 255 registers and a 56-byte spill, as the
# default delta kernel). test_kernels (bit for bit against delta_step_norm_q8), same bits, the window bench
# with each C (KC_GDNWIN_CL), the suite 10-q81.yaml with traces, ab of the faster C against the default.
# Pack: git apply 10-delta-cl.patch; build; tools/gpu_check.sh --pack BUILD; copy this script and
# 10-q81.yaml into .carry/gpu-check/. (Independent of 9-delta-trig3.patch: apply one at a time.)
set -u
. tools/devcall.sh
devcall_models 27b 9b &
devcall_wide 27b 9b
devcall_test_kernels
grep -E "delta_step_norm_q8_cl" $OUT/tk.tap | cut -c1-160
for m in w27 w9; do for c in 2 4; do devcall_same cuda "" cuda "delta_cl=$c" $DEVCALL_TMP/$m.gguf; done; done
devcall_same cuda "pdl=0,graph=0" cuda "pdl=0,graph=0,delta_cl=4" $DEVCALL_TMP/w27.gguf
for c in 0 2 4; do KC_GDNWIN_CL=$c timeout 60 $B/bench_gemv --shape gdnwin > $OUT/gdnwin-cl$c.txt 2>&1; echo "gdnwin cl=$c rc $?"; grep "^# gdnwin" $OUT/gdnwin-cl$c.txt | sed 's/, us from.*max\]://'; done
wait
devcall_suite 10-q81.yaml q81 "delta|matvec_out|gdn_prep"
cd $G
best=$($B/kestrel-eval query --db $OUT/q81.db --format csv "select e, avg(v) m from (select substr(c.name, 1, instr(c.name, '-') - 1) e, m.value v from metrics m join cases c on c.id = m.case_id where m.name = 'ms_per_token_median' and c.name like 'C%') group by e order by m limit 1" | tail -1 | cut -d, -f1)
c=${best#C}; echo "faster cluster: delta_cl=$c"
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 10-q81.yaml --case N-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,delta_cl=$c" --rounds 6 --db $OUT/ab.db --label "delta_cl=$c (B) vs 0 (A), 27B ctx 1" 2>&1 | tail -3
KESTREL_ENGINE_DIR=$E timeout 100 $B/kestrel-eval ab 10-q81.yaml --case q9-N --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,delta_cl=$c" --rounds 6 --db $OUT/ab.db --label "delta_cl=$c (B) vs 0 (A), 9B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q81.db $OUT/ab.db
