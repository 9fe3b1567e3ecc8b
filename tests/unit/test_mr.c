/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of memory protection (daemon/engine/mr.c): PDs, registration, the key layout of
 * mr.h (expected keys built here with explicit shifts), L_Key/R_Key checks with each
 * error, stale keys, invalidation, and the error -> completion status table (typed in
 * here from the IB rules with ibverbs' numeric statuses). A random test compares
 * fc_mr_check_remote/local with the reference model's independent check (rdma_model.h).
 *
 * Random tests use xorshift64 with a fixed seed; FALCON_TEST_SEED=<n> overrides it and
 * a failure prints the seed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mr.h"
#include "rdma_model.h"
#include "testutil.h"

#define ALL_REMOTE (FC_MR_LOCAL_WRITE | FC_MR_REMOTE_READ | FC_MR_REMOTE_WRITE | \
		    FC_MR_REMOTE_ATOMIC | FC_MR_REMOTE_INVALIDATE)

/* Random source for the table: a scripted list, then a counter. */
struct script {
	const uint32_t *vals;
	size_t n, next;
	uint32_t counter;
};

static uint32_t script_rand(void *ctx)
{
	struct script *s = ctx;

	if (s->next < s->n)
		return s->vals[s->next++];
	return s->counter++;
}

static uint32_t const_rand(void *ctx)
{
	return *(const uint32_t *)ctx;
}

static uint64_t rng;

static uint32_t xs_rand(void *ctx)
{
	(void)ctx;
	return (uint32_t)(fc_test_rand(&rng) >> 32);
}

static _Alignas(8) uint8_t mem[4096];

/* A table with one PD. */
static struct fc_mr_table *table(uint32_t cap, fc_mr_rand_fn fn, void *ctx, uint32_t *pd)
{
	struct fc_mr_table *t = fc_mr_table_new(cap, 4, fn, ctx);

	assert_non_null(t);
	assert_int_equal(fc_pd_alloc(t, pd), 0);
	return t;
}

/* ------------------------------------------------------------------------ */
/* Construction, PDs                                                         */
/* ------------------------------------------------------------------------ */

static void test_new_args(void **state)
{
	uint32_t x = 0;

	(void)state;
	errno = 0;
	assert_null(fc_mr_table_new(0, 1, const_rand, &x));
	assert_int_equal(errno, EINVAL);
	assert_null(fc_mr_table_new(FC_MR_CAP_MAX + 1, 1, const_rand, &x));
	assert_null(fc_mr_table_new(1, 0, const_rand, &x));
	assert_null(fc_mr_table_new(1, FC_PD_CAP_MAX + 1, const_rand, &x));
	errno = 0;
	assert_null(fc_mr_table_new(1, 1, NULL, NULL));
	assert_int_equal(errno, EINVAL);
	fc_mr_table_free(NULL);
}

static void test_pd(void **state)
{
	uint32_t x = 0, pd[3], stale;
	struct fc_mr_table *t = fc_mr_table_new(4, 2, const_rand, &x);
	struct fc_mr_keys k;

	(void)state;
	assert_non_null(t);
	assert_int_equal(fc_pd_alloc(t, &pd[0]), 0);
	assert_int_equal(fc_pd_alloc(t, &pd[1]), 0);
	assert_int_not_equal(pd[0], pd[1]);
	assert_int_equal(fc_pd_alloc(t, &pd[2]), -ENOSPC);
	/* a PD with a region cannot go (ibv_dealloc_pd: EBUSY) */
	assert_int_equal(fc_mr_reg(t, pd[0], mem, 0, 16, 0, &k), 0);
	assert_int_equal(fc_pd_free(t, pd[0]), -EBUSY);
	assert_int_equal(fc_mr_dereg(t, pd[0], k.lkey), 0);
	assert_int_equal(fc_pd_free(t, pd[0]), 0);
	assert_int_equal(fc_pd_free(t, pd[0]), -EINVAL);
	assert_int_equal(fc_pd_free(t, 0xFFFF), -EINVAL);
	/* the freed handle stays invalid when its slot is reused */
	stale = pd[0];
	assert_int_equal(fc_pd_alloc(t, &pd[2]), 0);
	assert_int_equal(pd[2] & 0xFFFF, stale & 0xFFFF);
	assert_int_not_equal(pd[2], stale);
	assert_int_equal(fc_mr_reg(t, stale, mem, 0, 16, 0, &k), -EINVAL);
	assert_int_equal(fc_pd_free(t, stale), -EINVAL);
	fc_mr_table_free(t);
}

