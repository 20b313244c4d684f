#!/bin/bash
# v37 call 2: attention_kvch (option attn_kvc_hs=N, default 0): the kv-head steps past N positions over TWO clusters
# of 16 blocks per kv head, each for half of its q heads (27B: 3 of 6, 9B: 2 of 4) and all of its rows, where the
# default (attention_kvct) has one cluster for all G. Why (v37 call 1's trace, v36's slope): at 27B prompt 12288 the
# attention takes 0.703 ms/step (44 us per layer) on 64 of the 132 SMs, each block bounded by ~20 ns per row of
# issue (scores and p x V for G heads); two clusters use 128 SMs and halve each block's per-row work; the rows are
# read twice (the twin cluster's reads of the same lines at the same time, mostly from L2). Same bits as kvct.
# N = this tree: the 180 kernels of 945660dae8fe keep their PTX (tools/ptx_diff.sh: 180 same, 8 only-new).
# Prediction: bench kvch(16) vs kvct(16) n = 1024 ~12 vs 12.8 us, 4096 14-16 vs 19.6, 8192 20-25 vs 32.9, 16384
# 30-38 vs 54.8; step 27B prompt 12288 H 0.15-0.22 ms under D (the out projection losing its preload beside 128
# attention blocks takes 2-4 us of each layer's gain), prompt 4096 within +-0.04 ms; 9B prompt 12288 ab 0.94-0.97.
# Rule, written before the call: attn_kvc_hs becomes a default (at the crossover the bench and these cases show) in a
# later session with its official run, if test_kernels passes, kvch is bit for bit kvct (engine_diff tol 0, routing
# checked, pdl=0 / graph=0), the 9B ab is "B faster" with its upper end below 1 and the 27B prompt-12288 pair agrees;
# else the option stays off (or is dropped if slower everywhere). No device time is left this session for an
# official run, so this call ships nothing.
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 2-q124.yaml and 2-q125.yaml into .carry/gpu-check/.
set -u
. tools/devcall.sh
echo "N $(devcall_sha)"
devcall_models 27b 9b &
devcall_test_kernels
grep -E 'attention_kvch|kvch\(' $OUT/tk.tap | cut -c1-200 | head -12
timeout 90 $B/bench_gemv --shape attn > $OUT/bench_attn.tsv 2>&1; echo "bench_attn rc $?"
grep -E 'n=(256|512|1024|4096|8192|16384|32768)\b' $OUT/bench_attn.tsv | grep -E 'gqa n=[0-9]+ skip=0|attention_kvc[th]?\(16\)' | cut -f2,5
devcall_wide 27b 9b
L=attn_short=4,attn_kvc_from=8
for m in w27 w9; do
  devcall_diff kvch-kvct cuda "$L" cuda "$L,attn_kvc_hs=16,profile=1" $DEVCALL_TMP/$m.gguf 0 --b-kernel attention_kvch --b-kernel attention_kvct
  devcall_diff kvch-noprep cuda "$L,attn_fuse=1" cuda "$L,attn_fuse=1,attn_kvc_hs=16,profile=1" $DEVCALL_TMP/$m.gguf 0 --b-kernel attention_kvch --b-kernel attn_prep
done
devcall_diff kvch-c3 cuda "ctx=3072,$L,attn_kvc=3" cuda "ctx=3072,$L,attn_kvc=3,attn_kvc_hs=16,profile=1" $DEVCALL_TMP/w27.gguf 0 --b-kernel attention_kvch
devcall_diff kvch-pdl0 cuda "$L,attn_kvc_hs=16" cuda "$L,attn_kvc_hs=16,pdl=0" $DEVCALL_TMP/w27.gguf 0
devcall_diff kvch-graph0 cuda "$L,attn_kvc_hs=16" cuda "$L,attn_kvc_hs=16,graph=0" $DEVCALL_TMP/w27.gguf 0
wait
DEVCALL_AB_ROUNDS=3 DEVCALL_AB_TIMEOUT=180 devcall_ab 2-q124.yaml q9-p12288 cuda "graph=1,ctx=12800" cuda "graph=1,ctx=12800,attn_kvc_hs=1024" "attn_kvc_hs=1024 (B: two clusters per kv head past 1024 positions, attention_kvch) vs the default (A: attention_kvct), 9B prompt 12288"
DEVCALL_RUN_TIMEOUT=230 devcall_suite 2-q125.yaml q125
devcall_close $OUT/ab.db $OUT/q125.db
