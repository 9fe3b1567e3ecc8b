/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_falcon.c - Falcon header codec (spec section 7). See wire_falcon.h for the checks
 * and their order.
 *
 * The packet is copied into (or built in) a local union of the wire.h header structs with
 * memcpy, so the buffer may have any alignment; the fields are then read and written with
 * the FC_GET/FC_PUT masks of wire.h.
 */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "wire_falcon.h"

union fc_falcon_hdr {
	struct fc_base_hdr base;
	struct fc_pull_req_hdr pull_req;
	struct fc_pull_data_hdr pull_data;
	struct fc_push_data_hdr push;
	struct fc_resync_hdr resync;
	struct fc_ack_hdr ack;
	struct fc_eack_hdr eack;
	struct fc_nack_hdr nack;
	__u8 bytes[FC_FALCON_HDR_MAX];
};

_Static_assert(sizeof(union fc_falcon_hdr) == FC_FALCON_HDR_MAX, "largest header is EACK");

/* ------------------------------------------------------------------------ */
/* decode                                                                     */
/* ------------------------------------------------------------------------ */

/* spec 7.2: words 1-5 of the base header (word 0 is common to every type). */
/* decode clears from req_len on: the members decode_base writes come before it */
_Static_assert(offsetof(struct fc_falcon_pkt, dest_fn) < offsetof(struct fc_falcon_pkt, req_len) &&
	       offsetof(struct fc_falcon_pkt, proto) < offsetof(struct fc_falcon_pkt, req_len) &&
	       offsetof(struct fc_falcon_pkt, ar) < offsetof(struct fc_falcon_pkt, req_len) &&
	       offsetof(struct fc_falcon_pkt, rdbpsn) < offsetof(struct fc_falcon_pkt, req_len) &&
	       offsetof(struct fc_falcon_pkt, rrbpsn) < offsetof(struct fc_falcon_pkt, req_len) &&
	       offsetof(struct fc_falcon_pkt, psn) < offsetof(struct fc_falcon_pkt, req_len) &&
	       offsetof(struct fc_falcon_pkt, rsn) < offsetof(struct fc_falcon_pkt, req_len) &&
	       offsetof(struct fc_falcon_pkt, payload) > offsetof(struct fc_falcon_pkt, ulp_nack_code),
	       "fc_falcon_pkt: base header members, then the rest, then the payload");

static void decode_base(const struct fc_base_hdr *h, struct fc_falcon_pkt *out)
{
	uint32_t w1 = fc_ntoh32(h->w1);

	out->dest_fn = FC_GET(w1, FC_W1_DFN);
	out->proto = (uint8_t)FC_GET(w1, FC_W1_PROTO);
	out->ar = FC_GET(w1, FC_W1_AR) != 0;
	out->rdbpsn = fc_ntoh32(h->rdbpsn);
	out->rrbpsn = fc_ntoh32(h->rrbpsn);
	out->psn = fc_ntoh32(h->psn);
	out->rsn = fc_ntoh32(h->rsn);
}

/* spec 7.7.1, 7.8: words 2-6 and the RUE/OWN of word 7 (widths depend on the type). */
static void decode_ack(const struct fc_ack_hdr *h, bool nack, struct fc_falcon_pkt *out)
{
	uint32_t w6 = fc_ntoh32(h->w6), w7 = fc_ntoh32(h->w7);

	out->rdbpsn = fc_ntoh32(h->rdbpsn);
	out->rrbpsn = fc_ntoh32(h->rrbpsn);
	out->t1_ts = fc_ntoh32(h->t1_ts);
	out->t2_ts = fc_ntoh32(h->t2_ts);
	out->hops = (uint8_t)FC_GET(w6, FC_CC_HOPS);
	out->rxbuf = (uint8_t)FC_GET(w6, FC_CC_RXBUF);
	out->ecn = (uint16_t)FC_GET(w6, FC_CC_ECN);
	if (nack) {
		out->rue = FC_GET(w7, FC_NACK_RUE);
	} else {
		out->rue = FC_GET(w7, FC_ACK_RUE);
		out->own = (uint8_t)FC_GET(w7, FC_ACK_OWN);
	}
}

/* A 64-bit bitmap sent as two words, most significant first (spec 7.7.2). */
static uint64_t get_bitmap64(const __u8 *p)
{
	return (uint64_t)fc_hdr_word(p, 0) << 32 | fc_hdr_word(p, 1);
}

