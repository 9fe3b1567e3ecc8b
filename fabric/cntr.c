/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric/cntr.c - counters (fi_cntr(3)): a success and an error count that the bound
 * endpoints' completions raise, whatever FI_SELECTIVE_COMPLETION says of their CQ
 * entries. Bound with FI_SEND, FI_RECV, FI_READ, FI_WRITE (the endpoint's own
 * operations) or FI_REMOTE_WRITE (a remote write the provider sees: fi_writedata's, which
 * carry CQ data; a plain RDMA WRITE lands without the target's provider knowing).
 * Reading a counter progresses its endpoints; fi_cntr_wait sleeps on their falcon CQs'
 * notification fds and on the counter's own eventfd (fi_cntr_add / set wake it), which
 * is also its FI_WAIT_FD.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ffi.h"

static void cntr_progress(struct ffi_cntr *c)
{
	for (unsigned i = 0; i < c->neps; i++)
		ffi_ep_progress(c->eps[i]);
}

static void wake(struct ffi_cntr *c)
{
	uint64_t one = 1;

	if (write(c->evfd, &one, sizeof(one)) < 0)
		(void)0; /* the eventfd is saturated: it is readable anyway */
}

static void bump(struct ffi_cntr *c, bool err)
{
	if (!c)
		return;
	if (err)
		c->err++;
	else
		c->value++;
	wake(c);
}

/* A completion of the endpoint with these CQ flags (FI_SEND, FI_RECV, FI_READ / FI_WRITE
 * with FI_RMA or FI_ATOMIC, FI_REMOTE_WRITE): the counters bound for it go up. */
void ffi_count(struct ffi_ep *ep, uint64_t flags, bool err)
{
	if (flags & FI_REMOTE_WRITE)
		bump(ep->cntr_rwrite, err);
	else if (flags & FI_SEND)
		bump(ep->cntr_send, err);
	else if (flags & FI_RECV)
		bump(ep->cntr_recv, err);
	else if (flags & FI_READ)
		bump(ep->cntr_read, err);
	else if (flags & FI_WRITE)
		bump(ep->cntr_write, err);
}

static uint64_t cntr_read_unlocked(struct fid_cntr *fc)
{
	struct ffi_cntr *c = (struct ffi_cntr *)fc;

	cntr_progress(c);
	return c->value;
}

/* cntr_read under the domain's lock (FI_THREAD_SAFE) */
static uint64_t cntr_read(struct fid_cntr *fc)
{
	struct ffi_domain *d_ = ((struct ffi_cntr *)fc)->dom;
	uint64_t r_;

	ffi_lock(d_);
	r_ = cntr_read_unlocked(fc);
	ffi_unlock(d_);
	return r_;
}

static uint64_t cntr_readerr_unlocked(struct fid_cntr *fc)
{
	struct ffi_cntr *c = (struct ffi_cntr *)fc;

	cntr_progress(c);
	return c->err;
}

/* cntr_readerr under the domain's lock (FI_THREAD_SAFE) */
static uint64_t cntr_readerr(struct fid_cntr *fc)
{
	struct ffi_domain *d_ = ((struct ffi_cntr *)fc)->dom;
	uint64_t r_;

	ffi_lock(d_);
	r_ = cntr_readerr_unlocked(fc);
	ffi_unlock(d_);
	return r_;
}

static int cntr_add_unlocked(struct fid_cntr *fc, uint64_t v)
{
	struct ffi_cntr *c = (struct ffi_cntr *)fc;

	c->value += v;
	wake(c);
	return 0;
}

/* cntr_add under the domain's lock (FI_THREAD_SAFE) */
static int cntr_add(struct fid_cntr *fc, uint64_t v)
{
	struct ffi_domain *d_ = ((struct ffi_cntr *)fc)->dom;
	int r_;

	ffi_lock(d_);
	r_ = cntr_add_unlocked(fc, v);
	ffi_unlock(d_);
	return r_;
}

static int cntr_set_unlocked(struct fid_cntr *fc, uint64_t v)
{
	struct ffi_cntr *c = (struct ffi_cntr *)fc;

	c->value = v;
	wake(c);
	return 0;
}

/* cntr_set under the domain's lock (FI_THREAD_SAFE) */
static int cntr_set(struct fid_cntr *fc, uint64_t v)
{
	struct ffi_domain *d_ = ((struct ffi_cntr *)fc)->dom;
	int r_;

	ffi_lock(d_);
	r_ = cntr_set_unlocked(fc, v);
	ffi_unlock(d_);
	return r_;
}

static int cntr_adderr_unlocked(struct fid_cntr *fc, uint64_t v)
{
	struct ffi_cntr *c = (struct ffi_cntr *)fc;

	c->err += v;
	wake(c);
	return 0;
}

/* cntr_adderr under the domain's lock (FI_THREAD_SAFE) */
static int cntr_adderr(struct fid_cntr *fc, uint64_t v)
{
	struct ffi_domain *d_ = ((struct ffi_cntr *)fc)->dom;
	int r_;

	ffi_lock(d_);
	r_ = cntr_adderr_unlocked(fc, v);
	ffi_unlock(d_);
	return r_;
}

static int cntr_seterr_unlocked(struct fid_cntr *fc, uint64_t v)
{
	struct ffi_cntr *c = (struct ffi_cntr *)fc;

	c->err = v;
	wake(c);
	return 0;
}

/* cntr_seterr under the domain's lock (FI_THREAD_SAFE) */
static int cntr_seterr(struct fid_cntr *fc, uint64_t v)
{
	struct ffi_domain *d_ = ((struct ffi_cntr *)fc)->dom;
	int r_;

	ffi_lock(d_);
	r_ = cntr_seterr_unlocked(fc, v);
	ffi_unlock(d_);
	return r_;
}

/* Until the count reaches threshold (0), an error is counted (-FI_EAVAIL) or timeout ms
 * pass (-FI_ETIMEDOUT; < 0: no bound). */
static int cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
	struct ffi_cntr *c = (struct ffi_cntr *)fc;
	uint64_t t0 = ffi_now_ms(), err0 = c->err;

	if (c->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	for (;;) {
		struct epoll_event ev[FFI_BIND_MAX + 1];
		int wait_ms = timeout, n, r = 1;
		uint64_t v;

		ffi_lock(c->dom);
		cntr_progress(c);
		if (c->value >= threshold) {
			r = 0;
		} else if (c->err != err0) {
			r = -FI_EAVAIL;
		} else {
			for (unsigned i = 0; i < c->neps; i++)
				falcon_req_notify_cq(c->eps[i]->fcq, 0);
			cntr_progress(c); /* what came before the arming is not announced */
			if (c->value >= threshold)
				r = 0;
		}
		ffi_unlock(c->dom);
		if (r <= 0)
			return r;
		if (timeout >= 0) {
			uint64_t el = ffi_now_ms() - t0;

			if (el >= (uint64_t)timeout)
				return -FI_ETIMEDOUT;
			wait_ms = timeout - (int)el;
		}
		n = epoll_wait(c->epfd, ev, FFI_BIND_MAX + 1, wait_ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		ffi_lock(c->dom);
		for (unsigned i = 0; i < c->neps; i++)
			falcon_cq_ack_events(c->eps[i]->fcq);
		ffi_unlock(c->dom);
		if (read(c->evfd, &v, sizeof(v)) < 0)
			(void)0; /* nothing added */
	}
}

int ffi_cntr_bind_ep(struct ffi_cntr *c, struct ffi_ep *ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ep };

	for (unsigned i = 0; i < c->neps; i++)
		if (c->eps[i] == ep)
			return 0;
	if (c->neps == FFI_BIND_MAX)
		return -FI_ENOSPC;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, falcon_cq_fd(ep->fcq), &ev) && errno != EEXIST)
		return -errno;
	c->eps[c->neps++] = ep;
	c->refs++;
	return 0;
}

