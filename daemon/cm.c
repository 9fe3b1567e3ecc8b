/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cm.c - the connection manager, first form (falcond.h): daemon to daemon on its own UDP
 * port, in the manner of the InfiniBand CM (REQ / REP / RTU) with one more message,
 * because a Falcon QP exists only on an open connection and a connection needs both CIDs:
 *
 *   initiator                                   target
 *   reserve CID_i            REQ -------->      (waits for falcon_accept: backlog)
 *     {hello, service, CID_i, PSNs_i, data port}   reserve CID_t, open conn (CID_i),
 *                            <-------- REP      create QP_t (INIT)
 *   open conn (CID_t),         {hello, CID_t, PSNs_t, QPN_t, data port}
 *   create QP_i, RTR, RTS    RTU -------->      QP_t RTR (QPN_i), RTS: accept returns
 *                              {QPN_i}
 *   connect returns          <-------- EST
 *
 * The initiator reports success only after EST, so neither side's client sends to a QP
 * that is not ready. Lost messages: the initiator resends REQ until REP and RTU until
 * EST, every cm_retry_ms until its deadline; the target answers a repeated REQ with its
 * REP and a repeated RTU with EST (matched by the initiator's random txid and address).
 * DREQ / DREP tear an established connection down: the receiver moves its QP to the error
 * state (its client sees flushed completions) and answers; DREQ is resent until DREP, a
 * bounded number of times.
 *
 * The same exchange sets up three kinds of connection (REQ's kind):
 *   service  falcon_connect / falcon_accept: the CM creates both QPs (RC, or an XRC
 *            initiator at the initiator and an XRC target at the target), above.
 *   bind     falcon_modify_qp to RTR (verbs style): both QPs exist already (INIT) and each
 *            side names the other's QPN; the CM opens a connection and binds both QPs to
 *            it (RTR). Each side sends REQ when its client moves its QP to RTR; a REQ
 *            that finds the named QP not yet there waits as a service REQ waits for an
 *            accept; two REQs that cross are settled by their random txids (the larger
 *            one's sender stays the initiator, the other side becomes its target).
 *   ah       falcon_create_ah: an M:N, unordered connection with no QP, which UD QPs of
 *            either side's clients send through (6.6.3); the target keeps it until DREQ.
 * Connections the engine cannot close yet (a UD work request still holds one) are
 * retried from a timer until it can.
 *
 * Security psp (sec.c): before any of the above, the two daemons run a Noise IK handshake
 * (hs.h) that authenticates both identity keys against the allow-lists and exchanges,
 * inside its encrypted payloads, each side's receive SPI and key (the PSP SA the other
 * side sends with), its data port and boot id, and its cipher. From then on every CM
 * message travels sealed with the handshake's transport keys (ChaCha20-Poly1305, a
 * strictly increasing counter as nonce: a replayed or forged CM message is dropped and
 * counted); a plain message is refused. Crossing handshakes are settled by the static
 * keys: the side with the smaller one stays the initiator. Key rotation sends each peer
 * its new SPI and key (KEYS, sealed, resent until acknowledged); the previous key phase
 * is erased once every peer has acknowledged and a drain time has passed.
 *
 * Every message carries the hello: protocol version and feature bits supported and
 * required. A peer that requires what we lack, or speaks another version, is refused
 * (REJ with the reason) and the reason is logged on both sides. The security issue puts
 * its authenticated handshake in front of REQ; the message has room (flags, reason).
 *
 * Errors that say why (issue 21): every refusal reaches the initiator within a round
 * trip as a reason, which becomes a distinct errno for its client and a sentence naming
 * the peer (fd_cm_why, carried on the API's error reply):
 *   REJ reasons      no listener / no such QP -ECONNREFUSED, backlog full -EAGAIN, no
 *                    resources -EUSERS, version or features -EPROTO, QP types
 *                    -EPROTOTYPE, security mode -EPROTONOSUPPORT
 *   a refused handshake (security psp): the responder answers in clear (FCR1, below),
 *                    at most CM_REFUSALS_PER_S a second, never larger than message 1:
 *                    not allowed -EACCES, cannot authenticate us -EKEYREJECTED, clocks
 *                    -ESTALE, handshake / CM version -EPROTO, cipher or security none at
 *                    the responder -EPROTONOSUPPORT, its tables full -EUSERS
 *   unreachable      the ICMP errors of the CM socket (IP_RECVERR): port, host or network
 *                    unreachable -EHOSTUNREACH; a send that fails for want of a route too
 *   silence          no message of any kind from the peer for CM_SILENT_MS (or three
 *                    retry intervals if longer) after the first REQ: -ETIMEDOUT. A target
 *                    that holds a REQ (backlog, a bind waiting for its QP) answers it and
 *                    each repeat with MRA (IB CM's Message Receipt Acknowledgment), so a
 *                    slow accept is not silence (a peer whose hello lacks FD_CM_F_MRA is
 *                    waited for until the deadline, as before).
 * Our own refusals are logged (log.h rate-limits repeats).
 *
 * Records live in one list (for the admin views and the rare sweeps: a peer restarted,
 * a session came up) and are found through indexes, so that setting up or tearing down
 * the n-th of 65,536 connections costs the same as the first: by id (the API's handle on
 * a record), by transaction (txid, the peer's address, role: REQ / REP / RTU / EST /
 * REJ), by local CID (DREQ, DREP, a connection the engine gave up), by local QPN (bind
 * requests); records waiting for an accept or in a backlog are on a list of their own,
 * bounded by the listeners' backlogs, which the service and bind lookups scan.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "falcon/api.h"
#include "falcon/falcon.h"
#include "falcond.h"
#include "log.h"

#define CM_MAGIC 0x46434d31u /* "FCM1" */
#define CM_PEERS_MAX 64u
#define CM_LISTENERS_MAX 64u
#define CM_BACKLOG_TTL_NS (10ull * 1000000000ull)
#define CM_LINGER_NS (5ull * 1000000000ull) /* target keeps an EST-ed record's txid */

enum cm_type { CM_REQ = 1, CM_REP, CM_RTU, CM_EST, CM_REJ, CM_DREQ, CM_DREP, CM_MRA };

enum cm_reason {
	CM_R_NONE = 0,
	CM_R_NO_LISTENER,
	CM_R_VERSION,
	CM_R_FEATURES,
	CM_R_NO_RESOURCES,
	CM_R_BACKLOG_FULL,
	CM_R_ABORTED,
	CM_R_NO_QP,
	CM_R_QP_TYPE,
	CM_R_SECURITY,   /* the sender runs security psp and the request came in clear */
};

static const char *const reason_name[] = {
	"none", "no listener on that service", "CM version mismatch", "feature mismatch",
	"no resources", "backlog full", "aborted", "no such QP", "QP types do not pair",
	"security mode mismatch",
};

/* A peer that says nothing at all for this long after our first REQ is given up (the
 * file comment, "silence"); three retry intervals if that is longer. */
#define CM_SILENT_MS 1000u
/* Refusals sent in clear to a sender we could not authenticate (FCR1, plain REJ):
 * at most this many a second, a burst of as many. */
#define CM_REFUSALS_PER_S 100u

enum cm_kind { KIND_SERVICE = 0, KIND_BIND, KIND_AH };
static const char *const kind_name[] = { "service", "bind", "ah" };

/* On the wire, big endian. */
struct cm_wire {
	uint32_t magic;
	uint8_t version, type;
	uint16_t reason;
	uint32_t features_supported, features_required;
	uint64_t txid;
	uint16_t service, data_port;
	uint32_t cid;          /* the sender's local CID */
	uint32_t qpn;          /* the sender's QP (REP, RTU, DREQ) */
	uint32_t psn_req, psn_data, rsn; /* the sender's initial transmit PSNs and RSN */
	uint8_t ordering;
	uint8_t kind;          /* enum cm_kind */
	uint8_t qp_type;       /* the sender's QP type (enum fc_rdma_qp_type; ah: 0) */
	uint8_t pad;
	uint32_t dest_cid;     /* DREQ / DREP: the receiver's CID */
	uint32_t dest_qpn;     /* REQ of a bind: the receiver's QP */
	uint32_t pad2;
	uint64_t boot_id;      /* random per start of the sender: a new one means it restarted */
	uint64_t clock_ns;     /* the sender's clock, on which its PSP IVs count (9.2.2.2) */
};
_Static_assert(sizeof(struct cm_wire) == 80, "cm message");

enum cm_role { ROLE_INI = 1, ROLE_TGT };

enum cm_state {
	ST_REQ_SENT = 1,   /* ini */
	ST_RTU_SENT,       /* ini */
	ST_ACCEPT_WAIT,    /* tgt: an accept without a request yet */
	ST_BACKLOG,        /* tgt: a request without an accept yet */
	ST_REP_SENT,       /* tgt */
	ST_ESTABLISHED,
	ST_REMOTE_CLOSED,  /* the peer sent DREQ: QP in error, waiting for our close */
	ST_CLOSING,        /* our QP is gone; the connection lingers until DREP */
};

static const char *const state_name[] = {
	"?", "req-sent", "rtu-sent", "accept-wait", "backlog", "rep-sent", "established",
	"remote-closed", "closing",
};

enum sess_state { SESS_NONE = 0, SESS_HS_SENT, SESS_UP };

struct cm_peer {
	struct sockaddr_storage cm;
	socklen_t cm_len;
	uint64_t boot_id;         /* the instance we know (0: none yet) */
	uint64_t restarts;
	/* security psp: the authenticated session (the slot index is its PSP session) */
	uint8_t sess;             /* enum sess_state */
	uint8_t pub[FC_HS_KEY_LEN];   /* its identity, once authenticated */
	struct fc_hs hs;          /* our handshake in flight (initiator) */
	uint8_t hs_msg1[64];      /* the start of its message 1 (header, ephemeral key): */
	uint8_t hs_msg1_len;      /* a message 1 that is ours came back (a session with us) */
	uint8_t tx_key[FC_HS_KEY_LEN], rx_key[FC_HS_KEY_LEN]; /* CM transport keys */
	uint64_t tx_ctr, rx_ctr;
	uint32_t node_peer;
	uint64_t hs_deadline_ns;
	uint32_t hs_tries;
	uint64_t keys_gen_acked; /* the PSP key generation it acknowledged */
	int64_t clock_offset;    /* its clock (the IVs) less ours, from the handshake */
	uint64_t handshakes;
	uint32_t version, features_supported, features_required;
	uint64_t last_seen_ns;    /* its last message of any kind (REJ, MRA, handshake) */
	uint32_t conns;
	uint64_t rejects;
	uint8_t has_node_peer;    /* node_peer names its data address (a connection was set up) */
	struct cm_rec *ah;        /* our established ah connection to it (fd_cm_ah), or NULL */
};

/* A record's membership of one index (struct cm_index). */
struct cm_link {
	struct cm_rec *next;
	uint32_t bucket;
	uint8_t in;
};

struct cm_rec {
	struct cm_rec *next, *prev;   /* every record (fd_cm.recs) */
	struct cm_rec *wnext, *wprev; /* ST_BACKLOG / ST_ACCEPT_WAIT (fd_cm.waiting) */
	struct cm_link by_id, by_tx, by_cid, by_qpn;
	int64_t id;
	uint8_t role, state, kind;
	uint8_t qp_type, peer_qp_type; /* enum fc_rdma_qp_type; 0 for an ah connection */
	uint16_t service;
	struct fd_cm *cm;
	struct sockaddr_storage cm_addr; /* the peer daemon's CM address */
	socklen_t cm_len;
	uint64_t txid;
	uint16_t peer_data_port;
	uint32_t node_peer;       /* the peer's data address in the node */
	uint32_t lcid, rcid, lqpn, rqpn;
	int have_lcid, have_qp;
	struct fc_txn *t;
	uint32_t my_psn_req, my_psn_data, my_rsn;
	uint32_t peer_psn_req, peer_psn_data, peer_rsn;
	uint8_t ordering;
	struct fd_qp_spec spec;
	int have_spec;
	fd_cm_done_fn done;
	void *ctx;
	ev_timer w;
	uint64_t deadline_ns;
	uint32_t tries;
	int dreq_sent;            /* ST_CLOSING: DREQ went out (not held for an ACK) */
	uint32_t ah_refs;         /* ah initiator: the address handles sharing it */
	uint64_t start_ns;        /* initiator: its first REQ (the silence bound counts from it) */
	int tx_err;               /* initiator: errno of a REQ the socket would not send */
};

struct cm_listener {
	uint16_t service, backlog, queued;
	void *owner;
	int used;
};

#define CM_CLOSING_MAX 256u
#define CM_SOCKBUF_BYTES (4 << 20)
#define CM_BIND_BACKLOG_MAX 64u

/* A chained hash index of records: buckets a power of two, sized at start from
 * --max-conns (twice as many: short chains); the link lives in the record at off. */
struct cm_index {
	struct cm_rec **b;
	uint32_t mask;
	size_t off;
};

struct fd_cm {
	struct fd_daemon *d;
	int fd;
	ev_io w;
	ev_timer sec_w;           /* handshake retries, KEYS resends, key rotation */
	uint64_t rotate_at_ns, erase_at_ns, keys_gen;
	struct fc_txn *closing[CM_CLOSING_MAX]; /* connections the engine could not close yet */
	uint32_t nclosing;
	ev_timer closing_w;
	struct cm_rec *recs;
	uint32_t nrecs;
	struct cm_rec *waiting;   /* ST_BACKLOG and ST_ACCEPT_WAIT records, newest first */
	struct cm_index by_id, by_tx, by_cid, by_qpn;
	int64_t next_id;
	struct cm_peer peers[CM_PEERS_MAX];
	uint32_t npeers;
	struct cm_listener lst[CM_LISTENERS_MAX];
	struct {
		uint64_t rx, tx, rx_bad, rx_stale, rejects_sent, rejects_rcvd, retries;
		uint64_t established, timeouts, closed, fault_drops, close_deferred;
		/* security psp */
		uint64_t hs_started, hs_done, hs_refused[8], rx_plain_refused, rx_unsealed_bad,
			 rx_replayed, rx_no_session, keys_sent, keys_acked, rotations;
	} st;
	uint64_t rng;             /* the CM fault knob's */
	uint64_t boot_id;         /* ours */
	int tx_errno;             /* the last send's errno (0: sent) */
	uint64_t refuse_tat_ns;   /* refusals in clear: their rate limit (GCRA) */
	struct {
		uint64_t refusals_sent, refusals_limited, refusals_rcvd, mra_sent, mra_rcvd;
		uint64_t icmp_errors, silent, tx_errors;
	} wst;
	char why[FC_API_WHY_MAX]; /* fd_cm_why */
};

static int is_psp(const struct fd_cm *cm) { return cm->d->sec != NULL; }

static uint64_t rand64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = fd_now_ns() * 0x9E3779B97F4A7C15ull;
	return v;
}

/* ---- indexes ---- */

static uint32_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xFF51AFD7ED558CCDull;
	k ^= k >> 33;
	return (uint32_t)k;
}

static struct cm_link *link_of(const struct cm_index *x, struct cm_rec *r)
{
	return (struct cm_link *)((uint8_t *)r + x->off);
}

static int index_init(struct cm_index *x, uint32_t max_conns, size_t off)
{
	uint32_t n = 256;

	while (n < 2 * max_conns)
		n <<= 1;
	x->b = calloc(n, sizeof(*x->b));
	x->mask = n - 1;
	x->off = off;
	return x->b ? 0 : -ENOMEM;
}

/* The chain where records of key are (the caller compares the rest). */
static struct cm_rec *index_first(const struct cm_index *x, uint64_t key)
{
	return x->b[mix(key) & x->mask];
}

static struct cm_rec *index_next(const struct cm_index *x, struct cm_rec *r)
{
	return link_of(x, r)->next;
}

static void index_del(struct cm_index *x, struct cm_rec *r)
{
	struct cm_link *l = link_of(x, r);

	if (!l->in)
		return;
	for (struct cm_rec **pp = &x->b[l->bucket]; *pp; pp = &link_of(x, *pp)->next)
		if (*pp == r) {
			*pp = l->next;
			break;
		}
	l->in = 0;
}

/* Index r under key (again, if it was under another). */
static void index_add(struct cm_index *x, struct cm_rec *r, uint64_t key)
{
	struct cm_link *l = link_of(x, r);

	index_del(x, r);
	l->bucket = mix(key) & x->mask;
	l->next = x->b[l->bucket];
	x->b[l->bucket] = r;
	l->in = 1;
}

static void index_free(struct fd_cm *cm)
{
	free(cm->by_id.b);
	free(cm->by_tx.b);
	free(cm->by_cid.b);
	free(cm->by_qpn.b);
}

static uint64_t tx_key(uint64_t txid, uint8_t role)
{
	return txid ^ role;
}

static void waiting_del(struct fd_cm *cm, struct cm_rec *r)
{
	if (r->wprev)
		r->wprev->wnext = r->wnext;
	else if (cm->waiting == r)
		cm->waiting = r->wnext;
	else
		return; /* not on the list */
	if (r->wnext)
		r->wnext->wprev = r->wprev;
	r->wnext = r->wprev = NULL;
}

static const char *addr_str(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		port = ntohs(in->sin_port);
		snprintf(buf, cap, "%s:%u", ip, port);
	} else {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		port = ntohs(in6->sin6_port);
		snprintf(buf, cap, "[%s]:%u", ip, port);
	}
	return buf;
}

