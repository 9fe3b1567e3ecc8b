/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target of the RDMA-over-Falcon header codec (daemon/engine/wire_rdma.c).
 *
 * Input: byte 0 chooses the carrying Falcon packet type (bit 4 set: -1, no check; else
 * the low 4 bits), the rest is the Falcon payload. Whatever decodes must re-encode to
 * the same length, decode again to the same fields and payload, and re-encode to the
 * same bytes. Any difference aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire_rdma.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_fields(const struct fc_rdma_hdrs *a, const struct fc_rdma_hdrs *b)
{
	if (a->opcode != b->opcode || a->se != b->se || a->ce != b->ce ||
	    a->ackreq != b->ackreq || a->pad != b->pad || a->dqp != b->dqp || a->sn != b->sn ||
	    a->eths != b->eths || a->xrc_srq != b->xrc_srq ||
	    a->reth.va != b->reth.va || a->reth.rkey != b->reth.rkey ||
	    a->reth.len != b->reth.len || a->deth.qkey != b->deth.qkey ||
	    a->deth.src_qp != b->deth.src_qp || a->atomic.va != b->atomic.va ||
	    a->atomic.rkey != b->atomic.rkey || a->atomic.swap_add != b->atomic.swap_add ||
	    a->atomic.swap_add_mask != b->atomic.swap_add_mask ||
	    a->atomic.compare != b->atomic.compare ||
	    a->atomic.compare_mask != b->atomic.compare_mask ||
	    a->atomic_orig != b->atomic_orig || a->rmsn != b->rmsn || a->offset != b->offset ||
	    a->steth.va != b->steth.va || a->steth.lkey != b->steth.lkey || a->imm != b->imm ||
	    a->inv_rkey != b->inv_rkey || a->payload_len != b->payload_len ||
	    memcmp(a->payload, b->payload, a->payload_len) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fc_rdma_hdrs h1 = { 0 }, h2 = { 0 };
	uint8_t *enc1, *enc2;
	int falcon_type, r1, r2, n1, n2;

	if (size < 1)
		return 0;
	falcon_type = (data[0] & 0x10) ? -1 : (data[0] & 0x0F);
	(void)fc_rdma_opcode_name(size > 1 ? data[1] : 0);
	r1 = fc_rdma_decode(data + 1, size - 1, falcon_type, &h1);
	if (r1 < 0)
		return 0;
	if (r1 != fc_rdma_hdr_len(h1.opcode) || (size_t)r1 + h1.payload_len + h1.pad != size - 1)
		abort();

	enc1 = malloc(size);
	enc2 = malloc(size);
	if (!enc1 || !enc2)
		abort();
	n1 = fc_rdma_encode(&h1, h1.payload, h1.payload_len, enc1, size - 1);
	if (n1 != (int)(size - 1))
		abort();
	/* one byte short must not fit */
	if (fc_rdma_encode(&h1, h1.payload, h1.payload_len, enc2, size - 2) != -FC_WIRE_ENOSPC)
		abort();
	r2 = fc_rdma_decode(enc1, (size_t)n1, falcon_type, &h2);
	if (r2 != r1)
		abort();
	same_fields(&h1, &h2);
	n2 = fc_rdma_encode(&h2, h2.payload, h2.payload_len, enc2, size - 1);
	if (n2 != n1 || memcmp(enc1, enc2, (size_t)n1) != 0)
		abort();
	free(enc1);
	free(enc2);
	return 0;
}
