/*
 * quant.h - scalar formats and block quantisation shared by the engines, the
 * model generator and the tests: f16/bf16 <-> f32, Q4_0 and Q8_0 blocks
 * (ggml layout, BRIEF §2), and row dot products that decode on the fly.
 */
#ifndef KESTREL_QUANT_H
#define KESTREL_QUANT_H

#include <stdint.h>
#include <stddef.h>

#define QK4_0 32
#define QK8_0 32

typedef struct { uint16_t d; uint8_t qs[QK4_0 / 2]; } block_q4_0; /* 18 bytes: w[j] low nibble, w[j+16] high */
typedef struct { uint16_t d; int8_t qs[QK8_0]; } block_q8_0;      /* 34 bytes */

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);   /* round to nearest even, like numpy's astype(float16) */
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);  /* round to nearest even */

/* x: (n,) f32 -> n/32 blocks (n % 32 == 0), ggml's reference quantisers (same as numpy in tools/). */
void quantize_row_q4_0(const float *x, block_q4_0 *y, int64_t n);
void quantize_row_q8_0(const float *x, block_q8_0 *y, int64_t n);

/* Decode a row of n elements of `type` (enum ggml_type) into y: (n,) f32. */
void dequantize_row(uint32_t type, const void *row, float *y, int64_t n);

/* dot(row of `type` with n elements, x (n,) f32) in f32, decoded on the fly. */
float dot_row(uint32_t type, const void *row, const float *x, int64_t n);

#endif
