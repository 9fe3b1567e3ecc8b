/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - falcond's command line and config file (the long option names as "key value"
 * lines; the command line overrides the file), then the loop of loop.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "falcon/api.h"
#include "falcon/falcon.h"
#include "falcond.h"
#include "log.h"
#include "metrics.h"

#define FALCOND_VERSION FALCON_RELEASE /* the Makefile's VERSION */

enum opt_id {
	O_CONFIG = 'c', O_HELP = 'h', O_VERSION = 'V',
	O_LISTEN = 256, O_PORT, O_CM_PORT, O_RUNDIR, O_API, O_ADMIN, O_IO, O_LOG, O_FAULT_TX,
	O_FAULT_RX, O_FAULT_SEED, O_MAX_CONNS, O_MAX_CLIENTS, O_MTU, O_CM_REQUIRE, O_CM_RETRY_MS,
	O_CM_RETRIES, O_FAULT_CM, O_CC, O_CC_TARGET_US, O_MIN_RTO_US, O_PENDING_RESP, O_PULL_DEFER,
	O_CONN_DATA_CREDITS, O_RUE, O_SECURITY, O_KEY, O_PEER, O_REPLAY_MARGIN_US, O_KEY_ROTATE_S,
	O_PSP_CIPHER, O_INSTANCE, O_POLL, O_POLL_US, O_CPU, O_SCHED, O_MLOCK,
	O_MAX_QPS, O_MAX_CQS, O_MAX_MRS, O_MAX_SRQS, O_MAX_AHS, O_MAX_PDS, O_CLIENT_MAX_OBJECTS,
	O_CLIENT_MAX_QPS, O_CLIENT_MAX_MRS,
	O_METRICS = 1024, /* issue 26; apart from the list so that new options merge */
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
	{ "metrics", required_argument, NULL, O_METRICS },
	{ "io", required_argument, NULL, O_IO },
	{ "log-level", required_argument, NULL, O_LOG },
	{ "fault-tx", required_argument, NULL, O_FAULT_TX },
	{ "fault-rx", required_argument, NULL, O_FAULT_RX },
	{ "fault-seed", required_argument, NULL, O_FAULT_SEED },
	{ "fault-cm", required_argument, NULL, O_FAULT_CM },
	{ "max-conns", required_argument, NULL, O_MAX_CONNS },
	{ "max-clients", required_argument, NULL, O_MAX_CLIENTS },
	{ "max-qps", required_argument, NULL, O_MAX_QPS },
	{ "max-cqs", required_argument, NULL, O_MAX_CQS },
	{ "max-mrs", required_argument, NULL, O_MAX_MRS },
	{ "max-srqs", required_argument, NULL, O_MAX_SRQS },
	{ "max-ahs", required_argument, NULL, O_MAX_AHS },
	{ "max-pds", required_argument, NULL, O_MAX_PDS },
	{ "client-max-objects", required_argument, NULL, O_CLIENT_MAX_OBJECTS },
	{ "client-max-qps", required_argument, NULL, O_CLIENT_MAX_QPS },
	{ "client-max-mrs", required_argument, NULL, O_CLIENT_MAX_MRS },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "cm-require", required_argument, NULL, O_CM_REQUIRE },
	{ "cm-retry-ms", required_argument, NULL, O_CM_RETRY_MS },
	{ "cm-retries", required_argument, NULL, O_CM_RETRIES },
	{ "cc", required_argument, NULL, O_CC },
	{ "cc-target-us", required_argument, NULL, O_CC_TARGET_US },
	{ "min-rto-us", required_argument, NULL, O_MIN_RTO_US },
	{ "pending-resp", required_argument, NULL, O_PENDING_RESP },
	{ "pull-defer", required_argument, NULL, O_PULL_DEFER },
	{ "conn-data-credits", required_argument, NULL, O_CONN_DATA_CREDITS },
	{ "rue", required_argument, NULL, O_RUE },
	{ "security", required_argument, NULL, O_SECURITY },
	{ "key", required_argument, NULL, O_KEY },
	{ "peer", required_argument, NULL, O_PEER },
	{ "replay-margin-us", required_argument, NULL, O_REPLAY_MARGIN_US },
	{ "key-rotate-s", required_argument, NULL, O_KEY_ROTATE_S },
	{ "psp-cipher", required_argument, NULL, O_PSP_CIPHER },
	{ "instance", required_argument, NULL, O_INSTANCE },
	{ "poll", required_argument, NULL, O_POLL },
	{ "poll-us", required_argument, NULL, O_POLL_US },
	{ "cpu", required_argument, NULL, O_CPU },
	{ "sched", required_argument, NULL, O_SCHED },
	{ "mlock", no_argument, NULL, O_MLOCK },
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
		"  --metrics ADDR:PORT    serve GET /metrics (Prometheus text) there, from a thread\n"
		"                         of its own ([ADDR6]:PORT; :PORT for every address)\n"
		"  --io auto|xdp|udp      I/O backend: xdp = our XDP program attached (native mode)\n"
		"                         to the interface of --listen and AF_XDP sockets on its\n"
		"                         queues (root); udp = a UDP socket; auto (default) = xdp\n"
		"                         where it attaches, else udp with a line saying why;\n"
		"                         xdp that cannot attach is an error saying why\n"
		"  --instance NAME        name of the XDP maps' pin directory\n"
		"                         /sys/fs/bpf/falcon/NAME (default p<data port>)\n"
		"  --security psp|none    psp (default): peers authenticated by their identity keys,\n"
		"                         every packet encrypted (PSP); none: neither, for a\n"
		"                         fabric you trust (must be given explicitly)\n"
		"  --key FILE             our identity key (default /etc/falcon/falcond.key;\n"
		"                         falconctl key generate makes one)\n"
		"  --peer KEY@HOST:PORT   a peer daemon allowed: its public key (base64) and its\n"
		"                         CM address; repeat for each\n"
		"  --replay-margin-us N   accept a packet up to N us older than the newest of its\n"
		"                         connection (spec 9.2.2.2; default 50000)\n"
		"  --key-rotate-s N       rotate the PSP keys every N s (default 0: on\n"
		"                         falconctl key rotate only)\n"
		"  --psp-cipher C         auto (default: AES-256-GCM with AES-NI, else\n"
		"                         ChaCha20-Poly1305), aes-256-gcm or chacha20-poly1305;\n"
		"                         both ends must use the same (a mismatch is refused)\n"
		"  --log-level L          error, warn, info (default), debug\n"
		"  --fault-tx SPEC        inject faults on transmit, e.g. drop=5%%,dup=1%%,reorder=2%%,corrupt=0.1%%\n"
		"  --fault-rx SPEC        the same on receive\n"
		"  --fault-seed N         seed of the fault injection (default 1)\n"
		"  --fault-cm drop=P      lose connection-manager messages (both directions)\n"
		"Limits (each table is sized from them at start; falconctl status shows them):\n"
		"  --max-qps N            QPs (default %u, at most 65536)\n"
		"  --max-conns N          Falcon connections (default: --max-qps; an RC QP is\n"
		"                         one; at most 65536)\n"
		"  --max-cqs N            completion queues (default %u)\n"
		"  --max-mrs N            memory regions (default %u)\n"
		"  --max-srqs N           shared receive queues (default %u)\n"
		"  --max-ahs N            address handles (default %u)\n"
		"  --max-pds N            protection domains (default %u)\n"
		"  --max-clients N        client processes (default %u)\n"
		"  --client-max-objects N objects of one client, all kinds (default %u)\n"
		"  --client-max-qps N     QPs of one client (default: --max-qps)\n"
		"  --client-max-mrs N     memory regions of one client (default: --max-mrs)\n"
		"  --mtu N                RDMA payload bytes per packet (default 4096)\n"
		"  --cm-require HEX       CM feature bits a peer must support (tests)\n"
		"  --cm-retry-ms N        CM retransmission interval (default 100)\n"
		"  --cm-retries N         CM retransmissions before giving up (default 30)\n"
		"  --cc swift|off         congestion control (default swift: Swift and PLB, spec 10)\n"
		"  --rue auto|thread|inline  where Swift and PLB run: their own thread behind the\n"
		"                         queues of spec 10.6, or in the loop; auto (default):\n"
		"                         the thread with 4 or more CPUs online, else in the loop\n"
		"  --cc-target-us N       Swift's base fabric delay target (default %u us: a\n"
		"                         software path's delay, not a NIC's 25 us)\n"
		"  --min-rto-us N         smallest retransmission timeout (default %u us)\n"
		"  --pending-resp N       READ / atomic answers held while Falcon has no room\n"
		"                         for them (default 16)\n"
		"  --pull-defer N         answers per connection kept beyond those (headers only;\n"
		"                         default 1024); past them a READ is refused with a pull\n"
		"                         RNR and retried by Falcon (spec 6.6.4)\n"
		"  --conn-data-credits N  data packets a connection may have waiting to go\n"
		"                         (spec 8.2.3 credits; default 0: no per-connection limit)\n"
		"  --poll MODE            the engine thread and the CPU: sleep = wake on events\n"
		"                         (a client's post is a system call); adaptive (default) =\n"
		"                         after work keep polling the clients' rings and the I/O\n"
		"                         for --poll-us, then sleep (clients post without a system\n"
		"                         call meanwhile); busy = never sleep (a core of its own)\n"
		"  --poll-us N            adaptive's polling window after the last work (default\n"
		"                         %u us)\n"
		"  --cpu LIST             pin the engine thread to these CPUs (\"1\", \"2,3\", \"0-1\")\n"
		"  --sched other|fifo:PRIO|rr:PRIO  the engine thread's scheduling class (default\n"
		"                         other); a real-time class locks memory (--mlock) and\n"
		"                         needs CAP_SYS_NICE / CAP_IPC_LOCK or their limits\n"
		"  --mlock                lock falcond's memory (mlockall), also in class other\n"
		"  -V, --version, -h, --help\n",
		FALCON_CM_PORT_DEFAULT, FD_MAX_QPS_DEFAULT, FD_MAX_CQS_DEFAULT, FD_MAX_MRS_DEFAULT,
		FD_MAX_SRQS_DEFAULT, FD_MAX_AHS_DEFAULT, FD_MAX_PDS_DEFAULT, FD_MAX_CLIENTS_DEFAULT,
		FD_CLIENT_MAX_OBJECTS_DEFAULT, FD_CC_TARGET_US_DEFAULT, FD_MIN_RTO_US_DEFAULT,
		FD_POLL_US_DEFAULT);
}

