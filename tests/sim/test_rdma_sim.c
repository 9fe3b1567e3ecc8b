/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RDMA-over-Falcon ULP (rdma.h) in the deterministic simulator: two hosts, each a
 * node (daemon/node.h: txn engine + MR table + RDMA layer, the simulated ICV as its
 * encapsulation) and memory, joined by sim links through the node's sim backend
 * (sim_io.h), whose hooks let a scenario watch, drop and hold packets.
 *
 * Part 1, scenarios: the example flows of Falcon spec 6.6.1 - 6.6.5, each driven at the
 * RDMA level (a WR posted, a completion polled) with the packet-level event the flow
 * describes made to happen (two requests reordered, a NACK lost...), asserting the
 * packets seen on the wire (types, PSNs, RSNs, NACK codes, timing) and the completions.
 *
 * Part 2, the property test (sim_run_seeds): per seed, three RC QP pairs (strongly
 * ordered, weakly ordered, unordered; verbs or complete-in-error mode), a lossy,
 * duplicating, reordering, corrupting link, and batches of random WRs of every opcode
 * in both directions, 1 byte to 1 MiB, some with injected errors (stale / invalidated /
 * foreign-PD R_Keys, missing permissions, out of bounds, misaligned atomics, bad local
 * keys, receive WQEs too short or with bad L_Keys, bad invalidations, no receive WQE).
 * Every WR is applied, in posting order, to tests/rdma_model.h as well. The WRs of one
 * batch touch disjoint memory (each byte range, receive buffer and invalidatable region
 * is used by one WR), so the model's sequential order and the concurrent execution must
 * end equal. After each batch:
 *   - both hosts' memory equals the model byte for byte (undefined bytes: either value);
 *   - every WR completed exactly once, with the model's status (requester and responder),
 *     byte_len / imm / invalidated R_Key on receives, and the model's atomic results
 *     (they land in memory);
 *   - strongly and weakly ordered QPs completed in posting order (send and receive side);
 *   - regions invalidated by SEND with Invalidate are invalid in both.
 * Verbs-mode pairs get error WRs only as their last WR: the QP then goes to ERR.
 * `--summary` prints totals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RM_MEM_BYTES (4u << 20)
#include "rdma_model.h"

#include "node.h"
#include "rdma.h"
#include "sim.h"
#include "sim_icv.h"
#include "sim_io.h"
#include "wire_falcon.h"
#include "wire_rdma.h"

#define PMTU 4096
#define TMTU (PMTU + 128)
#define US 1000ull
#define MS 1000000ull
#define SEC 1000000000ull
#define NPAIR 3
#define MAXLOG 8192

/* ------------------------------------------------------------------------ */
/* hosts                                                                     */

struct evt { /* a packet sent (dir 0) or delivered (dir 1) */
	uint64_t t;
	uint8_t node, dir, dropped, type, nack, ulp, rnr_to, resync;
	uint32_t psn, rsn, rrbpsn, rdbpsn;
};

struct node;
typedef int (*hook_fn)(struct node *n, const struct fc_falcon_pkt *f); /* 0 go, 1 drop, 2 hold */

struct mrq { /* the model's receive queue of one QP */
	struct rm_recv rq[RM_RQ_MAX];
	uint32_t head, count;
};

struct node {
	int id;
	struct sim_node sn;     /* the sim endpoint: sn.node is this host's node */
	struct fc_mr_table *mrs;
	struct fc_rdma *d;
	uint32_t peer;          /* the other host, as this node's peer */
	uint8_t *mem;
	uint32_t mem_len;
	struct rm_node *m;
	uint32_t pd, pd2, scq, rcq;
	struct fc_txn *conn[NPAIR];
	uint32_t qp[NPAIR];
	struct mrq mrq[NPAIR];
	uint32_t rand_state;
	hook_fn tx_hook, rx_hook;
	int violation;
	char why[256];
	int count; /* scenario scratch */
};

static struct evt elog[MAXLOG];
static int nlog;

static void fail(struct node *n, const char *fmt, uint64_t a, uint64_t b)
{
	if (!n->violation)
		snprintf(n->why, sizeof(n->why), "host %d: %s (%" PRIu64 ", %" PRIu64 ")", n->id, fmt,
			 a, b);
	n->violation = 1;
}

static void log_evt(uint64_t t, struct node *n, int dir, int dropped, const struct fc_falcon_pkt *f)
{
	if (nlog >= MAXLOG)
		return;
	elog[nlog++] = (struct evt){ .t = t, .node = (uint8_t)n->id, .dir = (uint8_t)dir,
				     .dropped = (uint8_t)dropped, .type = (uint8_t)f->type,
				     .nack = f->nack_code, .ulp = f->ulp_nack_code,
				     .rnr_to = f->rnr_timeout, .resync = f->resync_code,
				     .psn = f->type == FC_PKT_NACK ? f->nack_psn : f->psn, .rsn = f->rsn,
				     .rrbpsn = f->rrbpsn, .rdbpsn = f->rdbpsn };
}

/* The node's edge (sim_io hooks): every packet sent and every intact packet received is
 * decoded, logged and shown to the scenario's hooks (drop, hold). A packet of ours that
 * does not decode is a violation. */
static int edge(struct node *n, uint64_t now, const uint8_t *pkt, uint32_t len, int dir)
{
	struct fc_falcon_pkt f;
	hook_fn hook = dir ? n->rx_hook : n->tx_hook;
	int v;

	if (fc_falcon_decode(pkt, len, &f) < 0) {
		fail(n, dir ? "an intact packet did not decode" : "sent a packet that does not decode",
		     len, 0);
		return SIM_IO_FAIL;
	}
	v = hook ? hook(n, &f) : 0;
	if (dir && v == 2)
		v = 0; /* holding is for the sending side */
	log_evt(now, n, dir, v == 1, &f);
	return v == 1 ? SIM_IO_DROP : v == 2 ? SIM_IO_HOLD : SIM_IO_PASS;
}

static int edge_tx(void *ctx, uint64_t now, const uint8_t *pkt, uint32_t len)
{
	return edge(ctx, now, pkt, len, 0);
}

static int edge_rx(void *ctx, uint64_t now, const uint8_t *pkt, uint32_t len)
{
	return edge(ctx, now, pkt, len, 1);
}

static uint32_t key_rand(void *ctx)
{
	struct node *n = ctx;

	n->rand_state = n->rand_state * 1664525u + 1013904223u;
	return n->rand_state;
}

struct node_cfg {
	uint32_t mem_len, pending_resp, pull_defer_max;
};

/* Host id as sim endpoint id of w. */
static int node_init(struct node *n, int id, const struct node_cfg *nc, struct sim_world *w)
{
	struct fc_node_cfg cfg;
	struct fc_peer_addr pa;

	n->id = id;
	n->rand_state = 0x1234u + (uint32_t)id;
	fc_node_cfg_default(&cfg);
	cfg.txn.mtu_bytes = TMTU;
	cfg.txn.txn_timeout_ns = 600 * SEC;
	cfg.txn.cap[FC_TXN_REQ_BUF_RX] = cfg.txn.cap[FC_TXN_NET_BUF_RX] = 32768;
	cfg.txn.cap[FC_TXN_REQ_PKT_RX] = cfg.txn.cap[FC_TXN_NET_PKT_RX] = 2048;
	cfg.txn.cap[FC_TXN_REQ_BUF_TX] = cfg.txn.cap[FC_TXN_DATA_BUF_TX] = 32768;
	cfg.rdma.mtu_bytes = PMTU;
	cfg.rdma.max_msg_bytes = 1u << 20;
	cfg.rdma.pending_resp = nc->pending_resp;
	cfg.rdma.pull_defer_max = nc->pull_defer_max;
	cfg.rdma.max_conns = NPAIR + 1;
	cfg.mr_cap = 32;
	cfg.pd_cap = 4;
	cfg.rand = key_rand;
	cfg.rand_ctx = n;
	cfg.max_peers = 1;
	cfg.io = &sim_io_ops;
	cfg.io_ctx = &n->sn;
	cfg.encap = &sim_icv_encap;
	n->sn.node = fc_node_new(&cfg);
	if (!n->sn.node)
		return -errno;
	n->sn.tx_hook = edge_tx;
	n->sn.rx_hook = edge_rx;
	n->sn.hook_ctx = n;
	n->sn.stop = &n->violation;
	n->sn.trailer = SIM_ICV_LEN;
	n->d = fc_node_rdma(n->sn.node);
	n->mrs = fc_node_mrs(n->sn.node);
	n->mem_len = nc->mem_len;
	n->mem = calloc(1, nc->mem_len);
	if (!n->mem)
		return -ENOMEM;
	sim_peer_addr((uint32_t)(1 - id), &pa);
	if (fc_node_peer_add(n->sn.node, &pa, &n->peer) || fc_pd_alloc(n->mrs, &n->pd) ||
	    fc_pd_alloc(n->mrs, &n->pd2) || fc_rdma_cq_create(n->d, 4096, &n->scq) ||
	    fc_rdma_cq_create(n->d, 4096, &n->rcq))
		return -EINVAL;
	return sim_world_add_endpoint(w, &sim_node_ep_ops, &n->sn) == id ? 0 : -EINVAL;
}

/* What the node counted as wrong on receipt: none of it may happen between two of our
 * hosts (a corrupted packet fails the ICV check and is not counted here). */
static int node_rx_clean(struct node *n)
{
	const struct fc_node_counters *c = fc_node_counters(n->sn.node);

	if (c->rx_short || c->rx_unknown_cid || c->rx_peer_mismatch || c->rx_engine_err) {
		fail(n, "node rx errors (short+unknown CID+peer, engine)",
		     c->rx_short + c->rx_unknown_cid + c->rx_peer_mismatch, c->rx_engine_err);
		return 0;
	}
	return 1;
}

static void node_fini(struct node *n)
{
	fc_node_free(n->sn.node);
	free(n->mem);
	memset(n, 0, offsetof(struct node, violation));
}

struct conn_opts {
	int ordered;
	uint32_t psn[2][2];          /* [node][window] initial transmit PSN */
	uint32_t rsn0;
	uint64_t rto_ns;
	uint32_t limit_req_pkt_tx, limit_data_pkt_tx;
};

