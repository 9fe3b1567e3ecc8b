/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma_qp.c - QP life, the error state, posting (RDMA spec sections 6 and 8).
 * See rdma.h for the API and rdma_priv.h for the objects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma_priv.h"

/* ------------------------------------------------------------------------ */
/* QP life, the error state                                                  */

static int has_sq(uint8_t type) { return type != FC_RDMA_QPT_XRC_TGT; }
static int has_rq(const struct qp *q)
{
	return (q->type == FC_RDMA_QPT_RC || q->type == FC_RDMA_QPT_UD) && !q->srq;
}
static int is_connected(uint8_t type) { return type != FC_RDMA_QPT_UD; }

static uint8_t wc_opcode_of(uint8_t wr_op)
{
	static const uint8_t map[FC_RDMA_WR_OPCODE_COUNT] = {
		[FC_RDMA_WR_SEND] = FC_RDMA_WC_SEND,
		[FC_RDMA_WR_SEND_IMM] = FC_RDMA_WC_SEND,
		[FC_RDMA_WR_SEND_INV] = FC_RDMA_WC_SEND,
		[FC_RDMA_WR_WRITE] = FC_RDMA_WC_RDMA_WRITE,
		[FC_RDMA_WR_WRITE_IMM] = FC_RDMA_WC_RDMA_WRITE,
		[FC_RDMA_WR_READ] = FC_RDMA_WC_RDMA_READ,
		[FC_RDMA_WR_CMP_SWAP] = FC_RDMA_WC_COMP_SWAP,
		[FC_RDMA_WR_FETCH_ADD] = FC_RDMA_WC_FETCH_ADD,
		[FC_RDMA_WR_MASKED_CMP_SWAP] = FC_RDMA_WC_MASKED_COMP_SWAP,
		[FC_RDMA_WR_MASKED_FETCH_ADD] = FC_RDMA_WC_MASKED_FETCH_ADD,
	};
	return wr_op < FC_RDMA_WR_OPCODE_COUNT ? map[wr_op] : FC_RDMA_WC_SEND;
}


/* A send WQE reaches its final status: it no longer holds its connection. */
void rdma_swqe_settle(struct swqe *w)
{
	if (w->state == SW_POSTED || w->state == SW_ACTIVE) {
		if (w->c)
			conn_unref(w->c);
		w->state = SW_DONE;
	}
}

void rdma_swqe_emit(struct fc_rdma *d, struct qp *q, struct swqe *w)
{
	struct fc_rdma_wc wc = {
		.wr_id = w->wr.wr_id, .status = w->status, .opcode = wc_opcode_of(w->wr.opcode),
		.byte_len = w->status == FC_WC_SUCCESS ? w->byte_len : 0, .qp_num = q->num,
		.vendor_err = w->status == FC_WC_SUCCESS ? 0 : w->vendor,
	};

	w->state = SW_EMITTED;
	rdma_cq_push(d, q->send_cq, &wc, q);
}

static void sq_flush(struct fc_rdma *d, struct qp *q)
{
	for (uint64_t i = q->sq_head; i != q->sq_tail; i++) {
		struct swqe *w = sq_at(q, i);

		if (w->state == SW_EMITTED)
			continue;
		rdma_swqe_settle(w);
		w->status = FC_WC_WR_FLUSH_ERR;
		rdma_swqe_emit(d, q, w);
	}
	q->sq_head = q->sq_issue = q->sq_tail;
}

static void rq_flush(struct fc_rdma *d, struct qp *q)
{
	struct fc_rdma_wc wc;

	for (uint64_t i = q->rq.head; has_rq(q) && i != q->rq.tail; i++) {
		struct rwqe *w = rq_at(&q->rq, i);

		if (w->state == RW_EMITTED)
			continue;
		rdma_rwqe_wc(w, q->num, FC_WC_WR_FLUSH_ERR, &wc);
		w->state = RW_EMITTED;
		rdma_cq_push(d, q->recv_cq, &wc, q);
	}
	q->rq.head = q->rq.tail;
	for (uint32_t i = 0; q->map && i < MAP_MAX; i++) {
		struct map_ent *m = &q->map[i];

		if (!m->used)
			continue;
		m->used = 0;
		rdma_rwqe_wc(&m->w, q->num, FC_WC_WR_FLUSH_ERR, &wc);
		rdma_cq_push(d, m->cq, &wc, q);
	}
}

