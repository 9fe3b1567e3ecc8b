/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric/cq.c - completion queues: a ring of completions that the bound endpoints'
 * progress fills (success and error entries in order; an error at the head makes
 * fi_cq_read return -FI_EAVAIL until fi_cq_readerr takes it). Blocking reads arm the
 * endpoints' falcon CQs and sleep in epoll on their notification fds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ffi.h"

/* A falcon completion status as a libfabric error (positive FI_E*). */
int ffi_err_of_status(uint32_t status)
{
	switch (status) {
	case FALCON_WC_SUCCESS: return 0;
	case FALCON_WC_LOC_LEN_ERR: return FI_ETRUNC;
	case FALCON_WC_LOC_PROT_ERR:
	case FALCON_WC_LOC_ACCESS_ERR:
	case FALCON_WC_REM_ACCESS_ERR: return FI_EACCES;
	case FALCON_WC_WR_FLUSH_ERR: return FI_ECANCELED;
	case FALCON_WC_REM_INV_REQ_ERR: return FI_EINVAL;
	case FALCON_WC_RETRY_EXC_ERR:
	case FALCON_WC_RNR_RETRY_EXC_ERR: return FI_ETIMEDOUT;
	case FALCON_WC_REM_OP_ERR: return FI_EREMOTEIO;
	default: return FI_EIO;
	}
}

uint32_t ffi_cq_room(const struct ffi_cq *cq)
{
	return cq ? cq->size - cq->count : UINT32_MAX;
}

/* Append one completion; the caller checked ffi_cq_room. */
void ffi_cq_push(struct ffi_cq *cq, const struct ffi_cqe *e)
{
	if (!cq || cq->count == cq->size)
		return;
	cq->ring[(cq->head + cq->count) % cq->size] = *e;
	cq->count++;
}

static void progress(struct ffi_cq *cq)
{
	for (unsigned i = 0; i < cq->neps; i++)
		ffi_ep_progress(cq->eps[i]);
}

static void copy_out(const struct ffi_cq *cq, void *buf, size_t i, const struct ffi_cqe *e)
{
	switch (cq->format) {
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *m = (struct fi_cq_msg_entry *)buf + i;

		m->op_context = e->e.op_context;
		m->flags = e->e.flags;
		m->len = e->e.len;
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *d = (struct fi_cq_data_entry *)buf + i;

		d->op_context = e->e.op_context;
		d->flags = e->e.flags;
		d->len = e->e.len;
		d->buf = e->e.buf;
		d->data = e->e.data;
		break;
	}
	case FI_CQ_FORMAT_TAGGED:
		((struct fi_cq_tagged_entry *)buf)[i] = e->e;
		break;
	default:
		((struct fi_cq_entry *)buf)[i].op_context = e->e.op_context;
		break;
	}
}

static ssize_t cq_readfrom_unlocked(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct ffi_cq *cq = (struct ffi_cq *)fcq;
	size_t n = 0;

	if (count && !buf)
		return -FI_EINVAL;
	progress(cq);
	if (cq->count && cq->ring[cq->head].err)
		return -FI_EAVAIL;
	while (n < count && cq->count && !cq->ring[cq->head].err) {
		const struct ffi_cqe *e = &cq->ring[cq->head];

		copy_out(cq, buf, n, e);
		if (src)
			src[n] = e->src;
		n++;
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	return n ? (ssize_t)n : -FI_EAGAIN;
}

/* cq_readfrom under the domain's lock (FI_THREAD_SAFE) */
static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct ffi_domain *d_ = ((struct ffi_cq *)fcq)->dom;
	ssize_t r_;

	ffi_lock(d_);
	r_ = cq_readfrom_unlocked(fcq, buf, count, src);
	ffi_unlock(d_);
	return r_;
}

