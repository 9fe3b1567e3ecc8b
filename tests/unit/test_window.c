/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Receiver sliding windows (include/falcon/window.h): the shared vectors, a randomized
 * comparison against a plain reference model, and a multi-threaded stress test proving
 * that no accepted packet is lost or accepted twice while several threads mark packets
 * and one advances the base.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "falcon/window.h"
#include "testutil.h"
#include "window_vectors.h"

static uint64_t test_seed(void) { return fc_test_seed(0x5eed0f1a7c0ffeeull); }

static void test_vectors(void **state)
{
	struct fc_rx_state *s = calloc(1, sizeof(*s));
	size_t i;

	(void)state;
	assert_non_null(s);
	for (i = 0; i < FC_WVEC_COUNT; i++) {
		uint64_t got = fc_wvec_exec(s, &fc_wvec_all[i]);

		if (got != fc_wvec_all[i].expect)
			fail_msg("vector step %zu (op %u, win %u, a %u): got %#llx, want %#llx", i,
				 fc_wvec_all[i].op, fc_wvec_all[i].win, fc_wvec_all[i].a,
				 (unsigned long long)got, (unsigned long long)fc_wvec_all[i].expect);
	}
	free(s);
}

static void test_serial_compare(void **state)
{
	(void)state;
	assert_true(fc_sn_lt(4294967295u, 0));
	assert_false(fc_sn_lt(0, 4294967295u));
	assert_true(fc_sn_lt(100, 101));
	assert_true(fc_sn_le(7, 7));
	/* exactly 2^31 apart is ambiguous; the signed difference calls it "before" */
	assert_true(fc_sn_lt(0x80000000u + 5, 5));
}

#include "window_model.h"

static void run_model(uint32_t size, uint64_t seed)
{
	struct fc_win *w = calloc(1, sizeof(*w));
	struct model *m = calloc(1, sizeof(*m));
	uint64_t rng = seed;
	int steps = fc_test_quick() ? 20000 : 200000;

	assert_non_null(w);
	assert_non_null(m);
	m->start = m->base = 4294967295u - 50;
	m->size = size;
	fc_win_init(w, size, m->base);
	for (int i = 0; i < steps && m->base - m->start < MODEL_SPAN; i++) {
		uint64_t r = fc_test_rand(&rng);
		uint32_t psn = m->base + (uint32_t)(r % (size + 40)) - 20;
		int got, want;

		switch ((r >> 32) % 8) {
		case 0: case 1: case 2: case 3: {
			int ack_now = (r >> 40) & 1;
			want = model_mark(m, psn, ack_now);
			got = fc_win_mark_rx(w, psn, ack_now);
			break;
		}
		case 4: case 5:
			want = model_ack(m, psn);
			got = fc_win_mark_ack(w, psn);
			break;
		case 6:
			want = (int)model_advance(m);
			got = (int)fc_win_advance(w);
			break;
		default: {
			__u64 rx[2], ack[2], mrx[2] = {0, 0}, mack[2] = {0, 0};
			uint32_t b = fc_win_snapshot(w, rx, ack);

			for (uint32_t j = 0; j < size; j++) {
				uint32_t k = m->base + j - m->start;
				if (m->rx[k])
					mrx[j / 64] |= 1ull << (j % 64);
				if (m->ack[k])
					mack[j / 64] |= 1ull << (j % 64);
			}
			if (b != m->base || rx[0] != mrx[0] || rx[1] != mrx[1] ||
			    ack[0] != mack[0] || ack[1] != mack[1])
				fail_msg("seed %#llx step %d: snapshot differs from model",
					 (unsigned long long)seed, i);
			want = got = 0;
			break;
		}
		}
		if (got != want)
			fail_msg("seed %#llx step %d size %u psn %u: window %d, model %d "
				 "(replay: FALCON_TEST_SEED=%#llx)", (unsigned long long)seed, i,
				 size, psn, got, want, (unsigned long long)seed);
		if (fc_win_own_take(w) != m->own)
			fail_msg("seed %#llx step %d: OWN differs", (unsigned long long)seed, i);
		m->own = 0;
	}
	/* the run really moved the window, through the 2^32 wrap (start is 50 below it) */
	if (m->base - m->start < (uint32_t)steps / 200)
		fail_msg("window moved only %u PSNs in %d steps", m->base - m->start, steps);
	free(w);
	free(m);
}

