/* SPDX-License-Identifier: Apache-2.0 */
/* io_xdp.c - the AF_XDP node backend (io_xdp.h). */
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/if_xdp.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <xdp/xsk.h>

#include "falcon/xdp_conn.h"
#include "io_xdp.h"

#define BATCH FC_NODE_BATCH_MAX
#define KICK_ROUNDS_MAX 64u     /* sendto calls per tx_send at most (copy mode: 32 each) */
#define NL_BUF_BYTES 32768u
#define NL_READS_MAX 64u        /* recv calls per neighbour dump at most */
#define VLAN_MAX 2

struct xq {                       /* one receive queue's socket */
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx, cq;
	struct xsk_ring_prod tx, fq;
	int fd;
	uint32_t id;
};

struct xroute {                   /* a peer's next hop (RTM_GETROUTE), cached */
	uint8_t family, gateway, other_if;
	uint8_t dst[16], via[16];
	uint64_t at_ns;
};

struct fc_io_xdp {
	struct fc_io_udp *udp;
	int epfd, nlfd;
	uint8_t *umem_area;
	size_t umem_bytes;
	struct xsk_umem *umem;
	struct xq q[FC_XDP_QUEUES_MAX];
	unsigned nq;
	uint64_t *tx_free;            /* free transmit frames (UMEM addresses) */
	uint32_t ntx_free;
	uint32_t tx_outstanding;      /* on the tx ring or in flight, not completed */
	struct sockaddr_storage local;
	int family;
	uint16_t port;
	unsigned ifindex;
	uint8_t mac[6];
	uint32_t hdr_len;
	struct fc_neigh_cache neigh;
	struct xroute route[FC_IO_XDP_NEIGH_MAX];
	unsigned nroute;
	uint32_t nl_seq;
	fc_io_udp_rx_filter_fn filter;
	void *filter_ctx;
	struct fc_frame rxf[2 * BATCH];
	struct fc_peer_addr from[BATCH];
	uint64_t rx_addr[BATCH];
	struct fc_io_xdp_stats st;
};

static uint64_t now_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- neighbour cache ---- */

static struct fc_neigh *neigh_find(struct fc_neigh_cache *c, int family, const void *ip)
{
	unsigned alen = family == AF_INET ? 4 : 16;

	for (unsigned i = 0; i < c->n; i++) {
		if (c->e[i].family == family && !memcmp(c->e[i].ip, ip, alen))
			return &c->e[i];
	}
	return NULL;
}

int fc_neigh_parse(struct fc_neigh_cache *c, const void *buf, size_t len, uint64_t now_ns)
{
	const uint16_t usable = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT |
				NUD_NOARP;
	const struct nlmsghdr *h = buf;
	size_t left = len;
	int taken = 0;

	for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
		const struct ndmsg *nd = NLMSG_DATA(h);
		const struct rtattr *a;
		const uint8_t *dst = NULL, *ll = NULL;
		unsigned dlen = 0, lllen = 0;
		int alen;
		struct fc_neigh *e;

		if (h->nlmsg_type != RTM_NEWNEIGH)
			continue;
		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*nd)))
			return -EBADMSG;
		if (nd->ndm_ifindex != c->ifindex ||
		    (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6))
			continue;
		alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd)));
		for (a = (const struct rtattr *)((const uint8_t *)nd + NLMSG_ALIGN(sizeof(*nd)));
		     RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
			if (a->rta_type == NDA_DST) {
				dst = RTA_DATA(a);
				dlen = RTA_PAYLOAD(a);
			} else if (a->rta_type == NDA_LLADDR) {
				ll = RTA_DATA(a);
				lllen = RTA_PAYLOAD(a);
			}
		}
		if (!dst || dlen != (nd->ndm_family == AF_INET ? 4u : 16u))
			continue;
		e = neigh_find(c, nd->ndm_family, dst);
		if (!(nd->ndm_state & usable) || !ll || lllen != 6) {
			if (e)
				e->valid = 0; /* failed / incomplete now: not ours to use */
			continue;
		}
		if (!e) {
			if (c->n == FC_IO_XDP_NEIGH_MAX) {
				unsigned old = 0;

				for (unsigned i = 1; i < c->n; i++)
					if (c->e[i].at_ns < c->e[old].at_ns)
						old = i;
				e = &c->e[old];
			} else {
				e = &c->e[c->n++];
			}
			memset(e, 0, sizeof(*e));
			e->family = nd->ndm_family;
			memcpy(e->ip, dst, dlen);
		}
		memcpy(e->mac, ll, 6);
		e->valid = 1;
		e->at_ns = now_ns;
		taken++;
	}
	if (left && left >= sizeof(struct nlmsghdr))
		return -EBADMSG;
	return taken;
}

