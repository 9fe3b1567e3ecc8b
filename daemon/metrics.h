/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h - falcond --metrics ADDR:PORT: GET /metrics in the Prometheus text format,
 * served by libmicrohttpd in a thread of its own.
 *
 * The thread never touches the engine or any state of the loop: each scrape asks the
 * daemon's own admin socket for its JSON, as falconctl does, and renders it (prom.h
 * says why this keeps the engine single-threaded). Bounds: MHD serves at most
 * FD_METRICS_CONNS connections at once, FD_METRICS_PER_IP per client address, drops one
 * idle for FD_METRICS_IDLE_S; a scrape waits at most FD_METRICS_ASK_MS for each of the
 * loop's answers (a stalled loop makes the scrape a 503, never a pile of threads).
 */
#ifndef FD_METRICS_H
#define FD_METRICS_H

#define FD_METRICS_CONNS 8
#define FD_METRICS_PER_IP 4
#define FD_METRICS_IDLE_S 10
#define FD_METRICS_ASK_MS 2000

struct fd_metrics;

/* "ADDR:PORT", "[ADDR6]:PORT" or ":PORT" (every address): 0, or -EINVAL. */
int fd_metrics_parse(const char *spec);

/* Serve spec's address, reading the daemon at admin_path (copied). Returns the server, or
 * NULL with errno set (EINVAL: a bad spec; what bind or MHD said otherwise) and the
 * reason logged. */
struct fd_metrics *fd_metrics_start(const char *spec, const char *admin_path);
void fd_metrics_stop(struct fd_metrics *m);

#endif
