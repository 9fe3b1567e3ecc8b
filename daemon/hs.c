/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hs.c - Noise IK for the connection manager (hs.h): the Noise framework's symmetric
 * state (revision 34, sections 5.1-5.3) with BLAKE2b (HASHLEN 64, BLOCKLEN 128),
 * HMAC-BLAKE2b HKDF, ChaCha20-Poly1305 (nonce: 4 zero bytes, then n little-endian) and
 * X25519, all from libsodium; the IK pattern (7.5):
 *
 *   <- s
 *   ...
 *   -> e, es, s, ss
 *   <- e, ee, se
 *
 * Every operation works on a copy of the state and commits it only on success, so a
 * refused message leaves the handshake (and the replay table) as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "hs.h"

#define PROTOCOL_NAME "Noise_IK_25519_ChaChaPoly_BLAKE2b"
#define PROLOGUE_DEFAULT "falcon-cm noise ik v1"
#define PROLOGUE_MAX 64u
#define BLOCK_LEN 128u /* BLAKE2b's block: HMAC pads its key to it */
#define TAI64_BASE 0x400000000000000aull /* 2^62 + 10: TAI64 label of the Unix epoch */
#define NS_PER_S 1000000000ull

enum { ROLE_NONE = 0, ROLE_INI, ROLE_RESP };
enum { ST_NONE = 0, ST_START, ST_MSG1_SENT, ST_MSG1_READ, ST_DONE };
enum { MSG1 = 1, MSG2 = 2 };

_Static_assert(sizeof(PROTOCOL_NAME) - 1 <= FC_HS_HASH_LEN, "name fits h unhashed");
_Static_assert(FC_HS_B64_LEN == sodium_base64_ENCODED_LEN(FC_HS_KEY_LEN,
		sodium_base64_VARIANT_ORIGINAL), "base64 length");

/* ---- the hash, HMAC and HKDF (Noise 4.3) ---- */

static void hash2(uint8_t out[FC_HS_HASH_LEN], const uint8_t *a, size_t a_len,
		  const uint8_t *b, size_t b_len)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, FC_HS_HASH_LEN);
	crypto_generichash_update(&st, a, a_len);
	if (b_len)
		crypto_generichash_update(&st, b, b_len);
	crypto_generichash_final(&st, out, FC_HS_HASH_LEN);
	sodium_memzero(&st, sizeof(st));
}

/* HMAC-BLAKE2b (RFC 2104) of a || b under a 64-byte key. */
static void hmac(uint8_t out[FC_HS_HASH_LEN], const uint8_t key[FC_HS_HASH_LEN],
		 const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
	crypto_generichash_state st;
	uint8_t pad[BLOCK_LEN], inner[FC_HS_HASH_LEN];

	memset(pad, 0x36, sizeof(pad));
	for (unsigned i = 0; i < FC_HS_HASH_LEN; i++)
		pad[i] ^= key[i];
	crypto_generichash_init(&st, NULL, 0, FC_HS_HASH_LEN);
	crypto_generichash_update(&st, pad, sizeof(pad));
	if (a_len)
		crypto_generichash_update(&st, a, a_len);
	if (b_len)
		crypto_generichash_update(&st, b, b_len);
	crypto_generichash_final(&st, inner, sizeof(inner));
	memset(pad, 0x5c, sizeof(pad));
	for (unsigned i = 0; i < FC_HS_HASH_LEN; i++)
		pad[i] ^= key[i];
	crypto_generichash_init(&st, NULL, 0, FC_HS_HASH_LEN);
	crypto_generichash_update(&st, pad, sizeof(pad));
	crypto_generichash_update(&st, inner, sizeof(inner));
	crypto_generichash_final(&st, out, FC_HS_HASH_LEN);
	sodium_memzero(pad, sizeof(pad));
	sodium_memzero(inner, sizeof(inner));
	sodium_memzero(&st, sizeof(st));
}

