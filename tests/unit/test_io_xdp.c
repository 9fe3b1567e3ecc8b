/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The AF_XDP backend (daemon/io_xdp.h).
 *
 * Without privileges: the Ethernet / IPv4 / IPv6 / UDP headers it writes (checked
 * against checksums computed here another way) and parses (every refusal), the payload
 * room per MTU, and the neighbour cache fed with netlink messages built here (valid and
 * unusable states, other interfaces, eviction, truncation, the freshness limit), and the
 * route answers that name a peer's next hop.
 *
 * As root, in two network namespaces of its own (fxi-u-a/b-PID, a veth pair between
 * them, removed at exit): a test XDP program (tests/bpf/xsk_meta_test.bpf.c) redirects UDP
 * to the data port into the backend's AF_XDP socket with falcon_xdp's metadata in front;
 * datagrams sent from the other namespace must arrive through the AF_XDP ring (not the
 * UDP socket), with their source address, hop count, payload and xdp_marked; frames sent
 * through the backend must reach a socket in the other namespace, the first one through
 * the UDP fallback while the kernel has no neighbour entry, later ones through the AF_XDP
 * tx ring once it has. Every wait is bounded (2 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "io_xdp.h"
#include "testutil.h"
#include "xsk_meta_test.skel.h"

static int passed, failed;

#define CHECK(cond)                                                                       \
	do {                                                                              \
		if (cond) {                                                               \
			passed++;                                                         \
		} else {                                                                  \
			failed++;                                                         \
			fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                         \
	} while (0)

static const uint8_t MAC_A[6] = { 0x02, 0, 0, 0, 0, 0xa }, MAC_B[6] = { 0x02, 0, 0, 0, 0, 0xb };

/* RFC 1071 sum in 32-bit words (the backend sums 16-bit words): folded, not inverted */
static uint16_t sum32(const uint8_t *p, size_t len, uint64_t acc)
{
	size_t i = 0;

	for (; i + 4 <= len; i += 4)
		acc += (uint32_t)p[i] << 24 | (uint32_t)p[i + 1] << 16 | (uint32_t)p[i + 2] << 8 |
		       p[i + 3];
	for (; i < len; i++)
		acc += (uint64_t)p[i] << ((i & 3) == 0 ? 24 : (i & 3) == 1 ? 16 : (i & 3) == 2 ? 8 : 0);
	while (acc >> 16)
		acc = (acc & 0xFFFF) + (acc >> 16);
	return (uint16_t)acc;
}

static void sin4(struct sockaddr_in *s, const char *ip, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->sin_addr);
}

static void sin6(struct sockaddr_in6 *s, const char *ip, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin6_family = AF_INET6;
	s->sin6_port = htons(port);
	inet_pton(AF_INET6, ip, &s->sin6_addr);
}

static void test_ipv4(void)
{
	uint8_t f[256];
	struct sockaddr_in a, b, peer;
	struct fc_io_xdp_rx_hdr h;
	uint32_t hl = fc_io_xdp_hdr_len(AF_INET);

	sin4(&a, "10.1.2.3", 7470);
	sin4(&b, "10.1.2.4", 9000);
	memset(f, 0, sizeof(f));
	for (int i = 0; i < 100; i++)
		f[hl + i] = (uint8_t)(i * 7);
	CHECK(fc_io_xdp_build(f, MAC_B, MAC_A, (void *)&a, (void *)&b, 100) == (int)hl);
	CHECK(hl == 42);
	CHECK(!memcmp(f, MAC_B, 6) && !memcmp(f + 6, MAC_A, 6) && f[12] == 0x08 && f[13] == 0);
	CHECK(sum32(f + 14, 20, 0) == 0xFFFF);         /* the IPv4 header checksum holds */
	CHECK(f[14 + 8] == FC_IO_UDP_TTL);
	CHECK((f[14 + 2] << 8 | f[14 + 3]) == 128);    /* total length: 20 + 8 + 100 */
	CHECK(f[14 + 20 + 6] == 0 && f[14 + 20 + 7] == 0); /* UDP checksum 0 (RFC 768) */
	/* the receiver's view: the sender of this frame is a, on port 7470 */
	CHECK(fc_io_xdp_parse(f, hl + 100, 9000, 1, &h) == 0);
	CHECK(h.off == hl && h.len == 100 && h.ttl == FC_IO_UDP_TTL && !h.ecn_ce);
	memcpy(&peer, h.peer.bytes, sizeof(peer));
	CHECK(h.peer.len == sizeof(peer) && peer.sin_family == AF_INET &&
	      peer.sin_port == htons(7470) && peer.sin_addr.s_addr == a.sin_addr.s_addr);
	CHECK(f[h.off + 99] == (uint8_t)(99 * 7));
	/* refusals */
	CHECK(fc_io_xdp_parse(f, hl + 100, 9001, 1, &h) == -EBADMSG); /* another port */
	CHECK(fc_io_xdp_parse(f, hl + 99, 9000, 1, &h) == -EBADMSG);  /* IP length > frame */
	CHECK(fc_io_xdp_parse(f, 13, 9000, 1, &h) == -EBADMSG);
	f[14 + 6] |= 0x20; /* more fragments */
	CHECK(fc_io_xdp_parse(f, hl + 100, 9000, 1, &h) == -EBADMSG);
	f[14 + 6] &= (uint8_t)~0x20;
	f[14 + 20 + 5]--;  /* UDP length below the IP payload */
	CHECK(fc_io_xdp_parse(f, hl + 100, 9000, 1, &h) == -EBADMSG);
	f[14 + 20 + 5]++;
	f[14 + 9] = 6;     /* TCP */
	CHECK(fc_io_xdp_parse(f, hl + 100, 9000, 1, &h) == -EBADMSG);
	f[14 + 9] = 17;
	f[14 + 1] |= 3;    /* ECN CE */
	CHECK(fc_io_xdp_parse(f, hl + 100, 9000, 1, &h) == 0 && h.ecn_ce);
	/* payload too long for the IP length field */
	CHECK(fc_io_xdp_build(f, MAC_B, MAC_A, (void *)&a, (void *)&b, 65600) == -EINVAL);
}

static void test_ipv4_vlan_options(void)
{
	uint8_t f[256] = { 0 }, g[256] = { 0 };
	struct sockaddr_in a, b;
	struct fc_io_xdp_rx_hdr h;

	sin4(&a, "10.1.2.3", 1);
	sin4(&b, "10.1.2.4", 2);
	CHECK(fc_io_xdp_build(f, MAC_B, MAC_A, (void *)&a, (void *)&b, 10) == 42);
	/* one 802.1Q tag after the MACs */
	memcpy(g, f, 12);
	g[12] = 0x81, g[13] = 0x00, g[14] = 0, g[15] = 5;
	memcpy(g + 16, f + 12, 42 - 12 + 10);
	CHECK(fc_io_xdp_parse(g, 46 + 10, 2, 1, &h) == 0 && h.off == 46 && h.len == 10);
	/* IPv4 with 4 bytes of options: IHL 6 */
	memcpy(g, f, 34);
	g[14] = 0x46;
	g[16] = 0, g[17] = 20 + 4 + 8 + 10;
	memset(g + 34, 1, 4);
	memcpy(g + 38, f + 34, 8 + 10);
	CHECK(fc_io_xdp_parse(g, 14 + 24 + 8 + 10, 2, 1, &h) == 0 && h.off == 14 + 24 + 8);
	g[14] = 0x44;      /* IHL 4: no header */
	CHECK(fc_io_xdp_parse(g, 14 + 24 + 8 + 10, 2, 1, &h) == -EBADMSG);
}

static void test_ipv6(void)
{
	uint8_t f[512] = { 0 };
	struct sockaddr_in6 a, b, peer;
	struct fc_io_xdp_rx_hdr h;
	uint32_t hl = fc_io_xdp_hdr_len(AF_INET6);
	uint8_t pseudo[40] = { 0 };
	uint16_t s;

	sin6(&a, "fd00::1", 7470);
	sin6(&b, "fd00::2", 7471);
	CHECK(hl == 62);
	for (int i = 0; i < 333; i++)
		f[hl + i] = (uint8_t)(i ^ 0x5a);
	CHECK(fc_io_xdp_build(f, MAC_B, MAC_A, (void *)&a, (void *)&b, 333) == (int)hl);
	CHECK(f[12] == 0x86 && f[13] == 0xdd && (f[14] >> 4) == 6 && f[14 + 6] == 17 &&
	      f[14 + 7] == FC_IO_UDP_TTL);
	/* UDP checksum over the pseudo-header (RFC 8200 8.1), the UDP header and the payload
	 * sums to 0xFFFF (odd length: the last byte is padded) */
	memcpy(pseudo, f + 14 + 8, 32);
	pseudo[34] = (341 >> 8) & 0xff, pseudo[35] = 341 & 0xff, pseudo[39] = 17;
	s = sum32(pseudo, 40, 0);
	{
		uint8_t udp[8 + 334] = { 0 };

		memcpy(udp, f + 14 + 40, 8 + 333);
		CHECK(sum32(udp, sizeof(udp), s) == 0xFFFF);
	}
	CHECK(fc_io_xdp_parse(f, hl + 333, 7471, 3, &h) == 0 && h.off == hl && h.len == 333);
	memcpy(&peer, h.peer.bytes, sizeof(peer));
	CHECK(h.peer.len == sizeof(peer) && peer.sin6_port == htons(7470) &&
	      !memcmp(&peer.sin6_addr, &a.sin6_addr, 16) && peer.sin6_scope_id == 0);
	/* a link-local source is scoped to the interface, as recvfrom would say */
	sin6(&a, "fe80::1", 7470);
	CHECK(fc_io_xdp_build(f, MAC_B, MAC_A, (void *)&a, (void *)&b, 333) == (int)hl);
	CHECK(fc_io_xdp_parse(f, hl + 333, 7471, 3, &h) == 0);
	memcpy(&peer, h.peer.bytes, sizeof(peer));
	CHECK(peer.sin6_scope_id == 3);
	f[14 + 6] = 0; /* hop-by-hop options header: not taken */
	CHECK(fc_io_xdp_parse(f, hl + 333, 7471, 3, &h) == -EBADMSG);
	/* families must agree */
	{
		struct sockaddr_in v4;

		sin4(&v4, "10.0.0.1", 1);
		CHECK(fc_io_xdp_build(f, MAC_B, MAC_A, (void *)&a, (void *)&v4, 1) == -EINVAL);
	}
}

static void test_room(void)
{
	CHECK(fc_io_xdp_max_payload(AF_INET, 1500) == 1472);
	CHECK(fc_io_xdp_max_payload(AF_INET6, 1500) == 1452);
	/* a jumbo MTU is limited by the frame: 3840 - Ethernet - two VLAN tags - IP - UDP */
	CHECK(fc_io_xdp_max_payload(AF_INET, 9000) == FC_IO_XDP_RX_ROOM - 14 - 8 - 28);
	CHECK(fc_io_xdp_max_payload(AF_INET, 20) == 0);
}

/* ---- neighbour cache ---- */

static size_t nl_neigh(uint8_t *buf, int family, int ifindex, uint16_t state, const void *ip,
		       const uint8_t *mac)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct ndmsg *nd = NLMSG_DATA(h);
	struct rtattr *a;
	unsigned alen = family == AF_INET ? 4 : 16;

	memset(buf, 0, NLMSG_SPACE(sizeof(*nd)) + 2 * RTA_SPACE(16));
	h->nlmsg_type = RTM_NEWNEIGH;
	h->nlmsg_len = NLMSG_LENGTH(sizeof(*nd));
	nd->ndm_family = (uint8_t)family;
	nd->ndm_ifindex = ifindex;
	nd->ndm_state = state;
	a = (struct rtattr *)(buf + NLMSG_ALIGN(h->nlmsg_len));
	a->rta_type = NDA_DST;
	a->rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(RTA_DATA(a), ip, alen);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
	if (mac) {
		a = (struct rtattr *)(buf + h->nlmsg_len);
		a->rta_type = NDA_LLADDR;
		a->rta_len = RTA_LENGTH(6);
		memcpy(RTA_DATA(a), mac, 6);
		h->nlmsg_len += RTA_ALIGN(a->rta_len);
	}
	return NLMSG_ALIGN(h->nlmsg_len);
}

