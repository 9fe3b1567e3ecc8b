/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hs.h - the connection manager's authenticated key exchange, sans I/O: Noise IK
 * (Noise_IK_25519_ChaChaPoly_BLAKE2b, Noise Protocol Framework revision 34) on libsodium,
 * with falcon's identity keys, allow-list, hello and replay rules around it.
 *
 *   initiator (knows the responder's static key)         responder
 *   fc_hs_initiator(rs)      -ENOKEY if rs not allowed
 *   fc_hs_write_msg1 ------- msg 1: e, es, s, ss ------> fc_hs_read_msg1
 *                   {TAI64N, hello_i, payload_i}          s not allowed: -ENOKEY,
 *                                                         timestamp not newer: -EALREADY,
 *                                                         too far from now: -ESTALE
 *   fc_hs_read_msg2 <------- msg 2: e, ee, se ---------- fc_hs_write_msg2
 *                   {hello_r, payload_r}
 *   fc_hs_finish: handshake hash (channel binding), transport keys if asked; state wiped
 *
 * Message 1 proves the initiator's static key to the responder only once its payload
 * decrypts (ss); message 2 proves the responder's (se, ee). Both payloads are AEAD
 * ciphertext under keys that mix in the ephemeral DH results, so the session is forward
 * secret, and every byte of both messages is in the handshake hash: a changed hello
 * (version, feature bits), payload or key fails the MAC, and message 2 answers exactly
 * one message 1 (a recorded message 2 fails against any other). The cleartext header of
 * each message (wire version, type, reserved) has no free bits: anything but the
 * expected value is refused.
 *
 * On the wire (the CM carries these bytes in its own datagrams):
 *   msg 1: hdr(4) e(32) enc(s)(32+16) enc(ts(12) hello(12) payload)(+16)  124 + payload
 *   msg 2: hdr(4) e(32) enc(hello(12) payload)(+16)                        64 + payload
 *   hdr = { FC_HS_WIRE_VERSION, type 1 | 2, 0, 0 }; hello = { version, 0, 0, 0,
 *   features_supported (BE32), features_required (BE32) }; ts = TAI64N (12 bytes, BE).
 *
 * Replay: the responder keeps, per allowed initiator key, the newest message-1 timestamp
 * it accepted, and refuses one that is not newer (-EALREADY) or further than skew from
 * its own clock (-ESTALE). The initiator stamps message 1 with max(now, last sent + 1 ns)
 * per responder, so its own retries are always newer. A lost message 2 is therefore
 * retried with a new message 1 (a new fc_hs), never by resending the old one (the
 * responder would refuse it as a replay), unless the CM answers a repeated message 1 with
 * the message 2 it already sent. Timestamps live in memory: a responder that restarts
 * accepts a message 1 recorded less than skew ago once; its sender learns nothing from
 * the answer (no ephemeral key).
 *
 * Errors (negative errno; fc_hs_strerror names each, for counters and log lines):
 *   -ENOKEY    unknown key: not on the allow-list (either side)
 *   -EBADMSG   bad MAC: a ciphertext did not authenticate (tampered, wrong key, stale
 *              state, a message 2 that answers another message 1)
 *   -EALREADY  replayed: message 1 timestamp not newer than the last accepted one
 *   -ESTALE    stale: message 1 timestamp further than skew from now
 *   -EPROTO    malformed: wrong length, header, low-order public key, payload fields
 *   -EPROTONOSUPPORT  the header names a wire version this code does not speak
 *   -EINVAL    API misuse: wrong role or stage, NULL arguments (never from the network)
 *   -EMSGSIZE  payload longer than FC_HS_PAYLOAD_MAX; -ENOBUFS output buffer too small
 * A refused message changes nothing: the handshake state and the replay table are as
 * they were, so forged datagrams cannot kill a handshake in progress.
 *
 * Secrets: ephemeral keys, DH results, chaining keys and HKDF temporaries are wiped with
 * sodium_memzero as soon as they are dead; fc_hs_finish and fc_hs_wipe wipe the rest.
 * Nothing here logs. Not thread-safe: one fc_hs and its peers table per thread (the CM
 * runs in the engine's loop).
 */
#ifndef FC_HS_H
#define FC_HS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FC_HS_KEY_LEN 32u        /* X25519 public and private keys */
#define FC_HS_HASH_LEN 64u       /* BLAKE2b: handshake hash */
#define FC_HS_TAG_LEN 16u        /* ChaCha20-Poly1305 */
#define FC_HS_TS_LEN 12u         /* TAI64N */
#define FC_HS_HELLO_LEN 12u
#define FC_HS_HDR_LEN 4u
#define FC_HS_PAYLOAD_MAX 256u   /* application payload per message */
#define FC_HS_PEERS_MAX 64u      /* allow-list entries */
#define FC_HS_B64_LEN 45u        /* base64 of a key with its NUL */
#define FC_HS_WIRE_VERSION 1u
#define FC_HS_SKEW_DEFAULT_NS (120ull * 1000000000ull)

#define FC_HS_MSG1_LEN(payload_len) \
	(FC_HS_HDR_LEN + 2 * FC_HS_KEY_LEN + 2 * FC_HS_TAG_LEN + FC_HS_TS_LEN + \
	 FC_HS_HELLO_LEN + (payload_len))
#define FC_HS_MSG2_LEN(payload_len) \
	(FC_HS_HDR_LEN + FC_HS_KEY_LEN + FC_HS_TAG_LEN + FC_HS_HELLO_LEN + (payload_len))
#define FC_HS_MSG1_MAX FC_HS_MSG1_LEN(FC_HS_PAYLOAD_MAX)
#define FC_HS_MSG2_MAX FC_HS_MSG2_LEN(FC_HS_PAYLOAD_MAX)

/* ---- identity keys ---- */

struct fc_hs_key {
	uint8_t pub[FC_HS_KEY_LEN];
	uint8_t priv[FC_HS_KEY_LEN];
};

/* A new key pair from libsodium's random source. Returns 0 or -ENOSYS (libsodium did not
 * initialise). */
int fc_hs_key_generate(struct fc_hs_key *k);
/* The pair of a private key. Returns 0, -ENOSYS, -EINVAL (a private key whose public key
 * is the zero point: cannot come from clamping, refused). */
int fc_hs_key_from_private(struct fc_hs_key *k, const uint8_t priv[FC_HS_KEY_LEN]);
/* Write k's private key as base64 and a newline to a new file of mode 0600 (never over an
 * existing file). Returns 0 or -errno of open/write/fsync (-EEXIST: the file exists); on
 * error no file is left behind. */
int fc_hs_key_save(const char *path, const struct fc_hs_key *k);
/* Read a private key file written by fc_hs_key_save. Returns 0, -EPERM (group or others
 * may read it, or not a regular file), -EINVAL (not one base64 X25519 key), -errno of
 * open/read; err (may be NULL) gets a sentence that names the file and says why. */
int fc_hs_key_load(const char *path, struct fc_hs_key *k, char *err, size_t err_len);
/* Public keys as text: standard base64 with padding, 44 characters. */
void fc_hs_pub_to_base64(const uint8_t pub[FC_HS_KEY_LEN], char out[FC_HS_B64_LEN]);
/* Returns 0 or -EINVAL (not exactly one base64 key; surrounding whitespace is fine). */
int fc_hs_pub_from_base64(const char *s, uint8_t pub[FC_HS_KEY_LEN]);

/* ---- the allow-list, with each peer's replay state ---- */

struct fc_hs_peer {
	uint8_t pub[FC_HS_KEY_LEN];
	uint8_t rx_ts[FC_HS_TS_LEN]; /* newest message-1 timestamp accepted from it (0: none) */
	uint8_t tx_ts[FC_HS_TS_LEN]; /* newest message-1 timestamp we sent to it */
};

struct fc_hs_peers {
	unsigned n;
	struct fc_hs_peer peer[FC_HS_PEERS_MAX];
};

/* Returns 0, -EEXIST (already there: its replay state is kept), -ENOSPC (full). A reload
 * removes the keys that went and adds the new ones; kept peers keep their state. */
int fc_hs_peers_add(struct fc_hs_peers *p, const uint8_t pub[FC_HS_KEY_LEN]);
/* Returns 0 or -ENOENT. */
int fc_hs_peers_remove(struct fc_hs_peers *p, const uint8_t pub[FC_HS_KEY_LEN]);
/* Returns the peer's index or -ENOENT. */
int fc_hs_peers_find(const struct fc_hs_peers *p, const uint8_t pub[FC_HS_KEY_LEN]);

/* ---- the handshake ---- */

/* The CM's hello, authenticated in both messages: what each side supports and requires.
 * The CM decides on it (fc_hs only carries it); tampering is a bad MAC. */
struct fc_hs_hello {
	uint8_t version;
	uint32_t features_supported, features_required;
};

enum fc_hs_flags {
	/* Noise as the framework's test vectors run it: no header, payloads as they are, no
	 * timestamp, hello or replay check (the allow-list still applies). Tests only. */
	FC_HS_F_BARE = 1u << 0,
};

struct fc_hs_config {
	const struct fc_hs_key *self;   /* outlives the fc_hs */
	struct fc_hs_peers *peers;      /* outlives the fc_hs; replay state updated in it */
	const uint8_t *prologue;        /* NULL: "falcon-cm noise ik v1" */
	size_t prologue_len;            /* at most 64 */
	uint64_t skew_ns;               /* 0: FC_HS_SKEW_DEFAULT_NS */
	unsigned flags;                 /* enum fc_hs_flags */
	/* Randomness for the ephemeral key (tests fix it); NULL: randombytes_buf. */
	void (*rand)(void *ctx, uint8_t *buf, size_t len);
	void *rand_ctx;
};

/* What a read delivers: the peer's static key, hello and payload, all authenticated. */
struct fc_hs_peer_msg {
	uint8_t peer_pub[FC_HS_KEY_LEN];
	struct fc_hs_hello hello;       /* zero in FC_HS_F_BARE */
	uint8_t ts[FC_HS_TS_LEN];       /* message 1: the initiator's TAI64N; zero otherwise */
	size_t payload_len;
	uint8_t payload[FC_HS_PAYLOAD_MAX];
};

/* The transport keys of the session, from this side's view (Noise Split: the
 * initiator sends with the first, the responder with the second; nonces from 0). */
struct fc_hs_keys {
	uint8_t send[FC_HS_KEY_LEN];
	uint8_t recv[FC_HS_KEY_LEN];
};

/* Noise's symmetric state. */
struct fc_hs_sym {
	uint8_t ck[FC_HS_HASH_LEN];
	uint8_t h[FC_HS_HASH_LEN];
	uint8_t k[FC_HS_KEY_LEN];
	uint64_t n;
	bool has_k;
};

/* One handshake, either role. Embed it; touch it only through the functions below. */
struct fc_hs {
	uint8_t role, stage;
	unsigned flags;
	uint64_t skew_ns;
	const struct fc_hs_key *self;
	struct fc_hs_peers *peers;
	void (*rand)(void *ctx, uint8_t *buf, size_t len);
	void *rand_ctx;
	struct fc_hs_sym sym;
	uint8_t e_priv[FC_HS_KEY_LEN], e_pub[FC_HS_KEY_LEN];
	uint8_t rs[FC_HS_KEY_LEN], re[FC_HS_KEY_LEN];
};

/* Start a handshake to the responder whose static key is rs. Returns 0, -ENOKEY (rs not
 * on the allow-list), -EINVAL (cfg without self or peers, prologue too long), -ENOSYS. */
int fc_hs_initiator(struct fc_hs *hs, const struct fc_hs_config *cfg,
		    const uint8_t rs[FC_HS_KEY_LEN]);
/* Get ready to answer one message 1. Returns 0, -EINVAL, -ENOSYS. */
int fc_hs_responder(struct fc_hs *hs, const struct fc_hs_config *cfg);

/* Initiator: message 1 into out (FC_HS_MSG1_LEN(payload_len) bytes; *out_len says).
 * now_ns: CLOCK_REALTIME in ns, the timestamp's source. hello is ignored with
 * FC_HS_F_BARE. Returns 0, -EINVAL (wrong role or stage), -EMSGSIZE, -ENOBUFS, -EPROTO
 * (rs is a low-order point). */
int fc_hs_write_msg1(struct fc_hs *hs, uint64_t now_ns, const struct fc_hs_hello *hello,
		     const void *payload, size_t payload_len, uint8_t *out, size_t out_cap,
		     size_t *out_len);
/* Responder: read message 1 from the network. On success out has the initiator's key,
 * hello, timestamp and payload, and the peer's replay timestamp is advanced. Returns 0,
 * -ENOKEY, -EBADMSG, -EALREADY, -ESTALE, -EPROTO, -EPROTONOSUPPORT, -EINVAL (stage). */
int fc_hs_read_msg1(struct fc_hs *hs, uint64_t now_ns, const uint8_t *msg, size_t len,
		    struct fc_hs_peer_msg *out);
/* Responder: message 2 (FC_HS_MSG2_LEN(payload_len) bytes). The handshake is then done.
 * Returns 0, -EINVAL, -EMSGSIZE, -ENOBUFS. */
int fc_hs_write_msg2(struct fc_hs *hs, const struct fc_hs_hello *hello, const void *payload,
		     size_t payload_len, uint8_t *out, size_t out_cap, size_t *out_len);
/* Initiator: read message 2; the handshake is then done. Returns 0, -EBADMSG, -EPROTO,
 * -EPROTONOSUPPORT, -EINVAL (stage: also a message 2 after the handshake is done). */
int fc_hs_read_msg2(struct fc_hs *hs, const uint8_t *msg, size_t len,
		    struct fc_hs_peer_msg *out);

/* After the handshake: the handshake hash (hash may be NULL) and the transport keys (keys
 * may be NULL: not derived), then the whole state is wiped. Returns 0 or -EINVAL (not
 * done; the state is wiped all the same). */
int fc_hs_finish(struct fc_hs *hs, uint8_t hash[FC_HS_HASH_LEN], struct fc_hs_keys *keys);
/* Abandon a handshake: wipe every secret in it. */
void fc_hs_wipe(struct fc_hs *hs);

/* A name for each error the functions above return ("unknown key", "bad MAC",
 * "replayed", "stale", "malformed", ...); strerror's text for others. */
const char *fc_hs_strerror(int err);

/* TAI64N of a CLOCK_REALTIME time in ns, and back (-EPROTO: nanoseconds >= 10^9 or
 * before 1970). */
void fc_hs_tai64n(uint64_t realtime_ns, uint8_t ts[FC_HS_TS_LEN]);
int fc_hs_tai64n_ns(const uint8_t ts[FC_HS_TS_LEN], uint64_t *realtime_ns);

#endif
