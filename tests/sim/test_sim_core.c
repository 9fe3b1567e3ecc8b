/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator itself (tests/sim/sim.h), before any engine runs in it: PRNG and hash
 * known answers, a toy sender / receiver pair over one link to check every impairment
 * against times and counts worked out by hand from the configuration, a loss rate within
 * 5 sigma, trace determinism, event and time bounds, a shared bottleneck, and the seed
 * helpers of test mains.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

static int quick(void) { return getenv("FALCON_TEST_QUICK") != NULL; }

/* ------------------------------------------------------------------------------------ */
/* toy endpoints                                                                        */
/* ------------------------------------------------------------------------------------ */

/* Sends `total` numbered packets of `len` bytes: packet k at t0 + (k / burst) * interval.
 * Bytes: 4-byte little-endian k, then pattern(k, i). meta = k. */
struct sender {
	uint32_t total, burst, len;
	uint64_t t0_ns, interval_ns;
	uint32_t next;
	int poison;          /* >= 0: flip one payload byte of this packet */
};

struct arrival {
	uint32_t seq;        /* meta of the packet = its number */
	uint32_t src, flags, len, bitdiff;
	uint64_t t_ns;
};

struct receiver {
	struct arrival *a;
	uint32_t n, cap;
	uint64_t count;      /* all arrivals, also beyond cap */
};

static uint8_t pattern(uint32_t k, uint32_t i)
{
	return (uint8_t)(k * 31u + i * 7u + 1u);
}

static uint64_t send_time(const struct sender *s, uint32_t k)
{
	return s->t0_ns + (uint64_t)(k / s->burst) * s->interval_ns;
}

static void fill(uint8_t *buf, uint32_t k, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		buf[i] = i < 4 ? (uint8_t)(k >> (8 * i)) : pattern(k, i);
}

static int snd_on_packet(void *ctx, uint64_t now, const uint8_t *d, uint32_t len,
			 const struct sim_pkt_info *info)
{
	(void)ctx, (void)now, (void)d, (void)len, (void)info;
	return 0;
}

static uint64_t snd_deadline(void *ctx)
{
	struct sender *s = ctx;

	return s->next < s->total ? send_time(s, s->next) : UINT64_MAX;
}

static int snd_on_timer(void *ctx, uint64_t now)
{
	(void)ctx, (void)now;
	return 0;
}

static int snd_poll(void *ctx, uint64_t now, uint8_t *buf, uint32_t cap, struct sim_pkt_info *info)
{
	struct sender *s = ctx;
	uint32_t k = s->next;

	if (k >= s->total || send_time(s, k) > now)
		return 0;
	assert_true(s->len <= cap);
	fill(buf, k, s->len);
	if (s->poison == (int)k)
		buf[s->len - 1] ^= 0x40;
	info->meta = k;
	s->next++;
	return (int)s->len;
}

static int rcv_on_packet(void *ctx, uint64_t now, const uint8_t *d, uint32_t len,
			 const struct sim_pkt_info *info)
{
	struct receiver *r = ctx;
	uint8_t want[SIM_PKT_MAX_BYTES];
	struct arrival *a;
	uint32_t i, bits = 0;

	r->count++;
	if (r->n >= r->cap)
		return 0;
	a = &r->a[r->n++];
	a->seq = (uint32_t)info->meta;
	a->src = info->src;
	a->flags = info->flags;
	a->len = len;
	a->t_ns = now;
	fill(want, a->seq, len);
	for (i = 0; i < len; i++)
		bits += (uint32_t)__builtin_popcount(want[i] ^ d[i]);
	a->bitdiff = bits;
	return 0;
}

static uint64_t rcv_deadline(void *ctx)
{
	(void)ctx;
	return UINT64_MAX;
}

static int rcv_poll(void *ctx, uint64_t now, uint8_t *buf, uint32_t cap, struct sim_pkt_info *info)
{
	(void)ctx, (void)now, (void)buf, (void)cap, (void)info;
	return 0;
}

static const struct sim_endpoint_ops sender_ops = {
	.on_packet = snd_on_packet, .next_deadline = snd_deadline,
	.on_timer = snd_on_timer, .poll_tx = snd_poll,
};

static const struct sim_endpoint_ops receiver_ops = {
	.on_packet = rcv_on_packet, .next_deadline = rcv_deadline,
	.on_timer = snd_on_timer, .poll_tx = rcv_poll,
};

/* One sender (endpoint 0) -> one receiver (endpoint 1) over link 0 configured by cfg;
 * link 1 (back) is clean. */
struct pair {
	struct sim_world *w;
	struct sender s;
	struct receiver r;
};

static void pair_init(struct pair *p, uint64_t seed, const struct sim_link_cfg *cfg, uint32_t total,
		      uint32_t burst, uint64_t interval_ns, uint32_t len, uint32_t rcv_cap)
{
	static const struct sim_link_cfg clean;

	memset(p, 0, sizeof(*p));
	p->s = (struct sender){ .total = total, .burst = burst, .len = len,
				.interval_ns = interval_ns, .poison = -1 };
	p->r.cap = rcv_cap;
	p->r.a = calloc(rcv_cap ? rcv_cap : 1, sizeof(*p->r.a));
	assert_non_null(p->r.a);
	p->w = sim_world_new(seed);
	assert_non_null(p->w);
	assert_int_equal(sim_world_add_endpoint(p->w, &sender_ops, &p->s), 0);
	assert_int_equal(sim_world_add_endpoint(p->w, &receiver_ops, &p->r), 1);
	assert_int_equal(sim_world_connect(p->w, 0, 1, cfg, &clean), 0);
}

