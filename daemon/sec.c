/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sec.c - falcond's security in `psp` mode (falcond.h): the identity key, the allow-list
 * of peer daemons with where their CMs listen, and the PSP layer (encap_psp.h) wrapped as
 * the node's encapsulation with the per-connection checks of spec 9.2.2:
 *
 *   SPI check (9.2.2.3): a packet's SPI names the session (CM peer slot) it was issued
 *     for (encap_psp.h: bits 15:0 = session + 1); the connection's node peer must be
 *     the one that session reaches. A packet under another peer's tunnel is dropped.
 *   Replay (9.2.2.2): the IV (the sender's transmit time) must be newer than the
 *     connection's remote time less the replay margin.
 *
 * The CM (cm.c) runs the handshake that authenticates each peer and exchanges SPIs and
 * keys, and binds sessions to node peers here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "falcond.h"
#include "io_udp.h"
#include "log.h"

#define SESS_MAX 64u
#define NO_PEER UINT32_MAX

struct fd_sec {
	struct fd_daemon *d;
	struct fc_hs_key id;
	struct fc_hs_peers allow;
	struct fc_encap_psp *psp;
	uint8_t cipher;
	uint64_t margin_ns;
	uint32_t node_peer_of[SESS_MAX];  /* session -> node peer (NO_PEER: none yet) */
	struct fc_peer_addr cm_of[FD_PEERS_MAX]; /* configured peers' CM addresses */
	struct fc_encap_ops ops;
};

static uint64_t psp_now(void *ctx)
{
	(void)ctx;
	return fd_now_ns();
}

static int sec_seal(void *ctx, struct fc_frame *f, uint32_t len)
{
	return fc_encap_psp_ops.seal(((struct fd_sec *)ctx)->psp, f, len);
}

static int sec_open(void *ctx, struct fc_frame *f)
{
	return fc_encap_psp_ops.open(((struct fd_sec *)ctx)->psp, f);
}

static int sec_conn_check(void *ctx, const struct fc_frame *f, uint32_t peer,
			  uint64_t *remote_time)
{
	struct fd_sec *s = ctx;
	uint32_t sess = (f->meta.spi & 0xFFFFu) - 1u;

	if (sess >= SESS_MAX || s->node_peer_of[sess] != peer)
		return -EKEYREJECTED;
	if (!fc_psp_replay_check(remote_time, f->meta.tx_ns, s->margin_ns))
		return -ESTALE;
	return 0;
}

/* The tunnel bits of the SPIs node peer `peer` sends under: its session + 1, as
 * encap_psp.c's spi_make puts it in the low 16 bits (sec_conn_check's inverse). At
 * connection setup, not per packet: a search over SESS_MAX sessions. */
static uint32_t sec_spi_sess(void *ctx, uint32_t peer)
{
	struct fd_sec *s = ctx;

	for (uint32_t i = 0; i < SESS_MAX; i++)
		if (s->node_peer_of[i] == peer)
			return i + 1u;
	return 0;
}

int fd_sec_parse_cm_addr(const char *s, struct fc_peer_addr *out)
{
	struct sockaddr_storage ss;
	char host[64];
	const char *colon;
	unsigned long port;
	char *e;
	size_t n;

	memset(&ss, 0, sizeof(ss));
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		n = (size_t)(end - s - 1);
		colon = end + 1;
		s++;
	} else {
		if (!(colon = strrchr(s, ':')))
			return -EINVAL;
		n = (size_t)(colon - s);
	}
	if (!n || n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = 0;
	port = strtoul(colon + 1, &e, 10);
	if (*e || !port || port > 65535)
		return -EINVAL;
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
		return fc_io_udp_peer_addr((struct sockaddr *)&ss, sizeof(struct sockaddr_in), out);
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
		return fc_io_udp_peer_addr((struct sockaddr *)&ss, sizeof(struct sockaddr_in6), out);
	}
	return -EINVAL;
}

