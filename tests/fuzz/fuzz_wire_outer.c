/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target of the outer codec (daemon/engine/wire_outer.c).
 *
 * Input: 2 bytes of UDP port (big endian), then an Ethernet frame. The frame goes to
 * fc_outer_decode() with that port and, as a UDP payload, to fc_psp_decode(). Whatever
 * decodes is encoded again from the decoded struct (with the same Falcon packet and ICV
 * bytes) and decoded once more; the two decodes must agree, or we abort().
 * A frame that fails only on a checksum is decoded again with both checksums repaired,
 * so that mutations reach the UDP and PSP layers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire_outer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t buf[FC_OUTER_HDR_MAX + FC_PSP_HDR_MAX + 0x10000];
static uint8_t fixed[0x10000 + 256];

#define REQUIRE(c)                                                                         \
	do {                                                                               \
		if (!(c))                                                                  \
			abort();                                                           \
	} while (0)

static void psp_same(const struct fc_psp_info *a, const struct fc_psp_info *b)
{
	REQUIRE(a->next_hdr == b->next_hdr && a->hdr_ext_len == b->hdr_ext_len);
	REQUIRE(a->crypt_off == b->crypt_off && a->s == b->s && a->d == b->d);
	REQUIRE(a->version == b->version && a->has_vc == b->has_vc);
	REQUIRE(a->spi == b->spi && a->iv == b->iv && a->vc == b->vc);
	REQUIRE(a->hdr_len == b->hdr_len && a->icv_len == b->icv_len);
}

/* b is the re-decode of a: same fields; offsets as fc_outer_encode() lays them out. */
static void outer_same(const struct fc_outer *a, const struct fc_outer *b)
{
	unsigned int i;

	REQUIRE(memcmp(a->dst, b->dst, FC_ETH_ALEN) == 0);
	REQUIRE(memcmp(a->src, b->src, FC_ETH_ALEN) == 0);
	REQUIRE(a->nvlan == b->nvlan);
	for (i = 0; i < FC_OUTER_VLAN_MAX; i++)
		REQUIRE(a->vlan_tpid[i] == b->vlan_tpid[i] && a->vlan_tci[i] == b->vlan_tci[i]);
	REQUIRE(a->ip_ver == b->ip_ver);
	REQUIRE(memcmp(a->saddr, b->saddr, 16) == 0 && memcmp(a->daddr, b->daddr, 16) == 0);
	REQUIRE(a->tos == b->tos && a->ttl == b->ttl && a->flow_label == b->flow_label);
	REQUIRE(a->ip_id == b->ip_id && a->df == b->df);
	REQUIRE(a->sport == b->sport && a->dport == b->dport);
	REQUIRE(b->l3_off == a->l3_off);
	REQUIRE(b->l4_off == b->l3_off + (a->ip_ver == 4 ? 20u : 40u));
	REQUIRE(b->psp_off == b->l4_off + 8);
	psp_same(&a->psp, &b->psp);
	REQUIRE(b->inner_off == b->psp_off + a->psp.hdr_len);
	REQUIRE(a->inner_len == b->inner_len);
}

static void fuzz_outer(const uint8_t *f, size_t len, uint16_t port)
{
	struct fc_outer o, o2;
	size_t tail, total;
	int n, m;

	n = fc_outer_decode(f, len, port, &o);
	if (n < 0) {
		REQUIRE(n > -FC_WIRE_ERR_END && n <= -FC_WIRE_ETRUNC);
		return;
	}
	REQUIRE((size_t)n == o.inner_off && o.inner_off + o.inner_len + o.psp.icv_len <= len);
	m = fc_outer_encode(&o, o.inner_len, buf, sizeof(buf));
	REQUIRE(m > 0);
	tail = o.inner_len + o.psp.icv_len;
	total = (size_t)m + tail;
	REQUIRE(total <= sizeof(buf));
	memcpy(buf + m, f + o.inner_off, tail);
	REQUIRE(fc_outer_set_udp_csum(buf, total) == 0);
	REQUIRE(fc_outer_decode(buf, total, port, &o2) == m);
	outer_same(&o, &o2);
	REQUIRE(memcmp(buf + o2.inner_off, f + o.inner_off, tail) == 0);
}

static void fuzz_psp(const uint8_t *p, size_t len)
{
	struct fc_psp_info a, b;
	size_t ioff, ilen, ioff2, ilen2, tail;
	int n, m;

	n = fc_psp_decode(p, len, &a, &ioff, &ilen);
	if (n < 0)
		return;
	REQUIRE((size_t)n == ioff && ioff + ilen + a.icv_len == len);
	m = fc_psp_encode(&a, buf, sizeof(buf));
	REQUIRE(m == n);
	tail = ilen + a.icv_len;
	memcpy(buf + m, p + ioff, tail);
	REQUIRE(fc_psp_decode(buf, (size_t)m + tail, &b, &ioff2, &ilen2) == n);
	psp_same(&a, &b);
	REQUIRE(ioff2 == ioff && ilen2 == ilen);
	/* the header bytes agree except the reserved bits and skipped extension bytes */
	REQUIRE(memcmp(buf, p, 2) == 0 && (buf[2] & 0x3F) == (p[2] & 0x3F));
	REQUIRE(memcmp(buf + 3, p + 3, FC_PSP_HDR_LEN - 3 + (a.has_vc ? FC_PSP_VC_LEN : 0)) == 0);
}

/* Recomputes the IPv4 header checksum (if any) and the UDP checksum of f in place. */
static void fix_csums(uint8_t *f, size_t len)
{
	size_t off = 12, ntags = 0, hl;
	uint16_t c;

	/* tags as the decoder accepts them; a wrong guess only costs a wasted decode */
	while (off + 4 <= len && ntags < 2 && (f[off] == 0x81 || f[off] == 0x88) &&
	       (f[off + 1] == 0x00 || f[off + 1] == 0xA8)) {
		off += 4;
		ntags++;
	}
	off += 2;
	if (off + 20 <= len && f[off - 2] == 0x08 && f[off - 1] == 0x00) {
		hl = (f[off] & 0xFu) * 4;
		if (hl >= 20 && off + hl <= len) {
			f[off + 10] = 0;
			f[off + 11] = 0;
			c = fc_inet_csum_fold(fc_inet_csum_add(0, f + off, hl));
			f[off + 10] = (uint8_t)(c >> 8);
			f[off + 11] = (uint8_t)c;
		}
	}
	(void)fc_outer_set_udp_csum(f, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fc_outer o;
	uint16_t port;

	if (size < 2)
		return 0;
	port = (uint16_t)(data[0] << 8 | data[1]);
	data += 2;
	size -= 2;
	fuzz_outer(data, size, port);
	fuzz_psp(data, size);
	if (size <= sizeof(fixed) && fc_outer_decode(data, size, port, &o) == -FC_WIRE_ECSUM) {
		memcpy(fixed, data, size);
		fix_csums(fixed, size);
		fuzz_outer(fixed, size, port);
	}
	return 0;
}
