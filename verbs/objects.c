/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verbs/objects.c - PDs, MRs, CQs and completion channels, SRQs, XRC domains, AHs over
 * their falcon counterparts. Completion channel: an epoll descriptor holding the
 * falcon_cq_fd of each CQ created on it, so that a program may poll(2) the channel's fd
 * and ibv_get_cq_event learns which CQ fired.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fv.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* ---- PD ---- */

FV_API struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct fv_pd *p = calloc(1, sizeof(*p));

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(p->fp = falcon_alloc_pd(fv_ctx(ctx)->fc))) {
		free(p);
		return NULL;
	}
	p->pd.context = ctx;
	return &p->pd;
}

FV_API int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct fv_pd *p = (struct fv_pd *)pd;
	int rc = falcon_dealloc_pd(p->fp);

	if (rc)
		return fv_errno(rc);
	free(p);
	return 0;
}

/* ---- MR ---- */

/* Verbs access bits as falcon's; -1 for what falcon lacks (on-demand paging, zero-based
 * addresses). The optional bits (relaxed ordering) are dropped, as verbs allows. */
static int access_of(unsigned a)
{
	unsigned f = 0;

	if (a & (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_ZERO_BASED))
		return -1;
	if (a & IBV_ACCESS_LOCAL_WRITE)
		f |= FALCON_ACCESS_LOCAL_WRITE;
	if (a & IBV_ACCESS_REMOTE_WRITE)
		f |= FALCON_ACCESS_REMOTE_WRITE;
	if (a & IBV_ACCESS_REMOTE_READ)
		f |= FALCON_ACCESS_REMOTE_READ;
	if (a & IBV_ACCESS_REMOTE_ATOMIC)
		f |= FALCON_ACCESS_REMOTE_ATOMIC;
	return (int)f;
}

FV_API struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				       unsigned int access)
{
	struct fv_pd *p = (struct fv_pd *)pd;
	int fa = access_of(access);
	struct fv_mr *m;

	if (fa < 0 || iova != (uintptr_t)addr) {
		errno = fa < 0 ? EOPNOTSUPP : EINVAL; /* no ODP, no IOVA other than the address */
		return NULL;
	}
	if (!(m = calloc(1, sizeof(*m)))) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(m->fm = falcon_reg_mr(p->fp, addr, len, (unsigned)fa))) {
		free(m);
		return NULL;
	}
	m->mr = (struct ibv_mr){ .context = pd->context, .pd = pd, .addr = addr, .length = len,
				 .lkey = m->fm->lkey, .rkey = m->fm->rkey };
	return &m->mr;
}

FV_API struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return ibv_reg_mr_iova2(pd, addr, len, (uintptr_t)addr, (unsigned)access);
}

FV_API struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				      int access)
{
	return ibv_reg_mr_iova2(pd, addr, len, iova, (unsigned)access);
}

FV_API struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t off, size_t len,
					uint64_t iova, int fd, int access)
{
	(void)pd, (void)off, (void)len, (void)iova, (void)fd, (void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

FV_API int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct fv_mr *m = (struct fv_mr *)mr;
	int rc = falcon_dereg_mr(m->fm);

	if (rc)
		return fv_errno(rc);
	free(m);
	return 0;
}

FV_API int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			size_t len, int access)
{
	(void)mr, (void)flags, (void)pd, (void)addr, (void)len, (void)access;
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

/* ---- completion channels and CQs ---- */

FV_API struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	if ((ch->fd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		free(ch);
		return NULL;
	}
	ch->context = ctx;
	return ch;
}

FV_API int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	if (ch->refcnt)
		return EBUSY;
	close(ch->fd);
	free(ch);
	return 0;
}

FV_API struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *ch, int comp_vector)
{
	struct fv_context *c = fv_ctx(ctx);
	struct fv_cq *q;

	if (cqe < 1 || (uint32_t)cqe > c->attr.max_cqe || comp_vector < 0 ||
	    comp_vector >= ctx->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	if (!(q = calloc(1, sizeof(*q)))) {
		errno = ENOMEM;
		return NULL;
	}
	/* falcon completes every send WR, verbs only the signaled: the completions of
	 * unsignaled WRs take room until poll_cq passes them, FV_CQ_SLACK more entries */
	if (!(q->fcq = falcon_create_cq(c->fc, (uint32_t)cqe + FV_CQ_SLACK > c->attr.max_cqe ?
					 (int)c->attr.max_cqe : cqe + (int)FV_CQ_SLACK)))
		goto fail;
	if (ch) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = q };

		if (epoll_ctl(ch->fd, EPOLL_CTL_ADD, falcon_cq_fd(q->fcq), &ev)) {
			int e = errno;

			falcon_destroy_cq(q->fcq);
			errno = e;
			goto fail;
		}
		ch->refcnt++;
	}
	q->cq.context = ctx;
	q->cq.channel = ch;
	q->cq.cq_context = cq_context;
	q->cq.cqe = cqe;
	pthread_mutex_init(&q->cq.mutex, NULL);
	pthread_cond_init(&q->cq.cond, NULL);
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_lock(&c->lock);
	q->next = c->cqs;
	c->cqs = q;
	pthread_mutex_unlock(&c->lock);
	return &q->cq;
