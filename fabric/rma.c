/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric/rma.c - FI_RMA (fi_read, fi_write, fi_writedata: RDMA READ, WRITE, WRITE with
 * immediate on the peer's RC QP) and FI_ATOMIC (what falcon has natively, see
 * ffi_query_atomic). A local buffer with a descriptor of fi_mr_reg goes to falcon as is
 * (zero copy when it is falcon_alloc_buf memory); without one the data passes through the
 * operation's bounce slot. Atomic results always come back through the slot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ffi.h"

#define EP(fep) ((struct ffi_ep *)(fep))

/* ---- RMA above FFI_MAX_MSG (beyond the bounce slot): a job, its local buffer registered
 * for it when it has no descriptor; one work request, which the daemon segments. Only an
 * RMA above the daemon's max_msg_size (one that takes less than the provider offers,
 * ffi.h) is cut into pieces of that size, each its own tx operation, posted as operations
 * come free; the job completes when the last piece has. With remote CQ data only the last
 * WRITE carries the immediate (RC keeps them in order, so the target's completion comes
 * after all the data). ---- */

static ssize_t rjob_post(struct ffi_ep *ep, bool write, void *buf, size_t len, void *desc,
			 fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t data, uint64_t flags,
			 void *context)
{
	struct ffi_rjob *j;

	if (flags & FI_INJECT)
		return -FI_EMSGSIZE; /* above inject_size */
	if (!ffi_av_get(ep->av, peer))
		return -FI_EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -FI_ENOMEM;
	if (desc) {
		j->lkey = ((const struct ffi_mr *)desc)->fmr->lkey;
	} else {
		j->mr = falcon_reg_mr(ep->dom->pd, buf, len, FALCON_ACCESS_LOCAL_WRITE);
		if (!j->mr) {
			ssize_t r = -errno;

			free(j);
			return r;
		}
		j->lkey = j->mr->lkey;
	}
	j->context = context;
	j->cq_flags = FI_RMA | (write ? FI_WRITE : FI_READ);
	j->comp = ffi_tx_comp(ep, flags);
	j->write = write;
	j->imm = write && (flags & FI_REMOTE_CQ_DATA);
	j->imm_data = (uint32_t)data;
	j->dest = peer;
	j->local = buf;
	j->raddr = addr;
	j->rkey = (uint32_t)key;
	j->total = len;
	j->t0_ms = ffi_now_ms();
	TAILQ_INSERT_TAIL(&ep->rjobs, j, link);
	ffi_rjob_pump(ep);
	return 0;
}

void ffi_rjob_chunk_done(struct ffi_ep *ep, struct ffi_op *op, const struct falcon_wc *wc)
{
	struct ffi_rjob *j = op->rjob;

	j->out--;
	if (wc->status != FALCON_WC_SUCCESS && !j->err) {
		j->err = ffi_err_of_status(wc->status);
		j->prov_errno = (int)wc->status;
	}
	ffi_op_put(ep, op);
}

void ffi_rjob_pump(struct ffi_ep *ep)
{
	struct ffi_rjob *j, *next;

	for (j = TAILQ_FIRST(&ep->rjobs); j; j = next) {
		struct ffi_peer *p = NULL;

		next = TAILQ_NEXT(j, link);
		if (!j->err && j->next < j->total) {
			p = ffi_peer_for(ep, j->dest);
			if (!p && errno == EAGAIN) {
				continue; /* no operation free for the request: later */
			} else if (!p) {
				j->err = FI_EIO;
			} else if (p->state != FFI_PEER_CONNECTED) {
				if (ffi_now_ms() - j->t0_ms > (uint64_t)ep->conn_timeout_ms)
					j->err = FI_ETIMEDOUT;
				else
					continue; /* its connection is being set up */
			}
		}
		while (!j->err && j->next < j->total && ep->ops_free > FFI_CTRL_RESERVE) {
			size_t wmax = ffi_wr_max(&ep->dom->dev);
			size_t n = j->total - j->next < wmax ? j->total - j->next : wmax;
			struct ffi_op *op = ffi_op_get_any(ep);

			op->kind = FFI_K_RCHUNK;
			op->rjob = j;
			op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)(j->local + j->next),
						       (uint32_t)n, j->lkey };
			op->wr.num_sge = 1;
			op->wr.opcode = !j->write ? FALCON_WR_RDMA_READ :
					(j->imm && j->next + n == j->total) ?
					FALCON_WR_RDMA_WRITE_WITH_IMM : FALCON_WR_RDMA_WRITE;
			op->wr.imm_data = j->imm_data;
			op->wr.remote_addr = j->raddr + j->next;
			op->wr.rkey = j->rkey;
			if (ffi_post_on(ep, p->qp, op)) {
				ffi_op_put(ep, op);
				j->err = FI_EIO;
				break;
			}
			j->next += n;
			j->out++;
		}
		if (j->out || (!j->err && j->next < j->total))
			continue;
		if (ffi_cq_room(ep->tx_cq) == 0)
			continue;
		if (j->err || j->comp) {
			struct ffi_cqe e = { .e = { .op_context = j->context, .flags = j->cq_flags },
					     .src = FI_ADDR_NOTAVAIL, .err = j->err,
					     .prov_errno = j->prov_errno };

			ffi_cq_push(ep->tx_cq, &e);
		}
		ffi_count(ep, j->cq_flags, j->err != 0);
		if (j->mr)
			falcon_dereg_mr(j->mr);
		TAILQ_REMOVE(&ep->rjobs, j, link);
		free(j);
	}
}

