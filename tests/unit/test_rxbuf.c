/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Receiver buffer occupancy EMA and quantization (spec 10.2, daemon/engine/rxbuf.c).
 * Expected EMA values are worked out by hand in the comments, in Q16 (x 65536).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "falcon/wire.h"
#include "rxbuf.h"

#define Q(x) ((uint64_t)((x) * 65536.0)) /* exact for the binary fractions used here */

static void cfg_steps(struct fc_rxbuf_cfg *cfg, uint32_t step, uint32_t alpha)
{
	unsigned p, k;

	for (p = 0; p < FC_RXBUF_POOLS; p++) {
		cfg->alpha[p] = alpha;
		for (k = 0; k < FC_RXBUF_THRESHOLDS; k++)
			cfg->threshold[p][k] = step * (k + 1);
	}
}

static void test_alpha_one_is_instant(void **state)
{
	static const uint32_t occ[] = { 5, 100, 0, 7, 0xFFFFFFFFu, 3 };
	struct fc_rxbuf_cfg cfg;
	struct fc_rxbuf rb;
	size_t i;

	(void)state;
	cfg_steps(&cfg, 10, FC_RXBUF_ALPHA_ONE);
	fc_rxbuf_init(&rb);
	assert_int_equal(rb.ema_q16[0], 0);
	assert_int_equal(rb.ema_q16[1], 0);
	for (i = 0; i < sizeof(occ) / sizeof(occ[0]); i++) {
		assert_int_equal(fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, occ[i]), 0);
		assert_int_equal(rb.ema_q16[FC_RXBUF_POOL_BUF], (uint64_t)occ[i] << 16);
		assert_int_equal(rb.ema_q16[FC_RXBUF_POOL_PKT], 0); /* other pool untouched */
	}
}

static void test_ema_steps(void **state)
{
	/* alpha 1/2, 0 -> 100: 50, 75, 87.5, 93.75, 96.875 */
	static const double half[] = { 50, 75, 87.5, 93.75, 96.875 };
	/* alpha 1/4, 0 -> 64: 64 * (1 - (3/4)^n) = 16, 28, 37, 43.75, 48.8125, 52.609375 */
	static const double quarter[] = { 16, 28, 37, 43.75, 48.8125, 52.609375 };
	struct fc_rxbuf_cfg cfg;
	struct fc_rxbuf rb;
	size_t i;

	(void)state;
	cfg_steps(&cfg, 10, FC_RXBUF_ALPHA_ONE / 2);
	cfg.alpha[FC_RXBUF_POOL_BUF] = FC_RXBUF_ALPHA_ONE / 4;
	fc_rxbuf_init(&rb);
	for (i = 0; i < 5; i++) {
		fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 100);
		assert_int_equal(rb.ema_q16[FC_RXBUF_POOL_PKT], Q(half[i]));
	}
	for (i = 0; i < 6; i++) {
		fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 64);
		assert_int_equal(rb.ema_q16[FC_RXBUF_POOL_BUF], Q(quarter[i]));
	}
	/* downward, alpha 1/2 from 96.875 toward 0: 48.4375, 24.21875 */
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 0);
	assert_int_equal(rb.ema_q16[FC_RXBUF_POOL_PKT], Q(48.4375));
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 0);
	assert_int_equal(rb.ema_q16[FC_RXBUF_POOL_PKT], Q(24.21875));
	/* toward 8 from 24.21875: 16.109375 */
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 8);
	assert_int_equal(rb.ema_q16[FC_RXBUF_POOL_PKT], Q(16.109375));
}

/* Rounding toward the sample: alpha 1/2 toward 1 gives 1 - 2^-n for n <= 16 (exact),
 * then the remaining 1/65536 step rounds up and reaches 1 at step 17. */