int fc_neigh_lookup(const struct fc_neigh_cache *c, int family, const void *ip, uint8_t mac[6],
		    uint64_t now_ns, int *fresh)
{
	const struct fc_neigh *e = neigh_find((struct fc_neigh_cache *)c, family, ip);

	if (!e || !e->valid)
		return -ENOENT;
	memcpy(mac, e->mac, 6);
	*fresh = now_ns - e->at_ns < FC_IO_XDP_NEIGH_TTL_NS;
	return 0;
}

/* Dump the kernel's neighbour table of our interface's family into the cache. */
static int neigh_read(struct fc_io_xdp *io, uint64_t now)
{
	struct {
		struct nlmsghdr h;
		struct ndmsg nd;
	} req = { .h = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETNEIGH,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = ++io->nl_seq },
		  .nd = { .ndm_family = (uint8_t)io->family, .ndm_ifindex = (int)io->ifindex } };
	static uint8_t buf[NL_BUF_BYTES] __attribute__((aligned(8)));
	int rc = 0;

	io->neigh.read_ns = now;
	io->st.neigh_reads++;
	if (send(io->nlfd, &req, sizeof(req), 0) < 0)
		return -errno;
	for (unsigned r = 0; r < NL_READS_MAX; r++) {
		ssize_t n = recv(io->nlfd, buf, sizeof(buf), 0);
		const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if ((rc = fc_neigh_parse(&io->neigh, buf, (size_t)n, now)) < 0)
			return rc;
		for (size_t left = (size_t)n; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
				return 0;
		}
	}
	return 0;
}

int fc_route_parse(const void *buf, size_t len, int family, uint8_t via[16], int *oif)
{
	const struct nlmsghdr *h = buf;
	unsigned alen = family == AF_INET ? 4 : 16;

	*oif = 0;
	if (!NLMSG_OK(h, len))
		return -EBADMSG;
	if (h->nlmsg_type == NLMSG_ERROR)
		return -ENETUNREACH;
	if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg)))
		return -EBADMSG;
	const struct rtmsg *rt = NLMSG_DATA(h);
	int alen_left = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*rt)));
	int gw = 0;

	if (rt->rtm_family != family)
		return -EBADMSG;
	for (const struct rtattr *a = RTM_RTA(rt); RTA_OK(a, alen_left); a = RTA_NEXT(a, alen_left)) {
		if (a->rta_type == RTA_GATEWAY && RTA_PAYLOAD(a) == alen) {
			memcpy(via, RTA_DATA(a), alen);
			gw = 1;
		} else if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) == sizeof(int)) {
			memcpy(oif, RTA_DATA(a), sizeof(int));
		}
	}
	return gw;
}

/* Ask the kernel for the route to dst into r. 0 or -errno (r then says: on link). */
static int route_read(struct fc_io_xdp *io, struct xroute *r, uint64_t now)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg rt;
		struct rtattr a;
		uint8_t dst[16];
	} req;
	static uint8_t buf[4096] __attribute__((aligned(8)));
	unsigned alen = r->family == AF_INET ? 4 : 16;
	int oif = 0, rc = -ETIMEDOUT;

	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(req.rt) + RTA_LENGTH(alen));
	req.h.nlmsg_type = RTM_GETROUTE;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.h.nlmsg_seq = ++io->nl_seq;
	req.rt.rtm_family = r->family;
	req.rt.rtm_dst_len = (uint8_t)(alen * 8);
	req.a.rta_type = RTA_DST;
	req.a.rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(req.dst, r->dst, alen);
	r->gateway = r->other_if = 0;
	r->at_ns = now;
	io->st.route_reads++;
	if (send(io->nlfd, &req, req.h.nlmsg_len, 0) < 0)
		return -errno;
	for (unsigned k = 0; k < NL_READS_MAX; k++) {
		ssize_t n = recv(io->nlfd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!NLMSG_OK((struct nlmsghdr *)buf, (size_t)n) ||
		    ((struct nlmsghdr *)buf)->nlmsg_seq != io->nl_seq)
			continue; /* what an earlier, abandoned query left */
		rc = fc_route_parse(buf, (size_t)n, r->family, r->via, &oif);
		break;
	}
	if (rc < 0)
		return rc;
	r->gateway = rc == 1;
	r->other_if = oif && oif != (int)io->ifindex;
	return 0;
}

