/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CC event / result records (spec 10.6.2), the SPSC queues and the admission policy of
 * 10.6.1 (daemon/engine/rue_queue.c).
 *
 * The record layout is checked against this file's own transcription of the spec's
 * tables (widths in table order, offsets summed here) and a bit-by-bit reference
 * writer, independent of the module's field table and chunked bit copier; a few
 * records are also spelled out byte by byte.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pdl.h"
#include "rue_queue.h"
#include "testutil.h"

static uint64_t test_seed(void) { return fc_test_seed(0x5eed0f1a7c0ffeeull); }

/* ---- reference layout, transcribed from the spec tables ---- */

#define NOMEMB SIZE_MAX

struct tfield {
	const char *name;
	unsigned width;
	size_t moff;   /* NOMEMB for reserved */
	size_t msize;
	unsigned shift; /* member bits [shift + width - 1 : shift] */
};

#define TM(n, w, type, m, sh) { n, w, offsetof(type, m), sizeof(((type *)0)->m), sh }
#define TE(w, m) TM(#m, w, struct fc_cc_event, m, 0)
#define TR(w, m) TM(#m, w, struct fc_cc_result, m, 0)
/* a time in 131.072 ns units: the member carries _ts, the spec name does not */
#define TET(w, m) TM(#m, w, struct fc_cc_event, m##_ts, 0)
#define TRT(w, m) TM(#m, w, struct fc_cc_result, m##_ts, 0)
#define TRSV(w) { "reserved", w, NOMEMB, 0, 0 }

/* spec 10.6.2.1 */
static const struct tfield ev_tab[] = {
	TE(24, cid), TE(2, type), TET(24, t1), TET(24, t2), TET(24, t3), TET(24, t4),
	TE(3, retx_count), TE(1, retx_reason), TE(8, nack_code), TE(4, forward_hops),
	TE(5, rx_buffer_level), TE(24, cc_metadata),
	TM("fcwnd_fraction", 10, struct fc_cc_event, fcwnd_fp, 0),
	TM("fcwnd_integer", 11, struct fc_cc_event, fcwnd_fp, 10),
	TET(20, inter_packet_gap), TE(11, ncwnd), TET(24, retransmit_timeout),
	TE(10, num_packets_acked), TE(1, eack_drop), TE(1, eack), TRSV(8),
	TE(2, event_queue_select), TE(2, delay_select), TET(24, fabric_window_time_marker),
	TET(24, nic_window_time_marker), TE(1, ncwnd_direction), TET(24, base_delay_target),
	TET(24, delay_state), TET(24, rtt_state), TE(2, cc_opaque), TE(14, ecn_accumulated),
	TRSV(107), TE(1, gen),
};

