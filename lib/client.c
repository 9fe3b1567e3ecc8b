/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.c - libfalcon-client (falcon/falcon.h): the control path over falcond's Unix
 * socket (falcon/api.h), the data path straight into shared rings (falcon/queue.h).
 *
 * Every object the library hands out is also on its context's list, so falcon_close
 * frees what the program did not; the daemon releases its side when the socket closes.
 *
 * Asynchronous events come on the event socket (api.h) and are read from it one at a
 * time, so that it polls readable exactly while one waits. That falcond has gone is
 * learnt from either socket hanging up, and kept in the context (gone): the post calls
 * read that flag and, at most every FALCON_DAEMON_CHECK_MS by the coarse clock, poll the
 * control socket (falcon.h, falcon_post_send).
 */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "falcon/api.h"
#include "falcon/falcon.h"
#include "falcon/queue.h"

#define API __attribute__((visibility("default")))
#define PAGE 4096ull
#define RING_DEFAULT 128u

/* src_id went into what was tail padding: arrays of completions keep their stride */
_Static_assert(sizeof(struct falcon_wc) == 48, "struct falcon_wc is ABI: 48 bytes");

enum kind { K_PD = 1, K_MR, K_CQ, K_LISTENER, K_QP, K_BUF, K_SRQ, K_AH, K_XRCD };

/* Every object starts with this: the context's list. */
struct node {
	struct node *next, *prev;
	struct falcon_context *ctx;
	uint32_t kind, handle;
};

struct falcon_context {
	struct node head;            /* list of everything below */
	pthread_mutex_t lock;        /* one request at a time on the socket */
	pthread_mutex_t list_lock;   /* the list: links, unlinks, falcon_get_async_event */
	int sock, db_fd;
	uint32_t seq;
	struct fc_api_hello_rep limits;
	int ptracer_set;             /* allow_daemon done */
	uint32_t poll_us;            /* falcon_wait_cq spins this long first (FALCON_POLL_US) */
	void *arena;                 /* the rings of our QPs and their doorbells (falcon/queue.h),
				      * or NULL: each QP's rings in a memfd of their own */
	/* asynchronous events (falcon_get_async_event) */
	pthread_mutex_t ev_lock;
	int ev_fd;                   /* our end of the event socket */
	uint32_t ev_next;            /* events of its head message returned so far */
	int fatal_given;             /* FALCON_EVENT_DEVICE_FATAL returned */
	/* falcond has gone (1; atomic), and when the post calls look next (coarse clock, ns;
	 * atomic) */
	int gone;
	uint64_t check_ns;
};

struct falcon_pd {
	struct node n;
	uint32_t refs;
};

struct buf {
	struct node n;
	uint8_t *addr;
	size_t len;
	int fd;
	uint32_t mrs;
};

struct lmr {
	struct falcon_mr pub;        /* first: the user's pointer */
	struct node n;
	struct falcon_pd *pd;
	struct buf *b;
};

struct falcon_cq {
	struct node n;
	void *ring;
	size_t bytes;
	int evfd;
	uint32_t refs;
};

struct falcon_listener {
	struct node n;
	uint16_t service;
};

struct falcon_xrcd {
	struct node n;
	uint32_t refs;
};

struct falcon_srq {
	struct node n;               /* first */
	void *ring;
	size_t bytes;
	struct falcon_pd *pd;
	struct falcon_xrcd *xrcd;    /* an XRC SRQ's domain, and the CQ it completes into */
	struct falcon_cq *cq;
	uint32_t max_sge, refs, srqn;
};

struct falcon_ah {
	struct node n;
	struct falcon_pd *pd;
	uint32_t ahn;                /* the daemon's number, written into UD work requests */
};

struct lqp {
	struct falcon_qp pub;        /* first */
	struct node n;
	void *rings, *sq, *rq;       /* sq / rq NULL where the type has none */
	size_t bytes;                /* of the rings' own mapping (0: in the arena) */
	uint32_t arena_bit;          /* its doorbell bit in the arena (0: the rings' flags) */
	struct falcon_pd *pd;
	struct falcon_cq *scq, *rcq;
	struct falcon_srq *srq;      /* receives from it (rq unused), or NULL */
	struct falcon_xrcd *xrcd;    /* XRC_RECV */
	uint32_t type;               /* enum falcon_qp_type */
	uint32_t max_send_sge, max_recv_sge;
	int by_api;                  /* falcon_create_qp: falcon_modify_qp moves it */
};

/* ---- errors and what they concern (falcon_error_detail) ----
 *
 * The detail of this thread's last failed call: a pointer, to falcon_strerror's text
 * (no copy: the data path's -ENOMEM of a full ring costs nothing more) or to a sentence
 * in detail_buf. A sentence found before the caller fails (an error reply's own,
 * falcon/api.h FC_API_WHY_MAX; resolve's) waits in pending_why with its status, and the
 * fail of that status takes it. */
static __thread const char *detail;
static __thread char detail_buf[FC_API_WHY_MAX + 160];
static __thread char pending_why[FC_API_WHY_MAX];
static __thread int pending_err;

/* Sets errno and the detail; returns -|err|. */
static int fail(int err)
{
	int e = err < 0 ? -err : err;

	if (pending_err == -e && pending_why[0]) {
		memcpy(detail_buf, pending_why, sizeof(pending_why));
		detail = detail_buf;
	} else {
		detail = falcon_strerror(e);
	}
	pending_err = 0;
	errno = e;
	return -e;
}

static void *fail_null(int err)
{
	fail(err);
	return NULL;
}

/* A sentence for the next fail of status err (printf format). Returns err. */
static int __attribute__((format(printf, 2, 3))) pend_why(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pending_why, sizeof(pending_why), fmt, ap);
	va_end(ap);
	pending_err = err;
	return err;
}

/* fail with a sentence of our own (printf format). */
static int __attribute__((format(printf, 2, 3))) fail_why(int err, const char *fmt, ...)
{
	va_list ap;
	int rc = fail(err);

	va_start(ap, fmt);
	vsnprintf(detail_buf, sizeof(detail_buf), fmt, ap);
	va_end(ap);
	detail = detail_buf;
	return rc;
}

static void link_node(struct falcon_context *ctx, struct node *n, uint32_t kind, uint32_t handle)
{
	n->ctx = ctx;
	n->kind = kind;
	n->handle = handle;
	pthread_mutex_lock(&ctx->list_lock);
	n->next = ctx->head.next;
	n->prev = &ctx->head;
	ctx->head.next->prev = n;
	ctx->head.next = n;
	pthread_mutex_unlock(&ctx->list_lock);
}

static void unlink_node(struct node *n)
{
	pthread_mutex_lock(&n->ctx->list_lock);
	n->prev->next = n->next;
	n->next->prev = n->prev;
	pthread_mutex_unlock(&n->ctx->list_lock);
}

/* falcond has gone: every later post returns -ENOTCONN. */
static void mark_gone(struct falcon_context *ctx)
{
	__atomic_store_n(&ctx->gone, 1, __ATOMIC_RELAXED);
}

/* ---- the control socket ---- */

/* An error reply's sentence (api.h: NUL-terminated, at most FC_API_WHY_MAX bytes), kept
 * for the fail of status rc; what is not printable ASCII is shown as '?'. */
static void keep_why(int rc, const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < sizeof(pending_why) - 1 && b[i]; i++)
		pending_why[i] = b[i] >= 0x20 && b[i] < 0x7F ? (char)b[i] : '?';
	pending_why[i] = 0;
	pending_err = i ? rc : 0;
}

/* Send a request, wait for its reply. Returns the reply's status (0 or -errno) with the
 * body copied to out (at most out_len bytes) and up to nfds descriptors in fds_out (the
 * others closed), or -ENOTCONN when the daemon is gone, -EPROTO for a broken reply. */
