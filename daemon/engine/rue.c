/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rue.c - Swift (spec 10.3) and PLB (10.4) as the rate update engine runs them: one CC
 * event in, one CC result out (10.6.2). The readings of the spec's pseudocode are listed
 * in rue.h; each function cites the section it implements.
 *
 * No libm: the build links the engine without -lm, so square root and rounding are done
 * here (Newton's method; casts after range checks, which also keep UBSan's float-cast
 * checks quiet for NaN and out-of-range values).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "falcon/wire.h"
#include "rue.h"

#define TS_PER_NS (1.0 / 131.072) /* wire timestamp unit: 131.072 ns */
#define PLB_CTR_MAX UINT32_MAX

struct plb_ent {          /* 10.5.6 PLB state of one connection */
	uint32_t key;         /* cid + 1; 0 = free slot */
	uint32_t acked;       /* plb_packets_acknowledged */
	uint32_t cong_acked;  /* plb_packets_congestion_acknowledged */
	uint32_t attempts;    /* plb_reroute_attempted */
};

struct fc_rue {
	struct fc_rue_cfg cfg;
	double fs_alpha, fs_beta; /* 10.3.4 Initialize(), ts units */
	double max_fs_ts, per_hop_ts;
	uint32_t base_ts, min_rto_ts, initial_rto_ts;
	uint32_t min_fcwnd_fp, max_fcwnd_fp, initial_fcwnd_fp;
	uint32_t max_conns, nused, mask; /* table: mask + 1 slots, a power of two */
	struct plb_ent *tab;
	struct fc_rue_stats st;
};

/* ---- arithmetic without libm ---- */

static double dsqrt(double x)
{
	double y;

	if (!(x > 0))
		return 0;
	/* Newton from above: the iterates fall monotonically to sqrt(x); about log2(x)/2
	 * halvings to get near, then quadratic; 1100 steps cover any finite double */
	y = x > 1 ? x : 1;
	for (int i = 0; i < 1100; i++) {
		double n = 0.5 * (y + x / y);

		if (!(n < y))
			break;
		y = n;
	}
	return y;
}

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin(double a, double b) { return a < b ? a : b; }

/* x rounded down / to nearest / up, as an integer in [0, max]; NaN -> 0 */
static uint32_t u_floor(double x, uint32_t max)
{
	if (!(x > 0))
		return 0;
	return x >= (double)max ? max : (uint32_t)x;
}

static uint32_t u_round(double x, uint32_t max)
{
	if (!(x > 0))
		return 0;
	return x + 0.5 >= (double)max ? max : (uint32_t)(x + 0.5);
}

static uint32_t u_ceil(double x, uint32_t max)
{
	uint32_t t;

	if (!(x > 0))
		return 0;
	if (x >= (double)max)
		return max;
	t = (uint32_t)x;
	return (double)t < x ? t + 1 : t;
}

