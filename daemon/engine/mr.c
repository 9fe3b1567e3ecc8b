/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mr.c - protection domains, memory regions and key checks of the RDMA ULP. See mr.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "mr.h"

#define KEY_GEN_BITS 8
#define KEY_GEN_MASK 0xFFu
#define KEY_HI_BITS 24 /* index + random */

#define PD_IDX_MASK 0xFFFFu
#define PD_GEN_SHIFT 16

enum mr_state {
	MR_FREE = 0,
	MR_VALID,
	MR_INVALID, /* invalidated by a peer; keys fail, slot held until dereg */
};

struct mr_slot {
	void *addr;
	const struct fc_mr_mem_ops *ops; /* NULL: addr is our pointer */
	void *ops_ctx;
	uint64_t iova;
	uint64_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t pd;
	uint8_t access;
	uint8_t gen;
	uint8_t state; /* enum mr_state */
};

struct pd_slot {
	uint32_t id;  /* handle while allocated */
	uint32_t nmr; /* regions registered in it */
	uint16_t gen;
	bool used;
};

/* FIFO of free slot indexes; capacity = number of slots, so it never overflows. */
struct free_ring {
	uint32_t *idx;
	uint32_t cap;
	uint32_t head;
	uint32_t count;
};

struct fc_mr_table {
	uint32_t mr_cap;
	uint32_t pd_cap;
	uint32_t idx_bits; /* B of the key layout */
	fc_mr_rand_fn rand;
	void *rand_ctx;
	uint32_t nmr;
	struct mr_slot *mr;
	struct pd_slot *pd;
	struct free_ring mr_free;
	struct free_ring pd_free;
	uint64_t gen; /* fc_mr_table_gen: +1 whenever a key that passed a check may fail */
};

/* ------------------------------------------------------------------------ */
/* Error table                                                               */
/* ------------------------------------------------------------------------ */

static bool is_prot_err(int e)
{
	return e == FC_RDMA_EKEY || e == FC_RDMA_EPD || e == FC_RDMA_EBOUNDS ||
	       e == FC_RDMA_EACCESS;
}

static int set_effect(struct fc_rdma_err_effect *out, uint8_t nak, uint8_t req, uint8_t resp)
{
	out->nak = nak;
	out->req_status = req;
	out->resp_status = resp;
	return 0;
}

/* The table of mr.h, one branch per row. */
int fc_rdma_err_effect(int err, enum fc_rdma_site site, struct fc_rdma_err_effect *out)
{
	int e = err < 0 ? -err : err;

	switch (site) {
	case FC_RDMA_SITE_LOCAL:
		if (is_prot_err(e))
			return set_effect(out, FC_RDMA_NAK_NONE, FC_WC_LOC_PROT_ERR, FC_WC_NONE);
		if (e == FC_RDMA_ELEN)
			return set_effect(out, FC_RDMA_NAK_NONE, FC_WC_LOC_LEN_ERR, FC_WC_NONE);
		break;
	case FC_RDMA_SITE_RKEY:
		if (is_prot_err(e))
			return set_effect(out, FC_RDMA_NAK_REM_ACCESS, FC_WC_REM_ACCESS_ERR,
					  FC_WC_NONE);
		if (e == FC_RDMA_EALIGN)
			return set_effect(out, FC_RDMA_NAK_INV_REQ, FC_WC_REM_INV_REQ_ERR,
					  FC_WC_NONE);
		break;
	case FC_RDMA_SITE_RECV:
		if (is_prot_err(e))
			return set_effect(out, FC_RDMA_NAK_REM_OP, FC_WC_REM_OP_ERR,
					  FC_WC_LOC_PROT_ERR);
		if (e == FC_RDMA_ELEN)
			return set_effect(out, FC_RDMA_NAK_INV_REQ, FC_WC_REM_INV_REQ_ERR,
					  FC_WC_LOC_LEN_ERR);
		if (e == FC_RDMA_ERNR)
			return set_effect(out, FC_RDMA_NAK_RNR, FC_WC_RNR_RETRY_EXC_ERR,
					  FC_WC_NONE);
		break;
	case FC_RDMA_SITE_INVALIDATE:
		if (e == FC_RDMA_EKEY || e == FC_RDMA_EPD || e == FC_RDMA_EACCESS)
			return set_effect(out, FC_RDMA_NAK_INV_REQ, FC_WC_REM_INV_REQ_ERR,
					  FC_WC_REM_INV_REQ_ERR);
		break;
	}
	return -EINVAL;
}

