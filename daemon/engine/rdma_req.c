/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma_req.c - the requester: segments out, completions in (RDMA spec sections 6 and 8).
 * See rdma.h for the API and rdma_priv.h for the objects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma_priv.h"

/* ------------------------------------------------------------------------ */
/* requester: segments out                                                   */

enum { ISSUED = 0, BLOCKED = 1 };

/* Assign w its RMSN (8.3.2: two counters, send/write-imm and read/atomic) and count its
 * transactions. Nothing is planned ahead: build_seg makes each transaction as it goes
 * (seg.h fc_seg_at), so a WR costs the same whatever its length (up to FC_SEG_MSG_MAX). */
static void wr_start(struct fc_rdma *d, struct qp *q, struct swqe *w)
{
	struct fc_seg_req r;
	uint32_t next = 0;

	w->state = SW_ACTIVE;
	if (rdma_is_atomic_op(w->wr.opcode)) {
		w->rmsn = q->rmsn_rd++;
		w->nseg = 1;
		return;
	}
	w->rmsn = w->wr.opcode == FC_RDMA_WR_READ ? q->rmsn_rd : q->rmsn_msg;
	/* rdma_check_wr ran fc_seg_count on the WR when it was posted, and the SQ holds our
	 * own copy of it */
	rdma_seg_req_of(d, q, &w->wr, w->rmsn, &r);
	w->nseg = fc_seg_count_checked(&r, &next);
	if (w->wr.opcode == FC_RDMA_WR_READ)
		q->rmsn_rd = next;
	else
		q->rmsn_msg = next;
}

/* RBTH + AtomicETH / MaskedAtomicETH + SETH + STETH of an atomic WR (8.1.3). */
static void atomic_hdrs(const struct qp *q, const struct swqe *w, struct fc_rdma_hdrs *h)
{
	static const uint8_t op[] = {
		[FC_RDMA_WR_CMP_SWAP] = FC_RDMA_CMP_SWAP,
		[FC_RDMA_WR_FETCH_ADD] = FC_RDMA_FETCH_ADD,
		[FC_RDMA_WR_MASKED_CMP_SWAP] = FC_RDMA_MASKED_CMP_SWAP,
		[FC_RDMA_WR_MASKED_FETCH_ADD] = FC_RDMA_MASKED_FETCH_ADD,
	};
	const struct fc_rdma_send_wr *wr = &w->wr;
	int cmp = wr->opcode == FC_RDMA_WR_CMP_SWAP || wr->opcode == FC_RDMA_WR_MASKED_CMP_SWAP;

	memset(h, 0, sizeof(*h));
	h->opcode = FC_RDMA_OPCODE(rdma_qp_class(q), op[wr->opcode]);
	if (q->type == FC_RDMA_QPT_XRC_INI)
		h->xrc_srq = wr->xrc_remote_srq;
	h->atomic.va = wr->remote_addr;
	h->atomic.rkey = wr->rkey;
	h->atomic.swap_add = cmp ? wr->swap : wr->compare_add;
	h->atomic.compare = cmp ? wr->compare_add : 0;
	if (wr->opcode == FC_RDMA_WR_MASKED_CMP_SWAP) {
		h->atomic.swap_add_mask = wr->swap_mask;
		h->atomic.compare_mask = wr->compare_add_mask;
	} else if (wr->opcode == FC_RDMA_WR_MASKED_FETCH_ADD) {
		h->atomic.swap_add_mask = wr->compare_add_mask;
	}
	h->rmsn = w->rmsn;
	h->steth.va = wr->sgl[0].addr;
	h->steth.lkey = wr->sgl[0].lkey;
}

/* len bytes of w's rdma_gather list from entry sge, byte off, through the MR table: copied to
 * dst, or only checked when dst is NULL. Returns 0 or -FC_RDMA_E*. */
