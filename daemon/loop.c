/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loop.c - falcond's loop over one node (falcond.h): its I/O, its one timer, the order
 * in which the parts start and stop.
 *
 *   UDP socket readable -> fc_io_udp_rx -> node -> engine        (then fd_kick)
 *   (--io xdp: the AF_XDP sockets and that UDP socket behind one epoll fd, fc_io_xdp_rx)
 *   node timer          -> fc_node_on_timer                      (then fd_kick)
 *   before sleeping     -> fd_api_prepare: WRs from the clients' rings, CQ wakeups;
 *                          with --poll adaptive / busy, fd_poll_keep may keep polling
 *                          instead (poll.c)
 *   fd_kick             -> fc_node_poll_tx until the engine has nothing to send (bounded
 *                          per call; an idle watcher keeps the loop awake for the rest),
 *                          the timer re-armed from fc_node_next_deadline
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "falcon/api.h"
#include "falcon/falcon.h"
#include "falcond.h"
#include "log.h"
#include "wire_falcon.h"
#include "wire_rdma.h"

#define TX_FRAMES 2048u
#define KICK_ROUNDS 16u       /* poll_tx calls per kick before the loop takes a breath */
#define RX_PER_WAKE 1024u     /* datagrams per readable event */
/* The loop is stalled when it comes back this late: past its own timer's deadline (a
 * SIGSTOP, a CPU given to others, a long page fault) or from one iteration's work. An
 * RTO is 2 ms at least (FD_MIN_RTO_US_DEFAULT) and a peer's budget 0.5 s and more:
 * lateness below this is ordinary scheduling noise. */
#define STALL_NS 10000000ull
#define STALL_LOG_NS 500000000ull /* stalls this long are logged at info */

uint64_t fd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t key_rand(void *ctx)
{
	uint32_t v;

	(void)ctx;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)(fd_now_ns() * 2654435761u);
	return v;
}

/* The node's one timer is a timerfd on CLOCK_MONOTONIC (fd_now_ns's clock) with an
 * absolute deadline: the engine's deadlines are microseconds away (ACK coalescing, RTO)
 * and an ev_timer would sleep in epoll_wait, whose timeout is in whole milliseconds.
 * Re-armed only when the deadline moves earlier (fd_kick). */