/* Connect the hosts as a CM does: both reserve a CID, then each end opens with the
 * other's. */
static int conn_pair(struct node *n, int idx, const struct conn_opts *o)
{
	uint32_t cid[2];

	for (int h = 0; h < 2; h++)
		if (fc_node_cid_reserve(n[h].sn.node, n[h].peer, &cid[h]))
			return -EINVAL;
	for (int h = 0; h < 2; h++) {
		struct fc_txn_conn_cfg c;

		fc_txn_conn_cfg_default(&c);
		c.pdl.remote_cid = cid[1 - h];
		c.pdl.ordered = o->ordered;
		c.pdl.max_retx = 100;
		c.pdl.rto_ns = o->rto_ns;
		for (int w = 0; w < 2; w++) {
			c.pdl.tx_psn[w] = o->psn[h][w];
			c.pdl.rx_psn[w] = o->psn[1 - h][w];
		}
		c.rsn_tx = c.rsn_rx = o->rsn0;
		c.limit[FC_TXN_REQ_PKT_TX] = o->limit_req_pkt_tx;
		c.limit[FC_TXN_DATA_PKT_TX] = o->limit_data_pkt_tx;
		n[h].conn[idx] = fc_node_conn_open(n[h].sn.node, cid[h], &c);
		if (!n[h].conn[idx])
			return -errno;
	}
	return 0;
}

static int qp_pair(struct node *n, int idx, uint8_t order, uint8_t mode, uint8_t rnr_timer,
		   uint8_t rnr_retry)
{
	for (int h = 0; h < 2; h++) {
		struct fc_rdma_qp_init a;
		int rc;

		fc_rdma_qp_init_default(&a);
		a.type = FC_RDMA_QPT_RC;
		a.order = order;
		a.err_mode = mode;
		a.pd = n[h].pd;
		a.send_cq = n[h].scq;
		a.recv_cq = n[h].rcq;
		a.conn = n[h].conn[idx];
		a.sq_depth = 256;
		a.rq_depth = 32;
		a.max_inflight = 128;
		a.min_rnr_timer = rnr_timer;
		a.rnr_retry = rnr_retry;
		rc = fc_rdma_qp_create(n[h].d, &a, &n[h].qp[idx]);
		if (rc)
			return rc;
	}
	for (int h = 0; h < 2; h++) {
		struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };

		if (fc_rdma_qp_modify(n[h].d, n[h].qp[idx], &at))
			return -EINVAL;
		at.state = FC_RDMA_QPS_RTR;
		at.remote_qpn = n[1 - h].qp[idx];
		if (fc_rdma_qp_modify(n[h].d, n[h].qp[idx], &at))
			return -EINVAL;
		at.state = FC_RDMA_QPS_RTS;
		if (fc_rdma_qp_modify(n[h].d, n[h].qp[idx], &at))
			return -EINVAL;
	}
	return 0;
}

