/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric/ffi.h - the "falcon" libfabric provider (libfalcon-fi.so): libfabric's fi_*
 * objects over libfalcon-client. Built against libfabric's public headers only (no
 * ofi_* utility code); loaded by libfabric from FI_PROVIDER_PATH through FI_EXT_INI.
 *
 * Objects and what each is over:
 *   fabric           nothing (a name)
 *   domain           a falcon context (falcon_open) and a PD; a cache of address handles,
 *                    one per peer daemon (falcon_create_ah)
 *   memory region    falcon_reg_mr; the key is the falcon rkey, the descriptor names the
 *                    lkey (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)
 *   address vector   a table of falcon addresses (struct ffi_addr), each with its AH
 *   completion queue a ring of completions the endpoints' progress fills; blocking reads
 *                    wait on the falcon CQs' notification fds through one epoll fd
 *   endpoint         one falcon CQ, a UD QP (its address), a pool of bounce buffers;
 *                    RDM: an SRQ for every RC QP it has, one RC QP per peer
 *
 * Addresses: struct ffi_addr is what fi_getname returns (FFI_ADDR_FALCON, the default
 * format): the endpoint's daemon (IPv4 or IPv6 address and CM port) and the number of its
 * UD QP. FI_SOCKADDR_IN / IN6 name the daemon's IP and the port of the endpoint's name
 * socket instead, and fi_getinfo's node and service name such a socket: fi_av_insert asks
 * it for the endpoint's whole address (name.c), which is how programs that exchange
 * addresses in-band find their server. The provider cannot ask the
 * daemon for its own CM address (libfalcon-client has no call for it): it comes from
 * FI_FALCON_ADDR ("host[:cm-port]"), else the first IPv4 address of an interface that is
 * up and not loopback, else 127.0.0.1, with FALCON_CM_PORT_DEFAULT.
 *
 * RDM connections (how two endpoints that know each other only by fi_getname set up an
 * RC pair; Falcon is the reliability, the provider adds no second layer):
 *   A's first operation to B creates an RC QP (INIT) and sends REQ{A's address, its QPN}
 *   as a UD datagram to B's UD QP; the operation waits in the peer's pending list.
 *   B creates its RC QP, moves it to RTR naming A's host and QPN, then RTS, and answers
 *   REP{B's address, its QPN}; B may send at once (falcond holds WRs until the pair's
 *   connection opens). A moves its QP to RTR/RTS naming B's QPN and posts the pending
 *   operations in order. When REQs cross (both sent first), the REQ from the lower
 *   address wins: the higher side answers it with the QP it had made for its own REQ, the
 *   lower side ignores the other REQ. UD over Falcon is delivered reliably, so REQ and REP
 *   are not retransmitted; a peer that never answers fails the pending operations with
 *   FI_ETIMEDOUT after FI_FALCON_CONN_TIMEOUT_MS (default FFI_CONN_TIMEOUT_MS; checked by
 *   progress).
 *
 * Messages: every SEND carries a struct ffi_hdr (op, tag, 32-bit CQ data) in front of the
 * payload; sends are copied into a bounce slot (so no local registration is needed) and
 * land in the receiver's bounce slots (SRQ), where the provider matches them against
 * posted receives (tagged: (tag & ~ignore) equal; FI_DIRECTED_RECV by source) or queues
 * them as unexpected (copied out, up to FFI_UNEXP_MAX; beyond that they keep their slot,
 * so senders meet RNR back-pressure). That is up to FFI_MAX_MSG bytes (eager); a larger RDM
 * message (to ep_attr->max_msg_size, ffi_msg_max) goes by rendezvous: the sender registers
 * it and sends a struct ffi_rndv in its place, the matched receiver READs it into the
 * receive buffer (one buffer: iov_count 1) and answers FIN, and the send completes at the
 * FIN. RMA above FFI_MAX_MSG goes as a struct ffi_rjob (its local buffer registered for
 * it when there is no descriptor).
 *
 * Limits: the daemon's, from falcon_query_device (fi_getinfo and each domain ask it): a
 * rendezvous READ and an RMA are one falcon work request each, which carries up to the
 * daemon's max_msg_size (2 GiB by default); they are cut into pieces of that size only
 * when a message is longer, which happens only with a daemon that takes less than
 * FFI_RNDV_MAX per work request (the provider still offers that much: an older daemon
 * without falcon_query_device took 1 MiB). A DGRAM message is bounded by the daemon's MTU
 * (a UD datagram), the domain's endpoints, MRs and contexts by its tables.
 *
 * Bad input: a message that is not the provider's (short, unknown op) is counted and
 * dropped (rx_drops); connection requests beyond FFI_PEERS_MAX peers are refused
 * (req_drops). A DGRAM source address (FI_SOURCE) is the one the sender's provider wrote
 * into the datagram: the daemons authenticate the host (security psp), not the endpoint.
 *
 * Capabilities beside the primary ones: FI_SOURCE, FI_DIRECTED_RECV, FI_REMOTE_COMM and
 * FI_LOCAL_COMM (Open MPI's ofi MTL requires it): endpoints on one daemon reach each other
 * through it (under psp the daemon's allow-list must hold its own key). An RDM endpoint
 * reaches itself too: its peer record for its own address has a second RC QP that the
 * first is connected to, set up at once (no REQ / REP), both on its daemon, which executes
 * the operations as for any peer (atomics stay atomic against other peers'). AV entries
 * make their AH on first use, so inserting addresses (an MPI job inserts every rank's)
 * never waits for a daemon.
 * Beside those (issue 25): FI_MULTI_RECV (ep.c, FI_OPT_MIN_MULTI_RECV), counters
 * (cntr.c), every atomic op x datatype of ofi_rxm (native where falcon has the
 * instruction, run by the target's provider otherwise: atomic.c), FI_THREAD_SAFE (the
 * domain's lock). Not offered: FI_EP_MSG, FI_SHARED_AV, FI_RMA_EVENT, atomic ordering,
 * FI_SOCKADDR (generic) addresses.
 *
 * Open MPI (4.1, tests/e2e/test_mpi.sh): pml cm + mtl ofi run on it (FI_TAGGED with
 * CQ data for the source rank, FI_SELECTIVE_COMPLETION with FI_COMPLETION in op_flags,
 * FI_PEEK/FI_CLAIM probes); one-sided as osc pt2pt over that, or as osc rdma over btl
 * ofi (FI_RMA | FI_ATOMIC, FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR), which with
 * one rank per node does the rank's own window state through the BTL (the self path).
 *
 * Progress: manual; every CQ read and every post on an endpoint progresses it.
 * Threads: FI_THREAD_SAFE: every entry point on a domain's objects (posts, CQ and counter
 * reads, AV, MR, endpoint control) runs under the domain's lock; blocking waits
 * (fi_cq_sread, fi_cntr_wait) sleep without it. Each endpoint's name thread (name.c) only
 * reads what never changes after the endpoint is made.
 */
#ifndef FFI_H
#define FFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/queue.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

#include "falcon/falcon.h"

#define FFI_PROV_NAME "falcon"
#define FFI_PROV_VERSION FI_VERSION(0, 1)
#define FFI_FI_VERSION FI_VERSION(1, 17)

#define FFI_MAX_MSG 65536u          /* eager: one bounce slot per message; above: rendezvous */
#define FFI_RNDV_MAX (1ull << 30)   /* the largest message offered at least (rendezvous, RMA;
				       cut into WRs when the daemon takes less per WR) */
#define FFI_OLD_WR_MAX (1u << 20)   /* a daemon without falcon_query_device: bytes per WR */
#define FFI_TX_SLOTS 64u            /* operations in flight per endpoint */
#define FFI_CTRL_RESERVE 4u         /* of them kept for REQ / REP (tx_attr->size: the rest) */
#define FFI_RX_SLOTS 64u            /* bounce slots in the SRQ (RDM) */
#define FFI_RSEND_MAX 256u          /* rendezvous sends waiting for FIN per endpoint (each
				       holds an MR of the context) */
#define FFI_UD_SLOTS 32u            /* bounce slots on the UD QP */
#define FFI_RX_POSTED_MAX 1024u     /* posted receives per endpoint (rx_attr->size) */
#define FFI_UNEXP_MAX 4096u         /* unexpected messages copied out per endpoint */
#define FFI_CQ_DEFAULT 1024u
#define FFI_CQ_MAX 65536u
#define FFI_EQ_MAX 65536u           /* fi_eq_open's size (fabtests' fi_eq_test asks 8192) */
#define FFI_BIND_MAX 16u            /* endpoints bound to one CQ */
#define FFI_AV_MAX 65536u
#define FFI_CONN_TIMEOUT_MS 10000
#define FFI_PEERS_MAX 4096u         /* RDM connections per endpoint */
#define FFI_QKEY 0x66616c63u        /* "falc" */
#define FFI_CQ_DATA_BYTES 4u        /* remote CQ data: falcon's 32-bit immediate */
#define FFI_INJECT_RDM 4096u        /* tx_attr->inject_size */
#define FFI_INJECT_DGRAM 1024u
/* an operation flag of the provider's own (no libfabric flag uses bit 63): the operation
 * was fi_inject*(), which never completes (fi_msg(3)); FI_INJECT as a flag of fi_sendmsg
 * and its kin only lets the buffer go (the completion follows FI_COMPLETION). */
#define FFI_NO_COMPLETION (1ull << 63)

/* An endpoint's address: what fi_getname returns and fi_av_insert takes in the
 * provider's own format (FFI_ADDR_FALCON; name.c has the sockaddr ones). */
struct ffi_addr {
	uint8_t family;             /* 4 or 6 */
	uint8_t flags;              /* FFI_AF_* */
	uint16_t cm_port;           /* the daemon's CM port, host order */
	uint32_t qpn;               /* the endpoint's UD QP (FFI_AF_SVC: a service port) */
	uint8_t ip[16];             /* IPv4 in the first 4 bytes */
};
#define FFI_AF_SVC 0x1u             /* known by node and service only: fi_av_insert asks the
				       endpoint's name socket at ip:qpn (name.c) */
/* the provider's address format (provider specific formats have FI_PROV_SPECIFIC) */
#define FFI_ADDR_FALCON (FI_PROV_SPECIFIC | 0x46u)
#define FFI_RESOLVE_MS 5000         /* fi_av_insert's wait for a name (FI_FALCON_RESOLVE_MS) */

/* In front of every message the provider sends. */
enum ffi_hop {
	FFI_OP_MSG = 1,
	FFI_OP_TAGGED = 2,
	FFI_OP_REQ = 3,             /* RDM connection request (UD) */
	FFI_OP_REP = 4,             /* RDM connection reply (UD) */
	FFI_OP_FIN = 5,             /* rendezvous done: data = the sender's op, tag = its seq */
	FFI_OP_ATOMIC = 6,          /* an atomic run at the target (atomic.c): data = the
				       initiator's ffi_rsend, tag = its seq; struct ffi_areq */
	FFI_OP_ATOMIC_RESP = 7,     /* its answer: data, tag echoed; struct ffi_aresp */
};

/* An emulated atomic: the request, then count operands, then count compare operands. */
struct ffi_areq {
	uint64_t addr;
	uint32_t rkey;
	uint8_t aop;                /* enum fi_op */
	uint8_t dt;                 /* enum fi_datatype */
	uint8_t kind;               /* FFI_AT_* */
	uint8_t pad;
	uint32_t count;
	uint32_t pad2;
};
/* ... and its answer: err (a positive FI_E*, 0), then len bytes of old values. */
struct ffi_aresp {
	int32_t err;
	uint32_t len;
};
enum { FFI_AT_WRITE, FFI_AT_FETCH, FFI_AT_COMPARE };
#define FFI_ATOMIC_MAX 4096u        /* bytes of operands per emulated atomic */
#define FFI_HF_DATA 0x1u            /* data carries remote CQ data */
#define FFI_HF_RNDV 0x2u            /* the payload is a struct ffi_rndv, not the message */

/* A rendezvous message's announcement: the receiver READs the message from here. */
struct ffi_rndv {
	uint64_t addr;
	uint64_t len;
	uint64_t seq;               /* the sender op's sequence number (FIN echoes it) */
	uint32_t rkey;
	uint32_t token;             /* the sender's op index */
};

struct ffi_hdr {
	uint8_t op;                 /* enum ffi_hop */
	uint8_t flags;              /* FFI_HF_* */
	uint16_t pad;
	uint32_t data;
	uint64_t tag;
};
/* UD datagrams also carry the sender's address (FI_SOURCE, REQ/REP) */
struct ffi_ud_hdr {
	struct ffi_hdr h;
	struct ffi_addr src;
	uint32_t qpn;               /* REQ / REP: the sender's RC QP */
	uint32_t pad;
};
/* the daemon's limits (struct falcon_device_attr of falcon_query_device) as the provider
 * uses them: a UD datagram's bound (receive slots, DGRAM messages), bytes per falcon work
 * request (RMA, rendezvous READ), the largest RDM message / RMA it offers */
static inline size_t ffi_ud_mtu(const struct falcon_device_attr *d) { return d->mtu; }
static inline size_t ffi_dgram_max(const struct falcon_device_attr *d)
{
	return d->mtu - sizeof(struct ffi_ud_hdr);
}
static inline size_t ffi_wr_max(const struct falcon_device_attr *d)
{
	return d->max_msg_size < UINT32_MAX ? d->max_msg_size : UINT32_MAX; /* an SGE's */
}
static inline size_t ffi_msg_max(const struct falcon_device_attr *d)
{
	return d->max_msg_size > FFI_RNDV_MAX ? d->max_msg_size : FFI_RNDV_MAX;
}
#define FFI_SLOT_BYTES (FFI_MAX_MSG + sizeof(struct ffi_hdr))

extern struct fi_provider ffi_prov;

#define FFI_WARN(subsys, ...) FI_WARN(&ffi_prov, subsys, __VA_ARGS__)

/* ---- fabric, domain ---- */

struct ffi_fabric {
	struct fid_fabric fabric;
};

struct ffi_ah {
	LIST_ENTRY(ffi_ah) link;
	char host[64];              /* "a.b.c.d:port" / "[v6]:port" */
	struct falcon_ah *ah;
};

struct ffi_domain {
	struct fid_domain domain;
	struct ffi_fabric *fab;
	struct falcon_context *ctx;
	struct falcon_pd *pd;
	struct ffi_addr self;       /* the daemon's part of every endpoint's address */
	struct falcon_device_attr dev; /* the daemon's limits (ffi_query_device) */
	uint64_t mr_mode;
	uint32_t api_version;
	uint32_t addr_format;       /* FFI_ADDR_FALCON, FI_SOCKADDR_IN or FI_SOCKADDR_IN6 */
	int refs;                   /* objects open on it */
	LIST_HEAD(, ffi_ah) ahs;
	LIST_HEAD(, ffi_mr) mrs;    /* for the targets of emulated atomics */
	pthread_mutex_t lock;       /* every entry point on the domain's objects holds it
				       (FI_THREAD_SAFE); recursive */
};

static inline void ffi_lock(struct ffi_domain *d) { pthread_mutex_lock(&d->lock); }
static inline void ffi_unlock(struct ffi_domain *d) { pthread_mutex_unlock(&d->lock); }

struct ffi_mr {
	struct fid_mr mr;
	struct ffi_domain *dom;
	struct falcon_mr *fmr;
	uint64_t access;            /* FI_REMOTE_READ / FI_REMOTE_WRITE: emulated atomics check */
	LIST_ENTRY(ffi_mr) link;
};

struct ffi_av_entry {
	struct ffi_addr addr;
	uint16_t svc;               /* the endpoint's name port (sockaddr formats), 0: unknown */
	struct ffi_ah *ah;          /* made on first use (DGRAM; RDM peers hold their own) */
	bool used;
};

struct ffi_av {
	struct fid_av av;
	struct ffi_domain *dom;
	enum fi_av_type type;
	struct ffi_av_entry *tab;
	size_t count, cap;
	int refs;
};

/* ---- completion queues and event queues ---- */

struct ffi_cqe {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int err;                    /* positive FI_E*; 0: success */
	int prov_errno;
	size_t olen;
};

struct ffi_ep;

struct ffi_cq {
	struct fid_cq cq;
	struct ffi_domain *dom;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	struct ffi_cqe *ring;
	uint32_t size, head, count;
	struct ffi_ep *eps[FFI_BIND_MAX];
	unsigned neps;
	int epfd;                   /* the bound endpoints' falcon CQ fds and sigfd */
	int sigfd;                  /* fi_cq_signal */
	int refs;
};

/* A counter (cntr.c). */
struct ffi_cntr {
	struct fid_cntr cntr;
	struct ffi_domain *dom;
	enum fi_wait_obj wait_obj;
	uint64_t value, err;
	struct ffi_ep *eps[FFI_BIND_MAX];
	unsigned neps;
	int epfd;                   /* the bound endpoints' falcon CQ fds and evfd */
	int evfd;                   /* readable after fi_cntr_add / set */
	int refs;
};

struct ffi_eq_ev {
	uint32_t event;
	size_t len;
	bool err;
	union {
		struct fi_eq_entry entry;
		struct fi_eq_err_entry err_entry;
		uint8_t raw[256];
	} u;
};

struct ffi_eq {
	struct fid_eq eq;
	struct ffi_fabric *fab;
	int efd;                    /* readable while events are queued */
	struct ffi_eq_ev *ring;
	uint32_t size, head, count;
};

/* ---- endpoints ---- */

enum ffi_kind {
	FFI_K_SEND = 1,             /* a message from a tx slot */
	FFI_K_RMA,                  /* READ / WRITE / atomic, maybe through a tx slot */
	FFI_K_CTRL,                 /* REQ / REP from a tx slot, no completion */
	FFI_K_RX,                   /* an SRQ bounce slot */
	FFI_K_UDRX,                 /* a UD QP bounce slot */
	FFI_K_RREAD,                /* a rendezvous READ at the receiver */
	FFI_K_RCHUNK,               /* a piece of an RMA above FFI_MAX_MSG */
};

struct ffi_peer;

/* A transmit operation: one tx slot, one send WR, at most one completion. */
struct ffi_op {
	uint32_t idx;               /* its tx slot */
	uint8_t kind;               /* enum ffi_kind */
	bool comp;                  /* report a completion */
	bool in_use;
	void *context;
	uint64_t cq_flags;          /* FI_SEND | FI_MSG, FI_WRITE | FI_RMA, ... */
	struct falcon_send_wr wr;
	struct falcon_sge sge;
	void *result;               /* READ / fetching atomic through the slot: copy here */
	size_t result_len;
	struct ffi_peer *peer;      /* RDM: the connection it goes on */
	int32_t rsend;              /* the announcement of rendezvous send ep->rsends[rsend]
				       (-1: none); the op ends when it is sent */
	uint64_t seq;
	struct ffi_rrx *rrx;        /* FFI_K_RREAD: the receive it reads for */
	struct ffi_rjob *rjob;      /* FFI_K_RCHUNK: the RMA it is a piece of */
	uint64_t t0_ms;             /* when it began waiting for its connection */
	TAILQ_ENTRY(ffi_op) link;   /* free list / a peer's pending list */
};
TAILQ_HEAD(ffi_op_list, ffi_op);

enum ffi_peer_state {
	FFI_PEER_CONNECTING = 1,    /* REQ sent, waiting for REP */
	FFI_PEER_CONNECTED,
	FFI_PEER_FAILED,
};

struct ffi_peer {
	struct ffi_addr addr;
	struct ffi_ah *ah;
	struct falcon_qp *qp;
	struct falcon_qp *qp2;      /* the endpoint itself: the QP that qp is connected to */
	uint32_t remote_qpn;
	int state;                  /* enum ffi_peer_state */
	bool rep_owed;              /* a REP waits for a free tx slot */
	fi_addr_t fa;               /* its AV entry (FI_ADDR_NOTAVAIL: not inserted yet) */
	uint64_t since_ms;
	struct ffi_op_list pending;
	LIST_ENTRY(ffi_peer) link;
};

/* A rendezvous send waiting for its FIN. It holds no tx slot (those go back as soon as the
 * announcement is sent): slots held until the peer's FIN deadlocked two endpoints that
 * both sent a window of rendezvous messages, each with no slot left for its READs. */
struct ffi_rsend {
	void *context;
	uint64_t cq_flags;
	uint64_t seq;               /* the announcement's (FIN echoes it) */
	struct falcon_mr *mr;       /* the message, registered until FIN */
	bool comp, in_use;
	bool atomic;                /* an emulated atomic waiting for its answer (atomic.c) */
	void *result;               /* ... whose old values go here */
	size_t result_len;
};

/* An atomic's answer waiting for a tx slot (atomic.c). */
struct ffi_aowed {
	struct ffi_peer *peer;
	size_t len;
	TAILQ_ENTRY(ffi_aowed) link;
	uint8_t data[];
};
TAILQ_HEAD(ffi_aowed_list, ffi_aowed);

/* A posted receive. */
struct ffi_rx {
	void *context;
	struct iovec iov[4];
	size_t iov_count, len;
	fi_addr_t src;              /* FI_ADDR_UNSPEC: any */
	uint64_t tag, ignore;
	uint64_t flags;             /* FI_MSG or FI_TAGGED, FI_COMPLETION, FI_MULTI_RECV */
	size_t used;                /* FI_MULTI_RECV: bytes of the buffer taken */
	TAILQ_ENTRY(ffi_rx) link;
};
TAILQ_HEAD(ffi_rx_list, ffi_rx);

/* A rendezvous receive in progress: READs from the sender, then FIN. */
struct ffi_rrx {
	void *context;
	uint64_t rflags;
	struct ffi_hdr h;
	struct ffi_rndv rv;
	fi_addr_t src;
	struct ffi_peer *peer;
	uint8_t *dst;
	size_t total, next;         /* bytes to read, bytes posted */
	unsigned reads_out;
	int err;                    /* FI_E* of a failed READ */
	int prov_errno;
	struct falcon_mr *mr;
	bool done;                  /* all read: complete and FIN */
	TAILQ_ENTRY(ffi_rrx) link;
};
TAILQ_HEAD(ffi_rrx_list, ffi_rrx);

/* An RMA above FFI_MAX_MSG: one WR, or pieces of ffi_wr_max as tx operations come free. */
struct ffi_rjob {
	void *context;
	uint64_t cq_flags;
	bool comp, write, imm;
	uint32_t imm_data;
	fi_addr_t dest;
	uint8_t *local;
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
	size_t total, next;
	unsigned out;
	int err, prov_errno;
	struct falcon_mr *mr;       /* the local buffer, registered for the job (no desc) */
	uint64_t t0_ms;
	TAILQ_ENTRY(ffi_rjob) link;
};
TAILQ_HEAD(ffi_rjob_list, ffi_rjob);

/* A message that arrived before its receive. */
struct ffi_unexp {
	struct ffi_hdr h;
	fi_addr_t src;
	struct ffi_peer *peer;
	size_t len;
	uint8_t *data;              /* its copy, or the slot it still holds */
	int slot;                   /* >= 0: an SRQ / UD slot to repost once matched */
	uint8_t slot_kind;          /* FFI_K_RX or FFI_K_UDRX */
	void *claim;                /* FI_CLAIM: the context that claimed it (NULL: none) */
	bool rndv;                  /* data is nothing: rv says where the message is */
	struct ffi_rndv rv;
	TAILQ_ENTRY(ffi_unexp) link;
};
TAILQ_HEAD(ffi_unexp_list, ffi_unexp);

struct ffi_ep {
	struct fid_ep ep;
	struct ffi_domain *dom;
	enum fi_ep_type type;
	uint64_t caps;
	bool enabled;
	struct ffi_cq *tx_cq, *rx_cq;
	uint64_t tx_flags, rx_flags;  /* bind flags (FI_SELECTIVE_COMPLETION) */
	uint64_t tx_op_flags, rx_op_flags;
	size_t min_multi_recv;      /* FI_OPT_MIN_MULTI_RECV (default FFI_MAX_MSG) */
	struct ffi_av *av;
	struct ffi_eq *eq;
	struct ffi_cntr *cntr_send, *cntr_recv, *cntr_read, *cntr_write, *cntr_rwrite;

	struct falcon_cq *fcq;
	struct falcon_qp *ud;
	struct falcon_srq *srq;
	struct ffi_addr self;
	uint16_t svc;               /* the port of its name socket (name.c) */
	int name_fd, name_stop;
	pthread_t name_thread;
	bool name_running;

	uint8_t *pool;              /* tx slots, SRQ slots, UD slots */
	size_t pool_len;
	struct falcon_mr *pool_mr;
	uint8_t *tx_slots, *rx_slots, *ud_slots;

	struct ffi_op ops[FFI_TX_SLOTS];
	struct ffi_op_list free_ops;
	unsigned ops_free;
	struct ffi_rsend rsends[FFI_RSEND_MAX];
	uint32_t rsend_free[FFI_RSEND_MAX]; /* a stack of free indexes */
	unsigned nrsend_free;
	struct ffi_aowed_list aowed;

	LIST_HEAD(, ffi_peer) peers;
	struct ffi_rx_list rx_msg, rx_tag;
	unsigned rx_posted;
	struct ffi_unexp_list unexp;
	unsigned unexp_copied;
	struct ffi_rrx_list rrx;    /* rendezvous receives under way */
	struct ffi_rjob_list rjobs; /* large RMAs under way */
	uint64_t seq;
	unsigned npeers;
	uint64_t dgram_drops;       /* DGRAM: datagrams dropped (no room for them) */
	uint64_t rx_drops;          /* messages that were not the provider's (bad header) */
	uint64_t req_drops;         /* connection requests refused (FFI_PEERS_MAX, no AH) */
	int conn_timeout_ms;        /* FI_FALCON_CONN_TIMEOUT_MS, else FFI_CONN_TIMEOUT_MS */
};

/* ---- functions shared between the files ---- */

/* prov.c */
/* The answer of every fid operation falcon does not offer: -FI_ENOSYS. */
int ffi_bind_nosys(struct fid *fid, struct fid *bfid, uint64_t flags);
int ffi_control_nosys(struct fid *fid, int command, void *arg);
int ffi_ops_open_nosys(struct fid *fid, const char *name, uint64_t flags, void **ops,
		       void *context);
int ffi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
int ffi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		void *context);
uint64_t ffi_now_ms(void);
int ffi_addr_host(const struct ffi_addr *a, char *buf, size_t len);
int ffi_self_addr(struct ffi_addr *a);
/* falcon_query_device on ctx into dev; a daemon that predates it (-EOPNOTSUPP) gets the
 * limits such daemons had (FFI_OLD_WR_MAX per WR, MTU 4096...). 0 or a negative errno. */
int ffi_query_device(struct falcon_context *ctx, struct falcon_device_attr *dev);

/* name.c */
size_t ffi_addrlen(uint32_t fmt);
int ffi_addr_from(uint32_t fmt, const void *p, struct ffi_addr *a);
void ffi_addr_to(uint32_t fmt, const struct ffi_addr *a, uint16_t svc, void *p);
int ffi_addr_of_node(const char *node, const char *service, int family, struct ffi_addr *a);
int ffi_name_resolve(const struct ffi_addr *a, int timeout_ms, struct ffi_addr *out, uint16_t *svc);
int ffi_name_open(struct ffi_ep *ep, uint16_t port);
void ffi_name_close(struct ffi_ep *ep);

/* cntr.c */
int ffi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **fc,
		  void *context);