static struct fd_notify notify;
static struct fd_metrics *metrics;
static int g_argc;
static char **g_argv;

static int parse_args(struct fd_cfg *c, int argc, char **argv);

/* SIGHUP: the configuration again (file and command line); what can change while running
 * changes: the log level, and in security psp the identity key and the peers (sec.c: a
 * peer that stays keeps its session and connections, one removed loses them). */
static void hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct fd_daemon *d = w->data;
	struct fd_cfg *n = malloc(sizeof(*n));

	(void)loop;
	(void)revents;
	if (!n)
		return;
	fd_cfg_default(n);
	if (parse_args(n, g_argc, g_argv)) {
		LOG_W("falcond: SIGHUP: the configuration does not parse: nothing changed");
	} else {
		d->cfg.log_level = fc_log_level = n->log_level;
		if (d->sec)
			fd_sec_reload(d->sec, n);
		LOG_I("falcond: SIGHUP: configuration reloaded");
		fd_notify(&notify, "STATUS=configuration reloaded");
	}
	sodium_memzero(n, sizeof(*n));
	free(n);
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	LOG_I("falcond: %s: shutting down", strsignal(w->signum));
	fd_notify(&notify, "STOPPING=1\nSTATUS=stopping (%s)", strsignal(w->signum));
	ev_break(loop, EVBREAK_ALL);
}