/* HKDF(ck, ikm) with two outputs. */
static void hkdf2(const uint8_t ck[FC_HS_HASH_LEN], const uint8_t *ikm, size_t ikm_len,
		  uint8_t out1[FC_HS_HASH_LEN], uint8_t out2[FC_HS_HASH_LEN])
{
	static const uint8_t one = 1, two = 2;
	uint8_t temp[FC_HS_HASH_LEN];

	hmac(temp, ck, ikm, ikm_len, NULL, 0);
	hmac(out1, temp, &one, 1, NULL, 0);
	hmac(out2, temp, out1, FC_HS_HASH_LEN, &two, 1);
	sodium_memzero(temp, sizeof(temp));
}

/* ---- the symmetric state (Noise 5.2) ---- */

static void mix_hash(struct fc_hs_sym *s, const uint8_t *data, size_t len)
{
	hash2(s->h, s->h, FC_HS_HASH_LEN, data, len);
}

static void mix_key(struct fc_hs_sym *s, const uint8_t ikm[FC_HS_KEY_LEN])
{
	uint8_t out1[FC_HS_HASH_LEN], out2[FC_HS_HASH_LEN];

	hkdf2(s->ck, ikm, FC_HS_KEY_LEN, out1, out2);
	memcpy(s->ck, out1, FC_HS_HASH_LEN);
	memcpy(s->k, out2, FC_HS_KEY_LEN); /* HASHLEN 64: truncated to 32 */
	s->n = 0;
	s->has_k = true;
	sodium_memzero(out1, sizeof(out1));
	sodium_memzero(out2, sizeof(out2));
}

static void nonce(uint8_t npub[crypto_aead_chacha20poly1305_IETF_NPUBBYTES], uint64_t n)
{
	memset(npub, 0, 4);
	for (unsigned i = 0; i < 8; i++)
		npub[4 + i] = (uint8_t)(n >> (8 * i));
}

/* out gets len + 16 bytes (len without a key: the handshake never encrypts before es). */
static void encrypt_and_hash(struct fc_hs_sym *s, const uint8_t *p, size_t len, uint8_t *out)
{
	uint8_t npub[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];
	unsigned long long c_len = 0;

	if (!s->has_k) {
		memmove(out, p, len);
		mix_hash(s, out, len);
		return;
	}
	nonce(npub, s->n++);
	crypto_aead_chacha20poly1305_ietf_encrypt(out, &c_len, p, len, s->h, FC_HS_HASH_LEN,
						  NULL, npub, s->k);
	mix_hash(s, out, (size_t)c_len);
}

/* out gets len - 16 bytes. Returns 0 or -EBADMSG. */
static int decrypt_and_hash(struct fc_hs_sym *s, const uint8_t *c, size_t len, uint8_t *out)
{
	uint8_t npub[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];
	unsigned long long p_len = 0;

	if (!s->has_k) {
		memmove(out, c, len);
		mix_hash(s, c, len);
		return 0;
	}
	if (len < FC_HS_TAG_LEN)
		return -EBADMSG;
	nonce(npub, s->n);
	if (crypto_aead_chacha20poly1305_ietf_decrypt(out, &p_len, NULL, c, len, s->h,
						      FC_HS_HASH_LEN, npub, s->k))
		return -EBADMSG;
	s->n++;
	mix_hash(s, c, len);
	return 0;
}

/* MixKey(DH(priv, pub)). Returns 0 or -EPROTO (pub is of low order: the result is 0). */
static int mix_dh(struct fc_hs_sym *s, const uint8_t priv[FC_HS_KEY_LEN],
		  const uint8_t pub[FC_HS_KEY_LEN])
{
	uint8_t shared[FC_HS_KEY_LEN];
	int rc = 0;

	if (crypto_scalarmult(shared, priv, pub))
		rc = -EPROTO;
	else
		mix_key(s, shared);
	sodium_memzero(shared, sizeof(shared));
	return rc;
}

/* ---- errors, time ---- */