/* spec 10.6.2.2: 508 bits, padded to 512 with gen in the last bit */
static const struct tfield res_tab[] = {
	TR(24, cid), TR(1, randomize_path), TR(24, cc_metadata),
	TM("fcwnd_fraction", 10, struct fc_cc_result, fcwnd_fp, 0),
	TM("fcwnd", 11, struct fc_cc_result, fcwnd_fp, 10),
	TRT(20, inter_packet_gap), TR(11, ncwnd), TRT(24, retransmit_timeout),
	TRT(24, fabric_window_time_marker), TRT(24, nic_window_time_marker),
	TR(1, ncwnd_direction), TRT(24, base_delay_target), TRT(24, delay_state),
	TRT(24, rtt_state), TR(2, cc_opaque), TRSV(260), TRSV(3), TR(1, gen),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static unsigned tab_off(const struct tfield *t, size_t idx)
{
	unsigned off = 0;
	size_t i;

	for (i = 0; i < idx; i++)
		off += t[i].width;
	return off;
}

/* bit by bit, MSB first: record bit n is bit 7 - n % 8 of byte n / 8 */
static void ref_set(uint8_t *rec, unsigned off, unsigned w, uint64_t v)
{
	unsigned i;

	for (i = 0; i < w; i++)
		if ((v >> (w - 1 - i)) & 1)
			rec[(off + i) / 8] |= (uint8_t)(0x80u >> ((off + i) % 8));
}

static uint64_t memb_get(const void *s, const struct tfield *f)
{
	uint64_t v = 0;

	memcpy(&v, (const uint8_t *)s + f->moff, f->msize); /* assumes a little-endian host */
	return v;
}

static void memb_set(void *s, const struct tfield *f, uint64_t v)
{
	uint64_t old = memb_get(s, f) & ~((((uint64_t)1 << f->width) - 1) << f->shift);

	old |= v << f->shift;
	memcpy((uint8_t *)s + f->moff, &old, f->msize);
}

/* Expected record for s according to the reference table. */
static void ref_pack(const struct tfield *t, size_t n, const void *s, uint8_t *rec)
{
	size_t i;

	memset(rec, 0, FC_RUE_REC_BYTES);
	for (i = 0; i < n; i++)
		if (t[i].moff != NOMEMB)
			ref_set(rec, tab_off(t, i), t[i].width,
				(memb_get(s, &t[i]) >> t[i].shift) & (((uint64_t)1 << t[i].width) - 1));
}

static void dump_diff(const uint8_t *got, const uint8_t *want)
{
	int i;

	for (i = 0; i < FC_RUE_REC_BYTES; i++)
		if (got[i] != want[i])
			print_error("byte %d: got %02x want %02x\n", i, got[i], want[i]);
}

static void assert_rec(const uint8_t *got, const uint8_t *want)
{
	if (memcmp(got, want, FC_RUE_REC_BYTES)) {
		dump_diff(got, want);
		fail_msg("record differs");
	}
}

/* Compare two structs member by member per the reference table. */
static void assert_same(const struct tfield *t, size_t n, const void *a, const void *b,
			uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (t[i].moff == NOMEMB)
			continue;
		if (memb_get(a, &t[i]) != memb_get(b, &t[i]))
			fail_msg("%s: %#llx != %#llx (seed %#llx)", t[i].name,
				 (unsigned long long)memb_get(a, &t[i]),
				 (unsigned long long)memb_get(b, &t[i]), (unsigned long long)seed);
	}
}

static void test_layout_sizes(void **state)
{
	(void)state;
	assert_int_equal(tab_off(ev_tab, N(ev_tab)), 512);
	assert_int_equal(tab_off(res_tab, N(res_tab)), 512);
	/* a few offsets of the header's table, summed from the spec widths here */
	assert_int_equal(tab_off(ev_tab, 12), 167);  /* fcwnd_fraction */
	assert_int_equal(tab_off(ev_tab, 20), 255);  /* reserved (8) */
	assert_int_equal(tab_off(ev_tab, 21), 263);  /* event_queue_select */
	assert_int_equal(tab_off(ev_tab, 30), 390);  /* ecn_accumulated */
	assert_int_equal(tab_off(ev_tab, 32), FC_RUE_GEN_BIT);
	assert_int_equal(tab_off(res_tab, 14), 246); /* cc_opaque */
	assert_int_equal(tab_off(res_tab, 17), FC_RUE_GEN_BIT);
}