static ssize_t rma_post_unlocked(struct ffi_ep *ep, bool write, void *buf, size_t len, void *desc,
			fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t data, uint64_t flags,
			void *context)
{
	struct ffi_op *op;
	uint8_t *slot;
	ssize_t r;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->caps & FI_RMA) || ep->type != FI_EP_RDM)
		return -FI_EOPNOTSUPP;
	if (len && !buf)
		return -FI_EINVAL;
	if (len > ffi_msg_max(&ep->dom->dev) || ((flags & FI_INJECT) && len > FFI_INJECT_RDM))
		return -FI_EMSGSIZE;
	if (key > UINT32_MAX)
		return -FI_EKEYREJECTED;
	if (len > FFI_MAX_MSG)
		return rjob_post(ep, write, buf, len, desc, peer, addr, key, data, flags, context);
	op = ffi_op_get(ep);
	if (!op)
		return -FI_EAGAIN;
	slot = ffi_op_slot(ep, op);
	op->kind = FFI_K_RMA;
	op->context = context;
	op->cq_flags = FI_RMA | (write ? FI_WRITE : FI_READ);
	op->comp = ffi_tx_comp(ep, flags);
	if (desc) {
		const struct ffi_mr *mr = desc;

		op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)buf, (uint32_t)len, mr->fmr->lkey };
	} else {
		if (write && len)
			memcpy(slot, buf, len);
		else if (!write) {
			op->result = buf;
			op->result_len = len;
		}
		op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)slot, (uint32_t)len,
					       ep->pool_mr->lkey };
	}
	op->wr.num_sge = 1;
	op->wr.opcode = !write ? FALCON_WR_RDMA_READ :
			(flags & FI_REMOTE_CQ_DATA) ? FALCON_WR_RDMA_WRITE_WITH_IMM : FALCON_WR_RDMA_WRITE;
	op->wr.imm_data = (uint32_t)data;
	op->wr.remote_addr = addr;
	op->wr.rkey = (uint32_t)key;
	r = ffi_op_submit(ep, op, peer);
	if (r)
		ffi_op_put(ep, op);
	return r;
}

/* rma_post under the domain's lock (FI_THREAD_SAFE) */
static ssize_t rma_post(struct ffi_ep *ep, bool write, void *buf, size_t len, void *desc,
			fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t data, uint64_t flags,
			void *context)
{
	struct ffi_domain *d_ = ep->dom;
	ssize_t r_;

	ffi_lock(d_);
	r_ = rma_post_unlocked(ep, write, buf, len, desc, peer, addr, key, data, flags, context);
	ffi_unlock(d_);
	return r_;
}

/* A READ, WRITE or atomic completed successfully: results into place, the completion. */
void ffi_rma_complete(struct ffi_ep *ep, struct ffi_op *op)
{
	if (op->result)
		memcpy(op->result, ffi_op_slot(ep, op), op->result_len);
	if (op->comp) {
		struct ffi_cqe e = { .e = { .op_context = op->context, .flags = op->cq_flags },
				     .src = FI_ADDR_NOTAVAIL };

		ffi_cq_push(ep->tx_cq, &e);
	}
	ffi_count(ep, op->cq_flags, false);
	ffi_op_put(ep, op);
}

static ssize_t rma_read(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t addr, uint64_t key, void *context)
{
	return rma_post(EP(fep), false, buf, len, desc, src, addr, key, 0, EP(fep)->tx_op_flags,
			context);
}

