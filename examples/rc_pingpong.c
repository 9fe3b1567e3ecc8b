/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rc_pingpong - the smallest useful libfalcon-client program: two processes, one RC
 * queue pair between them, N messages bounced back and forth with SEND / RECV.
 *
 *   server:  FALCON_SOCKET=/run/falcon/falcond.sock rc_pingpong
 *   client:  FALCON_SOCKET=... rc_pingpong SERVER-HOST[:CM-PORT] [N]
 *
 * Each side: open the daemon, make a protection domain, a buffer the daemon can reach
 * and a registration of it, a completion queue; then the server listens and accepts,
 * the client connects. The client sends N messages (default 1000), the server echoes
 * each, the client checks. The server echoes until the client goes away: its posted
 * receive then completes "flushed", as in verbs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <falcon/falcon.h>

#define SERVICE 18516
#define MSG 64

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "rc_pingpong: %s: %s\n", what, falcon_strerror(-errno));
		exit(1);
	}
}

/* Wait for one completion and make sure it succeeded (a flushed receive is returned:
 * the peer went away). */
static struct falcon_wc wait_one(struct falcon_cq *cq)
{
	struct falcon_wc wc;

	check(falcon_wait_cq(cq, 1, &wc, 5000) == 1, "no completion within 5 s");
	if (wc.status != FALCON_WC_SUCCESS &&
	    !(wc.status == FALCON_WC_WR_FLUSH_ERR && wc.opcode == FALCON_WC_RECV)) {
		fprintf(stderr, "rc_pingpong: completion %s\n", falcon_wc_status_str(wc.status));
		exit(1);
	}
	return wc;
}

int main(int argc, char **argv)
{
	const char *host = argc > 1 ? argv[1] : NULL; /* given: we are the client */
	int is_client = host != NULL;
	int n = argc > 2 ? atoi(argv[2]) : 1000;

	/* 1. the daemon, a PD, memory it can reach (send half, receive half), a CQ */
	struct falcon_context *ctx = falcon_open(NULL);
	check(ctx != NULL, "falcon_open (is falcond running? set FALCON_SOCKET)");
	struct falcon_pd *pd = falcon_alloc_pd(ctx);
	char *buf = falcon_alloc_buf(ctx, 2 * MSG);
	struct falcon_mr *mr = pd && buf ? falcon_reg_mr(pd, buf, 2 * MSG,
							 FALCON_ACCESS_LOCAL_WRITE) : NULL;
	struct falcon_cq *cq = falcon_create_cq(ctx, 16);
	check(mr && cq, "setting up");

	/* 2. a connected RC queue pair: the server listens and accepts, the client connects */
	struct falcon_qp_init_attr attr = { .size = sizeof(attr), .send_cq = cq, .recv_cq = cq };
	struct falcon_qp *qp;

	if (is_client) {
		qp = falcon_connect(pd, host, SERVICE, &attr, -1);
	} else {
		struct falcon_listener *l = falcon_listen(ctx, SERVICE, 1);

		check(l != NULL, "falcon_listen");
		printf("waiting for a client on service %d\n", SERVICE);
		qp = falcon_accept(l, pd, &attr, -1);
	}
	check(qp != NULL, is_client ? "falcon_connect" : "falcon_accept");

	/* 3. the work requests: one receive into the second half, one send from the first */
	struct falcon_sge rsge = { (uintptr_t)(buf + MSG), MSG, mr->lkey };
	struct falcon_sge ssge = { (uintptr_t)buf, MSG, mr->lkey };
	struct falcon_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 };
	struct falcon_send_wr swr = { .wr_id = 2, .sg_list = &ssge, .num_sge = 1,
				      .opcode = FALCON_WR_SEND };
	struct timespec t0, t1;

	/* a receive is always posted before the peer can send into it: no receive, no
	 * delivery (the peer would be told RNR and retry after a timer) */
	check(falcon_post_recv(qp, &rwr, NULL) == 0, "post_recv");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int i;

	for (i = 0; is_client ? i < n : 1; i++) {
		if (is_client) {
			snprintf(buf, MSG, "ping %d", i);
			check(falcon_post_send(qp, &swr, NULL) == 0, "post_send");
		}
		/* wait for our receive (and, on the client, for our send) */
		int gone = 0;

		for (int got = 0; got < (is_client ? 2 : 1);) {
			struct falcon_wc wc = wait_one(cq);

			gone |= wc.status == FALCON_WC_WR_FLUSH_ERR;
			got += wc.opcode == FALCON_WC_RECV || is_client;
		}
		if (gone && !is_client) /* the client disconnected */
			break;
		check(!gone, "the server went away");
		if (is_client) {
			char want[MSG];

			snprintf(want, MSG, "ping %d", i);
			check(strcmp(buf + MSG, want) == 0 || (errno = EIO, 0), "echo differs");
			check(falcon_post_recv(qp, &rwr, NULL) == 0, "post_recv");
		} else { /* echo what came in, with the next receive already posted */
			memcpy(buf, buf + MSG, MSG);
			check(falcon_post_recv(qp, &rwr, NULL) == 0, "post_recv");
			check(falcon_post_send(qp, &swr, NULL) == 0, "post_send");
			wait_one(cq);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (is_client)
		printf("%d round trips, %.1f us each\n", n,
		       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n / 1e3);
	else
		printf("the client left after %d round trips\n", i);
	/* 4. tear down (falcon_close alone would release everything too) */
	falcon_destroy_qp(qp);
	falcon_close(ctx);
	return 0;
}