/* ------------------------------------------------------------------------ */
/* Registration and the key layout                                           */
/* ------------------------------------------------------------------------ */

/* mr.h: key = random << (8 + B) | index << 8 | generation; B = 4 for 16 slots. */
static void test_key_layout(void **state)
{
	static const uint32_t r[] = { 0xDEADBEEF, 0x12345678, 0xCAFEF00D, 0x0BADC0DE };
	struct script s = { r, 4, 0, 0 };
	struct fc_mr_keys k1, k2;
	struct fc_mr_table *t;
	uint32_t pd;

	(void)state;
	t = table(16, script_rand, &s, &pd);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0x1000, 64, 0, &k1), 0);
	/* slot 0, generation 1 */
	assert_int_equal(k1.lkey, (uint32_t)((0xDEADBEEFull << 12) | (0u << 8) | 1u));
	assert_int_equal(k1.rkey, (uint32_t)((0x12345678ull << 12) | (0u << 8) | 1u));
	assert_int_equal(k1.lkey, 0xDBEEF001u);
	assert_int_equal(k1.rkey, 0x45678001u);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0x1000, 64, 0, &k2), 0);
	/* slot 1, generation 1 */
	assert_int_equal(k2.lkey, 0xEF00D101u);
	assert_int_equal(k2.rkey, 0xDC0DE101u);
	fc_mr_table_free(t);

	/* capacity 1: B = 0, 24 random bits */
	s = (struct script){ r, 4, 0, 0 };
	t = table(1, script_rand, &s, &pd);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0, 8, 0, &k1), 0);
	assert_int_equal(k1.lkey, 0xADBEEF01u);
	assert_int_equal(k1.rkey, 0x34567801u);
	fc_mr_table_free(t);

	/* capacity FC_MR_CAP_MAX: B = 16, 8 random bits */
	s = (struct script){ r, 4, 0, 0 };
	t = table(FC_MR_CAP_MAX, script_rand, &s, &pd);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0, 8, 0, &k1), 0);
	assert_int_equal(k1.lkey, 0xEF000001u);
	fc_mr_table_free(t);
}

static void test_reg_args(void **state)
{
	uint32_t x = 0, pd;
	struct fc_mr_table *t = table(8, const_rand, &x, &pd);
	struct fc_mr_keys k = { 0x11111111, 0x22222222 };

	(void)state;
	assert_int_equal(fc_mr_reg(t, pd + 1, mem, 0, 16, 0, &k), -EINVAL);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0, 16, 0x20, &k), -EINVAL);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0, 16, FC_MR_REMOTE_WRITE, &k), -EINVAL);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0, 16, FC_MR_REMOTE_ATOMIC, &k), -EINVAL);
	assert_int_equal(fc_mr_reg(t, pd, NULL, 0, 16, 0, &k), -EINVAL);
	/* iova + len must stay below 2^64, addr + len within the address space */
	assert_int_equal(fc_mr_reg(t, pd, mem, UINT64_MAX - 15, 16, 0, &k), -EINVAL);
	assert_int_equal(fc_mr_reg(t, pd, (void *)(UINTPTR_MAX - 7), 0, 16, 0, &k), -EINVAL);
	/* atomics: addr and iova congruent mod 8 */
	assert_int_equal(fc_mr_reg(t, pd, mem + 1, 0x1000, 16, ALL_REMOTE, &k), -EINVAL);
	assert_int_equal(k.lkey, 0x11111111u); /* untouched on error */
	assert_int_equal(fc_mr_count(t), 0);
	/* the accepted edge cases */
	assert_int_equal(fc_mr_reg(t, pd, mem + 1, 0x1009, 16, ALL_REMOTE, &k), 0);
	assert_int_equal(fc_mr_reg(t, pd, mem + 3, 0x1000, 16, FC_MR_REMOTE_READ, &k), 0);
	assert_int_equal(fc_mr_reg(t, pd, NULL, 0, 0, 0, &k), 0);
	assert_int_equal(fc_mr_reg(t, pd, mem, UINT64_MAX - 16, 16, 0, &k), 0);
	assert_int_equal(fc_mr_count(t), 4);
	fc_mr_table_free(t);
}