/* Records spelled out byte by byte. */
static void test_event_hand_bytes(void **state)
{
	struct fc_cc_event ev = { .cid = 0xABCDEF, .type = FC_RUE_EV_NACK, .t1_ts = 0xFFFFFF,
				  .gen = 1 };
	uint8_t want[64] = { 0 }, got[64];

	(void)state;
	/* cid bits 0..23, type 01 at 24..25, t1 ones at 26..49, gen at 511 */
	want[0] = 0xAB; want[1] = 0xCD; want[2] = 0xEF;
	want[3] = 0x7F; want[4] = 0xFF; want[5] = 0xFF; want[6] = 0xC0;
	want[63] = 0x01;
	fc_cc_event_pack(&ev, got);
	assert_rec(got, want);

	/* num_packets_acked 0x3FF at 243..252, eack_drop 253, eack 254, reserved 255..262,
	 * event_queue_select 11b at 263..264, delay_select 10b at 265..266 */
	memset(&ev, 0, sizeof(ev));
	ev.num_packets_acked = 0x3FF;
	ev.eack_drop = 1;
	ev.eack = 1;
	ev.event_queue_select = 3;
	ev.delay_select = FC_DELAY_FWD;
	memset(want, 0, sizeof(want));
	want[30] = 0x1F; want[31] = 0xFE; want[32] = 0x01; want[33] = 0xC0;
	fc_cc_event_pack(&ev, got);
	assert_rec(got, want);

	/* ecn_accumulated 0x2001 at 390..403: bit 390 (byte 48, 0x02) and bit 403
	 * (byte 50, 0x10); cc_opaque 01b at 388..389 (bit 389: byte 48, 0x04) */
	memset(&ev, 0, sizeof(ev));
	ev.ecn_accumulated = 0x2001;
	ev.cc_opaque = 1;
	memset(want, 0, sizeof(want));
	want[48] = 0x06; want[50] = 0x10;
	fc_cc_event_pack(&ev, got);
	assert_rec(got, want);
}

static void test_result_hand_bytes(void **state)
{
	struct fc_cc_result r = { .cid = 1, .randomize_path = 1, .cc_metadata = 0x800001,
				  .fcwnd_fp = (5u << 10) | 3, .gen = 1 };
	uint8_t want[64] = { 0 }, got[64];

	(void)state;
	/* cid 0..23; randomize_path bit 24; cc_metadata 25..48 (MSB at 25, LSB at 48);
	 * fcwnd_fraction 3 at 49..58 (bits 57, 58); fcwnd 5 at 59..69 (bits 67, 69) */
	want[2] = 0x01;
	want[3] = 0x80 | 0x40;
	want[6] = 0x80;
	want[7] = 0x40 | 0x20;
	want[8] = 0x10 | 0x04;
	want[63] = 0x01;
	fc_cc_result_pack(&r, got);
	assert_rec(got, want);

	/* cc_opaque 11b at 246..247: byte 30 low bits; rtt_state 0x800000 at 222 */
	memset(&r, 0, sizeof(r));
	r.cc_opaque = 3;
	r.rtt_state_ts = 0x800000;
	memset(want, 0, sizeof(want));
	want[30] = 0x03;
	want[27] = 0x02; /* bit 222 = byte 27, bit 6 from the top */
	fc_cc_result_pack(&r, got);
	assert_rec(got, want);
}

/* Each field at its maximum, all others zero: exactly its bits are set, and it
 * unpacks to that member alone. */
static void single_fields(const struct tfield *t, size_t n, size_t ssize, int is_ev)
{
	size_t i;

	for (i = 0; i < n; i++) {
		_Alignas(16) uint8_t s[256] = { 0 };
		_Alignas(16) uint8_t back[256];
		uint8_t want[64] = { 0 }, got[64];
		uint64_t max;

		assert_true(ssize <= sizeof(s));
		if (t[i].moff == NOMEMB)
			continue;
		max = ((uint64_t)1 << t[i].width) - 1;
		memb_set(s, &t[i], max);
		ref_set(want, tab_off(t, i), t[i].width, max);
		if (is_ev) {
			fc_cc_event_pack((const void *)s, got);
			fc_cc_event_unpack(got, (void *)back);
		} else {
			fc_cc_result_pack((const void *)s, got);
			fc_cc_result_unpack(got, (void *)back);
		}
		if (memcmp(got, want, sizeof(got))) {
			dump_diff(got, want);
			fail_msg("field %s at max lands wrong", t[i].name);
		}
		assert_same(t, n, s, back, 0);
	}
}

static void test_single_fields(void **state)
{
	(void)state;
	single_fields(ev_tab, N(ev_tab), sizeof(struct fc_cc_event), 1);
	single_fields(res_tab, N(res_tab), sizeof(struct fc_cc_result), 0);
}

