#!/bin/sh
# make_fixtures.sh - (re)make the test fixtures in tests/fixtures/ (docs/formats.md, "## Fixtures").
#
#   make_fixtures.sh oracle OUTDIR   (or just: make_fixtures.sh OUTDIR)
#       on a machine with torch + transformers 5.x (the lent GPU machine; runs on its CPU):
#       for each model in tests/fixtures/configs/*.json build the random HF model
#       (export_oracle.py --config, fixed seed) and its oracle dump; leaves OUTDIR/fixtures.tar
#       (NAME.hf/ and NAME.oracle.gguf[.zst]) and OUTDIR/export.log
#   make_fixtures.sh unpack TAR      unpack that tar into tests/fixtures/ (compressing dumps
#                                    with zstd when the GPU machine had none)
#   make_fixtures.sh convert         NAME-{f32,q8_0,q4_0}.gguf from each tests/fixtures/NAME.hf
#                                    (a model whose NAME.hf is absent is skipped with a note)
#
# Not for: anything the tests do; the tests only read what this made (and re-run convert).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
fix=$here/../tests/fixtures
PY=${PYTHON:-python3}
MODELS="mini27 minivk minitied"
seed_of() { case $1 in mini27) echo 27;; minivk) echo 11;; minitied) echo 7;; esac; }

mode=${1:?usage: make_fixtures.sh oracle OUTDIR | unpack TAR | convert}
case $mode in oracle|unpack|convert) shift;; *) mode=oracle;; esac

case $mode in
oracle)
    out=${1:?usage: make_fixtures.sh oracle OUTDIR}
    mkdir -p "$out/work"
    log=$out/export.log
    ext=gguf.zst
    command -v zstd >/dev/null 2>&1 || ext=gguf
    {
        "$PY" -c 'import sys, torch, transformers, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__, "numpy", numpy.__version__)'
        echo "zstd: $(command -v zstd || echo absent)"
        for m in $MODELS; do
            echo "== $m"
            "$PY" "$here/export_oracle.py" --config "$fix/configs/$m.json" --seed "$(seed_of $m)" \
                --write-hf "$out/work/$m.hf" --prompts 1,5,80 --greedy 16 -o "$out/work/$m.oracle.$ext"
        done
    } >"$log" 2>&1 || { cat "$log"; echo "make_fixtures.sh: export failed, see $log" >&2; exit 2; }
    cat "$log"
    tar -C "$out/work" -cf "$out/fixtures.tar" .
    rm -rf "$out/work"
    ;;
unpack)
    tarball=${1:?usage: make_fixtures.sh unpack TAR}
    tar -C "$fix" -xf "$tarball"
    for m in $MODELS; do
        if [ -f "$fix/$m.oracle.gguf" ]; then
            zstd -q -f -19 --rm "$fix/$m.oracle.gguf" -o "$fix/$m.oracle.gguf.zst"
        fi
    done
    ;;
convert)
    for m in $MODELS; do
        if [ ! -d "$fix/$m.hf" ]; then   # mini27.hf is not committed (size): remade by `oracle`
            echo "make_fixtures.sh: $fix/$m.hf: absent, $m-*.gguf left as they are" >&2
            continue
        fi
        for t in f32 q8_0 q4_0; do
            "$PY" "$here/hf2gguf.py" "$fix/$m.hf" -o "$fix/$m-$t.gguf" --type "$t"
        done
    done
    ;;
esac
