/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transaction sublayer (spec section 8, section 11) driven by hand: two engines (hosts A
 * and B) with one connection each, more where the scheduler is tested; a wire with a
 * latency, a per-packet filter (drop, delay, rewrite) and a log; virtual time.
 *
 * The deadlock tests run each forward-progress rule of 8.2.1 both ways: kept (every
 * transaction completes) and broken on purpose with an FC_TXN_DBG_ switch (nothing
 * completes, though the run goes on long after the kept case finished).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "txn.h"
#include "txn_test.h"
#include "wire_falcon.h"

#define MTU 1024
#define CELL 256
#define US 1000ull
#define MS 1000000ull
#define MAXNET 8192
#define MAXREC 1024
#define MAXLOG 8192
#define BUFCAP (MTU + FC_FALCON_HDR_MAX + 64)
#define DROP (-1)
#define PULLREQ_KIND 7 /* pattern key of pull request bytes */

struct host;
typedef void (*req_fn)(struct host *h, const struct fc_txn_req *r);

struct cmpl_rec {
	uint64_t cookie;
	uint32_t rsn, len;
	uint8_t kind, code, ulp_code, rejected, state;
	int data_ok;
};

struct req_rec {
	uint32_t rsn, len, resp_len, redelivery;
	uint8_t kind;
	int data_ok;
};

struct host {
	int id;
	struct fc_txn_engine *e;
	struct fc_txn *t;
	struct fc_txn *cur;      /* connection of the request being answered */
	req_fn on_req;
	struct cmpl_rec c[MAXREC];
	int nc;
	struct req_rec r[MAXREC];
	int nr;
	int credits_calls, dead_calls;
	/* ULP script */
	int hold;                /* do not answer: remember the RSNs */
	uint32_t held[MAXREC];
	int nheld;
	uint8_t rnr_code;        /* ulp_rnr_rsn1 */
	uint8_t nack_code, nack_ulp;
	uint32_t pend[MAXREC];   /* Pull Data refused with -EAGAIN, to retry */
	uint32_t pend_len[MAXREC];
	int npend;
	int flag;                /* test-specific */
};

static struct host *H[2];
#define A (H[0])
#define B (H[1])
static uint64_t now;
static uint64_t lat = 1 * US;

/* Wire filter: may rewrite the packet (b, *len); returns DROP or an extra delay. */
typedef int64_t (*filter_fn)(int from, const struct fc_falcon_pkt *f, uint8_t *b, uint32_t *len);
static filter_fn filter;
static uint32_t engine_dbg; /* FC_TXN_DBG_* for the engines setup makes (txn_test.h) */

struct npkt {
	uint64_t at, seq;
	int to;
	uint32_t len;
	uint8_t b[BUFCAP];
};
static struct npkt *net;
static int nnet;
static uint64_t nseq;

struct logent {
	int from;
	uint8_t type, code;
	uint8_t rxbuf;           /* ACK/NACK: the quantized buffer level carried (10.2) */
	uint32_t psn, rsn;
};
static struct logent plog[MAXLOG];
static int nlog;
static int nth_type[2][16]; /* packets of each type sent so far, per host */

/* ------------------------------------------------------------------------ */
/* data patterns: bytes of (host, rsn, kind), independent of the code under test */


/* ------------------------------------------------------------------------ */
/* ULP                                                                       */

static void answer_pull(struct host *h, uint32_t rsn, uint32_t len)
{
	uint8_t b[MTU];
	int rc;

	fc_test_fill(b, len, h->id, rsn, FC_TXN_PULL);
	rc = fc_txn_pull_data(h->cur, rsn, b, len, now);
	if (rc == -EAGAIN) {
		h->pend[h->npend] = rsn;
		h->pend_len[h->npend++] = len;
		return;
	}
	assert_int_equal(rc, 0);
}

static void retry_pending(struct host *h)
{
	int k = h->npend;

	h->npend = 0;
	for (int i = 0; i < k; i++)
		answer_pull(h, h->pend[i], h->pend_len[i]);
}

/* The default ULP: accept; a pull gets its Pull Data at once. */
static void ulp_default(struct host *h, const struct fc_txn_req *r)
{
	if (h->hold) {
		h->held[h->nheld++] = r->rsn;
		return;
	}
	if (h->nack_code && r->kind == FC_TXN_PUSH) {
		assert_int_equal(fc_txn_nack(h->cur, r->rsn, h->nack_code, h->nack_ulp, now), 0);
		return;
	}
	assert_int_equal(fc_txn_accept(h->cur, r->rsn, now), 0);
	if (r->kind == FC_TXN_PULL)
		answer_pull(h, r->rsn, r->resp_len);
}

static void cb_complete(void *ctx, struct fc_txn *t, const struct fc_txn_cmpl *c)
{
	struct host *h = ctx;
	struct cmpl_rec *x;

	assert_true(h->nc < MAXREC);
	x = &h->c[h->nc++];
	x->cookie = c->cookie;
	x->rsn = c->rsn;
	x->len = c->len;
	x->kind = c->kind;
	x->code = c->code;
	x->ulp_code = c->ulp_code;
	x->rejected = c->rejected;
	x->state = c->rejected ? 0 : (uint8_t)fc_txn_istate(t, c->rsn);
	x->data_ok = c->kind != FC_TXN_PULL || c->code != FC_CMPL_ACK ||
		     fc_test_check(c->data, c->len, 1 - h->id, c->rsn, FC_TXN_PULL);
}

static void cb_request(void *ctx, struct fc_txn *t, const struct fc_txn_req *r)
{
	struct host *h = ctx;
	struct req_rec *x;

	(void)t;
	assert_true(h->nr < MAXREC);
	x = &h->r[h->nr++];
	x->rsn = r->rsn;
	x->len = r->len;
	x->resp_len = r->resp_len;
	x->redelivery = r->redelivery;
	x->kind = r->kind;
	x->data_ok = fc_test_check(r->data, r->len, 1 - h->id, r->rsn,
			   r->kind == FC_TXN_PUSH ? FC_TXN_PUSH : PULLREQ_KIND);
	h->cur = t;
	h->on_req(h, r);
}

static void cb_credits(void *ctx, struct fc_txn *t)
{
	struct host *h = ctx;

	(void)t;
	h->credits_calls++;
}

static void cb_dead(void *ctx, struct fc_txn *t, int reason)
{
	struct host *h = ctx;

	(void)t;
	(void)reason;
	h->dead_calls++;
}

static const struct fc_txn_ops ops = {
	.complete = cb_complete, .request = cb_request, .credits = cb_credits, .dead = cb_dead,
};

/* ------------------------------------------------------------------------ */
/* the wire and the clock                                                    */

static void send_pkt(int from, uint8_t *b, uint32_t len)
{
	struct fc_falcon_pkt f;
	struct npkt *p;
	int64_t extra = 0;

	assert_true(fc_falcon_decode(b, len, &f) >= 0);
	if (nlog < MAXLOG)
		plog[nlog++] = (struct logent){
			.from = from, .type = (uint8_t)f.type, .rsn = f.rsn,
			.psn = f.type == FC_PKT_NACK ? f.nack_psn : f.psn,
			.code = f.type == FC_PKT_NACK ? f.nack_code :
				f.type == FC_PKT_RESYNC ? f.resync_code : 0,
			.rxbuf = f.rxbuf,
		};
	if (filter)
		extra = filter(from, &f, b, &len);
	nth_type[from][f.type & 15]++;
	if (extra == DROP)
		return;
	assert_true(nnet < MAXNET);
	p = &net[nnet++];
	p->at = now + lat + (uint64_t)extra;
	p->seq = nseq++;
	p->to = 1 - from;
	p->len = len;
	memcpy(p->b, b, len);
}

static void poll_host(struct host *h)
{
	uint8_t buf[BUFCAP];
	struct fc_txn *from;
	int n;

	retry_pending(h);
	while ((n = fc_txn_engine_poll_tx(h->e, now, buf, sizeof(buf), &from)) > 0)
		send_pkt(h->id, buf, (uint32_t)n);
	assert_true(n == 0);
}

static uint64_t next_event(void)
{
	uint64_t t = UINT64_MAX;

	for (int i = 0; i < nnet; i++)
		if (net[i].at < t)
			t = net[i].at;
	for (int i = 0; i < 2; i++) {
		uint64_t d = fc_txn_engine_next_deadline(H[i]->e);

		if (d < t)
			t = d;
	}
	return t;
}

/* Deliver every packet due, earliest first (ties: sending order). */
static void deliver_due(void)
{
	for (;;) {
		int best = -1;
		struct npkt p;

		for (int i = 0; i < nnet; i++)
			if (net[i].at <= now && (best < 0 || net[i].at < net[best].at ||
			    (net[i].at == net[best].at && net[i].seq < net[best].seq)))
				best = i;
		if (best < 0)
			return;
		p = net[best];
		net[best] = net[--nnet];
		assert_int_equal(fc_txn_engine_rx(H[p.to]->e, p.b, p.len, now, now), 0);
	}
}

