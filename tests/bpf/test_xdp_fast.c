/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_xdp_fast.c - the fast path of bpf/falcon_xdp.bpf.c under BPF_PROG_TEST_RUN: every
 * verdict behind the CID lookup, with its return code, output bytes and counters.
 *
 * The connection state is written and read the way falcond does it: falcon_conns is
 * mmap()ed (BPF_F_MMAPABLE) and its slots filled with window.h's functions, a slot
 * published by storing its CID last.
 *
 * Redirects: BPF_PROG_TEST_RUN (without BPF_F_TEST_XDP_LIVE_FRAMES) runs the program and
 * reports its return value; it does not carry out the redirect. bpf_redirect_map() on an
 * XSKMAP returns XDP_REDIRECT only when the queue's entry holds a socket, so the fixture
 * puts a real AF_XDP socket (created, never bound: nothing is ever delivered to it) in
 * falcon_xsks[0], the queue test runs use. The frame metadata is checked through the
 * test-run context: ctx_out.data is the metadata length and data_out starts with it.
 * "No socket" is the same run with the entry deleted.
 *
 * Expected ACKs are written out field by field from the spec tables (7.7.1, PSP, IP,
 * UDP), independently of the program, and the produced ACK is also decoded with the
 * engine's decoders (wire_outer.c, wire_falcon.c). Only the transmit time is taken from
 * the output, after checking it lies between the clock readings around the run.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "falcon/window.h"
#include "falcon/xdp_conn.h"
#include "falcon/xdp_stats.h"
#include "falcon_xdp.skel.h"
#include "pktbuild.h"
#include "testutil.h"
#include "xdp_counters.h"
#include "wire_falcon.h"
#include "wire_outer.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif



#define META_MAX 252 /* metadata test runs may be asked to carry, at most tried */
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The connection most fixtures use: slot 7, generation 3. */
#define SLOT 7u
#define CID (3u << 16 | SLOT)
#define REMOTE_CID 0x5A0102u
#define REMOTE_PORT 0xC001u /* the peer's Falcon port, other than ours */
#define RBASE 50u    /* request window base */
#define DBASE 1000u  /* data window base */
#define IV0 5000000000ull /* the sender's clock at the fixtures' packets, ns */

struct fx {
	struct falcon_xdp *skel;
	struct fc_xdp_conn *conns; /* falcon_conns, mmap()ed */
	size_t conns_len;
	uint32_t nconns;
	int xsk_fd;
	int ncpu;
};

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level > LIBBPF_WARN)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int xsk_put(struct fx *f)
{
	uint32_t q = 0;

	return bpf_map_update_elem(bpf_map__fd(f->skel->maps.falcon_xsks), &q, &f->xsk_fd, 0);
}

static int xsk_del(struct fx *f)
{
	uint32_t q = 0;

	return bpf_map_delete_elem(bpf_map__fd(f->skel->maps.falcon_xsks), &q);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct bpf_map *m;
	long page = sysconf(_SC_PAGESIZE);

	*state = NULL;
	if (!f)
		return -1;
	f->xsk_fd = -1;
	f->skel = falcon_xdp__open();
	if (!f->skel || falcon_xdp__load(f->skel)) {
		fprintf(stderr, "falcon_xdp open/load: %s\n", strerror(errno));
		goto fail;
	}
	m = f->skel->maps.falcon_conns;
	if (bpf_map__value_size(m) != sizeof(struct fc_xdp_conn)) {
		fprintf(stderr, "falcon_conns value %u bytes, struct fc_xdp_conn %zu\n",
			bpf_map__value_size(m), sizeof(struct fc_xdp_conn));
		goto fail;
	}
	f->nconns = bpf_map__max_entries(m);
	f->conns_len = ((size_t)f->nconns * sizeof(struct fc_xdp_conn) + (size_t)page - 1) &
		       ~((size_t)page - 1);
	f->conns = mmap(NULL, f->conns_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	if (f->conns == MAP_FAILED) {
		fprintf(stderr, "mmap falcon_conns: %s\n", strerror(errno));
		f->conns = NULL;
		goto fail;
	}
	f->xsk_fd = socket(AF_XDP, SOCK_RAW, 0);
	if (f->xsk_fd < 0 || xsk_put(f)) {
		fprintf(stderr, "AF_XDP socket into falcon_xsks: %s\n", strerror(errno));
		goto fail;
	}
	f->ncpu = libbpf_num_possible_cpus();
	*state = f;
	return 0;
fail:
	*state = f; /* teardown frees; tests fail on a NULL skel */
	if (f->skel && f->conns && f->xsk_fd >= 0)
		return 0;
	falcon_xdp__destroy(f->skel);
	f->skel = NULL;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f)
		return 0;
	if (f->conns)
		munmap(f->conns, f->conns_len);
	if (f->xsk_fd >= 0)
		close(f->xsk_fd);
	falcon_xdp__destroy(f->skel);
	free(f);
	return 0;
}

static struct fx *fx_of(void **state)
{
	struct fx *f = *state;

	if (!f || !f->skel)
		fail_msg("fixture failed: BPF program load, falcon_conns mmap or AF_XDP socket "
			 "(log above)");
	return f;
}

/* ------------------------------------------------------------------------ */
/* connection slots, as falcond fills them                                    */

static struct fc_xdp_conn *conn_at(struct fx *f, uint32_t slot)
{
	assert_true(slot < f->nconns);
	return &f->conns[slot];
}

static void conn_counters_zero(struct fx *f, uint32_t slot)
{
	size_t n = (size_t)f->ncpu * sizeof(struct fc_xdp_conn_cnt);
	void *z = calloc(1, n);

	assert_non_null(z);
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(f->skel->maps.falcon_conn_counters),
					     &slot, z, BPF_ANY), 0);
	free(z);
}

/* Retire the slot (cid 0 first), lay out windows and fields, publish cid last. */
static struct fc_xdp_conn *conn_open(struct fx *f, uint32_t slot, uint32_t cid, uint32_t flags)
{
	struct fc_xdp_conn *c = conn_at(f, slot);

	fc_store_rel32(&c->cid, 0);
	memset((char *)c + sizeof(c->cid), 0, sizeof(*c) - sizeof(c->cid));
	c->remote_cid = REMOTE_CID;
	c->remote_port = REMOTE_PORT;
	c->flags = flags;
	fc_win_init(&c->rx.req, FC_REQ_WIN, RBASE);
	fc_win_init(&c->rx.data, FC_DATA_WIN, DBASE);
	conn_counters_zero(f, slot);
	fc_store_rel32(&c->cid, cid);
	return c;
}

static void conn_close(struct fx *f, uint32_t slot)
{
	fc_store_rel32(&conn_at(f, slot)->cid, 0);
}

static struct fc_xdp_conn_cnt conn_counters(struct fx *f, uint32_t slot)
{
	struct fc_xdp_conn_cnt sum = { 0 }, *v = calloc((size_t)f->ncpu, sizeof(*v));
	int c;

	assert_non_null(v);
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(f->skel->maps.falcon_conn_counters),
					     &slot, v), 0);
	for (c = 0; c < f->ncpu; c++) {
		sum.rx_pkts += v[c].rx_pkts;
		sum.redirected += v[c].redirected;
		sum.marked += v[c].marked;
		sum.passed += v[c].passed;
		sum.bad_mode += v[c].bad_mode;
		sum.dup_acked += v[c].dup_acked;
		sum.oow += v[c].oow;
		sum.stale_ack += v[c].stale_ack;
		sum.bad_spi += v[c].bad_spi;
		sum.replay += v[c].replay;
	}
	free(v);
	return sum;
}

static void read_counters(struct fx *f, uint64_t out[FC_XDP_CNT_MAX])
{
	xdp_counters_read(bpf_map__fd(f->skel->maps.falcon_counters), out);
}

/* ------------------------------------------------------------------------ */
/* one test run                                                               */

