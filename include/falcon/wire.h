/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon/wire.h - every on-wire format falcon speaks, shared by BPF and userspace.
 *
 * Layouts (docs/wire.md has the drawings and the reasoning):
 *   outer:  Ethernet [+ up to 2 tags: 802.1ad or 802.1Q outer, 802.1Q inner] | IPv4 or IPv6 | UDP (dst port = Falcon/PSP port)
 *           | PSP header (next header 252) | Falcon header | ULP | PSP ICV trailer
 *   Falcon: spec section 7 (base header, Pull Request, Pull Data, Push Data, Resync,
 *           BACK, EACK, NACK)
 *   RDMA:   RDMA-over-Falcon spec section 8 (RBTH and the extended transport headers)
 *
 * Conventions.
 *   - Every multi-byte field is big endian on the wire. Structs below hold raw wire
 *     words (__be32 and friends) and are packed: no padding, sizeof == wire size.
 *   - The spec draws each 32-bit word with column 0 at the left = most significant bit.
 *     A field drawn in columns [a..b] therefore sits at host bits (31-a)..(31-b) of the
 *     word after byte-swapping. The _SHIFT and _MASK pairs below are in host bit order of
 *     the byte-swapped word.
 *   - This header compiles for BPF (clang -target bpf, with vmlinux.h included first)
 *     and for userspace (C11). Nothing here calls libc. Codec functions that build and
 *     parse whole packets live in daemon/engine/wire_*.{c,h}.
 */
#ifndef FALCON_WIRE_H
#define FALCON_WIRE_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* ------------------------------------------------------------------------ */
/* Byte order                                                                */
/* ------------------------------------------------------------------------ */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define FC_BE16(x) ((__u16)(x))
#define FC_BE32(x) ((__u32)(x))
#define FC_BE64(x) ((__u64)(x))
#else
#define FC_BE16(x) ((__u16)__builtin_bswap16((__u16)(x)))
#define FC_BE32(x) ((__u32)__builtin_bswap32((__u32)(x)))
#define FC_BE64(x) ((__u64)__builtin_bswap64((__u64)(x)))
#endif

static inline __u16 fc_ntoh16(__be16 v) { return FC_BE16((__u16)v); }
static inline __u32 fc_ntoh32(__be32 v) { return FC_BE32((__u32)v); }
static inline __u64 fc_ntoh64(__be64 v) { return FC_BE64((__u64)v); }
static inline __be16 fc_hton16(__u16 v) { return (__be16)FC_BE16(v); }
static inline __be32 fc_hton32(__u32 v) { return (__be32)FC_BE32(v); }
static inline __be64 fc_hton64(__u64 v) { return (__be64)FC_BE64(v); }

/* Extract / insert a field of a host-order word. */
#define FC_GET(word, name) (((word) >> name##_SHIFT) & name##_MASK)
#define FC_PUT(name, val) ((((__u32)(val)) & name##_MASK) << name##_SHIFT)

#define FC_PACKED __attribute__((packed))

/* ------------------------------------------------------------------------ */
/* Outer encapsulation: Ethernet, 802.1Q, IPv4, IPv6, UDP                    */
/* (own names so that both vmlinux.h and libc headers may be included too)   */
/* ------------------------------------------------------------------------ */

#define FC_ETH_ALEN 6
#define FC_ETH_P_IPV4 0x0800
#define FC_ETH_P_IPV6 0x86DD
#define FC_ETH_P_8021Q 0x8100
#define FC_ETH_P_8021AD 0x88A8
#define FC_IPPROTO_UDP 17

struct fc_eth_hdr {
	__u8 dst[FC_ETH_ALEN];
	__u8 src[FC_ETH_ALEN];
	__be16 proto;
} FC_PACKED; /* 14 bytes */

struct fc_vlan_hdr {
	__be16 tci; /* [15:13] PCP, [12] DEI, [11:0] VID */
	__be16 proto;
} FC_PACKED; /* 4 bytes, follows the 0x8100 ethertype */

struct fc_ipv4_hdr {
	__u8 ver_ihl; /* [7:4] version 4, [3:0] IHL in 32-bit words (>= 5) */
	__u8 tos;     /* [7:2] DSCP, [1:0] ECN */
	__be16 tot_len;
	__be16 id;
	__be16 frag_off; /* [15] reserved, [14] DF, [13] MF, [12:0] offset */
	__u8 ttl;
	__u8 protocol;
	__be16 check;
	__be32 saddr;
	__be32 daddr;
} FC_PACKED; /* 20 bytes without options */