const char *fc_rdma_strerror(int err)
{
	static const char *const names[] = {
		[FC_RDMA_EKEY - FC_RDMA_EKEY] = "EKEY",
		[FC_RDMA_EPD - FC_RDMA_EKEY] = "EPD",
		[FC_RDMA_EBOUNDS - FC_RDMA_EKEY] = "EBOUNDS",
		[FC_RDMA_EACCESS - FC_RDMA_EKEY] = "EACCESS",
		[FC_RDMA_EALIGN - FC_RDMA_EKEY] = "EALIGN",
		[FC_RDMA_ELEN - FC_RDMA_EKEY] = "ELEN",
		[FC_RDMA_ERNR - FC_RDMA_EKEY] = "ERNR",
	};
	int e = err < 0 ? -err : err;

	if (e < FC_RDMA_EKEY || e >= FC_RDMA_ERR_END)
		return "?";
	return names[e - FC_RDMA_EKEY];
}

const char *fc_wc_status_name(int status)
{
	switch (status) {
	case FC_WC_SUCCESS: return "SUCCESS";
	case FC_WC_LOC_LEN_ERR: return "LOC_LEN_ERR";
	case FC_WC_LOC_QP_OP_ERR: return "LOC_QP_OP_ERR";
	case FC_WC_LOC_PROT_ERR: return "LOC_PROT_ERR";
	case FC_WC_WR_FLUSH_ERR: return "WR_FLUSH_ERR";
	case FC_WC_LOC_ACCESS_ERR: return "LOC_ACCESS_ERR";
	case FC_WC_REM_INV_REQ_ERR: return "REM_INV_REQ_ERR";
	case FC_WC_REM_ACCESS_ERR: return "REM_ACCESS_ERR";
	case FC_WC_REM_OP_ERR: return "REM_OP_ERR";
	case FC_WC_RETRY_EXC_ERR: return "RETRY_EXC_ERR";
	case FC_WC_RNR_RETRY_EXC_ERR: return "RNR_RETRY_EXC_ERR";
	case FC_WC_GENERAL_ERR: return "GENERAL_ERR";
	case FC_WC_NONE: return "NONE";
	default: return "?";
	}
}

/* ------------------------------------------------------------------------ */
/* Free rings                                                                */
/* ------------------------------------------------------------------------ */

static int ring_init(struct free_ring *r, uint32_t cap)
{
	uint32_t i;

	r->idx = calloc(cap, sizeof(*r->idx));
	if (!r->idx)
		return -ENOMEM;
	for (i = 0; i < cap; i++)
		r->idx[i] = i;
	r->cap = cap;
	r->head = 0;
	r->count = cap;
	return 0;
}

/* Oldest free index, or -ENOSPC. */
static int64_t ring_get(struct free_ring *r)
{
	uint32_t i;

	if (!r->count)
		return -ENOSPC;
	i = r->idx[r->head];
	r->head = (r->head + 1) % r->cap;
	r->count--;
	return i;
}

/* Callers put back only indexes they got, so count < cap here. */
static void ring_put(struct free_ring *r, uint32_t i)
{
	r->idx[(r->head + r->count) % r->cap] = i;
	r->count++;
}

/* ------------------------------------------------------------------------ */
/* Table                                                                     */
/* ------------------------------------------------------------------------ */

/* Bits needed to number 0..cap-1. */
static uint32_t index_bits(uint32_t cap)
{
	uint32_t b = 0;

	while (b < 32 && (cap - 1) >> b)
		b++;
	return b;
}

struct fc_mr_table *fc_mr_table_new(uint32_t mr_cap, uint32_t pd_cap, fc_mr_rand_fn rand,
				    void *rand_ctx)
{
	struct fc_mr_table *t;

	if (!mr_cap || mr_cap > FC_MR_CAP_MAX || !pd_cap || pd_cap > FC_PD_CAP_MAX || !rand) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	t->mr_cap = mr_cap;
	t->pd_cap = pd_cap;
	t->idx_bits = index_bits(mr_cap);
	t->rand = rand;
	t->rand_ctx = rand_ctx;
	t->gen = 1;
	t->mr = calloc(mr_cap, sizeof(*t->mr));
	t->pd = calloc(pd_cap, sizeof(*t->pd));
	if (!t->mr || !t->pd || ring_init(&t->mr_free, mr_cap) ||
	    ring_init(&t->pd_free, pd_cap))
		goto nomem;
	return t;
nomem:
	fc_mr_table_free(t);
	errno = ENOMEM;
	return NULL;
}

void fc_mr_table_free(struct fc_mr_table *t)
{
	if (!t)
		return;
	free(t->mr_free.idx);
	free(t->pd_free.idx);
	free(t->mr);
	free(t->pd);
	free(t);
}

