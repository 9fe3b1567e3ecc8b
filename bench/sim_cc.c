/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_cc.c - congestion-control benchmark of falcon in the deterministic simulator.
 *
 * N senders push data to one receiver through one shared bottleneck with a finite
 * tail-drop queue; every host runs the packet delivery sublayer (daemon/engine/pdl.h)
 * with the rate update engine (daemon/engine/rue.h, Swift) answering each CC event at
 * once, at the event's virtual time.
 *
 *   S_i --access_i--> [switch] --bottleneck--> R        (data: Push Data, 4096 B)
 *   S_i <--reverse_i----------------------------- R     (ACKs, uncongested)
 *
 * Per N (2, 8, 32), all in virtual time, deterministic per seed:
 *   - phase 1: the N flows start within one base RTT and run conv_ns; measured over its
 *     second half: bottleneck utilization (wire bytes delivered / capacity), Jain
 *     fairness of the per-flow Push Data bytes delivered, p99 of the bottleneck's
 *     queueing delay (exact, see below; the link's log2 histogram bound is printed
 *     beside it), tail drops;
 *   - phase 2: one more flow starts; the number of base RTTs until its throughput over a
 *     trailing window reaches 80 % of the fair share (bottleneck / (N + 1)).
 *
 * Queueing delay, exact: the sender alone uses its access link (no jitter, no loss), so
 * it knows when each packet will enter the bottleneck and stamps that time in an 8-byte
 * trailer (it rides on the wire like a PSP ICV would); the bottleneck has no jitter
 * either, so at the receiver queueing delay = arrival - latency - serialization - entry.
 * What the seed changes: the start times of the N flows (within one base RTT) and the
 * jitter of the ACK paths.
 *
 *   sim_cc            the full table (make bench-sim)
 *   sim_cc --assert   shorter runs, checks the targets; "sim-cc: N passed, N failed"
 *   options: --seed S (or FALCON_SIM_SEED), --flows N (one row, any N <= 32),
 *            --gbps G and --queue-kb K (bottleneck), --conv-ms T and --late-ms T (phases)
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdl.h"
#include "rue.h"
#include "sim.h"
#include "wire_falcon.h"

#define US 1000ull
#define MS 1000000ull

#define MAX_FLOWS 32u                 /* largest N of the table */
#define MAX_SENDERS (MAX_FLOWS + 1u)  /* + the late flow */
#define PAYLOAD_BYTES 4096u           /* Push Data payload */
#define TRAILER_BYTES 8u              /* bottleneck entry time, ns, host order */
#define CID_BASE 1u                   /* connection i uses CID CID_BASE + i at both ends */
#define SWITCH_HOPS 1u                /* forward hops reported in ACKs: one switch */
#define QD_BIN_NS 25u                 /* exact queueing-delay histogram: bin width ... */
#define QD_BINS 80000u                /* ... and bins (2 ms); later samples in the last */
#define LATE_BIN_NS 250u              /* late-flow throughput bins */
#define LATE_SHARE 0.8                /* "reached its fair share": 80 % of it */
#define LATE_WIN_RTTS 4u              /* trailing window: at least 4 base RTTs ... */
#define LATE_WIN_PKTS 8u              /* ... and at least 8 packets at the fair share */
#define STALE_POLL_NS 1000u           /* re-poll period of a stale deadline, see conn_deadline */
#define EVENT_BUDGET 2000000000ull    /* events per sim_world_run call */

static const uint8_t payload[PAYLOAD_BYTES]; /* every Push Data carries these bytes */

struct topo {
	struct sim_link_cfg access, bottleneck, reverse;
};

/* One run: nflows flows, then one late flow. */
struct run_params {
	uint32_t nflows;
	uint64_t seed;
	uint64_t conv_ns; /* phase 1; measured over [conv_ns / 2, conv_ns] */
	uint64_t late_ns; /* phase 2: the late flow runs this long */
};

struct run_result {
	double util_pct;      /* bottleneck wire bytes / capacity */
	double goodput_pct;   /* Push Data payload bytes / capacity */
	double jain;
	double p99_us;        /* exact (QD_BIN_NS resolution) */
	double p99_hist_us;   /* upper bound of the link's log2 histogram bucket */
	double target_us;     /* base delay target (the PDL's, passed in every event) */
	double rue_target_us; /* the RUE's fabric delay target at mean_fcwnd: base + flow
			       * scaling + topology scaling (fc_rue_target_delay) */
	double mean_fcwnd;    /* over the N flows at the end of phase 1, packets */
	double late_rtts;     /* base RTTs to 80 % of the fair share; < 0: never */
	double late_share_pct;/* late flow over the second half of phase 2, % of fair share */
	double base_rtt_us, late_win_rtts;
	uint64_t tail_drops, retx, stale_polls, rue_errors, given_up, resyncs, reroutes;
	uint64_t trace_hash;
};

struct host;

