/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the RDMA-over-Falcon header codec (daemon/engine/wire_rdma.c).
 *
 * Expected bytes are built here from the field tables of RDMA spec section 8 (and the
 * RBTH layout comment of wire.h) with explicit shifts, and the opcode -> headers table
 * below is typed in from spec 8.1.3 (AtomicETH/AtomicAckETH swap corrected), so that
 * neither depends on the code under test or on wire.h's own tables.
 *
 * Random tests use xorshift64 with a fixed seed; FALCON_TEST_SEED=<n> overrides it and
 * a failure prints the seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire_rdma.h"

/* ------------------------------------------------------------------------ */
/* PRNG                                                                      */
/* ------------------------------------------------------------------------ */

static uint64_t rng_state;
static uint64_t test_seed;

static void rng_init(void)
{
	const char *env = getenv("FALCON_TEST_SEED");

	test_seed = env ? strtoull(env, NULL, 0) : 0x5EEDFA1C0A7D1A11ULL;
	rng_state = test_seed ? test_seed : 1;
}

static uint64_t rnd64(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static uint32_t rnd32(void) { return (uint32_t)(rnd64() >> 32); }

/* ------------------------------------------------------------------------ */
/* The spec 8.1.3 table, typed in independently                              */
/* ------------------------------------------------------------------------ */

/* One letter per header, in wire order:
 *   X XRCETH 4, R RETH 16, D DETH 8, A AtomicETH 28, M MaskedAtomicETH 44,
 *   K AtomicAckETH 8, S SETH 4, O OETH 4, T STETH 12, I ImmDt 4, V IETH 4 */
struct spec_op {
	const char *eths;
	int falcon_type; /* Falcon spec 7.2: 0 Pull Request, 3 Pull Data, 5 Push Data */
	int payload;     /* 1 if the packet carries payload */
};

static int spec_lookup(uint8_t opcode, struct spec_op *s)
{
	static const struct spec_op rc[32] = {
		[0x00] = { "SO", 5, 1 },   [0x01] = { "SO", 5, 1 },   [0x02] = { "SO", 5, 1 },
		[0x03] = { "SOI", 5, 1 },  [0x04] = { "SO", 5, 1 },   [0x05] = { "SOI", 5, 1 },
		[0x06] = { "R", 5, 1 },    [0x07] = { "R", 5, 1 },    [0x08] = { "R", 5, 1 },
		[0x09] = { "RSI", 5, 1 },  [0x0A] = { "R", 5, 1 },    [0x0B] = { "RSI", 5, 1 },
		[0x0C] = { "RST", 0, 0 },  [0x0D] = { "T", 3, 1 },    [0x0E] = { "T", 3, 1 },
		[0x0F] = { "T", 3, 1 },    [0x10] = { "T", 3, 1 },    [0x12] = { "KT", 3, 0 },
		[0x13] = { "AST", 0, 0 },  [0x14] = { "AST", 0, 0 },  [0x16] = { "SOV", 5, 1 },
		[0x17] = { "SOV", 5, 1 },  [0x18] = { "MST", 0, 0 },  [0x19] = { "MST", 0, 0 },
	};
	static char xrc_eths[32][8];
	uint8_t cls = opcode >> 5, op = opcode & 0x1F;

	if (cls == 3) { /* UD */
		if (op == 0x04)
			*s = (struct spec_op){ "D", 5, 1 };
		else if (op == 0x05)
			*s = (struct spec_op){ "DI", 5, 1 };
		else
			return 0;
		return 1;
	}
	if (cls != 0 && cls != 5)
		return 0;
	if (!rc[op].eths)
		return 0;
	*s = rc[op];
	if (cls == 5) { /* XRC (IB): requests carry XRCETH right after the RBTH, */
		if (s->falcon_type == 3) /* responses (Pull Data) carry none */
			return 1;
		snprintf(xrc_eths[op], sizeof(xrc_eths[op]), "X%s", rc[op].eths);
		s->eths = xrc_eths[op];
	}
	return 1;
}

static size_t eth_size(char c)
{
	switch (c) {
	case 'R':
		return 16;
	case 'D':
	case 'K':
		return 8;
	case 'A':
		return 28;
	case 'M':
		return 44;
	case 'T':
		return 12;
	default:
		return 4;
	}
}

static uint32_t eth_bit(char c)
{
	switch (c) {
	case 'X': return FC_ETH_XRCETH;
	case 'R': return FC_ETH_RETH;
	case 'D': return FC_ETH_DETH;
	case 'A': return FC_ETH_ATOMIC;
	case 'M': return FC_ETH_MASKED_ATOMIC;
	case 'K': return FC_ETH_ATOMIC_ACK;
	case 'S': return FC_ETH_SETH;
	case 'O': return FC_ETH_OETH;
	case 'T': return FC_ETH_STETH;
	case 'I': return FC_ETH_IMMDT;
	case 'V': return FC_ETH_IETH;
	default: return 0;
	}
}

static size_t spec_hdr_len(const struct spec_op *s)
{
	size_t len = 12;
	const char *c;

	for (c = s->eths; *c; c++)
		len += eth_size(*c);
	return len;
}

static uint32_t spec_mask(const struct spec_op *s)
{
	uint32_t m = 0;
	const char *c;

	for (c = s->eths; *c; c++)
		m |= eth_bit(*c);
	return m;
}

static int has(const struct spec_op *s, char c) { return strchr(s->eths, c) != NULL; }

/* ------------------------------------------------------------------------ */
/* Byte builder: big-endian words with explicit shifts                        */
/* ------------------------------------------------------------------------ */

struct bb {
	uint8_t b[512];
	size_t n;
};

static void b8(struct bb *b, uint32_t x) { b->b[b->n++] = (uint8_t)x; }

static void b32(struct bb *b, uint32_t x)
{
	b8(b, x >> 24);
	b8(b, (x >> 16) & 0xFF);
	b8(b, (x >> 8) & 0xFF);
	b8(b, x & 0xFF);
}

static void b64(struct bb *b, uint64_t x)
{
	b32(b, (uint32_t)(x >> 32));
	b32(b, (uint32_t)x);
}

/* RBTH as in wire.h: byte 0 opcode; byte 1 SE(7) R(6) pad(5:4) version(3:0);
 * byte 2 CE(7) A(6); byte 3 reserved; reserved byte + 24-bit DQP; 32-bit SN. */
static void b_rbth(struct bb *b, uint8_t opcode, int se, int pad, int ver, int ce, int a,
		   uint32_t dqp, uint32_t sn)
{
	b8(b, opcode);
	b8(b, (uint32_t)(se << 7 | pad << 4 | ver));
	b8(b, (uint32_t)(ce << 7 | a << 6));
	b8(b, 0);
	b32(b, dqp);
	b32(b, sn);
}

static void b_bytes(struct bb *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

/* ------------------------------------------------------------------------ */
/* Comparison with seed reporting                                            */
/* ------------------------------------------------------------------------ */

static const char *ctx_what = "";
static int ctx_opcode = -1, ctx_iter = -1;

#define CHECK_EQ(a, b)                                                                      \
	do {                                                                                \
		unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
		if (a_ != b_)                                                               \
			fail_msg("%s: %s = %#llx, expected %s = %#llx (seed %#llx, opcode "  \
				 "%#x, iteration %d)",                                      \
				 ctx_what, #a, a_, #b, b_, (unsigned long long)test_seed,   \
				 ctx_opcode, ctx_iter);                                     \
	} while (0)

static void check_hdrs(const struct fc_rdma_hdrs *g, const struct fc_rdma_hdrs *e)
{
	CHECK_EQ(g->opcode, e->opcode);
	CHECK_EQ(g->se, e->se);
	CHECK_EQ(g->ce, e->ce);
	CHECK_EQ(g->ackreq, e->ackreq);
	CHECK_EQ(g->pad, e->pad);
	CHECK_EQ(g->dqp, e->dqp);
	CHECK_EQ(g->sn, e->sn);
	CHECK_EQ(g->eths, e->eths);
	CHECK_EQ(g->xrc_srq, e->xrc_srq);
	CHECK_EQ(g->reth.va, e->reth.va);
	CHECK_EQ(g->reth.rkey, e->reth.rkey);
	CHECK_EQ(g->reth.len, e->reth.len);
	CHECK_EQ(g->deth.qkey, e->deth.qkey);
	CHECK_EQ(g->deth.src_qp, e->deth.src_qp);
	CHECK_EQ(g->atomic.va, e->atomic.va);
	CHECK_EQ(g->atomic.rkey, e->atomic.rkey);
	CHECK_EQ(g->atomic.swap_add, e->atomic.swap_add);
	CHECK_EQ(g->atomic.swap_add_mask, e->atomic.swap_add_mask);
	CHECK_EQ(g->atomic.compare, e->atomic.compare);
	CHECK_EQ(g->atomic.compare_mask, e->atomic.compare_mask);
	CHECK_EQ(g->atomic_orig, e->atomic_orig);
	CHECK_EQ(g->rmsn, e->rmsn);
	CHECK_EQ(g->offset, e->offset);
	CHECK_EQ(g->steth.va, e->steth.va);
	CHECK_EQ(g->steth.lkey, e->steth.lkey);
	CHECK_EQ(g->imm, e->imm);
	CHECK_EQ(g->inv_rkey, e->inv_rkey);
	CHECK_EQ(g->payload_len, e->payload_len);
}

/* Decode b (exactly b->n bytes, in a heap copy so that an over-read is caught by ASan
 * and valgrind), check the return value and the fields against e, and that encoding e
 * gives back b's bytes. */
static void check_both_ways(const struct bb *b, int falcon_type, const struct fc_rdma_hdrs *e,
			    int hdr_len)
{
	uint8_t *copy = malloc(b->n), out[512];
	struct fc_rdma_hdrs got;
	int r;

	assert_non_null(copy);
	memcpy(copy, b->b, b->n);
	r = fc_rdma_decode(copy, b->n, falcon_type, &got);
	assert_int_equal(r, hdr_len);
	check_hdrs(&got, e);
	assert_ptr_equal(got.payload, copy + hdr_len);
	assert_memory_equal(got.payload, b->b + hdr_len, e->payload_len);

	memset(out, 0xEE, sizeof(out));
	r = fc_rdma_encode(e, b->b + hdr_len, e->payload_len, out, sizeof(out));
	assert_int_equal(r, (int)b->n);
	assert_memory_equal(out, b->b, b->n);
	free(copy);
}

/* ------------------------------------------------------------------------ */
/* Hand-built packets                                                        */
/* ------------------------------------------------------------------------ */

/* spec 8.2 RBTH + 8.3.1 RETH: RC WRITE Only, SE=1, pad=3, version 1, CE=1, A=1. */
static void test_rbth_write_only_bytes(void **state)
{
	static const uint8_t expect[] = {
		0x0A, 0xB1, 0xC0, 0x00, /* opcode; SE|pad 3|ver 1; CE|A; reserved */
		0x00, 0xAB, 0xCD, 0xEF, /* reserved, DQP */
		0x01, 0x02, 0x03, 0x04, /* SN */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* RETH VA */
		0x99, 0xAA, 0xBB, 0xCC, /* R_Key */
		0x00, 0x00, 0x00, 0x01, /* length */
		0x5A, 0x00, 0x00, 0x00, /* 1 payload byte, 3 pad bytes */
	};
	struct fc_rdma_hdrs e = {
		.opcode = 0x0A, .se = 1, .ce = 1, .ackreq = 1, .pad = 3, .dqp = 0xABCDEF,
		.sn = 0x01020304, .eths = FC_ETH_RETH,
		.reth = { .va = 0x1122334455667788ULL, .rkey = 0x99AABBCC, .len = 1 },
		.payload_len = 1,
	};
	struct bb b = { .n = 0 };

	(void)state;
	ctx_what = __func__;
	b_bytes(&b, expect, sizeof(expect));
	check_both_ways(&b, 5, &e, 28);
}

/* spec 8.1.3: READ Request = RBTH, RETH, SETH, STETH, in a Pull Request. */
static void test_read_request_bytes(void **state)
{
	struct fc_rdma_hdrs e = {
		.opcode = 0x0C, .ackreq = 1, .dqp = 0x000102, .sn = 0xFFFFFFFF,
		.eths = FC_ETH_RETH | FC_ETH_SETH | FC_ETH_STETH,
		.reth = { .va = 0x8000000000000001ULL, .rkey = 0x12345678, .len = 0x1000 },
		.rmsn = 0xDEADBEEF,
		.steth = { .va = 0x0102030405060708ULL, .lkey = 0x0A0B0C0D },
	};
	struct bb b = { .n = 0 };
	struct fc_rdma_hdrs got;

	(void)state;
	ctx_what = __func__;
	b_rbth(&b, 0x0C, 0, 0, 1, 0, 1, 0x000102, 0xFFFFFFFF);
	b64(&b, 0x8000000000000001ULL);
	b32(&b, 0x12345678);
	b32(&b, 0x1000);
	b32(&b, 0xDEADBEEF);
	b64(&b, 0x0102030405060708ULL);
	b32(&b, 0x0A0B0C0D);
	assert_int_equal(b.n, 44);
	check_both_ways(&b, 0, &e, 44);
	check_both_ways(&b, -1, &e, 44);
	assert_int_equal(fc_rdma_decode(b.b, b.n, 5, &got), -FC_WIRE_ETYPE);
	assert_int_equal(fc_rdma_decode(b.b, b.n, 3, &got), -FC_WIRE_ETYPE);
}

/* The seed's 8.1.3 table lists AtomicAckETH on the atomic requests and AtomicETH on the
 * ATOMIC Response; falcon (as InfiniBand) puts AtomicETH (28 bytes) on the request and
 * AtomicAckETH (8 bytes) on the response. */
static void test_seed_atomic_eth_swap_corrected(void **state)
{
	struct fc_rdma_hdrs req = {
		.opcode = 0x13, .dqp = 0x654321, .sn = 7,
		.eths = FC_ETH_ATOMIC | FC_ETH_SETH | FC_ETH_STETH,
		.atomic = { .va = 0x00007F0000001000ULL, .rkey = 0xA1B2C3D4,
			    .swap_add = 0x1111222233334444ULL, .swap_add_mask = ~0ULL,
			    .compare = 0x5555666677778888ULL, .compare_mask = ~0ULL },
		.rmsn = 3, .steth = { .va = 0x00007F0000002000ULL, .lkey = 0x0BADF00D },
	};
	struct fc_rdma_hdrs resp = {
		.opcode = 0x12, .dqp = 0x123456, .sn = 7,
		.eths = FC_ETH_ATOMIC_ACK | FC_ETH_STETH, .atomic_orig = 0xFEDCBA9876543210ULL,
		.steth = { .va = 0x00007F0000002000ULL, .lkey = 0x0BADF00D },
	};
	struct bb b = { .n = 0 }, seed = { .n = 0 };
	struct fc_rdma_hdrs got;

	(void)state;
	ctx_what = __func__;
	/* request: RBTH, AtomicETH (VA, R_Key, Swap/Add, Compare), SETH, STETH */
	b_rbth(&b, 0x13, 0, 0, 1, 0, 0, 0x654321, 7);
	b64(&b, 0x00007F0000001000ULL);
	b32(&b, 0xA1B2C3D4);
	b64(&b, 0x1111222233334444ULL);
	b64(&b, 0x5555666677778888ULL);
	b32(&b, 3);
	b64(&b, 0x00007F0000002000ULL);
	b32(&b, 0x0BADF00D);
	assert_int_equal(b.n, 12 + 28 + 4 + 12);
	check_both_ways(&b, 0, &req, 56);
	assert_true(fc_rdma_decode(b.b, b.n, 0, &got) == 56 && (got.eths & FC_ETH_ATOMIC) &&
		    !(got.eths & FC_ETH_ATOMIC_ACK));

	/* the seed's request layout (AtomicAckETH, 8 bytes) is too short for AtomicETH */
	b_rbth(&seed, 0x13, 0, 0, 1, 0, 0, 0x654321, 7);
	b64(&seed, 0x1234);
	b32(&seed, 3);
	b64(&seed, 0x00007F0000002000ULL);
	b32(&seed, 0x0BADF00D);
	assert_int_equal(fc_rdma_decode(seed.b, seed.n, 0, &got), -FC_WIRE_ETRUNC);

	/* response: RBTH, AtomicAckETH (original data), STETH */
	b.n = 0;
	b_rbth(&b, 0x12, 0, 0, 1, 0, 0, 0x123456, 7);
	b64(&b, 0xFEDCBA9876543210ULL);
	b64(&b, 0x00007F0000002000ULL);
	b32(&b, 0x0BADF00D);
	assert_int_equal(b.n, 32);
	check_both_ways(&b, 3, &resp, 32);
	assert_true(fc_rdma_decode(b.b, b.n, 3, &got) == 32 && (got.eths & FC_ETH_ATOMIC_ACK) &&
		    !(got.eths & FC_ETH_ATOMIC));

	/* the seed's response layout (AtomicETH, 28 bytes) leaves 20 stray bytes */
	seed.n = 0;
	b_rbth(&seed, 0x12, 0, 0, 1, 0, 0, 0x123456, 7);
	b64(&seed, 1);
	b32(&seed, 2);
	b64(&seed, 3);
	b64(&seed, 4);
	b64(&seed, 0x00007F0000002000ULL);
	b32(&seed, 0x0BADF00D);
	assert_int_equal(seed.n, 52);
	assert_int_equal(fc_rdma_decode(seed.b, seed.n, 3, &got), -FC_WIRE_ELEN);
}

/* spec 8.1.3: UD SEND Only with Immediate = RBTH, DETH, ImmDt (8.3.10, 8.3.5). */
static void test_ud_send_only_imm_bytes(void **state)
{
	struct fc_rdma_hdrs e = {
		.opcode = 0x65, .se = 1, .pad = 3, .dqp = 0x000001, .sn = 0x10,
		.eths = FC_ETH_DETH | FC_ETH_IMMDT,
		.deth = { .qkey = 0x80010002, .src_qp = 0x123456 }, .imm = 0xCAFEBABE,
		.payload_len = 5,
	};
	struct bb b = { .n = 0 };
	struct fc_rdma_hdrs got;

	(void)state;
	ctx_what = __func__;
	b_rbth(&b, 0x65, 1, 3, 1, 0, 0, 0x000001, 0x10);
	b32(&b, 0x80010002);
	b32(&b, 0x00123456);
	b32(&b, 0xCAFEBABE);
	b_bytes(&b, "hello\0\0\0", 8);
	assert_int_equal(b.n, 32);
	check_both_ways(&b, 5, &e, 24);

	/* reserved bits set and non-zero pad bytes: ignored on receive */
	b.b[1] |= 0x40;  /* RBTH R */
	b.b[2] |= 0x3F;  /* RBTH byte 2 [5:0] */
	b.b[3] = 0xFF;   /* RBTH byte 3 */
	b.b[4] = 0xFF;   /* reserved byte before the DQP */
	b.b[16] = 0xFF;  /* DETH reserved byte before the source QP */
	b.b[29] = 0x77;  /* pad bytes */
	b.b[31] = 0x77;
	assert_int_equal(fc_rdma_decode(b.b, b.n, 5, &got), 24);
	check_hdrs(&got, &e);
}

/* RFC 7306 5.2.1 figure 4 field order after VA, R_Key; spec 8.1.3 headers of an atomic. */
static void test_masked_atomic_bytes(void **state)
{
	struct fc_rdma_hdrs e = {
		.opcode = 0x18, .ackreq = 1, .dqp = 0xFFFFFF, .sn = 0x80000000,
		.eths = FC_ETH_MASKED_ATOMIC | FC_ETH_SETH | FC_ETH_STETH,
		.atomic = { .va = 0x1000, .rkey = 0x01020304, .swap_add = 0x00000000FFFF0000ULL,
			    .swap_add_mask = 0x00000000FFFFFFFFULL, .compare = 0xAAAA,
			    .compare_mask = 0xFFFF000000000000ULL },
		.rmsn = 0x10000, .steth = { .va = 0x2000, .lkey = 0x05060708 },
	};
	struct bb b = { .n = 0 };

	(void)state;
	ctx_what = __func__;
	b_rbth(&b, 0x18, 0, 0, 1, 0, 1, 0xFFFFFF, 0x80000000);
	b64(&b, 0x1000);
	b32(&b, 0x01020304);
	b64(&b, 0x00000000FFFF0000ULL); /* swap data */
	b64(&b, 0x00000000FFFFFFFFULL); /* swap mask */
	b64(&b, 0xAAAA);                /* compare data */
	b64(&b, 0xFFFF000000000000ULL); /* compare mask */
	b32(&b, 0x10000);
	b64(&b, 0x2000);
	b32(&b, 0x05060708);
	assert_int_equal(b.n, 72);
	check_both_ways(&b, 0, &e, 72);

	/* XRC masked FetchAdd: XRCETH first; the largest header there is */
	e.opcode = 0xB9;
	e.xrc_srq = 0xFEDCBA;
	e.eths |= FC_ETH_XRCETH;
	b.n = 0;
	b_rbth(&b, 0xB9, 0, 0, 1, 0, 1, 0xFFFFFF, 0x80000000);
	b32(&b, 0x00FEDCBA);
	b64(&b, 0x1000);
	b32(&b, 0x01020304);
	b64(&b, 0x00000000FFFF0000ULL);
	b64(&b, 0x00000000FFFFFFFFULL);
	b64(&b, 0xAAAA);
	b64(&b, 0xFFFF000000000000ULL);
	b32(&b, 0x10000);
	b64(&b, 0x2000);
	b32(&b, 0x05060708);
	assert_int_equal(b.n, FC_RDMA_HDR_MAX);
	check_both_ways(&b, 0, &e, FC_RDMA_HDR_MAX);
}

/* Plain atomics decode to the masks that make RFC 7306's masked operation equal to the
 * plain one, and their encoding ignores the masks. */
static void test_plain_atomic_masks(void **state)
{
	struct fc_rdma_hdrs h = { .opcode = 0x14, .atomic = { .swap_add = 5, .compare = 9 } };
	uint8_t ref[128], out[128];
	struct fc_rdma_hdrs got;
	int n;

	(void)state;
	n = fc_rdma_encode(&h, NULL, 0, ref, sizeof(ref));
	assert_int_equal(n, 56);
	assert_int_equal(fc_rdma_decode(ref, (size_t)n, 0, &got), 56);
	assert_true(got.atomic.swap_add_mask == 0);         /* RFC 7306 5.1.1: plain add */
	assert_true(got.atomic.compare_mask == ~0ULL);      /* 5.2.1: ff..ff for FetchAdd */
	assert_true(got.atomic.compare == 9);
	h.atomic.swap_add_mask = 0x1234;
	h.atomic.compare_mask = 0x5678;
	assert_int_equal(fc_rdma_encode(&h, NULL, 0, out, sizeof(out)), 56);
	assert_memory_equal(out, ref, 56);

	h.opcode = 0x13;
	h.atomic.swap_add_mask = 0;
	h.atomic.compare_mask = 0;
	n = fc_rdma_encode(&h, NULL, 0, out, sizeof(out));
	assert_int_equal(fc_rdma_decode(out, (size_t)n, 0, &got), 56);
	assert_true(got.atomic.swap_add_mask == ~0ULL && got.atomic.compare_mask == ~0ULL);
}

/* SEND Last w/ Invalidate: SETH, OETH, IETH; WRITE Last w/ Imm: RETH, SETH, ImmDt;
 * XRC WRITE Only w/ Imm: XRCETH, RETH, SETH, ImmDt; READ Response First: STETH. */
static void test_other_header_orders(void **state)
{
	struct fc_rdma_hdrs inv = {
		.opcode = 0x16, .ce = 1, .dqp = 0x42, .sn = 99, .pad = 0,
		.eths = FC_ETH_SETH | FC_ETH_OETH | FC_ETH_IETH,
		.rmsn = 0x01000001, .offset = 0x00010000, .inv_rkey = 0x89ABCDEF, .payload_len = 8,
	};
	struct fc_rdma_hdrs wli = {
		.opcode = 0x09, .se = 1, .pad = 2, .dqp = 0x800000, .sn = 1,
		.eths = FC_ETH_RETH | FC_ETH_SETH | FC_ETH_IMMDT,
		.reth = { .va = 0xFFFFFFFFFFFFFFFFULL, .rkey = 1, .len = 0x100000 },
		.rmsn = 2, .imm = 0x13579BDF, .payload_len = 6,
	};
	struct fc_rdma_hdrs xwoi = {
		.opcode = 0xAB, .dqp = 0x7, .sn = 0xA5A5A5A5, .xrc_srq = 0x00ABCD,
		.eths = FC_ETH_XRCETH | FC_ETH_RETH | FC_ETH_SETH | FC_ETH_IMMDT,
		.reth = { .va = 0x10, .rkey = 0x20, .len = 4 }, .rmsn = 0x30, .imm = 0x40,
		.payload_len = 4,
	};
	struct fc_rdma_hdrs rrf = {
		.opcode = 0x0D, .pad = 1, .dqp = 0x1, .sn = 0x2, .eths = FC_ETH_STETH,
		.steth = { .va = 0xCAFEF00DDEADBEEFULL, .lkey = 0x3 }, .payload_len = 7,
	};
	struct bb b = { .n = 0 };

	(void)state;
	ctx_what = __func__;
	b_rbth(&b, 0x16, 0, 0, 1, 1, 0, 0x42, 99);
	b32(&b, 0x01000001);
	b32(&b, 0x00010000);
	b32(&b, 0x89ABCDEF);
	b_bytes(&b, "ABCDEFGH", 8);
	check_both_ways(&b, 5, &inv, 24);

	b.n = 0;
	b_rbth(&b, 0x09, 1, 2, 1, 0, 0, 0x800000, 1);
	b64(&b, 0xFFFFFFFFFFFFFFFFULL);
	b32(&b, 1);
	b32(&b, 0x100000);
	b32(&b, 2);
	b32(&b, 0x13579BDF);
	b_bytes(&b, "123456\0\0", 8);
	assert_int_equal(b.n, 44);
	check_both_ways(&b, 5, &wli, 36);

	b.n = 0;
	b_rbth(&b, 0xAB, 0, 0, 1, 0, 0, 0x7, 0xA5A5A5A5);
	b32(&b, 0x00ABCD);
	b64(&b, 0x10);
	b32(&b, 0x20);
	b32(&b, 4);
	b32(&b, 0x30);
	b32(&b, 0x40);
	b_bytes(&b, "wxyz", 4);
	check_both_ways(&b, 5, &xwoi, 40);

	b.n = 0;
	b_rbth(&b, 0x0D, 0, 1, 1, 0, 0, 0x1, 0x2);
	b64(&b, 0xCAFEF00DDEADBEEFULL);
	b32(&b, 0x3);
	b_bytes(&b, "seven!!\0", 8);
	check_both_ways(&b, 3, &rrf, 24);
}

/* ------------------------------------------------------------------------ */
/* All 256 opcodes                                                            */
/* ------------------------------------------------------------------------ */

static void test_all_opcodes(void **state)
{
	const char *names[256] = { 0 };
	int op, j, valid = 0;

	(void)state;
	for (op = 0; op < 256; op++) {
		struct fc_rdma_hdrs h = { .opcode = (uint8_t)op }, got;
		struct spec_op s;
		struct bb b = { .n = 0 };
		uint8_t out[128];

		b_rbth(&b, (uint8_t)op, 0, 0, 1, 0, 0, 0, 0);
		memset(b.b + b.n, 0, 128);
		if (!spec_lookup((uint8_t)op, &s)) {
			assert_int_equal(fc_rdma_decode(b.b, 128, -1, &got), -FC_WIRE_ETYPE);
			assert_int_equal(fc_rdma_decode(b.b, 12, -1, &got), -FC_WIRE_ETYPE);
			assert_int_equal(fc_rdma_hdr_len((uint8_t)op), -FC_WIRE_ETYPE);
			assert_false(fc_rdma_opcode_has_payload((uint8_t)op));
			assert_int_equal(fc_rdma_encode(&h, NULL, 0, out, sizeof(out)),
					 -FC_WIRE_EINVAL);
			assert_string_equal(fc_rdma_opcode_name((uint8_t)op), "RESERVED");
			continue;
		}
		valid++;
		assert_int_equal(fc_rdma_decode(b.b, spec_hdr_len(&s), -1, &got),
				 (int)spec_hdr_len(&s));
		assert_int_equal(got.eths, spec_mask(&s));
		assert_int_equal(fc_rdma_decode(b.b, spec_hdr_len(&s), s.falcon_type, &got),
				 (int)spec_hdr_len(&s));
		assert_int_equal(fc_rdma_hdr_len((uint8_t)op), (int)spec_hdr_len(&s));
		assert_int_equal(fc_rdma_opcode_has_payload((uint8_t)op), s.payload);
		assert_int_equal(fc_rdma_encode(&h, NULL, 0, out, sizeof(out)),
				 (int)spec_hdr_len(&s));
		names[op] = fc_rdma_opcode_name((uint8_t)op);
		assert_string_not_equal(names[op], "RESERVED");
		assert_true(strncmp(names[op], (op >> 5) == 0 ? "RC_" :
					       (op >> 5) == 3 ? "UD_" : "XRC_",
				    (op >> 5) == 5 ? 4 : 3) == 0);
		for (j = 0; j < op; j++)
			if (names[j])
				assert_string_not_equal(names[j], names[op]);
	}
	/* RC 24 (22 of 8.1.3 + 2 masked), UD 2, XRC 24 (19 requests, 5 responses) */
	assert_int_equal(valid, 24 + 2 + 24);
	assert_string_equal(fc_rdma_opcode_name(0x0A), "RC_WRITE_ONLY");
	assert_string_equal(fc_rdma_opcode_name(0x65), "UD_SEND_ONLY_IMM");
	assert_string_equal(fc_rdma_opcode_name(0xB8), "XRC_MASKED_CMP_SWAP");
	assert_string_equal(fc_rdma_opcode_name(0x11), "RESERVED");
}

/* ------------------------------------------------------------------------ */
/* Random round trip                                                          */
/* ------------------------------------------------------------------------ */

#define RT_ITERS 500
#define RT_PAYLOAD_MAX 300

static void random_hdrs(uint8_t opcode, struct fc_rdma_hdrs *h)
{
	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->se = rnd32() & 1;
	h->ce = rnd32() & 1;
	h->ackreq = rnd32() & 1;
	h->pad = (uint8_t)rnd32();  /* ignored by encode */
	h->eths = rnd32();          /* ignored by encode */
	h->dqp = rnd32() & 0xFFFFFF;
	h->sn = rnd32();
	h->xrc_srq = rnd32() & 0xFFFFFF;
	h->reth.va = rnd64();
	h->reth.rkey = rnd32();
	h->reth.len = rnd32();
	h->deth.qkey = rnd32();
	h->deth.src_qp = rnd32() & 0xFFFFFF;
	h->atomic.va = rnd64();
	h->atomic.rkey = rnd32();
	h->atomic.swap_add = rnd64();
	h->atomic.swap_add_mask = rnd64();
	h->atomic.compare = rnd64();
	h->atomic.compare_mask = rnd64();
	h->atomic_orig = rnd64();
	h->rmsn = rnd32();
	h->offset = rnd32();
	h->steth.va = rnd64();
	h->steth.lkey = rnd32();
	h->imm = rnd32();
	h->inv_rkey = rnd32();
}

/* What decode must return for h carrying plen payload bytes. */
static void expected_hdrs(const struct fc_rdma_hdrs *h, const struct spec_op *s, size_t plen,
			  struct fc_rdma_hdrs *e)
{
	memset(e, 0, sizeof(*e));
	e->opcode = h->opcode;
	e->se = h->se;
	e->ce = h->ce;
	e->ackreq = h->ackreq;
	e->dqp = h->dqp;
	e->sn = h->sn;
	e->pad = (uint8_t)((4 - plen % 4) % 4);
	e->eths = spec_mask(s);
	e->payload_len = plen;
	if (has(s, 'X'))
		e->xrc_srq = h->xrc_srq;
	if (has(s, 'R'))
		e->reth = h->reth;
	if (has(s, 'D'))
		e->deth = h->deth;
	if (has(s, 'A') || has(s, 'M'))
		e->atomic = h->atomic;
	if (has(s, 'A')) { /* 0x14 FetchAdd: add mask 0; CmpSwap: ~0; compare mask ~0 */
		e->atomic.swap_add_mask = (h->opcode & 0x1F) == 0x14 ? 0 : ~0ULL;
		e->atomic.compare_mask = ~0ULL;
	}
	if (has(s, 'K'))
		e->atomic_orig = h->atomic_orig;
	if (has(s, 'S'))
		e->rmsn = h->rmsn;
	if (has(s, 'O'))
		e->offset = h->offset;
	if (has(s, 'T'))
		e->steth = h->steth;
	if (has(s, 'I'))
		e->imm = h->imm;
	if (has(s, 'V'))
		e->inv_rkey = h->inv_rkey;
}

static void round_trip_once(uint8_t opcode, const struct spec_op *s)
{
	uint8_t payload[RT_PAYLOAD_MAX], buf[FC_RDMA_HDR_MAX + RT_PAYLOAD_MAX + 3 + 16];
	size_t plen = s->payload ? rnd32() % (RT_PAYLOAD_MAX + 1) : 0, hlen = spec_hdr_len(s);
	struct fc_rdma_hdrs h, e, got;
	size_t i, total;
	int r;

	random_hdrs(opcode, &h);
	if (!has(s, 'X'))
		h.xrc_srq = rnd32(); /* too wide, but not carried: ignored */
	if (!has(s, 'D'))
		h.deth.src_qp = rnd32();
	if ((opcode & 0x1F) == 0x0A || (opcode & 0x1F) == 0x0B)
		h.reth.len = (uint32_t)plen; /* WRITE Only: RETH length = payload */
	for (i = 0; i < plen; i++)
		payload[i] = (uint8_t)rnd32();
	expected_hdrs(&h, s, plen, &e);
	total = hlen + plen + e.pad;

	memset(buf, 0xEE, sizeof(buf));
	r = fc_rdma_encode(&h, plen ? payload : NULL, plen, buf, sizeof(buf));
	CHECK_EQ(r, total);
	CHECK_EQ(total % 4, 0);
	/* RBTH bytes, independently of the decoder */
	CHECK_EQ(buf[0], opcode);
	CHECK_EQ(buf[1], (unsigned)h.se << 7 | (unsigned)e.pad << 4 | 1);
	CHECK_EQ(buf[2], (unsigned)h.ce << 7 | (unsigned)h.ackreq << 6);
	CHECK_EQ(buf[3], 0);
	CHECK_EQ(buf[4], 0);
	CHECK_EQ((uint32_t)buf[5] << 16 | (uint32_t)buf[6] << 8 | buf[7], h.dqp);
	CHECK_EQ((uint32_t)buf[8] << 24 | (uint32_t)buf[9] << 16 | buf[10] << 8 | buf[11], h.sn);
	for (i = hlen + plen; i < total; i++)
		CHECK_EQ(buf[i], 0); /* pad bytes are zero */
	for (i = total; i < sizeof(buf); i++)
		CHECK_EQ(buf[i], 0xEE); /* nothing written past the packet */
	CHECK_EQ(memcmp(buf + hlen, payload, plen), 0);

	r = fc_rdma_decode(buf, total, s->falcon_type, &got);
	CHECK_EQ(r, hlen);
	check_hdrs(&got, &e);
	CHECK_EQ(got.payload - buf, hlen);
	r = fc_rdma_decode(buf, total, -1, &got);
	CHECK_EQ(r, hlen);
	check_hdrs(&got, &e);
}

static void test_round_trip_all_opcodes(void **state)
{
	int op, n = 0;

	(void)state;
	rng_init();
	ctx_what = __func__;
	for (op = 0; op < 256; op++) {
		struct spec_op s;

		if (!spec_lookup((uint8_t)op, &s))
			continue;
		ctx_opcode = op;
		for (ctx_iter = 0; ctx_iter < RT_ITERS; ctx_iter++)
			round_trip_once((uint8_t)op, &s);
		n++;
	}
	ctx_opcode = ctx_iter = -1;
	assert_int_equal(n, 50);
}

/* ------------------------------------------------------------------------ */
/* Malformed input                                                            */
/* ------------------------------------------------------------------------ */

/* Build a valid packet of opcode with plen payload bytes; returns its length. */
static size_t make_packet(uint8_t opcode, size_t plen, uint8_t *buf, size_t cap)
{
	static const uint8_t payload[64] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct fc_rdma_hdrs h;
	int r;

	random_hdrs(opcode, &h);
	h.reth.len = (uint32_t)plen;
	r = fc_rdma_encode(&h, payload, plen, buf, cap);
	assert_true(r > 0);
	return (size_t)r;
}

static int decode_exact(const uint8_t *p, size_t len, int falcon_type)
{
	uint8_t *copy = malloc(len ? len : 1);
	struct fc_rdma_hdrs got;
	int r;

	assert_non_null(copy);
	memcpy(copy, p, len);
	r = fc_rdma_decode(copy, len, falcon_type, &got);
	free(copy);
	return r;
}

static void test_truncation(void **state)
{
	static const struct {
		uint8_t opcode;
		size_t plen;
	} cases[] = {
		{ 0x0A, 5 }, { 0x0C, 0 }, { 0x13, 0 }, { 0x12, 0 }, { 0x65, 9 },
		{ 0xB9, 0 }, { 0xAB, 8 }, { 0x16, 3 }, { 0x00, 0 }, { 0x10, 1 },
	};
	uint8_t buf[256];
	size_t i, len;

	(void)state;
	rng_init();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t total = make_packet(cases[i].opcode, cases[i].plen, buf, sizeof(buf));
		int hlen = fc_rdma_hdr_len(cases[i].opcode);

		for (len = 0; len < (size_t)hlen; len++)
			assert_int_equal(decode_exact(buf, len, -1), -FC_WIRE_ETRUNC);
		for (; len < total; len++) {
			int r = decode_exact(buf, len, -1);

			assert_true(r == hlen || r == -FC_WIRE_ELEN);
		}
		assert_int_equal(decode_exact(buf, total, -1), hlen);
	}
}

static void test_bad_version(void **state)
{
	uint8_t buf[256];
	int ver, i;
	static const uint8_t ops[] = { 0x04, 0x0C, 0x12, 0x65, 0xA0, 0x11 /* reserved */ };

	(void)state;
	rng_init();
	for (i = 0; i < (int)sizeof(ops); i++) {
		size_t total = 48;

		memset(buf, 0, sizeof(buf));
		if (ops[i] != 0x11)
			total = make_packet(ops[i], 0, buf, sizeof(buf));
		buf[0] = ops[i];
		for (ver = 0; ver < 16; ver++) {
			buf[1] = (uint8_t)((buf[1] & 0xF0) | ver);
			if (ver == 1)
				continue;
			assert_int_equal(decode_exact(buf, total, -1), -FC_WIRE_EVERSION);
			assert_int_equal(decode_exact(buf, 12, -1), -FC_WIRE_EVERSION);
		}
	}
}

static void test_falcon_type_mismatch(void **state)
{
	uint8_t buf[256];
	int op, ft;

	(void)state;
	rng_init();
	for (op = 0; op < 256; op++) {
		struct spec_op s;
		size_t total;

		if (!spec_lookup((uint8_t)op, &s))
			continue;
		total = make_packet((uint8_t)op, s.payload ? 4 : 0, buf, sizeof(buf));
		for (ft = 0; ft < 16; ft++)
			assert_int_equal(decode_exact(buf, total, ft),
					 ft == s.falcon_type ? fc_rdma_hdr_len((uint8_t)op)
							     : -FC_WIRE_ETYPE);
	}
}

static void test_pad_larger_than_payload(void **state)
{
	struct bb b = { .n = 0 };
	struct fc_rdma_hdrs got;
	int pad;

	(void)state;
	for (pad = 1; pad < 4; pad++) {
		/* SEND Only, no payload bytes at all */
		b.n = 0;
		b_rbth(&b, 0x04, 0, pad, 1, 0, 0, 1, 1);
		b32(&b, 1);
		b32(&b, 0);
		assert_int_equal(fc_rdma_decode(b.b, b.n, 5, &got), -FC_WIRE_ELEN);
		/* READ Response Only, no payload bytes */
		b.n = 0;
		b_rbth(&b, 0x10, 0, pad, 1, 0, 0, 1, 1);
		b64(&b, 0);
		b32(&b, 0);
		assert_int_equal(fc_rdma_decode(b.b, b.n, 3, &got), -FC_WIRE_ELEN);
	}
	/* 4 payload bytes: every pad is fine and shortens the payload */
	for (pad = 0; pad < 4; pad++) {
		b.n = 0;
		b_rbth(&b, 0x04, 0, pad, 1, 0, 0, 1, 1);
		b32(&b, 1);
		b32(&b, 0);
		b32(&b, 0x61626364);
		assert_int_equal(fc_rdma_decode(b.b, b.n, 5, &got), 20);
		assert_int_equal(got.payload_len, 4 - pad);
		assert_int_equal(got.pad, pad);
	}
}

static void test_payload_on_headers_only_opcodes(void **state)
{
	static const uint8_t ops[] = { 0x0C, 0x12, 0x13, 0x14, 0x18, 0x19, 0xAC, 0xB3 };
	uint8_t buf[256], payload[4] = { 0 };
	struct fc_rdma_hdrs h;
	size_t i, total;

	(void)state;
	rng_init();
	for (i = 0; i < sizeof(ops); i++) {
		total = make_packet(ops[i], 0, buf, sizeof(buf));
		memset(buf + total, 0, 8);
		assert_int_equal(decode_exact(buf, total + 4, -1), -FC_WIRE_ELEN);
		assert_int_equal(decode_exact(buf, total + 8, -1), -FC_WIRE_ELEN);
		buf[1] |= 0x30; /* pad 3 does not make 4 stray bytes acceptable */
		assert_int_equal(decode_exact(buf, total + 4, -1), -FC_WIRE_ELEN);
		/* and the encoder refuses to produce them */
		random_hdrs(ops[i], &h);
		assert_int_equal(fc_rdma_encode(&h, payload, 1, buf, sizeof(buf)),
				 -FC_WIRE_EINVAL);
	}
}

/* spec 8.2: the pad aligns the packet to 4 bytes. */
static void test_length_not_multiple_of_4(void **state)
{
	uint8_t buf[256];
	size_t total, k;
	int pad;

	(void)state;
	rng_init();
	total = make_packet(0x04, 8, buf, sizeof(buf));
	for (k = 1; k < 4; k++)
		for (pad = 0; pad < 4; pad++) {
			buf[1] = (uint8_t)((buf[1] & ~0x30) | pad << 4);
			assert_int_equal(decode_exact(buf, total - 4 + k, -1), -FC_WIRE_ELEN);
		}
}

/* spec 8.3.1: a WRITE Only packet is the whole Write; its RETH length is its payload. */
static void test_write_only_reth_length(void **state)
{
	static const uint32_t bad[] = { 0, 7, 9, 16, 0xFFFFFFFF, 1u << 31 };
	static const uint8_t ops[] = { 0x0A, 0x0B, 0xAA, 0xAB }; /* RC, XRC WRITE Only (Imm) */
	uint8_t buf[256], payload[8] = { 0 };
	struct fc_rdma_hdrs h;
	size_t total, i, k;
	int op;

	(void)state;
	rng_init();
	for (k = 0; k < sizeof(ops); k++) {
		size_t reth_len_off = ops[k] >= 0xA0 ? 12 + 4 + 12 : 12 + 12;

		total = make_packet(ops[k], 8, buf, sizeof(buf));
		assert_int_equal(decode_exact(buf, total, -1), fc_rdma_hdr_len(ops[k]));
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			buf[reth_len_off] = (uint8_t)(bad[i] >> 24);
			buf[reth_len_off + 1] = (uint8_t)(bad[i] >> 16);
			buf[reth_len_off + 2] = (uint8_t)(bad[i] >> 8);
			buf[reth_len_off + 3] = (uint8_t)bad[i];
			assert_int_equal(decode_exact(buf, total, -1), -FC_WIRE_ELEN);
		}
		random_hdrs(ops[k], &h);
		h.reth.len = 7;
		assert_int_equal(fc_rdma_encode(&h, payload, 8, buf, sizeof(buf)), -FC_WIRE_EINVAL);
	}
	/* WRITE First / Middle / Last carry any RETH length */
	for (op = 0x06; op <= 0x08; op++) {
		random_hdrs((uint8_t)op, &h);
		h.reth.len = 0xFFFFFFFF;
		assert_int_equal(fc_rdma_encode(&h, payload, 8, buf, sizeof(buf)), 36);
		assert_int_equal(decode_exact(buf, 36, 5), 28);
	}
}

