/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the RDMA reference model (tests/rdma_model.h) on small hand cases: every
 * operation's success, each error with its expected statuses (ibverbs numbers typed in:
 * LOC_LEN_ERR 1, LOC_PROT_ERR 4, REM_INV_REQ_ERR 9, REM_ACCESS_ERR 10, REM_OP_ERR 11,
 * RNR_RETRY_EXC_ERR 13), memory untouched on error, the undefined bytes of failed
 * multi-transaction ops, and the RFC 7306 transcriptions on hand values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rdma_model.h"

#define PD_A 1
#define PD_B 2
#define RW (FC_MR_LOCAL_WRITE | FC_MR_REMOTE_READ | FC_MR_REMOTE_WRITE)
#define ALL (RW | FC_MR_REMOTE_ATOMIC | FC_MR_REMOTE_INVALIDATE)

/* Initiator: mem[0..256) source pattern (MR lkey 0x100), mem[1024..2048) sink (0x200).
 * Target: MR 0x11 (rkey 0x1011) = mem[0..512) at iova 0x10000, all rights;
 *         MR 0x12 (rkey 0x1012) = mem[512..768) at 0x20000, read only;
 *         MR 0x13 (rkey 0x1013) = mem[1024..2048) at 0x30000, local write (receives);
 *         MR 0x14 (rkey 0x1014) = mem[2048..2112) at 0x40000, all rights, PD B. */
static struct rm_node ini, tgt, before;

static int setup(void **state)
{
	int i;

	(void)state;
	rm_init(&ini, 64);
	rm_init(&tgt, 64);
	for (i = 0; i < 256; i++)
		ini.mem[i] = (uint8_t)(i * 7 + 3);
	for (i = 0; i < RM_MEM_BYTES; i++)
		tgt.mem[i] = 0xEE;
	assert_int_equal(rm_mr_add(&ini, PD_A, 0, 0x1000, 256, 0, 0x100, 0x9100), 0);
	assert_int_equal(rm_mr_add(&ini, PD_A, 1024, 0x8000, 1024, FC_MR_LOCAL_WRITE, 0x200,
				   0x9200), 1);
	assert_int_equal(rm_mr_add(&tgt, PD_A, 0, 0x10000, 512, ALL, 0x11, 0x1011), 0);
	assert_int_equal(rm_mr_add(&tgt, PD_A, 512, 0x20000, 256, FC_MR_REMOTE_READ, 0x12, 0x1012),
			 1);
	assert_int_equal(rm_mr_add(&tgt, PD_A, 1024, 0x30000, 1024, FC_MR_LOCAL_WRITE, 0x13,
				   0x1013), 2);
	assert_int_equal(rm_mr_add(&tgt, PD_B, 2048, 0x40000, 64, ALL, 0x14, 0x1014), 3);
	before = tgt;
	return 0;
}

static const struct rm_sge src16 = { 0x1000, 16, 0x100 };

static void assert_tgt_untouched(void)
{
	assert_memory_equal(tgt.mem, before.mem, RM_MEM_BYTES);
	assert_int_equal(rm_mem_check(&tgt, before.mem, RM_MEM_BYTES), -1);
}

/* ------------------------------------------------------------------------ */
/* WRITE                                                                     */
/* ------------------------------------------------------------------------ */

static void test_write_ok(void **state)
{
	static const struct rm_sge two[] = { { 0x1000, 4, 0x100 }, { 0x1010, 4, 0x100 } };
	struct rm_result r;

	(void)state;
	r = rm_write(&ini, PD_A, two, 2, &tgt, PD_A, 0x10008, 0x1011, NULL);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.req_status, 0);
	assert_int_equal(r.resp_status, FC_WC_NONE);
	/* bytes 0-3 and 16-19 of the pattern i*7+3 at target mem[8..16) */
	assert_int_equal(tgt.mem[8], 3);
	assert_int_equal(tgt.mem[11], 24);
	assert_int_equal(tgt.mem[12], 115);
	assert_int_equal(tgt.mem[15], 136);
	assert_int_equal(tgt.mem[7], 0xEE);
	assert_int_equal(tgt.mem[16], 0xEE);
}

