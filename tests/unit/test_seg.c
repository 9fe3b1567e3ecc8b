/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of op segmentation (daemon/engine/seg.c, RDMA spec 6.7). Hand cases follow the
 * 6.7 figures' descriptions (4-push SEND and WRITE, a 6-pull READ over a scatter list)
 * with opcodes typed in as numbers from the 8.1.3 table; boundaries (0, 1, MTU, MTU+1,
 * 1-byte fragments); argument errors; and a random property test: the transactions
 * tile the op exactly, none exceeds the MTU, no pull crosses a fragment, headers follow
 * the rules of seg.h, and every transaction survives fc_rdma_encode/fc_rdma_decode.
 *
 * Random tests use xorshift64 with a fixed seed; FALCON_TEST_SEED=<n> overrides it and
 * a failure prints the seed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "seg.h"
#include "testutil.h"

/* spec 8.1.3, RC opcodes ([7:5] = 000) */
#define OP_SEND_FIRST 0x00
#define OP_SEND_MIDDLE 0x01
#define OP_SEND_LAST 0x02
#define OP_SEND_LAST_IMM 0x03
#define OP_SEND_ONLY 0x04
#define OP_SEND_ONLY_IMM 0x05
#define OP_WRITE_FIRST 0x06
#define OP_WRITE_MIDDLE 0x07
#define OP_WRITE_LAST 0x08
#define OP_WRITE_LAST_IMM 0x09
#define OP_WRITE_ONLY 0x0A
#define OP_WRITE_ONLY_IMM 0x0B
#define OP_READ_REQ 0x0C
#define OP_SEND_LAST_INV 0x16
#define OP_SEND_ONLY_INV 0x17

#define SEGS 64

static struct fc_seg segs[SEGS];

static struct fc_seg_req req_of(uint8_t op, const struct fc_sge *sgl, uint32_t n,
				uint32_t mtu)
{
	return (struct fc_seg_req){ .op = op, .cls = FC_RDMA_CLASS_RC, .sgl = sgl,
				    .num_sge = n, .mtu_bytes = mtu, .remote_va = 0x7F0000001000,
				    .rkey = 0xAABBCCDD, .imm = 0x11223344,
				    .inv_rkey = 0x55667788, .rmsn = 41 };
}

static int plan(const struct fc_seg_req *r, uint32_t *rmsn_next)
{
	memset(segs, 0xA5, sizeof(segs));
	return fc_seg_plan(r, segs, SEGS, rmsn_next);
}

/* ------------------------------------------------------------------------ */
/* The 6.7 figures                                                           */
/* ------------------------------------------------------------------------ */

/* A SEND of 3.5 MTU: FIRST, MIDDLE, MIDDLE, LAST; SETH = the message's RMSN in all,
 * OETH = byte offset; the next message gets RMSN + 1 (8.3.2). */
static void test_send_four_pushes(void **state)
{
	static const struct fc_sge sgl[] = { { 0x10000, 3500, 0x99 } };
	static const uint8_t op[] = { OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_MIDDLE,
				      OP_SEND_LAST };
	struct fc_seg_req r = req_of(FC_SEG_SEND, sgl, 1, 1000);
	uint32_t next = 0, i;

	(void)state;
	r.se = true;
	assert_int_equal(fc_seg_count(&r), 4);
	assert_int_equal(plan(&r, &next), 4);
	assert_int_equal(next, 42);
	for (i = 0; i < 4; i++) {
		assert_int_equal(segs[i].hdr.opcode, op[i]);
		assert_int_equal(segs[i].msg_offset, 1000 * i);
		assert_int_equal(segs[i].len, i < 3 ? 1000 : 500);
		assert_int_equal(segs[i].hdr.rmsn, 41);
		assert_int_equal(segs[i].hdr.offset, 1000 * i);
		assert_int_equal(segs[i].sge, 0);
		assert_int_equal(segs[i].sge_offset, 1000 * i);
		assert_int_equal(segs[i].hdr.se, i == 3);
		assert_int_equal(segs[i].hdr.reth.len, 0);
		assert_int_equal(segs[i].hdr.imm, 0);
	}
	/* with Immediate / Invalidate: only the LAST changes */
	r.op = FC_SEG_SEND_IMM;
	assert_int_equal(plan(&r, &next), 4);
	assert_int_equal(segs[2].hdr.opcode, OP_SEND_MIDDLE);
	assert_int_equal(segs[2].hdr.imm, 0);
	assert_int_equal(segs[3].hdr.opcode, OP_SEND_LAST_IMM);
	assert_int_equal(segs[3].hdr.imm, 0x11223344);
	r.op = FC_SEG_SEND_INV;
	assert_int_equal(plan(&r, &next), 4);
	assert_int_equal(segs[0].hdr.inv_rkey, 0);
	assert_int_equal(segs[3].hdr.opcode, OP_SEND_LAST_INV);
	assert_int_equal(segs[3].hdr.inv_rkey, 0x55667788);
	assert_int_equal(next, 42);
}

