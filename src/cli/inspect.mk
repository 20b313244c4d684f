# kestrel-eval inspect (engineer A): the command and its shell test.
kestrel_eval_SOURCES += src/cli/cmd_inspect.c
TESTS += tests/gguf-inspect.sh
EXTRA_DIST += tests/gguf-inspect.sh
