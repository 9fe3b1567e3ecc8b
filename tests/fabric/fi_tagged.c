/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_tagged - FI_TAGGED over the falcon provider (RDM), A sending to B:
 *   unexpected   messages sent before B posts any receive (more than the provider's
 *                receive slots): B takes them with exact tags, out of order, and with a
 *                wildcard (ignore bits), each with its bytes, tag, length and source
 *   expected     receives posted first match by tag, not by order
 *   wildcard     ignore bits choose among queued messages; the oldest match wins
 *   separation   an untagged message does not match a tagged receive, and the reverse
 *   truncation   a message longer than its receive completes FI_ETRUNC with olen
 *   peek/claim   FI_PEEK finds a queued message without taking it, FI_CLAIM takes it;
 *                FI_PEEK of nothing completes FI_ENOMSG
 *   cancel       fi_cancel of a posted receive completes it FI_ECANCELED
 *   rendezvous   messages above 64 KiB (the receiver READs them): 3 MiB into a receive
 *                posted first, 200 KiB that waits unexpected for its receive, 1 MiB with
 *                CQ data into a 100 KiB receive (FI_ETRUNC, olen, the data); each send
 *                completes once the receiver has it
 */
#include "fitest.h"

#define NUNEXP 100        /* beyond the provider's 64 receive slots */
#define BIG 65536
#define RV1 (3u * 1048576 + 5)
#define RV2 (200u * 1024)
#define RV3 (1048576u)

static uint8_t pat(uint64_t tag, size_t i)
{
	return (uint8_t)(tag * 31 + i * 7 + 3);
}

static void fill(uint8_t *b, uint64_t tag, size_t len)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(tag, i);
}

static int same(const uint8_t *b, uint64_t tag, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pat(tag, i))
			return 0;
	return 1;
}

static size_t len_of(unsigned i)
{
	return i % 10 == 9 ? BIG : 1 + i * 37 % 3000;
}

/* A: send with tag, waiting for the send's completion */
static void tsend(struct fit *t, const void *buf, size_t len, uint64_t tag, void *ctx)
{
	struct fi_cq_tagged_entry e;
	ssize_t r;
	uint64_t end = fit_now_ms() + FIT_WAIT_MS;

	do {
		r = fi_tsend(t->ep, buf, len, NULL, t->peer, tag, ctx);
		if (r == -FI_EAGAIN)
			fi_cq_read(t->txcq, &e, 0);
	} while (r == -FI_EAGAIN && fit_now_ms() < end);
	CHECK(r == 0, "fi_tsend tag %#" PRIx64 ": %zd", tag, r);
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == ctx &&
	      (e.flags & (FI_SEND | FI_TAGGED)) == (FI_SEND | FI_TAGGED),
	      "the send of tag %#" PRIx64 " did not complete", tag);
}

static void a_side(struct fit *t)
{
	static uint8_t buf[BIG];
	int ctx;

	/* unexpected: NUNEXP messages, tags 0x1000 + i */
	for (unsigned i = 0; i < NUNEXP; i++) {
		fill(buf, 0x1000 + i, len_of(i));
		tsend(t, buf, len_of(i), 0x1000 + i, &ctx);
	}
	fit_sync(t); /* B takes them */
	fit_sync(t); /* B has posted the expected receives */
	fill(buf, 0x77, 500);
	tsend(t, buf, 500, 0x77, &ctx);
	fill(buf, 0x99, 600);
	tsend(t, buf, 600, 0x99, &ctx);
	/* wildcard: tags 0xabc0001, 0xdef0002, 0xabc0003 */
	fill(buf, 0xabc0001, 100);
	tsend(t, buf, 100, 0xabc0001, &ctx);
	fill(buf, 0xdef0002, 100);
	tsend(t, buf, 100, 0xdef0002, &ctx);
	fill(buf, 0xabc0003, 100);
	tsend(t, buf, 100, 0xabc0003, &ctx);
	/* separation: an untagged message, then a tagged one */
	fill(buf, 0, 64);
	CHECK(fi_send(t->ep, buf, 64, NULL, t->peer, &ctx) == 0, "fi_send");
	{
		struct fi_cq_tagged_entry e;

		CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && (e.flags & FI_MSG),
		      "the untagged send did not complete");
	}
	fill(buf, 0x5e9, 64);
	tsend(t, buf, 64, 0x5e9, &ctx);
	fit_sync(t);
	/* truncation */
	fill(buf, 0x7c, 100);
	tsend(t, buf, 100, 0x7c, &ctx);
	/* peek / claim */
	fill(buf, 0x9ee, 300);
	tsend(t, buf, 300, 0x9ee, &ctx);
	fit_sync(t);
	/* rendezvous */
	{
		uint8_t *b1 = malloc(RV1), *b2 = malloc(RV2), *b3 = malloc(RV3);
		struct fi_cq_tagged_entry e;
		int c1, c2, c3, seen = 0;

		CHECK(b1 && b2 && b3, "malloc");
		fill(b1, 0xb1, RV1);
		fill(b2, 0xb2, RV2);
		fill(b3, 0xb3, RV3);
		fit_sync(t); /* B has posted the first receive */
		CHECK(fi_tsend(t->ep, b1, RV1, NULL, t->peer, 0xb1, &c1) == 0, "fi_tsend 3 MiB");
		CHECK(fi_tsend(t->ep, b2, RV2, NULL, t->peer, 0xb2, &c2) == 0, "fi_tsend 200 KiB");
		CHECK(fi_tsenddata(t->ep, b3, RV3, NULL, 77, t->peer, 0xb3, &c3) == 0,
		      "fi_tsenddata 1 MiB");
		fit_sync(t);
		for (int k = 0; k < 3; k++) {
			CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "rendezvous send %d", k);
			seen |= e.op_context == &c1 ? 1 : e.op_context == &c2 ? 2 : e.op_context == &c3 ? 4 : 8;
		}
		CHECK(seen == 7, "the rendezvous sends completed as %#x", seen);
		fit_sync(t);
		free(b1);
		free(b2);
		free(b3);
	}
}

