/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma_resp.c - the responder: requests in, answers out (RDMA spec sections 6 and 8).
 * See rdma.h for the API and rdma_priv.h for the objects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma_priv.h"

/* ------------------------------------------------------------------------ */
/* responder: answers                                                        */

struct req_ctx { /* handle_request sets each field: one added here must be set there */
	struct fc_rdma *d;
	struct conn *c;
	const struct fc_txn_req *r;
	struct fc_rdma_hdrs h;
	int decoded;
	uint8_t op;       /* h.opcode [4:0] */
	struct qp *q;
	struct srq *srq;  /* SRQ receiving a SEND (RC with SRQ, XRC) */
	uint32_t pd;      /* PD of R_Key checks */
	uint32_t rpd;     /* PD of the receive list */
	int room;         /* pull: a pend slot is reserved (else a slot of c's dq) */
};

/* 8.2: on a strongly ordered connection SNs grow; note the one just answered. */
static void note_sn(const struct req_ctx *x)
{
	if (x->decoded && x->c->ordered) {
		x->c->rx_last_sn = x->h.sn;
		x->c->rx_sn_seen = 1;
	}
}

static void ans_accept(const struct req_ctx *x)
{
	note_sn(x);
	fc_txn_accept(x->c->t, x->r->rsn, x->d->now);
}

static void pend_add(struct fc_rdma *d, struct conn *c, uint32_t rsn, const uint8_t *b,
		     uint32_t len)
{
	for (uint32_t i = 0; i < d->cfg.pending_resp; i++) {
		struct pend *p = &d->pend[i];

		if (p->used)
			continue;
		p->used = 1;
		p->c = c;
		p->rsn = rsn;
		p->len = len;
		p->seq = d->pend_seq++;
		if (len)
			memcpy(p->buf, b, len);
		d->pend_used++;
		return;
	}
	d->cnt.resp_lost++; /* cannot happen: room was checked before the pull was taken */
}

/* Build the answer (h + src's payload) in d->resp and hand it to txn; kept in a pend slot
 * (reserved by the caller) when txn has no room. A READ's source is checked again: its
 * region may have gone while the answer waited. fc_txn_pull_data does not call back. */
static void emit_answer(struct fc_rdma *d, struct conn *c, uint32_t rsn, uint32_t resp_len,
			const struct fc_rdma_hdrs *h, const struct ans_src *src)
{
	struct fc_rdma_hdrs hh = *h;
	uint8_t word[ERR_RESP_LEN] = { 0, 0, 0, src->nak };
	const void *payload = NULL;
	uint32_t plen = 0;
	struct fc_mr_loc loc;
	int n = 0, rc, err;

	if (src->kind == SRC_READ && src->len) {
		err = fc_mr_check_remote_loc(d->mrs, src->pd, src->rkey, src->va, src->len,
					     FC_MR_REMOTE_READ, &loc);
		/* memory reached by copy comes through the staging buffer (len <= MTU) */
		if (!err && loc.ops)
			err = fc_mr_read(&loc, 0, d->staging, src->len);
		if (err) {
			struct fc_rdma_err_effect ef = { .nak = FC_RDMA_NAK_REM_OP };

			fc_rdma_err_effect(err, FC_RDMA_SITE_RKEY, &ef);
			word[3] = ef.nak;
			hh.ce = true;
			payload = word;
			plen = ERR_RESP_LEN;
		} else {
			payload = loc.ops ? (const void *)d->staging : loc.host;
			plen = src->len;
		}
	} else if (src->kind == SRC_NAK) {
		payload = word;
		plen = ERR_RESP_LEN;
	}
	if (src->kind != SRC_EMPTY)
		n = fc_rdma_encode(&hh, payload, plen, d->resp, d->pkt_cap);
	if (n < 0 || (uint32_t)n > resp_len)
		n = 0;
	rc = fc_txn_pull_data(c->t, rsn, n ? d->resp : NULL, (uint32_t)n, d->now);
	if (rc == -EAGAIN)
		pend_add(d, c, rsn, d->resp, (uint32_t)n); /* into the caller's reserved slot */
	else if (!rc)
		d->cnt.tx_resp++;
}

/* Keep the answer of accepted pull rsn until there is room (a slot the caller reserved). */
static void defer_answer(struct conn *c, uint32_t rsn, uint32_t resp_len,
			 const struct fc_rdma_hdrs *h, const struct ans_src *src)
{
	struct dans *a = &c->dq[(c->dq_head + c->dq_count++) % c->dq_cap];

	rdma_dq_list(c->d, c);
	a->rsn = rsn;
	a->resp_len = resp_len;
	a->h = *h;
	a->src = *src;
	c->d->dq_total++;
	c->d->cnt.pull_deferred++;
}

/* Answer the pull being handled (8.5.3.2): accept it (the connection goes on: a target
 * must not hold an ordered connection up over Pull Data room, the peer's pushes behind
 * it pin its data window), then send its Pull Data, or keep it in the room rdma_on_request
 * reserved. The accept comes first: it may call back into this layer (credits, the next
 * request of an ordered connection) and so reuse d->resp. */
