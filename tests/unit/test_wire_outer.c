/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the outer encapsulation codec (daemon/engine/wire_outer.c): Ethernet, VLAN,
 * IPv4, IPv6, UDP, PSP.
 *
 * Expected bytes are written by hand (frame_v4, frame_v6) or built with the C library's
 * own <netinet/...> structs; checksums are checked with ref_sum()/ref_fold() below, written
 * independently of fc_inet_csum_*(). Random tests use xorshift64 seeded with
 * FALCON_TEST_SEED (default below) and print the seed on failure.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <net/ethernet.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/udp.h>

#include "wire_outer.h"

#define DEFAULT_SEED 0x5EEDF41C0ULL
#define PORT 1000

static uint64_t test_seed, rng;

static void rng_init(void)
{
	const char *e = getenv("FALCON_TEST_SEED");

	test_seed = e ? strtoull(e, NULL, 0) : DEFAULT_SEED;
	rng = test_seed ? test_seed : 1;
}

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void rnd_bytes(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* Like assert_int_equal, but names the seed that reproduces a failure. */
#define CHECK_EQ(a, b)                                                                     \
	do {                                                                               \
		unsigned long long a_ = (unsigned long long)(a);                           \
		unsigned long long b_ = (unsigned long long)(b);                           \
		if (a_ != b_) {                                                            \
			print_error("%s:%d: %s == %llu, expected %s == %llu "              \
				    "(FALCON_TEST_SEED=%llu)\n",                           \
				    __FILE__, __LINE__, #a, a_, #b, b_,                    \
				    (unsigned long long)test_seed);                        \
			fail();                                                            \
		}                                                                          \
	} while (0)

#define CHECK_MEM(a, b, n)                                                                 \
	do {                                                                               \
		if (memcmp((a), (b), (n)) != 0) {                                          \
			print_error("%s:%d: %s != %s (FALCON_TEST_SEED=%llu)\n", __FILE__,   \
				    __LINE__, #a, #b, (unsigned long long)test_seed);      \
			fail();                                                            \
		}                                                                          \
	} while (0)

/* ------------------------------------------------------------------------ */
/* Independent helpers                                                       */
/* ------------------------------------------------------------------------ */

/* RFC 1071 sum, one byte pair at a time (independent of fc_inet_csum_add). */
static uint32_t ref_sum(uint32_t s, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		s += (i % 2 == 0) ? (uint32_t)p[i] * 256 : p[i];
	return s;
}

static uint16_t ref_fold(uint32_t s)
{
	while (s > 0xFFFF)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)(0xFFFF - s);
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] * 256 + p[1]); }

static void put16(uint8_t *p, unsigned int v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Recomputes the IPv4 header checksum at l3 (ihl from the header). */
static void fix_ip4(uint8_t *f, size_t l3)
{
	size_t hl = (f[l3] & 0xF) * 4u;

	put16(f + l3 + 10, 0);
	put16(f + l3 + 10, ref_fold(ref_sum(0, f + l3, hl)));
}

/* UDP checksum over the pseudo-header. store = 0: returns the folded complement of the
 * datagram as it is (0 when its checksum is right); store = 1: computes with the field
 * zeroed, stores the result (0 sent as 0xFFFF) and returns the computed value. */
static uint16_t ref_udp(uint8_t *f, size_t l3, int v6, int store)
{
	size_t l4 = l3 + (v6 ? 40 : (f[l3] & 0xF) * 4u);
	unsigned int ulen = get16(f + l4 + 4);
	uint32_t s = 0;
	uint16_t c;

	if (v6)
		s = ref_sum(ref_sum(0, f + l3 + 8, 16), f + l3 + 24, 16);
	else
		s = ref_sum(ref_sum(0, f + l3 + 12, 4), f + l3 + 16, 4);
	s += 17 + ulen;
	if (store)
		put16(f + l4 + 6, 0);
	c = ref_fold(ref_sum(s, f + l4, ulen));
	if (store)
		put16(f + l4 + 6, c ? c : 0xFFFF);
	return c;
}

/* ------------------------------------------------------------------------ */
/* Hand-built frames                                                         */
/* ------------------------------------------------------------------------ */

/*
 * IPv4 + one 802.1Q tag (PCP 3, VID 100), PSP version 0xF (NULL: no ICV), no VC.
 * IPv4 checksum: words 4500+0034+1234+4000+4011+0a00+0001+0a00+0002 = 0xEB7C,
 *   complement 0x1483.
 * UDP checksum: pseudo-header 0a00+0001+0a00+0002+0011+0020 plus the datagram words
 *   c000+03e8+0020+fc01+013d+8000+0001+0000+0001+2345+6789+1000+002a+dead+beef
 *   = 0x48E10, folded 0x8E10 + 4 = 0x8E14, complement 0x71EB.
 */
static const uint8_t frame_v4[70] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, /* dst MAC */
	0x02, 0x00, 0x00, 0x00, 0x00, 0x01, /* src MAC */
	0x81, 0x00, 0x60, 0x64,             /* 802.1Q, TCI: PCP 3, DEI 0, VID 100 */
	0x08, 0x00,                         /* IPv4 */
	0x45, 0x00, 0x00, 0x34,             /* v4, IHL 5, TOS 0, total length 52 */
	0x12, 0x34, 0x40, 0x00,             /* id 0x1234, DF */
	0x40, 0x11, 0x14, 0x83,             /* TTL 64, UDP, checksum 0x1483 */
	0x0a, 0x00, 0x00, 0x01,             /* 10.0.0.1 */
	0x0a, 0x00, 0x00, 0x02,             /* 10.0.0.2 */
	0xc0, 0x00, 0x03, 0xe8,             /* UDP 49152 -> 1000 */
	0x00, 0x20, 0x71, 0xeb,             /* length 32, checksum 0x71EB */
	0xfc, 0x01, 0x01, 0x3d,             /* PSP: nh 252, ext 1, crypt 1, 0|0|1111|0|1 */
	0x80, 0x00, 0x00, 0x01,             /* SPI */
	0x00, 0x00, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, /* IV = 4886718345 ns */
	0x10, 0x00, 0x00, 0x2a, 0xde, 0xad, 0xbe, 0xef, /* Falcon: version 1, CID 42, ... */
};

/*
 * IPv6 (traffic class 0xB8, flow label 0x12345), no tag, PSP version 1 (AES-GCM-256)
 * with S = 1 and a VC, 8-byte Falcon packet, 16-byte ICV of 0xAA.
 * UDP checksum: pseudo-header (addresses, length 0x38, next header 0x11) and datagram
 *   words sum to 0x89897, folded 0x9897 + 8 = 0x989F, complement 0x6760.
 */
static const uint8_t frame_v6[110] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x86, 0xdd,             /* IPv6 */
	0x6b, 0x81, 0x23, 0x45, /* 6 | tc 0xB8 | flow 0x12345 */
	0x00, 0x38, 0x11, 0x40, /* payload length 56, UDP, hop limit 64 */
	0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, /* 2001:db8::1 */
	0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, /* 2001:db8::2 */
	0xc0, 0x01, 0x03, 0xe8, /* UDP 49153 -> 1000 */
	0x00, 0x38, 0x67, 0x60, /* length 56, checksum 0x6760 */
	0xfc, 0x02, 0x01, 0x87, /* PSP: nh 252, ext 2, crypt 1, 1|0|0001|1|1 */
	0x00, 0x00, 0x00, 0x07, /* SPI 7 */
	0x00, 0x00, 0x00, 0x00, 0x3b, 0x9a, 0xca, 0x00, /* IV = 1e9 ns */
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* VC */
	0x10, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x00, /* Falcon packet */
	0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, /* ICV */
	0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
};

#define V4_L3 18
#define V6_L3 14

static uint8_t big[70000];
static uint8_t big2[70000];

/* ------------------------------------------------------------------------ */
/* Comparison                                                                */
/* ------------------------------------------------------------------------ */

static void psp_eq(const struct fc_psp_info *a, const struct fc_psp_info *b)
{
	CHECK_EQ(a->next_hdr, b->next_hdr);
	CHECK_EQ(a->hdr_ext_len, b->hdr_ext_len);
	CHECK_EQ(a->crypt_off, b->crypt_off);
	CHECK_EQ(a->s, b->s);
	CHECK_EQ(a->d, b->d);
	CHECK_EQ(a->version, b->version);
	CHECK_EQ(a->has_vc, b->has_vc);
	CHECK_EQ(a->spi, b->spi);
	CHECK_EQ(a->iv, b->iv);
	CHECK_EQ(a->vc, b->vc);
	CHECK_EQ(a->hdr_len, b->hdr_len);
	CHECK_EQ(a->icv_len, b->icv_len);
}

