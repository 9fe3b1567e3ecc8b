/* SPDX-License-Identifier: Apache-2.0 */
/*
 * poll.c - falcond's engine thread and the CPU (DESIGN.md, "Threads"): the poll modes,
 * the thread's CPUs and scheduling class, locked memory.
 *
 *   sleep     the loop blocks in epoll until an event; before it does, the clients' rings
 *             say "ring me" (need_wakeup 1) and a client's post costs a write(2)
 *   adaptive  after work (datagrams received, WRs taken from the rings) the loop keeps
 *             polling for poll_us: an idle watcher (poll_w) makes each libev round a
 *             non-blocking epoll, the rings are swept in prepare_cb, the I/O backend is
 *             asked for a batch in poll_cb; the rings say "polling" (need_wakeup 0), so
 *             clients post without a system call. An empty round yields the CPU
 *             (sched_yield), so that a client or the peer daemon on this core runs. When
 *             the window passes without work, the wakeups are armed (loop.c's prepare_cb,
 *             with the re-check after setting the flag) and the loop sleeps.
 *   busy      adaptive with a window that never ends: a core of its own (--cpu)
 *
 * In adaptive and busy mode the data sockets get the kernel's busy polling
 * (SO_BUSY_POLL, SO_PREFER_BUSY_POLL; on AF_XDP also SO_BUSY_POLL_BUDGET) where the
 * kernel allows it: a non-blocking receive then polls the driver's queue itself.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "falcond.h"
#include "log.h"

static const char *const poll_names[] = { "sleep", "adaptive", "busy" };

int fd_poll_parse(const char *s, int *mode)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, poll_names[i])) {
			*mode = i;
			return 0;
		}
	return -EINVAL;
}

const char *fd_poll_name(int mode)
{
	return mode >= 0 && mode < 3 ? poll_names[mode] : "?";
}

/* One CPU number at *p, advancing it: 0..n-1 (the CPUs this machine has). */
static int cpu_num(const char **p, long n, unsigned *out)
{
	char *e;
	unsigned long v;

	if (**p < '0' || **p > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(*p, &e, 10);
	if (errno || (long)v >= n || v >= CPU_SETSIZE)
		return -EINVAL;
	*p = e;
	*out = (unsigned)v;
	return 0;
}

int fd_cpu_parse(const char *s, cpu_set_t *set)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	const char *p = s;

	CPU_ZERO(set);
	for (;;) { /* bounded by the string: each round takes at least one digit */
		unsigned lo, hi;

		if (cpu_num(&p, n, &lo))
			return -EINVAL;
		hi = lo;
		if (*p == '-' && (p++, cpu_num(&p, n, &hi) || hi < lo))
			return -EINVAL;
		for (unsigned c = lo; c <= hi; c++)
			CPU_SET(c, set);
		if (*p != ',')
			break;
		p++; /* a CPU must follow */
	}
	return *p ? -EINVAL : 0;
}

int fd_sched_parse(const char *s, int *policy, int *prio)
{
	char *e;
	long v;

	if (!strcmp(s, "other")) {
		*policy = SCHED_OTHER;
		*prio = 0;
		return 0;
	}
	if (!strncmp(s, "fifo:", 5))
		*policy = SCHED_FIFO;
	else if (!strncmp(s, "rr:", 3))
		*policy = SCHED_RR;
	else
		return -EINVAL;
	s = strchr(s, ':') + 1;
	errno = 0;
	v = strtol(s, &e, 10);
	if (errno || e == s || *e || v < sched_get_priority_min(*policy) ||
	    v > sched_get_priority_max(*policy))
		return -EINVAL;
	*prio = (int)v;
	return 0;
}

static const char *sched_name(int policy)
{
	return policy == SCHED_FIFO ? "fifo" : policy == SCHED_RR ? "rr" : "other";
}

const char *fd_sched_name(const struct fd_cfg *c)
{
	static char s[16];

	if (c->sched_policy == SCHED_OTHER)
		return "other";
	snprintf(s, sizeof(s), "%s:%d", sched_name(c->sched_policy), c->sched_prio);
	return s;
}

/* The idle watcher of a polling loop: the I/O backend asked for a batch (the kernel's
 * busy polling runs in that receive), and the CPU offered to others when this round and
 * the ring sweep before it found nothing. */
static void poll_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct fd_daemon *d = w->data;

	uint64_t now = fd_now_ns();

	(void)loop;
	(void)revents;
	d->polls++;
	/* the node's timer while polling: no timerfd is armed (fd_kick) */
	if (fc_node_next_deadline(d->node) <= now) {
		fc_node_on_timer(d->node, now);
		fd_kick(d);
	}
	if (fd_rx(d) <= 0 && d->poll_empty) {
		d->poll_yields++;
		sched_yield();
	}
}

