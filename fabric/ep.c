/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric/ep.c - endpoints: FI_EP_RDM over one RC QP per peer (set up on first use, see
 * ffi.h), FI_EP_DGRAM over the endpoint's UD QP; FI_MSG and FI_TAGGED with the matching
 * and the unexpected-message queue; the progress that turns falcon completions into
 * libfabric ones.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffi.h"

#define WRID(kind, idx) (((uint64_t)(kind) << 32) | (uint32_t)(idx))
#define WRID_KIND(id) ((uint32_t)((id) >> 32))
#define WRID_IDX(id) ((uint32_t)(id))

/* ---- tx operations and slots ---- */

uint8_t *ffi_op_slot(struct ffi_ep *ep, const struct ffi_op *op)
{
	return ep->tx_slots + (size_t)op->idx * FFI_SLOT_BYTES;
}

/* A free operation for the application (FFI_CTRL_RESERVE kept for REQ / REP), or NULL. */
struct ffi_op *ffi_op_get(struct ffi_ep *ep)
{
	struct ffi_op *op;

	if (ep->ops_free <= FFI_CTRL_RESERVE) {
		ffi_ep_progress(ep);
		if (ep->ops_free <= FFI_CTRL_RESERVE)
			return NULL;
	}
	op = TAILQ_FIRST(&ep->free_ops);
	TAILQ_REMOVE(&ep->free_ops, op, link);
	ep->ops_free--;
	op->in_use = true;
	op->result = NULL;
	op->result_len = 0;
	op->peer = NULL;
	op->comp = false;
	op->rsend = -1;
	op->rrx = NULL;
	op->rjob = NULL;
	memset(&op->wr, 0, sizeof(op->wr));
	return op;
}

struct ffi_op *ffi_op_get_any(struct ffi_ep *ep)
{
	struct ffi_op *op = TAILQ_FIRST(&ep->free_ops);

	if (!op)
		return NULL;
	TAILQ_REMOVE(&ep->free_ops, op, link);
	ep->ops_free--;
	op->in_use = true;
	op->peer = NULL;
	op->comp = false;
	op->result = NULL;
	op->rsend = -1;
	op->rrx = NULL;
	op->rjob = NULL;
	memset(&op->wr, 0, sizeof(op->wr));
	return op;
}

void ffi_op_put(struct ffi_ep *ep, struct ffi_op *op)
{
	op->in_use = false;
	TAILQ_INSERT_TAIL(&ep->free_ops, op, link);
	ep->ops_free++;
}

/* ---- rendezvous sends waiting for their FIN ---- */

struct ffi_rsend *ffi_rsend_get(struct ffi_ep *ep)
{
	struct ffi_rsend *rs;

	if (!ep->nrsend_free)
		return NULL;
	rs = &ep->rsends[ep->rsend_free[--ep->nrsend_free]];
	rs->in_use = true;
	return rs;
}

void ffi_rsend_put(struct ffi_ep *ep, struct ffi_rsend *rs)
{
	if (rs->mr)
		falcon_dereg_mr(rs->mr);
	rs->mr = NULL;
	rs->in_use = false;
	rs->atomic = false;
	rs->result = NULL;
	ep->rsend_free[ep->nrsend_free++] = (uint32_t)(rs - ep->rsends);
}

/* The rendezvous send of op's announcement, while it still waits (NULL: it ended). */
static struct ffi_rsend *op_rsend(struct ffi_ep *ep, const struct ffi_op *op)
{
	struct ffi_rsend *rs;

	if (op->rsend < 0)
		return NULL;
	rs = &ep->rsends[op->rsend];
	return rs->in_use && rs->seq == op->seq ? rs : NULL;
}

static void op_fail(struct ffi_ep *ep, struct ffi_op *op, int err, int prov_errno)
{
	struct ffi_rsend *rs = op_rsend(ep, op);
	struct ffi_cqe e = { .e = { .op_context = op->context, .flags = op->cq_flags },
			     .src = FI_ADDR_NOTAVAIL, .err = err, .prov_errno = prov_errno };

	if (op->rsend >= 0 && !rs) {
		ffi_op_put(ep, op); /* its send completed at the FIN already */
		return;
	}
	if (rs)
		ffi_rsend_put(ep, rs);
	if (op->kind != FFI_K_CTRL) {
		ffi_cq_push(ep->tx_cq, &e);
		ffi_count(ep, op->cq_flags, true);
	}
	ffi_op_put(ep, op);
}

/* ---- receive slots ---- */

static int post_slot(struct ffi_ep *ep, uint8_t kind, uint32_t idx)
{
	struct falcon_sge g;
	struct falcon_recv_wr wr = { .sg_list = &g, .num_sge = 1 }, *bad;

	wr.wr_id = WRID(kind, idx);
	g.lkey = ep->pool_mr->lkey;
	if (kind == FFI_K_RX) {
		g.addr = (uint64_t)(uintptr_t)(ep->rx_slots + (size_t)idx * FFI_SLOT_BYTES);
		g.length = FFI_SLOT_BYTES;
		return falcon_post_srq_recv(ep->srq, &wr, &bad);
	}
	g.addr = (uint64_t)(uintptr_t)(ep->ud_slots + idx * ffi_ud_mtu(&ep->dom->dev));
	g.length = (uint32_t)ffi_ud_mtu(&ep->dom->dev);
	return falcon_post_recv(ep->ud, &wr, &bad);
}

static void repost(struct ffi_ep *ep, uint8_t kind, uint32_t idx)
{
	int r = post_slot(ep, kind, idx);

	if (r)
		FFI_WARN(FI_LOG_EP_DATA, "reposting a receive slot: %s\n", falcon_strerror(r));
}

/* ---- peers (RDM) ---- */

static struct ffi_peer *peer_by_addr(struct ffi_ep *ep, const struct ffi_addr *a)
{
	struct ffi_peer *p;

	LIST_FOREACH(p, &ep->peers, link)
		if (!ffi_addr_cmp(&p->addr, a))
			return p;
	return NULL;
}

static struct ffi_peer *peer_by_qpn(struct ffi_ep *ep, uint32_t qpn)
{
	struct ffi_peer *p;

	LIST_FOREACH(p, &ep->peers, link)
		if ((p->qp && p->qp->qp_num == qpn) || (p->qp2 && p->qp2->qp_num == qpn))
			return p;
	return NULL;
}

/* The peer's fi_addr: cached while its AV entry stays, looked up again when the entry
 * went (fi_av_remove) or was not there yet (a peer that spoke first: inserted later). */
static fi_addr_t peer_fa(struct ffi_ep *ep, struct ffi_peer *p)
{
	const struct ffi_av_entry *e = p->fa == FI_ADDR_NOTAVAIL ? NULL : ffi_av_get(ep->av, p->fa);

	if (!e || ffi_addr_cmp(&e->addr, &p->addr))
		p->fa = ffi_av_find(ep->av, &p->addr);
	return p->fa;
}

/* The source of a queued message: a sender that was not in the AV when the message came
 * may be now (a directed receive from it must match; issue 25's osu_allreduce hang). */
static fi_addr_t unexp_src(struct ffi_ep *ep, struct ffi_unexp *u)
{
	if (u->peer)
		u->src = peer_fa(ep, u->peer);
	return u->src;
}

static void peer_free(struct ffi_ep *ep, struct ffi_peer *p, int err)
{
	struct ffi_op *op;

	while ((op = TAILQ_FIRST(&p->pending))) {
		TAILQ_REMOVE(&p->pending, op, link);
		op_fail(ep, op, err, 0);
	}
	if (p->qp)
		falcon_destroy_qp(p->qp);
	if (p->qp2)
		falcon_destroy_qp(p->qp2);
	LIST_REMOVE(p, link);
	ep->npeers--;
	free(p);
}

/* An RC QP of the endpoint in INIT: NULL and errno. */
static struct falcon_qp *rc_qp_new(struct ffi_ep *ep)
{
	struct falcon_qp_init_attr qa = {
		.size = sizeof(qa), .qp_type = FALCON_QPT_RC, .send_cq = ep->fcq,
		.recv_cq = ep->fcq, .srq = ep->srq, .max_send_wr = FFI_TX_SLOTS,
		.err_mode = FALCON_ERR_CIE, /* an op in error fails alone: RDM goes on */
	};
	struct falcon_qp_attr init = { .size = sizeof(init), .qp_state = FALCON_QPS_INIT };
	struct falcon_qp *qp = falcon_create_qp(ep->dom->pd, &qa);

	if (qp && falcon_modify_qp(qp, &init)) {
		int e = errno;

		falcon_destroy_qp(qp);
		errno = e;
		return NULL;
	}
	return qp;
}

/* A peer with an RC QP in INIT. NULL and errno. */
static struct ffi_peer *peer_new(struct ffi_ep *ep, const struct ffi_addr *a)
{
	struct ffi_peer *p;

