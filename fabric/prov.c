/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric/prov.c - the provider's entry point (FI_EXT_INI), fi_getinfo, the fabric and
 * its event queues.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "ffi.h"

uint64_t ffi_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* "a.b.c.d:port" or "[v6]:port" for falcon_create_ah / falcon_modify_qp: 0 or -EINVAL. */
int ffi_addr_host(const struct ffi_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (!a)
		return -EINVAL;
	if (a->family == 4) {
		if (!inet_ntop(AF_INET, a->ip, ip, sizeof(ip)))
			return -EINVAL;
		snprintf(buf, len, "%s:%u", ip, a->cm_port);
	} else if (a->family == 6) {
		if (!inet_ntop(AF_INET6, a->ip, ip, sizeof(ip)))
			return -EINVAL;
		snprintf(buf, len, "[%s]:%u", ip, a->cm_port);
	} else {
		return -EINVAL;
	}
	return 0;
}

static int parse_host(const char *s, struct ffi_addr *a)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon;
	size_t n;
	unsigned long port = FALCON_CM_PORT_DEFAULT;

	memset(a, 0, sizeof(*a));
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || (size_t)(end - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = 0;
		colon = end[1] == ':' ? end + 1 : NULL;
	} else {
		colon = strrchr(s, ':');
		n = colon ? (size_t)(colon - s) : strlen(s);
		if (n >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, n);
		host[n] = 0;
	}
	if (colon) {
		char *end;

		port = strtoul(colon + 1, &end, 10);
		if (*end || port == 0 || port > 65535)
			return -EINVAL;
	}
	a->cm_port = (uint16_t)port;
	if (inet_pton(AF_INET, host, a->ip) == 1) {
		a->family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, host, a->ip) == 1) {
		a->family = 6;
		return 0;
	}
	return -EINVAL;
}

/* The daemon's CM address, as peers reach it (see ffi.h): 0 or -EINVAL (a bad
 * FI_FALCON_ADDR). */
int ffi_self_addr(struct ffi_addr *a)
{
	char *s = NULL;
	struct ifaddrs *ifs, *i;

	if (fi_param_get_str(&ffi_prov, "addr", &s) == 0 && s && *s)
		return parse_host(s, a);
	memset(a, 0, sizeof(*a));
	a->family = 4;
	a->cm_port = FALCON_CM_PORT_DEFAULT;
	a->ip[0] = 127;
	a->ip[3] = 1;
	if (getifaddrs(&ifs) == 0) {
		for (i = ifs; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
			    !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
				continue;
			memcpy(a->ip, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
			break;
		}
		freeifaddrs(ifs);
	}
	return 0;
}

/* ---- fi_getinfo ---- */

/* FI_LOCAL_COMM too (Open MPI's ofi MTL asks for it: FI_TAGGED | FI_LOCAL_COMM |
 * FI_REMOTE_COMM | FI_DIRECTED_RECV): endpoints on one daemon reach each other through it
 * (under psp its allow-list must hold its own key), an endpoint itself over its second
 * RC QP (ffi.h) */
#define FFI_RDM_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ | \
		      FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SOURCE | FI_DIRECTED_RECV | \
		      FI_REMOTE_COMM | FI_LOCAL_COMM | FI_MULTI_RECV)
#define FFI_DGRAM_CAPS (FI_MSG | FI_SEND | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV | FI_REMOTE_COMM)
/* secondary capabilities, reported whether asked or not (fi_getinfo(3) allows it);
 * FI_DIRECTED_RECV is a primary one: only when asked (or without hints) */
#define FFI_SECONDARY (FI_SOURCE | FI_REMOTE_COMM | FI_LOCAL_COMM)
#define FFI_MR_NEEDS (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)

int ffi_query_device(struct falcon_context *ctx, struct falcon_device_attr *dev)
{
	int r;

	*dev = (struct falcon_device_attr){ .size = sizeof(*dev) };
	r = falcon_query_device(ctx, dev);
	if (r != -EOPNOTSUPP)
		return r;
	/* a daemon older than the call: what it enforced (api.c and loop.c of then) */
	*dev = (struct falcon_device_attr){
		.size = sizeof(*dev), .max_msg_size = FFI_OLD_WR_MAX, .max_mr_size = 1ull << 40,
		.mtu = 4096, .max_qp = 1024, .max_conn = 1024, .max_cq = 1024, .max_cqe = 65536,
		.max_mr = 4096, .max_pd = 256, .max_srq = 256, .max_ah = 256, .max_send_wr = 4096,
		.max_recv_wr = 4096, .max_srq_wr = 4096, .max_send_sge = 4, .max_recv_sge = 4,
		.max_srq_sge = 4, .max_inflight = 65536, .max_objects = 1024, .max_clients = 64,
		.atomic_cap = FALCON_ATOMIC_HCA, .atomic_size = 8,
	};
	return 0;
}

