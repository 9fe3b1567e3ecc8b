/* SPDX-License-Identifier: Apache-2.0 */
/*
 * e2e_client - end-to-end checks through two live falcond (the tests/e2e scripts run it):
 *
 *   e2e_client matrix SOCK_A SOCK_B CM_B      every opcode x sizes 1 B .. 1 MiB, data
 *                                             checked by checksum, every WR completed
 *                                             exactly once, nothing completed twice
 *   e2e_client chaos SOCK_A SOCK_B CM_B MIB   MIB MiB of WRITE + READ back with random
 *                                             sizes and offsets, verified; figures printed
 *   e2e_client victim SOCK_A SOCK_B CM_B      connect and WRITE forever (killed by the test)
 *   e2e_client steady SOCK_A SOCK_B CM_B SEC  WRITE + READ verified for SEC seconds
 *   e2e_client connects SOCK_A SOCK_B CM_B N  N connections set up, used once (a WRITE
 *                                             checked) and torn down, one after another
 *   e2e_client srq SOCK_A SOCK_B CM_B         two QPs on B share one SRQ: SENDs from both
 *                                             land in its WRs in posting order, each
 *                                             checked; the SRQ's rules (no own receives,
 *                                             busy while used)
 *   e2e_client flows SOCK_A SOCK_B CM_B       the spec's flows (RDMA spec 6.6): multi-MTU
 *                                             READ / WRITE (the daemons reorder), push RNR
 *                                             (SEND before the receive is posted), CIE
 *   e2e_client pullrnr SOCK_A SOCK_B CM_B N   N READs at once (against a B that can hold
 *                                             one answer: 6.6.4 pull RNR), every one
 *                                             completed once, in order, data checked
 *   e2e_client canary SOCK_A SOCK_B CM_B STOP [SEC]
 *                                             CANARY_WRITES WRITEs of a fixed text
 *                                             (CANARY_TEXT, for a capture to look for),
 *                                             each into a slot of B's guard buffer of its
 *                                             own, checked there and wiped; then steady
 *                                             verified WRITE + READ until the file STOP
 *                                             exists (at most SEC s, default 120); then
 *                                             the guard buffer must still be all zero:
 *                                             a replayed canary WRITE taken would show
 *   e2e_client overload SOCK_A SOCK_B CM_B SEC
 *                                             for SEC seconds, rounds of 4 WRITEs (1 B ..
 *                                             64 KiB, checked in B's memory), 4 READs back
 *                                             (checked), a FetchAdd and a CmpSwap that
 *                                             hits and one that misses (results and B's
 *                                             word checked); ends with one summary line
 *                                             "overload: ..." (tests/e2e/test_overload.sh)
 *   e2e_client stall SOCK_A SOCK_B CM_B SEC ok|retry
 *                                             16 receives posted at B, then the overload
 *                                             rounds for SEC s while the test stops B's
 *                                             falcond; ok: no error on either side, the
 *                                             stop seen as a gap; retry: A's QP fails
 *                                             RETRY_EXC_ERR, B's receives complete
 *                                             WR_FLUSH_ERR and B's QP is in ERR; one line
 *                                             "stall: ..." (tests/e2e/test_stall.sh)
 *   e2e_client rnr SOCK_A SOCK_B CM_B DELAY_S a SEND whose receive is posted DELAY_S s
 *                                             later completes SUCCESS with rnr_retry 7; one
 *                                             with rnr_retry 1 and the shortest RNR timer
 *                                             completes RNR_RETRY_EXC_ERR
 * E2E_CONNECT_MS bounds the connect (default WAIT_MS). The QPs' attributes: E2E_QP_TIMEOUT
 * and E2E_QP_RETRY_CNT (with a library that has FALCON_QP_TIMEOUT_SET; E2E_QP_MODIFY=1:
 * stall sets these two by falcon_modify_qp once connected, not at connect / accept),
 * E2E_RNR_RETRY, E2E_MIN_RNR_TIMER; unset, the library's defaults.
 *
 * Exit status 0 only when every check passed. Every wait is bounded (WAIT_MS).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "falcon/falcon.h"
#include "../testutil.h"

#define WAIT_MS 20000
#define BUF_BYTES (8u << 20)
#define MAX_WR 4096u

static int failures;
static unsigned service = 5000;
static int connect_ms = WAIT_MS;
static const char *stop_file; /* transfer() ends when it exists */

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		if (failures++ < 20) { \
			fprintf(stderr, "e2e: FAILED: " __VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} \
} while (0)