static int rpc(struct falcon_context *ctx, uint16_t type, const void *body, uint32_t len,
	       int fd_in, void *out, uint32_t out_len, int *fds_out, unsigned nfds)
{
	uint8_t buf[FC_API_MSG_MAX];
	struct fc_api_hdr *h = (struct fc_api_hdr *)buf;
	union {
		struct cmsghdr c;
		char room[CMSG_SPACE(sizeof(int) * FC_API_FDS_MAX)];
	} cm;
	struct iovec iov = { buf, sizeof(*h) + len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int rc;

	for (unsigned i = 0; i < nfds; i++)
		fds_out[i] = -1;
	pending_err = 0;
	pthread_mutex_lock(&ctx->lock);
	*h = (struct fc_api_hdr){ .hdr_size = sizeof(*h), .version = FC_API_VERSION, .type = type,
				  .len = sizeof(*h) + len, .seq = ++ctx->seq };
	if (len)
		memcpy(buf + sizeof(*h), body, len);
	rc = fc_api_send(ctx->sock, buf, sizeof(*h) + len, &fd_in, fd_in >= 0, 0);
	if (rc) {
		rc = rc == -EPIPE || rc == -ECONNRESET ? -ENOTCONN : rc;
		if (rc == -ENOTCONN)
			mark_gone(ctx);
		goto out;
	}
	for (;;) { /* replies to earlier requests cannot be pending: one at a time */
		ssize_t n;

		iov = (struct iovec){ buf, sizeof(buf) };
		m = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.room,
				     .msg_controllen = sizeof(cm.room) };
		n = recvmsg(ctx->sock, &m, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = -ENOTCONN;
			mark_gone(ctx);
			goto out;
		}
		unsigned got = 0;

		for (struct cmsghdr *ch = CMSG_FIRSTHDR(&m); ch; ch = CMSG_NXTHDR(&m, ch)) {
			if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; i < (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(ch) + i * sizeof(int), sizeof(int));
				if (got < nfds)
					fds_out[got++] = fd;
				else
					close(fd);
			}
		}
		if ((size_t)n < sizeof(*h) || h->hdr_size != sizeof(*h) || h->len != (size_t)n ||
		    h->version != FC_API_VERSION || h->type != type || h->seq != ctx->seq) {
			rc = -EPROTO;
			break;
		}
		rc = h->status;
		if (rc < 0 && (size_t)n > sizeof(*h))
			keep_why(rc, buf + sizeof(*h), (size_t)n - sizeof(*h));
		if (!rc && n - sizeof(*h) != out_len)
			rc = -EPROTO;
		if (!rc && out_len)
			memcpy(out, buf + sizeof(*h), out_len);
		break;
	}
	if (rc)
		for (unsigned i = 0; i < nfds; i++)
			if (fds_out[i] >= 0) {
				close(fds_out[i]);
				fds_out[i] = -1;
			}
out:
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

/* FALCON_POLL_US: microseconds falcon_wait_cq polls before it sleeps (0 .. 1000000; unset
 * or not a number: 0, sleep at once). */
static uint32_t env_poll_us(void)
{
	const char *s = getenv("FALCON_POLL_US");
	char *e;
	unsigned long v;

	if (!s || !*s)
		return 0;
	v = strtoul(s, &e, 10);
	if (*e || v > 1000000)
		return 0;
	return (uint32_t)v;
}

/* The arena the daemon sent with its HELLO reply (afd; < 0: none, QPs get rings of their
 * own): mapped and checked. 0 or -errno (-EPROTO: not a layout we know). */
static int arena_map(struct falcon_context *ctx, int afd)
{
	struct stat st;
	int rc = 0;

	if (afd < 0)
		return 0;
	if (fstat(afd, &st) < 0 || (uint64_t)st.st_size != FC_ARENA_BYTES) {
		rc = -EPROTO;
	} else if ((ctx->arena = mmap(NULL, FC_ARENA_BYTES, PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_NORESERVE, afd, 0)) == MAP_FAILED) {
		rc = -errno;
		ctx->arena = NULL;
	} else if (fc_arena_check(ctx->arena, FC_ARENA_BYTES)) {
		munmap(ctx->arena, FC_ARENA_BYTES);
		ctx->arena = NULL;
		rc = -EPROTO;
	}
	close(afd);
	return rc;
}

/* FALCON_ARENA=0: ask for no arena (each QP's rings in a memfd of their own, as with a
 * daemon that has none). */
static int env_arena(void)
{
	const char *s = getenv("FALCON_ARENA");

	return !s || strcmp(s, "0");
}

/* Why connecting to falcond's socket at path failed (errno e), in a sentence that names
 * the path and where it came from. */
static int open_fail(int e, const char *path, const char *from)
{
	const char *hint = "";

	switch (e) {
	case ENOENT: hint = ": no such socket (is falcond running? is it its --runtime-dir?)"; break;
	case ECONNREFUSED: hint = ": nobody listens (a stale socket: falcond has stopped)"; break;
	case EACCES: hint = ": permission denied (falcond's sockets are for its group, falcon)"; break;
	case ENOTSOCK: hint = ": not a socket"; break;
	}
	return fail_why(-e, "falcond socket %s (%s)%s%s%s", path, from, hint, *hint ? "" : ": ",
			*hint ? "" : strerror(e));
}

API struct falcon_context *falcon_open(const char *path)
{
	struct falcon_context *ctx;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct fc_api_hello hello = { .client_version = FC_API_VERSION,
				      .flags = env_arena() ? FC_API_HELLO_ARENA : 0 };
	const char *from = "falcon_open's argument";
	int rc, rfd[2];

	if (!path) {
		path = getenv("FALCON_SOCKET");
		from = "$FALCON_SOCKET";
	}
	if (!path || !*path) {
		path = FALCON_SOCKET_DEFAULT;
		from = "the default";
	}
	if (strlen(path) >= sizeof(un.sun_path)) {
		fail_why(-ENAMETOOLONG, "falcond socket %s (%s): longer than %zu bytes", path, from,
			 sizeof(un.sun_path) - 1);
		return NULL;
	}
	strcpy(un.sun_path, path);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return fail_null(-ENOMEM);
	ctx->head.next = ctx->head.prev = &ctx->head;
	ctx->poll_us = env_poll_us();
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->list_lock, NULL);
	pthread_mutex_init(&ctx->ev_lock, NULL);
	ctx->ev_fd = -1;
	ctx->db_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ctx->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ctx->db_fd < 0 || ctx->sock < 0) {
		rc = fail(-errno);
		goto err;
	}
	if (connect(ctx->sock, (struct sockaddr *)&un, sizeof(un)) < 0) {
		rc = open_fail(errno, path, from);
		goto err;
	}
	/* the reply brings our end of the event socket (api.h) */
	rc = rpc(ctx, FC_API_HELLO, &hello, sizeof(hello), ctx->db_fd, &ctx->limits,
		 sizeof(ctx->limits), rfd, 2);
	ctx->ev_fd = rfd[0];
	if (!rc && ctx->ev_fd < 0)
		rc = -EPROTO;
	if (rc == -ENOTCONN || rc == -EPROTO)
		rc = fail_why(rc, "falcond at %s (%s) %s (this library speaks API version %u; "
			      "falcond's log says why)", path, from, rc == -EPROTO ?
			      "answered in another protocol version" : "closed the connection at once "
			      "(too many clients, or another API version)", FC_API_VERSION);
	else if (rc)
		rc = fail(rc);
	if (rc && rfd[1] >= 0)
		close(rfd[1]);
	else if (!rc && (rc = arena_map(ctx, rfd[1]))) /* it closes rfd[1] */
		rc = fail_why(rc, "falcond at %s (%s) sent an arena this library cannot map",
			      path, from);
	if (rc)
		goto err;
	return ctx;
err:
	if (ctx->sock >= 0)
		close(ctx->sock);
	if (ctx->db_fd >= 0)
		close(ctx->db_fd);
	if (ctx->ev_fd >= 0)
		close(ctx->ev_fd);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->list_lock);
	pthread_mutex_destroy(&ctx->ev_lock);
	free(ctx);
	errno = -rc; /* and the detail, set above */
	return NULL;
}

static void free_node(struct node *n)
{
	unlink_node(n);
	switch (n->kind) {
	case K_BUF: {
		struct buf *b = (struct buf *)n;

		munmap(b->addr, b->len);
		close(b->fd);
		free(b);
		break;
	}
	case K_MR:
		free((uint8_t *)n - offsetof(struct lmr, n));
		break;
	case K_CQ: {
		struct falcon_cq *cq = (struct falcon_cq *)n;

		munmap(cq->ring, cq->bytes);
		close(cq->evfd);
		free(cq);
		break;
	}
	case K_QP: {
		struct lqp *q = (struct lqp *)((uint8_t *)n - offsetof(struct lqp, n));

		if (q->rings && q->bytes)
			munmap(q->rings, q->bytes);
		free(q);
		break;
	}
	case K_SRQ: {
		struct falcon_srq *s = (struct falcon_srq *)n;

		munmap(s->ring, s->bytes);
		free(s);
		break;
	}
	default:
		free(n);
	}
}

API int falcon_close(struct falcon_context *ctx)
{
	if (!ctx)
		return fail(-EINVAL);
	close(ctx->sock); /* the daemon releases everything of ours now */
	while (ctx->head.next != &ctx->head)
		free_node(ctx->head.next);
	if (ctx->arena)
		munmap(ctx->arena, FC_ARENA_BYTES);
	close(ctx->db_fd);
	close(ctx->ev_fd);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->list_lock);
	pthread_mutex_destroy(&ctx->ev_lock);
	free(ctx);
	return 0;
}

