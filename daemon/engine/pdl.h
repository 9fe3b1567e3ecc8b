/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pdl.h - the packet delivery sublayer of one Falcon connection (spec section 9).
 *
 * Sans-I/O: the caller hands in received packets and the current time, and pulls out
 * packets to transmit and the next time it must call again. No sockets, no clocks, no
 * threads, no allocation after fc_pdl_new.
 *
 *   transaction sublayer --fc_pdl_submit--> [tx windows] --fc_pdl_poll_tx--> network
 *   network --fc_pdl_rx--> [rx windows (window.h)] --ops->deliver--> transaction sublayer
 *   transaction sublayer --fc_pdl_ulp_ack / fc_pdl_ulp_nack--> ACK / NACK generation
 *
 * Each connection is both a transmitter (9.1) and a receiver (9.2). Payload buffers stay
 * owned by the caller: a buffer handed to fc_pdl_submit must stay valid until the packet
 * is released through ops->tx_done (9.1.3: the transmitter keeps what it needs to
 * rebuild the packet for retransmission).
 */
#ifndef FC_PDL_H
#define FC_PDL_H

#include <stddef.h>
#include <stdint.h>

#include "falcon/window.h"
#include "falcon/wire.h"
#include "rue_if.h"
#include "rx_meta.h"

enum fc_win_id { FC_WIN_REQ = 0, FC_WIN_DATA = 1 };

#define FC_TX_WIN_MAX 1024  /* largest transmit window, packets */
#define FC_PDL_RING_MIN 8   /* a transmit ring's first size, packets (it grows to the window) */
#define FC_PDL_NACK_QUEUE 64 /* NACKs waiting to be sent; more are dropped and counted */

#define FC_CC_P1 0x1u /* 10.6.1 predicate 1: time since the last event */
#define FC_CC_P2 0x2u /* 10.6.1 predicate 2: packets acknowledged since the last event */

#define FC_RTO_BACKOFF_MAX 6u /* the longest wait is 64 RTOs */

struct fc_pdl_cfg {
	uint32_t local_cid;          /* CID peers put in packets to us */
	uint32_t remote_cid;         /* CID we put in packets to the peer */
	uint32_t dest_fn;            /* destination function (7.2) */
	uint32_t proto;              /* FC_PROTO_RDMA */
	int ordered;                 /* ordered connection: (re)transmit in submission order (9.1.3) */
	uint32_t tx_psn[2];          /* initial transmit PSN per window, from the CM */
	uint32_t rx_psn[2];          /* initial receive base PSN per window, from the CM */
	uint32_t tx_window[2];       /* transmit window per sliding window, <= FC_TX_WIN_MAX */
	uint32_t ack_coalesce_count; /* send an ACK after this many packets (9.1.6) */
	uint64_t ack_coalesce_ns;    /* ... or this long after the first unacknowledged one */
	uint32_t ar_fcwnd_threshold; /* AR on every packet while fcwnd <= this (9.1.3.1), packets */
	uint32_t ar_percent;         /* else on this percentage of packets */
	uint32_t ooo_threshold;      /* early retransmission distance (9.1.4) */
	uint32_t max_retx;           /* max retransmit attempts (9.1.1, section 11); the
				      * n-th waits RTO << min(n, FC_RTO_BACKOFF_MAX) */
	uint64_t give_up_ns;         /* with max_retx spent, a packet is given up only once
				      * the peer has also been silent this long (fc_pdl_quiet_since;
				      * verbs' timeout x (retry_cnt + 1)); until then it is
				      * retransmitted at the longest backoff. 0: max_retx alone;
				      * UINT64_MAX: never (verbs' timeout 0) */
	uint64_t rto_ns;             /* retransmit timeout until the RUE sets one */
	uint32_t fcwnd_fp;           /* fabric window, FC_CWND_ONE = 1 packet */
	uint32_t ncwnd;              /* NIC window, packets */
	uint64_t ipg_ns;             /* inter-packet gap when fcwnd < 1 */
	uint32_t hops;               /* forward hop count to report in ACKs (CC info) */
	uint64_t cc_event_ns;        /* 10.6.1 P1 threshold: time since the last event */
	uint32_t cc_event_pkts;      /* 10.6.1 P2 threshold: packets acked since it */
	uint8_t delay_select;        /* enum fc_delay_select, passed to the RUE */
	uint32_t base_delay_target_ts;  /* 131.072 ns units, passed to the RUE */
};

