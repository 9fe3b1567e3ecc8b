/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine on rings in caller memory (rdma.h "rings in caller memory", falcon/queue.h):
 * attach checks, WRs from a ring checked like posted ones (a bad one completes in error,
 * in SQ order), a hostile producer index, a full CQ ring as a CQ overflow; and two
 * processes: a forked client posts WRITEs, SENDs and RECVs into rings in a shared memfd
 * and polls its completions there while this process runs two nodes joined in memory
 * (tests/node_pair.h's in-memory backend).
 * Every wr_id completes exactly once and in order, every byte is checked.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "falcon/queue.h"
#include "node_pair.h"
#include "rdma.h"
#include "wire_falcon.h"
#include "wire_rdma.h"

#define PMTU 1024
#define TMTU (PMTU + 128)
#define IOVA 0x40000000ull
#define US 1000ull
#define RING 256u          /* entries of every ring, and the engine's SQ/RQ depth */
#define NSLOT 1024u        /* data slots per region */
#define SLOT 64u
#define NWR 100000u        /* send WRs the client posts (half WRITE, half SEND) */

/* the shared memory: four rings, then A's source slots, B's WRITE and RECV slots */
struct shm_layout {
	size_t sq, rq, scq, rcq, src, dst, rcv, total;
};

struct host {
	struct fc_node *n;
	struct np_memio io;      /* frames sent to this host */
	uint32_t peer;
	struct fc_mr_table *mrs;
	struct fc_rdma *d;
	uint32_t pd, scq, rcq, qp;
	struct fc_txn *conn;
	struct fc_mr_keys k;
	uint32_t rand_state;
};

static struct host HS[2];
#define A (&HS[0])
#define B (&HS[1])
static uint64_t now;
static uint8_t *shm;
static struct shm_layout L;

static uint32_t key_rand(void *ctx)
{
	struct host *h = ctx;

	h->rand_state = h->rand_state * 1103515245u + 12345u;
	return h->rand_state;
}

static void layout(void)
{
	size_t o = 0;

	L.sq = o;
	o += fc_rdma_ring_bytes(FC_RING_SQ, RING);
	L.rq = o = (o + 63) & ~(size_t)63;
	o += fc_rdma_ring_bytes(FC_RING_RQ, RING);
	L.scq = o = (o + 63) & ~(size_t)63;
	o += fc_rdma_ring_bytes(FC_RING_CQ, RING);
	L.rcq = o = (o + 63) & ~(size_t)63;
	o += fc_rdma_ring_bytes(FC_RING_CQ, RING);
	L.src = o = (o + 4095) & ~(size_t)4095;
	L.dst = L.src + NSLOT * SLOT;
	L.rcv = L.dst + NSLOT * SLOT;
	L.total = L.rcv + NSLOT * SLOT;
}

/* Deliver every packet at once, fire timers when idle; until quiet or `steps`. The
 * nodes may count nothing wrong. */
static void pump(int steps)
{
	for (int s = 0; s < steps; s++) {
		unsigned moved = 0;

		now += US;
		for (int h = 0; h < 2; h++)
			moved += fc_node_poll_tx(HS[h].n, now, FC_NODE_BATCH_MAX);
		for (int h = 0; h < 2; h++)
			if (HS[h].io.nin) {
				moved++;
				np_memio_deliver(&HS[h].io, HS[h].n, now);
			}
		for (int h = 0; h < 2; h++)
			if (fc_node_next_deadline(HS[h].n) <= now) {
				fc_node_on_timer(HS[h].n, now);
				moved++;
			}
		if (!moved) {
			uint64_t t = fc_node_next_deadline(A->n);

			if (fc_node_next_deadline(B->n) < t)
				t = fc_node_next_deadline(B->n);
			if (t == UINT64_MAX)
				break;
			if (t > now)
				now = t - US;
		}
	}
	for (int h = 0; h < 2; h++) {
		const struct fc_node_counters *c = fc_node_counters(HS[h].n);

		assert_int_equal(c->rx_short + c->rx_encap_err + c->rx_unknown_cid +
				 c->rx_peer_mismatch + c->rx_engine_err, 0);
		assert_int_equal(c->tx_encap_err + c->tx_io_drop, 0);
	}
}

static void host_init(struct host *h, int id)
{
	struct fc_node_cfg cfg;

	memset(h, 0, sizeof(*h));
	h->rand_state = 91u + (uint32_t)id;
	assert_int_equal(np_memio_init(&h->io, &HS[1 - id].io, (uint8_t)id), 0);
	fc_node_cfg_default(&cfg);
	cfg.txn.mtu_bytes = TMTU;
	cfg.rdma.mtu_bytes = PMTU;
	cfg.rdma.max_msg_bytes = 64 * 1024;
	cfg.mr_cap = 16;
	cfg.pd_cap = 4;
	cfg.rand = key_rand;
	cfg.rand_ctx = h;
	cfg.max_peers = 1;
	cfg.io = &np_memio_ops;
	cfg.io_ctx = &h->io;
	h->n = fc_node_new(&cfg);
	assert_non_null(h->n);
	h->d = fc_node_rdma(h->n);
	h->mrs = fc_node_mrs(h->n);
	assert_int_equal(fc_pd_alloc(h->mrs, &h->pd), 0);
	/* A: the source slots; B: the WRITE and RECV slots (both regions of the memfd) */
	if (!id)
		assert_int_equal(fc_mr_reg(h->mrs, h->pd, shm + L.src, IOVA, NSLOT * SLOT,
					   FC_MR_ACCESS_ALL, &h->k), 0);
	else
		assert_int_equal(fc_mr_reg(h->mrs, h->pd, shm + L.dst, IOVA, 2 * NSLOT * SLOT,
					   FC_MR_ACCESS_ALL, &h->k), 0);
	assert_int_equal(fc_rdma_cq_create(h->d, RING, &h->scq), 0);
	assert_int_equal(fc_rdma_cq_create(h->d, RING, &h->rcq), 0);
}

/* The ordered connection between A and B, as a CM opens it. */
static void connect_hosts(void)
{
	uint32_t cid[2];

	for (int h = 0; h < 2; h++)
		assert_int_equal(fc_node_peer_add(HS[h].n, &HS[1 - h].io.self, &HS[h].peer), 0);
	for (int h = 0; h < 2; h++)
		assert_int_equal(fc_node_cid_reserve(HS[h].n, HS[h].peer, &cid[h]), 0);
	for (int h = 0; h < 2; h++) {
		struct fc_txn_conn_cfg c;

		fc_txn_conn_cfg_default(&c);
		c.pdl.remote_cid = cid[1 - h];
		c.pdl.ordered = 1;
		HS[h].conn = fc_node_conn_open(HS[h].n, cid[h], &c);
		assert_non_null(HS[h].conn);
	}
}

static void qp_up(struct host *h, uint32_t remote)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };

	fc_rdma_qp_init_default(&a);
	a.type = FC_RDMA_QPT_RC;
	a.order = FC_RDMA_ORDER_STRONG;
	a.err_mode = FC_RDMA_MODE_CIE;
	a.pd = h->pd;
	a.send_cq = h->scq;
	a.recv_cq = h->rcq;
	a.conn = h->conn;
	a.sq_depth = a.rq_depth = RING;
	assert_int_equal(fc_rdma_qp_create(h->d, &a, &h->qp), 0);
	if (remote == UINT32_MAX)
		return;
	assert_int_equal(fc_rdma_qp_modify(h->d, h->qp, &at), 0);
	at.state = FC_RDMA_QPS_RTR;
	at.remote_qpn = remote;
	assert_int_equal(fc_rdma_qp_modify(h->d, h->qp, &at), 0);
	at.state = FC_RDMA_QPS_RTS;
	assert_int_equal(fc_rdma_qp_modify(h->d, h->qp, &at), 0);
}

