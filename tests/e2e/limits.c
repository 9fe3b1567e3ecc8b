/* SPDX-License-Identifier: Apache-2.0 */
/*
 * limits - falcond's limits are honoured and say so (issue 21, "hidden limits"; run by
 * tests/e2e/test_scale.sh):
 *
 *   limits SOCK KIND N ERRNO [CM_ADDR]
 *
 * One context (one client) on the daemon at SOCK makes objects of KIND (qp: RC QPs by
 * falcon_create_qp; mr: regions of one buffer; cq; pd; conn: RC QPs connected to the
 * daemon at CM_ADDR, service 18700, where a listener accepts them) until one is refused.
 * Passes when exactly N were made and the refusal was ERRNO (ENOSPC, EDQUOT): it prints
 * "holding" and keeps its objects until a signal ends it (the daemon releases them
 * then), so that a second client can meet the daemon-wide limit. Else it exits 1.
 *
 *   limits SOCK listen N     a listener on service 18700 accepting N QPs, then waiting
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "falcon/falcon.h"

#define SERVICE 18700
#define CAP 100000

static int errno_of(const char *s)
{
	return !strcmp(s, "ENOSPC") ? ENOSPC : !strcmp(s, "EDQUOT") ? EDQUOT :
	       !strcmp(s, "ENOMEM") ? ENOMEM : atoi(s);
}

static void hold(void)
{
	printf("holding\n");
	fflush(stdout);
	for (;;)
		pause(); /* until SIGTERM */
}

static int listen_side(struct falcon_context *ctx, struct falcon_pd *pd, struct falcon_cq *cq,
		       int n)
{
	struct falcon_listener *l = falcon_listen(ctx, SERVICE, 64);
	struct falcon_qp_init_attr a = { .size = sizeof(a), .send_cq = cq, .recv_cq = cq,
					 .max_send_wr = 1, .max_recv_wr = 1, .max_inflight = 1 };

	if (!l) {
		fprintf(stderr, "limits: listen: %s\n", falcon_strerror(errno));
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	for (int i = 0; i < n; i++)
		if (!falcon_accept(l, pd, &a, 20000)) {
			fprintf(stderr, "limits: accept %d: %s\n", i + 1, falcon_strerror(errno));
			return 1;
		}
	hold();
	return 0;
}

int main(int argc, char **argv)
{
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	void *buf;
	int n, want, made = 0, err = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: limits SOCK qp|mr|cq|pd|conn|listen N [ERRNO [CM_ADDR]]\n");
		return 2;
	}
	n = atoi(argv[3]);
	if (!(ctx = falcon_open(argv[1])) || !(pd = falcon_alloc_pd(ctx)) ||
	    !(cq = falcon_create_cq(ctx, 64)) || !(buf = falcon_alloc_buf(ctx, 4096))) {
		fprintf(stderr, "limits: setup: %s\n", falcon_strerror(errno));
		return 1;
	}
	if (!strcmp(argv[2], "listen"))
		return listen_side(ctx, pd, cq, n);
	if (argc < 5 || (!strcmp(argv[2], "conn") && argc < 6))
		return 2;
	want = errno_of(argv[4]);
	for (; made < CAP; made++) {
		struct falcon_qp_init_attr a = { .size = sizeof(a), .send_cq = cq, .recv_cq = cq,
						 .max_send_wr = 1, .max_recv_wr = 1,
						 .max_inflight = 1 };
		void *o = NULL;

		if (!strcmp(argv[2], "qp"))
			o = falcon_create_qp(pd, &a);
		else if (!strcmp(argv[2], "conn"))
			o = falcon_connect(pd, argv[5], SERVICE, &a, 10000);
		else if (!strcmp(argv[2], "mr"))
			o = falcon_reg_mr(pd, buf, 4096, FALCON_ACCESS_LOCAL_WRITE);
		else if (!strcmp(argv[2], "cq"))
			o = falcon_create_cq(ctx, 4);
		else if (!strcmp(argv[2], "pd"))
			o = falcon_alloc_pd(ctx);
		else
			return 2;
		if (!o) {
			err = errno;
			break;
		}
	}
	printf("%s: %d made, then %s (%s)\n", argv[2], made, err ? strerror(err) : "none",
	       err ? falcon_strerror(err) : "-");
	if (made != n || err != want) {
		fprintf(stderr, "limits: %s: wanted %d, then %s\n", argv[2], n, strerror(want));
		return 1;
	}
	hold();
	return 0;
}