/* XRCETH reserved byte (8.3.9) is ignored like the RBTH and DETH ones. */
static void test_xrceth_reserved_ignored(void **state)
{
	uint8_t buf[256];
	struct fc_rdma_hdrs a, b;
	size_t total;

	(void)state;
	rng_init();
	total = make_packet(0xA5, 4, buf, sizeof(buf));
	assert_int_equal(fc_rdma_decode(buf, total, 5, &a), 16 + 12);
	buf[12] = 0xFF;
	assert_int_equal(fc_rdma_decode(buf, total, 5, &b), 16 + 12);
	ctx_what = __func__;
	check_hdrs(&b, &a);
}

/* ------------------------------------------------------------------------ */
/* Encoder                                                                    */
/* ------------------------------------------------------------------------ */

#define GUARD 32

static void test_encode_enospc_every_cap(void **state)
{
	static const struct {
		uint8_t opcode;
		size_t plen;
	} cases[] = { { 0x0A, 5 }, { 0x0C, 0 }, { 0xB9, 0 }, { 0x65, 13 }, { 0x12, 0 } };
	uint8_t payload[16] = { 0 }, buf[FC_RDMA_HDR_MAX + 16 + GUARD];
	struct fc_rdma_hdrs h;
	size_t i, cap, j;

	(void)state;
	rng_init();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t total = (size_t)fc_rdma_hdr_len(cases[i].opcode) + cases[i].plen +
			       (4 - cases[i].plen % 4) % 4;

		random_hdrs(cases[i].opcode, &h);
		h.reth.len = (uint32_t)cases[i].plen;
		for (cap = 0; cap <= total; cap++) {
			int r;

			memset(buf, 0xA5, sizeof(buf));
			r = fc_rdma_encode(&h, payload, cases[i].plen, buf, cap);
			assert_int_equal(r, cap < total ? -FC_WIRE_ENOSPC : (int)total);
			for (j = cap; j < sizeof(buf); j++)
				assert_int_equal(buf[j], 0xA5);
		}
	}
}

