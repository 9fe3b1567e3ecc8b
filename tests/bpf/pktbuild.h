/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pktbuild.h - packet fixtures for the BPF tests: Ethernet [+ VLAN] | IPv4/IPv6 | UDP |
 * PSP | Falcon header | payload [| ICV], with correct IPv4 header checksum, IP/UDP
 * lengths and UDP checksum.
 *
 * Layouts come from the include/falcon/wire.h structs; field VALUES are written by hand
 * (explicit shifts, big-endian byte stores), independently of the FC_* macros, from
 * the spec field tables, so that a wrong macro in wire.h shows up as a test failure.
 *
 * Use: pkt_build() for a whole packet from a pkt_spec, or the pkt_eth/pkt_vlan/
 * pkt_ipv4/... layer functions in order, then pkt_finish() to fix lengths and
 * checksums. A layer that does not fit in PKT_MAX sets p->overflow (check it).
 * Header-only: every function is static.
 */
#ifndef FALCON_TESTS_PKTBUILD_H
#define FALCON_TESTS_PKTBUILD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "falcon/wire.h"

#define PKT_MAX 512

/* Field values of the fixtures (arbitrary but fixed). */
#define PKT_SPORT 0xABCDu
#define PKT_PORT_FALCON 1000u /* PSP's UDP port, the Falcon default */
#define PKT_CID 0xABCDEFu
#define PKT_DFN 0x000001u
#define PKT_PROTO_RDMA 2u
#define PKT_SPI 0x00000042u
#define PKT_VLAN_VID 100u
#define PKT_ICV_LEN 16u

/* Packet types, spec 7.2 / 7.7 / 7.8 (4-bit field). */
#define PKT_T_PULL_REQ 0x0u
#define PKT_T_PULL_DATA 0x3u
#define PKT_T_PUSH_DATA 0x5u
#define PKT_T_RESYNC 0x6u
#define PKT_T_NACK 0x8u
#define PKT_T_BACK 0x9u
#define PKT_T_EACK 0xAu

/* PSP versions (wire.h: 0-3 PSP, 0xC software ChaCha20, 0xF NULL = no encryption). */
#define PKT_PSP_NULL 0xFu

struct pkt {
	uint8_t b[PKT_MAX];
	size_t len;
	size_t l3_off;     /* IP header, if l3 is set */
	size_t l4_off;     /* UDP header, if l4 is set */
	size_t psp_off;    /* PSP header */
	size_t falcon_off; /* Falcon header */
	int l3;            /* 0 none, 4 IPv4, 6 IPv6 */
	int l4;            /* 1 = a UDP header at l4_off */
	int overflow;      /* a layer did not fit in PKT_MAX */
};

/* A whole Falcon packet. pkt_spec_default() gives a valid cleartext IPv4 one. */
struct pkt_spec {
	int ipv6;
	int nvlan;            /* 0..3 tags (outer 0x88A8 when >= 2); > 2 exceeds XDP's bound */
	unsigned ip4_opt_len; /* IPv4 options, multiple of 4, <= 40 */
	uint16_t dport;
	uint8_t psp_ver;      /* PKT_PSP_NULL: cleartext, no ICV; else "encrypted" + ICV */
	int psp_vc;           /* V = 1 and an 8-byte virtualization cookie */
	uint8_t falcon_ver;
	uint8_t type;
	size_t payload_len;   /* bytes after the Falcon header, before the ICV */
};

static inline struct pkt_spec pkt_spec_default(uint8_t type)
{
	struct pkt_spec s = {
		.dport = PKT_PORT_FALCON,
		.psp_ver = PKT_PSP_NULL,
		.falcon_ver = 1,
		.type = type,
	};

	return s;
}

/* Header length per packet type, from the spec 7.3 - 7.8 tables as wire.h lays them out
 * (written here by hand, not with fc_pkt_hdr_len). Reserved types: 32. */
static inline size_t pkt_falcon_hdr_len(uint8_t type)
{
	switch (type) {
	case PKT_T_PULL_REQ: return 32;  /* base 24 + req len/rsvd 4 + rsvd 4 */
	case PKT_T_PULL_DATA: return 24; /* base only */
	case PKT_T_PUSH_DATA: return 28; /* base + req len/rsvd */
	case PKT_T_RESYNC: return 32;    /* base + code/type word + vendor word */
	case PKT_T_NACK: return 40;      /* 8 ACK words + NACK PSN + code word */
	case PKT_T_BACK: return 32;      /* 8 words */
	case PKT_T_EACK: return 72;      /* BACK + 4 + 4 + 2 bitmap words */
	default: return 32;
	}
}