/* The daemon's reply in the public form (every field the reply has). */
static void device_attr_of(const struct fc_api_device_rep *r, struct falcon_device_attr *a)
{
	*a = (struct falcon_device_attr){
		.max_msg_size = r->max_msg_bytes, .max_mr_size = r->max_mr_bytes,
		.mtu = r->mtu_bytes, .max_qp = r->max_qps, .max_conn = r->max_conns,
		.max_cq = r->max_cqs, .max_cqe = r->max_cqes, .max_mr = r->max_mrs,
		.max_pd = r->max_pds, .max_srq = r->max_srqs, .max_ah = r->max_ahs,
		.max_send_wr = r->max_send_wrs, .max_recv_wr = r->max_recv_wrs,
		.max_srq_wr = r->max_srq_wrs, .max_send_sge = r->max_send_sge,
		.max_recv_sge = r->max_recv_sge, .max_srq_sge = r->max_srq_sge,
		.max_inflight = r->max_inflight, .max_objects = r->max_objs,
		.max_clients = r->max_clients, .atomic_cap = r->atomic_cap,
		.atomic_size = r->atomic_bytes, .flags = r->flags,
		.max_client_qp = r->max_client_qps, .max_client_mr = r->max_client_mrs,
	};
}

API int falcon_query_device(struct falcon_context *ctx, struct falcon_device_attr *attr)
{
	struct fc_api_device_rep rep;
	struct falcon_device_attr a;
	size_t size;
	int rc;

	if (!ctx || !attr || attr->size < sizeof(attr->size))
		return fail(-EINVAL);
	size = attr->size;
	rc = rpc(ctx, FC_API_QUERY_DEVICE, NULL, 0, -1, &rep, sizeof(rep), NULL, 0);
	if (rc)
		return fail(rc == -EINVAL ? -EOPNOTSUPP : rc); /* an older daemon's answer */
	device_attr_of(&rep, &a);
	a.size = size;
	/* a caller built against an older header gets its part, a newer one zeros past ours */
	memcpy(attr, &a, size < sizeof(a) ? size : sizeof(a));
	if (size > sizeof(a))
		memset((uint8_t *)attr + sizeof(a), 0, size - sizeof(a));
	return 0;
}

API int falcon_query_addr(struct falcon_context *ctx, char *addr, size_t len, uint16_t *cm_port,
			  uint16_t *data_port)
{
	struct fc_api_addr_rep rep;
	int rc;

	if (!ctx || !addr || !len)
		return fail(-EINVAL);
	rc = rpc(ctx, FC_API_QUERY_ADDR, NULL, 0, -1, &rep, sizeof(rep), NULL, 0);
	if (rc)
		return fail(rc == -EINVAL ? -EOPNOTSUPP : rc); /* an older daemon's answer */
	rep.addr[sizeof(rep.addr) - 1] = 0;
	if (strlen(rep.addr) >= len)
		return fail(-ENAMETOOLONG);
	strcpy(addr, rep.addr);
	if (cm_port)
		*cm_port = rep.cm_port;
	if (data_port)
		*data_port = rep.data_port;
	return 0;
}

/* ---- PD, buffers, MR ---- */

API struct falcon_pd *falcon_alloc_pd(struct falcon_context *ctx)
{
	struct fc_api_handle rep;
	struct falcon_pd *pd;
	int rc;

	if (!ctx)
		return fail_null(-EINVAL);
	if (!(pd = calloc(1, sizeof(*pd))))
		return fail_null(-ENOMEM);
	rc = rpc(ctx, FC_API_ALLOC_PD, NULL, 0, -1, &rep, sizeof(rep), NULL, 0);
	if (rc) {
		free(pd);
		return fail_null(rc);
	}
	link_node(ctx, &pd->n, K_PD, rep.handle);
	return pd;
}

static int destroy(struct node *n, uint16_t type)
{
	struct fc_api_handle h = { .handle = n->handle };

	return rpc(n->ctx, type, &h, sizeof(h), -1, NULL, 0, NULL, 0);
}

API int falcon_dealloc_pd(struct falcon_pd *pd)
{
	int rc;

	if (!pd)
		return fail(-EINVAL);
	if (pd->refs)
		return fail(-EBUSY);
	if ((rc = destroy(&pd->n, FC_API_DEALLOC_PD)) && rc != -ENOTCONN)
		return fail(rc);
	free_node(&pd->n);
	return 0;
}

API void *falcon_alloc_buf(struct falcon_context *ctx, size_t len)
{
	struct buf *b;

	if (!ctx || !len || len > (1ull << 40))
		return fail_null(-EINVAL);
	if (!(b = calloc(1, sizeof(*b))))
		return fail_null(-ENOMEM);
	b->len = (len + PAGE - 1) & ~(PAGE - 1);
	b->fd = memfd_create("falcon-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (b->fd < 0 || ftruncate(b->fd, (off_t)b->len) < 0 ||
	    fcntl(b->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    (b->addr = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0)) ==
		    MAP_FAILED) {
		int e = -errno;

		if (b->fd >= 0)
			close(b->fd);
		free(b);
		return fail_null(e);
	}
	link_node(ctx, &b->n, K_BUF, 0);
	return b->addr;
}

static struct buf *buf_of(struct falcon_context *ctx, const void *addr, size_t len)
{
	const uint8_t *p = addr;

	for (struct node *n = ctx->head.next; n != &ctx->head; n = n->next) {
		struct buf *b = (struct buf *)n;

		if (n->kind == K_BUF && p >= b->addr && p < b->addr + b->len &&
		    len <= (size_t)(b->addr + b->len - p))
			return b;
	}
	return NULL;
}

API int falcon_free_buf(struct falcon_context *ctx, void *addr)
{
	struct buf *b = ctx ? buf_of(ctx, addr, 0) : NULL;

	if (!b || b->addr != addr)
		return fail(-EINVAL);
	if (b->mrs)
		return fail(-EBUSY);
	free_node(&b->n);
	return 0;
}

/* Let the daemon (our socket's peer) read and write our memory under Yama's ptrace scope
 * 1 (elsewhere prctl fails with EINVAL and nothing is needed). */
static void allow_daemon(struct falcon_context *ctx)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (ctx->ptracer_set)
		return;
	if (!getsockopt(ctx->sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) && cr.pid > 0)
		(void)prctl(PR_SET_PTRACER, (unsigned long)cr.pid, 0, 0, 0);
	ctx->ptracer_set = 1;
}

API struct falcon_mr *falcon_reg_mr(struct falcon_pd *pd, void *addr, size_t len, unsigned access)
{
	struct fc_api_reg_mr m;
	struct fc_api_reg_mr_rep rep;
	struct lmr *mr;
	struct buf *b;
	int rc;

	if (!pd || !addr || !len || (access & ~0x1Fu))
		return fail_null(-EINVAL);
	/* inside a buffer of falcon_alloc_buf: the daemon maps it (zero copy); elsewhere it
	 * reaches our memory by copy (process_vm_readv/writev), which Yama's ptrace scope 1
	 * allows only to a process we name: the daemon, our socket's peer */
	b = buf_of(pd->n.ctx, addr, len);
	if (!b)
		allow_daemon(pd->n.ctx);
	m = (struct fc_api_reg_mr){ .pd = pd->n.handle, .access = access,
				    .iova = (uint64_t)(uintptr_t)addr, .len = len,
				    .offset = b ? (uint64_t)((uint8_t *)addr - b->addr) : 0 };
	if (!(mr = calloc(1, sizeof(*mr))))
		return fail_null(-ENOMEM);
	rc = rpc(pd->n.ctx, FC_API_REG_MR, &m, sizeof(m), b ? b->fd : -1, &rep, sizeof(rep),
		 NULL, 0);
	if (rc) {
		free(mr);
		return fail_null(rc);
	}
	mr->pub = (struct falcon_mr){ .addr = addr, .length = len, .lkey = rep.lkey,
				      .rkey = rep.rkey };
	mr->pd = pd;
	mr->b = b;
	pd->refs++;
	if (b)
		b->mrs++;
	link_node(pd->n.ctx, &mr->n, K_MR, rep.handle);
	return &mr->pub;
}

API int falcon_dereg_mr(struct falcon_mr *pub)
{
	struct lmr *mr = (struct lmr *)pub;
	int rc;

	if (!pub)
		return fail(-EINVAL);
	if ((rc = destroy(&mr->n, FC_API_DEREG_MR)) && rc != -ENOTCONN)
		return fail(rc);
	mr->pd->refs--;
	if (mr->b)
		mr->b->mrs--;
	free_node(&mr->n);
	return 0;
}

/* ---- CQ ---- */

static uint32_t pow2_up(uint32_t n, uint32_t dflt)
{
	uint32_t p = 1;

	if (!n)
		return dflt;
	while (p < n && p < (1u << 30))
		p <<= 1;
	return p;
}

