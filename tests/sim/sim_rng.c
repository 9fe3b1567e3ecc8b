/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_rng.c - the simulator's randomness (xoshiro256** seeded by splitmix64, after
 * Blackman and Vigna), the FNV-1a trace hash, and the seed / replay helpers of test mains.
 * Integers only: the same seed gives the same numbers with any compiler.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

uint64_t sim_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void sim_rng_seed(struct sim_rng *r, uint64_t seed)
{
	uint64_t x = seed;
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = sim_splitmix64(&x);
	/* four consecutive splitmix64 outputs are never all zero (it is a bijection of a
	 * counter), but keep the xoshiro invariant explicit */
	if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
		r->s[0] = 1;
}

void sim_rng_stream(struct sim_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t k = stream ^ 0x53545245414d5f5full; /* "STREAM__" */

	/* the key goes through one splitmix64 round so that neighbouring keys give unrelated
	 * seeds; xor with the run seed, then seed as usual */
	sim_rng_seed(r, seed ^ sim_splitmix64(&k));
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

uint64_t sim_rng_below(struct sim_rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)sim_rng_next(r) * n) >> 64);
}

int sim_rng_chance_ppm(struct sim_rng *r, uint32_t ppm)
{
	return sim_rng_below(r, SIM_PPM) < ppm;
}

uint64_t sim_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* ------------------------------------------------------------------------------------ */
/* seeds and replay                                                                     */
/* ------------------------------------------------------------------------------------ */

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

static int env_u64(const char *name, uint64_t *out)
{
	const char *v = getenv(name);

	return v ? parse_u64(v, out) : 0;
}

/* "--name V" or "--name=V" at argv[*i]: 1 and *val set when it matches, 0 when it does
 * not, -EINVAL when the value is missing. */
static int match_opt(int argc, char **argv, int *i, const char *name, const char **val)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n] != '\0')
		return 0;
	if (*i + 1 >= argc)
		return -EINVAL;
	*val = argv[++*i];
	return 1;
}

static int apply_env(struct sim_seed_opts *o)
{
	uint64_t one;
	int err;

	if ((err = env_u64("FALCON_SIM_FIRST", &o->first)) ||
	    (err = env_u64("FALCON_SIM_SEEDS", &o->count)))
		return err;
	if (getenv("FALCON_SIM_SEED")) {
		if ((err = env_u64("FALCON_SIM_SEED", &one)))
			return err;
		o->first = one;
		o->count = 1;
	}
	return 0;
}

int sim_seed_opts_parse(struct sim_seed_opts *o, int argc, char **argv, uint64_t default_count)
{
	int i, err, m;

	o->first = 1;
	o->count = default_count;
	if (getenv("FALCON_TEST_QUICK"))
		o->count = default_count / 10 ? default_count / 10 : 1;
	if ((err = apply_env(o)))
		return err;
	for (i = 1; i < argc; i++) {
		const char *v = NULL;

		if ((m = match_opt(argc, argv, &i, "--seeds", &v)) != 0) {
			if (m < 0 || (err = parse_u64(v, &o->count)))
				return -EINVAL;
		} else if ((m = match_opt(argc, argv, &i, "--seed", &v)) != 0) {
			if (m < 0 || (err = parse_u64(v, &o->first)))
				return -EINVAL;
			o->count = 1;
		} else if ((m = match_opt(argc, argv, &i, "--first", &v)) != 0) {
			if (m < 0 || (err = parse_u64(v, &o->first)))
				return -EINVAL;
		}
	}
	return o->count ? 0 : -EINVAL;
}

int sim_replay_line(char *buf, size_t cap, const char *argv0, uint64_t seed)
{
	return snprintf(buf, cap, "replay: FALCON_SIM_SEED=%#" PRIx64 " %s --seed %#" PRIx64,
			seed, argv0 ? argv0 : "<test>", seed);
}

int sim_run_seeds(const struct sim_seed_opts *o, const char *argv0, sim_seed_fn fn, void *arg,
		  FILE *out)
{
	uint64_t i, passed = 0, failed = 0;
	char line[512];

	for (i = 0; i < o->count; i++) {
		uint64_t seed = o->first + i;
		int rc = fn(seed, arg);

		if (rc == 0) {
			passed++;
			continue;
		}
		failed++;
		sim_replay_line(line, sizeof(line), argv0, seed);
		fprintf(out, "sim: seed %#" PRIx64 " FAILED (rc %d)\n%s\n", seed, rc, line);
		break;
	}
	fprintf(out, "sim: %" PRIu64 " passed, %" PRIu64 " failed\n", passed, failed);
	fflush(out);
	return (int)failed;
}

int sim_main(int argc, char **argv, uint64_t default_count, sim_seed_fn fn, void *arg)
{
	struct sim_seed_opts o;

	if (sim_seed_opts_parse(&o, argc, argv, default_count) < 0) {
		fprintf(stderr, "usage: %s [--seed S | --first S --seeds N]\n"
			"   env: FALCON_SIM_SEED, FALCON_SIM_FIRST, FALCON_SIM_SEEDS\n",
			argc > 0 ? argv[0] : "sim");
		return 2;
	}
	return sim_run_seeds(&o, argc > 0 ? argv[0] : NULL, fn, arg, stdout) ? 1 : 0;
}
