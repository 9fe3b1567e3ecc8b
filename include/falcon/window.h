/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon/window.h - the receiver's sliding windows (spec 9.2.1, 9.2.2.4, 9.2.5), shared
 * by the XDP program and the engine.
 *
 * One struct, two users: in XDP mode it lives in a BPF_F_MMAPABLE array map, XDP on
 * several CPUs marks packets received while falcond (mapping the same memory) acknowledges
 * them and advances the base PSNs. In UDP mode and in the simulator it is plain memory.
 *
 * Design: each window of W packets (request 64, data 128) keeps a ring of 2W slots,
 * slot = psn mod 2W. A slot is one 64-bit word: the PSN it currently stands for (tag,
 * upper 32 bits) and state flags (RX, ACK; lower bits). The invariant the daemon keeps:
 *
 *     for every q in [base, base + W): slot[q mod 2W].tag == q
 *
 * Marking PSN p received is one compare-and-swap from (p, 0) to (p, RX[|ACK]). It
 * succeeds exactly once for a PSN inside the window, and it cannot succeed on a slot that
 * stands for another PSN: a CPU that read an old base and is late (p has left the window,
 * its slot now stands for p + 2W) fails the CAS because the tag differs. That is what
 * makes "no accepted packet lost or accepted twice" hold without locks.
 *
 * Only the daemon advances a base (fc_win_advance): before it publishes base' it re-tags
 * the slots of the PSNs entering the window, [base + W, base' + W); those slots stood
 * for PSNs below the old base, which no one may mark any more. It publishes base' with a
 * release store; readers load it with acquire semantics.
 *
 * PSN arithmetic is modulo 2^32 (serial numbers, spec 9.2.1).
 *
 * Ordering contract: fc_win_mark_rx / fc_win_check / fc_win_own_set may run on any CPU
 * at any time; fc_win_mark_ack may run concurrently with them; fc_win_init,
 * fc_win_advance, fc_win_own_take and fc_win_snapshot are called by a single owner (the
 * daemon's engine) for a given window.
 */
#ifndef FALCON_WINDOW_H
#define FALCON_WINDOW_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define FC_REQ_WIN 64   /* request window, packets (spec 9.2.1) */
#define FC_DATA_WIN 128 /* data window, packets (spec 9.2.1) */
#define FC_WIN_SLOTS_MAX 256 /* 2 x the largest window */

#define FC_SLOT_RX 0x1ull  /* received (data-rx-bitmap) */
#define FC_SLOT_ACK 0x2ull /* acknowledged (data-ack-bitmap / req-bitmap) */
#define FC_SLOT_SEEN 0x4ull /* the engine has processed the packet (XDP mode: XDP marks RX
			     * alone, the engine adds SEEN, and ACK when it acknowledges) */
#define FC_SLOT_FLAGS 0xFFull /* flag bits; bits 31:8 hold XDP's mark time (below) */
#define FC_SLOT_TS_SHIFT 8
#define FC_SLOT_TS_MASK 0xFFFFFFu /* mark time, 131.072 ns units (ns >> 17), mod 2^24 */
/* A copy of a packet XDP marked less than this long ago that the engine has not taken
 * yet is a duplicate travelling with the original (a switch or router duplicated it; the
 * original waits in the AF_XDP ring for a daemon that may be descheduled for a few
 * milliseconds on a busy host): answered by XDP. An older one may be the sender's
 * retransmission of a copy lost between XDP and the daemon (a full ring, rare): passed
 * on. 64 units = 8.4 ms: a lost copy is replaced by the first timeout retransmission
 * sent that long after it (falcond's RTO is at least 2 ms and doubles per retry). */
#define FC_WIN_XDP_YOUNG_TS 64u

/* Atomics usable from both worlds. BPF has no acquire/release loads; on every JIT the
 * kernel ships, a volatile 32-bit load is single-copy atomic and the slot CAS below is a
 * full barrier. Userspace uses the C11-style builtins. */
#ifdef __bpf__
#define fc_load_acq32(p) (*(volatile __u32 *)(p))
#define fc_store_rel32(p, v) (*(volatile __u32 *)(p) = (v))
#define fc_load64(p) (*(volatile __u64 *)(p))
#define fc_store64(p, v) (*(volatile __u64 *)(p) = (v))
#else
#define fc_load_acq32(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define fc_store_rel32(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define fc_load64(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define fc_store64(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#endif
#define fc_cas64(p, old, new) __sync_val_compare_and_swap((p), (old), (new))
#define fc_fetch_or64(p, v) __sync_fetch_and_or((p), (v))
#define fc_fetch_and64(p, v) __sync_fetch_and_and((p), (v))
#define fc_fetch_add64(p, v) __sync_fetch_and_add((p), (v))

/* Serial-number comparison of PSNs/RSNs modulo 2^32. */
static inline int fc_sn_lt(__u32 a, __u32 b) { return (__s32)(a - b) < 0; }
static inline int fc_sn_le(__u32 a, __u32 b) { return (__s32)(a - b) <= 0; }

struct fc_win {
	__u32 base;   /* RBPSN / DBPSN: oldest PSN not yet acknowledged; daemon writes */
	__u32 size;   /* W: FC_REQ_WIN or FC_DATA_WIN */
	__u64 own;    /* out-of-window notification pending (R-OWN / D-OWN), 0 or 1 */
	__u64 slot[FC_WIN_SLOTS_MAX]; /* 2W used: (tag << 32) | FC_SLOT_* */
};

/* Per-connection receiver state (spec 9.2.1): both windows plus what ACK generation needs. */
struct fc_rx_state {
	struct fc_win req;   /* request window: Pull Request packets */
	struct fc_win data;  /* data window: Push Data, Pull Data, Resync */
	__u64 ack_pending;   /* packets (accepted or discarded) since the last ACK (9.1.6) */
	__u64 ar_pending;    /* an accepted or discarded packet asked for an ACK (AR bit) */
	__u64 t1_t2;         /* t1 << 32 | t2 of the most recent packet (7.7.1) */
	__u64 remote_time;   /* receiver's estimate of the peer's IV time (9.2.2.2) */
	__u32 tx_bpsn[2];    /* our transmit windows' base PSNs ([0] request, [1] data),
			      * published by the PDL as ACKs move them: XDP discards an
			      * ACK/NACK whose bases are below them (stale, 9.2.3) */
};

enum fc_win_verdict {
	FC_WIN_NEW = 0, /* accepted: first time this PSN is seen; state committed */
	FC_WIN_DUP = 1, /* inside the window and received before (9.2.2.4 duplicate) */
	FC_WIN_OLD = 2, /* below the base: old duplicate */
	FC_WIN_OOW = 3, /* at or beyond base + W: dropped, OWN set */
};

static inline __u32 fc_win_mask(const struct fc_win *w)
{
	return (2 * w->size - 1) & (FC_WIN_SLOTS_MAX - 1);
}

static inline __u64 *fc_win_slot(struct fc_win *w, __u32 psn)
{
	return &w->slot[psn & fc_win_mask(w) & (FC_WIN_SLOTS_MAX - 1)];
}

static inline __u64 fc_slot_make(__u32 psn, __u64 flags) { return ((__u64)psn << 32) | flags; }
static inline __u64 fc_slot_state(__u64 s) { return s & FC_SLOT_FLAGS; }

/* Position of psn relative to the window whose base is base. */
static inline enum fc_win_verdict fc_win_classify(__u32 base, __u32 size, __u32 psn)
{
	__u32 d = psn - base;

	if ((__s32)d < 0)
		return FC_WIN_OLD;
	if (d >= size)
		return FC_WIN_OOW;
	return FC_WIN_NEW;
}

/* Configure a window of size (FC_REQ_WIN or FC_DATA_WIN) starting at base. Not concurrent
 * with anything on this window (connection setup, before the map slot is published). */
static inline void fc_win_init(struct fc_win *w, __u32 size, __u32 base)
{
	__u32 i;

	w->size = size;
	w->own = 0;
	/* slots beyond 2W are never indexed (fc_win_mask) and are left as they are */
	for (i = 0; i < FC_WIN_SLOTS_MAX && i < 2 * size; i++)
		w->slot[(base + i) & fc_win_mask(w)] = fc_slot_make(base + i, 0);
	fc_store_rel32(&w->base, base);
}

/* Read-only check of spec 9.2.2.4, for a caller that may not commit (XDP before the
 * packet is authenticated). Returns NEW when the PSN is in the window and not yet
 * received. */
static inline enum fc_win_verdict fc_win_check(struct fc_win *w, __u32 psn)
{
	__u32 base = fc_load_acq32(&w->base);
	enum fc_win_verdict v = fc_win_classify(base, w->size, psn);
	__u64 s;

	if (v != FC_WIN_NEW)
		return v;
	s = fc_load64(fc_win_slot(w, psn));
	if ((__u32)(s >> 32) != psn)
		return FC_WIN_OLD; /* slot moved on: psn left the window meanwhile */
	return (s & FC_SLOT_RX) ? FC_WIN_DUP : FC_WIN_NEW;
}

/* fc_win_mark_rx with the flags to set (FC_SLOT_RX and any of ACK, SEEN). */
static inline enum fc_win_verdict fc_win_mark_flags(struct fc_win *w, __u32 psn, __u64 flags)
{
	__u32 base = fc_load_acq32(&w->base);
	enum fc_win_verdict v = fc_win_classify(base, w->size, psn);
	__u64 *slot, old;

	if (v == FC_WIN_OOW) {
		fc_fetch_or64(&w->own, 1);
		return v;
	}
	if (v != FC_WIN_NEW)
		return v;
	slot = fc_win_slot(w, psn);
	old = fc_cas64(slot, fc_slot_make(psn, 0), fc_slot_make(psn, FC_SLOT_RX | flags));
	if (old == fc_slot_make(psn, 0))
		return FC_WIN_NEW;
	if ((__u32)(old >> 32) != psn)
		return FC_WIN_OLD; /* we read a stale base; psn is below the window now */
	return FC_WIN_DUP;
}

/* Sliding window check and commit of spec 9.2.2.4: marks psn received (and acknowledged
 * too when ack_now, i.e. every packet type except Push Data, whose ACK waits for the ULP).
 * An out-of-window PSN sets OWN. Safe on any number of CPUs at once. */
static inline enum fc_win_verdict fc_win_mark_rx(struct fc_win *w, __u32 psn, int ack_now)
{
	return fc_win_mark_flags(w, psn, ack_now ? FC_SLOT_ACK : 0);
}

/*
 * The XDP contract (XDP mode). XDP marks a packet received (RX alone) and passes it to
 * the daemon, whose engine takes it (fc_win_take: SEEN, and ACK for all but Push Data).
 * A marked packet can still be lost on its way (the AF_XDP ring was full), so a packet
 * whose slot shows RX but not SEEN is no duplicate for XDP: it passes again, and the
 * engine, which runs one packet at a time, takes exactly one of the copies. Only what
 * the engine has taken (SEEN) is answered by XDP as a duplicate. Nothing is acknowledged
 * to the sender before the engine has the packet. XDP keeps the time it marked a slot in
 * it: a copy younger than FC_WIN_XDP_YOUNG_TS is a duplicate made on the way (it travels
 * with the original, which is on its way to the engine) and is answered too; answering
 * it acknowledges nothing (the ACK carries the bases, which have not moved past it), so
 * the sender retransmits once more if the original was lost after all.
 *
 * fc_win_xdp_mark: XDP's side, now_ts = the time in 131.072 ns units (ns >> 17). NEW:
 * pass it on, marked; DUP / OLD: a duplicate of a packet the engine has (or a young copy
 * of one on its way there), answer it; OOW: dropped, OWN set.
 */
static inline enum fc_win_verdict fc_win_xdp_mark(struct fc_win *w, __u32 psn, __u32 now_ts)
{
	enum fc_win_verdict v = fc_win_mark_flags(w, psn,
		(__u64)(now_ts & FC_SLOT_TS_MASK) << FC_SLOT_TS_SHIFT);
	__u32 age;
	__u64 s;

	if (v != FC_WIN_DUP)
		return v;
	s = fc_load64(fc_win_slot(w, psn));
	if ((__u32)(s >> 32) != psn || (s & FC_SLOT_SEEN))
		return FC_WIN_DUP;
	age = (now_ts - (__u32)(s >> FC_SLOT_TS_SHIFT)) & FC_SLOT_TS_MASK;
	if (age < FC_WIN_XDP_YOUNG_TS)
		return FC_WIN_DUP; /* travels with the original */
	return FC_WIN_NEW; /* received, not taken for a while: perhaps lost after marking */
}

/* The engine's side: take a packet XDP passed as new, exactly once: set SEEN (and ACK
 * when ack_now). Returns 0 when this call took it, 1 when it was taken before (a
 * duplicate), 2 when psn is not a received PSN of the window (then classify it as
 * usual). Single owner: only the engine changes a slot that shows RX, so the CAS
 * succeeds at once; the bound is for safety. */
static inline int fc_win_take(struct fc_win *w, __u32 psn, int ack_now)
{
	__u64 *slot = fc_win_slot(w, psn), s;
	int i;

	if (fc_win_classify(fc_load_acq32(&w->base), w->size, psn) != FC_WIN_NEW)
		return 2;
	for (i = 0; i < 4; i++) {
		s = fc_load64(slot);
		if ((__u32)(s >> 32) != psn || !(s & FC_SLOT_RX))
			return 2;
		if (s & FC_SLOT_SEEN)
			return 1;
		if (fc_cas64(slot, s, s | FC_SLOT_SEEN | (ack_now ? FC_SLOT_ACK : 0)) == s)
			return 0;
	}
	return 1;
}

/* The ULP acknowledged a received packet (Push Data, spec 9.2.2.4): set its ACK bit.
 * Returns 0, or 1 if psn is not a received, unacknowledged packet of this window. */
static inline int fc_win_mark_ack(struct fc_win *w, __u32 psn)
{
	__u64 *slot = fc_win_slot(w, psn), s;

	if (fc_win_classify(fc_load_acq32(&w->base), w->size, psn) != FC_WIN_NEW)
		return 1;
	s = fc_load64(slot);
	if ((__u32)(s >> 32) != psn || (s & (FC_SLOT_RX | FC_SLOT_ACK)) != FC_SLOT_RX)
		return 1;
	return fc_cas64(slot, s, s | FC_SLOT_ACK) == s ? 0 : 1; /* SEEN kept */
}

/* Is psn (inside the window) received / acknowledged? For bitmaps and tests. */
static inline __u64 fc_win_flags(struct fc_win *w, __u32 psn)
{
	__u64 s = fc_load64(fc_win_slot(w, psn));

	return (__u32)(s >> 32) == psn ? (s & (FC_SLOT_RX | FC_SLOT_ACK)) : 0;
}

/* Advance the base over every acknowledged PSN (spec 9.2.2.4 last rule, 9.2.5): re-tag
 * the slots entering the window, then publish the new base. Single owner only. Returns
 * how many PSNs the base moved. */
static inline __u32 fc_win_advance(struct fc_win *w)
{
	__u32 base = w->base, n = 0, i;

	for (i = 0; i < FC_WIN_SLOTS_MAX / 2 && i < w->size; i++) {
		if (!(fc_win_flags(w, base + i) & FC_SLOT_ACK))
			break;
		n++;
	}
	for (i = 0; i < FC_WIN_SLOTS_MAX / 2 && i < n; i++) {
		__u32 q = base + w->size + i;

		fc_store64(fc_win_slot(w, q), fc_slot_make(q, 0));
	}
	if (n)
		fc_store_rel32(&w->base, base + n);
	return n;
}

/* Set / take the out-of-window notification (R-OWN, D-OWN). Take clears it: the caller
 * is putting it into an outgoing EACK (spec 9.2.1). */
static inline void fc_win_own_set(struct fc_win *w) { fc_fetch_or64(&w->own, 1); }
static inline int fc_win_own_take(struct fc_win *w) { return fc_fetch_and64(&w->own, 0) != 0; }

/* Snapshot of the window for an EACK (spec 7.7.2): bit i of rx/ack stands for base + i.
 * rx and ack hold 128 bits as two words ([0] = bits 63:0). Single owner (the daemon).
 * Only slots below hi are read (PSNs from hi on read as not received): an owner that
 * knows the highest PSN marked so far passes one past it and reads one cache line
 * instead of 16 of a connection it has not touched for a while; a PSN it does not know
 * of (XDP marked it, the engine has not seen it yet) is only reported later, which is
 * safe (the sender retransmits, never forgets). fc_win_snapshot reads the whole window. */
static inline __u32 fc_win_snapshot_to(struct fc_win *w, __u32 hi, __u64 rx[2], __u64 ack[2])
{
	__u32 base = w->base, i, n = hi - base;

	rx[0] = rx[1] = ack[0] = ack[1] = 0;
	if ((__s32)n < 0)
		n = 0;
	for (i = 0; i < FC_WIN_SLOTS_MAX / 2 && i < w->size && i < n; i++) {
		__u64 f = fc_win_flags(w, base + i);

		if (f & FC_SLOT_RX)
			rx[i / 64] |= 1ull << (i % 64);
		if (f & FC_SLOT_ACK)
			ack[i / 64] |= 1ull << (i % 64);
	}
	return base;
}

static inline __u32 fc_win_snapshot(struct fc_win *w, __u64 rx[2], __u64 ack[2])
{
	__u32 base = w->base, i;

	rx[0] = rx[1] = ack[0] = ack[1] = 0;
	for (i = 0; i < FC_WIN_SLOTS_MAX / 2 && i < w->size; i++) {
		__u64 f = fc_win_flags(w, base + i);

		if (f & FC_SLOT_RX)
			rx[i / 64] |= 1ull << (i % 64);
		if (f & FC_SLOT_ACK)
			ack[i / 64] |= 1ull << (i % 64);
	}
	return base;
}

/* ACK coalescing bookkeeping shared by XDP and the daemon (spec 9.1.6, 9.2.2.4 note:
 * discarded packets count too, their AR bit is ignored). */
static inline void fc_rx_note_packet(struct fc_rx_state *rx, int ar, __u32 t1, __u32 t2)
{
	fc_fetch_add64(&rx->ack_pending, 1);
	if (ar)
		fc_fetch_or64(&rx->ar_pending, 1);
	fc_store64(&rx->t1_t2, ((__u64)t1 << 32) | t2);
}

#endif /* FALCON_WINDOW_H */
