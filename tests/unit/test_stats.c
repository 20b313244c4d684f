/*
 * test_stats.c - TAP unit test of src/cli/stats.c: median / MAD / min / max,
 * Mann-Whitney U p-values against known values (scipy documentation example,
 * hand-computed tie-corrected normal approximations) and against an independent
 * brute-force enumeration of all splits for small samples, and bootstrap
 * determinism.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "stats.h"
#include "tap.h"


static void is_near(double expected, double got, double tol, const char *desc) {
    int pass = fabs(expected - got) <= tol;
    ok(pass, "%s", desc);
    if (!pass) printf("#   expected: %.17g\n#        got: %.17g\n", expected, got);
}

/* U of a by pairwise counting (ties count 1/2). a: (na,), b: (nb,) */
static double pairwise_u(const double *a, int na, const double *b, int nb) {
    double u = 0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) u += (a[i] > b[j]) + 0.5 * (a[i] == b[j]);
    return u;
}

/* Exact two-sided permutation p by enumerating every way to split the pooled
 * values into groups of na and nb. a: (na,), b: (nb,), na + nb <= 16. */
static double brute_force_p(const double *a, int na, const double *b, int nb) {
    int N = na + nb;
    double pool[16], ga[16], gb[16];
    for (int i = 0; i < na; i++) pool[i] = a[i];
    for (int i = 0; i < nb; i++) pool[na + i] = b[i];
    double u0 = pairwise_u(a, na, b, nb);
    double lo = 0, hi = 0, total = 0;
    for (uint32_t mask = 0; mask < (1u << N); mask++) {
        if (__builtin_popcount(mask) != na) continue;
        int ka = 0, kb = 0;
        for (int i = 0; i < N; i++) {
            if (mask & (1u << i)) ga[ka++] = pool[i];
            else gb[kb++] = pool[i];
        }
        double u = pairwise_u(ga, na, gb, nb);
        total += 1;
        lo += u <= u0 + 1e-9;
        hi += u >= u0 - 1e-9;
    }
    double p = 2 * fmin(lo, hi) / total;
    return p > 1 ? 1 : p;
}