	if (ep->npeers >= FFI_PEERS_MAX) {
		errno = ENOSPC;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->addr = *a;
	p->fa = FI_ADDR_NOTAVAIL;
	TAILQ_INIT(&p->pending);
	p->ah = ffi_ah_get(ep->dom, a);
	if (!p->ah)
		goto fail;
	p->qp = rc_qp_new(ep);
	if (!p->qp)
		goto fail;
	p->state = FFI_PEER_CONNECTING;
	p->since_ms = ffi_now_ms();
	LIST_INSERT_HEAD(&ep->peers, p, link);
	ep->npeers++;
	return p;
fail: {
	int e = errno;

	free(p);
	errno = e;
	return NULL;
}
}

int ffi_post_on(struct ffi_ep *ep, struct falcon_qp *qp, struct ffi_op *op)
{
	struct falcon_send_wr *bad;

	(void)ep;
	op->wr.wr_id = WRID(op->kind, op->idx);
	op->wr.next = NULL;
	if (op->wr.num_sge)
		op->wr.sg_list = &op->sge;
	return falcon_post_send(qp, &op->wr, &bad);
}

/* REQ or REP to the peer's UD QP: 0, -EAGAIN (no slot: rep_owed), or falcon's error. */
static int send_ctrl(struct ffi_ep *ep, struct ffi_peer *p, uint8_t what)
{
	struct ffi_op *op = ffi_op_get_any(ep);
	struct ffi_ud_hdr *h;
	int r;

	if (!op)
		return -EAGAIN;
	h = (struct ffi_ud_hdr *)ffi_op_slot(ep, op);
	memset(h, 0, sizeof(*h));
	h->h.op = what;
	h->src = ep->self;
	h->qpn = p->qp->qp_num;
	op->kind = FFI_K_CTRL;
	op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)h, sizeof(*h), ep->pool_mr->lkey };
	op->wr.num_sge = 1;
	op->wr.opcode = FALCON_WR_SEND;
	op->wr.ah = p->ah->ah;
	op->wr.remote_qpn = p->addr.qpn;
	op->wr.remote_qkey = FFI_QKEY;
	r = ffi_post_on(ep, ep->ud, op);
	if (r)
		ffi_op_put(ep, op);
	return r;
}

/* qp to RTR naming remote_qpn at a's daemon, then RTS: 0 or falcon's error. */
static int peer_connect_qp(struct falcon_qp *qp, const struct ffi_addr *a, uint32_t remote_qpn)
{
	char host[64];
	struct falcon_qp_attr rtr = { .size = sizeof(rtr), .qp_state = FALCON_QPS_RTR,
				      .dest_qp_num = remote_qpn, .dest_host = host,
				      .timeout_ms = -1 };
	struct falcon_qp_attr rts = { .size = sizeof(rts), .qp_state = FALCON_QPS_RTS };
	int r;

	ffi_addr_host(a, host, sizeof(host));
	r = falcon_modify_qp(qp, &rtr);
	if (!r)
		r = falcon_modify_qp(qp, &rts);
	if (r)
		FFI_WARN(FI_LOG_EP_CTRL, "RC QP to %s: %s\n", host, falcon_strerror(r));
	return r;
}

/* Name the peer's RC QP: RTR, RTS, then the operations that waited go out in order. */
static int peer_connect(struct ffi_ep *ep, struct ffi_peer *p, uint32_t remote_qpn)
{
	struct ffi_op *op;
	int r;

	r = peer_connect_qp(p->qp, &p->addr, remote_qpn);
	if (r)
		return r;
	p->remote_qpn = remote_qpn;
	p->state = FFI_PEER_CONNECTED;
	while ((op = TAILQ_FIRST(&p->pending))) {
		TAILQ_REMOVE(&p->pending, op, link);
		r = ffi_post_on(ep, p->qp, op);
		if (r)
			op_fail(ep, op, FI_EIO, 0);
	}
	return 0;
}

static void on_ctrl(struct ffi_ep *ep, const struct ffi_ud_hdr *h)
{
	struct ffi_peer *p = peer_by_addr(ep, &h->src);

	if (h->h.op == FFI_OP_REP) {
		if (p && p->state == FFI_PEER_CONNECTING)
			peer_connect(ep, p, h->qpn);
		return;
	}
	/* REQ */
	if (!p) {
		p = peer_new(ep, &h->src);
		if (!p) {
			ep->req_drops++;
			FFI_WARN(FI_LOG_EP_CTRL, "a connection request: %s\n", falcon_strerror(-errno));
			return;
		}
	} else if (p->state == FFI_PEER_CONNECTED) {
		if (p->remote_qpn != h->qpn)
			FFI_WARN(FI_LOG_EP_CTRL, "a second connection request from a peer (QP %u, "
				 "connected to %u): ignored\n", h->qpn, p->remote_qpn);
		return;
	} else if (ffi_addr_cmp(&h->src, &ep->self) > 0) {
		return; /* crossing REQs: ours (the lower address) wins; the peer answers it */
	}
	if (peer_connect(ep, p, h->qpn))
		return;
	if (send_ctrl(ep, p, FFI_OP_REP))
		p->rep_owed = true;
}

/* The peer for an operation to fa, connecting on first use: NULL and errno. */
struct ffi_peer *ffi_peer_for(struct ffi_ep *ep, fi_addr_t fa)
{
	const struct ffi_av_entry *e = ffi_av_get(ep->av, fa);
	struct ffi_peer *p;
	int r;

	if (!e) {
		errno = EINVAL;
		return NULL;
	}
	p = peer_by_addr(ep, &e->addr);
	if (p)
		return p;
	p = peer_new(ep, &e->addr);
	if (!p)
		return NULL;
	p->fa = fa;
	if (!ffi_addr_cmp(&e->addr, &ep->self)) {
		/* the endpoint itself (an MPI rank's one-sided access to its own window
		 * goes this way): a second RC QP as the target of the first, both on our
		 * daemon, which executes the operations as for any peer (atomics stay
		 * atomic against the other peers'). No REQ / REP: both QPs are ours. */
		p->qp2 = rc_qp_new(ep);
		if (!p->qp2)
			r = -errno;
		else if (!(r = peer_connect_qp(p->qp2, &p->addr, p->qp->qp_num)))
			r = peer_connect(ep, p, p->qp2->qp_num);
		if (r) {
			peer_free(ep, p, FI_EIO);
			errno = r < 0 ? -r : EIO;
			return NULL;
		}
		return p;
	}
	r = send_ctrl(ep, p, FFI_OP_REQ);
	if (r) {
		peer_free(ep, p, FI_EIO);
		errno = -r;
		return NULL;
	}
	return p;
}

/* Send op to dest: at once, or after the connection is set up (RDM). 0 or -FI_E*; on
 * error op is still the caller's. */
ssize_t ffi_op_submit(struct ffi_ep *ep, struct ffi_op *op, fi_addr_t dest)
{
	struct ffi_peer *p;
	int r;

	if (ep->type == FI_EP_DGRAM) {
		const struct ffi_av_entry *e = ffi_av_get(ep->av, dest);
		struct ffi_ah *ah;

		if (!e)
			return -FI_EINVAL;
		ah = ffi_av_ah(ep->av, dest);
		if (!ah)
			return errno == EINVAL ? -FI_EINVAL : -FI_EHOSTUNREACH;
		op->wr.ah = ah->ah;
		op->wr.remote_qpn = e->addr.qpn;
		op->wr.remote_qkey = FFI_QKEY;
		r = ffi_post_on(ep, ep->ud, op);
		return r == -ENOMEM ? -FI_EAGAIN : r;
	}
	p = ffi_peer_for(ep, dest);
	if (!p)
		return errno == EAGAIN ? -FI_EAGAIN : -errno;
	op->peer = p;
	if (p->state != FFI_PEER_CONNECTED) {
		op->t0_ms = ffi_now_ms();
		TAILQ_INSERT_TAIL(&p->pending, op, link);
		return 0;
	}
	r = ffi_post_on(ep, p->qp, op);
	return r == -ENOMEM ? -FI_EAGAIN : r;
}

/* ---- matching ---- */

static bool rx_matches(const struct ffi_ep *ep, const struct ffi_rx *rx, const struct ffi_hdr *h,
		       fi_addr_t src)
{
	if ((ep->caps & FI_DIRECTED_RECV) && rx->src != FI_ADDR_UNSPEC && rx->src != src)
		return false;
	if (h->op == FFI_OP_TAGGED)
		return ((h->tag ^ rx->tag) & ~rx->ignore) == 0;
	return true;
}

static size_t copy_to_iov(const struct iovec *iov, size_t count, const uint8_t *data, size_t len)
{
	size_t done = 0;

	for (size_t i = 0; i < count && done < len; i++) {
		size_t n = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;

		if (!n)
			continue; /* an empty iov may have no buffer */
		memcpy(iov[i].iov_base, data + done, n);
		done += n;
	}
	return done;
}

/* Complete rx with the message (h, data, len) from src. */
static void rx_complete(struct ffi_ep *ep, void *context, const struct iovec *iov, size_t count,
			size_t cap, uint64_t rflags, const struct ffi_hdr *h, const uint8_t *data,
			size_t len, fi_addr_t src)
{
	struct ffi_cqe e = { .src = src };
	size_t n = copy_to_iov(iov, count, data, len);

	e.e.op_context = context;
	e.e.flags = FI_RECV | (h->op == FFI_OP_TAGGED ? FI_TAGGED : FI_MSG) |
		    (h->flags & FFI_HF_DATA ? FI_REMOTE_CQ_DATA : 0) | (rflags & FI_MULTI_RECV);
	e.e.len = n;
	e.e.buf = count ? iov[0].iov_base : NULL;
	e.e.data = h->flags & FFI_HF_DATA ? h->data : 0;
	e.e.tag = h->op == FFI_OP_TAGGED ? h->tag : 0;
	if (len > cap) {
		e.err = FI_ETRUNC;
		e.olen = len - cap;
	}
	ffi_count(ep, FI_RECV, e.err != 0);
	if (!e.err && (ep->rx_flags & FI_SELECTIVE_COMPLETION) && !(rflags & FI_COMPLETION))
		return;
	ffi_cq_push(ep->rx_cq, &e);
}

