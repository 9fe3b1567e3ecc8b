/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcond.h - the daemon's parts and what they share (DESIGN.md, "What the daemon
 * does"). One thread runs one libev loop over one node:
 *
 *   main.c   options and config file, the loop, the node's I/O and its one timer
 *   cm.c     connection manager: daemon to daemon on its own UDP port
 *   api.c    the clients' Unix socket: objects per client, rings, doorbells
 *   admin.c  falconctl's socket: status, peers, connections, QPs, MRs, counters
 *   poll.c   the loop and the CPU: poll modes, the engine thread's CPUs and class
 *
 * The parts reach each other only through the functions below.
 */
#ifndef FC_FALCOND_H
#define FC_FALCOND_H

#include <ev.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <sys/socket.h>

#include "encap_null.h"
#include "encap_psp.h"
#include "hs.h"
#include "fault.h"
#include "io_udp.h"
#include "io_xdp.h"
#include "node.h"
#include "notify.h"
#include "rue_thread.h"
#include "xdp_load.h"

#define FD_CM_VERSION 3u /* 2: connection kinds (bind, ah), QP types, boot ids; 3: a WRITE
			  * packet's RETH names the rest of its message (issue 21) */
/* CM feature bits (the hello of every CM message): what a daemon supports and what it
 * requires of its peer. */
#define FD_CM_F_MRA 0x1u /* answers a REQ it holds (backlog) with MRA: its silence means down */
#define FD_CM_F_ALL FD_CM_F_MRA

/* Swift's targets for a software path: the delay a daemon measures (t4 - t1 less the
 * peer's hold) includes socket queues and scheduling, tens of microseconds even when
 * idle; and a retransmission timeout below the scheduler's tick retransmits what a
 * descheduled peer was about to acknowledge. */
#define FD_CC_TARGET_US_DEFAULT 300u
#define FD_MIN_RTO_US_DEFAULT 2000u
#define FD_RUE_QUEUE 4096u  /* records in each of the RUE thread's queues */

#define FD_PEERS_MAX 64u   /* configured peer daemons (keys) */

/* Limits (struct fd_cfg): defaults, and the largest each table can be. A QP, CQ, SRQ or
 * AH number holds 16 slot bits at most (the engine's tables), a local CID 16 (node.h);
 * a client's handle 18 (api.c). */
#define FD_TABLE_MAX 65536u
#define FD_CLIENT_OBJS_MAX (1u << 18)
#define FD_MAX_QPS_DEFAULT 4096u
#define FD_MAX_CQS_DEFAULT 4096u
#define FD_MAX_MRS_DEFAULT 16384u
#define FD_MAX_SRQS_DEFAULT 1024u
#define FD_MAX_AHS_DEFAULT 1024u
#define FD_MAX_PDS_DEFAULT 1024u
#define FD_MAX_CLIENTS_DEFAULT 64u
#define FD_CLIENT_MAX_OBJECTS_DEFAULT FD_CLIENT_OBJS_MAX

enum fd_security { FD_SEC_NONE = 0, FD_SEC_PSP };
/* --io: auto = xdp where the program attaches, else udp; xdp = the same, but the fallback
 * is logged as a warning */
enum fd_io { FD_IO_AUTO = 0, FD_IO_UDP, FD_IO_XDP };

/* --poll (DESIGN.md, "Threads"; poll.c): sleep = wake on events; adaptive = after work,
 * keep polling the clients' rings and the I/O for poll_us before arming the wakeups and
 * sleeping; busy = never sleep. While the loop polls, clients post without a doorbell. */
enum fd_poll { FD_POLL_SLEEP = 0, FD_POLL_ADAPTIVE, FD_POLL_BUSY };
#define FD_POLL_DEFAULT FD_POLL_ADAPTIVE
#define FD_POLL_US_DEFAULT 100u   /* adaptive: the window after the last work */
#define FD_POLL_US_MAX 1000000u
#define FD_BUSY_POLL_US 20u       /* SO_BUSY_POLL while polling (kernel's AF_XDP example) */
#define FD_BUSY_POLL_BUDGET 64u   /* SO_BUSY_POLL_BUDGET: packets per busy-poll round */

/* A peer daemon of the allow-list: its identity key and where its CM listens. */
struct fd_peer_cfg {
	uint8_t pub[32];
	char addr[80];            /* "host:port" as the config gives it */
};

