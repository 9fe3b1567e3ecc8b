/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rate update engine: Swift (spec 10.3), PLB (10.4), window guarding across the 24-bit
 * wrap (10.3.6), field widths (10.6.2).
 *
 * Expected values are written out here from the spec's formulas, with literal numbers:
 * windows in 1/1024 packet (32 packets = 32768), times in 131.072 ns units "ts" (25 us =
 * 191 ts, 1 us = 1000 / 131.072 ts, 250 us = 1907 ts, 1 ms = 7629 ts). The test links
 * without libm, so the square roots the flow-scaling formula needs are literals.
 * A small "connection" struct plays the PDL: it builds events from its state and applies
 * every result field back, as fc_pdl_cc_apply does.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rue.h"
#include "testutil.h"

#define M24 0xFFFFFFu
#define ONE 1024u            /* one packet in fixed point */
#define MIN_FP 11u           /* ceil(0.01 * 1024) */
#define MAX_FP (256u * 1024) /* 256 packets */
#define MIN_RTO 1907u        /* round(250000 / 131.072) */
#define INIT_RTO 7629u       /* round(1000000 / 131.072) */
#define BASE 191u            /* round(25000 / 131.072) */
#define HOP_TS (1000 / 131.072)
#define MAX_FS_TS (100000 / 131.072)
#define ISQRT_MIN_W 3.1622776601683795 /* 1 / sqrt(0.1) */
#define ISQRT_MAX_W 0.0625             /* 1 / sqrt(256) */

static uint64_t test_seed(void) { return fc_test_seed(0x2e5eedf1a7c0ffeeull); }

/* Fabric delay target by hand (10.3.4 with Swift's 1/sqrt flow scaling). */
static double hand_target(double base, double isqrt_w, unsigned hops)
{
	double alpha = MAX_FS_TS / (ISQRT_MIN_W - ISQRT_MAX_W);
	double beta = -alpha * ISQRT_MAX_W;
	double fs = alpha * isqrt_w + beta;

	if (fs < 0)
		fs = 0;
	if (fs > MAX_FS_TS)
		fs = MAX_FS_TS;
	return base + fs + hops * HOP_TS;
}

/* ---- a connection's CC state, as the PDL keeps it ---- */

struct conn {
	uint32_t cid, fcwnd_fp, ncwnd, ipg, rto, fmark, nmark, base, dstate, rstate, meta;
	uint8_t dir, opaque;
};

static void conn_init(struct conn *c, uint32_t cid)
{
	memset(c, 0, sizeof(*c));
	c->cid = cid;
	c->fcwnd_fp = 32 * ONE;
	c->ncwnd = 64;
	c->dir = 1; /* increase */
	c->base = BASE;
}

static struct fc_cc_event ev_state(const struct conn *c, uint8_t type)
{
	struct fc_cc_event e;

	memset(&e, 0, sizeof(e));
	e.cid = c->cid;
	e.type = type;
	e.fcwnd_fp = c->fcwnd_fp;
	e.ncwnd = c->ncwnd;
	e.inter_packet_gap_ts = c->ipg;
	e.retransmit_timeout_ts = c->rto;
	e.fabric_window_time_marker_ts = c->fmark;
	e.nic_window_time_marker_ts = c->nmark;
	e.ncwnd_direction = c->dir;
	e.base_delay_target_ts = c->base;
	e.delay_state_ts = c->dstate;
	e.rtt_state_ts = c->rstate;
	e.cc_opaque = c->opaque;
	e.cc_metadata = c->meta;
	e.delay_select = 1; /* fabric */
	return e;
}

/* An ACK at t4 = now with the given rtt (t4 - t1) and fabric delay ((t4-t1)-(t3-t2)). */
static struct fc_cc_event ack_ev(const struct conn *c, uint32_t now, uint32_t rtt, uint32_t delay,
				 uint16_t nacked, uint8_t level)
{
	struct fc_cc_event e = ev_state(c, 0);

	e.t4_ts = now & M24;
	e.t1_ts = (now - rtt) & M24;
	e.t2_ts = (e.t1_ts + 3) & M24;
	e.t3_ts = (e.t2_ts + (rtt - delay)) & M24;
	e.num_packets_acked = nacked;
	e.rx_buffer_level = level;
	return e;
}

static struct fc_cc_event retx_ev(const struct conn *c, uint8_t retx_count)
{
	struct fc_cc_event e = ev_state(c, 2);

	e.retx_count = retx_count;
	return e;
}

static void apply(struct conn *c, const struct fc_cc_result *r)
{
	c->fcwnd_fp = r->fcwnd_fp;
	c->ncwnd = r->ncwnd;
	c->ipg = r->inter_packet_gap_ts;
	c->rto = r->retransmit_timeout_ts;
	c->fmark = r->fabric_window_time_marker_ts;
	c->nmark = r->nic_window_time_marker_ts;
	c->dir = r->ncwnd_direction;
	c->base = r->base_delay_target_ts;
	c->dstate = r->delay_state_ts;
	c->rstate = r->rtt_state_ts;
	c->opaque = r->cc_opaque;
	c->meta = r->cc_metadata;
}

static struct fc_cc_result run(struct fc_rue *r, struct conn *c, const struct fc_cc_event *e,
			       uint32_t now)
{
	struct fc_cc_result res;

	assert_int_equal(fc_rue_process(r, e, now, &res), 0);
	apply(c, &res);
	return res;
}

static struct fc_rue *rue_default(void)
{
	struct fc_rue_cfg cfg;
	struct fc_rue *r;

	fc_rue_cfg_default(&cfg);
	r = fc_rue_new(&cfg, 16);
	assert_non_null(r);
	return r;
}

/* ---- configuration ---- */

static void test_cfg_defaults(void **state)
{
	struct fc_rue_cfg c;

	(void)state;
	fc_rue_cfg_default(&c);
	assert_true(c.max_fcwnd == 256.0 && c.min_fcwnd == 0.01);
	assert_true(c.fabric_additive_increment == 1.0 && c.fabric_md_factor == 0.8 &&
		    c.max_fabric_md == 0.5);
	assert_int_equal(c.base_delay_target_ns, 25000);
	assert_int_equal(c.max_ncwnd, 256);
	assert_int_equal(c.min_ncwnd, 1);
	assert_true(c.nic_additive_increment == 1.0 && c.nic_md_factor == 0.8 && c.max_nic_md == 0.5);
	assert_int_equal(c.target_rx_buffer_level, 15);
	assert_int_equal(c.plb_enable, 0);
	assert_true(c.plb_target_delay_multiplier == 1.01 && c.plb_congestion_threshold == 0.5);
	assert_int_equal(c.plb_attempt_threshold, 5);
	assert_true(c.rtt_smoothing_alpha == 0.75 && c.delay_smoothing_alpha == 0.0);
	assert_int_equal(c.topology_scaling_per_hop_ns, 1000);
	assert_true(c.retransmit_timeout_scalar == 2.0);
	assert_int_equal(c.retransmit_limit, 3);
	assert_int_equal(c.min_rto_ns, 250000);
	assert_int_equal(c.initial_rto_ns, 1000000);
	assert_true(c.min_flow_scaling_window == 0.1 && c.max_flow_scaling_window == 256.0);
	assert_int_equal(c.max_flow_scaling_ns, 100000);
	assert_true(c.initial_fcwnd == 32.0);
	assert_int_equal(c.initial_ncwnd, 64);
}

