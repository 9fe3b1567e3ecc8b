/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test router's chaos program (tests/bpf/falcon_router.bpf.c) under BPF_PROG_TEST_RUN:
 * which packets it leaves alone, exact-N drop budgets, seeded drop rates that replay for
 * the same seed and not for another, and duplicates it must refuse (TTL, size) without
 * spending the budget. The duplicates it sends (broadcast redirect through a devmap) need
 * real interfaces: tests/e2e/test_router.sh counts them on the wire.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "falcon_router.skel.h"
#include "bpf/falcon_router.h"
#include "bpf/pktbuild.h"

#define PORT 4791u
#define XDP_DROP_RC 1
#define XDP_PASS_RC 2
#define RATE_PKTS 20000u
#define BIG_FRAME 4000u

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static struct falcon_router *load(uint64_t seed)
{
	struct falcon_router *skel;

	libbpf_set_print(print_libbpf);
	skel = falcon_router__open();
	if (!skel)
		fail_msg("open falcon_router: %s", strerror(errno));
	skel->rodata->router_seed = seed;
	if (falcon_router__load(skel))
		fail_msg("load falcon_router: %s", strerror(errno));
	return skel;
}

static void set_cfg(struct falcon_router *skel, const struct fc_router_cfg *c)
{
	uint32_t k = 0;

	assert_int_equal(bpf_map__update_elem(skel->maps.falcon_router_cfg, &k, sizeof(k), c,
					      sizeof(*c), BPF_ANY), 0);
}

static struct fc_router_cfg get_cfg(struct falcon_router *skel)
{
	struct fc_router_cfg c;
	uint32_t k = 0;

	assert_int_equal(bpf_map__lookup_elem(skel->maps.falcon_router_cfg, &k, sizeof(k), &c,
					      sizeof(c), 0), 0);
	return c;
}

static uint64_t counter(struct falcon_router *skel, uint32_t idx)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v = calloc((size_t)ncpu, sizeof(*v)), sum = 0;

	assert_non_null(v);
	assert_int_equal(bpf_map__lookup_elem(skel->maps.falcon_router_counters, &idx,
					      sizeof(idx), v, sizeof(*v) * (size_t)ncpu, 0), 0);
	for (int i = 0; i < ncpu; i++)
		sum += v[i];
	free(v);
	return sum;
}

/* Run the program once on buf; returns its verdict, the frame it left in out (if any). */
static int run(struct falcon_router *skel, const void *buf, size_t len, void *out,
	       size_t out_len)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf, .data_size_in = (uint32_t)len,
		    .data_out = out, .data_size_out = (uint32_t)out_len, .repeat = 1);

	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.falcon_router), &o),
			 0);
	return (int)o.retval;
}

/* IPv4 UDP 10.0.0.1 -> 10.0.0.2 to dport with 64 bytes of payload. */
static void udp_pkt(struct pkt *p, uint16_t dport)
{
	pkt_init(p);
	pkt_eth(p, 0x0800);
	pkt_ipv4(p, 0, FC_IPPROTO_UDP);
	pkt_udp(p, PKT_SPORT, dport);
	pkt_fill(p, 64, 0xA5);
	pkt_finish(p);
	assert_false(p->overflow);
}

/* The test's packets run on one CPU, so the per-CPU random stream is one sequence. */
static int pin_cpu(void **state)
{
	cpu_set_t set;

	(void)state;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -1 : 0;
}