static ssize_t rma_readv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return rma_post(EP(fep), false, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : NULL, src,
			addr, key, 0, EP(fep)->tx_op_flags, context);
}

/* one local buffer, one remote one (rma_iov_limit 1), both there */
static bool rma_msg_ok(const struct fi_msg_rma *msg)
{
	return msg && msg->iov_count == 1 && msg->rma_iov_count == 1 && msg->msg_iov &&
	       msg->rma_iov;
}

static ssize_t rma_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!rma_msg_ok(msg))
		return -FI_EINVAL;
	return rma_post(EP(fep), false, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len,
			msg->desc ? msg->desc[0] : NULL, msg->addr, msg->rma_iov[0].addr,
			msg->rma_iov[0].key, 0, flags & ~FFI_NO_COMPLETION, msg->context);
}

static ssize_t rma_write(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	return rma_post(EP(fep), true, (void *)buf, len, desc, dest, addr, key, 0,
			EP(fep)->tx_op_flags, context);
}

static ssize_t rma_writev(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return rma_post(EP(fep), true, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : NULL, dest,
			addr, key, 0, EP(fep)->tx_op_flags, context);
}

static ssize_t rma_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!rma_msg_ok(msg))
		return -FI_EINVAL;
	return rma_post(EP(fep), true, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len,
			msg->desc ? msg->desc[0] : NULL, msg->addr, msg->rma_iov[0].addr,
			msg->rma_iov[0].key, msg->data, flags & ~FFI_NO_COMPLETION, msg->context);
}

static ssize_t rma_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
			  uint64_t addr, uint64_t key)
{
	return rma_post(EP(fep), true, (void *)buf, len, NULL, dest, addr, key, 0,
			FI_INJECT | FFI_NO_COMPLETION, NULL);
}

static ssize_t rma_writedata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	return rma_post(EP(fep), true, (void *)buf, len, desc, dest, addr, key, data,
			EP(fep)->tx_op_flags | FI_REMOTE_CQ_DATA, context);
}

static ssize_t rma_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return rma_post(EP(fep), true, (void *)buf, len, NULL, dest, addr, key, data,
			FI_INJECT | FFI_NO_COMPLETION | FI_REMOTE_CQ_DATA, NULL);
}

struct fi_ops_rma ffi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};

/* ---- atomics ---- */

enum { AT_WRITE = FFI_AT_WRITE, AT_FETCH = FFI_AT_FETCH, AT_COMPARE = FFI_AT_COMPARE };

/* One 64-bit atomic: operand *buf, compare operand *cmp (AT_COMPARE), old value into
 * *result (AT_FETCH, AT_COMPARE). */
