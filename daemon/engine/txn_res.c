/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn_res.c - the transaction sublayer's resources (Falcon spec 8.2.2 - 8.2.4): the
 * host's, function's and connection's accounting in packets and cells, the Rx cell
 * arena, scratch buffers, the Tx packet contexts and the connection's scheduler queues.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "txn_priv.h"
#include "wire_err.h"
#include "wire_falcon.h"

/* ------------------------------------------------------------------------ */
/* resource accounting (8.2.2 - 8.2.4)                                        */

static int is_net(int i) { return i == FC_TXN_NET_PKT_RX || i == FC_TXN_NET_BUF_RX; }

/* Host counter resource i draws from. FC_TXN_DBG_SHARED_RX merges the network-request
 * region into the ULP-request region (CR#1 broken, for the tests). */
static int gidx(const struct fc_txn_engine *e, int i)
{
	if (!(e->dbg & FC_TXN_DBG_SHARED_RX) || !is_net(i))
		return i;
	return i == FC_TXN_NET_PKT_RX ? FC_TXN_REQ_PKT_RX : FC_TXN_REQ_BUF_RX;
}

static uint32_t red_of(const struct fc_txn_engine *e, int i)
{
	if (!is_net(i) || (e->dbg & FC_TXN_DBG_NO_RED))
		return 0;
	return i == FC_TXN_NET_PKT_RX ? e->cfg.red_pkts : e->cfg.red_cells;
}

/* What res_fits reads for every counter, worked out once: the host counter each draws
 * from and its limit with and without the red zone (engine), the connection's limit. */
void txn_res_init(struct fc_txn_engine *e)
{
	for (int i = 0; i < FC_TXN_RES_COUNT; i++) {
		uint32_t cap;

		e->gi[i] = (uint8_t)gidx(e, i);
		cap = e->cap[e->gi[i]];
		e->lim_all[i] = cap;
		e->lim_red[i] = cap > red_of(e, i) ? cap - red_of(e, i) : 0;
	}
}

void txn_res_conn_init(struct fc_txn *t)
{
	for (int i = 0; i < FC_TXN_RES_COUNT; i++)
		/* M:N: no per-connection credits (8.2.3) */
		t->climit[i] = t->cfg.mn && i < FC_TXN_ULP_CREDITS ? 0 : t->cfg.limit[i];
}

/* May t take need? TXN_ROOM_ALL: as any request. TXN_ROOM_HOL: only as a head-of-line
 * network request, which may use the red zone and is not held to the function's and
 * connection's network limits (CR#3 and the UR rule: it must always get in when the host
 * has room). 0: not at all. One pass answers both questions (8.2.4). */
int txn_res_room(const struct fc_txn *t, const struct txn_need *need)
{
	const struct fc_txn_engine *e = t->e;
	const uint32_t *fl = e->cfg.fn_limit[t->cfg.fn], *fu = e->fn_used[t->cfg.fn];
	int room = TXN_ROOM_ALL;

	/* bounded: one pass per set bit of an 8-bit mask */
	for (unsigned m = need->mask; m; m &= m - 1) {
		int i = __builtin_ctz(m);
		uint64_t n = need->n[i], used = e->used[e->gi[i]];

		if (used + n <= e->lim_red[i] && !(fl[i] && fu[i] + n > fl[i]) &&
		    !(t->climit[i] && t->used[i] + n > t->climit[i]))
			continue;
		if (!is_net(i) || used + n > e->lim_all[i])
			return 0;
		room = TXN_ROOM_HOL; /* the host's room, red zone included, and nothing else */
	}
	return room;
}

int txn_res_fits(const struct fc_txn *t, const struct txn_need *need, int hol)
{
	int room = txn_res_room(t, need);

	return room == TXN_ROOM_ALL || (hol && room == TXN_ROOM_HOL);
}

/* The network-request counters are the last two, in the order of the rxbuf pools: the
 * mask's top two bits are the pools a request changed. */
_Static_assert(FC_TXN_NET_PKT_RX == FC_TXN_RES_COUNT - 2 && FC_TXN_NET_BUF_RX == FC_TXN_RES_COUNT - 1 &&
	       FC_RXBUF_POOL_PKT == 0 && FC_RXBUF_POOL_BUF == 1 && FC_RXBUF_POOLS == 2,
	       "network-request counters map onto the rxbuf pools");

/* The network-request pools changed: feed their EMA (spec 10.2); the quantized level
 * goes out in the ACKs and NACKs of the next poll (conn_poll hands it to the PDL). */
static void rxbuf_note(struct fc_txn_engine *e, const struct txn_need *n)
{
	unsigned changed = (unsigned)n->mask >> FC_TXN_NET_PKT_RX;

	/* both pools in one step (a request takes from both); the level is searched again
	 * only when an EMA leaves its level's band */
	if (changed) {
		const uint32_t occ[FC_RXBUF_POOLS] = {
			[FC_RXBUF_POOL_PKT] = e->used[FC_TXN_NET_PKT_RX],
			[FC_RXBUF_POOL_BUF] = e->used[FC_TXN_NET_BUF_RX],
		};

		e->rxbuf_level = (uint8_t)fc_rxbuf_note_pools(&e->rxbuf, &e->rxbuf_cfg, changed, occ);
	}
}

