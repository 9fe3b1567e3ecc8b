/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rue_thread.c - the RUE in its own thread (rue_thread.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "falcon/wire.h"
#include "pdl.h"
#include "rue_queue.h"
#include "rue_thread.h"

struct fd_rue_thread {
	struct fc_rue *rue;           /* the thread's; forget takes the lock */
	pthread_mutex_t lock;
	struct fc_rue_q *evq, *resq;  /* loop -> thread, thread -> loop */
	struct fc_rue_admit_cfg admit;
	uint64_t (*now_ns)(void);
	pthread_t th;
	int work_fd;                  /* the thread sleeps on it */
	int done_fd;                  /* the loop watches it */
	int stop;
	uint32_t thread_sleeps, loop_sleeps; /* atomics: a side about to sleep */
	struct fd_rue_thread_stats st;       /* each counter written by one side */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define SPIN_NS 20000u /* how long the thread looks for the next event before sleeping */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Ring the other side's eventfd; counted first, so that a side woken by it already
 * sees the count (an eventfd write cannot fail but by overflow, which 2^64 - 1 rings
 * never reach). */
static void ring(int fd, uint64_t *count)
{
	uint64_t one = 1;

	__atomic_add_fetch(count, 1, __ATOMIC_RELEASE);
	(void)!write(fd, &one, sizeof(one));
}

/* Take events while there are any; sleep on work_fd when there are none, after saying so
 * and looking once more (an event pushed in between is seen either way). */
static void *rue_main(void *arg)
{
	struct fd_rue_thread *t = arg;
	uint8_t rec[FC_RUE_REC_BYTES];

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		struct fc_cc_event ev;
		struct fc_cc_result res;
		int rc;

		if (fc_rue_q_pop(t->evq, rec)) {
			uint64_t v, until = mono_ns() + SPIN_NS;

			/* events come in bursts (one per ACK): a short spin saves the wakeup */
			while (!fc_rue_q_len(t->evq) && mono_ns() < until)
				cpu_relax();
			if (fc_rue_q_len(t->evq))
				continue;

			__atomic_store_n(&t->thread_sleeps, 1, __ATOMIC_SEQ_CST);
			if (!fc_rue_q_len(t->evq) && !__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
				__atomic_add_fetch(&t->st.thread_sleeps, 1, __ATOMIC_RELAXED);
				(void)!read(t->work_fd, &v, sizeof(v));
			}
			__atomic_store_n(&t->thread_sleeps, 0, __ATOMIC_SEQ_CST);
			continue;
		}
		fc_cc_event_unpack(rec, &ev);
		memset(&res, 0, sizeof(res));
		pthread_mutex_lock(&t->lock);
		rc = fc_rue_process(t->rue, &ev, fc_ns_to_ts(t->now_ns()) & FC_TS24_MASK, &res);
		pthread_mutex_unlock(&t->lock);
		if (rc < 0) {
			__atomic_add_fetch(&t->st.processed, 1, __ATOMIC_RELEASE);
			continue;
		}
		fc_cc_result_pack(&res, rec);
		if (fc_rue_q_push(t->resq, rec))
			__atomic_add_fetch(&t->st.results_lost, 1, __ATOMIC_RELAXED);
		else if (__atomic_load_n(&t->loop_sleeps, __ATOMIC_SEQ_CST))
			ring(t->done_fd, &t->st.loop_wakeups);
		/* last: an event counted processed has its result queued or counted lost */
		__atomic_add_fetch(&t->st.processed, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Everything but the thread (stopped, or never started). */
static void release(struct fd_rue_thread *t)
{
	if (t->work_fd >= 0)
		close(t->work_fd);
	if (t->done_fd >= 0)
		close(t->done_fd);
	fc_rue_q_free(t->evq);
	fc_rue_q_free(t->resq);
	fc_rue_free(t->rue);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

struct fd_rue_thread *fd_rue_thread_new(const struct fc_rue_cfg *cfg, uint32_t max_conns,
					uint32_t qcap, uint64_t (*now_ns)(void))
{
	struct fd_rue_thread *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return NULL;
	t->work_fd = t->done_fd = -1;
	t->now_ns = now_ns ? now_ns : mono_ns;
	fc_rue_admit_cfg_default(&t->admit);
	pthread_mutex_init(&t->lock, NULL);
	if (!(t->rue = fc_rue_new(cfg, max_conns)) || !(t->evq = fc_rue_q_new(qcap)) ||
	    !(t->resq = fc_rue_q_new(qcap)))
		goto fail;
	t->work_fd = eventfd(0, EFD_CLOEXEC);
	t->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->work_fd < 0 || t->done_fd < 0)
		goto fail;
	if ((err = pthread_create(&t->th, NULL, rue_main, t))) {
		errno = err;
		goto fail;
	}
	return t;
fail:
	err = errno;
	release(t);
	errno = err;
	return NULL;
}

void fd_rue_thread_free(struct fd_rue_thread *t)
{
	uint64_t one = 1;

	if (!t)
		return;
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	(void)!write(t->work_fd, &one, sizeof(one));
	pthread_join(t->th, NULL);
	release(t);
}

int fd_rue_thread_offer(struct fd_rue_thread *t, const struct fc_cc_event *ev, unsigned pred)
{
	int rc = fc_rue_q_offer(t->evq, &t->admit, ev, pred);

	if (rc == -EBUSY) {
		t->st.refused++;
		return rc;
	}
	if (rc) {
		t->st.queue_full++;
		return rc;
	}
	t->st.offered++;
	if (__atomic_load_n(&t->thread_sleeps, __ATOMIC_SEQ_CST))
		ring(t->work_fd, &t->st.thread_wakeups);
	return 0;
}

int fd_rue_thread_take(struct fd_rue_thread *t, struct fc_cc_result *res)
{
	uint8_t rec[FC_RUE_REC_BYTES];

	if (fc_rue_q_pop(t->resq, rec))
		return 0;
	fc_cc_result_unpack(rec, res);
	t->st.taken++;
	return 1;
}

uint32_t fd_rue_thread_loop_sleeps(struct fd_rue_thread *t, int sleeping)
{
	__atomic_store_n(&t->loop_sleeps, (uint32_t)sleeping, __ATOMIC_SEQ_CST);
	return fc_rue_q_len(t->resq);
}

int fd_rue_thread_fd(const struct fd_rue_thread *t)
{
	return t->done_fd;
}

void fd_rue_thread_ack(struct fd_rue_thread *t)
{
	uint64_t v;

	(void)!read(t->done_fd, &v, sizeof(v));
}

void fd_rue_thread_forget(struct fd_rue_thread *t, uint32_t cid)
{
	pthread_mutex_lock(&t->lock);
	fc_rue_forget(t->rue, cid);
	pthread_mutex_unlock(&t->lock);
}

void fd_rue_thread_stats(const struct fd_rue_thread *t, struct fd_rue_thread_stats *s)
{
	s->offered = t->st.offered;
	s->refused = t->st.refused;
	s->queue_full = t->st.queue_full;
	s->processed = __atomic_load_n(&t->st.processed, __ATOMIC_ACQUIRE);
	s->results_lost = __atomic_load_n(&t->st.results_lost, __ATOMIC_RELAXED);
	s->taken = t->st.taken;
	s->thread_wakeups = __atomic_load_n(&t->st.thread_wakeups, __ATOMIC_ACQUIRE);
	s->loop_wakeups = __atomic_load_n(&t->st.loop_wakeups, __ATOMIC_ACQUIRE);
	s->thread_sleeps = __atomic_load_n(&t->st.thread_sleeps, __ATOMIC_RELAXED);
}
