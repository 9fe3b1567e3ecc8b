/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Property test of the node (daemon/node.h) in the deterministic simulator: two nodes,
 * the simulator's link as their I/O backend (sim_io.c), the simulated ICV as their
 * encapsulation step, connected as a CM would connect them (reserved CIDs exchanged).
 * The link drops, duplicates, reorders and corrupts per seed (every 4th seed clean).
 *
 * Per seed, BATCHES batches; in each, both nodes post OPS random work requests on their
 * RC QP to the other: WRITE (1 B - 16 KiB), READ (1 B - 8 KiB), SEND (1 B - 16 KiB, into
 * RECVs the peer posted), FetchAdd and CmpSwap (hitting or missing). The WRs of a batch
 * touch disjoint memory, so a shadow copy of each node's memory, updated when a WR is
 * posted, must equal the real memory when the batch is over. Properties:
 *  - every WR and every RECV completes exactly once, successfully, with its byte count;
 *  - both memories equal their shadows byte for byte; READ sinks hold what was read;
 *    atomics return the value the shadow had;
 *  - nothing is outstanding afterwards; the nodes dropped no frame for an unknown CID or
 *    a foreign peer, and ICV drops happen only where the link corrupted packets (a
 *    corrupted packet's duplicate is a second drop).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_pair.h"
#include "sim.h"
#include "sim_io.h"

#define BATCHES 4
#define OPS 24
#define SLOT (16u << 10)
#define MEM (3u << 20)
#define W_OFF 0u                  /* WRITE targets: OPS slots of SLOT */
#define SRC_OFF (512u << 10)      /* sources of outgoing WRITE / SEND */
#define R_OFF (1u << 20)          /* READ sources: fixed pattern, never written */
#define S_OFF ((1u << 20) + (256u << 10)) /* READ sinks: OPS slots of 8 KiB */
#define RECV_OFF (1536u << 10)    /* RECV buffers: OPS slots of SLOT */
#define ATOM_OFF (2u << 20)       /* atomic words, 8 bytes each */
#define ARES_OFF ((2u << 20) + 4096u) /* atomic results */
#define IOVA 0x10000000ull
#define SEC 1000000000ull

enum op { OP_WRITE, OP_READ, OP_SEND, OP_FADD, OP_CSWAP, OP_N };

struct side {
	struct np_host h;
	struct sim_node sn;
	uint8_t *shadow;
	uint32_t qpn;
	struct fc_txn *conn;
	/* what the batch expects */
	uint8_t done[OPS], recv_done[OPS];
	uint64_t atom_old[OPS];
	uint32_t op_len[OPS], nsend;
	uint8_t op_kind[OPS];
};

struct run {
	struct side s[2];
	struct sim_rng rng;
	char why[200];
	int bad;
};

static void fail(struct run *r, const char *what, uint64_t a, uint64_t b)
{
	if (!r->bad)
		snprintf(r->why, sizeof(r->why), "%s (%" PRIu64 ", %" PRIu64 ")", what, a, b);
	r->bad = 1;
}

static uint32_t rnd(struct run *r, uint32_t n) { return (uint32_t)(sim_rng_next(&r->rng) % n); }

static void fill_rand(struct run *r, uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)sim_rng_next(&r->rng);
}