static void test_ema_reaches_target(void **state)
{
	struct fc_rxbuf_cfg cfg;
	struct fc_rxbuf rb;
	unsigned n;
	uint64_t prev;

	(void)state;
	cfg_steps(&cfg, 1, FC_RXBUF_ALPHA_ONE / 2);
	fc_rxbuf_init(&rb);
	for (n = 1; n <= 16; n++) {
		fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 1);
		assert_int_equal(rb.ema_q16[0], 65536 - (65536 >> n));
		assert_int_equal(fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_PKT), 0);
	}
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 1);
	assert_int_equal(rb.ema_q16[0], 65536);
	assert_int_equal(fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_PKT), 1);
	/* ... and downward to 0 the same way */
	for (n = 1; n <= 17; n++)
		fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 0);
	assert_int_equal(rb.ema_q16[0], 0);

	/* alpha 3/65536 toward 1000: monotone, never overshoots, reaches it */
	cfg.alpha[1] = 3;
	prev = 0;
	for (n = 0; n < 2000000 && rb.ema_q16[1] != Q(1000); n++) {
		fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 1000);
		if (rb.ema_q16[1] <= prev || rb.ema_q16[1] > Q(1000))
			fail_msg("step %u: %llu after %llu", n, (unsigned long long)rb.ema_q16[1],
				 (unsigned long long)prev);
		prev = rb.ema_q16[1];
	}
	assert_int_equal(rb.ema_q16[1], Q(1000));
	/* first step: ceil(1000 * 65536 * 3 / 65536) = 3000 units exactly */
	fc_rxbuf_init(&rb);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 1000);
	assert_int_equal(rb.ema_q16[1], 3000);
	/* 7 toward 0 with 3: ceil(7 * 3 / 65536) = 1 */
	rb.ema_q16[1] = 7;
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 0);
	assert_int_equal(rb.ema_q16[1], 6);
}

/* Large occupancies do not overflow the Q16 product. */
static void test_ema_large(void **state)
{
	struct fc_rxbuf_cfg cfg;
	struct fc_rxbuf rb;

	(void)state;
	cfg_steps(&cfg, 1, FC_RXBUF_ALPHA_ONE);
	fc_rxbuf_init(&rb);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 0xFFFFFFFFu);
	cfg.alpha[0] = FC_RXBUF_ALPHA_ONE / 2;
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 0);
	assert_int_equal(rb.ema_q16[0], 0x7FFFFFFF8000ull); /* 0xFFFFFFFF / 2 in Q16 */
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 0xFFFFFFFFu);
	assert_int_equal(rb.ema_q16[0], 0xBFFFFFFF4000ull); /* 3/4 of it */
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 31);
}

static void set_ema(struct fc_rxbuf *rb, enum fc_rxbuf_pool p, uint64_t q16)
{
	rb->ema_q16[p] = q16;
}

/* thresholds 10, 20, ..., 310 */
static void test_quantization(void **state)
{
	static const struct { uint64_t ema_q16; unsigned level; } tab[] = {
		{ 0, 0 },
		{ Q(9), 0 },
		{ Q(10) - 1, 0 },  /* just below the first threshold */
		{ Q(10), 1 },      /* exactly at it */
		{ Q(10) + 1, 1 },
		{ Q(19.5), 1 },
		{ Q(20), 2 },
		{ Q(155), 15 },    /* 150 <= 155 < 160 */
		{ Q(160), 16 },
		{ Q(300) - 1, 29 },
		{ Q(300), 30 },
		{ Q(310) - 1, 30 }, /* just below the last */
		{ Q(310), 31 },     /* at the last */
		{ Q(311), 31 },     /* above it */
		{ Q(4000000000.0), 31 },
	};
	struct fc_rxbuf_cfg cfg;
	struct fc_rxbuf rb;
	size_t i;

	(void)state;
	cfg_steps(&cfg, 10, FC_RXBUF_ALPHA_ONE);
	fc_rxbuf_init(&rb);
	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		set_ema(&rb, FC_RXBUF_POOL_PKT, tab[i].ema_q16);
		set_ema(&rb, FC_RXBUF_POOL_BUF, 0);
		if (fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_PKT) != tab[i].level ||
		    fc_rxbuf_level(&rb, &cfg) != tab[i].level)
			fail_msg("ema %#llx: level %u, want %u", (unsigned long long)tab[i].ema_q16,
				 fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_PKT), tab[i].level);
	}
	/* the same through updates with alpha 1 */
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 40);
	assert_int_equal(fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_BUF), 4);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 39);
	assert_int_equal(fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_BUF), 3);
	/* duplicate thresholds skip a level: 10, 20, 30, 30, 50, ... */
	cfg.threshold[FC_RXBUF_POOL_BUF][3] = 30;
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 30);
	assert_int_equal(fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_BUF), 4);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 29);
	assert_int_equal(fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_BUF), 2);
}