/* ---- rendezvous (RDM messages above FFI_MAX_MSG) ----
 *
 * The sender registers the message (REMOTE_READ) and sends its address, length and key
 * (struct ffi_rndv) in place of the data; the receiver, once a receive matches, READs it
 * straight into the receive buffer (registered for the time of the READ) and answers FIN;
 * the sender's operation completes at the FIN. The READ is one work request: the daemon
 * segments it. Only a message above the daemon's max_msg_size (one that takes less than
 * the provider offers, ffi.h) is read in pieces of that size. */

/* The receive (context, iov, cap, rflags) matched the announcement rv: start reading. */
static void rndv_start(struct ffi_ep *ep, void *context, const struct iovec *iov, size_t count,
		       size_t cap, uint64_t rflags, const struct ffi_hdr *h,
		       const struct ffi_rndv *rv, fi_addr_t src, struct ffi_peer *peer)
{
	struct ffi_rrx *r = calloc(1, sizeof(*r));

	if (!r) {
		FFI_WARN(FI_LOG_EP_DATA, "rendezvous: out of memory: message dropped\n");
		return;
	}
	r->context = context;
	r->rflags = rflags;
	r->h = *h;
	r->rv = *rv;
	r->src = src;
	r->peer = peer;
	r->total = rv->len < cap ? rv->len : cap;
	if (r->total && count != 1) {
		r->err = FI_EINVAL; /* rendezvous lands in one buffer */
		r->total = 0;
	}
	if (!peer) {
		r->err = FI_EIO;
		r->total = 0;
	}
	if (r->total) {
		r->dst = iov[0].iov_base;
		r->mr = falcon_reg_mr(ep->dom->pd, r->dst, r->total, FALCON_ACCESS_LOCAL_WRITE);
		if (!r->mr) {
			r->err = FI_ENOMEM;
			r->total = 0;
		}
	}
	TAILQ_INSERT_TAIL(&ep->rrx, r, link);
}

/* Post the READs that ops allow; finish what is read: completion, FIN. */
static void rndv_pump(struct ffi_ep *ep)
{
	struct ffi_rrx *r, *next;

	for (r = TAILQ_FIRST(&ep->rrx); r; r = next) {
		next = TAILQ_NEXT(r, link);
		while (!r->err && r->next < r->total) {
			struct ffi_op *op;
			size_t wmax = ffi_wr_max(&ep->dom->dev);
			size_t n = r->total - r->next < wmax ? r->total - r->next : wmax;

			if (ep->ops_free <= FFI_CTRL_RESERVE)
				break;
			op = ffi_op_get_any(ep);
			op->kind = FFI_K_RREAD;
			op->rrx = r;
			op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)(r->dst + r->next),
						       (uint32_t)n, r->mr->lkey };
			op->wr.num_sge = 1;
			op->wr.opcode = FALCON_WR_RDMA_READ;
			op->wr.remote_addr = r->rv.addr + r->next;
			op->wr.rkey = r->rv.rkey;
			if (ffi_post_on(ep, r->peer->qp, op)) {
				ffi_op_put(ep, op);
				r->err = FI_EIO;
				break;
			}
			r->next += n;
			r->reads_out++;
		}
		if (r->reads_out || (!r->err && r->next < r->total))
			continue;
		/* everything read (or failed): the receive's completion, then FIN */
		if (!r->done) {
			struct ffi_cqe e = { .src = r->src };

			if (!ffi_cq_room(ep->rx_cq))
				continue;
			if (r->mr) {
				falcon_dereg_mr(r->mr);
				r->mr = NULL;
			}
			e.e.op_context = r->context;
			e.e.flags = FI_RECV | (r->h.op == FFI_OP_TAGGED ? FI_TAGGED : FI_MSG) |
				    (r->h.flags & FFI_HF_DATA ? FI_REMOTE_CQ_DATA : 0) |
				    (r->rflags & FI_MULTI_RECV);
			e.e.len = r->total;
			e.e.buf = r->dst;
			e.e.data = r->h.flags & FFI_HF_DATA ? r->h.data : 0;
			e.e.tag = r->h.op == FFI_OP_TAGGED ? r->h.tag : 0;
			if (r->err) {
				e.err = r->err;
				e.prov_errno = r->prov_errno;
			} else if (r->rv.len > r->total) {
				e.err = FI_ETRUNC;
				e.olen = r->rv.len - r->total;
			}
			if (e.err || !(ep->rx_flags & FI_SELECTIVE_COMPLETION) ||
			    (r->rflags & FI_COMPLETION))
				ffi_cq_push(ep->rx_cq, &e);
			ffi_count(ep, FI_RECV, e.err != 0);
			r->done = true;
		}
		if (r->peer) {
			struct ffi_op *op = ffi_op_get_any(ep);
			struct ffi_hdr *h;

			if (!op)
				continue; /* FIN owed: next progress */
			h = (struct ffi_hdr *)ffi_op_slot(ep, op);
			memset(h, 0, sizeof(*h));
			h->op = FFI_OP_FIN;
			h->data = r->rv.token;
			h->tag = r->rv.seq;
			op->kind = FFI_K_CTRL;
			op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)h, sizeof(*h),
						       ep->pool_mr->lkey };
			op->wr.num_sge = 1;
			op->wr.opcode = FALCON_WR_SEND;
			if (ffi_post_on(ep, r->peer->qp, op))
				ffi_op_put(ep, op);
		}
		TAILQ_REMOVE(&ep->rrx, r, link);
		free(r);
	}
}

/* FIN from the receiver: the rendezvous send (op token, sequence seq) completes. */
static void rndv_fin(struct ffi_ep *ep, uint32_t token, uint64_t seq)
{
	struct ffi_rsend *rs;

	if (token >= FFI_RSEND_MAX) {
		ep->rx_drops++;
		return;
	}
	rs = &ep->rsends[token];
	if (!rs->in_use || rs->atomic || rs->seq != seq) {
		ep->rx_drops++;
		return;
	}
	if (rs->comp) {
		struct ffi_cqe e = { .e = { .op_context = rs->context, .flags = rs->cq_flags },
				     .src = FI_ADDR_NOTAVAIL };

		ffi_cq_push(ep->tx_cq, &e);
	}
	ffi_count(ep, rs->cq_flags, false);
	ffi_rsend_put(ep, rs);
}

/* A queued rendezvous message the application discards: FIN only (the sender's op
 * completes; nothing is read). */
static void rndv_discard(struct ffi_ep *ep, const struct ffi_unexp *u)
{
	struct ffi_rrx *r = calloc(1, sizeof(*r));

	if (!r)
		return;
	r->rv = u->rv;
	r->peer = u->peer;
	r->done = true;
	TAILQ_INSERT_TAIL(&ep->rrx, r, link);
}

/* FI_MULTI_RECV (fi_msg(3)): the part of rx's buffer a message of len bytes lands in
 * (into piece), and the flags of its completion: FI_MULTI_RECV when what is left after it
 * is below the endpoint's FI_OPT_MIN_MULTI_RECV, and then the buffer is released (true). */
static bool multi_take(struct ffi_ep *ep, struct ffi_rx *rx, size_t len, struct iovec *piece,
		       uint64_t *rflags)
{
	size_t left = rx->len - rx->used, take = len < left ? len : left;
	bool release;

	piece->iov_base = (uint8_t *)rx->iov[0].iov_base + rx->used;
	piece->iov_len = left;
	rx->used += take;
	release = rx->len - rx->used < ep->min_multi_recv || take < len;
	*rflags = (rx->flags & ~(uint64_t)FI_MULTI_RECV) | (release ? FI_MULTI_RECV : 0);
	return release;
}

/* A message arrived (in slot idx of kind): match it or queue it. rv: it is a rendezvous
 * announcement (data and len are not the message). */
