/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bigmsg - large messages in one work request, and the limits the daemon reports
 * (issue 21; tests/e2e/test_bigmsg.sh runs it):
 *
 *   bigmsg query SOCK [FIELD=VALUE ...]
 *       falcon_query_device on the daemon at SOCK: prints every field ("query: f=v"), and
 *       checks those given (the daemon's options) and that the others are sane
 *   bigmsg xfer SOCK_A SOCK_B CM_B MIB MEM [OPS]
 *       an RC pair A -> B; one WRITE of MIB MiB from A into B, checked in B's memory by
 *       checksum; A's buffer wiped, one READ of it back, checked; with OPS "wrs" also one
 *       SEND of it into one receive of B, checked. MEM: buf (falcon_alloc_buf on both
 *       sides: the daemons map it), malloc (plain memory on both: the daemons reach it by
 *       copy, process_vm_readv/writev) or mixed (A buf, B malloc). Prints one line per
 *       operation: "xfer: WRITE 1024 MiB in 2.345 s = 3.66 Gbit/s"
 *   bigmsg toolong SOCK_A SOCK_B CM_B
 *       a WRITE of max_msg_size + 1 bytes (max_msg_size as the daemon reports it) completes
 *       LOC_LEN_ERR; a 64 KiB WRITE whose last 8 bytes lie past B's region completes
 *       REM_ACCESS_ERR and writes nothing (issue 21 items 2, 6)
 *
 * Exit status 0 only when every check passed; one summary line "bigmsg: N passed, N
 * failed". Waits are bounded (BIG_WAIT_S, default 600 s per operation).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "falcon/falcon.h"
#include "../testutil.h"

#define SERVICE 5300
#define MIB ((uint64_t)1 << 20)

static int passed, failed;
static int wait_s = 600;

#define CHECK(cond, ...) do { \
	if (cond) { \
		passed++; \
	} else { \
		failed++; \
		fprintf(stderr, "bigmsg: FAILED: " __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

static void die(const char *what)
{
	fprintf(stderr, "bigmsg: %s: %s\n", what, falcon_strerror(-errno));
	printf("bigmsg: %d passed, %d failed\n", passed, failed + 1);
	exit(1);
}

static double now_s(void) { return (double)fc_test_now_ns() / 1e9; }

/* A pattern and its checksum, 8 bytes at a time (1 GiB in well under a second). */
static void fill(uint8_t *p, uint64_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull | 1, i;

	for (i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < n; i++)
		p[i] = (uint8_t)(x >> (i % 8 * 8));
}

static uint64_t sum(const uint8_t *p, uint64_t n)
{
	uint64_t h = 0x84222325cbf29ce4ull, w, i;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h ^ n;
}

/* ---- query ---- */

struct field {
	const char *name;
	uint64_t v;
};

static int query(const char *sock, int argc, char **argv)
{
	struct falcon_context *ctx = falcon_open(sock);
	struct falcon_device_attr a = { .size = sizeof(a) };
	struct { size_t size; uint64_t max_msg_size; } old = { .size = sizeof(old) };
	struct field f[32];
	unsigned n = 0;

	if (!ctx)
		die(sock);
	CHECK(falcon_query_device(ctx, &a) == 0, "falcon_query_device: %s",
	      falcon_strerror(-errno));
	f[n++] = (struct field){ "max_msg_size", a.max_msg_size };
	f[n++] = (struct field){ "max_mr_size", a.max_mr_size };
	f[n++] = (struct field){ "mtu", a.mtu };
	f[n++] = (struct field){ "max_qp", a.max_qp };
	f[n++] = (struct field){ "max_conn", a.max_conn };
	f[n++] = (struct field){ "max_cq", a.max_cq };
	f[n++] = (struct field){ "max_cqe", a.max_cqe };
	f[n++] = (struct field){ "max_mr", a.max_mr };
	f[n++] = (struct field){ "max_pd", a.max_pd };
	f[n++] = (struct field){ "max_srq", a.max_srq };
	f[n++] = (struct field){ "max_ah", a.max_ah };
	f[n++] = (struct field){ "max_send_wr", a.max_send_wr };
	f[n++] = (struct field){ "max_recv_wr", a.max_recv_wr };
	f[n++] = (struct field){ "max_srq_wr", a.max_srq_wr };
	f[n++] = (struct field){ "max_send_sge", a.max_send_sge };
	f[n++] = (struct field){ "max_recv_sge", a.max_recv_sge };
	f[n++] = (struct field){ "max_srq_sge", a.max_srq_sge };
	f[n++] = (struct field){ "max_inflight", a.max_inflight };
	f[n++] = (struct field){ "max_objects", a.max_objects };
	f[n++] = (struct field){ "max_clients", a.max_clients };
	f[n++] = (struct field){ "atomic_cap", a.atomic_cap };
	f[n++] = (struct field){ "atomic_size", a.atomic_size };
	f[n++] = (struct field){ "flags", a.flags };
	for (unsigned i = 0; i < n; i++) {
		printf("query: %s=%" PRIu64 "\n", f[i].name, f[i].v);
		CHECK(f[i].v || !strcmp(f[i].name, "flags"), "%s is 0", f[i].name);
	}
	CHECK(a.size == sizeof(a), "size changed to %zu", a.size);
	CHECK(a.atomic_cap == FALCON_ATOMIC_HCA && a.atomic_size == 8, "atomics");
	CHECK(a.max_msg_size >= a.mtu, "max_msg_size below the MTU");
	for (int i = 0; i < argc; i++) { /* FIELD=VALUE: the daemon's options */
		const char *eq = strchr(argv[i], '=');
		unsigned j;

		for (j = 0; eq && j < n; j++)
			if (!strncmp(argv[i], f[j].name, (size_t)(eq - argv[i])) &&
			    !f[j].name[eq - argv[i]])
				break;
		CHECK(eq && j < n, "no field %s", argv[i]);
		if (eq && j < n)
			CHECK(f[j].v == strtoull(eq + 1, NULL, 0), "%s: daemon says %" PRIu64,
			      argv[i], f[j].v);
	}
	/* a caller built against a smaller struct gets its part, the rest untouched */
	CHECK(falcon_query_device(ctx, (struct falcon_device_attr *)&old) == 0 &&
	      old.size == sizeof(old) && old.max_msg_size == a.max_msg_size, "older caller");
	a.size = 0;
	CHECK(falcon_query_device(ctx, &a) == -EINVAL, "size 0 accepted");
	falcon_close(ctx);
	return 0;
}

/* ---- an RC pair ---- */

struct side {
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	struct falcon_qp *qp;
	struct falcon_listener *l;
	struct falcon_mr *mr;
	uint8_t *buf;
	uint64_t len;
	int malloced;
};

static struct falcon_qp_init_attr attr_of(struct side *s)
{
	return (struct falcon_qp_init_attr){ .size = sizeof(struct falcon_qp_init_attr),
					     .send_cq = s->cq, .recv_cq = s->cq,
					     .max_send_wr = 16, .max_recv_wr = 16 };
}

static void *acceptor(void *arg)
{
	struct side *b = arg;
	struct falcon_qp_init_attr a = attr_of(b);

	b->qp = falcon_accept(b->l, b->pd, &a, 30000);
	return NULL;
}

static void side_open(struct side *s, const char *sock, uint64_t len, int malloced)
{
	unsigned all = FALCON_ACCESS_LOCAL_WRITE | FALCON_ACCESS_REMOTE_READ |
		       FALCON_ACCESS_REMOTE_WRITE;

	s->len = len;
	s->malloced = malloced;
	if (!(s->ctx = falcon_open(sock)) || !(s->pd = falcon_alloc_pd(s->ctx)) ||
	    !(s->cq = falcon_create_cq(s->ctx, 64)))
		die(sock);
	if (malloced && !(s->buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096)))
		die("aligned_alloc");
	if (!malloced && !(s->buf = falcon_alloc_buf(s->ctx, len)))
		die("falcon_alloc_buf");
	/* the pages exist before the daemons reach them (a verbs NIC pins them at
	 * registration): the figures are the transfer's, not first-touch page faults */
	memset(s->buf, 0, len);
	if (!(s->mr = falcon_reg_mr(s->pd, s->buf, len, all)))
		die("falcon_reg_mr");
}

static void connect_pair(struct side *a, struct side *b, const char *cm_b)
{
	struct falcon_qp_init_attr at = attr_of(a);
	pthread_t th;

	if (!(b->l = falcon_listen(b->ctx, SERVICE, 4)))
		die("listen");
	pthread_create(&th, NULL, acceptor, b);
	a->qp = falcon_connect(a->pd, cm_b, SERVICE, &at, 30000);
	if (!a->qp)
		die("connect");
	pthread_join(th, NULL);
	if (!b->qp)
		die("accept");
}

static void side_close(struct side *s)
{
	falcon_close(s->ctx); /* everything it holds, buffers of falcon_alloc_buf included */
	if (s->malloced)
		free(s->buf);
}

/* One completion on s within wait_s: its status (-1: none came). */
static int wait_wc(struct side *s, struct falcon_wc *wc)
{
	double t0 = now_s();

	while (now_s() - t0 < wait_s) {
		int k = falcon_wait_cq(s->cq, 1, wc, 1000);

		if (k < 0)
			return -1;
		if (k == 1)
			return (int)wc->status;
	}
	return -1;
}

static void post(struct side *s, uint32_t op, uint64_t id, uint8_t *addr, uint64_t len,
		 uint64_t raddr, uint32_t rkey, uint32_t lkey)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)addr, (uint32_t)len, lkey };
	struct falcon_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				     .remote_addr = raddr, .rkey = rkey }, *bad;

	if (falcon_post_send(s->qp, &wr, &bad))
		die("post_send");
}

