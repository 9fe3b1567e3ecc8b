/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_world.c - endpoints, links, routes and the event loop of the simulator (sim.h).
 *
 * One step at virtual time now: pop every due packet (links in id order, each in
 * (arrival, seq) order) and forward it to the next link of its route or hand it to its
 * destination endpoint; fire the timers that are due (endpoint order); poll every
 * endpoint's transmit side until it has nothing (endpoint order, bounded). Then the clock
 * jumps to the earliest of: the next arrival on any link, the earliest endpoint deadline.
 * Each event is folded into a running FNV-1a hash: the trace hash.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct sim_route {
	uint32_t nhops;
	uint32_t links[SIM_ROUTE_MAX_HOPS];
};

struct sim_ep {
	struct sim_endpoint_ops ops;
	void *ctx;
	uint32_t peer; /* default destination, SIM_NO_DST if none */
};

struct sim_world {
	uint64_t seed;
	uint64_t now_ns;
	uint64_t events;     /* over all runs */
	uint64_t trace_hash;
	FILE *trace;
	int repoll;          /* poll every endpoint at now before the clock moves */
	uint32_t n_ep, n_links;
	struct sim_ep ep[SIM_WORLD_MAX_ENDPOINTS];
	struct sim_link link[SIM_WORLD_MAX_LINKS];
	struct sim_route route[SIM_WORLD_MAX_ENDPOINTS][SIM_WORLD_MAX_ENDPOINTS];
	uint8_t txbuf[SIM_PKT_MAX_BYTES];
};

/* State of one sim_world_run call */
struct run {
	uint64_t events, max_events;
	int err, err_endpoint;
};

static const char *const ev_names[] = {
	[SIM_EV_TX] = "tx", [SIM_EV_LINK] = "link", [SIM_EV_DELIVER] = "deliver",
	[SIM_EV_FORWARD] = "forward", [SIM_EV_TIMER] = "timer",
};

static const char *const verdict_names[] = {
	[SIM_SENT] = "sent", [SIM_DROP_TAIL] = "drop-tail", [SIM_DROP_RANDOM] = "drop-random",
	[SIM_DROP_CAP] = "drop-cap",
};

const char *sim_stop_name(enum sim_stop s)
{
	switch (s) {
	case SIM_STOP_IDLE: return "idle";
	case SIM_STOP_UNTIL: return "until_ns reached";
	case SIM_STOP_MAX_EVENTS: return "max_events reached";
	case SIM_STOP_ERROR: return "error";
	}
	return "?";
}

struct sim_world *sim_world_new(uint64_t seed)
{
	struct sim_world *w = calloc(1, sizeof(*w));
	const char *t = getenv("SIM_TRACE");

	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->seed = seed;
	w->trace_hash = SIM_FNV_OFFSET;
	if (t && *t && strcmp(t, "0") != 0) {
		w->trace = stderr;
		fprintf(w->trace, "sim: seed %#" PRIx64 "\n", seed);
	}
	return w;
}

void sim_world_free(struct sim_world *w)
{
	uint32_t i;

	if (!w)
		return;
	for (i = 0; i < w->n_links; i++)
		sim_link_fini(&w->link[i]);
	free(w);
}

int sim_world_add_endpoint(struct sim_world *w, const struct sim_endpoint_ops *ops, void *ctx)
{
	struct sim_ep *e;

	if (!ops || !ops->on_packet || !ops->next_deadline || !ops->on_timer || !ops->poll_tx)
		return -EINVAL;
	if (w->n_ep >= SIM_WORLD_MAX_ENDPOINTS)
		return -ENOSPC;
	e = &w->ep[w->n_ep];
	e->ops = *ops;
	e->ctx = ctx;
	e->peer = SIM_NO_DST;
	return (int)w->n_ep++;
}

int sim_world_add_link(struct sim_world *w, const struct sim_link_cfg *cfg)
{
	int err;

	if (w->n_links >= SIM_WORLD_MAX_LINKS)
		return -ENOSPC;
	err = sim_link_init(&w->link[w->n_links], cfg, w->seed, SIM_STREAM_LINK(w->n_links));
	if (err)
		return err;
	return (int)w->n_links++;
}