/* Run until nothing is left to do or until `until`. */
static void run(uint64_t until)
{
	for (int it = 0; it < 2000000; it++) {
		uint64_t t;

		poll_host(A);
		poll_host(B);
		t = next_event();
		if (t == UINT64_MAX)
			return;
		if (t > until) {
			now = until;
			return;
		}
		if (t > now)
			now = t;
		deliver_due();
		for (int i = 0; i < 2; i++)
			if (fc_txn_engine_next_deadline(H[i]->e) <= now)
				fc_txn_engine_on_timer(H[i]->e, now);
	}
	fail_msg("the run did not settle");
}

/* ------------------------------------------------------------------------ */
/* setup                                                                     */

typedef void (*etweak_fn)(struct fc_txn_engine_cfg *c, int host);
typedef void (*ctweak_fn)(struct fc_txn_conn_cfg *c, int host);

static void base_engine_cfg(struct fc_txn_engine_cfg *c)
{
	fc_txn_engine_cfg_default(c);
	c->max_conns = 4;
	c->mtu_bytes = MTU;
	c->tx_cell_bytes = c->rx_cell_bytes = CELL;
	for (int i = 0; i < FC_TXN_RES_COUNT; i++)
		c->cap[i] = 256;
	c->cap[FC_TXN_REQ_BUF_TX] = c->cap[FC_TXN_DATA_BUF_TX] = 1024;
	c->cap[FC_TXN_REQ_BUF_RX] = c->cap[FC_TXN_NET_BUF_RX] = 1024;
	c->red_pkts = 4;
	c->red_cells = 8;
	c->txn_timeout_ns = 0;
}

/* A is CID 1, B CID 2; request windows start at PSN 100, data windows at 300, RSNs at 1,
 * as in spec 6.6. */
static void base_conn_cfg(struct fc_txn_conn_cfg *c, int host)
{
	fc_txn_conn_cfg_default(c);
	c->pdl.local_cid = (uint32_t)host + 1;
	c->pdl.remote_cid = (uint32_t)(1 - host) + 1;
	c->pdl.tx_psn[FC_WIN_REQ] = c->pdl.rx_psn[FC_WIN_REQ] = 100;
	c->pdl.tx_psn[FC_WIN_DATA] = c->pdl.rx_psn[FC_WIN_DATA] = 300;
	c->rsn_tx = c->rsn_rx = 1;
}

static void setup(etweak_fn et, ctweak_fn ct)
{
	now = 0;
	lat = 1 * US;
	filter = NULL;
	engine_dbg = 0;
	nnet = nlog = 0;
	nseq = 0;
	memset(nth_type, 0, sizeof(nth_type));
	net = calloc(MAXNET, sizeof(*net));
	assert_non_null(net);
	for (int i = 0; i < 2; i++) {
		struct fc_txn_engine_cfg ec;
		struct fc_txn_conn_cfg cc;

		H[i] = calloc(1, sizeof(*H[i]));
		assert_non_null(H[i]);
		H[i]->id = i;
		H[i]->on_req = ulp_default;
		base_engine_cfg(&ec);
		if (et)
			et(&ec, i);
		H[i]->e = fc_txn_engine_new_dbg(&ec, engine_dbg);
		assert_non_null(H[i]->e);
		base_conn_cfg(&cc, i);
		if (ct)
			ct(&cc, i);
		H[i]->t = H[i]->cur = fc_txn_conn_new(H[i]->e, &cc, &ops, H[i]);
		assert_non_null(H[i]->t);
	}
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++) {
		fc_txn_engine_free(H[i]->e);
		free(H[i]);
	}
	free(net);
	net = NULL;
}

static uint32_t push(struct host *h, uint32_t len)
{
	uint8_t b[MTU];
	uint32_t rsn = fc_txn_nrsn(h->t), got = 0;

	fc_test_fill(b, len, h->id, rsn, FC_TXN_PUSH);
	assert_int_equal(fc_txn_push(h->t, b, len, 0x1000 + rsn, now, &got), 0);
	assert_int_equal(got, rsn);
	return rsn;
}

static uint32_t pull(struct host *h, uint32_t resp_len)
{
	uint8_t b[16];
	uint32_t rsn = fc_txn_nrsn(h->t), got = 0;

	fc_test_fill(b, sizeof(b), h->id, rsn, PULLREQ_KIND);
	assert_int_equal(fc_txn_pull(h->t, b, sizeof(b), resp_len, 0x2000 + rsn, now, &got), 0);
	assert_int_equal(got, rsn);
	return rsn;
}

static void assert_all_returned(void)
{
	for (int i = 0; i < 2; i++)
		for (int r = 0; r < FC_TXN_RES_COUNT; r++) {
			assert_int_equal(fc_txn_used(H[i]->t, (enum fc_txn_res)r), 0);
			assert_int_equal(fc_txn_engine_used(H[i]->e, (enum fc_txn_res)r), 0);
		}
}

static const struct fc_txn_counters *CNT(struct host *h) { return fc_txn_counters(h->t); }

/* ------------------------------------------------------------------------ */
/* life of a push and a pull; credits of the 8.2.3 table                      */

static void credit_limits(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->limit[FC_TXN_REQ_PKT_TX] = 8;
	c->limit[FC_TXN_REQ_BUF_TX] = 32;
	c->limit[FC_TXN_REQ_PKT_RX] = 8;
	c->limit[FC_TXN_REQ_BUF_RX] = 32;
	c->limit[FC_TXN_DATA_PKT_TX] = 8;
	c->limit[FC_TXN_DATA_BUF_TX] = 32;
}

static void assert_credits(struct host *h, uint32_t a, uint32_t b, uint32_t c, uint32_t d,
			   uint32_t e, uint32_t f)
{
	uint32_t cr[FC_TXN_ULP_CREDITS];

	fc_txn_credits(h->t, cr);
	assert_int_equal(cr[0], a);
	assert_int_equal(cr[1], b);
	assert_int_equal(cr[2], c);
	assert_int_equal(cr[3], d);
	assert_int_equal(cr[4], e);
	assert_int_equal(cr[5], f);
}

static void test_push_life_and_credits(void **state)
{
	(void)state;
	setup(NULL, credit_limits);
	B->hold = 1;
	assert_credits(A, 8, 32, 8, 32, 8, 32);
	assert_int_equal(push(A, 1000), 1); /* NRSN starts at the CM's 1 (8.4.1) */
	/* 8.2.3 push row: Req Pkt Tx 1, Req Buf Tx ceil(1000/256) = 4, Req Pkt Rx 1 */
	assert_credits(A, 7, 28, 7, 32, 8, 32);
	assert_int_equal(fc_txn_istate(A->t, 1), FC_TXN_PUSH_REQ_ULP_RX);
	assert_int_equal(fc_txn_nrsn(A->t), 2);
	assert_int_equal(fc_txn_brsn(A->t), 1);
	run(5 * US);
	assert_int_equal(fc_txn_istate(A->t, 1), FC_TXN_PUSH_DATA_TX);
	assert_int_equal(B->nr, 1);
	assert_true(B->r[0].data_ok);
	assert_int_equal(B->r[0].len, 1000);
	assert_int_equal(fc_txn_tstate(B->t, 1), FC_TXN_PUSH_REQ_ULP_TX);
	/* 8.2.4 push row: Net Req Pkt Rx 1, Net Req Buf Rx ceil(1000/256) = 4 */
	assert_int_equal(fc_txn_used(B->t, FC_TXN_NET_PKT_RX), 1);
	assert_int_equal(fc_txn_used(B->t, FC_TXN_NET_BUF_RX), 4);
	assert_int_equal(fc_txn_target_brsn(B->t), 1);
	assert_int_equal(fc_txn_target_nrsn(B->t), 2);
	assert_int_equal(A->nc, 0); /* not acknowledged before the ULP accepts (8.1) */
	assert_int_equal(fc_txn_accept(B->t, 1, now), 0);
	assert_int_equal(fc_txn_tstate(B->t, 1), FC_TXN_PUSH_REQ_ULP_ACKD);
	assert_int_equal(fc_txn_used(B->t, FC_TXN_NET_BUF_RX), 0);
	assert_int_equal(fc_txn_accept(B->t, 1, now), -ENOENT); /* answered once */
	run(100 * US);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_ACK);
	assert_int_equal(A->c[0].rsn, 1);
	assert_int_equal(A->c[0].cookie, 0x1001);
	assert_int_equal(A->c[0].kind, FC_TXN_PUSH);
	assert_int_equal(A->c[0].state, FC_TXN_PUSH_CPL_TX);
	assert_int_equal(fc_txn_brsn(A->t), 2);
	assert_credits(A, 8, 32, 8, 32, 8, 32);
	assert_all_returned();
	teardown();
}

