/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_io.h - the simulator's link as a node's I/O backend (daemon/node.h): a node becomes
 * a sim_world endpoint, so the simulation tests run the very node code falcond runs.
 *
 *   sim_world --on_packet--> sim_io --fc_node_rx_batch--> node
 *   sim_world --poll_tx (one packet)--> sim_io --fc_node_poll_tx(1)--> node --tx_send--> sim
 *
 * A peer address is the sim endpoint number (4 bytes). The packet's sim meta carries the
 * transmit time, as the PSP IV does on a network. With icv set, the node's encapsulation
 * step seals every packet with the simulated ICV trailer (sim_icv.h) and opens it on
 * receipt, so corrupted packets are dropped as a failed ICV check (9.2.2.1) would.
 *
 * A test may watch and steer the wire at the node's edge: tx_hook sees each packet the
 * node sends (without the ICV) and may let it go, drop it, or hold it back until the
 * node has nothing else to send (one at a time); rx_hook sees each packet that arrives
 * intact and may drop it. Either may return SIM_IO_FAIL, and a nonzero *stop makes the
 * endpoint stop the simulation (-EPROTO) at its next callback.
 */
#ifndef FC_SIM_IO_H
#define FC_SIM_IO_H

#include "node.h"
#include "sim.h"

enum { SIM_IO_FAIL = -1, SIM_IO_PASS = 0, SIM_IO_DROP = 1, SIM_IO_HOLD = 2 };

typedef int (*sim_io_hook)(void *ctx, uint64_t now, const uint8_t *pkt, uint32_t len);

struct sim_node {
	struct fc_node *node;
	sim_io_hook tx_hook, rx_hook; /* may be NULL */
	void *hook_ctx;
	const int *stop;              /* may be NULL */
	uint32_t trailer;             /* bytes the encap appends (SIM_ICV_LEN with the ICV) */
	uint8_t held[SIM_PKT_MAX_BYTES];
	uint32_t held_len, held_dst;
	/* the poll_tx call in progress: one frame, the sim's buffer */
	uint8_t *tx_buf;
	uint32_t tx_cap, tx_len;
	uint32_t tx_dst;
	int tx_given, tx_sent;
	uint8_t rx_buf[SIM_PKT_MAX_BYTES];
};

extern const struct fc_io_ops sim_io_ops;        /* io_ctx: struct sim_node */
extern const struct fc_encap_ops sim_icv_encap;  /* encap_ctx: anything (unused) */
extern const struct sim_endpoint_ops sim_node_ep_ops; /* endpoint ctx: struct sim_node */

/* The node address of sim endpoint ep. */
void sim_peer_addr(uint32_t ep, struct fc_peer_addr *a);

#endif