static void test_neigh(void)
{
	static struct fc_neigh_cache c;
	static uint8_t buf[65536];
	uint8_t ip1[4] = { 10, 0, 0, 1 }, ip2[4] = { 10, 0, 0, 2 }, ip6[16] = { 0xfd, [15] = 1 };
	uint8_t mac[6];
	size_t n = 0;
	int fresh;

	memset(&c, 0, sizeof(c));
	c.ifindex = 5;
	n += nl_neigh(buf + n, AF_INET, 5, NUD_REACHABLE, ip1, MAC_A);
	n += nl_neigh(buf + n, AF_INET, 6, NUD_REACHABLE, ip2, MAC_B);   /* another interface */
	n += nl_neigh(buf + n, AF_INET, 5, NUD_INCOMPLETE, ip2, NULL);   /* not resolved yet */
	n += nl_neigh(buf + n, AF_INET6, 5, NUD_STALE, ip6, MAC_B);
	CHECK(fc_neigh_parse(&c, buf, n, 1000) == 2);
	CHECK(fc_neigh_lookup(&c, AF_INET, ip1, mac, 1000, &fresh) == 0 && fresh &&
	      !memcmp(mac, MAC_A, 6));
	CHECK(fc_neigh_lookup(&c, AF_INET, ip2, mac, 1000, &fresh) == -ENOENT);
	CHECK(fc_neigh_lookup(&c, AF_INET6, ip6, mac, 1000, &fresh) == 0 && !memcmp(mac, MAC_B, 6));
	/* older than the TTL: still answered, but not fresh (the backend re-reads the table) */
	CHECK(fc_neigh_lookup(&c, AF_INET, ip1, mac, 1000 + FC_IO_XDP_NEIGH_TTL_NS, &fresh) == 0 &&
	      !fresh);
	/* the kernel says it failed: the address is unknown again */
	n = nl_neigh(buf, AF_INET, 5, NUD_FAILED, ip1, NULL);
	CHECK(fc_neigh_parse(&c, buf, n, 2000) == 0);
	CHECK(fc_neigh_lookup(&c, AF_INET, ip1, mac, 2000, &fresh) == -ENOENT);
	/* a new MAC replaces the old one */
	n = nl_neigh(buf, AF_INET, 5, NUD_PERMANENT, ip1, MAC_B);
	CHECK(fc_neigh_parse(&c, buf, n, 3000) == 1);
	CHECK(fc_neigh_lookup(&c, AF_INET, ip1, mac, 3000, &fresh) == 0 && !memcmp(mac, MAC_B, 6));
	/* full: the oldest entry makes room (ip6, read at 1000) */
	n = 0;
	for (unsigned i = 0; i < FC_IO_XDP_NEIGH_MAX - 1; i++) {
		uint8_t ip[4] = { 10, 1, (uint8_t)(i >> 8), (uint8_t)i };

		n += nl_neigh(buf + n, AF_INET, 5, NUD_REACHABLE, ip, MAC_A);
	}
	CHECK(fc_neigh_parse(&c, buf, n, 4000) == (int)FC_IO_XDP_NEIGH_MAX - 1);
	CHECK(c.n == FC_IO_XDP_NEIGH_MAX);
	CHECK(fc_neigh_lookup(&c, AF_INET6, ip6, mac, 4000, &fresh) == -ENOENT);
	CHECK(fc_neigh_lookup(&c, AF_INET, ip1, mac, 4000, &fresh) == 0);
	/* a truncated message: refused, what came before it kept */
	n = nl_neigh(buf, AF_INET, 5, NUD_REACHABLE, ip2, MAC_A);
	n += nl_neigh(buf + n, AF_INET, 5, NUD_REACHABLE, ip1, MAC_A);
	CHECK(fc_neigh_parse(&c, buf, n - 20, 5000) == -EBADMSG);
	CHECK(fc_neigh_lookup(&c, AF_INET, ip2, mac, 5000, &fresh) == 0);
}

