/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_atomic - FI_ATOMIC over the falcon provider (RDM): what falcon has natively on one
 * 64-bit integer (executed by the daemons), everything else of ofi_rxm's set run by the
 * target's provider (fabric/atomic.c).
 *   valid      fi_atomicvalid / fi_fetch_atomicvalid / fi_compare_atomicvalid and
 *              fi_query_atomic accept every op on every integer type, the ordered and
 *              arithmetic ones on floating point, FI_SUM / FI_PROD / the logical ones /
 *              FI_CSWAP / FI_CSWAP_NE on complex, and refuse the bitwise ones and FI_MSWAP on floating point,
 *              order on complex, FI_ATOMIC_READ without a result, a compare op as a write
 *   native     FI_SUM returns the old value and adds; FI_ATOMIC_READ reads; FI_ATOMIC_WRITE
 *              swaps in and returns the old; FI_CSWAP swaps on equal and not on unequal;
 *              FI_MSWAP changes only the bits of the mask; fi_atomic FI_SUM 100 times adds
 *              100 times (B checks its memory); a bad key completes FI_EACCES
 *   emulated   fetch FI_MIN on 4 FI_INT32, FI_SUM on 2 doubles, FI_CSWAP_GT on FI_UINT16,
 *              fetch FI_MAX on a float and on FI_INT64, FI_CSWAP on a double complex,
 *              FI_SUM on 2 FI_INT64: old values returned, B's memory changed as the op
 *              says; a bad key and a range beyond the registration complete FI_EACCES;
 *              more elements than fi_query_atomic's count: -FI_EINVAL
 */
#include <complex.h>

#include "fitest.h"

struct target {
	uint64_t addr, key;
};

static void valid_checks(struct fit *t)
{
	static const enum fi_op ints_all[] = { FI_MIN, FI_MAX, FI_SUM, FI_PROD, FI_LOR, FI_LAND,
					       FI_BOR, FI_BAND, FI_LXOR, FI_BXOR, FI_ATOMIC_WRITE };
	static const enum fi_datatype ints[] = { FI_INT8, FI_UINT8, FI_INT16, FI_UINT16, FI_INT32,
						 FI_UINT32, FI_INT64, FI_UINT64 };
	struct fi_atomic_attr aa;
	size_t count;

	/* integers: every op of ofi_rxm */
	for (size_t d = 0; d < sizeof(ints) / sizeof(ints[0]); d++)
		for (size_t i = 0; i < sizeof(ints_all) / sizeof(ints_all[0]); i++) {
			count = 0;
			CHECK(fi_atomicvalid(t->ep, ints[d], ints_all[i], &count) == 0 && count >= 1,
			      "op %d on datatype %d refused", ints_all[i], ints[d]);
			CHECK(fi_fetch_atomicvalid(t->ep, ints[d], ints_all[i], &count) == 0,
			      "fetch op %d on datatype %d refused", ints_all[i], ints[d]);
		}
	for (int op = FI_CSWAP; op <= FI_MSWAP; op++)
		CHECK(fi_compare_atomicvalid(t->ep, FI_UINT32, op, &count) == 0,
		      "compare op %d on FI_UINT32 refused", op);
	CHECK(fi_fetch_atomicvalid(t->ep, FI_UINT64, FI_ATOMIC_READ, &count) == 0, "FI_ATOMIC_READ");
	CHECK(fi_atomicvalid(t->ep, FI_UINT64, FI_ATOMIC_READ, &count) == -FI_EOPNOTSUPP,
	      "FI_ATOMIC_READ without a result accepted");
	CHECK(fi_atomicvalid(t->ep, FI_UINT64, FI_CSWAP, &count) == -FI_EOPNOTSUPP,
	      "FI_CSWAP as a non-compare atomic accepted");
	/* floating point: no bitwise ops, no FI_MSWAP; complex: no order */
	CHECK(fi_atomicvalid(t->ep, FI_DOUBLE, FI_SUM, &count) == 0, "FI_SUM on doubles refused");
	CHECK(fi_fetch_atomicvalid(t->ep, FI_FLOAT, FI_MIN, &count) == 0, "FI_MIN on floats refused");
	CHECK(fi_atomicvalid(t->ep, FI_DOUBLE, FI_BOR, &count) == -FI_EOPNOTSUPP, "FI_BOR on doubles");
	CHECK(fi_compare_atomicvalid(t->ep, FI_DOUBLE, FI_MSWAP, &count) == -FI_EOPNOTSUPP,
	      "FI_MSWAP on doubles");
	CHECK(fi_atomicvalid(t->ep, FI_FLOAT_COMPLEX, FI_MIN, &count) == -FI_EOPNOTSUPP,
	      "FI_MIN on complex");
	CHECK(fi_compare_atomicvalid(t->ep, FI_DOUBLE_COMPLEX, FI_CSWAP, &count) == 0,
	      "FI_CSWAP on complex refused");
	CHECK(fi_compare_atomicvalid(t->ep, FI_DOUBLE_COMPLEX, FI_CSWAP_LT, &count) == -FI_EOPNOTSUPP,
	      "FI_CSWAP_LT on complex");
	CHECK(fi_query_atomic(t->domain, FI_UINT64, FI_SUM, &aa, FI_FETCH_ATOMIC) == 0 &&
	      aa.size == 8 && aa.count >= 1, "fi_query_atomic FI_SUM: size %zu count %zu", aa.size,
	      aa.count);
	CHECK(fi_query_atomic(t->domain, FI_INT32, FI_MIN, &aa, 0) == 0 && aa.size == 4,
	      "fi_query_atomic FI_MIN on FI_INT32");
}

