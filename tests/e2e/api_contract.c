/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_contract - what falcon.h promises when things go wrong, through two live falcond
 * (tests/e2e/test_api_contract.sh runs it; issue 21). One process holds a context on each
 * daemon and plays both ends.
 *
 *   api_contract overflow SOCK_A SOCK_B CM_B
 *           A's QP sends into a CQ of 4 and receives into a CQ of 64; 2 receives posted,
 *           then 64 WRITEs. The async fd (polled with a timeout) brings CQ_ERR for the
 *           CQ of 4 and QP_FATAL for the QP, each naming the program's own object; the
 *           CQ gives exactly the 4 completions that fit (WRITEs 0..3, SUCCESS), then
 *           -EOVERFLOW for good (falcon_wait_cq too); the 2 receives come flushed through
 *           the healthy CQ; the QP is in ERR; a new QP on the CQ in error is refused with
 *           EIO (falcon_create_qp as send or receive CQ, falcon_connect), and the CQ can
 *           be destroyed once its QP is.
 *   api_contract gone SOCK_A SOCK_B CM_B PID_A
 *           a QP, an SRQ and a WRITE that completes; then falcond A (PID_A) is killed
 *           with SIGKILL, and falcon_post_send, posting a WRITE every millisecond, must
 *           return -ENOTCONN within GONE_BOUND_MS (never 0 until the ring fills, nor
 *           -ENOMEM), with bad_wr at the WR; then falcon_post_recv and falcon_post_srq_recv
 *           too; the async fd polls readable and falcon_get_async_event reports
 *           DEVICE_FATAL once, then -ENOTCONN.
 *
 * Exit status 0 only when every check passed; every wait is bounded.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "falcon/falcon.h"
#include "../testutil.h"

#define WAIT_MS 10000
#define BUF 65536u
#define NWRITES 64
#define SMALL_CQ 4
#define GONE_BOUND_MS 1000 /* the post calls' check is every FALCON_DAEMON_CHECK_MS */
#define SERVICE 5300

static int failures, checks;

#define CHECK(cond, ...) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "api_contract: FAILED: " __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

struct side {
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	struct falcon_mr *mr;
	uint8_t *buf;
	struct falcon_listener *l;
	struct falcon_qp *qp;
};

static void die(const char *what)
{
	fprintf(stderr, "api_contract: %s: %s\n", what, falcon_strerror(-errno));
	exit(1);
}

static uint64_t now_ms(void) { return fc_test_now_ns() / 1000000u; }

static void side_open(struct side *s, const char *sock)
{
	unsigned all = FALCON_ACCESS_LOCAL_WRITE | FALCON_ACCESS_REMOTE_READ |
		       FALCON_ACCESS_REMOTE_WRITE;

	if (!(s->ctx = falcon_open(sock)) || !(s->pd = falcon_alloc_pd(s->ctx)) ||
	    !(s->cq = falcon_create_cq(s->ctx, 256)) || !(s->buf = falcon_alloc_buf(s->ctx, BUF)) ||
	    !(s->mr = falcon_reg_mr(s->pd, s->buf, BUF, all)))
		die(sock);
}

static struct falcon_qp_init_attr attr_of(struct falcon_cq *scq, struct falcon_cq *rcq)
{
	return (struct falcon_qp_init_attr){ .size = sizeof(struct falcon_qp_init_attr),
					     .send_cq = scq, .recv_cq = rcq,
					     .max_send_wr = 1024, .max_recv_wr = 64 };
}

static void *acceptor(void *arg)
{
	struct side *b = arg;
	struct falcon_qp_init_attr a = attr_of(b->cq, b->cq);

	b->qp = falcon_accept(b->l, b->pd, &a, WAIT_MS);
	return NULL;
}

/* A's QP (its CQs given) connected to an accepted QP at B. */
static struct falcon_qp *connect_to(struct side *a, struct side *b, const char *cm_b,
				    struct falcon_cq *scq, struct falcon_cq *rcq)
{
	struct falcon_qp_init_attr at = attr_of(scq, rcq);
	struct falcon_qp *qp;
	pthread_t th;

