/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_falcon.h - codec of the Falcon header (Falcon spec section 7): Pull Request, Pull
 * Data, Push Data, Resync, BACK, EACK and NACK, to and from one host-order struct.
 *
 * The buffer handed to fc_falcon_decode() is exactly one Falcon packet: it starts at the
 * Falcon header (after the PSP header, or after decryption) and ends where the packet
 * ends (before the PSP ICV). Layouts, bit positions and code tables: include/falcon/wire.h.
 *
 * Lengths (docs/wire.md):
 *   - Pull Request: 32-byte header; the bytes after it are the ULP request headers
 *     (payload; any length, 0 included).
 *   - Pull Data: 24-byte header; payload = every byte after it (any length).
 *   - Push Data: 28-byte header; its 16-bit request length must equal the bytes after it.
 *   - Resync (32), BACK (32), EACK (72), NACK (40): no payload; the buffer must end with
 *     the header.
 * Reserved bits are ignored on decode (as InfiniBand does) and written as zero on encode.
 * Fields that a packet type does not carry are 0 after decode and ignored by encode.
 */
#ifndef FC_WIRE_FALCON_H
#define FC_WIRE_FALCON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "falcon/wire.h"
#include "wire_err.h"

/* Largest Falcon header (EACK); a buffer of this size holds any header. */
#define FC_FALCON_HDR_MAX 72
/* Push Data carries its length in 16 bits (spec 7.5). */
#define FC_FALCON_PUSH_MAX 0xFFFFu

/* Largest value of each sub-word field (spec 7.2, 7.6 - 7.8) = its wire.h mask; encode
 * rejects wider values with -FC_WIRE_EINVAL. */
#define FC_FALCON_DFN_MAX FC_W1_DFN_MASK
#define FC_FALCON_HOPS_MAX FC_CC_HOPS_MASK
#define FC_FALCON_RXBUF_MAX FC_CC_RXBUF_MASK
#define FC_FALCON_ECN_MAX FC_CC_ECN_MASK
#define FC_FALCON_ACK_RUE_MAX FC_ACK_RUE_MASK   /* BACK, EACK: 22 bits */
#define FC_FALCON_NACK_RUE_MAX FC_NACK_RUE_MASK /* NACK: 24 bits */
#define FC_FALCON_OWN_MAX FC_ACK_OWN_MASK
#define FC_FALCON_RNR_TO_MAX FC_NACK_RNR_TO_MASK
#define FC_FALCON_PKT_TYPE_MAX FC_RESYNC_PKT_TYPE_MASK


/* One decoded Falcon packet, host order. Which members a type uses:
 *   all:                 type, cid
 *   base header types:   dest_fn, proto, ar, rdbpsn, rrbpsn, psn, rsn        (spec 7.2)
 *   Pull Request:        req_len, payload = ULP request headers             (spec 7.3)
 *   Pull Data:           payload                                            (spec 7.4)
 *   Push Data:           req_len (== payload_len), payload                  (spec 7.5)
 *   Resync:              resync_code, resync_pkt_type, vendor               (spec 7.6)
 *   BACK, EACK, NACK:    rdbpsn, rrbpsn, t1, t2, hops, rxbuf, ecn, rue     (spec 7.7, 7.8)
 *   BACK, EACK:          own
 *   EACK:                data_ack, data_rx, req_bitmap                      (spec 7.7.2)
 *   NACK:                nack_psn, nack_code, rnr_timeout, window, ulp_nack_code
 * Bitmaps: bit i (PSN base + i) of a 128-bit bitmap x is (x[i / 64] >> (i % 64)) & 1,
 * i.e. x[0] holds bits 63:0 and x[1] bits 127:64. */
struct fc_falcon_pkt {
	enum fc_pkt_type type;
	uint32_t cid; /* 24 bits */

	/* base header (spec 7.2) */
	uint32_t dest_fn; /* 24 bits: <host, PF, VF> */
	uint8_t proto;    /* 3 bits, enum fc_proto_type */
	bool ar;          /* ACK requested */
	uint32_t rdbpsn;  /* also in BACK/EACK/NACK */
	uint32_t rrbpsn;  /* also in BACK/EACK/NACK */
	uint32_t psn;
	uint32_t rsn;
	uint16_t req_len; /* Pull Request; Push Data: equals payload_len */

	/* Resync (spec 7.6) */
	uint8_t resync_code;     /* enum fc_resync_code, 1..7 */
	uint8_t resync_pkt_type; /* 4 bits: type of the packet that caused the resync */
	uint32_t vendor;