static void rand_fill(const struct tfield *t, size_t n, void *s, uint64_t *rng)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].moff != NOMEMB)
			memb_set(s, &t[i], fc_test_rand(rng) & (((uint64_t)1 << t[i].width) - 1));
}

static void test_roundtrip_random(void **state)
{
	uint64_t seed = test_seed(), rng = seed;
	unsigned i, iters = fc_test_quick() ? 2000 : 20000;

	(void)state;
	for (i = 0; i < iters; i++) {
		struct fc_cc_event ev, ev2;
		struct fc_cc_result r, r2;
		uint8_t rec[64], want[64];

		memset(&ev, 0, sizeof(ev));
		memset(&r, 0, sizeof(r));
		rand_fill(ev_tab, N(ev_tab), &ev, &rng);
		rand_fill(res_tab, N(res_tab), &r, &rng);
		if (!fc_cc_event_fits(&ev) || !fc_cc_result_fits(&r))
			fail_msg("fits() refused in-range values (seed %#llx)",
				 (unsigned long long)seed);
		fc_cc_event_pack(&ev, rec);
		ref_pack(ev_tab, N(ev_tab), &ev, want);
		if (memcmp(rec, want, 64))
			fail_msg("event %u packs wrong (seed %#llx)", i, (unsigned long long)seed);
		memset(&ev2, 0xA5, sizeof(ev2));
		fc_cc_event_unpack(rec, &ev2);
		assert_same(ev_tab, N(ev_tab), &ev, &ev2, seed);

		fc_cc_result_pack(&r, rec);
		ref_pack(res_tab, N(res_tab), &r, want);
		if (memcmp(rec, want, 64))
			fail_msg("result %u packs wrong (seed %#llx)", i, (unsigned long long)seed);
		memset(&r2, 0xA5, sizeof(r2));
		fc_cc_result_unpack(rec, &r2);
		assert_same(res_tab, N(res_tab), &r, &r2, seed);
	}
}

/* Out-of-width members: fits() says so and pack keeps only the low bits. */
static void test_truncation(void **state)
{
	struct fc_cc_event ev = { 0 }, back;
	struct fc_cc_result r = { 0 }, rback;
	uint8_t rec[64], want[64] = { 0 };

	(void)state;
	assert_true(fc_cc_event_fits(&ev));
	ev.cid = 0x1ABCDEF;
	assert_false(fc_cc_event_fits(&ev));
	fc_cc_event_pack(&ev, rec);
	want[0] = 0xAB; want[1] = 0xCD; want[2] = 0xEF;
	assert_rec(rec, want);
	fc_cc_event_unpack(rec, &back);
	assert_int_equal(back.cid, 0xABCDEF);

	memset(&ev, 0, sizeof(ev));
	ev.fcwnd_fp = 1u << 21; /* one past 11 + 10 bits */
	assert_false(fc_cc_event_fits(&ev));
	ev.fcwnd_fp = (1u << 21) - 1;
	assert_true(fc_cc_event_fits(&ev));
	ev.type = 4;
	assert_false(fc_cc_event_fits(&ev));
	ev.type = 3; /* fits 2 bits though no enum value */
	assert_true(fc_cc_event_fits(&ev));
	ev.gen = 2;
	assert_false(fc_cc_event_fits(&ev));
	fc_cc_event_pack(&ev, rec);
	assert_int_equal(rec[63] & 1, 0);
	ev.gen = 0;
	ev.num_packets_acked = 1024;
	assert_false(fc_cc_event_fits(&ev));
	ev.num_packets_acked = 0;
	ev.ecn_accumulated = 0x4000;
	assert_false(fc_cc_event_fits(&ev));

	r.ncwnd = 0x800;
	assert_false(fc_cc_result_fits(&r));
	r.ncwnd = 0x7FF;
	r.inter_packet_gap_ts = 0x1FFFFF;
	assert_false(fc_cc_result_fits(&r));
	fc_cc_result_pack(&r, rec);
	fc_cc_result_unpack(rec, &rback);
	assert_int_equal(rback.inter_packet_gap_ts, 0xFFFFF);
	assert_int_equal(rback.ncwnd, 0x7FF);
	r.inter_packet_gap_ts = 0;
	r.cc_opaque = 4;
	assert_false(fc_cc_result_fits(&r));
}

