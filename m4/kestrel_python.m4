# KESTREL_CHECK_PYTHON_NUMPY
# Finds a python3 that can import numpy: $PYTHON if set, then /usr/bin/python3
# (Debian's python3-numpy belongs to it), then python3 on PATH.
# Sets PYTHON (empty when none); the tests that need it skip with a reason.
AC_DEFUN([KESTREL_CHECK_PYTHON_NUMPY], [
  AC_ARG_VAR([PYTHON], [python3 interpreter with numpy, for tools/ and tests])
  AC_MSG_CHECKING([for a python3 with numpy])
  kestrel_py=""
  for kestrel_cand in "$PYTHON" /usr/bin/python3 python3; do
    test -n "$kestrel_cand" || continue
    if "$kestrel_cand" -c 'import numpy' >/dev/null 2>&1; then kestrel_py=$kestrel_cand; break; fi
  done
  PYTHON=$kestrel_py
  AS_IF([test -n "$PYTHON"],
    [kestrel_python_summary="$PYTHON"; AC_MSG_RESULT([$PYTHON])],
    [kestrel_python_summary="no (tests needing numpy are skipped)"; AC_MSG_RESULT([no])])
  AC_SUBST([PYTHON])
])
