# src/cli/perf.mk: issue 6 tools: `kestrel-eval gen-model` (synthetic GGUF of a
# real Qwen3.5 shape, docs/presets.md) and `kestrel-eval ab` (interleaved A/B of
# two engine builds, docs/methodology.md), and their TAP tests. suites/perf-h200.yaml,
# tools/perf_h200.sh and docs/presets.md are distributed with their folders.
kestrel_eval_SOURCES += src/cli/cmd_gen_model.c src/cli/cmd_ab.c
TESTS += tests/gen-model-basic.sh tests/gen-model-errors.sh tests/ab-verdict.sh tests/ab-errors.sh tests/ab-interrupt.sh
EXTRA_DIST += tests/ab-lib.sh tests/gen-model-basic.sh tests/gen-model-errors.sh tests/ab-verdict.sh \
	tests/ab-errors.sh tests/ab-interrupt.sh
