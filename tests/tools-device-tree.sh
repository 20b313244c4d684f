#!/bin/sh
# tools/device_tree.sh on a scratch git repository: `out` moves the tracked archives under results/cuda-check and
# results/perf-h200 (not the KEEP folder, not untracked files) into the stash and the size that would travel
# drops by their bytes; `back` restores them byte for byte and removes the stash; a second `out`, a `back` with
# no stash or with a clashing file exit 2 with one line and move nothing; a stash that lost a file is made whole
# from git; `txz` packs .carry/gpu-check (and refuses without a pack); `size` counts tracked, untracked-not-ignored and carried files and says "over" past 64 MiB (exit 1).
. "$top_srcdir/tests/lib.sh"
command -v git >/dev/null 2>&1 || skip_all "no git"
plan 25
TOOL=$top_srcdir/tools/device_tree.sh
R=$T/repo
export DEVICE_TREE_STASH=$T/stash
dt() { (cd "$R" && run_cmd bash "$TOOL" "$@"; echo "$RC" >"$T/rc"); RC=$(cat "$T/rc"); OUT=$(cat "$T/out"); ERR=$(cat "$T/err"); }
mb() { echo "$1" | sed -n 's/.* \([0-9]*\) MiB would travel.*/\1/p'; }

mkdir -p "$R/results/cuda-check" "$R/results/perf-h200/dev-v9" "$R/src"
(cd "$R" && git init -q . && git config user.email t@t && git config user.name t)
head -c 3145728 /dev/urandom >"$R/results/cuda-check/gpu-a.db.xz"
head -c 2097152 /dev/urandom >"$R/results/perf-h200/perf-a.db.xz"
echo "call" >"$R/results/perf-h200/dev-v9/1-call.sh"
echo "code" >"$R/src/main.c"
echo "ignored/" >"$R/.gitignore"
(cd "$R" && git add -A && git commit -q -m init)
echo "new" >"$R/results/perf-h200/dev-v9/2-log.txt" # untracked: stays
mkdir -p "$R/ignored" && head -c 1048576 /dev/urandom >"$R/ignored/big"
sum0=$(cd "$R" && sha256sum results/cuda-check/gpu-a.db.xz results/perf-h200/perf-a.db.xz)

dt size
is 0 "$RC" "size: exit 0 under the limit"
is 5 "$(mb "$OUT")" "size: tracked + untracked-not-ignored files, 5 MiB (the ignored MiB not counted)"
dt size ignored
is 6 "$(mb "$OUT")" "size: a carried path counts"
dt size nothere
is 2 "$RC" "size: a carry path that does not exist: exit 2"

dt out results/perf-h200/dev-v9
is 0 "$RC" "out: exit 0 ($ERR)"
like "$OUT" "2 files moved" "out: the two archives moved"
is 0 "$(mb "$(echo "$OUT" | tail -1)")" "out: the size that would travel drops by their bytes"
ok "[ ! -e '$R/results/cuda-check/gpu-a.db.xz' ] && [ ! -e '$R/results/perf-h200/perf-a.db.xz' ]" "out: the archives left the tree"
ok "[ -f '$R/results/perf-h200/dev-v9/1-call.sh' ] && [ -f '$R/results/perf-h200/dev-v9/2-log.txt' ]" "out: the KEEP folder and untracked files stay"
ok "[ -f '$T/stash/results/cuda-check/gpu-a.db.xz' ]" "out: the stash keeps the paths"

dt out
is 2 "$RC" "out again: exit 2"
like "$ERR" "exists already" "out again: names the stash"

echo "clash" >"$R/results/cuda-check/gpu-a.db.xz"
dt back
is 2 "$RC" "back over a file in the tree: exit 2"
like "$ERR" "results/cuda-check/gpu-a.db.xz exists" "back over a file: names it"
rm "$R/results/cuda-check/gpu-a.db.xz"

dt back
is 0 "$RC" "back: exit 0 ($ERR)"
is "$sum0" "$(cd "$R" && sha256sum results/cuda-check/gpu-a.db.xz results/perf-h200/perf-a.db.xz)" "back: the archives byte for byte"
ok "[ ! -e '$T/stash' ]" "back: the stash removed"

dt back
is 2 "$RC" "back with no stash: exit 2"

dt out
rm "$T/stash/results/perf-h200/perf-a.db.xz"
dt back
is 0 "$RC" "back from a stash that lost a file: exit 0 ($ERR)"
is "$sum0" "$(cd "$R" && sha256sum results/cuda-check/gpu-a.db.xz results/perf-h200/perf-a.db.xz)" "back: the lost file checked out from git"

dt txz
is 2 "$RC" "txz without a pack: exit 2"
mkdir -p "$R/.carry/gpu-check/bin" && printf '#!/bin/sh\n' >"$R/.carry/gpu-check/bin/kestrel-eval" &&
    chmod +x "$R/.carry/gpu-check/bin/kestrel-eval" &&
    printf 'ignored/\n.carry/\n' >"$R/.gitignore"
dt txz
is 0 "$RC" "txz: exit 0 ($ERR)"
is "gpu-check/bin/kestrel-eval" "$(tar -tJf "$R/.carry/gc.txz" 2>/dev/null | grep kestrel-eval)" "txz: the pack in .carry/gc.txz"

head -c 67108864 /dev/zero >"$R/results/perf-h200/dev-v9/3-huge.bin"
dt size
is 1 "$RC" "size past 64 MiB: exit 1"
like "$OUT" "over the 64 MiB limit" "size past 64 MiB: says so"
done_testing
