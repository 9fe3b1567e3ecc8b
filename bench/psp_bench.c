/* SPDX-License-Identifier: Apache-2.0 */
/*
 * psp_bench - the cost per packet of the node's encapsulation step: seal and open of
 * daemon/encap_psp.c under each cipher this CPU runs, beside the NULL encapsulation of
 * `security none` (daemon/encap_null.c), at 64 B, 1 KiB and 4 KiB Falcon packets.
 * PSP version 1 (AES-256-GCM) runs through OpenSSL's libcrypto; for comparison the same
 * frames through libsodium's AES-256-GCM (what encap_psp.c used before: one beforenm per
 * key, encrypt/decrypt_detached_afternm per packet, the same header, clock and AAD; no
 * SPI lookup), and per size the ratio libcrypto / libsodium in Gbit/s.
 *
 *   psp_bench           the table (make bench-psp)
 *   psp_bench --quick   a short run (smoke)
 *
 * One core, in place, a batch of 64 frames at a time: seal all 64 (timed), open all 64
 * (timed; opening restores the plaintext, so the next round seals the same bytes again).
 * The IV clock is CLOCK_MONOTONIC, as falcond's; its cost is in both columns of every
 * row, NULL included (and in the libsodium reference). Each cell is the best of 5 runs. ns from CLOCK_MONOTONIC, cycles
 * from the TSC (reference cycles at the TSC rate, not core cycles under turbo). Every
 * open is checked to succeed and every payload byte compared once per run.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t cycles(void) { return __rdtsc(); }
#define HAVE_TSC 1
#else
static inline uint64_t cycles(void) { return 0; }
#define HAVE_TSC 0
#endif

#include <sodium.h>

#include "encap_null.h"
#include "encap_psp.h"
#include "wire_outer.h"

#define BATCH 64u
#define RUNS 5
#define MAX_PAYLOAD 4096u
#define FRAME_CAP (FC_PSP_HDR_LEN + MAX_PAYLOAD + FC_PSP_ICV_LEN)

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns_ctx(void *ctx)
{
	(void)ctx;
	return mono_ns();
}

/* The reference: PSP version 1 sealed and opened by libsodium (the former encap_psp.c). */
struct sodium_gcm {
	crypto_aead_aes256gcm_state st;
	uint32_t spi;
	uint64_t last_iv;
};

#define AAD_LEN (FC_PSP_HDR_LEN + 4u * FC_PSP_CRYPT_OFF_FALCON)

static int sodium_seal(void *ctx, struct fc_frame *f, uint32_t len)
{
	struct sodium_gcm *g = ctx;
	uint64_t now = mono_ns();
	struct fc_psp_info h = {
		.next_hdr = FC_PSP_NEXT_HDR_FALCON, .crypt_off = FC_PSP_CRYPT_OFF_FALCON,
		.version = FC_PSP_VER_AES_GCM_256, .spi = g->spi,
		.iv = now > g->last_iv ? now : g->last_iv + 1,
	};
	uint8_t *p = f->buf;

	if (fc_psp_encode(&h, p, FC_PSP_HDR_LEN) != FC_PSP_HDR_LEN)
		return -EINVAL;
	g->last_iv = h.iv;
	crypto_aead_aes256gcm_encrypt_detached_afternm(p + AAD_LEN, p + FC_PSP_HDR_LEN + len,
						       NULL, p + AAD_LEN, len - 4, p, AAD_LEN,
						       NULL, p + 4, &g->st);
	f->len = FC_PSP_HDR_LEN + len + FC_PSP_ICV_LEN;
	return 0;
}

static int sodium_open(void *ctx, struct fc_frame *f)
{
	struct sodium_gcm *g = ctx;
	struct fc_psp_info h;
	size_t off, len;
	uint8_t *p = f->buf;

	if (fc_psp_decode(p, f->len, &h, &off, &len) < 0 || h.spi != g->spi)
		return -EPROTO;
	if (crypto_aead_aes256gcm_decrypt_detached_afternm(p + AAD_LEN, NULL, p + AAD_LEN,
							   len - 4, p + off + len, p, AAD_LEN,
							   p + 4, &g->st))
		return -EBADMSG;
	f->buf = p + off;
	f->len = (uint32_t)len;
	return 0;
}