const char *fc_hs_strerror(int err)
{
	switch (err) {
	case 0: return "ok";
	case -ENOKEY: return "unknown key";
	case -EBADMSG: return "bad MAC";
	case -EALREADY: return "replayed";
	case -ESTALE: return "stale";
	case -EPROTO: return "malformed";
	case -EPROTONOSUPPORT: return "unsupported handshake version";
	case -EINVAL: return "invalid call";
	case -EMSGSIZE: return "payload too long";
	case -ENOBUFS: return "output buffer too small";
	default: return strerror(err < 0 ? -err : err);
	}
}

void fc_hs_tai64n(uint64_t realtime_ns, uint8_t ts[FC_HS_TS_LEN])
{
	uint64_t sec = TAI64_BASE + realtime_ns / NS_PER_S;
	uint32_t nsec = (uint32_t)(realtime_ns % NS_PER_S);

	for (unsigned i = 0; i < 8; i++)
		ts[i] = (uint8_t)(sec >> (56 - 8 * i));
	for (unsigned i = 0; i < 4; i++)
		ts[8 + i] = (uint8_t)(nsec >> (24 - 8 * i));
}

int fc_hs_tai64n_ns(const uint8_t ts[FC_HS_TS_LEN], uint64_t *realtime_ns)
{
	uint64_t sec = 0;
	uint32_t nsec = 0;

	for (unsigned i = 0; i < 8; i++)
		sec = sec << 8 | ts[i];
	for (unsigned i = 0; i < 4; i++)
		nsec = nsec << 8 | ts[8 + i];
	if (nsec >= NS_PER_S || sec < TAI64_BASE || sec - TAI64_BASE > UINT64_MAX / NS_PER_S - 1)
		return -EPROTO;
	*realtime_ns = (sec - TAI64_BASE) * NS_PER_S + nsec;
	return 0;
}

/* ---- keys ---- */

static int sodium_ready(void)
{
	return sodium_init() < 0 ? -ENOSYS : 0;
}

int fc_hs_key_generate(struct fc_hs_key *k)
{
	if (sodium_ready())
		return -ENOSYS;
	crypto_box_keypair(k->pub, k->priv); /* X25519: random scalar, its public key */
	return 0;
}

int fc_hs_key_from_private(struct fc_hs_key *k, const uint8_t priv[FC_HS_KEY_LEN])
{
	if (sodium_ready())
		return -ENOSYS;
	memmove(k->priv, priv, FC_HS_KEY_LEN);
	if (crypto_scalarmult_base(k->pub, k->priv)) {
		sodium_memzero(k, sizeof(*k));
		return -EINVAL;
	}
	return 0;
}

void fc_hs_pub_to_base64(const uint8_t pub[FC_HS_KEY_LEN], char out[FC_HS_B64_LEN])
{
	sodium_bin2base64(out, FC_HS_B64_LEN, pub, FC_HS_KEY_LEN, sodium_base64_VARIANT_ORIGINAL);
}

/* Exactly one key, whitespace around it allowed. */
static int key_from_base64(const char *s, size_t len, uint8_t key[FC_HS_KEY_LEN])
{
	const char *end = NULL;
	size_t n = 0;

	while (len && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
		s++, len--;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\n' ||
		       s[len - 1] == '\r'))
		len--;
	if (sodium_ready() || len != FC_HS_B64_LEN - 1)
		return -EINVAL;
	if (sodium_base642bin(key, FC_HS_KEY_LEN, s, len, NULL, &n, &end,
			      sodium_base64_VARIANT_ORIGINAL) || n != FC_HS_KEY_LEN ||
	    end != s + len) {
		sodium_memzero(key, FC_HS_KEY_LEN);
		return -EINVAL;
	}
	return 0;
}

int fc_hs_pub_from_base64(const char *s, uint8_t pub[FC_HS_KEY_LEN])
{
	return s ? key_from_base64(s, strlen(s), pub) : -EINVAL;
}

