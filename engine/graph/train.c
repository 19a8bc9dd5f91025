/*
** train.c - training and evaluation: mini-batches, SGD with momentum and
** AdamW, learning-rate schedules, accuracy and loss.
**
** Each step runs the graph forward in training mode, backward from the
** cross-entropy loss, and updates every parameter that is not frozen. The
** data order comes from the seed alone, so a run repeats exactly. Between
** batches the trainer asks whether to stop, so an interrupt ends training at
** a batch boundary with the model's weights intact.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devices.h"
#include "devslots.h"
#include "kernels/device.h"
#include "kernels/gemm_half.h"
#include "kernels/parallel.h"
#include "memory.h"
#include "op.h"
#include "precision.h"
#include "product.h"
#include "train.h"
#include "trainrun.h"

static double learning_rate(const slM_TrainConfig *c, long step, long total) {
  double lr = c->lr;
  if (c->warmup > 0 && step < c->warmup) return lr * (double)(step + 1) / (double)c->warmup;
  double t = total > c->warmup ? (double)(step - c->warmup) / (double)(total - c->warmup) : 0;
  switch (c->schedule) {
    case SLM_COSINE: return lr * 0.5 * (1 + cos(M_PI * t));
    case SLM_STEP: return lr * (t < 0.5 ? 1 : t < 0.75 ? 0.1 : 0.01);
    default: return lr;
  }
}

/* One update, float32 throughout, split over the cores. Each loop has an
** AVX2 version (eight parameters at a time, the same operations in the same
** order, so the same numbers) chosen at run time; the scalar loop is the
** reference and does the tail. */
typedef struct {
  float *w, *g, *m, *v;
  float lr, wd, b1, b2, ic1, rsc2, eps, momentum;
  int adam;
  uint16_t *half; /* the weight's 16-bit working copy, rewritten from the new values (product.h); or NULL */
  int format;
} Update;

static void update_scalar(const Update *u, size_t i0, size_t i1) {
  float *w = u->w, *g = u->g, *m = u->m, *v = u->v;
  if (!u->adam) {
    for (size_t j = i0; j < i1; j++) {
      m[j] = u->momentum * m[j] + g[j] + u->wd * w[j];
      w[j] -= u->lr * m[j];
    }
    return;
  }
  for (size_t j = i0; j < i1; j++) {
    m[j] = u->b1 * m[j] + (1 - u->b1) * g[j];
    v[j] = u->b2 * v[j] + (1 - u->b2) * g[j] * g[j];
    float step = (m[j] * u->ic1) / (sqrtf(v[j]) * u->rsc2 + u->eps);
    w[j] -= u->lr * (step + u->wd * w[j]);
  }
}

#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx2,fma"))) static size_t adamw_avx2(const Update *u, size_t i0, size_t i1) {
  __m256 b1 = _mm256_set1_ps(u->b1), nb1 = _mm256_set1_ps(1 - u->b1), b2 = _mm256_set1_ps(u->b2);
  __m256 nb2 = _mm256_set1_ps(1 - u->b2), ic1 = _mm256_set1_ps(u->ic1), rsc2 = _mm256_set1_ps(u->rsc2);
  __m256 eps = _mm256_set1_ps(u->eps), lr = _mm256_set1_ps(u->lr), wd = _mm256_set1_ps(u->wd);
  size_t j = i0;
  for (; j + 8 <= i1; j += 8) {
    __m256 g = _mm256_loadu_ps(u->g + j), w = _mm256_loadu_ps(u->w + j);
    __m256 m = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(u->m + j)), _mm256_mul_ps(nb1, g));
    __m256 v = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(u->v + j)), _mm256_mul_ps(_mm256_mul_ps(nb2, g), g));
    __m256 step = _mm256_div_ps(_mm256_mul_ps(m, ic1), _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(v), rsc2), eps));
    w = _mm256_sub_ps(w, _mm256_mul_ps(lr, _mm256_add_ps(step, _mm256_mul_ps(wd, w))));
    _mm256_storeu_ps(u->m + j, m);
    _mm256_storeu_ps(u->v + j, v);
    _mm256_storeu_ps(u->w + j, w);
  }
  return j;
}