fail:
	free(q);
	return NULL;
}

FV_API int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct fv_context *c = fv_ctx(cq->context);
	struct fv_cq *q = (struct fv_cq *)cq, **pp;
	int fd = falcon_cq_fd(q->fcq), rc;

	if (cq->channel)
		epoll_ctl(cq->channel->fd, EPOLL_CTL_DEL, fd, NULL);
	if ((rc = falcon_destroy_cq(q->fcq))) {
		if (cq->channel) {
			struct epoll_event ev = { .events = EPOLLIN, .data.ptr = q };

			epoll_ctl(cq->channel->fd, EPOLL_CTL_ADD, fd, &ev);
		}
		return fv_errno(rc);
	}
	if (cq->channel)
		cq->channel->refcnt--;
	pthread_mutex_lock(&c->lock);
	for (pp = &c->cqs; *pp && *pp != q; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = q->next;
	pthread_mutex_unlock(&c->lock);
	free(q);
	return 0;
}

FV_API int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	(void)cq, (void)cqe;
	return EOPNOTSUPP;
}

int fv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	int rc = falcon_req_notify_cq(((struct fv_cq *)cq)->fcq, solicited_only);

	return rc ? fv_errno(rc) : 0;
}

/* The next CQ with a notification; blocks unless the program made the channel's fd
 * non-blocking (then -1 and EAGAIN when none is there). */
FV_API int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
	int nb = fcntl(ch->fd, F_GETFL) & O_NONBLOCK;
	struct epoll_event ev;
	struct fv_cq *q;
	int n;

	for (;;) {
		n = epoll_wait(ch->fd, &ev, 1, nb ? 0 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EAGAIN;
			return -1;
		}
		q = ev.data.ptr;
		if (falcon_cq_ack_events(q->fcq) == 0)
			break;
	}
	*cq = &q->cq;
	*cq_context = q->cq.cq_context;
	return 0;
}

FV_API void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += n;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- XRC domains ---- */

/* The domain of this process (a file descriptor to share it with other processes is
 * taken and not used: falcon's XRC domains are per context). */
struct ibv_xrcd *fv_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	struct fv_xrcd *x;

	if (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)) {
		errno = EINVAL;
		return NULL;
	}
	if (!(x = calloc(1, sizeof(*x)))) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(x->fx = falcon_open_xrcd(fv_ctx(ctx)->fc))) {
		free(x);
		return NULL;
	}
	x->xrcd.context = ctx;
	return &x->xrcd;
}

int fv_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct fv_xrcd *x = (struct fv_xrcd *)xrcd;
	int rc = falcon_close_xrcd(x->fx);

	if (rc)
		return fv_errno(rc);
	free(x);
	return 0;
}

/* ---- SRQs ---- */

struct ibv_srq *fv_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *a)
{
	struct fv_context *c = fv_ctx(ctx);
	struct falcon_srq_init_attr fa = { .size = sizeof(fa) };
	enum ibv_srq_type t = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? a->srq_type : IBV_SRQT_BASIC;
	struct fv_srq *s;

	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || t == IBV_SRQT_TM ||
	    (t == IBV_SRQT_XRC && (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ||
				   !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ)))) {
		errno = t == IBV_SRQT_TM ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	if (a->attr.max_wr > c->attr.max_srq_wr || a->attr.max_sge > c->attr.max_srq_sge) {
		errno = EINVAL;
		return NULL;
	}
	fa.max_wr = a->attr.max_wr ? a->attr.max_wr : 1;
	fa.max_sge = a->attr.max_sge ? a->attr.max_sge : 1;
	if (t == IBV_SRQT_XRC) {
		fa.xrcd = ((struct fv_xrcd *)a->xrcd)->fx;
		fa.cq = ((struct fv_cq *)a->cq)->fcq;
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(s->fs = falcon_create_srq(((struct fv_pd *)a->pd)->fp, &fa))) {
		free(s);
		return NULL;
	}
	s->srq.context = ctx;
	s->srq.srq_context = a->srq_context;
	s->srq.pd = a->pd;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	s->type = t;
	s->srq_num = falcon_srq_num(s->fs);
	a->attr.max_wr = fa.max_wr;
	a->attr.max_sge = fa.max_sge;
	return &s->srq;
}