struct run {
	int verdict;
	uint8_t out[PKT_MAX + 64];
	uint32_t meta_len;        /* metadata bytes in front of the frame in out */
	uint32_t len;             /* frame bytes after the metadata */
	const uint8_t *frame;     /* out + meta_len */
	uint64_t t_before, t_after; /* CLOCK_MONOTONIC around the run */
};

/* Run frame once and check the verdict and that exactly the counters in inc[] moved,
 * each by its count in inc[]. */
static void run_frame(struct fx *f, const uint8_t *frame, size_t len, int verdict,
		      const uint32_t *inc, size_t ninc, struct run *r, const char *what)
{
	uint64_t before[FC_XDP_CNT_MAX], after[FC_XDP_CNT_MAX], want[FC_XDP_CNT_MAX] = { 0 };
	struct xdp_md ctx_in = { .data = 0, .data_end = (uint32_t)len };
	struct xdp_md ctx_out = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (uint32_t)len,
		    .data_out = r->out, .data_size_out = sizeof(r->out), .ctx_in = &ctx_in,
		    .ctx_size_in = sizeof(ctx_in), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);
	size_t i;
	int err;

	assert_true(len <= PKT_MAX);
	for (i = 0; i < ninc; i++)
		want[inc[i]]++;
	read_counters(f, before);
	r->t_before = fc_test_now_ns();
	err = bpf_prog_test_run_opts(bpf_program__fd(f->skel->progs.falcon_xdp_rx), &opts);
	r->t_after = fc_test_now_ns();
	if (err)
		fail_msg("%s: BPF_PROG_TEST_RUN: %s", what, strerror(-err));
	read_counters(f, after);
	r->verdict = (int)opts.retval;
	r->meta_len = ctx_out.data;
	r->len = ctx_out.data_end - ctx_out.data;
	r->frame = r->out + r->meta_len;
	if (r->verdict != verdict)
		fail_msg("%s: verdict %d, want %d", what, r->verdict, verdict);
	if (opts.data_size_out != ctx_out.data_end)
		fail_msg("%s: %u bytes out, context says %u", what, opts.data_size_out,
			 ctx_out.data_end);
	xdp_counters_check(before, after, want, what);
}

static void run_pkt(struct fx *f, const struct pkt *p, int verdict, const uint32_t *inc,
		    size_t ninc, struct run *r, const char *what)
{
	assert_false(p->overflow);
	run_frame(f, p->b, p->len, verdict, inc, ninc, r, what);
}

/* The frame went out as it came in, with no metadata in front. */
static void expect_unchanged(const struct run *r, const struct pkt *p, const char *what)
{
	if (r->meta_len != 0)
		fail_msg("%s: %u bytes of metadata", what, r->meta_len);
	if (r->len != p->len || memcmp(r->frame, p->b, p->len) != 0)
		fail_msg("%s: frame modified (%u bytes out, %zu in)", what, r->len, p->len);
}

/* Redirected: 8 bytes of metadata (magic 0xFA1C0, flags), then the frame unchanged. */
static void expect_meta(const struct run *r, const struct pkt *p, uint32_t flags,
			const char *what)
{
	uint32_t m[2];

	if (r->meta_len != 8)
		fail_msg("%s: %u bytes of metadata, want 8", what, r->meta_len);
	memcpy(m, r->out, sizeof(m));
	if (m[0] != 0xFA1C0u || m[1] != flags)
		fail_msg("%s: metadata magic %#x flags %#x, want 0xfa1c0 %#x", what, m[0], m[1],
			 flags);
	if (r->len != p->len || memcmp(r->frame, p->b, p->len) != 0)
		fail_msg("%s: frame modified behind the metadata", what);
}

static uint32_t cnt_ip(int ipv6)
{
	return ipv6 ? FC_XDP_CNT_FALCON_IPV6 : FC_XDP_CNT_FALCON_IPV4;
}

/* ------------------------------------------------------------------------ */
/* packets                                                                    */

/* A cleartext data packet (Push Data, Pull Request, Pull Data) for cid with psn, IV. */
static void data_pkt(struct pkt *p, int ipv6, uint8_t type, uint32_t cid, uint32_t psn,
		     uint64_t iv)
{
	struct pkt_spec s = pkt_spec_default(type);

	s.ipv6 = ipv6;
	s.payload_len = type == PKT_T_PULL_REQ || type == PKT_T_RESYNC ? 0 : 16;
	pkt_build(p, &s);
	pkt_set_cid(p, cid);
	pkt_set_word(p, 4, psn);
	pkt_set_word(p, 5, 0x77);  /* RSN */
	pkt_set_iv(p, iv);
	pkt_finish(p);
}

/* A BACK, EACK or NACK for cid carrying rrbpsn and rdbpsn. */
static void ack_pkt(struct pkt *p, uint8_t type, uint32_t cid, uint32_t rrbpsn, uint32_t rdbpsn)
{
	struct pkt_spec s = pkt_spec_default(type);

	pkt_build(p, &s);
	pkt_set_cid(p, cid);
	pkt_set_word(p, 2, rdbpsn);
	pkt_set_word(p, 3, rrbpsn);
	pkt_set_iv(p, IV0);
	pkt_finish(p);
}

/* Wire timestamp of ns, 131.072 ns = 131072 ps units (spec 7.7.1), by the definition. */
static uint32_t ts_of(uint64_t ns)
{
	return (uint32_t)(ns * 1000 / 131072);
}

/* The BACK the program must answer dup with, written from the spec tables: Ethernet and IP
 * addresses swapped, VLAN tags kept, IPv4 without options (id 0, DF, TTL 64, UDP checksum
 * 0) or IPv6 (same flow label, hop limit 64, UDP checksum), UDP from the Falcon port to
 * dport, PSP NULL (next 252, ext len 1, crypt off 1, version 0xF, SPI 0, IV tx_ns), BACK
 * (version 1, remote CID, type 1001b, rdbpsn, rrbpsn, t1 = dup's IV, t2 = tx_ns, hop count
 * in word 6 [31:28], word 7 0). */
static void expected_ack(struct pkt *e, const struct pkt *dup, int nvlan, uint16_t dport,
			 uint32_t rdbpsn, uint32_t rrbpsn, uint64_t dup_iv, uint64_t tx_ns,
			 uint32_t hops)
{
	uint8_t *h;
	size_t i;

	pkt_init(e);
	pkt_l2(e, nvlan, dup->l3 == 6 ? 0x86DD : 0x0800);
	memcpy(e->b, dup->b + 6, 6); /* to the sender */
	memcpy(e->b + 6, dup->b, 6);
	if (dup->l3 == 6) {
		pkt_ipv6(e, 17);
		memcpy(e->b + e->l3_off + 8, dup->b + dup->l3_off + 24, 16);
		memcpy(e->b + e->l3_off + 24, dup->b + dup->l3_off + 8, 16);
	} else {
		pkt_ipv4(e, 0, 17);
		pkt_wr16(e->b + e->l3_off + 4, 0); /* id 0 */
		memcpy(e->b + e->l3_off + 12, dup->b + dup->l3_off + 16, 4);
		memcpy(e->b + e->l3_off + 16, dup->b + dup->l3_off + 12, 4);
	}
	pkt_udp(e, 1000, dport);
	h = pkt_put(e, 16);
	assert_non_null(h);
	h[0] = 252;
	h[1] = 1;
	h[2] = 1;
	h[3] = 0xF << 2 | 1;
	pkt_wr32(h + 8, (uint32_t)(tx_ns >> 32));
	pkt_wr32(h + 12, (uint32_t)tx_ns);
	e->psp_off = (size_t)(h - e->b);
	h = pkt_put(e, 32);
	assert_non_null(h);
	e->falcon_off = (size_t)(h - e->b);
	pkt_wr32(h, 1u << 28 | REMOTE_CID);
	pkt_wr32(h + 4, 0x9u << 1);
	pkt_wr32(h + 8, rdbpsn);
	pkt_wr32(h + 12, rrbpsn);
	pkt_wr32(h + 16, ts_of(dup_iv));
	pkt_wr32(h + 20, ts_of(tx_ns));
	pkt_wr32(h + 24, hops << 28);
	pkt_finish(e);
	if (e->l3 == 4)
		pkt_wr16(e->b + e->l4_off + 6, 0);
	for (i = 0; i < 12; i++) /* tags unchanged: the dup's own */
		if (nvlan && i < 4u * (unsigned)nvlan)
			e->b[14 + i] = dup->b[14 + i];
}

