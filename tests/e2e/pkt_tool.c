/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pkt_tool - raw packets for the security tests (tests/e2e/test_security.sh). Needs root
 * (AF_PACKET, raw sockets). IPv4 only. Every loop is bounded by a count and every wait by
 * a time; each sending mode prints how many datagrams it sent.
 *
 *   pkt_tool capture IFACE PORT COUNT MS FILE [dport] [prefix HEX]
 *       UDP datagrams to or from PORT (dport: only to it; prefix: only those whose UDP
 *       payload starts with HEX) seen on IFACE, until COUNT or MS ms, into FILE (pcap,
 *       LINKTYPE_RAW: one IPv4 packet per datagram; a GSO or GRO super-packet is split
 *       into its datagrams, as they would travel on a wire). On loopback only the
 *       received copy of each packet is kept.
 *   pkt_tool grep FILE TEXT                 how many captured datagrams contain TEXT
 *   pkt_tool list FILE                      one line per datagram
 *   pkt_tool resend FILE INDEX [DELAY_MS [COUNT]]
 *       after DELAY_MS, send datagram INDEX (negative: from the end; "big": the first of
 *       the largest) COUNT times as it was captured, its source address and port spoofed
 *       (raw socket, IP_HDRINCL; UDP checksum recomputed)
 *   pkt_tool forge-icv FILE INDEX DST PORT N [PID]  the datagram with a random ICV, N times
 *   pkt_tool forge-spi FILE INDEX DST PORT N [PID]  the datagram under N SPIs never issued
 *   pkt_tool truncate FILE INDEX DST PORT [PID]     the datagram cut at every length 0 .. len-1
 *       (with PID: paced as random's)
 *   pkt_tool random DST PORT N SEED [FILE|- INDEX [PID]]
 *       N random datagrams; with a captured one as template (not "-"), a quarter each are random
 *       bytes, a valid PSP first word with random rest, the real header (SPI too) with a
 *       random rest, and the template cut short. With PID: paced so that the receive
 *       queue of PORT in that process's network namespace stays below RCVQ_PACE_BYTES
 *       (read from /proc/PID/net/udp), so the kernel drops none of them.
 *   pkt_tool send DST PORT TEXT LEN COUNT   TEXT padded with zeros to LEN bytes, COUNT times
 *   pkt_tool drops PID PORT                 the kernel's drop count of the UDP socket on
 *                                           PORT in the network namespace of PID
 *
 * DST is an IPv4 address; forged datagrams go from an ordinary UDP socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if_arp.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../testutil.h"

#define PKT_MAX 65536u
#define CAP_MAX 100000u        /* datagrams in one capture file */
#define BATCH 64u
#define RCVQ_PACE_BYTES (128u << 10)
#define PACE_WAIT_MAX_NS (5ull * 1000000000ull) /* give up pacing after 5 s of no room */
#define PSP_HDR 16u
#define PSP_ICV 16u

struct dgram {
	uint32_t len;     /* of the IPv4 packet */
	uint8_t *ip;      /* IPv4 header, UDP header, payload */
};

static struct dgram caps[CAP_MAX];
static unsigned ncaps;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t now_ns(void) { return fc_test_now_ns(); }
static uint64_t rnd(void) { return fc_test_rand(&rng); }

static void rnd_fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* ---- IPv4 / UDP ---- */

static unsigned ihl_of(const uint8_t *ip) { return (ip[0] & 0xFu) * 4u; }

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)~s;
}

/* Fix the IPv4 total length, header checksum, UDP length and checksum of a datagram
 * whose UDP payload is plen bytes. */
static void ip_udp_fix(uint8_t *ip, uint32_t plen)
{
	unsigned ihl = ihl_of(ip);
	uint8_t *u = ip + ihl;
	uint16_t tot = (uint16_t)(ihl + 8 + plen), ul = (uint16_t)(8 + plen), c;
	uint32_t s;

	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[10] = ip[11] = 0;
	c = fold(sum16(ip, ihl, 0));
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	u[4] = (uint8_t)(ul >> 8);
	u[5] = (uint8_t)ul;
	u[6] = u[7] = 0;
	s = sum16(ip + 12, 8, 0) + IPPROTO_UDP + ul; /* pseudo header */
	c = fold(sum16(u, ul, s));
	if (!c)
		c = 0xFFFF;
	u[6] = (uint8_t)(c >> 8);
	u[7] = (uint8_t)c;
}