static void outer_eq(const struct fc_outer *a, const struct fc_outer *b)
{
	unsigned int i;

	CHECK_MEM(a->dst, b->dst, 6);
	CHECK_MEM(a->src, b->src, 6);
	CHECK_EQ(a->nvlan, b->nvlan);
	for (i = 0; i < FC_OUTER_VLAN_MAX; i++) {
		CHECK_EQ(a->vlan_tpid[i], b->vlan_tpid[i]);
		CHECK_EQ(a->vlan_tci[i], b->vlan_tci[i]);
	}
	CHECK_EQ(a->ip_ver, b->ip_ver);
	CHECK_MEM(a->saddr, b->saddr, 16);
	CHECK_MEM(a->daddr, b->daddr, 16);
	CHECK_EQ(a->tos, b->tos);
	CHECK_EQ(a->ttl, b->ttl);
	CHECK_EQ(a->flow_label, b->flow_label);
	CHECK_EQ(a->ip_id, b->ip_id);
	CHECK_EQ(a->df, b->df);
	CHECK_EQ(a->sport, b->sport);
	CHECK_EQ(a->dport, b->dport);
	CHECK_EQ(a->l3_off, b->l3_off);
	CHECK_EQ(a->l4_off, b->l4_off);
	CHECK_EQ(a->psp_off, b->psp_off);
	psp_eq(&a->psp, &b->psp);
	CHECK_EQ(a->inner_off, b->inner_off);
	CHECK_EQ(a->inner_len, b->inner_len);
}

/* Decodes a copy of f[0..len) in a heap block of exactly len bytes (ASan sees overreads). */
static int decode_exact(const uint8_t *f, size_t len, uint16_t port, struct fc_outer *o)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, f, len);
	rc = fc_outer_decode(copy, len, port, o);
	free(copy);
	return rc;
}

static int psp_decode_exact(const uint8_t *b, size_t len, struct fc_psp_info *p,
			    size_t *ioff, size_t *ilen)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, b, len);
	rc = fc_psp_decode(copy, len, p, ioff, ilen);
	free(copy);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Checksum helper                                                           */
/* ------------------------------------------------------------------------ */

static void test_inet_csum(void **state)
{
	/* RFC 1071 section 3 example: 0001 f203 f4f5 f6f7 -> sum 2ddf0 -> ddf2 -> ~ 220d */
	static const uint8_t ex[8] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t odd[3] = { 0x12, 0x34, 0x56 };
	uint8_t many[4096];
	uint32_t s;

	(void)state;
	assert_int_equal(fc_inet_csum_fold(fc_inet_csum_add(0, ex, 8)), 0x220d);
	/* chained: even first part */
	s = fc_inet_csum_add(0, ex, 4);
	assert_int_equal(fc_inet_csum_fold(fc_inet_csum_add(s, ex + 4, 4)), 0x220d);
	/* odd tail padded with zero: 1234 + 5600 = 6834 -> ~ 97cb */
	assert_int_equal(fc_inet_csum_fold(fc_inet_csum_add(0, odd, 3)), 0x97cb);
	assert_int_equal(fc_inet_csum_fold(0), 0xFFFF);
	memset(many, 0xFF, sizeof(many));
	assert_int_equal(fc_inet_csum_fold(fc_inet_csum_add(0, many, sizeof(many))), 0);
	rnd_bytes(many, sizeof(many));
	assert_int_equal(fc_inet_csum_fold(fc_inet_csum_add(0, many, sizeof(many))),
			 ref_fold(ref_sum(0, many, sizeof(many))));
	/* a starting sum of 0xFFFFFFFF is one's complement -0: same result */
	assert_int_equal(fc_inet_csum_fold(fc_inet_csum_add(0xFFFFFFFFu, many, 1001)),
			 ref_fold(ref_sum(0, many, 1001)));
}

/* ------------------------------------------------------------------------ */
/* PSP header                                                                */
/* ------------------------------------------------------------------------ */

static const uint8_t psp_versions[6] = { 0x0, 0x1, 0x2, 0x3, 0xC, 0xF };

/* Every combination of S, D, version, V: byte 3 = S<<7 | D<<6 | ver<<2 | V<<1 | 1. */
static void test_psp_byte3_bits(void **state)
{
	unsigned int s, d, vi, v, ver;
	uint8_t b[64];

	(void)state;
	for (s = 0; s < 2; s++)
		for (d = 0; d < 2; d++)
			for (vi = 0; vi < 6; vi++)
				for (v = 0; v < 2; v++) {
					struct fc_psp_info in = { 0 }, out;
					size_t ioff = 0, ilen = 0;
					int n;

					ver = psp_versions[vi];
					in.next_hdr = 252;
					in.crypt_off = 1;
					in.s = s;
					in.d = d;
					in.version = (uint8_t)ver;
					in.has_vc = v;
					in.spi = 0x81234567u;
					in.iv = 0x0102030405060708ull;
					in.vc = v ? 0xF0E0D0C0B0A09080ull : 0;
					n = fc_psp_encode(&in, b, sizeof(b));
					assert_int_equal(n, v ? 24 : 16);
					assert_int_equal(b[0], 252);
					assert_int_equal(b[1], 1 + v);
					assert_int_equal(b[2], 1);
					assert_int_equal(b[3], s << 7 | d << 6 | ver << 2 | v << 1 | 1);
					assert_int_equal(b[4], 0x81);
					assert_int_equal(b[5], 0x23);
					assert_int_equal(b[6], 0x45);
					assert_int_equal(b[7], 0x67);
					assert_int_equal(b[8], 0x01);
					assert_int_equal(b[15], 0x08);
					if (v) {
						assert_int_equal(b[16], 0xF0);
						assert_int_equal(b[23], 0x80);
					}
					/* decode hand bytes: header, 4-byte Falcon packet, ICV */
					memset(b + n, 0x5A, sizeof(b) - (size_t)n);
					n = fc_psp_decode(b, (size_t)n + 4 + (ver == 0xF ? 0 : 16),
							  &out, &ioff, &ilen);
					assert_int_equal(n, v ? 24 : 16);
					assert_int_equal(out.s, s);
					assert_int_equal(out.d, d);
					assert_int_equal(out.version, ver);
					assert_int_equal(out.has_vc, v);
					assert_int_equal(out.spi, 0x81234567u);
					assert_true(out.iv == 0x0102030405060708ull);
					assert_true(out.vc == (v ? 0xF0E0D0C0B0A09080ull : 0));
					assert_int_equal(ioff, (size_t)n);
					assert_int_equal(ilen, 4);
					assert_int_equal(out.icv_len, ver == 0xF ? 0 : 16);
				}
}

/* Hand header with every flag set: 0xC7 = S 1, D 1, version 1, V 1, 1. */
static void test_psp_decode_hand(void **state)
{
	uint8_t b[24 + 8 + 16] = {
		0xfc, 0x02, 0xc1, 0xc7,                         /* reserved bits set: ignored */
		0xff, 0xff, 0xff, 0xfe,                         /* SPI */
		0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, /* IV */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* VC */
	};
	struct fc_psp_info p;
	size_t ioff, ilen;

	(void)state;
	assert_int_equal(fc_psp_decode(b, sizeof(b), &p, &ioff, &ilen), 24);
	assert_int_equal(p.next_hdr, 252);
	assert_int_equal(p.hdr_ext_len, 2);
	assert_int_equal(p.crypt_off, 1);
	assert_true(p.s && p.d && p.has_vc);
	assert_int_equal(p.version, 1);
	assert_int_equal(p.spi, 0xfffffffeu);
	assert_true(p.iv == 0xffeeddccbbaa9988ull);
	assert_true(p.vc == 0x1122334455667788ull);
	assert_int_equal(p.hdr_len, 24);
	assert_int_equal(p.icv_len, 16);
	assert_int_equal(ioff, 24);
	assert_int_equal(ilen, 8);
	/* inner/outer pointers are optional */
	assert_int_equal(fc_psp_decode(b, sizeof(b), &p, NULL, NULL), 24);
	/* t1 of IV 1e9 ns: 1e9 / 131.072 = 7629394.53 */
	p.iv = 1000000000;
	assert_int_equal(fc_psp_t1(&p), 7629394);
}

