/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_link.c - one direction of a simulated path: serializer with a tail-drop queue,
 * then a wire with latency, jitter and seeded drop / duplicate / reorder / corruption.
 * The pipeline and its order are documented in sim.h. A send is planned first (random
 * draws on a copy of the stream, allocations) and committed only when nothing can fail,
 * so an error return leaves the link as it was.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define HEAP_MIN_CAP 64u
#define SER_MIN_CAP 64u

int sim_link_cfg_check(const struct sim_link_cfg *c)
{
	if (!c)
		return -EINVAL;
	if (c->drop_ppm > SIM_PPM || c->dup_ppm > SIM_PPM || c->reorder_ppm > SIM_PPM ||
	    c->corrupt_ppm > SIM_PPM)
		return -EINVAL;
	if (c->latency_ns > SIM_LINK_MAX_DELAY_NS || c->jitter_ns > SIM_LINK_MAX_DELAY_NS ||
	    c->reorder_delay_ns > SIM_LINK_MAX_DELAY_NS)
		return -EINVAL;
	if (c->queue_limit_bytes > SIM_LINK_HARD_QUEUE_BYTES)
		return -EINVAL;
	return 0;
}

int sim_link_init(struct sim_link *l, const struct sim_link_cfg *cfg, uint64_t seed,
		  uint64_t stream)
{
	int err = sim_link_cfg_check(cfg);

	if (err)
		return err;
	memset(l, 0, sizeof(*l));
	l->cfg = *cfg;
	sim_rng_stream(&l->rng, seed, stream);
	return 0;
}

void sim_link_fini(struct sim_link *l)
{
	uint32_t i;

	for (i = 0; i < l->heap_len; i++)
		free(l->heap[i]);
	free(l->heap);
	free(l->ser);
	memset(l, 0, sizeof(*l));
}

int sim_link_set_cfg(struct sim_link *l, const struct sim_link_cfg *cfg)
{
	int err = sim_link_cfg_check(cfg);

	if (!err)
		l->cfg = *cfg;
	return err;
}

uint64_t sim_ser_ns(uint64_t bps, uint32_t len)
{
	unsigned __int128 bits_ns = (unsigned __int128)len * 8u * 1000000000u;

	if (!bps)
		return 0;
	return (uint64_t)((bits_ns + bps - 1) / bps);
}

void sim_pkt_free(struct sim_pkt *p)
{
	free(p);
}

/* ---- min-heap of packets on (deliver_ns, seq) ---- */

static int pkt_before(const struct sim_pkt *a, const struct sim_pkt *b)
{
	return a->deliver_ns < b->deliver_ns || (a->deliver_ns == b->deliver_ns && a->seq < b->seq);
}

/* Room for `more` packets. 0 or -ENOMEM. Callers have checked SIM_LINK_MAX_INFLIGHT. */
static int heap_reserve(struct sim_link *l, uint32_t more)
{
	uint32_t cap = l->heap_cap ? l->heap_cap : HEAP_MIN_CAP;
	struct sim_pkt **h;

	if (l->heap_len + more <= l->heap_cap)
		return 0;
	while (cap < l->heap_len + more)
		cap *= 2;
	h = realloc(l->heap, (size_t)cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	l->heap = h;
	l->heap_cap = cap;
	return 0;
}

static void heap_push(struct sim_link *l, struct sim_pkt *p)
{
	uint32_t i = l->heap_len++;

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!pkt_before(p, l->heap[parent]))
			break;
		l->heap[i] = l->heap[parent];
		i = parent;
	}
	l->heap[i] = p;
}

static struct sim_pkt *heap_pop(struct sim_link *l)
{
	struct sim_pkt *top = l->heap[0], *last = l->heap[--l->heap_len];
	uint32_t i = 0, n = l->heap_len;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && pkt_before(l->heap[c + 1], l->heap[c]))
			c++;
		if (!pkt_before(l->heap[c], last))
			break;
		l->heap[i] = l->heap[c];
		i = c;
	}
	if (n)
		l->heap[i] = last;
	return top;
}

/* ---- serializer queue: packets accepted but not yet started, FIFO by start time ---- */

static void ser_drain(struct sim_link *l, uint64_t now_ns)
{
	while (l->ser_len && l->ser[l->ser_head].start_ns <= now_ns) {
		l->ser_bytes -= l->ser[l->ser_head].len;
		l->ser_head = (l->ser_head + 1) % l->ser_cap;
		l->ser_len--;
	}
}

