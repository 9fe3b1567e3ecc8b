/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * xsk_meta_test.bpf.c - test-only XDP program for tests/unit/test_io_xdp.c: IPv4 UDP to
 * test_port gets the metadata falcon_xdp puts in front of a redirected frame
 * (struct fc_xdp_meta, include/falcon/xdp_conn.h; flags test_meta_flags) and is
 * redirected into the AF_XDP socket of its rx queue (test_xsks), as falcon_xdp does;
 * everything else passes. It lets the AF_XDP backend be tested on its own contract,
 * independent of the fast path's checks.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "falcon/xdp_conn.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u16 test_port = 0;        /* host order */
const volatile __u32 test_meta_flags = 0;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, FC_XDP_QUEUES_MAX);
	__type(key, __u32);
	__type(value, __u32);
} test_xsks SEC(".maps");

SEC("xdp")
int xsk_meta_test(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp;
	struct fc_xdp_meta *m;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(0x0800) || ip->protocol != 17 ||
	    ip->ihl != 5)
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(test_port))
		return XDP_PASS;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		return XDP_PASS;
	data = (void *)(long)ctx->data;
	m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > data)
		return XDP_PASS;
	m->magic = FC_XDP_META_MAGIC;
	m->flags = test_meta_flags;
	return bpf_redirect_map(&test_xsks, ctx->rx_queue_index, XDP_PASS);
}
