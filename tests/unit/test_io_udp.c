/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The UDP backend (daemon/io_udp.h): two nodes on loopback sockets (127.0.0.1 and ::1,
 * kernel-chosen ports), RDMA WRITE / READ / FetchAdd between them through real
 * datagrams, and junk datagrams from a stranger's socket dropped and counted while the
 * connection goes on. Bounded in time: every wait is a poll() of at most 1 ms, every
 * loop at most 5 s.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "io_udp.h"
#include "node_pair.h"

#define IOVA 0x10000000ull
#define MEM (1u << 20)

static struct np_host H[2];
static struct fc_io_udp *U[2];
static struct fc_txn *conn[2];
static uint32_t qpn[2];

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void loopback(int family, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		*len = sizeof(*in6);
	}
}

static void setup(int family)
{
	struct sockaddr_storage local[2];
	socklen_t len[2];
	struct fc_txn_conn_cfg cc;
	struct fc_rdma_qp_init qi;

	for (int x = 0; x < 2; x++) {
		struct sockaddr_storage ss;
		socklen_t l;

		loopback(family, &ss, &l);
		U[x] = fc_io_udp_open((struct sockaddr *)&ss, l, 256);
		assert_non_null(U[x]);
		assert_int_equal(fc_io_udp_local(U[x], &local[x], &len[x]), 0);
	}
	for (int x = 0; x < 2; x++) {
		struct fc_node_cfg nc;
		struct fc_peer_addr pa;

		assert_int_equal(fc_io_udp_peer_addr((struct sockaddr *)&local[1 - x], len[1 - x], &pa), 0);
		/* the peer's port, as XDP's ACKs need it (node.h peer_port) */
		assert_int_equal(fc_io_udp_peer_port(NULL, &pa),
				 ntohs(family == AF_INET ?
				       ((struct sockaddr_in *)&local[1 - x])->sin_port :
				       ((struct sockaddr_in6 *)&local[1 - x])->sin6_port));
		assert_int_not_equal(fc_io_udp_peer_port(NULL, &pa), 0);
		fc_node_cfg_default(&nc);
		nc.io = &fc_io_udp_ops;
		nc.io_ctx = U[x];
		assert_int_equal(np_host_init(&H[x], &nc, MEM, IOVA, 256, &pa, 11u + (uint32_t)x), 0);
	}
	fc_txn_conn_cfg_default(&cc);
	fc_rdma_qp_init_default(&qi);
	assert_int_equal(np_connect_rc(&H[0], &H[1], &cc, &qi, conn, qpn), 0);
}

static void teardown(void)
{
	for (int x = 0; x < 2; x++) {
		np_host_fini(&H[x]);
		fc_io_udp_close(U[x]);
	}
}

/* Drive both nodes until H[0]'s send CQ has n completions (copied to wc) or 5 s pass. */
static int run_until_cqes(struct fc_rdma_wc *wc, int n)
{
	uint64_t t0 = mono_ns();
	int got = 0;

	while (got < n && mono_ns() - t0 < 5000000000ull) {
		struct pollfd pfd[2] = { { .fd = fc_io_udp_fd(U[0]), .events = POLLIN },
					 { .fd = fc_io_udp_fd(U[1]), .events = POLLIN } };
		uint64_t now;
		int rc;

		for (int x = 0; x < 2; x++) {
			now = mono_ns();
			if (fc_node_next_deadline(H[x].n) <= now)
				fc_node_on_timer(H[x].n, now);
			fc_node_poll_tx(H[x].n, now, 256);
		}
		(void)poll(pfd, 2, 1);
		for (int x = 0; x < 2; x++)
			assert_true(fc_io_udp_rx(U[x], H[x].n, mono_ns(), 1024) >= 0);
		rc = fc_rdma_poll_cq(fc_node_rdma(H[0].n), H[0].scq, wc + got, (uint32_t)(n - got));
		assert_true(rc >= 0);
		got += rc;
	}
	return got;
}

