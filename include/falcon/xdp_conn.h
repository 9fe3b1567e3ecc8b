/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon/xdp_conn.h - what the XDP program and falcond share per connection and per
 * received frame (DESIGN.md, "What XDP does", "One sliding-window implementation, two
 * users"). Compiles for BPF (after vmlinux.h) and for userspace.
 *
 * falcon_conns (bpf/falcon_maps.h): BPF_MAP_TYPE_ARRAY with BPF_F_MMAPABLE, key = the
 * CID's slot (cid & FC_XDP_SLOT_MASK, the node's slot, node.h), value struct fc_xdp_conn.
 * falcond maps the whole array (stride = sizeof(struct fc_xdp_conn), a multiple of 8) and
 * the engine runs the connection's windows on entry.rx, the very memory XDP updates.
 *
 * Ownership and ordering:
 *   - falcond (the node) writes cid, remote_cid, remote_port, flags, spi_sess, replay_*
 *     and rx.remote_time (PSP connections: its replay baseline, 9.2.2.2); XDP only reads
 *     them. A slot is published by a release store of cid after everything else (the
 *     windows initialised by fc_pdl_new); it is retired by storing cid = 0 first. XDP
 *     reads cid with an acquire load (a volatile load in BPF) and compares it with the
 *     packet's CID (generation included), so a closed or reused slot never matches a
 *     packet of the old connection.
 *   - rx: window.h's contract (XDP marks with fc_win_mark_rx, only the daemon advances).
 *   - rx.tx_bpsn[]: written by the engine (PDL) when its transmit bases move; XDP reads
 *     them to discard stale ACK/NACK (spec 9.2.3).
 */
#ifndef FALCON_XDP_CONN_H
#define FALCON_XDP_CONN_H

#include "falcon/window.h"

#define FC_XDP_SLOT_MASK 0xFFFFu /* local CID = generation << 16 | slot (node.h) */
#define FC_XDP_CONNS_DEFAULT 1024u /* falcon_conns entries unless the loader sets more */
#define FC_XDP_QUEUES_MAX 64u      /* falcon_xsks entries: AF_XDP sockets, by rx queue */
#define FC_XDP_SPI_SESS_MASK 0xFFFFu /* SPI bits naming the peer's tunnel (encap_psp.c) */

/* fc_xdp_conn.flags */
#define FC_XDP_CONN_WINDOW 0x1u /* XDP runs the sliding windows of 9.2.2.4 on rx (security
				 * none, or PSP offloaded): marks, answers duplicates with
				 * an ACK, drops out-of-window with OWN, drops stale ACKs */
#define FC_XDP_CONN_PSP 0x2u    /* packets arrive PSP-encrypted: XDP checks the SPI and the
				 * replay window read-only, and steers; nothing else */

struct fc_xdp_conn {
	__u32 cid;        /* the local CID this slot stands for; 0 = free (XDP drops) */
	__u32 remote_cid; /* the peer's CID: ACKs that XDP builds are addressed to it */
	__u32 flags;      /* FC_XDP_CONN_* */
	__u32 spi_sess;   /* PSP: the peer's tunnel, the low FC_XDP_SPI_SESS_MASK bits of
			   * every SPI it may send under (key rotation changes only the
			   * upper bits: generation and phase); XDP drops a packet whose
			   * SPI & FC_XDP_SPI_SESS_MASK differs (9.2.2.3). 0 = no PSP */
	__u16 remote_port; /* the peer's Falcon UDP port (host order): XDP's ACKs go
			    * there; 0 = falcon_port, ours (docs/wire.md: both ends agree;
			    * a source port is flow entropy, never an address) */
	__u16 pad0;
	__u32 pad1;
	__u64 replay_margin_ns; /* spec 9.2.2.2: IV older than rx.remote_time - margin */
	struct fc_rx_state rx;  /* windows and ACK-coalescing state (window.h) */
};

/* Metadata XDP puts in front of every frame it redirects to AF_XDP (bpf_xdp_adjust_meta;
 * AF_XDP copies it in copy mode too): 8 bytes right before the frame's first byte. */
#define FC_XDP_META_MAGIC 0xFA1C0u
#define FC_XDP_META_MARKED 0x1u /* XDP ran fc_win_mark_rx and found the packet NEW:
				 * rx_meta.xdp_marked (the engine takes it as new) */
struct fc_xdp_meta {
	__u32 magic;  /* FC_XDP_META_MAGIC: the frame came through our program */
	__u32 flags;  /* FC_XDP_META_* */
};

/* Per-connection counters, falcon_conn_counters: BPF_MAP_TYPE_PERCPU_ARRAY, key = slot,
 * value = struct fc_xdp_conn_cnt (summed over CPUs by the reader). */
struct fc_xdp_conn_cnt {
	__u64 rx_pkts;        /* packets for this slot's CID that XDP looked at: the sum of
			       * the counters below except marked */
	__u64 redirected;     /* handed to AF_XDP (marked new, or steered) */
	__u64 marked;         /* of redirected: fc_win_mark_rx found it new */
	__u64 passed;         /* XDP_PASS: no AF_XDP socket on the queue, or no metadata room */
	__u64 bad_mode;       /* cleartext on a PSP connection, or ciphertext on a none one */
	__u64 dup_acked;      /* old or duplicate: dropped, answered with an ACK by XDP_TX */
	__u64 oow;            /* out of window: dropped, OWN set */
	__u64 stale_ack;      /* ACK/NACK with a base below ours: dropped (9.2.3) */
	__u64 bad_spi;        /* not one of the connection's SPIs (9.2.2.3) */
	__u64 replay;         /* IV older than the replay window (9.2.2.2) */
};

#ifndef __bpf__
_Static_assert(sizeof(struct fc_xdp_conn) % 8 == 0, "fc_xdp_conn: 8-byte stride");
_Static_assert(sizeof(struct fc_xdp_meta) == 8, "fc_xdp_meta");
#endif

#endif /* FALCON_XDP_CONN_H */
