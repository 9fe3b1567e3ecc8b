/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon_router.h - the test router's XDP chaos program (tests/bpf/falcon_router.bpf.c)
 * and its controller (tests/e2e/router_ctl.c) share these: the configuration map's value
 * and the counters' indexes and names. Compiles for BPF (after vmlinux.h) and userspace.
 *
 * The router is a network namespace R that forwards IPv4 between two hosts A and B
 * (scripts/netns-router.sh). The program runs on both of R's ports. A packet that is
 * UDP/IPv4 to the configured port ("target") is dropped, duplicated or let through,
 * chosen per packet; every other packet is XDP_PASS untouched and the kernel forwards it.
 */
#ifndef FALCON_ROUTER_H
#define FALCON_ROUTER_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Parts per million of the target packets: 1000000 = every one. */
#define FC_RTR_PPM 1000000u

/* The one value of map falcon_router_cfg (key 0). The controller writes it at any time;
 * the program reads each field once per packet, so a change applies from some packet on.
 *
 * drop_budget / dup_budget: exact injection. While a budget is above 0, each target
 * packet takes one unit with an atomic fetch-and-add of -1 and is dropped (duplicated)
 * if the value it took was above 0: of the packets that arrive after the controller set
 * the budget to N, exactly min(N, packets) are dropped (duplicated), whatever the number
 * of CPUs. A budget can end slightly below 0 (one unit per CPU racing at 1); the
 * controller reads it as 0. Budgets go before the ppm rates. */
struct fc_router_cfg {
	__u32 drop_ppm;   /* seeded pseudo-random drop rate of target packets */
	__u32 dup_ppm;    /* seeded pseudo-random duplicate rate (of those not dropped) */
	__s64 drop_budget; /* drop the next N target packets */
	__s64 dup_budget;  /* duplicate the next N target packets */
	__u16 port;       /* UDP destination port of target packets, host order; 0 = none */
	__u16 port2;      /* a second one (e.g. the CM port), 0 = none */
	__u32 pad;
};

/* Per-CPU counters (map falcon_router_counters), packets. Every packet the program sees
 * adds 1 to RX and to exactly one of PASS_OTHER and TARGET; each TARGET packet then adds
 * 1 to exactly one of DROP_RATE, DROP_BUDGET, DUP, FWD_PASS, DUP_FAIL_PASS. */
enum fc_router_cnt {
	FC_RTR_CNT_RX = 0,        /* every packet seen */
	FC_RTR_CNT_PASS_OTHER,    /* not UDP/IPv4 to a target port: XDP_PASS untouched */
	FC_RTR_CNT_TARGET,        /* UDP/IPv4 to a target port */
	FC_RTR_CNT_DROP_RATE,     /* XDP_DROP by the seeded rate */
	FC_RTR_CNT_DROP_BUDGET,   /* XDP_DROP from the exact-N budget */
	FC_RTR_CNT_DUP,           /* sent twice: MACs rewritten, broadcast over the devmap */
	FC_RTR_CNT_DUP_BUDGET,    /* of DUP: from the exact-N budget */
	FC_RTR_CNT_FWD_PASS,      /* let through once: XDP_PASS, the kernel forwards it (or,
				   * when another CPU took the last unit of the duplicate
				   * budget after the frame was rewritten, redirected once) */
	FC_RTR_CNT_DUP_FAIL_PASS, /* to duplicate, but the FIB had no answer or the frame is
				   * too big to clone: XDP_PASS once (budget not taken) */
	FC_RTR_CNT_MAX
};

/* Largest frame (bytes on the wire, all fragments) the program duplicates. The kernel
 * clones a broadcast frame into one page (xdpf_clone), headroom and xdp_frame included:
 * bigger frames would make the whole redirect fail. */
#define FC_RTR_DUP_MAX_BYTES 3500u

#ifndef __bpf__
static inline const char *fc_router_cnt_name(unsigned int idx)
{
	static const char *const names[FC_RTR_CNT_MAX] = {
		[FC_RTR_CNT_RX] = "rx",
		[FC_RTR_CNT_PASS_OTHER] = "pass_other",
		[FC_RTR_CNT_TARGET] = "target",
		[FC_RTR_CNT_DROP_RATE] = "drop_rate",
		[FC_RTR_CNT_DROP_BUDGET] = "drop_budget",
		[FC_RTR_CNT_DUP] = "dup",
		[FC_RTR_CNT_DUP_BUDGET] = "dup_budget",
		[FC_RTR_CNT_FWD_PASS] = "fwd_pass",
		[FC_RTR_CNT_DUP_FAIL_PASS] = "dup_fail_pass",
	};

	return idx < FC_RTR_CNT_MAX ? names[idx] : NULL;
}
#endif

#endif /* FALCON_ROUTER_H */
