/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn.h - the Falcon transaction sublayer (spec section 8, section 11) of many
 * connections: one engine holds the resource pools and the connection scheduler, each
 * connection (struct fc_txn) owns one packet delivery sublayer (pdl.h).
 *
 *   ULP --fc_txn_push / fc_txn_pull--> [RSN, credits, queues] --scheduler--> PDL --> net
 *   net --> fc_txn_engine_rx --CID--> PDL --deliver--> [reorder by RSN] --ops->request--> ULP
 *   ULP --fc_txn_accept / _rnr / _nack / _pull_data--> ACK, NACK, Pull Data
 *   PDL --tx_done, Pull Data--> [completion order] --ops->complete--> ULP
 *
 * Sans-I/O like the PDL: time comes in as arguments (now_ns never goes backwards), packets
 * go out through fc_txn_engine_poll_tx, the caller asks fc_txn_engine_next_deadline when
 * to call fc_txn_engine_on_timer. No threads, no sockets; memory is allocated by
 * fc_txn_engine_new and fc_txn_conn_new only.
 *
 * THE ULP CONTRACT (the RDMA layer is written against this):
 *
 * Initiator (8.4). fc_txn_push / fc_txn_pull take at most one MTU of ULP bytes (RDMA
 * headers + data; for a pull the request headers and the Pull Data length expected,
 * ULP headers included). The bytes are copied: the caller's buffer is free on return.
 * The transaction gets the next RSN (NRSN, 8.4.1) and exactly one completion through
 * ops->complete, whatever happens:
 *     FC_CMPL_ACK               push acknowledged by the target / pull data arrived
 *     FC_CMPL_TARGET_NACK_CIE   target ULP NACK-CIE (push), or zero-length Pull Data for
 *                               a pull that asked for bytes (8.5.3.5)
 *     FC_CMPL_TARGET_NACK_NRE   target ULP NACK-NRE (push)
 *     FC_CMPL_TARGET_NACK_CID   target NACK invalid CID
 *     FC_CMPL_REMOTE_ERR        remote xLR drop; the target gave up on the Pull Data
 *     FC_CMPL_OP_ERR            Pull Data longer than requested (section 11 note 2:
 *                               shorter is normal and completes with FC_CMPL_ACK)
 *     FC_CMPL_LOCAL_TO          transaction timeout, or the PDL exhausted its retries
 *     FC_CMPL_DEAD_CONN         the connection failed
 *     FC_CMPL_LOCAL_RSRC        M:N connections only: refused at submission (8.2.3)
 * On ordered connections completions come in RSN order (8.4.2); on unordered ones as
 * they happen. A completion's data pointer is valid during the callback only.
 *
 * Target (8.5). Every Push Data and Pull Request is handed to ops->request, on ordered
 * connections in RSN order and one at a time: the next request is delivered only after
 * the ULP answered the previous one (this is what makes the ordered RNR rule of 8.5.3.4
 * well defined). The ULP must answer each request exactly once, inside the callback or
 * later, with one of
 *     fc_txn_accept     push: data placed, ACK it; pull: taken, Pull Data will follow
 *                       through fc_txn_pull_data (RSN of the request), now or later
 *     fc_txn_rnr        receiver not ready: a push is NACKed to the initiator, which
 *                       retransmits; a pull is redelivered locally after the timeout
 *     fc_txn_nack       push: CIE / NRE / invalid CID (the initiator completes in
 *                       error); pull: invalid CID only (dropped, the initiator times out).
 *                       A pull completes in error by zero-length Pull Data (8.5.3.5):
 *                       fc_txn_accept then fc_txn_pull_data(t, rsn, NULL, 0, now).
 * The request's bytes are valid during the callback only.
 *
 * Flow control (8.2.3): each connection has six ULP credit counters (enum fc_txn_res,
 * the first FC_TXN_ULP_CREDITS) set by the CM; a submission takes the credits of the
 * 8.2.3 table or fails with -EAGAIN, and the credits come back when the resources are
 * freed. After an -EAGAIN, ops->credits is called once resources were freed anywhere
 * in the engine (the connection's credits, a function's or the host's pools).
 *
 * Re-entrancy: every callback may call the fc_txn_* ULP functions of any connection
 * (fc_txn_push from ops->complete, fc_txn_accept and fc_txn_pull_data from
 * ops->request, ...). No callback may free a connection or the engine. The other way
 * round too: on an ordered connection the answer functions (fc_txn_accept, _rnr,
 * _nack) may deliver the next held request through ops->request before they return,
 * so a ULP must have its own state consistent before it answers.
 *
 * Deadlock note for target ULPs: answer Pull Requests without waiting for room for
 * their Pull Data. Holding or RNR-ing them for that reason can deadlock two hosts that
 * read each other: the pushes queued behind a held pull pin the peer's data window,
 * which its Pull Data share (found by the RDMA simulation).
 */
#ifndef FC_TXN_H
#define FC_TXN_H

#include <stddef.h>
#include <stdint.h>

#include "pdl.h"

/* Resource counters (8.2.2 regions, 8.2.3 credits, 8.2.4 network requests). The first
 * six are the ULP's credit counters of 8.2.3, in the spec's order; the last two the
 * network-request region of the Rx pools. Units: packets, or cells of
 * tx_cell_bytes / rx_cell_bytes (the N of 8.2.3). */
enum fc_txn_res {
	FC_TXN_REQ_PKT_TX = 0, /* Tx packet pool, ULP requests region (Req Pkt Tx) */
	FC_TXN_REQ_BUF_TX,     /* Tx buffer pool, ULP requests region (Req Buf Tx) */
	FC_TXN_REQ_PKT_RX,     /* Rx packet pool, ULP requests region (Req Pkt Rx) */
	FC_TXN_REQ_BUF_RX,     /* Rx buffer pool, ULP requests region (Req Buf Rx) */
	FC_TXN_DATA_PKT_TX,    /* Tx packet pool, ULP data region (Res Pkt Tx) */
	FC_TXN_DATA_BUF_TX,    /* Tx buffer pool, ULP data region (Res Buf Tx) */
	FC_TXN_NET_PKT_RX,     /* Rx packet pool, network requests region (Net Req Pkt Rx) */
	FC_TXN_NET_BUF_RX,     /* Rx buffer pool, network requests region (Net Req Buf Rx) */
	FC_TXN_RES_COUNT
};
#define FC_TXN_ULP_CREDITS 6
#define FC_TXN_MAX_FN 16 /* functions with their own limits */

enum fc_txn_kind { FC_TXN_PUSH = 1, FC_TXN_PULL = 2 };

/* Initiator transaction states (8.4.1); FREE = no such transaction. */
enum fc_txn_istate {
	FC_TXN_I_FREE = 0,
	FC_TXN_PULL_REQ_ULP_RX,   /* received from the ULP, queued in the scheduler */
	FC_TXN_PULL_REQ_TX,       /* handed to the PDL */
	FC_TXN_PULL_REQ_ACKD,     /* acknowledged by the target */
	FC_TXN_PULL_DATA_RX,      /* Pull Data received, waiting for its turn (ordered) */
	FC_TXN_PULL_DATA_ULP_TX,  /* completed to the ULP */
	FC_TXN_PUSH_REQ_ULP_RX,
	FC_TXN_PUSH_DATA_TX,
	FC_TXN_PUSH_DATA_ACKD,    /* acknowledged, completion waiting for its turn (ordered) */
	FC_TXN_PUSH_CPL_TX,       /* completed to the ULP */
};

/* Target transaction states (8.5.1), plus three of this implementation. */
enum fc_txn_tstate {
	FC_TXN_T_FREE = 0,
	FC_TXN_PULL_REQ_RX,       /* admitted, waiting for delivery (RSN order) */
	FC_TXN_PULL_REQ_ULP_TX,   /* delivered, waiting for the ULP's answer */
	FC_TXN_PULL_REQ_ULP_ACKD, /* accepted, waiting for the ULP's Pull Data */
	FC_TXN_PULL_DATA_ULP_RX,  /* Pull Data queued in the scheduler */
	FC_TXN_PULL_DATA_TX,      /* handed to the PDL */
	FC_TXN_PULL_DATA_ACKD,    /* acknowledged: the transaction is over */
	FC_TXN_PUSH_DATA_RX,
	FC_TXN_PUSH_REQ_ULP_TX,
	FC_TXN_PUSH_REQ_ULP_ACKD,
	FC_TXN_T_RNR_WAIT,        /* pull RNR'd by the ULP: redelivered at the timeout */
	FC_TXN_T_NACKED,          /* push NACKed (CIE/NRE/CID): re-NACKed until the Resync */
	FC_TXN_T_SKIPPED,         /* ordered: the initiator resynced it, never to come */
};

struct fc_txn_engine_cfg {
	uint32_t max_conns;
	uint32_t mtu_bytes;       /* largest ULP payload of one transaction (8.1) */
	uint32_t tx_cell_bytes;   /* Tx buffer pool cell, the N of 8.2.3 */
	uint32_t rx_cell_bytes;   /* Rx buffer pool cell */
	uint32_t cap[FC_TXN_RES_COUNT]; /* size of each region of the host's pools (8.2.2) */
	/* red zone of the network-request regions (8.2.4): the top red_pkts packets and
	 * red_cells cells admit head-of-line requests only. Each must hold one request of
	 * mtu_bytes (CR#3). */
	uint32_t red_pkts, red_cells;
	uint32_t fn_limit[FC_TXN_MAX_FN][FC_TXN_RES_COUNT]; /* per function; 0 = none */
	/* initiator transaction timeout (section 11); 0 = none. A connection's own
	 * (fc_txn_conn_cfg.txn_timeout_ns, fc_txn_set_timeout) replaces it. The clock runs
	 * only while the peer owes us a word (fc_pdl_quiet_since): a transaction queued
	 * behind the congestion window, waiting for credits or for an RNR'd receiver that
	 * keeps answering is not timed out as if the network had lost it. */
	uint64_t txn_timeout_ns;
	uint32_t rxbuf_alpha_q16; /* EMA constant of the network-request occupancy the ACKs
				   * report (10.2), 65536 = 1 (instantaneous); 0 = rxbuf.h's default */
};

/* 64 connections, MTU 4096, 256-byte cells, 1024 Tx packets and 4096 Rx cells per
 * region, red zone 8 packets and 4 MTUs, timeout 1 s. */
void fc_txn_engine_cfg_default(struct fc_txn_engine_cfg *cfg);

struct fc_txn_conn_cfg {
	struct fc_pdl_cfg pdl;    /* CIDs, initial PSNs, ordered, windows... (pdl.h) */
	uint32_t fn;              /* function, < FC_TXN_MAX_FN, for the per-function limits */
	uint32_t rsn_tx;          /* initial NRSN = BRSN of our requests (CM, 8.4.1) */
	uint32_t rsn_rx;          /* initial target NRSN: RSN of the peer's first request */
	uint32_t max_txns;        /* outstanding initiator transactions, power of 2 (the
				   * table starts at 16 entries and doubles as needed) */
	uint32_t max_rx_txns;     /* target transaction table, power of 2 (grows the same) */
	/* per-connection credits (first six, 8.2.3) and network-request limits (last two,
	 * section 11); 0 = no per-connection limit. Credits are ignored when mn is set. */
	uint32_t limit[FC_TXN_RES_COUNT];
	uint64_t txn_timeout_ns;  /* this connection's transaction timeout (verbs' timeout x
				   * (retry_cnt + 1)); 0: the engine's; UINT64_MAX: none */
	uint32_t pdl_push_max;    /* Push Data in the PDL at once, leaving the data window
				   * room for Pull Data (CR#2); 0 = half the data window */
	int mn;                   /* M:N association (e.g. RDMA UD): no credits; a
				   * transaction without resources completes with
				   * FC_CMPL_LOCAL_RSRC (8.2.3) */
	/* the PDL's congestion-control hooks, passed through (pdl.h); may be NULL */
	int (*cc_event)(void *cc_ctx, const struct fc_cc_event *ev, unsigned pred);
	void (*reroute)(void *cc_ctx, uint32_t path);
	void *cc_ctx;
	/* where the connection's receive windows live (window.h): an entry of the XDP
	 * program's mapped falcon_conns array in XDP mode (xdp_conn.h), NULL for memory of
	 * the PDL's own (fc_pdl_new) */
	struct fc_rx_state *rx;
};

/* PDL defaults, RSNs 0, 256-entry tables, no per-connection limits. */
void fc_txn_conn_cfg_default(struct fc_txn_conn_cfg *cfg);

/* A completion (initiator). */
struct fc_txn_cmpl {
	uint64_t cookie;      /* the ULP's, from fc_txn_push / fc_txn_pull */
	uint32_t rsn;
	uint8_t kind;         /* enum fc_txn_kind */
	uint8_t code;         /* enum fc_cmpl_code */
	uint8_t ulp_code;     /* the target ULP's NACK code (NACK completions) */
	uint8_t rejected;     /* FC_CMPL_LOCAL_RSRC at submission: no RSN was assigned */
	const uint8_t *data;  /* pull: Pull Data payload; valid during the callback */
	uint32_t len;
};

/* A request for the target ULP. */
struct fc_txn_req {
	uint8_t kind;         /* enum fc_txn_kind */
	uint32_t rsn;
	const uint8_t *data;  /* push: headers + data; pull: request headers */
	uint32_t len;
	uint32_t resp_len;    /* pull: Pull Data bytes the initiator expects */
	uint32_t redelivery;  /* times delivered before and refused with RNR */
};

struct fc_txn;

struct fc_txn_ops {
	/* A transaction of ours completed (see the contract above). */
	void (*complete)(void *ctx, struct fc_txn *t, const struct fc_txn_cmpl *c);
	/* A request for the ULP; answer it exactly once (see the contract above). */
	void (*request)(void *ctx, struct fc_txn *t, const struct fc_txn_req *r);
	/* Resources were freed after an -EAGAIN of this connection: submit again. May be
	 * NULL. */
	void (*credits)(void *ctx, struct fc_txn *t);
	/* The connection failed (after the FC_CMPL_DEAD_CONN completions). May be NULL. */
	void (*dead)(void *ctx, struct fc_txn *t, int reason);
	/* A packet of a transaction submitted with a gather length (fc_txn_push_sg,
	 * fc_txn_pull_data_sg) is being encoded: write len bytes of its data, from byte
	 * offset past its headers, to dst, which lies in the frame (one copy per byte). Called
	 * for the first transmission and every retransmission; must not call fc_txn_*. May
	 * be NULL when nothing is submitted with a gather length. */
	void (*gather)(void *ctx, struct fc_txn *t, uint64_t cookie, uint32_t offset, void *dst,
		       uint32_t len);
};

struct fc_txn_counters {
	uint64_t push_ulp, pull_ulp, pull_data_ulp;  /* accepted from the ULP */
	uint64_t submit_eagain, mn_rejected;
	uint64_t cmpl[16];                           /* completions by fc_cmpl_code */
	uint64_t push_rx, pull_req_rx;               /* admitted requests (target) */
	uint64_t held;                               /* admitted out of RSN order (stored) */
	uint64_t refused_rsrc, refused_slot;         /* resource NACKs: pools, table */
	uint64_t hol_red;                            /* HoL admitted in the red zone */
	uint64_t ulp_rnr, auto_rnr;                  /* RNR by the ULP / by the ordered rule */
	uint64_t ulp_nack, renack;                   /* NACKs by the ULP / repeated (6.6.5) */
	uint64_t pull_redeliver;                     /* pull RNR redeliveries (8.5.3.4) */
	uint64_t resync_rx, skipped;
	uint64_t pull_data_unmatched, pull_data_long, bad_rsn;
	uint64_t timeouts;                           /* transaction timeouts */
	uint64_t pdl_eagain;                         /* fc_pdl_submit refused */
	uint64_t deferred_lost;                      /* PDL ack/nack refused (counted) */
	uint64_t tbl_grows, tbl_grow_fail;           /* a transaction table doubled / could not */
	uint64_t scratch_fail;                       /* no memory to hand stored bytes out */
};

struct fc_txn_engine;

/* Returns NULL and sets errno: EINVAL (bad cfg: zero sizes, a red zone that does not
 * hold one MTU or is not below the region, cells larger than the MTU...), ENOMEM. */
struct fc_txn_engine *fc_txn_engine_new(const struct fc_txn_engine_cfg *cfg);
/* Frees the engine and every connection still in it. */
void fc_txn_engine_free(struct fc_txn_engine *e);

/* Set up a connection (the CM's job, 8.4.1/8.5.1 initial values in cfg). ctx is passed
 * to ops. Returns NULL and sets errno: EINVAL (bad cfg, table size not a power of 2,
 * fn out of range), EEXIST (local CID in use), ENOSPC (max_conns), ENOMEM, or the
 * errors of fc_pdl_new. */
struct fc_txn *fc_txn_conn_new(struct fc_txn_engine *e, const struct fc_txn_conn_cfg *cfg,
			       const struct fc_txn_ops *ops, void *ctx);
/* Tear a connection down at once: every resource goes back to the pools, no callback. */
void fc_txn_conn_free(struct fc_txn *t);

/* ---- the I/O shell's side ---- */

/* A Falcon packet (after PSP) for the connection its CID names. Returns 0 (processed, or
 * dropped and counted), -ENOENT (no connection with that CID; counted), or a negative
 * FC_WIRE_ error (too short to carry a CID, or the PDL could not decode it). */
int fc_txn_engine_rx(struct fc_txn_engine *e, const void *pkt, size_t len, uint64_t tx_ns,
		     uint64_t now_ns);
/* fc_txn_engine_rx with the receive metadata (rx_meta.h; fc_pdl_rx_meta); *user (may be
 * NULL) gets the connection's ops ctx. Same returns. */
int fc_txn_engine_rx_meta(struct fc_txn_engine *e, const void *pkt, size_t len,
			  const struct fc_rx_meta *m, void **user);
/* The next packet of any connection (round robin across connections, 8.3) into buf.
 * Returns its length and sets *from, 0 when nothing may be sent now, -FC_WIRE_ENOSPC when
 * cap is below FC_FALCON_HDR_MAX + mtu_bytes. */
int fc_txn_engine_poll_tx(struct fc_txn_engine *e, uint64_t now_ns, void *buf, size_t cap,
			  struct fc_txn **from);
/* Earliest time fc_txn_engine_on_timer has work (PDL timers, transaction timeouts, pull
 * RNR redeliveries); UINT64_MAX when idle. */
uint64_t fc_txn_engine_next_deadline(const struct fc_txn_engine *e);
void fc_txn_engine_on_timer(struct fc_txn_engine *e, uint64_t now_ns);
/* The caller did not run for stall_ns and noticed at now_ns (fc_pdl_stalled for every
 * connection: that time is not the peer's silence, expired retransmit timers re-armed
 * once). Sweeps every connection: for a detected stall, never per packet. */
void fc_txn_engine_stalled(struct fc_txn_engine *e, uint64_t stall_ns, uint64_t now_ns);

/* ---- the ULP's side: initiator ---- */

#define FC_TXN_REJECTED 1 /* M:N: completed at once with FC_CMPL_LOCAL_RSRC */

/* Start a push (8.4.3.3) of len bytes. *rsn (may be NULL) gets its RSN. Returns 0,
 * FC_TXN_REJECTED (M:N connection out of resources: ops->complete already ran with
 * FC_CMPL_LOCAL_RSRC), -EAGAIN (out of credits, pool space or table entries; ops->credits
 * follows), -EMSGSIZE (len > mtu_bytes), -EINVAL (data NULL with len > 0), -EPIPE (dead). */
int fc_txn_push(struct fc_txn *t, const void *data, uint32_t len, uint64_t cookie,
		uint64_t now_ns, uint32_t *rsn);
/* A push whose bytes are hdr_len bytes of headers (copied) and gather_len bytes the ULP
 * supplies through ops->gather (with this cookie) whenever a packet is encoded: the data
 * is copied once, from the ULP's memory into the frame. That memory must not change
 * before the completion. Returns as fc_txn_push; -EMSGSIZE when hdr_len + gather_len >
 * mtu_bytes, -EINVAL without ops->gather. */
int fc_txn_push_sg(struct fc_txn *t, const void *hdr, uint32_t hdr_len, uint32_t gather_len,
		   uint64_t cookie, uint64_t now_ns, uint32_t *rsn);
/* Start a pull (8.4.3.1): request bytes req (the ULP's request headers) and resp_len, the
 * Pull Data length expected (ULP headers included). Returns as fc_txn_push; -EMSGSIZE
 * also when resp_len > mtu_bytes. */
int fc_txn_pull(struct fc_txn *t, const void *req, uint32_t len, uint32_t resp_len,
		uint64_t cookie, uint64_t now_ns, uint32_t *rsn);
/* The connection's liveness budget from now on (verbs' modify_qp of timeout /
 * retry_cnt): the transaction timeout and the PDL's give_up_ns (pdl.h) both become
 * timeout_ns; UINT64_MAX: never give up (verbs' timeout 0); 0: the engine's timeout and
 * the PDL's retry count alone. */
void fc_txn_set_timeout(struct fc_txn *t, uint64_t timeout_ns);
uint64_t fc_txn_timeout(const struct fc_txn *t);
/* Credits left per counter (first FC_TXN_ULP_CREDITS of enum fc_txn_res); UINT32_MAX
 * where there is no per-connection limit. */
void fc_txn_credits(const struct fc_txn *t, uint32_t credits[FC_TXN_ULP_CREDITS]);

/* ---- the ULP's side: target ---- */

/* Answers to a delivered request rsn. Each returns 0, -ENOENT (no request rsn waiting for
 * an answer), -EINVAL (a code the request kind does not allow), -EPIPE (dead). */
int fc_txn_accept(struct fc_txn *t, uint32_t rsn, uint64_t now_ns);
/* rnr_timeout_code: 5-bit code of spec 7.8 (fc_rnr_timeout_ns). */
int fc_txn_rnr(struct fc_txn *t, uint32_t rsn, uint8_t rnr_timeout_code, uint64_t now_ns);
/* nack_code: FC_NACK_CIE, FC_NACK_NRE or FC_NACK_INVALID_CID for a push, only
 * FC_NACK_INVALID_CID for a pull; ulp_code goes to the initiator's ULP. */
int fc_txn_nack(struct fc_txn *t, uint32_t rsn, uint8_t nack_code, uint8_t ulp_code,
		uint64_t now_ns);
/* Pull Data for accepted pull rsn (8.5.3.2); copied. Returns 0, -ENOENT (no accepted
 * pull rsn without data), -EMSGSIZE (len above what the request asked for), -EINVAL,
 * -EAGAIN (Data Tx credits or pool; ops->credits follows), -EPIPE. */
int fc_txn_pull_data(struct fc_txn *t, uint32_t rsn, const void *data, uint32_t len,
		     uint64_t now_ns);

/* Pull Data as headers + gathered bytes (see fc_txn_push_sg); gather_cookie is what
 * ops->gather receives. Returns as fc_txn_pull_data. */
int fc_txn_pull_data_sg(struct fc_txn *t, uint32_t rsn, const void *hdr, uint32_t hdr_len,
			uint32_t gather_len, uint64_t gather_cookie, uint64_t now_ns);

/* ---- inspection ---- */

struct fc_pdl *fc_txn_pdl(struct fc_txn *t); /* for cc_apply, note_path, counters... */
void *fc_txn_ctx(const struct fc_txn *t);
uint32_t fc_txn_local_cid(const struct fc_txn *t);
int fc_txn_is_dead(const struct fc_txn *t);
const struct fc_txn_counters *fc_txn_counters(const struct fc_txn *t);
/* 8.4.1 BRSN / NRSN of the initiator, 8.5.1 BRSN / NRSN of the target. */
uint32_t fc_txn_brsn(const struct fc_txn *t);
uint32_t fc_txn_nrsn(const struct fc_txn *t);
uint32_t fc_txn_target_brsn(const struct fc_txn *t);
uint32_t fc_txn_target_nrsn(const struct fc_txn *t);
/* State of our transaction rsn / of the peer's request rsn (FREE: none). */
enum fc_txn_istate fc_txn_istate(const struct fc_txn *t, uint32_t rsn);
enum fc_txn_tstate fc_txn_tstate(const struct fc_txn *t, uint32_t rsn);
/* Resources this connection holds, per counter. */
uint32_t fc_txn_used(const struct fc_txn *t, enum fc_txn_res r);
/* Resources the whole host holds, per region. */
uint32_t fc_txn_engine_used(const struct fc_txn_engine *e, enum fc_txn_res r);
/* Packets whose CID matched no connection. */
uint64_t fc_txn_engine_unknown_cid(const struct fc_txn_engine *e);

#endif
