# tests/lib.sh - TAP helpers for the shell tests (sourced).
#   plan N; ok COND "desc"; is EXPECTED ACTUAL "desc"; expect_file_eq expect actual "desc";
#   run_cmd VAR_PREFIX cmd... (captures rc, stdout, stderr); skip_all "reason"; done_testing;
#   py_checks SCRIPT ARGS... (a python script's tab-separated checks as TAP)
# Each test runs in its own scratch directory $T (removed on success).
set -u
: "${top_srcdir:?run under make check}" "${top_builddir:?run under make check}"
KESTREL_EVAL=${KESTREL_EVAL:-$top_builddir/kestrel-eval}
FIX=$top_srcdir/tests/fixtures
T=$(mktemp -d "${TMPDIR:-/tmp}/kestrel-test.XXXXXX")
_tap_n=0
_tap_fail=0
trap '[ $_tap_fail -eq 0 ] && rm -rf "$T"' EXIT

plan() { echo "1..$1"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
_tap_result() { # ok? desc
  _tap_n=$((_tap_n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $_tap_n - $2"; else echo "not ok $_tap_n - $2"; _tap_fail=1; fi
}
ok() { # ok "shell condition" "desc"
  if eval "$1"; then _tap_result 0 "$2"; else _tap_result 1 "$2"; echo "#   condition failed: $1"; fi
}
is() { # is EXPECTED ACTUAL desc
  if [ "$1" = "$2" ]; then _tap_result 0 "$3"; else
    _tap_result 1 "$3"; printf '#   expected: %s\n#        got: %s\n' "$1" "$2"; fi
}
like() { # like "text" "grep -E pattern" desc
  if printf '%s\n' "$1" | grep -Eq -- "$2"; then _tap_result 0 "$3"; else
    _tap_result 1 "$3"; printf '#   pattern: %s\n#   text: %s\n' "$2" "$1" | head -20; fi
}
expect_file_eq() { # expect actual desc
  if diff -u "$1" "$2" >"$T/diff.out" 2>&1; then _tap_result 0 "$3"; else
    _tap_result 1 "$3"; sed 's/^/#   /' "$T/diff.out" | head -40; fi
}
# run_cmd cmd args...  -> sets RC, OUT (stdout), ERR (stderr)
run_cmd() {
  "$@" >"$T/out" 2>"$T/err"; RC=$?
  OUT=$(cat "$T/out"); ERR=$(cat "$T/err")
}
done_testing() { echo "# $_tap_n tests"; [ $_tap_fail -eq 0 ]; }
# py_checks SCRIPT ARGS...: run a python check script that prints one "desc<TAB>expected<TAB>actual"
# line per check; plans one TAP point per line plus one for the script's exit status
py_checks() {
  "$PYTHON" "$@" >"$T/results" 2>"$T/py.err"
  _py_rc=$?
  plan $(($(wc -l <"$T/results") + 1))
  is 0 "$_py_rc" "$(basename "$1") ran (stderr: $(head -c 300 "$T/py.err"))"
  _py_tab=$(printf '\t')
  while IFS="$_py_tab" read -r desc expected actual; do
    is "$expected" "$actual" "$desc"
  done <"$T/results"
}
need_python() { [ -n "${PYTHON:-}" ] || skip_all "no python3 with numpy (configure found none)"; }
