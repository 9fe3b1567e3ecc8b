/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packet delivery sublayer scenarios (spec section 9, 6.6.6, section 11), driven by hand:
 * two PDLs, a "wire" that the test can drop packets from, and virtual time. The
 * randomized property tests live in tests/sim/.
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

#include "pdl.h"
#include "wire_falcon.h"

#define MAXREC 4096
#define US 1000ull

struct ep {
	struct fc_pdl *p;
	const char *name;
	int auto_ack;   /* ULP acknowledges Push Data inside deliver */
	struct fc_pdl_nack refuse; /* refuse the next delivery with this NACK */
	uint64_t now;
	struct fc_pdl_rx_pkt got[MAXREC];
	int ngot;
	struct { uint64_t cookie; uint32_t rsn; int st; uint8_t code; } done[MAXREC];
	int ndone;
	int nacks, fatal;
	uint8_t last_nack_code, last_nack_type;
	uint64_t last_rnr_ns;
	int cc_events, cc_retx, cc_ack, cc_nack;
	struct fc_cc_event last_ev;
};

static int cb_deliver(void *ctx, const struct fc_pdl_rx_pkt *pkt, struct fc_pdl_nack *nack)
{
	struct ep *e = ctx;

	assert_true(e->ngot < MAXREC);
	e->got[e->ngot++] = *pkt;
	if (e->refuse.code) { /* the ULP refuses this one at once */
		*nack = e->refuse;
		e->refuse.code = 0;
		return 1;
	}
	if (e->auto_ack && pkt->type == FC_PKT_PUSH_DATA)
		assert_int_equal(fc_pdl_ulp_ack(e->p, pkt->psn, e->now), 0);
	return 0;
}

static void cb_tx_done(void *ctx, uint64_t cookie, uint32_t rsn, enum fc_tx_status st, uint8_t code)
{
	struct ep *e = ctx;

	assert_true(e->ndone < MAXREC);
	e->done[e->ndone].cookie = cookie;
	e->done[e->ndone].rsn = rsn;
	e->done[e->ndone].st = st;
	e->done[e->ndone].code = code;
	e->ndone++;
}

static void cb_nack(void *ctx, uint32_t rsn, uint8_t type, uint8_t code, uint8_t ulp, uint64_t rnr_ns)
{
	struct ep *e = ctx;

	(void)rsn;
	e->last_nack_type = type;
	(void)ulp;
	e->nacks++;
	e->last_nack_code = code;
	e->last_rnr_ns = rnr_ns;
}

static void cb_fatal(void *ctx, int reason)
{
	struct ep *e = ctx;

	assert_int_equal(reason, -ETIMEDOUT);
	e->fatal++;
}

static int cb_cc(void *ctx, const struct fc_cc_event *ev, unsigned pred)
{
	struct ep *e = ctx;

	(void)pred;
	e->cc_events++;
	if (ev->type != FC_RUE_EV_RETX)
		e->last_ev = *ev;
	if (ev->type == FC_RUE_EV_RETX)
		e->cc_retx++;
	else if (ev->type == FC_RUE_EV_ACK)
		e->cc_ack++;
	else
		e->cc_nack++;
	return 0;
}

static int gathers;
static uint64_t gather_cookie;

/* The gathered bytes of cookie c: byte i is c * 7 + i. */
static void cb_gather(void *ctx, uint64_t cookie, uint32_t off, void *dst, uint32_t len)
{
	(void)ctx;
	gathers++;
	gather_cookie = cookie;
	for (uint32_t i = 0; i < len; i++)
		((uint8_t *)dst)[i] = (uint8_t)(cookie * 7 + off + i);
}

static const struct fc_pdl_ops ops = {
	.deliver = cb_deliver, .tx_done = cb_tx_done, .nack = cb_nack, .fatal = cb_fatal,
	.cc_event = cb_cc, .gather = cb_gather,
};

static struct fc_pdl_cfg cfg;
static struct ep *A, *B;
static uint8_t payload[64][256];

/* A (cid 1) talks to B (cid 2); both start their data windows at PSN 300 and their
 * request windows at 100, as spec 6.6. */
static void setup_pair(void (*tweak)(struct fc_pdl_cfg *))
{
	struct fc_pdl_cfg ca, cb;

	fc_pdl_cfg_default(&cfg);
	cfg.tx_psn[FC_WIN_REQ] = cfg.rx_psn[FC_WIN_REQ] = 100;
	cfg.tx_psn[FC_WIN_DATA] = cfg.rx_psn[FC_WIN_DATA] = 300;
	if (tweak)
		tweak(&cfg);
	ca = cb = cfg;
	ca.local_cid = 1;
	ca.remote_cid = 2;
	cb.local_cid = 2;
	cb.remote_cid = 1;
	A = calloc(1, sizeof(*A));
	B = calloc(1, sizeof(*B));
	assert_non_null(A);
	assert_non_null(B);
	A->name = "A";
	B->name = "B";
	A->auto_ack = B->auto_ack = 1;
	A->p = fc_pdl_new(&ca, NULL, &ops, A);
	B->p = fc_pdl_new(&cb, NULL, &ops, B);
	assert_non_null(A->p);
	assert_non_null(B->p);
	for (int i = 0; i < 64; i++)
		memset(payload[i], i, sizeof(payload[i]));
}

static void teardown_pair(void)
{
	fc_pdl_free(A->p);
	fc_pdl_free(B->p);
	free(A);
	free(B);
}

static void submit(struct ep *e, uint8_t type, uint32_t rsn, int i)
{
	struct fc_pdl_tx_req r = { .type = type, .rsn = rsn, .payload = payload[i], .len = 100,
				   .cookie = (uint64_t)i, .req_len = type == FC_PKT_PULL_REQ ? 64 : 0 };

	assert_int_equal(fc_pdl_submit(e->p, &r), 0);
}

typedef int (*drop_fn)(const struct fc_falcon_pkt *f, int nth);

/* Move everything `from` wants to send at time `now` to `to`, arriving at `now`
 * (zero latency) unless drop says so. Returns packets delivered; fills last if given. */
static int pump(struct ep *from, struct ep *to, uint64_t now, drop_fn drop,
		struct fc_falcon_pkt *last, uint8_t *lastbuf)
{
	static uint8_t buf[4096];
	int n = 0, nth = 0, len;

	from->now = to->now = now;
	while ((len = fc_pdl_poll_tx(from->p, now, buf, sizeof(buf))) > 0) {
		struct fc_falcon_pkt f;

		assert_true(fc_falcon_decode(buf, (size_t)len, &f) >= 0);
		if (last) {
			memcpy(lastbuf, buf, (size_t)len);
			assert_true(fc_falcon_decode(lastbuf, (size_t)len, last) >= 0);
		}
		if (drop && drop(&f, nth++))
			continue;
		assert_int_equal(fc_pdl_rx(to->p, buf, (size_t)len, now, now), 0);
		n++;
	}
	assert_true(len >= 0);
	return n;
}

static void fire(struct ep *e, uint64_t now)
{
	e->now = now;
	fc_pdl_on_timer(e->p, now);
}

static const struct fc_pdl_counters *C(struct ep *e) { return fc_pdl_counters(e->p); }

/* ------------------------------------------------------------------------ */

static void ooo2(struct fc_pdl_cfg *c) { c->ooo_threshold = 2; }
static int drop_psn300(const struct fc_falcon_pkt *f, int nth)
{
	(void)nth;
	return f->type == FC_PKT_PUSH_DATA && f->psn == 300 && f->ar == 0;
}

