/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CM's Noise IK handshake (daemon/hs.c): the published test vector of
 * Noise_IK_25519_ChaChaPoly_BLAKE2b (cacophony's vectors/cacophony.txt, transcribed
 * below: both handshake messages, the handshake hash and four transport messages); a full
 * handshake both ways with payloads; the allow-list on both sides; every byte of both
 * messages flipped; replayed and stale message 1; a replayed message 2; hello tampering
 * through the stream cipher's malleability; truncated and random input; key files.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "hs.h"
#include "testutil.h"

#define NS_PER_S 1000000000ull
#define T0 (1700000000ull * NS_PER_S + 123456789ull) /* a CLOCK_REALTIME "now" */

static uint64_t test_seed(void) { return fc_test_seed(0x4e015e5eedull); }

static size_t unhex(uint8_t *out, size_t cap, const char *hex)
{
	size_t n = 0;

	assert_int_equal(sodium_hex2bin(out, cap, hex, strlen(hex), NULL, &n, NULL), 0);
	return n;
}

/* ---- a fixed ephemeral key for the vectors ---- */

struct fixed_rand {
	uint8_t key[FC_HS_KEY_LEN];
	int used;
};

static void fixed_rand(void *ctx, uint8_t *buf, size_t len)
{
	struct fixed_rand *r = ctx;

	assert_int_equal(len, FC_HS_KEY_LEN);
	memcpy(buf, r->key, len);
	r->used++;
}

/* ---- the published vector ---- */

static void test_vector_cacophony(void **state)
{
	/* cacophony vectors/cacophony.txt, "Noise_IK_25519_ChaChaPoly_BLAKE2b" */
	static const char *prologue = "4a6f686e2047616c74";
	static const char *init_static =
		"e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1";
	static const char *init_ephemeral =
		"893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a";
	static const char *init_remote_static =
		"31e0303fd6418d2f8c0e78b91f22e8caed0fbe48656dcf4767e4834f701b8f62";
	static const char *resp_static =
		"4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893";
	static const char *resp_ephemeral =
		"bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b";
	static const char *handshake_hash =
		"1c8fa891cb414fedba6daa7c6f4ae0a6d98e5f9768cc9cecd27e805614943ee9"
		"c8a1b27fbfb76dc197255c8aa69f6b4285c423840b8bedf45e652ca64f797d81";
	static const char *const msgs[6][2] = {
		{ "4c756477696720766f6e204d69736573",
		  "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944"
		  "ba83a447b38c83e327ad936929812f624884847b7831e95e197b2f797088efdd"
		  "2f88f1db7e1fb0e99c64419097af91cee64e470f4b6fcd9298ce0b56fe20f86e"
		  "13bf70439c538e3602a7127af71a29cc" },
		{ "4d757272617920526f746862617264",
		  "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f144808843"
		  "9f069b267a06b3de3ecb1043bcb098e9af91d9c64748d998c7b47890871571" },
		{ "462e20412e20486179656b", "cd54383060e7a28434cca27fb1cc524cfbabeb18181589df219d07" },
		{ "4361726c204d656e676572", "a856d3bf0246bfc476c655009cd1ed677b8dcc5b349ae8ef2a05f2" },
		{ "4a65616e2d426170746973746520536179",
		  "49063084b2c51f098337cb8a13739ac848f907e67cfb2cc8a8b60586467aa02fc7" },
		{ "457567656e2042f6686d20766f6e2042617765726b",
		  "8b9709d23b47e4639df7678d7a21741eba4ef1e9c60383001c7435549c20f9d56f30e935d3" },
	};
	uint8_t pro[32], priv[FC_HS_KEY_LEN], rs[FC_HS_KEY_LEN], hash[FC_HS_HASH_LEN];
	uint8_t p[64], c[128], out[256], hash_i[FC_HS_HASH_LEN], hash_r[FC_HS_HASH_LEN];
	struct fc_hs_key ki, kr;
	struct fc_hs_peers pi = { 0 }, pr = { 0 };
	struct fixed_rand ri = { 0 }, rr = { 0 };
	struct fc_hs hi, hr;
	struct fc_hs_peer_msg got;
	struct fc_hs_keys keys_i, keys_r;
	size_t pro_len, p_len, c_len, out_len;

	(void)state;
	pro_len = unhex(pro, sizeof(pro), prologue);
	unhex(priv, sizeof(priv), init_static);
	assert_int_equal(fc_hs_key_from_private(&ki, priv), 0);
	unhex(priv, sizeof(priv), resp_static);
	assert_int_equal(fc_hs_key_from_private(&kr, priv), 0);
	unhex(rs, sizeof(rs), init_remote_static);
	assert_memory_equal(rs, kr.pub, FC_HS_KEY_LEN);
	unhex(ri.key, sizeof(ri.key), init_ephemeral);
	unhex(rr.key, sizeof(rr.key), resp_ephemeral);
	assert_int_equal(fc_hs_peers_add(&pi, kr.pub), 0);
	assert_int_equal(fc_hs_peers_add(&pr, ki.pub), 0);

	struct fc_hs_config ci = { .self = &ki, .peers = &pi, .prologue = pro,
				   .prologue_len = pro_len, .flags = FC_HS_F_BARE,
				   .rand = fixed_rand, .rand_ctx = &ri };
	struct fc_hs_config cr = ci;

	cr.self = &kr, cr.peers = &pr, cr.rand_ctx = &rr;
	assert_int_equal(fc_hs_initiator(&hi, &ci, rs), 0);
	assert_int_equal(fc_hs_responder(&hr, &cr), 0);

	/* message 1: initiator -> responder */
	p_len = unhex(p, sizeof(p), msgs[0][0]);
	c_len = unhex(c, sizeof(c), msgs[0][1]);
	assert_int_equal(fc_hs_write_msg1(&hi, T0, NULL, p, p_len, out, sizeof(out), &out_len), 0);
	assert_int_equal(out_len, c_len);
	assert_memory_equal(out, c, c_len);
	assert_int_equal(fc_hs_read_msg1(&hr, T0, c, c_len, &got), 0);
	assert_memory_equal(got.peer_pub, ki.pub, FC_HS_KEY_LEN);
	assert_int_equal(got.payload_len, p_len);
	assert_memory_equal(got.payload, p, p_len);

	/* message 2: responder -> initiator */
	p_len = unhex(p, sizeof(p), msgs[1][0]);
	c_len = unhex(c, sizeof(c), msgs[1][1]);
	assert_int_equal(fc_hs_write_msg2(&hr, NULL, p, p_len, out, sizeof(out), &out_len), 0);
	assert_int_equal(out_len, c_len);
	assert_memory_equal(out, c, c_len);
	assert_int_equal(fc_hs_read_msg2(&hi, c, c_len, &got), 0);
	assert_memory_equal(got.peer_pub, kr.pub, FC_HS_KEY_LEN);
	assert_int_equal(got.payload_len, p_len);
	assert_memory_equal(got.payload, p, p_len);
	assert_int_equal(ri.used, 1);
	assert_int_equal(rr.used, 1);

	assert_int_equal(fc_hs_finish(&hi, hash_i, &keys_i), 0);
	assert_int_equal(fc_hs_finish(&hr, hash_r, &keys_r), 0);
	unhex(hash, sizeof(hash), handshake_hash);
	assert_memory_equal(hash_i, hash, FC_HS_HASH_LEN);
	assert_memory_equal(hash_r, hash, FC_HS_HASH_LEN);
	assert_memory_equal(keys_i.send, keys_r.recv, FC_HS_KEY_LEN);
	assert_memory_equal(keys_i.recv, keys_r.send, FC_HS_KEY_LEN);

	/* transport messages 3..6 alternate initiator, responder; each side's nonce from 0;
	 * no associated data (Noise 5.1 with ad = empty) */
	for (int m = 2; m < 6; m++) {
		const uint8_t *k = m % 2 == 0 ? keys_i.send : keys_r.send;
		uint8_t npub[crypto_aead_chacha20poly1305_IETF_NPUBBYTES] = { 0 };
		unsigned long long len = 0;

		npub[4] = (uint8_t)((m - 2) / 2); /* n, little endian after 4 zero bytes */
		p_len = unhex(p, sizeof(p), msgs[m][0]);
		c_len = unhex(c, sizeof(c), msgs[m][1]);
		crypto_aead_chacha20poly1305_ietf_encrypt(out, &len, p, p_len, NULL, 0, NULL, npub, k);
		assert_int_equal(len, c_len);
		assert_memory_equal(out, c, c_len);
	}
	/* wiped */
	static const struct fc_hs zero;

	assert_memory_equal(&hi, &zero, sizeof(zero));
	assert_memory_equal(&hr, &zero, sizeof(zero));
}

