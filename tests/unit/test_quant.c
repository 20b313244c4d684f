/*
 * test_quant.c - TAP tests of src/lib/quant.c.
 *
 * Expected values are worked out by hand in the comments (f16/bf16 bit
 * patterns, ties-to-even cases, q4_0/q8_0 blocks with known scales and
 * codes). Where the compiler has _Float16 (gcc >= 12 on x86-64), f32_to_f16 is
 * also checked against the compiler's own conversion on every f16 value, every
 * rounding midpoint and a few million random f32 bit patterns. The q4_0/q8_0
 * fixtures made by tools/hf2gguf.py are re-quantised from their f32 twins and
 * must match byte for byte.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "quant.h"
#include "tap.h"


static float fbits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t bitsf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) { /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}
static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)((next_u64() >> 40) * (1.0 / 16777216.0)); }

/* ---- f16 ---- */
static void test_f16(void) {
    static const struct { uint16_t h; float f; const char *what; } dec[] = {
        {0x3c00, 1.0f, "1"},
        {0xc000, -2.0f, "-2"},
        {0x3555, 0.333251953125f, "0x3555 = 1365/4096"},
        {0x7bff, 65504.0f, "largest normal 65504"},
        {0x0400, 6.103515625e-05f, "smallest normal 2^-14"},
        {0x0001, 5.9604644775390625e-08f, "smallest subnormal 2^-24"},
        {0x03ff, 6.097555160522461e-05f, "largest subnormal 1023 * 2^-24"},
        {0x8001, -5.9604644775390625e-08f, "negative subnormal"},
        {0x0000, 0.0f, "+0"},
    };
    for (size_t i = 0; i < sizeof(dec) / sizeof(dec[0]); i++) {
        float got = f16_to_f32(dec[i].h);
        ok(bitsf(got) == bitsf(dec[i].f), "f16_to_f32(0x%04x) = %.10g (%s), got %.10g", dec[i].h, (double)dec[i].f,
           dec[i].what, (double)got);
    }
    ok(bitsf(f16_to_f32(0x8000)) == 0x80000000u, "f16_to_f32(0x8000) = -0");
    ok(f16_to_f32(0x7c00) == INFINITY && f16_to_f32(0xfc00) == -INFINITY, "f16_to_f32: +-inf");
    ok(isnan(f16_to_f32(0x7e00)) && isnan(f16_to_f32(0x7c01)) && isnan(f16_to_f32(0xfe00)), "f16_to_f32: nan");

    static const struct { float f; uint16_t h; const char *what; } enc[] = {
        {1.0f, 0x3c00, "1"},
        {0.1f, 0x2e66, "0.1 (numpy: 0x2e66)"},
        {-2.0f, 0xc000, "-2"},
        {65504.0f, 0x7bff, "65504"},
        {65519.99f, 0x7bff, "just below the 65520 midpoint stays 65504"},
        {65520.0f, 0x7c00, "65520: tie between 65504 (odd) and 2^16 -> inf"},
        {1e6f, 0x7c00, "1e6 overflows to inf"},
        {1.0f + 0x1p-11f, 0x3c00, "1 + 2^-11: tie, rounds to even 0x3c00"},
        {1.0f + 3 * 0x1p-11f, 0x3c02, "1 + 3*2^-11: tie, rounds to even 0x3c02"},
        {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01, "just above a tie rounds up"},
        {0x1p-14f, 0x0400, "2^-14: smallest normal"},
        {0x1p-24f, 0x0001, "2^-24: smallest subnormal"},
        {0x1p-25f, 0x0000, "2^-25: tie between 0 and 2^-24, rounds to even 0"},
        {0x1.000002p-25f, 0x0001, "just above 2^-25 rounds up to 2^-24"},
        {3 * 0x1p-25f, 0x0002, "3*2^-25: tie between 1 and 2 units, rounds to even 2"},
        {5 * 0x1p-25f, 0x0002, "5*2^-25: tie between 2 and 3 units, rounds to even 2"},
        {1e-8f, 0x0000, "1e-8 underflows to 0"},
        {0x1.ff8p-15f, 0x03ff, "1023 * 2^-24: largest subnormal"},
        {0x1.ffcp-15f, 0x0400, "1023.5 * 2^-24: tie, rounds to even 0x0400 (smallest normal)"},
        {0x1.ff4p-15f, 0x03fe, "1022.5 * 2^-24: tie, rounds to even 0x03fe"},
        {-0.0f, 0x8000, "-0 keeps its sign"},
    };
    for (size_t i = 0; i < sizeof(enc) / sizeof(enc[0]); i++) {
        uint16_t got = f32_to_f16(enc[i].f);
        ok(got == enc[i].h, "f32_to_f16(%.10g) = 0x%04x (%s), got 0x%04x", (double)enc[i].f, enc[i].h, enc[i].what, got);
    }
    ok(f32_to_f16(INFINITY) == 0x7c00 && f32_to_f16(-INFINITY) == 0xfc00, "f32_to_f16: +-inf");
    uint16_t hn = f32_to_f16(NAN), hn2 = f32_to_f16(fbits(0x7f800001u));
    ok((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0 && (hn2 & 0x7c00) == 0x7c00 && (hn2 & 0x3ff) != 0,
       "f32_to_f16: nan stays nan, also with only low payload bits (0x%04x, 0x%04x)", hn, hn2);

    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* nan */
        if (f32_to_f16(f16_to_f32((uint16_t)h)) != h) bad++;
    }
    ok(bad == 0, "f16 -> f32 -> f16 is the identity on all 63488 non-nan values (%d differ)", bad);

#ifdef __FLT16_MAX__
    /* independent reference: the compiler's f32 -> _Float16 conversion (round to nearest even) */
    int64_t n_bad = 0, n_checked = 0;
    uint32_t first_bad = 0;
    for (uint64_t i = 0; i < 4000000 + 2 * 0x10000; i++) {
        uint32_t u;
        if (i < 0x10000) { /* midpoints between neighbouring f16 values, and just beside them */
            float a = f16_to_f32((uint16_t)i), b = f16_to_f32((uint16_t)(i + 1));
            if (!isfinite(a) || !isfinite(b) || (i & 0x7fff) == 0x7fff) continue;
            float mid = (float)(((double)a + (double)b) / 2);
            u = bitsf(mid) + (uint32_t)(next_u64() % 3) - 1;
        } else if (i < 2 * 0x10000) {
            u = bitsf(f16_to_f32((uint16_t)(i - 0x10000)));
        } else {
            u = (uint32_t)next_u64();
        }
        float f = fbits(u);
        if (isnan(f)) continue;
        _Float16 ref = (_Float16)f;
        uint16_t rh;
        memcpy(&rh, &ref, 2);
        n_checked++;
        if (f32_to_f16(f) != rh && n_bad++ == 0) first_bad = u;
    }
    ok(n_bad == 0, "f32_to_f16 matches the compiler's _Float16 conversion on %" PRId64 " values (%" PRId64 " differ, first 0x%08x)",
       n_checked, n_bad, first_bad);
#else
    ok(1, "# SKIP no _Float16 in this compiler");
#endif
}