static uint16_t sport_of(const uint8_t *ip) { const uint8_t *u = ip + ihl_of(ip); return (uint16_t)(u[0] << 8 | u[1]); }
static uint16_t dport_of(const uint8_t *ip) { const uint8_t *u = ip + ihl_of(ip); return (uint16_t)(u[2] << 8 | u[3]); }
static const uint8_t *payload_of(const uint8_t *ip) { return ip + ihl_of(ip) + 8; }
static uint32_t plen_of(const struct dgram *d) { return d->len - ihl_of(d->ip) - 8; }

/* ---- pcap (LINKTYPE_RAW) ---- */

struct pcap_hdr {
	uint32_t magic;
	uint16_t major, minor;
	int32_t zone;
	uint32_t sigfigs, snaplen, linktype;
};

struct pcap_rec {
	uint32_t sec, usec, caplen, len;
};

static void pcap_write(FILE *f, const uint8_t *ip, uint32_t len)
{
	struct timespec ts;
	struct pcap_rec r;

	clock_gettime(CLOCK_REALTIME, &ts);
	r = (struct pcap_rec){ (uint32_t)ts.tv_sec, (uint32_t)(ts.tv_nsec / 1000), len, len };
	if (fwrite(&r, sizeof(r), 1, f) != 1 || fwrite(ip, len, 1, f) != 1)
		die("write");
}

static void pcap_read(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct pcap_hdr h;
	struct pcap_rec r;

	if (!f)
		die(path);
	if (fread(&h, sizeof(h), 1, f) != 1 || h.magic != 0xa1b2c3d4u || h.linktype != 101) {
		fprintf(stderr, "pkt_tool: %s: not a raw-IP pcap file\n", path);
		exit(1);
	}
	while (ncaps < CAP_MAX && fread(&r, sizeof(r), 1, f) == 1) {
		struct dgram *d = &caps[ncaps];

		if (r.caplen > PKT_MAX || r.caplen < 28 || !(d->ip = malloc(r.caplen)) ||
		    fread(d->ip, r.caplen, 1, f) != 1) {
			fprintf(stderr, "pkt_tool: %s: a bad record\n", path);
			exit(1);
		}
		d->len = r.caplen;
		if ((d->ip[0] >> 4) != 4 || d->ip[9] != IPPROTO_UDP || ihl_of(d->ip) + 8 > d->len)
			continue; /* not ours: skip */
		ncaps++;
	}
	fclose(f);
}

/* "big": the first of the largest; a negative index counts from the end. */
static struct dgram *pick(const char *sel)
{
	long i;

