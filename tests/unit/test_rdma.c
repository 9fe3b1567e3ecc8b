/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RDMA-over-Falcon ULP (rdma.h) driven by hand: two hosts A and B, each a txn engine, an
 * MR table, an RDMA layer and 64 KiB of memory; a wire with a latency, a drop filter
 * and a log of every packet (Falcon type, RSN, NACK codes, and the RDMA headers it
 * carries); virtual time.
 *
 * Expected values are written from the specs, not read back from the code: RBTH SN
 * starts at 1 per connection direction and responses repeat it (RDMA 8.2); the two RMSN
 * counters (8.3.2); statuses from the IB table of mr.h; atomics computed by hand.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rdma.h"
#include "wire_falcon.h"
#include "wire_rdma.h"

#define PMTU 1024                        /* RDMA payload per transaction */
#define TMTU (PMTU + 128)                /* txn MTU: payload + RDMA headers */
#define MEM (64u * 1024)
#define IOVA 0x40000000ull
#define US 1000ull
#define MS 1000000ull
#define MAXNET 4096
#define MAXLOG 4096
#define BUFCAP (TMTU + FC_FALCON_HDR_MAX + 64)

struct host {
	struct fc_txn_engine *e;
	struct fc_mr_table *mrs;
	struct fc_rdma *d;
	uint8_t *mem;
	uint32_t pd, scq, rcq;
	struct fc_mr_keys k;     /* all of mem, every access */
	struct fc_txn *conn[4];
	uint32_t rand_state;
};

static struct host HS[2];
#define A (&HS[0])
#define B (&HS[1])
static uint64_t now;

/* ------------------------------------------------------------------------ */
/* wire                                                                      */

struct npkt {
	uint64_t at, seq, sent;
	int to;
	uint32_t len;
	uint8_t b[BUFCAP];
};
static struct npkt *net;
static int nnet;
static uint64_t nseq;

struct logent {
	int from;
	uint8_t type, nack, ulp, has_rdma, opcode, ce, se;
	uint32_t rsn, sn, rmsn, dqp;
};
static struct logent plog[MAXLOG];
static int nlog;

/* returns 1 to drop the packet */
typedef int (*filter_fn)(int from, const struct logent *l);
static filter_fn filter;

static void log_pkt(int from, const uint8_t *b, uint32_t len, struct logent *l)
{
	struct fc_falcon_pkt f;
	struct fc_rdma_hdrs h;

	memset(l, 0, sizeof(*l));
	l->from = from;
	if (fc_falcon_decode(b, len, &f) < 0)
		return;
	l->type = (uint8_t)f.type;
	l->rsn = f.rsn;
	l->nack = f.nack_code;
	l->ulp = f.ulp_nack_code;
	if ((f.type == FC_PKT_PUSH_DATA || f.type == FC_PKT_PULL_REQ || f.type == FC_PKT_PULL_DATA) &&
	    f.payload_len && fc_rdma_decode(f.payload, f.payload_len, (int)f.type, &h) >= 0) {
		l->has_rdma = 1;
		l->opcode = h.opcode;
		l->ce = h.ce;
		l->se = h.se;
		l->sn = h.sn;
		l->rmsn = h.rmsn;
		l->dqp = h.dqp;
	}
}

static void send_pkt(int from, const uint8_t *b, uint32_t len)
{
	struct npkt *p;

	assert_true(nnet < MAXNET);
	p = &net[nnet++];
	p->at = now + 2 * US;
	p->sent = now;
	p->seq = nseq++;
	p->to = 1 - from;
	p->len = len;
	memcpy(p->b, b, len);
}

static void deliver(struct npkt *p)
{
	struct logent l;

	log_pkt(1 - p->to, p->b, p->len, &l);
	if (filter && filter(1 - p->to, &l))
		return;
	if (nlog < MAXLOG)
		plog[nlog++] = l;
	fc_rdma_rx(HS[p->to].d, p->b, p->len, p->sent, now);
}

/* Run the two hosts until nothing is left to do or until `until`. */
static void run_until(uint64_t until)
{
	uint8_t buf[BUFCAP];

	for (int iter = 0; iter < 2000000; iter++) {
		uint64_t t = UINT64_MAX;
		int best = -1;

		for (int h = 0; h < 2; h++) {
			int n;

			while ((n = fc_rdma_poll_tx(HS[h].d, now, buf, sizeof(buf), NULL)) > 0)
				send_pkt(h, buf, (uint32_t)n);
			assert_true(n == 0);
		}
		for (int i = 0; i < nnet; i++)
			if (net[i].at < t || (net[i].at == t && net[i].seq < net[best].seq)) {
				t = net[i].at;
				best = i;
			}
		for (int h = 0; h < 2; h++) {
			uint64_t dl = fc_rdma_next_deadline(HS[h].d);

			if (dl < t) {
				t = dl;
				best = -1;
			}
		}
		if (t == UINT64_MAX || t > until)
			return;
		if (t > now)
			now = t;
		if (best >= 0) {
			struct npkt p = net[best];

			net[best] = net[--nnet];
			deliver(&p);
			continue;
		}
		for (int h = 0; h < 2; h++)
			if (fc_rdma_next_deadline(HS[h].d) <= now)
				fc_rdma_on_timer(HS[h].d, now);
	}
	fail_msg("run did not settle");
}

static void run(void) { run_until(now + 5000 * MS); }

/* ------------------------------------------------------------------------ */
/* hosts                                                                     */

static uint32_t key_rand(void *ctx)
{
	struct host *h = ctx;

	h->rand_state = h->rand_state * 1103515245u + 12345u;
	return h->rand_state;
}

static void host_init(struct host *h, int id)
{
	struct fc_txn_engine_cfg ec;
	struct fc_rdma_cfg rc;

	memset(h, 0, sizeof(*h));
	h->rand_state = 77u + (uint32_t)id;
	fc_txn_engine_cfg_default(&ec);
	ec.mtu_bytes = TMTU;
	ec.txn_timeout_ns = 10000 * MS;
	h->e = fc_txn_engine_new(&ec);
	h->mrs = fc_mr_table_new(64, 8, key_rand, h);
	fc_rdma_cfg_default(&rc);
	rc.mtu_bytes = PMTU;
	rc.max_msg_bytes = MEM;
	h->d = fc_rdma_new(&rc, h->e, h->mrs);
	h->mem = calloc(1, MEM);
	assert_non_null(h->e);
	assert_non_null(h->mrs);
	assert_non_null(h->d);
	assert_non_null(h->mem);
	assert_int_equal(fc_pd_alloc(h->mrs, &h->pd), 0);
	assert_int_equal(fc_mr_reg(h->mrs, h->pd, h->mem, IOVA, MEM, FC_MR_ACCESS_ALL, &h->k), 0);
	assert_int_equal(fc_rdma_cq_create(h->d, 256, &h->scq), 0);
	assert_int_equal(fc_rdma_cq_create(h->d, 256, &h->rcq), 0);
}

static int setup(void **state)
{
	(void)state;
	now = 1000;
	nnet = 0;
	nlog = 0;
	filter = NULL;
	net = calloc(MAXNET, sizeof(*net));
	host_init(A, 0);
	host_init(B, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		fc_rdma_free(HS[i].d);
		fc_txn_engine_free(HS[i].e);
		fc_mr_table_free(HS[i].mrs);
		free(HS[i].mem);
	}
	free(net);
	return 0;
}

/* Connection idx between A (CID 10+idx) and B (CID 20+idx). */
static void conn_pair(int idx, int ordered, int mn)
{
	for (int h = 0; h < 2; h++) {
		struct fc_txn_conn_cfg c;

		fc_txn_conn_cfg_default(&c);
		c.pdl.local_cid = (uint32_t)(h ? 20 : 10) + (uint32_t)idx;
		c.pdl.remote_cid = (uint32_t)(h ? 10 : 20) + (uint32_t)idx;
		c.pdl.ordered = ordered;
		c.mn = mn;
		HS[h].conn[idx] = fc_rdma_conn_open(HS[h].d, &c);
		assert_non_null(HS[h].conn[idx]);
	}
}

static void qp_init(struct host *h, struct fc_rdma_qp_init *a, uint8_t type, uint8_t order,
		    uint8_t mode, int conn)
{
	fc_rdma_qp_init_default(a);
	a->type = type;
	a->order = order;
	a->err_mode = mode;
	a->pd = h->pd;
	a->send_cq = h->scq;
	a->recv_cq = h->rcq;
	a->conn = type == FC_RDMA_QPT_UD ? NULL : h->conn[conn];
	a->qkey = 0x1234;
}

static void to_rts(struct host *h, uint32_t qpn, uint32_t remote)
{
	struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };

	assert_int_equal(fc_rdma_qp_modify(h->d, qpn, &at), 0);
	at.state = FC_RDMA_QPS_RTR;
	at.remote_qpn = remote;
	assert_int_equal(fc_rdma_qp_modify(h->d, qpn, &at), 0);
	at.state = FC_RDMA_QPS_RTS;
	assert_int_equal(fc_rdma_qp_modify(h->d, qpn, &at), 0);
}

/* An RC pair on connection idx (created here), both ready. */
static void rc_pair(int idx, uint8_t order, uint8_t mode, uint32_t *qa, uint32_t *qb)
{
	struct fc_rdma_qp_init a;

	conn_pair(idx, order == FC_RDMA_ORDER_STRONG, 0);
	qp_init(A, &a, FC_RDMA_QPT_RC, order, mode, idx);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, qa), 0);
	qp_init(B, &a, FC_RDMA_QPT_RC, order, mode, idx);
	assert_int_equal(fc_rdma_qp_create(B->d, &a, qb), 0);
	to_rts(A, *qa, *qb);
	to_rts(B, *qb, *qa);
}

static struct fc_sge sge(struct host *h, uint32_t off, uint32_t len)
{
	return (struct fc_sge){ .addr = IOVA + off, .len = len, .lkey = h->k.lkey };
}

static int post_recv(struct host *h, uint32_t qpn, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct fc_sge s = sge(h, off, len);
	struct fc_rdma_recv_wr wr = { .wr_id = wr_id, .num_sge = 1, .sgl = &s };

	return fc_rdma_post_recv(h->d, qpn, &wr);
}