static inline void pkt_wr16(uint8_t *q, uint32_t v)
{
	q[0] = (uint8_t)(v >> 8);
	q[1] = (uint8_t)v;
}

static inline void pkt_wr32(uint8_t *q, uint32_t v)
{
	q[0] = (uint8_t)(v >> 24);
	q[1] = (uint8_t)(v >> 16);
	q[2] = (uint8_t)(v >> 8);
	q[3] = (uint8_t)v;
}

static inline uint32_t pkt_rd16(const uint8_t *q)
{
	return (uint32_t)q[0] << 8 | q[1];
}

static inline void pkt_init(struct pkt *p)
{
	memset(p, 0, sizeof(*p));
}

/* Append n zero bytes; NULL (and p->overflow) if they do not fit. */
static inline uint8_t *pkt_put(struct pkt *p, size_t n)
{
	uint8_t *q;

	if (n > PKT_MAX - p->len) {
		p->overflow = 1;
		return NULL;
	}
	q = p->b + p->len;
	memset(q, 0, n);
	p->len += n;
	return q;
}

/* Append n bytes of value fill. */
static inline void pkt_fill(struct pkt *p, size_t n, uint8_t fill)
{
	uint8_t *q = pkt_put(p, n);

	if (q)
		memset(q, fill, n);
}