static void die(const char *what)
{
	int e = errno;
	const char *why = falcon_error_detail();

	/* the errno's text, then what the library says it concerned (if more) */
	fprintf(stderr, "e2e: %s: %s%s%s\n", what, falcon_strerror(-e),
		strcmp(why, falcon_strerror(-e)) ? ": " : "",
		strcmp(why, falcon_strerror(-e)) ? why : "");
	exit(1);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t now_ns(void) { return fc_test_now_ns(); }
static uint64_t rnd(void) { return fc_test_rand(&rng); }

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

struct side {
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	struct falcon_mr *mr, *inv_mr;
	uint8_t *buf;
	int buf_malloced;      /* E2E_ANYMEM: ours to free */
	struct falcon_qp *qp;
	struct falcon_listener *l;
	struct falcon_srq *srq; /* given: the QPs this side accepts receive from it */
	uint8_t seen[MAX_WR];  /* completions per wr_id */
};

static void side_open(struct side *s, const char *sock)
{
	unsigned all = FALCON_ACCESS_LOCAL_WRITE | FALCON_ACCESS_REMOTE_READ |
		       FALCON_ACCESS_REMOTE_WRITE | FALCON_ACCESS_REMOTE_ATOMIC;

	if (!(s->ctx = falcon_open(sock)))
		die(sock);
	/* E2E_ANYMEM: plain process memory, which the daemons reach by copy
	 * (process_vm_readv/writev) instead of mapping a buffer of falcon_alloc_buf */
	if (getenv("E2E_ANYMEM") && (s->buf = aligned_alloc(4096, BUF_BYTES + 65536))) {
		memset(s->buf, 0, BUF_BYTES + 65536);
		s->buf_malloced = 1;
	}
	if (!(s->pd = falcon_alloc_pd(s->ctx)) || !(s->cq = falcon_create_cq(s->ctx, 4096)) ||
	    (!s->buf && !(s->buf = falcon_alloc_buf(s->ctx, BUF_BYTES + 65536))) ||
	    !(s->mr = falcon_reg_mr(s->pd, s->buf, BUF_BYTES, all)) ||
	    !(s->inv_mr = falcon_reg_mr(s->pd, s->buf + BUF_BYTES, 65536,
					all | FALCON_ACCESS_REMOTE_INVALIDATE)))
		die("setting up a side");
}

static uint32_t err_mode = FALCON_ERR_VERBS;
/* attributes of the QPs connected from here on, both sides (< 0: the library's default) */
static int qp_timeout = -1, qp_retry_cnt = -1, qp_rnr_retry = -1, qp_min_rnr_timer = -1;
static int timers_by_modify; /* E2E_QP_MODIFY: timeout / retry_cnt by modify_qp once connected */

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

static struct falcon_qp_init_attr attr_of(struct side *s)
{
	struct falcon_qp_init_attr a = { .size = sizeof(struct falcon_qp_init_attr),
					 .send_cq = s->cq, .recv_cq = s->cq,
					 .max_send_wr = 1024, .max_recv_wr = 1024,
					 .err_mode = err_mode, .srq = s->srq };

	if (qp_rnr_retry >= 0) {
		a.rnr_retry = (uint8_t)qp_rnr_retry;
		a.flags |= FALCON_QP_RNR_RETRY_SET;
	}
	if (qp_min_rnr_timer >= 0)
		a.min_rnr_timer = (uint8_t)qp_min_rnr_timer;
#ifdef FALCON_QP_TIMEOUT_SET
	if (!timers_by_modify && (qp_timeout >= 0 || qp_retry_cnt >= 0)) {
		a.timeout = (uint8_t)(qp_timeout >= 0 ? qp_timeout : 14);
		a.retry_cnt = (uint8_t)(qp_retry_cnt >= 0 ? qp_retry_cnt : 7);
		a.flags |= FALCON_QP_TIMEOUT_SET;
	}
#endif
	return a;
}

static void *acceptor(void *arg)
{
	struct side *b = arg;
	struct falcon_qp_init_attr a = attr_of(b);

	b->qp = falcon_accept(b->l, b->pd, &a, WAIT_MS);
	return NULL;
}

static void connect_pair(struct side *a, struct side *b, const char *cm_b)
{
	struct falcon_qp_init_attr at = attr_of(a);
	pthread_t th;

	if (!(b->l = falcon_listen(b->ctx, (uint16_t)service, 4)))
		die("listen");
	pthread_create(&th, NULL, acceptor, b);
	a->qp = falcon_connect(a->pd, cm_b, (uint16_t)service, &at, connect_ms);
	if (!a->qp)
		die("connect");
	pthread_join(th, NULL);
	if (!b->qp)
		die("accept");
}

/* Wait for n completions on s, checking status and exactly-once per wr_id. */
static void reap(struct side *s, unsigned n, const char *what)
{
	struct falcon_wc wc[64];
	uint64_t t0 = now_ns();

	while (n) {
		int k = falcon_wait_cq(s->cq, n < 64 ? (int)n : 64, wc, WAIT_MS);

		if (k < 0) {
			CHECK(0, "%s: %u completions missing: %s", what, n, falcon_strerror(k));
			return;
		}
		if (k == 0) {
			CHECK(0, "%s: %u completions missing after %d ms", what, n, WAIT_MS);
			return;
		}
		for (int i = 0; i < k; i++) {
			CHECK(wc[i].status == FALCON_WC_SUCCESS, "%s: wr %" PRIu64 " status %s", what,
			      wc[i].wr_id, falcon_wc_status_str(wc[i].status));
			CHECK(wc[i].wr_id < MAX_WR, "%s: unknown wr_id %" PRIu64, what, wc[i].wr_id);
			if (wc[i].wr_id < MAX_WR) {
				CHECK(!s->seen[wc[i].wr_id], "%s: wr %" PRIu64 " completed twice", what,
				      wc[i].wr_id);
				s->seen[wc[i].wr_id]++;
			}
		}
		n -= (unsigned)k;
		if (now_ns() - t0 > (uint64_t)WAIT_MS * 1000000ull * 4)
			break;
	}
}

static void expect_quiet(struct side *s, const char *what)
{
	struct falcon_wc wc;

	CHECK(falcon_wait_cq(s->cq, 1, &wc, 100) == 0, "%s: an extra completion (wr %" PRIu64 ")",
	      what, wc.wr_id);
}

static void post(struct side *s, struct falcon_send_wr *wr)
{
	struct falcon_send_wr *bad;

	if (falcon_post_send(s->qp, wr, &bad))
		die("post_send");
}

static void post_recv(struct side *s, uint64_t id, uint8_t *addr, uint32_t len, uint32_t lkey)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)addr, len, lkey };
	struct falcon_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (falcon_post_recv(s->qp, &wr, &bad))
		die("post_recv");
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = rnd();

		memcpy(p + i, &v, n - i < 8 ? n - i : 8);
	}
}

/* ---- a shared receive queue ---- */

#define SRQ_MSGS 200u
#define SRQ_SLOT 256u