static void test_table_full_and_fifo_reuse(void **state)
{
	uint32_t x = 0, pd, i;
	struct fc_mr_table *t = table(4, const_rand, &x, &pd);
	struct fc_mr_keys k[5];

	(void)state;
	for (i = 0; i < 4; i++) {
		assert_int_equal(fc_mr_reg(t, pd, mem, 0, 16, 0, &k[i]), 0);
		assert_int_equal((k[i].lkey >> 8) & 3, i);
	}
	assert_int_equal(fc_mr_reg(t, pd, mem, 0, 16, 0, &k[4]), -ENOSPC);
	/* free slot 1, then slot 0: the oldest freed (1) comes back first */
	assert_int_equal(fc_mr_dereg(t, pd, k[1].lkey), 0);
	assert_int_equal(fc_mr_dereg(t, pd, k[0].lkey), 0);
	assert_int_equal(fc_mr_dereg(t, pd, k[0].lkey), -EINVAL);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0, 16, 0, &k[4]), 0);
	assert_int_equal((k[4].lkey >> 8) & 3, 1);
	assert_int_equal(k[4].lkey & 0xFF, 2); /* second generation of slot 1 */
	assert_int_equal(fc_mr_reg(t, pd, mem, 0, 16, 0, &k[4]), 0);
	assert_int_equal((k[4].lkey >> 8) & 3, 0);
	assert_int_equal(fc_mr_count(t), 4);
	fc_mr_table_free(t);
}

static void test_dereg_and_query(void **state)
{
	uint32_t x = 0x5A5A5A5A, pd, pd2;
	struct fc_mr_table *t = table(8, xs_rand, &x, &pd);
	struct fc_mr_keys k;
	struct fc_mr_info info;

	(void)state;
	rng = 99;
	assert_int_equal(fc_pd_alloc(t, &pd2), 0);
	assert_int_equal(fc_mr_reg(t, pd, mem + 8, 0x7000, 100, FC_MR_REMOTE_READ, &k), 0);
	assert_int_equal(fc_mr_query(t, pd, k.lkey, &info), 0);
	assert_ptr_equal(info.addr, mem + 8);
	assert_int_equal(info.iova, 0x7000);
	assert_int_equal(info.len, 100);
	assert_int_equal(info.pd, pd);
	assert_int_equal(info.access, FC_MR_REMOTE_READ);
	assert_int_equal(info.lkey, k.lkey);
	assert_int_equal(info.rkey, k.rkey);
	assert_true(info.valid);
	assert_int_equal(fc_mr_query(t, pd2, k.lkey, &info), -EINVAL);
	if (k.rkey != k.lkey)
		assert_int_equal(fc_mr_query(t, pd, k.rkey, &info), -EINVAL);
	/* dereg needs the L_Key and the region's PD */
	assert_int_equal(fc_mr_dereg(t, pd2, k.lkey), -EINVAL);
	if (k.rkey != k.lkey)
		assert_int_equal(fc_mr_dereg(t, pd, k.rkey), -EINVAL);
	assert_int_equal(fc_mr_dereg(t, pd, k.lkey), 0);
	assert_int_equal(fc_mr_query(t, pd, k.lkey, &info), -EINVAL);
	fc_mr_table_free(t);
}

/* ------------------------------------------------------------------------ */
/* Checks                                                                    */
/* ------------------------------------------------------------------------ */

static void test_check_remote_ok(void **state)
{
	uint32_t x = 7, pd;
	struct fc_mr_table *t = table(8, const_rand, &x, &pd);
	struct fc_mr_keys k;
	void *host = NULL;

	(void)state;
	assert_int_equal(fc_mr_reg(t, pd, mem + 16, 0x10000, 256, ALL_REMOTE, &k), 0);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x10000, 256, FC_MR_REMOTE_WRITE,
					    &host), 0);
	assert_ptr_equal(host, mem + 16);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x100FF, 1, FC_MR_REMOTE_READ,
					    &host), 0);
	assert_ptr_equal(host, mem + 16 + 255);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x10008, 8,
					    FC_MR_REMOTE_ATOMIC | FC_MR_REMOTE_READ, &host), 0);
	assert_ptr_equal(host, mem + 24);
	/* zero length at the end is inside */
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x10100, 0, FC_MR_REMOTE_READ,
					    &host), 0);
	assert_ptr_equal(host, mem + 16 + 256);
	fc_mr_table_free(t);
}

