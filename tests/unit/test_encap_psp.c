/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PSP encapsulation (daemon/encap_psp.h): round trips under both ciphers, no
 * plaintext on the wire past the clear CID word, every bit flip and truncation refused
 * and counted, SPIs never issued or of an erased phase refused, rotation accepting both
 * phases until the old one is erased, the IV strictly increasing under a frozen or
 * backward clock, nonces unique, random frames refused, the replay rule of 9.2.2.2
 * across the 2^64 wrap. Random tests use xorshift64 seeded with FALCON_TEST_SEED
 * (default below) and print the seed on failure.
 *
 * AES-256-GCM runs through OpenSSL's libcrypto; libsodium's crypto_aead_aes256gcm (what
 * sealed PSP version 1 before) computes known answers here, byte for byte, both ways.
 *
 * Tests that take a cipher run once per cipher (cmocka prestate); AES-256-GCM ones are
 * skipped on a CPU without AES-NI (fc_psp_cipher_available).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "encap_psp.h"
#include "testutil.h"
#include "wire_outer.h"

#define DEFAULT_SEED 0x9A5F00D5ULL
#define PEERS 8u
#define A_IDX_AT_B 3u /* A's peer index in B's table */
#define B_IDX_AT_A 1u /* B's peer index in A's table */
#define FRAME_CAP (FC_PSP_HDR_LEN + 4096u + FC_PSP_ICV_LEN)

static unsigned int VER_AES = FC_PSP_VER_AES_GCM_256;
static unsigned int VER_CHACHA = FC_PSP_VER_CHACHA20_POLY1305;

static uint64_t clk; /* the senders' clock: frozen unless a test moves it */

static uint64_t now_fn(void *ctx)
{
	(void)ctx;
	return clk;
}

