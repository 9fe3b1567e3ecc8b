/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_rma - FI_RMA over the falcon provider (RDM): B registers a target (FI_REMOTE_READ |
 * FI_REMOTE_WRITE) and a read-only region and sends A their addresses and keys; A
 *   writes    64 KiB and 1 byte with fi_write, from registered memory (a descriptor) and
 *             from unregistered memory (no descriptor), B checks the bytes
 *   reads     them back with fi_read into registered and unregistered memory
 *   writedata fi_writedata: B's receive CQ gets FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE with
 *             the data, the bytes are in place
 *   errors    a WRITE with a wrong key, a WRITE into the read-only region and a READ past
 *             the region's end complete in error (fi_cq_readerr: FI_EACCES, a provider
 *             errno fi_cq_strerror names); the endpoint goes on: a WRITE after them lands
 *   large     above 64 KiB (one falcon work request each: the daemon segments it): a 3 MiB
 *             WRITE from unregistered memory, READ back into registered memory, a 3 MiB
 *             fi_writedata whose CQ data comes after all its bytes, a 3 MiB WRITE with a
 *             bad key fails
 *   limits    a READ above max_msg_size is refused (-FI_EMSGSIZE)
 */
#include "fitest.h"

#define LEN 65536
#define BIGLEN (3u * 1048576 + 3 * 4096 + 77)

struct target {
	uint64_t addr, key, ro_addr, ro_key, big_addr, big_key;
};

static uint8_t pat(size_t i, unsigned round)
{
	return (uint8_t)(i * 13 + round * 101 + 1);
}