static void pair_run(struct pair *p)
{
	struct sim_run_result res;

	assert_int_equal(sim_world_run(p->w, UINT64_MAX, 10000000, &res), SIM_STOP_IDLE);
	assert_int_equal(res.err, 0);
	assert_int_equal(p->s.next, p->s.total);
}

static void pair_fini(struct pair *p)
{
	sim_world_free(p->w);
	free(p->r.a);
}

static const struct sim_link_stats *stats(struct pair *p, uint32_t link)
{
	return &sim_world_link(p->w, link)->st;
}

/* ------------------------------------------------------------------------------------ */
/* PRNG and hash                                                                        */
/* ------------------------------------------------------------------------------------ */

static void test_rng_known_answers(void **state)
{
	struct sim_rng r = { .s = { 1, 2, 3, 4 } };
	uint64_t x = 0;

	(void)state;
	/* splitmix64 from 0: Vigna's reference splitmix64.c */
	assert_true(sim_splitmix64(&x) == 0xe220a8397b1dcdafull);
	assert_true(sim_splitmix64(&x) == 0x6e789e6aa1b965f4ull);
	assert_true(sim_splitmix64(&x) == 0x06c45d188009454full);
	/* xoshiro256** from state {1,2,3,4}: rotl(2*5, 7)*9 = 1280*9 = 11520; the next s[1]
	 * is 2 ^ (3 ^ 1) = 0, so the second output is 0 */
	assert_true(sim_rng_next(&r) == 11520);
	assert_true(sim_rng_next(&r) == 0);
	assert_true(sim_rng_next(&r) == 1509978240ull);
	assert_true(sim_rng_next(&r) == 1215971899390074240ull);
	/* FNV-1a 64 test vectors (Fowler/Noll/Vo) */
	assert_true(sim_fnv1a(SIM_FNV_OFFSET, "", 0) == 0xcbf29ce484222325ull);
	assert_true(sim_fnv1a(SIM_FNV_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(sim_fnv1a(SIM_FNV_OFFSET, "foobar", 6) == 0x85944171f73967e8ull);
	/* seeding = four splitmix64 outputs of the seed */
	sim_rng_seed(&r, 0);
	assert_true(r.s[0] == 0xe220a8397b1dcdafull && r.s[2] == 0x06c45d188009454full);
}

static void test_rng_ranges_and_streams(void **state)
{
	struct sim_rng a, b, c;
	int i, same_ab = 1, same_ac = 1, hits_lo = 0, hits_hi = 0;

	(void)state;
	sim_rng_seed(&a, 42);
	assert_true(sim_rng_below(&a, 0) == 0);
	for (i = 0; i < 10000; i++) {
		uint64_t v = sim_rng_below(&a, 3);

		assert_true(v < 3);
		hits_lo += sim_rng_chance_ppm(&a, 0);
		hits_hi += sim_rng_chance_ppm(&a, SIM_PPM);
	}
	assert_int_equal(hits_lo, 0);
	assert_int_equal(hits_hi, 10000);

	sim_rng_stream(&a, 42, SIM_STREAM_LINK(0));
	sim_rng_stream(&b, 42, SIM_STREAM_LINK(0));
	sim_rng_stream(&c, 42, SIM_STREAM_LINK(1));
	for (i = 0; i < 8; i++) {
		uint64_t va = sim_rng_next(&a), vb = sim_rng_next(&b), vc = sim_rng_next(&c);

		same_ab &= va == vb;
		same_ac &= va == vc;
	}
	assert_true(same_ab);
	assert_false(same_ac);
	sim_rng_seed(&b, 42);
	sim_rng_stream(&a, 42, 0);
	assert_false(sim_rng_next(&a) == sim_rng_next(&b));
}

/* below(10): each value 1/10 of the time; binomial sd sqrt(n p (1-p)), 5 sigma. */
static void test_rng_uniform(void **state)
{
	const uint32_t n = 100000;
	double sd = sqrt(n * 0.1 * 0.9);
	uint32_t hist[10] = { 0 }, i;
	struct sim_rng r;

	(void)state;
	sim_rng_seed(&r, 7);
	for (i = 0; i < n; i++)
		hist[sim_rng_below(&r, 10)]++;
	for (i = 0; i < 10; i++)
		if (fabs((double)hist[i] - n / 10.0) > 5 * sd)
			fail_msg("value %u drawn %u times of %u", i, hist[i], n);
}

/* ------------------------------------------------------------------------------------ */
/* one link, each impairment                                                            */
/* ------------------------------------------------------------------------------------ */

static void test_ser_ns(void **state)
{
	(void)state;
	assert_true(sim_ser_ns(1000000000ull, 1000) == 8000);  /* 8000 bits at 1 Gb/s */
	assert_true(sim_ser_ns(100000000ull, 1500) == 120000); /* 12000 bits at 100 Mb/s */
	assert_true(sim_ser_ns(3, 1) == 2666666667ull);        /* 8/3 s, rounded up */
	assert_true(sim_ser_ns(0, 1500) == 0);
}

/* 1 Gb/s, 1 ms, one 1000-byte packet every 10 us: never queued; each arrives once, in
 * order, at k * 10 us + 1 ms + 8 us. */
static void test_clean_link(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 1000000, .bandwidth_bps = 1000000000ull };
	struct pair p;
	uint32_t k;

	(void)state;
	pair_init(&p, 1, &cfg, 50, 1, 10000, 1000, 100);
	pair_run(&p);
	assert_int_equal(p.r.n, 50);
	for (k = 0; k < 50; k++) {
		assert_int_equal(p.r.a[k].seq, k);
		assert_int_equal(p.r.a[k].src, 0);
		assert_int_equal(p.r.a[k].flags, 0);
		assert_int_equal(p.r.a[k].len, 1000);
		assert_int_equal(p.r.a[k].bitdiff, 0);
		assert_true(p.r.a[k].t_ns == k * 10000ull + 1000000 + 8000);
	}
	assert_true(stats(&p, 0)->sent == 50 && stats(&p, 0)->delivered == 50);
	assert_true(stats(&p, 0)->bytes_delivered == 50000);
	assert_true(stats(&p, 0)->dropped_tail + stats(&p, 0)->dropped_random +
		    stats(&p, 0)->dropped_cap == 0);
	assert_true(stats(&p, 0)->qdelay_max_ns == 0 && stats(&p, 0)->qdelay_count == 50);
	assert_true(stats(&p, 0)->max_queue_bytes == 0);
	assert_true(sim_world_now(p.w) == 49 * 10000ull + 1008000);
	pair_fini(&p);
}

/* 20 packets of 1500 bytes at once into 100 Mb/s: 120 us each, back to back: packet k
 * arrives at 5 us + (k + 1) * 120 us after waiting k * 120 us. */
static void test_bandwidth_spacing(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 5000, .bandwidth_bps = 100000000ull };
	const struct sim_link_stats *st;
	struct pair p;
	uint32_t k;

	(void)state;
	pair_init(&p, 2, &cfg, 20, 20, 0, 1500, 100);
	pair_run(&p);
	assert_int_equal(p.r.n, 20);
	for (k = 0; k < 20; k++) {
		assert_int_equal(p.r.a[k].seq, k);
		assert_true(p.r.a[k].t_ns == 5000 + (k + 1) * 120000ull);
		if (k)
			assert_true(p.r.a[k].t_ns - p.r.a[k - 1].t_ns == 120000);
	}
	st = stats(&p, 0);
	assert_true(st->qdelay_max_ns == 19 * 120000ull);
	assert_true(st->qdelay_sum_ns == 190 * 120000ull); /* 0 + 1 + ... + 19 */
	assert_true(st->max_queue_bytes == 19 * 1500);  /* all but the first wait at t = 0 */
	/* waits 0, 120k, ..., 2280k ns. log2 buckets: [0] {0}, [17] {120k}, [18] {240k},
	 * [19] {360k, 480k}, [20] {600k..960k: 4}, [21] {1080k..2040k: 9}, [22] {2160k, 2280k}.
	 * p50 = 10th sample, in bucket 21: bound 2^21 - 1; p99 = 20th: capped by the max. */
	assert_true(st->qdelay_hist[0] == 1 && st->qdelay_hist[21] == 9 && st->qdelay_hist[22] == 2);
	assert_true(sim_link_qdelay_quantile_ns(st, 500000) == (1ull << 21) - 1);
	assert_true(sim_link_qdelay_quantile_ns(st, 990000) == 2280000);
	pair_fini(&p);
}

