/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verbs/device.c - the device falcon0 and its context: the device list, open and close,
 * ibv_query_device(_ex) / port / gid with falcond's limits, async events, the names of
 * statuses and events, fork calls, rate conversions.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fv.h"

#undef ibv_get_device_list
#undef ibv_query_port

/* A negative errno of falcon.h as the positive one verbs returns (errno set too). */
int fv_errno(int rc)
{
	int e = rc < 0 ? -rc : rc;

	errno = e;
	return e;
}

static struct ibv_device fv_device = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB, /* RoCE devices say IB, link layer Ethernet */
	.name = FV_DEV_NAME,
	.dev_name = FV_DEV_NAME,
	.dev_path = "/sys/class/infiniband_verbs/" FV_DEV_NAME,
	.ibdev_path = "/sys/class/infiniband/" FV_DEV_NAME,
};

/* The one device when falcond answers at $FALCON_SOCKET (else the default socket). */
FV_API struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **l = calloc(2, sizeof(*l));
	struct falcon_context *fc;

	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	if ((fc = falcon_open(NULL))) {
		l[0] = &fv_device;
		falcon_close(fc);
	}
	if (num)
		*num = l[0] ? 1 : 0;
	return l;
}

FV_API void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

FV_API const char *ibv_get_device_name(struct ibv_device *dev)
{
	return dev ? dev->name : NULL;
}

FV_API int ibv_get_device_index(struct ibv_device *dev)
{
	return dev == &fv_device ? 0 : -1;
}

/* The GUID: the GID's last 8 bytes (the address, for IPv4 ::ffff:a.b.c.d). */
static __be64 guid_of(const union ibv_gid *g)
{
	__be64 v;

	memcpy(&v, g->raw + 8, sizeof(v));
	return v;
}

/* Our GID: the daemon's listen address; a wildcard listen takes the host's first
 * non-loopback IPv4 address (else 127.0.0.1). */
static void gid_of_addr(const char *addr, union ibv_gid *g)
{
	struct in_addr a4 = { htonl(INADDR_LOOPBACK) };
	struct ifaddrs *ifs, *i;

	memset(g, 0, sizeof(*g));
	if (inet_pton(AF_INET6, addr, g->raw) == 1 && strcmp(addr, "::"))
		return;
	if (inet_pton(AF_INET, addr, &a4) != 1 || a4.s_addr == htonl(INADDR_ANY)) {
		a4.s_addr = htonl(INADDR_LOOPBACK);
		if (getifaddrs(&ifs) == 0) {
			for (i = ifs; i; i = i->ifa_next)
				if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
				    !(i->ifa_flags & IFF_LOOPBACK)) {
					a4 = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
					break;
				}
			freeifaddrs(ifs);
		}
	}
	memset(g->raw, 0, 10);
	g->raw[10] = g->raw[11] = 0xff;
	memcpy(g->raw + 12, &a4, 4);
}

/* The CM port of the daemon at addr: $FALCON_VERBS_PEERS ("addr:port,..."), else ours. */
static uint16_t peer_cm_port(const struct fv_context *c, const char *addr)
{
	const char *p = getenv("FALCON_VERBS_PEERS");
	size_t n = strlen(addr);

	while (p && *p) {
		const char *colon = strrchr(p, ':'), *comma = strchr(p, ',');

		if (comma && colon > comma) /* the last colon of this entry */
			for (colon = comma; colon > p && *colon != ':'; colon--)
				;
		if (colon && colon > p && (size_t)(colon - p) == n + (*p == '[' ? 2 : 0) &&
		    !strncmp(p + (*p == '['), addr, n))
			return (uint16_t)atoi(colon + 1);
		p = comma ? comma + 1 : NULL;
	}
	return c->cm_port;
}

/* The host string falcon_modify_qp / falcon_create_ah take for a GID: "a.b.c.d:port"
 * (IPv4-mapped) or "[v6]:port". 0 or EINVAL (a zero GID: no address). */
int fv_gid_to_host(const struct fv_context *c, const union ibv_gid *gid, char *host, size_t len)
{
	static const uint8_t v4pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	char a[INET6_ADDRSTRLEN];
	uint8_t zero[16] = { 0 };

	if (!memcmp(gid->raw, zero, 16))
		return EINVAL;
	if (!memcmp(gid->raw, v4pre, 12)) {
		inet_ntop(AF_INET, gid->raw + 12, a, sizeof(a));
		snprintf(host, len, "%s:%u", a, peer_cm_port(c, a));
	} else {
		inet_ntop(AF_INET6, gid->raw, a, sizeof(a));
		snprintf(host, len, "[%s]:%u", a, peer_cm_port(c, a));
	}
	return 0;
}

