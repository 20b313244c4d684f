# src/cli/suite.mk - the suite family: the YAML suite loader (suite.h, used by
# run, ab, report) and `kestrel-eval check`; their tests and test suites.
kestrel_eval_SOURCES += src/cli/suite.c src/cli/suite.h src/cli/cmd_check.c
TESTS += tests/suite-errors.sh tests/suite-valid.sh tests/suite-schema.sh tests/suite-fuzz.sh
EXTRA_DIST += tests/suite-errors.sh tests/suite-valid.sh tests/suite-schema.sh tests/suite-fuzz.sh
EXTRA_DIST += tests/suites
