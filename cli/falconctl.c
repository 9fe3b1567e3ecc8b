/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falconctl - ask a running falcond about itself (its admin socket, daemon/admin.c).
 *
 *   falconctl [-j] [-s SOCKET | -r RUNDIR] OBJECT COMMAND [ARG]
 *     status | peer list | conn list | conn show ID | qp list | mr list | client list | stats
 *   falconctl [-j] key generate [-o FILE] | key show FILE
 *
 * The key commands need no daemon: they write a new identity key (the connection
 * manager's static X25519 key, daemon/hs.h) to a file of mode 0600 and print its public
 * key in base64, the form the peers' configs name it in, or print the public key of a
 * key file.
 * The daemon answers with JSON; -j prints it as it is, otherwise it is drawn as tables
 * (lists) and "key: value" lines (objects). Exit status: 0 done, 1 the daemon refused the
 * command, 2 the daemon could not be reached (not running?) or answered nonsense.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>

#include "hs.h"
#include "plot.h"

#define ANSWER_MAX (2u << 20)
#define DEPTH_MAX 8
#define COLS_MAX 32
#define KEY_FILE_DEFAULT "/etc/falcon/falcond.key"

/* ---- a small JSON reader: enough for what falcond writes ---- */

enum jt { J_OBJ, J_ARR, J_STR, J_LIT };

struct jv {
	enum jt t;
	char *s;              /* J_STR / J_LIT: the text; member name in an object */
	char *key;
	struct jv *kid, *next;
};

static struct jv *jparse(char **p, int depth);

static void skip(char **p)
{
	while (**p == ' ' || **p == '\n' || **p == '\t' || **p == '\r')
		(*p)++;
}

static char *jstr(char **p)
{
	char *out = ++*p, *w = out; /* unescape in place */

	while (**p && **p != '"') {
		if (**p == '\\' && (*p)[1]) {
			(*p)++;
			if (**p == 'u') {
				*w++ = '?';
				*p += 4 < strlen(*p) ? 4 : strlen(*p) - 1;
			} else {
				*w++ = **p == 'n' ? '\n' : **p;
			}
			(*p)++;
			continue;
		}
		*w++ = *(*p)++;
	}
	if (**p != '"')
		return NULL;
	(*p)++;
	*w = 0;
	return out;
}

static struct jv *jparse(char **p, int depth)
{
	struct jv *v = calloc(1, sizeof(*v)), **tail;

	if (!v || depth > DEPTH_MAX)
		return NULL;
	skip(p);
	if (**p == '{' || **p == '[') {
		char close = **p == '{' ? '}' : ']';

		v->t = **p == '{' ? J_OBJ : J_ARR;
		(*p)++;
		tail = &v->kid;
		skip(p);
		if (**p == close) {
			(*p)++;
			return v;
		}
		for (;;) {
			char *key = NULL;
			struct jv *k;

			skip(p);
			if (v->t == J_OBJ) {
				if (**p != '"' || !(key = jstr(p)))
					return NULL;
				skip(p);
				if (*(*p)++ != ':')
					return NULL;
			}
			if (!(k = jparse(p, depth + 1)))
				return NULL;
			k->key = key;
			*tail = k;
			tail = &k->next;
			skip(p);
			if (**p == ',') {
				(*p)++;
				continue;
			}
			if (**p == close) {
				(*p)++;
				return v;
			}
			return NULL;
		}
	}
	if (**p == '"') {
		v->t = J_STR;
		return (v->s = jstr(p)) ? v : NULL;
	}
	v->t = J_LIT;
	{
		const char *start = *p;

		while (**p && !strchr(",}] \n\t\r", **p))
			(*p)++;
		if (*p == start)
			return NULL;
		v->s = strndup(start, (size_t)(*p - start));
	}
	return v->s ? v : NULL;
}

static void jfree(struct jv *v)
{
	while (v) {
		struct jv *n = v->next;

		jfree(v->kid);
		if (v->t == J_LIT)
			free(v->s); /* strings point into the answer; literals are copies */
		free(v);
		v = n;
	}
}

static int scalar(const struct jv *v)
{
	return v->t == J_STR || v->t == J_LIT;
}

/* A list of objects as a table: columns from the first row's scalar members. */
static void table(const struct jv *arr, int indent)
{
	const char *col[COLS_MAX];
	size_t w[COLS_MAX];
	int ncol = 0;

	if (!arr->kid) {
		printf("%*s(none)\n", indent, "");
		return;
	}
	for (const struct jv *m = arr->kid->kid; m && ncol < COLS_MAX; m = m->next)
		if (scalar(m)) {
			col[ncol] = m->key;
			w[ncol++] = strlen(m->key);
		}
	for (const struct jv *r = arr->kid; r; r = r->next)
		for (const struct jv *m = r->kid; m; m = m->next)
			for (int c = 0; c < ncol; c++)
				if (scalar(m) && !strcmp(m->key, col[c]) && strlen(m->s) > w[c])
					w[c] = strlen(m->s);
	printf("%*s", indent, "");
	for (int c = 0; c < ncol; c++) {
		for (const char *k = col[c]; *k; k++)
			putchar(*k == '_' ? ' ' : *k >= 'a' && *k <= 'z' ? *k - 32 : *k);
		printf("%*s", (int)(w[c] - strlen(col[c]) + 2), "");
	}
	putchar('\n');
	for (const struct jv *r = arr->kid; r; r = r->next) {
		printf("%*s", indent, "");
		for (int c = 0; c < ncol; c++) {
			const char *s = "-";

			for (const struct jv *m = r->kid; m; m = m->next)
				if (scalar(m) && !strcmp(m->key, col[c]))
					s = m->s;
			printf("%-*s  ", (int)w[c], s);
		}
		putchar('\n');
	}
}

static void render(const struct jv *v, int indent)
{
	if (v->t == J_ARR) {
		if (v->kid && v->kid->t == J_OBJ) {
			table(v, indent);
		} else {
			for (const struct jv *m = v->kid; m; m = m->next)
				printf("%*s%s\n", indent, "", scalar(m) ? m->s : "...");
		}
		return;
	}
	if (v->t != J_OBJ) {
		printf("%*s%s\n", indent, "", v->s);
		return;
	}
	for (const struct jv *m = v->kid; m; m = m->next) {
		if (scalar(m)) {
			printf("%*s%s: %s\n", indent, "", m->key, m->s);
		} else {
			printf("%*s%s:\n", indent, "", m->key);
			render(m, indent + 2);
		}
	}
}

/* ---- identity keys (no daemon involved) ---- */

/* key generate [-o FILE] | key show FILE. Exit status: 0 done, 1 refused (the file
 * exists, is not private, is not a key), 2 usage. */
static int key_cmd(int argc, char **argv, const char *out_path, int json)
{
	char b64[FC_HS_B64_LEN], err[512];
	struct fc_hs_key k;
	int rc;

	if (argc == 2 && !strcmp(argv[1], "generate")) {
		const char *path = out_path ? out_path : KEY_FILE_DEFAULT;

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
	} else if (argc == 3 && !strcmp(argv[1], "show") && !out_path) {
		rc = fc_hs_key_load(argv[2], &k, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "falconctl: %s\n", err);
			return 1;
		}
	} else {
		fprintf(stderr, "usage: falconctl [-j] key generate [-o FILE] | key show FILE\n");
		return 2;
	}
	fc_hs_pub_to_base64(k.pub, b64);
	sodium_memzero(&k, sizeof(k));
	if (json)
		printf("{\"public_key\":\"%s\"}\n", b64);
	else
		printf("%s\n", b64);
	return 0;
}