/* Run until nothing is left to do. Returns 0, or 1 (violation, error, no end). */
static int run_idle(struct sim_world *w, struct node *n, uint64_t limit_ns)
{
	struct sim_run_result res;

	sim_world_run(w, sim_world_now(w) + limit_ns, 200000000ull, &res);
	if (n[0].violation || n[1].violation || !node_rx_clean(&n[0]) || !node_rx_clean(&n[1]))
		return 1;
	if (res.stop != SIM_STOP_IDLE) {
		fail(&n[0], "run did not finish", res.stop, (uint64_t)res.err);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* part 1: the flows of Falcon spec 6.6                                      */

#define SCHECK(cond, what)                                                       \
	do {                                                                     \
		if (!(cond)) {                                                   \
			printf("scenario %s: FAILED: %s (line %d)\n", name, what, __LINE__); \
			dump_log();                                              \
			rc = 1;                                                  \
			goto out;                                                \
		}                                                                \
	} while (0)

static void dump_log(void)
{
	static const char *const tn[16] = { [FC_PKT_PULL_REQ] = "PullReq", [FC_PKT_PULL_DATA] = "PullData",
		[FC_PKT_PUSH_DATA] = "PushData", [FC_PKT_RESYNC] = "Resync", [FC_PKT_NACK] = "NACK",
		[FC_PKT_BACK] = "BACK", [FC_PKT_EACK] = "EACK" };

	for (int k = 0; k < nlog && k < 200; k++)
		printf("  %8.3f us host %u %s %-8s psn %u rsn %u rrbpsn %u rdbpsn %u nack %u/%u%s\n",
		       (double)elog[k].t / 1000.0, elog[k].node, elog[k].dir ? "rx" : "tx",
		       tn[elog[k].type & 15] ? tn[elog[k].type & 15] : "?", elog[k].psn, elog[k].rsn,
		       elog[k].rrbpsn, elog[k].rdbpsn, elog[k].nack, elog[k].ulp,
		       elog[k].dropped ? " DROPPED" : "");
}

struct scen {
	struct sim_world *w;
	struct node n[2];
	struct fc_mr_keys k[2];
};

static struct scen S;

static int scen_setup(struct conn_opts *o, uint32_t pending_resp, uint8_t rnr_timer)
{
	/* no pull held unanswered: a pull without room for its answer is RNR'd (6.6.4) */
	struct node_cfg nc = { .mem_len = 1u << 20, .pending_resp = pending_resp,
			       .pull_defer_max = pending_resp > 1 ? 1024 : 0 };
	struct sim_link_cfg lc = { .latency_ns = 5 * US, .bandwidth_bps = 100000000000ull };

	memset(&S.n, 0, sizeof(S.n));
	nlog = 0;
	S.w = sim_world_new(1);
	if (!S.w)
		return -ENOMEM;
	for (int h = 0; h < 2; h++) {
		if (node_init(&S.n[h], h, &nc, S.w))
			return -EINVAL;
		if (fc_mr_reg(S.n[h].mrs, S.n[h].pd, S.n[h].mem, 0x10000000, nc.mem_len,
			      FC_MR_ACCESS_ALL, &S.k[h]))
			return -EINVAL;
	}
	if (sim_world_connect(S.w, 0, 1, &lc, &lc) < 0 || conn_pair(S.n, 0, o))
		return -EINVAL;
	return qp_pair(S.n, 0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, rnr_timer,
		       FC_RDMA_RNR_INFINITE);
}

static void scen_fini(void)
{
	for (int h = 0; h < 2; h++)
		node_fini(&S.n[h]);
	sim_world_free(S.w);
	S.w = NULL;
}

static int post1(int h, uint8_t op, uint64_t wr_id, uint32_t off, uint32_t len, uint64_t raddr,
		 uint32_t rkey)
{
	struct fc_sge s = { .addr = 0x10000000 + off, .len = len, .lkey = S.k[h].lkey };
	struct fc_rdma_send_wr wr = { .wr_id = wr_id, .opcode = op, .num_sge = 1, .sgl = &s,
				      .remote_addr = raddr, .rkey = rkey, .imm = 0x600D };

	return fc_rdma_post_send(S.n[h].d, S.n[h].qp[0], &wr, sim_world_now(S.w));
}

static int recv1(int h, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct fc_sge s = { .addr = 0x10000000 + off, .len = len, .lkey = S.k[h].lkey };
	struct fc_rdma_recv_wr wr = { .wr_id = wr_id, .num_sge = 1, .sgl = &s };

	return fc_rdma_post_recv(S.n[h].d, S.n[h].qp[0], &wr);
}

/* The i-th logged packet matching (node, dir, type), -1 if none. */
static int find_evt(int node, int dir, uint8_t type, int i)
{
	for (int k = 0; k < nlog; k++)
		if (elog[k].node == node && elog[k].dir == dir && elog[k].type == type && i-- == 0)
			return k;
	return -1;
}

static int count_evt(int node, int dir, uint8_t type, uint8_t nack)
{
	int c = 0;

	for (int k = 0; k < nlog; k++)
		if (elog[k].node == node && elog[k].dir == dir && elog[k].type == type &&
		    (type != FC_PKT_NACK || elog[k].nack == nack))
			c++;
	return c;
}

/* Did node send a packet (an ACK, or data with a piggybacked ACK) whose receiver base
 * PSN of window win (0 request, 1 data) reached psn? */
static int acked(int node, int win, uint32_t psn)
{
	for (int k = 0; k < nlog; k++)
		if (elog[k].node == node && elog[k].dir == 0 && !elog[k].dropped &&
		    elog[k].type != FC_PKT_NACK && (win ? elog[k].rdbpsn : elog[k].rrbpsn) == psn)
			return 1;
	return 0;
}

static void pattern(uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 31 + i * 13 + (i >> 9));
}

/* hold the first packet of a type (it then goes right after the next one) */
static uint8_t hold_type;
static int hold_first(struct node *n, const struct fc_falcon_pkt *f)
{
	if (f->type != hold_type || n->count)
		return 0;
	n->count = 1;
	return 2;
}

/* 6.6.1: a READ of two MTUs = two pull requests (RSN 1, 2; PSN 100, 101) reordered by
 * the network; the target delivers them by RSN; Pull Data PSN 200, 201; one completion. */
static int scen_read(void)
{
	const char *name = "6.6.1 read, two reordered pull requests";
	struct conn_opts o = { .ordered = 1, .psn = { { 100, 500 }, { 900, 200 } }, .rsn0 = 1,
			       .rto_ns = 1 * MS };
	struct fc_rdma_wc wc;
	int rc = 0, i1, i2;

	if (scen_setup(&o, 16, 1))
		return 1;
	pattern(S.n[1].mem + 4096, 2 * PMTU, 7);
	hold_type = FC_PKT_PULL_REQ;
	S.n[0].tx_hook = hold_first;
	SCHECK(post1(0, FC_RDMA_WR_READ, 1, 65536, 2 * PMTU, 0x10000000 + 4096, S.k[1].rkey) == 0,
	       "post");
	SCHECK(!run_idle(S.w, S.n, 10 * SEC), S.n[0].violation ? S.n[0].why : S.n[1].why);
	/* step 2: pull requests RSN 1 / PSN 100 and RSN 2 / PSN 101 */
	i1 = find_evt(0, 0, FC_PKT_PULL_REQ, 0);
	i2 = find_evt(0, 0, FC_PKT_PULL_REQ, 1);
	SCHECK(i1 >= 0 && i2 >= 0 && count_evt(0, 0, FC_PKT_PULL_REQ, 0) == 2, "two pull requests");
	SCHECK(elog[i1].rsn == 1 && elog[i1].psn == 100 && elog[i2].rsn == 2 && elog[i2].psn == 101,
	       "RSN/PSN of the pull requests");
	/* step 3: they arrive reordered; the target holds RSN 2 for RSN 1 */
	i1 = find_evt(1, 1, FC_PKT_PULL_REQ, 0);
	i2 = find_evt(1, 1, FC_PKT_PULL_REQ, 1);
	SCHECK(elog[i1].rsn == 2 && elog[i2].rsn == 1, "arrival order 2, 1");
	SCHECK(fc_txn_counters(S.n[1].conn[0])->held == 1, "reordered by RSN at the target");
	SCHECK(acked(1, 0, 102), "the target acknowledges both pull requests");
	/* steps 4-5: Pull Data RSN 1 / PSN 200, RSN 2 / PSN 201 */
	i1 = find_evt(1, 0, FC_PKT_PULL_DATA, 0);
	i2 = find_evt(1, 0, FC_PKT_PULL_DATA, 1);
	SCHECK(i1 >= 0 && i2 >= 0 && count_evt(1, 0, FC_PKT_PULL_DATA, 0) == 2, "two pull data");
	SCHECK(elog[i1].rsn == 1 && elog[i1].psn == 200 && elog[i2].rsn == 2 && elog[i2].psn == 201,
	       "RSN/PSN of the pull data");
	/* step 6: the initiator acknowledges the pull data; step 7: one read completion */
	SCHECK(acked(0, 1, 202), "the initiator acknowledges both pull data");
	SCHECK(fc_rdma_poll_cq(S.n[0].d, S.n[0].scq, &wc, 1) == 1, "a completion");
	SCHECK(wc.status == FC_WC_SUCCESS && wc.opcode == FC_RDMA_WC_RDMA_READ &&
	       wc.byte_len == 2 * PMTU, "READ completion");
	SCHECK(fc_rdma_poll_cq(S.n[0].d, S.n[0].scq, &wc, 1) == 0, "only one");
	SCHECK(!memcmp(S.n[0].mem + 65536, S.n[1].mem + 4096, 2 * PMTU), "data read");
out:
	scen_fini();
	return rc;
}

/* 6.6.2: a WRITE of two MTUs = two pushes (RSN 1, 2; PSN 300, 301) reordered; placed in
 * RSN order; acknowledged; one completion. */
static int scen_write(void)
{
	const char *name = "6.6.2 write, two reordered push data";
	struct conn_opts o = { .ordered = 1, .psn = { { 100, 300 }, { 900, 200 } }, .rsn0 = 1,
			       .rto_ns = 1 * MS };
	struct fc_rdma_wc wc;
	int rc = 0, i1, i2;

	if (scen_setup(&o, 16, 1))
		return 1;
	pattern(S.n[0].mem, 2 * PMTU, 3);
	hold_type = FC_PKT_PUSH_DATA;
	S.n[0].tx_hook = hold_first;
	SCHECK(post1(0, FC_RDMA_WR_WRITE, 1, 0, 2 * PMTU, 0x10000000 + 8192, S.k[1].rkey) == 0,
	       "post");
	SCHECK(!run_idle(S.w, S.n, 10 * SEC), "run");
	i1 = find_evt(0, 0, FC_PKT_PUSH_DATA, 0);
	i2 = find_evt(0, 0, FC_PKT_PUSH_DATA, 1);
	SCHECK(count_evt(0, 0, FC_PKT_PUSH_DATA, 0) == 2, "two pushes");
	SCHECK(elog[i1].rsn == 1 && elog[i1].psn == 300 && elog[i2].rsn == 2 && elog[i2].psn == 301,
	       "RSN/PSN of the pushes");
	i1 = find_evt(1, 1, FC_PKT_PUSH_DATA, 0);
	i2 = find_evt(1, 1, FC_PKT_PUSH_DATA, 1);
	SCHECK(elog[i1].rsn == 2 && elog[i2].rsn == 1, "arrival order 2, 1");
	SCHECK(fc_txn_counters(S.n[1].conn[0])->held == 1, "reordered by RSN at the target");
	SCHECK(acked(1, 1, 302), "the target acknowledges both pushes");
	SCHECK(fc_rdma_poll_cq(S.n[0].d, S.n[0].scq, &wc, 1) == 1 && wc.status == FC_WC_SUCCESS &&
	       wc.opcode == FC_RDMA_WC_RDMA_WRITE, "WRITE completion");
	SCHECK(fc_rdma_poll_cq(S.n[0].d, S.n[0].scq, &wc, 1) == 0, "only one");
	SCHECK(!memcmp(S.n[1].mem + 8192, S.n[0].mem, 2 * PMTU), "data written");
out:
	scen_fini();
	return rc;
}

/* 6.6.3 hooks: the initiator loses the first RNR NACK; the target's ULP gets a receive
 * WQE once it has sent its second one */
static int drop_first_rnr(struct node *n, const struct fc_falcon_pkt *f)
{
	if (f->type != FC_PKT_NACK || f->nack_code != FC_NACK_RNR || n->count)
		return 0;
	n->count = 1;
	return 1;
}

static int post_after_second_rnr(struct node *n, const struct fc_falcon_pkt *f)
{
	if (f->type == FC_PKT_NACK && f->nack_code == FC_NACK_RNR && ++n->count == 2)
		recv1(1, 42, 20000, 512);
	return 0;
}

/* 6.6.3: a WRITE with Immediate (PSN 301) finds no receive WQE: RNR NACK lost, the push
 * times out and is resent, RNR again (received: the initiator waits the RNR timeout),
 * resent, accepted, ACKed, completed. */
static int scen_push_rnr(void)
{
	const char *name = "6.6.3 push RNR NACK";
	struct conn_opts o = { .ordered = 1, .psn = { { 100, 301 }, { 900, 200 } }, .rsn0 = 1,
			       .rto_ns = 200 * US };
	struct fc_rdma_wc wc;
	uint64_t t[3];
	int rc = 0, k;

	if (scen_setup(&o, 16, 14)) /* min_rnr_timer code 14: 1.28 ms */
		return 1;
	pattern(S.n[0].mem, 100, 5);
	S.n[0].rx_hook = drop_first_rnr;
	S.n[1].tx_hook = post_after_second_rnr;
	SCHECK(post1(0, FC_RDMA_WR_WRITE_IMM, 1, 0, 100, 0x10000000 + 4096, S.k[1].rkey) == 0, "post");
	SCHECK(!run_idle(S.w, S.n, 10 * SEC), "run");
	SCHECK(count_evt(0, 0, FC_PKT_PUSH_DATA, 0) == 3, "the push is sent three times");
	for (int i = 0; i < 3; i++) {
		k = find_evt(0, 0, FC_PKT_PUSH_DATA, i);
		SCHECK(elog[k].psn == 301 && elog[k].rsn == 1, "same PSN 301, RSN 1");
		t[i] = elog[k].t;
	}
	SCHECK(count_evt(1, 0, FC_PKT_NACK, FC_NACK_RNR) == 2, "two RNR NACKs sent");
	k = find_evt(1, 0, FC_PKT_NACK, 0);
	SCHECK(elog[k].rnr_to == 14 && elog[k].psn == 301, "RNR NACK: timeout code, PSN");
	SCHECK(elog[find_evt(0, 1, FC_PKT_NACK, 0)].dropped, "the first RNR NACK is lost");
	/* step 5: the first resend is the retransmission timeout; step 7-8: the second waits
	 * the RNR timeout (1.28 ms) given by the NACK that arrived */
	SCHECK(t[1] - t[0] >= 200 * US && t[1] - t[0] < 1280 * US, "resend after the RTO");
	SCHECK(t[2] - t[1] >= 1280 * US, "resend after the RNR timeout");
	SCHECK(acked(1, 1, 302), "the target acknowledges the push");
	SCHECK(fc_rdma_poll_cq(S.n[0].d, S.n[0].scq, &wc, 1) == 1 && wc.status == FC_WC_SUCCESS,
	       "write completion");
	SCHECK(fc_rdma_poll_cq(S.n[1].d, S.n[1].rcq, &wc, 1) == 1 && wc.wr_id == 42 &&
	       wc.opcode == FC_RDMA_WC_RECV_RDMA_WITH_IMM && wc.imm_data == 0x600D &&
	       wc.byte_len == 100, "receive completion with immediate");
	SCHECK(!memcmp(S.n[1].mem + 4096, S.n[0].mem, 100), "data written");
	SCHECK(fc_rdma_counters(S.n[1].d)->rnr_sent == 2, "the ULP said RNR twice");
out:
	scen_fini();
	return rc;
}

/* 6.6.4: the target's RDMA layer cannot take a pull request (no room for its answer:
 * one pending response, one Data Tx credit, no pull may be held unanswered) and answers
 * RNR: the pull is ACKed, not NACKed, waits out the RNR timeout at the target, is
 * redelivered and answered. */
static int scen_pull_rnr(void)
{
	const char *name = "6.6.4 pull RNR NACK";
	struct conn_opts o = { .ordered = 1, .psn = { { 101, 500 }, { 900, 201 } }, .rsn0 = 1,
			       .rto_ns = 1 * MS, .limit_data_pkt_tx = 1 };
	const struct fc_txn_counters *tc;
	struct fc_rdma_wc wc;
	int rc = 0, k;

	if (scen_setup(&o, 1, 1))
		return 1;
	pattern(S.n[1].mem, 3 * 512, 9);
	for (int i = 0; i < 3; i++)
		SCHECK(post1(0, FC_RDMA_WR_READ, (uint64_t)i + 1, 65536 + 512 * (uint32_t)i, 512,
			     0x10000000 + 512 * (uint64_t)i, S.k[1].rkey) == 0, "post");
	SCHECK(!run_idle(S.w, S.n, 10 * SEC), "run");
	tc = fc_txn_counters(S.n[1].conn[0]);
	SCHECK(fc_rdma_counters(S.n[1].d)->pull_rnr_busy >= 1 && tc->ulp_rnr >= 1,
	       "the ULP refused a pull with RNR");
	SCHECK(tc->pull_redeliver >= 1, "redelivered at the target after the RNR timeout");
	SCHECK(count_evt(1, 0, FC_PKT_NACK, FC_NACK_RNR) == 0, "no RNR NACK on the wire");
	SCHECK(count_evt(0, 0, FC_PKT_PULL_REQ, 0) == 3, "each pull request sent once");
	for (int i = 0; i < 3; i++) {
		k = find_evt(0, 0, FC_PKT_PULL_REQ, i);
		SCHECK(elog[k].psn == 101 + (uint32_t)i && elog[k].rsn == 1 + (uint32_t)i, "pull request PSN");
		k = find_evt(1, 0, FC_PKT_PULL_DATA, i);
		SCHECK(k >= 0 && elog[k].psn == 201 + (uint32_t)i && elog[k].rsn == 1 + (uint32_t)i,
		       "pull data PSN, RSN order");
	}
	for (int i = 0; i < 3; i++)
		SCHECK(fc_rdma_poll_cq(S.n[0].d, S.n[0].scq, &wc, 1) == 1 && wc.status == FC_WC_SUCCESS &&
		       wc.wr_id == (uint64_t)i + 1, "read completions in order");
	SCHECK(!memcmp(S.n[0].mem + 65536, S.n[1].mem, 3 * 512), "data read");
out:
	scen_fini();
	return rc;
}

static int drop_first_cie(struct node *n, const struct fc_falcon_pkt *f)
{
	if (f->type != FC_PKT_NACK || f->nack_code != FC_NACK_CIE || n->count)
		return 0;
	n->count = 1;
	return 1;
}

/* 6.6.5: a WRITE under an R_Key that names no region: CIE NACK (lost), retransmission,
 * the same CIE NACK again (the ULP is not asked twice), Resync, ACK, completion in error. */
static int scen_push_cie(void)
{
	const char *name = "6.6.5 push CIE NACK";
	struct conn_opts o = { .ordered = 1, .psn = { { 100, 301 }, { 900, 200 } }, .rsn0 = 1,
			       .rto_ns = 200 * US };
	struct fc_rdma_wc wc;
	int rc = 0, k1, k2, kr, ka = -1;

	if (scen_setup(&o, 16, 1))
		return 1;
	S.n[0].rx_hook = drop_first_cie;
	SCHECK(post1(0, FC_RDMA_WR_WRITE, 1, 0, 100, 0x10000000, S.k[1].rkey ^ 0x100) == 0, "post");
	SCHECK(!run_idle(S.w, S.n, 10 * SEC), "run");
	SCHECK(count_evt(0, 0, FC_PKT_PUSH_DATA, 0) == 2, "the push is sent twice");
	SCHECK(elog[find_evt(0, 0, FC_PKT_PUSH_DATA, 1)].psn == 301, "retransmitted with PSN 301");
	SCHECK(count_evt(1, 0, FC_PKT_NACK, FC_NACK_CIE) == 2, "two CIE NACKs");
	k1 = find_evt(1, 0, FC_PKT_NACK, 0);
	k2 = find_evt(1, 0, FC_PKT_NACK, 1);
	SCHECK(elog[k1].ulp == FC_RDMA_NAK_REM_ACCESS && elog[k2].ulp == FC_RDMA_NAK_REM_ACCESS,
	       "same ULP code (remote access)");
	SCHECK(elog[find_evt(0, 1, FC_PKT_NACK, 0)].dropped, "the first CIE NACK is lost");
	SCHECK(fc_rdma_counters(S.n[1].d)->nak_sent == 1 &&
	       fc_txn_counters(S.n[1].conn[0])->renack == 1, "the ULP answered once");
	kr = find_evt(0, 0, FC_PKT_RESYNC, 0);
	SCHECK(kr >= 0 && elog[kr].resync == FC_RESYNC_TARGET_CIE && elog[kr].t > elog[k2].t,
	       "Resync after the second CIE NACK");
	for (int k = kr + 1; k < nlog && ka < 0; k++)
		if (elog[k].node == 1 && elog[k].dir == 0 &&
		    (elog[k].type == FC_PKT_BACK || elog[k].type == FC_PKT_EACK))
			ka = k;
	SCHECK(ka >= 0, "the target acknowledges the Resync");
	SCHECK(fc_rdma_poll_cq(S.n[0].d, S.n[0].scq, &wc, 1) == 1 &&
	       wc.status == FC_WC_REM_ACCESS_ERR &&
	       wc.vendor_err == (FC_CMPL_TARGET_NACK_CIE | FC_RDMA_NAK_REM_ACCESS << 8),
	       "write completion in error");
	SCHECK(fc_rdma_qp_state(S.n[0].d, S.n[0].qp[0]) == FC_RDMA_QPS_RTS, "the QP goes on");
out:
	scen_fini();
	return rc;
}

/* ------------------------------------------------------------------------ */
/* part 2: the property test                                                 */

/* Memory of a host (4 MiB) and its regions. */
#define MAIN_LEN (3u << 20)
#define RO_OFF (3u << 20)          /* LOCAL_WRITE | REMOTE_READ */
#define WO_OFF (RO_OFF + (128u << 10)) /* LOCAL_WRITE | REMOTE_WRITE */
#define SMALL_LEN (128u << 10)
#define OPD_OFF (RO_OFF + (256u << 10)) /* another PD, every access */
#define OPD_LEN (256u << 10)
#define NINV 8
#define INV_OFF (RO_OFF + (512u << 10)) /* NINV regions that a SEND may invalidate */
#define INV_LEN (32u << 10)
#define MAIN_IOVA 0x100000000ull
#define RO_IOVA 0x200000000ull
#define WO_IOVA 0x280000000ull
#define OPD_IOVA 0x300000000ull
#define INV_IOVA(k) (0x400000000ull + (uint64_t)(k) * 0x10000000ull)
#define STALE_IOVA 0x500000000ull

enum opk { K_WRITE, K_WRITE_IMM, K_READ, K_SEND, K_SEND_IMM, K_SEND_INV, K_CAS, K_FAA,
	   K_MCAS, K_MFAA, K_COUNT };
static const uint8_t wr_op[K_COUNT] = {
	FC_RDMA_WR_WRITE, FC_RDMA_WR_WRITE_IMM, FC_RDMA_WR_READ, FC_RDMA_WR_SEND,
	FC_RDMA_WR_SEND_IMM, FC_RDMA_WR_SEND_INV, FC_RDMA_WR_CMP_SWAP, FC_RDMA_WR_FETCH_ADD,
	FC_RDMA_WR_MASKED_CMP_SWAP, FC_RDMA_WR_MASKED_FETCH_ADD,
};
static const uint8_t wc_op[K_COUNT] = {
	FC_RDMA_WC_RDMA_WRITE, FC_RDMA_WC_RDMA_WRITE, FC_RDMA_WC_RDMA_READ, FC_RDMA_WC_SEND,
	FC_RDMA_WC_SEND, FC_RDMA_WC_SEND, FC_RDMA_WC_COMP_SWAP, FC_RDMA_WC_FETCH_ADD,
	FC_RDMA_WC_MASKED_COMP_SWAP, FC_RDMA_WC_MASKED_FETCH_ADD,
};

enum inj { I_NONE, I_STALE, I_OPD, I_PERM, I_BOUNDS, I_ALIGN, I_LOCAL, I_SINK_LEN, I_ELEN,
	   I_RECV_KEY, I_INV_BAD, I_RNR, I_COUNT };

#define MAXOPS 40
#define MAXRECV (8 * MAXOPS) /* receive WQEs of a seed (leftovers live on) */

struct op {
	uint8_t kind, inj, pair, ini;
	uint64_t wr_id;
	struct fc_sge sgl[4];
	uint32_t nsge, len;
	uint64_t raddr;
	uint32_t rkey, imm, inv_rkey;
	struct rm_atomic_args at;
	struct rm_result res;
	int done;
};

struct rwr {
	uint8_t node, pair;
	uint64_t wr_id;
	struct fc_sge sge[4];
	uint32_t nsge;
	int done;
	struct fc_rdma_wc wc;
};

struct pst { /* property test state of a seed */
	struct sim_world *w;
	struct node n[2];
	struct sim_rng r;
	struct fc_mr_keys main[2], ro[2], wo[2], opd[2], inv[2][NINV], stale[2];
	int inv_slot[2][NINV];      /* model slot of each invalidatable region */
	uint8_t order[NPAIR], mode[NPAIR], retired[NPAIR];
	uint32_t bump[2];
	uint8_t inv_busy[2][NINV];
	struct op ops[MAXOPS];
	int nops;
	struct rwr rw[MAXRECV];
	int nrw, rw_first;          /* all of the seed; those of this batch from rw_first */
	int consuming[2][NPAIR];    /* consuming WRs into node's QP this batch */
	int no_more[2][NPAIR];      /* an RNR-injected SEND ended the QP's batch */
	uint64_t next_id;
};

struct totals {
	uint64_t seeds, ops, bytes, inj, errs, events, batches;
	uint64_t by_kind[K_COUNT], by_inj[I_COUNT];
	uint64_t eagain, deferred, rnr_sent, rnr_exhausted, nack_cid, resp_lost;
	int summary;
};

static struct pst P;
static uint64_t last_trace;
static struct rm_node *MODEL[2];

static uint64_t rnd(uint64_t n) { return sim_rng_below(&P.r, n); }

static void rq_in(struct rm_node *m, const struct mrq *s)
{
	memcpy(m->rq, s->rq, sizeof(m->rq));
	m->rq_head = s->head;
	m->rq_count = s->count;
}

static void rq_out(const struct rm_node *m, struct mrq *s)
{
	memcpy(s->rq, m->rq, sizeof(s->rq));
	s->head = m->rq_head;
	s->count = m->rq_count;
}

static void to_rm(const struct fc_sge *s, uint32_t n, struct rm_sge *out)
{
	for (uint32_t i = 0; i < n; i++)
		out[i] = (struct rm_sge){ .addr = s[i].addr, .len = s[i].len, .lkey = s[i].lkey };
}

/* A region registered in both the implementation and the model. */
static int reg(int h, uint32_t pd, uint32_t off, uint64_t iova, uint32_t len, uint32_t access,
	       struct fc_mr_keys *k, int *slot)
{
	struct node *n = &P.n[h];
	int s;

	if (fc_mr_reg(n->mrs, pd, n->mem + off, iova, len, access, k))
		return -EINVAL;
	s = rm_mr_add(n->m, pd, off, iova, len, access, k->lkey, k->rkey);
	if (slot)
		*slot = s;
	return s < 0 ? -EINVAL : 0;
}

static int regions(int h)
{
	struct node *n = &P.n[h];
	uint32_t all = FC_MR_ACCESS_ALL & ~(uint32_t)FC_MR_REMOTE_INVALIDATE;

	if (reg(h, n->pd, 0, MAIN_IOVA, MAIN_LEN, all, &P.main[h], NULL) ||
	    reg(h, n->pd, RO_OFF, RO_IOVA, SMALL_LEN, FC_MR_LOCAL_WRITE | FC_MR_REMOTE_READ,
		&P.ro[h], NULL) ||
	    reg(h, n->pd, WO_OFF, WO_IOVA, SMALL_LEN, FC_MR_LOCAL_WRITE | FC_MR_REMOTE_WRITE,
		&P.wo[h], NULL) ||
	    reg(h, n->pd2, OPD_OFF, OPD_IOVA, OPD_LEN, FC_MR_ACCESS_ALL, &P.opd[h], NULL))
		return -EINVAL;
	for (int k = 0; k < NINV; k++)
		if (reg(h, n->pd, INV_OFF + (uint32_t)k * INV_LEN, INV_IOVA(k), INV_LEN,
			FC_MR_ACCESS_ALL, &P.inv[h][k], &P.inv_slot[h][k]))
			return -EINVAL;
	/* a region registered and gone: its keys are stale (never in the model) */
	if (fc_mr_reg(n->mrs, n->pd, n->mem + INV_OFF + NINV * INV_LEN, STALE_IOVA, 4096,
		      FC_MR_ACCESS_ALL, &P.stale[h]) ||
	    fc_mr_dereg(n->mrs, n->pd, P.stale[h].lkey))
		return -EINVAL;
	return 0;
}

/* ---- generation ---- */

/* Does [off, off+len) of host h's main region meet a posted receive WQE's buffer? If
 * so *next gets the end of that buffer. */
static int meets_posted(int h, uint64_t off, uint32_t len, uint64_t *next)
{
	for (int k = 0; k < P.nrw; k++) {
		const struct rwr *w = &P.rw[k];

		if (w->node != h || w->done)
			continue;
		for (uint32_t i = 0; i < w->nsge; i++) {
			uint64_t lo = w->sge[i].addr - MAIN_IOVA, hi = lo + w->sge[i].len;

			if (w->sge[i].len && off < hi && lo < off + (len ? len : 1)) {
				*next = hi;
				return 1;
			}
		}
	}
	return 0;
}

/* len bytes of host h's main region for this batch, disjoint from the others and from
 * the buffers of receive WQEs still posted (left over from earlier batches). */
static int64_t take(int h, uint32_t len, uint32_t align)
{
	uint64_t off = P.bump[h], next;

	for (int guard = 0; guard <= MAXRECV * 4; guard++) {
		off = (off + align - 1) / align * align;
		if (off + len > MAIN_LEN)
			return -1;
		if (!meets_posted(h, off, len, &next))
			break;
		off = next;
	}
	P.bump[h] = (uint32_t)(off + len + rnd(16));
	return (int64_t)off;
}

static uint32_t pick_len(void)
{
	uint64_t c = rnd(100);

	if (c < 45)
		return 1 + (uint32_t)rnd(256);
	if (c < 75)
		return 1 + (uint32_t)rnd(3 * PMTU);
	if (c < 93)
		return 1 + (uint32_t)rnd(64 * 1024);
	return 1 + (uint32_t)rnd(1u << 20);
}

/* A list of 1-4 entries over len bytes at main offset off of host h (empty entries
 * included now and then). */
static uint32_t split(int h, uint64_t off, uint32_t len, uint32_t lkey, struct fc_sge *s,
		      uint32_t maxn)
{
	uint32_t n = 1 + (uint32_t)rnd(maxn), pos = 0;

	(void)h;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = i + 1 == n ? len - pos : (uint32_t)rnd(len - pos + 1);

		s[i] = (struct fc_sge){ .addr = MAIN_IOVA + off + pos, .len = k, .lkey = lkey };
		pos += k;
	}
	return n;
}