static void send_response(const struct req_ctx *x, const struct fc_rdma_hdrs *h,
			  const struct ans_src *src)
{
	static const struct fc_rdma_hdrs none;

	note_sn(x);
	if (fc_txn_accept(x->c->t, x->r->rsn, x->d->now))
		return;
	if (x->room)
		emit_answer(x->d, x->c, x->r->rsn, x->r->resp_len, h ? h : &none, src);
	else
		defer_answer(x->c, x->r->rsn, x->r->resp_len, h ? h : &none, src);
}

/* The response of a failed READ / atomic: its response opcode with CE (rdma.h). */
static void ans_pull_err(const struct req_ctx *x, uint8_t nak)
{
	struct fc_rdma_hdrs h;
	struct ans_src src = { .kind = SRC_EMPTY };
	int read = x->op == FC_RDMA_READ_REQ;

	if (!x->decoded) {
		send_response(x, NULL, &src);
		return;
	}
	memset(&h, 0, sizeof(h));
	h.opcode = FC_RDMA_OPCODE(x->h.opcode >> FC_RDMA_OPC_CLASS_SHIFT,
				  read ? FC_RDMA_READ_RESP_ONLY : FC_RDMA_ATOMIC_RESP);
	h.ce = true;
	h.dqp = x->q ? x->q->remote_qpn : 0;
	h.sn = x->h.sn;
	h.steth = x->h.steth;
	h.atomic_orig = nak;
	src.kind = read ? SRC_NAK : SRC_NONE;
	src.nak = nak;
	send_response(x, &h, &src);
}

/* Refuse with IB NAK code nak: Falcon NRE (verbs) or CIE NACK for a push (6.3, 8.5.3.5),
 * an error response for a pull. */
static void ans_nak(const struct req_ctx *x, uint8_t nak)
{
	uint8_t code = x->q && x->q->mode == FC_RDMA_MODE_VERBS ? FC_NACK_NRE : FC_NACK_CIE;

	x->d->cnt.nak_sent++;
	if (x->r->kind == FC_TXN_PULL) {
		ans_pull_err(x, nak);
		return;
	}
	note_sn(x);
	fc_txn_nack(x->c->t, x->r->rsn, code, nak, x->d->now);
}

static void ans_err(const struct req_ctx *x, int err, enum fc_rdma_site site)
{
	struct fc_rdma_err_effect ef;

	if (fc_rdma_err_effect(err, site, &ef))
		ef.nak = FC_RDMA_NAK_REM_OP;
	ans_nak(x, ef.nak);
}

/* ------------------------------------------------------------------------ */
/* responder: receive WQEs by RMSN, RNR                                      */

static int own_rmsn_rq(const struct req_ctx *x)
{
	return x->q->type == FC_RDMA_QPT_RC && !x->srq;
}

/* The RQ index of message rmsn (rdma.h: RMSN - 1 counts the WQE-consuming messages
 * before it, less those skipped). Returns 0 for an RMSN already resolved or skipped. */
static int rq_abs(const struct qp *q, uint32_t rmsn, uint64_t *abs)
{
	uint32_t dd = rmsn - q->rmsn_lo, below = 0;

	if (dd >= 1u << 31)
		return 0;
	for (uint32_t i = 0; i < q->nskip; i++) {
		if (q->skips[i] == rmsn)
			return 0;
		if (q->skips[i] - q->rmsn_lo < dd)
			below++;
	}
	*abs = q->abs_lo + dd - below;
	return 1;
}

/* The RQ head moved past the WQE of message rmsn_lo. */
static void anchor_step(struct qp *q)
{
	q->abs_lo++;
	q->rmsn_lo++;
	while (q->nskip && q->skips[0] == q->rmsn_lo) {
		memmove(q->skips, q->skips + 1, --q->nskip * sizeof(q->skips[0]));
		q->rmsn_lo++;
	}
}

/* Message rmsn consumed no receive WQE: later RMSNs map one WQE lower. */
static void skip_rmsn(struct fc_rdma *d, const struct req_ctx *x, uint32_t rmsn)
{
	struct qp *q = x->q;
	uint32_t i;

	if (!own_rmsn_rq(x) || sn_lt(rmsn, q->rmsn_lo))
		return;
	if (rmsn == q->rmsn_lo) {
		q->rmsn_lo++;
		while (q->nskip && q->skips[0] == q->rmsn_lo) {
			memmove(q->skips, q->skips + 1, --q->nskip * sizeof(q->skips[0]));
			q->rmsn_lo++;
		}
		return;
	}
	for (i = 0; i < q->nskip && q->skips[i] - q->rmsn_lo < rmsn - q->rmsn_lo; i++)
		;
	if (i < q->nskip && q->skips[i] == rmsn)
		return;
	if (q->nskip == SKIP_MAX) {
		rdma_qp_to_err(q, d); /* bound reached: the pair cannot keep its count */
		return;
	}
	memmove(q->skips + i + 1, q->skips + i, (q->nskip - i) * sizeof(q->skips[0]));
	q->skips[i] = rmsn;
	q->nskip++;
}

