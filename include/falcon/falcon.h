/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon/falcon.h - libfalcon-client: RDMA over Falcon through falcond, with a verbs-like
 * API (DESIGN.md, "The client data path").
 *
 * A program opens a context on the local falcond, allocates a protection domain,
 * registers memory, creates completion queues, and gets connected RC queue pairs from
 * falcon_connect / falcon_accept (rdma_cm style: a host, a service number), or creates
 * queue pairs and moves them through their states itself (verbs style: falcon_create_qp,
 * falcon_modify_qp with the peer's QP number learned out of band). UD queue pairs send
 * datagrams through address handles (falcon_create_ah); XRC queue pairs send into the
 * shared receive queues of an XRC domain at the peer (falcon_open_xrcd). Work requests
 * go straight into send and receive rings the daemon shares with the process; completions
 * come back through a completion ring. The Unix socket to the daemon carries only the
 * control path (open, PD, MR, CQ, QP, connect, destroy).
 *
 *   ctx = falcon_open(NULL);                 pd = falcon_alloc_pd(ctx);
 *   buf = falcon_alloc_buf(ctx, len);        mr = falcon_reg_mr(pd, buf, len, access);
 *   cq  = falcon_create_cq(ctx, 256);
 *   qp  = falcon_connect(pd, "host", service, &attr)   |   l = falcon_listen(ctx, service, 8);
 *                                                       |   qp = falcon_accept(l, pd, &attr, -1);
 *   falcon_post_send(qp, &wr, &bad);  ...  falcon_poll_cq(cq, n, wc);
 *
 * Errors: functions returning int return 0 or a negative errno and set errno to its
 * absolute value; constructors return NULL and set errno. falcon_strerror names them;
 * falcon_error_detail says what the last failure of the thread concerned (the socket
 * path, the peer daemon and its reason).
 * Completion statuses and opcodes are numbered as ibverbs' (enum ibv_wc_status,
 * ibv_wc_opcode), so verbs code maps one to one.
 *
 * Memory: falcon_alloc_buf gives memory the daemon maps (a sealed memfd): RDMA on it is
 * zero-copy. falcon_reg_mr also takes any other memory of the process, which the daemon
 * reaches by copy. As with verbs, a buffer a work request names must not change before
 * the request completes.
 *
 * Threads: a context's control calls are serialized by the library; a QP's post calls
 * and a CQ's poll calls need the caller's own serialization (one thread per QP / CQ),
 * as in most verbs providers. falcon_get_async_event may be called from any thread.
 *
 * When falcond goes (stopped or killed), nothing more completes: calls on the socket
 * return -ENOTCONN, falcon_wait_cq too, falcon_get_async_event reports
 * FALCON_EVENT_DEVICE_FATAL, and the post calls return -ENOTCONN from at most
 * FALCON_DAEMON_CHECK_MS after that (see falcon_post_send). Close the context; open a
 * new one once the daemon is back.
 */
#ifndef FALCON_FALCON_H
#define FALCON_FALCON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FALCON_SOCKET_DEFAULT "/run/falcon/falcond.sock" /* or $FALCON_SOCKET */
#define FALCON_CM_PORT_DEFAULT 7471 /* a daemon's connection-manager UDP port */

struct falcon_context;
struct falcon_pd;
struct falcon_cq;
struct falcon_listener;
struct falcon_srq;
struct falcon_recv_wr;
struct falcon_ah;
struct falcon_xrcd;

/* A registered region. */
struct falcon_mr {
	void *addr;
	size_t length;
	uint32_t lkey;   /* names it in this process's work requests */
	uint32_t rkey;   /* names it in a peer's RDMA READ / WRITE / atomic */
};

/* A queue pair. qp_num is its 24-bit number (as the peer sees it in completions). */
struct falcon_qp {
	uint32_t qp_num;
	uint32_t remote_qp_num; /* the connected peer's QP */
};

/* ---- context ---- */

/* Connect to falcond's API socket at socket_path (NULL: $FALCON_SOCKET, else
 * FALCON_SOCKET_DEFAULT). NULL and errno: ENOENT (no socket there) / ECONNREFUSED (a stale
 * socket: no daemon), EACCES, ENAMETOOLONG, EPROTO (a daemon of another protocol
 * version), ENOTCONN (the daemon hung up: too many clients), ENOMEM; falcon_error_detail
 * names the path tried and where it came from, e.g. "falcond socket /run/falcon/
 * falcond.sock (the default): no such socket (is falcond running? ...)". */
struct falcon_context *falcon_open(const char *socket_path);
/* Close everything the context holds (QPs, CQs, MRs, PDs, buffers) and the context. */
int falcon_close(struct falcon_context *ctx);

enum falcon_atomic_cap { /* = enum ibv_atomic_cap */
	FALCON_ATOMIC_NONE = 0,
	FALCON_ATOMIC_HCA = 1,     /* atomic with respect to every other RDMA atomic the
				      daemon runs, not to the CPU's own atomics */
	FALCON_ATOMIC_GLOB = 2,
};

