/* SPDX-License-Identifier: Apache-2.0 */
/*
 * window_vectors.h - test vectors for include/falcon/window.h, run by the native unit test
 * (tests/unit/test_window.c) and, through BPF_PROG_TEST_RUN, inside a BPF program
 * (tests/bpf/window_vec.bpf.c + tests/bpf/test_window_bpf.c). Both must produce the
 * expected value of every step, so the same functions behave the same in both worlds.
 *
 * Expected values are written from the spec's rules (9.2.2.4, 9.2.5, 9.2.1), not from
 * running the code.
 */
#ifndef FC_TEST_WINDOW_VECTORS_H
#define FC_TEST_WINDOW_VECTORS_H

#include "falcon/window.h"

enum fc_wvec_opcode {
	WV_INIT,      /* a = base; window size from win */
	WV_MARK_RX,   /* a = psn, ack_now -> verdict */
	WV_MARK_ACK,  /* a = psn -> 0 ok, 1 refused */
	WV_CHECK,     /* a = psn -> verdict (read-only) */
	WV_ADVANCE,   /* -> PSNs advanced */
	WV_BASE,      /* -> base */
	WV_OWN_TAKE,  /* -> 1 if OWN was set (and clears it) */
	WV_FLAGS,     /* a = psn -> FC_SLOT_* */
	WV_SNAP_RX0,  /* snapshot, bits 63:0 of the rx bitmap */
	WV_SNAP_RX1,  /* bits 127:64 */
	WV_SNAP_ACK0,
	WV_SNAP_ACK1,
};

struct fc_wvec_op {
	__u8 op;
	__u8 win;     /* 0 = request window, 1 = data window */
	__u8 ack_now;
	__u8 pad;
	__u32 a;
	__u64 expect;
};

#define WREQ 0
#define WDATA 1

static inline __u64 fc_wvec_exec(struct fc_rx_state *s, const struct fc_wvec_op *o)
{
	struct fc_win *w = o->win ? &s->data : &s->req;
	__u64 rx[2], ack[2];

	switch (o->op) {
	case WV_INIT:
		fc_win_init(w, o->win ? FC_DATA_WIN : FC_REQ_WIN, o->a);
		return 0;
	case WV_MARK_RX:
		return fc_win_mark_rx(w, o->a, o->ack_now);
	case WV_MARK_ACK:
		return fc_win_mark_ack(w, o->a);
	case WV_CHECK:
		return fc_win_check(w, o->a);
	case WV_ADVANCE:
		return fc_win_advance(w);
	case WV_BASE:
		return w->base;
	case WV_OWN_TAKE:
		return fc_win_own_take(w);
	case WV_FLAGS:
		return fc_win_flags(w, o->a);
	case WV_SNAP_RX0:
	case WV_SNAP_RX1:
	case WV_SNAP_ACK0:
	case WV_SNAP_ACK1:
		fc_win_snapshot(w, rx, ack);
		switch (o->op) {
		case WV_SNAP_RX0: return rx[0];
		case WV_SNAP_RX1: return rx[1];
		case WV_SNAP_ACK0: return ack[0];
		default: return ack[1];
		}
	default:
		return ~0ull;
	}
}

#define R(op_, w_, a_, e_) { .op = (op_), .win = (w_), .a = (a_), .expect = (e_) }
#define RX(w_, psn, e_) { .op = WV_MARK_RX, .win = (w_), .ack_now = 1, .a = (psn), .expect = (e_) }
#define RXP(w_, psn, e_) { .op = WV_MARK_RX, .win = (w_), .ack_now = 0, .a = (psn), .expect = (e_) }