int main(void) {
    /* ---- median, MAD, min, max ---- */
    double odd[] = {5, 1, 4, 2, 3};
    double even[] = {10, 1, 3, 7};
    double mad_x[] = {1, 1, 2, 2, 4, 6, 9}; /* median 2; |x-2| = 1 1 0 0 2 4 7 -> median 1 */
    is_near(3, stats_median(odd, 5), 0, "stats: median of odd n");
    is_near(5, stats_median(even, 4), 0, "stats: median of even n is the mean of the middle two");
    ok(odd[0] == 5 && odd[4] == 3, "stats: median leaves its input unmodified");
    is_near(1, stats_mad(mad_x, 7), 0, "stats: MAD of {1,1,2,2,4,6,9} is 1");
    is_near(1, stats_min(odd, 5), 0, "stats: min");
    is_near(10, stats_max(even, 4), 0, "stats: max");
    ok(isnan(stats_median(odd, 0)), "stats: median of nothing is NaN");

    /* ---- Mann-Whitney: known values ---- */
    double u;
    /* scipy.stats.mannwhitneyu documentation example: U1 = 17, exact p = 0.1111 (= 14/126) */
    double males[] = {19, 22, 16, 29, 24}, females[] = {20, 11, 17, 12};
    double p = stats_mann_whitney_p(males, 5, females, 4, &u);
    is_near(17, u, 0, "mwu: U of the scipy example is 17");
    is_near(1.0 / 9.0, p, 1e-12, "mwu: exact p of the scipy example is 0.1111");
    /* complete separation, 3 vs 3: only 1 of C(6,3) = 20 splits has U = 0, p = 2/20 */
    double s1[] = {1, 2, 3}, s2[] = {4, 5, 6};
    p = stats_mann_whitney_p(s1, 3, s2, 3, &u);
    is_near(0, u, 0, "mwu: U = 0 for a below b");
    is_near(0.1, p, 1e-12, "mwu: exact p for 3 vs 3 separated is 0.1");
    /* 5 vs 5 separated: p = 2 / C(10,5) = 2/252 */
    double s3[] = {1, 2, 3, 4, 5}, s4[] = {6, 7, 8, 9, 10};
    is_near(2.0 / 252.0, stats_mann_whitney_p(s4, 5, s3, 5, &u), 1e-12, "mwu: exact p for 5 vs 5 separated is 2/252");
    is_near(25, u, 0, "mwu: U = na*nb when a is above b");
    /* identical samples: no evidence at all */
    is_near(1, stats_mann_whitney_p(s3, 5, s3, 5, NULL), 1e-12, "mwu: identical samples give p = 1");
    double c1[] = {2, 2, 2, 2, 2}, c2[] = {2, 2, 2, 2, 2, 2};
    is_near(1, stats_mann_whitney_p(c1, 5, c2, 6, NULL), 0, "mwu: all values tied gives p = 1");
    /* ties -> normal approximation with tie correction and continuity correction.
     * a = {1,2,2,3,5,7}, b = {2,4,4,6,8,9,10}: U = 9, N = 13, ties: one triple (2) and one
     * pair (4): sum(t^3 - t) = 24 + 6 = 30; var = 6*7/12 * (14 - 30/156) = 48.3269...;
     * z = (|9 - 21| - 0.5) / sqrt(var) = 1.65426; p = erfc(z / sqrt 2) = 0.098075083933 (by hand/python math) */
    double t1[] = {1, 2, 2, 3, 5, 7}, t2[] = {2, 4, 4, 6, 8, 9, 10};
    p = stats_mann_whitney_p(t1, 6, t2, 7, &u);
    is_near(9, u, 1e-12, "mwu: U with ties (average ranks) is 9");
    is_near(0.09807508393321024, p, 1e-9, "mwu: tie-corrected normal p = 0.0980751");
    /* n > 20, no ties: a = 0..24, b = a + 7.5: U = 153, p = 0.002035157807 */
    double big_a[25], big_b[25];
    for (int i = 0; i < 25; i++) {
        big_a[i] = i;
        big_b[i] = i + 7.5;
    }
    p = stats_mann_whitney_p(big_a, 25, big_b, 25, &u);
    is_near(153, u, 1e-12, "mwu: U for 25 vs 25 shifted is 153");
    is_near(0.002035157807278383, p, 1e-9, "mwu: normal approximation p for 25 vs 25 = 0.00203516");
    ok(isnan(stats_mann_whitney_p(s1, 0, s2, 3, NULL)), "mwu: empty group gives NaN");

    /* ---- Mann-Whitney exact vs brute-force enumeration, random small samples ---- */
    uint64_t st = 12345;
    int agree = 0, trials = 40;
    double worst = 0;
    for (int t = 0; t < trials; t++) {
        double a[8], b[8];
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        int na = 2 + (int)((st >> 33) % 6), nb = 2 + (int)((st >> 40) % 6);
        for (int i = 0; i < na + nb; i++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            /* distinct values (no ties) so the exact path is used */
            double v = (double)(st >> 11) / 9007199254740992.0 + i * 1e-12;
            if (i < na) a[i] = v;
            else b[i - na] = v;
        }
        double pe = stats_mann_whitney_p(a, na, b, nb, &u);
        double pb = brute_force_p(a, na, b, nb);
        double d = fabs(pe - pb);
        if (d > worst) worst = d;
        agree += d < 1e-12 && fabs(u - pairwise_u(a, na, b, nb)) < 1e-12;
    }
    ok(agree == trials, "mwu: exact p and U equal a brute-force enumeration on 40 random small samples");
    if (agree != trials) printf("#   %d/%d agree, worst |dp| = %g\n", agree, trials, worst);

    /* ---- bootstrap ---- */
    double ba[30], bb[30];
    for (int i = 0; i < 30; i++) { /* continuous values in [10, 11) and [20, 22) */
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        ba[i] = 10 + (double)(st >> 11) / 9007199254740992.0;
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        bb[i] = 20 + 2 * (double)(st >> 11) / 9007199254740992.0;
    }
    double lo1, hi1, lo2, hi2, lo3, hi3;
    stats_bootstrap_median_ratio(ba, 30, bb, 30, 2000, 0.95, 42, &lo1, &hi1);
    stats_bootstrap_median_ratio(ba, 30, bb, 30, 2000, 0.95, 42, &lo2, &hi2);
    stats_bootstrap_median_ratio(ba, 30, bb, 30, 2000, 0.95, 43, &lo3, &hi3);
    ok(lo1 == lo2 && hi1 == hi2, "bootstrap: same seed gives the same interval");
    ok(lo1 != lo3 || hi1 != hi3, "bootstrap: another seed gives another interval");
    double r = stats_median(bb, 30) / stats_median(ba, 30);
    ok(lo1 > 1.8 && lo1 <= r && hi1 >= r && hi1 < 2.2, "bootstrap: CI of a ~2x ratio contains the sample ratio and excludes 1");
    if (!(lo1 > 1.8 && lo1 <= r && hi1 >= r && hi1 < 2.2)) printf("#   CI [%g, %g]\n", lo1, hi1);
    stats_bootstrap_median_ratio(ba, 30, ba, 30, 2000, 0.95, 7, &lo2, &hi2);
    ok(lo2 < 1.0 + 1e-12 && hi2 > 1.0 - 1e-12, "bootstrap: CI of a sample against itself contains 1");
    stats_bootstrap_median_ratio(ba, 0, bb, 30, 2000, 0.95, 7, &lo2, &hi2);
    ok(isnan(lo2) && isnan(hi2), "bootstrap: empty group gives NaN");

    return tap_done();
}
