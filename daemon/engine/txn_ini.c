/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn_ini.c - the initiator side of the transaction sublayer (Falcon spec 8.4):
 * transactions from the ULP, what the PDL tells us of them, completions in order (8.4.2)
 * and transaction timeouts (section 11).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "txn_priv.h"
#include "wire_err.h"
#include "wire_falcon.h"

/* ------------------------------------------------------------------------ */
/* initiator: completions (8.4.2)                                             */

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
		txn_txp_drop_queued(t, s->txp);
	s->txp = NONE;
}

void txn_ini_fail(struct fc_txn *t, struct islot *s, uint8_t code)
{
	ini_detach(t, s);
	make_ready(t, s, code);
}

/* Complete s to the ULP with data (NULL: its stored bytes) and free it. */
static void ini_complete(struct fc_txn *t, struct islot *s, const uint8_t *data)
{
	struct fc_txn_engine *e = t->e; /* t may be gone when complete returns */
	struct txn_need n = {0};
	struct fc_txn_cmpl c = { .cookie = s->cookie, .rsn = s->rsn, .kind = s->kind,
				 .code = s->code, .ulp_code = s->ulp_code };
	uint8_t *scr = NULL;

	if (s->kind == FC_TXN_PULL && s->code == FC_CMPL_ACK) {
		if (!data && s->stored && !(data = scr = txn_scratch_take(e))) {
			c.code = FC_CMPL_LOCAL_RSRC; /* no memory to hand the bytes out */
			t->cnt.scratch_fail++;
		} else if (scr) {
			txn_cells_gather(e, s->cells, scr, s->len);
		}
		if (data) {
			c.data = data;
			c.len = s->len;
		}
	}
	if (s->ready)
		t->iready--;
	ini_detach(t, s);
	txn_need_set(&n, FC_TXN_REQ_PKT_RX, 1);
	txn_need_set(&n, FC_TXN_REQ_BUF_RX, s->rx_cells);
	txn_res_sub(t, &n);
	txn_cells_put(t->e, s->cells);
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
void txn_ini_drain(struct fc_txn *t)
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
	struct txn_need need;
	uint32_t rsn = t->nrsn, k;
	struct islot *s;
	struct txpkt *x;

	if (t->dead)
		return -EPIPE;
	if (len > e->cfg.mtu_bytes || glen > e->cfg.mtu_bytes - len || resp_len > e->cfg.mtu_bytes)
		return -EMSGSIZE;
	if ((len && !data) || (glen && !t->ops->gather))
		return -EINVAL;
	txn_set_now(t, now);
	txn_ini_need(e, kind, len + glen, resp_len, &need); /* the Tx buffer is charged by size */
	if ((t->nrsn - t->brsn > t->imask && tbl_grow_i(t)) || !txn_res_fits(t, &need, 0)) {
		if (t->cfg.mn)
			return reject_mn(t, kind, cookie);
		txn_want_credits(t);
		t->cnt.submit_eagain++;
		return -EAGAIN;
	}
	txn_res_add(t, &need);
	k = txn_txp_get(e); /* exists: the Tx regions bound the contexts in use */
	x = &e->txp[k];
	x->conn = t;
	x->type = kind == FC_TXN_PUSH ? FC_PKT_PUSH_DATA : FC_PKT_PULL_REQ;
	x->rsn = rsn;
	x->len = len;
	x->glen = glen;
	x->gcookie = cookie;
	x->resp_len = resp_len;
	x->cells = need.n[FC_TXN_REQ_BUF_TX];
	if (len)
		memcpy(x->buf, data, len);
	s = islot(t, rsn);
	*s = (struct islot){
		.cookie = cookie, .rsn = rsn, .txp = k, .resp_len = resp_len, .used = 1,
		.kind = kind, .rx_cells = need.n[FC_TXN_REQ_BUF_RX],
		.cells = txn_cells_get(e, need.n[FC_TXN_REQ_BUF_RX]),
		.state = kind == FC_TXN_PUSH ? FC_TXN_PUSH_REQ_ULP_RX : FC_TXN_PULL_REQ_ULP_RX,
	};
	txn_q_append(t, Q_REQ, k);
	t->nrsn++;
	if (kind == FC_TXN_PUSH)
		t->cnt.push_ulp++;
	else
		t->cnt.pull_ulp++;
	if (rsn_out)
		*rsn_out = rsn;
	txn_touch(t); /* queued output (its timeout starts when it goes to the PDL) */
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
		uint32_t lim = t->climit[i];

		credits[i] = lim ? lim - t->used[i] : UINT32_MAX;
	}
}