static void test_encode_einval(void **state)
{
	uint8_t buf[256], payload[8] = { 0 };
	struct fc_rdma_hdrs h;

	(void)state;
	rng_init();
	random_hdrs(0x04, &h);
	h.dqp = 1u << 24;
	assert_int_equal(fc_rdma_encode(&h, payload, 8, buf, sizeof(buf)), -FC_WIRE_EINVAL);
	h.dqp = 0xFFFFFFFF;
	assert_int_equal(fc_rdma_encode(&h, payload, 8, buf, sizeof(buf)), -FC_WIRE_EINVAL);
	h.dqp = 0xFFFFFF;
	h.deth.src_qp = 1u << 24; /* no DETH on RC SEND: ignored */
	h.xrc_srq = 1u << 24;     /* no XRCETH on RC: ignored */
	assert_int_equal(fc_rdma_encode(&h, payload, 8, buf, sizeof(buf)), 28);

	random_hdrs(0x64, &h);
	h.deth.src_qp = 1u << 24;
	assert_int_equal(fc_rdma_encode(&h, payload, 8, buf, sizeof(buf)), -FC_WIRE_EINVAL);

	random_hdrs(0xA4, &h);
	h.xrc_srq = 0x01000000;
	assert_int_equal(fc_rdma_encode(&h, payload, 8, buf, sizeof(buf)), -FC_WIRE_EINVAL);

	random_hdrs(0x11, &h); /* reserved opcodes */
	assert_int_equal(fc_rdma_encode(&h, NULL, 0, buf, sizeof(buf)), -FC_WIRE_EINVAL);
	h.opcode = 0x66;
	assert_int_equal(fc_rdma_encode(&h, NULL, 0, buf, sizeof(buf)), -FC_WIRE_EINVAL);
	h.opcode = 0xB1; /* XRC class, reserved operation */
	assert_int_equal(fc_rdma_encode(&h, NULL, 0, buf, sizeof(buf)), -FC_WIRE_EINVAL);

	random_hdrs(0x0C, &h); /* payload on a READ Request */
	assert_int_equal(fc_rdma_encode(&h, payload, 4, buf, sizeof(buf)), -FC_WIRE_EINVAL);

	random_hdrs(0x00, &h); /* NULL payload with a length */
	assert_int_equal(fc_rdma_encode(&h, NULL, 4, buf, sizeof(buf)), -FC_WIRE_EINVAL);
	/* a length that cannot be returned as int */
	assert_int_equal(fc_rdma_encode(&h, payload, SIZE_MAX, buf, sizeof(buf)),
			 -FC_WIRE_EINVAL);
	assert_int_equal(fc_rdma_encode(&h, payload, (size_t)INT32_MAX, buf, sizeof(buf)),
			 -FC_WIRE_EINVAL);
}

