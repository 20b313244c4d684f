#!/bin/sh
# tools/devcall.sh with a stub pack (no GPU): sourcing names the packed library by its stripped SHA-256
# prefix and the GPU (or says it is unknown); devcall_models generates each missing perf model once and refuses an unknown name (2);
# devcall_wide writes the 4-layer models; devcall_test_kernels keeps the TAP and reports its counts and
# failures; devcall_bench keeps bench_gemv's table and prints the rows asked, returning its status;
# devcall_same runs engine_diff bit for bit with the options given (none when empty) and returns its status;
# devcall_diff runs it at a tolerance with the extra arguments given, keeps its output under a header in OUT/ed.txt
# and returns its status; devcall_suite runs a suite from the pack and keeps its log and kernel table, returning the
# run's status; devcall_ab runs ab from the pack (options only where given, DEVCALL_AB_ROUNDS) and returns
# its status (--force with DEVCALL_AB_FORCE); devcall_close compresses each DB (readable after xz -d, the plain file gone) and
# reports a missing DB; devcall_mark prints the seconds since sourcing before its label. tools/db_fold.sh,
# which devcall_close and official_h200.sh fold a DB's WAL with: on a DB left with a non-empty -wal (a writer
# that exited without closing) it folds the rows in with the sqlite3 tool or, without it, python3's sqlite3
# module, and with neither it fails naming the DB and keeps the -wal (the older code deleted it unfolded: rows
# lost).
. "$top_srcdir/tests/lib.sh"
command -v bash >/dev/null 2>&1 || skip_all "no bash"
command -v strip >/dev/null 2>&1 || skip_all "no strip"
command -v sqlite3 >/dev/null 2>&1 || skip_all "no sqlite3 command line tool"
command -v xz >/dev/null 2>&1 || skip_all "no xz"
PYSQL=
for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 && PYSQL=$("$py" -c 'import sqlite3, sys; print(sys.executable)' 2>/dev/null) &&
        [ -n "$PYSQL" ] && break # the interpreter itself, not a shim that needs PATH
    PYSQL=