struct fd_cfg {
	char api_path[108];       /* API socket */
	char admin_path[108];     /* admin socket */
	char metrics[64];         /* --metrics ADDR:PORT ("": no HTTP server; metrics.h) */
	char listen_addr[64];     /* data and CM address (IPv4 or IPv6 literal) */
	uint16_t data_port, cm_port;
	/* Limits (falcond(8) "Limits"): every table is sized from these at start, nothing
	 * else bounds them; falconctl status shows them, falcon_query_device reports them.
	 * Each is 1 .. FD_TABLE_MAX (max_mrs: FC_MR_CAP_MAX), a per-client quota at most
	 * its daemon limit (fd_cfg_check). */
	uint32_t max_conns;       /* Falcon connections (default: max_qps) */
	int max_conns_set;        /* given explicitly */
	uint32_t max_qps, max_cqs, max_mrs, max_srqs, max_ahs, max_pds;
	uint32_t max_clients;     /* client processes at once */
	uint32_t client_max_objects; /* objects of one client, all kinds (<= FD_CLIENT_OBJS_MAX) */
	uint32_t client_max_qps, client_max_mrs; /* QPs, MRs of one client */
	uint32_t mtu_bytes;       /* RDMA payload per transaction */
	int mtu_set;              /* given explicitly (else XDP may choose a smaller one) */
	int io;                   /* enum fd_io */
	char instance[FC_XDP_INSTANCE_MAX]; /* bpffs pin directory name ("" : p<data port>) */
	uint32_t features_supported, features_required; /* CM hello (tests can require more) */
	uint32_t cm_retry_ms, cm_retries;
	struct fc_fault_cfg fault;
	int fault_on;
	uint32_t cm_drop_ppm;     /* CM messages lost on purpose, each direction (tests) */
	int cc_off;               /* no congestion control: fixed windows and RTO */
	int rue_inline;           /* Swift in the loop thread instead of the RUE thread */
	uint32_t cc_target_us;    /* Swift base fabric delay target */
	uint32_t min_rto_us;      /* smallest RTO the RUE may set */
	uint32_t pending_resp;    /* RDMA answers held (0: the engine's default) */
	uint32_t pull_defer;      /* RDMA answer headers kept per connection (if set) */
	int pull_defer_set;
	uint32_t conn_data_credits; /* per-connection data packet credits (0: no limit) */
	int log_level;
	int security;             /* enum fd_security */
	int security_set;         /* given explicitly (none must be) */
	char key_path[256];       /* our identity (falconctl key generate) */
	struct fd_peer_cfg peers[FD_PEERS_MAX];
	uint32_t npeers;
	uint32_t replay_margin_us; /* spec 9.2.2.2 */
	uint32_t key_rotate_s;    /* PSP key rotation period (0: on falconctl key rotate only) */
	int psp_cipher;           /* FC_PSP_VER_*, or -1: the best this CPU has */
	int poll;                 /* enum fd_poll */
	uint32_t poll_us;         /* adaptive's window */
	cpu_set_t cpus;           /* --cpu: the engine thread's CPUs (if cpu_list[0]) */
	char cpu_list[64];        /* as given, for status */
	int sched_policy;         /* SCHED_OTHER, SCHED_FIFO or SCHED_RR */
	int sched_prio;           /* 1..99 for FIFO and RR */
	int mlock;                /* mlockall (also implied by a real-time class) */
};

struct fd_api;
struct fd_cm;
struct fd_admin;
struct fd_sec;