int fc_hs_key_save(const char *path, const struct fc_hs_key *k)
{
	char text[FC_HS_B64_LEN + 1];
	size_t len;
	int fd, rc = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	sodium_bin2base64(text, FC_HS_B64_LEN, k->priv, FC_HS_KEY_LEN,
			  sodium_base64_VARIANT_ORIGINAL);
	len = strlen(text);
	text[len++] = '\n';
	/* 0600 whatever the umask was (it can only have taken bits away; be explicit) */
	if (fchmod(fd, 0600) || write(fd, text, len) != (ssize_t)len || fsync(fd))
		rc = errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (rc)
		unlink(path);
	sodium_memzero(text, sizeof(text));
	return rc;
}

int fc_hs_key_load(const char *path, struct fc_hs_key *k, char *err, size_t err_len)
{
	char text[256];
	struct stat st;
	ssize_t n = 0;
	int fd, rc = 0;

	if (!err_len)
		err = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		if (err)
			snprintf(err, err_len, "key file %s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		if (err)
			snprintf(err, err_len, "key file %s: %s", path, strerror(-rc));
	} else if (!S_ISREG(st.st_mode)) {
		rc = -EPERM;
		if (err)
			snprintf(err, err_len, "key file %s is not a regular file", path);
	} else if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		rc = -EPERM;
		if (err)
			snprintf(err, err_len,
				 "key file %s has mode %04o: group or others may use it; refusing a "
				 "private key that is not private (chmod 600 %s)",
				 path, (unsigned)(st.st_mode & 07777), path);
	} else {
		do
			n = read(fd, text, sizeof(text));
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			rc = -errno;
			if (err)
				snprintf(err, err_len, "key file %s: %s", path, strerror(-rc));
		} else {
			uint8_t priv[FC_HS_KEY_LEN];

			rc = key_from_base64(text, (size_t)n, priv);
			if (!rc)
				rc = fc_hs_key_from_private(k, priv);
			if (rc && err)
				snprintf(err, err_len,
					 "key file %s does not hold one base64 X25519 private key",
					 path);
			sodium_memzero(priv, sizeof(priv));
		}
	}
	close(fd);
	sodium_memzero(text, sizeof(text));
	return rc < 0 ? rc : 0;
}

/* ---- the allow-list ---- */

int fc_hs_peers_find(const struct fc_hs_peers *p, const uint8_t pub[FC_HS_KEY_LEN])
{
	for (unsigned i = 0; i < p->n && i < FC_HS_PEERS_MAX; i++)
		if (!sodium_memcmp(p->peer[i].pub, pub, FC_HS_KEY_LEN))
			return (int)i;
	return -ENOENT;
}

int fc_hs_peers_add(struct fc_hs_peers *p, const uint8_t pub[FC_HS_KEY_LEN])
{
	if (fc_hs_peers_find(p, pub) >= 0)
		return -EEXIST;
	if (p->n >= FC_HS_PEERS_MAX)
		return -ENOSPC;
	memset(&p->peer[p->n], 0, sizeof(p->peer[0]));
	memcpy(p->peer[p->n++].pub, pub, FC_HS_KEY_LEN);
	return 0;
}

int fc_hs_peers_remove(struct fc_hs_peers *p, const uint8_t pub[FC_HS_KEY_LEN])
{
	int i = fc_hs_peers_find(p, pub);

	if (i < 0)
		return i;
	p->peer[i] = p->peer[--p->n];
	memset(&p->peer[p->n], 0, sizeof(p->peer[0]));
	return 0;
}

/* ---- the handshake ---- */

static void default_rand(void *ctx, uint8_t *buf, size_t len)
{
	(void)ctx;
	randombytes_buf(buf, len);
}

