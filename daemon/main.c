/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - falcond: options and config file, the libev loop over one node, its one
 * timer, and the order in which the parts start and stop (falcond.h).
 *
 * The loop (one thread):
 *   UDP socket readable -> fc_io_udp_rx -> node -> engine        (then fd_kick)
 *   node timer          -> fc_node_on_timer                      (then fd_kick)
 *   before sleeping     -> fd_api_prepare: WRs from the clients' rings, CQ wakeups
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
#include <time.h>
#include <unistd.h>

#include "falcon/api.h"
#include "falcon/falcon.h"
#include "falcond.h"
#include "log.h"

#define FALCOND_VERSION "0.1"
#define TX_FRAMES 2048u
#define KICK_ROUNDS 16u       /* poll_tx calls per kick before the loop takes a breath */
#define RX_PER_WAKE 1024u     /* datagrams per readable event */

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
	dl = fc_node_next_deadline(d->node);
	ev_timer_stop(d->loop, &d->timer_w);
	if (dl != UINT64_MAX) {
		double after = dl > now ? (double)(dl - now) / 1e9 : 0.;

		ev_timer_set(&d->timer_w, after, 0.);
		ev_timer_start(d->loop, &d->timer_w);
	}
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct fd_daemon *d = w->data;
	int rc = fc_io_udp_rx(d->io, d->node, fd_now_ns(), RX_PER_WAKE);

	(void)loop;
	(void)revents;
	if (rc < 0)
		LOG_D("udp: receive: %s", strerror(-rc));
	fd_kick(d);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct fd_daemon *d = w->data;

	(void)loop;
	(void)revents;
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

static void prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct fd_daemon *d = w->data;

	(void)revents;
	d->loops++;
	for (int i = 0; i < 4 && fd_api_prepare(d->api, 0) > 0; i++)
		fd_kick(d);
	/* going to sleep: tell the clients to ring, then look once more (a WR published
	 * before the flag was seen would otherwise wait for the next wakeup) */
	if (fd_api_prepare(d->api, 1) > 0) {
		fd_kick(d);
		ev_idle_start(loop, &d->idle_w);
	}
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

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	LOG_I("falcond: %s: shutting down", strsignal(w->signum));
	ev_break(loop, EVBREAK_ALL);
}

/* ---- configuration ---- */

static void cfg_default(struct fd_cfg *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->api_path, sizeof(c->api_path), "/run/falcon/falcond.sock");
	snprintf(c->admin_path, sizeof(c->admin_path), "/run/falcon/falconctl.sock");
	snprintf(c->listen_addr, sizeof(c->listen_addr), "127.0.0.1");
	c->data_port = 7470;
	c->cm_port = FALCON_CM_PORT_DEFAULT;
	c->max_conns = 1024;
	c->max_qps = 1024;
	c->max_cqs = 1024;
	c->max_mrs = 4096;
	c->max_clients = 64;
	c->mtu_bytes = 4096;
	c->features_supported = FD_CM_F_ALL;
	c->cm_retry_ms = 100;
	c->cm_retries = 30;
	c->log_level = FC_LOG_INFO;
}

enum opt_id {
	O_CONFIG = 'c', O_HELP = 'h', O_VERSION = 'V',
	O_LISTEN = 256, O_PORT, O_CM_PORT, O_RUNDIR, O_API, O_ADMIN, O_IO, O_LOG, O_FAULT_TX,
	O_FAULT_RX, O_FAULT_SEED, O_MAX_CONNS, O_MAX_CLIENTS, O_MTU, O_CM_REQUIRE, O_CM_RETRY_MS,
	O_CM_RETRIES,
};

