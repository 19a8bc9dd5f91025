/*
** params.h - `syslab report -p NAME=VALUE`: names checked, values injected
** (params.c).
*/
#ifndef SYSLAB_PARAMS_H
#define SYSLAB_PARAMS_H

#include <jansson.h>

/* 1 when name may be set by -p: a name of the language (letters, digits
** and '_', not starting with a digit), not a keyword and not a command */
int slR_param_name_ok(const char *name);
/* warns (stderr) about each -p name the notebook's parameters cell does not set */
void slR_params_check(const char *path, json_t *nb, json_t *params);
/* papermill's convention: a cell tagged injected-parameters after the one
** tagged parameters (or before the first code cell, when there is none),
** and the parameters recorded in the notebook's metadata */
void slR_params_inject(json_t *nb, json_t *params);

#endif