static int post(struct host *h, uint32_t qpn, uint8_t op, uint64_t wr_id, uint32_t off,
		uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct fc_sge s = sge(h, off, len);
	struct fc_rdma_send_wr wr = { .wr_id = wr_id, .opcode = op, .num_sge = 1, .sgl = &s,
				      .remote_addr = raddr, .rkey = rkey, .imm = 0xA1B2C3D4 };

	return fc_rdma_post_send(h->d, qpn, &wr, now);
}

static int poll1(struct host *h, uint32_t cq, struct fc_rdma_wc *wc)
{
	return fc_rdma_poll_cq(h->d, cq, wc, 1);
}

static void fill(struct host *h, uint32_t off, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		h->mem[off + i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static int count_log(int from, uint8_t type, uint8_t nack)
{
	int n = 0;

	for (int i = 0; i < nlog; i++)
		if (plog[i].from == from && plog[i].type == type &&
		    (type != FC_PKT_NACK || plog[i].nack == nack))
			n++;
	return n;
}

/* ------------------------------------------------------------------------ */
/* QP state machine, creation and post validation                            */

static void test_qp_state_machine(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_qp_attr at = { 0 };
	struct fc_rdma_wc wc;
	uint32_t qa;

	(void)state;
	conn_pair(0, 1, 0);
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa), 0);
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_RESET);
	/* RESET: no posts; only INIT (or ERR/RESET) next */
	assert_int_equal(post_recv(A, qa, 1, 0, 64), -EINVAL);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 1, 0, 8, 0, 0), -EINVAL);
	at.state = FC_RDMA_QPS_RTS;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), -EINVAL);
	at.state = FC_RDMA_QPS_RTR;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), -EINVAL);
	at.state = FC_RDMA_QPS_INIT;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	/* INIT: receives may be posted, sends not */
	assert_int_equal(post_recv(A, qa, 1, 0, 64), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 2, 0, 8, 0, 0), -EINVAL);
	at.state = FC_RDMA_QPS_RTR;
	at.remote_qpn = 1u << 24; /* wider than a QPN */
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), -EINVAL);
	at.remote_qpn = 0x42;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 2, 0, 8, 0, 0), -EINVAL);
	at.state = FC_RDMA_QPS_INIT; /* no way back but RESET */
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), -EINVAL);
	at.state = FC_RDMA_QPS_RTS;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_RTS);
	/* ERR flushes the posted receive; later posts are flushed at once */
	at.state = FC_RDMA_QPS_ERR;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	assert_int_equal(poll1(A, A->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, FC_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.qp_num, qa);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 3, 0, 8, 0, 0), 0);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, FC_WC_WR_FLUSH_ERR);
	assert_int_equal(post_recv(A, qa, 4, 0, 64), 0);
	assert_int_equal(poll1(A, A->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(wc.status, FC_WC_WR_FLUSH_ERR);
	assert_int_equal(fc_rdma_qp_sq_outstanding(A->d, qa), 0);
	/* ERR -> RESET -> INIT again; nothing was sent on the wire */
	at.state = FC_RDMA_QPS_RESET;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	at.state = FC_RDMA_QPS_INIT;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	run();
	assert_int_equal(nlog, 0);
	/* an error state the caller asked for is no error: no QP_FATAL (verbs: none for a
	 * modify to ERR), nor LAST_WQE (no SRQ) */
	{
		struct fc_rdma_async_event ev;

		assert_int_equal(fc_rdma_get_async_event(A->d, &ev), -EAGAIN);
	}
	/* destroyed: its number is no longer valid; the connection can be closed */
	assert_int_equal(fc_rdma_conn_close(A->d, A->conn[0]), -EBUSY);
	assert_int_equal(fc_rdma_qp_destroy(A->d, qa), 0);
	assert_int_equal(fc_rdma_qp_state(A->d, qa), -ENOENT);
	assert_int_equal(fc_rdma_qp_destroy(A->d, qa), -ENOENT);
	assert_int_equal(fc_rdma_conn_close(A->d, A->conn[0]), 0);
}

static void test_qp_create_validation(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_srq_init si = { .pd = 0, .depth = 4, .max_sge = 1, .xrcd = 7 };
	uint32_t q1, q2, xsrq;

	(void)state;
	conn_pair(0, 1, 0); /* ordered */
	conn_pair(1, 0, 0); /* unordered */
	conn_pair(2, 0, 1); /* unordered, M:N */
	si.pd = A->pd;
	si.cq = A->rcq;
	assert_int_equal(fc_rdma_srq_create(A->d, &si, &xsrq), 0);
	/* 6.2: a strongly ordered QP needs an ordered connection, the others an unordered */
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 1);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q1), -EINVAL);
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_WEAK, FC_RDMA_MODE_VERBS, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q1), -EINVAL);
	/* 6.4: unordered QPs complete in error only */
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_NONE, FC_RDMA_MODE_VERBS, 1);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q1), -EINVAL);
	/* RC needs a 1:1 connection */
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_NONE, FC_RDMA_MODE_CIE, 2);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q1), -EINVAL);
	/* an XRC SRQ is not an RC QP's SRQ; a bad CQ; a bad rnr_retry */
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 0);
	a.srq = xsrq;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q1), -EINVAL);
	a.srq = 0;
	a.send_cq = 0x777;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q1), -ENOENT);
	a.send_cq = A->scq;
	a.rnr_retry = 8;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q1), -EINVAL);
	a.rnr_retry = 7;
	a.max_send_sge = FC_SEG_SGE_MAX + 1;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q1), -EINVAL);
	a.max_send_sge = 4;
	/* one RC QP per connection */
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q1), 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q2), -EBUSY);
	/* UD QPs need no connection; an XRC target needs a domain */
	qp_init(A, &a, FC_RDMA_QPT_UD, FC_RDMA_ORDER_NONE, FC_RDMA_MODE_CIE, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q2), 0);
	assert_true(q2 != q1);
	qp_init(A, &a, FC_RDMA_QPT_XRC_TGT, FC_RDMA_ORDER_NONE, FC_RDMA_MODE_CIE, 1);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q2), -EINVAL);
	a.xrcd = 7;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &q2), 0);
	/* a CQ or SRQ in use cannot go */
	assert_int_equal(fc_rdma_cq_destroy(A->d, A->scq), -EBUSY);
	assert_int_equal(fc_rdma_cq_destroy(A->d, A->rcq), -EBUSY); /* QPs and the XRC SRQ */
	assert_int_equal(fc_rdma_srq_destroy(A->d, xsrq), 0);    /* no QP uses it */
	assert_int_equal(fc_rdma_srq_destroy(A->d, xsrq), -ENOENT);
}

static void test_post_validation(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_send_wr wr;
	struct fc_sge s[3];
	struct fc_rdma_wc wc;
	uint32_t qa, qb, qu;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_NONE, FC_RDMA_MODE_CIE, &qa, &qb);
	assert_int_equal(post_recv(B, qb, 1, 0, PMTU), 0);
	/* 6.4: no WRITE with Immediate, no SEND above one MTU on an unordered QP */
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE_IMM, 1, 0, 8, IOVA, B->k.rkey), -EINVAL);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 1, 0, PMTU + 1, 0, 0), -EMSGSIZE);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 1, 0, PMTU, 0, 0), 0);
	/* ... but WRITE and READ of any size */
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 2, 0, 4 * PMTU, IOVA, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_READ, 3, 0, 4 * PMTU, IOVA, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 4, 0, MEM + 1, IOVA, B->k.rkey), -EMSGSIZE);
	assert_int_equal(post(A, qa, 99, 4, 0, 8, IOVA, B->k.rkey), -EINVAL);
	/* remote range wrapping 2^64 */
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 4, 0, 16, UINT64_MAX - 8, B->k.rkey), -EINVAL);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = FC_RDMA_WR_SEND;
	wr.num_sge = 5; /* max_send_sge is 4 */
	wr.sgl = s;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), -EINVAL);
	wr.num_sge = 1;
	wr.sgl = NULL;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), -EINVAL);
	/* atomics take exactly one sink entry */
	s[0] = sge(A, 0, 8);
	s[1] = sge(A, 8, 8);
	wr.opcode = FC_RDMA_WR_FETCH_ADD;
	wr.sgl = s;
	wr.num_sge = 2;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), -EINVAL);
	/* UD: only SENDs, at most one MTU, through a valid AH */
	qp_init(A, &a, FC_RDMA_QPT_UD, FC_RDMA_ORDER_NONE, FC_RDMA_MODE_CIE, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qu), 0);
	to_rts(A, qu, 0);
	assert_int_equal(post(A, qu, FC_RDMA_WR_WRITE, 5, 0, 8, IOVA, B->k.rkey), -EINVAL);
	assert_int_equal(post(A, qu, FC_RDMA_WR_SEND, 5, 0, 8, 0, 0), -ENOENT); /* AH 0: no such AH */
	run();
	while (poll1(A, A->scq, &wc) == 1)
		assert_int_equal(wc.status, FC_WC_SUCCESS); /* wr 1, 2, 3 */
	/* L_Key failures of the WR's own list are completions, and nothing is sent */
	nlog = 0;
	s[0] = sge(A, 0, 16);
	s[0].lkey ^= 0x100; /* another slot: no such key */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 10;
	wr.opcode = FC_RDMA_WR_WRITE;
	wr.num_sge = 1;
	wr.sgl = s;
	wr.remote_addr = IOVA;
	wr.rkey = B->k.rkey;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	s[0] = sge(A, 0, 4); /* atomic sink of 4 bytes */
	wr.wr_id = 11;
	wr.opcode = FC_RDMA_WR_CMP_SWAP;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	s[0] = sge(A, MEM - 8, 16); /* beyond the region */
	wr.wr_id = 12;
	wr.opcode = FC_RDMA_WR_READ;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	run();
	assert_int_equal(nlog, 0);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(wc.status, FC_WC_LOC_PROT_ERR);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.status, FC_WC_LOC_LEN_ERR);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 12);
	assert_int_equal(wc.status, FC_WC_LOC_PROT_ERR);
	/* CIE mode: the QP goes on */
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_RTS);
	/* a full send queue (depth 64) */
	for (int i = 0; i < 64; i++)
		assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 100 + (uint64_t)i, 0, 4, IOVA, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 200, 0, 4, IOVA, B->k.rkey), -EAGAIN);
	run();
	for (int i = 0; i < 64; i++) {
		assert_int_equal(poll1(A, A->scq, &wc), 1);
		assert_int_equal(wc.status, FC_WC_SUCCESS);
	}
}

