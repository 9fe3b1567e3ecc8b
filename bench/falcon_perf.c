/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon-perf - RDMA over Falcon measured through falcond, in the manner of perftest's
 * ib_{write,read,send,atomic}_{bw,lat}, one binary:
 *
 *   falcon-perf [options]              server: listen, accept, serve, exit when done
 *   falcon-perf [options] HOST[:PORT]  client: connect to the falcond of HOST, measure
 *
 * Everything the server needs (test, sizes, the client's buffer) travels over the QPs
 * themselves as SENDs with an immediate that marks them as control; data never touches
 * a side channel. Latency: write and send are ping-pongs reported as half the round
 * trip (as perftest), read and atomic as the full round trip of one operation.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "falcon/falcon.h"

#define CTRL_PARAMS 0xF0000001u  /* client -> server: struct params */
#define CTRL_INFO 0xF0000002u    /* server -> client: struct info */
#define CTRL_DONE 0xF0000003u    /* client -> server: stop */
#define QPS_MAX 64u
#define RECVS 256u               /* receives kept posted per QP */
#define WAIT_MS 10000
#define SIZE_MAX_BYTES (1u << 22)
#define SPIN_BEFORE_YIELD 64u    /* empty CQ polls before each further one yields */

enum test { T_WRITE, T_READ, T_SEND, T_ATOMIC };
enum mode { M_BW, M_LAT };
static const char *const test_name[] = { "write", "read", "send", "atomic" };

struct params {
	uint32_t test, mode, max_size, qps, index, pad;
	uint64_t addr;           /* the client's buffer (for the server's ping-pong WRITEs) */
	uint32_t rkey, pad2;
};

struct info {
	uint64_t addr;
	uint32_t rkey, size;
};

static struct {
	enum test test;
	enum mode mode;
	uint32_t size, depth, qps, warmup;
	uint64_t iters;
	double duration;
	int sweep, json, loop, event;
	int perftest, gbits;     /* perftest's flags and columns (ib_write_bw ...), Gb/s */
	uint32_t mtu;            /* -m in perftest's flags: shown, the daemon's --mtu rules */
	uint16_t service;
	const char *sock, *host;
} o = { .size = 65536, .depth = 64, .qps = 1, .iters = 0, .warmup = 100, .service = 18515 };

struct conn {
	struct falcon_qp *qp;
	uint64_t posted, done;
};

static struct falcon_context *ctx;
static struct falcon_pd *pd;
static struct falcon_cq *cq;
static struct falcon_mr *mr;
static uint8_t *buf;
static size_t buf_len;
static struct conn conns[QPS_MAX];
static struct info peer;

static void die(const char *what)
{
	fprintf(stderr, "falcon-perf: %s: %s\n", what, falcon_strerror(-errno));
	exit(1);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "falcon-perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Receive slot i of QP q: where SENDs land. */
static uint8_t *recv_slot(uint32_t q, uint32_t i)
{
	size_t slot = o.size > sizeof(struct params) ? o.size : 64;

	return buf + buf_len / 2 + ((size_t)q * RECVS + i) % (buf_len / 2 / slot) * slot;
}

static void post_recv(uint32_t q, uint32_t i)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)recv_slot(q, i),
				  o.size > 64 ? o.size : 64, mr->lkey };
	struct falcon_recv_wr wr = { .wr_id = (uint64_t)q << 32 | i, .sg_list = &sge,
				     .num_sge = 1 }, *bad;

	if (falcon_post_recv(conns[q].qp, &wr, &bad))
		die("post_recv");
}

static void post(uint32_t q, uint32_t opcode, uint32_t len, uint32_t imm, uint64_t wr_id)
{
	struct falcon_sge sge = { (uint64_t)(uintptr_t)buf, len, mr->lkey };
	struct falcon_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = opcode, .imm_data = imm,
		.remote_addr = peer.addr,
		.rkey = peer.rkey, .compare_add = 1,
	};

	if (opcode == FALCON_WR_ATOMIC_FETCH_AND_ADD)
		sge.length = 8;
	if (falcon_post_send(conns[q].qp, &wr, NULL))
		die("post_send");
}

static void send_ctrl(uint32_t q, uint32_t imm, const void *msg, uint32_t len)
{
	memcpy(buf, msg, len);
	post(q, FALCON_WR_SEND_WITH_IMM, len, imm, UINT64_MAX);
}