static int dead_find(const struct qp *q, uint32_t rmsn, uint8_t *nak)
{
	for (uint32_t i = 0; i < DEAD_MAX; i++)
		if (q->dead[i].used && q->dead[i].rmsn == rmsn) {
			*nak = q->dead[i].nak;
			return 1;
		}
	return 0;
}

static struct rnr_ent *rnr_find(struct qp *q, const struct fc_txn *t, uint32_t rsn)
{
	for (uint32_t i = 0; i < RNR_TRACK; i++)
		if (q->rnr[i].t == t && q->rnr[i].rsn == rsn && q->rnr[i].count)
			return &q->rnr[i];
	return NULL;
}

static void rnr_forget(struct qp *q, const struct req_ctx *x)
{
	struct rnr_ent *e = rnr_find(q, x->c->t, x->r->rsn);

	if (e)
		e->count = 0;
}

/* No receive WQE for this SEND / WRITE with Immediate (rdma.h: RNR). Refusals are
 * counted on the packet that heads the message (the SEND at offset 0, the WRITE with
 * Immediate's last): IB's requester retries from the message's head, so that count is
 * IB's; the message's other packets are refused without counting and die with it. */
static void ans_rnr(const struct req_ctx *x)
{
	struct fc_rdma *d = x->d;
	struct qp *q = x->q;
	int head = x->op == FC_RDMA_WRITE_LAST_IMM || x->op == FC_RDMA_WRITE_ONLY_IMM ||
		   x->h.offset == 0;
	struct rnr_ent *e = NULL;

	if (head && q->rnr_retry != FC_RDMA_RNR_INFINITE) {
		e = rnr_find(q, x->c->t, x->r->rsn);
		if (!e) { /* the oldest count makes room: that message then retries longer */
			e = &q->rnr[q->rnr_next++ % RNR_TRACK];
			*e = (struct rnr_ent){ .t = x->c->t, .rsn = x->r->rsn };
		}
	}
	if (e && ++e->count > q->rnr_retry) {
		e->count = 0;
		q->dead[q->dead_next++ % DEAD_MAX] =
			(struct dead_ent){ .rmsn = x->h.rmsn, .used = 1, .nak = FC_RDMA_NAK_RNR };
		skip_rmsn(d, x, x->h.rmsn);
		d->cnt.rnr_exhausted++;
		ans_nak(x, FC_RDMA_NAK_RNR);
		return;
	}
	d->cnt.rnr_sent++;
	fc_txn_rnr(x->c->t, x->r->rsn, q->min_rnr_timer, d->now);
}

static void rwqe_activate(struct rwqe *w)
{
	if (w->state != RW_POSTED)
		return;
	w->state = RW_ACTIVE;
	w->err = 0;
	memset(&w->wc, 0, sizeof(w->wc));
}

/* The SRQ WQE held for message rmsn, taken now if this is its first packet. */
static struct rwqe *bind_srq(const struct req_ctx *x, int *rnr)
{
	struct qp *q = x->q;
	struct map_ent *m = NULL;
	struct rwqe *src;

	for (uint32_t i = 0; i < MAP_MAX; i++) {
		if (q->map[i].used && q->map[i].rmsn == x->h.rmsn)
			return &q->map[i].w;
		if (!q->map[i].used && !m)
			m = &q->map[i];
	}
	*rnr = !m || x->srq->rq.head == x->srq->rq.tail;
	if (*rnr)
		return NULL;
	src = rq_at(&x->srq->rq, x->srq->rq.head++);
	m->used = 1;
	m->rmsn = x->h.rmsn;
	m->cq = x->srq->xrcd ? x->srq->cq : q->recv_cq;
	m->w = *src;
	m->w.sge = m->sge;
	if (src->nsge)
		memcpy(m->sge, src->sge, src->nsge * sizeof(*m->sge));
	rwqe_activate(&m->w);
	return &m->w;
}

/* The receive WQE of this SEND / WRITE with Immediate packet, or NULL when the packet
 * was answered (RNR, NAK). */
static struct rwqe *bind_wqe(const struct req_ctx *x)
{
	struct qp *q = x->q;
	struct rwqe *w = NULL;
	uint64_t abs;
	uint8_t nak;
	int rnr = 0;

	if (dead_find(q, x->h.rmsn, &nak)) {
		ans_nak(x, nak);
		return NULL;
	}
	if (x->srq) {
		w = bind_srq(x, &rnr);
	} else if (!rq_abs(q, x->h.rmsn, &abs) || abs < q->rq.head) {
		ans_nak(x, FC_RDMA_NAK_INV_REQ);
		return NULL;
	} else if (abs >= q->rq.tail) {
		rnr = 1;
	} else {
		w = rq_at(&q->rq, abs);
		rwqe_activate(w);
	}
	if (rnr) {
		ans_rnr(x);
		return NULL;
	}
	rnr_forget(q, x);
	return w;
}