static void a_side(struct fit *t)
{
	uint8_t *reg = aligned_alloc(4096, LEN), *plain = malloc(LEN), *back = aligned_alloc(4096, LEN);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fid_mr *mr;
	struct target tg;
	int ctx;
	char msg[128];

	CHECK(reg && plain && back, "malloc");
	CHECK(fi_mr_reg(t->domain, reg, LEN, FI_READ | FI_WRITE, 0, 0, 0, &mr, NULL) == 0, "fi_mr_reg");
	fit_get(t, &tg, sizeof(tg));
	for (size_t i = 0; i < LEN; i++) {
		reg[i] = pat(i, 1);
		plain[i] = pat(i, 2);
	}
	/* round 1: registered source, whole region */
	CHECK(fi_write(t->ep, reg, LEN, fi_mr_desc(mr), t->peer, tg.addr, tg.key, &ctx) == 0,
	      "fi_write");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &ctx &&
	      (e.flags & (FI_RMA | FI_WRITE)) == (FI_RMA | FI_WRITE), "the WRITE's completion");
	fit_sync(t); /* round 1 is there */
	fit_sync(t); /* B has checked it */
	/* READ back into unregistered memory */
	memset(back, 0, LEN);
	CHECK(fi_read(t->ep, back, LEN, NULL, t->peer, tg.addr, tg.key, &ctx) == 0, "fi_read");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && (e.flags & (FI_RMA | FI_READ)) ==
	      (FI_RMA | FI_READ), "the READ's completion");
	CHECK(!memcmp(back, reg, LEN), "READ into unregistered memory: bytes differ");
	/* round 2: unregistered source, then READ into registered memory at an offset */
	CHECK(fi_write(t->ep, plain, LEN, NULL, t->peer, tg.addr, tg.key, &ctx) == 0, "fi_write");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "the second WRITE's completion");
	memset(reg, 0, LEN);
	CHECK(fi_read(t->ep, reg + 100, 1000, fi_mr_desc(mr), t->peer, tg.addr + 5000, tg.key,
		      &ctx) == 0, "fi_read registered");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "the second READ's completion");
	CHECK(!memcmp(reg + 100, plain + 5000, 1000), "READ into registered memory: bytes differ");
	fit_sync(t); /* round 2 is there */
	fit_sync(t); /* B has checked it */
	/* writedata */
	memset(plain, 0xd7, 256);
	CHECK(fi_writedata(t->ep, plain, 256, NULL, 0xfeedbeef, t->peer, tg.addr + 256, tg.key,
			   &ctx) == 0, "fi_writedata");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "writedata's completion");
	fit_sync(t);
	/* errors */
	CHECK(fi_write(t->ep, plain, 64, NULL, t->peer, tg.addr, tg.key ^ 0x5a5a00, &ctx) == 0,
	      "fi_write with a bad key");
	CHECK(fit_err(t->txcq, &err, FIT_WAIT_MS) && err.err == FI_EACCES && err.op_context == &ctx,
	      "a bad key: err %d (%s)", err.err, fi_strerror(err.err));
	fi_cq_strerror(t->txcq, err.prov_errno, err.err_data, msg, sizeof(msg));
	CHECK(strstr(msg, "ACCESS") != NULL, "fi_cq_strerror says '%s'", msg);
	CHECK(fi_write(t->ep, plain, 64, NULL, t->peer, tg.ro_addr, tg.ro_key, &ctx) == 0,
	      "fi_write into the read-only region");
	CHECK(fit_err(t->txcq, &err, FIT_WAIT_MS) && err.err == FI_EACCES,
	      "a WRITE into read-only memory: err %d", err.err);
	CHECK(fi_read(t->ep, back, 64, NULL, t->peer, tg.addr + LEN - 32, tg.key, &ctx) == 0,
	      "fi_read past the end");
	CHECK(fit_err(t->txcq, &err, FIT_WAIT_MS) && err.err != 0,
	      "a READ past the region's end: err %d", err.err);
	CHECK(fi_write(t->ep, plain, 8, NULL, t->peer, tg.addr + 8192, tg.key, &ctx) == 0,
	      "fi_write after the errors");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "a WRITE after the errors failed");
	CHECK(fi_read(t->ep, back, t->info->ep_attr->max_msg_size + 1, NULL, t->peer, tg.addr,
		      tg.key, &ctx) == -FI_EMSGSIZE, "a READ above max_msg_size was taken");
	fit_sync(t);
	/* large */
	{
		uint8_t *big = malloc(BIGLEN), *bigback = aligned_alloc(4096, BIGLEN + 4096 - BIGLEN % 4096);
		struct fid_mr *bmr;

		CHECK(big && bigback, "malloc");
		CHECK(fi_mr_reg(t->domain, bigback, BIGLEN, FI_READ | FI_WRITE, 0, 0, 0, &bmr, NULL) == 0,
		      "fi_mr_reg big");
		for (size_t i = 0; i < BIGLEN; i++)
			big[i] = pat(i, 3);
		CHECK(fi_write(t->ep, big, BIGLEN, NULL, t->peer, tg.big_addr, tg.big_key, &ctx) == 0,
		      "a 3 MiB fi_write");
		CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &ctx &&
		      (e.flags & FI_WRITE), "the 3 MiB WRITE's completion");
		CHECK(fit_quiet(t->txcq, 50), "a second completion for the 3 MiB WRITE");
		fit_sync(t);
		fit_sync(t); /* B has checked it */
		memset(bigback, 0, BIGLEN);
		CHECK(fi_read(t->ep, bigback, BIGLEN, fi_mr_desc(bmr), t->peer, tg.big_addr, tg.big_key,
			      &ctx) == 0, "a 3 MiB fi_read");
		CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && (e.flags & FI_READ),
		      "the 3 MiB READ's completion");
		CHECK(!memcmp(bigback, big, BIGLEN), "the 3 MiB READ's bytes differ");
		for (size_t i = 0; i < BIGLEN; i++)
			big[i] = pat(i, 4);
		CHECK(fi_writedata(t->ep, big, BIGLEN, NULL, 0x600dda7a, t->peer, tg.big_addr,
				   tg.big_key, &ctx) == 0, "a 3 MiB fi_writedata");
		CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "the 3 MiB writedata's completion");
		fit_sync(t);
		fit_sync(t); /* B has checked it */
		CHECK(fi_write(t->ep, big, BIGLEN, NULL, t->peer, tg.big_addr, tg.big_key ^ 0x3c3c00,
			       &ctx) == 0, "a 3 MiB fi_write with a bad key");
		CHECK(fit_err(t->txcq, &err, FIT_WAIT_MS) && err.err == FI_EACCES && err.op_context == &ctx,
		      "a 3 MiB WRITE with a bad key: err %d", err.err);
		CHECK(fit_quiet(t->txcq, 50), "more completions for the failed 3 MiB WRITE");
		fi_close(&bmr->fid);
		free(big);
		free(bigback);
	}
	fi_close(&mr->fid);
	free(reg);
	free(plain);
	free(back);
}

