/* SPDX-License-Identifier: Apache-2.0 */
/*
 * many_qps - many RC QPs between two falcond (issue 21, "hidden limits"): how long each
 * takes to set up, what each costs the daemons, and whether the rate of small WRITEs
 * holds up when they are spread over all of them.
 *
 *   many_qps [options] SOCK_A SOCK_B CM_B
 *
 * A child process opens a context on daemon B, listens and accepts; this process opens
 * one on daemon A and connects N RC QPs to it (falcon_connect, one after the other: the
 * setup time per QP is the whole over N). With the daemons' pids (-p) it reads their
 * VmRSS from /proc before and after: the resident memory per QP of each. Then 8-byte
 * WRITEs with DEPTH outstanding, all on one QP (a QP of its own, deep enough) and round
 * robin over the N QPs (each new WR to the next QP), SECONDS each in three turns of each,
 * alternating (a busy host weighs on both alike), in this one run: the two rates and their
 * ratio. The N QPs are small (send ring 4, receive ring 1, 4 in
 * flight): QP memory goes by the sizes asked.
 *
 * Options:
 *   -n N          QPs round robin (default 10000)
 *   -d DEPTH      WRITEs outstanding (default 64)
 *   -s SECONDS    each rate measurement (default 3)
 *   -p PIDA,PIDB  the daemons' pids, for their VmRSS
 *   -S SERVICE    the CM service (default 18600)
 *   --setup-only  connect the N QPs and report; no rates (and no QP of its own)
 *   --max-slowdown X  exit 1 unless rate(1 QP) / rate(N QPs) <= X (tests)
 *   --min-slowdown Y  exit 1 unless it is >= Y: one QP alone must not be the slow one
 *                 (a daemon that looked into every ring each round starved a busy QP)
 *   --min-rate R  exit 1 unless both rates are at least R WRITEs/s
 *   -j            one JSON line instead of the table
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "falcon/falcon.h"

#define SPIN_BEFORE_YIELD 64u
#define CQ_ENTRIES 4096
#define WAIT_MS 30000
#define ROUNDS 3          /* each rate measured in turns, this many times */

static struct {
	uint32_t n, depth;
	double seconds, max_slowdown, min_slowdown, min_rate;
	int pid[2], setup_only, json;
	uint16_t service;
	const char *sock_a, *sock_b, *cm_b;
} o = { .n = 10000, .depth = 64, .seconds = 3, .service = 18600 };

struct remote {
	uint64_t addr;
	uint32_t rkey, pad;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "many_qps: %s: %s\n", what, falcon_strerror(err));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* VmRSS of pid in kB, 0 when it cannot be read. */
static long rss_kb(int pid)
{
	char path[64], line[256];
	long kb = 0;
	FILE *f;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* The small QPs of the round robin, and the one deep QP. */
static struct falcon_qp_init_attr qp_attr(struct falcon_cq *cq, int deep)
{
	return (struct falcon_qp_init_attr){
		.size = sizeof(struct falcon_qp_init_attr), .qp_type = FALCON_QPT_RC,
		.send_cq = cq, .recv_cq = cq,
		.max_send_wr = deep ? 128 : 4, .max_recv_wr = 1, .max_send_sge = 1,
		.max_recv_sge = 1, .max_inflight = deep ? 128 : 4,
	};
}

/* Daemon B's side: accept n QPs (and the deep one unless setup only), tell the parent
 * where to write, hold everything until the parent closes its pipe. */
static int server(int wfd, int rfd)
{
	struct falcon_context *ctx = falcon_open(o.sock_b);
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	struct falcon_mr *mr;
	struct falcon_listener *l;
	struct remote r = { 0 };
	uint32_t total = o.n + !o.setup_only;
	void *buf;
	char c;

	if (!ctx)
		die("server: falcon_open", errno);
	if (!(pd = falcon_alloc_pd(ctx)) || !(buf = falcon_alloc_buf(ctx, 4096)) ||
	    !(mr = falcon_reg_mr(pd, buf, 4096, FALCON_ACCESS_LOCAL_WRITE |
				 FALCON_ACCESS_REMOTE_WRITE)) ||
	    !(cq = falcon_create_cq(ctx, 64)))
		die("server: setup", errno);
	if (!(l = falcon_listen(ctx, o.service, 1024)))
		die("server: falcon_listen", errno);
	r.addr = (uint64_t)(uintptr_t)buf;
	r.rkey = mr->rkey;
	if (write(wfd, &r, sizeof(r)) != sizeof(r))
		return 1;
	for (uint32_t i = 0; i < total; i++) {
		struct falcon_qp_init_attr a = qp_attr(cq, 0);

		a.max_send_wr = 1;
		a.max_inflight = 1;
		if (!falcon_accept(l, pd, &a, WAIT_MS)) {
			fprintf(stderr, "many_qps: server: accept %u of %u: %s\n", i + 1, total,
				falcon_strerror(errno));
			return 1;
		}
	}
	while (read(rfd, &c, 1) > 0) /* until the parent is done */
		;
	falcon_close(ctx);
	return 0;
}

/* Wait for up to n completions (at least one): spin, then yield between polls. */
static int poll_some(struct falcon_cq *cq, struct falcon_wc *wc, int n)
{
	int k;

	for (uint32_t spins = 1; !(k = falcon_poll_cq(cq, n, wc)); spins++)
		if (spins > SPIN_BEFORE_YIELD)
			sched_yield();
	if (k < 0)
		die("poll_cq", k);
	for (int i = 0; i < k; i++)
		if (wc[i].status != FALCON_WC_SUCCESS) {
			fprintf(stderr, "many_qps: WR on QP %u: %s\n", wc[i].qp_num,
				falcon_wc_status_str(wc[i].status));
			exit(1);
		}
	return k;
}

/* 8-byte WRITEs, depth outstanding, each new one to the next of the nq QPs, for
 * seconds. Returns WRITEs per second. */
static double write_rate(struct falcon_qp **qp, uint32_t nq, struct falcon_cq *cq,
			 struct falcon_mr *mr, const struct remote *r, double seconds)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)mr->addr, 8, mr->lkey };
	struct falcon_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				     .opcode = FALCON_WR_RDMA_WRITE, .remote_addr = r->addr,
				     .rkey = r->rkey };
	struct falcon_wc wc[64];
	uint64_t done = 0, posted = 0, skipped = 0;
	uint32_t next = 0, out = 0;
	double t0 = now_s(), end = t0 + seconds, t;

	for (;;) {
		while (out < o.depth && (t = now_s()) < end) {
			int rc = falcon_post_send(qp[next], &wr, NULL);

			next = next + 1 == nq ? 0 : next + 1;
			if (rc == -ENOMEM) { /* that QP's ring is full: the next one */
				if (++skipped > 1000000)
					die("post_send: every ring full", rc);
				continue;
			}
			if (rc)
				die("post_send", rc);
			out++;
			posted++;
		}
		if (!out)
			break;
		int k = poll_some(cq, wc, 64);

		out -= (uint32_t)k;
		done += (uint64_t)k;
	}
	t = now_s() - t0;
	(void)posted;
	return (double)done / t;
}

