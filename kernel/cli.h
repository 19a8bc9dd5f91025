/*
** cli.h - the subcommands of the `syslab` program, each a main of its own.
** argv[0] is the subcommand's name.
*/
#ifndef SYSLAB_CLI_H
#define SYSLAB_CLI_H

int slk_run_main(int argc, char **argv);      /* run.c */
int slk_kernel_main(int argc, char **argv);   /* kernel.c */
int slk_install_main(int argc, char **argv);  /* install.c */

#endif