static void expect_bad_cfg(const struct fc_rue_cfg *c, uint32_t max_conns)
{
	errno = 0;
	assert_null(fc_rue_new(c, max_conns));
	assert_int_equal(errno, EINVAL);
}

static void test_cfg_rejected(void **state)
{
	struct fc_rue_cfg c, d;
	struct fc_rue *r;

	(void)state;
	fc_rue_cfg_default(&d);
	expect_bad_cfg(NULL, 1);
	expect_bad_cfg(&d, (1u << 24) + 1);
	c = d, c.min_fcwnd = 300;
	expect_bad_cfg(&c, 1);
	c = d, c.max_fcwnd = 2048; /* 11 integer bits: at most 2047.999 */
	expect_bad_cfg(&c, 1);
	c = d, c.min_fcwnd = 0;
	expect_bad_cfg(&c, 1);
	c = d, c.max_ncwnd = 2048;
	expect_bad_cfg(&c, 1);
	c = d, c.min_ncwnd = 0;
	expect_bad_cfg(&c, 1);
	c = d, c.rtt_smoothing_alpha = 1.0;
	expect_bad_cfg(&c, 1);
	c = d, c.max_fabric_md = 1.5;
	expect_bad_cfg(&c, 1);
	c = d, c.min_flow_scaling_window = 256;
	expect_bad_cfg(&c, 1);
	c = d, c.retransmit_limit = 0;
	expect_bad_cfg(&c, 1);
	c = d, c.min_rto_ns = 0;
	expect_bad_cfg(&c, 1);
	c = d, c.target_rx_buffer_level = 32;
	expect_bad_cfg(&c, 1);
	c = d, c.initial_fcwnd = 0.001;
	expect_bad_cfg(&c, 1);
	/* 0 connections is fine: PLB then tracks nothing */
	r = fc_rue_new(&d, 0);
	assert_non_null(r);
	fc_rue_free(r);
	fc_rue_free(NULL);
}

/* ---- pure helpers ---- */

static void test_delay_select(void **state)
{
	struct fc_cc_event e;

	(void)state;
	memset(&e, 0, sizeof(e));
	e.t1_ts = 100, e.t2_ts = 1000, e.t3_ts = 1030, e.t4_ts = 150;
	e.delay_select = 0; /* full: t4 - t1 */
	assert_int_equal(fc_rue_delay_ts(&e), 50);
	e.delay_select = 1; /* fabric: (t4 - t1) - (t3 - t2) */
	assert_int_equal(fc_rue_delay_ts(&e), 20);
	e.delay_select = 2; /* forward: t2 - t1 */
	assert_int_equal(fc_rue_delay_ts(&e), 900);
	e.delay_select = 3; /* reverse: t4 - t3, modulo 2^24 */
	assert_int_equal(fc_rue_delay_ts(&e), 0x1000000 - 880);
	assert_int_equal(fc_rue_rtt_ts(&e), 50);

	/* across the wrap */
	e.t1_ts = 0xFFFFF0, e.t2_ts = 0xFFFFF8, e.t3_ts = 0x000004, e.t4_ts = 0x000010;
	assert_int_equal(fc_rue_rtt_ts(&e), 0x20);
	e.delay_select = 1;
	assert_int_equal(fc_rue_delay_ts(&e), 0x20 - 12);
	/* remote hold longer than the round trip: 0, not a huge modular value */
	e.t3_ts = 0x000030;
	assert_int_equal(fc_rue_delay_ts(&e), 0);
}

static void test_smooth(void **state)
{
	(void)state;
	assert_int_equal(fc_rue_smooth(0.75, 0, 200), 200);  /* no sample yet */
	assert_int_equal(fc_rue_smooth(0.75, 100, 200), 125); /* 100*.75 + 200*.25 */
	assert_int_equal(fc_rue_smooth(0.0, 100, 200), 200);  /* alpha 0: the sample */
	assert_int_equal(fc_rue_smooth(0.75, 101, 102), 101); /* 101.25 */
	assert_int_equal(fc_rue_smooth(0.5, 3, 4), 4);        /* 3.5 rounds up */
	assert_int_equal(fc_rue_smooth(0.75, M24, M24), M24);
}

static void test_target_delay(void **state)
{
	static const struct { uint32_t fp; double isqrt; } w[] = {
		{ 256, 2.0 },                 /* 0.25 */
		{ 1024, 1.0 },                /* 1 */
		{ 2048, 0.7071067811865476 }, /* 2 */
		{ 4096, 0.5 },
		{ 16384, 0.25 },
		{ 32768, 0.17677669529663687 },
		{ 65536, 0.125 },
		{ 262144, 0.0625 },           /* 256: no flow scaling */
	};
	static const unsigned hops[] = { 0, 1, 5, 15 };
	struct fc_rue *r = rue_default();

	(void)state;
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		for (size_t h = 0; h < 4; h++) {
			double got = fc_rue_target_delay(r, BASE, w[i].fp, hops[h]);
			double exp = hand_target(BASE, w[i].isqrt, hops[h]);

			assert_true(got > exp - 1 && got < exp + 1);
		}
	/* the ends of the flow-scaling range: 0 at 256, max_flow_scaling at <= 0.1 */
	assert_true(fc_rue_target_delay(r, BASE, 262144, 0) < BASE + 0.01);
	assert_true(fc_rue_target_delay(r, BASE, 10, 0) > BASE + MAX_FS_TS - 0.01);
	assert_true(fc_rue_target_delay(r, BASE, 10, 0) < BASE + MAX_FS_TS + 0.01);
	/* 15 hops of 1 us, the base from the config when the event gives 0 */
	assert_true(fc_rue_target_delay(r, 0, 262144, 15) > BASE + 15 * HOP_TS - 0.01);
	assert_true(fc_rue_target_delay(r, 0, 262144, 15) < BASE + 15 * HOP_TS + 0.01);
	assert_true(fc_rue_target_delay(r, 500, 262144, 0) > 499.99);
	fc_rue_free(r);
}