static void test_pull_life_and_credits(void **state)
{
	uint32_t rsn;

	(void)state;
	setup(NULL, credit_limits);
	B->hold = 1;
	rsn = pull(A, 600);
	/* 8.2.3 pull row: Req Pkt Tx 1, Req Buf Tx 1, Req Pkt Rx 1, Req Buf Rx ceil(600/256) = 3 */
	assert_credits(A, 7, 31, 7, 29, 8, 32);
	assert_int_equal(fc_txn_istate(A->t, rsn), FC_TXN_PULL_REQ_ULP_RX);
	run(50 * US);
	/* acknowledged on receipt by the target; the Tx resources come back, Rx stay */
	assert_int_equal(fc_txn_istate(A->t, rsn), FC_TXN_PULL_REQ_ACKD);
	assert_credits(A, 8, 32, 7, 29, 8, 32);
	assert_int_equal(B->nr, 1);
	assert_int_equal(B->r[0].kind, FC_TXN_PULL);
	assert_int_equal(B->r[0].resp_len, 600);
	assert_true(B->r[0].data_ok);
	assert_int_equal(fc_txn_tstate(B->t, rsn), FC_TXN_PULL_REQ_ULP_TX);
	/* 8.2.4 pull row: Net Req Pkt Rx 1, Net Req Buf Rx 1 */
	assert_int_equal(fc_txn_used(B->t, FC_TXN_NET_PKT_RX), 1);
	assert_int_equal(fc_txn_used(B->t, FC_TXN_NET_BUF_RX), 1);
	assert_int_equal(fc_txn_pull_data(B->t, rsn, NULL, 0, now), -ENOENT); /* not accepted */
	assert_int_equal(fc_txn_accept(B->t, rsn, now), 0);
	assert_int_equal(fc_txn_tstate(B->t, rsn), FC_TXN_PULL_REQ_ULP_ACKD);
	assert_int_equal(fc_txn_used(B->t, FC_TXN_NET_PKT_RX), 0);
	{
		uint8_t b[MTU];

		fc_test_fill(b, 601, B->id, rsn, FC_TXN_PULL);
		assert_int_equal(fc_txn_pull_data(B->t, rsn, b, 601, now), -EMSGSIZE);
		assert_int_equal(fc_txn_pull_data(B->t, rsn, b, 600, now), 0);
	}
	/* 8.2.3 pull response row: Data Pkt Tx 1, Data Buf Tx ceil(600/256) = 3 */
	assert_credits(B, 8, 32, 8, 32, 7, 29);
	assert_int_equal(fc_txn_tstate(B->t, rsn), FC_TXN_PULL_DATA_ULP_RX);
	{
		uint8_t buf[BUFCAP];
		struct fc_txn *from = NULL;
		int n = fc_txn_engine_poll_tx(B->e, now, buf, sizeof(buf), &from);

		assert_true(n > 0);
		assert_ptr_equal(from, B->t);
		assert_int_equal(fc_txn_tstate(B->t, rsn), FC_TXN_PULL_DATA_TX);
		send_pkt(1, buf, (uint32_t)n);
	}
	run(200 * US);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_ACK);
	assert_int_equal(A->c[0].len, 600);
	assert_true(A->c[0].data_ok);
	assert_int_equal(A->c[0].state, FC_TXN_PULL_DATA_ULP_TX);
	assert_int_equal(fc_txn_tstate(B->t, rsn), FC_TXN_PULL_DATA_ACKD);
	assert_credits(A, 8, 32, 8, 32, 8, 32);
	assert_credits(B, 8, 32, 8, 32, 8, 32);
	assert_all_returned();
	teardown();
}

/* ------------------------------------------------------------------------ */
/* ordering (8.4.2, 8.5.2)                                                    */

/* B accepts pulls but keeps their data back (flag = 1); pushes are accepted. */
static void ulp_pull_later(struct host *h, const struct fc_txn_req *r)
{
	assert_int_equal(fc_txn_accept(h->t, r->rsn, now), 0);
	if (r->kind == FC_TXN_PULL)
		h->held[h->nheld++] = r->rsn;
}

static void unordered(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->pdl.ordered = 0;
}

static void run_completion_order(int ordered)
{
	setup(NULL, ordered ? NULL : unordered);
	B->on_req = ulp_pull_later;
	pull(A, 300);
	push(A, 100);
	push(A, 200);
	run(200 * US);
	assert_int_equal(B->nr, 3);
	if (ordered) {
		/* both pushes acknowledged, their completions wait for the pull (8.4.2) */
		assert_int_equal(A->nc, 0);
		assert_int_equal(fc_txn_istate(A->t, 2), FC_TXN_PUSH_DATA_ACKD);
		assert_int_equal(fc_txn_istate(A->t, 3), FC_TXN_PUSH_DATA_ACKD);
	} else {
		assert_int_equal(A->nc, 2);
		assert_int_equal(A->c[0].rsn, 2);
		assert_int_equal(A->c[1].rsn, 3);
	}
	answer_pull(B, 1, 300);
	run(400 * US);
	assert_int_equal(A->nc, 3);
	if (ordered) {
		assert_int_equal(A->c[0].rsn, 1);
		assert_int_equal(A->c[1].rsn, 2);
		assert_int_equal(A->c[2].rsn, 3);
	} else {
		assert_int_equal(A->c[2].rsn, 1);
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(A->c[i].code, FC_CMPL_ACK);
		assert_true(A->c[i].data_ok);
	}
	assert_all_returned();
	teardown();
}

static void test_ordered_completions(void **state) { (void)state; run_completion_order(1); }
static void test_unordered_completions(void **state) { (void)state; run_completion_order(0); }

/* Pull Data in reverse order: the later one is stored in the reserved Rx cells and
 * handed out intact after the first (8.4.3.2). */
static void test_pull_data_reordered(void **state)
{
	(void)state;
	setup(NULL, NULL);
	B->on_req = ulp_pull_later;
	pull(A, 1000);
	pull(A, 700);
	run(100 * US);
	assert_int_equal(B->nheld, 2);
	answer_pull(B, 2, 700);
	run(200 * US);
	assert_int_equal(A->nc, 0);
	assert_int_equal(fc_txn_istate(A->t, 2), FC_TXN_PULL_DATA_RX);
	answer_pull(B, 1, 1000);
	run(400 * US);
	assert_int_equal(A->nc, 2);
	assert_int_equal(A->c[0].rsn, 1);
	assert_int_equal(A->c[0].len, 1000);
	assert_int_equal(A->c[1].rsn, 2);
	assert_int_equal(A->c[1].len, 700);
	assert_true(A->c[0].data_ok && A->c[1].data_ok);
	assert_all_returned();
	teardown();
}

/* The network swaps two Push Data: B holds RSN 2 in its Rx cells until RSN 1 arrives
 * (8.5.2, 6.6.2 step 3). */
static int64_t delay_psn300(int from, const struct fc_falcon_pkt *f, uint8_t *b, uint32_t *len)
{
	(void)b;
	(void)len;
	return from == 0 && f->type == FC_PKT_PUSH_DATA && f->psn == 300 &&
	       nth_type[0][FC_PKT_PUSH_DATA] == 0 ? (int64_t)(10 * US) : 0;
}

static void test_target_reorders_push(void **state)
{
	(void)state;
	setup(NULL, NULL);
	filter = delay_psn300;
	push(A, 1000);
	push(A, 900);
	run(5 * US);
	assert_int_equal(B->nr, 0);
	assert_int_equal(fc_txn_tstate(B->t, 2), FC_TXN_PUSH_DATA_RX);
	assert_int_equal(fc_txn_used(B->t, FC_TXN_NET_BUF_RX), 4); /* 900 bytes in cells */
	run(100 * US);
	assert_int_equal(B->nr, 2);
	assert_int_equal(B->r[0].rsn, 1);
	assert_int_equal(B->r[1].rsn, 2);
	assert_true(B->r[0].data_ok && B->r[1].data_ok);
	assert_int_equal(CNT(B)->held, 1);
	assert_int_equal(A->nc, 2);
	assert_all_returned();
	teardown();
}

/* Memory by use: both transaction tables start at 16 entries and double as needed, up
 * to max_txns / max_rx_txns (256). 100 pushes outstanding: the initiator table grows to
 * 128. Ordered: the first push is late, so the target holds the other 99 by RSN (its
 * table must reach 99 past NRSN); unordered: the target ULP holds every answer (100 busy
 * slots). Every push is delivered once with its bytes, completes in order (ordered), and
 * every resource comes back. */
static void wide_window(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->pdl.fcwnd_fp = 128 * FC_CWND_ONE;
	c->pdl.ncwnd = 128;
	c->pdl_push_max = 128; /* all 100 in the PDL at once */
}

static void wide_unordered(struct fc_txn_conn_cfg *c, int host)
{
	wide_window(c, host);
	c->pdl.ordered = 0;
}

static void run_tables_grow(int ordered)
{
	setup(NULL, ordered ? wide_window : wide_unordered);
	if (ordered)
		filter = delay_psn300;
	else
		B->hold = 1;
	for (int i = 0; i < 100; i++)
		push(A, 100);
	assert_int_equal(CNT(A)->tbl_grows, 3); /* 16 -> 32 -> 64 -> 128 */
	run(100 * US);
	if (!ordered) {
		assert_int_equal(B->nheld, 100);
		assert_int_equal(A->nc, 0);
		B->hold = 0;
		for (int k = 0; k < B->nheld; k++)
			assert_int_equal(fc_txn_accept(B->t, B->held[k], now), 0);
		run(200 * US);
	}
	assert_int_equal(CNT(B)->tbl_grows, 3);
	assert_int_equal(CNT(A)->tbl_grow_fail + CNT(B)->tbl_grow_fail, 0);
	if (ordered)
		assert_int_equal(CNT(B)->held, 99);
	assert_int_equal(B->nr, 100);
	assert_int_equal(A->nc, 100);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(B->r[i].rsn, (uint32_t)i + 1);
		assert_true(B->r[i].data_ok);
		assert_int_equal(A->c[i].code, FC_CMPL_ACK);
		if (ordered)
			assert_int_equal(A->c[i].rsn, (uint32_t)i + 1);
	}
	assert_all_returned();
	teardown();
}

