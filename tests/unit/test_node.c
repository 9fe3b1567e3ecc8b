/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node (daemon/node.h): connection setup as a CM does it, the CID table, what the
 * node drops and counts (short frames, unknown or stale CIDs, frames from a foreign peer,
 * failed encapsulation, undecodable packets, a backend without frames or that refuses
 * to send), and the encapsulation step end to end.
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

#include "encap_null.h"
#include "node_pair.h"

#define IOVA 0x10000000ull
#define MEM (256u << 10)

static struct np_host H[2];
static struct np_memio IO[2];
static struct np_host *HP[2] = { &H[0], &H[1] };
static struct fc_txn *conn[2];
static uint32_t qpn[2];

/* a test encapsulation: 4-byte magic header, 4-byte trailer with the length */
static int enc_fail_seal, enc_fail_open, enc_opened;

static int t_seal(void *ctx, struct fc_frame *f, uint32_t len)
{
	(void)ctx;
	if (enc_fail_seal)
		return -EIO;
	memcpy(f->buf, "FENC", 4);
	memcpy(f->buf + 4 + len, &len, 4);
	f->len = len + 8;
	return 0;
}

static int t_open(void *ctx, struct fc_frame *f)
{
	uint32_t len;

	(void)ctx;
	if (enc_fail_open || f->len < 8 || memcmp(f->buf, "FENC", 4))
		return -EBADMSG;
	memcpy(&len, f->buf + f->len - 4, 4);
	if (len != f->len - 8)
		return -EBADMSG;
	f->buf += 4;
	f->len = len;
	enc_opened++;
	return 0;
}

static const struct fc_encap_ops t_encap = {
	.headroom = 4, .tailroom = 4, .seal = t_seal, .open = t_open,
};

/* what setup_pair gives the nodes besides the encapsulation */
static const struct fc_rue_cfg *pair_rue;
static struct fc_xdp_conn *pair_xdp[2]; /* XDP mode: each node's falcon_conns array */
#define PAIR_XDP_N 8u
static struct fc_encap_null null_enc[2];
static uint64_t fake_now_ns;
static uint64_t fake_clock(void) { return fake_now_ns; }

static void setup_pair(const struct fc_encap_ops *encap, uint32_t max_conns)
{
	struct fc_txn_conn_cfg cc;
	struct fc_rdma_qp_init qi;

	enc_fail_seal = enc_fail_open = enc_opened = 0;
	for (int x = 0; x < 2; x++) {
		struct fc_node_cfg nc;
		struct fc_peer_addr pa = { .len = 1, .bytes = { (uint8_t)(1 - x) } };

		assert_int_equal(np_memio_init(&IO[x], &IO[1 - x], (uint8_t)x), 0);
		fc_node_cfg_default(&nc);
		nc.io = &np_memio_ops;
		nc.io_ctx = &IO[x];
		nc.encap = encap;
		null_enc[x] = (struct fc_encap_null){ .now_ns = fake_clock };
		nc.encap_ctx = encap == &fc_encap_null_ops ? &null_enc[x] : NULL;
		nc.rue = pair_rue;
		nc.txn.max_conns = nc.rdma.max_conns = max_conns;
		if (pair_xdp[x]) {
			nc.xdp_conns = pair_xdp[x];
			nc.xdp_conns_n = PAIR_XDP_N;
			nc.xdp_flags = FC_XDP_CONN_WINDOW;
		}
		assert_int_equal(np_host_init(&H[x], &nc, MEM, IOVA, 256, &pa, 3u + (uint32_t)x), 0);
	}
	fc_txn_conn_cfg_default(&cc);
	cc.pdl.max_retx = 50; /* the encapsulation test keeps a packet failing for a while */
	fc_rdma_qp_init_default(&qi);
	assert_int_equal(np_connect_rc(&H[0], &H[1], &cc, &qi, conn, qpn), 0);
}

static void teardown(void)
{
	for (int x = 0; x < 2; x++) {
		np_host_fini(&H[x]);
		np_memio_fini(&IO[x]);
	}
}

