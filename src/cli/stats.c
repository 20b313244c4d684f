/*
 * stats.c - the statistics behind timing verdicts (stats.h, docs/methodology.md):
 * median / MAD / min / max, the two-sided Mann-Whitney U test (exact null
 * distribution for small samples without ties, tie-corrected normal
 * approximation with continuity correction otherwise) and a deterministic
 * bootstrap confidence interval of a ratio of medians.
 *
 * Library-style code: never prints or exits; an allocation failure or an
 * empty input yields NaN.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static int cmp_double(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Median of an array that may be reordered. x: (n,) */
static double median_inplace(double *x, int n) {
    qsort(x, (size_t)n, sizeof(double), cmp_double);
    return (n % 2) ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double stats_median(const double *x, int n) {
    if (n <= 0) return NAN;
    double *c = malloc(sizeof(double) * (size_t)n);
    if (!c) return NAN;
    memcpy(c, x, sizeof(double) * (size_t)n);
    double m = median_inplace(c, n);
    free(c);
    return m;
}

double stats_mad(const double *x, int n) {
    if (n <= 0) return NAN;
    double *c = malloc(sizeof(double) * (size_t)n);
    if (!c) return NAN;
    double med = stats_median(x, n);
    for (int i = 0; i < n; i++) c[i] = fabs(x[i] - med);
    double m = median_inplace(c, n);
    free(c);
    return m;
}

double stats_min(const double *x, int n) {
    if (n <= 0) return NAN;
    double m = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] < m) m = x[i];
    return m;
}

double stats_max(const double *x, int n) {
    if (n <= 0) return NAN;
    double m = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > m) m = x[i];
    return m;
}

/* ---------------------------------------------------------------- Mann-Whitney */

typedef struct ranked {
    double v;
    int group; /* 0 = a, 1 = b */
} ranked;

static int cmp_ranked(const void *pa, const void *pb) {
    return cmp_double(&((const ranked *)pa)->v, &((const ranked *)pb)->v);
}

/* Exact null distribution of U for sizes (m, n) without ties:
 * cnt[u] = number of the C(m+n, m) orderings with U = u, u in [0, m*n].
 * Recurrence f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u) (the largest element
 * belongs to a or to b). Counts fit in a double exactly for m, n <= 20.
 * Returns the two-sided p = min(1, 2 * min(P(U <= u), P(U >= u))). */
