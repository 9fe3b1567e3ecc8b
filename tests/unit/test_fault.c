/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fault layer (daemon/fault.h) over a fake backend that records what it sends:
 * knobs off change nothing; drop, duplicate, reorder and corrupt do what they say on
 * transmit and on receive; no frame is lost to the pool; a seed replays; the parser
 * accepts what falcond's options take and refuses the rest.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fault.h"

#define POOL 64u
#define FRAME 256u
#define SENT_MAX 4096u

/* ---- a fake backend ---- */

struct fake {
	uint8_t mem[POOL][FRAME];
	uint32_t free_[POOL], nfree;
	uint32_t sent_id[SENT_MAX];     /* first 4 bytes of each frame sent, in order */
	uint8_t sent_bytes[SENT_MAX][16];
	uint32_t nsent;
};

static unsigned fk_alloc(void *io, struct fc_frame *f, unsigned n)
{
	struct fake *k = io;
	unsigned i = 0;

	for (; i < n && k->nfree; i++) {
		uint32_t s = k->free_[--k->nfree];

		f[i] = (struct fc_frame){ .buf = k->mem[s], .cap = FRAME, .io_handle = s };
	}
	return i;
}

static void fk_return(void *io, struct fc_frame *f, unsigned n)
{
	struct fake *k = io;

	for (unsigned i = 0; i < n; i++)
		k->free_[k->nfree++] = (uint32_t)f[i].io_handle;
}

static unsigned fk_send(void *io, struct fc_frame *f, unsigned n)
{
	struct fake *k = io;

	for (unsigned i = 0; i < n; i++) {
		if (k->nsent < SENT_MAX) {
			memcpy(&k->sent_id[k->nsent], f[i].buf, 4);
			memcpy(k->sent_bytes[k->nsent], f[i].buf, 16);
			k->nsent++;
		}
	}
	fk_return(io, f, n);
	return n;
}

static const struct fc_io_ops fake_ops = {
	.name = "fake", .tx_alloc = fk_alloc, .tx_send = fk_send, .tx_return = fk_return,
};

static void fake_init(struct fake *k)
{
	memset(k, 0, sizeof(*k));
	for (uint32_t i = 0; i < POOL; i++)
		k->free_[k->nfree++] = i;
}

/* Send frames numbered first .. first+n-1 (4-byte id, then 12 bytes of pattern) through
 * the fault layer in batches of up to 8, as the node does. Returns what tx_send said. */
static unsigned send_ids(struct fc_fault *f, uint32_t first, unsigned n)
{
	unsigned taken = 0;

	for (unsigned done = 0; done < n;) {
		struct fc_frame fr[8];
		unsigned b = n - done < 8 ? n - done : 8, got = fc_fault_ops.tx_alloc(f, fr, b);

		assert_int_equal(got, b);
		for (unsigned i = 0; i < b; i++) {
			uint32_t id = first + done + i;

			memcpy(fr[i].buf, &id, 4);
			memset(fr[i].buf + 4, 0xA5, 12);
			fr[i].len = 16;
		}
		taken += fc_fault_ops.tx_send(f, fr, b);
		done += b;
	}
	return taken;
}

static struct fc_fault *mk(struct fake *k, uint64_t seed, struct fc_fault_dir tx,
			   struct fc_fault_dir rx)
{
	struct fc_fault_cfg c = { .seed = seed, .tx = tx, .rx = rx };
	struct fc_fault *f;

	fake_init(k);
	f = fc_fault_new(&c, &fake_ops, k);
	assert_non_null(f);
	return f;
}

/* ---- transmit ---- */

static void test_off_changes_nothing(void **state)
{
	struct fake k;
	struct fc_fault *f = mk(&k, 1, (struct fc_fault_dir){ 0 }, (struct fc_fault_dir){ 0 });

	(void)state;
	assert_int_equal(send_ids(f, 0, 1000), 1000);
	assert_int_equal(k.nsent, 1000);
	for (uint32_t i = 0; i < 1000; i++)
		assert_int_equal(k.sent_id[i], i);
	assert_int_equal(k.nfree, POOL);
	fc_fault_free(f);
}