static void test_check_remote_errors(void **state)
{
	uint32_t x = 0xABCDEF, pd, pd2;
	struct fc_mr_table *t = table(6, xs_rand, &x, &pd); /* B = 3, indexes 6, 7 unused */
	struct fc_mr_keys k, kr;
	void *host = (void *)0x1;

	(void)state;
	rng = 12345;
	assert_int_equal(fc_pd_alloc(t, &pd2), 0);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0x2000, 64, FC_MR_LOCAL_WRITE | FC_MR_REMOTE_READ,
				   &k), 0);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0x0, 64, FC_MR_REMOTE_READ, &kr), 0);
	/* EKEY: unknown random part, index past capacity, an L_Key used as R_Key */
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey ^ 0x80000000u, 0x2000, 1,
					    FC_MR_REMOTE_READ, &host), -FC_RDMA_EKEY);
	assert_int_equal(fc_mr_check_remote(t, pd, (k.rkey & ~0x700u) | 0x700u, 0x2000, 1,
					    FC_MR_REMOTE_READ, &host), -FC_RDMA_EKEY);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey ^ 1, 0x2000, 1, FC_MR_REMOTE_READ,
					    &host), -FC_RDMA_EKEY);
	if (k.lkey != k.rkey)
		assert_int_equal(fc_mr_check_remote(t, pd, k.lkey, 0x2000, 1, FC_MR_REMOTE_READ,
						    &host), -FC_RDMA_EKEY);
	/* EPD */
	assert_int_equal(fc_mr_check_remote(t, pd2, k.rkey, 0x2000, 1, FC_MR_REMOTE_READ,
					    &host), -FC_RDMA_EPD);
	/* EACCESS: each missing remote permission */
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x2000, 1, FC_MR_REMOTE_WRITE,
					    &host), -FC_RDMA_EACCESS);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x2000, 8, FC_MR_REMOTE_ATOMIC,
					    &host), -FC_RDMA_EACCESS);
	assert_int_equal(fc_mr_check_remote(t, pd, kr.rkey, 0x0, 1,
					    FC_MR_REMOTE_READ | FC_MR_LOCAL_WRITE, &host),
			 -FC_RDMA_EACCESS);
	/* EBOUNDS: before, across the end, longer than the region, iova + len wraps */
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x1FFF, 1, FC_MR_REMOTE_READ, &host),
			 -FC_RDMA_EBOUNDS);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x203F, 2, FC_MR_REMOTE_READ, &host),
			 -FC_RDMA_EBOUNDS);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x2040, 1, FC_MR_REMOTE_READ, &host),
			 -FC_RDMA_EBOUNDS);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x2000, 65, FC_MR_REMOTE_READ, &host),
			 -FC_RDMA_EBOUNDS);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x2010, UINT64_MAX - 4,
					    FC_MR_REMOTE_READ, &host), -FC_RDMA_EBOUNDS);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, UINT64_MAX, 2, FC_MR_REMOTE_READ,
					    &host), -FC_RDMA_EBOUNDS);
	/* order: key before PD before access before bounds */
	assert_int_equal(fc_mr_check_remote(t, pd2, k.rkey ^ 0x80000000u, 0, 999,
					    FC_MR_REMOTE_WRITE, &host), -FC_RDMA_EKEY);
	assert_int_equal(fc_mr_check_remote(t, pd2, k.rkey, 0, 999, FC_MR_REMOTE_WRITE, &host),
			 -FC_RDMA_EPD);
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0, 999, FC_MR_REMOTE_WRITE, &host),
			 -FC_RDMA_EACCESS);
	assert_ptr_equal(host, (void *)0x1); /* untouched on error */
	fc_mr_table_free(t);
}