FV_API __be64 ibv_get_device_guid(struct ibv_device *dev)
{
	struct falcon_context *fc = dev == &fv_device ? falcon_open(NULL) : NULL;
	union ibv_gid g;
	char addr[64];

	if (!fc)
		return 0;
	if (falcon_query_addr(fc, addr, sizeof(addr), NULL, NULL))
		strcpy(addr, "127.0.0.1");
	falcon_close(fc);
	gid_of_addr(addr, &g);
	return guid_of(&g);
}

static int fv_query_port_op(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a,
			    size_t size);
static int fv_query_device_ex_op(struct ibv_context *ctx,
				 const struct ibv_query_device_ex_input *in,
				 struct ibv_device_attr_ex *a, size_t size);

static void ops_init(struct fv_context *c)
{
	struct verbs_context *v = &c->vctx;

	v->context.ops.post_send = fv_post_send;
	v->context.ops.post_recv = fv_post_recv;
	v->context.ops.poll_cq = fv_poll_cq;
	v->context.ops.req_notify_cq = fv_req_notify_cq;
	v->context.ops.post_srq_recv = fv_post_srq_recv;
	/* alloc_mw, bind_mw, ... stay NULL: no memory windows (the inline verbs say
	 * EOPNOTSUPP); so do the extended ops falcon lacks (create_cq_ex, flows, DM, WQs) */
	v->query_port = fv_query_port_op;
	v->query_device_ex = fv_query_device_ex_op;
	v->open_xrcd = fv_open_xrcd;
	v->close_xrcd = fv_close_xrcd;
	v->create_srq_ex = fv_create_srq_ex;
	v->get_srq_num = fv_get_srq_num;
	v->create_qp_ex = fv_create_qp_ex;
	v->sz = sizeof(*v);
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

FV_API struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	struct fv_context *c;

	if (dev != &fv_device) {
		errno = ENODEV;
		return NULL;
	}
	if (!(c = calloc(1, sizeof(*c)))) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(c->fc = falcon_open(NULL)))
		goto fail;
	c->attr.size = sizeof(c->attr);
	if (falcon_query_device(c->fc, &c->attr))
		goto fail_close;
	if (falcon_query_addr(c->fc, c->addr, sizeof(c->addr), &c->cm_port, NULL)) {
		if (errno != EOPNOTSUPP)
			goto fail_close;
		/* a daemon that predates the request: the host's address, the default port */
		strcpy(c->addr, "0.0.0.0");
		c->cm_port = FALCON_CM_PORT_DEFAULT;
	}
	gid_of_addr(c->addr, &c->gid);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	c->vctx.context.device = dev;
	c->vctx.context.cmd_fd = -1;
	c->vctx.context.async_fd = falcon_async_fd(c->fc);
	c->vctx.context.num_comp_vectors = 1;
	ops_init(c);
	return &c->vctx.context;
fail_close: {
		int e = errno;

		falcon_close(c->fc);
		errno = e;
	}
fail:
	free(c);
	return NULL;
}

FV_API int ibv_close_device(struct ibv_context *ctx)
{
	struct fv_context *c = fv_ctx(ctx);

	falcon_close(c->fc);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}

/* ---- limits ---- */

static void device_attr(const struct fv_context *c, struct ibv_device_attr *d)
{
	const struct falcon_device_attr *f = &c->attr;

	memset(d, 0, sizeof(*d));
	snprintf(d->fw_ver, sizeof(d->fw_ver), "falcon");
	d->node_guid = d->sys_image_guid = guid_of(&c->gid);
	d->max_mr_size = f->max_mr_size;
	d->page_size_cap = 4096;
	d->max_qp = (int)f->max_qp;
	d->max_qp_wr = (int)(f->max_send_wr < f->max_recv_wr ? f->max_send_wr : f->max_recv_wr);
	d->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SYS_IMAGE_GUID |
			      ((f->flags & FALCON_DEVICE_XRC) ? IBV_DEVICE_XRC : 0);
	d->max_sge = (int)(f->max_send_sge < f->max_recv_sge ? f->max_send_sge : f->max_recv_sge);
	d->max_sge_rd = (int)f->max_send_sge;
	d->max_cq = (int)f->max_cq;
	d->max_cqe = (int)f->max_cqe;
	d->max_mr = (int)f->max_mr;
	d->max_pd = (int)f->max_pd;
	d->max_qp_rd_atom = d->max_qp_init_rd_atom = FV_MAX_RD_ATOM;
	d->max_res_rd_atom = (int)(FV_MAX_RD_ATOM * f->max_qp);
	d->atomic_cap = (enum ibv_atomic_cap)f->atomic_cap;
	d->max_ah = (int)f->max_ah;
	d->max_srq = (int)f->max_srq;
	d->max_srq_wr = (int)f->max_srq_wr;
	d->max_srq_sge = (int)f->max_srq_sge;
	d->max_pkeys = 1;
	d->phys_port_cnt = 1;
}