struct fd_sec *fd_sec_new(struct fd_daemon *d)
{
	struct fd_sec *s = calloc(1, sizeof(*s));
	struct fc_encap_psp_cfg pc = { 0 };
	char err[200], b64[FC_HS_B64_LEN];
	int rc;

	if (!s)
		return NULL;
	s->d = d;
	for (uint32_t i = 0; i < SESS_MAX; i++)
		s->node_peer_of[i] = NO_PEER;
	if (fc_psp_crypto_init()) {
		LOG_E("falcond: libsodium did not start");
		goto fail;
	}
	if ((rc = fc_hs_key_load(d->cfg.key_path, &s->id, err, sizeof(err)))) {
		LOG_E("falcond: identity key %s: %s (falconctl key generate -o %s makes one, or "
		      "run with --security none on a fabric you trust)", d->cfg.key_path, err,
		      d->cfg.key_path);
		goto fail;
	}
	for (uint32_t i = 0; i < d->cfg.npeers; i++) {
		if (fd_sec_parse_cm_addr(d->cfg.peers[i].addr, &s->cm_of[i])) {
			LOG_E("falcond: peer %s: not an address:port", d->cfg.peers[i].addr);
			goto fail;
		}
		if ((rc = fc_hs_peers_add(&s->allow, d->cfg.peers[i].pub)) && rc != -EEXIST) {
			LOG_E("falcond: peer %s: %s", d->cfg.peers[i].addr, strerror(-rc));
			goto fail;
		}
	}
	s->cipher = (uint8_t)(d->cfg.psp_cipher < 0 ? fc_psp_cipher_best() : d->cfg.psp_cipher);
	if (!fc_psp_cipher_available(s->cipher)) {
		LOG_E("falcond: --psp-cipher aes-256-gcm: this CPU has no AES instructions "
		      "(chacha20-poly1305 works everywhere)");
		goto fail;
	}
	s->margin_ns = (uint64_t)d->cfg.replay_margin_us * 1000u;
	pc.version = s->cipher;
	pc.max_peers = SESS_MAX;
	pc.now_ns = psp_now;
	if (!(s->psp = fc_encap_psp_new(&pc))) {
		LOG_E("falcond: PSP: %s", strerror(errno));
		goto fail;
	}
	s->ops = (struct fc_encap_ops){ .headroom = fc_encap_psp_ops.headroom,
					.tailroom = fc_encap_psp_ops.tailroom, .seal = sec_seal,
					.open = sec_open, .conn_check = sec_conn_check,
					.spi_sess = sec_spi_sess };
	fc_hs_pub_to_base64(s->id.pub, b64);
	LOG_I("falcond: security psp: %s, identity %s, %u peers allowed",
	      s->cipher == FC_PSP_VER_AES_GCM_256 ? "AES-256-GCM" : "ChaCha20-Poly1305", b64,
	      s->allow.n);
	return s;
fail:
	fd_sec_free(s);
	return NULL;
}

void fd_sec_free(struct fd_sec *s)
{
	if (!s)
		return;
	fc_encap_psp_free(s->psp);
	sodium_memzero(&s->id, sizeof(s->id));
	free(s);
}

const struct fc_encap_ops *fd_sec_encap(struct fd_sec *s) { return &s->ops; }
void *fd_sec_encap_ctx(struct fd_sec *s) { return s; }
const struct fc_hs_key *fd_sec_identity(const struct fd_sec *s) { return &s->id; }
struct fc_hs_peers *fd_sec_allow(struct fd_sec *s) { return &s->allow; }
struct fc_encap_psp *fd_sec_psp(struct fd_sec *s) { return s->psp; }
uint8_t fd_sec_cipher(const struct fd_sec *s) { return s->cipher; }

const uint8_t *fd_sec_key_of(const struct fd_sec *s, const struct sockaddr *sa, socklen_t len)
{
	struct fc_peer_addr a;

	if (fc_io_udp_peer_addr(sa, len, &a))
		return NULL;
	for (uint32_t i = 0; i < s->d->cfg.npeers; i++)
		if (s->cm_of[i].len == a.len && !memcmp(s->cm_of[i].bytes, a.bytes, a.len))
			return s->d->cfg.peers[i].pub;
	return NULL;
}

