/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rx_meta.h - what the I/O shell knows of a received packet besides its bytes. One
 * struct for every layer's receive entry (PDL, transaction engine, RDMA layer, node), so
 * that what XDP or the socket saw travels with the packet instead of through side calls.
 */
#ifndef FC_RX_META_H
#define FC_RX_META_H

#include <stdint.h>

struct fc_rx_meta {
	uint64_t tx_ns;     /* the sender's transmit time (PSP IV; 0 when unknown) */
	uint64_t now_ns;    /* our receive time; never goes backwards */
	uint8_t hops;       /* forward hop count: initial TTL - received TTL (7.7.1) */
	uint8_t ecn_ce;     /* IP carried ECN CE (7.7.1 cumulative ECN count) */
	uint8_t xdp_marked; /* XDP already set this packet's receive-window bit (9.2.2.4):
			     * the engine must take the packet as new, not as a duplicate */
	uint8_t pad;
	uint32_t path;      /* receive path / queue the packet came in on (informational) */
	uint32_t spi;       /* PSP SPI the packet was opened under (0 without PSP): the node's
			     * per-connection SPI check runs on it (spec 9.2.2.3) */
};

#endif