/* Post one WR of kind k, index i, from side x to side y; apply it to the shadows. */
static int post_op(struct run *r, int x, int i, uint64_t now)
{
	struct side *a = &r->s[x], *b = &r->s[1 - x];
	struct fc_rdma_send_wr wr = { .wr_id = (uint64_t)i };
	struct fc_sge sge = { .lkey = a->h.k.lkey };
	uint8_t k = (uint8_t)rnd(r, OP_N);
	uint32_t len = 0;
	uint64_t *word;

	a->op_kind[i] = k;
	switch (k) {
	case OP_WRITE:
		len = 1 + rnd(r, SLOT);
		fill_rand(r, a->h.mem + SRC_OFF + (uint32_t)i * SLOT, len);
		memcpy(a->shadow + SRC_OFF + (uint32_t)i * SLOT, a->h.mem + SRC_OFF + (uint32_t)i * SLOT, len);
		memcpy(b->shadow + W_OFF + (uint32_t)i * SLOT, a->h.mem + SRC_OFF + (uint32_t)i * SLOT, len);
		wr.opcode = FC_RDMA_WR_WRITE;
		sge.addr = IOVA + SRC_OFF + (uint32_t)i * SLOT;
		wr.remote_addr = IOVA + W_OFF + (uint32_t)i * SLOT;
		break;
	case OP_READ:
		len = 1 + rnd(r, 8192);
		memcpy(a->shadow + S_OFF + (uint32_t)i * 8192, b->shadow + R_OFF + (uint32_t)i * 8192, len);
		wr.opcode = FC_RDMA_WR_READ;
		sge.addr = IOVA + S_OFF + (uint32_t)i * 8192;
		wr.remote_addr = IOVA + R_OFF + (uint32_t)i * 8192;
		break;
	case OP_SEND: {
		struct fc_sge rs = { .addr = IOVA + RECV_OFF + b->nsend * SLOT, .len = SLOT,
				     .lkey = b->h.k.lkey };
		struct fc_rdma_recv_wr rw = { .wr_id = b->nsend, .num_sge = 1, .sgl = &rs };
		int rc = fc_rdma_post_recv(fc_node_rdma(b->h.n), b->qpn, &rw);

		if (rc)
			return rc;
		len = 1 + rnd(r, SLOT);
		fill_rand(r, a->h.mem + SRC_OFF + (uint32_t)i * SLOT, len);
		memcpy(a->shadow + SRC_OFF + (uint32_t)i * SLOT, a->h.mem + SRC_OFF + (uint32_t)i * SLOT, len);
		memcpy(b->shadow + RECV_OFF + b->nsend * SLOT, a->h.mem + SRC_OFF + (uint32_t)i * SLOT, len);
		b->op_len[b->nsend++] = len; /* the receiver's view: RECV j gets len bytes */
		wr.opcode = FC_RDMA_WR_SEND;
		sge.addr = IOVA + SRC_OFF + (uint32_t)i * SLOT;
		break;
	}
	case OP_FADD:
	case OP_CSWAP:
		len = 8;
		word = (uint64_t *)(b->shadow + ATOM_OFF + (uint32_t)i * 8);
		a->atom_old[i] = *word;
		wr.compare_add = k == OP_FADD ? sim_rng_next(&r->rng) :
			(rnd(r, 2) ? *word : *word ^ 1);
		wr.swap = sim_rng_next(&r->rng);
		if (k == OP_FADD)
			*word += wr.compare_add;
		else if (*word == wr.compare_add)
			*word = wr.swap;
		memcpy(a->shadow + ARES_OFF + (uint32_t)i * 8, &a->atom_old[i], 8);
		wr.opcode = k == OP_FADD ? FC_RDMA_WR_FETCH_ADD : FC_RDMA_WR_CMP_SWAP;
		sge.addr = IOVA + ARES_OFF + (uint32_t)i * 8;
		wr.remote_addr = IOVA + ATOM_OFF + (uint32_t)i * 8;
		break;
	}
	sge.len = len;
	wr.num_sge = 1;
	wr.sgl = &sge;
	wr.rkey = b->h.k.rkey;
	a->done[i] = 0;
	return fc_rdma_post_send(fc_node_rdma(a->h.n), a->qpn, &wr, now);
}

