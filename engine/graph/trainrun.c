/*
** trainrun.c - what `train` and `lm_train` share around their loops: the
** arguments of accumulation and data parallelism, the group a parallel
** call runs in, and checkpoints.
**
** A parallel call first makes sure every process is about to run the same
** thing: each hashes the model it starts from (weights, optimizer state,
** random state) with the data and settings the caller names, and the
** group compares the hashes. An mpirun job whose ranks built different
** models (a seed from the clock, another file) is refused, naming the rank,
** instead of training on data that differ in the last bits.
**
** A checkpoint file holds a line of text saying what it is, the hash of
** the run (so a checkpoint is only ever resumed by the run that wrote it:
** the same model at its start, data and settings, with the same number of
** micro-batches per step, however they are spread over processes), the
** loop's own progress and the model in the format of `save` with its whole
** optimizer state, then a hash of all of it. It is written by rank 0 under
** a temporary name, synced and renamed.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memory.h"
#include "op.h"
#include "trainrun.h"

const char *const slM_parallel_names[] = {"none", "data", NULL};

#define MAGIC "syslab training checkpoint 1\n"

uint64_t slM_hash(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) { /* a word at a time: the model's bytes are many */
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t hash_tensor(uint64_t h, const slM_Tensor *t) {
  uint64_t n = t ? t->size : UINT64_MAX;
  h = slM_hash(h, &n, sizeof n);
  return t ? slM_hash(h, t->data, t->size * sizeof *t->data) : h;
}

/* the model a run starts from: its nodes, every parameter with its
** optimizer state, the random state, the precision */
static uint64_t model_hash(const slM_Graph *g) {
  uint64_t h = slM_hash(SLM_HASH_START, g->family, strlen(g->family));
  int settings[] = {g->n, g->precision, g->plan, g->fused_attention, g->device};
  h = slM_hash(h, settings, sizeof settings);
  h = slM_hash(h, &g->rng.state, sizeof g->rng.state);
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    h = slM_hash(h, n->name, strlen(n->name));
    for (int k = 0; k < n->nparams; k++) {
      const slM_Param *p = n->params[k];
      h = slM_hash(h, &p->frozen, sizeof p->frozen);
      h = hash_tensor(hash_tensor(hash_tensor(h, p->value), p->m), p->v);
    }
  }
  return h;
}

/* ------------------------------------------------------------ arguments */

static int refuse(sl_Call *call, const char *arg, const char *msg) { return sl_arg_error(call, arg, "%s", msg); }

/* the arguments alone, before anything starts */
static int read_args(sl_Call *call, slM_Graph *g, int batch, slM_Run *r, int *parallel, int *workers) {
  double k = sl_arg_number(call, "accumulate"), mb = sl_arg_number(call, "bucket_mb");
  double every = sl_arg_number(call, "checkpoint_every"), w = sl_arg_number(call, "workers");
  *parallel = strcmp(sl_arg_string(call, "parallel"), "data") == 0;
  if (k < 1 || k > 65536) return refuse(call, "accumulate", "must be between 1 and 65536");
  if (k > batch)
    return sl_arg_error(call, "accumulate",
                        "splits each batch of %d into %g micro-batches of at least one row: give at "
                        "most accumulate=%d",
                        batch, k, batch);
  if (*parallel && k > 1)
    return refuse(call, "accumulate",
                  "parallel=\"data\" on N processes already is accumulate=N (one micro-batch "
                  "each): give one or the other");
  if (w < 0 || w > 4096) return refuse(call, "workers", "must be between 0 and 4096");
  if (!*parallel)
    for (const char *const *a = (const char *const[]){"workers", "reduce", "bucket_mb", "shard_optimizer", NULL}; *a;
         a++)
      if (sl_arg_given(call, *a)) return sl_arg_error(call, *a, "applies to parallel=\"data\" only");
  if (!(mb >= 0 && mb <= 1e6)) return refuse(call, "bucket_mb", "must be between 0 and 1000000");
  if (every < 0 || every > 1e9) return refuse(call, "checkpoint_every", "must be 0 (none) or a number of steps");
  const char *path = sl_arg_string(call, "checkpoint");
  if (every > 0 && !path[0])
    return refuse(call, "checkpoint", "checkpoint_every= needs a file: give checkpoint=\"run.ckpt\"");
  if (every == 0 && path[0])
    return refuse(call, "checkpoint_every", "give the steps between checkpoints, e.g. checkpoint_every=100");
  if (strlen(path) >= sizeof r->ckpt.path) return refuse(call, "checkpoint", "the path is too long");
  if (g->device != SLM_CPU && (k > 1 || *parallel))
    return sl_error(call, "accumulate= and parallel=\"data\" train on the CPU; this model is on the GPU "
                          "(build it with device=cpu)");
  r->split.accumulate = (int)k;
  r->split.reduce = 0;
  while (slM_reduce_names[r->split.reduce] && strcmp(slM_reduce_names[r->split.reduce], sl_arg_string(call, "reduce")))
    r->split.reduce++;
  r->split.bucket_mb = mb;
  r->split.shard = sl_arg_number(call, "shard_optimizer") != 0;
  snprintf(r->ckpt.path, sizeof r->ckpt.path, "%s", path);
  r->ckpt.every = (int)every;
  r->use_ckpt = every > 0;
  *workers = (int)w;
  return 0;
}

