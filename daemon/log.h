/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - falcond's logging: one line per event on stderr (systemd's journal takes it
 * from there), prefixed with the level as sd-daemon's "<N>" when stderr is the journal
 * (JOURNAL_STREAM names stderr's device and inode), else with the date and time in ISO
 * 8601 with the zone (2026-11-26T14:03:05.123+01:00) and the level's name. Levels as
 * syslog's.
 *
 * Repeats are rate-limited (a peer retrying a refused handshake ten times a second must
 * not fill the journal): a line identical to one logged from the same place less than
 * FC_LOG_WINDOW_S ago is not written but counted, and when that window ends the line is
 * written once more with the count, "... (repeated 57 times in the last 10 s)". At most
 * FC_LOG_KEYS different lines are followed at once; lines beyond them while the table is
 * full of repeating ones are counted and summarised ("N other lines suppressed ..."). A
 * line that changes each time (a flood from ever new source ports) is no repeat: for
 * warnings and errors each call site also writes at most FC_LOG_SITE_LINES different
 * lines per window, then one "... (and 12 more lines like it in the last 10 s)".
 * Debug lines are never held back. Summaries of windows that ended are written by the
 * next fc_log call or by fc_log_flush (the daemon's loop calls it every second and at
 * exit).
 */
#ifndef FC_LOG_H
#define FC_LOG_H

#include <stdint.h>

enum fc_log_level { FC_LOG_ERR = 3, FC_LOG_WARN = 4, FC_LOG_INFO = 6, FC_LOG_DEBUG = 7 };

#define FC_LOG_WINDOW_S 10u  /* a repeated line is written at most once per window */
#define FC_LOG_KEYS 64u      /* distinct lines followed at once */
#define FC_LOG_SITE_LINES 20u /* different warnings per call site and window */

extern int fc_log_level; /* lines above it are not written; default FC_LOG_INFO */

/* "error", "warn", "info", "debug" -> level; -1 for anything else. */
int fc_log_parse_level(const char *s);

void fc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write the summaries of windows that have ended (all: of every window, ended or not, as
 * at exit). Returns the summary lines written. */
unsigned fc_log_flush(int all);

#define LOG_E(...) fc_log(FC_LOG_ERR, __VA_ARGS__)
#define LOG_W(...) fc_log(FC_LOG_WARN, __VA_ARGS__)
#define LOG_I(...) fc_log(FC_LOG_INFO, __VA_ARGS__)
#define LOG_D(...) do { if (fc_log_level >= FC_LOG_DEBUG) fc_log(FC_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
