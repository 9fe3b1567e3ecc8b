/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node.c - one Falcon endpoint: engine + connection table + encapsulation + I/O backend
 * (node.h). The glue every host of falcon needs, written once: falcond, the simulator
 * tests and the benchmarks all drive this code.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "falcon/wire.h"
#include "node.h"
#include "pdl.h"
#include "wire_err.h"
#include "wire_falcon.h"

#define SLOT_MASK (FC_NODE_CONNS_MAX - 1u)
#define NO_PEER UINT32_MAX

struct conn_slot {
	struct fc_txn *t;  /* NULL: free */
	uint32_t cid;      /* local CID while open */
	uint32_t peer;
	uint64_t remote_time; /* spec 9.2.2.2: the newest IV taken (encap->conn_check); in
			       * XDP mode the XDP entry's rx.remote_time is used instead */
	uint8_t gen;       /* bumped at every reservation of the slot */
	uint8_t reserved;  /* CID handed out, connection not open yet */
};

struct fc_node {
	struct fc_node_cfg cfg;
	struct fc_mr_table *mrs;
	struct fc_txn_engine *txn;
	struct fc_rdma *rdma;
	struct conn_slot *slot;   /* cfg.txn.max_conns */
	uint32_t free_hint;
	uint32_t nslots;          /* slots reserved or open */
	struct fc_peer_addr *peers;
	uint32_t npeers;
	struct fc_rue *rue;       /* NULL: no congestion control */
	uint64_t now_ns;          /* the time of the call being served (for the RUE) */
	uint32_t trace_cid;       /* fc_node_trace */
	fc_node_trace_fn trace_cb;
	void *trace_ctx;
	struct fc_node_counters cnt;
};

void fc_node_cfg_default(struct fc_node_cfg *c)
{
	memset(c, 0, sizeof(*c));
	fc_txn_engine_cfg_default(&c->txn);
	fc_rdma_cfg_default(&c->rdma);
	c->txn.mtu_bytes = c->rdma.mtu_bytes + FC_RDMA_HDR_MAX;
	c->rdma.max_conns = c->txn.max_conns;
	c->mr_cap = 4096;
	c->pd_cap = 256;
	c->max_peers = 64;
}

struct fc_node *fc_node_new(const struct fc_node_cfg *cfg)
{
	struct fc_node *n;
	int err = ENOMEM;

	if (!cfg || !cfg->io || !cfg->io->tx_alloc || !cfg->io->tx_send || !cfg->io->tx_return ||
	    !cfg->rand || !cfg->txn.max_conns || cfg->txn.max_conns > FC_NODE_CONNS_MAX ||
	    !cfg->max_peers ||
	    (cfg->encap && (!cfg->encap->seal || !cfg->encap->open))) {
		errno = EINVAL;
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		goto fail;
	n->cfg = *cfg;
	n->slot = calloc(cfg->txn.max_conns, sizeof(*n->slot));
	n->peers = calloc(cfg->max_peers, sizeof(*n->peers));
	if (!n->slot || !n->peers)
		goto fail;
	n->mrs = fc_mr_table_new(cfg->mr_cap, cfg->pd_cap, cfg->rand, cfg->rand_ctx);
	if (!n->mrs)
		goto fail_errno;
	n->txn = fc_txn_engine_new(&cfg->txn);
	if (!n->txn)
		goto fail_errno;
	n->rdma = fc_rdma_new(&cfg->rdma, n->txn, n->mrs);
	if (!n->rdma)
		goto fail_errno;
	if (cfg->rue && !(n->rue = fc_rue_new(cfg->rue, cfg->txn.max_conns)))
		goto fail_errno;
	n->cfg.rue = NULL; /* the caller's; not kept */
	return n;
fail_errno:
	err = errno;
fail:
	fc_node_free(n);
	errno = err;
	return NULL;
}

void fc_node_free(struct fc_node *n)
{
	if (!n)
		return;
	fc_rdma_free(n->rdma);
	fc_rue_free(n->rue);
	fc_txn_engine_free(n->txn);
	fc_mr_table_free(n->mrs);
	free(n->slot);
	free(n->peers);
	free(n);
}

struct fc_rdma *fc_node_rdma(struct fc_node *n) { return n->rdma; }
struct fc_mr_table *fc_node_mrs(struct fc_node *n) { return n->mrs; }
struct fc_txn_engine *fc_node_txn(struct fc_node *n) { return n->txn; }
const struct fc_node_counters *fc_node_counters(const struct fc_node *n) { return &n->cnt; }

/* The XDP program's entry of slot s (XDP mode), or NULL. */
static struct fc_xdp_conn *xdp_entry(const struct fc_node *n, const struct conn_slot *s)
{
	uint32_t i = (uint32_t)(s - n->slot);

