/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Messages of many packets through the RDMA-over-Falcon ULP (rdma.h), driven by hand as
 * tests/unit/test_rdma.c does: two hosts A and B (txn engine, MR table, RDMA layer with
 * the default configuration, 24 MiB of memory each), a wire with a latency, a seeded
 * loss and a count of what crossed it, virtual time.
 *
 *   - the default layer takes messages up to 2^31 bytes (InfiniBand's), and refuses one
 *     byte more at post (-EMSGSIZE);
 *   - multi-MiB WRITE, READ (into a scatter list of several entries) and SEND (into a
 *     receive list of several entries), strongly and weakly ordered, with 1 % of the
 *     packets lost on the wire, data checked byte for byte;
 *   - two QPs moving multi-MiB messages at once (their transactions interleave);
 *   - both memory paths: regions the engine reaches by pointer and regions it reaches
 *     by copy (fc_mr_reg_ext ops, as falcond reaches a client's malloc'd memory);
 *   - a WRITE is checked for its whole range before a byte is placed (RETH to the
 *     message's end, seg.h): one that runs past its region writes nothing and completes
 *     REM_ACCESS_ERR, whether its packets come in order or not; on an ordered connection
 *     also one that starts before its region; a failed WRITE or READ stops sending.
 *
 * Sizes shrink under FALCON_TEST_QUICK (valgrind).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rdma.h"
#include "testutil.h"
#include "wire_falcon.h"
#include "wire_rdma.h"

#define PMTU 4096u                        /* RDMA payload per transaction */
#define TMTU (PMTU + FC_RDMA_HDR_MAX)     /* txn MTU */
#define MEM (24u << 20)
#define IOVA 0x40000000ull
#define US 1000ull
#define MS 1000000ull
#define MAXNET 8192
#define BUFCAP (TMTU + FC_FALCON_HDR_MAX + 64)

struct host {
	struct fc_txn_engine *e;
	struct fc_mr_table *mrs;
	struct fc_rdma *d;
	uint8_t *mem;
	uint32_t pd, scq, rcq;
	struct fc_mr_keys k;     /* all of mem, every access, reached by pointer */
	struct fc_txn *conn[2];
	uint32_t rand_state;
};

static struct host HS[2];
#define A (&HS[0])
#define B (&HS[1])
static uint64_t now, loss_rng;
static uint32_t loss_ppm, jitter_us; /* packets lost; extra delay up to (reordering) */

/* what crossed the wire, per sender: Push Data, NACKs, all */
static uint64_t n_push[2], n_pull[2], n_nack[2], n_pkts[2], n_lost;

/* ------------------------------------------------------------------------ */
/* wire                                                                      */

struct npkt {
	uint64_t at, seq, sent;
	int to;
	uint32_t len;
	uint8_t b[BUFCAP];
};
static struct npkt *net;
static int nnet;
static uint64_t nseq;

static void count_pkt(int from, const uint8_t *b, uint32_t len)
{
	struct fc_falcon_pkt f;

	n_pkts[from]++;
	if (fc_falcon_decode(b, len, &f) < 0)
		return;
	if (f.type == FC_PKT_PUSH_DATA)
		n_push[from]++;
	if (f.type == FC_PKT_PULL_REQ)
		n_pull[from]++;
	if (f.type == FC_PKT_NACK)
		n_nack[from]++;
}

static void send_pkt(int from, const uint8_t *b, uint32_t len)
{
	struct npkt *p;

	count_pkt(from, b, len);
	if (loss_ppm && fc_test_rand(&loss_rng) % 1000000 < loss_ppm) {
		n_lost++;
		return;
	}
	assert_true(nnet < MAXNET);
	p = &net[nnet++];
	p->at = now + 5 * US + (jitter_us ? fc_test_rand(&loss_rng) % (jitter_us * US) : 0);
	p->sent = now;
	p->seq = nseq++;
	p->to = 1 - from;
	p->len = len;
	memcpy(p->b, b, len);
}

/* Run the two hosts until nothing is left to do (bounded by iterations). */
static void run(void)
{
	static uint8_t buf[BUFCAP];

	for (long iter = 0; iter < 50000000; iter++) {
		uint64_t t = UINT64_MAX;
		int best = -1;

		for (int h = 0; h < 2; h++) {
			int n;

			while ((n = fc_rdma_poll_tx(HS[h].d, now, buf, sizeof(buf), NULL)) > 0)
				send_pkt(h, buf, (uint32_t)n);
			assert_true(n == 0);
		}
		for (int i = 0; i < nnet; i++)
			if (net[i].at < t || (net[i].at == t && net[i].seq < net[best].seq)) {
				t = net[i].at;
				best = i;
			}
		for (int h = 0; h < 2; h++) {
			uint64_t dl = fc_rdma_next_deadline(HS[h].d);

			if (dl < t) {
				t = dl;
				best = -1;
			}
		}
		if (t == UINT64_MAX)
			return;
		if (t > now)
			now = t;
		if (best >= 0) {
			struct npkt *p = &net[best];

			fc_rdma_rx(HS[p->to].d, p->b, p->len, p->sent, now);
			*p = net[--nnet];
			continue;
		}
		for (int h = 0; h < 2; h++)
			if (fc_rdma_next_deadline(HS[h].d) <= now)
				fc_rdma_on_timer(HS[h].d, now);
	}
	fail_msg("run did not settle");
}

/* ------------------------------------------------------------------------ */
/* hosts                                                                     */

static uint32_t key_rand(void *ctx)
{
	struct host *h = ctx;

	h->rand_state = h->rand_state * 1103515245u + 12345u;
	return h->rand_state;
}

static void host_init(struct host *h, int id)
{
	struct fc_txn_engine_cfg ec;
	struct fc_rdma_cfg rc;

	memset(h, 0, sizeof(*h));
	h->rand_state = 77u + (uint32_t)id;
	fc_txn_engine_cfg_default(&ec);
	ec.mtu_bytes = TMTU;
	ec.txn_timeout_ns = 100000 * MS;
	h->e = fc_txn_engine_new(&ec);
	h->mrs = fc_mr_table_new(64, 8, key_rand, h);
	fc_rdma_cfg_default(&rc); /* the default message limit: what this file is about */
	rc.mtu_bytes = PMTU;
	h->d = fc_rdma_new(&rc, h->e, h->mrs);
	h->mem = calloc(1, MEM);
	assert_non_null(h->e);
	assert_non_null(h->mrs);
	assert_non_null(h->d);
	assert_non_null(h->mem);
	assert_int_equal(fc_pd_alloc(h->mrs, &h->pd), 0);
	assert_int_equal(fc_mr_reg(h->mrs, h->pd, h->mem, IOVA, MEM, FC_MR_ACCESS_ALL, &h->k), 0);
	assert_int_equal(fc_rdma_cq_create(h->d, 256, &h->scq), 0);
	assert_int_equal(fc_rdma_cq_create(h->d, 256, &h->rcq), 0);
}

static int setup(void **state)
{
	(void)state;
	now = 1000;
	nnet = 0;
	loss_ppm = jitter_us = 0;
	loss_rng = fc_test_seed(0xB16B16) | 1;
	memset(n_push, 0, sizeof(n_push));
	memset(n_pull, 0, sizeof(n_pull));
	memset(n_nack, 0, sizeof(n_nack));
	memset(n_pkts, 0, sizeof(n_pkts));
	n_lost = 0;
	net = calloc(MAXNET, sizeof(*net));
	host_init(A, 0);
	host_init(B, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		fc_rdma_free(HS[i].d);
		fc_txn_engine_free(HS[i].e);
		fc_mr_table_free(HS[i].mrs);
		free(HS[i].mem);
	}
	free(net);
	return 0;
}

/* Connection idx between A (CID 10+idx) and B (CID 20+idx). */
static void conn_pair(int idx, int ordered)
{
	for (int h = 0; h < 2; h++) {
		struct fc_txn_conn_cfg c;

		fc_txn_conn_cfg_default(&c);
		c.pdl.local_cid = (uint32_t)(h ? 20 : 10) + (uint32_t)idx;
		c.pdl.remote_cid = (uint32_t)(h ? 10 : 20) + (uint32_t)idx;
		c.pdl.ordered = ordered;
		HS[h].conn[idx] = fc_rdma_conn_open(HS[h].d, &c);
		assert_non_null(HS[h].conn[idx]);
	}
}

static void to_rts(struct host *h, uint32_t qpn, uint32_t remote)
{
	struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };

	assert_int_equal(fc_rdma_qp_modify(h->d, qpn, &at), 0);
	at.state = FC_RDMA_QPS_RTR;
	at.remote_qpn = remote;
	assert_int_equal(fc_rdma_qp_modify(h->d, qpn, &at), 0);
	at.state = FC_RDMA_QPS_RTS;
	assert_int_equal(fc_rdma_qp_modify(h->d, qpn, &at), 0);
}

/* An RC pair on connection idx (created here), both ready. */
static void rc_pair(int idx, uint8_t order, uint8_t mode, uint32_t *qa, uint32_t *qb)
{
	for (int h = 0; h < 2; h++) {
		struct fc_rdma_qp_init a;

		if (h == 0)
			conn_pair(idx, order == FC_RDMA_ORDER_STRONG);
		fc_rdma_qp_init_default(&a);
		a.order = order;
		a.err_mode = mode;
		a.pd = HS[h].pd;
		a.send_cq = HS[h].scq;
		a.recv_cq = HS[h].rcq;
		a.conn = HS[h].conn[idx];
		assert_int_equal(fc_rdma_qp_create(HS[h].d, &a, h ? qb : qa), 0);
	}
	to_rts(A, *qa, *qb);
	to_rts(B, *qb, *qa);
}

static struct fc_sge sge(const struct host *h, uint32_t off, uint32_t len)
{
	return (struct fc_sge){ .addr = IOVA + off, .len = len, .lkey = h->k.lkey };
}

static int post_list(struct host *h, uint32_t qpn, uint8_t op, uint64_t wr_id,
		     const struct fc_sge *sgl, uint32_t n, uint64_t raddr, uint32_t rkey)
{
	struct fc_rdma_send_wr wr = { .wr_id = wr_id, .opcode = op, .num_sge = n, .sgl = sgl,
				      .remote_addr = raddr, .rkey = rkey, .imm = 0xA1B2C3D4 };

	return fc_rdma_post_send(h->d, qpn, &wr, now);
}

static int post(struct host *h, uint32_t qpn, uint8_t op, uint64_t wr_id, uint32_t off,
		uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct fc_sge s = sge(h, off, len);

	return post_list(h, qpn, op, wr_id, &s, 1, raddr, rkey);
}

static void expect_wc(struct host *h, uint32_t cq, uint64_t wr_id, uint8_t status,
		      uint32_t byte_len)
{
	struct fc_rdma_wc wc;

	assert_int_equal(fc_rdma_poll_cq(h->d, cq, &wc, 1), 1);
	assert_int_equal(wc.wr_id, wr_id);
	if (wc.status != status)
		print_message("wr %llu: status %u vendor_err %#x, lost %llu\n",
			      (unsigned long long)wr_id, wc.status, wc.vendor_err,
			      (unsigned long long)n_lost);
	assert_int_equal(wc.status, status);
	if (status == FC_WC_SUCCESS && byte_len)
		assert_int_equal(wc.byte_len, byte_len);
}

static void expect_no_wc(struct host *h, uint32_t cq)
{
	struct fc_rdma_wc wc;

	assert_int_equal(fc_rdma_poll_cq(h->d, cq, &wc, 1), 0);
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint64_t x = seed | 1ull << 40;

	for (uint32_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static int all_zero(const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

/* the message size of the big cases */
static uint32_t big(void) { return fc_test_quick() ? 2u << 20 : 8u << 20; }

/* ------------------------------------------------------------------------ */
/* the limit                                                                 */

/* The default layer takes a 2 GiB message (IB's 2^31) and refuses 2^31 + 1 bytes: a
 * region reached by copy stands for the memory (nothing runs, so nothing is read). */
static void test_limit_is_2gib(void **state)
{
	static const struct fc_mr_mem_ops nomem = { NULL, NULL };
	struct fc_mr_keys k;
	struct fc_sge two[2];
	uint32_t qa, qb;

	(void)state;
	assert_int_equal(fc_rdma_get_cfg(A->d)->max_msg_bytes, FC_SEG_MSG_MAX);
	assert_int_equal(FC_SEG_MSG_MAX, 1u << 31);
	assert_int_equal(fc_mr_reg_ext(A->mrs, A->pd, (void *)0x10000, 1ull << 40, 3ull << 30,
				       FC_MR_ACCESS_ALL, &nomem, NULL, &k), 0);
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	two[0] = (struct fc_sge){ 1ull << 40, 1u << 30, k.lkey };
	two[1] = (struct fc_sge){ (1ull << 40) + (1u << 30), 1u << 30, k.lkey };
	assert_int_equal(post_list(A, qa, FC_RDMA_WR_WRITE, 1, two, 2, IOVA, B->k.rkey), 0);
	assert_int_equal(post_list(A, qa, FC_RDMA_WR_READ, 2, two, 2, IOVA, B->k.rkey), 0);
	two[1].len++;
	assert_int_equal(post_list(A, qa, FC_RDMA_WR_WRITE, 3, two, 2, IOVA, B->k.rkey),
			 -EMSGSIZE);
	assert_int_equal(post_list(A, qa, FC_RDMA_WR_SEND, 4, two, 2, 0, 0), -EMSGSIZE);
	assert_int_equal(fc_rdma_qp_destroy(A->d, qa), 0); /* before anything ran */
}

/* ------------------------------------------------------------------------ */
/* multi-MiB WRITE, READ, SEND                                               */

/* WRITE A[0, n) -> B[4 MiB + 3, ...), READ it back into A[12 MiB ...) through a list of
 * three entries, SEND A[0, n) into B's receive list of three entries; 1 % loss. */
static void big_ops(uint8_t order)
{
	uint32_t n = big(), qa, qb, third = n / 3;
	const uint32_t woff = (4u << 20) + 3, roff = 12u << 20, soff = 14u << 20;
	struct fc_sge rl[3], sl[3];
	struct fc_rdma_recv_wr rw = { .wr_id = 77, .num_sge = 3, .sgl = sl };

	rc_pair(0, order, FC_RDMA_MODE_VERBS, &qa, &qb);
	loss_ppm = 10000;
	fill(A->mem, n, 1);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, n, IOVA + woff, B->k.rkey), 0);
	run();
	expect_wc(A, A->scq, 1, FC_WC_SUCCESS, 0);
	assert_memory_equal(B->mem + woff, A->mem, n);
	assert_true(all_zero(B->mem + woff + n, 4096));
	/* READ back: three entries of unequal, unaligned lengths (a pull never crosses one) */
	rl[0] = sge(A, roff + 1, third - 5);
	rl[1] = sge(A, roff + third + 64, third + 3);
	rl[2] = sge(A, roff + 2 * third + 200, n - rl[0].len - rl[1].len);
	assert_int_equal(post_list(A, qa, FC_RDMA_WR_READ, 2, rl, 3, IOVA + woff, B->k.rkey), 0);
	run();
	expect_wc(A, A->scq, 2, FC_WC_SUCCESS, n);
	assert_memory_equal(A->mem + roff + 1, A->mem, rl[0].len);
	assert_memory_equal(A->mem + roff + third + 64, A->mem + rl[0].len, rl[1].len);
	assert_memory_equal(A->mem + roff + 2 * third + 200, A->mem + rl[0].len + rl[1].len,
			    rl[2].len);
	/* SEND into a receive list of three entries */
	sl[0] = sge(B, soff, 5000);
	sl[1] = sge(B, soff + 8000, n / 2);
	sl[2] = sge(B, soff + 8000 + n / 2 + 7, n / 2);
	assert_int_equal(fc_rdma_post_recv(B->d, qb, &rw), 0);
	assert_int_equal(post(A, qa, FC_RDMA_WR_SEND, 3, 0, n, 0, 0), 0);
	run();
	expect_wc(A, A->scq, 3, FC_WC_SUCCESS, 0);
	expect_wc(B, B->rcq, 77, FC_WC_SUCCESS, n);
	assert_memory_equal(B->mem + soff, A->mem, 5000);
	assert_memory_equal(B->mem + soff + 8000, A->mem + 5000, n / 2);
	assert_memory_equal(B->mem + soff + 8000 + n / 2 + 7, A->mem + 5000 + n / 2,
			    n - 5000 - n / 2);
	assert_true(n_lost > 0); /* the loss was real: retransmissions carried it */
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_RTS);
}

static void test_big_strong(void **state)
{
	(void)state;
	big_ops(FC_RDMA_ORDER_STRONG);
}

static void test_big_weak(void **state)
{
	(void)state;
	big_ops(FC_RDMA_ORDER_WEAK);
}

/* Two QPs, each on its connection, each with a multi-MiB WRITE and a READ posted at once:
 * their transactions interleave on the engine; everything lands where it should. */
static void test_two_qps_at_once(void **state)
{
	uint32_t n = big() / 2, qa[2], qb[2];

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa[0], &qb[0]);
	rc_pair(1, FC_RDMA_ORDER_WEAK, FC_RDMA_MODE_VERBS, &qa[1], &qb[1]);
	fill(A->mem, 2 * n, 9);
	fill(B->mem + (8u << 20), 2 * n, 10);
	for (uint32_t i = 0; i < 2; i++) {
		assert_int_equal(post(A, qa[i], FC_RDMA_WR_WRITE, 10 + i, i * n, n, IOVA + i * n,
				      B->k.rkey), 0);
		assert_int_equal(post(A, qa[i], FC_RDMA_WR_READ, 20 + i, (8u << 20) + i * n, n,
				      IOVA + (8u << 20) + i * n, B->k.rkey), 0);
	}
	run();
	for (uint32_t i = 0; i < 2; i++) {
		struct fc_rdma_wc wc[2];

		assert_int_equal(fc_rdma_poll_cq(A->d, A->scq, wc, 2), 2);
		assert_int_equal(wc[0].status, FC_WC_SUCCESS);
		assert_int_equal(wc[1].status, FC_WC_SUCCESS);
	}
	assert_memory_equal(B->mem, A->mem, 2 * n);
	assert_memory_equal(A->mem + (8u << 20), B->mem + (8u << 20), 2 * n);
}