static void test_model_request(void **state)
{
	(void)state;
	run_model(FC_REQ_WIN, test_seed());
}

static void test_model_data(void **state)
{
	(void)state;
	run_model(FC_DATA_WIN, test_seed() ^ 0x1234567ull);
}

/*
 * Stress: MARKERS threads mark random PSNs around the window (old, in-window,
 * out-of-window, many duplicates), half of them as Push Data (ACK later); one owner
 * thread acknowledges received Push Data and advances the base. Every PSN the base
 * passes must have been accepted (FC_WIN_NEW) exactly once, and nothing beyond the
 * final window may have been accepted.
 */
#define MARKERS 4
struct stress {
	struct fc_win *w;
	uint32_t start, total;
	_Atomic uint32_t *accepted; /* per PSN - start, size total + 2 * FC_DATA_WIN */
	_Atomic int done;
	_Atomic uint64_t attempts, bad_range;
	uint64_t seed;
	uint64_t yield_mask;
};

static void *marker(void *arg)
{
	struct stress *st = arg;
	uint64_t rng = st->seed ^ (uint64_t)(uintptr_t)&rng;

	while (!st->done) {
		uint64_t r = fc_test_rand(&rng);
		uint32_t base = fc_load_acq32(&st->w->base);
		uint32_t psn = base + (uint32_t)(r % (FC_DATA_WIN + 24)) - 12;

		if (fc_win_mark_rx(st->w, psn, (r >> 40) & 1) == FC_WIN_NEW) {
			uint32_t k = psn - st->start;
			if (k < st->total + 2 * FC_DATA_WIN)
				st->accepted[k]++;
			else
				st->bad_range++;
		}
		st->attempts++;
		if ((r & st->yield_mask) == 0)
			sched_yield(); /* under valgrind threads are serialized: let others run */
	}
	return NULL;
}

/* The XDP contract (window.h): XDP marks RX alone; a copy arriving before the engine took
 * the first passes again; the engine takes exactly one; then copies are duplicates; the
 * ULP's ack and the NACK path keep working on a SEEN slot; nothing is acknowledged (the
 * base does not move) before the engine took the packet. */
