/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wire_falcon.c - the Falcon header codec (daemon/engine/wire_falcon.c) against
 * bytes built by hand from the spec section 7 tables, random round trips, malformed input
 * and encoder bounds.
 *
 * Expected bytes are written here from the spec's column drawings: a field drawn in
 * columns [first .. first + width - 1] of a 32-bit word is col(value, first, width), and
 * words go to the buffer most significant byte first with explicit shifts. Nothing below
 * uses the FC_* shift/mask macros to build an expectation.
 *
 * Random tests use xorshift64 seeded from FALCON_TEST_SEED (default below) and print the
 * seed when they fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire_falcon.h"

/* ------------------------------------------------------------------------ */
/* helpers                                                                    */
/* ------------------------------------------------------------------------ */

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DEFAULT_SEED 0x9E3779B97F4A7C15ull
#define ROUNDTRIP_ITERS 2500
#define MAX_PAYLOAD 65535
#define BUF_CAP (MAX_PAYLOAD + 72 + 64)

static uint64_t g_seed;
static uint64_t g_rng;

static uint64_t rnd64(void)
{
	uint64_t x = g_rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return g_rng = x;
}

static uint32_t rnd32(void) { return (uint32_t)(rnd64() >> 16); }

static void seed_rng(void)
{
	const char *s = getenv("FALCON_TEST_SEED");

	g_seed = s ? strtoull(s, NULL, 0) : DEFAULT_SEED;
	g_rng = g_seed ? g_seed : DEFAULT_SEED;
}

/* Field drawn in spec columns [first .. first + width - 1] (column 0 = MSB). */
static uint32_t col(uint32_t val, unsigned first, unsigned width)
{
	return val << (32 - first - width);
}

static void put_word(uint8_t *b, size_t idx, uint32_t w)
{
	b[4 * idx + 0] = (uint8_t)(w >> 24);
	b[4 * idx + 1] = (uint8_t)(w >> 16);
	b[4 * idx + 2] = (uint8_t)(w >> 8);
	b[4 * idx + 3] = (uint8_t)w;
}

static uint32_t get_word(const uint8_t *b, size_t idx)
{
	return (uint32_t)b[4 * idx] << 24 | (uint32_t)b[4 * idx + 1] << 16 |
	       (uint32_t)b[4 * idx + 2] << 8 | b[4 * idx + 3];
}

/* Words, then payload, into b; returns the length. */
static size_t build(uint8_t *b, const uint32_t *w, size_t nw, const void *pl, size_t pl_len)
{
	for (size_t i = 0; i < nw; i++)
		put_word(b, i, w[i]);
	if (pl_len)
		memcpy(b + 4 * nw, pl, pl_len);
	return 4 * nw + pl_len;
}

/* Header lengths from the spec tables (words x 4), falcon's padding as in docs/wire.md. */
static size_t spec_hdr_len(uint32_t type)
{
	switch (type) {
	case 0x0: return 32; /* Pull Request: base 24 + length/reserved 8 */
	case 0x3: return 24; /* Pull Data: base */
	case 0x5: return 28; /* Push Data: base + length word */
	case 0x6: return 32; /* Resync: base + code word + vendor */
	case 0x8: return 40; /* NACK: 10 words */
	case 0x9: return 32; /* BACK: 8 words */
	case 0xA: return 72; /* EACK: 18 words */
	default: return 0;
	}
}

static const uint32_t all_types[] = { 0x0, 0x3, 0x5, 0x6, 0x8, 0x9, 0xA };
static const uint32_t reserved_types[] = { 0x1, 0x2, 0x4, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF };

/* Name of the first member in which a and b differ (payload by content), NULL if none. */
static const char *pkt_diff(const struct fc_falcon_pkt *a, const struct fc_falcon_pkt *b)
{
#define F(m)                   \
	if (a->m != b->m)      \
		return #m;
	F(type) F(cid) F(dest_fn) F(proto) F(ar) F(rdbpsn) F(rrbpsn) F(psn) F(rsn)
	F(req_len) F(resync_code) F(resync_pkt_type) F(vendor) F(t1_ts) F(t2_ts) F(hops)
	F(rxbuf) F(ecn) F(rue) F(own) F(data_ack[0]) F(data_ack[1]) F(data_rx[0])
	F(data_rx[1]) F(req_bitmap) F(nack_psn) F(nack_code) F(rnr_timeout) F(window)
	F(ulp_nack_code) F(payload_len)
#undef F
	if (a->payload_len && memcmp(a->payload, b->payload, a->payload_len) != 0)
		return "payload bytes";
	return NULL;
}

static void assert_same_pkt(const struct fc_falcon_pkt *exp, const struct fc_falcon_pkt *got)
{
	const char *m = pkt_diff(exp, got);

	if (m)
		fail_msg("member %s differs", m);
}

/* ------------------------------------------------------------------------ */
/* hand-built packets (spec 7.2 - 7.8)                                        */
/* ------------------------------------------------------------------------ */

static const uint8_t pull_req_payload[] = { 'U', 'L', 'P', '!' };

/* spec 7.3, written byte by byte. */
static const uint8_t pull_req_bytes[] = {
	0x10, 0x12, 0x34, 0x56, /* version 1 | reserved 0 | CID 0x123456 */
	0xAB, 0xCD, 0xEF, 0x41, /* dest fn 0xABCDEF | proto 010b | type 0000b | AR 1 */
	0x01, 0x02, 0x03, 0x04, /* rdbpsn */
	0x05, 0x06, 0x07, 0x08, /* rrbpsn */
	0x09, 0x0A, 0x0B, 0x0C, /* psn */
	0x0D, 0x0E, 0x0F, 0x10, /* rsn */
	0x12, 0x34, 0x00, 0x00, /* request length 0x1234 | reserved */
	0x00, 0x00, 0x00, 0x00, /* reserved */
	'U',  'L',  'P',  '!',  /* ULP request headers */
};

static const struct fc_falcon_pkt pull_req_pkt = {
	.type = FC_PKT_PULL_REQ, .cid = 0x123456, .dest_fn = 0xABCDEF, .proto = 2, .ar = true,
	.rdbpsn = 0x01020304, .rrbpsn = 0x05060708, .psn = 0x090A0B0C, .rsn = 0x0D0E0F10,
	.req_len = 0x1234, .payload = pull_req_payload, .payload_len = sizeof(pull_req_payload),
};

