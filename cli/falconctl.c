/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falconctl - ask a running falcond about itself (its admin socket, daemon/admin.c).
 *
 *   falconctl [OPTIONS] OBJECT [COMMAND] [ARGS]    falconctl OBJECT [COMMAND] --help
 *
 * The commands are one table (cmds[] below) that drives parsing, the global usage, each
 * command's --help and the columns of its table. The daemon answers with JSON; -j prints
 * it as it is, otherwise lists are tables (libsmartcols, as lsblk: -o COLUMNS, fitted
 * to the terminal, a header even when empty) and objects "key: value" lines.
 * `stats -o prometheus` prints the Prometheus text falcond --metrics serves (prom.h).
 * The key commands need no daemon: they write a new identity key (the connection
 * manager's static X25519 key, daemon/hs.h) to a file of mode 0600 and print its public
 * key in base64, or print the public key of a key file.
 *
 * Exit status: 0 done, 1 the daemon refused the command (or a key file was refused), 2
 * usage, or the daemon could not be reached (not running?) or answered nonsense.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <libsmartcols/libsmartcols.h>
#include <sodium.h>

#include "hs.h"
#include "jread.h"
#include "plot.h"
#include "prom.h"

#ifndef FALCON_RELEASE
#define FALCON_RELEASE "unknown"
#endif

#define KEY_FILE_DEFAULT "/etc/falcon/falcond.key"
#define ADMIN_DEFAULT "/run/falcon/falconctl.sock"
#define ASK_TIMEOUT_MS 10000
#define COLS_MAX 64

/* ---- the commands ---- */

/* A table's column: the JSON member, shown by default or not, right-aligned (numbers),
 * truncated first when the terminal is narrow; what it is (--help). */
struct col {
	const char *key;
	unsigned flags;
	const char *help;
};
#define C_DEF 1u    /* in the default set */
#define C_NUM 2u    /* a number: right-aligned */
#define C_TRUNC 4u  /* may be truncated to fit */

struct ctx;
struct cmd {
	const char *obj, *verb;   /* "conn", "list"; verb NULL: a one-word command */
	const char *args;         /* "ID [SECONDS]" */
	int nargs_min, nargs_max;
	const char *summary;
	const char *help;         /* more, for OBJECT COMMAND --help */
	const char *o_help;       /* what -o means here (NULL: no -o) */
	const struct col *cols;   /* a list's columns (NULL: not a table) */
	int (*run)(const struct cmd *c, struct ctx *x, char **args, int nargs);
};

struct ctx {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int json;
	const char *o;            /* -o's value */
};

static int run_daemon(const struct cmd *c, struct ctx *x, char **args, int nargs);
static int run_stats(const struct cmd *c, struct ctx *x, char **args, int nargs);
static int run_trace(const struct cmd *c, struct ctx *x, char **args, int nargs);
static int run_key(const struct cmd *c, struct ctx *x, char **args, int nargs);

static const struct col peer_cols[] = {
	{ "cm_addr", C_DEF | C_TRUNC, "the peer's connection-manager address" },
	{ "session", C_DEF, "psp: up, handshake or none" },
	{ "conns", C_DEF | C_NUM, "connections with it" },
	{ "version", C_DEF | C_NUM, "its CM protocol version" },
	{ "rejects", C_DEF | C_NUM, "requests it refused" },
	{ "restarts", C_DEF | C_NUM, "its restarts seen" },
	{ "last_seen_s_ago", C_DEF | C_NUM, "seconds since it was last heard" },
	{ "handshakes", C_NUM, "psp: handshakes completed" },
	{ "keys_generation", C_NUM, "psp: key generation it acknowledged" },
	{ "features_supported", C_NUM, "CM feature bits it supports" },
	{ "features_required", C_NUM, "CM feature bits it requires" },
	{ "identity", C_TRUNC, "psp: its public key" },
	{ NULL, 0, NULL },
};

static const struct col conn_cols[] = {
	{ "id", C_DEF | C_NUM, "the connection manager's id (conn show ID)" },
	{ "state", C_DEF | C_TRUNC, "established, connecting, closing, ..." },
	{ "peer", C_DEF | C_TRUNC, "the peer daemon's CM address" },
	{ "local_cid", C_DEF | C_NUM, "our Falcon connection id" },
	{ "qpn", C_NUM, "our QP" },
	{ "srtt_us", C_DEF | C_NUM, "smoothed RTT (us)" },
	{ "fcwnd", C_DEF | C_NUM, "fabric congestion window (packets)" },
	{ "tx_bytes", C_DEF | C_NUM, "bytes sent" },
	{ "rx_bytes", C_DEF | C_NUM, "bytes received" },
	{ "retx_timeout", C_NUM, "retransmissions after a timeout" },
	{ "role", 0, "initiator or target" },
	{ "kind", 0, "service (listen/connect), pair (QPs named), ah (UD)" },
	{ "address_handles", C_NUM, "ah: address handles using it" },
	{ "service", C_NUM, "the service number" },
	{ "remote_cid", C_NUM, "the peer's connection id" },
	{ "remote_qpn", C_NUM, "the peer's QP" },
	{ "ordering", 0, "ordered or unordered" },
	{ "ncwnd", C_NUM, "NIC congestion window (packets)" },
	{ "rto_us", C_NUM, "retransmission timeout (us)" },
	{ "outstanding_req", C_NUM, "request window packets unacknowledged" },
	{ "outstanding_data", C_NUM, "data window packets unacknowledged" },
	{ "tx_pkts", C_NUM, "packets sent" },
	{ "rx_pkts", C_NUM, "packets received" },
	{ "retx_early", C_NUM, "early retransmissions (OOO, EACK)" },
	{ "rx_dup", C_NUM, "duplicates dropped" },
	{ "rx_old", C_NUM, "old packets dropped" },
	{ "rx_oow", C_NUM, "out-of-window packets dropped" },
	{ "rx_decode_err", C_NUM, "malformed packets dropped" },
	{ "acks_stale", C_NUM, "stale ACKs discarded" },
	{ "acks_bogus", C_NUM, "ACKs of PSNs never sent, discarded" },
	{ "acks_tx", C_NUM, "ACKs sent" },
	{ "nacks_tx", C_NUM, "NACKs sent" },
	{ "dead", 0, "true once the connection failed" },
	{ NULL, 0, NULL },
};

static const struct col qp_cols[] = {
	{ "client", C_DEF | C_NUM, "the client's id (client list)" },
	{ "qpn", C_DEF | C_NUM, "QP number" },
	{ "type", C_DEF, "rc, ud, xrc_send, xrc_recv" },
	{ "state", C_DEF, "reset, init, rtr, rts, error, connecting" },
	{ "remote_qpn", C_DEF | C_NUM, "the peer's QP" },
	{ "made_by", C_DEF, "create_qp or connect" },
	{ "sq_outstanding", C_DEF | C_NUM, "send WRs not completed" },
	{ "rq_outstanding", C_DEF | C_NUM, "receive WRs not completed" },
	{ NULL, 0, NULL },
};

static const struct col mr_cols[] = {
	{ "client", C_DEF | C_NUM, "the client's id" },
	{ "iova", C_DEF | C_NUM, "start address (hex)" },
	{ "len", C_DEF | C_NUM, "bytes" },
	{ "lkey", C_DEF | C_NUM, "local key (hex)" },
	{ "rkey", C_DEF | C_NUM, "remote key (hex)" },
	{ "access", C_DEF | C_NUM, "access flags (hex)" },
	{ "by_copy", C_DEF, "true: reached by process_vm_readv/writev" },
	{ NULL, 0, NULL },
};

static const struct col client_cols[] = {
	{ "id", C_DEF | C_NUM, "the client's id" },
	{ "pid", C_DEF | C_NUM, "its process" },
	{ "uid", C_DEF | C_NUM, "its user" },
	{ "pd", C_DEF | C_NUM, "protection domains" },
	{ "mr", C_DEF | C_NUM, "memory regions" },
	{ "cq", C_DEF | C_NUM, "completion queues" },
	{ "qp", C_DEF | C_NUM, "queue pairs" },
	{ "srq", C_NUM, "shared receive queues" },
	{ "xrcd", C_NUM, "XRC domains" },
	{ "listener", C_NUM, "listeners" },
	{ "ah", C_NUM, "address handles" },
	{ "msgs", C_DEF | C_NUM, "control messages" },
	{ "errors", C_DEF | C_NUM, "refused messages" },
	{ NULL, 0, NULL },
};

#define O_COLUMNS "COLUMNS\tthe columns to show, comma-separated (columns below);\n" \
	"                         +COLUMNS: the default ones and these"

static const struct cmd cmds[] = {
	{ "status", NULL, "", 0, 0, "the daemon: version, addresses, modes, clients, limits",
	  "security is psp or none, cc swift or off, rue thread or inline; io udp or xdp\n"
	  "(xdp_not_used says why not, under --io auto). limits: each table's size\n"
	  "(max_qps ..., falcond's --max-* options) beside what is in use (qps ...), and\n"
	  "the quotas of one client (client_max_*).", NULL, NULL, run_daemon },
	{ "peer", "list", "", 0, 0, "peer daemons seen by the connection manager", NULL,
	  O_COLUMNS, peer_cols, run_daemon },
	{ "conn", "list", "", 0, 0, "Falcon connections: state, CIDs, RTT, windows, bytes",
	  NULL, O_COLUMNS, conn_cols, run_daemon },
	{ "conn", "show", "ID", 1, 1, "one connection, every field", NULL, NULL, NULL, run_daemon },
	{ "conn", "trace", "ID [SECONDS]", 1, 2,
	  "a connection's CC events for SECONDS: CSV, chart",
	  "Each ACK, NACK and retransmission the RUE sees: time, RTT, fabric delay, fcwnd,\n"
	  "ncwnd, RTO, retransmit count, NACK code. The daemon keeps them in a ring sized to\n"
	  "the time asked (up to one second of 65,536 events a second) that falconctl drains\n"
	  "every 250 ms, so every event of the whole time is kept; events past that rate are\n"
	  "counted as dropped. Writes PREFIX.csv and a chart PREFIX.png (default PREFIX\n"
	  "trace-ID); with -j prints the events as JSON instead (no files).",
	  "PREFIX\tthe files' name without .csv / .png", NULL, run_trace },
	{ "qp", "list", "", 0, 0, "queue pairs of every client", NULL, O_COLUMNS, qp_cols,
	  run_daemon },
	{ "mr", "list", "", 0, 0, "memory regions of every client", NULL, O_COLUMNS, mr_cols,
	  run_daemon },
	{ "client", "list", "", 0, 0, "client processes and what they hold", NULL, O_COLUMNS,
	  client_cols, run_daemon },
	{ "stats", NULL, "", 0, 0, "counters: drops and errors per reason, per layer",
	  "With -o prometheus the Prometheus text format, as falcond --metrics ADDR:PORT\n"
	  "serves it at /metrics: the daemon, every counter, per peer and per connection.",
	  "FORMAT\tprometheus: the Prometheus text format", NULL, run_stats },
	{ "xdp", NULL, "", 0, 0, "--io xdp: the program, its counters, the windows",
	  "The attached program (id, interface, mode), its counters by name, each open\n"
	  "connection's windows in falcon_conns (bases, bits received, OWN) and counters.",
	  NULL, NULL, run_daemon },
	{ "key", "generate", "", 0, 0, "a new identity key; prints its public key (no daemon)",
	  "Writes the key to FILE (mode 0600; default " KEY_FILE_DEFAULT "), never over an\n"
	  "existing file, and prints its public key in base64, the form peers name it in.",
	  "FILE\twhere to write the key", NULL, run_key },
	{ "key", "show", "FILE", 1, 1, "the public key of a key file (no daemon)", NULL, NULL,
	  NULL, run_key },
	{ "key", "rotate", "", 0, 0, "new PSP keys now, without loss (the daemon)", NULL, NULL,
	  NULL, run_daemon },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static const char options_help[] =
	"  -j, --json             JSON (the daemon's, as it is)\n"
	"  -o, --output ARG       what the command's help says (table columns, a format,\n"
	"                         a file)\n"
	"  -s, --socket PATH      admin socket (default $FALCON_ADMIN_SOCKET or\n"
	"                         " ADMIN_DEFAULT ")\n"
	"  -r, --runtime-dir DIR  the daemon's --runtime-dir (its falconctl.sock)\n"
	"  -h, --help             help, of a command when one is named\n"
	"  -V, --version          falconctl's version\n";

static void cmd_line(FILE *f, const struct cmd *c)
{
	char words[48];

	snprintf(words, sizeof(words), "%s%s%s%s%s", c->obj, c->verb ? " " : "",
		 c->verb ? c->verb : "", *c->args ? " " : "", c->args);
	fprintf(f, "  %-23s %s\n", words, c->summary);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: falconctl [OPTIONS] OBJECT [COMMAND] [ARGS]\n"
		"       falconctl OBJECT [COMMAND] --help\n\ncommands (a lone OBJECT means its list):\n");
	for (size_t i = 0; i < NCMDS; i++)
		cmd_line(f, &cmds[i]);
	fprintf(f, "\noptions:\n%s\nexit status: 0 done, 1 refused, 2 usage or no daemon\n",
		options_help);
}

static void obj_help(const char *obj)
{
	printf("usage: falconctl [OPTIONS] %s COMMAND [ARGS]   (falconctl %s COMMAND --help)\n\n"
	       "commands:\n", obj, obj);
	for (size_t i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].obj, obj))
			cmd_line(stdout, &cmds[i]);
	printf("\noptions:\n%s", options_help);
}

