/* SPDX-License-Identifier: Apache-2.0 */
/* prom.c - the admin socket's JSON as Prometheus text (prom.h). */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "prom.h"

#define NAME_MAX_LEN 128

/* ---- writing ---- */

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value as the format escapes it (backslash, double quote, newline). */
static void label_value(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
	fputc('"', f);
}

static void value(FILE *f, double v)
{
	if (isnan(v))
		fputs(" NaN\n", f);
	else if (isinf(v))
		fputs(v > 0 ? " +Inf\n" : " -Inf\n", f);
	else if (v < 9e15 && v > -9e15 && v == (double)(long long)v)
		fprintf(f, " %lld\n", (long long)v);
	else
		fprintf(f, " %.9g\n", v);
}

/* name{labels} v; labels is the text between the braces, already escaped ("" none). */
static void sample(FILE *f, const char *name, const char *labels, double v)
{
	fprintf(f, labels && *labels ? "%s{%s}" : "%s", name, labels);
	value(f, v);
}

/* ---- the daemon (status) ---- */

static void info_label(FILE *f, const char *name, const struct fc_jv *status, const char *key,
		       int first)
{
	fprintf(f, "%s%s=", first ? "" : ",", name);
	label_value(f, fc_jstr(fc_jget(status, key)));
}

static void gauge_of(FILE *f, const struct fc_jv *o, const char *key, const char *name,
		     const char *help, double scale)
{
	double v;

	if (!fc_jnum(fc_jget(o, key), &v))
		return;
	family(f, name, "gauge", help);
	sample(f, name, "", v * scale);
}

static void render_status(FILE *f, const struct fc_jv *st)
{
	family(f, "falcond_info", "gauge", "falcond's version and modes (always 1)");
	fputs("falcond_info{", f);
	info_label(f, "version", st, "version", 1);
	info_label(f, "io", st, "io", 0);
	info_label(f, "security", st, "security", 0);
	info_label(f, "cc", st, "cc", 0);
	info_label(f, "rue", st, "rue", 0);
	info_label(f, "poll", st, "poll", 0);
	fputs("} 1\n", f);
	gauge_of(f, st, "uptime_s", "falcond_uptime_seconds", "Seconds since falcond started", 1);
	gauge_of(f, st, "clients", "falcond_clients", "Client processes connected", 1);
	gauge_of(f, st, "connections", "falcond_connections", "Falcon connections established", 1);
	gauge_of(f, st, "mtu_bytes", "falcond_mtu_bytes", "RDMA payload bytes per packet", 1);
}

/* ---- the counters (stats) ---- */

/* Members of a stats section that become one family with a reason label. */
static const struct remap {
	const char *section, *key, *family, *help;
} remaps[] = {
#define RX "falcon_node_rx_drops_total", \
	"Received frames dropped by the node before the engine, by reason"
#define TX "falcon_node_tx_drops_total", "Frames the node could not send, by reason"
	{ "node", "rx_short", RX }, { "node", "rx_encap_err", RX },
	{ "node", "rx_unknown_cid", RX }, { "node", "rx_peer_mismatch", RX },
	{ "node", "rx_spi_mismatch", RX }, { "node", "rx_replay", RX },
	{ "node", "rx_engine_err", RX },
	{ "node", "tx_no_frame", TX }, { "node", "tx_encap_err", TX }, { "node", "tx_io_drop", TX },
#undef RX
#undef TX
};

/* Members that are levels, not counts. */
static const char *const gauges[] = {
	"api.clients", "psp.key_generation", "io_xdp.queues",
};

static const struct remap *remap_of(const char *section, const char *key)
{
	for (size_t i = 0; i < sizeof(remaps) / sizeof(remaps[0]); i++)
		if (!strcmp(remaps[i].section, section) && !strcmp(remaps[i].key, key))
			return &remaps[i];
	return NULL;
}

static int is_gauge(const char *section, const char *key)
{
	char k[NAME_MAX_LEN];

	snprintf(k, sizeof(k), "%s.%s", section, key);
	for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
		if (!strcmp(gauges[i], k))
			return 1;
	return 0;
}