/* Check r's frame is the ACK for dup: the transmit time (PSP IV) within the run, then
 * every byte, then through the engine's decoders. */
static void check_ack(const struct run *r, const struct pkt *dup, int nvlan, uint16_t dport,
		      uint32_t rdbpsn, uint32_t rrbpsn, uint64_t dup_iv, uint32_t hops,
		      const char *what)
{
	struct fc_outer o;
	struct fc_falcon_pkt fp;
	uint64_t tx_ns;
	struct pkt e;
	int off;

	if (r->meta_len != 0)
		fail_msg("%s: ACK with %u bytes of metadata", what, r->meta_len);
	if (r->len < 60)
		fail_msg("%s: ACK frame of %u bytes", what, r->len);
	off = 14 + 4 * nvlan + (dup->l3 == 6 ? 40 : 20) + 8;
	tx_ns = (uint64_t)pkt_rd16(r->frame + off + 8) << 48 |
		(uint64_t)pkt_rd16(r->frame + off + 10) << 32 |
		(uint64_t)pkt_rd16(r->frame + off + 12) << 16 | pkt_rd16(r->frame + off + 14);
	if (tx_ns < r->t_before || tx_ns > r->t_after)
		fail_msg("%s: ACK IV %llu not within the run [%llu, %llu]", what,
			 (unsigned long long)tx_ns, (unsigned long long)r->t_before,
			 (unsigned long long)r->t_after);
	expected_ack(&e, dup, nvlan, dport, rdbpsn, rrbpsn, dup_iv, tx_ns, hops);
	assert_false(e.overflow);
	if (r->len != e.len)
		fail_msg("%s: ACK of %u bytes, want %zu", what, r->len, e.len);
	for (size_t i = 0; i < e.len; i++)
		if (r->frame[i] != e.b[i])
			fail_msg("%s: ACK byte %zu is %#04x, want %#04x", what, i, r->frame[i],
				 e.b[i]);

	/* the engine's decoders take it, checksums included */
	off = fc_outer_decode(r->frame, r->len, dport, &o);
	if (off < 0)
		fail_msg("%s: fc_outer_decode: %d", what, off);
	assert_int_equal(o.ip_ver, dup->l3);
	assert_int_equal(o.nvlan, nvlan);
	assert_int_equal(o.psp.version, FC_PSP_VER_NULL);
	assert_int_equal(o.psp.iv, tx_ns);
	assert_int_equal(o.ttl, 64);
	assert_int_equal(o.sport, 1000);
	assert_int_equal(fc_falcon_decode(r->frame + o.inner_off, o.inner_len, &fp), 32);
	assert_int_equal(fp.type, FC_PKT_BACK);
	assert_int_equal(fp.cid, REMOTE_CID);
	assert_int_equal(fp.rdbpsn, rdbpsn);
	assert_int_equal(fp.rrbpsn, rrbpsn);
	assert_int_equal(fp.t1_ts, fc_psp_t1(&(struct fc_psp_info){ .iv = dup_iv }));
	assert_int_equal(fp.t2_ts, fc_ns_to_ts(tx_ns));
	assert_int_equal(fp.hops, hops);
	assert_int_equal(fp.own, 0);
	assert_int_equal(fp.rxbuf, 0);
	assert_int_equal(fp.ecn, 0);
	assert_int_equal(fp.rue, 0);
}

/* Counter sets. */
#define C_DATA(ipv6, type) FC_XDP_CNT_RX, cnt_ip(ipv6), FC_XDP_CNT_FALCON_OK, \
	FC_XDP_CNT_PKT_TYPE_0 + (type)

static void expect_redirect_marked(struct fx *f, const struct pkt *p, int ipv6, uint8_t type,
				   const char *what)
{
	const uint32_t inc[] = { C_DATA(ipv6, type), FC_XDP_CNT_REDIRECT, FC_XDP_CNT_MARKED };
	struct run r;

	run_pkt(f, p, XDP_REDIRECT, inc, N_OF(inc), &r, what);
	expect_meta(&r, p, FC_XDP_META_MARKED, what);
}

static void expect_steered(struct fx *f, const struct pkt *p, int ipv6, uint32_t type_cnt,
			   const char *what)
{
	const uint32_t inc[] = { FC_XDP_CNT_RX, cnt_ip(ipv6), FC_XDP_CNT_FALCON_OK, type_cnt,
				 FC_XDP_CNT_REDIRECT };
	struct run r;

	run_pkt(f, p, XDP_REDIRECT, inc, N_OF(inc), &r, what);
	expect_meta(&r, p, 0, what);
}

static void expect_reject(struct fx *f, const struct pkt *p, int ipv6, uint32_t type_cnt,
			  uint32_t reason, const char *what)
{
	const uint32_t inc[] = { FC_XDP_CNT_RX, cnt_ip(ipv6), FC_XDP_CNT_FALCON_OK, type_cnt,
				 FC_XDP_CNT_REJECT, reason };
	struct run r;

	run_pkt(f, p, XDP_DROP, inc, N_OF(inc), &r, what);
}

static void expect_dup_acked(struct fx *f, const struct pkt *p, int ipv6, uint8_t type,
			     struct run *r, const char *what)
{
	const uint32_t inc[] = { C_DATA(ipv6, type), FC_XDP_CNT_DUP_ACKED };

	run_pkt(f, p, XDP_TX, inc, N_OF(inc), r, what);
}

/* ------------------------------------------------------------------------ */
/* tests                                                                      */

/* The instruction count and the verifier log sizes at log levels 1 and 2. */
static void test_verifier(void **state)
{
	const size_t log_cap = 256u << 20; /* level 2 logs every state: ~14 MB today */
	char *log = malloc(log_cap);
	struct fx *f = fx_of(state);
	struct bpf_prog_info info;
	uint32_t info_len = sizeof(info), level;

	assert_non_null(log);
	memset(&info, 0, sizeof(info));
	assert_int_equal(bpf_obj_get_info_by_fd(bpf_program__fd(f->skel->progs.falcon_xdp_rx),
						&info, &info_len), 0);
	printf("falcon_xdp_rx: %u instructions verified, %u xlated, %u bytes jited\n",
	       info.verified_insns, info.xlated_prog_len / 8, info.jited_prog_len);
	assert_true(info.verified_insns > 0 && info.verified_insns < 200000);
	for (level = 1; level <= 2; level++) {
		struct falcon_xdp *s = falcon_xdp__open();

		assert_non_null(s);
		log[0] = 0;
		assert_int_equal(bpf_program__set_log_buf(s->progs.falcon_xdp_rx, log, log_cap), 0);
		assert_int_equal(bpf_program__set_log_level(s->progs.falcon_xdp_rx, level), 0);
		assert_int_equal(falcon_xdp__load(s), 0);
		printf("verifier log level %u: %zu bytes%s%s", level, strlen(log),
		       level == 1 ? ": " : "\n", level == 1 ? log : "");
		assert_true(strlen(log) > 0);
		falcon_xdp__destroy(s);
	}
	free(log);
}

