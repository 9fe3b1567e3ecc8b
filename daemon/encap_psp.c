/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encap_psp.c - PSP transport mode around every Falcon packet: AES-256-GCM through
 * OpenSSL's libcrypto (EVP), ChaCha20-Poly1305 and the key derivation through libsodium
 * (encap_psp.h; docs/wire.md section 2; spec 7.1, 9.2.2.1-9.2.2.3).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "encap_psp.h"
#include "wire_outer.h"

/* AAD: the PSP header up to the crypt offset (PSP transport mode). */
#define PSP_AAD_LEN (FC_PSP_HDR_LEN + 4u * FC_PSP_CRYPT_OFF_FALCON)
/* The nonce is header bytes 4..15: SPI || IV, both big endian already. */
#define PSP_NONCE_OFF 4u
#define SPI_PEER_MASK 0xFFFFu
#define SPI_GEN_SHIFT 16
#define SPI_GEN_MASK 0x7FFFu
#define GEN16_MASK 0xFFFFu
/* crypto_kdf context: 8 bytes, no terminator used */
static const char kdf_ctx[crypto_kdf_CONTEXTBYTES] = { 'f', 'a', 'l', 'c', 'n', 'p', 's', 'p' };

_Static_assert(FC_PSP_KEY_LEN == crypto_kdf_KEYBYTES, "master key = KDF key");
#define PSP_NONCE_LEN 12 /* AES-GCM: SET_IVLEN; the GCM IV of 96 bits (no GHASH of it) */
_Static_assert(FC_PSP_KEY_LEN == 32, "aes-256 key");
_Static_assert(FC_PSP_KEY_LEN == crypto_aead_chacha20poly1305_ietf_KEYBYTES, "chacha key");
_Static_assert(crypto_aead_chacha20poly1305_ietf_NPUBBYTES == PSP_NONCE_LEN,
	       "nonce = SPI || IV");
_Static_assert(crypto_aead_chacha20poly1305_ietf_ABYTES == FC_PSP_ICV_LEN, "ICV");

/* One key ready for the data path. The raw key lives in the locked block; for
 * AES-256-GCM a libcrypto context holds its expansion (OpenSSL's memory; freed, which
 * clears it, whenever the raw key is wiped: key_wipe). */
struct psp_key {
	uint8_t raw[FC_PSP_KEY_LEN];
	EVP_CIPHER_CTX *gcm; /* AES-256-GCM only, NULL otherwise; tx: encrypt, rx: decrypt */
};

/* Every secret of one instance, in one block (mlocked where allowed, wiped on free). */
struct psp_secrets {
	uint8_t master[2][FC_PSP_KEY_LEN]; /* receive master key per phase */
	struct psp_key keys[];             /* max_peers tx keys, then the rx key cache */
};

struct psp_tx_sa {
	uint32_t spi;     /* 0 = no SA */
	uint64_t last_iv; /* the last IV sent: the next is strictly greater */
};

struct fc_encap_psp {
	struct fc_encap_psp_cfg cfg; /* master_key is not kept */
	struct fc_encap_psp_counters cnt;
	uint64_t gen;     /* current generation; phase = gen & 1 */
	bool prev_ok;     /* the previous generation is still accepted (9.2.2.3) */
	uint32_t cache_mask;
	struct psp_tx_sa *tx;   /* [max_peers] */
	uint32_t (*rx_spi)[2];  /* [max_peers][phase]: SPI issued, 0 = none */
	uint32_t *cache_spi;    /* [slots]: SPI of the cached key, 0 = empty */
	struct psp_key *tx_key; /* in sec */
	struct psp_key *cache_key;
	struct psp_secrets *sec;
	size_t sec_len;
	bool sec_locked;
};

/* ------------------------------------------------------------------------ */
/* libsodium and libcrypto                                                    */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc = -EIO;

static void init_sodium(void) { init_rc = sodium_init() < 0 ? -EIO : 0; }

int fc_psp_crypto_init(void)
{
	pthread_once(&init_once, init_sodium);
	return init_rc;
}

/* The policy: AES-256-GCM where the CPU has AES-NI and carry-less multiply (libcrypto
 * runs it on any CPU, but without them ChaCha20-Poly1305 is the faster one). */
static bool cpu_has_aes_gcm(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#else
	return false;
#endif
}

int fc_psp_cipher_best(void)
{
	if (fc_psp_crypto_init())
		return -EIO;
	return cpu_has_aes_gcm() ? FC_PSP_VER_AES_GCM_256 : FC_PSP_VER_CHACHA20_POLY1305;
}

