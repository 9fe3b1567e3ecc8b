/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn.c - the transaction sublayer (Falcon spec section 8, the transaction parts of
 * section 11) over the packet delivery sublayer (pdl.c).
 *
 * Memory, all allocated up front:
 *  - engine: the host's pools (8.2.2). Tx packet contexts, each with an MTU buffer the
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
 *    nesting level (scratch_take).
 *
 * Re-entrancy: PDL callbacks (deliver, tx_done, nack, fatal) call the ULP, which may call
 * our ULP functions back. ULP answers that need the PDL (ulp_ack / ulp_nack) are queued
 * while the connection is inside a PDL call and issued when it returns; the delivery and
 * completion loops are guarded against nesting and re-check their state each turn.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxbuf.h"
#include "txn.h"
#include "wire_err.h"
#include "wire_falcon.h"

#define NONE UINT32_MAX
#define TBL_MAX (1u << 16) /* largest transaction table */
#define POOL_MAX (1u << 24) /* largest region, packets or cells */
#define TBL_MIN 16u         /* a transaction table's first size */
#define ACT_MIN 8u          /* the deferred-call queue's first size */

enum { Q_REQ = 0, Q_DATA = 1 };          /* scheduler queues (8.3) */
enum { TXP_FREE = 0, TXP_QUEUED, TXP_PDL };

/* A Tx packet context (Tx packet pool) and its buffer (Tx buffer pool). */
struct txpkt {
	struct fc_txn *conn;
	uint8_t *buf;          /* mtu_bytes */
	uint32_t prev, next;   /* queue links; next is the free-list link */
	uint32_t rsn, len, resp_len;
	uint32_t glen;         /* bytes the ULP's ops->gather supplies after the len in buf */
	uint64_t gcookie;      /* the ULP's cookie for that gather */
	uint32_t cells;        /* Tx buffer cells charged */
	uint8_t type;          /* FC_PKT_PULL_REQ, FC_PKT_PUSH_DATA, FC_PKT_PULL_DATA */
	uint8_t where;         /* TXP_* */
};

struct txq {
	uint32_t head, tail, len;
};

/* Initiator transaction (8.4.1). */
struct islot {
	uint64_t cookie, deadline_ns;
	uint32_t rsn, txp, cells, len, resp_len;
	uint32_t rx_cells;     /* Req Buf Rx charged: cells reserved for the Pull Data */
	uint8_t used, kind, state, ready, stored, code, ulp_code;
};

/* Target transaction (8.5.1). */
struct tslot {
	uint64_t due_ns;       /* RNR_WAIT: redelivery time */
	uint32_t rsn, psn, len, resp_len, txp;
	uint32_t cells, ncells; /* network-request cells: chain, count */
	uint32_t redeliveries;
	uint8_t kind, state, stored, has_res, nack_code, ulp_code;
};

struct action { /* a PDL call deferred until the PDL returns */
	uint64_t now_ns;
	uint32_t psn;
	uint8_t ack, code, rnr, ulp;
};

struct fc_txn {
	struct fc_txn_engine *e;
	struct fc_pdl *pdl;
	const struct fc_txn_ops *ops;
	void *ctx;
	struct fc_txn_conn_cfg cfg;
	uint32_t slot;           /* index in e->conn */
	int ordered, dead;
	uint64_t now_ns;

	/* initiator (8.4.1) */
	uint32_t brsn, nrsn, imask, iready;
	struct islot *is;
	int completing;

	/* target (8.5.1) */
	uint32_t t_nrsn, tmask, awaiting, rnr_waiting;
	struct tslot *ts;
	int delivering;
	int rnr_block;           /* ordered RNR rule (8.5.3.4) */
	uint32_t rnr_rsn, rnr_count;
	uint8_t rnr_code;

	/* connection scheduler (8.3) */
	struct txq q[2];
	uint8_t q_rr, qmask;     /* qmask: bit per PDL window refused with -EAGAIN */
	uint32_t push_in_pdl, push_max;

	uint32_t used[FC_TXN_RES_COUNT];
	struct action *act;
	uint32_t nact, act_cap;
	int in_pdl, want_credits;
	int oom;                 /* no scratch for a delivery: conn_finish kills it (-ENOMEM) */
	struct fc_txn_counters cnt;

	/* the engine's lists, so that no per-packet path looks at every connection */
	uint32_t rd_next, rd_prev; /* ready list (slots): may have something to send */
	uint32_t cw_next;          /* credit-wait FIFO (slots) */
	uint32_t hpos;             /* place in the timer heap, NONE when not in it */
	uint64_t dl_ns;            /* cached earliest deadline (PDL, transactions, RNR) */
	uint8_t on_ready, on_cwait;
};

struct fc_txn_engine {
	struct fc_txn_engine_cfg cfg;
	uint32_t cap[FC_TXN_RES_COUNT], used[FC_TXN_RES_COUNT];
	uint32_t fn_used[FC_TXN_MAX_FN][FC_TXN_RES_COUNT];
	struct txpkt *txp;
	uint8_t *txmem;
	uint32_t ntxp, txp_free;
	uint8_t *cellmem;
	uint32_t *cell_next;
	uint32_t ncells, cell_free, cells_free;
	struct fc_txn **conn;
	uint32_t slot_hint;
	/* CID -> slot, open addressing with linear probing, 2 x max_conns rounded up to a
	 * power of 2: O(1) lookups for any CID the CM chose */
	uint32_t *ht, ht_mask;
	/* connections that may have output, in round-robin order (8.3); connections waiting
	 * for credits, in the order they ran out; a min-heap of slots by cached deadline */
	uint32_t rd_head, rd_tail, cw_head, cw_tail;
	uint32_t *heap, nheap;
	uint32_t *expired;         /* on_timer's scratch, max_conns */
	int released, flushing;
	uint64_t unknown_cid;
	/* MTU-sized buffers stored bytes are gathered into for a callback: one per nesting
	 * level (a callback may answer another connection, which delivers from its own) */
	uint8_t **scr;
	uint32_t nscr, scr_used;
	/* occupancy of the network-request Rx pools, as the ACKs report it (10.2) */
	struct fc_rxbuf_cfg rxbuf_cfg;
	struct fc_rxbuf rxbuf;
	uint8_t rxbuf_level;       /* fc_rxbuf_level, kept when the pools change */
};

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

static uint32_t ceil_div(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }
static int pow2(uint32_t x) { return x && !(x & (x - 1)); }

static int engine_cfg_ok(const struct fc_txn_engine_cfg *c)
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
	if (c->dbg & FC_TXN_DBG_NO_RED)
		return 1;
	/* CR#3: the red zone holds one head-of-line request of the largest size */
	return c->red_pkts >= 1 && c->red_pkts < c->cap[FC_TXN_NET_PKT_RX] &&
	       c->red_cells >= rx_max && c->red_cells < c->cap[FC_TXN_NET_BUF_RX];
}

/* ------------------------------------------------------------------------ */
/* resource accounting (8.2.2 - 8.2.4)                                        */

static int is_net(int i) { return i == FC_TXN_NET_PKT_RX || i == FC_TXN_NET_BUF_RX; }

/* Host counter resource i draws from. FC_TXN_DBG_SHARED_RX merges the network-request
 * region into the ULP-request region (CR#1 broken, for the tests). */