static void test_write_errors(void **state)
{
	static const struct rm_sge bad_local = { 0x10F8, 16, 0x100 }; /* past its MR end */
	struct rm_result r;

	(void)state;
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, 0x10000, 0x1099, NULL);
	assert_int_equal(r.err, -FC_RDMA_EKEY);
	assert_int_equal(r.site, FC_RDMA_SITE_RKEY);
	assert_int_equal(r.req_status, 10);
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_B, 0x10000, 0x1011, NULL);
	assert_int_equal(r.err, -FC_RDMA_EPD);
	assert_int_equal(r.req_status, 10);
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, 0x20000, 0x1012, NULL);
	assert_int_equal(r.err, -FC_RDMA_EACCESS);
	assert_int_equal(r.req_status, 10);
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, 0x101F8, 0x1011, NULL);
	assert_int_equal(r.err, -FC_RDMA_EBOUNDS);
	assert_int_equal(r.req_status, 10);
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, UINT64_MAX - 4, 0x1011, NULL);
	assert_int_equal(r.err, -FC_RDMA_EBOUNDS);
	/* an L_Key of the target is no R_Key */
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, 0x10000, 0x11, NULL);
	assert_int_equal(r.err, -FC_RDMA_EKEY);
	/* local gather failures: LOC_PROT_ERR, nothing at the target */
	r = rm_write(&ini, PD_A, &bad_local, 1, &tgt, PD_A, 0x10000, 0x1011, NULL);
	assert_int_equal(r.err, -FC_RDMA_EBOUNDS);
	assert_int_equal(r.site, FC_RDMA_SITE_LOCAL);
	assert_int_equal(r.req_status, 4);
	r = rm_write(&ini, PD_B, &src16, 1, &tgt, PD_A, 0x10000, 0x1011, NULL);
	assert_int_equal(r.err, -FC_RDMA_EPD);
	assert_int_equal(r.req_status, 4);
	assert_tgt_untouched();
	/* zero length: no R_Key check at all (IB C9-88) */
	r = rm_write(&ini, PD_A, NULL, 0, &tgt, PD_A, 0xDEAD, 0xBADBAD, NULL);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.req_status, 0);
	assert_tgt_untouched();
}

/* A WRITE of 80 bytes (2 transactions at MTU 64) running 16 bytes past the region: its
 * range is checked whole, nothing is placed. One starting 16 bytes before the region:
 * the 64 bytes inside may or may not have been placed (packets that overtook their
 * FIRST on an unordered connection); the rest of memory is untouched. */
static void test_write_multi_bounds_undefined(void **state)
{
	static const struct rm_sge src80 = { 0x1000, 80, 0x100 };
	uint8_t actual[RM_MEM_BYTES];
	struct rm_result r;
	int i;

	(void)state;
	r = rm_write(&ini, PD_A, &src80, 1, &tgt, PD_A, 0x101C0, 0x1011, NULL);
	assert_int_equal(r.err, -FC_RDMA_EBOUNDS);
	assert_tgt_untouched();
	for (i = 0; i < RM_MEM_BYTES; i++)
		assert_int_equal(tgt.undef[i], 0);
	r = rm_write(&ini, PD_A, &src80, 1, &tgt, PD_A, 0x10000 - 16, 0x1011, NULL);
	assert_int_equal(r.err, -FC_RDMA_EBOUNDS);
	assert_memory_equal(tgt.mem, before.mem, RM_MEM_BYTES);
	for (i = 0; i < RM_MEM_BYTES; i++)
		assert_int_equal(tgt.undef[i], i < 64);
	assert_int_equal(tgt.alt[0], ini.mem[16]);
	assert_int_equal(tgt.alt[63], ini.mem[79]);
	/* old values pass, new values pass, a third value fails, bytes outside are strict */
	memcpy(actual, before.mem, sizeof(actual));
	assert_int_equal(rm_mem_check(&tgt, actual, RM_MEM_BYTES), -1);
	memcpy(actual, ini.mem + 16, 64);
	assert_int_equal(rm_mem_check(&tgt, actual, RM_MEM_BYTES), -1);
	actual[2] = 0x42;
	assert_int_equal(rm_mem_check(&tgt, actual, RM_MEM_BYTES), 2);
	actual[2] = ini.mem[18];
	actual[64] = (uint8_t)(before.mem[64] ^ 0xFF);
	assert_int_equal(rm_mem_check(&tgt, actual, RM_MEM_BYTES), 64);
	actual[64] = before.mem[64];
	/* sync adopts the implementation's bytes */
	rm_mem_sync(&tgt, actual);
	assert_memory_equal(tgt.mem, actual, RM_MEM_BYTES);
	for (i = 0; i < RM_MEM_BYTES; i++)
		assert_int_equal(tgt.undef[i], 0);
	/* the same error within one transaction leaves nothing undefined */
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, 0x101F8, 0x1011, NULL);
	assert_int_equal(r.err, -FC_RDMA_EBOUNDS);
	for (i = 0; i < RM_MEM_BYTES; i++)
		assert_int_equal(tgt.undef[i], 0);
}

