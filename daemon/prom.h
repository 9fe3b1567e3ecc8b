/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom.h - falcond's state in the Prometheus text exposition format (version 0.0.4), made
 * from the JSON of its admin socket: `falconctl stats -o prometheus` and the /metrics of
 * `falcond --metrics ADDR:PORT` (metrics.c) print the same text from the same code.
 *
 * Why from the admin socket's JSON, in the reader's thread: the engine stays
 * single-threaded and lock-free. The loop answers four admin commands (status, stats,
 * peer list, conn list) exactly as it answers falconctl, one bounded piece of work per
 * command, and never learns that a scraper exists; the text, the HTTP and slow scrapers
 * cost the metrics thread (or falconctl), not the loop. A snapshot taken by the loop for
 * another thread would cost the loop the same copying and add a lock or a second copy of
 * every counter.
 *
 * Families (names, units and labels by Prometheus conventions: base units, _total on
 * counters, snake_case):
 *   falcond_info{version,io,security,cc,rue,poll} 1, falcond_uptime_seconds,
 *   falcond_clients, falcond_connections, falcond_mtu_bytes
 *   falcon_node_rx_drops_total{reason}, falcon_node_tx_drops_total{reason}, and every
 *     other number of `falconctl stats` as falcon_SECTION_KEY_total (counters) or
 *     falcon_SECTION_KEY (the few gauges), _ns/_us/_ms/_s keys in seconds, objects of
 *     numbers (cm.hs_refused) as one family with a reason label
 *   per peer {peer}: falcon_peer_connections, falcon_peer_session_up,
 *     falcon_peer_rejects_total, falcon_peer_restarts_total, falcon_peer_handshakes_total,
 *     falcon_peer_last_seen_age_seconds
 *   per connection {conn,peer,local_cid}: falcon_conn_info{...,kind,role,state,...} 1,
 *     falcon_conn_{tx,rx}_bytes_total, falcon_conn_{tx,rx}_packets_total,
 *     falcon_conn_retransmits_total{reason}, falcon_conn_drops_total{reason},
 *     falcon_conn_rtt_seconds (smoothed), falcon_conn_rto_seconds,
 *     falcon_conn_fcwnd_packets, falcon_conn_ncwnd_packets,
 *     falcon_conn_outstanding_packets{window}, falcon_conn_acks_sent_total,
 *     falcon_conn_nacks_sent_total
 */
#ifndef FC_PROM_H
#define FC_PROM_H

#include <stddef.h>

#include "jread.h"

#define FC_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The text for the four documents (any may be NULL: its families are left out) into
 * *text (malloc'd, NUL-terminated; the caller frees it) and *len. Returns 0 or -ENOMEM. */
int fc_prom_render(const struct fc_jv *status, const struct fc_jv *stats,
		   const struct fc_jv *peers, const struct fc_jv *conns, char **text,
		   size_t *len);

/* Ask the falcond behind admin_path for the four documents (each within timeout_ms) and
 * render them. Returns 0, -ECONNREFUSED / -ENOENT / ... when the daemon cannot be
 * reached, -ETIMEDOUT, -EBADMSG for an answer that is not JSON or is an error, -ENOMEM. */
int fc_prom_scrape(const char *admin_path, int timeout_ms, char **text, size_t *len);

/* One admin command (a line, '\n' added) to the daemon at path; its whole answer into
 * *ans (malloc'd, NUL-terminated; at most FC_ADMIN_ANSWER_MAX bytes). Each wait for the
 * socket is bounded by timeout_ms (< 0: none). Returns 0 or -errno (-ETIMEDOUT,
 * -EMSGSIZE for an answer past the bound, -ENODATA for none). */
#define FC_ADMIN_ANSWER_MAX (8u << 20)
int fc_admin_ask(const char *path, const char *cmd, int timeout_ms, char **ans);

#endif