int rdma_gather(const struct fc_rdma *d, const struct qp *q, const struct swqe *w,
		uint32_t sge, uint32_t off, uint32_t len, uint8_t *dst)
{
	uint32_t i = sge, done = 0;

	while (off && i < w->wr.num_sge && off >= w->sge[i].len) { /* skip to the offset */
		off -= w->sge[i].len;
		i++;
	}
	while (done < len && i < w->wr.num_sge) {
		const struct fc_sge *g = &w->sge[i];
		uint32_t n = g->len - off < len - done ? g->len - off : len - done;
		struct fc_mr_loc loc;
		int err;

		if (n) {
			err = fc_mr_check_local_loc(d->mrs, q->pd, g->lkey, g->addr + off, n, 0,
						    &loc);
			if (!err && dst)
				err = fc_mr_read(&loc, 0, dst + done, n);
			if (err)
				return err;
		}
		done += n;
		i++;
		off = 0;
	}
	return 0;
}

static uint32_t rec_alloc(struct fc_rdma *d, struct qp *q)
{
	uint32_t i = q->rec_free;

	if (i == NONE)
		return NONE;
	q->rec_free = q->rec[i].next;
	q->rec[i].used = 1;
	q->rec[i].gen = ++d->rec_gen;
	return i;
}

static void rec_release(struct qp *q, uint32_t i)
{
	struct txrec *r = &q->rec[i];

	conn_unref(r->c);
	r->used = 0;
	r->next = q->rec_free;
	q->rec_free = i;
}

static uint64_t cookie_of(const struct fc_rdma *d, const struct qp *q, uint32_t i)
{
	return (uint64_t)(q - d->qp) << 48 | (uint64_t)q->rec[i].gen << 16 | i;
}

static int consumes_wqe(uint8_t op)
{
	return is_send_op(op) || op == FC_RDMA_WR_WRITE_IMM;
}

/* Build segment k of w in d->pkt, its transaction (seg.h) in *s; *len gets its payload
 * (push) or pull length. A push's data is not copied here: its local keys are checked
 * (unless no key has changed since the whole list passed the post check), only the
 * headers are built, and *glen gets the bytes txn will ask for through rdma_on_gather
 * when the packet is encoded (data + pad, one copy from the registered memory into the
 * frame). On a local key failure of the last packet of a consuming message the packet
 * goes out empty with RBTH CE (8.2) so the responder completes its WQE in error; any
 * other failed segment is not sent. Returns the length of what is in d->pkt, 0 (not
 * sent), or -errno. */
static int build_seg(struct fc_rdma *d, struct qp *q, struct swqe *w, uint32_t k,
		     struct fc_seg *s, uint32_t *len, uint32_t *glen)
{
	struct fc_rdma_hdrs *h = &s->hdr;
	struct fc_seg_req r;
	uint32_t hl;
	int err = 0, n;

	if (rdma_is_atomic_op(w->wr.opcode)) {
		s->msg_offset = s->len = s->sge = s->sge_offset = 0;
		atomic_hdrs(q, w, h);
		*len = 8;
	} else {
		rdma_seg_req_of(d, q, &w->wr, w->rmsn, &r);
		if (fc_seg_at(&r, w->nseg, k, s)) { /* cannot happen: k < nseg */
			memset(s, 0, sizeof(*s));
			return -EINVAL;
		}
		*len = s->len;
	}
	h->dqp = w->dqp;
	h->sn = w->c->tx_sn;
	if (q->type == FC_RDMA_QPT_UD) {
		h->deth.qkey = w->qkey;
		h->deth.src_qp = q->num;
	}
	if (fc_rdma_opcode_falcon_type(h->opcode) != FC_PKT_PUSH_DATA)
		return fc_rdma_encode(h, NULL, 0, d->pkt, d->pkt_cap);
	hl = (uint32_t)fc_rdma_hdr_len(h->opcode);
	if (*len && w->mr_gen != fc_mr_table_gen(d->mrs))
		err = rdma_gather(d, q, w, s->sge, s->sge_offset, *len, NULL);
	if (err) {
		struct fc_rdma_err_effect ef;

		fc_rdma_err_effect(err, FC_RDMA_SITE_LOCAL, &ef);
		rdma_wr_fail(q, w, k, ef.req_status, 0);
		if (k + 1 < w->nseg || !consumes_wqe(w->wr.opcode))
			return 0;
		h->ce = true;
		*len = 0;
		h->reth.len = 0;
	}
	/* the payload's place is left as it is: headers and pad only */
	n = fc_rdma_encode(h, d->pkt + hl, *len, d->pkt, d->pkt_cap);
	if (n < 0)
		return n;
	*glen = (uint32_t)n - hl;
	return (int)hl;
}

