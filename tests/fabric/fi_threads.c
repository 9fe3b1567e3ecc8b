/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_threads - FI_THREAD_SAFE (MPI_THREAD_MULTIPLE's requirement) on the falcon provider:
 * fi_getinfo grants it when asked (before issue 25 it refused it), and two threads per
 * process use one endpoint and its CQs at once.
 *   A: two threads each send FIT_N tagged messages (its own tag) and read the shared
 *   transmit CQ; B: two threads each post FIT_N receives for their tag and read the shared
 *   receive CQ, checking each message's bytes against its tag. Every completion is
 *   counted once across the threads; both sides see 2 x FIT_N within the time bound.
 */
#include <pthread.h>

#include "fitest.h"

#define FIT_N 2000

static struct fit *T;
static int done_count, bad_count;

struct worker {
	pthread_t th;
	uint64_t tag;
	uint8_t bufs[16][256];
};

static void reap(struct fid_cq *cq, int want)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	ssize_t r = fi_cq_read(cq, &e, 1);

	if (r == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1) {
		fprintf(stderr, "%s: an error completion: %d (%s)\n", fit_role_name, err.err,
			fi_cq_strerror(cq, err.prov_errno, NULL, NULL, 0));
		__atomic_add_fetch(&bad_count, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&done_count, 1, __ATOMIC_RELAXED);
		return;
	}
	if (r != 1)
		return;
	if (want && (e.len != 256 || ((uint8_t *)e.buf)[0] != (uint8_t)e.tag ||
		     ((uint8_t *)e.buf)[255] != (uint8_t)e.tag))
		__atomic_add_fetch(&bad_count, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&done_count, 1, __ATOMIC_RELAXED);
}

static void *sender(void *arg)
{
	struct worker *w = arg;
	uint64_t end = fit_now_ms() + 60000;

	memset(w->bufs[0], (uint8_t)w->tag, sizeof(w->bufs[0]));
	for (int sent = 0; sent < FIT_N && fit_now_ms() < end;) {
		ssize_t r = fi_tsend(T->ep, w->bufs[0], 256, NULL, T->peer, w->tag, NULL);

		if (r == 0) {
			sent++;
		} else if (r != -FI_EAGAIN) {
			fprintf(stderr, "A: fi_tsend: %zd\n", r);
			__atomic_add_fetch(&bad_count, 1, __ATOMIC_RELAXED);
			break;
		}
		reap(T->txcq, 0);
	}
	while (__atomic_load_n(&done_count, __ATOMIC_RELAXED) < 2 * FIT_N && fit_now_ms() < end)
		reap(T->txcq, 0);
	return NULL;
}

static void *receiver(void *arg)
{
	struct worker *w = arg;
	uint64_t end = fit_now_ms() + 60000;

	for (int posted = 0; posted < FIT_N && fit_now_ms() < end;) {
		ssize_t r = fi_trecv(T->ep, w->bufs[posted % 16], 256, NULL, FI_ADDR_UNSPEC, w->tag, 0,
				     NULL);

		if (r == 0) {
			posted++;
		} else if (r != -FI_EAGAIN) {
			fprintf(stderr, "B: fi_trecv: %zd\n", r);
			__atomic_add_fetch(&bad_count, 1, __ATOMIC_RELAXED);
			break;
		}
		reap(T->rxcq, 1);
	}
	while (__atomic_load_n(&done_count, __ATOMIC_RELAXED) < 2 * FIT_N && fit_now_ms() < end)
		reap(T->rxcq, 1);
	return NULL;
}

static void run(struct fit *t)
{
	static struct worker w[2];
	struct fi_info *h = fi_allocinfo(), *fi = NULL;
	int r;

	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED;
	h->fabric_attr->prov_name = strdup("falcon");
	h->domain_attr->threading = FI_THREAD_SAFE;
	r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi);
	CHECK(r == 0 && fi && fi->domain_attr->threading == FI_THREAD_SAFE,
	      "FI_THREAD_SAFE refused: %d", r);
	fi_freeinfo(fi);
	fi_freeinfo(h);
	T = t;
	/* receives are posted as the messages come: B's unexpected queue takes the rest */
	fit_sync(t);
	for (int i = 0; i < 2; i++) {
		w[i].tag = 0x40 + (uint64_t)i;
		pthread_create(&w[i].th, NULL, t->role ? receiver : sender, &w[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(w[i].th, NULL);
	CHECK(done_count == 2 * FIT_N, "%d completions of %d", done_count, 2 * FIT_N);
	CHECK(!bad_count, "%d errors or messages with the wrong bytes", bad_count);
	fit_sync(t);
}

int main(int argc, char **argv)
{
	return fit_run("fi_threads", argc, argv, FI_TAGGED, run);
}