static void test_check_local(void **state)
{
	uint32_t x = 0x777, pd, pd2;
	struct fc_mr_table *t = table(8, xs_rand, &x, &pd);
	struct fc_mr_keys k, kw;
	void *host = NULL;

	(void)state;
	rng = 777;
	assert_int_equal(fc_pd_alloc(t, &pd2), 0);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0x4000, 32, 0, &k), 0);
	assert_int_equal(fc_mr_reg(t, pd, mem + 32, 0x5000, 32, FC_MR_LOCAL_WRITE, &kw), 0);
	/* local read needs no permission */
	assert_int_equal(fc_mr_check_local(t, pd, k.lkey, 0x4000, 32, 0, &host), 0);
	assert_ptr_equal(host, mem);
	assert_int_equal(fc_mr_check_local(t, pd, k.lkey, 0x4000, 1, FC_MR_LOCAL_WRITE, &host),
			 -FC_RDMA_EACCESS);
	assert_int_equal(fc_mr_check_local(t, pd, kw.lkey, 0x5004, 4, FC_MR_LOCAL_WRITE, &host),
			 0);
	assert_ptr_equal(host, mem + 36);
	assert_int_equal(fc_mr_check_local(t, pd2, kw.lkey, 0x5004, 4, 0, &host), -FC_RDMA_EPD);
	assert_int_equal(fc_mr_check_local(t, pd, kw.lkey, 0x5004, 29, 0, &host),
			 -FC_RDMA_EBOUNDS);
	if (kw.rkey != kw.lkey)
		assert_int_equal(fc_mr_check_local(t, pd, kw.rkey, 0x5004, 4, 0, &host),
				 -FC_RDMA_EKEY);
	/* a region without remote permissions refuses every remote access */
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x4000, 1, FC_MR_REMOTE_READ, &host),
			 -FC_RDMA_EACCESS);
	fc_mr_table_free(t);
}

/* With a constant random source the keys of a slot differ only by generation: the keys
 * of the previous 255 registrations of the slot fail, the 256th earlier matches again
 * (the documented limit; real random bits make that a 2^-(24-B) chance). */
static void test_stale_keys(void **state)
{
	uint32_t x = 0x00C0FFEE, pd, i;
	struct fc_mr_table *t = table(1, const_rand, &x, &pd);
	struct fc_mr_keys keys[257];
	void *host;

	(void)state;
	for (i = 0; i < 257; i++) {
		assert_int_equal(fc_mr_reg(t, pd, mem, 0, 64, ALL_REMOTE, &keys[i]), 0);
		if (i >= 1 && i <= 255)
			assert_int_equal(fc_mr_check_remote(t, pd, keys[i - 1].rkey, 0, 8,
							    FC_MR_REMOTE_READ, &host),
					 -FC_RDMA_EKEY);
		if (i < 256)
			assert_int_equal(fc_mr_dereg(t, pd, keys[i].lkey), 0);
	}
	for (i = 1; i <= 255; i++) {
		assert_int_equal(fc_mr_check_remote(t, pd, keys[256 - i].rkey, 0, 8,
						    FC_MR_REMOTE_READ, &host), -FC_RDMA_EKEY);
		assert_int_equal(fc_mr_check_local(t, pd, keys[256 - i].lkey, 0, 8, 0, &host),
				 -FC_RDMA_EKEY);
	}
	assert_int_equal(keys[0].rkey, keys[256].rkey);
	assert_int_equal(fc_mr_check_remote(t, pd, keys[256].rkey, 0, 8, FC_MR_REMOTE_READ,
					    &host), 0);
	/* a deregistered key fails at once */
	assert_int_equal(fc_mr_dereg(t, pd, keys[256].lkey), 0);
	assert_int_equal(fc_mr_check_remote(t, pd, keys[256].rkey, 0, 8, FC_MR_REMOTE_READ,
					    &host), -FC_RDMA_EKEY);
	fc_mr_table_free(t);
}

