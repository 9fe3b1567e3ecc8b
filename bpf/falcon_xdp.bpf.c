/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * falcon_xdp.bpf.c - receive fast path, step 1: recognise Falcon packets, run the header
 * integrity checks of spec 9.2.2.1 that need no secret, count.
 *
 * Layers parsed (include/falcon/wire.h has the layouts):
 *   Ethernet | up to FC_XDP_VLAN_MAX tags (0x8100 / 0x88A8) | IPv4 (IHL >= 5, options
 *   skipped, not a fragment) or IPv6 (next header UDP, no extension headers) | UDP to
 *   falcon_port | PSP (next header 252) | Falcon header.
 *
 * Verdicts:
 *   - not IP/UDP to falcon_port, or truncated before the UDP port: XDP_PASS untouched,
 *     counted NOT_FALCON (the kernel stack decides what to do with it);
 *   - to falcon_port but failing an integrity check: XDP_DROP, one DROP_* reason;
 *   - valid: XDP_PASS for now (AF_XDP redirect comes later), counted per packet type or,
 *     when PSP encrypts the Falcon header, as ENCRYPTED.
 * The program never writes the packet. Every read is checked against data_end; the
 * length checks are done on the UDP length, which is first checked against the frame.
 * Counters: include/falcon/xdp_stats.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "falcon/wire.h"
#include "falcon/xdp_stats.h"
#include "falcon_maps.h"

/* GPL-compatible so that later steps may use every XDP helper; see the SPDX line. */
char LICENSE[] SEC("license") = "GPL";

/* UDP destination port of Falcon-over-PSP, host order. Load-time knob: set
 * skel->rodata->falcon_port before falcon_xdp__load(). */
const volatile __u16 falcon_port = FC_UDP_PORT_DEFAULT;

/* VLAN tags skipped at most (802.1ad outer + 802.1Q inner). */
#define FC_XDP_VLAN_MAX 2
/* PSP header length = FC_XDP_PSP_UNIT * (1 + hdr_ext_len): 16 bytes (hdr_ext_len 1),
 * 24 with the virtualization cookie (hdr_ext_len 2, V = 1), at most 2048. */
#define FC_XDP_PSP_UNIT 8
/* Bytes of the Falcon header in the clear: word 0 (version, CID) when PSP encrypts
 * (crypt offset 1, spec 7.1); words 0 and 1 (+ packet type) read with PSP version NULL. */
#define FC_XDP_CLEAR_ENC 4
#define FC_XDP_CLEAR_NULL 8
/* Smallest Falcon header: the base header alone (Pull Data, spec 7.4). */
#define FC_XDP_FALCON_MIN_HDR_LEN ((__u32)sizeof(struct fc_pull_data_hdr))

/* A packet to the Falcon port: its UDP header and what the IP header says follows. */
struct fc_xdp_l4 {
	struct fc_udp_hdr *udp;
	__u32 ip_payload_len; /* bytes after the IP header (UDP header included) */
};

static __always_inline void fc_xdp_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&falcon_counters, &idx);

	if (v)
		*v += 1; /* per-CPU value: XDP does not migrate mid-packet */
}

/* Skip Ethernet and up to FC_XDP_VLAN_MAX tags. Returns the L3 header (*proto = its
 * ethertype, network order), or NULL if the frame ends first. */
static __always_inline void *fc_xdp_l2(void *data, void *data_end, __be16 *proto)
{
	struct fc_eth_hdr *eth = data;
	struct fc_vlan_hdr *vlan;
	void *pos;
	int i;

	if ((void *)(eth + 1) > data_end)
		return NULL;
	*proto = eth->proto;
	pos = eth + 1;
	for (i = 0; i < FC_XDP_VLAN_MAX; i++) {
		if (*proto != bpf_htons(FC_ETH_P_8021Q) && *proto != bpf_htons(FC_ETH_P_8021AD))
			break;
		vlan = pos;
		if ((void *)(vlan + 1) > data_end)
			return NULL;
		*proto = vlan->proto;
		pos = vlan + 1;
	}
	return pos;
}

/* IPv4 without fragmentation carrying UDP. Returns FC_XDP_CNT_FALCON_IPV4 and fills l4
 * (udp not yet bounds-checked), FC_XDP_CNT_IPV4_FRAG or FC_XDP_CNT_NOT_FALCON. */
static __always_inline __u32 fc_xdp_ipv4(struct fc_ipv4_hdr *ip4, void *data_end,
					 struct fc_xdp_l4 *l4)
{
	__u32 ihl_bytes, tot_len;