static const struct fc_encap_ops sodium_ops = {
	.headroom = FC_PSP_HDR_LEN, .tailroom = FC_PSP_ICV_LEN,
	.seal = sodium_seal, .open = sodium_open,
};

struct result {
	double seal_ns, seal_cyc, open_ns, open_cyc;
};

static uint8_t frames[BATCH][FRAME_CAP];

static void die(const char *what, int err)
{
	fprintf(stderr, "psp_bench: %s: %s\n", what, strerror(err));
	exit(1);
}

/* rounds x BATCH packets of len bytes through ops (tx and rx contexts); best of RUNS. */
static struct result run(const struct fc_encap_ops *ops, void *tx, void *rx, uint32_t peer,
			 uint32_t len, uint32_t rounds)
{
	struct result best = { 1e30, 1e30, 1e30, 1e30 };
	struct fc_frame f[BATCH];

	for (int r = 0; r < RUNS; r++) {
		uint64_t s_ns = 0, s_cyc = 0, o_ns = 0, o_cyc = 0;

		for (uint32_t k = 0; k < BATCH; k++)
			for (uint32_t i = 0; i < len; i++)
				frames[k][FC_PSP_HDR_LEN + i] = (uint8_t)(i * 7 + k + r);
		for (uint32_t round = 0; round <= rounds; round++) { /* round 0 warms up */
			uint64_t t0, c0, t1, c1, t2, c2;

			t0 = mono_ns();
			c0 = cycles();
			for (uint32_t k = 0; k < BATCH; k++) {
				f[k] = (struct fc_frame){ .buf = frames[k], .cap = FRAME_CAP,
							  .peer_idx = peer };
				if (ops->seal(tx, &f[k], len))
					die("seal", EIO);
			}
			c1 = cycles();
			t1 = mono_ns();
			for (uint32_t k = 0; k < BATCH; k++) {
				f[k] = (struct fc_frame){ .buf = frames[k], .len = f[k].len };
				if (ops->open(rx, &f[k]) || f[k].len != len)
					die("open", EBADMSG);
			}
			c2 = cycles();
			t2 = mono_ns();
			if (round) {
				s_ns += t1 - t0, s_cyc += c1 - c0;
				o_ns += t2 - t1, o_cyc += c2 - c1;
			}
		}
		for (uint32_t k = 0; k < BATCH; k++)
			for (uint32_t i = 0; i < len; i++)
				if (frames[k][FC_PSP_HDR_LEN + i] != (uint8_t)(i * 7 + k + r))
					die("payload changed", EBADMSG);
		double n = (double)rounds * BATCH;
		if (s_ns / n < best.seal_ns)
			best.seal_ns = (double)s_ns / n, best.seal_cyc = (double)s_cyc / n;
		if (o_ns / n < best.open_ns)
			best.open_ns = (double)o_ns / n, best.open_cyc = (double)o_cyc / n;
	}
	return best;
}

static void row(const char *size, const char *name, uint32_t len, struct result r)
{
	double gbit_seal = len * 8.0 / r.seal_ns, gbit_open = len * 8.0 / r.open_ns;

	if (HAVE_TSC)
		printf("%-7s %-26s %8.1f %9.0f %8.1f %9.0f %9.2f %9.2f\n", size, name, r.seal_ns,
		       r.seal_cyc, r.open_ns, r.open_cyc, gbit_seal, gbit_open);
	else
		printf("%-7s %-26s %8.1f %9s %8.1f %9s %9.2f %9.2f\n", size, name, r.seal_ns, "-",
		       r.open_ns, "-", gbit_seal, gbit_open);
}

