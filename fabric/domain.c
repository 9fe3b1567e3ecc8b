/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric/domain.c - the domain (a falcon context and PD), memory regions, the address
 * vector and its cache of address handles, and which atomics the provider has.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffi.h"

/* ---- address handles: one per peer daemon, shared by AV entries and RDM peers ---- */

/* The AH for a's daemon, created on first use (falcon_create_ah waits for the peer
 * daemon's answer). NULL and errno: EINVAL (a bad address) or falcon_create_ah's. */
struct ffi_ah *ffi_ah_get(struct ffi_domain *dom, const struct ffi_addr *a)
{
	char host[64];
	struct ffi_ah *h;

	if (ffi_addr_host(a, host, sizeof(host))) {
		errno = EINVAL;
		return NULL;
	}
	LIST_FOREACH(h, &dom->ahs, link)
		if (!strcmp(h->host, host))
			return h;
	h = calloc(1, sizeof(*h));
	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	snprintf(h->host, sizeof(h->host), "%s", host);
	h->ah = falcon_create_ah(dom->pd, host, -1);
	if (!h->ah) {
		int e = errno;

		FFI_WARN(FI_LOG_AV, "falcon_create_ah %s: %s\n", host, falcon_strerror(-e));
		free(h);
		errno = e;
		return NULL;
	}
	LIST_INSERT_HEAD(&dom->ahs, h, link);
	return h;
}

int ffi_addr_cmp(const struct ffi_addr *a, const struct ffi_addr *b)
{
	int c;

	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	c = memcmp(a->ip, b->ip, sizeof(a->ip));
	if (c)
		return c;
	if (a->cm_port != b->cm_port)
		return a->cm_port < b->cm_port ? -1 : 1;
	if (a->qpn != b->qpn)
		return a->qpn < b->qpn ? -1 : 1;
	return 0;
}

/* ---- memory regions ---- */

static int mr_close_unlocked(struct fid *fid)
{
	struct ffi_mr *mr = (struct ffi_mr *)fid;
	int r = falcon_dereg_mr(mr->fmr);

	if (r)
		return r;
	LIST_REMOVE(mr, link);
	mr->dom->refs--;
	free(mr);
	return 0;
}

/* mr_close under the domain's lock (FI_THREAD_SAFE) */
static int mr_close(struct fid *fid)
{
	struct ffi_domain *d_ = ((struct ffi_mr *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = mr_close_unlocked(fid);
	ffi_unlock(d_);
	return r_;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = ffi_bind_nosys,
	.control = ffi_control_nosys,
	.ops_open = ffi_ops_open_nosys,
};

static int mr_reg_unlocked(struct fid *fid, const void *buf, size_t len, uint64_t access,
			uint64_t offset,
		  uint64_t requested_key, uint64_t flags, struct fid_mr **fmr, void *context)
{
	struct ffi_domain *dom = (struct ffi_domain *)fid;
	unsigned fa = FALCON_ACCESS_LOCAL_WRITE;
	struct ffi_mr *mr;

	(void)offset;
	(void)requested_key; /* FI_MR_PROV_KEY: the key is falcon's rkey */
	if (flags)
		return -FI_EBADFLAGS;
	if (!len || !buf || !fmr)
		return -FI_EINVAL;
	if (access & FI_REMOTE_READ)
		fa |= FALCON_ACCESS_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)
		fa |= FALCON_ACCESS_REMOTE_WRITE | FALCON_ACCESS_REMOTE_ATOMIC;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->fmr = falcon_reg_mr(dom->pd, (void *)buf, len, fa);
	if (!mr->fmr) {
		int e = errno;

		free(mr);
		return -e;
	}
	mr->dom = dom;
	mr->access = access;
	LIST_INSERT_HEAD(&dom->mrs, mr, link);
	mr->mr.fid.fclass = FI_CLASS_MR;
	mr->mr.fid.context = context;
	mr->mr.fid.ops = &mr_fi_ops;
	mr->mr.mem_desc = mr;
	mr->mr.key = mr->fmr->rkey;
	dom->refs++;
	*fmr = &mr->mr;
	return 0;
}

/* mr_reg under the domain's lock (FI_THREAD_SAFE) */
static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		  uint64_t requested_key, uint64_t flags, struct fid_mr **fmr, void *context)
{
	struct ffi_domain *d_ = (struct ffi_domain *)fid;
	int r_;

	ffi_lock(d_);
	r_ = mr_reg_unlocked(fid, buf, len, access, offset, requested_key, flags, fmr, context);
	ffi_unlock(d_);
	return r_;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		   void *context)
{
	if (count != 1 || !iov)
		return -FI_EINVAL; /* mr_iov_limit 1 */
	return mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset, requested_key, flags,
		      mr, context);
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		      struct fid_mr **mr)
{
	if (!attr || attr->iov_count != 1 || !attr->mr_iov)
		return -FI_EINVAL;
	return mr_reg(fid, attr->mr_iov[0].iov_base, attr->mr_iov[0].iov_len, attr->access,
		      attr->offset, attr->requested_key, flags, mr, attr->context);
}

