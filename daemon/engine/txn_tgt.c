/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn_tgt.c - the target side of the transaction sublayer (Falcon spec 8.5): requests
 * from the network admitted against the network-request pools, delivered in RSN order
 * on ordered connections (8.5.2), and the ULP's answers (8.5.3.3 - 8.5.3.5).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "txn_priv.h"
#include "wire_err.h"
#include "wire_falcon.h"

/* ------------------------------------------------------------------------ */
/* target: delivery in RSN order (8.5.2)                                      */

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
void txn_tgt_release(struct fc_txn *t, struct tslot *s)
{
	struct txn_need n = {0};

	if (!s->has_res)
		return;
	txn_need_set(&n, FC_TXN_NET_PKT_RX, 1);
	txn_need_set(&n, FC_TXN_NET_BUF_RX, s->ncells);
	txn_res_sub(t, &n);
	txn_cells_put(t->e, s->cells);
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
		if (!(scr = txn_scratch_take(e))) {
			t->cnt.scratch_fail++;
			t->oom = 1;
			return -ENOMEM;
		}
		txn_cells_gather(e, s->cells, scr, s->len);
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
int txn_tgt_request(struct fc_txn *t, const struct fc_pdl_rx_pkt *p, struct fc_pdl_nack *nack)
{
	uint8_t kind = p->type == FC_PKT_PUSH_DATA ? FC_TXN_PUSH : FC_TXN_PULL;
	struct txn_need need;
	uint32_t r = p->rsn;
	struct tslot *s;
	int hol, room;

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
	txn_net_need(t->e, kind, p->len, &need);
	room = txn_res_room(t, &need);
	if (room != TXN_ROOM_ALL && !(hol && room == TXN_ROOM_HOL))
		return refuse_rsrc(kind, nack, &t->cnt.refused_rsrc);
	if (room == TXN_ROOM_HOL)
		t->cnt.hol_red++; /* only the red zone let it in (8.2.4) */
	txn_res_add(t, &need);
	*s = (struct tslot){
		.rsn = r, .psn = p->psn, .len = p->len, .kind = kind, .has_res = 1,
		.resp_len = kind == FC_TXN_PULL ? p->req_len : 0, .txp = NONE,
		.ncells = need.n[FC_TXN_NET_BUF_RX], .cells = txn_cells_get(t->e, need.n[FC_TXN_NET_BUF_RX]),
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
		txn_cells_copy_in(t->e, s->cells, p->payload, p->len);
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
void txn_tgt_resync(struct fc_txn *t, const struct fc_pdl_rx_pkt *p)
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
			txn_tgt_release(t, s);
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
void txn_tgt_tx_done(struct fc_txn *t, uint32_t idx, uint32_t rsn)
{
	struct tslot *s = tfind(t, rsn);

	if (!s || s->kind != FC_TXN_PULL || s->txp != idx)
		return;
	s->state = FC_TXN_PULL_DATA_ACKD; /* the transaction is over; the slot is free */
}

/* Pull RNR redeliveries due (8.5.3.4). */
void txn_tgt_timers(struct fc_txn *t, uint64_t now)
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

uint64_t txn_tgt_deadline(const struct fc_txn *t)
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
	txn_set_now(t, now);
	*s = tgt_waiting(t, rsn);
	return *s ? 0 : -ENOENT;
}

static int ulp_leave(struct fc_txn *t)
{
	tgt_deliver_ready(t, NULL, NULL);
	txn_conn_finish(t);
	txn_engine_flush(t->e);
	return 0;
}

int fc_txn_accept(struct fc_txn *t, uint32_t rsn, uint64_t now_ns)
{
	struct tslot *s;
	int rc = ulp_enter(t, rsn, now_ns, &s);

	if (rc)
		return rc;
	tgt_answered(t, s, 1);
	txn_tgt_release(t, s);
	if (s->kind == FC_TXN_PUSH) {
		txn_pdl_answer(t, s->psn, 1, 0, 0, 0); /* 8.5.3.3: trigger the ACK */
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
		txn_tgt_release(t, s);
		txn_pdl_answer(t, s->psn, 0, FC_NACK_RNR, t->rnr_code, 0);
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
		txn_tgt_release(t, s);
		txn_pdl_answer(t, s->psn, 0, FC_NACK_RNR, code, 0);
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
	txn_tgt_release(t, s);
	if (s->kind == FC_TXN_PUSH) { /* 8.5.3.5: NACK now, again on retransmissions */
		txn_pdl_answer(t, s->psn, 0, code, 0, ulp_code);
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
	struct txn_need need = {0};
	uint32_t k;
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
	txn_set_now(t, now_ns);
	txn_need_set(&need, FC_TXN_DATA_PKT_TX, 1);
	txn_need_set(&need, FC_TXN_DATA_BUF_TX, ceil_div(len + glen, e->cfg.tx_cell_bytes));
	if (!txn_res_fits(t, &need, 0)) {
		txn_want_credits(t);
		t->cnt.submit_eagain++;
		return -EAGAIN;
	}
	txn_res_add(t, &need);
	k = txn_txp_get(e);
	x = &e->txp[k];
	x->conn = t;
	x->type = FC_PKT_PULL_DATA;
	x->rsn = rsn;
	x->len = len;
	x->glen = glen;
	x->gcookie = gcookie;
	x->resp_len = 0;
	x->cells = need.n[FC_TXN_DATA_BUF_TX];
	if (len)
		memcpy(x->buf, data, len);
	txn_q_append(t, txn_queue_of(t, FC_PKT_PULL_DATA), k);
	s->state = FC_TXN_PULL_DATA_ULP_RX;
	s->txp = k;
	t->cnt.pull_data_ulp++;
	txn_touch(t);
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
