/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verbs/qp.c - QPs with verbs' state machine over falcon_create_qp / falcon_modify_qp,
 * and the data path the inline verbs reach through the context's ops: post_send,
 * post_recv, poll_cq.
 *
 * Send WRs: falcon completes every WR, verbs only the signaled ones (and every error).
 * Each posted WR takes a slot of the QP's ring of struct fv_swr (4 x the send ring): the
 * falcon WR's wr_id is the post counter, the completion finds the program's wr_id and
 * whether it is to be seen there; a successful unsignaled one is consumed by poll_cq
 * unseen. A slot is free again when its completion has been polled, so a program that
 * never polls a CQ with only unsignaled WRs finds its send queue full (ENOMEM), as on a
 * device. IBV_SEND_INLINE: the data is copied at post time into the slot's part of a
 * registered buffer of the QP, and the program's SGEs (and lkeys) are not used after.
 *
 * UD receives: a verbs program leaves 40 bytes for the GRH at the start of each receive
 * buffer; the first SGE is posted 40 bytes further on and the completion counts them
 * (IBV_WC_GRH). The GRH bytes are not written (falcon does not say the sender's address):
 * ibv_wc.slid carries the number falcond gave the sending daemon, which
 * ibv_create_ah_from_wc takes.
 */
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fv.h"

#define BATCH 32u

static uint32_t pow2_up(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

static void hash_add(struct fv_context *c, struct fv_qp *q)
{
	struct fv_qp **b = &c->qps[q->qp.qp_num % FV_QP_HASH];

	pthread_mutex_lock(&c->lock);
	q->hnext = *b;
	*b = q;
	pthread_mutex_unlock(&c->lock);
}

static void hash_del(struct fv_context *c, struct fv_qp *q)
{
	struct fv_qp **pp;

	pthread_mutex_lock(&c->lock);
	for (pp = &c->qps[q->qp.qp_num % FV_QP_HASH]; *pp && *pp != q; pp = &(*pp)->hnext)
		;
	if (*pp)
		*pp = q->hnext;
	pthread_mutex_unlock(&c->lock);
}

static int qpt_of(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return FALCON_QPT_RC;
	case IBV_QPT_UD: return FALCON_QPT_UD;
	case IBV_QPT_XRC_SEND: return FALCON_QPT_XRC_SEND;
	case IBV_QPT_XRC_RECV: return FALCON_QPT_XRC_RECV;
	default: return -1; /* UC, raw packet, DC (driver): not in falcon */
	}
}

/* The caps asked for within falcond's limits: 0 or EINVAL. */
static int caps_ok(const struct fv_context *c, const struct ibv_qp_cap *k)
{
	const struct falcon_device_attr *f = &c->attr;

	return k->max_send_wr > f->max_send_wr || k->max_recv_wr > f->max_recv_wr ||
	       k->max_send_sge > f->max_send_sge || k->max_recv_sge > f->max_recv_sge ||
	       k->max_inline_data > FV_INLINE_MAX ? EINVAL : 0;
}

static struct falcon_pd *pd_for(struct fv_context *c, struct ibv_pd *pd)
{
	static struct falcon_pd *none;

	if (pd)
		return ((struct fv_pd *)pd)->fp;
	/* an XRC_RECV QP has no PD in verbs; falcon's wants one: the context's own */
	pthread_mutex_lock(&c->lock);
	if (!c->xrc_pd)
		c->xrc_pd = falcon_alloc_pd(c->fc);
	pthread_mutex_unlock(&c->lock);
	return c->xrc_pd ? c->xrc_pd : none;
}

/* The inline buffer of a QP that asked for inline data: nswr slots. 0 or an errno. */
static int inline_init(struct fv_context *c, struct fv_qp *q, struct falcon_pd *pd)
{
	size_t len = (size_t)q->nswr * FV_INLINE_MAX;

	if (!q->cap.max_inline_data)
		return 0;
	if (!(q->inl = falcon_alloc_buf(c->fc, len)))
		return errno;
	if (!(q->inl_mr = falcon_reg_mr(pd, q->inl, len, FALCON_ACCESS_LOCAL_WRITE))) {
		int e = errno;

		falcon_free_buf(c->fc, q->inl);
		q->inl = NULL;
		return e;
	}
	return 0;
}

static void qp_free(struct fv_context *c, struct fv_qp *q)
{
	if (q->inl_mr)
		falcon_dereg_mr(q->inl_mr);
	if (q->inl)
		falcon_free_buf(c->fc, q->inl);
	free(q->swr);
	free(q);
}

struct ibv_qp *fv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	struct fv_context *c = fv_ctx(ctx);
	uint32_t ok_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			   IBV_QP_INIT_ATTR_CREATE_FLAGS;
	int t = qpt_of(a->qp_type), e;
	struct falcon_qp_init_attr *f;
	struct falcon_pd *fpd;
	struct fv_qp *q;

	if (t < 0 || (a->comp_mask & ~ok_mask) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (caps_ok(c, &a->cap) || (t != FALCON_QPT_XRC_RECV && !(a->comp_mask & IBV_QP_INIT_ATTR_PD)) ||
	    (t == FALCON_QPT_XRC_RECV && !(a->comp_mask & IBV_QP_INIT_ATTR_XRCD)) ||
	    (t != FALCON_QPT_XRC_RECV && !a->send_cq) ||
	    ((t == FALCON_QPT_RC || t == FALCON_QPT_UD) && !a->recv_cq)) {
		errno = EINVAL;
		return NULL;
	}
	if (!(q = calloc(1, sizeof(*q)))) {
		errno = ENOMEM;
		return NULL;
	}
	f = &q->fattr;
	f->size = sizeof(*f);
	f->qp_type = (uint32_t)t;
	if (t != FALCON_QPT_XRC_RECV) {
		f->send_cq = ((struct fv_cq *)a->send_cq)->fcq;
		f->max_send_wr = pow2_up(a->cap.max_send_wr ? a->cap.max_send_wr : 1);
		f->max_send_sge = a->cap.max_send_sge ? a->cap.max_send_sge : 1;
	}
	if (a->recv_cq && t != FALCON_QPT_XRC_SEND && t != FALCON_QPT_XRC_RECV)
		f->recv_cq = ((struct fv_cq *)a->recv_cq)->fcq;
	if (a->srq)
		f->srq = ((struct fv_srq *)a->srq)->fs;
	f->max_recv_wr = pow2_up(a->cap.max_recv_wr ? a->cap.max_recv_wr : 1);
	f->max_recv_sge = a->cap.max_recv_sge ? a->cap.max_recv_sge : 1;
	if (t == FALCON_QPT_XRC_RECV)
		f->xrcd = ((struct fv_xrcd *)a->xrcd)->fx;
	q->cap = a->cap;
	q->cap.max_send_wr = f->max_send_wr;
	q->cap.max_send_sge = f->max_send_sge;
	if (!a->srq && t != FALCON_QPT_XRC_SEND && t != FALCON_QPT_XRC_RECV) {
		q->cap.max_recv_wr = f->max_recv_wr;
		q->cap.max_recv_sge = f->max_recv_sge;
	}
	q->nswr = 4 * pow2_up(f->max_send_wr ? f->max_send_wr : 1);
	fpd = pd_for(c, (a->comp_mask & IBV_QP_INIT_ATTR_PD) ? a->pd : NULL);
	if (!fpd || !(q->swr = calloc(q->nswr, sizeof(*q->swr)))) {
		errno = fpd ? ENOMEM : errno;
		goto fail;
	}
	if ((e = t == FALCON_QPT_XRC_RECV ? 0 : inline_init(c, q, fpd))) {
		errno = e;
		goto fail;
	}
	if (!(q->fq = falcon_create_qp(fpd, f)))
		goto fail;
	q->sq_sig_all = a->sq_sig_all;
	q->qp = (struct ibv_qp){ .context = ctx, .qp_context = a->qp_context,
				 .pd = (a->comp_mask & IBV_QP_INIT_ATTR_PD) ? a->pd : NULL,
				 .send_cq = a->send_cq, .recv_cq = a->recv_cq, .srq = a->srq,
				 .qp_num = q->fq->qp_num, .state = IBV_QPS_RESET,
				 .qp_type = a->qp_type };
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	pthread_spin_init(&q->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&q->rq_lock, PTHREAD_PROCESS_PRIVATE);
	q->attr.qp_state = q->attr.cur_qp_state = IBV_QPS_RESET;
	q->attr.port_num = 1;
	q->attr.path_mtu = q->attr.path_mtu ? q->attr.path_mtu : IBV_MTU_1024;
	a->cap = q->cap;
	hash_add(c, q);
	return &q->qp;
fail:
	e = errno;
	qp_free(c, q);
	errno = e;
	return NULL;
}

FV_API struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct ibv_qp_init_attr_ex x = { .qp_context = a->qp_context, .send_cq = a->send_cq,
					 .recv_cq = a->recv_cq, .srq = a->srq, .cap = a->cap,
					 .qp_type = a->qp_type, .sq_sig_all = a->sq_sig_all,
					 .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd };
	struct ibv_qp *qp = fv_create_qp_ex(pd->context, &x);

	if (qp)
		a->cap = x.cap;
	return qp;
}

