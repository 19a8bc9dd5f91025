/* report.h - `syslab report`: execute the lab notebooks and export the lab report. */
#ifndef SYSLAB_REPORT_H
#define SYSLAB_REPORT_H

/* the `syslab report` subcommand; argv[0] is "report". Returns the exit status. */
int slR_main(int argc, char **argv);

#endif