/* ---- two daemons ---- */

struct pair {
	struct fc_hs_key ka, kb;                /* a initiates, b responds */
	struct fc_hs_peers pa, pb;
	struct fc_hs_config ca, cb;
};

static void pair_init(struct pair *x)
{
	memset(x, 0, sizeof(*x));
	assert_int_equal(fc_hs_key_generate(&x->ka), 0);
	assert_int_equal(fc_hs_key_generate(&x->kb), 0);
	assert_int_equal(fc_hs_peers_add(&x->pa, x->kb.pub), 0);
	assert_int_equal(fc_hs_peers_add(&x->pb, x->ka.pub), 0);
	x->ca = (struct fc_hs_config){ .self = &x->ka, .peers = &x->pa };
	x->cb = (struct fc_hs_config){ .self = &x->kb, .peers = &x->pb };
}

static const struct fc_hs_hello hello_a = { 2, 0x0000000f, 0x00000001 };
static const struct fc_hs_hello hello_b = { 2, 0x00000007, 0x00000002 };

static void fill(uint8_t *b, size_t n, uint8_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7 + salt);
}

/* Message 1 from a at time t, with a 200-byte payload. */
static size_t msg1(struct pair *x, struct fc_hs *ha, uint64_t t, uint8_t *out)
{
	uint8_t pay[200];
	size_t len = 0;

	fill(pay, sizeof(pay), 1);
	assert_int_equal(fc_hs_initiator(ha, &x->ca, x->kb.pub), 0);
	assert_int_equal(fc_hs_write_msg1(ha, t, &hello_a, pay, sizeof(pay), out, FC_HS_MSG1_MAX,
					  &len), 0);
	assert_int_equal(len, FC_HS_MSG1_LEN(sizeof(pay)));
	return len;
}

