/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Property test of the packet delivery sublayer in the deterministic simulator.
 *
 * Two hosts, each a PDL with a stand-in transaction layer that pushes data, pulls data
 * (the peer answers each Pull Request with Pull Data of the requested length), acks Push
 * Data now or a little later, and now and then refuses one with an RNR NACK. The link
 * drops, duplicates, reorders and corrupts per seed (loss 0-20 %); a hash trailer stands
 * in for the PSP ICV, so corrupted packets fail the integrity check (9.2.2.1).
 *
 * Properties, every seed:
 *  - every packet a host hands to its PDL is delivered to the peer's transaction layer
 *    exactly once, with the bytes it was given;
 *  - every submitted packet is released exactly once, acknowledged; nothing stays
 *    outstanding; no connection fails;
 *  - on a clean link (every 8th seed): no retransmission of any kind, and the ACKs stay
 *    within what coalescing allows.
 * `--summary` prints a table over all seeds (make soak).
 * `--xdp`: the receiving end marks the window first, as the XDP program does (pdl.h,
 * fc_pdl_rx_meta; window.h, "The XDP contract"): fc_win_xdp_mark on the receiver's window
 * for Push Data, Pull Request and Pull Data; duplicates of what the PDL has taken and
 * old packets are dropped there and answered with an ACK (here: the AR-pending bit, so
 * the receiver's next poll sends it, as XDP_TX would send it at once), out-of-window
 * packets dropped with OWN set; new ones reach the PDL with xdp_marked. On lossy seeds
 * 2 % of the marked packets are lost between XDP and the PDL (an AF_XDP ring that was
 * full): the sender's retransmission must still get through. Same properties, and every
 * data packet the PDL processed was marked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdl.h"
#include "sim.h"
#include "sim_icv.h"
#include "wire_falcon.h"

#define MAXPKT 512     /* packets a host initiates per seed, at most */
#define MAXRSN (2 * MAXPKT)
#define US 1000ull

static int xdp_mode; /* --xdp */

struct host;

struct sent { /* what a host submitted, by cookie */
	uint8_t type;
	uint32_t rsn, len;
	uint64_t submit_ns;
	int released;
	uint8_t buf[1024];
};

struct host {
	int id;
	struct fc_pdl *p;
	struct host *peer;
	struct sim_rng rng;
	uint64_t now;
	int ordered;
	/* what this host initiates */
	uint32_t n_push, n_pull;   /* planned */
	uint32_t next_rsn;         /* RSNs handed out so far (push + pull requests) */
	struct sent sent[MAXPKT + MAXRSN];
	uint32_t nsent;
	/* submissions waiting for room in the transmit window */
	uint32_t backlog[MAXPKT + MAXRSN];
	uint32_t bl_head, bl_len;
	/* what arrived from the peer: delivery count per (type, rsn) */
	uint8_t got_push[MAXRSN], got_preq[MAXRSN], got_pdata[MAXRSN];
	uint16_t preq_len[MAXRSN];
	/* Push Data waiting for a delayed ULP ack */
	uint32_t ack_psn[256];
	uint64_t ack_due[256];
	uint32_t nack_wait;
	int rnr_budget;
	int violation;
	char why[200];
	uint64_t worst_latency_ns;
	uint64_t integrity_drops;
	uint64_t xdp_dup_old, xdp_oow;  /* --xdp: dropped (and answered) before the PDL */
	uint64_t xdp_lost;              /* --xdp: marked, then lost before the PDL */
	uint32_t xdp_lost_ppm;
	uint64_t rx_data_pkts, rx_ar_pkts;
};

static void fail(struct host *h, const char *what, uint32_t a, uint32_t b)
{
	if (!h->violation)
		snprintf(h->why, sizeof(h->why), "host %d: %s (%u, %u)", h->id, what, a, b);
	h->violation = 1;
}

/* Deterministic payload bytes of (host, rsn, type). */
static void fill(uint8_t *b, uint32_t len, int host, uint32_t rsn, uint8_t type)
{
	uint64_t x = ((uint64_t)host << 48) ^ ((uint64_t)type << 40) ^ rsn ^ 0x9E3779B97F4A7C15ull;

	for (uint32_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

static int check_bytes(const uint8_t *b, uint32_t len, int host, uint32_t rsn, uint8_t type)
{
	uint8_t want[1024];

	if (len > sizeof(want))
		return 0;
	fill(want, len, host, rsn, type);
	return memcmp(want, b, len) == 0;
}

static void submit_one(struct host *h, uint8_t type, uint32_t rsn, uint32_t len, uint16_t req_len)
{
	struct sent *s = &h->sent[h->nsent];

	s->type = type;
	s->rsn = rsn;
	s->len = len;
	s->submit_ns = h->now;
	fill(s->buf, len, h->id, rsn, type);
	if (type == FC_PKT_PULL_REQ)
		memcpy(s->buf, &req_len, sizeof(req_len)); /* the "ULP header": length wanted */
	h->backlog[(h->bl_head + h->bl_len) % (MAXPKT + MAXRSN)] = h->nsent;
	h->bl_len++;
	h->nsent++;
}

static void drain_backlog(struct host *h)
{
	while (h->bl_len) {
		struct sent *s = &h->sent[h->backlog[h->bl_head]];
		struct fc_pdl_tx_req r = {
			.type = s->type, .rsn = s->rsn, .payload = s->buf, .len = s->len,
			.cookie = h->backlog[h->bl_head],
		};
		uint16_t rl;

		if (s->type == FC_PKT_PULL_REQ) {
			memcpy(&rl, s->buf, sizeof(rl));
			r.req_len = rl;
		}
		int rc = fc_pdl_submit(h->p, &r);
		if (rc == -EAGAIN)
			return;
		if (rc) {
			fail(h, "submit failed", (uint32_t)-rc, 0);
			return;
		}
		s->submit_ns = h->now;
		h->bl_head = (h->bl_head + 1) % (MAXPKT + MAXRSN);
		h->bl_len--;
	}
}

/* ---- PDL callbacks: the stand-in transaction layer ---- */

static int on_deliver(void *ctx, const struct fc_pdl_rx_pkt *pkt, struct fc_pdl_nack *nack)
{
	struct host *h = ctx, *peer = h->peer;
	uint32_t rsn = pkt->rsn;

	if (rsn >= MAXRSN) {
		fail(h, "RSN out of range", rsn, pkt->type);
		return 0;
	}
	switch (pkt->type) {
	case FC_PKT_PUSH_DATA:
		if (h->rnr_budget > 0 && sim_rng_chance_ppm(&h->rng, 20000)) {
			h->rnr_budget--;
			nack->code = FC_NACK_RNR;
			nack->rnr_timeout = 1 + (uint8_t)sim_rng_below(&h->rng, 4); /* 10-40 us */
			return 1;
		}
		if (h->got_push[rsn]++)
			fail(h, "Push Data delivered twice", rsn, pkt->psn);
		if (!check_bytes(pkt->payload, pkt->len, peer->id, rsn, FC_PKT_PUSH_DATA))
			fail(h, "Push Data bytes differ", rsn, pkt->len);
		if (sim_rng_chance_ppm(&h->rng, 700000)) {
			if (fc_pdl_ulp_ack(h->p, pkt->psn, h->now))
				fail(h, "ULP ack refused", pkt->psn, 0);
		} else if (h->nack_wait < 256) {
			h->ack_psn[h->nack_wait] = pkt->psn;
			h->ack_due[h->nack_wait] = h->now + sim_rng_below(&h->rng, 20 * US);
			h->nack_wait++;
		} else if (fc_pdl_ulp_ack(h->p, pkt->psn, h->now)) {
			fail(h, "ULP ack refused", pkt->psn, 1);
		}
		break;
	case FC_PKT_PULL_REQ: {
		uint16_t want;

		if (h->got_preq[rsn]++)
			fail(h, "Pull Request delivered twice", rsn, pkt->psn);
		if (pkt->len < sizeof(want)) {
			fail(h, "Pull Request too short", rsn, pkt->len);
			break;
		}
		memcpy(&want, pkt->payload, sizeof(want));
		h->preq_len[rsn] = want;
		submit_one(h, FC_PKT_PULL_DATA, rsn, want, 0); /* the response, same RSN */
		break;
	}
	case FC_PKT_PULL_DATA:
		if (h->got_pdata[rsn]++)
			fail(h, "Pull Data delivered twice", rsn, pkt->psn);
		if (!check_bytes(pkt->payload, pkt->len, peer->id, rsn, FC_PKT_PULL_DATA))
			fail(h, "Pull Data bytes differ", rsn, pkt->len);
		break;
	default:
		fail(h, "unexpected delivery", pkt->type, rsn); /* no Resync in this workload */
		break;
	}
	/* latency: first submission at the peer to delivery here */
	for (uint32_t i = 0; i < peer->nsent; i++)
		if (peer->sent[i].rsn == rsn && peer->sent[i].type == pkt->type) {
			uint64_t lat = h->now - peer->sent[i].submit_ns;
			if (lat > h->worst_latency_ns)
				h->worst_latency_ns = lat;
			break;
		}
	return 0;
}

static void on_tx_done(void *ctx, uint64_t cookie, uint32_t rsn, enum fc_tx_status st, uint8_t code)
{
	struct host *h = ctx;

	(void)code;
	if (cookie >= h->nsent || h->sent[cookie].rsn != rsn) {
		fail(h, "release of an unknown packet", (uint32_t)cookie, rsn);
		return;
	}
	if (h->sent[cookie].released++)
		fail(h, "packet released twice", rsn, h->sent[cookie].type);
	if (st != FC_TX_ACKED)
		fail(h, "packet released in error", rsn, st);
}

static void on_fatal(void *ctx, int reason)
{
	fail(ctx, "connection fatal", (uint32_t)-reason, 0);
}

static const struct fc_pdl_ops pdl_ops = {
	.deliver = on_deliver, .tx_done = on_tx_done, .fatal = on_fatal,
};

/* ---- simulator endpoint ---- */

static int ep_on_packet(void *ctx, uint64_t now, const uint8_t *data, uint32_t len,
			const struct sim_pkt_info *info)
{
	struct host *h = ctx;
	struct fc_falcon_pkt f;
	int n = sim_icv_open(data, len);

	h->now = now;
	if (n < 0) {
		h->integrity_drops++; /* 9.2.2.1: fails the integrity check, dropped */
		return 0;
	}
	if (fc_falcon_decode(data, (size_t)n, &f) >= 0 && fc_falcon_type_has_base(f.type)) {
		h->rx_data_pkts++;
		h->rx_ar_pkts += f.ar;
	}
	if (xdp_mode && fc_falcon_decode(data, (size_t)n, &f) >= 0 &&
	    (f.type == FC_PKT_PUSH_DATA || f.type == FC_PKT_PULL_REQ || f.type == FC_PKT_PULL_DATA)) {
		struct fc_rx_state *rx = fc_pdl_rx_state(h->p);
		struct fc_win *w = f.type == FC_PKT_PULL_REQ ? &rx->req : &rx->data;
		enum fc_win_verdict v = fc_win_xdp_mark(w, f.psn, (uint32_t)(now >> 17));
		struct fc_rx_meta m = { .tx_ns = info->meta, .now_ns = now, .xdp_marked = 1 };

		if (v == FC_WIN_DUP || v == FC_WIN_OLD) {
			h->xdp_dup_old++;
			fc_fetch_or64(&rx->ar_pending, 1); /* XDP's ACK for a duplicate */
			return 0;
		}
		if (v == FC_WIN_OOW) {
			h->xdp_oow++; /* OWN set by fc_win_xdp_mark */
			fc_fetch_or64(&rx->ar_pending, 1);
			return 0;
		}
		if (sim_rng_chance_ppm(&h->rng, h->xdp_lost_ppm)) {
			h->xdp_lost++; /* marked received, never reaches the PDL */
			return 0;
		}
		if (fc_pdl_rx_meta(h->p, data, (size_t)n, &m) < 0)
			fail(h, "an intact packet did not decode", len, 0);
	} else if (fc_pdl_rx(h->p, data, (size_t)n, info->meta, now) < 0) {
		fail(h, "an intact packet did not decode", len, 0);
	}
	drain_backlog(h);
	return h->violation ? -EPROTO : 0;
}

static uint64_t ep_next_deadline(void *ctx)
{
	struct host *h = ctx;
	uint64_t t = fc_pdl_next_deadline(h->p);

	for (uint32_t i = 0; i < h->nack_wait; i++)
		if (h->ack_due[i] < t)
			t = h->ack_due[i];
	return t;
}

static int ep_on_timer(void *ctx, uint64_t now)
{
	struct host *h = ctx;

	h->now = now;
	for (uint32_t i = 0; i < h->nack_wait;) {
		if (h->ack_due[i] <= now) {
			if (fc_pdl_ulp_ack(h->p, h->ack_psn[i], now))
				fail(h, "delayed ULP ack refused", h->ack_psn[i], 0);
			h->ack_psn[i] = h->ack_psn[h->nack_wait - 1];
			h->ack_due[i] = h->ack_due[h->nack_wait - 1];
			h->nack_wait--;
		} else {
			i++;
		}
	}
	fc_pdl_on_timer(h->p, now);
	drain_backlog(h);
	return h->violation ? -EPROTO : 0;
}

static int ep_poll_tx(void *ctx, uint64_t now, uint8_t *buf, uint32_t cap, struct sim_pkt_info *info)
{
	struct host *h = ctx;
	int n;

	h->now = now;
	drain_backlog(h);
	n = fc_pdl_poll_tx(h->p, now, buf, cap - SIM_ICV_LEN);
	if (n <= 0)
		return n;
	info->meta = now; /* the PSP IV: transmit time */
	return sim_icv_seal(buf, n);
}

static const struct sim_endpoint_ops ep_ops = {
	.on_packet = ep_on_packet, .next_deadline = ep_next_deadline, .on_timer = ep_on_timer,
	.poll_tx = ep_poll_tx,
};

/* ---- one seed ---- */

struct totals {
	uint64_t seeds, clean_seeds, packets, retx_timeout, retx_early, retx_own, retx_nack;
	uint64_t acks, nacks, integrity_drops, link_drops, dups, reorders, corrupt;
	uint64_t worst_latency_ns, violations, events;
	uint64_t xdp_dup_old, xdp_oow, xdp_marked, xdp_lost;
	uint64_t last_trace_hash;
	int summary;
};

static int host_init(struct host *h, int id, const struct sim_world *w, int ordered,
		     uint64_t loss_ppm)
{
	struct fc_pdl_cfg c;

	h->id = id;
	sim_world_rng(w, SIM_STREAM_ENDPOINT(id), &h->rng);
	fc_pdl_cfg_default(&c);
	c.local_cid = (uint32_t)id + 10;
	c.remote_cid = (uint32_t)(1 - id) + 10;
	c.ordered = ordered;
	c.max_retx = 30; /* 20 % loss each way must not exhaust retries in these runs */
	c.rto_ns = 200 * US;
	c.tx_psn[0] = c.rx_psn[0] = 0xFFFFFFC0u; /* the run crosses the 2^32 wrap */
	c.tx_psn[1] = c.rx_psn[1] = 0xFFFFFF00u;
	h->xdp_lost_ppm = loss_ppm ? 20000 : 0; /* a clean seed must see no retransmission */
	h->ordered = ordered;
	h->rnr_budget = 3;
	h->p = fc_pdl_new(&c, NULL, &pdl_ops, h);
	return h->p ? 0 : -ENOMEM;
}

static int run_seed(uint64_t seed, void *arg)
{
	struct totals *tot = arg;
	struct sim_world *w = sim_world_new(seed);
	struct host *h[2];
	struct sim_rng r;
	struct sim_link_cfg lc = {0};
	struct sim_run_result res;
	int clean = seed % 8 == 0, rc = 0;

	if (!w)
		return -ENOMEM;
	sim_world_rng(w, 0x434f4e46ull /* "CONF" */, &r);
	lc.latency_ns = (2 + sim_rng_below(&r, 9)) * US;
	lc.jitter_ns = sim_rng_below(&r, 2 * US);
	lc.bandwidth_bps = (10 + sim_rng_below(&r, 91)) * 1000000000ull;
	if (!clean) {
		lc.drop_ppm = (uint32_t)sim_rng_below(&r, 200001);
		lc.dup_ppm = (uint32_t)sim_rng_below(&r, 50001);
		lc.reorder_ppm = (uint32_t)sim_rng_below(&r, 100001);
		lc.reorder_delay_ns = (1 + sim_rng_below(&r, 30)) * US;
		lc.corrupt_ppm = (uint32_t)sim_rng_below(&r, 20001);
	}
	for (int i = 0; i < 2; i++) {
		h[i] = calloc(1, sizeof(*h[i]));
		if (!h[i] || sim_world_add_endpoint(w, &ep_ops, h[i]) != i ||
		    host_init(h[i], i, w, (int)sim_rng_below(&r, 2), lc.drop_ppm)) {
			fprintf(stderr, "sim: setup failed\n");
			return -ENOMEM;
		}
	}
	h[0]->peer = h[1];
	h[1]->peer = h[0];
	if (sim_world_connect(w, 0, 1, &lc, &lc) < 0)
		return -EINVAL;

	/* workload: each host pushes and pulls, random sizes */
	for (int i = 0; i < 2; i++) {
		uint32_t n = 20 + (uint32_t)sim_rng_below(&r, MAXPKT - 20);

		for (uint32_t k = 0; k < n; k++) {
			uint32_t rsn = h[i]->next_rsn++;

			if (sim_rng_below(&r, 3))
				submit_one(h[i], FC_PKT_PUSH_DATA, rsn, (uint32_t)sim_rng_below(&r, 1001), 0);
			else
				submit_one(h[i], FC_PKT_PULL_REQ, rsn, 2,
					   (uint16_t)sim_rng_below(&r, 1001));
		}
		drain_backlog(h[i]);
	}

	sim_world_run(w, 60ull * 1000 * 1000 * 1000, 20 * 1000 * 1000, &res);
	for (int i = 0; i < 2 && !rc; i++) {
		struct host *x = h[i], *y = h[1 - i];
		const struct fc_pdl_counters *c = fc_pdl_counters(x->p);

		if (x->violation)
			rc = 1;
		if (res.stop != SIM_STOP_IDLE && !rc) {
			fail(x, "run did not finish", res.stop, (uint32_t)res.err);
			rc = 1;
		}
		/* every submitted packet released once; all its data delivered once */
		for (uint32_t k = 0; k < x->nsent && !rc; k++) {
			struct sent *s = &x->sent[k];
			uint8_t got = s->type == FC_PKT_PUSH_DATA ? y->got_push[s->rsn] :
				      s->type == FC_PKT_PULL_REQ ? y->got_preq[s->rsn] :
				      y->got_pdata[s->rsn];

			if (s->released != 1) {
				fail(x, "packet not released exactly once", s->rsn, (uint32_t)s->released);
				rc = 1;
			} else if (got != 1) {
				fail(x, "packet not delivered exactly once", s->rsn, got);
				rc = 1;
			}
		}
		if (!rc && (fc_pdl_outstanding(x->p, FC_WIN_REQ) || fc_pdl_outstanding(x->p, FC_WIN_DATA) ||
			    x->bl_len)) {
			fail(x, "transmit resources left", fc_pdl_outstanding(x->p, FC_WIN_DATA), x->bl_len);
			rc = 1;
		}
		if (!rc && clean) {
			uint64_t retx = c->retx_timeout + c->retx_early + c->retx_own;
			/* 9.1.6: an ACK per AR packet (and per RNR-NACKed packet's retry), one per
			 * ack_coalesce_count packets, one per timer expiry; each timer expiry needs a
			 * packet since the previous ACK and the timer is 8 us */
			uint64_t acks = c->backs_tx + c->eacks_tx;
			uint64_t rx = x->rx_data_pkts;

			(void)y;
			if (retx) { /* an RNR retry is not a retransmission */
				fail(x, "retransmission on a clean link", (uint32_t)retx, 0);
				rc = 1;
			} else if (c->acks_by_count > rx / 10 || c->acks_by_request > x->rx_ar_pkts +
				   c->rx_dup + c->rx_old + x->xdp_dup_old + x->xdp_oow +
				   (uint64_t)(3 - x->rnr_budget) ||
				   acks != c->acks_by_count + c->acks_by_request + c->acks_by_timer ||
				   c->acks_by_timer > rx) {
				fail(x, "more ACKs than coalescing allows", (uint32_t)acks, (uint32_t)rx);
				rc = 1;
			}
		}
		if (!rc && xdp_mode && (c->rx_xdp_unmarked || c->rx_dup || c->rx_old ||
					(x->rx_data_pkts && !c->rx_xdp_marked))) {
			fail(x, "XDP mode: the PDL classified a data packet itself",
			     (uint32_t)c->rx_xdp_unmarked, (uint32_t)c->rx_xdp_marked);
			rc = 1;
		}
		if (x->violation)
			rc = 1;
	}
	if (rc) {
		for (int i = 0; i < 2; i++) {
			const struct fc_pdl_counters *c = fc_pdl_counters(h[i]->p);

			if (h[i]->violation)
				fprintf(stderr, "sim: %s\n", h[i]->why);
			fprintf(stderr, "  host %d: sent %u, retx timeout %" PRIu64 " early %" PRIu64
				" own %" PRIu64 " nack %" PRIu64 ", acks %" PRIu64 "/%" PRIu64
				"/%" PRIu64 " (request/count/timer), rx dup %" PRIu64 " old %" PRIu64
				" oow %" PRIu64 ", ordered %d\n", i, h[i]->nsent, c->retx_timeout,
				c->retx_early, c->retx_own, c->nack_resource_rx, c->acks_by_request,
				c->acks_by_count, c->acks_by_timer, c->rx_dup, c->rx_old, c->rx_oow,
				h[i]->ordered);
		}
		sim_world_dump(w, stderr);
	}

	tot->seeds++;
	tot->clean_seeds += clean;
	tot->events += sim_world_events(w);
	for (int i = 0; i < 2; i++) {
		const struct fc_pdl_counters *c = fc_pdl_counters(h[i]->p);
		const struct sim_link_stats *ls = &sim_world_link(w, (uint32_t)i)->st;

		tot->packets += h[i]->nsent;
		tot->retx_timeout += c->retx_timeout;
		tot->retx_early += c->retx_early;
		tot->retx_own += c->retx_own;
		tot->retx_nack += c->nack_resource_rx;
		tot->acks += c->backs_tx + c->eacks_tx;
		tot->nacks += c->nacks_tx;
		tot->integrity_drops += h[i]->integrity_drops;
		tot->xdp_dup_old += h[i]->xdp_dup_old;
		tot->xdp_oow += h[i]->xdp_oow;
		tot->xdp_lost += h[i]->xdp_lost;
		tot->xdp_marked += c->rx_xdp_marked;
		tot->link_drops += ls->dropped_random + ls->dropped_tail + ls->dropped_cap;
		tot->dups += ls->duplicated;
		tot->reorders += ls->reordered;
		tot->corrupt += ls->corrupted;
		if (h[i]->worst_latency_ns > tot->worst_latency_ns)
			tot->worst_latency_ns = h[i]->worst_latency_ns;
		fc_pdl_free(h[i]->p);
		free(h[i]);
	}
	tot->violations += rc != 0;
	tot->last_trace_hash = sim_world_trace_hash(w);
	sim_world_free(w);
	return rc;
}

int main(int argc, char **argv)
{
	struct totals tot = {0};
	struct sim_seed_opts o;
	int failed;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--summary"))
			tot.summary = 1;
		else if (!strcmp(argv[i], "--xdp"))
			xdp_mode = 1;
	if (sim_seed_opts_parse(&o, argc, argv, 500))
		return 2;
	/* the same seed gives the same event trace; another seed another one */
	{
		struct totals t1 = {0};
		uint64_t a, b, c;

		run_seed(o.first, &t1);
		a = t1.last_trace_hash;
		run_seed(o.first, &t1);
		b = t1.last_trace_hash;
		run_seed(o.first + 1, &t1);
		c = t1.last_trace_hash;
		if (a != b || a == c) {
			printf("sim: trace of seed %#" PRIx64 " not reproducible (%#" PRIx64 " %#" PRIx64
			       ", next seed %#" PRIx64 ")\nsim: 0 passed, 1 failed\n", o.first, a, b, c);
			return 1;
		}
		printf("sim: seed %#" PRIx64 " replays to trace %#" PRIx64 "\n", o.first, a);
	}
	{
		char prog[512];

		snprintf(prog, sizeof(prog), "%s%s", argv[0], xdp_mode ? " --xdp" : "");
		failed = sim_run_seeds(&o, prog, run_seed, &tot, stdout);
	}
	if (tot.summary || failed) {
		printf("\n%-28s %" PRIu64 " (%" PRIu64 " clean links)\n", "seeds", tot.seeds, tot.clean_seeds);
		printf("%-28s %" PRIu64 "\n", "packets submitted", tot.packets);
		printf("%-28s %" PRIu64 "\n", "simulator events", tot.events);
		printf("%-28s %" PRIu64 " / %" PRIu64 " / %" PRIu64 " / %" PRIu64 "\n",
		       "link drop / dup / reorder / corrupt", tot.link_drops, tot.dups, tot.reorders,
		       tot.corrupt);
		printf("%-28s %" PRIu64 "\n", "integrity drops (ICV)", tot.integrity_drops);
		printf("%-28s %" PRIu64 "\n", "retransmits: timeout", tot.retx_timeout);
		printf("%-28s %" PRIu64 "\n", "retransmits: early (OOO)", tot.retx_early);
		printf("%-28s %" PRIu64 "\n", "retransmits: EACK-OWN", tot.retx_own);
		printf("%-28s %" PRIu64 "\n", "resource NACKs received", tot.retx_nack);
		printf("%-28s %" PRIu64 " / %" PRIu64 "\n", "ACKs / NACKs sent", tot.acks, tot.nacks);
		printf("%-28s %.1f us\n", "worst delivery latency", (double)tot.worst_latency_ns / 1000.0);
		if (xdp_mode)
			printf("%-28s %" PRIu64 " / %" PRIu64 " / %" PRIu64 " / %" PRIu64 "\n",
			       "XDP: dup+old / OOW / marked / lost after marking", tot.xdp_dup_old, tot.xdp_oow,
			       tot.xdp_marked, tot.xdp_lost);
		printf("%-28s %" PRIu64 "\n", "violations", tot.violations);
	}
	return failed ? 1 : 0;
}