	return n->cfg.xdp_conns && i < n->cfg.xdp_conns_n ? &n->cfg.xdp_conns[i] : NULL;
}

/* Where the replay check of slot s keeps the connection's remote time (9.2.2.2): in the
 * XDP entry when there is one, so that XDP's read-only check sees the same value. */
static uint64_t *remote_time_of(struct fc_node *n, struct conn_slot *s)
{
	struct fc_xdp_conn *x = xdp_entry(n, s);

	return x ? (uint64_t *)&x->rx.remote_time : &s->remote_time;
}

static int same_addr(const struct fc_peer_addr *a, const struct fc_peer_addr *b)
{
	return a->len == b->len && !memcmp(a->bytes, b->bytes, a->len);
}

/* Peers are few (one per remote daemon) and added by the CM, not per packet: a linear
 * search bounded by max_peers is fine here. */
int fc_node_peer_add(struct fc_node *n, const struct fc_peer_addr *a, uint32_t *peer)
{
	if (!a || !a->len || a->len > FC_PEER_ADDR_MAX || !peer)
		return -EINVAL;
	for (uint32_t i = 0; i < n->npeers; i++)
		if (same_addr(&n->peers[i], a)) {
			*peer = i;
			return 0;
		}
	if (n->npeers == n->cfg.max_peers)
		return -ENOSPC;
	n->peers[n->npeers] = *a;
	*peer = n->npeers++;
	return 0;
}

const struct fc_peer_addr *fc_node_peer_addr(const struct fc_node *n, uint32_t peer)
{
	return peer < n->npeers ? &n->peers[peer] : NULL;
}

/* The slot of an open connection's local CID, or NULL. O(1): the CID names the slot. */
static struct conn_slot *slot_of_cid(struct fc_node *n, uint32_t cid)
{
	uint32_t i = cid & SLOT_MASK;
	struct conn_slot *s;

	if (i >= n->cfg.txn.max_conns)
		return NULL;
	s = &n->slot[i];
	return s->t && s->cid == cid ? s : NULL;
}

static struct conn_slot *slot_of_conn(struct fc_node *n, const struct fc_txn *t)
{
	return t ? slot_of_cid(n, fc_txn_local_cid(t)) : NULL;
}

int fc_node_cid_reserve(struct fc_node *n, uint32_t peer, uint32_t *cid)
{
	uint32_t max = n->cfg.txn.max_conns;
	struct conn_slot *s = NULL;

	if ((peer >= n->npeers && peer != FC_NODE_PEER_LATER) || !cid)
		return -EINVAL;
	for (uint32_t k = 0; k < max; k++) { /* CM path, not per packet */
		struct conn_slot *x = &n->slot[(n->free_hint + k) % max];

		if (!x->t && !x->reserved) {
			s = x;
			break;
		}
	}
	if (!s)
		return -ENOSPC;
	s->gen++;
	/* a CID is 24 bits (7.2): 16 for the slot, 8 for the generation */
	s->cid = (uint32_t)s->gen << FC_NODE_CID_SLOT_BITS | (uint32_t)(s - n->slot);
	s->peer = peer;
	s->reserved = 1;
	n->nslots++;
	n->free_hint = (uint32_t)(s - n->slot) + 1;
	*cid = s->cid;
	return 0;
}

static struct conn_slot *reserved_slot(struct fc_node *n, uint32_t cid)
{
	uint32_t i = cid & SLOT_MASK;

