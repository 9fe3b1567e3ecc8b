/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric/name.c - addresses as the application sees them, and the name service that
 * turns a node and a service into an endpoint's address.
 *
 * Formats (info->addr_format, fixed per domain):
 *   FFI_ADDR_FALCON   struct ffi_addr: the endpoint's daemon and UD QP (fi_getname's
 *                     default; MPI inserts these and nothing needs asking)
 *   FI_SOCKADDR_IN    struct sockaddr_in / sockaddr_in6: the daemon's IP and the port of
 *   FI_SOCKADDR_IN6   the endpoint's name socket
 * An address known only by node and service (fi_getinfo's dest_addr, a sockaddr given to
 * fi_av_insert, fi_av_insertsvc) is an ffi_addr with FFI_AF_SVC: qpn holds the service
 * port. fi_av_insert resolves it: a UDP query to node:service, answered by the endpoint's
 * name socket with its whole address.
 *
 * The name socket: every endpoint has one, a UDP socket on the service port of its
 * info->src_addr (fi_getinfo with FI_SOURCE and a service), else on a port the kernel
 * picks; a thread of the endpoint answers on it, so that the answer does not wait for
 * the application's progress. The query and the answer are not authenticated: a forged
 * answer can name another endpoint, but not another daemon than the allow-list permits
 * (security psp authenticates daemons, not endpoints; ffi.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ffi.h"

#define NAME_Q_MAGIC 0x464e5131u    /* "FNQ1" */
#define NAME_A_MAGIC 0x464e4131u    /* "FNA1" */
#define NAME_RETRY_MS 100

struct name_q {
	uint32_t magic;
	uint32_t nonce;
};

struct name_a {
	uint32_t magic;
	uint32_t nonce;
	struct ffi_addr addr;
	uint16_t svc;
	uint16_t pad;
};

/* ---- formats ---- */

size_t ffi_addrlen(uint32_t fmt)
{
	switch (fmt) {
	case FI_SOCKADDR_IN: return sizeof(struct sockaddr_in);
	case FI_SOCKADDR_IN6: return sizeof(struct sockaddr_in6);
	case FFI_ADDR_FALCON: return sizeof(struct ffi_addr);
	default: return 0;
	}
}

/* The address at p in format fmt: 0 or -EINVAL (not an address of that format). */
int ffi_addr_from(uint32_t fmt, const void *p, struct ffi_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (!p)
		return -EINVAL;
	switch (fmt) {
	case FFI_ADDR_FALCON:
		memcpy(a, p, sizeof(*a));
		if ((a->family != 4 && a->family != 6) || (a->flags & ~FFI_AF_SVC) ||
		    ((a->flags & FFI_AF_SVC) && (!a->qpn || a->qpn > 65535)))
			return -EINVAL;
		return 0;
	case FI_SOCKADDR_IN: {
		struct sockaddr_in s;

		memcpy(&s, p, sizeof(s));
		if (s.sin_family != AF_INET || !s.sin_port)
			return -EINVAL;
		a->family = 4;
		memcpy(a->ip, &s.sin_addr, 4);
		break;
	}
	case FI_SOCKADDR_IN6: {
		struct sockaddr_in6 s;

		memcpy(&s, p, sizeof(s));
		if (s.sin6_family != AF_INET6 || !s.sin6_port)
			return -EINVAL;
		a->family = 6;
		memcpy(a->ip, &s.sin6_addr, 16);
		break;
	}
	default:
		return -EINVAL;
	}
	{
		const uint16_t *port = fmt == FI_SOCKADDR_IN ?
			&((const struct sockaddr_in *)p)->sin_port :
			&((const struct sockaddr_in6 *)p)->sin6_port;
		uint16_t v;

		memcpy(&v, port, sizeof(v));
		a->flags = FFI_AF_SVC;
		a->qpn = ntohs(v);
	}
	return 0;
}

/* a (its name port svc) in format fmt into p, ffi_addrlen(fmt) bytes. */
void ffi_addr_to(uint32_t fmt, const struct ffi_addr *a, uint16_t svc, void *p)
{
	if (fmt == FI_SOCKADDR_IN) {
		struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons(svc) };

		memcpy(&s.sin_addr, a->ip, 4);
		memcpy(p, &s, sizeof(s));
	} else if (fmt == FI_SOCKADDR_IN6) {
		struct sockaddr_in6 s = { .sin6_family = AF_INET6, .sin6_port = htons(svc) };

		memcpy(&s.sin6_addr, a->ip, 16);
		memcpy(p, &s, sizeof(s));
	} else {
		memcpy(p, a, sizeof(*a));
	}
}

/* node and service as an address to resolve (family wanted: 4 or 6, 0 any; node NULL:
 * only the port): 0 or -EINVAL (no such node, a service that is not a port number). */