static int same_sa(const struct sockaddr_storage *a, socklen_t al,
		   const struct sockaddr_storage *b, socklen_t bl)
{
	struct fc_peer_addr x, y;

	if (fc_io_udp_peer_addr((const void *)a, al, &x) ||
	    fc_io_udp_peer_addr((const void *)b, bl, &y))
		return 0;
	return x.len == y.len && !memcmp(x.bytes, y.bytes, x.len);
}

static struct cm_peer *peer_of(struct fd_cm *cm, const struct sockaddr_storage *a, socklen_t len,
			       int create)
{
	for (uint32_t i = 0; i < cm->npeers; i++)
		if (same_sa(&cm->peers[i].cm, cm->peers[i].cm_len, a, len))
			return &cm->peers[i];
	if (!create || cm->npeers == CM_PEERS_MAX)
		return NULL;
	struct cm_peer *p = &cm->peers[cm->npeers++];

	memset(p, 0, sizeof(*p));
	memcpy(&p->cm, a, len);
	p->cm_len = len;
	return p;
}

/* ---- why (fd_cm_why) ---- */

static void __attribute__((format(printf, 2, 3))) set_why(struct fd_cm *cm, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cm->why, sizeof(cm->why), fmt, ap);
	va_end(ap);
}

const char *fd_cm_why(const struct fd_cm *cm)
{
	return cm->why;
}

/* Refusals in clear: may one go now? (GCRA: CM_REFUSALS_PER_S, as many in a burst) */
static int refusal_ok(struct fd_cm *cm)
{
	uint64_t now = fd_now_ns(), per = 1000000000ull / CM_REFUSALS_PER_S;
	uint64_t burst = per * CM_REFUSALS_PER_S;

	if (now > burst && cm->refuse_tat_ns < now - burst)
		cm->refuse_tat_ns = now - burst;
	if (cm->refuse_tat_ns > now) {
		cm->wst.refusals_limited++;
		return 0;
	}
	cm->refuse_tat_ns += per;
	cm->wst.refusals_sent++;
	return 1;
}

/* ---- messages ---- */
/* (the message senders below go through cm_xmit) */

/* The --fault-cm knob: lose this message? */
static int fault_drop(struct fd_cm *cm)
{
	if (!cm->d->cfg.cm_drop_ppm)
		return 0;
	cm->rng = cm->rng * 6364136223846793005ull + 1442695040888963407ull;
	if ((cm->rng >> 33) % 1000000u >= cm->d->cfg.cm_drop_ppm)
		return 0;
	cm->st.fault_drops++;
	return 1;
}

static void cm_xmit(struct fd_cm *cm, const struct cm_wire *m, const struct sockaddr_storage *to,
		    socklen_t tolen);

static void send_msg(struct fd_cm *cm, const struct cm_rec *r, const struct sockaddr_storage *to,
		     socklen_t tolen, uint8_t type, uint16_t reason, uint64_t txid)
{
	struct cm_wire m = {
		.magic = htonl(CM_MAGIC), .version = FD_CM_VERSION, .type = type,
		.reason = htons(reason),
		.features_supported = htonl(cm->d->cfg.features_supported),
		.features_required = htonl(cm->d->cfg.features_required),
		.txid = htobe64(txid),
		.data_port = htons(cm->d->cfg.data_port),
		.boot_id = htobe64(cm->boot_id),
		.clock_ns = htobe64(fd_now_ns()),
	};

	if (r) {
		m.service = htons(r->service);
		m.cid = htonl(r->lcid);
		m.qpn = htonl(r->lqpn);
		m.psn_req = htonl(r->my_psn_req);
		m.psn_data = htonl(r->my_psn_data);
		m.rsn = htonl(r->my_rsn);
		m.ordering = r->ordering;
		m.kind = r->kind;
		m.qp_type = r->qp_type;
		m.dest_cid = htonl(r->rcid);
		m.dest_qpn = htonl(r->rqpn);
	}
	if (fault_drop(cm))
		return;
	cm_xmit(cm, &m, to, tolen);
}

static void rec_send(struct cm_rec *r, uint8_t type)
{
	send_msg(r->cm, r, &r->cm_addr, r->cm_len, type, 0, r->txid);
}

/* ---- records ---- */

static void rec_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

static struct cm_rec *rec_new(struct fd_cm *cm, uint8_t role, uint8_t state)
{
	struct cm_rec *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->cm = cm;
	r->id = ++cm->next_id;
	r->role = role;
	r->state = state;
	ev_timer_init(&r->w, rec_timer_cb, 0., 0.);
	r->w.data = r;
	r->next = cm->recs;
	if (cm->recs)
		cm->recs->prev = r;
	cm->recs = r;
	cm->nrecs++;
	index_add(&cm->by_id, r, (uint64_t)r->id);
	if (state == ST_BACKLOG || state == ST_ACCEPT_WAIT) {
		r->wnext = cm->waiting;
		if (cm->waiting)
			cm->waiting->wprev = r;
		cm->waiting = r;
	}
	return r;
}

static void rec_arm(struct cm_rec *r, uint64_t after_ns)
{
	ev_timer_stop(r->cm->d->loop, &r->w);
	ev_timer_set(&r->w, (double)after_ns / 1e9, 0.);
	ev_timer_start(r->cm->d->loop, &r->w);
}

static void rec_destroy_qp(struct cm_rec *r)
{
	if (r->have_qp) {
		fc_rdma_qp_destroy(fc_node_rdma(r->cm->d->node), r->lqpn);
		r->have_qp = 0;
	}
}

/* A connection still held by work requests (a UD QP's, through an AH) is closed when
 * they have completed: retried every CM_CLOSING_RETRY_MS. */
#define CM_CLOSING_RETRY_MS 20.

static void closing_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct fd_cm *cm = w->data;
	uint32_t k = 0;

	(void)revents;
	for (uint32_t i = 0; i < cm->nclosing; i++)
		if (fc_node_conn_close(cm->d->node, cm->closing[i]) == -EBUSY)
			cm->closing[k++] = cm->closing[i];
	cm->nclosing = k;
	if (!k)
		ev_timer_stop(loop, w);
}

static void close_later(struct fd_cm *cm, struct fc_txn *t)
{
	if (cm->nclosing == CM_CLOSING_MAX) {
		LOG_W("cm: %u connections wait to close: one more is left open", CM_CLOSING_MAX);
		return;
	}
	cm->closing[cm->nclosing++] = t;
	cm->st.close_deferred++;
	if (!ev_is_active(&cm->closing_w)) {
		ev_timer_set(&cm->closing_w, CM_CLOSING_RETRY_MS / 1e3, CM_CLOSING_RETRY_MS / 1e3);
		ev_timer_start(cm->d->loop, &cm->closing_w);
	}
}

/* Undo the engine side: QP, connection, reserved CID. */
static void rec_release(struct cm_rec *r)
{
	struct fc_node *n = r->cm->d->node;

	rec_destroy_qp(r);
	if (r->t) {
		int rc = fc_node_conn_close(n, r->t);

		if (rc == -EBUSY)
			close_later(r->cm, r->t);
		else if (rc)
			LOG_W("cm: closing connection %u: %s", r->lcid, strerror(-rc));
		r->t = NULL;
		r->have_lcid = 0;
	}
	if (r->have_lcid) {
		fc_node_cid_release(n, r->lcid);
		r->have_lcid = 0;
	}
}

static void rec_free(struct cm_rec *r)
{
	struct fd_cm *cm = r->cm;

	ev_timer_stop(cm->d->loop, &r->w);
	rec_release(r);
	if (r->prev)
		r->prev->next = r->next;
	else
		cm->recs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	waiting_del(cm, r);
	index_del(&cm->by_id, r);
	index_del(&cm->by_tx, r);
	index_del(&cm->by_cid, r);
	index_del(&cm->by_qpn, r);
	if (r->kind == KIND_AH && r->role == ROLE_INI) {
		struct cm_peer *p = peer_of(cm, &r->cm_addr, r->cm_len, 0);

		if (p && p->ah == r)
			p->ah = NULL;
	}
	cm->nrecs--;
	free(r);
}

/* Fail a record: its done gets err, and fd_cm_why the sentence of fmt (NULL: the peer
 * and strerror's text). */
static void __attribute__((format(printf, 3, 4))) rec_fail_why(struct cm_rec *r, int err,
								const char *fmt, ...)
{
	struct fd_cm *cm = r->cm;
	fd_cm_done_fn done = r->done;
	void *ctx = r->ctx;

	if (fmt) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(cm->why, sizeof(cm->why), fmt, ap);
		va_end(ap);
	} else {
		char a[80];

		set_why(cm, "%s (%s connection, service %u): %s", addr_str(&r->cm_addr, a, sizeof(a)),
			kind_name[r->kind], r->service, strerror(-err));
	}
	r->done = NULL;
	rec_free(r);
	if (done)
		done(ctx, err, 0, 0);
}

static void rec_fail(struct cm_rec *r, int err)
{
	rec_fail_why(r, err, NULL);
}

/* Fail every record of ours still asking the peer at addr (REQ sent, no answer taken yet)
 * with err and the sentence why (a refusal of the whole daemon, an ICMP error). Returns
 * how many. A done callback may free other records: the search starts over after each
 * (bounded by the records, on a path that ends them). */
static unsigned fail_asking(struct fd_cm *cm, const struct sockaddr_storage *addr, socklen_t len,
			    int err, const char *why)
{
	unsigned n = 0;

	for (;;) {
		struct cm_rec *r;

		for (r = cm->recs; r; r = r->next)
			if (r->role == ROLE_INI && r->state == ST_REQ_SENT &&
			    same_sa(&r->cm_addr, r->cm_len, addr, len))
				break;
		if (!r)
			return n;
		rec_fail_why(r, err, "%s", why);
		n++;
	}
}

static struct cm_listener *listener_of(struct fd_cm *cm, uint16_t service)
{
	for (uint32_t i = 0; i < CM_LISTENERS_MAX; i++)
		if (cm->lst[i].used && cm->lst[i].service == service)
			return &cm->lst[i];
	return NULL;
}

/* ---- the engine side of a connection ---- */

static int open_conn(struct cm_rec *r)
{
	struct fc_txn_conn_cfg c;

	fc_txn_conn_cfg_default(&c);
	c.pdl.remote_cid = r->rcid;
	c.pdl.ordered = r->kind != KIND_AH && r->ordering == FC_RDMA_ORDER_STRONG;
	c.mn = r->kind == KIND_AH; /* UD: any QP to any QP, 6.6.3 */
	c.limit[FC_TXN_DATA_PKT_TX] = r->cm->d->cfg.conn_data_credits; /* 8.2.3 */
	c.pdl.tx_psn[0] = r->my_psn_req;
	c.pdl.tx_psn[1] = r->my_psn_data;
	c.pdl.rx_psn[0] = r->peer_psn_req;
	c.pdl.rx_psn[1] = r->peer_psn_data;
	c.rsn_tx = r->my_rsn;
	c.rsn_rx = r->peer_rsn;
	/* verbs' default timers until the QP's own replace them (fc_rdma_qp_init.timeout_ns):
	 * the peer may stay silent 0.54 s while we run (falcon.h, "Timers") */
	c.txn_timeout_ns = c.pdl.give_up_ns =
		fc_rdma_verbs_timeout_ns(FALCON_QP_TIMEOUT_DEFAULT, FALCON_QP_RETRY_CNT_DEFAULT);
	/* Swift's fabric delay target (the event carries it to the RUE, spec 10.6.2.1) */
	c.pdl.base_delay_target_ts = fc_ns_to_ts((uint64_t)r->cm->d->cfg.cc_target_us * 1000u);
	/* until the RUE's first answer (and for good with --cc off) */
	if (c.pdl.rto_ns < (uint64_t)r->cm->d->cfg.min_rto_us * 1000u)
		c.pdl.rto_ns = (uint64_t)r->cm->d->cfg.min_rto_us * 1000u;
	r->t = fc_node_conn_open(r->cm->d->node, r->lcid, &c);
	if (!r->t)
		return -errno;
	if (is_psp(r->cm)) { /* 9.2.2.2: replay checks start at the sender's clock, now */
		struct cm_peer *p = peer_of(r->cm, &r->cm_addr, r->cm_len, 0);

		if (p && p->sess == SESS_UP)
			fc_node_conn_remote_time(r->cm->d->node, r->t,
						 fd_now_ns() + (uint64_t)p->clock_offset);
	}
	return 0;
}

/* May a QP of type mine be connected to one of type theirs? RC to RC, an XRC initiator
 * to an XRC target. */
static int types_pair(uint8_t mine, uint8_t theirs)
{
	return (mine == FC_RDMA_QPT_RC && theirs == FC_RDMA_QPT_RC) ||
	       (mine == FC_RDMA_QPT_XRC_INI && theirs == FC_RDMA_QPT_XRC_TGT) ||
	       (mine == FC_RDMA_QPT_XRC_TGT && theirs == FC_RDMA_QPT_XRC_INI);
}

/* The connection's QP: created here (service), or the client's own QP bound to the
 * connection and moved to RTR (bind: the peer's QPN is known already), or none (ah). */
static int make_qp(struct cm_rec *r)
{
	struct fc_rdma *d = fc_node_rdma(r->cm->d->node);
	struct fc_rdma_qp_init q = r->spec.init;
	struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };
	int rc;

	if (r->kind == KIND_AH)
		return 0;
	if (r->kind == KIND_BIND) {
		at = (struct fc_rdma_qp_attr){ .state = FC_RDMA_QPS_RTR, .remote_qpn = r->rqpn,
					       .conn = r->t };
		return fc_rdma_qp_modify(d, r->lqpn, &at);
	}
	q.conn = r->t;
	q.order = r->ordering;
	if ((rc = fc_rdma_qp_create(d, &q, &r->lqpn)))
		return rc;
	r->have_qp = 1;
	if (((r->spec.sq || r->spec.rq) && /* an XRC target has no rings */
	     (rc = fc_rdma_qp_attach_rings(d, r->lqpn, r->spec.sq, r->spec.sq_bytes, r->spec.rq,
					   r->spec.rq_bytes))) ||
	    (rc = fc_rdma_qp_modify(d, r->lqpn, &at)))
		return rc;
	return 0;
}