/* b reads m1 at time t and answers with a 150-byte payload. */
static size_t msg2(struct pair *x, struct fc_hs *hb, uint64_t t, const uint8_t *m1,
		   size_t m1_len, uint8_t *out)
{
	uint8_t pay[150];
	struct fc_hs_peer_msg got;
	size_t len = 0;

	fill(pay, sizeof(pay), 2);
	assert_int_equal(fc_hs_responder(hb, &x->cb), 0);
	assert_int_equal(fc_hs_read_msg1(hb, t, m1, m1_len, &got), 0);
	assert_int_equal(fc_hs_write_msg2(hb, &hello_b, pay, sizeof(pay), out, FC_HS_MSG2_MAX,
					  &len), 0);
	assert_int_equal(len, FC_HS_MSG2_LEN(sizeof(pay)));
	return len;
}

static void test_full_handshake(void **state)
{
	uint8_t m1[FC_HS_MSG1_MAX], m2[FC_HS_MSG2_MAX], pay_a[200], pay_b[200];
	uint8_t hash_a[FC_HS_HASH_LEN], hash_b[FC_HS_HASH_LEN], ts[FC_HS_TS_LEN];
	struct fc_hs ha, hb;
	struct fc_hs_peer_msg got_b, got_a;
	struct fc_hs_keys keys_a, keys_b;
	struct pair x;
	size_t l1, l2;

	(void)state;
	pair_init(&x);
	fill(pay_a, sizeof(pay_a), 1);
	fill(pay_b, sizeof(pay_b), 2);
	for (size_t plen = 0; plen <= 200; plen += 200) { /* empty and CM-sized payloads */
		assert_int_equal(fc_hs_initiator(&ha, &x.ca, x.kb.pub), 0);
		assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
		assert_int_equal(fc_hs_write_msg1(&ha, T0 + plen, &hello_a, pay_a, plen, m1,
						  sizeof(m1), &l1), 0);
		assert_int_equal(l1, FC_HS_MSG1_LEN(plen));
		assert_int_equal(fc_hs_read_msg1(&hb, T0 + plen, m1, l1, &got_b), 0);
		assert_memory_equal(got_b.peer_pub, x.ka.pub, FC_HS_KEY_LEN);
		assert_int_equal(got_b.hello.version, hello_a.version);
		assert_int_equal(got_b.hello.features_supported, hello_a.features_supported);
		assert_int_equal(got_b.hello.features_required, hello_a.features_required);
		fc_hs_tai64n(T0 + plen, ts);
		assert_memory_equal(got_b.ts, ts, FC_HS_TS_LEN);
		assert_int_equal(got_b.payload_len, plen);
		assert_memory_equal(got_b.payload, pay_a, plen);

		assert_int_equal(fc_hs_write_msg2(&hb, &hello_b, pay_b, plen, m2, sizeof(m2), &l2),
				 0);
		assert_int_equal(l2, FC_HS_MSG2_LEN(plen));
		assert_int_equal(fc_hs_read_msg2(&ha, m2, l2, &got_a), 0);
		assert_memory_equal(got_a.peer_pub, x.kb.pub, FC_HS_KEY_LEN);
		assert_int_equal(got_a.hello.version, hello_b.version);
		assert_int_equal(got_a.hello.features_supported, hello_b.features_supported);
		assert_int_equal(got_a.hello.features_required, hello_b.features_required);
		assert_int_equal(got_a.payload_len, plen);
		assert_memory_equal(got_a.payload, pay_b, plen);

		assert_int_equal(fc_hs_finish(&ha, hash_a, &keys_a), 0);
		assert_int_equal(fc_hs_finish(&hb, hash_b, &keys_b), 0);
		assert_memory_equal(hash_a, hash_b, FC_HS_HASH_LEN);
		assert_memory_equal(keys_a.send, keys_b.recv, FC_HS_KEY_LEN);
		assert_memory_equal(keys_a.recv, keys_b.send, FC_HS_KEY_LEN);
		assert_memory_not_equal(keys_a.send, keys_a.recv, FC_HS_KEY_LEN);
	}
	/* the other way round: b initiates to a (each allows the other) */
	assert_int_equal(fc_hs_initiator(&hb, &x.cb, x.ka.pub), 0);
	assert_int_equal(fc_hs_responder(&ha, &x.ca), 0);
	assert_int_equal(fc_hs_write_msg1(&hb, T0, &hello_b, pay_b, 17, m1, sizeof(m1), &l1), 0);
	assert_int_equal(fc_hs_read_msg1(&ha, T0, m1, l1, &got_a), 0);
	assert_memory_equal(got_a.peer_pub, x.kb.pub, FC_HS_KEY_LEN);
	assert_int_equal(fc_hs_write_msg2(&ha, &hello_a, pay_a, 33, m2, sizeof(m2), &l2), 0);
	assert_int_equal(fc_hs_read_msg2(&hb, m2, l2, &got_b), 0);
	assert_int_equal(got_b.payload_len, 33);
	assert_int_equal(fc_hs_finish(&ha, hash_a, NULL), 0);
	assert_int_equal(fc_hs_finish(&hb, hash_b, NULL), 0);
	assert_memory_equal(hash_a, hash_b, FC_HS_HASH_LEN);

	/* sizes and misuse */
	assert_int_equal(FC_HS_MSG1_LEN(0), 124);
	assert_int_equal(FC_HS_MSG2_LEN(0), 64);
	assert_int_equal(fc_hs_initiator(&ha, &x.ca, x.kb.pub), 0);
	assert_int_equal(fc_hs_write_msg1(&ha, T0, &hello_a, pay_a, FC_HS_PAYLOAD_MAX + 1, m1,
					  sizeof(m1), &l1), -EMSGSIZE);
	assert_int_equal(fc_hs_write_msg1(&ha, T0, &hello_a, pay_a, 10, m1, FC_HS_MSG1_LEN(9),
					  &l1), -ENOBUFS);
	assert_int_equal(fc_hs_read_msg1(&ha, T0, m1, l1, &got_a), -EINVAL); /* wrong role */
	assert_int_equal(fc_hs_finish(&ha, hash_a, NULL), -EINVAL);          /* not done */
}