FV_API int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct fv_context *c = fv_ctx(qp->context);
	struct fv_qp *q = (struct fv_qp *)qp;
	int rc;

	/* A connected QP that may have just taken the peer's last message: give the ACK of
	 * it a head start on the disconnect, which falcond sends on another socket. Without
	 * it the peer's daemon now and then flushes that message's send WR although it was
	 * delivered (rc_pingpong's server: 1 run in 6 on a loaded 2-core host); a device
	 * completes it SUCCESS. (falcond's own ordering of the two is the real fix.) */
	if (qp->qp_type != IBV_QPT_UD && falcon_query_qp(q->fq, NULL) == FALCON_QPS_RTS)
		usleep(FV_CLOSE_GRACE_US);
	rc = falcon_destroy_qp(q->fq);
	if (rc)
		return fv_errno(rc);
	hash_del(c, q);
	qp_free(c, q);
	return 0;
}

/* A UD QP takes its Q_Key at INIT in verbs, at creation in falcon: the falcon QP is made
 * again with it (still in RESET; its number changes, before the program has told it to
 * anyone: verbs programs learn the QP number after INIT). 0 or an errno. */
static int ud_rekey(struct fv_context *c, struct fv_qp *q, uint32_t qkey)
{
	struct falcon_qp *n;

	if (q->fattr.qkey == qkey)
		return 0;
	q->fattr.qkey = qkey;
	if (!(n = falcon_create_qp(pd_for(c, q->qp.pd), &q->fattr)))
		return errno;
	falcon_destroy_qp(q->fq);
	hash_del(c, q);
	q->fq = n;
	q->qp.qp_num = n->qp_num;
	hash_add(c, q);
	return 0;
}