static void test_write_imm(void **state)
{
	static const struct rm_sge rsge = { 0x30000, 64, 0x13 };
	uint32_t imm = 0xCAFE;
	struct rm_result r;

	(void)state;
	/* no receive WQE: RNR, nothing placed (single transaction) */
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, 0x10000, 0x1011, &imm);
	assert_int_equal(r.err, -FC_RDMA_ERNR);
	assert_int_equal(r.req_status, 13);
	assert_int_equal(r.resp_status, FC_WC_NONE);
	assert_tgt_untouched();
	assert_int_equal(rm_post_recv(&tgt, &rsge, 1, 777), 0);
	/* R_Key failure first: the WQE stays */
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, 0x10000, 0x1012, &imm);
	assert_int_equal(r.err, -FC_RDMA_EACCESS);
	assert_int_equal(r.resp_status, FC_WC_NONE);
	assert_int_equal(tgt.rq_count, 1);
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, 0x10000, 0x1011, &imm);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.resp_status, 0);
	assert_int_equal(r.recv_wr_id, 777);
	assert_int_equal(r.byte_len, 16);
	assert_true(r.has_imm);
	assert_int_equal(r.imm, 0xCAFE);
	assert_int_equal(tgt.rq_count, 0);
	assert_memory_equal(tgt.mem, ini.mem, 16);
	/* the receive buffer itself is not written */
	assert_memory_equal(tgt.mem + 1024, before.mem + 1024, 64);
}

/* ------------------------------------------------------------------------ */
/* READ                                                                      */
/* ------------------------------------------------------------------------ */

static void test_read(void **state)
{
	static const struct rm_sge sink[] = { { 0x8000, 3, 0x200 }, { 0x8100, 5, 0x200 } };
	static const struct rm_sge src_sink = { 0x1000, 8, 0x100 }; /* no LOCAL_WRITE */
	uint8_t ini_before[RM_MEM_BYTES];
	struct rm_result r;
	int i;

	(void)state;
	for (i = 0; i < 8; i++)
		tgt.mem[512 + i] = (uint8_t)(0x50 + i);
	memcpy(ini_before, ini.mem, sizeof(ini_before));
	r = rm_read(&ini, PD_A, sink, 2, &tgt, PD_A, 0x20000, 0x1012);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.req_status, 0);
	assert_int_equal(ini.mem[1024], 0x50);
	assert_int_equal(ini.mem[1026], 0x52);
	assert_int_equal(ini.mem[1027], ini_before[1027]);
	assert_int_equal(ini.mem[1024 + 0x100], 0x53);
	assert_int_equal(ini.mem[1024 + 0x104], 0x57);
	/* errors: the region lacks REMOTE_READ; bad key; the sink lacks LOCAL_WRITE */
	memcpy(ini_before, ini.mem, sizeof(ini_before));
	r = rm_read(&ini, PD_A, sink, 2, &tgt, PD_A, 0x30000, 0x1013);
	assert_int_equal(r.err, -FC_RDMA_EACCESS);
	assert_int_equal(r.req_status, 10);
	r = rm_read(&ini, PD_A, sink, 2, &tgt, PD_A, 0x20000, 0x1099);
	assert_int_equal(r.err, -FC_RDMA_EKEY);
	r = rm_read(&ini, PD_A, &src_sink, 1, &tgt, PD_A, 0x20000, 0x1012);
	assert_int_equal(r.err, -FC_RDMA_EACCESS);
	assert_int_equal(r.site, FC_RDMA_SITE_LOCAL);
	assert_int_equal(r.req_status, 4);
	assert_memory_equal(ini.mem, ini_before, RM_MEM_BYTES);
	for (i = 0; i < RM_MEM_BYTES; i++)
		assert_int_equal(ini.undef[i], 0);
}

/* A 100-byte READ (2 pulls) from 40 bytes before the end of a region: the sink bytes
 * fed from inside the region are undefined, with the region's bytes as alternative. */