static ssize_t atomic_post_unlocked(struct ffi_ep *ep, int kind, const void *buf, size_t count,
			   const void *cmp, void *result, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op aop, uint64_t flags,
			   void *context)
{
	static const uint64_t qflags[] = { 0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC };
	uint64_t operand = 0, compare = 0;
	struct ffi_op *op;
	ssize_t r;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->caps & FI_ATOMIC) || ep->type != FI_EP_RDM)
		return -FI_EOPNOTSUPP;
	r = ffi_query_atomic(&ep->dom->domain, dt, aop, NULL, qflags[kind]);
	if (r)
		return r;
	if (!count || (!buf && aop != FI_ATOMIC_READ) || (kind != AT_WRITE && !result) ||
	    (kind == AT_COMPARE && !cmp))
		return -FI_EINVAL;
	if (key > UINT32_MAX)
		return -FI_EKEYREJECTED;
	if (!ffi_atomic_native(dt, aop, kind, count) || ep->dom->dev.atomic_cap == FALCON_ATOMIC_NONE ||
	    ep->dom->dev.atomic_size != 8)
		return ffi_atomic_emulate(ep, kind, buf, count, cmp, result, dest, addr, key, dt, aop,
					  flags, context);
	if (buf)
		memcpy(&operand, buf, sizeof(operand));
	if (cmp)
		memcpy(&compare, cmp, sizeof(compare));
	op = ffi_op_get(ep);
	if (!op)
		return -FI_EAGAIN;
	op->kind = FFI_K_RMA;
	op->context = context;
	op->cq_flags = FI_ATOMIC | (kind == AT_WRITE ? FI_WRITE : FI_READ);
	op->comp = ffi_tx_comp(ep, flags);
	op->result = kind == AT_WRITE ? NULL : result;
	op->result_len = sizeof(uint64_t);
	op->sge = (struct falcon_sge){ (uint64_t)(uintptr_t)ffi_op_slot(ep, op), sizeof(uint64_t),
				       ep->pool_mr->lkey };
	op->wr.num_sge = 1;
	op->wr.remote_addr = addr;
	op->wr.rkey = (uint32_t)key;
	switch (aop) {
	case FI_SUM:
		op->wr.opcode = FALCON_WR_ATOMIC_FETCH_AND_ADD;
		op->wr.compare_add = operand;
		break;
	case FI_ATOMIC_READ:
		op->wr.opcode = FALCON_WR_ATOMIC_FETCH_AND_ADD;
		op->wr.compare_add = 0;
		break;
	case FI_CSWAP:
		op->wr.opcode = FALCON_WR_ATOMIC_CMP_AND_SWP;
		op->wr.compare_add = compare;
		op->wr.swap = operand;
		break;
	case FI_ATOMIC_WRITE: /* masked CmpSwap: compare nothing, swap every bit */
		op->wr.opcode = FALCON_WR_MASKED_ATOMIC_CMP_AND_SWP;
		op->wr.compare_add_mask = 0;
		op->wr.swap = operand;
		op->wr.swap_mask = ~0ull;
		break;
	case FI_MSWAP: /* *addr = (*buf & *compare) | (*addr & ~*compare) */
		op->wr.opcode = FALCON_WR_MASKED_ATOMIC_CMP_AND_SWP;
		op->wr.compare_add_mask = 0;
		op->wr.swap = operand;
		op->wr.swap_mask = compare;
		break;
	default:
		ffi_op_put(ep, op);
		return -FI_EOPNOTSUPP;
	}
	r = ffi_op_submit(ep, op, dest);
	if (r)
		ffi_op_put(ep, op);
	return r;
}

/* atomic_post under the domain's lock (FI_THREAD_SAFE) */
static ssize_t atomic_post(struct ffi_ep *ep, int kind, const void *buf, size_t count,
			   const void *cmp, void *result, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op aop, uint64_t flags,
			   void *context)
{
	struct ffi_domain *d_ = ep->dom;
	ssize_t r_;

	ffi_lock(d_);
	r_ = atomic_post_unlocked(ep, kind, buf, count, cmp, result, dest, addr, key, dt, aop, flags, context);
	ffi_unlock(d_);
	return r_;
}

static ssize_t at_write(struct fid_ep *fep, const void *buf, size_t count, void *desc,
			fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			enum fi_op aop, void *context)
{
	(void)desc;
	return atomic_post(EP(fep), AT_WRITE, buf, count, NULL, NULL, dest, addr, key, dt, aop,
			   EP(fep)->tx_op_flags, context);
}

static ssize_t at_writev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc, size_t count,
			 fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			 enum fi_op aop, void *context)
{
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return at_write(fep, iov[0].addr, iov[0].count, desc ? desc[0] : NULL, dest, addr, key, dt,
			aop, context);
}

static bool at_msg_ok(const struct fi_msg_atomic *msg)
{
	return msg && msg->iov_count == 1 && msg->rma_iov_count == 1 && msg->msg_iov &&
	       msg->rma_iov;
}

static ssize_t at_writemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg, uint64_t flags)
{
	if (!at_msg_ok(msg))
		return -FI_EINVAL;
	return atomic_post(EP(fep), AT_WRITE, msg->msg_iov[0].addr, msg->msg_iov[0].count, NULL,
			   NULL, msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key,
			   msg->datatype, msg->op, flags & ~FFI_NO_COMPLETION, msg->context);
}

static ssize_t at_inject(struct fid_ep *fep, const void *buf, size_t count, fi_addr_t dest,
			 uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op aop)
{
	return atomic_post(EP(fep), AT_WRITE, buf, count, NULL, NULL, dest, addr, key, dt, aop,
			   FI_INJECT | FFI_NO_COMPLETION, NULL);
}

static ssize_t at_readwrite(struct fid_ep *fep, const void *buf, size_t count, void *desc,
			    void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			    uint64_t key, enum fi_datatype dt, enum fi_op aop, void *context)
{
	(void)desc;
	(void)result_desc;
	return atomic_post(EP(fep), AT_FETCH, buf, count, NULL, result, dest, addr, key, dt, aop,
			   EP(fep)->tx_op_flags, context);
}