static void test_psp_roundtrip_random(void **state)
{
	static uint8_t b[FC_PSP_HDR_MAX + 600];
	int it;

	(void)state;
	rng_init();
	for (it = 0; it < 3000; it++) {
		struct fc_psp_info in = { 0 }, out, exp;
		size_t ioff, ilen, inner = rnd() % 300, icv, hdr;
		int n;

		in.next_hdr = 252;
		in.version = psp_versions[it % 6];
		in.has_vc = (it / 6) % 2;
		in.s = rnd() & 1;
		in.d = rnd() & 1;
		in.spi = (uint32_t)rnd();
		in.iv = rnd();
		in.vc = in.has_vc ? rnd() : 0;
		in.crypt_off = (uint8_t)(rnd() % (inner / 4 < 63 ? inner / 4 + 1 : 64));
		if (rnd() % 4 == 0)
			in.hdr_ext_len = (uint8_t)(1 + in.has_vc + rnd() % 255);
		if (in.hdr_ext_len < 1 + in.has_vc)
			in.hdr_ext_len = 0; /* the modulo above wrapped: use the default */
		exp = in;
		if (!exp.hdr_ext_len)
			exp.hdr_ext_len = (uint8_t)(1 + in.has_vc);
		hdr = 8 + 8 * (size_t)exp.hdr_ext_len;
		icv = in.version == 0xF ? 0 : 16;
		exp.hdr_len = hdr;
		exp.icv_len = icv;

		n = fc_psp_encode(&in, b, sizeof(b));
		CHECK_EQ(n, hdr);
		CHECK_EQ(b[1], exp.hdr_ext_len);
		CHECK_EQ(b[3], (unsigned)in.s << 7 | (unsigned)in.d << 6 | in.version << 2 |
				       (unsigned)in.has_vc << 1 | 1);
		rnd_bytes(b + hdr, inner + icv);
		n = psp_decode_exact(b, hdr + inner + icv, &out, &ioff, &ilen);
		CHECK_EQ(n, hdr);
		psp_eq(&out, &exp);
		CHECK_EQ(ioff, hdr);
		CHECK_EQ(ilen, inner);
	}
}

static void psp_hdr(uint8_t *b, uint8_t nh, uint8_t ext, uint8_t crypt, uint8_t b3)
{
	memset(b, 0, 16);
	b[0] = nh;
	b[1] = ext;
	b[2] = crypt;
	b[3] = b3;
}

static void test_psp_malformed(void **state)
{
	uint8_t b[64];
	struct fc_psp_info p;
	size_t ioff, ilen, len;
	unsigned int v;

	(void)state;
	/* shorter than 16 */
	psp_hdr(b, 252, 1, 0, 0x3d);
	for (len = 0; len < 16; len++)
		assert_int_equal(psp_decode_exact(b, len, &p, NULL, NULL), -FC_WIRE_ETRUNC);
	assert_int_equal(psp_decode_exact(b, 16, &p, &ioff, &ilen), 16);
	assert_int_equal(ilen, 0);
	/* next header 17 (UDP), 4 (IPv4), 41 (IPv6) */
	psp_hdr(b, 17, 1, 0, 0x3d);
	assert_int_equal(fc_psp_decode(b, 32, &p, NULL, NULL), -FC_WIRE_EPROTO);
	psp_hdr(b, 4, 1, 0, 0x3d);
	assert_int_equal(fc_psp_decode(b, 32, &p, NULL, NULL), -FC_WIRE_EPROTO);
	psp_hdr(b, 41, 1, 0, 0x3d);
	assert_int_equal(fc_psp_decode(b, 32, &p, NULL, NULL), -FC_WIRE_EPROTO);
	/* the always-1 bit clear */
	psp_hdr(b, 252, 1, 0, 0x3c);
	assert_int_equal(fc_psp_decode(b, 32, &p, NULL, NULL), -FC_WIRE_EFIELD);
	/* every version: valid ones decode, the others are EVERSION */
	for (v = 0; v < 16; v++) {
		int valid = v <= 3 || v == 0xC || v == 0xF;

		psp_hdr(b, 252, 1, 1, (uint8_t)(v << 2 | 1));
		assert_int_equal(fc_psp_decode(b, 16 + 8 + 16, &p, NULL, &ilen),
				 valid ? 16 : -FC_WIRE_EVERSION);
		if (valid)
			assert_int_equal(ilen, v == 0xF ? 24 : 8);
		assert_int_equal(fc_psp_version_valid(v), valid);
	}
	/* hdr_ext_len 0; 1 with V */
	psp_hdr(b, 252, 0, 0, 0x3d);
	assert_int_equal(fc_psp_decode(b, 32, &p, NULL, NULL), -FC_WIRE_EFIELD);
	psp_hdr(b, 252, 1, 0, 0x3f);
	assert_int_equal(fc_psp_decode(b, 32, &p, NULL, NULL), -FC_WIRE_EFIELD);
	/* hdr_ext_len beyond the buffer: 3 -> 32 bytes */
	psp_hdr(b, 252, 3, 0, 0x3d);
	assert_int_equal(psp_decode_exact(b, 31, &p, NULL, NULL), -FC_WIRE_ETRUNC);
	assert_int_equal(psp_decode_exact(b, 32, &p, &ioff, &ilen), 32);
	assert_int_equal(ioff, 32);
	assert_int_equal(ilen, 0);
	/* VC announced, header cut inside it */
	psp_hdr(b, 252, 2, 0, 0x3f);
	assert_int_equal(psp_decode_exact(b, 20, &p, NULL, NULL), -FC_WIRE_ETRUNC);
	/* truncated ICV (AES-GCM-128: 16 bytes of ICV) */
	psp_hdr(b, 252, 1, 0, 0x01);
	for (len = 16; len < 32; len++)
		assert_int_equal(psp_decode_exact(b, len, &p, NULL, NULL), -FC_WIRE_ETRUNC);
	assert_int_equal(psp_decode_exact(b, 32, &p, &ioff, &ilen), 16);
	assert_int_equal(ilen, 0);
	/* crypt offset past the Falcon packet: 8-byte packet, offsets 2 (ok) and 3 (not) */
	psp_hdr(b, 252, 1, 2, 0x01);
	assert_int_equal(fc_psp_decode(b, 16 + 8 + 16, &p, NULL, NULL), 16);
	psp_hdr(b, 252, 1, 3, 0x01);
	assert_int_equal(fc_psp_decode(b, 16 + 8 + 16, &p, NULL, NULL), -FC_WIRE_ELEN);
	/* crypt offset 1 with an empty packet (NULL version) */
	psp_hdr(b, 252, 1, 1, 0x3d);
	assert_int_equal(fc_psp_decode(b, 16, &p, NULL, NULL), -FC_WIRE_ELEN);
	/* reserved bits of byte 2 do not count as crypt offset */
	psp_hdr(b, 252, 1, 0xC0, 0x3d);
	assert_int_equal(fc_psp_decode(b, 16, &p, NULL, NULL), 16);
	assert_int_equal(p.crypt_off, 0);
}