static void test_leaves_others_alone(void **state)
{
	struct falcon_router *skel = load(1);
	struct fc_router_cfg c = { .drop_ppm = FC_RTR_PPM, .port = PORT };
	struct pkt p;
	uint8_t out[PKT_MAX];

	(void)state;
	set_cfg(skel, &c); /* drops every target packet: none of these is one */
	udp_pkt(&p, PORT + 1);
	assert_int_equal(run(skel, p.b, p.len, NULL, 0), XDP_PASS_RC);
	pkt_init(&p); /* TCP to the port */
	pkt_eth(&p, 0x0800);
	pkt_ipv4(&p, 0, 6);
	pkt_udp(&p, PKT_SPORT, PORT); /* the port where TCP's sits */
	pkt_finish(&p);
	assert_int_equal(run(skel, p.b, p.len, NULL, 0), XDP_PASS_RC);
	udp_pkt(&p, PORT); /* a later fragment: no UDP header to read */
	pkt_ipv4_set_frag(&p, 0x2000 | 10);
	assert_int_equal(run(skel, p.b, p.len, NULL, 0), XDP_PASS_RC);
	pkt_init(&p); /* ARP */
	pkt_eth(&p, 0x0806);
	pkt_fill(&p, 28, 0);
	assert_int_equal(run(skel, p.b, p.len, NULL, 0), XDP_PASS_RC);
	/* IPv6 UDP to the port: the router handles IPv4 only */
	pkt_init(&p);
	pkt_eth(&p, 0x86DD);
	pkt_ipv6(&p, FC_IPPROTO_UDP);
	pkt_udp(&p, PKT_SPORT, PORT);
	pkt_finish(&p);
	assert_int_equal(run(skel, p.b, p.len, out, sizeof(out)), XDP_PASS_RC);
	assert_memory_equal(out, p.b, p.len); /* untouched */
	assert_int_equal(counter(skel, FC_RTR_CNT_RX), 5);
	assert_int_equal(counter(skel, FC_RTR_CNT_PASS_OTHER), 5);
	assert_int_equal(counter(skel, FC_RTR_CNT_TARGET), 0);
	/* port 0 in the configuration matches nothing, not UDP port 0 */
	c.port = 0;
	set_cfg(skel, &c);
	udp_pkt(&p, 0);
	assert_int_equal(run(skel, p.b, p.len, NULL, 0), XDP_PASS_RC);
	assert_int_equal(counter(skel, FC_RTR_CNT_TARGET), 0);
	falcon_router__destroy(skel);
}

static void test_target_passes_when_quiet(void **state)
{
	struct falcon_router *skel = load(1);
	struct fc_router_cfg c = { .port = 9, .port2 = PORT };
	struct pkt p;
	uint8_t out[PKT_MAX];

	(void)state;
	set_cfg(skel, &c);
	udp_pkt(&p, PORT); /* matches port2 */
	for (int i = 0; i < 10; i++) {
		memset(out, 0, sizeof(out));
		assert_int_equal(run(skel, p.b, p.len, out, sizeof(out)), XDP_PASS_RC);
		assert_memory_equal(out, p.b, p.len);
	}
	assert_int_equal(counter(skel, FC_RTR_CNT_TARGET), 10);
	assert_int_equal(counter(skel, FC_RTR_CNT_FWD_PASS), 10);
	assert_int_equal(counter(skel, FC_RTR_CNT_DROP_RATE) + counter(skel, FC_RTR_CNT_DUP), 0);
	falcon_router__destroy(skel);
}