/* The payload may already sit at its place in the output buffer. */
static void test_encode_payload_in_place(void **state)
{
	uint8_t buf[128];
	struct fc_rdma_hdrs h, got;
	int r;

	(void)state;
	rng_init();
	random_hdrs(0x0A, &h);
	h.reth.len = 10;
	memset(buf, 0xEE, sizeof(buf));
	memcpy(buf + 28, "0123456789", 10);
	r = fc_rdma_encode(&h, buf + 28, 10, buf, sizeof(buf));
	assert_int_equal(r, 40);
	assert_int_equal(fc_rdma_decode(buf, 40, 5, &got), 28);
	assert_int_equal(got.payload_len, 10);
	assert_memory_equal(got.payload, "0123456789", 10);
	assert_int_equal(buf[38], 0);
	assert_int_equal(buf[39], 0);
	/* overlapping the header region: moved before the headers are written */
	memcpy(buf + 4, "abcdefghij", 10);
	r = fc_rdma_encode(&h, buf + 4, 10, buf, sizeof(buf));
	assert_int_equal(r, 40);
	assert_memory_equal(buf + 28, "abcdefghij", 10);
}

/* h->pad and h->eths are outputs of decode; encode computes them. */
static void test_encode_ignores_pad_and_eths(void **state)
{
	uint8_t buf[128];
	struct fc_rdma_hdrs h = { .opcode = 0x04, .pad = 3, .eths = 0xFFFFFFFF }, got;

	(void)state;
	assert_int_equal(fc_rdma_encode(&h, NULL, 0, buf, sizeof(buf)), 20);
	assert_int_equal(buf[1], 0x01); /* SE 0, pad 0, version 1 */
	assert_int_equal(fc_rdma_decode(buf, 20, 5, &got), 20);
	assert_int_equal(got.pad, 0);
	assert_int_equal(got.eths, FC_ETH_SETH | FC_ETH_OETH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rbth_write_only_bytes),
		cmocka_unit_test(test_read_request_bytes),
		cmocka_unit_test(test_seed_atomic_eth_swap_corrected),
		cmocka_unit_test(test_ud_send_only_imm_bytes),
		cmocka_unit_test(test_masked_atomic_bytes),
		cmocka_unit_test(test_plain_atomic_masks),
		cmocka_unit_test(test_other_header_orders),
		cmocka_unit_test(test_all_opcodes),
		cmocka_unit_test(test_round_trip_all_opcodes),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_falcon_type_mismatch),
		cmocka_unit_test(test_pad_larger_than_payload),
		cmocka_unit_test(test_payload_on_headers_only_opcodes),
		cmocka_unit_test(test_length_not_multiple_of_4),
		cmocka_unit_test(test_write_only_reth_length),
		cmocka_unit_test(test_xrceth_reserved_ignored),
		cmocka_unit_test(test_encode_enospc_every_cap),
		cmocka_unit_test(test_encode_einval),
		cmocka_unit_test(test_encode_payload_in_place),
		cmocka_unit_test(test_encode_ignores_pad_and_eths),
	};

	rng_init();
	print_message("wire_rdma: seed %#llx (FALCON_TEST_SEED to override)\n",
		      (unsigned long long)test_seed);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
