#!/bin/bash
# v35 call 5: the step trace (libkestrel-cuda-trace.so, profile=trace: each kernel's share of the real step's
# critical path, graph and PDL on) at 27B prompt 4096, the default (attention_kvc past 1024 positions) and
# attn_kvc=0 (the cluster by q head), and at ctx 1, in one lease. v34 could not say where its bench gain went in
# the step (no trace was taken); "After v35" item 2 put the long context's excess over ctx 1 (0.35 ms) on the
# attention by bench arithmetic. Prediction, written before the call: attention_kvc 0.45-0.48 ms/step (16 x 28-30
# us), attention_short_cl_prep at attn_kvc=0 0.61-0.64 (16 x 38-40), ctx 1's attention_short_prep ~0.13; the
# out projection after the attention (matvec_out_add, shared with the GDN layers' out projections) within 0.03 ms
# of each other; every other kernel within 0.03 ms between the three cases. Library cb7b329ade6b (the shipped one).
# Pack: tools/gpu_check.sh --pack BUILD_DIR; copy this script and 5-q117.yaml into the pack.
set -u
. tools/devcall.sh
echo "N $(devcall_sha) trace $(devcall_sha $E/libkestrel-cuda-trace.so)"
devcall_models 27b || exit 1
devcall_suite 5-q117.yaml q117 'attention|matvec_out_add|total'
devcall_close $OUT/q117.db