static void rwqe_emit(struct fc_rdma *d, struct qp *q, struct rwqe *w, uint32_t cqn)
{
	struct fc_rdma_wc wc;

	rdma_rwqe_wc(w, q->num, FC_WC_SUCCESS, &wc);
	w->state = RW_EMITTED;
	rdma_cq_push(d, cqn, &wc, q);
}

/* Own RQ: emit in RQ order (STRONG, WEAK) or at once (UNORDERED, UD). */
static void rq_drain(struct fc_rdma *d, struct qp *q)
{
	while (q->rq.head != q->rq.tail && q->state != FC_RDMA_QPS_ERR) {
		struct rwqe *w = rq_at(&q->rq, q->rq.head);

		if (w->state != RW_DONE && w->state != RW_EMITTED)
			break;
		q->rq.head++;
		if (q->type == FC_RDMA_QPT_RC)
			anchor_step(q);
		if (w->state == RW_DONE)
			rwqe_emit(d, q, w, q->recv_cq);
	}
}

/* The message in w is complete (success or error). */
static void recv_done(const struct req_ctx *x, struct rwqe *w)
{
	struct qp *q = x->q;

	w->wc.qp_num = q->num;
	if (x->srq) {
		struct map_ent *m = (struct map_ent *)((uint8_t *)w - offsetof(struct map_ent, w));

		m->used = 0;
		rwqe_emit(x->d, q, w, m->cq);
		return;
	}
	w->state = RW_DONE;
	if (q->order == FC_RDMA_ORDER_NONE || q->type == FC_RDMA_QPT_UD)
		rwqe_emit(x->d, q, w, q->recv_cq);
	rq_drain(x->d, q);
}

/* ------------------------------------------------------------------------ */
/* responder: operations                                                     */

#define W_ABORT 1 /* rwqe.err: the requester aborted the message (RBTH CE) */

/* First error of a message wins, except that a message longer than its WQE is a length
 * error whatever else failed (tests/rdma_model.h: the length is checked first). */
static void rwqe_err(struct rwqe *w, int err, uint8_t site)
{
	if (!w->err || (err == -FC_RDMA_ELEN && w->err != -FC_RDMA_ELEN &&
			w->site == FC_RDMA_SITE_RECV)) {
		w->err = err;
		w->site = site;
	}
}

static uint8_t rwqe_status(const struct rwqe *w, uint8_t *nak)
{
	struct fc_rdma_err_effect ef;

	*nak = 0;
	if (!w->err)
		return FC_WC_SUCCESS;
	if (w->err == W_ABORT || fc_rdma_err_effect(w->err, w->site, &ef))
		return FC_WC_GENERAL_ERR;
	*nak = ef.nak;
	return ef.resp_status;
}

struct piece {
	struct fc_mr_loc loc;
	uint32_t n, src;
};

/* Check the part [off, off+len) of w's list (LOCAL_WRITE; entries it does not reach are
 * not checked); fill the host pieces. Returns 0 or -FC_RDMA_E*. */
static int scatter_check(const struct req_ctx *x, const struct rwqe *w, uint32_t off,
			 uint32_t len, struct piece *pc, uint32_t *np)
{
	uint64_t pos = 0, end = (uint64_t)off + len;
	int err;

	*np = 0;
	for (uint32_t i = 0; i < w->nsge && pos < end; pos += w->sge[i].len, i++) {
		uint64_t lo = pos > off ? pos : off;
		uint64_t hi = pos + w->sge[i].len < end ? pos + w->sge[i].len : end;
		struct fc_mr_loc loc;

		if (hi <= lo)
			continue;
		err = fc_mr_check_local_loc(x->d->mrs, x->rpd, w->sge[i].lkey,
					    w->sge[i].addr + (lo - pos), hi - lo, FC_MR_LOCAL_WRITE,
					    &loc);
		if (err)
			return err;
		pc[(*np)++] = (struct piece){ loc, (uint32_t)(hi - lo), (uint32_t)(lo - off) };
	}
	return 0;
}

/* Place the pieces; 0 or -FC_RDMA_EACCESS (indirect memory gone: what was placed stays,
 * the WQE completes in error). */
static int scatter_write(const struct piece *pc, uint32_t np, const uint8_t *src)
{
	for (uint32_t i = 0; i < np; i++) {
		int err = fc_mr_write(&pc[i].loc, 0, src + pc[i].src, pc[i].n);

		if (err)
			return err;
	}
	return 0;
}

static int is_last_send(uint8_t op)
{
	return op == FC_RDMA_SEND_LAST || op == FC_RDMA_SEND_LAST_IMM ||
	       op == FC_RDMA_SEND_LAST_INV || op == FC_RDMA_SEND_ONLY ||
	       op == FC_RDMA_SEND_ONLY_IMM || op == FC_RDMA_SEND_ONLY_INV;
}