static int free_inv(int h)
{
	int k = (int)rnd(NINV);

	for (int i = 0; i < NINV; i++, k = (k + 1) % NINV)
		if (!P.inv_busy[h][k] && MODEL[h]->mr[P.inv_slot[h][k]].valid) {
			P.inv_busy[h][k] = 1;
			return k;
		}
	return -1;
}

static int is_consuming(uint8_t k) { return k == K_WRITE_IMM || (k >= K_SEND && k <= K_SEND_INV); }
static int is_atomic(uint8_t k) { return k >= K_CAS; }

/* An injected fault for o on its remote side (R_Key of a WRITE / READ / atomic). */
static int inject_remote(struct op *o, int t)
{
	int k;

	switch (o->inj) {
	case I_STALE:
		if (rnd(2)) {
			o->rkey = P.stale[t].rkey;
			return 0;
		}
		for (k = 0; k < NINV; k++) /* a region a SEND invalidated before */
			if (!MODEL[t]->mr[P.inv_slot[t][k]].valid) {
				o->rkey = P.inv[t][k].rkey;
				o->raddr = INV_IOVA(k);
				return 0;
			}
		o->rkey = P.stale[t].rkey;
		return 0;
	case I_OPD:
		o->rkey = P.opd[t].rkey;
		o->raddr = OPD_IOVA + rnd(OPD_LEN - (o->len < OPD_LEN ? o->len : 0)) / 8 * 8;
		return 0;
	case I_PERM: /* a READ of a write-only region, a WRITE / atomic to a read-only one */
		o->rkey = o->kind == K_READ ? P.wo[t].rkey : P.ro[t].rkey;
		o->raddr = (o->kind == K_READ ? WO_IOVA : RO_IOVA) + rnd(64) * 8;
		return 0;
	case I_BOUNDS:
		k = free_inv(t);
		if (k < 0)
			return -1;
		o->rkey = P.inv[t][k].rkey;
		if (o->len <= 8 || rnd(4) == 0) /* below the start */
			o->raddr = INV_IOVA(k) - 1 - rnd(8);
		else /* running off the end, the first bytes inside */
			o->raddr = INV_IOVA(k) + INV_LEN - 1 - rnd(o->len - 1 < INV_LEN ? o->len - 1 : INV_LEN - 1);
		if (is_atomic(o->kind)) /* across the end, or just below the start */
			o->raddr = rnd(2) ? INV_IOVA(k) + INV_LEN - 4 : INV_IOVA(k) - 8;
		return 0;
	default:
		return -1;
	}
}