	if (!ncaps) {
		fprintf(stderr, "pkt_tool: the capture holds no datagram\n");
		exit(1);
	}
	if (!strcmp(sel, "big")) {
		unsigned best = 0;

		for (unsigned k = 1; k < ncaps; k++)
			if (caps[k].len > caps[best].len)
				best = k;
		return &caps[best];
	}
	i = strtol(sel, NULL, 10);
	if (i < 0)
		i += (long)ncaps;
	if (i < 0 || i >= (long)ncaps) {
		fprintf(stderr, "pkt_tool: no datagram %s of %u\n", sel, ncaps);
		exit(1);
	}
	return &caps[i];
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (s[0] && s[1] && n < cap) {
		int hi = hexval(s[0]), lo = hexval(s[1]);

		if (hi < 0 || lo < 0) {
			fprintf(stderr, "pkt_tool: %s: not hex\n", s);
			exit(2);
		}
		out[n++] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	return n;
}

/* ---- capture ---- */

static int cmd_capture(int argc, char **argv)
{
	const char *ifname = argv[2], *path = argv[6];
	unsigned port = (unsigned)atoi(argv[3]), want = (unsigned)atoi(argv[4]), got = 0;
	uint64_t deadline = now_ns() + (uint64_t)atoll(argv[5]) * 1000000ull, bytes = 0;
	int only_dport = 0, fd, one = 1, loopback;
	uint8_t prefix[64], *buf = malloc(PKT_MAX + sizeof(struct virtio_net_hdr));
	size_t nprefix = 0;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP) };
	struct pcap_hdr ph = { 0xa1b2c3d4u, 2, 4, 0, 0, PKT_MAX, 101 };
	struct ifreq ifr = { 0 };
	FILE *f;

	for (int i = 7; i < argc; i++) {
		if (!strcmp(argv[i], "dport"))
			only_dport = 1;
		else if (!strcmp(argv[i], "prefix") && i + 1 < argc)
			nprefix = unhex(argv[++i], prefix, sizeof(prefix));
	}
	if (want > CAP_MAX)
		want = CAP_MAX;
	if (!buf)
		die("malloc");
	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP)); /* VNET_HDR needs SOCK_RAW */
	if (fd < 0)
		die("AF_PACKET socket");
	/* a virtio header in front of each packet says whether it is a GSO super-packet */
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)))
		die("PACKET_VNET_HDR");
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr))
		die(ifname);
	loopback = !!(ifr.ifr_flags & IFF_LOOPBACK);
	if (!(sll.sll_ifindex = (int)if_nametoindex(ifname)))
		die(ifname);
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		die("bind AF_PACKET");
	if (!(f = fopen(path, "wb")) || fwrite(&ph, sizeof(ph), 1, f) != 1)
		die(path);
	fflush(f);
	printf("capturing on %s, UDP port %u%s\n", ifname, port, only_dport ? " (to it)" : "");
	fflush(stdout);
	while (got < want) {
		uint64_t now = now_ns();
		struct pollfd pfd = { fd, POLLIN, 0 };
		struct sockaddr_ll from;
		socklen_t flen = sizeof(from);
		struct virtio_net_hdr vh;
		uint8_t *ip;
		unsigned ihl, seg, ll;
		uint32_t plen;
		ssize_t n;

		if (now >= deadline)
			break;
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000ull) + 1) <= 0)
			continue;
		n = recvfrom(fd, buf, PKT_MAX + sizeof(vh), MSG_DONTWAIT, (struct sockaddr *)&from,
			     &flen);
		if (n < (ssize_t)(sizeof(vh) + 28))
			continue;
		if (loopback && from.sll_pkttype == PACKET_OUTGOING)
			continue; /* lo shows each packet twice */
		memcpy(&vh, buf, sizeof(vh));
		/* the link-layer header: Ethernet on veth and on lo, none on a tun */
		ll = from.sll_hatype == ARPHRD_ETHER || from.sll_hatype == ARPHRD_LOOPBACK ? 14 : 0;
		ip = buf + sizeof(vh) + ll;
		n -= (ssize_t)(sizeof(vh) + ll);
		if (n < 28)
			continue;
		ihl = ihl_of(ip);
		if ((ip[0] >> 4) != 4 || ip[9] != IPPROTO_UDP || ihl < 20 || (ssize_t)(ihl + 8) > n)
			continue;
		if (dport_of(ip) != port && (only_dport || sport_of(ip) != port))
			continue;
		plen = (uint32_t)n - ihl - 8;
		seg = plen;
		if (vh.gso_type != VIRTIO_NET_HDR_GSO_NONE && vh.gso_size && vh.gso_size < plen)
			seg = vh.gso_size;
		/* each datagram of a super-packet on its own, with its own headers */
		for (uint32_t off = 0; got < want && (off < plen || (!plen && !off)); off += seg) {
			uint32_t k = plen - off < seg ? plen - off : seg;
			uint8_t one_dg[PKT_MAX];

			if (nprefix && (k < nprefix || memcmp(ip + ihl + 8 + off, prefix, nprefix)))
				continue;
			memcpy(one_dg, ip, ihl + 8);
			memcpy(one_dg + ihl + 8, ip + ihl + 8 + off, k);
			ip_udp_fix(one_dg, k);
			pcap_write(f, one_dg, ihl + 8 + k);
			got++;
			bytes += k;
			if (!plen)
				break;
		}
	}
	fclose(f);
	close(fd);
	free(buf);
	printf("captured %u datagrams, %llu bytes of UDP payload\n", got, (unsigned long long)bytes);
	return 0;
}

/* ---- search ---- */

