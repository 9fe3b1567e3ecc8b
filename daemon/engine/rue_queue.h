/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rue_queue.h - the interface between the packet delivery sublayer (PDL) and the rate
 * update engine (RUE) of spec 10.6: the fixed 64-byte CC event and CC result records
 * (10.6.2.1, 10.6.2.2), the single-producer single-consumer queues that carry them, and
 * the event admission policy of 10.6.1.
 *
 * Records
 * -------
 * A record is 64 bytes = 512 bits. Bit n of a record is bit (7 - n % 8) of byte n / 8:
 * bit 0 is the most significant bit of byte 0, bit 511 the least significant bit of
 * byte 63. Fields follow the spec's table order; each field is stored most significant
 * bit first, i.e. a field of width w at offset o holds its bit w-1 in record bit o and
 * its bit 0 in record bit o+w-1. Reserved bits are written 0 and ignored when read.
 *
 * CC event (10.6.2.1), 512 bits:
 *   offset width field                      struct fc_cc_event member
 *        0    24 connection_id              cid
 *       24     2 event_type                 type
 *       26    24 t1                         t1
 *       50    24 t2                         t2
 *       74    24 t3                         t3
 *       98    24 t4                         t4
 *      122     3 retransmit_count           retx_count
 *      125     1 retransmit_reason          retx_reason
 *      126     8 nack_code                  nack_code
 *      134     4 forward_hops               forward_hops
 *      138     5 rx_buffer_level            rx_buffer_level
 *      143    24 cc_metadata                cc_metadata
 *      167    10 fcwnd_fraction             fcwnd_fp bits [9:0]
 *      177    11 fcwnd_integer              fcwnd_fp bits [20:10]
 *      188    20 inter_packet_gap           inter_packet_gap
 *      208    11 ncwnd                      ncwnd
 *      219    24 retransmit_timeout         retransmit_timeout
 *      243    10 num_packets_acked          num_packets_acked
 *      253     1 eack_drop                  eack_drop
 *      254     1 eack                       eack
 *      255     8 reserved                   -
 *      263     2 event_queue_select         event_queue_select
 *      265     2 delay_select               delay_select
 *      267    24 fabric_window_time_marker  fabric_window_time_marker
 *      291    24 nic_window_time_marker     nic_window_time_marker
 *      315     1 ncwnd_direction            ncwnd_direction
 *      316    24 base_delay_target          base_delay_target
 *      340    24 delay_state                delay_state
 *      364    24 rtt_state                  rtt_state
 *      388     2 cc_opaque                  cc_opaque
 *      390    14 ecn_accumulated            ecn_accumulated
 *      404   107 reserved                   -
 *      511     1 gen                        gen
 *
 * CC result (10.6.2.2). The spec's table adds up to 508 bits (248 bits of fields and
 * 260 of padding). We round the record up to 64 bytes like the event and, as Falcon
 * does, put the generation bit in the last bit of the padding, which is record bit 511
 * (the same place as in the event, so one polling routine serves both queues). The
 * padding therefore spans bits 248..510 here (260 + 3 bits).
 *   offset width field                      struct fc_cc_result member
 *        0    24 connection_id              cid
 *       24     1 randomize_path             randomize_path
 *       25    24 cc_metadata                cc_metadata
 *       49    10 fcwnd_fraction             fcwnd_fp bits [9:0]
 *       59    11 fcwnd                      fcwnd_fp bits [20:10]
 *       70    20 inter_packet_gap           inter_packet_gap
 *       90    11 ncwnd                      ncwnd
 *      101    24 retransmit_timeout         retransmit_timeout
 *      125    24 fabric_window_time_marker  fabric_window_time_marker
 *      149    24 nic_window_time_marker     nic_window_time_marker
 *      173     1 ncwnd_direction            ncwnd_direction
 *      174    24 base_delay_target          base_delay_target
 *      198    24 delay_state                delay_state
 *      222    24 rtt_state                  rtt_state
 *      246     2 cc_opaque                  cc_opaque
 *      248   263 reserved (padding)         -
 *      511     1 gen                        gen
 *
 * Packing masks every member to its width: bits above the width are dropped silently
 * (fcwnd_fp keeps its low 21 bits). fc_cc_event_fits() / fc_cc_result_fits() tell
 * whether nothing would be dropped. Unpacking zero-fills the struct first, so members
 * never carry stale bits; the 8-bit reserved field of the event has no member.
 *
 * Queues
 * ------
 * struct fc_rue_q is a bounded ring of 64-byte records with one producer thread and one
 * consumer thread, no locks, no allocation after fc_rue_q_new. The producer owns tail,
 * the consumer owns head (free-running 32-bit indexes). push fills the slot and then
 * publishes tail with a release store; pop loads tail with acquire before reading the
 * slot, and publishes head with release after copying it out, which the producer loads
 * with acquire before reusing the slot. The PDL produces on the event queue and consumes
 * from the result queue; the RUE thread the other way round.
 *
 * The indexes make the gen bit unnecessary for this ring; fc_rue_q_gen() still gives
 * the value a producer should put in it (1 on the first pass over the ring, 0 on the
 * second, and so on), so records look as Falcon's queues would to a poller of gen.
 */
#ifndef FC_RUE_QUEUE_H
#define FC_RUE_QUEUE_H

#include <stdint.h>

#include "rue_if.h"

#define FC_RUE_REC_BYTES 64
#define FC_RUE_GEN_BIT 511      /* record bit of gen, in both record kinds */
#define FC_RUE_Q_MIN_CAP 2u
#define FC_RUE_Q_MAX_CAP (1u << 20)

/* ---- records (10.6.2) ---- */

