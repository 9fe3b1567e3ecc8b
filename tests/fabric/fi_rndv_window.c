/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_rndv_window - both sides post a window of rendezvous messages at once, as osu_bibw
 * does (issue 25 item 7: with a window of 60 or more 128 KiB messages it deadlocked: every
 * transmit slot but the control reserve was held by a rendezvous send waiting for its FIN,
 * so no rendezvous READ could ever be posted on either side).
 *   A and B each post a window of receives of FIT_LEN bytes, then as many sends of FIT_LEN
 *   bytes in a burst until one is refused (-FI_EAGAIN), then the rest while reading both
 *   CQs (as MPI does), and wait until every send
 *   and every receive completed, each receive with the other side's pattern; for windows of
 *   16, 64 and 128 (the transmit queue holds 60).
 */
#include "fitest.h"

#define FIT_LEN (128u * 1024u)
#define FIT_WIN_MAX 128u

static uint8_t sbuf[FIT_LEN], rbuf[FIT_WIN_MAX][FIT_LEN];

static void window(struct fit *t, unsigned win)
{
	struct fi_cq_tagged_entry e;
	unsigned sent = 0, posted = 0, scomp = 0, rcomp = 0, bad = 0;
	uint64_t end = fit_now_ms() + 30000;

	memset(sbuf, 'a' + t->role, sizeof(sbuf));
	for (unsigned i = 0; i < win; i++) {
		memset(rbuf[i], 0, FIT_LEN);
		CHECK(fi_trecv(t->ep, rbuf[i], FIT_LEN, NULL, FI_ADDR_UNSPEC, 7, 0, rbuf[i]) == 0,
		      "fi_trecv %u", i);
	}
	fit_sync(t);
	/* the window in a burst, as MPI_Isend in a loop does: no CQ read until one is refused */
	while (posted < win) {
		ssize_t r = fi_tsend(t->ep, sbuf, FIT_LEN, NULL, t->peer, 7, sbuf);

		if (r == -FI_EAGAIN)
			break;
		if (r)
			fit_die("fi_tsend", (int)r);
		posted++;
	}
	while ((scomp < win || rcomp < win) && fit_now_ms() < end) {
		if (posted < win) {
			ssize_t r = fi_tsend(t->ep, sbuf, FIT_LEN, NULL, t->peer, 7, sbuf);

			if (r == 0)
				posted++;
			else if (r != -FI_EAGAIN)
				fit_die("fi_tsend", (int)r);
		}
		if (fi_cq_read(t->txcq, &e, 1) == 1)
			scomp++;
		if (fi_cq_read(t->rxcq, &e, 1) == 1) {
			const uint8_t *b = e.op_context;

			rcomp++;
			if (e.len != FIT_LEN || b[0] != 'b' - t->role || b[FIT_LEN - 1] != 'b' - t->role)
				bad++;
		}
	}
	sent = posted;
	CHECK(sent == win && scomp == win && rcomp == win,
	      "window %u: %u sends posted, %u completed, %u receives completed (deadlock?)", win,
	      sent, scomp, rcomp);
	CHECK(!bad, "window %u: %u receives with the wrong data", win, bad);
	fit_sync(t);
}

static void run(struct fit *t)
{
	window(t, 16);
	window(t, 64);
	window(t, FIT_WIN_MAX);
}

int main(int argc, char **argv)
{
	return fit_run("fi_rndv_window", argc, argv, FI_TAGGED, run);
}