static ssize_t cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	return cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t cq_readerr_unlocked(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct ffi_cq *cq = (struct ffi_cq *)fcq;
	const struct ffi_cqe *e;

	(void)flags;
	if (!buf)
		return -FI_EINVAL;
	if (!cq->count || !cq->ring[cq->head].err)
		return -FI_EAGAIN;
	e = &cq->ring[cq->head];
	buf->op_context = e->e.op_context;
	buf->flags = e->e.flags;
	buf->len = e->e.len;
	buf->buf = e->e.buf;
	buf->data = e->e.data;
	buf->tag = e->e.tag;
	buf->olen = e->olen;
	buf->err = e->err;
	buf->prov_errno = e->prov_errno;
	buf->err_data = NULL;
	if (FI_VERSION_GE(cq->dom->api_version, FI_VERSION(1, 5)))
		buf->err_data_size = 0;
	cq->head = (cq->head + 1) % cq->size;
	cq->count--;
	return 1;
}

/* cq_readerr under the domain's lock (FI_THREAD_SAFE) */
static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct ffi_domain *d_ = ((struct ffi_cq *)fcq)->dom;
	ssize_t r_;

	ffi_lock(d_);
	r_ = cq_readerr_unlocked(fcq, buf, flags);
	ffi_unlock(d_);
	return r_;
}

/* Wait until a completion is there, fi_cq_signal is called or timeout_ms passes
 * (< 0: no bound). */
