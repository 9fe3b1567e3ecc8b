/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encap_psp.h - the node's encapsulation in `security psp` mode: PSP transport mode
 * around every Falcon packet (docs/wire.md section 2, the PSP architecture; spec 7.1,
 * 9.2.2.1-9.2.2.3). AES-256-GCM through OpenSSL 3's libcrypto (EVP; VAES/AVX-512 where
 * the CPU has them: 2-2.7x libsodium's AES-NI code at 4 KiB, 1.4-1.6x at 1 KiB, but
 * ~0.7x at 64 B, where EVP's fixed ~70 ns per packet dominates: make bench-psp);
 * ChaCha20-Poly1305, the key derivation and the locked key memory through libsodium.
 *
 *   | PSP header 16 | Falcon word 0 (CID) 4 | rest of the Falcon packet ... | ICV 16 |
 *   |<------------ AAD (clear) ----------->|<------- encrypted ----------->|
 *
 * Header: next header 252, hdr ext len 1, crypt offset FC_PSP_CRYPT_OFF_FALCON (1: the
 * Falcon header's first 4 bytes, version and destination CID, stay in the clear for
 * steering), S = D = V = 0, version = the configured cipher:
 *   FC_PSP_VER_AES_GCM_256        PSP version 1, AES-256-GCM (libcrypto); byte for byte
 *                                 what libsodium's crypto_aead_aes256gcm gives
 *                                 (tests/unit/test_encap_psp.c checks both ways)
 *   FC_PSP_VER_CHACHA20_POLY1305  0xC, falcon private, ChaCha20-Poly1305 IETF
 * Both ends must use the same one (the CM negotiates it; fc_psp_cipher_best() says which
 * this CPU runs). AAD = the PSP header up to the crypt offset (bytes 0..19) as PSP defines
 * it; nonce = SPI (4 bytes, big endian) || IV (8 bytes, big endian), that is header bytes
 * 4..15; the 16-byte ICV follows the ciphertext. Sealing and opening are in place.
 *
 * The IV is the 64-bit transmit time in ns, strictly increasing per SA (the previous IV
 * + 1 when the clock has not advanced), as encap_null.h: a nonce never repeats under a
 * key, and it is the timestamp of replay protection (9.2.2.2) and of t1.
 *
 * Keys. Transmit: one SA per peer (the node's peer index, struct fc_frame.peer_idx), the
 * SPI and key the peer's receiver issued, installed by the CM. Receive: SPI bit 31 is
 * the key phase (the low bit of the key generation, spec 9.2.2.3 "SPI generation"); the
 * key of an SPI is crypto_kdf_derive_from_key(master[phase], subkey id = version << 32 |
 * SPI, so the two ciphers never share a key), so the receiver keeps only two master keys
 * (current and previous phase) and derives; derived
 * keys sit in a bounded direct-mapped cache so the data path runs no KDF per packet. The
 * SPIs this layer issues have the form
 *   bit 31 = generation & 1 | bits 30:16 = (generation >> 1) & 0x7FFF | bits 15:0 = peer + 1
 * one per peer and generation, never 0 (spec 9.2.2.3: SPI 0 = not configured); open
 * refuses an SPI that was not issued in the current generation or, until
 * fc_encap_psp_rx_erase_prev(), the previous one.
 *
 * Key rotation without loss (spec 9.2.2.3): fc_encap_psp_rx_rotate() starts a new
 * generation (a new master key for the other phase), packets of both phases are accepted;
 * the CM issues every peer its new SPI (fc_encap_psp_rx_issue) and sends it; once the
 * senders use it (a few RTTs), fc_encap_psp_rx_erase_prev() wipes the old master key and
 * refuses the old phase from then on.
 *
 * What open does not do, because it needs the connection: the per-connection SPI check
 * (9.2.2.3, on f->meta.spi) and replay protection (9.2.2.2, fc_psp_replay_check() below
 * on f->meta.tx_ns). The node runs both after open, before the engine sees the packet.
 *
 * Secrets (master keys, derived and tx keys) live in one block that is locked in memory
 * where the RLIMIT allows (sodium_mlock: no swap, no core dump), are never logged, and
 * are wiped (sodium_memzero) when replaced, erased or freed. Under AES-256-GCM each tx
 * key and each cached rx key also has a libcrypto cipher context, set up once with the
 * key (its expansion lives in OpenSSL's memory, not the locked block; per packet only
 * the IV is set) and freed, which clears it, whenever the raw key is wiped. Not
 * thread-safe: one node, one thread, as the node.
 */
#ifndef FC_ENCAP_PSP_H
#define FC_ENCAP_PSP_H

#include <stdbool.h>
#include <stdint.h>

#include "falcon/wire.h"
#include "node.h"

#define FC_PSP_KEY_LEN 32u             /* tx keys, master keys (crypto_kdf_KEYBYTES) */
#define FC_PSP_SPI_PHASE 0x80000000u   /* SPI bit 31: the key phase */
#define FC_PSP_PEERS_MAX 0xFFFFu       /* peer + 1 fits SPI bits 15:0 */
#define FC_PSP_KEY_CACHE_DEFAULT 256u  /* derived receive keys kept */
#define FC_PSP_KEY_CACHE_MAX 65536u
/* Smallest frame open takes: header, the clear Falcon word 0, ICV (9.2.2.1). */
#define FC_PSP_FRAME_MIN (FC_PSP_HDR_LEN + 4u * FC_PSP_CRYPT_OFF_FALCON + FC_PSP_ICV_LEN)

/*
 * sodium_init(), once per process (later calls return its first result). Returns 0 or
 * -EIO (libsodium could not initialize: no cipher is usable). fc_encap_psp_new() calls it.
 */
int fc_psp_crypto_init(void);

/* The cipher this CPU runs best: FC_PSP_VER_AES_GCM_256 where the CPU has AES-NI and
 * PCLMULQDQ (__builtin_cpu_supports "aes" and "pclmul"; x86 only: libcrypto would run
 * AES-GCM anywhere, but without them ChaCha20-Poly1305 is faster), else
 * FC_PSP_VER_CHACHA20_POLY1305. -EIO if libsodium cannot initialize. */
int fc_psp_cipher_best(void);

/* Can this CPU seal and open with PSP version v? (ChaCha20-Poly1305 always, AES-256-GCM
 * with AES-NI and PCLMULQDQ as fc_psp_cipher_best; every other version no.) */
bool fc_psp_cipher_available(unsigned int v);

struct fc_encap_psp_cfg {
	uint8_t version;          /* FC_PSP_VER_AES_GCM_256 or FC_PSP_VER_CHACHA20_POLY1305 */
	uint32_t max_peers;       /* peer indexes 0 .. max_peers - 1, at most FC_PSP_PEERS_MAX */
	uint32_t key_cache_slots; /* derived rx keys kept: a power of two, at most
				   * FC_PSP_KEY_CACHE_MAX; 0 = FC_PSP_KEY_CACHE_DEFAULT */
	uint64_t (*now_ns)(void *ctx); /* the sender's clock, ns (the IV's source) */
	void *now_ctx;
	const uint8_t *master_key; /* FC_PSP_KEY_LEN bytes: the receive master key of
				    * generation 0 (copied); NULL = a random one */
};

/* Drops and events, per reason. Only the node's thread writes them. */
struct fc_encap_psp_counters {
	uint64_t tx_sealed;
	uint64_t tx_no_sa;       /* seal for a peer without a tx SA (or out of range) */
	uint64_t tx_err;         /* seal refused: frame too small, packet shorter than the
				  * crypt offset, IV space exhausted */
	uint64_t rx_opened;
	uint64_t rx_too_short;   /* shorter than FC_PSP_FRAME_MIN (9.2.2.1) */
	uint64_t rx_bad_hdr;     /* not our PSP header: next header, version (another cipher),
				  * hdr ext len / V, crypt offset, the always-1 bit (9.2.2.1) */
	uint64_t rx_unknown_spi; /* an SPI we never issued (or issued to no one now) */
	uint64_t rx_old_phase;   /* an SPI of an erased key phase / older generation */
	uint64_t rx_auth_fail;   /* the ICV did not verify (9.2.2.1 "fails decryption") */
	uint64_t rx_key_derived; /* KDF runs on open (key cache misses) */
};

struct fc_encap_psp;

/* Returns NULL and sets errno: EINVAL (version not one of the two ciphers, max_peers 0 or
 * above FC_PSP_PEERS_MAX, cache slots not a power of two or too many, no now_ns), ENOTSUP
 * (version is AES-256-GCM and this CPU cannot run it), EIO (libsodium), ENOMEM. */
struct fc_encap_psp *fc_encap_psp_new(const struct fc_encap_psp_cfg *cfg);
/* Wipes every key and frees. NULL is a no-op. */
void fc_encap_psp_free(struct fc_encap_psp *e);

/* seal (ctx = struct fc_encap_psp *): the Falcon packet lies at f->buf + 16, len bytes;
 * writes the PSP header in front and the ICV behind it, encrypts in place under the SA
 * of peer f->peer_idx, sets f->len = 16 + len + 16. Returns 0 or -ENOENT (no SA for that
 * peer), -EINVAL (len < 4: the crypt offset lies past the packet), -ENOSPC (f->cap <
 * 32 + len), -EOVERFLOW (the SA's IV reached UINT64_MAX: a nonce would repeat), -EIO
 * (libcrypto refused); all but -ENOENT (tx_no_sa) counted in tx_err.
 * open: checks, then authenticates and decrypts in place; on success f->buf / f->len
 * are the Falcon packet, f->meta.tx_ns = the IV, f->meta.spi = the SPI. Returns 0 or
 * -EPROTO (too short or bad header), -ENOKEY (SPI never issued), -EKEYEXPIRED (SPI of
 * an erased phase or older generation), -EBADMSG (ICV did not verify), each counted, or
 * -ENOMEM (libcrypto could not set up the key of a cache miss; not counted here, the node
 * counts every failed open); the frame's bytes are unspecified after a failure (the node
 * drops it). */
extern const struct fc_encap_ops fc_encap_psp_ops;

const struct fc_encap_psp_counters *fc_encap_psp_counters(const struct fc_encap_psp *e);
/* The configured cipher (PSP version). */
unsigned int fc_encap_psp_version(const struct fc_encap_psp *e);

/* ---- transmit SAs (the CM installs what the peer's receiver issued) ---- */

/* Install or replace the tx SA of peer: spi (bit 31 = key phase, never 0) and its
 * FC_PSP_KEY_LEN-byte key (copied; the old key is wiped). The IV stays strictly
 * increasing across the replacement. Returns 0 or -EINVAL (peer >= max_peers, spi 0),
 * -ENOMEM (libcrypto could not set the key up; the old SA is gone too: seal refuses
 * -ENOENT). */
int fc_encap_psp_tx_set(struct fc_encap_psp *e, uint32_t peer, uint32_t spi,
			const uint8_t key[FC_PSP_KEY_LEN]);
/* Remove (and wipe) the tx SA of peer: its frames are refused (-ENOENT) until the next
 * fc_encap_psp_tx_set. Returns 0 or -EINVAL (peer out of range). */
int fc_encap_psp_tx_clear(struct fc_encap_psp *e, uint32_t peer);

/* ---- receive SPIs and keys ---- */

/* The SPI of peer in the current generation, issued on the first call (later calls
 * return the same one until the next rotation) and, in key (if not NULL), its
 * FC_PSP_KEY_LEN-byte key: what the CM sends to that peer's transmitter (inside its
 * encrypted handshake; the caller wipes key with sodium_memzero once sent). Returns 0
 * or -EINVAL (peer >= max_peers). */
int fc_encap_psp_rx_issue(struct fc_encap_psp *e, uint32_t peer, uint32_t *spi,
			  uint8_t key[FC_PSP_KEY_LEN]);
/* Key rotation, spec 9.2.2.3 step 1: generation + 1 with master_key (FC_PSP_KEY_LEN
 * bytes, copied; NULL = random) for its phase; packets of the previous generation stay
 * accepted. The generation before that (the phase being reused) is erased now if
 * fc_encap_psp_rx_erase_prev() did not erase it already. Returns the new generation. */
uint64_t fc_encap_psp_rx_rotate(struct fc_encap_psp *e, const uint8_t *master_key);
/* Spec 9.2.2.3 step 5: stop accepting the previous generation; wipe its master key, its
 * derived keys and its SPIs. A no-op when there is none. */
void fc_encap_psp_rx_erase_prev(struct fc_encap_psp *e);
/* The current generation (0 at creation, + 1 per rotation); its low bit is the phase. */
uint64_t fc_encap_psp_rx_gen(const struct fc_encap_psp *e);

/* ---- replay protection (spec 9.2.2.2), per connection, run by the node ---- */

/*
 * Accept a packet whose PSP IV is iv when (remote time - margin) < iv in modulo 2^64
 * arithmetic, and then advance *remote_time to iv if iv is newer; refuse (return false,
 * *remote_time unchanged) otherwise. A refused packet must cause no ACK or NACK.
 * margin_ns is the configured replay protection margin (reordering jitter, well below
 * the PSN wrap time); *remote_time starts at the CM's estimate of the sender's clock.
 * Modulo comparison: a is before b when (int64_t)(b - a) > 0, so it holds across the
 * 2^64 wrap as long as the two are within 2^63 ns of each other.
 */
static inline bool fc_psp_replay_check(uint64_t *remote_time, uint64_t iv, uint64_t margin_ns)
{
	uint64_t floor_ns = *remote_time - margin_ns;

	if ((int64_t)(iv - floor_ns) <= 0)
		return false;
	if ((int64_t)(iv - *remote_time) > 0)
		*remote_time = iv;
	return true;
}

#endif