static void test_guard_helpers(void **state)
{
	(void)state;
	/* HasRttElapsed: (now - marker) mod 2^24 >= rtt */
	assert_true(fc_rue_rtt_elapsed(1000, 900, 100));
	assert_false(fc_rue_rtt_elapsed(1000, 901, 100));
	assert_true(fc_rue_rtt_elapsed(5, 0xFFFFF0, 21)); /* 21 across the wrap */
	assert_false(fc_rue_rtt_elapsed(5, 0xFFFFF0, 22));
	/* the strawman failure: 2^24 + 50 later looks like 50 */
	assert_false(fc_rue_rtt_elapsed((1000 + 0x1000000 + 50) & M24, 1000, 100));
	/* UpdateTimeMarker: more than an RTT old -> now - rtt; else unchanged */
	assert_int_equal(fc_rue_update_marker(1000, 500, 100), 900);
	assert_int_equal(fc_rue_update_marker(1000, 900, 100), 900);
	assert_int_equal(fc_rue_update_marker(1000, 950, 100), 950);
	assert_int_equal(fc_rue_update_marker(5, 0xFFFFF0, 10), 0xFFFFFB);
	assert_int_equal(fc_rue_update_marker(5, 0xFFFFF0, 30), 0xFFFFF0);
}

static void test_ipg(void **state)
{
	(void)state;
	assert_int_equal(fc_rue_ipg(1025, 100), 0);      /* fcwnd > 1: no pacing */
	assert_int_equal(fc_rue_ipg(32 * 1024, 100), 0);
	assert_int_equal(fc_rue_ipg(1024, 100), 100);    /* rtt / 1 */
	assert_int_equal(fc_rue_ipg(512, 100), 200);     /* rtt / 0.5 */
	assert_int_equal(fc_rue_ipg(256, 30), 120);      /* rtt / 0.25 */
	assert_int_equal(fc_rue_ipg(11, 1000), 93091);   /* 1000 * 1024 / 11 = 93090.9 */
	assert_int_equal(fc_rue_ipg(11, M24), 0xFFFFF);  /* saturated at 20 bits */
	assert_int_equal(fc_rue_ipg(512, 0), 0);
}

static void test_rto(void **state)
{
	struct fc_rue *r = rue_default();

	(void)state;
	assert_int_equal(fc_rue_rto(r, 100), MIN_RTO);   /* 2 * 100 < 250 us floor */
	assert_int_equal(fc_rue_rto(r, 953), MIN_RTO);   /* 1906 */
	assert_int_equal(fc_rue_rto(r, 954), MIN_RTO + 1); /* 1908 */
	assert_int_equal(fc_rue_rto(r, 2000), 4000);     /* 2 x smoothed rtt */
	assert_int_equal(fc_rue_rto(r, 0), INIT_RTO);    /* no sample yet: 1 ms */
	assert_int_equal(fc_rue_rto(r, M24), M24);       /* saturated at 24 bits */
	fc_rue_free(r);
}

/* ---- 10.3.1 fabric window ---- */

/* A window's worth of ACKs, one packet each, below target: fcwnd grows by ~AI = 1. */
static void test_ai_per_rtt(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 50000, exp_fp = 32 * ONE;

	(void)state;
	conn_init(&c, 7);
	for (int i = 0; i < 32; i++) {
		struct fc_cc_event e = ack_ev(&c, now, 30, 28, 1, 0);
		double w = exp_fp / 1024.0;

		run(r, &c, &e, now);
		exp_fp = (uint32_t)((w + 1.0 / w) * 1024 + 0.5); /* fcwnd += ai * 1 / fcwnd */
		assert_int_equal(c.fcwnd_fp, exp_fp);
		now += 1;
	}
	assert_true(c.fcwnd_fp > 32 * ONE + 1000 && c.fcwnd_fp < 32 * ONE + 1050);
	/* increases move the fabric marker to now - rtt once it is an RTT old (10.3.6) */
	assert_int_equal(c.fmark, (now - 1 - 30) & M24);

	/* fcwnd < 1: fcwnd += ai * num_packets_acked */
	conn_init(&c, 7);
	c.fcwnd_fp = 512;
	{
		struct fc_cc_event e = ack_ev(&c, now, 30, 28, 3, 0);

		run(r, &c, &e, now);
	}
	assert_int_equal(c.fcwnd_fp, 512 + 3 * 1024);
	fc_rue_free(r);
}

/* MD proportional to the excess delay (uncapped), by hand. */
static void test_md_proportional(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 100000;
	struct fc_cc_event e;
	double target = hand_target(BASE, 0.17677669529663687, 2); /* fcwnd 32, 2 hops */
	double f = 1 - 0.8 * (400 - target) / 400;
	uint32_t exp_fp = (uint32_t)(32768 * f);

	(void)state;
	assert_true(f > 0.5); /* not capped */
	conn_init(&c, 1);
	c.fmark = now - 5000;
	e = ack_ev(&c, now, 500, 400, 4, 0);
	e.forward_hops = 2;
	run(r, &c, &e, now);
	assert_true(c.fcwnd_fp + 1 >= exp_fp && c.fcwnd_fp <= exp_fp + 1);
	assert_int_equal(c.fmark, now); /* decreased: marker = now */
	assert_int_equal(c.dstate, 400);
	assert_int_equal(c.rstate, 500);

	fc_rue_free(r);

	/* delay exactly at the target: "smoothed_delay <= delay_target" increases. Without
	 * flow scaling (max_flow_scaling 0) and hops, target = base = 191 exactly. */
	{
		struct fc_rue_cfg cfg;

		fc_rue_cfg_default(&cfg);
		cfg.max_flow_scaling_ns = 0;
		r = fc_rue_new(&cfg, 1);
		assert_non_null(r);
	}
	conn_init(&c, 1);
	c.fmark = now - 5000;
	e = ack_ev(&c, now, 500, 191, 32, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, 33 * ONE); /* 32 + 1 * 32 / 32 */
	e = ack_ev(&c, now, 500, 192, 1, 0);
	run(r, &c, &e, now);
	/* 33 * (1 - 0.8 * 1/192), rounded down */
	assert_int_equal(c.fcwnd_fp, (uint32_t)(33792 * (1 - 0.8 * 1.0 / 192)));
	fc_rue_free(r);
	r = rue_default();

	/* at fcwnd 256 flow scaling is 0 too, so target = 191 with no hops */
	conn_init(&c, 1);
	c.fcwnd_fp = MAX_FP;
	c.fmark = now - 5000;
	e = ack_ev(&c, now, 500, 191, 1, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, MAX_FP); /* increase, clamped at max */
	e = ack_ev(&c, now, 500, 192, 1, 0);
	run(r, &c, &e, now);
	/* 1 - 0.8 * 1/192 */
	assert_int_equal(c.fcwnd_fp, (uint32_t)(262144 * (1 - 0.8 * 1.0 / 192)));
	fc_rue_free(r);
}

