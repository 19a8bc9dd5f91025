/*
** profile.h - the per-node profiler (profile.c): time per node in the
** forward and backward passes of the steps run while a profile is attached.
*/
#ifndef SYSLAB_PROFILE_H
#define SYSLAB_PROFILE_H

#include "model.h"

typedef struct slM_Profile {
  int n;               /* nodes */
  double *forward;     /* seconds per node, summed over the steps */
  double *backward;
  int steps;
  double started;      /* the node now running */
} slM_Profile;

slM_Profile *slM_profile_attach(slM_Graph *g);   /* starts recording on g */
void slM_profile_detach(slM_Graph *g);           /* stops; the profile stays with the caller */
void slM_profile_free(slM_Profile *p);
double slM_now(void);
/* is the operator a matrix product (GEMM)? */
int slM_op_is_gemm(slM_Op op);

#endif