static void timer_arm(struct fd_daemon *d, uint64_t at_ns)
{
	struct itimerspec its = { 0 };

	if (at_ns != UINT64_MAX) {
		at_ns = at_ns ? at_ns : 1; /* 0 would disarm: "now" is any time in the past */
		its.it_value.tv_sec = (time_t)(at_ns / 1000000000ull);
		its.it_value.tv_nsec = (long)(at_ns % 1000000000ull);
	}
	if (timerfd_settime(d->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		d->timer_at_ns = at_ns;
	else
		LOG_E("falcond: timerfd: %s", strerror(errno)); /* cannot fail with these args */
}

void fd_kick(struct fd_daemon *d)
{
	uint64_t now = fd_now_ns(), dl;
	unsigned rounds = 0, n = 0;

	do {
		n = fc_node_poll_tx(d->node, now, FC_NODE_BATCH_MAX);
		d->tx_rounds++;
	} while (n == FC_NODE_BATCH_MAX && ++rounds < KICK_ROUNDS);
	if (n == FC_NODE_BATCH_MAX)
		ev_idle_start(d->loop, &d->idle_w); /* more to send: do not sleep */
	/* re-armed only for an earlier deadline: a later one is found when the armed timer
	 * fires (timer_cb, then here), one early wakeup instead of a timerfd_settime per kick
	 * while the engine's deadlines move with every operation. A polling loop arms
	 * nothing: poll.c's poll_cb looks at the deadline every round (a timerfd_settime per
	 * expiry was 11 % of a busy daemon at 1.1 M WRITEs/s), before_poll arms it when the
	 * loop is about to block */
	dl = fc_node_next_deadline(d->node);
	if (dl < d->timer_at_ns && !ev_is_active(&d->poll_w))
		timer_arm(d, dl);
}

int fd_rx(struct fd_daemon *d)
{
	uint64_t now = fd_now_ns();
	int rc = d->xio ? fc_io_xdp_rx(d->xio, d->node, now, RX_PER_WAKE) :
		fc_io_udp_rx(d->io, d->node, now, RX_PER_WAKE);

	if (rc < 0)
		LOG_D("%s: receive: %s", d->io_name, strerror(-rc));
	else if (rc > 0)
		d->poll_work_ns = now; /* --poll adaptive: its window starts again */
	fd_kick(d);
	return rc;
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	fd_rx(w->data);
}

static void timer_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct fd_daemon *d = w->data;
	uint64_t expirations;

	(void)loop;
	(void)revents;
	if (read(d->timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		LOG_D("falcond: timerfd read: %s", strerror(errno));
	d->timer_at_ns = UINT64_MAX; /* fired: disarmed until fd_kick arms it again */
	fc_node_on_timer(d->node, fd_now_ns());
	fd_kick(d);
}

static void idle_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct fd_daemon *d = w->data;

	(void)revents;
	ev_idle_stop(loop, w);
	fd_kick(d);
}

/* The RUE thread's results (rue_thread.h): each to its connection's PDL. */
static int rue_results(struct fd_daemon *d)
{
	struct fc_cc_result res;
	int n = 0;

	while (n < 1024 && fd_rue_thread_take(d->rue_th, &res)) {
		if (fc_node_cc_apply(d->node, &res) == 0)
			n++;
	}
	return n;
}

static void rue_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct fd_daemon *d = w->data;

	(void)loop;
	(void)revents;
	fd_rue_thread_ack(d->rue_th);
	if (rue_results(d))
		fd_kick(d); /* a window may have opened */
}

static int rue_offer(void *ctx, const struct fc_cc_event *ev, unsigned pred)
{
	return fd_rue_thread_offer(ctx, ev, pred);
}

static void conn_dead(void *ctx, uint32_t cid)
{
	struct fd_daemon *d = ctx;

	if (d->cm)
		fd_cm_conn_dead(d->cm, cid);
}

static void rue_forget(void *ctx, uint32_t cid)
{
	fd_rue_thread_forget(ctx, cid);
}

/* Where stall_check measures from: the loop goes to poll (blocking or not) now, and the
 * timer it leaves armed (armed here when it will block). Every exit of prepare_cb passes
 * here. */
static void stall_mark(struct fd_daemon *d)
{
	d->sleep_polling = ev_is_active(&d->poll_w);
	if (!d->sleep_polling) { /* going to block: the engine's deadline must wake it */
		uint64_t dl = fc_node_next_deadline(d->node);

		if (dl < d->timer_at_ns)
			timer_arm(d, dl);
	}
	d->sleep_ns = fd_now_ns();
	d->sleep_dl_ns = d->timer_at_ns;
}

static void prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct fd_daemon *d = w->data;
	int work = 0;

	(void)revents;
	d->loops++;
	if (d->rue_th && rue_results(d))
		fd_kick(d);
	for (int i = 0; i < 4 && fd_api_prepare(d->api, 0) > 0; i++, work = 1)
		fd_kick(d);
	if (fd_poll_keep(d, work)) {
		stall_mark(d);
		return; /* --poll: the loop does not block, the clients need not ring */
	}
	/* going to sleep: tell the clients to ring, then look once more (a WR published
	 * before the flag was seen would otherwise wait for the next wakeup) */
	d->sleeps++;
	if (fd_api_prepare(d->api, 1) > 0) {
		fd_kick(d);
		if (!fd_poll_keep(d, 1))
			ev_idle_start(loop, &d->idle_w);
	}
	/* the same with the RUE thread: asleep from here unless results wait already */
	if (d->rue_th && fd_rue_thread_loop_sleeps(d->rue_th, 1)) {
		fd_rue_thread_loop_sleeps(d->rue_th, 0);
		ev_idle_start(loop, &d->idle_w);
	}
	stall_mark(d);
}

