/*
** commands.c - the kernels domain: benchmark a kernel over sizes, describe
** the machine, place results under its roofs, and compare the memory of
** naive and fused attention.
**
** Every result is a table. Columns that hold measurements of time (and
** what is derived from time: GFLOP/s, GB/s, fractions of peak, process
** memory) are marked as such, so that the report's reproducibility rule
** compares everything else between runs (docs/report.md).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "kernels.h"
#include "table/table.h"

#define MIB 1048576.0
#define GIB 1073741824.0

static void set_num(slT_Table *t, size_t r, const char *col, double v) {
  slT_set(t, r, (size_t)slT_add_column(t, col), sl_number(v));
}

static void set_str(slT_Table *t, size_t r, const char *col, const char *v) {
  slT_set(t, r, (size_t)slT_add_column(t, col), sl_string(v));
}

static void mark(slT_Table *t, const char *const *cols) {
  for (int i = 0; cols[i]; i++) slT_mark_timing(t, slT_column(t, cols[i]));
}

static double round_to(double x, int digits) {
  double p = pow(10, digits);
  return round(x * p) / p;
}

/* three significant digits: a small positive value stays positive (a log axis needs it) */
static double round_sig(double x) {
  if (!(x > 0)) return x;
  return round_to(x, 2 - (int)floor(log10(x)));
}

/* ------------------------------------------------------------ machine */

static const char *const machine_fields[] = {
    "table",      "sgemm_gflops", "openblas_gflops", "blocked_gflops", "sgemm1_gflops",    "memcpy_gbs",
    "stream_gbs", "cores",        "threads",         "gpus",           "gpu_sgemm_gflops", "gpu_copy_gbs",
    NULL};

static void machine_row(slT_Table *t, const char *what, const char *value, double measured, const char *unit) {
  size_t r = slT_add_row(t);
  set_str(t, r, "property", what);
  set_str(t, r, "value", value ? value : "");
  slT_add_column(t, "measured");
  if (!value) set_num(t, r, "measured", round_to(measured, 1));
  set_str(t, r, "unit", unit);
}

/* here rather than with the language's commands: the GPU is this layer's to describe */
static int cmd_version(sl_Call *call, sl_Value *result) {
  sl_Value r = sl_record_new();
  sl_record_set(r, "syslab", sl_string(SYSLAB_VERSION));
  sl_record_set(r, "gpu", sl_string(slK_dev_why()));
  *result = r;
  return 0;
}

static int cmd_machine(sl_Call *call, sl_Value *result) {
  const char *get = sl_arg_string(call, "get");
  /* a GPU's figure where there is none: not a measurement of 0 */
  if (strncmp(get, "gpu_", 4) == 0 && slK_dev_count() == 0)
    return sl_arg_error(call, "get", "%s is a figure of a GPU, and here there is none (%s): `machine get=gpus` is 0",
                        get, slK_dev_why());
  const slK_Machine *m = slK_machine();
  if (sl_interrupted()) return sl_interrupted_error(call); /* the roofs were not all measured */
  if (strcmp(get, "table") != 0) {
    double v = strcmp(get, "sgemm_gflops") == 0       ? m->sgemm_gflops
               : strcmp(get, "openblas_gflops") == 0  ? m->openblas_gflops
               : strcmp(get, "blocked_gflops") == 0   ? m->blocked_gflops
               : strcmp(get, "sgemm1_gflops") == 0    ? m->sgemm1_gflops
               : strcmp(get, "memcpy_gbs") == 0       ? m->memcpy_gbs
               : strcmp(get, "stream_gbs") == 0       ? m->stream_gbs
               : strcmp(get, "cores") == 0            ? m->cores
               : strcmp(get, "threads") == 0          ? m->threads
               : strcmp(get, "gpus") == 0             ? m->gpus
               : strcmp(get, "gpu_sgemm_gflops") == 0 ? m->gpu_sgemm_gflops
                                                      : m->gpu_copy_gbs;
    *result = sl_number(v);
    return 0;
  }
  slT_Table *t = slT_new();
  char buf[64];
  machine_row(t, "cpu", m->cpu, 0, "");
  machine_row(t, "vector extensions", m->features, 0, "");
  machine_row(t, "inner loops", slK_isa(), 0, "");
  snprintf(buf, sizeof buf, "%d", m->cores);
  machine_row(t, "cores", buf, 0, "");
  snprintf(buf, sizeof buf, "%d", m->threads);
  machine_row(t, "kernel threads", buf, 0, "");
  snprintf(buf, sizeof buf, "%.1f", m->mem_total / GIB);
  machine_row(t, "memory", buf, 0, "GiB");
  machine_row(t, "sgemm OpenBLAS (n = 1024, all threads)", NULL, m->openblas_gflops, "GFLOP/s");
  machine_row(t, "sgemm OpenBLAS (one thread)", NULL, m->sgemm1_gflops, "GFLOP/s");
  machine_row(t, "sgemm blocked AVX-512 kernel (n = 1024, all threads)", NULL, m->blocked_gflops, "GFLOP/s");
  machine_row(t, "sgemm peak (the faster of the two)", NULL, m->sgemm_gflops, "GFLOP/s");
  machine_row(t, "memcpy (64 MiB, read + write)", NULL, m->memcpy_gbs, "GB/s");
  machine_row(t, "triad a = b + s c (all threads)", NULL, m->stream_gbs, "GB/s");
  machine_row(t, "gpu", m->gpu, 0, "");
  if (m->gpus > 0) {
    machine_row(t, "gpu sgemm peak (cuBLAS, n = 4096)", NULL, m->gpu_sgemm_gflops, "GFLOP/s");
    machine_row(t, "gpu device-to-device copy", NULL, m->gpu_copy_gbs, "GB/s");
  }
  const char *timed[] = {"measured", NULL};
  mark(t, timed);
  *result = slT_value(t);
  return 0;
}

