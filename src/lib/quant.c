/*
 * quant.c - f16/bf16 <-> f32 and ggml's Q4_0 / Q8_0 blocks (see quant.h).
 *
 * The quantisers follow ggml's reference ones (ggml-quants.c
 * quantize_row_q4_0_ref / quantize_row_q8_0_ref) step for step, including the
 * multiply by 1/d rather than a divide, so files we write are byte-identical
 * to llama.cpp's. dot_row is the CPU engine's inner loop: plain C that the
 * compiler vectorises (16 independent f32 partial sums), f32 accumulation.
 *
 * Not here: SIMD, other ggml block types.
 */
#include "quant.h"

#include <math.h>
#include <string.h>

#include "gguf.h"

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- f16 ---- */

float f16_to_f32(uint16_t h) {
    /* Branch-free, so loops over it vectorise. Normals, inf and nan: move exponent and mantissa
     * into f32 position with the exponent rebiased by +224 (mod 256), then scale by 2^-112; that
     * lands normals exactly and leaves exponent 31 at 255 (inf/nan). Subnormals m * 2^-24: put m
     * into the mantissa of 0.5 (2^-1 + m * 2^-24) and subtract 0.5 exactly. */
    const uint32_t w = (uint32_t)h << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w; /* exponent and mantissa at the top, sign shifted out */
    const float normalized = bits_f32((two_w >> 4) + (0xe0u << 23)) * 0x1p-112f;
    const float denormalized = bits_f32((two_w >> 17) | (126u << 23)) - 0.5f;
    const uint32_t mag = two_w < (1u << 27) ? f32_bits(denormalized) : f32_bits(normalized);
    return bits_f32(sign | mag);
}

uint16_t f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) {
        if (x == 0x7f800000u) return sign | 0x7c00; /* inf */
        uint32_t payload = (x & 0x7fffffu) >> 13;   /* nan: keep the top payload bits, like numpy */
        return (uint16_t)(sign | 0x7c00 | (payload ? payload : 1));
    }
    if (x >= 0x477ff000u) return sign | 0x7c00; /* >= 65520 rounds to inf */
    if (x >= 0x38800000u) {                      /* normal f16: >= 2^-14 */
        uint32_t h = (x >> 13) - (112u << 10);   /* rebias exponent, keep 10 mantissa bits */
        uint32_t rem = x & 0x1fff;
        if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* carry may bump the exponent: still right */
        return (uint16_t)(sign | h);
    }
    if (x <= 0x33000000u) return sign; /* <= 2^-25 (the tie rounds to even 0) */
    /* subnormal f16: value = r * 2^-24 */
    uint32_t e = x >> 23;
    uint32_t m = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* 14..24 */
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

/* ---- bf16 ---- */

float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* nan stays nan (quiet) */
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- quantisers (ggml reference) ---- */

void quantize_row_q4_0(const float *x, block_q4_0 *y, int64_t n) {
    /* x: (n,), y: (n/32,) */
    int64_t nb = n / QK4_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * QK4_0;
        float amax = 0.0f, max = 0.0f; /* the element of largest magnitude, with its sign */
        for (int j = 0; j < QK4_0; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_f16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const float x0 = xb[j] * id;
            const float x1 = xb[j + QK4_0 / 2] * id;
            int8_t q0 = (int8_t)(x0 + 8.5f), q1 = (int8_t)(x1 + 8.5f); /* truncation, as ggml */
            uint8_t v0 = (uint8_t)(q0 < 15 ? q0 : 15), v1 = (uint8_t)(q1 < 15 ? q1 : 15);
            y[i].qs[j] = (uint8_t)(v0 | (v1 << 4));
        }
    }
}

void quantize_row_q8_0(const float *x, block_q8_0 *y, int64_t n) {
    /* x: (n,), y: (n/32,) */
    int64_t nb = n / QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(xb[j]));
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_f16(d);
        for (int j = 0; j < QK8_0; j++) y[i].qs[j] = (int8_t)roundf(xb[j] * id);
    }
}

/* ---- decoding ---- */