/* The service QP to RTS (a bound QP goes to RTS when its client says so). */
static int qp_ready(struct cm_rec *r)
{
	struct fc_rdma *d = fc_node_rdma(r->cm->d->node);
	struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_RTR, .remote_qpn = r->rqpn };
	int rc;

	if (r->kind != KIND_SERVICE)
		return 0;
	rc = fc_rdma_qp_modify(d, r->lqpn, &at);
	at.state = FC_RDMA_QPS_RTS;
	return rc ? rc : fc_rdma_qp_modify(d, r->lqpn, &at);
}

static int peer_data(struct cm_rec *r)
{
	struct sockaddr_storage ss = r->cm_addr;
	struct fc_peer_addr pa;
	struct cm_peer *p;
	int rc;

	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(r->peer_data_port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(r->peer_data_port);
	if ((rc = fc_io_udp_peer_addr((struct sockaddr *)&ss, r->cm_len, &pa)) ||
	    (rc = fc_node_peer_add(r->cm->d->node, &pa, &r->node_peer)))
		return rc;
	/* who a UD completion's src_id names (fd_cm_peer_cm_addr); psp: hs_take's already */
	if ((p = peer_of(r->cm, &r->cm_addr, r->cm_len, 1)) && !is_psp(r->cm)) {
		p->node_peer = r->node_peer;
		p->has_node_peer = 1;
	}
	return 0;
}

static void established(struct cm_rec *r)
{
	struct cm_peer *p = peer_of(r->cm, &r->cm_addr, r->cm_len, 1);
	fd_cm_done_fn done = r->done;
	char a[80];

	r->state = ST_ESTABLISHED;
	r->cm->st.established++;
	index_add(&r->cm->by_cid, r, r->lcid);
	if (p)
		p->conns++;
	if (p && r->kind == KIND_AH && r->role == ROLE_INI)
		p->ah = r; /* the one address handles to that peer share (fd_cm_ah) */
	LOG_I("cm: connection %u <-> %u with %s established (%s %u, QP %u <-> %u)",
	      r->lcid, r->rcid, addr_str(&r->cm_addr, a, sizeof(a)), kind_name[r->kind],
	      r->service, r->lqpn, r->rqpn);
	r->done = NULL;
	if (done)
		done(r->ctx, 0, r->lqpn, r->rqpn);
}

/* Every CID of the node is taken: say which limit, once a second at most. */
static void conns_full(struct fd_cm *cm)
{
	static uint64_t last_ns;
	uint64_t now = fd_now_ns();

	if (last_ns && now - last_ns < 1000000000ull)
		return;
	last_ns = now;
	LOG_W("cm: a connection refused: the daemon has %u Falcon connections open "
	      "or being set up, its limit (--max-conns %u)", cm->d->cfg.max_conns,
	      cm->d->cfg.max_conns);
}

/* Target: an accept takes a request. */
static void tgt_bind(struct cm_rec *r)
{
	struct fc_node *n = r->cm->d->node;
	int rc;

	waiting_del(r->cm, r); /* out of the backlog or the accept wait, whatever comes */
	if (r->kind == KIND_SERVICE)
		r->qp_type = r->spec.init.type;
	if (r->kind != KIND_AH && !types_pair(r->qp_type, r->peer_qp_type)) {
		LOG_W("cm: a %s request pairs QP types %u and %u: refused", kind_name[r->kind],
		      r->peer_qp_type, r->qp_type);
		send_msg(r->cm, NULL, &r->cm_addr, r->cm_len, CM_REJ, CM_R_QP_TYPE, r->txid);
		r->cm->st.rejects_sent++;
		rec_fail(r, -EPROTOTYPE);
		return;
	}
	r->my_psn_req = (uint32_t)rand64();
	r->my_psn_data = (uint32_t)rand64();
	r->my_rsn = (uint32_t)rand64();
	if ((rc = peer_data(r)) || (rc = fc_node_cid_reserve(n, r->node_peer, &r->lcid))) {
		if (rc == -ENOSPC)
			conns_full(r->cm);
		goto fail;
	}
	r->have_lcid = 1;
	if ((rc = open_conn(r)) || (rc = make_qp(r)))
		goto fail;
	r->state = ST_REP_SENT;
	rec_send(r, CM_REP);
	r->deadline_ns = fd_now_ns() + (uint64_t)r->cm->d->cfg.cm_retry_ms * 1000000ull *
		r->cm->d->cfg.cm_retries;
	rec_arm(r, r->deadline_ns - fd_now_ns());
	return;
fail:
	{
		char a[80];

		LOG_W("cm: cannot accept a %s request of %s (service %u, QP %u): %s: refused "
		      "(no resources)", kind_name[r->kind], addr_str(&r->cm_addr, a, sizeof(a)),
		      r->service, r->lqpn, strerror(-rc));
		send_msg(r->cm, NULL, &r->cm_addr, r->cm_len, CM_REJ, CM_R_NO_RESOURCES, r->txid);
		r->cm->st.rejects_sent++;
		rec_fail_why(r, rc, "accepting the request of %s (service %u): %s%s", a, r->service,
			     strerror(-rc), rc == -ENOSPC ? " (a table of our daemon is full)" : "");
	}
}

/* ---- receive ---- */

static struct cm_rec *find_tx(struct fd_cm *cm, const struct sockaddr_storage *from, socklen_t len,
			      uint64_t txid, uint8_t role)
{
	for (struct cm_rec *r = index_first(&cm->by_tx, tx_key(txid, role)); r;
	     r = index_next(&cm->by_tx, r))
		if (r->txid == txid && r->role == role && r->state != ST_ACCEPT_WAIT &&
		    same_sa(&r->cm_addr, r->cm_len, from, len))
			return r;
	return NULL;
}

/* What a REQ tells its target. */
static void req_fields(struct cm_rec *r, const struct cm_wire *m,
		       const struct sockaddr_storage *from, socklen_t len)
{
	memcpy(&r->cm_addr, from, len);
	r->cm_len = len;
	r->txid = be64toh(m->txid);
	r->service = ntohs(m->service);
	r->peer_data_port = ntohs(m->data_port);
	r->rcid = ntohl(m->cid);
	r->peer_psn_req = ntohl(m->psn_req);
	r->peer_psn_data = ntohl(m->psn_data);
	r->peer_rsn = ntohl(m->rsn);
	r->peer_qp_type = m->qp_type;
	r->ordering = m->ordering == FC_RDMA_ORDER_WEAK ? FC_RDMA_ORDER_WEAK : FC_RDMA_ORDER_STRONG;
	index_add(&r->cm->by_tx, r, tx_key(r->txid, r->role));
}

static void reject(struct fd_cm *cm, const struct sockaddr_storage *to, socklen_t len,
		   uint16_t why, uint64_t txid)
{
	send_msg(cm, NULL, to, len, CM_REJ, why, txid);
	cm->st.rejects_sent++;
}

/* Target: we hold the REQ of r (backlog): tell its initiator we are alive (MRA). */
static void send_mra(struct cm_rec *r)
{
	rec_send(r, CM_MRA);
	r->cm->wst.mra_sent++;
}

static void on_req_service(struct fd_cm *cm, const struct cm_wire *m,
			   const struct sockaddr_storage *from, socklen_t len)
{
	uint16_t service = ntohs(m->service);
	struct cm_listener *l = listener_of(cm, service);
	struct cm_rec *r, *w = NULL;

	if (!l) {
		reject(cm, from, len, CM_R_NO_LISTENER, be64toh(m->txid));
		return;
	}
	for (struct cm_rec *x = cm->waiting; x; x = x->wnext)
		if (x->state == ST_ACCEPT_WAIT && x->service == service)
			w = x; /* the list is newest first: the last match waited longest */
	if (!w && l->queued >= l->backlog) {
		reject(cm, from, len, CM_R_BACKLOG_FULL, be64toh(m->txid));
		return;
	}
	r = w ? w : rec_new(cm, ROLE_TGT, ST_BACKLOG);
	if (!r)
		return;
	req_fields(r, m, from, len);
	if (w) {
		tgt_bind(r);
	} else {
		l->queued++;
		rec_arm(r, CM_BACKLOG_TTL_NS);
		send_mra(r); /* held for an accept: not silence */
	}
}

/* A bind REQ names our QP (dest_qpn) and theirs (qpn). Our client binds the pair when it
 * moves its QP to RTR naming them (fd_cm_bind): if it has, the REQs crossed; if not, the
 * REQ waits for it, as a service REQ waits for an accept. */
static void on_req_bind(struct fd_cm *cm, const struct cm_wire *m,
			const struct sockaddr_storage *from, socklen_t len)
{
	uint32_t dest = ntohl(m->dest_qpn) & FC_RDMA_QPN_MASK, src = ntohl(m->qpn) & FC_RDMA_QPN_MASK;
	uint64_t txid = be64toh(m->txid);
	uint32_t nbacklog = 0;
	struct cm_rec *r;

	for (struct cm_rec *x = cm->waiting; x; x = x->wnext)
		nbacklog += x->kind == KIND_BIND && x->state == ST_BACKLOG;
	for (struct cm_rec *x = index_first(&cm->by_qpn, dest); x; x = index_next(&cm->by_qpn, x)) {
		if (x->kind != KIND_BIND)
			continue;
		if (x->lqpn != dest || x->rqpn != src || !same_sa(&x->cm_addr, x->cm_len, from, len))
			continue;
		if (x->role == ROLE_INI && x->state == ST_REQ_SENT && txid > x->txid) {
			/* crossed, and theirs is the larger txid: we become its target */
			ev_timer_stop(cm->d->loop, &x->w);
			fc_node_cid_release(cm->d->node, x->lcid);
			x->have_lcid = 0;
			x->role = ROLE_TGT;
			req_fields(x, m, from, len);
			tgt_bind(x);
		} else if (x->role == ROLE_TGT && x->state == ST_BACKLOG) {
			req_fields(x, m, from, len); /* the peer started again: its newest REQ */
			send_mra(x);
		} else {
			cm->st.rx_stale++; /* crossed and ours wins, or done already */
		}
		return;
	}
	if (fc_rdma_qp_state(fc_node_rdma(cm->d->node), dest) < 0) {
		reject(cm, from, len, CM_R_NO_QP, txid);
		return;
	}
	if (nbacklog >= CM_BIND_BACKLOG_MAX) {
		reject(cm, from, len, CM_R_BACKLOG_FULL, txid);
		return;
	}
	if (!(r = rec_new(cm, ROLE_TGT, ST_BACKLOG)))
		return;
	r->kind = KIND_BIND;
	r->lqpn = dest;
	r->rqpn = src;
	index_add(&cm->by_qpn, r, dest);
	req_fields(r, m, from, len);
	rec_arm(r, CM_BACKLOG_TTL_NS);
	send_mra(r); /* held until our client binds its QP: not silence */
}

/* An ah connection needs nobody's consent here: it has no QP of ours. */
static void on_req_ah(struct fd_cm *cm, const struct cm_wire *m,
		      const struct sockaddr_storage *from, socklen_t len)
{
	struct cm_rec *r = rec_new(cm, ROLE_TGT, ST_BACKLOG);

	if (!r)
		return;
	r->kind = KIND_AH;
	req_fields(r, m, from, len);
	tgt_bind(r);
}

static void on_req(struct fd_cm *cm, const struct cm_wire *m, const struct sockaddr_storage *from,
		   socklen_t len)
{
	struct cm_rec *r = find_tx(cm, from, len, be64toh(m->txid), ROLE_TGT);

	if (r) { /* a repeated REQ: our REP was lost, or we hold it (MRA again) */
		if (r->state == ST_REP_SENT || r->state == ST_ESTABLISHED)
			rec_send(r, CM_REP);
		else if (r->state == ST_BACKLOG)
			send_mra(r);
		cm->st.rx_stale++;
		return;
	}
	switch (m->kind) {
	case KIND_SERVICE: on_req_service(cm, m, from, len); return;
	case KIND_BIND: on_req_bind(cm, m, from, len); return;
	case KIND_AH: on_req_ah(cm, m, from, len); return;
	default: cm->st.rx_bad++; return;
	}
}

static void on_rep(struct fd_cm *cm, struct cm_rec *r, const struct cm_wire *m)
{
	struct fc_node *n = cm->d->node;
	int rc;

	if (r->state == ST_RTU_SENT || r->state == ST_ESTABLISHED) {
		rec_send(r, CM_RTU); /* our RTU was lost (or the REQ repeated) */
		cm->st.rx_stale++;
		return;
	}
	if (r->state != ST_REQ_SENT)
		return;
	if ((r->kind != KIND_AH && !types_pair(r->qp_type, m->qp_type)) ||
	    (r->kind == KIND_BIND && (ntohl(m->qpn) & FC_RDMA_QPN_MASK) != r->rqpn)) {
		LOG_W("cm: the answer for QP %u pairs it with a QP of type %u, number %u: refused",
		      r->lqpn, m->qp_type, ntohl(m->qpn));
		reject(cm, &r->cm_addr, r->cm_len, CM_R_QP_TYPE, r->txid);
		rec_fail(r, -EPROTOTYPE);
		return;
	}
	r->rcid = ntohl(m->cid);
	r->rqpn = ntohl(m->qpn) & FC_RDMA_QPN_MASK;
	r->peer_data_port = ntohs(m->data_port);
	r->peer_psn_req = ntohl(m->psn_req);
	r->peer_psn_data = ntohl(m->psn_data);
	r->peer_rsn = ntohl(m->rsn);
	if ((rc = peer_data(r)) || (rc = fc_node_cid_bind(n, r->lcid, r->node_peer)) ||
	    (rc = open_conn(r)) || (rc = make_qp(r)) || (rc = qp_ready(r))) {
		LOG_W("cm: connecting (%s %u, QP %u): %s", kind_name[r->kind], r->service, r->lqpn,
		      strerror(-rc));
		send_msg(cm, NULL, &r->cm_addr, r->cm_len, CM_REJ, CM_R_NO_RESOURCES, r->txid);
		cm->st.rejects_sent++;
		rec_fail(r, rc);
		return;
	}
	r->state = ST_RTU_SENT;
	r->tries = 0;
	rec_send(r, CM_RTU);
	rec_arm(r, (uint64_t)cm->d->cfg.cm_retry_ms * 1000000ull);
}

static void on_rtu(struct fd_cm *cm, struct cm_rec *r, const struct cm_wire *m)
{
	int rc;

	if (r->state == ST_ESTABLISHED) {
		rec_send(r, CM_EST);
		cm->st.rx_stale++;
		return;
	}
	if (r->state != ST_REP_SENT)
		return;
	r->rqpn = ntohl(m->qpn) & FC_RDMA_QPN_MASK;
	if ((rc = qp_ready(r))) {
		LOG_W("cm: completing service %u: %s", r->service, strerror(-rc));
		send_msg(cm, NULL, &r->cm_addr, r->cm_len, CM_REJ, CM_R_NO_RESOURCES, r->txid);
		rec_fail(r, rc);
		return;
	}
	ev_timer_stop(cm->d->loop, &r->w);
	rec_send(r, CM_EST);
	established(r);
}

/* The errno a REJ reason becomes for the client (the file comment). */
static int rej_errno(uint16_t why)
{
	switch (why) {
	case CM_R_NO_LISTENER:
	case CM_R_NO_QP: return -ECONNREFUSED;
	case CM_R_VERSION:
	case CM_R_FEATURES: return -EPROTO;
	case CM_R_NO_RESOURCES: return -EUSERS;
	case CM_R_BACKLOG_FULL: return -EAGAIN;
	case CM_R_ABORTED: return -ECONNABORTED;
	case CM_R_QP_TYPE: return -EPROTOTYPE;
	case CM_R_SECURITY: return -EPROTONOSUPPORT;
	default: return -ECONNREFUSED;
	}
}

/* What a REJ of r says, for the client (its hello: the refuser's version and features). */
static void rej_text(const struct cm_rec *r, const struct cm_wire *m, char *buf, size_t cap)
{
	const struct fd_cfg *c = &r->cm->d->cfg;
	uint16_t why = ntohs(m->reason);

	switch (why) {
	case CM_R_NO_LISTENER:
		snprintf(buf, cap, "no listener on service %u there", r->service);
		break;
	case CM_R_NO_QP:
		snprintf(buf, cap, "it has no QP %u", r->rqpn);
		break;
	case CM_R_VERSION:
		snprintf(buf, cap, "it speaks CM version %u, we %u", m->version, FD_CM_VERSION);
		break;
	case CM_R_FEATURES:
		snprintf(buf, cap, "features do not match (it supports %#x and requires %#x, we "
			 "support %#x and require %#x)", ntohl(m->features_supported),
			 ntohl(m->features_required), c->features_supported, c->features_required);
		break;
	case CM_R_NO_RESOURCES:
		snprintf(buf, cap, "it is out of resources (a connection or QP table of it is full)");
		break;
	case CM_R_BACKLOG_FULL:
		snprintf(buf, cap, "the backlog of its listener on service %u is full", r->service);
		break;
	case CM_R_SECURITY:
		snprintf(buf, cap, "it runs security psp, we none (both ends need the same --security)");
		break;
	default:
		snprintf(buf, cap, "%s", why < sizeof(reason_name) / sizeof(reason_name[0]) ?
			 reason_name[why] : "an unknown reason");
	}
}

static void on_rej(struct fd_cm *cm, struct cm_rec *r, const struct cm_wire *m)
{
	uint16_t why = ntohs(m->reason);
	char a[80], text[160];

	cm->st.rejects_rcvd++;
	if (r->state != ST_REQ_SENT && r->state != ST_RTU_SENT && r->state != ST_REP_SENT)
		return;
	rej_text(r, m, text, sizeof(text));
	LOG_W("cm: %s refused a %s connection (service %u, QP %u -> %u): %s",
	      addr_str(&r->cm_addr, a, sizeof(a)), kind_name[r->kind], r->service, r->lqpn,
	      r->rqpn, text);
	rec_fail_why(r, rej_errno(why), "%s refused the %s connection: %s", a, kind_name[r->kind],
		     text);
}

static struct cm_rec *find_conn(struct fd_cm *cm, const struct sockaddr_storage *from,
				socklen_t len, uint32_t lcid)
{
	for (struct cm_rec *r = index_first(&cm->by_cid, lcid); r; r = index_next(&cm->by_cid, r))
		if (r->lcid == lcid && (r->state == ST_ESTABLISHED || r->state == ST_REMOTE_CLOSED ||
					r->state == ST_CLOSING) &&
		    same_sa(&r->cm_addr, r->cm_len, from, len))
			return r;
	return NULL;
}

void fd_cm_conn_dead(struct fd_cm *cm, uint32_t lcid)
{
	for (struct cm_rec *r = index_first(&cm->by_cid, lcid); r; r = index_next(&cm->by_cid, r)) {
		char a[80];

		if (r->lcid != lcid || r->state != ST_ESTABLISHED || r->kind == KIND_AH)
			continue;
		LOG_W("cm: %s connection %u to %s failed: the peer was silent past QP %u's "
		      "timers; telling it", kind_name[r->kind], r->lcid,
		      addr_str(&r->cm_addr, a, sizeof(a)), r->lqpn);
		r->state = ST_REMOTE_CLOSED; /* nothing more to say; the client closes it */
		rec_send(r, CM_DREQ);        /* one try: the peer's own timers are the backstop */
		return;
	}
}

static void on_dreq(struct fd_cm *cm, const struct cm_wire *m, const struct sockaddr_storage *from,
		    socklen_t len)
{
	struct cm_rec *r = find_conn(cm, from, len, ntohl(m->dest_cid));
	char a[80];

	if (r && r->state == ST_ESTABLISHED) {
		struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_ERR };

		/* the peer sent its last ACKs before this DREQ, on the data socket: take them
		 * first, so what it acknowledged completes instead of being flushed (the loop
		 * may have been handed both sockets at once, the CM's first) */
		fd_rx(cm->d);
		if (r->kind != KIND_AH)
			fc_rdma_qp_modify(fc_node_rdma(cm->d->node), r->lqpn, &at);
		r->state = ST_REMOTE_CLOSED;
		LOG_I("cm: %s closed %s connection %u (QP %u in error)",
		      addr_str(from, a, sizeof(a)), kind_name[r->kind], r->lcid, r->lqpn);
		fd_kick(cm->d);
	}
	/* answer in any case: our DREP may have been lost after we forgot the record */
	struct cm_wire rep = *m;

	rep.type = CM_DREP;
	rep.boot_id = htobe64(cm->boot_id);
	rep.clock_ns = htobe64(fd_now_ns());
	rep.features_supported = htonl(cm->d->cfg.features_supported);
	rep.features_required = htonl(cm->d->cfg.features_required);
	if (!fault_drop(cm))
		cm_xmit(cm, &rep, from, len);
	if (r && r->kind == KIND_AH && r->role == ROLE_TGT) /* no client holds it */
		rec_free(r);
}