struct fc_ipv6_hdr {
	__be32 ver_tc_flow; /* [31:28] version 6, [27:20] traffic class, [19:0] flow label */
	__be16 payload_len;
	__u8 nexthdr;
	__u8 hop_limit;
	__u8 saddr[16];
	__u8 daddr[16];
} FC_PACKED; /* 40 bytes */

#define FC_IPV6_FLOW_LABEL_MASK 0x000FFFFFu
#define FC_IPV6_FLOW_LABEL_MAX 0xFFFFFu
#define FC_IPV4_DF 0x4000u       /* frag_off: don't fragment */
#define FC_IPV4_MF 0x2000u       /* frag_off: more fragments */
#define FC_IPV4_OFF_MASK 0x1FFFu /* frag_off: fragment offset */

struct fc_udp_hdr {
	__be16 source;
	__be16 dest;
	__be16 len;
	__be16 check;
} FC_PACKED; /* 8 bytes */

/* UDP destination port of Falcon-over-PSP. The PSP architecture assigns 1000;
 * falcond and the XDP program take the port as a setting (const volatile in BPF). */
#define FC_UDP_PORT_DEFAULT 1000

/* ------------------------------------------------------------------------ */
/* PSP header (PSP Architecture Specification; Falcon spec 7.1, 9.2.2.2-3)    */
/* ------------------------------------------------------------------------ */

struct fc_psp_hdr {
	__u8 next_hdr;     /* 252 (FC_PSP_NEXT_HDR_FALCON) */
	__u8 hdr_ext_len;  /* header length beyond the first 8 bytes, in 8-byte units */
	__u8 crypt_off;    /* [7:6] reserved, [5:0] crypt offset in 4-byte units, counted
			      from the end of the PSP header (after the VC, if any) */
	__u8 s_d_ver_v_1;  /* [7] S, [6] D, [5:2] version, [1] V, [0] always 1 */
	__be32 spi;        /* [31] key phase, [30:0] key id */
	__be64 iv;         /* transmit time, ns, strictly increasing per SA (docs/wire.md) */
} FC_PACKED; /* 16 bytes; an 8-byte virtualization cookie follows when V = 1 */

#define FC_PSP_HDR_LEN 16
#define FC_PSP_VC_LEN 8
#define FC_PSP_ICV_LEN 16
#define FC_PSP_NEXT_HDR_FALCON 252
/* Falcon spec 7.1: encryption starts after the first 4 bytes of the Falcon header,
 * leaving version and CID in the clear. */
#define FC_PSP_CRYPT_OFF_FALCON 1

#define FC_PSP_CRYPT_OFF_SHIFT 0
#define FC_PSP_CRYPT_OFF_MASK 0x3Fu
#define FC_PSP_S_SHIFT 7
#define FC_PSP_S_MASK 0x1u
#define FC_PSP_D_SHIFT 6
#define FC_PSP_D_MASK 0x1u
#define FC_PSP_VER_SHIFT 2
#define FC_PSP_VER_MASK 0xFu
#define FC_PSP_V_SHIFT 1
#define FC_PSP_V_MASK 0x1u
#define FC_PSP_ONE_BIT 0x1u

/* PSP versions: 0-3 as assigned by PSP; 0xC and 0xF are falcon's private values for the
 * software cipher and for a trusted fabric without encryption (no ICV trailer). */
enum fc_psp_version {
	FC_PSP_VER_AES_GCM_128 = 0,
	FC_PSP_VER_AES_GCM_256 = 1,
	FC_PSP_VER_AES_GMAC_128 = 2,
	FC_PSP_VER_AES_GMAC_256 = 3,
	FC_PSP_VER_CHACHA20_POLY1305 = 0xC,
	FC_PSP_VER_NULL = 0xF,
};

/* Is v one of the PSP versions falcon speaks? */
static inline int fc_psp_version_valid(__u32 v)
{
	switch (v) {
	case FC_PSP_VER_AES_GCM_128:
	case FC_PSP_VER_AES_GCM_256:
	case FC_PSP_VER_AES_GMAC_128:
	case FC_PSP_VER_AES_GMAC_256:
	case FC_PSP_VER_CHACHA20_POLY1305:
	case FC_PSP_VER_NULL:
		return 1;
	default:
		return 0;
	}
}

/* ICV trailer length of PSP version v: none for the NULL version. */
static inline __u32 fc_psp_icv_len(__u32 v) { return v == FC_PSP_VER_NULL ? 0 : FC_PSP_ICV_LEN; }

/* Wire timestamps (t1, t2 of spec 7.7.1) count 131.072 ns = 2^17 ps units: ts = ps >> 17,
 * i.e. ns * 1000 / 131072 = ns * 125 / 16384. They wrap at 2^32 units (~9.4 min). t1 is
 * the PSP IV's transmit time converted to these units. */
