/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma_ring.c - send, receive and completion queues in caller memory (falcon/queue.h).
 * See rdma.h ("rings in caller memory").
 *
 * Everything in a ring is input from another process. At attach the header is checked
 * once (fc_ring_check) and its size kept here; afterwards the engine reads only the other
 * side's index (acquire) and the entries, and writes only its own index (release), which
 * it keeps in its own memory too, and, on a CQ ring that overflows, the producer's status
 * word (rdma_queue.c), so a peer scribbling on the header changes nothing but what it
 * may: its own index. A producer index more than a ring ahead stops the engine
 * from reading that QP's rings and takes the QP to the error state. Each WR is read from
 * its slot once, into the engine's own copy (a peer may rewrite the slot at any time:
 * what is validated must be what is used), and then goes through the same checks as
 * fc_rdma_post_send / fc_rdma_post_recv; a WR they refuse completes in error
 * (FC_WC_LOC_QP_OP_ERR, in SQ order) and the ring moves on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "falcon/queue.h"
#include "rdma_priv.h"

size_t fc_rdma_ring_bytes(enum fc_ring_kind kind, uint32_t entries)
{
	return fc_ring_bytes(kind, entries);
}

int fc_rdma_ring_init(void *mem, size_t bytes, enum fc_ring_kind kind, uint32_t entries)
{
	return fc_ring_init(mem, bytes, kind, entries);
}

static void *entry_at(void *ring, uint32_t mask, uint32_t index, uint32_t size)
{
	return (uint8_t *)ring + sizeof(struct fc_ring_hdr) + (size_t)(index & mask) * size;
}

