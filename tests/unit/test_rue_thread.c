/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RUE in its own thread (daemon/rue_thread.c): the same results as Swift/PLB run in
 * line, event by event; every offered event either refused and counted or processed once,
 * every result taken once or counted lost, under a burst that fills the queues; the
 * loop's eventfd rings for a result only while the loop says it sleeps; forget from the
 * loop while the thread works.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "falcon/wire.h"
#include "pdl.h"
#include "rue.h"
#include "rue_queue.h"
#include "rue_thread.h"
#include "testutil.h"

#define NOW_NS 5000000000ull
#define WAIT_NS 20000000000ull /* bounded; generous for valgrind on a loaded host */

static uint64_t fixed_now(void) { return NOW_NS; }

static uint64_t mono(void) { return fc_test_now_ns(); }

/* An ACK event of connection cid with state as a PDL would carry it. */
static struct fc_cc_event ack(uint32_t cid, uint32_t i, const struct fc_cc_result *prev)
{
	uint32_t now = fc_ns_to_ts(NOW_NS) & FC_TS24_MASK, rtt = 100 + (i * 37) % 400;
	struct fc_cc_event e;

	memset(&e, 0, sizeof(e));
	e.cid = cid;
	e.type = 0;
	e.fcwnd_fp = prev ? prev->fcwnd_fp : 32u << 10;
	e.ncwnd = prev ? prev->ncwnd : 64;
	e.retransmit_timeout_ts = prev ? prev->retransmit_timeout_ts : 0;
	e.delay_state_ts = prev ? prev->delay_state_ts : 0;
	e.rtt_state_ts = prev ? prev->rtt_state_ts : 0;
	e.ncwnd_direction = prev ? prev->ncwnd_direction : 1;
	e.base_delay_target_ts = prev ? prev->base_delay_target_ts : 200;
	e.fabric_window_time_marker_ts = prev ? prev->fabric_window_time_marker_ts : 0;
	e.cc_metadata = prev ? prev->cc_metadata : 0;
	e.delay_select = 1;
	e.t4_ts = now;
	e.t1_ts = (now - rtt) & FC_TS24_MASK;
	e.t2_ts = (e.t1_ts + 3) & FC_TS24_MASK;
	e.t3_ts = (e.t2_ts + rtt / 3) & FC_TS24_MASK;
	e.num_packets_acked = (uint16_t)(1 + i % 16);
	e.rx_buffer_level = (uint8_t)(i % 8);
	return e;
}

static int take_within(struct fd_rue_thread *t, struct fc_cc_result *res)
{
	uint64_t end = mono() + WAIT_NS;

	while (mono() < end) {
		if (fd_rue_thread_take(t, res))
			return 1;
		sched_yield(); /* valgrind runs one thread at a time: let the RUE thread run */
	}
	return 0;
}

/* One event at a time, results fed back as the PDL would: the thread's results are the
 * inline RUE's, bit for bit (packed records compared). */
static void test_same_results_as_inline(void **state)
{
	struct fc_rue_cfg cfg;
	struct fc_rue *inl;
	struct fd_rue_thread *t;
	struct fc_cc_result prev[8], mine, theirs;
	int have[8] = { 0 };

	(void)state;
	fc_rue_cfg_default(&cfg);
	assert_non_null(inl = fc_rue_new(&cfg, 64));
	assert_non_null(t = fd_rue_thread_new(&cfg, 64, 64, fixed_now));
	for (uint32_t i = 0; i < 4000; i++) {
		uint32_t k = i % 8, cid = 1 + k;
		struct fc_cc_event e = ack(cid, i, have[k] ? &prev[k] : NULL);
		uint8_t a[FC_RUE_REC_BYTES], b[FC_RUE_REC_BYTES];

		memset(&mine, 0, sizeof(mine));
		assert_int_equal(fc_rue_process(inl, &e, fc_ns_to_ts(NOW_NS) & FC_TS24_MASK, &mine), 0);
		assert_int_equal(fd_rue_thread_offer(t, &e, FC_CC_P1 | FC_CC_P2), 0);
		assert_true(take_within(t, &theirs));
		mine.gen = theirs.gen = 0; /* the queue's lap bit, not a result of Swift's */
		fc_cc_result_pack(&mine, a);
		fc_cc_result_pack(&theirs, b);
		assert_memory_equal(a, b, sizeof(a));
		prev[k] = mine;
		have[k] = 1;
	}
	fc_rue_free(inl);
	fd_rue_thread_free(t);
}

