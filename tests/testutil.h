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

/* The seed of this run: FALCON_TEST_SEED, else dflt. */
static inline uint64_t fc_test_seed(uint64_t dflt)
{
	const char *s = getenv("FALCON_TEST_SEED");

	return s ? strtoull(s, NULL, 0) : dflt;
}

/* Shorter runs under valgrind (make memcheck sets FALCON_TEST_QUICK). */
static inline int fc_test_quick(void) { return getenv("FALCON_TEST_QUICK") != NULL; }

/* xorshift64; the state must not be 0. */
static inline uint64_t fc_test_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#endif