/* The other side's index, read with acquire: entries before it are published. */
static uint32_t load_idx(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void store_idx(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

int fc_rdma_cq_attach_ring(struct fc_rdma *d, uint32_t cqn, void *ring, size_t bytes)
{
	struct cq *cq = cq_get(d, cqn);
	struct fc_ring_hdr *h = ring;

	if (!cq)
		return -ENOENT;
	if (fc_ring_check(ring, bytes, FC_RING_CQ) || cq->uring)
		return -EINVAL;
	if (cq->count || cq->error)
		return -EBUSY;
	cq->uring = ring;
	cq->umask = h->entries - 1;
	cq->uprod = h->prod;
	return 0;
}

/* Write wc into cq's ring and publish it; nonzero: the ring is full (or its consumer
 * index is impossible), a CQ overflow. */
int rdma_cq_ring_push(struct fc_rdma *d, struct cq *cq, const struct fc_rdma_wc *wc)
{
	struct fc_ring_hdr *h = cq->uring;
	struct fc_ring_cqe *e;
	uint32_t cons = load_idx(&h->cons);

	(void)d;
	if (cq->uprod - cons > cq->umask)
		return 1; /* full: used == entries, or a consumer ahead of us */
	e = entry_at(cq->uring, cq->umask, cq->uprod, sizeof(*e));
	*e = (struct fc_ring_cqe){
		.wr_id = wc->wr_id, .status = wc->status, .opcode = wc->opcode,
		.flags = wc->flags, .byte_len = wc->byte_len, .imm_data = wc->imm_data,
		.invalidated_rkey = wc->invalidated_rkey, .qp_num = wc->qp_num,
		.src_qp = wc->src_qp, .vendor_err = wc->vendor_err, .src_id = wc->src_id,
	};
	store_idx(&h->prod, ++cq->uprod);
	return 0;
}

int fc_rdma_qp_attach_rings(struct fc_rdma *d, uint32_t qpn, void *sq, size_t sq_bytes,
			    void *rq, size_t rq_bytes)
{
	struct qp *q = qp_get(d, qpn);

	if (!q)
		return -ENOENT;
	if ((!sq && !rq) || q->usq || q->urq)
		return -EINVAL;
	if (sq && (!q->sq || fc_ring_check(sq, sq_bytes, FC_RING_SQ)))
		return -EINVAL;
	if (rq && (!q->rq.depth || fc_ring_check(rq, rq_bytes, FC_RING_RQ)))
		return -EINVAL;
	if (sq) {
		q->usq = sq;
		q->usq_mask = ((struct fc_ring_hdr *)sq)->entries - 1;
		q->usq_cons = ((struct fc_ring_hdr *)sq)->cons;
	}
	if (rq) {
		q->urq = rq;
		q->urq_mask = ((struct fc_ring_hdr *)rq)->entries - 1;
		q->urq_cons = ((struct fc_ring_hdr *)rq)->cons;
	}
	q->ubroken = 0;
	return 0;
}

/* A WR of the ring the post checks refused with err: it completes in error, in SQ order:
 * LOC_LEN_ERR for a message above the limit (-EMSGSIZE, as verbs), else LOC_QP_OP_ERR. */
static void sq_fail_wr(struct fc_rdma *d, struct qp *q, uint64_t wr_id, uint8_t opcode,
		       int err)
{
	struct swqe *w = sq_at(q, q->sq_tail);

	memset(&w->wr, 0, sizeof(w->wr));
	w->wr.wr_id = wr_id;
	w->wr.opcode = opcode;
	w->wr.sgl = w->sge;
	w->seq = q->sq_tail++;
	w->c = NULL; /* holds no connection */
	w->dqp = w->qkey = 0;
	w->nseg = w->issued = w->outstanding = 0;
	w->err_seg = -1;
	w->status = FC_WC_SUCCESS;
	w->vendor = 0;
	w->byte_len = 0;
	w->state = SW_POSTED;
	d->cnt.ring_bad_wr++;
	rdma_wr_fail(q, w, 0, q->state == FC_RDMA_QPS_ERR ? FC_WC_WR_FLUSH_ERR :
			      err == -EMSGSIZE ? FC_WC_LOC_LEN_ERR : FC_WC_LOC_QP_OP_ERR, 0);
	rdma_wr_finish(d, q, w);
}

/* The producer index of a ring, or -1 when it is more than a ring ahead of ours. */
static int64_t ring_avail(void *ring, uint32_t mask, uint32_t cons)
{
	uint32_t n = load_idx(&((struct fc_ring_hdr *)ring)->prod) - cons;

	return n > mask + 1 ? -1 : (int64_t)n;
}

static int ring_broken(struct fc_rdma *d, struct qp *q)
{
	q->ubroken = 1;
	d->cnt.ring_broken++;
	rdma_qp_to_err(q, d);
	return -EPROTO;
}

/* Send WRs: while the engine's SQ has room. */
static int take_sq(struct fc_rdma *d, uint32_t qpn, struct qp *q, uint64_t now_ns)
{
	struct fc_ring_hdr *h = q->usq;
	int64_t avail = ring_avail(q->usq, q->usq_mask, q->usq_cons);
	int n = 0;

	if (avail < 0)
		return ring_broken(d, q);
	for (; avail > 0 && q->sq_tail - q->sq_head < q->sq_depth; avail--, n++) {
		const volatile struct fc_ring_send_wr *e =
			entry_at(q->usq, q->usq_mask, q->usq_cons, sizeof(*e));
		struct fc_sge sge[FC_RING_SGE_MAX];
		struct fc_rdma_send_wr wr = {
			.wr_id = e->wr_id, .opcode = e->opcode, .flags = e->flags,
			.num_sge = e->num_sge, .sgl = sge, .remote_addr = e->remote_addr,
			.rkey = e->rkey, .compare_add = e->compare_add, .swap = e->swap,
			.compare_add_mask = e->compare_add_mask, .swap_mask = e->swap_mask,
			.ah = e->ah, .remote_qpn = e->remote_qpn, .remote_qkey = e->remote_qkey,
		};
		int rc = -EINVAL;

		if (q->type == FC_RDMA_QPT_XRC_INI) { /* falcon/queue.h: the field is shared */
			wr.xrc_remote_srq = wr.ah;
			wr.ah = 0;
		}
		if (wr.opcode == FC_RDMA_WR_SEND_INV)
			wr.inv_rkey = e->imm;
		else
			wr.imm = e->imm;
		if (wr.num_sge <= FC_RING_SGE_MAX) {
			for (uint32_t i = 0; i < wr.num_sge; i++)
				sge[i] = (struct fc_sge){ .addr = e->sgl[i].addr,
							  .len = e->sgl[i].len,
							  .lkey = e->sgl[i].lkey };
			rc = fc_rdma_post_send(d, qpn, &wr, now_ns);
		}
		if (rc == -EAGAIN)
			break; /* cannot happen: room was checked */
		if (rc)
			sq_fail_wr(d, q, wr.wr_id, wr.opcode, rc);
		store_idx(&h->cons, ++q->usq_cons);
		if (!qp_get(d, qpn) || q->ubroken)
			break;
	}
	return n;
}

/* A ring receive entry into the engine's WR form, read once (sge: FC_RING_SGE_MAX room).
 * -EINVAL when it names more SGEs than a ring entry holds. */
static int ring_recv_wr(const volatile struct fc_ring_recv_wr *e, struct fc_sge *sge,
			struct fc_rdma_recv_wr *wr)
{
	*wr = (struct fc_rdma_recv_wr){ .wr_id = e->wr_id, .num_sge = e->num_sge, .sgl = sge };
	if (wr->num_sge > FC_RING_SGE_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < wr->num_sge; i++)
		sge[i] = (struct fc_sge){ .addr = e->sgl[i].addr, .len = e->sgl[i].len,
					  .lkey = e->sgl[i].lkey };
	return 0;
}

/* Receive WRs: while the engine's RQ has room. */
static int take_rq(struct fc_rdma *d, uint32_t qpn, struct qp *q)
{
	struct fc_ring_hdr *h = q->urq;
	int64_t avail = ring_avail(q->urq, q->urq_mask, q->urq_cons);
	int n = 0;

	if (avail < 0)
		return ring_broken(d, q);
	for (; avail > 0 && q->rq.tail - q->rq.head < q->rq.depth; avail--, n++) {
		const volatile struct fc_ring_recv_wr *e =
			entry_at(q->urq, q->urq_mask, q->urq_cons, sizeof(*e));
		struct fc_sge sge[FC_RING_SGE_MAX];
		struct fc_rdma_recv_wr wr;
		int rc = ring_recv_wr(e, sge, &wr);

		if (!rc)
			rc = fc_rdma_post_recv(d, qpn, &wr);
		if (rc == -EAGAIN)
			break;
		if (rc) {
			struct fc_rdma_wc wc = { .wr_id = wr.wr_id, .opcode = FC_RDMA_WC_RECV,
						 .status = FC_WC_LOC_QP_OP_ERR, .qp_num = qpn };

			d->cnt.ring_bad_wr++;
			rdma_cq_push(d, q->recv_cq, &wc, q);
		}
		store_idx(&h->cons, ++q->urq_cons);
		if (!qp_get(d, qpn) || q->ubroken)
			break;
	}
	return n;
}

int fc_rdma_qp_doorbell(struct fc_rdma *d, uint32_t qpn, uint64_t now_ns)
{
	struct qp *q = qp_get(d, qpn);
	int n = 0, rc;

	if (!q)
		return -ENOENT;
	if (!q->usq && !q->urq)
		return -EINVAL;
	if (q->ubroken)
		return -EPROTO;
	set_now(d, now_ns);
	/* what the state does not take yet waits in the ring (rdma.h) */
	if (q->urq && q->state != FC_RDMA_QPS_RESET) {
		/* receives first: a SEND of this batch may be answered by them */
		rc = take_rq(d, qpn, q);
		if (rc < 0)
			return rc;
		n += rc;
	}
	if (q->usq && qp_get(d, qpn) == q && !q->ubroken &&
	    (q->state == FC_RDMA_QPS_RTS || q->state == FC_RDMA_QPS_ERR)) {
		rc = take_sq(d, qpn, q, now_ns);
		if (rc < 0)
			return rc;
		n += rc;
	}
	return n;
}

int fc_rdma_qp_ring_pending(const struct fc_rdma *d, uint32_t qpn)
{
	const struct qp *q = qp_get(d, qpn);

	if (!q || q->ubroken)
		return 0;
	return (q->usq && load_idx(&((struct fc_ring_hdr *)q->usq)->prod) != q->usq_cons) ||
	       (q->urq && load_idx(&((struct fc_ring_hdr *)q->urq)->prod) != q->urq_cons);
}

int fc_rdma_srq_attach_ring(struct fc_rdma *d, uint32_t srqn, void *ring, size_t bytes)
{
	struct srq *s = srq_get(d, srqn);

	if (!s)
		return -ENOENT;
	if (s->uring || fc_ring_check(ring, bytes, FC_RING_RQ))
		return -EINVAL;
	s->uring = ring;
	s->umask = ((struct fc_ring_hdr *)ring)->entries - 1;
	s->ucons = ((struct fc_ring_hdr *)ring)->cons;
	s->ubroken = 0;
	return 0;
}

int fc_rdma_srq_doorbell(struct fc_rdma *d, uint32_t srqn)
{
	struct srq *s = srq_get(d, srqn);
	struct fc_ring_hdr *h;
	int64_t avail;
	int n = 0;

	if (!s)
		return -ENOENT;
	if (!s->uring)
		return -EINVAL;
	if (s->ubroken)
		return -EPROTO;
	h = s->uring;
	avail = ring_avail(s->uring, s->umask, s->ucons);
	if (avail < 0) {
		s->ubroken = 1;
		d->cnt.ring_broken++;
		return -EPROTO;
	}
	for (; avail > 0 && s->rq.tail - s->rq.head < s->rq.depth; avail--, n++) {
		const volatile struct fc_ring_recv_wr *e =
			entry_at(s->uring, s->umask, s->ucons, sizeof(*e));
		struct fc_sge sge[FC_RING_SGE_MAX];
		struct fc_rdma_recv_wr wr;
		int rc = ring_recv_wr(e, sge, &wr);

		if (!rc)
			rc = rdma_rq_post(&s->rq, &wr);
		if (rc == -EAGAIN)
			break; /* cannot happen: room was checked */
		if (rc)
			d->cnt.ring_bad_wr++;
		store_idx(&h->cons, ++s->ucons);
	}
	return n;
}

void rdma_ring_refill(struct fc_rdma *d, struct qp *q, struct srq *s)
{
	if (s) {
		if (s->uring && !s->ubroken)
			fc_rdma_srq_doorbell(d, s->num);
	} else if (q->urq && !q->ubroken && q->state != FC_RDMA_QPS_RESET) {
		take_rq(d, q->num, q);
	}
}
