/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target of the CM handshake (daemon/hs.c).
 *
 * Input: one byte of mode, then bytes.
 *   mode 0: the bytes are a message 1 to a fresh responder;
 *   mode 1: the bytes are a message 2 to an initiator waiting for one;
 *   mode 2: the bytes (up to FC_HS_PAYLOAD_MAX) are the payload of a whole handshake
 *           between two honest sides.
 * Modes 0 and 1 must be refused (an accepted one would be a forgery) with one of the
 * reasons of hs.h, and leave the waiting initiator able to finish; mode 2 must succeed
 * and deliver the payload both ways. Keys and ephemerals are fixed: runs replay.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(c)                                                                         \
	do {                                                                               \
		if (!(c))                                                                  \
			abort();                                                           \
	} while (0)

#define NOW (1700000000ull * 1000000000ull)

static struct fc_hs_key ka, kb;
static struct fc_hs_peers pa, pb;
static struct fc_hs_config ca, cb;
static struct fc_hs waiting;       /* a's handshake after its message 1 */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t now = NOW;

static void det_rand(void *ctx, uint8_t *buf, size_t len)
{
	(void)ctx;
	for (size_t i = 0; i < len; i++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		buf[i] = (uint8_t)rng;
	}
}

static void setup(void)
{
	static const struct fc_hs_hello hello = { 2, 3, 1 };
	uint8_t priv[FC_HS_KEY_LEN], m1[FC_HS_MSG1_MAX];
	size_t len;

	memset(priv, 0x11, sizeof(priv));
	REQUIRE(fc_hs_key_from_private(&ka, priv) == 0);
	memset(priv, 0x22, sizeof(priv));
	REQUIRE(fc_hs_key_from_private(&kb, priv) == 0);
	REQUIRE(fc_hs_peers_add(&pa, kb.pub) == 0);
	REQUIRE(fc_hs_peers_add(&pb, ka.pub) == 0);
	ca = (struct fc_hs_config){ .self = &ka, .peers = &pa, .rand = det_rand };
	cb = (struct fc_hs_config){ .self = &kb, .peers = &pb, .rand = det_rand };
	REQUIRE(fc_hs_initiator(&waiting, &ca, kb.pub) == 0);
	REQUIRE(fc_hs_write_msg1(&waiting, NOW, &hello, "x", 1, m1, sizeof(m1), &len) == 0);
}

static int refusal(int rc)
{
	return rc == -EBADMSG || rc == -EPROTO || rc == -EPROTONOSUPPORT || rc == -ENOKEY ||
	       rc == -EALREADY || rc == -ESTALE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static const struct fc_hs_hello hello = { 2, 3, 1 };
	uint8_t m1[FC_HS_MSG1_MAX], m2[FC_HS_MSG2_MAX];
	struct fc_hs_peer_msg got;
	struct fc_hs ha, hb;
	size_t l1, l2;

	if (!ready) {
		setup();
		ready = 1;
	}
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		REQUIRE(fc_hs_responder(&hb, &cb) == 0);
		REQUIRE(refusal(fc_hs_read_msg1(&hb, NOW, data + 1, size - 1, &got)));
		fc_hs_wipe(&hb);
		break;
	case 1:
		REQUIRE(refusal(fc_hs_read_msg2(&waiting, data + 1, size - 1, &got)));
		break;
	default:
		size = size - 1 > FC_HS_PAYLOAD_MAX ? FC_HS_PAYLOAD_MAX : size - 1;
		now += 1000;
		REQUIRE(fc_hs_initiator(&ha, &ca, kb.pub) == 0);
		REQUIRE(fc_hs_responder(&hb, &cb) == 0);
		REQUIRE(fc_hs_write_msg1(&ha, now, &hello, data + 1, size, m1, sizeof(m1), &l1) == 0);
		REQUIRE(fc_hs_read_msg1(&hb, now, m1, l1, &got) == 0);
		REQUIRE(got.payload_len == size && !memcmp(got.payload, data + 1, size));
		REQUIRE(fc_hs_write_msg2(&hb, &hello, data + 1, size, m2, sizeof(m2), &l2) == 0);
		REQUIRE(fc_hs_read_msg2(&ha, m2, l2, &got) == 0);
		REQUIRE(got.payload_len == size && !memcmp(got.payload, data + 1, size));
		REQUIRE(fc_hs_finish(&ha, NULL, NULL) == 0 && fc_hs_finish(&hb, NULL, NULL) == 0);
		break;
	}
	return 0;
}
