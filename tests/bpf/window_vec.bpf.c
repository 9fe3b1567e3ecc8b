/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * window_vec.bpf.c - test-only program: runs one window.h vector step per
 * BPF_PROG_TEST_RUN. The packet carries a struct fc_wvec_op; the program applies it to
 * the fc_rx_state in map slot 0 and writes the 64-bit result over the packet's first
 * 8 bytes. The same steps run natively in tests/unit/test_window.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "falcon/window.h"
#include "window_vectors.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fc_rx_state);
} wvec_state SEC(".maps");

SEC("xdp")
int window_vec_step(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct fc_wvec_op op;
	struct fc_rx_state *s;
	__u32 key = 0;
	__u64 res;

	if (data + sizeof(op) > end)
		return XDP_ABORTED;
	__builtin_memcpy(&op, data, sizeof(op));
	s = bpf_map_lookup_elem(&wvec_state, &key);
	if (!s)
		return XDP_ABORTED;
	res = fc_wvec_exec(s, &op);
	__builtin_memcpy(data, &res, sizeof(res));
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