static void test_unknown_keys(void **state)
{
	uint8_t m1[FC_HS_MSG1_MAX], ts0[FC_HS_TS_LEN] = { 0 };
	struct fc_hs ha, hb;
	struct fc_hs_peer_msg got;
	struct fc_hs_key stranger;
	struct pair x;
	size_t l1;

	(void)state;
	pair_init(&x);
	/* the initiator refuses to start to a responder key it does not know */
	assert_int_equal(fc_hs_key_generate(&stranger), 0);
	assert_int_equal(fc_hs_initiator(&ha, &x.ca, stranger.pub), -ENOKEY);
	/* ... or one removed from its allow-list after it started */
	assert_int_equal(fc_hs_initiator(&ha, &x.ca, x.kb.pub), 0);
	assert_int_equal(fc_hs_peers_remove(&x.pa, x.kb.pub), 0);
	assert_int_equal(fc_hs_write_msg1(&ha, T0, &hello_a, NULL, 0, m1, sizeof(m1), &l1),
			 -ENOKEY);
	assert_int_equal(fc_hs_peers_add(&x.pa, x.kb.pub), 0);
	fc_hs_wipe(&ha);

	/* a responder refuses an initiator not on its allow-list, and remembers nothing */
	struct fc_hs_peers pb_other = { 0 };
	struct fc_hs_config cb_other = x.cb;

	assert_int_equal(fc_hs_peers_add(&pb_other, stranger.pub), 0);
	cb_other.peers = &pb_other;
	l1 = msg1(&x, &ha, T0, m1);
	assert_int_equal(fc_hs_responder(&hb, &cb_other), 0);
	assert_int_equal(fc_hs_read_msg1(&hb, T0, m1, l1, &got), -ENOKEY);
	assert_memory_equal(pb_other.peer[0].rx_ts, ts0, FC_HS_TS_LEN);
	assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
	/* a stranger that knows b's public key gets the same answer */
	struct fc_hs_peers ps = { 0 };
	struct fc_hs_config cs = { .self = &stranger, .peers = &ps };
	struct fc_hs hs;

	assert_int_equal(fc_hs_peers_add(&ps, x.kb.pub), 0);
	assert_int_equal(fc_hs_initiator(&hs, &cs, x.kb.pub), 0);
	assert_int_equal(fc_hs_write_msg1(&hs, T0, &hello_a, NULL, 0, m1, sizeof(m1), &l1), 0);
	assert_int_equal(fc_hs_read_msg1(&hb, T0, m1, l1, &got), -ENOKEY);
	fc_hs_wipe(&hs);
	fc_hs_wipe(&ha);
	/* the refusals left b's state as it was: a's message still goes through */
	l1 = msg1(&x, &ha, T0, m1);
	assert_int_equal(fc_hs_read_msg1(&hb, T0, m1, l1, &got), 0);
	fc_hs_wipe(&ha);
	fc_hs_wipe(&hb);
}

static int refused_as_damaged(int rc)
{
	return rc == -EBADMSG || rc == -EPROTO || rc == -EPROTONOSUPPORT;
}