static void srq_test(struct side *a, struct side *b, const char *cm_b)
{
	struct falcon_srq_init_attr sa = { .size = sizeof(sa), .max_wr = 512 };
	struct side a2 = *a, b2 = *b;
	struct falcon_recv_wr rw, *bad;
	struct falcon_sge rs;
	uint32_t got[2] = { 0, 0 }, next_slot = 0;
	struct falcon_wc wc[32];
	uint64_t t0 = now_ns();

	/* the first pair was connected without an SRQ: this test makes its own two */
	if (!(b->srq = falcon_create_srq(b->pd, &sa)))
		die("create_srq");
	b2.srq = b->srq;
	service++;
	connect_pair(&a2, &b2, cm_b);
	struct side a3 = *a, b3 = b2;

	service++;
	connect_pair(&a3, &b3, cm_b);
	/* SRQ rules, as verbs: no receives of the QP's own, busy while a QP uses it */
	rs = (struct falcon_sge){ (uint64_t)(uintptr_t)b->buf, 64, b->mr->lkey };
	rw = (struct falcon_recv_wr){ .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
	CHECK(falcon_post_recv(b2.qp, &rw, &bad) == -EINVAL, "a QP with an SRQ took a receive");
	CHECK(falcon_destroy_srq(b->srq) == -EBUSY, "an SRQ in use was destroyed");
	/* SRQ_MSGS receives, slot i of B's buffer for WR i */
	for (uint32_t i = 0; i < SRQ_MSGS; i++) {
		rs = (struct falcon_sge){ (uint64_t)(uintptr_t)(b->buf + i * SRQ_SLOT), SRQ_SLOT,
					  b->mr->lkey };
		rw = (struct falcon_recv_wr){ .wr_id = i, .sg_list = &rs, .num_sge = 1 };
		if (falcon_post_srq_recv(b->srq, &rw, &bad))
			die("post_srq_recv");
	}
	/* SENDs alternately on both QPs: "qp Q msg N" and a pattern, sizes 1..SRQ_SLOT */
	for (uint32_t i = 0; i < SRQ_MSGS; i++) {
		struct side *from = i & 1 ? &a3 : &a2;
		uint8_t *src = a->buf + i * SRQ_SLOT;
		uint32_t len = 16 + i % (SRQ_SLOT - 16);
		struct falcon_sge ss = { (uint64_t)(uintptr_t)src, len, a->mr->lkey };
		struct falcon_send_wr sw = { .wr_id = i, .sg_list = &ss, .num_sge = 1,
					     .opcode = FALCON_WR_SEND };

		memset(src, (int)(i * 5 + 3), len);
		memcpy(src, &i, sizeof(i));
		memcpy(src + 4, &len, sizeof(len));
		post(from, &sw);
	}
	/* B: every message in an SRQ WR, in posting order of the WRs, from the QP it was
	 * sent on, intact; A: every SEND completed */
	while (got[1] < SRQ_MSGS && now_ns() - t0 < (uint64_t)WAIT_MS * 1000000ull) {
		int k = falcon_wait_cq(b->cq, 32, wc, 200);

		for (int j = 0; j < k; j++) {
			uint32_t idx, len;
			const uint8_t *slot = b->buf + wc[j].wr_id * SRQ_SLOT;

			CHECK(wc[j].status == FALCON_WC_SUCCESS && wc[j].opcode == FALCON_WC_RECV,
			      "srq: completion %s", falcon_wc_status_str(wc[j].status));
			CHECK(wc[j].wr_id == next_slot, "srq: WR %" PRIu64 " before WR %u",
			      wc[j].wr_id, next_slot);
			next_slot++;
			memcpy(&idx, slot, 4);
			memcpy(&len, slot + 4, 4);
			CHECK(idx < SRQ_MSGS && len == wc[j].byte_len && len == 16 + idx % (SRQ_SLOT - 16),
			      "srq: message %u of %u bytes in WR %" PRIu64, idx, wc[j].byte_len,
			      wc[j].wr_id);
			if (idx >= SRQ_MSGS || len > SRQ_SLOT)
				continue;
			CHECK(wc[j].qp_num == (idx & 1 ? b3.qp->qp_num : b2.qp->qp_num),
			      "srq: message %u reported on QP %u", idx, wc[j].qp_num);
			for (uint32_t x = 8; x < len; x++)
				if (slot[x] != (uint8_t)(idx * 5 + 3)) {
					CHECK(0, "srq: message %u corrupt at byte %u", idx, x);
					break;
				}
		}
		got[1] += k > 0 ? (uint32_t)k : 0;
	}
	CHECK(got[1] == SRQ_MSGS, "srq: %u of %u messages arrived", got[1], SRQ_MSGS);
	while (got[0] < SRQ_MSGS && now_ns() - t0 < (uint64_t)WAIT_MS * 1000000ull) {
		int k = falcon_wait_cq(a->cq, 32, wc, 200);

		for (int j = 0; j < k; j++)
			CHECK(wc[j].status == FALCON_WC_SUCCESS, "srq: SEND %" PRIu64 " %s",
			      wc[j].wr_id, falcon_wc_status_str(wc[j].status));
		got[0] += k > 0 ? (uint32_t)k : 0;
	}
	CHECK(got[0] == SRQ_MSGS, "srq: %u of %u SENDs completed", got[0], SRQ_MSGS);
	falcon_destroy_qp(a2.qp);
	falcon_destroy_qp(a3.qp);
	falcon_destroy_qp(b2.qp);
	falcon_destroy_qp(b3.qp);
	CHECK(falcon_destroy_srq(b->srq) == 0, "the SRQ could not be destroyed after its QPs");
	b->srq = NULL;
	falcon_listener_close(b2.l);
	falcon_listener_close(b3.l);
	printf("srq: %u SENDs on 2 QPs into one SRQ, %d failures\n", SRQ_MSGS, failures);
}

/* ---- matrix ---- */

static void matrix(struct side *a, struct side *b)
{
	static const uint32_t sizes[] = { 1, 7, 64, 1000, 4095, 4096, 4097, 16384, 65536,
					  262144, 1048576 };
	unsigned nops = 0;

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		uint32_t len = sizes[si];
		uint8_t *src = a->buf, *dst = b->buf + 2 * 1048576, *back = a->buf + 4 * 1048576;
		struct falcon_sge sge = { (uint64_t)(uintptr_t)src, len, a->mr->lkey };
		struct falcon_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					     .remote_addr = (uint64_t)(uintptr_t)dst,
					     .rkey = b->mr->rkey };

		memset(a->seen, 0, sizeof(a->seen));
		memset(b->seen, 0, sizeof(b->seen));
		/* WRITE */
		fill(src, len);
		wr.wr_id = 1;
		wr.opcode = FALCON_WR_RDMA_WRITE;
		post(a, &wr);
		reap(a, 1, "WRITE");
		CHECK(fnv(dst, len) == fnv(src, len), "WRITE %u B: checksum differs", len);
		/* READ back */
		memset(back, 0, len);
		sge.addr = (uint64_t)(uintptr_t)back;
		wr.wr_id = 2;
		wr.opcode = FALCON_WR_RDMA_READ;
		post(a, &wr);
		reap(a, 1, "READ");
		CHECK(fnv(back, len) == fnv(src, len), "READ %u B: checksum differs", len);
		sge.addr = (uint64_t)(uintptr_t)src;
		/* WRITE with immediate: a receive completes with the immediate */
		fill(src, len);
		post_recv(b, 3, b->buf, 0, b->mr->lkey);
		wr.wr_id = 4;
		wr.opcode = FALCON_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = 0xABC00000u + len;
		post(a, &wr);
		reap(a, 1, "WRITE_IMM");
		{
			struct falcon_wc wc;
			int k = falcon_wait_cq(b->cq, 1, &wc, WAIT_MS);

			CHECK(k == 1 && wc.status == FALCON_WC_SUCCESS &&
			      wc.opcode == FALCON_WC_RECV_RDMA_WITH_IMM && wc.imm_data == wr.imm_data &&
			      wc.byte_len == len, "WRITE_IMM %u B: receive completion wrong", len);
		}
		CHECK(fnv(dst, len) == fnv(src, len), "WRITE_IMM %u B: checksum differs", len);
		/* SEND, SEND with immediate, SEND with invalidate */
		for (int k = 0; k < 3; k++) {
			static const uint32_t op[] = { FALCON_WR_SEND, FALCON_WR_SEND_WITH_IMM,
						       FALCON_WR_SEND_WITH_INV };
			struct falcon_wc wc;
			int got;

			if (k == 2 && len > 65536)
				continue;
			fill(src, len);
			memset(dst, 0, len);
			post_recv(b, 10 + (uint64_t)k, dst, len, b->mr->lkey);
			wr.wr_id = 20 + (uint64_t)k;
			wr.opcode = op[k];
			wr.imm_data = 0x5E0D0000u + (uint32_t)k;
			wr.invalidate_rkey = b->inv_mr->rkey;
			post(a, &wr);
			reap(a, 1, "SEND");
			got = falcon_wait_cq(b->cq, 1, &wc, WAIT_MS);
			CHECK(got == 1 && wc.status == FALCON_WC_SUCCESS && wc.opcode == FALCON_WC_RECV &&
			      wc.byte_len == len && wc.wr_id == 10 + (uint64_t)k,
			      "SEND(%d) %u B: receive completion wrong (%s, len %u)", k, len,
			      got == 1 ? falcon_wc_status_str(wc.status) : "none", wc.byte_len);
			CHECK(k != 1 || ((wc.wc_flags & FALCON_WC_WITH_IMM) && wc.imm_data == wr.imm_data),
			      "SEND_IMM: immediate lost");
			CHECK(k != 2 || ((wc.wc_flags & FALCON_WC_WITH_INV) &&
					 wc.invalidated_rkey == b->inv_mr->rkey),
			      "SEND_INV: invalidated rkey not reported");
			CHECK(fnv(dst, len) == fnv(src, len), "SEND(%d) %u B: checksum differs", k, len);
			if (k == 2) { /* the invalidated region: register it again */
				falcon_dereg_mr(b->inv_mr);
				b->inv_mr = falcon_reg_mr(b->pd, b->buf + BUF_BYTES, 65536,
							  0x1F);
				if (!b->inv_mr)
					die("re-register");
			}
		}
		nops += 7;
		expect_quiet(a, "matrix (A)");
		expect_quiet(b, "matrix (B)");
		printf("  %7u B: WRITE READ WRITE_IMM SEND SEND_IMM%s ok\n", len,
		       len <= 65536 ? " SEND_INV" : "");
	}
	/* atomics, each result checked against the arithmetic */
	{
		uint64_t *word = (uint64_t *)(void *)(b->buf + 8192), got;
		struct falcon_sge sge = { (uint64_t)(uintptr_t)(a->buf + 64), 8, a->mr->lkey };
		struct falcon_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					     .remote_addr = (uint64_t)(uintptr_t)word,
					     .rkey = b->mr->rkey };

		memset(a->seen, 0, sizeof(a->seen));
		for (int i = 0; i < 200; i++) {
			uint64_t before = rnd(), x = rnd(), y = rnd(), m1 = rnd(), m2 = rnd(), after;
			uint32_t op = FALCON_WR_ATOMIC_CMP_AND_SWP + (uint32_t)(i % 4);

			if (i % 8 == 0)
				x = before; /* make CmpSwap hit sometimes */
			*word = before;
			wr.wr_id = 100 + (uint64_t)i;
			wr.opcode = op;
			wr.compare_add = x;
			wr.swap = y;
			wr.compare_add_mask = m1;
			wr.swap_mask = m2;
			if (op == FALCON_WR_MASKED_ATOMIC_CMP_AND_SWP && i % 8 == 2)
				wr.compare_add = (before & m1) | (x & ~m1); /* a masked hit */
			post(a, &wr);
			reap(a, 1, "atomic");
			memcpy(&got, a->buf + 64, 8);
			CHECK(got == before, "atomic %u: returned %#" PRIx64 ", memory held %#" PRIx64,
			      op, got, before);
			switch (op) {
			case FALCON_WR_ATOMIC_CMP_AND_SWP:
				after = before == wr.compare_add ? y : before;
				break;
			case FALCON_WR_ATOMIC_FETCH_AND_ADD:
				after = before + x;
				break;
			case FALCON_WR_MASKED_ATOMIC_CMP_AND_SWP:
				after = ((before ^ wr.compare_add) & m1) ? before :
					(before & ~m2) | (y & m2);
				break;
			default:
				after = ((before & ~m1) + (x & ~m1)) ^ ((before ^ x) & m1);
			}
			CHECK(*word == after, "atomic %u: memory %#" PRIx64 ", expected %#" PRIx64, op,
			      *word, after);
			nops++;
		}
		printf("  atomics: 200 CmpSwap / FetchAdd / masked, each checked ok\n");
	}
	printf("matrix: %u operations, %d failures\n", nops, failures);
}

