/*
 * compare.c - the comparison metrics every check uses (see compare.h,
 * BRIEF §4): per-position max_rel / rms_rel, argmax agreement, non-finite
 * counts, bitwise inequality counts. Sums are accumulated in double.
 *
 * Conventions beyond compare.h: a non-finite element in either row makes that
 * position's max_rel and rms_rel +Inf (a broken reference must not pass
 * silently); an all-zero reference row gives 0 when the engine row is exactly
 * equal and +Inf otherwise.
 */
#include "compare.h"

#include <math.h>
#include <string.h>

double max_rel_row(const float *got, const float *ref, int64_t n) {
    /* got, ref: (n,) */
    double max_diff = 0.0, max_ref = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(ref[i])) return INFINITY;
        double d = fabs((double)got[i] - (double)ref[i]);
        double r = fabs((double)ref[i]);
        if (d > max_diff) max_diff = d;
        if (r > max_ref) max_ref = r;
    }
    if (max_diff == 0.0) return 0.0;
    return max_ref > 0.0 ? max_diff / max_ref : INFINITY;
}

double rms_rel_row(const float *got, const float *ref, int64_t n) {
    /* got, ref: (n,) */
    double sum_d2 = 0.0, sum_r2 = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(ref[i])) return INFINITY;
        double d = (double)got[i] - (double)ref[i];
        sum_d2 += d * d;
        sum_r2 += (double)ref[i] * (double)ref[i];
    }
    if (sum_d2 == 0.0) return 0.0;
    /* sqrt(mean d^2) / sqrt(mean r^2): the 1/n cancels */
    return sum_r2 > 0.0 ? sqrt(sum_d2 / sum_r2) : INFINITY;
}

int64_t argmax_f32(const float *x, int64_t n) {
    /* x: (n,) */
    int64_t best = -1;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i])) continue;
        if (best < 0 || x[i] > x[best]) best = i;
    }
    return best;
}

void compare_rows(const float *got, const float *ref, int64_t T, int64_t n, double tol, compare_stats *out) {
    /* got, ref: (T, n) row-major */
    memset(out, 0, sizeof(*out));
    out->n_pos = T;
    out->worst_max_rel_pos = -1;
    out->worst_rms_rel_pos = -1;
    out->first_argmax_diff = -1;
    for (int64_t t = 0; t < T; t++) {
        const float *g = got + t * n, *r = ref + t * n;
        double mr = max_rel_row(g, r, n);
        double rr = rms_rel_row(g, r, n);
        if (out->worst_max_rel_pos < 0 || mr > out->worst_max_rel) {
            out->worst_max_rel = mr;
            out->worst_max_rel_pos = t;
        }
        if (out->worst_rms_rel_pos < 0 || rr > out->worst_rms_rel) {
            out->worst_rms_rel = rr;
            out->worst_rms_rel_pos = t;
        }
        if (mr > tol) out->n_out_of_tol++;
        if (argmax_f32(g, n) == argmax_f32(r, n)) out->argmax_agree++;
        else if (out->first_argmax_diff < 0) out->first_argmax_diff = t;
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(g[i])) out->n_nonfinite++;
    }
}

int64_t count_unequal(const void *a, const void *b, int64_t n_elements, size_t elem_size) {
    /* a, b: (n_elements,) of elem_size bytes */
    const unsigned char *pa = a, *pb = b;
    int64_t n = 0;
    for (int64_t i = 0; i < n_elements; i++)
        if (memcmp(pa + (size_t)i * elem_size, pb + (size_t)i * elem_size, elem_size) != 0) n++;
    return n;
}