static int cmd_grep(const char *path, const char *text)
{
	size_t tl = strlen(text);
	unsigned hits = 0;

	pcap_read(path);
	for (unsigned i = 0; i < ncaps; i++) {
		const uint8_t *p = payload_of(caps[i].ip);
		uint32_t n = plen_of(&caps[i]);

		if (tl && n >= tl && memmem(p, n, text, tl))
			hits++;
	}
	printf("%u of %u datagrams contain \"%s\"\n", hits, ncaps, text);
	return 0;
}

static int cmd_list(const char *path)
{
	pcap_read(path);
	for (unsigned i = 0; i < ncaps; i++) {
		const uint8_t *ip = caps[i].ip, *p = payload_of(ip);
		uint32_t n = plen_of(&caps[i]);
		char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, ip + 12, s, sizeof(s));
		inet_ntop(AF_INET, ip + 16, d, sizeof(d));
		printf("%u %s:%u > %s:%u len %u", i, s, sport_of(ip), d, dport_of(ip), n);
		if (n >= PSP_HDR)
			printf(" hdr %02x%02x%02x%02x spi %02x%02x%02x%02x", p[0], p[1], p[2], p[3],
			       p[4], p[5], p[6], p[7]);
		putchar('\n');
	}
	return 0;
}

/* ---- sending ---- */

static int raw_socket(void)
{
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW); /* IP_HDRINCL implied */
	int one = 1;

	if (fd < 0)
		die("raw socket");
	if (setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one)))
		die("IP_HDRINCL");
	return fd;
}

static int cmd_resend(int argc, char **argv)
{
	unsigned delay_ms = argc > 4 ? (unsigned)atoi(argv[4]) : 0;
	unsigned count = argc > 5 ? (unsigned)atoi(argv[5]) : 1, sent = 0;
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct dgram *d;
	char s[INET_ADDRSTRLEN], t[INET_ADDRSTRLEN];
	int fd;

	pcap_read(argv[2]);
	d = pick(argv[3]);
	fd = raw_socket();
	ip_udp_fix(d->ip, plen_of(d));
	memcpy(&to.sin_addr, d->ip + 16, 4);
	if (delay_ms)
		usleep(delay_ms * 1000u);
	for (unsigned i = 0; i < count; i++)
		if (sendto(fd, d->ip, d->len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)d->len)
			sent++;
	inet_ntop(AF_INET, d->ip + 12, s, sizeof(s));
	inet_ntop(AF_INET, d->ip + 16, t, sizeof(t));
	printf("resent %u of %u (%u B datagram, source %s:%u spoofed, to %s:%u)\n", sent, count,
	       plen_of(d), s, sport_of(d->ip), t, dport_of(d->ip));
	close(fd);
	return sent == count ? 0 : 1;
}

static int udp_to(const char *dst, const char *port)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), big = 4 << 20;

	if (fd < 0)
		die("socket");
	if (inet_pton(AF_INET, dst, &to.sin_addr) != 1) {
		fprintf(stderr, "pkt_tool: %s: not an IPv4 address\n", dst);
		exit(2);
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)))
		die("connect");
	return fd;
}

/* Send one datagram; on a full send buffer wait a little (bounded). 1 sent, 0 not. */
static int send_one(int fd, const void *p, size_t n)
{
	for (int tries = 0; tries < 1000; tries++) {
		if (send(fd, p, n, 0) == (ssize_t)n)
			return 1;
		if (errno != ENOBUFS && errno != EAGAIN)
			return 0;
		usleep(100);
	}
	return 0;
}

/* The receive queue (bytes) and drops of the UDP socket on port in the network namespace
 * of pid; -1 if not found. */
static long rcvq_of(const char *pid, unsigned port, unsigned long *drops)
{
	char path[64], line[512];
	long q = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/net/udp", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned lport, tx, rx;
		char *colon = strchr(line, ':');

		/* "sl: local_addr:port rem tx st tx_queue:rx_queue ... drops" */
		if (!colon || sscanf(colon + 1, " %*x:%x %*x:%*x %*x %x:%x", &lport, &tx, &rx) != 3 ||
		    lport != port)
			continue;
		q = rx;
		if (drops) { /* the last field */
			char *last;

			line[strcspn(line, "\n")] = 0;
			last = strrchr(line, ' ');
			*drops = last ? strtoul(last + 1, NULL, 10) : 0;
		}
		break;
	}
	fclose(f);
	return q;
}

