/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma.c - the RDMA-over-Falcon ULP (RDMA spec sections 6 and 8). See rdma.h.
 *
 * Layout of this file:
 *   objects and numbered tables; completion queues and async events; receive queues;
 *   connections; QP life and the error state; posting; the requester (segments out,
 *   completions in); the responder (requests in, answers out); the txn callbacks.
 *
 * Re-entrancy: txn callbacks may run inside our calls into txn (a rejected M:N push
 * completes at once; fc_txn_accept may hand out credits). Every path finishes its own
 * state changes before it calls txn, the send pump of a QP does not nest (a nested call
 * asks the running one to go round again), and after each submission the pump checks
 * that its WR is still the one it was working on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "rdma.h"
#include "wire_falcon.h"
#include "wire_rdma.h"

#define NONE UINT32_MAX
#define TBL_MAX (1u << 16)
#define SKIP_MAX 16   /* RMSNs that consumed no WQE, per QP, not yet behind its RQ head */
#define DEAD_MAX 8    /* messages given up (RNR retries exhausted), remembered per QP */
#define MAP_MAX 32    /* SRQ WQEs held by messages in progress, per QP */
#define RNR_TRACK 64  /* RNR'd messages whose refusals are counted, per QP */
#define ERR_RESP_LEN 4 /* READ Response with CE: the NAK code */

/* ------------------------------------------------------------------------ */
/* objects                                                                   */

enum { RW_FREE = 0, RW_POSTED, RW_ACTIVE, RW_DONE, RW_EMITTED };
enum { SW_FREE = 0, SW_POSTED, SW_ACTIVE, SW_DONE, SW_EMITTED };

/* A receive WQE and, once a message is in it, its completion in the making. */
struct rwqe {
	uint64_t wr_id;
	struct fc_sge *sge;  /* its scatter list (storage of its queue or map entry) */
	uint32_t nsge, cap;  /* entries, total bytes */
	uint8_t state;       /* RW_* */
	int err;             /* first failed check (-FC_RDMA_E*), 0 = none */
	uint8_t site;        /* enum fc_rdma_site of err */
	struct fc_rdma_wc wc;
};

/* A receive queue: own RQ of a QP or an SRQ. Absolute indexes, slot = index % depth. */
struct rq {
	struct rwqe *w;
	struct fc_sge *sge;
	uint32_t depth, max_sge;
	uint64_t head, tail;
};

/* An SRQ WQE taken by a message in progress (RC/XRC with an SRQ). */
struct map_ent {
	uint32_t rmsn, cq;
	uint8_t used;
	struct rwqe w;
	struct fc_sge sge[FC_RDMA_RECV_SGE_MAX];
};

/* A send WQE. */
struct swqe {
	struct fc_rdma_send_wr wr; /* wr.sgl points at sge */
	struct fc_sge *sge;
	uint64_t seq;
	struct conn *c;            /* where it goes */
	uint32_t dqp, qkey;
	uint32_t nseg, issued, outstanding, rmsn, byte_len, vendor;
	int32_t err_seg;           /* highest failed segment, -1 none */
	uint8_t state, status;     /* SW_*, enum fc_wc_status */
};

/* One transaction in flight (cookie = QP slot | generation | index). */
struct txrec {
	uint32_t gen, next;
	uint8_t used, pull, op;
	struct conn *c;
	uint64_t wseq;
	uint32_t seg, sn, len, sink_lkey;
	uint64_t sink_va;
	uint32_t g_sge, g_off;   /* push: where its data starts in the WR's gather list */
};

struct rnr_ent {
	struct fc_txn *t;
	uint32_t rsn, count;
};

struct dead_ent {
	uint32_t rmsn;
	uint8_t used, nak;
};

struct qp {
	uint32_t num, gen;
	uint8_t used, type, order, mode, state;
	uint32_t pd, send_cq, recv_cq, srq, xrcd, qkey, remote_qpn;
	struct conn *c;
	uint8_t min_rnr_timer, rnr_retry;
	uint32_t max_send_sge;
	/* requester */
	struct swqe *sq;
	struct fc_sge *sq_sge;
	uint32_t sq_depth;
	uint64_t sq_head, sq_issue, sq_tail, next_seq;
	uint32_t rmsn_msg, rmsn_rd;
	struct txrec *rec;
	uint32_t nrec, rec_free, outstanding;
	uint8_t pumping, pump_again, err_stop, fence_next;
	uint64_t err_seq;
	/* responder */
	struct rq rq;
	uint32_t rmsn_lo, nskip;
	uint64_t abs_lo;
	uint32_t skips[SKIP_MAX];
	struct dead_ent dead[DEAD_MAX];
	uint32_t dead_next;
	struct map_ent *map;
	struct rnr_ent rnr[RNR_TRACK];
	uint32_t rnr_next;
	uint64_t w_bytes;          /* WRITE message being received: bytes so far */
	int w_err;                 /* ... and its first failure (-FC_RDMA_E*) */
};

struct cq {
	uint32_t num, gen, nref;
	uint8_t used, error, armed, armed_sol;
	struct fc_rdma_wc *ring;
	uint32_t depth, head, count;
};

struct srq {
	uint32_t num, gen, nref;
	uint8_t used;
	uint32_t pd, xrcd, cq;
	struct rq rq;
};

struct ah {
	uint32_t num, gen;
	uint8_t used;
	uint32_t pd;
	struct conn *c;
};

/* Where the payload of an answer (Pull Data) comes from. */
enum { SRC_EMPTY, SRC_NONE, SRC_NAK, SRC_READ };
struct ans_src {
	uint8_t kind;     /* SRC_EMPTY: Falcon's zero-length CIE answer, no RDMA headers;
			     SRC_NONE: headers only; SRC_NAK: the 4-byte NAK word (CE); SRC_READ */
	uint8_t nak;
	uint32_t pd, rkey, len;
	uint64_t va;
};

/* A pull accepted whose answer has no room yet (the txn has no Data Tx room and every
 * pend slot is taken): its headers, and its source, read when it goes. */
struct dans {
	uint32_t rsn, resp_len;
	struct fc_rdma_hdrs h;
	struct ans_src src;
};

struct conn {
	struct fc_rdma *d;
	struct fc_txn *t;
	struct dans *dq;           /* FIFO of answers waiting for room, dq_cap <= the txn
				    * target table (one per accepted pull at most) */
	uint32_t dq_cap, dq_head, dq_count, dq_reserved;
	uint8_t used, ordered, dead, mn, retrying;
	uint32_t nref;             /* QPs, AHs, WRs and transactions using it */
	struct qp *qp;             /* its RC / XRC QP */
	uint32_t tx_sn, rx_last_sn;
	uint8_t rx_sn_seen;
};

struct pend { /* Pull Data the txn layer could not take yet */
	struct conn *c;
	uint64_t seq;
	uint32_t rsn, len;
	uint8_t used;
	uint8_t *buf;
};

struct fc_rdma {
	struct fc_rdma_cfg cfg;
	struct fc_txn_engine *e;
	struct fc_mr_table *mrs;
	uint64_t now;
	uint32_t qp_bits, cq_bits, srq_bits, ah_bits;
	struct qp *qp;
	struct cq *cq;
	struct srq *srq;
	struct ah *ah;
	struct conn *conn;
	struct pend *pend;
	uint64_t pend_seq;
	uint32_t pend_used;
	uint32_t pend_reserved;    /* pulls being answered: each may need a pend slot */
	uint32_t dq_total;         /* answers kept in the connections' dq */
	uint8_t running_deferred;
	uint32_t rec_gen;
	struct fc_seg *plan;       /* segment plan of one WR, cached by (QP, WR) */
	uint32_t plan_cap, plan_n, plan_qp;
	uint64_t plan_seq;
	uint8_t *pkt;              /* a request being built */
	uint8_t *resp;             /* a response being built */
	uint32_t pkt_cap;
	struct fc_rdma_async_event *ev;
	uint32_t ev_head, ev_count;
	struct fc_rdma_counters cnt;
};

static const struct fc_txn_ops rdma_txn_ops;

/* ------------------------------------------------------------------------ */
/* configuration and numbered tables                                         */

void fc_rdma_cfg_default(struct fc_rdma_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->mtu_bytes = 4096;
	c->max_msg_bytes = 1u << 20;
	c->max_qps = c->max_cqs = c->max_srqs = c->max_ahs = 256;
	c->max_conns = 64;
	c->async_depth = 64;
	c->pending_resp = 16;
	c->pull_defer_max = 1024;
}

void fc_rdma_qp_init_default(struct fc_rdma_qp_init *a)
{
	memset(a, 0, sizeof(*a));
	a->type = FC_RDMA_QPT_RC;
	a->sq_depth = a->rq_depth = 64;
	a->max_send_sge = a->max_recv_sge = 4;
	a->max_inflight = 128;
	a->min_rnr_timer = 1;
	a->rnr_retry = FC_RDMA_RNR_INFINITE;
}

