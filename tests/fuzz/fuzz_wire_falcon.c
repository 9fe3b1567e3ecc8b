/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_wire_falcon.c - libFuzzer target for the Falcon header codec.
 *
 * Decode arbitrary bytes. When decode accepts them, encode the result into a buffer of
 * exactly the input's size and check that
 *   - encode writes exactly that many bytes,
 *   - the bytes equal the input except in reserved bits (masks below, written from the
 *     spec section 7 drawings), so decode never ignores a bit that carries a field,
 *   - decoding the encoded bytes gives the same packet, field by field.
 * Any mismatch abort()s so that libFuzzer reports it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire_falcon.h"

#define MAX_WORDS 18

/* Bits that carry a field, per header word (host order; spec 7.2 - 7.8). */
static size_t field_masks(uint32_t type, uint32_t m[MAX_WORDS])
{
	size_t n = fc_falcon_hdr_len(type) / 4;

	for (size_t i = 0; i < n; i++)
		m[i] = 0xFFFFFFFF;
	m[0] = 0xF0FFFFFF; /* version | reserved | CID */
	switch (type) {
	case FC_PKT_PULL_REQ:
		m[6] = 0xFFFF0000; /* request length | reserved */
		m[7] = 0;
		break;
	case FC_PKT_PUSH_DATA:
		m[6] = 0xFFFF0000;
		break;
	case FC_PKT_RESYNC:
		m[6] = 0xFFF00000; /* code | packet type | reserved */
		break;
	case FC_PKT_NACK:
		m[9] = 0xFF3F00FF; /* code | rsvd | RNR timeout | W | rsvd | ULP code */
		/* fall through */
	case FC_PKT_BACK:
	case FC_PKT_EACK:
		m[1] = 0x0000001E; /* packet type only */
		m[6] = 0xFFFFFE00; /* hops | rx buffer | ECN | reserved */
		m[7] = 0x00FFFFFF; /* reserved | RUE (22b + OWN, or 24b) */
		break;
	default:
		break;
	}
	return n;
}

static uint32_t word_at(const uint8_t *b, size_t i)
{
	return (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
	       (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
}

static int same_pkt(const struct fc_falcon_pkt *a, const struct fc_falcon_pkt *b)
{
	return a->type == b->type && a->cid == b->cid && a->dest_fn == b->dest_fn &&
	       a->proto == b->proto && a->ar == b->ar && a->rdbpsn == b->rdbpsn &&
	       a->rrbpsn == b->rrbpsn && a->psn == b->psn && a->rsn == b->rsn &&
	       a->req_len == b->req_len && a->resync_code == b->resync_code &&
	       a->resync_pkt_type == b->resync_pkt_type && a->vendor == b->vendor &&
	       a->t1_ts == b->t1_ts && a->t2_ts == b->t2_ts && a->hops == b->hops &&
	       a->rxbuf == b->rxbuf && a->ecn == b->ecn && a->rue == b->rue && a->own == b->own &&
	       a->data_ack[0] == b->data_ack[0] && a->data_ack[1] == b->data_ack[1] &&
	       a->data_rx[0] == b->data_rx[0] && a->data_rx[1] == b->data_rx[1] &&
	       a->req_bitmap == b->req_bitmap && a->nack_psn == b->nack_psn &&
	       a->nack_code == b->nack_code && a->rnr_timeout == b->rnr_timeout &&
	       a->window == b->window && a->ulp_nack_code == b->ulp_nack_code &&
	       a->payload_len == b->payload_len &&
	       (a->payload_len == 0 || memcmp(a->payload, b->payload, a->payload_len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fc_falcon_pkt p, q;
	uint32_t m[MAX_WORDS];
	uint8_t *out;
	size_t n;
	int hdr;

	hdr = fc_falcon_decode(data, size, &p);
	if (hdr < 0)
		return 0;
	if ((size_t)hdr != fc_falcon_hdr_len(p.type) || fc_falcon_encoded_len(&p) != size)
		abort();
	out = malloc(size); /* exactly the size: ASan catches any write past it */
	if (!out)
		return 0;
	if (fc_falcon_encode(&p, out, size) != (int)size)
		abort();
	n = field_masks(p.type, m);
	for (size_t i = 0; i < n; i++)
		if ((word_at(out, i) ^ word_at(data, i)) & m[i] || word_at(out, i) & ~m[i])
			abort();
	if (memcmp(out + hdr, data + hdr, size - (size_t)hdr) != 0)
		abort();
	if (fc_falcon_decode(out, size, &q) != hdr || !same_pkt(&p, &q))
		abort();
	if (fc_falcon_encode(&p, out, size - 1) != -FC_WIRE_ENOSPC)
		abort();
	free(out);
	return 0;
}