/* Defaults of the issue / Google's public Falcon simulator (documented in rue_if.h). */
void fc_pdl_cfg_default(struct fc_pdl_cfg *cfg);

/* A packet the transaction sublayer hands to the PDL. */
struct fc_pdl_tx_req {
	uint8_t type;        /* FC_PKT_PULL_REQ, FC_PKT_PULL_DATA or FC_PKT_PUSH_DATA */
	uint32_t rsn;
	uint16_t req_len;    /* Pull Request: length of the expected Pull Data payload */
	const void *payload; /* ULP headers + data; valid until ops->tx_done */
	uint32_t len;
	uint64_t cookie;     /* opaque, returned in tx_done */
	/* then gather_len more bytes, fetched by ops->gather whenever the packet is encoded
	 * (first transmission and every retransmission), written straight into the frame:
	 * one copy per byte. As with verbs, the memory behind them must not change until
	 * the packet is released (tx_done). len + gather_len <= FC_FALCON_PUSH_MAX. */
	uint32_t gather_len;
	uint8_t last;        /* the ULP has nothing queued behind this packet: when it goes
			      * out with nothing unsent behind it in the PDL either, it asks
			      * for an ACK (AR), so a lone operation is acknowledged at once
			      * instead of by the coalescing timer (our AR policy, 9.1.3.1) */
};

/* A packet the PDL delivers to the transaction sublayer (9.2.2: passed all checks). */
struct fc_pdl_rx_pkt {
	uint8_t type;
	uint8_t window;      /* enum fc_win_id */
	uint8_t resync_code; /* Resync only */
	uint8_t resync_pkt_type;
	uint32_t psn, rsn;
	uint16_t req_len;
	const uint8_t *payload; /* valid during the callback only */
	uint32_t len;
};

/* A refusal by the transaction sublayer (spec 7.8 fields). */
struct fc_pdl_nack {
	uint8_t code;        /* enum fc_nack_code */
	uint8_t rnr_timeout; /* 5-bit RNR timeout code, for FC_NACK_RNR */
	uint8_t ulp_code;    /* opaque ULP NACK code */
};

/* Why a transmitted packet was released (ops->tx_done). */
enum fc_tx_status {
	FC_TX_ACKED = 0,     /* acknowledged by the receiver */
	FC_TX_NACKED,        /* NACKed with CIE / NRE / invalid CID / xLR and resynced (9.2.4) */
	FC_TX_RETX_EXHAUSTED,/* max retransmit attempts; replaced by a Resync (section 11) */
	FC_TX_CONN_DEAD,     /* connection failed; resources reclaimed */
};