static double mw_exact_p(int m, int n, double u) {
    int umax = m * n;
    /* f[i][j] for the current sizes kept as a (n+1) x (umax+1) table per i */
    size_t row = (size_t)umax + 1;
    double *prev = calloc((size_t)(n + 1) * row, sizeof(double)); /* i - 1 */
    double *cur = calloc((size_t)(n + 1) * row, sizeof(double));  /* i */
    double p = NAN;
    if (!prev || !cur) goto cleanup;
    /* i = 0: f(0, j, 0) = 1 */
    for (int j = 0; j <= n; j++) prev[(size_t)j * row] = 1.0;
    for (int i = 1; i <= m; i++) {
        memset(cur, 0, (size_t)(n + 1) * row * sizeof(double));
        cur[0] = 1.0; /* f(i, 0, 0) = 1 */
        for (int j = 1; j <= n; j++) {
            for (int uu = 0; uu <= i * j; uu++) {
                double v = cur[(size_t)(j - 1) * row + (size_t)uu]; /* f(i, j-1, u) */
                if (uu - j >= 0) v += prev[(size_t)j * row + (size_t)(uu - j)]; /* f(i-1, j, u-j) */
                cur[(size_t)j * row + (size_t)uu] = v;
            }
        }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    {
        const double *f = prev + (size_t)n * row; /* f(m, n, .) */
        double total = 0, lo = 0, hi = 0;
        for (int uu = 0; uu <= umax; uu++) {
            total += f[uu];
            if (uu <= u + 1e-9) lo += f[uu];
            if (uu >= u - 1e-9) hi += f[uu];
        }
        p = 2.0 * fmin(lo, hi) / total;
        if (p > 1.0) p = 1.0;
    }
cleanup:
    free(prev);
    free(cur);
    return p;
}

double stats_mann_whitney_p(const double *a, int na, const double *b, int nb, double *u_out) {
    if (u_out) *u_out = NAN;
    if (na <= 0 || nb <= 0) return NAN;
    int N = na + nb;
    ranked *r = malloc(sizeof(ranked) * (size_t)N);
    if (!r) return NAN;
    for (int i = 0; i < na; i++) r[i] = (ranked){a[i], 0};
    for (int i = 0; i < nb; i++) r[na + i] = (ranked){b[i], 1};
    qsort(r, (size_t)N, sizeof(ranked), cmp_ranked);

    /* average ranks over ties; rank sum of a; tie term sum(t^3 - t) */
    double rank_sum_a = 0, tie_term = 0;
    int has_ties = 0;
    for (int i = 0; i < N;) {
        int j = i;
        while (j + 1 < N && r[j + 1].v == r[i].v) j++;
        double avg = 0.5 * ((double)(i + 1) + (double)(j + 1));
        int t = j - i + 1;
        if (t > 1) {
            has_ties = 1;
            tie_term += (double)t * t * t - t;
        }
        for (int k = i; k <= j; k++)
            if (r[k].group == 0) rank_sum_a += avg;
        i = j + 1;
    }
    free(r);
    double u = rank_sum_a - (double)na * (na + 1) / 2.0;
    if (u_out) *u_out = u;

    if (!has_ties && na <= 20 && nb <= 20) return mw_exact_p(na, nb, u);

    double mu = (double)na * nb / 2.0;
    double var = (double)na * nb / 12.0 * ((N + 1) - tie_term / ((double)N * (N - 1)));
    if (var <= 0) return 1.0; /* every value tied: no evidence of a difference */
    double z = (fabs(u - mu) - 0.5) / sqrt(var);
    if (z <= 0) return 1.0;
    double p = erfc(z / sqrt(2.0));
    return p > 1.0 ? 1.0 : p;
}

/* ---------------------------------------------------------------- bootstrap */

/* splitmix64: small, fast, and the same stream on every platform. */
static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform index in [0, n) (multiply-shift; bias < n / 2^64, irrelevant here). */
static int rand_index(uint64_t *s, int n) {
    return (int)(((unsigned __int128)splitmix64(s) * (unsigned)n) >> 64);
}

/* Quantile of sorted x (n,) with linear interpolation between order statistics. */
static double quantile_sorted(const double *x, int n, double q) {
    double pos = q * (n - 1);
    int i = (int)floor(pos);
    if (i < 0) return x[0];
    if (i >= n - 1) return x[n - 1];
    double f = pos - i;
    return x[i] * (1 - f) + x[i + 1] * f;
}

void stats_bootstrap_median_ratio(const double *a, int na, const double *b, int nb, int n_boot,
                                  double level, uint64_t seed, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (na <= 0 || nb <= 0 || n_boot <= 0 || !(level > 0 && level < 1)) return;
    double *ra = malloc(sizeof(double) * (size_t)na);   /* (na,) resample of a */
    double *rb = malloc(sizeof(double) * (size_t)nb);   /* (nb,) resample of b */
    double *ratios = malloc(sizeof(double) * (size_t)n_boot); /* (n_boot,) */
    uint64_t s = seed;
    int k = 0;
    if (!ra || !rb || !ratios) goto cleanup;
    for (int it = 0; it < n_boot; it++) {
        for (int i = 0; i < na; i++) ra[i] = a[rand_index(&s, na)];
        for (int i = 0; i < nb; i++) rb[i] = b[rand_index(&s, nb)];
        double ma = median_inplace(ra, na), mb = median_inplace(rb, nb);
        if (ma != 0 && isfinite(mb / ma)) ratios[k++] = mb / ma;
    }
    if (k == 0) goto cleanup;
    qsort(ratios, (size_t)k, sizeof(double), cmp_double);
    *lo = quantile_sorted(ratios, k, (1 - level) / 2);
    *hi = quantile_sorted(ratios, k, 1 - (1 - level) / 2);
cleanup:
    free(ra);
    free(rb);
    free(ratios);
}
