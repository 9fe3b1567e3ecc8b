/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_pair.h - two nodes (daemon/node.h) set up the way a connection manager would: a
 * PD, one memory region over a host buffer, send and receive CQs per node, and pairs of
 * connected RC QPs. Shared by the node simulation test and the engine benchmark, so
 * neither keeps its own copy of the setup.
 */
#ifndef FC_NODE_PAIR_H
#define FC_NODE_PAIR_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

struct np_host {
	struct fc_node *n;
	uint8_t *mem;         /* registered: every access */
	uint64_t mem_len;
	uint64_t iova;        /* what the peer uses to address mem */
	uint32_t pd, scq, rcq;
	struct fc_mr_keys k;
	uint32_t peer;        /* the other host, as this node's peer index */
	uint32_t rand_state;
};

static inline uint32_t np_key_rand(void *ctx)
{
	struct np_host *h = ctx;

	h->rand_state = h->rand_state * 1664525u + 1013904223u;
	return h->rand_state;
}

/* Node with cfg (io, encap filled by the caller; rand set here), mem_len bytes of
 * registered memory at iova, CQs of cq_depth, the peer at peer_addr. Returns 0 or
 * -errno. */
static inline int np_host_init(struct np_host *h, struct fc_node_cfg *cfg, uint64_t mem_len,
			       uint64_t iova, uint32_t cq_depth,
			       const struct fc_peer_addr *peer_addr, uint32_t seed)
{
	int rc;

	memset(h, 0, sizeof(*h));
	h->rand_state = seed;
	cfg->rand = np_key_rand;
	cfg->rand_ctx = h;
	h->n = fc_node_new(cfg);
	if (!h->n)
		return -errno;
	h->mem = aligned_alloc(64, (mem_len + 63) & ~63ull);
	if (!h->mem)
		return -ENOMEM;
	memset(h->mem, 0, mem_len);
	h->mem_len = mem_len;
	h->iova = iova;
	if ((rc = fc_pd_alloc(fc_node_mrs(h->n), &h->pd)) ||
	    (rc = fc_mr_reg(fc_node_mrs(h->n), h->pd, h->mem, iova, mem_len, FC_MR_ACCESS_ALL,
			    &h->k)) ||
	    (rc = fc_rdma_cq_create(fc_node_rdma(h->n), cq_depth, &h->scq)) ||
	    (rc = fc_rdma_cq_create(fc_node_rdma(h->n), cq_depth, &h->rcq)) ||
	    (rc = fc_node_peer_add(h->n, peer_addr, &h->peer)))
		return rc;
	return 0;
}

static inline void np_host_fini(struct np_host *h)
{
	fc_node_free(h->n);
	free(h->mem);
	memset(h, 0, sizeof(*h));
}

/* Connect a and b as a CM does (reserve CIDs, exchange them, open both ends) with
 * connection config base (CIDs overwritten), then create one RC QP on each end and move
 * both to RTS. Returns 0 or -errno; conn/qpn get [0] = a's, [1] = b's. */
static inline int np_connect_rc(struct np_host *a, struct np_host *b,
				const struct fc_txn_conn_cfg *base,
				const struct fc_rdma_qp_init *qp_base, struct fc_txn *conn[2],
				uint32_t qpn[2])
{
	struct np_host *h[2] = { a, b };
	uint32_t cid[2];
	int rc;

	for (int i = 0; i < 2; i++)
		if ((rc = fc_node_cid_reserve(h[i]->n, h[i]->peer, &cid[i])))
			return rc;
	for (int i = 0; i < 2; i++) {
		struct fc_txn_conn_cfg c = *base;
		struct fc_rdma_qp_init q = *qp_base;

		c.pdl.remote_cid = cid[1 - i];
		conn[i] = fc_node_conn_open(h[i]->n, cid[i], &c);
		if (!conn[i])
			return -errno;
		q.type = FC_RDMA_QPT_RC;
		q.pd = h[i]->pd;
		q.send_cq = h[i]->scq;
		q.recv_cq = h[i]->rcq;
		q.conn = conn[i];
		if ((rc = fc_rdma_qp_create(fc_node_rdma(h[i]->n), &q, &qpn[i])))
			return rc;
	}
	for (int i = 0; i < 2; i++) {
		struct fc_rdma *d = fc_node_rdma(h[i]->n);
		struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };

		if ((rc = fc_rdma_qp_modify(d, qpn[i], &at)))
			return rc;
		at.state = FC_RDMA_QPS_RTR;
		at.remote_qpn = qpn[1 - i];
		if ((rc = fc_rdma_qp_modify(d, qpn[i], &at)))
			return rc;
		at.state = FC_RDMA_QPS_RTS;
		if ((rc = fc_rdma_qp_modify(d, qpn[i], &at)))
			return rc;
	}
	return 0;
}

