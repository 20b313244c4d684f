/*
 * test_compare.c - TAP tests of src/lib/compare.c with hand-computed values:
 * max_rel / rms_rel, zero references, NaN/Inf, argmax ties and NaN, the
 * per-position summary of compare_rows, bitwise count_unequal.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"
#include "tap.h"


static int close_to(double got, double want) { return fabs(got - want) <= 1e-12 * fabs(want); }

static void test_rows(void) {
    const float g[3] = {1, 2, 3}, r[3] = {1, 2, 4};
    /* max|g-r| = 1, max|r| = 4 -> 0.25; sum d^2 = 1, sum r^2 = 21 -> sqrt(1/21) */
    double mr = max_rel_row(g, r, 3), rr = rms_rel_row(g, r, 3);
    ok(mr == 0.25, "max_rel [1,2,3] vs [1,2,4] = 1/4 (got %.17g)", mr);
    ok(close_to(rr, sqrt(1.0 / 21.0)), "rms_rel [1,2,3] vs [1,2,4] = sqrt(1/21) = 0.2182 (got %.17g)", rr);
    /* negative reference values count by magnitude: max|r| = 10 */
    const float g2[2] = {-9, 1}, r2[2] = {-10, 1};
    ok(max_rel_row(g2, r2, 2) == 0.1, "max_rel uses |ref|: [-9,1] vs [-10,1] = 0.1");
    ok(close_to(rms_rel_row(g2, r2, 2), sqrt(1.0 / 101.0)), "rms_rel [-9,1] vs [-10,1] = sqrt(1/101)");
    ok(max_rel_row(r, r, 3) == 0.0 && rms_rel_row(r, r, 3) == 0.0, "identical rows: 0 and 0");
    const float z[3] = {0, 0, 0}, small[3] = {0, 1e-30f, 0};
    ok(max_rel_row(z, z, 3) == 0.0 && rms_rel_row(z, z, 3) == 0.0, "zero reference, zero engine: 0");
    ok(isinf(max_rel_row(small, z, 3)) && isinf(rms_rel_row(small, z, 3)), "zero reference, nonzero engine: +Inf");
    const float gn[3] = {1, NAN, 4}, gi[3] = {1, INFINITY, 4}, gm[3] = {-INFINITY, 2, 4};
    ok(isinf(max_rel_row(gn, r, 3)) && max_rel_row(gn, r, 3) > 0 && isinf(rms_rel_row(gn, r, 3)), "NaN in engine row: +Inf");
    ok(isinf(max_rel_row(gi, r, 3)) && isinf(rms_rel_row(gm, r, 3)), "+-Inf in engine row: +Inf");
    ok(isinf(max_rel_row(r, gn, 3)), "NaN in reference row: +Inf");
}

static void test_argmax(void) {
    const float a[4] = {1, 3, 3, 2};
    ok(argmax_f32(a, 4) == 1, "argmax [1,3,3,2] = 1 (lowest index wins a tie)");
    const float b[4] = {NAN, 1, NAN, 1};
    ok(argmax_f32(b, 4) == 1, "argmax [nan,1,nan,1] = 1 (NaN never wins)");
    const float c[3] = {-1, NAN, 5};
    ok(argmax_f32(c, 3) == 2, "argmax [-1,nan,5] = 2");
    const float d[2] = {NAN, NAN};
    ok(argmax_f32(d, 2) == -1 && argmax_f32(a, 0) == -1, "argmax of all-NaN or empty = -1");
    const float e[3] = {-INFINITY, -INFINITY, -INFINITY};
    ok(argmax_f32(e, 3) == 0, "argmax [-inf,-inf,-inf] = 0");
    const float f[3] = {1, INFINITY, INFINITY};
    ok(argmax_f32(f, 3) == 1, "argmax [1,inf,inf] = 1");
}

static void test_compare_rows(void) {
    /* 3 positions x 3: pos 0 exact; pos 1 max_rel 1/4, same argmax; pos 2 has a NaN and a different argmax */
    const float got[9] = {5, 1, 0, 1, 2, 3, NAN, 5, 0};
    const float ref[9] = {5, 1, 0, 1, 2, 4, 0, 0, 9};
    compare_stats s;
    compare_rows(got, ref, 3, 3, 0.1, &s);
    ok(s.n_pos == 3 && isinf(s.worst_max_rel) && s.worst_max_rel_pos == 2 && isinf(s.worst_rms_rel) &&
           s.worst_rms_rel_pos == 2,
       "compare_rows: worst max_rel/rms_rel is +Inf at the NaN position 2");
    ok(s.n_out_of_tol == 2, "compare_rows: 2 of 3 positions above tol 0.1 (got %" PRId64 ")", s.n_out_of_tol);
    ok(s.argmax_agree == 2 && s.first_argmax_diff == 2, "compare_rows: argmax agrees at 2, first difference at 2 (got %" PRId64 ", %" PRId64 ")",
       s.argmax_agree, s.first_argmax_diff);
    ok(s.n_nonfinite == 1, "compare_rows: 1 non-finite element (got %" PRId64 ")", s.n_nonfinite);

    /* finite: per-position max_rel 0.25, 0.5, 0.1; argmax all agree */
    const float g2[6] = {4, 3, 2, 1, 0, 1.1f};
    const float r2[6] = {4, 4, 2, 2, 0, 1};
    /* pos0: |d|max 1, |r|max 4 -> 0.25; pos1: 1/2 = 0.5; pos2: 0.1/1 (f32 1.1 - 1) */
    compare_rows(g2, r2, 3, 2, 0.3, &s);
    ok(s.worst_max_rel == 0.5 && s.worst_max_rel_pos == 1, "compare_rows: worst max_rel 0.5 at position 1 (got %g at %" PRId64 ")",
       s.worst_max_rel, s.worst_max_rel_pos);
    /* rms: pos0 sqrt(1/32), pos1 sqrt(1/8), pos2 0.1/1 -> worst pos1 */
    ok(close_to(s.worst_rms_rel, sqrt(1.0 / 8.0)) && s.worst_rms_rel_pos == 1, "compare_rows: worst rms_rel sqrt(1/8) at position 1");
    ok(s.n_out_of_tol == 1 && s.argmax_agree == 3 && s.first_argmax_diff == -1 && s.n_nonfinite == 0,
       "compare_rows: 1 above tol 0.3, all argmax agree, first diff -1, no non-finite");
    compare_rows(g2, r2, 0, 2, 0.3, &s);
    ok(s.n_pos == 0 && s.worst_max_rel == 0 && s.worst_max_rel_pos == -1 && s.first_argmax_diff == -1,
       "compare_rows: zero positions");
}

static void test_count_unequal(void) {
    const float a[4] = {1, 2, 3, 0.0f}, b[4] = {1, 2, 5, -0.0f};
    ok(count_unequal(a, b, 4, sizeof(float)) == 2, "count_unequal: 3 vs 5 and 0 vs -0 differ bitwise (2)");
    ok(count_unequal(a, a, 4, sizeof(float)) == 0, "count_unequal: a row with itself = 0");
    float n1 = NAN;
    ok(count_unequal(&n1, &n1, 1, sizeof(float)) == 0, "count_unequal: the same NaN bits are equal");
    const uint16_t h1[3] = {1, 2, 3}, h2[3] = {1, 0x8002, 3};
    ok(count_unequal(h1, h2, 3, 2) == 1, "count_unequal: 2-byte elements");
    ok(count_unequal(h1, h2, 0, 2) == 0, "count_unequal: zero elements");
}

int main(void) {
    test_rows();
    test_argmax();
    test_compare_rows();
    test_count_unequal();
    return tap_done();
}