/* One PDL connection and what the benchmark keeps beside it. */
struct conn {
	struct host *h;
	struct fc_pdl *p;
	uint32_t idx;              /* flow index */
	uint32_t peer_ep;          /* the endpoint at the other end */
	uint64_t dl_ns;            /* fc_pdl_next_deadline, refreshed after every call */
	uint64_t idle_ns;          /* poll_tx found nothing at this time, state unchanged since */
	int dirty;                 /* state changed since poll_tx last found nothing */
	uint32_t next_rsn;         /* sender: RSN of the next Push Data */
	uint64_t rx_payload_bytes; /* receiver: Push Data payload delivered */
};

struct bench;

struct host {
	struct bench *b;
	uint32_t ep;
	int receiver;
	int active;          /* sender: started */
	uint64_t start_ns;   /* sender: when it starts */
	uint64_t now;        /* time of the callback being run */
	uint64_t acc_busy_ns;/* sender: its access link's serializer is busy until */
	struct fc_rue *rue;
	struct conn conn[MAX_SENDERS];
	uint32_t nconn, rr;
};

struct bench {
	struct sim_world *w;
	struct topo topo;
	uint32_t nflows, nsenders; /* nsenders = nflows + 1 (the late flow is the last) */
	uint32_t bottleneck;       /* link id */
	struct host snd[MAX_SENDERS];
	struct host rcv;
	int failed;
	char why[200];
	uint64_t rue_errors, reroutes, stale_polls;
	uint64_t given_up, resyncs; /* packets released unacknowledged; Resyncs delivered */
	/* measurement */
	int measuring;
	uint32_t qd_hist[QD_BINS];
	uint64_t qd_count;
	uint64_t late_start_ns;
	uint64_t *late_bins; /* wire bytes of the late flow per LATE_BIN_NS since its start */
	uint32_t late_nbins;
};

struct snap {
	struct sim_link_stats bn;
	uint64_t payload[MAX_SENDERS];
	uint64_t retx;
};

static int bench_fail(struct bench *b, const char *what, uint64_t x)
{
	if (!b->failed)
		snprintf(b->why, sizeof(b->why), "%s (%" PRIu64 ")", what, x);
	b->failed = 1;
	return -EPROTO;
}

/* ------------------------------------------------------------------------------------ */
/* connections                                                                          */

/* After any call into c's PDL: its deadline may have moved, poll_tx may have work. */
static void conn_sync(struct conn *c)
{
	c->dl_ns = fc_pdl_next_deadline(c->p);
	c->idle_ns = UINT64_MAX;
	c->dirty = 1;
}

/* The deadline to give the simulator. A deadline at or before the last time poll_tx found
 * nothing (with no call into the PDL since) is stale: the PDL cannot act on it, and
 * reporting it would keep the clock from moving. fc_pdl_next_deadline reports the pacing
 * time of a connection with fcwnd < 1 even while its one allowed packet is still
 * outstanding; then the real next deadline (a retransmit timer) is unknown here, so the
 * connection is polled every STALE_POLL_NS (timers fire at most that late). */
static uint64_t conn_deadline(const struct conn *c)
{
	if (c->idle_ns != UINT64_MAX && c->dl_ns <= c->idle_ns)
		return c->idle_ns + STALE_POLL_NS;
	return c->dl_ns;
}

/* Pull one packet from c if it may have one. Returns its length, 0 or a negative errno. */
static int conn_poll(struct conn *c, uint64_t now, uint8_t *buf, uint32_t cap)
{
	int n;

	if (!c->dirty && c->dl_ns > now)
		return 0; /* nothing changed and no deadline passed: it would find nothing */
	n = fc_pdl_poll_tx(c->p, now, buf, cap);
	if (n > 0) {
		conn_sync(c);
		return n;
	}
	if (n == 0) {
		if (c->idle_ns == UINT64_MAX && c->dl_ns <= now && c->h->active)
			c->h->b->stale_polls++;
		c->dirty = 0;
		c->idle_ns = now;
	}
	return n;
}

/* Keep the transmit window fed: an unlimited backlog of Push Data. */
static void snd_fill(struct conn *c)
{
	for (uint32_t k = 0; k < FC_TX_WIN_MAX; k++) {
		struct fc_pdl_tx_req r = {
			.type = FC_PKT_PUSH_DATA, .rsn = c->next_rsn, .payload = payload,
			.len = PAYLOAD_BYTES, .cookie = c->next_rsn,
		};
		int rc = fc_pdl_submit(c->p, &r);

		if (rc == -EAGAIN)
			return;
		if (rc) {
			bench_fail(c->h->b, "submit failed", (uint64_t)-rc);
			return;
		}
		c->next_rsn++;
	}
}

/* ------------------------------------------------------------------------------------ */
/* PDL callbacks                                                                        */

/* The receiver's ULP acknowledges Push Data at once (9.2.2.4). */
static int on_deliver(void *ctx, const struct fc_pdl_rx_pkt *pkt, struct fc_pdl_nack *nack)
{
	struct conn *c = ctx;

	(void)nack;
	if (c->h->receiver && pkt->type == FC_PKT_RESYNC) {
		c->h->b->resyncs++; /* the sender gave a packet up (section 11): counted */
		return 0;
	}
	if (!c->h->receiver || pkt->type != FC_PKT_PUSH_DATA) {
		bench_fail(c->h->b, "unexpected delivery, type", pkt->type);
		return 0;
	}
	c->rx_payload_bytes += pkt->len;
	if (fc_pdl_ulp_ack(c->p, pkt->psn, c->h->now))
		bench_fail(c->h->b, "ULP ack refused, psn", pkt->psn);
	return 0;
}