int ffi_cntr_bind_ep(struct ffi_cntr *c, struct ffi_ep *ep);
void ffi_cntr_unbind_ep(struct ffi_cntr *c, struct ffi_ep *ep);
void ffi_count(struct ffi_ep *ep, uint64_t flags, bool err);

/* atomic.c */
size_t ffi_atomic_dtsize(enum fi_datatype dt);
bool ffi_atomic_valid(enum fi_datatype dt, enum fi_op op, int kind);
bool ffi_atomic_native(enum fi_datatype dt, enum fi_op op, int kind, size_t count);
void ffi_atomic_exec(enum fi_datatype dt, enum fi_op op, void *dst, const void *src,
		     const void *cmp, void *res, size_t count);
ssize_t ffi_atomic_emulate(struct ffi_ep *ep, int kind, const void *buf, size_t count,
			   const void *cmp, void *result, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op aop, uint64_t flags,
			   void *context);
void ffi_atomic_answer(struct ffi_ep *ep, const struct ffi_hdr *h, const uint8_t *body, size_t len);
void ffi_atomic_serve(struct ffi_ep *ep, struct ffi_peer *p, const struct ffi_hdr *h,
		      const uint8_t *body, size_t len);
void ffi_atomic_pump(struct ffi_ep *ep);

/* domain.c */
int ffi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context);
struct ffi_ah *ffi_ah_get(struct ffi_domain *dom, const struct ffi_addr *a);
const struct ffi_av_entry *ffi_av_get(struct ffi_av *av, fi_addr_t fa);
struct ffi_ah *ffi_av_ah(struct ffi_av *av, fi_addr_t fa);
fi_addr_t ffi_av_find(struct ffi_av *av, const struct ffi_addr *a);
int ffi_addr_cmp(const struct ffi_addr *a, const struct ffi_addr *b);
int ffi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
		     struct fi_atomic_attr *attr, uint64_t flags);