/* The peer daemon at from started again (a new boot id): what we had with the old
 * instance is gone. Its connections fail now, as a retry limit would fail them (their QPs
 * go to the error state, every WR completes), instead of retransmitting into the new
 * instance, which may have given their CIDs to new connections; handshakes it was in the
 * middle of end. Records of a handshake with the new instance are not touched. */
static void peer_restarted(struct fd_cm *cm, struct cm_peer *p, const struct sockaddr_storage *from,
			   socklen_t len, const char *why)
{
	struct cm_rec *r, *next;
	uint32_t n = 0;
	char a[80];

	p->restarts++;
	for (r = cm->recs; r; r = next) {
		next = r->next;
		if (!same_sa(&r->cm_addr, r->cm_len, from, len))
			continue;
		switch (r->state) {
		case ST_RTU_SENT:
		case ST_REP_SENT:
			n++;
			rec_fail(r, -ECONNRESET);
			break;
		case ST_ESTABLISHED:
			n++;
			if (p->conns)
				p->conns--;
			if (r->t)
				fc_pdl_fail(fc_txn_pdl(r->t), -ECONNRESET);
			if (r->kind == KIND_AH && r->role == ROLE_TGT) {
				rec_free(r);
				break;
			}
			if (r->kind != KIND_AH) {
				struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_ERR };

				fc_rdma_qp_modify(fc_node_rdma(cm->d->node), r->lqpn, &at);
			}
			r->state = ST_REMOTE_CLOSED;
			break;
		case ST_REMOTE_CLOSED:
			if (r->t)
				fc_pdl_fail(fc_txn_pdl(r->t), -ECONNRESET);
			break;
		case ST_CLOSING: /* no DREP will come from the new instance */
			n++;
			rec_free(r);
			break;
		}
	}
	LOG_W("cm: %s %s: %u connections with it ended", addr_str(from, a, sizeof(a)), why, n);
	fd_kick(cm->d);
}

static int hello_ok(struct fd_cm *cm, const struct cm_wire *m, const struct sockaddr_storage *from,
		    socklen_t len, uint16_t *why)
{
	uint32_t req = ntohl(m->features_required), sup = ntohl(m->features_supported);
	struct cm_peer *p = peer_of(cm, from, len, 1);
	uint64_t boot = be64toh(m->boot_id);
	char a[80];

	if (p && boot && p->boot_id && boot != p->boot_id)
		peer_restarted(cm, p, from, len, "restarted (a new boot id)");
	if (p && boot)
		p->boot_id = boot;
	if (p && is_psp(cm)) /* authenticated (sealed): its clock now, for replay checks */
		p->clock_offset = (int64_t)(be64toh(m->clock_ns) - fd_now_ns());
	if (p) {
		p->version = m->version;
		p->features_supported = sup;
		p->features_required = req;
		p->last_seen_ns = fd_now_ns();
	}
	if (m->version != FD_CM_VERSION) {
		LOG_W("cm: %s speaks CM version %u, we speak %u: refused",
		      addr_str(from, a, sizeof(a)), m->version, FD_CM_VERSION);
		*why = CM_R_VERSION;
	} else if (req & ~cm->d->cfg.features_supported) {
		LOG_W("cm: %s requires features %#x we lack (we support %#x): refused",
		      addr_str(from, a, sizeof(a)), req & ~cm->d->cfg.features_supported,
		      cm->d->cfg.features_supported);
		*why = CM_R_FEATURES;
	} else if (cm->d->cfg.features_required & ~sup) {
		LOG_W("cm: %s lacks features %#x we require: refused", addr_str(from, a, sizeof(a)),
		      cm->d->cfg.features_required & ~sup);
		*why = CM_R_FEATURES;
	} else {
		return 1;
	}
	if (p)
		p->rejects++;
	return 0;
}

static void on_msg(struct fd_cm *cm, const struct cm_wire *m, const struct sockaddr_storage *from,
		   socklen_t len)
{
	uint64_t txid = be64toh(m->txid);
	struct cm_rec *r;
	uint16_t why = 0;

	if (ntohl(m->magic) != CM_MAGIC || !m->type || m->type > CM_MRA) {
		cm->st.rx_bad++;
		return;
	}
	if (m->type != CM_REJ && m->type != CM_DREP && !hello_ok(cm, m, from, len, &why)) {
		if (m->type == CM_REQ || m->type == CM_REP) {
			send_msg(cm, NULL, from, len, CM_REJ, why, txid);
			cm->st.rejects_sent++;
			if (m->type == CM_REP && (r = find_tx(cm, from, len, txid, ROLE_INI))) {
				struct cm_wire as = *m;
				char a[80], text[160];

				as.reason = htons(why); /* the answer refused as its REJ would say */
				rej_text(r, &as, text, sizeof(text));
				rec_fail_why(r, rej_errno(why), "%s answered, but we refuse it: %s",
					     addr_str(from, a, sizeof(a)), text);
			}
		}
		return;
	}
	switch (m->type) {
	case CM_REQ:
		on_req(cm, m, from, len);
		return;
	case CM_DREQ:
		on_dreq(cm, m, from, len);
		return;
	case CM_DREP:
		r = find_conn(cm, from, len, ntohl(m->cid));
		if (r && r->state == ST_CLOSING)
			rec_free(r);
		return;
	}
	r = find_tx(cm, from, len, txid, m->type == CM_RTU ? ROLE_TGT :
		    m->type == CM_REJ ? 0 : ROLE_INI);
	if (!r && m->type == CM_REJ)
		r = find_tx(cm, from, len, txid, ROLE_INI) ?: find_tx(cm, from, len, txid, ROLE_TGT);
	if (!r) {
		cm->st.rx_stale++;
		return;
	}
	if (m->type == CM_REP)
		on_rep(cm, r, m);
	else if (m->type == CM_RTU)
		on_rtu(cm, r, m);
	else if (m->type == CM_EST && r->state == ST_RTU_SENT) {
		ev_timer_stop(cm->d->loop, &r->w);
		established(r);
	} else if (m->type == CM_REJ)
		on_rej(cm, r, m);
	else if (m->type == CM_MRA)
		cm->wst.mra_rcvd++; /* it holds our REQ: alive (hello_ok noted it) */
}


/* ---- security psp: sessions (the file comment) ---- */

#define TAG_HS1 0x46434831u    /* "FCH1": handshake message 1 follows */
#define TAG_HS2 0x46434832u    /* "FCH2" */
#define TAG_SEALED 0x46435331u /* "FCS1": counter, then a sealed inner message */
#define TAG_REFUSED 0x46435231u /* "FCR1": a message 1 refused, in clear (struct hs_refusal) */

/* A refused handshake, told in clear to whoever sent message 1 (we could not, or would
 * not, authenticate it): the reason, and only to an authenticated initiator (a mismatch
 * found in its payload) our CM version or cipher. It echoes the header and ephemeral
 * key of the message 1 it answers, which an off-path sender cannot guess: the initiator
 * takes a refusal only for the handshake it has in flight. 44 bytes: less than any
 * message 1 (FC_HS_MSG1_LEN(HS_PAYLOAD_LEN) = 180); at most CM_REFUSALS_PER_S a second.
 * Replayed and malformed messages 1 get no answer (never from a true initiator). */
#define HS_ECHO_LEN (FC_HS_HDR_LEN + FC_HS_KEY_LEN)
struct hs_refusal {
	uint32_t tag;           /* TAG_REFUSED, big endian */
	uint8_t reason;         /* enum hs_refuse */
	uint8_t cm_version;     /* HR_VERSION after authentication: ours; else 0 */
	uint8_t cipher;         /* HR_CIPHER: our PSP version; else 0 */
	uint8_t pad;
	uint8_t echo[HS_ECHO_LEN];
};
_Static_assert(sizeof(struct hs_refusal) == 44, "hs refusal");

enum hs_refuse {
	HR_SECURITY = 1,  /* the responder runs security none */
	HR_NOT_ALLOWED,   /* our key is not on its allow-list (-ENOKEY there) */
	HR_AUTH,          /* message 1 did not authenticate: not its key we have (-EBADMSG) */
	HR_STALE,         /* our timestamp is too far from its clock (-ESTALE) */
	HR_VERSION,       /* handshake wire version, or (authenticated) CM version / features */
	HR_CIPHER,        /* (authenticated) another PSP cipher */
	HR_RESOURCES,     /* (authenticated) its peer or key tables are full */
	HR_END
};
#define SEALED_HDR 12u         /* tag + counter: the AEAD's associated data */
#define INNER_MAX 96u

enum inner_kind { IN_WIRE = 1, IN_KEYS, IN_KEYS_ACK };

/* What each side's handshake payload carries (inside the Noise AEAD): cipher (1), pad
 * (1), data port (2), receive SPI (4) and key (32), boot id (8), the sender's clock (8:
 * the IVs it sends count on it). */
#define HS_PAYLOAD_LEN 56u

static const char *const hs_refusal_name[8] = {
	"unknown key", "bad MAC", "replayed", "stale", "malformed", "unsupported version",
	"cipher or CM version mismatch", "other",
};
/* ... and as JSON keys and metric labels */
static const char *const hs_refusal_key[8] = {
	"unknown_key", "bad_mac", "replayed", "stale", "malformed", "unsupported_version",
	"version_mismatch", "other",
};

static unsigned hs_refusal(int rc)
{
	switch (rc) {
	case -ENOKEY: return 0;
	case -EBADMSG: return 1;
	case -EALREADY: return 2;
	case -ESTALE: return 3;
	case -EPROTO: return 4;
	case -EPROTONOSUPPORT: return 5;
	case -EPROTOTYPE: return 6;
	default: return 7;
	}
}


static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t sess_of(const struct fd_cm *cm, const struct cm_peer *p)
{
	return (uint32_t)(p - cm->peers);
}

/* Send one datagram. A send can fail once for an ICMP error that came back for another
 * datagram (IP_RECVERR keeps it pending on the socket): it is tried once more, and what
 * fails then is this one's own (cm->tx_errno, which REQ senders check: no route). */
static void xmit_raw(struct fd_cm *cm, const void *buf, size_t len,
		     const struct sockaddr_storage *to, socklen_t tolen)
{
	for (int i = 0; i < 2; i++)
		if (sendto(cm->fd, buf, len, 0, (const struct sockaddr *)to, tolen) == (ssize_t)len) {
			cm->st.tx++;
			return;
		}
	cm->tx_errno = errno;
	cm->wst.tx_errors++;
}

/* One inner message, sealed under the session's transport key (nonce: 4 zero bytes and
 * the counter, big endian; the tag and counter are authenticated too). */
static void sealed_send(struct fd_cm *cm, struct cm_peer *p, uint8_t kind, const void *body,
			size_t len)
{
	uint8_t pt[1 + INNER_MAX], buf[SEALED_HDR + 1 + INNER_MAX + 16], nonce[12] = { 0 };
	uint64_t ctr = ++p->tx_ctr, be = htobe64(ctr);
	uint32_t tag = htonl(TAG_SEALED);
	unsigned long long clen;

	pt[0] = kind;
	memcpy(pt + 1, body, len);
	memcpy(buf, &tag, 4);
	memcpy(buf + 4, &be, 8);
	memcpy(nonce + 4, &be, 8);
	crypto_aead_chacha20poly1305_ietf_encrypt(buf + SEALED_HDR, &clen, pt, 1 + len, buf,
						  SEALED_HDR, NULL, nonce, p->tx_key);
	sodium_memzero(pt, sizeof(pt));
	xmit_raw(cm, buf, SEALED_HDR + (size_t)clen, &p->cm, p->cm_len);
}

