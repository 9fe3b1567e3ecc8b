/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encap_null.h - the node's encapsulation in `security none` mode: a PSP header of
 * version NULL (0xF, docs/wire.md section 2: no encryption, no ICV trailer) in front of
 * every Falcon packet. It carries what the receiver needs of PSP without the cipher: the
 * IV, the 64-bit transmit time in ns, strictly increasing, which becomes the packet's t1
 * (an ACK echoes it; Swift measures RTT and fabric delay from it, spec 7.7.1, 10.3).
 * The PSP issue replaces it with sealing and opening under a key, with the same header.
 */
#ifndef FC_ENCAP_NULL_H
#define FC_ENCAP_NULL_H

#include <stdint.h>

#include "node.h"

struct fc_encap_null {
	uint64_t (*now_ns)(void);  /* the sender's clock (the caller's monotonic time) */
	uint64_t last_iv;          /* the last IV sent: the next is strictly greater */
	uint64_t rx_bad_hdr;       /* frames refused: not a NULL-version PSP header */
};

/* seal: PSP header at f->buf, f->len = 16 + len; returns 0.
 * open: -EPROTO (no PSP header of version NULL carrying Falcon: counted in rx_bad_hdr),
 * else 0 with f->buf / f->len on the Falcon packet and f->meta.tx_ns = the IV. */
extern const struct fc_encap_ops fc_encap_null_ops;

#endif