static void b_side(struct fit *t)
{
	uint8_t *tb = aligned_alloc(4096, LEN), *ro = aligned_alloc(4096, 4096), *bigt = malloc(BIGLEN);
	struct fid_mr *mr, *romr, *bigmr;
	struct fi_cq_tagged_entry e;
	struct target tg;
	fi_addr_t src = FI_ADDR_UNSPEC;
	int ok = 1;

	CHECK(tb && ro, "malloc");
	memset(tb, 0, LEN);
	CHECK(fi_mr_reg(t->domain, tb, LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0,
	      "fi_mr_reg target");
	CHECK(fi_mr_reg(t->domain, ro, 4096, FI_REMOTE_READ, 0, 0, 0, &romr, NULL) == 0,
	      "fi_mr_reg read-only");
	CHECK(bigt != NULL, "malloc");
	CHECK(fi_mr_reg(t->domain, bigt, BIGLEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &bigmr,
			NULL) == 0, "fi_mr_reg big target");
	tg = (struct target){ (uint64_t)(uintptr_t)tb, fi_mr_key(mr), (uint64_t)(uintptr_t)ro,
			      fi_mr_key(romr), (uint64_t)(uintptr_t)bigt, fi_mr_key(bigmr) };
	CHECK(tg.key != FI_KEY_NOTAVAIL && tg.key != tg.ro_key, "keys %" PRIx64 " %" PRIx64, tg.key,
	      tg.ro_key);
	fit_put(t, &tg, sizeof(tg));
	fit_sync(t);
	for (size_t i = 0; i < LEN; i++)
		ok &= tb[i] == pat(i, 1);
	CHECK(ok, "round 1: the target's bytes differ");
	fit_sync(t);
	fit_sync(t);
	ok = 1;
	for (size_t i = 0; i < LEN && ok; i++)
		if (tb[i] != pat(i, 2)) {
			ok = 0;
			fprintf(stderr, "B: byte %zu is %#x, not %#x (round 1's %#x)\n", i, tb[i],
				pat(i, 2), pat(i, 1));
		}
	CHECK(ok, "round 2: the target's bytes differ");
	fit_sync(t);
	fit_sync(t);
	CHECK(fit_wait(t->rxcq, &e, &src, FIT_WAIT_MS) == 1 &&
	      (e.flags & (FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE)) == (FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE) &&
	      e.data == 0xfeedbeef && src == t->peer, "writedata at the target: flags %#" PRIx64
	      " data %#" PRIx64, e.flags, e.data);
	ok = 1;
	for (size_t i = 256; i < 512; i++)
		ok &= tb[i] == 0xd7;
	CHECK(ok && tb[255] == pat(255, 2) && tb[512] == pat(512, 2), "writedata's bytes");
	fit_sync(t);
	CHECK(tb[0] == pat(0, 2), "the bad-key WRITE changed the target");
	CHECK(fit_quiet(t->rxcq, 50), "the failed operations completed at the target");
	fit_sync(t);
	/* large */
	ok = 1;
	for (size_t i = 0; i < BIGLEN; i++)
		ok &= bigt[i] == pat(i, 3);
	CHECK(ok, "the 3 MiB WRITE's bytes at the target differ");
	fit_sync(t);
	fit_sync(t);
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && (e.flags & FI_REMOTE_CQ_DATA) &&
	      e.data == 0x600dda7a, "the 3 MiB writedata's CQ data: flags %#" PRIx64, e.flags);
	CHECK(fit_quiet(t->rxcq, 50), "more than one CQ data completion for one writedata");
	ok = 1;
	for (size_t i = 0; i < BIGLEN; i++)
		ok &= bigt[i] == pat(i, 4);
	CHECK(ok, "the 3 MiB writedata's bytes at the target differ");
	fit_sync(t);
	fi_close(&mr->fid);
	fi_close(&romr->fid);
	fi_close(&bigmr->fid);
	free(tb);
	free(ro);
	free(bigt);
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
	return fit_run("fi_rma", argc, argv, FI_RMA | FI_MSG, run);
}