/* Each pool has its own thresholds; the ACK carries the max. */
static void test_max_over_pools(void **state)
{
	struct fc_rxbuf_cfg cfg;
	struct fc_rxbuf rb;

	(void)state;
	cfg_steps(&cfg, 10, FC_RXBUF_ALPHA_ONE);
	for (unsigned k = 0; k < FC_RXBUF_THRESHOLDS; k++)
		cfg.threshold[FC_RXBUF_POOL_BUF][k] = 1000 * (k + 1);
	fc_rxbuf_init(&rb);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 35);    /* level 3 */
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 17000); /* level 17 */
	assert_int_equal(fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_PKT), 3);
	assert_int_equal(fc_rxbuf_pool_level(&rb, &cfg, FC_RXBUF_POOL_BUF), 17);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 17);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 250);  /* level 25 */
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 999);  /* level 0 */
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 25);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 0);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 0);
	/* the level fits the ACK's 5-bit field */
	assert_true(FC_RXBUF_MAX_LEVEL <= FC_CC_RXBUF_MASK);
}

static void test_default_cfg(void **state)
{
	struct fc_rxbuf_cfg cfg;
	struct fc_rxbuf rb;

	(void)state;
	fc_rxbuf_cfg_default(&cfg, 1024, 100);
	assert_int_equal(fc_rxbuf_cfg_check(&cfg), 0);
	assert_int_equal(cfg.alpha[0], 8192);
	assert_int_equal(cfg.alpha[1], 8192);
	/* 1024 / 32 = 32 per level */
	assert_int_equal(cfg.threshold[0][0], 32);
	assert_int_equal(cfg.threshold[0][15], 512);
	assert_int_equal(cfg.threshold[0][30], 992);
	/* 100: ceil(100/32) = 4, ceil(1600/32) = 50, ceil(3100/32) = ceil(96.875) = 97 */
	assert_int_equal(cfg.threshold[1][0], 4);
	assert_int_equal(cfg.threshold[1][15], 50);
	assert_int_equal(cfg.threshold[1][30], 97);
	cfg.alpha[0] = cfg.alpha[1] = FC_RXBUF_ALPHA_ONE;
	fc_rxbuf_init(&rb);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 31);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 0);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 32);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 1);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 1023);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 31);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 0);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 100);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 31);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 96);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 30);
	/* a pool smaller than 32: empty is 0, full is 31 */
	fc_rxbuf_cfg_default(&cfg, 16, 1);
	cfg.alpha[0] = cfg.alpha[1] = FC_RXBUF_ALPHA_ONE;
	fc_rxbuf_init(&rb);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 0);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 16);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 31);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 0);
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_BUF, 1);
	assert_int_equal(fc_rxbuf_level(&rb, &cfg), 31);
}

/* fc_rxbuf_note's cached level is fc_rxbuf_level after every update: default thresholds,
 * thresholds with repeats and zeros, a zero-capacity pool (always 31), alphas from
 * instant to slow, random occupancies walking up and down. */