/* emulated atomics (run by B's provider) on target + 64.. */
static void emulated(struct fit *t, const struct target *tg)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int32_t one[4] = { 1, 1, 1, 1 }, old32[4] = { 0 };
	double half[2] = { 0.5, 0.5 };
	uint16_t u16 = 100, c16 = 9, r16 = 0;
	float f5 = 5.0f, rf = 0;
	double _Complex z = 3.0 + 4.0 * _Complex_I, zc = 1.0 + 2.0 * _Complex_I, zr = 0;
	int64_t add[2] = { 1, 2 }, nine = 9, r64 = 0;
	int ctx;

	CHECK(fi_fetch_atomic(t->ep, one, 4, NULL, old32, NULL, t->peer, tg->addr + 64, tg->key,
			      FI_INT32, FI_MIN, &ctx) == 0, "fetch FI_MIN on 4 FI_INT32");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &ctx &&
	      old32[0] == 5 && old32[1] == -3 && old32[2] == 10 && old32[3] == 0,
	      "FI_MIN returned %d %d %d %d", old32[0], old32[1], old32[2], old32[3]);
	CHECK(fi_atomic(t->ep, half, 2, NULL, t->peer, tg->addr + 96, tg->key, FI_DOUBLE, FI_SUM,
			&ctx) == 0, "FI_SUM on 2 doubles");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && (e.flags & FI_WRITE), "its completion");
	CHECK(fi_compare_atomic(t->ep, &u16, 1, NULL, &c16, NULL, &r16, NULL, t->peer,
				tg->addr + 112, tg->key, FI_UINT16, FI_CSWAP_GT, &ctx) == 0,
	      "FI_CSWAP_GT on FI_UINT16");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && r16 == 7, "FI_CSWAP_GT returned %u",
	      r16);
	CHECK(fi_fetch_atomic(t->ep, &f5, 1, NULL, &rf, NULL, t->peer, tg->addr + 116, tg->key,
			      FI_FLOAT, FI_MAX, &ctx) == 0, "fetch FI_MAX on a float");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && rf == 3.0f, "FI_MAX returned %f",
	      (double)rf);
	CHECK(fi_compare_atomic(t->ep, &z, 1, NULL, &zc, NULL, &zr, NULL, t->peer, tg->addr + 128,
				tg->key, FI_DOUBLE_COMPLEX, FI_CSWAP, &ctx) == 0,
	      "FI_CSWAP on a double complex");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && zr == zc,
	      "FI_CSWAP on complex returned the wrong old value");
	CHECK(fi_atomic(t->ep, add, 2, NULL, t->peer, tg->addr + 160, tg->key, FI_INT64, FI_SUM,
			&ctx) == 0, "FI_SUM on 2 FI_INT64 (emulated: count 2)");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "its completion");
	CHECK(fi_fetch_atomic(t->ep, &nine, 1, NULL, &r64, NULL, t->peer, tg->addr + 176, tg->key,
			      FI_INT64, FI_MAX, &ctx) == 0, "fetch FI_MAX on FI_INT64");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && r64 == 5, "FI_MAX returned %" PRId64,
	      r64);
	/* refusals the target makes: a bad key, a range beyond the registration */
	CHECK(fi_atomic(t->ep, one, 1, NULL, t->peer, tg->addr + 64, tg->key + 77, FI_INT32, FI_MIN,
			&ctx) == 0, "an emulated atomic with a bad key");
	CHECK(fit_err(t->txcq, &err, FIT_WAIT_MS) && err.err == FI_EACCES,
	      "an emulated atomic with a bad key: err %d", err.err);
	CHECK(fi_atomic(t->ep, one, 4, NULL, t->peer, tg->addr + 248, tg->key, FI_INT32, FI_MIN,
			&ctx) == 0, "an emulated atomic across the registration's end");
	CHECK(fit_err(t->txcq, &err, FIT_WAIT_MS) && err.err == FI_EACCES,
	      "an emulated atomic beyond the registration: err %d", err.err);
	CHECK(fi_atomic(t->ep, one, 100000, NULL, t->peer, tg->addr + 64, tg->key, FI_INT32, FI_MIN,
			&ctx) == -FI_EINVAL, "an atomic beyond fi_query_atomic's count was posted");
	CHECK(fi_atomic(t->ep, half, 1, NULL, t->peer, tg->addr + 96, tg->key, FI_DOUBLE, FI_BOR,
			&ctx) == -FI_EOPNOTSUPP, "FI_BOR on a double was posted");
}