static void test_drop_all(void **state)
{
	struct fake k;
	struct fc_fault *f = mk(&k, 1, (struct fc_fault_dir){ .drop_ppm = 1000000 },
				(struct fc_fault_dir){ 0 });

	(void)state;
	/* a frame lost "on the wire" counts as taken: the node must not count io drops */
	assert_int_equal(send_ids(f, 0, 100), 100);
	assert_int_equal(k.nsent, 0);
	assert_int_equal(k.nfree, POOL); /* every frame back in the pool */
	assert_int_equal(fc_fault_stats(f)->tx_drop, 100);
	fc_fault_free(f);
}

static void test_dup_all(void **state)
{
	struct fake k;
	struct fc_fault *f = mk(&k, 1, (struct fc_fault_dir){ .dup_ppm = 1000000 },
				(struct fc_fault_dir){ 0 });

	(void)state;
	assert_int_equal(send_ids(f, 0, 100), 100); /* the copies are not the node's */
	assert_int_equal(k.nsent, 200);
	for (uint32_t i = 0; i < 100; i++) {
		unsigned seen = 0;

		for (uint32_t j = 0; j < k.nsent; j++)
			if (k.sent_id[j] == i) {
				seen++;
				assert_memory_equal(k.sent_bytes[j] + 4, "\xA5\xA5\xA5\xA5", 4);
			}
		assert_int_equal(seen, 2);
	}
	assert_int_equal(k.nfree, POOL);
	fc_fault_free(f);
}

static void test_reorder_keeps_every_frame(void **state)
{
	struct fake k;
	struct fc_fault *f = mk(&k, 7, (struct fc_fault_dir){ .reorder_ppm = 300000 },
				(struct fc_fault_dir){ 0 });
	unsigned out_of_order = 0;

	(void)state;
	assert_int_equal(send_ids(f, 0, 2000), 2000);
	fc_fault_flush_tx(f);
	assert_int_equal(k.nsent, 2000);
	for (uint32_t i = 0; i < 2000; i++) {
		unsigned seen = 0;

		for (uint32_t j = 0; j < k.nsent; j++)
			seen += k.sent_id[j] == i;
		assert_int_equal(seen, 1); /* each exactly once */
	}
	for (uint32_t j = 1; j < k.nsent; j++)
		out_of_order += k.sent_id[j] < k.sent_id[j - 1];
	assert_true(out_of_order > 100);
	assert_true(fc_fault_stats(f)->tx_reorder > 100);
	assert_int_equal(k.nfree, POOL);
	fc_fault_free(f);
}

static void test_corrupt_flips_one_bit(void **state)
{
	struct fake k;
	struct fc_fault *f = mk(&k, 3, (struct fc_fault_dir){ .corrupt_ppm = 1000000 },
				(struct fc_fault_dir){ 0 });

	(void)state;
	send_ids(f, 0, 200);
	assert_int_equal(k.nsent, 200);
	for (uint32_t j = 0; j < k.nsent; j++) {
		uint8_t want[16];
		uint32_t id = j;
		unsigned bits = 0;

		memcpy(want, &id, 4);
		memset(want + 4, 0xA5, 12);
		for (int b = 0; b < 16; b++)
			bits += (unsigned)__builtin_popcount(want[b] ^ k.sent_bytes[j][b]);
		assert_int_equal(bits, 1);
	}
	fc_fault_free(f);
}

static void test_drop_rate_and_seed_replay(void **state)
{
	struct fake k1, k2;
	struct fc_fault *f1 = mk(&k1, 42, (struct fc_fault_dir){ .drop_ppm = 50000 },
				 (struct fc_fault_dir){ 0 });
	struct fc_fault *f2;
	uint64_t d1;

	(void)state;
	for (uint32_t i = 0; i < 100000; i += 1000)
		send_ids(f1, i, 1000);
	d1 = fc_fault_stats(f1)->tx_drop;
	assert_true(d1 > 4500 && d1 < 5500); /* 5 % of 100,000, within 10 % */
	f2 = mk(&k2, 42, (struct fc_fault_dir){ .drop_ppm = 50000 }, (struct fc_fault_dir){ 0 });
	for (uint32_t i = 0; i < 4000; i += 1000)
		send_ids(f2, i, 1000);
	/* the same seed drops the same frames */
	for (uint32_t j = 0; j < k2.nsent; j++)
		assert_int_equal(k2.sent_id[j], k1.sent_id[j]);
	fc_fault_free(f1);
	fc_fault_free(f2);
}