static void test_psp_encode_errors(void **state)
{
	struct fc_psp_info in = { 0 }, bad;
	uint8_t b[64];
	size_t cap;

	(void)state;
	in.next_hdr = 252;
	in.crypt_off = 1;
	in.version = FC_PSP_VER_AES_GCM_256;
	in.has_vc = true;
	in.vc = 7;
	assert_int_equal(fc_psp_encode(&in, b, sizeof(b)), 24);

	bad = in;
	bad.next_hdr = 17;
	assert_int_equal(fc_psp_encode(&bad, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad = in;
	bad.crypt_off = 64;
	assert_int_equal(fc_psp_encode(&bad, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad.crypt_off = 63;
	assert_int_equal(fc_psp_encode(&bad, b, sizeof(b)), 24);
	bad = in;
	bad.version = 4;
	assert_int_equal(fc_psp_encode(&bad, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad.version = 16;
	assert_int_equal(fc_psp_encode(&bad, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad = in;
	bad.hdr_ext_len = 1; /* too small for the VC */
	assert_int_equal(fc_psp_encode(&bad, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad = in;
	bad.has_vc = false; /* a cookie without V */
	assert_int_equal(fc_psp_encode(&bad, b, sizeof(b)), -FC_WIRE_EINVAL);

	/* ENOSPC for every short cap; nothing written */
	for (cap = 0; cap < 24; cap++) {
		memset(b, 0xA5, sizeof(b));
		assert_int_equal(fc_psp_encode(&in, b, cap), -FC_WIRE_ENOSPC);
		for (size_t i = 0; i < sizeof(b); i++)
			assert_int_equal(b[i], 0xA5);
	}
	memset(b, 0xA5, sizeof(b));
	assert_int_equal(fc_psp_encode(&in, b, 24), 24);
	for (size_t i = 24; i < sizeof(b); i++)
		assert_int_equal(b[i], 0xA5);
	/* extended header: zero-filled after the VC */
	in.hdr_ext_len = 4;
	memset(b, 0xA5, sizeof(b));
	assert_int_equal(fc_psp_encode(&in, b, 39), -FC_WIRE_ENOSPC);
	assert_int_equal(fc_psp_encode(&in, b, 40), 40);
	for (size_t i = 24; i < 40; i++)
		assert_int_equal(b[i], 0);
	assert_int_equal(b[40], 0xA5);
}

/* ------------------------------------------------------------------------ */
/* Hand-built frames                                                         */
/* ------------------------------------------------------------------------ */

static void test_hand_v4(void **state)
{
	static const uint8_t ip_src[4] = { 10, 0, 0, 1 }, ip_dst[4] = { 10, 0, 0, 2 };
	static const uint8_t mac_dst[6] = { 2, 0, 0, 0, 0, 2 }, mac_src[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t zero[12];
	struct fc_outer o;
	uint8_t f[sizeof(frame_v4)];

	(void)state;
	/* the comment's checksums, recomputed independently */
	assert_int_equal(ref_fold(ref_sum(0, frame_v4 + V4_L3, 20)), 0);
	memcpy(f, frame_v4, sizeof(f));
	assert_int_equal(ref_udp(f, V4_L3, 0, 0), 0);

	assert_int_equal(decode_exact(frame_v4, sizeof(frame_v4), PORT, &o), 62);
	assert_memory_equal(o.dst, mac_dst, 6);
	assert_memory_equal(o.src, mac_src, 6);
	assert_int_equal(o.nvlan, 1);
	assert_int_equal(o.vlan_tpid[0], 0x8100);
	assert_int_equal(o.vlan_tci[0], 3 << 13 | 100);
	assert_int_equal(o.ip_ver, 4);
	assert_memory_equal(o.saddr, ip_src, 4);
	assert_memory_equal(o.daddr, ip_dst, 4);
	assert_memory_equal(o.saddr + 4, zero, 12);
	assert_memory_equal(o.daddr + 4, zero, 12);
	assert_int_equal(o.tos, 0);
	assert_int_equal(o.ttl, 64);
	assert_int_equal(o.ip_id, 0x1234);
	assert_true(o.df);
	assert_int_equal(o.flow_label, 0);
	assert_int_equal(o.sport, 49152);
	assert_int_equal(o.dport, 1000);
	assert_int_equal(o.l3_off, 18);
	assert_int_equal(o.l4_off, 38);
	assert_int_equal(o.psp_off, 46);
	assert_int_equal(o.psp.next_hdr, 252);
	assert_int_equal(o.psp.hdr_ext_len, 1);
	assert_int_equal(o.psp.crypt_off, 1);
	assert_false(o.psp.s);
	assert_false(o.psp.d);
	assert_int_equal(o.psp.version, FC_PSP_VER_NULL);
	assert_false(o.psp.has_vc);
	assert_int_equal(o.psp.spi, 0x80000001u);
	assert_true(o.psp.iv == 4886718345ull);
	assert_int_equal(fc_psp_t1(&o.psp), 37282702); /* 4886718345 / 131.072 = 37282702.2 */
	assert_int_equal(o.psp.hdr_len, 16);
	assert_int_equal(o.psp.icv_len, 0);
	assert_int_equal(o.inner_off, 62);
	assert_int_equal(o.inner_len, 8);

	/* the encoder reproduces the hand bytes, checksums included */
	memset(f, 0xEE, sizeof(f));
	assert_int_equal(fc_outer_encode(&o, 8, f, sizeof(f)), 62);
	assert_int_equal(f[44], 0); /* UDP checksum left 0 */
	assert_int_equal(f[45], 0);
	memcpy(f + 62, frame_v4 + 62, 8);
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(f)), 0);
	assert_memory_equal(f, frame_v4, sizeof(f));

	/* trailing Ethernet padding is ignored */
	memset(big, 0, 100);
	memcpy(big, frame_v4, sizeof(frame_v4));
	assert_int_equal(decode_exact(big, 100, PORT, &o), 62);
	assert_int_equal(o.inner_len, 8);
}

static void test_hand_v6(void **state)
{
	static const uint8_t a1[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t a2[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	struct fc_outer o;
	uint8_t f[sizeof(frame_v6)];

	(void)state;
	memcpy(f, frame_v6, sizeof(f));
	assert_int_equal(ref_udp(f, V6_L3, 1, 0), 0);

	assert_int_equal(decode_exact(frame_v6, sizeof(frame_v6), PORT, &o), 86);
	assert_int_equal(o.nvlan, 0);
	assert_int_equal(o.ip_ver, 6);
	assert_memory_equal(o.saddr, a1, 16);
	assert_memory_equal(o.daddr, a2, 16);
	assert_int_equal(o.tos, 0xB8);
	assert_int_equal(o.flow_label, 0x12345);
	assert_int_equal(o.ttl, 64);
	assert_int_equal(o.ip_id, 0);
	assert_false(o.df);
	assert_int_equal(o.sport, 49153);
	assert_int_equal(o.dport, 1000);
	assert_int_equal(o.l3_off, 14);
	assert_int_equal(o.l4_off, 54);
	assert_int_equal(o.psp_off, 62);
	assert_int_equal(o.psp.hdr_ext_len, 2);
	assert_int_equal(o.psp.crypt_off, 1);
	assert_true(o.psp.s);
	assert_false(o.psp.d);
	assert_int_equal(o.psp.version, FC_PSP_VER_AES_GCM_256);
	assert_true(o.psp.has_vc);
	assert_true(o.psp.vc == 0x0102030405060708ull);
	assert_int_equal(o.psp.spi, 7);
	assert_true(o.psp.iv == 1000000000ull);
	assert_int_equal(o.psp.hdr_len, 24);
	assert_int_equal(o.psp.icv_len, 16);
	assert_int_equal(o.inner_off, 86);
	assert_int_equal(o.inner_len, 8);

	memset(f, 0xEE, sizeof(f));
	assert_int_equal(fc_outer_encode(&o, 8, f, sizeof(f)), 86);
	memcpy(f + 86, frame_v6 + 86, 24);
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(f)), 0);
	assert_memory_equal(f, frame_v6, sizeof(f));
}

/* A frame laid out with the C library's structs, independent of ours. */
static size_t kernel_v4(uint8_t *f)
{
	struct ether_header eh;
	struct iphdr ip;
	struct udphdr uh;
	static const uint8_t psp[16 + 12 + 16] = {
		252, 1, 1, 0 << 7 | 1 << 6 | 0xC << 2 | 0 << 1 | 1, /* D, ChaCha20-Poly1305 */
		0x00, 0x00, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0x10, 0x00, /* SPI 0x1234, IV 4096 */
	};
	size_t ulen = sizeof(uh) + sizeof(psp);

	memset(&eh, 0, sizeof(eh));
	memset(eh.ether_dhost, 0xAB, 6);
	memset(eh.ether_shost, 0xCD, 6);
	eh.ether_type = htons(ETHERTYPE_IP);
	memset(&ip, 0, sizeof(ip));
	ip.version = 4;
	ip.ihl = 5;
	ip.tos = 0x2E;
	ip.tot_len = htons((uint16_t)(sizeof(ip) + ulen));
	ip.id = htons(777);
	ip.frag_off = 0;
	ip.ttl = 3;
	ip.protocol = IPPROTO_UDP;
	ip.saddr = htonl(0xC0A80001);
	ip.daddr = htonl(0xC0A80002);
	memset(&uh, 0, sizeof(uh));
	uh.source = htons(5000);
	uh.dest = htons(PORT);
	uh.len = htons((uint16_t)ulen);
	uh.check = 0;
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + 14, &ip, sizeof(ip));
	memcpy(f + 34, &uh, sizeof(uh));
	memcpy(f + 42, psp, sizeof(psp));
	fix_ip4(f, 14);
	ref_udp(f, 14, 0, 1);
	return 42 + sizeof(psp);
}

static size_t kernel_v6(uint8_t *f)
{
	struct ether_header eh;
	struct ip6_hdr ip;
	struct udphdr uh;
	static const uint8_t psp[24 + 4] = {
		252, 2, 0, 1 << 7 | 1 << 6 | 0xF << 2 | 1 << 1 | 1, /* NULL, VC */
		0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9,
	};
	size_t ulen = sizeof(uh) + sizeof(psp);

	memset(&eh, 0, sizeof(eh));
	eh.ether_type = htons(ETHERTYPE_IPV6);
	memset(&ip, 0, sizeof(ip));
	ip.ip6_flow = htonl(6u << 28 | 0x03u << 20 | 0xFFFFF);
	ip.ip6_plen = htons((uint16_t)ulen);
	ip.ip6_nxt = IPPROTO_UDP;
	ip.ip6_hlim = 255;
	inet_pton(AF_INET6, "fe80::1", &ip.ip6_src);
	inet_pton(AF_INET6, "ff02::1:2", &ip.ip6_dst);
	memset(&uh, 0, sizeof(uh));
	uh.source = htons(1);
	uh.dest = htons(PORT);
	uh.len = htons((uint16_t)ulen);
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + 14, &ip, sizeof(ip));
	memcpy(f + 54, &uh, sizeof(uh));
	memcpy(f + 62, psp, sizeof(psp));
	ref_udp(f, 14, 1, 1);
	return 62 + sizeof(psp);
}

static void test_kernel_structs(void **state)
{
	uint8_t f[200];
	struct fc_outer o;
	size_t len;

	(void)state;
	len = kernel_v4(f);
	assert_int_equal(decode_exact(f, len, PORT, &o), 58);
	assert_int_equal(o.ip_ver, 4);
	assert_int_equal(o.saddr[0], 0xC0);
	assert_int_equal(o.saddr[3], 0x01);
	assert_int_equal(o.daddr[3], 0x02);
	assert_int_equal(o.tos, 0x2E);
	assert_int_equal(o.ttl, 3);
	assert_int_equal(o.ip_id, 777);
	assert_false(o.df);
	assert_int_equal(o.sport, 5000);
	assert_true(o.psp.d);
	assert_false(o.psp.s);
	assert_int_equal(o.psp.version, FC_PSP_VER_CHACHA20_POLY1305);
	assert_int_equal(o.psp.spi, 0x1234);
	assert_true(o.psp.iv == 4096);
	assert_int_equal(o.inner_len, 12);

	len = kernel_v6(f);
	assert_int_equal(decode_exact(f, len, PORT, &o), 86);
	assert_int_equal(o.ip_ver, 6);
	assert_int_equal(o.tos, 0x03);
	assert_int_equal(o.flow_label, 0xFFFFF);
	assert_int_equal(o.ttl, 255);
	assert_int_equal(o.saddr[0], 0xfe);
	assert_int_equal(o.daddr[13], 0x01);
	assert_int_equal(o.daddr[15], 0x02);
	assert_true(o.psp.s && o.psp.d && o.psp.has_vc);
	assert_true(o.psp.vc == 9);
	assert_int_equal(o.psp.spi, 0xdeadbeef);
	assert_int_equal(o.psp.icv_len, 0);
	assert_int_equal(o.inner_len, 4);
}

/* ------------------------------------------------------------------------ */
/* Random round trips                                                        */
/* ------------------------------------------------------------------------ */

static void rand_outer(struct fc_outer *o, uint8_t ip_ver, uint8_t nvlan, unsigned int it,
		       size_t *inner_len)
{
	size_t max_inner, ext;
	unsigned int i;

	memset(o, 0, sizeof(*o));
	rnd_bytes(o->dst, 6);
	rnd_bytes(o->src, 6);
	o->nvlan = nvlan;
	for (i = 0; i < nvlan; i++) {
		o->vlan_tci[i] = (uint16_t)rnd();
		if (rnd() & 1)
			o->vlan_tpid[i] = (i == 0 && (rnd() & 1)) ? 0x88A8 : 0x8100;
	}
	o->ip_ver = ip_ver;
	rnd_bytes(o->saddr, ip_ver == 4 ? 4 : 16);
	rnd_bytes(o->daddr, ip_ver == 4 ? 4 : 16);
	o->tos = (uint8_t)rnd();
	o->ttl = (uint8_t)rnd();
	if (ip_ver == 6) {
		o->flow_label = (uint32_t)rnd() & 0xFFFFF;
	} else {
		o->ip_id = (uint16_t)rnd();
		o->df = rnd() & 1;
	}
	o->sport = (uint16_t)rnd();
	o->dport = (uint16_t)rnd();
	o->psp.next_hdr = 252;
	o->psp.version = psp_versions[it % 6];
	o->psp.has_vc = (it / 6) % 2;
	o->psp.vc = o->psp.has_vc ? rnd() : 0;
	o->psp.s = rnd() & 1;
	o->psp.d = rnd() & 1;
	o->psp.spi = (uint32_t)rnd();
	o->psp.iv = rnd();
	if (rnd() % 8 == 0)
		o->psp.hdr_ext_len = (uint8_t)(1 + o->psp.has_vc + rnd() % 4);
	ext = o->psp.hdr_ext_len ? o->psp.hdr_ext_len : 1u + o->psp.has_vc;
	max_inner = 65535 - (ip_ver == 4 ? 20 : 0) - 8 - (8 + 8 * ext) -
		    (o->psp.version == 0xF ? 0 : 16);
	switch (rnd() % 64) {
	case 0:
		*inner_len = max_inner - rnd() % 4;
		break;
	case 1:
		*inner_len = rnd() % 8;
		break;
	default:
		*inner_len = rnd() % 2000;
		break;
	}
	o->psp.crypt_off = (uint8_t)(rnd() % (*inner_len / 4 < 63 ? *inner_len / 4 + 1 : 64));
}

/* What decode must return for a frame encoded from o. */
static void expected(const struct fc_outer *o, size_t inner_len, struct fc_outer *e)
{
	unsigned int i;

	*e = *o;
	for (i = 0; i < o->nvlan; i++)
		if (!e->vlan_tpid[i])
			e->vlan_tpid[i] = (o->nvlan == 2 && i == 0) ? 0x88A8 : 0x8100;
	if (!e->psp.hdr_ext_len)
		e->psp.hdr_ext_len = (uint8_t)(1 + o->psp.has_vc);
	e->psp.hdr_len = 8 + 8 * (size_t)e->psp.hdr_ext_len;
	e->psp.icv_len = o->psp.version == 0xF ? 0 : 16;
	e->l3_off = 14 + 4 * (size_t)o->nvlan;
	e->l4_off = e->l3_off + (o->ip_ver == 4 ? 20 : 40);
	e->psp_off = e->l4_off + 8;
	e->inner_off = e->psp_off + e->psp.hdr_len;
	e->inner_len = inner_len;
}

/* Raw bytes of the encoded frame, read with explicit shifts. */
static void check_raw(const uint8_t *f, const struct fc_outer *e)
{
	size_t l3 = e->l3_off, l4 = e->l4_off, udp_len = e->inner_off - l4 + e->inner_len +
							      e->psp.icv_len;
	unsigned int i;

	for (i = 0; i < e->nvlan; i++) {
		CHECK_EQ(get16(f + 12 + 4 * i), e->vlan_tpid[i]);
		CHECK_EQ(get16(f + 14 + 4 * i), e->vlan_tci[i]);
	}
	CHECK_EQ(get16(f + l3 - 2), e->ip_ver == 4 ? 0x0800 : 0x86DD);
	if (e->ip_ver == 4) {
		CHECK_EQ(f[l3], 0x45);
		CHECK_EQ(get16(f + l3 + 2), 20 + udp_len);
		CHECK_EQ(get16(f + l3 + 6), e->df ? 0x4000 : 0);
		CHECK_EQ(f[l3 + 9], 17);
		CHECK_EQ(ref_fold(ref_sum(0, f + l3, 20)), 0);
	} else {
		CHECK_EQ((unsigned)f[l3] << 24 | (unsigned)f[l3 + 1] << 16 |
				 (unsigned)f[l3 + 2] << 8 | f[l3 + 3],
			 6u << 28 | (unsigned)e->tos << 20 | e->flow_label);
		CHECK_EQ(get16(f + l3 + 4), udp_len);
		CHECK_EQ(f[l3 + 6], 17);
	}
	CHECK_EQ(get16(f + l4 + 2), e->dport);
	CHECK_EQ(get16(f + l4 + 4), udp_len);
	CHECK_EQ(f[e->psp_off + 1], e->psp.hdr_ext_len);
	CHECK_EQ(f[e->psp_off + 3], (unsigned)e->psp.s << 7 | (unsigned)e->psp.d << 6 |
					    (unsigned)e->psp.version << 2 |
					    (unsigned)e->psp.has_vc << 1 | 1);
}

static void roundtrip(uint8_t ip_ver)
{
	uint8_t nvlan;
	unsigned int it;

	rng_init();
	for (nvlan = 0; nvlan <= 2; nvlan++) {
		for (it = 0; it < 2400; it++) {
			struct fc_outer o, e, d;
			size_t inner_len, total;
			int n;

			rand_outer(&o, ip_ver, nvlan, it, &inner_len);
			expected(&o, inner_len, &e);
			n = fc_outer_encode(&o, inner_len, big, sizeof(big));
			CHECK_EQ(n, e.inner_off);
			total = (size_t)n + inner_len + e.psp.icv_len;
			rnd_bytes(big + n, inner_len + e.psp.icv_len);
			CHECK_EQ(get16(big + e.l4_off + 6), 0);
			if (ip_ver == 6 || rnd() % 4)
				CHECK_EQ(fc_outer_set_udp_csum(big, total), 0);
			check_raw(big, &e);
			if (get16(big + e.l4_off + 6))
				CHECK_EQ(ref_udp(big, e.l3_off, ip_ver == 6, 0), 0);
			n = fc_outer_decode(big, total, o.dport, &d);
			CHECK_EQ(n, e.inner_off);
			outer_eq(&d, &e);
		}
	}
}

static void test_roundtrip_v4(void **state)
{
	(void)state;
	roundtrip(4);
}

static void test_roundtrip_v6(void **state)
{
	(void)state;
	roundtrip(6);
}

/* ------------------------------------------------------------------------ */
/* Malformed frames                                                          */
/* ------------------------------------------------------------------------ */

/* Cut a frame at every length: ETRUNC inside Ethernet, tags and the IP header, ELEN after. */
static void truncate_all(const uint8_t *f, size_t len, size_t l3, size_t ip_hlen)
{
	struct fc_outer o;
	size_t cut;

	for (cut = 0; cut < len; cut++) {
		int exp = cut < l3 + ip_hlen ? -FC_WIRE_ETRUNC : -FC_WIRE_ELEN;

		CHECK_EQ(decode_exact(f, cut, PORT, &o), exp);
	}
	assert_true(decode_exact(f, len, PORT, &o) > 0);
}

/* frame_v6 with a 802.1ad tag and a 802.1Q tag inserted after the MACs. */
static size_t v6_two_tags(uint8_t *f)
{
	static const uint8_t tags[8] = { 0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0xe0, 0x0b };

	memcpy(f, frame_v6, 12);
	memcpy(f + 12, tags, 8);
	memcpy(f + 20, frame_v6 + 12, sizeof(frame_v6) - 12);
	return sizeof(frame_v6) + 8;
}

static void test_truncation(void **state)
{
	uint8_t f[200];
	struct fc_outer o;
	size_t len;

	(void)state;
	truncate_all(frame_v4, sizeof(frame_v4), V4_L3, 20);
	truncate_all(frame_v6, sizeof(frame_v6), V6_L3, 40);
	len = v6_two_tags(f);
	truncate_all(f, len, V6_L3 + 8, 40);
	assert_int_equal(decode_exact(f, len, PORT, &o), 94);
	assert_int_equal(o.nvlan, 2);
	assert_int_equal(o.vlan_tpid[0], 0x88A8);
	assert_int_equal(o.vlan_tci[0], 10);
	assert_int_equal(o.vlan_tpid[1], 0x8100);
	assert_int_equal(o.vlan_tci[1], 0xe00b);
	/* IPv4 with options (IHL 15): ETRUNC up to the end of the 60-byte header */
	memcpy(f, frame_v4, V4_L3 + 20);
	memset(f + V4_L3 + 20, 1, 40); /* NOP options */
	memcpy(f + V4_L3 + 60, frame_v4 + V4_L3 + 20, sizeof(frame_v4) - V4_L3 - 20);
	f[V4_L3] = 0x4F;
	put16(f + V4_L3 + 2, 52 + 40);
	fix_ip4(f, V4_L3);
	truncate_all(f, sizeof(frame_v4) + 40, V4_L3, 60);
}

static void test_eproto(void **state)
{
	uint8_t f[200];
	struct fc_outer o;
	size_t len;

	(void)state;
	/* ARP */
	memcpy(f, frame_v4, sizeof(frame_v4));
	put16(f + 16, 0x0806);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_EPROTO);
	/* untagged ARP, too short for IP anyway */
	put16(f + 12, 0x0806);
	assert_int_equal(decode_exact(f, 14, PORT, &o), -FC_WIRE_EPROTO);
	/* three tags */
	len = v6_two_tags(f);
	memmove(f + 24, f + 20, len - 20);
	put16(f + 20, 0x8100);
	put16(f + 22, 5);
	assert_int_equal(decode_exact(f, len + 4, PORT, &o), -FC_WIRE_EPROTO);
	/* 802.1ad inside 802.1Q */
	len = v6_two_tags(f);
	put16(f + 12, 0x8100);
	put16(f + 16, 0x88A8);
	assert_int_equal(decode_exact(f, len, PORT, &o), -FC_WIRE_EPROTO);
	/* a single 802.1ad tag is fine */
	memcpy(f, frame_v4, sizeof(frame_v4));
	put16(f + 12, 0x88A8);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), 62);
	assert_int_equal(o.vlan_tpid[0], 0x88A8);
	/* IPv4 protocol TCP, checksum fixed */
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[V4_L3 + 9] = 6;
	fix_ip4(f, V4_L3);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_EPROTO);
	/* IPv6 next header TCP, hop-by-hop, fragment */
	memcpy(f, frame_v6, sizeof(frame_v6));
	f[V6_L3 + 6] = 6;
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_EPROTO);
	f[V6_L3 + 6] = 0;
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_EPROTO);
	f[V6_L3 + 6] = 44;
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_EPROTO);
	/* other UDP port */
	assert_int_equal(decode_exact(frame_v4, sizeof(frame_v4), PORT + 1, &o), -FC_WIRE_EPROTO);
	assert_int_equal(decode_exact(frame_v6, sizeof(frame_v6), 0xc001, &o), -FC_WIRE_EPROTO);
	/* PSP next header 17, UDP checksum fixed */
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[46] = 17;
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_EPROTO);
}