int sim_world_set_route(struct sim_world *w, uint32_t src, uint32_t dst, const uint32_t *links,
			uint32_t nhops)
{
	struct sim_route *r;
	uint32_t i;

	if (src >= w->n_ep || dst >= w->n_ep || nhops == 0 || nhops > SIM_ROUTE_MAX_HOPS)
		return -EINVAL;
	for (i = 0; i < nhops; i++)
		if (links[i] >= w->n_links)
			return -EINVAL;
	r = &w->route[src][dst];
	r->nhops = nhops;
	memcpy(r->links, links, nhops * sizeof(*links));
	return 0;
}

int sim_world_set_peer(struct sim_world *w, uint32_t src, uint32_t dst)
{
	if (src >= w->n_ep || dst >= w->n_ep)
		return -EINVAL;
	w->ep[src].peer = dst;
	return 0;
}

int sim_world_connect(struct sim_world *w, uint32_t a, uint32_t b,
		      const struct sim_link_cfg *cfg_ab, const struct sim_link_cfg *cfg_ba)
{
	int ab, ba, err;
	uint32_t l;

	if (a >= w->n_ep || b >= w->n_ep || a == b)
		return -EINVAL;
	if (sim_link_cfg_check(cfg_ab) || sim_link_cfg_check(cfg_ba))
		return -EINVAL;
	if (w->n_links + 2 > SIM_WORLD_MAX_LINKS)
		return -ENOSPC;
	ab = sim_world_add_link(w, cfg_ab);
	ba = sim_world_add_link(w, cfg_ba);
	if (ab < 0 || ba < 0)
		return ab < 0 ? ab : ba; /* not reached: checked above */
	l = (uint32_t)ab;
	if ((err = sim_world_set_route(w, a, b, &l, 1)))
		return err;
	l = (uint32_t)ba;
	if ((err = sim_world_set_route(w, b, a, &l, 1)))
		return err;
	if (w->ep[a].peer == SIM_NO_DST)
		w->ep[a].peer = b;
	if (w->ep[b].peer == SIM_NO_DST)
		w->ep[b].peer = a;
	return ab;
}

uint64_t sim_world_now(const struct sim_world *w) { return w->now_ns; }
uint64_t sim_world_seed(const struct sim_world *w) { return w->seed; }
uint64_t sim_world_events(const struct sim_world *w) { return w->events; }
uint64_t sim_world_trace_hash(const struct sim_world *w) { return w->trace_hash; }
void sim_world_set_trace(struct sim_world *w, FILE *fp) { w->trace = fp; }

struct sim_link *sim_world_link(struct sim_world *w, uint32_t id)
{
	return id < w->n_links ? &w->link[id] : NULL;
}

void sim_world_rng(const struct sim_world *w, uint64_t stream, struct sim_rng *out)
{
	sim_rng_stream(out, w->seed, stream);
}

/* ---- trace ---- */

static void put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t pkt_hash(const uint8_t *data, uint32_t len, const struct sim_pkt_info *info)
{
	uint8_t tail[12];

	put_le(tail, info->meta, 8);
	put_le(tail + 8, info->flags, 4);
	return sim_fnv1a(sim_fnv1a(SIM_FNV_OFFSET, data, len), tail, sizeof(tail));
}

static void trace_ev(struct sim_world *w, enum sim_event kind, uint32_t a, uint32_t b,
		     uint32_t len, uint64_t x)
{
	uint8_t rec[29];

	put_le(rec, w->now_ns, 8);
	rec[8] = (uint8_t)kind;
	put_le(rec + 9, a, 4);
	put_le(rec + 13, b, 4);
	put_le(rec + 17, len, 4);
	put_le(rec + 21, x, 8);
	w->trace_hash = sim_fnv1a(w->trace_hash, rec, sizeof(rec));
	if (!w->trace)
		return;
	if (kind == SIM_EV_TIMER)
		fprintf(w->trace, "%14" PRIu64 " timer   %3u\n", w->now_ns, a);
	else if (kind == SIM_EV_LINK)
		fprintf(w->trace, "%14" PRIu64 " link    %3u %-11s len %5u arrive %" PRIu64 "\n",
			w->now_ns, a, b < 4 ? verdict_names[b] : "?", len, x);
	else
		fprintf(w->trace, "%14" PRIu64 " %-7s %3u -> %3u len %5u x %016" PRIx64 "\n",
			w->now_ns, ev_names[kind], a, b, len, x);
}

