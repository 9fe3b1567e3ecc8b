/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin.c - falconctl's socket (falcond.h): a SOCK_STREAM Unix socket beside the API
 * socket. falconctl writes one command line ("status", "peer list", "conn list",
 * "conn show ID", "qp list", "mr list", "client list", "stats", "xdp"), the daemon answers with
 * one JSON document and closes. On error the document is {"error": "..."}. falconctl
 * renders it as a table or passes it through (-j).
 *
 * A command line longer than ADMIN_LINE_MAX, or one that does not arrive within
 * ADMIN_TIMEOUT_S, closes the connection: a stuck falconctl never holds the daemon.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "falcon/xdp_stats.h"
#include "falcond.h"
#include "log.h"

#ifndef FALCON_RELEASE
#define FALCON_RELEASE "unknown" /* built without the Makefile (the fuzz target) */
#endif

#define ADMIN_LINE_MAX 256u
#define ADMIN_OUT_MAX (1u << 20)
#define ADMIN_TIMEOUT_S 2.0

struct admin_conn {
	struct fd_admin *ad;
	int fd;
	ev_io w;
	ev_timer t;
	char line[ADMIN_LINE_MAX];
	uint32_t len;
};

struct fd_admin {
	struct fd_daemon *d;
	int fd;
	ev_io w;
	char *out;      /* ADMIN_OUT_MAX */
	uint64_t cmds;
};

#define U64(j, s, f) fd_json_kv(j, #f, "%llu", (unsigned long long)(s)->f)

static void json_node(struct fd_json *j, const struct fc_node_counters *c)
{
	fd_json_open(j, "node", '{');
	U64(j, c, rx_frames); U64(j, c, rx_bytes); U64(j, c, tx_frames); U64(j, c, tx_bytes);
	U64(j, c, rx_short); U64(j, c, rx_encap_err); U64(j, c, rx_unknown_cid);
	U64(j, c, rx_peer_mismatch);
	U64(j, c, rx_spi_mismatch); U64(j, c, rx_replay); U64(j, c, rx_engine_err); U64(j, c, tx_no_frame);
	U64(j, c, tx_encap_err); U64(j, c, tx_io_drop); U64(j, c, cc_events);
	U64(j, c, cc_errors); U64(j, c, stalls); U64(j, c, stall_ns);
	fd_json_close(j, '}');
}

static void json_udp(struct fd_json *j, const struct fc_io_udp_stats *s)
{
	fd_json_open(j, "io_udp", '{');
	U64(j, s, rx_dgrams); U64(j, s, rx_bytes); U64(j, s, rx_truncated); U64(j, s, rx_calls);
	U64(j, s, rx_errors); U64(j, s, tx_dgrams); U64(j, s, tx_bytes); U64(j, s, tx_calls);
	U64(j, s, tx_eagain_drops); U64(j, s, tx_errors); U64(j, s, tx_gso_runs); U64(j, s, tx_gso_refused); U64(j, s, rx_gro_runs);
	fd_json_close(j, '}');
}

static void json_io_xdp(struct fd_json *j, const struct fc_io_xdp_stats *s)
{
	fd_json_open(j, "io_xdp", '{');
	U64(j, s, rx_frames); U64(j, s, rx_bytes); U64(j, s, rx_calls); U64(j, s, rx_bad_hdr);
	U64(j, s, rx_marked); U64(j, s, rx_no_meta); U64(j, s, rx_udp); U64(j, s, fill_wakeups);
	U64(j, s, tx_frames); U64(j, s, tx_bytes); U64(j, s, tx_kicks); U64(j, s, tx_kick_errors);
	U64(j, s, tx_ring_full); U64(j, s, tx_fallback); U64(j, s, tx_fallback_drops);
	U64(j, s, tx_completions); U64(j, s, neigh_reads); U64(j, s, neigh_misses);
	U64(j, s, route_reads); U64(j, s, route_other_if);
	fd_json_close(j, '}');
}

/* ---- falconctl xdp: the program, its counters, the connections' windows ---- */

/* One window of a falcon_conns entry as flat members PREFIX_base, _size, _received (how
 * many PSNs of the window have their received bit), _bitmap (which, offset 0 lowest),
 * _own: read while XDP and the engine run, a snapshot. Flat, so that falconctl's table
 * shows them. */