/* The next hop toward ip: the peer itself or its gateway (cached FC_IO_XDP_NEIGH_TTL_NS).
 * NULL when the route leaves by another interface (AF_XDP here cannot reach it). */
static const uint8_t *next_hop(struct fc_io_xdp *io, int family, const uint8_t *ip, uint64_t now)
{
	unsigned alen = family == AF_INET ? 4 : 16, i;
	struct xroute *r = NULL;

	for (i = 0; i < io->nroute; i++) {
		if (io->route[i].family == family && !memcmp(io->route[i].dst, ip, alen)) {
			r = &io->route[i];
			break;
		}
	}
	if (!r) {
		if (io->nroute < FC_IO_XDP_NEIGH_MAX) {
			r = &io->route[io->nroute++];
		} else { /* the oldest makes room */
			r = &io->route[0];
			for (i = 1; i < io->nroute; i++)
				if (io->route[i].at_ns < r->at_ns)
					r = &io->route[i];
		}
		memset(r, 0, sizeof(*r));
		r->family = (uint8_t)family;
		memcpy(r->dst, ip, alen);
		route_read(io, r, now); /* an error leaves it on link: the neighbour decides */
	} else if (now - r->at_ns >= FC_IO_XDP_NEIGH_TTL_NS) {
		route_read(io, r, now);
	}
	if (r->other_if) {
		io->st.route_other_if++;
		return NULL;
	}
	return r->gateway ? r->via : r->dst;
}

/* The MAC of the next hop toward the peer: from the cache, refreshed from the kernel when
 * stale or missing (at most every FC_IO_XDP_NEIGH_RETRY_NS). 0 or -ENOENT. */
static int peer_mac(struct fc_io_xdp *io, const struct sockaddr *sa, uint8_t mac[6])
{
	uint64_t now = now_coarse_ns();
	const uint8_t *ip = next_hop(io, sa->sa_family, sa->sa_family == AF_INET ?
		(const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr :
		(const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr, now);
	int fresh = 0, rc;

	if (!ip)
		return -ENOENT;
	rc = fc_neigh_lookup(&io->neigh, sa->sa_family, ip, mac, now, &fresh);

	if (rc == 0 && fresh)
		return 0;
	if (now - io->neigh.read_ns >= FC_IO_XDP_NEIGH_RETRY_NS || !io->neigh.read_ns) {
		neigh_read(io, now); /* an error leaves the cache as it was */
		rc = fc_neigh_lookup(&io->neigh, sa->sa_family, ip, mac, now, &fresh);
	}
	if (rc)
		io->st.neigh_misses++;
	return rc;
}

/* ---- headers ---- */

uint32_t fc_io_xdp_hdr_len(int family)
{
	return ETH_HLEN + (family == AF_INET6 ? 40u : 20u) + 8u;
}

uint32_t fc_io_xdp_max_payload(int family, unsigned if_mtu)
{
	uint32_t l3 = (family == AF_INET6 ? 40u : 20u) + 8u;
	uint32_t by_frame = FC_IO_XDP_RX_ROOM - ETH_HLEN - 4u * VLAN_MAX - l3;
	uint32_t by_mtu = if_mtu > l3 ? if_mtu - l3 : 0;

	return by_frame < by_mtu ? by_frame : by_mtu;
}

static uint32_t csum_add(uint32_t sum, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len > 1) {
		sum += (uint32_t)b[0] << 8 | b[1];
		b += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)b[0] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

int fc_io_xdp_build(uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
		    const struct sockaddr *src, const struct sockaddr *dst, uint32_t payload_len)
{
	struct ethhdr *eth = (struct ethhdr *)frame;
	uint32_t ulen = payload_len + 8;
	uint8_t *l3 = frame + ETH_HLEN;

	if (src->sa_family != dst->sa_family)
		return -EINVAL;
	memcpy(eth->h_dest, dst_mac, 6);
	memcpy(eth->h_source, src_mac, 6);
	if (src->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)src, *d = (const void *)dst;
		struct iphdr ip = { .version = 4, .ihl = 5, .ttl = FC_IO_UDP_TTL,
				    .protocol = IPPROTO_UDP, .frag_off = htons(IP_DF),
				    .saddr = s->sin_addr.s_addr, .daddr = d->sin_addr.s_addr };
		struct udphdr u = { .source = s->sin_port, .dest = d->sin_port,
				    .len = htons((uint16_t)ulen), .check = 0 };

		if (ulen + 20 > 0xFFFF)
			return -EINVAL;
		eth->h_proto = htons(ETH_P_IP);
		ip.tot_len = htons((uint16_t)(ulen + 20));
		ip.check = htons(csum_fold(csum_add(0, &ip, sizeof(ip))));
		memcpy(l3, &ip, sizeof(ip));
		memcpy(l3 + 20, &u, sizeof(u));
		return ETH_HLEN + 20 + 8;
	}
	if (src->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)src, *d = (const void *)dst;
		struct ip6_hdr ip = { 0 };
		struct udphdr u = { .source = s->sin6_port, .dest = d->sin6_port,
				    .len = htons((uint16_t)ulen), .check = 0 };
		uint32_t sum;
		uint8_t pseudo_tail[8] = { (uint8_t)(ulen >> 24), (uint8_t)(ulen >> 16),
					   (uint8_t)(ulen >> 8), (uint8_t)ulen, 0, 0, 0, IPPROTO_UDP };
		uint16_t c;

		if (ulen > 0xFFFF)
			return -EINVAL;
		eth->h_proto = htons(ETH_P_IPV6);
		ip.ip6_flow = htonl(6u << 28);
		ip.ip6_plen = htons((uint16_t)ulen);
		ip.ip6_nxt = IPPROTO_UDP;
		ip.ip6_hlim = FC_IO_UDP_TTL;
		ip.ip6_src = s->sin6_addr;
		ip.ip6_dst = d->sin6_addr;
		/* RFC 8200 8.1: pseudo-header, UDP header, payload (in place after the header) */
		sum = csum_add(0, &ip.ip6_src, 16);
		sum = csum_add(sum, &ip.ip6_dst, 16);
		sum = csum_add(sum, pseudo_tail, sizeof(pseudo_tail));
		sum = csum_add(sum, &u, sizeof(u));
		sum = csum_add(sum, l3 + 48, payload_len);
		c = csum_fold(sum);
		u.check = htons(c ? c : 0xFFFF);
		memcpy(l3, &ip, sizeof(ip));
		memcpy(l3 + 40, &u, sizeof(u));
		return ETH_HLEN + 40 + 8;
	}
	return -EINVAL;
}