/* ---- the loop ---- */

static int fail(struct run *r, int err, int endpoint)
{
	r->err = err;
	r->err_endpoint = endpoint;
	return err;
}

/* Put a packet on link info->hop of its route. 0, -EHOSTUNREACH (no route) or the errors of
 * sim_link_send. */
static int route_send(struct sim_world *w, const uint8_t *data, uint32_t len,
		      const struct sim_pkt_info *info)
{
	const struct sim_route *rt;
	uint64_t arrive;
	uint32_t id;
	int v;

	if (info->dst >= w->n_ep)
		return -EHOSTUNREACH;
	rt = &w->route[info->src][info->dst];
	if (info->hop >= rt->nhops)
		return -EHOSTUNREACH;
	id = rt->links[info->hop];
	v = sim_link_send(&w->link[id], w->now_ns, data, len, info, &arrive);
	if (v < 0)
		return v;
	trace_ev(w, SIM_EV_LINK, id, (uint32_t)v, len, arrive);
	return 0;
}

/* A packet came out of link `id`: next hop or destination. Frees it. */
static int arrive(struct sim_world *w, struct run *r, uint32_t id, struct sim_pkt *p)
{
	const struct sim_route *rt = &w->route[p->info.src][p->info.dst];
	int err;

	if (p->info.hop + 1 < rt->nhops) {
		p->info.hop++;
		trace_ev(w, SIM_EV_FORWARD, id, rt->links[p->info.hop], p->len,
			 sim_fnv1a(SIM_FNV_OFFSET, p->data, p->len));
		err = route_send(w, p->data, p->len, &p->info);
		if (err)
			fail(r, err, -1);
	} else {
		const struct sim_ep *e = &w->ep[p->info.dst];

		trace_ev(w, SIM_EV_DELIVER, id, p->info.dst, p->len,
			 pkt_hash(p->data, p->len, &p->info));
		err = e->ops.on_packet(e->ctx, w->now_ns, p->data, p->len, &p->info);
		if (err)
			fail(r, err < 0 ? err : -EPROTO, (int)p->info.dst);
	}
	sim_pkt_free(p);
	return err;
}

static int count_event(struct sim_world *w, struct run *r)
{
	if (r->events >= r->max_events)
		return 0;
	r->events++;
	w->events++;
	return 1;
}

static int deliver_due(struct sim_world *w, struct run *r)
{
	struct sim_pkt *p;
	uint32_t i;
	int err;

	for (i = 0; i < w->n_links; i++) {
		while (r->events < r->max_events && (p = sim_link_pop_due(&w->link[i], w->now_ns))) {
			count_event(w, r);
			if ((err = arrive(w, r, i, p)))
				return err;
		}
	}
	return 0;
}

static int fire_timers(struct sim_world *w, struct run *r)
{
	uint32_t i;
	int err;

	for (i = 0; i < w->n_ep; i++) {
		struct sim_ep *e = &w->ep[i];

		if (e->ops.next_deadline(e->ctx) > w->now_ns || !count_event(w, r))
			continue;
		trace_ev(w, SIM_EV_TIMER, i, 0, 0, 0);
		if ((err = e->ops.on_timer(e->ctx, w->now_ns)))
			return fail(r, err < 0 ? err : -EPROTO, (int)i);
	}
	return 0;
}

/* Poll endpoint i until it has nothing, SIM_TX_BURST_MAX times at most. */
static int poll_endpoint(struct sim_world *w, struct run *r, uint32_t i)
{
	struct sim_ep *e = &w->ep[i];
	uint32_t k;
	int n, err;

	for (k = 0; k < SIM_TX_BURST_MAX; k++) {
		struct sim_pkt_info info = { .meta = w->now_ns, .src = i, .dst = e->peer };

		if (r->events >= r->max_events) {
			w->repoll = 1;
			return 0;
		}
		n = e->ops.poll_tx(e->ctx, w->now_ns, w->txbuf, SIM_PKT_MAX_BYTES, &info);
		if (n == 0)
			return 0;
		if (n < 0 || n > (int)SIM_PKT_MAX_BYTES)
			return fail(r, n < 0 ? n : -EMSGSIZE, (int)i);
		count_event(w, r);
		info.src = i; /* an endpoint cannot forge these */
		info.hop = 0;
		info.flags = 0;
		trace_ev(w, SIM_EV_TX, i, info.dst, (uint32_t)n, pkt_hash(w->txbuf, (uint32_t)n, &info));
		if ((err = route_send(w, w->txbuf, (uint32_t)n, &info)))
			return fail(r, err, (int)i);
	}
	w->repoll = 1; /* it may have more: poll again before the clock moves */
	return 0;
}

