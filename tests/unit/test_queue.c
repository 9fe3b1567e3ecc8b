/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared rings of include/falcon/queue.h: layout checks, full and empty, wrap of the
 * free-running indexes, a hostile producer index, and two processes (fork, one memfd)
 * moving 200,000 send WRs one way and their completions back: nothing lost, nothing
 * twice, in order. Both sides give up after 60 s of monotonic time (no alarm(): valgrind's
 * memcheck suite runs this too); the child is reaped on every path.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "falcon/queue.h"

static uint8_t mem[4096] __attribute__((aligned(64)));

static void test_layout_and_checks(void **state)
{
	(void)state;
	assert_int_equal(fc_ring_bytes(FC_RING_SQ, 16), 192 + 16 * 136);
	assert_int_equal(fc_ring_bytes(FC_RING_CQ, 3), 0);          /* not a power of 2 */
	assert_int_equal(fc_ring_bytes(FC_RING_RQ, 1u << 17), 0);   /* too many */
	assert_int_equal(fc_ring_bytes((enum fc_ring_kind)9, 16), 0);
	assert_int_equal(fc_ring_init(mem, 100, FC_RING_CQ, 16), -EINVAL); /* too small */
	assert_int_equal(fc_ring_init(mem, sizeof(mem), FC_RING_CQ, 16), 0);
	assert_int_equal(fc_ring_check(mem, sizeof(mem), FC_RING_CQ), 0);
	assert_int_equal(fc_ring_check(mem, sizeof(mem), FC_RING_SQ), -EINVAL); /* kind */
	assert_int_equal(fc_ring_check(mem, 192 + 15 * 40, FC_RING_CQ), -EINVAL); /* cut */
	((struct fc_ring_hdr *)mem)->version = 2;
	assert_int_equal(fc_ring_check(mem, sizeof(mem), FC_RING_CQ), -EINVAL);
	((struct fc_ring_hdr *)mem)->version = FC_RING_VERSION;
	((struct fc_ring_hdr *)mem)->entries = 12;
	assert_int_equal(fc_ring_check(mem, sizeof(mem), FC_RING_CQ), -EINVAL);
	((struct fc_ring_hdr *)mem)->entries = 16;
	((struct fc_ring_hdr *)mem)->entry_size = 39;
	assert_int_equal(fc_ring_check(mem, sizeof(mem), FC_RING_CQ), -EINVAL);
}

/* The producer's status word: zero in a new ring (and where version 1 had padding),
 * bits set and kept, the ring still valid, the indexes untouched. */
static void test_status_word(void **state)
{
	struct fc_ring_hdr *h = (struct fc_ring_hdr *)mem;

	(void)state;
	memset(mem, 0xA5, sizeof(mem));
	assert_int_equal(fc_ring_init(mem, sizeof(mem), FC_RING_CQ, 16), 0);
	assert_int_equal(fc_ring_status(mem), 0);
	fc_ring_produce(mem, 3);
	fc_ring_set_status(mem, FC_RING_ST_OVERFLOW);
	fc_ring_set_status(mem, FC_RING_ST_OVERFLOW);
	assert_int_equal(fc_ring_status(mem), FC_RING_ST_OVERFLOW);
	assert_int_equal(fc_ring_check(mem, sizeof(mem), FC_RING_CQ), 0);
	assert_int_equal(fc_ring_avail(mem, NULL), 3);
	assert_int_equal(h->prod, 3);
	assert_int_equal(h->cons, 0);
}

/* Full, empty, and the indexes wrapping past 2^32. */
static void test_full_empty_wrap(void **state)
{
	struct fc_ring_hdr *h = (struct fc_ring_hdr *)mem;
	int bad = 0;

	(void)state;
	assert_int_equal(fc_ring_init(mem, sizeof(mem), FC_RING_CQ, 16), 0);
	h->prod = h->cons = UINT32_MAX - 5; /* six steps from the wrap */
	for (uint32_t round = 0; round < 4; round++) {
		assert_int_equal(fc_ring_space(mem), 16);
		assert_int_equal(fc_ring_avail(mem, &bad), 0);
		for (uint32_t i = 0; i < 16; i++) {
			struct fc_ring_cqe *e = fc_ring_entry(mem, h->prod);

			e->wr_id = round * 16 + i;
			fc_ring_produce(mem, 1);
		}
		assert_int_equal(fc_ring_space(mem), 0); /* full */
		assert_int_equal(fc_ring_avail(mem, &bad), 16);
		for (uint32_t i = 0; i < 16; i++) {
			struct fc_ring_cqe *e = fc_ring_entry(mem, h->cons);

			assert_int_equal(e->wr_id, round * 16 + i);
			fc_ring_consume(mem, 1);
		}
	}
	assert_int_equal(bad, 0);
	/* a producer index more than a ring ahead is refused, not believed */
	h->prod = h->cons + 17;
	assert_int_equal(fc_ring_avail(mem, &bad), 0);
	assert_int_equal(bad, 1);
	h->prod = h->cons - 1; /* behind the consumer: as far ahead as it gets */
	bad = 0;
	assert_int_equal(fc_ring_avail(mem, &bad), 0);
	assert_int_equal(bad, 1);
}