static int gidx(const struct fc_txn_engine *e, int i)
{
	if (!(e->cfg.dbg & FC_TXN_DBG_SHARED_RX) || !is_net(i))
		return i;
	return i == FC_TXN_NET_PKT_RX ? FC_TXN_REQ_PKT_RX : FC_TXN_REQ_BUF_RX;
}

static uint32_t red_of(const struct fc_txn_engine *e, int i)
{
	if (!is_net(i) || (e->cfg.dbg & FC_TXN_DBG_NO_RED))
		return 0;
	return i == FC_TXN_NET_PKT_RX ? e->cfg.red_pkts : e->cfg.red_cells;
}

static uint32_t conn_limit(const struct fc_txn *t, int i)
{
	if (t->cfg.mn && i < FC_TXN_ULP_CREDITS)
		return 0; /* M:N: no per-connection credits (8.2.3) */
	return t->cfg.limit[i];
}

/* May t take need? A head-of-line network request (hol) may use the red zone and is not
 * held to the function's and connection's network limits: CR#3 and the UR rule say it
 * must always get in when the host has room. */
static int res_fits(const struct fc_txn *t, const uint32_t *need, int hol)
{
	const struct fc_txn_engine *e = t->e;

	for (int i = 0; i < FC_TXN_RES_COUNT; i++) {
		int g, bypass;
		uint64_t lim, fl, cl;

		if (!need[i]) /* most counters are 0 in a request: look at nothing else */
			continue;
		g = gidx(e, i);
		bypass = hol && is_net(i);
		lim = e->cap[g];
		fl = e->cfg.fn_limit[t->cfg.fn][i];
		cl = conn_limit(t, i);
		if (!bypass)
			lim -= red_of(e, i);
		if ((uint64_t)e->used[g] + need[i] > lim)
			return 0;
		if (bypass)
			continue;
		if (fl && (uint64_t)e->fn_used[t->cfg.fn][i] + need[i] > fl)
			return 0;
		if (cl && (uint64_t)t->used[i] + need[i] > cl)
			return 0;
	}
	return 1;
}

/* The network-request pools changed: feed their EMA (spec 10.2); the quantized level
 * goes out in the connection's next ACK or NACK. */
static void rxbuf_note(struct fc_txn *t, const uint32_t *n)
{
	struct fc_txn_engine *e = t->e;

	if (n[FC_TXN_NET_PKT_RX])
		fc_rxbuf_update(&e->rxbuf, &e->rxbuf_cfg, FC_RXBUF_POOL_PKT, e->used[FC_TXN_NET_PKT_RX]);
	if (n[FC_TXN_NET_BUF_RX])
		fc_rxbuf_update(&e->rxbuf, &e->rxbuf_cfg, FC_RXBUF_POOL_BUF, e->used[FC_TXN_NET_BUF_RX]);
	if (n[FC_TXN_NET_PKT_RX] || n[FC_TXN_NET_BUF_RX]) /* recomputed only on a change */
		e->rxbuf_level = (uint8_t)fc_rxbuf_level(&e->rxbuf, &e->rxbuf_cfg);
	if (t->pdl) /* not while a connection is being torn down */
		fc_pdl_set_rxbuf_level(t->pdl, e->rxbuf_level);
}

static void res_add(struct fc_txn *t, const uint32_t *need)
{
	struct fc_txn_engine *e = t->e;

	for (int i = 0; i < FC_TXN_RES_COUNT; i++) {
		if (!need[i])
			continue;
		t->used[i] += need[i];
		e->fn_used[t->cfg.fn][i] += need[i];
		e->used[gidx(e, i)] += need[i];
	}
	rxbuf_note(t, need);
}

static void res_sub(struct fc_txn *t, const uint32_t *n)
{
	struct fc_txn_engine *e = t->e;

	for (int i = 0; i < FC_TXN_RES_COUNT; i++) {
		if (!n[i])
			continue;
		t->used[i] -= n[i];
		e->fn_used[t->cfg.fn][i] -= n[i];
		e->used[gidx(e, i)] -= n[i];
	}
	rxbuf_note(t, n);
	e->released = 1;
}

/* 8.2.3 table: what a push / pull takes from the ULP's credits. */
static void ini_need(const struct fc_txn_engine *e, uint8_t kind, uint32_t len,
		     uint32_t resp_len, uint32_t *need)
{
	memset(need, 0, FC_TXN_RES_COUNT * sizeof(*need));
	need[FC_TXN_REQ_PKT_TX] = 1;
	need[FC_TXN_REQ_PKT_RX] = 1;
	if (kind == FC_TXN_PUSH) {
		need[FC_TXN_REQ_BUF_TX] = ceil_div(len, e->cfg.tx_cell_bytes);
	} else {
		/* the request itself: 1 (more when its headers exceed a cell) */
		need[FC_TXN_REQ_BUF_TX] = len ? ceil_div(len, e->cfg.tx_cell_bytes) : 1;
		need[FC_TXN_REQ_BUF_RX] = ceil_div(resp_len, e->cfg.rx_cell_bytes);
	}
}

/* 8.2.4 table: what a received request takes from the network-request region. */
static void net_need(const struct fc_txn_engine *e, uint8_t kind, uint32_t len, uint32_t *need)
{
	memset(need, 0, FC_TXN_RES_COUNT * sizeof(*need));
	need[FC_TXN_NET_PKT_RX] = 1;
	need[FC_TXN_NET_BUF_RX] = ceil_div(len, e->cfg.rx_cell_bytes);
	if (kind == FC_TXN_PULL && !need[FC_TXN_NET_BUF_RX])
		need[FC_TXN_NET_BUF_RX] = 1;
}

/* ------------------------------------------------------------------------ */
/* Rx cells                                                                  */

/* A chain of n cells; the accounting above guarantees they exist. */
static uint32_t cells_get(struct fc_txn_engine *e, uint32_t n)
{
	uint32_t head = NONE;

	if (n > e->cells_free)
		return NONE; /* cannot happen: regions never exceed the arena */
	while (n--) {
		uint32_t c = e->cell_free;

		e->cell_free = e->cell_next[c];
		e->cell_next[c] = head;
		head = c;
		e->cells_free--;
	}
	return head;
}

static void cells_put(struct fc_txn_engine *e, uint32_t head)
{
	while (head != NONE) {
		uint32_t n = e->cell_next[head];

		e->cell_next[head] = e->cell_free;
		e->cell_free = head;
		e->cells_free++;
		head = n;
	}
}

static void cells_copy_in(struct fc_txn_engine *e, uint32_t c, const uint8_t *src, uint32_t len)
{
	uint32_t cell = e->cfg.rx_cell_bytes;

	for (uint32_t off = 0; off < len && c != NONE; c = e->cell_next[c]) {
		uint32_t k = len - off < cell ? len - off : cell;

		memcpy(e->cellmem + (size_t)c * cell, src + off, k);
		off += k;
	}
}

static void cells_gather(const struct fc_txn_engine *e, uint32_t c, uint8_t *dst, uint32_t len)
{
	uint32_t cell = e->cfg.rx_cell_bytes;

	for (uint32_t off = 0; off < len && c != NONE; c = e->cell_next[c]) {
		uint32_t k = len - off < cell ? len - off : cell;

		memcpy(dst + off, e->cellmem + (size_t)c * cell, k);
		off += k;
	}
}