int fc_io_xdp_parse(const uint8_t *p, uint32_t len, uint16_t port, unsigned ifindex,
		    struct fc_io_xdp_rx_hdr *h)
{
	uint32_t off = ETH_HLEN, ulen;
	uint16_t proto;
	struct udphdr u;

	if (len < ETH_HLEN)
		return -EBADMSG;
	proto = (uint16_t)(p[12] << 8 | p[13]);
	for (int v = 0; v < VLAN_MAX && (proto == ETH_P_8021Q || proto == ETH_P_8021AD); v++) {
		if (len < off + 4)
			return -EBADMSG;
		proto = (uint16_t)(p[off + 2] << 8 | p[off + 3]);
		off += 4;
	}
	memset(h, 0, sizeof(*h));
	if (proto == ETH_P_IP) {
		struct iphdr ip;
		struct sockaddr_in sin = { .sin_family = AF_INET };
		uint32_t ihl, tot;

		if (len < off + sizeof(ip))
			return -EBADMSG;
		memcpy(&ip, p + off, sizeof(ip));
		ihl = ip.ihl * 4u;
		tot = ntohs(ip.tot_len);
		if (ip.version != 4 || ihl < 20 || ip.protocol != IPPROTO_UDP ||
		    (ntohs(ip.frag_off) & (IP_MF | IP_OFFMASK)) || tot < ihl + 8 || off + tot > len)
			return -EBADMSG;
		memcpy(&u, p + off + ihl, sizeof(u));
		ulen = ntohs(u.len);
		if (ulen != tot - ihl)
			return -EBADMSG;
		sin.sin_port = u.source;
		sin.sin_addr.s_addr = ip.saddr;
		h->peer.len = sizeof(sin);
		memcpy(h->peer.bytes, &sin, sizeof(sin));
		h->ttl = ip.ttl;
		h->ecn_ce = (ip.tos & 3) == 3;
		off += ihl;
	} else if (proto == ETH_P_IPV6) {
		struct ip6_hdr ip;
		struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
		uint32_t plen;

		if (len < off + sizeof(ip))
			return -EBADMSG;
		memcpy(&ip, p + off, sizeof(ip));
		plen = ntohs(ip.ip6_plen);
		if ((ntohl(ip.ip6_flow) >> 28) != 6 || ip.ip6_nxt != IPPROTO_UDP || plen < 8 ||
		    off + 40 + plen > len)
			return -EBADMSG;
		memcpy(&u, p + off + 40, sizeof(u));
		ulen = ntohs(u.len);
		if (ulen != plen)
			return -EBADMSG;
		sin6.sin6_port = u.source;
		sin6.sin6_addr = ip.ip6_src;
		if (IN6_IS_ADDR_LINKLOCAL(&ip.ip6_src))
			sin6.sin6_scope_id = ifindex;
		h->peer.len = sizeof(sin6);
		memcpy(h->peer.bytes, &sin6, sizeof(sin6));
		h->ttl = ip.ip6_hlim;
		h->ecn_ce = ((ntohl(ip.ip6_flow) >> 20) & 3) == 3;
		off += 40;
	} else {
		return -EBADMSG;
	}
	if (ntohs(u.dest) != port)
		return -EBADMSG;
	h->off = off + 8;
	h->len = ulen - 8;
	return 0;
}

