/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_abuse - a hostile client against a live falcond (tests/e2e/test_loopback.sh):
 *
 *   api_abuse SOCKET
 *
 * 1. Handles are per client: client X creates a PD, an MR, a CQ; client Y tries every
 *    handle number X could have (slots 0..1023, generations 1..4) on every destroy
 *    request and on REG_MR / CONNECT naming them: each gets -ENOENT, and X's objects
 *    still work afterwards.
 * 2. Malformed messages: random bytes, truncated headers, wrong header size / version /
 *    length, unknown types, wrong body sizes, requests before HELLO, descriptors where
 *    none belong, an unsealed memfd, ranges beyond the memfd: each gets an error reply
 *    or a disconnect, never a crash; a well-behaved client keeps being served between
 *    them (alloc_pd + create_cq + reg_mr after every round).
 * Prints "api-abuse: N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "falcon/api.h"
#include "falcon/falcon.h"

static int pass, fail_;
static const char *sock_path;

#define EXPECT(cond, ...) do { \
	if (cond) { \
		pass++; \
	} else { \
		fail_++; \
		fprintf(stderr, "api-abuse: FAILED: " __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

static int raw_open(void)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(un.sun_path, sizeof(un.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
		perror("api-abuse: connect");
		exit(1);
	}
	return fd;
}

static int send_raw(int fd, const void *buf, size_t len, int pass_fd)
{
	return fc_api_send(fd, buf, len, &pass_fd, pass_fd >= 0, 0);
}

/* The reply's status; 1 if the daemon disconnected us; 2 if nothing came in 2 s. */
static int recv_status(int fd, void *body, size_t body_len)
{
	uint8_t buf[FC_API_MSG_MAX];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	union {
		struct cmsghdr c;
		char room[CMSG_SPACE(sizeof(int) * 4)];
	} cm;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.room,
			    .msg_controllen = sizeof(cm.room) };
	const struct fc_api_hdr *h = (const void *)buf;
	ssize_t n;

	if (poll(&p, 1, 2000) != 1)
		return 2;
	n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return 1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int x;

			memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			close(x);
		}
	if ((size_t)n < sizeof(*h))
		return -EPROTO;
	if (body && h->status == 0 && (size_t)n - sizeof(*h) == body_len)
		memcpy(body, buf + sizeof(*h), body_len);
	return h->status;
}

static int request(int fd, uint16_t type, const void *body, uint32_t len, int pass_fd,
		   void *out, size_t out_len)
{
	uint8_t buf[FC_API_MSG_MAX];
	struct fc_api_hdr *h = (void *)buf;
	static uint32_t seq;
	int rc;

	*h = (struct fc_api_hdr){ .hdr_size = sizeof(*h), .version = FC_API_VERSION, .type = type,
				  .len = (uint32_t)sizeof(*h) + len, .seq = ++seq };
	if (len)
		memcpy(buf + sizeof(*h), body, len);
	if ((rc = send_raw(fd, buf, sizeof(*h) + len, pass_fd)))
		return rc;
	return recv_status(fd, out, out_len);
}

static int hello(int fd)
{
	struct fc_api_hello h = { .client_version = FC_API_VERSION };
	int ev = eventfd(0, EFD_CLOEXEC);
	struct fc_api_hello_rep rep;
	int rc = request(fd, FC_API_HELLO, &h, sizeof(h), ev, &rep, sizeof(rep));

	close(ev);
	return rc;
}

/* A well-behaved client: must be served after every abuse round. */
static void good_client(const char *when)
{
	struct falcon_context *ctx = falcon_open(sock_path);
	struct falcon_pd *pd = ctx ? falcon_alloc_pd(ctx) : NULL;
	struct falcon_cq *cq = ctx ? falcon_create_cq(ctx, 16) : NULL;
	void *buf = ctx ? falcon_alloc_buf(ctx, 4096) : NULL;
	struct falcon_mr *mr = pd && buf ? falcon_reg_mr(pd, buf, 4096, 1) : NULL;

	EXPECT(ctx && pd && cq && mr, "a good client was not served %s: %s", when,
	       falcon_strerror(-errno));
	if (ctx)
		falcon_close(ctx);
}