static void deliver(struct ffi_ep *ep, const struct ffi_hdr *h, uint8_t *data, size_t len,
		    fi_addr_t src, struct ffi_peer *peer, uint8_t kind, uint32_t idx,
		    const struct ffi_rndv *rv)
{
	struct ffi_rx_list *list = h->op == FFI_OP_TAGGED ? &ep->rx_tag : &ep->rx_msg;
	struct ffi_rx *rx;
	struct ffi_unexp *u;

	TAILQ_FOREACH(rx, list, link)
		if (rx_matches(ep, rx, h, src))
			break;
	if (rx && (rx->flags & FI_MULTI_RECV)) {
		struct iovec piece;
		uint64_t rf;
		bool release = multi_take(ep, rx, rv ? rv->len : len, &piece, &rf);

		if (release) {
			TAILQ_REMOVE(list, rx, link);
			ep->rx_posted--;
		}
		if (rv)
			rndv_start(ep, rx->context, &piece, 1, piece.iov_len, rf, h, rv, src, peer);
		else
			rx_complete(ep, rx->context, &piece, 1, piece.iov_len, rf, h, data, len, src);
		if (release)
			free(rx);
		repost(ep, kind, idx);
		return;
	}
	if (rx) {
		TAILQ_REMOVE(list, rx, link);
		ep->rx_posted--;
		if (rv)
			rndv_start(ep, rx->context, rx->iov, rx->iov_count, rx->len, rx->flags, h, rv,
				   src, peer);
		else
			rx_complete(ep, rx->context, rx->iov, rx->iov_count, rx->len, rx->flags, h,
				    data, len, src);
		free(rx);
		repost(ep, kind, idx);
		return;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		goto drop;
	u->h = *h;
	u->src = src;
	u->peer = peer;
	u->len = len;
	u->slot = -1;
	if (rv) {
		u->rndv = true;
		u->rv = *rv;
		u->len = rv->len;
		u->data = NULL;
		ep->unexp_copied++;
		repost(ep, kind, idx);
	} else if (ep->unexp_copied < FFI_UNEXP_MAX && (u->data = malloc(len ? len : 1))) {
		memcpy(u->data, data, len);
		ep->unexp_copied++;
		repost(ep, kind, idx);
	} else if (ep->type == FI_EP_RDM) {
		/* keep the slot: senders wait (RNR) until a receive takes it */
		u->data = data;
		u->slot = (int)idx;
		u->slot_kind = kind;
	} else {
		free(u);
		goto drop;
	}
	TAILQ_INSERT_TAIL(&ep->unexp, u, link);
	return;
drop:
	ep->dgram_drops++;
	repost(ep, kind, idx);
}

static void unexp_free(struct ffi_ep *ep, struct ffi_unexp *u)
{
	TAILQ_REMOVE(&ep->unexp, u, link);
	if (u->rndv) {
		ep->unexp_copied--;
	} else if (u->slot >= 0) {
		repost(ep, u->slot_kind, (uint32_t)u->slot);
	} else {
		free(u->data);
		ep->unexp_copied--;
	}
	free(u);
}

/* ---- progress ---- */

static void on_tx(struct ffi_ep *ep, struct ffi_op *op, const struct falcon_wc *wc)
{
	if (op->kind == FFI_K_CTRL) {
		if (wc->status != FALCON_WC_SUCCESS)
			FFI_WARN(FI_LOG_EP_CTRL, "a connection message failed: %s\n",
				 falcon_wc_status_str(wc->status));
		ffi_op_put(ep, op);
		return;
	}
	if (op->kind == FFI_K_RCHUNK) {
		ffi_rjob_chunk_done(ep, op, wc);
		return;
	}
	if (op->kind == FFI_K_RREAD) {
		struct ffi_rrx *r = op->rrx;

		r->reads_out--;
		if (wc->status != FALCON_WC_SUCCESS && !r->err) {
			r->err = ffi_err_of_status(wc->status);
			r->prov_errno = (int)wc->status;
		}
		ffi_op_put(ep, op);
		return;
	}
	if (wc->status != FALCON_WC_SUCCESS) {
		op_fail(ep, op, ffi_err_of_status(wc->status), (int)wc->status);
		return;
	}
	if (op->rsend >= 0) {
		ffi_op_put(ep, op); /* the announcement went out: the send completes at the FIN */
		return;
	}
	if (op->kind == FFI_K_RMA) {
		ffi_rma_complete(ep, op);
		return;
	}
	if (op->comp) {
		struct ffi_cqe e = { .e = { .op_context = op->context, .flags = op->cq_flags },
				     .src = FI_ADDR_NOTAVAIL };

		ffi_cq_push(ep->tx_cq, &e);
	}
	ffi_count(ep, op->cq_flags, false);
	ffi_op_put(ep, op);
}

static void on_rx(struct ffi_ep *ep, uint32_t idx, const struct falcon_wc *wc)
{
	uint8_t *slot = ep->rx_slots + (size_t)idx * FFI_SLOT_BYTES;
	struct ffi_hdr h;
	struct ffi_peer *p;

	if (wc->status == FALCON_WC_WR_FLUSH_ERR)
		return; /* the SRQ goes away */
	if (wc->status != FALCON_WC_SUCCESS || wc->byte_len < sizeof(h)) {
		FFI_WARN(FI_LOG_EP_DATA, "a receive failed (%s, %u bytes): dropped\n",
			 falcon_wc_status_str(wc->status), wc->byte_len);
		ep->rx_drops++;
		repost(ep, FFI_K_RX, idx);
		return;
	}
	memcpy(&h, slot, sizeof(h));
	if (h.op == FFI_OP_FIN && !(wc->wc_flags & FALCON_WC_WITH_IMM)) {
		rndv_fin(ep, h.data, h.tag);
		repost(ep, FFI_K_RX, idx);
		return;
	}
	if ((h.op == FFI_OP_ATOMIC || h.op == FFI_OP_ATOMIC_RESP) &&
	    !(wc->wc_flags & FALCON_WC_WITH_IMM)) {
		if (h.op == FFI_OP_ATOMIC)
			ffi_atomic_serve(ep, peer_by_qpn(ep, wc->qp_num), &h, slot + sizeof(h),
					 wc->byte_len - sizeof(h));
		else
			ffi_atomic_answer(ep, &h, slot + sizeof(h), wc->byte_len - sizeof(h));
		repost(ep, FFI_K_RX, idx);
		return;
	}
	/* not the provider's: an unknown op, or a SEND with immediate (it sends none) */
	if ((h.op != FFI_OP_MSG && h.op != FFI_OP_TAGGED) || (wc->wc_flags & FALCON_WC_WITH_IMM)) {
		ep->rx_drops++;
		repost(ep, FFI_K_RX, idx);
		return;
	}
	p = peer_by_qpn(ep, wc->qp_num);
	if (h.flags & FFI_HF_RNDV) {
		struct ffi_rndv rv;

		if (wc->byte_len < sizeof(h) + sizeof(rv) || !p) {
			ep->rx_drops++;
			repost(ep, FFI_K_RX, idx);
			return;
		}
		memcpy(&rv, slot + sizeof(h), sizeof(rv));
		deliver(ep, &h, NULL, 0, peer_fa(ep, p), p, FFI_K_RX, idx, &rv);
		return;
	}
	deliver(ep, &h, slot + sizeof(h), wc->byte_len - sizeof(h),
		p ? peer_fa(ep, p) : FI_ADDR_NOTAVAIL, p, FFI_K_RX, idx, NULL);
}

static void on_rdma_imm(struct ffi_ep *ep, uint32_t idx, const struct falcon_wc *wc)
{
	/* fi_writedata: a WRITE with immediate consumed a receive slot; the data went
	 * straight to the target buffer, the immediate is the CQ data */
	struct ffi_peer *p = peer_by_qpn(ep, wc->qp_num);
	struct ffi_cqe e = { .src = p ? peer_fa(ep, p) : FI_ADDR_NOTAVAIL };

	e.e.flags = FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE | FI_RMA;
	e.e.len = wc->byte_len;
	e.e.data = wc->imm_data;
	ffi_cq_push(ep->rx_cq, &e);
	ffi_count(ep, FI_REMOTE_WRITE, false);
	repost(ep, FFI_K_RX, idx);
}

static void on_udrx(struct ffi_ep *ep, uint32_t idx, const struct falcon_wc *wc)
{
	uint8_t *slot = ep->ud_slots + idx * ffi_ud_mtu(&ep->dom->dev);
	struct ffi_ud_hdr h;

	if (wc->status == FALCON_WC_WR_FLUSH_ERR)
		return;
	if (wc->status != FALCON_WC_SUCCESS || wc->byte_len < sizeof(h)) {
		ep->rx_drops++;
		repost(ep, FFI_K_UDRX, idx);
		return;
	}
	memcpy(&h, slot, sizeof(h));
	if (ep->type == FI_EP_RDM && (h.h.op == FFI_OP_REQ || h.h.op == FFI_OP_REP)) {
		on_ctrl(ep, &h);
		repost(ep, FFI_K_UDRX, idx);
		return;
	}
	if (ep->type != FI_EP_DGRAM || h.h.op != FFI_OP_MSG) {
		ep->rx_drops++;
		repost(ep, FFI_K_UDRX, idx);
		return;
	}
	if (h.h.flags & FFI_HF_RNDV) {
		ep->rx_drops++;
		repost(ep, FFI_K_UDRX, idx);
		return;
	}
	deliver(ep, &h.h, slot + sizeof(h), wc->byte_len - sizeof(h), ffi_av_find(ep->av, &h.src),
		NULL, FFI_K_UDRX, idx, NULL);
}

static void check_peers(struct ffi_ep *ep)
{
	struct ffi_peer *p, *next;
	uint64_t now = 0;

	for (p = LIST_FIRST(&ep->peers); p; p = next) {
		next = LIST_NEXT(p, link);
		if (p->rep_owed && !send_ctrl(ep, p, FFI_OP_REP))
			p->rep_owed = false;
		if (p->state != FFI_PEER_CONNECTING)
			continue;
		if (!now)
			now = ffi_now_ms();
		if (now - p->since_ms < (uint64_t)ep->conn_timeout_ms)
			continue;
		/* no REP: the peer endpoint is not there; fail what waited for it */
		{
			unsigned n = 0;
			struct ffi_op *op;

			TAILQ_FOREACH(op, &p->pending, link)
				n++;
			if (ffi_cq_room(ep->tx_cq) < n)
				continue;
		}
		FFI_WARN(FI_LOG_EP_CTRL, "no answer from peer QP %u in %d ms\n", p->addr.qpn,
			 ep->conn_timeout_ms);
		peer_free(ep, p, FI_ETIMEDOUT);
	}
}

void ffi_ep_progress(struct ffi_ep *ep)
{
	struct falcon_wc wc[32];
	uint32_t room;
	int n;

	if (!ep->enabled)
		return;
	room = ffi_cq_room(ep->tx_cq);
	if (ffi_cq_room(ep->rx_cq) < room)
		room = ffi_cq_room(ep->rx_cq);
	if (room > 32)
		room = 32;
	n = room ? falcon_poll_cq(ep->fcq, (int)room, wc) : 0;
	if (n < 0)
		FFI_WARN(FI_LOG_EP_DATA, "falcon_poll_cq: %s\n", falcon_strerror(n));
	/* the work happens in falcond: an application spinning on an empty CQ gives the
	 * daemon the CPU (it matters when cores are fewer than busy processes) */
	if (n == 0)
		sched_yield();
	for (int i = 0; i < n; i++) {
		uint32_t kind = WRID_KIND(wc[i].wr_id), idx = WRID_IDX(wc[i].wr_id);

		switch (kind) {
		case FFI_K_SEND:
		case FFI_K_RMA:
		case FFI_K_CTRL:
		case FFI_K_RREAD:
		case FFI_K_RCHUNK:
			if (idx < FFI_TX_SLOTS && ep->ops[idx].in_use)
				on_tx(ep, &ep->ops[idx], &wc[i]);
			break;
		case FFI_K_RX:
			if (idx >= FFI_RX_SLOTS)
				break;
			if (wc[i].status == FALCON_WC_SUCCESS &&
			    wc[i].opcode == FALCON_WC_RECV_RDMA_WITH_IMM)
				on_rdma_imm(ep, idx, &wc[i]);
			else
				on_rx(ep, idx, &wc[i]);
			break;
		case FFI_K_UDRX:
			if (idx < FFI_UD_SLOTS)
				on_udrx(ep, idx, &wc[i]);
			break;
		default:
			break;
		}
	}
	if (ep->type == FI_EP_RDM) {
		check_peers(ep);
		if (!TAILQ_EMPTY(&ep->rrx))
			rndv_pump(ep);
		if (!TAILQ_EMPTY(&ep->rjobs))
			ffi_rjob_pump(ep);
		if (!TAILQ_EMPTY(&ep->aowed))
			ffi_atomic_pump(ep);
	}
}

/* ---- posting receives ---- */

/* count buffers at iov, each with memory where it has a length (fi_msg(3)) */
bool ffi_iov_ok(const struct iovec *iov, size_t count)
{
	if (count && !iov)
		return false;
	for (size_t i = 0; i < count; i++)
		if (iov[i].iov_len && !iov[i].iov_base)
			return false;
	return true;
}

/* A FI_MULTI_RECV buffer: the queued messages it matches go in, then it waits for more
 * unless it is released already. 0 or -FI_EAGAIN (too many receives posted). */
static ssize_t post_multi(struct ffi_ep *ep, struct ffi_rx *rx)
{
	struct ffi_unexp *u, *next;

	for (u = TAILQ_FIRST(&ep->unexp); u; u = next) {
		struct iovec piece;
		uint64_t rf;
		bool release;

		next = TAILQ_NEXT(u, link);
		if (u->claim || u->h.op != FFI_OP_MSG || !rx_matches(ep, rx, &u->h, unexp_src(ep, u)))
			continue;
		if (!ffi_cq_room(ep->rx_cq))
			break; /* the rest when the next message comes */
		release = multi_take(ep, rx, u->rndv ? u->rv.len : u->len, &piece, &rf);
		if (u->rndv)
			rndv_start(ep, rx->context, &piece, 1, piece.iov_len, rf, &u->h, &u->rv,
				   u->src, u->peer);
		else
			rx_complete(ep, rx->context, &piece, 1, piece.iov_len, rf, &u->h, u->data,
				    u->len, u->src);
		unexp_free(ep, u);
		if (release) {
			free(rx);
			return 0;
		}
	}
	if (ep->rx_posted >= FFI_RX_POSTED_MAX) {
		free(rx);
		return -FI_EAGAIN;
	}
	TAILQ_INSERT_TAIL(&ep->rx_msg, rx, link);
	ep->rx_posted++;
	return 0;
}

static ssize_t post_recv_unlocked(struct ffi_ep *ep, const struct iovec *iov, size_t count,
			fi_addr_t src,
			 uint64_t tag, uint64_t ignore, uint64_t flags, void *context, bool tagged)
{
	struct ffi_unexp *u;
	struct ffi_rx *rx;
	struct ffi_hdr probe;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (count > 4 || !ffi_iov_ok(iov, count))
		return -FI_EINVAL;
	if (tagged && !(ep->caps & FI_TAGGED))
		return -FI_EOPNOTSUPP;
	if (tagged)
		flags &= ~(uint64_t)FI_MULTI_RECV; /* untagged only (fi_msg(3)) */
	if ((flags & FI_MULTI_RECV) && (count != 1 || !(ep->caps & FI_MULTI_RECV)))
		return count != 1 ? -FI_EINVAL : -FI_EOPNOTSUPP;
	ffi_ep_progress(ep);
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return -FI_ENOMEM;
	rx->context = context;
	rx->iov_count = count;
	for (size_t i = 0; i < count; i++) {
		rx->iov[i] = iov[i];
		rx->len += iov[i].iov_len;
	}
	rx->src = (ep->caps & FI_DIRECTED_RECV) ? src : FI_ADDR_UNSPEC;
	rx->tag = tag;
	rx->ignore = ignore;
	rx->flags = flags;
	memset(&probe, 0, sizeof(probe));
	probe.op = tagged ? FFI_OP_TAGGED : FFI_OP_MSG;

	/* FI_CLAIM (without FI_PEEK): take the message this context claimed */
	if (tagged && (flags & FI_CLAIM) && !(flags & FI_PEEK)) {
		TAILQ_FOREACH(u, &ep->unexp, link)
			if (u->claim == context)
				break;
		if (!u) {
			free(rx);
			return -FI_EINVAL;
		}
		if (!ffi_cq_room(ep->rx_cq)) {
			free(rx);
			return -FI_EAGAIN;
		}
		if (!(flags & FI_DISCARD) && u->rndv)
			rndv_start(ep, context, rx->iov, count, rx->len, flags | FI_COMPLETION, &u->h,
				   &u->rv, u->src, u->peer);
		else if (!(flags & FI_DISCARD))
			rx_complete(ep, context, rx->iov, count, rx->len, flags | FI_COMPLETION, &u->h,
				    u->data, u->len, u->src);
		else {
			struct ffi_cqe e = { .e = { .op_context = context, .flags = FI_RECV | FI_TAGGED,
						    .tag = u->h.tag }, .src = u->src };

			ffi_cq_push(ep->rx_cq, &e);
			if (u->rndv)
				rndv_discard(ep, u);
		}
		unexp_free(ep, u);
		free(rx);
		return 0;
	}
	if (flags & FI_MULTI_RECV)
		return post_multi(ep, rx);
	TAILQ_FOREACH(u, &ep->unexp, link)
		if (!u->claim && (u->h.op == FFI_OP_TAGGED) == tagged &&
		    rx_matches(ep, rx, &u->h, unexp_src(ep, u)))
			break;
	if (flags & FI_PEEK) {
		struct ffi_cqe e = { .e = { .op_context = context, .flags = FI_RECV | FI_TAGGED } };

		free(rx);
		if (!ffi_cq_room(ep->rx_cq))
			return -FI_EAGAIN;
		if (!u) {
			e.err = FI_ENOMSG;
			e.src = FI_ADDR_NOTAVAIL;
		} else {
			e.e.len = u->len;
			e.e.tag = u->h.tag;
			e.e.data = u->h.flags & FFI_HF_DATA ? u->h.data : 0;
			e.e.flags |= u->h.flags & FFI_HF_DATA ? FI_REMOTE_CQ_DATA : 0;
			e.src = u->src;
			if (flags & FI_CLAIM) {
				u->claim = context;
			} else if (flags & FI_DISCARD) {
				if (u->rndv)
					rndv_discard(ep, u);
				unexp_free(ep, u);
			}
		}
		ffi_cq_push(ep->rx_cq, &e);
		return 0;
	}
	if (u) {
		if (!ffi_cq_room(ep->rx_cq)) {
			free(rx);
			return -FI_EAGAIN;
		}
		if (u->rndv)
			rndv_start(ep, context, rx->iov, count, rx->len, flags, &u->h, &u->rv, u->src,
				   u->peer);
		else
			rx_complete(ep, context, rx->iov, count, rx->len, flags, &u->h, u->data, u->len,
				    u->src);
		unexp_free(ep, u);
		free(rx);
		return 0;
	}
	if (ep->rx_posted >= FFI_RX_POSTED_MAX) {
		free(rx);
		return -FI_EAGAIN;
	}
	TAILQ_INSERT_TAIL(tagged ? &ep->rx_tag : &ep->rx_msg, rx, link);
	ep->rx_posted++;
	return 0;
}

/* post_recv under the domain's lock (FI_THREAD_SAFE) */
static ssize_t post_recv(struct ffi_ep *ep, const struct iovec *iov, size_t count, fi_addr_t src,
			 uint64_t tag, uint64_t ignore, uint64_t flags, void *context, bool tagged)
{
	struct ffi_domain *d_ = ep->dom;
	ssize_t r_;

	ffi_lock(d_);
	r_ = post_recv_unlocked(ep, iov, count, src, tag, ignore, flags, context, tagged);
	ffi_unlock(d_);
	return r_;
}

/* ---- posting sends ---- */

/* A message above FFI_MAX_MSG: announce it; the receiver READs it (see rndv_start). */
static ssize_t post_rndv(struct ffi_ep *ep, void *buf, size_t len, fi_addr_t dest, uint64_t tag,
			 uint64_t data, uint64_t flags, void *context, bool tagged)
{
	struct ffi_rsend *rs = ffi_rsend_get(ep);
	struct ffi_op *op = rs ? ffi_op_get(ep) : NULL;
	struct ffi_hdr *h;
	struct ffi_rndv *rv;
	ssize_t r;

	if (!op) {
		if (rs)
			ffi_rsend_put(ep, rs);
		return -FI_EAGAIN;
	}
	rs->mr = falcon_reg_mr(ep->dom->pd, buf, len, FALCON_ACCESS_REMOTE_READ);
	if (!rs->mr) {
		r = -errno;
		ffi_rsend_put(ep, rs);
		ffi_op_put(ep, op);
		return r;
	}
	h = (struct ffi_hdr *)ffi_op_slot(ep, op);
	memset(h, 0, sizeof(*h) + sizeof(*rv));
	h->op = tagged ? FFI_OP_TAGGED : FFI_OP_MSG;
	h->flags = FFI_HF_RNDV;
	h->tag = tag;
	if (flags & FI_REMOTE_CQ_DATA) {
		h->flags |= FFI_HF_DATA;
		h->data = (uint32_t)data;
	}
	rv = (struct ffi_rndv *)(h + 1);
	rv->addr = (uint64_t)(uintptr_t)buf;
	rv->len = len;
	rv->rkey = rs->mr->rkey;
	rv->token = (uint32_t)(rs - ep->rsends);
	rv->seq = rs->seq = op->seq = ++ep->seq;
	rs->context = op->context = context;
	rs->cq_flags = op->cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	rs->comp = ffi_tx_comp(ep, flags);
	return ffi_rsend_submit(ep, op, rs, h, sizeof(*h) + sizeof(*rv), rv->token, dest);
}

ssize_t ffi_rsend_submit(struct ffi_ep *ep, struct ffi_op *op, struct ffi_rsend *rs,
			 const void *hdr, uint32_t len, uint32_t token, fi_addr_t dest)
{
	ssize_t r;

	op->rsend = (int32_t)token;
	op->kind = FFI_K_SEND;
	op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)hdr, len, ep->pool_mr->lkey };
	op->wr.num_sge = 1;
	op->wr.opcode = FALCON_WR_SEND;
	r = ffi_op_submit(ep, op, dest);
	if (r) {
		ffi_rsend_put(ep, rs);
		ffi_op_put(ep, op);
	}
	return r;
}