static void test_eversion(void **state)
{
	uint8_t f[200];
	struct fc_outer o;
	unsigned int v;

	(void)state;
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[V4_L3] = 0x65; /* version 6 in an IPv4 ethertype */
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_EVERSION);
	memcpy(f, frame_v6, sizeof(frame_v6));
	f[V6_L3] = 0x4b; /* version 4 in an IPv6 ethertype */
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_EVERSION);
	/* each PSP version in frame_v6 (8-byte packet + 16 bytes after it) */
	for (v = 0; v < 16; v++) {
		int valid = v <= 3 || v == 0xC || v == 0xF;

		memcpy(f, frame_v6, sizeof(frame_v6));
		f[65] = (uint8_t)((f[65] & 0xC3) | v << 2);
		ref_udp(f, V6_L3, 1, 1);
		assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o),
				 valid ? 86 : -FC_WIRE_EVERSION);
		if (valid)
			assert_int_equal(o.inner_len, v == 0xF ? 24 : 8);
	}
}

static void test_ipv4_fields(void **state)
{
	uint8_t f[200];
	struct fc_outer o, ref;
	unsigned int ihl;

	(void)state;
	assert_int_equal(decode_exact(frame_v4, sizeof(frame_v4), PORT, &ref), 62);
	/* options: IHL 6..15 accepted, skipped */
	for (ihl = 6; ihl <= 15; ihl++) {
		size_t opt = (ihl - 5) * 4, len = sizeof(frame_v4) + opt;

		memcpy(f, frame_v4, V4_L3 + 20);
		memset(f + V4_L3 + 20, 1, opt);
		f[V4_L3 + 20] = 0x94; /* router alert, 4 bytes */
		f[V4_L3 + 21] = 4;
		f[V4_L3 + 22] = 0;
		f[V4_L3 + 23] = 0;
		memcpy(f + V4_L3 + 20 + opt, frame_v4 + V4_L3 + 20, sizeof(frame_v4) - V4_L3 - 20);
		f[V4_L3] = (uint8_t)(0x40 | ihl);
		put16(f + V4_L3 + 2, 52 + opt);
		fix_ip4(f, V4_L3);
		assert_int_equal(decode_exact(f, len, PORT, &o), 62 + (int)opt);
		assert_int_equal(o.l4_off, V4_L3 + 4 * ihl);
		assert_int_equal(o.inner_len, 8);
		assert_memory_equal(f + o.inner_off, frame_v4 + 62, 8);
		assert_int_equal(o.ip_id, 0x1234);
		assert_int_equal(o.psp.spi, ref.psp.spi);
		assert_int_equal(fc_outer_set_udp_csum(f, len), 0);
		assert_int_equal(get16(f + o.l4_off + 6), 0x71eb);
	}
	/* IHL < 5 */
	for (ihl = 0; ihl < 5; ihl++) {
		memcpy(f, frame_v4, sizeof(frame_v4));
		f[V4_L3] = (uint8_t)(0x40 | ihl);
		assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_EFIELD);
	}
	/* fragments: MF, offsets, both; DF alone and the reserved bit are fine */
	{
		static const uint16_t frag_bad[] = { 0x2000, 0x0001, 0x1FFF, 0x2001, 0x6000, 0x4100 };
		static const uint16_t frag_ok[] = { 0x0000, 0x4000, 0x8000 };
		size_t i;

		for (i = 0; i < sizeof(frag_bad) / sizeof(frag_bad[0]); i++) {
			memcpy(f, frame_v4, sizeof(frame_v4));
			put16(f + V4_L3 + 6, frag_bad[i]);
			fix_ip4(f, V4_L3);
			assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_EFIELD);
		}
		for (i = 0; i < sizeof(frag_ok) / sizeof(frag_ok[0]); i++) {
			memcpy(f, frame_v4, sizeof(frame_v4));
			put16(f + V4_L3 + 6, frag_ok[i]);
			fix_ip4(f, V4_L3);
			assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), 62);
			assert_int_equal(o.df, (frag_ok[i] & 0x4000) != 0);
		}
	}
	/* bad header checksum: the stored value off by one, and a field changed under it */
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[V4_L3 + 11] ^= 1;
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ECSUM);
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[V4_L3 + 8] = 63;
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ECSUM);
	/* checksum covers the options */
	memcpy(f, frame_v4, V4_L3 + 20);
	memset(f + V4_L3 + 20, 1, 4);
	memcpy(f + V4_L3 + 24, frame_v4 + V4_L3 + 20, 32);
	f[V4_L3] = 0x46;
	put16(f + V4_L3 + 2, 56);
	fix_ip4(f, V4_L3);
	f[V4_L3 + 21] = 0;
	assert_int_equal(decode_exact(f, sizeof(frame_v4) + 4, PORT, &o), -FC_WIRE_ECSUM);
}