/* What falcond serves, for systemctl status. */
static void notify_status(struct fd_daemon *d, const char *extra)
{
	fd_notify(&notify, "%sSTATUS=%u clients, %u connections, security %s, io %s %s:%u%s%s",
		  extra, fd_api_nclients(d->api), fd_cm_nconns(d->cm), d->sec ? "psp" : "none",
		  d->io_name, d->cfg.listen_addr, d->cfg.data_port, d->xdp ? " dev " : "",
		  d->xdp ? d->xdp->ifname : "");
}

/* From the loop itself: a loop that hangs stops the watchdog pings (WatchdogSec=). */
static void notify_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	notify_status(w->data, notify.watchdog_usec ? "WATCHDOG=1\n" : "");
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

/* What a bad value of the CPU options should have been. */
static const char *hint(int id)
{
	static char cpus[64];

	switch (id) {
	case O_POLL:
		return " (sleep, adaptive or busy)";
	case O_POLL_US:
		return " (1 .. 1000000)";
	case O_CPU:
		snprintf(cpus, sizeof(cpus), " (CPUs 0..%ld as \"1\", \"2,3\" or \"0-1\")",
			 sysconf(_SC_NPROCESSORS_CONF) - 1);
		return cpus;
	case O_SCHED:
		return " (other, fifo:PRIO or rr:PRIO with PRIO 1..99)";
	case O_MLOCK:
		return " (yes or no)";
	case O_MAX_QPS:
	case O_MAX_CONNS:
	case O_MAX_CQS:
	case O_MAX_SRQS:
	case O_MAX_AHS:
	case O_MAX_PDS:
	case O_CLIENT_MAX_QPS:
	case O_MAX_MRS:
	case O_CLIENT_MAX_MRS:
		return " (1 .. 65536)";
	case O_CLIENT_MAX_OBJECTS:
		return " (1 .. 262144)";
	case O_PEER:
		return " (KEY@ADDRESS:PORT: a base64 public key, an IPv4 address or [IPv6] and the "
		       "peer's CM port; one peer per option or line)";
	default:
		return "";
	}
}