static ssize_t post_send_unlocked(struct ffi_ep *ep, const struct iovec *iov, size_t count,
			fi_addr_t dest,
			 uint64_t tag, uint64_t data, uint64_t flags, void *context, bool tagged)
{
	size_t len = 0, hlen = ep->type == FI_EP_DGRAM ? sizeof(struct ffi_ud_hdr) :
							  sizeof(struct ffi_hdr);
	size_t max = ep->type == FI_EP_DGRAM ? ffi_dgram_max(&ep->dom->dev) : FFI_MAX_MSG;
	struct ffi_op *op;
	struct ffi_hdr *h;
	uint8_t *slot, *p;
	ssize_t r;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (tagged && !(ep->caps & FI_TAGGED))
		return -FI_EOPNOTSUPP;
	if ((flags & FI_REMOTE_CQ_DATA) && ep->type != FI_EP_RDM)
		return -FI_EOPNOTSUPP;
	if (count > 4 || !ffi_iov_ok(iov, count))
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++)
		len += iov[i].iov_len;
	if ((flags & FI_INJECT) && len > (ep->type == FI_EP_RDM ? FFI_INJECT_RDM : FFI_INJECT_DGRAM))
		return -FI_EMSGSIZE; /* above tx_attr->inject_size */
	if (len > max && ep->type == FI_EP_RDM && count == 1 && !(flags & FI_INJECT) &&
	    len <= ffi_msg_max(&ep->dom->dev))
		return post_rndv(ep, iov[0].iov_base, len, dest, tag, data, flags, context, tagged);
	if (len > max)
		return -FI_EMSGSIZE;
	op = ffi_op_get(ep);
	if (!op)
		return -FI_EAGAIN;
	slot = ffi_op_slot(ep, op);
	memset(slot, 0, hlen);
	h = (struct ffi_hdr *)slot;
	h->op = tagged ? FFI_OP_TAGGED : FFI_OP_MSG;
	h->tag = tag;
	if (flags & FI_REMOTE_CQ_DATA) {
		h->flags |= FFI_HF_DATA;
		h->data = (uint32_t)data;
	}
	if (ep->type == FI_EP_DGRAM)
		((struct ffi_ud_hdr *)slot)->src = ep->self;
	p = slot + hlen;
	for (size_t i = 0; i < count; i++) {
		if (!iov[i].iov_len)
			continue; /* a zero-byte message may have no buffer (MPI's) */
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	op->kind = FFI_K_SEND;
	op->context = context;
	op->cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	op->comp = ffi_tx_comp(ep, flags);
	op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)slot, (uint32_t)(hlen + len),
				       ep->pool_mr->lkey };
	op->wr.num_sge = 1;
	op->wr.opcode = FALCON_WR_SEND;
	r = ffi_op_submit(ep, op, dest);
	if (r)
		ffi_op_put(ep, op);
	return r;
}