static const uint8_t pull_data_payload[] = { 0xDE, 0xAD, 0x01 };

static const struct fc_falcon_pkt pull_data_pkt = {
	.type = FC_PKT_PULL_DATA, .cid = 0xFFFFFF, .dest_fn = 0x000001, .proto = 3, .ar = false,
	.rdbpsn = 0xFFFFFFFF, .rrbpsn = 0, .psn = 0x80000000, .rsn = 0x7FFFFFFF,
	.payload = pull_data_payload, .payload_len = sizeof(pull_data_payload),
};

static size_t pull_data_build(uint8_t *b)
{
	const uint32_t w[] = {
		col(1, 0, 4) | col(0xFFFFFF, 8, 24),
		col(0x000001, 0, 24) | col(3, 24, 3) | col(3, 27, 4) | col(0, 31, 1),
		0xFFFFFFFF, 0x00000000, 0x80000000, 0x7FFFFFFF,
	};

	assert_int_equal(w[0], 0x10FFFFFF);
	assert_int_equal(w[1], 0x00000166); /* 0x66 = 011b NVMe, 0011b Pull Data, AR 0 */
	return build(b, w, ARRAY_SIZE(w), pull_data_payload, sizeof(pull_data_payload));
}

static const uint8_t push_payload[] = { 'h', 'e', 'l', 'l', 'o' };

static const struct fc_falcon_pkt push_pkt = {
	.type = FC_PKT_PUSH_DATA, .cid = 0x00ABCD, .dest_fn = 0x800000, .proto = 2, .ar = true,
	.rdbpsn = 300, .rrbpsn = 17, .psn = 303, .rsn = 4, .req_len = 5,
	.payload = push_payload, .payload_len = sizeof(push_payload),
};

static size_t push_build(uint8_t *b)
{
	const uint32_t w[] = {
		col(1, 0, 4) | col(0x00ABCD, 8, 24),
		col(0x800000, 0, 24) | col(2, 24, 3) | col(5, 27, 4) | col(1, 31, 1),
		300, 17, 303, 4,
		col(5, 0, 16), /* request length == 5 payload bytes, 16 reserved bits */
	};

	assert_int_equal(w[1], 0x8000004B);
	assert_int_equal(w[6], 0x00050000);
	return build(b, w, ARRAY_SIZE(w), push_payload, sizeof(push_payload));
}

static const struct fc_falcon_pkt resync_pkt = {
	.type = FC_PKT_RESYNC, .cid = 0x010203, .dest_fn = 0x123456, .proto = 3, .ar = false,
	.rdbpsn = 1, .rrbpsn = 2, .psn = 3, .rsn = 4, .resync_code = 3 /* retx exhausted */,
	.resync_pkt_type = 5 /* Push Data */, .vendor = 0xDEADBEEF,
};

static size_t resync_build(uint8_t *b)
{
	const uint32_t w[] = {
		col(1, 0, 4) | col(0x010203, 8, 24),
		col(0x123456, 0, 24) | col(3, 24, 3) | col(6, 27, 4) | col(0, 31, 1),
		1, 2, 3, 4,
		col(3, 0, 8) | col(5, 8, 4), /* resync code | resync packet type | reserved */
		0xDEADBEEF,
	};

	assert_int_equal(w[1], 0x1234566C);
	assert_int_equal(w[6], 0x03500000);
	return build(b, w, ARRAY_SIZE(w), NULL, 0);
}

/* spec 7.7.1, written byte by byte. */
static const uint8_t back_bytes[] = {
	0x10, 0xFE, 0xDC, 0xBA, /* version 1 | reserved | CID 0xFEDCBA */
	0x00, 0x00, 0x00, 0x12, /* packet type 1001b in columns 27-30 */
	0x80, 0x00, 0x00, 0x01, /* rdbpsn */
	0x7F, 0xFF, 0xFF, 0xFE, /* rrbpsn */
	0xCA, 0xFE, 0xBA, 0xBE, /* t1 */
	0x12, 0x34, 0x56, 0x78, /* t2 */
	/* hops 1010b | rx buf 10101b | ECN 10101010101010b | 9 reserved:
	 * 1010 1010 1101 0101 0101 0100 0000 0000 */
	0xAA, 0xD5, 0x54, 0x00,
	/* reserved 8 | RUE 0x2ABCDE (22b) | OWN 10b (data window):
	 * 0000 0000 1010 1010 1111 0011 0111 1010 */
	0x00, 0xAA, 0xF3, 0x7A,
};

static const struct fc_falcon_pkt back_pkt = {
	.type = FC_PKT_BACK, .cid = 0xFEDCBA, .rdbpsn = 0x80000001, .rrbpsn = 0x7FFFFFFE,
	.t1_ts = 0xCAFEBABE, .t2_ts = 0x12345678, .hops = 0xA, .rxbuf = 0x15, .ecn = 0x2AAA,
	.rue = 0x2ABCDE, .own = 2,
};

/* The EACK of the spec 6 example: data-rx-bitmap 0b0111 (PSN base+0..2 received). */
static const struct fc_falcon_pkt eack_pkt = {
	.type = FC_PKT_EACK, .cid = 0x000300, .rdbpsn = 300, .rrbpsn = 9, .t1_ts = 1000,
	.t2_ts = 2000, .hops = 3, .rxbuf = 1, .ecn = 5, .rue = 1, .own = 0,
	.data_ack = { 0x3333333344444444ull, 0x1111111122222222ull },
	.data_rx = { 0x7, 0 },
	.req_bitmap = 0x400000000000000Full,
};

static size_t eack_build(uint8_t *b)
{
	const uint32_t w[] = {
		col(1, 0, 4) | col(0x000300, 8, 24),
		col(0xA, 27, 4),
		300, 9, 1000, 2000,
		col(3, 0, 4) | col(1, 4, 5) | col(5, 9, 14),
		col(1, 8, 22) | col(0, 30, 2),
		0x11111111, 0x22222222, 0x33333333, 0x44444444, /* data-ack 127:96 .. 31:0 */
		0x00000000, 0x00000000, 0x00000000, 0x00000007, /* data-rx: 0b0111 in the last */
		0x40000000, 0x0000000F,                         /* req 63:32, 31:0 */
	};

	assert_int_equal(w[1], 0x00000014);
	assert_int_equal(w[7], 0x00000004);
	return build(b, w, ARRAY_SIZE(w), NULL, 0);
}