static void test_lengths(void **state)
{
	uint8_t f[200];
	struct fc_outer o;

	(void)state;
	/* IPv4 total length: 27 (< 20 + 8), 53 (> bytes present), 51 (!= UDP length) */
	memcpy(f, frame_v4, sizeof(frame_v4));
	put16(f + V4_L3 + 2, 27);
	fix_ip4(f, V4_L3);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ELEN);
	assert_int_equal(decode_exact(f, V4_L3 + 27, PORT, &o), -FC_WIRE_ELEN);
	put16(f + V4_L3 + 2, 53);
	fix_ip4(f, V4_L3);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ELEN);
	put16(f + V4_L3 + 2, 51);
	fix_ip4(f, V4_L3);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ELEN);
	/* ... and with total length 53 and one byte of padding, UDP length 32 != 33 */
	put16(f + V4_L3 + 2, 53);
	fix_ip4(f, V4_L3);
	f[70] = 0;
	assert_int_equal(decode_exact(f, 71, PORT, &o), -FC_WIRE_ELEN);
	/* UDP length 31 and 33 in an intact IP packet */
	memcpy(f, frame_v4, sizeof(frame_v4));
	put16(f + 42, 31);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ELEN);
	put16(f + 42, 33);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ELEN);
	/* UDP length 23 (< 8 + 16) matching the IP length */
	memcpy(f, frame_v4, sizeof(frame_v4));
	put16(f + V4_L3 + 2, 43);
	fix_ip4(f, V4_L3);
	put16(f + 42, 23);
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, 61, PORT, &o), -FC_WIRE_ELEN);
	/* UDP length 24: a bare PSP header with crypt offset 1 and no packet -> ELEN (PSP) */
	put16(f + V4_L3 + 2, 44);
	fix_ip4(f, V4_L3);
	put16(f + 42, 24);
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, 62, PORT, &o), -FC_WIRE_ELEN);
	f[48] = 0; /* crypt offset 0 */
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, 62, PORT, &o), 62);
	assert_int_equal(o.inner_len, 0);
	/* IPv6 payload length: 57 (> present), 7 (< 8), 55 (!= UDP length) */
	memcpy(f, frame_v6, sizeof(frame_v6));
	put16(f + V6_L3 + 4, 57);
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_ELEN);
	put16(f + V6_L3 + 4, 7);
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_ELEN);
	/* ... in a frame that ends there: no UDP header to read (ASan/valgrind watch) */
	assert_int_equal(decode_exact(f, V6_L3 + 40 + 7, PORT, &o), -FC_WIRE_ELEN);
	put16(f + V6_L3 + 4, 55);
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_ELEN);
	put16(f + V6_L3 + 4, 0); /* jumbogram marker, without its hop-by-hop header */
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_ELEN);
	/* IPv6 with padding after it */
	memcpy(f, frame_v6, sizeof(frame_v6));
	memset(f + sizeof(frame_v6), 0x77, 30);
	assert_int_equal(decode_exact(f, sizeof(frame_v6) + 30, PORT, &o), 86);
	assert_int_equal(o.inner_len, 8);
}