static ssize_t at_readwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
			     size_t count, struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			     enum fi_datatype dt, enum fi_op aop, void *context)
{
	(void)desc;
	(void)result_desc;
	if (count != 1 || result_count != 1 || !iov || !resultv)
		return -FI_EINVAL;
	return atomic_post(EP(fep), AT_FETCH, iov[0].addr, iov[0].count, NULL, resultv[0].addr,
			   dest, addr, key, dt, aop, EP(fep)->tx_op_flags, context);
}

static ssize_t at_readwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
			       struct fi_ioc *resultv, void **result_desc, size_t result_count,
			       uint64_t flags)
{
	(void)result_desc;
	if (!at_msg_ok(msg) || result_count != 1 || !resultv)
		return -FI_EINVAL;
	return atomic_post(EP(fep), AT_FETCH, msg->msg_iov[0].addr, msg->msg_iov[0].count, NULL,
			   resultv[0].addr, msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key,
			   msg->datatype, msg->op, flags & ~FFI_NO_COMPLETION, msg->context);
}

static ssize_t at_compwrite(struct fid_ep *fep, const void *buf, size_t count, void *desc,
			    const void *compare, void *compare_desc, void *result, void *result_desc,
			    fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			    enum fi_op aop, void *context)
{
	(void)desc;
	(void)compare_desc;
	(void)result_desc;
	return atomic_post(EP(fep), AT_COMPARE, buf, count, compare, result, dest, addr, key, dt,
			   aop, EP(fep)->tx_op_flags, context);
}

static ssize_t at_compwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
			     size_t count, const struct fi_ioc *comparev, void **compare_desc,
			     size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			     enum fi_datatype dt, enum fi_op aop, void *context)
{
	(void)desc;
	(void)compare_desc;
	(void)result_desc;
	if (count != 1 || compare_count != 1 || result_count != 1 || !iov || !comparev ||
	    !resultv)
		return -FI_EINVAL;
	return atomic_post(EP(fep), AT_COMPARE, iov[0].addr, iov[0].count, comparev[0].addr,
			   resultv[0].addr, dest, addr, key, dt, aop, EP(fep)->tx_op_flags, context);
}

static ssize_t at_compwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
			       const struct fi_ioc *comparev, void **compare_desc,
			       size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			       size_t result_count, uint64_t flags)
{
	(void)compare_desc;
	(void)result_desc;
	if (!at_msg_ok(msg) || compare_count != 1 || result_count != 1 || !comparev || !resultv)
		return -FI_EINVAL;
	return atomic_post(EP(fep), AT_COMPARE, msg->msg_iov[0].addr, msg->msg_iov[0].count,
			   comparev[0].addr, resultv[0].addr, msg->addr, msg->rma_iov[0].addr,
			   msg->rma_iov[0].key, msg->datatype, msg->op, flags & ~FFI_NO_COMPLETION,
			   msg->context);
}

static int valid(struct fid_ep *fep, enum fi_datatype dt, enum fi_op aop, size_t *count,
		 uint64_t flags)
{
	struct fi_atomic_attr a;
	int r;

	if (!(EP(fep)->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	r = ffi_query_atomic(&EP(fep)->dom->domain, dt, aop, &a, flags);
	if (!r && count)
		*count = a.count;
	return r;
}

static int at_writevalid(struct fid_ep *fep, enum fi_datatype dt, enum fi_op aop, size_t *count)
{
	return valid(fep, dt, aop, count, 0);
}

static int at_readwritevalid(struct fid_ep *fep, enum fi_datatype dt, enum fi_op aop,
			     size_t *count)
{
	return valid(fep, dt, aop, count, FI_FETCH_ATOMIC);
}

static int at_compwritevalid(struct fid_ep *fep, enum fi_datatype dt, enum fi_op aop,
			     size_t *count)
{
	return valid(fep, dt, aop, count, FI_COMPARE_ATOMIC);
}

struct fi_ops_atomic ffi_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = at_write,
	.writev = at_writev,
	.writemsg = at_writemsg,
	.inject = at_inject,
	.readwrite = at_readwrite,
	.readwritev = at_readwritev,
	.readwritemsg = at_readwritemsg,
	.compwrite = at_compwrite,
	.compwritev = at_compwritev,
	.compwritemsg = at_compwritemsg,
	.writevalid = at_writevalid,
	.readwritevalid = at_readwritevalid,
	.compwritevalid = at_compwritevalid,
};
