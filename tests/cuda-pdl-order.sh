#!/bin/sh
# cuda-pdl-order: the PDL rule in the PTX of cuda/kernels.cu (docs/cuda-engine.md "PDL"). Every
# kernel the decode step launches through kc_launch — all but those kernels.cu launches with
# <<< >>> — must execute griddepcontrol.wait (kc_pdl_begin), and no global-memory instruction
# (ld/st/atom/red .global) may come before its first wait: under programmatic dependent launch
# the kernel is resident while its predecessor still writes. This guards the source-level half of
# the rule wherever nvcc is (CI has no GPU); how ptxas schedules read-only loads (the hazard found
# in issue 6 v11) only a GPU run shows: tools/gpu_check.sh's 2B-wide bit-for-bit step.
# The checker is first run on two synthetic PTX texts, one with each violation, so it can fail.
. "$top_srcdir/tests/lib.sh"
PTX=$top_builddir/cuda/kernels.ptx
[ -f "$PTX" ] || skip_all "no cuda/kernels.ptx (make check builds it when configure found nvcc)"
plan 5

# Kernels launched with <<< >>> (no PDL attribute): exempt.
EXEMPT=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\)<<<.*/\1/p' "$top_srcdir/cuda/kernels.cu" | sort -u | tr '\n' ' ')

# check PTX: one line per offending kernel ("name: no griddepcontrol.wait" or "name: N global
# accesses before griddepcontrol.wait"); exempt names are matched against the mangled entry name.
check() {
    awk -v exempt="$EXEMPT" '
    function flush() {
        if (name == "") return
        ex = 0
        for (i in ex_names) if (index(name, ex_names[i]) > 0) ex = 1
        if (ex) return
        if (!waits) printf "%s: no griddepcontrol.wait\n", name
        else if (pre) printf "%s: %d global accesses before griddepcontrol.wait\n", name, pre
    }
    BEGIN { n = split(exempt, ex_names, " ") }
    /\.entry / { flush(); match($0, /\.entry [A-Za-z0-9_$]+/); name = substr($0, RSTART + 7, RLENGTH - 7);
                 waits = 0; pre = 0; next }
    /griddepcontrol\.wait/ { waits++; next }
    /(ld|st|atom|red)\.global/ { if (!waits) pre++ }
    END { flush() }' "$1"
}

cat >"$T/bad1.ptx" <<'PTX'
.visible .entry _Z10fine_kernelPf(
{
	griddepcontrol.launch_dependents;
	griddepcontrol.wait;
	ld.global.f32 	%f1, [%rd1];
}
.visible .entry _Z11early_kernelPf(
{
	ld.global.nc.f32 	%f1, [%rd1];
	griddepcontrol.wait;
	st.global.f32 	[%rd1], %f1;
}
PTX
is "_Z11early_kernelPf: 1 global accesses before griddepcontrol.wait" "$(check "$T/bad1.ptx")" \
  "the checker reports a load before the wait (synthetic PTX)"
cat >"$T/bad2.ptx" <<'PTX'
.visible .entry _Z9no_waitPf(
{
	ld.global.f32 	%f1, [%rd1];
}
.visible .entry _Z18repack_q4sb_kernelPKhPhmi(
{
	ld.global.nc.f32 	%f1, [%rd1];
}
PTX
is "_Z9no_waitPf: no griddepcontrol.wait" "$(check "$T/bad2.ptx")" \
  "the checker reports a kernel without the wait, and exempts a <<< >>> kernel (synthetic PTX)"

like "$EXEMPT" "repack_q4sb_kernel" "the <<< >>> launches of kernels.cu are found ($EXEMPT)"
NK=$(grep -c '\.entry ' "$PTX")
ok "[ $NK -ge 40 ]" "cuda/kernels.ptx has the step kernels ($NK entries)"
BAD=$(check "$PTX")
is "" "$BAD" "every kc_launch kernel of kernels.cu waits before touching global memory"
done_testing
