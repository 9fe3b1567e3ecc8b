/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn.c - the transaction sublayer (Falcon spec section 8, the transaction parts of
 * section 11) over the packet delivery sublayer (pdl.c): the engine and its connections,
 * the PDL callbacks, the scheduler (8.3), the receive path and timers. Resources are in
 * txn_res.c, the initiator in txn_ini.c, the target in txn_tgt.c; txn_priv.h holds
 * what they share.
 *
 * Memory:
 *  - engine, allocated up front: the host's pools (8.2.2). Tx packet contexts, each with an MTU buffer the
 *    ULP bytes are copied into (the PDL retransmits from it until tx_done); Rx cells in
 *    one arena with a free list (held requests, Pull Data waiting for its turn). Every
 *    region is accounted in packets and cells against the host's, the function's and
 *    the connection's limits (8.2.3, 8.2.4).
 *  - connection: the initiator table and the target table (each indexed by RSN mod its
 *    size: it starts at TBL_MIN entries and doubles when a transaction does not fit, up
 *    to max_txns / max_rx_txns), two scheduler queues (8.3), and a queue of PDL calls
 *    deferred while the PDL is inside a callback to us (grows the same way). Memory
 *    follows use: an idle connection costs a few KiB whatever its configured limits.
 *  - engine: scratch buffers to hand stored bytes out in one piece, one per callback
 *    nesting level (txn_scratch_take; two up front).
 *
 * Re-entrancy: PDL callbacks (deliver, tx_done, nack, fatal) call the ULP, which may call
 * our ULP functions back. ULP answers that need the PDL (ulp_ack / ulp_nack) are queued
 * while the connection is inside a PDL call and issued when it returns; the delivery and
 * completion loops are guarded against nesting and re-check their state each turn.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "txn_priv.h"
#include "wire_err.h"
#include "wire_falcon.h"

/* ------------------------------------------------------------------------ */
/* configuration                                                             */

void fc_txn_engine_cfg_default(struct fc_txn_engine_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->max_conns = 64;
	c->mtu_bytes = 4096;
	c->tx_cell_bytes = c->rx_cell_bytes = 256;
	c->cap[FC_TXN_REQ_PKT_TX] = c->cap[FC_TXN_DATA_PKT_TX] = 1024;
	c->cap[FC_TXN_REQ_BUF_TX] = c->cap[FC_TXN_DATA_BUF_TX] = 16384;
	c->cap[FC_TXN_REQ_PKT_RX] = c->cap[FC_TXN_NET_PKT_RX] = 1024;
	c->cap[FC_TXN_REQ_BUF_RX] = c->cap[FC_TXN_NET_BUF_RX] = 4096;
	c->red_pkts = 8;
	c->red_cells = 4 * (4096 / 256);
	c->txn_timeout_ns = 1000000000ull;
}

void fc_txn_conn_cfg_default(struct fc_txn_conn_cfg *c)
{
	memset(c, 0, sizeof(*c));
	fc_pdl_cfg_default(&c->pdl);
	c->max_txns = 256;
	c->max_rx_txns = 256;
}

static int engine_cfg_ok(const struct fc_txn_engine_cfg *c, uint32_t dbg)
{
	uint32_t tx_max, rx_max;

	if (!c->max_conns || c->max_conns > TBL_MAX || !c->mtu_bytes ||
	    c->mtu_bytes > FC_FALCON_PUSH_MAX || !c->tx_cell_bytes || !c->rx_cell_bytes)
		return 0;
	tx_max = ceil_div(c->mtu_bytes, c->tx_cell_bytes);
	rx_max = ceil_div(c->mtu_bytes, c->rx_cell_bytes);
	for (int i = 0; i < FC_TXN_RES_COUNT; i++)
		if (!c->cap[i] || c->cap[i] > POOL_MAX)
			return 0;
	/* one transaction of each kind must fit its regions at all */
	if (c->cap[FC_TXN_REQ_BUF_TX] < tx_max || c->cap[FC_TXN_DATA_BUF_TX] < tx_max ||
	    c->cap[FC_TXN_REQ_BUF_RX] < rx_max || c->cap[FC_TXN_NET_BUF_RX] < rx_max)
		return 0;
	if (dbg & FC_TXN_DBG_NO_RED)
		return 1;
	/* CR#3: the red zone holds one head-of-line request of the largest size */
	return c->red_pkts >= 1 && c->red_pkts < c->cap[FC_TXN_NET_PKT_RX] &&
	       c->red_cells >= rx_max && c->red_cells < c->cap[FC_TXN_NET_BUF_RX];
}

/* ------------------------------------------------------------------------ */
/* deferred PDL calls                                                        */

static void do_action(struct fc_txn *t, const struct action *a)
{
	int rc;

	if (a->ack)
		rc = fc_pdl_ulp_ack(t->pdl, a->psn, a->now_ns);
	else
		rc = fc_pdl_ulp_nack(t->pdl, FC_WIN_DATA, a->psn, a->code, a->rnr, a->ulp, a->now_ns);
	if (rc)
		t->cnt.deferred_lost++; /* NACK queue full: the initiator retransmits */
}