static void test_tables_grow_ordered(void **state) { (void)state; run_tables_grow(1); }
static void test_tables_grow_unordered(void **state) { (void)state; run_tables_grow(0); }

/* RSNs wrap modulo 2^32 (8.4.1). */
static void wrap_rsn(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->rsn_tx = c->rsn_rx = 0xFFFFFFFEu;
}

static void test_rsn_wrap(void **state)
{
	uint32_t want[4] = { 0xFFFFFFFEu, 0xFFFFFFFFu, 0, 1 };

	(void)state;
	setup(NULL, wrap_rsn);
	filter = delay_psn300;
	push(A, 10);
	pull(A, 20);
	push(A, 30);
	pull(A, 40);
	run(MS);
	assert_int_equal(A->nc, 4);
	assert_int_equal(B->nr, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(A->c[i].rsn, want[i]);
		assert_int_equal(B->r[i].rsn, want[i]);
		assert_int_equal(A->c[i].code, FC_CMPL_ACK);
		assert_true(A->c[i].data_ok);
	}
	assert_int_equal(fc_txn_brsn(A->t), 2);
	assert_all_returned();
	teardown();
}

/* ------------------------------------------------------------------------ */
/* Pull Data lengths (8.4.3.2, section 11 note 2) and pull CIE (8.5.3.5)         */

static int len_delta;
static int64_t rewrite_pull_data(int from, const struct fc_falcon_pkt *f, uint8_t *b, uint32_t *len)
{
	if (from != 1 || f->type != FC_PKT_PULL_DATA)
		return 0;
	if (len_delta > 0)
		memset(b + *len, 0xAB, (size_t)len_delta);
	*len = (uint32_t)((int)*len + len_delta);
	return 0;
}

static void run_pull_len(int delta, uint8_t want_code, uint32_t want_len)
{
	setup(NULL, NULL);
	filter = rewrite_pull_data;
	len_delta = delta;
	pull(A, 600);
	run(MS);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, want_code);
	assert_int_equal(A->c[0].len, want_len);
	if (want_code == FC_CMPL_ACK)
		assert_true(A->c[0].data_ok);
	assert_int_equal(CNT(A)->pull_data_long, delta > 0);
	assert_all_returned();
	teardown();
}

static void test_pull_data_longer_op_err(void **state) { (void)state; run_pull_len(10, FC_CMPL_OP_ERR, 0); }
static void test_pull_data_shorter_ok(void **state) { (void)state; run_pull_len(-100, FC_CMPL_ACK, 500); }
static void test_pull_data_empty_cie(void **state)
{
	(void)state;
	run_pull_len(-600, FC_CMPL_TARGET_NACK_CIE, 0);
}

/* The target ULP completes a pull in error with zero-length Pull Data (8.5.3.5). */
static void ulp_pull_cie(struct host *h, const struct fc_txn_req *r)
{
	assert_int_equal(fc_txn_nack(h->t, r->rsn, FC_NACK_CIE, 1, now), -EINVAL);
	assert_int_equal(fc_txn_nack(h->t, r->rsn, FC_NACK_NRE, 1, now), -EINVAL);
	assert_int_equal(fc_txn_accept(h->t, r->rsn, now), 0);
	assert_int_equal(fc_txn_pull_data(h->t, r->rsn, NULL, 0, now), 0);
}

static void test_pull_cie_zero_length(void **state)
{
	(void)state;
	setup(NULL, NULL);
	B->on_req = ulp_pull_cie;
	pull(A, 512);
	run(MS);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_TARGET_NACK_CIE);
	assert_int_equal(A->c[0].len, 0);
	assert_all_returned();
	teardown();
}

/* ------------------------------------------------------------------------ */
/* push NACKs: completion codes of section 11                                 */

static void run_push_nack(uint8_t nack, uint8_t want)
{
	setup(NULL, NULL);
	B->nack_code = nack;
	B->nack_ulp = 0x33;
	push(A, 100);
	push(A, 100);
	run(1 * US);
	assert_int_equal(fc_txn_tstate(B->t, 1), FC_TXN_T_NACKED);
	assert_int_equal(fc_txn_used(B->t, FC_TXN_NET_PKT_RX), 0); /* reclaimed at once */
	run(MS);
	assert_int_equal(A->nc, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(A->c[i].rsn, (uint32_t)i + 1);
		assert_int_equal(A->c[i].code, want);
		assert_int_equal(A->c[i].ulp_code, 0x33);
	}
	assert_int_equal(CNT(B)->resync_rx, 2); /* 9.2.4: the Resync moved B's window */
	assert_int_equal(fc_txn_tstate(B->t, 1), FC_TXN_T_FREE);
	assert_int_equal(CNT(A)->cmpl[want], 2);
	assert_all_returned();
	teardown();
}

static void test_push_nack_cie(void **state) { (void)state; run_push_nack(FC_NACK_CIE, FC_CMPL_TARGET_NACK_CIE); }
static void test_push_nack_nre(void **state) { (void)state; run_push_nack(FC_NACK_NRE, FC_CMPL_TARGET_NACK_NRE); }
static void test_push_nack_cid(void **state)
{
	(void)state;
	run_push_nack(FC_NACK_INVALID_CID, FC_CMPL_TARGET_NACK_CID);
}

/* 6.6.5: the CIE NACK is lost; the retransmission gets the same NACK again. */
static int64_t drop_first_nack(int from, const struct fc_falcon_pkt *f, uint8_t *b, uint32_t *len)
{
	(void)b;
	(void)len;
	return from == 1 && f->type == FC_PKT_NACK && nth_type[1][FC_PKT_NACK] == 0 ? DROP : 0;
}

static void test_push_cie_nack_lost(void **state)
{
	int pushes = 0, resyncs = 0;

	(void)state;
	setup(NULL, NULL);
	filter = drop_first_nack;
	B->nack_code = FC_NACK_CIE;
	B->nack_ulp = 0x5A;
	push(A, 100);
	run(10 * MS);
	assert_int_equal(B->nr, 1); /* the ULP saw it once; Falcon repeated its answer */
	assert_int_equal(CNT(B)->renack, 1);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_TARGET_NACK_CIE);
	assert_int_equal(A->c[0].ulp_code, 0x5A);
	for (int i = 0; i < nlog; i++) {
		if (plog[i].from == 0 && plog[i].type == FC_PKT_PUSH_DATA) {
			assert_int_equal(plog[i].psn, 300);
			pushes++;
		}
		if (plog[i].from == 0 && plog[i].type == FC_PKT_RESYNC) {
			assert_int_equal(plog[i].psn, 300);
			assert_int_equal(plog[i].code, FC_RESYNC_TARGET_CIE);
			resyncs++;
		}
	}
	assert_int_equal(pushes, 2);
	assert_int_equal(resyncs, 1);
	assert_all_returned();
	teardown();
}

/* ------------------------------------------------------------------------ */
/* RNR (8.5.3.4)                                                              */

static void ulp_rnr_rsn1(struct host *h, const struct fc_txn_req *r);

/* Ordered: RSN 1 refused with RNR; 2 and 3 keep being refused until 1 is accepted. */
static void test_push_rnr_ordered_rule(void **state)
{
	(void)state;
	setup(NULL, NULL);
	B->on_req = ulp_rnr_rsn1;
	B->rnr_code = 1; /* 10 us; the PDL waits max(RTO, RNR) = RTO (section 11) */
	push(A, 100);
	push(A, 100);
	push(A, 100);
	run(20 * MS);
	/* the ULP saw 1, 1 again, then 2 and 3: never 2 before 1 was accepted */
	assert_int_equal(B->nr, 4);
	assert_int_equal(B->r[0].rsn, 1);
	assert_int_equal(B->r[0].redelivery, 0);
	assert_int_equal(B->r[1].rsn, 1);
	assert_int_equal(B->r[1].redelivery, 1);
	assert_int_equal(B->r[2].rsn, 2);
	assert_int_equal(B->r[3].rsn, 3);
	assert_int_equal(CNT(B)->ulp_rnr, 1);
	assert_int_equal(CNT(B)->auto_rnr, 2);
	assert_int_equal(A->nc, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(A->c[i].rsn, (uint32_t)i + 1);
		assert_int_equal(A->c[i].code, FC_CMPL_ACK);
	}
	assert_int_equal(fc_pdl_counters(fc_txn_pdl(A->t))->retx_timeout, 0); /* RNR waits */
	assert_all_returned();
	teardown();
}

/* Pull RNR is local to the target (8.5.3.4, 6.6.4): no NACK on the wire, redelivered at
 * the timeout. Ordered: a push behind it is RNR'd, a pull behind it waits. */