bool fc_psp_cipher_available(unsigned int v)
{
	if (fc_psp_crypto_init())
		return false;
	if (v == FC_PSP_VER_AES_GCM_256)
		return cpu_has_aes_gcm();
	return v == FC_PSP_VER_CHACHA20_POLY1305;
}

/* Wipe k: the raw key, and the expanded one with its context. */
static void key_wipe(struct psp_key *k)
{
	EVP_CIPHER_CTX_free(k->gcm); /* clears the key schedule; NULL is a no-op */
	sodium_memzero(k, sizeof(*k));
}

/* Wipe k, then make it ready for raw (enc: seal with it, else open). 0 or -ENOMEM
 * (libcrypto could not allocate or set up the context; k is left wiped). */
static int key_load(unsigned int v, struct psp_key *k, const uint8_t raw[FC_PSP_KEY_LEN],
		    bool enc)
{
	key_wipe(k);
	if (v != FC_PSP_VER_AES_GCM_256) {
		memcpy(k->raw, raw, FC_PSP_KEY_LEN);
		return 0;
	}
	k->gcm = EVP_CIPHER_CTX_new();
	/* the key is expanded once here; per packet only the IV is set */
	if (!k->gcm || EVP_CipherInit_ex(k->gcm, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) != 1 ||
	    EVP_CIPHER_CTX_ctrl(k->gcm, EVP_CTRL_GCM_SET_IVLEN, PSP_NONCE_LEN, NULL) != 1 ||
	    EVP_CipherInit_ex(k->gcm, NULL, NULL, raw, NULL, enc) != 1) {
		key_wipe(k);
		return -ENOMEM;
	}
	memcpy(k->raw, raw, FC_PSP_KEY_LEN);
	return 0;
}

/* AES-256-GCM seal of p[0..len) in place, ICV to icv. 0 or -EIO (libcrypto refused). */
static int gcm_seal(EVP_CIPHER_CTX *c, uint8_t *p, size_t len, uint8_t *icv,
		    const uint8_t *aad, const uint8_t *nonce)
{
	int outl;

	if (len > INT_MAX || EVP_EncryptInit_ex(c, NULL, NULL, NULL, nonce) != 1 ||
	    EVP_EncryptUpdate(c, NULL, &outl, aad, (int)PSP_AAD_LEN) != 1 ||
	    EVP_EncryptUpdate(c, p, &outl, p, (int)len) != 1 || (size_t)outl != len ||
	    EVP_EncryptFinal_ex(c, p + len, &outl) != 1 || outl != 0 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, FC_PSP_ICV_LEN, icv) != 1)
		return -EIO;
	return 0;
}

/* AES-256-GCM open of p[0..len) in place. 0 or -1 (forged, or libcrypto refused). */
static int gcm_open(EVP_CIPHER_CTX *c, uint8_t *p, size_t len, const uint8_t *icv,
		    const uint8_t *aad, const uint8_t *nonce)
{
	uint8_t tag[FC_PSP_ICV_LEN];
	int outl;

	memcpy(tag, icv, sizeof(tag)); /* SET_TAG takes a mutable pointer */
	if (len > INT_MAX || EVP_DecryptInit_ex(c, NULL, NULL, NULL, nonce) != 1 ||
	    EVP_DecryptUpdate(c, NULL, &outl, aad, (int)PSP_AAD_LEN) != 1 ||
	    EVP_DecryptUpdate(c, p, &outl, p, (int)len) != 1 || (size_t)outl != len ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, FC_PSP_ICV_LEN, tag) != 1 ||
	    EVP_DecryptFinal_ex(c, p + len, &outl) != 1) /* the ICV check */
		return -1;
	return 0;
}

/* Encrypt p[0..len) in place, ICV to icv. 0 or -EIO. */
static int aead_seal(unsigned int v, const struct psp_key *k, uint8_t *p, size_t len,
		     uint8_t *icv, const uint8_t *aad, const uint8_t *nonce)
{
	if (v == FC_PSP_VER_AES_GCM_256)
		return gcm_seal(k->gcm, p, len, icv, aad, nonce);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(p, icv, NULL, p, len, aad, PSP_AAD_LEN,
							   NULL, nonce, k->raw);
	return 0;
}

/* Verify and decrypt p[0..len) in place. 0 or -1 (forged). */
static int aead_open(unsigned int v, const struct psp_key *k, uint8_t *p, size_t len,
		     const uint8_t *icv, const uint8_t *aad, const uint8_t *nonce)
{
	if (v == FC_PSP_VER_AES_GCM_256)
		return gcm_open(k->gcm, p, len, icv, aad, nonce);
	return crypto_aead_chacha20poly1305_ietf_decrypt_detached(p, NULL, p, len, icv, aad,
								  PSP_AAD_LEN, nonce, k->raw);
}