/* One 1 KiB WRITE from H[0] to H[1]; returns its completion status (-1: none). */
static int write_1k(uint64_t now)
{
	struct fc_sge sge = { .addr = IOVA, .len = 1024, .lkey = H[0].k.lkey };
	struct fc_rdma_send_wr wr = { .wr_id = 7, .opcode = FC_RDMA_WR_WRITE, .num_sge = 1,
				      .sgl = &sge, .rkey = H[1].k.rkey, .remote_addr = IOVA + 4096 };
	struct fc_rdma_wc wc;

	for (int i = 0; i < 1024; i++)
		H[0].mem[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(fc_rdma_post_send(fc_node_rdma(H[0].n), qpn[0], &wr, now), 0);
	for (int step = 0; step < 100; step++) {
		np_memio_pump(HP, IO, now + (uint64_t)step * 100000);
		if (fc_rdma_poll_cq(fc_node_rdma(H[0].n), H[0].scq, &wc, 1) == 1)
			return wc.status;
	}
	return -1;
}

static void test_write_through_encap(void **state)
{
	(void)state;
	setup_pair(&t_encap, 64);
	assert_int_equal(write_1k(1000), FC_WC_SUCCESS);
	assert_memory_equal(H[1].mem + 4096, H[0].mem, 1024);
	assert_true(enc_opened >= 2); /* the data packet and its ACK */
	for (int x = 0; x < 2; x++) {
		const struct fc_node_counters *c = fc_node_counters(H[x].n);

		assert_true(c->tx_frames > 0);
		assert_int_equal(c->rx_frames, fc_node_counters(H[1 - x].n)->tx_frames);
		assert_int_equal(c->rx_encap_err + c->rx_unknown_cid + c->rx_peer_mismatch +
				 c->rx_short + c->rx_engine_err, 0);
	}
	teardown();
}

/* security none: the PSP NULL header around every packet carries the transmit time, so
 * an ACK echoes a real t1 and the RUE measures the RTT: packets stamped 20 us before the
 * instant they move give an RTT of tens of microseconds, and the RTO the RUE sets is its
 * minimum. Without the header t1 is
 * 0, no RTT is ever measured and the RTO stays at the RUE's initial 1 ms: the control
 * case shows the test can tell. */
static void write_with_rue(const struct fc_encap_ops *encap, uint64_t *rto_ns)
{
	static struct fc_rue_cfg rue;
	const struct fc_node_counters *c;

	fc_rue_cfg_default(&rue);
	rue.min_rto_ns = 300000;
	pair_rue = &rue;
	setup_pair(encap, 64);
	pair_rue = NULL;
	fake_now_ns = 1000000000ull - 20000; /* stamped 20 us before it moves */
	for (int i = 0; i < 20; i++)
		assert_int_equal(write_1k(1000000000ull), FC_WC_SUCCESS);
	assert_memory_equal(H[1].mem + 4096, H[0].mem, 1024);
	c = fc_node_counters(H[0].n);
	assert_true(c->cc_events > 0);  /* ACKs reached the RUE */
	assert_int_equal(c->cc_errors, 0);
	assert_int_equal(c->rx_encap_err, 0);
	*rto_ns = fc_pdl_rto_ns(fc_txn_pdl(conn[0]));
	teardown();
}

static void test_null_psp_gives_the_rue_t1(void **state)
{
	uint64_t rto;

	(void)state;
	write_with_rue(&fc_encap_null_ops, &rto);
	assert_in_range(rto, 300000 - 1000, 300000 + 1000);
	assert_true(null_enc[0].last_iv >= fake_now_ns); /* the IV is the sender's clock */
	write_with_rue(NULL, &rto);
	assert_in_range(rto, 1000000 - 1000, 1000000 + 1000); /* never measured: initial */
}

/* The PSP NULL header: IVs strictly increase even when the clock does not; open takes
 * only a NULL-version header carrying Falcon and hands on the IV as tx_ns. */
static void test_null_psp_header(void **state)
{
	struct fc_encap_null e = { .now_ns = fake_clock };
	uint8_t a[64] = { 0 }, b[64] = { 0 };
	struct fc_frame fa = { .buf = a, .cap = sizeof(a) }, fb = { .buf = b, .cap = sizeof(b) };

	(void)state;
	fake_now_ns = 5000;
	memset(a + FC_PSP_HDR_LEN, 0xAB, 12);
	assert_int_equal(fc_encap_null_ops.seal(&e, &fa, 12), 0);
	assert_int_equal(fc_encap_null_ops.seal(&e, &fb, 12), 0); /* same clock reading */
	assert_int_equal(fa.len, FC_PSP_HDR_LEN + 12);
	assert_int_equal(fc_encap_null_ops.open(&e, &fa), 0);
	assert_int_equal(fc_encap_null_ops.open(&e, &fb), 0);
	assert_int_equal(fa.meta.tx_ns, 5000);
	assert_int_equal(fb.meta.tx_ns, 5001);
	assert_ptr_equal(fa.buf, a + FC_PSP_HDR_LEN);
	assert_int_equal(fa.len, 12);
	assert_int_equal(fa.buf[0], 0xAB);
	/* another PSP version (an encrypting one) is refused, as is a truncated header */
	fb = (struct fc_frame){ .buf = b, .len = FC_PSP_HDR_LEN + 12 };
	b[3] = (uint8_t)(b[3] & ~(0xF << 2)) | (uint8_t)(FC_PSP_VER_AES_GCM_256 << 2);
	assert_int_equal(fc_encap_null_ops.open(&e, &fb), -EPROTO);
	fb = (struct fc_frame){ .buf = a, .len = 10 };
	assert_int_equal(fc_encap_null_ops.open(&e, &fb), -EPROTO);
	assert_int_equal(e.rx_bad_hdr, 2);
}

/* Memory the engine reaches only by copy (mr.h fc_mr_mem_ops; falcond: another process's
 * memory through process_vm_readv/writev). "far" stands for that memory: the region's
 * address is far's offset, which the engine must never dereference. */
static uint8_t far[8192] __attribute__((aligned(8)));
static int far_fail, far_reads, far_writes;

static int far_read(void *ctx, const void *src, void *dst, size_t n)
{
	uintptr_t off = (uintptr_t)src - 0x1000; /* region registered at "address" 0x1000 */

	assert_ptr_equal(ctx, far);
	if (far_fail || off + n > sizeof(far))
		return -EFAULT;
	memcpy(dst, far + off, n);
	far_reads++;
	return 0;
}

static int far_write(void *ctx, void *dst, const void *src, size_t n)
{
	uintptr_t off = (uintptr_t)dst - 0x1000;

	assert_ptr_equal(ctx, far);
	if (far_fail || off + n > sizeof(far))
		return -EFAULT;
	memcpy(far + off, src, n);
	far_writes++;
	return 0;
}

static const struct fc_mr_mem_ops far_ops = { .read = far_read, .write = far_write };

/* Post wr on H[0]'s QP and pump until it completes; its status. */
static int run_wr(struct fc_rdma_send_wr *wr, uint64_t now)
{
	struct fc_rdma_wc wc;

	assert_int_equal(fc_rdma_post_send(fc_node_rdma(H[0].n), qpn[0], wr, now), 0);
	for (int step = 0; step < 100; step++) {
		np_memio_pump(HP, IO, now + (uint64_t)step * 100000);
		if (fc_rdma_poll_cq(fc_node_rdma(H[0].n), H[0].scq, &wc, 1) == 1)
			return wc.status;
	}
	return -1;
}

static void test_memory_reached_by_copy(void **state)
{
	struct fc_mr_keys fk, lk;
	struct fc_sge sge;
	struct fc_rdma_send_wr wr = { .num_sge = 1, .sgl = &sge };
	uint64_t now = 1000, v;

	(void)state;
	setup_pair(NULL, 64);
	sge = (struct fc_sge){ .addr = IOVA, .len = 3000, .lkey = H[0].k.lkey };
	far_fail = far_reads = far_writes = 0;
	memset(far, 0, sizeof(far));
	/* on H[1], remote access to far through the ops, peers address it at 0x500000 */
	assert_int_equal(fc_mr_reg_ext(fc_node_mrs(H[1].n), H[1].pd, (void *)0x1000, 0x500000,
				       sizeof(far), FC_MR_ACCESS_ALL, &far_ops, far, &fk), 0);
	/* WRITE 3000 bytes into it (a multi-packet placement at an offset) */
	for (int i = 0; i < 3000; i++)
		H[0].mem[i] = (uint8_t)(i * 13 + 5);
	wr.opcode = FC_RDMA_WR_WRITE;
	wr.rkey = fk.rkey;
	wr.remote_addr = 0x500000 + 100;
	assert_int_equal(run_wr(&wr, now), FC_WC_SUCCESS);
	assert_memory_equal(far + 100, H[0].mem, 3000);
	assert_true(far_writes > 0);
	/* READ it back elsewhere on H[0] */
	memset(H[0].mem + 8192, 0, 3000);
	sge.addr = IOVA + 8192;
	wr.opcode = FC_RDMA_WR_READ;
	assert_int_equal(run_wr(&wr, now += 20000000), FC_WC_SUCCESS);
	assert_memory_equal(H[0].mem + 8192, far + 100, 3000);
	assert_true(far_reads > 0);
	/* FetchAdd and CmpSwap on a word of it */
	v = 40;
	memcpy(far + 4096, &v, 8);
	sge = (struct fc_sge){ .addr = IOVA + 16384, .len = 8, .lkey = H[0].k.lkey };
	wr = (struct fc_rdma_send_wr){ .opcode = FC_RDMA_WR_FETCH_ADD, .num_sge = 1, .sgl = &sge,
				       .rkey = fk.rkey, .remote_addr = 0x500000 + 4096,
				       .compare_add = 2 };
	assert_int_equal(run_wr(&wr, now += 20000000), FC_WC_SUCCESS);
	memcpy(&v, H[0].mem + 16384, 8);
	assert_int_equal(v, 40); /* the original value comes back */
	memcpy(&v, far + 4096, 8);
	assert_int_equal(v, 42);
	wr.opcode = FC_RDMA_WR_CMP_SWAP;
	wr.compare_add = 42;
	wr.swap = 7;
	assert_int_equal(run_wr(&wr, now += 20000000), FC_WC_SUCCESS);
	memcpy(&v, far + 4096, 8);
	assert_int_equal(v, 7);
	/* the requester's own gather list from memory reached by copy: H[0] sends far's
	 * bytes (registered on H[0] too) with a WRITE into H[1]'s ordinary memory */
	assert_int_equal(fc_mr_reg_ext(fc_node_mrs(H[0].n), H[0].pd, (void *)0x1000, 0x700000,
				       sizeof(far), FC_MR_ACCESS_ALL, &far_ops, far, &lk), 0);
	sge = (struct fc_sge){ .addr = 0x700000 + 100, .len = 3000, .lkey = lk.lkey };
	wr = (struct fc_rdma_send_wr){ .opcode = FC_RDMA_WR_WRITE, .num_sge = 1, .sgl = &sge,
				       .rkey = H[1].k.rkey, .remote_addr = IOVA + 32768 };
	assert_int_equal(run_wr(&wr, now += 20000000), FC_WC_SUCCESS);
	assert_memory_equal(H[1].mem + 32768, far + 100, 3000);
	/* a SEND placed into a receive WQE whose buffers are in far (two pieces) */
	{
		struct fc_sge rs[2] = { { .addr = 0x500000 + 6000, .len = 1000, .lkey = fk.lkey },
					{ .addr = 0x500000 + 7100, .len = 1000, .lkey = fk.lkey } };
		struct fc_rdma_recv_wr rw = { .wr_id = 9, .num_sge = 2, .sgl = rs };
		struct fc_rdma_wc wc;
		int got = 0;

		assert_int_equal(fc_rdma_post_recv(fc_node_rdma(H[1].n), qpn[1], &rw), 0);
		sge = (struct fc_sge){ .addr = IOVA, .len = 1500, .lkey = H[0].k.lkey };
		wr = (struct fc_rdma_send_wr){ .opcode = FC_RDMA_WR_SEND, .num_sge = 1,
					       .sgl = &sge };
		assert_int_equal(run_wr(&wr, now += 20000000), FC_WC_SUCCESS);
		for (int step = 0; step < 10 && !got; step++) {
			np_memio_pump(HP, IO, now + (uint64_t)step * 100000);
			got = fc_rdma_poll_cq(fc_node_rdma(H[1].n), H[1].rcq, &wc, 1);
		}
		assert_int_equal(got, 1);
		assert_int_equal(wc.status, FC_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 1500);
		assert_memory_equal(far + 6000, H[0].mem, 1000);
		assert_memory_equal(far + 7100, H[0].mem + 1000, 500);
	}
	/* the memory goes away (the owner unmapped it): a WRITE into it is a remote access
	 * error, an atomic too, and nothing of ours is written */
	far_fail = 1;
	sge = (struct fc_sge){ .addr = IOVA, .len = 64, .lkey = H[0].k.lkey };
	wr = (struct fc_rdma_send_wr){ .opcode = FC_RDMA_WR_WRITE, .num_sge = 1, .sgl = &sge,
				       .rkey = fk.rkey, .remote_addr = 0x500000 };
	assert_int_equal(run_wr(&wr, now += 20000000), FC_WC_REM_ACCESS_ERR);
	teardown();
}

/* Frames the node must drop, each counted under its own reason. */
static void test_rx_drops(void **state)
{
	const struct fc_node_counters *c;
	struct fc_peer_addr stranger = { .len = 1, .bytes = { 9 } };
	uint8_t buf[256];
	struct fc_frame f;
	uint32_t cid;

	(void)state;
	setup_pair(NULL, 64);
	cid = fc_txn_local_cid(conn[1]); /* H[1]'s connection: frames to H[1] name it */
	c = fc_node_counters(H[1].n);

	/* a frame too short for a CID */
	f = (struct fc_frame){ .buf = buf, .len = 3, .peer = &IO[0].self };
	assert_int_equal(fc_node_rx_batch(H[1].n, &f, 1), 0);
	assert_int_equal(c->rx_short, 1);

	/* a CID nobody holds */
	memset(buf, 0, sizeof(buf));
	buf[0] = 0x10; /* version 1, CID 0 (slot 0 with generation 0: never handed out) */
	f = (struct fc_frame){ .buf = buf, .len = 64, .peer = &IO[0].self };
	assert_int_equal(fc_node_rx_batch(H[1].n, &f, 1), 0);
	assert_int_equal(c->rx_unknown_cid, 1);

	/* our CID, from a peer that is not the connection's */
	buf[1] = (uint8_t)(cid >> 16);
	buf[2] = (uint8_t)(cid >> 8);
	buf[3] = (uint8_t)cid;
	f = (struct fc_frame){ .buf = buf, .len = 64, .peer = &stranger };
	assert_int_equal(fc_node_rx_batch(H[1].n, &f, 1), 0);
	assert_int_equal(c->rx_peer_mismatch, 1);

	/* our CID from the right peer, but garbage behind it: the engine cannot decode it */
	memset(buf + 4, 0xEE, 60);
	f = (struct fc_frame){ .buf = buf, .len = 64, .peer = &IO[0].self };
	assert_int_equal(fc_node_rx_batch(H[1].n, &f, 1), 0);
	assert_int_equal(c->rx_engine_err, 1);
	assert_int_equal(c->rx_frames, 4);

	/* the connection still works */
	assert_int_equal(write_1k(1000), FC_WC_SUCCESS);
	teardown();
}

static void test_encap_failures(void **state)
{
	(void)state;
	setup_pair(&t_encap, 64);
	enc_fail_open = 1; /* every frame fails its check: nothing gets through */
	assert_int_equal(write_1k(1000), -1);
	assert_true(fc_node_counters(H[1].n)->rx_encap_err > 0);
	enc_fail_open = 0;
	enc_fail_seal = 1; /* nothing can be sent */
	np_memio_pump(HP, IO, 20000000ull);
	assert_true(fc_node_counters(H[0].n)->tx_encap_err > 0);
	enc_fail_seal = 0;
	/* the PDL retransmits: the WRITE completes once the step works again */
	for (int step = 1; step < 200; step++) {
		struct fc_rdma_wc wc;

		np_memio_pump(HP, IO, 20000000ull + (uint64_t)step * 2000000);
		if (fc_rdma_poll_cq(fc_node_rdma(H[0].n), H[0].scq, &wc, 1) == 1) {
			assert_int_equal(wc.status, FC_WC_SUCCESS);
			assert_memory_equal(H[1].mem + 4096, H[0].mem, 1024);
			teardown();
			return;
		}
	}
	fail_msg("the WRITE never completed after the encapsulation recovered");
}

/* A backend without free frames, and one that refuses to send. */
static void test_backend_pressure(void **state)
{
	uint32_t saved;

	(void)state;
	setup_pair(NULL, 64);
	saved = IO[0].nfree;
	IO[0].nfree = 0; /* no frames */
	{
		struct fc_sge sge = { .addr = IOVA, .len = 8, .lkey = H[0].k.lkey };
		struct fc_rdma_send_wr wr = { .wr_id = 1, .opcode = FC_RDMA_WR_WRITE, .num_sge = 1,
					      .sgl = &sge, .rkey = H[1].k.rkey,
					      .remote_addr = IOVA };

		assert_int_equal(fc_rdma_post_send(fc_node_rdma(H[0].n), qpn[0], &wr, 10), 0);
	}
	assert_int_equal(fc_node_poll_tx(H[0].n, 10, 8), 0);
	assert_true(fc_node_counters(H[0].n)->tx_no_frame > 0);
	IO[0].nfree = saved;
	/* the peer's inbox is full: the backend takes nothing, the node counts the drop */
	IO[1].nin = NP_POOL;
	assert_int_equal(fc_node_poll_tx(H[0].n, 20, 8), 1);
	assert_int_equal(fc_node_counters(H[0].n)->tx_io_drop, 1);
	assert_int_equal(fc_node_counters(H[0].n)->tx_frames, 0);
	IO[1].nin = 0;
	teardown();
}

/* The CM's two steps and the CID table. */
/* XDP mode: each connection's windows live in its slot's entry of the XDP program's
 * array, published with the peer's CID once they are set up, retired at close; the
 * engine acknowledges in that memory and publishes its transmit bases there (the stale
 * ACK check XDP runs, 9.2.3). */
static void test_xdp_entries(void **state)
{
	static struct fc_xdp_conn xa[PAIR_XDP_N], xb[PAIR_XDP_N];
	struct fc_xdp_conn *e[2];
	struct fc_txn_conn_cfg cc;
	uint32_t base_rx, base_tx, cid;
	struct fc_txn *t;

	(void)state;
	memset(xa, 0xA5, sizeof(xa)); /* stale bytes: the node must set what XDP reads */
	memset(xb, 0xA5, sizeof(xb));
	pair_xdp[0] = xa;
	pair_xdp[1] = xb;
	setup_pair(&fc_encap_null_ops, 4);
	pair_xdp[0] = pair_xdp[1] = NULL;
	for (int x = 0; x < 2; x++) {
		uint32_t lc = fc_txn_local_cid(conn[x]);

		e[x] = &(x ? xb : xa)[lc & FC_XDP_SLOT_MASK];
		assert_int_equal(e[x]->cid, lc);
		assert_int_equal(e[x]->remote_cid, fc_txn_local_cid(conn[1 - x]));
		assert_int_equal(e[x]->flags, FC_XDP_CONN_WINDOW);
		assert_int_equal(e[x]->spi_sess, 0); /* no PSP */
		assert_ptr_equal(fc_pdl_rx_state(fc_txn_pdl(conn[x])), &e[x]->rx);
	}
	base_rx = e[1]->rx.data.base;
	base_tx = e[0]->rx.tx_bpsn[FC_WIN_DATA];
	assert_int_equal(write_1k(1000), FC_WC_SUCCESS);
	assert_memory_equal(H[1].mem + 4096, H[0].mem, 1024);
	/* the receiver took the Push Data in the shared window and moved its base ... */
	assert_int_equal(e[1]->rx.data.base, base_rx + 1);
	/* ... and the sender published the data base the ACK moved */
	assert_int_equal(e[0]->rx.tx_bpsn[FC_WIN_DATA], base_tx + 1);
	assert_int_equal(e[0]->rx.tx_bpsn[FC_WIN_DATA],
			 fc_load_acq32(&e[1]->rx.data.base));
	/* a connection without a QP: published at open, retired at close */
	fc_txn_conn_cfg_default(&cc);
	cc.pdl.remote_cid = 0x4242;
	assert_int_equal(fc_node_cid_reserve(H[0].n, H[0].peer, &cid), 0);
	assert_int_equal(xa[cid & FC_XDP_SLOT_MASK].cid, 0xA5A5A5A5u); /* reserved only */
	t = fc_node_conn_open(H[0].n, cid, &cc);
	assert_non_null(t);
	assert_int_equal(xa[cid & FC_XDP_SLOT_MASK].cid, cid);
	assert_int_equal(xa[cid & FC_XDP_SLOT_MASK].remote_cid, 0x4242);
	assert_int_equal(xa[cid & FC_XDP_SLOT_MASK].rx.remote_time, 0);
	assert_int_equal(fc_node_conn_remote_time(H[0].n, t, 123456789), 0);
	assert_int_equal(xa[cid & FC_XDP_SLOT_MASK].rx.remote_time, 123456789);
	assert_int_equal(fc_node_conn_close(H[0].n, t), 0);
	assert_int_equal(xa[cid & FC_XDP_SLOT_MASK].cid, 0);
	teardown();
}

static void test_cid_lifecycle(void **state)
{
	struct fc_txn_conn_cfg cc;
	uint32_t cid, cid2, peer;
	struct fc_peer_addr pa = { .len = 1, .bytes = { 1 } }, big = { .len = 0 };
	struct fc_node *n;

	(void)state;
	setup_pair(NULL, 4);
	n = H[0].n;
	fc_txn_conn_cfg_default(&cc);
	/* peers: the same address is the same peer; bad ones are refused */
	assert_int_equal(fc_node_peer_add(n, &pa, &peer), 0);
	assert_int_equal(peer, H[0].peer);
	assert_int_equal(fc_node_peer_add(n, &big, &peer), -EINVAL);
	assert_int_equal(fc_node_cid_reserve(n, 77, &cid), -EINVAL);
	/* open needs a reservation; a released one is gone */
	assert_null(fc_node_conn_open(n, 0x123, &cc));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(fc_node_cid_reserve(n, H[0].peer, &cid), 0);
	assert_int_equal(fc_node_cid_release(n, cid), 0);
	assert_int_equal(fc_node_cid_release(n, cid), -ENOENT);
	assert_null(fc_node_conn_open(n, cid, &cc));
	/* 4 slots: one used by the pair, three more, then none */
	assert_int_equal(fc_node_cid_reserve(n, H[0].peer, &cid), 0);
	assert_int_equal(fc_node_cid_reserve(n, H[0].peer, &cid2), 0);
	assert_int_not_equal(cid, cid2);
	assert_int_equal(fc_node_cid_reserve(n, H[0].peer, &peer), 0);
	assert_int_equal(fc_node_cid_reserve(n, H[0].peer, &peer), -ENOSPC);
	cc.pdl.remote_cid = 5;
	{
		struct fc_txn *t = fc_node_conn_open(n, cid, &cc);

		assert_non_null(t);
		assert_int_equal(fc_txn_local_cid(t), cid);
		assert_int_equal(fc_node_conn_peer(n, t), H[0].peer);
		/* another node's connection (same CID there) is not ours to close */
		assert_int_equal(fc_node_conn_close(H[1].n, t), -ENOENT);
		assert_int_equal(fc_node_conn_close(n, t), 0);
	}
	/* the slot comes back with a new CID: the old one stays unknown */
	assert_int_equal(fc_node_cid_reserve(n, H[0].peer, &cid2), 0);
	assert_int_equal(cid2 & (FC_NODE_CONNS_MAX - 1), cid & (FC_NODE_CONNS_MAX - 1));
	assert_int_not_equal(cid2, cid);
	/* a connection with a QP cannot be closed */
	assert_int_equal(fc_node_conn_close(n, conn[0]), -EBUSY);
	teardown();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_through_encap),
		cmocka_unit_test(test_null_psp_header),
		cmocka_unit_test(test_null_psp_gives_the_rue_t1),
		cmocka_unit_test(test_memory_reached_by_copy),
		cmocka_unit_test(test_rx_drops),
		cmocka_unit_test(test_encap_failures),
		cmocka_unit_test(test_backend_pressure),
		cmocka_unit_test(test_cid_lifecycle),
		cmocka_unit_test(test_xdp_entries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
