/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric/atomic.c - the atomics falcon has no instruction for, run at the target (as
 * ofi_rxm does for tcp): every op x datatype of fi_atomic(3) that rxm offers.
 *
 * Which atomic goes where: what falcon does natively on one 64-bit integer (FI_SUM,
 * FI_ATOMIC_READ, FI_ATOMIC_WRITE, FI_CSWAP, FI_MSWAP on FI_INT64 / FI_UINT64, count 1)
 * stays native (rma.c: the daemons execute it). Everything else is a message: the
 * initiator sends FFI_OP_ATOMIC (struct ffi_areq, then the operands, then the compare
 * operands) on the peer's RC QP; the target's provider checks the key, the access and
 * the range against its own registrations, executes the operation on its memory and
 * answers FFI_OP_ATOMIC_RESP (status, then the old values for fetch and compare); the
 * initiator completes the operation at the answer. The answer waits in the initiator's
 * table of answered sends (struct ffi_rsend), not in a tx slot.
 *
 * Ordering and atomicity: emulated operations run in the order they arrive on their
 * connection, each under one lock of the target process, so they are atomic with
 * respect to each other (every endpoint and domain of the process). They are not atomic
 * with respect to the native ones the daemon executes on the same bytes: a program that
 * mixes FI_SUM (native) and FI_MIN (emulated) on one FI_INT64 location gets no atomicity
 * between the two. No atomic ordering (FI_ORDER_ATOMIC_*) is offered (prov.c).
 */
#include <complex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ffi.h"

static pthread_mutex_t exec_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- what is valid ---- */

size_t ffi_atomic_dtsize(enum fi_datatype dt)
{
	switch ((int)dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	case FI_INT64: case FI_UINT64: case FI_DOUBLE: case FI_FLOAT_COMPLEX: return 8;
	case FI_LONG_DOUBLE: return sizeof(long double);
	case FI_DOUBLE_COMPLEX: return sizeof(double complex);
	case FI_LONG_DOUBLE_COMPLEX: return sizeof(long double complex);
	case FI_INT128: case FI_UINT128: return 16;
	default: return 0;
	}
}

static bool is_int(enum fi_datatype dt)
{
	return dt <= FI_UINT64 || dt == FI_INT128 || dt == FI_UINT128;
}

static bool is_complex(enum fi_datatype dt)
{
	return dt == FI_FLOAT_COMPLEX || dt == FI_DOUBLE_COMPLEX || dt == FI_LONG_DOUBLE_COMPLEX;
}

/* op on dt for kind (FFI_AT_WRITE: fi_atomic, FFI_AT_FETCH, FFI_AT_COMPARE) */
bool ffi_atomic_valid(enum fi_datatype dt, enum fi_op op, int kind)
{
	if (!ffi_atomic_dtsize(dt))
		return false;
	if (kind == FFI_AT_COMPARE) {
		if (op == FI_CSWAP || op == FI_CSWAP_NE)
			return true;
		if (op >= FI_CSWAP_LE && op <= FI_CSWAP_GT)
			return !is_complex(dt);
		return op == FI_MSWAP && is_int(dt);
	}
	if (op == FI_ATOMIC_READ)
		return kind == FFI_AT_FETCH;
	if (op == FI_ATOMIC_WRITE || op == FI_SUM || op == FI_PROD)
		return true;
	if (op == FI_LOR || op == FI_LAND || op == FI_LXOR)
		return true;
	if (op == FI_MIN || op == FI_MAX)
		return !is_complex(dt);
	if (op == FI_BOR || op == FI_BAND || op == FI_BXOR)
		return is_int(dt);
	return false;
}

/* what falcon executes itself: one 64-bit integer, the ops of its instructions */
bool ffi_atomic_native(enum fi_datatype dt, enum fi_op op, int kind, size_t count)
{
	if ((dt != FI_INT64 && dt != FI_UINT64) || count != 1)
		return false;
	if (kind == FFI_AT_COMPARE)
		return op == FI_CSWAP || op == FI_MSWAP;
	if (kind == FFI_AT_FETCH)
		return op == FI_SUM || op == FI_ATOMIC_READ || op == FI_ATOMIC_WRITE;
	return op == FI_SUM || op == FI_ATOMIC_WRITE;
}

/* ---- executing: element by element, memory read and written with memcpy (the
 * target's buffer need not be aligned) ---- */