static void seg_done(struct fc_rdma *d, struct qp *q, uint32_t ri, uint8_t status,
		     uint32_t vendor);

/* Pull Data bytes a pull of w expects (ULP headers included, 8.1.3): READ Response Only
 * with the pull's bytes padded to 4, or an ATOMIC Response. */
static uint32_t resp_len_of(const struct swqe *w, uint32_t len)
{
	if (rdma_is_atomic_op(w->wr.opcode))
		return (uint32_t)fc_rdma_hdr_len(FC_RDMA_OPCODE(FC_RDMA_CLASS_RC,
								FC_RDMA_ATOMIC_RESP));
	return (uint32_t)fc_rdma_hdr_len(FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_READ_RESP_ONLY)) +
	       ((len + 3) & ~3u);
}

/* Hand segment k of w to txn. Returns ISSUED or BLOCKED (no record, -EAGAIN). */
static int issue_seg(struct fc_rdma *d, struct qp *q, struct swqe *w, uint32_t k)
{
	struct fc_seg s;
	const struct fc_rdma_hdrs *h = &s.hdr;
	struct conn *c = w->c;
	uint32_t ri, len = 0, glen = 0;
	struct txrec *r;
	int n, rc, pull;

	ri = rec_alloc(d, q);
	if (ri == NONE)
		return BLOCKED;
	n = build_seg(d, q, w, k, &s, &len, &glen);
	r = &q->rec[ri];
	r->c = c;
	conn_ref(c);
	r->wseq = w->seq;
	r->seg = k;
	r->sn = c->tx_sn;
	r->len = len;
	r->op = h->opcode & 0x1F;
	r->sink_va = h->steth.va;
	r->sink_lkey = h->steth.lkey;
	r->g_sge = s.sge;
	r->g_off = s.sge_offset;
	pull = r->pull = fc_rdma_opcode_falcon_type(h->opcode) == FC_PKT_PULL_REQ;
	w->issued++;
	w->outstanding++;
	q->outstanding++;
	if (n <= 0) { /* a local failure (already recorded) or an internal error */
		seg_done(d, q, ri, n ? FC_WC_GENERAL_ERR : FC_WC_SUCCESS, 0);
		return ISSUED;
	}
	if (pull)
		rc = fc_txn_pull(c->t, d->pkt, (uint32_t)n, resp_len_of(w, len), cookie_of(d, q, ri),
				 d->now, NULL);
	else
		rc = fc_txn_push_sg(c->t, d->pkt, (uint32_t)n, glen, cookie_of(d, q, ri), d->now,
				    NULL);
	if (rc == -EAGAIN) {
		w->issued--;
		w->outstanding--;
		q->outstanding--;
		rec_release(q, ri);
		d->cnt.eagain++;
		return BLOCKED;
	}
	if (rc == 0) {
		c->tx_sn++;
		if (pull)
			d->cnt.tx_pull++;
		else
			d->cnt.tx_push++;
	} else if (rc != FC_TXN_REJECTED) { /* -EPIPE: the connection is dead */
		seg_done(d, q, ri, rc == -EPIPE ? FC_WC_RETRY_EXC_ERR : FC_WC_GENERAL_ERR, 0);
	}
	return ISSUED;
}