/* A WRITE of 3.5 MTU: FIRST, MIDDLE, MIDDLE, LAST, each with a RETH from its own first
 * byte to the message's end (the FIRST's is InfiniBand's: VA and whole DMA length). */
static void test_write_four_pushes(void **state)
{
	static const struct fc_sge sgl[] = { { 0x10000, 1200, 1 }, { 0x90000, 2300, 2 } };
	static const uint8_t op[] = { OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_MIDDLE,
				      OP_WRITE_LAST };
	static const uint32_t sge[] = { 0, 0, 1, 1 }, sge_off[] = { 0, 1000, 800, 1800 };
	struct fc_seg_req r = req_of(FC_SEG_WRITE, sgl, 2, 1000);
	uint32_t next = 0, i;

	(void)state;
	assert_int_equal(plan(&r, &next), 4);
	assert_int_equal(next, 41); /* a plain WRITE uses no RMSN */
	for (i = 0; i < 4; i++) {
		assert_int_equal(segs[i].hdr.opcode, op[i]);
		assert_int_equal(segs[i].hdr.reth.va, 0x7F0000001000ULL + 1000 * i);
		assert_int_equal(segs[i].hdr.reth.rkey, 0xAABBCCDD);
		assert_int_equal(segs[i].hdr.reth.len, 3500 - 1000 * i);
		assert_int_equal(segs[i].len, i < 3 ? 1000 : 500);
		assert_int_equal(segs[i].hdr.rmsn, 0);
		assert_int_equal(segs[i].sge, sge[i]);
		assert_int_equal(segs[i].sge_offset, sge_off[i]);
	}
	/* with Immediate: LAST_IMM carries ImmDt and SETH, RMSN advances */
	r.op = FC_SEG_WRITE_IMM;
	r.se = true;
	assert_int_equal(plan(&r, &next), 4);
	assert_int_equal(next, 42);
	assert_int_equal(segs[2].hdr.opcode, OP_WRITE_MIDDLE);
	assert_int_equal(segs[2].hdr.rmsn, 0);
	assert_false(segs[2].hdr.se);
	assert_int_equal(segs[3].hdr.opcode, OP_WRITE_LAST_IMM);
	assert_int_equal(segs[3].hdr.imm, 0x11223344);
	assert_int_equal(segs[3].hdr.rmsn, 41);
	assert_true(segs[3].hdr.se);
}

/* A READ into three 6000-byte fragments with a 4096-byte MTU: six pulls, the FIRST and
 * MIDDLE ones shorter than an MTU at the fragment ends (6.7); RMSN +1 per pull. */
static void test_read_six_pulls(void **state)
{
	static const struct fc_sge sgl[] = {
		{ 0x100000, 6000, 0x0A }, { 0x200000, 6000, 0x0B }, { 0x300000, 6000, 0x0C },
	};
	static const uint32_t len[] = { 4096, 1904, 4096, 1904, 4096, 1904 };
	static const uint32_t off[] = { 0, 4096, 6000, 10096, 12000, 16096 };
	struct fc_seg_req r = req_of(FC_SEG_READ, sgl, 3, 4096);
	uint32_t next = 0, i;

	(void)state;
	assert_int_equal(fc_seg_count(&r), 6);
	assert_int_equal(plan(&r, &next), 6);
	assert_int_equal(next, 47);
	for (i = 0; i < 6; i++) {
		assert_int_equal(segs[i].hdr.opcode, OP_READ_REQ);
		assert_int_equal(segs[i].len, len[i]);
		assert_int_equal(segs[i].msg_offset, off[i]);
		assert_int_equal(segs[i].hdr.reth.va, 0x7F0000001000ULL + off[i]);
		assert_int_equal(segs[i].hdr.reth.rkey, 0xAABBCCDD);
		assert_int_equal(segs[i].hdr.reth.len, len[i]);
		assert_int_equal(segs[i].hdr.rmsn, 41 + i);
		assert_int_equal(segs[i].sge, i / 2);
		assert_int_equal(segs[i].sge_offset, i % 2 ? 4096 : 0);
		assert_int_equal(segs[i].hdr.steth.va, 0x100000ULL * (i / 2 + 1) +
							       (i % 2 ? 4096 : 0));
		assert_int_equal(segs[i].hdr.steth.lkey, 0x0A + i / 2);
	}
}