/* The receive WQE a consuming WR o brings to host t's QP (unless it tests RNR). */
static int add_recv(struct op *o, int t)
{
	struct rwr *w;
	uint32_t cap;
	int64_t off;

	if (o->inj == I_RNR)
		return 0;
	if (P.nrw == MAXRECV)
		return -1;
	w = &P.rw[P.nrw];
	memset(w, 0, sizeof(*w));
	w->node = (uint8_t)t;
	w->pair = o->pair;
	w->wr_id = 0x8000000000000000ull | P.next_id++;
	cap = o->kind == K_WRITE_IMM ? (uint32_t)rnd(64) :
	      o->inj == I_ELEN ? (uint32_t)rnd(o->len) : o->len + (uint32_t)rnd(64);
	off = take(t, cap ? cap : 1, 1);
	if (off < 0)
		return -1;
	w->nsge = cap || rnd(2) ? split(t, (uint64_t)off, cap, P.main[t].lkey, w->sge, 4) : 0;
	if (o->inj == I_RECV_KEY) /* the first entry the message reaches has a stale key */
		for (uint32_t i = 0; i < w->nsge; i++)
			if (w->sge[i].len) {
				w->sge[i].lkey = P.stale[t].lkey;
				break;
			}
	P.nrw++;
	return 0;
}

static uint8_t pick_kind(int pair)
{
	static const uint8_t weight[K_COUNT] = { 20, 8, 18, 14, 6, 6, 7, 7, 7, 7 };
	uint64_t x = rnd(100);
	uint8_t k = 0;

	while (x >= weight[k]) {
		x -= weight[k];
		k++;
	}
	if (P.order[pair] == FC_RDMA_ORDER_NONE && k == K_WRITE_IMM)
		k = K_WRITE; /* 6.4 */
	return k;
}

static uint8_t pick_inj(uint8_t k)
{
	static const uint8_t rw[] = { I_STALE, I_OPD, I_PERM, I_BOUNDS, I_LOCAL };
	static const uint8_t at[] = { I_STALE, I_OPD, I_PERM, I_BOUNDS, I_ALIGN, I_LOCAL, I_SINK_LEN };
	static const uint8_t snd[] = { I_LOCAL, I_ELEN, I_RECV_KEY, I_RNR };
	static const uint8_t inv[] = { I_LOCAL, I_ELEN, I_RECV_KEY, I_INV_BAD, I_RNR };

	if (k == K_WRITE || k == K_READ)
		return rw[rnd(sizeof(rw))];
	if (k == K_WRITE_IMM)
		return rnd(3) ? rw[rnd(sizeof(rw))] : I_RNR;
	if (is_atomic(k))
		return at[rnd(sizeof(at))];
	if (k == K_SEND_INV)
		return inv[rnd(sizeof(inv))];
	return snd[rnd(sizeof(snd))];
}