	/* BACK, EACK, NACK (spec 7.7.1, 7.8) */
	uint32_t t1_ts; /* 131.072 ns units */
	uint32_t t2_ts;
	uint8_t hops;   /* 4 bits: forward path hop count */
	uint8_t rxbuf;  /* 5 bits: quantized EMA rx buffer occupancy */
	uint16_t ecn;   /* 14 bits: cumulative ECN-marked packets received */
	uint32_t rue;   /* 22 bits (BACK, EACK) or 24 bits (NACK) */
	uint8_t own;    /* 2 bits, FC_OWN_REQ | FC_OWN_DATA; BACK and EACK only */

	/* EACK (spec 7.7.2) */
	uint64_t data_ack[2];
	uint64_t data_rx[2];
	uint64_t req_bitmap;

	/* NACK (spec 7.8) */
	uint32_t nack_psn;
	uint8_t nack_code;     /* enum fc_nack_code */
	uint8_t rnr_timeout;   /* 5-bit code, fc_rnr_timeout_ns() */
	uint8_t window;        /* FC_NACK_W_REQ or FC_NACK_W_DATA */
	uint8_t ulp_nack_code; /* opaque to Falcon */

	/* Pull Request, Pull Data, Push Data; points into the decoded buffer */
	const void *payload;
	size_t payload_len;
};

/* Header length of a packet type, 0 for a reserved type. */
static inline size_t fc_falcon_hdr_len(uint32_t type)
{
	return fc_pkt_hdr_len(type);
}

/* Does the type carry the base header (spec 7.2)? */
static inline bool fc_falcon_type_has_base(uint32_t type)
{
	return type == FC_PKT_PULL_REQ || type == FC_PKT_PULL_DATA ||
	       type == FC_PKT_PUSH_DATA || type == FC_PKT_RESYNC;
}

/* May bytes follow the header of this type? */
static inline bool fc_falcon_type_has_payload(uint32_t type)
{
	return type == FC_PKT_PULL_REQ || type == FC_PKT_PULL_DATA ||
	       type == FC_PKT_PUSH_DATA;
}

/*
 * Decode one Falcon packet of len bytes at buf into *out (every member written; members
 * the type does not carry are 0; out->payload points into buf).
 * Checks, in this order, the first failure wins:
 *   1. len >= 8 (words 0-1)                                    else -FC_WIRE_ETRUNC
 *   2. version == FALCON_VERSION                               else -FC_WIRE_EVERSION
 *   3. packet type defined (fc_pkt_type_valid)                 else -FC_WIRE_ETYPE
 *   4. len >= header length of the type                        else -FC_WIRE_ETRUNC
 *   5. base-header types: protocol type RDMA or NVMe           else -FC_WIRE_EPROTO
 *   6. Resync code 1..7, NACK code defined                     else -FC_WIRE_EFIELD
 *   7. Push Data: request length == len - 28; Resync, BACK, EACK, NACK: len == header
 *      length                                                  else -FC_WIRE_ELEN
 * Returns the header length (payload = buf + ret .. buf + len) or the negative error;
 * after an error *out is partly filled and must not be used. Never reads outside
 * buf[0..len).
 */
int fc_falcon_decode(const void *buf, size_t len, struct fc_falcon_pkt *out);

/*
 * Encode *p (header, then p->payload_len bytes from p->payload) into buf[0..cap).
 * The payload may overlap buf (memmove semantics); when it already sits at
 * buf + header length nothing is copied. Version is always FALCON_VERSION; reserved bits
 * are zero; for Push Data the request length written is p->payload_len (p->req_len is
 * ignored). Reads type, cid, payload, payload_len and the members of the header p->type
 * carries, nothing else: a caller need not set the others. Checks, in this order:
 *   p->type reserved                                           -FC_WIRE_ETYPE
 *   a value wider than its field, a reserved protocol type, Resync or NACK code, a
 *   payload on Resync/BACK/EACK/NACK, Push Data payload > 65535, payload NULL with
 *   payload_len > 0, header + payload > INT_MAX                -FC_WIRE_EINVAL
 *   cap < header length + payload_len                          -FC_WIRE_ENOSPC
 * Returns the total bytes written. On error nothing is written. Never writes past cap.
 */
int fc_falcon_encode(const struct fc_falcon_pkt *p, void *buf, size_t cap);

/* Bytes fc_falcon_encode() would write for *p: header + payload; 0 for a reserved type. */
size_t fc_falcon_encoded_len(const struct fc_falcon_pkt *p);

#endif /* FC_WIRE_FALCON_H */
