#!/bin/sh
# cuda-engine: properties of libkestrel-cuda.so that hold without a GPU:
# it exports exactly kestrel_engine_entry, links the CUDA runtime statically,
# and records its build flags.
. "$top_srcdir/tests/lib.sh"
lib=$top_builddir/cuda/libkestrel-cuda.so
[ -f "$lib" ] || skip_all "CUDA engine not configured (no cuda/libkestrel-cuda.so)"
command -v nm >/dev/null 2>&1 || skip_all "no nm"
plan 4
exports=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort | tr '\n' ' ')
is "kestrel_engine_entry " "$exports" "cuda-engine: exports exactly kestrel_engine_entry"
ok "! ldd '$lib' | grep -q libcudart" "cuda-engine: CUDA runtime linked statically (no libcudart in ldd)"
ok "grep -aq 'nvcc -arch=' '$lib'" "cuda-engine: build flags recorded in the library"
ok "[ -L '$top_builddir/engines/libkestrel-cuda.so' ]" "cuda-engine: engines/libkestrel-cuda.so links to it"
done_testing
