/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pdl.c - packet delivery sublayer (Falcon spec section 9): transmit windows with Tx
 * gating, retransmission (timeout and early), ACK / EACK / NACK generation and
 * processing, Resync, and the section 11 error paths.
 *
 * Callbacks into the transaction sublayer may re-enter this module (submit from tx_done,
 * ulp_ack from deliver). Releases are therefore queued in p->done and handed out only
 * after the state that produced them is consistent (flush_done at the end of every
 * public entry point).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pdl.h"
#include "wire_err.h"
#include "wire_falcon.h"

enum txs { TXS_FREE = 0, TXS_QUEUED, TXS_INFLIGHT, TXS_ACKED };

struct fc_txpkt {
	uint64_t cookie;
	const uint8_t *payload;
	uint64_t seq;         /* submission order (ordered connections, 9.1.3) */
	uint64_t last_tx_ns;  /* last (re)transmission */
	uint64_t last_tx_order; /* p->tx_order of the last (re)transmission */
	uint64_t deadline_ns; /* retransmit timer; UINT64_MAX when not armed (set_deadline) */
	uint16_t hpos;        /* place in p->theap while armed, NO_HPOS otherwise */
	uint32_t len;
	uint32_t gather_len;  /* bytes after the inline ones, from ops->gather at encode */
	uint32_t rsn;
	uint16_t req_len;
	uint8_t state;        /* enum txs */
	uint8_t type;         /* type on the wire now: a NACKed packet becomes a Resync */
	uint8_t orig_type;
	uint8_t resync_code;
	uint8_t retx_count;   /* timeout retransmissions (9.1.5) */
	uint8_t retx_pending; /* waiting to be retransmitted */
	uint8_t in_orrc;      /* counted in [R/D]ORRC (9.1.2) */
	uint8_t in_orc;       /* counted in [R/D]ORC */
	uint8_t rnr;          /* timer armed by an RNR NACK: expiry is not a retry */
	uint8_t status;       /* enum fc_tx_status to report on release */
	uint8_t nack_code;
	uint8_t last;         /* fc_pdl_tx_req.last */
};

struct fc_txwin {
	uint32_t bpsn;     /* oldest unacknowledged PSN (9.1.1) */
	uint32_t npsn;     /* next PSN to assign */
	uint32_t next_new; /* first PSN never transmitted */
	uint32_t size;     /* configured transmit window */
	uint32_t orc;      /* RORC / DORC */
	uint32_t orrc;     /* RORRC / DORRC */
	uint32_t retx_pending;
	uint32_t mask;     /* ring capacity - 1; grows by doubling up to cap_max - 1 */
	uint32_t cap_max;  /* the window rounded up to a power of 2 */
	struct fc_txpkt *pkt;
};

#define NO_HPOS 0xFFFFu

struct fc_done {
	uint64_t cookie;
	uint32_t rsn;
	uint8_t status, nack_code;
};

struct fc_nack_out {
	uint32_t psn;
	uint8_t code, rnr_to, ulp_code, window;
};

struct fc_pdl {
	struct fc_pdl_cfg cfg;
	const struct fc_pdl_ops *ops;
	void *ctx;
	struct fc_rx_state *rx;
	struct fc_rx_state *rx_own; /* allocated here when the caller gave none */
	struct fc_txwin tx[2];
	uint64_t seq;
	uint64_t tx_order;     /* transmissions so far: orders sends within one t1 unit */
	int dead;
	/* liveness (fc_pdl_quiet_since): the peer's last accepted packet, and the first
	 * transmission while nothing was outstanding */
	uint64_t heard_ns, owed_ns;
	uint64_t rnr_until_ns; /* the end of the latest RNR wait: we owe the next word */

	/* congestion control state, from cfg until the RUE answers (10.6.2.2) */
	uint32_t fcwnd_fp, ncwnd;
	uint64_t ipg_ns, rto_ns;
	uint64_t next_tx_ns;   /* pacing when fcwnd < 1 */
	uint32_t ar_acc;       /* AR percentage accumulator (9.1.3.1) */
	uint64_t srtt_ns;      /* for the early-retransmission recency check (9.1.4) */
	uint32_t acked_since_event;
	uint64_t last_event_ns;
	uint32_t path;
	/* the RUE's state, carried in events and restored from results (10.6.2) */
	uint32_t fabric_marker_ts, nic_marker_ts, base_delay_target_ts, delay_state_ts, rtt_state_ts;
	uint8_t ncwnd_dir, cc_opaque;
	uint32_t cc_metadata;  /* RUE info we put in our ACKs */
	uint8_t rx_hops, rxbuf_level;
	uint16_t ecn_count;    /* cumulative, 14 bits on the wire */
	uint8_t rr;            /* round robin between windows (unordered) */

	/* receiver ACK generation (9.1.6) */
	uint64_t ack_deadline_ns;
	uint32_t rx_hi[2];     /* per window: one past the highest PSN this PDL took in (ACK
				* snapshots read the slots below it only: fc_win_snapshot_to) */
	uint8_t push_ar[FC_WIN_SLOTS_MAX]; /* AR of received, not yet ULP-acked Push Data */

	struct fc_nack_out nackq[FC_PDL_NACK_QUEUE];
	uint32_t nack_head, nack_len;

	struct fc_done *done; /* releases waiting for flush_done: both rings' capacity */
	/* armed retransmit timers: a min-heap by deadline of (window << 15 | ring slot), so
	 * that the next deadline is O(1) and on_timer touches only expired packets */
	uint16_t *theap;
	uint32_t ntheap;
	uint32_t ndone;
	int flushing;

	struct fc_pdl_counters cnt;
};

/* ------------------------------------------------------------------------ */

void fc_pdl_cfg_default(struct fc_pdl_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->proto = FC_PROTO_RDMA;
	c->ordered = 1;
	c->tx_window[FC_WIN_REQ] = FC_REQ_WIN;
	c->tx_window[FC_WIN_DATA] = FC_DATA_WIN;
	c->ack_coalesce_count = 10;
	c->ack_coalesce_ns = 8000;
	c->ar_fcwnd_threshold = 2;
	c->ar_percent = 10;
	c->ooo_threshold = 3;
	c->max_retx = 7;
	c->rto_ns = 1000000;
	c->fcwnd_fp = 32 * FC_CWND_ONE;
	c->ncwnd = 64;
	c->ipg_ns = 0;
	c->cc_event_ns = 2000;   /* 10.6.1 P1 */
	c->cc_event_pkts = 16;   /* 10.6.1 P2 */
	c->delay_select = FC_DELAY_FABRIC;
	c->base_delay_target_ts = 191; /* 25 us in 131.072 ns units */
}

static int is_request(uint8_t type)
{
	return type == FC_PKT_PULL_REQ || type == FC_PKT_PUSH_DATA;
}

static enum fc_win_id win_of(uint8_t type)
{
	return type == FC_PKT_PULL_REQ ? FC_WIN_REQ : FC_WIN_DATA;
}

static struct fc_txpkt *txpkt(struct fc_txwin *w, uint32_t psn)
{
	return &w->pkt[psn & w->mask];
}

/* The release queue holds what both rings can release at once (plus slack for Resyncs). */
static uint32_t done_cap(const struct fc_pdl *p)
{
	return p->tx[0].mask + p->tx[1].mask + 2 + 8;
}

static uint32_t ts24(uint64_t ns) { return fc_ns_to_ts(ns) & 0xFFFFFF; }