static const uint8_t MASTER_B[FC_PSP_KEY_LEN] = { 0xB0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static const uint8_t MASTER_C[FC_PSP_KEY_LEN] = { 0xC0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };

/* A sends to B: B issues an SPI for A and A installs it as its SA towards B. */
struct pair {
	unsigned int ver;
	struct fc_encap_psp *a, *b;
	uint32_t spi;
	uint8_t key[FC_PSP_KEY_LEN];
};

static unsigned int ver_of(void **state)
{
	unsigned int v = *(unsigned int *)*state;

	if (!fc_psp_cipher_available(v)) {
		print_message("PSP version %u not available on this CPU: skipped\n", v);
		skip();
	}
	return v;
}

static struct fc_encap_psp *mk(unsigned int ver, const uint8_t *master, uint32_t slots)
{
	struct fc_encap_psp_cfg cfg = {
		.version = (uint8_t)ver, .max_peers = PEERS, .key_cache_slots = slots,
		.now_ns = now_fn, .master_key = master,
	};
	struct fc_encap_psp *e = fc_encap_psp_new(&cfg);

	assert_non_null(e);
	assert_int_equal(fc_encap_psp_version(e), ver);
	return e;
}

static void pair_init(struct pair *p, unsigned int ver)
{
	memset(p, 0, sizeof(*p));
	p->ver = ver;
	p->a = mk(ver, NULL, 0);
	p->b = mk(ver, MASTER_B, 0);
	assert_int_equal(fc_encap_psp_rx_issue(p->b, A_IDX_AT_B, &p->spi, p->key), 0);
	assert_int_equal(fc_encap_psp_tx_set(p->a, B_IDX_AT_A, p->spi, p->key), 0);
	clk = 1000000;
}

static void pair_fini(struct pair *p)
{
	fc_encap_psp_free(p->a);
	fc_encap_psp_free(p->b);
}

static void fill_pat(uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = fc_test_pat(1, seed, 7, i);
}

/* Seal len bytes of pattern seed into buf for peer; returns the frame length. */
static uint32_t seal(struct fc_encap_psp *e, uint32_t peer, uint8_t *buf, uint32_t len,
		     uint32_t seed)
{
	struct fc_frame f = { .buf = buf, .cap = FRAME_CAP, .peer_idx = peer };

	fill_pat(buf + FC_PSP_HDR_LEN, len, seed);
	assert_int_equal(fc_encap_psp_ops.seal(e, &f, len), 0);
	assert_ptr_equal(f.buf, buf);
	assert_int_equal(f.len, FC_PSP_HDR_LEN + len + FC_PSP_ICV_LEN);
	return f.len;
}

static int open_copy(struct fc_encap_psp *e, const uint8_t *frame, uint32_t len)
{
	uint8_t *b = malloc(len ? len : 1); /* exact size: an overread shows under valgrind */
	struct fc_frame f = { .buf = b, .len = len };
	int rc;

	assert_non_null(b);
	memcpy(b, frame, len);
	rc = fc_encap_psp_ops.open(e, &f);
	free(b);
	return rc;
}

static uint64_t rx_refused(const struct fc_encap_psp *e)
{
	const struct fc_encap_psp_counters *c = fc_encap_psp_counters(e);

	return c->rx_too_short + c->rx_bad_hdr + c->rx_unknown_spi + c->rx_old_phase +
	       c->rx_auth_fail;
}

static uint64_t hdr_iv(const uint8_t *frame)
{
	struct fc_psp_info h;

	assert_int_equal(fc_psp_decode(frame, FC_PSP_HDR_LEN + 4 + FC_PSP_ICV_LEN, &h, NULL,
				       NULL), FC_PSP_HDR_LEN);
	return h.iv;
}

/* ------------------------------------------------------------------------ */

static void test_new_refuses_bad_cfg(void **state)
{
	struct fc_encap_psp_cfg ok = {
		.version = FC_PSP_VER_CHACHA20_POLY1305, .max_peers = 4, .now_ns = now_fn,
	};
	struct fc_encap_psp_cfg c;
	struct fc_encap_psp *e;

	(void)state;
	assert_true(fc_psp_cipher_available(FC_PSP_VER_CHACHA20_POLY1305));
	assert_false(fc_psp_cipher_available(FC_PSP_VER_NULL));
	assert_false(fc_psp_cipher_available(FC_PSP_VER_AES_GCM_128));
	assert_true(fc_psp_cipher_best() == FC_PSP_VER_AES_GCM_256 ||
		    fc_psp_cipher_best() == FC_PSP_VER_CHACHA20_POLY1305);
	assert_int_equal(fc_psp_cipher_available(FC_PSP_VER_AES_GCM_256),
			 fc_psp_cipher_best() == FC_PSP_VER_AES_GCM_256);
	const uint8_t bad_ver[] = { FC_PSP_VER_NULL, FC_PSP_VER_AES_GCM_128,
				    FC_PSP_VER_AES_GMAC_256, 7 };
	for (size_t i = 0; i < sizeof(bad_ver); i++) {
		c = ok;
		c.version = bad_ver[i];
		errno = 0;
		assert_null(fc_encap_psp_new(&c));
		assert_int_equal(errno, EINVAL);
	}
	c = ok, c.max_peers = 0;
	assert_null(fc_encap_psp_new(&c));
	c = ok, c.max_peers = FC_PSP_PEERS_MAX + 1;
	assert_null(fc_encap_psp_new(&c));
	c = ok, c.key_cache_slots = 3;
	assert_null(fc_encap_psp_new(&c));
	c = ok, c.key_cache_slots = FC_PSP_KEY_CACHE_MAX * 2;
	assert_null(fc_encap_psp_new(&c));
	c = ok, c.now_ns = NULL;
	errno = 0;
	assert_null(fc_encap_psp_new(&c));
	assert_int_equal(errno, EINVAL);
	e = fc_encap_psp_new(&ok);
	assert_non_null(e);
	assert_int_equal(fc_encap_psp_rx_gen(e), 0);
	fc_encap_psp_free(e);
	fc_encap_psp_free(NULL);
}

/* Round trip at several sizes; the header is the one docs/wire.md section 2 describes;
 * the CID word stays clear; open gives the IV and SPI in the metadata. */
static void test_roundtrip(void **state)
{
	static const uint32_t sizes[] = { 4, 5, 15, 16, 17, 64, 1024, 1500, 4095, 4096 };
	unsigned int ver = ver_of(state);
	uint8_t buf[FRAME_CAP], want[4096];
	struct pair p;

	pair_init(&p, ver);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = sizes[i], flen;
		struct fc_frame f;
		struct fc_psp_info h;
		size_t off, inner;

		clk += 1000;
		flen = seal(p.a, B_IDX_AT_A, buf, len, (uint32_t)i);
		fill_pat(want, len, (uint32_t)i);
		assert_int_equal(fc_psp_decode(buf, flen, &h, &off, &inner), FC_PSP_HDR_LEN);
		assert_int_equal(h.next_hdr, FC_PSP_NEXT_HDR_FALCON);
		assert_int_equal(h.hdr_ext_len, 1);
		assert_int_equal(h.crypt_off, FC_PSP_CRYPT_OFF_FALCON);
		assert_int_equal(h.version, ver);
		assert_false(h.s || h.d || h.has_vc);
		assert_int_equal(h.spi, p.spi);
		assert_int_equal(h.iv, clk);
		assert_int_equal(inner, len);
		/* spec 7.1: word 0 (version, CID) in the clear, the rest not */
		assert_memory_equal(buf + FC_PSP_HDR_LEN, want, 4);
		if (len >= 12)
			assert_memory_not_equal(buf + FC_PSP_HDR_LEN + 4, want + 4, len - 4);

		f = (struct fc_frame){ .buf = buf, .len = flen };
		assert_int_equal(fc_encap_psp_ops.open(p.b, &f), 0);
		assert_ptr_equal(f.buf, buf + FC_PSP_HDR_LEN);
		assert_int_equal(f.len, len);
		assert_memory_equal(f.buf, want, len);
		assert_int_equal(f.meta.tx_ns, clk);
		assert_int_equal(f.meta.spi, p.spi);
	}
	assert_int_equal(fc_encap_psp_counters(p.a)->tx_sealed, 10);
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_opened, 10);
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_key_derived, 1); /* then cached */
	assert_int_equal(rx_refused(p.b), 0);
	pair_fini(&p);
}

/* A 4 KiB payload of a repeating 16-byte pattern: no 8 bytes of it on the wire after the
 * clear word, under either cipher; and the two ciphers give different bytes. */
