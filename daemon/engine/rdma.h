/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma.h - the RDMA-over-Falcon upper layer (RDMA spec sections 6 and 8) on top of the
 * transaction sublayer (txn.h): queue pairs, shared receive queues, completion queues and
 * address handles, a verbs-like engine-internal API, and the txn callbacks that turn
 * Falcon requests and completions into RDMA semantics.
 *
 *   post_send --seg.h--> RBTH+ETHs (wire_rdma.h) --fc_txn_push / fc_txn_pull--> Falcon
 *   Falcon --ops->request--> [QP by RBTH DQP, CID check 6.9] --mr.h checks--> memory
 *          --fc_txn_accept / _nack / _rnr / _pull_data--> Falcon
 *   Falcon --ops->complete--> [WR of the cookie] --> completion queue --> poll_cq
 *
 * Sans-I/O like the sublayers below it: no clocks, no threads, no sockets. The caller
 * drives the transaction engine through fc_rdma_rx / fc_rdma_poll_tx / fc_rdma_on_timer
 * (thin wrappers that also tell this layer the time, which the txn callbacks do not
 * carry), and passes now_ns to fc_rdma_post_send. Memory is allocated when objects are
 * created (fc_rdma_new, fc_rdma_qp_create, fc_rdma_cq_create, fc_rdma_srq_create),
 * never on the data path. Every queue has the depth given at its creation.
 *
 * Memory the layer reads and writes is reached only through the MR table (mr.h): the
 * host pointers of registered regions (the daemon points them at clients' shared
 * memory). Atomics go through atomic.h.
 *
 * Objects are named by numbers, validated on every call: QPNs and SRQ numbers are the
 * 24-bit values the wire carries (RBTH DQP, DETH source QP, XRCETH); CQ and AH numbers
 * are local. A number carries a generation, so a destroyed object's number stays
 * invalid until its slot has been reused many times.
 *
 * ---- Semantics (docs/conformance.md states them too) ----
 *
 * QP types (6.6): RC and XRC initiator QPs are bound 1:1 to a Falcon connection (the
 * fc_txn at creation); an XRC target QP is bound to the connection of its initiator
 * and receives SENDs into the XRC SRQ the XRCETH names (same XRC domain), whose PD is
 * used for every check of the request (IB XRC). UD QPs send to any connection through
 * address handles (M:N) and receive from any connection (DETH Q_Key check).
 *
 * Ordering modes (6.2, 6.4) and the connection they need (checked at creation, and
 * per post for UD):
 *   STRONG     ordered connection; requests placed in order, completions in order on
 *              both sides. RBTH SN must grow on the connection (else Invalid Request).
 *   WEAK       unordered connection; out-of-order placement, in-order completions at
 *              the requester (SQ order) and the responder (RQ order). To complete in
 *              order without holding data, two messages are fenced at the requester:
 *              the LAST packet of a multi-packet SEND waits for the message's earlier
 *              packets; a WRITE with Immediate is sent packet by packet, after every
 *              earlier transaction of the QP, and nothing after it starts before it
 *              completes (its responder must count its bytes and see all of them).
 *   UNORDERED  unordered connection; completions as they happen; complete-in-error
 *              mode only; WRITE with Immediate and SENDs above one MTU are rejected at
 *              post (-EINVAL / -EMSGSIZE), as the table of 6.4 says.
 *
 * Error modes (6.3): VERBS - a failed WR moves the QP to the error state when its
 * completion is generated: every later WR and every posted receive completes
 * FC_WC_WR_FLUSH_ERR, posts in the error state are flushed at once, and an async event
 * FC_RDMA_EV_QP_FATAL is queued (as for every entry into the error state that the caller
 * did not ask for with fc_rdma_qp_modify; a QP with an SRQ, or an XRC target, also
 * queues FC_RDMA_EV_QP_LAST_WQE then, whoever asked). CIE - the WR completes in error and
 * the QP goes on.
 * The responder NAKs with Falcon NRE (verbs) or CIE (complete-in-error) and the IB NAK
 * code as ULP code (mr.h); it does not change state itself (IB moves an RC responder to
 * the error state on class A/C errors; here the requester's transition stops the pair).
 *
 * Responder checks, in order, for a request on connection t naming QP q: q exists and
 * is bound to t (RC/XRC; else Falcon NACK invalid CID, 6.9, and the QP goes on), the
 * opcode suits q's type and q is in RTR/RTS (else Invalid Request), SN (STRONG), then
 * the checks of tests/rdma_model.h in its order: R_Key (mr.h order), alignment for
 * atomics, receive WQE (RNR), message length, L_Keys of the receive list, IETH.
 *
 * Responses (Pull Data) carry the request's SN (8.2) and STETH. A failed READ or atomic
 * is answered with its response opcode with RBTH CE = 1 (8.2: the message "must be
 * completed in error on the initiator"): an ATOMIC Response whose AtomicAckETH holds the
 * IB NAK code, a READ Response Only whose 4-byte payload holds it (big endian). A Pull
 * Data without RDMA headers (Falcon's zero-length CIE) completes the WR REM_OP_ERR.
 * At the requester a response is used only if it matches its own transaction record
 * (opcode, DQP, SN, STETH) and the QP its DQP names is bound to the connection it came
 * on (6.9: else dropped without NACK); it is placed where the record says.
 *
 * RNR: a SEND or WRITE with Immediate that finds no receive WQE is answered fc_txn_rnr
 * with the QP's min_rnr_timer code; Falcon retransmits (6.4, 8.4.3.4). Falcon retries
 * RNR'd pushes without telling the initiator's ULP (txn.h has no RNR notification and no
 * way to give up a push), so the retries are counted where they are refused: after
 * rnr_retry refusals of the packet heading a message (the SEND packet at offset 0, the
 * WRITE with Immediate's last; IB's requester restarts from there) the responder answers
 * NAK RNR (ULP code FC_RDMA_NAK_RNR) to it and to the message's other packets, and the
 * WR completes FC_WC_RNR_RETRY_EXC_ERR; 7 = infinite, as IB. rnr_retry is therefore an
 * attribute of the receiving QP; the CM copies the requester's count into it (IB CM
 * REQ/REP carry it the same way). At most 64 messages per QP are counted at once; past
 * that the oldest count restarts (that message retries longer, never shorter).
 * UD: no RNR; a datagram without a receive WQE or with a wrong Q_Key is dropped (IB).
 *
 * Flow control (6.5, Falcon 8.2.3): a submission refused by txn (-EAGAIN) stops the QP's
 * send pump until ops->credits. A READ / atomic is always accepted at once (an atomic also
 * executed at once): holding or refusing it would stop an ordered connection, and the
 * peer's pushes waiting behind it pin the peer's data window, which its Pull Data share
 * (a deadlock the simulator found). If txn has no room for the Pull Data it waits in one
 * of pending_resp slots; when those are busy, only its headers wait (a READ is then read
 * when it goes: later WRITEs of the same QP may land first, a relaxation of strong
 * ordering in that overload case only; RFC 7306 5.4 rule 4 allows it for atomic
 * responses, which here never wait: an atomic is executed when it arrives).
 *
 * Receive WQEs of RC/XRC own receive queues are chosen by the SETH RMSN (8.3.2: RMSN-1
 * counts the messages that consumed a receive WQE before), so out-of-order messages
 * land in the WQE their position says; a message that consumes none (WRITE with
 * Immediate failing its R_Key check, RNR retries exhausted) is skipped in that count.
 * With an SRQ the WQE is taken when a message's first packet arrives.
 *
 * Completions: every WR posted successfully completes exactly once (into a CQ that
 * can take it: see overflow); receive completions carry byte_len, imm_data, the
 * invalidated R_Key, the solicited-event bit (RBTH SE) and, for UD, the source QP. All
 * WRs are signaled.
 *
 * CQ overflow, as verbs: a completion that does not fit takes the CQ to the error state
 * for good. Then, in this order: FC_RDMA_EV_CQ_ERR is queued; a ring CQ gets
 * FC_RING_ST_OVERFLOW in its header; every QP whose send or receive CQ it is (and the QP
 * whose completion did not fit, an XRC target completing into its SRQ's CQ) goes to the
 * error state (FC_RDMA_EV_QP_FATAL each), which flushes its outstanding WRs: flushes
 * into the CQ in error are dropped, those into a QP's other CQ land there (where that
 * one is healthy). The completion that did not fit and every later one for the CQ are
 * dropped and counted (counters cq_lost); poll_cq returns what the CQ held, then
 * -EOVERFLOW. A QP cannot be created on a CQ in error, nor an XRC SRQ, nor taken from
 * RESET to INIT (-EIO): its completions would be lost. Destroying the QPs, then the CQ,
 * is all that remains.
 */
#ifndef FC_RDMA_H
#define FC_RDMA_H

#include <stddef.h>
#include <stdint.h>

#include "falcon/queue.h"
#include "mr.h"
#include "seg.h"
#include "txn.h"

#define FC_RDMA_QPN_MASK 0xFFFFFFu
#define FC_RDMA_RECV_SGE_MAX 16u  /* scatter entries per receive WQE */
#define FC_RDMA_RNR_INFINITE 7u   /* rnr_retry value: retry forever (IB) */

enum fc_rdma_qp_type {
	FC_RDMA_QPT_RC = 1,
	FC_RDMA_QPT_UD,
	FC_RDMA_QPT_XRC_INI,  /* send side of XRC */
	FC_RDMA_QPT_XRC_TGT,  /* receive side of XRC: no SQ, no RQ (XRC SRQs) */
};

enum fc_rdma_order { /* 6.2 */
	FC_RDMA_ORDER_STRONG = 0,
	FC_RDMA_ORDER_WEAK,
	FC_RDMA_ORDER_NONE,
};

enum fc_rdma_err_mode { /* 6.3 */
	FC_RDMA_MODE_VERBS = 0,
	FC_RDMA_MODE_CIE,
};

enum fc_rdma_qp_state {
	FC_RDMA_QPS_RESET = 0,
	FC_RDMA_QPS_INIT,
	FC_RDMA_QPS_RTR,
	FC_RDMA_QPS_RTS,
	FC_RDMA_QPS_ERR,
};

enum fc_rdma_wr_opcode {
	FC_RDMA_WR_SEND = 0,
	FC_RDMA_WR_SEND_IMM,
	FC_RDMA_WR_SEND_INV,
	FC_RDMA_WR_WRITE,
	FC_RDMA_WR_WRITE_IMM,
	FC_RDMA_WR_READ,
	FC_RDMA_WR_CMP_SWAP,
	FC_RDMA_WR_FETCH_ADD,
	FC_RDMA_WR_MASKED_CMP_SWAP,  /* RFC 7306 5.1.2, opcode 0x19 */
	FC_RDMA_WR_MASKED_FETCH_ADD, /* RFC 7306 5.1.1, opcode 0x18 */
	FC_RDMA_WR_OPCODE_COUNT
};

#define FC_RDMA_WR_SOLICITED 0x1u /* RBTH SE on the message's last packet */

/* A send work request; copied by fc_rdma_post_send (sgl included). */
struct fc_rdma_send_wr {
	uint64_t wr_id;
	uint8_t opcode;             /* enum fc_rdma_wr_opcode */
	uint8_t flags;              /* FC_RDMA_WR_* */
	uint32_t num_sge;           /* <= the QP's max_send_sge */
	const struct fc_sge *sgl;   /* gather (SEND, WRITE) or scatter (READ, atomic sink) */
	uint32_t imm;               /* SEND_IMM, WRITE_IMM */
	uint32_t inv_rkey;          /* SEND_INV */
	uint64_t remote_addr;       /* WRITE, READ, atomics */
	uint32_t rkey;
	/* atomics, as ibverbs: CmpSwap compares compare_add and writes swap; FetchAdd adds
	 * compare_add. Masked (RFC 7306): FetchAdd's add mask is compare_add_mask; CmpSwap's
	 * compare mask is compare_add_mask and its swap mask swap_mask. */
	uint64_t compare_add, swap, compare_add_mask, swap_mask;
	uint32_t ah;                /* UD: address handle (names the connection) */
	uint32_t remote_qpn;        /* UD: destination QP */
	uint32_t remote_qkey;       /* UD: DETH Q_Key */
	uint32_t xrc_remote_srq;    /* XRC initiator: XRCETH SRQ number at the target */
};

/* A receive work request; copied. */
struct fc_rdma_recv_wr {
	uint64_t wr_id;
	uint32_t num_sge;           /* <= the queue's max_sge */
	const struct fc_sge *sgl;
};

/* Completion opcodes, numbered as ibverbs' enum ibv_wc_opcode. */
enum fc_rdma_wc_opcode {
	FC_RDMA_WC_SEND = 0,
	FC_RDMA_WC_RDMA_WRITE = 1,
	FC_RDMA_WC_RDMA_READ = 2,
	FC_RDMA_WC_COMP_SWAP = 3,
	FC_RDMA_WC_FETCH_ADD = 4,
	FC_RDMA_WC_MASKED_COMP_SWAP = 9,
	FC_RDMA_WC_MASKED_FETCH_ADD = 10,
	FC_RDMA_WC_RECV = 128,
	FC_RDMA_WC_RECV_RDMA_WITH_IMM = 129,
};

#define FC_RDMA_WC_F_IMM 0x2u            /* imm_data valid (IBV_WC_WITH_IMM) */
#define FC_RDMA_WC_F_INV 0x8u            /* invalidated_rkey valid (IBV_WC_WITH_INV) */
#define FC_RDMA_WC_F_SOLICITED 0x10000u  /* the message asked for a solicited event */

struct fc_rdma_wc {
	uint64_t wr_id;
	uint8_t status;       /* enum fc_wc_status (mr.h) */
	uint8_t opcode;       /* enum fc_rdma_wc_opcode */
	uint32_t flags;       /* FC_RDMA_WC_F_* */
	uint32_t byte_len;    /* receives: message bytes; READ: bytes read */
	uint32_t imm_data;
	uint32_t invalidated_rkey;
	uint32_t qp_num;      /* the QP the WR belongs to (XRC SRQ: the target QP) */
	uint32_t src_qp;      /* receives: the sender's QP */
	uint32_t vendor_err;  /* errors: Falcon completion code | IB NAK code << 8 */
	uint16_t src_id;      /* UD receives: the connection's fc_rdma_conn_set_src; else 0 */
};

enum fc_rdma_async_type {
	FC_RDMA_EV_QP_FATAL = 1, /* the QP entered the error state by an error (num = QPN) */
	FC_RDMA_EV_CQ_ERR,       /* the CQ overflowed (num = CQ number) */
	FC_RDMA_EV_CONN_DEAD,    /* a connection failed (num = its local CID) */
	FC_RDMA_EV_QP_LAST_WQE,  /* a QP with an SRQ (or an XRC target) entered the error
				    state: it takes no more of the SRQ's WQEs (IB's
				    LAST_WQE_REACHED; num = QPN) */
};

struct fc_rdma_async_event {
	uint8_t type;  /* enum fc_rdma_async_type */
	uint32_t num;
	uint64_t user; /* the object's cookie: fc_rdma_qp_init.user, fc_rdma_cq_set_user;
			  0 for a connection */
};

struct fc_rdma_cfg {
	uint32_t mtu_bytes;     /* RDMA payload bytes per transaction (6.7): a multiple of 4,
				 * >= 64; the txn engine's mtu_bytes must be at least
				 * mtu_bytes + FC_RDMA_HDR_MAX */
	uint32_t max_msg_bytes; /* largest message, <= FC_SEG_MSG_MAX; costs no memory (a
				 * WR's transactions are made as they go, seg.h fc_seg_at) */
	uint32_t max_qps;       /* each table: 1 .. 65536 */
	uint32_t max_cqs, max_srqs, max_ahs, max_conns;
	uint32_t async_depth;   /* async event ring; more are counted as lost */
	uint32_t pending_resp;  /* Pull Data held while the txn layer has no room (each
				 * holds one response) */
	uint32_t pull_defer_max; /* answers of accepted READs / atomics per connection kept
				  * (headers only: a READ is read when it goes) while all
				  * pending_resp are busy; at most the connection's
				  * max_rx_txns; past it a pull is refused with a short pull
				  * RNR (8.5.3.4) */
	/* called when an armed CQ gets a completion (fc_rdma_cq_arm); may be NULL */
	void (*cq_event)(void *ctx, uint32_t cqn);
	/* called when a connection failed (its peer silent past its timers, section 11),
	 * after its QP went to the error state, or when a transaction of its RC / XRC QP
	 * timed out (the same budget, FC_WC_RETRY_EXC_ERR) and took the QP there: the caller
	 * tells the peer. Must not call into the engine. May be NULL. */
	void (*conn_dead)(void *ctx, uint32_t cid);
	void *ev_ctx;
};

/* MTU 4096, messages up to FC_SEG_MSG_MAX (2 GiB), 256 QPs/CQs/SRQs/AHs, 64 connections, 64 async
 * events, 16 pending responses, 1024 held pulls per connection. */
void fc_rdma_cfg_default(struct fc_rdma_cfg *cfg);

struct fc_rdma_qp_init {
	uint8_t type;           /* enum fc_rdma_qp_type */
	uint8_t order;          /* enum fc_rdma_order */
	uint8_t err_mode;       /* enum fc_rdma_err_mode */
	uint32_t pd;            /* not used by XRC_TGT (its SRQ's PD is) */
	uint32_t send_cq;       /* RC, UD, XRC_INI */
	uint32_t recv_cq;       /* RC, UD (completions of an XRC SRQ go to the SRQ's CQ) */
	uint32_t srq;           /* RC, UD: 0 = own receive queue */
	uint32_t xrcd;          /* XRC_TGT: XRC domain, > 0 */
	uint32_t sq_depth, rq_depth;       /* 1 .. 65536 (0 where the type has none) */
	uint32_t max_send_sge;  /* <= FC_SEG_SGE_MAX */
	uint32_t max_recv_sge;  /* <= FC_RDMA_RECV_SGE_MAX */
	uint32_t max_inflight;  /* transactions in flight, 1 .. 65536 */
	struct fc_txn *conn;    /* RC, XRC_INI, XRC_TGT: from fc_rdma_conn_open, or NULL to
				   bind the QP at INIT -> RTR (fc_rdma_qp_attr.conn) */
	uint32_t qkey;          /* UD */
	uint8_t min_rnr_timer;  /* 5-bit RNR timeout code (Falcon 7.8 / IB) */
	uint8_t rnr_retry;      /* 0..7, 7 = infinite; see the file comment */
	uint64_t timeout_ns;    /* RC / XRC: the connection's liveness budget once bound
				   (fc_txn_set_timeout; fc_rdma_verbs_timeout_ns of verbs'
				   timeout and retry_cnt); 0: the connection's own */
	uint64_t user;          /* the caller's cookie, given back in the QP's async events */
};

/* Verbs' transport timer as Falcon's (docs/conformance.md): a QP's timeout code t gives
 * IB's local ACK timeout 4.096 us x 2^t, retried retry_cnt times; Falcon retransmits on
 * its own RTO (Swift's, far shorter) and gives a connection up when the peer has said
 * nothing for the whole budget, (retry_cnt + 1) such timeouts, while we ran. t = 0 is
 * IB's infinite timeout: UINT64_MAX, never. */
static inline uint64_t fc_rdma_verbs_timeout_ns(uint8_t timeout, uint8_t retry_cnt)
{
	if (!timeout)
		return UINT64_MAX;
	return (4096ull << (timeout & 31)) * ((uint64_t)(retry_cnt & 7) + 1);
}

/* RC, strongly ordered, verbs mode, depths 64, 4 SGEs, 128 in flight, RNR timer code 1
 * (10 us), rnr_retry 7. */
void fc_rdma_qp_init_default(struct fc_rdma_qp_init *a);

struct fc_rdma_qp_attr {
	uint8_t state;          /* enum fc_rdma_qp_state to go to */
	uint32_t remote_qpn;    /* INIT -> RTR of RC / XRC: the peer's QPN */
	struct fc_txn *conn;    /* INIT -> RTR of an RC / XRC QP created without one: the
				   connection it is bound to from now on (checked as at
				   creation); else NULL or the QP's own */
};

struct fc_rdma_srq_init {
	uint32_t pd;
	uint32_t depth;         /* 1 .. 65536 */
	uint32_t max_sge;       /* <= FC_RDMA_RECV_SGE_MAX */
	uint32_t xrcd;          /* > 0: an XRC SRQ of that domain */
	uint32_t cq;            /* XRC SRQ: where its completions go */
};

struct fc_rdma_counters {
	uint64_t tx_push, tx_pull, tx_resp;           /* transactions handed to txn */
	uint64_t rx_req;                              /* requests answered */
	uint64_t nack_cid;                            /* 6.9: request on the wrong connection */
	uint64_t drop_resp_cid;                       /* 6.9: response on the wrong connection */
	uint64_t drop_resp_bad;                       /* response not matching its record */
	uint64_t rnr_sent, rnr_exhausted;
	uint64_t ud_drop_qkey, ud_drop_no_wqe;
	uint64_t nak_sent;                            /* error NACKs / CE responses */
	uint64_t stale_cmpl;                          /* txn completion for a gone WR / QP */
	uint64_t cq_lost, async_lost;
	uint64_t pull_deferred;                       /* answers kept: pending_resp full */
	uint64_t pull_rnr_busy;                       /* pulls refused: nothing can hold them */
	uint64_t resp_lost;                           /* Pull Data with no room (never) */
	uint64_t eagain;                              /* txn refused a submission */
	uint64_t gather_lost;                         /* push data gone when encoded: zeros */
	uint64_t ring_bad_wr;                         /* ring WRs refused: completed in error */
	uint64_t ring_broken;                         /* rings whose producer index went wild */
};

struct fc_rdma;

/* A layer over txn engine e and MR table mrs (both stay the caller's; they must
 * outlive it). Returns NULL and sets errno: EINVAL (bad cfg), ENOMEM. */
struct fc_rdma *fc_rdma_new(const struct fc_rdma_cfg *cfg, struct fc_txn_engine *e,
			    struct fc_mr_table *mrs);
/* Frees the layer, its QPs, CQs, SRQs, AHs, and closes its connections. */
void fc_rdma_free(struct fc_rdma *d);

/* ---- the I/O shell's side: the txn engine, with the clock ---- */

/* fc_txn_engine_rx / _poll_tx / _next_deadline / _on_timer of the engine, telling this
 * layer the time first. Same returns. */
int fc_rdma_rx(struct fc_rdma *d, const void *pkt, size_t len, uint64_t tx_ns,
	       uint64_t now_ns);
/* fc_rdma_rx with the receive metadata (rx_meta.h: hops, ECN, xdp_marked). */
int fc_rdma_rx_meta(struct fc_rdma *d, const void *pkt, size_t len, const struct fc_rx_meta *m);
int fc_rdma_poll_tx(struct fc_rdma *d, uint64_t now_ns, void *buf, size_t cap,
		    struct fc_txn **from);
uint64_t fc_rdma_next_deadline(const struct fc_rdma *d);
void fc_rdma_on_timer(struct fc_rdma *d, uint64_t now_ns);

/* ---- connections (the CM's side) ---- */

/* Create the Falcon connection (fc_txn_conn_new with this layer's ops; cfg->mn must be
 * set for a connection that serves UD QPs). Returns it, or NULL and sets errno: ENOSPC
 * (max_conns), or the errors of fc_txn_conn_new. */
struct fc_txn *fc_rdma_conn_open(struct fc_rdma *d, const struct fc_txn_conn_cfg *cfg);
/* Close it. Returns 0, -ENOENT (not one of ours), -EBUSY (a QP or AH still uses it). */
int fc_rdma_conn_close(struct fc_rdma *d, struct fc_txn *t);
/* What UD receive completions of datagrams that came on connection t carry as src_id
 * (struct fc_rdma_wc): the caller's name for the peer (the node's: 1 + its peer index),
 * so that the receiver can answer the sender (falcon_create_ah_from_wc). 0 (the default):
 * none. Returns 0 or -ENOENT (not one of ours). */
int fc_rdma_conn_set_src(struct fc_rdma *d, struct fc_txn *t, uint16_t src_id);

/* ---- completion queues ---- */

/* Returns 0 and *cqn, -EINVAL (depth 0 or above 65536), -ENOSPC, -ENOMEM. */
int fc_rdma_cq_create(struct fc_rdma *d, uint32_t depth, uint32_t *cqn);
/* The caller's cookie for the CQ's async events (0 at creation). 0 or -ENOENT. */
int fc_rdma_cq_set_user(struct fc_rdma *d, uint32_t cqn, uint64_t user);
/* 1: the CQ overflowed and is in the error state for good (file comment); 0: healthy;
 * -ENOENT. */
int fc_rdma_cq_overflowed(const struct fc_rdma *d, uint32_t cqn);
/* Returns 0, -ENOENT (no such CQ), -EBUSY (a QP or SRQ uses it). */
int fc_rdma_cq_destroy(struct fc_rdma *d, uint32_t cqn);
/* Up to n completions, oldest first. Returns their number (0: empty), -ENOENT (no such
 * CQ), -EINVAL (wc NULL with n > 0), -EOVERFLOW (the CQ overflowed and is now empty). */
int fc_rdma_poll_cq(struct fc_rdma *d, uint32_t cqn, struct fc_rdma_wc *wc, uint32_t n);
/* The next completion (solicited_only: the next one with the solicited bit or an error
 * status) calls cfg->cq_event once. Returns 0 or -ENOENT. */
int fc_rdma_cq_arm(struct fc_rdma *d, uint32_t cqn, int solicited_only);

/* ---- shared receive queues ---- */

/* Returns 0 and *srqn (24 bits), -EINVAL (bad sizes; unknown PD is not checked here),
 * -ENOENT (XRC: no such CQ), -EIO (XRC: the CQ overflowed), -ENOSPC, -ENOMEM. */
int fc_rdma_srq_create(struct fc_rdma *d, const struct fc_rdma_srq_init *a, uint32_t *srqn);
/* Returns 0, -ENOENT, -EBUSY (a QP uses it). Posted WQEs are dropped without
 * completion (IB: destroying an SRQ discards them). */
int fc_rdma_srq_destroy(struct fc_rdma *d, uint32_t srqn);
/* Returns 0, -ENOENT (no such SRQ), -EINVAL (num_sge above max_sge, sgl NULL), -EAGAIN
 * (full). */
int fc_rdma_post_srq_recv(struct fc_rdma *d, uint32_t srqn, const struct fc_rdma_recv_wr *wr);

/* ---- address handles (UD) ---- */

/* An AH in pd naming connection conn (6.6.3). Returns 0 and *ahn, -ENOENT (conn not
 * ours), -EINVAL (ahn NULL), -ENOSPC. */
int fc_rdma_ah_create(struct fc_rdma *d, uint32_t pd, struct fc_txn *conn, uint32_t *ahn);
/* Returns 0 or -ENOENT. */
int fc_rdma_ah_destroy(struct fc_rdma *d, uint32_t ahn);

/* ---- queue pairs ---- */

/*
 * Create a QP in RESET. Returns 0 and *qpn, or
 *   -EINVAL  unknown type / order / mode; a CQ, SRQ or connection not given;
 *            sizes out of range; an SRQ of the wrong kind (XRC SRQ on RC/UD); a
 *            connection whose ordering does not match the mode (STRONG needs an ordered
 *            one, WEAK/NONE an unordered one) or that is M:N (RC/XRC); UNORDERED in
 *            verbs mode (6.4); UD on a 1:1 connection is not checked (AHs name them);
 *   -ENOENT  a CQ, SRQ or connection named that does not exist (not one of ours);
 *   -EBUSY   the connection already has its RC/XRC QP;
 *   -EIO     a CQ named overflowed (fc_rdma_cq_overflowed): nothing could complete;
 *   -ENOSPC  max_qps;  -ENOMEM.
 */
int fc_rdma_qp_create(struct fc_rdma *d, const struct fc_rdma_qp_init *a, uint32_t *qpn);
/*
 * State transitions: RESET->INIT, INIT->RTR (RC/XRC: attr->remote_qpn; attr->conn binds
 * a QP created without a connection), RTR->RTS, any->ERR (flushes), any->RESET (drops
 * every WQE without completion; counters restart; a binding stays). Returns 0, -ENOENT
 * (no such QP or connection), -EINVAL (a transition not in the list, an unbound QP to
 * RTR without attr->conn, a connection of the wrong kind or ordering, another connection
 * than the QP's own), -EBUSY (the connection has its QP), -EIO (RESET->INIT with a CQ
 * that overflowed). A transition to ERR asked for here queues no FC_RDMA_EV_QP_FATAL.
 */
int fc_rdma_qp_modify(struct fc_rdma *d, uint32_t qpn, const struct fc_rdma_qp_attr *attr);
/* Destroy; its WQEs are dropped without completion, its transactions still in Falcon
 * complete into nothing. Returns 0 or -ENOENT. */
int fc_rdma_qp_destroy(struct fc_rdma *d, uint32_t qpn);
/* enum fc_rdma_qp_state, or -ENOENT. */
int fc_rdma_qp_state(const struct fc_rdma *d, uint32_t qpn);
/* Verbs' timer attributes of a live QP (modify_qp of timeout / retry_cnt, rnr_retry,
 * min_rnr_timer): timeout_ns as fc_rdma_qp_init's (0: leave it), applied to the bound
 * connection at once; rnr_retry > 7 or min_rnr_timer > 31 leave those. 0 or -ENOENT. */
int fc_rdma_qp_set_timers(struct fc_rdma *d, uint32_t qpn, uint64_t timeout_ns,
			  uint8_t rnr_retry, uint8_t min_rnr_timer);

/*
 * Post a send WR (copied). Returns 0 (it will complete exactly once), or
 *   -ENOENT    no such QP; UD: no such AH;
 *   -EINVAL    QP not in RTS or ERR; XRC target QP; opcode unknown or not for
 *              the QP type (UD: SEND, SEND_IMM); WRITE_IMM on an UNORDERED QP (6.4);
 *              num_sge above max_send_sge, sgl NULL with num_sge > 0; an atomic with
 *              num_sge != 1; UD: AH in another PD, remote_qpn above 24
 *              bits, a STRONG QP through an unordered connection or the reverse;
 *              remote_addr + length overflowing 64 bits;
 *   -EMSGSIZE  message above max_msg_bytes, a UD or UNORDERED SEND above one MTU;
 *   -EAGAIN    send queue full.
 * L_Key failures of the WR's own list are not errors of the call: the WR completes
 * LOC_PROT_ERR / LOC_LEN_ERR (tests/rdma_model.h). In ERR the WR is flushed at once.
 */
int fc_rdma_post_send(struct fc_rdma *d, uint32_t qpn, const struct fc_rdma_send_wr *wr,
		      uint64_t now_ns);
/* Post a receive WR. Returns 0, -ENOENT (no such QP), -EINVAL (RESET, a QP with an SRQ
 * or without a receive queue, num_sge above max_recv_sge), -EAGAIN (full). In ERR: flushed. */
int fc_rdma_post_recv(struct fc_rdma *d, uint32_t qpn, const struct fc_rdma_recv_wr *wr);

/* ---- rings in caller memory (include/falcon/queue.h) ----
 *
 * A QP's send and receive queue and a CQ may live in memory the caller provides (the
 * daemon: a memfd shared with the client process), laid out by falcon/queue.h. The
 * engine keeps the ring's size and its own index at attach and from then on reads only
 * the producer's index and the entries: a header changed later changes nothing. A WR
 * read from a ring is client input: it is read once into the engine's own SQ/RQ entry
 * and checked as fc_rdma_post_send / fc_rdma_post_recv check theirs; one they refuse
 * (any error but a full queue) completes in error, FC_WC_LOC_QP_OP_ERR (a message above
 * max_msg_bytes: FC_WC_LOC_LEN_ERR, as verbs; in SQ order; receive: on the receive CQ)
 * and the ring moves on. A producer index more than a ring
 * ahead of the engine's consumer index (a broken client) takes the QP to the error state
 * and its rings are not read again (-EPROTO). The ring WR of an XRC initiator carries the
 * target's XRC SRQ number where a UD WR has its AH. As verbs: a buffer a WR names must not
 * change before the WR completes (a retransmission gathers it again).
 */

/* Bytes of a ring of that kind and size (a power of 2 up to FC_RING_ENTRIES_MAX), 0
 * for a bad kind or size; lay one out in mem: 0 or -EINVAL (as fc_ring_bytes/init). */
size_t fc_rdma_ring_bytes(enum fc_ring_kind kind, uint32_t entries);
int fc_rdma_ring_init(void *mem, size_t bytes, enum fc_ring_kind kind, uint32_t entries);
/* Completions of CQ cqn go to ring (an FC_RING_CQ ring of bytes bytes) from now on, and
 * fc_rdma_poll_cq on it is -EINVAL. A full ring is a CQ overflow (as an in-engine CQ,
 * see the file comment), which also sets FC_RING_ST_OVERFLOW in the ring's header: the
 * consumer returns what the ring holds, then -EOVERFLOW. The ring must outlive the CQ or
 * the layer. Returns 0, -ENOENT (no such CQ),
 * -EINVAL (bad ring header or size, a ring already attached), -EBUSY (the CQ holds
 * completions or overflowed). */
int fc_rdma_cq_attach_ring(struct fc_rdma *d, uint32_t cqn, void *ring, size_t bytes);
/* The QP's send WRs (sq, an FC_RING_SQ ring) and/or receive WRs (rq, FC_RING_RQ; a QP
 * with its own receive queue) come from these rings from now on (fc_rdma_post_send and
 * fc_rdma_post_recv still work beside them). Either may be NULL, not both. Returns 0,
 * -ENOENT (no such QP), -EINVAL (bad ring, a QP without that queue, rings
 * already attached). */
int fc_rdma_qp_attach_rings(struct fc_rdma *d, uint32_t qpn, void *sq, size_t sq_bytes,
			    void *rq, size_t rq_bytes);
/* Take the WRs the producer published: receives first, then sends, each while the
 * engine's own queue (rq_depth / sq_depth) has room; the rest wait for the next call.
 * Receives are taken from INIT on, sends in RTS and ERR (flushed there): until then they
 * wait in the ring, where fc_rdma_post_send would refuse them (a QP whose connection is
 * still being set up is fed by its client already).
 * Returns the number taken, -ENOENT (no such QP), -EINVAL (no ring attached), -EPROTO
 * (a broken ring, see above). */
int fc_rdma_qp_doorbell(struct fc_rdma *d, uint32_t qpn, uint64_t now_ns);
/* Whether the QP's rings hold WRs the engine has not taken (its queue was full, or its
 * state takes no sends yet): 1 or 0; 0 also for no such QP or no rings. A caller that
 * looks into rings only when told (a doorbell) looks again while this says 1. */
int fc_rdma_qp_ring_pending(const struct fc_rdma *d, uint32_t qpn);
/* An SRQ's receive WRs come from ring (FC_RING_RQ) from now on (fc_rdma_post_srq_recv
 * still works beside it). Returns 0, -ENOENT (no such SRQ), -EINVAL (bad ring, a ring
 * already attached). */
int fc_rdma_srq_attach_ring(struct fc_rdma *d, uint32_t srqn, void *ring, size_t bytes);
/* Take the SRQ's published receive WRs while it has room. A WR the post checks refuse
 * belongs to no QP yet, so it has no CQ to complete in: it is dropped and counted
 * (ring_bad_wr). Returns the number taken (refused ones included), -ENOENT, -EINVAL (no
 * ring), -EPROTO (the producer index went wild: the ring is not read again, counted in
 * ring_broken; QPs using the SRQ go on with what it holds). */
int fc_rdma_srq_doorbell(struct fc_rdma *d, uint32_t srqn);

/* ---- inspection ---- */

/* The oldest async event: 0 and *ev, or -EAGAIN (none). */
int fc_rdma_get_async_event(struct fc_rdma *d, struct fc_rdma_async_event *ev);
const struct fc_rdma_counters *fc_rdma_counters(const struct fc_rdma *d);
/* The configuration the layer was made with: its limits (tables, MTU, message size). */
const struct fc_rdma_cfg *fc_rdma_get_cfg(const struct fc_rdma *d);
/* WRs posted and not yet completed, receive WQEs posted and not yet completed. -ENOENT
 * for no such QP. */
int fc_rdma_qp_sq_outstanding(const struct fc_rdma *d, uint32_t qpn);
int fc_rdma_qp_rq_outstanding(const struct fc_rdma *d, uint32_t qpn);

#endif