/* ---- chaos / steady: WRITE then READ back, random sizes and offsets ---- */

static void transfer(struct side *a, struct side *b, uint64_t bytes_goal, double seconds)
{
	uint64_t t0 = now_ns(), moved = 0, ops = 0;
	unsigned depth = 8;

	while ((bytes_goal && moved < bytes_goal) ||
	       (seconds > 0 && (double)(now_ns() - t0) / 1e9 < seconds)) {
		uint32_t len[8], off[8];

		memset(a->seen, 0, sizeof(a->seen));
		for (unsigned i = 0; i < depth; i++) {
			len[i] = 1 + (uint32_t)(rnd() % 1048576);
			off[i] = i * 1048576;
			fill(a->buf + off[i], len[i]);
			struct falcon_sge sge = { (uint64_t)(uintptr_t)(a->buf + off[i]), len[i],
						  a->mr->lkey };
			struct falcon_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
						     .opcode = FALCON_WR_RDMA_WRITE,
						     .remote_addr = (uint64_t)(uintptr_t)(b->buf + off[i]),
						     .rkey = b->mr->rkey };

			post(a, &wr);
		}
		reap(a, depth, "chaos WRITE");
		for (unsigned i = 0; i < depth; i++) {
			CHECK(fnv(b->buf + off[i], len[i]) == fnv(a->buf + off[i], len[i]),
			      "chaos WRITE %u B at %u: checksum differs", len[i], off[i]);
			/* READ it back over the source, which was zeroed */
			uint64_t want = fnv(a->buf + off[i], len[i]);

			memset(a->buf + off[i], 0, len[i]);
			struct falcon_sge sge = { (uint64_t)(uintptr_t)(a->buf + off[i]), len[i],
						  a->mr->lkey };
			struct falcon_send_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1,
						     .opcode = FALCON_WR_RDMA_READ,
						     .remote_addr = (uint64_t)(uintptr_t)(b->buf + off[i]),
						     .rkey = b->mr->rkey };

			post(a, &wr);
			reap(a, 1, "chaos READ");
			CHECK(fnv(a->buf + off[i], len[i]) == want, "chaos READ %u B: checksum differs",
			      len[i]);
			moved += 2ull * len[i];
			ops += 2;
		}
		if (failures || (stop_file && access(stop_file, F_OK) == 0))
			break;
	}
	double s = (double)(now_ns() - t0) / 1e9;

	expect_quiet(a, "chaos");
	printf("transfer: %.1f MiB moved (WRITE + READ back, verified) in %.2f s = %.1f MiB/s, "
	       "%" PRIu64 " ops, %d failures\n", (double)moved / 1048576, s,
	       (double)moved / 1048576 / s, ops, failures);
}

/* ---- the spec's flows (RDMA over Falcon 6.6.1-6.6.5) ---- */

static int wait_one(struct side *s, struct falcon_wc *wc, int ms)
{
	return falcon_wait_cq(s->cq, 1, wc, ms);
}

static void flows(struct side *a, struct side *b, const char *cm_b)
{
	struct falcon_wc wc;
	uint8_t *src = a->buf, *dst = b->buf + 1048576;

	/* 6.6.1 / 6.6.2: READ and WRITE of many MTUs; with the daemons' reorder knob the
	 * packets arrive out of order and are placed by RSN */
	for (int i = 0; i < 64; i++) {
		uint32_t len = 4096 * (2 + (uint32_t)(rnd() % 30)) + (uint32_t)(rnd() % 4096);
		struct falcon_sge sge = { (uint64_t)(uintptr_t)src, len, a->mr->lkey };
		struct falcon_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
					     .opcode = FALCON_WR_RDMA_WRITE,
					     .remote_addr = (uint64_t)(uintptr_t)dst,
					     .rkey = b->mr->rkey };
		uint64_t want;

		memset(a->seen, 0, sizeof(a->seen));
		fill(src, len);
		want = fnv(src, len);
		post(a, &wr);
		reap(a, 1, "6.6.2 WRITE");
		CHECK(fnv(dst, len) == want, "6.6.2: WRITE of %u B placed wrongly", len);
		memset(src, 0, len);
		wr.wr_id = 2;
		wr.opcode = FALCON_WR_RDMA_READ;
		post(a, &wr);
		reap(a, 1, "6.6.1 READ");
		CHECK(fnv(src, len) == want, "6.6.1: READ of %u B placed wrongly", len);
	}
	printf("flow 6.6.1/6.6.2: 64 multi-MTU WRITEs and READs placed in RSN order\n");

	/* 6.6.3: a SEND finds no receive: RNR, Falcon retries until the receive is posted */
	{
		struct falcon_sge sge = { (uint64_t)(uintptr_t)src, 3000, a->mr->lkey };
		struct falcon_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
					     .opcode = FALCON_WR_SEND };
		uint64_t want;

		fill(src, 3000);
		want = fnv(src, 3000);
		post(a, &wr);
		CHECK(wait_one(a, &wc, 300) == 0, "6.6.3: the SEND completed with no receive posted "
		      "(wr %" PRIu64 ", %s)", wc.wr_id, falcon_wc_status_str(wc.status));
		post_recv(b, 8, dst, 4096, b->mr->lkey);
		CHECK(wait_one(a, &wc, WAIT_MS) == 1 && wc.status == FALCON_WC_SUCCESS &&
		      wc.wr_id == 7, "6.6.3: the SEND did not complete after the receive was posted");
		CHECK(wait_one(b, &wc, WAIT_MS) == 1 && wc.status == FALCON_WC_SUCCESS &&
		      wc.byte_len == 3000 && fnv(dst, 3000) == want, "6.6.3: receive wrong");
		printf("flow 6.6.3: SEND retried past RNR until the receive was posted\n");
	}

	/* 6.6.5: complete in error: a QP pair in CIE mode; a WRITE to a bad R_Key completes
	 * REM_ACCESS_ERR and the QP goes on */
	{
		struct side a2 = *a, b2 = *b;
		struct falcon_sge sge = { (uint64_t)(uintptr_t)src, 8192, a->mr->lkey };
		struct falcon_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
					     .opcode = FALCON_WR_RDMA_WRITE,
					     .remote_addr = (uint64_t)(uintptr_t)dst,
					     .rkey = b->mr->rkey ^ 0x5A5A0000u };

		err_mode = FALCON_ERR_CIE;
		service++;
		a2.qp = b2.qp = NULL;
		connect_pair(&a2, &b2, cm_b);
		post(&a2, &wr);
		CHECK(wait_one(&a2, &wc, WAIT_MS) == 1 && wc.status == FALCON_WC_REM_ACCESS_ERR,
		      "6.6.5: a bad R_Key did not complete REM_ACCESS_ERR (%s)",
		      falcon_wc_status_str(wc.status));
		fill(src, 8192);
		wr.rkey = b->mr->rkey;
		wr.wr_id = 10;
		post(&a2, &wr);
		CHECK(wait_one(&a2, &wc, WAIT_MS) == 1 && wc.status == FALCON_WC_SUCCESS &&
		      fnv(dst, 8192) == fnv(src, 8192), "6.6.5: the QP did not go on after CIE");
		falcon_destroy_qp(a2.qp);
		falcon_destroy_qp(b2.qp);
		falcon_listener_close(b2.l);
		printf("flow 6.6.5: CIE completed the bad WRITE in error, the QP went on\n");
	}
}