/* ---- transmit ---- */

/* Completed transmit frames back to the free list. */
static void reap(struct fc_io_xdp *io)
{
	struct xq *q = &io->q[0];
	uint32_t idx, n = xsk_ring_cons__peek(&q->cq, FC_IO_XDP_RING, &idx);

	for (uint32_t i = 0; i < n; i++)
		io->tx_free[io->ntx_free++] = *xsk_ring_cons__comp_addr(&q->cq, idx + i);
	if (n) {
		xsk_ring_cons__release(&q->cq, n);
		io->tx_outstanding -= n;
		io->st.tx_completions += n;
	}
}

static unsigned xdp_tx_alloc(void *ctx, struct fc_frame *f, unsigned n)
{
	struct fc_io_xdp *io = ctx;
	unsigned k = 0;

	if (io->ntx_free < n)
		reap(io);
	while (k < n && io->ntx_free) {
		uint64_t a = io->tx_free[--io->ntx_free];

		f[k++] = (struct fc_frame){ .buf = io->umem_area + a + io->hdr_len,
					    .cap = FC_IO_XDP_FRAME_BYTES - io->hdr_len,
					    .io_handle = a };
	}
	return k;
}

static void xdp_tx_return(void *ctx, struct fc_frame *f, unsigned n)
{
	struct fc_io_xdp *io = ctx;

	for (unsigned i = 0; i < n; i++)
		io->tx_free[io->ntx_free++] = f[i].io_handle;
}

/* Through the UDP socket, one copy: the kernel resolves the neighbour meanwhile. */
static void send_fallback(struct fc_io_xdp *io, const struct fc_frame *f)
{
	struct fc_frame u;

	io->st.tx_fallback++;
	if (fc_io_udp_ops.tx_alloc(io->udp, &u, 1) != 1 || u.cap < f->len) {
		io->st.tx_fallback_drops++;
		return;
	}
	memcpy(u.buf, f->buf, f->len);
	u.len = f->len;
	u.peer = f->peer;
	u.peer_idx = f->peer_idx;
	if (fc_io_udp_ops.tx_send(io->udp, &u, 1) != 1)
		io->st.tx_fallback_drops++;
}

/* Make the kernel transmit what the tx ring holds: in copy mode each sendto sends a batch
 * (32 frames), so it is repeated, bounded, while frames wait. */
static void kick(struct fc_io_xdp *io, unsigned queued)
{
	struct xq *q = &io->q[0];
	unsigned rounds = queued / 32 + 2;

	if (rounds > KICK_ROUNDS_MAX)
		rounds = KICK_ROUNDS_MAX;
	for (unsigned r = 0; r < rounds; r++) {
		if (!xsk_ring_prod__needs_wakeup(&q->tx))
			break;
		io->st.tx_kicks++;
		if (sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0) {
			reap(io);
			if (!io->tx_outstanding)
				break;
			continue;
		}
		if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR) {
			io->st.tx_kick_errors++;
			break;
		}
		reap(io);
	}
	reap(io);
}