/* A buffer to gather stored bytes into for one callback; scratch_give after it returns.
 * The engine keeps one per nesting level (two made up front); NULL only when a deeper
 * level finds no memory. */
static uint8_t *scratch_take(struct fc_txn_engine *e)
{
	if (e->scr_used == e->nscr) {
		uint8_t **v = realloc(e->scr, (e->nscr + 1) * sizeof(*v));

		if (!v)
			return NULL;
		e->scr = v;
		if (!(v[e->nscr] = malloc(e->cfg.mtu_bytes)))
			return NULL;
		e->nscr++;
	}
	return e->scr[e->scr_used++];
}

static void scratch_give(struct fc_txn_engine *e) { e->scr_used--; }

/* ------------------------------------------------------------------------ */
/* Tx packet contexts and the scheduler queues                                */

static uint32_t txp_get(struct fc_txn_engine *e)
{
	uint32_t i = e->txp_free;

	if (i != NONE)
		e->txp_free = e->txp[i].next;
	return i;
}

static enum fc_win_id win_of(uint8_t type)
{
	return type == FC_PKT_PULL_REQ ? FC_WIN_REQ : FC_WIN_DATA;
}

/* Give back what context idx holds (8.2.3: credits return when resources are freed). */
static void txp_release(struct fc_txn *t, uint32_t idx)
{
	struct fc_txn_engine *e = t->e;
	struct txpkt *k = &e->txp[idx];
	uint32_t n[FC_TXN_RES_COUNT] = {0};
	int data = k->type == FC_PKT_PULL_DATA;

	n[data ? FC_TXN_DATA_PKT_TX : FC_TXN_REQ_PKT_TX] = 1;
	n[data ? FC_TXN_DATA_BUF_TX : FC_TXN_REQ_BUF_TX] = k->cells;
	res_sub(t, n);
	k->where = TXP_FREE;
	k->conn = NULL;
	k->next = e->txp_free;
	e->txp_free = idx;
}

static void q_append(struct fc_txn *t, int qi, uint32_t idx)
{
	struct txpkt *x = t->e->txp;
	struct txq *q = &t->q[qi];

	x[idx].prev = q->tail;
	x[idx].next = NONE;
	if (q->tail != NONE)
		x[q->tail].next = idx;
	else
		q->head = idx;
	q->tail = idx;
	q->len++;
	x[idx].where = TXP_QUEUED;
}

static void q_unlink(struct fc_txn *t, int qi, uint32_t idx)
{
	struct txpkt *x = t->e->txp;
	struct txq *q = &t->q[qi];

	if (x[idx].prev != NONE)
		x[x[idx].prev].next = x[idx].next;
	else
		q->head = x[idx].next;
	if (x[idx].next != NONE)
		x[x[idx].next].prev = x[idx].prev;
	else
		q->tail = x[idx].prev;
	q->len--;
}

/* The queue a context sits on: Pull Data on its own (CR#2) unless broken on purpose. */
static int queue_of(const struct fc_txn *t, uint8_t type)
{
	if (type == FC_PKT_PULL_DATA && !(t->e->cfg.dbg & FC_TXN_DBG_SHARED_TXQ))
		return Q_DATA;
	return Q_REQ;
}