#define FALCON_DEVICE_MASKED_ATOMICS 0x1u /* masked CmpSwap / FetchAdd (RFC 7306) */
#define FALCON_DEVICE_SEND_WITH_INV 0x2u  /* SEND with Invalidate, remote invalidation */
#define FALCON_DEVICE_XRC 0x4u            /* XRC QPs and domains */
#define FALCON_DEVICE_SRQ 0x8u            /* shared receive queues */

/* What the daemon holds, as its configuration sets it: verbs' ibv_query_device and
 * ibv_query_port in one. Counts of objects (max_qp ... max_ah) are the daemon's whole
 * tables, shared by all its clients; a context may also hold at most max_objects objects
 * of all kinds together, max_client_qp QPs and max_client_mr memory regions (EDQUOT).
 * Fields added later go at the end: the library writes only the first size bytes, and
 * zeroes what a daemon too old to report leaves unknown. */
struct falcon_device_attr {
	size_t size;               /* sizeof(struct falcon_device_attr), set by the caller */
	uint64_t max_msg_size;     /* bytes per SEND, WRITE (with immediate) or READ work
				      request: the sum of its SGE lengths (2^31 unless the
				      daemon was told less). UD SENDs: at most mtu */
	uint64_t max_mr_size;      /* bytes one falcon_reg_mr may cover */
	uint32_t mtu;              /* RDMA payload bytes per packet (--mtu) */
	uint32_t max_qp;           /* QPs of all types */
	uint32_t max_conn;         /* Falcon connections between daemons: one per connected
				      RC / XRC QP pair, one per peer daemon of address handles */
	uint32_t max_cq;
	uint32_t max_cqe;          /* completions one CQ holds (falcon_create_cq's cqe) */
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_srq;
	uint32_t max_ah;
	uint32_t max_send_wr;      /* send ring entries per QP (max_send_wr of the attr) */
	uint32_t max_recv_wr;      /* receive ring entries per QP */
	uint32_t max_srq_wr;       /* receive WRs per SRQ */
	uint32_t max_send_sge;     /* SGEs per send WR */
	uint32_t max_recv_sge;     /* SGEs per receive WR */
	uint32_t max_srq_sge;
	uint32_t max_inflight;     /* transactions in flight per QP (qp_init_attr's) */
	uint32_t max_objects;      /* objects one context may hold, every kind counted */
	uint32_t max_clients;      /* client processes (contexts) of the daemon */
	uint32_t atomic_cap;       /* enum falcon_atomic_cap */
	uint32_t atomic_size;      /* bytes of an atomic's operand and result (8) */
	uint32_t flags;            /* FALCON_DEVICE_* */
	uint32_t max_client_qp;    /* QPs one context may hold (falcond --client-max-qps) */
	uint32_t max_client_mr;    /* memory regions one context may hold (--client-max-mrs) */
};

/* Fill attr (attr->size set by the caller; at most that many bytes written) with the
 * limits of the daemon ctx talks to. 0, or -EINVAL (NULL, size smaller than the size
 * field), -EOPNOTSUPP (a daemon that predates the request), -ENOTCONN (daemon gone). */
int falcon_query_device(struct falcon_context *ctx, struct falcon_device_attr *attr);

/* Where the daemon ctx talks to listens, as its --listen, --cm-port and --port say: the
 * address literal (IPv4 or IPv6, "0.0.0.0" / "::" for every address) into addr (len
 * bytes with the NUL), its connection-manager port into *cm_port and its data port into
 * *data_port (either may be NULL). What a peer's falcon_connect names as host is
 * "addr:cm_port" (the libibverbs library makes its GID of it). 0, or -EINVAL (NULL, len
 * 0), -ENAMETOOLONG (len too small), -EOPNOTSUPP (a daemon that predates the request),
 * -ENOTCONN (daemon gone). */
int falcon_query_addr(struct falcon_context *ctx, char *addr, size_t len, uint16_t *cm_port,
		      uint16_t *data_port);

/* ---- protection domains and memory ---- */

struct falcon_pd *falcon_alloc_pd(struct falcon_context *ctx);
/* -EBUSY while MRs or QPs use it. */
int falcon_dealloc_pd(struct falcon_pd *pd);

/* len bytes (rounded up to a page) of zeroed memory the daemon can reach without a copy.
 * NULL and errno: EINVAL (len 0 or above 1 TiB), ENOMEM, or the errors of memfd_create. */
void *falcon_alloc_buf(struct falcon_context *ctx, size_t len);
/* Free a buffer of falcon_alloc_buf. -EINVAL: not one; -EBUSY: an MR still covers it. */
int falcon_free_buf(struct falcon_context *ctx, void *buf);

enum falcon_access {
	FALCON_ACCESS_LOCAL_WRITE = 1u << 0,
	FALCON_ACCESS_REMOTE_READ = 1u << 1,
	FALCON_ACCESS_REMOTE_WRITE = 1u << 2,
	FALCON_ACCESS_REMOTE_ATOMIC = 1u << 3,
	FALCON_ACCESS_REMOTE_INVALIDATE = 1u << 4,
};