static void test_note_cache_matches_level(void **state)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;

	(void)state;
	for (int run = 0; run < 40; run++) {
		struct fc_rxbuf_cfg cfg;
		struct fc_rxbuf rb, ref;
		uint32_t cap[2], occ[2] = { 0, 0 };

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		cap[0] = run == 3 ? 0 : (uint32_t)(x >> 40) % 5000 + 1;
		cap[1] = (uint32_t)(x >> 20) % 70000 + 1;
		fc_rxbuf_cfg_default(&cfg, cap[0], cap[1]);
		if (run % 4 == 1) /* repeats and zeros */
			for (int k = 0; k < FC_RXBUF_THRESHOLDS; k++)
				cfg.threshold[1][k] = (uint32_t)(k / 5) * (cap[1] / 7);
		cfg.alpha[0] = run % 3 == 0 ? FC_RXBUF_ALPHA_ONE : FC_RXBUF_ALPHA_DEFAULT;
		cfg.alpha[1] = run % 5 == 0 ? 1 : FC_RXBUF_ALPHA_ONE / 3;
		assert_int_equal(fc_rxbuf_cfg_check(&cfg), 0);
		fc_rxbuf_init(&rb);
		fc_rxbuf_init(&ref);
		for (int i = 0; i < 3000; i++) {
			unsigned p;

			x = x * 6364136223846793005ull + 1442695040888963407ull;
			p = (unsigned)(x >> 63);
			if ((x >> 30) % 4 == 0) /* jumps */
				occ[p] = cap[p] ? (uint32_t)(x >> 33) % (cap[p] + 1) : 0;
			else if ((x >> 32) & 1) /* walk */
				occ[p] += occ[p] < cap[p];
			else
				occ[p] -= occ[p] > 0;
			assert_int_equal(fc_rxbuf_note(&rb, &cfg, (enum fc_rxbuf_pool)p, occ[p]),
					 (fc_rxbuf_update(&ref, &cfg, (enum fc_rxbuf_pool)p, occ[p]),
					  fc_rxbuf_level(&ref, &cfg)));
		}
	}
}

static void test_cfg_check_and_bad_pool(void **state)
{
	struct fc_rxbuf_cfg cfg;
	struct fc_rxbuf rb;

	(void)state;
	cfg_steps(&cfg, 10, FC_RXBUF_ALPHA_ONE);
	assert_int_equal(fc_rxbuf_cfg_check(&cfg), 0);
	cfg.alpha[1] = 0;
	assert_int_equal(fc_rxbuf_cfg_check(&cfg), -EINVAL);
	cfg.alpha[1] = FC_RXBUF_ALPHA_ONE + 1;
	assert_int_equal(fc_rxbuf_cfg_check(&cfg), -EINVAL);
	cfg.alpha[1] = 1;
	assert_int_equal(fc_rxbuf_cfg_check(&cfg), 0);
	cfg.threshold[0][30] = 299; /* below threshold[29] = 300 */
	assert_int_equal(fc_rxbuf_cfg_check(&cfg), -EINVAL);
	cfg.threshold[0][30] = 300; /* equal is fine */
	assert_int_equal(fc_rxbuf_cfg_check(&cfg), 0);

	fc_rxbuf_init(&rb);
	assert_int_equal(fc_rxbuf_update(&rb, &cfg, (enum fc_rxbuf_pool)2, 50), -EINVAL);
	assert_int_equal(rb.ema_q16[0], 0);
	assert_int_equal(rb.ema_q16[1], 0);
	assert_int_equal(fc_rxbuf_pool_level(&rb, &cfg, (enum fc_rxbuf_pool)7), 0);
	/* out-of-range alphas are clamped: 0 acts as 1, above ONE as ONE */
	cfg.alpha[0] = 0;
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 1);
	assert_int_equal(rb.ema_q16[0], 1);
	cfg.alpha[0] = 5 * FC_RXBUF_ALPHA_ONE;
	fc_rxbuf_update(&rb, &cfg, FC_RXBUF_POOL_PKT, 9);
	assert_int_equal(rb.ema_q16[0], Q(9));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alpha_one_is_instant),
		cmocka_unit_test(test_ema_steps),
		cmocka_unit_test(test_ema_reaches_target),
		cmocka_unit_test(test_ema_large),
		cmocka_unit_test(test_quantization),
		cmocka_unit_test(test_max_over_pools),
		cmocka_unit_test(test_default_cfg),
		cmocka_unit_test(test_cfg_check_and_bad_pool),
		cmocka_unit_test(test_note_cache_matches_level),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