/* Take a context off its queue and free it (never reached the PDL). */
static void txp_drop_queued(struct fc_txn *t, uint32_t idx)
{
	q_unlink(t, queue_of(t, t->e->txp[idx].type), idx);
	txp_release(t, idx);
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

static void pdl_answer(struct fc_txn *t, uint32_t psn, int ack, uint8_t code, uint8_t rnr,
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

static void touch(struct fc_txn *t);

static void conn_die(struct fc_txn *t, int reason);

static void conn_finish(struct fc_txn *t)
{
	if (t->in_pdl)
		return;
	if (t->oom && !t->dead)
		conn_die(t, -ENOMEM);
	for (uint32_t i = 0; i < t->nact && !t->dead; i++)
		do_action(t, &t->act[i]);
	t->nact = 0;
	touch(t);
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

static uint64_t ini_deadline(const struct fc_txn *t);
static uint64_t tgt_deadline(const struct fc_txn *t);

/* After anything happened on t: it may have output (ready list; poll_tx drops it again
 * when it has none) and its earliest deadline may have moved (heap). Every entry point
 * that can change a connection's state ends here. */
static void touch(struct fc_txn *t)
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
	x = ini_deadline(t);
	if (x < d)
		d = x;
	x = tgt_deadline(t);
	if (x < d)
		d = x;
	heap_set(e, t, d);
}

/* ---- credit waiters ---- */

static void want_credits(struct fc_txn *t)
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

/* Tell connections that saw -EAGAIN that resources came back (8.2.3), in the order they
 * ran out. Waiters that run out again during a callback queue up for the next round. */
static void engine_flush(struct fc_txn_engine *e)
{
	if (e->flushing)
		return;
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

static void set_now(struct fc_txn *t, uint64_t now)
{
	if (now > t->now_ns)
		t->now_ns = now;
}

/* ------------------------------------------------------------------------ */
/* initiator: completions (8.4.2)                                             */

static struct islot *islot(const struct fc_txn *t, uint32_t rsn) { return &t->is[rsn & t->imask]; }

static struct islot *ifind(const struct fc_txn *t, uint32_t rsn)
{
	struct islot *s = islot(t, rsn);

	return s->used && s->rsn == rsn ? s : NULL;
}

/* Double the initiator table (up to max_txns). Entries keep their RSN, so each moves to
 * rsn & new mask; two entries never meet there (they differed in the old mask's bits).
 * Completed ones move too: fc_txn_istate reports them until the slot is reused. Called
 * only from ini_submit, where no slot pointer is held. */
static int tbl_grow_i(struct fc_txn *t)
{
	uint32_t cap = t->imask + 1, nmask = 2 * cap - 1;
	struct islot *n;

	if (2 * cap > t->cfg.max_txns)
		return -1;
	if (!(n = calloc(2 * cap, sizeof(*n)))) {
		t->cnt.tbl_grow_fail++;
		return -1;
	}
	for (uint32_t i = 0; i < cap; i++)
		if (t->is[i].used || t->is[i].state != FC_TXN_I_FREE)
			n[t->is[i].rsn & nmask] = t->is[i];
	free(t->is);
	t->is = n;
	t->imask = nmask;
	t->cnt.tbl_grows++;
	return 0;
}

/* BRSN: the oldest transaction not yet completed (8.4.1). */
static void ini_advance(struct fc_txn *t)
{
	while (t->brsn != t->nrsn && !islot(t, t->brsn)->used)
		t->brsn++;
}

static void make_ready(struct fc_txn *t, struct islot *s, uint8_t code)
{
	s->code = code;
	s->ready = 1;
	t->iready++;
}

/* Detach s from its Tx context: a queued one is freed, one in the PDL is left to its
 * tx_done (the PDL may still send it; section 11: the PDL reclaims it). */
static void ini_detach(struct fc_txn *t, struct islot *s)
{
	if (s->txp != NONE && t->e->txp[s->txp].where == TXP_QUEUED)
		txp_drop_queued(t, s->txp);
	s->txp = NONE;
}

static void ini_fail(struct fc_txn *t, struct islot *s, uint8_t code)
{
	ini_detach(t, s);
	make_ready(t, s, code);
}

/* Complete s to the ULP with data (NULL: its stored bytes) and free it. */
static void ini_complete(struct fc_txn *t, struct islot *s, const uint8_t *data)
{
	struct fc_txn_engine *e = t->e; /* t may be gone when complete returns */
	uint32_t n[FC_TXN_RES_COUNT] = {0};
	struct fc_txn_cmpl c = { .cookie = s->cookie, .rsn = s->rsn, .kind = s->kind,
				 .code = s->code, .ulp_code = s->ulp_code };
	uint8_t *scr = NULL;

	if (s->kind == FC_TXN_PULL && s->code == FC_CMPL_ACK) {
		if (!data && s->stored && !(data = scr = scratch_take(e))) {
			c.code = FC_CMPL_LOCAL_RSRC; /* no memory to hand the bytes out */
			t->cnt.scratch_fail++;
		} else if (scr) {
			cells_gather(e, s->cells, scr, s->len);
		}
		if (data) {
			c.data = data;
			c.len = s->len;
		}
	}
	if (s->ready)
		t->iready--;
	ini_detach(t, s);
	n[FC_TXN_REQ_PKT_RX] = 1;
	n[FC_TXN_REQ_BUF_RX] = s->rx_cells;
	res_sub(t, n);
	cells_put(t->e, s->cells);
	s->cells = NONE;
	s->state = s->kind == FC_TXN_PUSH ? FC_TXN_PUSH_CPL_TX : FC_TXN_PULL_DATA_ULP_TX;
	s->used = 0;
	s->ready = 0;
	ini_advance(t);
	t->cnt.cmpl[c.code & 15]++;
	t->ops->complete(t->ctx, t, &c);
	if (scr)
		scratch_give(e);
}

/* Hand out every completion whose turn it is: on ordered connections only the one at
 * BRSN, again and again (8.4.2); on unordered ones any. */
static void ini_drain(struct fc_txn *t)
{
	if (t->completing)
		return;
	t->completing = 1;
	while (t->iready) {
		struct islot *s = NULL;

		ini_advance(t);
		if (t->ordered) {
			if (t->brsn != t->nrsn && islot(t, t->brsn)->ready)
				s = islot(t, t->brsn);
		} else {
			for (uint32_t r = t->brsn; r != t->nrsn && !s; r++)
				if (islot(t, r)->used && islot(t, r)->ready)
					s = islot(t, r);
		}
		if (!s)
			break;
		ini_complete(t, s, NULL);
	}
	t->completing = 0;
}

static uint8_t cmpl_of(enum fc_tx_status st, uint8_t nack_code)
{
	switch (st) {
	case FC_TX_ACKED:
		return FC_CMPL_ACK;
	case FC_TX_NACKED:
		switch (nack_code) {
		case FC_NACK_CIE: return FC_CMPL_TARGET_NACK_CIE;
		case FC_NACK_NRE: return FC_CMPL_TARGET_NACK_NRE;
		case FC_NACK_INVALID_CID: return FC_CMPL_TARGET_NACK_CID;
		default: return FC_CMPL_REMOTE_ERR; /* remote xLR drop */
		}
	case FC_TX_RETX_EXHAUSTED:
		return FC_CMPL_LOCAL_TO; /* section 11 note 1 */
	default:
		return FC_CMPL_DEAD_CONN;
	}
}

/* ------------------------------------------------------------------------ */
/* initiator: transactions from the ULP (8.4.3.1, 8.4.3.3)                     */

static int reject_mn(struct fc_txn *t, uint8_t kind, uint64_t cookie)
{
	struct fc_txn_cmpl c = { .cookie = cookie, .kind = kind, .code = FC_CMPL_LOCAL_RSRC,
				 .rejected = 1 };

	t->cnt.mn_rejected++;
	t->cnt.cmpl[FC_CMPL_LOCAL_RSRC]++;
	t->ops->complete(t->ctx, t, &c);
	return FC_TXN_REJECTED;
}

static int ini_submit(struct fc_txn *t, uint8_t kind, const void *data, uint32_t len,
		      uint32_t glen, uint32_t resp_len, uint64_t cookie, uint64_t now,
		      uint32_t *rsn_out)
{
	struct fc_txn_engine *e = t->e;
	uint32_t need[FC_TXN_RES_COUNT], rsn = t->nrsn, k;
	struct islot *s;
	struct txpkt *x;

	if (t->dead)
		return -EPIPE;
	if (len > e->cfg.mtu_bytes || glen > e->cfg.mtu_bytes - len || resp_len > e->cfg.mtu_bytes)
		return -EMSGSIZE;
	if ((len && !data) || (glen && !t->ops->gather))
		return -EINVAL;
	set_now(t, now);
	ini_need(e, kind, len + glen, resp_len, need); /* the Tx buffer is charged by size */
	if ((t->nrsn - t->brsn > t->imask && tbl_grow_i(t)) || !res_fits(t, need, 0)) {
		if (t->cfg.mn)
			return reject_mn(t, kind, cookie);
		want_credits(t);
		t->cnt.submit_eagain++;
		return -EAGAIN;
	}
	res_add(t, need);
	k = txp_get(e); /* exists: the Tx regions bound the contexts in use */
	x = &e->txp[k];
	x->conn = t;
	x->type = kind == FC_TXN_PUSH ? FC_PKT_PUSH_DATA : FC_PKT_PULL_REQ;
	x->rsn = rsn;
	x->len = len;
	x->glen = glen;
	x->gcookie = cookie;
	x->resp_len = resp_len;
	x->cells = need[FC_TXN_REQ_BUF_TX];
	if (len)
		memcpy(x->buf, data, len);
	s = islot(t, rsn);
	*s = (struct islot){
		.cookie = cookie, .rsn = rsn, .txp = k, .resp_len = resp_len, .used = 1,
		.kind = kind, .rx_cells = need[FC_TXN_REQ_BUF_RX],
		.cells = cells_get(e, need[FC_TXN_REQ_BUF_RX]),
		.deadline_ns = e->cfg.txn_timeout_ns ? now + e->cfg.txn_timeout_ns : UINT64_MAX,
		.state = kind == FC_TXN_PUSH ? FC_TXN_PUSH_REQ_ULP_RX : FC_TXN_PULL_REQ_ULP_RX,
	};
	q_append(t, Q_REQ, k);
	t->nrsn++;
	if (kind == FC_TXN_PUSH)
		t->cnt.push_ulp++;
	else
		t->cnt.pull_ulp++;
	if (rsn_out)
		*rsn_out = rsn;
	touch(t);
	return 0;
}

int fc_txn_push(struct fc_txn *t, const void *data, uint32_t len, uint64_t cookie,
		uint64_t now_ns, uint32_t *rsn)
{
	return ini_submit(t, FC_TXN_PUSH, data, len, 0, 0, cookie, now_ns, rsn);
}

int fc_txn_push_sg(struct fc_txn *t, const void *hdr, uint32_t hdr_len, uint32_t gather_len,
		   uint64_t cookie, uint64_t now_ns, uint32_t *rsn)
{
	return ini_submit(t, FC_TXN_PUSH, hdr, hdr_len, gather_len, 0, cookie, now_ns, rsn);
}

int fc_txn_pull(struct fc_txn *t, const void *req, uint32_t len, uint32_t resp_len,
		uint64_t cookie, uint64_t now_ns, uint32_t *rsn)
{
	return ini_submit(t, FC_TXN_PULL, req, len, 0, resp_len, cookie, now_ns, rsn);
}

void fc_txn_credits(const struct fc_txn *t, uint32_t credits[FC_TXN_ULP_CREDITS])
{
	for (int i = 0; i < FC_TXN_ULP_CREDITS; i++) {
		uint32_t lim = conn_limit(t, i);

		credits[i] = lim ? lim - t->used[i] : UINT32_MAX;
	}
}

/* ------------------------------------------------------------------------ */
/* initiator: what the PDL tells us                                           */

/* Our Push Data or Pull Request was released (8.4.3.1, 8.4.3.3, section 11). */
static void ini_tx_done(struct fc_txn *t, uint32_t idx, uint32_t rsn, uint8_t type,
			enum fc_tx_status st, uint8_t code)
{
	struct islot *s = ifind(t, rsn);

	if (!s || s->txp != idx)
		return; /* completed meanwhile (timeout, Pull Data first) */
	s->txp = NONE;
	if (s->ready)
		return;
	if (st == FC_TX_ACKED && type == FC_PKT_PULL_REQ) {
		s->state = FC_TXN_PULL_REQ_ACKD;
		return;
	}
	if (st == FC_TX_ACKED)
		s->state = FC_TXN_PUSH_DATA_ACKD;
	make_ready(t, s, cmpl_of(st, code));
	ini_drain(t);
}

/* Pull Data for us (8.4.3.2). */
static void ini_pull_data(struct fc_txn *t, const struct fc_pdl_rx_pkt *p)
{
	struct islot *s = ifind(t, p->rsn);

	if (!s || s->kind != FC_TXN_PULL || s->ready ||
	    (s->state != FC_TXN_PULL_REQ_TX && s->state != FC_TXN_PULL_REQ_ACKD)) {
		t->cnt.pull_data_unmatched++; /* no outstanding request: discard */
		return;
	}
	s->state = FC_TXN_PULL_DATA_RX;
	ini_detach(t, s); /* the request evidently arrived; its ACK may still be on the way */
	if (p->len > s->resp_len) {
		/* section 11: longer than requested -> kCmplOpErr (note 2: shorter is fine) */
		t->cnt.pull_data_long++;
		make_ready(t, s, FC_CMPL_OP_ERR);
	} else {
		s->len = p->len;
		s->code = !p->len && s->resp_len ? FC_CMPL_TARGET_NACK_CIE : FC_CMPL_ACK; /* 8.5.3.5 */
		if (!t->completing && (!t->ordered || p->rsn == t->brsn)) {
			ini_complete(t, s, p->payload);
		} else {
			cells_copy_in(t->e, s->cells, p->payload, p->len);
			s->stored = 1;
			make_ready(t, s, s->code);
		}
	}
	ini_drain(t);
}

/* The target gave up on its Pull Data for our request (a Resync of Pull Data). */
static void ini_resync(struct fc_txn *t, const struct fc_pdl_rx_pkt *p)
{
	struct islot *s = ifind(t, p->rsn);

	t->cnt.resync_rx++;
	if (!s || s->kind != FC_TXN_PULL || s->ready)
		return;
	ini_fail(t, s, FC_CMPL_REMOTE_ERR);
	ini_drain(t);
}

/* Transaction timeouts (section 11, kCmplLocalTO). Deadlines grow with the RSN. */
static void ini_timeouts(struct fc_txn *t, uint64_t now)
{
	for (uint32_t r = t->brsn; r != t->nrsn; r++) {
		struct islot *s = islot(t, r);

		if (!s->used || s->ready)
			continue;
		if (s->deadline_ns > now)
			break;
		t->cnt.timeouts++;
		ini_fail(t, s, FC_CMPL_LOCAL_TO);
	}
	ini_drain(t);
}

static uint64_t ini_deadline(const struct fc_txn *t)
{
	for (uint32_t r = t->brsn; r != t->nrsn; r++) {
		const struct islot *s = islot(t, r);

		if (s->used && !s->ready)
			return s->deadline_ns;
	}
	return UINT64_MAX;
}

/* ------------------------------------------------------------------------ */
/* target: delivery in RSN order (8.5.2)                                      */

static struct tslot *tslot(const struct fc_txn *t, uint32_t rsn) { return &t->ts[rsn & t->tmask]; }

/* Does s stand for a transaction? The terminal states stay readable (fc_txn_tstate)
 * until the slot is taken again. */
static int tbusy(const struct tslot *s)
{
	return s->state != FC_TXN_T_FREE && s->state != FC_TXN_PUSH_REQ_ULP_ACKD &&
	       s->state != FC_TXN_PULL_DATA_ACKD;
}

static struct tslot *tfind(const struct fc_txn *t, uint32_t rsn)
{
	struct tslot *s = tslot(t, rsn);

	return tbusy(s) && s->rsn == rsn ? s : NULL;
}

/* Double the target table (up to max_rx_txns), as tbl_grow_i. */
static int tbl_grow_t(struct fc_txn *t)
{
	uint32_t cap = t->tmask + 1, nmask = 2 * cap - 1;
	struct tslot *n;

	if (2 * cap > t->cfg.max_rx_txns)
		return -1;
	if (!(n = calloc(2 * cap, sizeof(*n)))) {
		t->cnt.tbl_grow_fail++;
		return -1;
	}
	for (uint32_t i = 0; i < 2 * cap; i++)
		n[i].cells = NONE;
	for (uint32_t i = 0; i < cap; i++)
		if (t->ts[i].state != FC_TXN_T_FREE)
			n[t->ts[i].rsn & nmask] = t->ts[i];
	free(t->ts);
	t->ts = n;
	t->tmask = nmask;
	t->cnt.tbl_grows++;
	return 0;
}

/* Grow the target table until request r of the peer has its own slot: within the table's
 * reach of NRSN (ordered) and not on a busy slot of another RSN. Below NRSN (ordered) is
 * left as it is: such an RSN is refused. At max_rx_txns the caller refuses as before. */
static void tbl_fit_t(struct fc_txn *t, uint32_t r)
{
	if (t->ordered && fc_sn_lt(r, t->t_nrsn))
		return;
	for (;;) {
		const struct tslot *s = tslot(t, r);

		if (!(t->ordered && r - t->t_nrsn > t->tmask) && !(tbusy(s) && s->rsn != r))
			return;
		if (tbl_grow_t(t))
			return;
	}
}

/* Give back the network-request resources of s (8.2.4). */
static void tgt_release(struct fc_txn *t, struct tslot *s)
{
	uint32_t n[FC_TXN_RES_COUNT] = {0};

	if (!s->has_res)
		return;
	n[FC_TXN_NET_PKT_RX] = 1;
	n[FC_TXN_NET_BUF_RX] = s->ncells;
	res_sub(t, n);
	cells_put(t->e, s->cells);
	s->cells = NONE;
	s->has_res = 0;
	s->stored = 0;
}

/* Hand s to the ULP; data NULL: its stored bytes. Returns 0, or -ENOMEM with nothing
 * changed when there is no scratch for the stored bytes (the connection dies in
 * conn_finish). */
static int tgt_deliver(struct fc_txn *t, struct tslot *s, const uint8_t *data)
{
	struct fc_txn_engine *e = t->e; /* t may be gone when request returns */
	struct fc_txn_req r = { .kind = s->kind, .rsn = s->rsn, .len = s->len,
				.resp_len = s->resp_len, .redelivery = s->redeliveries };
	uint8_t *scr = NULL;

	if (!data && s->len) {
		if (!(scr = scratch_take(e))) {
			t->cnt.scratch_fail++;
			t->oom = 1;
			return -ENOMEM;
		}
		cells_gather(e, s->cells, scr, s->len);
		data = scr;
	}
	r.data = data;
	s->state = s->kind == FC_TXN_PUSH ? FC_TXN_PUSH_REQ_ULP_TX : FC_TXN_PULL_REQ_ULP_TX;
	if (t->ordered)
		t->awaiting++;
	else if (!fc_sn_lt(s->rsn, t->t_nrsn))
		t->t_nrsn = s->rsn + 1;
	t->ops->request(t->ctx, t, &r);
	if (scr)
		scratch_give(e);
	return 0;
}

/* Ordered: deliver from NRSN on while each request is answered before the next. cur is
 * the request being admitted, whose bytes are cur_data and not stored. */
static void tgt_deliver_ready(struct fc_txn *t, const struct tslot *cur, const uint8_t *cur_data)
{
	if (t->delivering || !t->ordered)
		return;
	t->delivering = 1;
	while (!t->awaiting && !t->dead) {
		struct tslot *s = tslot(t, t->t_nrsn);

		if (!tbusy(s) || s->rsn != t->t_nrsn)
			break;
		if (s->state == FC_TXN_T_SKIPPED) { /* resynced by the initiator */
			s->state = FC_TXN_T_FREE;
			t->t_nrsn++;
			continue;
		}
		if ((s->state != FC_TXN_PUSH_DATA_RX && s->state != FC_TXN_PULL_REQ_RX) ||
		    (!s->stored && s != cur && s->len))
			break;
		t->t_nrsn++;
		if (tgt_deliver(t, s, s->stored ? NULL : cur_data)) {
			t->t_nrsn--; /* not delivered: the connection dies in conn_finish */
			break;
		}
	}
	t->delivering = 0;
}

/* Refuse the packet being delivered by the PDL with a NACK (9.1.7). */
static int refuse(struct fc_pdl_nack *nack, uint8_t code, uint8_t rnr, uint8_t ulp, uint64_t *cnt)
{
	nack->code = code;
	nack->rnr_timeout = rnr;
	nack->ulp_code = ulp;
	(*cnt)++;
	return 1;
}

/* Refuse a request for lack of resources (8.5.3.1, 8.5.3.3; section 11: resource drop
 * NACK). The initiator's PDL retransmits it by its timer while its RUE shrinks ncwnd. */
static int refuse_rsrc(uint8_t kind, struct fc_pdl_nack *nack, uint64_t *cnt)
{
	(void)kind;
	return refuse(nack, FC_NACK_RESOURCE, 0, 0, cnt);
}

/* An RSN that cannot be ours to receive (below NRSN, no record): a peer's bug. A push
 * completes in error at its initiator instead of hanging there. */
static int bad_rsn(struct fc_txn *t, uint8_t kind, struct fc_pdl_nack *nack)
{
	if (kind == FC_TXN_PULL) {
		t->cnt.bad_rsn++;
		return 0; /* acknowledged and dropped: the initiator times out */
	}
	return refuse(nack, FC_NACK_CIE, 0, 0, &t->cnt.bad_rsn);
}

/* Push Data or Pull Request from the network (8.5.3.1, 8.5.3.3). Returns the PDL deliver
 * verdict: 0 taken, 1 refused with *nack. */
static int tgt_request(struct fc_txn *t, const struct fc_pdl_rx_pkt *p, struct fc_pdl_nack *nack)
{
	uint8_t kind = p->type == FC_PKT_PUSH_DATA ? FC_TXN_PUSH : FC_TXN_PULL;
	uint32_t need[FC_TXN_RES_COUNT], r = p->rsn;
	struct tslot *s;
	int hol;

	tbl_fit_t(t, r);
	s = tslot(t, r);
	if (s->state == FC_TXN_T_NACKED && s->rsn == r) /* 6.6.5 step 6: the same NACK */
		return kind == FC_TXN_PUSH ?
			refuse(nack, s->nack_code, 0, s->ulp_code, &t->cnt.renack) :
			bad_rsn(t, kind, nack);
	if (t->ordered) {
		if (fc_sn_lt(r, t->t_nrsn))
			return bad_rsn(t, kind, nack);
		if (t->rnr_block && kind == FC_TXN_PUSH && fc_sn_lt(t->rnr_rsn, r))
			return refuse(nack, FC_NACK_RNR, t->rnr_code, 0, &t->cnt.auto_rnr);
		if (r - t->t_nrsn > t->tmask)
			return refuse_rsrc(kind, nack, &t->cnt.refused_slot);
	}
	if (tbusy(s))
		return s->rsn == r ? bad_rsn(t, kind, nack) :
		       refuse_rsrc(kind, nack, &t->cnt.refused_slot);
	hol = t->ordered && r == t->t_nrsn;
	net_need(t->e, kind, p->len, need);
	if (!res_fits(t, need, hol))
		return refuse_rsrc(kind, nack, &t->cnt.refused_rsrc);
	if (hol && !res_fits(t, need, 0))
		t->cnt.hol_red++; /* only the red zone let it in (8.2.4) */
	res_add(t, need);
	*s = (struct tslot){
		.rsn = r, .psn = p->psn, .len = p->len, .kind = kind, .has_res = 1,
		.resp_len = kind == FC_TXN_PULL ? p->req_len : 0, .txp = NONE,
		.ncells = need[FC_TXN_NET_BUF_RX], .cells = cells_get(t->e, need[FC_TXN_NET_BUF_RX]),
		.state = kind == FC_TXN_PUSH ? FC_TXN_PUSH_DATA_RX : FC_TXN_PULL_REQ_RX,
		.redeliveries = t->rnr_block && r == t->rnr_rsn ? t->rnr_count : 0,
	};
	if (kind == FC_TXN_PUSH)
		t->cnt.push_rx++;
	else
		t->cnt.pull_req_rx++;
	/* a pull may be redelivered after an RNR: keep its bytes; so must a request that
	 * waits for its turn */
	if (kind == FC_TXN_PULL || (t->ordered && (r != t->t_nrsn || t->awaiting || t->delivering))) {
		cells_copy_in(t->e, s->cells, p->payload, p->len);
		s->stored = 1;
		if (t->ordered && r != t->t_nrsn)
			t->cnt.held++;
	}
	if (t->ordered)
		tgt_deliver_ready(t, s, p->payload);
	else
		tgt_deliver(t, s, p->payload);
	return 0;
}

/* A Resync for one of the initiator's requests (9.1.8, 6.6.5 step 8). */
static void tgt_resync(struct fc_txn *t, const struct fc_pdl_rx_pkt *p)
{
	uint32_t r = p->rsn;
	struct tslot *s;

	tbl_fit_t(t, r);
	s = tslot(t, r);
	t->cnt.resync_rx++;
	if (tbusy(s) && s->rsn == r) {
		if (s->state == FC_TXN_T_RNR_WAIT)
			t->rnr_waiting--;
		if (s->state == FC_TXN_T_NACKED) {
			s->state = FC_TXN_T_FREE; /* the NACKed push is over */
		} else if (s->state == FC_TXN_PUSH_DATA_RX || s->state == FC_TXN_PULL_REQ_RX ||
			   s->state == FC_TXN_T_RNR_WAIT) {
			tgt_release(t, s);
			s->state = t->ordered ? FC_TXN_T_SKIPPED : FC_TXN_T_FREE;
			t->cnt.skipped++;
		}
	} else if (t->ordered && !tbusy(s) && !fc_sn_lt(r, t->t_nrsn) &&
		   r - t->t_nrsn <= t->tmask) {
		/* never received and never coming: ordered delivery passes over it */
		s->rsn = r;
		s->state = FC_TXN_T_SKIPPED;
		t->cnt.skipped++;
	}
	if (t->rnr_block && r == t->rnr_rsn)
		t->rnr_block = 0;
	tgt_deliver_ready(t, NULL, NULL);
}

/* Our Pull Data was released. */
static void tgt_tx_done(struct fc_txn *t, uint32_t idx, uint32_t rsn)
{
	struct tslot *s = tfind(t, rsn);

	if (!s || s->kind != FC_TXN_PULL || s->txp != idx)
		return;
	s->state = FC_TXN_PULL_DATA_ACKD; /* the transaction is over; the slot is free */
}

/* Pull RNR redeliveries due (8.5.3.4). */
static void tgt_timers(struct fc_txn *t, uint64_t now)
{
	if (!t->rnr_waiting)
		return;
	for (uint32_t i = 0; i <= t->tmask && t->rnr_waiting; i++) {
		struct tslot *s = &t->ts[i];

		if (s->state != FC_TXN_T_RNR_WAIT || s->due_ns > now)
			continue;
		s->state = FC_TXN_PULL_REQ_RX;
		t->rnr_waiting--;
		t->cnt.pull_redeliver++;
		if (!t->ordered)
			tgt_deliver(t, s, NULL);
	}
	tgt_deliver_ready(t, NULL, NULL);
}

static uint64_t tgt_deadline(const struct fc_txn *t)
{
	uint64_t d = UINT64_MAX;

	if (!t->rnr_waiting)
		return d;
	for (uint32_t i = 0; i <= t->tmask; i++)
		if (t->ts[i].state == FC_TXN_T_RNR_WAIT && t->ts[i].due_ns < d)
			d = t->ts[i].due_ns;
	return d;
}

/* ------------------------------------------------------------------------ */
/* target: the ULP's answers (8.5.3.3 - 8.5.3.5)                               */

static struct tslot *tgt_waiting(const struct fc_txn *t, uint32_t rsn)
{
	struct tslot *s = tfind(t, rsn);

	if (!s || (s->state != FC_TXN_PUSH_REQ_ULP_TX && s->state != FC_TXN_PULL_REQ_ULP_TX))
		return NULL;
	return s;
}

/* Common part of every answer: the ordered delivery may go on; a final answer to the
 * RNR'd request lifts the ordered RNR rule. */
static void tgt_answered(struct fc_txn *t, const struct tslot *s, int final)
{
	if (t->ordered && t->awaiting)
		t->awaiting--;
	if (final && t->rnr_block && s->rsn == t->rnr_rsn)
		t->rnr_block = 0;
}

static int ulp_enter(struct fc_txn *t, uint32_t rsn, uint64_t now, struct tslot **s)
{
	if (t->dead)
		return -EPIPE;
	set_now(t, now);
	*s = tgt_waiting(t, rsn);
	return *s ? 0 : -ENOENT;
}

static int ulp_leave(struct fc_txn *t)
{
	tgt_deliver_ready(t, NULL, NULL);
	conn_finish(t);
	engine_flush(t->e);
	return 0;
}

int fc_txn_accept(struct fc_txn *t, uint32_t rsn, uint64_t now_ns)
{
	struct tslot *s;
	int rc = ulp_enter(t, rsn, now_ns, &s);

	if (rc)
		return rc;
	tgt_answered(t, s, 1);
	tgt_release(t, s);
	if (s->kind == FC_TXN_PUSH) {
		pdl_answer(t, s->psn, 1, 0, 0, 0); /* 8.5.3.3: trigger the ACK */
		s->state = FC_TXN_PUSH_REQ_ULP_ACKD; /* over; the slot is free */
	} else {
		s->state = FC_TXN_PULL_REQ_ULP_ACKD;
	}
	return ulp_leave(t);
}

/* Ordered RNR rule (8.5.3.4): later pushes are refused too until rsn is accepted; the
 * ones already held are NACKed now (the held pulls wait for their turn). */
static void rnr_later(struct fc_txn *t, uint32_t rsn)
{
	for (uint32_t d = 1; d <= t->tmask; d++) {
		struct tslot *s = tslot(t, rsn + d);

		if (s->state != FC_TXN_PUSH_DATA_RX || s->rsn != rsn + d)
			continue;
		tgt_release(t, s);
		pdl_answer(t, s->psn, 0, FC_NACK_RNR, t->rnr_code, 0);
		s->state = FC_TXN_T_FREE;
		t->cnt.auto_rnr++;
	}
}

int fc_txn_rnr(struct fc_txn *t, uint32_t rsn, uint8_t code, uint64_t now_ns)
{
	struct tslot *s;
	int rc = ulp_enter(t, rsn, now_ns, &s);

	if (rc)
		return rc;
	if (code > FC_NACK_RNR_TO_MASK)
		return -EINVAL;
	t->cnt.ulp_rnr++;
	tgt_answered(t, s, 0);
	if (s->kind == FC_TXN_PUSH) { /* the initiator retransmits it */
		tgt_release(t, s);
		pdl_answer(t, s->psn, 0, FC_NACK_RNR, code, 0);
		s->state = FC_TXN_T_FREE;
	} else {                      /* redelivered here (6.6.4) */
		s->state = FC_TXN_T_RNR_WAIT;
		s->due_ns = t->now_ns + fc_rnr_timeout_ns(code);
		s->redeliveries++;
		t->rnr_waiting++;
	}
	if (t->ordered) {
		if (!t->rnr_block || t->rnr_rsn != rsn)
			t->rnr_count = 0;
		t->rnr_block = 1;
		t->rnr_rsn = rsn;
		t->rnr_code = code;
		t->rnr_count++;
		t->t_nrsn = rsn; /* delivered again before anything after it */
		rnr_later(t, rsn);
	}
	return ulp_leave(t);
}

int fc_txn_nack(struct fc_txn *t, uint32_t rsn, uint8_t code, uint8_t ulp_code, uint64_t now_ns)
{
	struct tslot *s;
	int rc = ulp_enter(t, rsn, now_ns, &s);

	if (rc)
		return rc;
	if (s->kind == FC_TXN_PUSH ? code != FC_NACK_CIE && code != FC_NACK_NRE &&
				     code != FC_NACK_INVALID_CID : code != FC_NACK_INVALID_CID)
		return -EINVAL;
	t->cnt.ulp_nack++;
	tgt_answered(t, s, 1);
	tgt_release(t, s);
	if (s->kind == FC_TXN_PUSH) { /* 8.5.3.5: NACK now, again on retransmissions */
		pdl_answer(t, s->psn, 0, code, 0, ulp_code);
		s->state = FC_TXN_T_NACKED;
		s->nack_code = code;
		s->ulp_code = ulp_code;
	} else {                      /* section 11: reclaim, no answer */
		s->state = FC_TXN_T_FREE;
	}
	return ulp_leave(t);
}

static int pull_data(struct fc_txn *t, uint32_t rsn, const void *data, uint32_t len,
		     uint32_t glen, uint64_t gcookie, uint64_t now_ns)
{
	struct fc_txn_engine *e = t->e;
	uint32_t need[FC_TXN_RES_COUNT] = {0}, k;
	struct tslot *s = tfind(t, rsn);
	struct txpkt *x;

	if (t->dead)
		return -EPIPE;
	if (!s || s->kind != FC_TXN_PULL || s->state != FC_TXN_PULL_REQ_ULP_ACKD)
		return -ENOENT;
	if (len > s->resp_len || glen > s->resp_len - len)
		return -EMSGSIZE;
	if ((len && !data) || (glen && !t->ops->gather))
		return -EINVAL;
	set_now(t, now_ns);
	need[FC_TXN_DATA_PKT_TX] = 1;
	need[FC_TXN_DATA_BUF_TX] = ceil_div(len + glen, e->cfg.tx_cell_bytes);
	if (!res_fits(t, need, 0)) {
		want_credits(t);
		t->cnt.submit_eagain++;
		return -EAGAIN;
	}
	res_add(t, need);
	k = txp_get(e);
	x = &e->txp[k];
	x->conn = t;
	x->type = FC_PKT_PULL_DATA;
	x->rsn = rsn;
	x->len = len;
	x->glen = glen;
	x->gcookie = gcookie;
	x->resp_len = 0;
	x->cells = need[FC_TXN_DATA_BUF_TX];
	if (len)
		memcpy(x->buf, data, len);
	q_append(t, queue_of(t, FC_PKT_PULL_DATA), k);
	s->state = FC_TXN_PULL_DATA_ULP_RX;
	s->txp = k;
	t->cnt.pull_data_ulp++;
	touch(t);
	return 0;
}

int fc_txn_pull_data(struct fc_txn *t, uint32_t rsn, const void *data, uint32_t len,
		     uint64_t now_ns)
{
	return pull_data(t, rsn, data, len, 0, 0, now_ns);
}

int fc_txn_pull_data_sg(struct fc_txn *t, uint32_t rsn, const void *hdr, uint32_t hdr_len,
			uint32_t gather_len, uint64_t gather_cookie, uint64_t now_ns)
{
	return pull_data(t, rsn, hdr, hdr_len, gather_len, gather_cookie, now_ns);
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
		return tgt_request(t, p, nack);
	case FC_PKT_PULL_DATA:
		ini_pull_data(t, p);
		return 0;
	case FC_PKT_RESYNC:
		if (p->resync_pkt_type == FC_PKT_PULL_DATA)
			ini_resync(t, p);
		else
			tgt_resync(t, p);
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
	txp_release(t, idx);
	if (type == FC_PKT_PULL_DATA)
		tgt_tx_done(t, idx, rsn);
	else
		ini_tx_done(t, idx, rsn, type, st, code);
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
			ini_fail(t, s, FC_CMPL_DEAD_CONN);
	}
	for (int qi = 0; qi < 2; qi++)
		while (t->q[qi].head != NONE)
			txp_drop_queued(t, t->q[qi].head);
	for (uint32_t i = 0; i <= t->tmask; i++) {
		tgt_release(t, &t->ts[i]);
		t->ts[i].state = FC_TXN_T_FREE;
	}
	t->awaiting = t->rnr_waiting = 0;
	t->rnr_block = 0;
	t->nact = 0;
	t->dead = 1;
	ini_drain(t);
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
	if (qi == Q_REQ && (t->e->cfg.dbg & FC_TXN_DBG_LIFO))
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
	q_unlink(t, qi, idx);
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
	int n = pdl_poll(t, now, buf, cap);

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
		set_now(t, now);
		n = conn_poll(t, now, buf, cap);
		touch(t); /* back on the list (tail) and its deadline refreshed */
		if (n <= 0)
			ready_del(e, t); /* nothing now: off until it is touched again */
		if (n > 0 && from)
			*from = t;
		if (n) {
			engine_flush(e);
			return n;
		}
	}
	engine_flush(e);
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
	set_now(t, now);
	fc_pdl_set_rxbuf_level(t->pdl, e->rxbuf_level);
	t->in_pdl++;
	rc = fc_pdl_rx_meta(t->pdl, pkt, len, m);
	t->in_pdl--;
	conn_finish(t);
	engine_flush(e);
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
		set_now(t, now);
		if (fc_pdl_next_deadline(t->pdl) <= now) {
			t->in_pdl++;
			fc_pdl_on_timer(t->pdl, now);
			t->in_pdl--;
		}
		if (!t->dead) {
			ini_timeouts(t, now);
			tgt_timers(t, now);
		}
		conn_finish(t);
	}
	engine_flush(e);
}