/* ------------------------------------------------------------------------ */
/* data movement and the wire rules of RDMA section 8                         */

static void test_write_read_send_strong(void **state)
{
	struct fc_rdma_wc wc;
	uint32_t qa, qb;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	fill(A, 0, 3000, 5);
	assert_int_equal(post_recv(B, qb, 77, 40000, 2000), 0);
	/* WRITE 3000 bytes = 3 pushes (1024, 1024, 952), READ them back, SEND 1500 with imm */
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, 3000, IOVA + 8192, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_READ, 2, 16384, 3000, IOVA + 8192, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND_IMM, 3, 100, 1500, 0, 0), 0);
	run();
	assert_memory_equal(B->mem + 8192, A->mem, 3000);
	assert_memory_equal(A->mem + 16384, A->mem, 3000);
	assert_memory_equal(B->mem + 40000, A->mem + 100, 1500);
	for (uint64_t i = 1; i <= 3; i++) { /* in order (6.4) */
		assert_int_equal(poll1(A, A->scq, &wc), 1);
		assert_int_equal(wc.wr_id, i);
		assert_int_equal(wc.status, FC_WC_SUCCESS);
		assert_int_equal(wc.qp_num, qa);
	}
	assert_int_equal(wc.opcode, FC_RDMA_WC_SEND);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_int_equal(wc.opcode, FC_RDMA_WC_RECV);
	assert_int_equal(wc.byte_len, 1500);
	assert_int_equal(wc.flags & FC_RDMA_WC_F_IMM, FC_RDMA_WC_F_IMM);
	assert_int_equal(wc.imm_data, 0xA1B2C3D4);
	assert_int_equal(wc.src_qp, qa);
	assert_int_equal(wc.qp_num, qb);
	/* the wire: 3 WRITE pushes, 3 READ pulls, 2 SEND pushes = 8 requests from A with SN
	 * 1..8 (8.2: the first SN on a connection is 1); 3 READ responses from B carrying
	 * their request's SN (4, 5, 6) */
	{
		static const uint8_t ops[8] = { 0x06, 0x07, 0x08, 0x0C, 0x0C, 0x0C, 0x00, 0x03 };
		uint32_t sn = 1, resp_sn = 4;

		for (int i = 0; i < nlog; i++) {
			const struct logent *l = &plog[i];

			if (!l->has_rdma)
				continue;
			if (l->from == 0) {
				assert_true(sn <= 8);
				assert_int_equal(l->opcode, ops[sn - 1]);
				assert_int_equal(l->sn, sn);
				assert_int_equal(l->dqp, qb);
				sn++;
			} else {
				assert_int_equal(l->opcode, 0x10); /* READ Response Only */
				assert_int_equal(l->sn, resp_sn++);
				assert_int_equal(l->dqp, qa);
			}
		}
		assert_int_equal(sn, 9);
		assert_int_equal(resp_sn, 7);
	}
}

/* 8.3.2: the send/write-imm counter goes +1 per message, the read/atomic counter +1 per
 * READ or atomic request packet; both start at 1. */
static void test_rmsn_counters(void **state)
{
	uint32_t qa, qb;
	/* posted: SEND (2 pkts), READ (2 pulls), SEND_IMM (1), FETCH_ADD, WRITE_IMM (1) */
	static const uint8_t ops[] = { 0x00, 0x02, 0x0C, 0x0C, 0x05, 0x14, 0x0B };
	static const uint32_t rmsn[] = { 1, 1, 1, 2, 2, 3, 3 };
	int k = 0;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_recv(B, qb, (uint64_t)i, 40000 + 4096 * (uint32_t)i, 4096), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 1, 0, 2000, 0, 0), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_READ, 2, 8192, 2000, IOVA, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND_IMM, 3, 0, 10, 0, 0), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_FETCH_ADD, 4, 16384, 8, IOVA + 64, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE_IMM, 5, 0, 10, IOVA + 128, B->k.rkey), 0);
	run();
	for (int i = 0; i < nlog; i++) {
		if (plog[i].from != 0 || !plog[i].has_rdma)
			continue;
		assert_true(k < 7);
		assert_int_equal(plog[i].opcode, ops[k]);
		assert_int_equal(plog[i].rmsn, rmsn[k]);
		k++;
	}
	assert_int_equal(k, 7);
}

static void test_atomics(void **state)
{
	struct fc_rdma_wc wc;
	struct fc_rdma_send_wr wr;
	struct fc_sge s;
	uint32_t qa, qb;
	uint64_t v, r;
	struct fc_mr_keys nk;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, &qa, &qb);
	v = 100;
	memcpy(B->mem + 256, &v, 8);
	memset(&wr, 0, sizeof(wr));
	wr.num_sge = 1;
	wr.sgl = &s;
	wr.rkey = B->k.rkey;
	wr.remote_addr = IOVA + 256;
	/* CmpSwap 100 -> 7: matches */
	s = sge(A, 0, 8);
	wr.wr_id = 1;
	wr.opcode = FC_RDMA_WR_CMP_SWAP;
	wr.compare_add = 100;
	wr.swap = 7;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	/* CmpSwap 100 -> 9: fails (word is 7), returns 7 */
	s = sge(A, 8, 8);
	wr.wr_id = 2;
	wr.swap = 9;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	/* FetchAdd +0x10: 7 -> 0x17 */
	s = sge(A, 16, 8);
	wr.wr_id = 3;
	wr.opcode = FC_RDMA_WR_FETCH_ADD;
	wr.compare_add = 0x10;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	/* masked FetchAdd (RFC 7306 5.1.1) on 0xFFFF00FF: add 0x00010001 with the carries
	 * out of bits 15 and 31 dropped (the add mask marks field boundaries). Then masked
	 * CmpSwap: compare the low byte only, swap the top byte to 0xAB. */
	{
		uint64_t w = 0xFFFF00FFull;

		memcpy(B->mem + 264, &w, 8);
	}
	s = sge(A, 24, 8);
	wr.wr_id = 4;
	wr.remote_addr = IOVA + 264;
	wr.opcode = FC_RDMA_WR_MASKED_FETCH_ADD;
	wr.compare_add = 0x00010001ull;
	wr.compare_add_mask = 0x80008000ull; /* field boundaries: bits 15 and 31 */
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	s = sge(A, 32, 8);
	wr.wr_id = 5;
	wr.opcode = FC_RDMA_WR_MASKED_CMP_SWAP;
	wr.compare_add = 0x0;
	wr.compare_add_mask = 0xFFull;
	wr.swap = 0xAB00000000000000ull;
	wr.swap_mask = 0xFF00000000000000ull;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	/* misaligned: REM_INV_REQ (RFC 7306 5.1); a region without REMOTE_ATOMIC:
	 * REM_ACCESS; the QP (CIE) goes on */
	s = sge(A, 40, 8);
	wr.wr_id = 6;
	wr.opcode = FC_RDMA_WR_FETCH_ADD;
	wr.remote_addr = IOVA + 257;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	assert_int_equal(fc_mr_reg(B->mrs, B->pd, B->mem + 1024, IOVA + 1024 + 0x100000, 64,
				   FC_MR_LOCAL_WRITE | FC_MR_REMOTE_WRITE, &nk), 0);
	wr.wr_id = 7;
	wr.remote_addr = IOVA + 1024 + 0x100000;
	wr.rkey = nk.rkey;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	run();
	{
		static const uint8_t st[7] = { FC_WC_SUCCESS, FC_WC_SUCCESS, FC_WC_SUCCESS,
			FC_WC_SUCCESS, FC_WC_SUCCESS, FC_WC_REM_INV_REQ_ERR, FC_WC_REM_ACCESS_ERR };

		for (int i = 0; i < 7; i++) {
			assert_int_equal(poll1(A, A->scq, &wc), 1);
			assert_int_equal(wc.wr_id, (uint64_t)i + 1);
			assert_int_equal(wc.status, st[i]);
		}
	}
	memcpy(&r, A->mem + 0, 8);
	assert_int_equal(r, 100);
	memcpy(&r, A->mem + 8, 8);
	assert_int_equal(r, 7);
	memcpy(&r, A->mem + 16, 8);
	assert_int_equal(r, 7);
	memcpy(&r, B->mem + 256, 8);
	assert_int_equal(r, 0x17);
	memcpy(&r, A->mem + 24, 8);
	assert_int_equal(r, 0xFFFF00FFull);
	memcpy(&r, A->mem + 32, 8);
	/* 0xFFFF00FF + 0x00010001 with carries out of bits 15 and 31 dropped:
	 * low field 0x00FF + 1 = 0x0100; high field 0xFFFF + 1 = 0x0000 (carry dropped) */
	assert_int_equal(r, 0x00000100ull);
	memcpy(&r, B->mem + 264, 8);
	assert_int_equal(r, 0xAB00000000000100ull);
	memcpy(&r, A->mem + 40, 8);
	assert_int_equal(r, 0); /* sinks of failed atomics untouched */
}

/* ------------------------------------------------------------------------ */
/* completion queue overflow                                                 */

