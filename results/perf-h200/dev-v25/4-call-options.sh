#!/bin/bash
# v25 call 4 - the shipped library (7e10b2082a80, built from HEAD) under its existing options again: each
# was measured in an older session against older kernels (rms_fold v22, norm_tail v16, q8t_ogrid v23,
# q8t_kb v15, carveout v15, delta_pf v20); the kernels have moved since (the x-broadcast down projection,
# the out projections' grid). 27B a/b in mirrored order, 9B; then ab of the fastest 27B option against the
# default (same library, one option differs).
set -u
. tools/devcall.sh
devcall_models 27b 9b
cd $G; KESTREL_ENGINE_DIR=$E timeout 400 $B/kestrel-eval run 4-q78.yaml --db $OUT/q78.db > $OUT/q78-log.txt 2>&1; echo "q78 rc $?"
grep -E "^\[" $OUT/q78-log.txt | cut -c1-110
declare -A O=([F]=rms_fold=ffn [I]=rms_fold=in [B]=rms_fold=1 [NT]=norm_tail=1 [OG]=q8t_ogrid=0 [K110]=q8t_kb=110 [K90]=q8t_kb=90 [CO]=carveout=101 [DPF]=delta_pf=1)
best=$($B/kestrel-eval query --db $OUT/q78.db --format csv "select e, avg(v) m from (select substr(c.name, 1, instr(c.name, '-') - 1) e, m.value v from metrics m join cases c on c.id = m.case_id where m.name = 'ms_per_token_median' and c.name not like 'q9-%' and c.name not like 'N-%') group by e order by m limit 1" | tail -1 | cut -d, -f1)
echo "fastest 27B option: $best (${O[$best]:-?})"
[ -n "${O[$best]:-}" ] && KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 4-q78.yaml --case N-a --a cuda --a-options "graph=1,ctx=4608" --b cuda --b-options "graph=1,ctx=4608,${O[$best]}" --rounds 6 --db $OUT/ab.db --label "${O[$best]} (B) vs default (A), 27B ctx 1" 2>&1 | tail -3
devcall_close $OUT/q78.db $OUT/ab.db
