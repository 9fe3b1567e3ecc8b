/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c - falcond's /metrics over libmicrohttpd (metrics.h). */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "log.h"
#include "metrics.h"
#include "prom.h"

struct fd_metrics {
	struct MHD_Daemon *mhd;
	char *admin_path;
	struct sockaddr_storage ss;
};

static const char index_page[] =
	"<html><head><title>falcond</title></head><body><h1>falcond</h1>"
	"<p><a href=\"/metrics\">/metrics</a></p></body></html>\n";

/* Split spec into host (NULL: every address) and port. Returns 0 or -EINVAL. */
static int split(const char *spec, char *host, size_t cap, const char **port)
{
	const char *colon;

	if (spec[0] == '[') {
		const char *end = strchr(spec, ']');

		if (!end || end[1] != ':' || (size_t)(end - spec - 1) >= cap)
			return -EINVAL;
		memcpy(host, spec + 1, (size_t)(end - spec - 1));
		host[end - spec - 1] = 0;
		*port = end + 2;
	} else {
		if (!(colon = strrchr(spec, ':')) || (size_t)(colon - spec) >= cap)
			return -EINVAL;
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = 0;
		*port = colon + 1;
	}
	return **port ? 0 : -EINVAL;
}

static int resolve(const char *spec, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai;
	const char *port;
	char host[64];

	if (split(spec, host, sizeof(host), &port))
		return -EINVAL;
	if (!host[0])
		hints.ai_family = AF_INET6; /* ":PORT": every address, v4-mapped too */
	if (getaddrinfo(host[0] ? host : NULL, port, &hints, &ai))
		return -EINVAL;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

int fd_metrics_parse(const char *spec)
{
	struct sockaddr_storage ss;

	return resolve(spec, &ss);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result rc;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* GET /metrics: the daemon's state now; GET /: a link to it; anything else 404 / 405. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **req)
{
	struct fd_metrics *m = cls;
	static char not_found[] = "not found: try /metrics\n", no_method[] = "GET only\n";
	char *text = NULL, why[160];
	size_t len = 0;
	int rc;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)req;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", no_method,
			     sizeof(no_method) - 1, MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/"))
		return reply(c, MHD_HTTP_OK, "text/html", (void *)index_page,
			     sizeof(index_page) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", not_found,
			     sizeof(not_found) - 1, MHD_RESPMEM_PERSISTENT);
	rc = fc_prom_scrape(m->admin_path, FD_METRICS_ASK_MS, &text, &len);
	if (rc) {
		int n = snprintf(why, sizeof(why), "falcond did not answer: %s\n", strerror(-rc));

		return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", why, (size_t)n,
			     MHD_RESPMEM_MUST_COPY);
	}
	return reply(c, MHD_HTTP_OK, FC_PROM_CONTENT_TYPE, text, len, MHD_RESPMEM_MUST_FREE);
}

struct fd_metrics *fd_metrics_start(const char *spec, const char *admin_path)
{
	struct fd_metrics *m = calloc(1, sizeof(*m));
	sigset_t all, old;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;

	if (!m || !(m->admin_path = strdup(admin_path))) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	if (resolve(spec, &m->ss)) {
		LOG_E("falcond: --metrics %s: not ADDR:PORT, [ADDR6]:PORT or :PORT", spec);
		fd_metrics_stop(m);
		errno = EINVAL;
		return NULL;
	}
	if (m->ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the server's thread takes no signal: they are the loop's (libev) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	m->mhd = MHD_start_daemon(flags, 0, NULL, NULL, handle, m,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&m->ss,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)FD_METRICS_CONNS,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)FD_METRICS_PER_IP,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)FD_METRICS_IDLE_S,
				  MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!m->mhd) {
		int e = errno ? errno : EADDRNOTAVAIL;

		LOG_E("falcond: --metrics %s: cannot serve there: %s", spec, strerror(e));
		fd_metrics_stop(m);
		errno = e;
		return NULL;
	}
	LOG_I("falcond: metrics on http://%s/metrics", spec);
	return m;
}

void fd_metrics_stop(struct fd_metrics *m)
{
	if (!m)
		return;
	if (m->mhd)
		MHD_stop_daemon(m->mhd);
	free(m->admin_path);
	free(m);
}