static void test_cq_overflow(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_wc wc[4];
	struct fc_rdma_async_event ev;
	uint32_t qa, qb, small;

	(void)state;
	conn_pair(0, 1, 0);
	assert_int_equal(fc_rdma_cq_create(A->d, 2, &small), 0);
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 0);
	a.send_cq = small;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa), 0);
	qp_init(B, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 0);
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &qb), 0);
	to_rts(A, qa, qb);
	to_rts(B, qb, qa);
	for (int i = 0; i < 4; i++)
		assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, (uint64_t)i, 0, 8, IOVA, B->k.rkey), 0);
	run();
	/* two fit; the third overflows: lost and counted, the QP goes to ERR and its fourth
	 * WR's flush is lost too */
	assert_int_equal(fc_rdma_poll_cq(A->d, small, wc, 4), 2);
	assert_int_equal(wc[0].wr_id, 0);
	assert_int_equal(wc[1].wr_id, 1);
	assert_int_equal(fc_rdma_poll_cq(A->d, small, wc, 4), -EOVERFLOW);
	assert_int_equal(fc_rdma_counters(A->d)->cq_lost, 2);
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_ERR);
	assert_int_equal(fc_rdma_get_async_event(A->d, &ev), 0);
	assert_int_equal(ev.type, FC_RDMA_EV_CQ_ERR);
	assert_int_equal(ev.num, small);
	assert_int_equal(fc_rdma_get_async_event(A->d, &ev), 0);
	assert_int_equal(ev.type, FC_RDMA_EV_QP_FATAL);
}

/* The overflow as verbs has it (rdma.h, "CQ overflow"; issue 21): two QPs send into one
 * CQ of 4 and receive into a healthy one. Eight WRITEs: four complete, the fifth
 * overflows the CQ, which goes to the error state for good; both QPs go to ERR with
 * QP_FATAL after CQ_ERR, every outstanding WR is flushed (receives into the healthy CQ,
 * where they land; sends into the one in error, where they are dropped and counted, as
 * every later completion); the CQ then takes no new QP and no QP back to INIT. */
static void test_cq_overflow_error_state(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_qp_attr at;
	struct fc_rdma_srq_init si = { .depth = 4, .max_sge = 1, .xrcd = 1 };
	struct fc_rdma_wc wc[8];
	struct fc_rdma_async_event ev;
	uint32_t q1, q2, b1, b2, small, qn, srq;
	uint64_t seen = 0;

	(void)state;
	conn_pair(0, 1, 0);
	conn_pair(1, 1, 0);
	assert_int_equal(fc_rdma_cq_create(A->d, 4, &small), 0);
	assert_int_equal(fc_rdma_cq_set_user(A->d, small, 0xC0), 0);
	assert_int_equal(fc_rdma_cq_set_user(A->d, 12345, 1), -ENOENT);
	assert_int_equal(fc_rdma_cq_overflowed(A->d, small), 0);
	for (int i = 0; i < 2; i++) {
		qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, i);
		a.send_cq = small;
		a.user = 0x101 + (uint64_t)i;
		assert_int_equal(fc_rdma_qp_create(A->d, &a, i ? &q2 : &q1), 0);
		qp_init(B, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, i);
		assert_int_equal(fc_rdma_qp_create(B->d, &a, i ? &b2 : &b1), 0);
	}
	to_rts(A, q1, b1);
	to_rts(B, b1, q1);
	to_rts(A, q2, b2);
	to_rts(B, b2, q2);
	for (uint64_t i = 0; i < 2; i++) {
		assert_int_equal(post_recv(A, q1, 100 + i, 0, 64), 0);
		assert_int_equal(post_recv(A, q2, 200 + i, 0, 64), 0);
	}
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(post(A, q1, FC_RDMA_WR_WRITE, i, 0, 8, IOVA, B->k.rkey), 0);
	run();

	/* the four that fit, in order, then -EOVERFLOW for good */
	assert_int_equal(fc_rdma_poll_cq(A->d, small, wc, 8), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
		assert_int_equal(wc[i].status, FC_WC_SUCCESS);
	}
	assert_int_equal(fc_rdma_poll_cq(A->d, small, wc, 8), -EOVERFLOW);
	assert_int_equal(fc_rdma_poll_cq(A->d, small, wc, 8), -EOVERFLOW);
	assert_int_equal(fc_rdma_cq_overflowed(A->d, small), 1);
	assert_int_equal(fc_rdma_cq_overflowed(A->d, A->rcq), 0);
	/* both QPs of the CQ in ERR, the one that did not overflow it too */
	assert_int_equal(fc_rdma_qp_state(A->d, q1), FC_RDMA_QPS_ERR);
	assert_int_equal(fc_rdma_qp_state(A->d, q2), FC_RDMA_QPS_ERR);
	assert_int_equal(fc_rdma_qp_sq_outstanding(A->d, q1), 0);
	assert_int_equal(fc_rdma_qp_rq_outstanding(A->d, q1), 0);
	assert_int_equal(fc_rdma_qp_rq_outstanding(A->d, q2), 0);
	/* their receives flushed into the other CQ, which is healthy */
	assert_int_equal(fc_rdma_poll_cq(A->d, A->rcq, wc, 8), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].status, FC_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, FC_RDMA_WC_RECV);
		assert_true(wc[i].wr_id == 100 || wc[i].wr_id == 101 || wc[i].wr_id == 200 ||
			    wc[i].wr_id == 201);
		assert_int_equal(wc[i].qp_num, wc[i].wr_id < 200 ? q1 : q2);
		seen |= 1ull << (wc[i].wr_id % 64);
	}
	assert_int_equal(seen, (1ull << 36) | (1ull << 37) | (1ull << 8) | (1ull << 9));
	/* the fifth WRITE's completion and the flushes of the sixth to eighth: lost */
	assert_int_equal(fc_rdma_counters(A->d)->cq_lost, 4);
	/* the events: the CQ's, then each QP's, with the caller's cookies */
	assert_int_equal(fc_rdma_get_async_event(A->d, &ev), 0);
	assert_int_equal(ev.type, FC_RDMA_EV_CQ_ERR);
	assert_int_equal(ev.num, small);
	assert_int_equal(ev.user, 0xC0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fc_rdma_get_async_event(A->d, &ev), 0);
		assert_int_equal(ev.type, FC_RDMA_EV_QP_FATAL);
		assert_int_equal(ev.num, i ? q2 : q1);
		assert_int_equal(ev.user, 0x101 + (uint64_t)i);
	}
	assert_int_equal(fc_rdma_get_async_event(A->d, &ev), -EAGAIN);
	/* later: a send is flushed into the CQ in error (dropped, counted), a receive into
	 * the healthy one (delivered); no new event */
	assert_int_equal(post(A, q2, FC_RDMA_WR_WRITE, 9, 0, 8, IOVA, B->k.rkey), 0);
	assert_int_equal(fc_rdma_counters(A->d)->cq_lost, 5);
	assert_int_equal(fc_rdma_poll_cq(A->d, small, wc, 8), -EOVERFLOW);
	assert_int_equal(post_recv(A, q2, 202, 0, 64), 0);
	assert_int_equal(poll1(A, A->rcq, wc), 1);
	assert_int_equal(wc[0].wr_id, 202);
	assert_int_equal(wc[0].status, FC_WC_WR_FLUSH_ERR);
	assert_int_equal(fc_rdma_get_async_event(A->d, &ev), -EAGAIN);
	/* the CQ in error takes no new QP, as send or receive CQ, and no XRC SRQ */
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 2);
	a.send_cq = small;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qn), -EIO);
	a.send_cq = A->scq;
	a.recv_cq = small;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qn), -EIO);
	si.pd = A->pd;
	si.cq = small;
	assert_int_equal(fc_rdma_srq_create(A->d, &si, &srq), -EIO);
	/* nor a QP of it back from RESET */
	at = (struct fc_rdma_qp_attr){ .state = FC_RDMA_QPS_RESET };
	assert_int_equal(fc_rdma_qp_modify(A->d, q2, &at), 0);
	at.state = FC_RDMA_QPS_INIT;
	assert_int_equal(fc_rdma_qp_modify(A->d, q2, &at), -EIO);
	assert_int_equal(fc_rdma_qp_state(A->d, q2), FC_RDMA_QPS_RESET);
	/* what remains: destroy the QPs, then the CQ; the peer's QPs were not touched */
	assert_int_equal(fc_rdma_cq_destroy(A->d, small), -EBUSY);
	assert_int_equal(fc_rdma_qp_destroy(A->d, q1), 0);
	assert_int_equal(fc_rdma_qp_destroy(A->d, q2), 0);
	assert_int_equal(fc_rdma_cq_destroy(A->d, small), 0);
	assert_int_equal(fc_rdma_qp_state(B->d, b1), FC_RDMA_QPS_RTS);
	assert_int_equal(fc_rdma_qp_state(B->d, b2), FC_RDMA_QPS_RTS);
}

/* ------------------------------------------------------------------------ */
/* RNR (Falcon 6.6.3, 8.4.3.4; rdma.h)                                       */

static void test_rnr_retry_exhausted(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_wc wc;
	uint32_t qa, qb;

	(void)state;
	conn_pair(0, 1, 0);
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa), 0);
	qp_init(B, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 0);
	a.rnr_retry = 2;
	a.min_rnr_timer = 3; /* 30 us */
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &qb), 0);
	to_rts(A, qa, qb);
	to_rts(B, qb, qa);
	fill(A, 0, 100, 9);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 1, 0, 100, 0, 0), 0);
	run();
	/* first try + 2 retries refused with RNR; the third refusal is the NAK RNR */
	assert_int_equal(count_log(1, FC_PKT_NACK, FC_NACK_RNR), 2);
	assert_int_equal(count_log(1, FC_PKT_NACK, FC_NACK_CIE), 1);
	for (int i = 0; i < nlog; i++)
		if (plog[i].type == FC_PKT_NACK && plog[i].nack == FC_NACK_CIE)
			assert_int_equal(plog[i].ulp, FC_RDMA_NAK_RNR);
	assert_int_equal(count_log(0, FC_PKT_PUSH_DATA, 0), 3);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(wc.vendor_err, FC_CMPL_TARGET_NACK_CIE | FC_RDMA_NAK_RNR << 8);
	assert_int_equal(fc_rdma_counters(B->d)->rnr_sent, 2);
	assert_int_equal(fc_rdma_counters(B->d)->rnr_exhausted, 1);
	/* the message consumed nothing: the next SEND takes the first WQE posted */
	assert_int_equal(post_recv(B, qb, 55, 30000, 512), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 2, 0, 100, 0, 0), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 55);
	assert_int_equal(wc.byte_len, 100);
	assert_memory_equal(B->mem + 30000, A->mem, 100);
}