/* ------------------------------------------------------------------------ */
/* engine and connection life                                                */

struct fc_txn_engine *fc_txn_engine_new(const struct fc_txn_engine_cfg *cfg)
{
	struct fc_txn_engine *e;
	uint32_t ntx, ncell;

	if (!cfg || !engine_cfg_ok(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	ntx = cfg->cap[FC_TXN_REQ_PKT_TX] + cfg->cap[FC_TXN_DATA_PKT_TX];
	ncell = cfg->cap[FC_TXN_REQ_BUF_RX] + cfg->cap[FC_TXN_NET_BUF_RX];
	e = calloc(1, sizeof(*e));
	if (!e)
		goto nomem;
	e->cfg = *cfg;
	fc_rxbuf_cfg_default(&e->rxbuf_cfg, cfg->cap[FC_TXN_NET_PKT_RX], cfg->cap[FC_TXN_NET_BUF_RX]);
	if (cfg->rxbuf_alpha_q16)
		e->rxbuf_cfg.alpha[FC_RXBUF_POOL_PKT] = e->rxbuf_cfg.alpha[FC_RXBUF_POOL_BUF] =
			cfg->rxbuf_alpha_q16;
	fc_rxbuf_init(&e->rxbuf);
	memcpy(e->cap, cfg->cap, sizeof(e->cap));
	if (cfg->dbg & FC_TXN_DBG_SHARED_RX) {
		e->cap[FC_TXN_REQ_PKT_RX] += cfg->cap[FC_TXN_NET_PKT_RX];
		e->cap[FC_TXN_REQ_BUF_RX] += cfg->cap[FC_TXN_NET_BUF_RX];
	}
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
	if (!scratch_take(e) || !scratch_take(e))
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
	t->pdl = fc_pdl_new(&cfg->pdl, NULL, cfg->cc_event ? &pdl_ops_cc : &pdl_ops, t);
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
	for (uint32_t i = 0; i < e->ntxp; i++)
		if (e->txp[i].where != TXP_FREE && e->txp[i].conn == t)
			txp_release(t, i);
	for (uint32_t i = 0; i <= t->imask; i++) {
		struct islot *s = &t->is[i];
		uint32_t n[FC_TXN_RES_COUNT] = {0};

		if (!s->used)
			continue;
		n[FC_TXN_REQ_PKT_RX] = 1;
		n[FC_TXN_REQ_BUF_RX] = s->rx_cells;
		res_sub(t, n);
		cells_put(e, s->cells);
	}
	for (uint32_t i = 0; i <= t->tmask; i++)
		tgt_release(t, &t->ts[i]);
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