static void b_side(struct fit *t)
{
	static uint8_t rbuf[BIG];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src = FI_ADDR_UNSPEC;
	int c1, c2, c3;

	fit_sync(t);
	/* unexpected, exact tags, in reverse order */
	for (int i = NUNEXP - 1; i >= 0; i -= 3) {
		size_t len = len_of((unsigned)i);

		memset(rbuf, 0, len);
		CHECK(fi_trecv(t->ep, rbuf, BIG, NULL, FI_ADDR_UNSPEC, 0x1000u + (unsigned)i, 0, &c1) == 0,
		      "fi_trecv %d", i);
		CHECK(fit_wait(t->rxcq, &e, &src, FIT_WAIT_MS) == 1 && e.op_context == &c1 &&
		      e.tag == 0x1000u + (unsigned)i && e.len == len && src == t->peer &&
		      (e.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
		      "unexpected message %d: tag %#" PRIx64 " len %zu src %" PRIu64, i, e.tag, e.len,
		      (uint64_t)src);
		CHECK(same(rbuf, 0x1000u + (unsigned)i, len), "unexpected message %d: bytes differ", i);
	}
	/* the rest with a wildcard: ignore the low 8 bits of 0x10xx, oldest first */
	for (unsigned i = 0, n = 0; i < NUNEXP; i++) {
		if ((NUNEXP - 1 - i) % 3 == 0)
			continue; /* taken above */
		CHECK(fi_trecv(t->ep, rbuf, BIG, NULL, FI_ADDR_UNSPEC, 0x1000, 0xff, &c1) == 0,
		      "fi_trecv wildcard");
		CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.tag == 0x1000u + i &&
		      e.len == len_of(i) && same(rbuf, e.tag, e.len),
		      "wildcard receive %u took tag %#" PRIx64 " (%zu bytes)", n, e.tag, e.len);
		n++;
	}
	CHECK(fit_quiet(t->rxcq, 100), "a completion without a receive");
	/* expected, posted in the other order than the sends */
	CHECK(fi_trecv(t->ep, rbuf, 1000, NULL, FI_ADDR_UNSPEC, 0x99, 0, &c1) == 0, "trecv 0x99");
	CHECK(fi_trecv(t->ep, rbuf + 1000, 1000, NULL, FI_ADDR_UNSPEC, 0x77, 0, &c2) == 0,
	      "trecv 0x77");
	fit_sync(t);
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &c2 && e.tag == 0x77 &&
	      e.len == 500 && same(rbuf + 1000, 0x77, 500), "the 0x77 receive");
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &c1 && e.tag == 0x99 &&
	      e.len == 600 && same(rbuf, 0x99, 600), "the 0x99 receive");
	fit_sync(t);
	/* wildcard among queued ones: 0xabc???? takes 0xabc0001 then 0xabc0003 */
	for (int k = 0; k < 2; k++) {
		uint64_t want = k ? 0xabc0003 : 0xabc0001;

		CHECK(fi_trecv(t->ep, rbuf, 1000, NULL, FI_ADDR_UNSPEC, 0xabc0000, 0xffff, &c1) == 0,
		      "trecv wildcard");
		CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.tag == want && same(rbuf, want, 100),
		      "wildcard %d: tag %#" PRIx64 ", not %#" PRIx64, k, e.tag, want);
	}
	CHECK(fi_trecv(t->ep, rbuf, 1000, NULL, FI_ADDR_UNSPEC, 0xdef0002, 0, &c1) == 0, "trecv");
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.tag == 0xdef0002, "tag 0xdef0002");
	/* separation: a tagged receive with every bit ignored takes the tagged message, not
	 * the untagged one that came first; fi_recv takes that one */
	CHECK(fi_trecv(t->ep, rbuf, 1000, NULL, FI_ADDR_UNSPEC, 0, ~0ull, &c1) == 0, "trecv any");
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.tag == 0x5e9 && (e.flags & FI_TAGGED),
	      "the tagged receive took tag %#" PRIx64 " flags %#" PRIx64, e.tag, e.flags);
	CHECK(fi_recv(t->ep, rbuf, 1000, NULL, FI_ADDR_UNSPEC, &c2) == 0, "fi_recv");
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &c2 && e.len == 64 &&
	      (e.flags & FI_MSG) && !(e.flags & FI_TAGGED) && same(rbuf, 0, 64), "the untagged receive");
	/* truncation: 100 bytes into 10 */
	CHECK(fi_trecv(t->ep, rbuf, 10, NULL, FI_ADDR_UNSPEC, 0x7c, 0, &c3) == 0, "trecv 10 B");
	fit_sync(t);
	CHECK(fit_err(t->rxcq, &err, FIT_WAIT_MS) && err.err == FI_ETRUNC && err.olen == 90 &&
	      err.op_context == &c3 && err.len == 10, "truncation: err %d olen %zu len %zu", err.err,
	      err.olen, err.len);
	/* peek, claim */
	{
		struct fi_context pctx;
		struct iovec iov = { rbuf, 1000 };
		struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
					   .tag = 0x9ee, .ignore = 0, .context = &pctx };

		CHECK(fi_trecvmsg(t->ep, &m, FI_PEEK) == 0, "peek");
		CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.len == 300 && e.tag == 0x9ee,
		      "peek found %zu bytes tag %#" PRIx64, e.len, e.tag);
		CHECK(fi_trecvmsg(t->ep, &m, FI_PEEK | FI_CLAIM) == 0, "peek+claim");
		CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.len == 300, "peek+claim");
		/* claimed: an ordinary receive of the tag does not get it */
		CHECK(fi_trecvmsg(t->ep, &(struct fi_msg_tagged){ .msg_iov = &iov, .iov_count = 1,
				  .addr = FI_ADDR_UNSPEC, .tag = 0xbad, .context = &c1 }, FI_PEEK) == 0,
		      "peek of nothing");
		CHECK(fit_err(t->rxcq, &err, FIT_WAIT_MS) && err.err == FI_ENOMSG,
		      "peek of nothing: err %d", err.err);
		memset(rbuf, 0, 300);
		CHECK(fi_trecvmsg(t->ep, &m, FI_CLAIM) == 0, "claim");
		CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &pctx &&
		      e.len == 300 && same(rbuf, 0x9ee, 300), "the claimed message");
	}
	/* cancel */
	CHECK(fi_trecv(t->ep, rbuf, 10, NULL, FI_ADDR_UNSPEC, 0xcafe, 0, &c1) == 0, "trecv to cancel");
	CHECK(fi_cancel(&t->ep->fid, &c1) == 0, "fi_cancel");
	CHECK(fit_err(t->rxcq, &err, FIT_WAIT_MS) && err.err == FI_ECANCELED && err.op_context == &c1,
	      "the cancelled receive: err %d", err.err);
	CHECK(fi_cancel(&t->ep->fid, &c1) == -FI_ENOENT, "a second fi_cancel found something");
	/* rendezvous */
	{
		uint8_t *r1 = malloc(RV1 + 4096), *r2 = malloc(RV2), *r3 = malloc(100000);

		CHECK(r1 && r2 && r3, "malloc");
		CHECK(fi_trecv(t->ep, r1, RV1 + 4096, NULL, FI_ADDR_UNSPEC, 0xb1, 0, &c1) == 0,
		      "trecv 3 MiB");
		fit_sync(t);
		fit_sync(t); /* A has sent all three */
		CHECK(fit_wait(t->rxcq, &e, &src, FIT_WAIT_MS) == 1 && e.op_context == &c1 &&
		      e.len == RV1 && e.tag == 0xb1 && src == t->peer && same(r1, 0xb1, RV1),
		      "the 3 MiB message: %zu bytes", e.len);
		CHECK(fi_trecv(t->ep, r2, RV2, NULL, FI_ADDR_UNSPEC, 0xb2, 0, &c2) == 0, "trecv 200 KiB");
		CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &c2 &&
		      e.len == RV2 && same(r2, 0xb2, RV2), "the 200 KiB message: %zu bytes", e.len);
		CHECK(fi_trecv(t->ep, r3, 100000, NULL, FI_ADDR_UNSPEC, 0xb3, 0, &c3) == 0, "trecv 100 KB");
		CHECK(fit_err(t->rxcq, &err, FIT_WAIT_MS) && err.err == FI_ETRUNC &&
		      err.olen == RV3 - 100000 && err.len == 100000 && err.data == 77 &&
		      (err.flags & FI_REMOTE_CQ_DATA) && err.op_context == &c3,
		      "the 1 MiB message into 100 KB: err %d olen %zu data %" PRIu64, err.err, err.olen,
		      err.data);
		CHECK(same(r3, 0xb3, 100000), "the truncated message's first 100 KB");
		fit_sync(t);
		free(r1);
		free(r2);
		free(r3);
	}
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
	return fit_run("fi_tagged", argc, argv, FI_TAGGED | FI_MSG, run);
}
