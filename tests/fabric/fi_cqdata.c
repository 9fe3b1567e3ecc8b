/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_cqdata - remote CQ data and the completion queue's waiting over the falcon
 * provider (RDM):
 *   cq data    the info says cq_data_size 4; fi_senddata, fi_tsenddata and fi_injectdata
 *              arrive with FI_REMOTE_CQ_DATA and their data, a plain send without; the
 *              source address is the sender's fi_addr (fi_cq_readfrom); an inject makes
 *              no completion at the sender
 *   sread      fi_cq_sread on an empty CQ returns -FI_EAGAIN after its timeout (not
 *              before, not much later); a receive that completes while B sleeps in
 *              fi_cq_sread wakes it (the falcon CQ's notification fd)
 *   no peer    a send to an address whose endpoint does not exist completes FI_ETIMEDOUT
 *              once FI_FALCON_CONN_TIMEOUT_MS (1500 here) has passed
 *   Open MPI   the hints of Open MPI 4.1's ofi MTL (FI_TAGGED | FI_LOCAL_COMM |
 *              FI_REMOTE_COMM | FI_DIRECTED_RECV, FI_COMPLETION op_flags, 4 B CQ data,
 *              FI_AV_MAP, FI_THREAD_DOMAIN) find falcon, and the info keeps FI_COMPLETION
 *              in tx/rx op_flags; fi_av_insert of the endpoint's own address (every MPI
 *              rank inserts its own) returns at once, though this psp daemon, whose
 *              allow-list lacks its own key, never answers an AH to itself
 */
#include "fitest.h"

/* fi_getinfo with what ompi/mca/mtl/ofi/mtl_ofi_component.c (v4.1.4) asks for */
static void mpi_hints(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL, *i;
	int r, found = 0;

	if (!hints)
		fit_die("fi_allocinfo", -ENOMEM);
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->op_flags = FI_COMPLETION;
	hints->tx_attr->op_flags = FI_COMPLETION;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->cq_data_size = sizeof(int);
	hints->domain_attr->av_type = FI_AV_MAP;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	r = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info);
	CHECK(r == 0, "fi_getinfo with Open MPI's MTL hints: %d", r);
	for (i = r ? NULL : info; i; i = i->next) {
		if (strcmp(i->fabric_attr->prov_name, "falcon"))
			continue;
		found = 1;
		CHECK((i->caps & hints->caps) == hints->caps, "caps %#" PRIx64, (uint64_t)i->caps);
		CHECK(i->tx_attr->op_flags == FI_COMPLETION && i->rx_attr->op_flags == FI_COMPLETION,
		      "op_flags tx %#" PRIx64 " rx %#" PRIx64, (uint64_t)i->tx_attr->op_flags,
		      (uint64_t)i->rx_attr->op_flags);
		CHECK(i->domain_attr->av_type == FI_AV_MAP, "av_type %d", i->domain_attr->av_type);
	}
	CHECK(found, "falcon among the providers for Open MPI's MTL hints");
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

