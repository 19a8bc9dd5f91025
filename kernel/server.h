/*
** server.h - the kernel process (server.c): its sockets and threads.
*/
#ifndef SYSLAB_JUPYTER_SERVER_H
#define SYSLAB_JUPYTER_SERVER_H

/* Serves the endpoints of the connection file at path until a
** shutdown_request, or until the parent process named by JPY_PARENT_PID
** has gone. Returns the exit status: 0, 1 when a socket cannot be bound,
** 2 when the connection file cannot be read. */
int slj_kernel_run(const char *path);

#endif