int fd_poll_keep(struct fd_daemon *d, int work)
{
	uint64_t now;

	if (d->cfg.poll == FD_POLL_SLEEP)
		return 0;
	now = fd_now_ns();
	if (work)
		d->poll_work_ns = now;
	d->poll_empty = !work;
	if (d->cfg.poll == FD_POLL_BUSY || now - d->poll_work_ns < d->cfg.poll_us * 1000ull) {
		if (!ev_is_active(&d->poll_w))
			ev_idle_start(d->loop, &d->poll_w);
		return 1;
	}
	if (ev_is_active(&d->poll_w))
		ev_idle_stop(d->loop, &d->poll_w);
	return 0;
}

/* mlockall, the CPUs, the class: each failure says what would allow it. */
static int cpu_sched(struct fd_daemon *d)
{
	struct sched_param sp = { .sched_priority = d->cfg.sched_prio };
	int rc;

	/* what is mapped now, populated and locked; what is mapped later (clients' memory,
	 * rings) locked as it is touched: a client's arena is 1 GiB of address space of
	 * which it uses what its QPs need (falcon/queue.h) */
	if ((d->cfg.mlock || d->cfg.sched_policy != SCHED_OTHER) &&
	    (mlockall(MCL_CURRENT) < 0 || mlockall(MCL_FUTURE | MCL_ONFAULT) < 0)) {
		rc = -errno;
		LOG_E("falcond: %s: mlockall: %s (needs CAP_IPC_LOCK or a memlock limit above "
		      "falcond's size and its clients' registered memory: LimitMEMLOCK=infinity, "
		      "ulimit -l unlimited)", d->cfg.mlock ? "--mlock" : "--sched", strerror(-rc));
		return rc;
	}
	if (d->cfg.cpu_list[0] && sched_setaffinity(0, sizeof(d->cfg.cpus), &d->cfg.cpus) < 0) {
		rc = -errno;
		LOG_E("falcond: --cpu %s: sched_setaffinity: %s%s", d->cfg.cpu_list, strerror(-rc),
		      rc == -EINVAL ? " (none of these CPUs is online and allowed to falcond: "
		      "its cpuset, CPUAffinity=)" : "");
		return rc;
	}
	if (d->cfg.sched_policy != SCHED_OTHER &&
	    (rc = pthread_setschedparam(pthread_self(), d->cfg.sched_policy, &sp))) {
		LOG_E("falcond: --sched %s:%d: %s%s", sched_name(d->cfg.sched_policy),
		      d->cfg.sched_prio, strerror(rc), rc == EPERM ? " (a real-time class needs "
		      "CAP_SYS_NICE or an RLIMIT_RTPRIO at least this priority: LimitRTPRIO=, or "
		      "systemd's CPUSchedulingPolicy= / CPUSchedulingPriority=)" : "");
		return -rc;
	}
	return 0;
}

void fd_poll_init(struct fd_daemon *d)
{
	ev_idle_init(&d->poll_w, poll_cb);
	d->poll_w.data = d;
	d->poll_work_ns = fd_now_ns(); /* a first window from the start */
}

int fd_cpu_start(struct fd_daemon *d)
{
	int rc;

	if ((rc = cpu_sched(d)))
		return rc;
	if (d->cfg.poll != FD_POLL_SLEEP) {
		rc = d->xio ? fc_io_xdp_busy_poll(d->xio, FD_BUSY_POLL_US, FD_BUSY_POLL_BUDGET) :
			fc_io_busy_poll(fc_io_udp_fd(d->io), FD_BUSY_POLL_US, 0);
		d->busy_poll_rc = rc;
		if (rc)
			LOG_D("falcond: --poll %s: the kernel's busy polling on the data sockets: %s "
			      "(not used: the receive path is the same without it)",
			      fd_poll_name(d->cfg.poll), strerror(-rc));
	}
	if (d->cfg.poll == FD_POLL_BUSY && !d->cfg.cpu_list[0])
		LOG_W("falcond: --poll busy without --cpu: falcond keeps a whole CPU busy, "
		      "wherever the scheduler puts it");
	if (d->cfg.sched_policy != SCHED_OTHER && d->cfg.poll == FD_POLL_BUSY)
		LOG_W("falcond: --poll busy in a real-time class: nothing of a lower class runs "
		      "on falcond's CPU%s (give it a core of its own)",
		      d->cfg.cpu_list[0] ? "s" : " (no --cpu: any CPU)");
	return 0;
}

size_t fd_poll_json_stats(const struct fd_daemon *d, char *buf, size_t cap)
{
	struct fd_json j;

	fd_json_init(&j, buf, cap);
	fd_json_open(&j, NULL, '{');
	fd_json_kstr(&j, "mode", fd_poll_name(d->cfg.poll));
	fd_json_kv(&j, "loops", "%llu", (unsigned long long)d->loops);
	fd_json_kv(&j, "polls", "%llu", (unsigned long long)d->polls);
	fd_json_kv(&j, "poll_yields", "%llu", (unsigned long long)d->poll_yields);
	fd_json_kv(&j, "sleeps", "%llu", (unsigned long long)d->sleeps);
	fd_json_close(&j, '}');
	return fd_json_done(&j);
}