static void test_invalidate(void **state)
{
	uint32_t x = 0x31337, pd, pd2;
	struct fc_mr_table *t = table(8, xs_rand, &x, &pd);
	struct fc_mr_keys k, kn;
	struct fc_mr_info info;
	void *host;

	(void)state;
	rng = 4242;
	assert_int_equal(fc_pd_alloc(t, &pd2), 0);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0x100, 64, ALL_REMOTE, &k), 0);
	assert_int_equal(fc_mr_reg(t, pd, mem, 0x100, 64, ALL_REMOTE & ~FC_MR_REMOTE_INVALIDATE,
				   &kn), 0);
	assert_int_equal(fc_mr_invalidate(t, pd, k.rkey ^ 0x10000000u), -FC_RDMA_EKEY);
	assert_int_equal(fc_mr_invalidate(t, pd2, k.rkey), -FC_RDMA_EPD);
	assert_int_equal(fc_mr_invalidate(t, pd, kn.rkey), -FC_RDMA_EACCESS);
	assert_int_equal(fc_mr_check_remote(t, pd, kn.rkey, 0x100, 8, FC_MR_REMOTE_READ, &host),
			 0);
	assert_int_equal(fc_mr_invalidate(t, pd, k.rkey), 0);
	/* both keys fail now, a second invalidation too; the slot stays until dereg */
	assert_int_equal(fc_mr_check_remote(t, pd, k.rkey, 0x100, 8, FC_MR_REMOTE_READ, &host),
			 -FC_RDMA_EKEY);
	assert_int_equal(fc_mr_check_local(t, pd, k.lkey, 0x100, 8, 0, &host), -FC_RDMA_EKEY);
	assert_int_equal(fc_mr_invalidate(t, pd, k.rkey), -FC_RDMA_EKEY);
	assert_int_equal(fc_mr_query(t, pd, k.lkey, &info), 0);
	assert_false(info.valid);
	assert_int_equal(fc_mr_count(t), 2);
	assert_int_equal(fc_mr_dereg(t, pd, k.lkey), 0);
	assert_int_equal(fc_mr_count(t), 1);
	fc_mr_table_free(t);
}

/* ------------------------------------------------------------------------ */
/* Error table                                                               */
/* ------------------------------------------------------------------------ */

/* Typed in from the IB rules with ibverbs' enum ibv_wc_status numbers (LOC_LEN_ERR 1,
 * LOC_PROT_ERR 4, REM_INV_REQ_ERR 9, REM_ACCESS_ERR 10, REM_OP_ERR 11,
 * RNR_RETRY_EXC_ERR 13) and the IB AETH NAK codes (1 invalid request, 2 remote access,
 * 3 remote operational); 0x20 RNR, 0xFF none. */
static void test_err_effect_table(void **state)
{
	static const struct {
		int err, site, nak, req, resp;
	} rows[] = {
		{ FC_RDMA_EKEY, FC_RDMA_SITE_LOCAL, 0, 4, 0xFF },
		{ FC_RDMA_EPD, FC_RDMA_SITE_LOCAL, 0, 4, 0xFF },
		{ FC_RDMA_EBOUNDS, FC_RDMA_SITE_LOCAL, 0, 4, 0xFF },
		{ FC_RDMA_EACCESS, FC_RDMA_SITE_LOCAL, 0, 4, 0xFF },
		{ FC_RDMA_ELEN, FC_RDMA_SITE_LOCAL, 0, 1, 0xFF },
		{ FC_RDMA_EKEY, FC_RDMA_SITE_RKEY, 2, 10, 0xFF },
		{ FC_RDMA_EPD, FC_RDMA_SITE_RKEY, 2, 10, 0xFF },
		{ FC_RDMA_EBOUNDS, FC_RDMA_SITE_RKEY, 2, 10, 0xFF },
		{ FC_RDMA_EACCESS, FC_RDMA_SITE_RKEY, 2, 10, 0xFF },
		{ FC_RDMA_EALIGN, FC_RDMA_SITE_RKEY, 1, 9, 0xFF },
		{ FC_RDMA_EKEY, FC_RDMA_SITE_RECV, 3, 11, 4 },
		{ FC_RDMA_EPD, FC_RDMA_SITE_RECV, 3, 11, 4 },
		{ FC_RDMA_EBOUNDS, FC_RDMA_SITE_RECV, 3, 11, 4 },
		{ FC_RDMA_EACCESS, FC_RDMA_SITE_RECV, 3, 11, 4 },
		{ FC_RDMA_ELEN, FC_RDMA_SITE_RECV, 1, 9, 1 },
		{ FC_RDMA_ERNR, FC_RDMA_SITE_RECV, 0x20, 13, 0xFF },
		{ FC_RDMA_EKEY, FC_RDMA_SITE_INVALIDATE, 1, 9, 9 },
		{ FC_RDMA_EPD, FC_RDMA_SITE_INVALIDATE, 1, 9, 9 },
		{ FC_RDMA_EACCESS, FC_RDMA_SITE_INVALIDATE, 1, 9, 9 },
	};
	struct fc_rdma_err_effect e;
	int err, site, found;
	size_t i;

	(void)state;
	for (err = FC_RDMA_EKEY - 1; err <= FC_RDMA_ERR_END; err++) {
		for (site = FC_RDMA_SITE_LOCAL; site <= FC_RDMA_SITE_INVALIDATE; site++) {
			found = -1;
			for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
				if (rows[i].err == err && rows[i].site == site)
					found = (int)i;
			memset(&e, 0xEE, sizeof(e));
			if (found < 0) {
				assert_int_equal(fc_rdma_err_effect(-err, site, &e), -EINVAL);
				continue;
			}
			assert_int_equal(fc_rdma_err_effect(-err, site, &e), 0);
			assert_int_equal(e.nak, rows[found].nak);
			assert_int_equal(e.req_status, rows[found].req);
			assert_int_equal(e.resp_status, rows[found].resp);
			/* the positive code is accepted too */
			assert_int_equal(fc_rdma_err_effect(err, site, &e), 0);
		}
	}
}