static void cmd_help(const struct cmd *c)
{
	printf("usage: falconctl [OPTIONS] %s%s%s%s%s\n\n%s.\n", c->obj, c->verb ? " " : "",
	       c->verb ? c->verb : "", *c->args ? " " : "", c->args, c->summary);
	if (c->help)
		printf("\n%s\n", c->help);
	printf("\noptions:\n  -j, --json             JSON%s\n",
	       c->run == run_key ? " ({\"public_key\": ...})" : "");
	if (c->o_help) {
		const char *tab = strchr(c->o_help, '\t');

		printf("  -o, --output %-9.*s %s\n", (int)(tab - c->o_help), c->o_help, tab + 1);
	}
	if (c->run != run_key || !strcmp(c->verb, "rotate"))
		printf("  -s, --socket PATH, -r, --runtime-dir DIR   which daemon\n");
	if (c->cols) {
		printf("\ncolumns (* by default):\n");
		for (const struct col *k = c->cols; k->key; k++)
			printf("  %c %-20s %s\n", k->flags & C_DEF ? '*' : ' ', k->key, k->help);
	}
	printf("\nexit status: 0 done, 1 refused, 2 usage or no daemon\n");
}

/* ---- talking to the daemon ---- */

/* The answer to cmd, or NULL with the reason printed (exit status 2). */
static char *ask(const struct ctx *x, const char *cmd)
{
	char *ans = NULL;
	int rc = fc_admin_ask(x->path, cmd, ASK_TIMEOUT_MS, &ans);

	if (rc == -ENOENT || rc == -ECONNREFUSED || rc == -EACCES)
		fprintf(stderr, "falconctl: cannot reach falcond at %s: %s (is falcond running?)\n",
			x->path, strerror(-rc));
	else if (rc == -ENODATA)
		fprintf(stderr, "falconctl: falcond at %s closed without an answer\n", x->path);
	else if (rc)
		fprintf(stderr, "falconctl: falcond at %s: %s\n", x->path, strerror(-rc));
	return rc ? NULL : ans;
}