static void test_rnr_infinite_then_posted(void **state)
{
	struct fc_rdma_wc wc;
	uint32_t qa, qb;
	int rnrs;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb); /* rnr_retry 7 */
	fill(A, 0, 64, 3);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 1, 0, 64, 0, 0), 0);
	run_until(now + 50 * MS); /* RNR'd again and again, never given up */
	rnrs = count_log(1, FC_PKT_NACK, FC_NACK_RNR);
	assert_true(rnrs >= 5);
	assert_int_equal(count_log(1, FC_PKT_NACK, FC_NACK_CIE), 0);
	assert_int_equal(count_log(1, FC_PKT_NACK, FC_NACK_NRE), 0);
	assert_int_equal(poll1(A, A->scq, &wc), 0);
	assert_int_equal(post_recv(B, qb, 9, 1000, 64), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 9);
	assert_memory_equal(B->mem + 1000, A->mem, 64);
}

/* ------------------------------------------------------------------------ */
/* 6.9: the CID check                                                        */

/* A second QP of A on connection 1 names B's QP of connection 0. */
static void test_cid_check_request(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_wc wc;
	uint32_t qa, qb, qa2, qb2;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	conn_pair(1, 1, 0);
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 1);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa2), 0);
	qp_init(B, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 1);
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &qb2), 0);
	to_rts(A, qa2, qb);  /* wrong: qb lives on connection 0 */
	to_rts(B, qb2, qa2);
	fill(A, 0, 32, 1);
	assert_int_equal(post(A, qa2, FC_RDMA_WR_WRITE, 1, 0, 32, IOVA + 512, B->k.rkey), 0);
	assert_int_equal(post(A, qa2, FC_RDMA_WR_READ, 2, 64, 32, IOVA + 512, B->k.rkey), 0);
	run_until(now + 20 * MS);
	/* the push: NACK invalid CID; the pull: dropped, times out at the initiator */
	assert_int_equal(count_log(1, FC_PKT_NACK, FC_NACK_INVALID_CID), 1);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, FC_WC_REM_INV_REQ_ERR);
	assert_int_equal(wc.vendor_err & 0xFF, FC_CMPL_TARGET_NACK_CID);
	assert_int_equal(fc_rdma_counters(B->d)->nack_cid, 2);
	assert_memory_not_equal(B->mem + 512, A->mem, 32); /* nothing written */
	/* the victim QP goes on */
	assert_int_equal(fc_rdma_qp_state(B->d, qb), FC_RDMA_QPS_RTS);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 3, 0, 32, IOVA + 512, B->k.rkey), 0);
	run_until(now + 20 * MS);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_memory_equal(B->mem + 512, A->mem, 32);
}

/* A forged responder: B's side of connection 1 is a bare txn connection whose "ULP"
 * answers a READ with a response naming A's QP of connection 0. */
static uint32_t forged_dqp;

static void raw_complete(void *ctx, struct fc_txn *t, const struct fc_txn_cmpl *c)
{
	(void)ctx;
	(void)t;
	(void)c;
}

static void raw_request(void *ctx, struct fc_txn *t, const struct fc_txn_req *r)
{
	struct fc_rdma_hdrs h, rh;
	uint8_t buf[256], data[32];
	int n;

	(void)ctx;
	assert_true(fc_rdma_decode(r->data, r->len, FC_PKT_PULL_REQ, &h) > 0);
	memset(&rh, 0, sizeof(rh));
	rh.opcode = FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_READ_RESP_ONLY);
	rh.dqp = forged_dqp;
	rh.sn = h.sn;
	rh.steth = h.steth;
	memset(data, 0xEE, sizeof(data));
	n = fc_rdma_encode(&rh, data, h.reth.len, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(fc_txn_accept(t, r->rsn, now), 0);
	assert_int_equal(fc_txn_pull_data(t, r->rsn, buf, (uint32_t)n, now), 0);
}

static const struct fc_txn_ops raw_ops = { .complete = raw_complete, .request = raw_request };

static void test_cid_check_response(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_txn_conn_cfg c;
	struct fc_rdma_wc wc;
	uint32_t qa, qb, qa2;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	fc_txn_conn_cfg_default(&c);
	c.pdl.local_cid = 11;
	c.pdl.remote_cid = 21;
	c.pdl.ordered = 1;
	A->conn[1] = fc_rdma_conn_open(A->d, &c);
	c.pdl.local_cid = 21;
	c.pdl.remote_cid = 11;
	assert_non_null(fc_txn_conn_new(B->e, &c, &raw_ops, NULL));
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 1);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa2), 0);
	to_rts(A, qa2, 0x99);
	forged_dqp = qa; /* bound to connection 0, the response comes on 1 */
	assert_int_equal(post(A, qa2, FC_RDMA_WR_READ, 1, 0, 32, IOVA, 0x1234), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_RETRY_EXC_ERR);
	assert_int_equal(fc_rdma_counters(A->d)->drop_resp_cid, 1);
	assert_int_equal(A->mem[0], 0); /* not placed */
	assert_int_equal(count_log(0, FC_PKT_NACK, FC_NACK_INVALID_CID), 0); /* no NACK */
	/* a response naming an unknown QP: not ours, dropped as well */
	forged_dqp = 0xABCDE;
	assert_int_equal(post(A, qa2, FC_RDMA_WR_READ, 2, 0, 32, IOVA, 0x1234), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_RETRY_EXC_ERR);
	assert_int_equal(fc_rdma_counters(A->d)->drop_resp_bad, 1);
	/* the well-formed answer is placed */
	forged_dqp = qa2;
	assert_int_equal(post(A, qa2, FC_RDMA_WR_READ, 3, 0, 32, IOVA, 0x1234), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_int_equal(A->mem[0], 0xEE);
	assert_int_equal(A->mem[31], 0xEE);
	assert_int_equal(A->mem[32], 0);
}

/* ------------------------------------------------------------------------ */
/* UD: M:N, Q_Key, DETH                                                      */

static void test_ud_qkey_and_dispatch(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_send_wr wr;
	struct fc_rdma_wc wc;
	struct fc_sge s;
	uint32_t qa, qb1, qb2, ah;

	(void)state;
	conn_pair(0, 0, 1); /* M:N, unordered */
	/* B's name for A (the node's: 1 + its peer index), which UD completions carry */
	assert_int_equal(fc_rdma_conn_set_src(B->d, B->conn[0], 7), 0);
	assert_int_equal(fc_rdma_conn_set_src(B->d, NULL, 7), -ENOENT);
	qp_init(A, &a, FC_RDMA_QPT_UD, FC_RDMA_ORDER_NONE, FC_RDMA_MODE_CIE, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa), 0);
	qp_init(B, &a, FC_RDMA_QPT_UD, FC_RDMA_ORDER_NONE, FC_RDMA_MODE_CIE, 0);
	a.qkey = 0x1111;
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &qb1), 0);
	a.qkey = 0x2222;
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &qb2), 0);
	to_rts(A, qa, 0);
	to_rts(B, qb1, 0);
	to_rts(B, qb2, 0);
	assert_int_equal(fc_rdma_ah_create(A->d, A->pd, A->conn[0], &ah), 0);
	assert_int_equal(post_recv(B, qb1, 1, 100, 256), 0);
	assert_int_equal(post_recv(B, qb2, 2, 1000, 256), 0);
	fill(A, 0, 300, 4);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = FC_RDMA_WR_SEND;
	wr.num_sge = 1;
	wr.sgl = &s;
	wr.ah = ah;
	s = sge(A, 0, PMTU + 1);
	wr.remote_qpn = qb1;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), -EMSGSIZE); /* 6.4 */
	/* to qb2 with qb1's Q_Key: dropped at B, a success at A (UD) */
	s = sge(A, 0, 20);
	wr.wr_id = 10;
	wr.remote_qpn = qb2;
	wr.remote_qkey = 0x1111;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	/* to qb1 and qb2 with their keys, through the same connection */
	wr.wr_id = 11;
	wr.remote_qpn = qb1;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	s = sge(A, 100, 200);
	wr.wr_id = 12;
	wr.opcode = FC_RDMA_WR_SEND_IMM;
	wr.imm = 0x5555;
	wr.remote_qpn = qb2;
	wr.remote_qkey = 0x2222;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	run();
	for (int i = 0; i < 3; i++) {
		assert_int_equal(poll1(A, A->scq, &wc), 1);
		assert_int_equal(wc.status, FC_WC_SUCCESS);
	}
	assert_int_equal(fc_rdma_counters(B->d)->ud_drop_qkey, 1);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.qp_num, qb1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, 20);
	assert_int_equal(wc.src_qp, qa);
	assert_int_equal(wc.src_id, 7); /* the sender: whom falcon_create_ah_from_wc answers */
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.src_id, 7);
	assert_int_equal(wc.qp_num, qb2);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.byte_len, 200);
	assert_int_equal(wc.imm_data, 0x5555);
	assert_int_equal(poll1(B, B->rcq, &wc), 0);
	assert_memory_equal(B->mem + 100, A->mem, 20);
	assert_memory_equal(B->mem + 1000, A->mem + 100, 200);
	/* UD packets carry DETH, no SETH: UD SEND Only (0x64) and with Immediate (0x65) */
	for (int i = 0, k = 0; i < nlog; i++)
		if (plog[i].from == 0 && plog[i].has_rdma)
			assert_int_equal(plog[i].opcode, k++ < 2 ? 0x64 : 0x65);
	/* no WQE left at qb1: dropped (IB), no RNR */
	s = sge(A, 0, 20);
	wr.opcode = FC_RDMA_WR_SEND;
	wr.remote_qpn = qb1;
	wr.remote_qkey = 0x1111;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	run();
	assert_int_equal(fc_rdma_counters(B->d)->ud_drop_no_wqe, 1);
	assert_int_equal(count_log(1, FC_PKT_NACK, FC_NACK_RNR), 0);
	/* the AH holds its connection */
	assert_int_equal(fc_rdma_conn_close(A->d, A->conn[0]), -EBUSY);
}

/* ------------------------------------------------------------------------ */
/* XRC: the XRCETH picks the SRQ                                             */

