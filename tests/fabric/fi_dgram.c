/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_dgram - FI_EP_DGRAM over the falcon provider (a UD QP):
 *   datagrams  A sends 40 of sizes up to max_msg_size into receives B posted, 8 at a
 *              time (a datagram that finds no buffer at B is dropped: DGRAM is not
 *              flow-controlled); B gets each one's bytes and length, with A as the source
 *              (FI_SOURCE: fi_cq_readfrom), in order
 *   early      datagrams that come before their receive wait for it
 *   limits     a datagram above max_msg_size is refused (-FI_EMSGSIZE); tagged sends, RMA
 *              and remote CQ data are not DGRAM's (-FI_EOPNOTSUPP)
 */
#include "fitest.h"

#define N 40
#define BATCH 8

static uint8_t pat(unsigned k, size_t i)
{
	return (uint8_t)(k * 17 + i * 5 + 9);
}

static size_t len_of(const struct fit *t, unsigned k)
{
	size_t max = t->info->ep_attr->max_msg_size;

	return k == N - 1 ? max : 1 + (k * 211) % max;
}

static void a_side(struct fit *t)
{
	size_t max = t->info->ep_attr->max_msg_size;
	uint8_t *buf = malloc(max + 1);
	struct fi_cq_tagged_entry e;
	int ctx;

	CHECK(max >= 1024 && max < 65536, "DGRAM max_msg_size %zu", max);
	fit_sync(t); /* B has posted N receives */
	for (unsigned k = 0; k < N; k++) {
		if (k % BATCH == 0 && k)
			fit_sync(t); /* B has taken the last batch */
		for (size_t i = 0; i < len_of(t, k); i++)
			buf[i] = pat(k, i);
		CHECK(fi_send(t->ep, buf, len_of(t, k), NULL, t->peer, &ctx) == 0, "fi_send %u", k);
		CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &ctx,
		      "datagram %u's send completion", k);
	}
	/* early: sent before B posts its receive */
	memset(buf, 0xee, 100);
	CHECK(fi_send(t->ep, buf, 100, NULL, t->peer, &ctx) == 0, "fi_send early");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "the early datagram's completion");
	CHECK(fi_send(t->ep, buf, max + 1, NULL, t->peer, &ctx) == -FI_EMSGSIZE,
	      "a datagram above max_msg_size was taken");
	CHECK(fi_tsend(t->ep, buf, 8, NULL, t->peer, 1, &ctx) == -FI_EOPNOTSUPP,
	      "a tagged send on DGRAM was taken");
	CHECK(fi_senddata(t->ep, buf, 8, NULL, 1, t->peer, &ctx) == -FI_EOPNOTSUPP,
	      "remote CQ data on DGRAM was taken");
	CHECK(fi_write(t->ep, buf, 8, NULL, t->peer, 0, 0, &ctx) == -FI_EOPNOTSUPP,
	      "an RMA WRITE on DGRAM was taken");
	fit_sync(t);
	free(buf);
}

static void b_side(struct fit *t)
{
	size_t max = t->info->ep_attr->max_msg_size;
	uint8_t *rb = malloc(N * max);
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int ctx[N];

	for (unsigned k = 0; k < N; k++)
		CHECK(fi_recv(t->ep, rb + k * max, max, NULL, FI_ADDR_UNSPEC, &ctx[k]) == 0,
		      "fi_recv %u", k);
	fit_sync(t);
	for (unsigned k = 0; k < N; k++) {
		int ok = 1;

		if (k % BATCH == 0 && k)
			fit_sync(t);
		src = FI_ADDR_UNSPEC;
		CHECK(fit_wait(t->rxcq, &e, &src, FIT_WAIT_MS) == 1 && e.op_context == &ctx[k] &&
		      e.len == len_of(t, k) && src == t->peer,
		      "datagram %u: %zu bytes from %" PRIu64, k, e.len, (uint64_t)src);
		for (size_t i = 0; i < len_of(t, k); i++)
			ok &= rb[k * max + i] == pat(k, i);
		CHECK(ok, "datagram %u: bytes differ", k);
	}
	fit_sync(t);
	memset(rb, 0, 100);
	CHECK(fi_recv(t->ep, rb, max, NULL, FI_ADDR_UNSPEC, &ctx[0]) == 0, "fi_recv late");
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.len == 100 && rb[0] == 0xee &&
	      rb[99] == 0xee, "the early datagram");
	free(rb);
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
	return fit_run_type("fi_dgram", argc, argv, FI_MSG, FI_EP_DGRAM, run);
}