/* ACK (ack = 1) or NACK Push Data psn now, or when the PDL returns to us. */
/* The deferred-call queue starts at ACT_MIN and doubles up to max_rx_txns + 1 (one
 * answer per target transaction, and one more); when it cannot, the call is made at
 * once, as the PDL allows (ulp_ack from deliver). */
static int act_grow(struct fc_txn *t)
{
	uint32_t max = t->cfg.max_rx_txns + 1, ncap = t->act_cap * 2 < max ? t->act_cap * 2 : max;
	struct action *a;

	if (ncap <= t->act_cap || !(a = realloc(t->act, ncap * sizeof(*a))))
		return -1;
	t->act = a;
	t->act_cap = ncap;
	return 0;
}

void txn_pdl_answer(struct fc_txn *t, uint32_t psn, int ack, uint8_t code, uint8_t rnr,
		    uint8_t ulp)
{
	struct action a = { .now_ns = t->now_ns, .psn = psn, .ack = (uint8_t)ack, .code = code,
			    .rnr = rnr, .ulp = ulp };

	if (t->dead)
		return;
	if (!t->in_pdl || (t->nact == t->act_cap && act_grow(t))) {
		do_action(t, &a);
		return;
	}
	t->act[t->nact++] = a;
}

static void conn_die(struct fc_txn *t, int reason);

void txn_conn_finish(struct fc_txn *t)
{
	if (t->in_pdl)
		return;
	if (t->oom && !t->dead)
		conn_die(t, -ENOMEM);
	for (uint32_t i = 0; i < t->nact && !t->dead; i++)
		do_action(t, &t->act[i]);
	t->nact = 0;
	txn_touch(t);
}

/* ---- ready list ---- */

static void ready_add(struct fc_txn_engine *e, struct fc_txn *t)
{
	if (t->on_ready)
		return;
	t->on_ready = 1;
	t->rd_next = NONE;
	t->rd_prev = e->rd_tail;
	if (e->rd_tail != NONE)
		e->conn[e->rd_tail]->rd_next = t->slot;
	else
		e->rd_head = t->slot;
	e->rd_tail = t->slot;
}

static void ready_del(struct fc_txn_engine *e, struct fc_txn *t)
{
	if (!t->on_ready)
		return;
	if (t->rd_prev != NONE)
		e->conn[t->rd_prev]->rd_next = t->rd_next;
	else
		e->rd_head = t->rd_next;
	if (t->rd_next != NONE)
		e->conn[t->rd_next]->rd_prev = t->rd_prev;
	else
		e->rd_tail = t->rd_prev;
	t->on_ready = 0;
}

/* ---- timer heap: slots by cached deadline ---- */

static uint64_t hkey(const struct fc_txn_engine *e, uint32_t i) { return e->conn[e->heap[i]]->dl_ns; }

static void hswap(struct fc_txn_engine *e, uint32_t a, uint32_t b)
{
	uint32_t x = e->heap[a];

	e->heap[a] = e->heap[b];
	e->heap[b] = x;
	e->conn[e->heap[a]]->hpos = a;
	e->conn[e->heap[b]]->hpos = b;
}

