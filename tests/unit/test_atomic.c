/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the RDMA atomics (daemon/engine/atomic.c) against RFC 7306 section 5.1: the
 * RFC's pseudocode, transcribed literally in tests/rdma_model.h, is the reference on
 * random inputs; hand cases check field boundaries and discarded carries (and the
 * transcription itself); unaligned addresses are refused with memory untouched; four
 * threads hammer one word and the result must equal the sequential one.
 *
 * Random tests use xorshift64 with a fixed seed; FALCON_TEST_SEED=<n> overrides it and
 * a failure prints the seed.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atomic.h"
#include "rdma_model.h"
#include "testutil.h"

static uint64_t rng;

/* Operands that provoke carries and field edges: all ones, all zeros, single bits,
 * field-aligned masks, or plain random. */
static uint64_t pick(void)
{
	uint64_t r = fc_test_rand(&rng);

	switch (fc_test_rand(&rng) % 8) {
	case 0: return 0;
	case 1: return ~0ULL;
	case 2: return 1ULL << (r % 64);
	case 3: return 0x8000800080008000ULL >> (r % 16);
	case 4: return 0x8080808080808080ULL;
	case 5: return r & fc_test_rand(&rng) & fc_test_rand(&rng); /* sparse */
	case 6: return r | fc_test_rand(&rng);                      /* dense */
	default: return r;
	}
}

/* ------------------------------------------------------------------------ */
/* Hand cases                                                                */
/* ------------------------------------------------------------------------ */

/* Each case holds for the transcription of the RFC and for the engine. */
static void check_add(uint64_t orig, uint64_t add, uint64_t mask, uint64_t want)
{
	_Alignas(8) uint64_t word = orig;
	uint64_t got = 0;

	assert_int_equal(rm_rfc_masked_fetch_add(orig, add, mask), want);
	assert_int_equal(fc_masked_add(orig, add, mask), want);
	assert_int_equal(fc_atomic_masked_fetch_add(&word, add, mask, &got), 0);
	assert_int_equal(got, orig);
	assert_int_equal(word, want);
}

static void test_fetch_add_hand(void **state)
{
	(void)state;
	/* mask 0: a plain 64-bit add, carry out of bit 63 discarded (RFC 7306 5.1.1) */
	check_add(0xFFFFFFFFFFFFFFFFULL, 1, 0, 0);
	check_add(0x00000000FFFFFFFFULL, 1, 0, 0x0000000100000000ULL);
	check_add(5, 7, 0, 12);
	/* two 32-bit fields (mask bits 31 and 63): the low field's carry is dropped */
	check_add(0x00000001FFFFFFFFULL, 0x0000000100000001ULL, 0x8000000080000000ULL,
		  0x0000000200000000ULL);
	/* eight 8-bit fields, each added mod 256:
	 * 01+01=02 FF+01=00 7F+01=80 80+80=00 00+00=00 FF+01=00 01+FF=00 02+FE=00 */
	check_add(0x01FF7F8000FF0102ULL, 0x010101800001FFFEULL, 0x8080808080808080ULL,
		  0x0200800000000000ULL);
	/* a 1-bit field at bit 0 (mask bit 0): 1 + 1 = 0 there, nothing carried into bit 1 */
	check_add(1, 1, 1, 0);
	check_add(3, 1, 1, 2);
	/* without the mask the same is a carry */
	check_add(1, 1, 0, 2);
	/* mask bit 63 alone = plain add */
	check_add(0xFFFFFFFFFFFFFFFFULL, 2, 0x8000000000000000ULL, 1);
	/* all bits are field tops: bitwise xor, no carries at all */
	check_add(0xF0F0F0F0F0F0F0F0ULL, 0xFF00FF00FF00FF00ULL, ~0ULL, 0x0FF00FF00FF00FF0ULL);
	/* a carry stops at the field top but the top bit itself takes the carry in */
	check_add(0x000000000000007FULL, 0x0000000000000001ULL, 0x0000000000000080ULL,
		  0x0000000000000080ULL);
	check_add(0x00000000000000FFULL, 0x0000000000000001ULL, 0x0000000000000080ULL,
		  0x0000000000000000ULL);
}

static void check_cswap(uint64_t orig, uint64_t cmp, uint64_t cmp_mask, uint64_t swap,
			uint64_t swap_mask, uint64_t want)
{
	_Alignas(8) uint64_t word = orig;
	uint64_t got = 0;

	assert_int_equal(rm_rfc_masked_cmp_swap(orig, cmp, cmp_mask, swap, swap_mask), want);
	assert_int_equal(fc_masked_cmp_swap_result(orig, cmp, cmp_mask, swap, swap_mask), want);
	assert_int_equal(fc_atomic_masked_cmp_swap(&word, cmp, cmp_mask, swap, swap_mask, &got),
			 0);
	assert_int_equal(got, orig);
	assert_int_equal(word, want);
}