/* A stalled loop does not blame its peers (DESIGN.md, "Threads"): the time it did not run
 * is taken off their silence and the timers that expired meanwhile are re-armed once,
 * before timer_cb can fire them (the check watcher runs first: EV_MAXPRI). Stalled: back
 * from the poll later than the timer it slept for by STALL_NS, or an iteration that took
 * that long (the process ran nothing of ours meanwhile, or not for the peers). */
static void stall_check(struct fd_daemon *d)
{
	uint64_t now = fd_now_ns(), stall = 0;
	uint64_t due = d->sleep_dl_ns > d->sleep_ns ? d->sleep_dl_ns : d->sleep_ns;

	/* late past the timer it slept for, or past its going to sleep when that timer was
	 * already due (an armed deadline in the past wakes the poll at once) */
	if (d->sleep_dl_ns != UINT64_MAX && now > due + STALL_NS)
		stall = now - due;
	if (d->sleep_polling && now > d->sleep_ns + STALL_NS && now - d->sleep_ns > stall)
		stall = now - d->sleep_ns; /* a non-blocking poll that took this long */
	if (d->awake_ns && d->sleep_ns > d->awake_ns + STALL_NS &&
	    d->sleep_ns - d->awake_ns > stall)
		stall = d->sleep_ns - d->awake_ns;
	d->awake_ns = now;
	if (!stall)
		return;
	if (stall >= STALL_LOG_NS)
		LOG_I("falcond: did not run for %llu ms (stopped or starved of CPU): its peers' "
		      "silence meanwhile is not held against them",
		      (unsigned long long)(stall / 1000000u));
	else
		LOG_D("falcond: stalled %llu us", (unsigned long long)(stall / 1000u));
	fc_node_stalled(d->node, stall, now);
}

static void check_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	struct fd_daemon *d = w->data;

	(void)loop;
	(void)revents;
	stall_check(d);
	if (d->rue_th)
		fd_rue_thread_loop_sleeps(d->rue_th, 0); /* awake: the thread need not ring */
}

static unsigned fault_rx(void *ctx, struct fc_frame *f, unsigned n, unsigned cap)
{
	return fc_fault_rx(ctx, f, n, cap);
}

static void fault_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct fd_daemon *d = w->data;

	(void)loop;
	(void)revents;
	fc_fault_flush_tx(d->fault);
}

static void log_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	fc_log_flush(0);
}

/* ---- configuration ---- */

void fd_cfg_default(struct fd_cfg *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->api_path, sizeof(c->api_path), "/run/falcon/falcond.sock");
	snprintf(c->admin_path, sizeof(c->admin_path), "/run/falcon/falconctl.sock");
	snprintf(c->listen_addr, sizeof(c->listen_addr), "127.0.0.1");
	c->data_port = 7470;
	c->cm_port = FALCON_CM_PORT_DEFAULT;
	c->max_qps = FD_MAX_QPS_DEFAULT;
	c->max_conns = FD_MAX_QPS_DEFAULT; /* fd_cfg_check: --max-qps's, unless given */
	c->max_cqs = FD_MAX_CQS_DEFAULT;
	c->max_mrs = FD_MAX_MRS_DEFAULT;
	c->max_srqs = FD_MAX_SRQS_DEFAULT;
	c->max_ahs = FD_MAX_AHS_DEFAULT;
	c->max_pds = FD_MAX_PDS_DEFAULT;
	c->max_clients = FD_MAX_CLIENTS_DEFAULT;
	c->client_max_objects = FD_CLIENT_MAX_OBJECTS_DEFAULT; /* quotas 0: the daemon's */
	c->mtu_bytes = 4096;
	c->features_supported = FD_CM_F_ALL;
	c->cm_retry_ms = 100;
	c->cm_retries = 30;
	c->log_level = FC_LOG_INFO;
	c->cc_target_us = FD_CC_TARGET_US_DEFAULT;
	c->min_rto_us = FD_MIN_RTO_US_DEFAULT;
	c->security = FD_SEC_PSP;
	snprintf(c->key_path, sizeof(c->key_path), "/etc/falcon/falcond.key");
	c->replay_margin_us = 50000;
	c->psp_cipher = -1;
	c->poll = FD_POLL_DEFAULT;
	c->poll_us = FD_POLL_US_DEFAULT;
	c->sched_policy = SCHED_OTHER;
	/* --rue auto: a thread of its own costs a wakeup per CC event burst, which pays only
	 * where it does not take a core from the loop or the clients */
	c->rue_inline = sysconf(_SC_NPROCESSORS_ONLN) < 4;
}