static void test_ciphertext_hides_pattern(void **state)
{
	static const char pat[] = "FALCONPSP-KNOWN!"; /* 16 bytes */
	unsigned int ver = ver_of(state);
	uint8_t buf[FRAME_CAP];
	struct fc_frame f = { .buf = buf, .cap = FRAME_CAP, .peer_idx = B_IDX_AT_A };
	struct pair p;

	pair_init(&p, ver);
	for (uint32_t i = 0; i < 4096; i++)
		buf[FC_PSP_HDR_LEN + i] = (uint8_t)pat[i % 16];
	assert_int_equal(fc_encap_psp_ops.seal(p.a, &f, 4096), 0);
	for (uint32_t k = 0; k < 16; k++) { /* every 8-byte window of the pattern */
		char w[8];

		for (uint32_t j = 0; j < 8; j++)
			w[j] = pat[(k + j) % 16];
		assert_null(memmem(buf + FC_PSP_HDR_LEN + 4, 4096 - 4 + FC_PSP_ICV_LEN, w, 8));
	}
	f = (struct fc_frame){ .buf = buf, .len = f.len };
	assert_int_equal(fc_encap_psp_ops.open(p.b, &f), 0);
	for (uint32_t i = 0; i < 4096; i++)
		assert_int_equal(f.buf[i], (uint8_t)pat[i % 16]);
	pair_fini(&p);
}

/* Every single-bit flip anywhere in the frame (header = AAD, clear CID word = AAD,
 * ciphertext, ICV) is refused and counted once; the unflipped frame opens. */
static void test_every_bit_flip_refused(void **state)
{
	static const uint32_t sizes[] = { 4, 64 };
	unsigned int ver = ver_of(state);
	uint8_t buf[FRAME_CAP];
	struct pair p;

	pair_init(&p, ver);
	for (size_t s = 0; s < 2; s++) {
		uint32_t flen = seal(p.a, B_IDX_AT_A, buf, sizes[s], 3);
		const struct fc_encap_psp_counters *c = fc_encap_psp_counters(p.b);
		uint64_t auth0 = c->rx_auth_fail;

		for (uint32_t bit = 0; bit < flen * 8; bit++) {
			uint64_t before = rx_refused(p.b);

			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			assert_int_not_equal(open_copy(p.b, buf, flen), 0);
			assert_int_equal(rx_refused(p.b), before + 1);
			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		assert_int_equal(c->rx_opened, s);
		/* everything past the SPI reaches the cipher: IV (nonce), S/D, the CID word,
		 * ciphertext and ICV all fail authentication */
		assert_true(c->rx_auth_fail - auth0 >= (flen - 8) * 8);
		assert_int_equal(open_copy(p.b, buf, flen), 0);
	}
	pair_fini(&p);
}

/* Header checks before any key is looked up (9.2.2.1). */
static void test_bad_headers(void **state)
{
	unsigned int ver = ver_of(state);
	unsigned int other = ver == FC_PSP_VER_AES_GCM_256 ? FC_PSP_VER_CHACHA20_POLY1305
							   : FC_PSP_VER_AES_GCM_256;
	uint8_t buf[FRAME_CAP], mod[FRAME_CAP];
	struct pair p;
	uint32_t flen;

	pair_init(&p, ver);
	flen = seal(p.a, B_IDX_AT_A, buf, 64, 1);
	const struct { uint32_t byte; uint8_t val; } cases[] = {
		{ 0, 17 },                                                   /* next header */
		{ 1, 2 },                                                    /* hdr ext len */
		{ 2, 2 },                                                    /* crypt offset */
		{ 2, 0 },
		{ 3, (uint8_t)(buf[3] & ~FC_PSP_ONE_BIT) },                  /* always-1 bit */
		{ 3, (uint8_t)((buf[3] & ~(0xF << 2)) | (other << 2)) },     /* other cipher */
		{ 3, (uint8_t)((buf[3] & ~(0xF << 2)) | (FC_PSP_VER_NULL << 2)) },
		{ 3, (uint8_t)(buf[3] | 1u << FC_PSP_V_SHIFT) },             /* V = 1 */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(mod, buf, flen);
		mod[cases[i].byte] = cases[i].val;
		assert_int_equal(open_copy(p.b, mod, flen), -EPROTO);
		assert_int_equal(fc_encap_psp_counters(p.b)->rx_bad_hdr, i + 1);
	}
	assert_int_equal(rx_refused(p.b), sizeof(cases) / sizeof(cases[0]));
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_key_derived, 0);
	pair_fini(&p);
}

/* Every truncation is refused: below FC_PSP_FRAME_MIN as too short, above it by the ICV. */
static void test_truncated(void **state)
{
	unsigned int ver = ver_of(state);
	uint8_t buf[FRAME_CAP];
	struct pair p;
	uint32_t flen;

	pair_init(&p, ver);
	flen = seal(p.a, B_IDX_AT_A, buf, 100, 9);
	for (uint32_t l = 0; l < flen; l++) {
		int rc = open_copy(p.b, buf, l);

		if (l < FC_PSP_FRAME_MIN)
			assert_int_equal(rc, -EPROTO);
		else
			assert_int_equal(rc, -EBADMSG);
	}
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_too_short, FC_PSP_FRAME_MIN);
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_auth_fail, flen - FC_PSP_FRAME_MIN);
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_opened, 0);
	assert_int_equal(open_copy(p.b, buf, flen), 0);
	pair_fini(&p);
}