static void test_xrc_srq_routing(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_srq_init si;
	struct fc_rdma_send_wr wr;
	struct fc_rdma_wc wc;
	struct fc_rdma_recv_wr rw;
	struct fc_sge s, rs;
	uint32_t ini, tgt, s1, s2, s3, cq1, cq2;

	(void)state;
	conn_pair(0, 1, 0);
	assert_int_equal(fc_rdma_cq_create(B->d, 8, &cq1), 0);
	assert_int_equal(fc_rdma_cq_create(B->d, 8, &cq2), 0);
	memset(&si, 0, sizeof(si));
	si.pd = B->pd;
	si.depth = 8;
	si.max_sge = 2;
	si.xrcd = 1;
	si.cq = cq1;
	assert_int_equal(fc_rdma_srq_create(B->d, &si, &s1), 0);
	si.cq = cq2;
	assert_int_equal(fc_rdma_srq_create(B->d, &si, &s2), 0);
	si.xrcd = 2;
	assert_int_equal(fc_rdma_srq_create(B->d, &si, &s3), 0);
	qp_init(A, &a, FC_RDMA_QPT_XRC_INI, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &ini), 0);
	qp_init(B, &a, FC_RDMA_QPT_XRC_TGT, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 0);
	a.xrcd = 1;
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &tgt), 0);
	to_rts(A, ini, tgt);
	to_rts(B, tgt, ini);
	assert_int_equal(post_recv(B, tgt, 1, 0, 64), -EINVAL); /* the target has no RQ */
	memset(&rw, 0, sizeof(rw));
	rw.num_sge = 1;
	rw.sgl = &rs;
	rs = sge(B, 2000, 512);
	rw.wr_id = 101;
	assert_int_equal(fc_rdma_post_srq_recv(B->d, s1, &rw), 0);
	rs = sge(B, 3000, 512);
	rw.wr_id = 202;
	assert_int_equal(fc_rdma_post_srq_recv(B->d, s2, &rw), 0);
	rs = sge(B, 4000, 512);
	rw.wr_id = 303;
	assert_int_equal(fc_rdma_post_srq_recv(B->d, s3, &rw), 0);
	fill(A, 0, 100, 8);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = FC_RDMA_WR_SEND;
	wr.num_sge = 1;
	wr.sgl = &s;
	s = sge(A, 0, 40);
	wr.wr_id = 1;
	wr.xrc_remote_srq = s2;
	assert_int_equal(fc_rdma_post_send(A->d, ini, &wr, now), 0);
	s = sge(A, 40, 60);
	wr.wr_id = 2;
	wr.xrc_remote_srq = s1;
	assert_int_equal(fc_rdma_post_send(A->d, ini, &wr, now), 0);
	wr.wr_id = 3;
	wr.xrc_remote_srq = s3; /* another XRC domain */
	assert_int_equal(fc_rdma_post_send(A->d, ini, &wr, now), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_REM_INV_REQ_ERR);
	assert_int_equal(poll1(B, cq2, &wc), 1);
	assert_int_equal(wc.wr_id, 202);
	assert_int_equal(wc.byte_len, 40);
	assert_int_equal(wc.qp_num, tgt);
	assert_int_equal(poll1(B, cq1, &wc), 1);
	assert_int_equal(wc.wr_id, 101);
	assert_int_equal(wc.byte_len, 60);
	assert_memory_equal(B->mem + 3000, A->mem, 40);
	assert_memory_equal(B->mem + 2000, A->mem + 40, 60);
	assert_int_equal(poll1(B, B->rcq, &wc), 0);
	/* XRC requests carry XRCETH: opcodes of class 101 */
	for (int i = 0; i < nlog; i++)
		if (plog[i].from == 0 && plog[i].has_rdma)
			assert_int_equal(plog[i].opcode, 0xA4);
}

/* A connected QP created without a connection is bound at INIT -> RTR (the daemon's
 * falcon_modify_qp): the same checks as at creation, then it works as any RC pair; an
 * unbound QP that goes to ERR flushes what is posted without touching a connection. */
static void test_bind_at_rtr(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };
	struct fc_rdma_wc wc;
	uint32_t qa, qb, qc, other;

	(void)state;
	conn_pair(0, 1, 0); /* ordered */
	conn_pair(1, 0, 0); /* unordered */
	conn_pair(2, 0, 1); /* M:N */
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 0);
	a.conn = NULL;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa), 0);
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	at.state = FC_RDMA_QPS_RTR;
	at.remote_qpn = 5;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), -EINVAL);  /* no connection */
	at.conn = A->conn[1];
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), -EINVAL);  /* unordered */
	at.conn = A->conn[2];
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), -EINVAL);  /* M:N */
	at.conn = B->conn[0];
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), -ENOENT);  /* not A's */
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_INIT);
	/* a QP bound at creation holds the connection: no second one */
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &other), 0);
	at.conn = A->conn[0];
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), -EBUSY);
	/* and a bound QP cannot be moved to another connection */
	{
		struct fc_rdma_qp_attr o = { .state = FC_RDMA_QPS_INIT };

		assert_int_equal(fc_rdma_qp_modify(A->d, other, &o), 0);
		o.state = FC_RDMA_QPS_RTR;
		o.conn = A->conn[1];
		assert_int_equal(fc_rdma_qp_modify(A->d, other, &o), -EINVAL);
	}
	assert_int_equal(fc_rdma_qp_destroy(A->d, other), 0);
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	at.state = FC_RDMA_QPS_RTS;
	at.conn = NULL;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	assert_int_equal(fc_rdma_conn_close(A->d, A->conn[0]), -EBUSY); /* the QP uses it */
	/* the other end bound the same way, then data both ways */
	qp_init(B, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 0);
	a.conn = NULL;
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &qb), 0);
	at = (struct fc_rdma_qp_attr){ .state = FC_RDMA_QPS_INIT };
	assert_int_equal(fc_rdma_qp_modify(B->d, qb, &at), 0);
	at = (struct fc_rdma_qp_attr){ .state = FC_RDMA_QPS_RTR, .remote_qpn = qa,
				       .conn = B->conn[0] };
	assert_int_equal(fc_rdma_qp_modify(B->d, qb, &at), 0);
	at = (struct fc_rdma_qp_attr){ .state = FC_RDMA_QPS_RTS };
	assert_int_equal(fc_rdma_qp_modify(B->d, qb, &at), 0);
	at = (struct fc_rdma_qp_attr){ .state = FC_RDMA_QPS_RTR, .remote_qpn = qb,
				       .conn = A->conn[0] };
	/* qa's remote QPN was 5: go through RESET -> INIT -> RTR again (the binding stays) */
	at.state = FC_RDMA_QPS_RESET;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	at.state = FC_RDMA_QPS_INIT;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	at.state = FC_RDMA_QPS_RTR;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	at.state = FC_RDMA_QPS_RTS;
	assert_int_equal(fc_rdma_qp_modify(A->d, qa, &at), 0);
	fill(A, 0, 256, 3);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, 256, IOVA + 4096, B->k.rkey), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_memory_equal(B->mem + 4096, A->mem, 256);
	/* an unbound QP in ERR flushes a post at once */
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_WEAK, FC_RDMA_MODE_VERBS, 1);
	a.conn = NULL;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qc), 0);
	at = (struct fc_rdma_qp_attr){ .state = FC_RDMA_QPS_INIT };
	assert_int_equal(fc_rdma_qp_modify(A->d, qc, &at), 0);
	at.state = FC_RDMA_QPS_ERR;
	assert_int_equal(fc_rdma_qp_modify(A->d, qc, &at), 0);
	assert_int_equal(post(A, qc, FC_RDMA_WR_WRITE, 9, 0, 8, IOVA, B->k.rkey), 0);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, FC_WC_WR_FLUSH_ERR);
	assert_int_equal(fc_rdma_qp_destroy(A->d, qc), 0);
	assert_int_equal(fc_rdma_conn_close(A->d, A->conn[1]), 0); /* never held */
}

/* An RC QP with a shared receive queue: SENDs (one and several packets) take the SRQ's
 * WQEs in order and complete on the QP's receive CQ; the QP has no RQ of its own. */
static void test_rc_srq(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_srq_init si = { .depth = 4, .max_sge = 2 };
	struct fc_rdma_recv_wr rw;
	struct fc_rdma_wc wc;
	struct fc_sge rs[2];
	uint32_t qa, qb, srq;

	(void)state;
	conn_pair(0, 1, 0);
	si.pd = B->pd;
	assert_int_equal(fc_rdma_srq_create(B->d, &si, &srq), 0);
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa), 0);
	qp_init(B, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 0);
	a.srq = srq;
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &qb), 0);
	to_rts(A, qa, qb);
	to_rts(B, qb, qa);
	assert_int_equal(post_recv(B, qb, 1, 0, 64), -EINVAL); /* receives go to the SRQ */
	memset(&rw, 0, sizeof(rw));
	rw.sgl = rs;
	rw.num_sge = 2;
	for (int i = 0; i < 2; i++) {
		rs[0] = sge(B, 10000 + 8000 * (uint32_t)i, 1500);
		rs[1] = sge(B, 12000 + 8000 * (uint32_t)i, 1500);
		rw.wr_id = 60 + (uint64_t)i;
		assert_int_equal(fc_rdma_post_srq_recv(B->d, srq, &rw), 0);
	}
	rw.num_sge = 3;
	assert_int_equal(fc_rdma_post_srq_recv(B->d, srq, &rw), -EINVAL); /* max_sge 2 */
	fill(A, 0, 3000, 2);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 1, 0, 2800, 0, 0), 0); /* 3 packets */
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND_IMM, 2, 0, 10, 0, 0), 0);
	run();
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 60);
	assert_int_equal(wc.qp_num, qb);
	assert_int_equal(wc.byte_len, 2800);
	assert_memory_equal(B->mem + 10000, A->mem, 1500);
	assert_memory_equal(B->mem + 12000, A->mem + 1500, 1300);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 61);
	assert_int_equal(wc.byte_len, 10);
	assert_int_equal(wc.imm_data, 0xA1B2C3D4);
	assert_memory_equal(B->mem + 18000, A->mem, 10);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(poll1(A, A->scq, &wc), 1);
		assert_int_equal(wc.status, FC_WC_SUCCESS);
	}
	assert_int_equal(fc_rdma_srq_destroy(B->d, srq), -EBUSY); /* the QP uses it */
	/* a QP fed by an SRQ that goes to ERR (asked for: no QP_FATAL) takes no more of its
	 * WQEs: IB's LAST_WQE_REACHED */
	{
		struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_ERR };
		struct fc_rdma_async_event ev;

		assert_int_equal(fc_rdma_qp_modify(B->d, qb, &at), 0);
		assert_int_equal(fc_rdma_get_async_event(B->d, &ev), 0);
		assert_int_equal(ev.type, FC_RDMA_EV_QP_LAST_WQE);
		assert_int_equal(ev.num, qb);
		assert_int_equal(fc_rdma_get_async_event(B->d, &ev), -EAGAIN);
	}
}