/* The error state: flush. fatal: reached by an error (6.3 verbs mode, a dead connection,
 * an overflowed CQ), FC_RDMA_EV_QP_FATAL; else asked for (fc_rdma_qp_modify), as verbs
 * no event. A QP fed by an SRQ has taken its last WQE once flushed: LAST_WQE either way.
 * The state is set before the flushes, whose CQ pushes may come back here (a CQ that
 * overflows takes its QPs to ERR): this QP is left alone then. */
static void qp_enter_err(struct fc_rdma *d, struct qp *q, int fatal)
{
	if (q->state == FC_RDMA_QPS_ERR || q->state == FC_RDMA_QPS_RESET)
		return;
	q->state = FC_RDMA_QPS_ERR;
	if (fatal)
		rdma_async_push(d, FC_RDMA_EV_QP_FATAL, q->num, q->user);
	sq_flush(d, q);
	rq_flush(d, q);
	if (q->srq || q->type == FC_RDMA_QPT_XRC_TGT)
		rdma_async_push(d, FC_RDMA_EV_QP_LAST_WQE, q->num, q->user);
}

void rdma_qp_to_err(struct qp *q, struct fc_rdma *d)
{
	qp_enter_err(d, q, 1);
}

/* A CQ of the QP overflowed: nothing of it could complete. */
static int qp_cq_overflowed(const struct fc_rdma *d, const struct qp *q)
{
	return (q->send_cq && fc_rdma_cq_overflowed(d, q->send_cq) == 1) ||
	       (q->recv_cq && fc_rdma_cq_overflowed(d, q->recv_cq) == 1);
}

/* Forget every transaction record (their txn completions will find nothing). */
static void rec_reset(struct qp *q)
{
	q->rec_free = NONE;
	for (uint32_t i = q->nrec; i-- > 0;) {
		struct txrec *r = &q->rec[i];

		if (r->used)
			conn_unref(r->c);
		r->used = 0;
		r->next = q->rec_free;
		q->rec_free = i;
	}
	q->outstanding = 0;
}

/* Back to RESET: every WQE dropped without completion, sequence counters restart. */
static void qp_reset(struct qp *q)
{
	for (uint64_t i = q->sq_head; i != q->sq_tail; i++)
		rdma_swqe_settle(sq_at(q, i));
	rec_reset(q);
	q->sq_head = q->sq_issue = q->sq_tail;
	q->rq.head = q->rq.tail;
	for (uint32_t i = 0; q->map && i < MAP_MAX; i++)
		q->map[i].used = 0;
	memset(q->dead, 0, sizeof(q->dead));
	memset(q->rnr, 0, sizeof(q->rnr));
	q->rmsn_msg = q->rmsn_rd = 1; /* 8.3.2: both RMSN counters start at 1 */
	q->rmsn_lo = 1;
	q->abs_lo = q->rq.head;
	q->nskip = 0;
	q->w_bytes = 0;
	q->w_err = 0;
	q->err_stop = q->fence_next = 0;
	q->state = FC_RDMA_QPS_RESET;
}

static void qp_free_mem(struct qp *q)
{
	free(q->sq);
	free(q->sq_sge);
	free(q->rec);
	free(q->map);
	rdma_rq_fini(&q->rq);
	q->sq = NULL;
	q->sq_sge = NULL;
	q->rec = NULL;
	q->map = NULL;
}

/* A connected QP's timer attributes go to its Falcon connection (one per RC / XRC QP). */
static void qp_conn_timeout(const struct qp *q)
{
	if (q->c && q->timeout_ns && is_connected(q->type) && !q->c->mn)
		fc_txn_set_timeout(q->c->t, q->timeout_ns);
}

int fc_rdma_qp_set_timers(struct fc_rdma *d, uint32_t qpn, uint64_t timeout_ns,
			  uint8_t rnr_retry, uint8_t min_rnr_timer)
{
	struct qp *q = qp_get(d, qpn);

	if (!q)
		return -ENOENT;
	if (timeout_ns) {
		q->timeout_ns = timeout_ns;
		qp_conn_timeout(q);
	}
	if (rnr_retry <= 7)
		q->rnr_retry = rnr_retry;
	if (min_rnr_timer <= FC_NACK_RNR_TO_MASK)
		q->min_rnr_timer = min_rnr_timer;
	return 0;
}

/* The connection t a connected QP of that ordering may use: ours, 1:1, ordered as the
 * mode wants, free. */
