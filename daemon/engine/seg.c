/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg.c - RDMA op segmentation (RDMA spec 6.7). See seg.h.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "seg.h"

/* Opcodes of one op kind: FIRST, MIDDLE, LAST, ONLY (spec 8.1.3). */
struct op_codes {
	uint8_t first, middle, last, only;
};

static uint64_t sgl_total(const struct fc_seg_req *req)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < req->num_sge; i++)
		total += req->sgl[i].len;
	return total;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

static bool is_send(uint8_t op)
{
	return op == FC_SEG_SEND || op == FC_SEG_SEND_IMM || op == FC_SEG_SEND_INV;
}

static int check_req(const struct fc_seg_req *req, uint64_t total)
{
	if (req->op > FC_SEG_READ || !req->mtu_bytes || req->num_sge > FC_SEG_SGE_MAX ||
	    (!req->sgl && req->num_sge))
		return -EINVAL;
	if (req->cls == FC_RDMA_CLASS_UD) {
		if (req->op != FC_SEG_SEND && req->op != FC_SEG_SEND_IMM)
			return -EINVAL;
		if (total > req->mtu_bytes)
			return -EMSGSIZE; /* spec 6.4: UD ops <= 1 MTU */
	} else if (req->cls != FC_RDMA_CLASS_RC && req->cls != FC_RDMA_CLASS_XRC) {
		return -EINVAL;
	}
	if (!is_send(req->op) && total > UINT64_MAX - req->remote_va)
		return -EINVAL;
	if (total > FC_SEG_MSG_MAX)
		return -EMSGSIZE;
	return 0;
}

/* The number of transactions of req, which passed check_req with total. */
static uint64_t count_checked(const struct fc_seg_req *req, uint64_t total)
{
	uint64_t n = 0;
	uint32_t i;

	if (req->op != FC_SEG_READ)
		return total ? div_up(total, req->mtu_bytes) : 1;
	for (i = 0; i < req->num_sge; i++) /* bounded: num_sge <= FC_SEG_SGE_MAX */
		n += div_up(req->sgl[i].len, req->mtu_bytes);
	return n ? n : 1;
}

/* fc_seg_count of req whose list is sound and adds up to total. */
static int64_t count_of(const struct fc_seg_req *req, uint64_t total)
{
	int err = check_req(req, total);

	return err ? err : (int64_t)count_checked(req, total);
}

int64_t fc_seg_count(const struct fc_seg_req *req)
{
	if (req->num_sge > FC_SEG_SGE_MAX || (!req->sgl && req->num_sge))
		return -EINVAL;
	return count_of(req, sgl_total(req));
}

/* The header fields every transaction of req shares. */
static void base_hdr(const struct fc_seg_req *req, struct fc_rdma_hdrs *h)
{
	memset(h, 0, sizeof(*h));
	if (req->cls == FC_RDMA_CLASS_XRC)
		h->xrc_srq = req->xrc_srq;
}

static struct op_codes push_codes(uint8_t op)
{
	switch (op) {
	case FC_SEG_SEND:
		return (struct op_codes){ FC_RDMA_SEND_FIRST, FC_RDMA_SEND_MIDDLE,
					  FC_RDMA_SEND_LAST, FC_RDMA_SEND_ONLY };
	case FC_SEG_SEND_IMM:
		return (struct op_codes){ FC_RDMA_SEND_FIRST, FC_RDMA_SEND_MIDDLE,
					  FC_RDMA_SEND_LAST_IMM, FC_RDMA_SEND_ONLY_IMM };
	case FC_SEG_SEND_INV:
		return (struct op_codes){ FC_RDMA_SEND_FIRST, FC_RDMA_SEND_MIDDLE,
					  FC_RDMA_SEND_LAST_INV, FC_RDMA_SEND_ONLY_INV };
	case FC_SEG_WRITE:
		return (struct op_codes){ FC_RDMA_WRITE_FIRST, FC_RDMA_WRITE_MIDDLE,
					  FC_RDMA_WRITE_LAST, FC_RDMA_WRITE_ONLY };
	default: /* FC_SEG_WRITE_IMM */
		return (struct op_codes){ FC_RDMA_WRITE_FIRST, FC_RDMA_WRITE_MIDDLE,
					  FC_RDMA_WRITE_LAST_IMM, FC_RDMA_WRITE_ONLY_IMM };
	}
}