/* 1 Gb/s (8 us per 1000 bytes), queue 5000 bytes, bursts of 20 at t = 0 and t = 20 us.
 * t = 0: packet 0 goes on the wire at once; 1..5 wait (5000 bytes, starts 8..40 us);
 * 6..19 are tail-dropped (14). t = 20 us: packets starting at 8 and 16 us have left the
 * queue, 3000 bytes wait (starts 24, 32, 40 us); 20 and 21 are accepted (starts 48 and
 * 56 us, queue 4000 then 5000), 22..39 dropped (18). Total: 8 delivered, 32 dropped. */
static void test_tail_drop(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 100000, .bandwidth_bps = 1000000000ull,
				    .queue_limit_bytes = 5000 };
	static const uint32_t seqs[8] = { 0, 1, 2, 3, 4, 5, 20, 21 };
	static const uint64_t ends[8] = { 8000, 16000, 24000, 32000, 40000, 48000, 56000, 64000 };
	struct pair p;
	uint32_t i;

	(void)state;
	pair_init(&p, 3, &cfg, 40, 20, 20000, 1000, 100);
	pair_run(&p);
	assert_int_equal(p.r.n, 8);
	for (i = 0; i < 8; i++) {
		assert_int_equal(p.r.a[i].seq, seqs[i]);
		assert_true(p.r.a[i].t_ns == 100000 + ends[i]);
	}
	assert_true(stats(&p, 0)->dropped_tail == 32);
	assert_true(stats(&p, 0)->sent == 40 && stats(&p, 0)->delivered == 8);
	assert_true(stats(&p, 0)->max_queue_bytes == 5000);
	pair_fini(&p);
}