/* The reference model's own transcription of the table agrees with the engine's. */
static void test_err_effect_matches_model(void **state)
{
	struct fc_rdma_err_effect e;
	struct rm_result r;
	int err, site, n = 0;

	(void)state;
	for (err = FC_RDMA_EKEY; err < FC_RDMA_ERR_END; err++) {
		for (site = FC_RDMA_SITE_LOCAL; site <= FC_RDMA_SITE_INVALIDATE; site++) {
			r = rm_fail(-err, site);
			if (fc_rdma_err_effect(-err, site, &e)) {
				assert_int_equal(r.req_status, FC_WC_GENERAL_ERR);
				continue;
			}
			assert_int_equal(r.req_status, e.req_status);
			assert_int_equal(r.resp_status, e.resp_status);
			n++;
		}
	}
	assert_int_equal(n, 19);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(fc_rdma_strerror(-FC_RDMA_EKEY), "EKEY");
	assert_string_equal(fc_rdma_strerror(FC_RDMA_EBOUNDS), "EBOUNDS");
	assert_string_equal(fc_rdma_strerror(-FC_RDMA_ERNR), "ERNR");
	assert_string_equal(fc_rdma_strerror(-FC_RDMA_ERR_END), "?");
	assert_string_equal(fc_rdma_strerror(-EINVAL), "?");
	assert_string_equal(fc_wc_status_name(10), "REM_ACCESS_ERR");
	assert_string_equal(fc_wc_status_name(4), "LOC_PROT_ERR");
	assert_string_equal(fc_wc_status_name(0), "SUCCESS");
	assert_string_equal(fc_wc_status_name(3), "?");
	assert_string_equal(fc_wc_status_name(FC_WC_NONE), "NONE");
}

/* ------------------------------------------------------------------------ */
/* Random: engine checks against the model's                                 */
/* ------------------------------------------------------------------------ */

/* Region i's key, or a key near it. */
static uint32_t pick_key(const struct fc_mr_keys *k, uint32_t i, bool remote)
{
	uint32_t key = remote ? k[i].rkey : k[i].lkey;

	switch (fc_test_rand(&rng) % 8) {
	case 0: return key ^ (1u << (fc_test_rand(&rng) % 32));
	case 1: return remote ? k[i].lkey : k[i].rkey;
	case 2: return (uint32_t)fc_test_rand(&rng);
	default: return key;
	}
}

static uint64_t pick_near(uint64_t base, uint64_t len)
{
	switch (fc_test_rand(&rng) % 6) {
	case 0: return base + len - (fc_test_rand(&rng) % 4);
	case 1: return base - (fc_test_rand(&rng) % 4);
	case 2: return fc_test_rand(&rng);
	case 3: return UINT64_MAX - (fc_test_rand(&rng) % 16);
	default: return base + fc_test_rand(&rng) % (len + 1);
	}
}