static void test_read_multi_bounds_undefined(void **state)
{
	static const struct rm_sge sink = { 0x8000, 100, 0x200 };
	struct rm_result r;
	int i;

	(void)state;
	for (i = 0; i < 256; i++)
		tgt.mem[512 + i] = (uint8_t)i;
	r = rm_read(&ini, PD_A, &sink, 1, &tgt, PD_A, 0x20000 + 216, 0x1012);
	assert_int_equal(r.err, -FC_RDMA_EBOUNDS);
	for (i = 0; i < 100; i++)
		assert_int_equal(ini.undef[1024 + i], i < 40);
	assert_int_equal(ini.alt[1024], 216);
	assert_int_equal(ini.alt[1024 + 39], 255);
	assert_int_equal(ini.undef[1023], 0);
}

/* ------------------------------------------------------------------------ */
/* SEND                                                                      */
/* ------------------------------------------------------------------------ */

static void test_send(void **state)
{
	static const struct rm_sge rq2[] = { { 0x30000, 10, 0x13 }, { 0x30100, 10, 0x13 } };
	struct rm_result r;

	(void)state;
	/* no WQE: RNR, nothing consumed */
	r = rm_send(&ini, PD_A, &src16, 1, &tgt, PD_A, RM_SEND, 0);
	assert_int_equal(r.err, -FC_RDMA_ERNR);
	assert_int_equal(r.req_status, 13);
	assert_int_equal(r.resp_status, FC_WC_NONE);
	assert_int_equal(rm_post_recv(&tgt, rq2, 2, 1), 0);
	assert_int_equal(rm_post_recv(&tgt, rq2, 2, 2), 0);
	r = rm_send(&ini, PD_A, &src16, 1, &tgt, PD_A, RM_SEND_IMM, 0xABC);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.req_status, 0);
	assert_int_equal(r.resp_status, 0);
	assert_int_equal(r.recv_wr_id, 1);
	assert_int_equal(r.byte_len, 16);
	assert_true(r.has_imm);
	assert_int_equal(r.imm, 0xABC);
	/* 10 bytes into the first entry, 6 into the second */
	assert_memory_equal(tgt.mem + 1024, ini.mem, 10);
	assert_memory_equal(tgt.mem + 1024 + 0x100, ini.mem + 10, 6);
	assert_int_equal(tgt.mem[1024 + 0x106], 0xEE);
	/* 21 bytes do not fit 20: LOC_LEN_ERR / REM_INV_REQ_ERR, WQE consumed, untouched */
	{
		static const struct rm_sge src21 = { 0x1000, 21, 0x100 };
		uint8_t mem_now[RM_MEM_BYTES];

		memcpy(mem_now, tgt.mem, sizeof(mem_now));
		r = rm_send(&ini, PD_A, &src21, 1, &tgt, PD_A, RM_SEND, 0);
		assert_int_equal(r.err, -FC_RDMA_ELEN);
		assert_int_equal(r.site, FC_RDMA_SITE_RECV);
		assert_int_equal(r.req_status, 9);
		assert_int_equal(r.resp_status, 1);
		assert_int_equal(r.recv_wr_id, 2);
		assert_int_equal(tgt.rq_count, 0);
		assert_memory_equal(tgt.mem, mem_now, RM_MEM_BYTES);
	}
}

static void test_send_recv_lkey_errors(void **state)
{
	/* entry 2 has a bad key: fine while the message does not reach it */
	static const struct rm_sge rq[] = { { 0x30000, 8, 0x13 }, { 0x30100, 8, 0x99 } };
	static const struct rm_sge rq_ro[] = { { 0x20000, 8, 0x12 } }; /* no LOCAL_WRITE */
	static const struct rm_sge src8 = { 0x1000, 8, 0x100 };
	struct rm_result r;

	(void)state;
	assert_int_equal(rm_post_recv(&tgt, rq, 2, 10), 0);
	assert_int_equal(rm_post_recv(&tgt, rq, 2, 11), 0);
	assert_int_equal(rm_post_recv(&tgt, rq_ro, 1, 12), 0);
	r = rm_send(&ini, PD_A, &src8, 1, &tgt, PD_A, RM_SEND, 0);
	assert_int_equal(r.err, 0);
	assert_memory_equal(tgt.mem + 1024, ini.mem, 8);
	memcpy(before.mem, tgt.mem, RM_MEM_BYTES);
	r = rm_send(&ini, PD_A, &src16, 1, &tgt, PD_A, RM_SEND, 0);
	assert_int_equal(r.err, -FC_RDMA_EKEY);
	assert_int_equal(r.site, FC_RDMA_SITE_RECV);
	assert_int_equal(r.req_status, 11);
	assert_int_equal(r.resp_status, 4);
	assert_int_equal(r.recv_wr_id, 11);
	assert_tgt_untouched();
	r = rm_send(&ini, PD_A, &src8, 1, &tgt, PD_A, RM_SEND, 0);
	assert_int_equal(r.err, -FC_RDMA_EACCESS);
	assert_int_equal(r.req_status, 11);
	assert_int_equal(r.resp_status, 4);
	assert_tgt_untouched();
	/* the requester's own list first */
	assert_int_equal(rm_post_recv(&tgt, rq, 2, 13), 0);
	r = rm_send(&ini, PD_A, &(struct rm_sge){ 0x1000, 8, 0x77 }, 1, &tgt, PD_A, RM_SEND, 0);
	assert_int_equal(r.err, -FC_RDMA_EKEY);
	assert_int_equal(r.site, FC_RDMA_SITE_LOCAL);
	assert_int_equal(tgt.rq_count, 1);
}

