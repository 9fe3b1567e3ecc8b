/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * falcon_xdp.bpf.c - falcon's receive fast path (DESIGN.md, "What XDP does").
 *
 * Layers parsed (include/falcon/wire.h has the layouts):
 *   Ethernet | up to FC_XDP_VLAN_MAX tags (0x8100 / 0x88A8) | IPv4 (IHL >= 5, options
 *   skipped, not a fragment) or IPv6 (next header UDP, no extension headers) | UDP to
 *   falcon_port | PSP (next header 252) | Falcon header.
 *
 * Verdicts:
 *   - not IP/UDP to falcon_port, or truncated before the UDP port: XDP_PASS untouched,
 *     counted NOT_FALCON (the kernel stack decides what to do with it);
 *   - to falcon_port but failing an integrity check (spec 9.2.2.1): XDP_DROP, one DROP_*
 *     reason;
 *   - otherwise the connection checks and the window, by the connection the CID names
 *     (falcon_conns, include/falcon/xdp_conn.h):
 *       unknown CID, wrong security mode: XDP_DROP;
 *       FC_XDP_CONN_PSP (Falcon header encrypted): SPI (9.2.2.3) and replay (9.2.2.2)
 *         checked read-only, then steered to AF_XDP unmarked; the daemon decrypts and
 *         runs the windows;
 *       FC_XDP_CONN_WINDOW (security none, PSP version NULL): ACK/EACK/NACK with a base
 *         below our transmit base dropped (9.2.3), others steered; Push Data, Pull
 *         Request, Pull Data run fc_win_xdp_mark (9.2.2.4, window.h's XDP contract):
 *         new, or received but not taken by the engine for over 8 ms ->
 *         redirected flagged MARKED; duplicate of a packet the engine has or of one
 *         marked just now, or old -> answered with a BACK built in place (XDP_TX);
 *         out of window -> dropped, OWN and AR-pending set for the daemon's next EACK;
 *         Resync steered unmarked;
 *       neither flag: steered unmarked.
 *     Nothing is marked or answered for a queue without an AF_XDP socket in falcon_xsks,
 *     or when the frame has no room for its metadata: XDP_PASS, and the daemon's UDP
 *     socket gets the packet and runs the windows itself.
 * Every redirected frame carries struct fc_xdp_meta right before its first byte. Every
 * read is checked against data_end; the length checks are done on the UDP length, which
 * is first checked against the frame. Counters: include/falcon/xdp_stats.h (global) and
 * struct fc_xdp_conn_cnt (per connection slot).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "falcon/wire.h"
#include "falcon/window.h"
#include "falcon/xdp_conn.h"
#include "falcon/xdp_stats.h"
#include "falcon_maps.h"

/* GPL-compatible so that every XDP helper is available; see the SPDX line. */
char LICENSE[] SEC("license") = "GPL";

/* Load-time knobs: set skel->rodata->NAME before falcon_xdp__load(). */
/* UDP destination port of Falcon-over-PSP, host order. */
const volatile __u16 falcon_port = FC_UDP_PORT_DEFAULT;
/* TTL / hop limit of the ACKs XDP sends, and the initial TTL peers send with: the hop
 * count in an ACK is falcon_ack_ttl - received TTL (falcond's FC_IO_UDP_TTL, 64). */
const volatile __u8 falcon_ack_ttl = 64;

/* VLAN tags skipped at most (802.1ad outer + 802.1Q inner). */
#define FC_XDP_VLAN_MAX 2
#define FC_XDP_L3_OFF_MAX (sizeof(struct fc_eth_hdr) + FC_XDP_VLAN_MAX * sizeof(struct fc_vlan_hdr))
/* PSP header length = FC_XDP_PSP_UNIT * (1 + hdr_ext_len): 16 bytes (hdr_ext_len 1),
 * 24 with the virtualization cookie (hdr_ext_len 2, V = 1), at most 2048. */
#define FC_XDP_PSP_UNIT 8
/* Bytes of the Falcon header in the clear: word 0 (version, CID) when PSP encrypts
 * (crypt offset 1, spec 7.1); words 0 and 1 (+ packet type) read with PSP version NULL. */
#define FC_XDP_CLEAR_ENC 4
#define FC_XDP_CLEAR_NULL 8
/* Smallest Falcon header: the base header alone (Pull Data, spec 7.4). */
#define FC_XDP_FALCON_MIN_HDR_LEN ((__u32)sizeof(struct fc_pull_data_hdr))
/* The ACK XDP sends after its IP header: UDP, PSP (NULL version, no VC), BACK. */
#define FC_XDP_ACK_L4_LEN (sizeof(struct fc_udp_hdr) + FC_PSP_HDR_LEN + sizeof(struct fc_ack_hdr))
#define FC_XDP_ACK_L4_WORDS (FC_XDP_ACK_L4_LEN / 4)

/* A packet to the Falcon port, as the parser found it. Offsets are from the frame's first
 * byte and stay valid across helpers that move data_end or data_meta; pointers do not. */
struct fc_xdp_pkt {
	struct fc_udp_hdr *udp;
	struct fc_psp_hdr *psp;
	void *falcon;
	__u32 ip_payload_len; /* bytes after the IP header (UDP header included) */
	__u32 l3_off;         /* IP header: 14 + 4 per VLAN tag */
	__u32 l4_off;         /* UDP header */
	__u32 ipv6;
	__u32 ttl;            /* received TTL / hop limit */
	__u32 type;           /* cleartext packet type (PSP version NULL) */
};

/* What the ACK for a duplicate needs from the duplicate (spec 7.7.1). */
struct fc_xdp_dup {
	__u64 iv;  /* PSP IV: its transmit time, ns */
	__u32 ttl; /* its TTL / hop limit */
};

static __always_inline void fc_xdp_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&falcon_counters, &idx);

	if (v)
		*v += 1; /* per-CPU value: XDP does not migrate mid-packet */
}