void fd_sec_bind(struct fd_sec *s, uint32_t sess, uint32_t node_peer)
{
	if (sess < SESS_MAX)
		s->node_peer_of[sess] = node_peer;
}

size_t fd_sec_json(const struct fd_sec *s, char *buf, size_t cap)
{
	const struct fc_encap_psp_counters *c = fc_encap_psp_counters(s->psp);
	struct fd_json j;

	fd_json_init(&j, buf, cap);
	fd_json_open(&j, NULL, '{');
	fd_json_kstr(&j, "cipher", s->cipher == FC_PSP_VER_AES_GCM_256 ? "aes-256-gcm" :
						       "chacha20-poly1305");
	fd_json_kv(&j, "key_generation", "%llu",
		   (unsigned long long)fc_encap_psp_rx_gen(s->psp));
#define C(f) fd_json_kv(&j, #f, "%llu", (unsigned long long)c->f)
	C(tx_sealed); C(tx_no_sa); C(tx_err); C(rx_opened); C(rx_too_short); C(rx_bad_hdr);
	C(rx_unknown_spi); C(rx_old_phase); C(rx_auth_fail); C(rx_key_derived);
#undef C
	fd_json_close(&j, '}');
	return fd_json_done(&j);
}

void fd_sec_reload(struct fd_sec *s, const struct fd_cfg *n)
{
	struct fd_cfg *c = &s->d->cfg;
	struct fc_hs_key id;
	struct fc_peer_addr cm_of[FD_PEERS_MAX];
	char err[200], b64[FC_HS_B64_LEN];

	/* the identity: sessions up keep going; new handshakes prove the new key */
	if (fc_hs_key_load(n->key_path, &id, err, sizeof(err))) {
		LOG_W("falcond: reload: identity key %s: %s: keeping the current one", n->key_path,
		      err);
	} else if (memcmp(id.pub, s->id.pub, sizeof(id.pub))) {
		memcpy(&s->id, &id, sizeof(id));
		fc_hs_pub_to_base64(s->id.pub, b64);
		LOG_I("falcond: reload: new identity %s", b64);
	}
	sodium_memzero(&id, sizeof(id));
	for (uint32_t i = 0; i < n->npeers; i++)
		if (fd_sec_parse_cm_addr(n->peers[i].addr, &cm_of[i])) {
			LOG_W("falcond: reload: peer %s: not an address:port: peers unchanged",
			      n->peers[i].addr);
			return;
		}
	/* peers gone: refused from now on, their sessions end */
	for (uint32_t i = 0; i < c->npeers; i++) {
		int kept = 0;

		for (uint32_t k = 0; k < n->npeers && !kept; k++)
			kept = !memcmp(c->peers[i].pub, n->peers[k].pub, 32);
		if (kept)
			continue;
		fc_hs_peers_remove(&s->allow, c->peers[i].pub);
		fc_hs_pub_to_base64(c->peers[i].pub, b64);
		LOG_I("falcond: reload: peer %s (%s) removed: %u sessions ended", b64,
		      c->peers[i].addr, fd_cm_forget_identity(s->d->cm, c->peers[i].pub));
	}
	/* new ones allowed (kept ones keep their replay state) */
	for (uint32_t k = 0; k < n->npeers; k++)
		if (fc_hs_peers_add(&s->allow, n->peers[k].pub) == 0) {
			fc_hs_pub_to_base64(n->peers[k].pub, b64);
			LOG_I("falcond: reload: peer %s (%s) allowed", b64, n->peers[k].addr);
		}
	memcpy(c->peers, n->peers, sizeof(c->peers));
	c->npeers = n->npeers;
	memcpy(s->cm_of, cm_of, sizeof(cm_of[0]) * n->npeers);
}