static int refused(const struct fc_jv *v)
{
	const struct fc_jv *e = fc_jget(v, "error");

	if (!e)
		return 0;
	fprintf(stderr, "falconctl: %s\n", fc_jstr(e));
	return 1;
}

/* ---- tables ---- */

static const struct col *col_of(const struct col *cols, const char *key)
{
	for (const struct col *k = cols; k && k->key; k++)
		if (!strcasecmp(k->key, key))
			return k;
	return NULL;
}

/* The columns to show: the defaults, -o's list, or +list after the defaults. A name that
 * is neither a known column nor a member of the first row is refused (-EINVAL). */
static int pick(const struct cmd *c, const char *o, const struct fc_jv *first,
		const char **out, int *n)
{
	char *list, *tok, *save;
	int rc = 0;

	*n = 0;
	if (!o || *o == '+')
		for (const struct col *k = c->cols; k->key && *n < COLS_MAX; k++)
			if (k->flags & C_DEF)
				out[(*n)++] = k->key;
	if (!o)
		return 0;
	if (!(list = strdup(*o == '+' ? o + 1 : o)))
		return -ENOMEM;
	for (tok = strtok_r(list, ",", &save); tok && *n < COLS_MAX; tok = strtok_r(NULL, ",", &save)) {
		const struct col *k = col_of(c->cols, tok);
		const struct fc_jv *m = NULL;

		for (const struct fc_jv *j = first ? first->kid : NULL; j && !k && !m; j = j->next)
			if (!strcasecmp(j->key, tok))
				m = j;
		if (!k && !m) {
			fprintf(stderr, "falconctl: no column '%s' (falconctl %s %s --help)\n", tok,
				c->obj, c->verb);
			rc = -EINVAL;
			break;
		}
		out[(*n)++] = k ? k->key : m->key;
	}
	if (!rc && !*n)
		rc = -EINVAL;
	free(list);
	return rc;
}