API struct falcon_cq *falcon_create_cq(struct falcon_context *ctx, int cqe)
{
	struct fc_api_create_cq m;
	struct fc_api_create_cq_rep rep;
	struct falcon_cq *cq;
	int fds[2], rc;

	if (!ctx || cqe <= 0 || cqe > (int)FC_RING_ENTRIES_MAX)
		return fail_null(-EINVAL);
	m = (struct fc_api_create_cq){ .entries = pow2_up((uint32_t)cqe, RING_DEFAULT) };
	if (!(cq = calloc(1, sizeof(*cq))))
		return fail_null(-ENOMEM);
	rc = rpc(ctx, FC_API_CREATE_CQ, &m, sizeof(m), -1, &rep, sizeof(rep), fds, 2);
	if (!rc && (fds[0] < 0 || fds[1] < 0))
		rc = -EPROTO;
	if (!rc) {
		cq->ring = mmap(NULL, rep.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
		if (cq->ring == MAP_FAILED)
			rc = -errno;
		else if (fc_ring_check(cq->ring, rep.ring_bytes, FC_RING_CQ))
			rc = -EPROTO;
	}
	if (fds[0] >= 0)
		close(fds[0]);
	if (rc) {
		if (cq->ring && cq->ring != MAP_FAILED)
			munmap(cq->ring, rep.ring_bytes);
		if (fds[1] >= 0)
			close(fds[1]);
		free(cq);
		return fail_null(rc);
	}
	cq->bytes = rep.ring_bytes;
	cq->evfd = fds[1];
	link_node(ctx, &cq->n, K_CQ, rep.handle);
	return cq;
}

API int falcon_destroy_cq(struct falcon_cq *cq)
{
	int rc;

	if (!cq)
		return fail(-EINVAL);
	if (cq->refs)
		return fail(-EBUSY);
	if ((rc = destroy(&cq->n, FC_API_DESTROY_CQ)) && rc != -ENOTCONN)
		return fail(rc);
	free_node(&cq->n);
	return 0;
}

API int falcon_poll_cq(struct falcon_cq *cq, int n, struct falcon_wc *wc)
{
	int bad = 0;
	uint32_t avail, k;

	if (!cq || n < 0 || (n && !wc))
		return fail(-EINVAL);
	avail = fc_ring_avail(cq->ring, &bad);
	/* empty: has it overflowed? (falcon.h; the status word sits on the line of the
	 * producer's index, which we read anyway). Completions published before the flag are
	 * visible once it is: look again, they are returned first. */
	if (!avail && n && !bad && (fc_ring_status(cq->ring) & FC_RING_ST_OVERFLOW) &&
	    !(avail = fc_ring_avail(cq->ring, &bad)) && !bad)
		return fail(-EOVERFLOW);
	if (bad)
		return fail(-EPROTO);
	k = avail < (uint32_t)n ? avail : (uint32_t)n;
	for (uint32_t i = 0; i < k; i++) {
		const struct fc_ring_cqe *e =
			fc_ring_entry(cq->ring, ((struct fc_ring_hdr *)cq->ring)->cons + i);

		wc[i] = (struct falcon_wc){
			.wr_id = e->wr_id, .status = e->status, .opcode = e->opcode,
			.wc_flags = e->flags & (FALCON_WC_WITH_IMM | FALCON_WC_WITH_INV),
			.byte_len = e->byte_len, .imm_data = e->imm_data,
			.invalidated_rkey = e->invalidated_rkey, .qp_num = e->qp_num,
			.src_qp = e->src_qp, .vendor_err = e->vendor_err,
			.src_id = e->src_id,
		};
	}
	if (k)
		fc_ring_consume(cq->ring, k);
	return (int)k;
}

API int falcon_req_notify_cq(struct falcon_cq *cq, int solicited_only)
{
	struct fc_ring_hdr *h;

	(void)solicited_only;
	if (!cq)
		return fail(-EINVAL);
	h = cq->ring;
	fc_ring_set_need_wakeup(h, 1); /* fenced: the poll after it sees what came before */
	return 0;
}

API int falcon_cq_fd(const struct falcon_cq *cq)
{
	return cq ? cq->evfd : fail(-EINVAL);
}

API int falcon_cq_ack_events(struct falcon_cq *cq)
{
	uint64_t v;

	if (!cq)
		return fail(-EINVAL);
	return read(cq->evfd, &v, sizeof(v)) == sizeof(v) ? 0 : fail(-errno);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* FALCON_POLL_US: poll the ring for up to us microseconds (and no longer than timeout_ms,
 * unless it is -1), offering the CPU between empty polls: falcond may need this core.
 * Returns what falcon_poll_cq returned last. */
static int spin_cq(struct falcon_cq *cq, int n, struct falcon_wc *wc, uint32_t us,
		   int timeout_ms)
{
	uint64_t now = mono_ns(), end;
	int rc;

	if (timeout_ms >= 0 && (uint64_t)timeout_ms * 1000u < us)
		us = (uint32_t)timeout_ms * 1000u;
	end = now + us * 1000ull;
	while (!(rc = falcon_poll_cq(cq, n, wc)) && mono_ns() < end)
		sched_yield();
	return rc;
}

API int falcon_wait_cq(struct falcon_cq *cq, int n, struct falcon_wc *wc, int timeout_ms)
{
	int64_t end = timeout_ms < 0 ? INT64_MAX : mono_ms() + timeout_ms;
	int rc;

	if (cq && cq->n.ctx->poll_us && (rc = spin_cq(cq, n, wc, cq->n.ctx->poll_us, timeout_ms)))
		return rc;
	for (;;) {
		if ((rc = falcon_poll_cq(cq, n, wc)))
			return rc;
		falcon_req_notify_cq(cq, 0);
		if ((rc = falcon_poll_cq(cq, n, wc)))
			return rc;
		int64_t left = end == INT64_MAX ? -1 : end - mono_ms();
		/* the control socket hangs up when falcond dies: no completion will come */
		struct pollfd p[2] = { { .fd = cq->evfd, .events = POLLIN },
				       { .fd = cq->n.ctx->sock, .events = 0 } };

		if (end != INT64_MAX && left <= 0)
			return 0;
		rc = poll(p, 2, left > INT32_MAX ? INT32_MAX : (int)left);
		if (rc < 0 && errno != EINTR)
			return fail(-errno);
		if (rc > 0 && (p[1].revents & (POLLHUP | POLLERR))) {
			mark_gone(cq->n.ctx);
			if ((rc = falcon_poll_cq(cq, n, wc)))
				return rc;
			return fail(-ENOTCONN);
		}
		if (rc > 0 && (p[0].revents & POLLIN))
			falcon_cq_ack_events(cq);
	}
}

/* ---- connections and QPs ---- */

/* A field of the attr, or 0 / NULL when the caller's attr predates it (its size). */
#define ATTR_HAS(a, f) ((a)->size >= offsetof(__typeof__(*(a)), f) + sizeof((a)->f))
#define ATTR_GET(a, f) (ATTR_HAS(a, f) ? (a)->f : 0)

static int qp_attr(struct falcon_pd *pd, const struct falcon_qp_init_attr *a,
		   struct fc_api_qp_attr *q)
{
	uint32_t t;
	int sends, recvs, timers;
	struct falcon_srq *srq;
	struct falcon_xrcd *xrcd;

	if (!pd || !a || a->size < offsetof(struct falcon_qp_init_attr, flags) + 2)
		return -EINVAL;
	t = a->qp_type ? a->qp_type : FALCON_QPT_RC;
	sends = t != FALCON_QPT_XRC_RECV;
	recvs = t == FALCON_QPT_RC || t == FALCON_QPT_UD;
	srq = recvs ? ATTR_GET(a, srq) : NULL;
	xrcd = t == FALCON_QPT_XRC_RECV ? ATTR_GET(a, xrcd) : NULL;
	if (t > FALCON_QPT_XRC_RECV || (sends && (!a->send_cq || a->send_cq->n.ctx != pd->n.ctx)) ||
	    (recvs && (!a->recv_cq || a->recv_cq->n.ctx != pd->n.ctx)) ||
	    (t == FALCON_QPT_XRC_RECV && (!xrcd || xrcd->n.ctx != pd->n.ctx)) ||
	    a->max_send_sge > FC_RING_SGE_MAX || a->max_recv_sge > FC_RING_SGE_MAX ||
	    a->max_send_wr > FC_RING_ENTRIES_MAX || a->max_recv_wr > FC_RING_ENTRIES_MAX ||
	    a->ordering > FALCON_ORDER_WEAK || a->err_mode > FALCON_ERR_CIE || a->rnr_retry > 7 ||
	    a->min_rnr_timer > 31 || (srq && (srq->pd != pd || srq->xrcd)) ||
	    ATTR_GET(a, timeout) > 31 || ATTR_GET(a, retry_cnt) > 7)
		return -EINVAL;
	timers = a->flags & FALCON_QP_TIMEOUT_SET && ATTR_HAS(a, retry_cnt);
	*q = (struct fc_api_qp_attr){
		.pd = pd->n.handle, .send_cq = sends ? a->send_cq->n.handle : 0,
		.recv_cq = recvs ? a->recv_cq->n.handle : 0,
		.sq_entries = sends ? pow2_up(a->max_send_wr, RING_DEFAULT) : 0,
		.rq_entries = recvs && !srq ? pow2_up(a->max_recv_wr, RING_DEFAULT) : 0,
		.max_send_sge = a->max_send_sge ? a->max_send_sge : FC_RING_SGE_MAX,
		.max_recv_sge = a->max_recv_sge ? a->max_recv_sge : FC_RING_SGE_MAX,
		.max_inflight = sends ? (a->max_inflight ? a->max_inflight : 128) : 0,
		.type = (uint8_t)t, .ordering = (uint8_t)a->ordering,
		.err_mode = (uint8_t)a->err_mode,
		.rnr_retry = (a->flags & FALCON_QP_RNR_RETRY_SET) ? a->rnr_retry : 7,
		.min_rnr_timer = a->min_rnr_timer ? a->min_rnr_timer : 1,
		.timeout = timers ? a->timeout : FALCON_QP_TIMEOUT_DEFAULT,
		.retry_cnt = timers ? a->retry_cnt : FALCON_QP_RETRY_CNT_DEFAULT,
		.srq = srq ? srq->n.handle : 0,
		.xrcd = xrcd ? xrcd->n.handle : 0,
		.qkey = t == FALCON_QPT_UD ? ATTR_GET(a, qkey) : 0,
	};
	return 0;
}

/* The reply of CONNECT / ACCEPT / CREATE_QP: map the rings (fd < 0: a QP without), make
 * the QP. */
static struct falcon_qp *qp_make(struct falcon_pd *pd, const struct falcon_qp_init_attr *a,
				 const struct fc_api_qp_attr *q, const struct fc_api_qp_rep *rep,
				 int fd)
{
	struct lqp *qp = calloc(1, sizeof(*qp));
	uint64_t aoff = (uint64_t)rep->arena_unit * FC_ARENA_UNIT;
	int rc = 0;

	if (!qp) {
		rc = -ENOMEM;
	} else if (rep->arena_unit) { /* in the arena: no memfd */
		if (fd >= 0 || !pd->n.ctx->arena || aoff < FC_ARENA_RINGS_OFF ||
		    !rep->rings_bytes || rep->rings_bytes > FC_ARENA_BYTES - aoff)
			rc = -EPROTO;
		else
			qp->rings = (uint8_t *)pd->n.ctx->arena + aoff;
	} else if ((fd < 0) != !rep->rings_bytes) {
		rc = -EPROTO;
	} else if (fd >= 0 && (qp->rings = mmap(NULL, rep->rings_bytes, PROT_READ | PROT_WRITE,
						MAP_SHARED, fd, 0)) == MAP_FAILED) {
		rc = -errno;
		qp->rings = NULL;
	}
	if (!rc && ((q->sq_entries && fc_ring_check(qp->rings, rep->rq_offset ? rep->rq_offset :
								  rep->rings_bytes, FC_RING_SQ)) ||
		    (q->rq_entries && (!rep->rq_offset || rep->rq_offset >= rep->rings_bytes ||
				       fc_ring_check((uint8_t *)qp->rings + rep->rq_offset,
						     rep->rings_bytes - rep->rq_offset,
						     FC_RING_RQ)))))
		rc = -EPROTO;
	if (fd >= 0)
		close(fd);
	if (rc) {
		if (qp && qp->rings && !rep->arena_unit)
			munmap(qp->rings, rep->rings_bytes);
		free(qp);
		/* the daemon holds a QP we cannot use: give it back */
		struct fc_api_handle h = { .handle = rep->handle };

		rpc(pd->n.ctx, FC_API_DESTROY_QP, &h, sizeof(h), -1, NULL, 0, NULL, 0);
		return fail_null(rc);
	}
	qp->pub = (struct falcon_qp){ .qp_num = rep->qpn, .remote_qp_num = rep->remote_qpn };
	qp->bytes = rep->arena_unit ? 0 : rep->rings_bytes;
	qp->arena_bit = rep->arena_unit;
	qp->type = q->type;
	qp->sq = q->sq_entries ? qp->rings : NULL;
	qp->rq = q->rq_entries ? (uint8_t *)qp->rings + rep->rq_offset : NULL;
	qp->pd = pd;
	qp->scq = q->send_cq ? a->send_cq : NULL;
	qp->rcq = q->recv_cq ? a->recv_cq : NULL;
	qp->srq = q->srq ? a->srq : NULL;
	qp->xrcd = q->xrcd ? a->xrcd : NULL;
	qp->max_send_sge = q->max_send_sge;
	qp->max_recv_sge = q->max_recv_sge;
	pd->refs++;
	if (qp->scq)
		qp->scq->refs++;
	if (qp->rcq)
		qp->rcq->refs++;
	if (qp->srq)
		qp->srq->refs++;
	if (qp->xrcd)
		qp->xrcd->refs++;
	link_node(pd->n.ctx, &qp->n, K_QP, rep->handle);
	return &qp->pub;
}

static int bad_host(const char *host)
{
	return pend_why(-EINVAL, "peer '%s': not NAME, NAME:PORT, [IPv6]:PORT or IPv6 (PORT: "
			"its falcond's CM port, 1 to 65535)", host ? host : "(null)");
}

/* "name", "name:port", "[v6]:port", "v6" */
static int resolve(const char *host, uint8_t addr[28], uint8_t *addr_len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res;
	const char *given = host; /* for the sentence: host moves past a '[' */
	unsigned long p = FALCON_CM_PORT_DEFAULT;
	const char *port = NULL, *end;
	char name[256];
	size_t len;
	int rc;

	if (!host || !*host)
		return bad_host(given);
	if (host[0] == '[') {
		if (!(end = strchr(host, ']')))
			return bad_host(given);
		if (end[1] == ':')
			port = end + 2;
		else if (end[1])
			return bad_host(given);
		host++;
	} else if ((end = strchr(host, ':')) && end == strrchr(host, ':')) {
		port = end + 1;
	} else {
		end = host + strlen(host); /* a name, or an IPv6 literal without a port */
	}
	len = (size_t)(end - host);
	if (!len || len >= sizeof(name))
		return bad_host(given);
	memcpy(name, host, len);
	name[len] = 0;
	if (port) {
		char *e;

		p = strtoul(port, &e, 10);
		if (*e || !p || p > 65535)
			return bad_host(given);
	}
	if ((rc = getaddrinfo(name, NULL, &hints, &res)))
		return pend_why(rc == EAI_NONAME || rc == EAI_NODATA ? -ENOENT : -EHOSTUNREACH,
				"%s: the name does not resolve: %s", name, gai_strerror(rc));
	if (res->ai_addrlen > 28) {
		freeaddrinfo(res);
		return pend_why(-EAFNOSUPPORT, "%s: an address family falcond does not use", name);
	}
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	*addr_len = (uint8_t)res->ai_addrlen;
	/* sin_port and sin6_port sit at the same offset */
	((struct sockaddr_in *)(void *)addr)->sin_port = htons((uint16_t)p);
	freeaddrinfo(res);
	return 0;
}

API struct falcon_qp *falcon_connect(struct falcon_pd *pd, const char *host, uint16_t service,
				     const struct falcon_qp_init_attr *attr, int timeout_ms)
{
	struct fc_api_connect m = { .service = service, .timeout_ms = timeout_ms };
	struct fc_api_qp_rep rep;
	int fd, rc;

	if (!service || (rc = qp_attr(pd, attr, &m.qp)))
		return fail_null(-EINVAL);
	if (m.qp.type != FALCON_QPT_RC && m.qp.type != FALCON_QPT_XRC_SEND)
		return fail_null(-EINVAL);
	if ((rc = resolve(host, m.addr, &m.addr_len)))
		return fail_null(rc);
	rc = rpc(pd->n.ctx, FC_API_CONNECT, &m, sizeof(m), -1, &rep, sizeof(rep), &fd, 1);
	if (rc)
		return fail_null(rc);
	return qp_make(pd, attr, &m.qp, &rep, fd);
}

API struct falcon_listener *falcon_listen(struct falcon_context *ctx, uint16_t service, int backlog)
{
	struct fc_api_listen m = { .service = service,
				   .backlog = (uint16_t)(backlog < 1 ? 1 : backlog > 1024 ? 1024 : backlog) };
	struct fc_api_handle rep;
	struct falcon_listener *l;
	int rc;

	if (!ctx || !service)
		return fail_null(-EINVAL);
	if (!(l = calloc(1, sizeof(*l))))
		return fail_null(-ENOMEM);
	if ((rc = rpc(ctx, FC_API_LISTEN, &m, sizeof(m), -1, &rep, sizeof(rep), NULL, 0))) {
		free(l);
		return fail_null(rc);
	}
	l->service = service;
	link_node(ctx, &l->n, K_LISTENER, rep.handle);
	return l;
}

API struct falcon_qp *falcon_accept(struct falcon_listener *l, struct falcon_pd *pd,
				    const struct falcon_qp_init_attr *attr, int timeout_ms)
{
	struct fc_api_accept m = { .timeout_ms = timeout_ms };
	struct fc_api_qp_rep rep;
	int fd, rc;

	if (!l || !pd || l->n.ctx != pd->n.ctx || qp_attr(pd, attr, &m.qp) ||
	    (m.qp.type != FALCON_QPT_RC && m.qp.type != FALCON_QPT_XRC_RECV))
		return fail_null(-EINVAL);
	m.listener = l->n.handle;
	rc = rpc(pd->n.ctx, FC_API_ACCEPT, &m, sizeof(m), -1, &rep, sizeof(rep), &fd, 1);
	if (rc)
		return fail_null(rc);
	return qp_make(pd, attr, &m.qp, &rep, fd);
}

API int falcon_listener_close(struct falcon_listener *l)
{
	int rc;

	if (!l)
		return fail(-EINVAL);
	if ((rc = destroy(&l->n, FC_API_CLOSE_LISTENER)) && rc != -ENOTCONN)
		return fail(rc);
	free_node(&l->n);
	return 0;
}

API int falcon_destroy_qp(struct falcon_qp *pub)
{
	struct lqp *qp = (struct lqp *)pub;
	int rc;

	if (!pub)
		return fail(-EINVAL);
	if ((rc = destroy(&qp->n, FC_API_DESTROY_QP)) && rc != -ENOTCONN)
		return fail(rc);
	qp->pd->refs--;
	if (qp->scq)
		qp->scq->refs--;
	if (qp->rcq)
		qp->rcq->refs--;
	if (qp->srq)
		qp->srq->refs--;
	if (qp->xrcd)
		qp->xrcd->refs--;
	free_node(&qp->n);
	return 0;
}

API struct falcon_qp *falcon_create_qp(struct falcon_pd *pd, const struct falcon_qp_init_attr *attr)
{
	struct fc_api_qp_attr q;
	struct fc_api_qp_rep rep;
	struct falcon_qp *qp;
	int fd = -1, rc;

	if ((rc = qp_attr(pd, attr, &q)))
		return fail_null(rc);
	rc = rpc(pd->n.ctx, FC_API_CREATE_QP, &q, sizeof(q), -1, &rep, sizeof(rep), &fd, 1);
	if (rc)
		return fail_null(rc);
	if ((qp = qp_make(pd, attr, &q, &rep, fd)))
		((struct lqp *)qp)->by_api = 1;
	return qp;
}

API int falcon_modify_qp(struct falcon_qp *pub, const struct falcon_qp_attr *attr)
{
	struct lqp *qp = (struct lqp *)pub;
	struct fc_api_modify_qp m = { 0 };
	int rc;

	if (!pub || !attr || attr->size < offsetof(struct falcon_qp_attr, timeout_ms) +
						  sizeof(attr->timeout_ms) || attr->qp_state > 255)
		return fail(-EINVAL);
	if (!qp->by_api && !(ATTR_HAS(attr, min_rnr_timer) && attr->attr_mask))
		return fail(-EINVAL); /* a QP of connect / accept: its timers only */
	m.handle = qp->n.handle;
	m.state = (uint8_t)attr->qp_state;
	m.dest_qpn = attr->dest_qp_num;
	m.timeout_ms = attr->timeout_ms;
	if (ATTR_HAS(attr, min_rnr_timer) && attr->attr_mask) {
		if ((attr->attr_mask & ~0xFu) || attr->timeout > 31 || attr->retry_cnt > 7 ||
		    attr->rnr_retry > 7 || attr->min_rnr_timer > 31)
			return fail(-EINVAL);
		m.attr_mask = (uint16_t)attr->attr_mask;
		m.timeout = attr->timeout;
		m.retry_cnt = attr->retry_cnt;
		m.rnr_retry = attr->rnr_retry;
		m.min_rnr_timer = attr->min_rnr_timer;
	}
	if (attr->qp_state == FALCON_QPS_RTR && qp->type != FALCON_QPT_UD) {
		if (!attr->dest_host)
			return fail(-EINVAL);
		if ((rc = resolve(attr->dest_host, m.addr, &m.addr_len)))
			return fail(rc);
	}
	rc = rpc(qp->n.ctx, FC_API_MODIFY_QP, &m, sizeof(m), -1, NULL, 0, NULL, 0);
	if (!rc && attr->qp_state == FALCON_QPS_RTR)
		qp->pub.remote_qp_num = attr->dest_qp_num;
	return rc ? fail(rc) : 0;
}

API int falcon_query_qp(struct falcon_qp *pub, int *connected)
{
	struct lqp *qp = (struct lqp *)pub;
	struct fc_api_handle h;
	struct fc_api_query_qp_rep rep;
	int rc;

	if (!pub)
		return fail(-EINVAL);
	h = (struct fc_api_handle){ .handle = qp->n.handle };
	if ((rc = rpc(qp->n.ctx, FC_API_QUERY_QP, &h, sizeof(h), -1, &rep, sizeof(rep), NULL, 0)))
		return fail(rc);
	if (connected)
		*connected = rep.connected;
	return rep.state;
}

API int falcon_query_qp_attr(struct falcon_qp *pub, struct falcon_qp_attr *attr)
{
	struct lqp *qp = (struct lqp *)pub;
	struct fc_api_handle h;
	struct fc_api_query_qp_rep rep;
	int rc;

	if (!pub || !attr || !ATTR_HAS(attr, min_rnr_timer))
		return fail(-EINVAL);
	h = (struct fc_api_handle){ .handle = qp->n.handle };
	if ((rc = rpc(qp->n.ctx, FC_API_QUERY_QP, &h, sizeof(h), -1, &rep, sizeof(rep), NULL, 0)))
		return fail(rc);
	attr->qp_state = rep.state;
	attr->dest_qp_num = rep.remote_qpn;
	attr->attr_mask = FALCON_QP_ATTR_TIMEOUT | FALCON_QP_ATTR_RETRY_CNT |
			  FALCON_QP_ATTR_RNR_RETRY | FALCON_QP_ATTR_MIN_RNR_TIMER;
	attr->timeout = rep.timeout;
	attr->retry_cnt = rep.retry_cnt;
	attr->rnr_retry = rep.rnr_retry;
	attr->min_rnr_timer = rep.min_rnr_timer;
	return 0;
}

/* ---- address handles and XRC domains ---- */

API struct falcon_ah *falcon_create_ah(struct falcon_pd *pd, const char *host, int timeout_ms)
{
	struct fc_api_create_ah m = { .timeout_ms = timeout_ms };
	struct fc_api_create_ah_rep rep;
	struct falcon_ah *ah;
	int rc;

	if (!pd)
		return fail_null(-EINVAL);
	m.pd = pd->n.handle;
	if ((rc = resolve(host, m.addr, &m.addr_len)))
		return fail_null(rc);
	if (!(ah = calloc(1, sizeof(*ah))))
		return fail_null(-ENOMEM);
	if ((rc = rpc(pd->n.ctx, FC_API_CREATE_AH, &m, sizeof(m), -1, &rep, sizeof(rep), NULL, 0))) {
		free(ah);
		return fail_null(rc);
	}
	ah->pd = pd;
	ah->ahn = rep.ahn;
	pd->refs++;
	link_node(pd->n.ctx, &ah->n, K_AH, rep.handle);
	return ah;
}

API struct falcon_ah *falcon_create_ah_from_wc(struct falcon_pd *pd, const struct falcon_wc *wc,
					       int timeout_ms)
{
	struct fc_api_create_ah_src m = { .timeout_ms = timeout_ms };
	struct fc_api_create_ah_rep rep;
	struct falcon_ah *ah;
	int rc;

	if (!pd || !wc || wc->status != FALCON_WC_SUCCESS ||
	    (wc->opcode != FALCON_WC_RECV && wc->opcode != FALCON_WC_RECV_RDMA_WITH_IMM))
		return fail_why(-EINVAL, "falcon_create_ah_from_wc: %s", !pd || !wc ? "NULL argument" :
				"not a successful receive completion"), NULL;
	if (!wc->src_id)
		return fail_why(-ENOENT, "falcon_create_ah_from_wc: the completion names no "
				"sending daemon (not a UD receive)"), NULL;
	m.pd = pd->n.handle;
	m.src_id = wc->src_id;
	if (!(ah = calloc(1, sizeof(*ah))))
		return fail_null(-ENOMEM);
	rc = rpc(pd->n.ctx, FC_API_CREATE_AH_SRC, &m, sizeof(m), -1, &rep, sizeof(rep), NULL, 0);
	if (rc) {
		free(ah);
		return fail_null(rc);
	}
	ah->pd = pd;
	ah->ahn = rep.ahn;
	pd->refs++;
	link_node(pd->n.ctx, &ah->n, K_AH, rep.handle);
	return ah;
}

API int falcon_destroy_ah(struct falcon_ah *ah)
{
	int rc;

	if (!ah)
		return fail(-EINVAL);
	if ((rc = destroy(&ah->n, FC_API_DESTROY_AH)) && rc != -ENOTCONN)
		return fail(rc);
	ah->pd->refs--;
	free_node(&ah->n);
	return 0;
}

API struct falcon_xrcd *falcon_open_xrcd(struct falcon_context *ctx)
{
	struct fc_api_handle rep;
	struct falcon_xrcd *x;
	int rc;

	if (!ctx)
		return fail_null(-EINVAL);
	if (!(x = calloc(1, sizeof(*x))))
		return fail_null(-ENOMEM);
	if ((rc = rpc(ctx, FC_API_OPEN_XRCD, NULL, 0, -1, &rep, sizeof(rep), NULL, 0))) {
		free(x);
		return fail_null(rc);
	}
	link_node(ctx, &x->n, K_XRCD, rep.handle);
	return x;
}

API int falcon_close_xrcd(struct falcon_xrcd *x)
{
	int rc;

	if (!x)
		return fail(-EINVAL);
	if (x->refs)
		return fail(-EBUSY);
	if ((rc = destroy(&x->n, FC_API_CLOSE_XRCD)) && rc != -ENOTCONN)
		return fail(rc);
	free_node(&x->n);
	return 0;
}

/* ---- work requests ---- */

static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* the vDSO's: no system call */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The post calls' look at the daemon (falcon.h, falcon_post_send): nonzero when it has
 * gone. A load of the flag, a read of the coarse clock, and at most every
 * FALCON_DAEMON_CHECK_MS a poll(2) of the control socket, which hangs up when falcond
 * goes. Threads posting on QPs of one context may now and then both poll: harmless. */
static int daemon_gone(struct falcon_context *ctx)
{
	struct pollfd p = { .fd = ctx->sock, .events = 0 };
	uint64_t now;

	if (__atomic_load_n(&ctx->gone, __ATOMIC_RELAXED))
		return 1;
	now = coarse_ns();
	if (now < __atomic_load_n(&ctx->check_ns, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&ctx->check_ns, now + FALCON_DAEMON_CHECK_MS * 1000000ull,
			 __ATOMIC_RELAXED);
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR))) {
		mark_gone(ctx);
		return 1;
	}
	return 0;
}