static void ulp_rnr_rsn1(struct host *h, const struct fc_txn_req *r)
{
	if (r->rsn == 1 && !h->flag) {
		h->flag = 1;
		assert_int_equal(fc_txn_rnr(h->cur, r->rsn, h->rnr_code, now), 0);
		return;
	}
	ulp_default(h, r);
}

static void test_pull_rnr_local(void **state)
{
	(void)state;
	setup(NULL, NULL);
	B->on_req = ulp_rnr_rsn1;
	B->rnr_code = 0x0E; /* 1.28 ms */
	pull(A, 100);
	push(A, 100);
	pull(A, 200);
	run(500 * US);
	assert_int_equal(fc_txn_tstate(B->t, 1), FC_TXN_T_RNR_WAIT);
	assert_int_equal(fc_txn_tstate(B->t, 3), FC_TXN_PULL_REQ_RX); /* held behind 1 */
	assert_int_equal(B->nr, 1);
	assert_int_equal(CNT(B)->auto_rnr, 1); /* the push */
	for (int i = 0; i < nlog; i++) /* the only NACK is the push's */
		if (plog[i].from == 1 && plog[i].type == FC_PKT_NACK)
			assert_int_equal(plog[i].psn, 300);
	run(20 * MS);
	assert_int_equal(B->nr, 4);
	assert_int_equal(B->r[1].rsn, 1);
	assert_int_equal(B->r[1].redelivery, 1);
	assert_true(B->r[1].data_ok); /* redelivered from its cells */
	assert_int_equal(B->r[2].rsn, 2);
	assert_int_equal(B->r[3].rsn, 3);
	assert_int_equal(CNT(B)->pull_redeliver, 1);
	assert_int_equal(A->nc, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(A->c[i].rsn, (uint32_t)i + 1);
		assert_int_equal(A->c[i].code, FC_CMPL_ACK);
		assert_true(A->c[i].data_ok);
	}
	assert_all_returned();
	teardown();
}

/* Unordered: an RNR touches only its own transaction. */
static void test_rnr_unordered(void **state)
{
	(void)state;
	setup(NULL, unordered);
	B->on_req = ulp_rnr_rsn1;
	B->rnr_code = 0x0E;
	push(A, 100);
	push(A, 100);
	run(500 * US);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].rsn, 2);
	assert_int_equal(CNT(B)->auto_rnr, 0);
	run(20 * MS);
	assert_int_equal(A->nc, 2);
	assert_int_equal(A->c[1].rsn, 1);
	assert_all_returned();
	teardown();
}

/* ------------------------------------------------------------------------ */
/* timeouts and failures (section 11)                                         */

static void short_timeout(struct fc_txn_engine_cfg *c, int host)
{
	base_engine_cfg(c);
	(void)host;
	c->txn_timeout_ns = 100 * US;
}

/* The timeout counts from the peer's last word while it owes us one (verbs' local ACK
 * timeout): B holds the push and says nothing after its first ACK. */
static void test_txn_timeout(void **state)
{
	uint64_t heard;

	(void)state;
	setup(short_timeout, NULL);
	B->hold = 1;
	push(A, 100);
	run(20 * US);
	heard = fc_pdl_heard_ns(fc_txn_pdl(A->t));
	assert_true(heard < 20 * US); /* 0 when B said nothing at all */
	run(heard > 0 ? heard + 99 * US : 99 * US);
	assert_int_equal(A->nc, 0);
	run(heard + 101 * US);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_LOCAL_TO);
	assert_int_equal(CNT(A)->timeouts, 1);
	/* Rx resources reclaimed upon timeout; the Push Data still in the PDL keeps its Tx */
	assert_int_equal(fc_txn_used(A->t, FC_TXN_REQ_PKT_RX), 0);
	assert_int_equal(fc_txn_used(A->t, FC_TXN_REQ_PKT_TX), 1);
	assert_int_equal(fc_txn_accept(B->t, 1, now), 0); /* late */
	run(now + MS);
	assert_int_equal(A->nc, 1); /* exactly once */
	assert_all_returned();
	teardown();
}

/* Transactions paced behind a congestion window below one packet wait far longer than
 * the timeout before they are sent: waiting locally is not a loss (issue: 32 QPs on a
 * busy host ended RETRY_EXC_ERR while only queued behind Swift's window). */
static void paced(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	if (host == 0) {
		c->pdl.fcwnd_fp = FC_CWND_ONE / 50; /* 0.02 packets */
		c->pdl.ipg_ns = 300 * US;           /* one packet per 3 timeouts */
	}
}

static void test_timeout_not_while_paced(void **state)
{
	(void)state;
	setup(short_timeout, paced);
	for (int i = 0; i < 4; i++)
		push(A, 100);
	run(5 * MS);
	assert_int_equal(A->nc, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(A->c[i].code, FC_CMPL_ACK);
	assert_true(now >= 900 * US); /* the last one really waited 9 timeouts to go */
	assert_int_equal(CNT(A)->timeouts, 0);
	assert_all_returned();
	teardown();
}

static int64_t drop_all_after_250us(int from, const struct fc_falcon_pkt *f, uint8_t *b,
				    uint32_t *len)
{
	(void)from;
	(void)f;
	(void)b;
	(void)len;
	return now > 250 * US ? DROP : 0;
}

/* Paced, and then the peer falls silent (a stopped falcond): the transaction sent into
 * the silence times out one budget after it went, however slowly its window refills and
 * its retransmissions are paced; those still queued behind the window wait, not owed. */
static void test_timeout_paced_peer_silent(void **state)
{
	(void)state;
	setup(short_timeout, paced);
	filter = drop_all_after_250us;
	for (int i = 0; i < 4; i++)
		push(A, 100);
	run(300 * US + 99 * US);
	assert_int_equal(A->nc, 1); /* the first went before the silence */
	assert_int_equal(A->c[0].code, FC_CMPL_ACK);
	run(300 * US + 140 * US);
	if (A->nc < 2)
		fail_msg("RSN 2 (sent at 300 us into a silent peer) not timed out at %" PRIu64 " us",
			 now / US);
	assert_int_equal(A->c[1].code, FC_CMPL_LOCAL_TO);
	teardown();
}

/* A receiver that answers RNR for 50 timeouts: every NACK is the peer's word, so the
 * push waits (rnr_retry 7 is "forever") and completes once the receive is there. */
static void ulp_rnr_until_flag(struct host *h, const struct fc_txn_req *r)
{
	if (!h->flag) {
		assert_int_equal(fc_txn_rnr(h->cur, r->rsn, 14 /* 1.28 ms */, now), 0);
		return;
	}
	ulp_default(h, r);
}

static void test_timeout_not_during_rnr(void **state)
{
	(void)state;
	setup(short_timeout, NULL);
	B->on_req = ulp_rnr_until_flag;
	push(A, 100);
	run(5 * MS); /* 50 timeouts of RNR NACKs */
	assert_int_equal(A->nc, 0);
	assert_true(CNT(B)->ulp_rnr >= 3);
	B->flag = 1;
	run(20 * MS);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_ACK);
	assert_int_equal(CNT(A)->timeouts, 0);
	assert_all_returned();
	teardown();
}

/* fc_txn_set_timeout: UINT64_MAX never times out a held push (nor gives up its
 * packet); a finite one set later applies at once, counted from the peer's last word
 * (B said nothing since its first ACK, 50 ms ago). */
static void test_set_timeout(void **state)
{
	(void)state;
	setup(short_timeout, NULL);
	fc_txn_set_timeout(A->t, UINT64_MAX);
	assert_int_equal(fc_txn_timeout(A->t), UINT64_MAX);
	B->hold = 1;
	push(A, 100);
	run(50 * MS);
	if (A->nc)
		fail_msg("completed with code %u", A->c[0].code);
	assert_false(fc_txn_is_dead(A->t));
	assert_true(now - fc_pdl_heard_ns(fc_txn_pdl(A->t)) > 2 * MS);
	fc_txn_set_timeout(A->t, 2 * MS);
	assert_int_equal(fc_txn_timeout(A->t), 2 * MS);
	run(now + 10 * US);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_LOCAL_TO);
	fc_txn_set_timeout(A->t, 0); /* the engine's */
	assert_int_equal(fc_txn_timeout(A->t), 100 * US);
	teardown();
}

static void test_pull_timeout_late_data(void **state)
{
	(void)state;
	setup(short_timeout, NULL);
	B->on_req = ulp_pull_later;
	pull(A, 100);
	run(200 * US);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_LOCAL_TO);
	answer_pull(B, 1, 100);
	run(MS);
	assert_int_equal(A->nc, 1);
	assert_int_equal(CNT(A)->pull_data_unmatched, 1); /* 8.4.3.2: discarded */
	assert_all_returned();
	teardown();
}

/* A pull NACKed with invalid CID at the target is reclaimed there (section 11); the
 * initiator learns of it by its timeout. */
static void ulp_pull_cid(struct host *h, const struct fc_txn_req *r)
{
	assert_int_equal(fc_txn_nack(h->t, r->rsn, FC_NACK_INVALID_CID, 0, now), 0);
}