static uint32_t clamp_u(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static uint32_t ns_to_ts_round(uint32_t ns) { return u_round(ns * TS_PER_NS, UINT32_MAX); }

/* ---- pure helpers (rue.h) ---- */

uint32_t fc_rue_rtt_ts(const struct fc_cc_event *ev)
{
	return (ev->t4_ts - ev->t1_ts) & FC_TS24_MASK; /* 10.1: rtt = T4 - T1 */
}

/* 10.1 delays, selected by delay_select (10.6.2.1), modulo 2^24. */
uint32_t fc_rue_delay_ts(const struct fc_cc_event *ev)
{
	uint32_t rtt = fc_rue_rtt_ts(ev), hold;

	switch (ev->delay_select & 3) {
	case FC_DELAY_FULL:
		return rtt;
	case FC_DELAY_FABRIC:
		hold = (ev->t3_ts - ev->t2_ts) & FC_TS24_MASK;
		return hold > rtt ? 0 : rtt - hold; /* remote hold > round trip: clock trouble */
	case FC_DELAY_FWD:
		return (ev->t2_ts - ev->t1_ts) & FC_TS24_MASK;
	default:
		return (ev->t4_ts - ev->t3_ts) & FC_TS24_MASK;
	}
}

/* 10.3.4 GetSmoothed(alpha, smoothed, sample) = smoothed * alpha + sample * (1 - alpha);
 * a zero state has seen no sample yet. */
uint32_t fc_rue_smooth(double alpha, uint32_t state_ts, uint32_t sample_ts)
{
	state_ts &= FC_TS24_MASK;
	sample_ts &= FC_TS24_MASK;
	if (!state_ts)
		return sample_ts;
	return u_round(state_ts * alpha + sample_ts * (1.0 - alpha), FC_TS24_MASK);
}

/* 10.3.4 FabricDelayTarget(): base + flow scaling + topology scaling. */
double fc_rue_target_delay(const struct fc_rue *r, uint32_t base_ts, uint32_t fcwnd_fp,
			   unsigned hops)
{
	double w = (double)fcwnd_fp / FC_CWND_ONE, fs;

	base_ts &= FC_TS24_MASK;
	if (!base_ts)
		base_ts = r->base_ts;
	fs = w > 0 ? r->fs_alpha / dsqrt(w) + r->fs_beta : r->max_fs_ts;
	fs = dmin(dmax(fs, 0), r->max_fs_ts); /* clamp(0, adder, max_flow_scaling) */
	return base_ts + fs + r->per_hop_ts * (hops & 0xF);
}

/* 10.3.4 HasRttElapsed(marker), 24-bit modular distance (10.3.6). */
int fc_rue_rtt_elapsed(uint32_t now_ts, uint32_t marker_ts, uint32_t rtt_ts)
{
	return ((now_ts - marker_ts) & FC_TS24_MASK) >= (rtt_ts & FC_TS24_MASK);
}

/* 10.3.4 UpdateTimeMarker(marker): trail now by one RTT once the marker is older. */
uint32_t fc_rue_update_marker(uint32_t now_ts, uint32_t marker_ts, uint32_t rtt_ts)
{
	rtt_ts &= FC_TS24_MASK;
	if (((now_ts - marker_ts) & FC_TS24_MASK) > rtt_ts)
		return (now_ts - rtt_ts) & FC_TS24_MASK;
	return marker_ts & FC_TS24_MASK;
}

/* 10.3.4 ComputeInterPacketGap(): 0 when fcwnd > 1, else rtt / fcwnd (see rue.h). */
uint32_t fc_rue_ipg(uint32_t fcwnd_fp, uint32_t srtt_ts)
{
	if (fcwnd_fp > FC_CWND_ONE)
		return 0;
	if (!fcwnd_fp)
		return srtt_ts ? FC_RUE_IPG_MAX : 0;
	return u_round((double)(srtt_ts & FC_TS24_MASK) * FC_CWND_ONE / fcwnd_fp,
		       FC_RUE_IPG_MAX);
}

/* 10.3.2 retransmit_timeout = max(scalar * smoothed_rtt, min_retransmission_timeout). */
uint32_t fc_rue_rto(const struct fc_rue *r, uint32_t srtt_ts)
{
	uint32_t rto;

	srtt_ts &= FC_TS24_MASK;
	if (!srtt_ts)
		return r->initial_rto_ts;
	rto = u_round(r->cfg.retransmit_timeout_scalar * srtt_ts, FC_RUE_TS_MAX);
	return rto > r->min_rto_ts ? rto : r->min_rto_ts;
}

/* ---- window conversions and guards ---- */

/* Rounding a window: EPS absorbs binary-fraction error (64 * 0.8 may come out as
 * 51.999...), far below the 1/1024 resolution of the fields. */
#define EPS 1e-6

/* New fcwnd in fixed point: a decrease rounds down, else to nearest; clamped. */
static uint32_t fcwnd_fp_of(const struct fc_rue *r, uint32_t old_fp, double w)
{
	double x = w * FC_CWND_ONE;
	uint32_t fp = x < old_fp ? u_floor(x + EPS, FC_RUE_FCWND_FP_MAX)
				 : u_round(x, FC_RUE_FCWND_FP_MAX);

	return clamp_u(fp, r->min_fcwnd_fp, r->max_fcwnd_fp);
}

/* New ncwnd, an integer (10.3.5): a decrease rounds down, an increase up; clamped. */
static uint32_t ncwnd_of(const struct fc_rue *r, uint32_t old, double w)
{
	uint32_t n = w < old ? u_floor(w + EPS, FC_RUE_NCWND_MAX)
		   : w > old ? u_ceil(w - EPS, FC_RUE_NCWND_MAX) : old;

	return clamp_u(n, r->cfg.min_ncwnd, r->cfg.max_ncwnd);
}

/* 10.3.1 / 10.3.6 fabric_window_time_marker: decreased (or at min) -> now, else
 * UpdateTimeMarker (increased, unchanged, at max). */
static uint32_t fabric_marker(const struct fc_rue *r, uint32_t now, uint32_t marker,
			      uint32_t rtt, uint32_t old_fp, uint32_t new_fp)
{
	if (new_fp < old_fp || new_fp == r->min_fcwnd_fp)
		return now;
	return fc_rue_update_marker(now, marker, rtt);
}

/* 10.3.1 / 10.3.6 nic_window_time_marker and ncwnd_direction. tried_inc: the event took
 * the increase branch (only then does "unchanged at max" count as an increase). */
static void nic_guard(const struct fc_rue *r, const struct fc_cc_event *e, uint32_t now,
		      uint32_t rtt, uint32_t new_n, int tried_inc, struct fc_cc_result *res)
{
	if (new_n < e->ncwnd || new_n == r->cfg.min_ncwnd) {
		res->nic_window_time_marker_ts = now;
		res->ncwnd_direction = FC_NCWND_DECREASE;
	} else if (new_n > e->ncwnd || (new_n == r->cfg.max_ncwnd && tried_inc)) {
		res->nic_window_time_marker_ts = now;
		res->ncwnd_direction = FC_NCWND_INCREASE;
	} else {
		res->nic_window_time_marker_ts =
			fc_rue_update_marker(now, e->nic_window_time_marker_ts, rtt);
		res->ncwnd_direction = e->ncwnd_direction;
	}
}

/* ---- 10.3.1 ACK and non-resource NACK ---- */

/* ComputeAckFabricCongestionWindow(): AI below the target, at most one MD per RTT above. */
static void ack_fabric(const struct fc_rue *r, const struct fc_cc_event *e, uint32_t now,
		       uint32_t rtt, uint32_t sdelay, double target, struct fc_cc_result *res)
{
	const struct fc_rue_cfg *c = &r->cfg;
	double w = (double)e->fcwnd_fp / FC_CWND_ONE, nw = w;

	if (sdelay <= target) {
		double inc = c->fabric_additive_increment * e->num_packets_acked;

		nw = w >= 1 ? w + inc / w : w + inc; /* ~ai per RTT */
	} else if (fc_rue_rtt_elapsed(now, e->fabric_window_time_marker_ts, rtt)) {
		double f = 1 - c->fabric_md_factor * (sdelay - target) / sdelay;

		nw = w * dmax(f, 1 - c->max_fabric_md);
	}
	res->fcwnd_fp = fcwnd_fp_of(r, e->fcwnd_fp, nw);
	res->fabric_window_time_marker_ts =
		fabric_marker(r, now, e->fabric_window_time_marker_ts, rtt, e->fcwnd_fp, res->fcwnd_fp);
}

/* ComputeAckNICCongestionWindow(): below target, +ai if the last change was a decrease
 * or an RTT elapsed; at or above target, MD by (level - target) / level once an RTT
 * elapsed (the branch structure of the pseudocode, read as rue.h says). */
static void ack_nic(const struct fc_rue *r, const struct fc_cc_event *e, uint32_t now,
		    uint32_t rtt, struct fc_cc_result *res)
{
	const struct fc_rue_cfg *c = &r->cfg;
	uint32_t level = e->rx_buffer_level, tgt = c->target_rx_buffer_level;
	int elapsed = fc_rue_rtt_elapsed(now, e->nic_window_time_marker_ts, rtt), tried_inc = 0;
	double w = e->ncwnd, nw = w;

	if (level < tgt) {
		if (e->ncwnd_direction == FC_NCWND_DECREASE || elapsed) {
			nw = w + c->nic_additive_increment;
			tried_inc = 1;
		}
	} else if (elapsed && level > 0) {
		double f = 1 - c->nic_md_factor * (double)(level - tgt) / level;

		nw = w * dmax(f, 1 - c->max_nic_md);
	}
	res->ncwnd = ncwnd_of(r, e->ncwnd, nw);
	nic_guard(r, e, now, rtt, res->ncwnd, tried_inc, res);
}

/* 10.3.3: NACK for NIC resource exhaustion: ncwnd cut by the maximum MD. */
static void nack_resource_nic(const struct fc_rue *r, const struct fc_cc_event *e,
			      uint32_t now, uint32_t rtt, struct fc_cc_result *res)
{
	double nw = e->ncwnd;

	if (e->ncwnd_direction == FC_NCWND_INCREASE ||
	    fc_rue_rtt_elapsed(now, e->nic_window_time_marker_ts, rtt))
		nw *= 1 - r->cfg.max_nic_md;
	res->ncwnd = ncwnd_of(r, e->ncwnd, nw);
	nic_guard(r, e, now, rtt, res->ncwnd, 0, res);
}

/* ---- 10.4 PLB state table: open addressing, linear probing, bounded ---- */

static uint32_t slot_of(const struct fc_rue *r, uint32_t key)
{
	/* Fibonacci hashing; the high bits of the product pick the slot */
	return (uint32_t)(((uint64_t)(key * 0x9E3779B1u) * (r->mask + 1ull)) >> 32);
}

/* The entry of cid, created if absent and there is room; NULL otherwise. */
static struct plb_ent *plb_find(struct fc_rue *r, uint32_t cid, int create)
{
	uint32_t key = (cid & 0xFFFFFFu) + 1, i;

	if (!r->tab)
		return NULL;
	i = slot_of(r, key);
	for (uint32_t n = 0; n <= r->mask; n++, i = (i + 1) & r->mask) {
		if (r->tab[i].key == key)
			return &r->tab[i];
		if (!r->tab[i].key)
			break;
	}
	/* load <= 1/2 keeps a free slot at the end of every probe; checked anyway */
	if (!create || r->nused >= r->max_conns || r->tab[i].key)
		return NULL;
	memset(&r->tab[i], 0, sizeof(r->tab[i]));
	r->tab[i].key = key;
	r->nused++;
	return &r->tab[i];
}

void fc_rue_forget(struct fc_rue *r, uint32_t cid)
{
	struct plb_ent *e = plb_find(r, cid, 0);
	uint32_t hole, i;

	if (!e)
		return;
	hole = (uint32_t)(e - r->tab);
	r->tab[hole].key = 0;
	r->nused--;
	/* backward-shift deletion: pull up entries whose probe path crosses the hole */
	for (i = (hole + 1) & r->mask; r->tab[i].key; i = (i + 1) & r->mask) {
		uint32_t home = slot_of(r, r->tab[i].key);

		if (((i - home) & r->mask) >= ((i - hole) & r->mask)) {
			r->tab[hole] = r->tab[i];
			r->tab[i].key = 0;
			hole = i;
		}
	}
}

/* 10.4 ComputePlb(old_window_size) on an ACK event; returns whether to reroute. */
static int plb(struct fc_rue *r, const struct fc_cc_event *e, uint32_t sdelay, double target,
	       double old_window)
{
	const struct fc_rue_cfg *c = &r->cfg;
	struct plb_ent *p = plb_find(r, e->cid, 1);
	uint32_t n = e->num_packets_acked, acked, cong;
	int reroute = 0;

	if (!p) {
		r->st.plb_untracked++;
		return 0;
	}
	acked = p->acked > PLB_CTR_MAX - n ? PLB_CTR_MAX : p->acked + n;
	cong = p->cong_acked;
	if (sdelay > target * c->plb_target_delay_multiplier)
		cong = cong > PLB_CTR_MAX - n ? PLB_CTR_MAX : cong + n;
	if (acked >= old_window) { /* an RTT's worth of ACKs */
		double frac = acked ? (double)cong / acked : 0;

		if (frac < c->plb_congestion_threshold) {
			p->attempts = 0;
		} else {
			if (p->attempts < PLB_CTR_MAX)
				p->attempts++;
			if (p->attempts >= c->plb_attempt_threshold) {
				reroute = 1;
				p->attempts = 0;
			}
		}
		p->acked = p->cong_acked = 0;
	} else {
		p->acked = acked;
		p->cong_acked = cong;
	}
	return reroute;
}

/* ---- event processing ---- */

/* 10.3.1 ProcessAckNackCommon() / 10.3.3 ProcessNackResourceExhaustion(). */
static void process_ack_nack(struct fc_rue *r, const struct fc_cc_event *e, uint32_t now,
			     struct fc_cc_result *res)
{
	const struct fc_rue_cfg *c = &r->cfg;
	uint32_t rtt = fc_rue_rtt_ts(e);
	uint32_t srtt = fc_rue_smooth(c->rtt_smoothing_alpha, e->rtt_state_ts, rtt);
	uint32_t sdelay = fc_rue_smooth(c->delay_smoothing_alpha, e->delay_state_ts,
					fc_rue_delay_ts(e));
	double target = fc_rue_target_delay(r, e->base_delay_target_ts, e->fcwnd_fp,
					    e->forward_hops);

	ack_fabric(r, e, now, rtt, sdelay, target, res);
	res->inter_packet_gap_ts = fc_rue_ipg(res->fcwnd_fp, srtt);
	if (e->type == FC_RUE_EV_NACK && e->nack_code == FC_NACK_RESOURCE)
		nack_resource_nic(r, e, now, rtt, res);
	else
		ack_nic(r, e, now, rtt, res);
	res->retransmit_timeout_ts = fc_rue_rto(r, srtt);
	res->delay_state_ts = sdelay;
	res->rtt_state_ts = srtt;
	res->cc_opaque = 0; /* not a retransmit: the next one starts a run (10.3.2) */
	if (c->plb_enable && e->type == FC_RUE_EV_ACK) {
		double old_window = dmin((double)e->fcwnd_fp / FC_CWND_ONE, e->ncwnd);

		res->randomize_path = (uint8_t)plb(r, e, sdelay, target, old_window);
	}
}

/* 10.3.2 ProcessRetransmit(). The run of successive retransmit events is counted in
 * cc_opaque; the limit applies to the packet's cumulative count (see rue.h). */
static void process_retx(struct fc_rue *r, const struct fc_cc_event *e, uint32_t now,
			 struct fc_cc_result *res)
{
	const struct fc_rue_cfg *c = &r->cfg;
	uint32_t srtt = e->rtt_state_ts, run = (e->cc_opaque & 3) + 1u;
	double w = (double)e->fcwnd_fp / FC_CWND_ONE, nw = w;

	if (e->retx_count >= c->retransmit_limit)
		nw = 0; /* -> min_fcwnd after the clamp */
	else if (run == 1 && fc_rue_rtt_elapsed(now, e->fabric_window_time_marker_ts, srtt))
		nw = w * (1 - c->max_fabric_md);
	res->fcwnd_fp = fcwnd_fp_of(r, e->fcwnd_fp, nw);
	res->fabric_window_time_marker_ts =
		fabric_marker(r, now, e->fabric_window_time_marker_ts, srtt, e->fcwnd_fp, res->fcwnd_fp);
	res->inter_packet_gap_ts = fc_rue_ipg(res->fcwnd_fp, srtt);
	res->retransmit_timeout_ts = fc_rue_rto(r, srtt);
	/* ncwnd untouched (only held in range); its marker only trails (10.3.6: keeps
	 * moving across the wrap) */
	res->ncwnd = ncwnd_of(r, e->ncwnd, e->ncwnd);
	res->nic_window_time_marker_ts = fc_rue_update_marker(now, e->nic_window_time_marker_ts, srtt);
	res->cc_opaque = (uint8_t)(run < FC_RUE_OPAQUE_RETX_MAX ? run : FC_RUE_OPAQUE_RETX_MAX);
}

/* The event with every field cut to its width (10.6.2.1), zero windows replaced by the
 * initial ones. */
static void mask_event(const struct fc_rue *r, const struct fc_cc_event *ev,
		       struct fc_cc_event *e)
{
	*e = *ev;
	e->cid &= 0xFFFFFFu;
	e->t1_ts &= FC_TS24_MASK;
	e->t2_ts &= FC_TS24_MASK;
	e->t3_ts &= FC_TS24_MASK;
	e->t4_ts &= FC_TS24_MASK;
	e->retx_count &= 7;
	e->forward_hops &= 0xF;
	e->rx_buffer_level &= 0x1F;
	e->cc_metadata &= 0xFFFFFFu;
	e->fcwnd_fp &= FC_RUE_FCWND_FP_MAX;
	e->inter_packet_gap_ts &= FC_RUE_IPG_MAX;
	e->ncwnd &= FC_RUE_NCWND_MAX;
	e->retransmit_timeout_ts &= FC_TS24_MASK;
	if (e->num_packets_acked > 1023)
		e->num_packets_acked = 1023; /* the field saturates */
	e->delay_select &= 3;
	e->fabric_window_time_marker_ts &= FC_TS24_MASK;
	e->nic_window_time_marker_ts &= FC_TS24_MASK;
	e->ncwnd_direction &= 1;
	e->base_delay_target_ts &= FC_TS24_MASK;
	e->delay_state_ts &= FC_TS24_MASK;
	e->rtt_state_ts &= FC_TS24_MASK;
	e->cc_opaque &= 3;
	e->gen &= 1;
	if (!e->fcwnd_fp)
		e->fcwnd_fp = r->initial_fcwnd_fp;
	if (!e->ncwnd)
		e->ncwnd = r->cfg.initial_ncwnd;
	if (!e->base_delay_target_ts)
		e->base_delay_target_ts = r->base_ts;
}

/* The result that changes nothing: the event's state echoed. */
static void echo(const struct fc_cc_event *e, struct fc_cc_result *res)
{
	memset(res, 0, sizeof(*res));
	res->cid = e->cid;
	res->cc_metadata = e->cc_metadata;
	res->fcwnd_fp = e->fcwnd_fp;
	res->inter_packet_gap_ts = e->inter_packet_gap_ts;
	res->ncwnd = e->ncwnd;
	res->retransmit_timeout_ts = e->retransmit_timeout_ts;
	res->fabric_window_time_marker_ts = e->fabric_window_time_marker_ts;
	res->nic_window_time_marker_ts = e->nic_window_time_marker_ts;
	res->ncwnd_direction = e->ncwnd_direction;
	res->base_delay_target_ts = e->base_delay_target_ts;
	res->delay_state_ts = e->delay_state_ts;
	res->rtt_state_ts = e->rtt_state_ts;
	res->cc_opaque = e->cc_opaque;
	res->gen = e->gen;
}

int fc_rue_process(struct fc_rue *r, const struct fc_cc_event *ev, uint32_t now_ts,
		   struct fc_cc_result *res)
{
	struct fc_cc_event e;

	mask_event(r, ev, &e);
	echo(&e, res);
	now_ts &= FC_TS24_MASK;
	switch (e.type) {
	case FC_RUE_EV_ACK:
	case FC_RUE_EV_NACK:
		process_ack_nack(r, &e, now_ts, res);
		break;
	case FC_RUE_EV_RETX:
		process_retx(r, &e, now_ts, res);
		break;
	default:
		r->st.bad_events++;
		return -EINVAL;
	}
	r->st.events++;
	if (res->randomize_path)
		r->st.reroutes++;
	return 0;
}

/* ---- configuration ---- */

void fc_rue_cfg_default(struct fc_rue_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->max_fcwnd = 256.0;
	c->min_fcwnd = 0.01;
	c->fabric_additive_increment = 1.0;
	c->fabric_md_factor = 0.8;
	c->max_fabric_md = 0.5;
	c->base_delay_target_ns = 25000;
	c->max_ncwnd = 256;
	c->min_ncwnd = 1;
	c->nic_additive_increment = 1.0;
	c->nic_md_factor = 0.8;
	c->max_nic_md = 0.5;
	c->target_rx_buffer_level = 15;
	c->plb_enable = 0;
	c->plb_target_delay_multiplier = 1.01;
	c->plb_congestion_threshold = 0.5;
	c->plb_attempt_threshold = 5;
	c->rtt_smoothing_alpha = 0.75;
	c->delay_smoothing_alpha = 0.0;
	c->topology_scaling_per_hop_ns = 1000;
	c->retransmit_timeout_scalar = 2.0;
	c->retransmit_limit = 3;
	c->min_rto_ns = 250000;
	c->initial_rto_ns = 1000000;
	c->min_flow_scaling_window = 0.1;
	c->max_flow_scaling_window = 256.0;
	c->max_flow_scaling_ns = 100000;
	c->initial_fcwnd = 32.0;
	c->initial_ncwnd = 64;
}

static int unit(double x) { return x >= 0 && x <= 1; }

static int cfg_ok(const struct fc_rue_cfg *c)
{
	double fp_max = (double)FC_RUE_FCWND_FP_MAX / FC_CWND_ONE;

	return c->min_fcwnd > 0 && c->min_fcwnd <= c->max_fcwnd && c->max_fcwnd <= fp_max &&
	       c->initial_fcwnd >= c->min_fcwnd && c->initial_fcwnd <= c->max_fcwnd &&
	       c->fabric_additive_increment >= 0 && c->fabric_additive_increment <= 1e6 &&
	       unit(c->fabric_md_factor) && unit(c->max_fabric_md) &&
	       c->min_ncwnd >= 1 && c->min_ncwnd <= c->max_ncwnd &&
	       c->max_ncwnd <= FC_RUE_NCWND_MAX && c->initial_ncwnd >= c->min_ncwnd &&
	       c->initial_ncwnd <= c->max_ncwnd &&
	       c->nic_additive_increment >= 0 && c->nic_additive_increment <= 1e6 &&
	       unit(c->nic_md_factor) && unit(c->max_nic_md) && c->target_rx_buffer_level <= 31 &&
	       c->plb_target_delay_multiplier >= 0 && c->plb_target_delay_multiplier <= 1e6 &&
	       unit(c->plb_congestion_threshold) &&
	       c->rtt_smoothing_alpha >= 0 && c->rtt_smoothing_alpha < 1 &&
	       c->delay_smoothing_alpha >= 0 && c->delay_smoothing_alpha < 1 &&
	       c->retransmit_timeout_scalar >= 0 && c->retransmit_timeout_scalar <= 1e6 &&
	       c->retransmit_limit >= 1 && c->min_rto_ns > 0 && c->initial_rto_ns > 0 &&
	       c->min_flow_scaling_window > 0 &&
	       c->min_flow_scaling_window < c->max_flow_scaling_window &&
	       c->max_flow_scaling_window <= 1e9 &&
	       ns_to_ts_round(c->base_delay_target_ns) <= FC_TS24_MASK &&
	       ns_to_ts_round(c->min_rto_ns) <= FC_TS24_MASK &&
	       ns_to_ts_round(c->initial_rto_ns) <= FC_TS24_MASK &&
	       ns_to_ts_round(c->max_flow_scaling_ns) <= FC_TS24_MASK &&
	       ns_to_ts_round(c->topology_scaling_per_hop_ns) <= FC_TS24_MASK / 16;
}

static void derive(struct fc_rue *r)
{
	const struct fc_rue_cfg *c = &r->cfg;

	r->base_ts = ns_to_ts_round(c->base_delay_target_ns);
	r->min_rto_ts = ns_to_ts_round(c->min_rto_ns);
	r->initial_rto_ts = ns_to_ts_round(c->initial_rto_ns);
	r->max_fs_ts = c->max_flow_scaling_ns * TS_PER_NS;
	r->per_hop_ts = c->topology_scaling_per_hop_ns * TS_PER_NS;
	/* 10.3.4 Initialize(), with Swift's reciprocal square roots (rue.h) */
	r->fs_alpha = r->max_fs_ts / (1 / dsqrt(c->min_flow_scaling_window) -
				      1 / dsqrt(c->max_flow_scaling_window));
	r->fs_beta = -r->fs_alpha / dsqrt(c->max_flow_scaling_window);
	r->min_fcwnd_fp = u_ceil(c->min_fcwnd * FC_CWND_ONE, FC_RUE_FCWND_FP_MAX);
	r->max_fcwnd_fp = u_floor(c->max_fcwnd * FC_CWND_ONE, FC_RUE_FCWND_FP_MAX);
	r->initial_fcwnd_fp = clamp_u(u_round(c->initial_fcwnd * FC_CWND_ONE, FC_RUE_FCWND_FP_MAX),
				      r->min_fcwnd_fp, r->max_fcwnd_fp);
}

struct fc_rue *fc_rue_new(const struct fc_rue_cfg *c, uint32_t max_conns)
{
	struct fc_rue *r;
	uint32_t slots = 1;

	if (!c || !cfg_ok(c) || max_conns > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->cfg = *c;
	derive(r);
	if (r->min_fcwnd_fp < 1 || r->min_fcwnd_fp > r->max_fcwnd_fp) {
		free(r);
		errno = EINVAL;
		return NULL;
	}
	if (max_conns) {
		while (slots < 2 * max_conns) /* load factor <= 1/2 */
			slots <<= 1;
		r->tab = calloc(slots, sizeof(*r->tab));
		if (!r->tab) {
			free(r);
			errno = ENOMEM;
			return NULL;
		}
		r->mask = slots - 1;
		r->max_conns = max_conns;
	}
	return r;
}

void fc_rue_free(struct fc_rue *r)
{
	if (!r)
		return;
	free(r->tab);
	free(r);
}

void fc_rue_get_stats(const struct fc_rue *r, struct fc_rue_stats *s)
{
	*s = r->st;
}