static void usage(void)
{
	fprintf(stderr, "usage: many_qps [-n N] [-d DEPTH] [-s SECONDS] [-p PIDA,PIDB] "
		"[-S SERVICE] [--setup-only] [--max-slowdown X] [--min-slowdown Y] [--min-rate R] "
		"[-j] SOCK_A SOCK_B CM_B\n");
	exit(2);
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "setup-only", no_argument, NULL, 'O' },
		{ "max-slowdown", required_argument, NULL, 'X' },
		{ "min-slowdown", required_argument, NULL, 'Y' },
		{ "min-rate", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "n:d:s:p:S:j", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o.n = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': o.depth = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 's': o.seconds = strtod(optarg, NULL); break;
		case 'p':
			if (sscanf(optarg, "%d,%d", &o.pid[0], &o.pid[1]) != 2)
				usage();
			break;
		case 'S': o.service = (uint16_t)strtoul(optarg, NULL, 0); break;
		case 'O': o.setup_only = 1; break;
		case 'X': o.max_slowdown = strtod(optarg, NULL); break;
		case 'Y': o.min_slowdown = strtod(optarg, NULL); break;
		case 'R': o.min_rate = strtod(optarg, NULL); break;
		case 'j': o.json = 1; break;
		default: usage();
		}
	}
	if (argc - optind != 3 || !o.n || !o.depth || o.depth > CQ_ENTRIES / 2 || o.seconds <= 0)
		usage();
	o.sock_a = argv[optind];
	o.sock_b = argv[optind + 1];
	o.cm_b = argv[optind + 2];
}