__attribute__((target("avx2,fma"))) static size_t sgd_avx2(const Update *u, size_t i0, size_t i1) {
  __m256 mom = _mm256_set1_ps(u->momentum), lr = _mm256_set1_ps(u->lr), wd = _mm256_set1_ps(u->wd);
  size_t j = i0;
  for (; j + 8 <= i1; j += 8) {
    __m256 w = _mm256_loadu_ps(u->w + j);
    __m256 m = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(mom, _mm256_loadu_ps(u->m + j)), _mm256_loadu_ps(u->g + j)),
                             _mm256_mul_ps(wd, w));
    _mm256_storeu_ps(u->m + j, m);
    _mm256_storeu_ps(u->w + j, _mm256_sub_ps(w, _mm256_mul_ps(lr, m)));
  }
  return j;
}
#endif

static void update_range(void *ctx, size_t i0, size_t i1) {
  const Update *u = ctx;
  size_t from = i0;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    i0 = u->adam ? adamw_avx2(u, i0, i1) : sgd_avx2(u, i0, i1);
#endif
  update_scalar(u, i0, i1);
  if (u->half) slK_to_half(u->format, u->w + from, u->half + from, i1 - from); /* while the values are in cache */
}

/* a zeroed optimiser state tensor of a parameter: on the host, and on the device for a model there */
static slM_Tensor *state_like(slM_Graph *g, const slM_Tensor *value) {
  slM_Tensor *t = slM_tensor_like(value);
  slM_mem_retag(t, SLM_MEM_OPTIM);
  char err[200];
  if (g->device != SLM_CPU && !g->fault[0]) {
    t->dev = slK_dev_alloc(t->size * sizeof(float), SLM_MEM_OPTIM, err, sizeof err);
    if (!t->dev || slK_gpu()->zero(t->dev, t->size * sizeof(float), err, sizeof err) != 0)
      snprintf(g->fault, sizeof g->fault, "optimiser state on the GPU: %.200s", err);
  }
  return t;
}

/* On the GPU, one launch updates every parameter (cuda/ops_train.cu), with
** the same arithmetic as update_scalar below. */
static void device_step(slM_Graph *g, const slM_TrainConfig *c, double lr, long step) {
  int cap = 0, count = 0;
  for (int i = 0; i < g->n; i++) cap += g->nodes[i].nparams;
  slG_ParamRef *refs = calloc((size_t)(cap ? cap : 1), sizeof *refs);
  int adam = c->optimizer != SLM_SGD;
  for (int i = 0; i < g->n && refs; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      if (p->frozen || !p->grad || !p->grad->dev) continue;
      if (!p->m) p->m = state_like(g, p->value);
      if (adam && !p->v) p->v = state_like(g, p->value);
      if (g->fault[0]) break;
      refs[count++] =
          (slG_ParamRef){p->value->dev,           p->grad->dev,   p->m->dev,
                         adam ? p->v->dev : NULL, p->value->size, p->value->ndim >= 2 ? (float)c->weight_decay : 0.0f};
    }
  slG_Optimizer o = {adam, lr, c->momentum, 0.9, 0.999, 1e-8f, step};
  char err[200];
  if (!refs) snprintf(g->fault, sizeof g->fault, "out of host memory for the optimiser's records");
  else if (!g->fault[0] && slK_dev_optimizer_step(refs, count, &o, err, sizeof err) != 0)
    snprintf(g->fault, sizeof g->fault, "the optimiser step on the GPU: %.200s", err);
  free(refs);
}