static uint32_t bits_for(uint32_t cap)
{
	uint32_t b = 0;

	while ((1u << b) < cap)
		b++;
	return b;
}

/* Object numbers: generation above the slot bits, 24 bits in all, never 0. */
static uint32_t num_make(uint32_t *gen, uint32_t bits, uint32_t slot)
{
	uint32_t max = (1u << (24 - bits)) - 1;

	*gen = *gen >= max ? 1 : *gen + 1;
	return *gen << bits | slot;
}

static uint32_t num_slot(uint32_t num, uint32_t bits) { return num & ((1u << bits) - 1); }

static struct qp *qp_get(const struct fc_rdma *d, uint32_t num)
{
	uint32_t s = num_slot(num, d->qp_bits);

	if (s >= d->cfg.max_qps || !d->qp[s].used || d->qp[s].num != num)
		return NULL;
	return &d->qp[s];
}

static struct cq *cq_get(const struct fc_rdma *d, uint32_t num)
{
	uint32_t s = num_slot(num, d->cq_bits);

	if (s >= d->cfg.max_cqs || !d->cq[s].used || d->cq[s].num != num)
		return NULL;
	return &d->cq[s];
}

static struct srq *srq_get(const struct fc_rdma *d, uint32_t num)
{
	uint32_t s = num_slot(num, d->srq_bits);

	if (s >= d->cfg.max_srqs || !d->srq[s].used || d->srq[s].num != num)
		return NULL;
	return &d->srq[s];
}

static struct ah *ah_get(const struct fc_rdma *d, uint32_t num)
{
	uint32_t s = num_slot(num, d->ah_bits);

	if (s >= d->cfg.max_ahs || !d->ah[s].used || d->ah[s].num != num)
		return NULL;
	return &d->ah[s];
}

/* The connection record of t if t is one of ours. */
static struct conn *conn_of(const struct fc_rdma *d, struct fc_txn *t)
{
	struct conn *c;

	if (!t)
		return NULL;
	/* O(1): the context must be one of our records (compared as addresses, no
	 * dereference before that is known) and bound to t */
	c = fc_txn_ctx(t);
	if ((uintptr_t)c < (uintptr_t)d->conn ||
	    (uintptr_t)c >= (uintptr_t)(d->conn + d->cfg.max_conns) ||
	    ((uintptr_t)c - (uintptr_t)d->conn) % sizeof(*c))
		return NULL;
	return c->used && c->t == t ? c : NULL;
}

static void set_now(struct fc_rdma *d, uint64_t now)
{
	if (now > d->now)
		d->now = now;
}

static int sn_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

/* ------------------------------------------------------------------------ */
/* async events and completion queues                                        */

static void async_push(struct fc_rdma *d, uint8_t type, uint32_t num)
{
	if (d->ev_count == d->cfg.async_depth) {
		d->cnt.async_lost++;
		return;
	}
	d->ev[(d->ev_head + d->ev_count) % d->cfg.async_depth] =
		(struct fc_rdma_async_event){ .type = type, .num = num };
	d->ev_count++;
}

int fc_rdma_get_async_event(struct fc_rdma *d, struct fc_rdma_async_event *ev)
{
	if (!d->ev_count)
		return -EAGAIN;
	*ev = d->ev[d->ev_head];
	d->ev_head = (d->ev_head + 1) % d->cfg.async_depth;
	d->ev_count--;
	return 0;
}

static void qp_to_err(struct qp *q, struct fc_rdma *d);

/* Append wc to CQ cqn on behalf of QP q (may be NULL). A full CQ goes to the error
 * state: the completion is lost and counted, q goes to the error state. */
static void cq_push(struct fc_rdma *d, uint32_t cqn, const struct fc_rdma_wc *wc, struct qp *q)
{
	struct cq *cq = cq_get(d, cqn);
	int sol;

	if (!cq)
		return;
	if (cq->error || cq->count == cq->depth) {
		d->cnt.cq_lost++;
		if (!cq->error)
			async_push(d, FC_RDMA_EV_CQ_ERR, cq->num);
		cq->error = 1;
		if (q)
			qp_to_err(q, d);
		return;
	}
	cq->ring[(cq->head + cq->count) % cq->depth] = *wc;
	cq->count++;
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
	for (s = 0; s < d->cfg.max_cqs && !cq; s++)
		if (!d->cq[s].used)
			cq = &d->cq[s];
	if (!cq)
		return -ENOSPC;
	cq->ring = calloc(depth, sizeof(*cq->ring));
	if (!cq->ring)
		return -ENOMEM;
	cq->num = num_make(&cq->gen, d->cq_bits, (uint32_t)(cq - d->cq));
	cq->used = 1;
	cq->depth = depth;
	cq->head = cq->count = cq->nref = 0;
	cq->error = cq->armed = cq->armed_sol = 0;
	*cqn = cq->num;
	return 0;
}

int fc_rdma_cq_destroy(struct fc_rdma *d, uint32_t cqn)
{
	struct cq *cq = cq_get(d, cqn);

	if (!cq)
		return -EINVAL;
	if (cq->nref)
		return -EBUSY;
	free(cq->ring);
	cq->ring = NULL;
	cq->used = 0;
	return 0;
}