/* ------------------------------------------------------------------------ */
/* Boundaries                                                                */
/* ------------------------------------------------------------------------ */

static void test_lengths_0_1_mtu_mtu1(void **state)
{
	struct fc_sge sgl[1] = { { 0x5000, 0, 7 } };
	struct fc_seg_req r = req_of(FC_SEG_SEND, sgl, 1, 256);
	uint32_t next;

	(void)state;
	/* 0: one ONLY without payload */
	assert_int_equal(plan(&r, &next), 1);
	assert_int_equal(segs[0].hdr.opcode, OP_SEND_ONLY);
	assert_int_equal(segs[0].len, 0);
	assert_int_equal(next, 42);
	r.op = FC_SEG_WRITE;
	assert_int_equal(plan(&r, &next), 1);
	assert_int_equal(segs[0].hdr.opcode, OP_WRITE_ONLY);
	assert_int_equal(segs[0].hdr.reth.len, 0);
	assert_int_equal(segs[0].hdr.reth.va, 0x7F0000001000ULL);
	r.op = FC_SEG_READ;
	assert_int_equal(plan(&r, &next), 1);
	assert_int_equal(segs[0].hdr.opcode, OP_READ_REQ);
	assert_int_equal(segs[0].hdr.reth.len, 0);
	assert_int_equal(segs[0].hdr.steth.va, 0x5000);
	assert_int_equal(segs[0].hdr.steth.lkey, 7);
	assert_int_equal(next, 42);
	r.num_sge = 0; /* no list at all */
	assert_int_equal(plan(&r, &next), 1);
	assert_int_equal(segs[0].hdr.steth.va, 0);
	assert_int_equal(segs[0].hdr.steth.lkey, 0);
	assert_int_equal(segs[0].sge, 0);
	r.num_sge = 1;
	/* 1, MTU: one ONLY; MTU + 1: FIRST of MTU, LAST of 1 */
	sgl[0].len = 1;
	r.op = FC_SEG_SEND_IMM;
	assert_int_equal(plan(&r, &next), 1);
	assert_int_equal(segs[0].hdr.opcode, OP_SEND_ONLY_IMM);
	assert_int_equal(segs[0].hdr.imm, 0x11223344);
	assert_int_equal(segs[0].len, 1);
	sgl[0].len = 256;
	r.op = FC_SEG_WRITE_IMM;
	assert_int_equal(plan(&r, &next), 1);
	assert_int_equal(segs[0].hdr.opcode, OP_WRITE_ONLY_IMM);
	assert_int_equal(segs[0].hdr.reth.len, 256);
	assert_int_equal(segs[0].hdr.rmsn, 41);
	r.op = FC_SEG_SEND_INV;
	assert_int_equal(plan(&r, &next), 1);
	assert_int_equal(segs[0].hdr.opcode, OP_SEND_ONLY_INV);
	sgl[0].len = 257;
	r.op = FC_SEG_WRITE;
	assert_int_equal(plan(&r, &next), 2);
	assert_int_equal(segs[0].hdr.opcode, OP_WRITE_FIRST);
	assert_int_equal(segs[0].hdr.reth.len, 257); /* the whole write (8.3.1) */
	assert_int_equal(segs[0].len, 256);
	assert_int_equal(segs[1].hdr.opcode, OP_WRITE_LAST);
	assert_int_equal(segs[1].hdr.reth.len, 1);
	assert_int_equal(segs[1].hdr.reth.va, 0x7F0000001100ULL);
	r.op = FC_SEG_READ;
	assert_int_equal(plan(&r, &next), 2);
	assert_int_equal(segs[1].len, 1);
	assert_int_equal(segs[1].hdr.steth.va, 0x5100);
	assert_int_equal(next, 43);
}

/* 1-byte fragments (and empty ones between): a READ pulls each byte alone; a SEND of
 * MTU 2 gathers two fragments per push. */