static int check_conn(const struct fc_rdma *d, struct fc_txn *t, uint8_t order, struct conn **out)
{
	struct conn *c = conn_of(d, t);

	if (!c)
		return -ENOENT;
	if (c->mn || c->ordered != (order == FC_RDMA_ORDER_STRONG))
		return -EINVAL;
	if (c->qp)
		return -EBUSY;
	*out = c;
	return 0;
}

static int check_qp_init(const struct fc_rdma *d, const struct fc_rdma_qp_init *a)
{
	int sq = has_sq(a->type), own_rq = (a->type == FC_RDMA_QPT_RC ||
					     a->type == FC_RDMA_QPT_UD) && !a->srq;
	struct srq *s;

	if (a->type < FC_RDMA_QPT_RC || a->type > FC_RDMA_QPT_XRC_TGT ||
	    a->order > FC_RDMA_ORDER_NONE || a->err_mode > FC_RDMA_MODE_CIE ||
	    (a->order == FC_RDMA_ORDER_NONE && a->err_mode != FC_RDMA_MODE_CIE) ||
	    a->rnr_retry > 7 || a->min_rnr_timer > FC_NACK_RNR_TO_MASK)
		return -EINVAL;
	if (sq && (!a->sq_depth || a->sq_depth > TBL_MAX ||
		   a->max_send_sge > FC_SEG_SGE_MAX || !a->max_inflight ||
		   a->max_inflight > TBL_MAX))
		return -EINVAL;
	if (own_rq && (!a->rq_depth || a->rq_depth > TBL_MAX ||
		       a->max_recv_sge > FC_RDMA_RECV_SGE_MAX))
		return -EINVAL;
	if (a->type == FC_RDMA_QPT_XRC_TGT && !a->xrcd)
		return -EINVAL;
	/* the objects it names: -ENOENT when one is missing */
	if (sq && !cq_get(d, a->send_cq))
		return -ENOENT;
	if ((a->type == FC_RDMA_QPT_RC || a->type == FC_RDMA_QPT_UD) && !cq_get(d, a->recv_cq))
		return -ENOENT;
	/* rdma.h, "CQ overflow": a CQ in error takes no QP */
	if ((sq && cq_get(d, a->send_cq)->error) ||
	    ((a->type == FC_RDMA_QPT_RC || a->type == FC_RDMA_QPT_UD) && cq_get(d, a->recv_cq)->error))
		return -EIO;
	if ((a->type == FC_RDMA_QPT_RC || a->type == FC_RDMA_QPT_UD) && a->srq) {
		if (!(s = srq_get(d, a->srq)))
			return -ENOENT;
		if (s->xrcd)
			return -EINVAL;
	}
	return 0;
}

static int qp_alloc_mem(struct qp *q, const struct fc_rdma_qp_init *a)
{
	int own_rq = (a->type == FC_RDMA_QPT_RC || a->type == FC_RDMA_QPT_UD) && !a->srq;

	if (has_sq(a->type)) {
		q->sq = calloc(a->sq_depth, sizeof(*q->sq));
		q->sq_sge = calloc((size_t)a->sq_depth * (a->max_send_sge ? a->max_send_sge : 1),
				   sizeof(*q->sq_sge));
		q->rec = calloc(a->max_inflight, sizeof(*q->rec));
		if (!q->sq || !q->sq_sge || !q->rec)
			return -ENOMEM;
		for (uint32_t i = 0; i < a->sq_depth; i++)
			q->sq[i].sge = q->sq_sge + (size_t)i * (a->max_send_sge ? a->max_send_sge : 1);
		q->sq_depth = a->sq_depth;
		q->nrec = a->max_inflight;
	}
	if (own_rq && rdma_rq_init(&q->rq, a->rq_depth, a->max_recv_sge))
		return -ENOMEM;
	if (a->srq || a->type == FC_RDMA_QPT_XRC_TGT) {
		q->map = calloc(MAP_MAX, sizeof(*q->map));
		if (!q->map)
			return -ENOMEM;
	}
	return 0;
}

static void qp_take_refs(struct fc_rdma *d, struct qp *q, int take)
{
	struct cq *cq;
	struct srq *s;

	if (has_sq(q->type) && (cq = cq_get(d, q->send_cq)))
		cq->nref += take ? 1u : (uint32_t)-1;
	if ((q->type == FC_RDMA_QPT_RC || q->type == FC_RDMA_QPT_UD) && (cq = cq_get(d, q->recv_cq)))
		cq->nref += take ? 1u : (uint32_t)-1;
	if (q->srq && q->type != FC_RDMA_QPT_XRC_TGT && (s = srq_get(d, q->srq)))
		s->nref += take ? 1u : (uint32_t)-1;
	if (q->c) {
		if (take)
			conn_ref(q->c);
		else
			conn_unref(q->c);
		q->c->qp = take ? q : NULL;
	}
}

