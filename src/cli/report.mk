# src/cli/report.mk: regressions against archived baselines (engineer E):
# statistics, the comparison engine, `report`, `baseline`, `history`, `query`.
kestrel_eval_SOURCES += \
	src/cli/stats.c src/cli/stats.h \
	src/cli/compare_runs.c src/cli/compare_runs.h \
	src/cli/cmd_report.c src/cli/cmd_baseline.c \
	src/cli/cmd_history.c src/cli/cmd_query.c

check_PROGRAMS += tests/unit/test_stats
tests_unit_test_stats_SOURCES = tests/unit/test_stats.c src/cli/stats.c src/cli/stats.h
tests_unit_test_stats_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/cli
tests_unit_test_stats_LDADD = -lm

TESTS += tests/unit/test_stats \
	tests/report-rules.sh tests/report-timing.sh tests/report-accuracy.sh \
	tests/report-formats.sh tests/report-html.sh \
	tests/baseline-roundtrip.sh tests/baseline-errors.sh \
	tests/history-basic.sh tests/query-basic.sh
EXTRA_DIST += tests/report-lib.sh