static void json_win(struct fd_json *j, const char *prefix, struct fc_win *w)
{
	uint32_t base = fc_load_acq32(&w->base), size = w->size, bits = 0;
	uint64_t map[2] = { 0, 0 };
	char k[32];

	for (uint32_t i = 0; i < size && i < FC_WIN_SLOTS_MAX / 2; i++) {
		uint64_t v = fc_load64(fc_win_slot(w, base + i));

		if ((uint32_t)(v >> 32) == base + i && (v & FC_SLOT_RX)) {
			bits++;
			map[i / 64] |= 1ull << (i % 64);
		}
	}
	snprintf(k, sizeof(k), "%s_base", prefix);
	fd_json_kv(j, k, "%u", base);
	snprintf(k, sizeof(k), "%s_size", prefix);
	fd_json_kv(j, k, "%u", size);
	snprintf(k, sizeof(k), "%s_received", prefix);
	fd_json_kv(j, k, "%u", bits);
	snprintf(k, sizeof(k), "%s_bitmap", prefix);
	fd_json_kv(j, k, "\"%016llx%016llx\"", (unsigned long long)map[1],
		   (unsigned long long)map[0]);
	snprintf(k, sizeof(k), "%s_own", prefix);
	fd_json_kv(j, k, "%llu", (unsigned long long)w->own);
}

/* A per-CPU map's value for key, summed over CPUs into sum[0..nwords). */
static int percpu_sum(int fd, uint32_t key, uint64_t *sum, unsigned nwords)
{
	static uint64_t *buf;
	static int ncpu;

	if (!buf) {
		ncpu = libbpf_num_possible_cpus();
		if (ncpu <= 0 || !(buf = calloc((size_t)ncpu * 16, sizeof(uint64_t))))
			return -ENOMEM;
	}
	if (nwords > 16 || bpf_map_lookup_elem(fd, &key, buf) < 0)
		return -errno ? -errno : -EINVAL;
	memset(sum, 0, nwords * sizeof(*sum));
	for (int c = 0; c < ncpu; c++)
		for (unsigned w = 0; w < nwords; w++)
			sum[w] += buf[(size_t)c * nwords + w];
	return 0;
}

static size_t xdp_cmd(struct fd_admin *ad)
{
	struct fd_daemon *d = ad->d;
	const struct fc_xdp_prog *p = d->xdp;
	struct fd_json j;
	uint64_t v[16];

	fd_json_init(&j, ad->out, ADMIN_OUT_MAX);
	fd_json_open(&j, NULL, '{');
	if (!p) {
		char why[256];

		snprintf(why, sizeof(why), "io is %s, not xdp%s%s%s", d->io_name,
			 d->io_why[0] ? " (" : "", d->io_why, d->io_why[0] ? ")" : "");
		fd_json_kstr(&j, "error", why);
		fd_json_close(&j, '}');
		return fd_json_done(&j);
	}
	fd_json_open(&j, "program", '{');
	fd_json_kv(&j, "id", "%u", p->prog_id);
	fd_json_kstr(&j, "interface", p->ifname);
	fd_json_kv(&j, "ifindex", "%u", p->ifindex);
	fd_json_kstr(&j, "mode", p->mode);
	fd_json_kstr(&j, "pin_dir", p->pin_dir);
	fd_json_kv(&j, "queues", "%u", fc_io_xdp_stats(d->xio)->queues);
	fd_json_kv(&j, "zerocopy", "%s", fc_io_xdp_stats(d->xio)->zerocopy ? "true" : "false");
	fd_json_close(&j, '}');
	fd_json_open(&j, "counters", '{');
	for (uint32_t i = 0; i < FC_XDP_CNT_MAX; i++) {
		if (fc_xdp_cnt_name(i) && percpu_sum(p->counters_fd, i, v, 1) == 0)
			fd_json_kv(&j, fc_xdp_cnt_name(i), "%llu", (unsigned long long)v[0]);
	}
	fd_json_close(&j, '}');
	json_io_xdp(&j, fc_io_xdp_stats(d->xio));
	fd_json_open(&j, "conns", '[');
	for (uint32_t s = 0; s < p->conns_n; s++) {
		struct fc_xdp_conn *c = &p->conns[s];
		uint32_t cid = fc_load_acq32(&c->cid);
		struct fc_xdp_conn_cnt cc;

		if (!cid)
			continue;
		_Static_assert(sizeof(cc) <= sizeof(v), "per-connection counters fit");
		fd_json_open(&j, NULL, '{');
		fd_json_kv(&j, "slot", "%u", s);
		fd_json_kv(&j, "cid", "%u", cid);
		fd_json_kv(&j, "remote_cid", "%u", c->remote_cid);
		fd_json_kstr(&j, "mode", c->flags & FC_XDP_CONN_WINDOW ? "window" :
			     c->flags & FC_XDP_CONN_PSP ? "psp" : "none");
		json_win(&j, "req", &c->rx.req);
		json_win(&j, "data", &c->rx.data);
		fd_json_kv(&j, "tx_req_bpsn", "%u", c->rx.tx_bpsn[0]);
		fd_json_kv(&j, "tx_data_bpsn", "%u", c->rx.tx_bpsn[1]);
		if (percpu_sum(p->conn_counters_fd, s, v, sizeof(cc) / 8) == 0) {
			memcpy(&cc, v, sizeof(cc)); /* falcon_conn_counters, summed over CPUs */
			U64(&j, &cc, rx_pkts); U64(&j, &cc, redirected); U64(&j, &cc, marked);
			U64(&j, &cc, passed); U64(&j, &cc, bad_mode); U64(&j, &cc, dup_acked);
			U64(&j, &cc, oow); U64(&j, &cc, stale_ack); U64(&j, &cc, bad_spi);
			U64(&j, &cc, replay);
		}
		fd_json_close(&j, '}');
	}
	fd_json_close(&j, ']');
	fd_json_close(&j, '}');
	return fd_json_done(&j);
}