/* Post one WR of the whole buffer, wait for it, print its time and rate. */
static int timed(struct side *s, const char *name, uint32_t op, uint64_t len, uint64_t raddr,
		 uint32_t rkey)
{
	struct falcon_wc wc = { 0 };
	double t0 = now_s(), dt;
	int st;

	post(s, op, 1, s->buf, len, raddr, rkey, s->mr->lkey);
	st = wait_wc(s, &wc);
	dt = now_s() - t0;
	CHECK(st == FALCON_WC_SUCCESS, "%s: %s (vendor_err %#x)", name,
	      st < 0 ? "no completion" : falcon_wc_status_str((uint32_t)st), wc.vendor_err);
	if (st == FALCON_WC_SUCCESS && op == FALCON_WR_RDMA_READ)
		CHECK(wc.byte_len == len, "%s: byte_len %u", name, wc.byte_len);
	printf("xfer: %s %" PRIu64 " MiB in %.3f s = %.2f Gbit/s\n", name, len / MIB, dt,
	       (double)len * 8 / dt / 1e9);
	fflush(stdout);
	return st;
}

static int xfer(const char *sa, const char *sb, const char *cm_b, uint64_t mib, const char *mem,
		const char *ops)
{
	struct side a = { 0 }, b = { 0 };
	uint64_t len = mib * MIB, want;
	struct falcon_device_attr dev = { .size = sizeof(dev) };
	struct falcon_wc wc = { 0 };
	double t0;

	side_open(&a, sa, len, !strcmp(mem, "malloc"));
	side_open(&b, sb, len, strcmp(mem, "buf") != 0);
	CHECK(falcon_query_device(a.ctx, &dev) == 0 && dev.max_msg_size >= len,
	      "the daemon takes %" PRIu64 " bytes per WR, not %" PRIu64, dev.max_msg_size, len);
	connect_pair(&a, &b, cm_b);
	t0 = now_s();
	fill(a.buf, len, mib);
	want = sum(a.buf, len);
	printf("xfer: %" PRIu64 " MiB filled and summed in %.3f s (memory %s)\n", mib,
	       now_s() - t0, mem);
	if (timed(&a, "WRITE", FALCON_WR_RDMA_WRITE, len, (uint64_t)(uintptr_t)b.buf,
		  b.mr->rkey) == FALCON_WC_SUCCESS)
		CHECK(sum(b.buf, len) == want, "WRITE: B's memory differs");
	memset(a.buf, 0, len);
	if (timed(&a, "READ", FALCON_WR_RDMA_READ, len, (uint64_t)(uintptr_t)b.buf,
		  b.mr->rkey) == FALCON_WC_SUCCESS)
		CHECK(sum(a.buf, len) == want, "READ: A's memory differs");
	if (ops && strchr(ops, 's')) { /* SEND into one receive of the whole buffer */
		struct falcon_sge rs = { (uint64_t)(uintptr_t)b.buf, (uint32_t)len, b.mr->lkey };
		struct falcon_recv_wr rw = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 }, *bad;

		memset(b.buf, 0, len);
		if (falcon_post_recv(b.qp, &rw, &bad))
			die("post_recv");
		if (timed(&a, "SEND", FALCON_WR_SEND, len, 0, 0) == FALCON_WC_SUCCESS) {
			CHECK(wait_wc(&b, &wc) == FALCON_WC_SUCCESS && wc.byte_len == len,
			      "SEND: the receive completed %s, %u bytes",
			      falcon_wc_status_str(wc.status), wc.byte_len);
			CHECK(sum(b.buf, len) == want, "SEND: B's memory differs");
		}
	}
	side_close(&a);
	side_close(&b);
	return 0;
}

