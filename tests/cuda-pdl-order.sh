#!/bin/sh
# cuda-pdl-order: the PDL rule in the PTX of cuda/kernels.cu (docs/cuda-engine.md "PDL"). Every
# kernel the decode step launches through kc_launch — all but those kernels.cu launches with
# <<< >>> — must execute griddepcontrol.wait (kc_pdl_begin), and no global-memory instruction
# (ld/st/atom/red .global) may come before its first wait: under programmatic dependent launch
# the kernel is resident while its predecessor still writes. This guards the source-level half of
# the rule wherever nvcc is (CI has no GPU); how ptxas schedules read-only loads (the hazard found
# in issue 6 v11) only a GPU run shows: tools/gpu_check.sh's 2B-wide bit-for-bit step.
# One exception: the x-stationary q8 GEMVs (option gemv_early), the xs GEMV (q8wide=xs) and the
# fused FFN (ffn=fused) and the ring FFN (ffn=ring), rmsnorm8_q8 (its norm weights), gdn_prep (its beta/alpha rows and conv weights), attn_prep and its forms folded into the short attention (attention_short_prep, attention_short_cl_prep, and its push form) and into the attention by kv head (attention_kvc, attention_kvct and attention_kvcx, and their push forms: their q/k norm weights), the delta rule (its gated norm's
# weight; also its delta_pf form, which prefetches its state into L2 first, and its delta_trig form) and the TMA
# GEMVs (q8gemv=tma, and its x-broadcast down projection q8t_wu=2: bulk copies global -> shared of their
# weight rings) — EARLY below — load WEIGHTS
# before the wait; weights never change during a run, and they are read through the read-only path or
# an asynchronous copy engine, so in those kernels ld.global.nc and cp.async (bulk or not, global ->
# shared) may come first — any other access may not (their x, the predecessor's output, is read by
# ld.global.ca after the wait). An asynchronous copy into shared memory in any other kernel counts as a
# global access (an L2 prefetch, cp.async.bulk.prefetch, reads nothing into the kernel and is not counted).
# The checker is first run on three synthetic PTX texts, one with each violation, so it can fail.
. "$top_srcdir/tests/lib.sh"
PTX=$top_builddir/cuda/kernels.ptx
[ -f "$PTX" ] || skip_all "no cuda/kernels.ptx (make check builds it when configure found nvcc)"
plan 6

# Kernels launched with <<< >>> (no PDL attribute): exempt.
EXEMPT=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\)<<<.*/\1/p' "$top_srcdir/cuda/kernels.cu" | sort -u | tr '\n' ' ')

EARLY="matvec_q8x_kernel matvec_swiglu_q8x_kernel matvec_q8xs_kernel ffn_q8_kernel ffn_ring_kernel rmsnorm8_q8_kernel rmsnorm8_q8_lean_kernel rmsnorm8_q8_split_kernel gdn_prep_kernel attn_prep_kernel attention_short_prep_kernel attention_short_cl_prep_kernel attention_kvc_kernel attention_kvct_kernel attention_kvcx_kernel attention_short_cl_prep_push_kernel attention_kvc_push_kernel attention_kvct_push_kernel attention_kvcx_push_kernel matvec_q8t_kernel matvec_q8t_bc_kernel matvec_swiglu_q8t_kernel delta_step_kernel delta_step_pf_kernel delta_step_trig_kernel"

# check PTX: one line per offending kernel ("name: no griddepcontrol.wait" or "name: N global
# accesses before griddepcontrol.wait"); exempt names are matched against the mangled entry name.
check() {
    awk -v exempt="$EXEMPT" -v early="$EARLY" '
    function flush() {
        if (name == "") return
        ex = 0
        for (i in ex_names) if (index(name, ex_names[i]) > 0) ex = 1
        if (ex) return
        if (!waits) printf "%s: no griddepcontrol.wait\n", name
        else if (pre) printf "%s: %d global accesses before griddepcontrol.wait\n", name, pre
    }
    BEGIN { n = split(exempt, ex_names, " "); ne = split(early, early_names, " ") }
    /\.entry / { flush(); match($0, /\.entry [A-Za-z0-9_$]+/); name = substr($0, RSTART + 7, RLENGTH - 7);
                 waits = 0; pre = 0; weights_first = 0
                 for (i = 1; i <= ne; i++) if (index(name, early_names[i]) > 0) weights_first = 1
                 next }
    /griddepcontrol\.wait/ { waits++; next }
    /(ld|st|atom|red)\.global|cp\.async\.(bulk|ca|cg)\.shared[^ \t]*\.global/ {
        if (!waits && !(weights_first && /ld\.global\.nc|cp\.async\.(bulk|ca|cg)\.shared[^ \t]*\.global/)) pre++ }
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

cat >"$T/bad3.ptx" <<'PTX'
.visible .entry _Z17matvec_q8x_kernelILi5EEv6q8_jobPK8kc_q8blk(
{
	ld.global.nc.v4.u32 	{%r1, %r2, %r3, %r4}, [%rd1];
	ld.global.ca.v4.u32 	{%r5, %r6, %r7, %r8}, [%rd2];
	griddepcontrol.wait;
}
.visible .entry _Z10gdn_kernelPf(
{
	ld.global.nc.f32 	%f1, [%rd1];
	griddepcontrol.wait;
}
.visible .entry _Z17matvec_q8t_kernelILi5ELi0EEv6q8_jobPK8kc_q8blki(
{
	cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], %r2, [%r3];
	griddepcontrol.wait;
}
.visible .entry _Z9bulk_kernelPf(
{
	cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], %r2, [%r3];
	griddepcontrol.wait;
}
.visible .entry _Z20delta_step_pf_kernelPf(
{
	cp.async.cg.shared.global [%r1], [%rd1], 16;
	griddepcontrol.wait;
}
.visible .entry _Z10cpa_kernelPf(
{
	cp.async.cg.shared.global [%r1], [%rd1], 16;
	griddepcontrol.wait;
}
PTX
is "_Z17matvec_q8x_kernelILi5EEv6q8_jobPK8kc_q8blk: 1 global accesses before griddepcontrol.wait
_Z10gdn_kernelPf: 1 global accesses before griddepcontrol.wait
_Z9bulk_kernelPf: 1 global accesses before griddepcontrol.wait
_Z10cpa_kernelPf: 1 global accesses before griddepcontrol.wait" "$(check "$T/bad3.ptx")" \
  "weights-first kernels may read through ld.global.nc or an async copy before the wait, nothing else; other kernels not even that (synthetic PTX)"
like "$EXEMPT" "repack_q4sb_kernel" "the <<< >>> launches of kernels.cu are found ($EXEMPT)"
NK=$(grep -c '\.entry ' "$PTX")
ok "[ $NK -ge 40 ]" "cuda/kernels.ptx has the step kernels ($NK entries)"
BAD=$(check "$PTX")
is "" "$BAD" "every kc_launch kernel of kernels.cu waits before touching global memory"
done_testing
