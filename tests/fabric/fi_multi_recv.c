/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_multi_recv - FI_MULTI_RECV (fi_msg(3)) on the falcon provider (RDM); before issue 25
 * the capability was not offered (fabtests' fi_multi_recv failed).
 *   B sets FI_OPT_MIN_MULTI_RECV to 1024 (fi_getopt reads it back); A sends two messages of
 *   1000 bytes; B posts one 4096-byte buffer with FI_MULTI_RECV (the two queued messages
 *   land in it), A sends two more: four completions, at offsets 0, 1000, 2000, 3000 of the
 *   buffer, each with its sender's bytes, and only the fourth (96 bytes left, below the
 *   minimum) carries FI_MULTI_RECV: the buffer is released. FI_MULTI_RECV with two iovs
 *   is -FI_EINVAL.
 */
#include "fitest.h"

static void run(struct fit *t)
{
	static uint8_t buf[4096], msg[1000];
	struct fi_cq_tagged_entry e;
	size_t min = 1024, got = 0, len = sizeof(got);

	if (!t->role) {
		fit_sync(t);
		for (int i = 0; i < 4; i++) {
			memset(msg, 'a' + i, sizeof(msg));
			CHECK(fi_send(t->ep, msg, sizeof(msg), NULL, t->peer, NULL) == 0, "fi_send %d", i);
			CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "send %d's completion", i);
			if (i == 1)
				fit_sync(t); /* B posts its buffer now */
		}
		fit_sync(t);
		return;
	}
	CHECK(fi_setopt(&t->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)) == 0,
	      "fi_setopt FI_OPT_MIN_MULTI_RECV");
	CHECK(fi_getopt(&t->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got, &len) == 0 &&
	      got == 1024, "fi_getopt: %zu", got);
	fit_sync(t);
	fit_sync(t); /* two messages sent */
	CHECK(fit_quiet(t->rxcq, 200), "a completion without a receive");
	{
		struct iovec iov = { buf, sizeof(buf) }, two[2] = { { buf, 8 }, { buf + 8, 8 } };
		struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				    .context = buf };

		CHECK(fi_recvmsg(t->ep, &m, FI_MULTI_RECV) == 0, "fi_recvmsg FI_MULTI_RECV");
		m.msg_iov = two;
		m.iov_count = 2;
		CHECK(fi_recvmsg(t->ep, &m, FI_MULTI_RECV) == -FI_EINVAL, "FI_MULTI_RECV with 2 iovs");
	}
	for (int i = 0; i < 4; i++) {
		const uint8_t *p;

		CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1, "message %d's completion", i);
		p = e.buf;
		CHECK(e.op_context == buf && p == buf + 1000 * i && e.len == 1000 && p[0] == 'a' + i &&
		      p[999] == 'a' + i, "message %d at %td, %zu bytes", i, p - buf, e.len);
		CHECK(!!(e.flags & FI_MULTI_RECV) == (i == 3), "message %d: FI_MULTI_RECV %s", i,
		      e.flags & FI_MULTI_RECV ? "set" : "not set");
	}
	fit_sync(t);
}

int main(int argc, char **argv)
{
	return fit_run("fi_multi_recv", argc, argv, FI_MSG | FI_MULTI_RECV, run);
}
