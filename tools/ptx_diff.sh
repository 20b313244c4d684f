#!/bin/sh
# tools/ptx_diff.sh - which kernels of two PTX files differ, register, label and local-depot numbering
# aside, and the names of function-static shared variables (`__shared__` inside a function: NVVM
# declares them in the entry when the kernel holds them, at module scope when a device function it
# calls does, and names them after that function; their uses are compared, their declarations not). Why: an option's code can move the default path's kernels though the option is off (issue 6
# v19: a run-time dealing option left the default step 1-2% slower); docs/methodology.md asks that a
# kept option leave the default kernels byte-identical, and this says which are not.
#
# The `// callseq N` comments around a call are numbered over the whole module, so a kernel added before
# another renumbers them (issue 6 v40); they are compared without their numbers.
#
# usage: tools/ptx_diff.sh [--only REGEX] OLD.ptx NEW.ptx
#   OLD/NEW: `nvcc -ptx` output, e.g. `make cuda/kernels.ptx` of two trees
#   --only REGEX: judge only the entries whose (mangled) name matches the extended regex
# Prints, sorted by name, one line per entry: "same NAME", "differs NAME (old N lines, new M lines)",
# "only-old NAME", "only-new NAME"; then "summary: S same, D differ, O only-old, W only-new".
# Exit 0 when every judged entry is in both files and the same, 1 otherwise, 2 on bad usage or input.
only=
if [ "${1:-}" = "--only" ]; then
  [ $# -ge 2 ] || { echo "ptx_diff: --only needs a regex" >&2; exit 2; }
  only=$2
  shift 2
fi
[ $# -eq 2 ] || { echo "usage: tools/ptx_diff.sh [--only REGEX] OLD.ptx NEW.ptx" >&2; exit 2; }
for f in "$1" "$2"; do
  [ -r "$f" ] || { echo "ptx_diff: $f: cannot read" >&2; exit 2; }
  grep -q '\.entry ' "$f" || { echo "ptx_diff: $f: no .entry in it (not PTX?)" >&2; exit 2; }
done
LC_ALL=C awk -v only="$only" '
  FNR == 1 { side = (side == "" ? "a" : "b"); cur = "" }
  /^[ \t]*\/\/ \.globl/ { cur = ""; next }
  /^\.(visible|weak) \.entry / {
    cur = $0
    sub(/^\.(visible|weak) \.entry /, "", cur)
    sub(/\(.*/, "", cur)
    names[cur] = 1
    has[side, cur] = 1
    next
  }
  cur != "" && (/^[ \t]*$/ || /\/\/ demoted variable/ || /^[ \t]*\.shared .*_ZZ/) { next } # blank lines too
  cur != "" {
    line = $0
    gsub(/_ZZ[A-Za-z0-9_]*E[0-9]+/, "_ZZ<fn>E", line) # function-static variables: the function'"'"'s name
    gsub(/%[a-zA-Z]+[0-9]+/, "%R", line)      # registers: %r12, %rd3, %f1, %p2, %rs1
    gsub(/<[0-9]+>/, "<N>", line)             # register counts in the declarations
    gsub(/\$L__BB[0-9_]+/, "$L", line)        # labels
    gsub(/__local_depot[0-9]+/, "__local_depot", line)
    gsub(/callseq [0-9]+/, "callseq N", line) # call-sequence comments, numbered over the module
    text[side, cur] = text[side, cur] line "\n"
    lines[side, cur]++
  }
  END {
    n = 0
    for (k in names) list[++n] = k
    for (i = 2; i <= n; i++) { v = list[i]; for (j = i - 1; j >= 1 && list[j] > v; j--) list[j + 1] = list[j]; list[j + 1] = v }
    s = d = oa = ob = bad = 0
    for (i = 1; i <= n; i++) {
      k = list[i]
      judged = (only == "" || k ~ only)
      if (!has["b", k]) { print "only-old " k; oa++; if (judged) bad = 1; continue }
      if (!has["a", k]) { print "only-new " k; ob++; if (judged) bad = 1; continue }
      if (text["a", k] == text["b", k]) { print "same " k; s++; continue }
      printf "differs %s (old %d lines, new %d lines)\n", k, lines["a", k], lines["b", k]
      d++
      if (judged) bad = 1
    }
    printf "summary: %d same, %d differ, %d only-old, %d only-new\n", s, d, oa, ob
    exit bad
  }' "$1" "$2"
