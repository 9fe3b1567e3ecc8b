/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/fabric/fitest.h - the harness of the provider's capability tests: one program,
 * two processes (A and B, forked), each with an RDM (or DGRAM) endpoint of the "falcon" provider on
 * its own falcond (FALCON_SOCKET and FI_FALCON_ADDR set per process), joined by a
 * socketpair for names, keys and barriers. The tests use only fi_* calls.
 *
 *   fi_NAME SOCK_A CM_A SOCK_B CM_B        (tests/e2e/test_fabric.sh runs them)
 *
 * Every wait is bounded (FIT_WAIT_MS per completion, a watchdog alarm per process). A
 * prints "NAME: N passed, N failed" with B's counts added; exit status 0 only when both
 * passed everything.
 */
#ifndef FITEST_H
#define FITEST_H

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define FIT_WAIT_MS 10000
#define FIT_WATCHDOG_S 120

struct fit {
	int role;                  /* 0: A, 1: B */
	const char *name;
	int sock;                  /* to the other process */
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *txcq, *rxcq;
	struct fid_ep *ep;
	struct fid_cntr *cntr;     /* a counter the test bound to ep: closed after it */
	fi_addr_t peer;
	uint8_t self_name[64], peer_name[64];
	size_t name_len;
};

static int fit_checks, fit_failures;
static const char *fit_role_name = "A";

#define CHECK(cond, ...) do { \
	fit_checks++; \
	if (!(cond)) { \
		fit_failures++; \
		fprintf(stderr, "%s: FAILED at %s:%d: ", fit_role_name, __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

static inline void fit_die(const char *what, int r)
{
	fprintf(stderr, "%s: %s: %d (%s)\n", fit_role_name, what, r, fi_strerror(r < 0 ? -r : r));
	exit(2);
}

static inline uint64_t fit_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the socketpair: objects and barriers ---- */

static inline void fit_put(struct fit *t, const void *p, size_t len)
{
	if (write(t->sock, p, len) != (ssize_t)len)
		fit_die("socketpair write", -errno);
}

static inline void fit_get(struct fit *t, void *p, size_t len)
{
	size_t got = 0;
	uint64_t end = fit_now_ms() + FIT_WAIT_MS * 3;

	while (got < len) {
		struct pollfd pf = { .fd = t->sock, .events = POLLIN };
		struct fi_cq_tagged_entry e;
		ssize_t n;

		/* the provider's progress is manual: keep it going while waiting */
		if (t->txcq)
			fi_cq_read(t->txcq, &e, 0);
		if (t->rxcq)
			fi_cq_read(t->rxcq, &e, 0);
		if (poll(&pf, 1, 1) != 1) {
			if (fit_now_ms() > end)
				fit_die("the other process did not answer", -ETIMEDOUT);
			continue;
		}
		n = read(t->sock, (uint8_t *)p + got, len - got);
		if (n <= 0)
			fit_die("the other process is gone", n < 0 ? -errno : -EPIPE);
		got += (size_t)n;
	}
}

/* Both processes reach this point; neither knows how far the other has gone past it, so
 * memory the other writes is checked between two of them. */
static inline void fit_sync(struct fit *t)
{
	uint8_t b = 0x5a;

	fit_put(t, &b, 1);
	fit_get(t, &b, 1);
}

/* ---- completions ---- */

/* The next completion of cq within ms: 1 (into e, src), -FI_EAVAIL (an error completion
 * is next: read it with fit_err), 0 on timeout, another negative error. */
static inline int fit_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e, fi_addr_t *src, int ms)
{
	uint64_t end = fit_now_ms() + (uint64_t)ms;

	do {
		ssize_t r = src ? fi_cq_readfrom(cq, e, 1, src) : fi_cq_read(cq, e, 1);

		if (r == 1)
			return 1;
		if (r != -FI_EAGAIN)
			return (int)r;
	} while (fit_now_ms() < end);
	return 0;
}

/* The error completion at the head of cq within ms: 1, or 0 (none came). */
static inline int fit_err(struct fid_cq *cq, struct fi_cq_err_entry *err, int ms)
{
	uint64_t end = fit_now_ms() + (uint64_t)ms;
	struct fi_cq_tagged_entry e;

	do {
		ssize_t r = fi_cq_read(cq, &e, 1);

		if (r == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			return fi_cq_readerr(cq, err, 0) == 1;
		}
		if (r == 1)
			return 0; /* a success where an error was due */
	} while (fit_now_ms() < end);
	return 0;
}

/* Nothing on cq for ms (a negative check with a bounded wait). */
static inline int fit_quiet(struct fid_cq *cq, int ms)
{
	struct fi_cq_tagged_entry e;

	return fit_wait(cq, &e, NULL, ms) == 0;
}

/* ---- setup ---- */

static inline void fit_open(struct fit *t, uint64_t caps, enum fi_ep_type type)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC,
				  .size = 1024 };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	int r;

	if (!hints)
		fit_die("fi_allocinfo", -ENOMEM);
	hints->caps = caps;
	hints->ep_attr->type = type;
	hints->fabric_attr->prov_name = strdup("falcon");
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
	r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &t->info);
	if (r)
		fit_die("fi_getinfo", r);
	fi_freeinfo(hints);
	if ((r = fi_fabric(t->info->fabric_attr, &t->fabric, NULL)) ||
	    (r = fi_domain(t->fabric, t->info, &t->domain, NULL)) ||
	    (r = fi_cq_open(t->domain, &cqa, &t->txcq, NULL)) ||
	    (r = fi_cq_open(t->domain, &cqa, &t->rxcq, NULL)) ||
	    (r = fi_av_open(t->domain, &ava, &t->av, NULL)) ||
	    (r = fi_endpoint(t->domain, t->info, &t->ep, NULL)) ||
	    (r = fi_ep_bind(t->ep, &t->av->fid, 0)) ||
	    (r = fi_ep_bind(t->ep, &t->txcq->fid, FI_TRANSMIT)) ||
	    (r = fi_ep_bind(t->ep, &t->rxcq->fid, FI_RECV)) ||
	    (r = fi_enable(t->ep)))
		fit_die("opening the endpoint", r);
	t->name_len = sizeof(t->self_name);
	if ((r = fi_getname(&t->ep->fid, t->self_name, &t->name_len)))
		fit_die("fi_getname", r);
	fit_put(t, &t->name_len, sizeof(t->name_len));
	fit_put(t, t->self_name, t->name_len);
	fit_get(t, &t->name_len, sizeof(t->name_len));
	if (t->name_len > sizeof(t->peer_name))
		fit_die("the peer's name", -EINVAL);
	fit_get(t, t->peer_name, t->name_len);
	if (fi_av_insert(t->av, t->peer_name, 1, &t->peer, 0, NULL) != 1)
		fit_die("fi_av_insert", -EINVAL);
}

