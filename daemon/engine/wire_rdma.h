/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_rdma.h - codec of the RDMA-over-Falcon headers (RDMA spec section 8): the RBTH
 * (8.2) and the extended transport headers (8.3.1-8.3.10) that follow it, in the order
 * and combinations of the opcode table (8.1.3, with falcon's corrections in wire.h).
 *
 * The buffer these functions see is the Falcon payload: it starts at the RBTH and ends
 * with the RDMA payload and its 0-3 pad bytes. Layouts and code tables are in
 * include/falcon/wire.h; this file only moves them between wire and host order.
 *
 * Length rules that fc_rdma_decode() enforces (docs/wire.md states them too):
 *   - the buffer holds the RBTH and every ETH the opcode announces (else ETRUNC);
 *   - the whole packet is a multiple of 4 bytes: spec 8.2, the pad "aligns the message
 *     to a 4 byte boundary", and every header is a multiple of 4 bytes (else ELEN);
 *   - pad <= the bytes after the headers (else ELEN);
 *   - READ Request, ATOMIC requests (plain and masked) and ATOMIC Response carry no
 *     payload (IB: none of them has a payload; spec 8.1.3 maps them to Pull Request /
 *     Pull Data carrying only headers) (else ELEN);
 *   - WRITE Only and WRITE Only with Immediate: RETH length == payload length (spec
 *     8.3.1: the RETH length is the length of the Write operation, and an Only packet
 *     carries the whole operation, as in InfiniBand) (else ELEN).
 * Not checked (the codec has no MTU and no QP state): MTU limits (6.4, 6.7), RETH
 * length of WRITE First/Middle/Last and READ Request, CE outside Last/Only packets.
 * Reserved fields (RBTH R bit, RBTH byte 2 [5:0] and byte 3, the top bytes of the DQP,
 * DETH source QP and XRCETH words) are written as zero and ignored on receive, as
 * InfiniBand and RFC 7306 do; the content of pad bytes is ignored too. No RDMA header
 * field has a value that decode rejects, so decode never returns FC_WIRE_EFIELD.
 */
#ifndef FC_WIRE_RDMA_H
#define FC_WIRE_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <falcon/wire.h>

#include "wire_err.h"

/* Largest header: RBTH + XRCETH + MaskedAtomicETH + SETH + STETH = 12+4+44+4+12. */
#define FC_RDMA_HDR_MAX 76

/* One decoded RDMA-over-Falcon packet, host byte order. Fields of ETHs the opcode does
 * not carry are zero after decode and ignored by encode. */
struct fc_rdma_hdrs {
	/* RBTH, spec 8.2 */
	uint8_t opcode; /* FC_RDMA_OPCODE(class, op) */
	bool se;        /* solicited event */
	bool ce;        /* complete in error */
	bool ackreq;    /* A: explicit acknowledgement requested */
	uint8_t pad;    /* 0-3 pad bytes after the payload; decode fills, encode computes */
	uint32_t dqp;   /* destination QP, 24 bits */
	uint32_t sn;    /* sequence number */

	uint32_t eths; /* enum fc_rdma_eth bits present; decode fills, encode ignores */

	uint32_t xrc_srq; /* XRCETH 8.3.9, 24 bits */
	struct {          /* RETH 8.3.1 */
		uint64_t va;
		uint32_t rkey;
		uint32_t len;
	} reth;
	struct { /* DETH 8.3.10 */
		uint32_t qkey;
		uint32_t src_qp; /* 24 bits */
	} deth;
	/* AtomicETH 8.3.6 or MaskedAtomicETH (RFC 7306 5.2.1). For a plain atomic, decode
	 * fills the masks with the values that make RFC 7306's masked operation equal to
	 * the plain one: CmpSwap swap and compare masks ~0; FetchAdd add mask 0 (RFC 7306
	 * 5.1.1: mask 0 = a plain 64-bit add) and compare mask ~0. Encode of a plain
	 * atomic ignores both masks. */
	struct {
		uint64_t va;
		uint32_t rkey;
		uint64_t swap_add;
		uint64_t swap_add_mask;
		uint64_t compare;
		uint64_t compare_mask;
	} atomic;
	uint64_t atomic_orig; /* AtomicAckETH 8.3.7 */
	uint32_t rmsn;        /* SETH 8.3.2 */
	uint32_t offset;      /* OETH 8.3.3 */
	struct {              /* STETH 8.3.4 */
		uint64_t va;
		uint32_t lkey;
	} steth;
	uint32_t imm;      /* ImmDt 8.3.5 */
	uint32_t inv_rkey; /* IETH 8.3.8 */

	/* decode: the payload inside the decoded buffer, pad bytes excluded */
	const uint8_t *payload;
	size_t payload_len;
};

/* Bytes of RBTH + ETHs of opcode, or -FC_WIRE_ETYPE for a reserved opcode. */
int fc_rdma_hdr_len(uint8_t opcode);

/* Does opcode carry payload bytes after its headers? False for READ Request, the
 * atomic requests, ATOMIC Response and reserved opcodes. */
bool fc_rdma_opcode_has_payload(uint8_t opcode);

/* Name for logs and falconctl: "RC_SEND_FIRST", "UD_SEND_ONLY_IMM", "XRC_MASKED_CMP_SWAP"
 * ...; "RESERVED" for a reserved opcode. Never NULL. */
const char *fc_rdma_opcode_name(uint8_t opcode);

/*
 * Decode the RDMA headers at the start of buf (the Falcon payload, len bytes).
 * falcon_type is the Falcon packet type that carried it (enum fc_pkt_type), or -1 to
 * skip the check that the opcode belongs in it. On success fills *out (out->payload
 * points into buf) and returns the header length; on failure *out is untouched and the
 * return value is one of
 *   -FC_WIRE_ETRUNC    len < 12, or shorter than the ETHs the opcode announces;
 *   -FC_WIRE_EVERSION  RBTH version != FC_RDMA_VERSION;
 *   -FC_WIRE_ETYPE     reserved opcode, or opcode not carried by falcon_type;
 *   -FC_WIRE_ELEN      a length rule of the file comment is broken.
 */
int fc_rdma_decode(const void *buf, size_t len, int falcon_type, struct fc_rdma_hdrs *out);

/*
 * Encode the RBTH and the ETHs of h->opcode (h->eths and h->pad are ignored), then
 * payload_len bytes of payload, then zero pad bytes up to a multiple of 4 (RBTH pad set
 * to their count), into buf of cap bytes. payload may be NULL when payload_len is 0 and
 * may alias buf (e.g. already in place at buf + fc_rdma_hdr_len(), where it is not
 * touched: a caller may write it there later): it is moved before the headers are
 * written. Never writes past buf + cap. Returns the total length, or
 *   -FC_WIRE_EINVAL  reserved opcode; dqp, or xrc_srq / deth.src_qp of a carried
 *                    XRCETH / DETH, wider than 24 bits; payload on an opcode that
 *                    carries none; payload NULL with payload_len > 0; WRITE Only (Imm)
 *                    with reth.len != payload_len; a total length above INT_MAX;
 *   -FC_WIRE_ENOSPC  the packet does not fit in cap (nothing past cap is written).
 */
int fc_rdma_encode(const struct fc_rdma_hdrs *h, const void *payload, size_t payload_len,
		   void *buf, size_t cap);

#endif