/* Two engines, an RC pair, rings laid out in shm: A's SQ and send CQ, B's RQ and recv
 * CQ in rings, attached. */
static int setup(void **state)
{
	(void)state;
	layout();
	{
		/* a memfd, as the daemon shares rings with a client */
		int fd = memfd_create("falcon-rings", MFD_CLOEXEC);

		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, (off_t)L.total), 0);
		shm = mmap(NULL, L.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		assert_true(shm != MAP_FAILED);
	}
	now = 1000;
	host_init(A, 0);
	host_init(B, 1);
	connect_hosts();
	qp_up(A, UINT32_MAX);
	qp_up(B, UINT32_MAX);
	{
		struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };

		for (int h = 0; h < 2; h++) {
			at.state = FC_RDMA_QPS_INIT;
			assert_int_equal(fc_rdma_qp_modify(HS[h].d, HS[h].qp, &at), 0);
			at.state = FC_RDMA_QPS_RTR;
			at.remote_qpn = HS[1 - h].qp;
			assert_int_equal(fc_rdma_qp_modify(HS[h].d, HS[h].qp, &at), 0);
			at.state = FC_RDMA_QPS_RTS;
			assert_int_equal(fc_rdma_qp_modify(HS[h].d, HS[h].qp, &at), 0);
		}
	}
	assert_int_equal(fc_rdma_ring_init(shm + L.sq, L.rq - L.sq, FC_RING_SQ, RING), 0);
	assert_int_equal(fc_rdma_ring_init(shm + L.rq, L.scq - L.rq, FC_RING_RQ, RING), 0);
	assert_int_equal(fc_rdma_ring_init(shm + L.scq, L.rcq - L.scq, FC_RING_CQ, RING), 0);
	assert_int_equal(fc_rdma_ring_init(shm + L.rcq, L.src - L.rcq, FC_RING_CQ, RING), 0);
	return 0;
}