/* ------------------------------------------------------------- kernels */

static int cmd_kernels(sl_Call *call, sl_Value *result) {
  slT_Table *t = slT_new();
  for (size_t i = 0; slK_bench_at(i); i++) {
    const slK_Bench *b = slK_bench_at(i);
    size_t r = slT_add_row(t);
    set_str(t, r, "kernel", b->name);
    set_str(t, r, "device", b->device);
    set_str(t, r, "group", b->group);
    set_str(t, r, "size", b->size_means);
    set_str(t, r, "what", b->what);
  }
  *result = slT_value(t);
  return 0;
}

/* --------------------------------------------------------------- bench */

/* the kernel names of an argument: one string or a list of them */
static int kernel_list(sl_Call *call, const slK_Bench **out, int max) {
  sl_Value v = sl_arg(call, "kernel");
  int n = 0;
  size_t count = v.type == SL_LIST ? sl_list_len(v) : 1;
  for (size_t i = 0; i < count; i++) {
    sl_Value item = v.type == SL_LIST ? sl_list_get(v, i) : v;
    if (item.type != SL_STRING)
      return sl_arg_error(call, "kernel", "must be a kernel name or a list of them (see kernels)");
    const slK_Bench *b = slK_bench_find(sl_str(item));
    if (!b) return sl_arg_error(call, "kernel", "no kernel named '%s' (see kernels for the list)", sl_str(item));
    if (n == max) return sl_arg_error(call, "kernel", "at most %d kernels in one call", max);
    out[n++] = b;
  }
  return n;
}

static int size_list(sl_Call *call, int *out, int max) {
  sl_Value v = sl_arg(call, "sizes");
  int n = 0;
  for (size_t i = 0; i < sl_list_len(v); i++) {
    sl_Value s = sl_list_get(v, i);
    if (s.type != SL_NUMBER || s.u.n != floor(s.u.n) || s.u.n < 1 || s.u.n > 1e9)
      return sl_arg_error(call, "sizes", "must be a list of whole numbers from 1 to 1e9");
    if (n == max) return sl_arg_error(call, "sizes", "at most %d sizes in one call", max);
    out[n++] = (int)s.u.n;
  }
  if (n == 0) return sl_arg_error(call, "sizes", "give at least one size");
  return n;
}

static int attn_shape_args(sl_Call *call, slK_Attn *a) {
  memset(a, 0, sizeof *a);
  a->batch = (int)sl_arg_number(call, "batch");
  a->heads = (int)sl_arg_number(call, "heads");
  a->dim = (int)sl_arg_number(call, "dim");
  a->causal = sl_truthy(sl_arg(call, "causal"));
  if (a->batch < 1 || a->heads < 1 || a->dim < 1 || a->dim > 1024)
    return sl_error(call, "attention needs batch >= 1, heads >= 1 and dim 1..1024");
  return 0;
}