/* Reserved bits in a record are ignored by unpack and zeroed by pack. */
static void test_reserved_ignored(void **state)
{
	uint8_t rec[64] = { 0 }, out[64];
	struct fc_cc_event ev;
	struct fc_cc_result r;

	(void)state;
	ref_set(rec, 255, 8, 0xFF);  /* reserved 255..262 */
	rec[50] = 0x0F;              /* bits 404..407 */
	memset(rec + 51, 0xFF, 12);  /* bits 408..503 */
	rec[63] = 0xFE;              /* bits 504..510, gen 0 */
	fc_cc_event_unpack(rec, &ev);
	fc_cc_event_pack(&ev, out);
	memset(rec, 0, sizeof(rec));
	assert_rec(out, rec);

	memset(rec, 0, sizeof(rec));
	memset(rec + 31, 0xFF, 32);  /* bits 248..503 */
	rec[63] = 0xFE;              /* bits 504..510 */
	fc_cc_result_unpack(rec, &r);
	assert_true(r.gen == 0 && r.cc_opaque == 0);
	fc_cc_result_pack(&r, out);
	memset(rec, 0, sizeof(rec));
	assert_rec(out, rec);
}

/* ---- queue ---- */

static void test_q_create(void **state)
{
	static const uint32_t bad[] = { 0, 1, 3, 6, 100, FC_RUE_Q_MAX_CAP * 2, 0x80000000u };
	struct fc_rue_q *q;
	size_t i;

	(void)state;
	for (i = 0; i < N(bad); i++) {
		errno = 0;
		assert_null(fc_rue_q_new(bad[i]));
		assert_int_equal(errno, EINVAL);
	}
	q = fc_rue_q_new(2);
	assert_non_null(q);
	assert_int_equal(fc_rue_q_cap(q), 2);
	fc_rue_q_free(q);
	fc_rue_q_free(NULL);
}

static void test_q_basic(void **state)
{
	struct fc_rue_q *q = fc_rue_q_new(4);
	struct fc_rue_q_counters c;
	uint8_t rec[64], out[64];
	unsigned i, lap;

	(void)state;
	assert_non_null(q);
	assert_int_equal(fc_rue_q_pop(q, out), -EAGAIN);
	assert_int_equal(fc_rue_q_len(q), 0);
	for (lap = 0; lap < 3; lap++) {
		assert_int_equal(fc_rue_q_gen(q), lap % 2 ? 0 : 1);
		for (i = 0; i < 4; i++) {
			memset(rec, (int)(lap * 4 + i), sizeof(rec));
			assert_int_equal(fc_rue_q_push(q, rec), 0);
			assert_int_equal(fc_rue_q_len(q), i + 1);
		}
		assert_int_equal(fc_rue_q_push(q, rec), -EAGAIN);
		assert_int_equal(fc_rue_q_len(q), 4);
		for (i = 0; i < 4; i++) {
			assert_int_equal(fc_rue_q_pop(q, out), 0);
			memset(rec, (int)(lap * 4 + i), sizeof(rec));
			assert_memory_equal(out, rec, 64);
		}
		memset(out, 0x5A, sizeof(out));
		assert_int_equal(fc_rue_q_pop(q, out), -EAGAIN);
		assert_int_equal(out[0], 0x5A); /* untouched */
	}
	fc_rue_q_counters(q, &c);
	assert_int_equal(c.pushes, 12);
	assert_int_equal(c.pops, 12);
	assert_int_equal(c.full_drops, 3);
	assert_int_equal(c.refused, 0);
	fc_rue_q_free(q);
}

struct stress {
	struct fc_rue_q *q;
	uint64_t n;
	uint64_t full_spins;
	uint64_t bad; /* first failure, encoded */
	const char *why;
};