/* The map layout falcond builds against. */
static void test_maps(void **state)
{
	struct fx *f = fx_of(state);
	struct falcon_xdp *s = f->skel;

	assert_int_equal(bpf_map__type(s->maps.falcon_conns), BPF_MAP_TYPE_ARRAY);
	assert_true(bpf_map__map_flags(s->maps.falcon_conns) & BPF_F_MMAPABLE);
	assert_int_equal(bpf_map__max_entries(s->maps.falcon_conns), FC_XDP_CONNS_DEFAULT);
	assert_int_equal(bpf_map__type(s->maps.falcon_conn_counters), BPF_MAP_TYPE_PERCPU_ARRAY);
	assert_int_equal(bpf_map__value_size(s->maps.falcon_conn_counters),
			 sizeof(struct fc_xdp_conn_cnt));
	assert_int_equal(bpf_map__max_entries(s->maps.falcon_conn_counters), FC_XDP_CONNS_DEFAULT);
	assert_int_equal(bpf_map__type(s->maps.falcon_xsks), BPF_MAP_TYPE_XSKMAP);
	assert_int_equal(bpf_map__max_entries(s->maps.falcon_xsks), FC_XDP_QUEUES_MAX);
	assert_int_equal(bpf_map__max_entries(s->maps.falcon_counters), FC_XDP_CNT_MAX);
	/* what userspace writes through the mmap, XDP reads: the window base */
	conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	assert_int_equal(f->conns[SLOT].rx.data.base, DBASE);
	{
		struct fc_xdp_conn v;
		uint32_t k = SLOT;

		assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(s->maps.falcon_conns), &k, &v), 0);
		assert_int_equal(v.cid, CID);
		assert_int_equal(v.rx.req.base, RBASE);
	}
	conn_close(f, SLOT);
}

/* Make the mark time of psn's slot 2 ms old (window.h: FC_WIN_XDP_YOUNG_TS), as if the
 * engine had not taken the packet for that long. */
static void age_slot(struct fc_win *w, uint32_t psn)
{
	__u64 *slot = fc_win_slot(w, psn), s = *slot;
	uint32_t ts = (uint32_t)(s >> FC_SLOT_TS_SHIFT) & FC_SLOT_TS_MASK;

	assert_int_equal((uint32_t)(s >> 32), psn);
	ts = (ts - 2 * FC_WIN_XDP_YOUNG_TS) & FC_SLOT_TS_MASK;
	*slot = (s & ~((uint64_t)FC_SLOT_TS_MASK << FC_SLOT_TS_SHIFT)) |
		((uint64_t)ts << FC_SLOT_TS_SHIFT);
}

/* Push Data: new -> marked, redirected; again -> answered by XDP_TX with the exact BACK. */
static void test_push_new_then_dup(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	struct fc_xdp_conn_cnt cc;
	struct run r;
	struct pkt p;

	data_pkt(&p, 0, PKT_T_PUSH_DATA, CID, DBASE + 3, IV0);
	expect_redirect_marked(f, &p, 0, PKT_T_PUSH_DATA, "push new");
	/* received, not acknowledged: the ULP acknowledges a Push Data (9.2.2.4) */
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE + 3), FC_SLOT_RX);
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE + 2), 0);
	assert_int_equal(fc_win_flags(&c->rx.req, DBASE + 3), 0);
	/* a copy right behind it (a duplicating switch; the original is on its way to the
	 * engine): answered, and nothing acknowledged by it (the base has not moved) */
	expect_dup_acked(f, &p, 0, PKT_T_PUSH_DATA, &r, "push copy right behind the original");
	check_ack(&r, &p, 0, REMOTE_PORT, DBASE, RBASE, IV0, 0, "push copy right behind");
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE + 3), FC_SLOT_RX);
	/* not taken by the engine for a while (lost after XDP: AF_XDP ring full): the
	 * sender's retransmission is passed again, not answered (window.h's contract) */
	age_slot(&c->rx.data, DBASE + 3);
	expect_redirect_marked(f, &p, 0, PKT_T_PUSH_DATA, "push again, not taken for a while");
	assert_int_equal(fc_win_take(&c->rx.data, DBASE + 3, 0), 0); /* the engine takes one */
	assert_int_equal(fc_win_take(&c->rx.data, DBASE + 3, 0), 1); /* ... and only one */

	pkt_set_iv(&p, IV0 + 777777); /* the retransmission's own transmit time */
	pkt_set_ttl(&p, 61);         /* three hops */
	pkt_finish(&p);
	expect_dup_acked(f, &p, 0, PKT_T_PUSH_DATA, &r, "push dup");
	check_ack(&r, &p, 0, REMOTE_PORT, DBASE, RBASE, IV0 + 777777, 3, "push dup");
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE + 3), FC_SLOT_RX);
	assert_int_equal(c->rx.ar_pending, 0); /* answered: nothing for the daemon */

	cc = conn_counters(f, SLOT);
	assert_int_equal(cc.rx_pkts, 4);
	assert_int_equal(cc.redirected, 2);
	assert_int_equal(cc.marked, 2);
	assert_int_equal(cc.dup_acked, 2);
	assert_int_equal(cc.oow + cc.stale_ack + cc.bad_spi + cc.replay + cc.passed + cc.bad_mode, 0);
	conn_close(f, SLOT);
}

/* Pull Request goes to the request window, Pull Data to the data window, both marked
 * received only: the engine acknowledges them when it takes them (nothing is acknowledged
 * to the sender before the daemon has the packet); then their duplicates are answered. */
static void test_pull_new_and_dup(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	struct run r;
	struct pkt p;

	data_pkt(&p, 0, PKT_T_PULL_REQ, CID, RBASE, IV0);
	expect_redirect_marked(f, &p, 0, PKT_T_PULL_REQ, "pull request new");
	assert_int_equal(fc_win_flags(&c->rx.req, RBASE), FC_SLOT_RX);
	assert_int_equal(fc_win_flags(&c->rx.data, RBASE), 0);
	assert_int_equal(fc_win_take(&c->rx.req, RBASE, 1), 0);
	assert_int_equal(fc_win_flags(&c->rx.req, RBASE), FC_SLOT_RX | FC_SLOT_ACK);
	expect_dup_acked(f, &p, 0, PKT_T_PULL_REQ, &r, "pull request dup");
	check_ack(&r, &p, 0, REMOTE_PORT, DBASE, RBASE, IV0, 0, "pull request dup");

	data_pkt(&p, 0, PKT_T_PULL_DATA, CID, DBASE + 127, IV0); /* last PSN of the window */
	expect_redirect_marked(f, &p, 0, PKT_T_PULL_DATA, "pull data new");
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE + 127), FC_SLOT_RX);
	assert_int_equal(fc_win_take(&c->rx.data, DBASE + 127, 1), 0);
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE + 127), FC_SLOT_RX | FC_SLOT_ACK);
	expect_dup_acked(f, &p, 0, PKT_T_PULL_DATA, &r, "pull data dup");
	/* a 24-byte header and 16 bytes of payload: the frame grew/shrank to the ACK */
	check_ack(&r, &p, 0, REMOTE_PORT, DBASE, RBASE, IV0, 0, "pull data dup");
	conn_close(f, SLOT);
}

/* Below the base (the daemon advanced past it): old, answered with the current bases. */
static void test_old_answered(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	struct run r;
	struct pkt p;
	uint32_t i;

	for (i = 0; i < 10; i++) {
		data_pkt(&p, 0, PKT_T_PULL_DATA, CID, DBASE + i, IV0 + i);
		expect_redirect_marked(f, &p, 0, PKT_T_PULL_DATA, "pull data new");
	}
	/* not acknowledged before the engine has them: the base cannot move yet */
	assert_int_equal(fc_win_advance(&c->rx.data), 0);
	/* the engine takes them (acknowledged on receipt) and moves the base */
	for (i = 0; i < 10; i++)
		assert_int_equal(fc_win_take(&c->rx.data, DBASE + i, 1), 0);
	assert_int_equal(fc_win_advance(&c->rx.data), 10);
	assert_int_equal(c->rx.data.base, DBASE + 10);

	data_pkt(&p, 0, PKT_T_PULL_DATA, CID, DBASE + 4, IV0 + 4);
	expect_dup_acked(f, &p, 0, PKT_T_PULL_DATA, &r, "pull data old");
	check_ack(&r, &p, 0, REMOTE_PORT, DBASE + 10, RBASE, IV0 + 4, 0, "pull data old");
	/* far below (serially) too */
	data_pkt(&p, 0, PKT_T_PUSH_DATA, CID, DBASE - 0x40000000u, IV0);
	expect_dup_acked(f, &p, 0, PKT_T_PUSH_DATA, &r, "push far below");
	check_ack(&r, &p, 0, REMOTE_PORT, DBASE + 10, RBASE, IV0, 0, "push far below");
	/* and the next new one is still new */
	data_pkt(&p, 0, PKT_T_PUSH_DATA, CID, DBASE + 10, IV0);
	expect_redirect_marked(f, &p, 0, PKT_T_PUSH_DATA, "push at the new base");
	assert_int_equal(conn_counters(f, SLOT).dup_acked, 2);
	conn_close(f, SLOT);
}

