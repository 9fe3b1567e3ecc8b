/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma_queue.c - completion queues, receive queues, shared receive queues, address handles (RDMA spec sections 6 and 8).
 * See rdma.h for the API and rdma_priv.h for the objects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma_priv.h"

/* The CQ overflowed (rdma.h, "CQ overflow"): the error state for good, said to the
 * caller (event) and to the ring's consumer (status word), then every QP completing into
 * it goes to the error state. Bounded by max_qps; a QP's flush may overflow its other CQ,
 * which recurses once per CQ at most (each overflows once; a QP in ERR is left alone). */
static void cq_overflow(struct fc_rdma *d, struct cq *cq)
{
	cq->error = 1;
	rdma_async_push(d, FC_RDMA_EV_CQ_ERR, cq->num, cq->user);
	if (cq->uring)
		fc_ring_set_status(cq->uring, FC_RING_ST_OVERFLOW);
	for (uint32_t i = 0; i < d->cfg.max_qps; i++) {
		struct qp *q = &d->qp[i];

		if (q->used && (q->send_cq == cq->num || q->recv_cq == cq->num))
			rdma_qp_to_err(q, d);
	}
}

/* Append wc to CQ cqn on behalf of QP q (may be NULL). A completion that does not fit
 * overflows the CQ (cq_overflow); it, and every one after it, is dropped and counted,
 * and q goes to the error state (an XRC target QP is on no CQ of its own). */
void rdma_cq_push(struct fc_rdma *d, uint32_t cqn, const struct fc_rdma_wc *wc, struct qp *q)
{
	struct cq *cq = cq_get(d, cqn);
	int sol;

	if (!cq)
		return;
	if (cq->error || (cq->uring ? rdma_cq_ring_push(d, cq, wc) : cq->count == cq->depth)) {
		d->cnt.cq_lost++;
		if (!cq->error)
			cq_overflow(d, cq);
		if (q)
			rdma_qp_to_err(q, d);
		return;
	}
	if (!cq->uring) {
		cq->ring[(cq->head + cq->count) % cq->depth] = *wc;
		cq->count++;
	}
	sol = (wc->flags & FC_RDMA_WC_F_SOLICITED) || wc->status != FC_WC_SUCCESS;
	if (cq->armed && (!cq->armed_sol || sol)) {
		cq->armed = 0;
		if (d->cfg.cq_event)
			d->cfg.cq_event(d->cfg.ev_ctx, cq->num);
	}
}

int fc_rdma_cq_create(struct fc_rdma *d, uint32_t depth, uint32_t *cqn)
{
	struct cq *cq = NULL;
	uint32_t s;

	if (!depth || depth > TBL_MAX || !cqn)
		return -EINVAL;
	if ((s = SLOT_TAKE(d->cq, d->cfg.max_cqs, &d->cq_hint)) == NONE)
		return -ENOSPC;
	cq = &d->cq[s];
	cq->ring = calloc(depth, sizeof(*cq->ring));
	if (!cq->ring)
		return -ENOMEM;
	cq->num = num_make(&cq->gen, d->cq_bits, (uint32_t)(cq - d->cq));
	cq->used = 1;
	cq->depth = depth;
	cq->head = cq->count = cq->nref = 0;
	cq->error = cq->armed = cq->armed_sol = 0;
	cq->user = 0;
	*cqn = cq->num;
	return 0;
}

int fc_rdma_cq_set_user(struct fc_rdma *d, uint32_t cqn, uint64_t user)
{
	struct cq *cq = cq_get(d, cqn);

	if (!cq)
		return -ENOENT;
	cq->user = user;
	return 0;
}

int fc_rdma_cq_overflowed(const struct fc_rdma *d, uint32_t cqn)
{
	const struct cq *cq = cq_get(d, cqn);

	return cq ? cq->error : -ENOENT;
}

int fc_rdma_cq_destroy(struct fc_rdma *d, uint32_t cqn)
{
	struct cq *cq = cq_get(d, cqn);

	if (!cq)
		return -ENOENT;
	if (cq->nref)
		return -EBUSY;
	free(cq->ring);
	cq->ring = NULL;
	cq->uring = NULL;
	cq->used = 0;
	return 0;
}

int fc_rdma_poll_cq(struct fc_rdma *d, uint32_t cqn, struct fc_rdma_wc *wc, uint32_t n)
{
	struct cq *cq = cq_get(d, cqn);
	uint32_t k = 0;

	if (!cq)
		return -ENOENT;
	if ((!wc && n) || cq->uring)
		return -EINVAL;
	for (; k < n && cq->count; k++) {
		wc[k] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->depth;
		cq->count--;
	}
	if (!k && n && cq->error)
		return -EOVERFLOW;
	return (int)k;
}

