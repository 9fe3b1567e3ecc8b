/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rxbuf.h - the receiver's NIC buffer occupancy signal (spec 10.2).
 *
 * A receiver keeps an EMA of the occupancy of each of its 2 network request resource
 * pools (network Rx packets, network Rx buffer), updated on every change of occupancy:
 *
 *     ema = (1 - alpha) * ema + alpha * occupancy          (alpha per pool; 1 = instant)
 *
 * and quantizes it into 32 levels with 31 thresholds per pool. Every ACK/NACK carries the
 * larger of the two pools' levels in 5 bits (falcon/wire.h FC_CC_RXBUF_SHIFT/_MASK).
 *
 * Integer math (usable from BPF-sized code, deterministic across machines):
 * - Occupancy is an integer count in the pool's own unit (packets, buffer units).
 * - alpha is fixed point, FC_RXBUF_ALPHA_ONE (65536) = 1.0; valid range 1..65536.
 * - The EMA is kept in Q16 (occupancy * 65536). One update moves it toward the sample by
 *   alpha * (sample - ema), rounded up in magnitude (toward the sample): it never
 *   overshoots, moves by at least 1/65536 per change, and so reaches a constant
 *   occupancy exactly instead of stalling just short of it. With alpha = 1 it is the
 *   sample. Where alpha * (sample - ema) is a multiple of 1/65536 it is the exact EMA.
 *
 * Quantization, per pool, thresholds th[0..30] non-decreasing (th[k] is the spec's
 * level_{k+1}), in occupancy units:
 *     ema <  th[0]                  -> level 0
 *     th[i-1] <= ema < th[i]        -> level i   (1 <= i <= 30)
 *     ema >= th[30]                 -> level 31
 * i.e. a value exactly at a threshold belongs to the level above it (the spec writes
 * level_i <= ema <= level_{i+1}; the upper bound must be strict to be a function).
 * Computed as the number of thresholds <= ema.
 */
#ifndef FC_RXBUF_H
#define FC_RXBUF_H

#include <stdint.h>

enum fc_rxbuf_pool {
	FC_RXBUF_POOL_PKT = 0, /* network Rx packet pool */
	FC_RXBUF_POOL_BUF = 1, /* network Rx buffer pool */
	FC_RXBUF_POOLS = 2,
};

#define FC_RXBUF_LEVELS 32
#define FC_RXBUF_THRESHOLDS (FC_RXBUF_LEVELS - 1)
#define FC_RXBUF_MAX_LEVEL (FC_RXBUF_LEVELS - 1)   /* fits FC_CC_RXBUF_MASK (5 bits) */
#define FC_RXBUF_ALPHA_SHIFT 16
#define FC_RXBUF_ALPHA_ONE (1u << FC_RXBUF_ALPHA_SHIFT)
#define FC_RXBUF_ALPHA_DEFAULT (FC_RXBUF_ALPHA_ONE / 8) /* like TCP's SRTT gain */

struct fc_rxbuf_cfg {
	uint32_t alpha[FC_RXBUF_POOLS];                         /* 1..FC_RXBUF_ALPHA_ONE */
	uint32_t threshold[FC_RXBUF_POOLS][FC_RXBUF_THRESHOLDS]; /* non-decreasing */
};

struct fc_rxbuf {
	uint64_t ema_q16[FC_RXBUF_POOLS]; /* occupancy * 65536 */
	/* fc_rxbuf_note's cache: each pool's level and the EMA band [lo, hi) it holds for */
	uint64_t band_lo[FC_RXBUF_POOLS], band_hi[FC_RXBUF_POOLS];
	uint8_t plevel[FC_RXBUF_POOLS];
};

/* Defaults: alpha FC_RXBUF_ALPHA_DEFAULT for both pools, and thresholds evenly spaced
 * over each pool's capacity: th[k] = ceil((k + 1) * cap / 32), so level
 * = floor(32 * ema / cap) when cap is a multiple of 32; for any cap >= 1 an empty pool
 * is level 0 and a full one level 31 (cap 0 makes every threshold 0: always level 31). */
void fc_rxbuf_cfg_default(struct fc_rxbuf_cfg *cfg, uint32_t pkt_pool_cap,
			  uint32_t buf_pool_cap);
/* 0 when cfg is usable, -EINVAL when an alpha is 0 or above FC_RXBUF_ALPHA_ONE or a
 * pool's thresholds decrease. */
int fc_rxbuf_cfg_check(const struct fc_rxbuf_cfg *cfg);

/* Both EMAs start at 0 (empty pools). */
void fc_rxbuf_init(struct fc_rxbuf *rb);
/* Pool pool changed to occupancy: update its EMA. Returns 0, or -EINVAL for a bad pool
 * (nothing changes). An alpha out of range is clamped to 1..FC_RXBUF_ALPHA_ONE. */
int fc_rxbuf_update(struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg,
		    enum fc_rxbuf_pool pool, uint32_t occupancy);
/* fc_rxbuf_update, then the level an ACK carries (fc_rxbuf_level), from a cache: the
 * thresholds are searched again only when a pool's EMA leaves the band of its level.
 * pool must be valid; cfg must not change after the first call (fc_rxbuf_init resets). */
unsigned fc_rxbuf_note(struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg,
		       enum fc_rxbuf_pool pool, uint32_t occupancy);
/* The same for the pools whose bit (1 << pool) is set in changed, each stepped toward its
 * occupancy[pool] in pool order, with one look at the cache: the result equals one
 * fc_rxbuf_note per changed pool (a request takes from both pools at once, 8.2.4). */
unsigned fc_rxbuf_note_pools(struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg,
			     unsigned changed, const uint32_t occupancy[FC_RXBUF_POOLS]);
/* Quantized level 0..31 of one pool (0 for a bad pool). */
unsigned fc_rxbuf_pool_level(const struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg,
			     enum fc_rxbuf_pool pool);
/* What an ACK/NACK carries: the larger of the two pools' levels, 0..31. */
unsigned fc_rxbuf_level(const struct fc_rxbuf *rb, const struct fc_rxbuf_cfg *cfg);

#endif