#define LOAD(T, p, i) ({ T v_; memcpy(&v_, (const uint8_t *)(p) + (i) * sizeof(T), sizeof(T)); v_; })
#define STORE(T, p, i, v) do { T v_ = (v); memcpy((uint8_t *)(p) + (i) * sizeof(T), &v_, sizeof(T)); } while (0)

/* the operations every type has, then the ordered, logical and bitwise ones */
#define COMMON_CASES(T) \
	case FI_SUM: n = o + s; break; \
	case FI_PROD: n = o * s; break; \
	case FI_ATOMIC_READ: break; \
	case FI_ATOMIC_WRITE: n = s; break; \
	case FI_CSWAP: if (c == o) n = s; break; \
	case FI_CSWAP_NE: if (c != o) n = s; break;
#define LOGICAL_CASES(T) \
	case FI_LOR: n = (T)(o || s); break; \
	case FI_LAND: n = (T)(o && s); break; \
	case FI_LXOR: n = (T)((o && !s) || (!o && s)); break;
#define ORDERED_CASES(T) \
	case FI_MIN: if (s < o) n = s; break; \
	case FI_MAX: if (s > o) n = s; break; \
	case FI_CSWAP_LE: if (c <= o) n = s; break; \
	case FI_CSWAP_LT: if (c < o) n = s; break; \
	case FI_CSWAP_GE: if (c >= o) n = s; break; \
	case FI_CSWAP_GT: if (c > o) n = s; break;
#define BIT_CASES(T) \
	case FI_BOR: n = o | s; break; \
	case FI_BAND: n = o & s; break; \
	case FI_BXOR: n = o ^ s; break; \
	case FI_MSWAP: n = (s & c) | (o & ~c); break;

#define DEF_EXEC(name, T, CASES) \
static void name(enum fi_op op, void *dst, const void *src, const void *cmp, void *res, size_t cnt) \
{ \
	for (size_t i = 0; i < cnt; i++) { \
		T o = LOAD(T, dst, i), s = src ? LOAD(T, src, i) : (T)0; \
		T c = cmp ? LOAD(T, cmp, i) : (T)0, n = o; \
		switch (op) { CASES default: break; } \
		if (res) \
			STORE(T, res, i, o); \
		if (op != FI_ATOMIC_READ) \
			STORE(T, dst, i, n); \
	} \
}
#define INT_CASES(T) COMMON_CASES(T) LOGICAL_CASES(T) ORDERED_CASES(T) BIT_CASES(T)
#define FLT_CASES(T) COMMON_CASES(T) LOGICAL_CASES(T) ORDERED_CASES(T)
#define CPX_CASES(T) COMMON_CASES(T) LOGICAL_CASES(T)

DEF_EXEC(x_i8, int8_t, INT_CASES(int8_t))
DEF_EXEC(x_u8, uint8_t, INT_CASES(uint8_t))
DEF_EXEC(x_i16, int16_t, INT_CASES(int16_t))
DEF_EXEC(x_u16, uint16_t, INT_CASES(uint16_t))
DEF_EXEC(x_i32, int32_t, INT_CASES(int32_t))
DEF_EXEC(x_u32, uint32_t, INT_CASES(uint32_t))
DEF_EXEC(x_i64, int64_t, INT_CASES(int64_t))
DEF_EXEC(x_u64, uint64_t, INT_CASES(uint64_t))
DEF_EXEC(x_i128, __int128, INT_CASES(__int128))
DEF_EXEC(x_u128, unsigned __int128, INT_CASES(unsigned __int128))
DEF_EXEC(x_f, float, FLT_CASES(float))
DEF_EXEC(x_d, double, FLT_CASES(double))
DEF_EXEC(x_ld, long double, FLT_CASES(long double))
DEF_EXEC(x_fc, float complex, CPX_CASES(float complex))
DEF_EXEC(x_dc, double complex, CPX_CASES(double complex))
DEF_EXEC(x_ldc, long double complex, CPX_CASES(long double complex))

typedef void exec_fn(enum fi_op, void *, const void *, const void *, void *, size_t);

static exec_fn *exec_of(enum fi_datatype dt)
{
	switch ((int)dt) {
	case FI_INT8: return x_i8;
	case FI_UINT8: return x_u8;
	case FI_INT16: return x_i16;
	case FI_UINT16: return x_u16;
	case FI_INT32: return x_i32;
	case FI_UINT32: return x_u32;
	case FI_INT64: return x_i64;
	case FI_UINT64: return x_u64;
	case FI_INT128: return x_i128;
	case FI_UINT128: return x_u128;
	case FI_FLOAT: return x_f;
	case FI_DOUBLE: return x_d;
	case FI_LONG_DOUBLE: return x_ld;
	case FI_FLOAT_COMPLEX: return x_fc;
	case FI_DOUBLE_COMPLEX: return x_dc;
	case FI_LONG_DOUBLE_COMPLEX: return x_ldc;
	default: return NULL;
	}
}