int fc_rdma_qp_create(struct fc_rdma *d, const struct fc_rdma_qp_init *a, uint32_t *qpn)
{
	struct conn *c = NULL;
	struct qp *q = NULL;
	uint32_t gen;
	int rc;

	if (!a || !qpn)
		return -EINVAL;
	rc = check_qp_init(d, a);
	if (!rc && is_connected(a->type) && a->conn) /* else bound at INIT -> RTR */
		rc = check_conn(d, a->conn, a->order, &c);
	if (rc)
		return rc;
	uint32_t k = SLOT_TAKE(d->qp, d->cfg.max_qps, &d->qp_hint);

	if (k == NONE)
		return -ENOSPC;
	q = &d->qp[k];
	gen = q->gen;
	memset(q, 0, sizeof(*q));
	q->gen = gen;
	if (qp_alloc_mem(q, a)) {
		qp_free_mem(q);
		return -ENOMEM;
	}
	q->num = num_make(&q->gen, d->qp_bits, (uint32_t)(q - d->qp));
	q->used = 1;
	q->type = a->type;
	q->order = a->order;
	q->mode = a->err_mode;
	q->pd = a->pd;
	q->send_cq = has_sq(a->type) ? a->send_cq : 0;
	q->recv_cq = a->type == FC_RDMA_QPT_RC || a->type == FC_RDMA_QPT_UD ? a->recv_cq : 0;
	q->srq = a->type == FC_RDMA_QPT_XRC_TGT ? 0 : a->srq;
	q->xrcd = a->type == FC_RDMA_QPT_XRC_TGT ? a->xrcd : 0;
	q->qkey = a->qkey;
	q->c = c;
	q->min_rnr_timer = a->min_rnr_timer;
	q->rnr_retry = a->rnr_retry;
	q->timeout_ns = a->timeout_ns;
	q->user = a->user;
	q->max_send_sge = a->max_send_sge;
	qp_conn_timeout(q);
	qp_take_refs(d, q, 1);
	qp_reset(q);
	*qpn = q->num;
	return 0;
}

int fc_rdma_qp_destroy(struct fc_rdma *d, uint32_t qpn)
{
	struct qp *q = qp_get(d, qpn);

	if (!q)
		return -ENOENT;
	qp_reset(q);
	qp_take_refs(d, q, 0);
	qp_free_mem(q);
	q->used = 0;
	return 0;
}

int fc_rdma_qp_modify(struct fc_rdma *d, uint32_t qpn, const struct fc_rdma_qp_attr *attr)
{
	struct qp *q = qp_get(d, qpn);
	uint8_t to;

	if (!q)
		return -ENOENT;
	if (!attr)
		return -EINVAL;
	to = attr->state;
	if (to == FC_RDMA_QPS_RESET) {
		qp_reset(q);
	} else if (to == FC_RDMA_QPS_ERR) {
		qp_enter_err(d, q, 0);
	} else if (to == FC_RDMA_QPS_INIT && q->state == FC_RDMA_QPS_RESET) {
		if (qp_cq_overflowed(d, q))
			return -EIO;
		q->state = to;
	} else if (to == FC_RDMA_QPS_RTR && q->state == FC_RDMA_QPS_INIT) {
		struct conn *c = NULL;
		int rc;

		if (is_connected(q->type) && attr->remote_qpn > FC_RDMA_QPN_MASK)
			return -EINVAL;
		if (is_connected(q->type) && !q->c) { /* created unbound: bind it now */
			if (!attr->conn)
				return -EINVAL;
			if ((rc = check_conn(d, attr->conn, q->order, &c)))
				return rc;
		} else if (attr->conn && (!q->c || q->c->t != attr->conn)) {
			return -EINVAL;
		}
		if (c) {
			q->c = c;
			conn_ref(c);
			c->qp = q;
			qp_conn_timeout(q);
		}
		q->remote_qpn = attr->remote_qpn;
		q->state = to;
	} else if (to == FC_RDMA_QPS_RTS && q->state == FC_RDMA_QPS_RTR) {
		q->state = to;
	} else {
		return -EINVAL;
	}
	return 0;
}

