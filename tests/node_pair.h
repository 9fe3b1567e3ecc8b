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

#endif