/* A 64 KiB WRITE, a READ of it back and a FetchAdd from H[0] to H[1], all verified. */
static void transfers(void)
{
	struct fc_sge w = { .addr = IOVA, .len = 65536, .lkey = H[0].k.lkey };
	struct fc_sge r = { .addr = IOVA + 131072, .len = 65536, .lkey = H[0].k.lkey };
	struct fc_sge a = { .addr = IOVA + 262144, .len = 8, .lkey = H[0].k.lkey };
	struct fc_rdma_send_wr wr[3] = {
		{ .wr_id = 1, .opcode = FC_RDMA_WR_WRITE, .num_sge = 1, .sgl = &w,
		  .rkey = H[1].k.rkey, .remote_addr = IOVA + 65536 },
		{ .wr_id = 2, .opcode = FC_RDMA_WR_READ, .num_sge = 1, .sgl = &r,
		  .rkey = H[1].k.rkey, .remote_addr = IOVA + 65536 },
		{ .wr_id = 3, .opcode = FC_RDMA_WR_FETCH_ADD, .num_sge = 1, .sgl = &a,
		  .rkey = H[1].k.rkey, .remote_addr = IOVA + 524288, .compare_add = 5 },
	};
	struct fc_rdma_wc wc[3];
	uint64_t old = 37, now_val;

	for (uint32_t i = 0; i < 65536; i++)
		H[0].mem[i] = (uint8_t)(i * 13 + 7);
	memcpy(H[1].mem + 524288, &old, 8);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fc_rdma_post_send(fc_node_rdma(H[0].n), qpn[0], &wr[i], mono_ns()), 0);
	assert_int_equal(run_until_cqes(wc, 3), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].status, FC_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 1); /* strongly ordered QP */
	}
	assert_memory_equal(H[1].mem + 65536, H[0].mem, 65536);    /* written */
	assert_memory_equal(H[0].mem + 131072, H[0].mem, 65536);   /* read back */
	memcpy(&now_val, H[1].mem + 524288, 8);
	assert_int_equal(now_val, 42);
	assert_memory_equal(H[0].mem + 262144, &old, 8);           /* FetchAdd's old value */
	assert_true(fc_io_udp_stats(U[0])->tx_dgrams >= 17);       /* 16 WRITE packets + ... */
	assert_int_equal(fc_io_udp_stats(U[1])->rx_dgrams, fc_io_udp_stats(U[0])->tx_dgrams);
	assert_int_equal(fc_node_counters(H[1].n)->rx_peer_mismatch, 0);
}

static void write_read_atomic(int family)
{
	setup(family); /* first: the WRs use the keys it makes */
	transfers();
	teardown();
}

static void test_ipv4(void **state) { (void)state; write_read_atomic(AF_INET); }
static void test_ipv6(void **state) { (void)state; write_read_atomic(AF_INET6); }

/* Junk from a stranger: short, garbage with our CID, and a copy of nothing; the node
 * counts each and the connection goes on. */
