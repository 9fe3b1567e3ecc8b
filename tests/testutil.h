/* SPDX-License-Identifier: Apache-2.0 */
/*
 * testutil.h - what the unit tests share: the run seed (FALCON_TEST_SEED overrides the
 * default, and failing tests print it), quick mode for slow runners such as valgrind
 * (FALCON_TEST_QUICK), and a small deterministic PRNG.
 */
#ifndef FC_TESTUTIL_H
#define FC_TESTUTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* The seed of this run: FALCON_TEST_SEED, else dflt. */
static inline uint64_t fc_test_seed(uint64_t dflt)
{
	const char *s = getenv("FALCON_TEST_SEED");

	return s ? strtoull(s, NULL, 0) : dflt;
}

/* Shorter runs under valgrind (make memcheck sets FALCON_TEST_QUICK). */
static inline int fc_test_quick(void) { return getenv("FALCON_TEST_QUICK") != NULL; }

/* CLOCK_MONOTONIC in ns (bounded waits of the tests). */
static inline uint64_t fc_test_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64; the state must not be 0. */
static inline uint64_t fc_test_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Deterministic payload bytes of (host, rsn, kind): what a simulated ULP sends and what
 * the receiving side checks, byte for byte. */
static inline uint8_t fc_test_pat(int host, uint32_t rsn, int kind, uint32_t i)
{
	uint32_t x = (uint32_t)(host + 1) * 0x9E3779B1u ^ rsn * 0x85EBCA77u ^
		     (uint32_t)kind * 0xC2B2AE3Du ^ (i + 1) * 0x27D4EB2Fu;

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return (uint8_t)x;
}

static inline void fc_test_fill(uint8_t *b, uint32_t len, int host, uint32_t rsn, int kind)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = fc_test_pat(host, rsn, kind, i);
}

static inline int fc_test_check(const uint8_t *b, uint32_t len, int host, uint32_t rsn, int kind)
{
	if (len && !b)
		return 0;
	for (uint32_t i = 0; i < len; i++)
		if (b[i] != fc_test_pat(host, rsn, kind, i))
			return 0;
	return 1;
}

#endif