static struct fi_ops_mr mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};

/* ---- address vector ---- */

const struct ffi_av_entry *ffi_av_get(struct ffi_av *av, fi_addr_t fa)
{
	if (!av || fa >= av->cap || !av->tab[fa].used)
		return NULL;
	return &av->tab[fa];
}

/* The AH of an entry (DGRAM sends), made on first use: NULL and errno. */
struct ffi_ah *ffi_av_ah(struct ffi_av *av, fi_addr_t fa)
{
	if (!av || fa >= av->cap || !av->tab[fa].used) {
		errno = EINVAL;
		return NULL;
	}
	if (!av->tab[fa].ah)
		av->tab[fa].ah = ffi_ah_get(av->dom, &av->tab[fa].addr);
	return av->tab[fa].ah;
}

fi_addr_t ffi_av_find(struct ffi_av *av, const struct ffi_addr *a)
{
	if (!av)
		return FI_ADDR_NOTAVAIL;
	for (size_t i = 0; i < av->cap; i++)
		if (av->tab[i].used && !ffi_addr_cmp(&av->tab[i].addr, a))
			return i;
	return FI_ADDR_NOTAVAIL;
}

/* A free slot of av (grown as needed): its index, or av->cap when none can be had. */
static size_t av_slot(struct ffi_av *av)
{
	size_t ncap, old = av->cap;
	struct ffi_av_entry *t;

	for (size_t j = 0; j < av->cap; j++)
		if (!av->tab[j].used)
			return j;
	ncap = av->cap ? av->cap * 2 : 16;
	if (ncap > FFI_AV_MAX || !(t = realloc(av->tab, ncap * sizeof(*t))))
		return av->cap;
	memset(t + old, 0, (ncap - old) * sizeof(*t));
	av->tab = t;
	av->cap = ncap;
	return old;
}

static int resolve_ms(void)
{
	int ms = 0;

	if (fi_param_get_int(&ffi_prov, "resolve_ms", &ms) || ms <= 0)
		ms = FFI_RESOLVE_MS;
	return ms;
}

/* Insert a (resolving it first when only its node and service are known): its fi_addr,
 * or FI_ADDR_NOTAVAIL (a bad address, no answer from its name socket, a full AV). */
static fi_addr_t av_add(struct ffi_av *av, const struct ffi_addr *in)
{
	struct ffi_addr a = *in;
	uint16_t svc = 0;
	char host[64];
	size_t slot;

	if (a.flags & FFI_AF_SVC) {
		svc = (uint16_t)a.qpn;
		if (ffi_name_resolve(in, resolve_ms(), &a, &svc)) {
			FFI_WARN(FI_LOG_AV, "no endpoint answers at port %u\n", svc);
			return FI_ADDR_NOTAVAIL;
		}
	}
	/* the AH (falcond's session with the peer's daemon) is made on first use, not
	 * here: an MPI job inserts every rank's address, and a daemon that does not answer
	 * (under psp: one whose allow-list lacks this daemon's key, its own included)
	 * would hold up the insert for every such entry */
	if (ffi_addr_host(&a, host, sizeof(host)))
		return FI_ADDR_NOTAVAIL;
	slot = av_slot(av);
	if (slot == av->cap)
		return FI_ADDR_NOTAVAIL;
	av->tab[slot] = (struct ffi_av_entry){ .addr = a, .svc = svc, .ah = NULL, .used = true };
	av->count++;
	return slot;
}