static void attach_all(void)
{
	assert_int_equal(fc_rdma_qp_attach_rings(A->d, A->qp, shm + L.sq, L.rq - L.sq, NULL, 0), 0);
	assert_int_equal(fc_rdma_qp_attach_rings(B->d, B->qp, NULL, 0, shm + L.rq, L.scq - L.rq), 0);
	assert_int_equal(fc_rdma_cq_attach_ring(A->d, A->scq, shm + L.scq, L.rcq - L.scq), 0);
	assert_int_equal(fc_rdma_cq_attach_ring(B->d, B->rcq, shm + L.rcq, L.src - L.rcq), 0);
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		fc_node_free(HS[i].n);
		np_memio_fini(&HS[i].io);
	}
	munmap(shm, L.total);
	return 0;
}

/* ---- the client's side: only the rings and the data slots ---- */

static uint8_t pat(uint64_t id, uint32_t j) { return (uint8_t)(id * 131u + j * 7u + 1u); }
static uint32_t len_of(uint64_t id) { return 1 + (uint32_t)((id * 37u) % SLOT); }

static void put_send(uint64_t id, uint8_t op, uint32_t rkey, uint32_t lkey)
{
	struct fc_ring_send_wr *e = fc_ring_entry(shm + L.sq, (uint32_t)id);
	uint32_t slot = (uint32_t)(id % NSLOT), len = len_of(id);

	for (uint32_t j = 0; j < len; j++)
		shm[L.src + slot * SLOT + j] = pat(id, j);
	memset(e, 0, sizeof(*e));
	e->wr_id = id;
	e->opcode = op;
	e->num_sge = 1;
	e->sgl[0] = (struct fc_ring_sge){ .addr = IOVA + slot * SLOT, .len = len, .lkey = lkey };
	e->remote_addr = IOVA + slot * SLOT; /* B's WRITE slots start at its IOVA */
	e->rkey = rkey;
	fc_ring_produce(shm + L.sq, 1);
}

static void put_recv(uint64_t id, uint32_t lkey)
{
	struct fc_ring_recv_wr *e = fc_ring_entry(shm + L.rq, (uint32_t)id);
	uint32_t slot = (uint32_t)(id % NSLOT);

	memset(e, 0, sizeof(*e));
	e->wr_id = id;
	e->num_sge = 1;
	e->sgl[0] = (struct fc_ring_sge){ .addr = IOVA + (NSLOT + slot) * SLOT, .len = SLOT,
					  .lkey = lkey };
	fc_ring_produce(shm + L.rq, 1);
}

static int take_cqe(uint32_t off, struct fc_ring_cqe *c)
{
	int bad = 0;

	if (!fc_ring_avail(shm + off, &bad))
		return bad ? -1 : 0;
	*c = *(struct fc_ring_cqe *)fc_ring_entry(shm + off, ((struct fc_ring_hdr *)(shm + off))->cons);
	fc_ring_consume(shm + off, 1);
	return 1;
}

#define CHILD_CHECK(c, ...) do { if (!(c)) { fprintf(stderr, __VA_ARGS__); _exit(2); } } while (0)

/* Post NWR sends (even ids WRITE, odd SEND) and a RECV per SEND; check every completion:
 * once, in order, status, length, and the bytes where they landed. */