/* SPIs the receiver never issued, SPIs of another receiver, a wrong key. */
static void test_wrong_spi(void **state)
{
	unsigned int ver = ver_of(state);
	uint8_t buf[FRAME_CAP];
	struct fc_encap_psp *c = mk(ver, MASTER_C, 0);
	uint32_t spi_c, spi_b2, flen;
	uint8_t key_c[FC_PSP_KEY_LEN], key_b2[FC_PSP_KEY_LEN];
	const uint32_t never[] = {
		0,                                 /* 9.2.2.3: SPI 0 is no SA */
		1,                                 /* peer 0: not issued */
		PEERS + 1,                         /* peer index past the table */
		0xFFFFu,
		A_IDX_AT_B + 1 + (1u << 16),       /* right peer, a generation never had */
		(A_IDX_AT_B + 1) | FC_PSP_SPI_PHASE, /* right peer, phase 1 before any rotation */
		0xDEADBEEFu,
	};
	struct pair p;

	pair_init(&p, ver);
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		if (never[i] == 0) { /* an SA cannot carry SPI 0 */
			assert_int_equal(fc_encap_psp_tx_set(p.a, B_IDX_AT_A, 0, p.key), -EINVAL);
			continue;
		}
		assert_int_equal(fc_encap_psp_tx_set(p.a, B_IDX_AT_A, never[i], p.key), 0);
		flen = seal(p.a, B_IDX_AT_A, buf, 64, 1);
		assert_int_equal(open_copy(p.b, buf, flen), -ENOKEY);
	}
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_unknown_spi,
			 sizeof(never) / sizeof(never[0]) - 1);

	/* the same SPI value from another receiver (same peer index, same generation):
	 * other master, other key: the ICV fails */
	assert_int_equal(fc_encap_psp_rx_issue(c, A_IDX_AT_B, &spi_c, key_c), 0);
	assert_int_equal(spi_c, p.spi);
	assert_memory_not_equal(key_c, p.key, FC_PSP_KEY_LEN);
	assert_int_equal(fc_encap_psp_tx_set(p.a, B_IDX_AT_A, spi_c, key_c), 0);
	flen = seal(p.a, B_IDX_AT_A, buf, 64, 1);
	assert_int_equal(open_copy(p.b, buf, flen), -EBADMSG);
	assert_int_equal(open_copy(c, buf, flen), 0);

	/* an SPI B issued to another peer, with A's key: refused (wrong key for it) */
	assert_int_equal(fc_encap_psp_rx_issue(p.b, 5, &spi_b2, key_b2), 0);
	assert_int_not_equal(spi_b2, p.spi);
	assert_memory_not_equal(key_b2, p.key, FC_PSP_KEY_LEN);
	assert_int_equal(fc_encap_psp_tx_set(p.a, B_IDX_AT_A, spi_b2, p.key), 0);
	flen = seal(p.a, B_IDX_AT_A, buf, 64, 1);
	assert_int_equal(open_copy(p.b, buf, flen), -EBADMSG);
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_auth_fail, 2);
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_opened, 0);

	/* issue is idempotent within a generation; the peer range is checked */
	uint32_t again;
	uint8_t key_again[FC_PSP_KEY_LEN];
	assert_int_equal(fc_encap_psp_rx_issue(p.b, A_IDX_AT_B, &again, key_again), 0);
	assert_int_equal(again, p.spi);
	assert_memory_equal(key_again, p.key, FC_PSP_KEY_LEN);
	assert_int_equal(fc_encap_psp_rx_issue(p.b, PEERS, &again, NULL), -EINVAL);
	fc_encap_psp_free(c);
	pair_fini(&p);
}

/* Spec 9.2.2.3 rotation: both phases accepted after rotate, the old one refused once
 * erased (even from the key cache), SPIs change with the generation, bit 31 = phase. */
