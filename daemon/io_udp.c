/* SPDX-License-Identifier: Apache-2.0 */
/* io_udp.c - a node backend on one UDP socket (io_udp.h). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io_udp.h"

#define BATCH FC_NODE_BATCH_MAX
#define CMSG_ROOM 128
#define SOCKBUF_BYTES (4 << 20)
#define GSO_SEGS_MAX 64u       /* the kernel's UDP_MAX_SEGMENTS */
#define GSO_BYTES_MAX 60000u   /* a GSO message's payload stays below 64 KiB */
#define RX_GRO_BYTES 65536u    /* a GRO run: at most 64 KiB of UDP payload */

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
	struct iovec txv[BATCH];   /* transmit: one per frame */
	uint8_t txcmsg[BATCH][CMSG_SPACE(sizeof(uint16_t))] __attribute__((aligned(8)));
	int no_gso;                /* the kernel refused UDP_SEGMENT once */
	uint32_t rx_slot;          /* bytes per received message: a frame, or a GRO run */
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

uint16_t fc_io_udp_peer_port(void *io, const struct fc_peer_addr *a)
{
	struct sockaddr_storage ss;

	(void)io;
	if (!a || a->len < sizeof(struct sockaddr_in) || a->len > sizeof(ss))
		return 0;
	memcpy(&ss, a->bytes, a->len);
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6 && a->len >= sizeof(struct sockaddr_in6))
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

static void set_opt(int fd, int level, int name, int v)
{
	/* best effort: a missing option costs a figure (hops, ECN), not correctness */
	(void)setsockopt(fd, level, name, &v, sizeof(v));
}

