/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io_udp.h - a node backend on one non-blocking UDP socket (falcond --io udp): IPv4 or
 * IPv6, batches with recvmmsg / sendmmsg, the receive TTL / hop limit (forward hop count
 * of 7.7.1) and ECN CE from the IP header through control messages. No root needed.
 *
 *   poll/libev says readable -> fc_io_udp_rx(io, node, now) -> recvmmsg -> fc_node_rx_batch
 *   fc_node_poll_tx -> io->tx_alloc / tx_send -> sendmmsg
 *
 * Frames are the backend's: a pool of transmit frames and one batch of receive frames,
 * all allocated at open. A peer address is the peer's struct sockaddr_in / sockaddr_in6
 * (fc_io_udp_peer_addr builds one). When the socket's send buffer is full the frames are
 * dropped and counted: the PDL retransmits them, as after a loss on the wire.
 */
#ifndef FC_IO_UDP_H
#define FC_IO_UDP_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include "node.h"

#define FC_IO_UDP_FRAME_BYTES 9216u /* a jumbo frame's UDP payload fits */
#define FC_IO_UDP_TTL 64            /* the TTL / hop limit we send with */

struct fc_io_udp_stats {
	uint64_t rx_dgrams, rx_bytes, rx_truncated, rx_calls, rx_errors;
	uint64_t tx_dgrams, tx_bytes, tx_calls, tx_eagain_drops, tx_errors;
	uint64_t tx_gso_runs;     /* datagram runs sent as one UDP GSO message */
	uint64_t tx_gso_refused;  /* 1: the kernel refused UDP_SEGMENT, GSO is off */
	uint64_t rx_gro_runs;     /* datagram runs received as one UDP GRO buffer */
};

struct fc_io_udp;

extern const struct fc_io_ops fc_io_udp_ops; /* io_ctx: struct fc_io_udp */

/* Bind a UDP socket to addr (port 0: any; see fc_io_udp_local) with tx_frames transmit
 * frames of FC_IO_UDP_FRAME_BYTES. Returns NULL and sets errno: EINVAL (not AF_INET /
 * AF_INET6, tx_frames 0 or above 65536), the errors of socket / bind, ENOMEM. */
struct fc_io_udp *fc_io_udp_open(const struct sockaddr *addr, socklen_t len, unsigned tx_frames);
void fc_io_udp_close(struct fc_io_udp *io);
int fc_io_udp_fd(const struct fc_io_udp *io);
/* The kernel's busy polling on socket fd (a UDP or an AF_XDP socket; falcond --poll
 * adaptive / busy): SO_BUSY_POLL us, SO_PREFER_BUSY_POLL, and SO_BUSY_POLL_BUDGET budget
 * unless 0. All are tried; returns 0 or the first failure's -errno (-EPERM without
 * CAP_NET_ADMIN, -ENOPROTOOPT / -EINVAL on an older kernel): best effort, the receive
 * path works the same without them. */
int fc_io_busy_poll(int fd, unsigned us, unsigned budget);
/* The bound address (with the port the kernel chose). Returns 0 or -errno. */
int fc_io_udp_local(const struct fc_io_udp *io, struct sockaddr_storage *ss, socklen_t *len);
const struct fc_io_udp_stats *fc_io_udp_stats(const struct fc_io_udp *io);

/* A node peer address from a socket address. Returns 0 or -EINVAL (family, length). */
int fc_io_udp_peer_addr(const struct sockaddr *sa, socklen_t len, struct fc_peer_addr *out);
/* The port of such an address, host order (0: not an AF_INET / AF_INET6 address); the
 * io ops' peer_port (io unused). */
uint16_t fc_io_udp_peer_port(void *io, const struct fc_peer_addr *a);

/* A step between the socket and the node for every received batch (falcond's fault
 * injection, fault.h): it may drop, repeat, reorder or change frames in f[0..n) and
 * returns the new count, at most cap. NULL removes it. */
typedef unsigned (*fc_io_udp_rx_filter_fn)(void *ctx, struct fc_frame *f, unsigned n,
					   unsigned cap);
void fc_io_udp_set_rx_filter(struct fc_io_udp *io, fc_io_udp_rx_filter_fn fn, void *ctx);

/* Receive what the socket holds, up to max datagrams (in batches of FC_NODE_BATCH_MAX),
 * and hand it to node at now_ns. Returns the number of datagrams received (0: none
 * waiting) or -errno from recvmmsg other than EAGAIN (counted too). */
int fc_io_udp_rx(struct fc_io_udp *io, struct fc_node *node, uint64_t now_ns, unsigned max);

#endif