static void test_udp_csum(void **state)
{
	uint8_t f[200];
	struct fc_outer o;

	(void)state;
	/* wrong checksum value; a payload byte changed under it (v4 and v6) */
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[45] ^= 0x10;
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ECSUM);
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[69] ^= 1;
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ECSUM);
	memcpy(f, frame_v6, sizeof(frame_v6));
	f[61] ^= 0x80;
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_ECSUM);
	memcpy(f, frame_v6, sizeof(frame_v6));
	f[109] ^= 1; /* last ICV byte */
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_ECSUM);
	memcpy(f, frame_v6, sizeof(frame_v6));
	f[V6_L3 + 8] ^= 1; /* source address: pseudo-header */
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), -FC_WIRE_ECSUM);
	/* zero checksum accepted for both families */
	memcpy(f, frame_v4, sizeof(frame_v4));
	put16(f + 44, 0);
	f[69] ^= 1;
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), 62);
	memcpy(f, frame_v6, sizeof(frame_v6));
	put16(f + 60, 0);
	assert_int_equal(decode_exact(f, sizeof(frame_v6), PORT, &o), 86);
	/* 0xFFFF stands for a computed 0: find a payload that sums to it */
	{
		unsigned int x;
		int found = 0;

		for (x = 0; x < 0x10000 && !found; x++) {
			memcpy(f, frame_v4, sizeof(frame_v4));
			put16(f + 66, x);
			if (ref_udp(f, V4_L3, 0, 1) == 0) {
				found = 1;
				assert_int_equal(get16(f + 44), 0xFFFF);
				assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), 62);
				put16(f + 44, 0xAAAA);
				assert_int_equal(fc_outer_set_udp_csum(f, sizeof(frame_v4)), 0);
				assert_int_equal(get16(f + 44), 0xFFFF);
			}
		}
		assert_true(found);
	}
}

static void test_psp_in_frame(void **state)
{
	uint8_t f[200];
	struct fc_outer o;

	(void)state;
	/* always-1 bit clear */
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[49] &= 0xFE;
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_EFIELD);
	/* hdr_ext_len 0 */
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[47] = 0;
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_EFIELD);
	/* hdr_ext_len 3 (32 bytes) in a 24-byte UDP payload */
	f[47] = 3;
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ETRUNC);
	/* hdr_ext_len 2 without V: 8 skipped bytes, an empty packet, crypt offset 1 */
	f[47] = 2;
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ELEN);
	f[48] = 0;
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), 70);
	assert_int_equal(o.inner_len, 0);
	/* truncated ICV: version 0 needs 16 bytes after the 8-byte packet */
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[49] = 0x01;
	ref_udp(f, V4_L3, 0, 1);
	assert_int_equal(decode_exact(f, sizeof(frame_v4), PORT, &o), -FC_WIRE_ETRUNC);
	/* frame_v6 with the ICV cut by one byte (lengths and checksum kept consistent) */
	memcpy(f, frame_v6, sizeof(frame_v6));
	put16(f + 58, 55);
	put16(f + V6_L3 + 4, 55);
	ref_udp(f, V6_L3, 1, 1);
	assert_int_equal(decode_exact(f, sizeof(frame_v6) - 1, PORT, &o), 86);
	assert_int_equal(o.inner_len, 7);
	put16(f + 58, 8 + 24 + 15);
	put16(f + V6_L3 + 4, 8 + 24 + 15);
	ref_udp(f, V6_L3, 1, 1);
	assert_int_equal(decode_exact(f, V6_L3 + 40 + 47, PORT, &o), -FC_WIRE_ETRUNC);
}

/* ------------------------------------------------------------------------ */
/* Encoder errors                                                            */
/* ------------------------------------------------------------------------ */

static void base_outer(struct fc_outer *o, uint8_t ip_ver, uint8_t nvlan, bool vc)
{
	memset(o, 0, sizeof(*o));
	o->ip_ver = ip_ver;
	o->nvlan = nvlan;
	o->dport = PORT;
	o->psp.next_hdr = 252;
	o->psp.crypt_off = 1;
	o->psp.version = FC_PSP_VER_AES_GCM_128;
	o->psp.has_vc = vc;
	o->psp.vc = vc ? 1 : 0;
}

static void test_encode_enospc(void **state)
{
	static uint8_t b[FC_OUTER_HDR_MAX + 64];
	uint8_t ip_ver, nvlan;
	size_t cap, i;

	(void)state;
	for (ip_ver = 4; ip_ver <= 6; ip_ver += 2)
		for (nvlan = 0; nvlan <= 2; nvlan++)
			for (i = 0; i < 2; i++) {
				struct fc_outer o;
				size_t hdr = 14 + 4 * (size_t)nvlan + (ip_ver == 4 ? 20 : 40) + 8 +
					     16 + 8 * i;

				base_outer(&o, ip_ver, nvlan, i);
				assert_true(hdr <= FC_OUTER_HDR_MAX);
				for (cap = 0; cap < hdr; cap++) {
					memset(b, 0xA5, sizeof(b));
					assert_int_equal(fc_outer_encode(&o, 100, b, cap),
							 -FC_WIRE_ENOSPC);
					for (size_t k = 0; k < sizeof(b); k++)
						assert_int_equal(b[k], 0xA5);
				}
				memset(b, 0xA5, sizeof(b));
				assert_int_equal(fc_outer_encode(&o, 100, b, hdr), (int)hdr);
				for (size_t k = hdr; k < sizeof(b); k++)
					assert_int_equal(b[k], 0xA5);
			}
}