	if ((void *)(ip4 + 1) > data_end)
		return FC_XDP_CNT_NOT_FALCON;
	if ((ip4->ver_ihl >> 4) != 4 || (ip4->ver_ihl & 0xF) < 5)
		return FC_XDP_CNT_NOT_FALCON;
	if (ip4->protocol != FC_IPPROTO_UDP)
		return FC_XDP_CNT_NOT_FALCON;
	if (ip4->frag_off & bpf_htons(0x3FFF)) /* MF or a fragment offset */
		return FC_XDP_CNT_IPV4_FRAG;
	ihl_bytes = (ip4->ver_ihl & 0xF) * 4; /* 20..60: options skipped */
	tot_len = bpf_ntohs(ip4->tot_len);
	l4->udp = (void *)ip4 + ihl_bytes;
	l4->ip_payload_len = tot_len >= ihl_bytes ? tot_len - ihl_bytes : 0;
	return FC_XDP_CNT_FALCON_IPV4;
}

/* IPv6 whose next header is UDP (any extension header: not Falcon). Returns
 * FC_XDP_CNT_FALCON_IPV6 and fills l4, or FC_XDP_CNT_NOT_FALCON. */
static __always_inline __u32 fc_xdp_ipv6(struct fc_ipv6_hdr *ip6, void *data_end,
					 struct fc_xdp_l4 *l4)
{
	if ((void *)(ip6 + 1) > data_end)
		return FC_XDP_CNT_NOT_FALCON;
	if ((bpf_ntohl(ip6->ver_tc_flow) >> 28) != 6 || ip6->nexthdr != FC_IPPROTO_UDP)
		return FC_XDP_CNT_NOT_FALCON;
	l4->udp = (void *)(ip6 + 1);
	l4->ip_payload_len = bpf_ntohs(ip6->payload_len);
	return FC_XDP_CNT_FALCON_IPV6;
}

/* Find UDP to falcon_port. Returns FC_XDP_CNT_FALCON_IPV4/_IPV6 with l4 filled and
 * l4->udp bounds-checked, else FC_XDP_CNT_NOT_FALCON or FC_XDP_CNT_IPV4_FRAG. */
static __always_inline __u32 fc_xdp_find_udp(void *data, void *data_end, struct fc_xdp_l4 *l4)
{
	__be16 proto = 0;
	void *l3 = fc_xdp_l2(data, data_end, &proto);
	__u32 res;

	if (!l3)
		return FC_XDP_CNT_NOT_FALCON;
	if (proto == bpf_htons(FC_ETH_P_IPV4))
		res = fc_xdp_ipv4(l3, data_end, l4);
	else if (proto == bpf_htons(FC_ETH_P_IPV6))
		res = fc_xdp_ipv6(l3, data_end, l4);
	else
		return FC_XDP_CNT_NOT_FALCON;
	if (res == FC_XDP_CNT_NOT_FALCON || res == FC_XDP_CNT_IPV4_FRAG)
		return res;
	if ((void *)(l4->udp + 1) > data_end)
		return FC_XDP_CNT_NOT_FALCON;
	if (l4->udp->dest != bpf_htons(falcon_port))
		return FC_XDP_CNT_NOT_FALCON;
	return res;
}

/* Falcon header behind a PSP header that encrypts it: only word 0 is readable.
 * rem = bytes from the Falcon header to the end of the UDP payload (ICV included).
 * Returns FC_XDP_CNT_ENCRYPTED or a DROP_* reason. */
static __always_inline __u32 fc_xdp_falcon_enc(void *falcon, __u32 rem, void *data_end)
{
	if (rem < FC_XDP_CLEAR_ENC || falcon + FC_XDP_CLEAR_ENC > data_end)
		return FC_XDP_CNT_DROP_FALCON_TRUNC;
	if (fc_hdr_version(falcon) != FALCON_VERSION) /* spec 7.2 */
		return FC_XDP_CNT_DROP_VERSION;
	/* the type is ciphertext: at least the smallest header, then the ICV */
	if (rem < FC_XDP_FALCON_MIN_HDR_LEN + FC_PSP_ICV_LEN)
		return FC_XDP_CNT_DROP_HDR_LEN;
	return FC_XDP_CNT_ENCRYPTED;
}

/* Cleartext Falcon header (PSP version NULL: no ICV trailer). Returns
 * FC_XDP_CNT_PKT_TYPE_0 + packet type or a DROP_* reason. */