static inline void fit_close(struct fit *t)
{
	fi_close(&t->ep->fid);
	if (t->cntr)
		fi_close(&t->cntr->fid);
	fi_close(&t->av->fid);
	fi_close(&t->txcq->fid);
	fi_close(&t->rxcq->fid);
	fi_close(&t->domain->fid);
	fi_close(&t->fabric->fid);
	fi_freeinfo(t->info);
	t->txcq = t->rxcq = NULL;
}

/* Run fn in A and B over endpoints of type; A reports. */
static inline int fit_run_type(const char *name, int argc, char **argv, uint64_t caps,
			       enum fi_ep_type type, void (*fn)(struct fit *t))
{
	int sv[2], status = 0, counts[2] = { 0, 0 };
	struct fit t = { .name = name };
	pid_t pid;

	if (argc != 5) {
		fprintf(stderr, "usage: %s SOCK_A CM_A SOCK_B CM_B\n", argv[0]);
		return 2;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 2;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* B does not outlive A */
	t.role = pid == 0;
	t.sock = sv[t.role];
	close(sv[!t.role]);
	fit_role_name = t.role ? "B" : "A";
	alarm(FIT_WATCHDOG_S);
	setenv("FALCON_SOCKET", argv[1 + 2 * t.role], 1);
	setenv("FI_FALCON_ADDR", argv[2 + 2 * t.role], 1);
	fit_open(&t, caps, type);
	fn(&t);
	fit_sync(&t);
	fit_close(&t);
	if (t.role) {
		counts[0] = fit_checks;
		counts[1] = fit_failures;
		fit_put(&t, counts, sizeof(counts));
		return fit_failures ? 1 : 0;
	}
	fit_get(&t, counts, sizeof(counts));
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
		fprintf(stderr, "A: B ended abnormally (status %#x)\n", status);
		fit_failures++;
	}
	printf("%s: %d passed, %d failed\n", name, fit_checks + counts[0] - fit_failures - counts[1],
	       fit_failures + counts[1]);
	return fit_failures + counts[1] ? 1 : 0;
}

static inline int fit_run(const char *name, int argc, char **argv, uint64_t caps,
			  void (*fn)(struct fit *t))
{
	return fit_run_type(name, argc, argv, caps, FI_EP_RDM, fn);
}

#endif