/* Per-connection counter, per CPU; cc may be NULL (counters map smaller than conns). */
#define FC_XDP_CC_INC(cc, field)          \
	do {                              \
		if (cc)                   \
			(cc)->field += 1; \
	} while (0)

/* Skip Ethernet and up to FC_XDP_VLAN_MAX tags. Returns the L3 header's offset (*proto =
 * its ethertype, network order), or 0 if the frame ends first. */
static __always_inline __u32 fc_xdp_l2(void *data, void *data_end, __be16 *proto)
{
	struct fc_eth_hdr *eth = data;
	struct fc_vlan_hdr *vlan;
	__u32 off = sizeof(*eth);
	int i;

	if ((void *)(eth + 1) > data_end)
		return 0;
	*proto = eth->proto;
	for (i = 0; i < FC_XDP_VLAN_MAX; i++) {
		if (*proto != bpf_htons(FC_ETH_P_8021Q) && *proto != bpf_htons(FC_ETH_P_8021AD))
			break;
		vlan = data + off;
		if ((void *)(vlan + 1) > data_end)
			return 0;
		*proto = vlan->proto;
		off += sizeof(*vlan);
	}
	return off;
}

/* IPv4 without fragmentation carrying UDP. Returns FC_XDP_CNT_FALCON_IPV4 and fills pk
 * (udp not yet bounds-checked), FC_XDP_CNT_IPV4_FRAG or FC_XDP_CNT_NOT_FALCON. */
static __always_inline __u32 fc_xdp_ipv4(struct fc_ipv4_hdr *ip4, void *data_end,
					 struct fc_xdp_pkt *pk)
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
	pk->udp = (void *)ip4 + ihl_bytes;
	pk->l4_off = pk->l3_off + ihl_bytes;
	pk->ip_payload_len = tot_len >= ihl_bytes ? tot_len - ihl_bytes : 0;
	pk->ttl = ip4->ttl;
	return FC_XDP_CNT_FALCON_IPV4;
}