/* At or beyond base + W: dropped, OWN set for the window, an ACK asked of the daemon. */
static void test_out_of_window(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	struct run r;
	struct pkt p;
	const uint32_t inc_d[] = { C_DATA(0, PKT_T_PUSH_DATA), FC_XDP_CNT_REJECT,
				   FC_XDP_CNT_REJECT_OOW };
	const uint32_t inc_r[] = { C_DATA(0, PKT_T_PULL_REQ), FC_XDP_CNT_REJECT,
				   FC_XDP_CNT_REJECT_OOW };

	data_pkt(&p, 0, PKT_T_PUSH_DATA, CID, DBASE + FC_DATA_WIN, IV0);
	run_pkt(f, &p, XDP_DROP, inc_d, N_OF(inc_d), &r, "push oow");
	assert_int_equal(c->rx.data.own, 1);
	assert_int_equal(c->rx.req.own, 0);
	assert_int_equal(c->rx.ar_pending, 1);
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE + FC_DATA_WIN), 0);

	c->rx.ar_pending = 0;
	data_pkt(&p, 0, PKT_T_PULL_REQ, CID, RBASE + FC_REQ_WIN, IV0);
	run_pkt(f, &p, XDP_DROP, inc_r, N_OF(inc_r), &r, "pull request oow");
	assert_int_equal(c->rx.req.own, 1);
	assert_int_equal(c->rx.ar_pending, 1);
	/* the daemon takes OWN into its EACK; one below the edge is in the window */
	assert_int_equal(fc_win_own_take(&c->rx.req), 1);
	assert_int_equal(c->rx.req.own, 0);
	data_pkt(&p, 0, PKT_T_PULL_REQ, CID, RBASE + FC_REQ_WIN - 1, IV0);
	expect_redirect_marked(f, &p, 0, PKT_T_PULL_REQ, "pull request at the edge");
	assert_int_equal(conn_counters(f, SLOT).oow, 2);
	conn_close(f, SLOT);
}

/* 9.2.3: an ACK/NACK whose base is below our transmit base is dropped; others steered. */
static void test_stale_ack(void **state)
{
	static const uint8_t types[] = { PKT_T_BACK, PKT_T_EACK, PKT_T_NACK };
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	struct fc_xdp_conn_cnt cc;
	char what[64];
	struct pkt p;
	size_t i;

	c->rx.tx_bpsn[0] = 100; /* request */
	c->rx.tx_bpsn[1] = 200; /* data */
	for (i = 0; i < N_OF(types); i++) {
		uint32_t tc = FC_XDP_CNT_PKT_TYPE_0 + types[i];

		snprintf(what, sizeof(what), "type %u rrbpsn 99", types[i]);
		ack_pkt(&p, types[i], CID, 99, 200);
		expect_reject(f, &p, 0, tc, FC_XDP_CNT_REJECT_STALE_ACK, what);
		snprintf(what, sizeof(what), "type %u rdbpsn 199", types[i]);
		ack_pkt(&p, types[i], CID, 100, 199);
		expect_reject(f, &p, 0, tc, FC_XDP_CNT_REJECT_STALE_ACK, what);
		snprintf(what, sizeof(what), "type %u at the bases", types[i]);
		ack_pkt(&p, types[i], CID, 100, 200);
		expect_steered(f, &p, 0, tc, what);
		snprintf(what, sizeof(what), "type %u above the bases", types[i]);
		ack_pkt(&p, types[i], CID, 164, 328);
		expect_steered(f, &p, 0, tc, what);
	}
	/* serial arithmetic across the 2^32 wrap */
	c->rx.tx_bpsn[0] = 0xFFFFFFF0u;
	c->rx.tx_bpsn[1] = 0xFFFFFFF0u;
	ack_pkt(&p, PKT_T_BACK, CID, 5, 0xFFFFFFF0u);
	expect_steered(f, &p, 0, FC_XDP_CNT_PKT_TYPE_0 + 9, "BACK across the wrap");
	ack_pkt(&p, PKT_T_BACK, CID, 0xFFFFFFF0u, 0xFFFFFFEFu);
	expect_reject(f, &p, 0, FC_XDP_CNT_PKT_TYPE_0 + 9, FC_XDP_CNT_REJECT_STALE_ACK,
		      "BACK data base one below, near the wrap");
	/* the windows saw none of it */
	assert_int_equal(c->rx.ar_pending, 0);
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE), 0);
	cc = conn_counters(f, SLOT);
	assert_int_equal(cc.stale_ack, 7);
	assert_int_equal(cc.redirected, 7);
	assert_int_equal(cc.marked, 0);
	assert_int_equal(cc.rx_pkts, 14);
	conn_close(f, SLOT);
}

/* Resync and connections without the window flag: steered unmarked, windows untouched. */
static void test_steer_unmarked(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	struct pkt p;

	data_pkt(&p, 0, PKT_T_RESYNC, CID, DBASE, IV0);
	expect_steered(f, &p, 0, FC_XDP_CNT_PKT_TYPE_0 + PKT_T_RESYNC, "resync");
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE), 0);

	c = conn_open(f, SLOT, CID, 0); /* neither flag: steering only */
	data_pkt(&p, 1, PKT_T_PUSH_DATA, CID, DBASE, IV0);
	expect_steered(f, &p, 1, FC_XDP_CNT_PKT_TYPE_0 + PKT_T_PUSH_DATA, "push, flags 0");
	expect_steered(f, &p, 1, FC_XDP_CNT_PKT_TYPE_0 + PKT_T_PUSH_DATA, "push again, flags 0");
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE), 0);
	conn_close(f, SLOT);
}

/* No connection for the CID: free slot, another generation, a slot past the map, CID 0. */
static void test_unknown_cid(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c;
	struct pkt p;

	data_pkt(&p, 0, PKT_T_PUSH_DATA, CID, DBASE, IV0);
	conn_close(f, SLOT);
	expect_reject(f, &p, 0, FC_XDP_CNT_PKT_TYPE_0 + PKT_T_PUSH_DATA,
		      FC_XDP_CNT_REJECT_UNKNOWN_CID, "free slot");
	c = conn_open(f, SLOT, 4u << 16 | SLOT, FC_XDP_CONN_WINDOW);
	expect_reject(f, &p, 0, FC_XDP_CNT_PKT_TYPE_0 + PKT_T_PUSH_DATA,
		      FC_XDP_CNT_REJECT_UNKNOWN_CID, "same slot, next generation");
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE), 0);
	assert_int_equal(conn_counters(f, SLOT).rx_pkts, 0);

	data_pkt(&p, 0, PKT_T_PUSH_DATA, 0xABCDEFu, DBASE, IV0); /* slot 0xCDEF > 1024 */
	expect_reject(f, &p, 0, FC_XDP_CNT_PKT_TYPE_0 + PKT_T_PUSH_DATA,
		      FC_XDP_CNT_REJECT_UNKNOWN_CID, "slot beyond the map");
	data_pkt(&p, 0, PKT_T_PUSH_DATA, 0, DBASE, IV0); /* slot 0, never published */
	expect_reject(f, &p, 0, FC_XDP_CNT_PKT_TYPE_0 + PKT_T_PUSH_DATA,
		      FC_XDP_CNT_REJECT_UNKNOWN_CID, "CID 0");
	conn_close(f, SLOT);
}