static void on_tx_done(void *ctx, uint64_t cookie, uint32_t rsn, enum fc_tx_status st, uint8_t code)
{
	struct conn *c = ctx;

	(void)cookie;
	(void)rsn;
	(void)code;
	if (st != FC_TX_ACKED)
		c->h->b->given_up++; /* retransmissions exhausted: reported, not fatal */
}

static void on_fatal(void *ctx, int reason)
{
	struct conn *c = ctx;

	bench_fail(c->h->b, "connection fatal, reason", (uint64_t)-reason);
}

static void on_reroute(void *ctx, uint32_t path)
{
	struct conn *c = ctx;

	(void)path; /* one path to the receiver: PLB has nowhere else to go */
	c->h->b->reroutes++;
}

/* The CC hook of every host (10.6.2): the RUE takes each event and answers at once, at
 * the event's virtual time, so its event queue is always empty and the admission
 * policy of 10.6.1 (pred) never refuses one. Returns 0 (taken) or 1 (not taken: the
 * RUE failed; counted, the PDL keeps its windows). */
static int cc_hook(void *ctx, const struct fc_cc_event *ev, unsigned pred)
{
	struct conn *c = ctx;
	struct host *h = c->h;
	struct fc_cc_result res;

	(void)pred;
	if (!h->rue)
		return 1;
	memset(&res, 0, sizeof(res));
	if (fc_rue_process(h->rue, ev, fc_ns_to_ts(h->now) & FC_TS24_MASK, &res) < 0) {
		h->b->rue_errors++;
		return 1;
	}
	fc_pdl_cc_apply(c->p, &res);
	return 0;
}

static const struct fc_pdl_ops pdl_ops = {
	.deliver = on_deliver, .tx_done = on_tx_done, .fatal = on_fatal,
	.cc_event = cc_hook, .reroute = on_reroute,
};

/* ------------------------------------------------------------------------------------ */
/* measurement at the receiver                                                          */

/* A data packet of flow i came out of the bottleneck at now; entry_ns is when it went
 * in (the sender's stamp). */