/* Endpoints a domain can open: each holds a falcon CQ, a UD QP, an SRQ and the MR of its
 * pool, in the daemon's tables and among the context's objects (RC QPs per peer on top). */
static size_t ep_cnt_of(const struct falcon_device_attr *d)
{
	uint32_t n = d->max_objects / 4;

	n = d->max_cq < n ? d->max_cq : n;
	n = d->max_qp < n ? d->max_qp : n;
	n = d->max_srq < n ? d->max_srq : n;
	return d->max_mr < n ? d->max_mr : n;
}

/* what a getinfo call asks beyond hints: node, service, flags, and this host's daemon */
struct gi_req {
	uint32_t version;
	const char *node, *service;
	uint64_t flags;
	struct ffi_addr self;
};

#define TX_CAPS (FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE)
#define RX_CAPS (FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_DIRECTED_RECV | FI_RECV | \
		 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SOURCE | FI_MULTI_RECV)
#define DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
#define RMA_CAPS (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* The capabilities of an info: what the hints ask (primary ones and their modifiers,
 * fi_getinfo(3)), the secondary ones we have, or everything without hints. 0: refused. */
static uint64_t caps_of(uint64_t all, const struct fi_info *hints)
{
	uint64_t caps;

	if (!hints || !hints->caps)
		return all;
	if ((hints->caps & all) != hints->caps)
		return 0; /* FI_SHARED_AV, FI_MULTI_RECV, FI_RMA_EVENT...: not offered */
	caps = hints->caps | (all & FFI_SECONDARY);
	/* a primary capability without its modifiers means all of them */
	if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	if ((caps & (FI_RMA | FI_ATOMIC)) &&
	    !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	return caps & all;
}

/* mr_mode of fi_domain(3) per API version: FI_MR_BASIC (what we need: provider keys,
 * virtual addresses, allocated memory) before 1.5 or when asked for it, the mode bits
 * after, FI_MR_SCALABLE never. *rma_ok: the application can take it (else no RMA). */
static int mr_mode_of(uint32_t version, const struct fi_info *hints, bool *rma_ok)
{
	int want = hints && hints->domain_attr ? hints->domain_attr->mr_mode : FI_MR_UNSPEC;

	*rma_ok = true;
	if ((want & 3) == FI_MR_SCALABLE)
		return -1;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)) || (want & 3) == FI_MR_BASIC)
		return FI_MR_BASIC;
	if (hints && (want & FFI_MR_NEEDS) != FFI_MR_NEEDS)
		*rma_ok = false;
	return FFI_MR_NEEDS;
}

/* The address format asked for: ours, or sockaddr of the daemon's family. 0: refused. */
static uint32_t format_of(const struct fi_info *hints, const struct ffi_addr *self)
{
	uint32_t f = hints ? hints->addr_format : FI_FORMAT_UNSPEC;

	if (f == FI_FORMAT_UNSPEC || f == FFI_ADDR_FALCON)
		return FFI_ADDR_FALCON;
	if ((f == FI_SOCKADDR_IN && self->family == 4) || (f == FI_SOCKADDR_IN6 && self->family == 6))
		return f;
	return 0;
}

static void *addr_dup(uint32_t fmt, const struct ffi_addr *a, uint16_t svc, size_t *len)
{
	void *p = malloc(ffi_addrlen(fmt));

	if (p)
		ffi_addr_to(fmt, a, svc, p);
	*len = p ? ffi_addrlen(fmt) : 0;
	return p;
}

/* src_addr and dest_addr of fi_getinfo(3): node and service name the destination, or
 * with FI_SOURCE (or without a node) the local endpoint's; the hints' addresses
 * otherwise; the source is this host's daemon and, with a service, the endpoint's name
 * port (name.c). A destination is known by node and service (fi_av_insert asks it).
 * 0 or -1 (a node that does not resolve, a hint address not of the format). */