static void test_rotation(void **state)
{
	unsigned int ver = ver_of(state);
	uint8_t old_f[FRAME_CAP], f1[FRAME_CAP], buf[FRAME_CAP];
	uint32_t old_len, f1_len, flen, spi1, spi2;
	uint8_t key1[FC_PSP_KEY_LEN], key2[FC_PSP_KEY_LEN];
	const struct fc_encap_psp_counters *c;
	struct pair p;

	pair_init(&p, ver);
	c = fc_encap_psp_counters(p.b);
	assert_int_equal(p.spi & FC_PSP_SPI_PHASE, 0);
	old_len = seal(p.a, B_IDX_AT_A, old_f, 200, 1);
	assert_int_equal(open_copy(p.b, old_f, old_len), 0); /* phase 0 key now cached */

	assert_int_equal(fc_encap_psp_rx_rotate(p.b, NULL), 1);
	assert_int_equal(fc_encap_psp_rx_gen(p.b), 1);
	/* in flight and still sent under the old SA: accepted */
	assert_int_equal(open_copy(p.b, old_f, old_len), 0);
	clk++;
	flen = seal(p.a, B_IDX_AT_A, buf, 200, 2);
	assert_int_equal(open_copy(p.b, buf, flen), 0);
	/* the CM issues the new SPI and the sender switches */
	assert_int_equal(fc_encap_psp_rx_issue(p.b, A_IDX_AT_B, &spi1, key1), 0);
	assert_int_equal(spi1 & FC_PSP_SPI_PHASE, FC_PSP_SPI_PHASE);
	assert_int_not_equal(spi1, p.spi);
	assert_memory_not_equal(key1, p.key, FC_PSP_KEY_LEN);
	assert_int_equal(fc_encap_psp_tx_set(p.a, B_IDX_AT_A, spi1, key1), 0);
	f1_len = seal(p.a, B_IDX_AT_A, f1, 200, 3);
	assert_int_equal(open_copy(p.b, f1, f1_len), 0);
	assert_int_equal(open_copy(p.b, old_f, old_len), 0);
	assert_int_equal(rx_refused(p.b), 0);

	/* step 5: the old phase is erased and refused from then on */
	fc_encap_psp_rx_erase_prev(p.b);
	assert_int_equal(open_copy(p.b, old_f, old_len), -EKEYEXPIRED);
	assert_int_equal(c->rx_old_phase, 1);
	assert_int_equal(open_copy(p.b, f1, f1_len), 0);
	fc_encap_psp_rx_erase_prev(p.b); /* a no-op now */
	assert_int_equal(open_copy(p.b, f1, f1_len), 0);

	/* next rotation: phase 0 again, with another SPI (generation bits) and key; the
	 * generation-0 frame stays refused as old */
	assert_int_equal(fc_encap_psp_rx_rotate(p.b, MASTER_C), 2);
	assert_int_equal(fc_encap_psp_rx_issue(p.b, A_IDX_AT_B, &spi2, key2), 0);
	assert_int_equal(spi2 & FC_PSP_SPI_PHASE, 0);
	assert_int_not_equal(spi2, p.spi);
	assert_memory_not_equal(key2, p.key, FC_PSP_KEY_LEN);
	assert_int_equal(open_copy(p.b, old_f, old_len), -EKEYEXPIRED);
	assert_int_equal(open_copy(p.b, f1, f1_len), 0); /* generation 1 still accepted */

	/* two rotations without an erase: the generation two back goes with the second */
	assert_int_equal(fc_encap_psp_rx_rotate(p.b, NULL), 3);
	assert_int_equal(open_copy(p.b, f1, f1_len), -EKEYEXPIRED);
	assert_int_equal(c->rx_old_phase, 3);
	assert_int_equal(c->rx_unknown_spi + c->rx_auth_fail + c->rx_bad_hdr, 0);
	pair_fini(&p);
}

/* Many peers through a 2-slot cache: every frame opens (evictions re-derive); with
 * room, one derivation per SPI. */
static void test_key_cache_bounded(void **state)
{
	unsigned int ver = ver_of(state);
	struct fc_encap_psp *tx = mk(ver, NULL, 0), *small = mk(ver, MASTER_B, 2),
			    *big = mk(ver, MASTER_B, 16);
	uint8_t buf[FRAME_CAP];
	uint32_t spi;
	uint8_t key[FC_PSP_KEY_LEN];

	/* tx peer i is "us at small/big", with the SPI they issued for peer i */
	for (uint32_t i = 0; i < PEERS; i++) {
		assert_int_equal(fc_encap_psp_rx_issue(small, i, &spi, key), 0);
		assert_int_equal(fc_encap_psp_rx_issue(big, i, &spi, key), 0);
		assert_int_equal(fc_encap_psp_tx_set(tx, i, spi, key), 0);
	}
	for (uint32_t r = 0; r < 4 * PEERS; r++) {
		uint32_t i = r % PEERS, flen = seal(tx, i, buf, 64, r);

		assert_int_equal(open_copy(small, buf, flen), 0);
		assert_int_equal(open_copy(big, buf, flen), 0);
	}
	assert_int_equal(fc_encap_psp_counters(big)->rx_key_derived, PEERS);
	assert_int_equal(fc_encap_psp_counters(small)->rx_key_derived, 4 * PEERS);
	assert_int_equal(rx_refused(small) + rx_refused(big), 0);
	fc_encap_psp_free(tx);
	fc_encap_psp_free(small);
	fc_encap_psp_free(big);
}

/* IV: the transmit time, strictly increasing per SA under a frozen or backward clock and
 * across an SA replacement; -EOVERFLOW rather than a repeat at the end. */
static void test_iv_strictly_increasing(void **state)
{
	unsigned int ver = ver_of(state);
	uint8_t buf[FRAME_CAP];
	uint64_t last;
	struct pair p;

	pair_init(&p, ver);
	seal(p.a, B_IDX_AT_A, buf, 16, 0);
	last = hdr_iv(buf);
	assert_int_equal(last, clk);
	for (int i = 0; i < 1000; i++) { /* frozen */
		seal(p.a, B_IDX_AT_A, buf, 16, 0);
		assert_int_equal(hdr_iv(buf), last + 1);
		last++;
	}
	clk -= 500000; /* backwards */
	seal(p.a, B_IDX_AT_A, buf, 16, 0);
	assert_int_equal(hdr_iv(buf), last + 1);
	last++;
	clk = last + 12345; /* forward: the time itself */
	seal(p.a, B_IDX_AT_A, buf, 16, 0);
	assert_int_equal(hdr_iv(buf), clk);
	last = clk;
	/* a replaced SA (same key even) does not restart the IV */
	assert_int_equal(fc_encap_psp_tx_set(p.a, B_IDX_AT_A, p.spi, p.key), 0);
	clk = 1;
	seal(p.a, B_IDX_AT_A, buf, 16, 0);
	assert_int_equal(hdr_iv(buf), last + 1);
	/* the end of the IV space */
	struct fc_frame f = { .buf = buf, .cap = FRAME_CAP, .peer_idx = B_IDX_AT_A };
	clk = UINT64_MAX;
	assert_int_equal(fc_encap_psp_ops.seal(p.a, &f, 16), 0);
	assert_int_equal(hdr_iv(buf), UINT64_MAX);
	assert_int_equal(open_copy(p.b, buf, f.len), 0);
	assert_int_equal(fc_encap_psp_ops.seal(p.a, &f, 16), -EOVERFLOW);
	assert_int_equal(fc_encap_psp_counters(p.a)->tx_err, 1);
	pair_fini(&p);
}

