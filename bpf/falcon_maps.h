/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon_maps.h - every BPF map of the falcon XDP programs, BPF side, one comment each.
 *
 * Include after "vmlinux.h" and <bpf/bpf_helpers.h>. Key and value types that
 * userspace also needs live in include/falcon/ (xdp_stats.h, xdp_conn.h), never here.
 * Maps are named falcon_*; their key/value types are in BTF, so `bpftool map dump`
 * prints field names and falcond may pin them (bpffs) for falconctl and bpftool.
 */
#ifndef FALCON_MAPS_H
#define FALCON_MAPS_H

#include "falcon/xdp_conn.h"
#include "falcon/xdp_stats.h"

/* Packet counters of the XDP program, per CPU (no atomics on the fast path).
 * key: enum fc_xdp_cnt (include/falcon/xdp_stats.h); value: packets, summed over CPUs
 * by the reader. Written only by XDP, read by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FC_XDP_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} falcon_counters SEC(".maps");

/* Per-connection state XDP and falcond share (include/falcon/xdp_conn.h): the receive
 * windows XDP marks, the SPIs and replay baseline it checks. key: the local CID's slot
 * (cid & FC_XDP_SLOT_MASK); value: struct fc_xdp_conn. BPF_F_MMAPABLE: falcond maps the
 * whole array and its engine runs the windows on that very memory. The loader may set
 * max_entries (bpf_map__set_max_entries) before load; a slot beyond it is "unknown CID". */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, FC_XDP_CONNS_DEFAULT);
	__type(key, __u32);
	__type(value, struct fc_xdp_conn);
} falcon_conns SEC(".maps");

/* Per-connection packet counters, per CPU. key: slot, as falcon_conns (resize both
 * together); value: struct fc_xdp_conn_cnt, summed over CPUs by the reader. Written only
 * by XDP; a slot's counters run on across its connections unless falcond zeroes the entry
 * before it publishes a new connection there. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FC_XDP_CONNS_DEFAULT);
	__type(key, __u32);
	__type(value, struct fc_xdp_conn_cnt);
} falcon_conn_counters SEC(".maps");

/* AF_XDP sockets by receive queue. key: rx queue index (ctx->rx_queue_index); value: an
 * AF_XDP socket fd (userspace writes it; XDP only looks up and redirects). XDP marks or
 * answers nothing for a queue without a socket: it passes the packet to the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, FC_XDP_QUEUES_MAX);
	__type(key, __u32);
	__type(value, __u32);
} falcon_xsks SEC(".maps");

#endif /* FALCON_MAPS_H */