/* Print rows (an array of objects) as a table of the picked columns. */
static int table(const struct cmd *c, const struct ctx *x, const struct fc_jv *rows)
{
	const char *names[COLS_MAX];
	char upper[COLS_MAX][40];
	struct libscols_table *tb;
	const char *cols_env = getenv("COLUMNS");
	int n, rc;

	if ((rc = pick(c, x->o, rows->kid, names, &n)))
		return rc == -EINVAL ? 2 : 1;
	if (!(tb = scols_new_table()))
		return 1;
	/* on a terminal libsmartcols fits its width; into a pipe it does when COLUMNS says
	 * a width (as ls and lsblk read it) */
	if (!isatty(STDOUT_FILENO) && cols_env && atoi(cols_env) > 0) {
		scols_table_set_termforce(tb, SCOLS_TERMFORCE_ALWAYS);
		scols_table_set_termwidth(tb, (size_t)atoi(cols_env));
	}
	for (int i = 0; i < n; i++) {
		const struct col *k = col_of(c->cols, names[i]);
		unsigned fl = k ? k->flags : 0;
		size_t j = 0;

		for (; names[i][j] && j < sizeof(upper[i]) - 1; j++)
			upper[i][j] = (char)(names[i][j] >= 'a' && names[i][j] <= 'z' ?
					     names[i][j] - 32 : names[i][j]);
		upper[i][j] = 0;
		if (!scols_table_new_column(tb, upper[i], fl & C_TRUNC ? 0.2 : 0,
					    (fl & C_NUM ? SCOLS_FL_RIGHT : 0) |
					    (fl & C_TRUNC ? SCOLS_FL_TRUNC : 0)))
			goto fail;
	}
	for (const struct fc_jv *r = rows->kid; r; r = r->next) {
		struct libscols_line *ln = scols_table_new_line(tb, NULL);

		if (!ln)
			goto fail;
		for (int i = 0; i < n; i++) {
			const struct fc_jv *m = fc_jget(r, names[i]);

			scols_line_set_data(ln, (size_t)i, fc_jscalar(m) ? fc_jstr(m) : "-");
		}
	}
	if (!rows->kid) { /* libsmartcols prints nothing for no lines: the header alone */
		for (int i = 0; i < n; i++)
			printf("%s%s", i ? " " : "", upper[i]);
		putchar('\n');
	} else {
		scols_print_table(tb);
	}
	scols_unref_table(tb);
	return 0;
fail:
	scols_unref_table(tb);
	return 1;
}