/* The field of a daemon table's limit option. */
static uint32_t *limit_of(struct fd_cfg *c, int id)
{
	switch (id) {
	case O_MAX_QPS: return &c->max_qps;
	case O_MAX_CQS: return &c->max_cqs;
	case O_MAX_SRQS: return &c->max_srqs;
	case O_MAX_AHS: return &c->max_ahs;
	default: return &c->max_pds;
	}
}

/* One option (v NULL: one without a value); where is "FILE:LINE" of a config file line,
 * NULL for the command line. Returns 0, or -EINVAL with a message printed that names
 * where, the key and the value. */
static int apply(struct fd_cfg *c, int id, const char *name, const char *v, const char *where)
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
	case O_CC:
		if (!strcmp(v, "swift") || !strcmp(v, "off"))
			c->cc_off = !strcmp(v, "off");
		else
			rc = -EINVAL;
		break;
	case O_SECURITY:
		if (!strcmp(v, "psp") || !strcmp(v, "none"))
			c->security = !strcmp(v, "psp") ? FD_SEC_PSP : FD_SEC_NONE;
		else
			rc = -EINVAL;
		c->security_set = 1;
		break;
	case O_KEY:
		if (strlen(v) >= sizeof(c->key_path))
			rc = -EINVAL;
		else
			strcpy(c->key_path, v);
		break;
	case O_PEER: {
		const char *at = strchr(v, '@');
		char b64[FC_HS_B64_LEN];

		struct fc_peer_addr pa;

		if (!at || (size_t)(at - v) >= sizeof(b64) || strlen(at + 1) >= sizeof(c->peers[0].addr) ||
		    c->npeers == FD_PEERS_MAX || fd_sec_parse_cm_addr(at + 1, &pa)) {
			rc = -EINVAL;
			break;
		}
		memcpy(b64, v, (size_t)(at - v));
		b64[at - v] = 0;
		if (fc_hs_pub_from_base64(b64, c->peers[c->npeers].pub)) {
			rc = -EINVAL;
			break;
		}
		strcpy(c->peers[c->npeers++].addr, at + 1);
		break;
	}
	case O_REPLAY_MARGIN_US:
		rc = parse_u32(v, 1, 10000000, &c->replay_margin_us);
		break;
	case O_PSP_CIPHER:
		if (!strcmp(v, "auto"))
			c->psp_cipher = -1;
		else if (!strcmp(v, "aes-256-gcm"))
			c->psp_cipher = FC_PSP_VER_AES_GCM_256;
		else if (!strcmp(v, "chacha20-poly1305"))
			c->psp_cipher = FC_PSP_VER_CHACHA20_POLY1305;
		else
			rc = -EINVAL;
		break;
	case O_KEY_ROTATE_S:
		rc = parse_u32(v, 0, 86400 * 365, &c->key_rotate_s);
		break;
	case O_RUE:
		if (!strcmp(v, "auto"))
			c->rue_inline = sysconf(_SC_NPROCESSORS_ONLN) < 4;
		else if (!strcmp(v, "thread") || !strcmp(v, "inline"))
			c->rue_inline = !strcmp(v, "inline");
		else
			rc = -EINVAL;
		break;
	case O_CC_TARGET_US:
		rc = parse_u32(v, 1, 1000000, &c->cc_target_us);
		break;
	case O_MIN_RTO_US:
		rc = parse_u32(v, 10, 10000000, &c->min_rto_us);
		break;
	case O_PENDING_RESP:
		rc = parse_u32(v, 1, 65536, &c->pending_resp);
		break;
	case O_PULL_DEFER:
		rc = parse_u32(v, 0, 65536, &c->pull_defer);
		c->pull_defer_set = 1;
		break;
	case O_CONN_DATA_CREDITS:
		rc = parse_u32(v, 0, 65536, &c->conn_data_credits);
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
		if (!strcmp(v, "auto"))
			c->io = FD_IO_AUTO;
		else if (!strcmp(v, "xdp"))
			c->io = FD_IO_XDP;
		else if (!strcmp(v, "udp"))
			c->io = FD_IO_UDP;
		else
			rc = -EINVAL;
		break;
	case O_INSTANCE:
		if (!fc_xdp_instance_ok(v))
			rc = -EINVAL; /* a path component: [A-Za-z0-9_-], not starting with '-' */
		else
			snprintf(c->instance, sizeof(c->instance), "%s", v);
		break;
	case O_POLL:
		rc = fd_poll_parse(v, &c->poll);
		break;
	case O_POLL_US:
		rc = parse_u32(v, 1, FD_POLL_US_MAX, &c->poll_us);
		break;
	case O_CPU:
		if (strlen(v) >= sizeof(c->cpu_list) || fd_cpu_parse(v, &c->cpus))
			rc = -EINVAL;
		else
			strcpy(c->cpu_list, v);
		break;
	case O_SCHED:
		rc = fd_sched_parse(v, &c->sched_policy, &c->sched_prio);
		break;
	case O_MLOCK:
		if (v && strcmp(v, "yes") && strcmp(v, "no"))
			rc = -EINVAL;
		else
			c->mlock = !v || !strcmp(v, "yes");
		break;
	case O_METRICS:
		if (strlen(v) >= sizeof(c->metrics) || fd_metrics_parse(v))
			rc = -EINVAL;
		else
			strcpy(c->metrics, v);
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
	case O_FAULT_CM: {
		struct fc_fault_dir fd;

		rc = fc_fault_parse_dir(v, &fd);
		if (!rc && (fd.dup_ppm || fd.reorder_ppm || fd.corrupt_ppm))
			rc = -EINVAL; /* the CM knob loses messages, nothing else */
		c->cm_drop_ppm = fd.drop_ppm;
		break;
	}
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
		c->max_conns_set = 1;
		break;
	case O_MAX_CLIENTS:
		rc = parse_u32(v, 1, 65536, &c->max_clients);
		break;
	case O_MAX_QPS:
	case O_MAX_CQS:
	case O_MAX_SRQS:
	case O_MAX_AHS:
	case O_MAX_PDS:
		rc = parse_u32(v, 1, FD_TABLE_MAX, limit_of(c, id));
		break;
	case O_MAX_MRS:
		rc = parse_u32(v, 1, FC_MR_CAP_MAX, &c->max_mrs);
		break;
	case O_CLIENT_MAX_OBJECTS:
		rc = parse_u32(v, 1, FD_CLIENT_OBJS_MAX, &c->client_max_objects);
		break;
	case O_CLIENT_MAX_QPS:
		rc = parse_u32(v, 1, FD_TABLE_MAX, &c->client_max_qps);
		break;
	case O_CLIENT_MAX_MRS:
		rc = parse_u32(v, 1, FC_MR_CAP_MAX, &c->client_max_mrs);
		break;
	case O_MTU:
		if (!(rc = parse_u32(v, 256, 8192, &c->mtu_bytes)) && (c->mtu_bytes & 63))
			rc = -EINVAL;
		c->mtu_set = 1;
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
		fprintf(stderr, "falcond: %s%sunknown option %s\n", where ? where : "",
			where ? ": " : "", name);
		return -EINVAL;
	}
	if (rc)
		fprintf(stderr, "falcond: %s%sbad value for %s: '%s'%s\n", where ? where : "",
			where ? ": " : "", name, v ? v : "", hint(id));
	return rc;
}