static const struct fc_falcon_pkt nack_pkt = {
	.type = FC_PKT_NACK, .cid = 0x000001, .rdbpsn = 10, .rrbpsn = 20, .t1_ts = 30,
	.t2_ts = 40, .hops = 1, .rxbuf = 0, .ecn = 1, .rue = 0xABCDEF, .nack_psn = 0x00C0FFEE,
	.nack_code = 2 /* RNR */, .rnr_timeout = 0x13 /* 7.68 ms */, .window = 1,
	.ulp_nack_code = 0x5A,
};

static size_t nack_build(uint8_t *b)
{
	const uint32_t w[] = {
		col(1, 0, 4) | col(1, 8, 24),
		col(0x8, 27, 4),
		10, 20, 30, 40,
		col(1, 0, 4) | col(0, 4, 5) | col(1, 9, 14),
		col(0xABCDEF, 8, 24), /* NACK: 24-bit RUE info, no OWN */
		0x00C0FFEE,
		/* code RNR cols 0-7 | rsvd 8-9 | timeout 10011b cols 10-14 | W 1 col 15 |
		 * rsvd 16-23 | ULP code cols 24-31 */
		col(2, 0, 8) | col(0x13, 10, 5) | col(1, 15, 1) | col(0x5A, 24, 8),
	};

	assert_int_equal(w[1], 0x00000010);
	assert_int_equal(w[6], 0x10000200);
	assert_int_equal(w[9], 0x0227005A);
	return build(b, w, ARRAY_SIZE(w), NULL, 0);
}

/* The hand-built packet of a type into b (>= 128 bytes); returns its length. */
static size_t vector_build(uint32_t type, uint8_t *b, const struct fc_falcon_pkt **exp)
{
	switch (type) {
	case FC_PKT_PULL_REQ:
		*exp = &pull_req_pkt;
		memcpy(b, pull_req_bytes, sizeof(pull_req_bytes));
		return sizeof(pull_req_bytes);
	case FC_PKT_PULL_DATA:
		*exp = &pull_data_pkt;
		return pull_data_build(b);
	case FC_PKT_PUSH_DATA:
		*exp = &push_pkt;
		return push_build(b);
	case FC_PKT_RESYNC:
		*exp = &resync_pkt;
		return resync_build(b);
	case FC_PKT_BACK:
		*exp = &back_pkt;
		memcpy(b, back_bytes, sizeof(back_bytes));
		return sizeof(back_bytes);
	case FC_PKT_EACK:
		*exp = &eack_pkt;
		return eack_build(b);
	case FC_PKT_NACK:
		*exp = &nack_pkt;
		return nack_build(b);
	default:
		fail_msg("no vector for type %u", type);
		return 0;
	}
}

/* Decode the bytes and compare with exp; encode exp and compare with the bytes. */
static void check_vector(uint32_t type)
{
	uint8_t b[128], out[128 + 16];
	const struct fc_falcon_pkt *exp;
	struct fc_falcon_pkt got;
	size_t len = vector_build(type, b, &exp);
	size_t hdr = spec_hdr_len(type);

	assert_int_equal(fc_falcon_decode(b, len, &got), (int)hdr);
	assert_same_pkt(exp, &got);
	assert_ptr_equal(got.payload, b + hdr);

	memset(out, 0xA5, sizeof(out));
	assert_int_equal(fc_falcon_encode(exp, out, len), (int)len);
	assert_memory_equal(out, b, len);
	assert_int_equal(out[len], 0xA5);
}

static void test_vec_pull_req(void **state) { (void)state; check_vector(FC_PKT_PULL_REQ); }
static void test_vec_pull_data(void **state) { (void)state; check_vector(FC_PKT_PULL_DATA); }
static void test_vec_push_data(void **state) { (void)state; check_vector(FC_PKT_PUSH_DATA); }
static void test_vec_resync(void **state) { (void)state; check_vector(FC_PKT_RESYNC); }
static void test_vec_back(void **state) { (void)state; check_vector(FC_PKT_BACK); }
static void test_vec_nack(void **state) { (void)state; check_vector(FC_PKT_NACK); }

static void test_vec_eack(void **state)
{
	uint8_t b[128];
	const struct fc_falcon_pkt *exp;
	struct fc_falcon_pkt got;
	size_t len = vector_build(FC_PKT_EACK, b, &exp);

	(void)state;
	check_vector(FC_PKT_EACK);
	assert_int_equal(fc_falcon_decode(b, len, &got), 72);
	/* bit i of the data-rx-bitmap = PSN base + i: exactly 0, 1, 2 are set */
	for (unsigned i = 0; i < 128; i++)
		assert_int_equal((got.data_rx[i / 64] >> (i % 64)) & 1, i < 3);
	/* data-ack bit 124 (0x1 << 28 of the 127:96 word) and bit 2 (0x4 of 31:0) */
	assert_int_equal((got.data_ack[124 / 64] >> (124 % 64)) & 1, 1);
	assert_int_equal((got.data_ack[0] >> 2) & 1, 1);
	assert_int_equal(got.data_ack[0] & 1, 0);
	/* req-bitmap bit 62 (word 16) and bits 0-3 (word 17) */
	assert_int_equal(got.req_bitmap >> 62, 1);
	assert_int_equal(got.req_bitmap & 0xFFFFFFFF, 0xF);
}

/* The type's fields in the exact wire words, one field at a time at its maximum. */
struct field_case {
	uint32_t type;
	size_t word;
	uint32_t expect; /* word value, written by hand from the spec columns */
	void (*set)(struct fc_falcon_pkt *p);
};