static void client(uint32_t rkey, uint32_t lkey_a, uint32_t lkey_b)
{
	uint64_t posted = 0, done = 0, rposted = 0, rdone = 0, nsend = 0;
	static uint64_t send_of[NSLOT]; /* recv id -> the SEND id it will hold */

	while (done < NWR || rdone < NWR / 2) {
		struct fc_ring_cqe c;
		int r;

		while (rposted < NWR / 2 && rposted - rdone < RING && fc_ring_space(shm + L.rq))
			put_recv(rposted++, lkey_b);
		while (posted < NWR && posted - done < RING && fc_ring_space(shm + L.sq) &&
		       (posted % 2 == 0 || nsend < rposted)) {
			if (posted % 2) {
				send_of[nsend % NSLOT] = posted;
				nsend++;
			}
			put_send(posted, posted % 2 ? FC_RDMA_WR_SEND : FC_RDMA_WR_WRITE, rkey,
				 lkey_a);
			posted++;
		}
		while ((r = take_cqe(L.scq, &c)) > 0) {
			uint32_t slot = (uint32_t)(c.wr_id % NSLOT);

			CHILD_CHECK(c.wr_id == done, "send cqe %llu, want %llu\n",
				    (unsigned long long)c.wr_id, (unsigned long long)done);
			CHILD_CHECK(c.status == FC_WC_SUCCESS, "send %llu status %u\n",
				    (unsigned long long)c.wr_id, c.status);
			CHILD_CHECK(c.opcode == (done % 2 ? FC_RDMA_WC_SEND : FC_RDMA_WC_RDMA_WRITE),
				    "send %llu opcode %u\n", (unsigned long long)c.wr_id, c.opcode);
			if (done % 2 == 0)
				for (uint32_t j = 0; j < len_of(done); j++)
					CHILD_CHECK(shm[L.dst + slot * SLOT + j] == pat(done, j),
						    "WRITE %llu byte %u\n", (unsigned long long)done, j);
			done++;
		}
		CHILD_CHECK(r == 0, "send CQ ring broken\n");
		while ((r = take_cqe(L.rcq, &c)) > 0) {
			uint32_t slot = (uint32_t)(c.wr_id % NSLOT);
			uint64_t sid = send_of[rdone % NSLOT];

			CHILD_CHECK(c.wr_id == rdone, "recv cqe %llu, want %llu\n",
				    (unsigned long long)c.wr_id, (unsigned long long)rdone);
			CHILD_CHECK(c.status == FC_WC_SUCCESS && c.opcode == FC_RDMA_WC_RECV,
				    "recv %llu status %u\n", (unsigned long long)c.wr_id, c.status);
			CHILD_CHECK(c.byte_len == len_of(sid), "recv %llu len %u\n",
				    (unsigned long long)c.wr_id, c.byte_len);
			for (uint32_t j = 0; j < c.byte_len; j++)
				CHILD_CHECK(shm[L.rcv + slot * SLOT + j] == pat(sid, j),
					    "SEND %llu byte %u\n", (unsigned long long)sid, j);
			rdone++;
		}
		CHILD_CHECK(r == 0, "recv CQ ring broken\n");
	}
	/* nothing more may come: no completion twice */
	usleep(20000);
	CHILD_CHECK(!fc_ring_avail(shm + L.scq, NULL) && !fc_ring_avail(shm + L.rcq, NULL),
		    "extra completions\n");
	_exit(0);
}

