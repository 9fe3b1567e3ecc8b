/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon/xdp_stats.h - the XDP program's counters, shared by BPF and userspace.
 *
 * One BPF_MAP_TYPE_PERCPU_ARRAY, falcon_counters (bpf/falcon_maps.h), key = enum
 * fc_xdp_cnt, value = __u64 packets. Userspace reads a key with bpf_map_lookup_elem and
 * sums the per-CPU values; bpftool map dump shows the same numbers.
 *
 * Every packet the program sees adds 1 to FC_XDP_CNT_RX and to exactly one of
 * NOT_FALCON, FALCON_IPV4, FALCON_IPV6 (the last two count every packet whose UDP
 * destination port is the Falcon port). Each of those Falcon packets then adds 1 to
 * exactly one of FALCON_OK (passed the integrity checks) or DROP, and:
 *   FALCON_OK: to ENCRYPTED (PSP version != NULL: the packet type is ciphertext) or to
 *              PKT_TYPE_0 + packet type (cleartext); and to exactly one verdict of the
 *              fast path: REDIRECT, DUP_ACKED, NO_XSK, NO_META or REJECT;
 *   DROP:      to exactly one DROP_* reason (spec 9.2.2.1 integrity checks);
 *   REJECT:    to exactly one REJECT_* reason (connection checks, 9.2.2.2-9.2.2.4, 9.2.3).
 * So RX = NOT_FALCON + FALCON_IPV4 + FALCON_IPV6, FALCON_IPV4 + FALCON_IPV6 =
 * FALCON_OK + DROP, FALCON_OK = REDIRECT + DUP_ACKED + NO_XSK + NO_META + REJECT.
 * Informational, each a part of another counter: IPV4_FRAG (of NOT_FALCON: IPv4 UDP
 * fragments, passed), MARKED (of REDIRECT: window marked, frame flagged
 * FC_XDP_META_MARKED), ACK_ERR (of REDIRECT: a duplicate XDP could not answer, steered
 * unmarked so that the daemon answers it).
 *
 * Compiles for BPF (after vmlinux.h) and for userspace; the names table is user-only.
 */
#ifndef FALCON_XDP_STATS_H
#define FALCON_XDP_STATS_H

#include "falcon/wire.h"

enum fc_xdp_cnt {
	FC_XDP_CNT_RX = 0,       /* every packet the program saw */
	FC_XDP_CNT_NOT_FALCON,   /* XDP_PASS untouched: not IP/UDP to the Falcon port */
	FC_XDP_CNT_IPV4_FRAG,    /* of NOT_FALCON: IPv4 UDP fragment (left to the stack) */
	FC_XDP_CNT_FALCON_IPV4,  /* UDP to the Falcon port over IPv4 (valid or not) */
	FC_XDP_CNT_FALCON_IPV6,  /* UDP to the Falcon port over IPv6 (valid or not) */
	FC_XDP_CNT_FALCON_OK,    /* passed the integrity checks; one fast-path verdict below */
	FC_XDP_CNT_ENCRYPTED,    /* of FALCON_OK: PSP-encrypted, type not readable */
	FC_XDP_CNT_DROP,         /* XDP_DROP, sum of the DROP_* reasons below */
	/* Drop reasons, spec 9.2.2.1, in the order the program checks them. */
	FC_XDP_CNT_DROP_LEN,          /* IP length > frame, or UDP length != IP payload */
	FC_XDP_CNT_DROP_PSP_TRUNC,    /* fewer bytes than the PSP header (+ VC, ext len) */
	FC_XDP_CNT_DROP_PSP_NEXT_HDR, /* PSP next header != 252 (Falcon) */
	FC_XDP_CNT_DROP_PSP_ONE_BIT,  /* PSP always-1 bit is 0 */
	FC_XDP_CNT_DROP_PSP_EXT_LEN,  /* PSP hdr_ext_len < 1 + V */
	FC_XDP_CNT_DROP_FALCON_TRUNC, /* Falcon version/CID/type words not all present */
	FC_XDP_CNT_DROP_VERSION,      /* Falcon version != 1 (spec 7.2) */
	FC_XDP_CNT_DROP_PKT_TYPE,     /* reserved packet type (spec 7.2) */
	FC_XDP_CNT_DROP_HDR_LEN,      /* header of the type (+ ICV) longer than the packet */
	/* Fast-path verdicts: each FALCON_OK packet adds to exactly one of REDIRECT,
	 * DUP_ACKED, NO_XSK, NO_META, REJECT (MARKED and ACK_ERR are parts of REDIRECT). */
	FC_XDP_CNT_REDIRECT,  /* XDP_REDIRECT into the AF_XDP socket of its rx queue */
	FC_XDP_CNT_MARKED,    /* of REDIRECT: fc_win_mark_rx found it new (meta MARKED) */
	FC_XDP_CNT_ACK_ERR,   /* of REDIRECT: a duplicate not answered (frame could not be
			       * resized): steered unmarked, the daemon answers it */
	FC_XDP_CNT_DUP_ACKED, /* XDP_TX: duplicate or old (9.2.2.4), answered with a BACK */
	FC_XDP_CNT_NO_XSK,    /* XDP_PASS: no AF_XDP socket on its rx queue (or it went away
			       * before the redirect) */
	FC_XDP_CNT_NO_META,   /* XDP_PASS: no headroom for struct fc_xdp_meta; nothing marked */
	FC_XDP_CNT_REJECT,    /* XDP_DROP, sum of the REJECT_* reasons below */
	/* Reject reasons, in the order the program checks them. */
	FC_XDP_CNT_REJECT_UNKNOWN_CID, /* no connection in the CID's slot, or another CID */
	FC_XDP_CNT_REJECT_MODE,        /* cleartext on a PSP connection or ciphertext on a
					* security-none one */
	FC_XDP_CNT_REJECT_BAD_SPI,     /* SPI 0 or not of the peer's tunnel (9.2.2.3) */
	FC_XDP_CNT_REJECT_REPLAY,      /* IV older than remote time - margin (9.2.2.2) */
	FC_XDP_CNT_REJECT_STALE_ACK,   /* ACK/NACK base below our transmit base (9.2.3) */
	FC_XDP_CNT_REJECT_OOW,         /* beyond the window (9.2.2.4): OWN set, ACK asked */
	/* Cleartext Falcon packets that passed the integrity checks, by packet type
	 * (index = type). */
	FC_XDP_CNT_PKT_TYPE_0,
	FC_XDP_CNT_PKT_TYPE_LAST = FC_XDP_CNT_PKT_TYPE_0 + FC_PKT_TYPE_COUNT - 1,
	FC_XDP_CNT_MAX
};

