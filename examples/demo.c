/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demo - what `make demo` runs: one process, a context on each of two falcond (A and B),
 * an RC QP pair between them, then every kind of operation with its result checked:
 * WRITE, READ back, SEND (+immediate), CmpSwap, FetchAdd, masked CmpSwap / FetchAdd, and
 * a short measurement (8 B WRITE latency, 8 B WRITE rate at depth 64, 64 KiB WRITE
 * bandwidth). Exit status 0 only if every check passed.
 *
 *   demo SOCKET_A SOCKET_B CM_ADDR_OF_B [--quick]
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "falcon/falcon.h"

#define SERVICE 4242
#define BUF (4u << 20)
#define WAIT_MS 10000

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "demo: FAILED: " __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

static void die(const char *what)
{
	fprintf(stderr, "demo: %s: %s\n", what, falcon_strerror(-errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct side {
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	struct falcon_mr *mr;
	uint8_t *buf;
	struct falcon_qp *qp;
	struct falcon_listener *l;
};

static void side_open(struct side *s, const char *sock)
{
	if (!(s->ctx = falcon_open(sock)))
		die(sock);
	if (!(s->pd = falcon_alloc_pd(s->ctx)) || !(s->cq = falcon_create_cq(s->ctx, 1024)) ||
	    !(s->buf = falcon_alloc_buf(s->ctx, BUF)) ||
	    !(s->mr = falcon_reg_mr(s->pd, s->buf, BUF, FALCON_ACCESS_LOCAL_WRITE |
				    FALCON_ACCESS_REMOTE_READ | FALCON_ACCESS_REMOTE_WRITE |
				    FALCON_ACCESS_REMOTE_ATOMIC)))
		die("setting up");
}

static struct falcon_qp_init_attr qp_attr(struct side *s)
{
	return (struct falcon_qp_init_attr){ .size = sizeof(struct falcon_qp_init_attr),
					     .send_cq = s->cq, .recv_cq = s->cq,
					     .max_send_wr = 256, .max_recv_wr = 256 };
}

static void *accept_thread(void *arg)
{
	struct side *b = arg;
	struct falcon_qp_init_attr a = qp_attr(b);

	b->qp = falcon_accept(b->l, b->pd, &a, WAIT_MS);
	if (!b->qp)
		die("accept");
	return NULL;
}

/* One completion, checked. */
static struct falcon_wc wait1(struct side *s, uint32_t opcode, const char *what)
{
	struct falcon_wc wc = { 0 };
	int n = falcon_wait_cq(s->cq, 1, &wc, WAIT_MS);

	CHECK(n == 1, "%s: no completion within %d ms", what, WAIT_MS);
	if (n == 1) {
		CHECK(wc.status == FALCON_WC_SUCCESS, "%s: status %s", what,
		      falcon_wc_status_str(wc.status));
		CHECK(wc.opcode == opcode, "%s: opcode %u, expected %u", what, wc.opcode, opcode);
	}
	return wc;
}

static void post(struct side *s, struct falcon_send_wr *wr)
{
	struct falcon_send_wr *bad;

	if (falcon_post_send(s->qp, wr, &bad))
		die("post_send");
}

static struct falcon_send_wr rdma(uint32_t op, struct side *a, uint32_t off, uint32_t len,
				  struct side *b, uint32_t roff, struct falcon_sge *sge)
{
	*sge = (struct falcon_sge){ (uint64_t)(uintptr_t)(a->buf + off), len, a->mr->lkey };
	return (struct falcon_send_wr){ .wr_id = op, .sg_list = sge, .num_sge = 1, .opcode = op,
					.remote_addr = (uint64_t)(uintptr_t)(b->buf + roff),
					.rkey = b->mr->rkey };
}

static uint64_t atomic_op(struct side *a, struct side *b, uint32_t op, uint64_t cmp_add,
			  uint64_t swap, uint64_t cmask, uint64_t smask, const char *what,
			  uint32_t wc_op)
{
	struct falcon_sge sge;
	struct falcon_send_wr wr = rdma(op, a, 8192, 8, b, 8192, &sge);
	uint64_t old;

	wr.compare_add = cmp_add;
	wr.swap = swap;
	wr.compare_add_mask = cmask;
	wr.swap_mask = smask;
	post(a, &wr);
	wait1(a, wc_op, what);
	memcpy(&old, a->buf + 8192, 8);
	return old;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	struct side a = { 0 }, b = { 0 };
	struct falcon_qp_init_attr at;
	struct falcon_sge sge;
	struct falcon_send_wr wr;
	pthread_t th;
	int quick = argc > 4 && !strcmp(argv[4], "--quick");
	uint64_t v;

	if (argc < 4) {
		fprintf(stderr, "usage: demo SOCKET_A SOCKET_B CM_ADDR_OF_B [--quick]\n");
		return 2;
	}
	side_open(&a, argv[1]);
	side_open(&b, argv[2]);
	if (!(b.l = falcon_listen(b.ctx, SERVICE, 4)))
		die("listen");
	pthread_create(&th, NULL, accept_thread, &b);
	at = qp_attr(&a);
	uint64_t t0 = now_ns();

	if (!(a.qp = falcon_connect(a.pd, argv[3], SERVICE, &at, WAIT_MS)))
		die("connect");
	pthread_join(th, NULL);
	printf("connected: QP %u (daemon A) <-> QP %u (daemon B) in %.2f ms\n", a.qp->qp_num,
	       b.qp->qp_num, (double)(now_ns() - t0) / 1e6);
	CHECK(a.qp->remote_qp_num == b.qp->qp_num && b.qp->remote_qp_num == a.qp->qp_num,
	      "QP numbers do not match across the connection");

	/* WRITE 64 KiB, then READ it back into another place */
	for (uint32_t i = 0; i < 65536; i++)
		a.buf[i] = (uint8_t)(i * 7 + 3);
	wr = rdma(FALCON_WR_RDMA_WRITE, &a, 0, 65536, &b, 65536, &sge);
	post(&a, &wr);
	wait1(&a, FALCON_WC_RDMA_WRITE, "WRITE 64 KiB");
	CHECK(!memcmp(a.buf, b.buf + 65536, 65536), "WRITE: B's memory differs");
	printf("WRITE 64 KiB        ok\n");
	memset(a.buf + 131072, 0, 65536);
	wr = rdma(FALCON_WR_RDMA_READ, &a, 131072, 65536, &b, 65536, &sge);
	post(&a, &wr);
	wait1(&a, FALCON_WC_RDMA_READ, "READ 64 KiB");
	CHECK(!memcmp(a.buf, a.buf + 131072, 65536), "READ: data read back differs");
	printf("READ 64 KiB back    ok\n");

	/* SEND with immediate into a posted receive */
	{
		struct falcon_sge rs = { (uint64_t)(uintptr_t)(b.buf + 262144), 8192, b.mr->lkey };
		struct falcon_recv_wr rw = { .wr_id = 77, .sg_list = &rs, .num_sge = 1 }, *bad;
		struct falcon_wc wc;

		if (falcon_post_recv(b.qp, &rw, &bad))
			die("post_recv");
		memcpy(a.buf + 200000, "hello over falcon", 18);
		wr = rdma(FALCON_WR_SEND_WITH_IMM, &a, 200000, 18, &b, 0, &sge);
		wr.imm_data = 0xC0FFEE;
		post(&a, &wr);
		wait1(&a, FALCON_WC_SEND, "SEND");
		wc = wait1(&b, FALCON_WC_RECV, "RECV");
		CHECK(wc.wr_id == 77 && wc.byte_len == 18 && (wc.wc_flags & FALCON_WC_WITH_IMM) &&
		      wc.imm_data == 0xC0FFEE, "RECV: wr_id %" PRIu64 " len %u imm %#x", wc.wr_id,
		      wc.byte_len, wc.imm_data);
		CHECK(!memcmp(b.buf + 262144, "hello over falcon", 18), "RECV: payload differs");
		printf("SEND + imm          ok\n");
	}

	/* atomics on B's word at 8192 */
	v = 100;
	memcpy(b.buf + 8192, &v, 8);
	v = atomic_op(&a, &b, FALCON_WR_ATOMIC_CMP_AND_SWP, 100, 200, 0, 0, "CmpSwap",
		      FALCON_WC_COMP_SWAP);
	CHECK(v == 100, "CmpSwap returned %" PRIu64 ", expected 100", v);
	memcpy(&v, b.buf + 8192, 8);
	CHECK(v == 200, "CmpSwap left %" PRIu64 ", expected 200", v);
	v = atomic_op(&a, &b, FALCON_WR_ATOMIC_CMP_AND_SWP, 999, 1, 0, 0, "CmpSwap (miss)",
		      FALCON_WC_COMP_SWAP);
	CHECK(v == 200, "CmpSwap (miss) returned %" PRIu64, v);
	memcpy(&v, b.buf + 8192, 8);
	CHECK(v == 200, "CmpSwap (miss) changed memory to %" PRIu64, v);
	v = atomic_op(&a, &b, FALCON_WR_ATOMIC_FETCH_AND_ADD, 5, 0, 0, 0, "FetchAdd",
		      FALCON_WC_FETCH_ADD);
	CHECK(v == 200, "FetchAdd returned %" PRIu64 ", expected 200", v);
	memcpy(&v, b.buf + 8192, 8);
	CHECK(v == 205, "FetchAdd left %" PRIu64 ", expected 205", v);
	printf("CmpSwap, FetchAdd   ok\n");
	/* masked CmpSwap (RFC 7306): compare the low byte only, swap the high byte only */
	v = 0x11000000000000CDull;
	memcpy(b.buf + 8192, &v, 8);
	v = atomic_op(&a, &b, FALCON_WR_MASKED_ATOMIC_CMP_AND_SWP, 0xCD, 0xAB00000000000000ull,
		      0xFF, 0xFF00000000000000ull, "masked CmpSwap", FALCON_WC_MASKED_COMP_SWAP);
	CHECK(v == 0x11000000000000CDull, "masked CmpSwap returned %#" PRIx64, v);
	memcpy(&v, b.buf + 8192, 8);
	CHECK(v == 0xAB000000000000CDull, "masked CmpSwap left %#" PRIx64, v);
	/* masked FetchAdd: two 32-bit lanes (the carry stops at bit 31) */
	v = 0x00000001FFFFFFFFull;
	memcpy(b.buf + 8192, &v, 8);
	v = atomic_op(&a, &b, FALCON_WR_MASKED_ATOMIC_FETCH_AND_ADD, 0x0000000100000001ull, 0,
		      0x80000000ull, 0, "masked FetchAdd", FALCON_WC_MASKED_FETCH_ADD);
	CHECK(v == 0x00000001FFFFFFFFull, "masked FetchAdd returned %#" PRIx64, v);
	memcpy(&v, b.buf + 8192, 8);
	CHECK(v == 0x0000000200000000ull, "masked FetchAdd left %#" PRIx64 ", expected "
	      "0x200000000 (lanes add without carry)", v);
	printf("masked atomics      ok\n");

	/* measurements */
	{
		unsigned iters = quick ? 2000 : 20000;
		uint64_t *lat = calloc(iters, sizeof(*lat)), t;
		struct falcon_wc wc[64];

		for (unsigned i = 0; i < iters; i++) {
			wr = rdma(FALCON_WR_RDMA_WRITE, &a, 0, 8, &b, 0, &sge);
			t = now_ns();
			post(&a, &wr);
			/* spin, then offer the core to the daemons on every empty poll: on a
			 * small machine the process that answers may need this very core */
			for (unsigned spins = 0; falcon_poll_cq(a.cq, 1, wc) == 0; spins++) {
				if (spins > 64)
					sched_yield();
				if (now_ns() - t > 1000000000ull * 10)
					die("latency: no completion");
			}
			lat[i] = now_ns() - t;
			CHECK(wc[0].status == FALCON_WC_SUCCESS, "latency WRITE %s",
			      falcon_wc_status_str(wc[0].status));
		}
		qsort(lat, iters, sizeof(*lat), cmp_u64);
		double p50 = (double)lat[iters / 2] / 1e3, p99 = (double)lat[iters * 99 / 100] / 1e3;

		/* rate and bandwidth: keep depth WRs in flight */
		double rate = 0, gbps = 0;

		for (int pass = 0; pass < 2; pass++) {
			uint32_t len = pass ? 65536 : 8, depth = pass ? 16 : 64;
			uint64_t total = pass ? (quick ? 2000 : 16384) : (quick ? 20000 : 200000);
			uint64_t posted = 0, done = 0;

			t = now_ns();
			while (done < total) {
				while (posted < total && posted - done < depth) {
					wr = rdma(FALCON_WR_RDMA_WRITE, &a, 0, len, &b,
						  (uint32_t)(posted % 32) * 65536, &sge);
					post(&a, &wr);
					posted++;
				}
				int n = falcon_wait_cq(a.cq, 64, wc, WAIT_MS);

				if (n <= 0)
					die("bandwidth: completions stopped");
				for (int i = 0; i < n; i++)
					CHECK(wc[i].status == FALCON_WC_SUCCESS, "bw WRITE %s",
					      falcon_wc_status_str(wc[i].status));
				done += (uint64_t)n;
			}
			double s = (double)(now_ns() - t) / 1e9;

			if (pass)
				gbps = (double)total * len * 8 / s / 1e9;
			else
				rate = (double)total / s;
		}
		printf("\n%-34s %12s\n", "measurement (127.0.0.1, UDP)", "result");
		printf("%-34s %9.1f us\n", "8 B WRITE latency p50", p50);
		printf("%-34s %9.1f us\n", "8 B WRITE latency p99", p99);
		printf("%-34s %9.3f Mops/s\n", "8 B WRITE rate, depth 64", rate / 1e6);
		printf("%-34s %9.2f Gbit/s\n", "64 KiB WRITE bandwidth, depth 16", gbps);
		free(lat);
	}
	falcon_destroy_qp(a.qp);
	falcon_destroy_qp(b.qp);
	falcon_close(a.ctx);
	falcon_close(b.ctx);
	if (failures) {
		fprintf(stderr, "demo: %d checks FAILED\n", failures);
		return 1;
	}
	printf("\ndemo: every result verified\n");
	return 0;
}
