#!/bin/bash
# v45 call 1. Libraries: d78e03b12faf (HEAD 5934cb6, shipped since v44; the pack of /tmp/build-lead) and, packed as
# engines-pin/, bb3055c876edfee9 (HEAD + dev-v45/2-host-pin.patch: option host_pin, forward() stages the token ids
# and the argmax through pinned host memory; default 0, so its default path is HEAD's; no kernel changed), plus
# cuda/bench_sync (its new `roundtrip` mode) in the pack's bin/.
#
# 1. On an H200 only: the official run of d78e03b12faf ("After v44" item 1; tools/official_h200.sh, ~410 s) into
#    $OUT/official (filed afterwards by tools/file_official.sh). Prediction: 27B ctx 1 4.56-4.60 ms (v43's official
#    run of 39f5851f7c0c: 4.578; the dedupe measured 1.0002 on an H100), every GPU-check step PASS.
# 2. On any card: "After v44" item 3, the per-token host round trip, by `bench_sync roundtrip` on a 512-link and a
#    64-link PDL chain (the step's launch count, and a short one: the round trip should not depend on it).
#    Prediction (v44's estimate, written before the call): the engine's sequence (pageable token upload, memset,
#    graph launch, pageable readback, synchronise) 10-20 us over the chain alone; pinned staging 2-5 us less; the
#    memset 1-2 us.
# 3. Not on an H200 (no time left there behind the official run): host_pin in the engine. Same bits: the pin
#    library at host_pin=1 against d78e03b12faf (engine_diff --tol 0, 27B- and 9B-wide), then `ab` host_pin=0 (A)
#    vs 1 (B) in the pin library, 27B and 9B ctx 1, 6 rounds each (about 600 device-seconds were left). Prediction: the bench's pinned-vs-engine
#    difference over the step: 27B 0.9989-0.9996, 9B 0.998-0.999 (likely "no difference" at 27B).
#    Rule (written before the call): host_pin ships (default 1, a GPU-check pair added) only if the same-bits
#    pairs pass, neither ab is "B slower" and one is "B faster"; else nothing is committed (the patch stays in
#    dev-v45, the measurement in PERF-NOTES).
set -u
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
echo "GPU: $gpu"
B=.carry/gpu-check/bin
rt() {
    for l in 512 64 512; do
        timeout 60 "$B/bench_sync" roundtrip $l > "$OUT/rt-$l-$1.tsv" 2>&1; echo "roundtrip $l rc $?"
        cat "$OUT/rt-$l-$1.tsv"
    done
}
case $gpu in
*H200*)
    OUT=$OUT/official bash tools/official_h200.sh; echo "official_h200 rc $?"
    rt h200
    ;;
*)
    echo "not an H200: no official run"
    . tools/devcall.sh
    P=$G/engines-pin/libkestrel-cuda.so
    echo "pin library $(devcall_sha "$P")"
    devcall_models 27b 9b > $OUT/models.txt 2>&1 &
    mp=$!
    rt h100
    devcall_wide 27b 9b
    devcall_same cuda "" "$P" "host_pin=1" $DEVCALL_TMP/w27.gguf
    devcall_same cuda "" "$P" "host_pin=1" $DEVCALL_TMP/w9.gguf
    wait $mp; cat $OUT/models.txt
    devcall_mark checks
    DEVCALL_AB_ROUNDS=6 DEVCALL_AB_TIMEOUT=130 devcall_ab 2-q142.yaml q27-ctx1 "$P" "graph=1,ctx=4608,host_pin=0" "$P" "graph=1,ctx=4608,host_pin=1" "host_pin=1 (B) vs 0 (A), bb3055c876ed, 27B context 1"
    devcall_mark ab1
    DEVCALL_AB_ROUNDS=6 DEVCALL_AB_TIMEOUT=90 devcall_ab 2-q142.yaml q9-ctx1 "$P" "graph=1,ctx=4608,host_pin=0" "$P" "graph=1,ctx=4608,host_pin=1" "host_pin=1 (B) vs 0 (A), bb3055c876ed, 9B context 1"
    devcall_mark ab2
    devcall_close $OUT/ab.db
    ;;
esac
# the new test's GPU branch (make check on the CI machine has no GPU and takes the other)
mkdir -p /tmp/tb/cuda && cp "$B/bench_sync" /tmp/tb/cuda/ && top_srcdir=$PWD top_builddir=/tmp/tb sh tests/cuda-bench-sync.sh
