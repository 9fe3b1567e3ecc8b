/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_rdma.c - RDMA-over-Falcon header codec (RDMA spec section 8). See wire_rdma.h.
 */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "wire_rdma.h"

/* The ETHs in wire order (wire.h, comment above fc_rdma_opcode_eths; spec 8.1.3). */
static const struct {
	uint32_t eth;
	uint8_t len;
} eth_order[] = {
	{ FC_ETH_XRCETH, sizeof(struct fc_xrceth) },
	{ FC_ETH_RETH, sizeof(struct fc_reth) },
	{ FC_ETH_DETH, sizeof(struct fc_deth) },
	{ FC_ETH_ATOMIC, sizeof(struct fc_atomic_eth) },
	{ FC_ETH_MASKED_ATOMIC, sizeof(struct fc_masked_atomic_eth) },
	{ FC_ETH_ATOMIC_ACK, sizeof(struct fc_atomic_ack_eth) },
	{ FC_ETH_SETH, sizeof(struct fc_seth) },
	{ FC_ETH_OETH, sizeof(struct fc_oeth) },
	{ FC_ETH_STETH, sizeof(struct fc_steth) },
	{ FC_ETH_IMMDT, sizeof(struct fc_immdt) },
	{ FC_ETH_IETH, sizeof(struct fc_ieth) },
};
#define ETH_COUNT (sizeof(eth_order) / sizeof(eth_order[0]))

/* The same lengths by bit number, for sums (no order needed). */
static const uint8_t eth_len_by_bit[] = {
	[0] = sizeof(struct fc_xrceth), [1] = sizeof(struct fc_reth),
	[2] = sizeof(struct fc_deth), [3] = sizeof(struct fc_seth),
	[4] = sizeof(struct fc_oeth), [5] = sizeof(struct fc_immdt),
	[6] = sizeof(struct fc_ieth), [7] = sizeof(struct fc_atomic_eth),
	[8] = sizeof(struct fc_masked_atomic_eth), [9] = sizeof(struct fc_atomic_ack_eth),
	[10] = sizeof(struct fc_steth),
};
_Static_assert(FC_ETH_XRCETH == 1u << 0 && FC_ETH_RETH == 1u << 1 && FC_ETH_DETH == 1u << 2 &&
	       FC_ETH_SETH == 1u << 3 && FC_ETH_OETH == 1u << 4 && FC_ETH_IMMDT == 1u << 5 &&
	       FC_ETH_IETH == 1u << 6 && FC_ETH_ATOMIC == 1u << 7 &&
	       FC_ETH_MASKED_ATOMIC == 1u << 8 && FC_ETH_ATOMIC_ACK == 1u << 9 &&
	       FC_ETH_STETH == 1u << 10, "eth_len_by_bit follows the FC_ETH_ bits");

/* ------------------------------------------------------------------------ */
/* Unaligned big-endian access                                               */
/* ------------------------------------------------------------------------ */

static uint32_t get32(const uint8_t *p)
{
	__be32 v;

	memcpy(&v, p, sizeof(v));
	return fc_ntoh32(v);
}

static uint64_t get64(const uint8_t *p)
{
	__be64 v;

	memcpy(&v, p, sizeof(v));
	return fc_ntoh64(v);
}

static uint8_t *put32(uint8_t *p, uint32_t x)
{
	__be32 v = fc_hton32(x);

	memcpy(p, &v, sizeof(v));
	return p + sizeof(v);
}

static uint8_t *put64(uint8_t *p, uint64_t x)
{
	__be64 v = fc_hton64(x);

	memcpy(p, &v, sizeof(v));
	return p + sizeof(v);
}

/* ------------------------------------------------------------------------ */
/* Opcode properties                                                         */
/* ------------------------------------------------------------------------ */

/* Header length of a known opcode whose ETHs are eths (not 0). The codec works this and
 * the next out from the eths it already has, rather than looking the opcode up again. */
static int eths_hdr_len(uint32_t eths)
{
	int len = sizeof(struct fc_rbth);

	for (uint32_t m = eths; m; m &= m - 1) /* the opcode table holds known bits only */
		len += eth_len_by_bit[__builtin_ctz(m) % (sizeof(eth_len_by_bit))];
	return len;
}

/* May a known opcode carry a payload? Pull Requests (READ Request, atomics) and the
 * ATOMIC Response: headers only. */
