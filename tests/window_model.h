/* SPDX-License-Identifier: Apache-2.0 */
/*
 * window_model.h - a plain reference model of one receiver window (spec 9.2.2.4), for
 * tests/unit/test_window.c and tests/fuzz/fuzz_window.c to compare window.h against.
 */
#ifndef FC_TEST_WINDOW_MODEL_H
#define FC_TEST_WINDOW_MODEL_H

#include <stdint.h>

#include "falcon/window.h"

/*
 * Reference model: one window, PSNs relative to a starting point, plain arrays. Random
 * operations against both; every result must agree. Starting just below 2^32 so that
 * the window wraps during the run.
 */
#define MODEL_SPAN 20000
struct model {
	uint32_t start, base, size;
	uint8_t rx[MODEL_SPAN + 512], ack[MODEL_SPAN + 512];
	int own;
};

static inline int model_mark(struct model *m, uint32_t psn, int ack_now)
{
	int32_t d = (int32_t)(psn - m->base);

	if (d < 0)
		return FC_WIN_OLD;
	if ((uint32_t)d >= m->size) {
		m->own = 1;
		return FC_WIN_OOW;
	}
	uint32_t k = psn - m->start;
	if (m->rx[k])
		return FC_WIN_DUP;
	m->rx[k] = 1;
	m->ack[k] = (uint8_t)ack_now;
	return FC_WIN_NEW;
}

static inline uint32_t model_advance(struct model *m)
{
	uint32_t n = 0;

	while (n < m->size && m->ack[m->base + n - m->start])
		n++;
	m->base += n;
	return n;
}


/* The model's answer to fc_win_mark_ack. */
static inline int model_ack(struct model *m, uint32_t psn)
{
	int32_t d = (int32_t)(psn - m->base);

	if (d >= 0 && (uint32_t)d < m->size && m->rx[psn - m->start] && !m->ack[psn - m->start]) {
		m->ack[psn - m->start] = 1;
		return 0;
	}
	return 1;
}

#endif