static void test_one_byte_fragments(void **state)
{
	static const struct fc_sge sgl[] = {
		{ 0x100, 1, 1 }, { 0x200, 0, 2 }, { 0x300, 1, 3 }, { 0x400, 1, 4 },
		{ 0x500, 1, 5 }, { 0x600, 0, 6 },
	};
	static const uint32_t read_sge[] = { 0, 2, 3, 4 };
	struct fc_seg_req r = req_of(FC_SEG_READ, sgl, 6, 4096);
	uint32_t next, i;

	(void)state;
	assert_int_equal(plan(&r, &next), 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(segs[i].len, 1);
		assert_int_equal(segs[i].msg_offset, i);
		assert_int_equal(segs[i].sge, read_sge[i]);
		assert_int_equal(segs[i].sge_offset, 0);
		assert_int_equal(segs[i].hdr.steth.va, sgl[read_sge[i]].addr);
		assert_int_equal(segs[i].hdr.steth.lkey, sgl[read_sge[i]].lkey);
		assert_int_equal(segs[i].hdr.reth.va, 0x7F0000001000ULL + i);
	}
	r.op = FC_SEG_SEND;
	r.mtu_bytes = 2;
	assert_int_equal(plan(&r, &next), 2);
	assert_int_equal(segs[0].sge, 0);
	assert_int_equal(segs[1].sge, 3); /* byte 2 is in entry 3 (entry 1 is empty) */
	assert_int_equal(segs[1].sge_offset, 0);
}

/* ------------------------------------------------------------------------ */
/* Classes and errors                                                        */
/* ------------------------------------------------------------------------ */

static void test_ud_and_xrc(void **state)
{
	static const struct fc_sge sgl[] = { { 0x100, 300, 1 } };
	struct fc_seg_req r = req_of(FC_SEG_SEND_IMM, sgl, 1, 512);
	uint32_t next;

	(void)state;
	r.cls = FC_RDMA_CLASS_UD;
	assert_int_equal(plan(&r, &next), 1);
	assert_int_equal(segs[0].hdr.opcode, 0x65); /* 011 00101 */
	assert_int_equal(segs[0].hdr.rmsn, 0);      /* UD: no SETH, no OETH */
	assert_int_equal(segs[0].hdr.offset, 0);
	assert_int_equal(segs[0].hdr.imm, 0x11223344);
	assert_int_equal(next, 41);
	r.mtu_bytes = 299;
	assert_int_equal(plan(&r, &next), -EMSGSIZE);
	r.mtu_bytes = 512;
	r.op = FC_SEG_WRITE;
	assert_int_equal(plan(&r, &next), -EINVAL);
	r.op = FC_SEG_SEND_INV;
	assert_int_equal(plan(&r, &next), -EINVAL);

	r = req_of(FC_SEG_WRITE, sgl, 1, 100);
	r.cls = FC_RDMA_CLASS_XRC;
	r.xrc_srq = 0xABCDE;
	assert_int_equal(plan(&r, &next), 3);
	assert_int_equal(segs[0].hdr.opcode, 0xA6); /* 101 00110 */
	assert_int_equal(segs[1].hdr.opcode, 0xA7);
	assert_int_equal(segs[2].hdr.opcode, 0xA8);
	assert_int_equal(segs[2].hdr.xrc_srq, 0xABCDE);
}

