/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_contract - what the falcon provider does with bad input and with the completion
 * flags of fi_msg(3) / fi_rma(3) / fi_atomic(3) / fi_cq(3) (RDM), issue 25:
 *   bad input   NULL where an address, a buffer, a message, a length pointer or an
 *               attribute belongs returns -FI_EINVAL from fi_av_insert (the in-band
 *               exchange's SIGSEGV), fi_av_lookup, fi_av_remove, fi_getname, fi_send,
 *               fi_recv, fi_sendmsg, fi_recvmsg, fi_tsendmsg, fi_writemsg, fi_readmsg,
 *               fi_atomic / fi_fetch_atomic / fi_compare_atomic without their operands,
 *               fi_cq_read, fi_cq_readerr, fi_cq_open, fi_mr_reg, fi_eq_read / write, and
 *               the process lives on; a garbage address is not inserted (FI_ADDR_NOTAVAIL)
 *               and an operation to an fi_addr that names nothing is refused
 *   inject      fi_inject / fi_tinject / fi_inject_write / fi_inject_atomic complete
 *               nothing; FI_INJECT as a flag of fi_sendmsg, fi_tsendmsg, fi_writemsg and
 *               fi_atomicmsg only lets the buffer go: each completes (the CQ is bound
 *               without FI_SELECTIVE_COMPLETION) - fi_msg_inject -N hung on that
 *   eq          fi_eq_open with 8192 entries (fabtests' fi_eq_test)
 *   trywait     fi_trywait on the CQs is 0 or -FI_EAGAIN, never -FI_ENOSYS; after 0, a
 *               message from the peer makes the CQ's wait fd readable (a program that
 *               sleeps on it wakes)
 *   getinfo     hints as fi_getinfo(3) defines them (fabtests' fi_getinfo_test): a src_addr
 *               always, a dest_addr from node and service; tx caps without receive or
 *               domain bits, rx caps without transmit bits, domain caps set; msg_order
 *               returned as asked (FI_ORDER_SAS) or refused (FI_ORDER_RAW); FI_MR_BASIC
 *               answered FI_MR_BASIC, FI_MR_SCALABLE refused at 1.0 and 1.17; FI_SHARED_AV
 *               refused; FI_SOURCE without node or service -FI_EINVAL; FI_SOCKADDR_IN
 *               addresses are sockaddr_in
 */
#include <netinet/in.h>

#include "fitest.h"

struct target {
	uint64_t addr, key;
};

static void bad_input(struct fit *t)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fid_cq *cq = NULL;
	struct fid_mr *mr = NULL;
	struct fid_eq *eq = NULL;
	struct fi_eq_attr eqa = { .size = 64, .wait_obj = FI_WAIT_UNSPEC };
	uint8_t garbage[64], buf[16];
	fi_addr_t fa = 0;
	size_t len;
	uint64_t v = 0, r = 0;
	struct fi_msg msg;
	struct fi_msg_tagged tmsg;
	struct fi_msg_rma rmsg;
	struct fi_msg_atomic amsg;
	uint32_t event;

	CHECK(fi_av_insert(t->av, NULL, 1, &fa, 0, NULL) == -FI_EINVAL,
	      "fi_av_insert of NULL was not -FI_EINVAL");
	memset(garbage, 0xa5, sizeof(garbage));
	fa = 0;
	CHECK(fi_av_insert(t->av, garbage, 1, &fa, 0, NULL) == 0 && fa == FI_ADDR_NOTAVAIL,
	      "a garbage address was inserted");
	CHECK(fi_av_lookup(t->av, t->peer, buf, NULL) == -FI_EINVAL, "fi_av_lookup without a length");
	len = sizeof(buf);
	CHECK(fi_av_lookup(t->av, t->peer, NULL, &len) == -FI_EINVAL, "fi_av_lookup into NULL");
	CHECK(fi_av_remove(t->av, NULL, 1, 0) == -FI_EINVAL, "fi_av_remove of NULL");
	CHECK(fi_getname(&t->ep->fid, NULL, NULL) == -FI_EINVAL, "fi_getname without a length");
	len = 64;
	CHECK(fi_getname(&t->ep->fid, NULL, &len) == -FI_EINVAL, "fi_getname into NULL");

	CHECK(fi_send(t->ep, NULL, 8, NULL, t->peer, NULL) == -FI_EINVAL, "fi_send of NULL, 8 B");
	CHECK(fi_recv(t->ep, NULL, 8, NULL, FI_ADDR_UNSPEC, NULL) == -FI_EINVAL, "fi_recv into NULL");
	CHECK(fi_sendv(t->ep, NULL, NULL, 2, t->peer, NULL) == -FI_EINVAL, "fi_sendv of no iov");
	CHECK(fi_sendmsg(t->ep, NULL, 0) == -FI_EINVAL, "fi_sendmsg(NULL)");
	CHECK(fi_recvmsg(t->ep, NULL, 0) == -FI_EINVAL, "fi_recvmsg(NULL)");
	CHECK(fi_tsendmsg(t->ep, NULL, 0) == -FI_EINVAL, "fi_tsendmsg(NULL)");
	CHECK(fi_trecvmsg(t->ep, NULL, 0) == -FI_EINVAL, "fi_trecvmsg(NULL)");
	memset(&msg, 0, sizeof(msg));
	msg.iov_count = 3;
	msg.addr = t->peer;
	CHECK(fi_sendmsg(t->ep, &msg, 0) == -FI_EINVAL, "fi_sendmsg with 3 iovs and no array");
	memset(&tmsg, 0, sizeof(tmsg));
	tmsg.iov_count = 1;
	CHECK(fi_trecvmsg(t->ep, &tmsg, 0) == -FI_EINVAL, "fi_trecvmsg with no iov array");
	CHECK(fi_send(t->ep, buf, 8, NULL, (fi_addr_t)12345, NULL) == -FI_EINVAL,
	      "fi_send to an fi_addr that names nothing");
	CHECK(fi_writemsg(t->ep, NULL, 0) == -FI_EINVAL, "fi_writemsg(NULL)");
	CHECK(fi_readmsg(t->ep, NULL, 0) == -FI_EINVAL, "fi_readmsg(NULL)");
	memset(&rmsg, 0, sizeof(rmsg));
	rmsg.iov_count = 1;
	rmsg.rma_iov_count = 1;
	CHECK(fi_writemsg(t->ep, &rmsg, 0) == -FI_EINVAL, "fi_writemsg without its arrays");
	CHECK(fi_write(t->ep, NULL, 8, NULL, t->peer, 0, 0, NULL) == -FI_EINVAL, "fi_write of NULL");
	CHECK(fi_atomic(t->ep, NULL, 1, NULL, t->peer, 0, 0, FI_UINT64, FI_SUM, NULL) == -FI_EINVAL,
	      "fi_atomic without an operand");
	CHECK(fi_fetch_atomic(t->ep, &v, 1, NULL, NULL, NULL, t->peer, 0, 0, FI_UINT64, FI_SUM,
			      NULL) == -FI_EINVAL, "fi_fetch_atomic without a result");
	CHECK(fi_compare_atomic(t->ep, &v, 1, NULL, NULL, NULL, &r, NULL, t->peer, 0, 0, FI_UINT64,
				FI_CSWAP, NULL) == -FI_EINVAL, "fi_compare_atomic without a compare");
	CHECK(fi_atomicmsg(t->ep, NULL, 0) == -FI_EINVAL, "fi_atomicmsg(NULL)");
	memset(&amsg, 0, sizeof(amsg));
	amsg.iov_count = amsg.rma_iov_count = 1;
	CHECK(fi_atomicmsg(t->ep, &amsg, 0) == -FI_EINVAL, "fi_atomicmsg without its arrays");

	CHECK(fi_cq_read(t->rxcq, NULL, 1) == -FI_EINVAL, "fi_cq_read into NULL");
	CHECK(fi_cq_readerr(t->rxcq, NULL, 0) == -FI_EINVAL, "fi_cq_readerr into NULL");
	CHECK(fi_cq_open(t->domain, NULL, &cq, NULL) == -FI_EINVAL, "fi_cq_open without attributes");
	CHECK(fi_cq_open(t->domain, &cqa, NULL, NULL) == -FI_EINVAL, "fi_cq_open into NULL");
	CHECK(fi_mr_reg(t->domain, NULL, 64, FI_REMOTE_READ, 0, 0, 0, &mr, NULL) == -FI_EINVAL,
	      "fi_mr_reg of NULL");
	CHECK(fi_mr_regattr(t->domain, NULL, 0, &mr) == -FI_EINVAL, "fi_mr_regattr(NULL)");
	CHECK(fi_eq_open(t->fabric, &eqa, &eq, NULL) == 0, "fi_eq_open");
	if (eq) {
		CHECK(fi_eq_read(eq, &event, NULL, 16, 0) == -FI_EINVAL, "fi_eq_read into NULL");
		CHECK(fi_eq_write(eq, FI_NOTIFY, NULL, 16, 0) == -FI_EINVAL, "fi_eq_write of NULL");
		CHECK(fi_eq_readerr(eq, NULL, 0) == -FI_EINVAL, "fi_eq_readerr into NULL");
		fi_close(&eq->fid);
	}
	eq = NULL;
	eqa.size = 8192;
	CHECK(fi_eq_open(t->fabric, &eqa, &eq, NULL) == 0, "fi_eq_open of 8192 entries refused");
	if (eq)
		fi_close(&eq->fid);
	/* and the endpoint still works: nothing was posted by the refusals */
	CHECK(fit_quiet(t->txcq, 50), "a refused operation completed");
	(void)e;
	(void)err;
}

static struct fi_info *gi_hints(uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		fit_die("fi_allocinfo", -ENOMEM);
	h->caps = caps;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup("falcon");
	h->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
	return h;
}

/* fi_getinfo with h at version v: its return value; the info (if any) into *out */
static int gi(uint32_t v, const char *node, const char *svc, uint64_t flags, struct fi_info *h,
	      struct fi_info **out)
{
	struct fi_info *fi = NULL;
	int r = fi_getinfo(v, node, svc, flags, h, &fi);

	if (out)
		*out = fi;
	else
		fi_freeinfo(fi);
	fi_freeinfo(h);
	return r;
}

static void getinfo_checks(void)
{
	const uint64_t tx_ok = FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE;
	const uint64_t rx_ok = FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_DIRECTED_RECV | FI_RECV |
			       FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SOURCE | FI_MULTI_RECV;
	struct fi_info *fi = NULL, *h;
	int r;

	r = gi(FI_VERSION(1, 17), NULL, NULL, 0, gi_hints(0), &fi);
	CHECK(r == 0 && fi, "fi_getinfo without node: %d", r);
	for (struct fi_info *i = fi; i; i = i->next) {
		CHECK(i->src_addr && i->src_addrlen, "no src_addr");
		CHECK(!(i->tx_attr->caps & ~tx_ok), "tx caps %#" PRIx64 " beyond transmit ones",
		      i->tx_attr->caps);
		CHECK(!(i->rx_attr->caps & ~rx_ok), "rx caps %#" PRIx64 " beyond receive ones",
		      i->rx_attr->caps);
		CHECK(i->domain_attr->caps & FI_REMOTE_COMM, "no domain caps");
	}
	fi_freeinfo(fi);
	r = gi(FI_VERSION(1, 17), "127.0.0.1", "9228", 0, gi_hints(FI_MSG), &fi);
	CHECK(r == 0 && fi && fi->dest_addr && fi->src_addr, "node and service: %d, no addresses", r);
	fi_freeinfo(fi);
	r = gi(FI_VERSION(1, 17), NULL, NULL, FI_SOURCE, gi_hints(FI_MSG), NULL);
	CHECK(r == -FI_EINVAL || r == -FI_ENODATA, "FI_SOURCE without node or service: %d", r);
	h = gi_hints(FI_MSG);
	h->tx_attr->msg_order = h->rx_attr->msg_order = FI_ORDER_SAS;
	r = gi(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi);
	CHECK(r == 0 && fi && (fi->tx_attr->msg_order & FI_ORDER_SAS) &&
	      (fi->rx_attr->msg_order & FI_ORDER_SAS), "FI_ORDER_SAS asked: %d", r);
	fi_freeinfo(fi);
	h = gi_hints(FI_MSG);
	h->tx_attr->msg_order = FI_ORDER_RAW;
	CHECK(gi(FI_VERSION(1, 17), NULL, NULL, 0, h, NULL) == -FI_ENODATA, "FI_ORDER_RAW granted");
	h = gi_hints(FI_RMA);
	h->domain_attr->mr_mode = FI_MR_BASIC;
	r = gi(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi);
	CHECK(r == 0 && fi && fi->domain_attr->mr_mode == FI_MR_BASIC, "FI_MR_BASIC: %d, %d", r,
	      fi ? fi->domain_attr->mr_mode : -1);
	fi_freeinfo(fi);
	h = gi_hints(FI_RMA);
	h->domain_attr->mr_mode = FI_MR_SCALABLE;
	CHECK(gi(FI_VERSION(1, 0), NULL, NULL, 0, h, NULL) == -FI_ENODATA, "FI_MR_SCALABLE at 1.0");
	h = gi_hints(FI_MSG);
	h->domain_attr->caps = FI_SHARED_AV;
	CHECK(gi(FI_VERSION(1, 17), NULL, NULL, 0, h, NULL) == -FI_ENODATA, "FI_SHARED_AV granted");
	CHECK(gi(FI_VERSION(1, 17), NULL, NULL, 0, gi_hints(FI_MSG | FI_SHARED_AV), NULL) ==
	      -FI_ENODATA, "FI_SHARED_AV granted (caps)");
	h = gi_hints(FI_MSG);
	h->addr_format = FI_SOCKADDR_IN;
	r = gi(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi);
	CHECK(r == 0 && fi && fi->addr_format == FI_SOCKADDR_IN &&
	      fi->src_addrlen == sizeof(struct sockaddr_in), "FI_SOCKADDR_IN: %d", r);
	fi_freeinfo(fi);
}

/* the number of completions on cq within ms */
static int count_comps(struct fid_cq *cq, int ms)
{
	struct fi_cq_tagged_entry e;
	int n = 0;

	while (fit_wait(cq, &e, NULL, ms) == 1)
		n++;
	return n;
}

static void inject_a(struct fit *t, const struct target *tg)
{
	uint8_t buf[64] = { 1 };
	struct iovec iov = { buf, sizeof(buf) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = t->peer };
	struct fi_msg_tagged tmsg = { .msg_iov = &iov, .iov_count = 1, .addr = t->peer, .tag = 7 };
	struct fi_rma_iov riov = { .addr = tg->addr + 8, .len = 8, .key = tg->key };
	struct fi_msg_rma rmsg = { .msg_iov = &iov, .iov_count = 1, .addr = t->peer,
				   .rma_iov = &riov, .rma_iov_count = 1 };
	uint64_t one = 1;
	struct fi_ioc ioc = { &one, 1 };
	struct fi_rma_ioc rioc = { .addr = tg->addr, .count = 1, .key = tg->key };
	struct fi_msg_atomic amsg = { .msg_iov = &ioc, .iov_count = 1, .addr = t->peer,
				      .rma_iov = &rioc, .rma_iov_count = 1, .datatype = FI_UINT64,
				      .op = FI_SUM };
	int ctx[4], n;

	iov.iov_len = 8;
	CHECK(fi_inject(t->ep, buf, 8, t->peer) == 0, "fi_inject");
	CHECK(fi_tinject(t->ep, buf, 8, t->peer, 7) == 0, "fi_tinject");
	CHECK(fi_inject_write(t->ep, buf, 8, t->peer, tg->addr + 8, tg->key) == 0,
	      "fi_inject_write");
	CHECK(fi_inject_atomic(t->ep, &one, 1, t->peer, tg->addr, tg->key, FI_UINT64, FI_SUM) == 0,
	      "fi_inject_atomic");
	n = count_comps(t->txcq, 300);
	CHECK(n == 0, "fi_inject and its kin completed %d times", n);

	msg.context = &ctx[0];
	tmsg.context = &ctx[1];
	rmsg.context = &ctx[2];
	amsg.context = &ctx[3];
	CHECK(fi_sendmsg(t->ep, &msg, FI_INJECT) == 0, "fi_sendmsg FI_INJECT");
	CHECK(fi_tsendmsg(t->ep, &tmsg, FI_INJECT) == 0, "fi_tsendmsg FI_INJECT");
	CHECK(fi_writemsg(t->ep, &rmsg, FI_INJECT) == 0, "fi_writemsg FI_INJECT");
	CHECK(fi_atomicmsg(t->ep, &amsg, FI_INJECT) == 0, "fi_atomicmsg FI_INJECT");
	n = count_comps(t->txcq, 1000);
	CHECK(n == 4, "FI_INJECT as a flag (no FI_SELECTIVE_COMPLETION): %d completions, not 4", n);
}

static void inject_b(struct fit *t)
{
	struct fi_cq_tagged_entry e;
	uint8_t buf[4][64];
	int n = 0;

	/* fi_inject, fi_tinject, fi_sendmsg, fi_tsendmsg */
	for (int i = 0; i < 2; i++) {
		CHECK(fi_recv(t->ep, buf[2 * i], 64, NULL, FI_ADDR_UNSPEC, NULL) == 0, "fi_recv");
		CHECK(fi_trecv(t->ep, buf[2 * i + 1], 64, NULL, FI_ADDR_UNSPEC, 7, 0, NULL) == 0,
		      "fi_trecv");
	}
	while (n < 4 && fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1)
		n++;
	CHECK(n == 4, "B received %d of 4 messages", n);
}

static void trywait_a(struct fit *t)
{
	struct fid *fids[2] = { &t->txcq->fid, &t->rxcq->fid };
	struct pollfd pf = { .events = POLLIN };
	struct fi_cq_tagged_entry e;
	uint8_t buf[16];
	int r, fd = -1;

	CHECK(fi_control(&t->rxcq->fid, FI_GETWAIT, &fd) == 0 && fd >= 0, "FI_GETWAIT");
	CHECK(fi_recv(t->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL) == 0, "fi_recv");
	do
		r = fi_trywait(t->fabric, fids, 2);
	while (r == -FI_EAGAIN && fi_cq_read(t->rxcq, &e, 1) == -FI_EAGAIN);
	CHECK(r == 0, "fi_trywait: %d", r);
	fit_put(t, "go", 2); /* B sends now */
	pf.fd = fd;
	CHECK(r != 0 || poll(&pf, 1, FIT_WAIT_MS) == 1, "the CQ's fd did not wake on a message");
	CHECK(fit_wait(t->rxcq, &e, NULL, FIT_WAIT_MS) == 1, "the message's completion");
}

static void trywait_b(struct fit *t)
{
	struct fi_cq_tagged_entry e;
	uint8_t buf[16] = { 0 };
	char go[2];

	fit_get(t, go, 2);
	CHECK(fi_send(t->ep, buf, sizeof(buf), NULL, t->peer, NULL) == 0, "fi_send");
	CHECK(fit_wait(t->txcq, &e, NULL, FIT_WAIT_MS) == 1, "the send's completion");
}

static void run(struct fit *t)
{
	static uint64_t target[4];
	struct fid_mr *mr = NULL;
	struct target tg;
	int r;

	bad_input(t);
	if (!t->role)
		getinfo_checks();
	fit_sync(t);
	if (t->role) {
		r = fi_mr_reg(t->domain, target, sizeof(target), FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0,
			      0, &mr, NULL);
		if (r)
			fit_die("fi_mr_reg", r);
		tg.addr = (uint64_t)(uintptr_t)target;
		tg.key = fi_mr_key(mr);
		fit_put(t, &tg, sizeof(tg));
		inject_b(t);
		fit_sync(t);
		CHECK(target[0] == 2, "B's target counts %" PRIu64 " atomic adds, not 2", target[0]);
		trywait_b(t);
		fit_sync(t);
		fi_close(&mr->fid);
	} else {
		fit_get(t, &tg, sizeof(tg));
		inject_a(t, &tg);
		fit_sync(t);
		trywait_a(t);
		fit_sync(t);
	}
}

int main(int argc, char **argv)
{
	return fit_run("fi_contract", argc, argv, FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC, run);
}