static void test_cmp_swap_hand(void **state)
{
	_Alignas(8) uint64_t word;
	uint64_t got;

	(void)state;
	/* plain (masks ~0): equal -> swap, different -> untouched */
	check_cswap(42, 42, ~0ULL, 99, ~0ULL, 99);
	check_cswap(42, 43, ~0ULL, 99, ~0ULL, 42);
	/* compare only the top 16 bits, swap only the low 16 */
	check_cswap(0x123456789ABCDEF0ULL, 0x1234000000000000ULL, 0xFFFF000000000000ULL,
		    0xAAAAAAAAAAAAAAAAULL, 0x000000000000FFFFULL, 0x123456789ABCAAAAULL);
	/* one compared bit differs: untouched */
	check_cswap(0x123456789ABCDEF0ULL, 0x1235000000000000ULL, 0xFFFF000000000000ULL,
		    0xAAAAAAAAAAAAAAAAULL, 0x000000000000FFFFULL, 0x123456789ABCDEF0ULL);
	/* compare mask 0 always matches; swap mask 0 never changes anything */
	check_cswap(7, 0xDEAD, 0, 0xFFFFFFFFFFFFFFFFULL, 0x0F, 0xF);
	check_cswap(7, 7, ~0ULL, 0xFFFF, 0, 7);
	/* plain entry points */
	word = 10;
	assert_int_equal(fc_atomic_cmp_swap(&word, 10, 20, &got), 0);
	assert_int_equal(got, 10);
	assert_int_equal(word, 20);
	assert_int_equal(fc_atomic_cmp_swap(&word, 10, 30, &got), 0);
	assert_int_equal(got, 20);
	assert_int_equal(word, 20);
	assert_int_equal(fc_atomic_fetch_add(&word, 0xFFFFFFFFFFFFFFFFULL, &got), 0);
	assert_int_equal(got, 20);
	assert_int_equal(word, 19);
}

/* ------------------------------------------------------------------------ */
/* Random: engine vs the RFC pseudocode                                      */
/* ------------------------------------------------------------------------ */

static void test_random_vs_rfc(void **state)
{
	uint64_t seed = fc_test_seed(0xA70A1C0FFEE5EEDULL);
	uint32_t i, iters = fc_test_quick() ? 20000 : 200000;
	_Alignas(8) uint64_t word;

	(void)state;
	rng = seed ? seed : 1;
	for (i = 0; i < iters; i++) {
		uint64_t orig = pick(), a = pick(), am = pick(), c = pick(), cm = pick(), got;
		uint64_t want_add = rm_rfc_masked_fetch_add(orig, a, am), want_cs;

		if (fc_test_rand(&rng) % 4 == 0)
			c = orig ^ (pick() & ~cm); /* make the masked compare match */
		want_cs = rm_rfc_masked_cmp_swap(orig, c, cm, a, am);
		word = orig;
		if (fc_atomic_masked_fetch_add(&word, a, am, &got) || got != orig ||
		    word != want_add)
			fail_msg("seed %#llx iter %u: fetch_add(%#llx, %#llx, mask %#llx) = %#llx, "
				 "want %#llx", (unsigned long long)seed, i,
				 (unsigned long long)orig, (unsigned long long)a,
				 (unsigned long long)am, (unsigned long long)word,
				 (unsigned long long)want_add);
		word = orig;
		if (fc_atomic_masked_cmp_swap(&word, c, cm, a, am, &got) || got != orig ||
		    word != want_cs)
			fail_msg("seed %#llx iter %u: cmp_swap(%#llx, c %#llx/%#llx, s %#llx/%#llx)"
				 " = %#llx, want %#llx", (unsigned long long)seed, i,
				 (unsigned long long)orig, (unsigned long long)c,
				 (unsigned long long)cm, (unsigned long long)a,
				 (unsigned long long)am, (unsigned long long)word,
				 (unsigned long long)want_cs);
		/* plain = masked with the decoder's masks (wire_rdma.h) */
		word = orig;
		fc_atomic_fetch_add(&word, a, &got);
		assert_int_equal(word, rm_rfc_masked_fetch_add(orig, a, 0));
		word = orig;
		fc_atomic_cmp_swap(&word, c, a, &got);
		assert_int_equal(word, rm_rfc_masked_cmp_swap(orig, c, ~0ULL, a, ~0ULL));
	}
}

/* ------------------------------------------------------------------------ */
/* Refused addresses                                                         */
/* ------------------------------------------------------------------------ */