static void a_side(struct fit *t)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct target tg;
	uint64_t op, cmp, res;
	int ctx;

	valid_checks(t);
	fit_get(t, &tg, sizeof(tg)); /* B: target[0] = 1000, [1] = 0xf0f0, [2] = 0 */
	emulated(t, &tg);
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
	uint64_t *tb = aligned_alloc(64, 256);
	uint8_t *eb = (uint8_t *)tb + 64;
	int32_t i32[4] = { 5, -3, 10, 0 };
	double d2[2] = { 1.5, 2.5 };
	uint16_t u16 = 7;
	float f = 3.0f;
	double _Complex z = 1.0 + 2.0 * _Complex_I;
	int64_t i64[3] = { 10, 20, 5 };
	struct fid_mr *mr;
	struct target tg;

	tb[0] = 1000;
	tb[1] = 0xf0f0;
	tb[2] = 0;
	memcpy(eb, i32, sizeof(i32));
	memcpy(eb + 32, d2, sizeof(d2));
	memcpy(eb + 48, &u16, sizeof(u16));
	memcpy(eb + 52, &f, sizeof(f));
	memcpy(eb + 64, &z, sizeof(z));
	memcpy(eb + 96, i64, sizeof(i64));
	CHECK(fi_mr_reg(t->domain, tb, 256, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0,
	      "fi_mr_reg");
	tg = (struct target){ (uint64_t)(uintptr_t)tb, fi_mr_key(mr) };
	fit_put(t, &tg, sizeof(tg));
	fit_sync(t);
	CHECK(tb[0] == 42, "target[0] is %" PRIu64 ", not 42", tb[0]);
	CHECK(tb[1] == 0xf034, "target[1] is %#" PRIx64 ", not 0xf034", tb[1]);
	CHECK(tb[2] == 300, "target[2] is %" PRIu64 ", not 300", tb[2]);
	memcpy(i32, eb, sizeof(i32));
	CHECK(i32[0] == 1 && i32[1] == -3 && i32[2] == 1 && i32[3] == 0,
	      "FI_MIN left %d %d %d %d", i32[0], i32[1], i32[2], i32[3]);
	memcpy(d2, eb + 32, sizeof(d2));
	CHECK(d2[0] == 2.0 && d2[1] == 3.0, "FI_SUM left %f %f", d2[0], d2[1]);
	memcpy(&u16, eb + 48, sizeof(u16));
	CHECK(u16 == 100, "FI_CSWAP_GT left %u", u16);
	memcpy(&f, eb + 52, sizeof(f));
	CHECK(f == 5.0f, "FI_MAX left %f", (double)f);
	memcpy(&z, eb + 64, sizeof(z));
	CHECK(z == 3.0 + 4.0 * _Complex_I, "FI_CSWAP on complex did not swap");
	memcpy(i64, eb + 96, sizeof(i64));
	CHECK(i64[0] == 11 && i64[1] == 22 && i64[2] == 9, "FI_SUM / FI_MAX on FI_INT64 left %" PRId64
	      " %" PRId64 " %" PRId64, i64[0], i64[1], i64[2]);
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
