/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_outer.c - Ethernet / VLAN / IPv4 / IPv6 / UDP / PSP codec (see wire_outer.h for the
 * formats and the order of the decode checks).
 */
#include <string.h>

#include "wire_outer.h"

#define ETH_HLEN ((size_t)sizeof(struct fc_eth_hdr))
#define VLAN_HLEN ((size_t)sizeof(struct fc_vlan_hdr))
#define IPV4_HLEN ((size_t)sizeof(struct fc_ipv4_hdr))
#define IPV6_HLEN ((size_t)sizeof(struct fc_ipv6_hdr))
#define UDP_HLEN ((size_t)sizeof(struct fc_udp_hdr))
#define IP_LEN_MAX 0xFFFFu

/* IPv4 frag_off field (RFC 791 3.1): [14] DF, [13] MF, [12:0] offset; [15] reserved. */

static uint16_t rd16(const uint8_t *p)
{
	__be16 v;

	memcpy(&v, p, sizeof(v));
	return fc_ntoh16(v);
}

static void wr16(uint8_t *p, uint16_t host)
{
	__be16 v = fc_hton16(host);

	memcpy(p, &v, sizeof(v));
}

/* ------------------------------------------------------------------------ */
/* Internet checksum (RFC 1071)                                              */
/* ------------------------------------------------------------------------ */

uint32_t fc_inet_csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t acc = sum;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		acc += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		acc += (uint32_t)p[len - 1] << 8; /* odd tail padded with a zero byte */
	while (acc >> 32) /* end-around carry; at most twice */
		acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
	return (uint32_t)acc;
}