static void set_hops(struct fc_falcon_pkt *p) { p->hops = 0xF; }
static void set_rxbuf(struct fc_falcon_pkt *p) { p->rxbuf = 0x1F; }
static void set_ecn(struct fc_falcon_pkt *p) { p->ecn = 0x3FFF; }
static void set_rue22(struct fc_falcon_pkt *p) { p->rue = 0x3FFFFF; }
static void set_rue24(struct fc_falcon_pkt *p) { p->rue = 0xFFFFFF; }
static void set_own(struct fc_falcon_pkt *p) { p->own = 3; }
static void set_own_req(struct fc_falcon_pkt *p) { p->own = 1; }
static void set_code8(struct fc_falcon_pkt *p) { p->nack_code = 8; }
static void set_rnr(struct fc_falcon_pkt *p) { p->rnr_timeout = 0x1F; }
static void set_win(struct fc_falcon_pkt *p) { p->window = 1; }
static void set_ulp(struct fc_falcon_pkt *p) { p->ulp_nack_code = 0xFF; }
static void set_cid(struct fc_falcon_pkt *p) { p->cid = 0xFFFFFF; }
static void set_dfn(struct fc_falcon_pkt *p) { p->dest_fn = 0xFFFFFF; }
static void set_ar(struct fc_falcon_pkt *p) { p->ar = true; }
static void set_rcode(struct fc_falcon_pkt *p) { p->resync_code = 7; }
static void set_rtype(struct fc_falcon_pkt *p) { p->resync_pkt_type = 0xF; }
static void set_reqlen(struct fc_falcon_pkt *p) { p->req_len = 0xFFFF; }

static const struct field_case field_cases[] = {
	/* spec 7.7.1 CC info: hop count = top 4 bits of word 6, OWN = low 2 bits of word 7 */
	{ FC_PKT_BACK, 6, 0xF0000000, set_hops },
	{ FC_PKT_BACK, 6, 0x0F800000, set_rxbuf },
	{ FC_PKT_BACK, 6, 0x007FFE00, set_ecn },
	{ FC_PKT_BACK, 7, 0x00FFFFFC, set_rue22 },
	{ FC_PKT_BACK, 7, 0x00000003, set_own },
	{ FC_PKT_EACK, 7, 0x00000001, set_own_req },
	{ FC_PKT_EACK, 6, 0xF0000000, set_hops },
	{ FC_PKT_EACK, 0, 0x10FFFFFF, set_cid },
	{ FC_PKT_NACK, 6, 0xF0000000, set_hops },
	{ FC_PKT_NACK, 6, 0x007FFE00, set_ecn },
	{ FC_PKT_NACK, 7, 0x00FFFFFF, set_rue24 },
	{ FC_PKT_NACK, 9, 0x08000000, set_code8 },
	{ FC_PKT_NACK, 9, 0x013E0000, set_rnr },
	{ FC_PKT_NACK, 9, 0x01010000, set_win },
	{ FC_PKT_NACK, 9, 0x010000FF, set_ulp },
	/* spec 7.2 word 1 */
	{ FC_PKT_PULL_DATA, 1, 0xFFFFFF46, set_dfn },
	{ FC_PKT_PULL_DATA, 1, 0x00000047, set_ar },
	{ FC_PKT_PULL_DATA, 0, 0x10FFFFFF, set_cid },
	/* spec 7.3, 7.6 */
	{ FC_PKT_PULL_REQ, 6, 0xFFFF0000, set_reqlen },
	{ FC_PKT_RESYNC, 6, 0x07000000, set_rcode },
	{ FC_PKT_RESYNC, 6, 0x01F00000, set_rtype },
};

static void test_field_positions(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(field_cases); i++) {
		const struct field_case *c = &field_cases[i];
		struct fc_falcon_pkt p = { .type = (enum fc_pkt_type)c->type }, q;
		uint8_t b[128];
		int n;

		/* the smallest legal codes, so that only the field under test is non-zero */
		if (fc_falcon_type_has_base(c->type))
			p.proto = 2;
		if (c->type == FC_PKT_NACK)
			p.nack_code = 1;
		if (c->type == FC_PKT_RESYNC)
			p.resync_code = 1;
		c->set(&p);
		n = fc_falcon_encode(&p, b, sizeof(b));
		assert_int_equal(n, (int)spec_hdr_len(c->type));
		if (get_word(b, c->word) != c->expect)
			fail_msg("case %zu: word %zu = %#x, want %#x", i, c->word,
				 get_word(b, c->word), c->expect);
		assert_int_equal(fc_falcon_decode(b, (size_t)n, &q), n);
		assert_same_pkt(&p, &q);
	}
}

/* Reserved bits set on the wire: ignored by decode, zero after encode. */
struct rsvd_case {
	uint32_t type;
	size_t word;
	uint32_t bits;
};

static const struct rsvd_case rsvd_cases[] = {
	{ FC_PKT_PULL_REQ, 0, 0x0F000000 }, { FC_PKT_PULL_REQ, 6, 0x0000FFFF },
	{ FC_PKT_PULL_REQ, 7, 0xFFFFFFFF }, { FC_PKT_PUSH_DATA, 6, 0x0000FFFF },
	{ FC_PKT_PULL_DATA, 0, 0x0F000000 }, { FC_PKT_RESYNC, 6, 0x000FFFFF },
	{ FC_PKT_BACK, 0, 0x0F000000 },     { FC_PKT_BACK, 1, 0xFFFFFFE1 },
	{ FC_PKT_BACK, 6, 0x000001FF },     { FC_PKT_BACK, 7, 0xFF000000 },
	{ FC_PKT_EACK, 1, 0xFFFFFFE1 },     { FC_PKT_EACK, 6, 0x000001FF },
	{ FC_PKT_EACK, 7, 0xFF000000 },     { FC_PKT_NACK, 1, 0xFFFFFFE1 },
	{ FC_PKT_NACK, 6, 0x000001FF },     { FC_PKT_NACK, 7, 0xFF000000 },
	{ FC_PKT_NACK, 9, 0x00C0FF00 },
};

static void test_reserved_bits_ignored(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(rsvd_cases); i++) {
		const struct rsvd_case *c = &rsvd_cases[i];
		uint8_t clean[128], dirty[128], out[128];
		const struct fc_falcon_pkt *exp;
		struct fc_falcon_pkt got;
		size_t len = vector_build(c->type, clean, &exp);
		int hdr = (int)spec_hdr_len(c->type);

		memcpy(dirty, clean, len);
		put_word(dirty, c->word, get_word(clean, c->word) | c->bits);
		assert_int_equal(fc_falcon_decode(dirty, len, &got), hdr);
		assert_same_pkt(exp, &got);
		assert_int_equal(fc_falcon_encode(&got, out, sizeof(out)), (int)len);
		assert_memory_equal(out, clean, len);
	}
}