/* Our side of a handshake payload for session p: cipher, data port, boot id and the SPI
 * and key the peer sends to us with (issued for this session). */
static int hs_payload(struct fd_cm *cm, struct cm_peer *p, uint8_t out[HS_PAYLOAD_LEN])
{
	uint32_t spi, be32;
	uint16_t port = htons(cm->d->cfg.data_port);
	uint64_t boot = htobe64(cm->boot_id), clock = htobe64(fd_now_ns());
	int rc = fc_encap_psp_rx_issue(fd_sec_psp(cm->d->sec), sess_of(cm, p), &spi, out + 8);

	if (rc)
		return rc;
	out[0] = fd_sec_cipher(cm->d->sec);
	out[1] = 0;
	memcpy(out + 2, &port, 2);
	be32 = htonl(spi);
	memcpy(out + 4, &be32, 4);
	memcpy(out + 40, &boot, 8);
	memcpy(out + 48, &clock, 8);
	return 0;
}

static void peer_restarted(struct fd_cm *cm, struct cm_peer *p, const struct sockaddr_storage *from,
			   socklen_t len, const char *why);

/* The peer's payload: its cipher must be ours; its data address becomes a node peer whose
 * transmit SA is the SPI and key it gave; this session is that node peer's tunnel. */
static int hs_take(struct fd_cm *cm, struct cm_peer *p, const struct fc_hs_peer_msg *m)
{
	struct sockaddr_storage ss = p->cm;
	struct fc_peer_addr pa;
	uint16_t port;
	uint32_t spi;
	uint64_t boot;
	int rc;

	if (m->payload_len == HS_PAYLOAD_LEN && m->payload[0] != fd_sec_cipher(cm->d->sec)) {
		char a[80];

		LOG_W("cm: %s encrypts with PSP version %u, we with %u: refused (--psp-cipher must "
		      "agree; chacha20-poly1305 runs everywhere)", addr_str(&p->cm, a, sizeof(a)),
		      m->payload[0], fd_sec_cipher(cm->d->sec));
		return -EPROTOTYPE;
	}
	if (m->payload_len != HS_PAYLOAD_LEN || m->hello.version != FD_CM_VERSION ||
	    (m->hello.features_required & ~cm->d->cfg.features_supported) ||
	    (cm->d->cfg.features_required & ~m->hello.features_supported))
		return -EPROTOTYPE;
	memcpy(&port, m->payload + 2, 2);
	memcpy(&spi, m->payload + 4, 4);
	memcpy(&boot, m->payload + 40, 8);
	{
		uint64_t clock;

		memcpy(&clock, m->payload + 48, 8);
		p->clock_offset = (int64_t)(be64toh(clock) - fd_now_ns());
	}
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = port;
	if ((rc = fc_io_udp_peer_addr((struct sockaddr *)&ss, p->cm_len, &pa)) ||
	    (rc = fc_node_peer_add(cm->d->node, &pa, &p->node_peer)) ||
	    (rc = fc_encap_psp_tx_set(fd_sec_psp(cm->d->sec), p->node_peer, ntohl(spi),
				      m->payload + 8)))
		return rc;
	fd_sec_bind(cm->d->sec, sess_of(cm, p), p->node_peer);
	p->has_node_peer = 1;
	boot = be64toh(boot);
	if (p->boot_id && boot && boot != p->boot_id)
		peer_restarted(cm, p, &p->cm, p->cm_len, "restarted (a new boot id)");
	p->boot_id = boot;
	p->keys_gen_acked = fc_encap_psp_rx_gen(fd_sec_psp(cm->d->sec));
	return 0;
}

static void ini_send(struct cm_rec *r);

/* The session is up: the keys of the handshake seal what follows; records waiting for it
 * go now. */
static void sess_up(struct fd_cm *cm, struct cm_peer *p, struct fc_hs *hs, const uint8_t pub[32],
		    bool self)
{
	struct fc_hs_keys keys;
	char a[80], b64[FC_HS_B64_LEN];

	fc_hs_finish(hs, NULL, &keys);
	memcpy(p->tx_key, keys.send, sizeof(p->tx_key));
	memcpy(p->rx_key, keys.recv, sizeof(p->rx_key));
	/* a session with ourselves (clients of this daemon talking to each other; the
	 * allow-list has our own key): we answered our own message 1 as responder, and what
	 * we seal with the responder's send key comes back to us, so we open with it too */
	if (self)
		memcpy(p->rx_key, keys.send, sizeof(p->rx_key));
	sodium_memzero(&keys, sizeof(keys));
	memcpy(p->pub, pub, sizeof(p->pub));
	p->tx_ctr = p->rx_ctr = 0;
	p->sess = SESS_UP;
	p->handshakes++;
	cm->st.hs_done++;
	fc_hs_pub_to_base64(pub, b64);
	LOG_I("cm: %s authenticated (%s): session %u up", addr_str(&p->cm, a, sizeof(a)), b64,
	      sess_of(cm, p));
	for (struct cm_rec *r = cm->recs; r; r = r->next)
		if (r->role == ROLE_INI && r->state == ST_REQ_SENT &&
		    same_sa(&r->cm_addr, r->cm_len, &p->cm, p->cm_len))
			rec_send(r, CM_REQ);
}

static void hs_refused(struct fd_cm *cm, const struct sockaddr_storage *from, int rc,
		       const char *what)
{
	unsigned k = hs_refusal(rc);
	char a[80];

	cm->st.hs_refused[k]++;
	LOG_W("cm: %s from %s refused: %s", what, addr_str(from, a, sizeof(a)), hs_refusal_name[k]);
}

/* Initiator: a new message 1 to p (a retry is a new handshake: hs.h). */
static void hs_start(struct fd_cm *cm, struct cm_peer *p)
{
	const uint8_t *rs = fd_sec_key_of(cm->d->sec, (const struct sockaddr *)&p->cm, p->cm_len);
	struct fc_hs_config cfg = { .self = fd_sec_identity(cm->d->sec),
				    .peers = fd_sec_allow(cm->d->sec) };
	struct fc_hs_hello hello = { .version = FD_CM_VERSION,
				     .features_supported = cm->d->cfg.features_supported,
				     .features_required = cm->d->cfg.features_required };
	uint8_t buf[4 + FC_HS_MSG1_MAX], pl[HS_PAYLOAD_LEN];
	uint32_t tag = htonl(TAG_HS1);
	size_t n;
	char a[80];
	int rc;

	if (p->sess == SESS_HS_SENT)
		fc_hs_wipe(&p->hs);
	p->sess = SESS_NONE;
	if (!rs) {
		LOG_W("cm: no key configured for %s (--peer KEY@%s): not connecting",
		      addr_str(&p->cm, a, sizeof(a)), addr_str(&p->cm, a, sizeof(a)));
		return;
	}
	if ((rc = fc_hs_initiator(&p->hs, &cfg, rs)) || (rc = hs_payload(cm, p, pl)) ||
	    (rc = fc_hs_write_msg1(&p->hs, realtime_ns(), &hello, pl, sizeof(pl), buf + 4,
				   sizeof(buf) - 4, &n))) {
		sodium_memzero(pl, sizeof(pl));
		fc_hs_wipe(&p->hs);
		LOG_W("cm: handshake with %s: %s", addr_str(&p->cm, a, sizeof(a)), fc_hs_strerror(rc));
		return;
	}
	sodium_memzero(pl, sizeof(pl));
	memcpy(buf, &tag, 4);
	p->hs_msg1_len = (uint8_t)(n < sizeof(p->hs_msg1) ? n : sizeof(p->hs_msg1));
	memcpy(p->hs_msg1, buf + 4, p->hs_msg1_len);
	p->sess = SESS_HS_SENT;
	p->hs_deadline_ns = fd_now_ns() + (uint64_t)cm->d->cfg.cm_retry_ms * 1000000ull;
	cm->st.hs_started++;
	if (!fault_drop(cm))
		xmit_raw(cm, buf, 4 + n, &p->cm, p->cm_len);
}

/* Tell the sender of message 1 msg why we refuse it (struct hs_refusal); reason 0: say
 * nothing. Also from a daemon in security none, which cannot take handshakes at all. */
static void refuse_hs(struct fd_cm *cm, const uint8_t *msg, size_t len,
		      const struct sockaddr_storage *to, socklen_t tolen, uint8_t reason)
{
	struct hs_refusal m = { .tag = htonl(TAG_REFUSED), .reason = reason };

	if (!reason || len < HS_ECHO_LEN || !refusal_ok(cm))
		return;
	if (reason == HR_VERSION && is_psp(cm))
		m.cm_version = FD_CM_VERSION;
	if (reason == HR_CIPHER)
		m.cipher = fd_sec_cipher(cm->d->sec);
	memcpy(m.echo, msg, HS_ECHO_LEN);
	xmit_raw(cm, &m, sizeof(m), to, tolen);
}

/* What a refusal of our handshake means for our clients: the errno, and the sentence. */
static int refused_text(const struct hs_refusal *m, uint8_t our_cipher, char *buf, size_t cap)
{
	switch (m->reason) {
	case HR_SECURITY:
		snprintf(buf, cap, "it runs security none, we psp (both ends need the same "
			 "--security)");
		return -EPROTONOSUPPORT;
	case HR_NOT_ALLOWED:
		snprintf(buf, cap, "our key is not on its allow-list (its --peer lines)");
		return -EACCES;
	case HR_AUTH:
		snprintf(buf, cap, "it could not authenticate us: the key we have for it (our "
			 "--peer) is not its key");
		return -EKEYREJECTED;
	case HR_STALE:
		snprintf(buf, cap, "its clock and ours differ by more than %llu s",
			 (unsigned long long)(FC_HS_SKEW_DEFAULT_NS / 1000000000ull));
		return -ESTALE;
	case HR_VERSION:
		if (m->cm_version == FD_CM_VERSION)
			snprintf(buf, cap, "CM features do not match: one side requires one the other "
				 "lacks (--cm-require; each side's log says which)");
		else if (m->cm_version)
			snprintf(buf, cap, "it speaks CM version %u, we %u", m->cm_version,
				 FD_CM_VERSION);
		else
			snprintf(buf, cap, "it speaks another handshake version");
		return -EPROTO;
	case HR_CIPHER:
		snprintf(buf, cap, "it encrypts with PSP version %u, we with %u (--psp-cipher must "
			 "agree)", m->cipher, our_cipher);
		return -EPROTONOSUPPORT;
	case HR_RESOURCES:
		snprintf(buf, cap, "it is out of resources (its peer table is full)");
		return -EUSERS;
	default:
		snprintf(buf, cap, "an unknown reason (%u)", m->reason);
		return -ECONNREFUSED;
	}
}

/* Initiator: the peer refused the message 1 we have in flight. Every record waiting for
 * that session fails now with the reason (no retry could change it). */
static void on_refused(struct fd_cm *cm, const uint8_t *buf, size_t n,
		       const struct sockaddr_storage *from, socklen_t flen)
{
	struct cm_peer *p = peer_of(cm, from, flen, 0);
	struct hs_refusal m;
	char a[80], text[160], why[320];
	int err;

	if (n != sizeof(m) || !p || p->sess != SESS_HS_SENT || p->hs_msg1_len < HS_ECHO_LEN) {
		cm->st.rx_stale++;
		return;
	}
	memcpy(&m, buf, sizeof(m));
	if (memcmp(m.echo, p->hs_msg1, HS_ECHO_LEN)) {
		cm->st.rx_stale++; /* not for the handshake we have in flight */
		return;
	}
	cm->wst.refusals_rcvd++;
	p->last_seen_ns = fd_now_ns();
	fc_hs_wipe(&p->hs);
	p->sess = SESS_NONE;
	err = refused_text(&m, fd_sec_cipher(cm->d->sec), text, sizeof(text));
	addr_str(from, a, sizeof(a));
	LOG_W("cm: %s refused our handshake: %s", a, text);
	snprintf(why, sizeof(why), "%s refused our handshake: %s", a, text);
	fail_asking(cm, from, flen, err, why);
}

/* Responder: a message 1. */
static void on_hs1(struct fd_cm *cm, const uint8_t *msg, size_t len,
		   const struct sockaddr_storage *from, socklen_t flen)
{
	struct fc_hs_config cfg = { .self = fd_sec_identity(cm->d->sec),
				    .peers = fd_sec_allow(cm->d->sec) };
	struct fc_hs_hello hello = { .version = FD_CM_VERSION,
				     .features_supported = cm->d->cfg.features_supported,
				     .features_required = cm->d->cfg.features_required };
	static struct fc_hs_peer_msg in; /* 350 bytes: kept off the stack */
	uint8_t buf[4 + FC_HS_MSG2_MAX], pl[HS_PAYLOAD_LEN];
	uint32_t tag = htonl(TAG_HS2);
	struct cm_peer *p;
	struct fc_hs hs;
	bool self;
	size_t n;
	int rc;

	if ((rc = fc_hs_responder(&hs, &cfg)) || (rc = fc_hs_read_msg1(&hs, realtime_ns(), msg, len, &in))) {
		fc_hs_wipe(&hs);
		hs_refused(cm, from, rc, "handshake");
		refuse_hs(cm, msg, len, from, flen, rc == -ENOKEY ? HR_NOT_ALLOWED :
			  rc == -EBADMSG ? HR_AUTH : rc == -ESTALE ? HR_STALE :
			  rc == -EPROTONOSUPPORT ? HR_VERSION : 0);
		return;
	}
	if (!(p = peer_of(cm, from, flen, 1))) {
		fc_hs_wipe(&hs);
		return;
	}
	self = p->sess == SESS_HS_SENT && p->hs_msg1_len && len >= p->hs_msg1_len &&
	       !memcmp(msg, p->hs_msg1, p->hs_msg1_len);
	/* crossed with ours: the smaller static key stays the initiator */
	if (p->sess == SESS_HS_SENT &&
	    memcmp(fd_sec_identity(cm->d->sec)->pub, in.peer_pub, FC_HS_KEY_LEN) < 0) {
		fc_hs_wipe(&hs);
		cm->st.rx_stale++;
		return;
	}
	if ((rc = hs_take(cm, p, &in)) || (rc = hs_payload(cm, p, pl)) ||
	    (rc = fc_hs_write_msg2(&hs, &hello, pl, sizeof(pl), buf + 4, sizeof(buf) - 4, &n))) {
		/* an authenticated initiator: it may learn what does not match */
		uint8_t why = rc != -EPROTOTYPE ? HR_RESOURCES :
			      in.payload_len == HS_PAYLOAD_LEN &&
			      in.payload[0] != fd_sec_cipher(cm->d->sec) ? HR_CIPHER : HR_VERSION;

		sodium_memzero(pl, sizeof(pl));
		sodium_memzero(in.payload, sizeof(in.payload));
		fc_hs_wipe(&hs);
		hs_refused(cm, from, rc, "handshake");
		refuse_hs(cm, msg, len, from, flen, why);
		return;
	}
	p->last_seen_ns = fd_now_ns();
	sodium_memzero(pl, sizeof(pl));
	sodium_memzero(in.payload, sizeof(in.payload));
	if (p->sess == SESS_HS_SENT)
		fc_hs_wipe(&p->hs); /* ours is abandoned */
	memcpy(buf, &tag, 4);
	if (!fault_drop(cm))
		xmit_raw(cm, buf, 4 + n, from, flen);
	sess_up(cm, p, &hs, in.peer_pub, self);
}