/* ---- talking to the daemon ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: falconctl [-j] [-s SOCKET | -r RUNDIR] OBJECT COMMAND [ID]\n"
		"  status                 the daemon: addresses, security mode, clients, connections\n"
		"  peer list              peer daemons seen by the connection manager\n"
		"  conn list              Falcon connections: state, CIDs, QPs, fcwnd, ncwnd, RTO, counters\n"
		"  conn show ID           one connection\n"
		"  conn trace ID [SECS]   record its CC events (time, RTT, delay, fcwnd, ncwnd, RTO,\n"
		"                         retransmits) for SECS (5) into PREFIX.csv (-o PREFIX)\n"
		"  qp list | mr list | client list\n"
		"  stats                  counters: drops and errors per reason, per layer\n"
		"  xdp                    --io xdp: the attached program (id, interface, mode), its\n"
		"                         counters by name, each open connection's windows in\n"
		"                         falcon_conns (bases, bits received, OWN) and counters\n"
		"  key generate [-o FILE] a new identity key in FILE (mode 0600; default\n"
		"                         " KEY_FILE_DEFAULT "); prints its public key\n"
		"  key show FILE          the public key of a key file (base64)\n"
		"  key rotate             new PSP keys now (the daemon; without loss)\n"
		"  -j, --json             print the daemon's JSON as it is\n"
		"  -s, --socket PATH      admin socket (default $FALCON_ADMIN_SOCKET or\n"
		"                         /run/falcon/falconctl.sock)\n"
		"  -r, --runtime-dir DIR  the daemon's --runtime-dir\n");
}

/* Send one command line, read the whole answer (NUL-terminated, malloc'd into *ans).
 * Returns 0, or 2 with the reason printed. */
