#!/bin/bash
# tools/device_tree.sh - keep what a device call sends within the run tool's 64 MiB.
#
# The run tool sends the tracked and untracked-not-ignored files of the working tree plus the carried paths, at
# most 64 MiB. The archived runs under results/ (results/cuda-check alone held ~85 MB at v44) are tracked, so by
# v44 the tree alone was past the limit and no call could start. A call needs none of them: they move out of the
# tree for the call and back after it (git has them all, so nothing can be lost).
#
#   tools/device_tree.sh out [KEEP...]   move every tracked file under results/cuda-check and results/perf-h200
#                                        (except those under a KEEP path, e.g. this session's dev-vNN folder) into
#                                        the stash; then print the size that would travel
#   tools/device_tree.sh back            move the stashed files back (none may exist in the tree), then remove the
#                                        stash; a file the stash lost is checked out again from git
#   tools/device_tree.sh size [CARRY...] the bytes a call would send: tracked files present, untracked files git
#                                        does not ignore, and the CARRY paths; "over" when past 64 MiB (exit 1)
#   tools/device_tree.sh txz             .carry/gpu-check (tools/gpu_check.sh --pack) as .carry/gc.txz (xz: about a
#                                        quarter of its size), for a call that carries [".carry/gc.txz"] and begins
#                                        with `tar -xJf .carry/gc.txz -C .carry &&`
#
# Environment: DEVICE_TREE_STASH (default /tmp/kestrel-device-stash). Exit 0 ok, 1 over the limit (size), 2 a usage
# or state error (one line, nothing moved). tests/tools-device-tree.sh runs it on a scratch repository.
set -u
cd "$(git rev-parse --show-toplevel 2>/dev/null)" || { echo "device_tree: not inside a git work tree" >&2; exit 2; }
STASH=${DEVICE_TREE_STASH:-/tmp/kestrel-device-stash}
LIMIT=$((64 * 1024 * 1024))
ARCHIVES="results/cuda-check results/perf-h200"
die() { echo "device_tree: $*" >&2; exit 2; }

# the bytes of the files named on stdin (NUL-separated) that exist
sum_bytes() { xargs -0 -r stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

tree_size() {
    local t u c=0 p
    t=$(git ls-files -z | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done | sum_bytes)
    u=$(git ls-files -z --others --exclude-standard | sum_bytes)
    for p in "$@"; do
        [ -e "$p" ] || die "carry path '$p' does not exist"
        c=$((c + $(find "$p" -type f -print0 | sum_bytes)))
    done
    echo $((t + u + c))
}

report_size() {
    local n
    n=$(tree_size "$@") || exit 2
    if [ "$n" -gt "$LIMIT" ]; then
        echo "device_tree: $((n / 1048576)) MiB would travel: over the 64 MiB limit"
        return 1
    fi
    echo "device_tree: $((n / 1048576)) MiB would travel (limit 64 MiB)"
}

case ${1:-} in
out)
    shift
    [ ! -e "$STASH" ] || die "the stash $STASH exists already (tools/device_tree.sh back first)"
    list=$(mktemp) || exit 2
    # shellcheck disable=SC2086
    git ls-files -z -- $ARCHIVES | while IFS= read -r -d '' f; do
        keep=0
        for k in "$@"; do case $f in "${k%/}"/* | "${k%/}") keep=1 ;; esac; done
        [ $keep -eq 1 ] || [ ! -f "$f" ] || printf '%s\0' "$f"
    done >"$list"
    n=$(tr -cd '\0' <"$list" | wc -c)
    [ "$n" -gt 0 ] || { rm -f "$list"; die "no archived file to move out (${ARCHIVES})"; }
    mkdir -p "$STASH" || die "cannot create $STASH"
    # cp then rm, so that a failed copy leaves the tree as it was
    if ! xargs -0 cp --parents -p -t "$STASH" <"$list"; then
        rm -rf "$STASH" "$list"
        die "copying into $STASH failed: nothing moved"
    fi
    xargs -0 rm -f <"$list"
    rm -f "$list"
    echo "device_tree: $n files moved to $STASH"
    report_size
    exit 0
    ;;
back)
    [ -d "$STASH" ] || die "no stash at $STASH (nothing was moved out)"
    root=$PWD
    clash=$(cd "$STASH" && find . -type f | while read -r f; do [ ! -e "$root/$f" ] || echo "${f#./}"; done | head -1) ||
        die "cannot read $STASH"
    [ -z "$clash" ] || die "$clash exists in the tree and in the stash: nothing moved back"
    (cd "$STASH" && find . -type f -print0 | xargs -0 -r cp --parents -p -t "$root") ||
        die "copying back from $STASH failed (the stash is kept)"
    rm -rf "$STASH"
    # anything the stash did not hold (a stash removed by hand, a reboot's /tmp) comes back from git
    missing=$(git ls-files -z --deleted -- $ARCHIVES | tr -cd '\0' | wc -c)
    if [ "$missing" -gt 0 ]; then
        git ls-files -z --deleted -- $ARCHIVES | xargs -0 git checkout -- || die "git checkout of $missing files failed"
        echo "device_tree: $missing files the stash lacked checked out from git"
    fi
    echo "device_tree: the archived results are back"
    exit 0
    ;;
size)
    shift
    report_size "$@"
    exit $?
    ;;
txz)
    [ -x .carry/gpu-check/bin/kestrel-eval ] || die "no pack in .carry/gpu-check (tools/gpu_check.sh --pack BUILD_DIR first)"
    tar -cf - -C .carry gpu-check | xz -T2 -6 >.carry/gc.txz.tmp && mv .carry/gc.txz.tmp .carry/gc.txz ||
        { rm -f .carry/gc.txz.tmp; die "packing .carry/gc.txz failed"; }
    echo "device_tree: .carry/gc.txz $(($(stat -c %s .carry/gc.txz) / 1048576)) MiB"
    exit 0
    ;;
*)
    echo "usage: tools/device_tree.sh out [KEEP...] | back | size [CARRY...] | txz" >&2
    exit 2
    ;;
esac
