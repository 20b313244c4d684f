# tools/devcall.sh - the steps every development call on the lent GPU repeats, as shell functions.
# The call scripts in results/perf-h200/dev-v*/ wrote the same preamble out each time (`duplicates`
# found about twenty copies: paths, the packed library's SHA, the synthetic models, test_kernels, the
# same-bits pairs); a new call script sources this instead. Bash, from the repository root on the
# device machine, after `tools/gpu_check.sh --pack BUILD_DIR` here and carry [".carry/gpu-check"]:
#
#   . tools/devcall.sh                    G, B, E set, LD_LIBRARY_PATH; prints the stripped SHA-256 prefix and the GPU
#   devcall_models 27b 9b &               the perf models (q4_0, seed 1) into $DEVCALL_MODELS, if missing
#   devcall_wide 27b 9b                   4-layer models of those widths (seed 5, vocab 4096): $DEVCALL_TMP/w27.gguf ...
#   devcall_test_kernels                  test_kernels -> $OUT/tk.tap; one summary line, then the failures
#   devcall_bench SHAPE ROWS [N]          bench_gemv --shape SHAPE -> $OUT/bench_SHAPE.tsv; its status, then the rows whose
#                                         variant matches the regex ROWS (and N): variant and us (DEVCALL_BENCH_TIMEOUT)
#   devcall_same A AOPTS B BOPTS MODEL    engine_diff --tol 0, greedy 16 over 16 tokens; one line with its verdict
#   devcall_diff LABEL A AOPTS B BOPTS MODEL TOL [ARG...]
#                                         engine_diff at TOL, greedy 48 over 16 tokens, ARGs passed on (--b-kernel NAME,
#                                         --b-no-kernel NAME: the routing asked of B's profile=1); its output appended to
#                                         $OUT/ed.txt under "== LABEL on MODEL"; one line with its verdict
#   devcall_suite YAML NAME [REGEX]       kestrel-eval run YAML (a path from the pack, engines from the pack) into
#                                         $OUT/NAME.db, its log $OUT/NAME-log.txt; one line per case; the step traces'
#                                         per-kernel table to $OUT/NAME-kernels.csv, its rows matching REGEX printed
#   devcall_ab YAML CASE A AOPTS B BOPTS LABEL
#                                         kestrel-eval ab of CASE (DEVCALL_AB_ROUNDS rounds, default 6) from the pack
#                                         with its engines, A against B, into $OUT/ab.db under LABEL, killed after
#                                         DEVCALL_AB_TIMEOUT seconds (default 150; status 124); the ratio, verdict and
#                                         record lines printed; DEVCALL_AB_FORCE=1 passes --force (A and B differing in
#                                         both the library and the options: a control, on purpose)
#   devcall_close FILE.db ...             each DB's WAL folded in (tools/db_fold.sh), then xz -9 (FILE.db.xz);
#                                         a DB whose WAL cannot be folded keeps its files and fails
#   devcall_mark LABEL                    "[+N s] LABEL": seconds since the tool was sourced (where a call's time went)
#
# A and B of devcall_same, devcall_diff and devcall_ab: a library path, or `cuda` for the packed libkestrel-cuda.so.
# Every function returns the exit status of what it ran (devcall_same, devcall_diff: engine_diff's, devcall_suite: the
# run's, devcall_ab: ab's), so `|| fail=1` works.
# Environment: DEVCALL_PACK (default .carry/gpu-check), DEVCALL_MODELS (default /tmp/kestrel-perf),
# DEVCALL_TMP (default /tmp), DEVCALL_GPU_CMD (prints the GPU's name and driver; default nvidia-smi's), DEVCALL_AB_ROUNDS, DEVCALL_AB_TIMEOUT, DEVCALL_AB_FORCE (devcall_ab), DEVCALL_BENCH_TIMEOUT
# (devcall_bench), DEVCALL_ED_TIMEOUT (devcall_same, default 60 s; devcall_diff, default 120 s), OUT (set by the
# device tool).
# tests/tools-devcall.sh runs them with stubs.