/* Up to n completions: busy-polling (as perftest does), or sleeping on the CQ's fd with
 * --event. Returns their number, 0 after timeout_ms, or a negative errno. */
static int get_wc(struct falcon_wc *wc, int n, int timeout_ms)
{
	uint64_t end;
	int k;

	if (o.event)
		return falcon_wait_cq(cq, n, wc, timeout_ms);
	end = timeout_ms < 0 ? UINT64_MAX : now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (uint32_t spins = 1; !(k = falcon_poll_cq(cq, n, wc)); spins++) {
		/* the daemon that answers may need this very core (falcond is a process, not
		 * a NIC): after a short spin, offer it the CPU on every empty poll */
		if (spins > SPIN_BEFORE_YIELD)
			sched_yield();
		if (!(spins & 1023) && now_ns() > end)
			return 0;
	}
	return k;
}

/* One completion (any), bounded wait. */
static struct falcon_wc wait_wc(void)
{
	struct falcon_wc wc;
	int n = get_wc(&wc, 1, WAIT_MS);

	if (n < 0)
		die("poll_cq");
	if (n == 0)
		fail("no completion for %d s: the peer stopped answering", WAIT_MS / 1000);
	if (wc.status != FALCON_WC_SUCCESS)
		fail("work request %#" PRIx64 " completed %s", wc.wr_id,
		     falcon_wc_status_str(wc.status));
	return wc;
}

static struct falcon_qp_init_attr qp_attr(void)
{
	return (struct falcon_qp_init_attr){ .size = sizeof(struct falcon_qp_init_attr),
					     .send_cq = cq, .recv_cq = cq,
					     .max_send_wr = 1024, .max_recv_wr = 512,
					     .max_inflight = 256 };
}

static void setup(void)
{
	unsigned access = FALCON_ACCESS_LOCAL_WRITE | FALCON_ACCESS_REMOTE_READ |
			  FALCON_ACCESS_REMOTE_WRITE | FALCON_ACCESS_REMOTE_ATOMIC;

	buf_len = 2 * ((size_t)(o.size > 4096 ? o.size : 4096) * RECVS);
	if (buf_len > (1ull << 31))
		buf_len = 1ull << 31;
	if (!(ctx = falcon_open(o.sock)))
		die(o.sock ? o.sock : "falcon_open");
	if (!(pd = falcon_alloc_pd(ctx)) || !(cq = falcon_create_cq(ctx, 16384)) ||
	    !(buf = falcon_alloc_buf(ctx, buf_len)) ||
	    !(mr = falcon_reg_mr(pd, buf, buf_len, access)))
		die("setting up");
}

/* ---- server ---- */