static int measure_arrival(struct bench *b, uint32_t i, uint64_t now, uint32_t len,
			   uint64_t entry_ns)
{
	const struct sim_link_cfg *bn = &b->topo.bottleneck;
	uint64_t out_ns = entry_ns + bn->latency_ns + sim_ser_ns(bn->bandwidth_bps, len);
	uint64_t qd, bin;

	if (out_ns > now)
		return bench_fail(b, "queueing delay model broken: negative delay, flow", i);
	qd = now - out_ns;
	if (b->measuring) {
		bin = qd / QD_BIN_NS;
		b->qd_hist[bin < QD_BINS ? bin : QD_BINS - 1]++;
		b->qd_count++;
	}
	if (i == b->nflows && now >= b->late_start_ns) {
		bin = (now - b->late_start_ns) / LATE_BIN_NS;
		if (bin < b->late_nbins)
			b->late_bins[bin] += len;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* sender endpoint                                                                      */

static int snd_on_packet(void *ctx, uint64_t now, const uint8_t *data, uint32_t len,
			 const struct sim_pkt_info *info)
{
	struct host *h = ctx;
	struct conn *c = &h->conn[0];

	h->now = now;
	if (fc_pdl_rx(c->p, data, len, info->meta, now) < 0)
		return bench_fail(h->b, "sender: an ACK did not decode, len", len);
	snd_fill(c);
	conn_sync(c);
	return h->b->failed ? -EPROTO : 0;
}

static uint64_t snd_next_deadline(void *ctx)
{
	const struct host *h = ctx;

	return h->active ? conn_deadline(&h->conn[0]) : h->start_ns;
}

static int snd_on_timer(void *ctx, uint64_t now)
{
	struct host *h = ctx;
	struct conn *c = &h->conn[0];

	h->now = now;
	if (!h->active) {
		if (now < h->start_ns)
			return 0;
		h->active = 1;
	} else {
		fc_pdl_on_timer(c->p, now);
	}
	snd_fill(c);
	conn_sync(c);
	return h->b->failed ? -EPROTO : 0;
}

/* Sends Push Data with the trailer: when the packet will enter the bottleneck. Only this
 * sender uses its access link, which has no jitter and no loss: the packet starts
 * serializing when the link is free, and enters the bottleneck after its latency. */
static int snd_poll_tx(void *ctx, uint64_t now, uint8_t *buf, uint32_t cap,
		       struct sim_pkt_info *info)
{
	struct host *h = ctx;
	const struct sim_link_cfg *acc = &h->b->topo.access;
	uint64_t start, entry;
	int n;

	h->now = now;
	if (!h->active)
		return 0;
	n = conn_poll(&h->conn[0], now, buf, cap - TRAILER_BYTES);
	if (n <= 0)
		return n;
	start = h->acc_busy_ns > now ? h->acc_busy_ns : now;
	h->acc_busy_ns = start + sim_ser_ns(acc->bandwidth_bps, (uint32_t)n + TRAILER_BYTES);
	entry = h->acc_busy_ns + acc->latency_ns;
	memcpy(buf + n, &entry, TRAILER_BYTES);
	info->meta = now; /* the PSP IV: transmit time */
	return n + (int)TRAILER_BYTES;
}

static const struct sim_endpoint_ops snd_ops = {
	.on_packet = snd_on_packet, .next_deadline = snd_next_deadline,
	.on_timer = snd_on_timer, .poll_tx = snd_poll_tx,
};

/* ------------------------------------------------------------------------------------ */
/* receiver endpoint: one connection per sender, demultiplexed by CID                   */

static int rcv_on_packet(void *ctx, uint64_t now, const uint8_t *data, uint32_t len,
			 const struct sim_pkt_info *info)
{
	struct host *h = ctx;
	struct bench *b = h->b;
	uint64_t entry;
	uint32_t i;
	struct conn *c;

	h->now = now;
	if (len < TRAILER_BYTES + 8u) /* words 0 and 1 of the Falcon header, the trailer */
		return bench_fail(b, "receiver: runt packet, len", len);
	memcpy(&entry, data + len - TRAILER_BYTES, TRAILER_BYTES);
	i = fc_hdr_cid(data) - CID_BASE;
	if (i >= h->nconn || h->conn[i].peer_ep != info->src)
		return bench_fail(b, "receiver: packet for an unknown CID from endpoint", info->src);
	c = &h->conn[i];
	if (measure_arrival(b, i, now, len, entry))
		return -EPROTO;
	if (fc_pdl_rx(c->p, data, len - TRAILER_BYTES, info->meta, now) < 0)
		return bench_fail(b, "receiver: a data packet did not decode, flow", i);
	conn_sync(c);
	return b->failed ? -EPROTO : 0;
}

static uint64_t rcv_next_deadline(void *ctx)
{
	const struct host *h = ctx;
	uint64_t t = UINT64_MAX;

	for (uint32_t i = 0; i < h->nconn; i++) {
		uint64_t d = conn_deadline(&h->conn[i]);

		if (d < t)
			t = d;
	}
	return t;
}

static int rcv_on_timer(void *ctx, uint64_t now)
{
	struct host *h = ctx;

	h->now = now;
	for (uint32_t i = 0; i < h->nconn; i++) {
		struct conn *c = &h->conn[i];

		if (conn_deadline(c) <= now) {
			fc_pdl_on_timer(c->p, now);
			conn_sync(c);
		}
	}
	return h->b->failed ? -EPROTO : 0;
}

/* ACKs, round robin over the connections, each to its sender. */
static int rcv_poll_tx(void *ctx, uint64_t now, uint8_t *buf, uint32_t cap,
		       struct sim_pkt_info *info)
{
	struct host *h = ctx;

	h->now = now;
	for (uint32_t k = 0; k < h->nconn; k++) {
		uint32_t i = (h->rr + k) % h->nconn;
		int n = conn_poll(&h->conn[i], now, buf, cap);

		if (n > 0) {
			info->dst = h->conn[i].peer_ep;
			info->meta = now;
			h->rr = (i + 1) % h->nconn;
		}
		if (n)
			return n;
	}
	return 0;
}

static const struct sim_endpoint_ops rcv_ops = {
	.on_packet = rcv_on_packet, .next_deadline = rcv_next_deadline,
	.on_timer = rcv_on_timer, .poll_tx = rcv_poll_tx,
};

/* ------------------------------------------------------------------------------------ */
/* topology                                                                             */

/* 200 Gb/s NICs, a 100 Gb/s bottleneck, base RTT 11.5 us (BDP 34 packets): at N = 32 a
 * flow's fair share is still about one packet per base RTT, so "throughput over a few
 * RTTs" means something. The 1 MB queue holds 84 us at 100 Gb/s, more than twice the
 * 25 us target, so the delay check can fail (256 KB would hold only 21 us). */
static void topo_default(struct topo *t)
{
	memset(t, 0, sizeof(*t));
	t->access.bandwidth_bps = 200000000000ull;
	t->access.latency_ns = 1 * US;
	t->bottleneck.bandwidth_bps = 100000000000ull;
	t->bottleneck.latency_ns = 5 * US;
	t->bottleneck.queue_limit_bytes = 1u << 20;
	t->reverse.bandwidth_bps = 200000000000ull;
	t->reverse.latency_ns = 5 * US;
	t->reverse.jitter_ns = 200; /* breaks the symmetry between flows; FIFO is kept */
}

/* Bytes on the wire of a full Push Data (with the trailer) and of a BACK. */
static uint32_t data_wire_bytes(void)
{
	struct fc_falcon_pkt f = { .type = FC_PKT_PUSH_DATA, .proto = FC_PROTO_RDMA,
				   .req_len = PAYLOAD_BYTES, .payload = payload,
				   .payload_len = PAYLOAD_BYTES };

	return (uint32_t)fc_falcon_encoded_len(&f) + TRAILER_BYTES;
}

static uint32_t ack_wire_bytes(void)
{
	struct fc_falcon_pkt f = { .type = FC_PKT_BACK };

	return (uint32_t)fc_falcon_encoded_len(&f);
}

/* Base RTT of a sender's path: a full data packet out, a BACK back, empty queues, no
 * ACK coalescing wait. */
static uint64_t base_rtt_ns(const struct topo *t)
{
	uint32_t d = data_wire_bytes(), a = ack_wire_bytes();

	return sim_ser_ns(t->access.bandwidth_bps, d) + t->access.latency_ns +
	       sim_ser_ns(t->bottleneck.bandwidth_bps, d) + t->bottleneck.latency_ns +
	       sim_ser_ns(t->reverse.bandwidth_bps, a) + t->reverse.latency_ns;
}

/* The base delay target the PDL passes in its events, ts units. */
static uint32_t base_target_ts(void)
{
	struct fc_pdl_cfg c;

	fc_pdl_cfg_default(&c);
	return c.base_delay_target_ts;
}

static double ts_to_us(double ts)
{
	return ts * 16384.0 / 125.0 / 1000.0; /* 1 ts = 2^14 / 125 ns (fc_ts_to_ns) */
}

/* ------------------------------------------------------------------------------------ */
/* one run                                                                              */

static int conn_init(struct host *h, struct conn *c, uint32_t idx, uint32_t peer_ep)
{
	struct fc_pdl_cfg cfg;

	fc_pdl_cfg_default(&cfg); /* ACK coalescing, AR, windows, RTO: the defaults */
	cfg.local_cid = CID_BASE + idx;
	cfg.remote_cid = CID_BASE + idx;
	cfg.hops = SWITCH_HOPS;
	c->h = h;
	c->idx = idx;
	c->peer_ep = peer_ep;
	c->p = fc_pdl_new(&cfg, NULL, &pdl_ops, c);
	if (!c->p)
		return -errno;
	conn_sync(c);
	return 0;
}

static int host_init(struct bench *b, struct host *h, uint32_t ep, int receiver)
{
	struct fc_rue_cfg rc;

	h->b = b;
	h->ep = ep;
	h->receiver = receiver;
	h->active = receiver;
	fc_rue_cfg_default(&rc);
	h->rue = fc_rue_new(&rc, MAX_SENDERS + CID_BASE);
	if (!h->rue)
		return -ENOMEM;
	if (!receiver)
		return conn_init(h, &h->conn[h->nconn++], ep, b->nsenders);
	for (uint32_t i = 0; i < b->nsenders; i++) {
		int rc2 = conn_init(h, &h->conn[h->nconn++], i, i);

		if (rc2)
			return rc2;
	}
	return 0;
}

static void host_fini(struct host *h)
{
	for (uint32_t i = 0; i < h->nconn; i++)
		fc_pdl_free(h->conn[i].p);
	if (h->rue)
		fc_rue_free(h->rue);
}

/* Endpoints 0..nsenders-1 are the senders, nsenders the receiver. Links: access_i = i,
 * the bottleneck = nsenders, reverse_i = nsenders + 1 + i. */
static int build_world(struct bench *b, uint64_t seed)
{
	uint32_t r = b->nsenders;
	int rc = 0;

	b->w = sim_world_new(seed);
	if (!b->w)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->nsenders && rc >= 0; i++)
		rc = sim_world_add_endpoint(b->w, &snd_ops, &b->snd[i]);
	if (rc >= 0)
		rc = sim_world_add_endpoint(b->w, &rcv_ops, &b->rcv);
	for (uint32_t i = 0; i < b->nsenders && rc >= 0; i++)
		rc = sim_world_add_link(b->w, &b->topo.access);
	if (rc >= 0)
		rc = sim_world_add_link(b->w, &b->topo.bottleneck);
	b->bottleneck = r;
	for (uint32_t i = 0; i < b->nsenders && rc >= 0; i++)
		rc = sim_world_add_link(b->w, &b->topo.reverse);
	for (uint32_t i = 0; i < b->nsenders && rc >= 0; i++) {
		uint32_t fwd[2] = { i, b->bottleneck }, rev[1] = { r + 1 + i };

		rc = sim_world_set_route(b->w, i, r, fwd, 2);
		if (!rc)
			rc = sim_world_set_route(b->w, r, i, rev, 1);
		if (!rc)
			rc = sim_world_set_peer(b->w, i, r);
	}
	return rc < 0 ? rc : 0;
}

static void take_snap(struct bench *b, struct snap *s)
{
	s->bn = sim_world_link(b->w, b->bottleneck)->st;
	s->retx = 0;
	for (uint32_t i = 0; i < b->nsenders; i++) {
		const struct fc_pdl_counters *k = fc_pdl_counters(b->snd[i].conn[0].p);

		s->payload[i] = b->rcv.conn[i].rx_payload_bytes;
		s->retx += k->retx_timeout + k->retx_early + k->retx_own;
	}
}

static int run_until(struct bench *b, uint64_t t)
{
	struct sim_run_result res;

	sim_world_run(b->w, t, EVENT_BUDGET, &res);
	if (b->failed)
		return -EPROTO;
	if (res.stop != SIM_STOP_UNTIL)
		return bench_fail(b, sim_stop_name(res.stop), (uint64_t)-res.err);
	return 0;
}

/* p99 of the exact histogram: upper edge of the bin holding it. */
static double exact_p99_us(const struct bench *b)
{
	uint64_t want = (b->qd_count * 99 + 99) / 100, seen = 0;

	if (!b->qd_count)
		return 0;
	for (uint32_t k = 0; k < QD_BINS; k++) {
		seen += b->qd_hist[k];
		if (seen >= want)
			return (double)(k + 1) * QD_BIN_NS / 1000.0;
	}
	return (double)QD_BINS * QD_BIN_NS / 1000.0;
}

static void phase1_metrics(const struct bench *b, const struct snap *s0, const struct snap *s1,
			   uint64_t interval_ns, struct run_result *out)
{
	struct sim_link_stats d = s1->bn;
	double cap_bytes = (double)b->topo.bottleneck.bandwidth_bps / 8e9 * (double)interval_ns;
	double sum = 0, sq = 0, fc = 0;

	for (uint32_t k = 0; k < SIM_QDELAY_BUCKETS; k++)
		d.qdelay_hist[k] -= s0->bn.qdelay_hist[k];
	d.qdelay_count -= s0->bn.qdelay_count;
	for (uint32_t i = 0; i < b->nflows; i++) {
		double x = (double)(s1->payload[i] - s0->payload[i]);

		sum += x;
		sq += x * x;
		fc += (double)fc_pdl_fcwnd_fp(b->snd[i].conn[0].p) / FC_CWND_ONE;
	}
	out->util_pct = 100.0 * (double)(s1->bn.bytes_delivered - s0->bn.bytes_delivered) / cap_bytes;
	out->goodput_pct = 100.0 * sum / cap_bytes;
	out->jain = sq > 0 ? sum * sum / ((double)b->nflows * sq) : 0;
	out->p99_us = exact_p99_us(b);
	out->p99_hist_us = (double)sim_link_qdelay_quantile_ns(&d, 990000) / 1000.0;
	out->tail_drops = s1->bn.dropped_tail - s0->bn.dropped_tail;
	out->retx = s1->retx - s0->retx;
	out->mean_fcwnd = fc / b->nflows;
	out->target_us = ts_to_us(base_target_ts());
	out->rue_target_us = ts_to_us(fc_rue_target_delay(b->snd[0].rue, base_target_ts(),
					(uint32_t)(out->mean_fcwnd * FC_CWND_ONE), SWITCH_HOPS));
}

/* Base RTTs from the late flow's start until its throughput over the trailing window
 * first reaches LATE_SHARE of the fair share; -1 if it never does. */
static void late_metrics(const struct bench *b, uint64_t rtt_ns, struct run_result *out)
{
	double fair_bps = (double)b->topo.bottleneck.bandwidth_bps / (b->nflows + 1);
	double pkt_ns = (double)data_wire_bytes() * 8e9 / fair_bps;
	uint64_t win_ns = LATE_WIN_RTTS * rtt_ns;
	uint32_t wb;
	uint64_t acc = 0;

	if ((double)win_ns < LATE_WIN_PKTS * pkt_ns)
		win_ns = (uint64_t)ceil(LATE_WIN_PKTS * pkt_ns);
	wb = (uint32_t)((win_ns + LATE_BIN_NS - 1) / LATE_BIN_NS);
	out->late_win_rtts = (double)wb * LATE_BIN_NS / (double)rtt_ns;
	out->late_rtts = -1;
	for (uint32_t k = b->late_nbins / 2; k < b->late_nbins; k++)
		acc += b->late_bins[k];
	out->late_share_pct = 100.0 * (double)acc * 8e9 / fair_bps /
			      ((double)(b->late_nbins - b->late_nbins / 2) * LATE_BIN_NS);
	acc = 0;
	for (uint32_t k = 0; k < b->late_nbins; k++) {
		acc += b->late_bins[k];
		if (k >= wb)
			acc -= b->late_bins[k - wb];
		if ((double)acc * 8e9 >= LATE_SHARE * fair_bps * (double)wb * LATE_BIN_NS) {
			out->late_rtts = (double)(k + 1) * LATE_BIN_NS / (double)rtt_ns;
			return;
		}
	}
}

static int run_one(const struct run_params *rp, const struct topo *t, struct run_result *out)
{
	struct bench *b = calloc(1, sizeof(*b));
	uint64_t rtt = base_rtt_ns(t);
	struct snap s0, s1;
	struct sim_rng rng;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!b)
		return -ENOMEM;
	b->topo = *t;
	b->nflows = rp->nflows;
	b->nsenders = rp->nflows + 1;
	b->late_start_ns = rp->conv_ns;
	b->late_nbins = (uint32_t)(rp->late_ns / LATE_BIN_NS + 1);
	b->late_bins = calloc(b->late_nbins, sizeof(*b->late_bins));
	rc = b->late_bins ? build_world(b, rp->seed) : -ENOMEM;
	for (uint32_t i = 0; i < b->nsenders && !rc; i++)
		rc = host_init(b, &b->snd[i], i, 0);
	if (!rc)
		rc = host_init(b, &b->rcv, b->nsenders, 1);
	if (rc)
		goto out;
	/* the N flows start within one base RTT of each other, the late one at conv_ns */
	for (uint32_t i = 0; i < b->nflows; i++) {
		sim_world_rng(b->w, SIM_STREAM_ENDPOINT(i), &rng);
		b->snd[i].start_ns = sim_rng_below(&rng, rtt);
	}
	b->snd[b->nflows].start_ns = rp->conv_ns;

	rc = run_until(b, rp->conv_ns / 2);
	if (rc)
		goto out;
	take_snap(b, &s0);
	b->measuring = 1;
	rc = run_until(b, rp->conv_ns);
	if (rc)
		goto out;
	b->measuring = 0;
	take_snap(b, &s1);
	phase1_metrics(b, &s0, &s1, rp->conv_ns - rp->conv_ns / 2, out);
	rc = run_until(b, rp->conv_ns + rp->late_ns);
	if (rc)
		goto out;
	late_metrics(b, rtt, out);
	out->base_rtt_us = (double)rtt / 1000.0;
	out->stale_polls = b->stale_polls;
	out->rue_errors = b->rue_errors;
	out->given_up = b->given_up;
	out->resyncs = b->resyncs;
	out->reroutes = b->reroutes;
	out->trace_hash = sim_world_trace_hash(b->w);
out:
	if (b->failed) {
		char line[160];

		fprintf(stderr, "sim_cc: N=%u seed %#" PRIx64 ": %s\n", rp->nflows, rp->seed, b->why);
		sim_replay_line(line, sizeof(line), "sim_cc", rp->seed);
		fprintf(stderr, "%s --flows %u\n", line, rp->nflows);
		rc = rc ? rc : -EPROTO;
	}
	for (uint32_t i = 0; i < b->nsenders; i++)
		host_fini(&b->snd[i]);
	host_fini(&b->rcv);
	sim_world_free(b->w);
	free(b->late_bins);
	free(b);
	return rc;
}