/* Register [addr, addr+len) with access (enum falcon_access; REMOTE_WRITE and
 * REMOTE_ATOMIC need LOCAL_WRITE, as in verbs). Any memory of the process may be
 * registered: a range inside one buffer of falcon_alloc_buf is mapped by the daemon
 * (zero copy); any other (malloc, static, stack) is reached by the daemon with
 * process_vm_readv/writev, a system call per access, so prefer falcon_alloc_buf for
 * large or frequent transfers. Atomics on such memory are atomic with respect to every
 * other RDMA atomic (IB's ATOMIC_HCA), not to the process's own CPU atomics. NULL and
 * errno: EINVAL (bad access bits, len 0), EFAULT (the range is not mapped in this
 * process), EPERM (the daemon may not reach this process: another user without
 * CAP_SYS_PTRACE), ENOSPC (the daemon's region table is full), EDQUOT (this context's
 * quota of regions or objects is used up: falcond --client-max-mrs, --client-max-objects),
 * ENOTCONN (daemon gone). */
struct falcon_mr *falcon_reg_mr(struct falcon_pd *pd, void *addr, size_t len, unsigned access);
int falcon_dereg_mr(struct falcon_mr *mr);

/* ---- completion queues ---- */

/* A CQ with room for at least cqe completions (rounded up to a power of 2, at most
 * 65536). NULL and errno: EINVAL, ENOSPC, ENOMEM. */
struct falcon_cq *falcon_create_cq(struct falcon_context *ctx, int cqe);
/* -EBUSY while a QP uses it. */
int falcon_destroy_cq(struct falcon_cq *cq);

enum falcon_wc_status { /* = enum ibv_wc_status */
	FALCON_WC_SUCCESS = 0,
	FALCON_WC_LOC_LEN_ERR = 1,
	FALCON_WC_LOC_QP_OP_ERR = 2,
	FALCON_WC_LOC_PROT_ERR = 4,
	FALCON_WC_WR_FLUSH_ERR = 5,
	FALCON_WC_LOC_ACCESS_ERR = 8,
	FALCON_WC_REM_INV_REQ_ERR = 9,
	FALCON_WC_REM_ACCESS_ERR = 10,
	FALCON_WC_REM_OP_ERR = 11,
	FALCON_WC_RETRY_EXC_ERR = 12,
	FALCON_WC_RNR_RETRY_EXC_ERR = 13,
	FALCON_WC_GENERAL_ERR = 21,
};

enum falcon_wc_opcode { /* = enum ibv_wc_opcode */
	FALCON_WC_SEND = 0,
	FALCON_WC_RDMA_WRITE = 1,
	FALCON_WC_RDMA_READ = 2,
	FALCON_WC_COMP_SWAP = 3,
	FALCON_WC_FETCH_ADD = 4,
	FALCON_WC_MASKED_COMP_SWAP = 9,
	FALCON_WC_MASKED_FETCH_ADD = 10,
	FALCON_WC_RECV = 128,
	FALCON_WC_RECV_RDMA_WITH_IMM = 129,
};

#define FALCON_WC_WITH_IMM 0x2u   /* imm_data is valid */
#define FALCON_WC_WITH_INV 0x8u   /* invalidated_rkey is valid */

struct falcon_wc {
	uint64_t wr_id;
	uint32_t status;           /* enum falcon_wc_status */
	uint32_t opcode;           /* enum falcon_wc_opcode */
	uint32_t wc_flags;         /* FALCON_WC_WITH_* */
	uint32_t byte_len;
	uint32_t imm_data;         /* host byte order */
	uint32_t invalidated_rkey;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t vendor_err;       /* Falcon completion code | IB NAK code << 8 */
	uint32_t src_id;           /* UD receives: the daemon that sent it, as falcond
				      numbers the daemons it talks to (0: not known; not UD):
				      falcon_create_ah_from_wc takes it. The same number for
				      every QP and process of this host while falcond runs.
				      (In what was struct falcon_wc's tail padding: the size
				      is 48 bytes as before.) */
};

/* Up to n completions, oldest first: their number (0: none), or -EOVERFLOW, -EPROTO (the
 * daemon broke the ring). Never blocks, never makes a system call.
 *
 * -EOVERFLOW: the CQ overflowed (a completion came while it held as many as it has room
 * for), as verbs' CQ error. The completions it held are returned first; once they are
 * read every call returns -EOVERFLOW, for good. The completion that did not fit and every
 * later one for this CQ are lost: none can be delivered into it any more. At the
 * overflow each QP whose send or receive CQ it is went to the error state and its
 * outstanding work requests were flushed (FALCON_WC_WR_FLUSH_ERR): those of its other
 * CQ (a receive CQ when this one is its send CQ, or the reverse) complete there if that
 * CQ is healthy; those of this CQ are among the lost. falcon_get_async_event reports
 * FALCON_EVENT_CQ_ERR for the CQ, then FALCON_EVENT_QP_FATAL for each QP. The CQ takes
 * no new QP (falcon_create_qp, falcon_connect, falcon_accept: EIO) and none of its QPs
 * leaves RESET again (falcon_modify_qp: -EIO): destroy the QPs, then the CQ. Size a CQ
 * for every work request that may be outstanding on the QPs that complete into it. */