static int serve(void)
{
	struct falcon_listener *l = falcon_listen(ctx, o.service, 64);
	struct falcon_qp_init_attr at = qp_attr();
	struct params p = { 0 };
	uint32_t nq = 0, want = 1, done = 0;
	struct falcon_wc wc;

	if (!l)
		die("listen");
	fprintf(stderr, "falcon-perf: server on service %u\n", o.service);
	while (nq < want) {
		if (!(conns[nq].qp = falcon_accept(l, pd, &at, -1)))
			die("accept");
		for (uint32_t i = 0; i < RECVS; i++)
			post_recv(nq, i);
		/* the client's parameters come first on every QP */
		do {
			wc = wait_wc();
		} while (wc.opcode != FALCON_WC_RECV);
		if (wc.imm_data != CTRL_PARAMS || wc.byte_len != sizeof(p))
			fail("expected the client's parameters, got %u bytes", wc.byte_len);
		memcpy(&p, recv_slot((uint32_t)(wc.wr_id >> 32), (uint32_t)wc.wr_id), sizeof(p));
		post_recv((uint32_t)(wc.wr_id >> 32), (uint32_t)wc.wr_id);
		if (p.qps < 1 || p.qps > QPS_MAX || p.max_size > SIZE_MAX_BYTES || p.test > T_ATOMIC)
			fail("bad parameters from the client");
		if (p.max_size > o.size && p.max_size > 64)
			fail("the client sends up to %u bytes: start the server with --size %u "
			     "or more", p.max_size, p.max_size);
		want = p.qps;
		peer = (struct info){ .addr = p.addr, .rkey = p.rkey };
		struct info me = { (uint64_t)(uintptr_t)buf, mr->rkey, (uint32_t)(buf_len / 2) };

		send_ctrl(nq, CTRL_INFO, &me, sizeof(me));
		nq++;
	}
	fprintf(stderr, "falcon-perf: %u QP(s) connected, %s %s\n", nq, test_name[p.test],
		p.mode == M_LAT ? "lat" : "bw");
	/* serve until every QP said done: repost receives, answer ping-pongs */
	while (done < nq) {
		struct falcon_wc w[64];
		int n = get_wc(w, 64, -1);

		if (n < 0)
			die("poll_cq");
		for (int i = 0; i < n; i++) {
			uint32_t q = (uint32_t)(w[i].wr_id >> 32);

			if (q >= nq && w[i].wr_id != UINT64_MAX)
				fail("a completion of an unknown QP");
			/* a QP whose client said done is torn down by it: its receives flush */
			if (w[i].status == FALCON_WC_WR_FLUSH_ERR && q < nq && conns[q].done)
				continue;
			if (w[i].status != FALCON_WC_SUCCESS)
				fail("completion %s", falcon_wc_status_str(w[i].status));
			if (w[i].opcode != FALCON_WC_RECV && w[i].opcode != FALCON_WC_RECV_RDMA_WITH_IMM)
				continue;
			if ((w[i].wc_flags & FALCON_WC_WITH_IMM) && w[i].imm_data == CTRL_DONE) {
				conns[q].done = 1;
				done++;
				continue;
			}
			post_recv(q, (uint32_t)w[i].wr_id);
			if (p.mode != M_LAT)
				continue;
			if (w[i].opcode == FALCON_WC_RECV_RDMA_WITH_IMM) /* write ping: pong */
				post(q, FALCON_WR_RDMA_WRITE_WITH_IMM, w[i].byte_len ? w[i].byte_len :
				     w[i].imm_data, w[i].imm_data, 0);
			else if (p.test == T_SEND)
				post(q, FALCON_WR_SEND, w[i].byte_len, 0, 0);
		}
	}
	for (uint32_t q = 0; q < nq; q++)
		falcon_destroy_qp(conns[q].qp);
	falcon_listener_close(l);
	fprintf(stderr, "falcon-perf: done\n");
	return 0;
}

/* ---- client ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t opcode_of(enum test t)
{
	return t == T_WRITE ? FALCON_WR_RDMA_WRITE : t == T_READ ? FALCON_WR_RDMA_READ :
	       t == T_SEND ? FALCON_WR_SEND : FALCON_WR_ATOMIC_FETCH_AND_ADD;
}

static void report_bw(uint32_t size, uint64_t ops, double s)
{
	double gbps = (double)ops * size * 8 / s / 1e9, mops = (double)ops / s / 1e6;

	if (o.json)
		printf("{\"test\":\"%s\",\"mode\":\"bw\",\"bytes\":%u,\"iters\":%" PRIu64
		       ",\"qps\":%u,\"depth\":%u,\"seconds\":%.3f,\"gbit_s\":%.3f,\"mops\":%.4f}\n",
		       test_name[o.test], size, ops, o.qps, o.depth, s, gbps, mops);
	else if (o.perftest) /* perftest's MB = 2^20 bytes, Gb = 10^9 bits; no peak of
				its own: the average for both */
		printf(" %-7u    %-10" PRIu64 "       %-7.2f            %-7.2f\t\t   %-7.6f\n",
		       size, ops, o.gbits ? gbps : (double)ops * size / s / 1048576.0,
		       o.gbits ? gbps : (double)ops * size / s / 1048576.0, mops);
	else
		printf(" %-10u %-12" PRIu64 " %-14.3f %-12.4f\n", size, ops, gbps, mops);
	fflush(stdout);
}

