# src/cli/run.mk: kestrel_eval_SOURCES += ... and TESTS += ... for this family