static inline __u32 fc_ns_to_ts(__u64 ns) { return (__u32)((ns * 125) >> 14); }
static inline __u64 fc_ts_to_ns(__u32 ts) { return ((__u64)ts << 14) / 125; }

/* ------------------------------------------------------------------------ */
/* Falcon code tables (spec 7.2, 7.6, 7.8, section 11)                        */
/* ------------------------------------------------------------------------ */

#define FALCON_VERSION 1

enum fc_proto_type { /* spec 7.2, 3 bits */
	FC_PROTO_RDMA = 2,
	FC_PROTO_NVME = 3,
};

enum fc_pkt_type { /* spec 7.2, 4 bits; ACK/NACK share the position (7.7, 7.8) */
	FC_PKT_PULL_REQ = 0x0,
	FC_PKT_PULL_DATA = 0x3,
	FC_PKT_PUSH_DATA = 0x5,
	FC_PKT_RESYNC = 0x6,
	FC_PKT_NACK = 0x8,
	FC_PKT_BACK = 0x9,
	FC_PKT_EACK = 0xA,
};
#define FC_PKT_TYPE_COUNT 16 /* size of per-type counter arrays */

/* Is t a packet type the spec defines (not reserved)? */
static inline int fc_pkt_type_valid(__u32 t)
{
	switch (t) {
	case FC_PKT_PULL_REQ:
	case FC_PKT_PULL_DATA:
	case FC_PKT_PUSH_DATA:
	case FC_PKT_RESYNC:
	case FC_PKT_NACK:
	case FC_PKT_BACK:
	case FC_PKT_EACK:
		return 1;
	default:
		return 0;
	}
}

enum fc_resync_code { /* spec 7.6, 8 bits */
	FC_RESYNC_TARGET_CIE = 0x1,
	FC_RESYNC_LOCAL_XLR = 0x2,
	FC_RESYNC_RETX_EXHAUSTED = 0x3,
	FC_RESYNC_TXN_TIMEOUT = 0x4,
	FC_RESYNC_REMOTE_XLR = 0x5,
	FC_RESYNC_TARGET_NRE = 0x6,
	FC_RESYNC_TARGET_INVALID_CID = 0x7,
};
#define FC_RESYNC_CODE_MAX 0x7

enum fc_nack_code { /* spec 7.8, 8 bits */
	FC_NACK_RESOURCE = 1, /* request dropped: insufficient resources at the receiver */
	FC_NACK_RNR = 2,      /* ULP receiver not ready */
	FC_NACK_XLR = 4,      /* xLR drop indication */
	FC_NACK_CIE = 6,      /* ULP complete in error */
	FC_NACK_NRE = 7,      /* ULP non-recoverable error */
	FC_NACK_INVALID_CID = 8,
};

static inline int fc_resync_code_valid(__u32 c)
{
	return c >= FC_RESYNC_TARGET_CIE && c <= FC_RESYNC_CODE_MAX;
}

static inline int fc_proto_type_valid(__u32 p)
{
	return p == FC_PROTO_RDMA || p == FC_PROTO_NVME;
}

static inline int fc_nack_code_valid(__u32 c)
{
	return c == FC_NACK_RESOURCE || c == FC_NACK_RNR || c == FC_NACK_XLR ||
	       c == FC_NACK_CIE || c == FC_NACK_NRE || c == FC_NACK_INVALID_CID;
}

/* Completion codes of section 11, 4 bits. */
enum fc_cmpl_code {
	FC_CMPL_ACK = 0x0,
	FC_CMPL_TARGET_NACK_CIE = 0x1,
	FC_CMPL_TARGET_NACK_NRE = 0x3,
	FC_CMPL_TARGET_NACK_CID = 0x4,
	FC_CMPL_LOCAL_TO = 0x8,
	FC_CMPL_OP_ERR = 0x9,
	FC_CMPL_DEAD_CONN = 0xA,
	FC_CMPL_LOCAL_RSRC = 0xB,
	FC_CMPL_ULP_CDT_ERR = 0xC,
	FC_CMPL_REMOTE_ERR = 0xD,
};
/* Section 11 names kCmplXlr for a local xLR drop without giving it a value; falcon
 * has no xLR filters, so it never produces one (docs/wire.md). */

/* RNR NACK timeout, 5-bit code -> delay (spec 7.8; same table as InfiniBand's RNR timer).
 * Every entry is a whole number of 10 us units; code 0 is the longest, 655.36 ms. */