struct fd_daemon {
	struct fd_cfg cfg;
	struct ev_loop *loop;
	struct fc_node *node;
	struct fc_io_udp *io;         /* the data port's UDP socket (in xdp mode: xio's) */
	struct fc_io_xdp *xio;        /* AF_XDP backend (--io xdp / auto), else NULL */
	struct fc_xdp_prog *xdp;      /* the attached program, its pins and mapped conns */
	const char *io_name;          /* "xdp" or "udp": what runs */
	char io_why[192];             /* why XDP is not in use (empty when it is, or udp asked) */
	struct fc_fault *fault;       /* NULL unless fault knobs are set */
	struct fc_encap_null encap;   /* security none (encap_null.h) */
	struct fd_sec *sec;           /* security psp (sec.c); NULL in none */
	ev_io io_w;
	ev_io timer_w;                /* the node's one timer: a timerfd (loop.c) */
	int timer_fd;
	uint64_t timer_at_ns;         /* its deadline (UINT64_MAX: disarmed) */
	ev_prepare prep_w;            /* before sleeping: rings, doorbells, tx */
	ev_check check_w;             /* after the poll: stall_check, the RUE thread */
	uint64_t sleep_ns, sleep_dl_ns; /* when the loop last went to poll, the timer it set */
	uint64_t awake_ns;            /* when it last came back */
	int sleep_polling;            /* ... and that poll did not block (--poll) */
	ev_idle idle_w;               /* keeps the loop from sleeping while work is left */
	ev_idle poll_w;               /* active while the loop polls (poll.c) */
	uint64_t poll_work_ns;        /* when the last work was found (rx or WRs) */
	int poll_empty;               /* this round's ring sweep found nothing */
	int busy_poll_rc;             /* the data sockets' busy-poll options: 0 or -errno */
	ev_signal sig_w[3];           /* SIGINT, SIGTERM: stop; SIGHUP: reload */
	ev_timer fault_w;             /* releases frames the fault layer holds */
	ev_timer log_w;               /* writes the counts of repeated log lines (log.h) */
	ev_timer notify_w;            /* systemd status and watchdog (notify.h) */
	struct fd_rue_thread *rue_th; /* Swift/PLB in their thread (NULL: inline or off) */
	ev_io rue_w;                  /* its results' eventfd */
	struct fd_api *api;
	struct fd_cm *cm;
	struct fd_admin *admin;
	uint64_t start_ns;
	uint64_t loops, tx_rounds;
	uint64_t polls, poll_yields, sleeps; /* poll rounds, sched_yields, wakeups armed */
};

/* loop.c */
void fd_cfg_default(struct fd_cfg *c);
/* After the options: fill the limits that follow others (max_conns from max_qps, the
 * client quotas from the daemon's) and check them against each other. Returns 0, or
 * -EINVAL with the reason in why (naming the options). */
int fd_cfg_check(struct fd_cfg *c, char *why, size_t cap);
/* Open the I/O, the node and the sockets and start their watchers on d->loop (d->cfg
 * set). Returns 0, or -errno with the reason logged; falcond_stop undoes what was done. */
int falcond_start(struct fd_daemon *d);
void falcond_stop(struct fd_daemon *d);
uint64_t fd_now_ns(void);
/* Run the engine's transmit side until it has nothing to send or a budget is spent;
 * re-arm the node timer. Everything that gives the engine work calls it. */
void fd_kick(struct fd_daemon *d);
/* Take what the data socket holds now (a bounded batch) into the node, then fd_kick.
 * Returns the datagrams taken (0: none), or -errno from the backend. */
int fd_rx(struct fd_daemon *d);

/* ---- poll.c: the engine thread and the CPU ---- */

/* Option values: "sleep|adaptive|busy" -> enum fd_poll; a CPU list ("1", "2,3", "0-1",
 * each CPU one this machine has); "other|fifo:PRIO|rr:PRIO" (PRIO 1..99). Each returns 0
 * or -EINVAL. */
int fd_poll_parse(const char *s, int *mode);
const char *fd_poll_name(int mode);
int fd_cpu_parse(const char *s, cpu_set_t *set);
int fd_sched_parse(const char *s, int *policy, int *prio);
const char *fd_sched_name(const struct fd_cfg *c); /* "other", "fifo:50" (static) */
/* The poll watcher (falcond_start). */
void fd_poll_init(struct fd_daemon *d);
/* The engine thread's CPUs, scheduling class and locked memory as d->cfg asks, and the
 * data sockets' busy polling. Called on the engine thread after
 * falcond_start (the RUE thread keeps its CPUs and class). Returns 0 or -errno with the
 * reason logged (EPERM: the privilege it needs, named). */
int fd_cpu_start(struct fd_daemon *d);
/* From the loop before it would sleep: work = the clients' rings gave WRs this round.
 * Returns 1 when the loop keeps polling (the clients need not ring; the watcher that keeps
 * the loop from blocking is active), 0 when it should arm the wakeups and sleep. */
int fd_poll_keep(struct fd_daemon *d, int work);
size_t fd_poll_json_stats(const struct fd_daemon *d, char *buf, size_t cap);

/* ---- cm.c ---- */

/* What a QP is made of, given by the API side to the CM (which creates it when the
 * handshake reaches that point). */
struct fd_qp_spec {
	struct fc_rdma_qp_init init;  /* pd, cqs, depths, order...; conn set by the CM */
	void *sq, *rq;                /* rings to attach */
	size_t sq_bytes, rq_bytes;
};