/* ---- falconctl conn trace: one connection's CC events ---- */

/* The ring's size follows the time asked: TRACE_RATE events a second for up to one
 * second, rounded up to a power of 2 (at most TRACE_CAP_MAX, 2 MiB of records). falconctl
 * drains it every 250 ms ("read"), so a trace of any length keeps every event at up to
 * four times that rate; past it, events are counted as dropped. The daemon stops
 * recording by itself TRACE_GRACE_S after the time asked, should falconctl be gone. */
#define TRACE_RATE 65536u
#define TRACE_CAP_MIN 1024u
#define TRACE_CAP_MAX 65536u
#define TRACE_GRACE_S 10u
#define TRACE_READ_MAX 8192u /* records per answer: well within ADMIN_OUT_MAX */

struct trace_rec {
	uint64_t t_ns;
	uint32_t rtt_ns, delay_ns, rto_ns, ncwnd;
	double fcwnd;
	uint8_t type, retx, nack;
};

static struct {
	int64_t id;                /* the CM's connection id (0: no trace) */
	int active;                /* recording */
	uint64_t start_ns, stop_ns;
	uint32_t cap, head, tail;  /* ring of cap records; head - tail recorded, unread */
	uint64_t dropped;
	struct trace_rec *rec;
} trace;

static void trace_event(void *ctx, const struct fc_cc_event *ev, uint64_t now_ns)
{
	struct trace_rec *r;
	uint32_t rtt = (ev->t4_ts - ev->t1_ts) & FC_TS24_MASK;
	uint32_t hold = (ev->t3_ts - ev->t2_ts) & FC_TS24_MASK;

	(void)ctx;
	if (!trace.active || now_ns > trace.stop_ns) {
		trace.active = 0;
		return;
	}
	if (trace.head - trace.tail == trace.cap) {
		trace.dropped++;
		return;
	}
	r = &trace.rec[trace.head++ & (trace.cap - 1)];
	r->t_ns = now_ns - trace.start_ns;
	r->type = ev->type;
	r->rtt_ns = ev->type == 0 || ev->type == 1 ? (uint32_t)fc_ts_to_ns(rtt) : 0;
	r->delay_ns = ev->type == 0 || ev->type == 1 ? (uint32_t)fc_ts_to_ns(rtt > hold ? rtt - hold : 0) : 0;
	r->fcwnd = (double)ev->fcwnd_fp / 1024.0;
	r->ncwnd = ev->ncwnd;
	r->rto_ns = (uint32_t)fc_ts_to_ns(ev->retransmit_timeout_ts);
	r->retx = ev->retx_count;
	r->nack = ev->nack_code;
}