/* cq.c */
int ffi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		void *context);
int ffi_cq_bind_ep(struct ffi_cq *cq, struct ffi_ep *ep);
int ffi_cq_trywait(struct ffi_cq *cq);
void ffi_cq_unbind_ep(struct ffi_cq *cq, struct ffi_ep *ep);
uint32_t ffi_cq_room(const struct ffi_cq *cq);
void ffi_cq_push(struct ffi_cq *cq, const struct ffi_cqe *e);
int ffi_err_of_status(uint32_t status);

/* ep.c */
int ffi_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		 void *context);
void ffi_ep_progress(struct ffi_ep *ep);
struct ffi_op *ffi_op_get(struct ffi_ep *ep);
void ffi_op_put(struct ffi_ep *ep, struct ffi_op *op);
uint8_t *ffi_op_slot(struct ffi_ep *ep, const struct ffi_op *op);
ssize_t ffi_op_submit(struct ffi_ep *ep, struct ffi_op *op, fi_addr_t dest);

/* rma.c */
extern struct fi_ops_rma ffi_rma_ops;
extern struct fi_ops_atomic ffi_atomic_ops;
void ffi_rma_complete(struct ffi_ep *ep, struct ffi_op *op);
void ffi_rjob_pump(struct ffi_ep *ep);
void ffi_rjob_chunk_done(struct ffi_ep *ep, struct ffi_op *op, const struct falcon_wc *wc);