/* Initiator: the answer. */
static void on_hs2(struct fd_cm *cm, const uint8_t *msg, size_t len,
		   const struct sockaddr_storage *from, socklen_t flen)
{
	struct cm_peer *p = peer_of(cm, from, flen, 0);
	static struct fc_hs_peer_msg in;
	int rc;

	if (!p || p->sess != SESS_HS_SENT) {
		cm->st.rx_stale++;
		return;
	}
	if ((rc = fc_hs_read_msg2(&p->hs, msg, len, &in))) {
		hs_refused(cm, from, rc, "handshake answer");
		return; /* a forgery changes nothing: ours goes on */
	}
	p->last_seen_ns = fd_now_ns();
	if ((rc = hs_take(cm, p, &in))) {
		int cipher = in.payload_len == HS_PAYLOAD_LEN ? in.payload[0] : -1;
		char a[80], why[256];

		sodium_memzero(in.payload, sizeof(in.payload));
		fc_hs_wipe(&p->hs);
		p->sess = SESS_NONE;
		hs_refused(cm, from, rc, "handshake answer");
		addr_str(from, a, sizeof(a));
		if (rc == -EPROTOTYPE && cipher >= 0 && cipher != fd_sec_cipher(cm->d->sec))
			snprintf(why, sizeof(why), "%s encrypts with PSP version %d, we with %u "
				 "(--psp-cipher must agree)", a, cipher, fd_sec_cipher(cm->d->sec));
		else if (rc == -EPROTOTYPE && in.hello.version != FD_CM_VERSION)
			snprintf(why, sizeof(why), "%s speaks CM version %u, we %u", a,
				 in.hello.version, FD_CM_VERSION);
		else if (rc == -EPROTOTYPE)
			snprintf(why, sizeof(why), "%s: CM features do not match (it supports %#x and "
				 "requires %#x, we support %#x and require %#x)", a,
				 in.hello.features_supported, in.hello.features_required,
				 cm->d->cfg.features_supported, cm->d->cfg.features_required);
		else
			snprintf(why, sizeof(why), "%s: its handshake answer could not be taken: %s",
				 a, strerror(-rc));
		fail_asking(cm, from, flen, rc != -EPROTOTYPE ? -EUSERS : cipher >= 0 &&
			    cipher != fd_sec_cipher(cm->d->sec) ? -EPROTONOSUPPORT : -EPROTO, why);
		return;
	}
	sodium_memzero(in.payload, sizeof(in.payload));
	sess_up(cm, p, &p->hs, in.peer_pub, false);
}

/* KEYS: generation (8), SPI (4), key (32); KEYS_ACK: generation (8). */
static void keys_send(struct fd_cm *cm, struct cm_peer *p)
{
	uint8_t body[44];
	uint64_t gen = htobe64(cm->keys_gen);
	uint32_t spi;

	if (fc_encap_psp_rx_issue(fd_sec_psp(cm->d->sec), sess_of(cm, p), &spi, body + 12))
		return;
	spi = htonl(spi);
	memcpy(body, &gen, 8);
	memcpy(body + 8, &spi, 4);
	cm->st.keys_sent++;
	if (!fault_drop(cm))
		sealed_send(cm, p, IN_KEYS, body, sizeof(body));
	sodium_memzero(body, sizeof(body));
}

static void on_keys(struct fd_cm *cm, struct cm_peer *p, const uint8_t *b, size_t len)
{
	uint32_t spi;

	if (len != 44)
		return;
	memcpy(&spi, b + 8, 4);
	if (fc_encap_psp_tx_set(fd_sec_psp(cm->d->sec), p->node_peer, ntohl(spi), b + 12) == 0 &&
	    !fault_drop(cm))
		sealed_send(cm, p, IN_KEYS_ACK, b, 8);
}

static void on_keys_ack(struct fd_cm *cm, struct cm_peer *p, const uint8_t *b, size_t len)
{
	uint64_t gen;

	if (len != 8)
		return;
	memcpy(&gen, b, 8);
	gen = be64toh(gen);
	if (gen > p->keys_gen_acked && gen <= cm->keys_gen) {
		p->keys_gen_acked = gen;
		cm->st.keys_acked++;
	}
}

static void on_msg(struct fd_cm *cm, const struct cm_wire *m, const struct sockaddr_storage *from,
		   socklen_t len);

/* A sealed datagram: from a session that is up, with a counter above the last. */
static void on_sealed(struct fd_cm *cm, const uint8_t *buf, size_t n,
		      const struct sockaddr_storage *from, socklen_t flen)
{
	struct cm_peer *p = peer_of(cm, from, flen, 0);
	uint8_t pt[1 + INNER_MAX], nonce[12] = { 0 };
	unsigned long long plen;
	uint64_t ctr;

	if (!p || p->sess != SESS_UP) {
		/* sealed for a session we do not have (we restarted, or dropped it): a peer we
		 * know gets a new handshake, which tells it so (a new boot id) */
		cm->st.rx_no_session++;
		if ((p || (fd_sec_key_of(cm->d->sec, (const struct sockaddr *)from, flen) &&
			   (p = peer_of(cm, from, flen, 1)))) && p->sess == SESS_NONE)
			hs_start(cm, p);
		return;
	}
	if (n < SEALED_HDR + 1 + 16 || n > SEALED_HDR + 1 + INNER_MAX + 16) {
		cm->st.rx_unsealed_bad++;
		return;
	}
	memcpy(&ctr, buf + 4, 8);
	memcpy(nonce + 4, buf + 4, 8);
	ctr = be64toh(ctr);
	if (crypto_aead_chacha20poly1305_ietf_decrypt(pt, &plen, NULL, buf + SEALED_HDR,
						      n - SEALED_HDR, buf, SEALED_HDR, nonce,
						      p->rx_key)) {
		cm->st.rx_unsealed_bad++;
		return;
	}
	if (ctr <= p->rx_ctr) { /* authentic but seen: a replay */
		cm->st.rx_replayed++;
		return;
	}
	p->rx_ctr = ctr;
	if (pt[0] == IN_WIRE && plen == 1 + sizeof(struct cm_wire)) {
		struct cm_wire m;

		memcpy(&m, pt + 1, sizeof(m));
		on_msg(cm, &m, from, flen);
	} else if (pt[0] == IN_KEYS) {
		on_keys(cm, p, pt + 1, plen - 1);
	} else if (pt[0] == IN_KEYS_ACK) {
		on_keys_ack(cm, p, pt + 1, plen - 1);
	} else {
		cm->st.rx_bad++;
	}
	sodium_memzero(pt, sizeof(pt));
}

/* Send a CM message: plain in security none; sealed in psp, once the session is up
 * (until then a handshake is started or retried and the message is dropped: the
 * record's own retry sends it again). */
static void cm_xmit(struct fd_cm *cm, const struct cm_wire *m, const struct sockaddr_storage *to,
		    socklen_t tolen)
{
	struct cm_peer *p;

	if (!is_psp(cm)) {
		xmit_raw(cm, m, sizeof(*m), to, tolen);
		return;
	}
	if (!(p = peer_of(cm, to, tolen, 1)))
		return;
	if (p->sess == SESS_UP) {
		sealed_send(cm, p, IN_WIRE, m, sizeof(*m));
		return;
	}
	if (p->sess == SESS_NONE || fd_now_ns() >= p->hs_deadline_ns)
		hs_start(cm, p);
}

unsigned fd_cm_forget_identity(struct fd_cm *cm, const uint8_t pub[32])
{
	unsigned n = 0;

	for (uint32_t i = 0; i < cm->npeers; i++) {
		struct cm_peer *p = &cm->peers[i];

		if (p->sess != SESS_UP || memcmp(p->pub, pub, FC_HS_KEY_LEN))
			continue;
		peer_restarted(cm, p, &p->cm, p->cm_len, "is no longer allowed");
		p->sess = SESS_NONE;
		sodium_memzero(p->tx_key, sizeof(p->tx_key));
		sodium_memzero(p->rx_key, sizeof(p->rx_key));
		fc_encap_psp_tx_clear(fd_sec_psp(cm->d->sec), p->node_peer);
		fd_sec_bind(cm->d->sec, sess_of(cm, p), UINT32_MAX);
		n++;
	}
	return n;
}

/* Key rotation (spec 9.2.2.3): a new generation, every session told its new SPI and key
 * (KEYS, resent from the timer until acknowledged); the previous phase is erased once all
 * sessions up have acknowledged and a drain time has passed. */
#define ERASE_DRAIN_NS (200ull * 1000000ull)

static void sec_arm(struct fd_cm *cm);

int fd_cm_rotate_keys(struct fd_cm *cm)
{
	if (!is_psp(cm))
		return -EOPNOTSUPP;
	cm->keys_gen = fc_encap_psp_rx_rotate(fd_sec_psp(cm->d->sec), NULL);
	cm->erase_at_ns = 0;
	cm->st.rotations++;
	for (uint32_t i = 0; i < cm->npeers; i++)
		if (cm->peers[i].sess == SESS_UP)
			keys_send(cm, &cm->peers[i]);
	LOG_I("cm: PSP keys rotated: generation %llu", (unsigned long long)cm->keys_gen);
	sec_arm(cm);
	return 0;
}

static void sec_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct fd_cm *cm = w->data;
	uint64_t now = fd_now_ns();
	int pending = 0;

	(void)loop;
	(void)revents;
	if (cm->d->cfg.key_rotate_s && now >= cm->rotate_at_ns) {
		uint64_t period = (uint64_t)cm->d->cfg.key_rotate_s * 1000000000ull;

		/* keep the cadence (the timer ticks every cm_retry_ms, late by up to one) */
		cm->rotate_at_ns += period;
		if (cm->rotate_at_ns <= now)
			cm->rotate_at_ns = now + period;
		fd_cm_rotate_keys(cm);
	}
	for (uint32_t i = 0; i < cm->npeers; i++) {
		struct cm_peer *p = &cm->peers[i];

		if (p->sess == SESS_UP && p->keys_gen_acked < cm->keys_gen) {
			keys_send(cm, p);
			pending = 1;
		}
	}
	if (!pending && cm->keys_gen && !cm->erase_at_ns)
		cm->erase_at_ns = now + ERASE_DRAIN_NS + (uint64_t)cm->d->cfg.replay_margin_us * 1000u;
	if (cm->erase_at_ns && now >= cm->erase_at_ns) {
		fc_encap_psp_rx_erase_prev(fd_sec_psp(cm->d->sec));
		cm->erase_at_ns = 0;
		cm->keys_gen = 0; /* nothing pending until the next rotation */
		LOG_D("cm: the previous PSP key phase is erased");
	}
	sec_arm(cm);
}

static void sec_arm(struct fd_cm *cm)
{
	double step = (double)cm->d->cfg.cm_retry_ms / 1e3;

	if (!is_psp(cm))
		return;
	if (!cm->d->cfg.key_rotate_s && !cm->keys_gen) {
		ev_timer_stop(cm->d->loop, &cm->sec_w);
		return;
	}
	if (!ev_is_active(&cm->sec_w)) {
		ev_timer_set(&cm->sec_w, step, step);
		ev_timer_start(cm->d->loop, &cm->sec_w);
	}
}

/* An ICMP error (or a local one) for a datagram we sent to `to` (IP_RECVERR): the
 * records asking that peer fail at once, unreachable. Others (too big, ...) are no
 * answer to a connection request. */
static void on_icmp(struct fd_cm *cm, const struct sockaddr_storage *to, socklen_t len,
		    const struct sock_extended_err *ee)
{
	struct cm_peer *p = peer_of(cm, to, len, 0);
	char a[80], why[256];
	const char *what;

	switch (ee->ee_errno) {
	case ECONNREFUSED: what = "ICMP port unreachable: no falcond listens on that port"; break;
	case EHOSTUNREACH: what = "host unreachable (ICMP)"; break;
	case ENETUNREACH: what = "network unreachable (ICMP)"; break;
	case EHOSTDOWN: what = "host down"; break;
	case EACCES: what = "communication administratively prohibited (ICMP)"; break;
	default: return;
	}
	cm->wst.icmp_errors++;
	if (p && p->sess == SESS_HS_SENT) { /* the next attempt starts a new handshake */
		fc_hs_wipe(&p->hs);
		p->sess = SESS_NONE;
	}
	addr_str(to, a, sizeof(a));
	snprintf(why, sizeof(why), "%s unreachable: %s", a, what);
	if (fail_asking(cm, to, len, -EHOSTUNREACH, why))
		LOG_W("cm: %s", why);
}

/* The socket's error queue: ICMP errors of what we sent (IP_RECVERR / IPV6_RECVERR). */
static void cm_errqueue(struct fd_cm *cm)
{
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage to;
		union {
			struct cmsghdr c;
			char room[CMSG_SPACE(sizeof(struct sock_extended_err) +
					     sizeof(struct sockaddr_in6)) * 2];
		} ctl;
		uint8_t b[64];
		struct iovec iov = { b, sizeof(b) };
		struct msghdr m = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
				    .msg_iovlen = 1, .msg_control = ctl.room,
				    .msg_controllen = sizeof(ctl.room) };

		memset(&to, 0, sizeof(to));
		if (recvmsg(cm->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			struct sock_extended_err ee;

			if (!((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
			      (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) ||
			    c->cmsg_len < CMSG_LEN(sizeof(ee)))
				continue;
			memcpy(&ee, CMSG_DATA(c), sizeof(ee));
			if (ee.ee_origin == SO_EE_ORIGIN_ICMP || ee.ee_origin == SO_EE_ORIGIN_ICMP6 ||
			    ee.ee_origin == SO_EE_ORIGIN_LOCAL)
				on_icmp(cm, &to, m.msg_namelen, &ee);
		}
	}
}

/* Security psp, a plain CM message: refused; a REQ is told why in clear, as a plain REJ
 * of the same size (a daemon in security none takes it). */
static void refuse_plain(struct fd_cm *cm, const uint8_t *buf, ssize_t n,
			 const struct sockaddr_storage *from, socklen_t len)
{
	struct cm_wire m;

	cm->st.rx_plain_refused++;
	if (n != (ssize_t)sizeof(m))
		return;
	memcpy(&m, buf, sizeof(m));
	if (m.type != CM_REQ || !refusal_ok(cm))
		return;
	m = (struct cm_wire){ .magic = htonl(CM_MAGIC), .version = FD_CM_VERSION, .type = CM_REJ,
			      .reason = htons(CM_R_SECURITY), .txid = m.txid };
	xmit_raw(cm, &m, sizeof(m), from, len);
}

static void cm_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct fd_cm *cm = w->data;

	(void)loop;
	(void)revents;
	cm_errqueue(cm);
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage from;
		socklen_t len = sizeof(from);
		uint8_t buf[4 + FC_HS_MSG1_MAX + 1];
		uint32_t tag;
		ssize_t n = recvfrom(cm->fd, buf, sizeof(buf), MSG_TRUNC, (struct sockaddr *)&from,
				     &len);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) { /* an ICMP error reported once more (the error queue has it) */
			cm_errqueue(cm);
			continue;
		}
		cm->st.rx++;
		if (fault_drop(cm))
			continue;
		if (n < 4 || (size_t)n > sizeof(buf) - 1) {
			cm->st.rx_bad++;
			continue;
		}
		memcpy(&tag, buf, 4);
		tag = ntohl(tag);
		if (tag == CM_MAGIC && !is_psp(cm) && n == sizeof(struct cm_wire)) {
			struct cm_wire m;

			memcpy(&m, buf, sizeof(m));
			on_msg(cm, &m, &from, len);
		} else if (tag == CM_MAGIC && is_psp(cm)) {
			refuse_plain(cm, buf, n, &from, len); /* psp: only sealed CM messages count */
		} else if (tag == TAG_HS1 && is_psp(cm)) {
			on_hs1(cm, buf + 4, (size_t)n - 4, &from, len);
		} else if (tag == TAG_HS1) { /* security none: we cannot take it, say so */
			cm->st.rx_bad++;
			refuse_hs(cm, buf + 4, (size_t)n - 4, &from, len, HR_SECURITY);
		} else if (tag == TAG_HS2 && is_psp(cm)) {
			on_hs2(cm, buf + 4, (size_t)n - 4, &from, len);
		} else if (tag == TAG_SEALED && is_psp(cm)) {
			on_sealed(cm, buf, (size_t)n, &from, len);
		} else if (tag == TAG_REFUSED && is_psp(cm)) {
			on_refused(cm, buf, (size_t)n, &from, len);
		} else {
			cm->st.rx_bad++;
		}
	}
}