#define FC_RNR_TIMEOUT_CODES 32
static inline __u32 fc_rnr_timeout_10us(__u32 code)
{
	/* 0.01 .. 1.92 ms for 1..15, 2.56 .. 491.52 ms for 16..31, 655.36 ms for 0 */
	static const __u32 tab[FC_RNR_TIMEOUT_CODES] = {
		65536, 1,    2,    3,    4,    6,    8,     12,    16,    24,    32,
		48,    64,   96,   128,  192,  256,  384,   512,   768,   1024,  1536,
		2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
	};
	return tab[code & (FC_RNR_TIMEOUT_CODES - 1)];
}
static inline __u64 fc_rnr_timeout_ns(__u32 code) { return (__u64)fc_rnr_timeout_10us(code) * 10000; }

/* ------------------------------------------------------------------------ */
/* Falcon headers (spec 7.2 - 7.8)                                            */
/* ------------------------------------------------------------------------ */

/* Word 0 of every Falcon packet (base header, BACK, EACK, NACK):
 * columns 0-3 version, 4-7 reserved, 8-31 (destination) connection ID. */
#define FC_W0_VERSION_SHIFT 28
#define FC_W0_VERSION_MASK 0xFu
#define FC_W0_CID_SHIFT 0
#define FC_W0_CID_MASK 0xFFFFFFu
#define FC_W0_RSVD_MASK_HOST 0x0F000000u

/* Word 1 of the base header: columns 0-23 destination function, 24-26 protocol type,
 * 27-30 packet type, 31 AR. ACK/NACK: 0-26 reserved, 27-30 packet type, 31 reserved. */
#define FC_W1_DFN_SHIFT 8
#define FC_W1_DFN_MASK 0xFFFFFFu
#define FC_W1_PROTO_SHIFT 5
#define FC_W1_PROTO_MASK 0x7u
#define FC_W1_PKT_TYPE_SHIFT 1
#define FC_W1_PKT_TYPE_MASK 0xFu
#define FC_W1_AR_SHIFT 0
#define FC_W1_AR_MASK 0x1u

#define FC_CID_MAX 0xFFFFFFu

/* spec 7.2: carried by Pull Request, Pull Data, Push Data and Resync. */
struct fc_base_hdr {
	__be32 w0;     /* version | reserved | destination CID */
	__be32 w1;     /* destination function | protocol type | packet type | AR */
	__be32 rdbpsn; /* receiver data window base PSN (piggybacked ACK) */
	__be32 rrbpsn; /* receiver request window base PSN (piggybacked ACK) */
	__be32 psn;
	__be32 rsn;
} FC_PACKED; /* 24 bytes */

/* spec 7.3. The text gives request length 16b and a 32b reserved field (48 bits);
 * falcon keeps 4-byte alignment: word 6 = length | 16 reserved bits, word 7 reserved. */
struct fc_pull_req_hdr {
	struct fc_base_hdr base;
	__be16 req_len; /* bytes of the matching Pull Data payload (ULP headers included) */
	__be16 rsvd0;
	__be32 rsvd1;
} FC_PACKED; /* 32 bytes */

/* spec 7.4: the payload follows the base header directly. */
struct fc_pull_data_hdr {
	struct fc_base_hdr base;
} FC_PACKED; /* 24 bytes */

/* spec 7.5. Request length 16b; falcon pads word 6 to 32 bits with reserved zeroes so
 * the ULP headers start 4-byte aligned. */
struct fc_push_data_hdr {
	struct fc_base_hdr base;
	__be16 req_len; /* == payload bytes of this packet */
	__be16 rsvd;
} FC_PACKED; /* 28 bytes */

/* spec 7.6. Word 6: columns 0-7 resync code, 8-11 packet type of the packet that caused
 * the resync, 12-31 reserved. Word 7: vendor defined (0 when unused). */
struct fc_resync_hdr {
	struct fc_base_hdr base;
	__be32 w6;
	__be32 vendor;
} FC_PACKED; /* 32 bytes */

#define FC_RESYNC_CODE_SHIFT 24
#define FC_RESYNC_CODE_MASK 0xFFu
#define FC_RESYNC_PKT_TYPE_SHIFT 20
#define FC_RESYNC_PKT_TYPE_MASK 0xFu

/* spec 7.7.1 BACK. Words 6-7 hold the 62-bit congestion control info [63:2] and OWN
 * [1:0]; in the 64-bit word (w6 << 32 | w7):
 *   [63:60] hop count, [59:55] rx buffer occupancy (quantized EMA),
 *   [54:41] ECN rx packet count, [40:24] reserved, [23:2] RUE info (22b), [1:0] OWN.
 * OWN bit 0 = request window, bit 1 = data window. */