/* 6.6.4: many READs at once; B's daemon (started with --pending-resp 1 --pull-defer 0
 * --conn-data-credits 1) cannot hold their answers and refuses some with pull RNR, which
 * Falcon retries at B. The test script reads B's counters; here: every READ completes
 * once, successfully, in posting order, with B's bytes. */
static void pull_rnr(struct side *a, struct side *b, unsigned n)
{
	struct falcon_wc wc[64];
	unsigned got = 0;

	if (n > 512)
		n = 512;
	fill(b->buf, (size_t)n * 4096);
	memset(a->buf, 0, (size_t)n * 4096);
	for (unsigned i = 0; i < n; i++) {
		struct falcon_sge sge = { (uint64_t)(uintptr_t)(a->buf + 4096ull * i), 4096,
					  a->mr->lkey };
		struct falcon_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					     .opcode = FALCON_WR_RDMA_READ,
					     .remote_addr = (uint64_t)(uintptr_t)(b->buf + 4096ull * i),
					     .rkey = b->mr->rkey };

		post(a, &wr);
	}
	while (got < n) {
		int k = falcon_wait_cq(a->cq, 64, wc, WAIT_MS);

		if (k <= 0) {
			CHECK(0, "6.6.4: %u of %u READs never completed", n - got, n);
			break;
		}
		for (int i = 0; i < k; i++, got++)
			CHECK(wc[i].status == FALCON_WC_SUCCESS && wc[i].wr_id == got,
			      "6.6.4: completion %u is wr %" PRIu64 " with %s", got, wc[i].wr_id,
			      falcon_wc_status_str(wc[i].status));
	}
	expect_quiet(a, "6.6.4");
	CHECK(!memcmp(a->buf, b->buf, (size_t)n * 4096), "6.6.4: READ data differ");
	printf("flow 6.6.4: %u READs completed once each, in order, data checked\n", got);
}

/* ---- canary: a known plaintext on the wire, and a guard no replay may touch ---- */

#define CANARY_TEXT "FALCON-CANARY:plaintext-pattern/" /* 32 bytes */
#define CANARY_WRITES 100u
#define CANARY_SLOT 4096u
#define CANARY_PACE_US 2000

static void canary(struct side *a, struct side *b, const char *stop, double max_s)
{
	size_t guard_len = (size_t)CANARY_WRITES * CANARY_SLOT;
	uint8_t *guard = falcon_alloc_buf(b->ctx, guard_len), *zero = calloc(1, CANARY_SLOT);
	struct falcon_mr *gmr;
	unsigned ok = 0;

	if (!guard || !zero ||
	    !(gmr = falcon_reg_mr(b->pd, guard, guard_len, FALCON_ACCESS_LOCAL_WRITE |
							      FALCON_ACCESS_REMOTE_WRITE)))
		die("canary guard buffer");
	memset(guard, 0, guard_len);
	for (size_t i = 0; i < CANARY_SLOT; i += sizeof(CANARY_TEXT) - 1)
		memcpy(a->buf + i, CANARY_TEXT, sizeof(CANARY_TEXT) - 1);
	for (unsigned i = 0; i < CANARY_WRITES && !failures; i++) {
		uint8_t *slot = guard + (size_t)i * CANARY_SLOT;
		struct falcon_sge sge = { (uint64_t)(uintptr_t)a->buf, CANARY_SLOT, a->mr->lkey };
		struct falcon_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
					     .opcode = FALCON_WR_RDMA_WRITE,
					     .remote_addr = (uint64_t)(uintptr_t)slot,
					     .rkey = gmr->rkey };

		memset(a->seen, 0, sizeof(a->seen));
		post(a, &wr);
		reap(a, 1, "canary WRITE");
		CHECK(!memcmp(slot, a->buf, CANARY_SLOT), "canary WRITE %u did not land", i);
		ok += !memcmp(slot, a->buf, CANARY_SLOT);
		memset(slot, 0, CANARY_SLOT); /* each slot is written once: wiped, it stays 0 */
		usleep(CANARY_PACE_US);
	}
	printf("canary: %u WRITEs of %u B of \"%s\" landed, each checked and wiped\n", ok,
	       CANARY_SLOT, CANARY_TEXT);
	fflush(stdout);
	stop_file = stop;
	transfer(a, b, 0, max_s);
	/* a replayed canary WRITE that had been taken would have written its slot again */
	unsigned dirty = 0;

	for (unsigned i = 0; i < CANARY_WRITES; i++)
		dirty += !!memcmp(guard + (size_t)i * CANARY_SLOT, zero, CANARY_SLOT);
	CHECK(!dirty, "guard: %u slots written again after they were wiped", dirty);
	printf("guard: %u of %u slots still zero (fnv %016" PRIx64 "), %d failures\n",
	       CANARY_WRITES - dirty, CANARY_WRITES, fnv(guard, guard_len), failures);
	falcon_dereg_mr(gmr);
	falcon_free_buf(b->ctx, guard);
	free(zero);
}

/* ---- overload, stall: every operation checked; errors counted and reported, not fatal ---- */

#define OV_SLOTS 4u
#define OV_SLOT_BYTES (64u << 10)
#define OV_WORD_OFF (OV_SLOTS * OV_SLOT_BYTES) /* B's atomic word; A's results there too */
#define OV_RECV_OFF (2u << 20)                 /* B's receive buffers (stall) */
#define OV_FLUSH_MS 15000                      /* bound on B's flush after A's error */

struct ov {
	uint64_t writes, reads, fadd, cswap, bytes, run_ns;
	unsigned verify_fail;
	int err;                /* 1: a completion in error, 2: none within WAIT_MS, 3: post */
	uint32_t err_status, vendor_err;   /* of the first completion in error */
	uint64_t err_ns, err_gap_ns;       /* when, and how long after the one before */
	uint64_t last_ns, max_gap_ns;      /* the longest time without a completion */
	uint64_t word;                     /* what B's atomic word must hold */
};

#define OV_CHECK(o, cond, ...) do { \
	if (!(cond)) { \
		(o)->verify_fail++; \
		CHECK(0, __VA_ARGS__); \
	} \
} while (0)

static const char *ov_status(const struct ov *o)
{
	static const char *what[] = { "SUCCESS", NULL, "NO_COMPLETION", "POST_FAILED" };

	return o->err == 1 ? falcon_wc_status_str(o->err_status) : what[o->err];
}