FV_API int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *d)
{
	device_attr(fv_ctx(ctx), d);
	return 0;
}

static int fv_query_device_ex_op(struct ibv_context *ctx,
				 const struct ibv_query_device_ex_input *in,
				 struct ibv_device_attr_ex *a, size_t size)
{
	struct ibv_device_attr_ex x;

	if (in && in->comp_mask)
		return EINVAL;
	memset(&x, 0, sizeof(x));
	device_attr(fv_ctx(ctx), &x.orig_attr);
	x.max_dm_size = 0; /* no device memory, no ODP, no TSO, no RSS: zero caps */
	memcpy(a, &x, size < sizeof(x) ? size : sizeof(x));
	return 0;
}

static enum ibv_mtu mtu_enum(uint32_t b)
{
	return b >= 4096 ? IBV_MTU_4096 : b >= 2048 ? IBV_MTU_2048 : b >= 1024 ? IBV_MTU_1024 :
	       b >= 512 ? IBV_MTU_512 : IBV_MTU_256;
}

static void port_attr(const struct fv_context *c, struct ibv_port_attr *p)
{
	memset(p, 0, sizeof(*p));
	p->state = IBV_PORT_ACTIVE;
	p->max_mtu = p->active_mtu = mtu_enum(c->attr.mtu);
	p->gid_tbl_len = 1;
	p->max_msg_sz = (uint32_t)(c->attr.max_msg_size > UINT32_MAX ? UINT32_MAX :
				   c->attr.max_msg_size);
	p->pkey_tbl_len = 1;
	p->active_width = 1;   /* 1X */
	p->active_speed = 32;  /* EDR: a number, not a measurement */
	p->phys_state = 5;     /* LinkUp */
	p->link_layer = IBV_LINK_LAYER_ETHERNET;
	p->port_cap_flags = IBV_PORT_CM_SUP;
	p->active_mtu = mtu_enum(c->attr.mtu);
}

static int fv_query_port_op(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a,
			    size_t size)
{
	struct ibv_port_attr p;

	if (port != 1)
		return EINVAL;
	port_attr(fv_ctx(ctx), &p);
	memcpy(a, &p, size < sizeof(p) ? size : sizeof(p));
	return 0;
}

FV_API int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *a)
{
	/* the old layout: up to link_layer */
	return fv_query_port_op(ctx, port, (struct ibv_port_attr *)a,
				__builtin_offsetof(struct ibv_port_attr, flags));
}

FV_API int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	if (port != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*gid = fv_ctx(ctx)->gid;
	return 0;
}

FV_API int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			     struct ibv_gid_entry *e, uint32_t flags, size_t size)
{
	struct ibv_gid_entry x = { 0 };

	if (flags || port != 1 || size < sizeof(x))
		return EINVAL;
	if (index != 0)
		return ENODATA;
	x.gid = fv_ctx(ctx)->gid;
	x.gid_index = 0;
	x.port_num = 1;
	x.gid_type = IBV_GID_TYPE_ROCE_V2;
	*e = x;
	return 0;
}

FV_API ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e,
				    size_t n, uint32_t flags, size_t size)
{
	if (n < 1)
		return -EINVAL;
	return _ibv_query_gid_ex(ctx, 1, 0, e, flags, size) ? -EINVAL : 1;
}

/* rdma-core's private ibv_query_gid_type (ibv_devinfo): 1 = RoCE v2 */
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned index, int *type);
FV_API int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned index, int *type)
{
	(void)ctx;
	if (port != 1 || index != 0)
		return -1;
	*type = 1;
	return 0;
}

FV_API int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	(void)ctx;
	if (port != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htons(0xffff);
	return 0;
}

FV_API int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
	(void)ctx;
	if (port == 1 && (ntohs(pkey) & 0x7fff) == 0x7fff)
		return 0;
	errno = ENOENT;
	return -1;
}

/* ---- the QP table (completions and events name QPs by number) ---- */

struct fv_qp *fv_qp_find(struct fv_context *c, uint32_t qp_num)
{
	struct fv_qp *q;

	pthread_mutex_lock(&c->lock);
	for (q = c->qps[qp_num % FV_QP_HASH]; q && q->qp.qp_num != qp_num; q = q->hnext)
		;
	pthread_mutex_unlock(&c->lock);
	return q;
}

/* ---- async events ---- */

static struct fv_cq *cq_of(struct fv_context *c, const struct falcon_cq *fcq)
{
	struct fv_cq *q;

	pthread_mutex_lock(&c->lock);
	for (q = c->cqs; q && q->fcq != fcq; q = q->next)
		;
	pthread_mutex_unlock(&c->lock);
	return q;
}