/* Position of message byte off in the gather list, from a cursor at or before it. */
static void sgl_seek(const struct fc_seg_req *req, uint64_t off, uint32_t *sge,
		     uint64_t *sge_start)
{
	while (*sge < req->num_sge && off - *sge_start >= req->sgl[*sge].len) {
		*sge_start += req->sgl[*sge].len;
		(*sge)++;
	}
}

/* The ETH fields of the push at message offset off (SEND or WRITE) of a message of
 * total bytes, spec 8.3; last: it is the LAST or ONLY push. UD sends carry neither SETH
 * nor OETH. */
static void push_fields(const struct fc_seg_req *req, bool last, uint32_t off,
			uint64_t total, struct fc_rdma_hdrs *h)
{
	bool send = is_send(req->op), ud = req->cls == FC_RDMA_CLASS_UD;

	if (!send) { /* RETH from this push to the message's end: see seg.h */
		h->reth.va = req->remote_va + off;
		h->reth.rkey = req->rkey;
		h->reth.len = (uint32_t)(total - off);
	}
	if ((send && !ud) || (last && req->op == FC_SEG_WRITE_IMM))
		h->rmsn = req->rmsn; /* SETH 8.3.2 */
	if (send && !ud)
		h->offset = off; /* OETH 8.3.3 */
	if (!last)
		return;
	if (req->op == FC_SEG_SEND_IMM || req->op == FC_SEG_WRITE_IMM)
		h->imm = req->imm;
	if (req->op == FC_SEG_SEND_INV)
		h->inv_rkey = req->inv_rkey;
	if (send || req->op == FC_SEG_WRITE_IMM)
		h->se = req->se;
}

static uint8_t push_opcode(const struct fc_seg_req *req, uint64_t k, uint64_t n)
{
	struct op_codes c = push_codes(req->op);
	uint8_t op;

	if (n == 1)
		op = c.only;
	else if (k == 0)
		op = c.first;
	else if (k == n - 1)
		op = c.last;
	else
		op = c.middle;
	return FC_RDMA_OPCODE(req->cls, op);
}

/* SEND / WRITE: push k of n MTU-sized pushes (spec 6.7) of a message of total bytes. */
static void push_at(const struct fc_seg_req *req, uint64_t total, uint64_t n, uint64_t k,
		    struct fc_seg *s)
{
	uint64_t off = k * req->mtu_bytes, sge_start = 0;
	uint32_t sge = 0;

	base_hdr(req, &s->hdr);
	s->msg_offset = (uint32_t)off;
	s->len = (uint32_t)(total - off < req->mtu_bytes ? total - off : req->mtu_bytes);
	s->hdr.opcode = push_opcode(req, k, n);
	push_fields(req, k == n - 1, s->msg_offset, total, &s->hdr);
	sgl_seek(req, off, &sge, &sge_start); /* bounded: num_sge <= FC_SEG_SGE_MAX */
	s->sge = sge < req->num_sge ? sge : 0;
	s->sge_offset = sge < req->num_sge ? (uint32_t)(off - sge_start) : 0;
}