int falcon_poll_cq(struct falcon_cq *cq, int n, struct falcon_wc *wc);
/* Ask for a wakeup of falcon_cq_fd at the next completion (solicited_only is taken as
 * "any completion": falcond wakes on every one). As with verbs, poll once more after
 * arming: a completion that arrived before is not announced. */
int falcon_req_notify_cq(struct falcon_cq *cq, int solicited_only);
/* A file descriptor that polls readable after a requested notification. */
int falcon_cq_fd(const struct falcon_cq *cq);
/* Consume the notification(s) of the fd: 0, -EAGAIN (none pending; the fd is
 * non-blocking). */
int falcon_cq_ack_events(struct falcon_cq *cq);
/* Wait (poll the fd) until a completion is there or timeout_ms passes (-1: forever):
 * arms, re-polls and sleeps as the verbs idiom does. With FALCON_POLL_US=N in the
 * environment of falcon_open, it first polls the CQ ring for up to N us (yielding the CPU
 * between empty polls: falcond may share the core), then arms and sleeps: a completion
 * that comes within N us costs no wakeup, at the price of that much CPU per wait. Unset
 * (or 0): it sleeps at once. Returns the number of completions
 * polled into wc (> 0), 0 on timeout, -ENOTCONN when falcond has gone (stopped or died:
 * nothing more will complete; open a new context once it is back), -EOVERFLOW (as
 * falcon_poll_cq), or another negative errno. */
int falcon_wait_cq(struct falcon_cq *cq, int n, struct falcon_wc *wc, int timeout_ms);

/* ---- asynchronous events ---- */

enum falcon_event_type { /* = enum ibv_event_type, for the events falcon has */
	FALCON_EVENT_CQ_ERR = 0,     /* element.cq overflowed (falcon_poll_cq, -EOVERFLOW) */
	FALCON_EVENT_QP_FATAL = 1,   /* element.qp went to the error state by an error: a
					failed work request in FALCON_ERR_VERBS mode, its
					connection lost or given up (timers), its CQ
					overflowed, a connection of falcon_modify_qp's RTR that
					could not be set up; not a falcon_modify_qp to ERR */
	FALCON_EVENT_DEVICE_FATAL = 8, /* falcond has gone: nothing more completes; element
					  NULL */
	FALCON_EVENT_QP_LAST_WQE_REACHED = 16, /* element.qp, fed by an SRQ (or an XRC_RECV
						  QP), is in the error state and takes no more
						  of the SRQ's work requests */
};

struct falcon_async_event {
	size_t size;               /* sizeof(struct falcon_async_event), set by the caller */
	uint32_t event_type;       /* enum falcon_event_type */
	uint32_t num;              /* QP events: the QP's qp_num; CQ_ERR: the daemon's number
				      of the CQ; DEVICE_FATAL: 0 */
	union {
		struct falcon_cq *cq;
		struct falcon_qp *qp;
	} element;                 /* the object; NULL when the program has destroyed it since,
				      has not been handed it yet (a QP falcon_connect or
				      falcon_accept is still making), or for DEVICE_FATAL;
				      valid while the program does not destroy it */
};

/* The next asynchronous event of the context, oldest first, without blocking: 0 and
 * *ev; -EAGAIN (none now); -ENOTCONN (falcond has gone and FALCON_EVENT_DEVICE_FATAL has
 * been returned: nothing more will come); -EINVAL (NULL, ev->size too small); -EPROTO
 * (the daemon broke the protocol). Events of one object come in the order they happened;
 * an object's repeated events of one kind that the program has not read yet may come as
 * one (falcond never blocks on a client that does not read them). DEVICE_FATAL comes after
 * every event the daemon sent before it went. */
int falcon_get_async_event(struct falcon_context *ctx, struct falcon_async_event *ev);
/* A file descriptor that polls readable (POLLIN) while falcon_get_async_event has
 * something to return, and for good once falcond has gone (POLLHUP). Do not read it
 * yourself. -EINVAL for NULL. */
int falcon_async_fd(const struct falcon_context *ctx);

/* ---- queue pairs ---- */

enum falcon_qp_type {
	FALCON_QPT_RC = 1,        /* reliable connected */
	FALCON_QPT_UD = 2,        /* unreliable datagram: SENDs of at most one MTU through
				     address handles; Falcon still delivers them reliably */
	FALCON_QPT_XRC_SEND = 3,  /* XRC initiator: sends only, into a peer's XRC SRQ */
	FALCON_QPT_XRC_RECV = 4,  /* XRC target: no queues; SENDs land in its domain's SRQs */
};

enum falcon_ordering { /* RDMA over Falcon spec 6.2 */
	FALCON_ORDER_STRONG = 0,  /* ordered Falcon connection (default) */
	FALCON_ORDER_WEAK = 1,    /* unordered connection, in-order completions */
};

enum falcon_err_mode { /* RDMA over Falcon spec 6.3 */
	FALCON_ERR_VERBS = 0,     /* a failed WR moves the QP to the error state (default) */
	FALCON_ERR_CIE = 1,       /* complete in error: the WR fails, the QP goes on */
};