/* ---- timers ---- */


/* A graceful close (ST_CLOSING, our QP destroyed): the Falcon connection stays open until
 * the peer's DREP, so retransmissions and the ACKs we owe still flow, and the DREQ waits
 * until no ACK is owed: the peer's last requests then complete before it sees DREQ and
 * flushes its QP. The wait follows the engine's ACK deadline (the coalescing time, 8 us
 * by default) and is bounded: after CM_CLOSE_ACK_WAITS checks DREQ goes regardless. */
#define CM_CLOSE_ACK_WAITS 8u
#define CM_CLOSE_ACK_SLACK_NS 2000ull

static void close_step(struct cm_rec *r)
{
	struct fd_cm *cm = r->cm;
	uint64_t owed = r->t ? fc_pdl_ack_owed_at(fc_txn_pdl(r->t)) : UINT64_MAX, now = fd_now_ns();

	LOG_D("cm: closing %u: ack owed at %llu (now %llu), try %u", r->lcid,
	      (unsigned long long)owed, (unsigned long long)now, r->tries);
	if (owed != UINT64_MAX && r->tries++ < CM_CLOSE_ACK_WAITS) {
		rec_arm(r, (owed > now ? owed - now : 0) + CM_CLOSE_ACK_SLACK_NS);
		return;
	}
	r->dreq_sent = 1;
	r->tries = 0;
	rec_send(r, CM_DREQ);
	rec_arm(r, (uint64_t)cm->d->cfg.cm_retry_ms * 1000000ull);
}

static void req_send(struct cm_rec *r, uint8_t type);
static int silent(const struct cm_rec *r, uint64_t now);

static void rec_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct cm_rec *r = w->data;
	struct fd_cm *cm = r->cm;
	uint64_t now = fd_now_ns(), step = (uint64_t)cm->d->cfg.cm_retry_ms * 1000000ull;

	(void)loop;
	(void)revents;
	switch (r->state) {
	case ST_REQ_SENT:
	case ST_RTU_SENT: {
		char a[80];

		addr_str(&r->cm_addr, a, sizeof(a));
		if (r->tx_err) {
			rec_fail_why(r, -EHOSTUNREACH, "%s unreachable: cannot send to it: %s", a,
				     strerror(r->tx_err));
			return;
		}
		if (silent(r, now)) {
			cm->st.timeouts++;
			cm->wst.silent++;
			LOG_W("cm: no answer at all from %s in %llu ms (%u tries): down?", a,
			      (unsigned long long)((now - r->start_ns) / 1000000u), r->tries + 1);
			rec_fail_why(r, -ETIMEDOUT, "no answer at all from %s in %llu ms (%u tries): "
				     "is its falcond running, its CM port reachable?", a,
				     (unsigned long long)((now - r->start_ns) / 1000000u), r->tries + 1);
			return;
		}
		if (now >= r->deadline_ns) {
			LOG_W("cm: no answer from %s for service %u after %u tries", a, r->service,
			      r->tries + 1);
			cm->st.timeouts++;
			rec_fail_why(r, -ETIMEDOUT, "%s did not complete the %s connection (service %u) "
				     "in %llu ms (%u tries)%s", a, kind_name[r->kind], r->service,
				     (unsigned long long)((now - r->start_ns) / 1000000u), r->tries + 1,
				     r->state == ST_REQ_SENT ? ": it holds our request (no accept, or "
				     "the peer QP not bound yet)" : "");
			return;
		}
		r->tries++;
		cm->st.retries++;
		if (r->state == ST_REQ_SENT)
			req_send(r, CM_REQ);
		else {
			rec_send(r, CM_RTU);
			rec_arm(r, step);
		}
		return;
	}
	case ST_ACCEPT_WAIT:
		rec_fail_why(r, -ETIMEDOUT, "no connection request for service %u came in time",
			     r->service);
		return;
	case ST_BACKLOG: {
		struct cm_listener *l = listener_of(cm, r->service);

		if (l && l->queued)
			l->queued--;
		rec_free(r); /* its initiator gave up long ago */
		return;
	}
	case ST_REP_SENT:
		cm->st.timeouts++;
		LOG_W("cm: the initiator of a connection to service %u went silent", r->service);
		rec_fail(r, -ECONNABORTED);
		return;
	case ST_CLOSING:
		if (!r->dreq_sent) {
			close_step(r);
			return;
		}
		if (++r->tries > cm->d->cfg.cm_retries) {
			rec_free(r);
			return;
		}
		cm->st.retries++;
		rec_send(r, CM_DREQ);
		rec_arm(r, step);
		return;
	}
}

/* ---- the API side ---- */

struct fd_cm *fd_cm_new(struct fd_daemon *d)
{
	struct fd_cm *cm = calloc(1, sizeof(*cm));
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1;

	if (!cm)
		return NULL;
	cm->d = d;
	cm->fd = -1;
	if (index_init(&cm->by_id, d->cfg.max_conns, offsetof(struct cm_rec, by_id)) ||
	    index_init(&cm->by_tx, d->cfg.max_conns, offsetof(struct cm_rec, by_tx)) ||
	    index_init(&cm->by_cid, d->cfg.max_conns, offsetof(struct cm_rec, by_cid)) ||
	    index_init(&cm->by_qpn, d->cfg.max_conns, offsetof(struct cm_rec, by_qpn))) {
		errno = ENOMEM;
		goto fail;
	}
	cm->rng = d->cfg.fault.seed ^ 0x5DEECE66Dull;
	cm->boot_id = rand64() | 1; /* never 0: 0 means unknown */
	ev_timer_init(&cm->closing_w, closing_cb, 0., 0.);
	cm->closing_w.data = cm;
	ev_timer_init(&cm->sec_w, sec_cb, 0., 0.);
	cm->sec_w.data = cm;
	cm->rotate_at_ns = fd_now_ns() + (uint64_t)d->cfg.key_rotate_s * 1000000000ull;
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, d->cfg.listen_addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons(d->cfg.cm_port);
		len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, d->cfg.listen_addr,
			     &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(d->cfg.cm_port);
		len = sizeof(struct sockaddr_in6);
	} else {
		errno = EINVAL;
		goto fail;
	}
	cm->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (cm->fd < 0)
		goto fail;
	setsockopt(cm->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* ICMP errors of what we send (port / host unreachable) come back on the error
	 * queue, with the address they concern: a peer that is down is told apart at once */
	if (ss.ss_family == AF_INET)
		setsockopt(cm->fd, SOL_IP, IP_RECVERR, &one, sizeof(one));
	else
		setsockopt(cm->fd, SOL_IPV6, IPV6_RECVERR, &one, sizeof(one));
	/* a client that leaves with 10,000 QPs closes them in one go: room for their DREQs
	 * and DREPs, else most are dropped and retried cm_retry_ms later (the kernel caps it
	 * at net.core.rmem_max / wmem_max; best effort) */
	setsockopt(cm->fd, SOL_SOCKET, SO_RCVBUF, &(int){ CM_SOCKBUF_BYTES }, sizeof(int));
	setsockopt(cm->fd, SOL_SOCKET, SO_SNDBUF, &(int){ CM_SOCKBUF_BYTES }, sizeof(int));
	if (bind(cm->fd, (struct sockaddr *)&ss, len) < 0)
		goto fail;
	ev_io_init(&cm->w, cm_read_cb, cm->fd, EV_READ);
	cm->w.data = cm;
	ev_io_start(d->loop, &cm->w);
	sec_arm(cm); /* the rotation schedule */
	return cm;
fail: {
	int e = errno;

	if (cm->fd >= 0)
		close(cm->fd);
	index_free(cm);
	free(cm);
	errno = e;
	return NULL;
}
}

void fd_cm_free(struct fd_cm *cm)
{
	if (!cm)
		return;
	while (cm->recs) {
		struct cm_rec *r = cm->recs;

		if (r->state == ST_ESTABLISHED)
			rec_send(r, CM_DREQ); /* one try: we are going away */
		r->done = NULL;
		rec_free(r);
	}
	ev_timer_stop(cm->d->loop, &cm->closing_w);
	ev_timer_stop(cm->d->loop, &cm->sec_w);
	for (uint32_t i = 0; i < cm->npeers; i++) {
		if (cm->peers[i].sess == SESS_HS_SENT)
			fc_hs_wipe(&cm->peers[i].hs);
		sodium_memzero(cm->peers[i].tx_key, sizeof(cm->peers[i].tx_key));
		sodium_memzero(cm->peers[i].rx_key, sizeof(cm->peers[i].rx_key));
	}
	for (uint32_t i = 0; i < cm->nclosing; i++) /* the node frees what is left */
		LOG_D("cm: connection %p still held at shutdown", (void *)cm->closing[i]);
	ev_io_stop(cm->d->loop, &cm->w);
	close(cm->fd);
	index_free(cm);
	free(cm);
}

int fd_cm_fd(const struct fd_cm *cm)
{
	return cm->fd;
}

static uint64_t bound_ns(const struct fd_cm *cm, int timeout_ms)
{
	if (timeout_ms < 0)
		return (uint64_t)cm->d->cfg.cm_retry_ms * 1000000ull * cm->d->cfg.cm_retries;
	return (uint64_t)timeout_ms * 1000000ull;
}

/* An initiator's record: REQ sent, retried until the deadline. Returns it (*out) with
 * the connection id, or -errno. */
static int64_t ini_start(struct fd_cm *cm, const struct sockaddr *peer, socklen_t len,
			 uint8_t kind, int timeout_ms, fd_cm_done_fn done, void *ctx,
			 struct cm_rec **out)
{
	struct cm_rec *r;
	int rc;

	char a[80];

	set_why(cm, "%s", "");
	if (!peer || len > sizeof(r->cm_addr) ||
	    (peer->sa_family != AF_INET && peer->sa_family != AF_INET6) ||
	    (peer->sa_family == AF_INET && len < sizeof(struct sockaddr_in)) ||
	    (peer->sa_family == AF_INET6 && len < sizeof(struct sockaddr_in6)))
		return -EINVAL;
	addr_str((const struct sockaddr_storage *)(const void *)peer, a, sizeof(a));
	if (peer->sa_family != (sa_family_t)(strchr(cm->d->cfg.listen_addr, ':') ? AF_INET6 : AF_INET)) {
		set_why(cm, "%s: our falcond listens on %s (--listen), another address family", a,
			cm->d->cfg.listen_addr);
		return -EAFNOSUPPORT;
	}
	if (is_psp(cm) && !fd_sec_key_of(cm->d->sec, peer, len)) {
		set_why(cm, "%s: we have no key for it (security psp: --peer KEY@%s)", a, a);
		return -EACCES;
	}
	r = rec_new(cm, ROLE_INI, ST_REQ_SENT);
	if (!r)
		return -ENOMEM;
	memcpy(&r->cm_addr, peer, len);
	r->cm_len = len;
	r->kind = kind;
	r->txid = rand64();
	index_add(&cm->by_tx, r, tx_key(r->txid, r->role));
	r->my_psn_req = (uint32_t)rand64();
	r->my_psn_data = (uint32_t)rand64();
	r->my_rsn = (uint32_t)rand64();
	if ((rc = fc_node_cid_reserve(cm->d->node, FC_NODE_PEER_LATER, &r->lcid))) {
		if (rc == -ENOSPC)
			conns_full(cm);
		rec_free(r);
		set_why(cm, "connecting to %s: no connection ID free here: %s (--max-conns %u)", a,
			strerror(-rc), cm->d->cfg.max_conns);
		return rc;
	}
	r->have_lcid = 1;
	r->done = done;
	r->ctx = ctx;
	r->start_ns = fd_now_ns();
	r->deadline_ns = r->start_ns + bound_ns(cm, timeout_ms);
	*out = r;
	return r->id;
}

/* Send (or resend) r's REQ, or its handshake first; a send the socket refuses for
 * want of a route fails r from its timer, at once (not inside our caller). */
static void req_send(struct cm_rec *r, uint8_t type)
{
	int e;

	r->cm->tx_errno = 0;
	rec_send(r, type);
	e = r->cm->tx_errno;
	if (e == ENETUNREACH || e == EHOSTUNREACH || e == EADDRNOTAVAIL || e == EPERM ||
	    e == EACCES)
		r->tx_err = e;
	rec_arm(r, r->tx_err ? 0 : (uint64_t)r->cm->d->cfg.cm_retry_ms * 1000000ull);
}

static void ini_send(struct cm_rec *r)
{
	req_send(r, CM_REQ);
}

/* An initiator's REQ that no message of any kind answered within the silence bound:
 * the peer is down (a peer that holds the REQ says so: MRA). A peer known not to send
 * MRA (an older falcond) is waited for until the deadline. */
static int silent(const struct cm_rec *r, uint64_t now)
{
	const struct fd_cm *cm = r->cm;
	const struct cm_peer *p = NULL;
	uint64_t bound = (uint64_t)CM_SILENT_MS * 1000000ull;

	for (uint32_t i = 0; i < cm->npeers && !p; i++)
		if (same_sa(&cm->peers[i].cm, cm->peers[i].cm_len, &r->cm_addr, r->cm_len))
			p = &cm->peers[i];
	if ((uint64_t)cm->d->cfg.cm_retry_ms * 3000000ull > bound)
		bound = (uint64_t)cm->d->cfg.cm_retry_ms * 3000000ull;
	if (r->state != ST_REQ_SENT || now - r->start_ns < bound)
		return 0;
	if (p && p->last_seen_ns >= r->start_ns)
		return 0; /* it answered (MRA, a handshake): alive */
	return !(p && p->last_seen_ns && !(p->features_supported & FD_CM_F_MRA));
}

int64_t fd_cm_connect(struct fd_cm *cm, const struct sockaddr *peer, socklen_t len,
		      uint16_t service, const struct fd_qp_spec *qp, int timeout_ms,
		      fd_cm_done_fn done, void *ctx)
{
	struct cm_rec *r;
	int64_t id;

	if (!service)
		return -EINVAL;
	if ((id = ini_start(cm, peer, len, KIND_SERVICE, timeout_ms, done, ctx, &r)) < 0)
		return id;
	r->service = service;
	r->spec = *qp;
	r->have_spec = 1;
	r->ordering = qp->init.order;
	r->qp_type = qp->init.type;
	ini_send(r);
	return id;
}

int64_t fd_cm_bind(struct fd_cm *cm, const struct sockaddr *peer, socklen_t len, uint32_t lqpn,
		   uint32_t rqpn, uint8_t qp_type, uint8_t order, int timeout_ms,
		   fd_cm_done_fn done, void *ctx)
{
	struct cm_rec *r;
	int64_t id;

	if (rqpn > FC_RDMA_QPN_MASK)
		return -EINVAL;
	for (r = index_first(&cm->by_qpn, lqpn); r; r = index_next(&cm->by_qpn, r))
		/* the peer's REQ came first */
		if (r->kind == KIND_BIND && r->state == ST_BACKLOG && r->lqpn == lqpn &&
		    r->rqpn == rqpn && same_sa(&r->cm_addr, r->cm_len, (const void *)peer, len)) {
			ev_timer_stop(cm->d->loop, &r->w);
			r->qp_type = qp_type;
			r->done = done;
			r->ctx = ctx;
			id = r->id;
			tgt_bind(r); /* may fail and free r: done has been called then */
			return id;
		}
	if ((id = ini_start(cm, peer, len, KIND_BIND, timeout_ms, done, ctx, &r)) < 0)
		return id;
	r->lqpn = lqpn;
	r->rqpn = rqpn;
	index_add(&cm->by_qpn, r, lqpn);
	r->qp_type = qp_type;
	r->ordering = order;
	ini_send(r);
	return id;
}

