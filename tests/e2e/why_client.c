/* SPDX-License-Identifier: Apache-2.0 */
/*
 * why_client - the errors of the client API and what they say (issue 21, items 4 and 7),
 * for tests/e2e/test_errors.sh:
 *
 *   why_client open PATH
 *       falcon_open(PATH) must fail (PATH "": falcon_open(NULL)); prints a result line
 *   why_client connect SOCK HOST SERVICE [TIMEOUT_MS]
 *       one falcon_connect; exit 0 and a result line when it failed, 1 when it connected
 *   why_client flood SOCK HOST SERVICE N
 *       N falcon_connects in a row that must all fail: "flood: N failed, errno E (all|K
 *       different), slowest MS ms"
 *   why_client hold SOCK_B SERVICE BACKLOG SECONDS
 *       listen on SERVICE with BACKLOG and never accept, for SECONDS ("listening" first)
 *   why_client full SOCK_A SOCK_B CM_B SERVICE
 *       B accepts in a thread; the first connect succeeds and is kept, the second must be
 *       refused by B's full table: a result line for it
 *   why_client sink PORT SECONDS
 *       a UDP socket on 127.0.0.1:PORT that takes everything and answers nothing
 *   why_client ud SOCK_A SOCK_B CM_B
 *       UD ping-pong: A's client sends a ping (an AH to B by name); B's server answers
 *       through falcon_create_ah_from_wc and the completion's src_qp alone (it is told
 *       nothing about A), 8 rounds, each checked; "ud: 8 rounds ..."
 *
 * A result line: "result errno=NAME ms=MS detail=TEXT" (NAME as errno's macro, MS the
 * call's wall time, TEXT falcon_error_detail()).
 */
#include <errno.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "falcon/falcon.h"

#define WAIT_MS 10000
#define BUF 65536u
#define QKEY 0x5eed1e55u