/* ep.c, for rma.c */
bool ffi_iov_ok(const struct iovec *iov, size_t count);
struct ffi_rsend *ffi_rsend_get(struct ffi_ep *ep);
void ffi_rsend_put(struct ffi_ep *ep, struct ffi_rsend *rs);
/* Send the control message hdr (len bytes in the pool) for rsend slot token as op; on
 * failure rs and op are given back. */
ssize_t ffi_rsend_submit(struct ffi_ep *ep, struct ffi_op *op, struct ffi_rsend *rs,
			 const void *hdr, uint32_t len, uint32_t token, fi_addr_t dest);
/* Whether a transmit with flags reports a success completion (fi_cq(3)): never for
 * fi_inject*(); on a CQ bound with FI_SELECTIVE_COMPLETION only with FI_COMPLETION. */
static inline bool ffi_tx_comp(const struct ffi_ep *ep, uint64_t flags)
{
	return !(flags & FFI_NO_COMPLETION) &&
	       (!(ep->tx_flags & FI_SELECTIVE_COMPLETION) || (flags & FI_COMPLETION));
}
struct ffi_peer *ffi_peer_for(struct ffi_ep *ep, fi_addr_t fa);
int ffi_post_on(struct ffi_ep *ep, struct falcon_qp *qp, struct ffi_op *op);
struct ffi_op *ffi_op_get_any(struct ffi_ep *ep);

#endif