#define NWR 200000u

static uint64_t sig_of(uint64_t id) { return id * 0x9E3779B97F4A7C15ull ^ 0x5A5A; }

static int timed_out(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec - t0->tv_sec > 60;
}

/* The child: posts NWR send WRs into the SQ and checks every completion from the CQ. */
static int child(uint8_t *sq, uint8_t *cq)
{
	uint64_t posted = 0, done = 0;
	struct timespec t0;
	int bad = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done < NWR) {
		if (timed_out(&t0))
			return 5;
		uint32_t n = fc_ring_space(sq);

		while (n-- && posted < NWR) {
			struct fc_ring_send_wr *w =
				fc_ring_entry(sq, ((struct fc_ring_hdr *)sq)->prod);

			memset(w, 0, sizeof(*w));
			w->wr_id = posted;
			w->opcode = (uint8_t)(posted % 5);
			w->num_sge = 1;
			w->sgl[0].addr = sig_of(posted);
			w->sgl[0].len = (uint32_t)posted;
			fc_ring_produce(sq, 1);
			posted++;
		}
		n = fc_ring_avail(cq, &bad);
		if (bad)
			return 3;
		for (; n; n--) {
			struct fc_ring_cqe *c = fc_ring_entry(cq, ((struct fc_ring_hdr *)cq)->cons);

			if (c->wr_id != done || c->byte_len != (uint32_t)done || c->status)
				return 4; /* lost, twice, or out of order */
			fc_ring_consume(cq, 1);
			done++;
		}
		sched_yield();
	}
	return 0;
}

static void test_two_processes(void **state)
{
	size_t sqb = fc_ring_bytes(FC_RING_SQ, 256), cqb = fc_ring_bytes(FC_RING_CQ, 256);
	int fd = memfd_create("falcon-rings", MFD_CLOEXEC), st = 0, bad = 0, wrong = 0;
	uint8_t *m, *sq, *cq;
	uint64_t got = 0;
	struct timespec t0;
	pid_t pid;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(sqb + cqb)), 0);
	m = mmap(NULL, sqb + cqb, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	sq = m;
	cq = m + sqb;
	assert_int_equal(fc_ring_init(sq, sqb, FC_RING_SQ, 256), 0);
	assert_int_equal(fc_ring_init(cq, cqb, FC_RING_CQ, 256), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(sq, cq));
	/* the "engine": take each WR, check it, complete it */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fc_ring_check(sq, sqb, FC_RING_SQ), 0);
	while (got < NWR && !timed_out(&t0)) {
		uint32_t n = fc_ring_avail(sq, &bad);

		if (bad || waitpid(pid, &st, WNOHANG) == pid)
			break; /* a broken ring or a dead child: the checks below say which */
		while (n && fc_ring_space(cq)) {
			struct fc_ring_send_wr *w = fc_ring_entry(sq, ((struct fc_ring_hdr *)sq)->cons);
			struct fc_ring_cqe *c = fc_ring_entry(cq, ((struct fc_ring_hdr *)cq)->prod);

			if (w->wr_id != got || w->sgl[0].addr != sig_of(got) || w->num_sge != 1) {
				wrong = 1; /* lost, twice, out of order or torn */
				break;
			}
			memset(c, 0, sizeof(*c));
			c->wr_id = w->wr_id;
			c->byte_len = w->sgl[0].len;
			fc_ring_consume(sq, 1);
			fc_ring_produce(cq, 1);
			got++;
			n--;
		}
		if (wrong)
			break;
		sched_yield();
	}
	if (got < NWR) /* the child may be waiting for completions that will not come */
		kill(pid, SIGKILL);
	if (waitpid(pid, &st, 0) != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	munmap(m, sqb + cqb);
	close(fd);
	assert_int_equal(bad, 0);
	assert_int_equal(wrong, 0);
	assert_int_equal(got, NWR);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* need_wakeup in one process: the flag as each helper leaves it. */
static void test_need_wakeup_flag(void **state)
{
	struct fc_ring_hdr *h = (struct fc_ring_hdr *)mem;

	(void)state;
	assert_int_equal(fc_ring_init(mem, sizeof(mem), FC_RING_SQ, 16), 0);
	assert_int_equal(fc_ring_needs_wakeup(mem), 0); /* a new ring: the consumer polls */
	fc_ring_set_need_wakeup(mem, 1);
	assert_int_equal(h->need_wakeup, 1);
	assert_int_equal(fc_ring_needs_wakeup(mem), 1);
	fc_ring_set_need_wakeup(mem, 1);                /* unchanged: still set */
	assert_int_equal(fc_ring_needs_wakeup(mem), 1);
	fc_ring_set_need_wakeup(mem, 0);
	assert_int_equal(fc_ring_needs_wakeup(mem), 0);
	assert_int_equal(h->cons, 0);                   /* the index beside it untouched */
}

#define NWAKE 40000u /* entries of the wakeup test: half polled, half slept for */

/* The producer of the wakeup test: one entry at a time with short random gaps, the
 * doorbell (an eventfd) only when fc_ring_needs_wakeup says so; *rung counts them. */
static int wake_producer(uint8_t *r, int efd, volatile uint64_t *rung)
{
	struct timespec t0;
	uint32_t seed = 12345;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < NWAKE; i++) {
		uint64_t one = 1;

		while (!fc_ring_space(r))
			if (timed_out(&t0))
				return 1;
		((struct fc_ring_send_wr *)fc_ring_entry(r, ((struct fc_ring_hdr *)r)->prod))->wr_id = i;
		fc_ring_produce(r, 1);
		if (fc_ring_needs_wakeup(r)) {
			__atomic_fetch_add(rung, 1, __ATOMIC_RELAXED);
			if (write(efd, &one, sizeof(one)) != sizeof(one))
				return 2;
		}
		seed = seed * 1103515245u + 12345u;
		for (uint32_t k = (seed >> 16) % 2000; k; k--) /* 0 .. ~10 us */
			__asm__ __volatile__("" ::: "memory");
		if (!(seed & 0x700))
			sched_yield();
	}
	return 0;
}