void ffi_cntr_unbind_ep(struct ffi_cntr *c, struct ffi_ep *ep)
{
	for (unsigned i = 0; i < c->neps; i++) {
		if (c->eps[i] != ep)
			continue;
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, falcon_cq_fd(ep->fcq), NULL);
		c->eps[i] = c->eps[--c->neps];
		c->refs--;
		return;
	}
}

static int cntr_close_unlocked(struct fid *fid)
{
	struct ffi_cntr *c = (struct ffi_cntr *)fid;

	if (c->refs)
		return -FI_EBUSY;
	close(c->epfd);
	close(c->evfd);
	c->dom->refs--;
	free(c);
	return 0;
}

/* cntr_close under the domain's lock (FI_THREAD_SAFE) */
static int cntr_close(struct fid *fid)
{
	struct ffi_domain *d_ = ((struct ffi_cntr *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = cntr_close_unlocked(fid);
	ffi_unlock(d_);
	return r_;
}

static int cntr_control_unlocked(struct fid *fid, int command, void *arg)
{
	struct ffi_cntr *c = (struct ffi_cntr *)fid;

	if (command != FI_GETWAIT || c->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (!arg)
		return -FI_EINVAL;
	for (unsigned i = 0; i < c->neps; i++)
		falcon_req_notify_cq(c->eps[i]->fcq, 0);
	*(int *)arg = c->epfd;
	return 0;
}

/* cntr_control under the domain's lock (FI_THREAD_SAFE) */
static int cntr_control(struct fid *fid, int command, void *arg)
{
	struct ffi_domain *d_ = ((struct ffi_cntr *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = cntr_control_unlocked(fid, command, arg);
	ffi_unlock(d_);
	return r_;
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = ffi_bind_nosys,
	.control = cntr_control,
	.ops_open = ffi_ops_open_nosys,
};

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

/* fi_cntr_open: completion events only, FI_WAIT_NONE / UNSPEC / FD. */
static int ffi_cntr_open_unlocked(struct fid_domain *domain, struct fi_cntr_attr *attr,
			struct fid_cntr **fc,
		  void *context)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct ffi_cntr *c;
	enum fi_wait_obj w = attr ? attr->wait_obj : FI_WAIT_UNSPEC;

	if (!fc)
		return -FI_EINVAL;
	if (attr && (attr->events != FI_CNTR_EVENTS_COMP || attr->flags))
		return -FI_ENOSYS;
	if (w != FI_WAIT_NONE && w != FI_WAIT_UNSPEC && w != FI_WAIT_FD)
		return -FI_ENOSYS;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->epfd < 0 || c->evfd < 0 || epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->evfd, &ev)) {
		int e = errno ? errno : ENOMEM;

		if (c->epfd >= 0)
			close(c->epfd);
		if (c->evfd >= 0)
			close(c->evfd);
		free(c);
		return -e;
	}
	c->wait_obj = w == FI_WAIT_UNSPEC ? FI_WAIT_FD : w;
	c->dom = (struct ffi_domain *)domain;
	c->dom->refs++;
	c->cntr.fid.fclass = FI_CLASS_CNTR;
	c->cntr.fid.context = context;
	c->cntr.fid.ops = &cntr_fi_ops;
	c->cntr.ops = &cntr_ops;
	*fc = &c->cntr;
	return 0;
}

/* ffi_cntr_open under the domain's lock (FI_THREAD_SAFE) */
int ffi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **fc,
		  void *context)
{
	struct ffi_domain *d_ = (struct ffi_domain *)domain;
	int r_;

	ffi_lock(d_);
	r_ = ffi_cntr_open_unlocked(domain, attr, fc, context);
	ffi_unlock(d_);
	return r_;
}