struct fc_ack_hdr {
	__be32 w0;     /* version | reserved | CID */
	__be32 w1;     /* reserved | packet type | reserved */
	__be32 rdbpsn; /* receiver data window base PSN */
	__be32 rrbpsn; /* receiver request window base PSN */
	__be32 t1_ts;     /* PSP IV transmit time of the packet acknowledged, 131.072 ns units */
	__be32 t2_ts;     /* its receive time at the receiver, 131.072 ns units */
	__be32 w6;
	__be32 w7;
} FC_PACKED; /* 32 bytes */

/* Fields of the host-order word 6 (shared by BACK, EACK and NACK). */
#define FC_CC_HOPS_SHIFT 28
#define FC_CC_HOPS_MASK 0xFu
#define FC_CC_RXBUF_SHIFT 23
#define FC_CC_RXBUF_MASK 0x1Fu
#define FC_CC_ECN_SHIFT 9
#define FC_CC_ECN_MASK 0x3FFFu
/* Host-order word 7 of BACK/EACK: RUE info 22b at [23:2], OWN at [1:0]. */
#define FC_ACK_RUE_SHIFT 2
#define FC_ACK_RUE_MASK 0x3FFFFFu
#define FC_ACK_OWN_SHIFT 0
#define FC_ACK_OWN_MASK 0x3u
#define FC_OWN_REQ 0x1u
#define FC_OWN_DATA 0x2u

/* spec 7.7.2 EACK: a BACK with packet type 1010b and three bitmaps. Each bitmap is sent
 * most significant word first (bits 127:96 first). Bit i of a bitmap stands for PSN
 * base + i of that window. */
#define FC_EACK_DATA_BITS 128
#define FC_EACK_REQ_BITS 64
struct fc_eack_hdr {
	struct fc_ack_hdr ack;
	__be32 data_ack[4]; /* data-ack-bitmap: [0] = bits 127:96 ... [3] = bits 31:0 */
	__be32 data_rx[4];  /* data-rx-bitmap, same order */
	__be32 req[2];      /* req-bitmap: [0] = bits 63:32, [1] = bits 31:0 */
} FC_PACKED; /* 72 bytes */

/* spec 7.8 NACK. Word 6 as in BACK; word 7: [31:24] reserved, [23:0] RUE info (24b).
 * Word 9: columns 0-7 NACK code, 8-9 reserved, 10-14 RNR NACK timeout, 15 window
 * (1 = request window, 0 = data window), 16-23 reserved, 24-31 ULP NACK code. */
struct fc_nack_hdr {
	struct fc_ack_hdr ack; /* packet type 1000b; w7 holds 24-bit RUE info, no OWN */
	__be32 nack_psn;
	__be32 w9;
} FC_PACKED; /* 40 bytes */

#define FC_NACK_RUE_SHIFT 0
#define FC_NACK_RUE_MASK 0xFFFFFFu
#define FC_NACK_CODE_SHIFT 24
#define FC_NACK_CODE_MASK 0xFFu
#define FC_NACK_RNR_TO_SHIFT 17
#define FC_NACK_RNR_TO_MASK 0x1Fu
#define FC_NACK_W_SHIFT 16
#define FC_NACK_W_MASK 0x1u
#define FC_NACK_ULP_CODE_SHIFT 0
#define FC_NACK_ULP_CODE_MASK 0xFFu
#define FC_NACK_W_DATA 0 /* NACK window bit: data window */
#define FC_NACK_W_REQ 1  /* NACK window bit: request window */

/* Header length of a packet type, 0 for a reserved type. Payload follows for Pull Data
 * and Push Data. */
static inline __u32 fc_pkt_hdr_len(__u32 type)
{
	switch (type) {
	case FC_PKT_PULL_REQ:
		return sizeof(struct fc_pull_req_hdr);
	case FC_PKT_PULL_DATA:
		return sizeof(struct fc_pull_data_hdr);
	case FC_PKT_PUSH_DATA:
		return sizeof(struct fc_push_data_hdr);
	case FC_PKT_RESYNC:
		return sizeof(struct fc_resync_hdr);
	case FC_PKT_NACK:
		return sizeof(struct fc_nack_hdr);
	case FC_PKT_BACK:
		return sizeof(struct fc_ack_hdr);
	case FC_PKT_EACK:
		return sizeof(struct fc_eack_hdr);
	default:
		return 0;
	}
}

/* Host-order 32-bit word i of a header at any alignment. */
static inline __u32 fc_hdr_word(const void *hdr, __u32 i)
{
	__be32 w;

	__builtin_memcpy(&w, (const __u8 *)hdr + 4 * i, sizeof(w));
	return fc_ntoh32(w);
}