static void render(const struct fc_jv *v, int indent)
{
	if (v->t == FC_J_ARR) {
		for (const struct fc_jv *m = v->kid; m; m = m->next) {
			if (m->t == FC_J_OBJ) {
				printf("%*s-\n", indent, "");
				render(m, indent + 2);
			} else {
				printf("%*s%s\n", indent, "", fc_jscalar(m) ? m->s : "...");
			}
		}
		return;
	}
	if (v->t != FC_J_OBJ) {
		printf("%*s%s\n", indent, "", v->s);
		return;
	}
	for (const struct fc_jv *m = v->kid; m; m = m->next) {
		if (fc_jscalar(m)) {
			printf("%*s%s: %s\n", indent, "", m->key, m->s);
		} else {
			printf("%*s%s:\n", indent, "", m->key);
			render(m, indent + 2);
		}
	}
}

/* ---- the commands' code ---- */

/* Ask, then print the JSON (-j), a table (a list) or key: value lines. */
static int run_daemon(const struct cmd *c, struct ctx *x, char **args, int nargs)
{
	char line[256], *ans, *p;
	struct fc_jv *v;
	int rc;

	snprintf(line, sizeof(line), "%s%s%s%s%s", c->obj, c->verb ? " " : "",
		 c->verb ? c->verb : "", nargs ? " " : "", nargs ? args[0] : "");
	if (x->o && !c->cols) {
		fprintf(stderr, "falconctl: %s takes no -o\n", line);
		return 2;
	}
	if (!(ans = ask(x, line)))
		return 2;
	if (x->json) { /* as it came; refused if it is an error */
		fputs(ans, stdout);
		if (ans[strlen(ans) - 1] != '\n')
			putchar('\n');
		rc = strncmp(ans, "{\"error\":", 9) == 0;
		free(ans);
		return rc;
	}
	p = ans;
	if (!(v = fc_jparse(&p))) {
		fprintf(stderr, "falconctl: could not read the daemon's answer\n");
		free(ans);
		return 2;
	}
	if ((rc = refused(v)))
		;
	else if (c->cols && v->t == FC_J_ARR)
		rc = table(c, x, v);
	else
		render(v, 0);
	fc_jfree(v);
	free(ans);
	return rc;
}