static int cmp_nonce(const void *x, const void *y) { return memcmp(x, y, 12); }

/* The nonce (header bytes 4..15 = SPI || IV) never repeats: several peers, a frozen
 * clock, a clock that steps back, SA replacements. */
static void test_nonce_unique(void **state)
{
	unsigned int ver = ver_of(state);
	uint32_t n = fc_test_quick() ? 2000 : 20000, k = 0;
	uint8_t (*nonces)[12] = calloc(n, 12);
	uint8_t buf[FRAME_CAP];
	uint64_t rng = fc_test_seed(DEFAULT_SEED) | 1;
	struct pair p;

	assert_non_null(nonces);
	pair_init(&p, ver);
	clk = 1ull << 40; /* room to step back */
	for (uint32_t i = 0; i < 4; i++) /* 4 SAs, two sharing an SPI value (other keys) */
		assert_int_equal(fc_encap_psp_tx_set(p.a, i, i == 3 ? 1 : i + 1, p.key), 0);
	for (k = 0; k < n; k++) {
		uint64_t r = fc_test_rand(&rng);

		if (r % 5 == 0)
			clk -= r % 1000;          /* steps back */
		else if (r % 5 == 1)
			clk += r % 3;             /* barely moves */
		if (r % 997 == 0)                 /* SA replaced */
			assert_int_equal(fc_encap_psp_tx_set(p.a, 2, 3, p.key), 0);
		seal(p.a, (uint32_t)(r >> 8) % 3, buf, 8, k); /* peers 0..2 */
		memcpy(nonces[k], buf + 4, 12);
	}
	qsort(nonces, n, 12, cmp_nonce);
	for (k = 1; k < n; k++)
		if (!memcmp(nonces[k - 1], nonces[k], 12))
			fail_msg("nonce repeated (seed %#llx)",
				 (unsigned long long)fc_test_seed(DEFAULT_SEED));
	free(nonces);
	pair_fini(&p);
}

/* Random frames: none opens, every one is counted, nothing crashes or overreads. Half
 * are raw random bytes, half carry a valid header with the issued SPI (so they reach the
 * cipher) and random bytes after it. */
static void test_random_frames_refused(void **state)
{
	unsigned int ver = ver_of(state);
	uint32_t n = fc_test_quick() ? 10000 : 100000;
	uint64_t seed = fc_test_seed(DEFAULT_SEED), rng = seed | 1;
	uint8_t hdr[FC_PSP_HDR_LEN], tmp[FRAME_CAP];
	const struct fc_encap_psp_counters *c;
	struct pair p;

	pair_init(&p, ver);
	c = fc_encap_psp_counters(p.b);
	seal(p.a, B_IDX_AT_A, tmp, 64, 0);
	memcpy(hdr, tmp, FC_PSP_HDR_LEN);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t r = fc_test_rand(&rng);
		uint32_t len = (uint32_t)(r % 2048);
		uint8_t *b = malloc(len ? len : 1);
		struct fc_frame f = { .buf = b, .len = len };

		assert_non_null(b);
		for (uint32_t j = 0; j < len; j += 8) {
			uint64_t x = fc_test_rand(&rng);

			memcpy(b + j, &x, len - j < 8 ? len - j : 8);
		}
		/* a quarter raw; a quarter with a valid first word (random SPI); half with
		 * the issued SPI too */
		if (r & (1ull << 40) && len >= FC_PSP_HDR_LEN)
			memcpy(b, hdr, r & (1ull << 41) ? 8 : 4);
		if (fc_encap_psp_ops.open(p.b, &f) == 0)
			fail_msg("random frame %u accepted (seed %#llx)", i,
				 (unsigned long long)seed);
		free(b);
	}
	assert_int_equal(rx_refused(p.b), n);
	assert_int_equal(c->rx_opened, 0);
	assert_true(c->rx_auth_fail > n / 5); /* frames with the issued SPI reach the cipher */
	assert_true(c->rx_bad_hdr > n / 5);
	assert_true(c->rx_unknown_spi + c->rx_old_phase > n / 5);
	assert_true(c->rx_too_short > 0);
	print_message("%u random frames: too short %llu, bad header %llu, unknown SPI %llu, "
		      "old phase %llu, auth %llu\n", n, (unsigned long long)c->rx_too_short,
		      (unsigned long long)c->rx_bad_hdr, (unsigned long long)c->rx_unknown_spi,
		      (unsigned long long)c->rx_old_phase, (unsigned long long)c->rx_auth_fail);
	pair_fini(&p);
}

