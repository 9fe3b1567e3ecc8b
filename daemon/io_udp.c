/* SPDX-License-Identifier: Apache-2.0 */
/* io_udp.c - a node backend on one UDP socket (io_udp.h). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io_udp.h"

#define BATCH FC_NODE_BATCH_MAX
#define CMSG_ROOM 128
#define SOCKBUF_BYTES (4 << 20)

struct fc_io_udp {
	int fd, family;
	uint8_t *txmem;            /* ntx frames */
	uint32_t *free_, nfree, ntx;
	uint8_t *rxmem;            /* BATCH frames */
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_storage name[BATCH];
	uint8_t cmsg[BATCH][CMSG_ROOM];
	struct fc_frame rxf[2 * BATCH]; /* room for what an rx filter adds */
	struct fc_peer_addr from[BATCH];
	fc_io_udp_rx_filter_fn filter;
	void *filter_ctx;
	struct fc_io_udp_stats st;
};

/* A peer address compares bytewise: keep only what names the peer. */
static int normalize(const struct sockaddr *sa, socklen_t len, struct fc_peer_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in in;

		memcpy(&in, sa, sizeof(in));
		memset(in.sin_zero, 0, sizeof(in.sin_zero));
		out->len = sizeof(in);
		memcpy(out->bytes, &in, sizeof(in));
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 in6;

		memcpy(&in6, sa, sizeof(in6));
		in6.sin6_flowinfo = 0;
		out->len = sizeof(in6);
		memcpy(out->bytes, &in6, sizeof(in6));
		return 0;
	}
	return -EINVAL;
}

int fc_io_udp_peer_addr(const struct sockaddr *sa, socklen_t len, struct fc_peer_addr *out)
{
	_Static_assert(sizeof(struct sockaddr_in6) <= FC_PEER_ADDR_MAX, "peer address room");
	if (!sa || !out)
		return -EINVAL;
	return normalize(sa, len, out);
}

static void set_opt(int fd, int level, int name, int v)
{
	/* best effort: a missing option costs a figure (hops, ECN), not correctness */
	(void)setsockopt(fd, level, name, &v, sizeof(v));
}

struct fc_io_udp *fc_io_udp_open(const struct sockaddr *addr, socklen_t len, unsigned tx_frames)
{
	struct fc_io_udp *io;
	int err;

	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
	    !tx_frames || tx_frames > 65536) {
		errno = EINVAL;
		return NULL;
	}
	io = calloc(1, sizeof(*io));
	if (!io)
		return NULL;
	io->fd = -1;
	io->family = addr->sa_family;
	io->ntx = tx_frames;
	io->txmem = malloc((size_t)tx_frames * FC_IO_UDP_FRAME_BYTES);
	io->rxmem = malloc((size_t)BATCH * FC_IO_UDP_FRAME_BYTES);
	io->free_ = malloc(tx_frames * sizeof(*io->free_));
	if (!io->txmem || !io->rxmem || !io->free_) {
		err = ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < tx_frames; i++)
		io->free_[io->nfree++] = tx_frames - 1 - i;
	io->fd = socket(io->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (io->fd < 0) {
		err = errno;
		goto fail;
	}
	set_opt(io->fd, SOL_SOCKET, SO_RCVBUF, SOCKBUF_BYTES);
	set_opt(io->fd, SOL_SOCKET, SO_SNDBUF, SOCKBUF_BYTES);
	if (io->family == AF_INET) {
		set_opt(io->fd, IPPROTO_IP, IP_RECVTTL, 1);
		set_opt(io->fd, IPPROTO_IP, IP_RECVTOS, 1);
		set_opt(io->fd, IPPROTO_IP, IP_TTL, FC_IO_UDP_TTL);
	} else {
		set_opt(io->fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
		set_opt(io->fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
		set_opt(io->fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, FC_IO_UDP_TTL);
	}
	if (bind(io->fd, addr, len) < 0) {
		err = errno;
		goto fail;
	}
	return io;
fail:
	fc_io_udp_close(io);
	errno = err;
	return NULL;
}

void fc_io_udp_close(struct fc_io_udp *io)
{
	if (!io)
		return;
	if (io->fd >= 0)
		close(io->fd);
	free(io->txmem);
	free(io->rxmem);
	free(io->free_);
	free(io);
}

int fc_io_udp_fd(const struct fc_io_udp *io) { return io->fd; }
const struct fc_io_udp_stats *fc_io_udp_stats(const struct fc_io_udp *io) { return &io->st; }

int fc_io_udp_local(const struct fc_io_udp *io, struct sockaddr_storage *ss, socklen_t *len)
{
	*len = sizeof(*ss);
	return getsockname(io->fd, (struct sockaddr *)ss, len) < 0 ? -errno : 0;
}

/* ---- transmit: the node's io_ops ---- */

static unsigned udp_tx_alloc(void *ctx, struct fc_frame *f, unsigned n)
{
	struct fc_io_udp *io = ctx;
	unsigned k = 0;

	while (k < n && io->nfree) {
		uint32_t i = io->free_[--io->nfree];

		f[k++] = (struct fc_frame){ .buf = io->txmem + (size_t)i * FC_IO_UDP_FRAME_BYTES,
					    .cap = FC_IO_UDP_FRAME_BYTES, .io_handle = i };
	}
	return k;
}

static void udp_tx_return(void *ctx, struct fc_frame *f, unsigned n)
{
	struct fc_io_udp *io = ctx;

	for (unsigned i = 0; i < n; i++)
		io->free_[io->nfree++] = (uint32_t)f[i].io_handle;
}

static unsigned udp_tx_send(void *ctx, struct fc_frame *f, unsigned n)
{
	struct fc_io_udp *io = ctx;
	struct mmsghdr m[BATCH];
	struct iovec v[BATCH];
	unsigned done = 0;

	while (done < n) {
		unsigned k = n - done < BATCH ? n - done : BATCH, ok = 0;
		int rc;

		for (unsigned i = 0; i < k; i++) {
			const struct fc_frame *g = &f[done + i];

			v[i] = (struct iovec){ .iov_base = g->buf, .iov_len = g->len };
			m[i] = (struct mmsghdr){ .msg_hdr = {
				.msg_name = (void *)g->peer->bytes, .msg_namelen = g->peer->len,
				.msg_iov = &v[i], .msg_iovlen = 1 } };
		}
		while (ok < k) {
			rc = sendmmsg(io->fd, m + ok, k - ok, MSG_DONTWAIT);
			io->st.tx_calls++;
			if (rc < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					io->st.tx_eagain_drops += k - ok;
				else
					io->st.tx_errors += k - ok;
				break;
			}
			for (int i = 0; i < rc; i++)
				io->st.tx_bytes += m[ok + (unsigned)i].msg_len;
			ok += (unsigned)rc;
		}
		io->st.tx_dgrams += ok;
		udp_tx_return(io, f + done, k); /* the kernel has its copy, or it is lost */
		if (ok < k)
			return done + ok; /* the rest of this call is dropped */
		done += k;
	}
	return done;
}

const struct fc_io_ops fc_io_udp_ops = {
	.name = "udp", .tx_alloc = udp_tx_alloc, .tx_send = udp_tx_send,
	.tx_return = udp_tx_return,
};

/* ---- receive ---- */

static void read_cmsgs(struct msghdr *h, struct fc_rx_meta *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		int v = -1;

		if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) ||
		    (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) ||
		    (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS)) {
			if (c->cmsg_len >= CMSG_LEN(sizeof(int)))
				memcpy(&v, CMSG_DATA(c), sizeof(v));
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			if (c->cmsg_len >= CMSG_LEN(1))
				v = *(const uint8_t *)CMSG_DATA(c);
		}
		if (v < 0)
			continue;
		if (c->cmsg_type == IP_TOS || c->cmsg_type == IPV6_TCLASS)
			m->ecn_ce = (v & 3) == 3; /* ECN CE (RFC 3168) */
		else if (v <= FC_IO_UDP_TTL)
			m->hops = (uint8_t)(FC_IO_UDP_TTL - v);
	}
}