static void test_random_vs_model(void **state)
{
	static struct rm_node node;
	uint64_t seed = fc_test_seed(0x3141592653589793ULL);
	uint32_t pd[2], x = 0, i, n = 8, iters = fc_test_quick() ? 20000 : 200000;
	struct fc_mr_table *t;
	struct fc_mr_keys k[8];
	uint64_t iova[8];
	uint32_t seen[5] = { 0 }; /* success, EKEY, EPD, EBOUNDS, EACCESS */

	(void)state;
	rng = seed ? seed : 1;
	t = fc_mr_table_new(8, 2, xs_rand, &x);
	assert_non_null(t);
	assert_int_equal(fc_pd_alloc(t, &pd[0]), 0);
	assert_int_equal(fc_pd_alloc(t, &pd[1]), 0);
	rm_init(&node, 1024);
	for (i = 0; i < n; i++) {
		uint32_t len = 1 + (uint32_t)(fc_test_rand(&rng) % 512);
		uint32_t acc = (uint32_t)fc_test_rand(&rng) & FC_MR_ACCESS_ALL;
		uint32_t off = i * 512;

		acc |= FC_MR_LOCAL_WRITE; /* REMOTE_WRITE/ATOMIC need it */
		iova[i] = i == n - 1 ? (UINT64_MAX - len) & ~7ull : fc_test_rand(&rng) & ~7ull;
		assert_int_equal(fc_mr_reg(t, pd[i % 2], mem + off, iova[i], len, acc, &k[i]), 0);
		assert_true(rm_mr_add(&node, pd[i % 2], off, iova[i], len, acc, k[i].lkey,
				      k[i].rkey) >= 0);
	}
	for (i = 0; i < iters; i++) {
		bool remote = fc_test_rand(&rng) & 1;
		uint32_t j = (uint32_t)(fc_test_rand(&rng) % n), key = pick_key(k, j, remote);
		uint32_t p = pd[(j + (fc_test_rand(&rng) % 4 == 0)) % 2];
		uint64_t len = fc_test_rand(&rng) % 8 ? fc_test_rand(&rng) % 600
						     : fc_test_rand(&rng);
		uint64_t va = pick_near(iova[j], len);
		uint32_t acc = (uint32_t)(fc_test_rand(&rng) & FC_MR_ACCESS_ALL), moff = 0;

		if (fc_test_rand(&rng) % 4) /* mostly permissions the region has */
			acc &= node.mr[j].access;
		const struct rm_mr *mr;
		void *host = NULL;
		int got, want;

		got = remote ? fc_mr_check_remote(t, p, key, va, len, acc, &host)
			     : fc_mr_check_local(t, p, key, va, len, acc, &host);
		want = rm_check(&node, p, key, remote, va, len, acc, &mr, &moff);
		if (got != want || (!got && host != (void *)(mem + moff)))
			fail_msg("seed %#llx iter %u: %s key %#x va %#llx len %#llx acc %#x: got "
				 "%d want %d", (unsigned long long)seed, i,
				 remote ? "remote" : "local", key, (unsigned long long)va,
				 (unsigned long long)len, acc, got, want);
		seen[got ? -got - FC_RDMA_EKEY + 1 : 0]++;
	}
	for (i = 0; i < 5; i++) /* every outcome was exercised */
		assert_true(seen[i] > iters / 50);
	fc_mr_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_args),
		cmocka_unit_test(test_pd),
		cmocka_unit_test(test_key_layout),
		cmocka_unit_test(test_reg_args),
		cmocka_unit_test(test_table_full_and_fifo_reuse),
		cmocka_unit_test(test_dereg_and_query),
		cmocka_unit_test(test_check_remote_ok),
		cmocka_unit_test(test_check_remote_errors),
		cmocka_unit_test(test_check_local),
		cmocka_unit_test(test_stale_keys),
		cmocka_unit_test(test_invalidate),
		cmocka_unit_test(test_err_effect_table),
		cmocka_unit_test(test_err_effect_matches_model),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_random_vs_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