struct fc_pdl_ops {
	/* A new packet passed the acceptance checks. Return 0 to take it: Push Data then
	 * waits for fc_pdl_ulp_ack or fc_pdl_ulp_nack, everything else is acknowledged.
	 * Return 1 with *nack filled to refuse it at once (resource drop, RNR, CIE...): it
	 * is taken out of the window again and the NACK sent (9.1.7, section 11). The
	 * return value is ignored for Resync. */
	int (*deliver)(void *ctx, const struct fc_pdl_rx_pkt *pkt, struct fc_pdl_nack *nack);
	/* A submitted packet is released; its payload buffer may be reused. Called exactly
	 * once per fc_pdl_submit that returned 0. nack_code is set for FC_TX_NACKED. */
	void (*tx_done)(void *ctx, uint64_t cookie, uint32_t rsn, enum fc_tx_status st,
			uint8_t nack_code);
	/* A NACK arrived for one of our packets (9.2.4): RNR (with its timeout), resource
	 * drop, or a ULP error; informational, tx_done follows for the ULP errors. pkt_type
	 * tells a request (Pull Request, Push Data) from our Pull Data of the same RSN. */
	void (*nack)(void *ctx, uint32_t rsn, uint8_t pkt_type, uint8_t nack_code,
		     uint8_t ulp_code, uint64_t rnr_timeout_ns);
	/* The connection hit a fatal error (a Resync exhausted its retransmissions). */
	void (*fatal)(void *ctx, int reason);
	/* A congestion-control event for the RUE (10.6.2.1). pred has FC_CC_P1 (time since
	 * the last event over the threshold) and FC_CC_P2 (packets acknowledged since the
	 * last event over the threshold) for the admission policy of 10.6.1. Return 0 when
	 * the event was queued, non-zero when it was not (policy or full queue): the PDL
	 * then keeps counting acknowledged packets toward the next event. May be NULL. */
	int (*cc_event)(void *ctx, const struct fc_cc_event *ev, unsigned pred);
	/* PLB asked for another path (10.4): the I/O layer changes the UDP source port
	 * (IPv4) or the flow label (IPv6) to fc_pdl_path(). May be NULL. */
	void (*reroute)(void *ctx, uint32_t path);
	/* Write len bytes of the payload of the packet submitted with cookie, from its byte
	 * offset past the inline bytes, to dst (inside the frame being built). Needed when
	 * a submission has gather_len; may be NULL otherwise. Must not call into the PDL. */
	void (*gather)(void *ctx, uint64_t cookie, uint32_t offset, void *dst, uint32_t len);
};

struct fc_pdl_counters {
	uint64_t tx_pkts, tx_bytes, tx_new, rx_pkts, rx_bytes;
	uint64_t retx_timeout, retx_early, retx_own;
	uint64_t nack_resource_rx; /* resource NACKs: the RUE shrinks ncwnd, the timer resends */
	uint64_t backs_tx, eacks_tx, nacks_tx, resyncs_tx;
	/* why each ACK went out (9.1.6): an AR bit, a duplicate or a Resync asked for it; the
	 * coalescing count was reached; the coalescing timer expired */
	uint64_t acks_by_request, acks_by_count, acks_by_timer;
	uint64_t backs_rx, eacks_rx, nacks_rx, resyncs_rx;
	uint64_t acks_stale;      /* ACK/NACK with a base older than ours: discarded (9.2.3) */
	uint64_t acks_bogus;      /* ACK/NACK acknowledging PSNs never sent: discarded */
	uint64_t rx_dup, rx_old, rx_oow, rx_decode_err, rx_bad_cid, rx_dead;
	uint64_t nack_queue_full;
	uint64_t rx_refused_bad;  /* deliver refused with an invalid NACK: dropped */
	uint64_t rx_xdp_marked;   /* data packets XDP had marked (fc_pdl_rx_meta) */
	uint64_t rx_xdp_unmarked; /* flagged xdp_marked but not marked: classified here */
	uint64_t piggyback_acks;  /* base PSNs advanced by a data packet's piggybacked ACK */
	uint64_t cc_events, cc_events_skipped, reroutes;
	uint64_t fatal;
	uint64_t stalls;          /* fc_pdl_stalled: timers re-armed after the caller's stall */
	uint64_t ring_grows;      /* a transmit ring doubled (memory follows use) */
	uint64_t ring_grow_fail;  /* ... or could not for want of memory: -EAGAIN instead */
};

struct fc_pdl;

/* Create a connection's PDL. rx may point at shared window memory (an mmapped BPF map in
 * XDP mode) or be NULL to use private memory; it is initialised from cfg->rx_psn.
 * Returns NULL and sets errno (EINVAL for a bad config, ENOMEM). */