static int run_stats(const struct cmd *c, struct ctx *x, char **args, int nargs)
{
	char *text = NULL;
	size_t len;
	int rc;

	if (!x->o)
		return run_daemon(c, x, args, nargs);
	if (strcmp(x->o, "prometheus")) {
		fprintf(stderr, "falconctl: stats -o: prometheus is the one format (else -j)\n");
		return 2;
	}
	rc = fc_prom_scrape(x->path, ASK_TIMEOUT_MS, &text, &len);
	if (rc == -EBADMSG) {
		fprintf(stderr, "falconctl: falcond at %s answered something else than JSON\n",
			x->path);
		return 2;
	}
	if (rc) {
		x->o = NULL;
		free(ask(x, "status")); /* says why */
		return 2;
	}
	fwrite(text, 1, len, stdout);
	free(text);
	return 0;
}

/* key generate [-o FILE] | key show FILE. */
static int run_key(const struct cmd *c, struct ctx *x, char **args, int nargs)
{
	char b64[FC_HS_B64_LEN], err[512];
	struct fc_hs_key k;
	int rc;

	(void)nargs;
	if (!strcmp(c->verb, "generate")) {
		const char *path = x->o ? x->o : KEY_FILE_DEFAULT;

		rc = fc_hs_key_generate(&k);
		if (!rc)
			rc = fc_hs_key_save(path, &k);
		if (rc) {
			fprintf(stderr, "falconctl: %s: %s\n", path,
				rc == -EEXIST ? "exists; a key file is never overwritten" :
				strerror(-rc));
			sodium_memzero(&k, sizeof(k));
			return 1;
		}
	} else {
		if (x->o) {
			fprintf(stderr, "falconctl: key show takes no -o\n");
			return 2;
		}
		if ((rc = fc_hs_key_load(args[0], &k, err, sizeof(err)))) {
			fprintf(stderr, "falconctl: %s\n", err);
			return 1;
		}
	}
	fc_hs_pub_to_base64(k.pub, b64);
	sodium_memzero(&k, sizeof(k));
	if (x->json)
		printf("{\"public_key\":\"%s\"}\n", b64);
	else
		printf("%s\n", b64);
	return 0;
}

/* ---- conn trace ---- */

#define TRACE_FIELDS 9
#define TRACE_DRAIN_MS 250

struct trace {
	double *v;          /* TRACE_FIELDS values per event */
	size_t n, cap;
	unsigned long long dropped;
	unsigned ring;
};

/* One answer's records appended; returns 1 when the daemon has more, 0 when not, -1 on
 * an answer that is not a trace (printed). */
static int trace_take(struct trace *t, const struct ctx *x, const char *cmd)
{
	char *ans = ask(x, cmd), *p = ans;
	struct fc_jv *v = ans ? fc_jparse(&p) : NULL;
	const struct fc_jv *tr;
	double d;
	int more = -1;

	if (!v || refused(v) || !(tr = fc_jget(v, "trace")))
		goto out;
	for (const struct fc_jv *ev = tr->kid; ev; ev = ev->next) {
		int i = 0;

		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 4096;
			double *nv = realloc(t->v, cap * TRACE_FIELDS * sizeof(double));

			if (!nv)
				goto out;
			t->v = nv;
			t->cap = cap;
		}
		for (const struct fc_jv *f = ev->kid; f && i < TRACE_FIELDS; f = f->next, i++)
			t->v[t->n * TRACE_FIELDS + (size_t)i] = fc_jnum(f, &d) ? d : 0;
		for (; i < TRACE_FIELDS; i++)
			t->v[t->n * TRACE_FIELDS + (size_t)i] = 0;
		t->n++;
	}
	if (fc_jnum(fc_jget(v, "dropped"), &d))
		t->dropped = (unsigned long long)d;
	more = !strcmp(fc_jstr(fc_jget(v, "more")), "true");
out:
	if (ans && !v)
		fprintf(stderr, "falconctl: could not read the daemon's answer\n");
	fc_jfree(v);
	free(ans);
	return more;
}

static const char *const trace_event_name[] = { "ack", "nack", "retransmit" };
static const char *const trace_field[TRACE_FIELDS] = {
	"t_s", "event", "rtt_us", "delay_us", "fcwnd", "ncwnd", "rto_us", "retx", "nack_code",
};

static const char *event_name(double v)
{
	unsigned e = (unsigned)v;

	return e < 3 ? trace_event_name[e] : "unknown";
}