static void test_seal_errors(void **state)
{
	unsigned int ver = ver_of(state);
	uint8_t buf[FRAME_CAP];
	struct fc_frame f = { .buf = buf, .cap = FRAME_CAP, .peer_idx = 0 };
	const struct fc_encap_psp_counters *c;
	struct pair p;

	pair_init(&p, ver);
	c = fc_encap_psp_counters(p.a);
	assert_int_equal(fc_encap_psp_ops.seal(p.a, &f, 64), -ENOENT); /* peer 0: no SA */
	f.peer_idx = PEERS;
	assert_int_equal(fc_encap_psp_ops.seal(p.a, &f, 64), -ENOENT);
	assert_int_equal(c->tx_no_sa, 2);
	f.peer_idx = B_IDX_AT_A;
	assert_int_equal(fc_encap_psp_ops.seal(p.a, &f, 3), -EINVAL); /* < crypt offset */
	f.cap = FC_PSP_HDR_LEN + 64 + FC_PSP_ICV_LEN - 1;
	assert_int_equal(fc_encap_psp_ops.seal(p.a, &f, 64), -ENOSPC);
	f.cap = FC_PSP_HDR_LEN + 64 + FC_PSP_ICV_LEN;
	assert_int_equal(fc_encap_psp_ops.seal(p.a, &f, 64), 0);
	assert_int_equal(c->tx_err, 2);
	assert_int_equal(fc_encap_psp_tx_clear(p.a, B_IDX_AT_A), 0);
	assert_int_equal(fc_encap_psp_ops.seal(p.a, &f, 64), -ENOENT);
	assert_int_equal(fc_encap_psp_tx_clear(p.a, PEERS), -EINVAL);
	assert_int_equal(fc_encap_psp_tx_set(p.a, PEERS, 1, p.key), -EINVAL);
	assert_int_equal(fc_encap_psp_ops.headroom, FC_PSP_HDR_LEN);
	assert_int_equal(fc_encap_psp_ops.tailroom, FC_PSP_ICV_LEN);
	pair_fini(&p);
}

/* The two ciphers never share a key for the same SPI and master. */
static void test_keys_differ_per_cipher(void **state)
{
	struct fc_encap_psp *x, *y;
	uint32_t sx, sy;
	uint8_t kx[FC_PSP_KEY_LEN], ky[FC_PSP_KEY_LEN];

	(void)state;
	if (!fc_psp_cipher_available(FC_PSP_VER_AES_GCM_256))
		skip();
	x = mk(FC_PSP_VER_AES_GCM_256, MASTER_B, 0);
	y = mk(FC_PSP_VER_CHACHA20_POLY1305, MASTER_B, 0);
	assert_int_equal(fc_encap_psp_rx_issue(x, 0, &sx, kx), 0);
	assert_int_equal(fc_encap_psp_rx_issue(y, 0, &sy, ky), 0);
	assert_int_equal(sx, sy);
	assert_memory_not_equal(kx, ky, FC_PSP_KEY_LEN);
	fc_encap_psp_free(x);
	fc_encap_psp_free(y);
}

/* libsodium's AES-256-GCM over frame: the old seal, as the libsodium-based encap_psp.c
 * ran it (beforenm, then encrypt_detached_afternm; AAD = header + CID word, nonce = SPI
 * || IV). Encrypts frame's payload past the CID word in place, ICV behind it. */
static void sodium_seal(uint8_t *frame, uint32_t len, const uint8_t key[FC_PSP_KEY_LEN])
{
	const uint32_t aad = FC_PSP_HDR_LEN + 4;
	crypto_aead_aes256gcm_state st;

	assert_int_equal(crypto_aead_aes256gcm_beforenm(&st, key), 0);
	assert_int_equal(crypto_aead_aes256gcm_encrypt_detached_afternm(
				 frame + aad, frame + FC_PSP_HDR_LEN + len, NULL, frame + aad,
				 len - 4, frame, aad, NULL, frame + 4, &st),
			 0);
	sodium_memzero(&st, sizeof(st));
}

/* PSP version 1 is byte-for-byte what libsodium's AES-256-GCM sealed (the cipher moved to
 * libcrypto): for the same key, nonce, AAD and plaintext our seal gives libsodium's
 * ciphertext and ICV; a frame libsodium sealed opens with ours, one ours sealed opens with
 * libsodium's; a tampered libsodium frame is refused -EBADMSG. Then the same after a key
 * rotation (fresh libcrypto contexts on both sides). */