/* IPv6 whose next header is UDP (any extension header: not Falcon). Returns
 * FC_XDP_CNT_FALCON_IPV6 and fills pk, or FC_XDP_CNT_NOT_FALCON. */
static __always_inline __u32 fc_xdp_ipv6(struct fc_ipv6_hdr *ip6, void *data_end,
					 struct fc_xdp_pkt *pk)
{
	if ((void *)(ip6 + 1) > data_end)
		return FC_XDP_CNT_NOT_FALCON;
	if ((bpf_ntohl(ip6->ver_tc_flow) >> 28) != 6 || ip6->nexthdr != FC_IPPROTO_UDP)
		return FC_XDP_CNT_NOT_FALCON;
	pk->udp = (void *)(ip6 + 1);
	pk->l4_off = pk->l3_off + sizeof(*ip6);
	pk->ip_payload_len = bpf_ntohs(ip6->payload_len);
	pk->ipv6 = 1;
	pk->ttl = ip6->hop_limit;
	return FC_XDP_CNT_FALCON_IPV6;
}

/* Find UDP to falcon_port. Returns FC_XDP_CNT_FALCON_IPV4/_IPV6 with pk filled and
 * pk->udp bounds-checked, else FC_XDP_CNT_NOT_FALCON or FC_XDP_CNT_IPV4_FRAG. */
static __always_inline __u32 fc_xdp_find_udp(void *data, void *data_end, struct fc_xdp_pkt *pk)
{
	__be16 proto = 0;
	__u32 off = fc_xdp_l2(data, data_end, &proto), res;

	if (!off || off > FC_XDP_L3_OFF_MAX)
		return FC_XDP_CNT_NOT_FALCON;
	pk->l3_off = off;
	if (proto == bpf_htons(FC_ETH_P_IPV4))
		res = fc_xdp_ipv4(data + off, data_end, pk);
	else if (proto == bpf_htons(FC_ETH_P_IPV6))
		res = fc_xdp_ipv6(data + off, data_end, pk);
	else
		return FC_XDP_CNT_NOT_FALCON;
	if (res == FC_XDP_CNT_NOT_FALCON || res == FC_XDP_CNT_IPV4_FRAG)
		return res;
	if ((void *)(pk->udp + 1) > data_end)
		return FC_XDP_CNT_NOT_FALCON;
	if (pk->udp->dest != bpf_htons(falcon_port))
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

/* Integrity checks of spec 9.2.2.1 on a packet to the Falcon port; fills pk->psp and
 * pk->falcon. Returns FC_XDP_CNT_ENCRYPTED, FC_XDP_CNT_PKT_TYPE_0 + type, or a DROP_*
 * reason. */
static __always_inline __u32 fc_xdp_check_falcon(struct fc_xdp_pkt *pk, void *data_end)
{
	struct fc_udp_hdr *udp = pk->udp;
	struct fc_psp_hdr *psp = (void *)(udp + 1);
	__u32 udp_len, rem, psp_len, v;
	__u8 flags;

	/* "validate the length in the UDP header against the number of bytes received":
	 * the IP length must fit in the frame (bytes after it are L2 padding) and the UDP
	 * length must equal the IP payload length. */
	if ((void *)udp + pk->ip_payload_len > data_end)
		return FC_XDP_CNT_DROP_LEN;
	udp_len = bpf_ntohs(udp->len);
	if (udp_len != pk->ip_payload_len || udp_len < sizeof(*udp))
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
	pk->psp = psp;
	pk->falcon = (void *)psp + psp_len;

	if (FC_GET(flags, FC_PSP_VER) != FC_PSP_VER_NULL)
		return fc_xdp_falcon_enc(pk->falcon, rem, data_end);
	return fc_xdp_falcon_clear(pk->falcon, rem, data_end);
}

/* ------------------------------------------------------------------------ */
/* verdicts                                                                   */

static __always_inline int fc_xdp_reject(__u32 reason)
{
	fc_xdp_count(FC_XDP_CNT_REJECT);
	fc_xdp_count(reason);
	return XDP_DROP;
}

/* Before anything is marked or answered: is there an AF_XDP socket on this queue, and
 * room for the frame metadata? Reserves the metadata (magic, flags 0) and returns 0, or
 * returns FC_XDP_CNT_NO_XSK / FC_XDP_CNT_NO_META with the frame unchanged. */
static __always_inline __u32 fc_xdp_prepare(struct xdp_md *ctx)
{
	__u32 q = ctx->rx_queue_index;
	struct fc_xdp_meta *m;
	void *data;

	if (!bpf_map_lookup_elem(&falcon_xsks, &q))
		return FC_XDP_CNT_NO_XSK;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct fc_xdp_meta)))
		return FC_XDP_CNT_NO_META;
	data = (void *)(long)ctx->data;
	m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > data) /* cannot happen: just reserved */
		return FC_XDP_CNT_NO_META;
	m->magic = FC_XDP_META_MAGIC;
	m->flags = 0;
	return 0;
}

