#!/bin/sh
# cuda-ptxas-stack: no step kernel of cuda/kernels.cu may grow a stack frame (local memory) beyond
# the recorded ones. Why: in issue 6 v12 a 104-byte struct parameter the x-stationary SwiGLU indexed
# with a run-time index was copied to the stack by every thread (256 threads x 264 blocks x 104
# bytes = 7 MB of local stores per launch): +0.2 ms per 27B token, invisible in every correctness
# test, found by `ptxas -v` (cuda/PERF-NOTES.md v12). make check writes ptxas's resource report of
# the default build to cuda/kernels-ptxas.txt wherever nvcc is; no GPU needed.
# The checker is first run on a synthetic report so that it can fail.
. "$top_srcdir/tests/lib.sh"
REP=$top_builddir/cuda/kernels-ptxas.txt
[ -f "$REP" ] || skip_all "no cuda/kernels-ptxas.txt (make check writes it when configure found nvcc)"
plan 4

# Known frames (mangled-name substring, at most this many bytes), each with its reason:
#   delta_step_kernelILi128 - the register-resident delta rule at 255 registers spills 48 bytes
#                             (56 before v14 row 3 issued every load of the step at once and
#                             session 8 pinned its contraction, 64 until v30 read q and k from shared
#                             memory as float4; the default path until v27, now delta_trig=0: a known
#                             cost, not a license; the default delta_step_trig_kernel<3, 1> has no frame)
#   attn_prep_kernel, attention_short_prep_kernel, attention_short_cl_prep_kernel (attn_prep inside the
#   short attention, one block or a cluster per head), attention_kvc_kernel, attention_kvct_kernel and
#   attention_kvcx_kernel (their PREP forms: attn_prep inside the attention by kv head, options attn_kvc,
#   attn_kvc_tm, attn_kvc_sp; kvct at 8 q heads per kv
#   head 40 bytes: its tensor maps' addresses kept across the walk spill 8 at the 96 registers of a 17-warp
#   block; no model of ours has 8; their push forms (attn_kvc_push, attn_cl_push, v40) the same 32),
#   rope_neox_kernel - sincosf's large-argument reduction keeps a small array on
#                             the stack (32 bytes, no spills); only |angle| > ~1e5 radians reaches it
#   gdn_step_kernel         - the same delta rule with gdn_prep folded in (option gdn=fused): 64 bytes
#                             (56 before v30's float4 reads)
#   delta_step_pf_kernel    - the same delta rule after its state's L2 prefetch (option delta_pf): 48
#   delta_step_trig_kernel  - the same delta rule letting the next kernel launch later (option delta_trig):
#                             48 bytes (1: after the loads), 72 (2: after the columns)
ALLOW="delta_step_kernelILi128:48 delta_step_pf_kernel:48 delta_step_trig_kernelILi1:48 delta_step_trig_kernelILi2:72 gdn_step_kernel:64 attn_prep_kernel:32 attention_short_prep_kernel:32 attention_short_cl_prep_kernel:32 attention_kvc_kernel:32 attention_kvct_kernel:32 attention_kvct_kernelILi8ELb1:40 attention_kvcx_kernel:32 attention_short_cl_prep_push_kernel:32 attention_kvc_push_kernel:32 attention_kvct_push_kernel:32 attention_kvcx_push_kernel:32 rope_neox_kernel:32"

# check REPORT: one line "NAME: N bytes stack frame (allowed M)" per function over its allowance
check() {
    awk -v allow="$ALLOW" '
    BEGIN { n = split(allow, a, " "); for (i = 1; i <= n; i++) { split(a[i], p, ":"); pat[i] = p[1]; lim[i] = p[2] } }
    /Function properties for / { name = $NF; next }
    / bytes stack frame/ {
        bytes = $1 + 0
        if (name == "" || bytes == 0) { name = ""; next }
        m = 0
        for (i = 1; i <= n; i++) if (index(name, pat[i]) > 0) m = lim[i]
        if (bytes > m) printf "%s: %d bytes stack frame (allowed %d)\n", name, bytes, m
        name = ""
    }' "$1"
}

cat >"$T/bad.txt" <<'REP'
ptxas info    : Function properties for _Z10fine_kernelPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Function properties for _Z24matvec_swiglu_q8x_kernelILi5EEv6kc_matS0_PK8kc_q8blkPf5kc_pf
    104 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Function properties for _Z17delta_step_kernelILi128EEvPf
    72 bytes stack frame, 72 bytes spill stores, 72 bytes spill loads
ptxas info    : Function properties for _Z16attn_prep_kernelPKfPfS0_S0_S0_S1_S1_S1_iiiiffPKi
    32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
REP
is "_Z24matvec_swiglu_q8x_kernelILi5EEv6kc_matS0_PK8kc_q8blkPf5kc_pf: 104 bytes stack frame (allowed 0)
_Z17delta_step_kernelILi128EEvPf: 72 bytes stack frame (allowed 48)" "$(check "$T/bad.txt")" \
  "the checker reports an unlisted frame and a listed one grown past its allowance (synthetic report)"
nf=$(grep -c 'Function properties for ' "$REP")
ok "[ $nf -ge 80 ]" "cuda/kernels-ptxas.txt has the step kernels' resources ($nf functions)"
bad=$(check "$REP")
is "" "$bad" "no function of cuda/kernels.cu has a stack frame beyond the recorded ones"
ok "grep -q 'matvec_swiglu_q8x_kernel' '$REP'" "the x-stationary SwiGLU (the v12 regression) is in the report"