/* The completion fields of a finished SEND message of total bytes. */
static void send_wc(const struct req_ctx *x, struct rwqe *w, uint64_t total)
{
	uint8_t op = x->op, nak;

	w->wc.opcode = FC_RDMA_WC_RECV;
	w->wc.byte_len = (uint32_t)total;
	w->wc.src_qp = x->q->type == FC_RDMA_QPT_UD ? x->h.deth.src_qp : x->q->remote_qpn;
	w->wc.src_id = x->q->type == FC_RDMA_QPT_UD ? x->c->src_id : 0; /* who to answer */
	if (op == FC_RDMA_SEND_LAST_IMM || op == FC_RDMA_SEND_ONLY_IMM) {
		w->wc.flags |= FC_RDMA_WC_F_IMM;
		w->wc.imm_data = x->h.imm;
	}
	if (x->h.se)
		w->wc.flags |= FC_RDMA_WC_F_SOLICITED;
	w->wc.status = rwqe_status(w, &nak);
}

/* A SEND packet of RC / XRC (8.3.2 SETH picks the WQE, 8.3.3 OETH the place). */
static void t_send(const struct req_ctx *x)
{
	const struct fc_rdma_hdrs *h = &x->h;
	struct piece pc[FC_RDMA_RECV_SGE_MAX];
	uint32_t np = 0, len = (uint32_t)h->payload_len;
	int last = is_last_send(x->op), err;
	uint64_t end = (uint64_t)h->offset + len;
	struct rwqe *w = bind_wqe(x);
	uint8_t nak;

	if (!w)
		return;
	if (w->state != RW_ACTIVE) {
		ans_nak(x, FC_RDMA_NAK_INV_REQ);
		return;
	}
	if (h->ce) {
		rwqe_err(w, W_ABORT, FC_RDMA_SITE_RECV);
	} else if (end > w->cap) {
		rwqe_err(w, -FC_RDMA_ELEN, FC_RDMA_SITE_RECV);
	} else if (!w->err && (err = scatter_check(x, w, h->offset, len, pc, &np))) {
		rwqe_err(w, err, FC_RDMA_SITE_RECV);
	}
	if (last && !w->err && (x->op == FC_RDMA_SEND_LAST_INV || x->op == FC_RDMA_SEND_ONLY_INV)) {
		err = fc_mr_invalidate(x->d->mrs, x->pd, h->inv_rkey); /* 8.3.8 */
		if (err) {
			rwqe_err(w, err, FC_RDMA_SITE_INVALIDATE);
		} else {
			w->wc.flags |= FC_RDMA_WC_F_INV;
			w->wc.invalidated_rkey = h->inv_rkey;
		}
	}
	if (!w->err && (err = scatter_write(pc, np, h->payload)))
		rwqe_err(w, err, FC_RDMA_SITE_RECV);
	rwqe_status(w, &nak);
	if (last) {
		send_wc(x, w, end);
		recv_done(x, w);
	}
	if (nak)
		ans_nak(x, nak);
	else
		ans_accept(x);
}

/* A UD SEND (IB: a datagram without a WQE or with a wrong Q_Key is dropped; errors at
 * the receiver are not reported to the sender). */
static void t_ud_send(const struct req_ctx *x)
{
	struct qp *q = x->q;
	struct piece pc[FC_RDMA_RECV_SGE_MAX];
	uint32_t np = 0, len = (uint32_t)x->h.payload_len;
	struct rq *rq = x->srq ? &x->srq->rq : &q->rq;
	struct rwqe tmp, *w;
	int err;

	if (x->h.deth.qkey != q->qkey) {
		x->d->cnt.ud_drop_qkey++;
		ans_accept(x);
		return;
	}
	if (rq->head == rq->tail) /* a receive posted since the last doorbell counts */
		rdma_ring_refill(x->d, q, x->srq);
	if (rq->head == rq->tail || q->state == FC_RDMA_QPS_ERR) {
		x->d->cnt.ud_drop_no_wqe++;
		ans_accept(x);
		return;
	}
	w = rq_at(rq, rq->head);
	if (x->srq) { /* taken from the SRQ: completes here and now */
		tmp = *w;
		w = &tmp;
		rq->head++;
	}
	rwqe_activate(w);
	if (len > w->cap)
		rwqe_err(w, -FC_RDMA_ELEN, FC_RDMA_SITE_RECV);
	else if ((err = scatter_check(x, w, 0, len, pc, &np)) ||
		 (err = scatter_write(pc, np, x->h.payload)))
		rwqe_err(w, err, FC_RDMA_SITE_RECV);
	send_wc(x, w, len);
	w->wc.qp_num = q->num;
	if (x->srq) {
		rwqe_emit(x->d, q, w, q->recv_cq);
	} else {
		w->state = RW_DONE;
		rwqe_emit(x->d, q, w, q->recv_cq);
		rq_drain(x->d, q);
	}
	ans_accept(x);
}

static int write_head(uint8_t op)
{
	return op == FC_RDMA_WRITE_FIRST || op == FC_RDMA_WRITE_ONLY ||
	       op == FC_RDMA_WRITE_ONLY_IMM;
}