static void test_unaligned_refused(void **state)
{
	_Alignas(8) uint8_t buf[24], copy[24];
	uint64_t orig;
	int off;

	(void)state;
	for (off = 0; off < 24; off++)
		buf[off] = (uint8_t)(0xA0 + off);
	memcpy(copy, buf, sizeof(buf));
	for (off = 1; off < 8; off++) {
		orig = 0x5555;
		assert_int_equal(fc_atomic_masked_fetch_add(buf + off, 1, 0, &orig),
				 -FC_RDMA_EALIGN);
		assert_int_equal(fc_atomic_fetch_add(buf + off, 1, &orig), -FC_RDMA_EALIGN);
		assert_int_equal(fc_atomic_masked_cmp_swap(buf + off, 0, 0, ~0ULL, ~0ULL, &orig),
				 -FC_RDMA_EALIGN);
		assert_int_equal(fc_atomic_cmp_swap(buf + off, 0, 1, &orig), -FC_RDMA_EALIGN);
		assert_int_equal(orig, 0x5555);
		assert_memory_equal(buf, copy, sizeof(buf));
	}
	assert_int_equal(fc_atomic_fetch_add(NULL, 1, &orig), -EINVAL);
	assert_int_equal(fc_atomic_cmp_swap(buf, 0, 1, NULL), -EINVAL);
	assert_memory_equal(buf, copy, sizeof(buf));
	/* offset 8 is aligned */
	assert_int_equal(fc_atomic_fetch_add(buf + 8, 0, &orig), 0);
	assert_memory_equal(&orig, copy + 8, 8);
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

struct hammer {
	uint64_t *word;
	uint32_t iters;
	int kind; /* 0 FetchAdd +1, 1 CmpSwap increment, 2 masked add to a 16-bit field */
	int field;
};

static void *hammer_run(void *arg)
{
	const struct hammer *h = arg;
	uint64_t old, got;
	uint32_t i;

	for (i = 0; i < h->iters; i++) {
		if (h->kind == 0) {
			fc_atomic_fetch_add(h->word, 1, &got);
		} else if (h->kind == 1) {
			do { /* read, then swap in old + 1; retry if someone came between */
				fc_atomic_fetch_add(h->word, 0, &old);
				fc_atomic_cmp_swap(h->word, old, old + 1, &got);
			} while (got != old);
		} else {
			fc_atomic_masked_fetch_add(h->word, 1ULL << (16 * h->field),
						   0x8000800080008000ULL, &got);
		}
	}
	return NULL;
}

static void run_threads(struct hammer *h, int n)
{
	pthread_t tid[4];
	int i;

	for (i = 0; i < n; i++)
		assert_int_equal(pthread_create(&tid[i], NULL, hammer_run, &h[i]), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(pthread_join(tid[i], NULL), 0);
}

/* Two threads FetchAdd +1, two increment with CmpSwap loops: no update may be lost. */
static void test_threads_fetch_add_cmp_swap(void **state)
{
	static _Alignas(8) uint64_t word;
	uint32_t n = fc_test_quick() ? 20000 : 200000;
	struct hammer h[4] = {
		{ &word, n, 0, 0 }, { &word, n, 0, 0 }, { &word, n, 1, 0 }, { &word, n, 1, 0 },
	};

	(void)state;
	word = 0xFFFFFFFFFFFF0000ULL; /* wraps through 2^64 on the way */
	run_threads(h, 4);
	assert_int_equal(word, 0xFFFFFFFFFFFF0000ULL + 4ull * n);
}

/* Four threads, each adding 1 to its own 16-bit field of one word with the masked
 * FetchAdd; more than 65536 times, so each field wraps and its carry must be dropped:
 * the sequential result is n mod 65536 in every field. */
static void test_threads_masked_fields(void **state)
{
	static _Alignas(8) uint64_t word;
	uint32_t n = fc_test_quick() ? 70000 : 300000, f;
	struct hammer h[4] = {
		{ &word, n, 2, 0 }, { &word, n, 2, 1 }, { &word, n, 2, 2 }, { &word, n, 2, 3 },
	};
	uint64_t want = 0;

	(void)state;
	word = 0;
	run_threads(h, 4);
	for (f = 0; f < 4; f++)
		want |= (uint64_t)(n % 65536) << (16 * f);
	assert_int_equal(word, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fetch_add_hand),
		cmocka_unit_test(test_cmp_swap_hand),
		cmocka_unit_test(test_random_vs_rfc),
		cmocka_unit_test(test_unaligned_refused),
		cmocka_unit_test(test_threads_fetch_add_cmp_swap),
		cmocka_unit_test(test_threads_masked_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