	if (!(b->l = falcon_listen(b->ctx, SERVICE, 4)))
		die("listen");
	pthread_create(&th, NULL, acceptor, b);
	qp = falcon_connect(a->pd, cm_b, SERVICE, &at, WAIT_MS);
	if (!qp)
		die("connect");
	pthread_join(th, NULL);
	if (!b->qp)
		die("accept");
	return qp;
}

static int post_write(struct falcon_qp *qp, struct side *a, struct side *b, uint64_t wr_id,
		      struct falcon_send_wr **bad)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)a->buf, 8, a->mr->lkey };
	struct falcon_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				     .opcode = FALCON_WR_RDMA_WRITE,
				     .remote_addr = (uint64_t)(uintptr_t)b->buf + 8 * (wr_id % 64),
				     .rkey = b->mr->rkey };
	int rc = falcon_post_send(qp, &wr, bad);

	if (bad && *bad == &wr)
		*bad = (struct falcon_send_wr *)1; /* "at our WR": not a pointer to keep */
	return rc;
}

static int post_recv1(struct falcon_qp *qp, struct falcon_srq *srq, struct side *a,
		      uint64_t wr_id, int *bad_ok)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)a->buf + 4096, 64, a->mr->lkey };
	struct falcon_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
	int rc = srq ? falcon_post_srq_recv(srq, &wr, &bad) : falcon_post_recv(qp, &wr, &bad);

	*bad_ok = bad == &wr;
	return rc;
}

/* The next async event within ms: 0 and *ev, or -ETIMEDOUT. */
static int next_event(struct falcon_context *ctx, struct falcon_async_event *ev, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	for (;;) {
		struct pollfd p = { .fd = falcon_async_fd(ctx), .events = POLLIN };
		int64_t left = (int64_t)(end - now_ms());
		int rc;

		ev->size = sizeof(*ev);
		if ((rc = falcon_get_async_event(ctx, ev)) != -EAGAIN)
			return rc;
		if (left <= 0)
			return -ETIMEDOUT;
		poll(&p, 1, (int)left);
	}
}

/* Completions of cq until rc of falcon_poll_cq is an error or ms pass: their count. */
static int drain(struct falcon_cq *cq, struct falcon_wc *wc, int cap, int ms, int *last)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int got = 0, rc = 0;

	while (got < cap && now_ms() < end) {
		rc = falcon_poll_cq(cq, cap - got, wc + got);
		if (rc < 0)
			break;
		got += rc;
		if (!rc)
			usleep(1000);
	}
	*last = rc;
	return got;
}

