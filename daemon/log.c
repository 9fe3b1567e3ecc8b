/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - falcond's stderr logging (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

int fc_log_level = FC_LOG_INFO;

int fc_log_parse_level(const char *s)
{
	static const struct { const char *name; int level; } names[] = {
		{ "error", FC_LOG_ERR }, { "warn", FC_LOG_WARN },
		{ "info", FC_LOG_INFO }, { "debug", FC_LOG_DEBUG },
	};

	for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name))
			return names[i].level;
	return -1;
}

/* Is stderr the journal's stream? systemd names it in JOURNAL_STREAM as "DEV:INO"; a
 * child that inherited the variable but writes elsewhere (a shell redirect, a pipe) must
 * not get sd-daemon's "<N>" prefixes (sd_journal_stream_fd(3)). */
static int stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* ISO 8601 local time with milliseconds and the zone: 2026-11-26T14:03:05.123+01:00. */
static int iso8601(char *buf, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	char zone[8];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(zone, sizeof(zone), "%z", &tm); /* +0100 */
	return snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ld%.3s:%.2s",
			tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			tm.tm_sec, ts.tv_nsec / 1000000, zone, zone + 3);
}

void fc_log(int level, const char *fmt, ...)
{
	static int journal = -1;
	char line[1024];
	va_list ap;
	int n;

	if (level > fc_log_level)
		return;
	if (journal < 0)
		journal = stderr_is_journal();
	if (journal) {
		n = snprintf(line, sizeof(line), "<%d>", level);
	} else {
		static const char *const lvl[8] = { "", "", "", "error", "warn", "", "info", "debug" };

		n = iso8601(line, sizeof(line));
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s: ", lvl[level & 7]);
	}
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}