static const struct option opts[] = {
	{ "config", required_argument, NULL, O_CONFIG },
	{ "help", no_argument, NULL, O_HELP },
	{ "version", no_argument, NULL, O_VERSION },
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "port", required_argument, NULL, O_PORT },
	{ "cm-port", required_argument, NULL, O_CM_PORT },
	{ "runtime-dir", required_argument, NULL, O_RUNDIR },
	{ "api-socket", required_argument, NULL, O_API },
	{ "admin-socket", required_argument, NULL, O_ADMIN },
	{ "io", required_argument, NULL, O_IO },
	{ "log-level", required_argument, NULL, O_LOG },
	{ "fault-tx", required_argument, NULL, O_FAULT_TX },
	{ "fault-rx", required_argument, NULL, O_FAULT_RX },
	{ "fault-seed", required_argument, NULL, O_FAULT_SEED },
	{ "max-conns", required_argument, NULL, O_MAX_CONNS },
	{ "max-clients", required_argument, NULL, O_MAX_CLIENTS },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "cm-require", required_argument, NULL, O_CM_REQUIRE },
	{ "cm-retry-ms", required_argument, NULL, O_CM_RETRY_MS },
	{ "cm-retries", required_argument, NULL, O_CM_RETRIES },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: falcond [options]\n"
		"  -c, --config FILE      config file (key value lines, the long option names);\n"
		"                         options on the command line override it\n"
		"  --listen ADDR          address for data and CM (IPv4 or IPv6; default 127.0.0.1)\n"
		"  --port N               Falcon data UDP port (default 7470)\n"
		"  --cm-port N            connection-manager UDP port (default %u)\n"
		"  --runtime-dir DIR      put falcond.sock and falconctl.sock there (default /run/falcon)\n"
		"  --api-socket PATH      client API socket\n"
		"  --admin-socket PATH    falconctl socket\n"
		"  --io udp|auto          I/O backend (auto = udp until the XDP backend lands)\n"
		"  --log-level L          error, warn, info (default), debug\n"
		"  --fault-tx SPEC        inject faults on transmit, e.g. drop=5%%,dup=1%%,reorder=2%%,corrupt=0.1%%\n"
		"  --fault-rx SPEC        the same on receive\n"
		"  --fault-seed N         seed of the fault injection (default 1)\n"
		"  --max-conns N          Falcon connections (default 1024)\n"
		"  --max-clients N        client processes (default 64)\n"
		"  --mtu N                RDMA payload bytes per packet (default 4096)\n"
		"  --cm-require HEX       CM feature bits a peer must support (tests)\n"
		"  --cm-retry-ms N        CM retransmission interval (default 100)\n"
		"  --cm-retries N         CM retransmissions before giving up (default 30)\n"
		"  -V, --version, -h, --help\n",
		FALCON_CM_PORT_DEFAULT);
}

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *e;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &e, 0);
	if (errno || e == s || *e || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* One option. Returns 0, or -EINVAL with a message printed. */
static int apply(struct fd_cfg *c, int id, const char *name, const char *v)
{
	uint32_t u;
	int rc = 0;

	switch (id) {
	case O_LISTEN:
		if (strlen(v) >= sizeof(c->listen_addr))
			rc = -EINVAL;
		else
			strcpy(c->listen_addr, v);
		break;
	case O_PORT:
		if (!(rc = parse_u32(v, 1, 65535, &u)))
			c->data_port = (uint16_t)u;
		break;
	case O_CM_PORT:
		if (!(rc = parse_u32(v, 1, 65535, &u)))
			c->cm_port = (uint16_t)u;
		break;
	case O_RUNDIR:
		if (strlen(v) + 16 > sizeof(c->api_path)) {
			rc = -EINVAL;
			break;
		}
		snprintf(c->api_path, sizeof(c->api_path), "%s/falcond.sock", v);
		snprintf(c->admin_path, sizeof(c->admin_path), "%s/falconctl.sock", v);
		break;
	case O_API:
	case O_ADMIN: {
		char *dst = id == O_API ? c->api_path : c->admin_path;

		if (strlen(v) >= sizeof(c->api_path))
			rc = -EINVAL;
		else
			strcpy(dst, v);
		break;
	}
	case O_IO:
		if (strcmp(v, "udp") && strcmp(v, "auto")) {
			fprintf(stderr, "falcond: --io %s: this build has the udp backend only\n", v);
			return -EINVAL;
		}
		break;
	case O_LOG:
		if ((c->log_level = fc_log_parse_level(v)) < 0)
			rc = -EINVAL;
		break;
	case O_FAULT_TX:
	case O_FAULT_RX:
		rc = fc_fault_parse_dir(v, id == O_FAULT_TX ? &c->fault.tx : &c->fault.rx);
		c->fault_on = 1;
		break;
	case O_FAULT_SEED: {
		char *e;

		errno = 0;
		c->fault.seed = strtoull(v, &e, 0);
		if (errno || e == v || *e)
			rc = -EINVAL;
		break;
	}
	case O_MAX_CONNS:
		rc = parse_u32(v, 1, FC_NODE_CONNS_MAX, &c->max_conns);
		break;
	case O_MAX_CLIENTS:
		rc = parse_u32(v, 1, 65536, &c->max_clients);
		break;
	case O_MTU:
		if (!(rc = parse_u32(v, 256, 8192, &c->mtu_bytes)) && (c->mtu_bytes & 63))
			rc = -EINVAL;
		break;
	case O_CM_REQUIRE:
		rc = parse_u32(v, 0, UINT32_MAX, &c->features_required);
		break;
	case O_CM_RETRY_MS:
		rc = parse_u32(v, 1, 10000, &c->cm_retry_ms);
		break;
	case O_CM_RETRIES:
		rc = parse_u32(v, 1, 1000, &c->cm_retries);
		break;
	default:
		fprintf(stderr, "falcond: unknown option %s\n", name);
		return -EINVAL;
	}
	if (rc)
		fprintf(stderr, "falcond: bad value for %s: '%s'\n", name, v);
	return rc;
}

/* The config file: "key value" per line, '#' starts a comment. */
static int load_config(struct fd_cfg *c, const char *path)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int lineno = 0, rc = 0;

	if (!f) {
		fprintf(stderr, "falcond: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f) && !rc) {
		char *p = line, *key, *val, *end;
		const struct option *o;

		lineno++;
		if ((end = strchr(p, '#')))
			*end = 0;
		key = strtok(p, " \t\r\n=");
		if (!key)
			continue;
		val = strtok(NULL, " \t\r\n");
		for (o = opts; o->name && strcmp(o->name, key); o++)
			;
		if (!o->name || o->has_arg != required_argument || o->val == O_CONFIG || !val) {
			fprintf(stderr, "falcond: %s:%d: %s '%s'\n", path, lineno,
				!o->name ? "unknown key" : "needs a value", key);
			rc = -EINVAL;
			break;
		}
		rc = apply(c, o->val, key, val);
	}
	fclose(f);
	return rc;
}

static int parse_args(struct fd_cfg *c, int argc, char **argv)
{
	int id, rc;

	/* the config file first, whatever its place: the command line overrides it */
	for (int i = 1; i < argc; i++) {
		const char *p = NULL;

		if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) && i + 1 < argc)
			p = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			p = argv[i] + 9;
		if (p && (rc = load_config(c, p)))
			return rc;
	}
	optind = 1;
	while ((id = getopt_long(argc, argv, "c:hV", opts, NULL)) != -1) {
		switch (id) {
		case O_CONFIG:
			break;
		case O_HELP:
			usage(stdout);
			exit(0);
		case O_VERSION:
			printf("falcond %s (API %u, CM %u)\n", FALCOND_VERSION, FC_API_VERSION,
			       FD_CM_VERSION);
			exit(0);
		case '?':
			usage(stderr);
			return -EINVAL;
		default: {
			const struct option *o;

			for (o = opts; o->name && o->val != id; o++)
				;
			if ((rc = apply(c, id, o->name ? o->name : "?", optarg)))
				return rc;
		}
		}
	}
	if (optind < argc) {
		fprintf(stderr, "falcond: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* ---- start and stop ---- */

static int open_io(struct fd_daemon *d)
{
	struct sockaddr_storage ss;
	socklen_t len;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, d->cfg.listen_addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons(d->cfg.data_port);
		len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, d->cfg.listen_addr,
			     &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(d->cfg.data_port);
		len = sizeof(struct sockaddr_in6);
	} else {
		LOG_E("falcond: --listen %s is not an IPv4 or IPv6 address", d->cfg.listen_addr);
		return -EINVAL;
	}
	d->io = fc_io_udp_open((struct sockaddr *)&ss, len, TX_FRAMES);
	if (!d->io) {
		LOG_E("falcond: UDP %s port %u: %s", d->cfg.listen_addr, d->cfg.data_port,
		      strerror(errno));
		return -errno;
	}
	return 0;
}

static int start(struct fd_daemon *d)
{
	struct fc_node_cfg nc;
	int rc;

	if ((rc = open_io(d)))
		return rc;
	fc_node_cfg_default(&nc);
	nc.txn.max_conns = d->cfg.max_conns;
	nc.rdma.max_conns = d->cfg.max_conns;
	nc.rdma.max_qps = d->cfg.max_qps;
	nc.rdma.max_cqs = d->cfg.max_cqs;
	nc.rdma.mtu_bytes = d->cfg.mtu_bytes;
	nc.txn.mtu_bytes = d->cfg.mtu_bytes + FC_RDMA_HDR_MAX;
	nc.mr_cap = d->cfg.max_mrs;
	nc.rand = key_rand;
	nc.io = &fc_io_udp_ops;
	nc.io_ctx = d->io;
	if (d->cfg.fault_on) {
		d->cfg.fault.seed = d->cfg.fault.seed ? d->cfg.fault.seed : 1;
		d->fault = fc_fault_new(&d->cfg.fault, &fc_io_udp_ops, d->io);
		if (!d->fault) {
			LOG_E("falcond: fault injection: %s", strerror(errno));
			return -errno;
		}
		nc.io = &fc_fault_ops;
		nc.io_ctx = d->fault;
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
	ev_io_init(&d->io_w, io_cb, fc_io_udp_fd(d->io), EV_READ);
	ev_timer_init(&d->timer_w, timer_cb, 0., 0.);
	ev_prepare_init(&d->prep_w, prepare_cb);
	ev_idle_init(&d->idle_w, idle_cb);
	d->io_w.data = d->timer_w.data = d->prep_w.data = d->idle_w.data = d;
	ev_io_start(d->loop, &d->io_w);
	ev_prepare_start(d->loop, &d->prep_w);
	if (d->fault) {
		ev_timer_init(&d->fault_w, fault_cb, 0.001, 0.001);
		d->fault_w.data = d;
		ev_timer_start(d->loop, &d->fault_w);
	}
	for (int i = 0; i < 2; i++) {
		ev_signal_init(&d->sig_w[i], signal_cb, i ? SIGTERM : SIGINT);
		ev_signal_start(d->loop, &d->sig_w[i]);
		ev_unref(d->loop);
	}
	return 0;
}

static void stop(struct fd_daemon *d)
{
	fd_api_free(d->api);     /* clients' QPs go first: peers are told */
	fd_admin_free(d->admin);
	fd_cm_free(d->cm);
	if (d->node)
		fc_node_free(d->node);
	fc_fault_free(d->fault);
	if (d->io)
		fc_io_udp_close(d->io);
}

int main(int argc, char **argv)
{
	static struct fd_daemon d;
	int rc;

	cfg_default(&d.cfg);
	if (parse_args(&d.cfg, argc, argv))
		return 2;
	fc_log_level = d.cfg.log_level;
	signal(SIGPIPE, SIG_IGN);
	d.loop = ev_default_loop(EVFLAG_AUTO);
	d.start_ns = fd_now_ns();
	rc = start(&d);
	if (!rc) {
		LOG_I("falcond %s: data udp %s:%u, cm udp %s:%u, api %s, admin %s, security none "
		      "(packets are not encrypted: PSP is not built yet)",
		      FALCOND_VERSION, d.cfg.listen_addr, d.cfg.data_port, d.cfg.listen_addr,
		      d.cfg.cm_port, d.cfg.api_path, d.cfg.admin_path);
		/* the signal watchers are unref'd: keep the loop alive with the sockets */
		ev_run(d.loop, 0);
	}
	stop(&d);
	ev_loop_destroy(d.loop);
	LOG_I("falcond: stopped");
	return rc ? 1 : 0;
}