/* ------------------------------------------------------------------------------------ */
/* table and checks                                                                     */

static void print_header(const struct topo *t, const struct run_params *rp, int assert_mode)
{
	printf("sim_cc: N flows -> 1 receiver over one bottleneck, seed %#" PRIx64 "%s\n", rp->seed,
	       assert_mode ? " (--assert: short runs)" : "");
	printf("  access %.0f Gb/s %.1f us | bottleneck %.0f Gb/s %.1f us, queue %u B tail drop"
	       " | reverse %.0f Gb/s %.1f us + jitter %.1f us\n",
	       (double)t->access.bandwidth_bps / 1e9, (double)t->access.latency_ns / 1e3,
	       (double)t->bottleneck.bandwidth_bps / 1e9, (double)t->bottleneck.latency_ns / 1e3,
	       t->bottleneck.queue_limit_bytes, (double)t->reverse.bandwidth_bps / 1e9,
	       (double)t->reverse.latency_ns / 1e3, (double)t->reverse.jitter_ns / 1e3);
	printf("  Push Data %u B payload, %u B on the wire; base RTT %.2f us; BDP %.0f KB\n",
	       PAYLOAD_BYTES, data_wire_bytes(), (double)base_rtt_ns(t) / 1e3,
	       (double)t->bottleneck.bandwidth_bps / 8e9 * (double)base_rtt_ns(t) / 1024);
	printf("  %.1f ms per run, measured over the second half; late flow at %.1f ms for %.1f ms\n",
	       (double)rp->conv_ns / 1e6, (double)rp->conv_ns / 1e6, (double)rp->late_ns / 1e6);
	printf("  target: base delay target of the CC events (checked); RUE target: Swift's at the mean"
	       " fcwnd\n    (base + flow scaling + %u hop x topology scaling)\n", SWITCH_HOPS);
	printf("  late: base RTTs until the late flow's throughput over the trailing window (RTTs)\n"
	       "    first reaches %.0f %% of its fair share; share: its mean over the last half of"
	       " its run\n\n", LATE_SHARE * 100);
	printf("flows  util %%  goodput %%   Jain   p99 qdelay us (log2 bound)  target us"
	       "  RUE target  tail drops  late RTTs (window)  share %%  retx  fcwnd\n");
}