/* XDP_PASS for reason NO_XSK / NO_META: the stack (falcond's UDP socket) gets it. */
static __always_inline int fc_xdp_pass(__u32 reason, struct fc_xdp_conn_cnt *cc)
{
	fc_xdp_count(reason);
	FC_XDP_CC_INC(cc, passed);
	return XDP_PASS;
}

/* Redirect a prepared frame (fc_xdp_prepare) into its queue's AF_XDP socket with meta
 * flags. A socket removed since fc_xdp_prepare: XDP_PASS, counted NO_XSK. */
static __always_inline int fc_xdp_redirect(struct xdp_md *ctx, __u32 flags,
					   struct fc_xdp_conn_cnt *cc)
{
	void *data = (void *)(long)ctx->data;
	struct fc_xdp_meta *m = (void *)(long)ctx->data_meta;
	long act;

	if ((void *)(m + 1) > data) /* cannot happen: prepared */
		return fc_xdp_pass(FC_XDP_CNT_NO_META, cc);
	m->flags = flags;
	act = bpf_redirect_map(&falcon_xsks, ctx->rx_queue_index, XDP_PASS);
	if (act != XDP_REDIRECT)
		return fc_xdp_pass(FC_XDP_CNT_NO_XSK, cc);
	fc_xdp_count(FC_XDP_CNT_REDIRECT);
	FC_XDP_CC_INC(cc, redirected);
	if (flags & FC_XDP_META_MARKED) {
		fc_xdp_count(FC_XDP_CNT_MARKED);
		FC_XDP_CC_INC(cc, marked);
	}
	return (int)act;
}

/* Steer without touching any state: prepare, then redirect unmarked. */
static __always_inline int fc_xdp_steer(struct xdp_md *ctx, struct fc_xdp_conn_cnt *cc)
{
	__u32 r = fc_xdp_prepare(ctx);

	if (r)
		return fc_xdp_pass(r, cc);
	return fc_xdp_redirect(ctx, 0, cc);
}

/* ------------------------------------------------------------------------ */
/* the ACK for a duplicate (spec 7.7.1, 9.2.2.4), built in place                */

/* One's-complement sum of n 32-bit words, folded to 16 bits (RFC 1071: byte-order
 * independent, so the words are summed as they lie in memory). */
static __always_inline __u32 fc_xdp_csum_words(const __u32 *w, __u32 n, __u64 sum)
{
	__u32 i;

	for (i = 0; i < n && i < 32; i++)
		sum += w[i];
	sum = (sum & 0xFFFFFFFFull) + (sum >> 32);
	sum = (sum & 0xFFFFFFFFull) + (sum >> 32);
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (__u32)sum;
}

/* Answer the duplicate (or old) packet in the prepared frame with a BACK to the peer:
 * rdbpsn/rrbpsn = our windows' bases now, t1 = the duplicate's IV, t2 = now, hop count
 * from its TTL, other CC fields and OWN 0, in PSP NULL (IV = now); Ethernet addresses and
 * IP addresses swapped, UDP from our Falcon port (the duplicate's destination) to the
 * peer's (c->remote_port, else falcon_port; the duplicate's source port is flow entropy,
 * docs/wire.md). The frame is resized to exactly the ACK; L2 tags are kept, IPv4 options
 * are not. Returns XDP_TX, or when the frame cannot be resized the duplicate is steered
 * unmarked so that the daemon answers it. */