static int addrs_of(struct fi_info *fi, const struct fi_info *hints, const struct gi_req *q)
{
	uint32_t fmt = fi->addr_format;
	size_t len = ffi_addrlen(fmt);
	struct ffi_addr src = q->self, dst;
	bool have_dst = false;

	src.qpn = 0;
	if ((q->flags & FI_SOURCE) || !q->node) {
		struct ffi_addr n;

		if (q->node && ffi_addr_of_node(q->node, NULL, 0, &n))
			return -1;
		if (q->service && ffi_addr_of_node(NULL, q->service, q->self.family, &n))
			return -1;
		if (q->service && n.qpn) {
			src.flags = FFI_AF_SVC;
			src.qpn = n.qpn;
		}
	} else if (hints && hints->src_addr) {
		if (hints->src_addrlen != len || ffi_addr_from(fmt, hints->src_addr, &src))
			return -1;
	}
	if (q->node && !(q->flags & FI_SOURCE)) {
		if (ffi_addr_of_node(q->node, q->service, q->self.family, &dst))
			return -1;
		have_dst = true;
	} else if (hints && hints->dest_addr) {
		if (hints->dest_addrlen != len || ffi_addr_from(fmt, hints->dest_addr, &dst))
			return -1;
		have_dst = true;
	}
	fi->src_addr = addr_dup(fmt, &src, src.flags & FFI_AF_SVC ? (uint16_t)src.qpn : 0,
				&fi->src_addrlen);
	if (have_dst)
		fi->dest_addr = addr_dup(fmt, &dst, dst.flags & FFI_AF_SVC ? (uint16_t)dst.qpn : 0,
					 &fi->dest_addrlen);
	return fi->src_addr && (!have_dst || fi->dest_addr) ? 0 : -1;
}

/* the ordering a hint asks must be one we give (fi_getinfo_test: what is returned has
 * every bit asked); we give send-after-send on RDM (one RC QP per peer, matched in
 * arrival order, rendezvous included) and nothing on DGRAM */
static bool order_ok(const struct fi_info *hints, uint64_t have)
{
	if (!hints)
		return true;
	if (hints->tx_attr && (hints->tx_attr->msg_order & ~have))
		return false;
	return !hints->rx_attr || !(hints->rx_attr->msg_order & ~have);
}