/* ------------------------------------------------------------------------ */
/* SEND with Invalidate (8.3.8)                                              */

static void test_send_invalidate(void **state)
{
	struct fc_rdma_send_wr wr;
	struct fc_rdma_wc wc;
	struct fc_sge s;
	struct fc_mr_keys inv, noinv;
	uint32_t qa, qb;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, &qa, &qb);
	assert_int_equal(fc_mr_reg(B->mrs, B->pd, B->mem + 4096, 0x900000, 4096,
				   FC_MR_ACCESS_ALL, &inv), 0);
	assert_int_equal(fc_mr_reg(B->mrs, B->pd, B->mem + 8192, 0xA00000, 4096,
				   FC_MR_LOCAL_WRITE | FC_MR_REMOTE_WRITE, &noinv), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_recv(B, qb, 10 + (uint64_t)i, 20000 + 1000 * (uint32_t)i, 500), 0);
	fill(A, 0, 64, 2);
	memset(&wr, 0, sizeof(wr));
	wr.num_sge = 1;
	wr.sgl = &s;
	s = sge(A, 0, 64);
	wr.wr_id = 1;
	wr.opcode = FC_RDMA_WR_SEND_INV;
	wr.inv_rkey = inv.rkey;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	/* the region is gone: a WRITE under its R_Key fails */
	wr.wr_id = 2;
	wr.opcode = FC_RDMA_WR_WRITE;
	wr.remote_addr = 0x900000;
	wr.rkey = inv.rkey;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	/* no REMOTE_INVALIDATE permission: both sides REM_INV_REQ, nothing placed */
	wr.wr_id = 3;
	wr.opcode = FC_RDMA_WR_SEND_INV;
	wr.inv_rkey = noinv.rkey;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_REM_ACCESS_ERR);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_REM_INV_REQ_ERR);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_int_equal(wc.flags & FC_RDMA_WC_F_INV, FC_RDMA_WC_F_INV);
	assert_int_equal(wc.invalidated_rkey, inv.rkey);
	assert_memory_equal(B->mem + 20000, A->mem, 64);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.status, FC_WC_REM_INV_REQ_ERR);
	assert_int_equal(B->mem[21000], 0);
	{
		struct fc_mr_info mi;

		assert_int_equal(fc_mr_query(B->mrs, B->pd, inv.lkey, &mi), 0);
		assert_false(mi.valid);
		assert_int_equal(fc_mr_query(B->mrs, B->pd, noinv.lkey, &mi), 0);
		assert_true(mi.valid);
	}
}

/* ------------------------------------------------------------------------ */
/* 6.3 error modes                                                           */

static void test_verbs_mode_flush(void **state)
{
	struct fc_rdma_wc wc;
	struct fc_rdma_async_event ev;
	uint32_t qa, qb;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	assert_int_equal(post_recv(A, qa, 50, 0, 64), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, 16, IOVA, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 2, 0, 16, IOVA, B->k.rkey ^ 0x100), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 3, 0, 16, IOVA, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_READ, 4, 0, 16, IOVA, B->k.rkey), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, FC_WC_REM_ACCESS_ERR);
	assert_int_equal(wc.vendor_err, FC_CMPL_TARGET_NACK_NRE | FC_RDMA_NAK_REM_ACCESS << 8);
	for (uint64_t i = 3; i <= 4; i++) {
		assert_int_equal(poll1(A, A->scq, &wc), 1);
		assert_int_equal(wc.wr_id, i);
		assert_int_equal(wc.status, FC_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(poll1(A, A->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 50);
	assert_int_equal(wc.status, FC_WC_WR_FLUSH_ERR);
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_ERR);
	assert_int_equal(fc_rdma_get_async_event(A->d, &ev), 0);
	assert_int_equal(ev.type, FC_RDMA_EV_QP_FATAL);
	/* the failed WRITE was refused with NRE (verbs); the READ issued behind it was
	 * answered, but a flushed WR places nothing */
	assert_int_equal(count_log(1, FC_PKT_NACK, FC_NACK_NRE), 1);
	assert_int_equal(A->mem[0], 0);
}

static void test_cie_mode_continues(void **state)
{
	struct fc_rdma_wc wc;
	uint32_t qa, qb;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_WEAK, FC_RDMA_MODE_CIE, &qa, &qb);
	fill(A, 0, 3000, 1);
	/* a WRITE running off the end of B's region: refused whole (every push's RETH
	 * runs to the bad end, seg.h), nothing placed, the WR fails; the QP goes on */
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, 3000, IOVA + MEM - 2048, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 2, 0, 3000, IOVA + 100, B->k.rkey), 0);
	run();
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, FC_WC_REM_ACCESS_ERR);
	assert_int_equal(wc.vendor_err & 0xFF, FC_CMPL_TARGET_NACK_CIE);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	assert_memory_equal(B->mem + 100, A->mem, 3000);
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_RTS);
	assert_int_equal(count_log(1, FC_PKT_NACK, FC_NACK_CIE), 3); /* every push */
	for (uint32_t i = MEM - 2048; i < MEM; i++)
		assert_int_equal(B->mem[i], 0);
}

/* Complete in error: a WR that fails on its own list when it starts (its source region
 * went while it waited behind a QP with one transaction in flight) completes
 * LOC_PROT_ERR at once, and the WR posted after it still goes (the send pump used to
 * step past it when the failed WR completed inside the pump). */
static void test_cie_local_failure_next_wr_goes(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_wc wc;
	struct fc_mr_keys k2;
	struct fc_sge s2;
	struct fc_rdma_send_wr wr;
	uint32_t qa, qb;

	(void)state;
	conn_pair(0, 1, 0);
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 0);
	a.max_inflight = 1;
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa), 0);
	qp_init(B, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, 0);
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &qb), 0);
	to_rts(A, qa, qb);
	to_rts(B, qb, qa);
	assert_int_equal(fc_mr_reg(A->mrs, A->pd, A->mem + 32768, IOVA + MEM, 4096,
				   FC_MR_ACCESS_ALL, &k2), 0);
	fill(A, 0, 100, 3);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, 100, IOVA, B->k.rkey), 0);
	s2 = (struct fc_sge){ .addr = IOVA + MEM, .len = 100, .lkey = k2.lkey };
	wr = (struct fc_rdma_send_wr){ .wr_id = 2, .opcode = FC_RDMA_WR_WRITE, .num_sge = 1,
				       .sgl = &s2, .remote_addr = IOVA + 1000, .rkey = B->k.rkey };
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 3, 0, 100, IOVA + 200, B->k.rkey), 0);
	assert_int_equal(fc_mr_dereg(A->mrs, A->pd, k2.lkey), 0);
	run();
	for (uint64_t i = 1; i <= 3; i++) {
		assert_int_equal(poll1(A, A->scq, &wc), 1);
		assert_int_equal(wc.wr_id, i);
		assert_int_equal(wc.status, i == 2 ? FC_WC_LOC_PROT_ERR : FC_WC_SUCCESS);
	}
	assert_memory_equal(B->mem + 200, A->mem, 100);
	assert_int_equal(B->mem[1000], 0); /* the failed WR sent nothing */
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_RTS);
}

/* Receive-side errors (mr.h table, RECV site): a bad L_Key in the part of the list the
 * message reaches is REM_OP / LOC_PROT; a message longer than the list is REM_INV_REQ /
 * LOC_LEN, whatever else failed (the length is checked first). Errors consume the WQE;
 * a one-packet message places nothing. */
static void test_recv_errors(void **state)
{
	struct fc_rdma_recv_wr rw;
	struct fc_rdma_wc wc;
	struct fc_sge rs[2];
	uint32_t qa, qb;
	static const uint8_t req[4] = { FC_WC_REM_OP_ERR, FC_WC_REM_INV_REQ_ERR,
					FC_WC_REM_INV_REQ_ERR, FC_WC_SUCCESS };
	static const uint8_t resp[4] = { FC_WC_LOC_PROT_ERR, FC_WC_LOC_LEN_ERR,
					 FC_WC_LOC_LEN_ERR, FC_WC_SUCCESS };

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, &qa, &qb);
	fill(A, 0, 2500, 6);
	memset(&rw, 0, sizeof(rw));
	rw.sgl = rs;
	rw.num_sge = 2;
	/* 0: bad first entry, room enough; 1: room for 2000 of 2500; 2: both; 3: fine, and
	 * an entry the message does not reach has a bad key (not checked) */
	for (int i = 0; i < 4; i++) {
		rs[0] = sge(B, 10000 + 4000 * (uint32_t)i, i == 3 ? 2500 : 1000);
		rs[1] = sge(B, 11000 + 4000 * (uint32_t)i, i == 0 ? 2000 : 1000);
		if (i == 0 || i == 2 || i == 3)
			rs[i == 3 ? 1 : 0].lkey ^= 0x100;
		rw.wr_id = 40 + (uint64_t)i;
		assert_int_equal(fc_rdma_post_recv(B->d, qb, &rw), 0);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, (uint64_t)i, 0, 2500, 0, 0), 0);
	/* and a one-packet SEND into a too short WQE: nothing placed */
	rs[0] = sge(B, 30000, 10);
	rw.num_sge = 1;
	rw.wr_id = 44;
	assert_int_equal(fc_rdma_post_recv(B->d, qb, &rw), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 4, 0, 11, 0, 0), 0);
	run();
	for (int i = 0; i < 4; i++) {
		assert_int_equal(poll1(A, A->scq, &wc), 1);
		assert_int_equal(wc.wr_id, (uint64_t)i);
		assert_int_equal(wc.status, req[i]);
		assert_int_equal(poll1(B, B->rcq, &wc), 1);
		assert_int_equal(wc.wr_id, 40 + (uint64_t)i);
		assert_int_equal(wc.status, resp[i]);
	}
	assert_memory_equal(B->mem + 22000, A->mem, 2500);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_REM_INV_REQ_ERR);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.status, FC_WC_LOC_LEN_ERR);
	for (int i = 0; i < 10; i++)
		assert_int_equal(B->mem[30000 + i], 0);
}