/* After producing into ring: the doorbell, a system call only when the daemon sleeps.
 * A QP in the arena sets its bit there (bit > 0), so that the daemon looks into its rings
 * and not into every QP's; the daemon's flag is the arena's then. */
static void doorbell(struct falcon_context *ctx, void *ring, uint32_t bit)
{
	uint64_t one = 1;

	/* the daemon polls (flag 0): no system call */
	if (bit ? fc_arena_doorbell(ctx->arena, bit) : fc_ring_needs_wakeup(ring))
		(void)!write(ctx->db_fd, &one, sizeof(one));
}

API int falcon_post_send(struct falcon_qp *pub, struct falcon_send_wr *wr,
			 struct falcon_send_wr **bad_wr)
{
	struct lqp *qp = (struct lqp *)pub;
	uint32_t n = 0, space;
	int rc = 0;

	if (!pub || !qp->sq) /* an XRC_RECV QP sends nothing */
		return fail(-EINVAL);
	if (daemon_gone(qp->n.ctx)) {
		if (bad_wr)
			*bad_wr = wr;
		return fail(-ENOTCONN);
	}
	space = fc_ring_space(qp->sq);
	for (; wr; wr = wr->next, n++) {
		struct fc_ring_send_wr *e;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge ||
		    (wr->num_sge && !wr->sg_list) || wr->opcode > FALCON_WR_MASKED_ATOMIC_FETCH_AND_ADD ||
		    (qp->type == FALCON_QPT_UD && (!wr->ah || wr->ah->n.ctx != qp->n.ctx))) {
			rc = -EINVAL;
			break;
		}
		if (n == space) {
			rc = -ENOMEM;
			break;
		}
		e = fc_ring_entry(qp->sq, ((struct fc_ring_hdr *)qp->sq)->prod + n);
		*e = (struct fc_ring_send_wr){
			.wr_id = wr->wr_id, .opcode = (uint8_t)wr->opcode,
			.flags = (uint8_t)(wr->send_flags & FALCON_SEND_SOLICITED),
			.num_sge = (uint8_t)wr->num_sge,
			.imm = wr->opcode == FALCON_WR_SEND_WITH_INV ? wr->invalidate_rkey : wr->imm_data,
			.remote_addr = wr->remote_addr, .rkey = wr->rkey,
			.compare_add = wr->compare_add, .swap = wr->swap,
			.compare_add_mask = wr->compare_add_mask, .swap_mask = wr->swap_mask,
		};
		if (qp->type == FALCON_QPT_UD) {
			e->ah = wr->ah->ahn;
			e->remote_qpn = wr->remote_qpn;
			e->remote_qkey = wr->remote_qkey;
		} else if (qp->type == FALCON_QPT_XRC_SEND) {
			e->xrc_srq = wr->xrc_remote_srq_num;
		}
		for (int i = 0; i < wr->num_sge; i++)
			e->sgl[i] = (struct fc_ring_sge){ wr->sg_list[i].addr, wr->sg_list[i].length,
							  wr->sg_list[i].lkey };
	}
	if (n) {
		fc_ring_produce(qp->sq, n);
		doorbell(qp->n.ctx, qp->sq, qp->arena_bit);
	}
	if (rc) {
		if (bad_wr)
			*bad_wr = wr;
		return fail(rc);
	}
	return 0;
}