static void test_flip_every_byte(void **state)
{
	static const uint8_t masks[] = { 0x01, 0x80, 0xff };
	uint8_t m1[FC_HS_MSG1_MAX], m2[FC_HS_MSG2_MAX], bad[FC_HS_MSG1_MAX];
	struct fc_hs ha, hb;
	struct fc_hs_peer_msg got;
	struct pair x;
	size_t l1, l2;
	unsigned n_mac = 0, n_malformed = 0;

	(void)state;
	pair_init(&x);
	l1 = msg1(&x, &ha, T0, m1);
	for (size_t i = 0; i < l1; i++)
		for (unsigned m = 0; m < sizeof(masks); m++) {
			int rc;

			memcpy(bad, m1, l1);
			bad[i] ^= masks[m];
			assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
			rc = fc_hs_read_msg1(&hb, T0, bad, l1, &got);
			if (!refused_as_damaged(rc))
				fail_msg("msg1 byte %zu ^ 0x%02x: %d (%s)", i, masks[m], rc,
					 fc_hs_strerror(rc));
			n_mac += rc == -EBADMSG;
			n_malformed += rc != -EBADMSG;
		}
	assert_int_equal(n_malformed, 3 * FC_HS_HDR_LEN); /* the header; the rest is MAC'd */
	assert_int_equal(n_mac, 3 * (l1 - FC_HS_HDR_LEN));
	/* none of it advanced the replay state: the real message goes through */
	l2 = msg2(&x, &hb, T0, m1, l1, m2);

	n_mac = n_malformed = 0;
	for (size_t i = 0; i < l2; i++)
		for (unsigned m = 0; m < sizeof(masks); m++) {
			int rc;

			memcpy(bad, m2, l2);
			bad[i] ^= masks[m];
			rc = fc_hs_read_msg2(&ha, bad, l2, &got);
			if (!refused_as_damaged(rc))
				fail_msg("msg2 byte %zu ^ 0x%02x: %d (%s)", i, masks[m], rc,
					 fc_hs_strerror(rc));
			n_mac += rc == -EBADMSG;
			n_malformed += rc != -EBADMSG;
		}
	assert_int_equal(n_malformed, 3 * FC_HS_HDR_LEN);
	assert_int_equal(n_mac, 3 * (l2 - FC_HS_HDR_LEN));
	/* a's handshake survived every forgery */
	assert_int_equal(fc_hs_read_msg2(&ha, m2, l2, &got), 0);
	assert_int_equal(got.payload_len, 150);
	fc_hs_wipe(&ha);
	fc_hs_wipe(&hb);
}

static void test_replay_and_stale_msg1(void **state)
{
	uint8_t m1[FC_HS_MSG1_MAX], m1_old[FC_HS_MSG1_MAX], m2[FC_HS_MSG2_MAX];
	uint64_t skew = FC_HS_SKEW_DEFAULT_NS;
	struct fc_hs ha, ha2, hb;
	struct fc_hs_peer_msg got;
	struct pair x;
	size_t l1, l1_old;

	(void)state;
	pair_init(&x);
	/* a recorded message 1, replayed after the handshake it started: refused */
	l1 = msg1(&x, &ha, T0, m1);
	msg2(&x, &hb, T0, m1, l1, m2);
	fc_hs_wipe(&hb);
	for (uint64_t later = 0; later <= 2 * skew; later += skew / 2) {
		assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
		assert_int_equal(fc_hs_read_msg1(&hb, T0 + later, m1, l1, &got), -EALREADY);
	}
	fc_hs_wipe(&ha);

	/* an older timestamp after a newer one: refused */
	l1_old = msg1(&x, &ha, T0 + 10 * NS_PER_S, m1_old);
	l1 = msg1(&x, &ha2, T0 + 11 * NS_PER_S, m1);
	assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
	assert_int_equal(fc_hs_read_msg1(&hb, T0 + 11 * NS_PER_S, m1, l1, &got), 0);
	assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
	assert_int_equal(fc_hs_read_msg1(&hb, T0 + 11 * NS_PER_S, m1_old, l1_old, &got),
			 -EALREADY);
	fc_hs_wipe(&ha);
	fc_hs_wipe(&ha2);

	/* the same timestamp in a fresh message (a restarted initiator, same clock) */
	struct fc_hs_peers pa_restarted = { 0 };

	assert_int_equal(fc_hs_peers_add(&pa_restarted, x.kb.pub), 0);
	x.ca.peers = &pa_restarted;
	l1 = msg1(&x, &ha, T0 + 11 * NS_PER_S, m1);
	assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
	assert_int_equal(fc_hs_read_msg1(&hb, T0 + 11 * NS_PER_S, m1, l1, &got), -EALREADY);
	fc_hs_wipe(&ha);
	x.ca.peers = &x.pa;

	/* the initiator never reuses a timestamp, even when its clock steps back */
	l1 = msg1(&x, &ha, T0, m1); /* a's last one was T0 + 11 s: this is stamped after it */
	assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
	assert_int_equal(fc_hs_read_msg1(&hb, T0 + 11 * NS_PER_S, m1, l1, &got), 0);
	uint64_t ts_ns = 0;

	assert_int_equal(fc_hs_tai64n_ns(got.ts, &ts_ns), 0);
	assert_true(ts_ns == T0 + 11 * NS_PER_S + 1);
	fc_hs_wipe(&ha);

	/* stale: further than skew from the responder's clock, either way; refused ones do
	 * not move the replay state, so a later good one is accepted */
	uint64_t t = T0 + 100 * NS_PER_S;

	l1 = msg1(&x, &ha, t, m1);
	assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
	assert_int_equal(fc_hs_read_msg1(&hb, t + skew + 1, m1, l1, &got), -ESTALE);
	assert_int_equal(fc_hs_read_msg1(&hb, t - skew - 1, m1, l1, &got), -ESTALE);
	assert_int_equal(fc_hs_read_msg1(&hb, t + skew, m1, l1, &got), 0); /* at the edge */
	fc_hs_wipe(&ha);
	fc_hs_wipe(&hb);
	/* a configured skew */
	x.cb.skew_ns = NS_PER_S;
	l1 = msg1(&x, &ha, t + 5 * NS_PER_S, m1);
	assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
	assert_int_equal(fc_hs_read_msg1(&hb, t + 7 * NS_PER_S, m1, l1, &got), -ESTALE);
	assert_int_equal(fc_hs_read_msg1(&hb, t + 6 * NS_PER_S, m1, l1, &got), 0);
	fc_hs_wipe(&ha);
	fc_hs_wipe(&hb);
}

