/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - falcond's logging: one line per event on stderr (systemd's journal takes it
 * from there), prefixed with the level as sd-daemon's "<N>" when stderr is the journal
 * (JOURNAL_STREAM names stderr's device and inode), else with the date and time in ISO
 * 8601 with the zone (2026-11-26T14:03:05.123+01:00) and the level's name. Levels as
 * syslog's.
 */
#ifndef FC_LOG_H
#define FC_LOG_H

enum fc_log_level { FC_LOG_ERR = 3, FC_LOG_WARN = 4, FC_LOG_INFO = 6, FC_LOG_DEBUG = 7 };

extern int fc_log_level; /* lines above it are not written; default FC_LOG_INFO */

/* "error", "warn", "info", "debug" -> level; -1 for anything else. */
int fc_log_parse_level(const char *s);

void fc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_E(...) fc_log(FC_LOG_ERR, __VA_ARGS__)
#define LOG_W(...) fc_log(FC_LOG_WARN, __VA_ARGS__)
#define LOG_I(...) fc_log(FC_LOG_INFO, __VA_ARGS__)
#define LOG_D(...) do { if (fc_log_level >= FC_LOG_DEBUG) fc_log(FC_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