static void test_drop_budget_is_exact(void **state)
{
	struct falcon_router *skel = load(1);
	struct fc_router_cfg c = { .port = PORT, .drop_budget = 5 };
	struct pkt p;
	int verdicts[8];

	(void)state;
	set_cfg(skel, &c);
	udp_pkt(&p, PORT);
	for (int i = 0; i < 8; i++)
		verdicts[i] = run(skel, p.b, p.len, NULL, 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(verdicts[i], i < 5 ? XDP_DROP_RC : XDP_PASS_RC);
	assert_int_equal(counter(skel, FC_RTR_CNT_DROP_BUDGET), 5);
	assert_int_equal(counter(skel, FC_RTR_CNT_FWD_PASS), 3);
	assert_true(get_cfg(skel).drop_budget <= 0);
	/* a new budget counts from where it is set */
	c.drop_budget = 2;
	set_cfg(skel, &c);
	assert_int_equal(run(skel, p.b, p.len, NULL, 0), XDP_DROP_RC);
	assert_int_equal(run(skel, p.b, p.len, NULL, 0), XDP_DROP_RC);
	assert_int_equal(run(skel, p.b, p.len, NULL, 0), XDP_PASS_RC);
	assert_int_equal(counter(skel, FC_RTR_CNT_DROP_BUDGET), 7);
	falcon_router__destroy(skel);
}

/* RATE_PKTS target packets at drop_ppm; the verdicts into v[], the drops returned. */
static unsigned rate_run(uint64_t seed, uint32_t drop_ppm, uint8_t *v)
{
	struct falcon_router *skel = load(seed);
	struct fc_router_cfg c = { .port = PORT, .drop_ppm = drop_ppm };
	struct pkt p;
	unsigned drops = 0;

	set_cfg(skel, &c);
	udp_pkt(&p, PORT);
	for (unsigned i = 0; i < RATE_PKTS; i++) {
		int rc = run(skel, p.b, p.len, NULL, 0);

		assert_true(rc == XDP_DROP_RC || rc == XDP_PASS_RC);
		v[i] = rc == XDP_DROP_RC;
		drops += v[i];
	}
	assert_int_equal(counter(skel, FC_RTR_CNT_DROP_RATE), drops);
	assert_int_equal(counter(skel, FC_RTR_CNT_FWD_PASS), RATE_PKTS - drops);
	falcon_router__destroy(skel);
	return drops;
}

static void test_drop_rate_is_seeded(void **state)
{
	static uint8_t a[RATE_PKTS], b[RATE_PKTS], o[RATE_PKTS];
	unsigned da, db, dother;

	(void)state;
	da = rate_run(77, 100000, a); /* 10 % */
	db = rate_run(77, 100000, b);
	dother = rate_run(78, 100000, o);
	printf("drop 10 %%: seed 77 dropped %u and %u of %u, seed 78 %u\n", da, db, RATE_PKTS,
	       dother);
	/* 2000 expected, sd about 42: +-400 is far outside chance */
	assert_in_range(da, 1600, 2400);
	assert_in_range(dother, 1600, 2400);
	assert_memory_equal(a, b, RATE_PKTS); /* the same seed replays every verdict */
	assert_memory_not_equal(a, o, RATE_PKTS);
	/* 0 and 100 % are exact */
	assert_int_equal(rate_run(77, 0, a), 0);
	assert_int_equal(rate_run(77, FC_RTR_PPM, a), RATE_PKTS);
}

static void test_dup_refused_keeps_budget(void **state)
{
	struct falcon_router *skel = load(1);
	struct fc_router_cfg c = { .port = PORT, .dup_budget = 3 };
	static uint8_t big[BIG_FRAME], out[BIG_FRAME];
	struct pkt p;

	(void)state;
	set_cfg(skel, &c);
	/* TTL 1: the kernel must answer it (ICMP time exceeded), not a copy of ours */
	udp_pkt(&p, PORT);
	p.b[p.l3_off + 8] = 1;
	pkt_finish(&p);
	assert_int_equal(run(skel, p.b, p.len, out, sizeof(out)), XDP_PASS_RC);
	assert_memory_equal(out, p.b, p.len); /* not rewritten */
	/* bigger than one page can clone */
	udp_pkt(&p, PORT);
	memcpy(big, p.b, p.len);
	memset(big + p.len, 0x5A, sizeof(big) - p.len);
	pkt_wr16(big + p.l3_off + 2, (uint32_t)(sizeof(big) - p.l3_off));
	pkt_wr16(big + p.l4_off + 4, (uint32_t)(sizeof(big) - p.l4_off));
	assert_int_equal(run(skel, big, sizeof(big), out, sizeof(out)), XDP_PASS_RC);
	assert_int_equal(counter(skel, FC_RTR_CNT_DUP_FAIL_PASS), 2);
	assert_int_equal(counter(skel, FC_RTR_CNT_DUP), 0);
	assert_int_equal(get_cfg(skel).dup_budget, 3); /* nothing spent */
	/* and by rate: every packet asked for, none can be */
	c.dup_budget = 0;
	c.dup_ppm = FC_RTR_PPM;
	set_cfg(skel, &c);
	assert_int_equal(run(skel, big, sizeof(big), NULL, 0), XDP_PASS_RC);
	assert_int_equal(counter(skel, FC_RTR_CNT_DUP_FAIL_PASS), 3);
	falcon_router__destroy(skel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leaves_others_alone),
		cmocka_unit_test(test_target_passes_when_quiet),
		cmocka_unit_test(test_drop_budget_is_exact),
		cmocka_unit_test(test_drop_rate_is_seeded),
		cmocka_unit_test(test_dup_refused_keeps_budget),
	};

	return cmocka_run_group_tests_name("router_bpf", tests, pin_cpu, NULL);
}