uint32_t fc_mr_count(const struct fc_mr_table *t)
{
	return t->nmr;
}

uint32_t fc_mr_table_mr_cap(const struct fc_mr_table *t) { return t->mr_cap; }
uint32_t fc_mr_table_pd_cap(const struct fc_mr_table *t) { return t->pd_cap; }

/* ------------------------------------------------------------------------ */
/* Protection domains                                                        */
/* ------------------------------------------------------------------------ */

static struct pd_slot *pd_lookup(const struct fc_mr_table *t, uint32_t pd)
{
	uint32_t i = pd & PD_IDX_MASK;

	if (i >= t->pd_cap || !t->pd[i].used || t->pd[i].id != pd)
		return NULL;
	return &t->pd[i];
}

int fc_pd_alloc(struct fc_mr_table *t, uint32_t *pd)
{
	int64_t i = ring_get(&t->pd_free);
	struct pd_slot *s;

	if (i < 0)
		return (int)i;
	s = &t->pd[i];
	s->gen++;
	s->used = true;
	s->nmr = 0;
	s->id = (uint32_t)s->gen << PD_GEN_SHIFT | (uint32_t)i;
	*pd = s->id;
	return 0;
}

int fc_pd_free(struct fc_mr_table *t, uint32_t pd)
{
	struct pd_slot *s = pd_lookup(t, pd);

	if (!s)
		return -EINVAL;
	if (s->nmr)
		return -EBUSY;
	s->used = false;
	ring_put(&t->pd_free, pd & PD_IDX_MASK);
	t->gen++;
	return 0;
}

uint64_t fc_mr_table_gen(const struct fc_mr_table *t)
{
	return t->gen;
}

/* ------------------------------------------------------------------------ */
/* Regions                                                                   */
/* ------------------------------------------------------------------------ */

/* A fresh key for slot i with generation gen: random | index | generation. */
static uint32_t make_key(const struct fc_mr_table *t, uint32_t i, uint8_t gen)
{
	uint32_t shift = KEY_GEN_BITS + t->idx_bits;
	uint32_t rnd = t->rand(t->rand_ctx);

	/* shift <= 24: at least 8 random bits stay (FC_MR_CAP_MAX) */
	return (uint32_t)((uint64_t)rnd << shift) | i << KEY_GEN_BITS | gen;
}

/* The used slot a key's index bits name, or NULL. Callers compare the whole key with the
 * slot's lkey or rkey. */
static const struct mr_slot *key_slot(const struct fc_mr_table *t, uint32_t key)
{
	uint32_t i = (key >> KEY_GEN_BITS) & ((1u << t->idx_bits) - 1);

	if (i >= t->mr_cap || t->mr[i].state == MR_FREE)
		return NULL;
	return &t->mr[i];
}

static int check_reg_args(const struct fc_mr_table *t, uint32_t pd, const void *addr,
			  uint64_t iova, uint64_t len, uint32_t access)
{
	if (!pd_lookup(t, pd) || (access & ~FC_MR_ACCESS_ALL))
		return -EINVAL;
	if ((access & (FC_MR_REMOTE_WRITE | FC_MR_REMOTE_ATOMIC)) &&
	    !(access & FC_MR_LOCAL_WRITE))
		return -EINVAL; /* as ibv_reg_mr */
	if (len && !addr)
		return -EINVAL;
	if (len > UINT64_MAX - iova || len > UINTPTR_MAX - (uintptr_t)addr)
		return -EINVAL;
	if ((access & FC_MR_REMOTE_ATOMIC) && (((uintptr_t)addr ^ iova) & 7))
		return -EINVAL;
	return 0;
}

int fc_mr_reg(struct fc_mr_table *t, uint32_t pd, void *addr, uint64_t iova, uint64_t len,
	      uint32_t access, struct fc_mr_keys *keys)
{
	return fc_mr_reg_ext(t, pd, addr, iova, len, access, NULL, NULL, keys);
}

int fc_mr_reg_ext(struct fc_mr_table *t, uint32_t pd, void *addr, uint64_t iova, uint64_t len,
		  uint32_t access, const struct fc_mr_mem_ops *ops, void *ctx,
		  struct fc_mr_keys *keys)
{
	struct mr_slot *s;
	int64_t i;
	int err;

	err = check_reg_args(t, pd, addr, iova, len, access);
	if (err)
		return err;
	i = ring_get(&t->mr_free);
	if (i < 0)
		return (int)i;
	s = &t->mr[i];
	s->gen++; /* every registration of the slot: a new generation */
	s->addr = addr;
	s->ops = ops;
	s->ops_ctx = ops ? ctx : NULL;
	s->iova = iova;
	s->len = len;
	s->pd = pd;
	s->access = (uint8_t)access;
	s->lkey = make_key(t, (uint32_t)i, s->gen);
	s->rkey = make_key(t, (uint32_t)i, s->gen);
	s->state = MR_VALID;
	pd_lookup(t, pd)->nmr++;
	t->nmr++;
	keys->lkey = s->lkey;
	keys->rkey = s->rkey;
	return 0;
}