static __always_inline int fc_xdp_answer(struct xdp_md *ctx, const struct fc_xdp_pkt *pk,
					 const struct fc_xdp_dup *dup, struct fc_xdp_conn *c,
					 struct fc_xdp_conn_cnt *cc)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	__u32 l3_off = pk->l3_off, l4_off = pk->l4_off, ipv6 = pk->ipv6;
	__u32 l4[FC_XDP_ACK_L4_WORDS], ip[5], addr[8], i, n_ip, dport, hops;
	__u8 mac[2 * FC_ETH_ALEN];
	__u64 now = bpf_ktime_get_ns();
	__u16 remote_port = c->remote_port;
	__u32 flow = 0, csum;
	int delta;

	if (l3_off > FC_XDP_L3_OFF_MAX || l4_off > FC_XDP_L3_OFF_MAX + 60)
		goto steer; /* cannot happen: the parser bounds both */
	if (data + sizeof(struct fc_eth_hdr) > data_end ||
	    data + l4_off + sizeof(struct fc_udp_hdr) > data_end)
		goto steer;
	/* what the reply takes from the duplicate, before the frame is resized */
	__builtin_memcpy(mac, data, sizeof(mac));
	dport = bpf_ntohs(((struct fc_udp_hdr *)(data + l4_off))->dest);
	if (ipv6) {
		struct fc_ipv6_hdr *ip6 = data + l3_off;

		if ((void *)(ip6 + 1) > data_end)
			goto steer;
		flow = bpf_ntohl(ip6->ver_tc_flow) & FC_IPV6_FLOW_LABEL_MASK;
		__builtin_memcpy(addr, ip6->daddr, 16); /* our address: the new source */
		__builtin_memcpy(addr + 4, ip6->saddr, 16);
	} else {
		struct fc_ipv4_hdr *ip4 = data + l3_off;

		if ((void *)(ip4 + 1) > data_end)
			goto steer;
		addr[0] = ip4->daddr;
		addr[1] = ip4->saddr;
	}

	n_ip = ipv6 ? sizeof(struct fc_ipv6_hdr) : sizeof(struct fc_ipv4_hdr);
	delta = (int)(l3_off + n_ip + FC_XDP_ACK_L4_LEN) - (int)bpf_xdp_get_buff_len(ctx);
	if (bpf_xdp_adjust_tail(ctx, delta))
		goto steer;

	/* UDP | PSP NULL | BACK, as 32-bit words in wire order */
	hops = dup->ttl <= falcon_ack_ttl ? falcon_ack_ttl - dup->ttl : 0;
	l4[0] = bpf_htonl(dport << 16 | (remote_port ? remote_port : falcon_port));
	l4[1] = bpf_htonl((__u32)FC_XDP_ACK_L4_LEN << 16); /* length | checksum 0 */
	l4[2] = bpf_htonl((__u32)FC_PSP_NEXT_HDR_FALCON << 24 | 1u << 16 /* hdr_ext_len */ |
			  (__u32)FC_PSP_CRYPT_OFF_FALCON << 8 |
			  FC_PUT(FC_PSP_VER, FC_PSP_VER_NULL) | FC_PSP_ONE_BIT);
	l4[3] = 0; /* SPI: none without PSP, as encap_null */
	l4[4] = bpf_htonl((__u32)(now >> 32)); /* IV = transmit time, ns */
	l4[5] = bpf_htonl((__u32)now);
	l4[6] = bpf_htonl(FC_PUT(FC_W0_VERSION, FALCON_VERSION) |
			  FC_PUT(FC_W0_CID, fc_load_acq32(&c->remote_cid)));
	l4[7] = bpf_htonl(FC_PUT(FC_W1_PKT_TYPE, FC_PKT_BACK));
	l4[8] = bpf_htonl(fc_load_acq32(&c->rx.data.base));
	l4[9] = bpf_htonl(fc_load_acq32(&c->rx.req.base));
	l4[10] = bpf_htonl(fc_ns_to_ts(dup->iv)); /* t1 */
	l4[11] = bpf_htonl(fc_ns_to_ts(now));     /* t2 */
	l4[12] = bpf_htonl(FC_PUT(FC_CC_HOPS, hops));
	l4[13] = 0; /* RUE info 0, OWN 0 */

	if (ipv6) {
		ip[0] = bpf_htonl(6u << 28 | flow);
		ip[1] = bpf_htonl((__u32)FC_XDP_ACK_L4_LEN << 16 | FC_IPPROTO_UDP << 8 |
				  falcon_ack_ttl);
		/* UDP checksum, mandatory over IPv6: pseudo header (addresses, length,
		 * next header) and the datagram */
		csum = fc_xdp_csum_words(addr, 8, (__u64)bpf_htonl(FC_XDP_ACK_L4_LEN) +
							  bpf_htonl(FC_IPPROTO_UDP));
		csum = fc_xdp_csum_words(l4, FC_XDP_ACK_L4_WORDS, csum);
		csum = ~csum & 0xFFFF;
		((__u16 *)l4)[3] = csum ? (__u16)csum : 0xFFFF;
	} else {
		ip[0] = bpf_htonl(0x45u << 24 | (__u32)(n_ip + FC_XDP_ACK_L4_LEN));
		ip[1] = bpf_htonl(FC_IPV4_DF); /* id 0 | DF */
		ip[2] = bpf_htonl((__u32)falcon_ack_ttl << 24 | FC_IPPROTO_UDP << 16);
		ip[3] = addr[0];
		ip[4] = addr[1];
		csum = ~fc_xdp_csum_words(ip, 5, 0) & 0xFFFF;
		((__u16 *)ip)[5] = (__u16)csum; /* UDP checksum 0 over IPv4: not computed */
	}

	/* the metadata is not part of an XDP_TX frame */
	bpf_xdp_adjust_meta(ctx, (int)sizeof(struct fc_xdp_meta));
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + l3_off + sizeof(struct fc_ipv4_hdr) + FC_XDP_ACK_L4_LEN > data_end)
		goto bad;
	__builtin_memcpy(data, mac + FC_ETH_ALEN, FC_ETH_ALEN); /* dst = the sender */
	__builtin_memcpy(data + FC_ETH_ALEN, mac, FC_ETH_ALEN);
	if (ipv6) {
		__u32 *d = data + l3_off;

		if ((void *)(d + 10 + FC_XDP_ACK_L4_WORDS) > data_end)
			goto bad;
		d[0] = ip[0];
		d[1] = ip[1];
		for (i = 0; i < 8; i++)
			d[2 + i] = addr[i];
		for (i = 0; i < FC_XDP_ACK_L4_WORDS; i++)
			d[10 + i] = l4[i];
	} else {
		__u32 *d = data + l3_off;

		for (i = 0; i < 5; i++)
			d[i] = ip[i];
		for (i = 0; i < FC_XDP_ACK_L4_WORDS; i++)
			d[5 + i] = l4[i];
	}
	fc_xdp_count(FC_XDP_CNT_DUP_ACKED);
	FC_XDP_CC_INC(cc, dup_acked);
	return XDP_TX;