static int step(struct sim_world *w, struct run *r)
{
	uint32_t i;
	int err;

	if ((err = deliver_due(w, r)) || (err = fire_timers(w, r)))
		return err;
	w->repoll = 0;
	for (i = 0; i < w->n_ep; i++)
		if ((err = poll_endpoint(w, r, i)))
			return err;
	return 0;
}

static uint64_t next_event_ns(const struct sim_world *w)
{
	uint64_t t = w->repoll ? w->now_ns : UINT64_MAX, d;
	uint32_t i;

	for (i = 0; i < w->n_links; i++) {
		d = sim_link_next_ns(&w->link[i]);
		if (d < t)
			t = d;
	}
	for (i = 0; i < w->n_ep; i++) {
		d = w->ep[i].ops.next_deadline(w->ep[i].ctx);
		if (d < t)
			t = d;
	}
	return t < w->now_ns ? w->now_ns : t;
}

static enum sim_stop run_loop(struct sim_world *w, struct run *r, uint64_t until_ns)
{
	for (;;) {
		uint64_t t;

		if (r->events >= r->max_events)
			return SIM_STOP_MAX_EVENTS;
		t = next_event_ns(w);
		if (t == UINT64_MAX)
			return SIM_STOP_IDLE;
		if (t > until_ns) {
			if (until_ns > w->now_ns)
				w->now_ns = until_ns;
			return SIM_STOP_UNTIL;
		}
		w->now_ns = t;
		if (step(w, r))
			return SIM_STOP_ERROR;
	}
}

enum sim_stop sim_world_run(struct sim_world *w, uint64_t until_ns, uint64_t max_events,
			    struct sim_run_result *res)
{
	struct run r = { .max_events = max_events, .err_endpoint = -1 };
	enum sim_stop stop;

	w->repoll = 1; /* the caller may have given endpoints work since the last run */
	stop = run_loop(w, &r, until_ns);
	if (w->trace)
		fprintf(w->trace, "%14" PRIu64 " stop: %s, %" PRIu64 " events, err %d (endpoint %d)\n",
			w->now_ns, sim_stop_name(stop), r.events, r.err, r.err_endpoint);
	if (res) {
		res->stop = stop;
		res->now_ns = w->now_ns;
		res->events = r.events;
		res->err = r.err;
		res->err_endpoint = r.err_endpoint;
	}
	return stop;
}

void sim_world_dump(const struct sim_world *w, FILE *fp)
{
	uint32_t i;

	fprintf(fp, "sim: seed %#" PRIx64 " now %" PRIu64 " ns, %" PRIu64 " events, trace %016"
		PRIx64 "\n", w->seed, w->now_ns, w->events, w->trace_hash);
	for (i = 0; i < w->n_links; i++) {
		const struct sim_link_stats *s = &w->link[i].st;

		fprintf(fp, "  link %u: sent %" PRIu64 " delivered %" PRIu64 " in_flight %" PRIu64
			" drop tail/random/cap %" PRIu64 "/%" PRIu64 "/%" PRIu64 " dup %" PRIu64
			" reorder %" PRIu64 " corrupt %" PRIu64 " maxq %" PRIu64 " B qdelay max %" PRIu64
			" mean %" PRIu64 " p99<= %" PRIu64 " ns\n",
			i, s->sent, s->delivered, s->in_flight, s->dropped_tail, s->dropped_random,
			s->dropped_cap, s->duplicated, s->reordered, s->corrupted, s->max_queue_bytes,
			s->qdelay_max_ns, s->qdelay_count ? s->qdelay_sum_ns / s->qdelay_count : 0,
			sim_link_qdelay_quantile_ns(s, 990000));
	}
}