#ifndef __bpf__
/* Name of counter idx for printing (falconctl, tests); NULL if idx is out of range. */
static inline const char *fc_xdp_cnt_name(unsigned int idx)
{
	static const char *const names[FC_XDP_CNT_MAX] = {
		[FC_XDP_CNT_RX] = "rx",
		[FC_XDP_CNT_NOT_FALCON] = "not_falcon",
		[FC_XDP_CNT_IPV4_FRAG] = "ipv4_frag",
		[FC_XDP_CNT_FALCON_IPV4] = "falcon_ipv4",
		[FC_XDP_CNT_FALCON_IPV6] = "falcon_ipv6",
		[FC_XDP_CNT_FALCON_OK] = "falcon_ok",
		[FC_XDP_CNT_ENCRYPTED] = "encrypted",
		[FC_XDP_CNT_DROP] = "drop",
		[FC_XDP_CNT_DROP_LEN] = "drop_len",
		[FC_XDP_CNT_DROP_PSP_TRUNC] = "drop_psp_trunc",
		[FC_XDP_CNT_DROP_PSP_NEXT_HDR] = "drop_psp_next_hdr",
		[FC_XDP_CNT_DROP_PSP_ONE_BIT] = "drop_psp_one_bit",
		[FC_XDP_CNT_DROP_PSP_EXT_LEN] = "drop_psp_ext_len",
		[FC_XDP_CNT_DROP_FALCON_TRUNC] = "drop_falcon_trunc",
		[FC_XDP_CNT_DROP_VERSION] = "drop_version",
		[FC_XDP_CNT_DROP_PKT_TYPE] = "drop_pkt_type",
		[FC_XDP_CNT_DROP_HDR_LEN] = "drop_hdr_len",
		[FC_XDP_CNT_REDIRECT] = "redirect",
		[FC_XDP_CNT_MARKED] = "marked",
		[FC_XDP_CNT_ACK_ERR] = "ack_err",
		[FC_XDP_CNT_DUP_ACKED] = "dup_acked",
		[FC_XDP_CNT_NO_XSK] = "no_xsk",
		[FC_XDP_CNT_NO_META] = "no_meta",
		[FC_XDP_CNT_REJECT] = "reject",
		[FC_XDP_CNT_REJECT_UNKNOWN_CID] = "reject_unknown_cid",
		[FC_XDP_CNT_REJECT_MODE] = "reject_mode",
		[FC_XDP_CNT_REJECT_BAD_SPI] = "reject_bad_spi",
		[FC_XDP_CNT_REJECT_REPLAY] = "reject_replay",
		[FC_XDP_CNT_REJECT_STALE_ACK] = "reject_stale_ack",
		[FC_XDP_CNT_REJECT_OOW] = "reject_oow",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x0] = "pkt_pull_req",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x1] = "pkt_type_1",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x2] = "pkt_type_2",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x3] = "pkt_pull_data",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x4] = "pkt_type_4",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x5] = "pkt_push_data",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x6] = "pkt_resync",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x7] = "pkt_type_7",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x8] = "pkt_nack",
		[FC_XDP_CNT_PKT_TYPE_0 + 0x9] = "pkt_back",
		[FC_XDP_CNT_PKT_TYPE_0 + 0xA] = "pkt_eack",
		[FC_XDP_CNT_PKT_TYPE_0 + 0xB] = "pkt_type_11",
		[FC_XDP_CNT_PKT_TYPE_0 + 0xC] = "pkt_type_12",
		[FC_XDP_CNT_PKT_TYPE_0 + 0xD] = "pkt_type_13",
		[FC_XDP_CNT_PKT_TYPE_0 + 0xE] = "pkt_type_14",
		[FC_XDP_CNT_PKT_TYPE_0 + 0xF] = "pkt_type_15",
	};

	return idx < FC_XDP_CNT_MAX ? names[idx] : NULL;
}
#endif /* !__bpf__ */

#endif /* FALCON_XDP_STATS_H */