static void report_lat(uint32_t size, uint64_t *lat, uint64_t n, int half)
{
	double d = half ? 2000.0 : 1000.0;

	qsort(lat, n, sizeof(*lat), cmp_u64);
#define PCT(p) ((double)lat[(uint64_t)((double)(n - 1) * (p))] / d)
	if (o.json)
		printf("{\"test\":\"%s\",\"mode\":\"lat\",\"bytes\":%u,\"iters\":%" PRIu64
		       ",\"half_rtt\":%s,\"min_us\":%.2f,\"p50_us\":%.2f,\"p99_us\":%.2f,"
		       "\"p999_us\":%.2f,\"max_us\":%.2f}\n", test_name[o.test], size, n,
		       half ? "true" : "false", PCT(0), PCT(0.5), PCT(0.99), PCT(0.999), PCT(1.0));
	else if (o.perftest) {
		double sum = 0, sq = 0, avg, sd;

		for (uint64_t i = 0; i < n; i++)
			sum += (double)lat[i] / d;
		avg = sum / (double)n;
		for (uint64_t i = 0; i < n; i++)
			sq += ((double)lat[i] / d - avg) * ((double)lat[i] / d - avg);
		sd = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
		printf(" %-7u %-10" PRIu64 "   %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     "
		       "\t%-7.2f\t\t%-7.2f \t\t%-7.2f\n", size, n, PCT(0), PCT(1.0), PCT(0.5), avg,
		       sd, PCT(0.99), PCT(0.999));
	} else
		printf(" %-10u %-10" PRIu64 " %-10.2f %-10.2f %-10.2f %-10.2f %-10.2f\n", size, n,
		       PCT(0), PCT(0.5), PCT(0.99), PCT(0.999), PCT(1.0));
#undef PCT
	fflush(stdout);
}

static int keep_going(uint64_t done, uint64_t t0)
{
	if (o.iters)
		return done < o.iters;
	return (double)(now_ns() - t0) / 1e9 < o.duration;
}

static void run_bw(uint32_t size)
{
	uint32_t op = opcode_of(o.test);
	uint64_t total = 0, t0, posted = 0;
	uint64_t target = o.iters;

	for (uint32_t q = 0; q < o.qps; q++)
		conns[q].posted = conns[q].done = 0;
	/* warm up: a few operations per QP */
	for (uint32_t q = 0; q < o.qps; q++)
		for (uint32_t i = 0; i < o.warmup && i < 16; i++) {
			post(q, op, size, 0, (uint64_t)q << 32);
			wait_wc();
		}
	t0 = now_ns();
	for (;;) {
		int more = o.iters ? posted < target : keep_going(0, t0);

		for (uint32_t q = 0; q < o.qps && more; q++)
			while (conns[q].posted - conns[q].done < o.depth &&
			       (o.iters ? posted < target : 1)) {
				post(q, op, size, 0, (uint64_t)q << 32);
				conns[q].posted++;
				posted++;
			}
		struct falcon_wc w[64];
		int n = get_wc(w, 64, WAIT_MS);

		if (n <= 0)
			fail("completions stopped (%s)", n ? falcon_strerror(n) : "timeout");
		for (int i = 0; i < n; i++) {
			if (w[i].status != FALCON_WC_SUCCESS)
				fail("%s completed %s", test_name[o.test], falcon_wc_status_str(w[i].status));
			conns[w[i].wr_id >> 32].done++;
			total++;
		}
		if (total == posted && !(o.iters ? posted < target : keep_going(0, t0)))
			break;
	}
	report_bw(o.test == T_ATOMIC ? 8 : size, total, (double)(now_ns() - t0) / 1e9);
}

static void run_lat(uint32_t size)
{
	uint64_t n = o.iters ? o.iters : 100000, k = 0, t0 = now_ns();
	uint64_t *lat = malloc(n * sizeof(*lat));
	uint32_t op = o.test == T_WRITE ? FALCON_WR_RDMA_WRITE_WITH_IMM : opcode_of(o.test);
	int pingpong = o.test == T_WRITE || o.test == T_SEND;

	if (!lat)
		fail("out of memory");
	for (uint64_t i = 0; i < n + o.warmup; i++) {
		uint64_t t = now_ns();
		int got_send = 0, got_recv = !pingpong;

		post(0, op, size, size, 0);
		while (!got_send || !got_recv) {
			struct falcon_wc wc = wait_wc();

			if (wc.opcode == FALCON_WC_RECV || wc.opcode == FALCON_WC_RECV_RDMA_WITH_IMM) {
				post_recv(0, (uint32_t)wc.wr_id);
				got_recv = 1;
			} else {
				got_send = 1;
			}
		}
		if (i >= o.warmup)
			lat[k++] = now_ns() - t;
		if (!o.iters && (double)(now_ns() - t0) / 1e9 > o.duration && k > 10)
			break;
	}
	report_lat(o.test == T_ATOMIC ? 8 : size, lat, k, pingpong);
	free(lat);
}