int main(int argc, char **argv)
{
	int down[2], up[2], status;
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct falcon_cq *cq;
	struct falcon_mr *mr;
	struct falcon_qp **qp, *deep = NULL;
	struct remote r;
	long rss0[2], rss1[2];
	double t0, setup_s, rate1 = 0, rate_n = 0, worst = 0;
	uint32_t slow = 0;
	void *buf;
	pid_t child;

	parse(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (pipe(down) || pipe(up))
		die("pipe", errno);
	if ((child = fork()) < 0)
		die("fork", errno);
	if (child == 0) {
		close(down[1]);
		close(up[0]);
		exit(server(up[1], down[0]));
	}
	close(down[0]);
	close(up[1]);
	if (read(up[0], &r, sizeof(r)) != sizeof(r)) {
		fprintf(stderr, "many_qps: the server side did not start\n");
		return 1;
	}
	if (!(ctx = falcon_open(o.sock_a)))
		die("falcon_open", errno);
	if (!(pd = falcon_alloc_pd(ctx)) || !(buf = falcon_alloc_buf(ctx, 4096)) ||
	    !(mr = falcon_reg_mr(pd, buf, 4096, FALCON_ACCESS_LOCAL_WRITE)) ||
	    !(cq = falcon_create_cq(ctx, CQ_ENTRIES)))
		die("setup", errno);
	if (!(qp = calloc(o.n, sizeof(*qp))))
		die("calloc", ENOMEM);
	rss0[0] = rss_kb(o.pid[0]);
	rss0[1] = rss_kb(o.pid[1]);
	t0 = now_s();
	for (uint32_t i = 0; i < o.n; i++) {
		struct falcon_qp_init_attr a = qp_attr(cq, 0);
		double t1 = now_s(), dt;

		if (!(qp[i] = falcon_connect(pd, o.cm_b, o.service, &a, WAIT_MS))) {
			fprintf(stderr, "many_qps: connect %u of %u: %s\n", i + 1, o.n,
				falcon_strerror(errno));
			return 1;
		}
		dt = now_s() - t1;
		worst = dt > worst ? dt : worst;
		slow += dt > 0.05; /* a CM message lost and sent again takes 100 ms */
	}
	setup_s = now_s() - t0;
	rss1[0] = rss_kb(o.pid[0]);
	rss1[1] = rss_kb(o.pid[1]);
	if (!o.json) {
		printf("%u RC QPs connected in %.2f s: %.1f us per QP (the slowest %.1f ms, %u "
		       "above 50 ms)\n", o.n, setup_s, setup_s * 1e6 / o.n, worst * 1e3, slow);
		for (int k = 0; k < 2; k++)
			if (o.pid[k])
				printf("falcond %c (pid %d): VmRSS %ld -> %ld kB: %.0f bytes per QP\n",
				       'A' + k, o.pid[k], rss0[k], rss1[k],
				       (double)(rss1[k] - rss0[k]) * 1024 / o.n);
		fflush(stdout);
	}
	if (!o.setup_only) {
		struct falcon_qp_init_attr a = qp_attr(cq, 1);

		if (!(deep = falcon_connect(pd, o.cm_b, o.service, &a, WAIT_MS)))
			die("connect (the deep QP)", errno);
		double s1 = 0, sn = 0;

		write_rate(&deep, 1, cq, mr, &r, o.seconds / 4); /* warm up */
		write_rate(qp, o.n, cq, mr, &r, o.seconds / 4);
		/* in turns, so that what else the host runs weighs on both alike */
		for (int k = 0; k < ROUNDS; k++) {
			s1 += write_rate(&deep, 1, cq, mr, &r, o.seconds / ROUNDS);
			sn += write_rate(qp, o.n, cq, mr, &r, o.seconds / ROUNDS);
		}
		rate1 = s1 / ROUNDS;
		rate_n = sn / ROUNDS;
	}
	if (o.json) {
		printf("{\"qps\":%u,\"setup_s\":%.3f,\"setup_us_per_qp\":%.1f,"
		       "\"setup_worst_ms\":%.1f,\"setup_above_50ms\":%u", o.n, setup_s,
		       setup_s * 1e6 / o.n, worst * 1e3, slow);
		for (int k = 0; k < 2; k++)
			printf(",\"rss_%c_kb_before\":%ld,\"rss_%c_kb_after\":%ld,"
			       "\"rss_%c_bytes_per_qp\":%.0f", 'a' + k, rss0[k], 'a' + k, rss1[k],
			       'a' + k, (double)(rss1[k] - rss0[k]) * 1024 / o.n);
		if (!o.setup_only)
			printf(",\"depth\":%u,\"ops_1qp\":%.0f,\"ops_nqp\":%.0f,\"slowdown\":%.3f",
			       o.depth, rate1, rate_n, rate1 / rate_n);
		printf("}\n");
	} else {
		if (!o.setup_only)
			printf("8 B WRITEs at depth %u: %.0f ops/s on 1 QP, %.0f ops/s round robin "
			       "over %u QPs: 1 QP is %.2fx the rate of %u\n", o.depth, rate1, rate_n,
			       o.n, rate1 / rate_n, o.n);
	}
	fflush(stdout);
	falcon_close(ctx);
	free(qp);
	close(down[1]);
	waitpid(child, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "many_qps: the server side failed\n");
		return 1;
	}
	if (!o.setup_only && o.max_slowdown > 0 && rate1 / rate_n > o.max_slowdown) {
		fprintf(stderr, "many_qps: round robin over %u QPs is %.2fx slower than 1 QP "
			"(bound %.2f)\n", o.n, rate1 / rate_n, o.max_slowdown);
		return 1;
	}
	if (!o.setup_only && (rate1 < o.min_rate || rate_n < o.min_rate)) {
		fprintf(stderr, "many_qps: a rate below %.0f WRITEs/s\n", o.min_rate);
		return 1;
	}
	if (!o.setup_only && o.min_slowdown > 0 && rate1 / rate_n < o.min_slowdown) {
		fprintf(stderr, "many_qps: 1 QP alone ran at %.2fx the rate of %u QPs round robin "
			"(bound %.2f): the busy QP was starved\n", rate1 / rate_n, o.n,
			o.min_slowdown);
		return 1;
	}
	return 0;
}