static void print_row(uint32_t n, const struct run_result *r)
{
	char late[32];

	if (r->late_rtts >= 0)
		snprintf(late, sizeof(late), "%.1f", r->late_rtts);
	else
		snprintf(late, sizeof(late), "never");
	printf("%5u  %6.2f  %9.2f  %6.4f  %13.2f (%10.1f)  %9.2f  %10.2f  %10" PRIu64
	       "  %9s (%6.1f)  %7.1f  %4" PRIu64 "  %5.2f\n", n, r->util_pct, r->goodput_pct, r->jain,
	       r->p99_us, r->p99_hist_us, r->target_us, r->rue_target_us, r->tail_drops, late,
	       r->late_win_rtts, r->late_share_pct, r->retx, r->mean_fcwnd);
}

static void print_footer(const uint32_t *ns, const struct run_result *r, uint32_t k)
{
	for (uint32_t i = 0; i < k; i++)
		printf("  N=%u: trace %#018" PRIx64 ", stale-deadline polls %" PRIu64
		       ", RUE errors %" PRIu64 ", PLB reroutes %" PRIu64 ", packets given up %"
		       PRIu64 " (Resyncs %" PRIu64 ")\n", ns[i], r[i].trace_hash, r[i].stale_polls,
		       r[i].rue_errors, r[i].reroutes, r[i].given_up, r[i].resyncs);
}