static unsigned xdp_tx_send(void *ctx, struct fc_frame *f, unsigned n)
{
	struct fc_io_xdp *io = ctx;
	struct xq *q = &io->q[0];
	uint32_t idx = 0, room, used = 0;
	unsigned sent = 0;

	room = xsk_ring_prod__reserve(&q->tx, n, &idx);
	for (unsigned i = 0; i < n; i++) {
		union { /* the peer's bytes are not aligned for a sockaddr: copied */
			struct sockaddr sa;
			struct sockaddr_in in;
			struct sockaddr_in6 in6;
		} u;
		const struct sockaddr *dst = &u.sa;
		uint8_t mac[6];
		int hl;

		_Static_assert(sizeof(u) == FC_PEER_ADDR_MAX, "a peer address is a sockaddr");
		memcpy(&u, f[i].peer->bytes, sizeof(u));
		if (dst->sa_family != io->family || peer_mac(io, dst, mac)) {
			send_fallback(io, &f[i]);
			io->tx_free[io->ntx_free++] = f[i].io_handle;
			sent++;
			continue;
		}
		if (used == room) {
			io->st.tx_ring_full++;
			io->tx_free[io->ntx_free++] = f[i].io_handle;
			continue;
		}
		hl = fc_io_xdp_build(f[i].buf - io->hdr_len, mac, io->mac,
				     (const struct sockaddr *)&io->local, dst, f[i].len);
		if (hl != (int)io->hdr_len) { /* cannot happen: family checked above */
			io->tx_free[io->ntx_free++] = f[i].io_handle;
			continue;
		}
		*xsk_ring_prod__tx_desc(&q->tx, idx + used) = (struct xdp_desc){
			.addr = f[i].io_handle, .len = io->hdr_len + f[i].len };
		used++;
		sent++;
		io->st.tx_frames++;
		io->st.tx_bytes += io->hdr_len + f[i].len;
	}
	if (room > used) /* give back what the fallbacks did not use */
		q->tx.cached_prod -= room - used;
	if (used) {
		xsk_ring_prod__submit(&q->tx, used);
		io->tx_outstanding += used;
		kick(io, used);
	}
	return sent;
}

const struct fc_io_ops fc_io_xdp_ops = {
	.name = "xdp", .tx_alloc = xdp_tx_alloc, .tx_send = xdp_tx_send,
	.tx_return = xdp_tx_return,
	.peer_port = fc_io_udp_peer_port, /* the same sockaddr peers as io_udp's (io unused) */
};

/* ---- receive ---- */

static void rx_flush(struct fc_io_xdp *io, struct fc_node *node, unsigned nf)
{
	if (io->filter)
		nf = io->filter(io->filter_ctx, io->rxf, nf, 2 * BATCH);
	if (nf)
		fc_node_rx_batch(node, io->rxf, nf);
}

/* Give n frames (chunk addresses) back to queue q's fill ring. The ring holds every
 * receive frame of the queue, so there is always room. */
static void refill(struct fc_io_xdp *io, struct xq *q, const uint64_t *addr, uint32_t n)
{
	uint32_t idx;

	if (xsk_ring_prod__reserve(&q->fq, n, &idx) != n)
		return; /* cannot happen (see above); the frames would be lost to the queue */
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&q->fq, idx + i) = addr[i];
	xsk_ring_prod__submit(&q->fq, n);
	if (xsk_ring_prod__needs_wakeup(&q->fq)) {
		io->st.fill_wakeups++;
		recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	}
}

static unsigned rx_queue(struct fc_io_xdp *io, struct xq *q, struct fc_node *node, uint64_t now,
			 unsigned max)
{
	uint32_t idx, n = xsk_ring_cons__peek(&q->rx, max < BATCH ? max : BATCH, &idx);
	unsigned nf = 0;

	io->st.rx_calls++;
	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx + i);
		uint64_t addr = xsk_umem__add_offset_to_addr(d->addr);
		uint8_t *data = io->umem_area + addr;
		struct fc_io_xdp_rx_hdr h;
		struct fc_xdp_meta meta = { 0 };
		struct fc_rx_meta m = { .now_ns = now, .path = q->id };

		io->rx_addr[i] = addr - addr % FC_IO_XDP_FRAME_BYTES;
		io->st.rx_frames++;
		io->st.rx_bytes += d->len;
		if (addr % FC_IO_XDP_FRAME_BYTES >= sizeof(meta)) {
			memcpy(&meta, data - sizeof(meta), sizeof(meta));
			/* cleared: the next frame in this chunk must bring its own */
			memset(data - sizeof(meta), 0, sizeof(meta));
		}
		if (meta.magic != FC_XDP_META_MAGIC)
			io->st.rx_no_meta++;
		else if (meta.flags & FC_XDP_META_MARKED)
			m.xdp_marked = 1, io->st.rx_marked++;
		if (d->len > FC_IO_XDP_FRAME_BYTES - addr % FC_IO_XDP_FRAME_BYTES ||
		    fc_io_xdp_parse(data, d->len, io->port, io->ifindex, &h)) {
			io->st.rx_bad_hdr++;
			continue;
		}
		if (h.ttl <= FC_IO_UDP_TTL)
			m.hops = (uint8_t)(FC_IO_UDP_TTL - h.ttl);
		m.ecn_ce = h.ecn_ce;
		io->from[nf] = h.peer;
		io->rxf[nf] = (struct fc_frame){ .buf = data + h.off, .len = h.len, .cap = h.len,
						 .io_handle = addr, .peer = &io->from[nf],
						 .meta = m };
		nf++;
	}
	xsk_ring_cons__release(&q->rx, n);
	if (nf)
		rx_flush(io, node, nf);
	if (n)
		refill(io, q, io->rx_addr, n); /* the node keeps nothing of the frames */
	return n;
}

