/*
** model_value.c - the model as a value of the language: how a notebook shows
** it (a node table, and the graph drawn by Graphviz's dot), its fields
** (m.nodes, m.params...), and its encoding for save/load and for workers.
**
** The commands that make and change models are in commands.c; this file is
** only what every model value answers, so that the registry's file stays
** about commands.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slcommand.h"
#include "lang/process.h"
#include "table/table.h"
#include "precision.h"

static void model_free(void *data) {
  slM_Graph *g = data;
  slM_graph_free(g);
}

static void shape_text(const slM_Node *n, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < n->ndim; d++)
    used +=
        (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%d", d ? ", " : "", d == 0 ? 1 : n->shape[d]);
  snprintf(buf + used, used < size ? size - used : 0, "]");
}

/* the node list as a table: the view the labs print of an FX graph */
static slT_Table *node_table(const slM_Graph *g) {
  slT_Table *t = slT_new();
  const char *cols[] = {"name", "kind", "target", "args", "shape", "params", "precision"};
  for (int c = 0; c < 7; c++) slT_add_column(t, cols[c]);
  int *dtypes = malloc((size_t)g->n * sizeof *dtypes);
  slM_dtypes(g, dtypes);
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    size_t r = slT_add_row(t);
    char args[256] = "", shape[64];
    size_t used = 0;
    for (int k = 0; k < n->ninputs; k++)
      used += (size_t)snprintf(args + used, used < sizeof args ? sizeof args - used : 0, "%s%s", k ? ", " : "",
                               g->nodes[n->inputs[k]].name);
    shape_text(n, shape, sizeof shape);
    slT_set(t, r, 0, sl_string(n->name));
    slT_set(t, r, 1, sl_string(slM_kind_name(n->kind)));
    slT_set(t, r, 2, sl_string(slM_op_name(n->op)));
    slT_set(t, r, 3, sl_string(args));
    slT_set(t, r, 4, sl_string(shape));
    slT_set(t, r, 5, sl_number((double)slM_node_params(n)));
    slT_set(t, r, 6, sl_string(slM_node_format(n, dtypes[i])));
  }
  free(dtypes);
  return t;
}

static void dot_quoted(char **buf, size_t *len, size_t *cap, const char *s) {
  for (; *s; s++) {
    if (*len + 4 > *cap) *buf = realloc(*buf, *cap = (*cap + 64) * 2);
    if (*s == '"' || *s == '\\') (*buf)[(*len)++] = '\\';
    (*buf)[(*len)++] = *s;
  }
  (*buf)[*len] = '\0';
}

/* The graph drawn by Graphviz when `dot` is installed: one box per node
** (name, operator, shape), edges from inputs to users. NULL without dot. */
static char *draw_graph(const slM_Graph *g) {
  size_t len = 0, cap = 4096;
  char *dot = malloc(cap);
  dot[0] = '\0';
#define EMIT(...) \
  do { \
    int n_ = snprintf(NULL, 0, __VA_ARGS__); \
    if (len + (size_t)n_ + 1 > cap) dot = realloc(dot, cap = (len + (size_t)n_ + 1) * 2); \
    snprintf(dot + len, cap - len, __VA_ARGS__); \
    len += (size_t)n_; \
  } while (0)
  EMIT(
      "digraph model {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"DejaVu Sans\", fontsize=10];\n");
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    char shape[64];
    shape_text(n, shape, sizeof shape);
    const char *fill = n->kind == SLM_PLACEHOLDER ? "#dbe9f6"
                       : n->kind == SLM_OUTPUT    ? "#f6e3db"
                       : n->nparams               ? "#fff2cc"
                                                  : "#eeeeee";
    EMIT("  n%d [fillcolor=\"%s\", label=\"", i, fill);
    dot_quoted(&dot, &len, &cap, n->name);
    EMIT("\\n%s %s\"];\n", slM_op_name(n->op), shape);
    for (int k = 0; k < n->ninputs; k++) EMIT("  n%d -> n%d;\n", n->inputs[k], i);
  }
  EMIT("}\n");
#undef EMIT
  char *svg, *errtext, err[256];
  size_t n;
  int status;
  const char *argv[] = {"dot", "-Tsvg", NULL};
  int rc = slO_run_filter(argv, dot, 10, &svg, &n, &errtext, &status, err, sizeof err);
  free(dot);
  free(errtext);
  if (rc != SLO_OK || status != 0 || !strstr(svg, "</svg>")) {
    if (rc == SLO_OK) free(svg);
    return NULL;
  }
  return svg;
}

static int model_show(void *data, sl_Bundle *out) {
  slM_Graph *g = data;
  size_t trainable, total;
  slM_param_counts(g, &trainable, &total);
  slT_Table *t = node_table(g);
  char head[640], mode[128] = "";
  if (g->precision != SLM_FP32)
    snprintf(mode, sizeof mode, "; precision %s: products take %s inputs and sum in float32",
             slM_precision_names[g->precision], slM_dtype_name(g->precision));
  snprintf(head, sizeof head, "%s\n%d nodes, %zu parameters (%zu trainable)%s%s%s", g->description, g->n, total,
           trainable, g->with_labels ? ", traced with labels" : "",
           g->with_mask ? ", traced with an attention mask" : "", mode);
  char *text = slT_to_text(t), *md = slT_to_markdown(t), *html = slT_to_html(t);
  sl_bundle_addf(out, "text/plain", "%s\n%s", head, text);
  sl_bundle_addf(out, "text/markdown", "**%s**\n\n%s", head, md);
  sl_bundle_addf(out, "text/html", "<p><b>%s</b></p>\n%s", head, html);
  char *svg = draw_graph(g);
  if (svg) sl_bundle_add(out, "image/svg+xml", svg, strlen(svg));
  free(svg);
  free(text), free(md), free(html);
  slT_free(t);
  return 0;
}

static int model_field(void *data, const char *name, sl_Value *out) {
  slM_Graph *g = data;
  size_t trainable, total;
  slM_param_counts(g, &trainable, &total);
  if (strcmp(name, "nodes") == 0) return *out = sl_number(g->n), 0;
  if (strcmp(name, "params") == 0) return *out = sl_number((double)total), 0;
  if (strcmp(name, "trainable") == 0) return *out = sl_number((double)trainable), 0;
  if (strcmp(name, "family") == 0) return *out = sl_string(g->family), 0;
  if (strcmp(name, "classes") == 0) return *out = sl_number(g->classes), 0;
  if (strcmp(name, "precision") == 0) return *out = sl_string(slM_precision_names[g->precision]), 0;
  if (strcmp(name, "node_names") == 0) {
    *out = sl_list_new();
    for (int i = 0; i < g->n; i++) sl_list_push(*out, sl_string(g->nodes[i].name));
    return 0;
  }
  return -1;
}

static const char *const model_fields[] = {"nodes",   "params",    "trainable",  "family",
                                           "classes", "precision", "node_names", NULL};

static int model_encode(void *data, slU_Text *out, char *err, size_t errlen) {
  return slM_graph_encode(data, out, err, errlen);
}

static void *model_decode(const char *bytes, size_t n, char *err, size_t errlen) {
  return slM_graph_decode(bytes, n, err, errlen);
}

const sl_Class slM_model_class = {.name = "model",
                                  .free = model_free,
                                  .show = model_show,
                                  .field = model_field,
                                  .fields = model_fields,
                                  .encode = model_encode,
                                  .decode = model_decode};