/* ------------------------------------------------------------------------ */
/* memory reached by copy                                                    */

struct copy_mem {
	uint8_t *base;     /* "the other process's" memory */
	uint64_t addr;     /* its address there */
	uint64_t reads, writes;
};

static int cm_read(void *ctx, const void *src, void *dst, size_t n)
{
	struct copy_mem *m = ctx;

	m->reads++;
	memcpy(dst, m->base + ((uint64_t)(uintptr_t)src - m->addr), n);
	return 0;
}

static int cm_write(void *ctx, void *dst, const void *src, size_t n)
{
	struct copy_mem *m = ctx;

	m->writes++;
	memcpy(m->base + ((uint64_t)(uintptr_t)dst - m->addr), src, n);
	return 0;
}

static const struct fc_mr_mem_ops copy_ops = { cm_read, cm_write };

/* A's source and sink and B's target are regions reached by copy (falcond: a client's
 * malloc'd memory, process_vm_readv/writev): a multi-MiB WRITE and READ through them. */
static void test_big_by_copy(void **state)
{
	uint32_t n = big(), qa, qb;
	struct copy_mem ma = { .addr = 0x7000000000ull }, mb = { .addr = 0x7100000000ull };
	struct fc_mr_keys ka, kb;
	struct fc_sge s;

	(void)state;
	ma.base = calloc(1, 2 * (size_t)n);
	mb.base = calloc(1, n);
	assert_non_null(ma.base);
	assert_non_null(mb.base);
	assert_int_equal(fc_mr_reg_ext(A->mrs, A->pd, (void *)(uintptr_t)ma.addr, 1ull << 36,
				       2 * (uint64_t)n, FC_MR_ACCESS_ALL, &copy_ops, &ma, &ka), 0);
	assert_int_equal(fc_mr_reg_ext(B->mrs, B->pd, (void *)(uintptr_t)mb.addr, 1ull << 37, n,
				       FC_MR_ACCESS_ALL, &copy_ops, &mb, &kb), 0);
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_VERBS, &qa, &qb);
	fill(ma.base, n, 5);
	s = (struct fc_sge){ 1ull << 36, n, ka.lkey };
	assert_int_equal(post_list(A, qa, FC_RDMA_WR_WRITE, 1, &s, 1, 1ull << 37, kb.rkey), 0);
	s = (struct fc_sge){ (1ull << 36) + n, n, ka.lkey };
	assert_int_equal(post_list(A, qa, FC_RDMA_WR_READ, 2, &s, 1, 1ull << 37, kb.rkey), 0);
	run();
	expect_wc(A, A->scq, 1, FC_WC_SUCCESS, 0);
	expect_wc(A, A->scq, 2, FC_WC_SUCCESS, n);
	assert_memory_equal(mb.base, ma.base, n);
	assert_memory_equal(ma.base + n, ma.base, n);
	assert_true(mb.writes >= n / PMTU && ma.writes >= n / PMTU); /* a copy per packet */
	free(ma.base);
	free(mb.base);
}