/* A packet larger than the queue still crosses an idle link (it never waits); the next
 * one, which would wait, does not fit. Then the link drains and accepts again. */
static void test_queue_smaller_than_packet(void **state)
{
	struct sim_link_cfg cfg = { .bandwidth_bps = 1000000000ull, .queue_limit_bytes = 500 };
	struct sim_pkt_info info = { 0 };
	static const uint8_t b[1000];
	struct sim_link l;

	(void)state;
	assert_int_equal(sim_link_init(&l, &cfg, 1, SIM_STREAM_LINK(0)), 0);
	assert_int_equal(sim_link_send(&l, 0, b, sizeof(b), &info, NULL), SIM_SENT);
	assert_int_equal(sim_link_send(&l, 7999, b, sizeof(b), &info, NULL), SIM_DROP_TAIL);
	assert_int_equal(sim_link_send(&l, 7999, b, 400, &info, NULL), SIM_SENT); /* waits */
	assert_int_equal(sim_link_send(&l, 11200, b, sizeof(b), &info, NULL), SIM_SENT);
	assert_true(l.st.dropped_tail == 1 && l.st.max_queue_bytes == 400);
	sim_link_fini(&l);
}

static void test_drop_all(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 1000, .drop_ppm = SIM_PPM };
	struct pair p;

	(void)state;
	pair_init(&p, 4, &cfg, 100, 1, 1000, 200, 100);
	pair_run(&p);
	assert_int_equal(p.r.count, 0);
	assert_true(stats(&p, 0)->dropped_random == 100 && stats(&p, 0)->sent == 100);
	assert_true(stats(&p, 0)->delivered == 0 && stats(&p, 0)->in_flight == 0);
	pair_fini(&p);
}

/* Every packet twice, back to back at the same time; the second copy flagged. */
static void test_dup_all(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 1000, .dup_ppm = SIM_PPM };
	struct pair p;
	uint32_t k;

	(void)state;
	pair_init(&p, 5, &cfg, 100, 1, 1000, 200, 300);
	pair_run(&p);
	assert_int_equal(p.r.n, 200);
	for (k = 0; k < 100; k++) {
		const struct arrival *a = &p.r.a[2 * k], *b = &p.r.a[2 * k + 1];

		assert_int_equal(a->seq, k);
		assert_int_equal(b->seq, k);
		assert_int_equal(a->flags, 0);
		assert_int_equal(b->flags, SIM_PKT_DUP);
		assert_true(a->t_ns == k * 1000ull + 1000 && b->t_ns == a->t_ns);
		assert_int_equal(b->bitdiff, 0);
	}
	assert_true(stats(&p, 0)->duplicated == 100 && stats(&p, 0)->delivered == 200);
	pair_fini(&p);
}

/* 20% of packets held 50 us while one leaves every 10 us: the held ones are passed,
 * but every packet arrives exactly once; held ones at exactly t + 1 us + 50 us. */
static void test_reorder(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 1000, .reorder_ppm = 200000,
				    .reorder_delay_ns = 50000 };
	uint8_t seen[200] = { 0 };
	uint32_t i, flagged = 0, inversions = 0, last_fifo = 0;
	int have_fifo = 0;
	struct pair p;

	(void)state;
	pair_init(&p, 6, &cfg, 200, 1, 10000, 100, 400);
	pair_run(&p);
	assert_int_equal(p.r.n, 200);
	for (i = 0; i < 200; i++) {
		const struct arrival *a = &p.r.a[i];
		uint64_t ideal = a->seq * 10000ull + 1000;

		assert_true(a->seq < 200);
		assert_int_equal(seen[a->seq]++, 0);
		if (i && a->seq < p.r.a[i - 1].seq)
			inversions++;
		if (a->flags & SIM_PKT_REORDER) {
			flagged++;
			assert_true(a->t_ns == ideal + 50000);
		} else {
			assert_true(a->t_ns == ideal);
			assert_true(!have_fifo || a->seq > last_fifo); /* the rest stays FIFO */
			last_fifo = a->seq;
			have_fifo = 1;
		}
	}
	assert_true(inversions > 0);
	assert_true(flagged > 0 && flagged == stats(&p, 0)->reordered);
	pair_fini(&p);
}

static void test_corrupt_one_bit(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 1000, .corrupt_ppm = SIM_PPM };
	struct pair p;
	uint32_t i;

	(void)state;
	/* meta carries the number, so the receiver compares with the true bytes even when
	 * the flipped bit is in the number field */
	pair_init(&p, 7, &cfg, 100, 1, 1000, 64, 200);
	pair_run(&p);
	assert_int_equal(p.r.n, 100);
	for (i = 0; i < 100; i++) {
		assert_int_equal(p.r.a[i].bitdiff, 1);
		assert_int_equal(p.r.a[i].flags, SIM_PKT_CORRUPT);
	}
	assert_true(stats(&p, 0)->corrupted == 100);
	pair_fini(&p);
}

/* Jitter up to 50 us on a 10 us pace, no reorder: arrivals stay in order, each within
 * [ideal, ideal + jitter], and the jitter does show. */