static void test_two_processes(void **state)
{
	int st = 0, rc;
	pid_t pid;

	(void)state;
	attach_all();
	alarm(120);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		client(B->k.rkey, A->k.lkey, B->k.lkey);
	for (;;) {
		int a = fc_rdma_qp_doorbell(A->d, A->qp, now);
		int b = fc_rdma_qp_doorbell(B->d, B->qp, now);

		if (a < 0 || b < 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("doorbell %d %d", a, b);
		}
		pump(64);
		rc = (int)waitpid(pid, &st, WNOHANG);
		if (rc == pid)
			break;
		if (rc < 0) {
			kill(pid, SIGKILL);
			fail_msg("waitpid");
		}
	}
	alarm(0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(((struct fc_ring_hdr *)(shm + L.sq))->cons, NWR);
	assert_int_equal(((struct fc_ring_hdr *)(shm + L.rq))->cons, NWR / 2);
	assert_int_equal(((struct fc_ring_hdr *)(shm + L.scq))->prod, NWR);
	assert_int_equal(((struct fc_ring_hdr *)(shm + L.rcq))->prod, NWR / 2);
	assert_int_equal(fc_rdma_counters(A->d)->ring_bad_wr, 0);
	assert_int_equal(fc_rdma_counters(B->d)->ring_bad_wr, 0);
	assert_int_equal(fc_rdma_counters(A->d)->cq_lost + fc_rdma_counters(B->d)->cq_lost, 0);
}

/* ---- one process: attach checks, bad WRs, hostile indexes, a full CQ ring ---- */

static void test_attach_checks(void **state)
{
	struct fc_ring_hdr *h = (struct fc_ring_hdr *)(shm + L.sq);
	struct fc_rdma_wc wc;

	(void)state;
	assert_int_equal(fc_rdma_ring_bytes(FC_RING_SQ, 3), 0);
	assert_int_equal(fc_rdma_ring_bytes(FC_RING_CQ, RING),
			 sizeof(struct fc_ring_hdr) + RING * sizeof(struct fc_ring_cqe));
	assert_int_equal(fc_rdma_qp_doorbell(A->d, A->qp, now), -EINVAL); /* nothing attached */
	assert_int_equal(fc_rdma_qp_doorbell(A->d, 0x777, now), -ENOENT);
	/* the wrong kind, a bad version, a bad entry size, too little memory */
	assert_int_equal(fc_rdma_qp_attach_rings(A->d, A->qp, shm + L.rq, L.scq - L.rq, NULL, 0),
			 -EINVAL);
	h->version = 2;
	assert_int_equal(fc_rdma_qp_attach_rings(A->d, A->qp, h, L.rq - L.sq, NULL, 0), -EINVAL);
	h->version = FC_RING_VERSION;
	h->entry_size = 64;
	assert_int_equal(fc_rdma_qp_attach_rings(A->d, A->qp, h, L.rq - L.sq, NULL, 0), -EINVAL);
	h->entry_size = sizeof(struct fc_ring_send_wr);
	assert_int_equal(fc_rdma_qp_attach_rings(A->d, A->qp, h, 1000, NULL, 0), -EINVAL);
	assert_int_equal(fc_rdma_qp_attach_rings(A->d, A->qp, NULL, 0, NULL, 0), -EINVAL);
	assert_int_equal(fc_rdma_qp_attach_rings(A->d, 0x777, h, L.rq - L.sq, NULL, 0), -ENOENT);
	assert_int_equal(fc_rdma_cq_attach_ring(A->d, 0x777, shm + L.scq, L.rcq - L.scq), -ENOENT);
	assert_int_equal(fc_rdma_cq_attach_ring(A->d, A->scq, shm + L.sq, L.rq - L.sq), -EINVAL);
	attach_all();
	/* twice is refused; an attached CQ is not polled through the engine */
	assert_int_equal(fc_rdma_qp_attach_rings(A->d, A->qp, h, L.rq - L.sq, NULL, 0), -EINVAL);
	assert_int_equal(fc_rdma_cq_attach_ring(A->d, A->scq, shm + L.scq, L.rcq - L.scq), -EINVAL);
	assert_int_equal(fc_rdma_poll_cq(A->d, A->scq, &wc, 1), -EINVAL);
	/* a header rewritten after attach changes nothing */
	h->entries = 1u << 30;
	assert_int_equal(fc_rdma_qp_doorbell(A->d, A->qp, now), 0);
	h->entries = RING;
}

/* A UD datagram that finds no receive WQE in the engine takes what the QP's receive ring
 * holds before it is dropped: a receive the client published but no doorbell has taken
 * yet is there for it, as a verbs post_recv is there once it returns. */
static void test_ud_takes_published_receive(void **state)
{
	struct fc_rdma_qp_init a;
	struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };
	struct fc_rdma_send_wr wr;
	struct fc_sge sg;
	struct fc_ring_cqe c;
	struct fc_txn *mn[2];
	uint32_t cid[2], ud[2], ah;

	(void)state;
	for (int h = 0; h < 2; h++)
		assert_int_equal(fc_node_cid_reserve(HS[h].n, HS[h].peer, &cid[h]), 0);
	for (int h = 0; h < 2; h++) {
		struct fc_txn_conn_cfg cc;

		fc_txn_conn_cfg_default(&cc);
		cc.pdl.remote_cid = cid[1 - h];
		cc.mn = 1;
		cc.pdl.ordered = 0;
		mn[h] = fc_node_conn_open(HS[h].n, cid[h], &cc);
		assert_non_null(mn[h]);
	}
	for (int h = 0; h < 2; h++) {
		fc_rdma_qp_init_default(&a);
		a.type = FC_RDMA_QPT_UD;
		a.order = FC_RDMA_ORDER_WEAK;
		a.err_mode = FC_RDMA_MODE_CIE;
		a.pd = HS[h].pd;
		a.send_cq = HS[h].scq;
		a.recv_cq = HS[h].rcq;
		a.qkey = 7;
		a.sq_depth = a.rq_depth = RING;
		assert_int_equal(fc_rdma_qp_create(HS[h].d, &a, &ud[h]), 0);
		for (uint8_t st = FC_RDMA_QPS_INIT; st <= FC_RDMA_QPS_RTS; st++) {
			at.state = st;
			assert_int_equal(fc_rdma_qp_modify(HS[h].d, ud[h], &at), 0);
		}
	}
	assert_int_equal(fc_rdma_qp_attach_rings(B->d, ud[1], NULL, 0, shm + L.rq, L.scq - L.rq), 0);
	assert_int_equal(fc_rdma_cq_attach_ring(B->d, B->rcq, shm + L.rcq, L.src - L.rcq), 0);
	assert_int_equal(fc_rdma_ah_create(A->d, A->pd, mn[0], &ah), 0);
	put_recv(0, B->k.lkey); /* published, no doorbell */
	sg = (struct fc_sge){ .addr = IOVA, .len = 64, .lkey = A->k.lkey };
	wr = (struct fc_rdma_send_wr){ .wr_id = 5, .opcode = FC_RDMA_WR_SEND, .num_sge = 1,
				       .sgl = &sg, .ah = ah, .remote_qpn = ud[1],
				       .remote_qkey = 7 };
	assert_int_equal(fc_rdma_post_send(A->d, ud[0], &wr, now), 0);
	pump(100000);
	assert_int_equal(take_cqe(L.rcq, &c), 1);
	assert_int_equal(c.wr_id, 0);
	assert_int_equal(c.status, FC_WC_SUCCESS);
	assert_int_equal(c.byte_len, 64);
	assert_int_equal(c.src_qp, ud[0]);
	assert_int_equal(fc_rdma_counters(B->d)->ud_drop_no_wqe, 0);
	/* with the ring empty too, the next datagram is dropped and counted */
	wr.wr_id = 6;
	assert_int_equal(fc_rdma_post_send(A->d, ud[0], &wr, now), 0);
	pump(100000);
	assert_int_equal(take_cqe(L.rcq, &c), 0);
	assert_int_equal(fc_rdma_counters(B->d)->ud_drop_no_wqe, 1);
}

