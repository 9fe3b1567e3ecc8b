/* SPDX-License-Identifier: Apache-2.0 */
/*
 * notify.c - sd_notify(3)'s protocol for falcond (notify.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "notify.h"

int fd_notify_open(struct fd_notify *n)
{
	const char *path = getenv("NOTIFY_SOCKET"), *wd = getenv("WATCHDOG_USEC");
	const char *wpid = getenv("WATCHDOG_PID");
	size_t len;

	memset(n, 0, sizeof(*n));
	n->fd = -1;
	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(n->addr.sun_path))
		return -EINVAL;
	n->addr.sun_family = AF_UNIX;
	memcpy(n->addr.sun_path, path, len);
	if (path[0] == '@')
		n->addr.sun_path[0] = 0; /* an abstract socket: the name is not a path */
	n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len +
				  (path[0] == '/')); /* a path's terminating NUL counts */
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (n->fd < 0)
		return -errno;
	if (wd && (!wpid || strtol(wpid, NULL, 10) == (long)getpid())) {
		char *e;
		unsigned long long v = strtoull(wd, &e, 10);

		n->watchdog_usec = *e ? 0 : v;
	}
	return 0;
}

void fd_notify_close(struct fd_notify *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}

int fd_notify(struct fd_notify *n, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int len;

	if (n->fd < 0)
		return 0;
	va_start(ap, fmt);
	len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof(msg))
		return -EMSGSIZE;
	if (sendto(n->fd, msg, (size_t)len, MSG_NOSIGNAL, (struct sockaddr *)&n->addr,
		   n->addr_len) != len) {
		n->errors++;
		return -errno;
	}
	n->sent++;
	return 0;
}