/* post_send under the domain's lock (FI_THREAD_SAFE) */
static ssize_t post_send(struct ffi_ep *ep, const struct iovec *iov, size_t count, fi_addr_t dest,
			 uint64_t tag, uint64_t data, uint64_t flags, void *context, bool tagged)
{
	struct ffi_domain *d_ = ep->dom;
	ssize_t r_;

	ffi_lock(d_);
	r_ = post_send_unlocked(ep, iov, count, dest, tag, data, flags, context, tagged);
	ffi_unlock(d_);
	return r_;
}

/* ---- fi_ops_msg ---- */

#define EP(fep) ((struct ffi_ep *)(fep))

static ssize_t msg_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			void *context)
{
	struct iovec iov = { buf, len };

	(void)desc;
	return post_recv(EP(fep), &iov, 1, src, 0, 0, EP(fep)->rx_op_flags, context, false);
}

static ssize_t msg_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, void *context)
{
	(void)desc;
	return post_recv(EP(fep), iov, count, src, 0, 0, EP(fep)->rx_op_flags, context, false);
}

static ssize_t msg_recvmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_recv(EP(fep), msg->msg_iov, msg->iov_count, msg->addr, 0, 0, flags,
			 msg->context, false);
}

static ssize_t msg_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
			void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)desc;
	return post_send(EP(fep), &iov, 1, dest, 0, 0, EP(fep)->tx_op_flags, context, false);
}

static ssize_t msg_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t dest, void *context)
{
	(void)desc;
	return post_send(EP(fep), iov, count, dest, 0, 0, EP(fep)->tx_op_flags, context, false);
}

static ssize_t msg_sendmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_send(EP(fep), msg->msg_iov, msg->iov_count, msg->addr, 0, msg->data,
			 flags & ~FFI_NO_COMPLETION,
			 msg->context, false);
}

static ssize_t msg_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };

	return post_send(EP(fep), &iov, 1, dest, 0, 0, FI_INJECT | FFI_NO_COMPLETION, NULL,
			 false);
}

static ssize_t msg_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)desc;
	return post_send(EP(fep), &iov, 1, dest, 0, data, EP(fep)->tx_op_flags | FI_REMOTE_CQ_DATA,
			 context, false);
}

static ssize_t msg_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };

	return post_send(EP(fep), &iov, 1, dest, 0, data,
			 FI_INJECT | FFI_NO_COMPLETION | FI_REMOTE_CQ_DATA, NULL, false);
}

static struct fi_ops_msg msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};

/* ---- fi_ops_tagged ---- */

static ssize_t tag_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t tag, uint64_t ignore, void *context)
{
	struct iovec iov = { buf, len };

	(void)desc;
	return post_recv(EP(fep), &iov, 1, src, tag, ignore, EP(fep)->rx_op_flags, context, true);
}

static ssize_t tag_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	(void)desc;
	return post_recv(EP(fep), iov, count, src, tag, ignore, EP(fep)->rx_op_flags, context, true);
}

static ssize_t tag_recvmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_recv(EP(fep), msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->ignore,
			 flags, msg->context, true);
}

static ssize_t tag_send(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			fi_addr_t dest, uint64_t tag, void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)desc;
	return post_send(EP(fep), &iov, 1, dest, tag, 0, EP(fep)->tx_op_flags, context, true);
}

static ssize_t tag_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t dest, uint64_t tag, void *context)
{
	(void)desc;
	return post_send(EP(fep), iov, count, dest, tag, 0, EP(fep)->tx_op_flags, context, true);
}

static ssize_t tag_sendmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_send(EP(fep), msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->data,
			 flags & ~FFI_NO_COMPLETION, msg->context, true);
}

static ssize_t tag_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
			  uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return post_send(EP(fep), &iov, 1, dest, tag, 0, FI_INJECT | FFI_NO_COMPLETION, NULL,
			 true);
}

static ssize_t tag_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)desc;
	return post_send(EP(fep), &iov, 1, dest, tag, data, EP(fep)->tx_op_flags | FI_REMOTE_CQ_DATA,
			 context, true);
}

static ssize_t tag_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return post_send(EP(fep), &iov, 1, dest, tag, data,
			 FI_INJECT | FFI_NO_COMPLETION | FI_REMOTE_CQ_DATA, NULL, true);
}

static struct fi_ops_tagged tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = tag_recv,
	.recvv = tag_recvv,
	.recvmsg = tag_recvmsg,
	.send = tag_send,
	.sendv = tag_sendv,
	.sendmsg = tag_sendmsg,
	.inject = tag_inject,
	.senddata = tag_senddata,
	.injectdata = tag_injectdata,
};