static void fill_rec(uint8_t *rec, uint64_t seq)
{
	int i;

	memcpy(rec, &seq, sizeof(seq));
	for (i = 8; i < 64; i++)
		rec[i] = (uint8_t)(seq * 31 + (uint64_t)i * 7);
}

static void *producer(void *arg)
{
	struct stress *st = arg;
	uint8_t rec[64];
	uint64_t seq;

	for (seq = 0; seq < st->n; seq++) {
		fill_rec(rec, seq);
		while (fc_rue_q_push(st->q, rec) == -EAGAIN) {
			st->full_spins++;
			sched_yield();
		}
	}
	return NULL;
}

static void test_q_stress(void **state)
{
	struct stress st = { 0 };
	struct fc_rue_q_counters c;
	uint8_t rec[64], want[64];
	uint64_t expect = 0;
	pthread_t th;

	(void)state;
	st.q = fc_rue_q_new(64);
	assert_non_null(st.q);
	st.n = fc_test_quick() ? 20000 : 2000000;
	assert_int_equal(pthread_create(&th, NULL, producer, &st), 0);
	while (expect < st.n) {
		uint32_t len = fc_rue_q_len(st.q);

		if (len > 64) {
			st.why = "len above capacity";
			break;
		}
		if (fc_rue_q_pop(st.q, rec) == -EAGAIN) {
			sched_yield();
			continue;
		}
		fill_rec(want, expect);
		if (memcmp(rec, want, 64)) {
			uint64_t got;

			memcpy(&got, rec, sizeof(got));
			st.bad = got;
			st.why = got == expect ? "contents damaged" : "out of order / lost / duplicated";
			break;
		}
		expect++;
	}
	pthread_join(th, NULL);
	if (st.why)
		fail_msg("record %llu: %s (got seq %llu)", (unsigned long long)expect, st.why,
			 (unsigned long long)st.bad);
	assert_int_equal(fc_rue_q_pop(st.q, rec), -EAGAIN);
	fc_rue_q_counters(st.q, &c);
	assert_int_equal(c.pushes, st.n);
	assert_int_equal(c.pops, st.n);
	assert_int_equal(c.full_drops, st.full_spins);
	print_message("stress: %llu records, %llu full pushes retried\n",
		      (unsigned long long)st.n, (unsigned long long)st.full_spins);
	fc_rue_q_free(st.q);
}

/* ---- admission (10.6.1) ---- */

#define P12 (FC_CC_P1 | FC_CC_P2)

static void test_admit_table(void **state)
{
	/* capacity 100, defaults 25/50/75 %; columns: pred none, P1, P2, P1|P2 */
	static const struct { uint32_t occ; int ack[4]; int loss; } tab[] = {
		{ 0, { 1, 1, 1, 1 }, 1 },   { 24, { 1, 1, 1, 1 }, 1 },
		{ 25, { 0, 1, 1, 1 }, 1 },  { 49, { 0, 1, 1, 1 }, 1 },
		{ 50, { 0, 0, 0, 1 }, 1 },  { 74, { 0, 0, 0, 1 }, 1 },
		{ 75, { 0, 0, 0, 0 }, 1 },  { 99, { 0, 0, 0, 0 }, 1 },
		{ 100, { 0, 0, 0, 0 }, 0 }, { 101, { 0, 0, 0, 0 }, 0 },
	};
	static const unsigned preds[4] = { 0, FC_CC_P1, FC_CC_P2, P12 };
	struct fc_rue_admit_cfg def;
	size_t i, p;

	(void)state;
	fc_rue_admit_cfg_default(&def);
	assert_int_equal(def.t_low, 25);
	assert_int_equal(def.t_mid, 50);
	assert_int_equal(def.t_high, 75);
	for (i = 0; i < N(tab); i++)
		for (p = 0; p < 4; p++) {
			uint32_t o = tab[i].occ;

			if (fc_rue_admit(&def, o, 100, FC_RUE_EV_ACK, preds[p]) != tab[i].ack[p])
				fail_msg("ACK occ %u pred %u", o, preds[p]);
			if (fc_rue_admit(NULL, o, 100, FC_RUE_EV_ACK, preds[p]) != tab[i].ack[p])
				fail_msg("ACK occ %u pred %u (NULL cfg)", o, preds[p]);
			if (fc_rue_admit(&def, o, 100, FC_RUE_EV_NACK, preds[p]) != tab[i].loss)
				fail_msg("NACK occ %u pred %u", o, preds[p]);
			if (fc_rue_admit(&def, o, 100, FC_RUE_EV_RETX, preds[p]) != tab[i].loss)
				fail_msg("RETX occ %u pred %u", o, preds[p]);
		}
}

