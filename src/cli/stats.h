/*
 * stats.h - the statistics behind timing verdicts (docs/methodology.md).
 */
#ifndef KESTREL_STATS_H
#define KESTREL_STATS_H

#include <stdint.h>

double stats_median(const double *x, int n);   /* x: (n,), not modified */
double stats_mad(const double *x, int n);      /* median absolute deviation (unscaled) */
double stats_min(const double *x, int n);
double stats_max(const double *x, int n);

/* Two-sided Mann-Whitney U test with tie correction (normal approximation with
 * continuity correction; exact distribution when both n <= 20 and no ties).
 * a: (na,), b: (nb,). Returns the p-value; *u_out receives U of a (may be NULL). */
double stats_mann_whitney_p(const double *a, int na, const double *b, int nb, double *u_out);

/* Bootstrap confidence interval of median(b)/median(a), resampling each group with
 * replacement `n_boot` times from a fixed seed (deterministic). level e.g. 0.95. */
void stats_bootstrap_median_ratio(const double *a, int na, const double *b, int nb, int n_boot,
                                  double level, uint64_t seed, double *lo, double *hi);

#endif
