/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io_xdp.h - the AF_XDP node backend (falcond --io xdp; DESIGN.md, "What the daemon does"):
 * one UMEM, one AF_XDP socket per receive queue of the interface (libxdp's xsk API, our
 * own XDP program: XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD, each socket put into the
 * program's XSKMAP falcon_xsks at its queue), need_wakeup, batches; and beside them a UDP
 * socket on the data port (io_udp.h, called, not copied) for what XDP passes to the
 * kernel and for frames to peers whose MAC is not known yet.
 *
 *   rx ring -> Eth/IP/UDP checked and stripped, peer = source sockaddr, hops from TTL,
 *     ECN CE, xdp_marked from the metadata XDP put in front (xdp_conn.h) ->
 *     fc_node_rx_batch on the UMEM bytes (no copy) -> frames back to the fill ring
 *   tx_alloc: UMEM frames, buf after room for Eth + IP + UDP -> the node writes PSP +
 *     Falcon at buf -> tx_send writes Eth (own MAC, peer MAC from the kernel's
 *     neighbour table by RTM_GETNEIGH, cached), IPv4 (header checksum; UDP checksum 0) or
 *     IPv6 (UDP checksum), tx ring, sendto when the kernel asks, completions reaped.
 *     A peer behind a router is reached through the gateway's MAC (RTM_GETROUTE, cached
 *     per peer like the neighbours); one routed out of another interface goes by UDP.
 *     Peer MAC unknown: the frame goes out through the UDP socket (one copy), so the
 *     kernel resolves it and nothing is lost.
 *
 * Receive frames are FC_IO_XDP_FRAME_BYTES chunks with XDP_PACKET_HEADROOM in front, so
 * a received frame (Ethernet header included) holds at most FC_IO_XDP_RX_ROOM bytes: the
 * caller keeps the MTU below that (fc_io_xdp_max_packet). Single-threaded: one loop
 * drives every queue.
 */
#ifndef FC_IO_XDP_H
#define FC_IO_XDP_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include "io_udp.h"
#include "node.h"

#define FC_IO_XDP_FRAME_BYTES 4096u
#define FC_IO_XDP_HEADROOM 256u /* XDP_PACKET_HEADROOM: where copy mode puts the frame */
#define FC_IO_XDP_RX_ROOM (FC_IO_XDP_FRAME_BYTES - FC_IO_XDP_HEADROOM)
#define FC_IO_XDP_RING 2048u    /* descriptors per ring; receive frames per queue */
#define FC_IO_XDP_TX_FRAMES 2048u
#define FC_IO_XDP_NEIGH_MAX 64u  /* neighbour cache entries */
#define FC_IO_XDP_NEIGH_TTL_NS 1000000000ull  /* an entry is re-read from the kernel after */
#define FC_IO_XDP_NEIGH_RETRY_NS 10000000ull  /* kernel table read at most this often */

struct fc_io_xdp_stats {
	uint64_t rx_frames, rx_bytes, rx_calls;
	uint64_t rx_bad_hdr;      /* not Eth/IP/UDP to our port, or lengths wrong: dropped */
	uint64_t rx_marked;       /* metadata said XDP marked it new (xdp_marked) */
	uint64_t rx_no_meta;      /* no metadata of our program in front of the frame */
	uint64_t rx_udp;          /* datagrams through the UDP socket (XDP passed them) */
	uint64_t fill_wakeups;
	uint64_t tx_frames, tx_bytes, tx_kicks;
	uint64_t tx_kick_errors;  /* sendto failed other than EAGAIN / EBUSY */
	uint64_t tx_ring_full;    /* no tx descriptor: frame dropped (the PDL retransmits) */
	uint64_t tx_fallback;     /* sent through the UDP socket: peer MAC not known */
	uint64_t tx_fallback_drops;
	uint64_t tx_completions;
	uint64_t neigh_reads;     /* RTM_GETNEIGH dumps */
	uint64_t neigh_misses;    /* lookups the kernel's table could not answer */
	uint64_t route_reads;     /* RTM_GETROUTE queries (a peer's next hop) */
	uint64_t route_other_if;  /* frames to peers routed out of another interface (UDP) */
	uint32_t queues, zerocopy;
};

/* The peer MACs: the kernel's neighbour entries of one interface. */
struct fc_neigh {
	uint8_t family, valid;
	uint8_t ip[16];
	uint8_t mac[6];
	uint64_t at_ns;            /* read from the kernel then */
};

struct fc_neigh_cache {
	int ifindex;
	unsigned n;
	uint64_t read_ns;          /* last dump */
	struct fc_neigh e[FC_IO_XDP_NEIGH_MAX];
};

/* Take the RTM_NEWNEIGH messages in buf (a netlink dump answer, len bytes) into c: entries
 * of c->ifindex in a usable state (reachable, stale, delay, probe, permanent, noarp) with
 * a 6-byte link-layer address replace or join the cache; an entry of ifindex in another
 * state makes the address unknown again. A full cache drops its oldest entry. Returns the
 * number taken, or -EBADMSG (a truncated message: what came before it is kept). */
int fc_neigh_parse(struct fc_neigh_cache *c, const void *buf, size_t len, uint64_t now_ns);
/* The MAC of ip (4 or 16 bytes by family), if the cache has a valid entry: 0 or -ENOENT.
 * *fresh is set to whether the entry is younger than FC_IO_XDP_NEIGH_TTL_NS. */