int fc_rdma_poll_cq(struct fc_rdma *d, uint32_t cqn, struct fc_rdma_wc *wc, uint32_t n)
{
	struct cq *cq = cq_get(d, cqn);
	uint32_t k = 0;

	if (!cq || (!wc && n))
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
		return -EINVAL;
	cq->armed = 1;
	cq->armed_sol = solicited_only != 0;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* receive queues                                                            */

static int rq_init(struct rq *q, uint32_t depth, uint32_t max_sge)
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

static void rq_fini(struct rq *q)
{
	free(q->w);
	free(q->sge);
	memset(q, 0, sizeof(*q));
}

static struct rwqe *rq_at(const struct rq *q, uint64_t abs) { return &q->w[abs % q->depth]; }

/* Validate and append wr. Returns 0, -EINVAL, -ENOMEM. */
static int rq_post(struct rq *q, const struct fc_rdma_recv_wr *wr)
{
	struct rwqe *w;
	uint64_t cap = 0;

	if (!wr || wr->num_sge > q->max_sge || (wr->num_sge && !wr->sgl))
		return -EINVAL;
	if (q->tail - q->head == q->depth)
		return -ENOMEM;
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
static void rwqe_wc(const struct rwqe *w, uint32_t qpn, uint8_t st, struct fc_rdma_wc *wc)
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
/* connections                                                               */

struct fc_txn *fc_rdma_conn_open(struct fc_rdma *d, const struct fc_txn_conn_cfg *cfg)
{
	struct conn *c = NULL;

	if (!d || !cfg) {
		errno = EINVAL;
		return NULL;
	}
	for (uint32_t i = 0; i < d->cfg.max_conns && !c; i++)
		if (!d->conn[i].used)
			c = &d->conn[i];
	if (!c) {
		errno = ENOSPC;
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	c->d = d;
	/* the deferred-answer FIFO is allocated when the connection first needs it (an
	 * overload: every pending_resp slot busy), not for every connection */
	c->dq_cap = cfg->max_rx_txns < d->cfg.pull_defer_max ? cfg->max_rx_txns :
		    d->cfg.pull_defer_max;
	c->t = fc_txn_conn_new(d->e, cfg, &rdma_txn_ops, c);
	if (!c->t)
		return NULL;
	c->used = 1;
	c->ordered = cfg->pdl.ordered != 0;
	c->mn = cfg->mn != 0;
	c->tx_sn = 1; /* 8.2: the first packet on a connection has SN 1 */
	return c->t;
}

static void pend_drop_conn(struct fc_rdma *d, const struct conn *c)
{
	for (uint32_t i = 0; i < d->cfg.pending_resp; i++)
		if (d->pend[i].used && d->pend[i].c == c) {
			d->pend[i].used = 0;
			d->pend_used--;
		}
}

int fc_rdma_conn_close(struct fc_rdma *d, struct fc_txn *t)
{
	struct conn *c = conn_of(d, t);

	if (!c)
		return -EINVAL;
	if (c->nref)
		return -EBUSY;
	pend_drop_conn(d, c);
	fc_txn_conn_free(c->t);
	free(c->dq);
	c->dq = NULL;
	c->used = 0;
	c->t = NULL;
	return 0;
}

static void conn_ref(struct conn *c) { c->nref++; }
static void conn_unref(struct conn *c) { c->nref--; }

/* ------------------------------------------------------------------------ */
/* shared receive queues and address handles                                 */

int fc_rdma_srq_create(struct fc_rdma *d, const struct fc_rdma_srq_init *a, uint32_t *srqn)
{
	struct srq *s = NULL;
	struct cq *cq = NULL;

	if (!a || !srqn || !a->depth || a->depth > TBL_MAX || a->max_sge > FC_RDMA_RECV_SGE_MAX)
		return -EINVAL;
	if (a->xrcd && !(cq = cq_get(d, a->cq)))
		return -EINVAL;
	for (uint32_t i = 0; i < d->cfg.max_srqs && !s; i++)
		if (!d->srq[i].used)
			s = &d->srq[i];
	if (!s)
		return -ENOSPC;
	if (rq_init(&s->rq, a->depth, a->max_sge)) {
		rq_fini(&s->rq);
		return -ENOMEM;
	}
	s->num = num_make(&s->gen, d->srq_bits, (uint32_t)(s - d->srq));
	s->used = 1;
	s->nref = 0;
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
		return -EINVAL;
	if (s->nref)
		return -EBUSY;
	if (s->xrcd && (cq = cq_get(d, s->cq)))
		cq->nref--;
	rq_fini(&s->rq);
	s->used = 0;
	return 0;
}

int fc_rdma_post_srq_recv(struct fc_rdma *d, uint32_t srqn, const struct fc_rdma_recv_wr *wr)
{
	struct srq *s = srq_get(d, srqn);

	return s ? rq_post(&s->rq, wr) : -EINVAL;
}

int fc_rdma_ah_create(struct fc_rdma *d, uint32_t pd, struct fc_txn *conn, uint32_t *ahn)
{
	struct conn *c = conn_of(d, conn);
	struct ah *ah = NULL;

	if (!c || !ahn)
		return -EINVAL;
	for (uint32_t i = 0; i < d->cfg.max_ahs && !ah; i++)
		if (!d->ah[i].used)
			ah = &d->ah[i];
	if (!ah)
		return -ENOSPC;
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
		return -EINVAL;
	conn_unref(ah->c);
	ah->used = 0;
	return 0;
}

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

static struct swqe *sq_at(const struct qp *q, uint64_t i) { return &q->sq[i % q->sq_depth]; }

/* A send WQE reaches its final status: it no longer holds its connection. */
static void swqe_settle(struct swqe *w)
{
	if (w->state == SW_POSTED || w->state == SW_ACTIVE) {
		if (w->c)
			conn_unref(w->c);
		w->state = SW_DONE;
	}
}

static void swqe_emit(struct fc_rdma *d, struct qp *q, struct swqe *w)
{
	struct fc_rdma_wc wc = {
		.wr_id = w->wr.wr_id, .status = w->status, .opcode = wc_opcode_of(w->wr.opcode),
		.byte_len = w->status == FC_WC_SUCCESS ? w->byte_len : 0, .qp_num = q->num,
		.vendor_err = w->status == FC_WC_SUCCESS ? 0 : w->vendor,
	};

	w->state = SW_EMITTED;
	cq_push(d, q->send_cq, &wc, q);
}

static void sq_flush(struct fc_rdma *d, struct qp *q)
{
	for (uint64_t i = q->sq_head; i != q->sq_tail; i++) {
		struct swqe *w = sq_at(q, i);

		if (w->state == SW_EMITTED)
			continue;
		swqe_settle(w);
		w->status = FC_WC_WR_FLUSH_ERR;
		swqe_emit(d, q, w);
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
		rwqe_wc(w, q->num, FC_WC_WR_FLUSH_ERR, &wc);
		w->state = RW_EMITTED;
		cq_push(d, q->recv_cq, &wc, q);
	}
	q->rq.head = q->rq.tail;
	for (uint32_t i = 0; q->map && i < MAP_MAX; i++) {
		struct map_ent *m = &q->map[i];

		if (!m->used)
			continue;
		m->used = 0;
		rwqe_wc(&m->w, q->num, FC_WC_WR_FLUSH_ERR, &wc);
		cq_push(d, m->cq, &wc, q);
	}
}

/* The error state (6.3 verbs mode, a dead connection, a lost completion): flush. */
static void qp_to_err(struct qp *q, struct fc_rdma *d)
{
	if (q->state == FC_RDMA_QPS_ERR || q->state == FC_RDMA_QPS_RESET)
		return;
	q->state = FC_RDMA_QPS_ERR;
	async_push(d, FC_RDMA_EV_QP_FATAL, q->num);
	sq_flush(d, q);
	rq_flush(d, q);
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
static void qp_reset(struct fc_rdma *d, struct qp *q)
{
	for (uint64_t i = q->sq_head; i != q->sq_tail; i++)
		swqe_settle(sq_at(q, i));
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
	if (d->plan_qp == (uint32_t)(q - d->qp))
		d->plan_qp = NONE;
}

static void qp_free_mem(struct qp *q)
{
	free(q->sq);
	free(q->sq_sge);
	free(q->rec);
	free(q->map);
	rq_fini(&q->rq);
	q->sq = NULL;
	q->sq_sge = NULL;
	q->rec = NULL;
	q->map = NULL;
}

/* The connection QP a may use: ours, 1:1, ordered as its mode wants, free. */
static int check_conn(const struct fc_rdma *d, const struct fc_rdma_qp_init *a, struct conn **out)
{
	struct conn *c = conn_of(d, a->conn);

	if (!c || c->mn || c->ordered != (a->order == FC_RDMA_ORDER_STRONG))
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
	if (sq && (!cq_get(d, a->send_cq) || !a->sq_depth || a->sq_depth > TBL_MAX ||
		   a->max_send_sge > FC_SEG_SGE_MAX || !a->max_inflight ||
		   a->max_inflight > TBL_MAX))
		return -EINVAL;
	if (own_rq && (!a->rq_depth || a->rq_depth > TBL_MAX ||
		       a->max_recv_sge > FC_RDMA_RECV_SGE_MAX))
		return -EINVAL;
	if ((a->type == FC_RDMA_QPT_RC || a->type == FC_RDMA_QPT_UD) && !cq_get(d, a->recv_cq))
		return -EINVAL;
	if ((a->type == FC_RDMA_QPT_RC || a->type == FC_RDMA_QPT_UD) && a->srq &&
	    (!(s = srq_get(d, a->srq)) || s->xrcd))
		return -EINVAL;
	if (a->type == FC_RDMA_QPT_XRC_TGT && !a->xrcd)
		return -EINVAL;
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
	if (own_rq && rq_init(&q->rq, a->rq_depth, a->max_recv_sge))
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
	if (!rc && is_connected(a->type))
		rc = check_conn(d, a, &c);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < d->cfg.max_qps && !q; i++)
		if (!d->qp[i].used)
			q = &d->qp[i];
	if (!q)
		return -ENOSPC;
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
	q->max_send_sge = a->max_send_sge;
	qp_take_refs(d, q, 1);
	qp_reset(d, q);
	*qpn = q->num;
	return 0;
}

int fc_rdma_qp_destroy(struct fc_rdma *d, uint32_t qpn)
{
	struct qp *q = qp_get(d, qpn);

	if (!q)
		return -EINVAL;
	qp_reset(d, q);
	qp_take_refs(d, q, 0);
	qp_free_mem(q);
	q->used = 0;
	return 0;
}

int fc_rdma_qp_modify(struct fc_rdma *d, uint32_t qpn, const struct fc_rdma_qp_attr *attr)
{
	struct qp *q = qp_get(d, qpn);
	uint8_t to;

	if (!q || !attr)
		return -EINVAL;
	to = attr->state;
	if (to == FC_RDMA_QPS_RESET) {
		qp_reset(d, q);
	} else if (to == FC_RDMA_QPS_ERR) {
		qp_to_err(q, d);
	} else if (to == FC_RDMA_QPS_INIT && q->state == FC_RDMA_QPS_RESET) {
		q->state = to;
	} else if (to == FC_RDMA_QPS_RTR && q->state == FC_RDMA_QPS_INIT) {
		if (is_connected(q->type) && attr->remote_qpn > FC_RDMA_QPN_MASK)
			return -EINVAL;
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

	return q ? q->state : -EINVAL;
}

int fc_rdma_qp_sq_outstanding(const struct fc_rdma *d, uint32_t qpn)
{
	const struct qp *q = qp_get(d, qpn);

	return q ? (int)(q->sq_tail - q->sq_head) : -EINVAL;
}

int fc_rdma_qp_rq_outstanding(const struct fc_rdma *d, uint32_t qpn)
{
	const struct qp *q = qp_get(d, qpn);
	int n = 0;

	if (!q)
		return -EINVAL;
	for (uint32_t i = 0; q->map && i < MAP_MAX; i++)
		n += q->map[i].used;
	return (int)(q->rq.tail - q->rq.head) + n;
}

/* ------------------------------------------------------------------------ */
/* posting                                                                   */

static int is_atomic_op(uint8_t op)
{
	return op >= FC_RDMA_WR_CMP_SWAP && op < FC_RDMA_WR_OPCODE_COUNT;
}

static int is_send_op(uint8_t op) { return op <= FC_RDMA_WR_SEND_INV; }

static uint8_t qp_class(const struct qp *q)
{
	return q->type == FC_RDMA_QPT_UD ? FC_RDMA_CLASS_UD :
	       q->type == FC_RDMA_QPT_XRC_INI ? FC_RDMA_CLASS_XRC : FC_RDMA_CLASS_RC;
}

/* The segmentation request of a SEND / WRITE / READ WR (seg.h). */
static void seg_req_of(const struct fc_rdma *d, const struct qp *q,
		       const struct fc_rdma_send_wr *wr, uint32_t rmsn, struct fc_seg_req *r)
{
	static const uint8_t op[] = {
		[FC_RDMA_WR_SEND] = FC_SEG_SEND, [FC_RDMA_WR_SEND_IMM] = FC_SEG_SEND_IMM,
		[FC_RDMA_WR_SEND_INV] = FC_SEG_SEND_INV, [FC_RDMA_WR_WRITE] = FC_SEG_WRITE,
		[FC_RDMA_WR_WRITE_IMM] = FC_SEG_WRITE_IMM, [FC_RDMA_WR_READ] = FC_SEG_READ,
	};

	*r = (struct fc_seg_req){
		.op = op[wr->opcode], .cls = qp_class(q), .se = (wr->flags & FC_RDMA_WR_SOLICITED) != 0,
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

	if (!ah || ah->pd != q->pd || wr->remote_qpn > FC_RDMA_QPN_MASK ||
	    ah->c->ordered != (q->order == FC_RDMA_ORDER_STRONG))
		return -EINVAL;
	*c = ah->c;
	return 0;
}

/* The call's own checks (rdma.h); *total gets the message length. */
static int check_wr(const struct fc_rdma *d, const struct qp *q, const struct fc_rdma_send_wr *wr,
		    uint64_t *total)
{
	struct fc_seg_req r;
	int64_t n;

	if (!op_allowed(q, wr->opcode) || wr->num_sge > q->max_send_sge ||
	    (wr->num_sge && !wr->sgl) || wr->xrc_remote_srq > FC_RDMA_QPN_MASK)
		return -EINVAL;
	if (is_atomic_op(wr->opcode)) {
		if (wr->num_sge != 1)
			return -EINVAL;
		*total = 8;
		return 0;
	}
	seg_req_of(d, q, wr, 0, &r);
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

	if (wr->opcode == FC_RDMA_WR_READ || is_atomic_op(wr->opcode))
		access = FC_MR_LOCAL_WRITE;
	if (is_atomic_op(wr->opcode) && wr->sgl[0].len != 8)
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

static void wr_fail(struct qp *q, struct swqe *w, uint32_t seg, uint8_t status, uint32_t vendor);
static void wr_finish(struct fc_rdma *d, struct qp *q, struct swqe *w);
static void qp_pump(struct fc_rdma *d, struct qp *q);

int fc_rdma_post_send(struct fc_rdma *d, uint32_t qpn, const struct fc_rdma_send_wr *wr,
		      uint64_t now_ns)
{
	struct qp *q = qp_get(d, qpn);
	struct conn *c;
	struct swqe *w;
	uint64_t total = 0;
	int err;

	if (!q || !wr || !has_sq(q->type) ||
	    (q->state != FC_RDMA_QPS_RTS && q->state != FC_RDMA_QPS_ERR))
		return -EINVAL;
	set_now(d, now_ns);
	err = check_wr(d, q, wr, &total);
	c = q->c;
	if (!err && q->type == FC_RDMA_QPT_UD)
		err = check_ud_dest(d, q, wr, &c);
	if (err)
		return err;
	if (q->sq_tail - q->sq_head == q->sq_depth)
		return -ENOMEM;
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
	conn_ref(c);
	if (q->state == FC_RDMA_QPS_ERR) {
		w->status = FC_WC_WR_FLUSH_ERR;
		wr_finish(d, q, w);
		return 0;
	}
	err = check_local_list(d, q, &w->wr);
	if (err) {
		struct fc_rdma_err_effect ef;

		fc_rdma_err_effect(err, FC_RDMA_SITE_LOCAL, &ef);
		wr_fail(q, w, 0, ef.req_status, 0);
		wr_finish(d, q, w);
		return 0;
	}
	qp_pump(d, q);
	return 0;
}

int fc_rdma_post_recv(struct fc_rdma *d, uint32_t qpn, const struct fc_rdma_recv_wr *wr)
{
	struct qp *q = qp_get(d, qpn);
	int rc;

	if (!q || !has_rq(q) || q->state == FC_RDMA_QPS_RESET)
		return -EINVAL;
	rc = rq_post(&q->rq, wr);
	if (!rc && q->state == FC_RDMA_QPS_ERR)
		rq_flush(d, q);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* requester: segments out                                                   */

enum { ISSUED = 0, BLOCKED = 1 };

/* The plan of w (seg.h), from the one-entry cache. Returns the segment count or the
 * negative error of fc_seg_plan; *next gets the RMSN after the op. */
static int plan_of(struct fc_rdma *d, struct qp *q, const struct swqe *w, uint32_t *next)
{
	struct fc_seg_req r;
	uint32_t slot = (uint32_t)(q - d->qp), nx = 0;
	int n;

	if (d->plan_qp == slot && d->plan_seq == w->seq)
		return (int)d->plan_n;
	seg_req_of(d, q, &w->wr, w->rmsn, &r);
	n = fc_seg_plan(&r, d->plan, d->plan_cap, &nx);
	if (n < 0)
		return n;
	d->plan_qp = slot;
	d->plan_seq = w->seq;
	d->plan_n = (uint32_t)n;
	if (next)
		*next = nx;
	return n;
}

/* Assign w its RMSN (8.3.2: two counters, send/write-imm and read/atomic) and count its
 * transactions. */
static void wr_start(struct fc_rdma *d, struct qp *q, struct swqe *w)
{
	uint32_t next = 0;
	int n;

	w->state = SW_ACTIVE;
	if (is_atomic_op(w->wr.opcode)) {
		w->rmsn = q->rmsn_rd++;
		w->nseg = 1;
		return;
	}
	w->rmsn = w->wr.opcode == FC_RDMA_WR_READ ? q->rmsn_rd : q->rmsn_msg;
	d->plan_qp = NONE;
	n = plan_of(d, q, w, &next);
	if (n <= 0) { /* cannot happen: check_wr ran fc_seg_count */
		w->nseg = 0;
		wr_fail(q, w, 0, FC_WC_GENERAL_ERR, 0);
		return;
	}
	w->nseg = (uint32_t)n;
	if (w->wr.opcode == FC_RDMA_WR_READ)
		q->rmsn_rd = next;
	else
		q->rmsn_msg = next;
}

/* RBTH + AtomicETH / MaskedAtomicETH + SETH + STETH of an atomic WR (8.1.3). */
static void atomic_hdrs(const struct qp *q, const struct swqe *w, struct fc_rdma_hdrs *h)
{
	static const uint8_t op[] = {
		[FC_RDMA_WR_CMP_SWAP] = FC_RDMA_CMP_SWAP,
		[FC_RDMA_WR_FETCH_ADD] = FC_RDMA_FETCH_ADD,
		[FC_RDMA_WR_MASKED_CMP_SWAP] = FC_RDMA_MASKED_CMP_SWAP,
		[FC_RDMA_WR_MASKED_FETCH_ADD] = FC_RDMA_MASKED_FETCH_ADD,
	};
	const struct fc_rdma_send_wr *wr = &w->wr;
	int cmp = wr->opcode == FC_RDMA_WR_CMP_SWAP || wr->opcode == FC_RDMA_WR_MASKED_CMP_SWAP;

	memset(h, 0, sizeof(*h));
	h->opcode = FC_RDMA_OPCODE(qp_class(q), op[wr->opcode]);
	if (q->type == FC_RDMA_QPT_XRC_INI)
		h->xrc_srq = wr->xrc_remote_srq;
	h->atomic.va = wr->remote_addr;
	h->atomic.rkey = wr->rkey;
	h->atomic.swap_add = cmp ? wr->swap : wr->compare_add;
	h->atomic.compare = cmp ? wr->compare_add : 0;
	if (wr->opcode == FC_RDMA_WR_MASKED_CMP_SWAP) {
		h->atomic.swap_add_mask = wr->swap_mask;
		h->atomic.compare_mask = wr->compare_add_mask;
	} else if (wr->opcode == FC_RDMA_WR_MASKED_FETCH_ADD) {
		h->atomic.swap_add_mask = wr->compare_add_mask;
	}
	h->rmsn = w->rmsn;
	h->steth.va = wr->sgl[0].addr;
	h->steth.lkey = wr->sgl[0].lkey;
}

/* len bytes of w's gather list from entry sge, byte off, through the MR table: copied to
 * dst, or only checked when dst is NULL. Returns 0 or -FC_RDMA_E*. */
static int gather(const struct fc_rdma *d, const struct qp *q, const struct swqe *w,
		  uint32_t sge, uint32_t off, uint32_t len, uint8_t *dst)
{
	uint32_t i = sge, done = 0;

	while (off && i < w->wr.num_sge && off >= w->sge[i].len) { /* skip to the offset */
		off -= w->sge[i].len;
		i++;
	}
	while (done < len && i < w->wr.num_sge) {
		const struct fc_sge *g = &w->sge[i];
		uint32_t n = g->len - off < len - done ? g->len - off : len - done;
		void *host;
		int err;

		if (n) {
			err = fc_mr_check_local(d->mrs, q->pd, g->lkey, g->addr + off, n, 0, &host);
			if (err)
				return err;
			if (dst)
				memcpy(dst + done, host, n);
		}
		done += n;
		i++;
		off = 0;
	}
	return 0;
}

static uint32_t rec_alloc(struct fc_rdma *d, struct qp *q)
{
	uint32_t i = q->rec_free;

	if (i == NONE)
		return NONE;
	q->rec_free = q->rec[i].next;
	q->rec[i].used = 1;
	q->rec[i].gen = ++d->rec_gen;
	return i;
}

static void rec_release(struct qp *q, uint32_t i)
{
	struct txrec *r = &q->rec[i];

	conn_unref(r->c);
	r->used = 0;
	r->next = q->rec_free;
	q->rec_free = i;
}

static uint64_t cookie_of(const struct fc_rdma *d, const struct qp *q, uint32_t i)
{
	return (uint64_t)(q - d->qp) << 48 | (uint64_t)q->rec[i].gen << 16 | i;
}

static int consumes_wqe(uint8_t op)
{
	return is_send_op(op) || op == FC_RDMA_WR_WRITE_IMM;
}

/* Build segment k of w in d->pkt; *len gets its payload (push) or pull length. A push's
 * data is not copied here: its local keys are checked, only the headers are built, and
 * *glen gets the bytes txn will ask for through on_gather when the packet is encoded
 * (data + pad, one copy from the registered memory into the frame). On a local key
 * failure of the last packet of a consuming message the packet goes out empty with RBTH
 * CE (8.2) so the responder completes its WQE in error; any other failed segment is not
 * sent. Returns the length of what is in d->pkt, 0 (not sent), or -errno. */
static int build_seg(struct fc_rdma *d, struct qp *q, struct swqe *w, uint32_t k,
		     struct fc_rdma_hdrs *h, uint32_t *len, uint32_t *glen)
{
	const struct fc_seg *s = NULL;
	uint32_t hl;
	int err = 0, n;

	if (is_atomic_op(w->wr.opcode)) {
		atomic_hdrs(q, w, h);
		*len = 8;
	} else {
		if (plan_of(d, q, w, NULL) <= (int)k)
			return -EINVAL;
		s = &d->plan[k];
		*h = s->hdr;
		*len = s->len;
	}
	h->dqp = w->dqp;
	h->sn = w->c->tx_sn;
	if (q->type == FC_RDMA_QPT_UD) {
		h->deth.qkey = w->qkey;
		h->deth.src_qp = q->num;
	}
	if (fc_rdma_opcode_falcon_type(h->opcode) != FC_PKT_PUSH_DATA)
		return fc_rdma_encode(h, NULL, 0, d->pkt, d->pkt_cap);
	hl = (uint32_t)fc_rdma_hdr_len(h->opcode);
	if (*len)
		err = gather(d, q, w, s->sge, s->sge_offset, *len, NULL);
	if (err) {
		struct fc_rdma_err_effect ef;

		fc_rdma_err_effect(err, FC_RDMA_SITE_LOCAL, &ef);
		wr_fail(q, w, k, ef.req_status, 0);
		if (k + 1 < w->nseg || !consumes_wqe(w->wr.opcode))
			return 0;
		h->ce = true;
		*len = 0;
		h->reth.len = 0;
	}
	/* the payload's place is left as it is: headers and pad only */
	n = fc_rdma_encode(h, d->pkt + hl, *len, d->pkt, d->pkt_cap);
	if (n < 0)
		return n;
	*glen = (uint32_t)n - hl;
	return (int)hl;
}

static void seg_done(struct fc_rdma *d, struct qp *q, uint32_t ri, uint8_t status,
		     uint32_t vendor);

/* Pull Data bytes a pull of w expects (ULP headers included, 8.1.3): READ Response Only
 * with the pull's bytes padded to 4, or an ATOMIC Response. */
static uint32_t resp_len_of(const struct swqe *w, uint32_t len)
{
	if (is_atomic_op(w->wr.opcode))
		return (uint32_t)fc_rdma_hdr_len(FC_RDMA_OPCODE(FC_RDMA_CLASS_RC,
								FC_RDMA_ATOMIC_RESP));
	return (uint32_t)fc_rdma_hdr_len(FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_READ_RESP_ONLY)) +
	       ((len + 3) & ~3u);
}

/* Hand segment k of w to txn. Returns ISSUED or BLOCKED (no record, -EAGAIN). */
static int issue_seg(struct fc_rdma *d, struct qp *q, struct swqe *w, uint32_t k)
{
	struct fc_rdma_hdrs h;
	struct conn *c = w->c;
	uint32_t ri, len = 0, glen = 0;
	struct txrec *r;
	int n, rc, pull;

	ri = rec_alloc(d, q);
	if (ri == NONE)
		return BLOCKED;
	n = build_seg(d, q, w, k, &h, &len, &glen);
	r = &q->rec[ri];
	r->c = c;
	conn_ref(c);
	r->wseq = w->seq;
	r->seg = k;
	r->sn = c->tx_sn;
	r->len = len;
	r->op = h.opcode & 0x1F;
	r->sink_va = h.steth.va;
	r->sink_lkey = h.steth.lkey;
	if (!is_atomic_op(w->wr.opcode) && k < w->nseg && glen) {
		r->g_sge = d->plan[k].sge;
		r->g_off = d->plan[k].sge_offset;
	}
	pull = r->pull = fc_rdma_opcode_falcon_type(h.opcode) == FC_PKT_PULL_REQ;
	w->issued++;
	w->outstanding++;
	q->outstanding++;
	if (n <= 0) { /* a local failure (already recorded) or an internal error */
		seg_done(d, q, ri, n ? FC_WC_GENERAL_ERR : FC_WC_SUCCESS, 0);
		return ISSUED;
	}
	if (pull)
		rc = fc_txn_pull(c->t, d->pkt, (uint32_t)n, resp_len_of(w, len), cookie_of(d, q, ri),
				 d->now, NULL);
	else
		rc = fc_txn_push_sg(c->t, d->pkt, (uint32_t)n, glen, cookie_of(d, q, ri), d->now,
				    NULL);
	if (rc == -EAGAIN) {
		w->issued--;
		w->outstanding--;
		q->outstanding--;
		rec_release(q, ri);
		d->cnt.eagain++;
		return BLOCKED;
	}
	if (rc == 0) {
		c->tx_sn++;
		if (pull)
			d->cnt.tx_pull++;
		else
			d->cnt.tx_push++;
	} else if (rc != FC_TXN_REJECTED) { /* -EPIPE: the connection is dead */
		seg_done(d, q, ri, rc == -EPIPE ? FC_WC_RETRY_EXC_ERR : FC_WC_GENERAL_ERR, 0);
	}
	return ISSUED;
}

/* Weakly ordered fences (rdma.h): may segment k of w go now? */
static int fenced(struct qp *q, const struct swqe *w, uint32_t k)
{
	if (q->order != FC_RDMA_ORDER_WEAK)
		return 0;
	if ((q->fence_next || w->wr.opcode == FC_RDMA_WR_WRITE_IMM) && q->outstanding)
		return 1;
	if (is_send_op(w->wr.opcode) && w->nseg > 1 && k + 1 == w->nseg && w->outstanding)
		return 1;
	q->fence_next = 0;
	return 0;
}

/* Issue what w may send now. Returns BLOCKED when the pump must stop here. */
static int issue_wr(struct fc_rdma *d, struct qp *q, struct swqe *w)
{
	uint64_t seq = w->seq;

	while (w->issued < w->nseg) {
		if (fenced(q, w, w->issued) || issue_seg(d, q, w, w->issued) == BLOCKED)
			return BLOCKED;
		if (q->state != FC_RDMA_QPS_RTS)
			return BLOCKED;
		if (w->seq != seq || w->state != SW_ACTIVE)
			return ISSUED;
	}
	if (q->order == FC_RDMA_ORDER_WEAK && w->wr.opcode == FC_RDMA_WR_WRITE_IMM)
		q->fence_next = 1;
	return ISSUED;
}

static void pump_once(struct fc_rdma *d, struct qp *q)
{
	while (q->state == FC_RDMA_QPS_RTS && q->sq_issue != q->sq_tail) {
		struct swqe *w = sq_at(q, q->sq_issue);

		if (w->state != SW_POSTED && w->state != SW_ACTIVE) {
			q->sq_issue++;
			continue;
		}
		if (q->err_stop && w->seq > q->err_seq)
			return; /* 6.3 verbs: nothing after a failed WR starts */
		if (w->state == SW_POSTED)
			wr_start(d, q, w);
		if (issue_wr(d, q, w) == BLOCKED)
			return;
		if (w->issued == w->nseg)
			q->sq_issue++;
	}
}

static void qp_pump(struct fc_rdma *d, struct qp *q)
{
	if (q->pumping) {
		q->pump_again = 1;
		return;
	}
	q->pumping = 1;
	do {
		q->pump_again = 0;
		pump_once(d, q);
	} while (q->pump_again && q->used);
	q->pumping = 0;
}

/* ------------------------------------------------------------------------ */
/* requester: completions in                                                 */

/* The WR of sequence number seq if it is still waiting for its transactions. */
static struct swqe *wr_by_seq(const struct qp *q, uint64_t seq)
{
	struct swqe *w;

	if (seq < q->sq_head || seq >= q->sq_tail)
		return NULL;
	w = sq_at(q, seq);
	return w->seq == seq && w->state == SW_ACTIVE ? w : NULL;
}

/* Record a failed segment: the WR's status is that of its failed segment with the
 * highest index (the responder's final verdict rides on a message's last packet). */
static void wr_fail(struct qp *q, struct swqe *w, uint32_t seg, uint8_t status, uint32_t vendor)
{
	if (w->err_seg < 0 || (int32_t)seg >= w->err_seg) {
		w->err_seg = (int32_t)seg;
		w->status = status;
		w->vendor = vendor;
	}
	if (q->mode == FC_RDMA_MODE_VERBS && (!q->err_stop || w->seq < q->err_seq)) {
		q->err_stop = 1;
		q->err_seq = w->seq;
	}
}

/* Emit what may be emitted: in SQ order (STRONG, WEAK: 6.4 in-order completions), or
 * at once (UNORDERED). A failed WR in verbs mode takes the QP to the error state. */
static void sq_drain(struct fc_rdma *d, struct qp *q)
{
	while (q->sq_head != q->sq_tail) {
		struct swqe *w = sq_at(q, q->sq_head);
		uint8_t err = q->state == FC_RDMA_QPS_ERR;

		if (w->state == SW_DONE && (q->order != FC_RDMA_ORDER_NONE || err)) {
			q->sq_head++;
			swqe_emit(d, q, w);
			if (!err && q->state == FC_RDMA_QPS_ERR)
				return; /* the CQ overflowed: everything was flushed */
			if (w->status != FC_WC_SUCCESS && q->mode == FC_RDMA_MODE_VERBS) {
				qp_to_err(q, d);
				return;
			}
			continue;
		}
		if (w->state != SW_EMITTED)
			break;
		q->sq_head++;
	}
	if (q->sq_issue < q->sq_head)
		q->sq_issue = q->sq_head;
}

static void wr_finish(struct fc_rdma *d, struct qp *q, struct swqe *w)
{
	swqe_settle(w);
	if (q->order == FC_RDMA_ORDER_NONE && q->state != FC_RDMA_QPS_ERR)
		swqe_emit(d, q, w);
	sq_drain(d, q);
}

/* Transaction ri is over with status. */
static void seg_done(struct fc_rdma *d, struct qp *q, uint32_t ri, uint8_t status,
		     uint32_t vendor)
{
	struct txrec *r = &q->rec[ri];
	uint64_t wseq = r->wseq;
	uint32_t seg = r->seg;
	struct swqe *w;

	rec_release(q, ri);
	q->outstanding--;
	w = wr_by_seq(q, wseq);
	if (w) {
		w->outstanding--;
		if (status != FC_WC_SUCCESS)
			wr_fail(q, w, seg, status, vendor);
		if (w->issued == w->nseg && !w->outstanding)
			wr_finish(d, q, w);
	}
	qp_pump(d, q);
}

/* IB NAK code (ULP NACK code, mr.h) -> requester status. */
static uint8_t status_of_nak(uint8_t nak)
{
	switch (nak) {
	case FC_RDMA_NAK_INV_REQ: return FC_WC_REM_INV_REQ_ERR;
	case FC_RDMA_NAK_REM_ACCESS: return FC_WC_REM_ACCESS_ERR;
	case FC_RDMA_NAK_RNR: return FC_WC_RNR_RETRY_EXC_ERR;
	default: return FC_WC_REM_OP_ERR;
	}
}

/* Falcon completion code (section 11) of a failed transaction -> requester status. */
static uint8_t status_of_cmpl(const struct fc_txn_cmpl *c, uint32_t *vendor)
{
	*vendor = c->code | (uint32_t)c->ulp_code << 8;
	switch (c->code) {
	case FC_CMPL_TARGET_NACK_CIE:
	case FC_CMPL_TARGET_NACK_NRE:
		if (c->kind == FC_TXN_PULL && !c->ulp_code)
			return FC_WC_REM_OP_ERR; /* zero-length Pull Data (8.5.3.5) */
		return status_of_nak(c->ulp_code);
	case FC_CMPL_TARGET_NACK_CID:
		return FC_WC_REM_INV_REQ_ERR;
	case FC_CMPL_LOCAL_TO:
	case FC_CMPL_DEAD_CONN:
		return FC_WC_RETRY_EXC_ERR;
	case FC_CMPL_OP_ERR:
	case FC_CMPL_REMOTE_ERR:
		return FC_WC_REM_OP_ERR;
	default:
		return FC_WC_GENERAL_ERR;
	}
}

static uint32_t be32_of(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Is the Pull Data h the answer to record r of QP q, arrived on connection cn? 0 yes,
 * 1 not ours (malformed or mismatched), 2 the 6.9 CID check failed. */
static int resp_matches(const struct fc_rdma *d, const struct qp *q, const struct txrec *r,
			const struct conn *cn, const struct fc_rdma_hdrs *h)
{
	uint8_t want = r->op == FC_RDMA_READ_REQ ? FC_RDMA_READ_RESP_ONLY : FC_RDMA_ATOMIC_RESP;
	uint8_t op = h->opcode & 0x1F;
	const struct qp *named;

	if (h->dqp != q->num) {
		named = qp_get(d, h->dqp);
		return named && named->c && named->c != cn ? 2 : 1;
	}
	if (q->c && q->c != cn)
		return 2;
	if (want == FC_RDMA_READ_RESP_ONLY ? op < FC_RDMA_READ_RESP_FIRST ||
	    op > FC_RDMA_READ_RESP_ONLY : op != want)
		return 1;
	if ((h->opcode >> FC_RDMA_OPC_CLASS_SHIFT) != qp_class(q) || h->sn != r->sn ||
	    h->steth.va != r->sink_va || h->steth.lkey != r->sink_lkey)
		return 1;
	return 0;
}

/* Pull Data of record r (8.4.3.2): check it, place it. Returns the segment status. */
static uint8_t take_response(struct fc_rdma *d, struct qp *q, const struct txrec *r,
			     const struct conn *cn, const struct fc_txn_cmpl *c, uint32_t *vendor)
{
	struct fc_rdma_hdrs h;
	struct fc_rdma_err_effect ef;
	uint64_t orig;
	void *host;
	int m, err;

	if (fc_rdma_decode(c->data, c->len, FC_PKT_PULL_DATA, &h) < 0 ||
	    (m = resp_matches(d, q, r, cn, &h)) == 1) {
		d->cnt.drop_resp_bad++;
		return FC_WC_RETRY_EXC_ERR; /* ignored: as if it never came */
	}
	if (m == 2) {
		d->cnt.drop_resp_cid++; /* 6.9: dropped, no NACK */
		return FC_WC_RETRY_EXC_ERR;
	}
	if (h.ce) { /* completed in error by the responder (rdma.h) */
		uint8_t nak = r->op == FC_RDMA_READ_REQ ?
			(h.payload_len >= ERR_RESP_LEN ? (uint8_t)be32_of(h.payload) : 0) :
			(uint8_t)h.atomic_orig;

		*vendor = FC_CMPL_ACK | (uint32_t)nak << 8;
		return status_of_nak(nak);
	}
	if (r->op == FC_RDMA_READ_REQ && h.payload_len != r->len) {
		d->cnt.drop_resp_bad++;
		return FC_WC_RETRY_EXC_ERR;
	}
	if (r->op != FC_RDMA_READ_REQ || r->len) {
		err = fc_mr_check_local(d->mrs, q->pd, r->sink_lkey, r->sink_va, r->len,
					FC_MR_LOCAL_WRITE, &host);
		if (err) {
			fc_rdma_err_effect(err, FC_RDMA_SITE_LOCAL, &ef);
			return ef.req_status;
		}
		if (r->op == FC_RDMA_READ_REQ) {
			memcpy(host, h.payload, r->len);
		} else {
			orig = h.atomic_orig; /* host order, as atomic.h keeps the word */
			memcpy(host, &orig, sizeof(orig));
		}
	}
	return FC_WC_SUCCESS;
}

/* The record a txn cookie names (cookie_of), if it is still the one that cookie was
 * made for: otherwise NULL and *qp untouched. */
static struct txrec *rec_of_cookie(struct fc_rdma *d, const struct conn *cn, uint64_t cookie,
				   struct qp **qp)
{
	uint32_t slot = (uint32_t)(cookie >> 48), ri = (uint32_t)(cookie & 0xFFFF);
	uint32_t gen = (uint32_t)(cookie >> 16);
	struct txrec *r;

	if (slot >= d->cfg.max_qps || !d->qp[slot].used || ri >= d->qp[slot].nrec)
		return NULL;
	r = &d->qp[slot].rec[ri];
	if (!r->used || r->gen != gen || r->c != cn)
		return NULL;
	*qp = &d->qp[slot];
	return r;
}

/* txn encodes a packet of one of our pushes: its data goes from the registered memory
 * straight into the frame (one copy per byte), then the pad. Memory that went away since
 * the WR was posted (verbs: a user error) or a WR flushed meanwhile gives zeros. */
static void on_gather(void *ctx, struct fc_txn *t, uint64_t cookie, uint32_t off, void *dst,
		      uint32_t len)
{
	struct conn *cn = ctx;
	struct fc_rdma *d = cn->d;
	struct qp *q = NULL;
	struct txrec *r = rec_of_cookie(d, cn, cookie, &q);
	const struct swqe *w = r ? wr_by_seq(q, r->wseq) : NULL;
	uint32_t data = r && off < r->len ? r->len - off : 0;

	(void)t;
	if (data > len)
		data = len;
	if (data && (!w || gather(d, q, w, r->g_sge, r->g_off + off, data, dst))) {
		memset(dst, 0, data);
		d->cnt.gather_lost++;
	}
	memset((uint8_t *)dst + data, 0, len - data); /* the pad */
}

static void on_complete(void *ctx, struct fc_txn *t, const struct fc_txn_cmpl *c)
{
	struct conn *cn = ctx;
	struct fc_rdma *d = cn->d;
	uint32_t slot = (uint32_t)(c->cookie >> 48), ri = (uint32_t)(c->cookie & 0xFFFF);
	uint32_t gen = (uint32_t)(c->cookie >> 16), vendor = 0;
	struct qp *q;
	struct txrec *r;
	uint8_t st;

	(void)t;
	if (slot >= d->cfg.max_qps || !d->qp[slot].used || ri >= d->qp[slot].nrec) {
		d->cnt.stale_cmpl++;
		return;
	}
	q = &d->qp[slot];
	r = &q->rec[ri];
	if (!r->used || r->gen != gen || r->c != cn) {
		d->cnt.stale_cmpl++;
		return;
	}
	if (c->code == FC_CMPL_ACK && r->pull && !wr_by_seq(q, r->wseq))
		st = FC_WC_SUCCESS; /* its WR was flushed: the data goes nowhere */
	else if (c->code == FC_CMPL_ACK)
		st = r->pull ? take_response(d, q, r, cn, c, &vendor) : FC_WC_SUCCESS;
	else
		st = status_of_cmpl(c, &vendor);
	seg_done(d, q, ri, st, vendor);
}

/* ------------------------------------------------------------------------ */
/* responder: answers                                                        */

struct req_ctx {
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
	void *host;
	int n = 0, rc, err;

	if (src->kind == SRC_READ && src->len) {
		err = fc_mr_check_remote(d->mrs, src->pd, src->rkey, src->va, src->len,
					 FC_MR_REMOTE_READ, &host);
		if (err) {
			struct fc_rdma_err_effect ef = { .nak = FC_RDMA_NAK_REM_OP };

			fc_rdma_err_effect(err, FC_RDMA_SITE_RKEY, &ef);
			word[3] = ef.nak;
			hh.ce = true;
			payload = word;
			plen = ERR_RESP_LEN;
		} else {
			payload = host;
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

	a->rsn = rsn;
	a->resp_len = resp_len;
	a->h = *h;
	a->src = *src;
	c->d->dq_total++;
	c->d->cnt.pull_deferred++;
}

/* Answer the pull being handled (8.5.3.2): accept it (the connection goes on: a target
 * must not hold an ordered connection up over Pull Data room, the peer's pushes behind
 * it pin its data window), then send its Pull Data, or keep it in the room on_request
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
		qp_to_err(q, d); /* bound reached: the pair cannot keep its count */
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

	rwqe_wc(w, q->num, FC_WC_SUCCESS, &wc);
	w->state = RW_EMITTED;
	cq_push(d, cqn, &wc, q);
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
	void *host;
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
		void *host;

		if (hi <= lo)
			continue;
		err = fc_mr_check_local(x->d->mrs, x->rpd, w->sge[i].lkey,
					w->sge[i].addr + (lo - pos), hi - lo, FC_MR_LOCAL_WRITE,
					&host);
		if (err)
			return err;
		pc[(*np)++] = (struct piece){ host, (uint32_t)(hi - lo), (uint32_t)(lo - off) };
	}
	return 0;
}

static void scatter_write(const struct piece *pc, uint32_t np, const uint8_t *src)
{
	for (uint32_t i = 0; i < np; i++)
		memcpy(pc[i].host, src + pc[i].src, pc[i].n);
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
	if (!w->err)
		scatter_write(pc, np, h->payload);
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
	if (rq->head == rq->tail) {
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
	else if ((err = scatter_check(x, w, 0, len, pc, &np)))
		rwqe_err(w, err, FC_RDMA_SITE_RECV);
	else
		scatter_write(pc, np, x->h.payload);
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

/* A WRITE packet (8.3.1: RETH per packet). A WRITE with Immediate also takes a
 * receive WQE after every packet of the message passed its R_Key check. */
static void t_write(const struct req_ctx *x)
{
	struct qp *q = x->q;
	const struct fc_rdma_hdrs *h = &x->h;
	uint8_t op = x->op;
	int imm = op == FC_RDMA_WRITE_LAST_IMM || op == FC_RDMA_WRITE_ONLY_IMM, err = 0;
	uint32_t len = (uint32_t)h->payload_len;
	void *host = NULL;
	struct rwqe *w = NULL;

	if (op == FC_RDMA_WRITE_FIRST || op == FC_RDMA_WRITE_ONLY || op == FC_RDMA_WRITE_ONLY_IMM) {
		q->w_bytes = 0;
		q->w_err = 0;
	}
	if (h->ce) { /* the requester aborted the message: nothing consumed */
		if (imm)
			skip_rmsn(x->d, x, h->rmsn);
		ans_accept(x);
		return;
	}
	if (h->reth.len != len) { /* 6.7: a packet's RETH describes that packet */
		if (!q->w_err)
			q->w_err = -FC_RDMA_EBOUNDS;
		if (imm)
			skip_rmsn(x->d, x, h->rmsn);
		ans_nak(x, FC_RDMA_NAK_INV_REQ);
		return;
	}
	if (len) /* IB C9-88: a zero-length WRITE checks no R_Key */
		err = fc_mr_check_remote(x->d->mrs, x->pd, h->reth.rkey, h->reth.va, len,
					 FC_MR_REMOTE_WRITE, &host);
	if (!err && imm && q->w_err)
		err = q->w_err; /* an earlier packet of this message failed */
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
	if (len)
		memcpy(host, h->payload, len);
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
	uint64_t orig = 0;
	void *host = NULL;
	int err, cmp = x->op == FC_RDMA_CMP_SWAP || x->op == FC_RDMA_MASKED_CMP_SWAP;

	err = fc_mr_check_remote(x->d->mrs, x->pd, h->atomic.rkey, h->atomic.va, 8,
				 FC_MR_REMOTE_ATOMIC, &host);
	if (!err && (h->atomic.va & 7))
		err = -FC_RDMA_EALIGN;
	if (!err && cmp)
		err = fc_atomic_masked_cmp_swap(host, h->atomic.compare, h->atomic.compare_mask,
						h->atomic.swap_add, h->atomic.swap_add_mask, &orig);
	else if (!err)
		err = fc_atomic_masked_fetch_add(host, h->atomic.swap_add,
						 h->atomic.swap_add_mask, &orig);
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
	struct req_ctx x = { .d = d, .c = c, .r = r, .room = room };
	int push = r->kind == FC_TXN_PUSH;

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

/* Send kept answers, oldest first per connection, while there is room. */
static void run_deferred(struct fc_rdma *d)
{
	if (d->running_deferred || !d->dq_total)
		return;
	d->running_deferred = 1;
	for (uint32_t i = 0; i < d->cfg.max_conns; i++) {
		struct conn *c = &d->conn[i];

		while (c->used && c->dq_count && pull_room(d)) {
			struct dans a = c->dq[c->dq_head];

			c->dq_head = (c->dq_head + 1) % c->dq_cap;
			c->dq_count--;
			d->dq_total--;
			d->pend_reserved++;
			emit_answer(d, c, a.rsn, a.resp_len, &a.h, &a.src);
			d->pend_reserved--;
		}
	}
	d->running_deferred = 0;
}

static void on_request(void *ctx, struct fc_txn *t, const struct fc_txn_req *r)
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
	run_deferred(d); /* the room a nested answer reserved may be free again */
}

/* ------------------------------------------------------------------------ */
/* txn callbacks: credits, a dead connection                                 */

/* Held Pull Data of c, oldest first, while txn takes it. */
static void pend_retry(struct fc_rdma *d, struct conn *c)
{
	if (c->retrying || !d->pend_used)
		return;
	c->retrying = 1;
	for (;;) {
		struct pend *p = NULL;
		int rc;

		for (uint32_t i = 0; i < d->cfg.pending_resp; i++)
			if (d->pend[i].used && d->pend[i].c == c && (!p || d->pend[i].seq < p->seq))
				p = &d->pend[i];
		if (!p)
			break;
		rc = fc_txn_pull_data(c->t, p->rsn, p->len ? p->buf : NULL, p->len, d->now);
		if (rc == -EAGAIN)
			break;
		if (!rc)
			d->cnt.tx_resp++;
		p->used = 0;
		d->pend_used--;
	}
	c->retrying = 0;
}

static void on_credits(void *ctx, struct fc_txn *t)
{
	struct conn *c = ctx;

	(void)t;
	pend_retry(c->d, c);
	run_deferred(c->d);
	if (c->qp)
		qp_pump(c->d, c->qp);
}

static void on_dead(void *ctx, struct fc_txn *t, int reason)
{
	struct conn *c = ctx;

	(void)reason;
	c->dead = 1;
	async_push(c->d, FC_RDMA_EV_CONN_DEAD, fc_txn_local_cid(t));
	c->d->dq_total -= c->dq_count; /* their pulls are gone with the connection */
	c->dq_count = 0;
	pend_drop_conn(c->d, c);
	run_deferred(c->d);
	if (c->qp)
		qp_to_err(c->qp, c->d);
}

static const struct fc_txn_ops rdma_txn_ops = {
	.complete = on_complete, .request = on_request, .credits = on_credits, .dead = on_dead,
	.gather = on_gather,
};

/* ------------------------------------------------------------------------ */
/* the I/O shell's side                                                      */

int fc_rdma_rx(struct fc_rdma *d, const void *pkt, size_t len, uint64_t tx_ns, uint64_t now_ns)
{
	struct fc_rx_meta m = { .tx_ns = tx_ns, .now_ns = now_ns };

	return fc_rdma_rx_meta(d, pkt, len, &m);
}

int fc_rdma_rx_meta(struct fc_rdma *d, const void *pkt, size_t len, const struct fc_rx_meta *m)
{
	set_now(d, m->now_ns);
	return fc_txn_engine_rx_meta(d->e, pkt, len, m, NULL);
}

int fc_rdma_poll_tx(struct fc_rdma *d, uint64_t now_ns, void *buf, size_t cap,
		    struct fc_txn **from)
{
	set_now(d, now_ns);
	return fc_txn_engine_poll_tx(d->e, now_ns, buf, cap, from);
}

uint64_t fc_rdma_next_deadline(const struct fc_rdma *d)
{
	return fc_txn_engine_next_deadline(d->e);
}

void fc_rdma_on_timer(struct fc_rdma *d, uint64_t now_ns)
{
	set_now(d, now_ns);
	fc_txn_engine_on_timer(d->e, now_ns);
}

const struct fc_rdma_counters *fc_rdma_counters(const struct fc_rdma *d) { return &d->cnt; }

/* ------------------------------------------------------------------------ */
/* the layer                                                                 */

static int cfg_ok(const struct fc_rdma_cfg *c)
{
	return c->mtu_bytes >= 64 && !(c->mtu_bytes & 3) &&
	       c->mtu_bytes + FC_RDMA_HDR_MAX <= FC_FALCON_PUSH_MAX && c->max_msg_bytes &&
	       c->max_msg_bytes <= FC_SEG_MSG_MAX && c->max_qps && c->max_qps <= TBL_MAX &&
	       c->max_cqs && c->max_cqs <= TBL_MAX && c->max_srqs && c->max_srqs <= TBL_MAX &&
	       c->max_ahs && c->max_ahs <= TBL_MAX && c->max_conns && c->max_conns <= TBL_MAX &&
	       c->async_depth && c->async_depth <= TBL_MAX && c->pending_resp &&
	       c->pending_resp <= 4096;
}

struct fc_rdma *fc_rdma_new(const struct fc_rdma_cfg *cfg, struct fc_txn_engine *e,
			    struct fc_mr_table *mrs)
{
	struct fc_rdma *d;

	if (!cfg || !e || !mrs || !cfg_ok(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		goto nomem;
	d->cfg = *cfg;
	d->e = e;
	d->mrs = mrs;
	d->qp_bits = bits_for(cfg->max_qps);
	d->cq_bits = bits_for(cfg->max_cqs);
	d->srq_bits = bits_for(cfg->max_srqs);
	d->ah_bits = bits_for(cfg->max_ahs);
	d->plan_cap = cfg->max_msg_bytes / cfg->mtu_bytes + FC_SEG_SGE_MAX + 1;
	d->plan_qp = NONE;
	d->pkt_cap = cfg->mtu_bytes + FC_RDMA_HDR_MAX;
	d->qp = calloc(cfg->max_qps, sizeof(*d->qp));
	d->cq = calloc(cfg->max_cqs, sizeof(*d->cq));
	d->srq = calloc(cfg->max_srqs, sizeof(*d->srq));
	d->ah = calloc(cfg->max_ahs, sizeof(*d->ah));
	d->conn = calloc(cfg->max_conns, sizeof(*d->conn));
	d->pend = calloc(cfg->pending_resp, sizeof(*d->pend));
	d->ev = calloc(cfg->async_depth, sizeof(*d->ev));
	d->plan = calloc(d->plan_cap, sizeof(*d->plan));
	d->pkt = malloc(d->pkt_cap);
	d->resp = malloc(d->pkt_cap);
	if (!d->qp || !d->cq || !d->srq || !d->ah || !d->conn || !d->pend || !d->ev ||
	    !d->plan || !d->pkt || !d->resp)
		goto nomem;
	for (uint32_t i = 0; i < cfg->pending_resp; i++)
		if (!(d->pend[i].buf = malloc(d->pkt_cap)))
			goto nomem;
	return d;
nomem:
	fc_rdma_free(d);
	errno = ENOMEM;
	return NULL;
}

void fc_rdma_free(struct fc_rdma *d)
{
	if (!d)
		return;
	for (uint32_t i = 0; d->qp && i < d->cfg.max_qps; i++)
		if (d->qp[i].used)
			fc_rdma_qp_destroy(d, d->qp[i].num);
	for (uint32_t i = 0; d->conn && i < d->cfg.max_conns; i++)
		if (d->conn[i].used) {
			fc_txn_conn_free(d->conn[i].t);
			free(d->conn[i].dq);
		}
	for (uint32_t i = 0; d->cq && i < d->cfg.max_cqs; i++)
		free(d->cq[i].ring);
	for (uint32_t i = 0; d->srq && i < d->cfg.max_srqs; i++)
		rq_fini(&d->srq[i].rq);
	for (uint32_t i = 0; d->pend && i < d->cfg.pending_resp; i++)
		free(d->pend[i].buf);
	free(d->qp);
	free(d->cq);
	free(d->srq);
	free(d->ah);
	free(d->conn);
	free(d->pend);
	free(d->ev);
	free(d->plan);
	free(d->pkt);
	free(d->resp);
	free(d);
}