int fd_cfg_check(struct fd_cfg *c, char *why, size_t cap)
{
	if (!c->max_conns_set)
		c->max_conns = c->max_qps; /* an RC QP is one connection */
	if (!c->client_max_qps)
		c->client_max_qps = c->max_qps;
	if (!c->client_max_mrs)
		c->client_max_mrs = c->max_mrs;
	if (c->client_max_qps > c->max_qps)
		snprintf(why, cap, "--client-max-qps %u is above --max-qps %u", c->client_max_qps,
			 c->max_qps);
	else if (c->client_max_mrs > c->max_mrs)
		snprintf(why, cap, "--client-max-mrs %u is above --max-mrs %u", c->client_max_mrs,
			 c->max_mrs);
	else
		return 0;
	return -EINVAL;
}

/* ---- start and stop ---- */

/* The data address (listen address, data port) as a socket address. */
static int data_addr(const struct fd_daemon *d, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, d->cfg.listen_addr, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		ss->ss_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons(d->cfg.data_port);
		*len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, d->cfg.listen_addr,
			     &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons(d->cfg.data_port);
		*len = sizeof(struct sockaddr_in6);
	} else {
		LOG_E("falcond: --listen %s is not an IPv4 or IPv6 address", d->cfg.listen_addr);
		return -EINVAL;
	}
	return 0;
}

/* XDP: the program attached and pinned, the AF_XDP sockets open, the MTU checked against
 * what a frame holds (or, not given, chosen to fit). encap: the node's encapsulation (its
 * header and trailer take frame room too). Returns 0, or -errno with d->io_why set. */
static int open_xdp(struct fd_daemon *d, const struct sockaddr *sa, socklen_t len,
		    const struct fc_encap_ops *encap)
{
	struct fc_xdp_load_cfg lc = { .listen = sa, .listen_len = len,
				      .data_port = d->cfg.data_port,
				      .max_conns = d->cfg.max_conns, .instance = d->cfg.instance };
	struct fc_io_xdp_cfg xc = { .local = sa, .local_len = len, .udp_tx_frames = 256 };
	uint32_t over = FC_RDMA_HDR_MAX + FC_FALCON_HDR_MAX + encap->headroom + encap->tailroom;
	uint32_t room;
	int rc;

	if (!d->cfg.instance[0])
		snprintf(d->cfg.instance, sizeof(d->cfg.instance), "p%u", d->cfg.data_port);
	if ((rc = fc_xdp_load(&lc, &d->xdp, d->io_why, sizeof(d->io_why))))
		return rc;
	room = fc_io_xdp_max_payload(sa->sa_family, d->xdp->if_mtu);
	if (!d->cfg.mtu_set && d->cfg.mtu_bytes + over > room) {
		uint32_t mtu = room > over ? (room - over) & ~63u : 0;

		if (mtu < 256) {
			snprintf(d->io_why, sizeof(d->io_why), "%s's MTU %u leaves no room for a "
				 "256-byte RDMA payload", d->xdp->ifname, d->xdp->if_mtu);
			return -EMSGSIZE;
		}
		LOG_I("falcond: xdp: RDMA MTU %u (an AF_XDP frame on %s holds %u bytes of "
		      "PSP + Falcon)", mtu, d->xdp->ifname, room);
		d->cfg.mtu_bytes = mtu;
	} else if (d->cfg.mtu_bytes + over > room) {
		snprintf(d->io_why, sizeof(d->io_why), "--mtu %u needs %u-byte frames, an AF_XDP "
			 "frame on %s holds %u (--mtu %u or less)", d->cfg.mtu_bytes,
			 d->cfg.mtu_bytes + over, d->xdp->ifname, room,
			 room > over ? (room - over) & ~63u : 0);
		return -EMSGSIZE;
	}
	xc.ifname = d->xdp->ifname;
	xc.ifindex = d->xdp->ifindex;
	xc.xsks_fd = d->xdp->xsks_fd;
	if (!(d->xio = fc_io_xdp_open(&xc))) {
		rc = -errno;
		snprintf(d->io_why, sizeof(d->io_why), "AF_XDP sockets on %s: %s", d->xdp->ifname,
			 strerror(-rc));
		return rc;
	}
	d->io = fc_io_xdp_udp(d->xio);
	return 0;
}