struct falcon_qp_init_attr {
	size_t size;               /* sizeof(struct falcon_qp_init_attr) */
	uint32_t qp_type;          /* enum falcon_qp_type (0: RC) */
	struct falcon_cq *send_cq;
	struct falcon_cq *recv_cq;
	uint32_t max_send_wr;      /* send ring entries (rounded up to a power of 2; 0: 128) */
	uint32_t max_recv_wr;      /* receive ring entries (likewise; 0: 128) */
	uint32_t max_send_sge;     /* <= 4 (0: 4) */
	uint32_t max_recv_sge;     /* <= 4 (0: 4) */
	uint32_t max_inflight;     /* transactions in flight (0: 128) */
	uint32_t ordering;         /* enum falcon_ordering */
	uint32_t err_mode;         /* enum falcon_err_mode */
	uint8_t rnr_retry;         /* 0..7, 7 = retry forever (default 7 when 0 is not
				      wanted: set FALCON_QP_RNR_RETRY_SET in flags) */
	uint8_t min_rnr_timer;     /* 5-bit IB RNR timer code (0: 1 = 10 us) */
	uint16_t flags;            /* FALCON_QP_* */
	struct falcon_srq *srq;    /* receives come from this SRQ (of the same PD); the QP
				      takes none of its own: max_recv_wr is unused and
				      falcon_post_recv on it is -EINVAL. NULL: its own */
	struct falcon_xrcd *xrcd;  /* XRC_RECV: its XRC domain */
	uint32_t qkey;             /* UD: datagrams to this QP must carry it */
	/* verbs' transport timer, with FALCON_QP_TIMEOUT_SET in flags (else 14 and 7,
	   rdma-core's examples' and perftest's values: 67 ms x 8 = 0.54 s): */
	uint8_t timeout;           /* local ACK timeout 4.096 us x 2^timeout, 1..31; 0: wait
				      forever */
	uint8_t retry_cnt;         /* 0..7 */
};

/* What each QP type uses of struct falcon_qp_init_attr:
 *   RC         send_cq, recv_cq (or srq), everything else
 *   UD         send_cq, recv_cq (or srq), qkey; ordering is not used (datagrams are
 *              unordered), err_mode, rnr_retry and min_rnr_timer neither
 *   XRC_SEND   send_cq, the send sizes, max_inflight, ordering, err_mode
 *   XRC_RECV   xrcd, ordering (it must match the initiator's), err_mode, RNR fields */

#define FALCON_QP_RNR_RETRY_SET 0x1u /* use rnr_retry as given (else 7) */
#define FALCON_QP_TIMEOUT_SET 0x2u   /* use timeout and retry_cnt as given (else 14, 7) */
#define FALCON_QP_TIMEOUT_DEFAULT 14u
#define FALCON_QP_RETRY_CNT_DEFAULT 7u

/* Timers, as verbs defines them (docs/conformance.md, "Timers"):
 *   timeout, retry_cnt  the peer may stay silent for 4.096 us x 2^timeout x
 *                       (retry_cnt + 1) while something is owed to us (a packet sent
 *                       and unanswered, a READ's data) and while our daemon runs; then
 *                       the QP's outstanding WRs complete FALCON_WC_RETRY_EXC_ERR, the QP
 *                       goes to the error state and the peer's QP is told (its WRs
 *                       flush). Packets lost meanwhile are retransmitted on Falcon's own
 *                       RTO, far shorter. Waiting locally (congestion window, credits) and
 *                       a receiver answering RNR do not count; nor does time our daemon
 *                       did not run (a stopped or starved falcond forgives its peers).
 *   rnr_retry           times a message may be refused for want of a receive WQE
 *                       before it completes FALCON_WC_RNR_RETRY_EXC_ERR; 7: forever.
 *   min_rnr_timer       how long the sender waits after such a refusal (IB's 5-bit
 *                       code: 1 = 0.01 ms ... 14 = 1.28 ms ... 31 = 491.52 ms, 0 =
 *                       655.36 ms). */