/* every rank starts from the same model, data and settings */
static int agree(sl_Call *call, slM_Run *r, uint64_t run) {
  char err[512];
  int n = r->ops->size(r->split.group);
  uint64_t *all = calloc((size_t)n, sizeof *all);
  int rc = r->ops->allgather(r->split.group, &run, sizeof run, all, err, sizeof err), bad = -1;
  for (int q = 1; q < n && rc == 0 && bad < 0; q++)
    if (all[q] != all[0]) bad = q;
  free(all);
  if (rc != 0) return sl_error(call, "%s", err);
  if (bad >= 0)
    return sl_error(call,
                    "rank %d starts from another model, data set or settings than rank 0: every process must "
                    "build the same model from the same seed and read the same data",
                    bad);
  return 0;
}

int slM_run_begin(sl_Call *call, slM_Graph *g, int batch, uint64_t run_id, slM_Run *r) {
  memset(r, 0, sizeof *r);
  int parallel = 0, workers = 0;
  if (read_args(call, g, batch, r, &parallel, &workers) != 0) return -1;
  r->ranks = 1;
  r->ckpt.run = slM_hash(run_id, &(uint64_t){model_hash(g)}, sizeof(uint64_t));
  /* the micro-batches of a step are part of the run: N ranks resume what accumulate=N wrote */
  r->use_split = r->split.accumulate > 1;
  if (!parallel) {
    r->ckpt.run = slM_hash(r->ckpt.run, &r->split.accumulate, sizeof r->split.accumulate);
    return 0;
  }
  char err[1024] = "";
  if (!(r->ops = slM_group_ops(err, sizeof err))) return sl_arg_error(call, "parallel", "%s", err);
  r->split.group = r->ops->open(call, workers, err, sizeof err);
  if (!r->split.group) {
    if (err[0]) return sl_arg_error(call, "parallel", "%s", err);
    r->split.shard = 0; /* a group of one: this process alone is the serial run */
    r->ckpt.run = slM_hash(r->ckpt.run, &(int){1}, sizeof(int));
    return 0;
  }
  r->ranks = r->ops->size(r->split.group);
  r->use_split = 1;
  r->ckpt.run = slM_hash(r->ckpt.run, &r->ranks, sizeof r->ranks);
  if (r->ranks > batch) {
    slM_run_end(r, "the batch is smaller than the number of processes");
    return sl_arg_error(call, "batch", "%d processes need a batch of at least %d rows (one each), not %d", r->ranks,
                        r->ranks, batch);
  }
  if (agree(call, r, r->ckpt.run) != 0) {
    slM_run_end(r, "the processes do not start from the same model");
    return -1;
  }
  return 0;
}

void slM_run_end(slM_Run *r, const char *why) {
  if (r->split.group) r->ops->close(r->split.group, why);
  r->split.group = NULL;
}

/* ---------------------------------------------------------- checkpoints */

int slM_ckpt_save(const slM_Checkpoint *k, slM_Graph *g, slM_Steps *s, const slU_Text *progress, char *err,
                  size_t errlen) {
  int rank = s ? slM_steps_rank(s) : 0, rc = 0;
  if (s && slM_steps_collect(s, 0, err, errlen) != 0) return -1;
  if (rank == 0) {
    slU_Text body = {0};
    slU_add(&body, "%s", MAGIC);
    slU_put_u64(&body, k->run);
    slU_put_bytes(&body, progress->s, progress->n);
    slU_Text model = {0};
    rc = slM_graph_encode(g, &model, err, errlen);
    slU_put_bytes(&body, model.s, model.n);
    free(model.s);
    slU_put_u64(&body, slM_hash(SLM_HASH_START, body.s, body.n));
    if (rc == 0) rc = slF_write_file(k->path, body.s, body.n, "a training checkpoint", err, errlen);
    free(body.s);
  }
  if (s) slM_steps_drop(s);
  return rc;
}