/* Fill the initiator side of o: its list (or sink), and a local fault if injected. */
static int gen_local(struct op *o, int i)
{
	int64_t off;

	if (is_atomic(o->kind)) {
		uint32_t sl = o->inj == I_SINK_LEN ? 4 : 8;

		off = take(i, 8, 8);
		if (off < 0)
			return -1;
		o->sgl[0] = (struct fc_sge){ .addr = MAIN_IOVA + (uint64_t)off, .len = sl,
					     .lkey = P.main[i].lkey };
		o->nsge = 1;
	} else {
		off = take(i, o->len, 1 + (uint32_t)rnd(8));
		if (off < 0)
			return -1;
		/* a READ with a bounds fault scatters to one entry: the model takes a READ
		 * of at most one MTU for one transaction, seg.h also cuts on entries */
		o->nsge = split(i, (uint64_t)off, o->len, P.main[i].lkey, o->sgl,
				o->kind == K_READ && o->inj == I_BOUNDS ? 1 : 4);
	}
	if (o->inj == I_LOCAL) {
		for (uint32_t k = 0; k < o->nsge; k++)
			if (o->sgl[k].len) {
				if (rnd(2))
					o->sgl[k].lkey = P.stale[i].lkey;
				else
					o->sgl[k].addr = MAIN_IOVA + MAIN_LEN - 1; /* runs off the end */
				break;
			}
	}
	return 0;
}

/* The remote side of o on host t. */
static int gen_remote(struct op *o, int t)
{
	int64_t off;

	if (o->inj == I_STALE || o->inj == I_OPD || o->inj == I_PERM || o->inj == I_BOUNDS)
		return inject_remote(o, t);
	if (o->kind == K_WRITE || o->kind == K_WRITE_IMM || o->kind == K_READ) {
		off = take(t, o->len, 1 + (uint32_t)rnd(8));
		if (off < 0)
			return -1;
		o->raddr = MAIN_IOVA + (uint64_t)off;
		o->rkey = P.main[t].rkey;
	} else if (is_atomic(o->kind)) {
		off = take(t, 16, 8);
		if (off < 0)
			return -1;
		o->raddr = MAIN_IOVA + (uint64_t)off + (o->inj == I_ALIGN ? 1 + rnd(7) : 0);
		o->rkey = P.main[t].rkey;
	}
	if (o->kind == K_SEND_INV) {
		int k = o->inj == I_INV_BAD ? -1 : free_inv(t);

		if (k >= 0) {
			o->inv_rkey = P.inv[t][k].rkey;
		} else if (o->inj == I_NONE && P.mode[o->pair] != FC_RDMA_MODE_CIE) {
			o->kind = K_SEND; /* every region used: no error on a verbs pair */
		} else {
			uint64_t c = rnd(3);

			o->inv_rkey = c == 0 ? P.main[t].rkey : c == 1 ? P.opd[t].rkey : P.stale[t].rkey;
			o->inj = I_INV_BAD;
		}
	}
	return 0;
}

static void gen_atomic_args(struct op *o)
{
	uint64_t v = sim_rng_next(&P.r);

	memset(&o->at, 0, sizeof(o->at));
	o->at.cmp_swap = o->kind == K_CAS || o->kind == K_MCAS;
	o->at.swap_add = sim_rng_next(&P.r) >> rnd(64);
	o->at.compare = rnd(2) ? v : 0;
	o->at.compare_mask = ~0ull;
	o->at.swap_add_mask = o->kind == K_CAS ? ~0ull : 0;
	if (o->kind == K_MCAS || o->kind == K_MFAA) {
		o->at.swap_add_mask = sim_rng_next(&P.r);
		o->at.compare_mask = sim_rng_next(&P.r) & sim_rng_next(&P.r);
	}
}

/* Generate one WR for pair p from host i; forced_inj >= 0 forces an error WR. */
static int gen_op(int p, int i, int forced_inj)
{
	struct op *o = &P.ops[P.nops];
	int t = 1 - i, cie = P.mode[p] == FC_RDMA_MODE_CIE;

	memset(o, 0, sizeof(*o));
	o->pair = (uint8_t)p;
	o->ini = (uint8_t)i;
	o->kind = pick_kind(p);
	if (forced_inj >= 0) /* verbs pairs: an R_Key fault ends them */
		o->kind = rnd(2) ? K_WRITE : K_READ;
	if (is_consuming(o->kind) &&
	    (P.no_more[t][p] ||
	     P.n[t].mrq[p].count + (uint32_t)P.consuming[t][p] >= RM_RQ_MAX - 1))
		o->kind = K_WRITE;
	o->len = is_atomic(o->kind) ? 8 : pick_len();
	if (P.order[p] == FC_RDMA_ORDER_NONE && o->kind >= K_SEND && o->kind <= K_SEND_INV &&
	    o->len > PMTU)
		o->len = 1 + (uint32_t)rnd(PMTU); /* 6.4 */
	if (forced_inj >= 0)
		o->inj = (uint8_t)forced_inj;
	else if (cie && rnd(100) < 18)
		o->inj = pick_inj(o->kind);
	if (o->inj == I_RNR && P.order[p] != FC_RDMA_ORDER_STRONG && o->len > PMTU)
		o->len = PMTU; /* many RNR'd packets at once only make the run long */
	if (o->inj == I_ELEN && o->len < 2)
		o->len = 2;
	o->wr_id = ((uint64_t)i << 56) | ((uint64_t)p << 48) | P.next_id++;
	o->imm = (uint32_t)sim_rng_next(&P.r);
	if (gen_local(o, i) || gen_remote(o, t))
		return -1;
	if (is_atomic(o->kind))
		gen_atomic_args(o);
	if (is_consuming(o->kind)) {
		if (add_recv(o, t))
			return -1;
		P.consuming[t][p]++;
		if (o->inj == I_RNR)
			P.no_more[t][p] = 1;
	}
	P.nops++;
	return 0;
}

/* ---- applying: model and implementation ---- */

static int post_recvs(void)
{
	for (int k = P.rw_first; k < P.nrw; k++) {
		struct rwr *w = &P.rw[k];
		struct node *n = &P.n[w->node];
		struct rm_sge rs[4];
		struct fc_rdma_recv_wr wr = { .wr_id = w->wr_id, .num_sge = w->nsge, .sgl = w->sge };

		to_rm(w->sge, w->nsge, rs);
		rq_in(n->m, &n->mrq[w->pair]);
		if (rm_post_recv(n->m, rs, w->nsge, w->wr_id) ||
		    fc_rdma_post_recv(n->d, n->qp[w->pair], &wr)) {
			fail(n, "post_recv", w->wr_id, 0);
			return -1;
		}
		rq_out(n->m, &n->mrq[w->pair]);
	}
	return 0;
}

static void model_apply(struct op *o)
{
	struct node *ni = &P.n[o->ini], *nt = &P.n[1 - o->ini];
	struct rm_sge s[4];

	to_rm(o->sgl, o->nsge, s);
	rq_in(nt->m, &nt->mrq[o->pair]);
	switch (o->kind) {
	case K_WRITE:
	case K_WRITE_IMM:
		o->res = rm_write(ni->m, ni->pd, s, o->nsge, nt->m, nt->pd, o->raddr, o->rkey,
				  o->kind == K_WRITE_IMM ? &o->imm : NULL);
		break;
	case K_READ:
		o->res = rm_read(ni->m, ni->pd, s, o->nsge, nt->m, nt->pd, o->raddr, o->rkey);
		break;
	case K_SEND:
	case K_SEND_IMM:
	case K_SEND_INV:
		o->res = rm_send(ni->m, ni->pd, s, o->nsge, nt->m, nt->pd,
				 o->kind == K_SEND ? RM_SEND : o->kind == K_SEND_IMM ? RM_SEND_IMM :
				 RM_SEND_INV, o->kind == K_SEND_INV ? o->inv_rkey : o->imm);
		break;
	default:
		o->res = rm_atomic(ni->m, ni->pd, s, nt->m, nt->pd, o->raddr, o->rkey, &o->at);
		break;
	}
	rq_out(nt->m, &nt->mrq[o->pair]);
}

static int post_op(struct op *o)
{
	struct node *n = &P.n[o->ini];
	struct fc_rdma_send_wr wr = {
		.wr_id = o->wr_id, .opcode = wr_op[o->kind], .num_sge = o->nsge, .sgl = o->sgl,
		.imm = o->imm, .inv_rkey = o->inv_rkey, .remote_addr = o->raddr, .rkey = o->rkey,
	};
	int rc;

	if (o->at.cmp_swap) {
		wr.compare_add = o->at.compare;
		wr.compare_add_mask = o->at.compare_mask;
		wr.swap = o->at.swap_add;
		wr.swap_mask = o->at.swap_add_mask;
	} else if (is_atomic(o->kind)) {
		wr.compare_add = o->at.swap_add;
		wr.compare_add_mask = o->at.swap_add_mask;
	}
	rc = fc_rdma_post_send(n->d, n->qp[o->pair], &wr, sim_world_now(P.w));
	if (rc)
		fail(n, "post_send refused", o->wr_id, (uint64_t)-rc);
	return rc;
}

/* ---- checking ---- */

static struct op *op_of(uint64_t wr_id)
{
	for (int k = 0; k < P.nops; k++)
		if (P.ops[k].wr_id == wr_id)
			return &P.ops[k];
	return NULL;
}

static struct rwr *rwr_of(uint64_t wr_id)
{
	for (int k = 0; k < P.nrw; k++)
		if (P.rw[k].wr_id == wr_id)
			return &P.rw[k];
	return NULL;
}

static int ordered(int p) { return P.order[p] != FC_RDMA_ORDER_NONE; }

static int check_send_wc(struct node *n, const struct fc_rdma_wc *wc, uint64_t *last)
{
	struct op *o = op_of(wc->wr_id);
	int p;

	if (!o || o->ini != n->id || o->done++) {
		fail(n, "send completion unknown or repeated", wc->wr_id, o ? (uint64_t)o->done : 0);
		return -1;
	}
	p = o->pair;
	if (wc->qp_num != n->qp[p])
		fail(n, "send completion on the wrong QP", wc->wr_id, wc->qp_num);
	else if (wc->status != o->res.req_status)
		fail(n, "send status differs from the model (wr, status | vendor << 8)", wc->wr_id,
		     wc->status | (uint64_t)wc->vendor_err << 8);
	else if (wc->status == FC_WC_SUCCESS && wc->opcode != wc_op[o->kind])
		fail(n, "send completion opcode", wc->wr_id, wc->opcode);
	else if (ordered(p) && last[p] && wc->wr_id < last[p])
		fail(n, "send completions out of order (6.4)", wc->wr_id, last[p]);
	if (n->violation)
		printf("  op kind %u inj %u len %u pair %d order %u mode %u: model status %u err %d\n",
		       o->kind, o->inj, o->len, p, P.order[p], P.mode[p], o->res.req_status, o->res.err);
	last[p] = wc->wr_id;
	return n->violation ? -1 : 0;
}