static size_t nl_route(uint8_t *buf, int family, int type, const void *gw, int oif)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct rtmsg *rt = NLMSG_DATA(h);
	unsigned alen = family == AF_INET ? 4 : 16;
	struct rtattr *a;

	memset(buf, 0, 256);
	h->nlmsg_type = (uint16_t)type;
	h->nlmsg_len = NLMSG_LENGTH(sizeof(*rt));
	rt->rtm_family = (uint8_t)family;
	if (gw) {
		a = (struct rtattr *)(buf + NLMSG_ALIGN(h->nlmsg_len));
		a->rta_type = RTA_GATEWAY;
		a->rta_len = (unsigned short)RTA_LENGTH(alen);
		memcpy(RTA_DATA(a), gw, alen);
		h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
	}
	if (oif) {
		a = (struct rtattr *)(buf + NLMSG_ALIGN(h->nlmsg_len));
		a->rta_type = RTA_OIF;
		a->rta_len = RTA_LENGTH(sizeof(int));
		memcpy(RTA_DATA(a), &oif, sizeof(int));
		h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
	}
	return h->nlmsg_len;
}

static void test_route(void)
{
	uint8_t buf[256], via[16] = { 0 }, gw4[4] = { 10, 0, 0, 254 }, gw6[16] = { 0xfe, 0x80, [15] = 9 };
	int oif = -1;
	size_t n;

	n = nl_route(buf, AF_INET, RTM_NEWROUTE, gw4, 7);    /* behind a router */
	CHECK(fc_route_parse(buf, n, AF_INET, via, &oif) == 1 && !memcmp(via, gw4, 4) && oif == 7);
	n = nl_route(buf, AF_INET, RTM_NEWROUTE, NULL, 3);   /* on link */
	CHECK(fc_route_parse(buf, n, AF_INET, via, &oif) == 0 && oif == 3);
	n = nl_route(buf, AF_INET6, RTM_NEWROUTE, gw6, 0);
	CHECK(fc_route_parse(buf, n, AF_INET6, via, &oif) == 1 && !memcmp(via, gw6, 16) && oif == 0);
	CHECK(fc_route_parse(buf, n, AF_INET, via, &oif) == -EBADMSG);   /* another family */
	n = nl_route(buf, AF_INET, NLMSG_ERROR, NULL, 0);                /* no route */
	CHECK(fc_route_parse(buf, n, AF_INET, via, &oif) == -ENETUNREACH);
	n = nl_route(buf, AF_INET, RTM_NEWROUTE, gw4, 7);
	CHECK(fc_route_parse(buf, n - 9, AF_INET, via, &oif) == -EBADMSG); /* truncated */
}

