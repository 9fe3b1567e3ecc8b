/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon/api.h - the control protocol between libfalcon-client and falcond (DESIGN.md,
 * "The client data path"). ABI: both sides compile this header; sizes are fixed by the
 * static asserts below and every message starts with its header's size and the protocol
 * version, so either side can refuse what it does not understand.
 *
 * Transport: a SOCK_SEQPACKET Unix socket (one message per datagram, at most
 * FC_API_MSG_MAX bytes); SO_PEERCRED names the client. File descriptors (memfds of
 * registered buffers, ring memfds, eventfds) travel as SCM_RIGHTS with the message that
 * names them. The client sends one request at a time and waits for its reply (seq
 * echoes the request's); CONNECT and ACCEPT reply when the connection is set up or has
 * failed, which may take seconds.
 *
 * Error replies (status < 0) may carry a body: a sentence saying why, naming what it
 * concerns (the peer daemon that refused a connection and its reason, e.g.
 * "192.0.2.7:7471 refused: our key is not on its allow-list"), printable ASCII,
 * NUL-terminated, at most FC_API_WHY_MAX bytes with the NUL. Clients hand it to the
 * program (falcon_error_detail) or ignore it; a client that checks an error reply's size
 * is wrong to. CONNECT, ACCEPT, CREATE_AH and CREATE_AH_SRC errors have one.
 *
 * Everything a client sends is input to the daemon: a message of the wrong size, an
 * unknown type or version, a handle that is not the client's own gets an error reply
 * (status = -errno) or, for a broken header, the client's disconnection. Handles are per
 * client: numbers in the client's own object table, meaningless for any other client.
 *
 * Asynchronous events (falcon_get_async_event) travel apart from the replies, on an event
 * socket: the HELLO reply carries the client's end of a SOCK_SEQPACKET socket pair whose
 * other end the daemon keeps (its reading side shut). Each message on it is a struct
 * fc_api_hdr of type FC_API_EVENT (seq 0, status 0) and 1 .. FC_API_EVENTS_MAX struct
 * fc_api_event. The daemon never blocks on it: events it cannot send yet wait, one per
 * object and kind (an object's repeated events of a kind are sent once), until the
 * socket drains. When the daemon goes (stopped or killed), both its sockets hang up: the
 * client reads the end of the stream there (the library reports DEVICE_FATAL).
 */
#ifndef FALCON_API_H
#define FALCON_API_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define FC_API_VERSION 5u     /* 2: SRQs; 3: QPs by create/modify, UD and AHs, XRC;
				 * 4: verbs' QP timers (timeout, retry_cnt); 5: the event
				 * socket in HELLO's reply, QUERY_DEVICE, the ring's status
				 * word, the client's arena (issue 21) */
#define FC_API_MSG_MAX 512u
#define FC_API_FDS_MAX 2u      /* descriptors per message */
#define FC_API_EVENT 0x100u    /* the type of the event socket's messages (no request) */
#define FC_API_WHY_MAX 200u    /* an error reply's sentence, its NUL included */

enum fc_api_type {
	FC_API_HELLO = 1,      /* fd: the client's doorbell eventfd; reply fds: its end of
				  the event socket first (always), then its arena
				  (FC_API_HELLO_ARENA asked and granted) */
	FC_API_ALLOC_PD,
	FC_API_DEALLOC_PD,
	FC_API_REG_MR,         /* fd: the memfd of the buffer (none: the client's memory) */
	FC_API_DEREG_MR,
	FC_API_CREATE_CQ,      /* reply fds: ring memfd, notification eventfd */
	FC_API_DESTROY_CQ,
	FC_API_LISTEN,
	FC_API_CLOSE_LISTENER,
	FC_API_CONNECT,        /* reply fd: rings memfd */
	FC_API_ACCEPT,         /* reply fd: rings memfd */
	FC_API_DESTROY_QP,
	FC_API_CREATE_SRQ,     /* reply fd: the receive ring's memfd */
	FC_API_DESTROY_SRQ,
	FC_API_CREATE_QP,      /* reply fd: rings memfd (none for an XRC target QP) */
	FC_API_MODIFY_QP,
	FC_API_QUERY_QP,
	FC_API_CREATE_AH,      /* replies when the connection to the peer daemon is open */
	FC_API_DESTROY_AH,
	FC_API_OPEN_XRCD,
	FC_API_CLOSE_XRCD,
	FC_API_QUERY_DEVICE,   /* the daemon's limits (struct fc_api_device_rep) */
	FC_API_CREATE_AH_SRC,  /* as CREATE_AH, the peer named by a UD completion */
	FC_API_QUERY_ADDR,     /* the daemon's own address and ports (struct fc_api_addr_rep) */
	FC_API_TYPE_END
};

struct fc_api_hdr {
	uint16_t hdr_size;     /* sizeof(struct fc_api_hdr) */
	uint16_t version;      /* FC_API_VERSION */
	uint16_t type;         /* enum fc_api_type; the reply has the request's */
	uint16_t flags;        /* 0 */
	uint32_t len;          /* whole message, header included */
	uint32_t seq;          /* the client's; the reply echoes it */
	int32_t status;        /* replies: 0 or -errno */
	uint32_t pad;
};

/* HELLO: the client says who it is; the daemon answers with its limits. */
struct fc_api_hello {
	uint32_t client_version; /* FC_API_VERSION */
	uint32_t flags;          /* FC_API_HELLO_*; a daemon ignores those it does not know */
};
/* The client maps an arena (falcon/queue.h): the reply carries its memfd as its second
 * descriptor (after the event socket), and the QPs it creates have their rings there
 * (struct fc_api_qp_rep.arena_unit). A daemon that does not send the memfd has none:
 * every QP's rings come in a memfd of their own. */
#define FC_API_HELLO_ARENA 0x1u
struct fc_api_hello_rep {
	uint32_t max_sge, max_ring_entries, max_msg_bytes, mtu_bytes;
};

/* QUERY_DEVICE (no body): every limit of the daemon as its configuration and tables set
 * them (falcon_query_device). A daemon that predates it answers -EINVAL. */
struct fc_api_device_rep {
	uint64_t max_msg_bytes;    /* bytes per SEND / WRITE / READ work request */
	uint64_t max_mr_bytes;     /* bytes one REG_MR may cover */
	uint32_t mtu_bytes;        /* RDMA payload per packet (a UD SEND's bound) */
	uint32_t max_qps, max_conns, max_cqs, max_cqes, max_mrs, max_pds, max_srqs, max_ahs;
	uint32_t max_send_wrs, max_recv_wrs, max_srq_wrs; /* ring entries */
	uint32_t max_send_sge, max_recv_sge, max_srq_sge;
	uint32_t max_inflight;     /* transactions in flight per QP */
	uint32_t max_objs;         /* objects per client (all kinds together) */
	uint32_t max_clients;      /* client processes */
	uint32_t atomic_cap;       /* enum falcon_atomic_cap */
	uint32_t atomic_bytes;     /* an atomic's operand */
	uint32_t flags;            /* FALCON_DEVICE_* */
	uint32_t max_client_qps;   /* QPs per client (its quota) */
	uint32_t max_client_mrs;   /* memory regions per client (its quota) */
	uint32_t pad;
};

/* PD, MR and CQ handles, listener and QP handles: client-local numbers. */
struct fc_api_handle {
	uint32_t handle;
	uint32_t pad;
};

/* REG_MR: register [iova, iova+len) = bytes [offset, offset+len) of the memfd sent
 * along (sealed against shrinking: F_SEAL_SHRINK, else -EPERM). Without a memfd:
 * [iova, iova+len) of the client's own address space (offset ignored), which falcond
 * reaches with process_vm_readv/writev: -EFAULT if the range is not mapped, -EPERM if
 * falcond may not reach the process. */
struct fc_api_reg_mr {
	uint32_t pd;
	uint32_t access;       /* enum falcon_access */
	uint64_t iova;
	uint64_t len;
	uint64_t offset;       /* page aligned */
};
struct fc_api_reg_mr_rep {
	uint32_t handle, lkey, rkey, pad;
};

struct fc_api_create_cq {
	uint32_t entries;      /* a power of 2 */
	uint32_t pad;
};
struct fc_api_create_cq_rep {
	uint32_t handle;
	uint32_t pad;
	uint64_t ring_bytes;   /* of the memfd (a struct fc_ring_hdr ring, FC_RING_CQ) */
};

struct fc_api_listen {
	uint16_t service;
	uint16_t backlog;
	uint32_t pad;
};

/* A QP: the body of CREATE_QP, the QP part of CONNECT and ACCEPT. Handles a type does
 * not use are 0 (an XRC initiator has no receive side, an XRC target neither send nor
 * receive side: its SENDs land in the XRC SRQs of its domain). */
struct fc_api_qp_attr {
	uint32_t pd, send_cq, recv_cq;
	uint32_t sq_entries, rq_entries;    /* powers of 2 (0 where the type has no ring) */
	uint32_t max_send_sge, max_recv_sge, max_inflight;
	uint8_t type, ordering, rnr_retry, min_rnr_timer; /* type: enum falcon_qp_type */
	uint8_t err_mode;
	uint8_t timeout, retry_cnt; /* verbs' codes (falcon.h); timeout 0: never */
	uint8_t pad;
	uint32_t srq;          /* an SRQ handle: receives come from it (rq_entries unused);
				  0: the QP's own receive ring */
	uint32_t xrcd;         /* XRC target: its XRC domain's handle */
	uint32_t qkey;         /* UD: the Q_Key datagrams to it must carry */
	uint32_t pad2;
};

/* CREATE_SRQ: a shared receive queue in pd, its WRs in a ring (FC_RING_RQ) of entries.
 * With an XRC domain it is an XRC SRQ: XRC initiators name it by its number (the reply's
 * srqn) and its completions go to cq. */
struct fc_api_create_srq {
	uint32_t pd;
	uint32_t entries;      /* a power of 2 */
	uint32_t max_sge;      /* <= FC_RING_SGE_MAX (0: that) */
	uint32_t xrcd;         /* an XRC domain handle, or 0 */
	uint32_t cq;           /* XRC SRQ: a CQ handle; else 0 */
	uint32_t pad;
};
struct fc_api_create_srq_rep {
	uint32_t handle;
	uint32_t srqn;         /* the 24-bit number a peer's XRC initiator names */
	uint64_t ring_bytes;
};

/* MODIFY_QP of a QP of CREATE_QP: to state (enum falcon_qp_state). RTR of an RC or XRC QP
 * names the peer: its daemon's CM address and its QPN; the reply comes at once and the
 * connection is set up behind it (QUERY_QP tells when; the QP's send ring is read from
 * RTS with the connection open; a failed setup moves the QP to the error state). */
struct fc_api_modify_qp {
	uint32_t handle;
	uint8_t state;
	uint8_t addr_len;      /* RTR of RC / XRC: bytes of addr used */
	uint16_t attr_mask;    /* FALCON_QP_ATTR_*: the timers below to set */
	uint32_t dest_qpn;     /* RTR of RC / XRC */
	int32_t timeout_ms;    /* < 0: the daemon's bound */
	uint8_t addr[28];
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
};
struct fc_api_query_qp_rep {
	uint8_t state;         /* enum falcon_qp_state */
	uint8_t connected;     /* RC / XRC: the connection is open */
	uint16_t pad;
	uint32_t qpn, remote_qpn;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
};

/* CREATE_AH: an address handle in pd for the peer daemon at addr (CM address). The reply
 * comes when the daemons have opened the M:N connection it names. */
struct fc_api_create_ah {
	uint32_t pd;
	int32_t timeout_ms;    /* < 0: the daemon's bound */
	uint8_t addr_len;
	uint8_t pad[3];
	uint8_t addr[28];
};
/* CREATE_AH_SRC: an address handle in pd for the daemon that sent a UD datagram, named
 * as its completion names it (struct fc_ring_cqe.src_id: the receiving daemon's number
 * for the sending one); the reply is CREATE_AH's. -ENOENT: no such sender (0, or a
 * number this daemon never gave). */
struct fc_api_create_ah_src {
	uint32_t pd;
	int32_t timeout_ms;    /* < 0: the daemon's bound */
	uint32_t src_id;
	uint32_t pad;
};
struct fc_api_create_ah_rep {
	uint32_t handle;
	uint32_t ahn;          /* what a UD work request names (struct fc_ring_send_wr.ah) */
};

struct fc_api_connect {
	struct fc_api_qp_attr qp;
	uint16_t service;
	uint8_t addr_len;      /* bytes of addr used (a sockaddr_in / sockaddr_in6) */
	uint8_t pad;
	int32_t timeout_ms;    /* < 0: the daemon's bound */
	uint8_t addr[28];      /* the peer daemon's CM address */
};

struct fc_api_accept {
	struct fc_api_qp_attr qp;
	uint32_t listener;
	int32_t timeout_ms;    /* < 0: forever */
};

/* CONNECT / ACCEPT / CREATE_QP reply: the rings live in the memfd sent along, the send
 * ring at offset 0 and the receive ring at rq_offset; or, with arena_unit > 0 and no
 * memfd, in the client's arena from arena_unit x FC_ARENA_UNIT bytes on (rings_bytes
 * long, the receive ring at rq_offset from there), and doorbell bit arena_unit is the
 * QP's (falcon/queue.h). */
struct fc_api_qp_rep {
	uint32_t handle, qpn, remote_qpn;
	uint32_t arena_unit;
	uint64_t rings_bytes, rq_offset;
};

/* One asynchronous event (event socket). type: enum falcon_event_type; handle: the
 * client's handle of the object (a CQ for CQ_ERR, a QP for the QP events); num: the QP's
 * number, or the daemon's number of the CQ. */
struct fc_api_event {
	uint16_t type;
	uint16_t pad;
	uint32_t handle;
	uint32_t num;
	uint32_t pad2;
};
#define FC_API_EVENTS_MAX \
	((FC_API_MSG_MAX - sizeof(struct fc_api_hdr)) / sizeof(struct fc_api_event))

_Static_assert(sizeof(struct fc_api_hdr) == 24, "api header");
_Static_assert(sizeof(struct fc_api_event) == 16, "event");
_Static_assert(sizeof(struct fc_api_reg_mr) == 32, "reg_mr");
_Static_assert(sizeof(struct fc_api_qp_attr) == 56, "qp attr");
_Static_assert(sizeof(struct fc_api_connect) == 92, "connect");
_Static_assert(sizeof(struct fc_api_accept) == 64, "accept");
_Static_assert(sizeof(struct fc_api_create_srq) == 24, "create_srq");
_Static_assert(sizeof(struct fc_api_modify_qp) == 48, "modify_qp");
_Static_assert(sizeof(struct fc_api_query_qp_rep) == 16, "query_qp reply");
_Static_assert(sizeof(struct fc_api_create_ah) == 40, "create_ah");
_Static_assert(sizeof(struct fc_api_create_ah_src) == 16, "create_ah_src");
_Static_assert(sizeof(struct fc_api_create_srq_rep) == 16, "create_srq reply");
_Static_assert(sizeof(struct fc_api_qp_rep) == 32, "qp reply");
_Static_assert(sizeof(struct fc_api_device_rep) == 112, "device reply");

/* QUERY_ADDR (no body): where the daemon listens, as its --listen, --port, --cm-port say
 * (falcon_query_addr). A daemon that predates it answers -EINVAL. */
struct fc_api_addr_rep {
	char addr[64];             /* the listen address literal, NUL-terminated */
	uint16_t data_port;
	uint16_t cm_port;
	uint32_t pad;
};
_Static_assert(sizeof(struct fc_api_addr_rep) == 72, "address reply");

/* Body size of a request of type t (0 for an unknown type). */
static inline uint32_t fc_api_req_body(uint16_t t)
{
	switch (t) {
	case FC_API_HELLO: return sizeof(struct fc_api_hello);
	case FC_API_ALLOC_PD: return 0;
	case FC_API_DEALLOC_PD:
	case FC_API_DEREG_MR:
	case FC_API_DESTROY_CQ:
	case FC_API_CLOSE_LISTENER:
	case FC_API_DESTROY_QP:
	case FC_API_DESTROY_SRQ:
	case FC_API_QUERY_QP:
	case FC_API_DESTROY_AH:
	case FC_API_CLOSE_XRCD: return sizeof(struct fc_api_handle);
	case FC_API_OPEN_XRCD: return 0;
	case FC_API_QUERY_DEVICE: return 0;
	case FC_API_QUERY_ADDR: return 0;
	case FC_API_CREATE_QP: return sizeof(struct fc_api_qp_attr);
	case FC_API_MODIFY_QP: return sizeof(struct fc_api_modify_qp);
	case FC_API_CREATE_AH: return sizeof(struct fc_api_create_ah);
	case FC_API_CREATE_AH_SRC: return sizeof(struct fc_api_create_ah_src);
	case FC_API_CREATE_SRQ: return sizeof(struct fc_api_create_srq);
	case FC_API_REG_MR: return sizeof(struct fc_api_reg_mr);
	case FC_API_CREATE_CQ: return sizeof(struct fc_api_create_cq);
	case FC_API_LISTEN: return sizeof(struct fc_api_listen);
	case FC_API_CONNECT: return sizeof(struct fc_api_connect);
	case FC_API_ACCEPT: return sizeof(struct fc_api_accept);
	default: return 0;
	}
}

/* Check a received message of n bytes: 0 (header and body size agree with its type),
 * -EPROTO (not a message of this protocol: too short, wrong header size or version, len
 * not n; the peer is broken and gets disconnected), -EINVAL (unknown type, flags set,
 * wrong body size for the type; answered with an error). */
static inline int fc_api_msg_check(const void *msg, unsigned long n)
{
	const struct fc_api_hdr *h = (const struct fc_api_hdr *)msg;

	if (!msg || n < sizeof(*h) || n > FC_API_MSG_MAX || h->hdr_size != sizeof(*h) ||
	    h->version != FC_API_VERSION || h->len != n)
		return -EPROTO;
	if (!h->type || h->type >= FC_API_TYPE_END || h->flags ||
	    n - sizeof(*h) != fc_api_req_body(h->type))
		return -EINVAL;
	return 0;
}

/* Check a message of n bytes read from the event socket: the number of events it holds
 * (1 .. FC_API_EVENTS_MAX), or -EPROTO. */
static inline int fc_api_event_check(const void *msg, unsigned long n)
{
	const struct fc_api_hdr *h = (const struct fc_api_hdr *)msg;
	unsigned long k;

	if (!msg || n < sizeof(*h) || n > FC_API_MSG_MAX || h->hdr_size != sizeof(*h) ||
	    h->version != FC_API_VERSION || h->len != n || h->type != FC_API_EVENT)
		return -EPROTO;
	k = (n - sizeof(*h)) / sizeof(struct fc_api_event);
	if (!k || (n - sizeof(*h)) % sizeof(struct fc_api_event))
		return -EPROTO;
	return (int)k;
}

/* Send one message of len bytes on sock with nfds (<= FC_API_FDS_MAX) descriptors as
 * SCM_RIGHTS; flags as sendmsg's (MSG_NOSIGNAL always added). Returns 0 or -errno
 * (-EINVAL for too many descriptors). Both ends and the tests send through it. */
static inline int fc_api_send(int sock, const void *buf, size_t len, const int *fds,
			      unsigned nfds, int flags)
{
	union {
		struct cmsghdr c;
		char room[CMSG_SPACE(sizeof(int) * FC_API_FDS_MAX)];
	} cm;
	struct iovec iov = { (void *)buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > FC_API_FDS_MAX)
		return -EINVAL;
	if (nfds) {
		memset(&cm, 0, sizeof(cm));
		m.msg_control = cm.room;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm.c.cmsg_level = SOL_SOCKET;
		cm.c.cmsg_type = SCM_RIGHTS;
		cm.c.cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(&cm.c), fds, sizeof(int) * nfds);
	}
	return sendmsg(sock, &m, flags | MSG_NOSIGNAL) < 0 ? -errno : 0;
}

#endif