static void ov_error(struct ov *o, int err, uint64_t t)
{
	if (o->err)
		return;
	o->err = err;
	o->err_ns = t;
	o->err_gap_ns = t - o->last_ns;
}

/* Wait for n completions on s, each wait bounded by WAIT_MS: 0 when all were SUCCESS and
 * each wr_id came once, else -1 with the first error kept in o. */
static int ov_reap(struct side *s, unsigned n, struct ov *o)
{
	struct falcon_wc wc[16];

	while (n) {
		int k = falcon_wait_cq(s->cq, n < 16 ? (int)n : 16, wc, WAIT_MS);
		uint64_t t = now_ns();

		if (k <= 0) {
			ov_error(o, 2, t);
			fprintf(stderr, "e2e: %u completions missing after %d ms: %s\n", n, WAIT_MS,
				k < 0 ? falcon_strerror(k) : "nothing completed");
			return -1;
		}
		for (int i = 0; i < k; i++) {
			if (wc[i].status != FALCON_WC_SUCCESS && !o->err) {
				ov_error(o, 1, t);
				o->err_status = wc[i].status;
				o->vendor_err = wc[i].vendor_err;
			}
			OV_CHECK(o, wc[i].wr_id < MAX_WR && !s->seen[wc[i].wr_id]++,
				 "wr %" PRIu64 " completed twice or unknown", wc[i].wr_id);
		}
		if (t - o->last_ns > o->max_gap_ns)
			o->max_gap_ns = t - o->last_ns;
		o->last_ns = t;
		n -= (unsigned)k;
	}
	return o->err ? -1 : 0;
}

static int ov_post(struct side *a, struct falcon_send_wr *wr, struct ov *o)
{
	struct falcon_send_wr *bad;
	int rc = falcon_post_send(a->qp, wr, &bad);

	if (rc) {
		ov_error(o, 3, now_ns());
		fprintf(stderr, "e2e: post_send: %s\n", falcon_strerror(rc));
	}
	return rc;
}

/* WRITE or READ of len bytes between A's and B's buffers at off. */
static int ov_rdma(struct side *a, struct side *b, uint32_t op, uint32_t off, uint32_t len,
		   uint64_t wr_id, struct ov *o)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)(a->buf + off), len, a->mr->lkey };
	struct falcon_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				     .remote_addr = (uint64_t)(uintptr_t)(b->buf + off),
				     .rkey = b->mr->rkey };

	return ov_post(a, &wr, o);
}

/* One atomic on B's word, completed: 0 and what it returned in *old, or -1. */
static int ov_atomic(struct side *a, struct side *b, uint32_t op, uint64_t x, uint64_t y,
		     uint64_t *old, struct ov *o)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)(a->buf + OV_WORD_OFF), 8, a->mr->lkey };
	struct falcon_send_wr wr = { .wr_id = 20, .sg_list = &sge, .num_sge = 1, .opcode = op,
				     .remote_addr = (uint64_t)(uintptr_t)(b->buf + OV_WORD_OFF),
				     .rkey = b->mr->rkey, .compare_add = x, .swap = y };

	memset(a->seen, 0, sizeof(a->seen));
	if (ov_post(a, &wr, o) || ov_reap(a, 1, o))
		return -1;
	memcpy(old, a->buf + OV_WORD_OFF, 8);
	return 0;
}

static uint64_t b_word(const struct side *b)
{
	return *(const volatile uint64_t *)(const void *)(b->buf + OV_WORD_OFF);
}

/* FetchAdd, CmpSwap that hits, CmpSwap that misses: each result and B's word checked. */
static int ov_atomics(struct side *a, struct side *b, struct ov *o)
{
	uint64_t x = rnd(), y = rnd(), got;

	if (ov_atomic(a, b, FALCON_WR_ATOMIC_FETCH_AND_ADD, x, 0, &got, o))
		return -1;
	OV_CHECK(o, got == o->word && b_word(b) == o->word + x,
		 "FetchAdd returned %#" PRIx64 " (held %#" PRIx64 "), now %#" PRIx64, got, o->word,
		 b_word(b));
	o->word = b_word(b);
	o->fadd++;
	if (ov_atomic(a, b, FALCON_WR_ATOMIC_CMP_AND_SWP, o->word, y, &got, o))
		return -1;
	OV_CHECK(o, got == o->word && b_word(b) == y, "CmpSwap (hit) returned %#" PRIx64
		 " (held %#" PRIx64 "), now %#" PRIx64, got, o->word, b_word(b));
	o->word = b_word(b);
	if (ov_atomic(a, b, FALCON_WR_ATOMIC_CMP_AND_SWP, o->word ^ 1, x, &got, o))
		return -1;
	OV_CHECK(o, got == o->word && b_word(b) == o->word, "CmpSwap (miss) returned %#" PRIx64
		 " (held %#" PRIx64 "), now %#" PRIx64, got, o->word, b_word(b));
	o->word = b_word(b);
	o->cswap += 2;
	return 0;
}

/* OV_SLOTS WRITEs of random sizes checked in B's memory, READs back over the zeroed
 * source checked, then the atomics. 0, or -1 when a WR failed. */
static int ov_round(struct side *a, struct side *b, struct ov *o)
{
	uint32_t len[OV_SLOTS];
	uint64_t want[OV_SLOTS];

	memset(a->seen, 0, sizeof(a->seen));
	for (unsigned i = 0; i < OV_SLOTS; i++) {
		len[i] = 1 + (uint32_t)(rnd() % OV_SLOT_BYTES);
		fill(a->buf + i * OV_SLOT_BYTES, len[i]);
		want[i] = fnv(a->buf + i * OV_SLOT_BYTES, len[i]);
		if (ov_rdma(a, b, FALCON_WR_RDMA_WRITE, i * OV_SLOT_BYTES, len[i], i, o))
			return -1;
	}
	if (ov_reap(a, OV_SLOTS, o))
		return -1;
	for (unsigned i = 0; i < OV_SLOTS; i++) {
		OV_CHECK(o, fnv(b->buf + i * OV_SLOT_BYTES, len[i]) == want[i],
			 "WRITE of %u B: B's memory differs", len[i]);
		memset(a->buf + i * OV_SLOT_BYTES, 0, len[i]);
		if (ov_rdma(a, b, FALCON_WR_RDMA_READ, i * OV_SLOT_BYTES, len[i], 10 + i, o))
			return -1;
	}
	if (ov_reap(a, OV_SLOTS, o))
		return -1;
	for (unsigned i = 0; i < OV_SLOTS; i++) {
		OV_CHECK(o, fnv(a->buf + i * OV_SLOT_BYTES, len[i]) == want[i],
			 "READ of %u B: data differ", len[i]);
		o->bytes += 2ull * len[i];
	}
	o->writes += OV_SLOTS;
	o->reads += OV_SLOTS;
	return ov_atomics(a, b, o);
}

static void ov_run(struct side *a, struct side *b, double seconds, struct ov *o)
{
	uint64_t t0 = now_ns();

	o->last_ns = t0;
	o->word = b_word(b);
	while ((double)(now_ns() - t0) / 1e9 < seconds && !o->err && !o->verify_fail)
		if (ov_round(a, b, o))
			break;
	o->run_ns = now_ns() - t0;
}