	if (i >= n->cfg.txn.max_conns || !n->slot[i].reserved || n->slot[i].cid != cid)
		return NULL;
	return &n->slot[i];
}

int fc_node_cid_bind(struct fc_node *n, uint32_t cid, uint32_t peer)
{
	struct conn_slot *s = reserved_slot(n, cid);

	if (!s)
		return -ENOENT;
	if (peer >= n->npeers)
		return -EINVAL;
	s->peer = peer;
	return 0;
}

int fc_node_cid_release(struct fc_node *n, uint32_t cid)
{
	struct conn_slot *s = reserved_slot(n, cid);

	if (!s)
		return -ENOENT;
	s->reserved = 0;
	n->nslots--;
	return 0;
}

/* A CC event of one of our connections (spec 10.6.2): Swift/PLB answer at once and the
 * result goes straight back to the connection's PDL. Returns 0 (taken) or 1 (refused:
 * counted, the PDL keeps its windows). */
static int cc_event(void *ctx, const struct fc_cc_event *ev, unsigned pred)
{
	struct fc_node *n = ctx;
	struct conn_slot *s = slot_of_cid(n, ev->cid);
	struct fc_cc_result res;

	if (n->trace_cb && ev->cid == n->trace_cid)
		n->trace_cb(n->trace_ctx, ev, n->now_ns);
	if (n->cfg.cc_offer) { /* the caller's RUE (a thread): the result comes later */
		if (n->cfg.cc_offer(n->cfg.cc_ctx, ev, pred)) {
			n->cnt.cc_errors++;
			return 1;
		}
		n->cnt.cc_events++;
		return 0;
	}
	memset(&res, 0, sizeof(res));
	if (!s || fc_rue_process(n->rue, ev, fc_ns_to_ts(n->now_ns) & FC_TS24_MASK, &res) < 0) {
		n->cnt.cc_errors++;
		return 1;
	}
	fc_pdl_cc_apply(fc_txn_pdl(s->t), &res);
	n->cnt.cc_events++;
	return 0;
}

void fc_node_trace(struct fc_node *n, uint32_t cid, fc_node_trace_fn cb, void *ctx)
{
	n->trace_cid = cb ? cid : 0;
	n->trace_cb = cid ? cb : NULL;
	n->trace_ctx = ctx;
}

int fc_node_cc_apply(struct fc_node *n, const struct fc_cc_result *res)
{
	struct conn_slot *s = slot_of_cid(n, res->cid);

	if (!s || !s->t)
		return -ENOENT;
	fc_pdl_cc_apply(fc_txn_pdl(s->t), res);
	return 0;
}

struct fc_txn *fc_node_conn_open(struct fc_node *n, uint32_t cid, struct fc_txn_conn_cfg *cfg)
{
	struct conn_slot *s = reserved_slot(n, cid);
	struct fc_xdp_conn *x;
	struct fc_txn *t;