int fc_io_xdp_rx(struct fc_io_xdp *io, struct fc_node *node, uint64_t now_ns, unsigned max)
{
	unsigned total = 0;
	int rc;

	for (unsigned qi = 0; qi < io->nq; qi++) {
		unsigned got = 0, n;

		do {
			n = rx_queue(io, &io->q[qi], node, now_ns, max - got);
			got += n;
		} while (n == BATCH && got < max);
		total += got;
	}
	rc = fc_io_udp_rx(io->udp, node, now_ns, max);
	if (rc > 0) {
		io->st.rx_udp += (unsigned)rc;
		total += (unsigned)rc;
	}
	if (io->tx_outstanding)
		reap(io);
	return rc < 0 && !total ? rc : (int)total;
}

/* ---- open and close ---- */

static unsigned rx_queues(const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unsigned n = 1;

	if (fd < 0)
		return 1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ch;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0 && ch.rx_count + ch.combined_count > 0)
		n = ch.rx_count + ch.combined_count;
	close(fd);
	return n;
}

static int own_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		rc = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return rc;
}

static int open_queue(struct fc_io_xdp *io, const struct fc_io_xdp_cfg *cfg, unsigned qi)
{
	struct xsk_socket_config sc = {
		.rx_size = FC_IO_XDP_RING, .tx_size = FC_IO_XDP_RING,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	struct xq *q = &io->q[qi];
	struct xdp_options opt = { 0 };
	socklen_t ol = sizeof(opt);
	uint64_t base = (uint64_t)qi * FC_IO_XDP_RING * FC_IO_XDP_FRAME_BYTES;
	uint64_t addr[BATCH];
	int rc;

	q->id = qi;
	rc = xsk_socket__create_shared(&q->xsk, cfg->ifname, qi, io->umem, &q->rx,
				       qi == 0 ? &q->tx : NULL, &q->fq, &q->cq, &sc);
	if (rc)
		return rc;
	q->fd = xsk_socket__fd(q->xsk);
	if ((rc = xsk_socket__update_xskmap(q->xsk, cfg->xsks_fd)))
		return rc;
	if (getsockopt(q->fd, SOL_XDP, XDP_OPTIONS, &opt, &ol) == 0 &&
	    (opt.flags & XDP_OPTIONS_ZEROCOPY))
		io->st.zerocopy = 1;
	for (uint32_t i = 0; i < FC_IO_XDP_RING; i += BATCH) {
		for (uint32_t k = 0; k < BATCH; k++)
			addr[k] = base + (uint64_t)(i + k) * FC_IO_XDP_FRAME_BYTES;
		refill(io, q, addr, BATCH);
	}
	if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, q->fd,
		      &(struct epoll_event){ .events = EPOLLIN, .data.u32 = qi }) < 0)
		return -errno;
	return 0;
}

struct fc_io_xdp *fc_io_xdp_open(const struct fc_io_xdp_cfg *cfg)
{
	struct xsk_umem_config uc = {
		.fill_size = FC_IO_XDP_RING, .comp_size = FC_IO_XDP_RING,
		.frame_size = FC_IO_XDP_FRAME_BYTES, .frame_headroom = 0,
	};
	_Static_assert(BATCH <= FC_IO_XDP_RING && FC_IO_XDP_RING % BATCH == 0, "ring batches");
	unsigned nq, max = cfg && cfg->queues_max && cfg->queues_max < FC_XDP_QUEUES_MAX ?
				   cfg->queues_max : FC_XDP_QUEUES_MAX; /* io->q[] */
	struct fc_io_xdp *io;
	uint64_t txbase;
	int rc;