void dequantize_row(uint32_t type, const void *row, float *y, int64_t n) {
    /* row: n elements of `type`, y: (n,) */
    switch (type) {
    case GGML_TYPE_F32:
        memcpy(y, row, (size_t)n * sizeof(float));
        return;
    case GGML_TYPE_F16: {
        const uint16_t *h = row;
        for (int64_t i = 0; i < n; i++) y[i] = f16_to_f32(h[i]);
        return;
    }
    case GGML_TYPE_BF16: {
        const uint16_t *h = row;
        for (int64_t i = 0; i < n; i++) y[i] = bf16_to_f32(h[i]);
        return;
    }
    case GGML_TYPE_Q4_0: {
        const block_q4_0 *b = row;
        for (int64_t i = 0; i < n / QK4_0; i++, y += QK4_0) {
            const float d = f16_to_f32(b[i].d);
            for (int j = 0; j < QK4_0 / 2; j++) {
                y[j] = (float)((b[i].qs[j] & 0x0f) - 8) * d;
                y[j + QK4_0 / 2] = (float)((b[i].qs[j] >> 4) - 8) * d;
            }
        }
        return;
    }
    case GGML_TYPE_Q8_0: {
        const block_q8_0 *b = row;
        for (int64_t i = 0; i < n / QK8_0; i++, y += QK8_0) {
            const float d = f16_to_f32(b[i].d);
            for (int j = 0; j < QK8_0; j++) y[j] = (float)b[i].qs[j] * d;
        }
        return;
    }
    default: /* not a float type: make misuse loud */
        for (int64_t i = 0; i < n; i++) y[i] = NAN;
        return;
    }
}

/* Sum of the DOT_LANES partial sums, pairwise. acc: (DOT_LANES,) */
#define DOT_LANES 16
static float sum_lanes(const float *acc) {
    float s8[8];
    for (int j = 0; j < 8; j++) s8[j] = acc[j] + acc[j + 8];
    for (int j = 0; j < 4; j++) s8[j] += s8[j + 4];
    return (s8[0] + s8[2]) + (s8[1] + s8[3]);
}

/* Summation order (the reference's, stated so a twin can reproduce it): DOT_LANES = 16 independent
 * f32 partial sums, added pairwise at the end (sum_lanes). f32/bf16/f16: lane j takes w[i] x[i] for
 * every i = j mod 16. q4_0/q8_0: lane j takes, for each block, d * (w[j] x[j] + w[j+16] x[j+16])
 * with the integer codes as w. The lanes do not depend on each other, so the compiler vectorises the
 * inner loops (q4_0/q8_0 about 3x faster than one running sum, measured on this AVX2 machine). */
float dot_row(uint32_t type, const void *row, const float *x, int64_t n) {
    /* row: n elements of `type`, x: (n,) */
    float acc[DOT_LANES] = {0};
    switch (type) {
    case GGML_TYPE_F32:
    case GGML_TYPE_BF16: {
        int64_t i = 0;
        if (type == GGML_TYPE_F32) {
            const float *w = row;
            for (; i + DOT_LANES <= n; i += DOT_LANES)
                for (int j = 0; j < DOT_LANES; j++) acc[j] += w[i + j] * x[i + j];
            for (; i < n; i++) acc[i % DOT_LANES] += w[i] * x[i];
        } else {
            const uint16_t *w = row;
            for (; i + DOT_LANES <= n; i += DOT_LANES)
                for (int j = 0; j < DOT_LANES; j++) acc[j] += bf16_to_f32(w[i + j]) * x[i + j];
            for (; i < n; i++) acc[i % DOT_LANES] += bf16_to_f32(w[i]) * x[i];
        }
        return sum_lanes(acc);
    }
    case GGML_TYPE_F16: { /* the f16 decode branches, so this loop stays scalar; same order as f32 */
        const uint16_t *w = row;
        int64_t i = 0;
        for (; i + DOT_LANES <= n; i += DOT_LANES)
            for (int j = 0; j < DOT_LANES; j++) acc[j] += f16_to_f32(w[i + j]) * x[i + j];
        for (; i < n; i++) acc[i % DOT_LANES] += f16_to_f32(w[i]) * x[i];
        return sum_lanes(acc);
    }
    case GGML_TYPE_Q4_0: {
        const block_q4_0 *b = row;
        for (int64_t i = 0; i < n / QK4_0; i++, x += QK4_0) {
            const float d = f16_to_f32(b[i].d);
            for (int j = 0; j < QK4_0 / 2; j++)
                acc[j] += d * ((float)((b[i].qs[j] & 0x0f) - 8) * x[j] + (float)((b[i].qs[j] >> 4) - 8) * x[j + QK4_0 / 2]);
        }
        return sum_lanes(acc);
    }
    case GGML_TYPE_Q8_0: {
        const block_q8_0 *b = row;
        for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
            const float d = f16_to_f32(b[i].d);
            for (int j = 0; j < QK8_0 / 2; j++)
                acc[j] += d * ((float)b[i].qs[j] * x[j] + (float)b[i].qs[j + QK8_0 / 2] * x[j + QK8_0 / 2]);
        }
        return sum_lanes(acc);
    }
    default:
        return NAN;
    }
}