/* One READ Request (spec 6.7, 8.1.3: RETH, SETH, STETH). */
static void read_pull(const struct fc_seg_req *req, uint32_t pull, uint32_t msg_off,
		      uint32_t sge, uint32_t sge_off, uint32_t len, struct fc_seg *s)
{
	base_hdr(req, &s->hdr);
	s->hdr.opcode = FC_RDMA_OPCODE(req->cls, FC_RDMA_READ_REQ);
	s->hdr.reth.va = req->remote_va + msg_off;
	s->hdr.reth.rkey = req->rkey;
	s->hdr.reth.len = len;
	s->hdr.rmsn = req->rmsn + pull;
	if (sge < req->num_sge) {
		s->hdr.steth.va = req->sgl[sge].addr + sge_off;
		s->hdr.steth.lkey = req->sgl[sge].lkey;
	}
	s->msg_offset = msg_off;
	s->len = len;
	s->sge = sge < req->num_sge ? sge : 0;
	s->sge_offset = sge_off;
}

/* READ: pull k, each fragment cut into MTU-sized pulls from its first byte. Returns 0,
 * or -ERANGE when the op has no pull k. */
static int pull_at(const struct fc_seg_req *req, uint64_t k, struct fc_seg *s)
{
	uint64_t before = 0, msg_off = 0, pulls;
	uint32_t i, off;

	for (i = 0; i < req->num_sge; i++) { /* bounded: num_sge <= FC_SEG_SGE_MAX */
		pulls = div_up(req->sgl[i].len, req->mtu_bytes);
		if (k < before + pulls) {
			off = (uint32_t)((k - before) * req->mtu_bytes);
			read_pull(req, (uint32_t)k, (uint32_t)(msg_off + off), i, off,
				  req->sgl[i].len - off < req->mtu_bytes ?
					  req->sgl[i].len - off : req->mtu_bytes, s);
			return 0;
		}
		before += pulls;
		msg_off += req->sgl[i].len;
	}
	if (k || before) /* zero-length READ: one pull, STETH of the first fragment if any */
		return -ERANGE;
	read_pull(req, 0, 0, 0, 0, 0, s);
	return 0;
}

/* The RMSN counter after req (8.3.2), which has n transactions. */
static uint32_t rmsn_after(const struct fc_seg_req *req, uint64_t n)
{
	if (req->op == FC_SEG_READ)
		return req->rmsn + (uint32_t)n;
	if (req->cls != FC_RDMA_CLASS_UD && (is_send(req->op) || req->op == FC_SEG_WRITE_IMM))
		return req->rmsn + 1;
	return req->rmsn;
}

/* Transaction k of req (checked, total bytes, n transactions). */
static int seg_at(const struct fc_seg_req *req, uint64_t total, uint64_t n, uint64_t k,
		  struct fc_seg *out)
{
	if (k >= n)
		return -ERANGE;
	if (req->op == FC_SEG_READ)
		return pull_at(req, k, out);
	push_at(req, total, n, k, out);
	return 0;
}

int fc_seg_plan(const struct fc_seg_req *req, struct fc_seg *out, size_t cap,
		uint32_t *rmsn_next)
{
	uint64_t total;
	int64_t n;

	if (req->num_sge > FC_SEG_SGE_MAX || (!req->sgl && req->num_sge))
		return -EINVAL;
	total = sgl_total(req); /* once: the count and the pushes both need it */
	n = count_of(req, total);
	if (n < 0)
		return (int)n;
	if ((uint64_t)n > cap || n > INT_MAX)
		return -E2BIG;
	for (int64_t k = 0; k < n; k++) /* bounded: cap */
		seg_at(req, total, (uint64_t)n, (uint64_t)k, &out[k]);
	if (rmsn_next)
		*rmsn_next = rmsn_after(req, (uint64_t)n);
	return (int)n;
}

uint32_t fc_seg_count_checked(const struct fc_seg_req *req, uint32_t *rmsn_next)
{
	uint64_t n = count_checked(req, sgl_total(req));

	if (rmsn_next)
		*rmsn_next = rmsn_after(req, n);
	return (uint32_t)n;
}

int fc_seg_at(const struct fc_seg_req *req, uint32_t n, uint32_t k, struct fc_seg *out)
{
	return seg_at(req, sgl_total(req), n, k, out);
}
