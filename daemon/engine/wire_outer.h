/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_outer.h - codec of the outer encapsulation of a Falcon packet:
 *
 *   Ethernet [+ up to 2 VLAN tags] | IPv4 (options allowed) or IPv6 (no extension
 *   headers) | UDP (destination port = the Falcon port) | PSP header | Falcon packet
 *   | PSP ICV (16 bytes; none for FC_PSP_VER_NULL)
 *
 * Layouts and constants: include/falcon/wire.h. Falcon rides in PSP with next header 252
 * and crypt offset 1 (spec 7.1: the first 4 bytes of the Falcon header, version and CID,
 * stay in the clear). The PSP IV carries the transmit time in ns; t1 = fc_ns_to_ts(iv).
 *
 * PSP header (16 bytes, + 8 with the virtualization cookie):
 *   byte 0   next header
 *   byte 1   hdr ext len: header bytes beyond the first 8, in 8-byte units (1, or 2 with VC;
 *            larger values are accepted and the extra bytes skipped; encode zero-fills them)
 *   byte 2   [7:6] reserved (ignored on decode, 0 on encode), [5:0] crypt offset in 4-byte
 *            units, counted from the end of the PSP header (the start of the Falcon packet)
 *   byte 3   [7] S, [6] D, [5:2] version, [1] V, [0] always 1
 *   4..7     SPI, 8..15 IV, 16..23 VC when V = 1
 *
 * Decode check order, first failure wins (each layer's checks run before the next layer's):
 *   L2    ETRUNC (14 bytes; 4 more per tag); tags: 0x88A8 or 0x8100 first, then 0x8100,
 *         at most 2; a further tag or another ethertype than IPv4/IPv6: EPROTO
 *   IPv4  ETRUNC (20) > EVERSION (!= 4) > EFIELD (IHL < 5) > ETRUNC (IHL * 4) > ECSUM
 *         (header checksum) > EPROTO (protocol != UDP) > EFIELD (MF or fragment offset)
 *         > ELEN (total length < IHL * 4 + 8, or > the bytes present)
 *   IPv6  ETRUNC (40) > EVERSION (!= 6) > EPROTO (next header != UDP: extension headers
 *         are not ours) > ELEN (payload length < 8, or > the bytes present)
 *   UDP   EPROTO (destination port) > ELEN (length < 8 + 16, or != IP payload length)
 *         > ECSUM (checksum non-zero and wrong over the pseudo-header; 0 = not computed is
 *         accepted for IPv4 and IPv6 alike)
 *   PSP   as fc_psp_decode() below.
 * Bytes after the IP packet (Ethernet padding) are ignored. The IPv4 reserved flag bit and
 * the PSP reserved bits are ignored; IPv4 option bytes are skipped, not interpreted.
 * A frame truncated inside an IP header gives ETRUNC; truncated after it, ELEN (the IP
 * length then exceeds the bytes present).
 */
#ifndef FC_WIRE_OUTER_H
#define FC_WIRE_OUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "falcon/wire.h"
#include "wire_err.h"

#define FC_OUTER_VLAN_MAX 2
#define FC_PSP_HDR_EXT_MIN 1 /* hdr ext len without VC */
/* Largest PSP header: 8 + 255 * 8 bytes. */
#define FC_PSP_HDR_MAX (8 + 255 * 8)
/* Headers fc_outer_encode() writes, at most: Ethernet, 2 tags, IPv6, UDP, PSP with VC. */
#define FC_OUTER_HDR_MAX (14 + 2 * 4 + 40 + 8 + FC_PSP_HDR_LEN + FC_PSP_VC_LEN)

/* One decoded PSP header, host order. */
struct fc_psp_info {
	uint8_t next_hdr;    /* must be FC_PSP_NEXT_HDR_FALCON */
	uint8_t hdr_ext_len; /* encode: 0 = the minimum, 1 + has_vc */
	uint8_t crypt_off;   /* 6 bits, 4-byte units from the start of the Falcon packet */
	bool s;
	bool d;
	uint8_t version; /* enum fc_psp_version */
	bool has_vc;     /* V bit */
	uint32_t spi;
	uint64_t iv;     /* transmit time in ns, strictly increasing per SA */
	uint64_t vc;     /* virtualization cookie (PCID, spec 9.2.1), 0 without V */
	size_t hdr_len;  /* decode output: 8 + 8 * hdr_ext_len */
	size_t icv_len;  /* decode output: FC_PSP_ICV_LEN, or 0 for FC_PSP_VER_NULL */
};

/* One decoded outer encapsulation, host order. Offsets are from the start of the frame. */
struct fc_outer {
	/* L2 */
	uint8_t dst[FC_ETH_ALEN];
	uint8_t src[FC_ETH_ALEN];
	uint8_t nvlan;                         /* 0..2 */
	uint16_t vlan_tpid[FC_OUTER_VLAN_MAX]; /* [0] outermost; encode: 0 = default */
	uint16_t vlan_tci[FC_OUTER_VLAN_MAX];  /* PCP | DEI | VID */
	/* L3 */
	uint8_t ip_ver;    /* 4 or 6 */
	uint8_t saddr[16]; /* IPv4: first 4 bytes, the rest 0 */
	uint8_t daddr[16];
	uint8_t tos;         /* IPv4 TOS / IPv6 traffic class */
	uint8_t ttl;         /* IPv4 TTL / IPv6 hop limit */
	uint32_t flow_label; /* IPv6 only, 20 bits */
	uint16_t ip_id;      /* IPv4 only */
	bool df;             /* IPv4 only */
	/* L4 */
	uint16_t sport;
	uint16_t dport;
	/* decode outputs, ignored by encode */
	size_t l3_off;
	size_t l4_off;
	size_t psp_off;
	/* PSP; inner = the Falcon packet, between the PSP header and the ICV */
	struct fc_psp_info psp;
	size_t inner_off; /* decode output */
	size_t inner_len; /* decode output */
};