static void trace_json(const struct trace *t, const char *id, long secs)
{
	printf("{\"conn\":%s,\"seconds\":%ld,\"events\":%zu,\"dropped\":%llu,\"ring\":%u,"
	       "\"trace\":[", id, secs, t->n, t->dropped, t->ring);
	for (size_t r = 0; r < t->n; r++) {
		const double *e = &t->v[r * TRACE_FIELDS];

		printf("%s{", r ? "," : "");
		for (int i = 0; i < TRACE_FIELDS; i++) {
			if (i == 1)
				printf(",\"event\":\"%s\"", event_name(e[1]));
			else
				printf("%s\"%s\":%.9g", i ? "," : "", trace_field[i], e[i]);
		}
		putchar('}');
	}
	printf("]}\n");
}

static int trace_csv(const struct trace *t, const char *file)
{
	FILE *f = fopen(file, "w");

	if (!f) {
		fprintf(stderr, "falconctl: %s: %s\n", file, strerror(errno));
		return 1;
	}
	for (int i = 0; i < TRACE_FIELDS; i++)
		fprintf(f, "%s%s", i ? "," : "", trace_field[i]);
	fputc('\n', f);
	for (size_t r = 0; r < t->n; r++) {
		const double *e = &t->v[r * TRACE_FIELDS];

		fprintf(f, "%.6f,%s,%.3f,%.3f,%.3f,%.0f,%.1f,%.0f,%.0f\n", e[0], event_name(e[1]),
			e[2], e[3], e[4], e[5], e[6], e[7], e[8]);
	}
	return fclose(f) ? 1 : 0;
}