static void test_jitter_keeps_order(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 1000, .jitter_ns = 50000 };
	uint32_t i, late = 0;
	struct pair p;

	(void)state;
	pair_init(&p, 8, &cfg, 500, 1, 10000, 100, 600);
	pair_run(&p);
	assert_int_equal(p.r.n, 500);
	for (i = 0; i < 500; i++) {
		uint64_t ideal = i * 10000ull + 1000;

		assert_int_equal(p.r.a[i].seq, i);
		assert_true(p.r.a[i].t_ns >= ideal && p.r.a[i].t_ns <= ideal + 50000);
		late += p.r.a[i].t_ns > ideal;
	}
	assert_true(late > 250); /* P(no extra delay) is 1/50001 per packet */
	pair_fini(&p);
}

/* Drop 10% and duplicate 5% of n packets. Drops are Binomial(n, 0.1): sd = sqrt(n p q),
 * ~95 for n = 100000; 5 sigma leaves a false alarm rate below 1e-6. Duplicates of the
 * survivors: Binomial(n - drops, 0.05), same bound. */
static void test_drop_rate_statistical(void **state)
{
	struct sim_link_cfg cfg = { .drop_ppm = 100000, .dup_ppm = 50000 };
	const uint32_t n = quick() ? 20000 : 100000;
	const struct sim_link_stats *st;
	double sd, m;
	struct pair p;

	(void)state;
	pair_init(&p, 9, &cfg, n, 1, 1000, 32, 0);
	pair_run(&p);
	st = stats(&p, 0);
	sd = sqrt(n * 0.1 * 0.9);
	if (fabs((double)st->dropped_random - n * 0.1) > 5 * sd)
		fail_msg("dropped %llu of %u, expected %.0f +- %.0f",
			 (unsigned long long)st->dropped_random, n, n * 0.1, 5 * sd);
	m = (double)(n - st->dropped_random);
	sd = sqrt(m * 0.05 * 0.95);
	if (fabs((double)st->duplicated - m * 0.05) > 5 * sd)
		fail_msg("duplicated %llu of %.0f", (unsigned long long)st->duplicated, m);
	assert_true(p.r.count == n - st->dropped_random + st->duplicated);
	assert_true(st->delivered == p.r.count);
	pair_fini(&p);
}

/* ------------------------------------------------------------------------------------ */
/* determinism                                                                          */
/* ------------------------------------------------------------------------------------ */

static const struct sim_link_cfg messy = {
	.latency_ns = 20000, .jitter_ns = 7000, .bandwidth_bps = 10000000000ull,
	.queue_limit_bytes = 20000, .drop_ppm = 30000, .dup_ppm = 20000, .reorder_ppm = 50000,
	.reorder_delay_ns = 30000, .corrupt_ppm = 10000,
};

static uint64_t messy_hash(uint64_t seed, int poison)
{
	struct pair p;
	uint64_t h;

	pair_init(&p, seed, &messy, 2000, 8, 3000, 1200, 0);
	p.s.poison = poison;
	pair_run(&p);
	h = sim_world_trace_hash(p.w);
	assert_true(stats(&p, 0)->dropped_tail > 0 && stats(&p, 0)->dropped_random > 0);
	pair_fini(&p);
	return h;
}

static void test_same_seed_same_trace(void **state)
{
	uint64_t a = messy_hash(0x1234, -1);

	(void)state;
	assert_true(a != SIM_FNV_OFFSET);
	assert_true(messy_hash(0x1234, -1) == a);
	assert_true(messy_hash(0x1235, -1) != a);
	assert_true(messy_hash(0x1234, 7) != a); /* one byte of packet 7 differs */
}

/* Link 0 behaves the same whether or not more links exist after it. */
static void test_link_streams_independent(void **state)
{
	static const struct sim_link_cfg clean;
	struct sender s2 = { .total = 300, .burst = 1, .len = 100, .interval_ns = 1000, .poison = -1 };
	struct receiver r2 = { .cap = 400 };
	struct pair a, b;
	uint32_t i, differ = 0;

	(void)state;
	r2.a = calloc(r2.cap, sizeof(*r2.a));
	assert_non_null(r2.a);
	pair_init(&a, 77, &messy, 300, 1, 1000, 100, 400);
	pair_run(&a);
	pair_init(&b, 77, &messy, 300, 1, 1000, 100, 400);
	assert_int_equal(sim_world_add_endpoint(b.w, &sender_ops, &s2), 2);
	assert_int_equal(sim_world_add_endpoint(b.w, &receiver_ops, &r2), 3);
	assert_int_equal(sim_world_connect(b.w, 2, 3, &messy, &clean), 2);
	pair_run(&b);
	assert_int_equal(a.r.n, b.r.n);
	for (i = 0; i < a.r.n; i++) {
		assert_int_equal(a.r.a[i].seq, b.r.a[i].seq);
		assert_true(a.r.a[i].t_ns == b.r.a[i].t_ns);
		assert_int_equal(a.r.a[i].flags, b.r.a[i].flags);
	}
	/* the new link has a stream of its own: same traffic, other fates */
	for (i = 0; i < a.r.n && i < r2.n; i++)
		differ += a.r.a[i].seq != r2.a[i].seq || a.r.a[i].flags != r2.a[i].flags;
	assert_true(differ > 0 || a.r.n != r2.n);
	pair_fini(&a);
	pair_fini(&b);
	free(r2.a);
}