int fc_rdma_qp_state(const struct fc_rdma *d, uint32_t qpn)
{
	const struct qp *q = qp_get(d, qpn);

	return q ? q->state : -ENOENT;
}

int fc_rdma_qp_sq_outstanding(const struct fc_rdma *d, uint32_t qpn)
{
	const struct qp *q = qp_get(d, qpn);

	return q ? (int)(q->sq_tail - q->sq_head) : -ENOENT;
}

int fc_rdma_qp_rq_outstanding(const struct fc_rdma *d, uint32_t qpn)
{
	const struct qp *q = qp_get(d, qpn);
	int n = 0;

	if (!q)
		return -ENOENT;
	for (uint32_t i = 0; q->map && i < MAP_MAX; i++)
		n += q->map[i].used;
	return (int)(q->rq.tail - q->rq.head) + n;
}

/* ------------------------------------------------------------------------ */
/* posting                                                                   */


uint8_t rdma_qp_class(const struct qp *q)
{
	return q->type == FC_RDMA_QPT_UD ? FC_RDMA_CLASS_UD :
	       q->type == FC_RDMA_QPT_XRC_INI ? FC_RDMA_CLASS_XRC : FC_RDMA_CLASS_RC;
}

/* The segmentation request of a SEND / WRITE / READ WR (seg.h). */
void rdma_seg_req_of(const struct fc_rdma *d, const struct qp *q,
		     const struct fc_rdma_send_wr *wr, uint32_t rmsn, struct fc_seg_req *r)
{
	static const uint8_t op[] = {
		[FC_RDMA_WR_SEND] = FC_SEG_SEND, [FC_RDMA_WR_SEND_IMM] = FC_SEG_SEND_IMM,
		[FC_RDMA_WR_SEND_INV] = FC_SEG_SEND_INV, [FC_RDMA_WR_WRITE] = FC_SEG_WRITE,
		[FC_RDMA_WR_WRITE_IMM] = FC_SEG_WRITE_IMM, [FC_RDMA_WR_READ] = FC_SEG_READ,
	};

	*r = (struct fc_seg_req){
		.op = op[wr->opcode], .cls = rdma_qp_class(q), .se = (wr->flags & FC_RDMA_WR_SOLICITED) != 0,
		.sgl = wr->sgl, .num_sge = wr->num_sge, .mtu_bytes = d->cfg.mtu_bytes,
		.remote_va = wr->remote_addr, .rkey = wr->rkey, .imm = wr->imm,
		.inv_rkey = wr->inv_rkey, .rmsn = rmsn, .xrc_srq = wr->xrc_remote_srq,
	};
}

static int op_allowed(const struct qp *q, uint8_t op)
{
	if (op >= FC_RDMA_WR_OPCODE_COUNT)
		return 0;
	if (q->type == FC_RDMA_QPT_UD)
		return op == FC_RDMA_WR_SEND || op == FC_RDMA_WR_SEND_IMM;
	/* 6.4: no WRITE with Immediate on an unordered QP */
	return !(q->order == FC_RDMA_ORDER_NONE && op == FC_RDMA_WR_WRITE_IMM);
}

/* Where a UD WR goes: its AH's connection. */
static int check_ud_dest(const struct fc_rdma *d, const struct qp *q,
			 const struct fc_rdma_send_wr *wr, struct conn **c)
{
	struct ah *ah = ah_get(d, wr->ah);

	if (!ah)
		return -ENOENT;
	if (ah->pd != q->pd || wr->remote_qpn > FC_RDMA_QPN_MASK ||
	    ah->c->ordered != (q->order == FC_RDMA_ORDER_STRONG))
		return -EINVAL;
	*c = ah->c;
	return 0;
}