/* Run op on count elements of dt at dst (old values into res when not NULL), atomically
 * with respect to every other emulated atomic of this process. */
void ffi_atomic_exec(enum fi_datatype dt, enum fi_op op, void *dst, const void *src,
		     const void *cmp, void *res, size_t count)
{
	exec_fn *f = exec_of(dt);

	if (!f)
		return;
	pthread_mutex_lock(&exec_lock);
	f(op, dst, src, cmp, res, count);
	pthread_mutex_unlock(&exec_lock);
}

/* ---- the initiator: post, and the answer ---- */

/* An emulated atomic (ffi_atomic_valid, not native): 0 or -FI_E*. */
ssize_t ffi_atomic_emulate(struct ffi_ep *ep, int kind, const void *buf, size_t count,
			   const void *cmp, void *result, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op aop, uint64_t flags,
			   void *context)
{
	size_t n = count * ffi_atomic_dtsize(dt);
	struct ffi_rsend *rs;
	struct ffi_op *op;
	struct ffi_hdr *h;
	struct ffi_areq *q;
	uint8_t *p;

	if (!count || n > FFI_ATOMIC_MAX)
		return -FI_EINVAL; /* beyond fi_query_atomic's count */
	rs = ffi_rsend_get(ep);
	op = rs ? ffi_op_get(ep) : NULL;
	if (!op) {
		if (rs)
			ffi_rsend_put(ep, rs);
		return -FI_EAGAIN;
	}
	h = (struct ffi_hdr *)ffi_op_slot(ep, op);
	q = (struct ffi_areq *)(h + 1);
	p = (uint8_t *)(q + 1);
	memset(h, 0, sizeof(*h) + sizeof(*q));
	h->op = FFI_OP_ATOMIC;
	h->data = (uint32_t)(rs - ep->rsends);
	h->tag = rs->seq = op->seq = ++ep->seq;
	*q = (struct ffi_areq){ .addr = addr, .rkey = (uint32_t)key, .aop = (uint8_t)aop,
				.dt = (uint8_t)dt, .kind = (uint8_t)kind, .count = (uint32_t)count };
	if (aop != FI_ATOMIC_READ) {
		memcpy(p, buf, n);
		p += n;
	}
	if (kind == FFI_AT_COMPARE) {
		memcpy(p, cmp, n);
		p += n;
	}
	rs->context = op->context = context;
	rs->cq_flags = op->cq_flags = FI_ATOMIC | (kind == FFI_AT_WRITE ? FI_WRITE : FI_READ);
	rs->comp = ffi_tx_comp(ep, flags);
	rs->result = kind == FFI_AT_WRITE ? NULL : result;
	rs->result_len = n;
	rs->atomic = true;
	return ffi_rsend_submit(ep, op, rs, h, (uint32_t)(p - (uint8_t *)h), h->data, dest);
}

/* FFI_OP_ATOMIC_RESP: the old values into the result buffer, the completion. */
void ffi_atomic_answer(struct ffi_ep *ep, const struct ffi_hdr *h, const uint8_t *body, size_t len)
{
	struct ffi_rsend *rs;
	struct ffi_aresp a;
	struct ffi_cqe e = { .src = FI_ADDR_NOTAVAIL };

	if (h->data >= FFI_RSEND_MAX || len < sizeof(a)) {
		ep->rx_drops++;
		return;
	}
	rs = &ep->rsends[h->data];
	memcpy(&a, body, sizeof(a));
	if (!rs->in_use || !rs->atomic || rs->seq != h->tag || a.len > len - sizeof(a)) {
		ep->rx_drops++;
		return;
	}
	if (!a.err && rs->result)
		memcpy(rs->result, body + sizeof(a), a.len < rs->result_len ? a.len : rs->result_len);
	e.e.op_context = rs->context;
	e.e.flags = rs->cq_flags;
	e.err = a.err > 0 ? a.err : 0;
	if (e.err || rs->comp)
		ffi_cq_push(ep->tx_cq, &e);
	ffi_count(ep, rs->cq_flags, e.err != 0);
	ffi_rsend_put(ep, rs);
}

/* ---- the target ---- */

