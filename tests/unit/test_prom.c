/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Prometheus text made from falcond's admin JSON (daemon/prom.c, jread.c): the
 * daemon's info and gauges, counters with _total and in base units, drops remapped to a
 * reason label, objects of counts as one family, strings left out, per-peer and
 * per-connection series with their labels escaped, each family's HELP and TYPE once and
 * its samples together; the JSON reader's refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jread.h"
#include "prom.h"

static char *render(const char *status, const char *stats, const char *peers, const char *conns)
{
	const char *src[4] = { status, stats, peers, conns };
	char *buf[4] = { NULL }, *text = NULL;
	struct fc_jv *doc[4] = { NULL };
	size_t len;

	for (int i = 0; i < 4; i++) {
		char *p;

		if (!src[i])
			continue;
		buf[i] = strdup(src[i]);
		p = buf[i];
		doc[i] = fc_jparse(&p);
		assert_non_null(doc[i]);
	}
	assert_int_equal(fc_prom_render(doc[0], doc[1], doc[2], doc[3], &text, &len), 0);
	assert_int_equal(strlen(text), len);
	for (int i = 0; i < 4; i++) {
		fc_jfree(doc[i]);
		free(buf[i]);
	}
	return text;
}

static void has(const char *text, const char *line)
{
	const char *p = text;
	size_t n = strlen(line);

	while ((p = strstr(p, line)))
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0))
			return;
		else
			p++;
	fail_msg("no line '%s' in:\n%s", line, text);
}

static void test_daemon(void **state)
{
	char *t = render("{\"version\":\"0.1.0\",\"io\":\"udp\",\"security\":\"psp\",\"cc\":\"swift\","
			 "\"rue\":\"inline\",\"poll\":\"adaptive\",\"uptime_s\":2.5,\"clients\":3}",
			 NULL, NULL, NULL);

	(void)state;
	has(t, "falcond_info{version=\"0.1.0\",io=\"udp\",security=\"psp\",cc=\"swift\","
	       "rue=\"inline\",poll=\"adaptive\"} 1");
	has(t, "# TYPE falcond_uptime_seconds gauge");
	has(t, "falcond_uptime_seconds 2.5");
	has(t, "falcond_clients 3");
	free(t);
}

static void test_stats(void **state)
{
	char *t = render(NULL, "{\"node\":{\"rx_frames\":10,\"rx_short\":1,\"rx_replay\":2,"
			 "\"tx_io_drop\":4,\"stall_ns\":5000000000},\"cm\":{\"hs_refused\":"
			 "{\"bad_mac\":3,\"stale\":0}},\"api\":{\"clients\":2,\"msgs\":9},"
			 "\"loop\":{\"mode\":\"adaptive\",\"loops\":7},\"x\":{\"wait_us\":1500}}",
			 NULL, NULL);

	(void)state;
	has(t, "# TYPE falcon_node_rx_drops_total counter");
	has(t, "falcon_node_rx_drops_total{reason=\"short\"} 1");
	has(t, "falcon_node_rx_drops_total{reason=\"replay\"} 2");
	has(t, "falcon_node_tx_drops_total{reason=\"io_drop\"} 4");
	has(t, "falcon_node_rx_frames_total 10");
	has(t, "falcon_node_stall_seconds_total 5");
	has(t, "falcon_cm_hs_refused_total{reason=\"bad_mac\"} 3");
	has(t, "# TYPE falcon_api_clients gauge");
	has(t, "falcon_api_clients 2");
	has(t, "falcon_api_msgs_total 9");
	has(t, "falcon_loop_loops_total 7");
	has(t, "falcon_x_wait_seconds_total 0.0015");
	assert_null(strstr(t, "mode"));
	assert_null(strstr(t, "falcon_node_rx_short"));
	free(t);
}

static void test_rows(void **state)
{
	char *t = render(NULL, NULL,
			 "[{\"cm_addr\":\"[::1]:7471\",\"session\":\"up\",\"conns\":1},"
			 "{\"cm_addr\":\"10.0.0.2:7471\",\"session\":\"none\",\"conns\":0}]",
			 "[{\"id\":1,\"peer\":\"a\\\"b\\\\c\",\"local_cid\":65536,\"kind\":\"service\","
			 "\"tx_bytes\":100,\"srtt_us\":12.5,\"retx_timeout\":2,\"retx_early\":1,"
			 "\"outstanding_data\":4},{\"id\":2,\"peer\":\"p\",\"local_cid\":7,"
			 "\"state\":\"connecting\"}]");
	const char *a, *b, *c;

	(void)state;
	has(t, "falcon_peer_session_up{peer=\"[::1]:7471\"} 1");
	has(t, "falcon_peer_session_up{peer=\"10.0.0.2:7471\"} 0");
	has(t, "falcon_conn_tx_bytes_total{conn=\"1\",peer=\"a\\\"b\\\\c\",local_cid=\"65536\"} 100");
	has(t, "falcon_conn_rtt_seconds{conn=\"1\",peer=\"a\\\"b\\\\c\",local_cid=\"65536\"} 1.25e-05");
	has(t, "falcon_conn_outstanding_packets{conn=\"1\",peer=\"a\\\"b\\\\c\",local_cid=\"65536\","
	       "window=\"data\"} 4");
	has(t, "falcon_conn_info{conn=\"2\",peer=\"p\",local_cid=\"7\",kind=\"\",role=\"\","
	       "state=\"connecting\",ordering=\"\",remote_cid=\"\",qpn=\"\",remote_qpn=\"\","
	       "service=\"\"} 1");
	/* one family, its two reasons together under one TYPE */
	a = strstr(t, "# TYPE falcon_conn_retransmits_total counter");
	b = strstr(t, "reason=\"timeout\"} 2\n");
	c = strstr(t, "reason=\"early\"} 1\n");
	assert_true(a && b && c && a < b && b < c);
	assert_null(strstr(a + 1, "# TYPE falcon_conn_retransmits_total"));
	assert_null(strstr(t, "falcon_conn_tx_bytes_total{conn=\"2\""));
	free(t);
}

static void test_reader(void **state)
{
	static const char *const bad[] = { "", "{", "[1,", "{\"a\" 1}", "{\"a\":}", "\"open",
					   "[[[[[[[[[[[1]]]]]]]]]]]", "{1:2}" };
	char buf[64], *p;
	struct fc_jv *v;
	double d;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", bad[i]);
		p = buf;
		v = fc_jparse(&p);
		if (v)
			fail_msg("'%s' parsed", bad[i]);
	}
	snprintf(buf, sizeof(buf), "{\"k\":\"a\\\"b\",\"n\":-2.5e1,\"t\":true}");
	p = buf;
	assert_non_null(v = fc_jparse(&p));
	assert_string_equal(fc_jstr(fc_jget(v, "k")), "a\"b");
	assert_true(fc_jnum(fc_jget(v, "n"), &d) && d == -25);
	assert_false(fc_jnum(fc_jget(v, "t"), &d));
	assert_null(fc_jget(v, "nope"));
	fc_jfree(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_daemon),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
