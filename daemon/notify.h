/* SPDX-License-Identifier: Apache-2.0 */
/*
 * notify.h - the service manager's notification protocol (sd_notify(3)) without
 * libsystemd: datagrams of "KEY=VALUE" lines to the AF_UNIX socket $NOTIFY_SOCKET names
 * (a path, or an abstract name written with a leading '@'). falcond sends READY=1 when
 * its sockets are open, STATUS= lines with what it serves, WATCHDOG=1 from its loop at
 * half of $WATCHDOG_USEC (a hung loop stops the pings and systemd restarts it), and
 * STOPPING=1 when it shuts down. Outside systemd (no $NOTIFY_SOCKET) every call does
 * nothing.
 */
#ifndef FD_NOTIFY_H
#define FD_NOTIFY_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

struct fd_notify {
	int fd;                    /* -1: not run by a service manager */
	struct sockaddr_un addr;
	socklen_t addr_len;
	uint64_t watchdog_usec;    /* 0: no watchdog asked for */
	uint64_t sent, errors;
};

/* Read $NOTIFY_SOCKET and $WATCHDOG_USEC (honouring $WATCHDOG_PID: a watchdog meant for
 * another process is not ours). Returns 0 (also when there is no socket), or -EINVAL for
 * a $NOTIFY_SOCKET that is not a usable address (logged by the caller). */
int fd_notify_open(struct fd_notify *n);
void fd_notify_close(struct fd_notify *n);
/* Send one message (printf format, lines separated by '\n'). Returns 0, -errno, or 0
 * without sending when there is no socket. */
int fd_notify(struct fd_notify *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