static int av_insert_unlocked(struct fid_av *fav, const void *addr, size_t count,
			fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	struct ffi_av *av = (struct ffi_av *)fav;
	size_t stride = ffi_addrlen(av->dom->addr_format);
	int done = 0;

	(void)context;
	if (flags)
		return -FI_EBADFLAGS;
	if (count && !addr)
		return -FI_EINVAL; /* fi_av(3): the addresses are the caller's to give */
	for (size_t i = 0; i < count; i++) {
		struct ffi_addr a;
		fi_addr_t fa = FI_ADDR_NOTAVAIL;

		if (!ffi_addr_from(av->dom->addr_format, (const uint8_t *)addr + i * stride, &a))
			fa = av_add(av, &a);
		if (fi_addr)
			fi_addr[i] = fa;
		done += fa != FI_ADDR_NOTAVAIL;
	}
	return done;
}

/* av_insert under the domain's lock (FI_THREAD_SAFE) */
static int av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	struct ffi_domain *d_ = ((struct ffi_av *)fav)->dom;
	int r_;

	ffi_lock(d_);
	r_ = av_insert_unlocked(fav, addr, count, fi_addr, flags, context);
	ffi_unlock(d_);
	return r_;
}

/* node:service names an endpoint's name socket (name.c): the address it answers. */
static int av_insertsvc_unlocked(struct fid_av *fav, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct ffi_av *av = (struct ffi_av *)fav;
	struct ffi_addr a;
	fi_addr_t fa;

	(void)context;
	if (flags)
		return -FI_EBADFLAGS;
	if (!node || !service || ffi_addr_of_node(node, service, av->dom->self.family, &a) ||
	    !a.qpn)
		return -FI_EINVAL;
	fa = av_add(av, &a);
	if (fi_addr)
		*fi_addr = fa;
	return fa != FI_ADDR_NOTAVAIL;
}

/* av_insertsvc under the domain's lock (FI_THREAD_SAFE) */
static int av_insertsvc(struct fid_av *fav, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct ffi_domain *d_ = ((struct ffi_av *)fav)->dom;
	int r_;

	ffi_lock(d_);
	r_ = av_insertsvc_unlocked(fav, node, service, fi_addr, flags, context);
	ffi_unlock(d_);
	return r_;
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
			size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	(void)av;
	(void)node;
	(void)nodecnt;
	(void)service;
	(void)svccnt;
	(void)fi_addr;
	(void)flags;
	(void)context;
	return -FI_ENOSYS;
}

static int av_remove_unlocked(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct ffi_av *av = (struct ffi_av *)fav;

	(void)flags;
	if (count && !fi_addr)
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++) {
		if (!ffi_av_get(av, fi_addr[i]))
			return -FI_EINVAL;
		av->tab[fi_addr[i]].used = false;
		av->count--;
	}
	return 0;
}

/* av_remove under the domain's lock (FI_THREAD_SAFE) */
static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct ffi_domain *d_ = ((struct ffi_av *)fav)->dom;
	int r_;

	ffi_lock(d_);
	r_ = av_remove_unlocked(fav, fi_addr, count, flags);
	ffi_unlock(d_);
	return r_;
}