static const char *errno_name(int e)
{
	static char other[16];

	switch (e) {
#define N(x) case x: return #x;
	N(EACCES) N(EKEYREJECTED) N(EPROTONOSUPPORT) N(EPROTO) N(ECONNREFUSED) N(EAGAIN)
	N(EUSERS) N(ENOSPC) N(EHOSTUNREACH) N(ETIMEDOUT) N(ESTALE) N(ENOENT) N(EINVAL)
	N(ENOTCONN) N(EPROTOTYPE) N(ECONNABORTED) N(EAFNOSUPPORT) N(ECONNRESET)
#undef N
	default:
		snprintf(other, sizeof(other), "%d", e);
		return other;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void result(int e, int64_t ms)
{
	printf("result errno=%s ms=%lld detail=%s\n", errno_name(e), (long long)ms,
	       falcon_error_detail());
	fflush(stdout);
}

struct side {
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	uint8_t *buf;
	struct falcon_mr *mr;
};

static int side_open(struct side *s, const char *sock)
{
	if (!(s->ctx = falcon_open(sock)) || !(s->pd = falcon_alloc_pd(s->ctx)) ||
	    !(s->cq = falcon_create_cq(s->ctx, 256)) ||
	    !(s->buf = falcon_alloc_buf(s->ctx, BUF)) ||
	    !(s->mr = falcon_reg_mr(s->pd, s->buf, BUF, FALCON_ACCESS_LOCAL_WRITE))) {
		fprintf(stderr, "why_client: %s: %s\n", sock, falcon_error_detail());
		return -1;
	}
	return 0;
}

static struct falcon_qp_init_attr rc_attr(struct side *s)
{
	return (struct falcon_qp_init_attr){ .size = sizeof(struct falcon_qp_init_attr),
					     .qp_type = FALCON_QPT_RC, .send_cq = s->cq,
					     .recv_cq = s->cq, .max_send_wr = 16, .max_recv_wr = 16 };
}

static int do_open(const char *path)
{
	int64_t t0 = now_ms();
	struct falcon_context *ctx = falcon_open(path);

	if (ctx) {
		printf("falcon_open(%s) succeeded\n", path);
		falcon_close(ctx);
		return 1;
	}
	result(errno, now_ms() - t0);
	return 0;
}

static int do_connect(const char *sock, const char *host, uint16_t service, int timeout_ms)
{
	struct side s;
	struct falcon_qp_init_attr a;
	struct falcon_qp *qp;
	int64_t t0;

	if (side_open(&s, sock))
		return 2;
	a = rc_attr(&s);
	t0 = now_ms();
	qp = falcon_connect(s.pd, host, service, &a, timeout_ms);
	if (qp) {
		printf("connected to %s service %u\n", host, service);
		falcon_close(s.ctx);
		return 1;
	}
	result(errno, now_ms() - t0);
	falcon_close(s.ctx);
	return 0;
}

static int do_flood(const char *sock, const char *host, uint16_t service, int n)
{
	struct side s;
	struct falcon_qp_init_attr a;
	int64_t slowest = 0;
	int first = 0, differ = 0;

	if (side_open(&s, sock))
		return 2;
	a = rc_attr(&s);
	for (int i = 0; i < n; i++) {
		int64_t t0 = now_ms(), ms;
		struct falcon_qp *qp = falcon_connect(s.pd, host, service, &a, 5000);

		if (qp) {
			printf("flood: connect %d succeeded\n", i);
			falcon_close(s.ctx);
			return 1;
		}
		ms = now_ms() - t0;
		slowest = ms > slowest ? ms : slowest;
		if (!i)
			first = errno;
		differ += errno != first;
	}
	printf("flood: %d failed, errno %s (%s), slowest %lld ms\n", n, errno_name(first),
	       differ ? "not all the same" : "all", (long long)slowest);
	falcon_close(s.ctx);
	return differ ? 1 : 0;
}

static int do_hold(const char *sock, uint16_t service, int backlog, int seconds)
{
	struct falcon_context *ctx = falcon_open(sock);
	struct falcon_listener *l = ctx ? falcon_listen(ctx, service, backlog) : NULL;

	if (!l) {
		fprintf(stderr, "why_client: listen: %s\n", falcon_error_detail());
		return 2;
	}
	printf("listening on %u, backlog %d\n", service, backlog);
	fflush(stdout);
	sleep((unsigned)seconds);
	falcon_close(ctx);
	return 0;
}

struct acceptor {
	struct side *b;
	struct falcon_listener *l;
	int accepted, refused;
};

static void *accept_thread(void *arg)
{
	struct acceptor *x = arg;

	for (int i = 0; i < 2; i++) {
		struct falcon_qp_init_attr a = rc_attr(x->b);

		if (falcon_accept(x->l, x->b->pd, &a, 8000))
			x->accepted++;
		else
			x->refused++;
	}
	return NULL;
}

static int do_full(const char *sock_a, const char *sock_b, const char *cm_b, uint16_t service)
{
	struct side a, b;
	struct acceptor x = { .b = &b };
	struct falcon_qp_init_attr at;
	struct falcon_qp *first;
	pthread_t th;
	int64_t t0;

	if (side_open(&a, sock_a) || side_open(&b, sock_b) ||
	    !(x.l = falcon_listen(b.ctx, service, 4)))
		return 2;
	pthread_create(&th, NULL, accept_thread, &x);
	at = rc_attr(&a);
	if (!(first = falcon_connect(a.pd, cm_b, service, &at, WAIT_MS))) {
		fprintf(stderr, "why_client: the first connect failed: %s\n", falcon_error_detail());
		return 2;
	}
	t0 = now_ms();
	if (falcon_connect(a.pd, cm_b, service, &at, WAIT_MS)) {
		printf("the second connect succeeded: B's table was not full\n");
		return 1;
	}
	result(errno, now_ms() - t0);
	pthread_join(th, NULL);
	printf("full: B accepted %d, its accept failed %d\n", x.accepted, x.refused);
	falcon_close(a.ctx);
	falcon_close(b.ctx);
	return 0;
}

static int do_sink(uint16_t port, int seconds)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	char buf[2048];
	int64_t end = now_ms() + seconds * 1000ll;
	struct timeval tv = { 0, 100000 };

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&in, sizeof(in)) < 0) {
		perror("why_client: sink");
		return 2;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	printf("sink on %u\n", port);
	fflush(stdout);
	while (now_ms() < end)
		(void)!recv(fd, buf, sizeof(buf), 0);
	close(fd);
	return 0;
}

/* ---- UD: the server learns its client from the completion only ---- */

static struct falcon_qp *ud_qp(struct side *s)
{
	struct falcon_qp_init_attr a = { .size = sizeof(a), .qp_type = FALCON_QPT_UD,
					 .send_cq = s->cq, .recv_cq = s->cq, .max_send_wr = 16,
					 .max_recv_wr = 16, .qkey = QKEY };
	struct falcon_qp *qp = falcon_create_qp(s->pd, &a);

