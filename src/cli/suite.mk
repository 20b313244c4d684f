# src/cli/suite.mk - the suite family: the YAML suite loader (suite.h, used by
# run, ab, report) and `kestrel-eval check`; their tests and test suites.
kestrel_eval_SOURCES += src/cli/suite.c src/cli/suite.h src/cli/cmd_check.c
TESTS += tests/suite-errors.sh tests/suite-valid.sh tests/suite-schema.sh tests/suite-fuzz.sh
EXTRA_DIST += tests/suite-errors.sh tests/suite-valid.sh tests/suite-schema.sh tests/suite-fuzz.sh
EXTRA_DIST += tests/suites

# the suite reader's fuzz target (tests/fuzz/fuzz_suite.c) with its standalone driver: make check
# replays the test suites and the fuzzer's corpus through it (libFuzzer build: the file's header)
check_PROGRAMS += tests/fuzz/fuzz_suite
tests_fuzz_fuzz_suite_SOURCES = tests/fuzz/fuzz_suite.c src/cli/suite.c src/cli/util.c
tests_fuzz_fuzz_suite_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/cli
tests_fuzz_fuzz_suite_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS) $(CRYPTO_CFLAGS)
tests_fuzz_fuzz_suite_LDADD = libkestrel-common.la $(YAML_LIBS) $(CRYPTO_LIBS) -lm
TESTS += tests/suite-fuzz-replay.sh
EXTRA_DIST += tests/suite-fuzz-replay.sh tests/fuzz/corpus-suite