/* InitializeSymmetric, MixHash(prologue), and the pre-message <- s. */
static int start(struct fc_hs *hs, const struct fc_hs_config *cfg, int role,
		 const uint8_t rs[FC_HS_KEY_LEN])
{
	const uint8_t *prologue = cfg && cfg->prologue ? cfg->prologue :
				  (const uint8_t *)PROLOGUE_DEFAULT;
	size_t prologue_len = cfg && cfg->prologue ? cfg->prologue_len :
			      sizeof(PROLOGUE_DEFAULT) - 1;

	if (!hs)
		return -EINVAL;
	memset(hs, 0, sizeof(*hs));
	if (!cfg || !cfg->self || !cfg->peers || prologue_len > PROLOGUE_MAX)
		return -EINVAL;
	if (sodium_ready())
		return -ENOSYS;
	hs->role = (uint8_t)role;
	hs->stage = ST_START;
	hs->flags = cfg->flags;
	hs->skew_ns = cfg->skew_ns ? cfg->skew_ns : FC_HS_SKEW_DEFAULT_NS;
	hs->self = cfg->self;
	hs->peers = cfg->peers;
	hs->rand = cfg->rand ? cfg->rand : default_rand;
	hs->rand_ctx = cfg->rand_ctx;
	memcpy(hs->sym.h, PROTOCOL_NAME, sizeof(PROTOCOL_NAME) - 1); /* padded with zeros */
	memcpy(hs->sym.ck, hs->sym.h, FC_HS_HASH_LEN);
	mix_hash(&hs->sym, prologue, prologue_len);
	if (role == ROLE_INI) {
		memcpy(hs->rs, rs, FC_HS_KEY_LEN);
		mix_hash(&hs->sym, rs, FC_HS_KEY_LEN);
	} else {
		mix_hash(&hs->sym, cfg->self->pub, FC_HS_KEY_LEN);
	}
	return 0;
}

int fc_hs_initiator(struct fc_hs *hs, const struct fc_hs_config *cfg,
		    const uint8_t rs[FC_HS_KEY_LEN])
{
	int rc;

	if (!rs)
		return -EINVAL;
	rc = start(hs, cfg, ROLE_INI, rs);
	if (!rc && fc_hs_peers_find(cfg->peers, rs) < 0)
		rc = -ENOKEY;
	if (rc && hs)
		fc_hs_wipe(hs);
	return rc;
}

int fc_hs_responder(struct fc_hs *hs, const struct fc_hs_config *cfg)
{
	int rc = start(hs, cfg, ROLE_RESP, NULL);

	if (rc && hs)
		fc_hs_wipe(hs);
	return rc;
}

static bool bare(const struct fc_hs *hs)
{
	return hs->flags & FC_HS_F_BARE;
}

static size_t hdr_len(const struct fc_hs *hs)
{
	return bare(hs) ? 0 : FC_HS_HDR_LEN;
}