static void test_overflow(const char *sock_a, const char *sock_b, const char *cm_b)
{
	struct side A = { 0 }, B = { 0 };
	struct falcon_cq *small, *rcq;
	struct falcon_qp *qp, *q2;
	struct falcon_qp_init_attr at;
	struct falcon_async_event ev;
	struct falcon_wc wc[NWRITES];
	int got, last, bad_ok, cq_err = 0, qp_fatal = 0, rc;

	side_open(&A, sock_a);
	side_open(&B, sock_b);
	if (!(small = falcon_create_cq(A.ctx, SMALL_CQ)) || !(rcq = falcon_create_cq(A.ctx, 64)))
		die("create_cq");
	qp = connect_to(&A, &B, cm_b, small, rcq);
	for (int i = 0; i < 2; i++)
		CHECK(post_recv1(qp, NULL, &A, 1000 + (uint64_t)i, &bad_ok) == 0, "post_recv");
	for (int i = 0; i < NWRITES; i++)
		CHECK((rc = post_write(qp, &A, &B, (uint64_t)i, NULL)) == 0, "WRITE %d: %s", i,
		      falcon_strerror(rc));

	/* the events, through the fd: the CQ's error, then the QP's */
	while ((!cq_err || !qp_fatal) && (rc = next_event(A.ctx, &ev, WAIT_MS)) == 0) {
		if (ev.event_type == FALCON_EVENT_CQ_ERR) {
			cq_err++;
			CHECK(!qp_fatal, "CQ_ERR came after the QP's QP_FATAL");
			CHECK(ev.element.cq == small, "CQ_ERR names %p, not the CQ of %d (%p)",
			      (void *)ev.element.cq, SMALL_CQ, (void *)small);
		} else if (ev.event_type == FALCON_EVENT_QP_FATAL) {
			qp_fatal++;
			CHECK(ev.element.qp == qp && ev.num == qp->qp_num,
			      "QP_FATAL names %p / %u, not the QP %p / %u", (void *)ev.element.qp,
			      ev.num, (void *)qp, qp->qp_num);
		} else {
			CHECK(0, "unexpected event %u", ev.event_type);
		}
	}
	CHECK(cq_err == 1 && qp_fatal == 1, "events: CQ_ERR x%d, QP_FATAL x%d (%s)", cq_err,
	      qp_fatal, falcon_strerror(rc));

	/* the 4 that fit, then -EOVERFLOW for good */
	got = drain(small, wc, NWRITES, WAIT_MS, &last);
	CHECK(got == SMALL_CQ && last == -EOVERFLOW && errno == EOVERFLOW,
	      "the CQ of %d gave %d completions, then %d (want %d, then -EOVERFLOW)", SMALL_CQ,
	      got, last, SMALL_CQ);
	for (int i = 0; i < got && i < SMALL_CQ; i++)
		CHECK(wc[i].wr_id == (uint64_t)i && wc[i].status == FALCON_WC_SUCCESS,
		      "completion %d: wr_id %" PRIu64 " %s", i, wc[i].wr_id,
		      falcon_wc_status_str(wc[i].status));
	CHECK(falcon_poll_cq(small, 4, wc) == -EOVERFLOW, "a later poll is not -EOVERFLOW");
	CHECK(falcon_wait_cq(small, 4, wc, 1000) == -EOVERFLOW, "falcon_wait_cq: not -EOVERFLOW");
	printf("overflow: %d completions, then -EOVERFLOW; CQ_ERR and QP_FATAL through the fd\n",
	       got);

	/* the receives: flushed into the healthy receive CQ */
	got = drain(rcq, wc, 2, WAIT_MS, &last);
	CHECK(got == 2, "the receive CQ gave %d flushed receives, not 2 (%d)", got, last);
	for (int i = 0; i < got; i++)
		CHECK(wc[i].wr_id == 1000 + (uint64_t)i && wc[i].status == FALCON_WC_WR_FLUSH_ERR,
		      "receive %d: wr_id %" PRIu64 " %s", i, wc[i].wr_id,
		      falcon_wc_status_str(wc[i].status));
	CHECK(falcon_query_qp(qp, NULL) == FALCON_QPS_ERR, "the QP is not in ERR");

	/* a new QP on the CQ in error: refused, EIO, whichever way it is made */
	at = attr_of(small, rcq);
	q2 = falcon_create_qp(A.pd, &at);
	CHECK(!q2 && errno == EIO, "create_qp with the CQ in error as send CQ: %p, %s",
	      (void *)q2, falcon_strerror(-errno));
	at = attr_of(rcq, small);
	q2 = falcon_create_qp(A.pd, &at);
	CHECK(!q2 && errno == EIO, "create_qp with the CQ in error as receive CQ: %p, %s",
	      (void *)q2, falcon_strerror(-errno));
	at = attr_of(small, rcq);
	q2 = falcon_connect(A.pd, cm_b, SERVICE, &at, 2000);
	CHECK(!q2 && errno == EIO, "connect with the CQ in error: %p, %s", (void *)q2,
	      falcon_strerror(-errno));
	CHECK(falcon_get_async_event(A.ctx, &ev) == -EAGAIN, "an event more: %u", ev.event_type);

	/* what remains: the QP, then the CQ */
	CHECK(falcon_destroy_cq(small) == -EBUSY, "the CQ destroyed under its QP");
	CHECK(falcon_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(falcon_destroy_cq(small) == 0, "destroy_cq of the CQ in error");
	falcon_close(A.ctx);
	falcon_close(B.ctx);
}

static void test_gone(const char *sock_a, const char *sock_b, const char *cm_b, pid_t pid_a)
{
	struct side A = { 0 }, B = { 0 };
	struct falcon_srq_init_attr sa = { .size = sizeof(sa), .max_wr = 16 };
	struct falcon_send_wr *bad;
	struct falcon_async_event ev;
	struct falcon_srq *srq;
	struct falcon_qp *qp;
	struct falcon_wc wc;
	uint64_t t0, t_send = 0;
	int rc = 0, n = 0, bad_ok = 0;

	side_open(&A, sock_a);
	side_open(&B, sock_b);
	if (!(srq = falcon_create_srq(A.pd, &sa)))
		die("create_srq");
	qp = connect_to(&A, &B, cm_b, A.cq, A.cq);
	CHECK(post_write(qp, &A, &B, 1, NULL) == 0, "a WRITE before");
	CHECK(falcon_wait_cq(A.cq, 1, &wc, WAIT_MS) == 1 && wc.status == FALCON_WC_SUCCESS,
	      "the WRITE before did not complete");
	CHECK(post_recv1(qp, NULL, &A, 7, &bad_ok) == 0, "post_recv before");
	CHECK(post_recv1(NULL, srq, &A, 8, &bad_ok) == 0, "post_srq_recv before");

	if (kill(pid_a, SIGKILL)) {
		perror("kill");
		exit(1);
	}
	t0 = now_ms();
	/* a WRITE a millisecond: 0 until the library knows, then -ENOTCONN; the ring (1024)
	 * does not fill within the bound, so -ENOMEM would be the old silence */
	while (now_ms() - t0 < GONE_BOUND_MS) {
		bad = NULL;
		rc = post_write(qp, &A, &B, 100 + (uint64_t)n, &bad);
		n++;
		if (rc) {
			t_send = now_ms() - t0;
			break;
		}
		usleep(1000);
	}
	CHECK(rc == -ENOTCONN && errno == ENOTCONN && bad == (struct falcon_send_wr *)1,
	      "post_send after SIGKILL: %d (%s) after %d posts, bad_wr %s", rc,
	      falcon_strerror(rc), n, bad == (void *)1 ? "at the WR" : "not set");
	rc = post_recv1(qp, NULL, &A, 9, &bad_ok);
	CHECK(rc == -ENOTCONN && bad_ok, "post_recv after SIGKILL: %d (%s)", rc,
	      falcon_strerror(rc));
	rc = post_recv1(NULL, srq, &A, 10, &bad_ok);
	CHECK(rc == -ENOTCONN && bad_ok, "post_srq_recv after SIGKILL: %d (%s)", rc,
	      falcon_strerror(rc));
	printf("gone: post_send -ENOTCONN %" PRIu64 " ms after SIGKILL (%d posts, check every "
	       "%d ms)\n", t_send, n, FALCON_DAEMON_CHECK_MS);

	/* the device's end, through the fd: DEVICE_FATAL once, then -ENOTCONN */
	rc = next_event(A.ctx, &ev, WAIT_MS);
	CHECK(rc == 0 && ev.event_type == FALCON_EVENT_DEVICE_FATAL && !ev.element.qp,
	      "async event after SIGKILL: %d (%s), type %u", rc, falcon_strerror(rc),
	      rc ? 0 : ev.event_type);
	ev.size = sizeof(ev);
	rc = falcon_get_async_event(A.ctx, &ev);
	CHECK(rc == -ENOTCONN, "a second event after DEVICE_FATAL: %d", rc);
	CHECK(falcon_wait_cq(A.cq, 1, &wc, 2000) == -ENOTCONN, "wait_cq after SIGKILL");
	falcon_close(A.ctx);
	falcon_close(B.ctx);
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "overflow")) {
		test_overflow(argv[2], argv[3], argv[4]);
	} else if (argc >= 6 && !strcmp(argv[1], "gone")) {
		test_gone(argv[2], argv[3], argv[4], (pid_t)atoi(argv[5]));
	} else {
		fprintf(stderr, "usage: api_contract overflow SOCK_A SOCK_B CM_B\n"
				"       api_contract gone SOCK_A SOCK_B CM_B PID_A\n");
		return 2;
	}
	printf("api_contract %s: %d checks, %d failed\n", argv[1], checks, failures);
	return failures ? 1 : 0;
}