/* MD capped by max MD, at most once per RTT. */
static void test_md_capped_once_per_rtt(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 200000, rtt = 10030;
	struct fc_cc_event e;

	(void)state;
	conn_init(&c, 1);
	c.fmark = now - 20000;
	e = ack_ev(&c, now, rtt, 10000, 4, 0); /* 1 - 0.8 * (10000-t)/10000 < 0.5 */
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, 16384); /* 32 * (1 - 0.5) */
	assert_int_equal(c.fmark, now);

	/* within the RTT: no second decrease, marker stays */
	now += rtt - 1;
	e = ack_ev(&c, now, rtt, 10000, 4, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, 16384);
	assert_int_equal(c.fmark, now - (rtt - 1));

	/* an RTT after the decrease: the second one */
	now += 1;
	e = ack_ev(&c, now, rtt, 10000, 4, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, 8192);
	assert_int_equal(c.fmark, now);
	fc_rue_free(r);
}

/* fcwnd time marker rules of 10.3.6 and the clamp. */
static void test_fcwnd_marker_rules(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 300000;
	struct fc_cc_event e;

	(void)state;
	/* increase, marker within an RTT: unchanged */
	conn_init(&c, 1);
	c.fmark = now - 10;
	e = ack_ev(&c, now, 30, 28, 1, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.fmark, now - 10);
	/* increase, marker older than an RTT: now - rtt */
	c.fmark = now - 31;
	e = ack_ev(&c, now, 30, 28, 1, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.fmark, now - 30);
	/* unchanged at max: treated as increased, i.e. trails */
	c.fcwnd_fp = MAX_FP;
	c.fmark = now - 500;
	e = ack_ev(&c, now, 30, 28, 5, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, MAX_FP);
	assert_int_equal(c.fmark, now - 30);
	/* unchanged at min (decrease blocked by the guard): treated as decreased -> now.
	 * (At tiny windows flow scaling lifts the target to ~954 ts: delay 3900 is above.) */
	c.fcwnd_fp = MIN_FP;
	c.fmark = now - 5;
	e = ack_ev(&c, now, 4000, 3900, 1, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, MIN_FP);
	assert_int_equal(c.fmark, now);
	/* a decrease below min stops at min = ceil(0.01 * 1024) */
	c.fcwnd_fp = 15;
	c.fmark = now - 5000;
	e = ack_ev(&c, now, 4000, 3900, 1, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, MIN_FP);
	assert_true(c.fcwnd_fp / 1024.0 >= 0.01);
	fc_rue_free(r);
}

/* ---- 10.3.1 NIC window ---- */

static void test_ncwnd_rules(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 400000, rtt = 100;
	struct fc_cc_event e;

	(void)state;
	conn_init(&c, 2);
	/* below target, last change an increase, within an RTT: no change */
	c.nmark = now - 50;
	e = ack_ev(&c, now, rtt, 20, 1, 3);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 64);
	assert_int_equal(c.nmark, now - 50);
	assert_int_equal(c.dir, 1);
	/* below target, an RTT elapsed: +1, marker now, direction increase */
	c.nmark = now - 100;
	e = ack_ev(&c, now, rtt, 20, 1, 3);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 65);
	assert_int_equal(c.nmark, now);
	assert_int_equal(c.dir, 1);
	/* at/above target within an RTT: no decrease */
	now += 10;
	e = ack_ev(&c, now, rtt, 20, 1, 20);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 65);
	assert_int_equal(c.nmark, now - 10);
	/* above target after an RTT: 65 * max(1 - 0.8 * (20-15)/20, 0.5) = 52 */
	now += 90;
	e = ack_ev(&c, now, rtt, 20, 1, 20);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 52);
	assert_int_equal(c.nmark, now);
	assert_int_equal(c.dir, 0);
	/* below target right after a decrease: increase allowed at once */
	now += 1;
	e = ack_ev(&c, now, rtt, 20, 1, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 53);
	assert_int_equal(c.dir, 1);
	assert_int_equal(c.nmark, now);
	/* ... but not twice in the same RTT */
	now += 1;
	e = ack_ev(&c, now, rtt, 20, 1, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 53);
	/* level 31: 1 - 0.8 * 16/31 = 0.587...; 64 * that = 37.6 -> 37 */
	c.ncwnd = 64;
	c.nmark = now - 1000;
	e = ack_ev(&c, now, rtt, 20, 1, 31);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 37);
	/* level == target: the formula leaves ncwnd as is -> marker trails, dir kept */
	c.ncwnd = 64;
	c.dir = 1;
	c.nmark = now - 1000;
	e = ack_ev(&c, now, rtt, 20, 1, 15);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 64);
	assert_int_equal(c.nmark, now - rtt);
	assert_int_equal(c.dir, 1);
	/* at min, decrease attempted: treated as decreased */
	c.ncwnd = 1;
	c.nmark = now - 1000;
	e = ack_ev(&c, now, rtt, 20, 1, 31);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 1);
	assert_int_equal(c.nmark, now);
	assert_int_equal(c.dir, 0);
	fc_rue_free(r);
}

static void test_ncwnd_md_cap(void **state)
{
	struct fc_rue_cfg cfg;
	struct fc_rue *r;
	struct conn c;
	uint32_t now = 500000;
	struct fc_cc_event e;

	(void)state;
	fc_rue_cfg_default(&cfg);
	cfg.max_nic_md = 0.3;
	r = fc_rue_new(&cfg, 4);
	assert_non_null(r);
	conn_init(&c, 2);
	c.nmark = now - 1000;
	e = ack_ev(&c, now, 100, 20, 1, 31); /* max(0.587, 1 - 0.3) = 0.7: 44.8 -> 44 */
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 44);
	fc_rue_free(r);
}

/* At max ncwnd, an event blocked by the guard does not re-stamp the NIC marker, so a
 * decrease comes one RTT after the last increase even with events every RTT/2. */