/* Exact percentages of a capacity that is not a multiple of 100, custom thresholds. */
static void test_admit_boundaries(void **state)
{
	struct fc_rue_admit_cfg cfg = { .t_low = 25, .t_mid = 50, .t_high = 75 };
	struct fc_rue_admit_cfg odd = { .t_low = 60, .t_mid = 10, .t_high = 200 };

	(void)state;
	/* capacity 10: t_low 2.5, t_mid 5, t_high 7.5 entries */
	assert_int_equal(fc_rue_admit(&cfg, 2, 10, FC_RUE_EV_ACK, 0), 1);
	assert_int_equal(fc_rue_admit(&cfg, 3, 10, FC_RUE_EV_ACK, 0), 0);
	assert_int_equal(fc_rue_admit(&cfg, 3, 10, FC_RUE_EV_ACK, FC_CC_P2), 1);
	assert_int_equal(fc_rue_admit(&cfg, 4, 10, FC_RUE_EV_ACK, FC_CC_P1), 1);
	assert_int_equal(fc_rue_admit(&cfg, 5, 10, FC_RUE_EV_ACK, FC_CC_P1), 0);
	assert_int_equal(fc_rue_admit(&cfg, 7, 10, FC_RUE_EV_ACK, P12), 1);
	assert_int_equal(fc_rue_admit(&cfg, 8, 10, FC_RUE_EV_ACK, P12), 0);
	assert_int_equal(fc_rue_admit(&cfg, 9, 10, FC_RUE_EV_RETX, 0), 1);
	assert_int_equal(fc_rue_admit(&cfg, 10, 10, FC_RUE_EV_RETX, P12), 0);
	/* capacity 1024: 256 / 512 / 768 */
	assert_int_equal(fc_rue_admit(&cfg, 255, 1024, FC_RUE_EV_ACK, 0), 1);
	assert_int_equal(fc_rue_admit(&cfg, 256, 1024, FC_RUE_EV_ACK, 0), 0);
	assert_int_equal(fc_rue_admit(&cfg, 511, 1024, FC_RUE_EV_ACK, FC_CC_P1), 1);
	assert_int_equal(fc_rue_admit(&cfg, 512, 1024, FC_RUE_EV_ACK, FC_CC_P1), 0);
	assert_int_equal(fc_rue_admit(&cfg, 767, 1024, FC_RUE_EV_ACK, P12), 1);
	assert_int_equal(fc_rue_admit(&cfg, 768, 1024, FC_RUE_EV_ACK, P12), 0);
	/* capacity 0 is always full */
	assert_int_equal(fc_rue_admit(&cfg, 0, 0, FC_RUE_EV_NACK, P12), 0);
	/* huge values do not overflow the percent products */
	assert_int_equal(fc_rue_admit(&cfg, 0xFFFFFFF0u, 0xFFFFFFFFu, FC_RUE_EV_ACK, P12), 0);
	assert_int_equal(fc_rue_admit(&cfg, 0x3FFFFFFFu, 0xFFFFFFFFu, FC_RUE_EV_ACK, 0), 1);
	/* disordered thresholds: t_mid below t_low; t_high never reached */
	assert_int_equal(fc_rue_admit(&odd, 5, 100, FC_RUE_EV_ACK, 0), 1);
	assert_int_equal(fc_rue_admit(&odd, 10, 100, FC_RUE_EV_ACK, FC_CC_P1), 0);
	assert_int_equal(fc_rue_admit(&odd, 99, 100, FC_RUE_EV_ACK, P12), 1);
}