/* ---- bf16 ---- */
static void test_bf16(void) {
    ok(bf16_to_f32(0x3f80) == 1.0f && bf16_to_f32(0xc040) == -3.0f && bf16_to_f32(0x0001) == 0x1p-133f,
       "bf16_to_f32: 1, -3, smallest subnormal 2^-133");
    ok(f32_to_bf16(1.0f) == 0x3f80 && f32_to_bf16(-3.0f) == 0xc040, "f32_to_bf16: exact values");
    ok(f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80, "f32_to_bf16: 1 + 2^-8 is a tie, rounds to even 0x3f80");
    ok(f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82, "f32_to_bf16: 1 + 3*2^-8 is a tie, rounds to even 0x3f82");
    ok(f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81, "f32_to_bf16: just above a tie rounds up");
    ok(f32_to_bf16(0.1f) == 0x3dcd, "f32_to_bf16(0.1) = 0x3dcd (0x3dcccccd rounds up)");
    ok(f32_to_bf16(fbits(0x7f7fffffu)) == 0x7f80, "f32_to_bf16(FLT_MAX) rounds to inf");
    ok(f32_to_bf16(INFINITY) == 0x7f80 && f32_to_bf16(-INFINITY) == 0xff80, "f32_to_bf16: +-inf");
    uint16_t n1 = f32_to_bf16(NAN), n2 = f32_to_bf16(fbits(0x7f800001u)), n3 = f32_to_bf16(fbits(0xffffffffu));
    ok(isnan(bf16_to_f32(n1)) && isnan(bf16_to_f32(n2)) && isnan(bf16_to_f32(n3)),
       "f32_to_bf16: nan stays nan, even with only low payload bits (0x%04x 0x%04x 0x%04x)", n1, n2, n3);
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;
        if (f32_to_bf16(bf16_to_f32((uint16_t)h)) != h) bad++;
    }
    ok(bad == 0, "bf16 -> f32 -> bf16 is the identity on all non-nan values (%d differ)", bad);
}