/* perftest's banner and column names (o.perftest). */
static void perftest_header(void)
{
	static const char *const title[] = { "RDMA_Write", "RDMA_Read", "Send", "Atomic FETCH_AND_ADD" };
	const char *dash = "---------------------------------------------------------------------------------------";

	printf("%s\n                    %s %s Test (falcon-perf)\n", dash, title[o.test],
	       o.mode == M_LAT ? "Latency" : "BW");
	printf(" Dual-port       : OFF\t\tDevice         : falcon0\n");
	printf(" Number of qps   : %u\t\tTransport type : Falcon\n", o.qps);
	printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
	if (o.mode == M_BW)
		printf(" TX depth        : %u\n", o.depth);
	printf(" Mtu             : %u[B] (the daemon's --mtu applies)\n", o.mtu);
	printf(" Link type       : Ethernet\n%s\n", dash);
	if (o.mode == M_LAT)
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
		       "    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
	else
		printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n",
		       o.gbits ? "Gb/sec" : "MB/sec", o.gbits ? "Gb/sec" : "MB/sec");
}

static int client(void)
{
	struct falcon_qp_init_attr at = qp_attr();
	uint32_t lo = o.sweep ? 1 : o.size, hi = o.size;

	for (uint32_t q = 0; q < o.qps; q++) {
		struct params p = { .test = o.test, .mode = o.mode, .max_size = o.size,
				    .qps = o.qps, .index = q, .addr = (uint64_t)(uintptr_t)buf,
				    .rkey = mr->rkey };
		struct falcon_wc wc;

		if (!(conns[q].qp = falcon_connect(pd, o.host, o.service, &at, WAIT_MS)))
			die(o.host);
		for (uint32_t i = 0; i < RECVS; i++)
			post_recv(q, i);
		send_ctrl(q, CTRL_PARAMS, &p, sizeof(p));
		for (int got = 0; got != 3;) { /* the server's answer and our SEND's completion */
			wc = wait_wc();
			if (wc.opcode != FALCON_WC_RECV) {
				got |= 1;
				continue;
			}
			if (wc.imm_data != CTRL_INFO || wc.byte_len != sizeof(peer))
				fail("expected the server's buffer, got %u bytes", wc.byte_len);
			memcpy(&peer, recv_slot(q, (uint32_t)wc.wr_id), sizeof(peer));
			post_recv(q, (uint32_t)wc.wr_id);
			got |= 2;
		}
	}
	if (!o.json && o.perftest)
		perftest_header();
	else if (!o.json) {
		printf("falcon-perf: %s %s, %u QP(s), depth %u, %s\n", test_name[o.test],
		       o.mode == M_LAT ? "latency" : "bandwidth", o.qps,
		       o.mode == M_LAT ? 1 : o.depth,
		       o.mode == M_LAT ? (o.test <= T_SEND && o.test != T_READ ?
					  "half round trip (ping-pong)" : "full round trip") : "");
		if (o.mode == M_LAT)
			printf(" %-10s %-10s %-10s %-10s %-10s %-10s %-10s\n", "#bytes", "#iters",
			       "min[us]", "p50[us]", "p99[us]", "p99.9[us]", "max[us]");
		else
			printf(" %-10s %-12s %-14s %-12s\n", "#bytes", "#iters", "BW[Gb/s]",
			       "MsgRate[Mpps]");
	}
	if (o.test == T_ATOMIC)
		lo = hi = 8;
	if (o.perftest && o.sweep && lo < 2)
		lo = 2; /* perftest's -a starts at 2 bytes */
	for (uint32_t s = lo; s <= hi; s = s * 2 > s ? s * 2 : hi + 1) {
		if (o.mode == M_LAT)
			run_lat(s);
		else
			run_bw(s);
		if (s == hi)
			break;
	}
	for (uint32_t q = 0; q < o.qps; q++) {
		struct falcon_wc wc;

		send_ctrl(q, CTRL_DONE, "", 0);
		wc = wait_wc();
		(void)wc;
	}
	for (uint32_t q = 0; q < o.qps; q++)
		falcon_destroy_qp(conns[q].qp);
	return 0;
}

/* ---- options ---- */