/* spec 6.6.6: four Push Data, the first lost; the target's EACK shows PSN 300 missing and
 * 301-303 received; the initiator retransmits 300 early, without waiting for its timer.
 * (The spec writes the data-rx bitmap "0b0111" with PSN 300 first; falcon's bit i stands
 * for base + i, so it is 0b1110 here.) ooo_threshold 2: with the default 3 a hole three
 * packets back is still taken for reordering (9.1.4: PSN < psn_high - ooo_threshold). */
static void test_spec_666_early_retransmit(void **state)
{
	struct fc_falcon_pkt last;
	uint8_t lastbuf[4096];

	(void)state;
	setup_pair(ooo2);
	for (int i = 0; i < 4; i++)
		submit(A, FC_PKT_PUSH_DATA, (uint32_t)i + 1, i);
	B->auto_ack = 0; /* the ordered target holds 301-303 until 300 arrives */
	assert_int_equal(pump(A, B, 0, drop_psn300, NULL, NULL), 3);
	assert_int_equal(B->ngot, 3);

	/* B's coalescing timer (8 us) expires: it sends an EACK */
	assert_int_equal(fc_pdl_next_deadline(B->p), 8 * US);
	fire(B, 8 * US);
	assert_int_equal(pump(B, A, 8 * US, NULL, &last, lastbuf), 1);
	assert_int_equal(last.type, FC_PKT_EACK);
	assert_int_equal(last.rdbpsn, 300);
	assert_int_equal(last.data_rx[0], 0xE);
	assert_int_equal(last.data_rx[1], 0);
	assert_int_equal(last.data_ack[0], 0);

	/* A retransmits PSN 300 at once (early), long before its 1 ms timer */
	assert_int_equal(C(A)->retx_early, 1);
	assert_int_equal(A->cc_retx, 1);
	/* the RUE hears of the EACK (10.6.2.1): an EACK showing a loss, timestamps in
	 * 131.072 ns units (t1 = 0 sent, t2 = 0 received, t3 = t4 = 8 us = 61 units) */
	assert_int_equal(A->last_ev.type, FC_RUE_EV_ACK);
	assert_int_equal(A->last_ev.eack, 1);
	assert_int_equal(A->last_ev.eack_drop, 1);
	assert_int_equal(A->last_ev.cid, 1);
	assert_int_equal(A->last_ev.t1_ts, 0);
	assert_int_equal(A->last_ev.t3_ts, 61);
	assert_int_equal(A->last_ev.t4_ts, 61);
	assert_int_equal(A->last_ev.num_packets_acked, 0);
	assert_int_equal(A->last_ev.fcwnd_fp, 32 * FC_CWND_ONE);
	assert_int_equal(pump(A, B, 9 * US, NULL, &last, lastbuf), 1);
	assert_int_equal(last.type, FC_PKT_PUSH_DATA);
	assert_int_equal(last.psn, 300);
	assert_int_equal(C(A)->retx_timeout, 0);

	/* the ULP now takes all four in RSN order and acknowledges them */
	assert_int_equal(B->ngot, 4);
	for (uint32_t psn = 300; psn < 304; psn++)
		assert_int_equal(fc_pdl_ulp_ack(B->p, psn, 10 * US), 0);
	pump(B, A, 10 * US, NULL, NULL, NULL);
	assert_int_equal(A->ndone, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(A->done[i].st, FC_TX_ACKED);
	assert_int_equal(A->last_ev.num_packets_acked, 4);
	assert_int_equal(A->last_ev.eack, 0);
	assert_int_equal(fc_pdl_outstanding(A->p, FC_WIN_DATA), 0);
	assert_int_equal(fc_pdl_rx_state(B->p)->data.base, 304);
	teardown_pair();
}

static int drop_first_ack(const struct fc_falcon_pkt *f, int nth)
{
	(void)f;
	return nth == 0;
}

/* A lost ACK is recovered by the next one: every ACK carries the base PSNs. */
static void test_lost_ack_recovered_by_next_ack(void **state)
{
	(void)state;
	setup_pair(NULL);
	submit(A, FC_PKT_PUSH_DATA, 1, 0);
	pump(A, B, 0, NULL, NULL, NULL);
	fire(B, 8 * US);
	assert_int_equal(pump(B, A, 8 * US, drop_first_ack, NULL, NULL), 0); /* ACK lost */
	assert_int_equal(A->ndone, 0);
	submit(A, FC_PKT_PUSH_DATA, 2, 1);
	pump(A, B, 20 * US, NULL, NULL, NULL);
	fire(B, 28 * US);
	assert_int_equal(pump(B, A, 28 * US, NULL, NULL, NULL), 1);
	assert_int_equal(A->ndone, 2); /* both released by the second ACK */
	assert_int_equal(C(A)->retx_timeout + C(A)->retx_early, 0);
	teardown_pair();
}

static int drop_all(const struct fc_falcon_pkt *f, int nth)
{
	(void)f;
	(void)nth;
	return 1;
}

/* The only ACK is lost and nothing follows: the retransmit timer resends the packet, the
 * receiver sees a duplicate and answers with an ACK at once (section 11). */
static void test_lost_ack_recovered_by_timeout(void **state)
{
	(void)state;
	setup_pair(NULL);
	submit(A, FC_PKT_PUSH_DATA, 1, 0);
	pump(A, B, 0, NULL, NULL, NULL);
	fire(B, 8 * US);
	pump(B, A, 8 * US, drop_all, NULL, NULL);
	assert_int_equal(fc_pdl_next_deadline(A->p), cfg.rto_ns);
	fire(A, cfg.rto_ns);
	assert_int_equal(C(A)->retx_timeout, 1);
	assert_int_equal(pump(A, B, cfg.rto_ns, NULL, NULL, NULL), 1);
	assert_int_equal(C(B)->rx_old, 1);   /* already acknowledged and below the base */
	assert_int_equal(B->ngot, 1);        /* delivered exactly once */
	assert_int_equal(pump(B, A, cfg.rto_ns, NULL, NULL, NULL), 1); /* immediate ACK */
	assert_int_equal(A->ndone, 1);
	assert_int_equal(A->done[0].st, FC_TX_ACKED);
	teardown_pair();
}

static void retx3(struct fc_pdl_cfg *c) { c->max_retx = 3; }
static void retx1_quiet_10ms(struct fc_pdl_cfg *c)
{
	c->max_retx = 1;
	c->give_up_ns = 10000000; /* 10 ms */
}

/* With give_up_ns, max_retx spent is not enough: the packet is retransmitted at the
 * longest backoff until the peer has been silent for give_up_ns (verbs' timeout x
 * (retry_cnt + 1)); only then the Resync (section 11). */
static void test_give_up_needs_silence(void **state)
{
	uint64_t t = 0;
	struct fc_falcon_pkt last;
	uint8_t lastbuf[4096];
	int n = 0;

	(void)state;
	setup_pair(retx1_quiet_10ms);
	submit(A, FC_PKT_PUSH_DATA, 7, 0);
	pump(A, B, t, drop_all, NULL, NULL);
	assert_int_equal(fc_pdl_quiet_since(A->p), 0); /* owed since the first send */
	for (;;) {
		t = fc_pdl_next_deadline(A->p);
		fire(A, t);
		pump(A, B, t, drop_all, &last, lastbuf);
		if (last.type == FC_PKT_RESYNC)
			break;
		assert_true(t < 10000000); /* no Resync before 10 ms of silence */
		assert_true(++n < 100);
	}
	assert_true(t >= 10000000);
	assert_true(C(A)->retx_timeout > 1); /* retried past max_retx meanwhile */
	assert_int_equal(A->fatal, 0);
	teardown_pair();
}

/* fc_pdl_stalled: timers that expired while the caller did not run are re-armed one RTO
 * later without a retry counted, and the stall is taken off the peer's silence. */
static void test_stalled_rearms(void **state)
{
	uint64_t t0, stall_end;

	(void)state;
	setup_pair(retx1_quiet_10ms);
	submit(A, FC_PKT_PUSH_DATA, 7, 0);
	pump(A, B, 0, drop_all, NULL, NULL);
	t0 = fc_pdl_next_deadline(A->p);
	stall_end = t0 + 50000000; /* the caller stopped 50 ms past the first timeout */
	fc_pdl_stalled(A->p, 20000000, stall_end); /* 20 ms of it a stall */
	assert_int_equal(C(A)->stalls, 1);
	assert_int_equal(C(A)->retx_timeout, 0);
	assert_int_equal(fc_pdl_next_deadline(A->p), stall_end + fc_pdl_rto_ns(A->p) + 1);
	assert_int_equal(fc_pdl_quiet_since(A->p), 20000000); /* owed from 0, less the stall */
	fc_pdl_stalled(A->p, 200000000, stall_end); /* never past now */
	assert_int_equal(fc_pdl_quiet_since(A->p), stall_end);
	assert_int_equal(C(A)->retx_timeout, 0);
	fire(A, stall_end + fc_pdl_rto_ns(A->p) + 1); /* now a real timeout: a retry */
	assert_int_equal(C(A)->retx_timeout, 1);
	assert_int_equal(A->fatal, 0);
	teardown_pair();
}


/* Section 11: the packet times out max_retx times, is replaced by a Resync with the same
 * PSN; the Resync times out max_retx times too: the connection is fatal, resources are
 * reclaimed and reported once. */
static void test_max_retx_resync_fatal(void **state)
{
	uint64_t t = 0;
	struct fc_falcon_pkt last;
	uint8_t lastbuf[4096];

	(void)state;
	setup_pair(retx3);
	submit(A, FC_PKT_PUSH_DATA, 7, 0);
	pump(A, B, t, drop_all, NULL, NULL);
	for (int i = 0; i < 3; i++) {
		t = fc_pdl_next_deadline(A->p);
		fire(A, t);
		assert_int_equal(pump(A, B, t, drop_all, &last, lastbuf), 0);
		assert_int_equal(last.type, FC_PKT_PUSH_DATA);
		assert_int_equal(last.psn, 300);
	}
	assert_int_equal(C(A)->retx_timeout, 3);
	t = fc_pdl_next_deadline(A->p);
	fire(A, t); /* 4th expiry: Resync, same PSN and RSN, retry counter reset */
	pump(A, B, t, drop_all, &last, lastbuf);
	assert_int_equal(last.type, FC_PKT_RESYNC);
	assert_int_equal(last.psn, 300);
	assert_int_equal(last.rsn, 7);
	assert_int_equal(last.resync_code, FC_RESYNC_RETX_EXHAUSTED);
	assert_int_equal(last.resync_pkt_type, FC_PKT_PUSH_DATA);
	assert_int_equal(A->fatal, 0);
	for (int i = 0; i < 3; i++) {
		t = fc_pdl_next_deadline(A->p);
		fire(A, t);
		pump(A, B, t, drop_all, &last, lastbuf);
		assert_int_equal(last.type, FC_PKT_RESYNC);
	}
	assert_int_equal(C(A)->resyncs_tx, 4);
	assert_int_equal(A->fatal, 0);
	t = fc_pdl_next_deadline(A->p);
	fire(A, t);
	assert_int_equal(A->fatal, 1);
	assert_true(fc_pdl_is_dead(A->p));
	assert_int_equal(A->ndone, 1);
	assert_int_equal(A->done[0].st, FC_TX_CONN_DEAD);
	assert_int_equal(fc_pdl_next_deadline(A->p), UINT64_MAX);
	assert_int_equal(fc_pdl_submit(A->p, &(struct fc_pdl_tx_req){ .type = FC_PKT_PUSH_DATA }),
			 -EPIPE);
	assert_int_equal(B->ngot, 0);
	teardown_pair();
}

/* The Resync after exhausted retries gets through: the receiver advances its window over
 * the lost PSN, tells its ULP, and the original is released as RETX_EXHAUSTED. */
static void test_exhausted_then_resync_acked(void **state)
{
	uint64_t t = 0;

	(void)state;
	setup_pair(retx3);
	submit(A, FC_PKT_PUSH_DATA, 7, 0);
	pump(A, B, t, drop_all, NULL, NULL);
	for (int i = 0; i < 4; i++) {
		t = fc_pdl_next_deadline(A->p);
		fire(A, t);
		if (i < 3)
			pump(A, B, t, drop_all, NULL, NULL);
	}
	assert_int_equal(pump(A, B, t, NULL, NULL, NULL), 1); /* the Resync arrives */
	assert_int_equal(B->ngot, 1);
	assert_int_equal(B->got[0].type, FC_PKT_RESYNC);
	assert_int_equal(B->got[0].resync_code, FC_RESYNC_RETX_EXHAUSTED);
	assert_int_equal(fc_pdl_rx_state(B->p)->data.base, 301);
	assert_int_equal(pump(B, A, t, NULL, NULL, NULL), 1);
	assert_int_equal(A->ndone, 1);
	assert_int_equal(A->done[0].st, FC_TX_RETX_EXHAUSTED);
	assert_int_equal(A->fatal, 0);
	/* the connection goes on */
	submit(A, FC_PKT_PUSH_DATA, 8, 1);
	assert_int_equal(pump(A, B, t + 1, NULL, NULL, NULL), 1);
	assert_int_equal(B->got[1].psn, 301);
	teardown_pair();
}

/* 6.6.3: push RNR. The NACK sets the packet's timer to max(RTO, RNR timeout) without
 * counting a retry; the retransmission is accepted by the receiver again. */
static void test_push_rnr(void **state)
{
	uint64_t t;

	(void)state;
	setup_pair(NULL);
	B->auto_ack = 0;
	submit(A, FC_PKT_PUSH_DATA, 1, 0);
	pump(A, B, 0, NULL, NULL, NULL);
	assert_int_equal(B->ngot, 1);
	/* RNR timeout code 0x19 = 61.44 ms (spec 7.8 table) */
	assert_int_equal(fc_pdl_ulp_nack(B->p, FC_WIN_DATA, 300, FC_NACK_RNR, 0x19, 0x42, 0), 0);
	assert_int_equal(pump(B, A, 1 * US, NULL, NULL, NULL), 1);
	assert_int_equal(A->nacks, 1);
	assert_int_equal(A->last_nack_code, FC_NACK_RNR);
	assert_int_equal(A->last_rnr_ns, 61440000ull);
	t = fc_pdl_next_deadline(A->p);
	assert_int_equal(t, 1 * US + 61440000ull);
	fire(A, t);
	assert_int_equal(C(A)->retx_timeout, 0); /* an RNR wait is not a retry */
	assert_int_equal(pump(A, B, t, NULL, NULL, NULL), 1);
	assert_int_equal(B->ngot, 2); /* delivered again: the NACK un-received it */
	assert_int_equal(B->got[1].psn, 300);
	assert_int_equal(fc_pdl_ulp_ack(B->p, 300, t), 0);
	pump(B, A, t, NULL, NULL, NULL); /* AR was set on the retransmission: ACK at once */
	assert_int_equal(A->ndone, 1);
	assert_int_equal(A->done[0].st, FC_TX_ACKED);
	teardown_pair();
}

/* An RNR NACK proves the packet arrived: the timeouts before it no longer count toward
 * max_retx. With max_retx 3, two lost attempts, then an RNR NACK: the packet may still be
 * lost 3 times after the RNR wait before it is exhausted (a long RNR wait over a lossy
 * path must not exhaust a packet that keeps arriving). */
static void test_rnr_resets_retry_count(void **state)
{
	struct fc_falcon_pkt last;
	uint8_t lastbuf[4096];
	uint64_t t = 0;

	(void)state;
	setup_pair(retx3);
	B->auto_ack = 0;
	submit(A, FC_PKT_PUSH_DATA, 1, 0);
	pump(A, B, t, drop_all, NULL, NULL);
	for (int i = 0; i < 2; i++) { /* two timeouts, both lost */
		t = fc_pdl_next_deadline(A->p);
		fire(A, t);
		pump(A, B, t, drop_all, NULL, NULL);
	}
	t = fc_pdl_next_deadline(A->p);
	fire(A, t);
	assert_int_equal(pump(A, B, t, NULL, NULL, NULL), 1); /* the third try arrives */
	assert_int_equal(C(A)->retx_timeout, 3);
	assert_int_equal(fc_pdl_ulp_nack(B->p, FC_WIN_DATA, 300, FC_NACK_RNR, 0x01, 0, t), 0);
	assert_int_equal(pump(B, A, t, NULL, NULL, NULL), 1);
	assert_int_equal(A->last_nack_code, FC_NACK_RNR);
	t = fc_pdl_next_deadline(A->p);
	fire(A, t); /* the RNR wait is over: sent again, lost */
	pump(A, B, t, drop_all, &last, lastbuf);
	assert_int_equal(last.type, FC_PKT_PUSH_DATA);
	for (int i = 0; i < 3; i++) { /* three more timeouts: still the data packet */
		t = fc_pdl_next_deadline(A->p);
		fire(A, t);
		pump(A, B, t, drop_all, &last, lastbuf);
		assert_int_equal(last.type, FC_PKT_PUSH_DATA);
		assert_int_equal(last.psn, 300);
	}
	t = fc_pdl_next_deadline(A->p);
	fire(A, t); /* now exhausted: Resync */
	pump(A, B, t, drop_all, &last, lastbuf);
	assert_int_equal(last.type, FC_PKT_RESYNC);
	assert_int_equal(last.resync_code, FC_RESYNC_RETX_EXHAUSTED);
	teardown_pair();
}

/* Capture what e sends at `now` without delivering it. Returns the number captured. */
struct held { uint8_t buf[512]; int len; uint64_t tx_ns; };
static int hold(struct ep *e, uint64_t now, struct held *h, int max)
{
	int n = 0, len;

	e->now = now;
	while (n < max && (len = fc_pdl_poll_tx(e->p, now, h[n].buf, sizeof(h[n].buf))) > 0) {
		h[n].len = len;
		h[n].tx_ns = now;
		n++;
	}
	assert_true(len >= 0);
	return n;
}

static void deliver_held(struct ep *to, const struct held *h, int n, uint64_t now)
{
	to->now = now;
	for (int i = 0; i < n; i++)
		assert_int_equal(fc_pdl_rx(to->p, h[i].buf, (size_t)h[i].len, h[i].tx_ns, now), 0);
}

/* Found by the simulator (issue 13, seeds 0x1e00 0x2190 0x36c8 0x4950): the recency check
 * of 9.1.4 must not let an EACK trigger an early retransmission of a packet whose last
 * transmission the EACK cannot show. t1 counts 131.072 ns units: new Push Data leaves
 * 60 ns before the RNR-timer retransmission of PSN 300, in the same unit; the receiver's
 * EACK, triggered by the new data alone, has t1 equal to that unit and still shows 300
 * as a hole. It arrives more than an RTT after the retransmission (a late EACK), so the
 * RTT half of the check does not hold it back: only t1 strictly after the unit of the
 * last transmission may. The packet is then not retransmitted again (clean link). */
static void test_rnr_retx_not_early_on_same_unit_eack(void **state)
{
	struct held newdata[8], retx[2];
	uint64_t t0 = 10 * US, d, r;
	int n;

	(void)state;
	setup_pair(NULL);
	for (int i = 0; i < 6; i++)
		submit(A, FC_PKT_PUSH_DATA, (uint32_t)i + 1, i);
	B->refuse = (struct fc_pdl_nack){ .code = FC_NACK_RNR, .rnr_timeout = 0x01 };
	assert_int_equal(pump(A, B, t0, NULL, NULL, NULL), 6);
	assert_int_equal(C(B)->nacks_tx, 0);
	pump(B, A, t0, NULL, NULL, NULL);          /* the RNR NACK of PSN 300 */
	assert_int_equal(A->nacks, 1);
	assert_int_equal(A->last_nack_code, FC_NACK_RNR);
	fire(B, t0 + 8 * US);
	pump(B, A, t0 + 8 * US, NULL, NULL, NULL); /* EACK: 301-305 acked, 300 a hole */
	assert_int_equal(A->ndone, 5);
	assert_int_equal(C(A)->retx_early, 0);    /* 300 waits out its RNR timer */

	/* pick the retransmission time r: the RNR deadline or later, with r - 60 ns in the
	 * same 131.072 ns unit as r */
	d = fc_pdl_next_deadline(A->p);
	assert_true(d > t0 + 8 * US && d != UINT64_MAX);
	for (r = d; fc_ns_to_ts(r - 60) != fc_ns_to_ts(r); r++)
		;
	for (int i = 6; i < 10; i++)
		submit(A, FC_PKT_PUSH_DATA, (uint32_t)i + 1, i);
	assert_int_equal(hold(A, r - 60, newdata, 8), 4);    /* PSN 306-309 */
	fire(A, r);
	assert_int_equal(hold(A, r, retx, 2), 1);             /* PSN 300 again */
	assert_int_equal(C(A)->retx_timeout, 0);              /* an RNR wait is not a retry */

	/* the new data reaches B first; its EACK still shows 300 missing, t1 = the unit */
	deliver_held(B, newdata, 4, r);
	fire(B, r + 8 * US);
	n = pump(B, A, r + 20 * US, NULL, NULL, NULL);
	assert_int_equal(n, 1);
	assert_int_equal(C(B)->eacks_tx, 2);
	assert_int_equal(C(A)->retx_early, 0);
	assert_int_equal(hold(A, r + 20 * US, retx + 1, 1), 0); /* nothing to send again */

	/* the retransmission arrives: everything is delivered once and released */
	deliver_held(B, retx, 1, r + 21 * US);
	fire(B, r + 30 * US);
	pump(B, A, r + 30 * US, NULL, NULL, NULL);
	assert_int_equal(A->ndone, 10);
	for (int i = 0; i < 10; i++)
		assert_int_equal(A->done[i].st, FC_TX_ACKED);
	assert_int_equal(B->ngot, 11); /* 300 twice: refused, then taken */
	assert_int_equal(C(A)->retx_early + C(A)->retx_timeout + C(A)->retx_own, 0);
	assert_int_equal(fc_pdl_outstanding(A->p, FC_WIN_DATA), 0);
	teardown_pair();
}

static void submit_last(struct ep *e, uint32_t rsn, int i, int last)
{
	struct fc_pdl_tx_req r = { .type = FC_PKT_PUSH_DATA, .rsn = rsn, .payload = payload[i],
				   .len = 100, .cookie = (uint64_t)i, .last = (uint8_t)last };

	assert_int_equal(fc_pdl_submit(e->p, &r), 0);
}

/* Our AR policy (9.1.3.1): the packet that empties the transmit queue asks for an ACK
 * when the ULP marked it last; the receiver answers at once instead of after the
 * coalescing time. A packet marked last with more unsent behind it in the PDL does not. */
static void test_ar_on_emptying_packet(void **state)
{
	struct held h[4];
	struct fc_falcon_pkt f;

	(void)state;
	setup_pair(NULL);
	submit_last(A, 1, 0, 0);
	submit_last(A, 2, 1, 1); /* last from the ULP, but 3 is submitted behind it */
	submit_last(A, 3, 2, 1);
	assert_int_equal(hold(A, 1 * US, h, 4), 3);
	for (int i = 0; i < 3; i++) {
		assert_true(fc_falcon_decode(h[i].buf, (size_t)h[i].len, &f) >= 0);
		assert_int_equal(f.ar, i == 2); /* fcwnd 32: the 10 % policy marks none of these */
	}
	deliver_held(B, h, 3, 1 * US);
	/* B acknowledges at once (auto_ack: ULP acks inside deliver), no 8 us wait */
	assert_int_equal(pump(B, A, 1 * US, NULL, NULL, NULL), 1);
	assert_int_equal(A->ndone, 3);
	assert_int_equal(C(B)->acks_by_request, 1);
	assert_int_equal(C(B)->acks_by_timer, 0);
	teardown_pair();
}

/* One copy per byte: a packet's gathered bytes are fetched when it is encoded, for the
 * first transmission and again for the retransmission, and arrive after the inline
 * bytes; the limits. */
static void test_gather_at_encode(void **state)
{
	struct fc_pdl_tx_req r = { .type = FC_PKT_PUSH_DATA, .rsn = 1, .payload = payload[3],
				   .len = 4, .gather_len = 300, .cookie = 9 };
	uint8_t want[304];

	(void)state;
	setup_pair(NULL);
	gathers = 0;
	assert_int_equal(fc_pdl_submit(A->p, &r), 0);
	assert_int_equal(gathers, 0); /* nothing copied at submission */
	assert_int_equal(pump(A, B, 0, drop_all, NULL, NULL), 0); /* sent, lost */
	assert_int_equal(gathers, 1);
	assert_int_equal(gather_cookie, 9);
	fire(A, cfg.rto_ns);
	assert_int_equal(pump(A, B, cfg.rto_ns, NULL, NULL, NULL), 1);
	assert_int_equal(gathers, 2); /* gathered again for the retransmission */
	assert_int_equal(B->ngot, 1);
	assert_int_equal(B->got[0].len, 304);
	memcpy(want, payload[3], 4);
	for (int i = 0; i < 300; i++)
		want[4 + i] = (uint8_t)(9 * 7 + i);
	/* got[].payload pointed into the frame during the callback only: check the copy the
	 * receiver's ULP would have made, by encoding the retransmission once more */
	{
		uint8_t buf[1024];
		struct fc_falcon_pkt f;

		r.rsn = 2;
		r.cookie = 9;
		assert_int_equal(fc_pdl_submit(A->p, &r), 0);
		int n = fc_pdl_poll_tx(A->p, cfg.rto_ns, buf, sizeof(buf));

		assert_true(n > 0);
		assert_true(fc_falcon_decode(buf, (size_t)n, &f) >= 0);
		assert_int_equal(f.type, FC_PKT_PUSH_DATA);
		assert_int_equal(f.payload_len, 304);
		assert_int_equal(f.req_len, 304);
		assert_memory_equal(f.payload, want, 304);
	}
	/* limits: more than a packet; a gather length with no gather callback */
	r.gather_len = FC_FALCON_PUSH_MAX - 3;
	assert_int_equal(fc_pdl_submit(A->p, &r), -EINVAL);
	teardown_pair();
	{
		static const struct fc_pdl_ops no_gather = { .deliver = cb_deliver,
							     .tx_done = cb_tx_done };
		struct fc_pdl_cfg c;
		struct fc_pdl *p;

		fc_pdl_cfg_default(&c);
		p = fc_pdl_new(&c, NULL, &no_gather, NULL);
		assert_non_null(p);
		r.gather_len = 8;
		assert_int_equal(fc_pdl_submit(p, &r), -EINVAL);
		r.gather_len = 0;
		assert_int_equal(fc_pdl_submit(p, &r), 0);
		fc_pdl_free(p);
	}
}

/* 9.2.4 for the ULP error codes: the packet is replaced by a Resync with the matching
 * resync code; the ACK of the Resync releases the original as NACKED with the code. */
static void run_ulp_error(uint8_t nack_code, uint8_t want_resync)
{
	setup_pair(NULL);
	B->auto_ack = 0;
	submit(A, FC_PKT_PUSH_DATA, 5, 0);
	pump(A, B, 0, NULL, NULL, NULL);
	assert_int_equal(fc_pdl_ulp_nack(B->p, FC_WIN_DATA, 300, nack_code, 0, 0, 0), 0);
	pump(B, A, 1 * US, NULL, NULL, NULL);
	assert_int_equal(A->nacks, 1);
	assert_int_equal(A->ndone, 0); /* released only when the Resync is acknowledged */
	assert_int_equal(pump(A, B, 2 * US, NULL, NULL, NULL), 1);
	assert_int_equal(B->ngot, 2);
	assert_int_equal(B->got[1].type, FC_PKT_RESYNC);
	assert_int_equal(B->got[1].resync_code, want_resync);
	assert_int_equal(B->got[1].rsn, 5);
	assert_int_equal(fc_pdl_rx_state(B->p)->data.base, 301);
	pump(B, A, 3 * US, NULL, NULL, NULL);
	assert_int_equal(A->ndone, 1);
	assert_int_equal(A->done[0].st, FC_TX_NACKED);
	assert_int_equal(A->done[0].code, nack_code);
	teardown_pair();
}

static void test_nack_cie(void **state) { (void)state; run_ulp_error(FC_NACK_CIE, FC_RESYNC_TARGET_CIE); }
static void test_nack_nre(void **state) { (void)state; run_ulp_error(FC_NACK_NRE, FC_RESYNC_TARGET_NRE); }
static void test_nack_cid(void **state)
{
	(void)state;
	run_ulp_error(FC_NACK_INVALID_CID, FC_RESYNC_TARGET_INVALID_CID);
}
static void test_nack_xlr(void **state) { (void)state; run_ulp_error(FC_NACK_XLR, FC_RESYNC_REMOTE_XLR); }

/* Resource NACK: the RUE hears of it and the packet is retransmitted. A Pull Request
 * (request window) is refused this way. */
static void test_nack_resource_request_window(void **state)
{
	(void)state;
	setup_pair(NULL);
	submit(A, FC_PKT_PULL_REQ, 1, 0);
	B->refuse.code = FC_NACK_RESOURCE;
	pump(A, B, 0, NULL, NULL, NULL);
	assert_int_equal(B->ngot, 1);
	assert_int_equal(B->got[0].window, FC_WIN_REQ);
	assert_int_equal(B->got[0].psn, 100);
	assert_int_equal(fc_pdl_rx_state(B->p)->req.base, 100); /* not acknowledged */
	pump(B, A, 1 * US, NULL, NULL, NULL);
	assert_int_equal(A->cc_nack, 1);
	assert_int_equal(C(A)->nack_resource_rx, 1);
	assert_int_equal(A->last_nack_type, FC_PKT_PULL_REQ);
	/* retransmitted as normal: by its timer, not at once (no bouncing off a full peer) */
	assert_int_equal(pump(A, B, 2 * US, NULL, NULL, NULL), 0);
	assert_int_equal(fc_pdl_next_deadline(A->p), cfg.rto_ns);
	fire(A, cfg.rto_ns);
	assert_int_equal(pump(A, B, cfg.rto_ns, NULL, NULL, NULL), 1);
	assert_int_equal(B->ngot, 2);
	pump(B, A, cfg.rto_ns, NULL, NULL, NULL); /* AR on the retransmission */
	assert_int_equal(A->ndone, 1);
	assert_int_equal(A->done[0].st, FC_TX_ACKED);
	teardown_pair();
}

/* 9.2.3: an ACK whose base is older than ours is stale and discarded; one that
 * acknowledges PSNs never sent is discarded and counted too. */
static void test_stale_and_bogus_acks(void **state)
{
	uint8_t buf[128];
	struct fc_falcon_pkt f = { .type = FC_PKT_BACK, .cid = 1, .rrbpsn = 100, .rdbpsn = 300 };
	int n;

	(void)state;
	setup_pair(NULL);
	submit(A, FC_PKT_PUSH_DATA, 1, 0);
	submit(A, FC_PKT_PUSH_DATA, 2, 1);
	pump(A, B, 0, drop_all, NULL, NULL);
	f.rdbpsn = 301;
	n = fc_falcon_encode(&f, buf, sizeof(buf));
	assert_int_equal(fc_pdl_rx(A->p, buf, (size_t)n, 0, 1 * US), 0);
	assert_int_equal(A->ndone, 1);
	f.rdbpsn = 300; /* older than the new base */
	n = fc_falcon_encode(&f, buf, sizeof(buf));
	assert_int_equal(fc_pdl_rx(A->p, buf, (size_t)n, 0, 2 * US), 0);
	assert_int_equal(C(A)->acks_stale, 1);
	f.rdbpsn = 305; /* beyond anything sent */
	n = fc_falcon_encode(&f, buf, sizeof(buf));
	assert_int_equal(fc_pdl_rx(A->p, buf, (size_t)n, 0, 3 * US), 0);
	assert_int_equal(C(A)->acks_bogus, 1);
	assert_int_equal(A->ndone, 1);
	f.cid = 9; /* not ours */
	n = fc_falcon_encode(&f, buf, sizeof(buf));
	assert_int_equal(fc_pdl_rx(A->p, buf, (size_t)n, 0, 3 * US), 0);
	assert_int_equal(C(A)->rx_bad_cid, 1);
	assert_true(fc_pdl_rx(A->p, buf, 7, 0, 3 * US) < 0);
	assert_int_equal(C(A)->rx_decode_err, 1);
	teardown_pair();
}

static void wide_window(struct fc_pdl_cfg *c)
{
	c->tx_window[FC_WIN_DATA] = 256;
	c->fcwnd_fp = 256 * FC_CWND_ONE;
	c->ncwnd = 256;
}

/* A transmitter window larger than the receiver's: PSNs beyond base + 128 are dropped
 * out of window, OWN goes out in an EACK, and the EACK-OWN heuristic retransmits them. */
static void test_eack_own(void **state)
{
	struct fc_falcon_pkt last;
	uint8_t lastbuf[4096];

	(void)state;
	setup_pair(wide_window);
	B->auto_ack = 0;
	for (int i = 0; i < 130; i++)
		submit(A, FC_PKT_PUSH_DATA, (uint32_t)i + 1, i % 64);
	pump(A, B, 0, NULL, NULL, NULL);
	assert_int_equal(B->ngot, 128);
	assert_int_equal(C(B)->rx_oow, 2);
	fire(B, 8 * US);
	pump(B, A, 8 * US, NULL, &last, lastbuf);
	assert_int_equal(last.type, FC_PKT_EACK);
	assert_int_equal(last.own, FC_OWN_DATA);
	assert_int_equal(C(A)->retx_own, 2); /* 428 and 429, not the received ones */
	for (uint32_t psn = 300; psn < 428; psn++)
		assert_int_equal(fc_pdl_ulp_ack(B->p, psn, 9 * US), 0);
	/* B's base moved: the retransmissions now fit */
	assert_int_equal(pump(A, B, 9 * US, NULL, NULL, NULL), 2);
	assert_int_equal(B->ngot, 130);
	/* OWN was cleared when the EACK carried it */
	assert_int_equal(fc_pdl_rx_state(B->p)->data.own, 0);
	teardown_pair();
}

static void fcwnd1_ncwnd2(struct fc_pdl_cfg *c)
{
	c->fcwnd_fp = 4 * FC_CWND_ONE;
	c->ncwnd = 2;
}

/* Tx gating (9.1.2): Push Data needs PSN < DBPSN + fcwnd and DORC < ncwnd; Pull Data
 * only the first. */
static void test_gating(void **state)
{
	(void)state;
	setup_pair(fcwnd1_ncwnd2);
	for (int i = 0; i < 6; i++)
		submit(A, FC_PKT_PUSH_DATA, (uint32_t)i + 1, i);
	assert_int_equal(pump(A, B, 0, drop_all, NULL, NULL), 0);
	assert_int_equal(C(A)->tx_new, 2); /* ncwnd = 2 outstanding requests */
	assert_int_equal(fc_pdl_unsent(A->p, FC_WIN_DATA), 4);
	assert_int_equal(fc_pdl_unsent(A->p, FC_WIN_REQ), 0);
	assert_int_equal(fc_pdl_outstanding(A->p, FC_WIN_DATA), 6);
	teardown_pair();

	setup_pair(fcwnd1_ncwnd2);
	for (int i = 0; i < 6; i++)
		submit(A, FC_PKT_PULL_DATA, (uint32_t)i + 1, i);
	pump(A, B, 0, drop_all, NULL, NULL);
	assert_int_equal(C(A)->tx_new, 4); /* fcwnd = 4 */
	teardown_pair();
}

/* Memory by use: a ring starts at FC_PDL_RING_MIN and doubles as submissions need it,
 * up to its window (128 for data). Packets in flight when the ring grows keep their
 * timers (the timer heap names ring slots, renamed on growth): the timeouts fire for the
 * right PSNs, and everything is delivered and released once, in order. */
static void test_ring_grows_to_window(void **state)
{
	struct fc_pdl_tx_req r = { .type = FC_PKT_PUSH_DATA, .payload = payload[0], .len = 100 };
	size_t mem0;
	uint64_t t;
	int i;

	(void)state;
	setup_pair(NULL);
	mem0 = fc_pdl_mem_bytes(A->p);
	for (i = 0; i < 6; i++)
		submit(A, FC_PKT_PUSH_DATA, (uint32_t)i + 1, i);
	assert_int_equal(pump(A, B, 0, drop_all, NULL, NULL), 0); /* 6 in flight, timers armed */
	assert_int_equal(C(A)->ring_grows, 0);
	for (; i < FC_DATA_WIN; i++)
		submit(A, FC_PKT_PUSH_DATA, (uint32_t)i + 1, i % 64);
	r.rsn = FC_DATA_WIN + 1;
	assert_int_equal(fc_pdl_submit(A->p, &r), -EAGAIN); /* full at the window */
	assert_int_equal(C(A)->ring_grows, 4);              /* 8 -> 16 -> 32 -> 64 -> 128 */
	assert_int_equal(C(A)->ring_grow_fail, 0);
	assert_true(fc_pdl_mem_bytes(A->p) > mem0 + (FC_DATA_WIN - FC_PDL_RING_MIN) * 64);
	/* the six timers fire for PSNs 300-305, not for whatever took their old slots */
	fire(A, cfg.rto_ns);
	assert_int_equal(C(A)->retx_timeout, 6);
	assert_int_equal(pump(A, B, cfg.rto_ns, NULL, NULL, NULL), 32); /* fcwnd 32 */
	for (i = 0; i < 6; i++)
		assert_int_equal(B->got[i].psn, 300 + (uint32_t)i);
	for (t = cfg.rto_ns; A->ndone < FC_DATA_WIN && t < cfg.rto_ns + 100000 * US; t += 10 * US) {
		pump(A, B, t, NULL, NULL, NULL);
		fire(B, t);
		pump(B, A, t, NULL, NULL, NULL);
		fire(A, t);
	}
	assert_int_equal(A->ndone, FC_DATA_WIN);
	assert_int_equal(B->ngot, FC_DATA_WIN);
	for (i = 0; i < FC_DATA_WIN; i++) {
		assert_int_equal(B->got[i].rsn, (uint32_t)i + 1);
		assert_int_equal(A->done[i].rsn, (uint32_t)i + 1);
		assert_int_equal(A->done[i].st, FC_TX_ACKED);
	}
	assert_int_equal(C(A)->retx_timeout, 6);
	teardown_pair();
}

static void half_window(struct fc_pdl_cfg *c)
{
	c->fcwnd_fp = FC_CWND_ONE / 2;
	c->ipg_ns = 10 * US;
}

/* fcwnd < 1: one packet outstanding and an inter-packet gap between transmissions. */
static void test_pacing(void **state)
{
	(void)state;
	setup_pair(half_window);
	for (int i = 0; i < 3; i++)
		submit(A, FC_PKT_PULL_DATA, (uint32_t)i + 1, i);
	assert_int_equal(pump(A, B, 0, NULL, NULL, NULL), 1);
	assert_int_equal(pump(A, B, 1 * US, NULL, NULL, NULL), 0); /* one outstanding */
	/* nothing may go until the ACK: no pacing deadline, only the retransmit timer */
	assert_int_equal(fc_pdl_next_deadline(A->p), cfg.rto_ns);
	pump(B, A, 2 * US, NULL, NULL, NULL); /* fcwnd <= 2: AR on every packet */
	assert_int_equal(A->ndone, 1);
	assert_int_equal(pump(A, B, 5 * US, NULL, NULL, NULL), 0); /* gap not over */
	assert_int_equal(fc_pdl_next_deadline(A->p), 10 * US);
	assert_int_equal(pump(A, B, 10 * US, NULL, NULL, NULL), 1);
	teardown_pair();
}

static void fcwnd2(struct fc_pdl_cfg *c) { c->fcwnd_fp = 2 * FC_CWND_ONE; }

/* AR policy (9.1.3.1): every packet while fcwnd <= threshold, else ar_percent of them. */
static void test_ar_policy(void **state)
{
	uint8_t buf[4096];
	int ar = 0, len;

	(void)state;
	setup_pair(NULL); /* fcwnd 32 > 2: 10 % */
	for (int i = 0; i < 30; i++)
		submit(A, FC_PKT_PULL_DATA, (uint32_t)i + 1, i);
	while ((len = fc_pdl_poll_tx(A->p, 0, buf, sizeof(buf))) > 0) {
		struct fc_falcon_pkt f;
		assert_true(fc_falcon_decode(buf, (size_t)len, &f) >= 0);
		ar += f.ar;
	}
	assert_int_equal(ar, 3);
	teardown_pair();

	setup_pair(fcwnd2); /* fcwnd 2 <= threshold 2: every packet */
	for (int i = 0; i < 30; i++)
		submit(A, FC_PKT_PULL_DATA, (uint32_t)i + 1, i);
	ar = 0;
	while ((len = fc_pdl_poll_tx(A->p, 0, buf, sizeof(buf))) > 0) {
		struct fc_falcon_pkt f;
		assert_true(fc_falcon_decode(buf, (size_t)len, &f) >= 0);
		ar += f.ar;
	}
	assert_int_equal(C(A)->tx_new, 2);
	assert_int_equal(ar, 2);
	teardown_pair();
}

/* Ordered connections send in submission (RSN) order across both windows: a gated
 * request-window head holds back later data-window packets (9.1.3). */
static void one_req(struct fc_pdl_cfg *c) { c->ncwnd = 1; }
static void test_ordered_across_windows(void **state)
{
	struct fc_falcon_pkt last;
	uint8_t lastbuf[4096];

	(void)state;
	setup_pair(one_req);
	submit(A, FC_PKT_PULL_REQ, 1, 0);
	submit(A, FC_PKT_PULL_REQ, 2, 1);  /* gated: RORC = ncwnd = 1 */
	submit(A, FC_PKT_PUSH_DATA, 3, 2); /* must not pass RSN 2 */
	assert_int_equal(pump(A, B, 0, drop_all, &last, lastbuf), 0);
	assert_int_equal(C(A)->tx_new, 1);
	teardown_pair();
}

/* A packet NACKed RNR and then (a stale or new) resource NACK: its retransmission keeps
 * a timer, so losing it is recovered (the RNR wait must not survive the retransmit). */
static void test_rnr_then_resource_nack(void **state)
{
	uint8_t buf[128];
	struct fc_falcon_pkt f = { .type = FC_PKT_NACK, .cid = 1, .rrbpsn = 100, .rdbpsn = 300,
				   .nack_psn = 300, .nack_code = FC_NACK_RNR, .rnr_timeout = 1 };
	uint64_t t;
	int n;

	(void)state;
	setup_pair(NULL);
	submit(A, FC_PKT_PUSH_DATA, 1, 0);
	pump(A, B, 0, drop_all, NULL, NULL);
	n = fc_falcon_encode(&f, buf, sizeof(buf));
	assert_int_equal(fc_pdl_rx(A->p, buf, (size_t)n, 0, 1 * US), 0); /* RNR */
	f.nack_code = FC_NACK_RESOURCE;
	n = fc_falcon_encode(&f, buf, sizeof(buf));
	assert_int_equal(fc_pdl_rx(A->p, buf, (size_t)n, 0, 2 * US), 0); /* then resource */
	t = fc_pdl_next_deadline(A->p);
	fire(A, t);
	assert_int_equal(pump(A, B, t, drop_all, NULL, NULL), 0); /* the retry is lost too */
	/* the retry armed its timer: another retransmission follows one RTO later */
	assert_int_equal(fc_pdl_next_deadline(A->p), t + cfg.rto_ns);
	fire(A, t + cfg.rto_ns);
	assert_int_equal(pump(A, B, t + cfg.rto_ns, NULL, NULL, NULL), 1);
	assert_int_equal(B->ngot, 1);
	teardown_pair();
}

/* Section 11: a Resync for a PSN the receiver holds received but unacknowledged (its ULP
 * never answered the push) acknowledges that PSN and tells the ULP, instead of being
 * dropped as a duplicate until the sender gives up on the connection. */
static void test_resync_over_held_push(void **state)
{
	uint64_t t = 0;

	(void)state;
	setup_pair(retx3);
	B->auto_ack = 0;
	submit(A, FC_PKT_PUSH_DATA, 4, 0);
	pump(A, B, t, NULL, NULL, NULL); /* B holds it */
	for (int i = 0; i < 4; i++) { /* B's ACKs do not acknowledge it: A retries, gives up */
		t = fc_pdl_next_deadline(A->p);
		fire(A, t);
		pump(A, B, t, NULL, NULL, NULL);
		fire(B, t + 8 * US);
		pump(B, A, t + 8 * US, NULL, NULL, NULL);
	}
	assert_int_equal(C(A)->resyncs_tx, 1);
	assert_int_equal(B->ngot, 2);
	assert_int_equal(B->got[1].type, FC_PKT_RESYNC);
	assert_int_equal(B->got[1].rsn, 4);
	assert_int_equal(fc_pdl_rx_state(B->p)->data.base, 301);
	assert_int_equal(A->ndone, 1);
	assert_int_equal(A->done[0].st, FC_TX_RETX_EXHAUSTED);
	assert_int_equal(A->fatal, 0);
	teardown_pair();
}

/* Ordered connection: a target's Pull Data is not held behind the initiator's gated
 * Pull Request (CR#2); only requests keep RSN order among themselves. */
static void test_ordered_pull_data_not_blocked(void **state)
{
	struct fc_falcon_pkt last;
	uint8_t lastbuf[4096];

	(void)state;
	setup_pair(one_req);
	submit(A, FC_PKT_PULL_REQ, 1, 0);
	submit(A, FC_PKT_PULL_REQ, 2, 1);   /* gated: RORC = ncwnd = 1 */
	submit(A, FC_PKT_PULL_DATA, 77, 2); /* a response to the peer: must go */
	assert_int_equal(pump(A, B, 0, drop_all, &last, lastbuf), 0);
	assert_int_equal(C(A)->tx_new, 2);
	assert_int_equal(last.type, FC_PKT_PULL_DATA);
	assert_int_equal(last.rsn, 77);
	teardown_pair();
}

/* Piggybacked ACKs: data flowing back carries the base PSNs and releases packets; with
 * nothing left to acknowledge, the coalescing timer stops (9.1.6). */
/* The CC info of our ACKs (7.7.1): the forward hop count and cumulative ECN count the
 * shell noted, and the receive buffer level; they reach the sender's RUE event. */
static void test_ack_cc_info(void **state)
{
	struct fc_falcon_pkt last;
	uint8_t lastbuf[4096];

	(void)state;
	setup_pair(NULL);
	submit(A, FC_PKT_PULL_DATA, 1, 0);
	fc_pdl_note_path(B->p, 3, 1);
	fc_pdl_note_path(B->p, 5, 1);
	fc_pdl_set_rxbuf_level(B->p, 17);
	pump(A, B, 0, NULL, NULL, NULL);
	fire(B, 8 * US);
	pump(B, A, 8 * US, NULL, &last, lastbuf);
	assert_int_equal(last.type, FC_PKT_BACK);
	assert_int_equal(last.hops, 5);
	assert_int_equal(last.ecn, 2);
	assert_int_equal(last.rxbuf, 17);
	assert_int_equal(A->last_ev.forward_hops, 5);
	assert_int_equal(A->last_ev.rx_buffer_level, 17);
	assert_int_equal(A->last_ev.ecn_accumulated, 2);
	fc_pdl_set_rxbuf_level(B->p, 200); /* clamped to 5 bits */
	submit(A, FC_PKT_PULL_DATA, 2, 1);
	pump(A, B, 10 * US, NULL, NULL, NULL);
	fire(B, 20 * US);
	pump(B, A, 20 * US, NULL, &last, lastbuf);
	assert_int_equal(last.rxbuf, 31);
	teardown_pair();
}

static void test_piggyback(void **state)
{
	(void)state;
	setup_pair(NULL);
	submit(A, FC_PKT_PULL_REQ, 1, 0);
	pump(A, B, 0, NULL, NULL, NULL);
	assert_int_equal(B->ngot, 1);
	submit(B, FC_PKT_PULL_DATA, 1, 1); /* the response carries rrbpsn = 101 */
	assert_int_equal(pump(B, A, 1 * US, NULL, NULL, NULL), 1);
	assert_int_equal(C(B)->backs_tx + C(B)->eacks_tx, 0);
	assert_int_equal(A->ndone, 1);
	assert_int_equal(C(A)->piggyback_acks, 1);
	teardown_pair();
}

/* Clean link: many packets, no loss: no retransmission, ACK count within what
 * coalescing allows (one per ack_coalesce_count packets, one per AR, plus timer flushes). */
static void test_clean_link_acks(void **state)
{
	int sent = 0;
	uint64_t t = 0;

	(void)state;
	setup_pair(NULL);
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 20; i++, sent++)
			submit(A, FC_PKT_PUSH_DATA, (uint32_t)sent + 1, sent % 64);
		t += 2 * US;
		pump(A, B, t, NULL, NULL, NULL);
		pump(B, A, t, NULL, NULL, NULL);
		t += 10 * US;
		fire(B, t);
		pump(B, A, t, NULL, NULL, NULL);
	}
	assert_int_equal(A->ndone, sent);
	assert_int_equal(C(A)->retx_timeout + C(A)->retx_early + C(A)->retx_own, 0);
	uint64_t acks = C(B)->backs_tx + C(B)->eacks_tx;
	/* per round of 20: at most 2 by count, 2 by AR (10 %), 1 timer flush */
	assert_true(acks <= 50 * 5);
	assert_true(acks >= 50);
	teardown_pair();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_666_early_retransmit),
		cmocka_unit_test(test_lost_ack_recovered_by_next_ack),
		cmocka_unit_test(test_lost_ack_recovered_by_timeout),
		cmocka_unit_test(test_max_retx_resync_fatal),
		cmocka_unit_test(test_give_up_needs_silence),
		cmocka_unit_test(test_stalled_rearms),
		cmocka_unit_test(test_exhausted_then_resync_acked),
		cmocka_unit_test(test_push_rnr),
		cmocka_unit_test(test_rnr_resets_retry_count),
		cmocka_unit_test(test_rnr_retx_not_early_on_same_unit_eack),
		cmocka_unit_test(test_ar_on_emptying_packet),
		cmocka_unit_test(test_gather_at_encode),
		cmocka_unit_test(test_nack_cie),
		cmocka_unit_test(test_nack_nre),
		cmocka_unit_test(test_nack_cid),
		cmocka_unit_test(test_nack_xlr),
		cmocka_unit_test(test_nack_resource_request_window),
		cmocka_unit_test(test_stale_and_bogus_acks),
		cmocka_unit_test(test_eack_own),
		cmocka_unit_test(test_gating),
		cmocka_unit_test(test_ring_grows_to_window),
		cmocka_unit_test(test_pacing),
		cmocka_unit_test(test_ar_policy),
		cmocka_unit_test(test_ordered_across_windows),
		cmocka_unit_test(test_ack_cc_info),
		cmocka_unit_test(test_rnr_then_resource_nack),
		cmocka_unit_test(test_resync_over_held_push),
		cmocka_unit_test(test_ordered_pull_data_not_blocked),
		cmocka_unit_test(test_piggyback),
		cmocka_unit_test(test_clean_link_acks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
