/*
** registry.h - the help texts the registry renders from the commands'
** records (registry.c).
*/
#ifndef SYSLAB_REGISTRY_H
#define SYSLAB_REGISTRY_H

#include "slcommand.h"

/* registry texts (registry.c); the caller frees */
char *slH_help_text(const sl_Command *cmd, int markdown);
char *slH_index_text(int markdown);
char *slH_arg_text(const sl_Command *cmd, const sl_Arg *arg, int markdown);
const char *slH_type_name(const sl_Arg *arg);

#endif