	if (!cfg || !cfg->ifname || !cfg->local || cfg->xsks_fd < 0 ||
	    (cfg->local->sa_family != AF_INET && cfg->local->sa_family != AF_INET6) ||
	    cfg->local_len > sizeof(io->local)) {
		errno = EINVAL;
		return NULL;
	}
	if (!(io = calloc(1, sizeof(*io))))
		return NULL;
	io->epfd = io->nlfd = -1;
	memcpy(&io->local, cfg->local, cfg->local_len);
	io->family = cfg->local->sa_family;
	io->port = ntohs(io->family == AF_INET ? ((const struct sockaddr_in *)cfg->local)->sin_port :
			 ((const struct sockaddr_in6 *)cfg->local)->sin6_port);
	io->ifindex = cfg->ifindex;
	io->neigh.ifindex = (int)cfg->ifindex;
	io->hdr_len = fc_io_xdp_hdr_len(io->family);
	nq = rx_queues(cfg->ifname);
	io->nq = nq < max ? nq : max;
	io->st.queues = io->nq;
	if (!(io->udp = fc_io_udp_open(cfg->local, cfg->local_len,
				       cfg->udp_tx_frames ? cfg->udp_tx_frames : 256)))
		goto fail_errno;
	if ((rc = own_mac(cfg->ifname, io->mac)))
		goto fail_rc;
	io->nlfd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	io->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (io->nlfd < 0 || io->epfd < 0)
		goto fail_errno;
	setsockopt(io->nlfd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_usec = 100000 },
		   sizeof(struct timeval)); /* a dump that never ends costs 100 ms, not a hang */
	if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, fc_io_udp_fd(io->udp),
		      &(struct epoll_event){ .events = EPOLLIN, .data.u32 = UINT32_MAX }) < 0)
		goto fail_errno;
	/* UMEM: FC_IO_XDP_RING receive frames per queue, then the transmit frames */
	io->umem_bytes = ((size_t)io->nq * FC_IO_XDP_RING + FC_IO_XDP_TX_FRAMES) *
			 FC_IO_XDP_FRAME_BYTES;
	io->umem_area = mmap(NULL, io->umem_bytes, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (io->umem_area == MAP_FAILED) {
		io->umem_area = NULL;
		goto fail_errno;
	}
	if (!(io->tx_free = malloc(FC_IO_XDP_TX_FRAMES * sizeof(*io->tx_free))))
		goto fail_errno;
	txbase = (uint64_t)io->nq * FC_IO_XDP_RING * FC_IO_XDP_FRAME_BYTES;
	for (uint32_t i = 0; i < FC_IO_XDP_TX_FRAMES; i++)
		io->tx_free[io->ntx_free++] =
			txbase + (uint64_t)(FC_IO_XDP_TX_FRAMES - 1 - i) * FC_IO_XDP_FRAME_BYTES;
	if ((rc = xsk_umem__create(&io->umem, io->umem_area, io->umem_bytes, &io->q[0].fq,
				   &io->q[0].cq, &uc)))
		goto fail_rc;
	for (unsigned qi = 0; qi < io->nq; qi++) {
		if ((rc = open_queue(io, cfg, qi)))
			goto fail_rc;
	}
	return io;
fail_errno:
	rc = -errno;
fail_rc:
	fc_io_xdp_close(io);
	errno = -rc;
	return NULL;
}

void fc_io_xdp_close(struct fc_io_xdp *io)
{
	if (!io)
		return;
	for (unsigned qi = 0; qi < FC_XDP_QUEUES_MAX; qi++) {
		if (io->q[qi].xsk)
			xsk_socket__delete(io->q[qi].xsk);
	}
	if (io->umem)
		xsk_umem__delete(io->umem);
	if (io->umem_area)
		munmap(io->umem_area, io->umem_bytes);
	free(io->tx_free);
	if (io->epfd >= 0)
		close(io->epfd);
	if (io->nlfd >= 0)
		close(io->nlfd);
	fc_io_udp_close(io->udp);
	free(io);
}

int fc_io_xdp_fd(const struct fc_io_xdp *io) { return io->epfd; }

int fc_io_xdp_busy_poll(struct fc_io_xdp *io, unsigned us, unsigned budget)
{
	int rc = fc_io_busy_poll(fc_io_udp_fd(io->udp), us, 0), r;

	for (unsigned qi = 0; qi < io->nq; qi++)
		if ((r = fc_io_busy_poll(io->q[qi].fd, us, budget)) && !rc)
			rc = r;
	return rc;
}
struct fc_io_udp *fc_io_xdp_udp(struct fc_io_xdp *io) { return io->udp; }
const struct fc_io_xdp_stats *fc_io_xdp_stats(const struct fc_io_xdp *io) { return &io->st; }

void fc_io_xdp_set_rx_filter(struct fc_io_xdp *io, fc_io_udp_rx_filter_fn fn, void *ctx)
{
	io->filter = fn;
	io->filter_ctx = ctx;
	fc_io_udp_set_rx_filter(io->udp, fn, ctx);
}