/* ---- receive ---- */

static void rx_batch(struct fc_frame *fr, uint8_t (*bufs)[FRAME], uint32_t first, unsigned n,
		     const struct fc_peer_addr *peer)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t id = first + i;

		memcpy(bufs[i], &id, 4);
		memset(bufs[i] + 4, 0x5A, 12);
		fr[i] = (struct fc_frame){ .buf = bufs[i], .len = 16, .cap = FRAME, .peer = peer };
	}
}

static void test_rx_faults(void **state)
{
	struct fake k;
	struct fc_fault *f = mk(&k, 9, (struct fc_fault_dir){ 0 },
				(struct fc_fault_dir){ .reorder_ppm = 200000, .dup_ppm = 100000,
						       .drop_ppm = 100000 });
	struct fc_peer_addr peer = { .len = 1, .bytes = { 7 } };
	static uint8_t bufs[32][FRAME];
	unsigned seen[2100] = { 0 }, dups = 0, got = 0;

	(void)state;
	for (uint32_t b = 0; b < 2000; b += 16) {
		struct fc_frame fr[32];
		unsigned n;

		rx_batch(fr, bufs, b, 16, &peer);
		n = fc_fault_rx(f, fr, 16, 32);
		assert_true(n <= 32);
		for (unsigned i = 0; i < n; i++) {
			uint32_t id;

			memcpy(&id, fr[i].buf, 4);
			assert_true(id < 2000);
			assert_memory_equal(fr[i].buf + 4, "\x5A\x5A\x5A\x5A\x5A\x5A\x5A\x5A", 8);
			assert_non_null(fr[i].peer);
			assert_int_equal(fr[i].peer->bytes[0], 7);
			seen[id]++;
			got++;
		}
		/* the backend reuses its buffers: held copies must not change with them */
		memset(bufs, 0xEE, sizeof(bufs));
	}
	for (uint32_t i = 0; i < 2000; i++)
		dups += seen[i] > 1;
	const struct fc_fault_stats *st = fc_fault_stats(f);

	assert_true(st->rx_drop > 100 && st->rx_dup > 100 && st->rx_reorder > 100);
	assert_true(dups > 50);
	/* every frame arrives unless dropped: received = sent - dropped + duplicated - held */
	assert_true(got + st->rx_drop >= 2000 - FC_FAULT_HOLD_MAX + st->rx_dup);
	fc_fault_free(f);
}

/* ---- parsing ---- */

static void test_parse(void **state)
{
	struct fc_fault_dir d;

	(void)state;
	assert_int_equal(fc_fault_parse_dir("drop=5%,dup=1%,reorder=2%,corrupt=0.1%", &d), 0);
	assert_int_equal(d.drop_ppm, 50000);
	assert_int_equal(d.dup_ppm, 10000);
	assert_int_equal(d.reorder_ppm, 20000);
	assert_int_equal(d.corrupt_ppm, 1000);
	assert_int_equal(fc_fault_parse_dir("drop=0.05", &d), 0);
	assert_int_equal(d.drop_ppm, 50000);
	assert_int_equal(d.dup_ppm, 0);
	assert_int_equal(fc_fault_parse_dir("dup=250ppm", &d), 0);
	assert_int_equal(d.dup_ppm, 250);
	assert_int_equal(fc_fault_parse_dir("drop=", &d), -EINVAL);
	assert_int_equal(fc_fault_parse_dir("drop=200%", &d), -EINVAL);
	assert_int_equal(fc_fault_parse_dir("foo=1%", &d), -EINVAL);
	assert_int_equal(fc_fault_parse_dir("drop5%", &d), -EINVAL);
	assert_int_equal(fc_fault_parse_dir("drop=5%x", &d), -EINVAL);
	assert_int_equal(fc_fault_parse_dir("drop=-1%", &d), -EINVAL);
	assert_int_equal(fc_fault_parse_dir(NULL, &d), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_changes_nothing),
		cmocka_unit_test(test_drop_all),
		cmocka_unit_test(test_dup_all),
		cmocka_unit_test(test_reorder_keeps_every_frame),
		cmocka_unit_test(test_corrupt_flips_one_bit),
		cmocka_unit_test(test_drop_rate_and_seed_replay),
		cmocka_unit_test(test_rx_faults),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