/* ---- the limits, enforced ---- */

static int toolong(const char *sa, const char *sb, const char *cm_b)
{
	struct side a = { 0 }, b = { 0 };
	struct falcon_device_attr dev = { .size = sizeof(dev) };
	struct falcon_mr *small;
	struct falcon_wc wc = { 0 };
	uint64_t max;
	int st;

	side_open(&a, sa, 1 * MIB, 0);
	side_open(&b, sb, 1 * MIB, 0);
	if (falcon_query_device(a.ctx, &dev))
		die("falcon_query_device");
	max = dev.max_msg_size;
	connect_pair(&a, &b, cm_b);
	/* a message one byte above the limit: two SGEs (an SGE holds 2^32 - 1), over the same
	 * memory: the length is refused before anything is read */
	{
		struct falcon_sge sg[2] = {
			{ (uint64_t)(uintptr_t)a.buf, (uint32_t)(max / 2), a.mr->lkey },
			{ (uint64_t)(uintptr_t)a.buf, (uint32_t)(max - max / 2 + 1), a.mr->lkey },
		};
		struct falcon_send_wr wr = { .wr_id = 1, .sg_list = sg, .num_sge = 2,
					     .opcode = FALCON_WR_RDMA_WRITE,
					     .remote_addr = (uint64_t)(uintptr_t)b.buf,
					     .rkey = b.mr->rkey }, *bad;

		if (falcon_post_send(a.qp, &wr, &bad))
			die("post_send");
		st = wait_wc(&a, &wc);
		CHECK(st == FALCON_WC_LOC_LEN_ERR, "a WRITE of %" PRIu64 " bytes: %s", max + 1,
		      st < 0 ? "no completion" : falcon_wc_status_str((uint32_t)st));
	}
	side_close(&a);
	side_close(&b);
	/* a fresh pair: 64 KiB into a region of 64 KiB - 8 (issue 21 item 6) */
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	side_open(&a, sa, 1 * MIB, 0);
	side_open(&b, sb, 1 * MIB, 0);
	if (!(small = falcon_reg_mr(b.pd, b.buf, 65536 - 8,
				    FALCON_ACCESS_LOCAL_WRITE | FALCON_ACCESS_REMOTE_WRITE)))
		die("falcon_reg_mr");
	connect_pair(&a, &b, cm_b);
	fill(a.buf, 65536, 7);
	post(&a, FALCON_WR_RDMA_WRITE, 2, a.buf, 65536, (uint64_t)(uintptr_t)b.buf, small->rkey,
	     a.mr->lkey);
	st = wait_wc(&a, &wc);
	CHECK(st == FALCON_WC_REM_ACCESS_ERR, "a WRITE past the region: %s",
	      st < 0 ? "no completion" : falcon_wc_status_str((uint32_t)st));
	{
		uint64_t written = 0;

		for (uint32_t i = 0; i < 65536; i++)
			written += b.buf[i] != 0;
		CHECK(!written, "a WRITE past the region wrote %" PRIu64 " bytes", written);
		printf("toolong: %" PRIu64 "-byte WRITE completed %s; 64 KiB WRITE past the "
		       "region completed %s, %" PRIu64 " bytes written\n", max + 1,
		       falcon_wc_status_str(FALCON_WC_LOC_LEN_ERR),
		       st < 0 ? "nothing" : falcon_wc_status_str((uint32_t)st), written);
	}
	side_close(&a);
	side_close(&b);
	return 0;
}

int main(int argc, char **argv)
{
	const char *w = getenv("BIG_WAIT_S");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (w && atoi(w) > 0)
		wait_s = atoi(w);
	if (argc >= 3 && !strcmp(argv[1], "query"))
		query(argv[2], argc - 3, argv + 3);
	else if (argc >= 7 && !strcmp(argv[1], "xfer"))
		xfer(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 0), argv[6],
		     argc > 7 ? argv[7] : NULL);
	else if (argc >= 5 && !strcmp(argv[1], "toolong"))
		toolong(argv[2], argv[3], argv[4]);
	else {
		fprintf(stderr, "usage: bigmsg query SOCK [FIELD=VALUE...] | xfer SOCK_A SOCK_B "
				"CM_B MIB buf|malloc|mixed [wrs] | toolong SOCK_A SOCK_B CM_B\n");
		return 2;
	}
	printf("bigmsg: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