	if (!s || !cfg || s->peer == NO_PEER) {
		errno = s ? EINVAL : ENOENT;
		return NULL;
	}
	cfg->pdl.local_cid = cid;
	if (n->rue || n->cfg.cc_offer) {
		cfg->cc_event = cc_event;
		cfg->cc_ctx = n;
	}
	x = xdp_entry(n, s);
	if (x) { /* retired at close; XDP ignores it until the CID is published below */
		fc_store_rel32(&x->cid, 0);
		cfg->rx = &x->rx;
	}
	t = fc_rdma_conn_open(n->rdma, cfg);
	if (!t)
		return NULL;
	/* UD completions of datagrams on it name their sender by its peer (fc_node_peer_addr) */
	fc_rdma_conn_set_src(n->rdma, t, s->peer < UINT16_MAX ? (uint16_t)(s->peer + 1) : 0);
	s->reserved = 0;
	s->t = t;
	s->remote_time = 0;
	if (x) {
		x->rx.remote_time = 0;
		x->remote_cid = cfg->pdl.remote_cid;
		x->flags = n->cfg.xdp_flags;
		x->spi_sess = n->cfg.encap && n->cfg.encap->spi_sess ?
			n->cfg.encap->spi_sess(n->cfg.encap_ctx, s->peer) & FC_XDP_SPI_SESS_MASK : 0;
		x->replay_margin_ns = n->cfg.xdp_replay_margin_ns;
		x->remote_port = n->cfg.io->peer_port ?
			n->cfg.io->peer_port(n->cfg.io_ctx, &n->peers[s->peer]) : 0;
		fc_store_rel32(&x->cid, cid); /* after the windows and the fields above */
	}
	return t;
}

int fc_node_conn_close(struct fc_node *n, struct fc_txn *t)
{
	struct conn_slot *s = slot_of_conn(n, t);
	int rc;

	if (!s || s->t != t)
		return -ENOENT;
	rc = fc_rdma_conn_close(n->rdma, t);
	if (rc)
		return rc == -EINVAL ? -ENOENT : rc;
	if (xdp_entry(n, s)) /* XDP stops taking its packets (their CID no longer matches) */
		fc_store_rel32(&xdp_entry(n, s)->cid, 0);
	if (n->rue)
		fc_rue_forget(n->rue, s->cid);
	else if (n->cfg.cc_forget)
		n->cfg.cc_forget(n->cfg.cc_ctx, s->cid);
	s->t = NULL;
	n->nslots--;
	return 0;
}

uint32_t fc_node_conns_used(const struct fc_node *n)
{
	return n->nslots;
}

int fc_node_conn_remote_time(struct fc_node *n, struct fc_txn *t, uint64_t remote_ns)
{
	struct conn_slot *s = slot_of_conn(n, t);

	if (!s || s->t != t)
		return -ENOENT;
	*remote_time_of(n, s) = remote_ns;
	return 0;
}

uint32_t fc_node_conn_peer(const struct fc_node *n, const struct fc_txn *t)
{
	struct conn_slot *s = slot_of_conn((struct fc_node *)n, t);

	return s && s->t == t ? s->peer : NO_PEER;
}

/* ------------------------------------------------------------------------ */
/* receive                                                                    */

static int rx_one(struct fc_node *n, struct fc_frame *f)
{
	struct conn_slot *s;
	int rc;

	n->cnt.rx_frames++;
	n->cnt.rx_bytes += f->len;
	n->now_ns = f->meta.now_ns;
	if (n->cfg.encap && n->cfg.encap->open(n->cfg.encap_ctx, f)) {
		n->cnt.rx_encap_err++;
		return 0;
	}
	if (f->len < 2 * sizeof(__be32)) { /* w0 (CID) and w1 of every packet */
		n->cnt.rx_short++;
		return 0;
	}
	s = slot_of_cid(n, fc_hdr_cid(f->buf));
	if (!s) {
		n->cnt.rx_unknown_cid++;
		return 0;
	}
	/* a packet for our connection from another peer is not that connection's: without
	 * PSP this is the only thing that ties a CID to its peer */
	if (f->peer && !same_addr(f->peer, &n->peers[s->peer])) {
		n->cnt.rx_peer_mismatch++;
		return 0;
	}
	if (n->cfg.encap && n->cfg.encap->conn_check &&
	    (rc = n->cfg.encap->conn_check(n->cfg.encap_ctx, f, s->peer, remote_time_of(n, s)))) {
		if (rc == -ESTALE)
			n->cnt.rx_replay++;
		else
			n->cnt.rx_spi_mismatch++;
		return 0;
	}
	rc = fc_rdma_rx_meta(n->rdma, f->buf, f->len, &f->meta);
	if (rc < 0 && rc != -ENOENT) {
		n->cnt.rx_engine_err++;
		return 0;
	}
	return 1;
}

unsigned fc_node_rx_batch(struct fc_node *n, struct fc_frame *f, unsigned nf)
{
	unsigned ok = 0;

	for (unsigned i = 0; i < nf; i++)
		ok += (unsigned)rx_one(n, &f[i]);
	return ok;
}

/* ------------------------------------------------------------------------ */
/* transmit                                                                   */

/* Fill frames from the engine; returns how many were filled (the rest go back). */
static unsigned fill(struct fc_node *n, uint64_t now, struct fc_frame *f, unsigned nf)
{
	const struct fc_encap_ops *ex = n->cfg.encap;
	uint32_t head = ex ? ex->headroom : 0, tail = ex ? ex->tailroom : 0;
	unsigned k = 0;

	while (k < nf) {
		struct fc_frame *fr = &f[k];
		struct fc_txn *from = NULL;
		struct conn_slot *s;
		int len;

		if (fr->cap <= head + tail)
			break;
		len = fc_rdma_poll_tx(n->rdma, now, fr->buf + head, fr->cap - head - tail, &from);
		if (len <= 0)
			break; /* nothing more now, or the frame is too small for the MTU */
		s = slot_of_conn(n, from);
		if (!s) { /* cannot happen: every connection is opened through the node */
			n->cnt.tx_io_drop++;
			continue;
		}
		fr->peer = &n->peers[s->peer];
		fr->peer_idx = s->peer;
		if (ex) {
			if (ex->seal(n->cfg.encap_ctx, fr, (uint32_t)len)) {
				n->cnt.tx_encap_err++;
				continue;
			}
		} else {
			fr->len = (uint32_t)len;
		}
		n->cnt.tx_bytes += fr->len;
		k++;
	}
	return k;
}

unsigned fc_node_poll_tx(struct fc_node *n, uint64_t now, unsigned budget)
{
	const struct fc_io_ops *io = n->cfg.io;
	struct fc_frame f[FC_NODE_BATCH_MAX];
	unsigned sent = 0, chunk = FC_NODE_BATCH_FIRST;

	n->now_ns = now;
	/* frames are asked for in chunks that start small and double while the engine fills
	 * them: a poll that finds one packet does not take and give back a whole batch */
	while (sent < budget) {
		unsigned want = budget - sent < chunk ? budget - sent : chunk;
		unsigned got = io->tx_alloc(n->cfg.io_ctx, f, want), filled, ok;

		if (!got) {
			n->cnt.tx_no_frame++;
			break;
		}
		filled = fill(n, now, f, got);
		if (filled < got)
			io->tx_return(n->cfg.io_ctx, f + filled, got - filled);
		if (!filled)
			break;
		ok = io->tx_send(n->cfg.io_ctx, f, filled);
		n->cnt.tx_frames += ok;
		n->cnt.tx_io_drop += filled - ok;
		sent += filled;
		if (filled < got)
			break; /* the engine has nothing more now */
		if (chunk < FC_NODE_BATCH_MAX)
			chunk *= 2;
	}
	return sent;
}

uint64_t fc_node_next_deadline(const struct fc_node *n)
{
	return fc_rdma_next_deadline(n->rdma);
}

void fc_node_stalled(struct fc_node *n, uint64_t stall_ns, uint64_t now)
{
	n->cnt.stalls++;
	n->cnt.stall_ns += stall_ns;
	fc_txn_engine_stalled(fc_node_txn(n), stall_ns, now);
}

void fc_node_on_timer(struct fc_node *n, uint64_t now)
{
	n->now_ns = now;
	fc_rdma_on_timer(n->rdma, now);
}