/* ------------------------------------------------------------------------------------ */
/* bounds                                                                               */
/* ------------------------------------------------------------------------------------ */

/* 100 packets: 100 sends, 100 deliveries, 100 sender timers. max_events 10 stops after
 * exactly 10; a second run finishes the job with nothing lost or doubled. */
static void test_bound_max_events(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 1000 };
	struct sim_run_result res;
	struct pair p;
	uint32_t k;

	(void)state;
	pair_init(&p, 10, &cfg, 100, 1, 1000, 100, 200);
	assert_int_equal(sim_world_run(p.w, UINT64_MAX, 10, &res), SIM_STOP_MAX_EVENTS);
	assert_int_equal(res.stop, SIM_STOP_MAX_EVENTS);
	assert_true(res.events == 10 && sim_world_events(p.w) == 10);
	assert_string_equal(sim_stop_name(res.stop), "max_events reached");
	assert_true(p.r.count < 100);
	assert_int_equal(sim_world_run(p.w, UINT64_MAX, 1000000, &res), SIM_STOP_IDLE);
	/* the instant that was cut short may see the sender's timer once more */
	assert_true(sim_world_events(p.w) >= 300 && sim_world_events(p.w) <= 301);
	assert_true(stats(&p, 0)->sent == 100 && stats(&p, 0)->delivered == 100);
	assert_int_equal(p.r.n, 100);
	for (k = 0; k < 100; k++)
		assert_int_equal(p.r.a[k].seq, k);
	pair_fini(&p);
}

/* Packet k leaves at k * 10 us and arrives 1 ms later. Stopping at 495 us: 50 sent
 * (0..490 us), none arrived, clock at exactly 495 us. */
static void test_bound_until(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 1000000 };
	struct sim_run_result res;
	struct pair p;

	(void)state;
	pair_init(&p, 11, &cfg, 100, 1, 10000, 100, 200);
	assert_int_equal(sim_world_run(p.w, 495000, 1000000, &res), SIM_STOP_UNTIL);
	assert_true(res.now_ns == 495000 && sim_world_now(p.w) == 495000);
	assert_int_equal(p.s.next, 50);
	assert_int_equal(p.r.count, 0);
	assert_true(stats(&p, 0)->in_flight == 50);
	assert_int_equal(sim_world_run(p.w, UINT64_MAX, 1000000, &res), SIM_STOP_IDLE);
	assert_int_equal(p.r.n, 100);
	assert_true(res.now_ns == 99 * 10000ull + 1000000);
	pair_fini(&p);
}

/* A sender that always has something: the burst bound and max_events stop it. */
static int flood_poll(void *ctx, uint64_t now, uint8_t *buf, uint32_t cap,
		      struct sim_pkt_info *info)
{
	(void)ctx, (void)now, (void)cap, (void)info;
	memset(buf, 0xab, 64);
	return 64;
}

static void test_bound_livelock(void **state)
{
	struct sim_endpoint_ops flood = sender_ops;
	struct sim_link_cfg cfg = { .latency_ns = 1000 };
	struct sim_run_result res;
	struct sender s = { .total = 0, .burst = 1 };
	struct receiver r = { .cap = 0 };
	struct sim_world *w = sim_world_new(12);

	(void)state;
	flood.poll_tx = flood_poll;
	assert_int_equal(sim_world_add_endpoint(w, &flood, &s), 0);
	assert_int_equal(sim_world_add_endpoint(w, &receiver_ops, &r), 1);
	assert_int_equal(sim_world_connect(w, 0, 1, &cfg, &cfg), 0);
	assert_int_equal(sim_world_run(w, UINT64_MAX, 3 * SIM_TX_BURST_MAX, &res),
			 SIM_STOP_MAX_EVENTS);
	assert_true(res.now_ns == 0); /* time never advanced: all sends at t = 0 */
	assert_true(sim_world_link(w, 0)->st.sent == 3 * SIM_TX_BURST_MAX);
	sim_world_free(w);
}

/* More than SIM_LINK_MAX_INFLIGHT packets in flight on one link: the rest are counted. */
static void test_bound_inflight_cap(void **state)
{
	struct sim_link_cfg cfg = { .latency_ns = 1000000000 };
	struct sim_pkt_info info = { 0 };
	uint8_t b[16] = { 1 };
	struct sim_link l;
	uint32_t i;

	(void)state;
	assert_int_equal(sim_link_init(&l, &cfg, 1, SIM_STREAM_LINK(0)), 0);
	for (i = 0; i < SIM_LINK_MAX_INFLIGHT; i++)
		assert_int_equal(sim_link_send(&l, i, b, sizeof(b), &info, NULL), SIM_SENT);
	for (i = 0; i < 10; i++)
		assert_int_equal(sim_link_send(&l, SIM_LINK_MAX_INFLIGHT, b, sizeof(b), &info, NULL),
				 SIM_DROP_CAP);
	assert_true(l.st.dropped_cap == 10 && l.st.in_flight == SIM_LINK_MAX_INFLIGHT);
	sim_link_fini(&l);
}