static void test_ncwnd_at_max(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 600000, rtt = 100, t0;
	struct fc_cc_event e;

	(void)state;
	conn_init(&c, 3);
	c.ncwnd = 256;
	c.nmark = now - 1000;
	e = ack_ev(&c, now, rtt, 20, 1, 0); /* increase tried, clamped: counts as increase */
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 256);
	assert_int_equal(c.nmark, now);
	assert_int_equal(c.dir, 1);
	t0 = now;
	now += rtt / 2;
	e = ack_ev(&c, now, rtt, 20, 1, 25); /* blocked by the guard */
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 256);
	assert_int_equal(c.nmark, t0);
	now += rtt / 2;
	e = ack_ev(&c, now, rtt, 20, 1, 25); /* 256 * (1 - 0.8 * 10/25) = 174.08 */
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 174);
	assert_int_equal(c.dir, 0);
	fc_rue_free(r);
}

/* ---- 10.3.3 NACK, resource exhaustion ---- */

static void test_nack_resource(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 700000, rtt = 100;
	struct fc_cc_event e;

	(void)state;
	conn_init(&c, 4);
	c.nmark = now - 10; /* within an RTT, but the last change was an increase */
	e = ack_ev(&c, now, rtt, 20, 2, 0);
	e.type = 1;
	e.nack_code = 1; /* FC_NACK_RESOURCE */
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 32); /* 64 * (1 - 0.5) */
	assert_int_equal(c.nmark, now);
	assert_int_equal(c.dir, 0);
	/* fcwnd as for an ACK: below target, +1 * 2 / 32 */
	assert_int_equal(c.fcwnd_fp, (uint32_t)((32 + 2.0 / 32) * 1024 + 0.5));
	/* again within the RTT, last change a decrease: no change */
	now += 50;
	e = ack_ev(&c, now, rtt, 20, 0, 0);
	e.type = 1;
	e.nack_code = 1;
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 32);
	assert_int_equal(c.nmark, now - 50);
	/* after an RTT: again */
	now += 50;
	e = ack_ev(&c, now, rtt, 20, 0, 0);
	e.type = 1;
	e.nack_code = 1;
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 16);
	/* another NACK code is handled as an ACK: below the buffer target, after a
	 * decrease -> +1 */
	now += 1;
	e = ack_ev(&c, now, rtt, 20, 0, 0);
	e.type = 1;
	e.nack_code = 2; /* RNR */
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 17);
	assert_int_equal(c.dir, 1);
	/* at min: stays, treated as decreased */
	c.ncwnd = 1;
	c.dir = 1;
	e = ack_ev(&c, now, rtt, 20, 0, 0);
	e.type = 1;
	e.nack_code = 1;
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 1);
	assert_int_equal(c.dir, 0);
	fc_rue_free(r);
}

/* ---- 10.3.2 retransmit ---- */

static void test_retransmit(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 800000;
	struct fc_cc_event e;
	struct fc_cc_result res;

	(void)state;
	conn_init(&c, 5);
	c.rstate = 100;
	c.dstate = 77;
	c.fmark = now - 1000;
	c.nmark = now - 1000;
	/* first retransmit of a run, an RTT elapsed: fcwnd * (1 - max MD) */
	e = retx_ev(&c, 1);
	res = run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, 16384);
	assert_int_equal(c.fmark, now);
	assert_int_equal(c.opaque, 1);
	assert_int_equal(res.inter_packet_gap_ts, 0);
	assert_int_equal(res.retransmit_timeout_ts, MIN_RTO); /* max(2 * 100, 1907) */
	assert_int_equal(c.ncwnd, 64);                     /* NIC window untouched */
	assert_int_equal(c.dir, 1);
	assert_int_equal(c.nmark, now - 100);              /* only trails */
	assert_int_equal(c.rstate, 100);
	assert_int_equal(c.dstate, 77);
	/* successive retransmits of other packets: no further cut (a burst is one episode) */
	for (int i = 0; i < 4; i++) {
		now += 500;
		e = retx_ev(&c, 1);
		run(r, &c, &e, now);
		assert_int_equal(c.fcwnd_fp, 16384);
		assert_int_equal(c.opaque, i < 1 ? 2 : 3); /* saturates at 3 */
	}
	/* a packet retransmitted retransmit_limit (3) times: fcwnd = min */
	now += 500;
	e = retx_ev(&c, 3);
	res = run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, MIN_FP);
	assert_int_equal(c.fmark, now);
	assert_int_equal(res.inter_packet_gap_ts, 9309); /* 100 * 1024 / 11 */
	/* an ACK ends the run */
	e = ack_ev(&c, now, 100, 20, 1, 0);
	run(r, &c, &e, now);
	assert_int_equal(c.opaque, 0);
	fc_rue_free(r);
}

static void test_retransmit_guarded(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 900000;
	struct fc_cc_event e;
	struct fc_cc_result res;

	(void)state;
	/* first retransmit within an RTT of the last decrease: no cut, marker kept */
	conn_init(&c, 6);
	c.rstate = 100;
	c.fmark = now - 50;
	e = retx_ev(&c, 1);
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, 32768);
	assert_int_equal(c.fmark, now - 50);
	assert_int_equal(c.opaque, 1);
	/* the limit applies regardless of the guard */
	e = retx_ev(&c, 7);
	run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, MIN_FP);
	/* no RTT sample yet: the guard is open, RTO is the initial 1 ms */
	conn_init(&c, 6);
	c.fmark = now;
	e = retx_ev(&c, 0);
	res = run(r, &c, &e, now);
	assert_int_equal(c.fcwnd_fp, 16384);
	assert_int_equal(res.retransmit_timeout_ts, INIT_RTO);
	assert_int_equal(res.rtt_state_ts, 0);
	fc_rue_free(r);
}

/* ---- smoothing and RTO through events ---- */

static void test_ack_smoothing_rto(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 1000000;
	struct fc_cc_event e;
	struct fc_cc_result res;

	(void)state;
	conn_init(&c, 8);
	e = ack_ev(&c, now, 2000, 40, 1, 0); /* first sample taken as is */
	res = run(r, &c, &e, now);
	assert_int_equal(res.rtt_state_ts, 2000);
	assert_int_equal(res.delay_state_ts, 40);
	assert_int_equal(res.retransmit_timeout_ts, 4000);
	e = ack_ev(&c, now, 2400, 60, 1, 0); /* 2000 * .75 + 2400 * .25; delay unsmoothed */
	res = run(r, &c, &e, now);
	assert_int_equal(res.rtt_state_ts, 2100);
	assert_int_equal(res.delay_state_ts, 60);
	assert_int_equal(res.retransmit_timeout_ts, 4200);
	e = ack_ev(&c, now, 30, 20, 1, 0); /* 2100 * .75 + 30 * .25 = 1582.5 -> 1583 */
	res = run(r, &c, &e, now);
	assert_int_equal(res.rtt_state_ts, 1583);
	assert_int_equal(res.retransmit_timeout_ts, 3166);
	fc_rue_free(r);
}

