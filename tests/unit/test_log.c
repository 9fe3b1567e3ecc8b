/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcond's log (daemon/log.c): a line repeated from one place is written once and then
 * once more with its count; different lines are not held back; a call site that logs a
 * different warning each time writes FC_LOG_SITE_LINES of them and one summary; debug
 * lines are never held back. stderr goes to a temporary file the test reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

static FILE *out;
static int saved_stderr = -1;

static int setup(void **state)
{
	(void)state;
	out = tmpfile();
	saved_stderr = dup(STDERR_FILENO);
	if (!out || saved_stderr < 0 || dup2(fileno(out), STDERR_FILENO) < 0)
		return -1;
	setvbuf(stderr, NULL, _IONBF, 0);
	unsetenv("JOURNAL_STREAM");
	fc_log_level = FC_LOG_DEBUG;
	return 0;
}

static int teardown(void **state) /* cmocka's summary goes to the real stderr */
{
	(void)state;
	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	fclose(out);
	return 0;
}

/* Lines written since the last call that contain needle (NULL: all). */
static unsigned lines(const char *needle, char *last, size_t last_len)
{
	static long pos;
	char line[1200];
	unsigned n = 0;

	fflush(stderr);
	fseek(out, pos, SEEK_SET);
	while (fgets(line, sizeof(line), out)) {
		if (needle && !strstr(line, needle))
			continue;
		n++;
		if (last)
			snprintf(last, last_len, "%s", line);
	}
	pos = ftell(out);
	return n;
}

static void log_refused(unsigned port)
{
	LOG_W("cm: handshake from 127.0.0.1:%u refused: unknown key", port);
}

static void repeats_counted(void **state)
{
	char last[1200];

	(void)state;
	for (int i = 0; i < 100; i++)
		log_refused(7473);
	assert_int_equal(lines(NULL, NULL, 0), 1);
	assert_int_equal(fc_log_flush(0), 0); /* the window has not ended */
	assert_int_equal(fc_log_flush(1), 1);
	assert_int_equal(lines("repeated 99 times in the last 1 s", last, sizeof(last)), 1);
	assert_non_null(strstr(last, "cm: handshake from 127.0.0.1:7473 refused: unknown key ("));
	/* a new window: written at once again */
	log_refused(7473);
	assert_int_equal(lines("unknown key", NULL, 0), 1);
	fc_log_flush(1);
	assert_int_equal(lines(NULL, NULL, 0), 0); /* no repeat: no summary */
}

static void different_lines_pass(void **state)
{
	(void)state;
	/* info lines that differ (connections established) are never held back */
	for (unsigned i = 0; i < 300; i++)
		LOG_I("cm: connection %#x established", i);
	assert_int_equal(lines("established", NULL, 0), 300);
	/* nor debug lines, even identical ones */
	for (unsigned i = 0; i < 50; i++)
		LOG_D("cm: the same debug line");
	assert_int_equal(lines("debug line", NULL, 0), 50);
	fc_log_flush(1);
	lines(NULL, NULL, 0);
}

static void site_capped(void **state)
{
	char last[1200];

	(void)state;
	/* a flood from ever new ports: FC_LOG_SITE_LINES lines, then one summary */
	for (unsigned p = 0; p < 200; p++)
		log_refused(20000 + p);
	assert_int_equal(lines("unknown key", NULL, 0), FC_LOG_SITE_LINES);
	fc_log_flush(1);
	assert_int_equal(lines("more lines like it", last, sizeof(last)), 1);
	assert_non_null(strstr(last, "127.0.0.1:20199 refused: unknown key (and 180 more lines"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(repeats_counted),
		cmocka_unit_test(different_lines_pass),
		cmocka_unit_test(site_capped),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
