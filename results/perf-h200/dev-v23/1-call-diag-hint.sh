#!/bin/bash
# v23 call 1: (a) the diagnostics written at the end of v22 (dev-v22/7-call-next.sh): the FFN's per-block
# timelines, dtma, ncu per-SASS of the out projection and qkv+z, on the shipped 8192a5b49fe6; the GPU
# check's new 16640-column test_kernels shape; (b) H = the same library built with
# -DKC_BULK_EVICT_FIRST (every weight bulk copy with an L2 evict_first policy: the weights are read once
# per token, so they should not push out the activations and state the small kernels read next):
# same bits, bench dtma of its bench_gemv, the suite 1-q63.yaml, ab H vs shipped; (c) residency options
# of the shipped library in the same suite (one ring block per SM at 110 KB, so the next GEMV's block
# fits beside it; the down projection's ring at 110 KB; with carveout=100).
# Pack: tools/gpu_check.sh --pack /tmp/build-lead; copy this script, 1-q63.yaml, hint.so.xz,
# hint-bench_gemv.xz into .carry/gpu-check/ (the trace library left out: the 64 MiB limit).
set -u
. tools/devcall.sh
xz -dk $G/hint.so.xz $G/hint-bench_gemv.xz && chmod +x $G/hint-bench_gemv
echo "H $(devcall_sha $G/hint.so)"
devcall_models 27b 9b &
devcall_test_kernels
devcall_wide 27b 9b
for m in w27 w9; do for o in "" "pdl=0" "graph=0"; do devcall_same cuda "$o" $G/hint.so "$o" $DEVCALL_TMP/$m.gguf; done; done
timeout 120 $B/bench_gemv --shape ffn > $OUT/bench_ffn.tsv 2>&1; echo "ffn rc $?"; grep -E "^#|ffn" $OUT/bench_ffn.tsv | head -30
for b in $B/bench_gemv $G/hint-bench_gemv; do timeout 60 $b --shape dtma > $OUT/dtma-$(basename $b).tsv 2>&1; echo "$b dtma rc $?"; grep -E "skip|stream" $OUT/dtma-$(basename $b).tsv | head -12; done
for sh in ssm_out qkv+z; do
  timeout 150 ncu --clock-control none --kill yes -k regex:matvec_q8t_kernel --launch-skip 927 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    $B/bench_gemv --shape "$sh" > "$OUT/ncu-$sh-sass.csv" 2> "$OUT/ncu-err-$sh.txt"
  echo "ncu $sh rc $? $(wc -l < "$OUT/ncu-$sh-sass.csv") lines"; head -c 300 "$OUT/ncu-err-$sh.txt"
  xz -9 "$OUT/ncu-$sh-sass.csv"
done
wait
cd $G; KESTREL_ENGINE_DIR=$E timeout 300 $B/kestrel-eval run 1-q63.yaml --db $OUT/q63.db > $OUT/q63-log.txt 2>&1; echo "q63 rc $?"
grep -E "^\[" $OUT/q63-log.txt | cut -c1-110
KESTREL_ENGINE_DIR=$E timeout 150 $B/kestrel-eval ab 1-q63.yaml --case H-a --a cuda --a-options "graph=1,ctx=4608" --b $G/hint.so --b-options "graph=1,ctx=4608" --rounds 6 --db $OUT/ab.db --label "H (B, weight bulk copies evict_first) vs 8192a5b49fe6 (A), 27B ctx 1" 2>&1 | tail -4
devcall_close $OUT/q63.db $OUT/ab.db
