/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verbs/fv.h - libibverbs over libfalcon-client (issue 24; DESIGN.md, "Programs written
 * for other APIs"): the objects behind the ibv_* handles. Each verbs object embeds the
 * public struct that programs see (struct ibv_pd, ibv_cq, ...) first, so the library
 * finds its own object from the program's pointer with a cast; each holds the falcon
 * object it stands for. Only falcon.h is used below: what falcon cannot express is
 * refused here as a device without the capability refuses it.
 *
 * The device: one per daemon, "falcon0", the falcond of $FALCON_SOCKET. Its GID 0 is the
 * daemon's address as a RoCE v2 GID (IPv4-mapped for IPv4); an RTR or an AH naming a GID
 * opens the Falcon connection to the daemon at that address, on the CM port of
 * $FALCON_VERBS_PEERS ("addr:port,...") when it names the address, else on our own
 * daemon's CM port.
 */
#ifndef FALCON_VERBS_FV_H
#define FALCON_VERBS_FV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>

#include "falcon/falcon.h"

#define FV_API __attribute__((visibility("default")))
#define FV_DEV_NAME "falcon0"
#define FV_GRH_BYTES 40u       /* a UD receive's GRH room at the buffer's start */
#define FV_INLINE_MAX 512u     /* bytes of IBV_SEND_INLINE data per WR */
#define FV_QP_HASH 256u        /* QP number -> QP buckets of a context */
#define FV_MAX_RD_ATOM 16u     /* outstanding READs / atomics reported per QP */
#define FV_CLOSE_GRACE_US 2000u /* ibv_destroy_qp of a live connected QP waits */
#define FV_CQ_SLACK 2048u      /* CQ entries beyond the program's: unsignaled WRs' room */

struct fv_qp;

struct fv_context {
	struct falcon_context *fc;
	struct falcon_device_attr attr;
	union ibv_gid gid;         /* GID index 0 */
	char addr[64];             /* the daemon's listen address */
	uint16_t cm_port;
	pthread_mutex_t lock;      /* the QP hash and CQ list */
	struct fv_qp *qps[FV_QP_HASH];
	struct fv_cq *cqs;
	struct falcon_pd *xrc_pd;  /* falcon's PD of XRC_RECV QPs (none in verbs) */
	struct verbs_context vctx; /* last: ends with struct ibv_context */
};

struct fv_pd {
	struct ibv_pd pd;
	struct falcon_pd *fp;
};

struct fv_mr {
	struct ibv_mr mr;
	struct falcon_mr *fm;
};

struct fv_cq {
	struct ibv_cq cq;
	struct falcon_cq *fcq;
	pthread_spinlock_t lock;   /* poll_cq: verbs lets threads share a CQ, falcon not */
	struct fv_cq *next;        /* the context's list (async events name CQs) */
};

struct fv_srq {
	struct ibv_srq srq;
	struct falcon_srq *fs;
	uint32_t srq_num;
	enum ibv_srq_type type;
};

struct fv_xrcd {
	struct ibv_xrcd xrcd;
	struct falcon_xrcd *fx;
};

struct fv_ah {
	struct ibv_ah ah;
	struct falcon_ah *fa;
};

/* A send WR in flight: what the program's completion must say (falcon completes every
 * WR; verbs only the signaled ones and errors). */
struct fv_swr {
	uint64_t wr_id;
	uint8_t busy, signaled;
};

struct fv_qp {
	struct ibv_qp qp;
	struct falcon_qp *fq;
	pthread_spinlock_t sq_lock, rq_lock; /* post_send, post_recv: likewise per queue */
	struct fv_qp *hnext;       /* the context's QP hash */
	struct falcon_qp_init_attr fattr; /* as created (a UD QP is re-created for its Q_Key) */
	struct ibv_qp_attr attr;   /* what ibv_query_qp reports */
	struct ibv_qp_cap cap;
	int sq_sig_all;
	uint32_t nswr;             /* entries of swr (a power of 2) */
	uint64_t spost;            /* send WRs posted (swr index) */
	struct fv_swr *swr;
	uint8_t *inl;              /* inline data slots (nswr x FV_INLINE_MAX), registered */
	struct falcon_mr *inl_mr;
};

static inline struct fv_context *fv_ctx(struct ibv_context *c)
{
	return (struct fv_context *)((char *)c - __builtin_offsetof(struct fv_context, vctx.context));
}

/* device.c */
struct fv_qp *fv_qp_find(struct fv_context *c, uint32_t qp_num);
int fv_gid_to_host(const struct fv_context *c, const union ibv_gid *gid, char *host, size_t len);
int fv_errno(int rc);

/* objects.c: the ops the context's tables point at */
int fv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int fv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_xrcd *fv_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr);
int fv_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_srq *fv_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr);
int fv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);

/* qp.c */
int fv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int fv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int fv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
struct ibv_qp *fv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);

#endif
