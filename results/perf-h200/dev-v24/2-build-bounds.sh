#!/bin/bash
# v24: the timing-only libraries of call 2 (bounds of the step, not engines): the shipped build's kernels
# compiled with -DKC_Q8T_SKIPC=N (cuda/gemv_q8t.cuh: bench_gemv's phases left out of every TMA GEMV of the
# step: 1 no weight bulk copies (the producer arrives without bytes: the dots read whatever the ring
# holds), 2 no dots (the weights stream, y is not written), 3 both), linked as the Makefile links
# libkestrel-cuda.so. Their outputs are garbage; only their ms/token mean something.
# Then the trace library (profile=trace) of each (TRACE_SKIPS, default 1 2 3; call 2 used skip 1's, call 3 all three).
# SKIPS, TRACE_SKIPS: the variants to build (e.g. SKIPS=" " TRACE_SKIPS="2 3" for the traces alone).
# usage: 2-build-bounds.sh BUILD_DIR OUTDIR   (BUILD_DIR: a configured and built tree, e.g. /tmp/build-lead)
set -eu
B=$1 O=$2 S=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$O"
for n in ${SKIPS:-1 2 3}; do
  /usr/local/cuda/bin/nvcc -arch=sm_90 -std=c++17 -O2 -Xcompiler -fPIC -Xcompiler -fvisibility=hidden -I"$S/include" \
    -I"$S/src/lib" -I"$B" -D_GNU_SOURCE -DKC_Q8T_SKIPC=$n -DKC_BUILD_FLAGS='"nvcc -arch=sm_90 -O2 -fmad=true -DKC_Q8T_SKIPC"' \
    -c -o "$O/kernels-skip$n.o" "$S/cuda/kernels.cu"
  /usr/local/cuda/bin/nvcc -arch=sm_90 -shared -cudart static -o "$O/skip$n.so" "$O/kernels-skip$n.o" "$B/cuda/model.o" \
    "$B/cuda/cuda_engine.o" "$B/.libs/libkestrel-common.a" -lzstd -lm -Xlinker --version-script="$S/cuda/exports.map"
done
# and their trace libraries (profile=trace, -DKC_TRACE): each kernel's segment of the step in each bound
for n in ${TRACE_SKIPS:-1 2 3}; do
  /usr/local/cuda/bin/nvcc -arch=sm_90 -std=c++17 -O2 -Xcompiler -fPIC -Xcompiler -fvisibility=hidden -I"$S/include" \
    -I"$S/src/lib" -I"$B" -D_GNU_SOURCE -DKC_TRACE -DKC_Q8T_SKIPC=$n \
    -DKC_BUILD_FLAGS='"nvcc -arch=sm_90 -O2 -fmad=true -DKC_TRACE -DKC_Q8T_SKIPC"' -c -o "$O/kernels-trace-skip$n.o" "$S/cuda/kernels.cu"
  /usr/local/cuda/bin/nvcc -arch=sm_90 -shared -cudart static -o "$O/trace-skip$n.so" "$O/kernels-trace-skip$n.o" "$B/cuda/model.o" \
    "$B/cuda/cuda_engine.o" "$B/.libs/libkestrel-common.a" -lzstd -lm -Xlinker --version-script="$S/cuda/exports.map"
done