static int trace_start(struct fd_daemon *d, struct fc_txn *t, int64_t id, uint32_t secs)
{
	uint32_t cap = TRACE_CAP_MIN;

	while (cap < TRACE_CAP_MAX && cap < (uint64_t)TRACE_RATE * secs)
		cap <<= 1;
	free(trace.rec);
	memset(&trace, 0, sizeof(trace));
	if (!(trace.rec = malloc((size_t)cap * sizeof(*trace.rec))))
		return -ENOMEM;
	trace.cap = cap;
	trace.id = id;
	trace.active = 1;
	trace.start_ns = fd_now_ns();
	trace.stop_ns = trace.start_ns + (uint64_t)(secs + TRACE_GRACE_S) * 1000000000ull;
	fc_node_trace(d->node, fc_txn_local_cid(t), trace_event, NULL);
	return 0;
}

/* The unread records (at most TRACE_READ_MAX) as JSON arrays: t_s, event (0 ack, 1 nack,
 * 2 retransmit), rtt_us, delay_us, fcwnd, ncwnd, rto_us, retx, nack_code. */
static void trace_records(struct fd_json *j)
{
	uint32_t n = 0;

	fd_json_open(j, "trace", '[');
	for (; trace.tail != trace.head && n < TRACE_READ_MAX; trace.tail++, n++) {
		const struct trace_rec *r = &trace.rec[trace.tail & (trace.cap - 1)];

		fd_json_raw(j, "%s[%.6f,%u,%.3f,%.3f,%.3f,%u,%.1f,%u,%u]", n ? "," : "",
			    (double)r->t_ns / 1e9, r->type, r->rtt_ns / 1e3, r->delay_ns / 1e3,
			    r->fcwnd, r->ncwnd, r->rto_ns / 1e3, r->retx, r->nack);
	}
	fd_json_close(j, ']');
	fd_json_kv(j, "more", "%s", trace.tail != trace.head ? "true" : "false");
	fd_json_kv(j, "dropped", "%llu", (unsigned long long)trace.dropped);
	fd_json_kv(j, "ring", "%u", trace.cap);
}

/* conn trace ID start [SECONDS] | read | stop: record one connection at a time; read
 * and stop hand over what was recorded since the last read (falconctl writes CSV and a
 * plot, or JSON). */
static size_t trace_cmd(struct fd_admin *ad, const char *cmd, long long id, int n)
{
	struct fd_daemon *d = ad->d;
	struct fc_txn *t = n >= 3 ? fd_cm_conn(d->cm, id) : NULL;
	struct fd_json j;
	char verb[16] = "";
	unsigned secs = 5;

	fd_json_init(&j, ad->out, ADMIN_OUT_MAX);
	sscanf(cmd, "%*s %*s %*d %15s %u", verb, &secs);
	fd_json_open(&j, NULL, '{');
	if (!strcmp(verb, "start")) {
		if (!t)
			fd_json_kstr(&j, "error", "no such established connection (conn list)");
		else if (secs < 1 || secs > 3600)
			fd_json_kstr(&j, "error", "SECONDS from 1 to 3600");
		else if (trace_start(d, t, id, secs))
			fd_json_kstr(&j, "error", "no memory for the trace");
		else {
			fd_json_kv(&j, "tracing", "%lld", id);
			fd_json_kv(&j, "ring", "%u", trace.cap);
		}
	} else if ((!strcmp(verb, "stop") || !strcmp(verb, "read")) && trace.id == id && id) {
		if (!strcmp(verb, "stop") && trace.active) {
			fc_node_trace(d->node, 0, NULL, NULL);
			trace.active = 0;
		}
		fd_json_kv(&j, "recording", "%s", trace.active ? "true" : "false");
		trace_records(&j);
	} else if (!strcmp(verb, "stop") || !strcmp(verb, "read")) {
		fd_json_kstr(&j, "error", "that connection is not being traced");
	} else {
		fd_json_kstr(&j, "error", "usage: conn trace ID start [SECONDS] | read | stop");
	}
	fd_json_close(&j, '}');
	return fd_json_done(&j);
}

static void json_rdma(struct fd_json *j, const struct fc_rdma_counters *c)
{
	fd_json_open(j, "rdma", '{');
	U64(j, c, tx_push); U64(j, c, tx_pull); U64(j, c, tx_resp); U64(j, c, rx_req);
	U64(j, c, nack_cid); U64(j, c, drop_resp_cid); U64(j, c, drop_resp_bad);
	U64(j, c, rnr_sent); U64(j, c, rnr_exhausted); U64(j, c, nak_sent); U64(j, c, stale_cmpl);
	U64(j, c, cq_lost); U64(j, c, async_lost); U64(j, c, pull_deferred);
	U64(j, c, pull_rnr_busy); U64(j, c, eagain); U64(j, c, gather_lost);
	U64(j, c, ring_bad_wr); U64(j, c, ring_broken);
	fd_json_close(j, '}');
}