int fc_io_busy_poll(int fd, unsigned us, unsigned budget)
{
	int rc = 0;

	/* each asks CAP_NET_ADMIN to raise it above the system's default (EPERM), and a
	 * kernel before 5.11 knows only the first (ENOPROTOOPT / EINVAL) */
	if (setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &(int){ (int)us }, sizeof(int)) < 0)
		rc = -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &(int){ 1 }, sizeof(int)) < 0 && !rc)
		rc = -errno;
	if (budget && setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &(int){ (int)budget },
				 sizeof(int)) < 0 && !rc)
		rc = -errno;
	return rc;
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
	io->rx_slot = FC_IO_UDP_FRAME_BYTES;
	io->free_ = malloc(tx_frames * sizeof(*io->free_));
	if (!io->txmem || !io->free_) {
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
	/* UDP GRO: the kernel hands over runs of datagrams from one sender as one buffer
	 * with their size in a cmsg (read_cmsgs), one pass through the stack per run */
	if (setsockopt(io->fd, SOL_UDP, UDP_GRO, &(int){ 1 }, sizeof(int)) == 0)
		io->rx_slot = RX_GRO_BYTES;
	/* populated now (4 MiB with GRO): how much of it a batch touches depends on how
	 * long the runs the kernel coalesces are, so left to fault in it would grow the
	 * resident set later, under load or a flood, instead of at start */
	io->rxmem = mmap(NULL, (size_t)BATCH * io->rx_slot, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (io->rxmem == MAP_FAILED) {
		io->rxmem = NULL;
		err = ENOMEM;
		goto fail;
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
	if (io->rxmem)
		munmap(io->rxmem, (size_t)BATCH * io->rx_slot);
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

/* How many frames from f[0] (at most n) go out as one UDP GSO send (UDP_SEGMENT): same
 * peer, every one but the last of the first one's length, GSO_SEGS_MAX and GSO_BYTES_MAX
 * at most. 1 when GSO is off or nothing groups. */
static unsigned gso_run(const struct fc_io_udp *io, const struct fc_frame *f, unsigned n)
{
	uint32_t seg = f[0].len, bytes = seg;
	unsigned k = 1;

	if (io->no_gso)
		return 1;
	while (k < n && k < GSO_SEGS_MAX && f[k].peer == f[0].peer && f[k].len <= seg &&
	       bytes + f[k].len <= GSO_BYTES_MAX) {
		bytes += f[k].len;
		if (f[k++].len < seg)
			break; /* a shorter one ends the run */
	}
	return k;
}

/* Send f[0..n): consecutive frames to one peer of one size leave as one UDP GSO message
 * (the kernel cuts it into datagrams late: one pass through the stack for the run), the
 * rest one datagram each, all in sendmmsg batches. Returns the frames sent; the others
 * are dropped and counted. A kernel that refuses UDP_SEGMENT turns GSO off for good and
 * the call is retried without it. */
static unsigned udp_tx_send(void *ctx, struct fc_frame *f, unsigned n)
{
	struct fc_io_udp *io = ctx;
	struct mmsghdr m[BATCH];
	unsigned nfr[BATCH];
	unsigned done = 0;

	while (done < n) {
		unsigned k = 0, used = 0, ok = 0, sent_fr = 0;
		int rc;

		/* at most BATCH frames per round: v[] has one iovec per frame */
		while (used < n - done && used < BATCH) {
			unsigned run = gso_run(io, f + done + used,
					       (n - done - used) < (BATCH - used) ?
					       (n - done - used) : (BATCH - used));
			struct msghdr *h = &m[k].msg_hdr;

			for (unsigned i = 0; i < run; i++) {
				const struct fc_frame *g = &f[done + used + i];

				io->txv[used + i] = (struct iovec){ .iov_base = g->buf,
								    .iov_len = g->len };
			}
			*h = (struct msghdr){ .msg_name = (void *)f[done + used].peer->bytes,
					      .msg_namelen = f[done + used].peer->len,
					      .msg_iov = &io->txv[used], .msg_iovlen = run };
			if (run > 1) {
				struct cmsghdr *c;
				uint16_t seg = (uint16_t)f[done + used].len;

				h->msg_control = io->txcmsg[k];
				h->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
				c = CMSG_FIRSTHDR(h);
				c->cmsg_level = SOL_UDP;
				c->cmsg_type = UDP_SEGMENT;
				c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
				memcpy(CMSG_DATA(c), &seg, sizeof(seg));
				io->st.tx_gso_runs++;
			}
			nfr[k++] = run;
			used += run;
		}
		while (ok < k) {
			rc = sendmmsg(io->fd, m + ok, k - ok, MSG_DONTWAIT);
			io->st.tx_calls++;
			if (rc < 0 && errno == EINTR)
				continue;
			if (rc < 0 && m[ok].msg_hdr.msg_controllen && !io->no_gso &&
			    (errno == EINVAL || errno == EIO || errno == ENOPROTOOPT)) {
				io->no_gso = 1; /* no UDP GSO here: the rest goes one by one */
				io->st.tx_gso_refused = 1;
				break;
			}
			if (rc < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					io->st.tx_eagain_drops += used - sent_fr;
				else
					io->st.tx_errors += used - sent_fr;
				break;
			}
			for (int i = 0; i < rc; i++) {
				io->st.tx_bytes += m[ok + (unsigned)i].msg_len;
				sent_fr += nfr[ok + (unsigned)i];
			}
			ok += (unsigned)rc;
		}
		io->st.tx_dgrams += sent_fr;
		if (ok < k && io->no_gso && m[ok].msg_hdr.msg_controllen) {
			/* the frames from the refused message on go again, singly */
			udp_tx_return(io, f + done, sent_fr);
			done += sent_fr;
			continue;
		}
		if (ok < k) { /* the rest of this call is dropped: every frame goes back */
			udp_tx_return(io, f + done, n - done);
			return done + sent_fr;
		}
		udp_tx_return(io, f + done, used); /* the kernel has its copy */
		done += used;
	}
	return done;
}

const struct fc_io_ops fc_io_udp_ops = {
	.name = "udp", .tx_alloc = udp_tx_alloc, .tx_send = udp_tx_send,
	.tx_return = udp_tx_return, .peer_port = fc_io_udp_peer_port,
};

/* ---- receive ---- */

/* TTL / hop limit and ECN into *m; the GRO segment size (0: one datagram) returned. */
static uint32_t read_cmsgs(struct msghdr *h, struct fc_rx_meta *m)
{
	uint32_t gro = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		int v = -1;

		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			if (c->cmsg_len >= CMSG_LEN(sizeof(int)))
				memcpy(&v, CMSG_DATA(c), sizeof(v));
			gro = v > 0 ? (uint32_t)v : 0;
			continue;
		}

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
	return gro;
}

void fc_io_udp_set_rx_filter(struct fc_io_udp *io, fc_io_udp_rx_filter_fn fn, void *ctx)
{
	io->filter = fn;
	io->filter_ctx = ctx;
}

/* Hand the frames gathered so far to the node (through the rx filter). */
static void rx_flush(struct fc_io_udp *io, struct fc_node *node, unsigned *nf)
{
	unsigned n = *nf;

	if (io->filter)
		n = io->filter(io->filter_ctx, io->rxf, n, 2 * BATCH);
	if (n)
		fc_node_rx_batch(node, io->rxf, n);
	*nf = 0;
}

int fc_io_udp_rx(struct fc_io_udp *io, struct fc_node *node, uint64_t now, unsigned max)
{
	unsigned total = 0;

	while (total < max) {
		unsigned want = max - total < BATCH ? max - total : BATCH, nf = 0;
		int rc;

		for (unsigned i = 0; i < want; i++) {
			io->iov[i] = (struct iovec){ .iov_base = io->rxmem + (size_t)i * io->rx_slot,
						     .iov_len = io->rx_slot };
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
			struct fc_rx_meta meta = { .now_ns = now };
			uint32_t len = io->msg[i].msg_len, seg;
			uint8_t *base = io->iov[i].iov_base;

			if (h->msg_flags & MSG_TRUNC) {
				io->st.rx_dgrams++;
				io->st.rx_truncated++;
				continue;
			}
			if (normalize((struct sockaddr *)&io->name[i], h->msg_namelen, &io->from[i])) {
				io->st.rx_dgrams++;
				continue;
			}
			seg = read_cmsgs(h, &meta);
			if (!seg || seg > len)
				seg = len ? len : 1; /* one datagram (an empty one stays one) */
			if (seg < len)
				io->st.rx_gro_runs++;
			/* each datagram of a GRO run is a frame of its own */
			for (uint32_t off = 0; off < len || (!len && !off); off += seg) {
				uint32_t n = len - off < seg ? len - off : seg;

				if (nf == BATCH)
					rx_flush(io, node, &nf);
				io->rxf[nf++] = (struct fc_frame){ .buf = base + off, .len = n,
								   .cap = n, .peer = &io->from[i],
								   .meta = meta };
				io->st.rx_dgrams++;
				io->st.rx_bytes += n;
				if (!len)
					break;
			}
		}
		rx_flush(io, node, &nf);
		total += (unsigned)rc;
		if ((unsigned)rc < want)
			break; /* the socket is drained */
	}
	return (int)total;
}