void txn_res_add(struct fc_txn *t, const struct txn_need *need)
{
	struct fc_txn_engine *e = t->e;
	uint32_t *fu = e->fn_used[t->cfg.fn];

	for (unsigned m = need->mask; m; m &= m - 1) {
		int i = __builtin_ctz(m);

		t->used[i] += need->n[i];
		fu[i] += need->n[i];
		e->used[e->gi[i]] += need->n[i];
	}
	rxbuf_note(e, need);
}

void txn_res_sub(struct fc_txn *t, const struct txn_need *n)
{
	struct fc_txn_engine *e = t->e;
	uint32_t *fu = e->fn_used[t->cfg.fn];

	for (unsigned m = n->mask; m; m &= m - 1) {
		int i = __builtin_ctz(m);

		t->used[i] -= n->n[i];
		fu[i] -= n->n[i];
		e->used[e->gi[i]] -= n->n[i];
	}
	rxbuf_note(e, n);
	e->released = 1;
}

/* 8.2.3 table: what a push / pull takes from the ULP's credits. */
void txn_ini_need(const struct fc_txn_engine *e, uint8_t kind, uint32_t len,
		  uint32_t resp_len, struct txn_need *need)
{
	*need = (struct txn_need){0};
	txn_need_set(need, FC_TXN_REQ_PKT_TX, 1);
	txn_need_set(need, FC_TXN_REQ_PKT_RX, 1);
	if (kind == FC_TXN_PUSH) {
		txn_need_set(need, FC_TXN_REQ_BUF_TX, ceil_div(len, e->cfg.tx_cell_bytes));
	} else {
		/* the request itself: 1 (more when its headers exceed a cell) */
		txn_need_set(need, FC_TXN_REQ_BUF_TX, len ? ceil_div(len, e->cfg.tx_cell_bytes) : 1);
		txn_need_set(need, FC_TXN_REQ_BUF_RX, ceil_div(resp_len, e->cfg.rx_cell_bytes));
	}
}

/* 8.2.4 table: what a received request takes from the network-request region. */
void txn_net_need(const struct fc_txn_engine *e, uint8_t kind, uint32_t len,
		  struct txn_need *need)
{
	uint32_t cells = ceil_div(len, e->cfg.rx_cell_bytes);

	if (kind == FC_TXN_PULL && !cells)
		cells = 1;
	*need = (struct txn_need){0};
	txn_need_set(need, FC_TXN_NET_PKT_RX, 1);
	txn_need_set(need, FC_TXN_NET_BUF_RX, cells);
}

/* ------------------------------------------------------------------------ */
/* Rx cells                                                                  */

/* A chain of n cells; the accounting above guarantees they exist. */
uint32_t txn_cells_get(struct fc_txn_engine *e, uint32_t n)
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

void txn_cells_put(struct fc_txn_engine *e, uint32_t head)
{
	while (head != NONE) {
		uint32_t n = e->cell_next[head];

		e->cell_next[head] = e->cell_free;
		e->cell_free = head;
		e->cells_free++;
		head = n;
	}
}

void txn_cells_copy_in(struct fc_txn_engine *e, uint32_t c, const uint8_t *src, uint32_t len)
{
	uint32_t cell = e->cfg.rx_cell_bytes;

	for (uint32_t off = 0; off < len && c != NONE; c = e->cell_next[c]) {
		uint32_t k = len - off < cell ? len - off : cell;

		memcpy(e->cellmem + (size_t)c * cell, src + off, k);
		off += k;
	}
}

void txn_cells_gather(const struct fc_txn_engine *e, uint32_t c, uint8_t *dst, uint32_t len)
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
uint8_t *txn_scratch_take(struct fc_txn_engine *e)
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

/* ------------------------------------------------------------------------ */
/* Tx packet contexts and the scheduler queues                                */

uint32_t txn_txp_get(struct fc_txn_engine *e)
{
	uint32_t i = e->txp_free;

	if (i != NONE)
		e->txp_free = e->txp[i].next;
	return i;
}

/* Give back what context idx holds (8.2.3: credits return when resources are freed). */
void txn_txp_release(struct fc_txn *t, uint32_t idx)
{
	struct fc_txn_engine *e = t->e;
	struct txpkt *k = &e->txp[idx];
	struct txn_need n = {0};
	int data = k->type == FC_PKT_PULL_DATA;

	txn_need_set(&n, data ? FC_TXN_DATA_PKT_TX : FC_TXN_REQ_PKT_TX, 1);
	txn_need_set(&n, data ? FC_TXN_DATA_BUF_TX : FC_TXN_REQ_BUF_TX, k->cells);
	txn_res_sub(t, &n);
	k->where = TXP_FREE;
	k->conn = NULL;
	k->next = e->txp_free;
	e->txp_free = idx;
}

void txn_q_append(struct fc_txn *t, int qi, uint32_t idx)
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

void txn_q_unlink(struct fc_txn *t, int qi, uint32_t idx)
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
int txn_queue_of(const struct fc_txn *t, uint8_t type)
{
	if (type == FC_PKT_PULL_DATA && !(t->e->dbg & FC_TXN_DBG_SHARED_TXQ))
		return Q_DATA;
	return Q_REQ;
}

/* Take a context off its queue and free it (never reached the PDL). */
void txn_txp_drop_queued(struct fc_txn *t, uint32_t idx)
{
	txn_q_unlink(t, txn_queue_of(t, t->e->txp[idx].type), idx);
	txn_txp_release(t, idx);
}
