/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim.h - falcon's deterministic network simulator: the world the protocol engine runs in
 * during tests. Pure virtual time (uint64_t nanoseconds), no clocks, no threads, no
 * sockets; every random decision comes from a PRNG seeded per run, so one seed gives one
 * event trace, bit for bit, and a failing run is replayed by its seed.
 * (Models: picoquic sim_link.c, TigerBeetle src/testing/packet_simulator.zig.)
 *
 * Pieces:
 *   sim_rng    xoshiro256** seeded through splitmix64; independent sub-streams per link
 *              and per endpoint, derived from the run seed and a stream key.
 *   sim_link   ONE direction of a path: a serializer (bandwidth, tail-drop queue) then a
 *              wire (latency, jitter, random drop / duplicate / reorder / corrupt).
 *   sim_world  endpoints (callback tables, e.g. an engine instance each), links, routes
 *              and the event loop; a running FNV-1a hash of every event.
 *   sim_seeds  test-main helpers: --seed / --seeds / --first, replay line, summary.
 *
 * Topology: endpoints 0..N-1 and links 0..L-1 are created separately; a route maps an
 * ordered endpoint pair (src, dst) to a path of 1..SIM_ROUTE_MAX_HOPS links. A packet an
 * endpoint emits names its destination; the world sends it down the route's first link
 * and, on each delivery, into the next one. sim_world_connect() is the one-line point-to-
 * point case (two links, two one-hop routes, each endpoint's default peer set). A
 * bottleneck: give N senders their own access link each plus one shared link, and route
 * i -> R over {access_i, shared}; the shared link's serializer queues them all.
 *
 * Per-packet pipeline in a link, at the time the packet enters it (now):
 *   1. hard cap: more than SIM_LINK_MAX_INFLIGHT packets in flight -> dropped_cap
 *   2. queue: if the serializer is busy, the packet waits; if the bytes waiting (not yet
 *      started, the one being serialized excluded) plus this one exceed queue_limit_bytes
 *      -> dropped_tail (the packet does not occupy the serializer)
 *   3. serialization: start = max(now, end of the previous packet), takes
 *      ceil(len * 8e9 / bandwidth_bps) ns (0 when bandwidth_bps is 0 = infinite)
 *   4. wire, in this order: random drop (dropped_random; it did use the serializer),
 *      arrival = end of serialization + latency + uniform[0, jitter_ns]; FIFO is kept
 *      (arrival = max(arrival, previous FIFO arrival)) unless the packet is chosen for
 *      reorder, which adds reorder_delay_ns and lets later packets pass it; corruption
 *      flips one random bit of the copy; duplication adds a second copy of the (possibly
 *      corrupted) bytes arriving right after the original (same time, next sequence).
 * Every packet consumes exactly SIM_LINK_DRAWS_PER_PKT draws of the link's stream,
 * whatever the configuration and the outcome, so changing one probability does not
 * shift the random decisions of the others.
 */
#ifndef FC_SIM_H
#define FC_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------------------------ */
/* Limits: every queue and loop has one of these                                        */
/* ------------------------------------------------------------------------------------ */
#define SIM_PKT_MAX_BYTES 9216u        /* largest packet a link carries (jumbo frame) */
#define SIM_LINK_MAX_INFLIGHT 65536u   /* packets in flight on one link, duplicates incl. */
#define SIM_LINK_HARD_QUEUE_BYTES (64u << 20) /* queue limit when queue_limit_bytes = 0 */
#define SIM_LINK_MAX_DELAY_NS 1000000000000ull /* latency, jitter, reorder delay: <= 1000 s */
#define SIM_PPM 1000000u               /* probabilities are parts per million */
#define SIM_LINK_DRAWS_PER_PKT 6u      /* rng draws per packet (see the pipeline above) */
#define SIM_QDELAY_BUCKETS 48u         /* log2 histogram of queueing delays */
#define SIM_WORLD_MAX_ENDPOINTS 64u
#define SIM_WORLD_MAX_LINKS 256u
#define SIM_ROUTE_MAX_HOPS 4u
#define SIM_TX_BURST_MAX 4096u         /* poll_tx calls per endpoint per step */
#define SIM_NO_DST UINT32_MAX          /* endpoint without a default peer */

/* ------------------------------------------------------------------------------------ */
/* PRNG                                                                                 */
/* ------------------------------------------------------------------------------------ */
struct sim_rng {
	uint64_t s[4]; /* xoshiro256** state, never all zero */
};

/* Stream keys: sub-streams are keyed, not numbered in creation order of everything, so
 * that adding an endpoint or a link does not change the streams of the others. */
#define SIM_STREAM_LINK(id) (0x4c494e4b00000000ull | (uint64_t)(id))     /* "LINK" */
#define SIM_STREAM_ENDPOINT(i) (0x454e445000000000ull | (uint64_t)(i))  /* "ENDP" */

/* One step of splitmix64: advances *x and returns the next output. */
uint64_t sim_splitmix64(uint64_t *x);
/* Seed from one 64-bit seed: the state is four splitmix64 outputs of the seed. */
void sim_rng_seed(struct sim_rng *r, uint64_t seed);
/* Independent sub-stream `stream` of run seed `seed` (stream 0 is not sim_rng_seed). */
void sim_rng_stream(struct sim_rng *r, uint64_t seed, uint64_t stream);
uint64_t sim_rng_next(struct sim_rng *r);
/* Uniform in [0, n), one draw, n == 0 gives 0. Multiply-high mapping: no rejection loop
 * (so the number of draws is fixed); bias below n / 2^64. */
uint64_t sim_rng_below(struct sim_rng *r, uint64_t n);
/* True with probability ppm / 1e6 (ppm >= 1e6: always). One draw, integers only. */
int sim_rng_chance_ppm(struct sim_rng *r, uint32_t ppm);

/* FNV-1a 64 over n bytes, continuing from h (start with SIM_FNV_OFFSET). */
#define SIM_FNV_OFFSET 0xcbf29ce484222325ull
uint64_t sim_fnv1a(uint64_t h, const void *p, size_t n);

/* ------------------------------------------------------------------------------------ */
/* Link: one direction                                                                  */
/* ------------------------------------------------------------------------------------ */
struct sim_link_cfg {
	uint64_t latency_ns;        /* propagation delay after serialization */
	uint64_t jitter_ns;         /* extra uniform [0, jitter_ns]; keeps FIFO order */
	uint64_t bandwidth_bps;     /* serialization rate; 0 = infinite */
	uint32_t queue_limit_bytes; /* bytes waiting for the serializer; 0 = hard cap */
	uint32_t drop_ppm;          /* random loss on the wire */
	uint32_t dup_ppm;           /* duplicate (a second copy right after the original) */
	uint32_t reorder_ppm;       /* chosen packets get reorder_delay_ns extra ... */
	uint64_t reorder_delay_ns;  /* ... and are passed by later packets */
	uint32_t corrupt_ppm;       /* flip one random bit of the delivered copy */
};

/* Per-link statistics. sent = offered; every offered packet ends in exactly one of
 * dropped_cap, dropped_tail, dropped_random or in flight (then delivered, or still in
 * flight). Duplicate copies add to delivered, not to sent. */
struct sim_link_stats {
	uint64_t sent, delivered, in_flight;
	uint64_t bytes_sent, bytes_delivered;
	uint64_t dropped_tail, dropped_random, dropped_cap;
	uint64_t duplicated, reordered, corrupted;
	uint64_t max_queue_bytes;          /* most bytes ever waiting for the serializer */
	uint64_t qdelay_max_ns, qdelay_sum_ns, qdelay_count; /* serializer waiting times */
	uint64_t qdelay_hist[SIM_QDELAY_BUCKETS]; /* [0]: 0 ns, [k]: [2^(k-1), 2^k) ns */
};

/* Packet flags, set by the link. */
#define SIM_PKT_DUP 0x1u      /* the duplicate copy */
#define SIM_PKT_CORRUPT 0x2u  /* one bit flipped */
#define SIM_PKT_REORDER 0x4u  /* delayed to be passed */

/* What travels with a packet besides its bytes. */
struct sim_pkt_info {
	uint64_t meta;  /* opaque word from the sender (e.g. its transmit time) */
	uint32_t src;   /* sending endpoint */
	uint32_t dst;   /* destination endpoint */
	uint32_t hop;   /* index of the current link in the route */
	uint32_t flags; /* SIM_PKT_*, accumulated over the hops */
};

/* A packet in flight; owned by the link until sim_link_pop_due hands it out, then by the
 * caller (release with sim_pkt_free). */
struct sim_pkt {
	uint64_t deliver_ns; /* arrival time at the link's far end */
	uint64_t seq;        /* per-link, strictly increasing: the tie-break */
	struct sim_pkt_info info;
	uint32_t len;
	uint8_t data[];
};

/* Verdict of sim_link_send (non-negative) */
enum sim_verdict {
	SIM_SENT = 0,         /* in flight (and maybe duplicated) */
	SIM_DROP_TAIL,
	SIM_DROP_RANDOM,
	SIM_DROP_CAP,
};

struct sim_ser_slot { /* a packet waiting for the serializer */
	uint64_t start_ns;
	uint32_t len;
};

struct sim_link {
	struct sim_link_cfg cfg;
	struct sim_rng rng;
	struct sim_link_stats st;
	uint64_t next_seq;
	uint64_t last_now_ns;      /* sends must come in non-decreasing time */
	uint64_t busy_until_ns;    /* serializer busy until (end of last accepted packet) */
	uint64_t fifo_ns;          /* latest arrival of a non-reordered packet */
	struct sim_pkt **heap;     /* min-heap on (deliver_ns, seq) */
	uint32_t heap_len, heap_cap;
	struct sim_ser_slot *ser;  /* ring: packets waiting for the serializer, FIFO */
	uint32_t ser_head, ser_len, ser_cap;
	uint64_t ser_bytes;        /* sum of the ring's lengths */
};

/* Check a configuration. Returns 0 or -EINVAL (a ppm above 1e6, a delay above
 * SIM_LINK_MAX_DELAY_NS, a queue limit above SIM_LINK_HARD_QUEUE_BYTES). */
int sim_link_cfg_check(const struct sim_link_cfg *cfg);
/* Initialise with the stream `stream` of `seed`. Returns 0 or -EINVAL (bad cfg). No
 * allocation until the first packet. */
int sim_link_init(struct sim_link *l, const struct sim_link_cfg *cfg, uint64_t seed,
		  uint64_t stream);
/* Release every packet in flight and the buffers. */
void sim_link_fini(struct sim_link *l);
/* Change the configuration mid-run (packets in flight keep their times). 0 / -EINVAL. */
int sim_link_set_cfg(struct sim_link *l, const struct sim_link_cfg *cfg);
/* Offer a packet at now_ns; the link copies data. Returns a sim_verdict, -EINVAL
 * (len 0, time going backwards), -EMSGSIZE (len > SIM_PKT_MAX_BYTES) or -ENOMEM; the
 * errors leave the link unchanged and count nothing. If pkt_deliver_ns is not NULL it
 * receives the arrival time (UINT64_MAX when dropped). */
int sim_link_send(struct sim_link *l, uint64_t now_ns, const void *data, uint32_t len,
		  const struct sim_pkt_info *info, uint64_t *pkt_deliver_ns);
/* Arrival time of the next packet, UINT64_MAX when none in flight. */
uint64_t sim_link_next_ns(const struct sim_link *l);
/* The next packet due at now_ns (deliver_ns <= now_ns), earliest (deliver_ns, seq)
 * first, or NULL. Counts it delivered. The caller owns it. */
struct sim_pkt *sim_link_pop_due(struct sim_link *l, uint64_t now_ns);
void sim_pkt_free(struct sim_pkt *p);
/* Serialization time of len bytes: ceil(len * 8e9 / bps), 0 when bps is 0. */
uint64_t sim_ser_ns(uint64_t bps, uint32_t len);
/* Upper bound of the histogram bucket holding the q-th ppm quantile (q = 990000: p99)
 * of the queueing delays, 0 without samples. */
uint64_t sim_link_qdelay_quantile_ns(const struct sim_link_stats *st, uint32_t q_ppm);

/* ------------------------------------------------------------------------------------ */
/* Endpoints and world                                                                  */
/* ------------------------------------------------------------------------------------ */
/*
 * An endpoint: a table of callbacks over an opaque ctx (for falcon: one host's engine).
 * All callbacks get the world's current virtual time. A negative return from a callback
 * stops the run with SIM_STOP_ERROR (use it for invariant violations found by the
 * endpoint: the seed is then printed and the run replayed).
 */
struct sim_endpoint_ops {
	/* A packet arrived; data is valid during the call only. info: src, dst, meta of the
	 * sender, flags of what the links did to it. Returns 0 or a negative errno. */
	int (*on_packet)(void *ctx, uint64_t now_ns, const uint8_t *data, uint32_t len,
			 const struct sim_pkt_info *info);
	/* Earliest time the endpoint wants on_timer; UINT64_MAX for none. A time in the past
	 * means now. Must not change state. */
	uint64_t (*next_deadline)(void *ctx);
	/* The deadline passed. Returns 0 or a negative errno. */
	int (*on_timer)(void *ctx, uint64_t now_ns);
	/* Write the next packet to send into buf (cap = SIM_PKT_MAX_BYTES) and return its
	 * length, 0 when nothing to send now, a negative errno to stop the run. info->dst
	 * arrives set to the endpoint's default peer and info->meta to now_ns; change either
	 * if needed. Called until it returns 0, at most SIM_TX_BURST_MAX times per step. */
	int (*poll_tx)(void *ctx, uint64_t now_ns, uint8_t *buf, uint32_t cap,
		       struct sim_pkt_info *info);
};

/* Why sim_world_run returned */
enum sim_stop {
	SIM_STOP_IDLE = 0,   /* nothing in flight, no deadline, nothing to send */
	SIM_STOP_UNTIL,      /* the next event is after until_ns; now = until_ns */
	SIM_STOP_MAX_EVENTS, /* the event budget of this call is spent */
	SIM_STOP_ERROR,      /* a callback or the routing failed; see the result */
};

struct sim_run_result {
	enum sim_stop stop;
	uint64_t now_ns;  /* virtual time at return */
	uint64_t events;  /* events processed by this call */
	int err;          /* SIM_STOP_ERROR: the negative errno */
	int err_endpoint; /* SIM_STOP_ERROR: the endpoint at fault, -1 if none */
};

/* Trace event kinds, hashed and (with SIM_TRACE=1) printed */
enum sim_event {
	SIM_EV_TX = 1,  /* a = src endpoint, b = dst, x = hash(bytes, meta) */
	SIM_EV_LINK,    /* a = link, b = verdict, x = arrival time or UINT64_MAX */
	SIM_EV_DELIVER, /* a = link, b = dst endpoint, x = hash(bytes, meta, flags) */
	SIM_EV_FORWARD, /* a = link delivered from, b = next link, x = hash(bytes) */
	SIM_EV_TIMER,   /* a = endpoint */
};

struct sim_world;

/* A world with run seed `seed`. Tracing to stderr if the environment has SIM_TRACE=1.
 * Returns NULL and sets errno (ENOMEM). */
struct sim_world *sim_world_new(uint64_t seed);
/* Frees the world and every packet in flight; endpoint contexts stay the caller's. */
void sim_world_free(struct sim_world *w);
/* Returns the endpoint's index, -ENOSPC (SIM_WORLD_MAX_ENDPOINTS) or -EINVAL (an ops
 * callback is NULL). */
int sim_world_add_endpoint(struct sim_world *w, const struct sim_endpoint_ops *ops, void *ctx);
/* Returns the link's id, -ENOSPC (SIM_WORLD_MAX_LINKS) or -EINVAL (bad cfg). Link id k
 * draws from stream SIM_STREAM_LINK(k) of the run seed. */
int sim_world_add_link(struct sim_world *w, const struct sim_link_cfg *cfg);
/* Packets from src to dst travel links[0], ..., links[nhops - 1]. Replaces an earlier
 * route. Returns 0 or -EINVAL (unknown endpoint or link, nhops 0 or above
 * SIM_ROUTE_MAX_HOPS). */
int sim_world_set_route(struct sim_world *w, uint32_t src, uint32_t dst, const uint32_t *links,
			uint32_t nhops);
/* Default destination of src's packets (info->dst preset for poll_tx). 0 / -EINVAL. */
int sim_world_set_peer(struct sim_world *w, uint32_t src, uint32_t dst);
/* Point to point: a link a->b (cfg_ab) and b->a (cfg_ba), the two routes, and each side's
 * default peer if it had none. Returns the id of link a->b (b->a is that + 1) or the
 * errors of the calls above. */
int sim_world_connect(struct sim_world *w, uint32_t a, uint32_t b,
		      const struct sim_link_cfg *cfg_ab, const struct sim_link_cfg *cfg_ba);

/* Run from the current time: first poll every endpoint's poll_tx (the caller may have
 * given them work between runs), then loop. Stops when nothing is left to do, when the
 * next event would come after until_ns, or when max_events events (sends, deliveries,
 * forwards, timers) were processed by this call, whichever first; res (may be NULL) says
 * which. May be called again to continue.
 * Order within one instant: deliveries (links in id order, each in (arrival, seq)
 * order), then timers (endpoint order), then transmissions (endpoint order). */
enum sim_stop sim_world_run(struct sim_world *w, uint64_t until_ns, uint64_t max_events,
			    struct sim_run_result *res);

uint64_t sim_world_now(const struct sim_world *w);
uint64_t sim_world_seed(const struct sim_world *w);
uint64_t sim_world_events(const struct sim_world *w); /* over all runs */
/* FNV-1a 64 over every event so far: (time, kind, a, b, len, x) little-endian. */
uint64_t sim_world_trace_hash(const struct sim_world *w);
/* Print every event to fp (NULL: off). */
void sim_world_set_trace(struct sim_world *w, FILE *fp);
/* The link with id `id`, NULL if none (to read stats or change cfg mid-run). */
struct sim_link *sim_world_link(struct sim_world *w, uint32_t id);
/* Sub-stream for an endpoint's own randomness (SIM_STREAM_ENDPOINT(i) is the usual key). */
void sim_world_rng(const struct sim_world *w, uint64_t stream, struct sim_rng *out);
/* One line per link with its statistics, and the seed. */
void sim_world_dump(const struct sim_world *w, FILE *fp);
const char *sim_stop_name(enum sim_stop s);

/* ------------------------------------------------------------------------------------ */
/* Test mains: seeds and replay                                                         */
/* ------------------------------------------------------------------------------------ */
struct sim_seed_opts {
	uint64_t first; /* first seed */
	uint64_t count; /* seeds first, first + 1, ..., first + count - 1 */
};

/* Options, later ones winning: defaults (first = 1, count = default_count, divided by 10
 * (at least 1) when FALCON_TEST_QUICK is set), env FALCON_SIM_FIRST, FALCON_SIM_SEEDS,
 * FALCON_SIM_SEED (one seed: first = it, count = 1), then argv: --first S, --seeds N,
 * --seed S (also --opt=value). Numbers in C syntax (0x.. hex). Other arguments are
 * ignored. Returns 0 or -EINVAL (a malformed number, a missing value, --seeds 0). */
int sim_seed_opts_parse(struct sim_seed_opts *o, int argc, char **argv, uint64_t default_count);
/* "replay: FALCON_SIM_SEED=0x1234 ./prog --seed 0x1234" into buf (always terminated).
 * Returns the length it needed (snprintf). */
int sim_replay_line(char *buf, size_t cap, const char *argv0, uint64_t seed);

/* A run for one seed: 0 = passed, anything else = failed. */
typedef int (*sim_seed_fn)(uint64_t seed, void *arg);
/* Run fn for each seed of o. On the first failure print "sim: seed 0x.. FAILED (rc N)"
 * and the replay line to out, and stop. Last line: "sim: N passed, N failed". Returns
 * the number of failed seeds (0 or 1). */
int sim_run_seeds(const struct sim_seed_opts *o, const char *argv0, sim_seed_fn fn, void *arg,
		  FILE *out);
/* main() in one call: parse (exit status 2 on bad options), run, exit status 0 / 1. */
int sim_main(int argc, char **argv, uint64_t default_count, sim_seed_fn fn, void *arg);

#endif