/* IB C9-88: zero-length WRITE and READ check no R_Key; a zero-length SEND consumes a
 * WQE with byte_len 0. One transaction each (6.7, seg.h). */
static void test_zero_length(void **state)
{
	struct fc_rdma_wc wc;
	uint32_t qa, qb;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	assert_int_equal(post_recv(B, qb, 7, 100, 16), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, 0, 0xDEAD0000, 0x5A5A5A5A), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_READ, 2, 0, 0, 0xDEAD0000, 0x5A5A5A5A), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 3, 0, 0, 0, 0), 0);
	run();
	for (uint64_t i = 1; i <= 3; i++) {
		assert_int_equal(poll1(A, A->scq, &wc), 1);
		assert_int_equal(wc.wr_id, i);
		assert_int_equal(wc.status, FC_WC_SUCCESS);
	}
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 0);
	assert_int_equal(count_log(0, FC_PKT_PUSH_DATA, 0), 2);
	assert_int_equal(count_log(0, FC_PKT_PULL_REQ, 0), 1);
}

static int events[8];
static uint32_t event_cq[8];
static uint32_t dead_cid[4];
static int ndead;

static void on_conn_dead(void *ctx, uint32_t cid)
{
	(void)ctx;
	dead_cid[ndead & 3] = cid;
	ndead++;
}

static int drop_pull_data(int from, const struct logent *l)
{
	return from == 1 && l->type == FC_PKT_PULL_DATA;
}

/* A READ whose Pull Data never arrives, while the PDL has nothing outstanding: the
 * transaction times out (section 11 kCmplLocalTO) before any PDL give-up, the QP goes to
 * error, and the I/O shell hears the connection is given up, once, so it tells the peer
 * (which may only have receives posted and would otherwise never notice). */
static void test_txn_timeout_gives_up_conn(void **state)
{
	struct fc_rdma_wc wc;
	struct fc_rdma_cfg rc;
	uint32_t qa, qb;

	(void)state;
	fc_rdma_free(A->d);
	fc_rdma_cfg_default(&rc);
	rc.mtu_bytes = PMTU;
	rc.max_msg_bytes = MEM;
	rc.conn_dead = on_conn_dead;
	A->d = fc_rdma_new(&rc, A->e, A->mrs);
	assert_non_null(A->d);
	assert_int_equal(fc_rdma_cq_create(A->d, 64, &A->scq), 0);
	assert_int_equal(fc_rdma_cq_create(A->d, 64, &A->rcq), 0);
	ndead = 0;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	assert_int_equal(fc_rdma_qp_set_timers(A->d, qa, 20 * MS, 7, 0xFF), 0);
	fill(B, 4000, 64, 5);
	filter = drop_pull_data;
	assert_int_equal(post(A, qa, FC_RDMA_WR_READ, 1, 0, 64, IOVA + 4000, B->k.rkey), 0);
	run_until(now + 10 * MS);
	assert_int_equal(poll1(A, A->scq, &wc), 0); /* half the budget: still waiting */
	assert_int_equal(ndead, 0);
	run_until(now + 100 * MS);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, FC_WC_RETRY_EXC_ERR);
	assert_int_equal(wc.vendor_err, FC_CMPL_LOCAL_TO);
	assert_int_equal(ndead, 1);
	assert_int_equal(dead_cid[0], 10);
	filter = NULL;
}

static int drop_all(int from, const struct logent *l)
{
	(void)from;
	(void)l;
	return 1;
}

/* A four-packet WRITE paced behind a window of 0.02 packets (one packet per 50 ms) into
 * a peer that went silent: the first segment times out one QP budget (20 ms) after it
 * went, and the WR completes RETRY_EXC_ERR then, not after every paced segment has had
 * its own budget (about 170 ms). */
static void test_paced_wr_fails_on_first_timeout(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_wc wc;
	uint32_t qa, qb;
	uint64_t t0;

	(void)state;
	for (int h = 0; h < 2; h++) {
		struct fc_txn_conn_cfg c;

		fc_txn_conn_cfg_default(&c);
		c.pdl.local_cid = h ? 20u : 10u;
		c.pdl.remote_cid = h ? 10u : 20u;
		c.pdl.ordered = 1;
		if (!h) {
			c.pdl.fcwnd_fp = FC_CWND_ONE / 50;
			c.pdl.ipg_ns = 50 * MS;
		}
		HS[h].conn[0] = fc_rdma_conn_open(HS[h].d, &c);
		assert_non_null(HS[h].conn[0]);
	}
	qp_init(A, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 0);
	assert_int_equal(fc_rdma_qp_create(A->d, &a, &qa), 0);
	qp_init(B, &a, FC_RDMA_QPT_RC, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, 0);
	assert_int_equal(fc_rdma_qp_create(B->d, &a, &qb), 0);
	to_rts(A, qa, qb);
	to_rts(B, qb, qa);
	assert_int_equal(fc_rdma_qp_set_timers(A->d, qa, 20 * MS, 7, 0xFF), 0);
	filter = drop_all;
	t0 = now;
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, 4 * PMTU, IOVA + 8192, B->k.rkey), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 2, 0, 8, IOVA + 8192, B->k.rkey), 0);
	run_until(t0 + 30 * MS);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, FC_WC_RETRY_EXC_ERR);
	assert_int_equal(poll1(A, A->scq, &wc), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, FC_WC_WR_FLUSH_ERR);
	/* the abandoned segments' late verdicts complete nothing more */
	run_until(now + 400 * MS);
	assert_int_equal(poll1(A, A->scq, &wc), 0);
	filter = NULL;
}

static void on_cq_event(void *ctx, uint32_t cqn)
{
	int *n = ctx;

	event_cq[*n & 7] = cqn;
	(*n)++;
}

/* RBTH SE (8.2) on the message's last packet -> the receive completion's solicited bit;
 * a CQ armed for solicited completions calls back on those (and on errors) only. */
static void test_solicited_event(void **state)
{
	struct fc_rdma_send_wr wr;
	struct fc_rdma_wc wc;
	struct fc_sge s;
	uint32_t qa, qb;
	int se_pkts = 0;

	(void)state;
	fc_rdma_free(B->d);
	{
		struct fc_rdma_cfg rc;

		fc_rdma_cfg_default(&rc);
		rc.mtu_bytes = PMTU;
		rc.max_msg_bytes = MEM;
		rc.cq_event = on_cq_event;
		rc.ev_ctx = &events[0];
		B->d = fc_rdma_new(&rc, B->e, B->mrs);
		assert_non_null(B->d);
		assert_int_equal(fc_rdma_cq_create(B->d, 64, &B->scq), 0);
		assert_int_equal(fc_rdma_cq_create(B->d, 64, &B->rcq), 0);
	}
	events[0] = 0;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_recv(B, qb, 10 + (uint64_t)i, 1000 * (uint32_t)i, 4096), 0);
	assert_int_equal(fc_rdma_cq_arm(B->d, B->rcq, 1), 0);
	memset(&wr, 0, sizeof(wr));
	wr.num_sge = 1;
	wr.sgl = &s;
	s = sge(A, 0, 100);
	wr.wr_id = 1;
	wr.opcode = FC_RDMA_WR_SEND;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	s = sge(A, 0, 2 * PMTU + 10); /* three packets: SE on the last only */
	wr.wr_id = 2;
	wr.flags = FC_RDMA_WR_SOLICITED;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	s = sge(A, 0, 8);
	wr.wr_id = 3;
	wr.opcode = FC_RDMA_WR_WRITE_IMM;
	wr.remote_addr = IOVA + 20000;
	wr.rkey = B->k.rkey;
	assert_int_equal(fc_rdma_post_send(A->d, qa, &wr, now), 0);
	filter = NULL;
	run();
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.flags & FC_RDMA_WC_F_SOLICITED, 0);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.flags & FC_RDMA_WC_F_SOLICITED, FC_RDMA_WC_F_SOLICITED);
	assert_int_equal(poll1(B, B->rcq, &wc), 1);
	assert_int_equal(wc.opcode, FC_RDMA_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.flags & FC_RDMA_WC_F_SOLICITED, FC_RDMA_WC_F_SOLICITED);
	/* the arm fired once, on the first solicited completion */
	assert_int_equal(events[0], 1);
	assert_int_equal(event_cq[0], B->rcq);
	/* SE only on SEND Last (0x02) of WR 2 and WRITE Only with Immediate (0x0B) of WR 3 */
	for (int i = 0; i < nlog; i++)
		if (plog[i].from == 0 && plog[i].has_rdma && plog[i].se) {
			assert_true(plog[i].opcode == 0x02 || plog[i].opcode == 0x0B);
			se_pkts++;
		}
	assert_int_equal(se_pkts, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_qp_state_machine, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_create_validation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_at_rtr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_validation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_read_send_strong, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rmsn_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cq_overflow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cq_overflow_error_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_retry_exhausted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_infinite_then_posted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cid_check_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cid_check_response, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ud_qkey_and_dispatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xrc_srq_routing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rc_srq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_invalidate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_verbs_mode_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cie_mode_continues, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cie_local_failure_next_wr_goes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_recv_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_length, setup, teardown),
		cmocka_unit_test_setup_teardown(test_solicited_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_txn_timeout_gives_up_conn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paced_wr_fails_on_first_timeout, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