static void json_fault(struct fd_json *j, const struct fc_fault_stats *s)
{
	fd_json_open(j, "fault", '{');
	U64(j, s, tx_drop); U64(j, s, tx_dup); U64(j, s, tx_reorder); U64(j, s, tx_corrupt);
	U64(j, s, rx_drop); U64(j, s, rx_dup); U64(j, s, rx_reorder); U64(j, s, rx_corrupt);
	fd_json_close(j, '}');
}

/* Append a part's own JSON text as the value of key. */
static void json_part(struct fd_json *j, const char *key,
		      size_t (*fn)(const void *, char *, size_t), const void *obj)
{
	size_t room = j->len < j->cap ? j->cap - j->len : 0;
	size_t n;

	fd_json_kv(j, key, "%s", "");
	room = j->len < j->cap ? j->cap - j->len : 0;
	if (room < 2) {
		j->len += 2;
		return;
	}
	n = fn(obj, j->buf + j->len, room);
	j->len += n;
}

#define PART(fn) ((size_t (*)(const void *, char *, size_t))(fn))

static size_t run(struct fd_admin *ad, const char *cmd)
{
	struct fd_daemon *d = ad->d;
	struct fd_json j;
	char a[16], b[16];
	long long id = -1;
	int n = sscanf(cmd, "%15s %15s %lld", a, b, &id);

	fd_json_init(&j, ad->out, ADMIN_OUT_MAX);
	if (n >= 1 && !strcmp(a, "status")) {
		fd_json_open(&j, NULL, '{');
		fd_json_kstr(&j, "daemon", "falcond");
		fd_json_kstr(&j, "version", FALCON_RELEASE);
		fd_json_kv(&j, "pid", "%d", (int)getpid());
		fd_json_kv(&j, "uptime_s", "%.1f", (double)(fd_now_ns() - d->start_ns) / 1e9);
		fd_json_kstr(&j, "io", d->io_name);
		if (d->xdp) {
			fd_json_kstr(&j, "xdp_interface", d->xdp->ifname);
			fd_json_kv(&j, "xdp_prog_id", "%u", d->xdp->prog_id);
		} else if (d->io_why[0]) {
			fd_json_kstr(&j, "xdp_not_used", d->io_why);
		}
		/* enums, not prose (falconctl status and falcond(8) say what they mean):
		 * security psp | none, cc swift | off, rue thread | inline */
		fd_json_kstr(&j, "security", d->sec ? "psp" : "none");
		fd_json_kstr(&j, "cc", d->cfg.cc_off ? "off" : "swift");
		fd_json_kstr(&j, "rue", d->rue_th ? "thread" : "inline");
		fd_json_kstr(&j, "address", d->cfg.listen_addr);
		fd_json_kv(&j, "data_port", "%u", d->cfg.data_port);
		fd_json_kv(&j, "cm_port", "%u", d->cfg.cm_port);
		fd_json_kstr(&j, "api_socket", d->cfg.api_path);
		fd_json_kv(&j, "clients", "%u", fd_api_nclients(d->api));
		fd_json_kv(&j, "connections", "%u", fd_cm_nconns(d->cm));
		fd_json_kv(&j, "mtu_bytes", "%u", d->cfg.mtu_bytes);
		fd_json_kv(&j, "fault_injection", "%s", d->fault ? "true" : "false");
		fd_json_kv(&j, "loops", "%llu", (unsigned long long)d->loops);
		fd_json_kstr(&j, "poll", fd_poll_name(d->cfg.poll));
		fd_json_kv(&j, "poll_us", "%u", d->cfg.poll_us);
		fd_json_kstr(&j, "socket_busy_poll", d->cfg.poll == FD_POLL_SLEEP ? "off" :
			     d->busy_poll_rc ? "refused" : "on");
		if (d->cfg.poll != FD_POLL_SLEEP && d->busy_poll_rc)
			fd_json_kstr(&j, "socket_busy_poll_errno", strerrorname_np(-d->busy_poll_rc) ?:
				     "?");
		fd_json_kstr(&j, "cpu", d->cfg.cpu_list[0] ? d->cfg.cpu_list : "any");
		fd_json_kstr(&j, "sched", fd_sched_name(&d->cfg));
		fd_json_kv(&j, "mlock", "%s", d->cfg.mlock || d->cfg.sched_policy != SCHED_OTHER ?
			   "true" : "false");
		fd_api_json_limits(d->api, &j);
		fd_json_close(&j, '}');
	} else if (n >= 2 && !strcmp(a, "peer") && !strcmp(b, "list")) {
		return fd_cm_json_peers(d->cm, ad->out, ADMIN_OUT_MAX);
	} else if (n >= 2 && !strcmp(a, "conn") && !strcmp(b, "list")) {
		return fd_cm_json_conns(d->cm, ad->out, ADMIN_OUT_MAX);
	} else if (n >= 2 && !strcmp(a, "conn") && !strcmp(b, "show")) {
		/* the list filtered to one id: the CM writes the same fields */
		static char all[ADMIN_OUT_MAX];
		char key[48];
		size_t len = fd_cm_json_conns(d->cm, all, sizeof(all));
		const char *p, *e;

		all[len < sizeof(all) ? len : sizeof(all) - 1] = 0;
		snprintf(key, sizeof(key), "{\"id\":%lld,", id);
		if (n < 3 || !(p = strstr(all, key)) || !(e = strchr(p, '}'))) {
			fd_json_open(&j, NULL, '{');
			fd_json_kstr(&j, "error", n < 3 ? "usage: conn show ID" : "no such connection");
			fd_json_close(&j, '}');
		} else {
			fd_json_raw(&j, "%.*s", (int)(e - p + 1), p);
		}
	} else if (n >= 2 && !strcmp(a, "conn") && !strcmp(b, "trace")) {
		return trace_cmd(ad, cmd, id, n);
	} else if (n >= 2 && !strcmp(a, "qp") && !strcmp(b, "list")) {
		return fd_api_json_qps(d->api, ad->out, ADMIN_OUT_MAX);
	} else if (n >= 2 && !strcmp(a, "mr") && !strcmp(b, "list")) {
		return fd_api_json_mrs(d->api, ad->out, ADMIN_OUT_MAX);
	} else if (n >= 2 && !strcmp(a, "client") && !strcmp(b, "list")) {
		return fd_api_json_clients(d->api, ad->out, ADMIN_OUT_MAX);
	} else if (n >= 2 && !strcmp(a, "key") && !strcmp(b, "rotate")) {
		int rc = fd_cm_rotate_keys(d->cm);

		fd_json_open(&j, NULL, '{');
		/* new PSP keys sent to every peer; the old phase is erased once all have
		 * taken theirs */
		if (rc)
			fd_json_kstr(&j, "error", "security none: there are no keys to rotate");
		else
			fd_json_kv(&j, "rotated", "true");
		fd_json_close(&j, '}');
	} else if (n >= 1 && !strcmp(a, "xdp")) {
		return xdp_cmd(ad);
	} else if (n >= 1 && !strcmp(a, "stats")) {
		fd_json_open(&j, NULL, '{');
		json_node(&j, fc_node_counters(d->node));
		json_udp(&j, fc_io_udp_stats(d->io));
		if (d->xio)
			json_io_xdp(&j, fc_io_xdp_stats(d->xio));
		json_rdma(&j, fc_rdma_counters(fc_node_rdma(d->node)));
		if (d->fault)
			json_fault(&j, fc_fault_stats(d->fault));
		if (d->rue_th) {
			struct fd_rue_thread_stats rs;

			fd_rue_thread_stats(d->rue_th, &rs);
			fd_json_open(&j, "rue_thread", '{');
			U64(&j, &rs, offered); U64(&j, &rs, refused); U64(&j, &rs, queue_full);
			U64(&j, &rs, processed); U64(&j, &rs, results_lost); U64(&j, &rs, taken);
			U64(&j, &rs, thread_wakeups); U64(&j, &rs, loop_wakeups);
			U64(&j, &rs, thread_sleeps);
			fd_json_close(&j, '}');
		}
		if (d->sec)
			json_part(&j, "psp", PART(fd_sec_json), d->sec);
		json_part(&j, "cm", PART(fd_cm_json_stats), d->cm);
		json_part(&j, "api", PART(fd_api_json_stats), d->api);
		json_part(&j, "loop", PART(fd_poll_json_stats), d);
		fd_json_close(&j, '}');
	} else {
		fd_json_open(&j, NULL, '{');
		fd_json_kstr(&j, "error", "unknown command (status, peer list, conn list, conn show "
				 "ID, qp list, mr list, client list, stats, xdp)");
		fd_json_close(&j, '}');
	}
	return fd_json_done(&j);
}