uint16_t fc_inet_csum_fold(uint32_t sum)
{
	sum = (sum & 0xFFFFu) + (sum >> 16);
	sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Sum of the UDP pseudo-header (RFC 768 for IPv4, RFC 8200 8.1 for IPv6). */
static uint32_t pseudo_sum(uint8_t ip_ver, const uint8_t *saddr, const uint8_t *daddr,
			   uint16_t udp_len)
{
	size_t alen = ip_ver == 4 ? 4 : 16;
	uint32_t sum;

	sum = fc_inet_csum_add(0, saddr, alen);
	sum = fc_inet_csum_add(sum, daddr, alen);
	/* IPv4: zero, protocol, UDP length; IPv6: 32-bit length, 24 zero bits, next header.
	 * No overflow: sum is at most 16 words of 0xFFFF here. */
	return sum + FC_IPPROTO_UDP + udp_len;
}

/* Checksum of the UDP datagram at udp (udp_len bytes, check field included as is). */
static uint16_t udp_csum(uint8_t ip_ver, const uint8_t *saddr, const uint8_t *daddr,
			 const uint8_t *udp, uint16_t udp_len)
{
	uint32_t sum = pseudo_sum(ip_ver, saddr, daddr, udp_len);

	return fc_inet_csum_fold(fc_inet_csum_add(sum, udp, udp_len));
}

/* ------------------------------------------------------------------------ */
/* PSP                                                                       */
/* ------------------------------------------------------------------------ */

int fc_psp_decode(const void *buf, size_t len, struct fc_psp_info *out, size_t *inner_off,
		  size_t *inner_len)
{
	const uint8_t *p = buf;
	struct fc_psp_hdr h;
	size_t hdr_len, icv_len, payload;

	memset(out, 0, sizeof(*out));
	if (len < FC_PSP_HDR_LEN)
		return -FC_WIRE_ETRUNC;
	memcpy(&h, p, sizeof(h));
	if (h.next_hdr != FC_PSP_NEXT_HDR_FALCON)
		return -FC_WIRE_EPROTO;
	if (!(h.s_d_ver_v_1 & FC_PSP_ONE_BIT))
		return -FC_WIRE_EFIELD;
	out->version = FC_GET(h.s_d_ver_v_1, FC_PSP_VER);
	if (!fc_psp_version_valid(out->version))
		return -FC_WIRE_EVERSION;
	out->has_vc = FC_GET(h.s_d_ver_v_1, FC_PSP_V);
	if (h.hdr_ext_len < FC_PSP_HDR_EXT_MIN + out->has_vc)
		return -FC_WIRE_EFIELD;
	hdr_len = 8 + 8 * (size_t)h.hdr_ext_len;
	icv_len = fc_psp_icv_len(out->version);
	if (len < hdr_len || len - hdr_len < icv_len)
		return -FC_WIRE_ETRUNC;
	payload = len - hdr_len - icv_len;
	out->crypt_off = FC_GET(h.crypt_off, FC_PSP_CRYPT_OFF);
	if ((size_t)out->crypt_off * 4 > payload) /* spec 7.1: Falcon uses 1 */
		return -FC_WIRE_ELEN;

	out->next_hdr = h.next_hdr;
	out->hdr_ext_len = h.hdr_ext_len;
	out->s = FC_GET(h.s_d_ver_v_1, FC_PSP_S);
	out->d = FC_GET(h.s_d_ver_v_1, FC_PSP_D);
	out->spi = fc_ntoh32(h.spi);
	out->iv = fc_ntoh64(h.iv);
	if (out->has_vc) {
		__be64 vc;

		memcpy(&vc, p + FC_PSP_HDR_LEN, sizeof(vc));
		out->vc = fc_ntoh64(vc);
	}
	out->hdr_len = hdr_len;
	out->icv_len = icv_len;
	if (inner_off)
		*inner_off = hdr_len;
	if (inner_len)
		*inner_len = payload;
	return (int)hdr_len;
}

/* Validates in for encoding; stores its header length. Returns 0 or -FC_WIRE_EINVAL. */
static int psp_check(const struct fc_psp_info *in, size_t *hdr_len)
{
	unsigned int min_ext = FC_PSP_HDR_EXT_MIN + in->has_vc;
	unsigned int ext = in->hdr_ext_len ? in->hdr_ext_len : min_ext;

	if (in->next_hdr != FC_PSP_NEXT_HDR_FALCON || in->crypt_off > FC_PSP_CRYPT_OFF_MASK ||
	    !fc_psp_version_valid(in->version) || ext < min_ext || (!in->has_vc && in->vc))
		return -FC_WIRE_EINVAL;
	*hdr_len = 8 + 8 * (size_t)ext;
	return 0;
}

/* Writes a PSP header already validated by psp_check() (hdr_len bytes). */
static void psp_write(const struct fc_psp_info *in, uint8_t *p, size_t hdr_len)
{
	struct fc_psp_hdr h;

	h.next_hdr = in->next_hdr;
	h.hdr_ext_len = (uint8_t)((hdr_len - 8) / 8);
	h.crypt_off = (uint8_t)FC_PUT(FC_PSP_CRYPT_OFF, in->crypt_off);
	h.s_d_ver_v_1 = (uint8_t)(FC_PUT(FC_PSP_S, in->s) | FC_PUT(FC_PSP_D, in->d) |
				  FC_PUT(FC_PSP_VER, in->version) |
				  FC_PUT(FC_PSP_V, in->has_vc) | FC_PSP_ONE_BIT);
	h.spi = fc_hton32(in->spi);
	h.iv = fc_hton64(in->iv);
	memcpy(p, &h, sizeof(h));
	memset(p + FC_PSP_HDR_LEN, 0, hdr_len - FC_PSP_HDR_LEN);
	if (in->has_vc) {
		__be64 vc = fc_hton64(in->vc);

		memcpy(p + FC_PSP_HDR_LEN, &vc, sizeof(vc));
	}
}

int fc_psp_encode(const struct fc_psp_info *in, void *buf, size_t cap)
{
	size_t hdr_len;
	int err = psp_check(in, &hdr_len);

	if (err)
		return err;
	if (cap < hdr_len)
		return -FC_WIRE_ENOSPC;
	psp_write(in, buf, hdr_len);
	return (int)hdr_len;
}

/* ------------------------------------------------------------------------ */
/* Outer decode                                                              */
/* ------------------------------------------------------------------------ */

/* May a tag with this TPID sit at position n (0 = outermost)? 802.1ad S-tag only first. */
static bool tag_ok(uint16_t tpid, unsigned int n)
{
	if (n >= FC_OUTER_VLAN_MAX)
		return false;
	return tpid == FC_ETH_P_8021Q || (n == 0 && tpid == FC_ETH_P_8021AD);
}

/* Ethernet + tags. Sets MACs, tags, l3_off, *ethertype. ETRUNC or EPROTO. */
static int l2_decode(const uint8_t *f, size_t len, struct fc_outer *o, uint16_t *ethertype)
{
	size_t off = ETH_HLEN;
	uint16_t type;

	if (len < ETH_HLEN)
		return -FC_WIRE_ETRUNC;
	memcpy(o->dst, f, FC_ETH_ALEN);
	memcpy(o->src, f + FC_ETH_ALEN, FC_ETH_ALEN);
	type = rd16(f + 2 * FC_ETH_ALEN);
	while (tag_ok(type, o->nvlan)) { /* bound: FC_OUTER_VLAN_MAX iterations */
		if (len - off < VLAN_HLEN)
			return -FC_WIRE_ETRUNC;
		o->vlan_tpid[o->nvlan] = type;
		o->vlan_tci[o->nvlan] = rd16(f + off);
		type = rd16(f + off + 2);
		o->nvlan++;
		off += VLAN_HLEN;
	}
	if (type != FC_ETH_P_IPV4 && type != FC_ETH_P_IPV6)
		return -FC_WIRE_EPROTO; /* ARP, a third tag, an inner S-tag, ... */
	o->l3_off = off;
	*ethertype = type;
	return 0;
}

/* IPv4 header at o->l3_off; sets L3 fields, l4_off, *l4_len (UDP datagram length). */
static int ipv4_decode(const uint8_t *f, size_t len, struct fc_outer *o, size_t *l4_len)
{
	const uint8_t *p = f + o->l3_off;
	size_t avail = len - o->l3_off, hlen, tot;
	struct fc_ipv4_hdr ip;
	uint16_t frag;

	if (avail < IPV4_HLEN)
		return -FC_WIRE_ETRUNC;
	memcpy(&ip, p, sizeof(ip));
	if (ip.ver_ihl >> 4 != 4)
		return -FC_WIRE_EVERSION;
	hlen = (size_t)(ip.ver_ihl & 0xF) * 4;
	if (hlen < IPV4_HLEN)
		return -FC_WIRE_EFIELD;
	if (avail < hlen)
		return -FC_WIRE_ETRUNC;
	if (fc_inet_csum_fold(fc_inet_csum_add(0, p, hlen)) != 0)
		return -FC_WIRE_ECSUM;
	if (ip.protocol != FC_IPPROTO_UDP)
		return -FC_WIRE_EPROTO;
	frag = fc_ntoh16(ip.frag_off);
	if (frag & (FC_IPV4_MF | FC_IPV4_OFF_MASK))
		return -FC_WIRE_EFIELD; /* a fragment: falcon never fragments */
	tot = fc_ntoh16(ip.tot_len);
	if (tot < hlen + UDP_HLEN || tot > avail)
		return -FC_WIRE_ELEN;

	o->ip_ver = 4;
	memcpy(o->saddr, &ip.saddr, 4);
	memcpy(o->daddr, &ip.daddr, 4);
	o->tos = ip.tos;
	o->ttl = ip.ttl;
	o->ip_id = fc_ntoh16(ip.id);
	o->df = (frag & FC_IPV4_DF) != 0;
	o->l4_off = o->l3_off + hlen;
	*l4_len = tot - hlen;
	return 0;
}

/* IPv6 header at o->l3_off (no extension headers); as ipv4_decode(). */
static int ipv6_decode(const uint8_t *f, size_t len, struct fc_outer *o, size_t *l4_len)
{
	size_t avail = len - o->l3_off, plen;
	struct fc_ipv6_hdr ip;
	uint32_t w;

	if (avail < IPV6_HLEN)
		return -FC_WIRE_ETRUNC;
	memcpy(&ip, f + o->l3_off, sizeof(ip));
	w = fc_ntoh32(ip.ver_tc_flow);
	if (w >> 28 != 6)
		return -FC_WIRE_EVERSION;
	if (ip.nexthdr != FC_IPPROTO_UDP)
		return -FC_WIRE_EPROTO;
	plen = fc_ntoh16(ip.payload_len);
	if (plen < UDP_HLEN || plen > avail - IPV6_HLEN)
		return -FC_WIRE_ELEN;

	o->ip_ver = 6;
	memcpy(o->saddr, ip.saddr, 16);
	memcpy(o->daddr, ip.daddr, 16);
	o->tos = (uint8_t)(w >> 20);
	o->flow_label = w & FC_IPV6_FLOW_LABEL_MASK;
	o->ttl = ip.hop_limit;
	o->l4_off = o->l3_off + IPV6_HLEN;
	*l4_len = plen;
	return 0;
}

/* UDP header at o->l4_off; l4_len (>= 8, within the frame) from the IP header. */
static int udp_decode(const uint8_t *f, struct fc_outer *o, size_t l4_len, uint16_t port)
{
	const uint8_t *p = f + o->l4_off;
	struct fc_udp_hdr u;
	size_t ulen;

	memcpy(&u, p, sizeof(u));
	if (fc_ntoh16(u.dest) != port)
		return -FC_WIRE_EPROTO;
	ulen = fc_ntoh16(u.len);
	if (ulen < UDP_HLEN + FC_PSP_HDR_LEN || ulen != l4_len)
		return -FC_WIRE_ELEN;
	if (u.check != 0 && udp_csum(o->ip_ver, o->saddr, o->daddr, p, (uint16_t)ulen) != 0)
		return -FC_WIRE_ECSUM;
	o->sport = fc_ntoh16(u.source);
	o->dport = port;
	o->psp_off = o->l4_off + UDP_HLEN;
	return 0;
}

int fc_outer_decode(const void *frame, size_t len, uint16_t falcon_port, struct fc_outer *out)
{
	const uint8_t *f = frame;
	size_t l4_len, ioff, ilen;
	uint16_t type;
	int err;

	memset(out, 0, sizeof(*out));
	err = l2_decode(f, len, out, &type);
	if (err)
		return err;
	if (type == FC_ETH_P_IPV4)
		err = ipv4_decode(f, len, out, &l4_len);
	else
		err = ipv6_decode(f, len, out, &l4_len);
	if (err)
		return err;
	err = udp_decode(f, out, l4_len, falcon_port);
	if (err)
		return err;
	err = fc_psp_decode(f + out->psp_off, l4_len - UDP_HLEN, &out->psp, &ioff, &ilen);
	if (err < 0)
		return err;
	out->inner_off = out->psp_off + ioff;
	out->inner_len = ilen;
	return (int)out->inner_off;
}

/* ------------------------------------------------------------------------ */
/* Outer encode                                                              */
/* ------------------------------------------------------------------------ */

/* Validates the L2/L3 fields of o. Returns 0 or -FC_WIRE_EINVAL. */
static int l23_check(const struct fc_outer *o)
{
	unsigned int i;

	if (o->ip_ver != 4 && o->ip_ver != 6)
		return -FC_WIRE_EINVAL;
	if (o->nvlan > FC_OUTER_VLAN_MAX)
		return -FC_WIRE_EINVAL;
	for (i = 0; i < o->nvlan; i++)
		if (o->vlan_tpid[i] != 0 && !tag_ok(o->vlan_tpid[i], i))
			return -FC_WIRE_EINVAL;
	if (o->ip_ver == 6 && o->flow_label > FC_IPV6_FLOW_LABEL_MAX)
		return -FC_WIRE_EINVAL;
	return 0;
}

/* TPID of tag i of o (0 = default: 0x88A8 outside a second tag, else 0x8100). */
static uint16_t tag_tpid(const struct fc_outer *o, unsigned int i)
{
	if (o->vlan_tpid[i])
		return o->vlan_tpid[i];
	return (o->nvlan == 2 && i == 0) ? FC_ETH_P_8021AD : FC_ETH_P_8021Q;
}

/* Writes Ethernet + tags; returns the bytes written. */
static size_t l2_write(const struct fc_outer *o, uint8_t *p)
{
	size_t off = 2 * FC_ETH_ALEN;
	unsigned int i;

	memcpy(p, o->dst, FC_ETH_ALEN);
	memcpy(p + FC_ETH_ALEN, o->src, FC_ETH_ALEN);
	for (i = 0; i < o->nvlan; i++) {
		wr16(p + off, tag_tpid(o, i));
		wr16(p + off + 2, o->vlan_tci[i]);
		off += VLAN_HLEN;
	}
	wr16(p + off, o->ip_ver == 4 ? FC_ETH_P_IPV4 : FC_ETH_P_IPV6);
	return off + 2;
}

/* Writes the IPv4 header for a UDP datagram of udp_len bytes. */
static void ipv4_write(const struct fc_outer *o, uint8_t *p, size_t udp_len)
{
	struct fc_ipv4_hdr ip;

	ip.ver_ihl = (uint8_t)(4 << 4 | IPV4_HLEN / 4);
	ip.tos = o->tos;
	ip.tot_len = fc_hton16((uint16_t)(IPV4_HLEN + udp_len));
	ip.id = fc_hton16(o->ip_id);
	ip.frag_off = fc_hton16(o->df ? FC_IPV4_DF : 0);
	ip.ttl = o->ttl;
	ip.protocol = FC_IPPROTO_UDP;
	ip.check = 0;
	memcpy(&ip.saddr, o->saddr, 4);
	memcpy(&ip.daddr, o->daddr, 4);
	memcpy(p, &ip, sizeof(ip));
	wr16(p + 10, fc_inet_csum_fold(fc_inet_csum_add(0, p, IPV4_HLEN)));
}

static void ipv6_write(const struct fc_outer *o, uint8_t *p, size_t udp_len)
{
	struct fc_ipv6_hdr ip;

	ip.ver_tc_flow = fc_hton32(6u << 28 | (uint32_t)o->tos << 20 | o->flow_label);
	ip.payload_len = fc_hton16((uint16_t)udp_len);
	ip.nexthdr = FC_IPPROTO_UDP;
	ip.hop_limit = o->ttl;
	memcpy(ip.saddr, o->saddr, 16);
	memcpy(ip.daddr, o->daddr, 16);
	memcpy(p, &ip, sizeof(ip));
}

static void udp_write(const struct fc_outer *o, uint8_t *p, size_t udp_len)
{
	struct fc_udp_hdr u;

	u.source = fc_hton16(o->sport);
	u.dest = fc_hton16(o->dport);
	u.len = fc_hton16((uint16_t)udp_len);
	u.check = 0;
	memcpy(p, &u, sizeof(u));
}

int fc_outer_encode(const struct fc_outer *o, size_t inner_len, void *buf, size_t cap)
{
	size_t psp_len, ip_hlen, udp_len, hdr_len;
	uint8_t *p = buf;
	int err;

	err = l23_check(o);
	if (!err)
		err = psp_check(&o->psp, &psp_len);
	if (err)
		return err;
	if (inner_len > IP_LEN_MAX || (size_t)o->psp.crypt_off * 4 > inner_len)
		return -FC_WIRE_EINVAL;
	ip_hlen = o->ip_ver == 4 ? IPV4_HLEN : IPV6_HLEN;
	udp_len = UDP_HLEN + psp_len + inner_len + fc_psp_icv_len(o->psp.version);
	/* IPv4 total length and UDP length are 16 bits; IPv6 payload length too */
	if (udp_len + (o->ip_ver == 4 ? IPV4_HLEN : 0) > IP_LEN_MAX)
		return -FC_WIRE_EINVAL;
	hdr_len = ETH_HLEN + o->nvlan * VLAN_HLEN + ip_hlen + UDP_HLEN + psp_len;
	if (cap < hdr_len)
		return -FC_WIRE_ENOSPC;

	p += l2_write(o, p);
	if (o->ip_ver == 4)
		ipv4_write(o, p, udp_len);
	else
		ipv6_write(o, p, udp_len);
	p += ip_hlen;
	udp_write(o, p, udp_len);
	psp_write(&o->psp, p + UDP_HLEN, psp_len);
	return (int)hdr_len;
}

int fc_outer_set_udp_csum(void *frame, size_t len)
{
	uint8_t *f = frame;
	struct fc_outer o;
	size_t ulen;
	uint16_t type, sum;
	int err;

	memset(&o, 0, sizeof(o));
	err = l2_decode(f, len, &o, &type);
	if (err)
		return err;
	if (type == FC_ETH_P_IPV4) {
		struct fc_ipv4_hdr ip;

		if (len - o.l3_off < IPV4_HLEN)
			return -FC_WIRE_ETRUNC;
		memcpy(&ip, f + o.l3_off, sizeof(ip));
		if (ip.ver_ihl >> 4 != 4)
			return -FC_WIRE_EVERSION;
		if ((ip.ver_ihl & 0xF) * 4u < IPV4_HLEN)
			return -FC_WIRE_EFIELD;
		if (ip.protocol != FC_IPPROTO_UDP)
			return -FC_WIRE_EPROTO;
		o.ip_ver = 4;
		o.l4_off = o.l3_off + (ip.ver_ihl & 0xF) * 4u;
		memcpy(o.saddr, &ip.saddr, 4);
		memcpy(o.daddr, &ip.daddr, 4);
	} else {
		struct fc_ipv6_hdr ip;

		if (len - o.l3_off < IPV6_HLEN)
			return -FC_WIRE_ETRUNC;
		memcpy(&ip, f + o.l3_off, sizeof(ip));
		if (fc_ntoh32(ip.ver_tc_flow) >> 28 != 6)
			return -FC_WIRE_EVERSION;
		if (ip.nexthdr != FC_IPPROTO_UDP)
			return -FC_WIRE_EPROTO;
		o.ip_ver = 6;
		o.l4_off = o.l3_off + IPV6_HLEN;
		memcpy(o.saddr, ip.saddr, 16);
		memcpy(o.daddr, ip.daddr, 16);
	}
	if (len < o.l4_off || len - o.l4_off < UDP_HLEN)
		return -FC_WIRE_ETRUNC;
	ulen = rd16(f + o.l4_off + 4);
	if (ulen < UDP_HLEN || ulen > len - o.l4_off)
		return -FC_WIRE_ELEN;
	wr16(f + o.l4_off + 6, 0);
	sum = udp_csum(o.ip_ver, o.saddr, o.daddr, f + o.l4_off, (uint16_t)ulen);
	wr16(f + o.l4_off + 6, sum ? sum : 0xFFFF); /* RFC 768: 0 means "no checksum" */
	return 0;
}

/* A 32-bit mix (the murmur3 finalizer) of seed and path. */
static uint32_t path_mix(uint32_t seed, uint32_t path)
{
	uint32_t h = seed ^ (path * 0x9E3779B9u);

	h ^= h >> 16;
	h *= 0x85EBCA6Bu;
	h ^= h >> 13;
	h *= 0xC2B2AE35u;
	h ^= h >> 16;
	return h;
}

void fc_outer_set_path(struct fc_outer *o, uint32_t seed, uint32_t path)
{
	uint32_t h = path_mix(seed, path), prev = path_mix(seed, path - 1);
	uint16_t port = (uint16_t)(49152 + (h & 0x3FFF));
	uint32_t label = (h >> 12) & FC_IPV6_FLOW_LABEL_MAX;

	/* consecutive paths must differ, or a reroute would change nothing */
	if (port == 49152 + (prev & 0x3FFF))
		port = (uint16_t)(49152 + ((port - 49152 + 1) & 0x3FFF));
	if (label == ((prev >> 12) & FC_IPV6_FLOW_LABEL_MAX))
		label = (label + 1) & FC_IPV6_FLOW_LABEL_MAX;
	o->sport = port;
	o->flow_label = label ? label : 1;
}