/* ------------------------------------------------------------------------ */
/* initiator: what the PDL tells us                                           */

/* Our Push Data or Pull Request was released (8.4.3.1, 8.4.3.3, section 11). */
void txn_ini_tx_done(struct fc_txn *t, uint32_t idx, uint32_t rsn, uint8_t type,
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
	txn_ini_drain(t);
}

/* Pull Data for us (8.4.3.2). */
void txn_ini_pull_data(struct fc_txn *t, const struct fc_pdl_rx_pkt *p)
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
			txn_cells_copy_in(t->e, s->cells, p->payload, p->len);
			s->stored = 1;
			make_ready(t, s, s->code);
		}
	}
	txn_ini_drain(t);
}

/* The target gave up on its Pull Data for our request (a Resync of Pull Data). */
void txn_ini_resync(struct fc_txn *t, const struct fc_pdl_rx_pkt *p)
{
	struct islot *s = ifind(t, p->rsn);

	t->cnt.resync_rx++;
	if (!s || s->kind != FC_TXN_PULL || s->ready)
		return;
	txn_ini_fail(t, s, FC_CMPL_REMOTE_ERR);
	txn_ini_drain(t);
}

/* Transaction timeouts (section 11, kCmplLocalTO), as verbs' local ACK timeout: a
 * transaction times out when the peer owed it a word for tmo_ns and said nothing. Owed:
 * a Pull Request acknowledged and its Pull Data not here (the peer's ULP has it), or the
 * transaction in the PDL while the PDL waits for the peer (fc_pdl_quiet_since). Nothing
 * is owed by a transaction still in our queues, paced, or unsent behind the window. */
static uint64_t ini_quiet_since(const struct fc_txn *t, const struct islot *s)
{
	uint64_t since;

	if (s->state == FC_TXN_PULL_REQ_ACKD)
		since = fc_pdl_heard_ns(t->pdl);
	else if ((since = fc_pdl_quiet_since(t->pdl)) == UINT64_MAX)
		return UINT64_MAX;
	return since > s->start_ns ? since : s->start_ns;
}

void txn_ini_started(struct fc_txn *t, uint32_t rsn, uint64_t now)
{
	islot(t, rsn)->start_ns = now;
	if (t->tmo_ns != UINT64_MAX && t->tmo_dl_ns == UINT64_MAX) {
		t->tmo_dl_ns = now + t->tmo_ns;
		txn_touch_deadline(t, t->tmo_dl_ns);
	}
}

/* At tmo_dl_ns: fail what was owed an answer for tmo_ns, and find when the next may be
 * due. Bounded by the transactions outstanding; runs about once per tmo_ns. */
void txn_ini_timeouts(struct fc_txn *t, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	if (now < t->tmo_dl_ns)
		return;
	for (uint32_t r = t->brsn; r != t->nrsn; r++) {
		struct islot *s = islot(t, r);
		uint64_t since, due;

		if (!s->used || s->ready || s->state == FC_TXN_PUSH_REQ_ULP_RX ||
		    s->state == FC_TXN_PULL_REQ_ULP_RX)
			continue; /* done, or not handed to the PDL yet */
		since = ini_quiet_since(t, s);
		due = since == UINT64_MAX ? now + t->tmo_ns : since + t->tmo_ns;
		if (due <= now) {
			t->cnt.timeouts++;
			txn_ini_fail(t, s, FC_CMPL_LOCAL_TO);
			continue;
		}
		if (due < next)
			next = due;
	}
	t->tmo_dl_ns = t->tmo_ns == UINT64_MAX ? UINT64_MAX : next;
	txn_ini_drain(t);
}

uint64_t txn_ini_deadline(const struct fc_txn *t)
{
	/* a stale tmo_dl_ns (what it waited for completed) costs one early look at most */
	return t->brsn == t->nrsn ? UINT64_MAX : t->tmo_dl_ns;
}

void fc_txn_set_timeout(struct fc_txn *t, uint64_t timeout_ns)
{
	t->tmo_ns = timeout_ns ? timeout_ns :
		    (t->e->cfg.txn_timeout_ns ? t->e->cfg.txn_timeout_ns : UINT64_MAX);
	fc_pdl_set_give_up(t->pdl, timeout_ns);
	/* re-armed from now: the next look finds each transaction's own due time */
	t->tmo_dl_ns = t->tmo_ns == UINT64_MAX ? UINT64_MAX : t->now_ns;
	txn_touch(t);
}

uint64_t fc_txn_timeout(const struct fc_txn *t)
{
	return t->tmo_ns;
}