static bool known_has_payload(uint8_t opcode)
{
	return fc_rdma_opcode_falcon_type(opcode) != FC_PKT_PULL_REQ &&
	       (opcode & 0x1F) != FC_RDMA_ATOMIC_RESP;
}

int fc_rdma_hdr_len(uint8_t opcode)
{
	uint32_t eths = fc_rdma_opcode_eths(opcode);

	return eths ? eths_hdr_len(eths) : -FC_WIRE_ETYPE;
}

bool fc_rdma_opcode_has_payload(uint8_t opcode)
{
	return fc_rdma_opcode_eths(opcode) && known_has_payload(opcode);
}

/* WRITE Only (Imm): the RETH length must equal the payload length. */
static bool reth_len_is_payload_len(uint8_t opcode)
{
	uint8_t op = opcode & 0x1F;

	return op == FC_RDMA_WRITE_ONLY || op == FC_RDMA_WRITE_ONLY_IMM;
}

#define OPCODE_NAMES(cls)                                             \
	{                                                             \
		[FC_RDMA_SEND_FIRST] = cls "SEND_FIRST",              \
		[FC_RDMA_SEND_MIDDLE] = cls "SEND_MIDDLE",            \
		[FC_RDMA_SEND_LAST] = cls "SEND_LAST",                \
		[FC_RDMA_SEND_LAST_IMM] = cls "SEND_LAST_IMM",        \
		[FC_RDMA_SEND_ONLY] = cls "SEND_ONLY",                \
		[FC_RDMA_SEND_ONLY_IMM] = cls "SEND_ONLY_IMM",        \
		[FC_RDMA_WRITE_FIRST] = cls "WRITE_FIRST",            \
		[FC_RDMA_WRITE_MIDDLE] = cls "WRITE_MIDDLE",          \
		[FC_RDMA_WRITE_LAST] = cls "WRITE_LAST",              \
		[FC_RDMA_WRITE_LAST_IMM] = cls "WRITE_LAST_IMM",      \
		[FC_RDMA_WRITE_ONLY] = cls "WRITE_ONLY",              \
		[FC_RDMA_WRITE_ONLY_IMM] = cls "WRITE_ONLY_IMM",      \
		[FC_RDMA_READ_REQ] = cls "READ_REQ",                  \
		[FC_RDMA_READ_RESP_FIRST] = cls "READ_RESP_FIRST",    \
		[FC_RDMA_READ_RESP_MIDDLE] = cls "READ_RESP_MIDDLE",  \
		[FC_RDMA_READ_RESP_LAST] = cls "READ_RESP_LAST",      \
		[FC_RDMA_READ_RESP_ONLY] = cls "READ_RESP_ONLY",      \
		[FC_RDMA_ATOMIC_RESP] = cls "ATOMIC_RESP",            \
		[FC_RDMA_CMP_SWAP] = cls "CMP_SWAP",                  \
		[FC_RDMA_FETCH_ADD] = cls "FETCH_ADD",                \
		[FC_RDMA_SEND_LAST_INV] = cls "SEND_LAST_INV",        \
		[FC_RDMA_SEND_ONLY_INV] = cls "SEND_ONLY_INV",        \
		[FC_RDMA_MASKED_CMP_SWAP] = cls "MASKED_CMP_SWAP",    \
		[FC_RDMA_MASKED_FETCH_ADD] = cls "MASKED_FETCH_ADD",  \
	}

const char *fc_rdma_opcode_name(uint8_t opcode)
{
	static const char *const rc[32] = OPCODE_NAMES("RC_");
	static const char *const ud[32] = OPCODE_NAMES("UD_");
	static const char *const xrc[32] = OPCODE_NAMES("XRC_");
	uint8_t cls = opcode >> FC_RDMA_OPC_CLASS_SHIFT, op = opcode & 0x1F;

	if (!fc_rdma_opcode_eths(opcode))
		return "RESERVED";
	if (cls == FC_RDMA_CLASS_UD)
		return ud[op];
	if (cls == FC_RDMA_CLASS_XRC)
		return xrc[op];
	return rc[op];
}

/* ------------------------------------------------------------------------ */
/* Decode                                                                    */
/* ------------------------------------------------------------------------ */

