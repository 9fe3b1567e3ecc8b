/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rue_queue.c - CC event / result records (spec 10.6.2), the SPSC queues between the
 * PDL and the RUE thread, and the event admission policy (10.6.1). Layouts and the
 * memory-ordering contract are in rue_queue.h.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pdl.h"
#include "rue_queue.h"

/* ---- bit fields, most significant bit first ---- */

/* Write the low w bits of v at record bit off (MSB first). The bits must be 0. */
static void put_bits(uint8_t *rec, unsigned off, unsigned w, uint32_t v)
{
	while (w > 0) {
		unsigned pos = off % 8, n = 8 - pos < w ? 8 - pos : w;
		uint32_t chunk = (v >> (w - n)) & ((1u << n) - 1);

		rec[off / 8] |= (uint8_t)(chunk << (8 - pos - n));
		off += n;
		w -= n;
	}
}

/* Read w (<= 32) bits at record bit off (MSB first). */
static uint32_t get_bits(const uint8_t *rec, unsigned off, unsigned w)
{
	uint32_t v = 0;

	while (w > 0) {
		unsigned pos = off % 8, n = 8 - pos < w ? 8 - pos : w;

		v = (v << n) | ((uint32_t)(rec[off / 8] >> (8 - pos - n)) & ((1u << n) - 1));
		off += n;
		w -= n;
	}
	return v;
}

/* One field of a record: width bits at record bit off, taken from bits
 * [shift + width - 1 : shift] of a struct member of msize bytes at moff, whose whole
 * value must fit in mwidth bits (fcwnd_fp is two fields of one 21-bit member). */
struct field {
	uint16_t off;
	uint8_t width;
	uint8_t shift;
	uint8_t mwidth;
	uint8_t msize;
	uint16_t moff;
};

#define F(o, w, s, mw, type, m) \
	{ (o), (w), (s), (mw), sizeof(((type *)0)->m), offsetof(type, m) }
#define EV(o, w, m) F(o, w, 0, w, struct fc_cc_event, m)
#define RS(o, w, m) F(o, w, 0, w, struct fc_cc_result, m)

/* spec 10.6.2.1, in table order; the reserved fields at 255 (8) and 404 (107) have no
 * entry. */
static const struct field ev_fields[] = {
	EV(0, 24, cid),
	EV(24, 2, type),
	EV(26, 24, t1_ts),
	EV(50, 24, t2_ts),
	EV(74, 24, t3_ts),
	EV(98, 24, t4_ts),
	EV(122, 3, retx_count),
	EV(125, 1, retx_reason),
	EV(126, 8, nack_code),
	EV(134, 4, forward_hops),
	EV(138, 5, rx_buffer_level),
	EV(143, 24, cc_metadata),
	F(167, 10, 0, 21, struct fc_cc_event, fcwnd_fp),  /* fcwnd_fraction */
	F(177, 11, 10, 21, struct fc_cc_event, fcwnd_fp), /* fcwnd_integer */
	EV(188, 20, inter_packet_gap_ts),
	EV(208, 11, ncwnd),
	EV(219, 24, retransmit_timeout_ts),
	EV(243, 10, num_packets_acked),
	EV(253, 1, eack_drop),
	EV(254, 1, eack),
	EV(263, 2, event_queue_select),
	EV(265, 2, delay_select),
	EV(267, 24, fabric_window_time_marker_ts),
	EV(291, 24, nic_window_time_marker_ts),
	EV(315, 1, ncwnd_direction),
	EV(316, 24, base_delay_target_ts),
	EV(340, 24, delay_state_ts),
	EV(364, 24, rtt_state_ts),
	EV(388, 2, cc_opaque),
	EV(390, 14, ecn_accumulated),
	EV(FC_RUE_GEN_BIT, 1, gen),
};

/* spec 10.6.2.2; padding 248..510 has no entry. */
static const struct field res_fields[] = {
	RS(0, 24, cid),
	RS(24, 1, randomize_path),
	RS(25, 24, cc_metadata),
	F(49, 10, 0, 21, struct fc_cc_result, fcwnd_fp),  /* fcwnd_fraction */
	F(59, 11, 10, 21, struct fc_cc_result, fcwnd_fp), /* fcwnd */
	RS(70, 20, inter_packet_gap_ts),
	RS(90, 11, ncwnd),
	RS(101, 24, retransmit_timeout_ts),
	RS(125, 24, fabric_window_time_marker_ts),
	RS(149, 24, nic_window_time_marker_ts),
	RS(173, 1, ncwnd_direction),
	RS(174, 24, base_delay_target_ts),
	RS(198, 24, delay_state_ts),
	RS(222, 24, rtt_state_ts),
	RS(246, 2, cc_opaque),
	RS(FC_RUE_GEN_BIT, 1, gen),
};

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

