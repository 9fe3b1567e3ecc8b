/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma_priv.h - the objects of the RDMA-over-Falcon layer, shared by its files (private).
 *
 *   rdma_layer.c  the layer, its connections, async events, the txn ops glue, I/O shell
 *   rdma_queue.c  completion queues, receive queues, SRQs, address handles
 *   rdma_qp.c     QP life, the error state, posting
 *   rdma_req.c    the requester: segments out, completions in
 *   rdma_resp.c   the responder: requests in, answers out
 *
 * Re-entrancy: txn callbacks may run inside our calls into txn (a rejected M:N push
 * completes at once; fc_txn_accept may hand out credits). Every path finishes its own
 * state changes before it calls txn, the send pump of a QP does not nest (a nested call
 * asks the running one to go round again), and after each submission the pump checks
 * that its WR is still the one it was working on.
 */
#ifndef FALCON_RDMA_PRIV_H
#define FALCON_RDMA_PRIV_H

#include <stddef.h>
#include <stdint.h>

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
	uint64_t mr_gen;           /* fc_mr_table_gen when its list passed the post check */
};

/* One transaction in flight (cookie = QP slot | generation | index). */
struct txrec {
	uint32_t gen, next;
	uint8_t used, pull, op;
	struct conn *c;
	uint64_t wseq;
	uint32_t seg, sn, len, sink_lkey;
	uint64_t sink_va;
	uint32_t g_sge, g_off;   /* push: where its data starts in the WR's rdma_gather list */
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
	uint64_t timeout_ns;    /* fc_rdma_qp_init.timeout_ns: given to the connection */
	uint64_t user;          /* fc_rdma_qp_init.user: in its async events */
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
	/* rings in caller memory (falcon/queue.h; rdma_ring.c): the engine consumes them;
	 * entries and our index are kept here, never re-read from the shared header */
	void *usq, *urq;
	uint32_t usq_mask, usq_cons, urq_mask, urq_cons;
	uint8_t ubroken;           /* a ring's producer index went wild: rings unused */
};

struct cq {
	uint32_t num, gen, nref;
	uint8_t used, error, armed, armed_sol; /* error: overflowed, for good (rdma.h) */
	uint64_t user;             /* fc_rdma_cq_set_user: in its async events */
	struct fc_rdma_wc *ring;
	uint32_t depth, head, count;
	void *uring;               /* completions go to this ring in caller memory */
	uint32_t umask, uprod;     /* its size - 1 and our producer index */
};

struct srq {
	uint32_t num, gen, nref;
	uint8_t used;
	uint8_t ubroken;        /* its ring's producer went wild: not read again */
	uint32_t pd, xrcd, cq;
	struct rq rq;
	void *uring;            /* receive WRs in caller memory (rdma_ring.c), or NULL */
	uint32_t umask, ucons;
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
	uint32_t dq_prev, dq_next; /* on the layer's list of connections with kept answers */
	uint8_t dq_listed;
	uint8_t used, ordered, dead, mn, retrying;
	uint32_t nref;             /* QPs, AHs, WRs and transactions using it */
	struct qp *qp;             /* its RC / XRC QP */
	uint32_t tx_sn, rx_last_sn;
	uint8_t rx_sn_seen;
	uint16_t src_id;           /* UD receive completions name the sender by it */
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
	uint32_t conn_hint;       /* where fc_rdma_conn_open looks for a free slot first */
	uint32_t qp_hint, cq_hint, srq_hint, ah_hint; /* the same for each table */
	struct pend *pend;
	uint64_t pend_seq;
	uint32_t pend_used;
	uint32_t pend_reserved;    /* pulls being answered: each may need a pend slot */
	uint32_t dq_total;         /* answers kept in the connections' dq */
	uint32_t dq_first, dq_last; /* connections with kept answers, in the order they got
				     * their first (indexes of conn, NONE): rdma_run_deferred
				     * visits those, not every connection */
	uint8_t running_deferred;
	uint32_t rec_gen;
	uint8_t *pkt;              /* a request being built */
	uint8_t *resp;             /* a response being built */
	uint8_t *staging;          /* a READ's source reached by copy (mr.h ops), pkt_cap */
	uint32_t pkt_cap;
	struct fc_rdma_async_event *ev;
	uint32_t ev_head, ev_count;
	struct fc_rdma_counters cnt;
};

/* numbered tables and small helpers */

static inline uint32_t bits_for(uint32_t cap)
{
	uint32_t b = 0;

	while ((1u << b) < cap)
		b++;
	return b;
}

/* Object numbers: generation above the slot bits, 24 bits in all, never 0. */
static inline uint32_t num_make(uint32_t *gen, uint32_t bits, uint32_t slot)
{
	uint32_t max = (1u << (24 - bits)) - 1;

	*gen = *gen >= max ? 1 : *gen + 1;
	return *gen << bits | slot;
}

static inline uint32_t num_slot(uint32_t num, uint32_t bits) { return num & ((1u << bits) - 1); }

static inline struct qp *qp_get(const struct fc_rdma *d, uint32_t num)
{
	uint32_t s = num_slot(num, d->qp_bits);

	if (s >= d->cfg.max_qps || !d->qp[s].used || d->qp[s].num != num)
		return NULL;
	return &d->qp[s];
}

static inline struct cq *cq_get(const struct fc_rdma *d, uint32_t num)
{
	uint32_t s = num_slot(num, d->cq_bits);

	if (s >= d->cfg.max_cqs || !d->cq[s].used || d->cq[s].num != num)
		return NULL;
	return &d->cq[s];
}