steer:
	fc_xdp_count(FC_XDP_CNT_ACK_ERR);
	return fc_xdp_redirect(ctx, 0, cc);
bad: /* cannot happen: the frame was resized to hold the ACK */
	fc_xdp_count(FC_XDP_CNT_ACK_ERR);
	return XDP_ABORTED;
}

/* ------------------------------------------------------------------------ */
/* the connection checks and the window                                       */

/* A cleartext packet of a FC_XDP_CONN_WINDOW connection (security none). */
static __always_inline int fc_xdp_window(struct xdp_md *ctx, struct fc_xdp_pkt *pk,
					 struct fc_xdp_conn *c, struct fc_xdp_conn_cnt *cc)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *falcon = pk->falcon;
	struct fc_psp_hdr *psp = pk->psp;
	struct fc_xdp_dup dup = { .ttl = pk->ttl };
	enum fc_win_verdict v;
	struct fc_win *w;
	__u32 type = pk->type, psn, r;
	__be64 iv;

	switch (type) {
	case FC_PKT_BACK:
	case FC_PKT_EACK:
	case FC_PKT_NACK:
		/* spec 9.2.3: an ACK (or NACK) older than what we already took is discarded:
		 * either base serially below our transmit base (pdl.c check_bases) */
		if (falcon + 16 > data_end)
			return XDP_DROP; /* cannot happen: length checked */
		if (fc_sn_lt(fc_hdr_word(falcon, 3), fc_load_acq32(&c->rx.tx_bpsn[0])) ||
		    fc_sn_lt(fc_hdr_word(falcon, 2), fc_load_acq32(&c->rx.tx_bpsn[1]))) {
			FC_XDP_CC_INC(cc, stale_ack);
			return fc_xdp_reject(FC_XDP_CNT_REJECT_STALE_ACK);
		}
		return fc_xdp_steer(ctx, cc);
	case FC_PKT_PUSH_DATA:
	case FC_PKT_PULL_REQ:
	case FC_PKT_PULL_DATA:
		break;
	default: /* Resync: the engine runs its own rules on it (section 11) */
		return fc_xdp_steer(ctx, cc);
	}

	if (falcon + sizeof(struct fc_base_hdr) > data_end || (void *)(psp + 1) > data_end)
		return XDP_DROP; /* cannot happen: length checked */
	psn = fc_hdr_word(falcon, 4);
	__builtin_memcpy(&iv, &psp->iv, sizeof(iv));
	dup.iv = fc_ntoh64(iv);

	r = fc_xdp_prepare(ctx); /* pk's pointers are invalid from here on */
	if (r)
		return fc_xdp_pass(r, cc);

	/* spec 9.2.2.4 under the XDP contract (window.h): Pull Request in the request window,
	 * the others in the data window, marked received only; the engine acknowledges what
	 * it has taken, so a marked packet lost before the daemon (AF_XDP ring full) passes
	 * again when the sender retransmits it, and only what the engine has is answered */
	w = type == FC_PKT_PULL_REQ ? &c->rx.req : &c->rx.data;
	v = fc_win_xdp_mark(w, psn, (__u32)(bpf_ktime_get_ns() >> 17));
	switch (v) {
	case FC_WIN_NEW:
		return fc_xdp_redirect(ctx, FC_XDP_META_MARKED, cc);
	case FC_WIN_OOW:
		/* OWN set by fc_win_mark_rx; the daemon's next poll sends the EACK carrying it */
		fc_fetch_or64(&c->rx.ar_pending, 1);
		FC_XDP_CC_INC(cc, oow);
		return fc_xdp_reject(FC_XDP_CNT_REJECT_OOW);
	default: /* DUP, OLD: drop, answer with an ACK (section 11 receiver table) */
		return fc_xdp_answer(ctx, pk, &dup, c, cc);
	}
}