/* decode clears the ETH fields only: the RBTH ones and eths come before them, the payload
 * after them */
_Static_assert(offsetof(struct fc_rdma_hdrs, sn) < offsetof(struct fc_rdma_hdrs, xrc_srq) &&
	       offsetof(struct fc_rdma_hdrs, dqp) < offsetof(struct fc_rdma_hdrs, xrc_srq) &&
	       offsetof(struct fc_rdma_hdrs, pad) < offsetof(struct fc_rdma_hdrs, xrc_srq) &&
	       offsetof(struct fc_rdma_hdrs, eths) < offsetof(struct fc_rdma_hdrs, xrc_srq) &&
	       offsetof(struct fc_rdma_hdrs, atomic) > offsetof(struct fc_rdma_hdrs, xrc_srq) &&
	       offsetof(struct fc_rdma_hdrs, atomic) > offsetof(struct fc_rdma_hdrs, reth) &&
	       offsetof(struct fc_rdma_hdrs, atomic) > offsetof(struct fc_rdma_hdrs, deth) &&
	       offsetof(struct fc_rdma_hdrs, atomic_orig) == offsetof(struct fc_rdma_hdrs, atomic) +
								 sizeof(((struct fc_rdma_hdrs *)0)->atomic) &&
	       offsetof(struct fc_rdma_hdrs, payload) > offsetof(struct fc_rdma_hdrs, inv_rkey),
	       "fc_rdma_hdrs: RBTH fields and eths, the ETH fields (XRCETH, RETH, DETH, the "
	       "atomic ones, then the rest), then the payload");

/* spec 8.2; reserved bits are ignored. */
static void decode_rbth(const uint8_t *p, struct fc_rdma_hdrs *h)
{
	h->opcode = p[0];
	h->se = FC_GET(p[1], FC_RBTH_SE);
	h->pad = FC_GET(p[1], FC_RBTH_PAD);
	h->ce = FC_GET(p[2], FC_RBTH_CE);
	h->ackreq = FC_GET(p[2], FC_RBTH_A);
	h->dqp = get32(p + 4) & FC_QPN_MASK;
	h->sn = get32(p + 8);
}

/* RFC 7306 5.2.1 / 5.1: the masks that make a masked atomic act as the plain one. */
static void plain_atomic_masks(uint8_t opcode, struct fc_rdma_hdrs *h)
{
	h->atomic.swap_add_mask = (opcode & 0x1F) == FC_RDMA_FETCH_ADD ? 0 : ~0ULL;
	h->atomic.compare_mask = ~0ULL;
}

/* AtomicETH (8.3.6) or MaskedAtomicETH (RFC 7306 figure 4 after VA and R_Key). */
static void decode_atomic(const uint8_t *p, bool masked, struct fc_rdma_hdrs *h)
{
	h->atomic.va = get64(p);
	h->atomic.rkey = get32(p + 8);
	h->atomic.swap_add = get64(p + 12);
	if (!masked) {
		h->atomic.compare = get64(p + 20);
		plain_atomic_masks(h->opcode, h);
		return;
	}
	h->atomic.swap_add_mask = get64(p + 20);
	h->atomic.compare = get64(p + 28);
	h->atomic.compare_mask = get64(p + 36);
}

/* One ETH at p, spec 8.3.x; reserved bits are ignored. */
static void decode_eth(uint32_t eth, const uint8_t *p, struct fc_rdma_hdrs *h)
{
	switch (eth) {
	case FC_ETH_XRCETH:
		h->xrc_srq = get32(p) & FC_QPN_MASK;
		break;
	case FC_ETH_RETH:
		h->reth.va = get64(p);
		h->reth.rkey = get32(p + 8);
		h->reth.len = get32(p + 12);
		break;
	case FC_ETH_DETH:
		h->deth.qkey = get32(p);
		h->deth.src_qp = get32(p + 4) & FC_QPN_MASK;
		break;
	case FC_ETH_ATOMIC:
	case FC_ETH_MASKED_ATOMIC:
		decode_atomic(p, eth == FC_ETH_MASKED_ATOMIC, h);
		break;
	case FC_ETH_ATOMIC_ACK:
		h->atomic_orig = get64(p);
		break;
	case FC_ETH_SETH:
		h->rmsn = get32(p);
		break;
	case FC_ETH_OETH:
		h->offset = get32(p);
		break;
	case FC_ETH_STETH:
		h->steth.va = get64(p);
		h->steth.lkey = get32(p + 8);
		break;
	case FC_ETH_IMMDT:
		h->imm = get32(p);
		break;
	case FC_ETH_IETH:
		h->inv_rkey = get32(p);
		break;
	}
}