	for (uint32_t st = FALCON_QPS_INIT; qp && st <= FALCON_QPS_RTS; st++) {
		struct falcon_qp_attr m = { .size = sizeof(m), .qp_state = st, .timeout_ms = -1 };

		if (falcon_modify_qp(qp, &m))
			return NULL;
	}
	return qp;
}

static int post_recv(struct side *s, struct falcon_qp *qp, uint64_t id, uint32_t off)
{
	struct falcon_sge g = { (uint64_t)(uintptr_t)(s->buf + off), 1024, s->mr->lkey };
	struct falcon_recv_wr wr = { .wr_id = id, .sg_list = &g, .num_sge = 1 }, *bad;

	return falcon_post_recv(qp, &wr, &bad);
}

static int send_to(struct side *s, struct falcon_qp *qp, struct falcon_ah *ah, uint32_t qpn,
		   uint32_t off, uint32_t len)
{
	struct falcon_sge g = { (uint64_t)(uintptr_t)(s->buf + off), len, s->mr->lkey };
	struct falcon_send_wr wr = { .wr_id = off, .sg_list = &g, .num_sge = 1,
				     .opcode = FALCON_WR_SEND, .ah = ah, .remote_qpn = qpn,
				     .remote_qkey = QKEY }, *bad;

	return falcon_post_send(qp, &wr, &bad);
}

/* One completion of the wanted opcode (sends and receives share the CQ). */
static int wait_op(struct side *s, uint32_t opcode, struct falcon_wc *wc)
{
	int64_t end = now_ms() + WAIT_MS;

	while (now_ms() < end)
		if (falcon_wait_cq(s->cq, 1, wc, 1000) == 1 && wc->opcode == opcode)
			return wc->status == FALCON_WC_SUCCESS;
	return 0;
}

static uint32_t b_saw; /* A's daemon, as B's numbers it */

/* B's side of a round: the ping's completion is all it knows of the client. */
static int ud_answer(struct side *b, struct falcon_qp *qb, int round)
{
	struct falcon_wc wc;
	struct falcon_ah *back;
	char want[32];
	uint64_t id;
	uint32_t off;
	int rc;

	if (!wait_op(b, FALCON_WC_RECV, &wc)) {
		fprintf(stderr, "ud: round %d: no ping at B\n", round);
		return -1;
	}
	snprintf(want, sizeof(want), "ping %d", round);
	id = wc.wr_id;
	off = 1024u * (uint32_t)(id % 4);
	if (wc.byte_len != strlen(want) + 1 || memcmp(b->buf + off, want, wc.byte_len)) {
		fprintf(stderr, "ud: round %d: the ping's bytes differ (receive %" PRIu64 ", %u "
			"bytes: '%.*s')\n", round, wc.wr_id, wc.byte_len, (int)(wc.byte_len < 16 ?
			wc.byte_len : 16), (const char *)b->buf + off);
		return -1;
	}
	if (!wc.src_id || !wc.src_qp) {
		fprintf(stderr, "ud: round %d: the completion names no sender (src_id %u, src_qp "
			"%u)\n", round, wc.src_id, wc.src_qp);
		return -1;
	}
	if (!(back = falcon_create_ah_from_wc(b->pd, &wc, WAIT_MS))) {
		fprintf(stderr, "ud: round %d: falcon_create_ah_from_wc: %s\n", round,
			falcon_error_detail());
		return -1;
	}
	b_saw = wc.src_id;
	snprintf((char *)b->buf + 8192, 64, "pong %d to %u", round, wc.src_qp);
	rc = send_to(b, qb, back, wc.src_qp, 8192, (uint32_t)strlen((char *)b->buf + 8192) + 1);
	if (rc || !wait_op(b, FALCON_WC_SEND, &wc)) {
		fprintf(stderr, "ud: round %d: the pong did not go: %s\n", round,
			rc ? falcon_error_detail() : falcon_wc_status_str(wc.status));
		return -1;
	}
	post_recv(b, qb, id + 4, off);
	falcon_destroy_ah(back);
	return 0;
}