static struct fi_info *info_of(const struct gi_req *q, enum fi_ep_type type,
			       const struct fi_info *hints, const struct falcon_device_attr *dev)
{
	struct fi_info *fi;
	uint64_t all = type == FI_EP_RDM ? FFI_RDM_CAPS : FFI_DGRAM_CAPS, caps;
	uint64_t order = type == FI_EP_RDM ? FI_ORDER_SAS : FI_ORDER_NONE;
	uint32_t fmt = format_of(hints, &q->self);
	bool rma_ok;
	int mr_mode = mr_mode_of(q->version, hints, &rma_ok);

	if (!rma_ok)
		all &= ~RMA_CAPS; /* the app cannot take provider keys on virtual addresses */
	caps = caps_of(all, hints);
	if (!caps || !fmt || mr_mode < 0 || !order_ok(hints, order))
		return NULL;
	if (hints && hints->domain_attr && (hints->domain_attr->caps &
	    (FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV) & ~(all & DOMAIN_CAPS)))
		return NULL; /* FI_SHARED_AV: not offered */
	if (!(caps & RMA_CAPS) && !FI_VERSION_LT(q->version, FI_VERSION(1, 5)) &&
	    mr_mode != FI_MR_BASIC)
		mr_mode = 0; /* messages go through bounce buffers: no registration needed */
	fi = fi_allocinfo();
	if (!fi)
		return NULL;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = fmt;

	fi->tx_attr->caps = caps & TX_CAPS;
	fi->tx_attr->msg_order = order;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = type == FI_EP_RDM ? FFI_INJECT_RDM : FFI_INJECT_DGRAM;
	fi->tx_attr->size = FFI_TX_SLOTS - FFI_CTRL_RESERVE;
	fi->tx_attr->iov_limit = 4;
	fi->tx_attr->rma_iov_limit = 1;

	fi->rx_attr->caps = caps & RX_CAPS;
	fi->rx_attr->msg_order = order;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = (size_t)FFI_RX_SLOTS * FFI_MAX_MSG;
	fi->rx_attr->size = FFI_RX_POSTED_MAX;
	fi->rx_attr->iov_limit = 4;

	fi->ep_attr->type = type;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->max_msg_size = type == FI_EP_RDM ? ffi_msg_max(dev) : ffi_dgram_max(dev);
	fi->ep_attr->mem_tag_format = type == FI_EP_RDM ? 0xAAAAAAAAAAAAAAAAull : 0;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(FFI_PROV_NAME);
	fi->domain_attr->caps = all & DOMAIN_CAPS;
	fi->domain_attr->threading = FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = hints && hints->domain_attr &&
		hints->domain_attr->av_type == FI_AV_MAP ? FI_AV_MAP : FI_AV_TABLE;
	fi->domain_attr->mr_mode = mr_mode;
	fi->domain_attr->mr_key_size = 4;
	fi->domain_attr->cq_data_size = type == FI_EP_RDM ? FFI_CQ_DATA_BYTES : 0;
	fi->domain_attr->cq_cnt = 256;
	fi->domain_attr->cntr_cnt = 256;
	fi->domain_attr->ep_cnt = ep_cnt_of(dev);
	fi->domain_attr->tx_ctx_cnt = ep_cnt_of(dev);
	fi->domain_attr->rx_ctx_cnt = ep_cnt_of(dev);
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->mr_cnt = dev->max_mr < dev->max_objects ? dev->max_mr : dev->max_objects;

	fi->fabric_attr->name = strdup(FFI_PROV_NAME);
	fi->fabric_attr->prov_version = FFI_PROV_VERSION;
	fi->fabric_attr->api_version = q->version;
	if (!fi->domain_attr->name || !fi->fabric_attr->name || addrs_of(fi, hints, q))
		goto nodata;

	if (!hints)
		return fi;
	if (hints->ep_attr) {
		if (hints->ep_attr->max_msg_size > fi->ep_attr->max_msg_size)
			goto nodata;
		if (hints->ep_attr->protocol != FI_PROTO_UNSPEC)
			goto nodata;
		if (hints->ep_attr->mem_tag_format && type == FI_EP_RDM)
			fi->ep_attr->mem_tag_format = hints->ep_attr->mem_tag_format;
	}
	if (hints->tx_attr && hints->tx_attr->inject_size > fi->tx_attr->inject_size)
		goto nodata;
	/* the default flags of operations without a flags argument: FI_COMPLETION is what
	 * matters (Open MPI binds its CQ with FI_SELECTIVE_COMPLETION and asks for
	 * FI_COMPLETION here, so that every fi_tsend / fi_trecv completes) */
	if (hints->tx_attr)
		fi->tx_attr->op_flags = hints->tx_attr->op_flags & FI_COMPLETION;
	if (hints->rx_attr)
		fi->rx_attr->op_flags = hints->rx_attr->op_flags &
					(FI_COMPLETION | (caps & FI_MULTI_RECV));
	if (hints->domain_attr) {
		const struct fi_domain_attr *d = hints->domain_attr;

		if (d->name && strcasecmp(d->name, FFI_PROV_NAME))
			goto nodata;
		if (d->threading != FI_THREAD_UNSPEC)
			fi->domain_attr->threading = d->threading; /* every level: we are safe */
		if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO)
			goto nodata;
		if (d->cq_data_size > fi->domain_attr->cq_data_size)
			goto nodata;
	}
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    strcasecmp(hints->fabric_attr->name, FFI_PROV_NAME))
		goto nodata;
	return fi;
nodata:
	fi_freeinfo(fi);
	return NULL;
}

static int ffi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info)
{
	static const enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_DGRAM };
	struct fi_info *head = NULL, **tail = &head;
	struct falcon_device_attr dev;
	struct falcon_context *ctx;
	struct gi_req q = { .version = version, .node = node, .service = service, .flags = flags };
	int r;

	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	if ((flags & FI_SOURCE) && !node && !service)
		return -FI_EINVAL; /* fi_getinfo(3): FI_SOURCE names node and/or service */
	if (hints && hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
	    hints->ep_attr->type != FI_EP_RDM && hints->ep_attr->type != FI_EP_DGRAM)
		return -FI_ENODATA;
	if (ffi_self_addr(&q.self)) {
		FFI_WARN(FI_LOG_CORE, "FI_FALCON_ADDR is not host[:cm-port]\n");
		return -FI_ENODATA;
	}
	/* a provider without a daemon to talk to offers nothing; the daemon's limits are
	 * the info's */
	ctx = falcon_open(NULL);
	if (!ctx) {
		FFI_WARN(FI_LOG_CORE, "no falcond: %s\n", falcon_strerror(-errno));
		return -FI_ENODATA;
	}
	r = ffi_query_device(ctx, &dev);
	falcon_close(ctx);
	if (r) {
		FFI_WARN(FI_LOG_CORE, "falcond's limits: %s\n", falcon_strerror(r));
		return -FI_ENODATA;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct fi_info *fi;

		if (hints && hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
		    hints->ep_attr->type != types[i])
			continue;
		fi = info_of(&q, types[i], hints, &dev);
		if (!fi)
			continue;
		*tail = fi;
		tail = &fi->next;
	}
	if (!head)
		return -FI_ENODATA;
	*info = head;
	return 0;
}