static void test_errors(void **state)
{
	struct fc_sge big[3] = { { 0, 0x80000000u, 1 }, { 0, 1, 1 }, { 0, 0, 1 } };
	static const struct fc_sge sgl[] = { { 0x100, 1000, 1 } };
	struct fc_seg_req r = req_of(FC_SEG_SEND, sgl, 1, 100);
	struct fc_seg sentinel;
	uint32_t next = 0x1234;

	(void)state;
	/* -E2BIG: 10 pushes, room for 9; nothing written */
	memset(segs, 0xA5, sizeof(segs));
	memset(&sentinel, 0xA5, sizeof(sentinel));
	assert_int_equal(fc_seg_plan(&r, segs, 9, &next), -E2BIG);
	assert_memory_equal(&segs[0], &sentinel, sizeof(sentinel));
	assert_int_equal(next, 0x1234);
	assert_int_equal(fc_seg_plan(&r, segs, 10, NULL), 10);
	assert_int_equal(fc_seg_plan(&r, NULL, 0, NULL), -E2BIG);
	/* -EINVAL */
	r.mtu_bytes = 0;
	assert_int_equal(plan(&r, NULL), -EINVAL);
	r.mtu_bytes = 100;
	r.op = FC_SEG_READ + 1;
	assert_int_equal(plan(&r, NULL), -EINVAL);
	r.op = FC_SEG_SEND;
	r.cls = 1;
	assert_int_equal(plan(&r, NULL), -EINVAL);
	r.cls = FC_RDMA_CLASS_RC;
	r.num_sge = FC_SEG_SGE_MAX + 1;
	assert_int_equal(fc_seg_count(&r), -EINVAL);
	r.num_sge = 1;
	r.sgl = NULL;
	assert_int_equal(plan(&r, NULL), -EINVAL);
	r.num_sge = 0;
	assert_int_equal(plan(&r, NULL), 1);
	/* remote VA + length past 2^64 - 1 */
	r = req_of(FC_SEG_WRITE, sgl, 1, 100);
	r.remote_va = UINT64_MAX - 1000; /* last byte at 2^64 - 2 */
	assert_int_equal(plan(&r, NULL), 10);
	r.remote_va = UINT64_MAX - 999;
	assert_int_equal(plan(&r, NULL), -EINVAL);
	r.op = FC_SEG_READ;
	assert_int_equal(plan(&r, NULL), -EINVAL);
	r.op = FC_SEG_SEND; /* a SEND has no remote VA */
	assert_int_equal(plan(&r, NULL), 10);
	/* -EMSGSIZE: more than 2^31 bytes */
	r = req_of(FC_SEG_SEND, big, 1, 1u << 30);
	assert_int_equal(fc_seg_count(&r), 2);
	r.num_sge = 3;
	assert_int_equal(fc_seg_count(&r), -EMSGSIZE);
}

/* The largest message (2^31 bytes, InfiniBand's) one transaction at a time: nothing
 * is planned ahead, any transaction is there in O(num_sge). A WRITE of one 2 GiB entry
 * and a READ into 32 entries of 64 MiB, MTU 4096. */
static void test_2gib_one_at_a_time(void **state)
{
	struct fc_sge one[1] = { { 0x100000000ull, 0x80000000u, 7 } }, frag[FC_SEG_SGE_MAX];
	struct fc_seg_req r = req_of(FC_SEG_WRITE, one, 1, 4096);
	const uint32_t n = 0x80000000u / 4096;
	struct fc_seg s;
	uint32_t next = 0;

	(void)state;
	assert_int_equal(fc_seg_count(&r), n);
	assert_int_equal(fc_seg_count_checked(&r, &next), n);
	assert_int_equal(next, 41);
	assert_int_equal(fc_seg_at(&r, n, 0, &s), 0);
	assert_int_equal(s.hdr.opcode, OP_WRITE_FIRST);
	assert_int_equal(s.hdr.reth.va, 0x7F0000001000ULL);
	assert_int_equal(s.hdr.reth.len, 0x80000000u); /* the whole DMA length, as IB */
	assert_int_equal(s.len, 4096);
	assert_int_equal(fc_seg_at(&r, n, 300000, &s), 0);
	assert_int_equal(s.hdr.opcode, OP_WRITE_MIDDLE);
	assert_int_equal(s.msg_offset, 300000u * 4096);
	assert_int_equal(s.sge_offset, 300000u * 4096);
	assert_int_equal(s.hdr.reth.len, 0x80000000u - 300000u * 4096);
	assert_int_equal(fc_seg_at(&r, n, n - 1, &s), 0);
	assert_int_equal(s.hdr.opcode, OP_WRITE_LAST);
	assert_int_equal(s.hdr.reth.len, 4096);
	assert_int_equal(fc_seg_at(&r, n, n, &s), -ERANGE);
	for (uint32_t i = 0; i < FC_SEG_SGE_MAX; i++)
		frag[i] = (struct fc_sge){ 0x200000000ull + (uint64_t)i * (128u << 20), 64u << 20,
					   100 + i };
	r = req_of(FC_SEG_READ, frag, FC_SEG_SGE_MAX, 4096);
	assert_int_equal(fc_seg_count_checked(&r, &next), n);
	assert_int_equal(next, 41 + n);
	assert_int_equal(fc_seg_at(&r, n, 16384 * 5 + 3, &s), 0); /* fragment 5, pull 3 */
	assert_int_equal(s.sge, 5);
	assert_int_equal(s.sge_offset, 3 * 4096);
	assert_int_equal(s.msg_offset, (5u << 26) + 3 * 4096);
	assert_int_equal(s.hdr.reth.va, 0x7F0000001000ULL + (5u << 26) + 3 * 4096);
	assert_int_equal(s.hdr.reth.len, 4096);
	assert_int_equal(s.hdr.steth.va, 0x200000000ull + 5ull * (128u << 20) + 3 * 4096);
	assert_int_equal(s.hdr.steth.lkey, 105);
	assert_int_equal(s.hdr.rmsn, 41 + 16384 * 5 + 3);
	/* one byte more than 2^31 is refused */
	frag[0].len++;
	assert_int_equal(fc_seg_count(&r), -EMSGSIZE);
}