/* PSP connections: SPI of the peer's tunnel (9.2.2.3), replay window (9.2.2.2), both
 * read-only; then steered unmarked. A cleartext packet there, a ciphertext one on a
 * security-none connection: wrong mode. */
static void test_psp(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_PSP);
	const uint64_t margin = 1000000, rt = IV0;
	struct pkt_spec s = pkt_spec_default(PKT_T_PUSH_DATA);
	struct fc_xdp_conn_cnt cc;
	struct pkt p;

	c->spi_sess = 0x0011;
	c->replay_margin_ns = margin;
	c->rx.remote_time = rt;
	s.psp_ver = 1; /* AES-GCM-256: the header is ciphertext */
	s.payload_len = 32;
	pkt_build(&p, &s);
	pkt_set_cid(&p, CID);
	pkt_set_spi(&p, 0x80020011u); /* phase 1, generation 2, tunnel 0x11 */
	pkt_set_iv(&p, rt);
	pkt_finish(&p);
	expect_steered(f, &p, 0, FC_XDP_CNT_ENCRYPTED, "psp current");
	pkt_set_spi(&p, 0x00010011u); /* the other phase, as during a rotation */
	pkt_finish(&p);
	expect_steered(f, &p, 0, FC_XDP_CNT_ENCRYPTED, "psp old phase");

	pkt_set_spi(&p, 0x80020012u);
	pkt_finish(&p);
	expect_reject(f, &p, 0, FC_XDP_CNT_ENCRYPTED, FC_XDP_CNT_REJECT_BAD_SPI, "psp other tunnel");
	pkt_set_spi(&p, 0);
	pkt_finish(&p);
	expect_reject(f, &p, 0, FC_XDP_CNT_ENCRYPTED, FC_XDP_CNT_REJECT_BAD_SPI, "psp spi 0");

	pkt_set_spi(&p, 0x80020011u);
	pkt_set_iv(&p, rt - margin); /* at the floor: refused */
	pkt_finish(&p);
	expect_reject(f, &p, 0, FC_XDP_CNT_ENCRYPTED, FC_XDP_CNT_REJECT_REPLAY, "iv at the floor");
	pkt_set_iv(&p, 12345);
	pkt_finish(&p);
	expect_reject(f, &p, 0, FC_XDP_CNT_ENCRYPTED, FC_XDP_CNT_REJECT_REPLAY, "iv far behind");
	pkt_set_iv(&p, rt - margin + 1); /* just above the floor: reordering allowed */
	pkt_finish(&p);
	expect_steered(f, &p, 0, FC_XDP_CNT_ENCRYPTED, "iv within the margin");
	assert_int_equal(c->rx.remote_time, rt); /* read-only: the daemon advances it */
	c->rx.remote_time = 0; /* no baseline yet: everything passes */
	pkt_set_iv(&p, 1);
	pkt_finish(&p);
	expect_steered(f, &p, 0, FC_XDP_CNT_ENCRYPTED, "no replay baseline");

	/* cleartext on a PSP connection */
	data_pkt(&p, 0, PKT_T_PUSH_DATA, CID, DBASE, IV0);
	expect_reject(f, &p, 0, FC_XDP_CNT_PKT_TYPE_0 + PKT_T_PUSH_DATA, FC_XDP_CNT_REJECT_MODE,
		      "cleartext on psp");
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE), 0);
	cc = conn_counters(f, SLOT);
	assert_int_equal(cc.rx_pkts, 9);
	assert_int_equal(cc.redirected, 4);
	assert_int_equal(cc.bad_spi, 2);
	assert_int_equal(cc.replay, 2);
	assert_int_equal(cc.bad_mode, 1);

	/* ciphertext on a security-none connection */
	conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	pkt_build(&p, &s);
	pkt_set_cid(&p, CID);
	pkt_finish(&p);
	expect_reject(f, &p, 0, FC_XDP_CNT_ENCRYPTED, FC_XDP_CNT_REJECT_MODE, "ciphertext on none");
	conn_close(f, SLOT);
}

/* IPv6: the duplicate's ACK with the mandatory UDP checksum, to our own Falcon port when
 * the slot names none (not to the duplicate's source port: flow entropy); hop limit 60 =
 * 4 hops. */
static void test_ipv6_dup(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	struct run r;
	struct pkt p, e;
	uint16_t sum;

	c->remote_port = 0;
	data_pkt(&p, 1, PKT_T_PUSH_DATA, CID, DBASE + 9, IV0);
	expect_redirect_marked(f, &p, 1, PKT_T_PUSH_DATA, "ipv6 push new");
	assert_int_equal(fc_win_take(&c->rx.data, DBASE + 9, 0), 0);
	pkt_set_ttl(&p, 60);
	pkt_set_iv(&p, IV0 + 1);
	pkt_finish(&p);
	expect_dup_acked(f, &p, 1, PKT_T_PUSH_DATA, &r, "ipv6 push dup");
	check_ack(&r, &p, 0, PKT_PORT_FALCON, DBASE, RBASE, IV0 + 1, 4, "ipv6 push dup");
	/* the checksum once more, recomputed here over the produced frame */
	memcpy(e.b, r.frame, r.len);
	e.len = r.len;
	e.l3 = 6;
	e.l3_off = 14;
	e.l4_off = 54;
	sum = (uint16_t)pkt_rd16(e.b + 54 + 6);
	assert_int_not_equal(sum, 0);
	pkt_wr16(e.b + 54 + 6, 0);
	assert_int_equal(pkt_udp_csum(&e, r.len - 54), sum);
	conn_close(f, SLOT);
}

/* VLAN tags are kept, IPv4 options dropped, a longer frame cut to the ACK. */
static void test_vlan_options_dup(void **state)
{
	struct fx *f = fx_of(state);
	struct pkt_spec s = pkt_spec_default(PKT_T_PUSH_DATA);
	struct fc_xdp_conn *c;
	struct run r;
	struct pkt p;

	c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	s.nvlan = 2;
	s.ip4_opt_len = 12;
	s.payload_len = 200;
	pkt_build(&p, &s);
	pkt_set_cid(&p, CID);
	pkt_set_word(&p, 4, DBASE + 1);
	pkt_set_iv(&p, IV0);
	pkt_finish(&p);
	expect_redirect_marked(f, &p, 0, PKT_T_PUSH_DATA, "vlan+options push new");
	assert_int_equal(fc_win_take(&c->rx.data, DBASE + 1, 0), 0);
	expect_dup_acked(f, &p, 0, PKT_T_PUSH_DATA, &r, "vlan+options push dup");
	check_ack(&r, &p, 2, REMOTE_PORT, DBASE, RBASE, IV0, 0, "vlan+options push dup");
	assert_int_equal(r.len, 14 + 8 + 20 + 8 + 16 + 32);

	/* IPv6 behind one tag, the duplicate an old Pull Request */
	s = pkt_spec_default(PKT_T_PULL_REQ);
	s.ipv6 = 1;
	s.nvlan = 1;
	pkt_build(&p, &s);
	pkt_set_cid(&p, CID);
	pkt_set_word(&p, 4, RBASE - 1);
	pkt_set_iv(&p, IV0 + 5);
	pkt_finish(&p);
	expect_dup_acked(f, &p, 1, PKT_T_PULL_REQ, &r, "vlan ipv6 pull request old");
	check_ack(&r, &p, 1, REMOTE_PORT, DBASE, RBASE, IV0 + 5, 0, "vlan ipv6 pull request old");
	assert_int_equal(r.len, 14 + 4 + 40 + 8 + 16 + 32);
	conn_close(f, SLOT);
}