/* ------------------------------------------------------------------------ */
/* receive SPIs and keys (spec 9.2.2.3)                                       */

static uint32_t spi_make(uint64_t gen, uint32_t peer)
{
	return (uint32_t)(gen & 1) << 31 | (uint32_t)((gen >> 1) & SPI_GEN_MASK) << SPI_GEN_SHIFT |
	       (peer + 1);
}

/* The low 16 bits of the generation an SPI of spi_make() names. */
static uint32_t spi_gen16(uint32_t spi)
{
	return ((spi >> SPI_GEN_SHIFT) & SPI_GEN_MASK) << 1 | spi >> 31;
}

/* The key of spi: KDF(master of its phase, subkey id = cipher << 32 | SPI), so the two
 * ciphers never share a key. */
static void derive(const struct fc_encap_psp *e, uint32_t spi, uint8_t out[FC_PSP_KEY_LEN])
{
	uint64_t id = (uint64_t)e->cfg.version << 32 | spi;

	crypto_kdf_derive_from_key(out, FC_PSP_KEY_LEN, id, kdf_ctx, e->sec->master[spi >> 31]);
}

/* Direct-mapped: without collisions while 2 * peers <= slots. */
static uint32_t cache_slot(const struct fc_encap_psp *e, uint32_t spi)
{
	return (((spi & SPI_PEER_MASK) - 1) << 1 | spi >> 31) & e->cache_mask;
}

/* Forget phase p: master key, SPIs issued in it, cached keys. */
static void erase_phase(struct fc_encap_psp *e, unsigned int p)
{
	sodium_memzero(e->sec->master[p], FC_PSP_KEY_LEN);
	for (uint32_t i = 0; i < e->cfg.max_peers; i++)
		e->rx_spi[i][p] = 0;
	for (uint32_t i = 0; i <= e->cache_mask; i++) {
		if (e->cache_spi[i] && (e->cache_spi[i] >> 31) == p) {
			key_wipe(&e->cache_key[i]);
			e->cache_spi[i] = 0;
		}
	}
}

static void master_set(struct fc_encap_psp *e, unsigned int p, const uint8_t *master)
{
	if (master)
		memcpy(e->sec->master[p], master, FC_PSP_KEY_LEN);
	else
		crypto_kdf_keygen(e->sec->master[p]);
}

/* The key to open spi with, deriving it on a cache miss. Counts and returns -ENOKEY /
 * -EKEYEXPIRED as fc_encap_psp_ops.open. */
static int rx_key(struct fc_encap_psp *e, uint32_t spi, const struct psp_key **out)
{
	uint32_t peer1 = spi & SPI_PEER_MASK, phase = spi >> 31, slot;
	uint32_t d = ((uint32_t)e->gen - spi_gen16(spi)) & GEN16_MASK; /* generations ago */

	if (d != 0 && !(d == 1 && e->prev_ok)) {
		if (d <= SPI_GEN_MASK && d <= e->gen) { /* a generation we had, now erased */
			e->cnt.rx_old_phase++;
			return -EKEYEXPIRED;
		}
		e->cnt.rx_unknown_spi++; /* a generation we never had */
		return -ENOKEY;
	}
	if (peer1 == 0 || peer1 > e->cfg.max_peers || e->rx_spi[peer1 - 1][phase] != spi) {
		e->cnt.rx_unknown_spi++;
		return -ENOKEY;
	}
	slot = cache_slot(e, spi);
	if (e->cache_spi[slot] != spi) {
		uint8_t raw[FC_PSP_KEY_LEN];

		int rc;

		derive(e, spi, raw);
		rc = key_load(e->cfg.version, &e->cache_key[slot], raw, false);
		sodium_memzero(raw, sizeof(raw));
		if (rc) {
			e->cache_spi[slot] = 0; /* the slot was wiped */
			return rc;
		}
		e->cache_spi[slot] = spi;
		e->cnt.rx_key_derived++;
	}
	*out = &e->cache_key[slot];
	return 0;
}

int fc_encap_psp_rx_issue(struct fc_encap_psp *e, uint32_t peer, uint32_t *spi,
			  uint8_t key[FC_PSP_KEY_LEN])
{
	unsigned int p = (unsigned int)(e->gen & 1);

	if (peer >= e->cfg.max_peers)
		return -EINVAL;
	if (!e->rx_spi[peer][p])
		e->rx_spi[peer][p] = spi_make(e->gen, peer);
	*spi = e->rx_spi[peer][p];
	if (key)
		derive(e, *spi, key);
	return 0;
}

