/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target of the PSP encapsulation's open (daemon/encap_psp.c).
 *
 * Input: 1 byte of mode, then a frame. Mode bit 0 picks the cipher (ChaCha20-Poly1305,
 * or AES-256-GCM where the CPU has it); bit 1 overwrites the frame's first 8 bytes with
 * a valid header and an issued SPI, so mutations reach the key lookup and the cipher. A
 * forged frame must never open (abort() if it does), and every refusal is counted
 * exactly once. Then the frame's bytes are sealed as a payload and must open to the
 * same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encap_psp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(c)                                                                         \
	do {                                                                               \
		if (!(c))                                                                  \
			abort();                                                           \
	} while (0)

#define MAX_LEN 0x10000u

static uint64_t clk = 1;
static uint64_t now(void *ctx)
{
	(void)ctx;
	return clk;
}

static struct fc_encap_psp *rx[2], *tx[2];
static uint8_t hdr[2][8];

static void setup(void)
{
	static const uint8_t master[FC_PSP_KEY_LEN] = { 1, 2, 3 };

	for (int c = 0; c < 2; c++) {
		struct fc_encap_psp_cfg cfg = {
			.version = c && fc_psp_cipher_available(FC_PSP_VER_AES_GCM_256)
					   ? FC_PSP_VER_AES_GCM_256
					   : FC_PSP_VER_CHACHA20_POLY1305,
			.max_peers = 4, .key_cache_slots = 2, .now_ns = now, .master_key = master,
		};
		uint8_t key[FC_PSP_KEY_LEN], f[64] = { 0 };
		struct fc_frame fr = { .buf = f, .cap = sizeof(f), .peer_idx = 0 };
		uint32_t spi;

		rx[c] = fc_encap_psp_new(&cfg);
		tx[c] = fc_encap_psp_new(&cfg);
		REQUIRE(rx[c] && tx[c]);
		for (uint32_t p = 0; p < 3; p++) /* peers 0..2 issued, 3 not */
			REQUIRE(fc_encap_psp_rx_issue(rx[c], p, &spi, key) == 0);
		REQUIRE(fc_encap_psp_tx_set(tx[c], 0, spi, key) == 0);
		REQUIRE(fc_encap_psp_ops.seal(tx[c], &fr, 8) == 0);
		memcpy(hdr[c], f, 8);
	}
	fc_encap_psp_rx_rotate(rx[1], NULL); /* the AES receiver has both phases live */
}

static uint64_t refused(const struct fc_encap_psp *e)
{
	const struct fc_encap_psp_counters *c = fc_encap_psp_counters(e);

	return c->rx_too_short + c->rx_bad_hdr + c->rx_unknown_spi + c->rx_old_phase +
	       c->rx_auth_fail;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b;
	size_t len;
	int c, mode;

	if (!rx[0])
		setup();
	if (size < 1 || size - 1 > MAX_LEN)
		return 0;
	mode = data[0];
	c = mode & 1;
	len = size - 1;
	b = malloc(len + 2 * FC_PSP_ICV_LEN + FC_PSP_HDR_LEN + 1);
	REQUIRE(b);

	/* open a forged frame: refused and counted once */
	memcpy(b, data + 1, len);
	if (mode & 2 && len >= 8)
		memcpy(b, hdr[c], 8);
	{
		struct fc_frame f = { .buf = b, .len = (uint32_t)len };
		uint64_t before = refused(rx[c]);

		REQUIRE(fc_encap_psp_ops.open(rx[c], &f) != 0);
		REQUIRE(refused(rx[c]) == before + 1);
	}

	/* seal the input as a Falcon packet: it opens to the same bytes */
	if (len >= 4) {
		struct fc_frame f = { .buf = b, .cap = (uint32_t)(len + 32), .peer_idx = 0 };

		memcpy(b + FC_PSP_HDR_LEN, data + 1, len);
		clk += mode >> 2;
		REQUIRE(fc_encap_psp_ops.seal(tx[c], &f, (uint32_t)len) == 0);
		f = (struct fc_frame){ .buf = b, .len = f.len };
		REQUIRE(fc_encap_psp_ops.open(rx[c], &f) == 0);
		REQUIRE(f.len == len && !memcmp(f.buf, data + 1, len));
	}
	free(b);
	return 0;
}