/* ---- a real AF_XDP socket on a veth pair (root) ---- */

static char ns_a[32], ns_b[32];
static const char *IF_A = "fxiua", *IF_B = "fxiub";

static void ns_down(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null",
		 ns_a, ns_b);
	if (system(cmd) < 0)
		perror("ip netns del");
}

static int ns_enter(const char *ns)
{
	char path[64];
	int fd, rc;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	rc = setns(fd, CLONE_NEWNET) ? -errno : 0;
	close(fd);
	return rc;
}

static struct {
	unsigned n;
	struct fc_frame f[8];
	uint8_t bytes[8][64];
	uint8_t is_umem[8];
} got;

/* the rx filter sees what the backend hands the node; the node gets nothing */
static unsigned capture(void *ctx, struct fc_frame *f, unsigned n, unsigned cap)
{
	(void)ctx;
	(void)cap;
	for (unsigned i = 0; i < n && got.n < 8; i++) {
		got.f[got.n] = f[i];
		memcpy(got.bytes[got.n], f[i].buf, f[i].len < 64 ? f[i].len : 64);
		got.n++;
	}
	return 0;
}

static void test_afxdp(void)
{
	struct xsk_meta_test *skel = NULL;
	struct fc_io_xdp *io = NULL;
	struct sockaddr_in la, lb, from;
	struct fc_peer_addr pb;
	struct fc_io_xdp_cfg xc;
	int sb = -1, rc, ok;
	char cmd[512];
	uint64_t t0;
	unsigned ifindex;

	snprintf(ns_a, sizeof(ns_a), "fxi-u-a-%d", (int)getpid());
	snprintf(ns_b, sizeof(ns_b), "fxi-u-b-%d", (int)getpid());
	atexit(ns_down);
	snprintf(cmd, sizeof(cmd),
		 "ip netns add %s && ip netns add %s && "
		 "ip link add %s netns %s type veth peer name %s netns %s && "
		 "ip -n %s link set %s up && ip -n %s link set %s up && "
		 "ip -n %s addr add 10.99.7.1/24 dev %s && ip -n %s addr add 10.99.7.2/24 dev %s",
		 ns_a, ns_b, IF_A, ns_a, IF_B, ns_b, ns_a, IF_A, ns_b, IF_B, ns_a, IF_A, ns_b, IF_B);
	CHECK(system(cmd) == 0);
	/* the peer's socket lives in b, everything else in a */
	CHECK(ns_enter(ns_b) == 0);
	sin4(&lb, "10.99.7.2", 7471);
	sb = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(sb >= 0 && bind(sb, (struct sockaddr *)&lb, sizeof(lb)) == 0);
	CHECK(ns_enter(ns_a) == 0);
	ifindex = if_nametoindex(IF_A);
	CHECK(ifindex > 0);
	skel = xsk_meta_test__open();
	CHECK(skel != NULL);
	if (!skel)
		goto out;
	skel->rodata->test_port = 7470;
	skel->rodata->test_meta_flags = FC_XDP_META_MARKED;
	CHECK(xsk_meta_test__load(skel) == 0);
	rc = bpf_xdp_attach((int)ifindex, bpf_program__fd(skel->progs.xsk_meta_test),
			    XDP_FLAGS_DRV_MODE, NULL);
	CHECK(rc == 0);
	if (rc)
		goto out;
	sin4(&la, "10.99.7.1", 7470);
	xc = (struct fc_io_xdp_cfg){ .ifname = IF_A, .ifindex = ifindex,
				     .local = (struct sockaddr *)&la, .local_len = sizeof(la),
				     .xsks_fd = bpf_map__fd(skel->maps.test_xsks),
				     .udp_tx_frames = 8 };
	io = fc_io_xdp_open(&xc);
	CHECK(io != NULL);
	if (!io) {
		fprintf(stderr, "fc_io_xdp_open: %s\n", strerror(errno));
		goto out;
	}
	CHECK(fc_io_xdp_stats(io)->queues == 1);
	fc_io_xdp_set_rx_filter(io, capture, NULL);

	/* transmit: a's kernel knows no neighbour yet, so the first frame goes through the
	 * UDP socket (and makes the kernel resolve b); later ones through the AF_XDP ring */
	CHECK(fc_io_udp_peer_addr((struct sockaddr *)&lb, sizeof(lb), &pb) == 0);
	t0 = fc_test_now_ns();
	ok = 0;
	{
		unsigned bad = 0, sent = 0, recvd = 0;

		for (unsigned k = 0; k < 200 && fc_test_now_ns() - t0 < 2000000000ull && !ok; k++) {
			struct fc_frame f;
			uint8_t rb[64];
			struct pollfd p = { .fd = sb, .events = POLLIN };
			socklen_t fl = sizeof(from);

			if (fc_io_xdp_ops.tx_alloc(io, &f, 1) != 1)
				break;
			bad += f.cap != FC_IO_XDP_FRAME_BYTES - 42;
			snprintf((char *)f.buf, 16, "frame %03u", k);
			f.len = 10;
			f.peer = &pb;
			sent += fc_io_xdp_ops.tx_send(io, &f, 1);
			if (poll(&p, 1, 200) != 1)
				continue;
			recvd++;
			bad += recvfrom(sb, rb, sizeof(rb), 0, (struct sockaddr *)&from, &fl) != 10 ||
			       memcmp(rb, f.buf, 10) || from.sin_port != htons(7470) ||
			       from.sin_addr.s_addr != la.sin_addr.s_addr;
			ok = fc_io_xdp_stats(io)->tx_frames > 0;
			if (!ok)
				usleep(20000); /* the kernel resolves b meanwhile: bounded by the loop */
		}
		/* every frame taken, and each that arrived came whole from a's data port */
		CHECK(bad == 0 && sent == recvd && sent >= 2);
	}
	fprintf(stderr, "tx: %llu fallback, %llu frames, %llu neighbour reads, %llu misses, %llu kicks %llu kick errors %llu completions\n",
		(unsigned long long)fc_io_xdp_stats(io)->tx_fallback,
		(unsigned long long)fc_io_xdp_stats(io)->tx_frames,
		(unsigned long long)fc_io_xdp_stats(io)->neigh_reads,
		(unsigned long long)fc_io_xdp_stats(io)->neigh_misses,
		(unsigned long long)fc_io_xdp_stats(io)->tx_kicks,
		(unsigned long long)fc_io_xdp_stats(io)->tx_kick_errors,
		(unsigned long long)fc_io_xdp_stats(io)->tx_completions);
	CHECK(fc_io_xdp_stats(io)->tx_fallback >= 1);  /* the first one, neighbour unknown */
	CHECK(ok && fc_io_xdp_stats(io)->tx_frames == 1);
	CHECK(fc_io_xdp_stats(io)->neigh_misses >= 1 && fc_io_xdp_stats(io)->neigh_reads >= 2);

	/* receive: b sends to a's data port; XDP redirects it into the AF_XDP socket */
	for (unsigned k = 0; k < 3; k++) {
		char msg[32];

		snprintf(msg, sizeof(msg), "datagram %u", k);
		CHECK(sendto(sb, msg, strlen(msg), 0, (struct sockaddr *)&la, sizeof(la)) ==
		      (ssize_t)strlen(msg));
	}
	t0 = fc_test_now_ns();
	while (got.n < 3 && fc_test_now_ns() - t0 < 2000000000ull) {
		struct pollfd p = { .fd = fc_io_xdp_fd(io), .events = POLLIN };

		if (poll(&p, 1, 50) == 1)
			CHECK(fc_io_xdp_rx(io, NULL, fc_test_now_ns(), 64) >= 0);
	}
	CHECK(got.n == 3);
	CHECK(fc_io_xdp_stats(io)->rx_frames == 3 && fc_io_xdp_stats(io)->rx_udp == 0);
	CHECK(fc_io_xdp_stats(io)->rx_marked == 3 && fc_io_xdp_stats(io)->rx_no_meta == 0);
	for (unsigned k = 0; k < got.n && k < 3; k++) {
		struct sockaddr_in src;
		char msg[32];

		snprintf(msg, sizeof(msg), "datagram %u", k);
		memcpy(&src, got.f[k].peer->bytes, sizeof(src));
		CHECK(got.f[k].len == strlen(msg) && !memcmp(got.bytes[k], msg, strlen(msg)));
		CHECK(src.sin_addr.s_addr == lb.sin_addr.s_addr && src.sin_port == htons(7471));
		CHECK(got.f[k].meta.xdp_marked == 1 && got.f[k].meta.hops == 0);
		/* no copy: the node's bytes are the UMEM frame's, right after the headers */
		CHECK(got.f[k].io_handle % FC_IO_XDP_FRAME_BYTES == FC_IO_XDP_HEADROOM);
	}
	/* not to the data port: XDP passes it, the backend sees nothing */
	{
		struct sockaddr_in other = la;

		other.sin_port = htons(7999);
		CHECK(sendto(sb, "x", 1, 0, (struct sockaddr *)&other, sizeof(other)) == 1);
		usleep(50000);
		CHECK(fc_io_xdp_rx(io, NULL, fc_test_now_ns(), 64) == 0 && got.n == 3);
	}
out:
	fc_io_xdp_close(io);
	if (skel) {
		bpf_xdp_detach((int)if_nametoindex(IF_A), XDP_FLAGS_DRV_MODE, NULL);
		xsk_meta_test__destroy(skel);
	}
	if (sb >= 0)
		close(sb);
	ns_down();
}

int main(void)
{
	test_ipv4();
	test_ipv4_vlan_options();
	test_ipv6();
	test_room();
	test_neigh();
	test_route();
	if (geteuid() == 0)
		test_afxdp();
	else
		printf("test_io_xdp: the AF_XDP part needs root (namespaces, XDP): not run\n");
	printf("test_io_xdp: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