/* Two processes on one ring and an eventfd: while the consumer polls (the flag 0) the
 * producer rings no doorbell at all; then the consumer sleeps whenever the ring is empty,
 * setting the flag and looking once more first, and never misses an entry: a lost
 * wakeup would leave it asleep (bounded: 5 s per sleep fails the test). */
static void test_need_wakeup_two_processes(void **state)
{
	size_t rb = fc_ring_bytes(FC_RING_SQ, 64);
	int fd = memfd_create("falcon-wake", MFD_CLOEXEC), efd = eventfd(0, EFD_CLOEXEC), st = 0;
	uint64_t next = 0, rung_polling = UINT64_MAX, sleeps = 0, lost = 0, wrong = 0;
	volatile uint64_t *rung;
	uint8_t *m, *r;
	pid_t pid;

	(void)state;
	assert_true(fd >= 0 && efd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(rb + 64)), 0);
	m = mmap(NULL, rb + 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	rung = (volatile uint64_t *)m;
	r = m + 64;
	assert_int_equal(fc_ring_init(r, rb, FC_RING_SQ, 64), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(wake_producer(r, efd, rung));
	while (next < NWAKE && !lost && !wrong) {
		uint32_t n = fc_ring_avail(r, NULL);

		if (next >= NWAKE / 2 && rung_polling == UINT64_MAX) /* before any sleep */
			rung_polling = __atomic_load_n(rung, __ATOMIC_RELAXED);
		if (!n && next >= NWAKE / 2) {
			struct pollfd p = { .fd = efd, .events = POLLIN };
			uint64_t v;

			fc_ring_set_need_wakeup(r, 1);
			if (!fc_ring_avail(r, NULL)) { /* the re-check: it came meanwhile? */
				sleeps++;
				if (poll(&p, 1, 5000) != 1)
					lost = 1;
				else if (read(efd, &v, sizeof(v)) != sizeof(v))
					lost = 1;
			}
			fc_ring_set_need_wakeup(r, 0);
			continue;
		}
		for (; n; n--, next++) {
			const struct fc_ring_send_wr *w = fc_ring_entry(r, ((struct fc_ring_hdr *)r)->cons);

			wrong |= w->wr_id != next;
			fc_ring_consume(r, 1);
		}
	}
	if (lost || wrong)
		kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(lost, 0);
	assert_int_equal(wrong, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(rung_polling, 0);          /* polling: no doorbell */
	assert_true(sleeps > 0 && *rung > 0);       /* and sleeping did use it */
	munmap(m, rb + 64);
	close(fd);
	close(efd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_and_checks),
		cmocka_unit_test(test_status_word),
		cmocka_unit_test(test_full_empty_wrap),
		cmocka_unit_test(test_two_processes),
		cmocka_unit_test(test_need_wakeup_flag),
		cmocka_unit_test(test_need_wakeup_two_processes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
