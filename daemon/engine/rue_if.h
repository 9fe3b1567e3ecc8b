/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rue_if.h - what the packet delivery sublayer tells the rate update engine (RUE) and
 * what it applies from it (spec 10.6.2). Host-order structs with every field of the
 * spec's CC event (10.6.2.1) and CC result (10.6.2.2); rue_queue.{c,h} packs them into
 * the fixed-size records of the queues between the PDL and the RUE thread.
 *
 * Units: every time field is in wire timestamp units (131.072 ns, fc_ns_to_ts) and
 * 24 bits wide where the spec says 24 (they wrap; 10.3.6 guards against that). Windows
 * are fixed point with FC_CWND_FRAC_BITS fraction bits (fcwnd_integer + fcwnd_fraction).
 *
 * Per-connection CC state lives in the PDL and travels in every event (fcwnd, ncwnd,
 * markers, smoothed delay/rtt, ...): the RUE is stateless per event except for what it
 * keeps itself (PLB counters, keyed by connection).
 */
#ifndef FC_RUE_IF_H
#define FC_RUE_IF_H

#include <stdint.h>

/* Congestion windows are fixed point: 10 fraction bits (fcwnd_fraction, 10.6.2.1). */
#define FC_CWND_FRAC_BITS 10
#define FC_CWND_ONE (1u << FC_CWND_FRAC_BITS)
#define FC_TS24_MASK 0xFFFFFFu

enum fc_rue_event_type { /* 10.6.2.1 event_type, 2 bits */
	FC_RUE_EV_ACK = 0,
	FC_RUE_EV_NACK = 1,
	FC_RUE_EV_RETX = 2,
};

enum fc_retx_reason { /* 10.6.2.1 retransmit_reason, 1 bit */
	FC_RETX_RTO = 0,
	FC_RETX_EARLY = 1,
};

enum fc_delay_select { /* 10.6.2.1 delay_select, 2 bits */
	FC_DELAY_FULL = 0,   /* t4 - t1 */
	FC_DELAY_FABRIC = 1, /* (t4 - t1) - (t3 - t2) */
	FC_DELAY_FWD = 2,    /* t2 - t1 (needs synchronized clocks) */
	FC_DELAY_REV = 3,    /* t4 - t3 */
};

enum fc_ncwnd_dir { FC_NCWND_DECREASE = 0, FC_NCWND_INCREASE = 1 };

/* One CC event (10.6.2.1), field widths in the comments. */
struct fc_cc_event {
	uint32_t cid;                 /* 24 */
	uint8_t type;                 /* 2, enum fc_rue_event_type */
	uint32_t t1_ts, t2_ts, t3_ts, t4_ts;      /* 24 each: ACK/NACK events */
	uint8_t retx_count;           /* 3: RETX events, cumulative retransmissions */
	uint8_t retx_reason;          /* 1, enum fc_retx_reason */
	uint8_t nack_code;            /* 8 */
	uint8_t forward_hops;         /* 4 */
	uint8_t rx_buffer_level;      /* 5: the peer's quantized buffer level (ACK/NACK) */
	uint32_t cc_metadata;         /* 24: RUE info of the ACK */
	uint32_t fcwnd_fp;            /* 11 integer + 10 fraction bits */
	uint32_t inter_packet_gap_ts;    /* 20 */
	uint32_t ncwnd;               /* 11 */
	uint32_t retransmit_timeout_ts;  /* 24 */
	uint16_t num_packets_acked;   /* 10, saturating */
	uint8_t eack_drop;            /* 1 */
	uint8_t eack;                 /* 1 */
	uint8_t event_queue_select;   /* 2 */
	uint8_t delay_select;         /* 2, enum fc_delay_select */
	uint32_t fabric_window_time_marker_ts; /* 24 */
	uint32_t nic_window_time_marker_ts;    /* 24 */
	uint8_t ncwnd_direction;      /* 1, enum fc_ncwnd_dir */
	uint32_t base_delay_target_ts;   /* 24 */
	uint32_t delay_state_ts;         /* 24: smoothed delay */
	uint32_t rtt_state_ts;           /* 24: smoothed RTT */
	uint8_t cc_opaque;            /* 2: the software RUE's own bits */
	uint16_t ecn_accumulated;     /* 14 */
	uint8_t gen;                  /* 1: generation bit for polling */
};

/* One CC result (10.6.2.2). */
struct fc_cc_result {
	uint32_t cid;                 /* 24 */
	uint8_t randomize_path;       /* 1: PLB asks for another path (10.4) */
	uint32_t cc_metadata;         /* 24 */
	uint32_t fcwnd_fp;            /* 11 + 10 */
	uint32_t inter_packet_gap_ts;    /* 20 */
	uint32_t ncwnd;               /* 11 */
	uint32_t retransmit_timeout_ts;  /* 24 */
	uint32_t fabric_window_time_marker_ts; /* 24 */
	uint32_t nic_window_time_marker_ts;    /* 24 */
	uint8_t ncwnd_direction;      /* 1 */
	uint32_t base_delay_target_ts;   /* 24 */
	uint32_t delay_state_ts;         /* 24 */
	uint32_t rtt_state_ts;           /* 24 */
	uint8_t cc_opaque;            /* 2 */
	uint8_t gen;                  /* 1 */
};

#endif