/* A 100-byte SEND (2 transactions) into 60 + 60 bytes whose second entry lacks
 * LOCAL_WRITE: the 60 bytes of the first may have been placed. */
static void test_send_multi_undefined(void **state)
{
	static const struct rm_sge rq[] = { { 0x30000, 60, 0x13 }, { 0x30100, 60, 0x12 } };
	static const struct rm_sge src100 = { 0x1000, 100, 0x100 };
	struct rm_result r;
	int i;

	(void)state;
	assert_int_equal(rm_post_recv(&tgt, rq, 2, 5), 0);
	r = rm_send(&ini, PD_A, &src100, 1, &tgt, PD_A, RM_SEND, 0);
	assert_int_equal(r.err, -FC_RDMA_EACCESS); /* 0x12: the read-only region */
	assert_int_equal(r.resp_status, 4);
	assert_memory_equal(tgt.mem, before.mem, RM_MEM_BYTES);
	for (i = 0; i < RM_MEM_BYTES; i++)
		assert_int_equal(tgt.undef[i], i >= 1024 && i < 1084);
	assert_memory_equal(tgt.alt + 1024, ini.mem, 60);
}

static void test_send_invalidate(void **state)
{
	static const struct rm_sge rq[] = { { 0x30000, 64, 0x13 } };
	struct rm_result r;
	int i;

	(void)state;
	for (i = 0; i < 4; i++)
		assert_int_equal(rm_post_recv(&tgt, rq, 1, 100 + i), 0);
	/* the read-only region lacks REMOTE_INVALIDATE: both sides REM_INV_REQ_ERR */
	r = rm_send(&ini, PD_A, &src16, 1, &tgt, PD_A, RM_SEND_INV, 0x1012);
	assert_int_equal(r.err, -FC_RDMA_EACCESS);
	assert_int_equal(r.site, FC_RDMA_SITE_INVALIDATE);
	assert_int_equal(r.req_status, 9);
	assert_int_equal(r.resp_status, 9);
	assert_int_equal(r.recv_wr_id, 100);
	assert_tgt_untouched();
	/* another PD's region; an unknown key */
	r = rm_send(&ini, PD_A, &src16, 1, &tgt, PD_A, RM_SEND_INV, 0x1014);
	assert_int_equal(r.err, -FC_RDMA_EPD);
	r = rm_send(&ini, PD_A, &src16, 1, &tgt, PD_A, RM_SEND_INV, 0x1055);
	assert_int_equal(r.err, -FC_RDMA_EKEY);
	assert_tgt_untouched();
	/* success: data placed, region invalidated, its keys fail afterwards */
	r = rm_send(&ini, PD_A, &src16, 1, &tgt, PD_A, RM_SEND_INV, 0x1011);
	assert_int_equal(r.err, 0);
	assert_true(r.invalidated);
	assert_int_equal(r.inv_rkey, 0x1011);
	assert_memory_equal(tgt.mem + 1024, ini.mem, 16);
	r = rm_write(&ini, PD_A, &src16, 1, &tgt, PD_A, 0x10000, 0x1011, NULL);
	assert_int_equal(r.err, -FC_RDMA_EKEY);
	assert_true(rm_mr_del(&tgt, 0x11));
	assert_false(rm_mr_del(&tgt, 0x11));
}

/* ------------------------------------------------------------------------ */
/* Atomics                                                                   */
/* ------------------------------------------------------------------------ */

