/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rxbuf.c - receiver buffer occupancy EMA and its 32-level quantization (spec 10.2).
 * Arithmetic and boundary conventions are documented in rxbuf.h.
 */
#include <errno.h>
#include <string.h>

#include "rxbuf.h"

void fc_rxbuf_cfg_default(struct fc_rxbuf_cfg *cfg, uint32_t pkt_pool_cap,
			  uint32_t buf_pool_cap)
{
	const uint32_t cap[FC_RXBUF_POOLS] = { pkt_pool_cap, buf_pool_cap };
	unsigned p, k;

	for (p = 0; p < FC_RXBUF_POOLS; p++) {
		cfg->alpha[p] = FC_RXBUF_ALPHA_DEFAULT;
		for (k = 0; k < FC_RXBUF_THRESHOLDS; k++)
			cfg->threshold[p][k] =
				(uint32_t)(((uint64_t)(k + 1) * cap[p] + FC_RXBUF_LEVELS - 1) /
					   FC_RXBUF_LEVELS);
	}
}

int fc_rxbuf_cfg_check(const struct fc_rxbuf_cfg *cfg)
{
	unsigned p, k;

	for (p = 0; p < FC_RXBUF_POOLS; p++) {
		if (cfg->alpha[p] == 0 || cfg->alpha[p] > FC_RXBUF_ALPHA_ONE)
			return -EINVAL;
		for (k = 1; k < FC_RXBUF_THRESHOLDS; k++)
			if (cfg->threshold[p][k] < cfg->threshold[p][k - 1])
				return -EINVAL;
	}
	return 0;
}

void fc_rxbuf_init(struct fc_rxbuf *rb)
{
	memset(rb, 0, sizeof(*rb));
	for (unsigned p = 0; p < FC_RXBUF_POOLS; p++)
		rb->band_lo[p] = UINT64_MAX; /* empty band: the first note searches */
}

/* ceil(d * a / 65536) for d < 2^48 (an occupancy difference in Q16), a <= 2^16: d * a
 * is at most 2^64 - 2^16, so adding 65535 does not wrap either, and one multiply does. */
static uint64_t scaled_step(uint64_t d, uint32_t a)
{
	return (d * a + (FC_RXBUF_ALPHA_ONE - 1)) >> FC_RXBUF_ALPHA_SHIFT;
}

/* spec 10.2: ema = (1 - alpha) * ema + alpha * occupancy, i.e. ema += alpha * (occ - ema),
 * rounded toward the sample. */
/* One EMA step of pool (valid) toward occupancy. */
static inline void ema_step(struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg,
			    unsigned pool, uint32_t occupancy)
{
	uint64_t sample = (uint64_t)occupancy << FC_RXBUF_ALPHA_SHIFT, ema;
	uint32_t a = cfg->alpha[pool];

	if (a == 0)
		a = 1;
	if (a > FC_RXBUF_ALPHA_ONE)
		a = FC_RXBUF_ALPHA_ONE;
	ema = rb->ema_q16[pool];
	if (sample >= ema)
		ema += scaled_step(sample - ema, a);
	else
		ema -= scaled_step(ema - sample, a);
	rb->ema_q16[pool] = ema;
}

int fc_rxbuf_update(struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg,
		    enum fc_rxbuf_pool pool, uint32_t occupancy)
{
	if ((unsigned)pool >= FC_RXBUF_POOLS)
		return -EINVAL;
	ema_step(rb, cfg, pool, occupancy);
	return 0;
}

unsigned fc_rxbuf_pool_level(const struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg,
			     enum fc_rxbuf_pool pool)
{
	unsigned lo = 0, hi = FC_RXBUF_THRESHOLDS;

	if ((unsigned)pool >= FC_RXBUF_POOLS)
		return 0;
	/* the thresholds do not decrease (fc_rxbuf_cfg_check): the level is the number of
	 * them at or below the average, found by bisection (5 steps, not 31 compares) */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (rb->ema_q16[pool] >= (uint64_t)cfg->threshold[pool][mid] << FC_RXBUF_ALPHA_SHIFT)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Search pool p's level again if its EMA left the band of the cached one. */
static void refresh(struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg, unsigned p)
{
	uint64_t ema = rb->ema_q16[p];
	unsigned l;

	if (ema >= rb->band_lo[p] && ema < rb->band_hi[p])
		return;
	l = fc_rxbuf_pool_level(rb, cfg, (enum fc_rxbuf_pool)p);
	/* level l holds for th[l-1] <= ema < th[l] (see the top of rxbuf.h) */
	rb->plevel[p] = (uint8_t)l;
	rb->band_lo[p] = l ? (uint64_t)cfg->threshold[p][l - 1] << FC_RXBUF_ALPHA_SHIFT : 0;
	rb->band_hi[p] = l < FC_RXBUF_THRESHOLDS ?
		(uint64_t)cfg->threshold[p][l] << FC_RXBUF_ALPHA_SHIFT : UINT64_MAX;
}

unsigned fc_rxbuf_note_pools(struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg,
			     unsigned changed, const uint32_t occupancy[FC_RXBUF_POOLS])
{
	for (unsigned p = 0; p < FC_RXBUF_POOLS; p++)
		if (changed & (1u << p))
			ema_step(rb, cfg, p, occupancy[p]);
	refresh(rb, cfg, FC_RXBUF_POOL_PKT); /* both: the first note fills the other's cache */
	refresh(rb, cfg, FC_RXBUF_POOL_BUF);
	return rb->plevel[0] > rb->plevel[1] ? rb->plevel[0] : rb->plevel[1];
}

unsigned fc_rxbuf_note(struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg,
		       enum fc_rxbuf_pool pool, uint32_t occupancy)
{
	uint32_t occ[FC_RXBUF_POOLS] = {0};
	unsigned p = (unsigned)pool & 1;

	occ[p] = occupancy;
	return fc_rxbuf_note_pools(rb, cfg, 1u << p, occ);
}

unsigned fc_rxbuf_level(const struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg)
{
	unsigned a = fc_rxbuf_pool_level(rb, cfg, FC_RXBUF_POOL_PKT);
	unsigned b = fc_rxbuf_pool_level(rb, cfg, FC_RXBUF_POOL_BUF);

	return a > b ? a : b;
}