/* The config file: "key value" (or "key=value", "key = value") per line, '#' starts a
 * comment. A line holds one key and at most one value: more words are an error (two
 * peers on one line would otherwise lose the second). Errors name FILE:LINE. Returns 0
 * or a negative errno, the reason printed. */
static int load_config(struct fd_cfg *c, const char *path)
{
	FILE *f = fopen(path, "re");
	char line[512], where[300];
	int lineno = 0, rc = 0;

	if (!f) {
		rc = -errno;
		fprintf(stderr, "falcond: config file %s: %s\n", path, strerror(errno));
		return rc;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		char *key, *val, *extra, *end;
		const struct option *o;

		snprintf(where, sizeof(where), "%s:%d", path, ++lineno);
		if (!strchr(line, '\n') && !feof(f)) {
			fprintf(stderr, "falcond: %s: line longer than %zu bytes\n", where,
				sizeof(line) - 2);
			rc = -EINVAL;
			break;
		}
		if ((end = strchr(line, '#')))
			*end = 0;
		if (!(key = strtok(line, " \t\r\n=")))
			continue;
		val = strtok(NULL, " \t\r\n");
		if (val && !strcmp(val, "=")) /* "key = value" */
			val = strtok(NULL, " \t\r\n");
		extra = val ? strtok(NULL, " \t\r\n") : NULL;
		for (o = opts; o->name && strcmp(o->name, key); o++)
			;
		/* an option without a value (mlock) is a key alone, or key yes / no */
		if (!o->name || o->val == O_CONFIG ||
		    (o->has_arg == no_argument ? o->val != O_MLOCK : !val)) {
			fprintf(stderr, "falcond: %s: %s '%s'\n", where,
				!o->name || o->val == O_CONFIG ? "unknown key" : "needs a value", key);
			rc = -EINVAL;
		} else if (extra) {
			fprintf(stderr, "falcond: %s: '%s' takes one value; the line has more: '%s'%s\n",
				where, key, extra, o->val == O_PEER ? " (one peer per line)" : "");
			rc = -EINVAL;
		} else {
			rc = apply(c, o->val, key, val, where);
		}
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
			if ((rc = apply(c, id, o->name ? o->name : "?", optarg, NULL)))
				return rc;
		}
		}
	}
	if (optind < argc) {
		fprintf(stderr, "falcond: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	char why[160];

	if ((rc = fd_cfg_check(c, why, sizeof(why))))
		fprintf(stderr, "falcond: %s\n", why);
	return rc;
}

int main(int argc, char **argv)
{
	static struct fd_daemon d;
	int rc;

	fd_cfg_default(&d.cfg);
	g_argc = argc;
	g_argv = argv;
	if (parse_args(&d.cfg, argc, argv))
		return 2;
	fc_log_level = d.cfg.log_level;
	signal(SIGPIPE, SIG_IGN);
	d.loop = ev_default_loop(EVFLAG_AUTO);
	d.start_ns = fd_now_ns();
	if (fd_notify_open(&notify))
		LOG_W("falcond: NOTIFY_SOCKET=%s is not a socket address: not notifying",
		      getenv("NOTIFY_SOCKET"));
	rc = falcond_start(&d);
	/* before fd_cpu_start: the metrics thread keeps the default CPUs and class */
	if (!rc && d.cfg.metrics[0] && !(metrics = fd_metrics_start(d.cfg.metrics, d.cfg.admin_path)))
		rc = -errno;
	if (!rc)
		rc = fd_cpu_start(&d);
	for (int i = 0; i < 3 && !rc; i++) {
		if (i < 2)
			ev_signal_init(&d.sig_w[i], signal_cb, i ? SIGTERM : SIGINT);
		else
			ev_signal_init(&d.sig_w[i], hup_cb, SIGHUP);
		d.sig_w[i].data = &d;
		ev_signal_start(d.loop, &d.sig_w[i]);
		ev_unref(d.loop); /* the sockets keep the loop alive, not the signals */
	}
	if (!rc) {
		char io[320];

		if (d.xdp)
			snprintf(io, sizeof(io), "xdp (%s, %s, prog id %u, %u AF_XDP queue%s%s, "
				 "maps %s)", d.xdp->ifname, d.xdp->mode, d.xdp->prog_id,
				 fc_io_xdp_stats(d.xio)->queues,
				 fc_io_xdp_stats(d.xio)->queues == 1 ? "" : "s",
				 fc_io_xdp_stats(d.xio)->zerocopy ? ", zero-copy" : ", copy mode",
				 d.xdp->pin_dir);
		else
			snprintf(io, sizeof(io), "udp");
		char win[32] = "";

		if (d.cfg.poll == FD_POLL_ADAPTIVE)
			snprintf(win, sizeof(win), " (%u us after work)", d.cfg.poll_us);
		LOG_I("falcond %s: poll %s%s, cpu %s, sched %s%s", FALCOND_VERSION,
		      fd_poll_name(d.cfg.poll), win,
		      d.cfg.cpu_list[0] ? d.cfg.cpu_list : "any", fd_sched_name(&d.cfg),
		      d.cfg.mlock || d.cfg.sched_policy != SCHED_OTHER ? ", memory locked" : "");
		LOG_I("falcond %s: data %s %s:%u, cm udp %s:%u, mtu %u, api %s, admin %s, cc %s%s, "
		      "security %s",
		      FALCOND_VERSION, io, d.cfg.listen_addr, d.cfg.data_port, d.cfg.listen_addr,
		      d.cfg.cm_port, d.cfg.mtu_bytes, d.cfg.api_path, d.cfg.admin_path,
		      d.cfg.cc_off ? "off" : "swift",
		      d.cfg.cc_off ? "" : d.cfg.rue_inline ? " (inline)" : " (RUE thread)",
		      d.cfg.security == FD_SEC_PSP ? "psp (authenticated peers, encrypted packets)" :
		      "NONE: packets are neither encrypted nor authenticated, peers not "
		      "authenticated (PSP NULL header): a trusted fabric only");
		notify_status(&d, "READY=1\n");
		if (notify.fd >= 0) {
			/* status every 5 s; the watchdog at half its interval, if sooner */
			double every = 5.;

			if (notify.watchdog_usec && (double)notify.watchdog_usec / 2e6 < every)
				every = (double)notify.watchdog_usec / 2e6;
			ev_timer_init(&d.notify_w, notify_cb, every, every);
			d.notify_w.data = &d;
			ev_timer_start(d.loop, &d.notify_w);
			ev_unref(d.loop);
		}
		ev_run(d.loop, 0);
		if (notify.fd >= 0) {
			ev_ref(d.loop);
			ev_timer_stop(d.loop, &d.notify_w);
		}
	}
	if (rc)
		fd_notify(&notify, "STATUS=failed to start: %s\nERRNO=%d", strerror(-rc), -rc);
	fd_metrics_stop(metrics); /* before the admin socket goes */
	falcond_stop(&d);
	ev_loop_destroy(d.loop);
	fd_notify_close(&notify);
	LOG_I("falcond: stopped");
	return rc ? 1 : 0;
}