/* Receive WRs into a receive ring (a QP's or an SRQ's), then the doorbell if the daemon
 * sleeps. 0, or -EINVAL / -ENOMEM / -ENOTCONN with *bad_wr at the first WR not posted. */
static int ring_post_recv(struct falcon_context *ctx, void *ring, uint32_t bit, uint32_t max_sge,
			  struct falcon_recv_wr *wr, struct falcon_recv_wr **bad_wr)
{
	uint32_t n = 0, space;
	int rc = 0;

	if (daemon_gone(ctx)) {
		if (bad_wr)
			*bad_wr = wr;
		return fail(-ENOTCONN);
	}
	space = fc_ring_space(ring);

	for (; wr; wr = wr->next, n++) {
		struct fc_ring_recv_wr *e;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			rc = -EINVAL;
			break;
		}
		if (n == space) {
			rc = -ENOMEM;
			break;
		}
		e = fc_ring_entry(ring, ((struct fc_ring_hdr *)ring)->prod + n);
		*e = (struct fc_ring_recv_wr){ .wr_id = wr->wr_id, .num_sge = (uint32_t)wr->num_sge };
		for (int i = 0; i < wr->num_sge; i++)
			e->sgl[i] = (struct fc_ring_sge){ wr->sg_list[i].addr, wr->sg_list[i].length,
							  wr->sg_list[i].lkey };
	}
	if (n) {
		fc_ring_produce(ring, n);
		doorbell(ctx, ring, bit);
	}
	if (rc) {
		if (bad_wr)
			*bad_wr = wr;
		return fail(rc);
	}
	return 0;
}