/* ------------------------------------------------------------------------------------ */
/* errors, topology, seed helpers                                                       */
/* ------------------------------------------------------------------------------------ */

static void test_link_errors(void **state)
{
	struct sim_link_cfg cfg = { 0 }, bad = { .drop_ppm = SIM_PPM + 1 };
	struct sim_pkt_info info = { 0 };
	static uint8_t big[SIM_PKT_MAX_BYTES + 1];
	uint64_t arrive = 0;
	struct sim_link l;

	(void)state;
	assert_int_equal(sim_link_cfg_check(&bad), -EINVAL);
	bad = (struct sim_link_cfg){ .jitter_ns = SIM_LINK_MAX_DELAY_NS + 1 };
	assert_int_equal(sim_link_init(&l, &bad, 1, 0), -EINVAL);
	assert_int_equal(sim_link_init(&l, &cfg, 1, 0), 0);
	assert_int_equal(sim_link_send(&l, 5, big, 0, &info, &arrive), -EINVAL);
	assert_true(arrive == UINT64_MAX);
	assert_int_equal(sim_link_send(&l, 5, big, sizeof(big), &info, NULL), -EMSGSIZE);
	assert_int_equal(sim_link_send(&l, 5, big, SIM_PKT_MAX_BYTES, &info, &arrive), SIM_SENT);
	assert_true(arrive == 5);
	assert_int_equal(sim_link_send(&l, 4, big, 10, &info, NULL), -EINVAL); /* backwards */
	assert_true(l.st.sent == 1);
	assert_null(sim_link_pop_due(&l, 4));
	sim_pkt_free(sim_link_pop_due(&l, 5));
	assert_true(l.st.delivered == 1 && sim_link_next_ns(&l) == UINT64_MAX);
	sim_link_fini(&l);
}

static int bad_on_packet(void *ctx, uint64_t now, const uint8_t *d, uint32_t len,
			 const struct sim_pkt_info *info)
{
	(void)ctx, (void)now, (void)d, (void)len, (void)info;
	return -EBADMSG;
}

static void test_world_errors(void **state)
{
	struct sim_endpoint_ops bad = receiver_ops, incomplete = receiver_ops;
	struct sim_link_cfg cfg = { .latency_ns = 10 };
	struct sender s = { .total = 3, .burst = 1, .len = 10, .interval_ns = 100, .poison = -1 };
	struct receiver r = { .cap = 0 };
	struct sim_run_result res;
	struct sim_world *w = sim_world_new(13);
	uint32_t hops[2] = { 0, 7 };

	(void)state;
	incomplete.poll_tx = NULL;
	bad.on_packet = bad_on_packet;
	assert_int_equal(sim_world_add_endpoint(w, &incomplete, &r), -EINVAL);
	assert_int_equal(sim_world_add_endpoint(w, &sender_ops, &s), 0);
	assert_int_equal(sim_world_add_endpoint(w, &bad, &r), 1);
	assert_int_equal(sim_world_connect(w, 0, 0, &cfg, &cfg), -EINVAL);
	assert_int_equal(sim_world_set_route(w, 0, 1, hops, 2), -EINVAL); /* no link 0 yet */
	/* no route to the peer yet: the sender's first packet stops the run */
	assert_int_equal(sim_world_set_peer(w, 0, 1), 0);
	assert_int_equal(sim_world_run(w, UINT64_MAX, 100, &res), SIM_STOP_ERROR);
	assert_true(res.err == -EHOSTUNREACH && res.err_endpoint == 0);
	/* with a route, the receiver's error stops it */
	assert_int_equal(sim_world_connect(w, 0, 1, &cfg, &cfg), 0);
	assert_int_equal(sim_world_run(w, UINT64_MAX, 100, &res), SIM_STOP_ERROR);
	assert_true(res.err == -EBADMSG && res.err_endpoint == 1);
	assert_true(res.now_ns == 110); /* packet 0 was refused at t = 0; packet 1 sent at 100 */
	sim_world_free(w);
}

/* Two senders, each through its own infinite access link, into one shared 1 Gb/s
 * bottleneck (1 us) to a receiver: 10 packets of 1000 bytes queue in it and leave every
 * 8 us; sender 0's burst first (endpoint order, then link order). */