void fc_io_udp_set_rx_filter(struct fc_io_udp *io, fc_io_udp_rx_filter_fn fn, void *ctx)
{
	io->filter = fn;
	io->filter_ctx = ctx;
}

int fc_io_udp_rx(struct fc_io_udp *io, struct fc_node *node, uint64_t now, unsigned max)
{
	unsigned total = 0;

	while (total < max) {
		unsigned want = max - total < BATCH ? max - total : BATCH, nf = 0;
		int rc;

		for (unsigned i = 0; i < want; i++) {
			io->iov[i] = (struct iovec){ .iov_base = io->rxmem + (size_t)i * FC_IO_UDP_FRAME_BYTES,
						     .iov_len = FC_IO_UDP_FRAME_BYTES };
			io->msg[i] = (struct mmsghdr){ .msg_hdr = {
				.msg_name = &io->name[i], .msg_namelen = sizeof(io->name[i]),
				.msg_iov = &io->iov[i], .msg_iovlen = 1,
				.msg_control = io->cmsg[i], .msg_controllen = CMSG_ROOM } };
		}
		rc = recvmmsg(io->fd, io->msg, want, MSG_DONTWAIT, NULL);
		io->st.rx_calls++;
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			io->st.rx_errors++;
			return total ? (int)total : -errno;
		}
		if (rc == 0)
			break;
		for (int i = 0; i < rc; i++) {
			struct msghdr *h = &io->msg[i].msg_hdr;
			struct fc_frame *f = &io->rxf[nf];

			io->st.rx_dgrams++;
			io->st.rx_bytes += io->msg[i].msg_len;
			if (h->msg_flags & MSG_TRUNC) {
				io->st.rx_truncated++;
				continue;
			}
			if (normalize((struct sockaddr *)&io->name[i], h->msg_namelen, &io->from[nf]))
				continue;
			*f = (struct fc_frame){ .buf = io->iov[i].iov_base, .len = io->msg[i].msg_len,
						.cap = FC_IO_UDP_FRAME_BYTES, .peer = &io->from[nf],
						.meta = { .now_ns = now } };
			read_cmsgs(h, &f->meta);
			nf++;
		}
		if (io->filter)
			nf = io->filter(io->filter_ctx, io->rxf, nf, 2 * BATCH);
		if (nf)
			fc_node_rx_batch(node, io->rxf, nf);
		total += (unsigned)rc;
		if ((unsigned)rc < want)
			break; /* the socket is drained */
	}
	return (int)total;
}