/* falcon_SECTION_KEY with the unit made a base unit: *scale gets the factor. */
static void metric_name(char *out, size_t cap, const char *section, const char *key,
			double *scale)
{
	static const struct { const char *suffix; double scale; } units[] = {
		{ "_ns", 1e-9 }, { "_us", 1e-6 }, { "_ms", 1e-3 }, { "_s", 1 },
	};
	size_t n = strlen(key);

	*scale = 1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t l = strlen(units[i].suffix);

		if (n > l && !strcmp(key + n - l, units[i].suffix)) {
			snprintf(out, cap, "falcon_%s_%.*s_seconds", section, (int)(n - l), key);
			*scale = units[i].scale;
			return;
		}
	}
	snprintf(out, cap, "falcon_%s_%s", section, key);
}

/* The remapped families of one section, each family's members together. */
static void render_remaps(FILE *f, const struct fc_jv *sec, const char *section)
{
	for (size_t i = 0; i < sizeof(remaps) / sizeof(remaps[0]); i++) {
		const struct remap *r = &remaps[i];
		double v;

		if (strcmp(r->section, section) || (i && !strcmp(remaps[i - 1].family, r->family)))
			continue; /* not this section, or a family already written */
		family(f, r->family, "counter", r->help);
		for (size_t k = i; k < sizeof(remaps) / sizeof(remaps[0]) &&
		     !strcmp(remaps[k].family, r->family); k++) {
			char l[NAME_MAX_LEN];
			const char *reason = strchr(remaps[k].key, '_') + 1;

			if (!fc_jnum(fc_jget(sec, remaps[k].key), &v))
				continue;
			snprintf(l, sizeof(l), "reason=\"%s\"", reason);
			sample(f, r->family, l, v);
		}
	}
}

static void render_section(FILE *f, const struct fc_jv *sec, const char *section)
{
	char name[NAME_MAX_LEN + 16], help[NAME_MAX_LEN * 2];
	double v, scale;

	render_remaps(f, sec, section);
	for (const struct fc_jv *m = sec->kid; m; m = m->next) {
		if (remap_of(section, m->key))
			continue;
		metric_name(name, NAME_MAX_LEN, section, m->key, &scale);
		if (m->t == FC_J_OBJ) { /* an object of counts: one family, a reason each */
			strcat(name, "_total");
			snprintf(help, sizeof(help), "falconctl stats: %s.%s, by reason", section,
				 m->key);
			family(f, name, "counter", help);
			for (const struct fc_jv *r = m->kid; r; r = r->next) {
				char l[NAME_MAX_LEN];

				if (!fc_jnum(r, &v))
					continue;
				snprintf(l, sizeof(l), "reason=\"%s\"", r->key);
				sample(f, name, l, v);
			}
			continue;
		}
		if (!fc_jnum(m, &v))
			continue; /* strings and booleans: falconctl stats shows them */
		int gauge = is_gauge(section, m->key);

		if (!gauge)
			strcat(name, "_total");
		snprintf(help, sizeof(help), "falconctl stats: %s.%s", section, m->key);
		family(f, name, gauge ? "gauge" : "counter", help);
		sample(f, name, "", v * scale);
	}
}

static void render_stats(FILE *f, const struct fc_jv *stats)
{
	for (const struct fc_jv *s = stats->kid; s; s = s->next)
		if (s->t == FC_J_OBJ && s->key)
			render_section(f, s, s->key);
}

/* ---- per peer, per connection ---- */

struct col {
	const char *key, *name, *type, *help, *labels; /* labels: extra, e.g. reason="early" */
	double scale;
};

static const struct col peer_cols[] = {
	{ "conns", "falcon_peer_connections", "gauge", "Connections established with the peer", NULL, 1 },
	{ "session", "falcon_peer_session_up", "gauge",
	  "1 while the peer's authenticated session is up (security psp)", NULL, 1 },
	{ "rejects", "falcon_peer_rejects_total", "counter", "Requests the peer refused", NULL, 1 },
	{ "restarts", "falcon_peer_restarts_total", "counter", "Restarts of the peer seen", NULL, 1 },
	{ "handshakes", "falcon_peer_handshakes_total", "counter",
	  "Handshakes completed with the peer", NULL, 1 },
	{ "last_seen_s_ago", "falcon_peer_last_seen_age_seconds", "gauge",
	  "Seconds since the peer was last heard", NULL, 1 },
};