/* ------------------------------------------------------------------------ */
/* a WRITE's range is checked whole                                          */

#define R_OFF (1u << 20)                /* B's small region: mem[R_OFF, R_OFF + R_LEN) */
#define R_IOVA 0x900000000ull

/* B registers a region of len bytes (REMOTE_WRITE) over mem[R_OFF...). */
static uint32_t small_region(uint32_t len)
{
	struct fc_mr_keys k;

	assert_int_equal(fc_mr_reg(B->mrs, B->pd, B->mem + R_OFF, R_IOVA, len,
				   FC_MR_LOCAL_WRITE | FC_MR_REMOTE_WRITE, &k), 0);
	return k.rkey;
}

/* The case: a 64 KiB WRITE whose last 8 bytes lie past the region. Before, the
 * 15 packets in bounds were placed (61,440 bytes) and the WR failed; now the FIRST
 * packet's RETH names the whole range (as InfiniBand's), every packet's runs to the bad
 * end, and nothing is placed: in order, and weakly ordered with packets reordered. */
static void past_end(uint8_t order, uint32_t n)
{
	uint32_t qa, qb, rkey = small_region(n - 8);

	rc_pair(0, order, FC_RDMA_MODE_VERBS, &qa, &qb);
	jitter_us = order == FC_RDMA_ORDER_WEAK ? 40 : 0;
	fill(A->mem, n, 3);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, n, R_IOVA, rkey), 0);
	run();
	expect_wc(A, A->scq, 1, FC_WC_REM_ACCESS_ERR, 0);
	expect_no_wc(A, A->scq);
	assert_true(all_zero(B->mem + R_OFF, n));
	assert_true(n_nack[1] >= 1);
	assert_int_equal(fc_rdma_qp_state(A->d, qa), FC_RDMA_QPS_ERR);
}