/* Pack ev into rec (all 64 bytes written). Members wider than their field are
 * truncated to it; reserved bits are 0. */
void fc_cc_event_pack(const struct fc_cc_event *ev, uint8_t rec[FC_RUE_REC_BYTES]);
/* Unpack rec into ev (every member written; reserved bits ignored). Any 64 bytes are
 * valid input. */
void fc_cc_event_unpack(const uint8_t rec[FC_RUE_REC_BYTES], struct fc_cc_event *ev);
/* 1 when every member of ev fits its field width (packing loses nothing), else 0. */
int fc_cc_event_fits(const struct fc_cc_event *ev);

void fc_cc_result_pack(const struct fc_cc_result *res, uint8_t rec[FC_RUE_REC_BYTES]);
void fc_cc_result_unpack(const uint8_t rec[FC_RUE_REC_BYTES], struct fc_cc_result *res);
int fc_cc_result_fits(const struct fc_cc_result *res);

/* ---- SPSC queue ---- */

struct fc_rue_q;

struct fc_rue_q_counters {
	uint64_t pushes;     /* records queued (producer) */
	uint64_t full_drops; /* push or offer refused because the ring was full (producer) */
	uint64_t refused;    /* offer refused by the admission policy (producer) */
	uint64_t pops;       /* records taken out (consumer) */
};

/* Create a queue of cap records; cap must be a power of two in
 * [FC_RUE_Q_MIN_CAP, FC_RUE_Q_MAX_CAP]. Returns NULL with errno EINVAL (bad cap) or
 * ENOMEM. */
struct fc_rue_q *fc_rue_q_new(uint32_t cap);
/* Free q (NULL is fine). Neither side may use it any more. */
void fc_rue_q_free(struct fc_rue_q *q);

/* Producer only. Copy rec into the ring. Returns 0, or -EAGAIN when the ring is full
 * (counted in full_drops; nothing changes otherwise). */
int fc_rue_q_push(struct fc_rue_q *q, const uint8_t rec[FC_RUE_REC_BYTES]);
/* Consumer only. Copy the oldest record out into rec. Returns 0, or -EAGAIN when the
 * ring is empty (rec untouched). */
int fc_rue_q_pop(struct fc_rue_q *q, uint8_t rec[FC_RUE_REC_BYTES]);
/* Records in the ring, from either side: exact for the calling side's own index, the
 * other side's may be stale, so the producer sees an upper bound and the consumer a
 * lower bound. Always in [0, capacity]. */
uint32_t fc_rue_q_len(const struct fc_rue_q *q);
uint32_t fc_rue_q_cap(const struct fc_rue_q *q);
/* Producer only: the gen bit the next pushed record should carry (lap parity, 1 on
 * the first lap). */
unsigned fc_rue_q_gen(const struct fc_rue_q *q);
/* A snapshot of the counters; any thread (each counter is read atomically, relaxed). */
void fc_rue_q_counters(const struct fc_rue_q *q, struct fc_rue_q_counters *out);

/* ---- admission policy (10.6.1) ---- */

/* Thresholds against the event queue occupancy, in percent of its capacity (0..100;
 * a value above 100 is never reached). The spec's figure is lost; this module decides,
 * for occupancy occ of a queue of capacity cap (pred = FC_CC_P1 | FC_CC_P2 of pdl.h):
 *   occ >= cap (full)                  refuse every event
 *   ACK events:
 *     occ <  t_low                     admit
 *     t_low <= occ < t_mid             admit if P1 or P2
 *     t_mid <= occ < t_high            admit only if P1 and P2
 *     occ >= t_high                    refuse
 *   NACK and RETX events (type != ACK) are admitted whenever the queue is not full:
 *   they carry the loss signals that make Swift back off, and they are few, so they
 *   get the headroom above t_high to themselves.
 * "occ >= t" means occ * 100 >= t * cap (exact, no rounding). The bands are tested
 * from the top down, so any ordering of the thresholds gives a defined result (a band
 * whose lower bound is above the next one is simply empty). */
struct fc_rue_admit_cfg {
	uint32_t t_low;  /* percent; default FC_RUE_ADMIT_LOW_PCT */
	uint32_t t_mid;  /* percent; default FC_RUE_ADMIT_MID_PCT */
	uint32_t t_high; /* percent; default FC_RUE_ADMIT_HIGH_PCT */
};

/* Defaults: the RUE falls behind once a quarter of the queue waits; from half full on
 * only events that are both overdue (P1) and stand for many ACKed packets (P2) go in,
 * and the last quarter is kept for NACK and retransmission events. */
#define FC_RUE_ADMIT_LOW_PCT 25u
#define FC_RUE_ADMIT_MID_PCT 50u
#define FC_RUE_ADMIT_HIGH_PCT 75u

void fc_rue_admit_cfg_default(struct fc_rue_admit_cfg *cfg);

/* 1 to admit an event of type (enum fc_rue_event_type) with predicates pred into a
 * queue holding occupancy of capacity records, 0 to refuse it. cfg NULL = defaults. */
int fc_rue_admit(const struct fc_rue_admit_cfg *cfg, uint32_t occupancy, uint32_t capacity,
		 uint8_t type, unsigned pred);

/* Producer only (the PDL's cc_event hook calls this). Apply the policy to ev at the
 * current occupancy, then pack it with gen = fc_rue_q_gen(q) (ev->gen is ignored) and
 * push it. cfg NULL = defaults. Returns 0 when queued, -EBUSY when refused by the
 * policy (counted in refused), -EAGAIN when the queue is full (counted in
 * full_drops). */
int fc_rue_q_offer(struct fc_rue_q *q, const struct fc_rue_admit_cfg *cfg,
		   const struct fc_cc_event *ev, unsigned pred);

#endif