/* A kernel's roofs, measured just before and after it: the faster of the two
** runs of each (a roof is a ceiling, and load only lowers it), then
** roof = min(peak, bandwidth x intensity). A kernel measured above its roof
** is flagged (above_roof) and its shares are left empty rather than shown
** above 100%: the roof, not the kernel, was measured low. */
static void roof_columns(slT_Table *t, size_t r, int roofed, const slK_Roofs *before, const slK_Roofs *after,
                         double gflops, double intensity) {
  const char *cols[] = {"peak_gflops", "bandwidth_gbs", "roof_gflops", "of_peak", "of_roof", "above_roof", NULL};
  for (int i = 0; cols[i]; i++) slT_add_column(t, cols[i]);
  if (!roofed) return;
  double peak = fmax(before->sgemm_gflops, after->sgemm_gflops), bw = fmax(before->stream_gbs, after->stream_gbs);
  double roof = fmin(peak, bw * intensity);
  int above = gflops > roof;
  set_num(t, r, "peak_gflops", round_to(peak, 1));
  set_num(t, r, "bandwidth_gbs", round_to(bw, 1));
  /* rounded to three figures, the roof could read above the peak it is capped by (169 against 168.8) */
  set_num(t, r, "roof_gflops", fmin(round_sig(roof), round_to(peak, 1)));
  if (!above) {
    set_num(t, r, "of_peak", round_to(gflops / peak, 3));
    set_num(t, r, "of_roof", round_to(gflops / roof, 3));
  }
  slT_set(t, r, (size_t)slT_column(t, "above_roof"), sl_bool(above));
}