static int sealed_memfd(size_t len, int seal)
{
	int fd = memfd_create("abuse", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
		exit(1);
	if (seal)
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	return fd;
}

static void handles(void)
{
	int x = raw_open(), y = raw_open(), mfd = sealed_memfd(8192, 1);
	struct fc_api_handle pd = { 0 }, cq_rep;
	struct fc_api_reg_mr_rep mr;
	struct fc_api_create_cq_rep cq;
	struct fc_api_create_cq cqm = { .entries = 16 };
	static const uint16_t destroy_types[] = { FC_API_DEALLOC_PD, FC_API_DEREG_MR,
						  FC_API_DESTROY_CQ, FC_API_CLOSE_LISTENER,
						  FC_API_DESTROY_QP, FC_API_DESTROY_SRQ,
						  FC_API_DESTROY_AH, FC_API_CLOSE_XRCD,
						  FC_API_QUERY_QP };
	unsigned refused = 0, tries = 0;

	EXPECT(hello(x) == 0 && hello(y) == 0, "hello");
	EXPECT(request(x, FC_API_ALLOC_PD, NULL, 0, -1, &pd, sizeof(pd)) == 0, "X alloc_pd");
	struct fc_api_reg_mr rm = { .pd = pd.handle, .access = 1, .iova = 0x10000, .len = 4096 };

	EXPECT(request(x, FC_API_REG_MR, &rm, sizeof(rm), mfd, &mr, sizeof(mr)) == 0, "X reg_mr");
	EXPECT(request(x, FC_API_CREATE_CQ, &cqm, sizeof(cqm), -1, &cq, sizeof(cq)) == 0,
	       "X create_cq");
	struct fc_api_create_srq sm = { .pd = pd.handle, .entries = 16 };
	struct fc_api_create_srq_rep srq;

	EXPECT(request(x, FC_API_CREATE_SRQ, &sm, sizeof(sm), -1, &srq, sizeof(srq)) == 0,
	       "X create_srq");
	struct fc_api_handle xrcd;
	struct fc_api_qp_attr qa = { .pd = pd.handle, .send_cq = cq.handle, .recv_cq = cq.handle,
				     .sq_entries = 16, .rq_entries = 16, .max_inflight = 16,
				     .type = 2 /* UD */, .qkey = 9 };
	struct fc_api_qp_rep qp;

	EXPECT(request(x, FC_API_OPEN_XRCD, NULL, 0, -1, &xrcd, sizeof(xrcd)) == 0, "X open_xrcd");
	EXPECT(request(x, FC_API_CREATE_QP, &qa, sizeof(qa), -1, &qp, sizeof(qp)) == 0,
	       "X create_qp");
	(void)cq_rep;
	/* Y guesses: every slot, the first generations */
	for (uint32_t gen = 0; gen <= 4; gen++)
		for (uint32_t slot = 0; slot < 1024; slot += (slot < 16 ? 1 : 37)) {
			struct fc_api_handle h = { .handle = slot | gen << 16 };

			for (size_t t = 0; t < sizeof(destroy_types) / sizeof(destroy_types[0]); t++) {
				int rc = request(y, destroy_types[t], &h, sizeof(h), -1, NULL, 0);

				tries++;
				refused += rc == -ENOENT;
			}
			struct fc_api_reg_mr g = { .pd = h.handle, .access = 1, .len = 4096 };

			tries++;
			refused += request(y, FC_API_REG_MR, &g, sizeof(g), mfd, NULL, 0) == -ENOENT;
			struct fc_api_create_srq gs = { .pd = h.handle, .entries = 16 };

			tries++;
			refused += request(y, FC_API_CREATE_SRQ, &gs, sizeof(gs), -1, NULL, 0) == -ENOENT;
			/* an XRC SRQ naming guessed domain and CQ handles */
			struct fc_api_create_srq gx = { .pd = h.handle, .entries = 16,
							.xrcd = h.handle, .cq = h.handle };

			tries++;
			refused += request(y, FC_API_CREATE_SRQ, &gx, sizeof(gx), -1, NULL, 0) == -ENOENT;
			struct fc_api_modify_qp gm = { .handle = h.handle, .state = 6 /* ERR */ };

			tries++;
			refused += request(y, FC_API_MODIFY_QP, &gm, sizeof(gm), -1, NULL, 0) == -ENOENT;
			struct fc_api_qp_attr gq = qa;

			gq.pd = gq.send_cq = gq.recv_cq = h.handle;
			tries++;
			refused += request(y, FC_API_CREATE_QP, &gq, sizeof(gq), -1, NULL, 0) == -ENOENT;
			struct fc_api_create_ah ga = { .pd = h.handle, .addr_len = 16 };

			tries++;
			refused += request(y, FC_API_CREATE_AH, &ga, sizeof(ga), -1, NULL, 0) == -ENOENT;
		}
	EXPECT(refused == tries, "Y reached X's objects: %u of %u guesses not refused ENOENT",
	       tries - refused, tries);
	/* X's objects are intact: the MR's PD is busy, the MR deregisters, then the PD goes */
	EXPECT(request(x, FC_API_DEALLOC_PD, &pd, sizeof(pd), -1, NULL, 0) == -EBUSY,
	       "X's PD lost its MR");
	{
		struct fc_api_handle qh = { .handle = qp.handle };
		struct fc_api_query_qp_rep qr;

		EXPECT(request(x, FC_API_QUERY_QP, &qh, sizeof(qh), -1, &qr, sizeof(qr)) == 0 &&
		       qr.state == 0 && qr.qpn == qp.qpn, "X's QP changed: state %u", qr.state);
		EXPECT(request(x, FC_API_DESTROY_QP, &qh, sizeof(qh), -1, NULL, 0) == 0,
		       "X destroy_qp");
		EXPECT(request(x, FC_API_CLOSE_XRCD, &xrcd, sizeof(xrcd), -1, NULL, 0) == 0,
		       "X close_xrcd");
	}
	struct fc_api_handle mh = { .handle = mr.handle }, ch = { .handle = cq.handle };

	EXPECT(request(x, FC_API_DEREG_MR, &mh, sizeof(mh), -1, NULL, 0) == 0, "X dereg_mr");
	EXPECT(request(x, FC_API_DESTROY_CQ, &ch, sizeof(ch), -1, NULL, 0) == 0, "X destroy_cq");
	struct fc_api_handle sh = { .handle = srq.handle };

	EXPECT(request(x, FC_API_DEALLOC_PD, &pd, sizeof(pd), -1, NULL, 0) == -EBUSY,
	       "X's PD lost its SRQ");
	EXPECT(request(x, FC_API_DESTROY_SRQ, &sh, sizeof(sh), -1, NULL, 0) == 0, "X destroy_srq");
	EXPECT(request(x, FC_API_DEALLOC_PD, &pd, sizeof(pd), -1, NULL, 0) == 0, "X dealloc_pd");
	close(x);
	close(y);
	close(mfd);
	printf("handles: %u guesses by another client, all refused\n", tries);
}

static void malformed(void)
{
	uint8_t buf[FC_API_MSG_MAX + 64];
	struct fc_api_hdr *h = (void *)buf;
	unsigned answered = 0, disconnected = 0, rounds = 0;
	uint64_t seed = 88172645463325252ull;

	/* requests before HELLO: an error, not a crash */
	{
		int fd = raw_open();

		EXPECT(request(fd, FC_API_ALLOC_PD, NULL, 0, -1, NULL, 0) == -EPROTO,
		       "a request before HELLO was served");
		close(fd);
	}
	/* unsealed memfd, range beyond the file, unknown access bits, memory without fd */
	{
		int fd = raw_open(), unsealed = sealed_memfd(4096, 0), small = sealed_memfd(4096, 1);
		struct fc_api_handle pd;

		hello(fd);
		request(fd, FC_API_ALLOC_PD, NULL, 0, -1, &pd, sizeof(pd));
		struct fc_api_reg_mr m = { .pd = pd.handle, .access = 1, .len = 4096 };

		EXPECT(request(fd, FC_API_REG_MR, &m, sizeof(m), unsealed, NULL, 0) == -EPERM,
		       "an unsealed memfd was mapped");
		m.offset = 4096;
		EXPECT(request(fd, FC_API_REG_MR, &m, sizeof(m), small, NULL, 0) == -EFAULT,
		       "a range beyond the memfd was mapped");
		m.offset = 0;
		m.access = 0x100;
		EXPECT(request(fd, FC_API_REG_MR, &m, sizeof(m), small, NULL, 0) == -EINVAL,
		       "unknown access bits accepted");
		/* without a memfd: our own memory, reached by copy; a range we do not have
		 * mapped (the first page, the end of the address space, one that runs off
		 * our mapping) is refused at registration */
		m.access = 1;
		m.iova = 0;
		EXPECT(request(fd, FC_API_REG_MR, &m, sizeof(m), -1, NULL, 0) == -EFAULT,
		       "REG_MR of unmapped memory (page 0) accepted");
		m.iova = 0x7ffffffff000ull;
		EXPECT(request(fd, FC_API_REG_MR, &m, sizeof(m), -1, NULL, 0) == -EFAULT,
		       "REG_MR of unmapped memory (top of user space) accepted");
		{
			static uint8_t page[4096] __attribute__((aligned(4096)));
			struct fc_api_reg_mr_rep rep;

			m.iova = (uint64_t)(uintptr_t)page;
			m.len = 1ull << 40; /* from a mapped page far past the mapping */
			EXPECT(request(fd, FC_API_REG_MR, &m, sizeof(m), -1, NULL, 0) == -EFAULT,
			       "REG_MR running off the mapping accepted");
			m.len = sizeof(page);
			EXPECT(request(fd, FC_API_REG_MR, &m, sizeof(m), -1, &rep, sizeof(rep)) == 0,
			       "REG_MR of our own mapped memory refused");
			m.len = 4096;
		}
		m.iova = 0;
		EXPECT(request(fd, FC_API_ALLOC_PD, NULL, 0, small, NULL, 0) == -EINVAL,
		       "a descriptor where none belongs accepted");
		struct fc_api_create_cq c = { .entries = 3 };

		EXPECT(request(fd, FC_API_CREATE_CQ, &c, sizeof(c), -1, NULL, 0) == -EINVAL,
		       "a CQ of 3 entries accepted");
		close(fd);
		close(unsealed);
		close(small);
	}
	good_client("after bad registrations");
	/* random and truncated messages */
	for (int r = 0; r < 3000; r++) {
		int fd = raw_open(), rc;
		size_t len;

		hello(fd);
		for (int k = 0; k < 4; k++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			len = seed % (sizeof(buf));
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)(seed >> (i % 56)) ^ (uint8_t)i;
			if (seed & 1 && len >= sizeof(*h)) { /* a plausible header, bad elsewhere */
				h->hdr_size = sizeof(*h);
				h->version = FC_API_VERSION;
				h->type = (uint16_t)(seed >> 8) % (FC_API_TYPE_END + 2);
				h->len = (seed & 2) ? (uint32_t)len : (uint32_t)(seed >> 20);
				if ((seed & 4) && h->type >= FC_API_DEALLOC_PD)
					h->flags = 0;
			}
			if (send_raw(fd, buf, len, -1)) {
				disconnected++;
				break;
			}
			rc = recv_status(fd, NULL, 0);
			rounds++;
			if (rc == 1) {
				disconnected++;
				break;
			}
			EXPECT(rc != 2, "no answer and no disconnect for a %zu-byte message", len);
			if (rc == 2)
				break;
			answered++;
		}
		close(fd);
		if (r % 500 == 0)
			good_client("between random messages");
	}
	/* oversized: more than a message may hold */
	{
		int fd = raw_open();
		static uint8_t big[65536];

		hello(fd);
		send_raw(fd, big, sizeof(big), -1);
		EXPECT(recv_status(fd, NULL, 0) == 1, "an oversized message did not end the session");
		close(fd);
	}
	good_client("after the malformed messages");
	printf("malformed: %u messages, %u answered with an error, %u sessions ended\n", rounds,
	       answered, disconnected);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: api_abuse SOCKET\n");
		return 2;
	}
	sock_path = argv[1];
	handles();
	malformed();
	printf("api-abuse: %d passed, %d failed\n", pass, fail_);
	return fail_ ? 1 : 0;
}