static int first_use(const slM_Graph *g, int upto, const slM_Param *p) {
  for (int i = 0; i < upto; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++)
      if (g->nodes[i].params[k] == p) return i;
  return upto;
}

/* the checkpoint's model into g, parameter by parameter: the same structure, new values */
static int restore(slM_Graph *g, const char *bytes, size_t n, char *err, size_t errlen) {
  slM_Graph *c = slM_graph_decode(bytes, n, err, errlen);
  if (!c) return -1;
  int ok = c->n == g->n;
  for (int i = 0; ok && i < g->n; i++) {
    slM_Node *a = &g->nodes[i], *b = &c->nodes[i];
    ok = a->nparams == b->nparams && strcmp(a->name, b->name) == 0;
    for (int k = 0; ok && k < a->nparams; k++) ok = a->params[k]->value->size == b->params[k]->value->size;
  }
  for (int i = 0; ok && i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k], *q = c->nodes[i].params[k];
      if (first_use(g, i, p) < i) continue; /* shared with an earlier node: done there */
      memcpy(p->value->data, q->value->data, p->value->size * sizeof *p->value->data);
      slM_Tensor *m = p->m, *v = p->v;
      p->m = q->m, p->v = q->v; /* the checkpoint's state, now this model's */
      q->m = m, q->v = v;
      if (p->m) slM_mem_retag(p->m, SLM_MEM_OPTIM);
      if (p->v) slM_mem_retag(p->v, SLM_MEM_OPTIM);
    }
  if (ok) g->rng = c->rng;
  slM_graph_free(c);
  if (!ok) snprintf(err, errlen, "its model is not this model");
  return ok ? 0 : -1;
}

int slM_ckpt_load(const slM_Checkpoint *k, slM_Graph *g, slM_Steps *s, char **progress, size_t *pn, char *err,
                  size_t errlen) {
  const slM_GroupOps *ops = s && slM_steps_size(s) > 1 ? slM_group_ops(err, errlen) : NULL;
  slM_Group *grp = ops ? slM_steps_group(s) : NULL;
  int rank = s ? slM_steps_rank(s) : 0;
  size_t n = 0;
  char *bytes = NULL;
  int unreadable = 0;
  if (rank == 0 && access(k->path, F_OK) == 0) { /* none yet: the run starts afresh */
    char why[600];
    if (!(bytes = slF_read_file(k->path, "a training checkpoint", 0, &n, why, sizeof why)))
      snprintf(err, errlen, "cannot resume: %s", why), unreadable = 1, n = 0;
  }
  /* rank 0 says whether there is one (an empty message: none), then sends it; one it cannot read is its error,
  ** which the others hear of when it leaves the group */
  if (grp && ops->bcast(grp, 0, (void **)&bytes, &n, err, errlen) != 0) return free(bytes), -1;
  if (!bytes || n == 0) return free(bytes), unreadable ? -1 : 0;
  slU_Reader r = {bytes, n, 0, 0};
  size_t magic = strlen(MAGIC), pl = 0, ml = 0;
  int rc = -1;
  const char *why = "it is not a training checkpoint of syslab";
  if (n > magic + 8 && memcmp(bytes, MAGIC, magic) == 0) {
    uint64_t sum;
    memcpy(&sum, bytes + n - 8, 8); /* little endian, as slU_put_u64 writes it */
    r.at = magic;
    uint64_t run = slU_get_u64(&r);
    const char *p = slU_get_bytes(&r, &pl), *m = slU_get_bytes(&r, &ml);
    if (slM_hash(SLM_HASH_START, bytes, n - 8) != sum || !p || !m) why = "it is damaged (its check sum differs)";
    else if (run != k->run)
      why = "it was written by another run (another model at the start, other data or "
            "settings, or another number of micro-batches per step)";
    else if (restore(g, m, ml, err, errlen) == 0) {
      *progress = malloc(pl + 1);
      memcpy(*progress, p, pl);
      *pn = pl;
      rc = 1;
    } else {
      why = err;
    }
  }
  char reason[600];
  if (rc < 0) {
    snprintf(reason, sizeof reason, "%s", why);
    snprintf(err, errlen, "cannot resume from '%s': %s; delete it, or give another checkpoint=", k->path, reason);
  }
  free(bytes);
  if (rc == 1 && s) slM_steps_drop(s);
  return rc;
}