API int falcon_post_recv(struct falcon_qp *pub, struct falcon_recv_wr *wr,
			 struct falcon_recv_wr **bad_wr)
{
	struct lqp *qp = (struct lqp *)pub;

	if (!pub || !qp->rq) /* verbs: a QP with an SRQ takes no receives of its own */
		return fail(-EINVAL);
	return ring_post_recv(qp->n.ctx, qp->rq, qp->arena_bit, qp->max_recv_sge, wr, bad_wr);
}

/* ---- shared receive queues ---- */

API struct falcon_srq *falcon_create_srq(struct falcon_pd *pd,
					 const struct falcon_srq_init_attr *attr)
{
	struct fc_api_create_srq m;
	struct fc_api_create_srq_rep rep;
	struct falcon_srq *srq;
	int fd, rc;

	struct falcon_xrcd *xrcd;
	struct falcon_cq *cq;

	if (!pd || !attr || attr->size < offsetof(struct falcon_srq_init_attr, xrcd) ||
	    attr->max_wr > FC_RING_ENTRIES_MAX || attr->max_sge > FC_RING_SGE_MAX)
		return fail_null(-EINVAL);
	xrcd = ATTR_GET(attr, xrcd);
	cq = ATTR_GET(attr, cq);
	if (!xrcd != !cq || (xrcd && (xrcd->n.ctx != pd->n.ctx || cq->n.ctx != pd->n.ctx)))
		return fail_null(-EINVAL);
	m = (struct fc_api_create_srq){ .pd = pd->n.handle,
					.entries = pow2_up(attr->max_wr, RING_DEFAULT),
					.max_sge = attr->max_sge ? attr->max_sge : FC_RING_SGE_MAX,
					.xrcd = xrcd ? xrcd->n.handle : 0,
					.cq = cq ? cq->n.handle : 0 };
	if (!(srq = calloc(1, sizeof(*srq))))
		return fail_null(-ENOMEM);
	rc = rpc(pd->n.ctx, FC_API_CREATE_SRQ, &m, sizeof(m), -1, &rep, sizeof(rep), &fd, 1);
	if (!rc && fd < 0)
		rc = -EPROTO;
	if (!rc) {
		srq->ring = mmap(NULL, rep.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (srq->ring == MAP_FAILED)
			rc = -errno;
		else if (fc_ring_check(srq->ring, rep.ring_bytes, FC_RING_RQ))
			rc = -EPROTO;
	}
	if (fd >= 0)
		close(fd);
	if (rc) {
		if (srq->ring && srq->ring != MAP_FAILED)
			munmap(srq->ring, rep.ring_bytes);
		free(srq);
		return fail_null(rc);
	}
	srq->bytes = rep.ring_bytes;
	srq->pd = pd;
	srq->max_sge = m.max_sge;
	srq->srqn = rep.srqn;
	srq->xrcd = xrcd;
	srq->cq = cq;
	pd->refs++;
	if (xrcd) {
		xrcd->refs++;
		cq->refs++;
	}
	link_node(pd->n.ctx, &srq->n, K_SRQ, rep.handle);
	return srq;
}

API int falcon_destroy_srq(struct falcon_srq *srq)
{
	int rc;

	if (!srq)
		return fail(-EINVAL);
	if (srq->refs)
		return fail(-EBUSY);
	if ((rc = destroy(&srq->n, FC_API_DESTROY_SRQ)) && rc != -ENOTCONN)
		return fail(rc);
	srq->pd->refs--;
	if (srq->xrcd) {
		srq->xrcd->refs--;
		srq->cq->refs--;
	}
	free_node(&srq->n);
	return 0;
}

API uint32_t falcon_srq_num(const struct falcon_srq *srq)
{
	return srq ? srq->srqn : 0;
}

API int falcon_post_srq_recv(struct falcon_srq *srq, struct falcon_recv_wr *wr,
			     struct falcon_recv_wr **bad_wr)
{
	if (!srq)
		return fail(-EINVAL);
	return ring_post_recv(srq->n.ctx, srq->ring, 0, srq->max_sge, wr, bad_wr);
}

/* ---- asynchronous events ---- */

/* The object of the context named by kind and the daemon's handle, NULL if there is none
 * (destroyed, or not handed out yet). */
static void *object_of(struct falcon_context *ctx, uint32_t kind, uint32_t handle)
{
	void *obj = NULL;

	pthread_mutex_lock(&ctx->list_lock);
	for (struct node *n = ctx->head.next; n != &ctx->head && !obj; n = n->next)
		if (n->kind == kind && n->handle == handle)
			obj = kind == K_QP ? (void *)((uint8_t *)n - offsetof(struct lqp, n)) :
					     (void *)n; /* a falcon_cq starts with its node */
	pthread_mutex_unlock(&ctx->list_lock);
	return obj;
}

static void event_of(struct falcon_context *ctx, const struct fc_api_event *e,
		     struct falcon_async_event *ev)
{
	ev->event_type = e->type;
	ev->num = e->num;
	ev->element.qp = NULL;
	if (e->type == FALCON_EVENT_CQ_ERR)
		ev->element.cq = object_of(ctx, K_CQ, e->handle);
	else if (e->type == FALCON_EVENT_QP_FATAL || e->type == FALCON_EVENT_QP_LAST_WQE_REACHED)
		ev->element.qp = object_of(ctx, K_QP, e->handle); /* the lqp starts with it */
}

/* The next event of the event socket's head message, which is taken off the socket with
 * its last event (so the socket polls readable while one is left). 0, -EAGAIN (none),
 * -ENOTCONN (the daemon has gone: the end of the stream), -EPROTO. Under ev_lock. */
static int next_event(struct falcon_context *ctx, struct falcon_async_event *ev)
{
	uint8_t buf[FC_API_MSG_MAX + 1];
	struct fc_api_event e;
	ssize_t n = recv(ctx->ev_fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_PEEK);
	int k;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return -EAGAIN;
	if (n <= 0)
		return -ENOTCONN;
	if ((k = fc_api_event_check(buf, (unsigned long)n)) < 0) {
		(void)!recv(ctx->ev_fd, buf, sizeof(buf), MSG_DONTWAIT); /* not to see it again */
		ctx->ev_next = 0;
		return -EPROTO;
	}
	if (ctx->ev_next >= (uint32_t)k)
		ctx->ev_next = 0;
	memcpy(&e, buf + sizeof(struct fc_api_hdr) + ctx->ev_next * sizeof(e), sizeof(e));
	if (++ctx->ev_next == (uint32_t)k) {
		(void)!recv(ctx->ev_fd, buf, sizeof(buf), MSG_DONTWAIT); /* done with it */
		ctx->ev_next = 0;
	}
	event_of(ctx, &e, ev);
	return 0;
}

API int falcon_get_async_event(struct falcon_context *ctx, struct falcon_async_event *ev)
{
	int rc;

	if (!ctx || !ev || !ATTR_HAS(ev, element))
		return fail(-EINVAL);
	pthread_mutex_lock(&ctx->ev_lock);
	rc = next_event(ctx, ev);
	if (rc == -ENOTCONN) { /* after every event the daemon sent: DEVICE_FATAL, once */
		mark_gone(ctx);
		if (!ctx->fatal_given) {
			ctx->fatal_given = 1;
			ev->event_type = FALCON_EVENT_DEVICE_FATAL;
			ev->num = 0;
			ev->element.qp = NULL;
			rc = 0;
		}
	}
	pthread_mutex_unlock(&ctx->ev_lock);
	return rc ? fail(rc) : 0;
}

API int falcon_async_fd(const struct falcon_context *ctx)
{
	return ctx ? ctx->ev_fd : fail(-EINVAL);
}

/* ---- names ---- */

API const char *falcon_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case ENOTCONN: return "falcond closed the connection (daemon stopped?)";
	case ECONNREFUSED: return "connection refused: no listener on that service (or no such "
				  "QP) at the peer";
	case EACCES: return "not allowed: the peer's allow-list does not have our key, or we "
			    "have no key for the peer";
	case EKEYREJECTED: return "the peer could not authenticate us: the key we have for it "
				  "is not its key";
	case EPROTONOSUPPORT: return "security mismatch: the peer runs another security mode "
				     "(psp / none) or PSP cipher";
	case EPROTO: return "protocol version or features do not match (the library and "
			    "falcond, or the two daemons)";
	case EPROTOTYPE: return "the peer's QP is of a type that does not pair with ours";
	case EUSERS: return "the peer daemon is out of resources (one of its tables is full)";
	case ENOSPC: return "a table of our daemon is full";
	case EDQUOT: return "this client's share of the daemon is used up (its log names the "
			    "quota)";
	case EHOSTUNREACH: return "peer unreachable (no falcond on that port, no route, or the "
				  "name does not resolve)";
	case ETIMEDOUT: return "timed out (no answer: the peer daemon or its host is down, or "
			       "its CM port is filtered)";
	case EAGAIN: return "try again: a queue is full (the peer listener's backlog) or "
			    "nothing is pending";
	case ESTALE: return "the peer's clock and ours differ by more than 2 minutes "
			    "(handshake refused)";
	case ENOENT: return "no such object, host name or file";
	case EFAULT: return "memory not mapped in this process";
	case EBUSY: return "object in use";
	case ENOMEM: return "out of memory, or the queue is full";
	case EINVAL: return "invalid argument";
	case EADDRINUSE: return "someone listens on that service already";
	case ECONNABORTED: return "the connection was abandoned by the other side";
	case EOVERFLOW: return "the completion queue overflowed (it and its QPs are in error)";
	case EIO: return "a completion queue it names overflowed (it is in error for good)";
	default: return strerror(err < 0 ? -err : err);
	}
}

API const char *falcon_error_detail(void)
{
	return detail ? detail : "";
}

API const char *falcon_wc_status_str(uint32_t status)
{
	static const char *const names[] = {
		[0] = "SUCCESS", [1] = "LOC_LEN_ERR", [2] = "LOC_QP_OP_ERR", [4] = "LOC_PROT_ERR",
		[5] = "WR_FLUSH_ERR", [8] = "LOC_ACCESS_ERR", [9] = "REM_INV_REQ_ERR",
		[10] = "REM_ACCESS_ERR", [11] = "REM_OP_ERR", [12] = "RETRY_EXC_ERR",
		[13] = "RNR_RETRY_EXC_ERR", [21] = "GENERAL_ERR",
	};

	return status < sizeof(names) / sizeof(names[0]) && names[status] ? names[status] : "?";
}
