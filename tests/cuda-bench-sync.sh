#!/bin/sh
# cuda-bench-sync: cuda/bench_sync's arguments (no GPU needed: a bad one is refused before any CUDA call) and, where a
# GPU is visible, the `roundtrip` mode's table (docs/cuda-engine.md "bench_sync"): its five variants in order, numbers
# in every column, the chain's line last; without a GPU, one error line and exit 1, not a crash.
. "$top_srcdir/tests/lib.sh"
prog=$top_builddir/cuda/bench_sync
[ -x "$prog" ] || skip_all "CUDA engine not configured (no cuda/bench_sync)"
plan 10

for a in "roundtrip 0" "roundtrip 513" "roundtrip x" "roundtrip 8x" "roundtrip 8 9" "chain"; do
    # shellcheck disable=SC2086
    run_cmd "$prog" $a
    ok "[ $RC -eq 2 ] && [ -z \"\$OUT\" ] && echo \"\$ERR\" | grep -q '^usage: bench_sync \[roundtrip \[LINKS (1..512'" \
        "bench_sync $a: usage on stderr, exit 2, nothing on stdout"
done

run_cmd "$prog" roundtrip 16
if echo "$OUT" | grep -q '^device'; then
    is 0 "$RC" "roundtrip 16 on the GPU: exit 0"
    is "queued launch_sync pinned_nomemset pinned engine" \
        "$(echo "$OUT" | awk -F'\t' 'NF == 4 && $1 != "variant" && $1 != "device" { printf "%s%s", s, $1; s = " " }')" \
        "roundtrip: the five variants in order"
    n=$(echo "$OUT" | awk -F'\t' 'NF == 4 && $1 != "variant" && $1 != "device" && $2 ~ /^[0-9]+\.[0-9][0-9]$/ &&
        $3 ~ /^[0-9]+\.[0-9][0-9]$/ && $4 ~ /^-?[0-9]+\.[0-9][0-9]$/' | wc -l)
    is 5 "$n" "roundtrip: median, MAD and excess are numbers on every row"
    like "$(echo "$OUT" | tail -1)" '^# the chain alone \(G\): [0-9]+\.[0-9][0-9] us$' "roundtrip: the chain's time last"
else
    is 1 "$RC" "roundtrip 16 without a GPU: exit 1"
    is "" "$OUT" "without a GPU: nothing on stdout"
    is 1 "$(echo "$ERR" | wc -l)" "without a GPU: one error line"
    like "$ERR" '^bench_sync: .*bench_sync\.cu:[0-9]+: cudaGetDeviceProperties' "without a GPU: the failed call named"
fi
done_testing