/* The end of a connect or an accept: status 0 (qpn, remote_qpn set) or -errno. */
typedef void (*fd_cm_done_fn)(void *ctx, int status, uint32_t qpn, uint32_t remote_qpn);

struct fd_cm *fd_cm_new(struct fd_daemon *d);
void fd_cm_free(struct fd_cm *cm);
int fd_cm_fd(const struct fd_cm *cm);
/* Start connecting to service at the peer daemon's CM address. Returns a connection id
 * (> 0) whose done is called once, or -errno. */
int64_t fd_cm_connect(struct fd_cm *cm, const struct sockaddr *peer, socklen_t len,
		      uint16_t service, const struct fd_qp_spec *qp, int timeout_ms,
		      fd_cm_done_fn done, void *ctx);
/* Bind QP lqpn of ours (type and ordering as created, in INIT) to QP rqpn of the peer
 * daemon at peer (its CM address): the peer's client does the same naming ours. When the
 * connection is open both QPs are in RTR and done is called (qpn, remote_qpn set); the
 * QP stays the caller's (destroy it before fd_cm_close). Returns an id as
 * fd_cm_connect. */
int64_t fd_cm_bind(struct fd_cm *cm, const struct sockaddr *peer, socklen_t len, uint32_t lqpn,
		   uint32_t rqpn, uint8_t qp_type, uint8_t order, int timeout_ms,
		   fd_cm_done_fn done, void *ctx);
/* An M:N connection without a QP to the peer daemon, for address handles (UD). Returns an
 * id as fd_cm_connect; done reports it open (qpn 0). Address handles to one peer share
 * its connection: when one is open already, its id comes back at once (fd_cm_conn is
 * set, done is not called) and fd_cm_close of each id closes it after the last. */
int64_t fd_cm_ah(struct fd_cm *cm, const struct sockaddr *peer, socklen_t len, int timeout_ms,
		 fd_cm_done_fn done, void *ctx);
/* Security psp: rotate the PSP keys now (spec 9.2.2.3, without loss). 0 or -EOPNOTSUPP
 * (security none). */
int fd_cm_rotate_keys(struct fd_cm *cm);
/* Security psp: the peer with identity pub is no longer allowed: its session ends and its
 * connections fail (their QPs go to the error state). Returns the sessions ended. */
unsigned fd_cm_forget_identity(struct fd_cm *cm, const uint8_t pub[32]);
/* The engine gave up the Falcon connection with local CID lcid (its peer silent past the
 * QP's timers; the QP is in the error state): tell the peer (DREQ), whose QP then goes to
 * the error state too and flushes, as a closing one does. */
void fd_cm_conn_dead(struct fd_cm *cm, uint32_t lcid);
/* Why the CM's last failure failed, in a sentence that names the peer ("127.0.0.1:7473
 * refused our handshake: our key is not on its allow-list"): valid in a done callback
 * with status < 0 and after a negative return of fd_cm_connect, _bind, _ah, _accept,
 * fd_cm_peer_cm_addr, until the CM's next call; "" when it has nothing to add. */
const char *fd_cm_why(const struct fd_cm *cm);
/* The CM address of the daemon that is the node's data peer node_peer (a UD completion's
 * src_id - 1): 0, or -ENOENT (no connection with that peer was ever set up; fd_cm_why
 * says so). */
int fd_cm_peer_cm_addr(struct fd_cm *cm, uint32_t node_peer, struct sockaddr_storage *ss,
		       socklen_t *len);
/* The open Falcon connection of an established id, else NULL. */
struct fc_txn *fd_cm_conn(const struct fd_cm *cm, int64_t id);
/* Listeners. fd_cm_listen: 0 or -EADDRINUSE / -ENOMEM. */
int fd_cm_listen(struct fd_cm *cm, uint16_t service, uint16_t backlog, void *owner);
void fd_cm_unlisten(struct fd_cm *cm, uint16_t service);
/* Take a waiting request of service (now or when one comes, until timeout_ms; < 0:
 * forever): returns a connection id as fd_cm_connect. */
int64_t fd_cm_accept(struct fd_cm *cm, uint16_t service, const struct fd_qp_spec *qp,
		     int timeout_ms, fd_cm_done_fn done, void *ctx);
/* Give up a connection: a pending connect / accept completes with nothing (done is not
 * called); an established one destroys its QP, closes the Falcon connection and tells
 * the peer (DREQ, retried). */