/* A packet that passed the integrity checks: the connection its CID names decides. */
static __always_inline int fc_xdp_conn(struct xdp_md *ctx, struct fc_xdp_pkt *pk, int enc)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *falcon = pk->falcon;
	struct fc_psp_hdr *psp = pk->psp;
	struct fc_xdp_conn_cnt *cc;
	struct fc_xdp_conn *c;
	__u32 cid, slot, flags, spi;
	__u64 rt, floor_ns, iv;
	__be64 iv_be;
	__be32 spi_be;

	if (falcon + FC_XDP_CLEAR_ENC > data_end || (void *)(psp + 1) > data_end)
		return XDP_DROP; /* cannot happen: length checked */
	cid = fc_hdr_cid(falcon); /* word 0 is always clear (spec 7.1) */
	slot = cid & FC_XDP_SLOT_MASK;
	c = bpf_map_lookup_elem(&falcon_conns, &slot);
	/* a slot is published by storing its CID last and retired by zeroing it first
	 * (xdp_conn.h); the generation bits tell a reused slot from its old connection */
	if (!c || !cid || fc_load_acq32(&c->cid) != cid)
		return fc_xdp_reject(FC_XDP_CNT_REJECT_UNKNOWN_CID);
	cc = bpf_map_lookup_elem(&falcon_conn_counters, &slot);
	FC_XDP_CC_INC(cc, rx_pkts);
	flags = fc_load_acq32(&c->flags);

	if (flags & FC_XDP_CONN_PSP) {
		if (!enc) {
			FC_XDP_CC_INC(cc, bad_mode);
			return fc_xdp_reject(FC_XDP_CNT_REJECT_MODE);
		}
		/* spec 9.2.2.3: an SPI of the peer's tunnel (its low bits; rotation changes
		 * only generation and phase, which the daemon checks after decryption) */
		__builtin_memcpy(&spi_be, &psp->spi, sizeof(spi_be));
		spi = bpf_ntohl(spi_be);
		if (!spi || (spi & FC_XDP_SPI_SESS_MASK) != fc_load_acq32(&c->spi_sess)) {
			FC_XDP_CC_INC(cc, bad_spi);
			return fc_xdp_reject(FC_XDP_CNT_REJECT_BAD_SPI);
		}
		/* spec 9.2.2.2, read-only (encap_psp.h fc_psp_replay_check): refused when
		 * iv <= remote time - margin, modulo 2^64; remote time 0: no baseline yet.
		 * The daemon advances remote_time after it has authenticated the packet. */
		__builtin_memcpy(&iv_be, &psp->iv, sizeof(iv_be));
		iv = fc_ntoh64(iv_be);
		rt = fc_load64(&c->rx.remote_time);
		floor_ns = rt - fc_load64(&c->replay_margin_ns);
		if (rt && (__s64)(iv - floor_ns) <= 0) {
			FC_XDP_CC_INC(cc, replay);
			return fc_xdp_reject(FC_XDP_CNT_REJECT_REPLAY);
		}
		return fc_xdp_steer(ctx, cc);
	}
	if (!(flags & FC_XDP_CONN_WINDOW))
		return fc_xdp_steer(ctx, cc);
	if (enc) {
		FC_XDP_CC_INC(cc, bad_mode);
		return fc_xdp_reject(FC_XDP_CNT_REJECT_MODE);
	}
	return fc_xdp_window(ctx, pk, c, cc);
}