static int cmd_bench(sl_Call *call, sl_Value *result) {
  const slK_Bench *kernels[32];
  int sizes[64], nk = kernel_list(call, kernels, 32);
  if (nk < 0) return -1;
  for (int k = 0; k < nk; k++) /* before any kernel runs: a table cut at the first GPU kernel would be lost */
    if (strcmp(kernels[k]->device, "gpu") == 0 && !slK_dev_available())
      return sl_arg_error(call, "kernel",
                          "'%s' runs on a GPU, and here there is %s: nothing was run (`kernels` lists "
                          "each kernel's device)",
                          kernels[k]->name, slK_dev_why());
  int ns = size_list(call, sizes, 64);
  if (ns < 0) return -1;
  slK_Attn shape;
  if (attn_shape_args(call, &shape) != 0) return -1;
  int reps = (int)sl_arg_number(call, "reps"), warmup = (int)sl_arg_number(call, "warmup");
  if (reps < 1 || reps > 10000) return sl_arg_error(call, "reps", "must be 1..10000, got %d", reps);
  if (warmup < 0 || warmup > 1000) return sl_arg_error(call, "warmup", "must be 0..1000, got %d", warmup);
  /* the roofs are measured beside each CPU kernel that does arithmetic, just before and just after it,
  ** on this process's threads: a kernel and its roof see the same load */
  int roofs = 0;
  for (int k = 0; k < nk; k++)
    if (strcmp(kernels[k]->device, "cpu") == 0 && kernels[k]->flops(sizes[0], &shape) > 0) roofs = 1;
  slK_RoofMeter *meter = roofs ? slK_roofs_begin() : NULL;
  if (roofs && !meter) return sl_error(call, "could not allocate the roofs' operands (about 200 MB)");
  slT_Table *t = slT_new();
  sl_Progress *p = sl_progress_begin(call, "bench", (double)nk * ns);
  for (int k = 0; k < nk; k++)
    for (int s = 0; s < ns; s++) {
      if (sl_interrupted()) {
        sl_progress_end(p);
        slT_free(t);
        slK_roofs_end(meter);
        return sl_interrupted_error(call);
      }
      char err[512], detail[128];
      snprintf(detail, sizeof detail, "%s at %d", kernels[k]->name, sizes[s]);
      sl_progress_update(p, (double)k * ns + s, detail);
      int roofed = meter && strcmp(kernels[k]->device, "cpu") == 0 && kernels[k]->flops(sizes[s], &shape) > 0;
      slK_Roofs before = {0}, after = {0};
      if (roofed) slK_roofs_measure(meter, 2, &before);
      slK_Result res;
      int rc = slK_bench_run(kernels[k], sizes[s], &shape, warmup, reps, NULL, NULL, &res, err, sizeof err);
      if (rc == SLK_BENCH_REFUSED) { /* a row that says so, with the size it needs; the others still run */
        size_t r = slT_add_row(t);
        set_str(t, r, "kernel", kernels[k]->name);
        set_str(t, r, "device", kernels[k]->device);
        set_num(t, r, "size", sizes[s]);
        set_str(t, r, "note", err);
        continue;
      }
      if (rc != 0) {
        sl_progress_end(p);
        slT_free(t);
        slK_roofs_end(meter);
        if (rc == SLK_BENCH_INTERRUPTED) return sl_interrupted_error(call);
        return sl_error(call, "%s at size %d: %s", kernels[k]->name, sizes[s], err);
      }
      if (roofed) slK_roofs_measure(meter, 2, &after);
      double gflops = res.flops / res.t.median / 1e9;
      size_t r = slT_add_row(t);
      set_str(t, r, "kernel", kernels[k]->name);
      set_str(t, r, "device", kernels[k]->device);
      set_num(t, r, "size", sizes[s]);
      set_num(t, r, "reps", reps);
      set_num(t, r, "median_ms", round_to(res.t.median * 1e3, 4));
      set_num(t, r, "min_ms", round_to(res.t.min * 1e3, 4));
      set_num(t, r, "mean_ms", round_to(res.t.mean * 1e3, 4));
      set_num(t, r, "std_ms", round_to(res.t.std * 1e3, 4));
      set_num(t, r, "gflops", round_to(gflops, 2));
      set_num(t, r, "gbs", round_to(res.bytes / res.t.median / 1e9, 2));
      set_num(t, r, "intensity", round_to(res.bytes > 0 ? res.flops / res.bytes : 0, 3));
      if (meter) roof_columns(t, r, roofed, &before, &after, gflops, res.bytes > 0 ? res.flops / res.bytes : 0);
      set_num(t, r, "peak_mib", round_to(res.peak_bytes / MIB, 2));
      set_num(t, r, "rss_peak_mib", round_to(res.rss_peak / MIB, 1));
    }
  sl_progress_end(p);
  slK_roofs_end(meter);
  slT_add_column(t, "note"); /* empty but for refused cases */
  /* peak_mib too: a threaded kernel's scratch follows which thread took which part (the fused MXINT8
  ** layer at n = 4096 peaked at 23.46 or 23.51 MiB in two runs), so it is a measurement as well */
  const char *timed[] = {"median_ms", "min_ms",      "mean_ms",       "std_ms",       "gflops",
                         "gbs",       "peak_gflops", "bandwidth_gbs", "roof_gflops",  "of_peak",
                         "of_roof",   "above_roof",  "peak_mib",      "rss_peak_mib", NULL};
  for (int i = 0; timed[i]; i++)
    if (slT_column(t, timed[i]) >= 0) slT_mark_timing(t, slT_column(t, timed[i]));
  *result = slT_value(t);
  return 0;
}

/* ------------------------------------------------------------- speedup */

/* the row of `kernel` at `size` in a bench table, or -1 */
static long find_row(slT_Table *t, int ck, int cs, const char *kernel, double size) {
  for (size_t r = 0; r < t->nrows; r++) {
    const char *k = sl_str(slT_get(t, r, (size_t)ck));
    sl_Value s = slT_get(t, r, (size_t)cs);
    if (k && strcmp(k, kernel) == 0 && s.type == SL_NUMBER && s.u.n == size) return (long)r;
  }
  return -1;
}

static double cell(slT_Table *t, long r, const char *col) {
  int c = slT_column(t, col);
  sl_Value v = c >= 0 ? slT_get(t, (size_t)r, (size_t)c) : sl_nil();
  return v.type == SL_NUMBER ? v.u.n : NAN;
}