FV_API struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *a)
{
	struct ibv_srq_init_attr_ex x = { .srq_context = a->srq_context, .attr = a->attr,
					  .comp_mask = IBV_SRQ_INIT_ATTR_PD, .pd = pd };
	struct ibv_srq *s = fv_create_srq_ex(pd->context, &x);

	if (s)
		a->attr = x.attr;
	return s;
}

int fv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	*srq_num = ((struct fv_srq *)srq)->srq_num;
	return 0;
}

FV_API int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct fv_srq *s = (struct fv_srq *)srq;
	int rc = falcon_destroy_srq(s->fs);

	if (rc)
		return fv_errno(rc);
	free(s);
	return 0;
}

FV_API int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	(void)srq, (void)attr;
	/* no SRQ limit event, no resize */
	return mask ? EOPNOTSUPP : 0;
}

FV_API int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct fv_context *c = fv_ctx(srq->context);

	attr->max_wr = c->attr.max_srq_wr;
	attr->max_sge = c->attr.max_srq_sge;
	attr->srq_limit = 0;
	return 0;
}

_Static_assert(sizeof(struct ibv_recv_wr) == sizeof(struct falcon_recv_wr) &&
	       __builtin_offsetof(struct ibv_recv_wr, next) ==
	       __builtin_offsetof(struct falcon_recv_wr, next) &&
	       __builtin_offsetof(struct ibv_recv_wr, sg_list) ==
	       __builtin_offsetof(struct falcon_recv_wr, sg_list) &&
	       __builtin_offsetof(struct ibv_recv_wr, num_sge) ==
	       __builtin_offsetof(struct falcon_recv_wr, num_sge) &&
	       sizeof(struct ibv_sge) == sizeof(struct falcon_sge),
	       "a verbs receive WR list is a falcon one");

int fv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int rc = falcon_post_srq_recv(((struct fv_srq *)srq)->fs, (struct falcon_recv_wr *)wr,
				      (struct falcon_recv_wr **)bad);

	return rc ? fv_errno(rc) : 0;
}

/* ---- address handles ---- */

/* An AH naming a GID (is_global) opens a connection to the daemon at that address; one
 * naming a LID takes it as the number falcond gave the sending daemon of a UD receive
 * (ibv_wc.slid, as ibv_init_ah_from_wc fills it). */
static struct falcon_ah *ah_of(struct fv_context *c, struct fv_pd *p, const struct ibv_ah_attr *a)
{
	char host[80];
	int rc;

	if (a->is_global) {
		if ((rc = fv_gid_to_host(c, &a->grh.dgid, host, sizeof(host)))) {
			errno = rc;
			return NULL;
		}
		return falcon_create_ah(p->fp, host, -1);
	}
	if (!a->dlid) {
		errno = EINVAL;
		return NULL;
	}
	struct falcon_wc w = { .status = FALCON_WC_SUCCESS, .opcode = FALCON_WC_RECV,
			       .src_id = a->dlid };
	return falcon_create_ah_from_wc(p->fp, &w, -1);
}

FV_API struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct fv_ah *h = calloc(1, sizeof(*h));

	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(h->fa = ah_of(fv_ctx(pd->context), (struct fv_pd *)pd, attr))) {
		free(h);
		return NULL;
	}
	h->ah.context = pd->context;
	h->ah.pd = pd;
	return &h->ah;
}

FV_API int ibv_destroy_ah(struct ibv_ah *ah)
{
	struct fv_ah *h = (struct fv_ah *)ah;
	int rc = falcon_destroy_ah(h->fa);

	if (rc)
		return fv_errno(rc);
	free(h);
	return 0;
}

FV_API int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port, struct ibv_wc *wc,
			       struct ibv_grh *grh, struct ibv_ah_attr *ah)
{
	(void)ctx, (void)grh;
	if (!wc->slid) {
		errno = ENOENT;
		return -1;
	}
	memset(ah, 0, sizeof(*ah));
	ah->dlid = wc->slid;
	ah->port_num = port;
	return 0;
}

FV_API struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					    struct ibv_grh *grh, uint8_t port)
{
	struct ibv_ah_attr a;

	if (ibv_init_ah_from_wc(pd->context, port, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}

/* ---- multicast, memory windows: not in falcon ---- */

FV_API int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp, (void)gid, (void)lid;
	return EOPNOTSUPP;
}

FV_API int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp, (void)gid, (void)lid;
	return EOPNOTSUPP;
}
