/* SPDX-License-Identifier: Apache-2.0 */
/*
 * atomic.h - execution of the RDMA atomics at the responder: 64-bit CmpSwap and FetchAdd
 * (IB, RDMA spec 8.3.6) and their masked forms of RFC 7306 section 5.1.
 *
 * A plain operation is the masked one with the masks that make it plain, the values
 * wire_rdma's decoder fills in for plain opcodes: FetchAdd = add mask 0 (RFC 7306
 * 5.1.1: a plain 64-bit add); CmpSwap = compare mask ~0 and swap mask ~0.
 *
 * Memory is the 64-bit word at a host address, in host byte order (RFC 7306 5.1.1:
 * "performed in the endian format of the target memory"; the wire_rdma codec already
 * converted the operands from big-endian). The read-modify-write is a compare-and-swap
 * loop with GCC __atomic builtins on that word, so it is atomic with respect to every
 * other operation of this file on the same word, from any thread (RFC 7306 5.3 and 5.4
 * rule 2: atomicity among the atomics of one "RNIC"); plain loads and stores of the
 * client sharing the memory are not ordered against it (allowed by the same rule).
 * Each call is sequentially consistent.
 *
 * Errors (memory untouched, *orig untouched):
 *   -EINVAL          addr NULL or orig NULL;
 *   -FC_RDMA_EALIGN  addr not 8-byte aligned (RFC 7306 5.1.1, 5.1.2, 8.2).
 */
#ifndef FC_ATOMIC_H
#define FC_ATOMIC_H

#include <stdint.h>

#include "mr.h"

/* The value a masked FetchAdd leaves: orig + add computed field by field, the carry out of
 * every bit set in add_mask discarded (RFC 7306 5.1.1). Pure. */
uint64_t fc_masked_add(uint64_t orig, uint64_t add, uint64_t add_mask);

/* The value a masked CmpSwap leaves (RFC 7306 5.1.2): if orig equals compare on the bits
 * of compare_mask, orig's swap_mask bits replaced by swap's, else orig. Pure. */
uint64_t fc_masked_cmp_swap_result(uint64_t orig, uint64_t compare, uint64_t compare_mask,
				   uint64_t swap, uint64_t swap_mask);

/* Atomically *addr = fc_masked_add(*addr, add, add_mask); *orig = the old value.
 * Returns 0 or an error of the file comment. */
int fc_atomic_masked_fetch_add(void *addr, uint64_t add, uint64_t add_mask, uint64_t *orig);

/* Atomically *addr = fc_masked_cmp_swap_result(*addr, ...); *orig = the old value. When
 * the comparison fails the word is not written. Returns 0 or an error of the file comment. */
int fc_atomic_masked_cmp_swap(void *addr, uint64_t compare, uint64_t compare_mask,
			      uint64_t swap, uint64_t swap_mask, uint64_t *orig);

/* Plain FetchAdd (add mask 0) and CmpSwap (masks ~0). Same returns. */
int fc_atomic_fetch_add(void *addr, uint64_t add, uint64_t *orig);
int fc_atomic_cmp_swap(void *addr, uint64_t compare, uint64_t swap, uint64_t *orig);

#endif
