/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_bench - the engine's cost per operation: two nodes (daemon/node.h) joined in
 * memory on one core, no network, no PSP. An in-memory io backend hands each transmitted
 * frame to the other node as it is (no copy: the frame goes back to its owner's pool
 * once received). Real time (CLOCK_MONOTONIC) drives the engine, so timers run as they
 * would in falcond.
 *
 *   engine_bench             the table (make bench-engine)
 *   engine_bench --quick     a short run of every case, up to 1,024 connections (smoke)
 *   engine_bench --rr        the round-robin table alone (8 B WRITEs spread over N QPs)
 *   engine_bench --instr OP N   N operations of case OP only and nothing else printed, for
 *                            valgrind --tool=callgrind (bench/instr.sh: instructions per
 *                            operation per side = (Ir(N) - Ir(0)) / N / 2)
 *
 * Columns: ops/s; packets/s (both directions, ACKs included); Gbit/s of payload; ns per
 * op per side (the run's time / ops / 2: both sides share the one core); ACKs per data
 * packet; ACKs sent by the coalescing timer per operation (an operation that waits for
 * the timer shows 1 here). The connections table opens N connections on both nodes and runs the 8 B
 * WRITE at depth 64 over 16 of them chosen at random; the memory line is the growth of
 * the process's resident set per connection (both nodes).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "node_pair.h"

#define IOVA 0x10000000ull
#define MEM_BYTES (8u << 20)
#define MAXQP 16

static uint64_t timer_fires; /* on_timer calls of either node */

/* ---- the pair ---- */

struct pair {
	struct np_host h[2];
	struct np_memio io[2];
	struct fc_txn *conn[MAXQP][2];
	uint32_t qpn[MAXQP][2];
	uint32_t nqp;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * sysconf(_SC_PAGESIZE);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "engine_bench: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void pair_init_qps(struct pair *p, uint32_t max_conns, uint32_t max_qps)
{
	memset(p, 0, sizeof(*p));
	for (int x = 0; x < 2; x++) {
		struct fc_node_cfg nc;
		struct fc_peer_addr pa = { .len = 1, .bytes = { (uint8_t)(1 - x) } };
		int rc;

		if ((rc = np_memio_init(&p->io[x], &p->io[1 - x], (uint8_t)x)))
			die("frames", rc);
		fc_node_cfg_default(&nc);
		nc.io = &np_memio_ops;
		nc.io_ctx = &p->io[x];
		nc.txn.max_conns = max_conns;
		nc.rdma.max_conns = max_conns;
		nc.rdma.max_qps = max_qps;
		nc.max_peers = 2;
		if ((rc = np_host_init(&p->h[x], &nc, MEM_BYTES, IOVA, 4096, &pa, 7u + (uint32_t)x)))
			die("node", rc);
	}
}

static void pair_init(struct pair *p, uint32_t max_conns)
{
	pair_init_qps(p, max_conns, 64);
}

static void pair_fini(struct pair *p)
{
	for (int x = 0; x < 2; x++) {
		np_host_fini(&p->h[x]);
		np_memio_fini(&p->io[x]);
	}
}

static void conn_cfg(struct fc_txn_conn_cfg *c)
{
	fc_txn_conn_cfg_default(c);
}

static void add_qp(struct pair *p)
{
	struct fc_txn_conn_cfg cc;
	struct fc_rdma_qp_init qi;
	int rc;

	conn_cfg(&cc);
	fc_rdma_qp_init_default(&qi);
	qi.sq_depth = 256;
	qi.rq_depth = 256;
	qi.max_inflight = 256;
	rc = np_connect_rc(&p->h[0], &p->h[1], &cc, &qi, p->conn[p->nqp], p->qpn[p->nqp]);
	if (rc)
		die("connect", rc);
	p->nqp++;
}

/* Open n idle connections on both nodes (no QPs). Returns how many it could. */
static uint32_t open_idle(struct pair *p, uint32_t n)
{
	struct fc_txn_conn_cfg cc;
	uint32_t k;

	conn_cfg(&cc);
	for (k = 0; k < n; k++) {
		uint32_t cid[2];

		for (int x = 0; x < 2; x++)
			if (fc_node_cid_reserve(p->h[x].n, p->h[x].peer, &cid[x]))
				return k;
		for (int x = 0; x < 2; x++) {
			struct fc_txn_conn_cfg c = cc;

			c.pdl.remote_cid = cid[1 - x];
			if (!fc_node_conn_open(p->h[x].n, cid[x], &c))
				return k;
		}
	}
	return k;
}

static void pump(struct pair *p, uint64_t now)
{
	struct np_host *h[2] = { &p->h[0], &p->h[1] };

	timer_fires += np_memio_pump(h, p->io, now);
}

enum bop { B_WRITE, B_READ, B_FADD };

struct bcase {
	const char *name;
	enum bop op;
	uint32_t len, depth;
};

struct result {
	double secs;
	uint64_t ops, pkts, acks, data_pkts;
	uint64_t timer_fires;
	uint64_t timer_acks;  /* ACKs sent because the coalescing timer expired */
	uint64_t errors;      /* completions in error (first status in err_status) */
	uint8_t err_status;
};

static int post(struct pair *p, uint32_t q, const struct bcase *c, uint64_t id, uint64_t now)
{
	uint64_t off = (id % 32) * (64u << 10);
	struct fc_sge sge = { .addr = IOVA + off, .len = c->len, .lkey = p->h[0].k.lkey };
	struct fc_rdma_send_wr wr = { .wr_id = id, .num_sge = 1, .sgl = &sge,
				      .rkey = p->h[1].k.rkey,
				      .remote_addr = IOVA + MEM_BYTES / 2 + off };

	switch (c->op) {
	case B_WRITE:
		wr.opcode = FC_RDMA_WR_WRITE;
		break;
	case B_READ:
		wr.opcode = FC_RDMA_WR_READ;
		break;
	case B_FADD:
		wr.opcode = FC_RDMA_WR_FETCH_ADD;
		wr.compare_add = 1;
		sge.len = 8;
		wr.remote_addr = IOVA + MEM_BYTES - 4096 + (id % 64) * 8;
		break;
	}
	return fc_rdma_post_send(fc_node_rdma(p->h[0].n), p->qpn[q][0], &wr, now);
}

static void pdl_totals(struct pair *p, uint64_t *data, uint64_t *acks, uint64_t *timer_acks)
{
	*data = *acks = *timer_acks = 0;
	for (uint32_t q = 0; q < p->nqp; q++)
		for (int x = 0; x < 2; x++) {
			const struct fc_pdl_counters *c = fc_pdl_counters(fc_txn_pdl(p->conn[q][x]));

			*data += c->tx_new;
			*acks += c->backs_tx + c->eacks_tx;
			*timer_acks += c->acks_by_timer;
		}
}

/* Run ops operations of c over the pair's QPs, each QP kept at c->depth; stop posting
 * after max_secs (the figures then cover the operations done). */
static struct result run_case(struct pair *p, const struct bcase *c, uint64_t ops,
			      double max_secs)
{
	struct fc_rdma *d = fc_node_rdma(p->h[0].n);
	uint64_t posted = 0, done = 0, t0, d0, a0, ta0, pk0, tf0;
	uint32_t inq[MAXQP] = {0};
	struct fc_rdma_wc wc[64];
	struct result r = {0};
	int n;

	pdl_totals(p, &d0, &a0, &ta0);
	pk0 = p->io[0].pkts + p->io[1].pkts;
	tf0 = timer_fires;
	t0 = now_ns();
	while (done < posted || posted < ops) {
		uint64_t now = now_ns();

		if (posted < ops && (double)(now - t0) / 1e9 > max_secs)
			ops = posted; /* time is up: finish what is in flight */

		for (uint32_t q = 0; q < p->nqp; q++)
			while (inq[q] < c->depth && posted < ops) {
				int rc = post(p, q, c, posted * MAXQP + q, now);

				if (rc)
					die("post_send", rc);
				inq[q]++;
				posted++;
			}
		pump(p, now);
		while ((n = fc_rdma_poll_cq(d, p->h[0].scq, wc, 64)) > 0)
			for (int i = 0; i < n; i++) {
				if (wc[i].status != FC_WC_SUCCESS && !r.errors++)
					r.err_status = wc[i].status;
				inq[wc[i].wr_id % MAXQP]--;
				done++;
			}
		if (n < 0)
			die("poll_cq", n);
	}
	r.secs = (double)(now_ns() - t0) / 1e9;
	r.ops = done;
	pdl_totals(p, &r.data_pkts, &r.acks, &r.timer_acks);
	r.timer_acks -= ta0;
	r.data_pkts -= d0;
	r.acks -= a0;
	r.pkts = p->io[0].pkts + p->io[1].pkts - pk0;
	r.timer_fires = timer_fires - tf0;
	return r;
}

static void print_errors(const struct result *r)
{
	if (r->errors)
		printf("  %" PRIu64 " completions in error (status %u)", r->errors, r->err_status);
}

static void print_row(const char *name, const struct bcase *c, const struct result *r)
{
	double bytes = (double)r->ops * c->len;

	printf("%-22s %6u %12.0f %12.0f %9.2f %10.0f %9.2f %11.2f", name, c->depth,
	       (double)r->ops / r->secs, (double)r->pkts / r->secs, bytes * 8 / r->secs / 1e9,
	       r->secs * 1e9 / (double)r->ops / 2, r->data_pkts ? (double)r->acks / (double)r->data_pkts : 0,
	       (double)r->timer_acks / (double)r->ops);
	print_errors(r);
	printf("\n");
}

static const struct bcase cases[] = {
	{ "8 B WRITE", B_WRITE, 8, 64 },
	{ "8 B WRITE", B_WRITE, 8, 1 },
	{ "8 B READ", B_READ, 8, 64 },
	{ "8 B READ", B_READ, 8, 1 },
	{ "8 B FetchAdd", B_FADD, 8, 64 },
	{ "8 B FetchAdd", B_FADD, 8, 1 },
	{ "4 KiB WRITE", B_WRITE, 4096, 64 },
	{ "64 KiB WRITE", B_WRITE, 65536, 16 },
};

static uint64_t ops_for(const struct bcase *c, int quick)
{
	uint64_t n = c->len >= 65536 ? 20000 : c->len >= 4096 ? 100000 : c->depth == 1 ? 100000 : 400000;

	return quick ? n / 50 : n;
}

/* 8 B WRITEs, depth 64 in all, each new one to the next of n QPs (each on a connection
 * of its own, send queue 4, 4 in flight; one QP: 128 of each): what a daemon's engine
 * does for falcon's many_qps benchmark, without sockets or clients. Returns ops/s. */
static double rr_case(uint32_t n, uint64_t ops, double max_secs)
{
	struct pair *p = calloc(1, sizeof(*p));
	uint32_t (*qpn)[2] = calloc(n, sizeof(*qpn));
	struct fc_txn_conn_cfg cc;
	struct fc_rdma_qp_init qi;
	struct fc_rdma_wc wc[64];
	uint64_t posted = 0, done = 0, t0, skipped = 0;
	uint32_t next = 0, out = 0;
	struct fc_rdma *d;
	int k;

	if (!p || !qpn)
		die("rr", ENOMEM);
	pair_init_qps(p, n < 64 ? 64 : n, n < 64 ? 64 : n);
	conn_cfg(&cc);
	fc_rdma_qp_init_default(&qi);
	qi.sq_depth = qi.max_inflight = n == 1 ? 128 : 4;
	qi.rq_depth = 1;
	qi.max_send_sge = qi.max_recv_sge = 1;
	for (uint32_t i = 0; i < n; i++) {
		struct fc_txn *conn[2];
		int rc = np_connect_rc(&p->h[0], &p->h[1], &cc, &qi, conn, qpn[i]);

		if (rc)
			die("rr connect", rc);
	}
	d = fc_node_rdma(p->h[0].n);
	t0 = now_ns();
	while (done < posted || posted < ops) {
		uint64_t now = now_ns();

		if (posted < ops && (double)(now - t0) / 1e9 > max_secs)
			ops = posted;
		while (out < 64 && posted < ops) {
			struct fc_sge sge = { .addr = IOVA, .len = 8, .lkey = p->h[0].k.lkey };
			struct fc_rdma_send_wr wr = { .wr_id = posted, .num_sge = 1, .sgl = &sge,
						      .opcode = FC_RDMA_WR_WRITE,
						      .rkey = p->h[1].k.rkey,
						      .remote_addr = IOVA + MEM_BYTES / 2 };
			int rc = fc_rdma_post_send(d, qpn[next][0], &wr, now);

			next = next + 1 == n ? 0 : next + 1;
			if (rc == -EAGAIN && ++skipped < 100000000)
				continue; /* that QP's queue is full: the next one */
			if (rc)
				die("rr post_send", rc);
			out++;
			posted++;
		}
		pump(p, now);
		while ((k = fc_rdma_poll_cq(d, p->h[0].scq, wc, 64)) > 0) {
			out -= (uint32_t)k;
			done += (uint64_t)k;
		}
		if (k < 0)
			die("rr poll_cq", k);
	}
	double rate = (double)done / ((double)(now_ns() - t0) / 1e9);

	pair_fini(p);
	free(qpn);
	free(p);
	return rate;
}

static void rr_table(int quick)
{
	static const uint32_t nrr[] = { 1, 1000, 10000 };
	double rr1 = 0;

	printf("\n8 B WRITE, depth 64 in all, round robin over N QPs (each its own connection;\n"
	       "every new WR to the next QP)\n");
	printf("%-8s %12s %10s %9s\n", "N", "ops/s", "ns/op/side", "cost/N=1");
	for (size_t i = 0; i < sizeof(nrr) / sizeof(nrr[0]); i++) {
		double r = rr_case(nrr[i], quick ? 20000 : 400000, quick ? 0.3 : 3);

		if (!i)
			rr1 = r;
		printf("%-8u %12.0f %10.0f %8.2fx\n", nrr[i], r, 1e9 / r / 2, rr1 / r);
	}
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && !strcmp(argv[1], "--quick");
	static const uint32_t nconns[] = { 1, 1024, 16384, 65536 };
	struct pair *p = calloc(1, sizeof(*p));
	double base = 0, per_conn = 0, mem_budget = 8.0 * (1u << 30);

	if (!p)
		die("pair", ENOMEM);
	if (argc > 1 && !strcmp(argv[1], "--rr")) { /* the round-robin table alone */
		rr_table(0);
		free(p);
		return 0;
	}
	if (argc > 3 && !strcmp(argv[1], "--instr")) {
		/* callgrind mode: case index, operation count; nothing printed */
		unsigned ci = (unsigned)atoi(argv[2]);
		uint64_t ops = strtoull(argv[3], NULL, 0);

		if (ci >= sizeof(cases) / sizeof(cases[0]))
			die("--instr case", EINVAL);
		pair_init(p, 64);
		add_qp(p);
		if (ops)
			run_case(p, &cases[ci], ops, 1e9);
		pair_fini(p);
		free(p);
		return 0;
	}
	printf("engine_bench: two nodes in memory on one core, MTU 4096, real time%s\n",
	       quick ? " (quick)" : "");
	printf("%-22s %6s %12s %12s %9s %10s %9s %11s\n", "case", "depth", "ops/s", "packets/s",
	       "Gbit/s", "ns/op/side", "acks/pkt", "tmr-acks/op");
	pair_init(p, 64);
	add_qp(p);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r = run_case(p, &cases[i], ops_for(&cases[i], quick), quick ? 0.3 : 3);

		print_row(cases[i].name, &cases[i], &r);
	}
	pair_fini(p);

	printf("\n8 B WRITE, depth 64, one QP on a connection at a random place among N open\n"
	       "connections per node (the rest idle)\n");
	printf("%-8s %12s %9s %12s %12s\n", "N", "ops/s", "cost/N=1", "bytes/conn", "RSS MiB");
	for (size_t i = 0; i < sizeof(nconns) / sizeof(nconns[0]); i++) {
		const struct bcase c = { "8 B WRITE", B_WRITE, 8, 64 };
		uint32_t n = nconns[i], before = (uint32_t)(now_ns() % n), opened;
		long rss0, rss1;
		struct result r;

		if (quick && n > 1024)
			break; /* the smoke run stops at 1,024 connections */
		if (per_conn > 0 && (double)n * per_conn * 2 > mem_budget) {
			printf("%-8u %12s %9s %12.0f %12s  not run: %.1f GiB for both nodes\n", n, "-",
			       "-", per_conn, "-", (double)n * per_conn * 2 / (1u << 30));
			continue;
		}
		pair_init(p, n < 64 ? 64 : n);
		rss0 = rss_bytes();
		opened = open_idle(p, before);
		add_qp(p);
		opened += 1 + open_idle(p, n - 1 - before);
		rss1 = rss_bytes();
		if (n > 1)
			per_conn = (double)(rss1 - rss0) / opened / 2;
		r = run_case(p, &c, ops_for(&c, quick), quick ? 0.3 : 3);
		if (i == 0)
			base = (double)r.ops / r.secs;
		printf("%-8u %12.0f %8.2fx %12.0f %12.1f", opened, (double)r.ops / r.secs,
		       base / ((double)r.ops / r.secs), n > 1 ? per_conn : 0, (double)rss1 / (1 << 20));
		if (opened < n)
			printf("  (the engine refused connection %u)", opened + 1);
		print_errors(&r);
		printf("\n");
		pair_fini(p);
	}
	rr_table(quick);
	free(p);
	return 0;
}
