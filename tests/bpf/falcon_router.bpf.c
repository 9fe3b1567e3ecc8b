/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * falcon_router.bpf.c - test-only chaos on the router between two hosts: on each of the
 * router namespace's ingress ports, UDP/IPv4 packets to the configured port (the Falcon
 * data port) are dropped or duplicated, seeded pseudo-random at configured rates or
 * exactly N times on request (tests/bpf/falcon_router.h has the knobs and counters;
 * tests/e2e/router_ctl.c loads, attaches and steers it). Everything else is XDP_PASS and
 * the kernel forwards it.
 *
 * Duplicates: XDP cannot clone a packet, but a broadcast redirect can. Map
 * falcon_router_ports (a DEVMAP) holds each of the router's two ports twice; the program
 * rewrites the frame as the kernel's forwarding would (MACs from bpf_fib_lookup, TTL - 1)
 * and redirects it with BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS: the two entries of the
 * other port each get a copy, so the next hop receives the same frame twice. The kernel
 * clones broadcast frames into one page, so only frames up to FC_RTR_DUP_MAX_BYTES are
 * duplicated (bigger ones pass once, counted DUP_FAIL_PASS; the budget is not taken).
 *
 * The program is "xdp.frags" because the router's ports have MTU 9000 (veth refuses a
 * program without frags support above a page); it reads only the linear headers.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "falcon/wire.h"
#include "falcon_router.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_INET 2 /* not in vmlinux.h (a macro) */

/* Seed of the pseudo-random choices. Load-time knob (router_ctl --seed). Each CPU runs
 * its own xorshift64* stream from seed and CPU number, so a seed replays the same
 * choices for the same packets on the same CPUs. */
const volatile __u64 router_seed = 1;

/* The configuration, one value at key 0 (struct fc_router_cfg). BPF_F_MMAPABLE: the
 * controller maps it and stores single fields atomically, so a budget the program is
 * counting down is never overwritten by a write of another field. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fc_router_cfg);
} falcon_router_cfg SEC(".maps");

/* Counters, enum fc_router_cnt; per CPU, summed by the reader (router_ctl, bpftool). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FC_RTR_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} falcon_router_counters SEC(".maps");

/* Each CPU's xorshift64* state (0 = not seeded yet). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} falcon_router_rng SEC(".maps");

/* The router's ports, each twice (keys 0-3), for the broadcast that duplicates. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} falcon_router_ports SEC(".maps");

static __always_inline void rtr_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&falcon_router_counters, &idx);

	if (v)
		*v += 1;
}

/* A number in [0, FC_RTR_PPM) from this CPU's stream. */
static __always_inline __u32 rtr_rand_ppm(void)
{
	__u32 key = 0;
	__u64 *s = bpf_map_lookup_elem(&falcon_router_rng, &key);
	__u64 x;

	if (!s)
		return FC_RTR_PPM; /* never chosen */
	x = *s;
	if (!x) /* splitmix64 of seed and CPU: a non-zero start per CPU */
	{
		x = router_seed + 0x9E3779B97F4A7C15ull * (bpf_get_smp_processor_id() + 1);
		x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
		x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
		x ^= x >> 31;
		if (!x)
			x = 1;
	}
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return (__u32)(((x * 0x2545F4914F6CDD1Dull) >> 32) % FC_RTR_PPM);
}

/* Take one unit of an exact-N budget: 1 if it was above 0 (see falcon_router.h). */
static __always_inline int rtr_take(__s64 *budget)
{
	if (*(volatile __s64 *)budget <= 0)
		return 0;
	return __sync_fetch_and_add(budget, -1) > 0;
}

/* Rewrite the frame for the next hop as the kernel's forwarding would, and check that
 * it can be duplicated. Returns the egress ifindex when it is ready for the broadcast,
 * -1 when it should pass once instead (no route or neighbour, TTL out, too big to
 * clone, no other port); the frame is unchanged then. */
static __always_inline int rtr_prepare_dup(struct xdp_md *ctx, struct fc_eth_hdr *eth,
					   struct fc_ipv4_hdr *ip)
{
	struct bpf_fib_lookup fib = {};
	__u32 sum;