/* A 128-bit bitmap: bits 127:96 first ... bits 31:0 last (spec 7.7.2). */
static void get_bitmap128(const __u8 *p, uint64_t x[2])
{
	x[1] = get_bitmap64(p);
	x[0] = get_bitmap64(p + 8);
}

static void decode_eack(const union fc_falcon_hdr *h, struct fc_falcon_pkt *out)
{
	get_bitmap128(h->bytes + offsetof(struct fc_eack_hdr, data_ack), out->data_ack);
	get_bitmap128(h->bytes + offsetof(struct fc_eack_hdr, data_rx), out->data_rx);
	out->req_bitmap = get_bitmap64(h->bytes + offsetof(struct fc_eack_hdr, req));
}

static void decode_nack(const struct fc_nack_hdr *h, struct fc_falcon_pkt *out)
{
	uint32_t w9 = fc_ntoh32(h->w9);

	out->nack_psn = fc_ntoh32(h->nack_psn);
	out->nack_code = (uint8_t)FC_GET(w9, FC_NACK_CODE);
	out->rnr_timeout = (uint8_t)FC_GET(w9, FC_NACK_RNR_TO);
	out->window = (uint8_t)FC_GET(w9, FC_NACK_W);
	out->ulp_nack_code = (uint8_t)FC_GET(w9, FC_NACK_ULP_CODE);
}

/* Fill *out from the header of a known type (version, type and length already checked).
 * Returns 0, -FC_WIRE_EPROTO (check 5) or -FC_WIRE_EFIELD (check 6). */
static int decode_fields(const union fc_falcon_hdr *h, struct fc_falcon_pkt *out)
{
	if (fc_falcon_type_has_base(out->type)) {
		decode_base(&h->base, out);
		if (!fc_proto_type_valid(out->proto))
			return -FC_WIRE_EPROTO;
	}
	switch (out->type) {
	case FC_PKT_PULL_REQ:
		out->req_len = fc_ntoh16(h->pull_req.req_len);
		break;
	case FC_PKT_PUSH_DATA:
		out->req_len = fc_ntoh16(h->push.req_len);
		break;
	case FC_PKT_RESYNC: {
		uint32_t w6 = fc_ntoh32(h->resync.w6);

		out->resync_code = (uint8_t)FC_GET(w6, FC_RESYNC_CODE);
		out->resync_pkt_type = (uint8_t)FC_GET(w6, FC_RESYNC_PKT_TYPE);
		out->vendor = fc_ntoh32(h->resync.vendor);
		if (!fc_resync_code_valid(out->resync_code))
			return -FC_WIRE_EFIELD;
		break;
	}
	case FC_PKT_BACK:
		decode_ack(&h->ack, false, out);
		break;
	case FC_PKT_EACK:
		decode_ack(&h->ack, false, out);
		decode_eack(h, out);
		break;
	case FC_PKT_NACK:
		decode_ack(&h->ack, true, out);
		decode_nack(&h->nack, out);
		if (!fc_nack_code_valid(out->nack_code))
			return -FC_WIRE_EFIELD;
		break;
	default: /* Pull Data: base header only */
		break;
	}
	return 0;
}

/* Check 7: the bytes after the header agree with the type. */
static int check_payload_len(const struct fc_falcon_pkt *p)
{
	if (p->type == FC_PKT_PUSH_DATA)
		return p->req_len == p->payload_len ? 0 : -FC_WIRE_ELEN;
	if (!fc_falcon_type_has_payload(p->type))
		return p->payload_len == 0 ? 0 : -FC_WIRE_ELEN;
	return 0;
}