static void check_cqs(struct run *r)
{
	for (int x = 0; x < 2; x++) {
		struct side *a = &r->s[x];
		struct fc_rdma *d = fc_node_rdma(a->h.n);
		struct fc_rdma_wc wc[32];
		int n;

		while ((n = fc_rdma_poll_cq(d, a->h.scq, wc, 32)) > 0)
			for (int j = 0; j < n; j++) {
				if (wc[j].wr_id >= OPS || a->done[wc[j].wr_id]++)
					fail(r, "send completion twice or unknown", wc[j].wr_id, (uint64_t)x);
				else if (wc[j].status != FC_WC_SUCCESS)
					fail(r, "send completion in error", wc[j].wr_id, wc[j].status);
			}
		if (n < 0)
			fail(r, "poll send cq", (uint64_t)-n, (uint64_t)x);
		while ((n = fc_rdma_poll_cq(d, a->h.rcq, wc, 32)) > 0)
			for (int j = 0; j < n; j++) {
				uint64_t id = wc[j].wr_id;

				if (id >= a->nsend || a->recv_done[id]++)
					fail(r, "recv completion twice or unknown", id, (uint64_t)x);
				else if (wc[j].status != FC_WC_SUCCESS || wc[j].byte_len != a->op_len[id])
					fail(r, "recv completion", wc[j].status, wc[j].byte_len);
			}
		if (n < 0)
			fail(r, "poll recv cq", (uint64_t)-n, (uint64_t)x);
	}
}