G=$PWD/${DEVCALL_PACK:-.carry/gpu-check}
B=$G/bin
E=$G/engines
DEVCALL_MODELS=${DEVCALL_MODELS:-/tmp/kestrel-perf}
DEVCALL_TMP=${DEVCALL_TMP:-/tmp}
DEVCALL_TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH=$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
DEVCALL_TOKENS="1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64"
DEVCALL_T0=$(date +%s)

# "[+N s] LABEL", N the seconds since the tool was sourced (the call scripts v40 wrote as their own el())
devcall_mark() { echo "[+$(($(date +%s) - DEVCALL_T0)) s] $*"; }

# the stripped library's SHA-256 prefix (16 hex digits): the name every number of the call goes under
devcall_sha() {
    local s
    s=$(mktemp) || return 1
    strip --strip-unneeded -o "$s" "${1:-$E/libkestrel-cuda.so}" && sha256sum "$s" | cut -c1-16
    local rc=$?
    rm -f "$s"
    return $rc
}

# the preset of a short name: 27b -> qwen3.5-27b (27b, 9b, 2b, tiny)
devcall_preset() {
    case $1 in
    27b | 9b | 2b) echo "qwen3.5-$1" ;;
    tiny) echo tiny ;;
    *) echo "devcall: unknown model '$1' (27b, 9b, 2b or tiny)" >&2; return 2 ;;
    esac
}

devcall_models() {
    local m p f rc=0
    mkdir -p "$DEVCALL_MODELS" || return 1
    for m in "$@"; do
        p=$(devcall_preset "$m") || return 2
        f=$DEVCALL_MODELS/$p-q4_0.gguf
        [ -s "$f" ] && continue
        "$B/kestrel-eval" gen-model --preset "$p" --type q4_0 --seed 1 -o "$f" >/dev/null || rc=1
    done
    return $rc
}

devcall_wide() {
    local m p rc=0
    for m in "$@"; do
        p=$(devcall_preset "$m") || return 2
        "$B/kestrel-eval" gen-model --preset "$p" --type q4_0 --seed 5 --layers 4 --vocab 4096 \
            -o "$DEVCALL_TMP/w${m%b}.gguf" >/dev/null || rc=1
    done
    return $rc
}

devcall_test_kernels() {
    timeout "${DEVCALL_TK_TIMEOUT:-150}" "$B/test_kernels" tests/fixtures >"$OUT/tk.tap" 2>&1
    local rc=$?
    echo "test_kernels rc $rc $(grep -c '^ok' "$OUT/tk.tap") ok, $(grep -c '^not ok' "$OUT/tk.tap") not ok"
    grep -E '^not ok' "$OUT/tk.tap" | cut -c1-300
    return $rc
}

# bench_gemv --shape SHAPE (killed after DEVCALL_BENCH_TIMEOUT seconds, default 150) -> $OUT/bench_SHAPE.tsv; one status
# line, then the rows whose variant (column 2) matches the awk regex ROWS and, if given, N (e.g. 'n=(512|4096)( |$)'):
# variant and microseconds (columns 2 and 5)
devcall_bench() {
    local shape=$1 rows=$2 n=${3:-} f rc
    f=$OUT/bench_$shape.tsv
    timeout "${DEVCALL_BENCH_TIMEOUT:-150}" "$B/bench_gemv" --shape "$shape" >"$f" 2>&1
    rc=$?
    echo "bench_$shape rc $rc"
    awk -F'\t' -v r="$rows" -v n="$n" '$2 ~ r && (n == "" || $2 ~ n) { print $2 "\t" $5 }' "$f"
    return $rc
}

devcall_lib() { if [ "$1" = cuda ]; then echo "$E/libkestrel-cuda.so"; else echo "$1"; fi; }