/* Connect to the service on host: host is "name-or-address[:cm-port]" of the peer's
 * falcond (cm-port default FALCON_CM_PORT_DEFAULT; IPv6 literals in brackets). Sets up a
 * Falcon connection between the two daemons and an RC QP at each end, both ready to
 * send when this returns. timeout_ms < 0: the daemon's bound (about 3 s of retries).
 * NULL and errno, each a distinct cause (falcon_error_detail names the peer and says
 * more, e.g. "127.0.0.1:7473 refused our handshake: our key is not on its allow-list"):
 *   EINVAL        bad attr or host
 *   ENOENT        the name does not resolve
 *   ECONNREFUSED  no listener for the service at the peer
 *   EAGAIN        the peer's listener has a full backlog
 *   EACCES        not allowed: the peer's allow-list does not have our key, or we have
 *                 no key for it (security psp)
 *   EKEYREJECTED  the peer could not authenticate us: the key we have for it is wrong
 *   EPROTONOSUPPORT  security mismatch: the peer runs security none and we psp or the
 *                 other way round, or another PSP cipher
 *   EPROTO        the peer speaks another CM version or lacks a feature one side requires
 *   ESTALE        the peer's clock and ours differ by more than 2 minutes
 *   EUSERS        the peer daemon is out of resources (its connection or QP table full)
 *   ENOSPC        our daemon's tables are full
 *   EDQUOT        this context's quota of QPs or objects is used up (falcond
 *                 --client-max-qps, --client-max-objects)
 *   EHOSTUNREACH  unreachable: an ICMP port unreachable (no falcond on that port) or host
 *                 / network unreachable came back, or there is no route
 *   ETIMEDOUT     no answer of any kind from the peer within 1 s (or three CM retry
 *                 intervals if longer: falcond(8) --cm-retry-ms), whatever timeout_ms,
 *                 or the connection not complete within timeout_ms
 *   EPROTOTYPE    the peer's QP does not pair with ours
 *   EIO           a CQ in attr overflowed (falcon_poll_cq's -EOVERFLOW)
 * Refusals arrive within a round trip: the peer answers a refused request at once (in
 * security psp a refused handshake too, in clear: the reason only, never larger than the
 * request, at most 100 refusals a second per daemon). A peer that is busy (a request
 * waiting for its falcon_accept) says so, so that a slow accept is no silence. */
struct falcon_qp *falcon_connect(struct falcon_pd *pd, const char *host, uint16_t service,
				 const struct falcon_qp_init_attr *attr, int timeout_ms);

/* Listen on service (1..65535) with room for backlog connection requests waiting for
 * falcon_accept. NULL and errno: EADDRINUSE (someone listens there), EINVAL. */
struct falcon_listener *falcon_listen(struct falcon_context *ctx, uint16_t service,
				      int backlog);
/* Take the next connection request (waiting up to timeout_ms; -1: forever), create this
 * side's QP with attr and complete the connection. NULL and errno: ETIMEDOUT, and the
 * errors of falcon_connect (falcon_error_detail names the peer). */
struct falcon_qp *falcon_accept(struct falcon_listener *l, struct falcon_pd *pd,
				const struct falcon_qp_init_attr *attr, int timeout_ms);
int falcon_listener_close(struct falcon_listener *l);

/* Disconnect (the peer's QP goes to the error state) and free the QP. Its work requests
 * still outstanding complete into nothing. */
int falcon_destroy_qp(struct falcon_qp *qp);

/* ---- queue pairs, verbs style ----
 *
 *   qp = falcon_create_qp(pd, &attr);                      (RESET; qp->qp_num is known)
 *   ... tell the peer qp->qp_num, learn its QP number ...
 *   falcon_modify_qp(qp, &(struct falcon_qp_attr){ .size = sizeof(a), .qp_state =
 *                    FALCON_QPS_INIT });
 *   ... RTR with dest_host and dest_qp_num (RC, XRC), then RTS ...
 *
 * RTR of an RC or XRC QP sets up a Falcon connection between the two daemons for the
 * pair: each side names the other (host and QP number), in either order, and the
 * connection opens when both have. falcon_modify_qp returns at once; work requests posted
 * in RTS wait in the send ring until the connection is open (falcon_query_qp tells),
 * and if it cannot be set up (no such QP at the peer, types that do not pair, no answer
 * before timeout_ms) the QP goes to the error state and they complete FLUSH_ERR. UD and
 * XRC_RECV QPs need no peer: INIT, RTR, RTS. */

enum falcon_qp_state { /* = enum ibv_qp_state */
	FALCON_QPS_RESET = 0,
	FALCON_QPS_INIT = 1,
	FALCON_QPS_RTR = 2,
	FALCON_QPS_RTS = 3,
	FALCON_QPS_ERR = 6,
};

struct falcon_qp_attr {
	size_t size;               /* sizeof(struct falcon_qp_attr) */
	uint32_t qp_state;         /* enum falcon_qp_state to move to */
	uint32_t dest_qp_num;      /* RTR of RC / XRC: the peer's QP number */
	const char *dest_host;     /* RTR of RC / XRC: the peer's falcond, as falcon_connect's
				      host ("name-or-address[:cm-port]") */
	int timeout_ms;            /* RTR of RC / XRC: bound on the setup (< 0: about 3 s) */
	uint32_t attr_mask;        /* FALCON_QP_ATTR_*: which of the timers below to set (in
				      any transition, or with qp_state the QP's current one;
				      they apply to a live connection at once) */
	uint8_t timeout;           /* as struct falcon_qp_init_attr's */
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
};

#define FALCON_QP_ATTR_TIMEOUT 0x1u
#define FALCON_QP_ATTR_RETRY_CNT 0x2u
#define FALCON_QP_ATTR_RNR_RETRY 0x4u
#define FALCON_QP_ATTR_MIN_RNR_TIMER 0x8u

/* A QP of any type in RESET, in pd, with rings as attr says. NULL and errno: EINVAL (bad
 * attr, objects of another context), ENOENT, ENOSPC, EDQUOT (as falcon_connect), ENOMEM,
 * ENOTCONN, EIO (a CQ in attr overflowed: falcon_poll_cq). */
