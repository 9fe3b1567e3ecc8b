/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn_priv.h - what the files of the transaction sublayer share (txn.c, txn_res.c,
 * txn_ini.c, txn_tgt.c): the engine's and a connection's state, small accessors, and
 * the functions one file calls in another (prefixed txn_). Not for other modules.
 */
#ifndef FC_TXN_PRIV_H
#define FC_TXN_PRIV_H

#include <stdint.h>

#include "rxbuf.h"
#include "txn.h"
#include "txn_test.h" /* the engine keeps its test switches (e->dbg) */

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
	uint64_t cookie;
	uint64_t start_ns;     /* handed to the PDL: the earliest the timeout can count from */
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
	uint64_t tmo_ns;         /* transaction timeout in force (UINT64_MAX: none) */
	uint64_t tmo_dl_ns;      /* when one may have timed out first (UINT64_MAX: nothing
				  * handed to the PDL is outstanding); txn_ini_timeouts */
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
	uint32_t climit[FC_TXN_RES_COUNT]; /* the connection's limits, 0 = none (8.2.3) */
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
	uint32_t dbg;              /* FC_TXN_DBG_* (txn_test.h): 0 but in tests */
	/* txn_res_init: host counter of each resource, its limit with / without red zone */
	uint8_t gi[FC_TXN_RES_COUNT];
	uint32_t lim_red[FC_TXN_RES_COUNT], lim_all[FC_TXN_RES_COUNT];
};

static inline uint32_t ceil_div(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }

static inline int pow2(uint32_t x) { return x && !(x & (x - 1)); }

static inline enum fc_win_id win_of(uint8_t type)
{
	return type == FC_PKT_PULL_REQ ? FC_WIN_REQ : FC_WIN_DATA;
}

static inline void scratch_give(struct fc_txn_engine *e) { e->scr_used--; }

static inline struct islot *islot(const struct fc_txn *t, uint32_t rsn) { return &t->is[rsn & t->imask]; }

static inline struct islot *ifind(const struct fc_txn *t, uint32_t rsn)
{
	struct islot *s = islot(t, rsn);

	return s->used && s->rsn == rsn ? s : NULL;
}

static inline struct tslot *tslot(const struct fc_txn *t, uint32_t rsn) { return &t->ts[rsn & t->tmask]; }

/* Does s stand for a transaction? The terminal states stay readable (fc_txn_tstate)
 * until the slot is taken again. */
static inline int tbusy(const struct tslot *s)
{
	return s->state != FC_TXN_T_FREE && s->state != FC_TXN_PUSH_REQ_ULP_ACKD &&
	       s->state != FC_TXN_PULL_DATA_ACKD;
}

static inline struct tslot *tfind(const struct fc_txn *t, uint32_t rsn)
{
	struct tslot *s = tslot(t, rsn);

	return tbusy(s) && s->rsn == rsn ? s : NULL;
}

/* What a request takes from the counters, or gives back (8.2.2 - 8.2.4): n[i] of each
 * resource i; mask has bit i set when n[i] is not 0, so that the accounting loops look
 * at those counters only (a request touches two to four of the eight). */
struct txn_need {
	uint32_t n[FC_TXN_RES_COUNT];
	uint8_t mask;
};

static inline void txn_need_set(struct txn_need *nd, int i, uint32_t v)
{
	nd->n[i] = v;
	if (v)
		nd->mask |= (uint8_t)(1u << i);
}

/* txn_res.c */
void txn_q_unlink(struct fc_txn *t, int qi, uint32_t idx);
uint32_t txn_txp_get(struct fc_txn_engine *e);
uint32_t txn_cells_get(struct fc_txn_engine *e, uint32_t n);
void txn_net_need(const struct fc_txn_engine *e, uint8_t kind, uint32_t len,
		  struct txn_need *need);
void txn_q_append(struct fc_txn *t, int qi, uint32_t idx);
enum { TXN_ROOM_HOL = 1, TXN_ROOM_ALL = 2 };
int txn_res_room(const struct fc_txn *t, const struct txn_need *need);
int txn_res_fits(const struct fc_txn *t, const struct txn_need *need, int hol);
void txn_res_add(struct fc_txn *t, const struct txn_need *need);
void txn_cells_gather(const struct fc_txn_engine *e, uint32_t c, uint8_t *dst, uint32_t len);
void txn_res_sub(struct fc_txn *t, const struct txn_need *n);
void txn_txp_release(struct fc_txn *t, uint32_t idx);
void txn_txp_drop_queued(struct fc_txn *t, uint32_t idx);
void txn_cells_put(struct fc_txn_engine *e, uint32_t head);
void txn_res_init(struct fc_txn_engine *e);
void txn_res_conn_init(struct fc_txn *t);
int txn_queue_of(const struct fc_txn *t, uint8_t type);
void txn_cells_copy_in(struct fc_txn_engine *e, uint32_t c, const uint8_t *src, uint32_t len);
void txn_ini_need(const struct fc_txn_engine *e, uint8_t kind, uint32_t len,
		  uint32_t resp_len, struct txn_need *need);
uint8_t *txn_scratch_take(struct fc_txn_engine *e);

/* txn_ini.c */
uint64_t txn_ini_deadline(const struct fc_txn *t);
void txn_ini_fail(struct fc_txn *t, struct islot *s, uint8_t code);
void txn_ini_drain(struct fc_txn *t);
void txn_ini_resync(struct fc_txn *t, const struct fc_pdl_rx_pkt *p);
void txn_ini_pull_data(struct fc_txn *t, const struct fc_pdl_rx_pkt *p);
void txn_ini_tx_done(struct fc_txn *t, uint32_t idx, uint32_t rsn, uint8_t type,
		     enum fc_tx_status st, uint8_t code);
void txn_ini_timeouts(struct fc_txn *t, uint64_t now);
/* A transaction went to the PDL at now: its timeout may start (hand_to_pdl). */
void txn_ini_started(struct fc_txn *t, uint32_t rsn, uint64_t now);

/* txn_tgt.c */
uint64_t txn_tgt_deadline(const struct fc_txn *t);
void txn_tgt_timers(struct fc_txn *t, uint64_t now);
int txn_tgt_request(struct fc_txn *t, const struct fc_pdl_rx_pkt *p, struct fc_pdl_nack *nack);
void txn_tgt_tx_done(struct fc_txn *t, uint32_t idx, uint32_t rsn);
void txn_tgt_release(struct fc_txn *t, struct tslot *s);
void txn_tgt_resync(struct fc_txn *t, const struct fc_pdl_rx_pkt *p);

/* txn.c */
void txn_want_credits(struct fc_txn *t);
void txn_pdl_answer(struct fc_txn *t, uint32_t psn, int ack, uint8_t code, uint8_t rnr,
		    uint8_t ulp);
void txn_set_now(struct fc_txn *t, uint64_t now);
void txn_conn_finish(struct fc_txn *t);
void txn_touch(struct fc_txn *t);
void txn_touch_deadline(struct fc_txn *t, uint64_t dl_ns);
void txn_engine_flush_waiters(struct fc_txn_engine *e);

/* Tell connections that saw -EAGAIN that resources came back (8.2.3); nothing to do,
 * and no call, unless something was released since the last flush. */
static inline void txn_engine_flush(struct fc_txn_engine *e)
{
	if (e->released && !e->flushing)
		txn_engine_flush_waiters(e);
}

#endif