uint64_t fc_encap_psp_rx_rotate(struct fc_encap_psp *e, const uint8_t *master_key)
{
	/* the new generation takes the phase of the previous one: that one goes now */
	erase_phase(e, (unsigned int)((e->gen + 1) & 1));
	e->gen++;
	master_set(e, (unsigned int)(e->gen & 1), master_key);
	e->prev_ok = true;
	return e->gen;
}

void fc_encap_psp_rx_erase_prev(struct fc_encap_psp *e)
{
	if (!e->prev_ok)
		return;
	erase_phase(e, (unsigned int)((e->gen + 1) & 1));
	e->prev_ok = false;
}

uint64_t fc_encap_psp_rx_gen(const struct fc_encap_psp *e) { return e->gen; }

/* ------------------------------------------------------------------------ */
/* transmit SAs                                                               */

int fc_encap_psp_tx_set(struct fc_encap_psp *e, uint32_t peer, uint32_t spi,
			const uint8_t key[FC_PSP_KEY_LEN])
{
	if (peer >= e->cfg.max_peers || spi == 0)
		return -EINVAL;
	if (key_load(e->cfg.version, &e->tx_key[peer], key, true)) {
		e->tx[peer].spi = 0; /* the old key is wiped already */
		return -ENOMEM;
	}
	e->tx[peer].spi = spi; /* last_iv stays: IVs keep increasing across SAs */
	return 0;
}