static void test_replay_msg2(void **state)
{
	uint8_t m1[FC_HS_MSG1_MAX], m2[FC_HS_MSG2_MAX], m1b[FC_HS_MSG1_MAX], m2b[FC_HS_MSG2_MAX];
	struct fc_hs ha, hb;
	struct fc_hs_peer_msg got;
	struct pair x;
	size_t l1, l2;

	(void)state;
	pair_init(&x);
	l1 = msg1(&x, &ha, T0, m1);
	l2 = msg2(&x, &hb, T0, m1, l1, m2);
	assert_int_equal(fc_hs_read_msg2(&ha, m2, l2, &got), 0);
	/* again to the same, finished handshake: not expected any more */
	assert_int_equal(fc_hs_read_msg2(&ha, m2, l2, &got), -EINVAL);
	assert_int_equal(fc_hs_finish(&ha, NULL, NULL), 0);
	assert_int_equal(fc_hs_read_msg2(&ha, m2, l2, &got), -EINVAL);
	fc_hs_wipe(&hb);

	/* to a new handshake with the same peer: bound to the old message 1, bad MAC */
	uint8_t m2_new[FC_HS_MSG2_MAX];
	size_t l2_new;

	l1 = msg1(&x, &ha, T0 + NS_PER_S, m1b);
	assert_int_equal(fc_hs_read_msg2(&ha, m2, l2, &got), -EBADMSG);
	l2_new = msg2(&x, &hb, T0 + NS_PER_S, m1b, l1, m2_new); /* its answer, held back */
	/* a message 2 of another handshake in flight at the same time: bad MAC too */
	struct fc_hs ha2, hb2;
	size_t l1c, l2c;
	uint8_t m1c[FC_HS_MSG1_MAX];

	l1c = msg1(&x, &ha2, T0 + 2 * NS_PER_S, m1c);
	l2c = msg2(&x, &hb2, T0 + 2 * NS_PER_S, m1c, l1c, m2b);
	assert_int_equal(fc_hs_read_msg2(&ha, m2b, l2c, &got), -EBADMSG);
	assert_int_equal(fc_hs_read_msg2(&ha2, m2b, l2c, &got), 0);
	/* and ha still completes with its own answer */
	assert_int_equal(fc_hs_read_msg2(&ha, m2_new, l2_new, &got), 0);
	fc_hs_wipe(&ha);
	fc_hs_wipe(&hb);
	fc_hs_wipe(&ha2);
	fc_hs_wipe(&hb2);
}

/* ChaCha20 is a stream cipher: flipping ciphertext bits flips the same plaintext bits.
 * An attacker who knows where the hello sits (it does: the layout is public) and tries
 * to lower the version or drop a feature bit is stopped by the MAC; a changed cleartext
 * header or prologue is refused too. */
static void test_hello_tampering(void **state)
{
	const size_t m1_hello = FC_HS_HDR_LEN + 2 * FC_HS_KEY_LEN + FC_HS_TAG_LEN + FC_HS_TS_LEN;
	const size_t m2_hello = FC_HS_HDR_LEN + FC_HS_KEY_LEN;
	uint8_t m1[FC_HS_MSG1_MAX], m2[FC_HS_MSG2_MAX], bad[FC_HS_MSG1_MAX];
	struct fc_hs ha, hb;
	struct fc_hs_peer_msg got;
	struct pair x;
	size_t l1, l2;

	(void)state;
	pair_init(&x);
	l1 = msg1(&x, &ha, T0, m1);
	/* version 2 -> 1, features_supported bit 0 and required bit 0 cleared */
	static const size_t off[] = { 0, 7, 11 };
	static const uint8_t xr[] = { 2 ^ 1, 0x01, 0x01 };

	for (unsigned i = 0; i < 3; i++) {
		memcpy(bad, m1, l1);
		bad[m1_hello + off[i]] ^= xr[i];
		assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
		assert_int_equal(fc_hs_read_msg1(&hb, T0, bad, l1, &got), -EBADMSG);
	}
	/* the cleartext header: another wire version, another type, reserved bits */
	memcpy(bad, m1, l1);
	bad[0] = FC_HS_WIRE_VERSION + 1;
	assert_int_equal(fc_hs_read_msg1(&hb, T0, bad, l1, &got), -EPROTONOSUPPORT);
	memcpy(bad, m1, l1);
	bad[1] = 2;
	assert_int_equal(fc_hs_read_msg1(&hb, T0, bad, l1, &got), -EPROTO);
	memcpy(bad, m1, l1);
	bad[3] = 0x80;
	assert_int_equal(fc_hs_read_msg1(&hb, T0, bad, l1, &got), -EPROTO);
	/* a responder with another prologue (another protocol version of the CM) */
	static const uint8_t other[] = "falcon-cm noise ik v2";
	struct fc_hs_config cb2 = x.cb;

	cb2.prologue = other, cb2.prologue_len = sizeof(other) - 1;
	assert_int_equal(fc_hs_responder(&hb, &cb2), 0);
	assert_int_equal(fc_hs_read_msg1(&hb, T0, m1, l1, &got), -EBADMSG);

	/* message 2's hello */
	l2 = msg2(&x, &hb, T0, m1, l1, m2);
	for (unsigned i = 0; i < 3; i++) {
		memcpy(bad, m2, l2);
		bad[m2_hello + off[i]] ^= xr[i];
		assert_int_equal(fc_hs_read_msg2(&ha, bad, l2, &got), -EBADMSG);
	}
	assert_int_equal(fc_hs_read_msg2(&ha, m2, l2, &got), 0);
	assert_int_equal(got.hello.version, hello_b.version);
	assert_int_equal(got.hello.features_required, hello_b.features_required);
	fc_hs_wipe(&ha);
	fc_hs_wipe(&hb);
}