static __always_inline __u32 fc_xdp_falcon_clear(void *falcon, __u32 rem, void *data_end)
{
	__u32 type;

	if (rem < FC_XDP_CLEAR_NULL || falcon + FC_XDP_CLEAR_NULL > data_end)
		return FC_XDP_CNT_DROP_FALCON_TRUNC;
	if (fc_hdr_version(falcon) != FALCON_VERSION) /* spec 7.2 */
		return FC_XDP_CNT_DROP_VERSION;
	type = fc_hdr_pkt_type(falcon); /* same bits in the base and ACK/NACK headers */
	if (!fc_pkt_type_valid(type))
		return FC_XDP_CNT_DROP_PKT_TYPE;
	if (rem < fc_pkt_hdr_len(type))
		return FC_XDP_CNT_DROP_HDR_LEN;
	return FC_XDP_CNT_PKT_TYPE_0 + type;
}

/* Integrity checks of spec 9.2.2.1 on a packet to the Falcon port. Returns
 * FC_XDP_CNT_ENCRYPTED, FC_XDP_CNT_PKT_TYPE_0 + type, or a DROP_* reason. */
static __always_inline __u32 fc_xdp_check_falcon(const struct fc_xdp_l4 *l4, void *data_end)
{
	struct fc_udp_hdr *udp = l4->udp;
	struct fc_psp_hdr *psp = (void *)(udp + 1);
	__u32 udp_len, rem, psp_len, v;
	__u8 flags;

	/* "validate the length in the UDP header against the number of bytes received":
	 * the IP length must fit in the frame (bytes after it are L2 padding) and the UDP
	 * length must equal the IP payload length. */
	if ((void *)udp + l4->ip_payload_len > data_end)
		return FC_XDP_CNT_DROP_LEN;
	udp_len = bpf_ntohs(udp->len);
	if (udp_len != l4->ip_payload_len || udp_len < sizeof(*udp))
		return FC_XDP_CNT_DROP_LEN;
	rem = udp_len - sizeof(*udp);

	if (rem < FC_PSP_HDR_LEN || (void *)(psp + 1) > data_end)
		return FC_XDP_CNT_DROP_PSP_TRUNC;
	if (psp->next_hdr != FC_PSP_NEXT_HDR_FALCON)
		return FC_XDP_CNT_DROP_PSP_NEXT_HDR;
	flags = psp->s_d_ver_v_1;
	if (!(flags & FC_PSP_ONE_BIT))
		return FC_XDP_CNT_DROP_PSP_ONE_BIT;
	v = FC_GET(flags, FC_PSP_V);
	if (psp->hdr_ext_len < 1 + v) /* IV, then the VC if V = 1 */
		return FC_XDP_CNT_DROP_PSP_EXT_LEN;
	psp_len = FC_XDP_PSP_UNIT * (1 + (__u32)psp->hdr_ext_len);
	if (rem < psp_len)
		return FC_XDP_CNT_DROP_PSP_TRUNC;
	rem -= psp_len;

	if (FC_GET(flags, FC_PSP_VER) != FC_PSP_VER_NULL)
		return fc_xdp_falcon_enc((void *)psp + psp_len, rem, data_end);
	return fc_xdp_falcon_clear((void *)psp + psp_len, rem, data_end);
}

SEC("xdp")
int falcon_xdp_rx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct fc_xdp_l4 l4 = {};
	__u32 res;

	fc_xdp_count(FC_XDP_CNT_RX);
	res = fc_xdp_find_udp(data, data_end, &l4);
	if (res != FC_XDP_CNT_FALCON_IPV4 && res != FC_XDP_CNT_FALCON_IPV6) {
		if (res == FC_XDP_CNT_IPV4_FRAG)
			fc_xdp_count(FC_XDP_CNT_IPV4_FRAG);
		fc_xdp_count(FC_XDP_CNT_NOT_FALCON);
		return XDP_PASS;
	}
	fc_xdp_count(res);

	res = fc_xdp_check_falcon(&l4, data_end);
	if (res >= FC_XDP_CNT_DROP_LEN && res <= FC_XDP_CNT_DROP_HDR_LEN) {
		fc_xdp_count(FC_XDP_CNT_DROP);
		fc_xdp_count(res);
		return XDP_DROP;
	}
	fc_xdp_count(FC_XDP_CNT_FALCON_OK);
	fc_xdp_count(res);
	return XDP_PASS;
}