static int write_last(uint8_t op)
{
	return op == FC_RDMA_WRITE_LAST || op == FC_RDMA_WRITE_LAST_IMM ||
	       op == FC_RDMA_WRITE_ONLY || op == FC_RDMA_WRITE_ONLY_IMM;
}

/* A WRITE packet. Its RETH (8.3.1, one in every packet for out-of-order placement, 6.7)
 * names the rest of the message from the packet's first byte (seg.h): the whole range is
 * checked before a byte is placed. The FIRST packet's covers the whole message, as an
 * InfiniBand responder checks the FIRST's RETH, so a WRITE that runs past its region
 * places nothing, whatever order its packets come in (each one's range runs to the bad
 * end). On an ordered connection a message's packets come in order, and once one failed
 * the rest are refused unplaced (a WRITE that starts before its region and ends inside).
 * On an unordered connection a packet that overtakes its FIRST knows only its own range
 * onwards: the part of such a WRITE inside the region may be placed (6.7's out-of-order
 * placement). A WRITE with Immediate also takes a receive WQE after every packet of the
 * message passed its R_Key check. */
static void t_write(const struct req_ctx *x)
{
	struct qp *q = x->q;
	const struct fc_rdma_hdrs *h = &x->h;
	uint8_t op = x->op;
	int imm = op == FC_RDMA_WRITE_LAST_IMM || op == FC_RDMA_WRITE_ONLY_IMM, err = 0;
	uint32_t len = (uint32_t)h->payload_len;
	struct fc_mr_loc dst = { 0 };
	struct rwqe *w = NULL;

	if (write_head(op)) {
		q->w_bytes = 0;
		q->w_err = 0;
	}
	if (h->ce) { /* the requester aborted the message: nothing consumed */
		if (imm)
			skip_rmsn(x->d, x, h->rmsn);
		ans_accept(x);
		return;
	}
	if (h->reth.len < len || (write_last(op) && h->reth.len != len)) {
		/* a RETH that does not cover its own packet to the message's end (seg.h) */
		if (!q->w_err)
			q->w_err = -FC_RDMA_EBOUNDS;
		if (imm)
			skip_rmsn(x->d, x, h->rmsn);
		ans_nak(x, FC_RDMA_NAK_INV_REQ);
		return;
	}
	if (len) /* IB C9-88: a zero-length WRITE checks no R_Key */
		err = fc_mr_check_remote_loc(x->d->mrs, x->pd, h->reth.rkey, h->reth.va,
					     h->reth.len, FC_MR_REMOTE_WRITE, &dst);
	if (!err && q->w_err && !write_head(op) && (imm || x->c->ordered))
		err = q->w_err; /* an earlier packet of this message failed */
	/* placed as it arrives (6.7); a WRITE with Immediate into our own memory after its
	 * receive WQE is bound (an RNR places nothing), into memory reached by copy before,
	 * where a failure can still be answered as an R_Key error (an RNR'd packet is then
	 * placed again, the same bytes, when it is retried) */
	if (!err && len && (!imm || dst.ops))
		err = fc_mr_write(&dst, 0, h->payload, len);
	if (err) {
		if (!q->w_err)
			q->w_err = err;
		if (imm)
			skip_rmsn(x->d, x, h->rmsn); /* mr.h: consumes no receive WQE */
		ans_err(x, err, FC_RDMA_SITE_RKEY);
		return;
	}
	if (imm && !(w = bind_wqe(x)))
		return;
	if (imm && len && !dst.ops)
		fc_mr_write(&dst, 0, h->payload, len); /* our pointer: cannot fail */
	q->w_bytes += len;
	if (imm) {
		w->wc.opcode = FC_RDMA_WC_RECV_RDMA_WITH_IMM;
		w->wc.byte_len = (uint32_t)q->w_bytes;
		w->wc.flags |= FC_RDMA_WC_F_IMM | (h->se ? FC_RDMA_WC_F_SOLICITED : 0);
		w->wc.imm_data = h->imm;
		w->wc.src_qp = q->remote_qpn;
		w->wc.status = FC_WC_SUCCESS;
		q->w_bytes = 0;
		recv_done(x, w);
	}
	ans_accept(x);
}

/* A READ Request: one pull, answered READ Response Only (6.7, 8.1.3). */
static void t_read(const struct req_ctx *x)
{
	const struct fc_rdma_hdrs *h = &x->h;
	struct fc_rdma_hdrs rh;
	uint32_t len = h->reth.len;
	void *host = NULL;
	int err = 0;

	if (len > x->d->cfg.mtu_bytes) {
		ans_nak(x, FC_RDMA_NAK_INV_REQ);
		return;
	}
	if (len) /* IB C9-88: a zero-length READ checks no R_Key */
		err = fc_mr_check_remote(x->d->mrs, x->pd, h->reth.rkey, h->reth.va, len,
					 FC_MR_REMOTE_READ, &host);
	if (err) {
		ans_err(x, err, FC_RDMA_SITE_RKEY);
		return;
	}
	memset(&rh, 0, sizeof(rh));
	rh.opcode = FC_RDMA_OPCODE(h->opcode >> FC_RDMA_OPC_CLASS_SHIFT, FC_RDMA_READ_RESP_ONLY);
	rh.dqp = x->q->remote_qpn;
	rh.sn = h->sn; /* 8.2: a response carries its request's SN */
	rh.steth = h->steth;
	{
		struct ans_src src = { .kind = SRC_READ, .pd = x->pd, .rkey = h->reth.rkey,
				       .va = h->reth.va, .len = len };

		send_response(x, &rh, &src);
	}
}

