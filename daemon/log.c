/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - falcond's stderr logging, repeats rate-limited (log.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define LINE_MAX_BYTES 1024u
#define WINDOW_NS ((uint64_t)FC_LOG_WINDOW_S * 1000000000ull)

int fc_log_level = FC_LOG_INFO;

/* A line followed for repeats: where it was logged from (the format) and its text. */
struct key {
	const char *fmt;          /* NULL: a free entry */
	uint64_t hash;            /* of the text */
	uint64_t start_ns;        /* its window began (the line was written then) */
	uint32_t repeats;         /* held back since */
	int level;
	char text[LINE_MAX_BYTES];
};

static struct {
	pthread_mutex_t lock;
	struct key keys[FC_LOG_KEYS];
	uint64_t other_start_ns;  /* lines held back because every key was busy */
	uint32_t other;
	int other_level;
} lg = { .lock = PTHREAD_MUTEX_INITIALIZER };

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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
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

/* One line on stderr with its prefix (the caller holds the lock). */
static void emit(int level, const char *text, const char *suffix)
{
	static int journal = -1;
	char pre[64];

	if (journal < 0)
		journal = stderr_is_journal();
	if (journal) {
		snprintf(pre, sizeof(pre), "<%d>", level);
	} else {
		static const char *const lvl[8] = { "", "", "", "error", "warn", "", "info", "debug" };
		int n = iso8601(pre, sizeof(pre));

		snprintf(pre + n, sizeof(pre) - (size_t)n, " %s: ", lvl[level & 7]);
	}
	fprintf(stderr, "%s%s%s\n", pre, text, suffix);
}

/* Seconds a window has run, as the summary says it (at least 1, at most the window). */
static unsigned span_s(uint64_t start_ns, uint64_t now)
{
	uint64_t s = (now - start_ns + 999999999ull) / 1000000000ull;

	return s < 1 ? 1 : s > FC_LOG_WINDOW_S ? FC_LOG_WINDOW_S : (unsigned)s;
}

/* The summary of key k, which then follows nothing (the lock held). */
static unsigned close_key(struct key *k, uint64_t now)
{
	char suffix[64];

	if (k->repeats) {
		snprintf(suffix, sizeof(suffix), " (repeated %u time%s in the last %u s)", k->repeats,
			 k->repeats == 1 ? "" : "s", span_s(k->start_ns, now));
		emit(k->level, k->text, suffix);
	}
	k->fmt = NULL;
	return k->repeats != 0;
}

static unsigned flush_sites(int all, uint64_t now);

static unsigned flush_locked(int all, uint64_t now)
{
	unsigned n = flush_sites(all, now);

	for (uint32_t i = 0; i < FC_LOG_KEYS; i++)
		if (lg.keys[i].fmt && (all || now - lg.keys[i].start_ns >= WINDOW_NS))
			n += close_key(&lg.keys[i], now);
	if (lg.other && (all || now - lg.other_start_ns >= WINDOW_NS)) {
		char text[96];

		snprintf(text, sizeof(text), "log: %u other line%s suppressed in the last %u s "
			 "(too many different repeated lines)", lg.other, lg.other == 1 ? "" : "s",
			 span_s(lg.other_start_ns, now));
		emit(lg.other_level, text, "");
		lg.other = 0;
		n++;
	}
	return n;
}

unsigned fc_log_flush(int all)
{
	unsigned n;

	pthread_mutex_lock(&lg.lock);
	n = flush_locked(all, mono_ns());
	pthread_mutex_unlock(&lg.lock);
	return n;
}

/* A call site's distinct warnings and errors in the current window (another cap, for
 * lines that differ each time: a flood from ever new source ports). */
struct site {
	const char *fmt;
	uint64_t start_ns;
	uint32_t lines, held;
	int level;
	char last[LINE_MAX_BYTES];  /* the last line held back */
};

static struct site sites[FC_LOG_KEYS];

/* Whether text (from fmt) is written now: 1 = write it (a new window began), 0 = held
 * back and counted (the lock held; windows that ended were flushed just before). A key
 * whose line has not repeated makes room for a new one: only repeats are held back. */
static int admit(int level, const char *fmt, const char *text, uint64_t now)
{
	uint64_t h = fnv1a(text);
	struct key *free_k = NULL, *spare = NULL;

	for (uint32_t i = 0; i < FC_LOG_KEYS; i++) {
		struct key *k = &lg.keys[i];

		if (!k->fmt) {
			free_k = free_k ? free_k : k;
		} else if (k->fmt == fmt && k->hash == h && !strcmp(k->text, text)) {
			k->repeats++;
			return 0;
		} else if (!k->repeats && (!spare || k->start_ns < spare->start_ns)) {
			spare = k;
		}
	}
	if (!free_k)
		free_k = spare;
	if (!free_k) {
		if (!lg.other++) {
			lg.other_start_ns = now;
			lg.other_level = level;
		}
		return 0;
	}
	*free_k = (struct key){ .fmt = fmt, .hash = h, .start_ns = now, .level = level };
	snprintf(free_k->text, sizeof(free_k->text), "%s", text);
	return 1;
}

/* Warnings and errors: at most FC_LOG_SITE_LINES different lines per call site and
 * window; 0 = held back (counted, the last one kept for the summary). */
static int site_admit(int level, const char *fmt, const char *text, uint64_t now)
{
	struct site *s = NULL, *idle = NULL;

	if (level > FC_LOG_WARN)
		return 1;
	for (uint32_t i = 0; i < FC_LOG_KEYS && !s; i++) {
		if (sites[i].fmt == fmt)
			s = &sites[i];
		else if (!idle && (!sites[i].fmt || (!sites[i].held &&
						     now - sites[i].start_ns >= WINDOW_NS)))
			idle = &sites[i];
	}
	if (!s) {
		if (!idle)
			return 1; /* 64 sites busy: the key table still holds repeats back */
		*idle = (struct site){ .fmt = fmt, .start_ns = now, .level = level };
		s = idle;
	}
	if (now - s->start_ns >= WINDOW_NS) {
		s->start_ns = now;
		s->lines = 0;
	}
	if (s->lines < FC_LOG_SITE_LINES) {
		s->lines++;
		return 1;
	}
	s->held++;
	snprintf(s->last, sizeof(s->last), "%s", text);
	return 0;
}

static unsigned flush_sites(int all, uint64_t now)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < FC_LOG_KEYS; i++) {
		struct site *s = &sites[i];
		char suffix[96];

		if (!s->fmt || (!all && (!s->held || now - s->start_ns < WINDOW_NS)))
			continue;
		if (!s->held) { /* all: every window ends */
			s->fmt = NULL;
			continue;
		}
		snprintf(suffix, sizeof(suffix), " (and %u more line%s like it in the last %u s)",
			 s->held, s->held == 1 ? "" : "s", span_s(s->start_ns, now));
		emit(s->level, s->last, suffix);
		s->held = 0;
		s->lines = 0;
		s->start_ns = now;
		n++;
	}
	return n;
}

void fc_log(int level, const char *fmt, ...)
{
	char text[LINE_MAX_BYTES];
	uint64_t now;
	va_list ap;

	if (level > fc_log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&lg.lock);
	now = mono_ns();
	flush_locked(0, now);
	if (level >= FC_LOG_DEBUG ||
	    (admit(level, fmt, text, now) && site_admit(level, fmt, text, now)))
		emit(level, text, "");
	pthread_mutex_unlock(&lg.lock);
}