static void conn_free(struct admin_conn *c)
{
	ev_io_stop(c->ad->d->loop, &c->w);
	ev_timer_stop(c->ad->d->loop, &c->t);
	close(c->fd);
	free(c);
}

static void conn_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	conn_free(w->data);
}

static void conn_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct admin_conn *c = w->data;
	ssize_t n = read(c->fd, c->line + c->len, sizeof(c->line) - 1 - c->len);
	char *nl;

	(void)loop;
	(void)revents;
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		conn_free(c);
		return;
	}
	c->len += (uint32_t)n;
	c->line[c->len] = 0;
	nl = strchr(c->line, '\n');
	if (!nl) {
		if (c->len == sizeof(c->line) - 1)
			conn_free(c); /* no line within the bound */
		return;
	}
	*nl = 0;
	size_t len = run(c->ad, c->line), off = 0;

	c->ad->cmds++;
	c->ad->out[len++] = '\n';
	/* the answer is at most 1 MiB. The connection is non-blocking: write what the
	 * socket takes within a short bound, so a falconctl that stops reading cannot hold
	 * the loop */
	for (int tries = 0; off < len && tries < 1000; tries++) {
		ssize_t k = send(c->fd, c->ad->out + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k > 0) {
			off += (size_t)k;
		} else if (k < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = c->fd, .events = POLLOUT };

			if (poll(&p, 1, 10) < 0)
				break;
		} else {
			break;
		}
	}
	conn_free(c);
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct fd_admin *ad = w->data;

	(void)revents;
	for (int k = 0; k < 8; k++) {
		int fd = accept4(ad->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct admin_conn *c;

		if (fd < 0)
			return;
		if (!(c = calloc(1, sizeof(*c)))) {
			close(fd);
			continue;
		}
		c->ad = ad;
		c->fd = fd;
		ev_io_init(&c->w, conn_cb, fd, EV_READ);
		c->w.data = c;
		ev_io_start(loop, &c->w);
		ev_timer_init(&c->t, conn_timeout_cb, ADMIN_TIMEOUT_S, 0.);
		c->t.data = c;
		ev_timer_start(loop, &c->t);
	}
}