/* Room for one more slot. 0 or -ENOMEM. Callers have checked SIM_LINK_MAX_INFLIGHT. */
static int ser_reserve(struct sim_link *l)
{
	uint32_t cap = l->ser_cap ? 2 * l->ser_cap : SER_MIN_CAP, i;
	struct sim_ser_slot *s;

	if (l->ser_len < l->ser_cap)
		return 0;
	s = malloc((size_t)cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (i = 0; i < l->ser_len; i++)
		s[i] = l->ser[(l->ser_head + i) % l->ser_cap];
	free(l->ser);
	l->ser = s;
	l->ser_cap = cap;
	l->ser_head = 0;
	return 0;
}

static void ser_push(struct sim_link *l, uint64_t start_ns, uint32_t len)
{
	uint32_t tail = (l->ser_head + l->ser_len) % l->ser_cap;

	l->ser[tail].start_ns = start_ns;
	l->ser[tail].len = len;
	l->ser_len++;
	l->ser_bytes += len;
}

/* ---- one send ---- */

/* The fate of one packet, decided before anything is changed. */
struct plan {
	int verdict;
	int waits;            /* occupies a serializer queue slot */
	int dup;
	uint32_t flags;
	uint64_t start_ns, end_ns, deliver_ns;
	uint64_t bit;         /* corruption: bit index, when flags has SIM_PKT_CORRUPT */
};

static uint64_t draw_below(uint64_t x, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

static int draw_chance(uint64_t x, uint32_t ppm)
{
	return draw_below(x, SIM_PPM) < ppm;
}

static void qdelay_sample(struct sim_link_stats *st, uint64_t d)
{
	uint32_t b = d ? (uint32_t)(64 - __builtin_clzll(d)) : 0;

	if (b >= SIM_QDELAY_BUCKETS)
		b = SIM_QDELAY_BUCKETS - 1;
	st->qdelay_hist[b]++;
	st->qdelay_count++;
	st->qdelay_sum_ns += d;
	if (d > st->qdelay_max_ns)
		st->qdelay_max_ns = d;
}

/* Queue and wire decisions (pipeline steps 1-4 of sim.h) from the six draws r[]. */
static void plan_send(const struct sim_link *l, uint64_t now_ns, uint32_t len,
		      const uint64_t r[SIM_LINK_DRAWS_PER_PKT], struct plan *p)
{
	const struct sim_link_cfg *c = &l->cfg;
	uint64_t limit = c->queue_limit_bytes ? c->queue_limit_bytes : SIM_LINK_HARD_QUEUE_BYTES;

	memset(p, 0, sizeof(*p));
	p->deliver_ns = UINT64_MAX;
	if (l->heap_len >= SIM_LINK_MAX_INFLIGHT || l->ser_len >= SIM_LINK_MAX_INFLIGHT) {
		p->verdict = SIM_DROP_CAP;
		return;
	}
	p->start_ns = l->busy_until_ns > now_ns ? l->busy_until_ns : now_ns;
	p->waits = p->start_ns > now_ns;
	if (p->waits && l->ser_bytes + len > limit) {
		p->verdict = SIM_DROP_TAIL;
		return;
	}
	p->end_ns = p->start_ns + sim_ser_ns(c->bandwidth_bps, len);
	if (draw_chance(r[0], c->drop_ppm)) {
		p->verdict = SIM_DROP_RANDOM;
		return;
	}
	p->verdict = SIM_SENT;
	p->deliver_ns = p->end_ns + c->latency_ns + draw_below(r[5], c->jitter_ns + 1);
	if (draw_chance(r[2], c->reorder_ppm)) {
		p->flags |= SIM_PKT_REORDER;
		p->deliver_ns += c->reorder_delay_ns;
	} else if (p->deliver_ns < l->fifo_ns) {
		p->deliver_ns = l->fifo_ns;
	}
	if (draw_chance(r[3], c->corrupt_ppm)) {
		p->flags |= SIM_PKT_CORRUPT;
		p->bit = draw_below(r[4], (uint64_t)len * 8);
	}
	p->dup = draw_chance(r[1], c->dup_ppm) && l->heap_len + 1 < SIM_LINK_MAX_INFLIGHT;
}

static struct sim_pkt *pkt_new(const struct plan *p, const void *data, uint32_t len,
			       const struct sim_pkt_info *info)
{
	struct sim_pkt *k = malloc(sizeof(*k) + len);

	if (!k)
		return NULL;
	k->deliver_ns = p->deliver_ns;
	k->info = *info;
	k->info.flags |= p->flags;
	k->len = len;
	memcpy(k->data, data, len);
	if (p->flags & SIM_PKT_CORRUPT)
		k->data[p->bit / 8] ^= (uint8_t)(1u << (p->bit % 8));
	return k;
}

/* Allocate what plan p needs: 0 or -ENOMEM with nothing allocated. */
static int alloc_plan(struct sim_link *l, const struct plan *p, const void *data, uint32_t len,
		      const struct sim_pkt_info *info, struct sim_pkt **k, struct sim_pkt **dup)
{
	*k = *dup = NULL;
	if (p->waits && ser_reserve(l))
		return -ENOMEM;
	if (p->verdict != SIM_SENT)
		return 0;
	if (heap_reserve(l, 2) || !(*k = pkt_new(p, data, len, info)))
		return -ENOMEM;
	if (p->dup) {
		*dup = malloc(sizeof(**k) + len); /* the same, possibly corrupted, bytes */
		if (!*dup) {
			free(*k);
			*k = NULL;
			return -ENOMEM;
		}
		memcpy(*dup, *k, sizeof(**k) + len);
		(*dup)->info.flags |= SIM_PKT_DUP;
	}
	return 0;
}

static void commit_queue(struct sim_link *l, uint64_t now_ns, uint32_t len, const struct plan *p)
{
	l->busy_until_ns = p->end_ns;
	if (p->waits) {
		ser_push(l, p->start_ns, len);
		if (l->ser_bytes > l->st.max_queue_bytes)
			l->st.max_queue_bytes = l->ser_bytes;
	}
	qdelay_sample(&l->st, p->start_ns - now_ns);
}

static void commit_wire(struct sim_link *l, const struct plan *p, struct sim_pkt *k,
			struct sim_pkt *dup)
{
	if (!(p->flags & SIM_PKT_REORDER))
		l->fifo_ns = p->deliver_ns;
	else
		l->st.reordered++;
	if (p->flags & SIM_PKT_CORRUPT)
		l->st.corrupted++;
	k->seq = l->next_seq++;
	heap_push(l, k);
	if (dup) {
		dup->seq = l->next_seq++;
		heap_push(l, dup);
		l->st.duplicated++;
	}
	l->st.in_flight = l->heap_len;
}

int sim_link_send(struct sim_link *l, uint64_t now_ns, const void *data, uint32_t len,
		  const struct sim_pkt_info *info, uint64_t *pkt_deliver_ns)
{
	struct sim_rng r = l->rng;
	uint64_t draws[SIM_LINK_DRAWS_PER_PKT];
	struct sim_pkt *k, *dup;
	struct plan p;
	uint32_t i;

	if (pkt_deliver_ns)
		*pkt_deliver_ns = UINT64_MAX;
	if (len == 0 || now_ns < l->last_now_ns)
		return -EINVAL;
	if (len > SIM_PKT_MAX_BYTES)
		return -EMSGSIZE;
	ser_drain(l, now_ns); /* the queue as it is at now_ns: no observable change */
	for (i = 0; i < SIM_LINK_DRAWS_PER_PKT; i++)
		draws[i] = sim_rng_next(&r);
	plan_send(l, now_ns, len, draws, &p);
	if (alloc_plan(l, &p, data, len, info, &k, &dup))
		return -ENOMEM;

	l->rng = r;
	l->last_now_ns = now_ns;
	l->st.sent++;
	l->st.bytes_sent += len;
	switch (p.verdict) {
	case SIM_DROP_CAP:
		l->st.dropped_cap++;
		return SIM_DROP_CAP;
	case SIM_DROP_TAIL:
		l->st.dropped_tail++;
		return SIM_DROP_TAIL;
	case SIM_DROP_RANDOM:
		commit_queue(l, now_ns, len, &p);
		l->st.dropped_random++;
		return SIM_DROP_RANDOM;
	default:
		commit_queue(l, now_ns, len, &p);
		commit_wire(l, &p, k, dup);
		if (pkt_deliver_ns)
			*pkt_deliver_ns = p.deliver_ns;
		return SIM_SENT;
	}
}

uint64_t sim_link_next_ns(const struct sim_link *l)
{
	return l->heap_len ? l->heap[0]->deliver_ns : UINT64_MAX;
}

struct sim_pkt *sim_link_pop_due(struct sim_link *l, uint64_t now_ns)
{
	struct sim_pkt *p;

	if (!l->heap_len || l->heap[0]->deliver_ns > now_ns)
		return NULL;
	p = heap_pop(l);
	l->st.delivered++;
	l->st.bytes_delivered += p->len;
	l->st.in_flight = l->heap_len;
	return p;
}

uint64_t sim_link_qdelay_quantile_ns(const struct sim_link_stats *st, uint32_t q_ppm)
{
	unsigned __int128 want = (unsigned __int128)st->qdelay_count * q_ppm;
	uint64_t need, seen = 0, hi;
	uint32_t b;

	if (!st->qdelay_count)
		return 0;
	need = (uint64_t)((want + SIM_PPM - 1) / SIM_PPM);
	if (need == 0)
		need = 1;
	for (b = 0; b < SIM_QDELAY_BUCKETS; b++) {
		seen += st->qdelay_hist[b];
		if (seen >= need)
			break;
	}
	if (b == 0)
		return 0;
	hi = b < SIM_QDELAY_BUCKETS - 1 ? (1ull << b) - 1 : UINT64_MAX;
	return hi < st->qdelay_max_ns ? hi : st->qdelay_max_ns;
}
