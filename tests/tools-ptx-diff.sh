#!/bin/sh
# tools-ptx-diff: tools/ptx_diff.sh says which kernels of two PTX files differ, register, label and
# local-depot numbering aside (the check docs/methodology.md asks of an option kept in the engine:
# the default kernels byte-identical). Synthetic PTX, no nvcc needed.
. "$top_srcdir/tests/lib.sh"
plan 17
PD=$top_srcdir/tools/ptx_diff.sh

# two entries as nvcc writes them: a tab before each "// .globl", registers and labels numbered per
# file, a local depot numbered per module
cat >"$T/old.ptx" <<'PTX'
.version 8.8
.target sm_90
	// .globl	_Z1av
.visible .entry _Z1av(
	.param .u64 _Z1av_param_0
)
{
	.local .align 4 .b8 	__local_depot3[28];
	.reg .b32 	%r<4>;
	mov.u32 	%r1, %tid.x;
	add.s32 	%r2, %r1, 128;
$L__BB0_1:
	ret;
}
	// .globl	_Z1bv
.visible .entry _Z1bv(
)
{
	.reg .b32 	%r<3>;
	mov.u32 	%r1, %ctaid.x;
	ret;
}
PTX
sed -e 's/%r1\b/%r7/g; s/%r2\b/%r9/g; s/%r<4>/%r<10>/; s/\$L__BB0_1/$L__BB5_2/; s/__local_depot3/__local_depot115/' \
  "$T/old.ptx" >"$T/renum.ptx"
ok "! cmp -s '$T/old.ptx' '$T/renum.ptx'" "the renumbered copy differs from the original as text"
run_cmd "$PD" "$T/old.ptx" "$T/renum.ptx"
is 0 "$RC" "renumbered registers, labels and local depot: exit 0"
is "same _Z1av
same _Z1bv
summary: 2 same, 0 differ, 0 only-old, 0 only-new" "$OUT" "renumbered: both entries the same, sorted, with the summary"

sed -e 's/mov.u32 	%r1, %ctaid.x;/mov.u32 	%r1, %ctaid.y;/' "$T/old.ptx" >"$T/changed.ptx"
run_cmd "$PD" "$T/old.ptx" "$T/changed.ptx"
is 1 "$RC" "one instruction changed in the second entry: exit 1"
like "$OUT" "^differs _Z1bv \(old 6 lines, new 6 lines\)$" "the changed entry is named with both sizes"
like "$OUT" "^same _Z1av$" "the unchanged entry is still the same (the tab-indented // .globl ends an entry)"

run_cmd "$PD" --only '_Z1a' "$T/old.ptx" "$T/changed.ptx"
is 0 "$RC" "--only judges the matching entries alone: the changed one outside it does not fail"

{ cat "$T/old.ptx"; printf '\t// .globl\t_Z1cv\n.visible .entry _Z1cv(\n)\n{\n\tret;\n}\n'; } >"$T/more.ptx"
run_cmd "$PD" "$T/old.ptx" "$T/more.ptx"
is "1 only-new _Z1cv" "$RC $(printf '%s\n' "$OUT" | grep '^only-new')" "an entry only in the new file: exit 1, named only-new"
run_cmd "$PD" "$T/more.ptx" "$T/old.ptx"
like "$OUT" "summary: 2 same, 0 differ, 1 only-old, 0 only-new" "and only-old the other way round"

run_cmd "$PD" "$T/old.ptx" "$T/missing.ptx"
is "2" "$RC" "a missing file: exit 2"
like "$ERR" "missing.ptx: cannot read" "the error names the file"
echo "not ptx" >"$T/text.txt"
run_cmd "$PD" "$T/old.ptx" "$T/text.txt"
is "2 ptx_diff: $T/text.txt: no .entry in it (not PTX?)" "$RC $ERR" "a file without entries: exit 2 naming it"
run_cmd "$PD" --only
is "2" "$RC" "--only without a regex: exit 2"

# the split kernel's body moved into a device function: its static shared variable declared at
# module scope and named after that function; same instructions
cat >"$T/st_old.ptx" <<'PTX'
	// .globl	_Z1kv
.visible .entry _Z1kv(
)
{
	// demoted variable
	.shared .align 4 .b8 _ZZ1kvE3red[128];
	.reg .b32 	%r<3>;
	mov.u32 	%r1, _ZZ1kvE3red;
	ld.shared.f32 	%f1, [_ZZ1kvE3red+4];
	ret;
}
PTX
cat >"$T/st_new.ptx" <<'PTX'
.shared .align 4 .b8 _ZZ6k_bodyvE3red[128];
	// .globl	_Z1kv
.visible .entry _Z1kv(
)
{
	.reg .b32 	%r<3>;
	mov.u32 	%r1, _ZZ6k_bodyvE3red;
	ld.shared.f32 	%f1, [_ZZ6k_bodyvE3red+4];
	ret;
}
PTX
run_cmd "$PD" "$T/st_old.ptx" "$T/st_new.ptx"
is "0 same _Z1kv" "$RC $(printf '%s\n' "$OUT" | head -1)" "a static shared variable moved to a device function: the same"
sed -e 's/red+4/red+8/' "$T/st_new.ptx" >"$T/st_moved.ptx"
run_cmd "$PD" "$T/st_old.ptx" "$T/st_moved.ptx"
is 1 "$RC" "but a different offset into it differs"

# the call-sequence comments around a call are numbered over the module: a kernel added earlier renumbers
# them, the instructions stay
cat >"$T/cs_old.ptx" <<'PTX'
	// .globl	_Z1cv
.visible .entry _Z1cv(
)
{
	{ // callseq 19, 0
	call.uni 	__internal_trig_reduction_slowpathd, (param0);
	} // callseq 19
	ret;
}
PTX
sed -e 's/callseq 19/callseq 21/' "$T/cs_old.ptx" >"$T/cs_new.ptx"
run_cmd "$PD" "$T/cs_old.ptx" "$T/cs_new.ptx"
is "0 same _Z1cv" "$RC $(printf '%s\n' "$OUT" | head -1)" "renumbered callseq comments: the same"
sed -e 's/slowpathd/slowpathf/' "$T/cs_new.ptx" >"$T/cs_call.ptx"
run_cmd "$PD" "$T/cs_old.ptx" "$T/cs_call.ptx"
is 1 "$RC" "but another callee differs"
