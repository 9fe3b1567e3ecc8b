/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node.h - one Falcon endpoint: where the sans-I/O engine meets the world (DESIGN.md,
 * "The node"). A node is the RDMA engine (rdma over the transaction engine over one
 * packet delivery sublayer per connection), its connection table (local CID -> peer),
 * an optional encapsulation step (PSP, the security issue; none until then) and one I/O
 * backend behind struct fc_io_ops: the simulator's link (tests/sim/sim_io.c), an
 * in-memory pair (bench/engine_bench.c), later the UDP socket and AF_XDP of falcond.
 *
 *   io backend --frames--> fc_node_rx_batch --encap->open--> CID -> connection, peer
 *              check --> fc_rdma_rx_meta (engine) --> memory, completions
 *   engine --fc_rdma_poll_tx into the backend's frames--> encap->seal --> io->tx_send
 *
 * Sans-clock like the engine: time comes in as arguments (now_ns never goes backwards);
 * the caller (falcond's libev loop, the simulator) arms one timer from
 * fc_node_next_deadline and calls fc_node_on_timer. Frames are the backend's buffers
 * (UMEM frames, socket buffers): the node never copies a frame; the engine writes each
 * transmitted packet straight into one and reads each received packet where it lies.
 * No allocation after fc_node_new except in fc_node_peer_add / conn_open tables sized
 * at creation.
 */
#ifndef FC_NODE_H
#define FC_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "falcon/xdp_conn.h"
#include "rdma.h"
#include "rue.h"
#include "rx_meta.h"

#define FC_NODE_BATCH_MAX 64u     /* frames per fc_node_poll_tx / rx batch call */
#define FC_NODE_BATCH_FIRST 4u    /* fc_node_poll_tx's first backend call asks for this many */
#define FC_PEER_ADDR_MAX 28u      /* a struct sockaddr_in6 fits */
#define FC_NODE_CID_SLOT_BITS 16u /* local CID = generation << 16 | slot */
#define FC_NODE_CONNS_MAX (1u << FC_NODE_CID_SLOT_BITS)

/* A peer's address, opaque to the node: a sockaddr for UDP, an endpoint number for the
 * simulator. Two addresses are the same peer when len and bytes are equal. */
struct fc_peer_addr {
	uint8_t len;
	uint8_t bytes[FC_PEER_ADDR_MAX];
};

/* One frame: a buffer the backend owns. */
struct fc_frame {
	uint8_t *buf;       /* start of the frame's bytes */
	uint32_t len;       /* bytes in it (rx: received; tx: filled by the node) */
	uint32_t cap;       /* room at buf (tx) */
	uint64_t io_handle; /* the backend's own reference (UMEM address, slot index) */
	const struct fc_peer_addr *peer; /* tx: destination; rx: source (may be NULL) */
	uint32_t peer_idx;               /* tx: the node's peer index of the destination (the
					  * PSP layer picks the peer's SA by it) */
	struct fc_rx_meta meta;          /* rx only */
};

struct fc_io_ops {
	const char *name;
	/* Up to n empty frames to transmit into: fill buf, cap, io_handle. Returns how many
	 * it gave (0: no room now, the node tries again at its next poll). */
	unsigned (*tx_alloc)(void *io, struct fc_frame *f, unsigned n);
	/* Send n filled frames (buf/len, peer set); the backend owns them again whatever
	 * happens. Returns the number sent; the rest count as io drops. */
	unsigned (*tx_send)(void *io, struct fc_frame *f, unsigned n);
	/* Frames of tx_alloc the node did not fill (nothing more to send). */
	void (*tx_return)(void *io, struct fc_frame *f, unsigned n);
	/* The UDP port of a peer address (host order), for the ACKs XDP sends in XDP mode
	 * (xdp_conn.h remote_port); 0 when the address has none. May be NULL. */
	uint16_t (*peer_port)(void *io, const struct fc_peer_addr *a);
};

/* The encapsulation step between the engine and the backend (PSP in the security issue).
 * seal: the Falcon packet lies at f->buf + headroom, len bytes; write the header in front
 * and the trailer behind it (in place, or encrypting while copying) and set f->len to the
 * frame length. open: check (and decrypt) the frame in place and point f->buf / f->len at
 * the Falcon packet; fill f->meta.tx_ns from the header if it carries one. Both return 0
 * or a negative errno, which drops the frame (counted per node). NULL = no encapsulation
 * (the Falcon packet is the whole frame). */
struct fc_encap_ops {
	uint32_t headroom, tailroom;
	int (*seal)(void *ctx, struct fc_frame *f, uint32_t len);
	int (*open)(void *ctx, struct fc_frame *f);
	/* After open and the CID lookup: may the opened frame f be taken on a connection to
	 * node peer `peer`? remote_time is that connection's (0 when it opened). Returns 0,
	 * -EKEYREJECTED (not the peer's PSP tunnel: the SPI check of spec 9.2.2.3) or -ESTALE
	 * (the replay check of 9.2.2.2); the node drops and counts the frame, and no ACK or
	 * NACK comes of it. NULL: no check. */
	int (*conn_check)(void *ctx, const struct fc_frame *f, uint32_t peer,
			  uint64_t *remote_time);
	/* The tunnel bits of the SPIs node peer `peer` sends under (xdp_conn.h spi_sess),
	 * for the XDP program's SPI check; 0 when there is none yet. NULL: no PSP. */
	uint32_t (*spi_sess)(void *ctx, uint32_t peer);
};

struct fc_node_cfg {
	struct fc_txn_engine_cfg txn;  /* max_conns <= FC_NODE_CONNS_MAX */
	struct fc_rdma_cfg rdma;
	uint32_t mr_cap, pd_cap;       /* MR table (mr.h) */
	fc_mr_rand_fn rand;            /* key randomness (mr.h) */
	void *rand_ctx;
	uint32_t max_peers;
	const struct fc_io_ops *io;
	void *io_ctx;
	const struct fc_encap_ops *encap; /* may be NULL */
	void *encap_ctx;
	/* Congestion control: NULL runs every connection with the PDL's fixed windows and
	 * RTO; else Swift and PLB (rue.h, spec 10) with this configuration, called in line
	 * from the engine's CC events at the node's current time. In line, the RUE's event
	 * queue is always empty, so the admission policy of 10.6.1 never refuses one; the
	 * RUE thread of DESIGN.md ("Threads") is the other way to run the same code. */
	const struct fc_rue_cfg *rue;
	/* Or the caller runs it (falcond: a thread, DESIGN.md "Threads"): every CC event goes
	 * to cc_offer (0: taken; else refused, counted, and the PDL keeps its windows), its
	 * results come back through fc_node_cc_apply, and cc_forget is told of each closed
	 * connection. rue must be NULL then. */
	int (*cc_offer)(void *ctx, const struct fc_cc_event *ev, unsigned pred);
	void (*cc_forget)(void *ctx, uint32_t cid);
	void *cc_ctx;
	/* XDP mode (DESIGN.md, "One sliding-window implementation, two users"): the XDP
	 * program's falcon_conns array as mapped by the caller, xdp_conns_n entries indexed by
	 * CID slot (xdp_conn.h). Each connection opened on a slot below xdp_conns_n runs its
	 * receive windows in its entry, which the node publishes (remote CID, xdp_flags, SPI
	 * tunnel, replay margin, then the CID) once the windows are initialised and retires
	 * (CID 0) before the connection closes. NULL: windows in the engine's own memory. */
	struct fc_xdp_conn *xdp_conns;
	uint32_t xdp_conns_n;
	uint32_t xdp_flags;             /* FC_XDP_CONN_* for every published entry */
	uint64_t xdp_replay_margin_ns;  /* with FC_XDP_CONN_PSP: spec 9.2.2.2's margin */
};

/* Engine defaults (txn / rdma *_cfg_default, MTU 4096), 4096 MRs, 256 PDs, 64 peers. io
 * and rand stay NULL: the caller sets them. */
void fc_node_cfg_default(struct fc_node_cfg *cfg);

struct fc_node_counters {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t rx_short;        /* shorter than a Falcon header: dropped */
	uint64_t rx_encap_err;    /* encap->open refused it */
	uint64_t rx_unknown_cid;  /* no connection with that CID (or a closed one) */
	uint64_t rx_peer_mismatch;/* the CID's connection belongs to another peer */
	uint64_t rx_spi_mismatch; /* 9.2.2.3: not the connection's PSP tunnel */
	uint64_t rx_replay;       /* 9.2.2.2: IV older than the replay margin allows */
	uint64_t rx_engine_err;   /* the engine could not decode it (counted there too) */
	uint64_t tx_no_frame;     /* the backend had no free frame when the node polled */
	uint64_t tx_encap_err;    /* encap->seal failed: packet lost (the PDL retransmits) */
	uint64_t tx_io_drop;      /* the backend did not take a filled frame */
	uint64_t cc_events;       /* CC events the RUE answered */
	uint64_t cc_errors;       /* CC events it refused (the PDL keeps its windows) */
	uint64_t stalls;          /* fc_node_stalled: the caller did not run for a while */
	uint64_t stall_ns;        /* ... for this long in all */
};

struct fc_node;

/* Returns NULL and sets errno: EINVAL (no io, no rand, max_conns above FC_NODE_CONNS_MAX
 * or 0, max_peers 0), ENOMEM, or the errors of the engine constructors. */
struct fc_node *fc_node_new(const struct fc_node_cfg *cfg);
/* Frees the engine, its connections and objects. NULL is a no-op. */
void fc_node_free(struct fc_node *n);

struct fc_rdma *fc_node_rdma(struct fc_node *n);
struct fc_mr_table *fc_node_mrs(struct fc_node *n);
struct fc_txn_engine *fc_node_txn(struct fc_node *n);
const struct fc_node_counters *fc_node_counters(const struct fc_node *n);

/* Add a peer (or find it: the same address gives the same index). Returns 0 and *peer,
 * -EINVAL (len 0 or above FC_PEER_ADDR_MAX), -ENOSPC (max_peers). */
int fc_node_peer_add(struct fc_node *n, const struct fc_peer_addr *a, uint32_t *peer);
const struct fc_peer_addr *fc_node_peer_addr(const struct fc_node *n, uint32_t peer);

/* Connections are set up in two steps, as a connection manager needs: reserve a local
 * CID for the peer (the CM sends it in its handshake), then open the connection on it
 * once the peer's CID is known. The CID is generation << 16 | slot, so the slot is found
 * in O(1) and a closed connection's CID stays invalid until its slot has been reused 256
 * times. fc_node_cid_reserve returns 0 and *cid, -EINVAL (unknown peer), -ENOSPC (every
 * slot used or reserved). */
int fc_node_cid_reserve(struct fc_node *n, uint32_t peer, uint32_t *cid);
/* peer FC_NODE_PEER_LATER reserves a CID before the peer's data address is known (a CM
 * initiator learns it from the answer); fc_node_cid_bind names the peer then, before
 * fc_node_conn_open (which refuses an unbound CID: EINVAL). Returns 0, -ENOENT (not a
 * reserved CID), -EINVAL (unknown peer). */
#define FC_NODE_PEER_LATER UINT32_MAX
int fc_node_cid_bind(struct fc_node *n, uint32_t cid, uint32_t peer);
/* Give back a reserved CID whose connection was never opened (handshake failed).
 * Returns 0 or -ENOENT (not a reserved CID). */
int fc_node_cid_release(struct fc_node *n, uint32_t cid);
/* Open the connection of reserved CID cid (cfg->pdl.local_cid is set to it; remote_cid
 * is the peer's). Returns the connection, or NULL and sets errno: ENOENT (cid not
 * reserved), EINVAL (no peer bound yet), or the errors of fc_rdma_conn_open (the CID
 * stays reserved then). */
struct fc_txn *fc_node_conn_open(struct fc_node *n, uint32_t cid, struct fc_txn_conn_cfg *cfg);
/* Close it. Returns 0, -ENOENT (not open here), -EBUSY (a QP or AH still uses it). */
int fc_node_conn_close(struct fc_node *n, struct fc_txn *t);
/* Spec 9.2.2.2: the connection's remote time (what encap->conn_check compares IVs with)
 * starts at the CM's estimate of the sender's clock instead of 0, so a packet sent
 * before the connection existed is refused. Returns 0 or -ENOENT. */
int fc_node_conn_remote_time(struct fc_node *n, struct fc_txn *t, uint64_t remote_ns);
/* Local CIDs in use: connections open, being set up (reserved) or closing; at most
 * cfg.txn.max_conns. O(1). */
uint32_t fc_node_conns_used(const struct fc_node *n);
/* UD receive completions (struct fc_rdma_wc.src_id) of datagrams that came on a
 * connection name its peer as 1 + the peer's index (0 when the index does not fit in
 * 16 bits), which the caller maps back with fc_node_peer_addr. */
/* The peer of a connection, or UINT32_MAX. */
uint32_t fc_node_conn_peer(const struct fc_node *n, const struct fc_txn *t);
/* Trace the CC events of connection cid (falconctl conn trace): cb sees each as the node
 * takes it, with the node's time, before the RUE answers. cid 0 or cb NULL stops. */
typedef void (*fc_node_trace_fn)(void *ctx, const struct fc_cc_event *ev, uint64_t now_ns);
void fc_node_trace(struct fc_node *n, uint32_t cid, fc_node_trace_fn cb, void *ctx);

/* A CC result for connection res->cid (from the caller's RUE, cfg.cc_offer): applied to
 * its PDL. Returns 0, or -ENOENT when the connection has closed since (dropped). */
int fc_node_cc_apply(struct fc_node *n, const struct fc_cc_result *res);

/* Process nf received frames (any number; each f[i].meta.now_ns set by the backend).
 * The frames stay the backend's: nothing of them is kept after the call. Returns the
 * number the engine accepted for processing (the others are dropped and counted). */
unsigned fc_node_rx_batch(struct fc_node *n, struct fc_frame *f, unsigned nf);

/* Fill up to budget frames with what the engine has to send now and hand them to the
 * backend: frames are taken from it FC_NODE_BATCH_FIRST at first, twice as many each
 * time a chunk was filled, at most FC_NODE_BATCH_MAX per call. Returns the number of
 * frames sent. */
unsigned fc_node_poll_tx(struct fc_node *n, uint64_t now_ns, unsigned budget);

/* Earliest time fc_node_on_timer has work; UINT64_MAX when idle. */
uint64_t fc_node_next_deadline(const struct fc_node *n);
void fc_node_on_timer(struct fc_node *n, uint64_t now_ns);
/* The caller's loop did not run for stall_ns (stopped, starved of CPU, a long page
 * fault) and notices at now_ns: fc_txn_engine_stalled, so that this host's stall is not
 * blamed on its peers. Call it before fc_node_on_timer with the same now_ns, after
 * taking in what the socket holds (the peers' answers of the stall). */
void fc_node_stalled(struct fc_node *n, uint64_t stall_ns, uint64_t now_ns);

#endif