void slM_param_step(slM_Param *p, const slM_TrainConfig *c, double lr, long step) {
  if (p->frozen || !p->grad) return;
  if (!p->m) {
    p->m = slM_tensor_like(p->value);
    slM_mem_retag(p->m, SLM_MEM_OPTIM);
  }
  int adam = c->optimizer != SLM_SGD;
  if (adam && !p->v) {
    p->v = slM_tensor_like(p->value);
    slM_mem_retag(p->v, SLM_MEM_OPTIM);
  }
  double b1 = 0.9, b2 = 0.999;
  /* weight decay on weights, not on biases and norms (the usual choice) */
  Update u = {p->value->data,
              p->grad->data,
              p->m->data,
              adam ? p->v->data : NULL,
              (float)lr,
              p->value->ndim >= 2 ? (float)c->weight_decay : 0.0f,
              (float)b1,
              (float)b2,
              (float)(1.0 / (1 - pow(b1, (double)step + 1))),
              (float)(1.0 / sqrt(1 - pow(b2, (double)step + 1))),
              1e-8f,
              (float)c->momentum,
              adam,
              p->half,
              p->half_format};
  slK_parallel_for(p->value->size, 16384, update_range, &u);
}

void slM_update_param(void *ud, slM_Param *p) {
  const slM_StepUpdate *u = ud;
  slM_param_step(p, u->c, u->lr, u->step);
}

void slM_optimizer_step(slM_Graph *g, const slM_TrainConfig *c, double lr, long step) {
  if (g->device != SLM_CPU) {
    device_step(g, c, lr, step);
    return;
  }
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) slM_param_step(g->nodes[i].params[k], c, lr, step);
  slM_product_weights_written(g);
}

/* Cut short (an interrupt, a stopped pass), it measured only part of the
** items: accuracy and loss are NaN, never a share of the whole. */
int slM_evaluate(slM_Graph *g, const float *x, const uint8_t *y, size_t n, double *accuracy, double *loss) {
  const int B = 256;
  size_t correct = 0, done = 0;
  double total_loss = 0;
  int features = g->features, nonfinite = -1;
  for (size_t start = 0; start < n; start += B) {
    if (sl_interrupted()) break; /* the caller reports it */
    int b = (int)(n - start < (size_t)B ? n - start : (size_t)B);
    slM_Tensor *logits = slM_forward(g, x + start * (size_t)features, y + start, b, 0);
    if (g->stopped) break; /* cut short: the logits are not this batch's */
    int C = logits->shape[1];
    for (int i = 0; i < b; i++) {
      const float *row = logits->data + (size_t)i * C;
      int best = 0;
      float m = row[0];
      for (int c = 1; c < C; c++)
        if (row[c] > m) m = row[c], best = c;
      correct += best == y[start + i];
      double sum = 0;
      for (int c = 0; c < C; c++) sum += exp(row[c] - m);
      total_loss += -(row[y[start + i]] - m - log(sum));
    }
    int overflow = nonfinite < 0 ? slM_fp16_overflow(g) : -1; /* a ReLU may have hidden it from the loss */
    if (overflow >= 0) total_loss = NAN;
    if (nonfinite < 0 && !isfinite(total_loss)) nonfinite = overflow >= 0 ? overflow : slM_first_nonfinite(g);
    done += (size_t)b;
  }
  slM_release_activations(g);
  *accuracy = done == n && n ? (double)correct / (double)n : NAN;
  *loss = done == n && n ? total_loss / (double)n : NAN;
  return nonfinite;
}

/* A batch is gathered from shuffled rows of the training set straight into
** the input node (slM_input_rows), on the thread team: the rows are scattered
** over the whole set, so the gather waits on memory, and two cores wait
** better than one. */
typedef struct {
  const float *from;
  const size_t *order;
  float *to;
  int F;
} Gather;

static void gather_rows(void *ctx, size_t i0, size_t i1) {
  const Gather *t = ctx;
  for (size_t i = i0; i < i1; i++)
    memcpy(t->to + i * (size_t)t->F, t->from + t->order[i] * (size_t)t->F, (size_t)t->F * sizeof *t->to);
}