/* ------------------------------------------------------------------------ */
/* random round trips                                                         */
/* ------------------------------------------------------------------------ */

static uint8_t g_payload[MAX_PAYLOAD];
static uint8_t g_wire[BUF_CAP];

static uint8_t rnd_nack_code(void)
{
	static const uint8_t codes[] = { 1, 2, 4, 6, 7, 8 };

	return codes[rnd32() % ARRAY_SIZE(codes)];
}

static size_t rnd_payload_len(uint32_t type)
{
	uint32_t r = rnd32() % 64;
	size_t max = type == FC_PKT_PUSH_DATA ? MAX_PAYLOAD : sizeof(g_payload);

	if (!fc_falcon_type_has_payload(type) || r < 8)
		return 0;
	if (r == 8)
		return max - rnd32() % 4; /* near the 16-bit limit */
	if (r == 9)
		return 1 + rnd32() % 16;
	return rnd32() % 1600;
}

/* Random values at the full width of every field the type carries; others stay 0. */
static void rnd_pkt(struct fc_falcon_pkt *p, uint32_t type)
{
	memset(p, 0, sizeof(*p));
	p->type = (enum fc_pkt_type)type;
	p->cid = rnd32() & 0xFFFFFF;
	if (fc_falcon_type_has_base(type)) {
		p->dest_fn = rnd32() & 0xFFFFFF;
		p->proto = 2 + (rnd32() & 1);
		p->ar = rnd32() & 1;
		p->psn = rnd32();
		p->rsn = rnd32();
	} else {
		p->t1_ts = rnd32();
		p->t2_ts = rnd32();
		p->hops = rnd32() & 0xF;
		p->rxbuf = rnd32() & 0x1F;
		p->ecn = rnd32() & 0x3FFF;
		p->rue = rnd32() & (type == FC_PKT_NACK ? 0xFFFFFF : 0x3FFFFF);
		p->own = type == FC_PKT_NACK ? 0 : rnd32() & 3;
	}
	p->rdbpsn = rnd32();
	p->rrbpsn = rnd32();
	if (type == FC_PKT_PULL_REQ)
		p->req_len = (uint16_t)rnd32();
	if (type == FC_PKT_RESYNC) {
		p->resync_code = 1 + rnd32() % 7;
		p->resync_pkt_type = rnd32() & 0xF;
		p->vendor = rnd32();
	}
	if (type == FC_PKT_EACK) {
		p->data_ack[0] = rnd64();
		p->data_ack[1] = rnd64();
		p->data_rx[0] = rnd64();
		p->data_rx[1] = rnd64();
		p->req_bitmap = rnd64();
	}
	if (type == FC_PKT_NACK) {
		p->nack_psn = rnd32();
		p->nack_code = rnd_nack_code();
		p->rnr_timeout = rnd32() & 0x1F;
		p->window = rnd32() & 1;
		p->ulp_nack_code = (uint8_t)rnd32();
	}
	p->payload_len = rnd_payload_len(type);
	for (size_t i = 0; i < p->payload_len; i++)
		g_payload[i] = (uint8_t)rnd32();
	p->payload = g_payload;
	if (type == FC_PKT_PUSH_DATA)
		p->req_len = (uint16_t)p->payload_len;
}

static void roundtrip(uint32_t type)
{
	seed_rng();
	g_rng ^= type * 0x100000001B3ull; /* each type its own stream, same seed */
	if (!g_rng)
		g_rng = DEFAULT_SEED;
	for (int it = 0; it < ROUNDTRIP_ITERS; it++) {
		struct fc_falcon_pkt p, q;
		size_t off = rnd32() % 8, hdr = spec_hdr_len(type), need, cap;
		const char *m;
		int n, d;

		rnd_pkt(&p, type);
		need = hdr + p.payload_len;
		cap = need + rnd32() % 3;
		n = fc_falcon_encode(&p, g_wire + off, cap);
		d = n == (int)need ? fc_falcon_decode(g_wire + off, need, &q) : -1;
		m = d == (int)hdr ? pkt_diff(&p, &q) : "decode";
		if (n != (int)need || m || get_word(g_wire + off, 0) >> 28 != 1 ||
		    (get_word(g_wire + off, 0) & 0x0F000000))
			fail_msg("seed %#llx (FALCON_TEST_SEED) type %u iteration %d: encode %d "
				 "decode %d, %s", (unsigned long long)g_seed, type, it, n, d,
				 m ? m : "word 0");
	}
}

static void test_rt_pull_req(void **state) { (void)state; roundtrip(FC_PKT_PULL_REQ); }
static void test_rt_pull_data(void **state) { (void)state; roundtrip(FC_PKT_PULL_DATA); }
static void test_rt_push_data(void **state) { (void)state; roundtrip(FC_PKT_PUSH_DATA); }
static void test_rt_resync(void **state) { (void)state; roundtrip(FC_PKT_RESYNC); }
static void test_rt_back(void **state) { (void)state; roundtrip(FC_PKT_BACK); }
static void test_rt_eack(void **state) { (void)state; roundtrip(FC_PKT_EACK); }
static void test_rt_nack(void **state) { (void)state; roundtrip(FC_PKT_NACK); }

/* ------------------------------------------------------------------------ */
/* malformed input                                                            */
/* ------------------------------------------------------------------------ */

/* Byte-level mutations of the first two words (spec 7.2 columns). */
static void set_version(uint8_t *b, unsigned v) { b[0] = (uint8_t)((b[0] & 0x0F) | v << 4); }
static void set_type(uint8_t *b, unsigned t) { b[7] = (uint8_t)((b[7] & 0xE1) | t << 1); }
static void set_proto(uint8_t *b, unsigned p) { b[7] = (uint8_t)((b[7] & 0x1F) | p << 5); }

static void test_hdr_len_table(void **state)
{
	(void)state;
	for (uint32_t t = 0; t < 16; t++)
		assert_int_equal(fc_falcon_hdr_len(t), spec_hdr_len(t));
}