/* The length rules of wire_rdma.h, from the raw bytes of a packet of len bytes whose
 * headers (eths, hdr_len bytes) are known to be there. Returns 0 or -FC_WIRE_ELEN. */
static int check_lengths(const uint8_t *p, size_t len, uint32_t eths, size_t hdr_len)
{
	size_t rest = len - hdr_len, pad = FC_GET(p[1], FC_RBTH_PAD);

	if (len % 4)
		return -FC_WIRE_ELEN; /* spec 8.2: pad aligns to 4 bytes */
	if (pad > rest)
		return -FC_WIRE_ELEN;
	if (rest && !known_has_payload(p[0]))
		return -FC_WIRE_ELEN;
	if (reth_len_is_payload_len(p[0])) { /* spec 8.3.1; RETH after an XRCETH, len last */
		size_t reth = sizeof(struct fc_rbth) +
			      (eths & FC_ETH_XRCETH ? sizeof(struct fc_xrceth) : 0);

		if (get32(p + reth + offsetof(struct fc_reth, len)) != rest - pad)
			return -FC_WIRE_ELEN;
	}
	return 0;
}

int fc_rdma_decode(const void *buf, size_t len, int falcon_type, struct fc_rdma_hdrs *out)
{
	const uint8_t *p = buf;
	uint32_t eths;
	int hdr_len, err;
	size_t i = 0, off;

	if (len < sizeof(struct fc_rbth))
		return -FC_WIRE_ETRUNC;
	if (FC_GET(p[1], FC_RBTH_VER) != FC_RDMA_VERSION)
		return -FC_WIRE_EVERSION;
	eths = fc_rdma_opcode_eths(p[0]);
	if (!eths)
		return -FC_WIRE_ETYPE;
	if (falcon_type >= 0 && fc_rdma_opcode_falcon_type(p[0]) != (uint32_t)falcon_type)
		return -FC_WIRE_ETYPE;
	hdr_len = eths_hdr_len(eths);
	if (len < (size_t)hdr_len)
		return -FC_WIRE_ETRUNC;
	err = check_lengths(p, len, eths, (size_t)hdr_len);
	if (err)
		return err;
	/* valid: only now is *out written, in place. The ETH fields are cleared (those of
	 * ETHs the opcode lacks stay 0) but for the atomic ones of an atomic request, which
	 * decode_atomic writes all; the RBTH fields, eths and the payload are written. */
	memset(&out->xrc_srq, 0, offsetof(struct fc_rdma_hdrs, atomic) -
					 offsetof(struct fc_rdma_hdrs, xrc_srq));
	if (!(eths & (FC_ETH_ATOMIC | FC_ETH_MASKED_ATOMIC)))
		memset(&out->atomic, 0, sizeof(out->atomic));
	memset(&out->atomic_orig, 0, offsetof(struct fc_rdma_hdrs, payload) -
					     offsetof(struct fc_rdma_hdrs, atomic_orig));
	decode_rbth(p, out);
	out->eths = eths;
	off = sizeof(struct fc_rbth);
	for (uint32_t left = eths; left && i < ETH_COUNT; i++) { /* wire order */
		if (!(left & eth_order[i].eth))
			continue;
		left &= ~eth_order[i].eth;
		decode_eth(eth_order[i].eth, p + off, out);
		off += eth_order[i].len;
	}
	out->payload = p + off;
	out->payload_len = len - off - out->pad;
	return hdr_len;
}

/* ------------------------------------------------------------------------ */
/* Encode                                                                    */
/* ------------------------------------------------------------------------ */

/* spec 8.2; reserved bits are written as zero. */
static void encode_rbth(const struct fc_rdma_hdrs *h, uint8_t pad, uint8_t *p)
{
	p[0] = h->opcode;
	p[1] = FC_PUT(FC_RBTH_SE, h->se) | FC_PUT(FC_RBTH_PAD, pad) |
	       FC_PUT(FC_RBTH_VER, FC_RDMA_VERSION);
	p[2] = FC_PUT(FC_RBTH_CE, h->ce) | FC_PUT(FC_RBTH_A, h->ackreq);
	p[3] = 0;
	put32(p + 4, h->dqp);
	put32(p + 8, h->sn);
}