static void test_offer(void **state)
{
	struct fc_rue_q *q = fc_rue_q_new(8); /* defaults: 2 / 4 / 6 entries */
	struct fc_rue_q_counters c;
	struct fc_cc_event ev = { .type = FC_RUE_EV_ACK, .t1_ts = 0x123456, .gen = 0 }, back;
	uint8_t rec[64];
	uint32_t cid = 1, i;

	(void)state;
	assert_non_null(q);
#define OFFER(type_, pred_, ret_)                                                          \
	do {                                                                               \
		ev.type = (type_);                                                         \
		ev.cid = cid;                                                              \
		assert_int_equal(fc_rue_q_offer(q, NULL, &ev, (pred_)), (ret_));           \
		if ((ret_) == 0)                                                           \
			cid++;                                                             \
	} while (0)
	OFFER(FC_RUE_EV_ACK, 0, 0);             /* occ 0 */
	OFFER(FC_RUE_EV_ACK, 0, 0);             /* occ 1 */
	OFFER(FC_RUE_EV_ACK, 0, -EBUSY);        /* occ 2 */
	OFFER(FC_RUE_EV_ACK, FC_CC_P2, 0);      /* occ 2 */
	OFFER(FC_RUE_EV_ACK, FC_CC_P1, 0);      /* occ 3 */
	OFFER(FC_RUE_EV_ACK, FC_CC_P1, -EBUSY); /* occ 4 */
	OFFER(FC_RUE_EV_ACK, P12, 0);           /* occ 4 */
	OFFER(FC_RUE_EV_ACK, P12, 0);           /* occ 5 */
	OFFER(FC_RUE_EV_ACK, P12, -EBUSY);      /* occ 6 */
	OFFER(FC_RUE_EV_NACK, 0, 0);            /* occ 6 */
	OFFER(FC_RUE_EV_RETX, 0, 0);            /* occ 7 */
	OFFER(FC_RUE_EV_NACK, P12, -EAGAIN);   /* occ 8 */
	fc_rue_q_counters(q, &c);
	assert_int_equal(c.pushes, 8);
	assert_int_equal(c.refused, 3);
	assert_int_equal(c.full_drops, 1);
	for (i = 1; i <= 8; i++) {
		assert_int_equal(fc_rue_q_pop(q, rec), 0);
		fc_cc_event_unpack(rec, &back);
		assert_int_equal(back.cid, i);
		assert_int_equal(back.t1_ts, 0x123456);
		assert_int_equal(back.gen, 1); /* first lap */
		assert_int_equal(back.type, i == 7 ? FC_RUE_EV_NACK :
					    i == 8 ? FC_RUE_EV_RETX : FC_RUE_EV_ACK);
	}
	ev.gen = 1;
	OFFER(FC_RUE_EV_ACK, 0, 0); /* second lap: gen 0 whatever ev.gen says */
	assert_int_equal(fc_rue_q_pop(q, rec), 0);
	fc_cc_event_unpack(rec, &back);
	assert_int_equal(back.gen, 0);
	assert_int_equal(rec[63] & 1, 0);
#undef OFFER
	fc_rue_q_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_sizes),
		cmocka_unit_test(test_event_hand_bytes),
		cmocka_unit_test(test_result_hand_bytes),
		cmocka_unit_test(test_single_fields),
		cmocka_unit_test(test_roundtrip_random),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_reserved_ignored),
		cmocka_unit_test(test_q_create),
		cmocka_unit_test(test_q_basic),
		cmocka_unit_test(test_q_stress),
		cmocka_unit_test(test_admit_table),
		cmocka_unit_test(test_admit_boundaries),
		cmocka_unit_test(test_offer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