static void test_truncated(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(all_types); i++) {
		uint8_t b[128];
		const struct fc_falcon_pkt *exp;
		struct fc_falcon_pkt got;
		size_t hdr = spec_hdr_len(all_types[i]);

		vector_build(all_types[i], b, &exp);
		for (size_t len = 0; len < hdr; len++) {
			/* a heap copy of exactly len bytes, so ASan/valgrind see over-reads */
			uint8_t *c = malloc(len ? len : 1);

			assert_non_null(c);
			memcpy(c, b, len);
			if (fc_falcon_decode(c, len, &got) != -FC_WIRE_ETRUNC)
				fail_msg("type %u len %zu: not ETRUNC", all_types[i], len);
			free(c);
		}
	}
	assert_int_equal(fc_falcon_decode(NULL, 0, &(struct fc_falcon_pkt){ 0 }),
			 -FC_WIRE_ETRUNC);
}

static void test_bad_version(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(all_types); i++) {
		for (unsigned v = 0; v < 16; v++) {
			uint8_t b[128];
			const struct fc_falcon_pkt *exp;
			struct fc_falcon_pkt got;
			size_t len = vector_build(all_types[i], b, &exp);

			if (v == 1)
				continue;
			set_version(b, v);
			assert_int_equal(fc_falcon_decode(b, len, &got), -FC_WIRE_EVERSION);
			/* version is checked before the type and the header length */
			assert_int_equal(fc_falcon_decode(b, 8, &got), -FC_WIRE_EVERSION);
			set_type(b, 0xF);
			assert_int_equal(fc_falcon_decode(b, len, &got), -FC_WIRE_EVERSION);
		}
	}
}

static void test_reserved_type(void **state)
{
	uint8_t b[128];
	struct fc_falcon_pkt got;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(reserved_types); i++) {
		memset(b, 0, sizeof(b));
		put_word(b, 0, col(1, 0, 4) | col(0x42, 8, 24));
		put_word(b, 1, col(2, 24, 3) | col(reserved_types[i], 27, 4));
		for (size_t len = 8; len <= sizeof(b); len++)
			assert_int_equal(fc_falcon_decode(b, len, &got), -FC_WIRE_ETYPE);
	}
}

static void test_reserved_proto(void **state)
{
	static const uint32_t base_types[] = { 0x0, 0x3, 0x5, 0x6 };
	static const unsigned bad[] = { 0, 1, 4, 5, 6, 7 };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(base_types); i++) {
		for (size_t k = 0; k < ARRAY_SIZE(bad); k++) {
			uint8_t b[128];
			const struct fc_falcon_pkt *exp;
			struct fc_falcon_pkt got;
			size_t len = vector_build(base_types[i], b, &exp);

			set_proto(b, bad[k]);
			assert_int_equal(fc_falcon_decode(b, len, &got), -FC_WIRE_EPROTO);
			/* a short buffer is ETRUNC first */
			assert_int_equal(fc_falcon_decode(b, spec_hdr_len(base_types[i]) - 1, &got),
					 -FC_WIRE_ETRUNC);
		}
	}
}

static void test_push_len_mismatch(void **state)
{
	uint8_t b[128] = { 0 };
	const struct fc_falcon_pkt *exp;
	struct fc_falcon_pkt got;
	size_t len = vector_build(FC_PKT_PUSH_DATA, b, &exp); /* 28 + 5, request length 5 */

	(void)state;
	assert_int_equal(fc_falcon_decode(b, len, &got), 28);
	assert_int_equal(fc_falcon_decode(b, len - 1, &got), -FC_WIRE_ELEN); /* too long */
	assert_int_equal(fc_falcon_decode(b, len + 1, &got), -FC_WIRE_ELEN); /* too short */
	assert_int_equal(fc_falcon_decode(b, 28, &got), -FC_WIRE_ELEN);
	b[24] = 0x00, b[25] = 0x06;
	assert_int_equal(fc_falcon_decode(b, len, &got), -FC_WIRE_ELEN);
	assert_int_equal(fc_falcon_decode(b, len + 1, &got), 28);
	b[24] = 0x01, b[25] = 0x05; /* 261: high byte counts */
	assert_int_equal(fc_falcon_decode(b, len, &got), -FC_WIRE_ELEN);
	b[24] = 0x00, b[25] = 0x00;
	assert_int_equal(fc_falcon_decode(b, 28, &got), 28);
	assert_int_equal(got.payload_len, 0);
	assert_int_equal(fc_falcon_decode(b, 29, &got), -FC_WIRE_ELEN);
}

static void test_trailing_bytes(void **state)
{
	static const uint32_t exact[] = { 0x6, 0x8, 0x9, 0xA };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(exact); i++) {
		uint8_t b[128] = { 0 };
		const struct fc_falcon_pkt *exp;
		struct fc_falcon_pkt got;
		size_t len = vector_build(exact[i], b, &exp);

		assert_int_equal(fc_falcon_decode(b, len, &got), (int)len);
		assert_int_equal(fc_falcon_decode(b, len + 1, &got), -FC_WIRE_ELEN);
		assert_int_equal(fc_falcon_decode(b, sizeof(b), &got), -FC_WIRE_ELEN);
	}
	/* Pull Request and Pull Data take any number of trailing payload bytes */
	for (uint32_t t = 0; t <= 3; t += 3) {
		uint8_t b[128] = { 0 };
		const struct fc_falcon_pkt *exp;
		struct fc_falcon_pkt got;

		vector_build(t, b, &exp);
		for (size_t len = spec_hdr_len(t); len <= sizeof(b); len++) {
			assert_int_equal(fc_falcon_decode(b, len, &got), (int)spec_hdr_len(t));
			assert_int_equal(got.payload_len, len - spec_hdr_len(t));
		}
	}
}