/* ---- fi_ops_ep ---- */

static ssize_t ep_cancel_unlocked(fid_t fid, void *context)
{
	struct ffi_ep *ep = (struct ffi_ep *)fid;
	struct ffi_rx_list *lists[2] = { &ep->rx_msg, &ep->rx_tag };

	for (int l = 0; l < 2; l++) {
		struct ffi_rx *rx;

		TAILQ_FOREACH(rx, lists[l], link) {
			struct ffi_cqe e = { .e = { .op_context = context,
						    .flags = FI_RECV | (l ? FI_TAGGED : FI_MSG),
						    .tag = rx->tag },
					     .src = FI_ADDR_NOTAVAIL, .err = FI_ECANCELED };

			if (rx->context != context)
				continue;
			if (!ffi_cq_room(ep->rx_cq))
				return -FI_EAGAIN;
			TAILQ_REMOVE(lists[l], rx, link);
			ep->rx_posted--;
			free(rx);
			ffi_cq_push(ep->rx_cq, &e);
			return 0;
		}
	}
	return -FI_ENOENT;
}

/* ep_cancel under the domain's lock (FI_THREAD_SAFE) */
static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct ffi_domain *d_ = ((struct ffi_ep *)fid)->dom;
	ssize_t r_;

	ffi_lock(d_);
	r_ = ep_cancel_unlocked(fid, context);
	ffi_unlock(d_);
	return r_;
}

/* FI_OPT_MIN_MULTI_RECV (fi_endpoint(3)), the only option. */
static int ep_getopt_unlocked(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct ffi_ep *ep = (struct ffi_ep *)fid;

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_EINVAL;
	memcpy(optval, &ep->min_multi_recv, sizeof(size_t));
	*optlen = sizeof(size_t);
	return 0;
}

/* ep_getopt under the domain's lock (FI_THREAD_SAFE) */
static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct ffi_domain *d_ = ((struct ffi_ep *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = ep_getopt_unlocked(fid, level, optname, optval, optlen);
	ffi_unlock(d_);
	return r_;
}

static int ep_setopt_unlocked(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct ffi_ep *ep = (struct ffi_ep *)fid;

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	memcpy(&ep->min_multi_recv, optval, sizeof(size_t));
	return 0;
}

/* ep_setopt under the domain's lock (FI_THREAD_SAFE) */
static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct ffi_domain *d_ = ((struct ffi_ep *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = ep_setopt_unlocked(fid, level, optname, optval, optlen);
	ffi_unlock(d_);
	return r_;
}

static int ep_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx,
		     void *context)
{
	(void)sep;
	(void)index;
	(void)attr;
	(void)tx;
	(void)context;
	return -FI_ENOSYS;
}

static int ep_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx,
		     void *context)
{
	(void)sep;
	(void)index;
	(void)attr;
	(void)rx;
	(void)context;
	return -FI_ENOSYS;
}

static ssize_t ep_rx_size_left(struct fid_ep *fep)
{
	return (ssize_t)(FFI_RX_POSTED_MAX - EP(fep)->rx_posted);
}

static ssize_t ep_tx_size_left(struct fid_ep *fep)
{
	unsigned f = EP(fep)->ops_free;

	return f > FFI_CTRL_RESERVE ? (ssize_t)(f - FFI_CTRL_RESERVE) : 0;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = ep_tx_ctx,
	.rx_ctx = ep_rx_ctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};

/* ---- fi_ops_cm: only the endpoint's name ---- */

static int cm_getname_unlocked(fid_t fid, void *addr, size_t *addrlen)
{
	struct ffi_ep *ep = (struct ffi_ep *)fid;
	size_t n;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	n = *addrlen;
	*addrlen = ffi_addrlen(ep->dom->addr_format);
	if (n < *addrlen)
		return -FI_ETOOSMALL;
	ffi_addr_to(ep->dom->addr_format, &ep->self, ep->svc, addr);
	return 0;
}

/* cm_getname under the domain's lock (FI_THREAD_SAFE) */
static int cm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct ffi_domain *d_ = ((struct ffi_ep *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = cm_getname_unlocked(fid, addr, addrlen);
	ffi_unlock(d_);
	return r_;
}

static int cm_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void)fid;
	(void)addr;
	(void)addrlen;
	return -FI_ENOSYS; /* the address is the daemon's and the UD QP's */
}

static int cm_getpeer(struct fid_ep *fep, void *addr, size_t *addrlen)
{
	(void)fep;
	(void)addr;
	(void)addrlen;
	return -FI_ENOSYS;
}