int ffi_addr_of_node(const char *node, const char *service, int family, struct ffi_addr *a)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res = NULL, *i;
	unsigned long port = 0;
	int r = -EINVAL;

	memset(a, 0, sizeof(*a));
	if (service) {
		char *end;

		port = strtoul(service, &end, 10);
		if (*end || !*service || port > 65535)
			return -EINVAL;
	}
	a->flags = FFI_AF_SVC;
	a->qpn = (uint32_t)port;
	if (!node)
		return 0; /* a service alone: the port */
	hints.ai_family = family == 4 ? AF_INET : family == 6 ? AF_INET6 : AF_UNSPEC;
	if (getaddrinfo(node, NULL, &hints, &res))
		return -EINVAL;
	for (i = res; i; i = i->ai_next) {
		if (i->ai_family == AF_INET) {
			a->family = 4;
			memcpy(a->ip, &((struct sockaddr_in *)i->ai_addr)->sin_addr, 4);
		} else if (i->ai_family == AF_INET6) {
			a->family = 6;
			memcpy(a->ip, &((struct sockaddr_in6 *)i->ai_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		r = 0;
		break;
	}
	freeaddrinfo(res);
	return r;
}

static socklen_t sockaddr_of(const struct ffi_addr *a, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == 6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		memcpy(&s->sin6_addr, a->ip, 16);
		return sizeof(*s);
	}
	((struct sockaddr_in *)ss)->sin_family = AF_INET;
	((struct sockaddr_in *)ss)->sin_port = htons(port);
	memcpy(&((struct sockaddr_in *)ss)->sin_addr, a->ip, 4);
	return sizeof(struct sockaddr_in);
}

/* ---- resolving ---- */

/* The whole address of the endpoint whose name socket is at a (FFI_AF_SVC), asked for
 * up to timeout_ms: 0 (into out, its name port into *svc), -ETIMEDOUT, -EINVAL. */
int ffi_name_resolve(const struct ffi_addr *a, int timeout_ms, struct ffi_addr *out, uint16_t *svc)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct name_q q = { .magic = NAME_Q_MAGIC };
	struct timespec ts;
	uint64_t end = ffi_now_ms() + (uint64_t)timeout_ms;
	int fd, r = -ETIMEDOUT;

	if (!(a->flags & FFI_AF_SVC) || !a->qpn || a->qpn > 65535)
		return -EINVAL;
	sl = sockaddr_of(a, (uint16_t)a->qpn, &ss);
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	q.nonce = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() << 16;
	while (r == -ETIMEDOUT && ffi_now_ms() < end) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		struct name_a ans;

		if (sendto(fd, &q, sizeof(q), 0, (struct sockaddr *)&ss, sl) < 0 &&
		    errno != ECONNREFUSED) {
			r = -errno;
			break;
		}
		if (poll(&pf, 1, NAME_RETRY_MS) != 1)
			continue;
		if (recv(fd, &ans, sizeof(ans), 0) != sizeof(ans) || ans.magic != NAME_A_MAGIC ||
		    ans.nonce != q.nonce)
			continue; /* a refusal (ICMP: nobody there yet) or not our answer */
		if (ans.addr.flags || (ans.addr.family != 4 && ans.addr.family != 6))
			continue;
		*out = ans.addr;
		if (svc)
			*svc = ans.svc;
		r = 0;
	}
	close(fd);
	return r;
}

/* ---- the endpoint's name socket ---- */

static void *name_thread(void *arg)
{
	struct ffi_ep *ep = arg;

	for (;;) {
		struct pollfd pf[2] = { { .fd = ep->name_fd, .events = POLLIN },
					{ .fd = ep->name_stop, .events = POLLIN } };
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		struct name_q q;
		struct name_a ans;

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		if (!(pf[0].revents & POLLIN))
			continue;
		if (recvfrom(ep->name_fd, &q, sizeof(q), MSG_DONTWAIT, (struct sockaddr *)&from,
			     &fl) != sizeof(q) || q.magic != NAME_Q_MAGIC)
			continue; /* not a query: dropped */
		memset(&ans, 0, sizeof(ans));
		ans.magic = NAME_A_MAGIC;
		ans.nonce = q.nonce;
		ans.addr = ep->self;
		ans.svc = ep->svc;
		sendto(ep->name_fd, &ans, sizeof(ans), MSG_DONTWAIT, (struct sockaddr *)&from, fl);
	}
	return NULL;
}

/* Open the endpoint's name socket on port (0: any) and start answering. 0 or a negative
 * errno. A named port that is taken (a second endpoint from one info) falls back to any
 * port, with a warning: that endpoint is then found by its name, not its service. */
int ffi_name_open(struct ffi_ep *ep, uint16_t port)
{
	struct sockaddr_storage ss;
	struct ffi_addr any = { .family = ep->self.family };
	socklen_t sl = sockaddr_of(&any, port, &ss);
	int r;

	ep->name_fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (ep->name_fd < 0)
		return -errno;
	if (bind(ep->name_fd, (struct sockaddr *)&ss, sl)) {
		if (errno != EADDRINUSE || !port)
			return -errno;
		FFI_WARN(FI_LOG_EP_CTRL, "service %u is another endpoint's: this one takes any port\n",
			 port);
		sl = sockaddr_of(&any, 0, &ss);
		if (bind(ep->name_fd, (struct sockaddr *)&ss, sl))
			return -errno;
	}
	sl = sizeof(ss);
	if (getsockname(ep->name_fd, (struct sockaddr *)&ss, &sl))
		return -errno;
	ep->svc = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
			((struct sockaddr_in *)&ss)->sin_port);
	ep->name_stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ep->name_stop < 0)
		return -errno;
	r = pthread_create(&ep->name_thread, NULL, name_thread, ep);
	if (r)
		return -r;
	ep->name_running = true;
	return 0;
}

void ffi_name_close(struct ffi_ep *ep)
{
	uint64_t one = 1;

	if (ep->name_running) {
		if (write(ep->name_stop, &one, sizeof(one)) < 0)
			FFI_WARN(FI_LOG_EP_CTRL, "stopping the name thread: %s\n", strerror(errno));
		pthread_join(ep->name_thread, NULL);
		ep->name_running = false;
	}
	if (ep->name_stop >= 0)
		close(ep->name_stop);
	if (ep->name_fd >= 0)
		close(ep->name_fd);
	ep->name_stop = ep->name_fd = -1;
}