static void test_pull_nack_cid(void **state)
{
	(void)state;
	setup(short_timeout, NULL);
	B->on_req = ulp_pull_cid;
	pull(A, 100);
	run(MS);
	assert_int_equal(A->nc, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_LOCAL_TO);
	assert_int_equal(fc_txn_tstate(B->t, 1), FC_TXN_T_FREE);
	assert_all_returned();
	teardown();
}

static int64_t drop_all_from_a(int from, const struct fc_falcon_pkt *f, uint8_t *b, uint32_t *len)
{
	(void)f;
	(void)b;
	(void)len;
	return from == 0 ? DROP : 0;
}

static void fast_fail(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->pdl.max_retx = 1;
	c->pdl.rto_ns = 50 * US;
}

static void test_dead_conn(void **state)
{
	(void)state;
	setup(NULL, fast_fail);
	filter = drop_all_from_a;
	push(A, 100);
	pull(A, 100);
	push(A, 100);
	run(10 * MS);
	assert_true(fc_txn_is_dead(A->t));
	assert_int_equal(A->dead_calls, 1);
	assert_int_equal(A->nc, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(A->c[i].rsn, (uint32_t)i + 1);
		assert_int_equal(A->c[i].code, FC_CMPL_DEAD_CONN);
	}
	assert_int_equal(fc_txn_push(A->t, "x", 1, 0, now, NULL), -EPIPE);
	for (int r = 0; r < FC_TXN_RES_COUNT; r++)
		assert_int_equal(fc_txn_used(A->t, (enum fc_txn_res)r), 0);
	teardown();
}

/* The PDL gives up on RSN 1 (its retries exhausted: kCmplLocalTO, section 11 note 1) and
 * resyncs it; the ordered target passes over it and delivers RSN 2. */
static int64_t drop_psn300_push(int from, const struct fc_falcon_pkt *f, uint8_t *b, uint32_t *len)
{
	(void)b;
	(void)len;
	return from == 0 && f->type == FC_PKT_PUSH_DATA && f->psn == 300 ? DROP : 0;
}

static void two_retries(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->pdl.max_retx = 2;
	c->pdl.rto_ns = 50 * US;
}

static void test_resync_skips_rsn(void **state)
{
	(void)state;
	setup(NULL, two_retries);
	filter = drop_psn300_push;
	push(A, 100);
	run(120 * US); /* RSN 1 has been retransmitted twice */
	push(A, 100);
	run(5 * MS);
	assert_int_equal(B->nr, 1);
	assert_int_equal(B->r[0].rsn, 2);
	assert_int_equal(CNT(B)->skipped, 1);
	assert_int_equal(A->nc, 2);
	assert_int_equal(A->c[0].rsn, 1);
	assert_int_equal(A->c[0].code, FC_CMPL_LOCAL_TO);
	assert_int_equal(A->c[1].rsn, 2);
	assert_int_equal(A->c[1].code, FC_CMPL_ACK);
	assert_false(fc_txn_is_dead(A->t));
	assert_all_returned();
	teardown();
}

/* ------------------------------------------------------------------------ */
/* resources: credits, M:N, per-function limits, resource NACKs                */

static void two_credits(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->limit[FC_TXN_REQ_PKT_TX] = 2;
}

static void test_credits_eagain_and_return(void **state)
{
	(void)state;
	setup(NULL, two_credits);
	push(A, 10);
	push(A, 10);
	assert_int_equal(fc_txn_push(A->t, "abc", 3, 9, now, NULL), -EAGAIN);
	assert_int_equal(CNT(A)->submit_eagain, 1);
	assert_int_equal(A->credits_calls, 0);
	run(MS);
	assert_int_equal(A->nc, 2);
	assert_true(A->credits_calls >= 1); /* 8.2.3: credits returned to the ULP */
	assert_int_equal(fc_txn_push(A->t, "abc", 3, 9, now, NULL), 0);
	run(2 * MS);
	assert_int_equal(A->nc, 3);
	assert_all_returned();
	teardown();
}

static void mn_small(struct fc_txn_engine_cfg *c, int host)
{
	base_engine_cfg(c);
	if (host == 0)
		c->cap[FC_TXN_REQ_PKT_TX] = 2;
}

static void mn_conn(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->pdl.ordered = 0;
	c->mn = 1;
	c->limit[FC_TXN_REQ_PKT_TX] = 1; /* ignored: M:N has no per-connection credits */
}

static void test_mn_reject(void **state)
{
	uint32_t cr[FC_TXN_ULP_CREDITS];

	(void)state;
	setup(mn_small, mn_conn);
	fc_txn_credits(A->t, cr);
	for (int i = 0; i < FC_TXN_ULP_CREDITS; i++)
		assert_int_equal(cr[i], UINT32_MAX);
	push(A, 10);
	push(A, 10);
	assert_int_equal(fc_txn_push(A->t, "abc", 3, 77, now, NULL), FC_TXN_REJECTED);
	assert_int_equal(A->nc, 1); /* complete in error and continue (8.2.3) */
	assert_int_equal(A->c[0].code, FC_CMPL_LOCAL_RSRC);
	assert_int_equal(A->c[0].rejected, 1);
	assert_int_equal(A->c[0].cookie, 77);
	assert_int_equal(fc_txn_nrsn(A->t), 3); /* no RSN taken */
	run(MS);
	assert_int_equal(A->nc, 3);
	assert_int_equal(CNT(A)->mn_rejected, 1);
	assert_all_returned();
	teardown();
}

/* Two connections of one function share the function's limit (8.2.3). */
static void fn_limit(struct fc_txn_engine_cfg *c, int host)
{
	base_engine_cfg(c);
	(void)host;
	c->fn_limit[3][FC_TXN_REQ_PKT_TX] = 1;
}

static void fn3(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->fn = 3;
}

static void test_function_limit(void **state)
{
	struct fc_txn_conn_cfg cc;
	struct fc_txn *a2, *b2;

	(void)state;
	setup(fn_limit, fn3);
	base_conn_cfg(&cc, 0);
	cc.fn = 3;
	cc.pdl.local_cid = 3;
	cc.pdl.remote_cid = 4;
	a2 = fc_txn_conn_new(A->e, &cc, &ops, A);
	assert_non_null(a2);
	base_conn_cfg(&cc, 1);
	cc.fn = 3;
	cc.pdl.local_cid = 4;
	cc.pdl.remote_cid = 3;
	b2 = fc_txn_conn_new(B->e, &cc, &ops, B);
	assert_non_null(b2);
	push(A, 10);
	assert_int_equal(fc_txn_push(a2, "x", 1, 5, now, NULL), -EAGAIN);
	run(MS);
	assert_int_equal(A->nc, 1);
	assert_int_equal(fc_txn_push(a2, "x", 1, 5, now, NULL), 0);
	run(2 * MS);
	assert_int_equal(A->nc, 2);
	assert_int_equal(A->c[1].cookie, 5);
	teardown();
}

/* Unordered: no head of line; a full network-request region refuses with resource NACKs
 * (8.5.3.3) and the retransmissions get in once the ULP freed room. */
static void small_net(struct fc_txn_engine_cfg *c, int host)
{
	base_engine_cfg(c);
	if (host == 1) {
		c->cap[FC_TXN_NET_PKT_RX] = 4;
		c->red_pkts = 1;
	}
}

static void ulp_async(struct host *h, const struct fc_txn_req *r)
{
	h->held[h->nheld++] = r->rsn; /* answered by the test */
}

/* The target's network-request pools feed the buffer level its ACKs carry (10.2): held
 * requests raise it, answering them lowers it again. */
static void small_net_instant(struct fc_txn_engine_cfg *c, int host)
{
	small_net(c, host);
	c->rxbuf_alpha_q16 = 65536; /* the level follows occupancy at once */
}

static void test_rxbuf_level_in_acks(void **state)
{
	uint8_t high = 0, last = 0;

	(void)state;
	setup(small_net_instant, unordered);
	B->on_req = ulp_async;
	for (int i = 0; i < 3; i++)
		pull(A, 10);
	run(20 * US); /* past the ACK coalescing timer */
	for (int i = 0; i < nlog; i++)
		if (plog[i].from == 1 && (plog[i].type == FC_PKT_BACK || plog[i].type == FC_PKT_EACK))
			high = plog[i].rxbuf > high ? plog[i].rxbuf : high;
	/* 3 of 4 network packets held: thresholds ceil((k+1) * 4 / 32) <= 3 for k < 24,
	 * so level 24 of 31 */
	assert_int_equal(high, 24);
	for (int k = 0; k < B->nheld; k++) {
		assert_int_equal(fc_txn_accept(B->t, B->held[k], now), 0);
		assert_int_equal(fc_txn_pull_data(B->t, B->held[k], NULL, 0, now), 0);
	}
	B->nheld = 0;
	B->on_req = ulp_default; /* answered at once from now on */
	nlog = 0;
	for (int i = 0; i < 40; i++) { /* traffic keeps flowing; the EMA decays */
		pull(A, 10);
		run(now + 20 * US);
	}
	for (int i = 0; i < nlog; i++)
		if (plog[i].from == 1 && (plog[i].type == FC_PKT_BACK || plog[i].type == FC_PKT_EACK))
			last = plog[i].rxbuf;
	assert_true(last <= 8); /* at most one request held at a time now */
	teardown();
}