static void test_write_past_end_strong(void **state)
{
	(void)state;
	past_end(FC_RDMA_ORDER_STRONG, 64u << 10);
}

static void test_write_past_end_weak(void **state)
{
	(void)state;
	past_end(FC_RDMA_ORDER_WEAK, 64u << 10);
}

/* The same for a multi-MiB WRITE one byte too long, with loss and reordering. */
static void test_big_write_past_end(void **state)
{
	(void)state;
	loss_ppm = 10000;
	past_end(FC_RDMA_ORDER_WEAK, big() + 8);
}

/* On an ordered connection a WRITE that starts before its region and ends inside is
 * refused at its FIRST packet, and the message's later packets, whose own ranges are
 * inside, are refused with it: nothing is placed. */
static void test_write_before_start_ordered(void **state)
{
	uint32_t n = 64u << 10, qa, qb, rkey = small_region(n);

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, &qa, &qb);
	fill(A->mem, n, 4);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, n, R_IOVA - 8, rkey), 0);
	run();
	expect_wc(A, A->scq, 1, FC_WC_REM_ACCESS_ERR, 0);
	assert_true(all_zero(B->mem + R_OFF, n));
	/* complete in error: the QP goes on, and the next WRITE in bounds lands whole */
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 2, 0, n, R_IOVA, rkey), 0);
	run();
	expect_wc(A, A->scq, 2, FC_WC_SUCCESS, 0);
	assert_memory_equal(B->mem + R_OFF, A->mem, n);
}