static int cmd_speedup(sl_Call *call, sl_Value *result) {
  slT_Table *in = sl_arg_object(call, "results", &slT_class);
  const char *base = sl_arg_string(call, "baseline"), *kern = sl_arg_string(call, "kernel");
  int ck = slT_column(in, "kernel"), cs = slT_column(in, "size");
  if (ck < 0 || cs < 0 || slT_column(in, "median_ms") < 0)
    return sl_arg_error(call, "results", "needs the columns kernel, size and median_ms (a table from bench)");
  slT_Table *t = slT_new();
  for (size_t r = 0; r < in->nrows; r++) {
    const char *k = sl_str(slT_get(in, r, (size_t)ck));
    if (!k || strcmp(k, kern) != 0) continue;
    double size = slT_get(in, r, (size_t)cs).u.n;
    long b = find_row(in, ck, cs, base, size);
    if (b < 0 || isnan(cell(in, b, "median_ms")) || isnan(cell(in, (long)r, "median_ms"))) continue; /* refused */
    size_t o = slT_add_row(t);
    set_num(t, o, "size", size);
    set_num(t, o, "baseline_ms", cell(in, b, "median_ms"));
    set_num(t, o, "kernel_ms", cell(in, (long)r, "median_ms"));
    set_num(t, o, "speedup", round_to(cell(in, b, "median_ms") / cell(in, (long)r, "median_ms"), 2));
    set_num(t, o, "gbs_ratio", round_to(cell(in, (long)r, "gbs") / cell(in, b, "gbs"), 3));
  }
  if (t->nrows == 0) {
    slT_free(t);
    return sl_error(call, "no size has both '%s' and '%s' in the results", base, kern);
  }
  const char *timed[] = {"baseline_ms", "kernel_ms", "speedup", "gbs_ratio", NULL};
  mark(t, timed);
  *result = slT_value(t);
  return 0;
}

/* ------------------------------------------------------------ roofline */

/* The CPU roof of a bench table: the highest peak and bandwidth its own
** rows measured beside the kernels (bench's roof columns), or, for a table
** without them, the figures `machine` measured once */
static void table_roofs(slT_Table *in, const slK_Machine *m, double *peak, double *bw) {
  int cp = slT_column(in, "peak_gflops"), cb = slT_column(in, "bandwidth_gbs");
  *peak = *bw = 0;
  for (size_t r = 0; cp >= 0 && cb >= 0 && r < in->nrows; r++) {
    sl_Value p = slT_get(in, r, (size_t)cp), b = slT_get(in, r, (size_t)cb);
    if (p.type == SL_NUMBER && p.u.n > *peak) *peak = p.u.n;
    if (b.type == SL_NUMBER && b.u.n > *bw) *bw = b.u.n;
  }
  if (!(*peak > 0) || !(*bw > 0)) *peak = m->sgemm_gflops, *bw = m->stream_gbs;
}

static int cmd_roofline(sl_Call *call, sl_Value *result) {
  slT_Table *in = sl_arg_object(call, "results", &slT_class);
  int ck = slT_column(in, "kernel"), ci = slT_column(in, "intensity"), cg = slT_column(in, "gflops"),
      cd = slT_column(in, "device"), ca = slT_column(in, "above_roof");
  if (ck < 0 || ci < 0 || cg < 0)
    return sl_arg_error(call, "results", "needs the columns kernel, intensity and gflops (a table from bench)");
  const slK_Machine *m = slK_machine();
  if (sl_interrupted()) return sl_interrupted_error(call);
  slT_Table *t = slT_new();
  slT_add_column(t, "series");
  slT_add_column(t, "intensity");
  slT_add_column(t, "gflops");
  int gpu_rows = 0;
  for (size_t r = 0; r < in->nrows; r++) {
    sl_Value i = slT_get(in, r, (size_t)ci), g = slT_get(in, r, (size_t)cg);
    if (i.type != SL_NUMBER || g.type != SL_NUMBER || !(i.u.n > 0) || !(g.u.n > 0)) continue;
    if (cd >= 0 && sl_str(slT_get(in, r, (size_t)cd)) && strcmp(sl_str(slT_get(in, r, (size_t)cd)), "gpu") == 0)
      gpu_rows++;
    /* a point measured above its own roof is its own series, so the plot shows the flag */
    sl_Value above = ca >= 0 ? slT_get(in, r, (size_t)ca) : sl_nil();
    char name[160];
    snprintf(name, sizeof name, "%s%s", sl_str(slT_get(in, r, (size_t)ck)),
             sl_truthy(above) ? " (above its roof)" : "");
    size_t o = slT_add_row(t);
    slT_set(t, o, 0, sl_string(name));
    slT_set(t, o, 1, sl_number(i.u.n));
    slT_set(t, o, 2, sl_number(g.u.n));
  }
  double cpu_peak, cpu_bw;
  table_roofs(in, m, &cpu_peak, &cpu_bw);
  /* the roofs: min(peak, bandwidth x intensity) over 2^-4 .. 2^12 FLOP/byte */
  struct {
    int on;
    double peak, bw;
    const char *name;
  } roofs[2] = {{1, cpu_peak, cpu_bw, "cpu roof"},
                {gpu_rows > 0 && m->gpus > 0, m->gpu_sgemm_gflops, m->gpu_copy_gbs, "gpu roof"}};
  for (int k = 0; k < 2; k++) {
    if (!roofs[k].on) continue;
    double knee = roofs[k].peak / roofs[k].bw;
    for (int e = -4; e <= 12; e++) {
      double x = ldexp(1.0, e);
      if (e > -4 && ldexp(1.0, e - 1) < knee && x > knee) { /* the knee itself */
        size_t o = slT_add_row(t);
        slT_set(t, o, 0, sl_string(roofs[k].name));
        slT_set(t, o, 1, sl_number(round_to(knee, 3)));
        slT_set(t, o, 2, sl_number(round_sig(roofs[k].peak)));
      }
      size_t o = slT_add_row(t);
      slT_set(t, o, 0, sl_string(roofs[k].name));
      slT_set(t, o, 1, sl_number(x));
      /* significant digits, not decimals: on a slow machine bw x 2^-4 can be under 0.05 */
      slT_set(t, o, 2, sl_number(round_sig(fmin(roofs[k].peak, roofs[k].bw * x))));
    }
  }
  slT_mark_timing(t, 2);
  *result = slT_value(t);
  return 0;
}