struct fc_pdl *fc_pdl_new(const struct fc_pdl_cfg *cfg, struct fc_rx_state *rx,
			  const struct fc_pdl_ops *ops, void *ctx);
void fc_pdl_free(struct fc_pdl *p);

/* Queue a packet for transmission; assigns its PSN (9.1.3). Returns 0, -EAGAIN when the
 * window's ring is full (it holds up to tx_window packets, rounded up to a power of 2,
 * sent or not: it starts at FC_PDL_RING_MIN and doubles as submissions need it; a ring
 * that cannot grow for want of memory answers -EAGAIN too, counted in ring_grow_fail;
 * try again after releases), -EINVAL for a bad request, -EPIPE after a fatal error. */
int fc_pdl_submit(struct fc_pdl *p, const struct fc_pdl_tx_req *req);

/* A packet from the network (a whole Falcon packet, after PSP). tx_ns is the sender's
 * transmit time (PSP IV), now_ns our receive time. Returns 0 when the packet was
 * processed (accepted or deliberately dropped and counted), a negative FC_WIRE_ error
 * when it did not decode (counted too). */
int fc_pdl_rx(struct fc_pdl *p, const void *pkt, size_t len, uint64_t tx_ns, uint64_t now_ns);

/* fc_pdl_rx with what the I/O shell knows of the packet (rx_meta.h): times, the forward
 * hop count and ECN CE (as fc_pdl_note_path), and xdp_marked. The XDP contract: in XDP
 * mode the program runs fc_win_mark_rx on this connection's shared window (the rx
 * argument of fc_pdl_new, a BPF_F_MMAPABLE map) for Push Data, Pull Request and Pull
 * Data, with ack_now for all but Push Data, exactly as the PDL would; it drops and
 * answers what it finds old or duplicate, drops out-of-window packets (mark_rx sets
 * OWN), and passes what it found NEW with xdp_marked = 1. The PDL then processes each
 * such packet once, as new, instead of marking it itself (which would call it a
 * duplicate). Resync, ACK and NACK are passed unmarked. Same returns as fc_pdl_rx. */
int fc_pdl_rx_meta(struct fc_pdl *p, const void *pkt, size_t len, const struct fc_rx_meta *m);

/* The ULP acknowledged Push Data psn (9.2.2.4). Returns 0 or -ENOENT. */
int fc_pdl_ulp_ack(struct fc_pdl *p, uint32_t psn, uint64_t now_ns);

/* The ULP refuses packet psn of window win with nack_code (RNR, CIE, NRE, invalid CID,
 * resource): the packet is un-received and a NACK queued (9.1.7). Returns 0, -ENOENT
 * (psn not received in that window), -EAGAIN (NACK queue full; counted, the sender
 * will time out and retransmit). */
int fc_pdl_ulp_nack(struct fc_pdl *p, enum fc_win_id win, uint32_t psn, uint8_t nack_code,
		    uint8_t rnr_timeout_code, uint8_t ulp_code, uint64_t now_ns);

/* When an ACK is owed to the peer (9.2.5: an AR seen, or received packets not yet
 * acknowledged): the time it is due (0: at the next poll_tx); UINT64_MAX when none is.
 * A graceful close waits for it so the peer's last transactions complete. */
uint64_t fc_pdl_ack_owed_at(const struct fc_pdl *p);

/* Build the next packet to send into buf (a whole Falcon packet). Returns its length,
 * 0 when nothing may be sent now, or -FC_WIRE_ENOSPC when cap is too small. */
int fc_pdl_poll_tx(struct fc_pdl *p, uint64_t now_ns, void *buf, size_t cap);

/* The earliest time fc_pdl_on_timer (or poll_tx) has work: retransmit timers, ACK
 * coalescing, pacing. UINT64_MAX when idle. */
uint64_t fc_pdl_next_deadline(const struct fc_pdl *p);
void fc_pdl_on_timer(struct fc_pdl *p, uint64_t now_ns);

