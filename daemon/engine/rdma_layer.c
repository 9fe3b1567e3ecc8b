/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma_layer.c - the layer, its connections, async events, the txn ops glue and the I/O shell (RDMA spec sections 6 and 8).
 * See rdma.h for the API and rdma_priv.h for the objects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma_priv.h"

static const struct fc_txn_ops rdma_txn_ops;

/* ------------------------------------------------------------------------ */
/* configuration and numbered tables                                         */

void fc_rdma_cfg_default(struct fc_rdma_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->mtu_bytes = 4096;
	c->max_msg_bytes = FC_SEG_MSG_MAX;
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

/* ------------------------------------------------------------------------ */
/* async events and completion queues                                        */

void rdma_async_push(struct fc_rdma *d, uint8_t type, uint32_t num, uint64_t user)
{
	if (d->ev_count == d->cfg.async_depth) {
		d->cnt.async_lost++;
		return;
	}
	d->ev[(d->ev_head + d->ev_count) % d->cfg.async_depth] =
		(struct fc_rdma_async_event){ .type = type, .num = num, .user = user };
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
/* ------------------------------------------------------------------------ */
/* connections                                                               */

/* The list of connections with kept answers (rdma_run_deferred): O(1) both ways. */
void rdma_dq_list(struct fc_rdma *d, struct conn *c)
{
	uint32_t i = (uint32_t)(c - d->conn);

	if (c->dq_listed)
		return;
	c->dq_listed = 1;
	c->dq_next = NONE;
	c->dq_prev = d->dq_last;
	if (d->dq_last != NONE)
		d->conn[d->dq_last].dq_next = i;
	else
		d->dq_first = i;
	d->dq_last = i;
}

void rdma_dq_unlist(struct fc_rdma *d, struct conn *c)
{
	if (!c->dq_listed)
		return;
	if (c->dq_prev != NONE)
		d->conn[c->dq_prev].dq_next = c->dq_next;
	else
		d->dq_first = c->dq_next;
	if (c->dq_next != NONE)
		d->conn[c->dq_next].dq_prev = c->dq_prev;
	else
		d->dq_last = c->dq_prev;
	c->dq_listed = 0;
}

struct fc_txn *fc_rdma_conn_open(struct fc_rdma *d, const struct fc_txn_conn_cfg *cfg)
{
	struct conn *c = NULL;

	if (!d || !cfg) {
		errno = EINVAL;
		return NULL;
	}
	/* from the slot after the last one taken: opening N connections in a row is O(N),
	 * not O(N^2) (CM path, but 65,536 of them must not take minutes) */
	for (uint32_t i = 0; i < d->cfg.max_conns && !c; i++) {
		uint32_t k = (d->conn_hint + i) % d->cfg.max_conns;

		if (!d->conn[k].used) {
			c = &d->conn[k];
			d->conn_hint = k + 1;
		}
	}
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

int fc_rdma_conn_set_src(struct fc_rdma *d, struct fc_txn *t, uint16_t src_id)
{
	struct conn *c = conn_of(d, t);

	if (!c)
		return -ENOENT;
	c->src_id = src_id;
	return 0;
}

int fc_rdma_conn_close(struct fc_rdma *d, struct fc_txn *t)
{
	struct conn *c = conn_of(d, t);

	if (!c)
		return -ENOENT;
	if (c->nref)
		return -EBUSY;
	pend_drop_conn(d, c);
	rdma_dq_unlist(d, c);
	fc_txn_conn_free(c->t);
	free(c->dq);
	c->dq = NULL;
	c->used = 0;
	c->t = NULL;
	return 0;
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
	rdma_run_deferred(c->d);
	if (c->qp)
		rdma_qp_pump(c->d, c->qp);
}

static void on_dead(void *ctx, struct fc_txn *t, int reason)
{
	struct conn *c = ctx;

	(void)reason;
	c->dead = 1;
	rdma_async_push(c->d, FC_RDMA_EV_CONN_DEAD, fc_txn_local_cid(t), 0);
	c->d->dq_total -= c->dq_count; /* their pulls are gone with the connection */
	c->dq_count = 0;
	pend_drop_conn(c->d, c);
	rdma_run_deferred(c->d);
	if (c->qp)
		rdma_qp_to_err(c->qp, c->d);
	rdma_conn_gave_up(c->d, c);
}

void rdma_conn_gave_up(struct fc_rdma *d, struct conn *c)
{
	if (d->cfg.conn_dead)
		d->cfg.conn_dead(d->cfg.ev_ctx, fc_txn_local_cid(c->t));
}

static const struct fc_txn_ops rdma_txn_ops = {
	.complete = rdma_on_complete, .request = rdma_on_request, .credits = on_credits, .dead = on_dead,
	.gather = rdma_on_gather,
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

const struct fc_rdma_cfg *fc_rdma_get_cfg(const struct fc_rdma *d) { return &d->cfg; }

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
	d->dq_first = d->dq_last = NONE;
	d->pkt_cap = cfg->mtu_bytes + FC_RDMA_HDR_MAX;
	d->qp = calloc(cfg->max_qps, sizeof(*d->qp));
	d->cq = calloc(cfg->max_cqs, sizeof(*d->cq));
	d->srq = calloc(cfg->max_srqs, sizeof(*d->srq));
	d->ah = calloc(cfg->max_ahs, sizeof(*d->ah));
	d->conn = calloc(cfg->max_conns, sizeof(*d->conn));
	d->pend = calloc(cfg->pending_resp, sizeof(*d->pend));
	d->ev = calloc(cfg->async_depth, sizeof(*d->ev));
	d->pkt = malloc(d->pkt_cap);
	d->resp = malloc(d->pkt_cap);
	d->staging = malloc(d->pkt_cap);
	if (!d->qp || !d->cq || !d->srq || !d->ah || !d->conn || !d->pend || !d->ev ||
	    !d->pkt || !d->resp || !d->staging)
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
		rdma_rq_fini(&d->srq[i].rq);
	for (uint32_t i = 0; d->pend && i < d->cfg.pending_resp; i++)
		free(d->pend[i].buf);
	free(d->qp);
	free(d->cq);
	free(d->srq);
	free(d->ah);
	free(d->conn);
	free(d->pend);
	free(d->ev);
	free(d->pkt);
	free(d->resp);
	free(d->staging);
	free(d);
}