/* Pacing through an event: fcwnd < 1 -> ipg = smoothed rtt / fcwnd. */
static void test_pacing_event(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	uint32_t now = 1100000;
	struct fc_cc_event e;
	struct fc_cc_result res;

	(void)state;
	conn_init(&c, 9);
	c.fcwnd_fp = 256; /* 0.25 */
	e = ack_ev(&c, now, 30, 20, 0, 0); /* nothing acked: fcwnd stays */
	res = run(r, &c, &e, now);
	assert_int_equal(res.fcwnd_fp, 256);
	assert_int_equal(res.inter_packet_gap_ts, 120); /* 30 / 0.25 */
	c.fcwnd_fp = 2048;
	e = ack_ev(&c, now, 30, 20, 0, 0);
	res = run(r, &c, &e, now);
	assert_int_equal(res.inter_packet_gap_ts, 0);
	fc_rue_free(r);
}

/* ---- 10.3.6 window guarding across the 24-bit wrap ---- */

/* Decrease at T0, (optionally) increase events every 4e6 ts, decrease at T0 + 2^24 + 500.
 * Returns fcwnd after the last event; *before is fcwnd just before it. */
static uint32_t wrap_run(int with_increases, uint32_t *before)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	const uint32_t rtt = 1000, t0 = 1000;
	struct fc_cc_event e;

	conn_init(&c, 10);
	c.fmark = (t0 - 5000) & M24;
	e = ack_ev(&c, t0, rtt, 900, 1, 15);
	run(r, &c, &e, t0);
	assert_int_equal(c.fcwnd_fp, 16384); /* capped at max MD */
	assert_int_equal(c.fmark, t0);
	if (with_increases)
		for (uint32_t k = 1; k <= 4; k++) {
			uint32_t now = (t0 + k * 4000000u) & M24;

			e = ack_ev(&c, now, rtt, 50, 1, 15);
			run(r, &c, &e, now);
			assert_int_equal(c.fmark, (now - rtt) & M24);
		}
	*before = c.fcwnd_fp;
	{
		uint32_t now = (uint32_t)((t0 + 0x1000000ull + 500) & M24);

		e = ack_ev(&c, now, rtt, 900, 1, 15);
		run(r, &c, &e, now);
	}
	fc_rue_free(r);
	return c.fcwnd_fp;
}

static void test_wraparound(void **state)
{
	uint32_t before, after;

	(void)state;
	/* with increase events in between, the second decrease takes effect */
	after = wrap_run(1, &before);
	assert_true(before > 16384);
	assert_int_equal(after, before / 2); /* max MD again, rounded down */
	/* without them the marker looks 500 ts old: the strawman suppression */
	after = wrap_run(0, &before);
	assert_int_equal(before, 16384);
	assert_int_equal(after, 16384);
}

/* The same for ncwnd: decreases 2^24 apart, unchanged-window events in between. */
static void test_wraparound_nic(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	const uint32_t rtt = 1000, t0 = 77;
	struct fc_cc_event e;
	uint32_t now;

	(void)state;
	conn_init(&c, 11);
	c.nmark = (t0 - 5000) & M24;
	e = ack_ev(&c, t0, rtt, 20, 1, 20); /* 64 * 0.8 = 51.2 -> 51 */
	run(r, &c, &e, t0);
	assert_int_equal(c.ncwnd, 51);
	for (uint32_t k = 1; k <= 4; k++) { /* level == target: no change, marker trails */
		now = (t0 + k * 4000000u) & M24;
		e = ack_ev(&c, now, rtt, 20, 1, 15);
		run(r, &c, &e, now);
		assert_int_equal(c.ncwnd, 51);
		assert_int_equal(c.nmark, (now - rtt) & M24);
	}
	now = (uint32_t)((t0 + 0x1000000ull + 500) & M24);
	e = ack_ev(&c, now, rtt, 20, 1, 20);
	run(r, &c, &e, now);
	assert_int_equal(c.ncwnd, 40); /* 51 * 0.8 = 40.8 */
	fc_rue_free(r);
}

/* ---- 10.4 PLB ---- */

static struct fc_rue *rue_plb(uint32_t max_conns)
{
	struct fc_rue_cfg cfg;
	struct fc_rue *r;

	fc_rue_cfg_default(&cfg);
	cfg.plb_enable = 1;
	r = fc_rue_new(&cfg, max_conns);
	assert_non_null(r);
	return r;
}

/* One ACK event acking n packets of a connection with fcwnd 4, ncwnd 64 (old window
 * 4); congested: delay far above target. The connection state is not applied back, so
 * the window (and the RTT boundary) stays fixed. Returns randomize_path. */
static int plb_ack(struct fc_rue *r, uint32_t cid, uint16_t n, int congested, uint8_t type)
{
	struct conn c;
	struct fc_cc_event e;
	struct fc_cc_result res;

	conn_init(&c, cid);
	c.fcwnd_fp = 4 * ONE;
	e = ack_ev(&c, 2000000, 3000, congested ? 2500 : 20, n, 0);
	e.type = type;
	assert_int_equal(fc_rue_process(r, &e, 2000000, &res), 0);
	return res.randomize_path;
}

static void test_plb_reroute(void **state)
{
	struct fc_rue *r = rue_plb(8);
	struct fc_rue_stats st;

	(void)state;
	/* 4 congested RTTs: nothing; the 5th reroutes */
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb_ack(r, 1, 4, 1, 0), 0);
	assert_int_equal(plb_ack(r, 1, 4, 1, 0), 1);
	/* counter reset after the reroute */
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb_ack(r, 1, 4, 1, 0), 0);
	assert_int_equal(plb_ack(r, 1, 4, 1, 0), 1);
	/* an uncongested RTT resets the count */
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb_ack(r, 1, 4, 1, 0), 0);
	assert_int_equal(plb_ack(r, 1, 4, 0, 0), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb_ack(r, 1, 4, 1, 0), 0);
	assert_int_equal(plb_ack(r, 1, 4, 1, 0), 1);
	/* an RTT is old_window packets: 2 + 2 acked, half congested -> congested RTT
	 * (frac 0.5 >= 0.5); 1 of 4 congested -> not */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(plb_ack(r, 1, 2, 1, 0), 0);
		assert_int_equal(plb_ack(r, 1, 2, 0, 0), 0);
	}
	assert_int_equal(plb_ack(r, 1, 2, 1, 0), 0);
	assert_int_equal(plb_ack(r, 1, 2, 0, 0), 1);
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb_ack(r, 1, 4, 1, 0), 0);
	assert_int_equal(plb_ack(r, 1, 1, 1, 0), 0);
	assert_int_equal(plb_ack(r, 1, 3, 0, 0), 0); /* 1/4 < 0.5: reset */
	assert_int_equal(plb_ack(r, 1, 4, 1, 0), 0);
	/* NACKs do not count */
	for (int i = 0; i < 10; i++)
		assert_int_equal(plb_ack(r, 1, 4, 1, 1), 0);
	fc_rue_get_stats(r, &st);
	assert_int_equal(st.reroutes, 4);
	fc_rue_free(r);
}