static void check(int ok, uint32_t n, const char *what, int *pass, int *fail)
{
	printf("check N=%-2u %s: %s\n", n, what, ok ? "ok" : "FAILED");
	if (ok)
		(*pass)++;
	else
		(*fail)++;
}

/* The issue's targets, with the stated slack; the thresholds are not bent to the code. */
static void run_checks(uint32_t n, const struct run_result *r, int *pass, int *fail)
{
	char s[120];

	snprintf(s, sizeof(s), "utilization %.2f %% >= 90 %%", r->util_pct);
	check(r->util_pct >= 90.0, n, s, pass, fail);
	snprintf(s, sizeof(s), "Jain fairness %.4f >= 0.95", r->jain);
	check(r->jain >= 0.95, n, s, pass, fail);
	snprintf(s, sizeof(s), "p99 queueing delay %.2f us <= %.2f us (2 x target)", r->p99_us,
		 2 * r->target_us);
	check(r->p99_us <= 2 * r->target_us, n, s, pass, fail);
	if (n <= 8) {
		snprintf(s, sizeof(s), "tail drops after convergence %" PRIu64 " == 0", r->tail_drops);
		check(r->tail_drops == 0, n, s, pass, fail);
	}
	if (r->late_rtts >= 0)
		snprintf(s, sizeof(s), "late flow at 80 %% of its fair share after %.1f RTTs <= 50",
			 r->late_rtts);
	else
		snprintf(s, sizeof(s), "late flow at 80 %% of its fair share: never <= 50 RTTs");
	check(r->late_rtts >= 0 && r->late_rtts <= 50.0, n, s, pass, fail);
}

