#!/bin/sh
# cuda-engine: properties of libkestrel-cuda.so (and the trace library) that hold without a GPU:
# it exports exactly kestrel_engine_entry, links the CUDA runtime statically,
# records its build flags, and parses its options before touching a device (so the
# word-valued options' table is checked here: every word accepted, a wrong one named
# with the list of the right ones, exit 2).
. "$top_srcdir/tests/lib.sh"
lib=$top_builddir/cuda/libkestrel-cuda.so
[ -f "$lib" ] || skip_all "CUDA engine not configured (no cuda/libkestrel-cuda.so)"
command -v nm >/dev/null 2>&1 || skip_all "no nm"
plan 18
exports=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort | tr '\n' ' ')
is "kestrel_engine_entry " "$exports" "cuda-engine: exports exactly kestrel_engine_entry"
ok "! ldd '$lib' | grep -q libcudart" "cuda-engine: CUDA runtime linked statically (no libcudart in ldd)"
ok "grep -aq 'nvcc -arch=' '$lib'" "cuda-engine: build flags recorded in the library"
ok "[ -L '$top_builddir/engines/libkestrel-cuda.so' ]" "cuda-engine: engines/libkestrel-cuda.so links to it"

trace=$top_builddir/cuda/libkestrel-cuda-trace.so
exports=$(nm -D --defined-only "$trace" 2>/dev/null | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort | tr '\n' ' ')
is "kestrel_engine_entry " "$exports" "cuda-engine: the trace library exists and exports exactly kestrel_engine_entry"
ok "[ -L '$top_builddir/engines/libkestrel-cuda-trace.so' ]" "cuda-engine: engines/libkestrel-cuda-trace.so links to it"

# open with OPTIONS: "RC|first line" of kestrel-eval logits (no GPU needed for the options' errors)
KE=$top_builddir/kestrel-eval
opened() {
    out=$(KESTREL_ENGINE_DIR=$top_builddir/engines "$KE" logits --engine cuda --model "$top_srcdir/tests/fixtures/mini27-q4_0.gguf" \
        --tokens 1 --options "$1" --out "$T/l.npy" 2>&1)
    echo "$?|$(printf '%s' "$out" | head -1)"
}
is "2|kestrel-eval: options: ffn=both: expected split, fused or ring" "$(opened ffn=both)" "options: a wrong word of a three-word option is named with the list"
is "2|kestrel-eval: options: q8wide=big: expected stream, nc, smem or xs" "$(opened graph=1,q8wide=big)" \
  "options: a wrong word of a four-word option is named with the list"
is "2|kestrel-eval: options: delta=x: expected auto, generic or reg" "$(opened delta=x)" "options: delta's three words"
is "2|kestrel-eval: options: gdn=one: expected split or fused" "$(opened gdn=one)" "options: gdn's two words"
is "2|kestrel-eval: options: attn=fast: expected split, gqa or short" "$(opened attn=fast)" "options: attn's three words"
is "2|kestrel-eval: options: attn_long=short: expected split or gqa" "$(opened attn_long=short)" "options: attn_long's two words"
is "2|kestrel-eval: options: rms_fold=both: expected 0, 1, in, ffn or auto" "$(opened rms_fold=both)" \
  "options: rms_fold's five words (0 and 1 among them)"
bad=""
for kv in delta=auto delta=generic delta=reg gemv=reg gemv=pipe q8gemv=xs q8gemv=stream q8wide=stream q8wide=nc \
    q8wide=smem q8wide=xs ffn=split ffn=fused ffn=ring gdn=split gdn=fused attn=split attn=gqa attn=short attn_long=split attn_long=gqa dot=q8 dot=f32 rms_fold=0 rms_fold=1 rms_fold=in rms_fold=ffn rms_fold=auto \
    profile=trace profile=1; do
    case $(opened "$kv") in *"options:"*) bad="$bad $kv" ;; esac
done
is "" "$bad" "options: every listed word is accepted (the open goes on to the device)"
# the short attention's numeric options (issue 6 v20): out of range refused by name, exit 2; their
# ends accepted
bad=""
for kv in attn_short=4097 attn_cl=2147483648 attn_clsize=1 attn_clsize=9 delta_pf=2 q8t_wu=3 delta_trig=4 prep_early=3 attn_early=2 q8t_half=2 q8t_bch=2 attn_fuse=4 attn_kvc=1 attn_kvc=17 attn_kvc_from=2147483648 attn_kvc_tm=2 attn_kvc_to=2147483648 attn_kvc_sp=0 attn_kvc_sp=33 attn_kvc_push=2 attn_cl_push=2 norm_lean=2 norm_split=0 norm_split=33; do
    case $(opened "$kv") in "2|kestrel-eval: options: unknown key or bad value '$kv' ("*) ;; *) bad="$bad $kv" ;; esac
done
is "" "$bad" "options: attn_short, attn_cl, attn_clsize, delta_pf, q8t_wu, delta_trig, prep_early, attn_early, q8t_half, q8t_bch, attn_fuse, attn_kvc, attn_kvc_from, attn_kvc_tm, attn_kvc_to, attn_kvc_sp, attn_kvc_push, attn_cl_push, norm_lean, norm_split out of range: exit 2 naming the pair"
bad=""
for kv in attn_short=0 attn_short=4096 attn_cl=0 attn_cl=2147483647 attn_clsize=2 attn_clsize=8 delta_pf=0 delta_pf=1 q8t_wu=0 q8t_wu=2 delta_trig=0 delta_trig=3 prep_early=0 prep_early=2 attn_early=0 attn_early=1 q8t_half=0 q8t_half=1 q8t_bch=0 q8t_bch=1 attn_fuse=0 attn_fuse=3 attn_kvc=0 attn_kvc=2 attn_kvc=16 attn_kvc_from=0 attn_kvc_from=2147483647 attn_kvc_tm=0 attn_kvc_tm=1 attn_kvc_to=0 attn_kvc_to=2147483647 attn_kvc_sp=1 attn_kvc_sp=32 attn_kvc=auto attn_kvc_sp=auto attn_kvc_sp=auto,attn_kvc_tm=0 attn_kvc=auto,attn_kvc_sp=1 attn_kvc_push=0 attn_kvc_push=1 attn_cl_push=0 attn_cl_push=1 norm_lean=0 norm_lean=1 norm_split=1 norm_split=32; do
    case $(opened "$kv") in *"options:"*) bad="$bad $kv" ;; esac
done
is "" "$bad" "options: their range ends are accepted, attn_kvc and attn_kvc_sp also auto (attn_kvc_tm=0 alone too: attn_kvc_sp auto is 1 then) (the open goes on to the device)"
is "2|kestrel-eval: options: attn_kvc_sp=Auto: expected a non-negative integer" "$(opened attn_kvc_sp=Auto)" \
  "options: attn_kvc_sp's one word is auto (lower case), else a number"
is "2|kestrel-eval: options: attn_kvc_sp=3 needs attn_kvc_tm=1 (attention_kvcx reads the caches by tensor maps)" \
  "$(opened attn_kvc_sp=3,attn_kvc_tm=0)" "options: attn_kvc_sp past 1 without the tensor maps refused, exit 2"
done_testing