static const struct col conn_cols[] = {
	{ "tx_bytes", "falcon_conn_tx_bytes_total", "counter", "Bytes of Falcon packets sent", NULL, 1 },
	{ "rx_bytes", "falcon_conn_rx_bytes_total", "counter", "Bytes of Falcon packets received", NULL, 1 },
	{ "tx_pkts", "falcon_conn_tx_packets_total", "counter", "Falcon packets sent", NULL, 1 },
	{ "rx_pkts", "falcon_conn_rx_packets_total", "counter", "Falcon packets received", NULL, 1 },
	{ "retx_timeout", "falcon_conn_retransmits_total", "counter",
	  "Packets retransmitted, by reason", "reason=\"timeout\"", 1 },
	{ "retx_early", "falcon_conn_retransmits_total", NULL, NULL, "reason=\"early\"", 1 },
	{ "rx_dup", "falcon_conn_drops_total", "counter", "Received packets dropped, by reason",
	  "reason=\"duplicate\"", 1 },
	{ "rx_old", "falcon_conn_drops_total", NULL, NULL, "reason=\"old\"", 1 },
	{ "rx_oow", "falcon_conn_drops_total", NULL, NULL, "reason=\"out_of_window\"", 1 },
	{ "rx_decode_err", "falcon_conn_drops_total", NULL, NULL, "reason=\"malformed\"", 1 },
	{ "acks_stale", "falcon_conn_drops_total", NULL, NULL, "reason=\"stale_ack\"", 1 },
	{ "acks_bogus", "falcon_conn_drops_total", NULL, NULL, "reason=\"bogus_ack\"", 1 },
	{ "srtt_us", "falcon_conn_rtt_seconds", "gauge", "Smoothed round-trip time", NULL, 1e-6 },
	{ "rto_us", "falcon_conn_rto_seconds", "gauge", "Retransmission timeout", NULL, 1e-6 },
	{ "fcwnd", "falcon_conn_fcwnd_packets", "gauge", "Fabric congestion window", NULL, 1 },
	{ "ncwnd", "falcon_conn_ncwnd_packets", "gauge", "NIC congestion window", NULL, 1 },
	{ "outstanding_req", "falcon_conn_outstanding_packets", "gauge",
	  "Packets sent and not yet acknowledged, by window", "window=\"request\"", 1 },
	{ "outstanding_data", "falcon_conn_outstanding_packets", NULL, NULL, "window=\"data\"", 1 },
	{ "acks_tx", "falcon_conn_acks_sent_total", "counter", "ACKs sent (BACK and EACK)", NULL, 1 },
	{ "nacks_tx", "falcon_conn_nacks_sent_total", "counter", "NACKs sent", NULL, 1 },
};

/* The labels naming one row: peer="..." for a peer, conn, peer and local_cid for a
 * connection. */
static void row_labels(char *out, size_t cap, const struct fc_jv *row, int conn)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		*out = 0;
		return;
	}
	if (conn)
		fprintf(f, "conn=\"%s\",", fc_jstr(fc_jget(row, "id")));
	fputs("peer=", f);
	label_value(f, fc_jstr(fc_jget(row, conn ? "peer" : "cm_addr")));
	if (conn)
		fprintf(f, ",local_cid=\"%s\"", fc_jstr(fc_jget(row, "local_cid")));
	fclose(f);
	snprintf(out, cap, "%s", buf ? buf : "");
	free(buf);
}

static int row_value(const struct fc_jv *row, const struct col *c, double *v)
{
	const struct fc_jv *m = fc_jget(row, c->key);

	if (!strcmp(c->key, "session") && m) {
		*v = !strcmp(fc_jstr(m), "up");
		return 1;
	}
	return fc_jnum(m, v);
}

static void render_rows(FILE *f, const struct fc_jv *rows, const struct col *cols, size_t n,
			int conn)
{
	char labels[512], both[640];
	double v;

	for (size_t i = 0; i < n; i++) {
		const struct col *c = &cols[i];
		int any = 0;

		for (const struct fc_jv *r = rows->kid; r; r = r->next)
			any |= row_value(r, c, &v);
		if (!any)
			continue;
		if (c->type)
			family(f, c->name, c->type, c->help);
		for (const struct fc_jv *r = rows->kid; r; r = r->next) {
			if (!row_value(r, c, &v))
				continue;
			row_labels(labels, sizeof(labels), r, conn);
			snprintf(both, sizeof(both), "%s%s%s", labels, c->labels ? "," : "",
				 c->labels ? c->labels : "");
			sample(f, c->name, both, v * c->scale);
		}
	}
}

