/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - falcond's stderr logging (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

void fc_log(int level, const char *fmt, ...)
{
	static int journal = -1;
	char line[1024];
	va_list ap;
	int n;

	if (level > fc_log_level)
		return;
	if (journal < 0)
		journal = getenv("JOURNAL_STREAM") != NULL;
	if (journal) {
		n = snprintf(line, sizeof(line), "<%d>", level);
	} else {
		struct timespec ts;
		struct tm tm;
		static const char *const lvl[8] = { "", "", "", "error", "warn", "", "info", "debug" };

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld %s: ", tm.tm_hour, tm.tm_min,
			     tm.tm_sec, ts.tv_nsec / 1000000, lvl[level & 7]);
	}
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}