static uint32_t member_get(const void *s, const struct field *f)
{
	const uint8_t *p = (const uint8_t *)s + f->moff;

	switch (f->msize) {
	case 1: return *p;
	case 2: return *(const uint16_t *)p;
	default: return *(const uint32_t *)p;
	}
}

/* OR v into the member (the struct was zeroed before the first field). */
static void member_or(void *s, const struct field *f, uint32_t v)
{
	uint8_t *p = (uint8_t *)s + f->moff;

	switch (f->msize) {
	case 1: *p = (uint8_t)(*p | v); break;
	case 2: *(uint16_t *)p = (uint16_t)(*(uint16_t *)p | v); break;
	default: *(uint32_t *)p |= v; break;
	}
}

static void pack(const struct field *fs, size_t n, const void *s, uint8_t *rec)
{
	size_t i;

	memset(rec, 0, FC_RUE_REC_BYTES);
	for (i = 0; i < n; i++) {
		uint32_t v = member_get(s, &fs[i]) >> fs[i].shift;

		put_bits(rec, fs[i].off, fs[i].width, v & ((1u << fs[i].width) - 1));
	}
}

static void unpack(const struct field *fs, size_t n, const uint8_t *rec, void *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		member_or(s, &fs[i], get_bits(rec, fs[i].off, fs[i].width) << fs[i].shift);
}

static int fits(const struct field *fs, size_t n, const void *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((uint64_t)member_get(s, &fs[i]) >> fs[i].mwidth)
			return 0;
	return 1;
}

void fc_cc_event_pack(const struct fc_cc_event *ev, uint8_t rec[FC_RUE_REC_BYTES])
{
	pack(ev_fields, NFIELDS(ev_fields), ev, rec);
}

void fc_cc_event_unpack(const uint8_t rec[FC_RUE_REC_BYTES], struct fc_cc_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	unpack(ev_fields, NFIELDS(ev_fields), rec, ev);
}

int fc_cc_event_fits(const struct fc_cc_event *ev)
{
	return fits(ev_fields, NFIELDS(ev_fields), ev);
}

void fc_cc_result_pack(const struct fc_cc_result *res, uint8_t rec[FC_RUE_REC_BYTES])
{
	pack(res_fields, NFIELDS(res_fields), res, rec);
}

void fc_cc_result_unpack(const uint8_t rec[FC_RUE_REC_BYTES], struct fc_cc_result *res)
{
	memset(res, 0, sizeof(*res));
	unpack(res_fields, NFIELDS(res_fields), rec, res);
}

int fc_cc_result_fits(const struct fc_cc_result *res)
{
	return fits(res_fields, NFIELDS(res_fields), res);
}

/* ---- SPSC queue ---- */

struct fc_rue_q {
	/* read-only after creation */
	uint8_t (*slot)[FC_RUE_REC_BYTES];
	uint32_t mask;
	unsigned cap_log2;
	/* producer's cache line */
	alignas(64) _Atomic uint32_t tail;
	uint32_t head_cache; /* producer-private: last head seen */
	_Atomic uint64_t pushes, full_drops, refused;
	/* consumer's cache line */
	alignas(64) _Atomic uint32_t head;
	uint32_t tail_cache; /* consumer-private: last tail seen */
	_Atomic uint64_t pops;
};