int fc_mr_dereg(struct fc_mr_table *t, uint32_t pd, uint32_t lkey)
{
	const struct mr_slot *c = key_slot(t, lkey);
	struct mr_slot *s;

	if (!c || c->lkey != lkey || c->pd != pd)
		return -EINVAL;
	s = &t->mr[c - t->mr];
	t->gen++;
	s->state = MR_FREE;
	s->addr = NULL;
	s->ops = NULL;
	s->ops_ctx = NULL;
	pd_lookup(t, pd)->nmr--;
	t->nmr--;
	ring_put(&t->mr_free, (uint32_t)(s - t->mr));
	return 0;
}

int fc_mr_query(const struct fc_mr_table *t, uint32_t pd, uint32_t lkey,
		struct fc_mr_info *out)
{
	const struct mr_slot *s = key_slot(t, lkey);

	if (!s || s->lkey != lkey || s->pd != pd)
		return -EINVAL;
	out->addr = s->addr;
	out->iova = s->iova;
	out->len = s->len;
	out->pd = s->pd;
	out->access = s->access;
	out->lkey = s->lkey;
	out->rkey = s->rkey;
	out->valid = s->state == MR_VALID;
	return 0;
}

/* The checks shared by both key kinds, on a slot whose key matched. */
static int check_access(const struct mr_slot *s, uint32_t pd, uint64_t iova, uint64_t len,
			uint32_t access, struct fc_mr_loc *loc)
{
	uint64_t off;

	if (s->pd != pd)
		return -FC_RDMA_EPD;
	if ((s->access & access) != access)
		return -FC_RDMA_EACCESS;
	/* iova >= start, and len fits in what is left after it: no overflow possible */
	if (iova < s->iova || len > s->len || iova - s->iova > s->len - len)
		return -FC_RDMA_EBOUNDS;
	off = iova - s->iova;
	loc->host = (uint8_t *)s->addr + off;
	loc->ops = s->ops;
	loc->ctx = s->ops_ctx;
	return 0;
}

int fc_mr_check_remote_loc(const struct fc_mr_table *t, uint32_t pd, uint32_t rkey,
			   uint64_t iova, uint64_t len, uint32_t access, struct fc_mr_loc *loc)
{
	const struct mr_slot *s = key_slot(t, rkey);

	if (!s || s->state != MR_VALID || s->rkey != rkey)
		return -FC_RDMA_EKEY;
	return check_access(s, pd, iova, len, access, loc);
}

int fc_mr_check_local_loc(const struct fc_mr_table *t, uint32_t pd, uint32_t lkey,
			  uint64_t iova, uint64_t len, uint32_t access, struct fc_mr_loc *loc)
{
	const struct mr_slot *s = key_slot(t, lkey);

	if (!s || s->state != MR_VALID || s->lkey != lkey)
		return -FC_RDMA_EKEY;
	return check_access(s, pd, iova, len, access, loc);
}

int fc_mr_check_remote(const struct fc_mr_table *t, uint32_t pd, uint32_t rkey,
		       uint64_t iova, uint64_t len, uint32_t access, void **host)
{
	struct fc_mr_loc loc;
	int err = fc_mr_check_remote_loc(t, pd, rkey, iova, len, access, &loc);

	if (!err)
		*host = loc.host;
	return err;
}

int fc_mr_check_local(const struct fc_mr_table *t, uint32_t pd, uint32_t lkey,
		      uint64_t iova, uint64_t len, uint32_t access, void **host)
{
	struct fc_mr_loc loc;
	int err = fc_mr_check_local_loc(t, pd, lkey, iova, len, access, &loc);

	if (!err)
		*host = loc.host;
	return err;
}

int fc_mr_invalidate(struct fc_mr_table *t, uint32_t pd, uint32_t rkey)
{
	const struct mr_slot *s = key_slot(t, rkey);

	if (!s || s->state != MR_VALID || s->rkey != rkey)
		return -FC_RDMA_EKEY;
	if (s->pd != pd)
		return -FC_RDMA_EPD;
	if (!(s->access & FC_MR_REMOTE_INVALIDATE))
		return -FC_RDMA_EACCESS;
	t->mr[s - t->mr].state = MR_INVALID;
	t->gen++;
	return 0;
}