static uint64_t parse_size(const char *s)
{
	char *e;
	uint64_t v = strtoull(s, &e, 0);

	if (*e == 'k' || *e == 'K')
		v <<= 10, e++;
	else if (*e == 'm' || *e == 'M')
		v <<= 20, e++;
	if (*e || !v)
		fail("bad size '%s'", s);
	return v;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: falcon-perf [options]              (server)\n"
		"       falcon-perf [options] HOST[:PORT]  (client: HOST's falcond connection manager)\n"
		"  -t, --test write|read|send|atomic   operation (default write; atomic = FetchAdd 8 B)\n"
		"  -m, --mode bw|lat                   bandwidth or latency (default bw)\n"
		"  -s, --size BYTES                    message size, k/M suffixes (default 64K)\n"
		"  -a, --sweep                         every power of 2 from 1 to --size\n"
		"  -d, --depth N                       outstanding WRs per QP in bw mode (default 64)\n"
		"  -q, --qps N                         QPs, each its own connection (default 1)\n"
		"  -n, --iters N                       operations per size\n"
		"  -D, --duration SEC                  or seconds per size (default 2)\n"
		"  -w, --warmup N                      untimed operations first (default 100)\n"
		"  -p, --service N                     service number (default 18515)\n"
		"  -S, --socket PATH                   falcond API socket (default $FALCON_SOCKET)\n"
		"  -e, --event                         sleep on the CQ's fd instead of busy-polling\n"
		"  -j, --json                          one JSON object per size\n"
		"  -V, --version, -h, --help\n"
		"   or: falcon-perf ib_write_bw|ib_read_bw|ib_send_bw|ib_atomic_bw|ib_*_lat\n"
		"              [perftest's options: -d falcon0 -s -n -D -q -a -t TX-DEPTH -m MTU -F\n"
		"               --report_gbits -p PORT -e; --socket PATH] [HOST[:CM-PORT]]\n"
		"       (or under such a name): perftest's flags and columns, -a up to 4 MiB\n");
}

/* perftest's names: "ib_write_bw" ... -> test and mode; 0, or -1 for another name. */
static int perftest_name(const char *name)
{
	const char *b = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	char t[16], m[4];

	if (sscanf(b, "ib_%15[a-z]_%3[a-z]", t, m) != 2 || (strcmp(m, "bw") && strcmp(m, "lat")))
		return -1;
	for (o.test = T_WRITE; o.test <= T_ATOMIC && strcmp(t, test_name[o.test]); o.test++)
		;
	if (o.test > T_ATOMIC)
		return -1;
	o.mode = strcmp(m, "lat") ? M_BW : M_LAT;
	return 0;
}

/* perftest's flags (issue 24: a user's scripts carry over): falcon-perf ib_write_bw
 * [perftest options] [HOST[:CM-PORT]], or falcon-perf under such a name. What falcon-perf
 * has no counterpart for is refused (-b, -R, UC/UD/XRC) or taken and ignored (-i, -x, -F,
 * -I, -o, -Q, -l, -r, -u, -S service level), as perftest ignores what a device lacks. */
