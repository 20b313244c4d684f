# src/cli/logits.mk: `kestrel-eval logits` and its tests.
kestrel_eval_SOURCES += src/cli/cmd_logits.c
TESTS += tests/engine-logits.sh tests/engine-oracle.sh
EXTRA_DIST += tests/engine-logits.sh tests/engine-oracle.sh
