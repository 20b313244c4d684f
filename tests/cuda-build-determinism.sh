#!/bin/sh
# cuda-build-determinism: the kernels compiled twice from one source are the same machine code. Why:
# NVVM vectorised the unrolled shared-memory loads of the delta rule differently from one
# compilation to the next, so two builds of one commit gave two libraries and the engine's SHA-256
# (what every result names) did not name its source (cuda/PERF-NOTES.md v30). make check compiles
# cuda/kernels.cu twice: into the library's object cuda/kernels.o, and to cuda/kernels.ptx, assembled
# into cuda/kernels.cubin for ptxas's report; tools/cubin_diff.py compares their kernels. A kernel whose
# code generation is not deterministic fails here on the runs where the two compilations differ (every
# pair of compilations of the old delta rule tried differed: three PTX texts, two objects). No GPU needed.
# The checker is first run on a cubin with one kernel's code changed, so that it can fail.
# Second, the PTX: the library embeds it beside the machine code, and NVVM's output has depended on the source
# file's PATH (v42: the same source at /work/main and at /tmp/ndet/src gave two texts of
# delta_step_trig_kernel<2, 0>, the same machine code, two library SHA-256s). make check also compiles
# cuda/kernels.cu's PTX from copies at two other paths (cuda/kernels-moved-a.ptx, -b.ptx): the three texts must be
# equal. A path-sensitive source is caught on the paths whose hash splits it (the old delta rule: one in two here).
. "$top_srcdir/tests/lib.sh"
need_python
OBJ=$top_builddir/cuda/kernels.o
CUBIN=$top_builddir/cuda/kernels.cubin
[ -f "$OBJ" ] && [ -f "$CUBIN" ] || skip_all "no cuda/kernels.o and cuda/kernels.cubin (make check builds them when configure found nvcc)"
plan 5
DIFF="$PYTHON $top_srcdir/tools/cubin_diff.py"

# a copy of the cubin with one byte of its first kernel's code flipped: named, exit 1
"$PYTHON" - "$CUBIN" "$T/bad.cubin" <<'EOF' >"$T/flipped"
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
shoff = struct.unpack_from('<Q', d, 0x28)[0]
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3A)
heads = [struct.unpack_from('<IIQQQQIIQQ', d, shoff + k * shentsize) for k in range(shnum)]
names_at = heads[shstrndx][4]
for h in heads:
    name = bytes(d[names_at + h[0]:d.index(b'\0', names_at + h[0])]).decode()
    if name.startswith('.text.') and h[5] > 16:
        d[h[4] + 8] ^= 0x01
        open(sys.argv[2], 'wb').write(d)
        print(name[len('.text.'):])
        break
EOF
run_cmd $DIFF "$CUBIN" "$T/bad.cubin"
is "1|differs $(cat "$T/flipped")" "$RC|$(printf '%s\n' "$OUT" | head -1)" \
  "the checker names a kernel whose code differs and exits 1 (synthetic cubin)"
run_cmd $DIFF "$CUBIN" "$T/nothing"
like "$RC|$ERR" "^2\|cubin_diff: .*nothing" "the checker refuses a file it cannot read: exit 2, named"

run_cmd $DIFF "$OBJ" "$OBJ"
like "$RC|$OUT" "^0\|summary: [0-9]+ kernels, [0-9]+ same, 0 differ" "the library's object against itself: every kernel the same"
run_cmd $DIFF "$OBJ" "$CUBIN"
is 0 "$RC" "cuda/kernels.o and cuda/kernels.cubin (two compilations of cuda/kernels.cu) hold the same code for every kernel ($(printf '%s\n' "$OUT" | tail -1))"
[ "$RC" -eq 0 ] || printf '%s\n' "$OUT" | grep -v '^summary' | head -10 | sed 's/^/#   /'
PTX=$top_builddir/cuda/kernels.ptx
bad=""
for m in "$top_builddir/cuda/kernels-moved-a.ptx" "$top_builddir/cuda/kernels-moved-b.ptx"; do
    cmp -s "$PTX" "$m" || bad="$bad $(basename "$m")"
done
is "" "$bad" "cuda/kernels.ptx equals the PTX of the same sources compiled at two other paths"
[ -z "$bad" ] || for m in $bad; do "$top_srcdir/tools/ptx_diff.sh" "$PTX" "$top_builddir/cuda/$m" | grep -v '^same' | head -5 | sed 's/^/#   /'; done
done_testing
