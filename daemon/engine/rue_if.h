/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rue_if.h - what the packet delivery sublayer tells the rate update engine (RUE) and
 * what it applies from it (spec 10.6.2). Host-order structs with the spec's field
 * meanings; the bit-packed queue records of 10.6.2.1/10.6.2.2 are built from these.
 *
 * Time fields are in wire timestamp units (131.072 ns, 24-bit where the spec says so).
 */
#ifndef FC_RUE_IF_H
#define FC_RUE_IF_H

#include <stdint.h>

/* Congestion windows are fixed point: 10 fraction bits (fcwnd_fraction, 10.6.2.1). */
#define FC_CWND_FRAC_BITS 10
#define FC_CWND_ONE (1u << FC_CWND_FRAC_BITS)

enum fc_rue_event_type { /* 10.6.2.1 event_type */
	FC_RUE_EV_ACK = 0,
	FC_RUE_EV_NACK = 1,
	FC_RUE_EV_RETX = 2,
};

enum fc_retx_reason { /* 10.6.2.1 retransmit_reason */
	FC_RETX_RTO = 0,
	FC_RETX_EARLY = 1,
};

struct fc_cc_event {
	uint32_t cid;
	uint8_t type;              /* enum fc_rue_event_type */
	uint32_t t1, t2, t3, t4;   /* 24-bit, 131.072 ns units (ACK/NACK events) */
	uint8_t retx_count;        /* RETX events: the packet's retransmissions so far */
	uint8_t retx_reason;       /* enum fc_retx_reason */
	uint8_t nack_code;
	uint8_t forward_hops;      /* from the ACK's CC info */
	uint8_t rx_buffer_level;   /* quantized, 5 bits, from the ACK's CC info */
	uint32_t cc_metadata;      /* the ACK's RUE info */
	uint16_t num_packets_acked;/* since the previous event, saturating at 10 bits */
	uint8_t eack;              /* triggered by an EACK */
	uint8_t eack_drop;         /* the EACK's bitmaps showed a loss (OOO-distance) */
	uint16_t ecn_accumulated;  /* ECN count from the ACK's CC info */
	/* the connection's current CC state, echoed for the RUE (10.6.2.1) */
	uint32_t fcwnd_fp;         /* FC_CWND_ONE = one packet */
	uint32_t ncwnd;
	uint32_t inter_packet_gap; /* 131.072 ns units */
	uint32_t retransmit_timeout; /* 131.072 ns units */
};

struct fc_cc_result { /* 10.6.2.2, the parts the packet delivery sublayer applies */
	uint32_t cid;
	uint8_t randomize_path;
	uint32_t fcwnd_fp;
	uint32_t ncwnd;
	uint32_t inter_packet_gap;   /* 131.072 ns units */
	uint32_t retransmit_timeout; /* 131.072 ns units */
};

#endif