/* Weakly ordered fences (rdma.h): may segment k of w go now? */
static int fenced(struct qp *q, const struct swqe *w, uint32_t k)
{
	if (q->order != FC_RDMA_ORDER_WEAK)
		return 0;
	if ((q->fence_next || w->wr.opcode == FC_RDMA_WR_WRITE_IMM) && q->outstanding)
		return 1;
	if (is_send_op(w->wr.opcode) && w->nseg > 1 && k + 1 == w->nseg && w->outstanding)
		return 1;
	q->fence_next = 0;
	return 0;
}

/* Issue what w may send now. Returns BLOCKED when the pump must stop here. */
static int issue_wr(struct fc_rdma *d, struct qp *q, struct swqe *w)
{
	uint64_t seq = w->seq;

	while (w->issued < w->nseg) {
		if (fenced(q, w, w->issued) || issue_seg(d, q, w, w->issued) == BLOCKED)
			return BLOCKED;
		if (q->state != FC_RDMA_QPS_RTS)
			return BLOCKED;
		if (w->seq != seq || w->state != SW_ACTIVE)
			return ISSUED;
	}
	if (q->order == FC_RDMA_ORDER_WEAK && w->wr.opcode == FC_RDMA_WR_WRITE_IMM)
		q->fence_next = 1;
	return ISSUED;
}

static void pump_once(struct fc_rdma *d, struct qp *q)
{
	while (q->state == FC_RDMA_QPS_RTS && q->sq_issue != q->sq_tail) {
		struct swqe *w = sq_at(q, q->sq_issue);
		uint64_t at = q->sq_issue;

		if (w->state != SW_POSTED && w->state != SW_ACTIVE) {
			q->sq_issue++;
			continue;
		}
		if (q->err_stop && w->seq > q->err_seq)
			return; /* 6.3 verbs: nothing after a failed WR starts */
		if (w->state == SW_POSTED)
			wr_start(d, q, w);
		if (issue_wr(d, q, w) == BLOCKED)
			return;
		/* unless w completed meanwhile and sq_drain moved the cursor past it */
		if (q->sq_issue == at && w->issued == w->nseg)
			q->sq_issue++;
	}
}

void rdma_qp_pump(struct fc_rdma *d, struct qp *q)
{
	if (q->pumping) {
		q->pump_again = 1;
		return;
	}
	q->pumping = 1;
	do {
		q->pump_again = 0;
		pump_once(d, q);
	} while (q->pump_again && q->used);
	q->pumping = 0;
}

/* ------------------------------------------------------------------------ */
/* requester: completions in                                                 */

/* The WR of sequence number seq if it is still waiting for its transactions. */
static struct swqe *wr_by_seq(const struct qp *q, uint64_t seq)
{
	struct swqe *w;

	if (seq < q->sq_head || seq >= q->sq_tail)
		return NULL;
	w = sq_at(q, seq);
	return w->seq == seq && w->state == SW_ACTIVE ? w : NULL;
}

/* Record a failed segment: the WR's status is that of its failed segment with the
 * highest index (the responder's final verdict rides on a message's last packet). */
void rdma_wr_fail(struct qp *q, struct swqe *w, uint32_t seg, uint8_t status, uint32_t vendor)
{
	if (w->err_seg < 0 || (int32_t)seg >= w->err_seg) {
		w->err_seg = (int32_t)seg;
		w->status = status;
		w->vendor = vendor;
	}
	if (q->mode == FC_RDMA_MODE_VERBS && (!q->err_stop || w->seq < q->err_seq)) {
		q->err_stop = 1;
		q->err_seq = w->seq;
	}
}

/* Emit what may be emitted: in SQ order (STRONG, WEAK: 6.4 in-order completions), or
 * at once (UNORDERED). A failed WR in verbs mode takes the QP to the error state. */