/* The WR whose model result consumed receive WQE wr_id. */
static struct op *consumer_of(uint64_t wr_id)
{
	for (int k = 0; k < P.nops; k++)
		if (P.ops[k].res.resp_status != FC_WC_NONE && P.ops[k].res.recv_wr_id == wr_id)
			return &P.ops[k];
	return NULL;
}

static int check_recv_wc(struct node *n, const struct fc_rdma_wc *wc, uint64_t *last)
{
	struct rwr *w = rwr_of(wc->wr_id);
	struct op *o = consumer_of(wc->wr_id);
	const struct rm_result *r;

	if (!w || w->node != n->id || w->done++ || !o) {
		fail(n, "receive completion unknown, repeated or not in the model", wc->wr_id,
		     o ? 1 : 0);
		return -1;
	}
	r = &o->res;
	if (wc->status != r->resp_status)
		fail(n, "receive status differs from the model (wr, status)", wc->wr_id, wc->status);
	else if (wc->status == FC_WC_SUCCESS &&
		 (wc->byte_len != r->byte_len || !!(wc->flags & FC_RDMA_WC_F_IMM) != r->has_imm ||
		  (r->has_imm && wc->imm_data != r->imm) ||
		  !!(wc->flags & FC_RDMA_WC_F_INV) != r->invalidated ||
		  (r->invalidated && wc->invalidated_rkey != r->inv_rkey)))
		fail(n, "receive completion fields (wr, byte_len)", wc->wr_id, wc->byte_len);
	else if (wc->status == FC_WC_SUCCESS &&
		 wc->opcode != (o->kind == K_WRITE_IMM ? FC_RDMA_WC_RECV_RDMA_WITH_IMM : FC_RDMA_WC_RECV))
		fail(n, "receive opcode", wc->wr_id, wc->opcode);
	else if (ordered(w->pair) && last[w->pair] && wc->wr_id < last[w->pair])
		fail(n, "receive completions out of order (6.4)", wc->wr_id, last[w->pair]);
	if (n->violation)
		printf("  op kind %u inj %u len %u pair %u: model resp %u byte_len %u\n", o->kind,
		       o->inj, o->len, w->pair, r->resp_status, r->byte_len);
	last[w->pair] = wc->wr_id;
	return n->violation ? -1 : 0;
}

static int check_batch(void)
{
	struct fc_rdma_wc wc[64];
	int k;

	for (int h = 0; h < 2; h++) {
		struct node *n = &P.n[h];
		uint64_t lasts[NPAIR] = { 0 }, lastr[NPAIR] = { 0 };
		int got;

		while ((got = fc_rdma_poll_cq(n->d, n->scq, wc, 64)) > 0)
			for (k = 0; k < got; k++)
				if (check_send_wc(n, &wc[k], lasts))
					return -1;
		while ((got = fc_rdma_poll_cq(n->d, n->rcq, wc, 64)) > 0)
			for (k = 0; k < got; k++)
				if (check_recv_wc(n, &wc[k], lastr))
					return -1;
		if (got < 0) {
			fail(n, "poll_cq", (uint64_t)-got, 0);
			return -1;
		}
	}
	for (k = 0; k < P.nops; k++)
		if (P.ops[k].done != 1) {
			fail(&P.n[P.ops[k].ini], "WR did not complete exactly once", P.ops[k].wr_id,
			     (uint64_t)P.ops[k].done);
			printf("  op kind %u inj %u len %u pair %u\n", P.ops[k].kind, P.ops[k].inj,
			       P.ops[k].len, P.ops[k].pair);
			return -1;
		}
	for (k = 0; k < P.nops; k++) { /* receive WQEs the model consumed completed */
		const struct rm_result *r = &P.ops[k].res;
		struct rwr *w = r->resp_status != FC_WC_NONE ? rwr_of(r->recv_wr_id) : NULL;

		if (r->resp_status != FC_WC_NONE && (!w || w->done != 1)) {
			fail(&P.n[1 - P.ops[k].ini], "receive WQE not completed", r->recv_wr_id, 0);
			return -1;
		}
	}
	for (int h = 0; h < 2; h++) /* and the others are still posted */
		for (int p = 0; p < NPAIR; p++) {
			struct node *n = &P.n[h];

			if (!P.retired[p] &&
			    fc_rdma_qp_rq_outstanding(n->d, n->qp[p]) != (int)n->mrq[p].count) {
				fail(n, "posted receives differ from the model (pair, count)",
				     (uint64_t)p, n->mrq[p].count);
				return -1;
			}
		}
	return 0;
}

/* What a failed memory check prints: the differing range, the batch's WRs and receives. */
static void dump_batch(const struct node *n, uint32_t at)
{
	uint32_t end = at, nd = 0;

	for (uint32_t i = at; i < RM_MEM_BYTES; i++)
		if (n->mem[i] != n->m->mem[i] && !(n->m->undef[i] && n->mem[i] == n->m->alt[i])) {
			end = i;
			nd++;
		}
	printf("  host %d: model %u (undefined %u alt %u); %u bytes differ in [%#x, %#x]\n",
	       n->id, n->m->mem[at], n->m->undef[at], n->m->alt[at], nd, at, end);
	for (int k = 0; k < P.nops; k++) {
		const struct op *o = &P.ops[k];

		printf("  op %d kind %u inj %u len %u ini %u pair %u raddr %#" PRIx64 " status %u sgl",
		       k, o->kind, o->inj, o->len, o->ini, o->pair, o->raddr, o->res.req_status);
		for (uint32_t i = 0; i < o->nsge; i++)
			printf(" [%#" PRIx64 "+%u]", o->sgl[i].addr, o->sgl[i].len);
		printf("\n");
	}
	for (int k = 0; k < P.nrw; k++) {
		const struct op *c = consumer_of(P.rw[k].wr_id);

		printf("  recv %d node %u pair %u done %d consumer %d sgl", k, P.rw[k].node,
		       P.rw[k].pair, P.rw[k].done, c ? (int)(c - P.ops) : -1);
		for (uint32_t i = 0; i < P.rw[k].nsge; i++)
			printf(" [%#" PRIx64 "+%u]", P.rw[k].sge[i].addr, P.rw[k].sge[i].len);
		printf("\n");
	}
}

static int check_memory(void)
{
	for (int h = 0; h < 2; h++) {
		struct node *n = &P.n[h];
		int at = rm_mem_check(n->m, n->mem, RM_MEM_BYTES);

		if (at >= 0) {
			fail(n, "memory differs from the model (offset, value)", (uint64_t)at,
			     n->mem[at]);
			dump_batch(n, (uint32_t)at);
			return -1;
		}
		rm_mem_sync(n->m, n->mem);
		for (int k = 0; k < NINV; k++) {
			struct fc_mr_info mi;

			if (fc_mr_query(n->mrs, n->pd, P.inv[h][k].lkey, &mi) ||
			    mi.valid != n->m->mr[P.inv_slot[h][k]].valid) {
				fail(n, "invalidation differs from the model (region)", (uint64_t)k, 0);
				return -1;
			}
		}
	}
	return 0;
}

/* ---- one seed ---- */

static int seed_setup(uint64_t seed)
{
	struct node_cfg nc = { .mem_len = RM_MEM_BYTES, .pending_resp = 16, .pull_defer_max = 1024 };
	struct sim_link_cfg lc = { 0 };
	struct conn_opts o = { .rto_ns = 2 * MS }; /* above the worst queueing delay */
	int clean = seed % 8 == 0;

	memset(&P, 0, sizeof(P));
	nlog = MAXLOG; /* no packet log */
	P.w = sim_world_new(seed);
	if (!P.w)
		return -ENOMEM;
	sim_world_rng(P.w, 0x50524f50ull /* "PROP" */, &P.r);
	lc.latency_ns = (2 + rnd(9)) * US;
	lc.jitter_ns = rnd(2 * US);
	lc.bandwidth_bps = (25 + rnd(76)) * 1000000000ull;
	if (!clean) {
		lc.drop_ppm = (uint32_t)rnd(30001);
		lc.dup_ppm = (uint32_t)rnd(20001);
		lc.reorder_ppm = (uint32_t)rnd(50001);
		lc.reorder_delay_ns = (1 + rnd(20)) * US;
		lc.corrupt_ppm = (uint32_t)rnd(5001);
	}
	if (rnd(4) == 0) { /* small per-connection credits: -EAGAIN and ops->credits */
		o.limit_req_pkt_tx = 8 + (uint32_t)rnd(32);
		o.limit_data_pkt_tx = 2 + (uint32_t)rnd(8);
		nc.pending_resp = 1 + (uint32_t)rnd(3);
	}
	for (int h = 0; h < 2; h++) {
		P.n[h].m = MODEL[h];
		rm_init(MODEL[h], PMTU);
		if (node_init(&P.n[h], h, &nc, P.w))
			return -EINVAL;
		P.n[h].m = MODEL[h];
		for (uint32_t i = 0; i < RM_MEM_BYTES; i++) /* both start equal */
			MODEL[h]->mem[i] = P.n[h].mem[i] = (uint8_t)(i * 2654435761u >> 24 ^ (uint32_t)h);
		if (regions(h))
			return -EINVAL;
	}
	if (sim_world_connect(P.w, 0, 1, &lc, &lc) < 0)
		return -EINVAL;
	P.order[0] = FC_RDMA_ORDER_STRONG;
	P.order[1] = FC_RDMA_ORDER_WEAK;
	P.order[2] = FC_RDMA_ORDER_NONE;
	for (int p = 0; p < NPAIR; p++) {
		P.mode[p] = p == 2 || rnd(2) ? FC_RDMA_MODE_CIE : FC_RDMA_MODE_VERBS;
		o.ordered = P.order[p] == FC_RDMA_ORDER_STRONG;
		for (int h = 0; h < 2; h++)
			for (int w = 0; w < 2; w++)
				o.psn[h][w] = (uint32_t)sim_rng_next(&P.r);
		o.rsn0 = (uint32_t)sim_rng_next(&P.r);
		if (conn_pair(P.n, p, &o) || qp_pair(P.n, p, P.order[p], P.mode[p], 1, 3))
			return -EINVAL;
	}
	return 0;
}