int fc_falcon_decode(const void *buf, size_t len, struct fc_falcon_pkt *out)
{
	union fc_falcon_hdr h;
	uint32_t w0, type;
	size_t hdr_len;
	int err;

	if (len < 2 * sizeof(__be32))
		return -FC_WIRE_ETRUNC;
	memcpy(&h, buf, 2 * sizeof(__be32));
	w0 = fc_ntoh32(h.base.w0);
	if (FC_GET(w0, FC_W0_VERSION) != FALCON_VERSION)
		return -FC_WIRE_EVERSION;
	type = FC_GET(fc_ntoh32(h.base.w1), FC_W1_PKT_TYPE);
	if (!fc_pkt_type_valid(type))
		return -FC_WIRE_ETYPE;
	hdr_len = fc_falcon_hdr_len(type);
	if (len < hdr_len)
		return -FC_WIRE_ETRUNC;
	memcpy(&h, buf, hdr_len);

	/* members the type does not carry are 0: decode_fields writes the base header of a
	 * type that has one, so only what follows it is cleared (the payload is set below) */
	if (fc_falcon_type_has_base(type))
		memset(&out->req_len, 0, offsetof(struct fc_falcon_pkt, payload) -
						 offsetof(struct fc_falcon_pkt, req_len));
	else
		memset(out, 0, sizeof(*out));
	out->type = (enum fc_pkt_type)type;
	out->cid = FC_GET(w0, FC_W0_CID);
	out->payload = (const __u8 *)buf + hdr_len;
	out->payload_len = len - hdr_len;
	err = decode_fields(&h, out);
	if (err)
		return err;
	err = check_payload_len(out);
	if (err)
		return err;
	return (int)hdr_len;
}

/* ------------------------------------------------------------------------ */
/* encode                                                                     */
/* ------------------------------------------------------------------------ */

/* Do the values of *p fit their fields (the type is known)? */
static bool base_fields_fit(const struct fc_falcon_pkt *p)
{
	return p->dest_fn <= FC_FALCON_DFN_MAX && fc_proto_type_valid(p->proto);
}

static bool ack_fields_fit(const struct fc_falcon_pkt *p)
{
	uint32_t rue_max = p->type == FC_PKT_NACK ? FC_FALCON_NACK_RUE_MAX : FC_FALCON_ACK_RUE_MAX;

	if (p->hops > FC_FALCON_HOPS_MAX || p->rxbuf > FC_FALCON_RXBUF_MAX ||
	    p->ecn > FC_FALCON_ECN_MAX || p->rue > rue_max)
		return false;
	if (p->type == FC_PKT_NACK)
		return fc_nack_code_valid(p->nack_code) && p->rnr_timeout <= FC_FALCON_RNR_TO_MAX &&
		       p->window <= FC_NACK_W_REQ;
	return p->own <= FC_FALCON_OWN_MAX;
}

static bool payload_fits(const struct fc_falcon_pkt *p)
{
	if (p->payload_len > 0 && !p->payload)
		return false;
	if (!fc_falcon_type_has_payload(p->type))
		return p->payload_len == 0;
	if (p->type == FC_PKT_PUSH_DATA && p->payload_len > FC_FALCON_PUSH_MAX)
		return false;
	return p->payload_len <= (size_t)INT_MAX - fc_falcon_hdr_len(p->type);
}

static bool fields_fit(const struct fc_falcon_pkt *p)
{
	if (p->cid > FC_CID_MAX || !payload_fits(p))
		return false;
	if (fc_falcon_type_has_base(p->type) && !base_fields_fit(p))
		return false;
	if (p->type == FC_PKT_RESYNC)
		return fc_resync_code_valid(p->resync_code) &&
		       p->resync_pkt_type <= FC_FALCON_PKT_TYPE_MAX;
	if (!fc_falcon_type_has_base(p->type))
		return ack_fields_fit(p);
	return true;
}

/* spec 7.2 */
static void encode_base(const struct fc_falcon_pkt *p, struct fc_base_hdr *h)
{
	h->w1 = fc_hton32(FC_PUT(FC_W1_DFN, p->dest_fn) | FC_PUT(FC_W1_PROTO, p->proto) |
			  FC_PUT(FC_W1_PKT_TYPE, p->type) | FC_PUT(FC_W1_AR, p->ar));
	h->rdbpsn = fc_hton32(p->rdbpsn);
	h->rrbpsn = fc_hton32(p->rrbpsn);
	h->psn = fc_hton32(p->psn);
	h->rsn = fc_hton32(p->rsn);
}

/* spec 7.7.1, 7.8: words 1-7 of BACK, EACK and NACK. */
static void encode_ack(const struct fc_falcon_pkt *p, struct fc_ack_hdr *h)
{
	uint32_t w7;

	if (p->type == FC_PKT_NACK)
		w7 = FC_PUT(FC_NACK_RUE, p->rue);
	else
		w7 = FC_PUT(FC_ACK_RUE, p->rue) | FC_PUT(FC_ACK_OWN, p->own);
	h->w1 = fc_hton32(FC_PUT(FC_W1_PKT_TYPE, p->type));
	h->rdbpsn = fc_hton32(p->rdbpsn);
	h->rrbpsn = fc_hton32(p->rrbpsn);
	h->t1_ts = fc_hton32(p->t1_ts);
	h->t2_ts = fc_hton32(p->t2_ts);
	h->w6 = fc_hton32(FC_PUT(FC_CC_HOPS, p->hops) | FC_PUT(FC_CC_RXBUF, p->rxbuf) |
			  FC_PUT(FC_CC_ECN, p->ecn));
	h->w7 = fc_hton32(w7);
}

