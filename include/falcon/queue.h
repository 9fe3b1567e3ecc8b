/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon/queue.h - the rings a client process and falcond share (DESIGN.md, "The client
 * data path"): send queue, receive queue (and SRQ) and completion queue, in memory one
 * side creates (a memfd) and both map. This header is ABI: both sides compile it, the
 * layout is fixed by the static asserts below, and a ring starts with its own size and
 * version so that either side can refuse a ring it does not understand.
 *
 * One producer and one consumer per ring. The producer writes an entry, then publishes it
 * with a release store of its index; the consumer reads the index with an acquire load,
 * reads the entry, then gives the slot back with a release store of its own index. The
 * indexes are free-running 32-bit counters (position = index & (entries - 1)); each sits
 * on its own 64-byte cache line so that the two sides never write the same line. A
 * consumer that is about to sleep sets need_wakeup; a producer that sees it set rings the
 * doorbell (an eventfd), otherwise it does not make the system call (AF_XDP's idea).
 *
 * Everything in a ring is input from the other process: a consumer checks the header
 * (fc_ring_check) when it maps a ring and never trusts an index to be within
 * producer - consumer <= entries (fc_ring_avail clamps it and reports the violation).
 * Userspace only (C11 atomics through the GCC builtins).
 *
 * The producer's status word (fc_ring_set_status / fc_ring_status) tells the consumer
 * about the ring as a whole: FC_RING_ST_OVERFLOW on a CQ ring says that completions were
 * lost and the CQ is in the error state for good. It sits in reserved space of version 1
 * that fc_ring_init zeroes, so a reader that predates it sees a ring without status.
 */
#ifndef FALCON_QUEUE_H
#define FALCON_QUEUE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define FC_RING_MAGIC 0x464c4352u /* "FLCR" */
#define FC_RING_VERSION 1u
#define FC_RING_ENTRIES_MAX (1u << 16)
#define FC_RING_SGE_MAX 4u

/* Bits of the producer's status word (fc_ring_hdr.status); set, never cleared. */
#define FC_RING_ST_OVERFLOW 0x1u /* CQ: a completion did not fit (or came after one that
				    did not): the CQ is in the error state, nothing more is
				    written (falcon.h, falcon_poll_cq's -EOVERFLOW) */

enum fc_ring_kind {
	FC_RING_SQ = 1,  /* struct fc_ring_send_wr */
	FC_RING_RQ = 2,  /* struct fc_ring_recv_wr (receive queue or SRQ) */
	FC_RING_CQ = 3,  /* struct fc_ring_cqe */
};

/* The header: first the fields that tell what the rest is. */
struct fc_ring_hdr {
	uint32_t size;        /* sizeof(struct fc_ring_hdr) */
	uint32_t magic;       /* FC_RING_MAGIC */
	uint16_t version;     /* FC_RING_VERSION */
	uint16_t kind;        /* enum fc_ring_kind */
	uint32_t entry_size;  /* bytes per entry */
	uint32_t entries;     /* a power of 2, <= FC_RING_ENTRIES_MAX */
	uint32_t flags;       /* none yet: 0 */
	uint8_t pad0[40];
	/* written by the producer only */
	uint32_t prod;
	uint32_t status;      /* FC_RING_ST_*: the producer's state of the ring, 0: none */
	uint8_t pad1[56];
	/* written by the consumer only */
	uint32_t cons;
	uint32_t need_wakeup; /* the consumer sleeps until the doorbell rings */
	uint8_t pad2[56];
};

struct fc_ring_sge {
	uint64_t addr;
	uint32_t len;
	uint32_t lkey;
};

/* A send work request, as falcon_post_send takes it (opcodes of enum fc_rdma_wr_opcode). */
struct fc_ring_send_wr {
	uint64_t wr_id;
	uint8_t opcode;
	uint8_t flags;
	uint8_t num_sge;      /* <= FC_RING_SGE_MAX */
	uint8_t pad0;
	uint32_t imm;         /* SEND_IMM, WRITE_IMM; SEND_INV: the R_Key to invalidate */
	uint64_t remote_addr;
	uint32_t rkey;
	union {
		uint32_t ah;      /* UD: the address handle */
		uint32_t xrc_srq; /* XRC initiator: the target's XRC SRQ number */
	};
	uint32_t remote_qpn;  /* UD */
	uint32_t remote_qkey; /* UD */
	uint64_t compare_add, swap, compare_add_mask, swap_mask;
	struct fc_ring_sge sgl[FC_RING_SGE_MAX];
}; /* 136 bytes */

struct fc_ring_recv_wr {
	uint64_t wr_id;
	uint32_t num_sge;     /* <= FC_RING_SGE_MAX */
	uint32_t pad0;
	struct fc_ring_sge sgl[FC_RING_SGE_MAX];
}; /* 80 bytes */

/* A completion (the fields of ibverbs' ibv_wc that falcon fills). */
struct fc_ring_cqe {
	uint64_t wr_id;
	uint8_t status;       /* enum fc_wc_status, numbered as ibv_wc_status */
	uint8_t opcode;       /* numbered as ibv_wc_opcode (enum fc_rdma_wc_opcode) */
	uint16_t src_id;      /* UD receives: the sending daemon, 1 + falcond's index of it
				 (its node peer); 0: not known, or not a UD receive (was pad) */
	uint32_t flags;
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t invalidated_rkey;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t vendor_err;
}; /* 40 bytes */

_Static_assert(sizeof(struct fc_ring_hdr) == 192, "ring header: three cache lines");
_Static_assert(offsetof(struct fc_ring_hdr, prod) == 64, "producer index on line 1");
_Static_assert(offsetof(struct fc_ring_hdr, status) == 68, "producer status beside it");
_Static_assert(offsetof(struct fc_ring_hdr, cons) == 128, "consumer index on line 2");
_Static_assert(offsetof(struct fc_ring_hdr, need_wakeup) == 132, "wakeup flag beside it");
_Static_assert(sizeof(struct fc_ring_sge) == 16, "sge");
_Static_assert(sizeof(struct fc_ring_send_wr) == 136, "send wr");
_Static_assert(offsetof(struct fc_ring_send_wr, sgl) == 72, "send wr sgl");
_Static_assert(sizeof(struct fc_ring_recv_wr) == 80, "recv wr");
_Static_assert(sizeof(struct fc_ring_cqe) == 40, "cqe");

static inline uint32_t fc_ring_entry_size(enum fc_ring_kind kind)
{
	return kind == FC_RING_SQ ? sizeof(struct fc_ring_send_wr) :
	       kind == FC_RING_RQ ? sizeof(struct fc_ring_recv_wr) :
	       kind == FC_RING_CQ ? sizeof(struct fc_ring_cqe) : 0;
}

/* Bytes a ring of that kind and size takes, 0 for a bad kind or size. */
static inline size_t fc_ring_bytes(enum fc_ring_kind kind, uint32_t entries)
{
	if (!fc_ring_entry_size(kind) || !entries || entries > FC_RING_ENTRIES_MAX ||
	    (entries & (entries - 1)))
		return 0;
	return sizeof(struct fc_ring_hdr) + (size_t)entries * fc_ring_entry_size(kind);
}

/* Lay a ring out in mem (bytes long). Returns 0, or -EINVAL (bad kind or size, too
 * little memory). Indexes start at 0. */
static inline int fc_ring_init(void *mem, size_t bytes, enum fc_ring_kind kind, uint32_t entries)
{
	struct fc_ring_hdr *h = mem;
	size_t need = fc_ring_bytes(kind, entries);

	if (!mem || !need || bytes < need)
		return -EINVAL;
	__builtin_memset(h, 0, sizeof(*h));
	h->size = sizeof(*h);
	h->magic = FC_RING_MAGIC;
	h->version = FC_RING_VERSION;
	h->kind = (uint16_t)kind;
	h->entry_size = fc_ring_entry_size(kind);
	h->entries = entries;
	return 0;
}

/* Check a ring the other side laid out (bytes: what is mapped). Returns 0 or -EINVAL. */
static inline int fc_ring_check(const void *mem, size_t bytes, enum fc_ring_kind kind)
{
	const struct fc_ring_hdr *h = mem;

	if (!mem || bytes < sizeof(*h) || h->size != sizeof(*h) || h->magic != FC_RING_MAGIC ||
	    h->version != FC_RING_VERSION || h->kind != kind ||
	    h->entry_size != fc_ring_entry_size(kind) || h->flags ||
	    !fc_ring_bytes(kind, h->entries) || bytes < fc_ring_bytes(kind, h->entries))
		return -EINVAL;
	return 0;
}

static inline void *fc_ring_entry(void *mem, uint32_t index)
{
	struct fc_ring_hdr *h = mem;

	return (uint8_t *)mem + sizeof(*h) + (size_t)(index & (h->entries - 1)) * h->entry_size;
}

/* Producer: slots free to write (0: full). */
static inline uint32_t fc_ring_space(const void *mem)
{
	const struct fc_ring_hdr *h = mem;
	uint32_t cons = __atomic_load_n(&h->cons, __ATOMIC_ACQUIRE);
	uint32_t used = h->prod - cons;

	return used >= h->entries ? 0 : h->entries - used;
}

/* Producer: publish n written entries. */
static inline void fc_ring_produce(void *mem, uint32_t n)
{
	struct fc_ring_hdr *h = mem;

	__atomic_store_n(&h->prod, h->prod + n, __ATOMIC_RELEASE);
}

/* Consumer: entries ready to read. A producer index more than a ring ahead of ours is a
 * broken (or hostile) producer: *bad is set and 0 returned, the caller stops trusting
 * the ring. */
static inline uint32_t fc_ring_avail(const void *mem, int *bad)
{
	const struct fc_ring_hdr *h = mem;
	uint32_t prod = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	uint32_t n = prod - h->cons;

	if (n > h->entries) {
		if (bad)
			*bad = 1;
		return 0;
	}
	return n;
}

/* Consumer: give n read entries back. */
static inline void fc_ring_consume(void *mem, uint32_t n)
{
	struct fc_ring_hdr *h = mem;

	__atomic_store_n(&h->cons, h->cons + n, __ATOMIC_RELEASE);
}

/* Producer: set bits of the status word (FC_RING_ST_*). Release: a consumer that sees
 * them sees every entry published before. */
static inline void fc_ring_set_status(void *mem, uint32_t bits)
{
	struct fc_ring_hdr *h = mem;

	__atomic_fetch_or(&h->status, bits, __ATOMIC_RELEASE);
}

/* Consumer: the producer's status word (acquire). A consumer that finds the ring empty
 * and a status bit set reads fc_ring_avail once more: entries published before the bit
 * are visible now (the producer writes none after FC_RING_ST_OVERFLOW). */
static inline uint32_t fc_ring_status(const void *mem)
{
	const struct fc_ring_hdr *h = mem;

	return __atomic_load_n(&h->status, __ATOMIC_ACQUIRE);
}

/* Wakeups (libxdp's xsk_ring_prod__needs_wakeup idea). The consumer says whether it
 * polls (0: the producer need not ring) or is about to sleep (1: ring the doorbell after
 * producing). Ordering contract, the store-buffer pattern both sides must follow:
 *
 *   consumer going to sleep:  fc_ring_set_need_wakeup(r, 1); then fc_ring_avail(r)
 *                             once more, and sleep only if it is still 0
 *   producer:                 fc_ring_produce(r, n); then fc_ring_needs_wakeup(r),
 *                             and ring if it says so
 *
 * Each helper puts a full fence between its own store and the load that follows, so at
 * least one side sees the other's store: either the consumer sees the entries or the
 * producer sees the flag. Setting the flag to 0 needs no fence (a doorbell too many is
 * harmless), and a flag that already holds the value is not written again: a consumer
 * that polls does not dirty the cache line the producer reads. */

/* Consumer: 1 = about to sleep (ring me), 0 = polling. */
static inline void fc_ring_set_need_wakeup(void *mem, uint32_t on)
{
	struct fc_ring_hdr *h = mem;

	if (__atomic_load_n(&h->need_wakeup, __ATOMIC_RELAXED) != on)
		__atomic_store_n(&h->need_wakeup, on, __ATOMIC_RELAXED);
	if (on)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Producer, after fc_ring_produce: nonzero when the consumer sleeps and wants the
 * doorbell rung. */
static inline int fc_ring_needs_wakeup(const void *mem)
{
	const struct fc_ring_hdr *h = mem;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&h->need_wakeup, __ATOMIC_RELAXED) != 0;
}

/* ---- The client's arena: QP rings and their doorbells in one mapping ----
 *
 * A client that asks for it at HELLO (falcon/api.h, FC_API_HELLO_ARENA) gets one memfd
 * from the daemon, which both map once: a header, a doorbell bitmap, and the send and
 * receive rings of the client's QPs in blocks of FC_ARENA_UNIT bytes (each a power of two
 * of units, aligned to its size). Without it every QP was a memfd of its own, a mapping
 * in both processes (vm.max_map_count: 65,530 on most systems) and at least two pages;
 * and the daemon had to look into every QP's rings each time round its loop to find the
 * few with new work. The file is sparse: only what is used takes memory.
 *
 * Doorbells: bit b of the bitmap stands for the QP whose rings start at unit b. After
 * publishing WRs into a ring of that QP the producer calls fc_arena_doorbell(arena, b),
 * which sets the bit and the summary bit of its word, and rings the context's eventfd
 * when it returns nonzero (the daemon sleeps). The daemon takes the summary words, then
 * the bitmap words they name (atomic exchanges with 0), and looks into the rings of the
 * QPs whose bits were set, and only those. Ordering contract (every access seq_cst, so
 * that each side sees the other's store in one of the two orders):
 *
 *   producer:  fc_ring_produce(ring, n); fc_arena_doorbell(arena, b): bitmap bit, then
 *              the summary bit, then reads need_wakeup
 *   daemon:    exchange a summary word, then each bitmap word it names, then read the
 *              rings; before sleeping fc_arena_set_need_wakeup(arena, 1), then the
 *              summary words once more
 *
 * The arena is the client's own memory too: whatever it writes there (a ring of its own,
 * a bit for no QP) harms only itself; the daemon checks every bit against its own table
 * and every ring as it checks any (fc_ring_check, fc_ring_avail).
 */
#define FC_ARENA_MAGIC 0x464c4341u  /* "FLCA" */
#define FC_ARENA_VERSION 1u
#define FC_ARENA_UNIT 1024u          /* bytes; ring blocks are 2^k units */
#define FC_ARENA_BYTES (1ull << 30)  /* the whole file (sparse) */
#define FC_ARENA_BITS ((uint32_t)(FC_ARENA_BYTES / FC_ARENA_UNIT))
#define FC_ARENA_WORDS (FC_ARENA_BITS / 64u)     /* bitmap words */
#define FC_ARENA_SUMMARY (FC_ARENA_WORDS / 64u)  /* summary words: one bit per bitmap word */

struct fc_arena_hdr {
	uint32_t size;          /* sizeof(struct fc_arena_hdr) */
	uint32_t magic;         /* FC_ARENA_MAGIC */
	uint16_t version;       /* FC_ARENA_VERSION */
	uint16_t pad0;
	uint32_t unit;          /* FC_ARENA_UNIT */
	uint64_t bytes;         /* FC_ARENA_BYTES */
	uint32_t summary_off;   /* byte offset of the summary words */
	uint32_t bitmap_off;    /* byte offset of the bitmap words */
	uint32_t rings_off;     /* rings start here (a multiple of the unit) */
	uint8_t pad1[28];
	/* written by the daemon only, on a line of its own */
	uint32_t need_wakeup;   /* the daemon sleeps: ring the eventfd after a doorbell */
	uint8_t pad2[60];
};
_Static_assert(sizeof(struct fc_arena_hdr) == 128, "arena header: two cache lines");
_Static_assert(offsetof(struct fc_arena_hdr, need_wakeup) == 64, "wakeup flag on line 1");

#define FC_ARENA_SUMMARY_OFF 4096u
#define FC_ARENA_BITMAP_OFF (FC_ARENA_SUMMARY_OFF + FC_ARENA_SUMMARY * 8u)
#define FC_ARENA_RINGS_OFF (((FC_ARENA_BITMAP_OFF + FC_ARENA_WORDS * 8u) + 65535u) & ~65535u)

/* Lay the header out (the daemon, on a zeroed file of FC_ARENA_BYTES). */
static inline void fc_arena_init(void *mem)
{
	struct fc_arena_hdr *h = (struct fc_arena_hdr *)mem;

	h->size = sizeof(*h);
	h->magic = FC_ARENA_MAGIC;
	h->version = FC_ARENA_VERSION;
	h->unit = FC_ARENA_UNIT;
	h->bytes = FC_ARENA_BYTES;
	h->summary_off = FC_ARENA_SUMMARY_OFF;
	h->bitmap_off = FC_ARENA_BITMAP_OFF;
	h->rings_off = FC_ARENA_RINGS_OFF;
}

/* The client: is this the layout it knows? 0 or -EINVAL. */
static inline int fc_arena_check(const void *mem, size_t bytes)
{
	const struct fc_arena_hdr *h = (const struct fc_arena_hdr *)mem;

	if (!mem || bytes != FC_ARENA_BYTES || h->size != sizeof(*h) ||
	    h->magic != FC_ARENA_MAGIC || h->version != FC_ARENA_VERSION ||
	    h->unit != FC_ARENA_UNIT || h->bytes != FC_ARENA_BYTES ||
	    h->summary_off != FC_ARENA_SUMMARY_OFF || h->bitmap_off != FC_ARENA_BITMAP_OFF ||
	    h->rings_off != FC_ARENA_RINGS_OFF)
		return -EINVAL;
	return 0;
}

static inline uint64_t *fc_arena_summary(void *mem)
{
	return (uint64_t *)((uint8_t *)mem + FC_ARENA_SUMMARY_OFF);
}

static inline uint64_t *fc_arena_bitmap(void *mem)
{
	return (uint64_t *)((uint8_t *)mem + FC_ARENA_BITMAP_OFF);
}

/* Producer, after fc_ring_produce into a ring of the QP at unit bit: nonzero when the
 * daemon sleeps and the eventfd must be rung. */
static inline int fc_arena_doorbell(void *mem, uint32_t bit)
{
	struct fc_arena_hdr *h = (struct fc_arena_hdr *)mem;
	uint64_t *sum = fc_arena_summary(mem) + (bit >> 12);
	uint64_t sbit = 1ull << ((bit >> 6) & 63);

	__atomic_fetch_or(fc_arena_bitmap(mem) + (bit >> 6), 1ull << (bit & 63),
			  __ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(sum, __ATOMIC_SEQ_CST) & sbit))
		__atomic_fetch_or(sum, sbit, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&h->need_wakeup, __ATOMIC_SEQ_CST) != 0;
}

/* Daemon: 1 = about to sleep (ring me), 0 = polling. As fc_ring_set_need_wakeup. */
static inline void fc_arena_set_need_wakeup(void *mem, uint32_t on)
{
	struct fc_arena_hdr *h = (struct fc_arena_hdr *)mem;

	if (__atomic_load_n(&h->need_wakeup, __ATOMIC_RELAXED) != on)
		__atomic_store_n(&h->need_wakeup, on, __ATOMIC_SEQ_CST);
	if (on)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

#endif