/* No AF_XDP socket on the queue: nothing marked or answered, XDP_PASS untouched. */
static void test_no_socket(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	const uint32_t inc[] = { C_DATA(0, PKT_T_PUSH_DATA), FC_XDP_CNT_NO_XSK };
	const uint32_t inc_ack[] = { FC_XDP_CNT_RX, FC_XDP_CNT_FALCON_IPV4, FC_XDP_CNT_FALCON_OK,
				     FC_XDP_CNT_PKT_TYPE_0 + PKT_T_BACK, FC_XDP_CNT_NO_XSK };
	struct run r;
	struct pkt p;
	int ok;

	data_pkt(&p, 0, PKT_T_PUSH_DATA, CID, DBASE, IV0);
	assert_int_equal(xsk_del(f), 0);
	run_pkt(f, &p, XDP_PASS, inc, N_OF(inc), &r, "push, no socket");
	expect_unchanged(&r, &p, "push, no socket");
	ok = fc_win_flags(&c->rx.data, DBASE) == 0;
	run_pkt(f, &p, XDP_PASS, inc, N_OF(inc), &r, "push again, no socket");
	expect_unchanged(&r, &p, "push again, no socket");
	ack_pkt(&p, PKT_T_BACK, CID, RBASE, DBASE);
	run_pkt(f, &p, XDP_PASS, inc_ack, N_OF(inc_ack), &r, "BACK, no socket");
	expect_unchanged(&r, &p, "BACK, no socket");
	assert_int_equal(xsk_put(f), 0);
	assert_true(ok);
	assert_int_equal(conn_counters(f, SLOT).passed, 3);
	/* nothing was marked: with the socket back the packet is new */
	data_pkt(&p, 0, PKT_T_PUSH_DATA, CID, DBASE, IV0);
	expect_redirect_marked(f, &p, 0, PKT_T_PUSH_DATA, "push, socket back");
	conn_close(f, SLOT);
}

/* The most metadata a test run's frame may arrive with: the headroom less the kernel's
 * frame descriptor, found by trying (an ARP frame: the program passes it untouched). */
static uint32_t meta_room(struct fx *f)
{
	uint8_t in[META_MAX + 64] = { 0 }, out[META_MAX + 128];
	uint32_t m;

	for (m = META_MAX; m >= 4; m -= 4) {
		struct xdp_md ctx_in = { .data = m, .data_end = m + 60 };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = m + 60,
			    .data_out = out, .data_size_out = sizeof(out), .ctx_in = &ctx_in,
			    .ctx_size_in = sizeof(ctx_in), .repeat = 1);

		in[m + 12] = 0x08; /* ethertype ARP */
		in[m + 13] = 0x06;
		if (!bpf_prog_test_run_opts(bpf_program__fd(f->skel->progs.falcon_xdp_rx), &opts))
			return m;
	}
	return 0;
}

/* No room for the metadata (the frame arrives with all the metadata the headroom takes
 * already in front): nothing marked, XDP_PASS with the frame and its metadata as they
 * were, counted NO_META. */
static void test_no_meta_room(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	const uint32_t want[] = { C_DATA(0, PKT_T_PUSH_DATA), FC_XDP_CNT_NO_META };
	uint64_t before[FC_XDP_CNT_MAX], after[FC_XDP_CNT_MAX], moved[FC_XDP_CNT_MAX];
	uint8_t in[META_MAX + PKT_MAX], out[META_MAX + PKT_MAX + 64];
	struct xdp_md ctx_in = { 0 }, ctx_out = { 0 };
	uint32_t full = meta_room(f);
	struct pkt p;
	size_t j;
	int err;

	printf("a test run's frame takes %u bytes of metadata at most\n", full);
	assert_true(full >= 32); /* XDP's own minimum for metadata room */
	data_pkt(&p, 0, PKT_T_PUSH_DATA, CID, DBASE, IV0);
	memset(in, 0xEE, full);
	memcpy(in + full, p.b, p.len);
	ctx_in.data = full;
	ctx_in.data_end = (uint32_t)(full + p.len);
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = ctx_in.data_end,
		    .data_out = out, .data_size_out = sizeof(out), .ctx_in = &ctx_in,
		    .ctx_size_in = sizeof(ctx_in), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);
	read_counters(f, before);
	err = bpf_prog_test_run_opts(bpf_program__fd(f->skel->progs.falcon_xdp_rx), &opts);
	assert_int_equal(err, 0);
	read_counters(f, after);
	assert_int_equal(opts.retval, XDP_PASS);
	assert_int_equal(ctx_out.data, full);
	assert_int_equal(opts.data_size_out, full + p.len);
	assert_memory_equal(out, in, full + p.len);
	memset(moved, 0, sizeof(moved));
	for (j = 0; j < N_OF(want); j++)
		moved[want[j]]++;
	xdp_counters_check(before, after, moved, "no metadata room");
	assert_int_equal(fc_win_flags(&c->rx.data, DBASE), 0);
	assert_int_equal(conn_counters(f, SLOT).passed, 1);
	conn_close(f, SLOT);
}

/* Traffic that is not Falcon passes untouched, even with connections open. */
static void test_not_falcon(void **state)
{
	struct fx *f = fx_of(state);
	const uint32_t inc[] = { FC_XDP_CNT_RX, FC_XDP_CNT_NOT_FALCON };
	struct pkt_spec s = pkt_spec_default(PKT_T_PUSH_DATA);
	struct run r;
	struct pkt p;
	int ipv6;

	conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	pkt_init(&p);
	pkt_eth(&p, 0x0806); /* ARP */
	pkt_fill(&p, 28, 0x01);
	run_pkt(f, &p, XDP_PASS, inc, N_OF(inc), &r, "ARP");
	expect_unchanged(&r, &p, "ARP");
	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		s.ipv6 = ipv6;
		s.dport = 4791; /* RoCEv2's port, say */
		pkt_build(&p, &s);
		pkt_set_cid(&p, CID);
		pkt_set_word(&p, 4, DBASE);
		pkt_finish(&p);
		run_pkt(f, &p, XDP_PASS, inc, N_OF(inc), &r, "UDP to another port");
		expect_unchanged(&r, &p, "UDP to another port");
	}
	assert_int_equal(fc_win_flags(&f->conns[SLOT].rx.data, DBASE), 0);
	assert_int_equal(conn_counters(f, SLOT).rx_pkts, 0);
	conn_close(f, SLOT);
}

/* The load-time knobs: another port and another ACK TTL. */
static void test_knobs(void **state)
{
	struct fx *f = fx_of(state);
	struct falcon_xdp *s = falcon_xdp__open(), *keep = f->skel;
	struct fc_xdp_conn *c;
	struct run r;
	struct pkt p;
	int err;

	assert_non_null(s);
	s->rodata->falcon_port = 1000;
	s->rodata->falcon_ack_ttl = 128;
	/* share the fixture's maps: the connection and the socket */
	assert_int_equal(bpf_map__reuse_fd(s->maps.falcon_conns,
					   bpf_map__fd(keep->maps.falcon_conns)), 0);
	assert_int_equal(bpf_map__reuse_fd(s->maps.falcon_xsks,
					   bpf_map__fd(keep->maps.falcon_xsks)), 0);
	err = falcon_xdp__load(s);
	assert_int_equal(err, 0);
	c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	f->skel = s; /* counters: the new instance's own */
	data_pkt(&p, 0, PKT_T_PULL_DATA, CID, DBASE, IV0);
	pkt_set_ttl(&p, 120); /* 128 - 120 = 8 hops */
	pkt_finish(&p);
	expect_redirect_marked(f, &p, 0, PKT_T_PULL_DATA, "knobs: new");
	assert_int_equal(fc_win_take(&c->rx.data, DBASE, 1), 0);
	expect_dup_acked(f, &p, 0, PKT_T_PULL_DATA, &r, "knobs: dup");
	f->skel = keep;
	falcon_xdp__destroy(s);
	/* TTL 128 in the ACK (check_ack wants 64): check the fields that differ by hand */
	assert_int_equal(r.frame[14 + 8], 128);
	assert_int_equal(r.frame[14 + 20 + 8 + 16 + 24] >> 4, 8);
	assert_true(fc_win_flags(&c->rx.data, DBASE) & FC_SLOT_RX);
	conn_close(f, SLOT);
}