static void test_reserved_codes(void **state)
{
	uint8_t b[128];
	const struct fc_falcon_pkt *exp;
	struct fc_falcon_pkt got;
	size_t len;

	(void)state;
	for (unsigned c = 0; c < 256; c++) { /* spec 7.8: 1, 2, 4, 6, 7, 8 defined */
		int ok = c == 1 || c == 2 || c == 4 || c == 6 || c == 7 || c == 8;

		len = vector_build(FC_PKT_NACK, b, &exp);
		b[36] = (uint8_t)c; /* word 9, columns 0-7 */
		assert_int_equal(fc_falcon_decode(b, len, &got), ok ? 40 : -FC_WIRE_EFIELD);
		if (ok)
			assert_int_equal(got.nack_code, c);
		else /* field values are checked before the length */
			assert_int_equal(fc_falcon_decode(b, len + 1, &got), -FC_WIRE_EFIELD);
	}
	for (unsigned c = 0; c < 256; c++) { /* spec 7.6: 1..7 defined */
		int ok = c >= 1 && c <= 7;

		len = vector_build(FC_PKT_RESYNC, b, &exp);
		b[24] = (uint8_t)c; /* word 6, columns 0-7 */
		assert_int_equal(fc_falcon_decode(b, len, &got), ok ? 32 : -FC_WIRE_EFIELD);
		if (!ok) {
			set_proto(b, 0); /* protocol type is checked before the code */
			assert_int_equal(fc_falcon_decode(b, len, &got), -FC_WIRE_EPROTO);
		}
	}
}

/* ------------------------------------------------------------------------ */
/* encoder bounds                                                             */
/* ------------------------------------------------------------------------ */

#define GUARD 0xA5
#define GUARD_LEN 64

static bool all_guard(const uint8_t *b, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (b[i] != GUARD)
			return false;
	return true;
}

static void test_encode_nospc(void **state)
{
	static const size_t pl_lens[] = { 0, 1, 7, 100 };
	static uint8_t buf[200 + GUARD_LEN], pl[100];

	(void)state;
	memset(pl, 0x3C, sizeof(pl));
	for (size_t i = 0; i < ARRAY_SIZE(all_types); i++) {
		for (size_t k = 0; k < ARRAY_SIZE(pl_lens); k++) {
			const struct fc_falcon_pkt *exp;
			struct fc_falcon_pkt p;
			size_t need;

			vector_build(all_types[i], buf, &exp);
			p = *exp;
			p.payload = pl;
			if (fc_falcon_type_has_payload(p.type))
				p.payload_len = pl_lens[k];
			else
				p.payload_len = 0;
			need = spec_hdr_len(p.type) + p.payload_len;
			assert_int_equal(fc_falcon_encoded_len(&p), need);
			for (size_t cap = 0; cap < need; cap++) {
				memset(buf, GUARD, sizeof(buf));
				assert_int_equal(fc_falcon_encode(&p, buf, cap), -FC_WIRE_ENOSPC);
				assert_true(all_guard(buf, 0, sizeof(buf)));
			}
			memset(buf, GUARD, sizeof(buf));
			assert_int_equal(fc_falcon_encode(&p, buf, need), (int)need);
			assert_true(all_guard(buf, need, sizeof(buf)));
		}
	}
}

struct inval_case {
	uint32_t type;
	void (*set)(struct fc_falcon_pkt *p);
	const char *what;
};

static uint8_t g_dummy[70000];

static void w_cid(struct fc_falcon_pkt *p) { p->cid = 0x1000000; }
static void w_dfn(struct fc_falcon_pkt *p) { p->dest_fn = 0x1000000; }
static void w_proto0(struct fc_falcon_pkt *p) { p->proto = 0; }
static void w_proto1(struct fc_falcon_pkt *p) { p->proto = 1; }
static void w_proto4(struct fc_falcon_pkt *p) { p->proto = 4; }
static void w_proto7(struct fc_falcon_pkt *p) { p->proto = 7; }
static void w_proto8(struct fc_falcon_pkt *p) { p->proto = 8; }
static void w_rcode0(struct fc_falcon_pkt *p) { p->resync_code = 0; }
static void w_rcode8(struct fc_falcon_pkt *p) { p->resync_code = 8; }
static void w_rtype(struct fc_falcon_pkt *p) { p->resync_pkt_type = 16; }
static void w_hops(struct fc_falcon_pkt *p) { p->hops = 16; }
static void w_rxbuf(struct fc_falcon_pkt *p) { p->rxbuf = 32; }
static void w_ecn(struct fc_falcon_pkt *p) { p->ecn = 0x4000; }
static void w_rue22(struct fc_falcon_pkt *p) { p->rue = 0x400000; }
static void w_rue24(struct fc_falcon_pkt *p) { p->rue = 0x1000000; }
static void w_own(struct fc_falcon_pkt *p) { p->own = 4; }
static void w_ncode0(struct fc_falcon_pkt *p) { p->nack_code = 0; }
static void w_ncode3(struct fc_falcon_pkt *p) { p->nack_code = 3; }
static void w_ncode9(struct fc_falcon_pkt *p) { p->nack_code = 9; }
static void w_rnr(struct fc_falcon_pkt *p) { p->rnr_timeout = 32; }
static void w_win(struct fc_falcon_pkt *p) { p->window = 2; }
static void w_push_big(struct fc_falcon_pkt *p) { p->payload = g_dummy, p->payload_len = 65536; }
static void w_payload1(struct fc_falcon_pkt *p) { p->payload = g_dummy, p->payload_len = 1; }
static void w_null_pl(struct fc_falcon_pkt *p) { p->payload = NULL, p->payload_len = 1; }

static const struct inval_case inval_cases[] = {
	{ FC_PKT_BACK, w_cid, "cid" },          { FC_PKT_PULL_REQ, w_cid, "cid" },
	{ FC_PKT_PULL_DATA, w_dfn, "dest_fn" }, { FC_PKT_RESYNC, w_dfn, "dest_fn" },
	{ FC_PKT_PUSH_DATA, w_proto0, "proto" }, { FC_PKT_PUSH_DATA, w_proto1, "proto" },
	{ FC_PKT_PULL_REQ, w_proto4, "proto" },  { FC_PKT_PULL_DATA, w_proto7, "proto" },
	{ FC_PKT_RESYNC, w_proto8, "proto" },    { FC_PKT_RESYNC, w_rcode0, "resync_code" },
	{ FC_PKT_RESYNC, w_rcode8, "resync_code" }, { FC_PKT_RESYNC, w_rtype, "resync_pkt_type" },
	{ FC_PKT_BACK, w_hops, "hops" },        { FC_PKT_EACK, w_rxbuf, "rxbuf" },
	{ FC_PKT_NACK, w_ecn, "ecn" },          { FC_PKT_BACK, w_rue22, "rue" },
	{ FC_PKT_EACK, w_rue22, "rue" },        { FC_PKT_NACK, w_rue24, "rue" },
	{ FC_PKT_BACK, w_own, "own" },          { FC_PKT_EACK, w_own, "own" },
	{ FC_PKT_NACK, w_ncode0, "nack_code" }, { FC_PKT_NACK, w_ncode3, "nack_code" },
	{ FC_PKT_NACK, w_ncode9, "nack_code" }, { FC_PKT_NACK, w_rnr, "rnr_timeout" },
	{ FC_PKT_NACK, w_win, "window" },       { FC_PKT_PUSH_DATA, w_push_big, "push payload" },
	{ FC_PKT_RESYNC, w_payload1, "payload" }, { FC_PKT_BACK, w_payload1, "payload" },
	{ FC_PKT_EACK, w_payload1, "payload" }, { FC_PKT_NACK, w_payload1, "payload" },
	{ FC_PKT_PULL_DATA, w_null_pl, "NULL payload" },
};

