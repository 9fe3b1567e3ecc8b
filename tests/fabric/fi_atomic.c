/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_atomic - FI_ATOMIC over the falcon provider (RDM): what falcon has natively on
 * 64-bit integers, and nothing else.
 *   valid      fi_atomicvalid / fi_fetch_atomicvalid / fi_compare_atomicvalid and
 *              fi_query_atomic accept FI_SUM, FI_ATOMIC_READ, FI_ATOMIC_WRITE, FI_CSWAP,
 *              FI_MSWAP on FI_UINT64 / FI_INT64 (count 1) and refuse FI_BOR, FI_MIN,
 *              FI_CSWAP_NE, FI_UINT32, FI_DOUBLE; an atomic call with them is refused
 *   fetch      FI_SUM returns the old value and adds; FI_ATOMIC_READ reads; FI_ATOMIC_WRITE
 *              swaps in and returns the old
 *   compare    FI_CSWAP swaps on equal and not on unequal, returning the old value either
 *              way; FI_MSWAP changes only the bits of the mask
 *   non-fetch  fi_atomic FI_SUM 100 times from A adds 100 times (B checks its memory)
 *   bad key    completes FI_EACCES
 */
#include "fitest.h"

struct target {
	uint64_t addr, key;
};

static void a_side(struct fit *t)
{
	static const enum fi_op ok_fetch[] = { FI_SUM, FI_ATOMIC_READ, FI_ATOMIC_WRITE };
	static const enum fi_op bad[] = { FI_BOR, FI_MIN, FI_BAND, FI_PROD, FI_LXOR };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_atomic_attr aa;
	struct target tg;
	uint64_t op, cmp, res;
	size_t count;
	int ctx;

	/* what is valid */
	for (size_t i = 0; i < sizeof(ok_fetch) / sizeof(ok_fetch[0]); i++) {
		count = 0;
		CHECK(fi_fetch_atomicvalid(t->ep, FI_UINT64, ok_fetch[i], &count) == 0 && count == 1,
		      "fetch op %d on FI_UINT64 refused", ok_fetch[i]);
		CHECK(fi_fetch_atomicvalid(t->ep, FI_UINT32, ok_fetch[i], &count) == -FI_EOPNOTSUPP,
		      "fetch op %d on FI_UINT32 accepted", ok_fetch[i]);
	}
	CHECK(fi_atomicvalid(t->ep, FI_INT64, FI_SUM, &count) == 0, "FI_SUM on FI_INT64 refused");
	CHECK(fi_atomicvalid(t->ep, FI_DOUBLE, FI_SUM, &count) == -FI_EOPNOTSUPP, "FI_SUM on doubles");
	CHECK(fi_compare_atomicvalid(t->ep, FI_UINT64, FI_CSWAP, &count) == 0, "FI_CSWAP refused");
	CHECK(fi_compare_atomicvalid(t->ep, FI_UINT64, FI_MSWAP, &count) == 0, "FI_MSWAP refused");
	CHECK(fi_compare_atomicvalid(t->ep, FI_UINT64, FI_CSWAP_NE, &count) == -FI_EOPNOTSUPP,
	      "FI_CSWAP_NE accepted");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(fi_atomicvalid(t->ep, FI_UINT64, bad[i], &count) == -FI_EOPNOTSUPP &&
		      fi_fetch_atomicvalid(t->ep, FI_UINT64, bad[i], &count) == -FI_EOPNOTSUPP,
		      "op %d accepted", bad[i]);
		CHECK(fi_query_atomic(t->domain, FI_UINT64, bad[i], &aa, 0) == -FI_EOPNOTSUPP,
		      "fi_query_atomic accepted op %d", bad[i]);
	}
	CHECK(fi_query_atomic(t->domain, FI_UINT64, FI_SUM, &aa, FI_FETCH_ATOMIC) == 0 &&
	      aa.size == 8 && aa.count == 1, "fi_query_atomic FI_SUM: size %zu count %zu", aa.size,
	      aa.count);

	fit_get(t, &tg, sizeof(tg)); /* B: target[0] = 1000, [1] = 0xf0f0, [2] = 0 */
	op = 1;
	CHECK(fi_atomic(t->ep, &op, 1, NULL, t->peer, tg.addr, tg.key, FI_UINT64, FI_BOR, &ctx) ==
	      -FI_EOPNOTSUPP, "fi_atomic FI_BOR was posted");
	CHECK(fi_atomic(t->ep, &op, 2, NULL, t->peer, tg.addr, tg.key, FI_UINT64, FI_SUM, &ctx) ==
	      -FI_EINVAL, "an atomic of 2 elements was posted");
	/* fetch-add */
	op = 5;
	res = 0;
	CHECK(fi_fetch_atomic(t->ep, &op, 1, NULL, &res, NULL, t->peer, tg.addr, tg.key, FI_UINT64,
			      FI_SUM, &ctx) == 0, "fi_fetch_atomic FI_SUM");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &ctx &&
	      (e.flags & FI_ATOMIC), "FI_SUM's completion");
	CHECK(res == 1000, "FI_SUM returned %" PRIu64 ", not 1000", res);
	res = 0;
	CHECK(fi_fetch_atomic(t->ep, NULL, 1, NULL, &res, NULL, t->peer, tg.addr, tg.key, FI_UINT64,
			      FI_ATOMIC_READ, &ctx) == 0, "FI_ATOMIC_READ");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && res == 1005,
	      "FI_ATOMIC_READ read %" PRIu64 ", not 1005", res);
	op = 7777;
	CHECK(fi_fetch_atomic(t->ep, &op, 1, NULL, &res, NULL, t->peer, tg.addr, tg.key, FI_UINT64,
			      FI_ATOMIC_WRITE, &ctx) == 0, "FI_ATOMIC_WRITE");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && res == 1005,
	      "FI_ATOMIC_WRITE returned %" PRIu64, res);
	/* compare-swap: equal, then unequal */
	cmp = 7777;
	op = 42;
	CHECK(fi_compare_atomic(t->ep, &op, 1, NULL, &cmp, NULL, &res, NULL, t->peer, tg.addr, tg.key,
				FI_UINT64, FI_CSWAP, &ctx) == 0, "FI_CSWAP");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && res == 7777,
	      "FI_CSWAP (equal) returned %" PRIu64, res);
	cmp = 1;
	op = 43;
	CHECK(fi_compare_atomic(t->ep, &op, 1, NULL, &cmp, NULL, &res, NULL, t->peer, tg.addr, tg.key,
				FI_UINT64, FI_CSWAP, &ctx) == 0, "FI_CSWAP");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && res == 42,
	      "FI_CSWAP (unequal) returned %" PRIu64, res);
	/* masked swap on target[1] = 0xf0f0: bits 0x00ff from 0x1234 */
	cmp = 0x00ff;
	op = 0x1234;
	CHECK(fi_compare_atomic(t->ep, &op, 1, NULL, &cmp, NULL, &res, NULL, t->peer, tg.addr + 8,
				tg.key, FI_UINT64, FI_MSWAP, &ctx) == 0, "FI_MSWAP");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && res == 0xf0f0,
	      "FI_MSWAP returned %#" PRIx64, res);
	/* non-fetching adds on target[2] */
	for (int i = 0; i < 100; i++) {
		op = 3;
		CHECK(fi_atomic(t->ep, &op, 1, NULL, t->peer, tg.addr + 16, tg.key, FI_UINT64, FI_SUM,
				&ctx) == 0, "fi_atomic %d", i);
		CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && (e.flags & FI_WRITE),
		      "fi_atomic %d's completion", i);
	}
	/* a bad key */
	CHECK(fi_fetch_atomic(t->ep, &op, 1, NULL, &res, NULL, t->peer, tg.addr, tg.key + 77,
			      FI_UINT64, FI_SUM, &ctx) == 0, "an atomic with a bad key");
	CHECK(fit_err(t->txcq, &err, FIT_WAIT_MS) && err.err == FI_EACCES,
	      "an atomic with a bad key: err %d", err.err);
	fit_sync(t);
}

static void b_side(struct fit *t)
{
	uint64_t *tb = aligned_alloc(64, 64);
	struct fid_mr *mr;
	struct target tg;

	tb[0] = 1000;
	tb[1] = 0xf0f0;
	tb[2] = 0;
	CHECK(fi_mr_reg(t->domain, tb, 64, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0,
	      "fi_mr_reg");
	tg = (struct target){ (uint64_t)(uintptr_t)tb, fi_mr_key(mr) };
	fit_put(t, &tg, sizeof(tg));
	fit_sync(t);
	CHECK(tb[0] == 42, "target[0] is %" PRIu64 ", not 42", tb[0]);
	CHECK(tb[1] == 0xf034, "target[1] is %#" PRIx64 ", not 0xf034", tb[1]);
	CHECK(tb[2] == 300, "target[2] is %" PRIu64 ", not 300", tb[2]);
	fi_close(&mr->fid);
	free(tb);
}

static void run(struct fit *t)
{
	if (t->role == 0)
		a_side(t);
	else
		b_side(t);
}

int main(int argc, char **argv)
{
	return fit_run("fi_atomic", argc, argv, FI_ATOMIC | FI_MSG, run);
}
