/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rue_thread.h - Swift and PLB in a thread of their own (DESIGN.md, "Threads"), behind the
 * SPSC event and result queues of spec 10.6: the loop thread offers each CC event to the
 * event queue under the admission policy of 10.6.1 (a refused event leaves the PDL's
 * windows as they are), the RUE thread turns events into results, and the loop thread
 * takes the results and applies them to their connections. Neither side blocks the
 * other: a side about to sleep says so, and the other rings its eventfd only then (the
 * rings' need_wakeup idea, falcon/queue.h).
 *
 *   loop:  fd_rue_thread_offer  --event queue-->  RUE thread: fc_rue_process
 *   loop:  fd_rue_thread_take   <--result queue--            (its own clock)
 *
 * All calls but the thread's own run in the one loop thread.
 */
#ifndef FD_RUE_THREAD_H
#define FD_RUE_THREAD_H

#include <stdint.h>

#include "rue.h"
#include "rue_if.h"

struct fd_rue_thread;

struct fd_rue_thread_stats {
	uint64_t offered, refused, queue_full; /* events: taken, refused by 10.6.1, ring full */
	uint64_t processed, results_lost;      /* by the thread; results that found no room */
	uint64_t taken;                        /* results the loop took */
	uint64_t thread_wakeups, loop_wakeups; /* eventfd writes each way */
	uint64_t thread_sleeps;                /* times the thread blocked for want of events */
};

/* Start the thread: Swift/PLB of cfg for max_conns connections, queues of qcap records
 * (a power of 2), now_ns its clock (NULL: CLOCK_MONOTONIC). NULL and errno on failure. */
struct fd_rue_thread *fd_rue_thread_new(const struct fc_rue_cfg *cfg, uint32_t max_conns,
					uint32_t qcap, uint64_t (*now_ns)(void));
/* Stop and join the thread, free everything (events still queued are dropped). */
void fd_rue_thread_free(struct fd_rue_thread *t);
/* Offer one event (pred: FC_CC_P1 | FC_CC_P2). 0: queued; -EBUSY: refused by the
 * admission policy; -EAGAIN: the queue is full. */
int fd_rue_thread_offer(struct fd_rue_thread *t, const struct fc_cc_event *ev, unsigned pred);
/* One result the thread produced: 1 (in *res), 0 (none now). */
int fd_rue_thread_take(struct fd_rue_thread *t, struct fc_cc_result *res);
/* The loop is about to sleep (1) or awake (0): while it sleeps, a new result rings
 * fd_rue_thread_fd. Returns the results waiting (take them instead of sleeping). */
uint32_t fd_rue_thread_loop_sleeps(struct fd_rue_thread *t, int sleeping);
/* An eventfd the loop watches; read it (fd_rue_thread_ack) when it polls readable. */
int fd_rue_thread_fd(const struct fd_rue_thread *t);
void fd_rue_thread_ack(struct fd_rue_thread *t);
/* Drop a closed connection's PLB state (under the RUE's lock). */
void fd_rue_thread_forget(struct fd_rue_thread *t, uint32_t cid);
void fd_rue_thread_stats(const struct fd_rue_thread *t, struct fd_rue_thread_stats *s);

#endif