static void put_be32(uint32_t v, __u8 *p)
{
	__be32 w = fc_hton32(v);

	memcpy(p, &w, sizeof(w));
}

static void put_bitmap64(uint64_t x, __u8 *p)
{
	put_be32((uint32_t)(x >> 32), p);
	put_be32((uint32_t)x, p + 4);
}

/* spec 7.7.2: most significant word first. */
static void put_bitmap128(const uint64_t x[2], __u8 *p)
{
	put_bitmap64(x[1], p);
	put_bitmap64(x[0], p + 8);
}

static void encode_eack(const struct fc_falcon_pkt *p, union fc_falcon_hdr *h)
{
	put_bitmap128(p->data_ack, h->bytes + offsetof(struct fc_eack_hdr, data_ack));
	put_bitmap128(p->data_rx, h->bytes + offsetof(struct fc_eack_hdr, data_rx));
	put_bitmap64(p->req_bitmap, h->bytes + offsetof(struct fc_eack_hdr, req));
}

static void encode_nack(const struct fc_falcon_pkt *p, struct fc_nack_hdr *h)
{
	h->nack_psn = fc_hton32(p->nack_psn);
	h->w9 = fc_hton32(FC_PUT(FC_NACK_CODE, p->nack_code) |
			  FC_PUT(FC_NACK_RNR_TO, p->rnr_timeout) | FC_PUT(FC_NACK_W, p->window) |
			  FC_PUT(FC_NACK_ULP_CODE, p->ulp_nack_code));
}

/* Build the header of *p (fields already checked) in *h, which is zeroed first. */
static void encode_hdr(const struct fc_falcon_pkt *p, union fc_falcon_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->base.w0 = fc_hton32(FC_PUT(FC_W0_VERSION, FALCON_VERSION) | FC_PUT(FC_W0_CID, p->cid));
	if (fc_falcon_type_has_base(p->type))
		encode_base(p, &h->base);
	else
		encode_ack(p, &h->ack);
	switch (p->type) {
	case FC_PKT_PULL_REQ:
		h->pull_req.req_len = fc_hton16(p->req_len);
		break;
	case FC_PKT_PUSH_DATA:
		h->push.req_len = fc_hton16((uint16_t)p->payload_len);
		break;
	case FC_PKT_RESYNC:
		h->resync.w6 = fc_hton32(FC_PUT(FC_RESYNC_CODE, p->resync_code) |
					 FC_PUT(FC_RESYNC_PKT_TYPE, p->resync_pkt_type));
		h->resync.vendor = fc_hton32(p->vendor);
		break;
	case FC_PKT_EACK:
		encode_eack(p, h);
		break;
	case FC_PKT_NACK:
		encode_nack(p, &h->nack);
		break;
	default: /* Pull Data, BACK: nothing beyond the common words */
		break;
	}
}

size_t fc_falcon_encoded_len(const struct fc_falcon_pkt *p)
{
	size_t hdr_len = fc_falcon_hdr_len(p->type);

	return hdr_len ? hdr_len + p->payload_len : 0;
}

int fc_falcon_encode(const struct fc_falcon_pkt *p, void *buf, size_t cap)
{
	union fc_falcon_hdr h;
	size_t hdr_len;
	__u8 *out = buf;

	if (!fc_pkt_type_valid(p->type))
		return -FC_WIRE_ETYPE;
	if (!fields_fit(p))
		return -FC_WIRE_EINVAL;
	hdr_len = fc_falcon_hdr_len(p->type);
	if (cap < hdr_len || cap - hdr_len < p->payload_len)
		return -FC_WIRE_ENOSPC;

	encode_hdr(p, &h);
	/* Payload first: it may sit anywhere in buf, even under the header. */
	if (p->payload_len > 0 && p->payload != out + hdr_len)
		memmove(out + hdr_len, p->payload, p->payload_len);
	memcpy(out, &h, hdr_len);
	return (int)(hdr_len + p->payload_len);
}