static int perftest_args(int argc, char **argv)
{
	enum { O_GBITS = 256, O_SOCKET, O_JSON };
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' }, { "ib-dev", 1, NULL, 'd' }, { "ib-port", 1, NULL, 'i' },
		{ "mtu", 1, NULL, 'm' }, { "size", 1, NULL, 's' }, { "all", 0, NULL, 'a' },
		{ "iters", 1, NULL, 'n' }, { "duration", 1, NULL, 'D' }, { "tx-depth", 1, NULL, 't' },
		{ "qp", 1, NULL, 'q' }, { "CPU-freq", 0, NULL, 'F' }, { "bidirectional", 0, NULL, 'b' },
		{ "report_gbits", 0, NULL, O_GBITS }, { "gid-index", 1, NULL, 'x' },
		{ "connection", 1, NULL, 'c' }, { "inline_size", 1, NULL, 'I' }, { "events", 0, NULL, 'e' },
		{ "rdma_cm", 0, NULL, 'R' }, { "socket", 1, NULL, O_SOCKET }, { "json", 0, NULL, O_JSON },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c, sized = 0, counted = 0;

	o.mtu = 4096;
	o.depth = 128;
	o.size = o.mode == M_LAT ? 2 : 65536;
	while ((c = getopt_long(argc, argv, "p:d:i:m:s:an:D:t:q:Fbx:c:I:eRS:o:Q:l:r:u:h", lo,
				NULL)) != -1) {
		switch (c) {
		case 'p': o.service = (uint16_t)atoi(optarg); break;
		case 'd':
			if (strcmp(optarg, "falcon0"))
				fail("-d %s: the device is falcon0", optarg);
			break;
		case 'm': o.mtu = (uint32_t)atoi(optarg); break;
		case 's': o.size = (uint32_t)parse_size(optarg); sized = 1; break;
		case 'a': o.sweep = 1; o.size = SIZE_MAX_BYTES; sized = 1; break;
		case 'n': o.iters = parse_size(optarg); counted = 1; break;
		case 'D': o.duration = atof(optarg); counted = 1; break;
		case 't': o.depth = (uint32_t)parse_size(optarg); break;
		case 'q': o.qps = (uint32_t)parse_size(optarg); break;
		case 'b': fail("-b (bidirectional) is not in falcon-perf yet");
		case 'R': fail("-R (rdma_cm): falcon-perf connects through falcond's CM itself");
		case 'c':
			if (strcmp(optarg, "RC"))
				fail("-c %s: falcon-perf measures RC", optarg);
			break;
		case 'e': o.event = 1; break;
		case O_GBITS: o.gbits = 1; break;
		case O_SOCKET: o.sock = optarg; break;
		case O_JSON: o.json = 1; break;
		case 'h': usage(stdout); exit(0);
		case 'i': case 'x': case 'F': case 'I': case 'S': case 'o': case 'Q': case 'l':
		case 'r': case 'u': break;
		default: usage(stderr); exit(2);
		}
	}
	if (!counted)
		o.iters = o.mode == M_LAT ? 1000 : 5000; /* perftest's defaults */
	if (optind >= argc && !sized)
		o.size = SIZE_MAX_BYTES; /* a server: room for whatever the client asks */
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "test", 1, NULL, 't' }, { "mode", 1, NULL, 'm' }, { "size", 1, NULL, 's' },
		{ "sweep", 0, NULL, 'a' }, { "depth", 1, NULL, 'd' }, { "qps", 1, NULL, 'q' },
		{ "iters", 1, NULL, 'n' }, { "duration", 1, NULL, 'D' }, { "warmup", 1, NULL, 'w' },
		{ "service", 1, NULL, 'p' }, { "socket", 1, NULL, 'S' }, { "json", 0, NULL, 'j' }, { "event", 0, NULL, 'e' },
		{ "help", 0, NULL, 'h' }, { "version", 0, NULL, 'V' }, { NULL, 0, NULL, 0 },
	};
	int c;

	o.duration = 2;
	if (perftest_name(argv[0]) == 0 || (argc > 1 && perftest_name(argv[1]) == 0)) {
		o.perftest = 1;
		perftest_args(argc - (perftest_name(argv[0]) != 0),
			      argv + (perftest_name(argv[0]) != 0));
		argc -= perftest_name(argv[0]) != 0;
		argv += perftest_name(argv[0]) != 0;
		goto parsed;
	}
	while ((c = getopt_long(argc, argv, "t:m:s:ad:q:n:D:w:p:S:jeh", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			for (o.test = T_WRITE; o.test <= T_ATOMIC && strcmp(optarg, test_name[o.test]);
			     o.test++)
				;
			if (o.test > T_ATOMIC)
				fail("unknown test '%s'", optarg);
			break;
		case 'm':
			if (strcmp(optarg, "bw") && strcmp(optarg, "lat"))
				fail("unknown mode '%s'", optarg);
			o.mode = strcmp(optarg, "lat") ? M_BW : M_LAT;
			break;
		case 's': o.size = (uint32_t)parse_size(optarg); break;
		case 'a': o.sweep = 1; break;
		case 'd': o.depth = (uint32_t)parse_size(optarg); break;
		case 'q': o.qps = (uint32_t)parse_size(optarg); break;
		case 'n': o.iters = parse_size(optarg); break;
		case 'D': o.duration = atof(optarg); break;
		case 'w': o.warmup = (uint32_t)atoi(optarg); break;
		case 'p': o.service = (uint16_t)atoi(optarg); break;
		case 'S': o.sock = optarg; break;
		case 'j': o.json = 1; break;
		case 'e': o.event = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("falcon-perf %s\n", FALCON_RELEASE); return 0;
		default: usage(stderr); return 2;
		}
	}
parsed:
	if (o.size > SIZE_MAX_BYTES || o.qps > QPS_MAX || o.depth > 512 || !o.service ||
	    o.duration <= 0)
		fail("size up to %u, qps up to %u, depth up to 512, a service and a duration",
		     SIZE_MAX_BYTES, QPS_MAX);
	if (o.mode == M_LAT)
		o.qps = 1;
	o.host = optind < argc ? argv[optind] : NULL;
	setup();
	return o.host ? client() : serve();
}