/* the rows whose largest logit is their label's */
static size_t count_correct(const slM_Tensor *logits, const uint8_t *labels, int b) {
  int C = logits->shape[1];
  size_t correct = 0;
  for (int i = 0; i < b; i++) {
    const float *row = logits->data + (size_t)i * C;
    int best = 0;
    for (int k = 1; k < C; k++)
      if (row[k] > row[best]) best = k;
    correct += best == labels[i];
  }
  return correct;
}

/* one micro-batch of a step split by accumulate.c: its rows gathered, forward and backward */
typedef struct {
  const slM_Dataset *d;
  const size_t *order; /* the step's rows */
  float *bx;
  uint8_t *by;
} Micro;

static double image_micro(void *ud, slM_Graph *g, int lo, int hi, long *correct) {
  Micro *m = ud;
  int b = hi - lo, F = m->d->features;
  float *rows = slM_input_rows(g, b);
  Gather gather = {m->d->train_x, m->order + lo, rows ? rows : m->bx, F};
  slK_parallel_for((size_t)b, 16, gather_rows, &gather);
  for (int i = 0; i < b; i++) m->by[i] = m->d->train_y[m->order[lo + i]];
  slM_Tensor *logits = slM_forward(g, gather.to, m->by, b, 1);
  if (g->stopped) return NAN;
  *correct += (long)count_correct(logits, m->by, b);
  return slM_backward(g, m->by, b);
}

/* Where a run stands, as its checkpoint keeps it: the epoch, the next row
** of its order (the order itself is redrawn from the seed), the global
** step, the epoch's sums so far and the rows of the epochs done. */
typedef struct {
  int epoch, done;
  size_t start, seen, correct;
  long step;
  double loss_sum, seconds, comm;
} Point;

static void put_point(slU_Text *o, const Point *p, const slM_EpochStats *stats) {
  const uint64_t u[] = {(uint64_t)p->epoch, (uint64_t)p->done, p->start, p->seen, p->correct, (uint64_t)p->step};
  for (size_t i = 0; i < 6; i++) slU_put_u64(o, u[i]);
  slU_put_f64(o, p->loss_sum), slU_put_f64(o, p->seconds), slU_put_f64(o, p->comm);
  for (int e = 0; e < p->done; e++) {
    const slM_EpochStats *s = &stats[e];
    const double v[] = {s->epoch,          s->complete,           s->loss,
                        s->train_accuracy, s->test_accuracy,      s->test_loss,
                        s->seconds,        s->samples_per_second, s->comm_seconds};
    for (size_t i = 0; i < 9; i++) slU_put_f64(o, v[i]);
  }
}