static inline void pkt_eth(struct pkt *p, uint16_t ethertype)
{
	struct fc_eth_hdr *e = (struct fc_eth_hdr *)pkt_put(p, sizeof(*e));
	static const uint8_t dst[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const uint8_t src[6] = { 0x02, 0, 0, 0, 0, 0x01 };

	if (!e)
		return;
	memcpy(e->dst, dst, sizeof(dst));
	memcpy(e->src, src, sizeof(src));
	pkt_wr16((uint8_t *)&e->proto, ethertype);
}

/* One 802.1Q tag: TCI (PCP 0, DEI 0, VID) then the next ethertype. */
static inline void pkt_vlan(struct pkt *p, uint16_t vid, uint16_t next_type)
{
	struct fc_vlan_hdr *v = (struct fc_vlan_hdr *)pkt_put(p, sizeof(*v));

	if (!v)
		return;
	pkt_wr16((uint8_t *)&v->tci, vid & 0xFFFu);
	pkt_wr16((uint8_t *)&v->proto, next_type);
}

/* Ethernet with nvlan tags (outer 0x88A8 when nvlan >= 2, then 0x8100s) before l3_type. */
static inline void pkt_l2(struct pkt *p, int nvlan, uint16_t l3_type)
{
	int i;

	if (nvlan <= 0) {
		pkt_eth(p, l3_type);
		return;
	}
	pkt_eth(p, nvlan >= 2 ? 0x88A8 : 0x8100);
	for (i = 0; i < nvlan; i++)
		pkt_vlan(p, (uint16_t)(PKT_VLAN_VID + i), i == nvlan - 1 ? l3_type : 0x8100);
}

/* IPv4, DF set, TTL 64, 10.0.0.1 -> 10.0.0.2, opt_len bytes of NOP options (multiple of
 * 4, <= 40). Length and checksum: pkt_finish(). */
static inline void pkt_ipv4(struct pkt *p, unsigned opt_len, uint8_t proto)
{
	size_t off = p->len;
	struct fc_ipv4_hdr *ip = (struct fc_ipv4_hdr *)pkt_put(p, sizeof(*ip));
	uint8_t *opt;

	if (!ip)
		return;
	ip->ver_ihl = (uint8_t)(4u << 4 | (5u + opt_len / 4));
	pkt_wr16((uint8_t *)&ip->id, 0x1234);
	pkt_wr16((uint8_t *)&ip->frag_off, 0x4000); /* DF */
	ip->ttl = 64;
	ip->protocol = proto;
	pkt_wr32((uint8_t *)&ip->saddr, 0x0A000001u);
	pkt_wr32((uint8_t *)&ip->daddr, 0x0A000002u);
	opt = pkt_put(p, opt_len);
	if (opt)
		memset(opt, 0x01, opt_len); /* NOP */
	p->l3 = 4;
	p->l3_off = off;
}

/* IPv6, flow label 0x12345, hop limit 64, fd00::1 -> fd00::2. */
static inline void pkt_ipv6(struct pkt *p, uint8_t nexthdr)
{
	size_t off = p->len;
	struct fc_ipv6_hdr *ip = (struct fc_ipv6_hdr *)pkt_put(p, sizeof(*ip));

	if (!ip)
		return;
	pkt_wr32((uint8_t *)&ip->ver_tc_flow, 6u << 28 | 0x12345u);
	ip->nexthdr = nexthdr;
	ip->hop_limit = 64;
	ip->saddr[0] = 0xfd;
	ip->saddr[15] = 1;
	ip->daddr[0] = 0xfd;
	ip->daddr[15] = 2;
	p->l3 = 6;
	p->l3_off = off;
}

static inline void pkt_udp(struct pkt *p, uint16_t sport, uint16_t dport)
{
	size_t off = p->len;
	struct fc_udp_hdr *u = (struct fc_udp_hdr *)pkt_put(p, sizeof(*u));

	if (!u)
		return;
	pkt_wr16((uint8_t *)&u->source, sport);
	pkt_wr16((uint8_t *)&u->dest, dport);
	p->l4 = 1;
	p->l4_off = off;
}

/* PSP header (PSP architecture spec; Falcon 7.1): next header, hdr_ext_len = 1 + vc,
 * crypt offset 1 (4 bytes of Falcon header in the clear), byte 3 = S 0 | D 0 |
 * version [5:2] | V [1] | 1 [0], SPI, 8-byte IV, then the VC if vc. */
static inline void pkt_psp(struct pkt *p, uint8_t next_hdr, uint8_t ver, int vc)
{
	static const uint8_t iv[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	size_t off = p->len;
	struct fc_psp_hdr *h = (struct fc_psp_hdr *)pkt_put(p, sizeof(*h));

	if (!h)
		return;
	h->next_hdr = next_hdr;
	h->hdr_ext_len = (uint8_t)(1 + !!vc);
	h->crypt_off = 1;
	h->s_d_ver_v_1 = (uint8_t)((ver & 0xFu) << 2 | (unsigned)!!vc << 1 | 1u);
	pkt_wr32((uint8_t *)&h->spi, PKT_SPI);
	memcpy(&h->iv, iv, sizeof(iv));
	if (vc)
		pkt_fill(p, 8, 0xC0);
	p->psp_off = off;
}

/* Falcon header of a packet type (spec 7.2 - 7.8):
 *   word 0: version [31:28] | reserved [27:24] | CID [23:0];
 *   word 1 (base header): DFN [31:8] | protocol [7:5] | packet type [4:1] | AR [0];
 *   word 1 (BACK, EACK, NACK): reserved | packet type [4:1] | reserved;
 * further words: a filler pattern, word i = i in every byte; Pull Request and Push Data
 * carry their request length in word 6 [31:16]. */
static inline void pkt_falcon(struct pkt *p, uint8_t ver, uint8_t type, size_t payload_len)
{
	size_t off = p->len, n = pkt_falcon_hdr_len(type), i;
	uint8_t *h = pkt_put(p, n);
	int ack = type == PKT_T_NACK || type == PKT_T_BACK || type == PKT_T_EACK;

	if (!h)
		return;
	pkt_wr32(h, (uint32_t)(ver & 0xFu) << 28 | PKT_CID);
	if (ack)
		pkt_wr32(h + 4, (uint32_t)(type & 0xFu) << 1);
	else
		pkt_wr32(h + 4, PKT_DFN << 8 | PKT_PROTO_RDMA << 5 | (uint32_t)(type & 0xFu) << 1);
	for (i = 8; i < n; i += 4)
		pkt_wr32(h + i, 0x01010101u * (uint32_t)(i / 4));
	if (type == PKT_T_PUSH_DATA || type == PKT_T_PULL_REQ)
		pkt_wr32(h + 24, (uint32_t)(payload_len & 0xFFFF) << 16);
	p->falcon_off = off;
}

/* Stand-in for PSP encryption: scramble everything after the first 4 Falcon bytes (the
 * crypt offset) so the packet type is unreadable, then append the ICV. */
static inline void pkt_encrypt(struct pkt *p)
{
	size_t i;

	for (i = p->falcon_off + 4; i < p->len; i++)
		p->b[i] ^= 0xA5;
	pkt_fill(p, PKT_ICV_LEN, 0x1C);
}

static inline uint32_t pkt_csum_add(uint32_t sum, const uint8_t *q, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += pkt_rd16(q + i);
	if (n & 1)
		sum += (uint32_t)q[n - 1] << 8;
	return sum;
}

static inline uint16_t pkt_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

/* UDP checksum over the pseudo header (RFC 768 / RFC 8200 8.1) and udp_len bytes. */
static inline uint16_t pkt_udp_csum(const struct pkt *p, size_t udp_len)
{
	const uint8_t *ip = p->b + p->l3_off;
	uint32_t sum = 0;
	uint16_t c;

	if (p->l3 == 4) {
		sum = pkt_csum_add(sum, ip + 12, 8); /* saddr, daddr */
		sum += FC_IPPROTO_UDP + (uint32_t)udp_len;
	} else {
		sum = pkt_csum_add(sum, ip + 8, 32);
		sum += (uint32_t)(udp_len >> 16) + (uint32_t)(udp_len & 0xFFFF) + FC_IPPROTO_UDP;
	}
	sum = pkt_csum_add(sum, p->b + p->l4_off, udp_len);
	c = pkt_csum_fold(sum);
	return c ? c : 0xFFFF;
}

/* Set IP and UDP lengths to reach the current end of the packet, then the checksums. */
static inline void pkt_finish(struct pkt *p)
{
	uint8_t *ip = p->b + p->l3_off, *u = p->b + p->l4_off;
	size_t ihl;

	if (p->l3 == 4) {
		ihl = (size_t)(ip[0] & 0xF) * 4;
		pkt_wr16(ip + 2, (uint32_t)(p->len - p->l3_off));
		pkt_wr16(ip + 10, 0);
		pkt_wr16(ip + 10, pkt_csum_fold(pkt_csum_add(0, ip, ihl)));
	} else if (p->l3 == 6) {
		pkt_wr16(ip + 4, (uint32_t)(p->len - p->l3_off - 40));
	}
	if (p->l4 && p->l3) {
		pkt_wr16(u + 4, (uint32_t)(p->len - p->l4_off));
		pkt_wr16(u + 6, 0);
		pkt_wr16(u + 6, pkt_udp_csum(p, p->len - p->l4_off));
	}
}

/* Cut the packet to len bytes and make IP/UDP lengths and checksums agree with the cut
 * (a well-formed packet that is short at a higher layer). */
static inline void pkt_truncate_consistent(struct pkt *p, size_t len)
{
	if (len < p->len)
		p->len = len;
	pkt_finish(p);
}

/* IPv4 flags and fragment offset (host order: [15] rsvd, [14] DF, [13] MF, [12:0]). */
static inline void pkt_ipv4_set_frag(struct pkt *p, uint16_t frag)
{
	pkt_wr16(p->b + p->l3_off + 6, frag);
	pkt_finish(p);
}

/* Falcon header word i (0-based, host value v, written big endian); word 0 is version |
 * reserved | CID, word 1 the type word, words 2-5 of the base header rdbpsn, rrbpsn, PSN,
 * RSN (spec 7.2); of BACK/EACK/NACK rdbpsn, rrbpsn, t1, t2 (7.7.1). Then pkt_finish(). */
static inline void pkt_set_word(struct pkt *p, unsigned i, uint32_t v)
{
	pkt_wr32(p->b + p->falcon_off + 4 * i, v);
}

/* Falcon version 1 and a CID in word 0 (24 bits). */
static inline void pkt_set_cid(struct pkt *p, uint32_t cid)
{
	pkt_set_word(p, 0, 1u << 28 | (cid & 0xFFFFFFu));
}

/* PSP SPI (bytes 4-7) and IV (bytes 8-15), big endian. */
static inline void pkt_set_spi(struct pkt *p, uint32_t spi)
{
	pkt_wr32(p->b + p->psp_off + 4, spi);
}

static inline void pkt_set_iv(struct pkt *p, uint64_t iv)
{
	pkt_wr32(p->b + p->psp_off + 8, (uint32_t)(iv >> 32));
	pkt_wr32(p->b + p->psp_off + 12, (uint32_t)iv);
}

/* IPv4 TTL / IPv6 hop limit. Then pkt_finish() (IPv4 header checksum). */
static inline void pkt_set_ttl(struct pkt *p, uint8_t ttl)
{
	p->b[p->l3_off + (p->l3 == 4 ? 8 : 7)] = ttl;
}

/* A whole Falcon packet from s. */
static inline void pkt_build(struct pkt *p, const struct pkt_spec *s)
{
	pkt_init(p);
	pkt_l2(p, s->nvlan, s->ipv6 ? 0x86DD : 0x0800);
	if (s->ipv6)
		pkt_ipv6(p, FC_IPPROTO_UDP);
	else
		pkt_ipv4(p, s->ip4_opt_len, FC_IPPROTO_UDP);
	pkt_udp(p, PKT_SPORT, s->dport);
	pkt_psp(p, 252, s->psp_ver, s->psp_vc);
	pkt_falcon(p, s->falcon_ver, s->type, s->payload_len);
	pkt_fill(p, s->payload_len, 0x5C);
	if (s->psp_ver != PKT_PSP_NULL)
		pkt_encrypt(p);
	pkt_finish(p);
}

#endif /* FALCON_TESTS_PKTBUILD_H */