/* ---- an in-memory backend: two nodes joined without a network ----
 * Frames move, bytes do not: a sent frame is handed to the other node as it is and goes
 * back to its owner's pool once received. The source address of a frame is the sender's
 * (self, one byte), so the node's peer check runs. */

#define NP_FRAME_BYTES 4608u /* MTU 4096 + RDMA and Falcon headers */
#define NP_POOL 1024u

struct np_memio {
	uint8_t *mem;                     /* NP_POOL frames */
	uint32_t free_[NP_POOL], nfree;
	struct np_memio *peer;
	struct fc_peer_addr self;
	struct fc_frame inbox[NP_POOL];   /* frames sent to this side, not yet received */
	uint32_t nin;
	uint64_t pkts;
};

static inline int np_memio_init(struct np_memio *m, struct np_memio *peer, uint8_t self)
{
	memset(m, 0, sizeof(*m));
	m->mem = aligned_alloc(64, (size_t)NP_POOL * NP_FRAME_BYTES);
	if (!m->mem)
		return -ENOMEM;
	for (uint32_t i = 0; i < NP_POOL; i++)
		m->free_[m->nfree++] = NP_POOL - 1 - i;
	m->peer = peer;
	m->self.len = 1;
	m->self.bytes[0] = self;
	return 0;
}

static inline void np_memio_fini(struct np_memio *m)
{
	free(m->mem);
	m->mem = NULL;
}

static inline unsigned np_mio_alloc(void *io, struct fc_frame *f, unsigned n)
{
	struct np_memio *m = io;
	unsigned k = 0;

	while (k < n && m->nfree) {
		uint32_t i = m->free_[--m->nfree];

		f[k++] = (struct fc_frame){ .buf = m->mem + (size_t)i * NP_FRAME_BYTES,
					    .cap = NP_FRAME_BYTES, .io_handle = i };
	}
	return k;
}

static inline void np_mio_free(struct np_memio *m, const struct fc_frame *f)
{
	m->free_[m->nfree++] = (uint32_t)f->io_handle;
}

static inline unsigned np_mio_send(void *io, struct fc_frame *f, unsigned n)
{
	struct np_memio *m = io;
	unsigned k = 0;

	for (; k < n && m->peer->nin < NP_POOL; k++) {
		struct fc_frame *g = &m->peer->inbox[m->peer->nin++];

		*g = f[k];
		g->peer = &m->self;
	}
	for (unsigned i = k; i < n; i++) /* not taken: back to the pool */
		np_mio_free(m, &f[i]);
	m->pkts += k;
	return k;
}

static inline void np_mio_return(void *io, struct fc_frame *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		np_mio_free(io, &f[i]);
}

static const struct fc_io_ops np_memio_ops = {
	.name = "memory", .tx_alloc = np_mio_alloc, .tx_send = np_mio_send,
	.tx_return = np_mio_return,
};

/* Deliver what m's inbox holds to node n at now; the frames go back to the sender. */
static inline void np_memio_deliver(struct np_memio *m, struct fc_node *n, uint64_t now)
{
	uint32_t nin = m->nin;

	for (uint32_t i = 0; i < nin; i++)
		m->inbox[i].meta = (struct fc_rx_meta){ .tx_ns = now, .now_ns = now };
	fc_node_rx_batch(n, m->inbox, nin);
	for (uint32_t i = 0; i < nin; i++)
		np_mio_free(m->peer, &m->inbox[i]);
	m->nin = 0;
}

/* Run both nodes at time now until neither has anything to send or receive (at most 64
 * rounds), firing due timers. Returns the number of on_timer calls. */
static inline uint64_t np_memio_pump(struct np_host *h[2], struct np_memio io[2], uint64_t now)
{
	uint64_t fires = 0;

	for (int round = 0; round < 64; round++) {
		unsigned moved = 0;

		for (int x = 0; x < 2; x++) {
			if (fc_node_next_deadline(h[x]->n) <= now) {
				fc_node_on_timer(h[x]->n, now);
				fires++;
			}
			moved += fc_node_poll_tx(h[x]->n, now, FC_NODE_BATCH_MAX);
		}
		for (int x = 0; x < 2; x++) {
			moved += io[x].nin;
			if (io[x].nin)
				np_memio_deliver(&io[x], h[x]->n, now);
		}
		if (!moved)
			break;
	}
	return fires;
}

#endif