/* ---- block decoding of hand-built blocks ---- */
static void test_decode(void) {
    /* q4_0, d = 0.5 (f16 0x3800); byte j = (15 - j) << 4 | j:
     *   w[j] = (j - 8) * 0.5, w[j + 16] = (15 - j - 8) * 0.5 = (7 - j) * 0.5 */
    block_q4_0 b4;
    b4.d = 0x3800;
    for (int j = 0; j < 16; j++) b4.qs[j] = (uint8_t)(((15 - j) << 4) | j);
    float y[32];
    dequantize_row(GGML_TYPE_Q4_0, &b4, y, 32);
    int good = y[0] == -4.0f && y[8] == 0.0f && y[15] == 3.5f && y[16] == 3.5f && y[31] == -4.0f;
    for (int j = 0; j < 16; j++) good = good && y[j] == (float)(j - 8) * 0.5f && y[j + 16] == (float)(7 - j) * 0.5f;
    ok(good, "q4_0 decode: d=0.5, nibbles j | (15-j)<<4 -> w[0]=-4, w[15]=3.5, w[16]=3.5, w[31]=-4");

    /* q8_0, d = 0.25 (0x3400); qs[j] = j - 16, except qs[0] = -128, qs[31] = 127 */
    block_q8_0 b8;
    b8.d = 0x3400;
    for (int j = 0; j < 32; j++) b8.qs[j] = (int8_t)(j - 16);
    b8.qs[0] = -128;
    b8.qs[31] = 127;
    dequantize_row(GGML_TYPE_Q8_0, &b8, y, 32);
    good = y[0] == -32.0f && y[31] == 31.75f && y[16] == 0.0f && y[17] == 0.25f && y[1] == -3.75f;
    ok(good, "q8_0 decode: d=0.25 -> -128 -> -32, 127 -> 31.75, 1 -> 0.25, -15 -> -3.75");

    uint16_t h[3] = {0x3c00, 0xc000, 0x3555};
    dequantize_row(GGML_TYPE_F16, h, y, 3);
    ok(y[0] == 1.0f && y[1] == -2.0f && y[2] == 0.333251953125f, "f16 row decode");
    uint16_t bh[2] = {0x3f80, 0xc040};
    dequantize_row(GGML_TYPE_BF16, bh, y, 2);
    ok(y[0] == 1.0f && y[1] == -3.0f, "bf16 row decode");
    float fx[2] = {1.5f, -0.25f};
    dequantize_row(GGML_TYPE_F32, fx, y, 2);
    ok(y[0] == 1.5f && y[1] == -0.25f, "f32 row decode is a copy");
    int32_t iv[2] = {1, 2};
    dequantize_row(GGML_TYPE_I32, iv, y, 2);
    ok(isnan(y[0]) && isnan(y[1]) && isnan(dot_row(GGML_TYPE_I32, iv, fx, 2)), "i32 (not a float type): decode and dot give NaN");
}