/* The chart: times on the left axis, windows on the right (cli/plot.h, libpng). */
static void trace_png(const struct trace *t, const char *prefix, const char *id)
{
	static const char *const name[] = { "RTT us", "fabric delay us", "fcwnd", "ncwnd",
					    "RTO us" };
	static const uint32_t rgb[] = { 0x1f77b4, 0xff7f0e, 0x2ca02c, 0x9467bd, 0xd62728 };
	static const int field[] = { 2, 3, 4, 5, 6 };
	struct fc_plot_series ps[5];
	double *col = calloc(t->n * 6, sizeof(double));
	char png[300], title[96];
	int rc;

	if (!col || !t->n) {
		free(col);
		return;
	}
	for (size_t r = 0; r < t->n; r++) {
		col[r] = t->v[r * TRACE_FIELDS];
		for (int k = 0; k < 5; k++)
			col[(size_t)(k + 1) * t->n + r] = t->v[r * TRACE_FIELDS + (size_t)field[k]];
	}
	for (int k = 0; k < 5; k++)
		ps[k] = (struct fc_plot_series){ .name = name[k], .x = col,
						 .y = col + (size_t)(k + 1) * t->n, .n = t->n,
						 .rgb = rgb[k], .right_axis = k == 2 || k == 3 };
	snprintf(png, sizeof(png), "%s.png", prefix);
	snprintf(title, sizeof(title), "connection %s: congestion control", id);
	rc = fc_plot_png(png, title, "time (s)", "microseconds", "packets", ps, 5, 1000, 600);
	if (rc)
		fprintf(stderr, "falconctl: %s: %s\n", png, strerror(-rc));
	else
		printf("chart in %s\n", png);
	free(col);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* conn trace ID [SECONDS]: start, drain every TRACE_DRAIN_MS for SECONDS, stop, drain. */
static int run_trace(const struct cmd *c, struct ctx *x, char **args, int nargs)
{
	const char *id = args[0];
	char *e, cmd[96], def[64], file[300], *ans, *p;
	long secs = nargs > 1 ? strtol(args[1], &e, 10) : 5;
	struct trace t = { 0 };
	struct fc_jv *v;
	double d, end;
	int more, rc;

	(void)c;
	if ((nargs > 1 && *e) || secs < 1 || secs > 3600 || strtol(id, &e, 10) <= 0 || *e) {
		fprintf(stderr, "falconctl: conn trace ID [SECONDS]: an ID of conn list, SECONDS "
			"from 1 to 3600\n");
		return 2;
	}
	snprintf(cmd, sizeof(cmd), "conn trace %s start %ld", id, secs);
	if (!(ans = ask(x, cmd)))
		return 2;
	p = ans;
	v = fc_jparse(&p);
	rc = !v ? 2 : refused(v);
	if (v && fc_jnum(fc_jget(v, "ring"), &d))
		t.ring = (unsigned)d;
	fc_jfree(v);
	free(ans);
	if (rc)
		return rc;
	if (!x->json)
		fprintf(stderr, "falconctl: tracing connection %s for %ld s (ring of %u events, "
			"drained every %d ms)\n", id, secs, t.ring, TRACE_DRAIN_MS);
	snprintf(cmd, sizeof(cmd), "conn trace %s read", id);
	for (end = now_s() + (double)secs; now_s() < end;) {
		double left = end - now_s();

		sleep_ms(left * 1000 < TRACE_DRAIN_MS ? (long)(left * 1000) + 1 : TRACE_DRAIN_MS);
		while ((more = trace_take(&t, x, cmd)) == 1)
			;
		if (more < 0)
			goto fail;
	}
	snprintf(cmd, sizeof(cmd), "conn trace %s stop", id);
	more = trace_take(&t, x, cmd);
	snprintf(cmd, sizeof(cmd), "conn trace %s read", id);
	while (more == 1)
		more = trace_take(&t, x, cmd);
	if (more < 0)
		goto fail;
	if (x->json) {
		trace_json(&t, id, secs);
	} else {
		if (!x->o) {
			snprintf(def, sizeof(def), "trace-%s", id);
			x->o = def;
		}
		snprintf(file, sizeof(file), "%s.csv", x->o);
		if (trace_csv(&t, file))
			goto fail;
		trace_png(&t, x->o, id);
		printf("%zu events of connection %s in %s (%llu dropped past the ring)\n", t.n, id,
		       file, t.dropped);
	}
	free(t.v);
	return 0;
fail:
	free(t.v);
	return 1;
}

/* ---- main ---- */

/* The command that words name (obj [verb]); a lone obj means its "list". *used gets the
 * words taken. NULL: none. */
static const struct cmd *find(char **w, int n, int *used)
{
	const struct cmd *list = NULL;

	for (size_t i = 0; n >= 1 && i < NCMDS; i++) {
		const struct cmd *c = &cmds[i];

		if (strcmp(c->obj, w[0]))
			continue;
		if (!c->verb) {
			*used = 1;
			return c;
		}
		if (n >= 2 && !strcmp(c->verb, w[1])) {
			*used = 2;
			return c;
		}
		if (!strcmp(c->verb, "list"))
			list = c;
	}
	*used = 1;
	return n == 1 ? list : NULL;
}

static int known_obj(const char *w)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].obj, w))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { "socket", required_argument, NULL, 's' },
		{ "runtime-dir", required_argument, NULL, 'r' }, { "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' }, { "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = getenv("FALCON_ADMIN_SOCKET");
	struct ctx x = { 0 };
	const struct cmd *c;
	int o, help = 0, used, nargs;

	snprintf(x.path, sizeof(x.path), "%s", sock && *sock ? sock : ADMIN_DEFAULT);
	/* options anywhere (GNU getopt permutes): falconctl conn list -o id,state -r DIR */
	while ((o = getopt_long(argc, argv, "js:r:o:hV", lo, NULL)) != -1) {
		switch (o) {
		case 'j': x.json = 1; break;
		case 's': snprintf(x.path, sizeof(x.path), "%s", optarg); break;
		case 'r': snprintf(x.path, sizeof(x.path), "%s/falconctl.sock", optarg); break;
		case 'o': x.o = optarg; break;
		case 'h': help = 1; break;
		case 'V': printf("falconctl %s\n", FALCON_RELEASE); return 0;
		default: usage(stderr); return 2;
		}
	}
	argv += optind;
	argc -= optind;
	c = find(argv, argc, &used);
	if (help) { /* the deepest help the words name */
		if (c && (used == 2 || !c->verb))
			cmd_help(c);
		else if (argc >= 1 && known_obj(argv[0]))
			obj_help(argv[0]);
		else
			usage(stdout);
		return 0;
	}
	if (!c) {
		if (argc && known_obj(argv[0]))
			fprintf(stderr, "falconctl: %s: no command %s (falconctl %s --help)\n",
				argv[0], argc > 1 ? argv[1] : "given", argv[0]);
		else
			usage(stderr);
		return 2;
	}
	nargs = argc - used;
	if (nargs < c->nargs_min || nargs > c->nargs_max) {
		fprintf(stderr, "usage: falconctl [OPTIONS] %s%s%s %s\n", c->obj, c->verb ? " " : "",
			c->verb ? c->verb : "", c->args);
		return 2;
	}
	return c->run(c, &x, argv + used, nargs);
}