static void test_shared_bottleneck(void **state)
{
	struct sim_link_cfg access = { 0 }, shared = { .latency_ns = 1000,
						       .bandwidth_bps = 1000000000ull };
	struct sender s0 = { .total = 5, .burst = 5, .len = 1000, .poison = -1 };
	struct sender s1 = s0;
	struct receiver r = { .cap = 20 };
	struct sim_world *w = sim_world_new(14);
	uint32_t route0[2] = { 0, 2 }, route1[2] = { 1, 2 }, i;

	(void)state;
	r.a = calloc(r.cap, sizeof(*r.a));
	assert_non_null(r.a);
	assert_int_equal(sim_world_add_endpoint(w, &sender_ops, &s0), 0);
	assert_int_equal(sim_world_add_endpoint(w, &sender_ops, &s1), 1);
	assert_int_equal(sim_world_add_endpoint(w, &receiver_ops, &r), 2);
	assert_int_equal(sim_world_add_link(w, &access), 0);
	assert_int_equal(sim_world_add_link(w, &access), 1);
	assert_int_equal(sim_world_add_link(w, &shared), 2);
	assert_int_equal(sim_world_set_route(w, 0, 2, route0, 2), 0);
	assert_int_equal(sim_world_set_route(w, 1, 2, route1, 2), 0);
	assert_int_equal(sim_world_set_peer(w, 0, 2), 0);
	assert_int_equal(sim_world_set_peer(w, 1, 2), 0);
	assert_int_equal(sim_world_run(w, UINT64_MAX, 1000, NULL), SIM_STOP_IDLE);
	assert_int_equal(r.n, 10);
	for (i = 0; i < 10; i++) {
		assert_int_equal(r.a[i].src, i / 5);
		assert_int_equal(r.a[i].seq, i % 5);
		assert_true(r.a[i].t_ns == 1000 + (i + 1) * 8000ull);
	}
	assert_true(sim_world_link(w, 2)->st.sent == 10);
	assert_true(sim_world_link(w, 2)->st.max_queue_bytes == 9000);
	assert_null(sim_world_link(w, 3));
	sim_world_free(w);
	free(r.a);
}

static int fail_on_7(uint64_t seed, void *arg)
{
	(*(int *)arg)++;
	return seed == 7 ? 3 : 0;
}

static void test_seed_helpers(void **state)
{
	char *a1[] = { "prog", "--seed", "0x10", NULL };
	char *a2[] = { "prog", "--first=5", "--seeds", "3", "--other", NULL };
	char *a3[] = { "prog", "--seeds", "x1", NULL };
	char *a4[] = { "prog", "--first", NULL };
	char *a5[] = { "prog", "--seeds", "0", NULL };
	struct sim_seed_opts o;
	char line[128], *out = NULL;
	size_t out_len = 0;
	FILE *fp;
	int calls = 0;

	(void)state;
	unsetenv("FALCON_SIM_SEED");
	unsetenv("FALCON_SIM_FIRST");
	unsetenv("FALCON_SIM_SEEDS");
	assert_int_equal(sim_seed_opts_parse(&o, 3, a1, 100), 0);
	assert_true(o.first == 16 && o.count == 1);
	assert_int_equal(sim_seed_opts_parse(&o, 5, a2, 100), 0);
	assert_true(o.first == 5 && o.count == 3);
	assert_int_equal(sim_seed_opts_parse(&o, 3, a3, 100), -EINVAL);
	assert_int_equal(sim_seed_opts_parse(&o, 2, a4, 100), -EINVAL);
	assert_int_equal(sim_seed_opts_parse(&o, 3, a5, 100), -EINVAL);
	assert_int_equal(sim_seed_opts_parse(&o, 1, a1, 100), 0);
	assert_true(o.first == 1 && o.count == (quick() ? 10u : 100u));
	setenv("FALCON_SIM_SEED", "0xabc", 1);
	assert_int_equal(sim_seed_opts_parse(&o, 1, a1, 100), 0);
	assert_true(o.first == 0xabc && o.count == 1);
	unsetenv("FALCON_SIM_SEED");

	sim_replay_line(line, sizeof(line), "./x", 0x1234);
	assert_string_equal(line, "replay: FALCON_SIM_SEED=0x1234 ./x --seed 0x1234");

	fp = open_memstream(&out, &out_len);
	assert_non_null(fp);
	o = (struct sim_seed_opts){ .first = 5, .count = 10 };
	assert_int_equal(sim_run_seeds(&o, "./x", fail_on_7, &calls, fp), 1);
	fclose(fp);
	assert_int_equal(calls, 3); /* 5, 6, 7, then stop */
	assert_non_null(strstr(out, "sim: seed 0x7 FAILED (rc 3)\n"
				    "replay: FALCON_SIM_SEED=0x7 ./x --seed 0x7\n"));
	assert_non_null(strstr(out, "sim: 2 passed, 1 failed\n"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rng_known_answers),
		cmocka_unit_test(test_rng_ranges_and_streams),
		cmocka_unit_test(test_rng_uniform),
		cmocka_unit_test(test_ser_ns),
		cmocka_unit_test(test_clean_link),
		cmocka_unit_test(test_bandwidth_spacing),
		cmocka_unit_test(test_tail_drop),
		cmocka_unit_test(test_queue_smaller_than_packet),
		cmocka_unit_test(test_drop_all),
		cmocka_unit_test(test_dup_all),
		cmocka_unit_test(test_reorder),
		cmocka_unit_test(test_corrupt_one_bit),
		cmocka_unit_test(test_jitter_keeps_order),
		cmocka_unit_test(test_drop_rate_statistical),
		cmocka_unit_test(test_same_seed_same_trace),
		cmocka_unit_test(test_link_streams_independent),
		cmocka_unit_test(test_bound_max_events),
		cmocka_unit_test(test_bound_until),
		cmocka_unit_test(test_bound_livelock),
		cmocka_unit_test(test_bound_inflight_cap),
		cmocka_unit_test(test_link_errors),
		cmocka_unit_test(test_world_errors),
		cmocka_unit_test(test_shared_bottleneck),
		cmocka_unit_test(test_seed_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
