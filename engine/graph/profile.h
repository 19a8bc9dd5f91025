/*
** profile.h - the per-node profiler (profile.c): time per node in the
** forward and backward passes of the steps run while a profile is attached.
*/
#ifndef SYSLAB_PROFILE_H
#define SYSLAB_PROFILE_H

#include "model.h"

typedef struct slM_Profile {
  int n;           /* nodes */
  double *forward; /* seconds per node, summed over the steps */
  double *backward;
  int steps;
  double started; /* the node now running */
} slM_Profile;

slM_Profile *slM_profile_attach(slM_Graph *g); /* starts recording on g */
void slM_profile_detach(slM_Graph *g);         /* stops; the profile stays with the caller */
void slM_profile_free(slM_Profile *p);
/* the hooks every node of a pass runs between (exec.c): the memory
** tagger's context, the profiler's clock and the memory timeline; the node
** index is negative outside any node */
void slM_node_begin(slM_Graph *g, int node, int backward);
void slM_node_end(slM_Graph *g, int node, int backward);

#endif