static void test_resource_nack(void **state)
{
	(void)state;
	setup(small_net, unordered);
	B->on_req = ulp_async;
	for (int i = 0; i < 8; i++)
		push(A, 100);
	run(20 * US);
	assert_int_equal(B->nheld, 3); /* 4 packets minus the red zone's 1 */
	assert_true(CNT(B)->refused_rsrc >= 5);
	for (int i = 0; i < B->nheld; i++)
		assert_int_equal(fc_txn_accept(B->t, B->held[i], now), 0);
	B->on_req = ulp_default;
	run(20 * MS);
	assert_int_equal(A->nc, 8);
	assert_all_returned();
	teardown();
}

/* What goes on the wire for a refusal: a resource NACK (section 11) for Pull Requests
 * (request window) and Push Data (data window) alike; the initiator retries by timer. */
static void test_resource_nack_codes(void **state)
{
	uint32_t rsrc = 0, rnr = 0; /* bit per refused PSN: request, data window */

	(void)state;
	setup(small_net, unordered);
	B->on_req = ulp_async;
	for (int i = 0; i < 5; i++)
		pull(A, 10);
	for (int i = 0; i < 5; i++)
		push(A, 10);
	run(3 * US);
	for (int i = 0; i < nlog; i++) {
		if (plog[i].from != 1 || plog[i].type != FC_PKT_NACK)
			continue;
		if (plog[i].psn >= 300) { /* data window: a push */
			assert_int_equal(plog[i].code, FC_NACK_RESOURCE);
			rnr |= 1u << (plog[i].psn - 300);
		} else {
			assert_int_equal(plog[i].code, FC_NACK_RESOURCE);
			rsrc |= 1u << (plog[i].psn - 100);
		}
	}
	/* 4 packets, red zone 1: pulls 100-102 admitted (and held by the ULP), 103 and 104
	 * refused (and retried at once), every push refused */
	assert_int_equal(rsrc, 0x18);
	assert_int_equal(rnr, 0x1F);
	assert_true(CNT(B)->refused_rsrc >= 7);
	teardown();
}

/* ------------------------------------------------------------------------ */
/* the deadlock tests: each rule of 8.2.1 kept, then broken                   */

static uint32_t dbg_bits;

/* CR#3 / red zone (8.2.4): the HoL push (RSN 1) is lost; RSN 2.. fill the network-request
 * region. Kept: the HoL retransmission is admitted into the red zone. Broken: it is
 * refused for ever, and so is everything behind it. */
static void cr3_engine(struct fc_txn_engine_cfg *c, int host)
{
	base_engine_cfg(c);
	(void)host;
	c->cap[FC_TXN_NET_PKT_RX] = 8;
	c->red_pkts = 1;
	engine_dbg = dbg_bits;
}

static int64_t drop_first_psn300(int from, const struct fc_falcon_pkt *f, uint8_t *b, uint32_t *len)
{
	(void)b;
	(void)len;
	return from == 0 && f->type == FC_PKT_PUSH_DATA && f->psn == 300 &&
	       nth_type[0][FC_PKT_PUSH_DATA] == 0 ? DROP : 0;
}

static int run_cr3(uint32_t dbg)
{
	int done;

	dbg_bits = dbg;
	setup(cr3_engine, NULL);
	filter = drop_first_psn300;
	for (int i = 0; i < 10; i++)
		push(A, 200);
	run(5 * MS);
	done = A->nc;
	if (!dbg) {
		assert_true(CNT(B)->hol_red >= 1);
		assert_true(CNT(B)->refused_rsrc >= 1);
		for (int i = 0; i < A->nc; i++)
			assert_int_equal(A->c[i].code, FC_CMPL_ACK);
		assert_all_returned();
	} else {
		assert_int_equal(B->nr, 0); /* nothing ever reached the ULP */
		assert_int_equal(CNT(B)->hol_red, 0);
	}
	teardown();
	return done;
}

static void test_deadlock_cr3_red_zone(void **state)
{
	(void)state;
	assert_int_equal(run_cr3(0), 10);
	assert_int_equal(run_cr3(FC_TXN_DBG_NO_RED), 0);
}

/* CR#1: both hosts fill their ULP-request Rx region with pulls. Kept: the peers' Pull
 * Requests land in the network-request region. Broken (one shared Rx region): no Pull
 * Request can be admitted anywhere, no pull ever completes. */
static void cr1_engine(struct fc_txn_engine_cfg *c, int host)
{
	base_engine_cfg(c);
	(void)host;
	c->cap[FC_TXN_REQ_PKT_RX] = 8;
	c->cap[FC_TXN_NET_PKT_RX] = 8;
	c->red_pkts = 1;
	engine_dbg = dbg_bits;
}

static int run_cr1(uint32_t dbg)
{
	int done, n[2] = {0, 0};

	dbg_bits = dbg;
	setup(cr1_engine, NULL);
	for (int h = 0; h < 2; h++) {
		uint8_t req[16] = {0};

		fc_test_fill(req, sizeof(req), h, 0, PULLREQ_KIND);
		for (;;) {
			uint32_t rsn = fc_txn_nrsn(H[h]->t);
			int rc;

			fc_test_fill(req, sizeof(req), h, rsn, PULLREQ_KIND);
			rc = fc_txn_pull(H[h]->t, req, sizeof(req), 200, rsn, now, NULL);
			if (rc == -EAGAIN)
				break;
			assert_int_equal(rc, 0);
			n[h]++;
		}
	}
	assert_int_equal(n[0], dbg ? 16 : 8);
	run(5 * MS);
	done = A->nc + B->nc;
	if (!dbg) {
		assert_int_equal(done, 16);
		assert_all_returned();
	}
	teardown();
	return done;
}

static void test_deadlock_cr1_rx_regions(void **state)
{
	(void)state;
	assert_int_equal(run_cr1(0), 16);
	assert_int_equal(run_cr1(FC_TXN_DBG_SHARED_RX), 0);
}

/* CR#2: A pushes to B; B's ULP refuses pushes (RNR) until its own read from A completes
 * (an application that posts receive buffers after a read). Kept: A's Pull Data has its
 * own queue and goes out past the stalled pushes. Broken (one queue): the Pull Data sits
 * behind pushes that can never be handed to the PDL. */
static void cr2_engine(struct fc_txn_engine_cfg *c, int host)
{
	base_engine_cfg(c);
	(void)host;
	engine_dbg = dbg_bits;
}

static void cr2_conn(struct fc_txn_conn_cfg *c, int host)
{
	base_conn_cfg(c, host);
	c->pdl_push_max = 2;
}

static void ulp_rnr_until_read(struct host *h, const struct fc_txn_req *r)
{
	if (r->kind == FC_TXN_PUSH && !h->nc) {
		assert_int_equal(fc_txn_rnr(h->t, r->rsn, 1, now), 0);
		return;
	}
	ulp_default(h, r);
}

static int run_cr2(uint32_t dbg)
{
	int done;

	dbg_bits = dbg;
	setup(cr2_engine, cr2_conn);
	B->on_req = ulp_rnr_until_read;
	for (int i = 0; i < 10; i++)
		push(A, 100);
	pull(B, 300);
	run(10 * MS);
	done = A->nc + B->nc;
	if (!dbg) {
		assert_int_equal(B->c[0].code, FC_CMPL_ACK);
		assert_true(B->c[0].data_ok);
		assert_all_returned();
	} else {
		assert_int_equal(B->nc, 0);
	}
	teardown();
	return done;
}

static void test_deadlock_cr2_pull_data_queue(void **state)
{
	(void)state;
	assert_int_equal(run_cr2(0), 11);
	assert_int_equal(run_cr2(FC_TXN_DBG_SHARED_TXQ), 0);
}

/* UR: 40 pushes queued at once on an ordered connection, more than the fabric window
 * (32). Kept (RSN order = PSN order): delivered and acknowledged in turn. Broken (newest
 * first): the window fills with pushes the target must hold for RSNs that can never be
 * sent, since the window cannot move. */
static void ur_engine(struct fc_txn_engine_cfg *c, int host)
{
	base_engine_cfg(c);
	(void)host;
	c->cap[FC_TXN_NET_PKT_RX] = 64;
	engine_dbg = dbg_bits;
}

static int run_ur(uint32_t dbg)
{
	int done;

	dbg_bits = dbg;
	setup(ur_engine, NULL);
	for (int i = 0; i < 40; i++)
		push(A, 100);
	run(5 * MS);
	done = A->nc;
	if (!dbg) {
		for (int i = 0; i < 40; i++)
			assert_int_equal(B->r[i].rsn, (uint32_t)i + 1);
		assert_all_returned();
	} else {
		assert_int_equal(B->nr, 0);
		assert_int_equal(CNT(B)->held, 32);
	}
	teardown();
	return done;
}

static void test_deadlock_ur_rsn_order(void **state)
{
	(void)state;
	assert_int_equal(run_ur(0), 40);
	assert_int_equal(run_ur(FC_TXN_DBG_LIFO), 0);
}