static void encode_atomic(const struct fc_rdma_hdrs *h, bool masked, uint8_t *p)
{
	p = put64(p, h->atomic.va);
	p = put32(p, h->atomic.rkey);
	p = put64(p, h->atomic.swap_add);
	if (masked)
		p = put64(p, h->atomic.swap_add_mask);
	p = put64(p, h->atomic.compare);
	if (masked)
		put64(p, h->atomic.compare_mask);
}

/* One ETH at p, spec 8.3.x; reserved bits are written as zero. */
static void encode_eth(uint32_t eth, const struct fc_rdma_hdrs *h, uint8_t *p)
{
	switch (eth) {
	case FC_ETH_XRCETH:
		put32(p, h->xrc_srq);
		break;
	case FC_ETH_RETH:
		put32(put32(put64(p, h->reth.va), h->reth.rkey), h->reth.len);
		break;
	case FC_ETH_DETH:
		put32(put32(p, h->deth.qkey), h->deth.src_qp);
		break;
	case FC_ETH_ATOMIC:
	case FC_ETH_MASKED_ATOMIC:
		encode_atomic(h, eth == FC_ETH_MASKED_ATOMIC, p);
		break;
	case FC_ETH_ATOMIC_ACK:
		put64(p, h->atomic_orig);
		break;
	case FC_ETH_SETH:
		put32(p, h->rmsn);
		break;
	case FC_ETH_OETH:
		put32(p, h->offset);
		break;
	case FC_ETH_STETH:
		put32(put64(p, h->steth.va), h->steth.lkey);
		break;
	case FC_ETH_IMMDT:
		put32(p, h->imm);
		break;
	case FC_ETH_IETH:
		put32(p, h->inv_rkey);
		break;
	}
}

/* Field widths and opcode/payload agreement. Returns 0 or -FC_WIRE_EINVAL. */
static int check_encode(const struct fc_rdma_hdrs *h, uint32_t eths, const void *payload,
			size_t payload_len)
{
	if (!eths || h->dqp > FC_QPN_MASK)
		return -FC_WIRE_EINVAL;
	if ((eths & FC_ETH_XRCETH) && h->xrc_srq > FC_QPN_MASK)
		return -FC_WIRE_EINVAL;
	if ((eths & FC_ETH_DETH) && h->deth.src_qp > FC_QPN_MASK)
		return -FC_WIRE_EINVAL;
	if (payload_len && (!payload || !known_has_payload(h->opcode)))
		return -FC_WIRE_EINVAL;
	if (reth_len_is_payload_len(h->opcode) && h->reth.len != payload_len)
		return -FC_WIRE_EINVAL;
	return 0;
}

int fc_rdma_encode(const struct fc_rdma_hdrs *h, const void *payload, size_t payload_len,
		   void *buf, size_t cap)
{
	uint8_t *p = buf, pad = (4 - payload_len % 4) % 4;
	uint32_t eths = fc_rdma_opcode_eths(h->opcode);
	size_t i = 0, off, hdr_len;
	int err;

	err = check_encode(h, eths, payload, payload_len);
	if (err)
		return err;
	hdr_len = (size_t)eths_hdr_len(eths);
	if (payload_len > (size_t)INT_MAX - hdr_len - pad)
		return -FC_WIRE_EINVAL;
	if (cap < hdr_len || cap - hdr_len < payload_len + pad)
		return -FC_WIRE_ENOSPC;
	if (payload_len && payload != p + hdr_len)
		memmove(p + hdr_len, payload, payload_len); /* first: payload may alias buf */
	memset(p + hdr_len + payload_len, 0, pad);
	encode_rbth(h, pad, p);
	off = sizeof(struct fc_rbth);
	for (uint32_t left = eths; left && i < ETH_COUNT; i++) { /* wire order */
		if (!(left & eth_order[i].eth))
			continue;
		left &= ~eth_order[i].eth;
		encode_eth(eth_order[i].eth, h, p + off);
		off += eth_order[i].len;
	}
	return (int)(hdr_len + payload_len + pad);
}
