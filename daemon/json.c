/* SPDX-License-Identifier: Apache-2.0 */
/* json.c - JSON text appended into a fixed buffer for the admin socket (falcond.h). */
#include <stdarg.h>
#include <stdio.h>

#include "falcond.h"

__attribute__((format(printf, 2, 0)))
static void vput(struct fd_json *j, const char *fmt, va_list ap)
{
	size_t room = j->len < j->cap ? j->cap - j->len : 0;
	int n = vsnprintf(room ? j->buf + j->len : NULL, room, fmt, ap);

	if (n > 0)
		j->len += (size_t)n;
}

__attribute__((format(printf, 2, 3)))
static void put(struct fd_json *j, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vput(j, fmt, ap);
	va_end(ap);
}

void fd_json_init(struct fd_json *j, char *buf, size_t cap)
{
	j->buf = buf;
	j->cap = cap;
	j->len = 0;
	j->first = 1;
	if (cap)
		buf[0] = 0;
}

static void sep(struct fd_json *j)
{
	if (!j->first)
		put(j, ",");
	j->first = 0;
}

void fd_json_raw(struct fd_json *j, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vput(j, fmt, ap);
	va_end(ap);
}

void fd_json_kv(struct fd_json *j, const char *key, const char *fmt, ...)
{
	va_list ap;

	sep(j);
	put(j, "\"%s\":", key);
	va_start(ap, fmt);
	vput(j, fmt, ap);
	va_end(ap);
}

void fd_json_kstr(struct fd_json *j, const char *key, const char *s)
{
	sep(j);
	if (key)
		put(j, "\"%s\":", key);
	put(j, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			put(j, "\\%c", c);
		else if (c < 0x20)
			put(j, "\\u%04x", c);
		else
			put(j, "%c", c);
	}
	put(j, "\"");
}

void fd_json_open(struct fd_json *j, const char *key, char bracket)
{
	sep(j);
	if (key)
		put(j, "\"%s\":", key);
	put(j, "%c", bracket);
	j->first = 1;
}

void fd_json_close(struct fd_json *j, char bracket)
{
	put(j, "%c", bracket);
	j->first = 0;
}

size_t fd_json_done(const struct fd_json *j)
{
	return j->len < j->cap ? j->len : (j->cap ? j->cap - 1 : 0);
}