/* Our part of the payload before the application's: [ts] hello. */
static size_t head_len(const struct fc_hs *hs, int type)
{
	if (bare(hs))
		return 0;
	return (type == MSG1 ? FC_HS_TS_LEN : 0) + FC_HS_HELLO_LEN;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_hello(uint8_t *p, const struct fc_hs_hello *h)
{
	memset(p, 0, FC_HS_HELLO_LEN);
	if (!h)
		return;
	p[0] = h->version;
	put_be32(p + 4, h->features_supported);
	put_be32(p + 8, h->features_required);
}

static void get_hello(const uint8_t *p, struct fc_hs_hello *h)
{
	h->version = p[0]; /* p[1..3]: reserved, sent 0, ignored (authenticated all the same) */
	h->features_supported = get_be32(p + 4);
	h->features_required = get_be32(p + 8);
}

/* Header check of a received message; returns the offset of what follows it. */
static int check_hdr(const struct fc_hs *hs, const uint8_t *msg, size_t len, int type)
{
	if (bare(hs))
		return 0;
	if (len < FC_HS_HDR_LEN)
		return -EPROTO;
	if (msg[0] != FC_HS_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (msg[1] != type || msg[2] || msg[3])
		return -EPROTO;
	return FC_HS_HDR_LEN;
}

/* A new ephemeral key pair; it is written out and mixed into h. */
static int new_ephemeral(struct fc_hs *w, uint8_t *out)
{
	w->rand(w->rand_ctx, w->e_priv, FC_HS_KEY_LEN);
	if (crypto_scalarmult_base(w->e_pub, w->e_priv))
		return -EPROTO; /* only a broken random source gives the zero scalar */
	memcpy(out, w->e_pub, FC_HS_KEY_LEN);
	mix_hash(&w->sym, w->e_pub, FC_HS_KEY_LEN);
	return 0;
}

static int commit(struct fc_hs *hs, struct fc_hs *w, int rc)
{
	if (!rc)
		*hs = *w;
	sodium_memzero(w, sizeof(*w));
	return rc;
}

/* Compare two TAI64N stamps (big endian: bytes in order). */
static int ts_cmp(const uint8_t a[FC_HS_TS_LEN], const uint8_t b[FC_HS_TS_LEN])
{
	return memcmp(a, b, FC_HS_TS_LEN);
}

int fc_hs_write_msg1(struct fc_hs *hs, uint64_t now_ns, const struct fc_hs_hello *hello,
		     const void *payload, size_t payload_len, uint8_t *out, size_t out_cap,
		     size_t *out_len)
{
	uint8_t plain[FC_HS_TS_LEN + FC_HS_HELLO_LEN + FC_HS_PAYLOAD_MAX];
	uint8_t ts[FC_HS_TS_LEN] = { 0 };
	struct fc_hs w;
	size_t off, head, need;
	int peer, rc;

	if (!hs || hs->role != ROLE_INI || hs->stage != ST_START || !out || !out_len ||
	    (payload_len && !payload))
		return -EINVAL;
	if (payload_len > FC_HS_PAYLOAD_MAX)
		return -EMSGSIZE;
	head = head_len(hs, MSG1);
	need = hdr_len(hs) + 2 * FC_HS_KEY_LEN + 2 * FC_HS_TAG_LEN + head + payload_len;
	if (out_cap < need)
		return -ENOBUFS;
	peer = fc_hs_peers_find(hs->peers, hs->rs);
	if (peer < 0)
		return -ENOKEY; /* removed from the allow-list since fc_hs_initiator */
	w = *hs;
	off = hdr_len(&w);
	if (!bare(&w)) {
		const uint8_t *last = w.peers->peer[peer].tx_ts;

		out[0] = FC_HS_WIRE_VERSION, out[1] = MSG1, out[2] = 0, out[3] = 0;
		/* strictly newer than the last one we sent, whatever the clock did */
		fc_hs_tai64n(now_ns, ts);
		if (ts_cmp(ts, last) <= 0) {
			uint64_t last_ns = 0;

			if (fc_hs_tai64n_ns(last, &last_ns) == 0)
				fc_hs_tai64n(last_ns + 1, ts);
		}
		memcpy(plain, ts, FC_HS_TS_LEN);
		put_hello(plain + FC_HS_TS_LEN, hello);
	}
	if (payload_len)
		memcpy(plain + head, payload, payload_len);
	rc = new_ephemeral(&w, out + off);                           /* e */
	off += FC_HS_KEY_LEN;
	if (!rc)
		rc = mix_dh(&w.sym, w.e_priv, w.rs);                 /* es */
	if (!rc) {
		encrypt_and_hash(&w.sym, w.self->pub, FC_HS_KEY_LEN, out + off); /* s */
		off += FC_HS_KEY_LEN + FC_HS_TAG_LEN;
		rc = mix_dh(&w.sym, w.self->priv, w.rs);             /* ss */
	}
	if (!rc) {
		encrypt_and_hash(&w.sym, plain, head + payload_len, out + off);
		off += head + payload_len + FC_HS_TAG_LEN;
		w.stage = ST_MSG1_SENT;
		*out_len = off;
		if (!bare(&w))
			memcpy(w.peers->peer[peer].tx_ts, ts, FC_HS_TS_LEN);
	}
	sodium_memzero(plain, sizeof(plain));
	return commit(hs, &w, rc);
}

int fc_hs_read_msg1(struct fc_hs *hs, uint64_t now_ns, const uint8_t *msg, size_t len,
		    struct fc_hs_peer_msg *out)
{
	uint8_t plain[FC_HS_TS_LEN + FC_HS_HELLO_LEN + FC_HS_PAYLOAD_MAX];
	struct fc_hs w;
	size_t head, min, body;
	int off, peer = -1, rc;

	if (!hs || hs->role != ROLE_RESP || hs->stage != ST_START || !out || (len && !msg))
		return -EINVAL;
	off = check_hdr(hs, msg, len, MSG1);
	if (off < 0)
		return off;
	head = head_len(hs, MSG1);
	min = (size_t)off + 2 * FC_HS_KEY_LEN + 2 * FC_HS_TAG_LEN + head;
	if (len < min || len > min + FC_HS_PAYLOAD_MAX)
		return -EPROTO;
	body = len - min + head; /* the plaintext of the payload ciphertext */
	w = *hs;
	memcpy(w.re, msg + off, FC_HS_KEY_LEN);                              /* e */
	mix_hash(&w.sym, w.re, FC_HS_KEY_LEN);
	off += FC_HS_KEY_LEN;
	rc = mix_dh(&w.sym, w.self->priv, w.re);                             /* es */
	if (!rc)
		rc = decrypt_and_hash(&w.sym, msg + off, FC_HS_KEY_LEN + FC_HS_TAG_LEN, w.rs); /* s */
	off += FC_HS_KEY_LEN + FC_HS_TAG_LEN;
	if (!rc) {
		peer = fc_hs_peers_find(w.peers, w.rs);
		if (peer < 0)
			rc = -ENOKEY;
	}
	if (!rc)
		rc = mix_dh(&w.sym, w.self->priv, w.rs);                     /* ss */
	if (!rc)
		rc = decrypt_and_hash(&w.sym, msg + off, body + FC_HS_TAG_LEN, plain);
	if (!rc && !bare(&w)) {
		struct fc_hs_peer *p = &w.peers->peer[peer];
		uint64_t ts_ns;

		if (fc_hs_tai64n_ns(plain, &ts_ns))
			rc = -EPROTO;
		else if (ts_cmp(plain, p->rx_ts) <= 0)
			rc = -EALREADY;
		else if ((ts_ns > now_ns ? ts_ns - now_ns : now_ns - ts_ns) > w.skew_ns)
			rc = -ESTALE;
	}
	if (!rc) {
		memset(out, 0, sizeof(*out));
		memcpy(out->peer_pub, w.rs, FC_HS_KEY_LEN);
		if (!bare(&w)) {
			memcpy(out->ts, plain, FC_HS_TS_LEN);
			get_hello(plain + FC_HS_TS_LEN, &out->hello);
			memcpy(w.peers->peer[peer].rx_ts, plain, FC_HS_TS_LEN);
		}
		out->payload_len = body - head;
		memcpy(out->payload, plain + head, out->payload_len);
		w.stage = ST_MSG1_READ;
	}
	sodium_memzero(plain, sizeof(plain));
	return commit(hs, &w, rc);
}

int fc_hs_write_msg2(struct fc_hs *hs, const struct fc_hs_hello *hello, const void *payload,
		     size_t payload_len, uint8_t *out, size_t out_cap, size_t *out_len)
{
	uint8_t plain[FC_HS_HELLO_LEN + FC_HS_PAYLOAD_MAX];
	struct fc_hs w;
	size_t off, head, need;
	int rc;

	if (!hs || hs->role != ROLE_RESP || hs->stage != ST_MSG1_READ || !out || !out_len ||
	    (payload_len && !payload))
		return -EINVAL;
	if (payload_len > FC_HS_PAYLOAD_MAX)
		return -EMSGSIZE;
	head = head_len(hs, MSG2);
	need = hdr_len(hs) + FC_HS_KEY_LEN + FC_HS_TAG_LEN + head + payload_len;
	if (out_cap < need)
		return -ENOBUFS;
	w = *hs;
	off = hdr_len(&w);
	if (!bare(&w)) {
		out[0] = FC_HS_WIRE_VERSION, out[1] = MSG2, out[2] = 0, out[3] = 0;
		put_hello(plain, hello);
	}
	if (payload_len)
		memcpy(plain + head, payload, payload_len);
	rc = new_ephemeral(&w, out + off);                           /* e */
	off += FC_HS_KEY_LEN;
	if (!rc)
		rc = mix_dh(&w.sym, w.e_priv, w.re);                 /* ee */
	if (!rc)
		rc = mix_dh(&w.sym, w.e_priv, w.rs);                 /* se */
	if (!rc) {
		encrypt_and_hash(&w.sym, plain, head + payload_len, out + off);
		off += head + payload_len + FC_HS_TAG_LEN;
		*out_len = off;
		w.stage = ST_DONE;
		sodium_memzero(w.e_priv, sizeof(w.e_priv)); /* no DH left: forward secrecy */
		sodium_memzero(w.sym.k, sizeof(w.sym.k));
	}
	sodium_memzero(plain, sizeof(plain));
	return commit(hs, &w, rc);
}

int fc_hs_read_msg2(struct fc_hs *hs, const uint8_t *msg, size_t len,
		    struct fc_hs_peer_msg *out)
{
	uint8_t plain[FC_HS_HELLO_LEN + FC_HS_PAYLOAD_MAX];
	struct fc_hs w;
	size_t head, min, body;
	int off, rc;

	if (!hs || hs->role != ROLE_INI || hs->stage != ST_MSG1_SENT || !out || (len && !msg))
		return -EINVAL;
	off = check_hdr(hs, msg, len, MSG2);
	if (off < 0)
		return off;
	head = head_len(hs, MSG2);
	min = (size_t)off + FC_HS_KEY_LEN + FC_HS_TAG_LEN + head;
	if (len < min || len > min + FC_HS_PAYLOAD_MAX)
		return -EPROTO;
	body = len - min + head;
	w = *hs;
	memcpy(w.re, msg + off, FC_HS_KEY_LEN);                      /* e */
	mix_hash(&w.sym, w.re, FC_HS_KEY_LEN);
	off += FC_HS_KEY_LEN;
	rc = mix_dh(&w.sym, w.e_priv, w.re);                         /* ee */
	if (!rc)
		rc = mix_dh(&w.sym, w.self->priv, w.re);             /* se */
	if (!rc)
		rc = decrypt_and_hash(&w.sym, msg + off, body + FC_HS_TAG_LEN, plain);
	if (!rc) {
		memset(out, 0, sizeof(*out));
		memcpy(out->peer_pub, w.rs, FC_HS_KEY_LEN);
		if (!bare(&w))
			get_hello(plain, &out->hello);
		out->payload_len = body - head;
		memcpy(out->payload, plain + head, out->payload_len);
		w.stage = ST_DONE;
		sodium_memzero(w.e_priv, sizeof(w.e_priv));
		sodium_memzero(w.sym.k, sizeof(w.sym.k));
	}
	sodium_memzero(plain, sizeof(plain));
	return commit(hs, &w, rc);
}

int fc_hs_finish(struct fc_hs *hs, uint8_t hash[FC_HS_HASH_LEN], struct fc_hs_keys *keys)
{
	uint8_t k1[FC_HS_HASH_LEN], k2[FC_HS_HASH_LEN];

	if (!hs)
		return -EINVAL;
	if (hs->stage != ST_DONE) {
		fc_hs_wipe(hs);
		return -EINVAL;
	}
	if (hash)
		memcpy(hash, hs->sym.h, FC_HS_HASH_LEN);
	if (keys) {
		hkdf2(hs->sym.ck, NULL, 0, k1, k2);                  /* Split */
		memcpy(keys->send, hs->role == ROLE_INI ? k1 : k2, FC_HS_KEY_LEN);
		memcpy(keys->recv, hs->role == ROLE_INI ? k2 : k1, FC_HS_KEY_LEN);
		sodium_memzero(k1, sizeof(k1));
		sodium_memzero(k2, sizeof(k2));
	}
	fc_hs_wipe(hs);
	return 0;
}

void fc_hs_wipe(struct fc_hs *hs)
{
	if (hs)
		sodium_memzero(hs, sizeof(*hs));
}