static int av_lookup_unlocked(struct fid_av *fav, fi_addr_t fa, void *addr, size_t *addrlen)
{
	const struct ffi_av_entry *e = ffi_av_get((struct ffi_av *)fav, fa);
	size_t n;

	uint8_t out[sizeof(struct sockaddr_in6) + sizeof(struct ffi_addr)];
	size_t len;

	if (!e || !addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	len = ffi_addrlen(((struct ffi_av *)fav)->dom->addr_format);
	ffi_addr_to(((struct ffi_av *)fav)->dom->addr_format, &e->addr, e->svc, out);
	n = *addrlen < len ? *addrlen : len;
	if (n)
		memcpy(addr, out, n);
	*addrlen = len;
	return 0;
}

/* av_lookup under the domain's lock (FI_THREAD_SAFE) */
static int av_lookup(struct fid_av *fav, fi_addr_t fa, void *addr, size_t *addrlen)
{
	struct ffi_domain *d_ = ((struct ffi_av *)fav)->dom;
	int r_;

	ffi_lock(d_);
	r_ = av_lookup_unlocked(fav, fa, addr, addrlen);
	ffi_unlock(d_);
	return r_;
}

static const char *av_straddr(struct fid_av *fav, const void *addr, char *buf, size_t *len)
{
	struct ffi_av *av = (struct ffi_av *)fav;
	struct ffi_addr a;
	char host[64], s[96];
	int n;

	if (!addr || !len || (*len && !buf))
		return NULL;
	if (ffi_addr_from(av->dom->addr_format, addr, &a) || ffi_addr_host(&a, host, sizeof(host)))
		snprintf(host, sizeof(host), "?");
	if (a.flags & FFI_AF_SVC) /* the name socket's address: host without the CM port */
		n = snprintf(s, sizeof(s), "falcon://%s/svc%u", host, a.qpn);
	else
		n = snprintf(s, sizeof(s), "falcon://%s/qp%u", host, a.qpn);
	if (*len)
		snprintf(buf, *len, "%s", s);
	*len = (size_t)n + 1;
	return buf;
}

static int av_set_nosys(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **set,
			void *context)
{
	(void)av;
	(void)attr;
	(void)set;
	(void)context;
	return -FI_ENOSYS;
}

static int av_close_unlocked(struct fid *fid)
{
	struct ffi_av *av = (struct ffi_av *)fid;

	if (av->refs)
		return -FI_EBUSY;
	av->dom->refs--;
	free(av->tab);
	free(av);
	return 0;
}

/* av_close under the domain's lock (FI_THREAD_SAFE) */
static int av_close(struct fid *fid)
{
	struct ffi_domain *d_ = ((struct ffi_av *)fid)->dom;
	int r_;

	ffi_lock(d_);
	r_ = av_close_unlocked(fid);
	ffi_unlock(d_);
	return r_;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = ffi_bind_nosys,
	.control = ffi_control_nosys,
	.ops_open = ffi_ops_open_nosys,
};

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = av_set_nosys,
};

static int av_open_unlocked(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **fav,
		   void *context)
{
	struct ffi_av *av;

	if (!attr || !fav)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE && attr->type != FI_AV_MAP)
		return -FI_EINVAL;
	if (attr->flags || attr->name || attr->rx_ctx_bits)
		return -FI_ENOSYS; /* no events, no named (shared) AVs, no scalable endpoints */
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = (struct ffi_domain *)domain;
	av->type = attr->type == FI_AV_MAP ? FI_AV_MAP : FI_AV_TABLE;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = context;
	av->av.fid.ops = &av_fi_ops;
	av->av.ops = &av_ops;
	av->dom->refs++;
	*fav = &av->av;
	return 0;
}

/* av_open under the domain's lock (FI_THREAD_SAFE) */
static int av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **fav,
		   void *context)
{
	struct ffi_domain *d_ = (struct ffi_domain *)domain;
	int r_;

	ffi_lock(d_);
	r_ = av_open_unlocked(domain, attr, fav, context);
	ffi_unlock(d_);
	return r_;
}

/* ---- atomics: every op x datatype of ofi_rxm, native where falcon has the instruction
 * (atomic.c) ---- */

/* fi_query_atomic(3): -FI_EOPNOTSUPP for what ffi_atomic_valid refuses; the count is
 * what one emulated atomic carries (FFI_ATOMIC_MAX bytes of operands). */
int ffi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
		     struct fi_atomic_attr *attr, uint64_t flags)
{
	int kind = flags & FI_COMPARE_ATOMIC ? FFI_AT_COMPARE :
		   flags & FI_FETCH_ATOMIC ? FFI_AT_FETCH : FFI_AT_WRITE;

