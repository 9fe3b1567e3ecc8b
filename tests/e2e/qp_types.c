/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qp_types - QPs made verbs style and the QP types beside RC, through two live falcond
 * (tests/e2e scripts run it). One process holds a context on each daemon, so it plays
 * both ends and learns each QP number directly, as two programs would out of band.
 *
 *   qp_types SOCK_A SOCK_B CM_A CM_B
 *
 *   rc      falcon_create_qp + falcon_modify_qp on both sides (A's RTR first, then B's; a
 *           WRITE posted at A in RTS before B's RTR waits and then lands), WRITE, READ,
 *           SEND with immediate, FetchAdd, each checked; both RTRs at once (the CM's two
 *           REQs cross); the connection state falcon_query_qp reports
 *   fail    RTR naming a QP that does not exist, and an RC QP named by an XRC target: the
 *           QP goes to the error state and what was posted completes FLUSH_ERR
 *   ud      UD QPs, an address handle each way: datagrams with immediate data checked
 *           (bytes, source QP, immediate), a wrong Q_Key dropped at the receiver, a
 *           datagram above one MTU refused, replies through the other AH
 *   xrc     an XRC domain at B with two XRC SRQs completing into two CQs; an XRC_SEND QP
 *           at A bound to an XRC_RECV QP at B (create/modify) and another pair by
 *           falcon_connect / falcon_accept: SENDs land in the SRQ each names
 *
 * Exit status 0 only when every check passed; every wait is bounded.
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

#define WAIT_MS 10000
#define BUF 65536u
#define QKEY 0x11223344u

static int failures, checks;

#define CHECK(cond, ...) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "qp_types: FAILED: " __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

struct side {
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	struct falcon_mr *mr;
	uint8_t *buf;
	const char *cm;         /* this side's daemon, as the other side names it */
};

static void die(const char *what)
{
	fprintf(stderr, "qp_types: %s: %s\n", what, falcon_strerror(-errno));
	exit(1);
}

static void side_open(struct side *s, const char *sock, const char *cm)
{
	unsigned all = FALCON_ACCESS_LOCAL_WRITE | FALCON_ACCESS_REMOTE_READ |
		       FALCON_ACCESS_REMOTE_WRITE | FALCON_ACCESS_REMOTE_ATOMIC;

	s->cm = cm;
	if (!(s->ctx = falcon_open(sock)) || !(s->pd = falcon_alloc_pd(s->ctx)) ||
	    !(s->cq = falcon_create_cq(s->ctx, 256)) || !(s->buf = falcon_alloc_buf(s->ctx, BUF)) ||
	    !(s->mr = falcon_reg_mr(s->pd, s->buf, BUF, all)))
		die(sock);
}

static int modify(struct falcon_qp *qp, uint32_t state, const char *host, uint32_t dest)
{
	struct falcon_qp_attr at = { .size = sizeof(at), .qp_state = state, .dest_host = host,
				     .dest_qp_num = dest, .timeout_ms = -1 };

	return falcon_modify_qp(qp, &at);
}

/* One completion on cq within WAIT_MS: 1, or 0 on timeout. */
static int wait1(struct falcon_cq *cq, struct falcon_wc *wc)
{
	return falcon_wait_cq(cq, 1, wc, WAIT_MS) == 1;
}

static struct falcon_qp *create(struct side *s, uint32_t type)
{
	struct falcon_qp_init_attr a = { .size = sizeof(a), .qp_type = type, .send_cq = s->cq,
					 .recv_cq = s->cq, .max_send_wr = 64, .max_recv_wr = 64,
					 .qkey = type == FALCON_QPT_UD ? QKEY : 0 };
	struct falcon_qp *qp = falcon_create_qp(s->pd, &a);

	if (!qp)
		die("create_qp");
	return qp;
}

static struct falcon_sge sge_of(struct side *s, uint32_t off, uint32_t len)
{
	return (struct falcon_sge){ (uint64_t)(uintptr_t)(s->buf + off), len, s->mr->lkey };
}

static void post_send(struct falcon_qp *qp, struct falcon_send_wr *wr)
{
	struct falcon_send_wr *bad;

	if (falcon_post_send(qp, wr, &bad))
		die("post_send");
}

static void post_recv_at(struct side *s, struct falcon_qp *qp, uint64_t id, uint32_t off,
			 uint32_t len)
{
	struct falcon_sge g = sge_of(s, off, len);
	struct falcon_recv_wr wr = { .wr_id = id, .sg_list = &g, .num_sge = 1 }, *bad;

	if (falcon_post_recv(qp, &wr, &bad))
		die("post_recv");
}

static int connected_within(struct falcon_qp *qp, int ms)
{
	int c = 0;

	for (int i = 0; i < ms; i++) {
		if (falcon_query_qp(qp, &c) == FALCON_QPS_RTS && c)
			return 1;
		usleep(1000);
	}
	return 0;
}

/* ---- RC, verbs style ---- */

static void rc_pair(struct side *a, struct side *b, struct falcon_qp **qa, struct falcon_qp **qb,
		    int crossing)
{
	*qa = create(a, FALCON_QPT_RC);
	*qb = create(b, FALCON_QPT_RC);
	CHECK(falcon_query_qp(*qa, NULL) == FALCON_QPS_RESET, "a new QP is not in RESET");
	CHECK(modify(*qa, FALCON_QPS_RTR, b->cm, (*qb)->qp_num) == -EINVAL,
	      "RTR from RESET was accepted");
	CHECK(!modify(*qa, FALCON_QPS_INIT, NULL, 0) && !modify(*qb, FALCON_QPS_INIT, NULL, 0),
	      "INIT: %s", falcon_strerror(-errno));
	CHECK(modify(*qa, FALCON_QPS_RTR, NULL, (*qb)->qp_num) == -EINVAL,
	      "RTR of an RC QP without a host was accepted");
	CHECK(!modify(*qa, FALCON_QPS_RTR, b->cm, (*qb)->qp_num), "RTR at A: %s",
	      falcon_strerror(-errno));
	if (crossing) { /* both REQs out before either daemon has answered */
		CHECK(!modify(*qb, FALCON_QPS_RTR, a->cm, (*qa)->qp_num), "RTR at B: %s",
		      falcon_strerror(-errno));
		CHECK(!modify(*qa, FALCON_QPS_RTS, NULL, 0) && !modify(*qb, FALCON_QPS_RTS, NULL, 0),
		      "RTS: %s", falcon_strerror(-errno));
	} else {
		CHECK(!modify(*qa, FALCON_QPS_RTS, NULL, 0), "RTS at A: %s", falcon_strerror(-errno));
	}
}

static void rc_test(struct side *a, struct side *b)
{
	struct falcon_qp *qa, *qb;
	struct falcon_wc wc;
	struct falcon_sge g;
	struct falcon_send_wr wr;
	int conn = -1;

	rc_pair(a, b, &qa, &qb, 0);
	/* A is in RTS, B has not named A yet: the WRITE waits in A's ring */
	for (uint32_t i = 0; i < 4096; i++)
		a->buf[i] = (uint8_t)(i * 7 + 1);
	g = sge_of(a, 0, 4096);
	wr = (struct falcon_send_wr){ .wr_id = 1, .sg_list = &g, .num_sge = 1,
				      .opcode = FALCON_WR_RDMA_WRITE,
				      .remote_addr = (uint64_t)(uintptr_t)(b->buf + 8192),
				      .rkey = b->mr->rkey };
	post_send(qa, &wr);
	CHECK(falcon_query_qp(qa, &conn) == FALCON_QPS_RTS && conn == 0,
	      "A reports state %d, connected %d before B's RTR", falcon_query_qp(qa, NULL), conn);
	CHECK(falcon_poll_cq(a->cq, 1, &wc) == 0, "a WR completed before its connection existed");
	CHECK(!modify(qb, FALCON_QPS_RTR, a->cm, qa->qp_num), "RTR at B: %s", falcon_strerror(-errno));
	CHECK(!modify(qb, FALCON_QPS_RTS, NULL, 0), "RTS at B: %s", falcon_strerror(-errno));
	CHECK(wait1(a->cq, &wc) && wc.wr_id == 1 && wc.status == FALCON_WC_SUCCESS,
	      "the early WRITE: %s", falcon_wc_status_str(wc.status));
	CHECK(!memcmp(b->buf + 8192, a->buf, 4096), "the early WRITE's data differ");
	CHECK(connected_within(qb, WAIT_MS), "B never reported its connection open");
	CHECK(qb->remote_qp_num == qa->qp_num, "B's remote QP is %u, not %u", qb->remote_qp_num,
	      qa->qp_num);
	/* READ back into A at 16 KiB */
	g = sge_of(a, 16384, 4096);
	wr.wr_id = 2;
	wr.opcode = FALCON_WR_RDMA_READ;
	post_send(qa, &wr);
	CHECK(wait1(a->cq, &wc) && wc.wr_id == 2 && wc.status == FALCON_WC_SUCCESS, "READ: %s",
	      falcon_wc_status_str(wc.status));
	CHECK(!memcmp(a->buf + 16384, a->buf, 4096), "READ data differ");
	/* SEND with immediate from B to A */
	post_recv_at(a, qa, 30, 32768, 512);
	memcpy(b->buf, "verbs style", 12);
	g = sge_of(b, 0, 12);
	wr = (struct falcon_send_wr){ .wr_id = 3, .sg_list = &g, .num_sge = 1,
				      .opcode = FALCON_WR_SEND_WITH_IMM, .imm_data = 0xC0FFEE };
	post_send(qb, &wr);
	CHECK(wait1(b->cq, &wc) && wc.wr_id == 3 && wc.status == FALCON_WC_SUCCESS, "SEND: %s",
	      falcon_wc_status_str(wc.status));
	CHECK(wait1(a->cq, &wc) && wc.wr_id == 30 && wc.status == FALCON_WC_SUCCESS &&
	      wc.opcode == FALCON_WC_RECV && wc.byte_len == 12 && (wc.wc_flags & FALCON_WC_WITH_IMM) &&
	      wc.imm_data == 0xC0FFEE && !memcmp(a->buf + 32768, "verbs style", 12),
	      "RECV: status %s, %u bytes, imm %#x", falcon_wc_status_str(wc.status), wc.byte_len,
	      wc.imm_data);
	/* FetchAdd on B's word */
	memset(b->buf + 40000, 0, 8);
	b->buf[40000] = 5;
	g = sge_of(a, 40960, 8);
	wr = (struct falcon_send_wr){ .wr_id = 4, .sg_list = &g, .num_sge = 1,
				      .opcode = FALCON_WR_ATOMIC_FETCH_AND_ADD,
				      .remote_addr = (uint64_t)(uintptr_t)(b->buf + 40000),
				      .rkey = b->mr->rkey, .compare_add = 10 };
	post_send(qa, &wr);
	CHECK(wait1(a->cq, &wc) && wc.wr_id == 4 && wc.status == FALCON_WC_SUCCESS &&
	      a->buf[40960] == 5 && b->buf[40000] == 15, "FetchAdd: %s, old %u, new %u",
	      falcon_wc_status_str(wc.status), a->buf[40960], b->buf[40000]);
	/* a connected QP cannot be reset (its connection is for good) nor moved to RTR again */
	CHECK(modify(qa, FALCON_QPS_RESET, NULL, 0) == -EINVAL, "RESET of a bound QP accepted");
	CHECK(modify(qa, FALCON_QPS_RTR, b->cm, qb->qp_num) == -EINVAL, "a second RTR accepted");
	CHECK(!falcon_destroy_qp(qa) && !falcon_destroy_qp(qb), "destroy: %s",
	      falcon_strerror(-errno));
	printf("rc: create/modify, an early WRITE, READ, SEND+imm, FetchAdd checked\n");

	/* both RTRs at once: the REQs cross */
	for (int round = 0; round < 5; round++) {
		rc_pair(a, b, &qa, &qb, 1);
		for (uint32_t i = 0; i < 256; i++)
			b->buf[i] = (uint8_t)(i + round);
		g = sge_of(b, 0, 256);
		wr = (struct falcon_send_wr){ .wr_id = 10 + (uint64_t)round, .sg_list = &g,
					      .num_sge = 1, .opcode = FALCON_WR_RDMA_WRITE,
					      .remote_addr = (uint64_t)(uintptr_t)(a->buf + 49152),
					      .rkey = a->mr->rkey };
		post_send(qb, &wr);
		CHECK(wait1(b->cq, &wc) && wc.wr_id == 10 + (uint64_t)round &&
		      wc.status == FALCON_WC_SUCCESS, "crossing round %d: %s", round,
		      falcon_wc_status_str(wc.status));
		CHECK(!memcmp(a->buf + 49152, b->buf, 256), "crossing round %d: data differ", round);
		CHECK(connected_within(qa, WAIT_MS) && connected_within(qb, WAIT_MS),
		      "crossing round %d: a side never reported its connection", round);
		falcon_destroy_qp(qa);
		falcon_destroy_qp(qb);
	}
	printf("rc: 5 rounds of crossing RTRs connected and checked\n");
}

/* ---- setups that cannot succeed ---- */

static void fail_test(struct side *a, struct side *b)
{
	struct falcon_qp *qa = create(a, FALCON_QPT_RC), *qb;
	struct falcon_xrcd *x;
	struct falcon_qp_init_attr xa;
	struct falcon_send_wr wr = { .wr_id = 77, .opcode = FALCON_WR_RDMA_WRITE };
	struct falcon_wc wc;
	int st = -1;

	/* a QP number nobody has at B: the refusal may come back before our RTS (which then
	 * fails, the QP being in the error state already) */
	CHECK(!modify(qa, FALCON_QPS_INIT, NULL, 0) && !modify(qa, FALCON_QPS_RTR, b->cm, 0xABCDE),
	      "moving to RTR: %s", falcon_strerror(-errno));
	st = modify(qa, FALCON_QPS_RTS, NULL, 0);
	CHECK(!st || (st == -EINVAL && falcon_query_qp(qa, NULL) == FALCON_QPS_ERR),
	      "moving to RTS: %s", falcon_strerror(st));
	post_send(qa, &wr);
	CHECK(wait1(a->cq, &wc) && wc.wr_id == 77 && wc.status == FALCON_WC_WR_FLUSH_ERR,
	      "a WR of a QP whose peer does not exist: %s", falcon_wc_status_str(wc.status));
	for (int i = 0; i < 1000 && (st = falcon_query_qp(qa, NULL)) != FALCON_QPS_ERR; i++)
		usleep(1000);
	CHECK(st == FALCON_QPS_ERR, "the QP is in state %d, not ERR", st);
	falcon_destroy_qp(qa);
	/* an RC QP and an XRC target do not pair */
	qa = create(a, FALCON_QPT_RC);
	if (!(x = falcon_open_xrcd(b->ctx)))
		die("open_xrcd");
	xa = (struct falcon_qp_init_attr){ .size = sizeof(xa), .qp_type = FALCON_QPT_XRC_RECV,
					   .xrcd = x };
	if (!(qb = falcon_create_qp(b->pd, &xa)))
		die("create XRC_RECV");
	CHECK(!modify(qa, FALCON_QPS_INIT, NULL, 0) && !modify(qb, FALCON_QPS_INIT, NULL, 0) &&
	      !modify(qb, FALCON_QPS_RTR, a->cm, qa->qp_num) &&
	      !modify(qa, FALCON_QPS_RTR, b->cm, qb->qp_num), "RTR: %s", falcon_strerror(-errno));
	for (int i = 0; i < WAIT_MS && (st = falcon_query_qp(qa, NULL)) != FALCON_QPS_ERR; i++)
		usleep(1000);
	CHECK(st == FALCON_QPS_ERR, "RC paired with an XRC target: state %d, not ERR", st);
	CHECK(falcon_close_xrcd(x) == -EBUSY, "an XRC domain in use was closed");
	falcon_destroy_qp(qa);
	falcon_destroy_qp(qb);
	CHECK(!falcon_close_xrcd(x), "close_xrcd: %s", falcon_strerror(-errno));
	printf("fail: a missing peer QP and unpaired types end in the error state\n");
}

/* ---- UD ---- */

static void ud_up(struct falcon_qp *qp)
{
	CHECK(!modify(qp, FALCON_QPS_INIT, NULL, 0) && !modify(qp, FALCON_QPS_RTR, NULL, 0) &&
	      !modify(qp, FALCON_QPS_RTS, NULL, 0), "UD to RTS: %s", falcon_strerror(-errno));
}

static void ud_test(struct side *a, struct side *b)
{
	struct falcon_qp *qa = create(a, FALCON_QPT_UD), *qb = create(b, FALCON_QPT_UD);
	struct falcon_ah *to_b, *to_a;
	struct falcon_send_wr wr;
	struct falcon_sge g;
	struct falcon_wc wc;
	int got = 0;

	ud_up(qa);
	ud_up(qb);
	if (!(to_b = falcon_create_ah(a->pd, b->cm, WAIT_MS)) ||
	    !(to_a = falcon_create_ah(b->pd, a->cm, WAIT_MS)))
		die("create_ah");
	for (uint64_t i = 0; i < 8; i++)
		post_recv_at(b, qb, 100 + i, (uint32_t)(1024 * i), 1024);
	/* four datagrams, the second with a wrong Q_Key: three arrive */
	for (uint64_t i = 0; i < 4; i++) {
		for (uint32_t j = 0; j < 100 + i; j++)
			a->buf[8192 + 256 * i + j] = (uint8_t)(i * 31 + j);
		g = sge_of(a, (uint32_t)(8192 + 256 * i), (uint32_t)(100 + i));
		wr = (struct falcon_send_wr){ .wr_id = i, .sg_list = &g, .num_sge = 1,
					      .opcode = FALCON_WR_SEND_WITH_IMM,
					      .imm_data = (uint32_t)(0x500 + i), .ah = to_b,
					      .remote_qpn = qb->qp_num,
					      .remote_qkey = i == 1 ? QKEY ^ 1 : QKEY };
		post_send(qa, &wr);
		CHECK(wait1(a->cq, &wc) && wc.wr_id == i && wc.status == FALCON_WC_SUCCESS,
		      "UD send %" PRIu64 ": %s", i, falcon_wc_status_str(wc.status));
	}
	for (uint64_t want = 0; want < 4; want++) {
		if (want == 1)
			continue;
		CHECK(wait1(b->cq, &wc), "UD datagram %" PRIu64 " never arrived", want);
		CHECK(wc.status == FALCON_WC_SUCCESS && wc.opcode == FALCON_WC_RECV &&
		      wc.byte_len == 100 + want && wc.src_qp == qa->qp_num &&
		      (wc.wc_flags & FALCON_WC_WITH_IMM) && wc.imm_data == 0x500 + want,
		      "UD datagram %" PRIu64 ": %s, %u bytes, src QP %u, imm %#x", want,
		      falcon_wc_status_str(wc.status), wc.byte_len, wc.src_qp, wc.imm_data);
		CHECK(wc.wr_id == 100 + (uint64_t)got && wc.wr_id < 108 &&
		      !memcmp(b->buf + 1024 * (wc.wr_id - 100), a->buf + 8192 + 256 * want, 100 + want),
		      "UD datagram %" PRIu64 ": in receive %" PRIu64 ", data differ", want, wc.wr_id);
		got++;
	}
	CHECK(falcon_wait_cq(b->cq, 1, &wc, 200) == 0, "the wrong Q_Key's datagram arrived");
	/* above one MTU: refused, completed in error */
	g = sge_of(a, 0, 8192);
	wr = (struct falcon_send_wr){ .wr_id = 9, .sg_list = &g, .num_sge = 1,
				      .opcode = FALCON_WR_SEND, .ah = to_b, .remote_qpn = qb->qp_num,
				      .remote_qkey = QKEY };
	post_send(qa, &wr);
	CHECK(wait1(a->cq, &wc) && wc.wr_id == 9 && wc.status != FALCON_WC_SUCCESS,
	      "a UD datagram above one MTU: %s", falcon_wc_status_str(wc.status));
	/* UD posts need an AH; an RDMA WRITE is not for UD */
	{
		struct falcon_send_wr *bad;

		wr.ah = NULL;
		CHECK(falcon_post_send(qa, &wr, &bad) == -EINVAL, "a UD WR without an AH accepted");
	}
	/* the reply, B to A, through B's own AH */
	post_recv_at(a, qa, 200, 4096, 1024);
	memcpy(b->buf + 60000, "datagram back", 14);
	g = sge_of(b, 60000, 14);
	wr = (struct falcon_send_wr){ .wr_id = 20, .sg_list = &g, .num_sge = 1,
				      .opcode = FALCON_WR_SEND, .ah = to_a, .remote_qpn = qa->qp_num,
				      .remote_qkey = QKEY };
	post_send(qb, &wr);
	CHECK(wait1(b->cq, &wc) && wc.wr_id == 20 && wc.status == FALCON_WC_SUCCESS,
	      "UD reply send: %s", falcon_wc_status_str(wc.status));
	CHECK(wait1(a->cq, &wc) && wc.wr_id == 200 && wc.byte_len == 14 && wc.src_qp == qb->qp_num &&
	      !memcmp(a->buf + 4096, "datagram back", 14), "UD reply: %s, %u bytes, src %u",
	      falcon_wc_status_str(wc.status), wc.byte_len, wc.src_qp);
	CHECK(falcon_dealloc_pd(a->pd) == -EBUSY, "a PD with an AH was freed");
	/* a second AH to B shares the first's connection; it outlives the first */
	{
		struct falcon_ah *to_b2 = falcon_create_ah(a->pd, b->cm, WAIT_MS);

		CHECK(to_b2 != NULL, "a second AH to B: %s", falcon_strerror(-errno));
		CHECK(!falcon_destroy_ah(to_b), "destroy_ah: %s", falcon_strerror(-errno));
		if (to_b2) {
			post_recv_at(b, qb, 400, 0, 1024);
			memcpy(a->buf + 30000, "through the second AH", 22);
			g = sge_of(a, 30000, 22);
			wr = (struct falcon_send_wr){ .wr_id = 40, .sg_list = &g, .num_sge = 1,
						      .opcode = FALCON_WR_SEND, .ah = to_b2,
						      .remote_qpn = qb->qp_num, .remote_qkey = QKEY };
			post_send(qa, &wr);
			CHECK(wait1(a->cq, &wc) && wc.wr_id == 40 && wc.status == FALCON_WC_SUCCESS,
			      "UD send through the second AH: %s", falcon_wc_status_str(wc.status));
			/* it takes the oldest receive still posted (the first test's spares) */
			CHECK(wait1(b->cq, &wc) && wc.byte_len == 22 && wc.src_qp == qa->qp_num &&
			      ((wc.wr_id >= 100 && wc.wr_id < 108) || wc.wr_id == 400) &&
			      !memcmp(b->buf + (wc.wr_id == 400 ? 0 : 1024 * (wc.wr_id - 100)),
				      "through the second AH", 22),
			      "the datagram through the second AH: wr %" PRIu64 ", %u bytes",
			      wc.wr_id, wc.byte_len);
			CHECK(!falcon_destroy_ah(to_b2), "destroy_ah: %s", falcon_strerror(-errno));
		}
	}
	CHECK(!falcon_destroy_ah(to_a), "destroy_ah: %s", falcon_strerror(-errno));
	falcon_destroy_qp(qa);
	falcon_destroy_qp(qb);
	printf("ud: %d datagrams checked, a wrong Q_Key dropped, an oversized one refused, a reply\n",
	       got + 1);
}

/* ---- XRC ---- */

struct acc {
	struct falcon_listener *l;
	struct falcon_pd *pd;
	struct falcon_qp_init_attr a;
	struct falcon_qp *qp;
};

static void *acceptor(void *arg)
{
	struct acc *x = arg;

	x->qp = falcon_accept(x->l, x->pd, &x->a, WAIT_MS);
	return NULL;
}

static void xrc_test(struct side *a, struct side *b)
{
	struct falcon_xrcd *x = falcon_open_xrcd(b->ctx);
	struct falcon_cq *cq1 = falcon_create_cq(b->ctx, 64), *cq2 = falcon_create_cq(b->ctx, 64);
	struct falcon_srq_init_attr sa = { .size = sizeof(sa), .max_wr = 16, .xrcd = x };
	struct falcon_srq *s1, *s2;
	struct falcon_qp_init_attr ia = { .size = sizeof(ia), .qp_type = FALCON_QPT_XRC_SEND,
					  .send_cq = a->cq, .max_send_wr = 32 };
	struct falcon_qp_init_attr ta = { .size = sizeof(ta), .qp_type = FALCON_QPT_XRC_RECV,
					  .xrcd = x };
	struct falcon_qp *ini, *tgt, *ini2;
	struct falcon_wc wc;
	struct acc acc = { 0 };
	pthread_t th;

	if (!x || !cq1 || !cq2)
		die("xrc setup");
	sa.cq = cq1;
	s1 = falcon_create_srq(b->pd, &sa);
	sa.cq = cq2;
	s2 = falcon_create_srq(b->pd, &sa);
	if (!s1 || !s2)
		die("create XRC SRQ");
	CHECK(falcon_srq_num(s1) && falcon_srq_num(s2) && falcon_srq_num(s1) != falcon_srq_num(s2),
	      "XRC SRQ numbers %u and %u", falcon_srq_num(s1), falcon_srq_num(s2));
	for (uint64_t i = 0; i < 4; i++) {
		struct falcon_sge g = sge_of(b, (uint32_t)(20000 + 512 * i), 512);
		struct falcon_recv_wr r = { .wr_id = 300 + i, .sg_list = &g, .num_sge = 1 }, *bad;

		if (falcon_post_srq_recv(i & 1 ? s2 : s1, &r, &bad))
			die("post_srq_recv");
	}
	if (!(ini = falcon_create_qp(a->pd, &ia)) || !(tgt = falcon_create_qp(b->pd, &ta)))
		die("create XRC QPs");
	CHECK(!modify(ini, FALCON_QPS_INIT, NULL, 0) && !modify(tgt, FALCON_QPS_INIT, NULL, 0) &&
	      !modify(tgt, FALCON_QPS_RTR, a->cm, ini->qp_num) &&
	      !modify(ini, FALCON_QPS_RTR, b->cm, tgt->qp_num) && !modify(ini, FALCON_QPS_RTS, NULL, 0),
	      "XRC to RTS: %s", falcon_strerror(-errno));
	{
		struct falcon_recv_wr r = { 0 }, *bad;

		CHECK(falcon_post_recv(tgt, &r, &bad) == -EINVAL, "an XRC target took a receive");
	}
	/* the first names s2, the second s1 */
	for (uint64_t i = 0; i < 2; i++) {
		struct falcon_sge g = sge_of(a, (uint32_t)(512 * i), (uint32_t)(40 + i));
		struct falcon_send_wr wr = { .wr_id = 50 + i, .sg_list = &g, .num_sge = 1,
					     .opcode = FALCON_WR_SEND,
					     .xrc_remote_srq_num = falcon_srq_num(i ? s1 : s2) };

		for (uint32_t j = 0; j < 40 + i; j++)
			a->buf[512 * i + j] = (uint8_t)(0x40 + i + j);
		post_send(ini, &wr);
		CHECK(wait1(a->cq, &wc) && wc.wr_id == 50 + i && wc.status == FALCON_WC_SUCCESS,
		      "XRC send %" PRIu64 ": %s", i, falcon_wc_status_str(wc.status));
	}
	CHECK(wait1(cq2, &wc) && wc.wr_id == 301 && wc.byte_len == 40 && wc.qp_num == tgt->qp_num &&
	      !memcmp(b->buf + 20512, a->buf, 40), "the SEND for SRQ 2: wr %" PRIu64 ", %u bytes, QP %u",
	      wc.wr_id, wc.byte_len, wc.qp_num);
	CHECK(wait1(cq1, &wc) && wc.wr_id == 300 && wc.byte_len == 41 &&
	      !memcmp(b->buf + 20000, a->buf + 512, 41), "the SEND for SRQ 1: wr %" PRIu64 ", %u bytes",
	      wc.wr_id, wc.byte_len);
	CHECK(falcon_poll_cq(b->cq, 1, &wc) == 0, "an XRC receive went to the wrong CQ");
	/* the same through falcon_connect / falcon_accept */
	if (!(acc.l = falcon_listen(b->ctx, 5301, 2)))
		die("listen");
	acc.pd = b->pd;
	acc.a = ta;
	pthread_create(&th, NULL, acceptor, &acc);
	ini2 = falcon_connect(a->pd, b->cm, 5301, &ia, WAIT_MS);
	pthread_join(th, NULL);
	CHECK(ini2 && acc.qp, "XRC connect / accept: %s", falcon_strerror(-errno));
	if (ini2 && acc.qp) {
		struct falcon_sge g = sge_of(a, 1024, 64);
		struct falcon_send_wr wr = { .wr_id = 60, .sg_list = &g, .num_sge = 1,
					     .opcode = FALCON_WR_SEND_WITH_IMM, .imm_data = 6,
					     .xrc_remote_srq_num = falcon_srq_num(s1) };

		memset(a->buf + 1024, 0x66, 64);
		post_send(ini2, &wr);
		CHECK(wait1(a->cq, &wc) && wc.wr_id == 60 && wc.status == FALCON_WC_SUCCESS,
		      "XRC send by connect: %s", falcon_wc_status_str(wc.status));
		CHECK(wait1(cq1, &wc) && wc.wr_id == 302 && wc.byte_len == 64 && wc.imm_data == 6 &&
		      wc.qp_num == acc.qp->qp_num && !memcmp(b->buf + 21024, a->buf + 1024, 64),
		      "the SEND by connect: wr %" PRIu64 ", %u bytes", wc.wr_id, wc.byte_len);
		falcon_destroy_qp(ini2);
		falcon_destroy_qp(acc.qp);
	}
	falcon_listener_close(acc.l);
	CHECK(falcon_destroy_cq(cq1) == -EBUSY, "a CQ of an XRC SRQ was destroyed");
	falcon_destroy_qp(ini);
	falcon_destroy_qp(tgt);
	CHECK(!falcon_destroy_srq(s1) && !falcon_destroy_srq(s2) && !falcon_close_xrcd(x) &&
	      !falcon_destroy_cq(cq1) && !falcon_destroy_cq(cq2), "XRC teardown: %s",
	      falcon_strerror(-errno));
	printf("xrc: SENDs landed in the SRQ each named (create/modify and connect/accept)\n");
}

int main(int argc, char **argv)
{
	struct side a = { 0 }, b = { 0 };

	if (argc != 5) {
		fprintf(stderr, "usage: qp_types SOCK_A SOCK_B CM_A CM_B\n");
		return 2;
	}
	side_open(&a, argv[1], argv[3]);
	side_open(&b, argv[2], argv[4]);
	rc_test(&a, &b);
	fail_test(&a, &b);
	ud_test(&a, &b);
	xrc_test(&a, &b);
	falcon_close(a.ctx);
	falcon_close(b.ctx);
	printf("qp-types: %d passed, %d failed\n", checks - failures, failures);
	return failures ? 1 : 0;
}