int64_t fd_cm_ah(struct fd_cm *cm, const struct sockaddr *peer, socklen_t len, int timeout_ms,
		 fd_cm_done_fn done, void *ctx)
{
	struct cm_rec *r;
	int64_t id;

	/* every address handle to one peer daemon shares one connection (an M:N one: any
	 * UD QP to any): an established one is taken as it is, without done */
	if ((peer->sa_family == AF_INET || peer->sa_family == AF_INET6) &&
	    len <= sizeof(struct sockaddr_storage)) {
		struct cm_peer *p = peer_of(cm, (const void *)peer, len, 0);

		if (p && (r = p->ah) && r->state == ST_ESTABLISHED) {
			r->ah_refs++;
			return r->id;
		}
	}
	if ((id = ini_start(cm, peer, len, KIND_AH, timeout_ms, done, ctx, &r)) < 0)
		return id;
	r->ordering = FC_RDMA_ORDER_WEAK;
	r->ah_refs = 1;
	ini_send(r);
	return id;
}

static struct cm_rec *rec_of_id(const struct fd_cm *cm, int64_t id)
{
	struct cm_rec *r;

	for (r = index_first(&cm->by_id, (uint64_t)id); r && r->id != id;
	     r = index_next(&cm->by_id, r))
		;
	return r;
}

int fd_cm_peer_cm_addr(struct fd_cm *cm, uint32_t node_peer, struct sockaddr_storage *ss,
		       socklen_t *len)
{
	for (uint32_t i = 0; i < cm->npeers; i++)
		if (cm->peers[i].has_node_peer && cm->peers[i].node_peer == node_peer) {
			memcpy(ss, &cm->peers[i].cm, cm->peers[i].cm_len);
			*len = cm->peers[i].cm_len;
			return 0;
		}
	set_why(cm, "no daemon with number %u (a UD completion's src_id) is known here: of "
		"another falcond, or of one before a restart", node_peer + 1);
	return -ENOENT;
}

struct fc_txn *fd_cm_conn(const struct fd_cm *cm, int64_t id)
{
	const struct cm_rec *r = rec_of_id(cm, id);

	return r && r->state == ST_ESTABLISHED ? r->t : NULL;
}

int fd_cm_listen(struct fd_cm *cm, uint16_t service, uint16_t backlog, void *owner)
{
	if (!service)
		return -EINVAL;
	if (listener_of(cm, service))
		return -EADDRINUSE;
	for (uint32_t i = 0; i < CM_LISTENERS_MAX; i++)
		if (!cm->lst[i].used) {
			cm->lst[i] = (struct cm_listener){ .service = service,
							   .backlog = backlog ? backlog : 1,
							   .owner = owner, .used = 1 };
			return 0;
		}
	return -ENOSPC;
}

void fd_cm_unlisten(struct fd_cm *cm, uint16_t service)
{
	struct cm_listener *l = listener_of(cm, service);
	struct cm_rec *r = cm->waiting, *next;

	if (!l)
		return;
	l->used = 0;
	for (; r; r = next) { /* refuse what waits in the backlog */
		next = r->wnext;
		if (r->state == ST_BACKLOG && r->service == service) {
			send_msg(cm, NULL, &r->cm_addr, r->cm_len, CM_REJ, CM_R_NO_LISTENER, r->txid);
			rec_free(r);
		}
	}
}

int64_t fd_cm_accept(struct fd_cm *cm, uint16_t service, const struct fd_qp_spec *qp,
		     int timeout_ms, fd_cm_done_fn done, void *ctx)
{
	struct cm_listener *l = listener_of(cm, service);
	struct cm_rec *r = NULL;

	if (!l)
		return -EINVAL;
	for (struct cm_rec *x = cm->waiting; x; x = x->wnext)
		if (x->state == ST_BACKLOG && x->service == service)
			r = x; /* oldest */
	if (r) {
		ev_timer_stop(cm->d->loop, &r->w);
		l->queued--;
	} else {
		r = rec_new(cm, ROLE_TGT, ST_ACCEPT_WAIT);
		if (!r)
			return -ENOMEM;
		r->service = service;
	}
	r->spec = *qp;
	r->have_spec = 1;
	r->done = done;
	r->ctx = ctx;
	if (r->state == ST_BACKLOG) {
		int64_t id = r->id;

		tgt_bind(r); /* may fail and free r: done has been called then */
		return id;
	}
	if (timeout_ms >= 0)
		rec_arm(r, (uint64_t)timeout_ms * 1000000ull);
	return r->id;
}

void fd_cm_close(struct fd_cm *cm, int64_t id)
{
	struct cm_rec *r = rec_of_id(cm, id);

	if (!r)
		return;
	if (r->kind == KIND_AH && r->role == ROLE_INI && r->ah_refs > 1) {
		r->ah_refs--; /* other address handles still use it */
		return;
	}
	r->done = NULL;
	if (r->state == ST_ESTABLISHED || r->state == ST_RTU_SENT || r->state == ST_REP_SENT) {
		struct cm_peer *p = peer_of(cm, &r->cm_addr, r->cm_len, 0);

		if (p && p->conns && r->state == ST_ESTABLISHED)
			p->conns--;
		rec_destroy_qp(r);
		r->state = ST_CLOSING;
		index_add(&cm->by_cid, r, r->lcid); /* the DREP finds it (find_conn) */
		r->tries = 0;
		r->dreq_sent = 0;
		cm->st.closed++;
		fd_kick(cm->d); /* what is due now (an ACK the peer asked for) goes first */
		close_step(r);
		return;
	}
	if (r->state == ST_REMOTE_CLOSED) {
		struct cm_peer *p = peer_of(cm, &r->cm_addr, r->cm_len, 0);

		if (p && p->conns)
			p->conns--;
		cm->st.closed++;
	}
	rec_free(r);
}

/* ---- admin views ---- */

size_t fd_cm_json_peers(const struct fd_cm *cm, char *buf, size_t cap)
{
	struct fd_json j;
	char a[80];

	fd_json_init(&j, buf, cap);
	fd_json_open(&j, NULL, '[');
	for (uint32_t i = 0; i < cm->npeers; i++) {
		const struct cm_peer *p = &cm->peers[i];

		fd_json_open(&j, NULL, '{');
		fd_json_kstr(&j, "cm_addr", addr_str(&p->cm, a, sizeof(a)));
		fd_json_kv(&j, "version", "%u", p->version);
		fd_json_kv(&j, "features_supported", "%u", p->features_supported);
		fd_json_kv(&j, "features_required", "%u", p->features_required);
		fd_json_kv(&j, "conns", "%u", p->conns);
		fd_json_kv(&j, "rejects", "%llu", (unsigned long long)p->rejects);
		fd_json_kv(&j, "restarts", "%llu", (unsigned long long)p->restarts);
		if (is_psp(cm)) {
			char b64[FC_HS_B64_LEN];

			fd_json_kstr(&j, "session", p->sess == SESS_UP ? "up" :
				     p->sess == SESS_HS_SENT ? "handshake" : "none");
			if (p->sess == SESS_UP) {
				fc_hs_pub_to_base64(p->pub, b64);
				fd_json_kstr(&j, "identity", b64);
			}
			fd_json_kv(&j, "handshakes", "%llu", (unsigned long long)p->handshakes);
			fd_json_kv(&j, "keys_generation", "%llu",
				   (unsigned long long)p->keys_gen_acked);
		}
		fd_json_kv(&j, "last_seen_s_ago", "%.1f",
			   (double)(fd_now_ns() - p->last_seen_ns) / 1e9);
		fd_json_close(&j, '}');
	}
	fd_json_close(&j, ']');
	return fd_json_done(&j);
}

size_t fd_cm_json_conns(const struct fd_cm *cm, char *buf, size_t cap)
{
	struct fd_json j;
	char a[80];

	fd_json_init(&j, buf, cap);
	fd_json_open(&j, NULL, '[');
	for (const struct cm_rec *r = cm->recs; r; r = r->next) {
		if (r->state == ST_ACCEPT_WAIT)
			continue;
		fd_json_open(&j, NULL, '{');
		fd_json_kv(&j, "id", "%lld", (long long)r->id);
		fd_json_kstr(&j, "role", r->role == ROLE_INI ? "initiator" : "target");
		fd_json_kstr(&j, "kind", kind_name[r->kind]);
		if (r->kind == KIND_AH && r->role == ROLE_INI)
			fd_json_kv(&j, "address_handles", "%u", r->ah_refs);
		fd_json_kstr(&j, "state", state_name[r->state]);
		fd_json_kstr(&j, "peer", addr_str(&r->cm_addr, a, sizeof(a)));
		fd_json_kv(&j, "service", "%u", r->service);
		fd_json_kv(&j, "local_cid", "%u", r->lcid);
		fd_json_kv(&j, "remote_cid", "%u", r->rcid);
		fd_json_kv(&j, "qpn", "%u", r->lqpn);
		fd_json_kv(&j, "remote_qpn", "%u", r->rqpn);
		fd_json_kstr(&j, "ordering", r->ordering == FC_RDMA_ORDER_STRONG ? "ordered" : "unordered");
		if (r->t) {
			const struct fc_pdl *p = fc_txn_pdl(r->t);
			const struct fc_pdl_counters *pc = fc_pdl_counters(p);

			fd_json_kv(&j, "fcwnd", "%.2f", (double)fc_pdl_fcwnd_fp(p) / FC_CWND_ONE);
			fd_json_kv(&j, "ncwnd", "%u", fc_pdl_ncwnd(p));
			fd_json_kv(&j, "rto_us", "%.1f", (double)fc_pdl_rto_ns(p) / 1e3);
			fd_json_kv(&j, "srtt_us", "%.1f", (double)fc_pdl_srtt_ns(p) / 1e3);
			fd_json_kv(&j, "outstanding_req", "%u", fc_pdl_outstanding(p, FC_WIN_REQ));
			fd_json_kv(&j, "outstanding_data", "%u", fc_pdl_outstanding(p, FC_WIN_DATA));
			fd_json_kv(&j, "tx_pkts", "%llu", (unsigned long long)pc->tx_pkts);
			fd_json_kv(&j, "rx_pkts", "%llu", (unsigned long long)pc->rx_pkts);
			fd_json_kv(&j, "tx_bytes", "%llu", (unsigned long long)pc->tx_bytes);
			fd_json_kv(&j, "rx_bytes", "%llu", (unsigned long long)pc->rx_bytes);
			fd_json_kv(&j, "retx_timeout", "%llu", (unsigned long long)pc->retx_timeout);
			fd_json_kv(&j, "retx_early", "%llu", (unsigned long long)pc->retx_early);
			fd_json_kv(&j, "rx_dup", "%llu", (unsigned long long)pc->rx_dup);
			fd_json_kv(&j, "rx_old", "%llu", (unsigned long long)pc->rx_old);
			fd_json_kv(&j, "rx_oow", "%llu", (unsigned long long)pc->rx_oow);
			fd_json_kv(&j, "rx_decode_err", "%llu", (unsigned long long)pc->rx_decode_err);
			fd_json_kv(&j, "acks_stale", "%llu", (unsigned long long)pc->acks_stale);
			fd_json_kv(&j, "acks_bogus", "%llu", (unsigned long long)pc->acks_bogus);
			fd_json_kv(&j, "acks_tx", "%llu", (unsigned long long)pc->backs_tx + pc->eacks_tx);
			fd_json_kv(&j, "nacks_tx", "%llu", (unsigned long long)pc->nacks_tx);
			fd_json_kv(&j, "dead", "%s", fc_txn_is_dead(r->t) ? "true" : "false");
		}
		fd_json_close(&j, '}');
	}
	fd_json_close(&j, ']');
	return fd_json_done(&j);
}

size_t fd_cm_json_stats(const struct fd_cm *cm, char *buf, size_t cap)
{
	struct fd_json j;

	fd_json_init(&j, buf, cap);
	fd_json_open(&j, NULL, '{');
	fd_json_kv(&j, "rx", "%llu", (unsigned long long)cm->st.rx);
	fd_json_kv(&j, "tx", "%llu", (unsigned long long)cm->st.tx);
	fd_json_kv(&j, "rx_bad", "%llu", (unsigned long long)cm->st.rx_bad);
	fd_json_kv(&j, "rx_stale", "%llu", (unsigned long long)cm->st.rx_stale);
	fd_json_kv(&j, "retries", "%llu", (unsigned long long)cm->st.retries);
	fd_json_kv(&j, "rejects_sent", "%llu", (unsigned long long)cm->st.rejects_sent);
	fd_json_kv(&j, "rejects_rcvd", "%llu", (unsigned long long)cm->st.rejects_rcvd);
	fd_json_kv(&j, "established", "%llu", (unsigned long long)cm->st.established);
	fd_json_kv(&j, "timeouts", "%llu", (unsigned long long)cm->st.timeouts);
	fd_json_kv(&j, "closed", "%llu", (unsigned long long)cm->st.closed);
	fd_json_kv(&j, "fault_drops", "%llu", (unsigned long long)cm->st.fault_drops);
	fd_json_kv(&j, "close_deferred", "%llu", (unsigned long long)cm->st.close_deferred);
	fd_json_kv(&j, "refusals_sent", "%llu", (unsigned long long)cm->wst.refusals_sent);
	fd_json_kv(&j, "refusals_limited", "%llu", (unsigned long long)cm->wst.refusals_limited);
	fd_json_kv(&j, "refusals_rcvd", "%llu", (unsigned long long)cm->wst.refusals_rcvd);
	fd_json_kv(&j, "mra_sent", "%llu", (unsigned long long)cm->wst.mra_sent);
	fd_json_kv(&j, "mra_rcvd", "%llu", (unsigned long long)cm->wst.mra_rcvd);
	fd_json_kv(&j, "icmp_errors", "%llu", (unsigned long long)cm->wst.icmp_errors);
	fd_json_kv(&j, "silent_timeouts", "%llu", (unsigned long long)cm->wst.silent);
	fd_json_kv(&j, "tx_errors", "%llu", (unsigned long long)cm->wst.tx_errors);
	if (is_psp(cm)) {
		fd_json_kv(&j, "hs_started", "%llu", (unsigned long long)cm->st.hs_started);
		fd_json_kv(&j, "hs_done", "%llu", (unsigned long long)cm->st.hs_done);
		fd_json_open(&j, "hs_refused", '{');
		for (unsigned k = 0; k < 8; k++)
			fd_json_kv(&j, hs_refusal_key[k], "%llu",
				   (unsigned long long)cm->st.hs_refused[k]);
		fd_json_close(&j, '}');
		fd_json_kv(&j, "rx_plain_refused", "%llu", (unsigned long long)cm->st.rx_plain_refused);
		fd_json_kv(&j, "rx_unsealed_bad", "%llu", (unsigned long long)cm->st.rx_unsealed_bad);
		fd_json_kv(&j, "rx_replayed", "%llu", (unsigned long long)cm->st.rx_replayed);
		fd_json_kv(&j, "rx_no_session", "%llu", (unsigned long long)cm->st.rx_no_session);
		fd_json_kv(&j, "keys_sent", "%llu", (unsigned long long)cm->st.keys_sent);
		fd_json_kv(&j, "keys_acked", "%llu", (unsigned long long)cm->st.keys_acked);
		fd_json_kv(&j, "rotations", "%llu", (unsigned long long)cm->st.rotations);
	}
	fd_json_close(&j, '}');
	return fd_json_done(&j);
}

uint32_t fd_cm_nconns(const struct fd_cm *cm)
{
	uint32_t n = 0;

	for (const struct cm_rec *r = cm->recs; r; r = r->next)
		n += r->state == ST_ESTABLISHED;
	return n;
}