/* --------------------------------------------------- attention memory */

typedef struct {
  double alloc, rss;
  int ran;
} MemRun;

static int attn_mem_run(slK_AttnImpl impl, int train, const slK_Attn *a, MemRun *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  size_t nx = (size_t)a->batch * a->heads * a->nq * a->dim, nl = (size_t)a->batch * a->heads * a->nq;
  slK_mem_reset_peak();
  size_t base = slK_mem_live(), rss0 = slK_rss_now();
  slK_rss_reset_peak();
  float *x[9] = {0};
  int n = train ? 9 : 5, rc = 0;
  for (int i = 0; i < n; i++) {
    x[i] = slK_alloc((i == 4 ? nl : nx) * sizeof(float));
    if (!x[i]) rc = -1;
    else memset(x[i], 0, (i == 4 ? nl : nx) * sizeof(float));
    if (x[i] && i < 3)
      for (size_t j = 0; j < nx; j++) x[i][j] = (float)((j * 2654435761u) % 1000) / 1000.0f - 0.5f;
  }
  if (rc == 0) {
    if (!train) rc = slK_attention_forward(impl, a, x[0], x[1], x[2], x[3], x[4]);
    else if (impl == SLK_ATTN_NAIVE)
      rc = slK_attention_naive_step(a, x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8]);
    else {
      rc = slK_attention_forward(impl, a, x[0], x[1], x[2], x[3], x[4]);
      if (rc == 0) rc = slK_attention_backward(impl, a, x[0], x[1], x[2], x[3], x[5], x[4], x[6], x[7], x[8]);
    }
  }
  out->alloc = (double)(slK_mem_peak() - base);
  size_t hwm = slK_rss_peak();
  out->rss = hwm > rss0 ? (double)(hwm - rss0) : 0;
  for (int i = 0; i < n; i++) slK_free(x[i]);
  if (rc != 0) snprintf(err, errlen, "the allocation failed");
  out->ran = rc == 0;
  return rc;
}