static void test_aes_gcm_matches_libsodium(void **state)
{
	static const uint32_t sizes[] = { 4, 5, 17, 64, 1500, 4096 };
	uint8_t buf[FRAME_CAP], ref[FRAME_CAP], want[4096];
	struct pair p;

	(void)state;
	if (!fc_psp_cipher_available(FC_PSP_VER_AES_GCM_256) ||
	    !crypto_aead_aes256gcm_is_available())
		skip();
	assert_int_equal(crypto_aead_aes256gcm_KEYBYTES, FC_PSP_KEY_LEN);
	assert_int_equal(crypto_aead_aes256gcm_ABYTES, FC_PSP_ICV_LEN);
	assert_int_equal(crypto_aead_aes256gcm_NPUBBYTES, 12);
	pair_init(&p, FC_PSP_VER_AES_GCM_256);
	for (int rekey = 0; rekey < 2; rekey++) {
		if (rekey) { /* a new generation: the SA's context and the rx key are rebuilt */
			assert_int_equal(fc_encap_psp_rx_rotate(p.b, MASTER_C), 1);
			assert_int_equal(fc_encap_psp_rx_issue(p.b, A_IDX_AT_B, &p.spi, p.key), 0);
			assert_int_equal(fc_encap_psp_tx_set(p.a, B_IDX_AT_A, p.spi, p.key), 0);
		}
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			uint32_t len = sizes[i], flen;
			struct fc_frame f;

			clk += 1000;
			flen = seal(p.a, B_IDX_AT_A, buf, len, (uint32_t)(i + 40 * rekey));
			fill_pat(want, len, (uint32_t)(i + 40 * rekey));
			/* the known answer: libsodium over the same header and plaintext */
			memcpy(ref, buf, FC_PSP_HDR_LEN);
			memcpy(ref + FC_PSP_HDR_LEN, want, len);
			sodium_seal(ref, len, p.key);
			assert_memory_equal(buf, ref, flen);
			/* ours opens with libsodium's open */
			assert_int_equal(crypto_aead_aes256gcm_decrypt_detached(
						 ref + FC_PSP_HDR_LEN + 4, NULL,
						 buf + FC_PSP_HDR_LEN + 4, len - 4,
						 buf + FC_PSP_HDR_LEN + len, buf, FC_PSP_HDR_LEN + 4,
						 buf + 4, p.key),
					 0);
			assert_memory_equal(ref + FC_PSP_HDR_LEN, want, len);
			/* libsodium's opens with ours: another plaintext under a later IV */
			clk += 1000;
			flen = seal(p.a, B_IDX_AT_A, buf, len, 7);
			fill_pat(want, len, (uint32_t)(i + 100));
			memcpy(buf + FC_PSP_HDR_LEN, want, len);
			sodium_seal(buf, len, p.key);
			memcpy(ref, buf, flen);
			f = (struct fc_frame){ .buf = buf, .len = flen };
			assert_int_equal(fc_encap_psp_ops.open(p.b, &f), 0);
			assert_int_equal(f.len, len);
			assert_memory_equal(f.buf, want, len);
			assert_int_equal(f.meta.tx_ns, clk);
			/* and a libsodium frame with one ICV bit off is refused */
			ref[flen - 1] ^= 0x80;
			assert_int_equal(open_copy(p.b, ref, flen), -EBADMSG);
		}
	}
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_opened, 12);
	assert_int_equal(fc_encap_psp_counters(p.b)->rx_auth_fail, 12);
	pair_fini(&p);
}

/* Spec 9.2.2.2: accept when (remote time - margin) < IV modulo 2^64; advance on newer. */
static void test_replay_check(void **state)
{
	uint64_t rt;

	(void)state;
	rt = 1000;
	assert_true(fc_psp_replay_check(&rt, 1001, 100)); /* newer: advances */
	assert_int_equal(rt, 1001);
	assert_true(fc_psp_replay_check(&rt, 950, 100));  /* late, inside the margin */
	assert_int_equal(rt, 1001);
	assert_true(fc_psp_replay_check(&rt, 1001, 100)); /* equal: inside the margin */
	assert_true(fc_psp_replay_check(&rt, 902, 100));
	assert_false(fc_psp_replay_check(&rt, 901, 100)); /* == remote - margin: not < */
	assert_false(fc_psp_replay_check(&rt, 10, 100));
	assert_int_equal(rt, 1001);
	rt = 1000;
	assert_false(fc_psp_replay_check(&rt, 1000, 0)); /* margin 0: only newer */
	assert_true(fc_psp_replay_check(&rt, 1001, 0));

	/* across the wrap: newer past 2^64 advances; older before it, within the margin */
	rt = UINT64_MAX - 5;
	assert_true(fc_psp_replay_check(&rt, 3, 100));
	assert_int_equal(rt, 3);
	assert_true(fc_psp_replay_check(&rt, UINT64_MAX - 50, 100));
	assert_int_equal(rt, 3);
	assert_false(fc_psp_replay_check(&rt, UINT64_MAX - 96, 100)); /* 3 - 100 == it */
	assert_false(fc_psp_replay_check(&rt, UINT64_MAX - 1000, 100));
	assert_int_equal(rt, 3);
	/* a margin that reaches back past 0 */
	rt = 50;
	assert_true(fc_psp_replay_check(&rt, UINT64_MAX, 100));
	assert_true(fc_psp_replay_check(&rt, 0, 100));
	assert_int_equal(rt, 50);
	/* half the space ahead is "newer", beyond it "older" */
	rt = 0;
	assert_true(fc_psp_replay_check(&rt, (1ull << 63) - 1, 0));
	assert_int_equal(rt, (1ull << 63) - 1);
	rt = 0;
	assert_false(fc_psp_replay_check(&rt, 1ull << 63, 0));
}

#define PER_CIPHER(fn)                                          \
	cmocka_unit_test_prestate(fn, &VER_AES),                \
		cmocka_unit_test_prestate(fn, &VER_CHACHA)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_refuses_bad_cfg),
		PER_CIPHER(test_roundtrip),
		PER_CIPHER(test_ciphertext_hides_pattern),
		PER_CIPHER(test_every_bit_flip_refused),
		PER_CIPHER(test_bad_headers),
		PER_CIPHER(test_truncated),
		PER_CIPHER(test_wrong_spi),
		PER_CIPHER(test_rotation),
		PER_CIPHER(test_key_cache_bounded),
		PER_CIPHER(test_iv_strictly_increasing),
		PER_CIPHER(test_nonce_unique),
		PER_CIPHER(test_random_frames_refused),
		PER_CIPHER(test_seal_errors),
		cmocka_unit_test(test_keys_differ_per_cipher),
		cmocka_unit_test(test_aes_gcm_matches_libsodium),
		cmocka_unit_test(test_replay_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