static void a_side(struct fit *t)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[256];
	uint8_t bogus[64];
	fi_addr_t nowhere;
	uint8_t b;
	int ctx;
	uint64_t t0;

	CHECK(t->info->domain_attr->cq_data_size == 4, "cq_data_size %zu",
	      t->info->domain_attr->cq_data_size);
	mpi_hints();
	{
		fi_addr_t me = FI_ADDR_NOTAVAIL;
		uint64_t t1 = fit_now_ms();

		CHECK(fi_av_insert(t->av, t->self_name, 1, &me, 0, NULL) == 1 && me != FI_ADDR_NOTAVAIL,
		      "fi_av_insert of my own address");
		CHECK(fit_now_ms() - t1 < 1000, "it took %" PRIu64 " ms", fit_now_ms() - t1);
	}
	memset(buf, 'q', sizeof(buf));
	CHECK(fi_senddata(t->ep, buf, 100, NULL, 0x12345678, t->peer, &ctx) == 0, "fi_senddata");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "senddata's completion");
	CHECK(fi_tsenddata(t->ep, buf, 10, NULL, 0xcafef00d, t->peer, 0x44, &ctx) == 0, "fi_tsenddata");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "tsenddata's completion");
	CHECK(fi_injectdata(t->ep, buf, 20, 7, t->peer) == 0, "fi_injectdata");
	CHECK(fi_send(t->ep, buf, 30, NULL, t->peer, &ctx) == 0, "fi_send");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &ctx,
	      "the send's completion (the inject made none)");
	CHECK(fit_quiet(t->txcq, 100), "a second completion: the inject's");
	fit_sync(t);
	/* B sleeps in fi_cq_sread; wake it */
	fit_get(t, &b, 1);
	usleep(300 * 1000); /* let B fall asleep; its check does not depend on it */
	CHECK(fi_send(t->ep, buf, 40, NULL, t->peer, &ctx) == 0, "fi_send");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "the wake-up send's completion");
	fit_sync(t);
	/* no endpoint at that address: B's daemon, a QP number nobody has */
	memcpy(bogus, t->peer_name, t->name_len);
	bogus[4] ^= 0x5a;
	bogus[6] ^= 0x3c;
	CHECK(fi_av_insert(t->av, bogus, 1, &nowhere, 0, NULL) == 1, "fi_av_insert");
	t0 = fit_now_ms();
	CHECK(fi_send(t->ep, buf, 8, NULL, nowhere, &ctx) == 0, "a send to nowhere");
	CHECK(fit_err(t->txcq, &err, FIT_WAIT_MS) && err.err == FI_ETIMEDOUT && err.op_context == &ctx,
	      "a send to nowhere: err %d", err.err);
	CHECK(fit_now_ms() - t0 >= 1400, "it failed after %" PRIu64 " ms", fit_now_ms() - t0);
	/* the real peer still works */
	CHECK(fi_send(t->ep, buf, 8, NULL, t->peer, &ctx) == 0 &&
	      fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "a send after the failure");
}

static void b_side(struct fit *t)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_UNSPEC;
	char buf[256];
	int c1, c2, c3, c4;
	uint8_t b = 1;
	uint64_t t0, el;
	ssize_t r;

	CHECK(fi_recv(t->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &c1) == 0, "fi_recv");
	CHECK(fi_trecv(t->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 0x44, 0, &c2) == 0, "fi_trecv");
	CHECK(fi_recv(t->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &c3) == 0, "fi_recv");
	CHECK(fi_recv(t->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &c4) == 0, "fi_recv");
	CHECK(fit_wait(t->rxcq, &e, &src, FIT_WAIT_MS) == 1 && e.op_context == &c1 &&
	      (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0x12345678 && e.len == 100 && src == t->peer,
	      "senddata: flags %#" PRIx64 " data %#" PRIx64 " len %zu", e.flags, e.data, e.len);
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &c2 &&
	      (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xcafef00d && e.tag == 0x44,
	      "tsenddata: data %#" PRIx64, e.data);
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &c3 &&
	      (e.flags & FI_REMOTE_CQ_DATA) && e.data == 7 && e.len == 20, "injectdata");
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == &c4 &&
	      !(e.flags & FI_REMOTE_CQ_DATA) && e.len == 30, "a plain send carried CQ data");
	fit_sync(t);
	/* an empty CQ: sread times out after its timeout */
	t0 = fit_now_ms();
	r = fi_cq_sread(t->rxcq, &e, 1, NULL, 200);
	el = fit_now_ms() - t0;
	CHECK(r == -FI_EAGAIN && el >= 190 && el < 5000, "sread on nothing: %zd after %" PRIu64 " ms",
	      r, el);
	CHECK(fi_recv(t->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &c1) == 0, "fi_recv");
	fit_put(t, &b, 1);
	t0 = fit_now_ms();
	r = fi_cq_sread(t->rxcq, &e, 1, NULL, FIT_WAIT_MS);
	el = fit_now_ms() - t0;
	CHECK(r == 1 && e.op_context == &c1 && e.len == 40, "sread woke with %zd after %" PRIu64 " ms",
	      r, el);
	fit_sync(t);
	CHECK(fi_recv(t->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &c1) == 0, "fi_recv");
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1 && e.len == 8, "the send after the failure");
}

static void run(struct fit *t)
{
	if (t->role == 0)
		a_side(t);
	else
		b_side(t);
}

int main(int argc, char **argv)
{
	setenv("FI_FALCON_CONN_TIMEOUT_MS", "1500", 1);
	return fit_run("fi_cqdata", argc, argv, FI_MSG | FI_TAGGED, run);
}