static void close_xdp(struct fd_daemon *d)
{
	if (d->xio)
		fc_io_xdp_close(d->xio); /* and its UDP socket, d->io */
	d->xio = NULL;
	fc_xdp_unload(d->xdp);   /* detached, unpinned */
	d->xdp = NULL;
}

/* --io auto: XDP where it can be used, else UDP with one log line saying why. --io xdp,
 * asked for explicitly, is XDP or nothing: falcond says why and does not start (an
 * operator who asked for XDP must not find a daemon quietly on UDP). */
static int open_io(struct fd_daemon *d, const struct fc_encap_ops *encap)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int rc;

	if ((rc = data_addr(d, &ss, &len)))
		return rc;
	d->io_why[0] = 0;
	if (d->cfg.io != FD_IO_UDP) {
		if ((rc = open_xdp(d, (struct sockaddr *)&ss, len, encap)) == 0) {
			d->io_name = "xdp";
			return 0;
		}
		close_xdp(d);
		d->io = NULL;
		if (d->cfg.io == FD_IO_XDP) {
			LOG_E("falcond: --io xdp: XDP cannot be used: %s (--io auto falls back to "
			      "udp)", d->io_why);
			return rc < 0 ? rc : -EOPNOTSUPP;
		}
		LOG_I("falcond: --io auto: XDP not used (%s): falling back to udp", d->io_why);
	}
	d->io_name = "udp";
	d->io = fc_io_udp_open((struct sockaddr *)&ss, len, TX_FRAMES);
	if (!d->io) {
		LOG_E("falcond: UDP %s port %u: %s", d->cfg.listen_addr, d->cfg.data_port,
		      strerror(errno));
		return -errno;
	}
	return 0;
}