SEC("xdp")
int falcon_xdp_rx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct fc_xdp_pkt pk = {};
	__u32 res;

	fc_xdp_count(FC_XDP_CNT_RX);
	res = fc_xdp_find_udp(data, data_end, &pk);
	if (res != FC_XDP_CNT_FALCON_IPV4 && res != FC_XDP_CNT_FALCON_IPV6) {
		if (res == FC_XDP_CNT_IPV4_FRAG)
			fc_xdp_count(FC_XDP_CNT_IPV4_FRAG);
		fc_xdp_count(FC_XDP_CNT_NOT_FALCON);
		return XDP_PASS;
	}
	fc_xdp_count(res);

	res = fc_xdp_check_falcon(&pk, data_end);
	if (res >= FC_XDP_CNT_DROP_LEN && res <= FC_XDP_CNT_DROP_HDR_LEN) {
		fc_xdp_count(FC_XDP_CNT_DROP);
		fc_xdp_count(res);
		return XDP_DROP;
	}
	fc_xdp_count(FC_XDP_CNT_FALCON_OK);
	fc_xdp_count(res);
	pk.type = res - FC_XDP_CNT_PKT_TYPE_0; /* meaningless when encrypted: not used */
	return fc_xdp_conn(ctx, &pk, res == FC_XDP_CNT_ENCRYPTED);
}