struct falcon_qp *falcon_create_qp(struct falcon_pd *pd, const struct falcon_qp_init_attr *attr);
/* Move a QP of falcon_create_qp to attr->qp_state: RESET -> INIT -> RTR -> RTS, any -> ERR,
 * ERR -> RESET; attr->attr_mask's timers are set on the way (on any QP, with qp_state
 * its current state: falcon_query_qp's). 0, or -EINVAL (a transition not in that list,
 * a timer out of range, RTR of RC / XRC without
 * dest_host, a QP of falcon_connect / falcon_accept), -ENOENT / -EHOSTUNREACH (the host
 * does not resolve), -EAFNOSUPPORT (an address family the daemon does not listen on),
 * -EIO (RESET -> INIT of a QP whose CQ overflowed: falcon_poll_cq). */
int falcon_modify_qp(struct falcon_qp *qp, const struct falcon_qp_attr *attr);
/* The QP's state (enum falcon_qp_state) and, for RC / XRC, whether its connection is open
 * (*connected: 0 or 1; may be NULL). A negative errno on failure. */
int falcon_query_qp(struct falcon_qp *qp, int *connected);
/* The QP's attributes into attr (attr->size set by the caller): qp_state, dest_qp_num
 * and the four timers (attr_mask says all four). 0 or a negative errno (-EINVAL: NULL,
 * size too small; -EBUSY: a QP of falcon_connect / falcon_accept still connecting). */
int falcon_query_qp_attr(struct falcon_qp *qp, struct falcon_qp_attr *attr);

/* ---- address handles (UD) ---- */

/* An address handle in pd naming the falcond at host (as falcon_connect's host): the two
 * daemons open a Falcon connection for it, so this waits for the peer's answer (up to
 * timeout_ms; < 0: about 3 s). A UD work request names it with the peer's QP number and
 * Q_Key. NULL and errno: EINVAL, and the errors of falcon_connect but ECONNREFUSED,
 * EAGAIN and EPROTOTYPE (falcon_error_detail names the peer). */
struct falcon_ah *falcon_create_ah(struct falcon_pd *pd, const char *host, int timeout_ms);
/* An address handle to the daemon that sent the UD datagram of wc (a receive completion
 * of a UD QP, status SUCCESS: wc->src_id), as ibv_create_ah_from_wc: answer the sender
 * with it, naming wc->src_qp and the Q_Key the two sides agreed. The sender's daemon
 * need not be known otherwise. Waits as falcon_create_ah (an AH to that daemon may exist
 * already: then at once). NULL and errno: EINVAL (NULL, not a successful UD receive),
 * ENOENT (wc->src_id 0, or a number falcond did not give: another daemon's completion,
 * or falcond restarted since), and the errors of falcon_create_ah. */
struct falcon_ah *falcon_create_ah_from_wc(struct falcon_pd *pd, const struct falcon_wc *wc,
					   int timeout_ms);
/* Work requests still using it complete as they would have; the connection closes after. */
int falcon_destroy_ah(struct falcon_ah *ah);

/* ---- XRC domains ---- */

/* An XRC domain: XRC SRQs (falcon_create_srq with xrcd) and XRC_RECV QPs in it serve any
 * peer XRC_SEND QP connected to one of those QPs, which names the SRQ per work request. */
struct falcon_xrcd *falcon_open_xrcd(struct falcon_context *ctx);
/* -EBUSY while an SRQ or QP uses it. */
int falcon_close_xrcd(struct falcon_xrcd *xrcd);

/* ---- shared receive queues ---- */

struct falcon_srq_init_attr {
	size_t size;               /* sizeof(struct falcon_srq_init_attr) */
	uint32_t max_wr;           /* receive WRs it holds (rounded up to a power of 2;
				      0: 128; at most 4096) */
	uint32_t max_sge;          /* <= 4 (0: 4) */
	struct falcon_xrcd *xrcd;  /* an XRC SRQ of this domain (NULL: an ordinary SRQ) */
	struct falcon_cq *cq;      /* XRC SRQ: where its receive completions go */
};

/* A shared receive queue in pd: QPs created with it in their attr (srq) take SENDs into
 * its WRs, in the order they were posted, whichever QP the message came on. An XRC SRQ
 * takes the SENDs of peer XRC_SEND QPs that name its number (falcon_srq_num) and arrive
 * on an XRC_RECV QP of its domain. NULL and errno: EINVAL (bad attr), ENOSPC, ENOMEM,
 * ENOTCONN, EIO (the XRC SRQ's CQ overflowed). */
struct falcon_srq *falcon_create_srq(struct falcon_pd *pd,
				     const struct falcon_srq_init_attr *attr);
/* -EBUSY while a QP uses it. */
int falcon_destroy_srq(struct falcon_srq *srq);
/* The SRQ's 24-bit number (what a peer's XRC_SEND work request names). */
uint32_t falcon_srq_num(const struct falcon_srq *srq);
/* As falcon_post_recv, into the SRQ's ring. */
int falcon_post_srq_recv(struct falcon_srq *srq, struct falcon_recv_wr *wr,
			 struct falcon_recv_wr **bad_wr);