/* Each vector starts from WV_INIT. */
static const struct fc_wvec_op fc_wvec_all[] = {
	/* request window: base+63 accepted, base+64 out of window (spec 9.2.2.4) */
	R(WV_INIT, WREQ, 1000, 0),
	RX(WREQ, 1063, FC_WIN_NEW),
	RX(WREQ, 1064, FC_WIN_OOW),
	R(WV_OWN_TAKE, WREQ, 0, 1), /* OWN was set by the drop ... */
	R(WV_OWN_TAKE, WREQ, 0, 0), /* ... and cleared once an EACK carried it */
	RX(WREQ, 1063, FC_WIN_DUP),
	RX(WREQ, 999, FC_WIN_OLD),  /* below base: old duplicate */
	R(WV_ADVANCE, WREQ, 0, 0),  /* 1000 not received: base stays */
	RX(WREQ, 1000, FC_WIN_NEW),
	R(WV_ADVANCE, WREQ, 0, 1),
	R(WV_BASE, WREQ, 0, 1001),
	RX(WREQ, 1000, FC_WIN_OLD),
	RX(WREQ, 1064, FC_WIN_NEW), /* the window moved by one: 1064 = new base + 63 */
	RX(WREQ, 1065, FC_WIN_OOW),

	/* data window: base+127 accepted, base+128 out of window */
	R(WV_INIT, WDATA, 5000, 0),
	RX(WDATA, 5127, FC_WIN_NEW),
	RX(WDATA, 5128, FC_WIN_OOW),
	R(WV_OWN_TAKE, WDATA, 0, 1),
	RX(WDATA, 4999, FC_WIN_OLD),
	R(WV_SNAP_RX0, WDATA, 0, 0),
	R(WV_SNAP_RX1, WDATA, 0, 1ull << 63), /* bit 127 = base + 127 */

	/* wrap at 2^32: base 4294967294, window covers 4294967294 .. 125 */
	R(WV_INIT, WDATA, 4294967294u, 0),
	RX(WDATA, 4294967294u, FC_WIN_NEW),
	RX(WDATA, 4294967295u, FC_WIN_NEW),
	RX(WDATA, 0, FC_WIN_NEW),
	RX(WDATA, 125, FC_WIN_NEW),  /* base + 127 */
	RX(WDATA, 126, FC_WIN_OOW),  /* base + 128 */
	RX(WDATA, 4294967293u, FC_WIN_OLD),
	R(WV_ADVANCE, WDATA, 0, 3),
	R(WV_BASE, WDATA, 0, 1),
	RX(WDATA, 0, FC_WIN_OLD),
	RX(WDATA, 4294967295u, FC_WIN_OLD),
	RX(WDATA, 128, FC_WIN_NEW), /* base 1 + 127 */
	RX(WDATA, 129, FC_WIN_OOW),
	R(WV_INIT, WREQ, 4294967294u, 0),
	RX(WREQ, 61, FC_WIN_NEW),   /* base + 63 across the wrap */
	RX(WREQ, 62, FC_WIN_OOW),

	/* Push Data: received but not acknowledged until the ULP says so */
	R(WV_INIT, WDATA, 300, 0),
	RXP(WDATA, 301, FC_WIN_NEW),
	RXP(WDATA, 302, FC_WIN_NEW),
	RXP(WDATA, 303, FC_WIN_NEW),
	R(WV_SNAP_RX0, WDATA, 0, 0xE),  /* spec 6.6.6: 300 lost, 301-303 here */
	R(WV_SNAP_ACK0, WDATA, 0, 0),
	RXP(WDATA, 302, FC_WIN_DUP),    /* received, not yet acked: still a duplicate */
	R(WV_CHECK, WDATA, 302, FC_WIN_DUP),
	R(WV_CHECK, WDATA, 300, FC_WIN_NEW),
	R(WV_MARK_ACK, WDATA, 300, 1),  /* not received: the ULP cannot ack it */
	RXP(WDATA, 300, FC_WIN_NEW),
	R(WV_ADVANCE, WDATA, 0, 0),     /* received is not enough to move the base */
	R(WV_MARK_ACK, WDATA, 300, 0),
	R(WV_MARK_ACK, WDATA, 300, 1),  /* twice: refused */
	R(WV_MARK_ACK, WDATA, 302, 0),
	R(WV_FLAGS, WDATA, 302, FC_SLOT_RX | FC_SLOT_ACK),
	R(WV_FLAGS, WDATA, 301, FC_SLOT_RX),
	R(WV_SNAP_ACK0, WDATA, 0, 0x5),
	R(WV_ADVANCE, WDATA, 0, 1),     /* 300 acked, 301 not: base 301 */
	R(WV_BASE, WDATA, 0, 301),
	R(WV_MARK_ACK, WDATA, 301, 0),
	R(WV_MARK_ACK, WDATA, 303, 0),
	R(WV_ADVANCE, WDATA, 0, 3),
	R(WV_BASE, WDATA, 0, 304),
	R(WV_SNAP_RX0, WDATA, 0, 0),
	R(WV_MARK_ACK, WDATA, 304 + 128, 1), /* out of window */

	/* a full window received and advanced: every slot is re-tagged and reusable */
	R(WV_INIT, WREQ, 0, 0),
#define RX8(b) RX(WREQ, (b), 0), RX(WREQ, (b) + 1, 0), RX(WREQ, (b) + 2, 0), RX(WREQ, (b) + 3, 0), \
	RX(WREQ, (b) + 4, 0), RX(WREQ, (b) + 5, 0), RX(WREQ, (b) + 6, 0), RX(WREQ, (b) + 7, 0)
	RX8(0), RX8(8), RX8(16), RX8(24), RX8(32), RX8(40), RX8(48), RX8(56),
	RX(WREQ, 64, FC_WIN_OOW),
	R(WV_ADVANCE, WREQ, 0, 64),
	RX(WREQ, 0, FC_WIN_OLD),
	RX(WREQ, 64, FC_WIN_NEW),
	RX(WREQ, 127, FC_WIN_NEW),
	RX(WREQ, 128, FC_WIN_OOW),
	R(WV_SNAP_RX0, WREQ, 0, 0x8000000000000001ull),
	R(WV_SNAP_RX1, WREQ, 0, 0),     /* request window has 64 bits only */
};
#undef RX8

#define FC_WVEC_COUNT (sizeof(fc_wvec_all) / sizeof(fc_wvec_all[0]))

#endif