static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src,
			    const void *cond, int timeout)
{
	struct ffi_cq *cq = (struct ffi_cq *)fcq;
	uint64_t t0 = ffi_now_ms();

	(void)cond;
	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_ENOSYS;
	for (;;) {
		struct epoll_event ev[FFI_BIND_MAX + 1];
		ssize_t r = cq_readfrom(fcq, buf, count, src);
		int wait_ms = timeout, n;
		uint64_t v;

		if (r != -FI_EAGAIN)
			return r;
		/* arm, then look once more: a completion before the arming is not announced */
		ffi_lock(cq->dom);
		for (unsigned i = 0; i < cq->neps; i++)
			falcon_req_notify_cq(cq->eps[i]->fcq, 0);
		ffi_unlock(cq->dom);
		r = cq_readfrom(fcq, buf, count, src);
		if (r != -FI_EAGAIN)
			return r;
		if (timeout >= 0) {
			uint64_t el = ffi_now_ms() - t0;

			if (el >= (uint64_t)timeout)
				return -FI_EAGAIN;
			wait_ms = timeout - (int)el;
		}
		n = epoll_wait(cq->epfd, ev, FFI_BIND_MAX + 1, wait_ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		ffi_lock(cq->dom);
		for (unsigned i = 0; i < cq->neps; i++)
			falcon_cq_ack_events(cq->eps[i]->fcq);
		ffi_unlock(cq->dom);
		if (read(cq->sigfd, &v, sizeof(v)) == sizeof(v))
			return -FI_EAGAIN; /* fi_cq_signal */
	}
}

static ssize_t cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond, int timeout)
{
	return cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fcq)
{
	struct ffi_cq *cq = (struct ffi_cq *)fcq;
	uint64_t one = 1;

	return write(cq->sigfd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

static const char *cq_strerror(struct fid_cq *fcq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	const char *s = falcon_wc_status_str((uint32_t)prov_errno);

	(void)fcq;
	(void)err_data;
	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

/* fi_trywait(3) on a CQ: 0 when the application may sleep on its wait fd (every bound
 * endpoint's falcon CQ armed, old notifications consumed, nothing to read), -FI_EAGAIN
 * when it has completions to read first. */
static int ffi_cq_trywait_unlocked(struct ffi_cq *cq)
{
	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	progress(cq);
	if (cq->count)
		return -FI_EAGAIN;
	for (unsigned i = 0; i < cq->neps; i++) {
		while (falcon_cq_ack_events(cq->eps[i]->fcq) == 0)
			;
		falcon_req_notify_cq(cq->eps[i]->fcq, 0);
	}
	/* what completed before the arming is not announced: look once more */
	progress(cq);
	return cq->count ? -FI_EAGAIN : 0;
}

/* ffi_cq_trywait under the domain's lock (FI_THREAD_SAFE) */
int ffi_cq_trywait(struct ffi_cq *cq)
{
	struct ffi_domain *d_ = cq->dom;
	int r_;

	ffi_lock(d_);
	r_ = ffi_cq_trywait_unlocked(cq);
	ffi_unlock(d_);
	return r_;
}

int ffi_cq_bind_ep(struct ffi_cq *cq, struct ffi_ep *ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ep };

	for (unsigned i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep)
			return 0;
	if (cq->neps == FFI_BIND_MAX)
		return -FI_ENOSPC;
	if (epoll_ctl(cq->epfd, EPOLL_CTL_ADD, falcon_cq_fd(ep->fcq), &ev) && errno != EEXIST)
		return -errno;
	cq->eps[cq->neps++] = ep;
	cq->refs++;
	return 0;
}

void ffi_cq_unbind_ep(struct ffi_cq *cq, struct ffi_ep *ep)
{
	for (unsigned i = 0; i < cq->neps; i++) {
		if (cq->eps[i] != ep)
			continue;
		epoll_ctl(cq->epfd, EPOLL_CTL_DEL, falcon_cq_fd(ep->fcq), NULL);
		cq->eps[i] = cq->eps[--cq->neps];
		cq->refs--;
		return;
	}
}

static int cq_close_unlocked(struct fid *fid)
{
	struct ffi_cq *cq = (struct ffi_cq *)fid;

	if (cq->refs)
		return -FI_EBUSY;
	close(cq->epfd);
	close(cq->sigfd);
	cq->dom->refs--;
	free(cq->ring);
	free(cq);
	return 0;
}

/* cq_close under the domain's lock (FI_THREAD_SAFE) */
static int cq_close(struct fid *fid)
{
	struct ffi_domain *d_ = ((struct ffi_cq *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = cq_close_unlocked(fid);
	ffi_unlock(d_);
	return r_;
}

static int cq_control_unlocked(struct fid *fid, int command, void *arg)
{
	struct ffi_cq *cq = (struct ffi_cq *)fid;

	if (command != FI_GETWAIT || cq->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (!arg)
		return -FI_EINVAL;
	/* the epoll fd polls readable when a bound endpoint's armed falcon CQ fires */
	for (unsigned i = 0; i < cq->neps; i++)
		falcon_req_notify_cq(cq->eps[i]->fcq, 0);
	*(int *)arg = cq->epfd;
	return 0;
}

/* cq_control under the domain's lock (FI_THREAD_SAFE) */
static int cq_control(struct fid *fid, int command, void *arg)
{
	struct ffi_domain *d_ = ((struct ffi_cq *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = cq_control_unlocked(fid, command, arg);
	ffi_unlock(d_);
	return r_;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = ffi_bind_nosys,
	.control = cq_control,
	.ops_open = ffi_ops_open_nosys,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static int ffi_cq_open_unlocked(struct fid_domain *domain, struct fi_cq_attr *attr,
			struct fid_cq **fcq,
		void *context)
{
	struct ffi_cq *cq;
	size_t size;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	if (!attr || !fcq)
		return -FI_EINVAL;
	size = attr->size ? attr->size : FFI_CQ_DEFAULT;
	if (size > FFI_CQ_MAX)
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	if (attr->flags & FI_AFFINITY)
		return -FI_ENOSYS;
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
	case FI_CQ_FORMAT_TAGGED:
		break;
	default:
		return -FI_ENOSYS;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->ring = calloc(size, sizeof(*cq->ring));
	cq->epfd = epoll_create1(EPOLL_CLOEXEC);
	cq->sigfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!cq->ring || cq->epfd < 0 || cq->sigfd < 0 ||
	    epoll_ctl(cq->epfd, EPOLL_CTL_ADD, cq->sigfd, &ev)) {
		int e = errno ? errno : ENOMEM;

		if (cq->epfd >= 0)
			close(cq->epfd);
		if (cq->sigfd >= 0)
			close(cq->sigfd);
		free(cq->ring);
		free(cq);
		return -e;
	}
	cq->size = (uint32_t)size;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->wait_obj = attr->wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : attr->wait_obj;
	cq->dom = (struct ffi_domain *)domain;
	cq->dom->refs++;
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &cq_fi_ops;
	cq->cq.ops = &cq_ops;
	*fcq = &cq->cq;
	return 0;
}

/* ffi_cq_open under the domain's lock (FI_THREAD_SAFE) */
int ffi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **fcq,
		void *context)
{
	struct ffi_domain *d_ = (struct ffi_domain *)domain;
	int r_;

	ffi_lock(d_);
	r_ = ffi_cq_open_unlocked(domain, attr, fcq, context);
	ffi_unlock(d_);
	return r_;
}