/* verbs' transitions: RESET->INIT, INIT->INIT, INIT->RTR, RTR->RTS, RTS->RTS, any->ERR,
 * any->RESET (SQD, SQE: EINVAL, falcon has no send queue drain). */
static int transition_ok(enum ibv_qp_state from, enum ibv_qp_state to)
{
	if (to == IBV_QPS_ERR || to == IBV_QPS_RESET)
		return 1;
	return (from == IBV_QPS_RESET && to == IBV_QPS_INIT) ||
	       (from == IBV_QPS_INIT && (to == IBV_QPS_INIT || to == IBV_QPS_RTR)) ||
	       (from == IBV_QPS_RTR && to == IBV_QPS_RTS) ||
	       (from == IBV_QPS_RTS && to == IBV_QPS_RTS);
}

static void timers_of(const struct ibv_qp_attr *a, int mask, struct falcon_qp_attr *f)
{
	if (mask & IBV_QP_TIMEOUT) {
		f->attr_mask |= FALCON_QP_ATTR_TIMEOUT;
		f->timeout = a->timeout;
	}
	if (mask & IBV_QP_RETRY_CNT) {
		f->attr_mask |= FALCON_QP_ATTR_RETRY_CNT;
		f->retry_cnt = a->retry_cnt;
	}
	if (mask & IBV_QP_RNR_RETRY) {
		f->attr_mask |= FALCON_QP_ATTR_RNR_RETRY;
		f->rnr_retry = a->rnr_retry;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER) {
		f->attr_mask |= FALCON_QP_ATTR_MIN_RNR_TIMER;
		f->min_rnr_timer = a->min_rnr_timer;
	}
}