/* A burst far above the queues: nothing is lost without being counted, nothing twice. */
static void test_burst_accounting(void **state)
{
	struct fc_rue_cfg cfg;
	struct fd_rue_thread *t;
	struct fd_rue_thread_stats st;
	struct fc_cc_result res;
	uint64_t taken = 0, end;
	uint32_t queued = 0;

	(void)state;
	fc_rue_cfg_default(&cfg);
	assert_non_null(t = fd_rue_thread_new(&cfg, 256, 64, NULL));
	for (uint32_t i = 0; i < 20000; i++) {
		struct fc_cc_event e = ack(1 + i % 200, i, NULL);
		int rc = fd_rue_thread_offer(t, &e, i % 3 ? 0 : FC_CC_P1 | FC_CC_P2);

		assert_true(rc == 0 || rc == -EBUSY || rc == -EAGAIN);
		queued += rc == 0;
		if (i % 97 == 0) /* the loop takes results now and then, not always */
			while (fd_rue_thread_take(t, &res))
				taken++;
	}
	end = mono() + WAIT_NS;
	do {
		while (fd_rue_thread_take(t, &res))
			taken++;
		fd_rue_thread_stats(t, &st);
		sched_yield();
	} while (st.processed < queued && mono() < end);
	while (fd_rue_thread_take(t, &res))
		taken++;
	fd_rue_thread_stats(t, &st);
	assert_int_equal(st.offered, queued);
	assert_int_equal(st.offered + st.refused + st.queue_full, 20000);
	assert_true(st.refused > 0); /* the admission policy did refuse under the burst */
	assert_int_equal(st.processed, queued);
	assert_int_equal(taken + st.results_lost, st.processed);
	assert_int_equal(st.taken, taken);
	fd_rue_thread_free(t);
}

/* The loop's eventfd: rung for a result while the loop says it sleeps, not otherwise. */
static void test_loop_wakeup(void **state)
{
	struct fc_rue_cfg cfg;
	struct fd_rue_thread *t;
	struct fd_rue_thread_stats st;
	struct fc_cc_result res;
	struct fc_cc_event e = ack(3, 1, NULL);
	struct pollfd p;

	(void)state;
	fc_rue_cfg_default(&cfg);
	assert_non_null(t = fd_rue_thread_new(&cfg, 16, 16, fixed_now));
	/* awake: the result comes without a ring */
	assert_int_equal(fd_rue_thread_loop_sleeps(t, 0), 0);
	assert_int_equal(fd_rue_thread_offer(t, &e, FC_CC_P1 | FC_CC_P2), 0);
	assert_true(take_within(t, &res));
	fd_rue_thread_stats(t, &st);
	assert_int_equal(st.loop_wakeups, 0);
	/* the thread blocks once it has spun a while without events (bounded wait) */
	for (uint64_t end = mono() + WAIT_NS; mono() < end; sched_yield()) {
		fd_rue_thread_stats(t, &st);
		if (st.thread_sleeps >= 1)
			break;
	}
	assert_true(st.thread_sleeps >= 1);
	/* asleep: the next one rings the eventfd */
	assert_int_equal(fd_rue_thread_loop_sleeps(t, 1), 0);
	assert_int_equal(fd_rue_thread_offer(t, &e, FC_CC_P1 | FC_CC_P2), 0);
	p = (struct pollfd){ .fd = fd_rue_thread_fd(t), .events = POLLIN };
	assert_int_equal(poll(&p, 1, 2000), 1);
	fd_rue_thread_ack(t);
	fd_rue_thread_loop_sleeps(t, 0);
	assert_int_equal(fd_rue_thread_take(t, &res), 1);
	assert_int_equal(res.cid, 3);
	fd_rue_thread_stats(t, &st);
	assert_int_equal(st.loop_wakeups, 1);
	assert_true(st.thread_wakeups >= 1); /* the offer woke the sleeping thread */
	fd_rue_thread_free(t);
}

/* forget from the loop while the thread processes: no deadlock, no lost accounting. */
static void test_forget_while_busy(void **state)
{
	struct fc_rue_cfg cfg;
	struct fd_rue_thread *t;
	struct fd_rue_thread_stats st;
	struct fc_cc_result res;
	uint32_t queued = 0;
	uint64_t end;

	(void)state;
	fc_rue_cfg_default(&cfg);
	assert_non_null(t = fd_rue_thread_new(&cfg, 64, 1024, NULL));
	for (uint32_t i = 0; i < 5000; i++) {
		struct fc_cc_event e = ack(1 + i % 32, i, NULL);

		queued += fd_rue_thread_offer(t, &e, FC_CC_P1 | FC_CC_P2) == 0;
		if (i % 10 == 0)
			fd_rue_thread_forget(t, 1 + (i / 10) % 32);
		while (fd_rue_thread_take(t, &res))
			;
	}
	end = mono() + WAIT_NS;
	do {
		while (fd_rue_thread_take(t, &res))
			;
		fd_rue_thread_stats(t, &st);
		sched_yield();
	} while (st.processed < queued && mono() < end);
	assert_int_equal(st.processed, queued);
	fd_rue_thread_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_results_as_inline),
		cmocka_unit_test(test_burst_accounting),
		cmocka_unit_test(test_loop_wakeup),
		cmocka_unit_test(test_forget_while_busy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
