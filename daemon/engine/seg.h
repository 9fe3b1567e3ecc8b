/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg.h - op segmentation of the RDMA ULP (RDMA spec 6.7): a SEND, WRITE or READ work
 * request becomes a list of at most MTU-sized Falcon transactions, each with the RDMA
 * headers it carries (struct fc_rdma_hdrs of wire_rdma.h, ready for fc_rdma_encode once
 * the caller has set dqp and sn).
 *
 * Rules (all transactions of one op, in order):
 *   SEND  MTU-sized pushes, the last one <= MTU (6.7). Opcodes FIRST, MIDDLE..., LAST, or
 *         ONLY for one push; the variant with Immediate / Invalidate on the LAST / ONLY.
 *         Every push: SETH RMSN = the message's RMSN (8.3.2: one RMSN per message, the
 *         send/write counter, advanced by 1 after the message) and OETH = the byte offset
 *         of its first byte in the message (8.3.3).
 *   WRITE MTU-sized pushes as SEND, WRITE opcodes. Every push carries a RETH (6.7: for
 *         out-of-order placement) that describes the rest of the message from that push
 *         on: VA = the op's remote VA + the push's offset, R_Key, length = the bytes from
 *         the push's first byte to the message's end (8.3.1: "the length of the RDMA
 *         Write operation"). The FIRST push's RETH is thus InfiniBand's, VA and whole DMA
 *         length, so the target checks the whole range before it places a byte, as an
 *         InfiniBand responder does; every later push's RETH covers its own bytes and
 *         everything after, so a range that runs past the region's end is refused on
 *         every packet, whatever the arrival order. The push's own length is its
 *         payload's; on the LAST and ONLY push the two agree (wire_rdma's rule for
 *         ONLY). WRITE with Immediate: ImmDt and SETH (the message's RMSN, which then
 *         advances by 1) on the LAST / ONLY push.
 *   READ  Pulls cut on the MTU and on the boundaries of the local scatter list (6.7: a
 *         pull never crosses a fragment): each fragment, from its first byte, is cut into
 *         MTU-sized pulls and a shorter rest; zero-length fragments give no pull. Every
 *         pull is a READ Request with RETH (VA = remote VA + the pull's offset in the
 *         message, R_Key, length = the pull's length), SETH (RMSN: the read/atomic
 *         counter, +1 per pull, 8.3.2) and STETH (the sink: fragment address + offset in
 *         the fragment, the fragment's L_Key; 8.3.4).
 *   A zero-length op is one transaction with no payload (SEND ONLY, WRITE ONLY with RETH
 *   length 0, one READ Request of length 0 whose STETH names the first fragment, or
 *   0/0 without one).
 * RC and XRC segment as above (XRC requests also carry the XRCETH SRQ). UD only sends,
 * at most one MTU (6.4, 6.7): UD SEND ONLY (with Immediate), no SETH/OETH.
 * Left to the caller: dqp, sn, ackreq, ce, DETH of UD.
 */
#ifndef FC_SEG_H
#define FC_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire_rdma.h"

#define FC_SEG_SGE_MAX 32         /* scatter/gather entries per work request */
#define FC_SEG_MSG_MAX (1u << 31) /* bytes per message, as InfiniBand's 2^31 */

/* One scatter/gather entry of the local side: addr is the VA the L_Key covers. */
struct fc_sge {
	uint64_t addr;
	uint32_t len;
	uint32_t lkey;
};

enum fc_seg_op {
	FC_SEG_SEND,
	FC_SEG_SEND_IMM,
	FC_SEG_SEND_INV,
	FC_SEG_WRITE,
	FC_SEG_WRITE_IMM,
	FC_SEG_READ,
};

struct fc_seg_req {
	uint8_t op;  /* enum fc_seg_op */
	uint8_t cls; /* FC_RDMA_CLASS_RC, _XRC or _UD */
	bool se;     /* solicited event: set on the LAST/ONLY of SEND and WRITE with Imm */
	const struct fc_sge *sgl; /* gather list (SEND, WRITE) or scatter list (READ) */
	uint32_t num_sge;         /* <= FC_SEG_SGE_MAX; total bytes <= FC_SEG_MSG_MAX */
	uint32_t mtu_bytes;       /* payload bytes per transaction, > 0 */
	uint64_t remote_va;       /* WRITE, READ */
	uint32_t rkey;            /* WRITE, READ */
	uint32_t imm;             /* SEND_IMM, WRITE_IMM */
	uint32_t inv_rkey;        /* SEND_INV */
	uint32_t rmsn;            /* SEND*, WRITE_IMM: the message's; READ: the first pull's */
	uint32_t xrc_srq;         /* XRC */
};

/* One transaction of the plan. */
struct fc_seg {
	struct fc_rdma_hdrs hdr; /* opcode (class included), se, and the ETH fields */
	uint32_t msg_offset;     /* its first byte's offset in the message */
	uint32_t len;            /* payload bytes (push) or bytes pulled (READ) */
	uint32_t sge;            /* index in sgl of the entry holding its first byte */
	uint32_t sge_offset;     /* offset of that byte in the entry */
};

/*
 * Number of transactions req needs, or
 *   -EINVAL    unknown op or class; UD op other than SEND/SEND_IMM; mtu_bytes 0;
 *              num_sge > FC_SEG_SGE_MAX; sgl NULL with num_sge > 0; WRITE/READ with
 *              remote_va + length > 2^64 - 1;
 *   -EMSGSIZE  total length > FC_SEG_MSG_MAX, or a UD message longer than one MTU.
 * A SEND/WRITE push may take its payload from several entries (gather); a READ pull
 * never spans two.
 */
int64_t fc_seg_count(const struct fc_seg_req *req);

/*
 * Write the transactions of req into out[0..cap) in order and return their number.
 * *rmsn_next (may be NULL) gets the RMSN counter after the op: rmsn + 1 for SEND and
 * WRITE with Immediate on RC/XRC, rmsn + number of pulls for READ, rmsn otherwise.
 * Errors: those of fc_seg_count, or -E2BIG when the plan has more than cap transactions
 * (or more than INT_MAX); nothing is written on error.
 */
int fc_seg_plan(const struct fc_seg_req *req, struct fc_seg *out, size_t cap,
		uint32_t *rmsn_next);

/*
 * For a caller that builds an op's transactions one at a time, as they go (the RDMA
 * requester: nothing it keeps of a work request grows with the message, up to
 * FC_SEG_MSG_MAX bytes). Both take a request that fc_seg_count accepted as it is (the
 * same op, class, list and MTU; the RMSN may differ) and make none of its checks again.
 *
 * fc_seg_count_checked: its number of transactions n (<= 2^31), and in *rmsn_next (may
 * be NULL) the RMSN counter after it, as fc_seg_plan.
 * fc_seg_at: transaction k of those n into *out, exactly fc_seg_plan's out[k]. O(num_sge)
 * (<= FC_SEG_SGE_MAX), no state between calls. Returns 0, or -ERANGE when k >= n.
 */
uint32_t fc_seg_count_checked(const struct fc_seg_req *req, uint32_t *rmsn_next);
int fc_seg_at(const struct fc_seg_req *req, uint32_t n, uint32_t k, struct fc_seg *out);

#endif