/* Since when the peer owes us a word and has said none: the latest of its last accepted
 * packet, the first transmission made while nothing of ours was outstanding and the end
 * of the last RNR wait (until then we owe the retransmission). A packet waiting locally
 * (window, pacing, not yet sent) owes nothing. UINT64_MAX when nothing
 * is outstanding. The connection's liveness clock (cfg.give_up_ns, the transaction
 * timeout above): silence is measured from here, never from a submission. */
uint64_t fc_pdl_quiet_since(const struct fc_pdl *p);
/* Time of the peer's last accepted packet (0: none yet). */
uint64_t fc_pdl_heard_ns(const struct fc_pdl *p);
/* The caller did not run for stall_ns (a stopped or starved process) and now_ns is when
 * it noticed: that time does not count as the peer's silence (the liveness clock moves
 * forward by stall_ns, never past now), and every retransmit timer that expired meanwhile
 * is re-armed once, one RTO from now, without counting a retry or telling the RUE: the
 * peer's answers are likely waiting in the caller's socket. O(timers armed); called on a
 * stall only. */
void fc_pdl_stalled(struct fc_pdl *p, uint64_t stall_ns, uint64_t now_ns);
/* Change cfg.give_up_ns of a live connection (verbs' modify_qp of timeout / retry_cnt). */
void fc_pdl_set_give_up(struct fc_pdl *p, uint64_t give_up_ns);

/* What the I/O shell saw of a packet's path before handing it to fc_pdl_rx: forward hop
 * count (initial TTL - received TTL) and whether IP carried ECN CE. Both go back to the
 * sender in the CC info of our ACKs and NACKs (7.7.1: hop count, cumulative ECN count). */
void fc_pdl_note_path(struct fc_pdl *p, uint8_t hops, int ecn_ce);
/* The receiver's quantized network-request buffer level (10.2, rxbuf.h), 0..31, carried
 * in our ACKs and NACKs. */
void fc_pdl_set_rxbuf_level(struct fc_pdl *p, uint8_t level);

/* Apply a RUE result (10.6.2.2): fcwnd, ncwnd, inter-packet gap, retransmit timeout. */
void fc_pdl_cc_apply(struct fc_pdl *p, const struct fc_cc_result *res);

const struct fc_pdl_counters *fc_pdl_counters(const struct fc_pdl *p);
/* Bytes this PDL allocated (struct, transmit rings, release queue, private rx windows). */
size_t fc_pdl_mem_bytes(const struct fc_pdl *p);
/* Packets submitted and not yet released, per window. */
uint32_t fc_pdl_outstanding(const struct fc_pdl *p, enum fc_win_id win);
/* Packets submitted and not yet transmitted once, per window (the scheduler above keeps
 * at most a few there, 8.3). */
uint32_t fc_pdl_unsent(const struct fc_pdl *p, enum fc_win_id win);
int fc_pdl_is_dead(const struct fc_pdl *p);
/* Give the connection up from outside (the CM learned that the peer restarted: section
 * 11's connection failure): as an exhausted retry limit does, every packet is released
 * with FC_TX_CONN_DEAD, nothing more is sent, and ops->fatal is called with reason. */
void fc_pdl_fail(struct fc_pdl *p, int reason);
/* Path selector PLB moves (starts at 0). */
uint32_t fc_pdl_path(const struct fc_pdl *p);
/* Current fabric / NIC windows and RTO, for operators and benchmarks. */
uint32_t fc_pdl_fcwnd_fp(const struct fc_pdl *p);
uint32_t fc_pdl_ncwnd(const struct fc_pdl *p);
uint64_t fc_pdl_rto_ns(const struct fc_pdl *p);
/* The smoothed RTT the RUE keeps (rtt_state, spec 10.3.2); 0 before the first sample. */
uint64_t fc_pdl_srtt_ns(const struct fc_pdl *p);
struct fc_rx_state *fc_pdl_rx_state(struct fc_pdl *p);

#endif