/* An atomic (8.3.6, RFC 7306 5.1): R_Key, alignment, then atomic.h. */
static void t_atomic(const struct req_ctx *x)
{
	const struct fc_rdma_hdrs *h = &x->h;
	struct fc_rdma_hdrs rh;
	uint64_t orig = 0, word = 0;
	struct fc_mr_loc loc;
	void *host = NULL;
	int err, cmp = x->op == FC_RDMA_CMP_SWAP || x->op == FC_RDMA_MASKED_CMP_SWAP;

	err = fc_mr_check_remote_loc(x->d->mrs, x->pd, h->atomic.rkey, h->atomic.va, 8,
				     FC_MR_REMOTE_ATOMIC, &loc);
	if (!err && (h->atomic.va & 7))
		err = -FC_RDMA_EALIGN;
	/* memory we reach only by copy: the operation runs on a copy of the word and writes
	 * it back, atomic with every other atomic this engine runs (IB's ATOMIC_HCA) */
	if (!err)
		host = loc.ops ? (void *)&word : loc.host;
	if (!err && loc.ops)
		err = fc_mr_read(&loc, 0, &word, sizeof(word));
	if (!err && cmp)
		err = fc_atomic_masked_cmp_swap(host, h->atomic.compare, h->atomic.compare_mask,
						h->atomic.swap_add, h->atomic.swap_add_mask, &orig);
	else if (!err)
		err = fc_atomic_masked_fetch_add(host, h->atomic.swap_add,
						 h->atomic.swap_add_mask, &orig);
	if (!err && loc.ops)
		err = fc_mr_write(&loc, 0, &word, sizeof(word));
	if (err) {
		ans_err(x, err, FC_RDMA_SITE_RKEY);
		return;
	}
	memset(&rh, 0, sizeof(rh));
	rh.opcode = FC_RDMA_OPCODE(h->opcode >> FC_RDMA_OPC_CLASS_SHIFT, FC_RDMA_ATOMIC_RESP);
	rh.dqp = x->q->remote_qpn;
	rh.sn = h->sn;
	rh.steth = h->steth;
	rh.atomic_orig = orig;
	{
		struct ans_src src = { .kind = SRC_NONE };

		send_response(x, &rh, &src);
	}
}

/* ------------------------------------------------------------------------ */
/* responder: dispatch                                                       */

/* Does QP q take requests of opcode's class (8.1.3)? */
static int class_ok(const struct qp *q, uint8_t opcode)
{
	uint8_t cls = opcode >> FC_RDMA_OPC_CLASS_SHIFT;

	switch (q->type) {
	case FC_RDMA_QPT_RC: return cls == FC_RDMA_CLASS_RC;
	case FC_RDMA_QPT_UD: return cls == FC_RDMA_CLASS_UD;
	case FC_RDMA_QPT_XRC_TGT: return cls == FC_RDMA_CLASS_XRC;
	default: return 0;
	}
}

/* The SRQ and PDs of the request (XRC: the XRCETH's SRQ, in the QP's domain). */
static int resolve_queues(struct req_ctx *x)
{
	struct qp *q = x->q;

	if (q->type == FC_RDMA_QPT_XRC_TGT) {
		x->srq = srq_get(x->d, x->h.xrc_srq);
		if (!x->srq || x->srq->xrcd != q->xrcd)
			return -EINVAL;
		x->pd = x->rpd = x->srq->pd;
		return 0;
	}
	x->srq = q->srq ? srq_get(x->d, q->srq) : NULL;
	x->pd = q->pd;
	x->rpd = x->srq ? x->srq->pd : q->pd;
	return 0;
}