/* The fields every Falcon packet has in the same place (words 0 and 1). */
static inline __u32 fc_hdr_version(const void *falcon_hdr)
{
	return FC_GET(fc_hdr_word(falcon_hdr, 0), FC_W0_VERSION);
}
static inline __u32 fc_hdr_cid(const void *falcon_hdr)
{
	return FC_GET(fc_hdr_word(falcon_hdr, 0), FC_W0_CID);
}
static inline __u32 fc_hdr_pkt_type(const void *falcon_hdr)
{
	return FC_GET(fc_hdr_word(falcon_hdr, 1), FC_W1_PKT_TYPE);
}

/* ------------------------------------------------------------------------ */
/* RDMA over Falcon (RDMA spec section 8)                                     */
/* ------------------------------------------------------------------------ */

#define FC_RDMA_VERSION 1

/* Opcode = [7:5] transport class | [4:0] operation, numbered as InfiniBand (8.1.3). */
#define FC_RDMA_OPC_CLASS_SHIFT 5
#define FC_RDMA_CLASS_RC 0x0  /* 000: reliable connection */
#define FC_RDMA_CLASS_UD 0x3  /* 011: unreliable datagram */
#define FC_RDMA_CLASS_XRC 0x5 /* 101: XRC, as InfiniBand; carries XRCETH after RBTH */

enum fc_rdma_op { /* [4:0] of the opcode, spec 8.1.3 */
	FC_RDMA_SEND_FIRST = 0x00,
	FC_RDMA_SEND_MIDDLE = 0x01,
	FC_RDMA_SEND_LAST = 0x02,
	FC_RDMA_SEND_LAST_IMM = 0x03,
	FC_RDMA_SEND_ONLY = 0x04,
	FC_RDMA_SEND_ONLY_IMM = 0x05,
	FC_RDMA_WRITE_FIRST = 0x06,
	FC_RDMA_WRITE_MIDDLE = 0x07,
	FC_RDMA_WRITE_LAST = 0x08,
	FC_RDMA_WRITE_LAST_IMM = 0x09,
	FC_RDMA_WRITE_ONLY = 0x0A,
	FC_RDMA_WRITE_ONLY_IMM = 0x0B,
	FC_RDMA_READ_REQ = 0x0C,
	FC_RDMA_READ_RESP_FIRST = 0x0D,
	FC_RDMA_READ_RESP_MIDDLE = 0x0E,
	FC_RDMA_READ_RESP_LAST = 0x0F,
	FC_RDMA_READ_RESP_ONLY = 0x10,
	FC_RDMA_ATOMIC_RESP = 0x12,
	FC_RDMA_CMP_SWAP = 0x13,
	FC_RDMA_FETCH_ADD = 0x14,
	FC_RDMA_SEND_LAST_INV = 0x16,
	FC_RDMA_SEND_ONLY_INV = 0x17,
	/* falcon extension in the reserved range (RFC 7306 section 5.1 masked atomics) */
	FC_RDMA_MASKED_CMP_SWAP = 0x18,
	FC_RDMA_MASKED_FETCH_ADD = 0x19,
};

#define FC_RDMA_OPCODE(cls, op) ((__u8)(((cls) << FC_RDMA_OPC_CLASS_SHIFT) | (op)))

/* Extended transport headers; bit set = present. */
enum fc_rdma_eth {
	FC_ETH_XRCETH = 1u << 0,
	FC_ETH_RETH = 1u << 1,
	FC_ETH_DETH = 1u << 2,
	FC_ETH_SETH = 1u << 3,
	FC_ETH_OETH = 1u << 4,
	FC_ETH_IMMDT = 1u << 5,
	FC_ETH_IETH = 1u << 6,
	FC_ETH_ATOMIC = 1u << 7,        /* AtomicETH */
	FC_ETH_MASKED_ATOMIC = 1u << 8, /* MaskedAtomicETH (falcon extension) */
	FC_ETH_ATOMIC_ACK = 1u << 9,    /* AtomicAckETH */
	FC_ETH_STETH = 1u << 10,
};

/* The ETHs an opcode carries (spec 8.1.3 table), with the seed's AtomicETH/AtomicAckETH
 * swap corrected (request carries AtomicETH, response AtomicAckETH, as InfiniBand).
 * The mask's bit order is NOT the wire order. Wire order, after RBTH: XRCETH, RETH, DETH,
 * AtomicETH or MaskedAtomicETH, AtomicAckETH, SETH, OETH, STETH, ImmDt, IETH.
 * Returns 0 for a reserved opcode. */