/* ---- event queues: no provider events (AV inserts are synchronous), fi_eq_write's ---- */

static int eq_close(struct fid *fid)
{
	struct ffi_eq *eq = (struct ffi_eq *)fid;

	close(eq->efd);
	free(eq->ring);
	free(eq);
	return 0;
}

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct ffi_eq *eq = (struct ffi_eq *)feq;
	struct ffi_eq_ev *ev;
	uint64_t v;

	if (len && !buf)
		return -FI_EINVAL;
	if (!eq->count)
		return -FI_EAGAIN;
	ev = &eq->ring[eq->head];
	if (ev->err)
		return -FI_EAVAIL;
	if (len < ev->len)
		return -FI_ETOOSMALL;
	if (event)
		*event = ev->event;
	if (ev->len)
		memcpy(buf, ev->u.raw, ev->len);
	if (!(flags & FI_PEEK)) {
		eq->head = (eq->head + 1) % eq->size;
		if (--eq->count == 0 && read(eq->efd, &v, sizeof(v)) < 0)
			(void)0; /* the counter was already 0: nothing to clear */
	}
	return (ssize_t)ev->len;
}

static ssize_t eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct ffi_eq *eq = (struct ffi_eq *)feq;
	struct ffi_eq_ev *ev;
	uint64_t v;

	if (!buf)
		return -FI_EINVAL;
	if (!eq->count || !eq->ring[eq->head].err)
		return -FI_EAGAIN;
	ev = &eq->ring[eq->head];
	*buf = ev->u.err_entry;
	if (!(flags & FI_PEEK)) {
		eq->head = (eq->head + 1) % eq->size;
		if (--eq->count == 0 && read(eq->efd, &v, sizeof(v)) < 0)
			(void)0;
	}
	return sizeof(*buf);
}

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	struct ffi_eq *eq = (struct ffi_eq *)feq;
	struct ffi_eq_ev *ev;
	uint64_t one = 1;

	if (len > sizeof(ev->u.raw) || (len && !buf))
		return -FI_EINVAL;
	if (eq->count == eq->size)
		return -FI_EAGAIN;
	ev = &eq->ring[(eq->head + eq->count) % eq->size];
	memset(ev, 0, sizeof(*ev));
	ev->event = event;
	ev->len = len;
	ev->err = false;
	(void)flags;
	if (len)
		memcpy(ev->u.raw, buf, len);
	eq->count++;
	if (write(eq->efd, &one, sizeof(one)) < 0)
		return -errno;
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf, size_t len, int timeout,
			uint64_t flags)
{
	struct ffi_eq *eq = (struct ffi_eq *)feq;
	struct pollfd p = { .fd = eq->efd, .events = POLLIN };
	uint64_t t0 = ffi_now_ms();

	for (;;) {
		ssize_t r = eq_read(feq, event, buf, len, flags);
		int wait_ms = timeout;

		if (r != -FI_EAGAIN)
			return r;
		if (timeout >= 0) {
			uint64_t el = ffi_now_ms() - t0;

			if (el >= (uint64_t)timeout)
				return -FI_EAGAIN;
			wait_ms = timeout - (int)el;
		}
		if (poll(&p, 1, wait_ms) < 0 && errno != EINTR)
			return -errno;
	}
}

static const char *eq_strerror(struct fid_eq *feq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	(void)feq;
	(void)err_data;
	if (buf && len) {
		snprintf(buf, len, "%s", falcon_strerror(prov_errno));
		return buf;
	}
	return falcon_strerror(prov_errno);
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct ffi_eq *eq = (struct ffi_eq *)fid;

	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	if (!arg)
		return -FI_EINVAL;
	*(int *)arg = eq->efd;
	return 0;
}

