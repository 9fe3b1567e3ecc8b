/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rue.h - the rate update engine's algorithms (spec 10.3 Swift, 10.4 PLB, parameters of
 * 10.5): one CC event (10.6.2.1) in, one CC result (10.6.2.2) out.
 *
 * Pure: no clock, no thread, no I/O; the caller passes the RUE's current time. All
 * per-connection Swift state travels in the event and comes back in the result (the
 * PDL keeps it, see fc_pdl_cc_apply); the only state kept here is PLB's three counters
 * per connection (10.5.6), in a bounded table keyed by CID. One struct fc_rue is used by
 * one thread at a time (the RUE thread).
 *
 * Units: times in wire timestamp units "ts" (131.072 ns), 24 bits, modulo 2^24; windows
 * in fixed point with FC_CWND_FRAC_BITS fraction bits (rue_if.h). Arithmetic inside is
 * double; conversion back to fields:
 *   fcwnd   a decrease rounds down (floor, with a 1e-6 tolerance so that an exact
 *           product such as 64 * 0.8 is not lost to binary fractions), anything else
 *           to nearest, in 1/1024 packet,
 *           then clamped to [ceil(min_fcwnd*1024), floor(max_fcwnd*1024)]: the result
 *           is never below min_fcwnd nor above max_fcwnd, and any decrease the formula
 *           asks for is at least one unit (so "fcwnd < prev" of 10.3.1 sees it);
 *   ncwnd   integer (10.3.5): a decrease rounds down, an increase up, then clamped;
 *   times   smoothed rtt/delay, ipg, rto to nearest ts, saturated at their widths
 *           (24, 20, 24 bits).
 *
 * Readings of the spec's pseudocode (details at each function in rue.c):
 *  - Initialize() (10.3.4) literally divides by sqrt(min_w) - sqrt(max_w); that makes
 *    alpha negative and clamps flow scaling to 0 for every window. Swift's formula (and
 *    Google's simulator) is alpha = max_fs / (1/sqrt(min_w) - 1/sqrt(max_w)),
 *    beta = -alpha / sqrt(max_w): the adder is max_fs at min_w and 0 at max_w. We use it.
 *  - EWMA: 10.3.4 GetSmoothed(alpha, s, x) = s*alpha + x*(1-alpha) (alpha weighs the
 *    old state; 10.1's formula puts alpha on the sample). A state of 0 means "no sample
 *    yet": the sample is taken as is.
 *  - "rtt" in HasRttElapsed / UpdateTimeMarker is the event's measured rtt = t4 - t1
 *    (10.5.5) on ACK/NACK events, the smoothed rtt (rtt_state) on retransmit events,
 *    which carry no timestamps.
 *  - ComputeAckNICCongestionWindow: the pseudocode's decrease branch sits under
 *    "rx_buffer_level < target" where it cannot run; it belongs to the level >= target
 *    case: ncwnd *= max(1 - nic_md * (level - target) / level, 1 - max_nic_md) when an
 *    RTT elapsed since the NIC marker (nic_multiplicative_decrease_factor of 10.5.2
 *    applied as the fabric formula does).
 *  - ncwnd_direction is the direction of the last actual ncwnd change (10.6.2.1); an
 *    event that leaves ncwnd where it was keeps it, except at the bounds (10.3.6).
 *  - 10.3.6 "treated as increased if at max": for ncwnd only when the event took the
 *    increase branch. Taken literally, an event that was merely blocked by the guard at
 *    max ncwnd would set the NIC marker to now, and with events more often than once per
 *    RTT ncwnd could never come down from max.
 *  - ComputeInterPacketGap: "inter_packet_gap / fcwnd" would compound on every event;
 *    we use ipg = smoothed_rtt / fcwnd when fcwnd <= 1 (fcwnd packets per RTT; the PDL
 *    spaces transmissions ipg apart from the previous one), 0 when fcwnd > 1.
 *  - RTO = max(retransmit_timeout_scalar * smoothed_rtt, min_retransmission_timeout) on
 *    every event (10.3.2); initial_rto while no RTT sample exists (rtt_state == 0).
 *  - Retransmit (10.3.2): cc_opaque holds the number of successive retransmit events
 *    (saturating at 3; ACK/NACK events reset it). The first of a run (count 1) cuts
 *    fcwnd by max MD if an RTT elapsed. The retransmit_limit rule uses the packet's
 *    cumulative retransmit count from the event (10.6.2.1 retransmit_count), as
 *    Google's simulator does: the PDL posts one event per retransmitted packet, so
 *    counting events would take one EACK showing three holes for three failures and
 *    drop fcwnd to min after a single loss episode. The limit is checked before the
 *    first-retransmit cut (the spec checks it after; with the spec's own count both can
 *    only hold when retransmit_limit is 1). ncwnd is not changed (only held in range);
 *    the NIC marker trails (UpdateTimeMarker) so that it keeps moving across the wrap.
 *  - Resource-exhaustion NACK (10.3.3): ncwnd *= 1 - max_nic_md when the last change
 *    was an increase or an RTT elapsed; direction becomes decrease.
 *  - PLB (10.4) runs on ACK events only (not NACK, not retransmit), old_window =
 *    min(fcwnd, ncwnd) of the event, delay_target = this event's fabric delay target.
 *  - A fabric delay with (t3 - t2) > (t4 - t1) (remote hold longer than the round
 *    trip: clock trouble) counts as 0, not as a huge modular value.
 */
#ifndef FC_RUE_H
#define FC_RUE_H

#include <stdint.h>

#include "rue_if.h"

#define FC_RUE_FCWND_FP_MAX 0x1FFFFFu /* 11 integer + 10 fraction bits */
#define FC_RUE_NCWND_MAX 0x7FFu       /* 11 bits */
#define FC_RUE_IPG_MAX 0xFFFFFu       /* 20 bits */
#define FC_RUE_TS_MAX FC_TS24_MASK    /* 24-bit time fields */
#define FC_RUE_OPAQUE_RETX_MAX 3u     /* cc_opaque: successive retransmit events */

/* Parameters of spec 10.5. Defaults (fc_rue_cfg_default) are Google's public Falcon
 * simulator (isekai) defaults, as the issue asks, except where noted. Times in ns. */
struct fc_rue_cfg {
	/* 10.5.1 fabric congestion window */
	double max_fcwnd;             /* 256 packets */
	double min_fcwnd;             /* 0.01 packets (pacing at 100 RTT per packet) */
	double fabric_additive_increment;  /* 1.0 packet per RTT */
	double fabric_md_factor;      /* fabric_multiplicative_decrease_factor, 0.8 */
	double max_fabric_md;         /* max_fabric_multiplicative_decrease_factor, 0.5 */
	uint32_t base_delay_target_ns; /* 25000 (25 us = 191 ts); used when the event's
				       * base_delay_target is 0 */
	/* 10.5.2 NIC congestion window */
	uint32_t max_ncwnd;           /* 256 packets (at most FC_RUE_NCWND_MAX) */
	uint32_t min_ncwnd;           /* 1 packet */
	double nic_additive_increment; /* 1.0 packet per RTT */
	double nic_md_factor;         /* nic_multiplicative_decrease_factor, 0.8 */
	double max_nic_md;            /* max_nic_multiplicative_decrease_factor, 0.5 */
	uint32_t target_rx_buffer_level; /* 15 of the 0..31 quantized levels */
	/* 10.5.3 PLB */
	int plb_enable;               /* 0: off (simulator: randomize_path = false) */
	double plb_target_delay_multiplier; /* 1.01 */
	double plb_congestion_threshold;    /* 0.5 */
	uint32_t plb_attempt_threshold;     /* 5 congested RTTs in a row */
	/* 10.5.4 common */
	double rtt_smoothing_alpha;   /* 0.75 (weight of the old state, GetSmoothed) */
	double delay_smoothing_alpha; /* 0.0: no delay smoothing */
	uint32_t topology_scaling_per_hop_ns; /* 1000 (1 us per forward hop) */
	double retransmit_timeout_scalar; /* 2.0 */
	uint32_t retransmit_limit;    /* 3 */
	uint32_t min_rto_ns;          /* min_retransmission_timeout: 250000 (the issue's
				       * value; the simulator's is ~1 ms) */
	uint32_t initial_rto_ns;      /* 1000000: RTO before the first RTT sample */
	double min_flow_scaling_window; /* 0.1 packets */
	double max_flow_scaling_window; /* 256 packets (= max_fcwnd) */
	uint32_t max_flow_scaling_ns; /* 100000 (100 us) */
	/* initial windows: what a new connection's PDL starts with (pdl.c's defaults), and
	 * what the RUE assumes when an event carries fcwnd 0 / ncwnd 0 */
	double initial_fcwnd;         /* 32 packets */
	uint32_t initial_ncwnd;       /* 64 packets */
};

struct fc_rue_stats {
	uint64_t events;        /* events processed */
	uint64_t bad_events;    /* refused: unknown event type */
	uint64_t reroutes;      /* results with randomize_path = 1 */
	uint64_t plb_untracked; /* PLB skipped: connection table full */
};

struct fc_rue;

/* Fill c with the defaults listed in struct fc_rue_cfg. */
void fc_rue_cfg_default(struct fc_rue_cfg *c);

/* A RUE with PLB state for at most max_conns connections at once (the table never
 * grows; 0 is allowed: PLB then tracks nothing). Returns NULL and sets errno: EINVAL
 * for a bad config (a window range empty or outside the field widths, a factor outside
 * [0, 1], alpha outside [0, 1), min_flow_scaling_window >= max_flow_scaling_window, a
 * zero retransmit_limit or RTO, max_conns > 2^24), ENOMEM. */
struct fc_rue *fc_rue_new(const struct fc_rue_cfg *c, uint32_t max_conns);
void fc_rue_free(struct fc_rue *r);

/* Process one CC event (10.6.2.1) at time now_ts (ts units, any 24-bit wrap; t4 for
 * ACK/NACK events) and fill every field of *res (10.6.2.2). Input fields are masked to
 * their widths. Returns 0, or -EINVAL for an unknown event type (res then echoes the
 * event's state unchanged, so applying it is harmless). */
int fc_rue_process(struct fc_rue *r, const struct fc_cc_event *ev, uint32_t now_ts,
		   struct fc_cc_result *res);

/* Drop the PLB state of a connection (on close), so its slot can be reused. */
void fc_rue_forget(struct fc_rue *r, uint32_t cid);

void fc_rue_get_stats(const struct fc_rue *r, struct fc_rue_stats *s);

/* ---- pure helpers, exposed for tests ---- */

/* 10.1 / 10.6.2.1 delay_select: the delay signal of an ACK/NACK event, and its rtt
 * (t4 - t1), modulo 2^24. */
uint32_t fc_rue_delay_ts(const struct fc_cc_event *ev);
uint32_t fc_rue_rtt_ts(const struct fc_cc_event *ev);

/* 10.3.4 GetSmoothed, state 0 = no sample yet; rounded to nearest, 24 bits. */
uint32_t fc_rue_smooth(double alpha, uint32_t state_ts, uint32_t sample_ts);

/* 10.3.4 FabricDelayTarget in ts (unrounded): base + flow scaling (clamped to
 * [0, max_flow_scaling]) + topology_scaling_per_hop * hops. base_ts 0 = the config's. */
double fc_rue_target_delay(const struct fc_rue *r, uint32_t base_ts, uint32_t fcwnd_fp,
			   unsigned hops);

/* 10.3.4 HasRttElapsed: (now - marker) mod 2^24 >= rtt. */
int fc_rue_rtt_elapsed(uint32_t now_ts, uint32_t marker_ts, uint32_t rtt_ts);

/* 10.3.4 UpdateTimeMarker: now - rtt if the marker is more than an RTT old, else the
 * marker; mod 2^24. */
uint32_t fc_rue_update_marker(uint32_t now_ts, uint32_t marker_ts, uint32_t rtt_ts);

/* 10.3.4 ComputeInterPacketGap (our reading): 0 if fcwnd > 1, else rtt / fcwnd rounded,
 * saturated at 20 bits. */
uint32_t fc_rue_ipg(uint32_t fcwnd_fp, uint32_t srtt_ts);

/* 10.3.2 retransmit timeout for a smoothed rtt, saturated at 24 bits. */
uint32_t fc_rue_rto(const struct fc_rue *r, uint32_t srtt_ts);

#endif