void fd_cm_close(struct fd_cm *cm, int64_t id);

/* Admin views: write JSON of peers / connections into buf; returns bytes written
 * (truncated at cap, never more). */
size_t fd_cm_json_peers(const struct fd_cm *cm, char *buf, size_t cap);
size_t fd_cm_json_conns(const struct fd_cm *cm, char *buf, size_t cap);
size_t fd_cm_json_stats(const struct fd_cm *cm, char *buf, size_t cap);
uint32_t fd_cm_nconns(const struct fd_cm *cm);

/* ---- sec.c: identity, allow-list, the PSP layer ---- */

/* Load the identity key and peers, start the PSP layer (cipher: the best this CPU has).
 * NULL with the reason logged. */
struct fd_sec *fd_sec_new(struct fd_daemon *d);
void fd_sec_free(struct fd_sec *s);
/* The node's encapsulation and its context. */
const struct fc_encap_ops *fd_sec_encap(struct fd_sec *s);
void *fd_sec_encap_ctx(struct fd_sec *s);
const struct fc_hs_key *fd_sec_identity(const struct fd_sec *s);
struct fc_hs_peers *fd_sec_allow(struct fd_sec *s);
struct fc_encap_psp *fd_sec_psp(struct fd_sec *s);
uint8_t fd_sec_cipher(const struct fd_sec *s);
/* A configured peer's CM address, "ADDRESS:PORT" (IPv4, or IPv6 in brackets), into a
 * socket address. Returns 0 or -EINVAL (not that form). The config parser checks each
 * --peer with it, so that a bad one is refused with its FILE:LINE. */
int fd_sec_parse_cm_addr(const char *s, struct fc_peer_addr *out);
/* The configured key of the peer whose CM is at sa, else NULL. */
const uint8_t *fd_sec_key_of(const struct fd_sec *s, const struct sockaddr *sa, socklen_t len);
/* Session sess (a CM peer slot) reaches node peer node_peer: its SPIs are that peer's
 * tunnel for the SPI check (9.2.2.3). */
void fd_sec_bind(struct fd_sec *s, uint32_t sess, uint32_t node_peer);
size_t fd_sec_json(const struct fd_sec *s, char *buf, size_t cap);
/* SIGHUP: the identity key and peers of n (a whole new configuration) replace ours;
 * kept peers keep their sessions, removed ones lose theirs (fd_cm_forget_identity). */
void fd_sec_reload(struct fd_sec *s, const struct fd_cfg *n);

/* ---- api.c ---- */

struct fd_api *fd_api_new(struct fd_daemon *d);
void fd_api_free(struct fd_api *a);
/* Before the loop sleeps: take posted WRs from every ring, wake clients waiting on CQs.
 * Returns nonzero when WRs were taken (the loop should not sleep yet). */
int fd_api_prepare(struct fd_api *a, int going_to_sleep);
uint32_t fd_api_nclients(const struct fd_api *a);
size_t fd_api_json_clients(const struct fd_api *a, char *buf, size_t cap);
size_t fd_api_json_qps(const struct fd_api *a, char *buf, size_t cap);
size_t fd_api_json_mrs(const struct fd_api *a, char *buf, size_t cap);
size_t fd_api_json_stats(const struct fd_api *a, char *buf, size_t cap);
struct fd_json;
/* The limits of struct fd_cfg beside what is in use, as members of the open object j
 * (falconctl status). */
void fd_api_json_limits(const struct fd_api *a, struct fd_json *j);

/* ---- admin.c ---- */

struct fd_admin *fd_admin_new(struct fd_daemon *d);
void fd_admin_free(struct fd_admin *ad);

/* ---- json.c: appending JSON into a fixed buffer ---- */

struct fd_json {
	char *buf;
	size_t cap, len;   /* len may exceed cap: the text was truncated */
	int first;         /* no comma before the next member */
};

void fd_json_init(struct fd_json *j, char *buf, size_t cap);
void fd_json_raw(struct fd_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "key": then the value formatted by fmt; a comma first unless the object just opened. */
void fd_json_kv(struct fd_json *j, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void fd_json_kstr(struct fd_json *j, const char *key, const char *s);
void fd_json_open(struct fd_json *j, const char *key, char bracket); /* key may be NULL */
void fd_json_close(struct fd_json *j, char bracket);
size_t fd_json_done(const struct fd_json *j);

#endif