/* ---- quantisers, hand-computed ---- */
static void test_quantize(void) {
    /* x[j] = j - 8 and x[16 + j] = 7 - j: max |x| is x[0] = -8, d = -8 / -8 = 1, q = x + 8 exactly */
    float x[32];
    for (int j = 0; j < 16; j++) {
        x[j] = (float)(j - 8);
        x[16 + j] = (float)(7 - j);
    }
    block_q4_0 b;
    quantize_row_q4_0(x, &b, 32);
    int good = b.d == 0x3c00;
    for (int j = 0; j < 16; j++) good = good && b.qs[j] == (uint8_t)(j | ((15 - j) << 4));
    ok(good, "q4_0 quantise: integers -8..7 with d=1 -> codes x+8");

    /* max |x| is +4 (first of equal magnitudes wins): d = 4 / -8 = -0.5 (0xb800), id = -2;
     * x=4 -> 0.5 -> 0; x=-3.5 -> 15.5 -> 15; x=0 -> 8; x=1 -> 6.5 -> 6; x=-4 -> 16.5 -> 16 -> clamped 15;
     * x=0.26 -> 7.98 -> 7; x=-0.26 -> 9.02 -> 9 */
    memset(x, 0, sizeof(x));
    x[0] = 4.0f; x[1] = -3.5f; x[3] = 1.0f; x[16] = -4.0f; x[17] = 0.26f; x[18] = -0.26f;
    quantize_row_q4_0(x, &b, 32);
    ok(b.d == 0xb800 && b.qs[0] == (0 | 15 << 4) && b.qs[1] == (15 | 7 << 4) && b.qs[2] == (8 | 9 << 4) &&
           b.qs[3] == (6 | 8 << 4) && b.qs[4] == 0x88 && b.qs[15] == 0x88,
       "q4_0 quantise: negative d, ggml truncation of x*id+8.5, clamp to 15 (d=0x%04x qs0..3=%02x %02x %02x %02x)", b.d,
       b.qs[0], b.qs[1], b.qs[2], b.qs[3]);
    memset(x, 0, sizeof(x));
    quantize_row_q4_0(x, &b, 32);
    good = b.d == 0x8000;
    for (int j = 0; j < 16; j++) good = good && b.qs[j] == 0x88;
    ok(good, "q4_0 quantise: all-zero block -> d = 0/-8 = -0 (0x8000, as ggml), every code 8 (d=0x%04x)", b.d);

    /* q8_0: amax 127 -> d = 1, q = roundf(x): 63.5 -> 64, -0.5 -> -1 (half away from zero), 0.49 -> 0 */
    memset(x, 0, sizeof(x));
    x[0] = 127; x[1] = -127; x[2] = 63.5f; x[3] = -0.5f; x[4] = 0.49f;
    block_q8_0 c;
    quantize_row_q8_0(x, &c, 32);
    ok(c.d == 0x3c00 && c.qs[0] == 127 && c.qs[1] == -127 && c.qs[2] == 64 && c.qs[3] == -1 && c.qs[4] == 0 && c.qs[5] == 0,
       "q8_0 quantise: d=1, roundf half away from zero");
    /* amax 2.54 -> d = 0.02, f16(0.02) = 0x251f */
    memset(x, 0, sizeof(x));
    x[7] = -2.54f; x[8] = 1.0f;
    quantize_row_q8_0(x, &c, 32);
    ok(c.d == 0x251f && c.qs[7] == -127 && c.qs[8] == 50 && c.qs[0] == 0, "q8_0 quantise: d = 2.54/127 (f16 0x251f), 1.0 -> 50");
}

/* ---- quantise -> dequantise error bound, dot_row vs decode + naive dot ---- */
static void test_roundtrip_and_dot(void) {
    enum { N = 1024 };
    static float x[N], v[N], y[N];
    static block_q4_0 q4[N / 32];
    static block_q8_0 q8[N / 32];
    static uint16_t h16[N], hb16[N];
    for (int i = 0; i < N; i++) {
        x[i] = uniform(-1, 1) * (i % 97 == 0 ? 50.0f : 1.0f);
        v[i] = uniform(-2, 2);
    }
    quantize_row_q4_0(x, q4, N);
    dequantize_row(GGML_TYPE_Q4_0, q4, y, N);
    /* Codes cover x/d in [-8, 7]: rounding costs 0.5 d, except x/d in (7.5, 8] (the side opposite the
     * max-magnitude element), which is clamped to code 15 and costs up to 1 d. The f16 rounding of d
     * adds up to 8 * 2^-11 d. Errors are in units of |d|. */
    double worst4 = 0, worst4_clamped = 0;
    for (int bi = 0; bi < N / 32; bi++) {
        double d = f16_to_f32(q4[bi].d);
        for (int j = 0; j < 32; j++) {
            double e = fabs(x[bi * 32 + j] - y[bi * 32 + j]) / fabs(d);
            if (x[bi * 32 + j] / d > 7.5) {
                if (e > worst4_clamped) worst4_clamped = e;
            } else if (e > worst4) worst4 = e;
        }
    }
    ok(worst4 <= 0.5 + 8.0 / 2048 + 1e-6 && worst4_clamped <= 1.0 + 8.0 / 2048 + 1e-6,
       "q4_0 round trip: error <= (0.5 + 8*2^-11) d, clamped side <= (1 + 8*2^-11) d (worst %.4f d, %.4f d)", worst4,
       worst4_clamped);
    quantize_row_q8_0(x, q8, N);
    dequantize_row(GGML_TYPE_Q8_0, q8, y, N);
    double worst8 = 0;
    for (int bi = 0; bi < N / 32; bi++) {
        double d = fabs(f16_to_f32(q8[bi].d));
        for (int j = 0; j < 32; j++) {
            double e = fabs(x[bi * 32 + j] - y[bi * 32 + j]) / d;
            if (e > worst8) worst8 = e;
        }
    }
    ok(worst8 <= 0.5 + 127.0 / 2048 + 1e-6, "q8_0 round trip: error <= (0.5 + 127*2^-11) d (worst %.4f d)", worst8);
    for (int i = 0; i < N; i++) {
        h16[i] = f32_to_f16(x[i]);
        hb16[i] = f32_to_bf16(x[i]);
    }

    const struct { uint32_t type; const void *row; } rows[] = {
        {GGML_TYPE_F32, x}, {GGML_TYPE_F16, h16}, {GGML_TYPE_BF16, hb16}, {GGML_TYPE_Q4_0, q4}, {GGML_TYPE_Q8_0, q8},
    };
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        dequantize_row(rows[r].type, rows[r].row, y, N);
        double ref = 0, mag = 0;
        for (int i = 0; i < N; i++) {
            ref += (double)y[i] * v[i];
            mag += fabs((double)y[i] * v[i]);
        }
        float got = dot_row(rows[r].type, rows[r].row, v, N);
        double rel = fabs(got - ref) / mag;
        ok(rel < 1e-5, "dot_row %s: matches decode + double dot (|diff| / sum|w*x| = %.2e)", ggml_type_name(rows[r].type), rel);
    }
    /* a short row: one block */
    float got = dot_row(GGML_TYPE_Q4_0, q4, v, 32), ref = 0;
    dequantize_row(GGML_TYPE_Q4_0, q4, y, 32);
    for (int i = 0; i < 32; i++) ref += y[i] * v[i];
    ok(fabsf(got - ref) <= 1e-5f * (1 + fabsf(ref)), "dot_row q4_0 of one block (%g vs %g)", (double)got, (double)ref);
}