/* A multi-MiB WRITE and READ refused at their first packet (a wrong R_Key) stop sending
 * once the refusal is back (an IB requester stops at a NAK): what went out is what was
 * in flight, not the whole message. Complete in error: the QP goes on. */
static void test_failed_big_ops_stop_sending(void **state)
{
	uint32_t n = big(), qa, qb, pkts = n / PMTU;

	(void)state;
	rc_pair(0, FC_RDMA_ORDER_STRONG, FC_RDMA_MODE_CIE, &qa, &qb);
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 1, 0, n, IOVA, B->k.rkey ^ 0x100), 0);
	run();
	expect_wc(A, A->scq, 1, FC_WC_REM_ACCESS_ERR, 0);
	assert_true(n_push[0] < pkts / 2);
	assert_int_equal(post(A, qa, FC_RDMA_WR_READ, 2, 0, n, IOVA, B->k.rkey ^ 0x100), 0);
	run();
	expect_wc(A, A->scq, 2, FC_WC_REM_ACCESS_ERR, 0);
	assert_true(n_pull[0] < pkts / 2);
	assert_true(all_zero(B->mem, n) && all_zero(A->mem, n));
	assert_int_equal(post(A, qa, FC_RDMA_WR_WRITE, 3, 0, 4096, IOVA, B->k.rkey), 0);
	run();
	expect_wc(A, A->scq, 3, FC_WC_SUCCESS, 0);
	print_message("refused %u-packet WRITE: %llu pushes sent; READ: %llu pulls\n", pkts,
		      (unsigned long long)n_push[0] - 1, (unsigned long long)n_pull[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_limit_is_2gib, setup, teardown),
		cmocka_unit_test_setup_teardown(test_big_strong, setup, teardown),
		cmocka_unit_test_setup_teardown(test_big_weak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_qps_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_big_by_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_past_end_strong, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_past_end_weak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_big_write_past_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_before_start_ordered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_big_ops_stop_sending, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