static void test_plb_off_and_per_conn(void **state)
{
	struct fc_rue *r = rue_default(); /* PLB off */

	(void)state;
	for (int i = 0; i < 20; i++)
		assert_int_equal(plb_ack(r, 1, 4, 1, 0), 0);
	fc_rue_free(r);

	/* counters are per connection: interleaved, each reroutes on its own 5th */
	r = rue_plb(8);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(plb_ack(r, 1, 4, 1, 0), 0);
		assert_int_equal(plb_ack(r, 2, 4, 1, 0), 0);
	}
	assert_int_equal(plb_ack(r, 3, 4, 1, 0), 0);
	assert_int_equal(plb_ack(r, 1, 4, 1, 0), 1);
	assert_int_equal(plb_ack(r, 2, 4, 1, 0), 1);
	fc_rue_free(r);
}

static void test_plb_table(void **state)
{
	struct fc_rue *r = rue_plb(8);
	struct fc_rue_stats st;

	(void)state;
	/* 8 connections with 3 congested RTTs each */
	for (uint32_t cid = 1; cid <= 8; cid++)
		for (int i = 0; i < 3; i++)
			assert_int_equal(plb_ack(r, cid * 0x10001u, 4, 1, 0), 0);
	/* full: a 9th is not tracked (never reroutes), counted */
	for (int i = 0; i < 6; i++)
		assert_int_equal(plb_ack(r, 0xABCDEF, 4, 1, 0), 0);
	fc_rue_get_stats(r, &st);
	assert_int_equal(st.plb_untracked, 6);
	/* free two slots; the 9th now gets one; the others keep their counts */
	fc_rue_forget(r, 2 * 0x10001u);
	fc_rue_forget(r, 5 * 0x10001u);
	fc_rue_forget(r, 0x424242); /* unknown: no effect */
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb_ack(r, 0xABCDEF, 4, 1, 0), 0);
	assert_int_equal(plb_ack(r, 0xABCDEF, 4, 1, 0), 1);
	for (uint32_t cid = 1; cid <= 8; cid++) {
		if (cid == 2 || cid == 5)
			continue;
		assert_int_equal(plb_ack(r, cid * 0x10001u, 4, 1, 0), 0);
		assert_int_equal(plb_ack(r, cid * 0x10001u, 4, 1, 0), 1);
	}
	/* a forgotten one starts from 0 again */
	for (int i = 0; i < 4; i++)
		assert_int_equal(plb_ack(r, 2 * 0x10001u, 4, 1, 0), 0);
	assert_int_equal(plb_ack(r, 2 * 0x10001u, 4, 1, 0), 1);
	fc_rue_free(r);
}

/* ---- fields ---- */

static void test_echo_and_bad_type(void **state)
{
	struct fc_rue *r = rue_default();
	struct conn c;
	struct fc_cc_event e;
	struct fc_cc_result res;
	struct fc_rue_stats st;

	(void)state;
	conn_init(&c, 0xFEDCBA);
	c.meta = 0x123456;
	c.base = 0;
	e = ack_ev(&c, 5000, 30, 20, 1, 0);
	e.gen = 1;
	assert_int_equal(fc_rue_process(r, &e, 5000, &res), 0);
	assert_int_equal(res.cid, 0xFEDCBA);
	assert_int_equal(res.cc_metadata, 0x123456);
	assert_int_equal(res.base_delay_target_ts, BASE); /* from the config when 0 */
	assert_int_equal(res.gen, 1);
	assert_int_equal(res.randomize_path, 0);
	e.base_delay_target_ts = 300;
	assert_int_equal(fc_rue_process(r, &e, 5000, &res), 0);
	assert_int_equal(res.base_delay_target_ts, 300);

	/* fcwnd / ncwnd 0 in an event: the initial windows */
	e = retx_ev(&c, 0);
	e.fcwnd_fp = 0;
	e.ncwnd = 0;
	e.fabric_window_time_marker_ts = 5000;
	e.rtt_state_ts = 100;
	assert_int_equal(fc_rue_process(r, &e, 5000, &res), 0);
	assert_int_equal(res.fcwnd_fp, 32 * ONE);
	assert_int_equal(res.ncwnd, 64);

	/* event type 3 does not exist: -EINVAL, state echoed */
	e = ack_ev(&c, 5000, 30, 20, 1, 0);
	e.type = 3;
	e.fcwnd_fp = 12345;
	e.ncwnd = 77;
	e.rtt_state_ts = 999;
	assert_int_equal(fc_rue_process(r, &e, 5000, &res), -EINVAL);
	assert_int_equal(res.fcwnd_fp, 12345);
	assert_int_equal(res.ncwnd, 77);
	assert_int_equal(res.rtt_state_ts, 999);
	assert_int_equal(res.cid, 0xFEDCBA);
	fc_rue_get_stats(r, &st);
	assert_int_equal(st.bad_events, 1);
	assert_int_equal(st.events, 3);
	fc_rue_free(r);
}