static void seed_fini(void)
{
	for (int h = 0; h < 2; h++)
		node_fini(&P.n[h]);
	sim_world_free(P.w);
}

/* Per connection: what the sublayers counted (printed when a seed fails). */
static void dump_conns(void)
{
	for (int h = 0; h < 2; h++) {
		const struct fc_rdma_counters *c = fc_rdma_counters(P.n[h].d);

		printf("  host %d rdma: push %" PRIu64 " pull %" PRIu64 " resp %" PRIu64 " req %" PRIu64
		       " rnr %" PRIu64 "/%" PRIu64 " pull busy %" PRIu64 " held %" PRIu64 " lost %" PRIu64 " eagain %" PRIu64 " nak %" PRIu64
		       "\n", h, c->tx_push, c->tx_pull, c->tx_resp, c->rx_req, c->rnr_sent,
		       c->rnr_exhausted, c->pull_rnr_busy, c->pull_deferred, c->resp_lost, c->eagain,
		       c->nak_sent);
	}
	for (int h = 0; h < 2; h++)
		for (int p = 0; p < NPAIR; p++) {
			const struct fc_pdl_counters *c = fc_pdl_counters(fc_txn_pdl(P.n[h].conn[p]));
			const struct fc_txn_counters *t = fc_txn_counters(P.n[h].conn[p]);

			printf("  host %d pair %d: tx %" PRIu64 " retx to/early/own %" PRIu64 "/%" PRIu64
			       "/%" PRIu64 " nacks tx/rx %" PRIu64 "/%" PRIu64 " resync tx/rx %"
			       PRIu64 "/%" PRIu64 " rx dup/old/oow %" PRIu64 "/%" PRIu64 "/%" PRIu64
			       " refused rsrc/slot %" PRIu64 "/%" PRIu64 " rnr ulp/auto %" PRIu64 "/%" PRIu64
			       " timeouts %" PRIu64 " fatal %" PRIu64 "\n", h, p, c->tx_pkts,
			       c->retx_timeout, c->retx_early, c->retx_own, c->nacks_tx,
			       c->nacks_rx, c->resyncs_tx, c->resyncs_rx, c->rx_dup, c->rx_old, c->rx_oow,
			       t->refused_rsrc, t->refused_slot, t->ulp_rnr, t->auto_rnr, t->timeouts,
			       c->fatal);
			{
				struct fc_txn *x = P.n[h].conn[p];
				uint32_t tb = fc_txn_target_brsn(x), ib = fc_txn_brsn(x);

				printf("    target brsn %u nrsn %u state(brsn) %d state(nrsn) %d; initiator brsn %u nrsn %u state(brsn) %d\n",
				       tb, fc_txn_target_nrsn(x), fc_txn_tstate(x, tb),
				       fc_txn_tstate(x, fc_txn_target_nrsn(x)), ib, fc_txn_nrsn(x),
				       fc_txn_istate(x, ib));
			}
		}
}

/* One batch; last: verbs pairs may end with an error WR. Returns 0 or 1. */
static int batch(int last, struct totals *tot)
{
	int nops = 6 + (int)rnd(MAXOPS - 10), ending[NPAIR] = { 0 };

	P.nops = 0;
	P.rw_first = P.nrw;
	memset(P.bump, 0, sizeof(P.bump));
	memset(P.inv_busy, 0, sizeof(P.inv_busy));
	memset(P.consuming, 0, sizeof(P.consuming));
	memset(P.no_more, 0, sizeof(P.no_more));
	for (int p = 0; p < NPAIR; p++)
		ending[p] = last && P.mode[p] == FC_RDMA_MODE_VERBS && !P.retired[p] && rnd(2) ?
			    1 + (int)rnd(2) : 0; /* 1 + the host whose QP fails */
	for (int k = 0; k < nops && P.nops < MAXOPS - NPAIR; k++) {
		int p = (int)rnd(NPAIR), i = (int)rnd(2);

		if (P.retired[p])
			continue;
		if (ending[p])
			i = ending[p] - 1; /* only that direction: the other QP's WQEs stay */
		gen_op(p, i, -1);
	}
	for (int p = 0; p < NPAIR; p++)
		if (ending[p]) {
			static const uint8_t f[] = { I_STALE, I_OPD, I_PERM };

			if (gen_op(p, ending[p] - 1, f[rnd(3)]))
				ending[p] = 0;
		}
	if (post_recvs())
		return 1;
	for (int k = 0; k < P.nops; k++) {
		struct op *o = &P.ops[k];

		model_apply(o);
		if (post_op(o))
			return 1;
		tot->ops++;
		tot->bytes += o->len;
		tot->by_kind[o->kind]++;
		tot->by_inj[o->inj]++;
		tot->inj += o->inj != I_NONE;
		tot->errs += o->res.req_status != FC_WC_SUCCESS;
	}
	if (run_idle(P.w, P.n, 600 * SEC) || check_batch() || check_memory())
		return 1;
	for (int p = 0; p < NPAIR; p++)
		if (ending[p]) {
			struct node *n = &P.n[ending[p] - 1];

			if (fc_rdma_qp_state(n->d, n->qp[p]) != FC_RDMA_QPS_ERR) {
				fail(n, "verbs QP not in ERR after its failed WR (pair)", (uint64_t)p, 0);
				return 1;
			}
			P.retired[p] = 1;
		}
	tot->batches++;
	return 0;
}

static int run_seed(uint64_t seed, void *arg)
{
	struct totals *tot = arg;
	int rc = 0, nb;

	if (seed_setup(seed)) {
		printf("sim: seed setup failed\n");
		seed_fini();
		return 1;
	}
	nb = 3 + (int)rnd(3);
	for (int b = 0; b < nb && !rc; b++)
		rc = batch(b == nb - 1, tot);
	if (rc) {
		for (int h = 0; h < 2; h++)
			if (P.n[h].violation)
				printf("sim: %s\n", P.n[h].why);
		printf("  pairs: order %u/%u/%u mode %u/%u/%u\n", P.order[0], P.order[1], P.order[2],
		       P.mode[0], P.mode[1], P.mode[2]);
		for (int k = 0; k < P.nops; k++)
			printf("  op %d wr %#" PRIx64 " kind %u inj %u len %u ini %u pair %u model %u/%u done %d\n",
			       k, P.ops[k].wr_id, P.ops[k].kind, P.ops[k].inj, P.ops[k].len, P.ops[k].ini,
			       P.ops[k].pair, P.ops[k].res.req_status, P.ops[k].res.resp_status, P.ops[k].done);
		sim_world_dump(P.w, stdout);
		dump_conns();
	}
	tot->seeds++;
	tot->events += sim_world_events(P.w);
	for (int h = 0; h < 2; h++) {
		const struct fc_rdma_counters *c = fc_rdma_counters(P.n[h].d);

		tot->eagain += c->eagain;
		tot->deferred += c->pull_deferred;
		tot->rnr_sent += c->rnr_sent;
		tot->rnr_exhausted += c->rnr_exhausted;
		tot->resp_lost += c->resp_lost;
		if (c->resp_lost && !rc) {
			printf("sim: seed %#" PRIx64 ": a Pull Data was lost\n", seed);
			rc = 1;
		}
	}
	last_trace = sim_world_trace_hash(P.w);
	seed_fini();
	return rc;
}

int main(int argc, char **argv)
{
	static const char *const inj_name[I_COUNT] = {
		"none", "stale key", "other PD", "permission", "bounds", "alignment", "local key",
		"sink length", "recv too short", "recv L_Key", "bad invalidate", "no recv (RNR)" };
	struct totals tot = { 0 };
	struct sim_seed_opts o;
	int failed = 0;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--summary"))
			tot.summary = 1;
	if (sim_seed_opts_parse(&o, argc, argv, 300))
		return 2;
	failed |= scen_read();
	failed |= scen_write();
	failed |= scen_push_rnr();
	failed |= scen_pull_rnr();
	failed |= scen_push_cie();
	if (failed) {
		printf("sim: 0 passed, 1 failed\n");
		return 1;
	}
	printf("sim: scenarios 6.6.1-6.6.5 passed\n");
	MODEL[0] = calloc(1, sizeof(struct rm_node));
	MODEL[1] = calloc(1, sizeof(struct rm_node));
	if (!MODEL[0] || !MODEL[1])
		return 2;
	{ /* the same seed replays the same event trace, another seed another one */
		struct totals t1 = { 0 };
		uint64_t h1, h2, h3;

		run_seed(o.first, &t1);
		h1 = last_trace;
		run_seed(o.first, &t1);
		h2 = last_trace;
		run_seed(o.first + 1, &t1);
		h3 = last_trace;
		if (h1 != h2 || h1 == h3) {
			printf("sim: trace of seed %#" PRIx64 " not reproducible\nsim: 0 passed, 1 failed\n",
			       o.first);
			return 1;
		}
		printf("sim: seed %#" PRIx64 " replays to trace %#" PRIx64 "\n", o.first, h1);
	}
	failed = sim_run_seeds(&o, argv[0], run_seed, &tot, stdout);
	if (tot.summary || failed) {
		printf("\n%-24s %" PRIu64 " (%" PRIu64 " batches)\n", "seeds", tot.seeds, tot.batches);
		printf("%-24s %" PRIu64 " (%" PRIu64 " bytes)\n", "WRs", tot.ops, tot.bytes);
		printf("%-24s %" PRIu64 " injected, %" PRIu64 " completed in error\n", "faults",
		       tot.inj, tot.errs);
		for (int k = 1; k < I_COUNT; k++)
			printf("  %-22s %" PRIu64 "\n", inj_name[k], tot.by_inj[k]);
		printf("%-24s %" PRIu64 " -EAGAIN, %" PRIu64 " answers kept for room\n",
		       "txn back-pressure", tot.eagain, tot.deferred);
		printf("%-24s %" PRIu64 " RNR NACKs, %" PRIu64 " retries exhausted\n", "RNR",
		       tot.rnr_sent, tot.rnr_exhausted);
		printf("%-24s %" PRIu64 "\n", "simulator events", tot.events);
	}
	free(MODEL[0]);
	free(MODEL[1]);
	return failed ? 1 : 0;
}