/* Blocks (poll of the async fd) unless the program made that fd non-blocking. */
FV_API int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct fv_context *c = fv_ctx(ctx);
	struct falcon_async_event fe = { .size = sizeof(fe) };
	int nb = fcntl(ctx->async_fd, F_GETFL) & O_NONBLOCK, rc;

	for (;;) {
		rc = falcon_get_async_event(c->fc, &fe);
		if (rc == 0)
			break;
		if (rc == -ENOTCONN || rc != -EAGAIN || nb) {
			errno = -rc;
			return -1;
		}
		struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
		poll(&p, 1, -1);
	}
	memset(ev, 0, sizeof(*ev));
	ev->event_type = (enum ibv_event_type)fe.event_type;
	switch (fe.event_type) {
	case FALCON_EVENT_CQ_ERR: {
		struct fv_cq *q = fe.element.cq ? cq_of(c, fe.element.cq) : NULL;

		ev->element.cq = q ? &q->cq : NULL;
		break;
	}
	case FALCON_EVENT_QP_FATAL:
	case FALCON_EVENT_QP_LAST_WQE_REACHED: {
		struct fv_qp *q = fv_qp_find(c, fe.num);

		ev->element.qp = q ? &q->qp : NULL;
		break;
	}
	default:
		ev->element.port_num = 1;
	}
	return 0;
}

FV_API void ibv_ack_async_event(struct ibv_async_event *ev)
{
	(void)ev;
}

/* ---- names ---- */

FV_API const char *ibv_wc_status_str(enum ibv_wc_status s)
{
	static const char *const n[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	return (unsigned)s < sizeof(n) / sizeof(n[0]) && n[s] ? n[s] : "unknown";
}

FV_API const char *ibv_node_type_str(enum ibv_node_type t)
{
	static const char *const n[] = { "unknown", "InfiniBand channel adapter",
		"InfiniBand switch", "InfiniBand router", "iWARP NIC", "usNIC", "usNIC UDP",
		"unspecified" };

	return (unsigned)(t + 1) < sizeof(n) / sizeof(n[0]) ? n[t + 1] : "unknown";
}

FV_API const char *ibv_port_state_str(enum ibv_port_state s)
{
	static const char *const n[] = { "PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED",
		"PORT_ACTIVE", "PORT_ACTIVE_DEFER" };

	return (unsigned)s < sizeof(n) / sizeof(n[0]) ? n[s] : "unknown";
}

FV_API const char *ibv_event_type_str(enum ibv_event_type e)
{
	static const char *const n[] = {
		"CQ error", "local work queue catastrophic error",
		"invalid request local work queue error", "local access violation work queue error",
		"communication established", "send queue drained", "path migrated",
		"path migration request error", "local catastrophic error", "port active",
		"port error", "LID change", "P_Key change", "SM change", "SRQ catastrophic error",
		"SRQ limit reached", "last WQE reached", "client reregistration", "GID table change",
		"WQ fatal",
	};

	return (unsigned)e < sizeof(n) / sizeof(n[0]) ? n[e] : "unknown";
}

int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
const char *ibv_get_sysfs_path(void);

/* ---- fork: falcon needs nothing (the daemon reaches memory by its own mappings) ---- */

FV_API int ibv_fork_init(void)
{
	return 0;
}

FV_API enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

FV_API int ibv_dontfork_range(void *base, size_t size)
{
	(void)base, (void)size;
	return 0;
}

FV_API int ibv_dofork_range(void *base, size_t size)
{
	(void)base, (void)size;
	return 0;
}

/* ---- rates ---- */

static const struct { enum ibv_rate r; int mult, mbps; } rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 }, { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 }, { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 }, { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 }, { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 }, { IBV_RATE_25_GBPS, 10, 25781 },
	{ IBV_RATE_50_GBPS, 20, 51562 }, { IBV_RATE_100_GBPS, 40, 103125 },
	{ IBV_RATE_200_GBPS, 80, 206250 }, { IBV_RATE_400_GBPS, 160, 412500 },
};
#define NRATES (sizeof(rates) / sizeof(rates[0]))

FV_API int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (unsigned i = 0; i < NRATES; i++)
		if (rates[i].r == rate)
			return rates[i].mult;
	return -1;
}

FV_API enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (unsigned i = 0; i < NRATES; i++)
		if (rates[i].mult == mult)
			return rates[i].r;
	return IBV_RATE_MAX;
}

FV_API int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (unsigned i = 0; i < NRATES; i++)
		if (rates[i].r == rate)
			return rates[i].mbps;
	return -1;
}

FV_API enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (unsigned i = 0; i < NRATES; i++)
		if (rates[i].mbps == mbps)
			return rates[i].r;
	return IBV_RATE_MAX;
}

/* ---- sysfs: falcon0 has no sysfs node ---- */

FV_API int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	(void)dir, (void)file, (void)buf, (void)size;
	errno = ENOENT;
	return -1;
}

FV_API const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}
