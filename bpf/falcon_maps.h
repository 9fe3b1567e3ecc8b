/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon_maps.h - every BPF map of the falcon XDP programs, BPF side, one comment each.
 *
 * Include after "vmlinux.h" and <bpf/bpf_helpers.h>. Key and value types that
 * userspace also needs live in include/falcon/ (xdp_stats.h, ...), never here.
 * Maps are named falcon_*. None is pinned yet; all can be (bpffs, for falconctl and
 * bpftool) since their key/value types are in BTF.
 */
#ifndef FALCON_MAPS_H
#define FALCON_MAPS_H

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

#endif /* FALCON_MAPS_H */