static void ov_print(const char *mode, const struct falcon_qp *qp, const struct ov *o)
{
	printf("%s: pid=%d qp=%u s=%.1f writes=%" PRIu64 " reads=%" PRIu64 " fadd=%" PRIu64
	       " cswap=%" PRIu64 " ops=%" PRIu64 " mib=%.1f verify_fail=%u qp_err=%d status=%s"
	       " vendor_err=%#x max_gap_ms=%" PRIu64 "\n", mode, (int)getpid(), qp->qp_num,
	       (double)o->run_ns / 1e9, o->writes, o->reads, o->fadd, o->cswap,
	       o->writes + o->reads + o->fadd + o->cswap, (double)o->bytes / 1048576,
	       o->verify_fail, !!o->err, ov_status(o), o->vendor_err, o->max_gap_ns / 1000000);
	fflush(stdout);
}

static void overload(struct side *a, struct side *b, double seconds)
{
	struct ov o = { 0 };

	ov_run(a, b, seconds, &o);
	if (o.err)
		failures++;
	ov_print("overload", a->qp, &o);
}

/* E2E_QP_MODIFY: the timers set on the live QP (its current state, attr_mask), which
 * must apply to its connection at once. */
static void modify_timers(struct side *s, const char *who)
{
#ifdef FALCON_QP_TIMEOUT_SET
	struct falcon_qp_attr at = { .size = sizeof(at) };
	int st = falcon_query_qp(s->qp, NULL), rc;

	at.qp_state = st < 0 ? FALCON_QPS_RTS : (uint32_t)st;
	if (qp_timeout >= 0) {
		at.attr_mask |= FALCON_QP_ATTR_TIMEOUT;
		at.timeout = (uint8_t)qp_timeout;
	}
	if (qp_retry_cnt >= 0) {
		at.attr_mask |= FALCON_QP_ATTR_RETRY_CNT;
		at.retry_cnt = (uint8_t)qp_retry_cnt;
	}
	rc = falcon_modify_qp(s->qp, &at);
	CHECK(rc == 0, "%s: modify_qp of the timers: %s", who, falcon_strerror(rc));
	printf("%s QP %u: timers set by modify_qp (attr_mask %#x)\n", who, s->qp->qp_num,
	       at.attr_mask);
#else
	(void)s;
	(void)who;
#endif
}

/* The QP's timeout attributes as the daemon holds them: what this program set. */
static void check_attrs(struct side *s, const char *who)
{
#ifdef FALCON_QP_TIMEOUT_SET
	struct falcon_qp_attr at = { .size = sizeof(at) };
	int rc = falcon_query_qp_attr(s->qp, &at);

	CHECK(rc == 0, "%s: query_qp_attr: %s", who, falcon_strerror(rc));
	CHECK(qp_timeout < 0 || at.timeout == qp_timeout, "%s: timeout %u, set %d", who,
	      at.timeout, qp_timeout);
	CHECK(qp_retry_cnt < 0 || at.retry_cnt == qp_retry_cnt, "%s: retry_cnt %u, set %d", who,
	      at.retry_cnt, qp_retry_cnt);
	printf("%s QP %u: timeout %u retry_cnt %u rnr_retry %u min_rnr_timer %u\n", who,
	       s->qp->qp_num, at.timeout, at.retry_cnt, at.rnr_retry, at.min_rnr_timer);
#else
	printf("%s QP %u: this libfalcon-client has no QP timeout attributes "
	       "(FALCON_QP_TIMEOUT_SET): its defaults\n", who, s->qp->qp_num);
#endif
}

#define STALL_RECVS 16u

/* retry: B's receives complete WR_FLUSH_ERR and B's QP is in ERR, within OV_FLUSH_MS */
static void stall_flushed(struct side *b)
{
	struct falcon_wc wc[STALL_RECVS];
	unsigned flushed = 0, other = 0;
	uint64_t t0 = now_ns();
	int st;

	while (flushed + other < STALL_RECVS && now_ns() - t0 < OV_FLUSH_MS * 1000000ull) {
		int k = falcon_wait_cq(b->cq, STALL_RECVS, wc, 200);

		for (int i = 0; i < k; i++) {
			flushed += wc[i].status == FALCON_WC_WR_FLUSH_ERR;
			other += wc[i].status != FALCON_WC_WR_FLUSH_ERR;
		}
	}
	/* the state once at least, then every 50 ms until ERR or the bound */
	while ((st = falcon_query_qp(b->qp, NULL)) != FALCON_QPS_ERR &&
	       now_ns() - t0 < OV_FLUSH_MS * 1000000ull)
		usleep(50000);
	CHECK(flushed == STALL_RECVS && !other, "B: %u of %u receives completed WR_FLUSH_ERR, "
	      "%u otherwise", flushed, STALL_RECVS, other);
	CHECK(st == FALCON_QPS_ERR, "B's QP in state %d (%s), not ERR (%d)", st,
	      st < 0 ? falcon_strerror(st) : "enum falcon_qp_state", FALCON_QPS_ERR);
	printf("stall: B flushed %u/%u receives (%u otherwise), B's QP state %d, %.1f s after "
	       "A's error\n", flushed, STALL_RECVS, other, st, (double)(now_ns() - t0) / 1e9);
}

/* The test stops B's falcond meanwhile; expect_retry: A's QP must fail RETRY_EXC_ERR and
 * B's side be flushed; else nothing may fail and both QPs stay in RTS. */
static void stall(struct side *a, struct side *b, double seconds, int expect_retry)
{
	struct ov o = { 0 };
	struct falcon_wc wc = { 0 };

	if (timers_by_modify) {
		modify_timers(a, "A");
		modify_timers(b, "B");
	}
	check_attrs(a, "A");
	check_attrs(b, "B");
	for (unsigned i = 0; i < STALL_RECVS; i++)
		post_recv(b, 200 + i, b->buf + OV_RECV_OFF + i * 4096, 4096, b->mr->lkey);
	printf("running: %u receives posted at B\n", STALL_RECVS);
	fflush(stdout);
	ov_run(a, b, seconds, &o);
	if (o.err) {
		printf("stall: A's QP failed: %s (vendor_err %#x), %.2f s after the completion "
		       "before\n", ov_status(&o), o.vendor_err, (double)o.err_gap_ns / 1e9);
		fflush(stdout);
	}
	if (expect_retry) {
		CHECK(o.err == 1 && o.err_status == FALCON_WC_RETRY_EXC_ERR,
		      "A: expected RETRY_EXC_ERR, got %s", ov_status(&o));
		CHECK(falcon_query_qp(a->qp, NULL) == FALCON_QPS_ERR, "A's QP is not in ERR");
		stall_flushed(b);
	} else {
		CHECK(!o.err, "A: %s (vendor_err %#x)", ov_status(&o), o.vendor_err);
		CHECK(falcon_wait_cq(b->cq, 1, &wc, 100) == 0, "B: a receive completed (%s)",
		      falcon_wc_status_str(wc.status));
		CHECK(falcon_query_qp(a->qp, NULL) == FALCON_QPS_RTS &&
		      falcon_query_qp(b->qp, NULL) == FALCON_QPS_RTS, "a QP left RTS");
	}
	ov_print("stall", a->qp, &o);
}

/* ---- RNR: a receive posted late, and an RNR retry count that runs out ---- */

#define RNR_EXC_MS 10000 /* bound on RNR_RETRY_EXC_ERR with rnr_retry 1 and 10 us waits */

static size_t first_diff(const uint8_t *x, const uint8_t *y, size_t n)
{
	size_t i = 0;

	while (i < n && x[i] == y[i])
		i++;
	return i;
}