static void test_encode_einval(void **state)
{
	struct fc_outer o, bad;
	uint8_t b[FC_OUTER_HDR_MAX];

	(void)state;
	base_outer(&o, 4, 2, true);
	assert_true(fc_outer_encode(&o, 100, b, sizeof(b)) > 0);

	bad = o;
	bad.ip_ver = 5;
	assert_int_equal(fc_outer_encode(&bad, 100, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad.ip_ver = 0;
	assert_int_equal(fc_outer_encode(&bad, 100, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad = o;
	bad.nvlan = 3;
	assert_int_equal(fc_outer_encode(&bad, 100, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad = o;
	bad.vlan_tpid[1] = 0x88A8; /* S-tag inside */
	assert_int_equal(fc_outer_encode(&bad, 100, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad.vlan_tpid[1] = 0x0800;
	assert_int_equal(fc_outer_encode(&bad, 100, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad = o;
	bad.ip_ver = 6;
	bad.flow_label = 0x100000;
	assert_int_equal(fc_outer_encode(&bad, 100, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad.flow_label = 0xFFFFF;
	assert_true(fc_outer_encode(&bad, 100, b, sizeof(b)) > 0);
	bad = o;
	bad.psp.version = 5;
	assert_int_equal(fc_outer_encode(&bad, 100, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad = o;
	bad.psp.crypt_off = 64;
	assert_int_equal(fc_outer_encode(&bad, 1000, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad = o;
	bad.psp.next_hdr = 17;
	assert_int_equal(fc_outer_encode(&bad, 100, b, sizeof(b)), -FC_WIRE_EINVAL);
	bad = o;
	bad.psp.hdr_ext_len = 1;
	assert_int_equal(fc_outer_encode(&bad, 100, b, sizeof(b)), -FC_WIRE_EINVAL);
	/* crypt offset past the packet */
	bad = o;
	bad.psp.crypt_off = 2;
	assert_int_equal(fc_outer_encode(&bad, 7, b, sizeof(b)), -FC_WIRE_EINVAL);
	assert_true(fc_outer_encode(&bad, 8, b, sizeof(b)) > 0);
	/* EINVAL wins over ENOSPC */
	bad.ip_ver = 7;
	assert_int_equal(fc_outer_encode(&bad, 100, b, 0), -FC_WIRE_EINVAL);
	/* lengths: IPv4 total length 20 + 8 + 16 + inner <= 65535 (NULL: no ICV, no VC) */
	base_outer(&o, 4, 0, false);
	o.psp.version = FC_PSP_VER_NULL;
	assert_int_equal(fc_outer_encode(&o, 65491, b, sizeof(b)), 58);
	assert_int_equal(fc_outer_encode(&o, 65492, b, sizeof(b)), -FC_WIRE_EINVAL);
	assert_int_equal(fc_outer_encode(&o, SIZE_MAX, b, sizeof(b)), -FC_WIRE_EINVAL);
	assert_int_equal(fc_outer_encode(&o, SIZE_MAX - 20, b, sizeof(b)), -FC_WIRE_EINVAL);
	o.psp.version = FC_PSP_VER_AES_GCM_128; /* 16 bytes of ICV */
	assert_int_equal(fc_outer_encode(&o, 65475, b, sizeof(b)), 58);
	assert_int_equal(fc_outer_encode(&o, 65476, b, sizeof(b)), -FC_WIRE_EINVAL);
	/* IPv6 payload length 8 + 16 + inner <= 65535 */
	base_outer(&o, 6, 0, false);
	o.psp.version = FC_PSP_VER_NULL;
	assert_int_equal(fc_outer_encode(&o, 65511, b, sizeof(b)), 78);
	assert_int_equal(fc_outer_encode(&o, 65512, b, sizeof(b)), -FC_WIRE_EINVAL);
	/* the largest frames decode */
	{
		size_t n;

		base_outer(&o, 4, 0, false);
		o.psp.version = FC_PSP_VER_NULL;
		n = (size_t)fc_outer_encode(&o, 65491, big, sizeof(big));
		memset(big + n, 0x33, 65491);
		assert_int_equal(fc_outer_set_udp_csum(big, n + 65491), 0);
		assert_int_equal(fc_outer_decode(big, n + 65491, PORT, &bad), 58);
		assert_int_equal(bad.inner_len, 65491);
		assert_int_equal(get16(big + 14 + 2), 65535);
		base_outer(&o, 6, 2, true);
		n = (size_t)fc_outer_encode(&o, 65511 - 8 - 16, big2, sizeof(big2));
		memset(big2 + n, 0x44, 65511 - 8);
		assert_int_equal(fc_outer_set_udp_csum(big2, n + 65511 - 8), 0);
		assert_int_equal(fc_outer_decode(big2, n + 65511 - 8, PORT, &bad), (int)n);
		assert_int_equal(get16(big2 + 22 + 4), 65535);
	}
}

static void test_set_udp_csum_errors(void **state)
{
	uint8_t f[200];
	size_t cut;

	(void)state;
	for (cut = 0; cut < 46; cut++) {
		memcpy(f, frame_v4, sizeof(frame_v4));
		assert_int_equal(fc_outer_set_udp_csum(f, cut), -FC_WIRE_ETRUNC);
	}
	/* UDP length past the frame */
	memcpy(f, frame_v4, sizeof(frame_v4));
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(frame_v4) - 1), -FC_WIRE_ELEN);
	put16(f + 42, 7);
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(frame_v4)), -FC_WIRE_ELEN);
	memcpy(f, frame_v4, sizeof(frame_v4));
	f[V4_L3 + 9] = 6;
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(frame_v4)), -FC_WIRE_EPROTO);
	f[V4_L3 + 9] = 17;
	f[V4_L3] = 0x44;
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(frame_v4)), -FC_WIRE_EFIELD);
	f[V4_L3] = 0x55;
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(frame_v4)), -FC_WIRE_EVERSION);
	put16(f + 16, 0x0806);
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(frame_v4)), -FC_WIRE_EPROTO);
	memcpy(f, frame_v6, sizeof(frame_v6));
	f[V6_L3 + 6] = 0;
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(frame_v6)), -FC_WIRE_EPROTO);
	/* the unchanged frames get their own checksum back */
	memcpy(f, frame_v6, sizeof(frame_v6));
	put16(f + 60, 0x1111);
	assert_int_equal(fc_outer_set_udp_csum(f, sizeof(frame_v6)), 0);
	assert_memory_equal(f, frame_v6, sizeof(frame_v6));
}

/* PLB reroutes (10.4): each path number gives a source port in the ephemeral range and
 * a non-zero 20-bit flow label; the same (seed, path) always gives the same; the next
 * path always differs in both; different connections spread over the port range. */
static void test_path_entropy(void **state)
{
	struct fc_outer a, b;
	unsigned hist[4] = {0};

	(void)state;
	for (uint32_t seed = 1; seed < 200; seed++) {
		for (uint32_t path = 0; path < 64; path++) {
			memset(&a, 0, sizeof(a));
			memset(&b, 0, sizeof(b));
			fc_outer_set_path(&a, seed, path);
			fc_outer_set_path(&b, seed, path + 1);
			assert_true(a.sport >= 49152);
			assert_true(a.flow_label >= 1 && a.flow_label <= 0xFFFFF);
			assert_int_not_equal(a.sport, b.sport);
			assert_int_not_equal(a.flow_label, b.flow_label);
			fc_outer_set_path(&b, seed, path);
			assert_int_equal(a.sport, b.sport);
			assert_int_equal(a.flow_label, b.flow_label);
			hist[(a.sport - 49152) / 4096]++;
		}
	}
	for (int i = 0; i < 4; i++) /* 12,736 draws over 4 quarters: each near 3184 */
		assert_true(hist[i] > 2800 && hist[i] < 3600);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inet_csum),
		cmocka_unit_test(test_psp_byte3_bits),
		cmocka_unit_test(test_psp_decode_hand),
		cmocka_unit_test(test_psp_roundtrip_random),
		cmocka_unit_test(test_psp_malformed),
		cmocka_unit_test(test_psp_encode_errors),
		cmocka_unit_test(test_hand_v4),
		cmocka_unit_test(test_hand_v6),
		cmocka_unit_test(test_kernel_structs),
		cmocka_unit_test(test_roundtrip_v4),
		cmocka_unit_test(test_roundtrip_v6),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_eproto),
		cmocka_unit_test(test_eversion),
		cmocka_unit_test(test_ipv4_fields),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_udp_csum),
		cmocka_unit_test(test_psp_in_frame),
		cmocka_unit_test(test_encode_enospc),
		cmocka_unit_test(test_encode_einval),
		cmocka_unit_test(test_set_udp_csum_errors),
		cmocka_unit_test(test_path_entropy),
	};

	rng_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