static inline __u32 fc_rdma_opcode_eths(__u8 opcode)
{
	__u32 cls = opcode >> FC_RDMA_OPC_CLASS_SHIFT, op = opcode & 0x1F, xrc = 0;

	if (cls == FC_RDMA_CLASS_UD) {
		if (op == FC_RDMA_SEND_ONLY)
			return FC_ETH_DETH;
		if (op == FC_RDMA_SEND_ONLY_IMM)
			return FC_ETH_DETH | FC_ETH_IMMDT;
		return 0;
	}
	if (cls == FC_RDMA_CLASS_XRC) {
		/* XRC as InfiniBand (RDMA spec 6.6.2 defers to it): requests carry XRCETH
		 * (8.3.9); responses use the XRC class without it (see the switch below). */
		xrc = FC_ETH_XRCETH;
	} else if (cls != FC_RDMA_CLASS_RC) {
		return 0;
	}
	switch (op) {
	case FC_RDMA_SEND_FIRST:
	case FC_RDMA_SEND_MIDDLE:
	case FC_RDMA_SEND_LAST:
	case FC_RDMA_SEND_ONLY:
		return xrc | FC_ETH_SETH | FC_ETH_OETH;
	case FC_RDMA_SEND_LAST_IMM:
	case FC_RDMA_SEND_ONLY_IMM:
		return xrc | FC_ETH_SETH | FC_ETH_OETH | FC_ETH_IMMDT;
	case FC_RDMA_WRITE_FIRST:
	case FC_RDMA_WRITE_MIDDLE:
	case FC_RDMA_WRITE_LAST:
	case FC_RDMA_WRITE_ONLY:
		return xrc | FC_ETH_RETH;
	case FC_RDMA_WRITE_LAST_IMM:
	case FC_RDMA_WRITE_ONLY_IMM:
		return xrc | FC_ETH_RETH | FC_ETH_SETH | FC_ETH_IMMDT;
	case FC_RDMA_READ_REQ:
		return xrc | FC_ETH_RETH | FC_ETH_SETH | FC_ETH_STETH;
	case FC_RDMA_READ_RESP_FIRST:
	case FC_RDMA_READ_RESP_MIDDLE:
	case FC_RDMA_READ_RESP_LAST:
	case FC_RDMA_READ_RESP_ONLY:
		return FC_ETH_STETH;
	case FC_RDMA_ATOMIC_RESP:
		return FC_ETH_ATOMIC_ACK | FC_ETH_STETH;
	case FC_RDMA_CMP_SWAP:
	case FC_RDMA_FETCH_ADD:
		return xrc | FC_ETH_ATOMIC | FC_ETH_SETH | FC_ETH_STETH;
	case FC_RDMA_MASKED_CMP_SWAP:
	case FC_RDMA_MASKED_FETCH_ADD:
		return xrc | FC_ETH_MASKED_ATOMIC | FC_ETH_SETH | FC_ETH_STETH;
	case FC_RDMA_SEND_LAST_INV:
	case FC_RDMA_SEND_ONLY_INV:
		return xrc | FC_ETH_SETH | FC_ETH_OETH | FC_ETH_IETH;
	default:
		return 0;
	}
}

/* Falcon packet type that carries an opcode (spec 8.1.3 "Falcon Packet Type"). */
static inline __u32 fc_rdma_opcode_falcon_type(__u8 opcode)
{
	switch (opcode & 0x1F) {
	case FC_RDMA_READ_REQ:
	case FC_RDMA_CMP_SWAP:
	case FC_RDMA_FETCH_ADD:
	case FC_RDMA_MASKED_CMP_SWAP:
	case FC_RDMA_MASKED_FETCH_ADD:
		return FC_PKT_PULL_REQ;
	case FC_RDMA_READ_RESP_FIRST:
	case FC_RDMA_READ_RESP_MIDDLE:
	case FC_RDMA_READ_RESP_LAST:
	case FC_RDMA_READ_RESP_ONLY:
	case FC_RDMA_ATOMIC_RESP:
		return FC_PKT_PULL_DATA;
	default:
		return FC_PKT_PUSH_DATA;
	}
}

/* RBTH (RDMA spec 8.2), 12 bytes, laid out like the InfiniBand BTH it replaces:
 *   byte 0      opcode
 *   byte 1      [7] SE  [6] reserved (R)  [5:4] pad  [3:0] version    (BTH: SE M Pad TVer)
 *   byte 2      [7] CE  [6] AckReq (A)  [5:0] reserved
 *   byte 3      reserved
 *   word 1      [31:24] reserved, [23:0] destination QP               (as BTH word 1)
 *   word 2      sequence number (32 bits; BTH has a 24-bit PSN here)   */