static void hsift(struct fc_txn_engine *e, uint32_t i)
{
	while (i && hkey(e, (i - 1) / 2) > hkey(e, i)) {
		hswap(e, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;

		if (l < e->nheap && hkey(e, l) < hkey(e, m))
			m = l;
		if (l + 1 < e->nheap && hkey(e, l + 1) < hkey(e, m))
			m = l + 1;
		if (m == i)
			return;
		hswap(e, i, m);
		i = m;
	}
}

static void heap_del(struct fc_txn_engine *e, struct fc_txn *t)
{
	uint32_t i = t->hpos;

	if (i == NONE)
		return;
	t->hpos = NONE;
	if (i != --e->nheap) {
		e->heap[i] = e->heap[e->nheap];
		e->conn[e->heap[i]]->hpos = i;
		hsift(e, i);
	}
}

static void heap_set(struct fc_txn_engine *e, struct fc_txn *t, uint64_t dl)
{
	/* most touches leave the deadline where it was: the heap is in order already */
	if (dl == t->dl_ns && (t->hpos != NONE) == (dl != UINT64_MAX))
		return;
	t->dl_ns = dl;
	if (dl == UINT64_MAX) {
		heap_del(e, t);
		return;
	}
	if (t->hpos == NONE) {
		t->hpos = e->nheap;
		e->heap[e->nheap++] = t->slot;
	}
	hsift(e, t->hpos);
}

/* After anything happened on t: it may have output (ready list; poll_tx drops it again
 * when it has none) and its earliest deadline may have moved (heap). Every entry point
 * that can change a connection's state ends here. */
void txn_touch(struct fc_txn *t)
{
	struct fc_txn_engine *e = t->e;
	uint64_t d, x;

	if (t->dead) {
		ready_del(e, t);
		heap_del(e, t);
		return;
	}
	ready_add(e, t);
	d = fc_pdl_next_deadline(t->pdl);
	x = txn_ini_deadline(t);
	if (x < d)
		d = x;
	x = txn_tgt_deadline(t);
	if (x < d)
		d = x;
	heap_set(e, t, d);
}

/* txn_touch after a change whose only effect on t's deadlines is one more, dl_ns (a new
 * transaction's): min(cached, dl_ns), without asking the PDL and both tables again.
 * Never later than what txn_touch would set: t's cache is exact whenever none of t's
 * entry points is running (each ends in txn_touch), and when one is, its own full touch
 * follows. Earlier is harmless: on_timer finds nothing due and touches in full. */
void txn_touch_deadline(struct fc_txn *t, uint64_t dl_ns)
{
	struct fc_txn_engine *e = t->e;

	ready_add(e, t);
	heap_set(e, t, dl_ns < t->dl_ns ? dl_ns : t->dl_ns);
}

/* ---- credit waiters ---- */

void txn_want_credits(struct fc_txn *t)
{
	struct fc_txn_engine *e = t->e;

	t->want_credits = 1;
	if (t->on_cwait)
		return;
	t->on_cwait = 1;
	t->cw_next = NONE;
	if (e->cw_tail != NONE)
		e->conn[e->cw_tail]->cw_next = t->slot;
	else
		e->cw_head = t->slot;
	e->cw_tail = t->slot;
}

/* txn_engine_flush's work: the waiters in the order they ran out. Waiters that run out
 * again during a callback queue up for the next round. */
void txn_engine_flush_waiters(struct fc_txn_engine *e)
{
	if (e->flushing)
		return;
	if (e->cw_head == NONE) { /* nobody waits: what the rounds below would leave */
		e->released = 0;
		return;
	}
	e->flushing = 1;
	for (int round = 0; round < 2 && e->released; round++) {
		uint32_t i = e->cw_head;

		e->released = 0;
		e->cw_head = e->cw_tail = NONE;
		while (i != NONE) {
			struct fc_txn *t = e->conn[i];

			i = t->cw_next;
			t->on_cwait = 0;
			if (!t->want_credits)
				continue;
			t->want_credits = 0;
			if (t->ops->credits)
				t->ops->credits(t->ctx, t);
		}
	}
	e->flushing = 0;
}

void txn_set_now(struct fc_txn *t, uint64_t now)
{
	if (now > t->now_ns)
		t->now_ns = now;
}

/* ------------------------------------------------------------------------ */
/* PDL callbacks                                                             */

static int on_deliver(void *ctx, const struct fc_pdl_rx_pkt *p, struct fc_pdl_nack *nack)
{
	struct fc_txn *t = ctx;

	if (t->dead)
		return 0;
	switch (p->type) {
	case FC_PKT_PUSH_DATA:
	case FC_PKT_PULL_REQ:
		return txn_tgt_request(t, p, nack);
	case FC_PKT_PULL_DATA:
		txn_ini_pull_data(t, p);
		return 0;
	case FC_PKT_RESYNC:
		if (p->resync_pkt_type == FC_PKT_PULL_DATA)
			txn_ini_resync(t, p);
		else
			txn_tgt_resync(t, p);
		return 0;
	default:
		return 0;
	}
}

static void on_tx_done(void *ctx, uint64_t cookie, uint32_t rsn, enum fc_tx_status st, uint8_t code)
{
	struct fc_txn *t = ctx;
	struct fc_txn_engine *e = t->e;
	uint32_t idx = (uint32_t)cookie;
	uint8_t type;

	if (cookie >= e->ntxp || e->txp[idx].where != TXP_PDL || e->txp[idx].conn != t)
		return;
	type = e->txp[idx].type;
	if (type == FC_PKT_PUSH_DATA)
		t->push_in_pdl--;
	t->qmask &= (uint8_t)~(1u << win_of(type)); /* the PDL has room again */
	txn_txp_release(t, idx);
	if (type == FC_PKT_PULL_DATA)
		txn_tgt_tx_done(t, idx, rsn);
	else
		txn_ini_tx_done(t, idx, rsn, type, st, code);
}

/* A NACK for one of our packets: keep the ULP's code for the completion (8.4.3.5). RNR
 * and resource NACKs are the PDL's business (8.4.3.4). */
static void on_nack(void *ctx, uint32_t rsn, uint8_t pkt_type, uint8_t code, uint8_t ulp_code,
		    uint64_t rnr_ns)
{
	struct fc_txn *t = ctx;
	struct islot *s;

	(void)rnr_ns;
	if (pkt_type == FC_PKT_PULL_DATA)
		return; /* our Pull Data: its RSN is the peer's, not one of our transactions */
	s = ifind(t, rsn);
	if (s && code != FC_NACK_RNR && code != FC_NACK_RESOURCE)
		s->ulp_code = ulp_code;
}

/* The connection failed: every transaction completes with kCmplDeadConn (section 11),
 * in RSN order, and every resource goes back. */
static void conn_die(struct fc_txn *t, int reason)
{
	if (t->dead)
		return;
	for (uint32_t r = t->brsn; r != t->nrsn; r++) {
		struct islot *s = islot(t, r);

		if (s->used && !s->ready)
			txn_ini_fail(t, s, FC_CMPL_DEAD_CONN);
	}
	for (int qi = 0; qi < 2; qi++)
		while (t->q[qi].head != NONE)
			txn_txp_drop_queued(t, t->q[qi].head);
	for (uint32_t i = 0; i <= t->tmask; i++) {
		txn_tgt_release(t, &t->ts[i]);
		t->ts[i].state = FC_TXN_T_FREE;
	}
	t->awaiting = t->rnr_waiting = 0;
	t->rnr_block = 0;
	t->nact = 0;
	t->dead = 1;
	txn_ini_drain(t);
	if (t->ops->dead)
		t->ops->dead(t->ctx, t, reason);
}

static void on_fatal(void *ctx, int reason) { conn_die(ctx, reason); }

static int on_cc_event(void *ctx, const struct fc_cc_event *ev, unsigned pred)
{
	struct fc_txn *t = ctx;

	return t->cfg.cc_event(t->cfg.cc_ctx, ev, pred);
}

static void on_reroute(void *ctx, uint32_t path)
{
	struct fc_txn *t = ctx;

	if (t->cfg.reroute)
		t->cfg.reroute(t->cfg.cc_ctx, path);
}

/* The PDL encodes a packet: the ULP writes its gathered bytes into the frame. */
static void on_gather(void *ctx, uint64_t cookie, uint32_t offset, void *dst, uint32_t len)
{
	struct fc_txn *t = ctx;
	const struct txpkt *x = &t->e->txp[cookie];

	t->ops->gather(t->ctx, t, x->gcookie, offset, dst, len);
}

static const struct fc_pdl_ops pdl_ops = {
	.deliver = on_deliver, .tx_done = on_tx_done, .nack = on_nack, .fatal = on_fatal,
	.reroute = on_reroute, .gather = on_gather,
};
static const struct fc_pdl_ops pdl_ops_cc = {
	.deliver = on_deliver, .tx_done = on_tx_done, .nack = on_nack, .fatal = on_fatal,
	.reroute = on_reroute, .cc_event = on_cc_event, .gather = on_gather,
};

/* ------------------------------------------------------------------------ */
/* connection scheduler (8.3)                                                 */

/* Packets handed to the PDL and not yet sent once, per window. */
static uint32_t unsent(const struct fc_txn *t, int w) { return fc_pdl_unsent(t->pdl, (enum fc_win_id)w); }

static uint32_t q_pick(const struct fc_txn *t, int qi)
{
	if (qi == Q_REQ && (t->e->dbg & FC_TXN_DBG_LIFO))
		return t->q[qi].tail; /* UR broken on purpose: newest request first */
	return t->q[qi].head;
}

/* May the packet at the head of queue qi go to the PDL now? Only when the PDL has sent
 * everything it was given in that window (all windows when ordered: it keeps submission
 * order), so the scheduler, not the PDL, decides what goes next; and a push only while
 * the data window keeps room for Pull Data (CR#2). */
static int q_ready(const struct fc_txn *t, int qi)
{
	uint32_t idx = q_pick(t, qi);
	const struct txpkt *k;
	int w;

	if (idx == NONE)
		return 0;
	k = &t->e->txp[idx];
	w = win_of(k->type);
	if (t->qmask & (1u << w))
		return 0;
	if (t->ordered ? unsent(t, 0) || unsent(t, 1) : unsent(t, w))
		return 0;
	return k->type != FC_PKT_PUSH_DATA || t->push_in_pdl < t->push_max;
}

static int hand_to_pdl(struct fc_txn *t, int qi)
{
	uint32_t idx = q_pick(t, qi);
	struct txpkt *k = &t->e->txp[idx];
	struct fc_pdl_tx_req r = {
		.type = k->type, .rsn = k->rsn, .payload = k->buf, .len = k->len, .cookie = idx,
		.gather_len = k->glen,
		.req_len = (uint16_t)k->resp_len,
		.last = t->q[Q_REQ].len + t->q[Q_DATA].len == 1, /* nothing queued behind it */
	};
	int w = win_of(k->type), rc = fc_pdl_submit(t->pdl, &r);

	if (rc) { /* -EAGAIN: ring full; masked until a release in that window */
		t->qmask |= (uint8_t)(1u << w);
		t->cnt.pdl_eagain++;
		return rc;
	}
	txn_q_unlink(t, qi, idx);
	k->where = TXP_PDL;
	if (k->type == FC_PKT_PULL_DATA) {
		struct tslot *s = tfind(t, k->rsn);

		if (s && s->txp == idx)
			s->state = FC_TXN_PULL_DATA_TX;
		return 0;
	}
	if (k->type == FC_PKT_PUSH_DATA)
		t->push_in_pdl++;
	islot(t, k->rsn)->state = k->type == FC_PKT_PUSH_DATA ? FC_TXN_PUSH_DATA_TX :
				  FC_TXN_PULL_REQ_TX;
	txn_ini_started(t, k->rsn, t->now_ns);
	return 0;
}

/* Round robin between the two queues (8.3, first level). */
static int feed(struct fc_txn *t)
{
	for (int j = 0; j < 2; j++) {
		int qi = (t->q_rr + j) & 1;

		if (q_ready(t, qi) && !hand_to_pdl(t, qi)) {
			t->q_rr = (uint8_t)(qi ^ 1);
			return 1;
		}
	}
	return 0;
}

static int pdl_poll(struct fc_txn *t, uint64_t now, uint8_t *buf, size_t cap)
{
	return fc_pdl_poll_tx(t->pdl, now, buf, cap);
}

static int conn_poll(struct fc_txn *t, uint64_t now, uint8_t *buf, size_t cap)
{
	int n;

	/* the network-request level (10.2) every ACK or NACK of this poll carries: the
	 * engine's as it is now, whichever connection last moved it */
	fc_pdl_set_rxbuf_level(t->pdl, t->e->rxbuf_level);
	n = pdl_poll(t, now, buf, cap);

	for (int j = 0; n == 0 && j < 2 && feed(t); j++)
		n = pdl_poll(t, now, buf, cap);
	return n;
}

int fc_txn_engine_poll_tx(struct fc_txn_engine *e, uint64_t now, void *buf, size_t cap,
			  struct fc_txn **from)
{
	if (cap < FC_FALCON_HDR_MAX + (size_t)e->cfg.mtu_bytes)
		return -FC_WIRE_ENOSPC;
	/* round robin across the connections that may have output (8.3): the head sends
	 * one packet and goes to the tail; one with nothing to send leaves the list until
	 * something happens to it. Bounded: a callback may put a connection back, so stop
	 * after twice the table's size. */
	for (uint32_t i = 0; i < 2 * e->cfg.max_conns && e->rd_head != NONE; i++) {
		struct fc_txn *t = e->conn[e->rd_head];
		int n;

		ready_del(e, t);
		if (t->dead)
			continue;
		txn_set_now(t, now);
		n = conn_poll(t, now, buf, cap);
		txn_touch(t); /* back on the list (tail) and its deadline refreshed */
		if (n <= 0)
			ready_del(e, t); /* nothing now: off until it is touched again */
		if (n > 0 && from)
			*from = t;
		if (n) {
			txn_engine_flush(e);
			return n;
		}
	}
	txn_engine_flush(e);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* receive path and timers                                                    */

static uint32_t cid_hash(const struct fc_txn_engine *e, uint32_t cid)
{
	return (cid * 0x9E3779B1u) & e->ht_mask;
}

static struct fc_txn *cid_lookup(const struct fc_txn_engine *e, uint32_t cid)
{
	/* bounded: the table is at most half full, so a free entry ends every probe */
	for (uint32_t h = cid_hash(e, cid);; h = (h + 1) & e->ht_mask) {
		uint32_t s = e->ht[h];

		if (s == NONE)
			return NULL;
		if (e->conn[s]->cfg.pdl.local_cid == cid)
			return e->conn[s];
	}
}

int fc_txn_engine_rx(struct fc_txn_engine *e, const void *pkt, size_t len, uint64_t tx_ns,
		     uint64_t now)
{
	struct fc_rx_meta m = { .tx_ns = tx_ns, .now_ns = now };

	return fc_txn_engine_rx_meta(e, pkt, len, &m, NULL);
}

int fc_txn_engine_rx_meta(struct fc_txn_engine *e, const void *pkt, size_t len,
			  const struct fc_rx_meta *m, void **user)
{
	uint64_t now = m->now_ns;
	struct fc_txn *t;
	int rc;

	if (!pkt || len < 4)
		return -FC_WIRE_ETRUNC;
	t = cid_lookup(e, fc_hdr_cid(pkt));
	if (!t) {
		e->unknown_cid++;
		return -ENOENT;
	}
	if (user)
		*user = t->ctx;
	txn_set_now(t, now);
	t->in_pdl++;
	rc = fc_pdl_rx_meta(t->pdl, pkt, len, m);
	t->in_pdl--;
	txn_conn_finish(t);
	txn_engine_flush(e);
	return rc;
}

uint64_t fc_txn_engine_next_deadline(const struct fc_txn_engine *e)
{
	return e->nheap ? hkey(e, 0) : UINT64_MAX;
}

void fc_txn_engine_on_timer(struct fc_txn_engine *e, uint64_t now)
{
	uint32_t n = 0;

	/* take every expired connection off the heap first: each runs once per call even if
	 * its deadline stays due ("has output now"), and callbacks may re-add any of them */
	while (e->nheap && hkey(e, 0) <= now) {
		struct fc_txn *t = e->conn[e->heap[0]];

		heap_del(e, t);
		e->expired[n++] = t->slot;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct fc_txn *t = e->conn[e->expired[i]];

		if (!t || t->dead)
			continue;
		txn_set_now(t, now);
		if (fc_pdl_next_deadline(t->pdl) <= now) {
			t->in_pdl++;
			fc_pdl_on_timer(t->pdl, now);
			t->in_pdl--;
		}
		if (!t->dead) {
			txn_ini_timeouts(t, now);
			txn_tgt_timers(t, now);
		}
		txn_conn_finish(t);
	}
	txn_engine_flush(e);
}

void fc_txn_engine_stalled(struct fc_txn_engine *e, uint64_t stall_ns, uint64_t now)
{
	for (uint32_t i = 0; i < e->cfg.max_conns; i++) {
		struct fc_txn *t = e->conn[i];

		if (!t || t->dead)
			continue;
		txn_set_now(t, now);
		fc_pdl_stalled(t->pdl, stall_ns, now);
		txn_touch(t); /* its retransmit timers moved */
	}
}

/* ------------------------------------------------------------------------ */
/* engine and connection life                                                */

struct fc_txn_engine *fc_txn_engine_new(const struct fc_txn_engine_cfg *cfg)
{
	return fc_txn_engine_new_dbg(cfg, 0);
}

struct fc_txn_engine *fc_txn_engine_new_dbg(const struct fc_txn_engine_cfg *cfg, uint32_t dbg)
{
	struct fc_txn_engine *e;
	uint32_t ntx, ncell;

	if (!cfg || !engine_cfg_ok(cfg, dbg)) {
		errno = EINVAL;
		return NULL;
	}
	ntx = cfg->cap[FC_TXN_REQ_PKT_TX] + cfg->cap[FC_TXN_DATA_PKT_TX];
	ncell = cfg->cap[FC_TXN_REQ_BUF_RX] + cfg->cap[FC_TXN_NET_BUF_RX];
	e = calloc(1, sizeof(*e));
	if (!e)
		goto nomem;
	e->cfg = *cfg;
	e->dbg = dbg;
	fc_rxbuf_cfg_default(&e->rxbuf_cfg, cfg->cap[FC_TXN_NET_PKT_RX], cfg->cap[FC_TXN_NET_BUF_RX]);
	if (cfg->rxbuf_alpha_q16)
		e->rxbuf_cfg.alpha[FC_RXBUF_POOL_PKT] = e->rxbuf_cfg.alpha[FC_RXBUF_POOL_BUF] =
			cfg->rxbuf_alpha_q16;
	fc_rxbuf_init(&e->rxbuf);
	memcpy(e->cap, cfg->cap, sizeof(e->cap));
	if (dbg & FC_TXN_DBG_SHARED_RX) {
		e->cap[FC_TXN_REQ_PKT_RX] += cfg->cap[FC_TXN_NET_PKT_RX];
		e->cap[FC_TXN_REQ_BUF_RX] += cfg->cap[FC_TXN_NET_BUF_RX];
	}
	txn_res_init(e);
	e->txp = calloc(ntx, sizeof(*e->txp));
	e->txmem = malloc((size_t)ntx * cfg->mtu_bytes);
	e->cellmem = malloc((size_t)ncell * cfg->rx_cell_bytes);
	e->cell_next = calloc(ncell, sizeof(*e->cell_next));
	e->conn = calloc(cfg->max_conns, sizeof(*e->conn));
	for (e->ht_mask = 1; e->ht_mask < 2 * cfg->max_conns; e->ht_mask <<= 1)
		;
	e->ht = malloc(e->ht_mask * sizeof(*e->ht));
	e->ht_mask--;
	e->heap = calloc(cfg->max_conns, sizeof(*e->heap));
	e->expired = calloc(cfg->max_conns, sizeof(*e->expired));
	if (!e->txp || !e->txmem || !e->cellmem || !e->cell_next || !e->conn || !e->ht ||
	    !e->heap || !e->expired)
		goto nomem;
	memset(e->ht, 0xFF, ((size_t)e->ht_mask + 1) * sizeof(*e->ht)); /* NONE */
	e->rd_head = e->rd_tail = e->cw_head = e->cw_tail = NONE;
	e->ntxp = ntx;
	e->txp_free = NONE;
	for (uint32_t i = ntx; i-- > 0;) {
		e->txp[i].buf = e->txmem + (size_t)i * cfg->mtu_bytes;
		e->txp[i].next = e->txp_free;
		e->txp_free = i;
	}
	e->ncells = ncell;
	e->cell_free = NONE;
	for (uint32_t i = ncell; i-- > 0;) {
		e->cell_next[i] = e->cell_free;
		e->cell_free = i;
	}
	e->cells_free = ncell;
	/* scratch for the two nesting levels every connection uses (initiator, target) */
	if (!txn_scratch_take(e) || !txn_scratch_take(e))
		goto nomem;
	e->scr_used = 0;
	return e;
nomem:
	fc_txn_engine_free(e);
	errno = ENOMEM;
	return NULL;
}

void fc_txn_engine_free(struct fc_txn_engine *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; e->conn && i < e->cfg.max_conns; i++)
		fc_txn_conn_free(e->conn[i]);
	free(e->txp);
	free(e->txmem);
	free(e->cellmem);
	free(e->cell_next);
	free(e->conn);
	free(e->ht);
	free(e->heap);
	free(e->expired);
	for (uint32_t i = 0; i < e->nscr; i++)
		free(e->scr[i]);
	free(e->scr);
	free(e);
}

static int conn_cfg_ok(const struct fc_txn_conn_cfg *c, const struct fc_txn_ops *ops)
{
	return ops && ops->complete && ops->request && pow2(c->max_txns) &&
	       c->max_txns <= TBL_MAX && pow2(c->max_rx_txns) && c->max_rx_txns <= TBL_MAX &&
	       c->fn < FC_TXN_MAX_FN;
}

static void conn_free_mem(struct fc_txn *t)
{
	fc_pdl_free(t->pdl);
	free(t->is);
	free(t->ts);
	free(t->act);
	free(t);
}

/* Insert t (its CID not in the table: checked by the caller). */
static void cid_insert(struct fc_txn_engine *e, const struct fc_txn *t)
{
	uint32_t h = cid_hash(e, t->cfg.pdl.local_cid);

	while (e->ht[h] != NONE)
		h = (h + 1) & e->ht_mask;
	e->ht[h] = t->slot;
}

/* Remove t, closing the gap so that every probe still finds its entry (linear probing's
 * backward-shift deletion). */
static void cid_remove(struct fc_txn_engine *e, const struct fc_txn *t)
{
	uint32_t h = cid_hash(e, t->cfg.pdl.local_cid), j;

	while (e->ht[h] != t->slot) {
		if (e->ht[h] == NONE)
			return;
		h = (h + 1) & e->ht_mask;
	}
	e->ht[h] = NONE;
	for (j = (h + 1) & e->ht_mask; e->ht[j] != NONE; j = (j + 1) & e->ht_mask) {
		uint32_t home = cid_hash(e, e->conn[e->ht[j]]->cfg.pdl.local_cid);

		/* the entry at j may move to the hole h if its home is not in (h, j] */
		if (((j - home) & e->ht_mask) >= ((j - h) & e->ht_mask)) {
			e->ht[h] = e->ht[j];
			e->ht[j] = NONE;
			h = j;
		}
	}
}

static struct fc_txn *conn_alloc(const struct fc_txn_conn_cfg *cfg)
{
	struct fc_txn *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	/* memory by use: the tables and the deferred-call queue start small and grow */
	t->imask = (cfg->max_txns < TBL_MIN ? cfg->max_txns : TBL_MIN) - 1;
	t->tmask = (cfg->max_rx_txns < TBL_MIN ? cfg->max_rx_txns : TBL_MIN) - 1;
	t->is = calloc(t->imask + 1, sizeof(*t->is));
	t->ts = calloc(t->tmask + 1, sizeof(*t->ts));
	t->act_cap = ACT_MIN;
	t->act = calloc(t->act_cap, sizeof(*t->act));
	if (!t->is || !t->ts || !t->act) {
		conn_free_mem(t);
		return NULL;
	}
	return t;
}

struct fc_txn *fc_txn_conn_new(struct fc_txn_engine *e, const struct fc_txn_conn_cfg *cfg,
			       const struct fc_txn_ops *ops, void *ctx)
{
	struct fc_txn *t;
	uint32_t slot = 0;

	if (!e || !cfg || !conn_cfg_ok(cfg, ops)) {
		errno = EINVAL;
		return NULL;
	}
	if (cid_lookup(e, cfg->pdl.local_cid)) {
		errno = EEXIST;
		return NULL;
	}
	for (slot = 0; slot < e->cfg.max_conns; slot++) /* CM path, not per packet */
		if (!e->conn[(e->slot_hint + slot) % e->cfg.max_conns])
			break;
	if (slot == e->cfg.max_conns) {
		errno = ENOSPC;
		return NULL;
	}
	slot = (e->slot_hint + slot) % e->cfg.max_conns;
	e->slot_hint = slot + 1;
	t = conn_alloc(cfg);
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->pdl = fc_pdl_new(&cfg->pdl, cfg->rx, cfg->cc_event ? &pdl_ops_cc : &pdl_ops, t);
	if (!t->pdl) {
		int err = errno;

		conn_free_mem(t);
		errno = err;
		return NULL;
	}
	t->e = e;
	t->ops = ops;
	t->ctx = ctx;
	t->cfg = *cfg;
	txn_res_conn_init(t);
	t->slot = slot;
	t->ordered = cfg->pdl.ordered;
	t->brsn = t->nrsn = cfg->rsn_tx;
	t->t_nrsn = cfg->rsn_rx;
	for (uint32_t i = 0; i <= t->tmask; i++)
		t->ts[i].cells = NONE;
	for (int i = 0; i < 2; i++) {
		t->q[i].head = t->q[i].tail = NONE;
	}
	t->push_max = cfg->pdl_push_max ? cfg->pdl_push_max :
		      (cfg->pdl.tx_window[FC_WIN_DATA] / 2 ? cfg->pdl.tx_window[FC_WIN_DATA] / 2 : 1);
	t->hpos = t->rd_next = t->rd_prev = t->cw_next = NONE;
	t->dl_ns = UINT64_MAX;
	t->tmo_ns = cfg->txn_timeout_ns ? cfg->txn_timeout_ns :
		    (e->cfg.txn_timeout_ns ? e->cfg.txn_timeout_ns : UINT64_MAX);
	t->tmo_dl_ns = UINT64_MAX;
	e->conn[slot] = t;
	cid_insert(e, t); /* its CID was looked up above */
	return t;
}

void fc_txn_conn_free(struct fc_txn *t)
{
	struct fc_txn_engine *e;

	if (!t)
		return;
	e = t->e;
	fc_pdl_free(t->pdl); /* no more callbacks */
	t->pdl = NULL;
	/* the Tx contexts it holds: each is one of its REQ / DATA_PKT_TX units (charged
	 * when taken, returned by txn_txp_release), so a connection with none, the common
	 * case at close, skips the walk over the whole pool (closing 65,536 connections
	 * was 65,536 walks over it) */
	for (uint32_t i = 0; i < e->ntxp && (t->used[FC_TXN_REQ_PKT_TX] ||
					     t->used[FC_TXN_DATA_PKT_TX]); i++)
		if (e->txp[i].where != TXP_FREE && e->txp[i].conn == t)
			txn_txp_release(t, i);
	for (uint32_t i = 0; i <= t->imask; i++) {
		struct islot *s = &t->is[i];
		struct txn_need n = {0};

		if (!s->used)
			continue;
		txn_need_set(&n, FC_TXN_REQ_PKT_RX, 1);
		txn_need_set(&n, FC_TXN_REQ_BUF_RX, s->rx_cells);
		txn_res_sub(t, &n);
		txn_cells_put(e, s->cells);
	}
	for (uint32_t i = 0; i <= t->tmask; i++)
		txn_tgt_release(t, &t->ts[i]);
	cid_remove(e, t);
	ready_del(e, t);
	heap_del(e, t);
	if (t->on_cwait) { /* unlink from the credit FIFO (CM path: walk it) */
		uint32_t *pp = &e->cw_head, prev = NONE;

		while (*pp != t->slot) {
			prev = *pp;
			pp = &e->conn[*pp]->cw_next;
		}
		*pp = t->cw_next;
		if (e->cw_tail == t->slot)
			e->cw_tail = prev;
	}
	e->conn[t->slot] = NULL;
	conn_free_mem(t);
}

/* ------------------------------------------------------------------------ */
/* inspection                                                                */

struct fc_pdl *fc_txn_pdl(struct fc_txn *t) { return t->pdl; }
void *fc_txn_ctx(const struct fc_txn *t) { return t->ctx; }
uint32_t fc_txn_local_cid(const struct fc_txn *t) { return t->cfg.pdl.local_cid; }
int fc_txn_is_dead(const struct fc_txn *t) { return t->dead; }
const struct fc_txn_counters *fc_txn_counters(const struct fc_txn *t) { return &t->cnt; }
uint32_t fc_txn_brsn(const struct fc_txn *t) { return t->brsn; }
uint32_t fc_txn_nrsn(const struct fc_txn *t) { return t->nrsn; }
uint32_t fc_txn_target_nrsn(const struct fc_txn *t) { return t->t_nrsn; }
uint32_t fc_txn_used(const struct fc_txn *t, enum fc_txn_res r) { return t->used[r]; }
uint32_t fc_txn_engine_used(const struct fc_txn_engine *e, enum fc_txn_res r) { return e->used[r]; }
uint64_t fc_txn_engine_unknown_cid(const struct fc_txn_engine *e) { return e->unknown_cid; }

/* 8.5.1: the oldest request delivered to the ULP and not answered, else NRSN. */
uint32_t fc_txn_target_brsn(const struct fc_txn *t)
{
	uint32_t b = t->t_nrsn;

	for (uint32_t i = 0; i <= t->tmask; i++) {
		const struct tslot *s = &t->ts[i];

		if ((s->state == FC_TXN_PUSH_REQ_ULP_TX || s->state == FC_TXN_PULL_REQ_ULP_TX) &&
		    fc_sn_lt(s->rsn, b))
			b = s->rsn;
	}
	return b;
}

/* A completed transaction keeps its last state until its slot is taken again. */
enum fc_txn_istate fc_txn_istate(const struct fc_txn *t, uint32_t rsn)
{
	const struct islot *s = islot(t, rsn);

	return s->rsn == rsn ? (enum fc_txn_istate)s->state : FC_TXN_I_FREE;
}

enum fc_txn_tstate fc_txn_tstate(const struct fc_txn *t, uint32_t rsn)
{
	const struct tslot *s = tslot(t, rsn);

	return s->rsn == rsn ? (enum fc_txn_tstate)s->state : FC_TXN_T_FREE;
}