/* ---- against the converter: tools/hf2gguf.py's q4_0/q8_0 fixtures must be our quantisers' bytes ---- */
static void test_fixtures(void) {
    const char *src = getenv("top_srcdir");
    static const char *const models[] = {"mini27", "minitied", "minivk"};
    static const char *const types[] = {"q4_0", "q8_0"};
    for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
        for (size_t k = 0; k < 2; k++) {
            char pf[1024], pq[1024], err[1024];
            snprintf(pf, sizeof(pf), "%s/tests/fixtures/%s-f32.gguf", src ? src : ".", models[m]);
            snprintf(pq, sizeof(pq), "%s/tests/fixtures/%s-%s.gguf", src ? src : ".", models[m], types[k]);
            gguf_file *ff = NULL, *fq = NULL;
            if (!src || access(pf, R_OK) != 0 || access(pq, R_OK) != 0) {
                ok(1, "# SKIP %s-%s: fixtures not found (top_srcdir unset or no tests/fixtures)", models[m], types[k]);
                continue;
            }
            if (gguf_open(pf, &ff, err, sizeof(err)) || gguf_open(pq, &fq, err, sizeof(err))) {
                ok(0, "%s-%s: open (%s)", models[m], types[k], err);
                gguf_close(ff);
                continue;
            }
            int n_q = 0, n_same = 0;
            const char *first_diff = NULL;
            for (uint64_t i = 0; i < fq->n_tensors; i++) {
                const gguf_tensor *tq = &fq->tensors[i];
                if (tq->type != GGML_TYPE_Q4_0 && tq->type != GGML_TYPE_Q8_0) continue;
                const gguf_tensor *tf = gguf_find_tensor(ff, tq->name);
                n_q++;
                if (!tf || tf->type != GGML_TYPE_F32 || tf->n_elements != tq->n_elements) {
                    if (!first_diff) first_diff = tq->name;
                    continue;
                }
                void *out = malloc(tq->n_bytes);
                if (tq->type == GGML_TYPE_Q4_0) quantize_row_q4_0(tf->data, out, (int64_t)tf->n_elements);
                else quantize_row_q8_0(tf->data, out, (int64_t)tf->n_elements);
                if (memcmp(out, tq->data, tq->n_bytes) == 0) n_same++;
                else if (!first_diff) first_diff = tq->name;
                free(out);
            }
            ok(n_q > 0 && n_same == n_q, "%s-%s.gguf: our quantiser reproduces all %d %s tensors byte for byte (%d same%s%s)",
               models[m], types[k], n_q, types[k], n_same, first_diff ? ", first difference " : "", first_diff ? first_diff : "");
            gguf_close(ff);
            gguf_close(fq);
        }
    }
}

int main(void) {
    test_f16();
    test_bf16();
    test_decode();
    test_quantize();
    test_roundtrip_and_dot();
    test_fixtures();
    return tap_done();
}