struct fd_admin *fd_admin_new(struct fd_daemon *d)
{
	struct fd_admin *ad = calloc(1, sizeof(*ad));
	struct sockaddr_un un = { .sun_family = AF_UNIX };

	if (!ad)
		return NULL;
	ad->d = d;
	ad->out = malloc(ADMIN_OUT_MAX + 1);
	if (!ad->out || strlen(d->cfg.admin_path) >= sizeof(un.sun_path)) {
		int e = ad->out ? ENAMETOOLONG : ENOMEM;

		free(ad->out);
		free(ad);
		errno = e;
		return NULL;
	}
	strcpy(un.sun_path, d->cfg.admin_path);
	ad->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ad->fd < 0)
		goto fail;
	unlink(un.sun_path);
	if (bind(ad->fd, (struct sockaddr *)&un, sizeof(un)) < 0 || chmod(un.sun_path, 0660) < 0 ||
	    listen(ad->fd, 8) < 0)
		goto fail;
	ev_io_init(&ad->w, accept_cb, ad->fd, EV_READ);
	ad->w.data = ad;
	ev_io_start(d->loop, &ad->w);
	return ad;
fail: {
	int e = errno;

	if (ad->fd >= 0)
		close(ad->fd);
	free(ad->out);
	free(ad);
	errno = e;
	return NULL;
}
}

void fd_admin_free(struct fd_admin *ad)
{
	if (!ad)
		return;
	ev_io_stop(ad->d->loop, &ad->w);
	close(ad->fd);
	unlink(ad->d->cfg.admin_path);
	if (trace.id)
		fc_node_trace(ad->d->node, 0, NULL, NULL);
	free(trace.rec);
	memset(&trace, 0, sizeof(trace));
	free(ad->out);
	free(ad);
}