static void sq_drain(struct fc_rdma *d, struct qp *q)
{
	while (q->sq_head != q->sq_tail) {
		struct swqe *w = sq_at(q, q->sq_head);
		uint8_t err = q->state == FC_RDMA_QPS_ERR;

		if (w->state == SW_DONE && (q->order != FC_RDMA_ORDER_NONE || err)) {
			q->sq_head++;
			rdma_swqe_emit(d, q, w);
			if (!err && q->state == FC_RDMA_QPS_ERR)
				return; /* the CQ overflowed: everything was flushed */
			if (w->status != FC_WC_SUCCESS && q->mode == FC_RDMA_MODE_VERBS) {
				rdma_qp_to_err(q, d);
				/* a transaction outlived the QP's timers: the connection is
				 * as given up as if the PDL had said so (section 11), and the
				 * peer, which may only wait for receives, must hear it */
				if (w->status == FC_WC_RETRY_EXC_ERR && q->c && !q->c->dead &&
				    !q->c->mn)
					rdma_conn_gave_up(d, q->c);
				return;
			}
			continue;
		}
		if (w->state != SW_EMITTED)
			break;
		q->sq_head++;
	}
	if (q->sq_issue < q->sq_head)
		q->sq_issue = q->sq_head;
}

void rdma_wr_finish(struct fc_rdma *d, struct qp *q, struct swqe *w)
{
	rdma_swqe_settle(w);
	if (q->order == FC_RDMA_ORDER_NONE && q->state != FC_RDMA_QPS_ERR)
		rdma_swqe_emit(d, q, w);
	sq_drain(d, q);
}

/* Transaction ri is over with status. */
static void seg_done(struct fc_rdma *d, struct qp *q, uint32_t ri, uint8_t status,
		     uint32_t vendor)
{
	struct txrec *r = &q->rec[ri];
	uint64_t wseq = r->wseq;
	uint32_t seg = r->seg;
	struct swqe *w;

	rec_release(q, ri);
	q->outstanding--;
	w = wr_by_seq(q, wseq);
	if (w) {
		w->outstanding--;
		if (status != FC_WC_SUCCESS)
			rdma_wr_fail(q, w, seg, status, vendor);
		/* a failed WRITE or READ sends nothing more (an IB requester stops at a NAK):
		 * its completion is an error whatever the rest does, and a 2 GiB one would
		 * otherwise send all its packets to be refused. A message that consumes a
		 * receive WQE still sends its last packet: the responder completes the WQE
		 * on it. */
		if (w->err_seg >= 0 && !consumes_wqe(w->wr.opcode) && w->nseg > w->issued)
			w->nseg = w->issued;
		/* verbs: a segment past the QP's timers fails the WR now; its other segments,
		 * paced behind a small window, would each take a budget more to time out,
		 * and their answers, should any come, find no WR (wr_by_seq) */
		if ((w->issued == w->nseg && !w->outstanding) ||
		    (status == FC_WC_RETRY_EXC_ERR && q->mode == FC_RDMA_MODE_VERBS))
			rdma_wr_finish(d, q, w);
	}
	rdma_qp_pump(d, q);
}

/* IB NAK code (ULP NACK code, mr.h) -> requester status. */
static uint8_t status_of_nak(uint8_t nak)
{
	switch (nak) {
	case FC_RDMA_NAK_INV_REQ: return FC_WC_REM_INV_REQ_ERR;
	case FC_RDMA_NAK_REM_ACCESS: return FC_WC_REM_ACCESS_ERR;
	case FC_RDMA_NAK_RNR: return FC_WC_RNR_RETRY_EXC_ERR;
	default: return FC_WC_REM_OP_ERR;
	}
}