struct fc_rbth {
	__u8 opcode;
	__u8 se_pad_ver;
	__u8 ce_a;
	__u8 rsvd;
	__be32 dqp;
	__be32 sn;
} FC_PACKED; /* 12 bytes */

#define FC_RBTH_SE_SHIFT 7
#define FC_RBTH_SE_MASK 0x1u
#define FC_RBTH_R_SHIFT 6
#define FC_RBTH_R_MASK 0x1u
#define FC_RBTH_PAD_SHIFT 4
#define FC_RBTH_PAD_MASK 0x3u
#define FC_RBTH_VER_SHIFT 0
#define FC_RBTH_VER_MASK 0xFu
#define FC_RBTH_CE_SHIFT 7
#define FC_RBTH_CE_MASK 0x1u
#define FC_RBTH_A_SHIFT 6
#define FC_RBTH_A_MASK 0x1u
#define FC_QPN_MASK 0xFFFFFFu

struct fc_xrceth { /* 8.3.9, as InfiniBand: [31:24] reserved, [23:0] XRC SRQ */
	__be32 srq;
} FC_PACKED;

struct fc_reth { /* 8.3.1, as InfiniBand */
	__be64 va;
	__be32 rkey;
	__be32 len;
} FC_PACKED; /* 16 bytes */

struct fc_deth { /* 8.3.10, as InfiniBand: Q_Key, then [31:24] reserved, [23:0] src QP */
	__be32 qkey;
	__be32 src_qp;
} FC_PACKED; /* 8 bytes */

struct fc_atomic_eth { /* 8.3.6, as InfiniBand */
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} FC_PACKED; /* 28 bytes */

/* falcon extension: RFC 7306 section 5 masked atomics. Field order follows RFC 7306
 * figure 4 (data, mask, compare data, compare mask) after the AtomicETH's VA and R_Key. */
struct fc_masked_atomic_eth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 swap_add_mask;
	__be64 compare;
	__be64 compare_mask;
} FC_PACKED; /* 44 bytes */

struct fc_atomic_ack_eth { /* 8.3.7, as InfiniBand */
	__be64 orig;
} FC_PACKED; /* 8 bytes */

struct fc_seth { /* 8.3.2 */
	__be32 rmsn;
} FC_PACKED;

struct fc_oeth { /* 8.3.3 */
	__be32 offset;
} FC_PACKED;

struct fc_steth { /* 8.3.4 */
	__be64 va;
	__be32 lkey;
} FC_PACKED; /* 12 bytes */

struct fc_immdt { /* 8.3.5 */
	__be32 imm;
} FC_PACKED;

struct fc_ieth { /* 8.3.8 */
	__be32 rkey;
} FC_PACKED;

/* The wire sizes docs/wire.md states; a layout change must change both. */
_Static_assert(sizeof(struct fc_eth_hdr) == 14, "eth");
_Static_assert(sizeof(struct fc_vlan_hdr) == 4, "vlan");
_Static_assert(sizeof(struct fc_ipv4_hdr) == 20, "ipv4");
_Static_assert(sizeof(struct fc_ipv6_hdr) == 40, "ipv6");
_Static_assert(sizeof(struct fc_udp_hdr) == 8, "udp");
_Static_assert(sizeof(struct fc_psp_hdr) == FC_PSP_HDR_LEN, "psp");
_Static_assert(sizeof(struct fc_base_hdr) == 24, "base");
_Static_assert(sizeof(struct fc_pull_req_hdr) == 32, "pull req");
_Static_assert(sizeof(struct fc_pull_data_hdr) == 24, "pull data");
_Static_assert(sizeof(struct fc_push_data_hdr) == 28, "push data");
_Static_assert(sizeof(struct fc_resync_hdr) == 32, "resync");
_Static_assert(sizeof(struct fc_ack_hdr) == 32, "back");
_Static_assert(sizeof(struct fc_eack_hdr) == 72, "eack");
_Static_assert(sizeof(struct fc_nack_hdr) == 40, "nack");
_Static_assert(sizeof(struct fc_rbth) == 12, "rbth");
_Static_assert(sizeof(struct fc_xrceth) == 4, "xrceth");
_Static_assert(sizeof(struct fc_reth) == 16, "reth");
_Static_assert(sizeof(struct fc_deth) == 8, "deth");
_Static_assert(sizeof(struct fc_atomic_eth) == 28, "atomiceth");
_Static_assert(sizeof(struct fc_masked_atomic_eth) == 44, "masked atomiceth");
_Static_assert(sizeof(struct fc_atomic_ack_eth) == 8, "atomicacketh");
_Static_assert(sizeof(struct fc_steth) == 12, "steth");

#endif /* FALCON_WIRE_H */