static void dispatch(const struct req_ctx *x)
{
	switch (x->op) {
	case FC_RDMA_SEND_FIRST: case FC_RDMA_SEND_MIDDLE: case FC_RDMA_SEND_LAST:
	case FC_RDMA_SEND_LAST_IMM: case FC_RDMA_SEND_ONLY: case FC_RDMA_SEND_ONLY_IMM:
	case FC_RDMA_SEND_LAST_INV: case FC_RDMA_SEND_ONLY_INV:
		if (x->q->type == FC_RDMA_QPT_UD)
			t_ud_send(x);
		else
			t_send(x);
		return;
	case FC_RDMA_WRITE_FIRST: case FC_RDMA_WRITE_MIDDLE: case FC_RDMA_WRITE_LAST:
	case FC_RDMA_WRITE_LAST_IMM: case FC_RDMA_WRITE_ONLY: case FC_RDMA_WRITE_ONLY_IMM:
		t_write(x);
		return;
	case FC_RDMA_READ_REQ:
		t_read(x);
		return;
	case FC_RDMA_CMP_SWAP: case FC_RDMA_FETCH_ADD:
	case FC_RDMA_MASKED_CMP_SWAP: case FC_RDMA_MASKED_FETCH_ADD:
		t_atomic(x);
		return;
	default:
		ans_nak(x, FC_RDMA_NAK_INV_REQ);
	}
}

/* A request of connection c, decoded and dispatched to its QP. */
static void handle_request(struct conn *c, const struct fc_txn_req *r, int room)
{
	struct fc_rdma *d = c->d;
	struct req_ctx x;
	int push = r->kind == FC_TXN_PUSH;

	/* every field but h, which fc_rdma_decode clears and fills and which is read only
	 * once decoded is set: not cleared twice per request */
	x.d = d;
	x.c = c;
	x.r = r;
	x.decoded = 0;
	x.op = 0;
	x.q = NULL;
	x.srq = NULL;
	x.pd = x.rpd = 0;
	x.room = room;

	d->cnt.rx_req++;
	if (fc_rdma_decode(r->data, r->len, push ? FC_PKT_PUSH_DATA : FC_PKT_PULL_REQ, &x.h) < 0) {
		ans_nak(&x, FC_RDMA_NAK_INV_REQ);
		return;
	}
	x.decoded = 1;
	x.op = x.h.opcode & 0x1F;
	x.q = qp_get(d, x.h.dqp);
	if (!x.q || (x.q->c ? x.q->c != c : x.q->type != FC_RDMA_QPT_UD)) {
		d->cnt.nack_cid++; /* 6.9: NACK CID; the QP goes on */
		note_sn(&x);
		fc_txn_nack(c->t, r->rsn, FC_NACK_INVALID_CID, 0, d->now);
		return;
	}
	if (!class_ok(x.q, x.h.opcode) || resolve_queues(&x) ||
	    (x.q->state != FC_RDMA_QPS_RTR && x.q->state != FC_RDMA_QPS_RTS) ||
	    (c->ordered && c->rx_sn_seen && !sn_lt(c->rx_last_sn, x.h.sn))) {
		ans_nak(&x, FC_RDMA_NAK_INV_REQ);
		return;
	}
	dispatch(&x);
}

/* May a pull's answer go now: is there a slot to keep its Pull Data in if txn has no
 * room? Counts the pulls being answered (nested calls included). */
static int pull_room(const struct fc_rdma *d)
{
	return d->pend_used + d->pend_reserved < d->cfg.pending_resp;
}

/* Send kept answers, oldest first per connection, connections in the order they kept
 * their first, while there is room. */
void rdma_run_deferred(struct fc_rdma *d)
{
	if (d->running_deferred || !d->dq_total)
		return;
	d->running_deferred = 1;
	for (uint32_t i = d->dq_first, next; i != NONE && pull_room(d); i = next) {
		struct conn *c = &d->conn[i];

		next = c->dq_next; /* read after the answers below: more may have been listed */
		while (c->used && c->dq_count && pull_room(d)) {
			struct dans a = c->dq[c->dq_head];

			c->dq_head = (c->dq_head + 1) % c->dq_cap;
			c->dq_count--;
			d->dq_total--;
			d->pend_reserved++;
			emit_answer(d, c, a.rsn, a.resp_len, &a.h, &a.src);
			d->pend_reserved--;
		}
		next = c->dq_next;
		if (!c->used || !c->dq_count)
			rdma_dq_unlist(d, c);
	}
	d->running_deferred = 0;
}

void rdma_on_request(void *ctx, struct fc_txn *t, const struct fc_txn_req *r)
{
	struct conn *c = ctx;
	struct fc_rdma *d = c->d;
	int room;

	if (r->kind == FC_TXN_PUSH) {
		handle_request(c, r, 0);
		return;
	}
	/* a pull: reserve where its answer will wait if txn has no room for it */
	room = pull_room(d);
	if (!room && !c->dq && c->dq_cap)
		c->dq = calloc(c->dq_cap, sizeof(*c->dq)); /* bounded: dq_cap; NULL = no room */
	if (!room && (!c->dq || c->dq_count + c->dq_reserved >= c->dq_cap)) {
		d->cnt.pull_rnr_busy++; /* nowhere: ask again shortly (8.5.3.4) */
		fc_txn_rnr(t, r->rsn, 1, d->now);
		return;
	}
	if (room)
		d->pend_reserved++;
	else
		c->dq_reserved++;
	handle_request(c, r, room);
	if (room)
		d->pend_reserved--;
	else
		c->dq_reserved--;
	rdma_run_deferred(d); /* the room a nested answer reserved may be free again */
}