/* Send WRs wait in the ring until RTS, receives until INIT: none is refused for being
 * early (the daemon's QPs are fed while their connection is set up). */
static void test_ring_waits_for_state(void **state)
{
	struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_RESET };
	struct fc_ring_cqe c;

	(void)state;
	attach_all();
	assert_int_equal(fc_rdma_qp_modify(A->d, A->qp, &at), 0);
	assert_int_equal(fc_rdma_qp_modify(B->d, B->qp, &at), 0);
	put_send(0, FC_RDMA_WR_SEND, B->k.rkey, A->k.lkey);
	put_recv(0, B->k.lkey);
	assert_int_equal(fc_rdma_qp_doorbell(A->d, A->qp, now), 0);
	assert_int_equal(fc_rdma_qp_doorbell(B->d, B->qp, now), 0);
	at.state = FC_RDMA_QPS_INIT;
	assert_int_equal(fc_rdma_qp_modify(A->d, A->qp, &at), 0);
	assert_int_equal(fc_rdma_qp_modify(B->d, B->qp, &at), 0);
	assert_int_equal(fc_rdma_qp_doorbell(A->d, A->qp, now), 0); /* the send waits */
	assert_int_equal(fc_rdma_qp_doorbell(B->d, B->qp, now), 1); /* the receive is taken */
	at.state = FC_RDMA_QPS_RTR;
	at.remote_qpn = B->qp;
	assert_int_equal(fc_rdma_qp_modify(A->d, A->qp, &at), 0);
	assert_int_equal(fc_rdma_qp_doorbell(A->d, A->qp, now), 0);
	at.remote_qpn = A->qp;
	assert_int_equal(fc_rdma_qp_modify(B->d, B->qp, &at), 0);
	at.state = FC_RDMA_QPS_RTS;
	assert_int_equal(fc_rdma_qp_modify(A->d, A->qp, &at), 0);
	assert_int_equal(fc_rdma_qp_modify(B->d, B->qp, &at), 0);
	assert_int_equal(fc_rdma_qp_doorbell(A->d, A->qp, now), 1);
	pump(100000);
	assert_int_equal(take_cqe(L.scq, &c), 1);
	assert_int_equal(c.wr_id, 0);
	assert_int_equal(c.status, FC_WC_SUCCESS);
	assert_int_equal(take_cqe(L.rcq, &c), 1);
	assert_int_equal(c.status, FC_WC_SUCCESS);
	assert_int_equal(fc_rdma_counters(A->d)->ring_bad_wr, 0);
}

