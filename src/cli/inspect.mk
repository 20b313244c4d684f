# src/cli/inspect.mk: kestrel_eval_SOURCES += ... and TESTS += ... for this family
