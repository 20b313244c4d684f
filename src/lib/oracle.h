/*
 * oracle.h - read an oracle dump (docs/formats.md): a GGUF file (optionally
 * .zst-compressed) with general.architecture = "kestrel-oracle", written by
 * tools/export_oracle.py from HF transformers.
 *
 * Metadata keys: kestrel.oracle.version (u32, 1), kestrel.oracle.n_prompts,
 * kestrel.oracle.n_layers, kestrel.oracle.n_embd, kestrel.oracle.n_vocab (u32),
 * provenance strings kestrel.oracle.{transformers_version, torch_version, dtype,
 * config, seed, hf_model_sha256, created_at}.
 * Tensors for prompt i (ggml ne order, so {V, T} is row-major (T, V)):
 *   p{i}.tokens          I32 {T}
 *   p{i}.logits          F32 {V, T}   teacher-forced logits, row t predicts token t+1
 *   p{i}.h.{l}           F32 {D, T}   residual stream after decoder layer l, l = 0..L-1
 *   p{i}.hfinal          F32 {D, T}   after the final norm
 *   p{i}.greedy.tokens   I32 {N}      greedy continuation after the prompt (N may be 0: tensors absent)
 *   p{i}.greedy.logits   F32 {V, N}   row j = logits whose argmax is greedy token j (row 0 = last prompt row)
 */
#ifndef KESTREL_ORACLE_H
#define KESTREL_ORACLE_H

#include <stddef.h>
#include <stdint.h>
#include "gguf.h"

typedef struct oracle_prompt {
    int32_t n_tokens;             /* T */
    const int32_t *tokens;        /* (T,) */
    const float *logits;          /* (T, V) */
    const float **hidden;         /* (L,) pointers, each (T, D) */
    const float *hfinal;          /* (T, D) */
    int32_t n_greedy;             /* N */
    const int32_t *greedy_tokens; /* (N,) or NULL */
    const float *greedy_logits;   /* (N, V) or NULL */
} oracle_prompt;

typedef struct oracle {
    gguf_file *file;
    int32_t n_prompts, n_layers, n_embd, n_vocab;
    oracle_prompt *prompts; /* (n_prompts,) */
} oracle;

/* Validates every tensor's presence, type and shape; errors name file and tensor/key. */
int oracle_open(const char *path, oracle **out, char *err, size_t err_len);
void oracle_close(oracle *o);

#endif