/* The call's own checks (rdma.h); *total gets the message length. */
int rdma_check_wr(const struct fc_rdma *d, const struct qp *q, const struct fc_rdma_send_wr *wr,
		  uint64_t *total)
{
	struct fc_seg_req r;
	int64_t n;

	if (!op_allowed(q, wr->opcode) || wr->num_sge > q->max_send_sge ||
	    (wr->num_sge && !wr->sgl) || wr->xrc_remote_srq > FC_RDMA_QPN_MASK)
		return -EINVAL;
	if (rdma_is_atomic_op(wr->opcode)) {
		if (wr->num_sge != 1)
			return -EINVAL;
		*total = 8;
		return 0;
	}
	rdma_seg_req_of(d, q, wr, 0, &r);
	n = fc_seg_count(&r);
	if (n < 0)
		return (int)n;
	*total = 0;
	for (uint32_t i = 0; i < wr->num_sge; i++)
		*total += wr->sgl[i].len;
	if (*total > d->cfg.max_msg_bytes)
		return -EMSGSIZE;
	if (q->order == FC_RDMA_ORDER_NONE && is_send_op(wr->opcode) && *total > d->cfg.mtu_bytes)
		return -EMSGSIZE; /* 6.4: unordered SENDs are at most one MTU */
	return 0;
}

/* The requester's check of its own list at post time (tests/rdma_model.h). */
static int check_local_list(const struct fc_rdma *d, const struct qp *q,
			    const struct fc_rdma_send_wr *wr)
{
	uint32_t access = 0;
	void *host;
	int err;

	if (wr->opcode == FC_RDMA_WR_READ || rdma_is_atomic_op(wr->opcode))
		access = FC_MR_LOCAL_WRITE;
	if (rdma_is_atomic_op(wr->opcode) && wr->sgl[0].len != 8)
		return -FC_RDMA_ELEN;
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		if (!wr->sgl[i].len)
			continue;
		err = fc_mr_check_local(d->mrs, q->pd, wr->sgl[i].lkey, wr->sgl[i].addr,
					wr->sgl[i].len, access, &host);
		if (err)
			return err;
	}
	return 0;
}


int fc_rdma_post_send(struct fc_rdma *d, uint32_t qpn, const struct fc_rdma_send_wr *wr,
		      uint64_t now_ns)
{
	struct qp *q = qp_get(d, qpn);
	struct conn *c;
	struct swqe *w;
	uint64_t total = 0;
	int err;

	if (!q)
		return -ENOENT;
	if (!wr || !has_sq(q->type) ||
	    (q->state != FC_RDMA_QPS_RTS && q->state != FC_RDMA_QPS_ERR))
		return -EINVAL;
	set_now(d, now_ns);
	err = rdma_check_wr(d, q, wr, &total);
	c = q->c;
	if (!err && q->type == FC_RDMA_QPT_UD)
		err = check_ud_dest(d, q, wr, &c);
	if (err)
		return err;
	if (q->sq_tail - q->sq_head == q->sq_depth)
		return -EAGAIN;
	w = sq_at(q, q->sq_tail);
	w->wr = *wr;
	w->wr.sgl = w->sge;
	if (wr->num_sge)
		memcpy(w->sge, wr->sgl, wr->num_sge * sizeof(*w->sge));
	w->seq = q->sq_tail++;
	w->c = c;
	w->dqp = q->type == FC_RDMA_QPT_UD ? wr->remote_qpn : q->remote_qpn;
	w->qkey = wr->remote_qkey;
	w->nseg = w->issued = w->outstanding = 0;
	w->err_seg = -1;
	w->status = FC_WC_SUCCESS;
	w->vendor = 0;
	w->byte_len = (uint32_t)total;
	w->state = SW_POSTED;
	if (c) /* NULL: a QP that went to ERR before it was bound; flushed below */
		conn_ref(c);
	if (q->state == FC_RDMA_QPS_ERR) {
		w->status = FC_WC_WR_FLUSH_ERR;
		rdma_wr_finish(d, q, w);
		return 0;
	}
	err = check_local_list(d, q, &w->wr);
	w->mr_gen = err ? 0 : fc_mr_table_gen(d->mrs);
	if (err) {
		struct fc_rdma_err_effect ef;

		fc_rdma_err_effect(err, FC_RDMA_SITE_LOCAL, &ef);
		rdma_wr_fail(q, w, 0, ef.req_status, 0);
		rdma_wr_finish(d, q, w);
		return 0;
	}
	rdma_qp_pump(d, q);
	return 0;
}

int fc_rdma_post_recv(struct fc_rdma *d, uint32_t qpn, const struct fc_rdma_recv_wr *wr)
{
	struct qp *q = qp_get(d, qpn);
	int rc;

	if (!q)
		return -ENOENT;
	if (!has_rq(q) || q->state == FC_RDMA_QPS_RESET)
		return -EINVAL;
	rc = rdma_rq_post(&q->rq, wr);
	if (!rc && q->state == FC_RDMA_QPS_ERR)
		rq_flush(d, q);
	return rc;
}
