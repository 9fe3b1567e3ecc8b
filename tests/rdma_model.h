/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma_model.h - a sequential reference model of RDMA semantics (RC, as RDMA over Falcon
 * carries them) for property tests: two or more nodes with plain byte arrays as memory,
 * memory regions with keys and permissions, receive queues, and the operations WRITE
 * (with Immediate), READ, SEND (with Immediate / Invalidate) and the atomics, each
 * applied at once, with the completion status each side must see.
 *
 * It shares only constants with the engine (FC_RDMA_E*, FC_WC_*, FC_MR_* of mr.h); the
 * checks, the status table and the atomics (RFC 7306 pseudocode, literally) are written
 * here again on purpose, so that a test comparing the engine with the model compares
 * two independent versions.
 *
 * Semantics (the contract the ULP implements; docs should state it too):
 *  - Key check order, at each site: key names a valid region (EKEY), its PD (EPD), its
 *    permissions (EACCESS), the range inside it (EBOUNDS, overflow included).
 *  - The requester checks its own list at post time (gather: no permission needed;
 *    READ/atomic sink: LOCAL_WRITE; atomic sink exactly 8 bytes): a failure completes
 *    with LOC_PROT_ERR / LOC_LEN_ERR and nothing reaches the target.
 *  - Zero-length WRITE/READ: the responder checks neither R_Key nor VA (IB C9-88).
 *  - WRITE with Immediate: R_Key check first, then a receive WQE must be posted (ERNR).
 *  - SEND: a receive WQE must be posted (ERNR: RNR NACK, nothing consumed, the requester
 *    retries and completes RNR_RETRY_EXC_ERR only if none is ever posted); the message
 *    must fit its list (ELEN); the L_Keys of the part of the list the message touches
 *    must allow LOCAL_WRITE (entries it does not reach are not checked); then IETH.
 *    Errors at the receive WQE consume it (completed in error).
 *  - Atomic: R_Key (REMOTE_ATOMIC, 8 bytes), then 8-byte alignment of the VA (EALIGN).
 *  - Status table: as mr.h's (LOCAL: LOC_PROT/LOC_LEN; RKEY: REM_ACCESS, EALIGN
 *    REM_INV_REQ; RECV: REM_OP/LOC_PROT, ELEN REM_INV_REQ/LOC_LEN, ERNR RNR_RETRY_EXC;
 *    INVALIDATE: REM_INV_REQ on both sides).
 *  - Memory on error: an op that fits in one transaction (length <= the target node's
 *    mtu) leaves all memory untouched. A longer op is several transactions checked one
 *    by one, so some may have placed their bytes before another failed: the bytes it
 *    would have written where a check could pass (inside the region for EBOUNDS; the
 *    valid entries of a receive list) become "undefined": each may hold its old value
 *    or the op's value. rm_mem_check() accepts either; rm_mem_sync() then adopts what
 *    the implementation holds. Atomics are one transaction: never undefined. A WRITE's
 *    range is checked whole (each packet's RETH runs to the message's end, as the
 *    FIRST's does in InfiniBand): one that runs past its region's end places nothing;
 *    only one that starts before its region and ends inside may have placed bytes
 *    there (packets that overtook their FIRST on an unordered connection).
 * The model's memory holds what the model knows; it never reads an implementation.
 */
#ifndef FC_RDMA_MODEL_H
#define FC_RDMA_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mr.h"

#ifndef RM_MEM_BYTES
#define RM_MEM_BYTES 4096 /* memory of one node */
#endif
#define RM_MR_MAX 16
#define RM_RQ_MAX 16
#define RM_SGE_MAX 4

struct rm_sge {
	uint64_t addr; /* VA the L_Key covers */
	uint32_t len;
	uint32_t lkey;
};

struct rm_mr {
	bool used;
	bool valid; /* false after an invalidation */
	uint32_t pd, lkey, rkey, access;
	uint64_t iova;
	uint32_t len;
	uint32_t mem_off; /* where iova lives in the node's mem[] */
};

struct rm_recv {
	struct rm_sge sge[RM_SGE_MAX];
	uint32_t nsge;
	uint64_t wr_id;
};

struct rm_node {
	uint32_t mtu; /* payload bytes per transaction of ops INTO this node */
	uint8_t mem[RM_MEM_BYTES];
	uint8_t undef[RM_MEM_BYTES]; /* 1: mem[i] or alt[i] are both right */
	uint8_t alt[RM_MEM_BYTES];
	struct rm_mr mr[RM_MR_MAX];
	struct rm_recv rq[RM_RQ_MAX];
	uint32_t rq_head, rq_count;
};

/* What an op must end with. */
struct rm_result {
	int err;             /* 0, or -FC_RDMA_E* of the first failed check */
	uint8_t site;        /* enum fc_rdma_site of err */
	uint8_t req_status;  /* enum fc_wc_status of the requester */
	uint8_t resp_status; /* of the responder's receive WQE; FC_WC_NONE: none consumed */
	uint64_t recv_wr_id; /* the consumed receive WQE */
	uint32_t byte_len;   /* responder's completion: bytes received */
	bool has_imm;
	uint32_t imm;
	bool invalidated; /* SEND with Invalidate: inv_rkey's region invalidated */
	uint32_t inv_rkey;
	uint64_t orig; /* atomics, on success: the value returned */
};

enum rm_send_kind { RM_SEND, RM_SEND_IMM, RM_SEND_INV };

struct rm_atomic_args {
	bool cmp_swap; /* else FetchAdd */
	uint64_t swap_add, swap_add_mask, compare, compare_mask;
};

/* ------------------------------------------------------------------------ */
/* RFC 7306 5.1 pseudocode, transcribed literally                            */
/* ------------------------------------------------------------------------ */

/* RFC 7306 5.1.1: masked FetchAdd; returns the new Remote Data Value. */
static inline uint64_t rm_rfc_masked_fetch_add(uint64_t original_remote_data_value,
					       uint64_t add_data, uint64_t add_mask)
{
	uint64_t bit_location = 1, carry = 0, remote_data_value = 0, val1, val2, sum;
	int bit;

	for (bit = 0; bit <= 63; bit++) {
		if (bit != 0)
			bit_location = bit_location << 1;
		val1 = (original_remote_data_value & bit_location) >> bit;
		val2 = (add_data & bit_location) >> bit;
		sum = carry + val1 + val2;
		carry = (sum & 2) >> 1;
		sum = sum & 1;
		if (sum)
			remote_data_value |= bit_location;
		carry = ((carry) && (!(add_mask & bit_location)));
	}
	return remote_data_value;
}

/* RFC 7306 5.1.2: masked CmpSwap; returns the new Remote Data Value. */
static inline uint64_t rm_rfc_masked_cmp_swap(uint64_t original_remote_data_value,
					      uint64_t compare_data, uint64_t compare_mask,
					      uint64_t swap_data, uint64_t swap_mask)
{
	uint64_t remote_data_value;

	if (!((compare_data ^ original_remote_data_value) & compare_mask))
		remote_data_value = (original_remote_data_value & ~(swap_mask)) |
				    (swap_data & swap_mask);
	else
		remote_data_value = original_remote_data_value;
	return remote_data_value;
}

/* ------------------------------------------------------------------------ */
/* Nodes, regions, receive queues                                            */
/* ------------------------------------------------------------------------ */

static inline void rm_init(struct rm_node *n, uint32_t mtu)
{
	memset(n, 0, sizeof(*n));
	n->mtu = mtu;
}

/* Add a region of len bytes at mem[mem_off], seen at iova, with the keys the
 * implementation handed out. Returns its slot, or -1 (full, or outside mem[]). */
static inline int rm_mr_add(struct rm_node *n, uint32_t pd, uint32_t mem_off, uint64_t iova,
			    uint32_t len, uint32_t access, uint32_t lkey, uint32_t rkey)
{
	int i;

	if ((uint64_t)mem_off + len > RM_MEM_BYTES)
		return -1;
	for (i = 0; i < RM_MR_MAX; i++) {
		if (n->mr[i].used)
			continue;
		n->mr[i] = (struct rm_mr){ true, true, pd, lkey, rkey, access, iova, len, mem_off };
		return i;
	}
	return -1;
}

/* Remove the region of lkey (valid or invalidated). Returns true if there was one. */
static inline bool rm_mr_del(struct rm_node *n, uint32_t lkey)
{
	int i;

	for (i = 0; i < RM_MR_MAX; i++) {
		if (n->mr[i].used && n->mr[i].lkey == lkey) {
			n->mr[i].used = false;
			return true;
		}
	}
	return false;
}

/* Post a receive WQE. Returns 0, or -1 (queue full or nsge > RM_SGE_MAX). */
static inline int rm_post_recv(struct rm_node *n, const struct rm_sge *sge, uint32_t nsge,
			       uint64_t wr_id)
{
	struct rm_recv *r;

	if (n->rq_count == RM_RQ_MAX || nsge > RM_SGE_MAX)
		return -1;
	r = &n->rq[(n->rq_head + n->rq_count) % RM_RQ_MAX];
	memset(r, 0, sizeof(*r));
	memcpy(r->sge, sge, nsge * sizeof(*sge));
	r->nsge = nsge;
	r->wr_id = wr_id;
	n->rq_count++;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Checks and the status table                                               */
/* ------------------------------------------------------------------------ */

/* Key check in the model's order. *mr gets the region the key named (NULL on EKEY);
 * *mem_off the offset of va in mem[] on success. Returns 0 or -FC_RDMA_E*. */
static inline int rm_check(const struct rm_node *n, uint32_t pd, uint32_t key, bool remote,
			   uint64_t va, uint64_t len, uint32_t access, const struct rm_mr **mr,
			   uint32_t *mem_off)
{
	const struct rm_mr *m = NULL;
	int i;

	for (i = 0; i < RM_MR_MAX && !m; i++)
		if (n->mr[i].used && n->mr[i].valid &&
		    (remote ? n->mr[i].rkey : n->mr[i].lkey) == key)
			m = &n->mr[i];
	*mr = m;
	if (!m)
		return -FC_RDMA_EKEY;
	if (m->pd != pd)
		return -FC_RDMA_EPD;
	if ((m->access & access) != access)
		return -FC_RDMA_EACCESS;
	if (va < m->iova ||
	    (unsigned __int128)va + len > (unsigned __int128)m->iova + m->len)
		return -FC_RDMA_EBOUNDS;
	*mem_off = m->mem_off + (uint32_t)(va - m->iova);
	return 0;
}

/* Fill the result of a failed check; the status table of the file comment. A pair the
 * table does not have gives GENERAL_ERR, which no implementation should produce. */
static inline struct rm_result rm_fail(int err, enum fc_rdma_site site)
{
	struct rm_result r = { .err = err, .site = (uint8_t)site, .resp_status = FC_WC_NONE,
			       .req_status = FC_WC_GENERAL_ERR };
	bool prot = err == -FC_RDMA_EKEY || err == -FC_RDMA_EPD || err == -FC_RDMA_EBOUNDS ||
		    err == -FC_RDMA_EACCESS;

	if (site == FC_RDMA_SITE_LOCAL && prot) {
		r.req_status = FC_WC_LOC_PROT_ERR;
	} else if (site == FC_RDMA_SITE_LOCAL && err == -FC_RDMA_ELEN) {
		r.req_status = FC_WC_LOC_LEN_ERR;
	} else if (site == FC_RDMA_SITE_RKEY && prot) {
		r.req_status = FC_WC_REM_ACCESS_ERR;
	} else if (site == FC_RDMA_SITE_RKEY && err == -FC_RDMA_EALIGN) {
		r.req_status = FC_WC_REM_INV_REQ_ERR;
	} else if (site == FC_RDMA_SITE_RECV && prot) {
		r.req_status = FC_WC_REM_OP_ERR;
		r.resp_status = FC_WC_LOC_PROT_ERR;
	} else if (site == FC_RDMA_SITE_RECV && err == -FC_RDMA_ELEN) {
		r.req_status = FC_WC_REM_INV_REQ_ERR;
		r.resp_status = FC_WC_LOC_LEN_ERR;
	} else if (site == FC_RDMA_SITE_RECV && err == -FC_RDMA_ERNR) {
		r.req_status = FC_WC_RNR_RETRY_EXC_ERR;
	} else if (site == FC_RDMA_SITE_INVALIDATE && prot && err != -FC_RDMA_EBOUNDS) {
		r.req_status = FC_WC_REM_INV_REQ_ERR;
		r.resp_status = FC_WC_REM_INV_REQ_ERR;
	}
	return r;
}

/* The requester's list at post time: every non-empty entry with access. */
static inline int rm_check_local_list(const struct rm_node *n, uint32_t pd,
				      const struct rm_sge *sgl, uint32_t nsge, uint32_t access)
{
	const struct rm_mr *mr;
	uint32_t i, off;
	int err;

	if (nsge > RM_SGE_MAX)
		return -FC_RDMA_ELEN;
	for (i = 0; i < nsge; i++) {
		if (!sgl[i].len)
			continue;
		err = rm_check(n, pd, sgl[i].lkey, false, sgl[i].addr, sgl[i].len, access, &mr,
			       &off);
		if (err)
			return err;
	}
	return 0;
}

/* Offset in mem[] of a checked local entry (rm_check passed before). */
static inline uint32_t rm_local_off(const struct rm_node *n, uint32_t pd,
				    const struct rm_sge *s)
{
	const struct rm_mr *mr;
	uint32_t off = 0;

	rm_check(n, pd, s->lkey, false, s->addr, s->len, 0, &mr, &off);
	return off;
}

/* Gather a checked list into buf; returns the length. */
static inline uint32_t rm_gather(const struct rm_node *n, uint32_t pd,
				 const struct rm_sge *sgl, uint32_t nsge, uint8_t *buf)
{
	uint32_t i, len = 0;

	for (i = 0; i < nsge; i++) {
		if (sgl[i].len)
			memcpy(buf + len, n->mem + rm_local_off(n, pd, &sgl[i]), sgl[i].len);
		len += sgl[i].len;
	}
	return len;
}

/* Place bytes for sure / mark them undefined with their other possible value. */
static inline void rm_put(struct rm_node *n, uint32_t off, const uint8_t *src, uint32_t len)
{
	memcpy(n->mem + off, src, len);
	memset(n->undef + off, 0, len);
}

static inline void rm_maybe(struct rm_node *n, uint32_t off, const uint8_t *src, uint32_t len)
{
	memcpy(n->alt + off, src, len);
	memset(n->undef + off, 1, len);
}

/* The part of [va, va+len) inside region m, as mem[] offset and the index of its first
 * byte in the op; returns its length (0 if none). */
static inline uint32_t rm_clip(const struct rm_mr *m, uint64_t va, uint32_t len,
			       uint32_t *mem_off, uint32_t *op_off)
{
	unsigned __int128 lo = va > m->iova ? va : m->iova;
	unsigned __int128 hi = (unsigned __int128)va + len;
	unsigned __int128 mend = (unsigned __int128)m->iova + m->len;

	if (hi > mend)
		hi = mend;
	if (hi <= lo)
		return 0;
	*mem_off = m->mem_off + (uint32_t)(lo - m->iova);
	*op_off = (uint32_t)(lo - va);
	return (uint32_t)(hi - lo);
}

/* ------------------------------------------------------------------------ */
/* Operations: ini posts, tgt executes                                       */
/* ------------------------------------------------------------------------ */

#define RM_MSG_MAX (RM_SGE_MAX * RM_MEM_BYTES)

/* RDMA WRITE of ini's gather list to [va, va+len) of tgt under rkey; with Immediate when
 * imm != NULL (consumes one of tgt's receive WQEs). */
static inline struct rm_result rm_write(struct rm_node *ini, uint32_t ini_pd,
					const struct rm_sge *sgl, uint32_t nsge,
					struct rm_node *tgt, uint32_t tgt_pd, uint64_t va,
					uint32_t rkey, const uint32_t *imm)
{
	static uint8_t msg[RM_MSG_MAX];
	struct rm_result r = { .resp_status = FC_WC_NONE };
	const struct rm_mr *mr;
	uint32_t len, off = 0, moff, ooff, n;
	int err;

	err = rm_check_local_list(ini, ini_pd, sgl, nsge, 0);
	if (err)
		return rm_fail(err, FC_RDMA_SITE_LOCAL);
	len = rm_gather(ini, ini_pd, sgl, nsge, msg);
	err = len ? rm_check(tgt, tgt_pd, rkey, true, va, len, FC_MR_REMOTE_WRITE, &mr, &off) : 0;
	if (err) {
		/* only a WRITE that starts before its region and ends inside it may have
		 * placed bytes (see the file comment) */
		if (err == -FC_RDMA_EBOUNDS && len > tgt->mtu &&
		    (unsigned __int128)va + len <= (unsigned __int128)mr->iova + mr->len &&
		    (n = rm_clip(mr, va, len, &moff, &ooff)))
			rm_maybe(tgt, moff, msg + ooff, n);
		return rm_fail(err, FC_RDMA_SITE_RKEY);
	}
	if (imm && !tgt->rq_count) {
		if (len > tgt->mtu)
			rm_maybe(tgt, off, msg, len);
		return rm_fail(-FC_RDMA_ERNR, FC_RDMA_SITE_RECV);
	}
	if (len)
		rm_put(tgt, off, msg, len);
	if (imm) {
		r.recv_wr_id = tgt->rq[tgt->rq_head].wr_id;
		tgt->rq_head = (tgt->rq_head + 1) % RM_RQ_MAX;
		tgt->rq_count--;
		r.resp_status = FC_WC_SUCCESS;
		r.byte_len = len;
		r.has_imm = true;
		r.imm = *imm;
	}
	return r;
}

/* RDMA READ of [va, va+len) of tgt under rkey into ini's scatter list (len = its total). */
static inline struct rm_result rm_read(struct rm_node *ini, uint32_t ini_pd,
				       const struct rm_sge *sgl, uint32_t nsge,
				       struct rm_node *tgt, uint32_t tgt_pd, uint64_t va,
				       uint32_t rkey)
{
	struct rm_result r = { .resp_status = FC_WC_NONE };
	const struct rm_mr *mr;
	uint32_t i, j, len = 0, off = 0, pos = 0, dst;
	int err;

	err = rm_check_local_list(ini, ini_pd, sgl, nsge, FC_MR_LOCAL_WRITE);
	if (err)
		return rm_fail(err, FC_RDMA_SITE_LOCAL);
	for (i = 0; i < nsge; i++)
		len += sgl[i].len;
	err = len ? rm_check(tgt, tgt_pd, rkey, true, va, len, FC_MR_REMOTE_READ, &mr, &off) : 0;
	if (err && !(err == -FC_RDMA_EBOUNDS && len > tgt->mtu))
		return rm_fail(err, FC_RDMA_SITE_RKEY);
	/* success: copy; multi-pull EBOUNDS: sink bytes whose source is inside the region
	 * may have been filled by the pulls that passed */
	for (i = 0; i < nsge; i++) {
		dst = sgl[i].len ? rm_local_off(ini, ini_pd, &sgl[i]) : 0;
		for (j = 0; j < sgl[i].len; j++, pos++) {
			unsigned __int128 src = (unsigned __int128)va + pos;

			if (!err)
				rm_put(ini, dst + j, tgt->mem + off + pos, 1);
			else if (src >= mr->iova && src - mr->iova < mr->len)
				rm_maybe(ini, dst + j,
					 tgt->mem + mr->mem_off + (uint32_t)(src - mr->iova), 1);
		}
	}
	return err ? rm_fail(err, FC_RDMA_SITE_RKEY) : r;
}

/* The receive list's entries the first len bytes touch: check them (LOCAL_WRITE) and,
 * if place, write msg there; with maybe, mark the bytes of the entries that pass as
 * undefined instead. Returns the first check's error or 0. */
static inline int rm_scatter_recv(struct rm_node *tgt, uint32_t pd, const struct rm_recv *w,
				  const uint8_t *msg, uint32_t len, bool place, bool maybe)
{
	const struct rm_mr *mr;
	uint32_t i, n, pos = 0, off;
	int err, first = 0;

	for (i = 0; i < w->nsge && pos < len; i++) {
		n = w->sge[i].len < len - pos ? w->sge[i].len : len - pos;
		if (!n)
			continue;
		err = rm_check(tgt, pd, w->sge[i].lkey, false, w->sge[i].addr, n,
			       FC_MR_LOCAL_WRITE, &mr, &off);
		if (err && !first)
			first = err;
		if (!err && place)
			rm_put(tgt, off, msg + pos, n);
		if (!err && maybe)
			rm_maybe(tgt, off, msg + pos, n);
		pos += n;
	}
	return first;
}

static inline uint32_t rm_recv_capacity(const struct rm_recv *w)
{
	uint32_t i, cap = 0;

	for (i = 0; i < w->nsge; i++)
		cap += w->sge[i].len;
	return cap;
}

/* IETH verdict for rkey on tgt, for a QP in pd; *slot gets the region on success. */
static inline int rm_inv_find(const struct rm_node *tgt, uint32_t pd, uint32_t rkey,
			      int *slot)
{
	int i;

	for (i = 0; i < RM_MR_MAX; i++) {
		const struct rm_mr *m = &tgt->mr[i];

		if (!m->used || !m->valid || m->rkey != rkey)
			continue;
		if (m->pd != pd)
			return -FC_RDMA_EPD;
		if (!(m->access & FC_MR_REMOTE_INVALIDATE))
			return -FC_RDMA_EACCESS;
		*slot = i;
		return 0;
	}
	return -FC_RDMA_EKEY;
}

/* IETH: invalidate the region of rkey (both its keys fail afterwards). */
static inline int rm_invalidate(struct rm_node *tgt, uint32_t pd, uint32_t rkey)
{
	int slot = 0, err = rm_inv_find(tgt, pd, rkey, &slot);

	if (!err)
		tgt->mr[slot].valid = false;
	return err;
}

/* SEND of ini's gather list into tgt's next receive WQE; arg is the immediate data
 * (RM_SEND_IMM) or the R_Key to invalidate (RM_SEND_INV). */
static inline struct rm_result rm_send(struct rm_node *ini, uint32_t ini_pd,
				       const struct rm_sge *sgl, uint32_t nsge,
				       struct rm_node *tgt, uint32_t tgt_pd,
				       enum rm_send_kind kind, uint32_t arg)
{
	static uint8_t msg[RM_MSG_MAX];
	struct rm_result r = { .resp_status = FC_WC_SUCCESS };
	const struct rm_recv *w;
	bool multi;
	uint32_t len;
	int err, slot = 0;

	err = rm_check_local_list(ini, ini_pd, sgl, nsge, 0);
	if (err)
		return rm_fail(err, FC_RDMA_SITE_LOCAL);
	len = rm_gather(ini, ini_pd, sgl, nsge, msg);
	if (!tgt->rq_count)
		return rm_fail(-FC_RDMA_ERNR, FC_RDMA_SITE_RECV);
	w = &tgt->rq[tgt->rq_head];
	tgt->rq_head = (tgt->rq_head + 1) % RM_RQ_MAX;
	tgt->rq_count--;
	multi = len > tgt->mtu;
	if (len > rm_recv_capacity(w)) {
		err = -FC_RDMA_ELEN;
		rm_scatter_recv(tgt, tgt_pd, w, msg, rm_recv_capacity(w), false, multi);
	} else {
		err = rm_scatter_recv(tgt, tgt_pd, w, msg, len, false, false);
		if (err && multi)
			rm_scatter_recv(tgt, tgt_pd, w, msg, len, false, true);
	}
	if (err) {
		r = rm_fail(err, FC_RDMA_SITE_RECV);
		r.recv_wr_id = w->wr_id;
		return r;
	}
	if (kind == RM_SEND_INV && (err = rm_inv_find(tgt, tgt_pd, arg, &slot))) {
		if (multi)
			rm_scatter_recv(tgt, tgt_pd, w, msg, len, false, true);
		r = rm_fail(err, FC_RDMA_SITE_INVALIDATE);
		r.recv_wr_id = w->wr_id;
		return r;
	}
	rm_scatter_recv(tgt, tgt_pd, w, msg, len, true, false);
	if (kind == RM_SEND_INV) {
		tgt->mr[slot].valid = false;
		r.invalidated = true;
		r.inv_rkey = arg;
	}
	r.recv_wr_id = w->wr_id;
	r.byte_len = len;
	r.has_imm = kind == RM_SEND_IMM;
	r.imm = r.has_imm ? arg : 0;
	return r;
}

/* Atomic on the 8 bytes at va of tgt under rkey; the original value lands in ini's sink
 * (one entry of exactly 8 bytes). Memory words are host byte order. */
static inline struct rm_result rm_atomic(struct rm_node *ini, uint32_t ini_pd,
					 const struct rm_sge *sink, struct rm_node *tgt,
					 uint32_t tgt_pd, uint64_t va, uint32_t rkey,
					 const struct rm_atomic_args *a)
{
	struct rm_result r = { .resp_status = FC_WC_NONE };
	const struct rm_mr *mr;
	uint64_t orig, val;
	uint32_t off = 0;
	int err;

	if (sink->len != 8)
		return rm_fail(-FC_RDMA_ELEN, FC_RDMA_SITE_LOCAL);
	err = rm_check_local_list(ini, ini_pd, sink, 1, FC_MR_LOCAL_WRITE);
	if (err)
		return rm_fail(err, FC_RDMA_SITE_LOCAL);
	err = rm_check(tgt, tgt_pd, rkey, true, va, 8, FC_MR_REMOTE_ATOMIC, &mr, &off);
	if (err)
		return rm_fail(err, FC_RDMA_SITE_RKEY);
	if (va & 7)
		return rm_fail(-FC_RDMA_EALIGN, FC_RDMA_SITE_RKEY);
	memcpy(&orig, tgt->mem + off, 8);
	if (a->cmp_swap)
		val = rm_rfc_masked_cmp_swap(orig, a->compare, a->compare_mask, a->swap_add,
					     a->swap_add_mask);
	else
		val = rm_rfc_masked_fetch_add(orig, a->swap_add, a->swap_add_mask);
	rm_put(tgt, off, (const uint8_t *)&val, 8);
	rm_put(ini, rm_local_off(ini, ini_pd, sink), (const uint8_t *)&orig, 8);
	r.orig = orig;
	return r;
}

/* ------------------------------------------------------------------------ */
/* Comparing with an implementation's memory                                 */
/* ------------------------------------------------------------------------ */

/* First offset < len where actual[] disagrees with the model (undefined bytes may hold
 * either value), or -1 if none. len is at most RM_MEM_BYTES. */
static inline int rm_mem_check(const struct rm_node *n, const uint8_t *actual, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len && i < RM_MEM_BYTES; i++) {
		if (actual[i] == n->mem[i])
			continue;
		if (n->undef[i] && actual[i] == n->alt[i])
			continue;
		return (int)i;
	}
	return -1;
}

/* Adopt the implementation's value of every undefined byte (after rm_mem_check passed). */
static inline void rm_mem_sync(struct rm_node *n, const uint8_t *actual)
{
	uint32_t i;

	for (i = 0; i < RM_MEM_BYTES; i++) {
		if (n->undef[i])
			n->mem[i] = actual[i];
		n->undef[i] = 0;
	}
}

#endif