/* ---- work requests ---- */

struct falcon_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum falcon_wr_opcode {
	FALCON_WR_SEND = 0,
	FALCON_WR_SEND_WITH_IMM = 1,
	FALCON_WR_SEND_WITH_INV = 2,
	FALCON_WR_RDMA_WRITE = 3,
	FALCON_WR_RDMA_WRITE_WITH_IMM = 4,
	FALCON_WR_RDMA_READ = 5,
	FALCON_WR_ATOMIC_CMP_AND_SWP = 6,
	FALCON_WR_ATOMIC_FETCH_AND_ADD = 7,
	FALCON_WR_MASKED_ATOMIC_CMP_AND_SWP = 8,   /* RFC 7306 */
	FALCON_WR_MASKED_ATOMIC_FETCH_AND_ADD = 9, /* RFC 7306 */
};

#define FALCON_SEND_SOLICITED 0x1u

struct falcon_send_wr {
	uint64_t wr_id;
	struct falcon_send_wr *next;
	struct falcon_sge *sg_list;
	int num_sge;               /* <= max_send_sge; atomics: exactly 1, 8 bytes */
	uint32_t opcode;           /* enum falcon_wr_opcode */
	uint32_t send_flags;       /* FALCON_SEND_*; every WR completes (all signaled) */
	uint32_t imm_data;         /* *_WITH_IMM (host byte order) */
	uint32_t invalidate_rkey;  /* SEND_WITH_INV */
	uint64_t remote_addr;      /* RDMA and atomics */
	uint32_t rkey;
	/* atomics as verbs: CmpSwap compares compare_add and writes swap, FetchAdd adds
	 * compare_add; masked (RFC 7306): compare_add_mask is the compare mask (CmpSwap) or
	 * the add's carry-boundary mask (FetchAdd), swap_mask the swap mask */
	uint64_t compare_add, swap, compare_add_mask, swap_mask;
	/* UD (SEND, SEND_WITH_IMM): the destination */
	struct falcon_ah *ah;
	uint32_t remote_qpn, remote_qkey;
	uint32_t xrc_remote_srq_num; /* XRC_SEND: the SRQ at the peer (falcon_srq_num) */
};

struct falcon_recv_wr {
	uint64_t wr_id;
	struct falcon_recv_wr *next;
	struct falcon_sge *sg_list;
	int num_sge;
};

/* Post a list of send WRs into the QP's send ring. 0, or a negative errno with *bad_wr at
 * the first WR not posted: -ENOMEM (ring full: as ibv_post_send), -EINVAL (num_sge out of
 * range, unknown opcode), -ENOTCONN (daemon gone, see below). Everything before *bad_wr
 * is posted and will complete exactly once (while falcond runs: a WR completes into a
 * CQ that has room for it, see falcon_poll_cq's -EOVERFLOW). The daemon is woken only
 * when it sleeps.
 *
 * A SEND, WRITE or READ carries up to max_msg_size bytes (falcon_query_device; 2^31 by
 * default), the sum of its SGE lengths, in one WR: the daemon segments it. A longer one
 * completes FALCON_WC_LOC_LEN_ERR. A WRITE is checked against the peer's region for its
 * whole length first: one that runs past it completes FALCON_WC_REM_ACCESS_ERR and
 * writes nothing.
 *
 * falcond gone: the post calls (falcon_post_send, falcon_post_recv, falcon_post_srq_recv)
 * return -ENOTCONN once the library knows that the daemon has gone. It knows it when any
 * call of the context saw the socket hang up, and the post calls look themselves: at
 * most every FALCON_DAEMON_CHECK_MS (a read of the coarse monotonic clock, no system
 * call; then one poll(2) of the socket). So a post made FALCON_DAEMON_CHECK_MS after
 * the daemon went (plus the kernel's clock tick) returns -ENOTCONN; one made before may
 * return 0, and its WR never completes. Between checks a post makes no system call but
 * the doorbell's (when the daemon sleeps). */
#define FALCON_DAEMON_CHECK_MS 10
int falcon_post_send(struct falcon_qp *qp, struct falcon_send_wr *wr,
		     struct falcon_send_wr **bad_wr);
int falcon_post_recv(struct falcon_qp *qp, struct falcon_recv_wr *wr,
		     struct falcon_recv_wr **bad_wr);

/* ---- names ---- */

/* A message for a negative errno of this API (or a positive one). */
const char *falcon_strerror(int err);
/* What the last call of this thread that failed concerned and why, in a sentence to show
 * as it is: the socket path falcon_open tried, the peer daemon that refused a connection
 * and its reason, the host that did not resolve. Thread-local, as errno: set by every
 * call that fails (to falcon_strerror's text when there is no more to say), unchanged by
 * calls that succeed; never NULL ("" before any failure). Valid until the thread's next
 * failing call. */
const char *falcon_error_detail(void);
/* "SUCCESS", "REM_ACCESS_ERR", ... as ibverbs names them without IBV_WC_. */
const char *falcon_wc_status_str(uint32_t status);

#ifdef __cplusplus
}
#endif

#endif