static int run_seed(uint64_t seed, void *arg)
{
	struct run *r = calloc(1, sizeof(*r));
	struct sim_world *w = sim_world_new(seed);
	struct sim_link_cfg lc = { .latency_ns = 2000, .bandwidth_bps = 100000000000ull };
	struct fc_txn_conn_cfg cc;
	struct fc_rdma_qp_init qi;
	struct fc_txn *conn[2];
	uint32_t qpn[2];
	uint64_t corrupt = 0;
	int rc = 1;

	(void)arg;
	if (!r || !w)
		goto out;
	sim_world_rng(w, SIM_STREAM_ENDPOINT(99), &r->rng);
	if (seed % 4) {
		lc.jitter_ns = rnd(r, 1000);
		lc.drop_ppm = rnd(r, 30000);
		lc.dup_ppm = rnd(r, 10000);
		lc.reorder_ppm = rnd(r, 20000);
		lc.reorder_delay_ns = 2000 + rnd(r, 20000);
		lc.corrupt_ppm = rnd(r, 5000);
	}
	for (int x = 0; x < 2; x++) {
		struct fc_node_cfg nc;
		struct fc_peer_addr pa;

		fc_node_cfg_default(&nc);
		nc.io = &sim_io_ops;
		nc.io_ctx = &r->s[x].sn;
		nc.encap = &sim_icv_encap;
		nc.txn.cap[FC_TXN_REQ_BUF_RX] = nc.txn.cap[FC_TXN_NET_BUF_RX] = 32768;
		nc.txn.cap[FC_TXN_REQ_BUF_TX] = nc.txn.cap[FC_TXN_DATA_BUF_TX] = 32768;
		sim_peer_addr((uint32_t)(1 - x), &pa);
		if (np_host_init(&r->s[x].h, &nc, MEM, IOVA, 1024, &pa, 0x51u + (uint32_t)x))
			goto out;
		r->s[x].sn.node = r->s[x].h.n;
		r->s[x].shadow = calloc(1, MEM);
		if (!r->s[x].shadow)
			goto out;
		/* the READ sources: a fixed pattern, in memory and shadow */
		fill_rand(r, r->s[x].h.mem + R_OFF, 256u << 10);
		memcpy(r->s[x].shadow + R_OFF, r->s[x].h.mem + R_OFF, 256u << 10);
		if (sim_world_add_endpoint(w, &sim_node_ep_ops, &r->s[x].sn) != x)
			goto out;
	}
	if (sim_world_connect(w, 0, 1, &lc, &lc) < 0)
		goto out;
	fc_txn_conn_cfg_default(&cc);
	cc.pdl.max_retx = 100;
	fc_rdma_qp_init_default(&qi);
	qi.sq_depth = 2 * OPS;
	qi.rq_depth = 2 * OPS;
	qi.max_inflight = 128;
	if (np_connect_rc(&r->s[0].h, &r->s[1].h, &cc, &qi, conn, qpn))
		goto out;
	for (int x = 0; x < 2; x++) {
		r->s[x].qpn = qpn[x];
		r->s[x].conn = conn[x];
	}
	for (int b = 0; b < BATCHES && !r->bad; b++) {
		struct sim_run_result res;
		uint64_t now = sim_world_now(w);

		for (int x = 0; x < 2; x++) {
			r->s[x].nsend = 0;
			memset(r->s[x].recv_done, 0, sizeof(r->s[x].recv_done));
		}
		for (int i = 0; i < OPS && !r->bad; i++)
			for (int x = 0; x < 2; x++)
				if ((rc = post_op(r, x, i, now)))
					fail(r, "post", (uint64_t)-rc, (uint64_t)i);
		rc = 1;
		sim_world_run(w, now + 60 * SEC, 50000000, &res);
		if (res.stop != SIM_STOP_IDLE)
			fail(r, "batch did not finish", res.stop, res.now_ns);
		check_cqs(r);
		for (int x = 0; x < 2 && !r->bad; x++) {
			struct side *a = &r->s[x];

			for (int i = 0; i < OPS; i++)
				if (a->done[i] != 1)
					fail(r, "WR not completed once", (uint64_t)i, a->done[i]);
			for (uint32_t j = 0; j < a->nsend; j++)
				if (a->recv_done[j] != 1)
					fail(r, "RECV not completed once", j, a->recv_done[j]);
			for (uint32_t off = 0; off < MEM && !r->bad; off += 4096)
				if (memcmp(a->h.mem + off, a->shadow + off, 4096))
					fail(r, "memory differs from the shadow", (uint64_t)x, off);
			if (fc_rdma_qp_sq_outstanding(fc_node_rdma(a->h.n), a->qpn) != 0)
				fail(r, "send queue not empty", (uint64_t)x, 0);
		}
	}
	for (int x = 0; x < 2; x++) {
		const struct fc_node_counters *c = fc_node_counters(r->s[x].h.n);

		if (c->rx_unknown_cid || c->rx_peer_mismatch || c->rx_short || c->tx_io_drop)
			fail(r, "node dropped frames it should not have", c->rx_unknown_cid,
			     c->rx_peer_mismatch);
		corrupt += sim_world_link(w, (uint32_t)x)->st.corrupted;
	}
	if (!lc.corrupt_ppm && (fc_node_counters(r->s[0].h.n)->rx_encap_err ||
				fc_node_counters(r->s[1].h.n)->rx_encap_err))
		fail(r, "ICV drops on a link that corrupts nothing", 0, 0);
	/* a corrupted packet may also be duplicated: the copy carries the same bytes */
	if (fc_node_counters(r->s[0].h.n)->rx_encap_err +
	    fc_node_counters(r->s[1].h.n)->rx_encap_err > 2 * corrupt)
		fail(r, "more ICV drops than corrupted packets and their copies", corrupt, 0);
	rc = r->bad;
	if (getenv("NODE_SIM_VERBOSE"))
		printf("seed %#" PRIx64 ": frames %" PRIu64 "/%" PRIu64 " icv drops %" PRIu64 "\n", seed,
		       fc_node_counters(r->s[0].h.n)->tx_frames, fc_node_counters(r->s[1].h.n)->tx_frames,
		       fc_node_counters(r->s[0].h.n)->rx_encap_err + fc_node_counters(r->s[1].h.n)->rx_encap_err);
	if (r->bad) {
		printf("sim: seed %#" PRIx64 ": %s\n", seed, r->why);
		sim_world_dump(w, stdout);
	}
out:
	if (r)
		for (int x = 0; x < 2; x++) {
			np_host_fini(&r->s[x].h);
			free(r->s[x].shadow);
		}
	free(r);
	sim_world_free(w);
	return rc;
}

int main(int argc, char **argv)
{
	return sim_main(argc, argv, 200, run_seed, NULL);
}