/* With pid: wait until the receive queue of port in pid's network namespace is below
 * RCVQ_PACE_BYTES (at most PACE_WAIT_MAX_NS), so the kernel drops nothing of what follows.
 * Returns the number of waits. */
static unsigned long pace(const char *pid, unsigned port)
{
	uint64_t w0 = now_ns();
	unsigned long n = 0;

	while (pid && rcvq_of(pid, port, NULL) > (long)RCVQ_PACE_BYTES &&
	       now_ns() - w0 < PACE_WAIT_MAX_NS) {
		n++;
		usleep(50);
	}
	return n;
}

static int cmd_forge(int argc, char **argv)
{
	const char *mode = argv[1];
	int trunc = !strcmp(mode, "truncate");
	/* the last, optional argument: the receiver's pid, to pace on its queue */
	const char *pid = argc > (trunc ? 6 : 7) ? argv[trunc ? 6 : 7] : NULL;
	unsigned port = (unsigned)atoi(argv[5]);
	struct dgram *d;
	uint8_t buf[PKT_MAX];
	uint32_t n;
	unsigned count, sent = 0;
	int fd;

	if (argc < 6)
		return 2;
	pcap_read(argv[2]);
	d = pick(argv[3]);
	fd = udp_to(argv[4], argv[5]);
	n = plen_of(d);
	memcpy(buf, payload_of(d->ip), n);
	rng ^= now_ns();
	if (n < PSP_HDR + PSP_ICV + 4) {
		fprintf(stderr, "pkt_tool: a %u B datagram is no PSP packet\n", n);
		return 1;
	}
	if (trunc) {
		count = n;
		for (uint32_t len = 0; len < n; len++) {
			if (len % 64 == 0)
				pace(pid, port);
			sent += (unsigned)send_one(fd, buf, len);
		}
		printf("sent %u truncated copies of a %u B datagram (every length 0 .. %u)\n", sent,
		       n, n - 1);
		return sent == count ? 0 : 1;
	}
	count = argc > 6 ? (unsigned)atoi(argv[6]) : 1;
	for (unsigned i = 0; i < count; i++) {
		if (!strcmp(mode, "forge-icv")) {
			uint8_t icv[PSP_ICV];

			do
				rnd_fill(icv, sizeof(icv));
			while (!memcmp(icv, payload_of(d->ip) + n - PSP_ICV, PSP_ICV));
			memcpy(buf + n - PSP_ICV, icv, PSP_ICV);
		} else if (!strcmp(mode, "forge-spi")) {
			uint32_t spi, orig;

			memcpy(&orig, payload_of(d->ip) + 4, 4);
			orig = ntohl(orig);
			/* never issued: SPI 0, a generation not reached yet, or (the same
			 * generation) a peer slot past any the receiver has (0x100 and up) */
			if (i == 0)
				spi = 0;
			else if (i % 2)
				spi = (orig ^ 0x40000000u) | 0x100u; /* generation bits changed */
			else
				spi = (orig & 0xFFFF0000u) | (0x100u + (i % 0xFE00u));
			spi = htonl(spi);
			memcpy(buf + 4, &spi, 4);
		} else {
			fprintf(stderr, "pkt_tool: unknown mode %s\n", mode);
			return 2;
		}
		if (i % 64 == 0)
			pace(pid, port);
		sent += (unsigned)send_one(fd, buf, n);
	}
	printf("sent %u %s datagrams (%u B)\n", sent,
	       !strcmp(mode, "forge-icv") ? "random-ICV" : "wrong-SPI", n);
	return sent == count ? 0 : 1;
}