static int cmd_attention_memory(sl_Call *call, sl_Value *result) {
  int sizes[64], ns = size_list(call, sizes, 64);
  if (ns < 0) return -1;
  slK_Attn shape;
  if (attn_shape_args(call, &shape) != 0) return -1;
  double avail = (double)slK_mem_available(),
         budget = sl_arg_given(call, "budget_gib") ? sl_arg_number(call, "budget_gib") * GIB : avail * 0.8;
  if (!(budget > 0)) return sl_arg_error(call, "budget_gib", "must be positive");
  slT_Table *t = slT_new();
  for (int s = 0; s < ns; s++)
    for (int train = 0; train < 2; train++)
      for (int impl = 0; impl < SLK_ATTN_NUM; impl++) {
        if (sl_interrupted()) {
          slT_free(t);
          return sl_interrupted_error(call);
        }
        slK_Attn a;
        slK_attention_contiguous(&a, shape.batch, shape.heads, sizes[s], sizes[s], shape.dim, shape.causal);
        double io =
            (train ? 8.0 : 4.0) * a.batch * a.heads * (double)a.nq * a.dim * 4 + (double)a.batch * a.heads * a.nq * 4;
        double work = slK_attention_workspace((slK_AttnImpl)impl, &a, train);
        size_t r = slT_add_row(t);
        set_num(t, r, "L", sizes[s]);
        set_str(t, r, "attention", slK_attention_name((slK_AttnImpl)impl));
        set_str(t, r, "pass", train ? "forward+backward" : "forward");
        set_num(t, r, "predicted_mib", round_to((io + work) / MIB, 2));
        set_num(t, r, "extra_mib", round_to(work / MIB, 2));
        slT_add_column(t, "allocator_mib");
        slT_add_column(t, "process_mib");
        slT_add_column(t, "note");
        if (io + work > budget) {
          char note[160];
          snprintf(note, sizeof note, "refused: needs %.2f GiB, budget %.2f GiB", (io + work) / GIB, budget / GIB);
          set_str(t, r, "note", note);
          continue;
        }
        MemRun mr;
        char err[256];
        if (attn_mem_run((slK_AttnImpl)impl, train, &a, &mr, err, sizeof err) != 0) {
          slT_free(t);
          return sl_error(call, "attention at L = %d: %s", sizes[s], err);
        }
        set_num(t, r, "allocator_mib", round_to(mr.alloc / MIB, 2));
        set_num(t, r, "process_mib", round_to(mr.rss / MIB, 1));
        set_str(t, r, "note", "");
      }
  slT_mark_timing(t, slT_column(t, "process_mib"));
  *result = slT_value(t);
  return 0;
}

/* ------------------------------------------------------------ registry */

/* clang-format off */
#define SHAPE_ARGS                                                                     \
  {"batch", SL_ARG_INT, 0, "1", "attention: batch"},                                   \
  {"heads", SL_ARG_INT, 0, "8", "attention: heads"},                                   \
  {"dim", SL_ARG_INT, 0, "64", "attention: features per head"},                        \
  {"causal", SL_ARG_BOOL, 0, "false", "attention: causal mask (key k kept for query q iff k <= q)"}