static inline struct srq *srq_get(const struct fc_rdma *d, uint32_t num)
{
	uint32_t s = num_slot(num, d->srq_bits);

	if (s >= d->cfg.max_srqs || !d->srq[s].used || d->srq[s].num != num)
		return NULL;
	return &d->srq[s];
}

static inline struct ah *ah_get(const struct fc_rdma *d, uint32_t num)
{
	uint32_t s = num_slot(num, d->ah_bits);

	if (s >= d->cfg.max_ahs || !d->ah[s].used || d->ah[s].num != num)
		return NULL;
	return &d->ah[s];
}

/* A free slot of a table of n entries of size bytes each (used: the byte at used_off
 * of an entry), looking from *hint on and moving it past the slot taken: creating N
 * objects in a row is O(N), not O(N^2) (65,536 QPs must not take minutes). Returns the
 * slot, or NONE when every one is used. */
static inline uint32_t slot_take(const void *tbl, uint32_t n, size_t size, size_t used_off,
				 uint32_t *hint)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = (*hint + i) % n;

		if (!((const uint8_t *)tbl)[(size_t)k * size + used_off]) {
			*hint = (k + 1) % n;
			return k;
		}
	}
	return NONE;
}
#define SLOT_TAKE(tbl, n, hint) \
	slot_take((tbl), (n), sizeof(*(tbl)), offsetof(__typeof__(*(tbl)), used), (hint))

/* The connection record of t if t is one of ours. */
static inline struct conn *conn_of(const struct fc_rdma *d, struct fc_txn *t)
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

static inline void set_now(struct fc_rdma *d, uint64_t now)
{
	if (now > d->now)
		d->now = now;
}

static inline int sn_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

static inline void conn_ref(struct conn *c) { c->nref++; }
static inline void conn_unref(struct conn *c) { c->nref--; }
static inline struct rwqe *rq_at(const struct rq *q, uint64_t abs) { return &q->w[abs % q->depth]; }
static inline struct swqe *sq_at(const struct qp *q, uint64_t i) { return &q->sq[i % q->sq_depth]; }
static inline int is_send_op(uint8_t op) { return op <= FC_RDMA_WR_SEND_INV; }

/* rdma_layer.c */
void rdma_async_push(struct fc_rdma *d, uint8_t type, uint32_t num, uint64_t user);
void rdma_dq_list(struct fc_rdma *d, struct conn *c);
void rdma_dq_unlist(struct fc_rdma *d, struct conn *c);

/* rdma_queue.c */
void rdma_cq_push(struct fc_rdma *d, uint32_t cqn, const struct fc_rdma_wc *wc, struct qp *q);
int rdma_rq_init(struct rq *q, uint32_t depth, uint32_t max_sge);
void rdma_rq_fini(struct rq *q);
int rdma_rq_post(struct rq *q, const struct fc_rdma_recv_wr *wr);
void rdma_rwqe_wc(const struct rwqe *w, uint32_t qpn, uint8_t st, struct fc_rdma_wc *wc);

/* rdma_qp.c */
void rdma_swqe_settle(struct swqe *w);
void rdma_swqe_emit(struct fc_rdma *d, struct qp *q, struct swqe *w);
/* The error state by an error (FC_RDMA_EV_QP_FATAL): flushes, see rdma.h. */
void rdma_qp_to_err(struct qp *q, struct fc_rdma *d);
/* Tell the I/O shell that connection c is given up (cfg.conn_dead), so its peer hears. */
void rdma_conn_gave_up(struct fc_rdma *d, struct conn *c);
/* One compare, asked several times per WR on the send path: inline. */
static inline int rdma_is_atomic_op(uint8_t op)
{
	return op >= FC_RDMA_WR_CMP_SWAP && op < FC_RDMA_WR_OPCODE_COUNT;
}
uint8_t rdma_qp_class(const struct qp *q);
void rdma_seg_req_of(const struct fc_rdma *d, const struct qp *q,
		     const struct fc_rdma_send_wr *wr, uint32_t rmsn, struct fc_seg_req *r);
int rdma_check_wr(const struct fc_rdma *d, const struct qp *q, const struct fc_rdma_send_wr *wr,
		  uint64_t *total);

/* rdma_req.c */
int rdma_gather(const struct fc_rdma *d, const struct qp *q, const struct swqe *w,
		uint32_t sge, uint32_t off, uint32_t len, uint8_t *dst);
void rdma_qp_pump(struct fc_rdma *d, struct qp *q);
void rdma_wr_fail(struct qp *q, struct swqe *w, uint32_t seg, uint8_t status, uint32_t vendor);
void rdma_wr_finish(struct fc_rdma *d, struct qp *q, struct swqe *w);
void rdma_on_gather(void *ctx, struct fc_txn *t, uint64_t cookie, uint32_t off, void *dst,
		    uint32_t len);
void rdma_on_complete(void *ctx, struct fc_txn *t, const struct fc_txn_cmpl *c);

/* rdma_ring.c */
int rdma_cq_ring_push(struct fc_rdma *d, struct cq *cq, const struct fc_rdma_wc *wc);
/* A request found its receive queue (s, else q's own) empty: take what the ring behind
 * it holds now, published after the last doorbell. */
void rdma_ring_refill(struct fc_rdma *d, struct qp *q, struct srq *s);

/* rdma_resp.c */
void rdma_run_deferred(struct fc_rdma *d);
void rdma_on_request(void *ctx, struct fc_txn *t, const struct fc_txn_req *r);

#endif