devcall_same() {
    local a ao=$2 b bo=$4 m=$5 log
    a=$(devcall_lib "$1")
    b=$(devcall_lib "$3")
    log=$(mktemp) || return 1
    timeout "${DEVCALL_ED_TIMEOUT:-60}" "$B/engine_diff" --a "$a" ${ao:+--a-options "$ao"} \
        --b "$b" ${bo:+--b-options "$bo"} --model "$m" --tokens "$DEVCALL_TOKENS" --greedy 16 \
        --tol 0 >"$log" 2>&1
    local rc=$?
    echo "same bits: $(basename "$a") [$ao] vs $(basename "$b") [$bo] on $(basename "$m"): rc $rc $(tail -1 "$log" | cut -c1-100)"
    rm -f "$log"
    return $rc
}

# the engine_diff every call script since v34 wrote out as its own ed() (duplicates found seven copies)
devcall_diff() {
    local l=$1 a ao=$3 b bo=$5 m=$6 t=$7 log
    a=$(devcall_lib "$2")
    b=$(devcall_lib "$4")
    shift 7
    log=$(mktemp) || return 1
    timeout "${DEVCALL_ED_TIMEOUT:-120}" "$B/engine_diff" --a "$a" ${ao:+--a-options "$ao"} \
        --b "$b" ${bo:+--b-options "$bo"} --model "$m" --tokens "$DEVCALL_TOKENS" --greedy 48 \
        --tol "$t" "$@" >"$log" 2>&1
    local rc=$?
    { echo "== $l on $(basename "$m")"; cat "$log"; } >>"$OUT/ed.txt"
    echo "$l on $(basename "$m") [$ao] vs [$bo] tol $t: rc $rc $(tail -1 "$log" | cut -c1-100)"
    rm -f "$log"
    return $rc
}

devcall_suite() {
    local y=$1 n=$2 re=${3:-} rc
    (cd "$G" && KESTREL_ENGINE_DIR=$E timeout "${DEVCALL_RUN_TIMEOUT:-300}" "$B/kestrel-eval" run "$y" --db "$OUT/$n.db") \
        >"$OUT/$n-log.txt" 2>&1
    rc=$?
    echo "$n rc $rc"
    grep -E '^\[' "$OUT/$n-log.txt" | cut -c1-110
    "$B/kestrel-eval" query --db "$OUT/$n.db" --format csv "select c.name, k.kernel, k.calls, round(k.ms_per_step,4) \
from kernel_profile k join cases c on c.id = k.case_id order by c.name, k.ms_per_step desc" >"$OUT/$n-kernels.csv" 2>/dev/null
    [ -z "$re" ] || grep -E "$re" "$OUT/$n-kernels.csv"
    return $rc
}

devcall_ab() {
    local y=$1 c=$2 a ao=$4 b bo=$6 l=$7 log rc
    a=$(devcall_lib "$3")
    b=$(devcall_lib "$5")
    log=$(mktemp) || return 1
    (cd "$G" && KESTREL_ENGINE_DIR=$E timeout "${DEVCALL_AB_TIMEOUT:-150}" "$B/kestrel-eval" ab "$y" --case "$c" \
        --a "$a" ${ao:+--a-options "$ao"} --b "$b" ${bo:+--b-options "$bo"} --rounds "${DEVCALL_AB_ROUNDS:-6}" \
        ${DEVCALL_AB_FORCE:+--force} --db "$OUT/ab.db" --label "$l") >"$log" 2>&1
    rc=$?
    tail -3 "$log"
    rm -f "$log"
    return $rc
}

devcall_close() {
    local d rc=0
    for d in "$@"; do
        [ -f "$d" ] || { echo "devcall: no $d" >&2; rc=1; continue; }
        sh "$DEVCALL_TOOLS/db_fold.sh" "$d" || { rc=1; continue; } # a log not folded in: the files stay
        xz -9f "$d" || rc=1
    done
    return $rc
}

echo "devcall: library $(devcall_sha) ($E/libkestrel-cuda.so)"
# the card, since the lent pool has H100s beside the H200: a call's timings compare only with the same card's
echo "devcall: GPU $(${DEVCALL_GPU_CMD:-nvidia-smi --query-gpu=name,driver_version --format=csv,noheader} 2>/dev/null | head -1 | grep . || echo '(unknown: no nvidia-smi answer)')"