static int cm_connect(struct fid_ep *fep, const void *addr, const void *param, size_t paramlen)
{
	(void)fep;
	(void)addr;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static int cm_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

static int cm_accept(struct fid_ep *fep, const void *param, size_t paramlen)
{
	(void)fep;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static int cm_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	(void)pep;
	(void)handle;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static int cm_shutdown(struct fid_ep *fep, uint64_t flags)
{
	(void)fep;
	(void)flags;
	return -FI_ENOSYS;
}

static int cm_join(struct fid_ep *fep, const void *addr, uint64_t flags, struct fid_mc **mc,
		   void *context)
{
	(void)fep;
	(void)addr;
	(void)flags;
	(void)mc;
	(void)context;
	return -FI_ENOSYS;
}

static struct fi_ops_cm cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = cm_setname,
	.getname = cm_getname,
	.getpeer = cm_getpeer,
	.connect = cm_connect,
	.listen = cm_listen,
	.accept = cm_accept,
	.reject = cm_reject,
	.shutdown = cm_shutdown,
	.join = cm_join,
};

/* ---- fi_ops: close, bind, enable ---- */

static void ep_free(struct ffi_ep *ep)
{
	struct ffi_peer *p;
	struct ffi_rx *rx;
	struct ffi_unexp *u;

	while ((p = LIST_FIRST(&ep->peers))) {
		struct ffi_op *op;

		while ((op = TAILQ_FIRST(&p->pending))) { /* completes into nothing */
			TAILQ_REMOVE(&p->pending, op, link);
			ffi_op_put(ep, op);
		}
		if (p->qp)
			falcon_destroy_qp(p->qp);
		LIST_REMOVE(p, link);
		free(p);
	}
	while ((rx = TAILQ_FIRST(&ep->rx_msg))) {
		TAILQ_REMOVE(&ep->rx_msg, rx, link);
		free(rx);
	}
	while ((rx = TAILQ_FIRST(&ep->rx_tag))) {
		TAILQ_REMOVE(&ep->rx_tag, rx, link);
		free(rx);
	}
	while ((u = TAILQ_FIRST(&ep->unexp))) {
		TAILQ_REMOVE(&ep->unexp, u, link);
		if (u->slot < 0)
			free(u->data);
		free(u);
	}
	{
		struct ffi_rrx *r;

		while ((r = TAILQ_FIRST(&ep->rrx))) {
			TAILQ_REMOVE(&ep->rrx, r, link);
			if (r->mr)
				falcon_dereg_mr(r->mr);
			free(r);
		}
		for (uint32_t i = 0; i < FFI_RSEND_MAX; i++)
			if (ep->rsends[i].in_use && ep->rsends[i].mr)
				falcon_dereg_mr(ep->rsends[i].mr);
	}
	{
		struct ffi_rjob *j;

		while ((j = TAILQ_FIRST(&ep->rjobs))) {
			TAILQ_REMOVE(&ep->rjobs, j, link);
			if (j->mr)
				falcon_dereg_mr(j->mr);
			free(j);
		}
	}
	{
		struct ffi_aowed *w;

		while ((w = TAILQ_FIRST(&ep->aowed))) {
			TAILQ_REMOVE(&ep->aowed, w, link);
			free(w);
		}
	}
	ffi_name_close(ep);
	if (ep->ud)
		falcon_destroy_qp(ep->ud);
	if (ep->srq)
		falcon_destroy_srq(ep->srq);
	if (ep->pool_mr)
		falcon_dereg_mr(ep->pool_mr);
	if (ep->pool)
		falcon_free_buf(ep->dom->ctx, ep->pool);
	if (ep->fcq)
		falcon_destroy_cq(ep->fcq);
	free(ep);
}

static int ep_close_unlocked(struct fid *fid)
{
	struct ffi_ep *ep = (struct ffi_ep *)fid;

	if (ep->rx_drops || ep->req_drops || ep->dgram_drops)
		FFI_WARN(FI_LOG_EP_DATA, "dropped: %" PRIu64 " messages not the provider's, %" PRIu64
			 " connection requests, %" PRIu64 " datagrams without room\n", ep->rx_drops,
			 ep->req_drops, ep->dgram_drops);
	{
		struct ffi_cntr *cs[] = { ep->cntr_send, ep->cntr_recv, ep->cntr_read,
					  ep->cntr_write, ep->cntr_rwrite };

		for (size_t i = 0; i < 5; i++)
			if (cs[i])
				ffi_cntr_unbind_ep(cs[i], ep); /* once per counter: no-op after */
	}
	if (ep->tx_cq)
		ffi_cq_unbind_ep(ep->tx_cq, ep);
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		ffi_cq_unbind_ep(ep->rx_cq, ep);
	if (ep->av)
		ep->av->refs--;
	ep->dom->refs--;
	ep_free(ep);
	return 0;
}

/* ep_close under the domain's lock (FI_THREAD_SAFE) */
static int ep_close(struct fid *fid)
{
	struct ffi_domain *d_ = ((struct ffi_ep *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = ep_close_unlocked(fid);
	ffi_unlock(d_);
	return r_;
}

static int ep_bind_unlocked(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct ffi_ep *ep = (struct ffi_ep *)fid;
	int r;

	if (!bfid)
		return -FI_EINVAL;
	switch (bfid->fclass) {
	case FI_CLASS_CQ: {
		struct ffi_cq *cq = (struct ffi_cq *)bfid;

		if (!(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EBADFLAGS;
		if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq))
			return -FI_EINVAL;
		r = ffi_cq_bind_ep(cq, ep);
		if (r)
			return r;
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_flags = flags;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_flags = flags;
		}
		return 0;
	}
	case FI_CLASS_AV:
		if (ep->av)
			return -FI_EINVAL;
		ep->av = (struct ffi_av *)bfid;
		ep->av->refs++;
		return 0;
	case FI_CLASS_EQ:
		ep->eq = (struct ffi_eq *)bfid;
		return 0;
	case FI_CLASS_CNTR: {
		struct ffi_cntr *c = (struct ffi_cntr *)bfid;
		struct ffi_cntr **slots[] = { &ep->cntr_send, &ep->cntr_recv, &ep->cntr_read,
					      &ep->cntr_write, &ep->cntr_rwrite };
		static const uint64_t bits[] = { FI_SEND, FI_RECV, FI_READ, FI_WRITE,
						 FI_REMOTE_WRITE };

		if (!flags || (flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_WRITE |
					 FI_REMOTE_READ)))
			return -FI_EBADFLAGS; /* FI_REMOTE_READ is taken and never counts */
		for (size_t i = 0; i < 5; i++)
			if ((flags & bits[i]) && *slots[i])
				return -FI_EINVAL;
		r = ffi_cntr_bind_ep(c, ep);
		if (r)
			return r;
		for (size_t i = 0; i < 5; i++)
			if (flags & bits[i])
				*slots[i] = c;
		return 0;
	}
	default:
		return -FI_ENOSYS;
	}
}

/* ep_bind under the domain's lock (FI_THREAD_SAFE) */
static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct ffi_domain *d_ = ((struct ffi_ep *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = ep_bind_unlocked(fid, bfid, flags);
	ffi_unlock(d_);
	return r_;
}

static int ep_control_unlocked(struct fid *fid, int command, void *arg)
{
	struct ffi_ep *ep = (struct ffi_ep *)fid;

	switch (command) {
	case FI_ENABLE:
		/* an AV, and for each direction a CQ or a counter */
		if ((!ep->tx_cq && !ep->cntr_send && !ep->cntr_write && !ep->cntr_read) ||
		    (!ep->rx_cq && !ep->cntr_recv) || !ep->av)
			return -FI_ENOCQ;
		ep->enabled = true;
		return 0;
	case FI_GETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		*(uint64_t *)arg = (*(uint64_t *)arg & FI_TRANSMIT) ? ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	case FI_SETOPSFLAG: {
		uint64_t f;

		if (!arg)
			return -FI_EINVAL;
		f = *(uint64_t *)arg & ~FFI_NO_COMPLETION;

		if (f & FI_TRANSMIT)
			ep->tx_op_flags = f & ~(FI_TRANSMIT | FI_RECV);
		else
			ep->rx_op_flags = f & ~(FI_TRANSMIT | FI_RECV);
		return 0;
	}
	default:
		return -FI_ENOSYS;
	}
}

/* ep_control under the domain's lock (FI_THREAD_SAFE) */
static int ep_control(struct fid *fid, int command, void *arg)
{
	struct ffi_domain *d_ = ((struct ffi_ep *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = ep_control_unlocked(fid, command, arg);
	ffi_unlock(d_);
	return r_;
}

static int ep_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = ep_ops_open,
};

static int ffi_endpoint_unlocked(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **fep,
		 void *context)
{
	struct ffi_domain *dom = (struct ffi_domain *)domain;
	struct falcon_qp_init_attr ua = { .size = sizeof(ua), .qp_type = FALCON_QPT_UD,
					  .max_send_wr = FFI_TX_SLOTS, .max_recv_wr = FFI_UD_SLOTS,
					  .qkey = FFI_QKEY };
	struct falcon_srq_init_attr sa = { .size = sizeof(sa), .max_wr = FFI_RX_SLOTS };
	static const uint32_t states[] = { FALCON_QPS_INIT, FALCON_QPS_RTR, FALCON_QPS_RTS };
	struct ffi_ep *ep;
	int r = 0;

	if (!fep || !info || !info->ep_attr ||
	    (info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_DGRAM))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->dom = dom;
	ep->name_fd = ep->name_stop = -1;
	ep->type = info->ep_attr->type;
	ep->caps = info->caps ? info->caps :
		   (ep->type == FI_EP_RDM ? FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC : FI_MSG);
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	LIST_INIT(&ep->peers);
	TAILQ_INIT(&ep->free_ops);
	TAILQ_INIT(&ep->rx_msg);
	TAILQ_INIT(&ep->rx_tag);
	TAILQ_INIT(&ep->unexp);
	TAILQ_INIT(&ep->rrx);
	TAILQ_INIT(&ep->rjobs);
	TAILQ_INIT(&ep->aowed);
	for (uint32_t i = 0; i < FFI_TX_SLOTS; i++) {
		ep->ops[i].idx = i;
		TAILQ_INSERT_TAIL(&ep->free_ops, &ep->ops[i], link);
	}
	ep->ops_free = FFI_TX_SLOTS;
	ep->min_multi_recv = FFI_MAX_MSG;
	for (uint32_t i = 0; i < FFI_RSEND_MAX; i++)
		ep->rsend_free[i] = FFI_RSEND_MAX - 1 - i;
	ep->nrsend_free = FFI_RSEND_MAX;
	if (fi_param_get_int(&ffi_prov, "conn_timeout_ms", &ep->conn_timeout_ms) ||
	    ep->conn_timeout_ms <= 0)
		ep->conn_timeout_ms = FFI_CONN_TIMEOUT_MS;

	ep->fcq = falcon_create_cq(dom->ctx, 1024);
	if (!ep->fcq)
		goto fail;
	ep->pool_len = (size_t)FFI_TX_SLOTS * FFI_SLOT_BYTES +
		       FFI_UD_SLOTS * ffi_ud_mtu(&dom->dev) +
		       (ep->type == FI_EP_RDM ? (size_t)FFI_RX_SLOTS * FFI_SLOT_BYTES : 0);
	ep->pool = falcon_alloc_buf(dom->ctx, ep->pool_len);
	if (!ep->pool)
		goto fail;
	ep->pool_mr = falcon_reg_mr(dom->pd, ep->pool, ep->pool_len, FALCON_ACCESS_LOCAL_WRITE);
	if (!ep->pool_mr)
		goto fail;
	ep->tx_slots = ep->pool;
	ep->ud_slots = ep->tx_slots + (size_t)FFI_TX_SLOTS * FFI_SLOT_BYTES;
	ep->rx_slots = ep->ud_slots + FFI_UD_SLOTS * ffi_ud_mtu(&dom->dev);

	ua.send_cq = ua.recv_cq = ep->fcq;
	ep->ud = falcon_create_qp(dom->pd, &ua);
	if (!ep->ud)
		goto fail;
	for (size_t i = 0; i < 3; i++) {
		struct falcon_qp_attr a = { .size = sizeof(a), .qp_state = states[i] };

		if (falcon_modify_qp(ep->ud, &a))
			goto fail;
	}
	for (uint32_t i = 0; i < FFI_UD_SLOTS; i++)
		if ((r = post_slot(ep, FFI_K_UDRX, i)))
			goto fail_r;
	if (ep->type == FI_EP_RDM) {
		ep->srq = falcon_create_srq(dom->pd, &sa);
		if (!ep->srq)
			goto fail;
		for (uint32_t i = 0; i < FFI_RX_SLOTS; i++)
			if ((r = post_slot(ep, FFI_K_RX, i)))
				goto fail_r;
	}
	ep->self = dom->self;
	ep->self.qpn = ep->ud->qp_num;
	{
		/* the name socket on the service of src_addr (FI_SOURCE), else on any port */
		struct ffi_addr src;
		uint16_t port = 0;

		if (info->src_addr && info->src_addrlen == ffi_addrlen(dom->addr_format) &&
		    !ffi_addr_from(dom->addr_format, info->src_addr, &src) &&
		    (src.flags & FFI_AF_SVC))
			port = (uint16_t)src.qpn;
		if ((r = ffi_name_open(ep, port)))
			goto fail_r;
	}

	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &ep_fi_ops;
	ep->ep.ops = &ep_ops;
	ep->ep.cm = &cm_ops;
	ep->ep.msg = &msg_ops;
	ep->ep.tagged = &tagged_ops;
	ep->ep.rma = &ffi_rma_ops;
	ep->ep.atomic = &ffi_atomic_ops;
	dom->refs++;
	*fep = &ep->ep;
	return 0;
fail:
	r = -errno;
fail_r:
	FFI_WARN(FI_LOG_EP_CTRL, "endpoint: %s\n", falcon_strerror(r));
	ep_free(ep);
	return r ? r : -FI_EIO;
}

/* ffi_endpoint under the domain's lock (FI_THREAD_SAFE) */
int ffi_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **fep,
		 void *context)
{
	struct ffi_domain *d_ = (struct ffi_domain *)domain;
	int r_;

	ffi_lock(d_);
	r_ = ffi_endpoint_unlocked(domain, info, fep, context);
	ffi_unlock(d_);
	return r_;
}