static const sl_Command slK_commands[] = {
  {"kernels", "kernels", "The kernels the harness can time: name, device, what the size means, what each does.", "",
   "kernels", cmd_kernels, 0, {{NULL}}},
  {"bench", "kernels", "Time kernels over a grid of sizes: warm-up, repetitions, min, median, mean, std, GFLOP/s, GB/s.",
   "Each case runs `warmup` times untimed, then `reps` times timed (GPU kernels by CUDA events after a "
   "synchronisation). GFLOP/s and GB/s divide the work each kernel declares by the median time; intensity is "
   "FLOPs per byte. Beside each CPU kernel that does arithmetic, the roofs are measured just before and just after "
   "it on the same threads (the faster of OpenBLAS and the blocked sgemm at n = 1024, and a threaded triad): "
   "peak_gflops, bandwidth_gbs, roof_gflops = min(peak, bandwidth x intensity), of_peak and of_roof the kernel's "
   "shares of them; a kernel measured above its roof has above_roof true and no shares. peak_mib is the largest "
   "amount of operand and workspace memory alive during the case, rss_peak_mib the process's resident peak. "
   "Timing columns are marked as measurements. A case predicted not to fit in memory is refused before anything is "
   "allocated: its row has no times and a note with the size it needs and the budget, and the other cases run.",
   "bench [\"gemm_blocked\", \"gemm_openblas\"] sizes=[256, 512, 1024]\nbench attention_fused sizes=[1024] reps=5 heads=8 dim=64",
   cmd_bench, SL_CMD_LONG,
   {{"kernel", SL_ARG_ANY, SL_POSITIONAL | SL_REQUIRED | SL_BAREWORD, NULL, "a kernel name or a list of names (see kernels)"},
    {"sizes", SL_ARG_LIST, 0, "[256, 512]", "sizes to time (what a size means depends on the kernel)"},
    {"reps", SL_ARG_INT, 0, "10", "timed repetitions per case"},
    {"warmup", SL_ARG_INT, 0, "2", "untimed runs before timing"},
    SHAPE_ARGS,
    {NULL}}},
  {"version", "kernels", "The syslab version and the GPU it found, as a record.", "", "version", cmd_version, 0,
   {{NULL}}},
  {"machine", "kernels", "What this machine can do: CPU, vector extensions, cores, sgemm peak, memory bandwidth, GPU.",
   "Measured once per kernel process, then cached: sgemm at n = 1024 by OpenBLAS (all threads, one thread) and by the "
   "blocked kernel, the peak being the faster (OpenBLAS may not recognise a new CPU and run generic code); memcpy and a "
   "threaded triad for bandwidth; with a GPU, its cuBLAS sgemm peak and device-to-device copy rate. get= returns one "
   "figure as a number instead of the table; a GPU's figure (gpu_sgemm_gflops, gpu_copy_gbs) where there is no GPU is "
   "an error saying so (get=gpus is 0 there).",
   "machine\npeak = machine get=sgemm_gflops", cmd_machine, SL_CMD_LONG,
   {{"get", SL_ARG_ENUM, 0, "\"table\"", "the whole table, or one figure", machine_fields}, {NULL}}},
  {"speedup", "kernels", "Compare two kernels of a bench table size by size: time ratio and bandwidth ratio.",
   "speedup = baseline median / kernel median (above 1: the kernel is faster); gbs_ratio = kernel GB/s / baseline GB/s, "
   "the fraction of the baseline's bandwidth the kernel reaches (against memcpy: of the machine's copy rate).",
   "t = bench [\"attention_naive\", \"attention_fused\"] sizes=[64] reps=3 heads=2 dim=16\nspeedup t baseline=attention_naive kernel=attention_fused", cmd_speedup, 0,
   {{"results", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "a table from bench", NULL, "table"},
    {"baseline", SL_ARG_STRING, SL_REQUIRED | SL_BAREWORD, NULL, "the kernel compared against"},
    {"kernel", SL_ARG_STRING, SL_REQUIRED | SL_BAREWORD, NULL, "the kernel compared"},
    {NULL}}},
  {"roofline", "kernels", "A bench table placed under this machine's roofs, ready for plot with log axes.",
   "Returns rows (series, intensity, gflops): one series per kernel from the results (a kernel bench measured above "
   "its roof is the series 'NAME (above its roof)'), and the roof min(peak, bandwidth x intensity) with the highest "
   "sgemm peak and triad bandwidth that bench measured beside the kernels (machine's, for a table without them), and "
   "the GPU's roof when the results hold GPU rows.",
   "results = bench [\"gemm_blocked\", \"gemm_openblas\"] sizes=[64, 128] reps=3\nr = roofline results\nplot r x=intensity y=gflops series=series logx=true logy=true kind=linespoints", cmd_roofline, 0,
   {{"results", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "a table from bench", NULL, "table"}, {NULL}}},
  {"attention_memory", "kernels", "Peak memory of naive and fused attention over L, forward and forward+backward.",
   "For each L: the predicted bytes (inputs, outputs, L and workspace), then the bytes measured by the kernels' "
   "allocator and the process's resident peak while it runs. A configuration predicted to exceed the budget is not "
   "run: its row says so with the predicted size and the budget (default: 80% of the memory available now).",
   "attention_memory sizes=[256, 512, 1024] heads=8 dim=64", cmd_attention_memory, SL_CMD_LONG,
   {{"sizes", SL_ARG_LIST, 0, "[256, 512, 1024]", "sequence lengths"},
    SHAPE_ARGS,
    {"budget_gib", SL_ARG_NUMBER, 0, NULL, "memory budget in GiB (default: 80% of what is available)"},
    {NULL}}},
  {NULL},
};
/* clang-format on */

const sl_Domain slK_domain = {
    "Kernels",
    "Compute kernels on the CPU and the GPU, side by side with their naive references: matrix products (naive, blocked "
    "AVX-512, OpenBLAS; CUDA naive, tiled, cuBLAS), attention (naive op by op and fused FlashAttention-2, forward and "
    "backward), MXINT8 decoding and the MXINT8 linear layer. One harness times them (warm-up, repetitions, medians, "
    "FLOPs and bytes per kernel), `machine` measures the roofs, `roofline` places results under them.",
    slK_commands,
};