/* Falcon completion code (section 11) of a failed transaction -> requester status. */
static uint8_t status_of_cmpl(const struct fc_txn_cmpl *c, uint32_t *vendor)
{
	*vendor = c->code | (uint32_t)c->ulp_code << 8;
	switch (c->code) {
	case FC_CMPL_TARGET_NACK_CIE:
	case FC_CMPL_TARGET_NACK_NRE:
		if (c->kind == FC_TXN_PULL && !c->ulp_code)
			return FC_WC_REM_OP_ERR; /* zero-length Pull Data (8.5.3.5) */
		return status_of_nak(c->ulp_code);
	case FC_CMPL_TARGET_NACK_CID:
		return FC_WC_REM_INV_REQ_ERR;
	case FC_CMPL_LOCAL_TO:
	case FC_CMPL_DEAD_CONN:
		return FC_WC_RETRY_EXC_ERR;
	case FC_CMPL_OP_ERR:
	case FC_CMPL_REMOTE_ERR:
		return FC_WC_REM_OP_ERR;
	default:
		return FC_WC_GENERAL_ERR;
	}
}

static uint32_t be32_of(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Is the Pull Data h the answer to record r of QP q, arrived on connection cn? 0 yes,
 * 1 not ours (malformed or mismatched), 2 the 6.9 CID check failed. */
static int resp_matches(const struct fc_rdma *d, const struct qp *q, const struct txrec *r,
			const struct conn *cn, const struct fc_rdma_hdrs *h)
{
	uint8_t want = r->op == FC_RDMA_READ_REQ ? FC_RDMA_READ_RESP_ONLY : FC_RDMA_ATOMIC_RESP;
	uint8_t op = h->opcode & 0x1F;
	const struct qp *named;

	if (h->dqp != q->num) {
		named = qp_get(d, h->dqp);
		return named && named->c && named->c != cn ? 2 : 1;
	}
	if (q->c && q->c != cn)
		return 2;
	if (want == FC_RDMA_READ_RESP_ONLY ? op < FC_RDMA_READ_RESP_FIRST ||
	    op > FC_RDMA_READ_RESP_ONLY : op != want)
		return 1;
	if ((h->opcode >> FC_RDMA_OPC_CLASS_SHIFT) != rdma_qp_class(q) || h->sn != r->sn ||
	    h->steth.va != r->sink_va || h->steth.lkey != r->sink_lkey)
		return 1;
	return 0;
}

/* Pull Data of record r (8.4.3.2): check it, place it. Returns the segment status. */
static uint8_t take_response(struct fc_rdma *d, struct qp *q, const struct txrec *r,
			     const struct conn *cn, const struct fc_txn_cmpl *c, uint32_t *vendor)
{
	struct fc_rdma_hdrs h;
	struct fc_rdma_err_effect ef;
	uint64_t orig;
	struct fc_mr_loc sink;
	int m, err;

	if (fc_rdma_decode(c->data, c->len, FC_PKT_PULL_DATA, &h) < 0 ||
	    (m = resp_matches(d, q, r, cn, &h)) == 1) {
		d->cnt.drop_resp_bad++;
		return FC_WC_RETRY_EXC_ERR; /* ignored: as if it never came */
	}
	if (m == 2) {
		d->cnt.drop_resp_cid++; /* 6.9: dropped, no NACK */
		return FC_WC_RETRY_EXC_ERR;
	}
	if (h.ce) { /* completed in error by the responder (rdma.h) */
		uint8_t nak = r->op == FC_RDMA_READ_REQ ?
			(h.payload_len >= ERR_RESP_LEN ? (uint8_t)be32_of(h.payload) : 0) :
			(uint8_t)h.atomic_orig;

		*vendor = FC_CMPL_ACK | (uint32_t)nak << 8;
		return status_of_nak(nak);
	}
	if (r->op == FC_RDMA_READ_REQ && h.payload_len != r->len) {
		d->cnt.drop_resp_bad++;
		return FC_WC_RETRY_EXC_ERR;
	}
	if (r->op != FC_RDMA_READ_REQ || r->len) {
		err = fc_mr_check_local_loc(d->mrs, q->pd, r->sink_lkey, r->sink_va, r->len,
					    FC_MR_LOCAL_WRITE, &sink);
		if (!err && r->op == FC_RDMA_READ_REQ) {
			err = fc_mr_write(&sink, 0, h.payload, r->len);
		} else if (!err) {
			orig = h.atomic_orig; /* host order, as atomic.h keeps the word */
			err = fc_mr_write(&sink, 0, &orig, sizeof(orig));
		}
		if (err) {
			fc_rdma_err_effect(err, FC_RDMA_SITE_LOCAL, &ef);
			return ef.req_status;
		}
	}
	return FC_WC_SUCCESS;
}

/* The record a txn cookie names (cookie_of), if it is still the one that cookie was
 * made for: otherwise NULL and *qp untouched. */
static struct txrec *rec_of_cookie(struct fc_rdma *d, const struct conn *cn, uint64_t cookie,
				   struct qp **qp)
{
	uint32_t slot = (uint32_t)(cookie >> 48), ri = (uint32_t)(cookie & 0xFFFF);
	uint32_t gen = (uint32_t)(cookie >> 16);
	struct txrec *r;

	if (slot >= d->cfg.max_qps || !d->qp[slot].used || ri >= d->qp[slot].nrec)
		return NULL;
	r = &d->qp[slot].rec[ri];
	if (!r->used || r->gen != gen || r->c != cn)
		return NULL;
	*qp = &d->qp[slot];
	return r;
}

/* txn encodes a packet of one of our pushes: its data goes from the registered memory
 * straight into the frame (one copy per byte), then the pad. Memory that went away since
 * the WR was posted (verbs: a user error) or a WR flushed meanwhile gives zeros. */
void rdma_on_gather(void *ctx, struct fc_txn *t, uint64_t cookie, uint32_t off, void *dst,
		    uint32_t len)
{
	struct conn *cn = ctx;
	struct fc_rdma *d = cn->d;
	struct qp *q = NULL;
	struct txrec *r = rec_of_cookie(d, cn, cookie, &q);
	const struct swqe *w = r ? wr_by_seq(q, r->wseq) : NULL;
	uint32_t data = r && off < r->len ? r->len - off : 0;

	(void)t;
	if (data > len)
		data = len;
	if (data && (!w || rdma_gather(d, q, w, r->g_sge, r->g_off + off, data, dst))) {
		memset(dst, 0, data);
		d->cnt.gather_lost++;
	}
	if (len > data)
		memset((uint8_t *)dst + data, 0, len - data); /* the pad */
}

void rdma_on_complete(void *ctx, struct fc_txn *t, const struct fc_txn_cmpl *c)
{
	struct conn *cn = ctx;
	struct fc_rdma *d = cn->d;
	uint32_t slot = (uint32_t)(c->cookie >> 48), ri = (uint32_t)(c->cookie & 0xFFFF);
	uint32_t gen = (uint32_t)(c->cookie >> 16), vendor = 0;
	struct qp *q;
	struct txrec *r;
	uint8_t st;

	(void)t;
	if (slot >= d->cfg.max_qps || !d->qp[slot].used || ri >= d->qp[slot].nrec) {
		d->cnt.stale_cmpl++;
		return;
	}
	q = &d->qp[slot];
	r = &q->rec[ri];
	if (!r->used || r->gen != gen || r->c != cn) {
		d->cnt.stale_cmpl++;
		return;
	}
	if (c->code == FC_CMPL_ACK && r->pull && !wr_by_seq(q, r->wseq))
		st = FC_WC_SUCCESS; /* its WR was flushed: the data goes nowhere */
	else if (c->code == FC_CMPL_ACK)
		st = r->pull ? take_response(d, q, r, cn, c, &vendor) : FC_WC_SUCCESS;
	else
		st = status_of_cmpl(c, &vendor);
	seg_done(d, q, ri, st, vendor);
}