/* What ibv_query_qp reports afterwards: the attributes the program set. */
static void remember(struct fv_qp *q, const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr *s = &q->attr;

#define KEEP(bit, field) do { if (mask & (bit)) s->field = a->field; } while (0)
	KEEP(IBV_QP_STATE, qp_state);
	KEEP(IBV_QP_PKEY_INDEX, pkey_index);
	KEEP(IBV_QP_PORT, port_num);
	KEEP(IBV_QP_QKEY, qkey);
	KEEP(IBV_QP_AV, ah_attr);
	KEEP(IBV_QP_PATH_MTU, path_mtu);
	KEEP(IBV_QP_TIMEOUT, timeout);
	KEEP(IBV_QP_RETRY_CNT, retry_cnt);
	KEEP(IBV_QP_RNR_RETRY, rnr_retry);
	KEEP(IBV_QP_RQ_PSN, rq_psn);
	KEEP(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	KEEP(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
	KEEP(IBV_QP_SQ_PSN, sq_psn);
	KEEP(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	KEEP(IBV_QP_DEST_QPN, dest_qp_num);
	KEEP(IBV_QP_ACCESS_FLAGS, qp_access_flags);
#undef KEEP
	s->cur_qp_state = s->qp_state;
}

/* RTR of RC / XRC: the peer by its GID (the daemon's address) and QP number. */
static int rtr_dest(struct fv_context *c, const struct ibv_qp_attr *a, int mask,
		    struct falcon_qp_attr *f, char *host, size_t len)
{
	if (!(mask & IBV_QP_AV) || !(mask & IBV_QP_DEST_QPN) || !a->ah_attr.is_global)
		return EINVAL; /* RoCE: the address is the GRH's GID */
	if (a->ah_attr.port_num > 1)
		return EINVAL;
	if (fv_gid_to_host(c, &a->ah_attr.grh.dgid, host, len))
		return EINVAL;
	f->dest_host = host;
	f->dest_qp_num = a->dest_qp_num;
	f->timeout_ms = -1;
	return 0;
}

static int fstate(struct fv_qp *q, uint32_t st)
{
	struct falcon_qp_attr f = { .size = sizeof(f), .qp_state = st };
	int rc = falcon_modify_qp(q->fq, &f);

	return rc ? fv_errno(rc) : 0;
}

FV_API int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct fv_context *c = fv_ctx(qp->context);
	struct fv_qp *q = (struct fv_qp *)qp;
	struct falcon_qp_attr f = { .size = sizeof(f) };
	enum ibv_qp_state cur, to;
	char host[80];
	int st, rc;

	/* ours, unless falcon has moved the QP to ERR meanwhile (a connection's RTR may stay
	 * INIT in falcon until the connection is open) */
	st = falcon_query_qp(q->fq, NULL);
	cur = st == FALCON_QPS_ERR ? IBV_QPS_ERR : q->attr.qp_state;
	to = (mask & IBV_QP_STATE) ? a->qp_state : cur;
	if (!transition_ok(cur, to) || ((mask & IBV_QP_PORT) && a->port_num != 1))
		return EINVAL;
	if (to == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
		if (cur != IBV_QPS_ERR && (rc = fstate(q, FALCON_QPS_ERR)))
			return rc;
		if ((rc = fstate(q, FALCON_QPS_RESET)))
			return rc;
		memset(q->swr, 0, q->nswr * sizeof(*q->swr));
		goto done;
	}
	if (cur == IBV_QPS_RESET && to == IBV_QPS_INIT && qp->qp_type == IBV_QPT_UD) {
		if (!(mask & IBV_QP_QKEY))
			return EINVAL;
		if ((rc = ud_rekey(c, q, a->qkey)))
			return rc;
	}
	if (cur == IBV_QPS_INIT && to == IBV_QPS_RTR &&
	    qp->qp_type != IBV_QPT_UD &&
	    (rc = rtr_dest(c, a, mask, &f, host, sizeof(host))))
		return rc;
	timers_of(a, mask, &f);
	if (to == cur && !f.attr_mask)
		goto done;
	f.qp_state = (uint32_t)to;
	if ((rc = falcon_modify_qp(q->fq, &f)))
		return fv_errno(rc);
done:
	remember(q, a, mask);
	q->attr.qp_state = q->attr.cur_qp_state = to;
	qp->state = to;
	return 0;
}

FV_API int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
			struct ibv_qp_init_attr *init)
{
	struct fv_qp *q = (struct fv_qp *)qp;
	int st = falcon_query_qp(q->fq, NULL);

	(void)mask;
	if (st < 0)
		return fv_errno(st);
	*a = q->attr;
	if (st == FALCON_QPS_ERR)
		a->qp_state = a->cur_qp_state = IBV_QPS_ERR;
	a->cap = q->cap;
	a->max_rd_atomic = a->max_rd_atomic ? a->max_rd_atomic : FV_MAX_RD_ATOM;
	a->max_dest_rd_atomic = a->max_dest_rd_atomic ? a->max_dest_rd_atomic : FV_MAX_RD_ATOM;
	if (init)
		*init = (struct ibv_qp_init_attr){ .qp_context = qp->qp_context,
			.send_cq = qp->send_cq, .recv_cq = qp->recv_cq, .srq = qp->srq,
			.cap = q->cap, .qp_type = qp->qp_type, .sq_sig_all = q->sq_sig_all };
	return 0;
}

FV_API struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	(void)qp;
	return NULL; /* no QP is created with send ops flags: the new post API is refused */
}