done
[ -n "$PYSQL" ] || skip_all "no python3 with its sqlite3 module"
plan 30
TOOL=$top_srcdir/tools/devcall.sh
P=$T/root/pack
mkdir -p "$P/bin" "$P/engines" "$P/lib" "$T/root/tests/fixtures" "$T/res"
cp "$(command -v env)" "$P/engines/libkestrel-cuda.so" # any ELF file: the SHA is of its stripped copy
# stub kestrel-eval: logs the call, gen-model writes a non-empty -o file; run logs its directory, prints a case
# line and exits $RUN_RC; query prints two rows of a kernel table
cat >"$P/bin/kestrel-eval" <<'S'
#!/bin/sh
echo "$*" >>"$STUB_LOG"
case $1 in
run) echo "run-cwd $PWD $KESTREL_ENGINE_DIR" >>"$STUB_LOG"; echo "[1/1] c1  pass  1.00s  ms/token=4.7"; exit "${RUN_RC:-0}" ;;
query) printf 'T,matvec_a,1,0.5\nT,other,1,0.1\n'; exit 0 ;;
ab) echo "ab-cwd $PWD $KESTREL_ENGINE_DIR" >>"$STUB_LOG"; printf 'round 1\nratio B/A 1.0100\nverdict: B slower\nrecorded: run 1\n'; exit "${AB_RC:-0}" ;;
esac
while [ $# -gt 0 ]; do [ "$1" = -o ] && echo stub-model >"$2"; shift; done
exit 0
S
# stub test_kernels: one pass, one failure, exit 1
printf '#!/bin/sh\nprintf "1..2\\nok 1 - a\\nnot ok 2 - b differs\\n"\nexit 1\n' >"$P/bin/test_kernels"
# stub bench_gemv: logs its arguments, three rows of the bench's table, exit $BENCH_RC
cat >"$P/bin/bench_gemv" <<'S'
#!/bin/sh
echo "bench_gemv $*" >>"$STUB_LOG"
printf 'attn\tattention_kvct(16) n=512\t-\t-\t11.00\t-\t1\nattn\tattention_kvct(16) n=4096\t-\t-\t19.55\t-\t2\n'
printf 'attn\tattention_gqa n=4096 skip=0\t-\t-\t34.25\t-\t3\n'
exit "${BENCH_RC:-0}"
S
# stub engine_diff: logs its arguments, a verdict line, exit $ED_RC
printf '#!/bin/sh\necho "$*" >>"$STUB_LOG"\n[ "${ED_RC:-0}" = 0 ] && echo PASS || echo FAIL\nexit "${ED_RC:-0}"\n' \
    >"$P/bin/engine_diff"
chmod +x "$P/bin/"*
export STUB_LOG="$T/calls.log"
# dc SCRIPT: bash from $T/root with the tool sourced quietly (the pack as DEVCALL_PACK), OUT set
dc() { run_cmd env -C "$T/root" OUT="$T/res" DEVCALL_PACK=pack DEVCALL_MODELS="$T/models" DEVCALL_TMP="$T/tmp" \
    bash -c ". '$TOOL' >/dev/null && $1"; }

strip --strip-unneeded -o "$T/s" "$P/engines/libkestrel-cuda.so"
want=$(sha256sum "$T/s" | cut -c1-16)
run_cmd env -C "$T/root" DEVCALL_PACK=pack DEVCALL_GPU_CMD="echo NVIDIA H100 80GB HBM3, 580.159.04" bash -c ". '$TOOL'"
is "0|16|devcall: library $want ($P/engines/libkestrel-cuda.so)
devcall: GPU NVIDIA H100 80GB HBM3, 580.159.04" "$RC|${#want}|$OUT" \
    "sourcing names the library by its stripped SHA prefix and the GPU"
run_cmd env -C "$T/root" DEVCALL_PACK=pack DEVCALL_GPU_CMD=false bash -c ". '$TOOL'"
like "$OUT" "devcall: GPU \(unknown: no nvidia-smi answer\)$" "sourcing without an answer from nvidia-smi says so"

: >"$STUB_LOG"
dc "devcall_models 27b 9b"
is "0|2" "$RC|$(grep -c 'gen-model --preset qwen3.5-.*b --type q4_0 --seed 1 -o' "$STUB_LOG")" "devcall_models: both perf models generated"
ok '[ -s "$T/models/qwen3.5-27b-q4_0.gguf" ] && [ -s "$T/models/qwen3.5-9b-q4_0.gguf" ]' "devcall_models: the files under DEVCALL_MODELS"
dc "devcall_models 27b"
is "0|2" "$RC|$(wc -l <"$STUB_LOG" | tr -d ' ')" "devcall_models: a model already there is not generated again"
dc "devcall_models 5b"
is "2|devcall: unknown model '5b' (27b, 9b, 2b or tiny)" "$RC|$ERR" "devcall_models: an unknown name, exit 2 and one line"

mkdir -p "$T/tmp"
: >"$STUB_LOG"
dc "devcall_wide 27b 2b"
is "0|gen-model --preset qwen3.5-27b --type q4_0 --seed 5 --layers 4 --vocab 4096 -o $T/tmp/w27.gguf" \
    "$RC|$(head -1 "$STUB_LOG")" "devcall_wide: a 4-layer model of the 27B's width"
ok '[ -s "$T/tmp/w2.gguf" ]' "devcall_wide: named by the width's short name (w2.gguf)"

dc "devcall_bench attn 'kvct|gqa' 'n=4096( |\$)'"
is "0|bench_attn rc 0|attention_kvct(16) n=4096	19.55|attention_gqa n=4096 skip=0	34.25" \
    "$RC|$(echo "$OUT" | tr '\n' '|' | sed 's/|$//')" "devcall_bench: its status line, then the rows of the variants and sizes asked"
ok 'grep -q "attention_kvct(16) n=512" "$T/res/bench_attn.tsv" && grep -q "^bench_gemv --shape attn$" "$STUB_LOG"' \
    "devcall_bench: the whole table kept in OUT/bench_SHAPE.tsv, bench_gemv asked for the shape"
run_cmd env -C "$T/root" OUT="$T/res" DEVCALL_PACK=pack BENCH_RC=3 bash -c ". '$TOOL' >/dev/null && devcall_bench attn kvct"
is "3|bench_attn rc 3|attention_kvct(16) n=512	11.00|attention_kvct(16) n=4096	19.55" \
    "$RC|$(echo "$OUT" | tr '\n' '|' | sed 's/|$//')" "devcall_bench: without N every size; a failing bench's status returned"

dc "devcall_test_kernels"
is "1|test_kernels rc 1 1 ok, 1 not ok|not ok 2 - b differs" "$RC|$(echo "$OUT" | tr '\n' '|' | sed 's/|$//')" \
    "devcall_test_kernels: its status, the counts, the failure"
ok 'grep -q "^not ok 2" "$T/res/tk.tap"' "devcall_test_kernels: the TAP kept in OUT"

: >"$STUB_LOG"
dc "devcall_same cuda pdl=0 /x/base.so '' /m/w27.gguf"
is "0|same bits: libkestrel-cuda.so [pdl=0] vs base.so [] on w27.gguf: rc 0 PASS" "$RC|$OUT" "devcall_same: one line with the verdict"
is "--a $P/engines/libkestrel-cuda.so --a-options pdl=0 --b /x/base.so --model /m/w27.gguf --tokens 1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64 --greedy 16 --tol 0" \
    "$(cat "$STUB_LOG")" "devcall_same: cuda is the packed library, empty options are not passed, tol 0"
run_cmd env -C "$T/root" OUT="$T/res" DEVCALL_PACK=pack ED_RC=1 bash -c ". '$TOOL' >/dev/null && devcall_same cuda '' cuda rms_fold=1 /m/w9.gguf"
is "1|same bits: libkestrel-cuda.so [] vs libkestrel-cuda.so [rms_fold=1] on w9.gguf: rc 1 FAIL" "$RC|$OUT" \
    "devcall_same: engine_diff's failure is its status"

: >"$STUB_LOG"
rm -f "$T/res/ed.txt"
dc "devcall_diff kvct-kvc cuda attn_kvc_tm=0 cuda '' /m/w27.gguf 1e-3 --b-kernel attention_kvct --b-no-kernel attention_kvc"
is "0|kvct-kvc on w27.gguf [attn_kvc_tm=0] vs [] tol 1e-3: rc 0 PASS|--a $P/engines/libkestrel-cuda.so --a-options attn_kvc_tm=0 --b $P/engines/libkestrel-cuda.so --model /m/w27.gguf --tokens 1,2,3,4,5,6,7,8,200,17,3,42,99,5,128,64 --greedy 48 --tol 1e-3 --b-kernel attention_kvct --b-no-kernel attention_kvc|== kvct-kvc on w27.gguf|PASS" \
    "$RC|$OUT|$(cat "$STUB_LOG")|$(tr '\n' '|' <"$T/res/ed.txt" | sed 's/|$//')" \
    "devcall_diff: one line with the verdict; engine_diff at the tolerance with the extra arguments; its output under a header in OUT/ed.txt"
run_cmd env -C "$T/root" OUT="$T/res" DEVCALL_PACK=pack ED_RC=1 bash -c ". '$TOOL' >/dev/null && devcall_diff two /x/a.so '' cuda pdl=0 /m/w9.gguf 0"
is "1|two on w9.gguf [] vs [pdl=0] tol 0: rc 1 FAIL|2" "$RC|$OUT|$(grep -c '^== ' "$T/res/ed.txt")" \
    "devcall_diff: engine_diff's failure is its status; a second diff appended to OUT/ed.txt"

: >"$STUB_LOG"
dc "devcall_suite q.yaml q1 'matvec_'"
is "0|q1 rc 0|[1/1] c1  pass  1.00s  ms/token=4.7|T,matvec_a,1,0.5|run q.yaml --db $T/res/q1.db|run-cwd $P $P/engines|2" \
    "$RC|$(echo "$OUT" | tr '\n' '|' | sed 's/|$//')|$(head -2 "$STUB_LOG" | tr '\n' '|' | sed 's/|$//')|$(wc -l <"$T/res/q1-kernels.csv" | tr -d ' ')" \
    "devcall_suite: the run from the pack with its engines, one line per case, the kernel rows asked for, the table kept"
run_cmd env -C "$T/root" OUT="$T/res" DEVCALL_PACK=pack RUN_RC=3 bash -c ". '$TOOL' >/dev/null && devcall_suite q.yaml q2"
is "3|q2 rc 3|[1/1] c1  pass  1.00s  ms/token=4.7|yes" "$RC|$(echo "$OUT" | tr '\n' '|' | sed 's/|$//')|$([ -s "$T/res/q2-log.txt" ] && echo yes)" \
    "devcall_suite: the run's failure is its status, its log kept, no kernel rows without a REGEX"

: >"$STUB_LOG"
dc "devcall_ab q.yaml N-a /x/base.so 'graph=1' cuda 'graph=1,q8t_oxs=1' 'one (B) vs two (A)'"
is "0|ratio B/A 1.0100|verdict: B slower|recorded: run 1|ab q.yaml --case N-a --a /x/base.so --a-options graph=1 --b $P/engines/libkestrel-cuda.so --b-options graph=1,q8t_oxs=1 --rounds 6 --db $T/res/ab.db --label one (B) vs two (A)|ab-cwd $P $P/engines" \
    "$RC|$(echo "$OUT" | tr '\n' '|' | sed 's/|$//')|$(head -2 "$STUB_LOG" | tr '\n' '|' | sed 's/|$//')" \
    "devcall_ab: ab from the pack with its engines, cuda the packed library, into OUT/ab.db; its last three lines"
: >"$STUB_LOG"
run_cmd env -C "$T/root" OUT="$T/res" DEVCALL_PACK=pack AB_RC=4 DEVCALL_AB_ROUNDS=2 DEVCALL_AB_FORCE=1 bash -c ". '$TOOL' >/dev/null && devcall_ab q.yaml N-a cuda '' cuda '' same"
is "4|--rounds 2 --force --db|0" "$RC|$(grep -o -- '--rounds [0-9]* [-a-z]* [-a-z]*' "$STUB_LOG")|$(grep -c -- '-options' "$STUB_LOG")" \
    "devcall_ab: ab's status is its status, DEVCALL_AB_ROUNDS, DEVCALL_AB_FORCE passes --force, empty options not passed"

sqlite3 "$T/res/r.db" "PRAGMA journal_mode=WAL; CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (7);" >/dev/null
dc "devcall_close '$T/res/r.db'"
is "0|7|no" "$RC|$(xz -dc "$T/res/r.db.xz" >"$T/r2.db" && sqlite3 "$T/r2.db" 'SELECT v FROM t')|$([ -e "$T/res/r.db" ] && echo yes || echo no)" \
    "devcall_close: the DB compressed with its last row, the plain file gone"
dc "devcall_close '$T/res/none.db'"
is "1|devcall: no $T/res/none.db" "$RC|$ERR" "devcall_close: a missing DB is said and fails"

# held DB: its last rows only in a non-empty -wal (the writer exited without closing)
held() {
    rm -f "$1" "$1-wal" "$1-shm"
    "$PYSQL" -c 'import sqlite3, sys, os
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA journal_mode=WAL")
c.execute("CREATE TABLE t (v INTEGER)")
c.execute("INSERT INTO t VALUES (9)")
c.commit()
os._exit(0)' "$1"
}
held "$T/res/h.db"
ok '[ -s "$T/res/h.db-wal" ]' "a DB whose last row is only in its -wal (the case below folds)"
dc "devcall_close '$T/res/h.db'"
is "0|9|no" "$RC|$(xz -dc "$T/res/h.db.xz" >"$T/h2.db" && sqlite3 "$T/h2.db" 'SELECT v FROM t')|$([ -e "$T/res/h.db-wal" ] && echo yes || echo no)" \
    "devcall_close: the row in the -wal is in the compressed DB"
mkdir -p "$T/onlyrm" "$T/withpy"
ln -sf "$(command -v rm)" "$T/onlyrm/rm"
ln -sf "$(command -v rm)" "$T/withpy/rm"
ln -sf "$PYSQL" "$T/withpy/python3"
SH=$(command -v sh)
held "$T/res/k.db"
run_cmd env PATH="$T/onlyrm" DB_FOLD_PYTHONS=python3 "$SH" "$top_srcdir/tools/db_fold.sh" "$T/res/k.db"
is "1|db_fold: $T/res/k.db: its write-ahead log is not folded in (no sqlite3 tool or python3 sqlite3 module?): kept|yes" \
    "$RC|$ERR|$([ -s "$T/res/k.db-wal" ] && echo yes || echo no)" "db_fold: with neither tool it fails, names the DB and keeps the -wal"
run_cmd env PATH="$T/withpy" DB_FOLD_PYTHONS=python3 "$SH" "$top_srcdir/tools/db_fold.sh" "$T/res/k.db"
is "0|9|no" "$RC|$(sqlite3 "$T/res/k.db" 'SELECT v FROM t')|$([ -e "$T/res/k.db-wal" ] && echo yes || echo no)" \
    "db_fold: without the sqlite3 tool (the GPU machine) python3 folds it in, the -wal gone"
dc "DEVCALL_T0=\$((\$(date +%s) - 7)); devcall_mark models ready"
like "$OUT" "^\[\+(7|8) s\] models ready$" "devcall_mark: the seconds since the tool was sourced, then the label"
run_cmd sh "$top_srcdir/tools/db_fold.sh" "$T/res/none.db"
is "1|db_fold: no $T/res/none.db" "$RC|$ERR" "db_fold: a missing DB is said and fails"
done_testing