static void test_truncated_and_random(void **state)
{
	uint8_t m1[FC_HS_MSG1_MAX], m2[FC_HS_MSG2_MAX], in[FC_HS_MSG1_MAX + 64];
	uint64_t seed = test_seed(), s = seed;
	unsigned n = fc_test_quick() ? 3000u : 100000u;
	struct fc_hs ha, hb;
	struct fc_hs_peer_msg got;
	struct pair x;
	size_t l1, l2;

	(void)state;
	pair_init(&x);
	l1 = msg1(&x, &ha, T0, m1);
	/* every truncation and a few extensions */
	assert_int_equal(fc_hs_responder(&hb, &x.cb), 0);
	for (size_t len = 0; len < l1 + 40; len++) {
		int rc;

		if (len == l1)
			continue;
		memcpy(in, m1, l1);
		memset(in + l1, 0, sizeof(in) - l1);
		rc = fc_hs_read_msg1(&hb, T0, in, len, &got);
		if (!refused_as_damaged(rc))
			fail_msg("msg1 cut to %zu: %d", len, rc);
	}
	assert_int_equal(fc_hs_read_msg1(&hb, T0, NULL, 0, &got), -EPROTO);

	/* random input to both readers; half of it with a good header and length, so it
	 * reaches the DH and the MAC */
	for (unsigned i = 0; i < n; i++) {
		int to_b = i & 1, good_hdr = i & 2, rc;
		size_t len = (size_t)(fc_test_rand(&s) % sizeof(in));

		for (size_t j = 0; j < len; j += 8) {
			uint64_t r = fc_test_rand(&s);

			memcpy(in + j, &r, len - j < 8 ? len - j : 8);
		}
		if (good_hdr) {
			size_t min = to_b ? FC_HS_MSG1_LEN(0) : FC_HS_MSG2_LEN(0);

			len = min + (size_t)(fc_test_rand(&s) % (FC_HS_PAYLOAD_MAX + 1));
			for (size_t j = 0; j < len; j++)
				in[j] = (uint8_t)fc_test_rand(&s);
			in[0] = FC_HS_WIRE_VERSION, in[1] = to_b ? 1 : 2, in[2] = 0, in[3] = 0;
		}
		if (to_b)
			rc = fc_hs_read_msg1(&hb, T0, in, len, &got);
		else
			rc = fc_hs_read_msg2(&ha, in, len, &got);
		if (!refused_as_damaged(rc)) {
			fprintf(stderr, "seed 0x%llx input %u\n", (unsigned long long)seed, i);
			fail_msg("random input %u (len %zu) to %s: %d", i, len, to_b ? "b" : "a", rc);
		}
	}
	/* and the real exchange still works */
	assert_int_equal(fc_hs_read_msg1(&hb, T0, m1, l1, &got), 0);
	assert_int_equal(fc_hs_write_msg2(&hb, &hello_b, NULL, 0, m2, sizeof(m2), &l2), 0);
	for (size_t len = 0; len < l2; len++)
		assert_true(refused_as_damaged(fc_hs_read_msg2(&ha, m2, len, &got)));
	assert_int_equal(fc_hs_read_msg2(&ha, m2, l2, &got), 0);
	fc_hs_wipe(&ha);
	fc_hs_wipe(&hb);
}

/* ---- keys, the allow-list, names ---- */