static void test_xdp_contract(void **state)
{
	static struct fc_win w;
	const uint32_t b = 0xFFFFFFF0u; /* across the 2^32 wrap */
	const uint32_t t = 0xFFFFFCu;   /* mark times across their 2^24 wrap */

	(void)state;
	fc_win_init(&w, FC_DATA_WIN, b);
	assert_int_equal(fc_win_xdp_mark(&w, b, t), FC_WIN_NEW);
	assert_int_equal(fc_win_flags(&w, b), FC_SLOT_RX);
	assert_int_equal(fc_win_advance(&w), 0);
	/* a copy right behind the original (a duplicating switch): answered */
	assert_int_equal(fc_win_xdp_mark(&w, b, t + FC_WIN_XDP_YOUNG_TS - 1), FC_WIN_DUP);
	/* not taken after a while: perhaps lost on its way, the retransmission passes */
	assert_int_equal(fc_win_xdp_mark(&w, b, t + FC_WIN_XDP_YOUNG_TS), FC_WIN_NEW);
	assert_int_equal(fc_win_take(&w, b, 0), 0);
	assert_int_equal(fc_win_take(&w, b, 0), 1);
	/* taken: every later copy is a duplicate, however old */
	assert_int_equal(fc_win_xdp_mark(&w, b, t + 1000), FC_WIN_DUP);
	assert_int_equal(fc_win_advance(&w), 0);       /* a Push Data: the ULP acks it */
	assert_int_equal(fc_win_mark_ack(&w, b), 0);
	assert_int_equal(fc_win_mark_ack(&w, b), 1);
	assert_int_equal(fc_win_flags(&w, b), FC_SLOT_RX | FC_SLOT_ACK);
	assert_int_equal(fc_win_advance(&w), 1);
	assert_int_equal(fc_win_xdp_mark(&w, b, t), FC_WIN_OLD);
	/* not received: nothing to take */
	assert_int_equal(fc_win_take(&w, b + 5, 1), 2);
	assert_int_equal(fc_win_take(&w, b - 1, 1), 2); /* below the base */
	/* a Pull Request style take acknowledges at once */
	assert_int_equal(fc_win_xdp_mark(&w, b + 1, t), FC_WIN_NEW);
	assert_int_equal(fc_win_take(&w, b + 1, 1), 0);
	assert_int_equal(fc_win_flags(&w, b + 1), FC_SLOT_RX | FC_SLOT_ACK);
	assert_int_equal(fc_win_mark_ack(&w, b + 1), 1);
	assert_int_equal(fc_win_advance(&w), 1);
	/* the engine's own marks (UDP path) are taken at once: XDP answers their copies */
	assert_int_equal(fc_win_mark_flags(&w, b + 2, FC_SLOT_SEEN), FC_WIN_NEW);
	assert_int_equal(fc_win_xdp_mark(&w, b + 2, t + 5000), FC_WIN_DUP);
	/* out of the window: OWN */
	assert_int_equal(fc_win_xdp_mark(&w, b + 3 + FC_DATA_WIN, t), FC_WIN_OOW);
	assert_int_equal(fc_win_own_take(&w), 1);
}

static void test_stress_threads(void **state)
{
	struct stress st = {0};
	pthread_t th[MARKERS];
	struct timespec t0, t1;

	(void)state;
	st.w = calloc(1, sizeof(*st.w));
	st.total = fc_test_quick() ? 400 : 300000;
	st.yield_mask = fc_test_quick() ? 0x3 : 0xff;
	st.start = 4294967295u - 5000; /* wraps during the run */
	st.seed = test_seed();
	st.accepted = calloc(st.total + 2 * FC_DATA_WIN, sizeof(*st.accepted));
	assert_non_null(st.w);
	assert_non_null(st.accepted);
	fc_win_init(st.w, FC_DATA_WIN, st.start);
	for (int i = 0; i < MARKERS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, marker, &st), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (st.w->base - st.start < st.total) {
		uint32_t base = st.w->base;

		for (uint32_t i = 0; i < FC_DATA_WIN; i++)
			if (fc_win_flags(st.w, base + i) == FC_SLOT_RX)
				fc_win_mark_ack(st.w, base + i); /* "the ULP acked it" */
		fc_win_advance(st.w);
		if (fc_test_quick())
			sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > 120)
			break; /* reported below as a failure, never a hang */
	}
	st.done = 1;
	for (int i = 0; i < MARKERS; i++)
		pthread_join(th[i], NULL);

	uint32_t advanced = st.w->base - st.start;
	if (advanced < st.total)
		fail_msg("base advanced only %u of %u PSNs in 120 s", advanced, st.total);
	for (uint32_t k = 0; k < advanced; k++)
		if (st.accepted[k] != 1)
			fail_msg("PSN start+%u accepted %u times (seed %#llx)", k,
				 (unsigned)st.accepted[k], (unsigned long long)st.seed);
	for (uint32_t k = advanced + FC_DATA_WIN; k < st.total + 2 * FC_DATA_WIN; k++)
		if (st.accepted[k] != 0)
			fail_msg("PSN start+%u beyond the window was accepted", k);
	assert_int_equal(st.bad_range, 0);
	print_message("stress: %u PSNs through the window, %llu mark attempts by %d threads\n",
		      advanced, (unsigned long long)st.attempts, MARKERS);
	free(st.accepted);
	free(st.w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_serial_compare),
		cmocka_unit_test(test_xdp_contract),
		cmocka_unit_test(test_model_request),
		cmocka_unit_test(test_model_data),
		cmocka_unit_test(test_stress_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