static void rnr_late_recv(struct side *a, struct side *b, double delay_s)
{
	uint8_t *src = a->buf, *dst = b->buf + OV_RECV_OFF;
	struct falcon_sge sge = { (uint64_t)(uintptr_t)src, 3000, a->mr->lkey };
	struct falcon_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				     .opcode = FALCON_WR_SEND };
	struct falcon_wc wc = { 0 };
	uint64_t want, t0 = now_ns();
	int k;

	fill(src, 3000);
	want = fnv(src, 3000);
	post(a, &wr);
	k = wait_one(a, &wc, (int)(delay_s * 1000));
	CHECK(k == 0, "rnr late receive: the SEND completed %s after %.2f s, before its "
	      "receive was posted", falcon_wc_status_str(wc.status), (double)(now_ns() - t0) / 1e9);
	post_recv(b, 2, dst, 4096, b->mr->lkey);
	k = wait_one(a, &wc, WAIT_MS);
	CHECK(k == 1 && wc.status == FALCON_WC_SUCCESS && wc.wr_id == 1,
	      "rnr late receive: the SEND completed %s, not SUCCESS",
	      k == 1 ? falcon_wc_status_str(wc.status) : "not (or earlier)");
	printf("rnr late receive: a SEND completed %s %.2f s after it was posted (receive posted "
	       "after %.1f s)\n", k == 1 ? falcon_wc_status_str(wc.status) : "not",
	       (double)(now_ns() - t0) / 1e9, delay_s);
	k = wait_one(b, &wc, WAIT_MS);
	CHECK(k == 1 && wc.status == FALCON_WC_SUCCESS && wc.opcode == FALCON_WC_RECV &&
	      wc.byte_len == 3000 && fnv(dst, 3000) == want,
	      "rnr late receive: the receive completed %s, %u B, data %s (first difference at "
	      "byte %zu)",
	      k == 1 ? falcon_wc_status_str(wc.status) : "not", wc.byte_len,
	      fnv(dst, 3000) == want ? "intact" : "differ", first_diff(dst, src, 3000));
}

static void rnr_exceeded(struct side *a, struct side *b, const char *cm_b)
{
	struct side a2 = *a, b2 = *b;
	struct falcon_sge sge = { (uint64_t)(uintptr_t)a->buf, 100, a->mr->lkey };
	struct falcon_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				     .opcode = FALCON_WR_SEND };
	struct falcon_wc wc = { 0 };
	uint64_t t0;
	int k;

	qp_rnr_retry = 1;
	qp_min_rnr_timer = 1; /* 0.01 ms */
	service++;
	a2.qp = b2.qp = NULL;
	connect_pair(&a2, &b2, cm_b);
	t0 = now_ns();
	post(&a2, &wr);
	k = wait_one(&a2, &wc, RNR_EXC_MS);
	CHECK(k == 1 && wc.status == FALCON_WC_RNR_RETRY_EXC_ERR && wc.wr_id == 5,
	      "rnr retry exceeded: rnr_retry 1, no receive: the SEND completed %s, not "
	      "RNR_RETRY_EXC_ERR",
	      k == 1 ? falcon_wc_status_str(wc.status) : "not at all");
	printf("rnr retry exceeded: with rnr_retry 1 a SEND without a receive completed %s "
	       "after %.3f s\n",
	       k == 1 ? falcon_wc_status_str(wc.status) : "not", (double)(now_ns() - t0) / 1e9);
	falcon_destroy_qp(a2.qp);
	falcon_destroy_qp(b2.qp);
	falcon_listener_close(b2.l);
}

int main(int argc, char **argv)
{
	struct side a = { 0 }, b = { 0 };
	const char *mode;

	if (argc < 5) {
		fprintf(stderr, "usage: e2e_client MODE SOCK_A SOCK_B CM_B [ARGS] (the modes: the "
			"comment at the top of tests/e2e/e2e_client.c)\n");
		return 2;
	}
	mode = argv[1];
	rng ^= (uint64_t)getpid() << 20;
	if (getenv("E2E_SERVICE"))
		service = (unsigned)atoi(getenv("E2E_SERVICE"));
	if (getenv("E2E_CONNECT_MS"))
		connect_ms = atoi(getenv("E2E_CONNECT_MS"));
	qp_timeout = env_int("E2E_QP_TIMEOUT", -1);
	qp_retry_cnt = env_int("E2E_QP_RETRY_CNT", -1);
	qp_rnr_retry = env_int("E2E_RNR_RETRY", strcmp(mode, "rnr") ? -1 : 7);
	qp_min_rnr_timer = env_int("E2E_MIN_RNR_TIMER", -1);
	timers_by_modify = env_int("E2E_QP_MODIFY", 0);
	side_open(&a, argv[2]);
	side_open(&b, argv[3]);
	connect_pair(&a, &b, argv[4]);
	printf("connected QP %u <-> %u\n", a.qp->qp_num, b.qp->qp_num);
	fflush(stdout);
	if (!strcmp(mode, "matrix")) {
		matrix(&a, &b);
	} else if (!strcmp(mode, "chaos")) {
		transfer(&a, &b, (uint64_t)(argc > 5 ? atoi(argv[5]) : 1024) << 20, 0);
	} else if (!strcmp(mode, "steady")) {
		transfer(&a, &b, 0, argc > 5 ? atof(argv[5]) : 5);
	} else if (!strcmp(mode, "connects")) {
		int n = argc > 5 ? atoi(argv[5]) : 10;

		for (int i = 0; i < n && !failures; i++) {
			struct side a2 = a, b2 = b;
			struct falcon_sge sge = { (uint64_t)(uintptr_t)a.buf, 4096, a.mr->lkey };
			struct falcon_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
						     .opcode = FALCON_WR_RDMA_WRITE,
						     .remote_addr = (uint64_t)(uintptr_t)b.buf,
						     .rkey = b.mr->rkey };

			service++;
			connect_pair(&a2, &b2, argv[4]);
			fill(a.buf, 4096);
			memset(a.seen, 0, sizeof(a.seen));
			post(&a2, &wr);
			reap(&a, 1, "connects WRITE");
			CHECK(fnv(b.buf, 4096) == fnv(a.buf, 4096), "connection %d: WRITE wrong", i);
			falcon_destroy_qp(a2.qp);
			falcon_destroy_qp(b2.qp);
			falcon_listener_close(b2.l);
		}
		printf("connects: %d connections set up, used and torn down, %d failures\n", n,
		       failures);
	} else if (!strcmp(mode, "srq")) {
		srq_test(&a, &b, argv[4]);
	} else if (!strcmp(mode, "flows")) {
		flows(&a, &b, argv[4]);
	} else if (!strcmp(mode, "pullrnr")) {
		pull_rnr(&a, &b, argc > 5 ? (unsigned)atoi(argv[5]) : 256);
	} else if (!strcmp(mode, "canary") && argc > 5) {
		canary(&a, &b, argv[5], argc > 6 ? atof(argv[6]) : 120);
	} else if (!strcmp(mode, "overload") && argc > 5) {
		overload(&a, &b, atof(argv[5]));
	} else if (!strcmp(mode, "stall") && argc > 6) {
		stall(&a, &b, atof(argv[5]), !strcmp(argv[6], "retry"));
	} else if (!strcmp(mode, "rnr") && argc > 5) {
		rnr_late_recv(&a, &b, atof(argv[5]));
		rnr_exceeded(&a, &b, argv[4]);
	} else if (!strcmp(mode, "victim")) {
		printf("victim: transferring until killed\n");
		fflush(stdout);
		transfer(&a, &b, 0, 3600);
	} else {
		fprintf(stderr, "e2e: unknown mode %s\n", mode);
		return 2;
	}
	falcon_destroy_qp(a.qp);
	falcon_destroy_qp(b.qp);
	falcon_close(a.ctx);
	falcon_close(b.ctx);
	if (a.buf_malloced)
		free(a.buf);
	if (b.buf_malloced)
		free(b.buf);
	return failures ? 1 : 0;
}