FV_API int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp, (void)op, (void)flags;
	return 0;
}

FV_API int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

FV_API int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* ---- posting ---- */

static int wr_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE: return FALCON_WR_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM: return FALCON_WR_RDMA_WRITE_WITH_IMM;
	case IBV_WR_SEND: return FALCON_WR_SEND;
	case IBV_WR_SEND_WITH_IMM: return FALCON_WR_SEND_WITH_IMM;
	case IBV_WR_RDMA_READ: return FALCON_WR_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return FALCON_WR_ATOMIC_CMP_AND_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return FALCON_WR_ATOMIC_FETCH_AND_ADD;
	case IBV_WR_SEND_WITH_INV: return FALCON_WR_SEND_WITH_INV;
	default: return -1; /* LOCAL_INV, BIND_MW (no memory windows), TSO, driver ops */
	}
}

/* Copy an inline WR's data into its slot: 0 or EINVAL (longer than asked for). */
static int inline_copy(struct fv_qp *q, const struct ibv_send_wr *w, uint32_t slot,
		       struct falcon_sge *sge)
{
	uint8_t *dst = q->inl + (size_t)slot * FV_INLINE_MAX;
	uint32_t len = 0;

	for (int i = 0; i < w->num_sge; i++) {
		if (w->sg_list[i].length > q->cap.max_inline_data - len)
			return EINVAL;
		memcpy(dst + len, (void *)(uintptr_t)w->sg_list[i].addr, w->sg_list[i].length);
		len += w->sg_list[i].length;
	}
	*sge = (struct falcon_sge){ .addr = (uintptr_t)dst, .length = len, .lkey = q->inl_mr->lkey };
	return 0;
}

/* One verbs send WR as a falcon one, in the QP's next slot: 0, ENOMEM (the send queue is
 * full: slots not yet polled), EINVAL. */
static int send_wr_of(struct fv_qp *q, const struct ibv_send_wr *w, struct falcon_send_wr *f,
		      struct falcon_sge *isge)
{
	uint32_t slot = (uint32_t)(q->spost & (q->nswr - 1));
	struct fv_swr *s = &q->swr[slot];
	int op = wr_opcode(w->opcode);

	if (s->busy)
		return ENOMEM;
	if (op < 0 || w->num_sge < 0 || (uint32_t)w->num_sge > q->cap.max_send_sge)
		return EINVAL;
	memset(f, 0, sizeof(*f));
	f->opcode = (uint32_t)op;
	f->sg_list = (struct falcon_sge *)w->sg_list;
	f->num_sge = w->num_sge;
	if ((w->send_flags & IBV_SEND_INLINE) && op != FALCON_WR_RDMA_READ &&
	    op != FALCON_WR_ATOMIC_CMP_AND_SWP && op != FALCON_WR_ATOMIC_FETCH_AND_ADD) {
		if (!q->inl || inline_copy(q, w, slot, isge))
			return EINVAL;
		f->sg_list = isge;
		f->num_sge = 1;
	}
	f->send_flags = (w->send_flags & IBV_SEND_SOLICITED) ? FALCON_SEND_SOLICITED : 0;
	if (op == FALCON_WR_SEND_WITH_IMM || op == FALCON_WR_RDMA_WRITE_WITH_IMM)
		f->imm_data = be32toh(w->imm_data);
	if (op == FALCON_WR_SEND_WITH_INV)
		f->invalidate_rkey = w->invalidate_rkey;
	if (op == FALCON_WR_ATOMIC_CMP_AND_SWP || op == FALCON_WR_ATOMIC_FETCH_AND_ADD) {
		f->remote_addr = w->wr.atomic.remote_addr;
		f->rkey = w->wr.atomic.rkey;
		f->compare_add = w->wr.atomic.compare_add;
		f->swap = w->wr.atomic.swap;
	} else {
		f->remote_addr = w->wr.rdma.remote_addr;
		f->rkey = w->wr.rdma.rkey;
	}
	if (q->qp.qp_type == IBV_QPT_UD) {
		if (!w->wr.ud.ah)
			return EINVAL;
		f->ah = ((struct fv_ah *)w->wr.ud.ah)->fa;
		f->remote_qpn = w->wr.ud.remote_qpn;
		/* a Q_Key with the high bit set means the QP's own (IBA 10.2.5) */
		f->remote_qkey = (w->wr.ud.remote_qkey & 0x80000000u) ? q->fattr.qkey :
				 w->wr.ud.remote_qkey;
	}
	if (q->qp.qp_type == IBV_QPT_XRC_SEND)
		f->xrc_remote_srq_num = w->qp_type.xrc.remote_srqn;
	f->wr_id = q->spost;
	s->busy = 1;
	s->wr_id = w->wr_id;
	s->signaled = q->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
	q->spost++;
	return 0;
}