/* The registration that rkey names, holding [addr, addr + n) with access: NULL if none. */
static const struct ffi_mr *mr_for(struct ffi_domain *dom, uint32_t rkey, uint64_t addr, size_t n,
				   uint64_t access)
{
	const struct ffi_mr *m;

	LIST_FOREACH(m, &dom->mrs, link) {
		uint64_t b = (uint64_t)(uintptr_t)m->fmr->addr;

		if (m->fmr->rkey != rkey)
			continue;
		if (addr < b || addr - b > m->fmr->length || n > m->fmr->length - (addr - b) ||
		    (m->access & access) != access)
			return NULL;
		return m;
	}
	return NULL;
}

static void answer_send(struct ffi_ep *ep, struct ffi_aowed *w)
{
	struct ffi_op *op = ffi_op_get_any(ep);

	if (!op) {
		TAILQ_INSERT_TAIL(&ep->aowed, w, link);
		return;
	}
	memcpy(ffi_op_slot(ep, op), w->data, w->len);
	op->kind = FFI_K_CTRL;
	op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)ffi_op_slot(ep, op), (uint32_t)w->len,
				       ep->pool_mr->lkey };
	op->wr.num_sge = 1;
	op->wr.opcode = FALCON_WR_SEND;
	if (ffi_post_on(ep, w->peer->qp, op))
		ffi_op_put(ep, op);
	free(w);
}

/* Answers that waited for a tx slot, in order. */
void ffi_atomic_pump(struct ffi_ep *ep)
{
	struct ffi_aowed *w;

	while ((w = TAILQ_FIRST(&ep->aowed)) && ep->ops_free) {
		TAILQ_REMOVE(&ep->aowed, w, link);
		answer_send(ep, w);
	}
}

/* FFI_OP_ATOMIC from peer p (body: the request after the header): check, execute,
 * answer. A request that is not well formed is dropped (counted); one the memory does
 * not allow is answered FI_EACCES, an operation we do not have FI_EOPNOTSUPP. */
void ffi_atomic_serve(struct ffi_ep *ep, struct ffi_peer *p, const struct ffi_hdr *h,
		      const uint8_t *body, size_t len)
{
	struct ffi_areq q;
	struct ffi_hdr *rh;
	struct ffi_aresp a = { 0 };
	struct ffi_aowed *w;
	size_t n, need;
	const struct ffi_mr *m;

	if (!p || len < sizeof(q)) {
		ep->rx_drops++;
		return;
	}
	memcpy(&q, body, sizeof(q));
	n = (size_t)q.count * ffi_atomic_dtsize((enum fi_datatype)q.dt);
	need = sizeof(q) + (q.aop != FI_ATOMIC_READ ? n : 0) + (q.kind == FFI_AT_COMPARE ? n : 0);
	if (!n || n > FFI_ATOMIC_MAX || q.kind > FFI_AT_COMPARE || len < need) {
		ep->rx_drops++;
		return;
	}
	w = malloc(sizeof(*w) + sizeof(*rh) + sizeof(a) + n);
	if (!w)
		return;
	w->peer = p;
	rh = (struct ffi_hdr *)w->data;
	*rh = (struct ffi_hdr){ .op = FFI_OP_ATOMIC_RESP, .data = h->data, .tag = h->tag };
	if (!ffi_atomic_valid((enum fi_datatype)q.dt, (enum fi_op)q.aop, q.kind)) {
		a.err = FI_EOPNOTSUPP;
	} else if (!(m = mr_for(ep->dom, q.rkey, q.addr, n, q.aop == FI_ATOMIC_READ ?
				FI_REMOTE_READ : FI_REMOTE_WRITE))) {
		a.err = FI_EACCES;
	} else {
		const uint8_t *src = q.aop != FI_ATOMIC_READ ? body + sizeof(q) : NULL;
		const uint8_t *cmp = q.kind == FFI_AT_COMPARE ? body + sizeof(q) + (src ? n : 0) : NULL;

		(void)m;
		ffi_atomic_exec((enum fi_datatype)q.dt, (enum fi_op)q.aop, (void *)(uintptr_t)q.addr,
				src, cmp, w->data + sizeof(*rh) + sizeof(a), q.count);
		a.len = q.kind == FFI_AT_WRITE ? 0 : (uint32_t)n;
	}
	memcpy(w->data + sizeof(*rh), &a, sizeof(a));
	w->len = sizeof(*rh) + sizeof(a) + a.len;
	answer_send(ep, w);
}