static void test_clamping(void **state)
{
	struct fc_rue_cfg cfg;
	struct fc_rue *r = rue_default();
	struct conn c;
	struct fc_cc_event e;
	struct fc_cc_result res;

	(void)state;
	/* never above max: a huge AI at 256 */
	conn_init(&c, 12);
	c.fcwnd_fp = MAX_FP - 1;
	e = ack_ev(&c, 7000, 30, 20, 1023, 0);
	res = run(r, &c, &e, 7000);
	assert_int_equal(res.fcwnd_fp, MAX_FP);
	/* an event window above the configured max comes back clamped */
	c.fcwnd_fp = 300 * ONE;
	e = ack_ev(&c, 7000, 30, 20, 0, 0);
	res = run(r, &c, &e, 7000);
	assert_int_equal(res.fcwnd_fp, MAX_FP);
	/* never below 0.01: repeated cuts at min */
	for (int i = 0; i < 20; i++) {
		uint32_t now = 8000 + (uint32_t)i * 5000;

		e = ack_ev(&c, now, 4000, 3900, 1, 31);
		res = run(r, &c, &e, now);
		assert_true(res.fcwnd_fp >= MIN_FP);
		assert_true(res.fcwnd_fp * 100 >= 1024); /* >= 0.01 in fixed point */
		assert_true(res.ncwnd >= 1);
	}
	assert_int_equal(res.fcwnd_fp, MIN_FP);
	assert_int_equal(res.ncwnd, 1);
	/* ipg at min fcwnd with a huge rtt saturates at 20 bits; rto at 24 */
	c.rstate = 0;
	e = ack_ev(&c, 9000000, 0xF00000, 0xF00000, 0, 31);
	res = run(r, &c, &e, 9000000);
	assert_int_equal(res.inter_packet_gap_ts, 0xFFFFF);
	assert_int_equal(res.retransmit_timeout_ts, M24);
	fc_rue_free(r);

	/* the widest window the field holds: 11 + 10 bits */
	fc_rue_cfg_default(&cfg);
	cfg.max_fcwnd = 2047.999;
	r = fc_rue_new(&cfg, 1);
	assert_non_null(r);
	conn_init(&c, 12);
	c.fcwnd_fp = 0x1FFFF0;
	e = ack_ev(&c, 7000, 30, 20, 1023, 0);
	res = run(r, &c, &e, 7000);
	assert_true(res.fcwnd_fp <= 0x1FFFFF);
	assert_int_equal(res.fcwnd_fp, (uint32_t)(2047.999 * 1024));
	fc_rue_free(r);
}

/* Random events: every result field within its width and the configured ranges. */
static void test_random_events(void **state)
{
	uint64_t seed = test_seed(), s = seed;
	struct fc_rue_cfg cfg;
	struct fc_rue *r;
	int n = fc_test_quick() ? 20000 : 300000;

	(void)state;
	fc_rue_cfg_default(&cfg);
	cfg.plb_enable = 1;
	r = fc_rue_new(&cfg, 64);
	assert_non_null(r);
	for (int i = 0; i < n; i++) {
		struct fc_cc_event e;
		struct fc_cc_result res;
		uint64_t a = fc_test_rand(&s), b = fc_test_rand(&s), d = fc_test_rand(&s);
		uint64_t f = fc_test_rand(&s);
		int rc;

		memset(&e, 0, sizeof(e));
		e.cid = (uint32_t)(a & 0xFF);
		e.type = (uint8_t)((a >> 8) & 3);
		e.t1_ts = (uint32_t)(a >> 10);
		e.t2_ts = (uint32_t)(a >> 34);
		e.t3_ts = (uint32_t)b;
		e.t4_ts = (uint32_t)(b >> 24);
		e.retx_count = (uint8_t)(b >> 48);
		e.nack_code = (uint8_t)(b >> 56) & 3;
		e.forward_hops = (uint8_t)d;
		e.rx_buffer_level = (uint8_t)(d >> 8);
		e.cc_metadata = (uint32_t)(d >> 16);
		e.fcwnd_fp = (uint32_t)(d >> 40);
		e.ncwnd = (uint32_t)f & 0xFFF;
		e.num_packets_acked = (uint16_t)(f >> 12);
		e.delay_select = (uint8_t)(f >> 28);
		e.fabric_window_time_marker_ts = (uint32_t)(f >> 30);
		e.nic_window_time_marker_ts = (uint32_t)(f >> 40);
		e.ncwnd_direction = (uint8_t)(f >> 62);
		e.delay_state_ts = (f & 1) ? (uint32_t)(a >> 20) : 0;
		e.rtt_state_ts = (f & 2) ? (uint32_t)(b >> 30) : 0;
		e.base_delay_target_ts = (f & 4) ? (uint32_t)(d >> 5) : 0;
		e.cc_opaque = (uint8_t)(f >> 50);
		rc = fc_rue_process(r, &e, (uint32_t)(b >> 8), &res);
		if (e.type == 3) {
			if (rc != -EINVAL)
				fprintf(stderr, "seed 0x%llx event %d\n", (unsigned long long)seed, i);
			assert_int_equal(rc, -EINVAL);
			continue;
		}
		if (rc || res.fcwnd_fp < MIN_FP || res.fcwnd_fp > MAX_FP || res.ncwnd < 1 ||
		    res.ncwnd > 256 || res.inter_packet_gap_ts > 0xFFFFF ||
		    res.retransmit_timeout_ts > M24 || res.retransmit_timeout_ts < MIN_RTO ||
		    res.fabric_window_time_marker_ts > M24 || res.nic_window_time_marker_ts > M24 ||
		    res.delay_state_ts > M24 || res.rtt_state_ts > M24 || res.base_delay_target_ts > M24 ||
		    res.cc_opaque > 3 || res.ncwnd_direction > 1 || res.randomize_path > 1 ||
		    res.cid != (e.cid & M24) || res.cc_metadata != (e.cc_metadata & M24)) {
			fprintf(stderr, "seed 0x%llx event %d\n", (unsigned long long)seed, i);
			fail();
		}
	}
	fc_rue_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfg_defaults),
		cmocka_unit_test(test_cfg_rejected),
		cmocka_unit_test(test_delay_select),
		cmocka_unit_test(test_smooth),
		cmocka_unit_test(test_target_delay),
		cmocka_unit_test(test_guard_helpers),
		cmocka_unit_test(test_ipg),
		cmocka_unit_test(test_rto),
		cmocka_unit_test(test_ai_per_rtt),
		cmocka_unit_test(test_md_proportional),
		cmocka_unit_test(test_md_capped_once_per_rtt),
		cmocka_unit_test(test_fcwnd_marker_rules),
		cmocka_unit_test(test_ncwnd_rules),
		cmocka_unit_test(test_ncwnd_md_cap),
		cmocka_unit_test(test_ncwnd_at_max),
		cmocka_unit_test(test_nack_resource),
		cmocka_unit_test(test_retransmit),
		cmocka_unit_test(test_retransmit_guarded),
		cmocka_unit_test(test_ack_smoothing_rto),
		cmocka_unit_test(test_pacing_event),
		cmocka_unit_test(test_wraparound),
		cmocka_unit_test(test_wraparound_nic),
		cmocka_unit_test(test_plb_reroute),
		cmocka_unit_test(test_plb_off_and_per_conn),
		cmocka_unit_test(test_plb_table),
		cmocka_unit_test(test_echo_and_bad_type),
		cmocka_unit_test(test_clamping),
		cmocka_unit_test(test_random_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