static void test_key_files(void **state)
{
	char dir[] = "/tmp/test_hs.XXXXXX", path[64], err[256], b64[FC_HS_B64_LEN];
	struct fc_hs_key k, l;
	uint8_t pub[FC_HS_KEY_LEN];
	struct stat st;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/id.key", dir);
	assert_int_equal(fc_hs_key_generate(&k), 0);
	umask(0); /* the file is 0600 whatever the umask */
	assert_int_equal(fc_hs_key_save(path, &k), 0);
	umask(022);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(fc_hs_key_save(path, &k), -EEXIST); /* never over a key */
	assert_int_equal(fc_hs_key_load(path, &l, err, sizeof(err)), 0);
	assert_memory_equal(&k, &l, sizeof(k));

	/* readable (or worse) by group or others: refused, and the message says so */
	static const mode_t bad_modes[] = { 0640, 0604, 0620, 0602, 0660, 0644, 0666, 0610 };

	for (unsigned i = 0; i < sizeof(bad_modes) / sizeof(bad_modes[0]); i++) {
		assert_int_equal(chmod(path, bad_modes[i]), 0);
		memset(&l, 0, sizeof(l));
		assert_int_equal(fc_hs_key_load(path, &l, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "chmod 600"));
		assert_non_null(strstr(err, path));
	}
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(fc_hs_key_load(path, &l, NULL, 0), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(fc_hs_key_load(path, &l, err, sizeof(err)), -ENOENT);
	assert_int_equal(fc_hs_key_load(dir, &l, err, sizeof(err)), -EPERM); /* mode 0700 dir */

	/* contents that are not one key */
	static const char *const junk[] = { "", "\n", "not base64 at all\n",
		"AAAA\n", "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY=x\n",
		"YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWZn\n" };

	for (unsigned i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(junk[i], f);
		fclose(f);
		assert_int_equal(chmod(path, 0600), 0);
		assert_int_equal(fc_hs_key_load(path, &l, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "base64"));
		unlink(path);
	}
	rmdir(dir);

	/* public keys as base64 */
	fc_hs_pub_to_base64(k.pub, b64);
	assert_int_equal(strlen(b64), 44);
	assert_int_equal(fc_hs_pub_from_base64(b64, pub), 0);
	assert_memory_equal(pub, k.pub, FC_HS_KEY_LEN);
	char padded[64];

	snprintf(padded, sizeof(padded), "  %s\n", b64);
	assert_int_equal(fc_hs_pub_from_base64(padded, pub), 0);
	snprintf(padded, sizeof(padded), "%sA", b64);
	assert_int_equal(fc_hs_pub_from_base64(padded, pub), -EINVAL);
	assert_int_equal(fc_hs_pub_from_base64(b64 + 1, pub), -EINVAL);
	assert_int_equal(fc_hs_pub_from_base64("", pub), -EINVAL);
	assert_int_equal(fc_hs_pub_from_base64(NULL, pub), -EINVAL);
}

static void test_peers_and_names(void **state)
{
	struct fc_hs_peers p = { 0 };
	uint8_t key[FC_HS_KEY_LEN] = { 0 };

	(void)state;
	for (unsigned i = 0; i < FC_HS_PEERS_MAX; i++) {
		key[0] = (uint8_t)i;
		assert_int_equal(fc_hs_peers_add(&p, key), 0);
	}
	key[0] = 0xfe;
	assert_int_equal(fc_hs_peers_add(&p, key), -ENOSPC);
	key[0] = 3;
	assert_int_equal(fc_hs_peers_add(&p, key), -EEXIST);
	p.peer[3].rx_ts[0] = 0x40; /* state of a kept peer survives a removal of another */
	key[0] = 1;
	assert_int_equal(fc_hs_peers_remove(&p, key), 0);
	assert_int_equal(fc_hs_peers_remove(&p, key), -ENOENT);
	assert_int_equal(fc_hs_peers_find(&p, key), -ENOENT);
	key[0] = 3;
	assert_int_equal(p.peer[fc_hs_peers_find(&p, key)].rx_ts[0], 0x40);
	assert_int_equal(p.n, FC_HS_PEERS_MAX - 1);

	/* one distinct name per refusal */
	static const int errs[] = { -ENOKEY, -EBADMSG, -EALREADY, -ESTALE, -EPROTO,
				    -EPROTONOSUPPORT, -EINVAL };

	assert_string_equal(fc_hs_strerror(-ENOKEY), "unknown key");
	assert_string_equal(fc_hs_strerror(-EBADMSG), "bad MAC");
	assert_string_equal(fc_hs_strerror(-EALREADY), "replayed");
	assert_string_equal(fc_hs_strerror(-ESTALE), "stale");
	assert_string_equal(fc_hs_strerror(-EPROTO), "malformed");
	for (unsigned i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(fc_hs_strerror(errs[i]), fc_hs_strerror(errs[j]));

	/* TAI64N round trip and refusals */
	uint8_t ts[FC_HS_TS_LEN];
	uint64_t ns = 0;

	fc_hs_tai64n(T0, ts);
	assert_int_equal(ts[0], 0x40);
	assert_int_equal(fc_hs_tai64n_ns(ts, &ns), 0);
	assert_int_equal(ns, T0);
	ts[8] = 0xff; /* nanoseconds >= 10^9 */
	assert_int_equal(fc_hs_tai64n_ns(ts, &ns), -EPROTO);
	memset(ts, 0, sizeof(ts)); /* before 1970 */
	assert_int_equal(fc_hs_tai64n_ns(ts, &ns), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vector_cacophony),
		cmocka_unit_test(test_full_handshake),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_flip_every_byte),
		cmocka_unit_test(test_replay_and_stale_msg1),
		cmocka_unit_test(test_replay_msg2),
		cmocka_unit_test(test_hello_tampering),
		cmocka_unit_test(test_truncated_and_random),
		cmocka_unit_test(test_key_files),
		cmocka_unit_test(test_peers_and_names),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