/* Wire timestamp t1 (131.072 ns units, spec 7.7.1) of a packet's PSP IV. */
static inline uint32_t fc_psp_t1(const struct fc_psp_info *psp) { return fc_ns_to_ts(psp->iv); }

/*
 * Decodes the PSP header at the start of buf (a UDP payload: header, Falcon packet, ICV).
 * Fills *out and, if not NULL, *inner_off / *inner_len with the Falcon packet's position
 * in buf. Returns the PSP header length (== *inner_off) or, checked in this order:
 *   -FC_WIRE_ETRUNC    len < 16
 *   -FC_WIRE_EPROTO    next header != 252
 *   -FC_WIRE_EFIELD    the always-1 bit is 0
 *   -FC_WIRE_EVERSION  version not one of fc_psp_version_valid()
 *   -FC_WIRE_EFIELD    hdr ext len < 1 + V
 *   -FC_WIRE_ETRUNC    len < 8 + 8 * hdr ext len, or < that + ICV
 *   -FC_WIRE_ELEN      crypt offset * 4 > Falcon packet length
 * *out is unspecified after an error.
 */
int fc_psp_decode(const void *buf, size_t len, struct fc_psp_info *out, size_t *inner_off,
		  size_t *inner_len);

/*
 * Writes the PSP header described by in (hdr_len and icv_len are ignored) at buf. Returns
 * its length (16, 24, or 8 + 8 * hdr_ext_len), -FC_WIRE_EINVAL (next header != 252, crypt
 * offset > 63, version not valid, hdr_ext_len != 0 and < 1 + has_vc, vc != 0 without
 * has_vc) or -FC_WIRE_ENOSPC (cap < that length; nothing is written). It cannot check the
 * crypt offset against the Falcon packet length: the caller keeps crypt_off * 4 <= it.
 */
int fc_psp_encode(const struct fc_psp_info *in, void *buf, size_t cap);

/*
 * Decodes a whole Ethernet frame of len bytes carrying Falcon over PSP over UDP to
 * falcon_port, in the check order given at the top of this file. Returns out->inner_off
 * (>= 0) or a negative FC_WIRE_* code: ETRUNC, EPROTO, EVERSION, EFIELD, ELEN, ECSUM.
 * *out is unspecified after an error.
 */
int fc_outer_decode(const void *frame, size_t len, uint16_t falcon_port, struct fc_outer *out);

/*
 * Writes the Ethernet, VLAN, IP, UDP and PSP headers of a frame whose Falcon packet is
 * inner_len bytes long, followed (by the caller) by psp ICV bytes. Uses every field of o
 * except the decode outputs; IPv4 without options; fills IPv4 total length, id, DF and
 * header checksum, UDP length; writes UDP checksum 0 (see fc_outer_set_udp_csum()).
 * vlan_tpid 0 = 0x8100, except the outer of two tags: 0x88A8. IPv4 ignores flow_label,
 * IPv6 ignores ip_id and df. Writes nothing past cap (the headers only need to fit).
 * Returns the header length (the Falcon packet's offset) or:
 *   -FC_WIRE_EINVAL  ip_ver not 4/6, nvlan > 2, a tpid not 0x8100/0x88A8 (0x88A8 only
 *                    outermost), flow label > 20 bits, PSP fields as fc_psp_encode(),
 *                    crypt_off * 4 > inner_len, or an IP/UDP length past 65535
 *   -FC_WIRE_ENOSPC  cap < header length (nothing is written)
 */
int fc_outer_encode(const struct fc_outer *o, size_t inner_len, void *buf, size_t cap);

/*
 * Computes and stores the UDP checksum of a frame once its payload and ICV are in place
 * (mandatory for IPv6, used for IPv4 too). Walks the frame's own L2/L3 headers (tags, IPv4
 * options), so it works on any frame fc_outer_decode() would locate. A sum of 0 is sent as
 * 0xFFFF. Returns 0, -FC_WIRE_ETRUNC (frame shorter than its headers), -FC_WIRE_EPROTO
 * (not IPv4/IPv6 + UDP), -FC_WIRE_EVERSION, -FC_WIRE_EFIELD (IHL < 5) or -FC_WIRE_ELEN
 * (UDP length < 8 or past len).
 */
int fc_outer_set_udp_csum(void *frame, size_t len);

/* Path entropy for PLB (spec 10.4, 10.6.2.2 randomize_path): a connection whose
 * entropy seed is seed takes path number path (fc_pdl_path) by its UDP source port
 * (49152-65535) and, over IPv6, its flow label (20 bits, never 0). Deterministic, and
 * consecutive paths always differ in both. */
void fc_outer_set_path(struct fc_outer *o, uint32_t seed, uint32_t path);

/*
 * Internet checksum (RFC 1071). fc_inet_csum_add() adds len bytes to a running sum; every
 * call but the last must pass an even len. fc_inet_csum_fold() folds the sum and returns
 * its one's complement: the value to store, or 0 when verifying a block that includes
 * its checksum.
 */
uint32_t fc_inet_csum_add(uint32_t sum, const void *buf, size_t len);
uint16_t fc_inet_csum_fold(uint32_t sum);

#endif