int ffi_bind_nosys(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS;
}

int ffi_control_nosys(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

int ffi_ops_open_nosys(struct fid *fid, const char *name, uint64_t flags, void **ops,
			      void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = ffi_bind_nosys,
	.control = eq_control,
	.ops_open = ffi_ops_open_nosys,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int ffi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **feq,
		void *context)
{
	struct ffi_eq *eq;
	size_t size = attr && attr->size ? attr->size : 64;

	if (!feq)
		return -FI_EINVAL;
	if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (size > FFI_EQ_MAX)
		return -FI_EINVAL;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->ring = calloc(size, sizeof(*eq->ring));
	eq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!eq->ring || eq->efd < 0) {
		if (eq->efd >= 0)
			close(eq->efd);
		free(eq->ring);
		free(eq);
		return -FI_ENOMEM;
	}
	eq->size = (uint32_t)size;
	eq->fab = (struct ffi_fabric *)fabric;
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &eq_fi_ops;
	eq->eq.ops = &eq_ops;
	*feq = &eq->eq;
	return 0;
}

/* ---- fabric ---- */

static int fabric_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static int fabric_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
			     void *context)
{
	(void)fabric;
	(void)info;
	(void)pep;
	(void)context;
	return -FI_ENOSYS; /* no FI_EP_MSG */
}

static int fabric_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			    struct fid_wait **waitset)
{
	(void)fabric;
	(void)attr;
	(void)waitset;
	return -FI_ENOSYS;
}

/* fi_trywait(3): 0 when the caller may block on the wait objects of fids; -FI_EAGAIN
 * when one has something to read first; -FI_EINVAL for what has no wait object here. */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void)fabric;
	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (int i = 0; i < count; i++) {
		int r;

		if (!fids[i])
			return -FI_EINVAL;
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
			r = ffi_cq_trywait((struct ffi_cq *)fids[i]);
			break;
		case FI_CLASS_EQ:
			r = ((struct ffi_eq *)fids[i])->count ? -FI_EAGAIN : 0;
			break;
		default:
			r = -FI_EINVAL;
			break;
		}
		if (r)
			return r;
	}
	return 0;
}

static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
			  uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return ffi_domain_open(fabric, info, dom, context);
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = ffi_bind_nosys,
	.control = NULL,
	.ops_open = ffi_ops_open_nosys,
};

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = ffi_domain_open,
	.passive_ep = fabric_passive_ep,
	.eq_open = ffi_eq_open,
	.wait_open = fabric_wait_open,
	.trywait = fabric_trywait,
	.domain2 = fabric_domain2,
};

static int fabric_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

int ffi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct ffi_fabric *fab;

	if (attr && attr->name && strcasecmp(attr->name, FFI_PROV_NAME))
		return -FI_EINVAL;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fabric_fi_ops.control = fabric_control;
	fab->fabric.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric.fid.context = context;
	fab->fabric.fid.ops = &fabric_fi_ops;
	fab->fabric.ops = &fabric_ops;
	*fabric = &fab->fabric;
	return 0;
}

static void ffi_cleanup(void)
{
}

struct fi_provider ffi_prov = {
	.version = FFI_PROV_VERSION,
	.fi_version = FFI_FI_VERSION,
	.name = FFI_PROV_NAME,
	.getinfo = ffi_getinfo,
	.fabric = ffi_fabric_open,
	.cleanup = ffi_cleanup,
};

struct fi_provider *fi_prov_ini(void);

FI_EXT_INI
{
	fi_param_define(&ffi_prov, "addr", FI_PARAM_STRING,
			"this host's falcond as peers reach it: host[:cm-port] "
			"(default: the first IPv4 address of an interface that is up, port %u)",
			FALCON_CM_PORT_DEFAULT);
	fi_param_define(&ffi_prov, "resolve_ms", FI_PARAM_INT,
			"how long fi_av_insert waits for the endpoint named by node and service "
			"to answer (default %d)", FFI_RESOLVE_MS);
	fi_param_define(&ffi_prov, "conn_timeout_ms", FI_PARAM_INT,
			"how long an RDM operation waits for its peer's connection reply before it "
			"completes FI_ETIMEDOUT (default %d)", FFI_CONN_TIMEOUT_MS);
	return &ffi_prov;
}
