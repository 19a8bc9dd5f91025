/*
** devices.h - models on a device (devices.c): which devices a model can be
** put on, why one cannot go, the copy of a model on another device, and the
** prediction of its device memory.
*/
#ifndef SYSLAB_DEVICES_H
#define SYSLAB_DEVICES_H

#include "op.h" /* SLM_CPU, SLM_CUDA */

/* "cpu", "gpu"; the device of a name, or -1 */
const char *slM_device_name(int device);
int slM_device_parse(const char *name);
/* the devices a name may be, for messages ("cpu or gpu") */
#define SLM_DEVICE_NAMES "cpu or gpu"

/* 0 when g can run on device here; else -1 with why and what is allowed */
int slM_device_check(const slM_Graph *g, int device, char *err, size_t errlen);
/* 0 when g can run where it is: the check above, and every parameter has its copy there */
int slM_device_ready(const slM_Graph *g, char *err, size_t errlen);
/* A copy of g on device: its weights, gradients and optimiser state, with
** the same numbers (for a model on the GPU, its device copies first brought
** back). NULL with err when it cannot go there. */
slM_Graph *slM_graph_to(slM_Graph *g, int device, char *err, size_t errlen);
/* 0 when the device a name gives can be used here; else -1 with why and what is allowed */
int slM_device_usable(const char *name, char *err, size_t errlen);
/* a graph just built, moved to device: g itself for the CPU, else its copy
** there with g freed; NULL with err (g freed) when it cannot go */
slM_Graph *slM_graph_move(slM_Graph *g, int device, char *err, size_t errlen);
/* A model on the GPU keeps a host copy of each parameter tensor for what
** reads weights on the host (show, checkpoints, compression); this brings
** them up to date. 0, or -1 with err (and the model's fault set). */
int slM_device_pull(slM_Graph *g, char *err, size_t errlen);
/* 0 when a training (or inference) pass of a batch fits in the device's
** free memory, by the graph's own prediction; else -1 with the figures */
int slM_device_fits(const slM_Graph *g, int batch, int training, char *err, size_t errlen);
/* the device bytes a pass of a batch needs: parameters, their gradients
** and optimiser state (training), activations and temporaries */
double slM_device_predict(const slM_Graph *g, int batch, int training, double by_category[5]);

#endif