int fc_rdma_cq_arm(struct fc_rdma *d, uint32_t cqn, int solicited_only)
{
	struct cq *cq = cq_get(d, cqn);

	if (!cq)
		return -ENOENT;
	cq->armed = 1;
	cq->armed_sol = solicited_only != 0;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* receive queues                                                            */

int rdma_rq_init(struct rq *q, uint32_t depth, uint32_t max_sge)
{
	memset(q, 0, sizeof(*q));
	if (!depth)
		return 0;
	q->w = calloc(depth, sizeof(*q->w));
	q->sge = calloc((size_t)depth * (max_sge ? max_sge : 1), sizeof(*q->sge));
	if (!q->w || !q->sge)
		return -ENOMEM;
	q->depth = depth;
	q->max_sge = max_sge;
	for (uint32_t i = 0; i < depth; i++)
		q->w[i].sge = q->sge + (size_t)i * (max_sge ? max_sge : 1);
	return 0;
}

void rdma_rq_fini(struct rq *q)
{
	free(q->w);
	free(q->sge);
	memset(q, 0, sizeof(*q));
}


/* Validate and append wr. Returns 0, -EINVAL, -EAGAIN (full). */
int rdma_rq_post(struct rq *q, const struct fc_rdma_recv_wr *wr)
{
	struct rwqe *w;
	uint64_t cap = 0;

	if (!wr || wr->num_sge > q->max_sge || (wr->num_sge && !wr->sgl))
		return -EINVAL;
	if (q->tail - q->head == q->depth)
		return -EAGAIN;
	for (uint32_t i = 0; i < wr->num_sge; i++)
		cap += wr->sgl[i].len;
	if (cap > FC_SEG_MSG_MAX)
		return -EINVAL;
	w = rq_at(q, q->tail);
	w->wr_id = wr->wr_id;
	w->nsge = wr->num_sge;
	w->cap = (uint32_t)cap;
	if (wr->num_sge)
		memcpy(w->sge, wr->sgl, wr->num_sge * sizeof(*w->sge));
	w->state = RW_POSTED;
	w->err = 0;
	memset(&w->wc, 0, sizeof(w->wc));
	q->tail++;
	return 0;
}

/* A WQE as a completion with status st (flush, or an empty receive). */
void rdma_rwqe_wc(const struct rwqe *w, uint32_t qpn, uint8_t st, struct fc_rdma_wc *wc)
{
	*wc = w->wc;
	wc->wr_id = w->wr_id;
	wc->qp_num = qpn;
	if (st != FC_WC_SUCCESS) {
		wc->status = st;
		wc->opcode = FC_RDMA_WC_RECV;
	}
}

/* ------------------------------------------------------------------------ */
/* shared receive queues and address handles                                 */

int fc_rdma_srq_create(struct fc_rdma *d, const struct fc_rdma_srq_init *a, uint32_t *srqn)
{
	struct srq *s = NULL;
	struct cq *cq = NULL;

	if (!a || !srqn || !a->depth || a->depth > TBL_MAX || a->max_sge > FC_RDMA_RECV_SGE_MAX)
		return -EINVAL;
	if (a->xrcd && !(cq = cq_get(d, a->cq)))
		return -ENOENT;
	if (cq && cq->error)
		return -EIO; /* its completions would be lost (rdma.h, "CQ overflow") */
	uint32_t k = SLOT_TAKE(d->srq, d->cfg.max_srqs, &d->srq_hint);

	if (k == NONE)
		return -ENOSPC;
	s = &d->srq[k];
	if (rdma_rq_init(&s->rq, a->depth, a->max_sge)) {
		rdma_rq_fini(&s->rq);
		return -ENOMEM;
	}
	s->num = num_make(&s->gen, d->srq_bits, (uint32_t)(s - d->srq));
	s->used = 1;
	s->nref = 0;
	s->uring = NULL; /* a reused slot forgets its last ring */
	s->ubroken = 0;
	s->pd = a->pd;
	s->xrcd = a->xrcd;
	s->cq = a->xrcd ? a->cq : 0;
	if (cq)
		cq->nref++;
	*srqn = s->num;
	return 0;
}

int fc_rdma_srq_destroy(struct fc_rdma *d, uint32_t srqn)
{
	struct srq *s = srq_get(d, srqn);
	struct cq *cq;

	if (!s)
		return -ENOENT;
	if (s->nref)
		return -EBUSY;
	if (s->xrcd && (cq = cq_get(d, s->cq)))
		cq->nref--;
	rdma_rq_fini(&s->rq);
	s->used = 0;
	return 0;
}

int fc_rdma_post_srq_recv(struct fc_rdma *d, uint32_t srqn, const struct fc_rdma_recv_wr *wr)
{
	struct srq *s = srq_get(d, srqn);

	return s ? rdma_rq_post(&s->rq, wr) : -ENOENT;
}

int fc_rdma_ah_create(struct fc_rdma *d, uint32_t pd, struct fc_txn *conn, uint32_t *ahn)
{
	struct conn *c = conn_of(d, conn);
	struct ah *ah = NULL;

	if (!ahn)
		return -EINVAL;
	if (!c)
		return -ENOENT;
	uint32_t k = SLOT_TAKE(d->ah, d->cfg.max_ahs, &d->ah_hint);

	if (k == NONE)
		return -ENOSPC;
	ah = &d->ah[k];
	ah->num = num_make(&ah->gen, d->ah_bits, (uint32_t)(ah - d->ah));
	ah->used = 1;
	ah->pd = pd;
	ah->c = c;
	conn_ref(c);
	*ahn = ah->num;
	return 0;
}

int fc_rdma_ah_destroy(struct fc_rdma *d, uint32_t ahn)
{
	struct ah *ah = ah_get(d, ahn);

	if (!ah)
		return -ENOENT;
	conn_unref(ah->c);
	ah->used = 0;
	return 0;
}
