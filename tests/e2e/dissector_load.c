/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dissector_load - error traffic for the dissector test (tests/e2e/test_dissector.sh):
 *
 *   dissector_load SOCK_A SOCK_B CM_B SERVICE N
 *
 * A QP pair in complete-in-error mode (RDMA spec 6.3, flow 6.6.5) and N WRITEs from A
 * to B with an R_Key B never issued, posted BATCH at a time: B's daemon NACKs each one
 * (NACK code CIE, spec 7.8) and A's daemon answers with a Resync (spec 7.6, code target
 * ULP CIE), so the wire carries N of each. Every WRITE must complete REM_ACCESS_ERR,
 * exactly once; then a good WRITE must succeed (the QP went on) and land. Exit 0 only
 * then. Every wait is bounded (WAIT_MS).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "falcon/falcon.h"

#define WAIT_MS 20000
#define BATCH 16u
#define N_MAX 100000u
#define BUF_BYTES 65536u

struct side {
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	struct falcon_mr *mr;
	uint8_t *buf;
	struct falcon_qp *qp;
	struct falcon_listener *l;
};

static void die(const char *what)
{
	fprintf(stderr, "dissector_load: %s: %s\n", what, falcon_strerror(-errno));
	exit(1);
}

static void side_open(struct side *s, const char *sock)
{
	if (!(s->ctx = falcon_open(sock)) || !(s->pd = falcon_alloc_pd(s->ctx)) ||
	    !(s->cq = falcon_create_cq(s->ctx, 256)) ||
	    !(s->buf = falcon_alloc_buf(s->ctx, BUF_BYTES)) ||
	    !(s->mr = falcon_reg_mr(s->pd, s->buf, BUF_BYTES,
				    FALCON_ACCESS_LOCAL_WRITE | FALCON_ACCESS_REMOTE_WRITE)))
		die(sock);
}

static struct falcon_qp_init_attr attr_of(struct side *s)
{
	return (struct falcon_qp_init_attr){ .size = sizeof(struct falcon_qp_init_attr),
					     .send_cq = s->cq, .recv_cq = s->cq,
					     .err_mode = FALCON_ERR_CIE };
}

static void *acceptor(void *arg)
{
	struct side *b = arg;
	struct falcon_qp_init_attr a = attr_of(b);

	b->qp = falcon_accept(b->l, b->pd, &a, WAIT_MS);
	return NULL;
}

/* Post n WRITEs of 64 bytes with rkey; wait for their n completions, each with status
 * want and a wr_id of this batch seen once. Returns 0 or -1. */
static int batch(struct side *a, struct side *b, uint32_t rkey, unsigned n, uint64_t id0,
		 uint32_t want)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)a->buf, 64, a->mr->lkey };
	struct falcon_send_wr wr[BATCH], *bad;
	struct falcon_wc wc[BATCH];
	unsigned seen[BATCH] = { 0 }, got = 0;
	int rc;

	for (unsigned i = 0; i < n; i++)
		wr[i] = (struct falcon_send_wr){ .wr_id = id0 + i, .next = i + 1 < n ? &wr[i + 1] : NULL,
						 .sg_list = &sge, .num_sge = 1,
						 .opcode = FALCON_WR_RDMA_WRITE,
						 .remote_addr = (uint64_t)(uintptr_t)b->buf, .rkey = rkey };
	if ((rc = falcon_post_send(a->qp, wr, &bad))) {
		fprintf(stderr, "dissector_load: post: %s\n", falcon_strerror(rc));
		return -1;
	}
	while (got < n) {
		int k = falcon_wait_cq(a->cq, (int)(n - got), wc, WAIT_MS);

		if (k <= 0) {
			fprintf(stderr, "dissector_load: %u of %u completions missing (%s)\n", n - got, n,
				k ? falcon_strerror(k) : "timeout");
			return -1;
		}
		for (int i = 0; i < k; i++) {
			uint64_t j = wc[i].wr_id - id0;

			if (j >= n || seen[j]++ || wc[i].status != want) {
				fprintf(stderr, "dissector_load: wr %" PRIu64 ": %s (want %s)%s\n",
					wc[i].wr_id, falcon_wc_status_str(wc[i].status),
					falcon_wc_status_str(want), j < n && seen[j] > 1 ? ", twice" : "");
				return -1;
			}
		}
		got += (unsigned)k;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct side a = { 0 }, b = { 0 };
	struct falcon_qp_init_attr at;
	unsigned n, done = 0;
	uint16_t service;
	pthread_t th;

	if (argc != 6) {
		fprintf(stderr, "usage: dissector_load SOCK_A SOCK_B CM_B SERVICE N\n");
		return 2;
	}
	service = (uint16_t)atoi(argv[4]);
	n = (unsigned)atoi(argv[5]);
	if (n > N_MAX)
		n = N_MAX;
	side_open(&a, argv[1]);
	side_open(&b, argv[2]);
	if (!(b.l = falcon_listen(b.ctx, service, 4)))
		die("listen");
	pthread_create(&th, NULL, acceptor, &b);
	at = attr_of(&a);
	a.qp = falcon_connect(a.pd, argv[3], service, &at, WAIT_MS);
	pthread_join(th, NULL);
	if (!a.qp || !b.qp)
		die("connect");
	while (done < n) {
		unsigned k = n - done < BATCH ? n - done : BATCH;

		if (batch(&a, &b, b.mr->rkey ^ 0x5A5A0000u, k, done, FALCON_WC_REM_ACCESS_ERR))
			return 1;
		done += k;
	}
	memset(a.buf, 0xA5, 64);
	memset(b.buf, 0, 64);
	if (batch(&a, &b, b.mr->rkey, 1, n, FALCON_WC_SUCCESS) || b.buf[0] != 0xA5 ||
	    b.buf[63] != 0xA5) {
		fprintf(stderr, "dissector_load: the QP did not go on after the errors\n");
		return 1;
	}
	printf("%u WRITEs to a bad R_Key completed REM_ACCESS_ERR once each; the QP went on\n", n);
	falcon_destroy_qp(a.qp);
	falcon_destroy_qp(b.qp);
	falcon_listener_close(b.l);
	falcon_close(a.ctx);
	falcon_close(b.ctx);
	return 0;
}
