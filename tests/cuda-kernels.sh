#!/bin/sh
# cuda-kernels: the CUDA kernel/engine tests (cuda/test_kernels prints TAP itself).
# Skips when the CUDA engine was not configured; test_kernels skips when no GPU is visible.
. "$top_srcdir/tests/lib.sh"
prog=$top_builddir/cuda/test_kernels
[ -x "$prog" ] || skip_all "CUDA engine not configured (no cuda/test_kernels)"
"$prog" "$top_srcdir/tests/fixtures"
exit $?