/* Bad WRs among good ones complete in error, in SQ order, and the ring moves on; a
 * message above the layer's limit (64 KiB here) is a local length error, as in verbs. */
static void test_bad_wrs(void **state)
{
	struct fc_ring_send_wr *e;
	struct fc_ring_cqe c;
	static const uint8_t want[7] = { FC_WC_SUCCESS, FC_WC_LOC_QP_OP_ERR, FC_WC_LOC_QP_OP_ERR,
					 FC_WC_SUCCESS, FC_WC_LOC_QP_OP_ERR, FC_WC_SUCCESS,
					 FC_WC_LOC_LEN_ERR };

	(void)state;
	attach_all();
	put_send(0, FC_RDMA_WR_WRITE, B->k.rkey, A->k.lkey);
	put_send(1, 99, B->k.rkey, A->k.lkey);                   /* unknown opcode */
	e = fc_ring_entry(shm + L.sq, 2);
	put_send(2, FC_RDMA_WR_WRITE, B->k.rkey, A->k.lkey);
	e->num_sge = 200;                                          /* above the ring's 4 */
	put_send(3, FC_RDMA_WR_WRITE, B->k.rkey, A->k.lkey);
	e = fc_ring_entry(shm + L.sq, 4);
	put_send(4, FC_RDMA_WR_WRITE, B->k.rkey, A->k.lkey);
	e->remote_addr = UINT64_MAX - 8;                           /* overflows 64 bits */
	e->sgl[0].len = 60;
	put_send(5, FC_RDMA_WR_WRITE, B->k.rkey, A->k.lkey);
	e = fc_ring_entry(shm + L.sq, 6);
	put_send(6, FC_RDMA_WR_WRITE, B->k.rkey, A->k.lkey);
	e->sgl[0].len = 64 * 1024 + 1;                             /* above max_msg_bytes */
	assert_int_equal(fc_rdma_qp_doorbell(A->d, A->qp, now), 7);
	pump(100000);
	for (uint64_t i = 0; i < 7; i++) {
		assert_int_equal(take_cqe(L.scq, &c), 1);
		assert_int_equal(c.wr_id, i);
		assert_int_equal(c.status, want[i]);
		assert_int_equal(c.qp_num, A->qp);
	}
	assert_int_equal(take_cqe(L.scq, &c), 0);
	assert_int_equal(fc_rdma_counters(A->d)->ring_bad_wr, 4);
	assert_int_equal(fc_rdma_qp_state(A->d, A->qp), FC_RDMA_QPS_RTS); /* CIE goes on */
	/* a bad receive WR completes in error on the receive CQ */
	{
		struct fc_ring_recv_wr *r = fc_ring_entry(shm + L.rq, 0);

		put_recv(0, B->k.lkey);
		r->num_sge = 9;
		assert_int_equal(fc_rdma_qp_doorbell(B->d, B->qp, now), 1);
		assert_int_equal(take_cqe(L.rcq, &c), 1);
		assert_int_equal(c.wr_id, 0);
		assert_int_equal(c.status, FC_WC_LOC_QP_OP_ERR);
		assert_int_equal(c.opcode, FC_RDMA_WC_RECV);
	}
}

/* A producer index more than a ring ahead: the QP goes to ERR, the ring is not read. */
static void test_hostile_index(void **state)
{
	struct fc_ring_hdr *h = (struct fc_ring_hdr *)(shm + L.sq);

	(void)state;
	attach_all();
	__atomic_store_n(&h->prod, RING + 1, __ATOMIC_RELEASE);
	assert_int_equal(fc_rdma_qp_doorbell(A->d, A->qp, now), -EPROTO);
	assert_int_equal(fc_rdma_qp_state(A->d, A->qp), FC_RDMA_QPS_ERR);
	assert_int_equal(fc_rdma_qp_doorbell(A->d, A->qp, now), -EPROTO);
	assert_int_equal(h->cons, 0);
	assert_int_equal(fc_rdma_counters(A->d)->ring_broken, 1);
}

/* An SRQ's receive ring: attach checks, a WR the engine refuses is dropped and counted
 * (it belongs to no QP yet, so no CQ can carry its error) while the good ones around it
 * are taken, and a producer index more than a ring ahead stops the ring for good. */
