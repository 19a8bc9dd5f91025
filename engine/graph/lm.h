/*
** lm.h - the transformer language-model family (lm.c): presets, the
** builder, running a batch of token ids, and batches of random tokens or of
** a byte stream.
*/
#ifndef SYSLAB_LM_H
#define SYSLAB_LM_H

#include "model.h"

typedef struct slM_LmSpec {
  char name[16]; /* preset name, or "" */
  int vocab, context, d_model, d_ff, layers, heads;
} slM_LmSpec;

extern const char *const slM_lm_preset_names[]; /* NULL-terminated */
/* fills *out with a preset (tiny, small, medium, large, xl, 2.7B); -1 if unknown */
int slM_lm_preset(const char *name, slM_LmSpec *out);
int slM_lm_check(const slM_LmSpec *s, char *err, size_t errlen);
slM_Graph *slM_lm(const slM_LmSpec *s, uint64_t seed, char *err, size_t errlen);
void slM_lm_spec_of(const slM_Graph *g, slM_LmSpec *s);

/* forward on batch x T token ids (T <= context); targets may be NULL for
** inference. Returns the logits (batch x T x vocab), owned by the graph. */
slM_Tensor *slM_lm_forward(slM_Graph *g, const int32_t *tokens, const int32_t *targets, int batch, int T, int training);
/* the loss of the last forward with targets */
double slM_lm_loss(const slM_Graph *g);

/* uniform random tokens; targets are the tokens shifted by one */
void slM_lm_random_batch(slM_Rng *rng, int vocab, int batch, int T, int32_t *tokens, int32_t *targets);
/* windows of T + 1 bytes at random offsets of a byte stream (n > T) */
void slM_lm_stream_batch(slM_Rng *rng, const unsigned char *bytes, size_t n, int batch, int T, int32_t *tokens,
                         int32_t *targets);

#endif
