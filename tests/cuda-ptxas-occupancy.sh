#!/bin/sh
# cuda-ptxas-occupancy: the q8 GEMVs of the decode step keep their resident blocks per SM. Their
# grids are persistent (one wave of occupancy-sized blocks, kernels.cu q8x_grid) and HBM bandwidth
# needs bytes in flight, so a register or two more can halve a kernel's residency without any test
# failing: the x-stationary SwiGLU on 5120 columns (the 27B's gate/up, 64 launches per token) sits
# at exactly 128 registers, the last count that fits 2 blocks of 256 threads in 65536 registers.
# Blocks per SM follow from ptxas's register count (cuda/kernels-ptxas.txt, written by make check
# wherever nvcc is; no GPU needed): floor(65536 / (ceil(regs / 8) * 8 * 256)), at most 8 (64 warps).
# The checker is first run on a synthetic report so that it can fail.
. "$top_srcdir/tests/lib.sh"
REP=$top_builddir/cuda/kernels-ptxas.txt
[ -f "$REP" ] || skip_all "no cuda/kernels-ptxas.txt (make check writes it when configure found nvcc)"
plan 2

# (mangled-name substring : blocks per SM at least) for the GEMVs of the 27B and 9B steps:
#   matvec_q8x<4,5,6> (qkv+z, q+k+v, ssm_out / wo at 4096..6144 columns), swiglu_q8x<4,5> (gate/up),
#   the streaming matvec_q8<1,1> (down) and <2,2> (lm_head); the counts are those of v12 (engine ff485f4f)
NEED="matvec_q8x_kernelILi4E:2 matvec_q8x_kernelILi5E:2 matvec_q8x_kernelILi6E:2 matvec_swiglu_q8x_kernelILi4E:2 matvec_swiglu_q8x_kernelILi5E:2 matvec_q8_kernelILi1ELi1ELi0E:6 matvec_q8_kernelILi2ELi2ELi0E:4"

# check REPORT: one line per listed kernel below its blocks, or missing from the report
check() {
    awk -v need="$NEED" '
    BEGIN { n = split(need, a, " "); for (i = 1; i <= n; i++) { split(a[i], p, ":"); pat[i] = p[1]; lim[i] = p[2] } }
    /Function properties for / { name = $NF; next }
    /Used [0-9]+ registers/ {
        regs = $5 + 0
        per = int((regs + 7) / 8) * 8 * 256
        blocks = int(65536 / per); if (blocks > 8) blocks = 8
        for (i = 1; i <= n; i++) if (index(name, pat[i]) > 0) { seen[i] = 1
            if (blocks < lim[i]) printf "%s: %d registers, %d blocks per SM (need %d)\n", name, regs, blocks, lim[i] }
    }
    END { for (i = 1; i <= n; i++) if (!seen[i]) printf "%s: not in the report\n", pat[i] }' "$1"
}

cat >"$T/bad.txt" <<'REP'
ptxas info    : Function properties for _Z24matvec_swiglu_q8x_kernelILi5EEv6kc_matS0_PK8kc_q8blkPf5kc_pf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 129 registers, used 0 barriers
ptxas info    : Function properties for _Z17matvec_q8x_kernelILi5EEv6q8_jobPK8kc_q8blk
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 96 registers, used 0 barriers
REP
NEED_ALL=$NEED
NEED="matvec_swiglu_q8x_kernelILi5E:2 matvec_q8x_kernelILi5E:2 matvec_q8_kernelILi1ELi1ELi0E:6"
is "_Z24matvec_swiglu_q8x_kernelILi5EEv6kc_matS0_PK8kc_q8blkPf5kc_pf: 129 registers, 1 blocks per SM (need 2)
matvec_q8_kernelILi1ELi1ELi0E: not in the report" "$(check "$T/bad.txt")" \
  "the checker reports one register past the cliff and a missing kernel (synthetic report)"
NEED=$NEED_ALL
regs=$(awk '/Function properties for .*matvec_swiglu_q8x_kernelILi5E/{f=1; next} f && /Used [0-9]+ registers/{print $5; exit}' "$REP")
is "" "$(check "$REP")" "the step's q8 GEMVs keep their blocks per SM (registers from ptxas; 27B gate/up: $regs)"
