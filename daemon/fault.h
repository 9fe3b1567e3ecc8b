/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault.h - falcond's fault injection (off by default; --fault-tx / --fault-rx): seeded
 * drop, duplicate, reorder and corrupt, each a probability in parts per million, per
 * direction. Transmit faults sit between the node and the I/O backend as an io_ops of
 * their own (fc_fault_ops wraps the real backend); receive faults are applied to each
 * received batch before the node sees it (fc_fault_rx, an io_udp rx filter).
 *
 *   node -> fc_fault_ops.tx_send -> [drop | dup | hold for reorder | flip a bit] -> inner
 *   inner rx batch -> fc_fault_rx -> [drop | dup | hold a copy for reorder | flip] -> node
 *
 * Deterministic per seed (xorshift64*), bounded: at most FC_FAULT_HOLD_MAX frames held per
 * direction, no allocation after fc_fault_new. A frame dropped on transmit counts as sent
 * for the node (tx_send returns it as taken: the loss is the wire's, not the backend's),
 * so the node's tx_io_drop counter stays the backend's alone.
 */
#ifndef FC_FAULT_H
#define FC_FAULT_H

#include <stdint.h>

#include "node.h"

#define FC_FAULT_HOLD_MAX 8u
#define FC_FAULT_FRAME_BYTES 9216u /* a held receive frame is copied: at most this long */

struct fc_fault_dir {
	uint32_t drop_ppm, dup_ppm, reorder_ppm, corrupt_ppm;
};

struct fc_fault_cfg {
	uint64_t seed;
	struct fc_fault_dir tx, rx;
};

struct fc_fault_stats {
	uint64_t tx_drop, tx_dup, tx_reorder, tx_corrupt;
	uint64_t rx_drop, rx_dup, rx_reorder, rx_corrupt;
};

/* "drop=5%,dup=1%,reorder=2%,corrupt=0.1%": each value a percentage ("%"), parts per
 * million ("ppm") or a fraction ("0.05"); keys may be left out (0). Returns 0 or -EINVAL
 * (unknown key, missing or malformed value, above 100 %). */
int fc_fault_parse_dir(const char *s, struct fc_fault_dir *out);

struct fc_fault;

extern const struct fc_io_ops fc_fault_ops; /* io_ctx: struct fc_fault */

/* Wrap inner (with its context). Returns NULL and sets errno: EINVAL (inner NULL, a
 * probability above 10^6), ENOMEM. */
struct fc_fault *fc_fault_new(const struct fc_fault_cfg *cfg, const struct fc_io_ops *inner,
			      void *inner_ctx);
/* Sends what is still held first (nothing is lost by stopping). NULL is a no-op. */
void fc_fault_free(struct fc_fault *f);

/* Apply the receive faults to f[0..n) in place; returns the new count (<= cap). A frame
 * held for reordering is copied (the backend reuses its buffer after the batch) and
 * released after the next batch's frames; frames longer than FC_FAULT_FRAME_BYTES are
 * never held. Copies point into the fault layer's memory, valid until the next call. */
unsigned fc_fault_rx(struct fc_fault *f, struct fc_frame *fr, unsigned n, unsigned cap);

/* Send the transmit frames held for reordering (the daemon calls it every millisecond, so
 * that a held frame is late, never lost). */
void fc_fault_flush_tx(struct fc_fault *f);

const struct fc_fault_stats *fc_fault_stats(const struct fc_fault *f);

#endif