static int cmd_random(int argc, char **argv)
{
	unsigned port = (unsigned)atoi(argv[3]);
	unsigned long count = strtoul(argv[4], NULL, 10), sent = 0, paced = 0;
	const char *pid = argc > 8 ? argv[8] : NULL;
	struct dgram *tmpl = NULL;
	uint64_t t0 = now_ns();
	int fd = udp_to(argv[2], argv[3]);
	static uint8_t bufs[BATCH][PKT_MAX];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];

	rng ^= strtoull(argv[5], NULL, 0) * 0x9E3779B97F4A7C15ull + 1;
	if (argc > 7 && strcmp(argv[6], "-")) {
		pcap_read(argv[6]);
		tmpl = pick(argv[7]);
	}
	while (sent < count) {
		unsigned k = count - sent < BATCH ? (unsigned)(count - sent) : BATCH, done = 0;

		for (unsigned i = 0; i < k; i++) {
			unsigned cls = tmpl ? (unsigned)(rnd() & 3) : 0, len;
			uint8_t *b = bufs[i];

			len = (unsigned)(rnd() % 1500);
			rnd_fill(b, len);
			if (cls == 1 && len >= 4) { /* a valid first word: the SPI decides */
				memcpy(b, payload_of(tmpl->ip), 4);
			} else if (cls == 2 && len >= PSP_HDR) { /* a real SPI: the ICV decides */
				memcpy(b, payload_of(tmpl->ip), 8);
			} else if (cls == 3) { /* the real packet, cut short */
				len = (unsigned)(rnd() % plen_of(tmpl)); /* < PKT_MAX */
				memcpy(b, payload_of(tmpl->ip), len);
			}
			iov[i] = (struct iovec){ b, len };
			m[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
		}
		paced += pace(pid, port);
		for (int tries = 0; done < k && tries < 1000; tries++) {
			int rc = sendmmsg(fd, m + done, k - done, 0);

			if (rc > 0)
				done += (unsigned)rc;
			else if (errno == ENOBUFS || errno == EAGAIN)
				usleep(100);
			else
				die("sendmmsg");
		}
		sent += done;
		if (done < k)
			break;
	}
	printf("sent %lu random datagrams in %.2f s%s (paced %lu times)\n", sent,
	       (double)(now_ns() - t0) / 1e9, tmpl ? ", a quarter each built on the template" : "",
	       paced);
	return sent == count ? 0 : 1;
}

static int cmd_drops(const char *pid, const char *port)
{
	unsigned long drops = 0;
	long q = rcvq_of(pid, (unsigned)atoi(port), &drops);

	if (q < 0)
		return 1;
	printf("%lu\n", drops);
	return 0;
}

static int cmd_send(char **argv)
{
	int fd = udp_to(argv[2], argv[3]);
	size_t len = (size_t)atoi(argv[5]), tl = strlen(argv[4]);
	unsigned count = (unsigned)atoi(argv[6]), sent = 0;
	uint8_t buf[2048] = { 0 };

	if (len > sizeof(buf))
		len = sizeof(buf);
	memcpy(buf, argv[4], tl < len ? tl : len);
	for (unsigned i = 0; i < count; i++)
		sent += (unsigned)send_one(fd, buf, len);
	printf("sent %u datagrams of %zu B starting \"%s\"\n", sent, len, argv[4]);
	return sent == count ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(c, "capture") && argc >= 7)
		return cmd_capture(argc, argv);
	if (!strcmp(c, "grep") && argc == 4)
		return cmd_grep(argv[2], argv[3]);
	if (!strcmp(c, "list") && argc == 3)
		return cmd_list(argv[2]);
	if (!strcmp(c, "resend") && argc >= 4)
		return cmd_resend(argc, argv);
	if ((!strcmp(c, "forge-icv") || !strcmp(c, "forge-spi")) && argc >= 7)
		return cmd_forge(argc, argv);
	if (!strcmp(c, "truncate") && (argc == 6 || argc == 7))
		return cmd_forge(argc, argv);
	if (!strcmp(c, "random") && argc >= 6)
		return cmd_random(argc, argv);
	if (!strcmp(c, "drops") && argc == 4)
		return cmd_drops(argv[2], argv[3]);
	if (!strcmp(c, "send") && argc == 7)
		return cmd_send(argv);
	fprintf(stderr,
		"usage: pkt_tool capture IFACE PORT COUNT MS FILE [dport] [prefix HEX]\n"
		"       pkt_tool grep FILE TEXT | list FILE\n"
		"       pkt_tool resend FILE INDEX|big [DELAY_MS [COUNT]]\n"
		"       pkt_tool forge-icv|forge-spi FILE INDEX|big DST PORT N [PID]\n"
		"       pkt_tool truncate FILE INDEX|big DST PORT [PID]\n"
		"       pkt_tool random DST PORT N SEED [FILE|- INDEX|big [PID]]\n"
		"       pkt_tool drops PID PORT\n"
		"       pkt_tool send DST PORT TEXT LEN COUNT\n");
	return 2;
}