static int get_point(const char *bytes, size_t n, Point *p, slM_EpochStats *stats, int epochs) {
  slU_Reader r = {bytes, n, 0, 0};
  uint64_t u[6];
  for (size_t i = 0; i < 6; i++) u[i] = slU_get_u64(&r);
  *p = (Point){(int)u[0], (int)u[1], u[2], u[3], u[4], (long)u[5], slU_get_f64(&r), slU_get_f64(&r), slU_get_f64(&r)};
  if (r.bad || p->done > epochs || p->epoch > epochs || p->done > p->epoch) return -1;
  for (int e = 0; e < p->done; e++) {
    slM_EpochStats *s = &stats[e];
    double v[9];
    for (size_t i = 0; i < 9; i++) v[i] = slU_get_f64(&r);
    *s = (slM_EpochStats){(int)v[0], (int)v[1], 0, v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
  }
  return r.bad ? -1 : 0;
}

/* a run's checkpoint, when there is one: the model as it was then (after
** the seeds were set, so its random state is the checkpoint's) and where
** the loop stood. -1 with the run's err when it cannot be resumed. */
static int resume(slM_Graph *g, const slM_TrainConfig *c, slM_Steps *steps, slM_EpochStats *stats, Point *at) {
  slM_Run *run = c->run;
  char *progress = NULL;
  size_t len = 0;
  int got = slM_ckpt_load(&run->ckpt, g, steps, &progress, &len, run->err, sizeof run->err);
  if (got > 0 && get_point(progress, len, at, stats, c->epochs) != 0)
    got = -1, snprintf(run->err, sizeof run->err, "cannot resume from '%s': its progress is damaged", run->ckpt.path);
  free(progress);
  run->resumed = got > 0;
  return got < 0 ? -1 : 0;
}

/* a checkpoint after a step: every rank calls it, rank 0 writes */
static int checkpoint(slM_Graph *g, const slM_TrainConfig *c, slM_Steps *steps, const Point *p,
                      const slM_EpochStats *stats) {
  slU_Text progress = {0};
  put_point(&progress, p, stats);
  int rc = slM_ckpt_save(&c->run->ckpt, g, steps, &progress, c->run->err, sizeof c->run->err);
  free(progress.s);
  return rc;
}

int slM_train(slM_Graph *g, const slM_Dataset *d, const slM_TrainConfig *c, const slM_TrainHooks *hooks,
              slM_EpochStats *stats) {
  slM_Run *run = c->run;
  slM_Steps *steps = NULL;
  Point at = {0};
  if (run && run->use_split && !(steps = slM_steps_new(g, &run->split, run->err, sizeof run->err))) return 0;
  size_t n = d->ntrain;
  int F = d->features, B = c->batch;
  size_t *order = malloc(n * sizeof *order);
  float *bx = malloc((size_t)B * (size_t)F * sizeof *bx);
  uint8_t *by = malloc((size_t)B);
  for (size_t i = 0; i < n; i++) order[i] = i;
  slM_Rng rng;
  slM_rng_seed(&rng, c->seed);
  slM_rng_seed(&g->rng, c->seed ^ 0xD50Full);
  g->fault[0] = '\0';
  g->stop = hooks ? hooks->stop : NULL;
  g->stop_ud = hooks ? hooks->ud : NULL;
  if (run && run->use_ckpt && resume(g, c, steps, stats, &at) != 0) at.epoch = c->epochs; /* nothing runs */
  long steps_per_epoch = (long)((n + (size_t)B - 1) / (size_t)B), step = at.step, total = steps_per_epoch * c->epochs;
  int done = at.done, stopped = 0;
  double comm = 0;
  for (int e = 0; e < c->epochs && !stopped; e++) {
    int resuming = e == at.epoch; /* a resumed run: the epoch its checkpoint was in */
    double t0 = slU_now() - (resuming ? at.seconds : 0), loss_sum = resuming ? at.loss_sum : 0;
    size_t seen = resuming ? at.seen : 0, correct = resuming ? at.correct : 0;
    comm = resuming ? at.comm : 0;
    stats[done].diverged = 0, stats[done].nonfinite_node = -1;
    for (size_t i = n; i > 1; i--) { /* Fisher-Yates */
      size_t j = (size_t)(slM_rng_next(&rng) % i), tmp = order[i - 1];
      order[i - 1] = order[j];
      order[j] = tmp;
    }
    if (e < at.epoch) continue; /* done before the checkpoint: only its order is drawn again */
    for (size_t start = resuming ? at.start : 0; start < n; start += (size_t)B, step++) {
      int stop = hooks && hooks->stop && hooks->stop(hooks->ud);
      if (stop && !slM_steps_group(steps)) { /* in a group the others must hear of it first */
        stopped = 1;
        break;
      }
      int b = (int)(n - start < (size_t)B ? n - start : (size_t)B);
      if (steps) {
        Micro m = {d, order + start, bx, by};
        slM_StepUpdate u = {c, learning_rate(c, step, total), step};
        slM_StepWork work = {image_micro, &m, slM_update_param, &u};
        slM_StepStats st;
        if (slM_steps_run(steps, b, stop, &work, &st, run->err, sizeof run->err) != 0 || st.stopped) {
          stopped = 1;
          break;
        }
        correct += (size_t)st.correct;
        seen += (size_t)st.rows;
        comm += st.comm_seconds;
        if (st.nonfinite) { /* diverged: no rank updated */
          stats[done].diverged = step - steps_per_epoch * e + 1;
          loss_sum = st.loss_sum;
          stopped = 1;
          break;
        }
        loss_sum += st.loss_sum;
        Point p = {e, done, start + (size_t)b, seen, correct, step + 1, loss_sum, slU_now() - t0, comm};
        if (run->use_ckpt && (step + 1) % run->ckpt.every == 0 && checkpoint(g, c, steps, &p, stats) != 0) {
          stopped = 1;
          break;
        }
        if (hooks && hooks->progress)
          hooks->progress(hooks->ud, e, (double)(start + (size_t)b) / (double)n, loss_sum / (double)seen);
        continue;
      }
      float *rows = slM_input_rows(g, b);
      Gather gather = {d->train_x, order + start, rows ? rows : bx, F};
      slK_parallel_for((size_t)b, 16, gather_rows, &gather);
      for (int i = 0; i < b; i++) by[i] = d->train_y[order[start + i]];
      slM_Tensor *logits = slM_forward(g, gather.to, by, b, 1);
      if (g->stopped) { /* inside the batch: its update is skipped, the weights are the last step's */
        stopped = 1;
        break;
      }
      /* read before the backward pass: a planned graph's gradients reuse the outputs' places */
      int overflow = slM_fp16_overflow(g);
      size_t batch_correct = count_correct(logits, by, b); /* counted once the step is whole */
      slM_zero_grads(g);
      double loss = slM_backward(g, by, b);
      if (g->stopped) {
        stopped = 1;
        break;
      }
      seen += (size_t)b;
      correct += batch_correct;
      if (!isfinite(loss) || overflow >= 0) { /* diverged: stop before the update spreads it into every weight */
        stats[done].diverged = step - steps_per_epoch * e + 1;
        stats[done].nonfinite_node = overflow >= 0 ? overflow : slM_first_nonfinite(g);
        loss_sum = loss;
        stopped = 1;
        break;
      }
      loss_sum += loss * b;
      slM_optimizer_step(g, c, learning_rate(c, step, total), step);
      if (g->fault[0]) { /* the device failed in the update: the caller reports why */
        stopped = 1;
        break;
      }
      Point p = {e, done, start + (size_t)b, seen, correct, step + 1, loss_sum, slU_now() - t0, 0};
      if (run && run->use_ckpt && (step + 1) % run->ckpt.every == 0 && checkpoint(g, c, NULL, &p, stats) != 0) {
        stopped = 1;
        break;
      }
      if (hooks && hooks->progress)
        hooks->progress(hooks->ud, e, (double)(start + (size_t)b) / (double)n, loss_sum / (double)seen);
    }
    if (seen == 0) break;
    slM_EpochStats *s = &stats[done];
    s->epoch = e + 1;
    s->loss = loss_sum / (double)seen;
    s->train_accuracy = (double)correct / (double)seen;
    s->complete = !stopped;
    /* the time of the training steps alone: evaluation is not training speed */
    s->seconds = slU_now() - t0;
    s->samples_per_second = (double)seen / s->seconds;
    s->comm_seconds = comm;
    /* an epoch cut short is shown with what it measured: its training batches, no test */
    if (!s->complete) s->test_accuracy = s->test_loss = NAN;
    else slM_evaluate(g, d->test_x, d->test_y, d->ntest, &s->test_accuracy, &s->test_loss);
    if (!isfinite(s->test_loss)) s->test_accuracy = NAN; /* no accuracy beside a loss that is not a number */
    done++;
  }
  g->stop = NULL, g->stop_ud = NULL, g->stopped = 0;
  /* a sharded optimizer's state back on every rank, so the model goes on anywhere */
  if (steps && !run->err[0]) slM_steps_collect(steps, -1, run->err, sizeof run->err);
  slM_steps_free(steps);
  slM_release_activations(g);
  char err[200];
  slM_device_pull(g, err, sizeof err); /* the host copies of a model on the GPU; a failure is its fault */
  free(order);
  free(bx);
  free(by);
  return done;
}