/* Post fw[0..n) (linked); on failure the slots from the refused one on are released and
 * *bad names the verbs WR it was. */
static int post_batch(struct fv_qp *q, struct falcon_send_wr *fw, struct ibv_send_wr **src,
		      unsigned n, struct ibv_send_wr **bad)
{
	struct falcon_send_wr *fbad = NULL;
	int rc;

	if (!n)
		return 0;
	for (unsigned i = 0; i + 1 < n; i++)
		fw[i].next = &fw[i + 1];
	fw[n - 1].next = NULL;
	if (!(rc = falcon_post_send(q->fq, fw, &fbad)))
		return 0;
	unsigned k = fbad ? (unsigned)(fbad - fw) : 0;

	for (unsigned i = k; i < n; i++)
		q->swr[fw[i].wr_id & (q->nswr - 1)].busy = 0;
	q->spost -= n - k;
	*bad = src[k];
	return fv_errno(rc);
}

static int post_send_locked(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fv_qp *q = (struct fv_qp *)qp;
	struct falcon_send_wr fw[BATCH];
	struct falcon_sge isge[BATCH];
	struct ibv_send_wr *src[BATCH];
	unsigned n = 0;
	int rc;

	if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT || qp->state == IBV_QPS_RTR) {
		*bad = wr; /* a send queue is usable from RTS on (in ERR the WRs flush) */
		return EINVAL;
	}
	for (; wr; wr = wr->next) {
		if ((rc = send_wr_of(q, wr, &fw[n], &isge[n]))) {
			int prc = post_batch(q, fw, src, n, bad);

			if (prc)
				return prc;
			*bad = wr;
			errno = rc;
			return rc;
		}
		src[n++] = wr;
		if (n == BATCH) {
			if ((rc = post_batch(q, fw, src, n, bad)))
				return rc;
			n = 0;
		}
	}
	return post_batch(q, fw, src, n, bad);
}

/* UD receives: the first SGE moved past the GRH's 40 bytes (copies, at most BATCH). */
static int post_recv_ud(struct fv_qp *q, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct falcon_recv_wr fw[BATCH], *fbad = NULL;
	struct falcon_sge sg[BATCH][4];
	struct ibv_recv_wr *src[BATCH];
	unsigned n = 0;
	int rc;

	for (; wr; wr = wr->next) {
		if (wr->num_sge < 1 || wr->num_sge > 4 || wr->sg_list[0].length < FV_GRH_BYTES) {
			*bad = wr;
			return EINVAL;
		}
		memcpy(sg[n], wr->sg_list, (size_t)wr->num_sge * sizeof(sg[n][0]));
		sg[n][0].addr += FV_GRH_BYTES;
		sg[n][0].length -= FV_GRH_BYTES;
		fw[n] = (struct falcon_recv_wr){ .wr_id = wr->wr_id, .sg_list = sg[n],
						 .num_sge = wr->num_sge };
		if (n)
			fw[n - 1].next = &fw[n];
		src[n++] = wr;
		if (n == BATCH || !wr->next) {
			if ((rc = falcon_post_recv(q->fq, fw, &fbad))) {
				*bad = src[fbad ? fbad - fw : 0];
				return fv_errno(rc);
			}
			n = 0;
		}
	}
	return 0;
}