static int ask(const char *path, const char *cmd, char **ans)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	size_t len = 0;
	int fd;

	if (strlen(path) >= sizeof(un.sun_path))
		return 2;
	strcpy(un.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
		fprintf(stderr, "falconctl: cannot reach falcond at %s: %s (is falcond running?)\n",
			path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 2;
	}
	if (write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd)) {
		fprintf(stderr, "falconctl: %s: %s\n", path, strerror(errno));
		close(fd);
		return 2;
	}
	if (!(*ans = malloc(ANSWER_MAX + 1))) {
		close(fd);
		return 2;
	}
	for (;;) {
		ssize_t n = read(fd, *ans + len, ANSWER_MAX - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	(*ans)[len] = 0;
	if (!len) {
		fprintf(stderr, "falconctl: falcond at %s closed without an answer\n", path);
		free(*ans);
		return 2;
	}
	return 0;
}

/* conn trace ID [SECONDS]: record the connection's CC events for SECONDS (default 5),
 * then write PREFIX.csv (-o PREFIX; default trace-ID) and print a summary. */
static int trace_cmd(const char *path, const char *id, const char *secs_s, const char *prefix)
{
	char cmd[96], def[64], file[300], *ans = NULL, *p;
	long secs = secs_s ? strtol(secs_s, NULL, 10) : 5;
	struct jv *v, *tr = NULL, *ev;
	unsigned rows = 0;
	FILE *f;
	int rc;

	if (secs < 1 || secs > 3600) {
		fprintf(stderr, "falconctl: conn trace: SECONDS from 1 to 3600\n");
		return 2;
	}
	if (!prefix) {
		snprintf(def, sizeof(def), "trace-%s", id);
		prefix = def;
	}
	snprintf(cmd, sizeof(cmd), "conn trace %s start\n", id);
	if ((rc = ask(path, cmd, &ans)))
		return rc;
	if (strstr(ans, "{\"error\":") == ans) {
		fprintf(stderr, "falconctl: %s", ans);
		free(ans);
		return 1;
	}
	free(ans);
	fprintf(stderr, "falconctl: tracing connection %s for %ld s\n", id, secs);
	sleep((unsigned)secs);
	snprintf(cmd, sizeof(cmd), "conn trace %s stop\n", id);
	if ((rc = ask(path, cmd, &ans)))
		return rc;
	p = ans;
	if (!(v = jparse(&p, 0)) || strstr(ans, "{\"error\":") == ans) {
		fprintf(stderr, "falconctl: %s\n", v ? ans : "could not read the daemon's answer");
		free(ans);
		return 1;
	}
	for (struct jv *k = v->kid; k; k = k->next)
		if (k->key && !strcmp(k->key, "trace"))
			tr = k;
	snprintf(file, sizeof(file), "%s.csv", prefix);
	if (!tr || !(f = fopen(file, "w"))) {
		fprintf(stderr, "falconctl: %s: %s\n", file, tr ? strerror(errno) : "no trace");
		jfree(v);
		free(ans);
		return 1;
	}
	fprintf(f, "t_s,event,rtt_us,delay_us,fcwnd,ncwnd,rto_us,retx,nack_code\n");
	for (ev = tr->kid; ev; ev = ev->next)
		rows++;
	double *col = rows ? calloc((size_t)rows * 6, sizeof(double)) : NULL;
	unsigned r = 0;

	for (ev = tr->kid; ev; ev = ev->next, r++) {
		static const char *const type[] = { "ack", "nack", "retx", "?" };
		int i = 0;

		for (struct jv *x = ev->kid; x; x = x->next, i++) {
			/* t, rtt, delay, fcwnd, ncwnd, rto for the plot */
			static const int slot[] = { 0, -1, 1, 2, 3, 4, 5, -1, -1 };

			if (col && i < 9 && slot[i] >= 0)
				col[(size_t)slot[i] * rows + r] = strtod(x->s ? x->s : "0", NULL);
			if (i == 1) {
				unsigned t = (unsigned)strtoul(x->s ? x->s : "3", NULL, 10);

				fprintf(f, ",%s", type[t < 3 ? t : 3]);
			} else {
				fprintf(f, "%s%s", i ? "," : "", x->s ? x->s : "");
			}
		}
		fputc('\n', f);
	}
	fclose(f);
	if (col) { /* the plot: times on the left axis, windows on the right */
		static const char *const name[] = { "RTT us", "fabric delay us", "fcwnd", "ncwnd",
						    "RTO us" };
		static const uint32_t rgb[] = { 0x1f77b4, 0xff7f0e, 0x2ca02c, 0x9467bd, 0xd62728 };
		struct fc_plot_series ps[5];
		char png[300], title[96];

		for (int k = 0; k < 5; k++)
			ps[k] = (struct fc_plot_series){ .name = name[k], .x = col,
							 .y = col + (size_t)(k + 1) * rows,
							 .n = rows, .rgb = rgb[k],
							 .right_axis = k == 2 || k == 3 };
		snprintf(png, sizeof(png), "%s.png", prefix);
		snprintf(title, sizeof(title), "connection %s: congestion control", id);
		rc = fc_plot_png(png, title, "time (s)", "microseconds", "packets", ps, 5, 1000, 600);
		if (rc)
			fprintf(stderr, "falconctl: %s: %s\n", png, strerror(-rc));
		else
			printf("plot in %s\n", png);
		free(col);
	}
	{
		const char *dropped = "0";

		for (struct jv *k = v->kid; k; k = k->next)
			if (k->key && !strcmp(k->key, "dropped") && k->s)
				dropped = k->s;
		printf("%u events of connection %s in %s (%s more not recorded: the daemon keeps "
		       "8192)\n", rows, id, file, dropped);
	}
	jfree(v);
	free(ans);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { "socket", required_argument, NULL, 's' },
		{ "runtime-dir", required_argument, NULL, 'r' }, { "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)], cmd[256] = "";
	const char *sock = getenv("FALCON_ADMIN_SOCKET"), *out_path = NULL;
	int json = 0, o;
	char *ans, *p;
	struct jv *v;

	snprintf(path, sizeof(path), "%s", sock && *sock ? sock : "/run/falcon/falconctl.sock");
	while ((o = getopt_long(argc, argv, "js:r:o:h", lo, NULL)) != -1) {
		switch (o) {
		case 'j': json = 1; break;
		case 's': snprintf(path, sizeof(path), "%s", optarg); break;
		case 'r': snprintf(path, sizeof(path), "%s/falconctl.sock", optarg); break;
		case 'o': out_path = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 < argc && !strcmp(argv[optind], "key") && strcmp(argv[optind + 1], "rotate"))
		return key_cmd(argc - optind, argv + optind, out_path, json);
	if (argc - optind >= 3 && !strcmp(argv[optind], "conn") && !strcmp(argv[optind + 1], "trace"))
		return trace_cmd(path, argv[optind + 2], argc - optind >= 4 ? argv[optind + 3] : NULL,
				 out_path);
	if (optind >= argc || out_path) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		if (strlen(cmd) + strlen(argv[i]) + 2 >= sizeof(cmd)) {
			fprintf(stderr, "falconctl: command too long\n");
			return 2;
		}
		strcat(cmd, argv[i]);
		strcat(cmd, i + 1 < argc ? " " : "\n");
	}
	/* "falconctl status", "stats" and "xdp" are one word; lists default to "list" */
	if (argc - optind == 1 && strcmp(argv[optind], "status") && strcmp(argv[optind], "stats") &&
	    strcmp(argv[optind], "xdp")) {
		cmd[strlen(cmd) - 1] = 0;
		strcat(cmd, " list\n");
	}
	if ((o = ask(path, cmd, &ans)))
		return o;
	int refused = strstr(ans, "{\"error\":") == ans;

	if (json) {
		fputs(ans, stdout);
		free(ans);
		return refused;
	}
	p = ans;
	v = jparse(&p, 0);
	if (!v) {
		fprintf(stderr, "falconctl: could not read the daemon's answer\n");
		free(ans);
		return 2;
	}
	if (refused)
		fprintf(stderr, "falconctl: %s\n", v->kid && v->kid->s ? v->kid->s : "error");
	else
		render(v, 0);
	jfree(v);
	free(ans);
	return refused;
}