static void test_rfc_transcription_hand(void **state)
{
	(void)state;
	assert_int_equal(rm_rfc_masked_fetch_add(~0ULL, 1, 0), 0);
	assert_int_equal(rm_rfc_masked_fetch_add(0x00000001FFFFFFFFULL, 0x0000000100000001ULL,
						 0x8000000080000000ULL), 0x0000000200000000ULL);
	assert_int_equal(rm_rfc_masked_fetch_add(1, 1, 1), 0);
	assert_int_equal(rm_rfc_masked_fetch_add(1, 1, 0), 2);
	assert_int_equal(rm_rfc_masked_cmp_swap(5, 5, ~0ULL, 9, ~0ULL), 9);
	assert_int_equal(rm_rfc_masked_cmp_swap(5, 4, ~0ULL, 9, ~0ULL), 5);
	assert_int_equal(rm_rfc_masked_cmp_swap(0xFF00, 0xF000, 0xF000, 0x00AA, 0x00FF), 0xFFAA);
}

static void test_atomics(void **state)
{
	static const struct rm_sge sink = { 0x8000, 8, 0x200 };
	struct rm_atomic_args fadd = { false, 5, 0, 0, 0 };
	struct rm_atomic_args cswap = { true, 0x99, ~0ULL, 105, ~0ULL };
	uint64_t v = 100, got;
	struct rm_result r;

	(void)state;
	memcpy(tgt.mem + 16, &v, 8);
	r = rm_atomic(&ini, PD_A, &sink, &tgt, PD_A, 0x10010, 0x1011, &fadd);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.orig, 100);
	memcpy(&got, tgt.mem + 16, 8);
	assert_int_equal(got, 105);
	memcpy(&got, ini.mem + 1024, 8);
	assert_int_equal(got, 100);
	r = rm_atomic(&ini, PD_A, &sink, &tgt, PD_A, 0x10010, 0x1011, &cswap);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.orig, 105);
	memcpy(&got, tgt.mem + 16, 8);
	assert_int_equal(got, 0x99);
	memcpy(before.mem, tgt.mem, RM_MEM_BYTES);
	/* unaligned: REM_INV_REQ_ERR, untouched; R_Key errors come before alignment */
	r = rm_atomic(&ini, PD_A, &sink, &tgt, PD_A, 0x10014, 0x1011, &fadd);
	assert_int_equal(r.err, -FC_RDMA_EALIGN);
	assert_int_equal(r.req_status, 9);
	r = rm_atomic(&ini, PD_A, &sink, &tgt, PD_A, 0x10014, 0x1010, &fadd);
	assert_int_equal(r.err, -FC_RDMA_EKEY);
	assert_int_equal(r.req_status, 10);
	r = rm_atomic(&ini, PD_A, &sink, &tgt, PD_A, 0x20000, 0x1012, &fadd);
	assert_int_equal(r.err, -FC_RDMA_EACCESS);
	r = rm_atomic(&ini, PD_A, &sink, &tgt, PD_A, 0x101FC, 0x1011, &fadd);
	assert_int_equal(r.err, -FC_RDMA_EBOUNDS);
	/* local sink: 8 bytes, LOCAL_WRITE */
	r = rm_atomic(&ini, PD_A, &(struct rm_sge){ 0x8000, 4, 0x200 }, &tgt, PD_A, 0x10010,
		      0x1011, &fadd);
	assert_int_equal(r.err, -FC_RDMA_ELEN);
	assert_int_equal(r.req_status, 1);
	r = rm_atomic(&ini, PD_A, &(struct rm_sge){ 0x1000, 8, 0x100 }, &tgt, PD_A, 0x10010,
		      0x1011, &fadd);
	assert_int_equal(r.err, -FC_RDMA_EACCESS);
	assert_int_equal(r.req_status, 4);
	assert_tgt_untouched();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_write_ok, setup),
		cmocka_unit_test_setup(test_write_errors, setup),
		cmocka_unit_test_setup(test_write_multi_bounds_undefined, setup),
		cmocka_unit_test_setup(test_write_imm, setup),
		cmocka_unit_test_setup(test_read, setup),
		cmocka_unit_test_setup(test_read_multi_bounds_undefined, setup),
		cmocka_unit_test_setup(test_send, setup),
		cmocka_unit_test_setup(test_send_recv_lkey_errors, setup),
		cmocka_unit_test_setup(test_send_multi_undefined, setup),
		cmocka_unit_test_setup(test_send_invalidate, setup),
		cmocka_unit_test(test_rfc_transcription_hand),
		cmocka_unit_test_setup(test_atomics, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