/* Several CPUs at once, beside the daemon's engine taking what XDP marked and advancing
 * the base: whatever the interleaving, the engine takes every PSN exactly once (DESIGN.md:
 * no accepted packet lost or accepted twice), every run is either passed MARKED (new, or
 * received but not yet taken) or answered as a duplicate, and only after the engine took
 * a PSN is it answered. Each sender thread runs on its own CPU and sends every PSN of a
 * round in its own order. */
#define RACE_THREADS 2
#define RACE_ROUNDS 24
#define RACE_PSNS FC_DATA_WIN

struct race {
	struct fx *f;
	uint32_t start;                /* this round's first PSN */
	int id;
	int cpu;
	uint32_t marked[RACE_PSNS];    /* this thread's REDIRECT+MARKED runs, per PSN */
	uint32_t answered, other;      /* XDP_TX runs; anything else */
	int err;
};

static void *race_sender(void *arg)
{
	struct race *x = arg;
	struct pkt p;
	uint32_t i;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(x->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* best effort */
	for (i = 0; i < RACE_PSNS; i++) {
		/* thread 0 ascending, thread 1 descending, further ones strided */
		uint32_t k = x->id == 0 ? i : x->id == 1 ? RACE_PSNS - 1 - i
						     : (i * 37u + (uint32_t)x->id) % RACE_PSNS;
		uint8_t out[PKT_MAX + 64];
		struct xdp_md ctx_in, ctx_out;
		LIBBPF_OPTS(bpf_test_run_opts, opts);

		data_pkt(&p, 0, PKT_T_PULL_DATA, CID, x->start + k, IV0);
		memset(&ctx_in, 0, sizeof(ctx_in));
		memset(&ctx_out, 0, sizeof(ctx_out));
		ctx_in.data_end = (uint32_t)p.len;
		opts.data_in = p.b;
		opts.data_size_in = (uint32_t)p.len;
		opts.data_out = out;
		opts.data_size_out = sizeof(out);
		opts.ctx_in = &ctx_in;
		opts.ctx_size_in = sizeof(ctx_in);
		opts.ctx_out = &ctx_out;
		opts.ctx_size_out = sizeof(ctx_out);
		opts.repeat = 1;
		if (bpf_prog_test_run_opts(bpf_program__fd(x->f->skel->progs.falcon_xdp_rx), &opts)) {
			x->err = errno ? errno : EIO;
			return NULL;
		}
		if (opts.retval == XDP_REDIRECT && ctx_out.data == 8 &&
		    ((uint32_t *)out)[1] == FC_XDP_META_MARKED)
			x->marked[k]++;
		else if (opts.retval == XDP_TX)
			x->answered++;
		else
			x->other++;
	}
	return NULL;
}

struct advancer {
	struct fc_win *w;
	volatile int stop;
	uint64_t moved;
	uint32_t taken[RACE_ROUNDS * RACE_PSNS]; /* fc_win_take successes per PSN */
	uint32_t taken_other;                     /* ... of PSNs outside the test's range */
};

/* The daemon's part, concurrently: take (SEEN + ACK) what XDP marked, as the engine does
 * for a Pull Data, and advance the data window over what it acknowledged. */
static void *race_advancer(void *arg)
{
	struct advancer *a = arg;
	uint32_t spins, i;

	for (spins = 0; !a->stop && spins < 50000000u; spins++) {
		uint32_t base = a->w->base;

		for (i = 0; i < FC_DATA_WIN; i++)
			if (fc_win_take(a->w, base + i, 1) == 0) {
				uint32_t k = base + i - DBASE;

				if (k < RACE_ROUNDS * RACE_PSNS)
					a->taken[k]++;
				else
					a->taken_other++;
			}
		a->moved += fc_win_advance(a->w);
		sched_yield();
	}
	return NULL;
}

static void test_race(void **state)
{
	struct fx *f = fx_of(state);
	struct fc_xdp_conn *c = conn_open(f, SLOT, CID, FC_XDP_CONN_WINDOW);
	struct race *x = calloc(RACE_THREADS, sizeof(*x));
	struct advancer *a = calloc(1, sizeof(*a));
	pthread_t th[RACE_THREADS], adv;
	uint32_t round, i, k, answered = 0, marked = 0;
	int t;

	assert_non_null(x);
	assert_non_null(a);
	a->w = &c->rx.data;
	assert_int_equal(pthread_create(&adv, NULL, race_advancer, a), 0);
	for (round = 0; round < RACE_ROUNDS; round++) {
		for (t = 0; t < RACE_THREADS; t++) {
			memset(&x[t], 0, sizeof(x[t]));
			x[t].f = f;
			x[t].id = t;
			x[t].cpu = t % (f->ncpu > 0 ? f->ncpu : 1);
			x[t].start = DBASE + round * RACE_PSNS;
			assert_int_equal(pthread_create(&th[t], NULL, race_sender, &x[t]), 0);
		}
		for (t = 0; t < RACE_THREADS; t++)
			assert_int_equal(pthread_join(th[t], NULL), 0);
		for (k = 0; k < RACE_PSNS; k++) {
			uint32_t n = 0;

			for (t = 0; t < RACE_THREADS; t++)
				n += x[t].marked[k];
			if (n < 1 || n > RACE_THREADS)
				fail_msg("round %u: PSN %u passed as new %u times", round,
					 DBASE + round * RACE_PSNS + k, n);
			marked += n;
		}
		for (t = 0; t < RACE_THREADS; t++) {
			if (x[t].err)
				fail_msg("BPF_PROG_TEST_RUN: %s", strerror(x[t].err));
			if (x[t].other)
				fail_msg("round %u: %u runs neither marked nor answered", round,
					 x[t].other);
			answered += x[t].answered;
		}
		/* every PSN of the round is acknowledged: the base reaches its end */
		for (i = 0; i < 1000000u && fc_load_acq32(&c->rx.data.base) !=
						     DBASE + (round + 1) * RACE_PSNS; i++)
			sched_yield();
		assert_int_equal(c->rx.data.base, DBASE + (round + 1) * RACE_PSNS);
	}
	a->stop = 1;
	assert_int_equal(pthread_join(adv, NULL), 0);
	assert_int_equal(a->moved, RACE_ROUNDS * RACE_PSNS);
	for (k = 0; k < RACE_ROUNDS * RACE_PSNS; k++)
		if (a->taken[k] != 1)
			fail_msg("PSN %u taken by the engine %u times", DBASE + k, a->taken[k]);
	assert_int_equal(a->taken_other, 0);
	assert_int_equal(answered + marked, RACE_ROUNDS * RACE_PSNS * RACE_THREADS);
	assert_int_equal(conn_counters(f, SLOT).marked, marked);
	assert_int_equal(conn_counters(f, SLOT).dup_acked, answered);
	printf("race: %u runs passed marked, %u answered by XDP_TX\n", marked, answered);
	free(a);
	free(x);
	conn_close(f, SLOT);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_verifier),
		T(test_maps),
		T(test_push_new_then_dup),
		T(test_pull_new_and_dup),
		T(test_old_answered),
		T(test_out_of_window),
		T(test_stale_ack),
		T(test_steer_unmarked),
		T(test_unknown_cid),
		T(test_psp),
		T(test_ipv6_dup),
		T(test_vlan_options_dup),
		T(test_no_socket),
		T(test_no_meta_room),
		T(test_not_falcon),
		T(test_knobs),
		T(test_race),
	};

	libbpf_set_print(print_libbpf);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