/* ------------------------------------------------------------------------ */
/* the connection scheduler (8.3)                                             */

static void test_scheduler_round_robin(void **state)
{
	struct fc_txn_conn_cfg cc;
	struct fc_txn *a2, *b2, *from;
	uint8_t buf[BUFCAP], x[8] = {0};
	int last = -1;

	(void)state;
	setup(NULL, NULL);
	base_conn_cfg(&cc, 0);
	cc.pdl.local_cid = 3;
	cc.pdl.remote_cid = 4;
	a2 = fc_txn_conn_new(A->e, &cc, &ops, A);
	base_conn_cfg(&cc, 1);
	cc.pdl.local_cid = 4;
	cc.pdl.remote_cid = 3;
	b2 = fc_txn_conn_new(B->e, &cc, &ops, B);
	assert_non_null(a2);
	assert_non_null(b2);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(fc_txn_push(A->t, x, sizeof(x), 0, now, NULL), 0);
		assert_int_equal(fc_txn_push(a2, x, sizeof(x), 0, now, NULL), 0);
	}
	/* across connections: alternate */
	for (int i = 0; i < 8; i++) {
		int n = fc_txn_engine_poll_tx(A->e, now, buf, sizeof(buf), &from);
		int who = from == A->t ? 0 : 1;

		assert_true(n > 0);
		assert_int_not_equal(who, last);
		last = who;
	}
	assert_int_equal(fc_txn_engine_poll_tx(A->e, now, buf, sizeof(buf), &from), 0);
	teardown();
}

/* Within a connection: Pull Data and requests alternate (8.3, first level). */
static void test_scheduler_queues_alternate(void **state)
{
	uint8_t buf[BUFCAP];
	struct fc_txn *from;
	int types[16], nt = 0;

	(void)state;
	setup(NULL, NULL);
	for (int i = 0; i < 4; i++)
		pull(B, 50);
	/* B's pulls reach A; A's ULP queues 4 Pull Data */
	while ((nt = fc_txn_engine_poll_tx(B->e, now, buf, sizeof(buf), &from)) > 0)
		assert_int_equal(fc_txn_engine_rx(A->e, buf, (size_t)nt, now, now), 0);
	nt = 0;
	assert_int_equal(A->nr, 4);
	for (int i = 0; i < 4; i++)
		push(A, 50);
	while (nt < 8) {
		struct fc_falcon_pkt f;
		int n = fc_txn_engine_poll_tx(A->e, now, buf, sizeof(buf), &from);

		assert_true(n > 0);
		assert_true(fc_falcon_decode(buf, (size_t)n, &f) >= 0);
		if (f.type == FC_PKT_PULL_DATA || f.type == FC_PKT_PUSH_DATA)
			types[nt++] = f.type;
	}
	for (int i = 1; i < nt; i++)
		assert_int_not_equal(types[i], types[i - 1]);
	teardown();
}

/* ------------------------------------------------------------------------ */
/* API edges                                                                 */

static void test_api_errors(void **state)
{
	uint8_t big[MTU + 1] = {0}, pkt[64] = {0};

	(void)state;
	setup(NULL, NULL);
	assert_int_equal(fc_txn_push(A->t, big, MTU + 1, 0, now, NULL), -EMSGSIZE);
	assert_int_equal(fc_txn_pull(A->t, big, 8, MTU + 1, 0, now, NULL), -EMSGSIZE);
	assert_int_equal(fc_txn_push(A->t, NULL, 4, 0, now, NULL), -EINVAL);
	assert_int_equal(fc_txn_accept(B->t, 1, now), -ENOENT);
	assert_int_equal(fc_txn_rnr(B->t, 1, 0, now), -ENOENT);
	assert_int_equal(fc_txn_nack(B->t, 1, FC_NACK_CIE, 0, now), -ENOENT);
	B->hold = 1;
	push(A, 10);
	run(5 * US);
	assert_int_equal(fc_txn_rnr(B->t, 1, 32, now), -EINVAL);
	assert_int_equal(fc_txn_nack(B->t, 1, FC_NACK_RNR, 0, now), -EINVAL);
	assert_int_equal(fc_txn_nack(B->t, 1, FC_NACK_RESOURCE, 0, now), -EINVAL);
	assert_int_equal(fc_txn_pull_data(B->t, 1, "x", 1, now), -ENOENT); /* a push */
	/* the engine's receive entry: too short, unknown CID */
	assert_int_equal(fc_txn_engine_rx(A->e, pkt, 2, 0, now), -FC_WIRE_ETRUNC);
	pkt[0] = 0x10; /* version 1, CID 0x000009 */
	pkt[3] = 9;
	assert_int_equal(fc_txn_engine_rx(A->e, pkt, sizeof(pkt), 0, now), -ENOENT);
	assert_int_equal(fc_txn_engine_unknown_cid(A->e), 1);
	{
		uint8_t small[16];
		struct fc_txn *from;

		assert_int_equal(fc_txn_engine_poll_tx(A->e, now, small, sizeof(small), &from),
				 -FC_WIRE_ENOSPC);
	}
	teardown();
}

static void test_cfg_validation(void **state)
{
	struct fc_txn_engine_cfg ec;
	struct fc_txn_conn_cfg cc;
	struct fc_txn_engine *e;

	(void)state;
	base_engine_cfg(&ec);
	ec.red_cells = 3; /* below one MTU of cells (1024 / 256 = 4): CR#3 impossible */
	errno = 0;
	assert_null(fc_txn_engine_new(&ec));
	assert_int_equal(errno, EINVAL);
	base_engine_cfg(&ec);
	ec.red_pkts = ec.cap[FC_TXN_NET_PKT_RX];
	assert_null(fc_txn_engine_new(&ec));
	base_engine_cfg(&ec);
	ec.mtu_bytes = 70000;
	assert_null(fc_txn_engine_new(&ec));
	base_engine_cfg(&ec);
	ec.max_conns = 1;
	e = fc_txn_engine_new(&ec);
	assert_non_null(e);
	base_conn_cfg(&cc, 0);
	cc.max_txns = 100; /* not a power of 2 */
	assert_null(fc_txn_conn_new(e, &cc, &ops, NULL));
	assert_int_equal(errno, EINVAL);
	base_conn_cfg(&cc, 0);
	assert_null(fc_txn_conn_new(e, &cc, NULL, NULL));
	assert_non_null(fc_txn_conn_new(e, &cc, &ops, NULL));
	assert_null(fc_txn_conn_new(e, &cc, &ops, NULL));
	assert_int_equal(errno, EEXIST);
	cc.pdl.local_cid = 7;
	assert_null(fc_txn_conn_new(e, &cc, &ops, NULL));
	assert_int_equal(errno, ENOSPC);
	fc_txn_engine_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_life_and_credits),
		cmocka_unit_test(test_pull_life_and_credits),
		cmocka_unit_test(test_ordered_completions),
		cmocka_unit_test(test_unordered_completions),
		cmocka_unit_test(test_pull_data_reordered),
		cmocka_unit_test(test_target_reorders_push),
		cmocka_unit_test(test_tables_grow_ordered),
		cmocka_unit_test(test_tables_grow_unordered),
		cmocka_unit_test(test_rsn_wrap),
		cmocka_unit_test(test_pull_data_longer_op_err),
		cmocka_unit_test(test_pull_data_shorter_ok),
		cmocka_unit_test(test_pull_data_empty_cie),
		cmocka_unit_test(test_pull_cie_zero_length),
		cmocka_unit_test(test_push_nack_cie),
		cmocka_unit_test(test_push_nack_nre),
		cmocka_unit_test(test_push_nack_cid),
		cmocka_unit_test(test_push_cie_nack_lost),
		cmocka_unit_test(test_push_rnr_ordered_rule),
		cmocka_unit_test(test_pull_rnr_local),
		cmocka_unit_test(test_rnr_unordered),
		cmocka_unit_test(test_txn_timeout),
		cmocka_unit_test(test_timeout_not_while_paced),
		cmocka_unit_test(test_timeout_paced_peer_silent),
		cmocka_unit_test(test_timeout_not_during_rnr),
		cmocka_unit_test(test_set_timeout),
		cmocka_unit_test(test_pull_timeout_late_data),
		cmocka_unit_test(test_pull_nack_cid),
		cmocka_unit_test(test_dead_conn),
		cmocka_unit_test(test_resync_skips_rsn),
		cmocka_unit_test(test_credits_eagain_and_return),
		cmocka_unit_test(test_mn_reject),
		cmocka_unit_test(test_function_limit),
		cmocka_unit_test(test_resource_nack),
		cmocka_unit_test(test_resource_nack_codes),
		cmocka_unit_test(test_deadlock_cr3_red_zone),
		cmocka_unit_test(test_deadlock_cr1_rx_regions),
		cmocka_unit_test(test_deadlock_cr2_pull_data_queue),
		cmocka_unit_test(test_deadlock_ur_rsn_order),
		cmocka_unit_test(test_rxbuf_level_in_acks),
		cmocka_unit_test(test_scheduler_round_robin),
		cmocka_unit_test(test_scheduler_queues_alternate),
		cmocka_unit_test(test_api_errors),
		cmocka_unit_test(test_cfg_validation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