int fc_encap_psp_tx_clear(struct fc_encap_psp *e, uint32_t peer)
{
	if (peer >= e->cfg.max_peers)
		return -EINVAL;
	key_wipe(&e->tx_key[peer]);
	e->tx[peer].spi = 0;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* seal and open                                                              */

static int psp_seal(void *ctx, struct fc_frame *f, uint32_t len)
{
	struct fc_encap_psp *e = ctx;
	uint32_t peer = f->peer_idx;
	struct psp_tx_sa *sa;
	uint8_t *p = f->buf;
	uint64_t now;
	struct fc_psp_info h = {
		.next_hdr = FC_PSP_NEXT_HDR_FALCON,
		.crypt_off = FC_PSP_CRYPT_OFF_FALCON,
		.version = e->cfg.version,
	};

	if (peer >= e->cfg.max_peers || !e->tx[peer].spi) {
		e->cnt.tx_no_sa++;
		return -ENOENT;
	}
	sa = &e->tx[peer];
	if (len < 4u * FC_PSP_CRYPT_OFF_FALCON) {
		e->cnt.tx_err++;
		return -EINVAL;
	}
	if ((uint64_t)f->cap < (uint64_t)FC_PSP_HDR_LEN + len + FC_PSP_ICV_LEN) {
		e->cnt.tx_err++;
		return -ENOSPC;
	}
	if (sa->last_iv == UINT64_MAX) { /* + 1 would repeat IV 0 under this key */
		e->cnt.tx_err++;
		return -EOVERFLOW;
	}
	now = e->cfg.now_ns(e->cfg.now_ctx);
	h.spi = sa->spi;
	h.iv = now > sa->last_iv ? now : sa->last_iv + 1; /* strictly increasing per SA */
	if (fc_psp_encode(&h, p, FC_PSP_HDR_LEN) != FC_PSP_HDR_LEN) { /* a fixed valid header */
		e->cnt.tx_err++;
		return -EINVAL;
	}
	sa->last_iv = h.iv;
	if (aead_seal(e->cfg.version, &e->tx_key[peer], p + PSP_AAD_LEN,
		      len - 4u * FC_PSP_CRYPT_OFF_FALCON, p + FC_PSP_HDR_LEN + len, p,
		      p + PSP_NONCE_OFF)) {
		e->cnt.tx_err++;
		return -EIO;
	}
	f->len = FC_PSP_HDR_LEN + len + FC_PSP_ICV_LEN;
	e->cnt.tx_sealed++;
	return 0;
}

static int psp_open(void *ctx, struct fc_frame *f)
{
	struct fc_encap_psp *e = ctx;
	const struct psp_key *k;
	struct fc_psp_info h;
	size_t off, len;
	uint8_t *p = f->buf;
	int rc;

	/* spec 9.2.2.1: header integrity and lengths, before any secret is touched */
	if (f->len < FC_PSP_FRAME_MIN) {
		e->cnt.rx_too_short++;
		return -EPROTO;
	}
	if (fc_psp_decode(p, f->len, &h, &off, &len) < 0 || h.version != e->cfg.version ||
	    h.hdr_len != FC_PSP_HDR_LEN || h.crypt_off != FC_PSP_CRYPT_OFF_FALCON) {
		e->cnt.rx_bad_hdr++;
		return -EPROTO;
	}
	rc = rx_key(e, h.spi, &k);
	if (rc)
		return rc;
	/* spec 9.2.2.1: a packet that fails decryption is discarded */
	if (aead_open(e->cfg.version, k, p + PSP_AAD_LEN, len - 4u * FC_PSP_CRYPT_OFF_FALCON,
		      p + off + len, p, p + PSP_NONCE_OFF)) {
		e->cnt.rx_auth_fail++;
		return -EBADMSG;
	}
	f->buf = p + off;
	f->len = (uint32_t)len;
	f->meta.tx_ns = h.iv;
	f->meta.spi = h.spi;
	e->cnt.rx_opened++;
	return 0;
}

const struct fc_encap_ops fc_encap_psp_ops = {
	.headroom = FC_PSP_HDR_LEN,
	.tailroom = FC_PSP_ICV_LEN,
	.seal = psp_seal,
	.open = psp_open,
};

/* ------------------------------------------------------------------------ */
/* lifetime                                                                   */

const struct fc_encap_psp_counters *fc_encap_psp_counters(const struct fc_encap_psp *e)
{
	return &e->cnt;
}

unsigned int fc_encap_psp_version(const struct fc_encap_psp *e) { return e->cfg.version; }

struct fc_encap_psp *fc_encap_psp_new(const struct fc_encap_psp_cfg *cfg)
{
	uint32_t slots = cfg->key_cache_slots ? cfg->key_cache_slots : FC_PSP_KEY_CACHE_DEFAULT;
	struct fc_encap_psp *e;
	void *mem = NULL;
	size_t page;
	int err;

	if ((cfg->version != FC_PSP_VER_AES_GCM_256 &&
	     cfg->version != FC_PSP_VER_CHACHA20_POLY1305) ||
	    !cfg->max_peers || cfg->max_peers > FC_PSP_PEERS_MAX || !cfg->now_ns ||
	    slots > FC_PSP_KEY_CACHE_MAX || (slots & (slots - 1))) {
		errno = EINVAL;
		return NULL;
	}
	err = fc_psp_crypto_init();
	if (err) {
		errno = -err;
		return NULL;
	}
	if (!fc_psp_cipher_available(cfg->version)) {
		errno = ENOTSUP;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->cfg = *cfg;
	e->cfg.master_key = NULL;
	e->cfg.key_cache_slots = slots;
	e->cache_mask = slots - 1;
	e->tx = calloc(cfg->max_peers, sizeof(*e->tx));
	e->rx_spi = calloc(cfg->max_peers, sizeof(*e->rx_spi));
	e->cache_spi = calloc(slots, sizeof(*e->cache_spi));
	/* whole pages of our own, so locking and unlocking touch no one else's memory */
	page = (size_t)sysconf(_SC_PAGESIZE);
	e->sec_len = sizeof(struct psp_secrets) +
		     ((size_t)cfg->max_peers + slots) * sizeof(struct psp_key);
	e->sec_len = (e->sec_len + page - 1) / page * page;
	if (!e->tx || !e->rx_spi || !e->cache_spi || posix_memalign(&mem, page, e->sec_len)) {
		fc_encap_psp_free(e);
		errno = ENOMEM;
		return NULL;
	}
	e->sec = mem;
	memset(e->sec, 0, e->sec_len);
	/* no swap, no core dump: best effort (RLIMIT_MEMLOCK may forbid it) */
	e->sec_locked = sodium_mlock(e->sec, e->sec_len) == 0;
	e->tx_key = e->sec->keys;
	e->cache_key = e->sec->keys + cfg->max_peers;
	master_set(e, 0, cfg->master_key);
	return e;
}

void fc_encap_psp_free(struct fc_encap_psp *e)
{
	if (!e)
		return;
	if (e->sec) {
		for (uint32_t i = 0; i < e->cfg.max_peers + e->cfg.key_cache_slots; i++)
			key_wipe(&e->sec->keys[i]);
		sodium_memzero(e->sec, e->sec_len);
		if (e->sec_locked)
			sodium_munlock(e->sec, e->sec_len);
		free(e->sec);
	}
	free(e->tx);
	free(e->rx_spi);
	free(e->cache_spi);
	free(e);
}