struct fc_pdl *fc_pdl_new(const struct fc_pdl_cfg *cfg, struct fc_rx_state *rx,
			  const struct fc_pdl_ops *ops, void *ctx)
{
	struct fc_pdl *p;

	if (!cfg || !ops || !ops->deliver || !ops->tx_done || cfg->local_cid > FC_CID_MAX ||
	    cfg->remote_cid > FC_CID_MAX || !cfg->tx_window[0] || !cfg->tx_window[1] ||
	    cfg->tx_window[0] > FC_TX_WIN_MAX || cfg->tx_window[1] > FC_TX_WIN_MAX ||
	    !cfg->ack_coalesce_count || cfg->ar_percent > 100 || !cfg->ncwnd ||
	    !cfg->fcwnd_fp || cfg->max_retx > 255) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	/* memory by use: each ring starts at FC_PDL_RING_MIN packets and doubles when a
	 * submission finds it full, up to its window rounded up to a power of 2; the release
	 * queue and the timer heap follow the rings (ring_grow) */
	for (int i = 0; i < 2; i++) {
		uint32_t cap = 1;

		while (cap < cfg->tx_window[i])
			cap <<= 1;
		p->tx[i].cap_max = cap;
		if (cap > FC_PDL_RING_MIN)
			cap = FC_PDL_RING_MIN;
		p->tx[i].mask = cap - 1;
		p->tx[i].pkt = calloc(cap, sizeof(*p->tx[i].pkt));
	}
	p->done = calloc(done_cap(p), sizeof(*p->done));
	p->theap = calloc(p->tx[0].mask + p->tx[1].mask + 2, sizeof(*p->theap));
	if (!rx)
		rx = p->rx_own = calloc(1, sizeof(*rx));
	if (!p->tx[0].pkt || !p->tx[1].pkt || !p->done || !p->theap || !rx) {
		fc_pdl_free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->cfg = *cfg;
	p->ops = ops;
	p->ctx = ctx;
	p->rx = rx;
	fc_win_init(&rx->req, FC_REQ_WIN, cfg->rx_psn[FC_WIN_REQ]);
	fc_win_init(&rx->data, FC_DATA_WIN, cfg->rx_psn[FC_WIN_DATA]);
	p->rx_hi[FC_WIN_REQ] = cfg->rx_psn[FC_WIN_REQ];
	p->rx_hi[FC_WIN_DATA] = cfg->rx_psn[FC_WIN_DATA];
	rx->ack_pending = rx->ar_pending = rx->t1_t2 = 0;
	for (int i = 0; i < 2; i++) {
		p->tx[i].bpsn = p->tx[i].npsn = p->tx[i].next_new = cfg->tx_psn[i];
		p->tx[i].size = cfg->tx_window[i];
		fc_store_rel32(&rx->tx_bpsn[i], cfg->tx_psn[i]);
	}
	p->fcwnd_fp = cfg->fcwnd_fp;
	p->ncwnd = cfg->ncwnd;
	p->ipg_ns = cfg->ipg_ns;
	p->rto_ns = cfg->rto_ns;
	p->ack_deadline_ns = UINT64_MAX;
	p->base_delay_target_ts = cfg->base_delay_target_ts;
	p->ncwnd_dir = FC_NCWND_INCREASE;
	return p;
}

void fc_pdl_free(struct fc_pdl *p)
{
	if (!p)
		return;
	free(p->tx[0].pkt);
	free(p->tx[1].pkt);
	free(p->done);
	free(p->theap);
	free(p->rx_own);
	free(p);
}

const struct fc_pdl_counters *fc_pdl_counters(const struct fc_pdl *p) { return &p->cnt; }

size_t fc_pdl_mem_bytes(const struct fc_pdl *p)
{
	return sizeof(*p) + (p->tx[0].mask + 1 + p->tx[1].mask + 1) * sizeof(struct fc_txpkt) +
	       done_cap(p) * sizeof(struct fc_done) +
	       (p->tx[0].mask + p->tx[1].mask + 2) * sizeof(*p->theap) +
	       (p->rx_own ? sizeof(*p->rx_own) : 0);
}
int fc_pdl_is_dead(const struct fc_pdl *p) { return p->dead; }

static void go_dead(struct fc_pdl *p, int reason);

void fc_pdl_fail(struct fc_pdl *p, int reason) { go_dead(p, reason); }
uint32_t fc_pdl_path(const struct fc_pdl *p) { return p->path; }
uint32_t fc_pdl_fcwnd_fp(const struct fc_pdl *p) { return p->fcwnd_fp; }
uint32_t fc_pdl_ncwnd(const struct fc_pdl *p) { return p->ncwnd; }
uint64_t fc_pdl_rto_ns(const struct fc_pdl *p) { return p->rto_ns; }
uint64_t fc_pdl_srtt_ns(const struct fc_pdl *p) { return fc_ts_to_ns(p->rtt_state_ts); }
struct fc_rx_state *fc_pdl_rx_state(struct fc_pdl *p) { return p->rx; }

uint32_t fc_pdl_outstanding(const struct fc_pdl *p, enum fc_win_id win)
{
	const struct fc_txwin *w = &p->tx[win];
	uint32_t n = 0;

	for (uint32_t psn = w->bpsn; psn != w->npsn; psn++)
		if (w->pkt[psn & w->mask].state != TXS_ACKED)
			n++;
	return n;
}

uint32_t fc_pdl_unsent(const struct fc_pdl *p, enum fc_win_id win)
{
	return p->tx[win].npsn - p->tx[win].next_new;
}

/* ------------------------------------------------------------------------ */
/* releases                                                                  */

static void flush_done(struct fc_pdl *p)
{
	if (p->flushing)
		return; /* the outer flush picks up what a callback added */
	p->flushing = 1;
	for (uint32_t i = 0; i < p->ndone; i++) {
		struct fc_done d = p->done[i];

		p->ops->tx_done(p->ctx, d.cookie, d.rsn, (enum fc_tx_status)d.status, d.nack_code);
	}
	p->ndone = 0;
	p->flushing = 0;
}

/* ---- retransmit timer heap ---- */

static struct fc_txpkt *theap_pkt(struct fc_pdl *p, uint32_t i)
{
	uint16_t e = p->theap[i];

	return &p->tx[e >> 15].pkt[e & 0x7FFF];
}

static void theap_swap(struct fc_pdl *p, uint32_t a, uint32_t b)
{
	uint16_t x = p->theap[a];

	p->theap[a] = p->theap[b];
	p->theap[b] = x;
	theap_pkt(p, a)->hpos = (uint16_t)a;
	theap_pkt(p, b)->hpos = (uint16_t)b;
}

static void theap_sift(struct fc_pdl *p, uint32_t i)
{
	while (i && theap_pkt(p, (i - 1) / 2)->deadline_ns > theap_pkt(p, i)->deadline_ns) {
		theap_swap(p, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;

		if (l < p->ntheap && theap_pkt(p, l)->deadline_ns < theap_pkt(p, m)->deadline_ns)
			m = l;
		if (l + 1 < p->ntheap &&
		    theap_pkt(p, l + 1)->deadline_ns < theap_pkt(p, m)->deadline_ns)
			m = l + 1;
		if (m == i)
			return;
		theap_swap(p, i, m);
		i = m;
	}
}

/* Arm (deadline), move, or disarm (UINT64_MAX) the retransmit timer of k in window w. */
static void set_deadline(struct fc_pdl *p, struct fc_txwin *w, struct fc_txpkt *k, uint64_t dl)
{
	uint32_t i = k->hpos;

	k->deadline_ns = dl;
	if (dl == UINT64_MAX) {
		if (i == NO_HPOS)
			return;
		k->hpos = NO_HPOS;
		if (i != --p->ntheap) {
			p->theap[i] = p->theap[p->ntheap];
			theap_pkt(p, i)->hpos = (uint16_t)i;
			theap_sift(p, i);
		}
		return;
	}
	if (i == NO_HPOS) {
		i = p->ntheap++;
		p->theap[i] = (uint16_t)((uint32_t)(w - p->tx) << 15 | (uint32_t)(k - w->pkt));
		k->hpos = (uint16_t)i;
	}
	theap_sift(p, i);
}

/* Release one packet: it stops counting against the windows; its tx_done is queued. */
static void release(struct fc_pdl *p, struct fc_txwin *w, struct fc_txpkt *k)
{
	if (k->in_orc)
		w->orc--;
	if (k->in_orrc)
		w->orrc--;
	if (k->retx_pending)
		w->retx_pending--;
	k->in_orc = k->in_orrc = k->retx_pending = 0;
	set_deadline(p, w, k, UINT64_MAX);
	k->state = TXS_ACKED;
	p->done[p->ndone++] = (struct fc_done){ .cookie = k->cookie, .rsn = k->rsn,
						.status = k->status, .nack_code = k->nack_code };
	p->acked_since_event++;
}

/* Move the base over released packets (9.1.1: oldest PSN not yet acknowledged). */
static void tx_advance(struct fc_txwin *w)
{
	while (w->bpsn != w->next_new && txpkt(w, w->bpsn)->state == TXS_ACKED) {
		txpkt(w, w->bpsn)->state = TXS_FREE;
		w->bpsn++;
	}
}

static void go_dead(struct fc_pdl *p, int reason)
{
	if (p->dead)
		return;
	p->dead = 1;
	p->cnt.fatal++;
	for (int i = 0; i < 2; i++) {
		struct fc_txwin *w = &p->tx[i];

		for (uint32_t psn = w->bpsn; psn != w->npsn; psn++) {
			struct fc_txpkt *k = txpkt(w, psn);

			if (k->state == TXS_QUEUED || k->state == TXS_INFLIGHT) {
				k->status = FC_TX_CONN_DEAD;
				release(p, w, k);
			}
		}
		w->bpsn = w->next_new = w->npsn;
	}
	if (p->ops->fatal)
		p->ops->fatal(p->ctx, reason);
}

/* ------------------------------------------------------------------------ */
/* transmit side                                                             */

/* Double ring w (it is full and below cap_max). Packets keep their PSN, so they move to
 * psn & new mask; the timer heap names ring slots, so its entries of w are renamed; the
 * release queue and the heap grow with the rings. Called only from fc_pdl_submit, where no
 * packet pointer is held. Returns 0, or -1 when the ring is at its window or out of memory
 * (nothing changed). */
static int ring_grow(struct fc_pdl *p, struct fc_txwin *w)
{
	uint32_t cap = w->mask + 1, ncap = cap * 2, nmask = ncap - 1, wi = (uint32_t)(w - p->tx);
	uint32_t heap_cap = p->tx[0].mask + p->tx[1].mask + 2 + cap;
	struct fc_txpkt *pkt;
	struct fc_done *done;
	uint16_t *theap;

	if (ncap > w->cap_max)
		return -1;
	/* the queue and the heap first: larger than needed is harmless if the ring fails */
	done = realloc(p->done, (done_cap(p) + cap) * sizeof(*done));
	if (!done)
		goto nomem;
	p->done = done;
	theap = realloc(p->theap, heap_cap * sizeof(*theap));
	if (!theap)
		goto nomem;
	p->theap = theap;
	pkt = calloc(ncap, sizeof(*pkt));
	if (!pkt)
		goto nomem;
	for (uint32_t psn = w->bpsn; psn != w->npsn; psn++)
		pkt[psn & nmask] = w->pkt[psn & w->mask];
	for (uint32_t i = 0; i < p->ntheap; i++) {
		uint32_t slot = p->theap[i] & 0x7FFF, psn;

		if (p->theap[i] >> 15 != wi)
			continue;
		psn = w->bpsn + ((slot - w->bpsn) & w->mask);
		p->theap[i] = (uint16_t)(wi << 15 | (psn & nmask));
	}
	free(w->pkt);
	w->pkt = pkt;
	w->mask = nmask;
	p->cnt.ring_grows++;
	return 0;
nomem:
	p->cnt.ring_grow_fail++;
	return -1;
}

int fc_pdl_submit(struct fc_pdl *p, const struct fc_pdl_tx_req *r)
{
	struct fc_txwin *w;
	struct fc_txpkt *k;

	if (p->dead)
		return -EPIPE;
	if (!r || (r->type != FC_PKT_PULL_REQ && r->type != FC_PKT_PULL_DATA &&
		   r->type != FC_PKT_PUSH_DATA) ||
	    (r->len && !r->payload) || r->len > FC_FALCON_PUSH_MAX ||
	    r->gather_len > FC_FALCON_PUSH_MAX - r->len || (r->gather_len && !p->ops->gather))
		return -EINVAL;
	w = &p->tx[win_of(r->type)];
	if (w->npsn - w->bpsn > w->mask && ring_grow(p, w))
		return -EAGAIN; /* full at its window (or no memory to grow: the same, for now) */
	k = txpkt(w, w->npsn);
	*k = (struct fc_txpkt){
		.cookie = r->cookie, .payload = r->payload, .len = r->len, .rsn = r->rsn,
		.gather_len = r->gather_len,
		.req_len = r->req_len, .type = r->type, .orig_type = r->type,
		.state = TXS_QUEUED, .seq = p->seq++, .deadline_ns = UINT64_MAX, .hpos = NO_HPOS,
		.status = FC_TX_ACKED, .last = r->last ? 1 : 0,
	};
	w->npsn++;
	return 0;
}

static uint32_t fcwnd_pkts(const struct fc_pdl *p)
{
	uint32_t n = p->fcwnd_fp >> FC_CWND_FRAC_BITS;

	return n ? n : 1; /* fcwnd < 1: one packet, paced (9.1.2, 10.3) */
}

/* Tx gating of 9.1.2 for packet k at psn of window w. */
static int gate_ok(const struct fc_pdl *p, const struct fc_txwin *w, const struct fc_txpkt *k,
		   uint32_t psn, int retx, uint64_t now)
{
	uint32_t lim = fcwnd_pkts(p);

	if (lim > w->size)
		lim = w->size;
	if (psn - w->bpsn >= lim)
		return 0;
	if (is_request(k->type) && (retx ? w->orrc : w->orc) >= p->ncwnd)
		return 0;
	if (p->fcwnd_fp < FC_CWND_ONE && now < p->next_tx_ns)
		return 0;
	return 1;
}

static int want_ar(struct fc_pdl *p)
{
	if (p->fcwnd_fp <= p->cfg.ar_fcwnd_threshold * FC_CWND_ONE)
		return 1;
	p->ar_acc += p->cfg.ar_percent;
	if (p->ar_acc >= 100) {
		p->ar_acc -= 100;
		return 1;
	}
	return 0;
}

static int rx_bitmaps_empty(struct fc_pdl *p)
{
	__u64 rx[2], ack[2], rq[2], rqa[2];

	fc_win_snapshot_to(&p->rx->req, p->rx_hi[FC_WIN_REQ], rq, rqa);
	fc_win_snapshot_to(&p->rx->data, p->rx_hi[FC_WIN_DATA], rx, ack);
	return !(rx[0] | rx[1] | ack[0] | ack[1] | rqa[0] | rqa[1]) && !p->rx->req.own &&
	       !p->rx->data.own;
}

static void ack_sent(struct fc_pdl *p)
{
	fc_fetch_and64(&p->rx->ack_pending, 0);
	fc_fetch_and64(&p->rx->ar_pending, 0);
	p->ack_deadline_ns = UINT64_MAX;
}

static int build_data(struct fc_pdl *p, struct fc_txpkt *k, uint32_t psn, int ar, void *buf,
		      size_t cap)
{
	struct fc_falcon_pkt f; /* the members a base-header type's encode reads, no more */

	f.type = k->type;
	f.cid = p->cfg.remote_cid;
	f.dest_fn = p->cfg.dest_fn;
	f.proto = (uint8_t)p->cfg.proto;
	f.ar = ar;
	f.rdbpsn = fc_load_acq32(&p->rx->data.base);
	f.rrbpsn = fc_load_acq32(&p->rx->req.base);
	f.psn = psn;
	f.rsn = k->rsn;
	f.req_len = 0;
	f.resync_code = f.resync_pkt_type = 0;
	f.vendor = 0;
	f.payload = NULL;
	f.payload_len = 0;
	if (k->type == FC_PKT_RESYNC) {
		f.resync_code = k->resync_code;
		f.resync_pkt_type = k->orig_type;
	} else {
		uint8_t *out = buf;
		size_t total, hdr;

		f.req_len = k->type == FC_PKT_PUSH_DATA ? (uint16_t)(k->len + k->gather_len) :
			    k->req_len;
		f.payload_len = k->len + k->gather_len;
		total = fc_falcon_encoded_len(&f);
		if (!total || total > cap)
			return -FC_WIRE_ENOSPC;
		/* one copy per byte: the inline bytes (ULP headers) and the gathered ones go
		 * straight to their place in the frame; the encoder, seeing the payload where
		 * it belongs, writes only the header */
		hdr = total - f.payload_len;
		if (k->len)
			memcpy(out + hdr, k->payload, k->len);
		if (k->gather_len)
			p->ops->gather(p->ctx, k->cookie, 0, out + hdr + k->len, k->gather_len);
		f.payload = out + hdr;
	}
	return fc_falcon_encode(&f, buf, cap);
}

/* Transmit k now (first time or again). */
static int send_pkt(struct fc_pdl *p, struct fc_txwin *w, struct fc_txpkt *k, uint32_t psn,
		    int retx, uint64_t now, void *buf, size_t cap)
{
	int ar = retx || k->type == FC_PKT_RESYNC ? 1 : want_ar(p);
	int n;

	/* AR policy (9.1.3.1): also on the packet that empties the connection's transmit
	 * queue, so that the last packet of a burst (a lone operation) is acknowledged at
	 * once rather than after the ACK coalescing time */
	if (!retx && k->last && p->tx[0].npsn == p->tx[0].next_new + (win_of(k->type) == 0) &&
	    p->tx[1].npsn == p->tx[1].next_new + (win_of(k->type) == 1))
		ar = 1;
	n = build_data(p, k, psn, ar, buf, cap);

	if (n < 0)
		return n;
	if (retx) {
		k->retx_pending = 0;
		w->retx_pending--;
		if (is_request(k->type) && !k->in_orrc) {
			k->in_orrc = 1;
			w->orrc++;
		}
	} else {
		if (p->tx[0].next_new == p->tx[0].bpsn && p->tx[1].next_new == p->tx[1].bpsn)
			p->owed_ns = now; /* the peer owes us an answer from now on */
		k->state = TXS_INFLIGHT;
		w->next_new = psn + 1;
		p->cnt.tx_new++;
		if (is_request(k->type)) {
			k->in_orc = 1;
			w->orc++;
		}
	}
	if (k->type == FC_PKT_RESYNC)
		p->cnt.resyncs_tx++;
	k->last_tx_ns = now;
	k->last_tx_order = ++p->tx_order;
	/* each timeout doubles the wait for the next (as TCP's RFC 6298 5.5): a peer that is
	 * only slow (a software endpoint descheduled for tens of ms) is not given up after
	 * max_retx RTOs of a few ms */
	set_deadline(p, w, k, now + (p->rto_ns << (k->retx_count < FC_RTO_BACKOFF_MAX ?
						   k->retx_count : FC_RTO_BACKOFF_MAX)));
	p->next_tx_ns = now + p->ipg_ns;
	p->cnt.tx_pkts++;
	p->cnt.tx_bytes += (uint64_t)n;
	/* piggybacked ACK (9.1.6): stop the coalescing timer if nothing is left to say */
	if (p->ack_deadline_ns != UINT64_MAX && !p->rx->ar_pending && rx_bitmaps_empty(p))
		ack_sent(p);
	return n;
}

/* First packet of window w waiting for retransmission, or for its first transmission. */
static struct fc_txpkt *first_retx(struct fc_txwin *w, uint32_t *psn)
{
	if (!w->retx_pending)
		return NULL;
	for (uint32_t q = w->bpsn; q != w->next_new; q++) {
		struct fc_txpkt *k = txpkt(w, q);

		if (k->state == TXS_INFLIGHT && k->retx_pending) {
			*psn = q;
			return k;
		}
	}
	return NULL;
}

static struct fc_txpkt *first_new(struct fc_txwin *w, uint32_t *psn)
{
	if (w->next_new == w->npsn)
		return NULL;
	*psn = w->next_new;
	return txpkt(w, w->next_new);
}

/* Pick among the two windows: ordered connections go strictly by submission order
 * (9.1.3, 9.1.5: RSN order across both windows) and stop at a gated head; unordered
 * ones take whichever window can send, alternating. */
static int send_from(struct fc_pdl *p, int retx, uint64_t now, void *buf, size_t cap)
{
	struct fc_txpkt *k[2];
	uint32_t psn[2] = {0, 0};

	for (int i = 0; i < 2; i++)
		k[i] = retx ? first_retx(&p->tx[i], &psn[i]) : first_new(&p->tx[i], &psn[i]);
	if (p->cfg.ordered) {
		int i;

		if (!k[0] && !k[1])
			return 0;
		i = !k[0] ? 1 : !k[1] ? 0 : (k[0]->seq < k[1]->seq ? 0 : 1);
		if (gate_ok(p, &p->tx[i], k[i], psn[i], retx, now))
			return send_pkt(p, &p->tx[i], k[i], psn[i], retx, now, buf, cap);
		/* RSN order binds the initiator's requests only: a target's Pull Data at the
		 * head of the data window is never held behind a gated request (CR#2) */
		if (i == FC_WIN_REQ && k[1] && k[1]->orig_type == FC_PKT_PULL_DATA &&
		    gate_ok(p, &p->tx[1], k[1], psn[1], retx, now))
			return send_pkt(p, &p->tx[1], k[1], psn[1], retx, now, buf, cap);
		return -EAGAIN; /* head-of-line: no later request may pass it */
	}
	for (int j = 0; j < 2; j++) {
		int i = (p->rr + j) & 1;

		if (k[i] && gate_ok(p, &p->tx[i], k[i], psn[i], retx, now)) {
			p->rr = (uint8_t)(i ^ 1);
			return send_pkt(p, &p->tx[i], k[i], psn[i], retx, now, buf, cap);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* ACK / NACK generation (9.1.6, 9.1.7)                                       */

static void ack_fill(struct fc_pdl *p, struct fc_falcon_pkt *f)
{
	uint64_t t = fc_load64(&p->rx->t1_t2);

	f->cid = p->cfg.remote_cid;
	f->rdbpsn = fc_load_acq32(&p->rx->data.base);
	f->rrbpsn = fc_load_acq32(&p->rx->req.base);
	f->t1_ts = (uint32_t)(t >> 32);
	f->t2_ts = (uint32_t)t;
	f->hops = (uint8_t)((p->rx_hops ? p->rx_hops : p->cfg.hops) & FC_CC_HOPS_MASK);
	f->rxbuf = p->rxbuf_level;
	f->ecn = p->ecn_count & FC_CC_ECN_MASK;
}

void fc_pdl_note_path(struct fc_pdl *p, uint8_t hops, int ecn_ce)
{
	p->rx_hops = hops;
	if (ecn_ce)
		p->ecn_count++;
}

void fc_pdl_set_rxbuf_level(struct fc_pdl *p, uint8_t level)
{
	p->rxbuf_level = level > FC_CC_RXBUF_MASK ? FC_CC_RXBUF_MASK : level;
}

static int build_ack(struct fc_pdl *p, void *buf, size_t cap)
{
	struct fc_falcon_pkt f = {0};
	__u64 rx[2], ack[2], rq[2], rqa[2];
	int eack;

	fc_win_snapshot_to(&p->rx->data, p->rx_hi[FC_WIN_DATA], rx, ack);
	fc_win_snapshot_to(&p->rx->req, p->rx_hi[FC_WIN_REQ], rq, rqa);
	ack_fill(p, &f);
	/* 9.1.6: EACK when a bitmap has news: request or data-ack bits, holes in data-rx
	 * (1s not consecutive from bit 0), or an out-of-window notification. */
	eack = rqa[0] || ack[0] || ack[1] || p->rx->req.own || p->rx->data.own ||
	       (rx[0] & (rx[0] + 1)) || (rx[1] && ~rx[0]) || (rx[1] & (rx[1] + 1));
	if (eack) {
		f.type = FC_PKT_EACK;
		f.req_bitmap = rqa[0];
		f.data_ack[0] = ack[0];
		f.data_ack[1] = ack[1];
		f.data_rx[0] = rx[0];
		f.data_rx[1] = rx[1];
		f.own = (uint8_t)((fc_win_own_take(&p->rx->req) ? FC_OWN_REQ : 0) |
				  (fc_win_own_take(&p->rx->data) ? FC_OWN_DATA : 0));
		p->cnt.eacks_tx++;
	} else {
		f.type = FC_PKT_BACK;
		p->cnt.backs_tx++;
	}
	f.rue = p->cc_metadata & FC_ACK_RUE_MASK; /* RUE-to-RUE info, 22 bits (7.7.1) */
	ack_sent(p);
	return fc_falcon_encode(&f, buf, cap);
}

static int build_nack(struct fc_pdl *p, void *buf, size_t cap)
{
	struct fc_nack_out *n = &p->nackq[p->nack_head];
	struct fc_falcon_pkt f = {0};

	ack_fill(p, &f);
	f.type = FC_PKT_NACK;
	f.rue = p->cc_metadata & FC_NACK_RUE_MASK; /* 24 bits (7.8) */
	f.nack_psn = n->psn;
	f.nack_code = n->code;
	f.rnr_timeout = n->rnr_to;
	f.ulp_nack_code = n->ulp_code;
	f.window = n->window == FC_WIN_REQ ? FC_NACK_W_REQ : FC_NACK_W_DATA;
	p->nack_head = (p->nack_head + 1) % FC_PDL_NACK_QUEUE;
	p->nack_len--;
	p->cnt.nacks_tx++;
	return fc_falcon_encode(&f, buf, cap);
}

static int ack_due(const struct fc_pdl *p, uint64_t now)
{
	return p->rx->ar_pending || p->rx->ack_pending >= p->cfg.ack_coalesce_count ||
	       (p->ack_deadline_ns != UINT64_MAX && now >= p->ack_deadline_ns);
}

int fc_pdl_poll_tx(struct fc_pdl *p, uint64_t now, void *buf, size_t cap)
{
	int n;

	if (cap < FC_FALCON_HDR_MAX)
		return -FC_WIRE_ENOSPC;
	if (p->dead)
		return 0;
	if (p->nack_len)
		return build_nack(p, buf, cap);
	if (ack_due(p, now)) {
		if (p->rx->ar_pending)
			p->cnt.acks_by_request++;
		else if (p->rx->ack_pending >= p->cfg.ack_coalesce_count)
			p->cnt.acks_by_count++;
		else
			p->cnt.acks_by_timer++;
		return build_ack(p, buf, cap);
	}
	if (p->tx[0].retx_pending || p->tx[1].retx_pending) {
		n = send_from(p, 1, now, buf, cap);
		if (n == -EAGAIN)
			return 0; /* ordered: a gated retransmission blocks new packets too */
		if (n)
			return n;
	}
	if (p->tx[0].next_new == p->tx[0].npsn && p->tx[1].next_new == p->tx[1].npsn)
		return 0; /* nothing new either: the common end of a poll */
	n = send_from(p, 0, now, buf, cap);
	return n == -EAGAIN ? 0 : n;
}

/* ------------------------------------------------------------------------ */
/* receive side: data packets (9.2.2.4, 9.2.5)                               */

static void schedule_ack(struct fc_pdl *p, uint64_t now)
{
	if (p->ack_deadline_ns == UINT64_MAX)
		p->ack_deadline_ns = now + p->cfg.ack_coalesce_ns;
}

static void piggyback(struct fc_pdl *p, uint32_t rrbpsn, uint32_t rdbpsn);
static int queue_nack(struct fc_pdl *p, struct fc_win *w, enum fc_win_id win, uint32_t psn,
		      const struct fc_pdl_nack *nk);

/* The window verdict of data packet f. XDP (DESIGN.md, one window, two users) marks the
 * shared window before the packet reaches us and passes what the engine has not taken
 * yet (window.h, "The XDP contract"): such a packet is taken here exactly once
 * (fc_win_take), a second copy of it is a duplicate. A packet flagged so whose slot does
 * not show it received (cannot happen with our XDP program) is counted and classified
 * here as usual. Whatever we mark ourselves is SEEN at once, so that XDP answers its
 * duplicates. */
static enum fc_win_verdict rx_verdict(struct fc_pdl *p, struct fc_win *w,
				      const struct fc_falcon_pkt *f, int xdp_marked)
{
	int push = f->type == FC_PKT_PUSH_DATA;

	if (xdp_marked && f->type != FC_PKT_RESYNC) {
		int r = fc_win_take(w, f->psn, !push);

		if (r == 0) {
			p->cnt.rx_xdp_marked++;
			return FC_WIN_NEW;
		}
		if (r == 1)
			return FC_WIN_DUP;
		p->cnt.rx_xdp_unmarked++;
	}
	return fc_win_mark_flags(w, f->psn, FC_SLOT_SEEN | (push ? 0 : FC_SLOT_ACK));
}

static void rx_data(struct fc_pdl *p, const struct fc_falcon_pkt *f, uint64_t tx_ns, uint64_t now,
		    int xdp_marked)
{
	enum fc_win_id wid = win_of(f->type);
	struct fc_win *w = wid == FC_WIN_REQ ? &p->rx->req : &p->rx->data;
	int push = f->type == FC_PKT_PUSH_DATA;
	enum fc_win_verdict v;

	/* the piggybacked ACK is processed for duplicates too (section 11 receiver table) */
	piggyback(p, f->rrbpsn, f->rdbpsn);
	fc_rx_note_packet(p->rx, 0, fc_ns_to_ts(tx_ns), fc_ns_to_ts(now));
	v = rx_verdict(p, w, f, xdp_marked);
	if ((v == FC_WIN_NEW || v == FC_WIN_DUP) && fc_sn_lt(p->rx_hi[wid], f->psn + 1))
		p->rx_hi[wid] = f->psn + 1; /* marked: the snapshots read up to it */
	switch (v) {
	case FC_WIN_NEW:
		break;
	case FC_WIN_DUP:
		if (f->type == FC_PKT_RESYNC && fc_win_mark_ack(w, f->psn) == 0) {
			/* section 11: a Resync for a PSN received but not acknowledged (a push the
			 * ULP holds or refused): acknowledge that PSN, and tell the ULP that the
			 * packet it holds is replaced */
			v = FC_WIN_NEW;
			p->push_ar[f->psn & (FC_WIN_SLOTS_MAX - 1)] = 0;
			break;
		}
		/* fall through */
	case FC_WIN_OLD:
		/* section 11: duplicate -> drop and send ACK (a Resync: for its PSN) */
		if (v == FC_WIN_DUP)
			p->cnt.rx_dup++;
		else
			p->cnt.rx_old++;
		fc_fetch_or64(&p->rx->ar_pending, 1);
		return;
	case FC_WIN_OOW:
		p->cnt.rx_oow++; /* OWN set by mark_rx; the next EACK carries it */
		schedule_ack(p, now);
		return;
	}
	struct fc_pdl_rx_pkt d = {
		.type = (uint8_t)f->type, .window = (uint8_t)wid, .psn = f->psn, .rsn = f->rsn,
		.req_len = f->req_len, .payload = f->payload, .len = (uint32_t)f->payload_len,
		.resync_code = f->resync_code, .resync_pkt_type = f->resync_pkt_type,
	};
	struct fc_pdl_nack nack = {0};

	if (push) /* before deliver: a ULP ack from inside it must see the AR bit */
		p->push_ar[f->psn & (FC_WIN_SLOTS_MAX - 1)] = f->ar;
	if (p->ops->deliver(p->ctx, &d, &nack) && f->type != FC_PKT_RESYNC) {
		/* refused before it was acknowledged: out of the window again, NACK it */
		if (queue_nack(p, w, wid, f->psn, &nack))
			p->cnt.rx_refused_bad++;
		return;
	}
	if (f->type == FC_PKT_RESYNC) {
		p->cnt.resyncs_rx++;
		fc_fetch_or64(&p->rx->ar_pending, 1); /* 9.2.5: ACK generation event */
	} else if (push) {
		schedule_ack(p, now);
	} else if (f->ar) {
		fc_fetch_or64(&p->rx->ar_pending, 1);
	} else {
		schedule_ack(p, now);
	}
	fc_win_advance(w);
}

int fc_pdl_ulp_ack(struct fc_pdl *p, uint32_t psn, uint64_t now)
{
	if (fc_win_mark_ack(&p->rx->data, psn))
		return -ENOENT;
	if (p->push_ar[psn & (FC_WIN_SLOTS_MAX - 1)])
		fc_fetch_or64(&p->rx->ar_pending, 1); /* 9.1.6: AR -> ACK once acknowledged */
	else
		schedule_ack(p, now);
	p->push_ar[psn & (FC_WIN_SLOTS_MAX - 1)] = 0;
	fc_win_advance(&p->rx->data);
	return 0;
}

/* Take a received, unacknowledged packet back out of the window: the ULP refused it, so
 * a retransmission (after RNR) or the Resync (after CIE/NRE/CID) must be accepted. */
static int win_unreceive(struct fc_win *w, uint32_t psn)
{
	__u64 *slot = fc_win_slot(w, psn), s;

	if (fc_win_classify(fc_load_acq32(&w->base), w->size, psn) != FC_WIN_NEW)
		return -ENOENT;
	/* received (a Pull Request also acknowledged on receipt: its NACK un-acks it),
	 * SEEN or not; single owner once RX is set, so one CAS */
	s = fc_load64(slot);
	if ((__u32)(s >> 32) != psn || !(s & FC_SLOT_RX))
		return -ENOENT;
	return fc_cas64(slot, s, fc_slot_make(psn, 0)) == s ? 0 : -ENOENT;
}

/* Un-receive psn and queue its NACK. Returns 0, -EINVAL, -ENOENT or -EAGAIN. */
static int queue_nack(struct fc_pdl *p, struct fc_win *w, enum fc_win_id win, uint32_t psn,
		      const struct fc_pdl_nack *nk)
{
	struct fc_nack_out *n;

	if (!fc_nack_code_valid(nk->code) || nk->rnr_timeout > FC_NACK_RNR_TO_MASK)
		return -EINVAL;
	if (win_unreceive(w, psn))
		return -ENOENT;
	p->push_ar[psn & (FC_WIN_SLOTS_MAX - 1)] = 0;
	if (p->nack_len == FC_PDL_NACK_QUEUE) {
		p->cnt.nack_queue_full++;
		return -EAGAIN; /* the sender times out and retransmits */
	}
	n = &p->nackq[(p->nack_head + p->nack_len) % FC_PDL_NACK_QUEUE];
	*n = (struct fc_nack_out){ .psn = psn, .code = nk->code, .rnr_to = nk->rnr_timeout,
				   .ulp_code = nk->ulp_code, .window = (uint8_t)win };
	p->nack_len++;
	return 0;
}

int fc_pdl_ulp_nack(struct fc_pdl *p, enum fc_win_id win, uint32_t psn, uint8_t code,
		    uint8_t rnr_to, uint8_t ulp_code, uint64_t now)
{
	struct fc_pdl_nack nk = { .code = code, .rnr_timeout = rnr_to, .ulp_code = ulp_code };

	(void)now;
	return queue_nack(p, win == FC_WIN_REQ ? &p->rx->req : &p->rx->data, win, psn, &nk);
}

/* ------------------------------------------------------------------------ */
/* receive side: ACK, EACK, NACK processing (9.2.3, 9.2.4)                    */

/* Mark psn of w acknowledged by the peer. */
static void peer_acked(struct fc_pdl *p, struct fc_txwin *w, uint32_t psn)
{
	struct fc_txpkt *k = txpkt(w, psn);

	if (k->state != TXS_INFLIGHT)
		return;
	release(p, w, k);
}

/* Validate and apply the base PSNs of an ACK, NACK or piggybacked ACK. Returns 0, 1 for
 * a stale one (older than ours: discard, 9.2.3) or 2 for one that acknowledges PSNs we
 * never sent. */
static int check_bases(struct fc_pdl *p, uint32_t rrbpsn, uint32_t rdbpsn)
{
	uint32_t b[2] = { rrbpsn, rdbpsn };

	for (int i = 0; i < 2; i++) {
		if (fc_sn_lt(b[i], p->tx[i].bpsn))
			return 1;
		if (b[i] - p->tx[i].bpsn > p->tx[i].next_new - p->tx[i].bpsn)
			return 2;
	}
	return 0;
}

static void apply_bases(struct fc_pdl *p, uint32_t rrbpsn, uint32_t rdbpsn)
{
	uint32_t b[2] = { rrbpsn, rdbpsn };

	for (int i = 0; i < 2; i++) {
		struct fc_txwin *w = &p->tx[i];

		for (uint32_t q = w->bpsn; q != b[i]; q++)
			peer_acked(p, w, q);
		tx_advance(w);
		/* what XDP compares an ACK's bases with (9.2.3, xdp_conn.h) */
		fc_store_rel32(&p->rx->tx_bpsn[i], w->bpsn);
	}
}

static void piggyback(struct fc_pdl *p, uint32_t rrbpsn, uint32_t rdbpsn)
{
	uint32_t old = p->tx[0].bpsn + p->tx[1].bpsn;

	if (check_bases(p, rrbpsn, rdbpsn))
		return; /* a reordered data packet carries older bases: nothing to learn */
	apply_bases(p, rrbpsn, rdbpsn);
	if (p->tx[0].bpsn + p->tx[1].bpsn != old)
		p->cnt.piggyback_acks++;
}

static void flag_retx(struct fc_pdl *p, struct fc_txwin *w, struct fc_txpkt *k)
{
	(void)p;
	if (k->retx_pending)
		return;
	k->retx_pending = 1;
	w->retx_pending++;
	k->rnr = 0; /* whatever it waited for, it goes again now */
	set_deadline(p, w, k, UINT64_MAX);
	if (k->in_orrc) { /* 9.1.2: eligible again -> no longer outstanding */
		k->in_orrc = 0;
		w->orrc--;
	}
}

/* Offer an event to the RUE (10.6.2.1) with the connection's CC state; returns whether
 * it was taken. ACK events carry the packets acknowledged since the last taken event. */
static int cc_event(struct fc_pdl *p, struct fc_cc_event *ev, uint64_t now)
{
	unsigned pred = 0;

	if (!p->ops->cc_event)
		return 0;
	ev->cid = p->cfg.local_cid;
	ev->fcwnd_fp = p->fcwnd_fp;
	ev->ncwnd = p->ncwnd;
	ev->inter_packet_gap_ts = fc_ns_to_ts(p->ipg_ns);
	ev->retransmit_timeout_ts = fc_ns_to_ts(p->rto_ns);
	ev->delay_select = p->cfg.delay_select;
	ev->fabric_window_time_marker_ts = p->fabric_marker_ts;
	ev->nic_window_time_marker_ts = p->nic_marker_ts;
	ev->ncwnd_direction = p->ncwnd_dir;
	ev->base_delay_target_ts = p->base_delay_target_ts;
	ev->delay_state_ts = p->delay_state_ts;
	ev->rtt_state_ts = p->rtt_state_ts;
	ev->cc_opaque = p->cc_opaque;
	ev->num_packets_acked = (uint16_t)(p->acked_since_event > 1023 ? 1023 : p->acked_since_event);
	if (now - p->last_event_ns >= p->cfg.cc_event_ns)
		pred |= FC_CC_P1;
	if (p->acked_since_event >= p->cfg.cc_event_pkts)
		pred |= FC_CC_P2;
	if (p->ops->cc_event(p->ctx, ev, pred)) {
		p->cnt.cc_events_skipped++;
		return 0;
	}
	p->cnt.cc_events++;
	p->acked_since_event = 0;
	p->last_event_ns = now;
	return 1;
}

static void retx_event(struct fc_pdl *p, const struct fc_txpkt *k, int reason, uint64_t now)
{
	struct fc_cc_event ev = { .type = FC_RUE_EV_RETX,
				  .retx_count = k->retx_count > 7 ? 7 : k->retx_count,
				  .retx_reason = (uint8_t)reason };
	cc_event(p, &ev, now);
}

/* What an EACK can show of our transmissions: t1 is the transmit time of the latest
 * packet the receiver got (131.072 ns units) and seen_order the latest transmission
 * (p->tx_order) among the packets its bitmaps show received. */
struct eack_view {
	uint32_t t1_ts;
	uint64_t seen_order;
};

/* Recency check of 9.1.4: may k be retransmitted on the word of this EACK? Not within an
 * RTT of its last transmission (the spec's check), and not when the receiver can have
 * seen nothing sent after that transmission: its bitmap cannot show it yet. t1 strictly
 * after the unit of k's last transmission proves it saw something later; t1 in that very
 * unit proves nothing (131.072 ns hold several packets), so then a packet shown received
 * must have left after k. Without the second part a late EACK (an RTT above the smoothed
 * one, as behind a burst of RNR-timer retransmissions) re-sent a packet whose
 * retransmission was still on its way (issue 13). */
static int recent(const struct fc_pdl *p, const struct fc_txpkt *k, const struct eack_view *v,
		  uint64_t now)
{
	int32_t d = (int32_t)(fc_ns_to_ts(k->last_tx_ns) - v->t1_ts);

	if (k->last_tx_ns + p->srtt_ns >= now)
		return 1;
	return d > 0 || (d == 0 && k->last_tx_order > v->seen_order);
}

/* Latest transmission among the packets of w a bitmap (bit i = base + i) shows received. */
static uint64_t seen_order(struct fc_txwin *w, uint32_t base, const __u64 bm[2], uint32_t bits)
{
	uint64_t seen = 0;

	for (uint32_t j = 0; j < (bits + 63) / 64; j++) {
		for (__u64 m = bm[j]; m; m &= m - 1) {
			uint32_t psn = base + j * 64 + (uint32_t)__builtin_ctzll(m);
			const struct fc_txpkt *k = txpkt(w, psn);

			if (psn - w->bpsn < w->next_new - w->bpsn && k->last_tx_order > seen)
				seen = k->last_tx_order;
		}
	}
	return seen;
}

/* Early retransmission on an EACK (9.1.4): OOO-distance over a bitmap (bit i = base+i)
 * with the recency check; returns whether the bitmap showed a loss. */
static int early_retx(struct fc_pdl *p, struct fc_txwin *w, uint32_t base, const __u64 bm[2],
		      uint32_t bits, const struct eack_view *v, uint64_t now)
{
	int high = -1, loss = 0;

	for (int i = (int)bits - 1; i >= 0; i--)
		if ((bm[i / 64] >> (i % 64)) & 1) {
			high = i;
			break;
		}
	for (int i = 0; i + (int)p->cfg.ooo_threshold < high; i++) {
		uint32_t psn = base + (uint32_t)i;
		struct fc_txpkt *k;

		if ((bm[i / 64] >> (i % 64)) & 1)
			continue;
		if (psn - w->bpsn >= w->next_new - w->bpsn)
			continue;
		k = txpkt(w, psn);
		/* an RNR-NACKed packet is a hole on purpose: it waits out its RNR timer (the
		 * ULP's own recovery, 9.1.4) */
		if (k->state != TXS_INFLIGHT || k->retx_pending || k->rnr)
			continue;
		loss = 1;
		if (recent(p, k, v, now))
			continue;
		flag_retx(p, w, k);
		p->cnt.retx_early++;
		retx_event(p, k, FC_RETX_EARLY, now);
	}
	return loss;
}

/* EACK-OWN heuristic (9.1.4): retransmit what the bitmap does not show as received,
 * within and beyond it, at most once per RTT. Beyond the bitmap the OWN bit itself is the
 * receiver's word that it saw (and dropped) packets there, so a transmission in t1's own
 * unit counts as seen. */
static void own_retx(struct fc_pdl *p, struct fc_txwin *w, uint32_t base, const __u64 bm[2],
		     uint32_t bits, const struct eack_view *v, uint64_t now)
{
	struct eack_view beyond = { .t1_ts = v->t1_ts, .seen_order = UINT64_MAX };

	for (uint32_t psn = w->bpsn; psn != w->next_new; psn++) {
		uint32_t i = psn - base;
		struct fc_txpkt *k = txpkt(w, psn);

		if (i < bits && ((bm[i / 64] >> (i % 64)) & 1))
			continue;
		if (k->state != TXS_INFLIGHT || k->retx_pending || k->rnr ||
		    recent(p, k, i < bits ? v : &beyond, now))
			continue;
		flag_retx(p, w, k);
		p->cnt.retx_own++;
		retx_event(p, k, FC_RETX_EARLY, now);
	}
}

static void rtt_sample(struct fc_pdl *p, uint32_t t1_ts, uint64_t now)
{
	uint32_t d = fc_ns_to_ts(now) - t1_ts;
	uint64_t ns = fc_ts_to_ns(d);

	if (!t1_ts || ns > 10ull * 1000 * 1000 * 1000)
		return; /* no timestamp yet, or nonsense: ignore */
	p->srtt_ns = p->srtt_ns ? (p->srtt_ns * 7 + ns) / 8 : ns;
}

static void ack_event(struct fc_pdl *p, const struct fc_falcon_pkt *f, uint64_t tx_ns, uint64_t now,
		      int eack_drop)
{
	struct fc_cc_event ev = {
		.type = f->type == FC_PKT_NACK ? FC_RUE_EV_NACK : FC_RUE_EV_ACK,
		.t1_ts = f->t1_ts & 0xFFFFFF, .t2_ts = f->t2_ts & 0xFFFFFF,
		.t3_ts = ts24(tx_ns), .t4_ts = ts24(now),
		.nack_code = f->type == FC_PKT_NACK ? f->nack_code : 0,
		.forward_hops = f->hops, .rx_buffer_level = f->rxbuf, .cc_metadata = f->rue,
		.eack = f->type == FC_PKT_EACK, .eack_drop = (uint8_t)eack_drop,
		.ecn_accumulated = f->ecn,
	};
	cc_event(p, &ev, now);
}

/* The part of ACK and NACK processing they share (9.2.3, 9.2.4): discard a stale or bogus
 * one, else take its base PSNs (releasing what they acknowledge) and its RTT sample.
 * Returns 0 when the packet is to be processed further. */
static int take_ack_bases(struct fc_pdl *p, const struct fc_falcon_pkt *f, uint64_t now)
{
	int r = check_bases(p, f->rrbpsn, f->rdbpsn);

	if (r) {
		if (r == 1)
			p->cnt.acks_stale++;
		else
			p->cnt.acks_bogus++;
		return -1;
	}
	apply_bases(p, f->rrbpsn, f->rdbpsn);
	rtt_sample(p, f->t1_ts, now);
	return 0;
}

static void rx_ack(struct fc_pdl *p, const struct fc_falcon_pkt *f, uint64_t tx_ns, uint64_t now)
{
	int drop = 0;

	if (f->type == FC_PKT_EACK)
		p->cnt.eacks_rx++;
	else
		p->cnt.backs_rx++;
	if (take_ack_bases(p, f, now))
		return;
	if (f->type == FC_PKT_EACK) {
		__u64 req[2] = { f->req_bitmap, 0 }, dack[2] = { f->data_ack[0], f->data_ack[1] };
		__u64 drx[2] = { f->data_rx[0], f->data_rx[1] };
		struct fc_txwin *rw = &p->tx[FC_WIN_REQ], *dw = &p->tx[FC_WIN_DATA];
		struct eack_view v = { .t1_ts = f->t1_ts };
		uint64_t sd;

		/* before the releases below: a released slot keeps its order until reused, but
		 * leaves the range seen_order looks at */
		v.seen_order = seen_order(rw, f->rrbpsn, req, FC_REQ_WIN);
		sd = seen_order(dw, f->rdbpsn, drx, FC_DATA_WIN);
		if (sd > v.seen_order)
			v.seen_order = sd;
		/* 9.2.3: OR the bitmaps in; release everything they acknowledge */
		for (uint32_t i = 0; i < FC_REQ_WIN; i++)
			if (((req[0] >> i) & 1) && f->rrbpsn + i - rw->bpsn < rw->next_new - rw->bpsn)
				peer_acked(p, rw, f->rrbpsn + i);
		for (uint32_t i = 0; i < FC_DATA_WIN; i++)
			if (((dack[i / 64] >> (i % 64)) & 1) &&
			    f->rdbpsn + i - dw->bpsn < dw->next_new - dw->bpsn)
				peer_acked(p, dw, f->rdbpsn + i);
		tx_advance(rw);
		tx_advance(dw);
		fc_store_rel32(&p->rx->tx_bpsn[FC_WIN_REQ], rw->bpsn);
		fc_store_rel32(&p->rx->tx_bpsn[FC_WIN_DATA], dw->bpsn);
		drop |= early_retx(p, rw, f->rrbpsn, req, FC_REQ_WIN, &v, now);
		drop |= early_retx(p, dw, f->rdbpsn, drx, FC_DATA_WIN, &v, now);
		if (f->own & FC_OWN_REQ)
			own_retx(p, rw, f->rrbpsn, req, FC_REQ_WIN, &v, now);
		if (f->own & FC_OWN_DATA)
			own_retx(p, dw, f->rdbpsn, drx, FC_DATA_WIN, &v, now);
	}
	ack_event(p, f, tx_ns, now, drop);
}

static uint8_t resync_code_for(uint8_t nack_code)
{
	switch (nack_code) {
	case FC_NACK_CIE: return FC_RESYNC_TARGET_CIE;
	case FC_NACK_NRE: return FC_RESYNC_TARGET_NRE;
	case FC_NACK_INVALID_CID: return FC_RESYNC_TARGET_INVALID_CID;
	default: return FC_RESYNC_REMOTE_XLR;
	}
}

/* Replace k by a Resync at the same PSN and RSN (9.1.8); it is sent as soon as the gate
 * allows, and its ACK releases the original with status st. */
static void to_resync(struct fc_pdl *p, struct fc_txwin *w, struct fc_txpkt *k, uint8_t code,
		      enum fc_tx_status st, uint8_t nack_code)
{
	if (k->in_orc) {
		k->in_orc = 0;
		w->orc--;
	}
	if (k->in_orrc) {
		k->in_orrc = 0;
		w->orrc--;
	}
	k->type = FC_PKT_RESYNC;
	k->resync_code = code;
	k->retx_count = 0;
	k->rnr = 0;
	k->status = (uint8_t)st;
	k->nack_code = nack_code;
	k->payload = NULL;
	k->gather_len = 0;
	k->len = 0;
	flag_retx(p, w, k);
}

static void rx_nack(struct fc_pdl *p, const struct fc_falcon_pkt *f, uint64_t tx_ns, uint64_t now)
{
	struct fc_txwin *w = &p->tx[f->window == FC_NACK_W_REQ ? FC_WIN_REQ : FC_WIN_DATA];
	struct fc_txpkt *k;
	uint64_t rnr_ns;

	p->cnt.nacks_rx++;
	if (take_ack_bases(p, f, now))
		return;
	ack_event(p, f, tx_ns, now, 0);
	if (f->nack_psn - w->bpsn >= w->next_new - w->bpsn)
		return; /* not outstanding (acknowledged meanwhile, or never sent) */
	k = txpkt(w, f->nack_psn);
	if (k->state != TXS_INFLIGHT || k->type == FC_PKT_RESYNC)
		return;
	rnr_ns = fc_rnr_timeout_ns(f->rnr_timeout);
	if (p->ops->nack)
		p->ops->nack(p->ctx, k->rsn, k->orig_type, f->nack_code, f->ulp_nack_code,
			     f->nack_code == FC_NACK_RNR ? rnr_ns : 0);
	k = txpkt(w, f->nack_psn); /* the callback may have submitted: a ring can grow */
	switch (f->nack_code) {
	case FC_NACK_RNR:
		/* section 11: retransmission timeout = max(RTO, RNR timeout); not a retry. The
		 * NACK proves the packet arrived: earlier timeouts (a lost packet or NACK of an
		 * earlier round) say nothing about the path any more, so the count of
		 * unanswered attempts starts again; how long a receiver may stay not ready is
		 * the ULP's rnr_retry, not max_retx (a long RNR wait over a lossy path would
		 * otherwise exhaust the retries of a packet that keeps arriving) */
		k->rnr = 1;
		k->retx_count = 0;
		set_deadline(p, w, k, now + (rnr_ns > p->rto_ns ? rnr_ns : p->rto_ns));
		if (k->deadline_ns > p->rnr_until_ns)
			p->rnr_until_ns = k->deadline_ns;
		break;
	case FC_NACK_RESOURCE:
		/* 9.2.4: the RUE hears of it (event above) and shrinks ncwnd; the packet is
		 * retransmitted as normal, by its timer: resending at once would bounce off
		 * the full receiver at RTT speed */
		p->cnt.nack_resource_rx++;
		break;
	default: /* xLR, CIE, NRE, invalid CID: Resync with the same PSN (9.2.4, 11) */
		to_resync(p, w, k, resync_code_for(f->nack_code), FC_TX_NACKED, f->nack_code);
		break;
	}
}

int fc_pdl_rx(struct fc_pdl *p, const void *pkt, size_t len, uint64_t tx_ns, uint64_t now)
{
	struct fc_rx_meta m = { .tx_ns = tx_ns, .now_ns = now };

	return fc_pdl_rx_meta(p, pkt, len, &m);
}

int fc_pdl_rx_meta(struct fc_pdl *p, const void *pkt, size_t len, const struct fc_rx_meta *m)
{
	uint64_t tx_ns = m->tx_ns, now = m->now_ns;
	struct fc_falcon_pkt f;
	int rc = fc_falcon_decode(pkt, len, &f);

	if (rc < 0) {
		p->cnt.rx_decode_err++;
		return rc;
	}
	if (f.cid != p->cfg.local_cid) {
		p->cnt.rx_bad_cid++;
		return 0;
	}
	if (p->dead) {
		p->cnt.rx_dead++;
		return 0;
	}
	p->cnt.rx_pkts++;
	p->cnt.rx_bytes += len;
	p->heard_ns = now;
	if (m->hops || m->ecn_ce)
		fc_pdl_note_path(p, m->hops, m->ecn_ce);
	switch (f.type) {
	case FC_PKT_BACK:
	case FC_PKT_EACK:
		rx_ack(p, &f, tx_ns, now);
		break;
	case FC_PKT_NACK:
		rx_nack(p, &f, tx_ns, now);
		break;
	default:
		rx_data(p, &f, tx_ns, now, m->xdp_marked);
		break;
	}
	flush_done(p);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* timers (9.1.5, 9.1.6)                                                      */

uint64_t fc_pdl_ack_owed_at(const struct fc_pdl *p)
{
	if (p->dead)
		return UINT64_MAX;
	if (p->rx->ar_pending)
		return 0;
	return p->ack_deadline_ns;
}

uint64_t fc_pdl_next_deadline(const struct fc_pdl *p)
{
	uint64_t t = UINT64_MAX;

	if (p->dead)
		return t;
	if (p->rx->ar_pending || p->nack_len)
		return 0;
	if (p->ack_deadline_ns < t) /* set by a received packet or a ULP ack */
		t = p->ack_deadline_ns;
	if (p->ntheap && p->tx[p->theap[0] >> 15].pkt[p->theap[0] & 0x7FFF].deadline_ns < t)
		t = p->tx[p->theap[0] >> 15].pkt[p->theap[0] & 0x7FFF].deadline_ns;
	if (p->fcwnd_fp >= FC_CWND_ONE || p->next_tx_ns >= t)
		return t; /* not pacing, or pacing would not be first */
	for (int i = 0; i < 2; i++) {
		const struct fc_txwin *w = &p->tx[i];

		/* pacing (fcwnd < 1): only when the window would let something go */
		if (w->retx_pending ||
		    (w->next_new != w->npsn && w->next_new - w->bpsn < fcwnd_pkts(p)))
			return p->next_tx_ns;
	}
	return t;
}

uint64_t fc_pdl_quiet_since(const struct fc_pdl *p)
{
	uint64_t since;

	if (p->tx[0].next_new == p->tx[0].bpsn && p->tx[1].next_new == p->tx[1].bpsn)
		return UINT64_MAX;
	since = p->heard_ns > p->owed_ns ? p->heard_ns : p->owed_ns;
	return since > p->rnr_until_ns ? since : p->rnr_until_ns;
}

uint64_t fc_pdl_heard_ns(const struct fc_pdl *p) { return p->heard_ns; }

void fc_pdl_set_give_up(struct fc_pdl *p, uint64_t give_up_ns) { p->cfg.give_up_ns = give_up_ns; }

/* May a packet past max_retx be given up? Only when the peer said nothing for
 * give_up_ns (section 11's retry limit read as verbs' retry_cnt x timeout: a peer that
 * answers slowly, or a host that did not run us, is not a lost peer). */
static int peer_silent(const struct fc_pdl *p, uint64_t now)
{
	uint64_t since = fc_pdl_quiet_since(p);

	if (!p->cfg.give_up_ns)
		return 1;
	return since != UINT64_MAX && p->cfg.give_up_ns != UINT64_MAX &&
	       now - since >= p->cfg.give_up_ns;
}

static uint64_t later_by(uint64_t t, uint64_t d, uint64_t now)
{
	return t + d < t || t + d > now ? now : t + d;
}

void fc_pdl_stalled(struct fc_pdl *p, uint64_t stall_ns, uint64_t now)
{
	if (p->dead)
		return;
	p->heard_ns = later_by(p->heard_ns, stall_ns, now);
	p->owed_ns = later_by(p->owed_ns, stall_ns, now);
	/* each expired timer moves one RTO past now, so the loop ends after at most ntheap */
	while (p->ntheap && theap_pkt(p, 0)->deadline_ns <= now) {
		uint16_t e = p->theap[0];
		struct fc_txwin *w = &p->tx[e >> 15];

		set_deadline(p, w, &w->pkt[e & 0x7FFF], now + p->rto_ns + 1);
	}
	p->cnt.stalls++;
}

static void timeout(struct fc_pdl *p, struct fc_txwin *w, struct fc_txpkt *k, uint64_t now)
{
	if (k->rnr) { /* the RNR wait is over: send again, not counted as a retry */
		k->rnr = 0;
		flag_retx(p, w, k);
		return;
	}
	if (k->retx_count >= p->cfg.max_retx && peer_silent(p, now)) {
		if (k->type == FC_PKT_RESYNC) {
			/* section 11: Resync at max attempts -> connection fatal */
			go_dead(p, -ETIMEDOUT);
			return;
		}
		/* section 11: original at max attempts -> Resync with the same PSN */
		to_resync(p, w, k, FC_RESYNC_RETX_EXHAUSTED, FC_TX_RETX_EXHAUSTED, 0);
		return;
	}
	if (k->retx_count < UINT8_MAX) /* past max_retx: at the longest backoff */
		k->retx_count++;
	flag_retx(p, w, k);
	p->cnt.retx_timeout++;
	retx_event(p, k, FC_RETX_RTO, now);
}

void fc_pdl_on_timer(struct fc_pdl *p, uint64_t now)
{
	/* only the expired timers, earliest first; each is disarmed before it is handled
	 * (timeout re-arms nothing: the retransmission arms it again when it goes out) */
	while (!p->dead && p->ntheap && theap_pkt(p, 0)->deadline_ns <= now) {
		uint16_t e = p->theap[0];
		struct fc_txwin *w = &p->tx[e >> 15];
		struct fc_txpkt *k = &w->pkt[e & 0x7FFF];

		set_deadline(p, w, k, UINT64_MAX);
		timeout(p, w, k, now);
	}
	flush_done(p); /* an expired ACK coalescing timer is seen by poll_tx (ack_due) */
}

void fc_pdl_cc_apply(struct fc_pdl *p, const struct fc_cc_result *r)
{
	if (r->fcwnd_fp)
		p->fcwnd_fp = r->fcwnd_fp;
	if (r->ncwnd)
		p->ncwnd = r->ncwnd;
	p->ipg_ns = fc_ts_to_ns(r->inter_packet_gap_ts);
	if (r->retransmit_timeout_ts)
		p->rto_ns = fc_ts_to_ns(r->retransmit_timeout_ts);
	p->fabric_marker_ts = r->fabric_window_time_marker_ts & FC_TS24_MASK;
	p->nic_marker_ts = r->nic_window_time_marker_ts & FC_TS24_MASK;
	p->ncwnd_dir = r->ncwnd_direction;
	p->base_delay_target_ts = r->base_delay_target_ts & FC_TS24_MASK;
	p->delay_state_ts = r->delay_state_ts & FC_TS24_MASK;
	p->rtt_state_ts = r->rtt_state_ts & FC_TS24_MASK;
	p->cc_opaque = r->cc_opaque & 3;
	p->cc_metadata = r->cc_metadata & FC_TS24_MASK;
	if (r->randomize_path) { /* PLB (10.4) */
		p->path++;
		p->cnt.reroutes++;
		if (p->ops->reroute)
			p->ops->reroute(p->ctx, p->path);
	}
}