int falcond_start(struct fd_daemon *d)
{
	struct fc_node_cfg nc;
	struct fc_rue_cfg rue;
	int rc;

	d->timer_fd = -1;
	fc_node_cfg_default(&nc);
	if (d->cfg.security == FD_SEC_PSP) {
		if (!(d->sec = fd_sec_new(d)))
			return -EINVAL; /* the reason is logged */
		nc.encap = fd_sec_encap(d->sec);
		nc.encap_ctx = fd_sec_encap_ctx(d->sec);
	} else {
		d->encap.now_ns = fd_now_ns;
		nc.encap = &fc_encap_null_ops; /* security none: PSP NULL, the IV carries t1 */
		nc.encap_ctx = &d->encap;
	}
	if ((rc = open_io(d, nc.encap)))
		return rc;
	nc.txn.max_conns = d->cfg.max_conns;
	nc.rdma.max_conns = d->cfg.max_conns;
	nc.rdma.max_qps = d->cfg.max_qps;
	nc.rdma.max_cqs = d->cfg.max_cqs;
	nc.rdma.max_srqs = d->cfg.max_srqs;
	nc.rdma.max_ahs = d->cfg.max_ahs;
	nc.pd_cap = d->cfg.max_pds;
	nc.rdma.mtu_bytes = d->cfg.mtu_bytes;
	if (d->cfg.pending_resp)
		nc.rdma.pending_resp = d->cfg.pending_resp;
	if (d->cfg.pull_defer_set)
		nc.rdma.pull_defer_max = d->cfg.pull_defer;
	nc.rdma.conn_dead = conn_dead;
	nc.rdma.ev_ctx = d;
	/* async events are drained before every sleep (api.c): room for one CQ overflow that
	 * takes every QP to ERR at once (QP_FATAL and LAST_WQE each), up to the engine's max */
	nc.rdma.async_depth = (uint32_t)(2ull * d->cfg.max_qps + d->cfg.max_cqs + 64 < 65536 ?
					 2ull * d->cfg.max_qps + d->cfg.max_cqs + 64 : 65536);
	nc.txn.mtu_bytes = d->cfg.mtu_bytes + FC_RDMA_HDR_MAX;
	nc.mr_cap = d->cfg.max_mrs;
	nc.rand = key_rand;
	if (!d->cfg.cc_off) {
		fc_rue_cfg_default(&rue);
		rue.base_delay_target_ns = d->cfg.cc_target_us * 1000u;
		rue.min_rto_ns = d->cfg.min_rto_us * 1000u;
		if (rue.initial_rto_ns < rue.min_rto_ns)
			rue.initial_rto_ns = rue.min_rto_ns;
		if (d->cfg.rue_inline) {
			nc.rue = &rue;
		} else {
			d->rue_th = fd_rue_thread_new(&rue, d->cfg.max_conns, FD_RUE_QUEUE, fd_now_ns);
			if (!d->rue_th) {
				LOG_E("falcond: RUE thread: %s", strerror(errno));
				return -errno;
			}
			nc.cc_offer = rue_offer;
			nc.cc_forget = rue_forget;
			nc.cc_ctx = d->rue_th;
		}
	}
	nc.io = d->xio ? &fc_io_xdp_ops : &fc_io_udp_ops;
	nc.io_ctx = d->xio ? (void *)d->xio : (void *)d->io;
	if (d->xdp) {
		/* the engine runs each connection's windows in falcon_conns, XDP beside it:
		 * the whole fast path without PSP, SPI / replay checks and steering with it
		 * (PSP in software: XDP cannot read the Falcon header) */
		nc.xdp_conns = d->xdp->conns;
		nc.xdp_conns_n = d->xdp->conns_n;
		nc.xdp_flags = d->sec ? FC_XDP_CONN_PSP : FC_XDP_CONN_WINDOW;
		nc.xdp_replay_margin_ns = (uint64_t)d->cfg.replay_margin_us * 1000u;
	}
	if (d->cfg.fault_on) {
		d->cfg.fault.seed = d->cfg.fault.seed ? d->cfg.fault.seed : 1;
		d->fault = fc_fault_new(&d->cfg.fault, nc.io, nc.io_ctx);
		if (!d->fault) {
			LOG_E("falcond: fault injection: %s", strerror(errno));
			return -errno;
		}
		nc.io = &fc_fault_ops;
		nc.io_ctx = d->fault;
		if (d->xio)
			fc_io_xdp_set_rx_filter(d->xio, fault_rx, d->fault);
		else
			fc_io_udp_set_rx_filter(d->io, fault_rx, d->fault);
		LOG_W("falcond: FAULT INJECTION ON (seed %llu): tx drop %u dup %u reorder %u "
		      "corrupt %u, rx drop %u dup %u reorder %u corrupt %u (ppm)",
		      (unsigned long long)d->cfg.fault.seed, d->cfg.fault.tx.drop_ppm,
		      d->cfg.fault.tx.dup_ppm, d->cfg.fault.tx.reorder_ppm,
		      d->cfg.fault.tx.corrupt_ppm, d->cfg.fault.rx.drop_ppm, d->cfg.fault.rx.dup_ppm,
		      d->cfg.fault.rx.reorder_ppm, d->cfg.fault.rx.corrupt_ppm);
	}
	d->node = fc_node_new(&nc);
	if (!d->node) {
		LOG_E("falcond: engine: %s", strerror(errno));
		return -errno;
	}
	if (!(d->cm = fd_cm_new(d))) {
		LOG_E("falcond: CM UDP %s port %u: %s", d->cfg.listen_addr, d->cfg.cm_port,
		      strerror(errno));
		return -errno;
	}
	if (!(d->api = fd_api_new(d))) {
		LOG_E("falcond: API socket %s: %s", d->cfg.api_path, strerror(errno));
		return -errno;
	}
	if (!(d->admin = fd_admin_new(d))) {
		LOG_E("falcond: admin socket %s: %s", d->cfg.admin_path, strerror(errno));
		return -errno;
	}
	ev_io_init(&d->io_w, io_cb, d->xio ? fc_io_xdp_fd(d->xio) : fc_io_udp_fd(d->io), EV_READ);
	d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (d->timer_fd < 0) {
		LOG_E("falcond: timerfd: %s", strerror(errno));
		return -errno;
	}
	d->timer_at_ns = UINT64_MAX;
	ev_io_init(&d->timer_w, timer_cb, d->timer_fd, EV_READ);
	ev_prepare_init(&d->prep_w, prepare_cb);
	ev_check_init(&d->check_w, check_cb);
	ev_set_priority(&d->check_w, EV_MAXPRI); /* stall_check before timer_cb */
	d->sleep_dl_ns = UINT64_MAX;
	ev_idle_init(&d->idle_w, idle_cb);
	fd_poll_init(d);
	d->io_w.data = d->timer_w.data = d->prep_w.data = d->idle_w.data = d->check_w.data = d;
	if (d->rue_th) {
		ev_io_init(&d->rue_w, rue_cb, fd_rue_thread_fd(d->rue_th), EV_READ);
		d->rue_w.data = d;
		ev_io_start(d->loop, &d->rue_w);
	}
	ev_io_start(d->loop, &d->io_w);
	ev_io_start(d->loop, &d->timer_w);
	ev_prepare_start(d->loop, &d->prep_w);
	ev_check_start(d->loop, &d->check_w);
	if (d->fault) {
		ev_timer_init(&d->fault_w, fault_cb, 0.001, 0.001);
		d->fault_w.data = d;
		ev_timer_start(d->loop, &d->fault_w);
	}
	/* the counts of repeated log lines (log.h), written once their window ends */
	ev_timer_init(&d->log_w, log_cb, 1., 1.);
	ev_timer_start(d->loop, &d->log_w);
	ev_unref(d->loop); /* it does not keep the loop alive */
	return 0;
}

void falcond_stop(struct fd_daemon *d)
{
	if (ev_is_active(&d->log_w)) {
		ev_ref(d->loop);
		ev_timer_stop(d->loop, &d->log_w);
	}
	ev_check_stop(d->loop, &d->check_w); /* stall_check needs the node */
	fd_api_free(d->api);     /* clients' QPs go first: peers are told */
	fd_admin_free(d->admin);
	fd_cm_free(d->cm);
	if (d->node)
		fc_node_free(d->node);
	if (d->rue_th) {
		ev_io_stop(d->loop, &d->rue_w);
		fd_rue_thread_free(d->rue_th);
		d->rue_th = NULL;
	}
	fd_sec_free(d->sec);
	d->sec = NULL;
	fc_fault_free(d->fault);
	if (d->xdp || d->xio)
		close_xdp(d);  /* after the node: it retired its slots in the mapped array */
	else if (d->io)
		fc_io_udp_close(d->io);
	d->io = NULL;
	if (d->timer_fd >= 0)
		close(d->timer_fd);
	d->timer_fd = -1;
	fc_log_flush(1); /* the repeats still counted */
}

