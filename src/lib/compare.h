/*
 * compare.h - the comparison metrics every check uses (docs/metrics.md).
 * One implementation, shared by kestrel-eval's case kinds and the tests.
 *
 * For a position t with engine row g (n,) and reference row r (n,):
 *   max_rel(t) = max_i |g_i - r_i| / max_i |r_i|
 *   rms_rel(t) = sqrt(mean_i (g_i - r_i)^2) / sqrt(mean_i r_i^2)
 * A NaN or Inf in g makes max_rel and rms_rel +Inf for that position.
 */
#ifndef KESTREL_COMPARE_H
#define KESTREL_COMPARE_H

#include <stddef.h>
#include <stdint.h>

typedef struct compare_stats {
    int64_t n_pos;
    double worst_max_rel; int64_t worst_max_rel_pos;
    double worst_rms_rel; int64_t worst_rms_rel_pos;
    int64_t n_out_of_tol;      /* positions with max_rel > tol */
    int64_t argmax_agree;      /* positions whose argmax equals the reference's */
    int64_t first_argmax_diff; /* -1 when all agree */
    int64_t n_nonfinite;       /* non-finite engine elements */
} compare_stats;

/* got, ref: (T, n) row-major. tol: the max_rel threshold counted in n_out_of_tol. */
void compare_rows(const float *got, const float *ref, int64_t T, int64_t n, double tol, compare_stats *out);

/* Per-position metrics of one row pair. */
double max_rel_row(const float *got, const float *ref, int64_t n);
double rms_rel_row(const float *got, const float *ref, int64_t n);

/* Index of the largest element (lowest index wins ties; NaN never wins). x: (n,) */
int64_t argmax_f32(const float *x, int64_t n);

/* Number of elements whose bit patterns differ. a, b: (n_elements,) of elem_size bytes each. */
int64_t count_unequal(const void *a, const void *b, int64_t n_elements, size_t elem_size);

#endif