static int post_recv_locked(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct fv_qp *q = (struct fv_qp *)qp;
	int rc;

	if (qp->state == IBV_QPS_RESET || qp->srq) {
		*bad = wr;
		return EINVAL;
	}
	if (qp->qp_type == IBV_QPT_UD)
		return post_recv_ud(q, wr, bad);
	rc = falcon_post_recv(q->fq, (struct falcon_recv_wr *)wr, (struct falcon_recv_wr **)bad);
	return rc ? fv_errno(rc) : 0;
}

/* Verbs lets several threads post on one QP (providers lock each queue); falcon's rings
 * want one poster: a spinlock per queue, uncontended in the usual one-thread case. */
int fv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fv_qp *q = (struct fv_qp *)qp;
	int rc;

	pthread_spin_lock(&q->sq_lock);
	rc = post_send_locked(qp, wr, bad);
	pthread_spin_unlock(&q->sq_lock);
	return rc;
}

int fv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct fv_qp *q = (struct fv_qp *)qp;
	int rc;

	pthread_spin_lock(&q->rq_lock);
	rc = post_recv_locked(qp, wr, bad);
	pthread_spin_unlock(&q->rq_lock);
	return rc;
}

/* ---- completions ---- */

/* A falcon completion as the program's: 1, or 0 when it is not to be seen (a successful
 * unsignaled send WR, or one of a QP destroyed since). */
static int wc_of(struct fv_context *c, const struct falcon_wc *f, struct ibv_wc *w)
{
	struct fv_qp *q = fv_qp_find(c, f->qp_num);

	memset(w, 0, sizeof(*w));
	w->wr_id = f->wr_id;
	if (!(f->opcode & FALCON_WC_RECV)) {
		struct fv_swr *s;

		if (!q)
			return 0;
		s = &q->swr[f->wr_id & (q->nswr - 1)];
		s->busy = 0;
		if (!s->signaled && f->status == FALCON_WC_SUCCESS)
			return 0;
		w->wr_id = s->wr_id;
	}
	w->status = (enum ibv_wc_status)f->status;
	w->opcode = (enum ibv_wc_opcode)f->opcode;
	if (f->opcode == FALCON_WC_MASKED_COMP_SWAP)
		w->opcode = IBV_WC_COMP_SWAP;
	if (f->opcode == FALCON_WC_MASKED_FETCH_ADD)
		w->opcode = IBV_WC_FETCH_ADD;
	w->vendor_err = f->vendor_err;
	w->byte_len = f->byte_len;
	w->qp_num = f->qp_num;
	w->src_qp = f->src_qp;
	w->wc_flags = f->wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV);
	if (f->wc_flags & FALCON_WC_WITH_IMM)
		w->imm_data = htobe32(f->imm_data);
	else if (f->wc_flags & FALCON_WC_WITH_INV)
		w->invalidated_rkey = f->invalidated_rkey;
	w->slid = (uint16_t)f->src_id;
	if ((f->opcode & FALCON_WC_RECV) && q && q->qp.qp_type == IBV_QPT_UD &&
	    f->status == FALCON_WC_SUCCESS) {
		w->byte_len += FV_GRH_BYTES;
		w->wc_flags |= IBV_WC_GRH;
	}
	return 1;
}

int fv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fv_cq *q = (struct fv_cq *)cq;
	struct fv_context *c = fv_ctx(cq->context);
	struct falcon_wc fw[BATCH];
	int got = 0;

	pthread_spin_lock(&q->lock);
	while (got < n) {
		int want = n - got < (int)BATCH ? n - got : (int)BATCH;
		int r = falcon_poll_cq(q->fcq, want, fw);

		if (r < 0) {
			pthread_spin_unlock(&q->lock);
			return got ? got : r;
		}
		for (int i = 0; i < r; i++)
			got += wc_of(c, &fw[i], &wc[got]);
		if (r < want)
			break;
	}
	pthread_spin_unlock(&q->lock);
	/* A verbs program spins on an empty CQ without giving the CPU away; falcond, which
	 * has to make the completion, may be waiting for that very CPU (falcon's own
	 * clients yield while they spin, falcon_wait_cq): an empty poll yields it. */
	if (!got)
		sched_yield();
	return got;
}