static void render_conn_info(FILE *f, const struct fc_jv *conns)
{
	static const char *const keys[] = { "kind", "role", "state", "ordering", "remote_cid",
					    "qpn", "remote_qpn", "service" };
	char labels[512];

	if (!conns->kid)
		return;
	family(f, "falcon_conn_info", "gauge", "A Falcon connection and what it serves (always 1)");
	for (const struct fc_jv *r = conns->kid; r; r = r->next) {
		row_labels(labels, sizeof(labels), r, 1);
		fprintf(f, "falcon_conn_info{%s", labels);
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			fprintf(f, ",%s=", keys[k]);
			label_value(f, fc_jstr(fc_jget(r, keys[k])));
		}
		fputs("} 1\n", f);
	}
}

int fc_prom_render(const struct fc_jv *status, const struct fc_jv *stats,
		   const struct fc_jv *peers, const struct fc_jv *conns, char **text,
		   size_t *len)
{
	FILE *f = open_memstream(text, len);

	if (!f)
		return -ENOMEM;
	if (status && status->t == FC_J_OBJ)
		render_status(f, status);
	if (stats && stats->t == FC_J_OBJ)
		render_stats(f, stats);
	if (peers && peers->t == FC_J_ARR)
		render_rows(f, peers, peer_cols, sizeof(peer_cols) / sizeof(peer_cols[0]), 0);
	if (conns && conns->t == FC_J_ARR) {
		render_conn_info(f, conns);
		render_rows(f, conns, conn_cols, sizeof(conn_cols) / sizeof(conn_cols[0]), 1);
	}
	if (fclose(f)) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- asking the daemon ---- */

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n == 0 ? -ETIMEDOUT : 0;
}

static int read_all(int fd, int timeout_ms, char **ans)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap + 1);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if ((rc = wait_fd(fd, POLLIN, timeout_ms)))
			break;
		if (len == cap) {
			char *nb = cap >= FC_ADMIN_ANSWER_MAX ? NULL : realloc(buf, cap * 2 + 1);

			if (!nb) {
				rc = cap >= FC_ADMIN_ANSWER_MAX ? -EMSGSIZE : -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!rc && !len)
		rc = -ENODATA;
	if (rc) {
		free(buf);
		return rc;
	}
	buf[len] = 0;
	*ans = buf;
	return 0;
}

int fc_admin_ask(const char *path, const char *cmd, int timeout_ms, char **ans)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	char line[512];
	int fd, rc, n;

	if (strlen(path) >= sizeof(un.sun_path))
		return -ENAMETOOLONG;
	n = snprintf(line, sizeof(line), "%s\n", cmd);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -E2BIG;
	strcpy(un.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&un, sizeof(un)) < 0 ||
	    send(fd, line, (size_t)n, MSG_NOSIGNAL) != n)
		rc = -errno;
	else
		rc = read_all(fd, timeout_ms, ans);
	close(fd);
	return rc;
}

int fc_prom_scrape(const char *admin_path, int timeout_ms, char **text, size_t *len)
{
	static const char *const cmds[4] = { "status", "stats", "peer list", "conn list" };
	char *ans[4] = { NULL };
	struct fc_jv *doc[4] = { NULL };
	int rc = 0;

	for (int i = 0; i < 4 && !rc; i++) {
		char *p;

		if ((rc = fc_admin_ask(admin_path, cmds[i], timeout_ms, &ans[i])))
			break;
		p = ans[i];
		doc[i] = fc_jparse(&p);
		if (!doc[i] || fc_jget(doc[i], "error"))
			rc = -EBADMSG;
	}
	if (!rc)
		rc = fc_prom_render(doc[0], doc[1], doc[2], doc[3], text, len);
	for (int i = 0; i < 4; i++) {
		fc_jfree(doc[i]);
		free(ans[i]);
	}
	return rc;
}
