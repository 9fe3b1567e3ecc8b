/* SPDX-License-Identifier: Apache-2.0 */
/*
 * atomic.c - RDMA atomics, plain and RFC 7306 masked. See atomic.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "atomic.h"

/*
 * RFC 7306 5.1.1 adds bit by bit and drops the carry out of every bit set in the mask.
 * The same in one addition: with the mask bits cleared in both operands, no carry can
 * leave a mask bit (0 + 0 + carry-in <= 1), and the carry into it lands in it; the
 * operands' own mask bits are then added in modulo 2 (xor), their carry discarded.
 */
uint64_t fc_masked_add(uint64_t orig, uint64_t add, uint64_t add_mask)
{
	return ((orig & ~add_mask) + (add & ~add_mask)) ^ ((orig ^ add) & add_mask);
}

/* RFC 7306 5.1.2 pseudocode. */
uint64_t fc_masked_cmp_swap_result(uint64_t orig, uint64_t compare, uint64_t compare_mask,
				   uint64_t swap, uint64_t swap_mask)
{
	if ((compare ^ orig) & compare_mask)
		return orig;
	return (orig & ~swap_mask) | (swap & swap_mask);
}

static int check_addr(const void *addr, const uint64_t *orig)
{
	if (!addr || !orig)
		return -EINVAL;
	if ((uintptr_t)addr & 7)
		return -FC_RDMA_EALIGN;
	return 0;
}

int fc_atomic_masked_fetch_add(void *addr, uint64_t add, uint64_t add_mask, uint64_t *orig)
{
	uint64_t *p = addr, old;
	int err = check_addr(addr, orig);

	if (err)
		return err;
	if (!add_mask) {
		*orig = __atomic_fetch_add(p, add, __ATOMIC_SEQ_CST);
		return 0;
	}
	old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
	/* on failure old is reloaded; bounded by concurrent writers making progress */
	while (!__atomic_compare_exchange_n(p, &old, fc_masked_add(old, add, add_mask), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	*orig = old;
	return 0;
}

int fc_atomic_masked_cmp_swap(void *addr, uint64_t compare, uint64_t compare_mask,
			      uint64_t swap, uint64_t swap_mask, uint64_t *orig)
{
	uint64_t *p = addr, old, val;
	int err = check_addr(addr, orig);

	if (err)
		return err;
	old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
	for (;;) {
		val = fc_masked_cmp_swap_result(old, compare, compare_mask, swap, swap_mask);
		if (val == old)
			break; /* comparison failed or nothing changes: no write (5.1.2) */
		if (__atomic_compare_exchange_n(p, &old, val, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			break;
	}
	*orig = old;
	return 0;
}

int fc_atomic_fetch_add(void *addr, uint64_t add, uint64_t *orig)
{
	return fc_atomic_masked_fetch_add(addr, add, 0, orig);
}

int fc_atomic_cmp_swap(void *addr, uint64_t compare, uint64_t swap, uint64_t *orig)
{
	return fc_atomic_masked_cmp_swap(addr, compare, ~0ULL, swap, ~0ULL, orig);
}