/* ------------------------------------------------------------------------ */
/* Random properties                                                         */
/* ------------------------------------------------------------------------ */

static uint64_t rng, seed;

#define PROP(cond)                                                                      \
	do {                                                                            \
		if (!(cond))                                                            \
			fail_msg("seed %#llx iter %u: %s", (unsigned long long)seed, iter, \
				 #cond);                                                \
	} while (0)

/* The expected opcode kind of transaction k of n: 0 FIRST, 1 MIDDLE, 2 LAST, 3 ONLY. */
static int kind_of(uint32_t k, uint32_t n)
{
	if (n == 1)
		return 3;
	return k == 0 ? 0 : k == n - 1 ? 2 : 1;
}

static void check_plan(const struct fc_seg_req *r, int n, uint32_t next, uint32_t iter)
{
	static const uint8_t codes[5][4] = {
		{ OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_ONLY },
		{ OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST_IMM, OP_SEND_ONLY_IMM },
		{ OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST_INV, OP_SEND_ONLY_INV },
		{ OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_ONLY },
		{ OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST_IMM, OP_WRITE_ONLY_IMM },
	};
	uint64_t start[FC_SEG_SGE_MAX + 1] = { 0 }, total, pos = 0;
	static uint8_t buf[FC_RDMA_HDR_MAX + 4096], payload[4096];
	uint32_t k, i, pulls = 0;
	bool read = r->op == FC_SEG_READ;

	for (i = 0; i < r->num_sge; i++) /* prefix sums: entry i covers [start[i], start[i+1]) */
		start[i + 1] = start[i] + r->sgl[i].len;
	total = start[r->num_sge];
	PROP(n >= 1);
	for (k = 0; k < (uint32_t)n; k++) {
		const struct fc_seg *s = &segs[k];
		struct fc_rdma_hdrs d;
		int len;

		/* tiling, MTU */
		PROP(s->msg_offset == pos);
		PROP(s->len <= r->mtu_bytes);
		pos += s->len;
		PROP(total == 0 || s->len > 0);
		/* the first byte's entry: independent prefix-sum lookup */
		if (s->len) {
			PROP(s->sge < r->num_sge);
			PROP(start[s->sge] + s->sge_offset == s->msg_offset);
			PROP(s->sge_offset < r->sgl[s->sge].len);
		}
		if (read) { /* a pull stays in its fragment; RETH/SETH/STETH */
			PROP(s->len == 0 || s->sge_offset + s->len <= r->sgl[s->sge].len);
			PROP(s->len == r->mtu_bytes || s->len == 0 ||
			     s->sge_offset + s->len == r->sgl[s->sge].len);
			PROP(s->hdr.opcode == OP_READ_REQ);
			PROP(s->hdr.reth.va == r->remote_va + s->msg_offset);
			PROP(s->hdr.reth.len == s->len && s->hdr.reth.rkey == r->rkey);
			PROP(s->hdr.rmsn == r->rmsn + k);
			PROP(r->num_sge == 0 ||
			     (s->hdr.steth.va == r->sgl[s->sge].addr + s->sge_offset &&
			      s->hdr.steth.lkey == r->sgl[s->sge].lkey));
			pulls++;
		} else { /* pushes: MTU-sized but the last; opcode sequence; per-op ETHs */
			bool last = k == (uint32_t)n - 1, send = r->op <= FC_SEG_SEND_INV;

			PROP(last || s->len == r->mtu_bytes);
			PROP(s->hdr.opcode == codes[r->op][kind_of(k, (uint32_t)n)]);
			PROP(!send || (s->hdr.rmsn == r->rmsn && s->hdr.offset == s->msg_offset));
			PROP(send || (s->hdr.reth.va == r->remote_va + s->msg_offset &&
				      s->hdr.reth.len == total - s->msg_offset &&
				      s->hdr.reth.rkey == r->rkey));
			PROP(s->hdr.rmsn == (send || (last && r->op == FC_SEG_WRITE_IMM) ? r->rmsn
											 : 0));
			PROP(s->hdr.se == (last && r->se && r->op != FC_SEG_WRITE));
		}
		/* it is a valid packet of its opcode: encode, decode, same fields */
		s = &segs[k];
		{
			struct fc_rdma_hdrs h = s->hdr;

			h.dqp = 0x123456;
			h.sn = k + 1;
			len = fc_rdma_encode(&h, read ? NULL : payload, read ? 0 : s->len, buf,
					     sizeof(buf));
			PROP(len > 0);
			PROP(fc_rdma_decode(buf, (size_t)len, -1, &d) > 0);
			PROP(d.opcode == s->hdr.opcode && d.rmsn == s->hdr.rmsn &&
			     d.offset == s->hdr.offset && d.reth.va == s->hdr.reth.va &&
			     d.reth.len == s->hdr.reth.len && d.steth.va == s->hdr.steth.va &&
			     d.imm == s->hdr.imm && d.inv_rkey == s->hdr.inv_rkey);
			PROP(d.payload_len == (read ? 0 : s->len));
		}
	}
	PROP(pos == total);
	if (read)
		PROP(next == r->rmsn + pulls);
	else
		PROP(next == r->rmsn + (r->op != FC_SEG_WRITE));
}

static void test_random_properties(void **state)
{
	uint32_t iter, iters = fc_test_quick() ? 3000 : 30000, i;
	struct fc_sge sgl[FC_SEG_SGE_MAX];
	struct fc_seg_req r;
	uint32_t next;
	int n;

	(void)state;
	seed = fc_test_seed(0x5E65E65E6ULL);
	rng = seed ? seed : 1;
	for (iter = 0; iter < iters; iter++) {
		uint32_t mtu = 1 + (uint32_t)(fc_test_rand(&rng) % 300);
		uint32_t nsge = (uint32_t)(fc_test_rand(&rng) % 9);

		for (i = 0; i < nsge; i++) {
			uint32_t pick = (uint32_t)(fc_test_rand(&rng) % 6);

			sgl[i].addr = fc_test_rand(&rng) >> 8;
			sgl[i].lkey = (uint32_t)fc_test_rand(&rng);
			sgl[i].len = pick == 0 ? 0 : pick == 1 ? 1 : pick == 2 ? mtu : mtu + 1;
			if (pick > 3)
				sgl[i].len = (uint32_t)(fc_test_rand(&rng) % (3 * mtu));
		}
		r = req_of((uint8_t)(fc_test_rand(&rng) % 6), sgl, nsge, mtu);
		r.se = fc_test_rand(&rng) & 1;
		r.rmsn = (uint32_t)fc_test_rand(&rng);
		r.remote_va = fc_test_rand(&rng) >> 1;
		n = fc_seg_plan(&r, segs, SEGS, &next);
		if (n == -E2BIG) {
			PROP(fc_seg_count(&r) > SEGS);
			continue;
		}
		PROP(n == fc_seg_count(&r));
		check_plan(&r, n, next, iter);
		if (n > 0) { /* an accepted request: one at a time, the same transactions */
			struct fc_seg one;
			uint32_t next2 = 0;

			PROP(fc_seg_count_checked(&r, &next2) == (uint32_t)n && next2 == next);
			for (uint32_t k = 0; k < (uint32_t)n; k++) {
				memset(&one, 0x5A, sizeof(one));
				PROP(fc_seg_at(&r, (uint32_t)n, k, &one) == 0);
				PROP(!memcmp(&one, &segs[k], sizeof(one)));
			}
			PROP(fc_seg_at(&r, (uint32_t)n, (uint32_t)n, &one) == -ERANGE);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_four_pushes),
		cmocka_unit_test(test_write_four_pushes),
		cmocka_unit_test(test_read_six_pulls),
		cmocka_unit_test(test_lengths_0_1_mtu_mtu1),
		cmocka_unit_test(test_one_byte_fragments),
		cmocka_unit_test(test_ud_and_xrc),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_2gib_one_at_a_time),
		cmocka_unit_test(test_random_properties),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
