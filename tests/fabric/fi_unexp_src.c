/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_unexp_src - a directed receive matches a message that arrived before its sender was
 * in the AV (issue 25 item 7: osu_allreduce with 4 ranks hung with a 4-byte message in the
 * unexpected queue under FI_ADDR_NOTAVAIL while a receive from that very peer waited).
 *   A removes B from its AV; B sends a 4-byte tagged message and an 8-byte untagged one;
 *   A progresses (both go to the unexpected queue, their source unknown), inserts B
 *   again, and posts receives directed at B's new fi_addr: both complete, with B as their
 *   source (fi_cq_readfrom); a FI_PEEK for B's tag finds nothing afterwards.
 */
#include "fitest.h"

static void run(struct fit *t)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_NOTAVAIL, fa = FI_ADDR_NOTAVAIL;
	uint32_t small = 0x5eed;
	uint64_t big = 0x1234;

	if (!t->role) {
		CHECK(fi_av_remove(t->av, &t->peer, 1, 0) == 0, "fi_av_remove");
		fit_sync(t);
		fit_sync(t); /* B sent */
		CHECK(fit_quiet(t->rxcq, 300), "a completion without a receive");
		CHECK(fi_av_insert(t->av, t->peer_name, 1, &fa, 0, NULL) == 1, "fi_av_insert again");
		small = big = 0;
		CHECK(fi_trecv(t->ep, &small, sizeof(small), NULL, fa, 42, 0, &small) == 0, "fi_trecv");
		CHECK(fit_wait(t->rxcq, &e, &src, FIT_WAIT_MS) == 1 && e.op_context == &small &&
		      small == 0x5eed, "the directed tagged receive did not match the unexpected message");
		CHECK(src == fa, "its source %" PRIu64 ", not %" PRIu64, src, fa);
		CHECK(fi_recv(t->ep, &big, sizeof(big), NULL, fa, &big) == 0, "fi_recv");
		CHECK(fit_wait(t->rxcq, &e, &src, FIT_WAIT_MS) == 1 && e.op_context == &big &&
		      big == 0x1234, "the directed receive did not match the unexpected message");
		t->peer = fa;
	} else {
		fit_sync(t);
		CHECK(fi_tsend(t->ep, &small, sizeof(small), NULL, t->peer, 42, &small) == 0, "fi_tsend");
		CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "its completion");
		CHECK(fi_send(t->ep, &big, sizeof(big), NULL, t->peer, &big) == 0, "fi_send");
		CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "its completion");
		fit_sync(t);
	}
}

int main(int argc, char **argv)
{
	return fit_run("fi_unexp_src", argc, argv, FI_MSG | FI_TAGGED | FI_DIRECTED_RECV, run);
}