int fc_neigh_lookup(const struct fc_neigh_cache *c, int family, const void *ip, uint8_t mac[6],
		    uint64_t now_ns, int *fresh);

/* The next hop toward a peer, from the kernel's routing table (RTM_GETROUTE): a peer
 * behind a router is reached through the router's MAC. Parse the answer in buf (len
 * bytes) to a query for a family destination: returns 1 with via (4 or 16 bytes) set to
 * the gateway, 0 when the destination is on link; *oif is the route's interface (0 when
 * the answer names none). -ENETUNREACH when the kernel answered with an error (no route),
 * -EBADMSG for a truncated or foreign answer. */
int fc_route_parse(const void *buf, size_t len, int family, uint8_t via[16], int *oif);

/* Header room the backend keeps in front of the node's bytes: Ethernet + IP + UDP. */
uint32_t fc_io_xdp_hdr_len(int family);
/* Write Ethernet, IPv4 / IPv6 and UDP headers for payload_len bytes into frame
 * (fc_io_xdp_hdr_len(src->sa_family) bytes; the payload follows them): addresses and
 * ports from src and dst (same family), TTL / hop limit FC_IO_UDP_TTL, IPv4 header
 * checksum, UDP checksum 0 for IPv4 (RFC 768) and computed for IPv6 (RFC 8200 8.1; the
 * payload must be in place). Returns the header length or -EINVAL (family mismatch,
 * payload too long for the IP length field). */
int fc_io_xdp_build(uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
		    const struct sockaddr *src, const struct sockaddr *dst, uint32_t payload_len);

/* What fc_io_xdp_parse found in a received frame. */
struct fc_io_xdp_rx_hdr {
	uint32_t off, len;           /* the UDP payload: frame + off, len bytes */
	struct fc_peer_addr peer;    /* the source as a sockaddr_in / sockaddr_in6 */
	uint8_t ttl, ecn_ce;
};
/* Check and strip Ethernet (up to two VLAN tags), IPv4 (no fragment, options skipped) or
 * IPv6 (next header UDP), and UDP to port (host order) with consistent lengths. ifindex
 * is the scope of link-local IPv6 sources. Returns 0 or -EBADMSG. */
int fc_io_xdp_parse(const uint8_t *frame, uint32_t len, uint16_t port, unsigned ifindex,
		    struct fc_io_xdp_rx_hdr *h);

/* The largest UDP payload (PSP + Falcon) one frame carries for a local address of family
 * on an interface of if_mtu bytes (IP MTU). */
uint32_t fc_io_xdp_max_payload(int family, unsigned if_mtu);

struct fc_io_xdp_cfg {
	const char *ifname;
	unsigned ifindex;
	const struct sockaddr *local;  /* listen address and data port */
	socklen_t local_len;
	int xsks_fd;                   /* the XSKMAP the program redirects through */
	unsigned queues_max;           /* 0: FC_XDP_QUEUES_MAX */
	unsigned udp_tx_frames;        /* the UDP socket's transmit frames */
};

struct fc_io_xdp;

extern const struct fc_io_ops fc_io_xdp_ops; /* io_ctx: struct fc_io_xdp */

/* Open the UDP socket, the UMEM and one AF_XDP socket per receive queue (ETHTOOL_GCHANNELS;
 * 1 when the driver does not say), each in xsks at its queue. Returns NULL and sets
 * errno: EINVAL (cfg), the errors of socket / bind / mmap / xsk_umem__create /
 * xsk_socket__create / the XSKMAP update (EPERM without root, EOPNOTSUPP, EBUSY: another
 * socket on the queue). */
struct fc_io_xdp *fc_io_xdp_open(const struct fc_io_xdp_cfg *cfg);
void fc_io_xdp_close(struct fc_io_xdp *io);
/* An epoll descriptor, readable when any AF_XDP socket or the UDP socket has something. */
int fc_io_xdp_fd(const struct fc_io_xdp *io);
/* Preferred busy polling on every AF_XDP socket (SO_PREFER_BUSY_POLL, SO_BUSY_POLL us,
 * SO_BUSY_POLL_BUDGET budget) and SO_BUSY_POLL on the UDP socket beside them
 * (fc_io_busy_poll); need_wakeup stays on. Returns 0 or the first -errno, best effort. */
int fc_io_xdp_busy_poll(struct fc_io_xdp *io, unsigned us, unsigned budget);
struct fc_io_udp *fc_io_xdp_udp(struct fc_io_xdp *io);
const struct fc_io_xdp_stats *fc_io_xdp_stats(const struct fc_io_xdp *io);
/* The same rx step as fc_io_udp_set_rx_filter, on the AF_XDP frames and the UDP socket's. */
void fc_io_xdp_set_rx_filter(struct fc_io_xdp *io, fc_io_udp_rx_filter_fn fn, void *ctx);
/* Receive up to max frames from every queue and the UDP socket into node at now_ns.
 * Returns the number received, or -errno of the UDP socket's recvmmsg. */
int fc_io_xdp_rx(struct fc_io_xdp *io, struct fc_node *node, uint64_t now_ns, unsigned max);

#endif