	if (bpf_xdp_get_buff_len(ctx) > FC_RTR_DUP_MAX_BYTES || ip->ttl <= 1)
		return -1;
	fib.family = AF_INET;
	fib.tos = ip->tos;
	fib.l4_protocol = ip->protocol;
	fib.tot_len = bpf_ntohs(ip->tot_len);
	fib.ipv4_src = ip->saddr;
	fib.ipv4_dst = ip->daddr;
	fib.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS ||
	    fib.ifindex == ctx->ingress_ifindex)
		return -1;
	/* TTL - 1 with the checksum updated incrementally (RFC 1624): the TTL is the high
	 * byte of its 16-bit word, so the sum gains 0x0100 */
	ip->ttl--;
	sum = (__u32)ip->check + bpf_htons(0x0100);
	ip->check = (__be16)(sum + (sum >> 16));
	__builtin_memcpy(eth->dst, fib.dmac, FC_ETH_ALEN);
	__builtin_memcpy(eth->src, fib.smac, FC_ETH_ALEN);
	return (int)fib.ifindex;
}

SEC("xdp.frags")
int falcon_router(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct fc_eth_hdr *eth = data;
	struct fc_ipv4_hdr *ip;
	struct fc_udp_hdr *udp;
	struct fc_router_cfg *cfg;
	__u32 key = 0, ihl;
	__u16 dport;
	int dup = 0, budget = 0, egress;

	rtr_count(FC_RTR_CNT_RX);
	cfg = bpf_map_lookup_elem(&falcon_router_cfg, &key);
	if (!cfg)
		goto other;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || eth->proto != bpf_htons(FC_ETH_P_IPV4) ||
	    (ip->ver_ihl >> 4) != 4 || ip->protocol != FC_IPPROTO_UDP ||
	    (ip->frag_off & bpf_htons(0x1FFF)))
		goto other;
	ihl = (ip->ver_ihl & 0xF) * 4u;
	if (ihl < sizeof(*ip))
		goto other;
	udp = (void *)ip + ihl;
	if ((void *)(udp + 1) > data_end)
		goto other;
	dport = bpf_ntohs(udp->dest);
	if (!dport || (dport != cfg->port && dport != cfg->port2))
		goto other;
	rtr_count(FC_RTR_CNT_TARGET);

	if (rtr_take(&cfg->drop_budget)) {
		rtr_count(FC_RTR_CNT_DROP_BUDGET);
		return XDP_DROP;
	}
	if (*(volatile __s64 *)&cfg->dup_budget > 0) {
		dup = budget = 1;
	} else if (cfg->drop_ppm || cfg->dup_ppm) {
		__u32 r = rtr_rand_ppm();

		if (r < cfg->drop_ppm) {
			rtr_count(FC_RTR_CNT_DROP_RATE);
			return XDP_DROP;
		}
		/* of the rest, dup_ppm of all target packets */
		dup = r < cfg->drop_ppm + cfg->dup_ppm;
	}
	if (!dup) {
		rtr_count(FC_RTR_CNT_FWD_PASS);
		return XDP_PASS;
	}
	egress = rtr_prepare_dup(ctx, eth, ip);
	if (egress < 0) {
		rtr_count(FC_RTR_CNT_DUP_FAIL_PASS);
		return XDP_PASS;
	}
	/* the frame is rewritten for the next hop now: from here it leaves by a redirect,
	 * once if another CPU took the budget's last unit meanwhile */
	if (budget && !rtr_take(&cfg->dup_budget)) {
		rtr_count(FC_RTR_CNT_FWD_PASS);
		return bpf_redirect(egress, 0);
	}
	rtr_count(FC_RTR_CNT_DUP);
	if (budget)
		rtr_count(FC_RTR_CNT_DUP_BUDGET);
	return bpf_redirect_map(&falcon_router_ports, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);

other:
	rtr_count(FC_RTR_CNT_PASS_OTHER);
	return XDP_PASS;
}