static void test_srq_ring(void **state)
{
	struct fc_rdma_srq_init si = { .pd = A->pd, .depth = 8, .max_sge = 2 };
	void *ring = shm + L.rq;
	struct fc_ring_hdr *h = ring;
	uint32_t srqn;

	(void)state;
	assert_int_equal(fc_rdma_ring_init(ring, L.scq - L.rq, FC_RING_RQ, RING), 0);
	assert_int_equal(fc_rdma_srq_create(A->d, &si, &srqn), 0);
	assert_int_equal(fc_rdma_srq_doorbell(A->d, srqn), -EINVAL); /* nothing attached */
	assert_int_equal(fc_rdma_srq_doorbell(A->d, 0x777), -ENOENT);
	assert_int_equal(fc_rdma_srq_attach_ring(A->d, 0x777, ring, L.scq - L.rq), -ENOENT);
	assert_int_equal(fc_rdma_srq_attach_ring(A->d, srqn, shm + L.sq, L.rq - L.sq), -EINVAL);
	assert_int_equal(fc_rdma_srq_attach_ring(A->d, srqn, ring, L.scq - L.rq), 0);
	assert_int_equal(fc_rdma_srq_attach_ring(A->d, srqn, ring, L.scq - L.rq), -EINVAL);
	/* good, too many SGEs (max_sge 2), good */
	for (uint32_t i = 0; i < 3; i++) {
		struct fc_ring_recv_wr *e = fc_ring_entry(ring, i);

		*e = (struct fc_ring_recv_wr){ .wr_id = 10 + i, .num_sge = i == 1 ? 3 : 1 };
		for (uint32_t g = 0; g < e->num_sge; g++)
			e->sgl[g] = (struct fc_ring_sge){ IOVA + i * SLOT, SLOT, A->k.lkey };
	}
	fc_ring_produce(ring, 3);
	assert_int_equal(fc_rdma_srq_doorbell(A->d, srqn), 3);
	assert_int_equal(h->cons, 3);
	assert_int_equal(fc_rdma_counters(A->d)->ring_bad_wr, 1);
	/* 7 more fill the SRQ (depth 8 with 2 taken): the rest wait for room */
	for (uint32_t i = 3; i < 10; i++) {
		struct fc_ring_recv_wr *e = fc_ring_entry(ring, i);

		*e = (struct fc_ring_recv_wr){ .wr_id = 10 + i, .num_sge = 1 };
		e->sgl[0] = (struct fc_ring_sge){ IOVA + i * SLOT, SLOT, A->k.lkey };
	}
	fc_ring_produce(ring, 7);
	assert_int_equal(fc_rdma_srq_doorbell(A->d, srqn), 6);
	assert_int_equal(h->cons, 9);
	assert_int_equal(fc_rdma_srq_doorbell(A->d, srqn), 0);
	/* a wild producer index: the ring is not read again */
	__atomic_store_n(&h->prod, h->cons + RING + 1, __ATOMIC_RELEASE);
	assert_int_equal(fc_rdma_srq_doorbell(A->d, srqn), -EPROTO);
	assert_int_equal(fc_rdma_srq_doorbell(A->d, srqn), -EPROTO);
	assert_int_equal(h->cons, 9);
	assert_int_equal(fc_rdma_counters(A->d)->ring_broken, 1);
	assert_int_equal(fc_rdma_srq_destroy(A->d, srqn), 0);
}

/* A CQ ring the client does not drain overflows as an engine CQ does. */
static void test_cq_ring_full(void **state)
{
	struct fc_rdma_async_event ev;
	int got_cq_err = 0;

	(void)state;
	attach_all();
	for (uint64_t i = 0; i <= RING; i++) {
		put_send(i, FC_RDMA_WR_WRITE, B->k.rkey, A->k.lkey);
		if (i == RING - 1 || i == RING) {
			assert_true(fc_rdma_qp_doorbell(A->d, A->qp, now) > 0);
			pump(100000);
		}
	}
	assert_int_equal(((struct fc_ring_hdr *)(shm + L.scq))->prod, RING);
	/* the consumer is told in the ring's header (falcon_poll_cq: -EOVERFLOW once the
	 * ring is drained); the receive CQ did not overflow */
	assert_int_equal(fc_ring_status(shm + L.scq), FC_RING_ST_OVERFLOW);
	assert_int_equal(fc_ring_status(shm + L.rcq), 0);
	assert_int_equal(fc_rdma_counters(A->d)->cq_lost, 1);
	while (!fc_rdma_get_async_event(A->d, &ev))
		got_cq_err |= ev.type == FC_RDMA_EV_CQ_ERR && ev.num == A->scq;
	assert_true(got_cq_err);
	assert_int_equal(fc_rdma_qp_state(A->d, A->qp), FC_RDMA_QPS_ERR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_attach_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_waits_for_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ud_takes_published_receive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_wrs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cq_ring_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_processes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