int main(int argc, char **argv)
{
	static const struct { uint32_t len; const char *name; } sizes[] = {
		{ 64, "64 B" }, { 1024, "1 KiB" }, { 4096, "4 KiB" },
	};
	static const struct { unsigned int ver; const char *name; } ciphers[] = {
		{ FC_PSP_VER_AES_GCM_256, "psp aes-256-gcm (1)" },
		{ FC_PSP_VER_CHACHA20_POLY1305, "psp chacha20-poly1305 (0xC)" },
	};
	int quick = argc > 1 && !strcmp(argv[1], "--quick");
	struct fc_encap_psp *tx[2] = { 0 }, *rx[2] = { 0 };
	struct fc_encap_null nul = { .now_ns = mono_ns };
	static struct sodium_gcm sod; /* static: the AES state wants 16-byte alignment */
	bool have_sodium;

	if (fc_psp_crypto_init())
		die("libsodium", EIO);
	for (int c = 0; c < 2; c++) {
		struct fc_encap_psp_cfg cfg = {
			.version = (uint8_t)ciphers[c].ver, .max_peers = 4, .now_ns = mono_ns_ctx,
		};
		uint8_t key[FC_PSP_KEY_LEN];
		uint32_t spi;

		if (!fc_psp_cipher_available(ciphers[c].ver))
			continue;
		tx[c] = fc_encap_psp_new(&cfg);
		rx[c] = fc_encap_psp_new(&cfg);
		if (!tx[c] || !rx[c])
			die("fc_encap_psp_new", errno);
		if (fc_encap_psp_rx_issue(rx[c], 0, &spi, key) ||
		    fc_encap_psp_tx_set(tx[c], 1, spi, key))
			die("keys", EINVAL);
	}
	have_sodium = tx[0] && crypto_aead_aes256gcm_is_available();
	if (have_sodium) { /* its own key; only the cost matters */
		uint8_t key[FC_PSP_KEY_LEN];

		randombytes_buf(key, sizeof(key));
		crypto_aead_aes256gcm_beforenm(&sod.st, key);
		sodium_memzero(key, sizeof(key));
		sod.spi = 1;
	}
	printf("encapsulation cost per packet, one core, in place, batches of %u, best of %d;\n"
	       "IV clock CLOCK_MONOTONIC; cycles = TSC; AES-256-GCM %s on this CPU\n",
	       BATCH, RUNS, fc_psp_cipher_available(FC_PSP_VER_AES_GCM_256) ? "available"
									    : "NOT available");
	printf("%-7s %-26s %8s %9s %8s %9s %9s %9s\n", "payload", "encap", "seal ns", "seal cyc",
	       "open ns", "open cyc", "seal Gb/s", "open Gb/s");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t len = sizes[s].len;
		uint32_t rounds = (quick ? 20000u : 400000u) / BATCH / (len >= 1024 ? 4 : 1);

		row(sizes[s].name, "null (0xF, security none)", len,
		    run(&fc_encap_null_ops, &nul, &nul, 0, len, rounds));
		struct result r[2] = { 0 };

		for (int c = 0; c < 2; c++)
			if (tx[c]) {
				r[c] = run(&fc_encap_psp_ops, tx[c], rx[c], 1, len, rounds);
				row(sizes[s].name, ciphers[c].name, len, r[c]);
			}
		if (have_sodium) {
			struct result ref = run(&sodium_ops, &sod, &sod, 1, len, rounds);

			row(sizes[s].name, "libsodium aes-256-gcm (ref)", len, ref);
			printf("%-7s %-26s seal %.2fx, open %.2fx\n", sizes[s].name,
			       "aes-gcm libcrypto/sodium", ref.seal_ns / r[0].seal_ns,
			       ref.open_ns / r[0].open_ns);
		}
	}
	sodium_memzero(&sod, sizeof(sod));
	for (int c = 0; c < 2; c++) {
		fc_encap_psp_free(tx[c]);
		fc_encap_psp_free(rx[c]);
	}
	return 0;
}