static int do_ud(const char *sock_a, const char *sock_b, const char *cm_b)
{
	struct side a, b;
	struct falcon_qp *qa, *qb;
	struct falcon_ah *to_b;
	struct falcon_wc wc;
	uint16_t src_id = 0;
	int ok = 0;

	if (side_open(&a, sock_a) || side_open(&b, sock_b) || !(qa = ud_qp(&a)) ||
	    !(qb = ud_qp(&b)))
		return 2;
	for (int i = 0; i < 4; i++)
		post_recv(&b, qb, (uint64_t)i, 1024u * (uint32_t)i);
	for (int i = 0; i < 4; i++)
		post_recv(&a, qa, 100 + (uint64_t)i, 16384u + 1024u * (uint32_t)i);
	if (!(to_b = falcon_create_ah(a.pd, cm_b, WAIT_MS))) {
		fprintf(stderr, "ud: create_ah to %s: %s\n", cm_b, falcon_error_detail());
		return 2;
	}
	for (int r = 0; r < 8; r++) {
		char want[64];

		snprintf((char *)a.buf + 4096, 64, "ping %d", r);
		if (send_to(&a, qa, to_b, qb->qp_num, 4096, (uint32_t)strlen("ping 0") + 1) ||
		    !wait_op(&a, FALCON_WC_SEND, &wc) || ud_answer(&b, qb, r))
			break;
		if (!wait_op(&a, FALCON_WC_RECV, &wc)) {
			fprintf(stderr, "ud: round %d: no pong at A\n", r);
			break;
		}
		snprintf(want, sizeof(want), "pong %d to %u", r, qa->qp_num);
		if (wc.src_qp != qb->qp_num || strcmp((char *)a.buf + 16384 + 1024 * (wc.wr_id % 4),
						      want)) {
			fprintf(stderr, "ud: round %d: the pong differs (src_qp %u)\n", r, wc.src_qp);
			break;
		}
		if (r && wc.src_id != src_id) {
			fprintf(stderr, "ud: round %d: B's src_id changed: %u, was %u\n", r,
				wc.src_id, src_id);
			break;
		}
		src_id = (uint16_t)wc.src_id;
		post_recv(&a, qa, wc.wr_id + 4, 16384u + 1024u * (uint32_t)(wc.wr_id % 4));
		ok++;
	}
	/* a src_id that names nobody: ENOENT, said so */
	wc = (struct falcon_wc){ .status = FALCON_WC_SUCCESS, .opcode = FALCON_WC_RECV,
				 .src_id = 65000 };
	if (falcon_create_ah_from_wc(b.pd, &wc, 1000) || errno != ENOENT) {
		fprintf(stderr, "ud: a bogus src_id was not refused with ENOENT\n");
		ok = -1;
	} else {
		printf("ud: a bogus src_id: %s\n", falcon_error_detail());
	}
	printf("ud: %d rounds answered from the completion alone (B numbers A's daemon %u, "
	       "A numbers B's %u)\n", ok, b_saw, src_id);
	falcon_close(a.ctx);
	falcon_close(b.ctx);
	return ok == 8 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	if (!strcmp(m, "open") && argc == 3)
		return do_open(argv[2][0] ? argv[2] : NULL); /* "": falcon_open(NULL) */
	if (!strcmp(m, "connect") && (argc == 5 || argc == 6))
		return do_connect(argv[2], argv[3], (uint16_t)atoi(argv[4]),
				  argc == 6 ? atoi(argv[5]) : -1);
	if (!strcmp(m, "flood") && argc == 6)
		return do_flood(argv[2], argv[3], (uint16_t)atoi(argv[4]), atoi(argv[5]));
	if (!strcmp(m, "hold") && argc == 6)
		return do_hold(argv[2], (uint16_t)atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (!strcmp(m, "full") && argc == 6)
		return do_full(argv[2], argv[3], argv[4], (uint16_t)atoi(argv[5]));
	if (!strcmp(m, "sink") && argc == 4)
		return do_sink((uint16_t)atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(m, "ud") && argc == 5)
		return do_ud(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: why_client open PATH | connect SOCK HOST SERVICE [TIMEOUT_MS] |\n"
		"  flood SOCK HOST SERVICE N | hold SOCK SERVICE BACKLOG SECONDS |\n"
		"  full SOCK_A SOCK_B CM_B SERVICE | sink PORT SECONDS | ud SOCK_A SOCK_B CM_B\n");
	return 2;
}