	(void)domain;
	if ((flags & FI_COMPARE_ATOMIC) && (flags & FI_FETCH_ATOMIC))
		return -FI_EINVAL;
	if (!ffi_atomic_valid(datatype, op, kind))
		return -FI_EOPNOTSUPP;
	if (attr) {
		attr->size = ffi_atomic_dtsize(datatype);
		attr->count = FFI_ATOMIC_MAX / attr->size;
	}
	return 0;
}

/* ---- the domain ---- */

static int domain_close(struct fid *fid)
{
	struct ffi_domain *dom = (struct ffi_domain *)fid;
	struct ffi_ah *h;

	if (dom->refs)
		return -FI_EBUSY;
	while ((h = LIST_FIRST(&dom->ahs))) {
		LIST_REMOVE(h, link);
		falcon_destroy_ah(h->ah);
		free(h);
	}
	falcon_close(dom->ctx); /* frees the PD too */
	pthread_mutex_destroy(&dom->lock);
	free(dom);
	return 0;
}

static int domain_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			      struct fid_ep **sep, void *context)
{
	(void)domain;
	(void)info;
	(void)sep;
	(void)context;
	return -FI_ENOSYS;
}

static int domain_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			    struct fid_poll **pollset)
{
	(void)domain;
	(void)attr;
	(void)pollset;
	return -FI_ENOSYS;
}

static int domain_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
			  void *context)
{
	(void)domain;
	(void)attr;
	(void)stx;
	(void)context;
	return -FI_ENOSYS;
}

static int domain_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			  void *context)
{
	(void)domain;
	(void)attr;
	(void)rx_ep;
	(void)context;
	return -FI_ENOSYS;
}

static int domain_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
				   struct fi_collective_attr *attr, uint64_t flags)
{
	(void)domain;
	(void)coll;
	(void)attr;
	(void)flags;
	return -FI_ENOSYS;
}

static int domain_endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
			    uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return ffi_endpoint(domain, info, ep, context);
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = ffi_bind_nosys,
	.control = ffi_control_nosys,
	.ops_open = ffi_ops_open_nosys,
};

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = av_open,
	.cq_open = ffi_cq_open,
	.endpoint = ffi_endpoint,
	.scalable_ep = domain_scalable_ep,
	.cntr_open = ffi_cntr_open,
	.poll_open = domain_poll_open,
	.stx_ctx = domain_stx_ctx,
	.srx_ctx = domain_srx_ctx,
	.query_atomic = ffi_query_atomic,
	.query_collective = domain_query_collective,
	.endpoint2 = domain_endpoint2,
};

int ffi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **fdom,
		    void *context)
{
	struct ffi_domain *dom;
	int r;

	if (!fdom)
		return -FI_EINVAL;
	if (info && info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, FFI_PROV_NAME))
		return -FI_EINVAL;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	r = ffi_self_addr(&dom->self);
	if (r) {
		FFI_WARN(FI_LOG_DOMAIN, "FI_FALCON_ADDR is not host[:cm-port]\n");
		free(dom);
		return r;
	}
	dom->ctx = falcon_open(NULL);
	if (!dom->ctx || (r = ffi_query_device(dom->ctx, &dom->dev)) ||
	    !(dom->pd = falcon_alloc_pd(dom->ctx))) {
		r = dom->ctx && r ? r : -errno;
		FFI_WARN(FI_LOG_DOMAIN, "falcond: %s\n", falcon_strerror(r));
		if (dom->ctx)
			falcon_close(dom->ctx);
		free(dom);
		return r;
	}
	LIST_INIT(&dom->ahs);
	LIST_INIT(&dom->mrs);
	{
		pthread_mutexattr_t ma;

		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(&dom->lock, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	dom->fab = (struct ffi_fabric *)fabric;
	dom->api_version = info && info->fabric_attr ? info->fabric_attr->api_version : 0;
	dom->mr_mode = info && info->domain_attr ? (uint64_t)info->domain_attr->mr_mode : 0;
	dom->addr_format = info && ffi_addrlen(info->addr_format) ? info->addr_format :
			   FFI_ADDR_FALCON;
	dom->domain.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain.fid.context = context;
	dom->domain.fid.ops = &domain_fi_ops;
	dom->domain.ops = &domain_ops;
	dom->domain.mr = &mr_ops;
	*fdom = &dom->domain;
	return 0;
}