static void test_stranger_junk(void **state)
{
	struct sockaddr_storage target;
	socklen_t tlen;
	struct fc_rdma_wc wc;
	struct fc_sge w = { .addr = IOVA, .len = 8 };
	struct fc_rdma_send_wr wr = { .wr_id = 9, .opcode = FC_RDMA_WR_WRITE, .num_sge = 1,
				      .sgl = &w, .remote_addr = IOVA + 8 };
	uint8_t junk[64];
	uint32_t cid;
	int s;
	const struct fc_node_counters *c;

	(void)state;
	setup(AF_INET);
	c = fc_node_counters(H[1].n);
	cid = fc_txn_local_cid(conn[1]);
	assert_int_equal(fc_io_udp_local(U[1], &target, &tlen), 0);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(s >= 0);
	memset(junk, 0xAB, sizeof(junk));
	assert_int_equal(sendto(s, junk, 2, 0, (struct sockaddr *)&target, tlen), 2);
	junk[0] = 0x10;
	junk[1] = (uint8_t)(cid >> 16);
	junk[2] = (uint8_t)(cid >> 8);
	junk[3] = (uint8_t)cid;
	assert_int_equal(sendto(s, junk, sizeof(junk), 0, (struct sockaddr *)&target, tlen),
			 (ssize_t)sizeof(junk));
	close(s);
	for (int i = 0; i < 1000 && c->rx_frames < 2; i++) {
		struct pollfd p = { .fd = fc_io_udp_fd(U[1]), .events = POLLIN };

		(void)poll(&p, 1, 1);
		assert_true(fc_io_udp_rx(U[1], H[1].n, mono_ns(), 64) >= 0);
	}
	assert_int_equal(c->rx_short, 1);
	assert_int_equal(c->rx_peer_mismatch, 1); /* our CID, another port: not our peer */
	wr.rkey = H[1].k.rkey;
	w.lkey = H[0].k.lkey;
	assert_int_equal(fc_rdma_post_send(fc_node_rdma(H[0].n), qpn[0], &wr, mono_ns()), 0);
	assert_int_equal(run_until_cqes(&wc, 1), 1);
	assert_int_equal(wc.status, FC_WC_SUCCESS);
	teardown();
}

/* Runs of equal-size datagrams to one peer leave as UDP GSO messages and arrive as GRO
 * runs, and still reach the receiver as one frame per datagram, in order, each with its
 * own bytes; a shorter datagram ends a run; another peer's frames are not merged. The
 * receiving node is not needed: the rx filter takes every frame and passes none on. */
#define BURST 150u
static uint8_t got_buf[BURST + 8][1200];
static uint32_t got_len[BURST + 8], ngot;

static unsigned capture(void *ctx, struct fc_frame *f, unsigned n, unsigned cap)
{
	(void)ctx;
	(void)cap;
	for (unsigned i = 0; i < n && ngot < BURST + 8; i++) {
		assert_true(f[i].len <= sizeof(got_buf[0]));
		memcpy(got_buf[ngot], f[i].buf, f[i].len);
		got_len[ngot++] = f[i].len;
	}
	return 0;
}

/* refuse_gso: the sending socket has SO_NO_CHECK set, with which the kernel refuses
 * UDP_SEGMENT (EINVAL): the first GSO message fails, GSO goes off for good and every
 * frame of the call still leaves, one datagram each, in order. */