static void test_encode_einval(void **state)
{
	static uint8_t buf[70000 + 128];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(inval_cases); i++) {
		const struct inval_case *c = &inval_cases[i];
		const struct fc_falcon_pkt *exp;
		struct fc_falcon_pkt p;

		vector_build(c->type, buf, &exp);
		p = *exp;
		c->set(&p);
		memset(buf, GUARD, sizeof(buf));
		if (fc_falcon_encode(&p, buf, sizeof(buf)) != -FC_WIRE_EINVAL)
			fail_msg("type %u: too wide %s not rejected", c->type, c->what);
		assert_true(all_guard(buf, 0, 128));
	}
	/* the widest legal values pass: 22-bit RUE on NACK too, 65535-byte Push Data */
	{
		struct fc_falcon_pkt p = nack_pkt;

		p.rue = 0x3FFFFF;
		assert_int_equal(fc_falcon_encode(&p, buf, sizeof(buf)), 40);
		p = push_pkt;
		p.payload = g_dummy;
		p.payload_len = 65535;
		assert_int_equal(fc_falcon_encode(&p, buf, sizeof(buf)), 28 + 65535);
		assert_int_equal(buf[24], 0xFF);
		assert_int_equal(buf[25], 0xFF);
	}
}

static void test_encode_reserved_type(void **state)
{
	uint8_t buf[128];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(reserved_types); i++) {
		struct fc_falcon_pkt p = back_pkt;

		p.type = (enum fc_pkt_type)reserved_types[i];
		memset(buf, GUARD, sizeof(buf));
		assert_int_equal(fc_falcon_encode(&p, buf, sizeof(buf)), -FC_WIRE_ETYPE);
		assert_true(all_guard(buf, 0, sizeof(buf)));
		assert_int_equal(fc_falcon_encoded_len(&p), 0);
	}
	/* ETYPE comes before EINVAL and ENOSPC */
	{
		struct fc_falcon_pkt p = { .type = (enum fc_pkt_type)16, .cid = 0xFFFFFFFF };

		assert_int_equal(fc_falcon_encode(&p, buf, 0), -FC_WIRE_ETYPE);
		p.type = FC_PKT_BACK;
		assert_int_equal(fc_falcon_encode(&p, buf, 0), -FC_WIRE_EINVAL);
	}
}

/* Push Data: the length written is payload_len, whatever req_len says. */
static void test_encode_push_req_len(void **state)
{
	uint8_t b[128], out[128];
	const struct fc_falcon_pkt *exp;
	struct fc_falcon_pkt p;
	size_t len = vector_build(FC_PKT_PUSH_DATA, b, &exp);

	(void)state;
	p = *exp;
	p.req_len = 999;
	assert_int_equal(fc_falcon_encode(&p, out, sizeof(out)), (int)len);
	assert_memory_equal(out, b, len);
}

/* The payload may already sit in the output buffer, even overlapping the header. */
static void test_encode_payload_in_place(void **state)
{
	uint8_t b[128], out[256];
	const struct fc_falcon_pkt *exp;
	struct fc_falcon_pkt p;
	size_t len = vector_build(FC_PKT_PULL_REQ, b, &exp);

	(void)state;
	p = *exp;
	/* at buf + header length: no copy */
	memset(out, 0, sizeof(out));
	memcpy(out + 32, pull_req_payload, sizeof(pull_req_payload));
	p.payload = out + 32;
	assert_int_equal(fc_falcon_encode(&p, out, len), (int)len);
	assert_memory_equal(out, b, len);
	/* under the header */
	memset(out, 0, sizeof(out));
	memcpy(out + 2, pull_req_payload, sizeof(pull_req_payload));
	p.payload = out + 2;
	assert_int_equal(fc_falcon_encode(&p, out, len), (int)len);
	assert_memory_equal(out, b, len);
	/* overlapping its own destination from above */
	memset(out, 0, sizeof(out));
	memcpy(out + 34, pull_req_payload, sizeof(pull_req_payload));
	p.payload = out + 34;
	assert_int_equal(fc_falcon_encode(&p, out, len), (int)len);
	assert_memory_equal(out, b, len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_len_table),
		cmocka_unit_test(test_vec_pull_req),
		cmocka_unit_test(test_vec_pull_data),
		cmocka_unit_test(test_vec_push_data),
		cmocka_unit_test(test_vec_resync),
		cmocka_unit_test(test_vec_back),
		cmocka_unit_test(test_vec_eack),
		cmocka_unit_test(test_vec_nack),
		cmocka_unit_test(test_field_positions),
		cmocka_unit_test(test_reserved_bits_ignored),
		cmocka_unit_test(test_rt_pull_req),
		cmocka_unit_test(test_rt_pull_data),
		cmocka_unit_test(test_rt_push_data),
		cmocka_unit_test(test_rt_resync),
		cmocka_unit_test(test_rt_back),
		cmocka_unit_test(test_rt_eack),
		cmocka_unit_test(test_rt_nack),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_reserved_type),
		cmocka_unit_test(test_reserved_proto),
		cmocka_unit_test(test_push_len_mismatch),
		cmocka_unit_test(test_trailing_bytes),
		cmocka_unit_test(test_reserved_codes),
		cmocka_unit_test(test_encode_nospc),
		cmocka_unit_test(test_encode_einval),
		cmocka_unit_test(test_encode_reserved_type),
		cmocka_unit_test(test_encode_push_req_len),
		cmocka_unit_test(test_encode_payload_in_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