/* Single-writer counter increment; readers on other threads load it relaxed. */
static void bump(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

struct fc_rue_q *fc_rue_q_new(uint32_t cap)
{
	struct fc_rue_q *q;

	if (cap < FC_RUE_Q_MIN_CAP || cap > FC_RUE_Q_MAX_CAP || (cap & (cap - 1))) {
		errno = EINVAL;
		return NULL;
	}
	q = aligned_alloc(64, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	memset(q, 0, sizeof(*q));
	q->slot = aligned_alloc(64, (size_t)cap * FC_RUE_REC_BYTES);
	if (!q->slot) {
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	memset(q->slot, 0, (size_t)cap * FC_RUE_REC_BYTES);
	q->mask = cap - 1;
	q->cap_log2 = (unsigned)__builtin_ctz(cap);
	atomic_init(&q->tail, 0);
	atomic_init(&q->head, 0);
	atomic_init(&q->pushes, 0);
	atomic_init(&q->full_drops, 0);
	atomic_init(&q->refused, 0);
	atomic_init(&q->pops, 0);
	return q;
}

void fc_rue_q_free(struct fc_rue_q *q)
{
	if (!q)
		return;
	free(q->slot);
	free(q);
}

int fc_rue_q_push(struct fc_rue_q *q, const uint8_t rec[FC_RUE_REC_BYTES])
{
	uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);

	if (t - q->head_cache > q->mask) {
		/* acquire: the consumer has finished reading the slots before head */
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		if (t - q->head_cache > q->mask) {
			bump(&q->full_drops);
			return -EAGAIN;
		}
	}
	memcpy(q->slot[t & q->mask], rec, FC_RUE_REC_BYTES);
	atomic_store_explicit(&q->tail, t + 1, memory_order_release);
	bump(&q->pushes);
	return 0;
}

int fc_rue_q_pop(struct fc_rue_q *q, uint8_t rec[FC_RUE_REC_BYTES])
{
	uint32_t h = atomic_load_explicit(&q->head, memory_order_relaxed);

	if (h == q->tail_cache) {
		/* acquire: the producer's slot contents are visible before its tail */
		q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
		if (h == q->tail_cache)
			return -EAGAIN;
	}
	memcpy(rec, q->slot[h & q->mask], FC_RUE_REC_BYTES);
	atomic_store_explicit(&q->head, h + 1, memory_order_release);
	bump(&q->pops);
	return 0;
}

uint32_t fc_rue_q_len(const struct fc_rue_q *q)
{
	/* head first: head never passes tail, so a later tail is >= this head */
	uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
	uint32_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
	uint32_t n = t - h;

	return n > q->mask + 1 ? q->mask + 1 : n;
}

uint32_t fc_rue_q_cap(const struct fc_rue_q *q)
{
	return q->mask + 1;
}

unsigned fc_rue_q_gen(const struct fc_rue_q *q)
{
	uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);

	return ((t >> q->cap_log2) & 1u) ^ 1u;
}

void fc_rue_q_counters(const struct fc_rue_q *q, struct fc_rue_q_counters *out)
{
	out->pushes = atomic_load_explicit(&q->pushes, memory_order_relaxed);
	out->full_drops = atomic_load_explicit(&q->full_drops, memory_order_relaxed);
	out->refused = atomic_load_explicit(&q->refused, memory_order_relaxed);
	out->pops = atomic_load_explicit(&q->pops, memory_order_relaxed);
}

/* ---- admission policy (10.6.1) ---- */

void fc_rue_admit_cfg_default(struct fc_rue_admit_cfg *cfg)
{
	cfg->t_low = FC_RUE_ADMIT_LOW_PCT;
	cfg->t_mid = FC_RUE_ADMIT_MID_PCT;
	cfg->t_high = FC_RUE_ADMIT_HIGH_PCT;
}

/* occ >= pct percent of cap, exactly. */
static int at_or_above(uint32_t occ, uint32_t cap, uint32_t pct)
{
	return (uint64_t)occ * 100 >= (uint64_t)pct * cap;
}

int fc_rue_admit(const struct fc_rue_admit_cfg *cfg, uint32_t occupancy, uint32_t capacity,
		 uint8_t type, unsigned pred)
{
	struct fc_rue_admit_cfg def;
	int p1 = !!(pred & FC_CC_P1), p2 = !!(pred & FC_CC_P2);

	if (!cfg) {
		fc_rue_admit_cfg_default(&def);
		cfg = &def;
	}
	if (occupancy >= capacity)
		return 0;
	if (type != FC_RUE_EV_ACK) /* loss signals: NACK, RETX */
		return 1;
	if (at_or_above(occupancy, capacity, cfg->t_high))
		return 0;
	if (at_or_above(occupancy, capacity, cfg->t_mid))
		return p1 && p2;
	if (at_or_above(occupancy, capacity, cfg->t_low))
		return p1 || p2;
	return 1;
}

int fc_rue_q_offer(struct fc_rue_q *q, const struct fc_rue_admit_cfg *cfg,
		   const struct fc_cc_event *ev, unsigned pred)
{
	uint8_t rec[FC_RUE_REC_BYTES];
	struct fc_cc_event e = *ev;
	uint32_t occ = fc_rue_q_len(q);

	if (occ > q->mask) {
		bump(&q->full_drops);
		return -EAGAIN;
	}
	if (!fc_rue_admit(cfg, occ, q->mask + 1, ev->type, pred)) {
		bump(&q->refused);
		return -EBUSY;
	}
	e.gen = (uint8_t)fc_rue_q_gen(q);
	fc_cc_event_pack(&e, rec);
	return fc_rue_q_push(q, rec);
}