static void gso_burst(int refuse_gso)
{
	struct sockaddr_storage ss;
	socklen_t l;
	struct fc_io_udp *tx, *rx, *other;
	struct fc_peer_addr to, to_other;
	struct fc_frame f[64];
	unsigned sent = 0;
	uint64_t t0;

	loopback(AF_INET, &ss, &l);
	assert_non_null(tx = fc_io_udp_open((struct sockaddr *)&ss, l, 256));
	assert_non_null(rx = fc_io_udp_open((struct sockaddr *)&ss, l, 16));
	assert_non_null(other = fc_io_udp_open((struct sockaddr *)&ss, l, 16));
	assert_int_equal(fc_io_udp_local(rx, &ss, &l), 0);
	assert_int_equal(fc_io_udp_peer_addr((struct sockaddr *)&ss, l, &to), 0);
	assert_int_equal(fc_io_udp_local(other, &ss, &l), 0);
	assert_int_equal(fc_io_udp_peer_addr((struct sockaddr *)&ss, l, &to_other), 0);
	fc_io_udp_set_rx_filter(rx, capture, NULL);
	fc_io_udp_set_rx_filter(other, capture, NULL);
	if (refuse_gso) {
		int one = 1;

		assert_int_equal(setsockopt(fc_io_udp_fd(tx), SOL_SOCKET, SO_NO_CHECK, &one,
					    sizeof(one)), 0);
	}
	ngot = 0;
	/* BURST datagrams in calls of up to 64: 1000 bytes each but every 40th of 300 (it
	 * ends a run), the 10th of each call to the other socket (it splits a run) */
	while (sent < BURST) {
		unsigned n = BURST - sent < 64 ? BURST - sent : 64, k;

		assert_int_equal(fc_io_udp_ops.tx_alloc(tx, f, n), n);
		for (k = 0; k < n; k++) {
			uint32_t idx = sent + k;

			f[k].len = idx % 40 == 39 ? 300 : 1000;
			memset(f[k].buf, (int)(idx * 7 + 1), f[k].len);
			memcpy(f[k].buf, &idx, sizeof(idx));
			f[k].peer = k == 9 ? &to_other : &to;
		}
		assert_int_equal(fc_io_udp_ops.tx_send(tx, f, n), n);
		sent += n;
	}
	assert_int_equal(fc_io_udp_stats(tx)->tx_dgrams, BURST);
	assert_int_equal(fc_io_udp_stats(tx)->tx_errors + fc_io_udp_stats(tx)->tx_eagain_drops, 0);
	assert_true(fc_io_udp_stats(tx)->tx_gso_runs > 0); /* runs did go (or were tried) as GSO */
	assert_int_equal(fc_io_udp_stats(tx)->tx_gso_refused, (uint64_t)refuse_gso);
	t0 = mono_ns();
	while (ngot < BURST && mono_ns() - t0 < 5000000000ull) {
		struct pollfd p[2] = { { fc_io_udp_fd(rx), POLLIN, 0 },
				       { fc_io_udp_fd(other), POLLIN, 0 } };

		poll(p, 2, 1);
		fc_io_udp_rx(rx, NULL, mono_ns(), 1024);
		fc_io_udp_rx(other, NULL, mono_ns(), 1024);
	}
	assert_int_equal(ngot, BURST);
	/* the main socket's frames in the order sent, each intact; the other's apart */
	{
		uint32_t main_i = 0, other_n = 0;

		for (uint32_t i = 0; i < ngot; i++) {
			uint32_t idx, want_len;

			memcpy(&idx, got_buf[i], sizeof(idx));
			assert_true(idx < BURST);
			want_len = idx % 40 == 39 ? 300 : 1000;
			assert_int_equal(got_len[i], want_len);
			for (uint32_t b = sizeof(idx); b < want_len; b++)
				assert_int_equal(got_buf[i][b], (uint8_t)(idx * 7 + 1));
			if (idx % 64 == 9) {
				other_n++;
				continue;
			}
			/* frames of rx arrive in send order (those of other may interleave) */
			while (main_i % 64 == 9)
				main_i++;
			assert_int_equal(idx, main_i);
			main_i++;
		}
		assert_int_equal(other_n, 3); /* one in each of the three calls */
	}
	if (!refuse_gso)
		assert_true(fc_io_udp_stats(rx)->rx_gro_runs > 0); /* and came back as GRO runs */
	assert_int_equal(fc_io_udp_stats(rx)->rx_dgrams + fc_io_udp_stats(other)->rx_dgrams, BURST);
	fc_io_udp_close(tx);
	fc_io_udp_close(rx);
	fc_io_udp_close(other);
}

static void test_gso_gro_runs(void **state)
{
	(void)state;
	gso_burst(0);
}

static void test_gso_refused_fallback(void **state)
{
	(void)state;
	gso_burst(1);
}

static void test_open_errors(void **state)
{
	struct sockaddr_storage ss;
	struct fc_peer_addr pa;

	(void)state;
	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNIX;
	assert_null(fc_io_udp_open((struct sockaddr *)&ss, sizeof(ss), 16));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(fc_io_udp_peer_addr((struct sockaddr *)&ss, sizeof(ss), &pa), -EINVAL);
	ss.ss_family = AF_INET;
	assert_null(fc_io_udp_open((struct sockaddr *)&ss, sizeof(struct sockaddr_in), 0));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_stranger_junk),
		cmocka_unit_test(test_gso_gro_runs),
		cmocka_unit_test(test_gso_refused_fallback),
		cmocka_unit_test(test_open_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