/* --flows N (one row, 1..MAX_FLOWS), --gbps G (bottleneck, <= 1000), --queue-kb K,
 * --conv-ms T (<= 1000), --late-ms T (<= 100); --seed is sim_seed_opts_parse's. Returns 0
 * or -EINVAL (a missing or malformed value, one out of range). */
static int parse_opts(int argc, char **argv, struct topo *t, struct run_params *rp,
		      uint32_t *only)
{
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		char *end;
		double v;

		if (strcmp(o, "--flows") && strcmp(o, "--gbps") && strcmp(o, "--queue-kb") &&
		    strcmp(o, "--conv-ms") && strcmp(o, "--late-ms"))
			continue;
		if (i + 1 >= argc)
			return -EINVAL;
		v = strtod(argv[++i], &end);
		if (*end || !(v > 0))
			return -EINVAL;
		if (!strcmp(o, "--flows")) {
			if (v > MAX_FLOWS || v != floor(v))
				return -EINVAL;
			*only = (uint32_t)v;
		} else if (!strcmp(o, "--gbps")) {
			if (v > 1000)
				return -EINVAL;
			t->bottleneck.bandwidth_bps = (uint64_t)(v * 1e9);
		} else if (!strcmp(o, "--queue-kb")) {
			if (v * 1024 > SIM_LINK_HARD_QUEUE_BYTES)
				return -EINVAL;
			t->bottleneck.queue_limit_bytes = (uint32_t)(v * 1024);
		} else if (!strcmp(o, "--conv-ms")) {
			if (v > 1000)
				return -EINVAL;
			rp->conv_ns = (uint64_t)(v * 1e6);
		} else {
			if (v > 100)
				return -EINVAL;
			rp->late_ns = (uint64_t)(v * 1e6);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const uint32_t all_n[] = { 2, 8, 32 };
	struct run_result res[3];
	uint32_t ns[3], k = 0, only = 0;
	struct sim_seed_opts so;
	struct run_params rp = { 0 };
	struct topo t;
	int assert_mode = 0, pass = 0, fail = 0;

	topo_default(&t);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--assert"))
			assert_mode = 1;
	rp.conv_ns = assert_mode ? 8 * MS : 30 * MS;
	rp.late_ns = assert_mode ? 2 * MS : 5 * MS;
	if (parse_opts(argc, argv, &t, &rp, &only) || sim_seed_opts_parse(&so, argc, argv, 1)) {
		fprintf(stderr, "usage: sim_cc [--assert] [--seed S] [--flows N] [--gbps G]"
			" [--queue-kb K] [--conv-ms T] [--late-ms T]\n");
		return 2;
	}
	rp.seed = so.first;
	print_header(&t, &rp, assert_mode);
	for (uint32_t i = 0; i < 3; i++) {
		if (only && i)
			break;
		rp.nflows = only ? only : all_n[i];
		fflush(stdout);
		if (run_one(&rp, &t, &res[k])) {
			printf("%5u  run failed (see stderr)\n", rp.nflows);
			fail++;
			continue;
		}
		print_row(rp.nflows, &res[k]);
		ns[k++] = rp.nflows;
	}
	print_footer(ns, res, k);
	if (!assert_mode)
		return fail ? 1 : 0;
	printf("\n");
	for (uint32_t i = 0; i < k; i++)
		run_checks(ns[i], &res[i], &pass, &fail);
	printf("sim-cc: %d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}
