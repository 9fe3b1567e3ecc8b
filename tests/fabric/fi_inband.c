/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_inband - addresses exchanged in-band, as fabtests' programs do without their
 * out-of-band option (issue 25 item 1): the server's fi_getinfo has no node, a service and
 * FI_SOURCE; the client's names the server's node and service. The client inserts the
 * info's dest_addr (before, a NULL dest_addr crashed fi_av_insert), sends its fi_getname
 * in a message; the server inserts that and answers; each checks the other's bytes.
 *   fi_inband server SERVICE [sockaddr]
 *   fi_inband client NODE SERVICE [sockaddr]
 * (FALCON_SOCKET, FI_FALCON_ADDR, FI_PROVIDER_PATH set by the caller; "sockaddr": the
 * addresses are FI_SOCKADDR_IN.) Exit status 0 when the exchange and both messages went
 * through, 1 otherwise; every wait is bounded.
 */
#include <stdbool.h>

#include "fitest.h"

static int run(bool server, const char *node, const char *service, bool sockaddr)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fi_cq_tagged_entry e;
	uint8_t name[128], msg[128];
	size_t len = sizeof(name);
	fi_addr_t peer = FI_ADDR_NOTAVAIL;
	int r;

	hints->caps = FI_MSG;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("falcon");
	hints->addr_format = sockaddr ? FI_SOCKADDR_IN : FI_FORMAT_UNSPEC;
	r = server ? fi_getinfo(FI_VERSION(1, 17), NULL, service, FI_SOURCE, hints, &info) :
		     fi_getinfo(FI_VERSION(1, 17), node, service, 0, hints, &info);
	fi_freeinfo(hints);
	CHECK(r == 0, "fi_getinfo: %d", r);
	if (r)
		return 1;
	CHECK(info->src_addr && info->src_addrlen, "no src_addr");
	CHECK(server || (info->dest_addr && info->dest_addrlen), "no dest_addr");
	CHECK(!sockaddr || info->addr_format == FI_SOCKADDR_IN, "addr_format %u", info->addr_format);
	if ((r = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (r = fi_domain(fabric, info, &domain, NULL)) ||
	    (r = fi_cq_open(domain, &cqa, &cq, NULL)) ||
	    (r = fi_av_open(domain, &ava, &av, NULL)) ||
	    (r = fi_endpoint(domain, info, &ep, NULL)) ||
	    (r = fi_ep_bind(ep, &av->fid, 0)) ||
	    (r = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) || (r = fi_enable(ep)))
		fit_die("opening the endpoint", r);
	r = fi_getname(&ep->fid, name, &len);
	CHECK(r == 0 && len == info->src_addrlen, "fi_getname: %d, %zu bytes", r, len);
	if (!server) {
		CHECK(fi_av_insert(av, info->dest_addr, 1, &peer, 0, NULL) == 1,
		      "fi_av_insert of the server's dest_addr");
		CHECK(fi_send(ep, name, len, NULL, peer, NULL) == 0, "sending the name");
		CHECK(fit_wait(cq, &e, NULL, FIT_WAIT_MS) == 1 && (e.flags & FI_SEND), "its completion");
		CHECK(fi_recv(ep, msg, sizeof(msg), NULL, FI_ADDR_UNSPEC, msg) == 0, "fi_recv");
		CHECK(fit_wait(cq, &e, NULL, FIT_WAIT_MS) == 1 && e.op_context == msg &&
		      e.len == 3 && !memcmp(msg, "ok", 3), "the server's answer");
	} else {
		CHECK(fi_recv(ep, msg, sizeof(msg), NULL, FI_ADDR_UNSPEC, msg) == 0, "fi_recv");
		r = fit_wait(cq, &e, NULL, FIT_WAIT_MS * 3);
		CHECK(r == 1 && e.op_context == msg, "the client's name: %d", r);
		if (r == 1) {
			CHECK(fi_av_insert(av, msg, 1, &peer, 0, NULL) == 1, "inserting the client");
			CHECK(fi_send(ep, "ok", 3, NULL, peer, NULL) == 0, "answering");
			CHECK(fit_wait(cq, &e, NULL, FIT_WAIT_MS) == 1, "its completion");
		}
	}
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	printf("fi_inband %s: %d passed, %d failed\n", server ? "server" : "client",
	       fit_checks - fit_failures, fit_failures);
	return fit_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	alarm(FIT_WATCHDOG_S);
	if (argc >= 3 && !strcmp(argv[1], "server")) {
		fit_role_name = "server";
		return run(true, NULL, argv[2], argc > 3 && !strcmp(argv[3], "sockaddr"));
	}
	if (argc >= 4 && !strcmp(argv[1], "client")) {
		fit_role_name = "client";
		return run(false, argv[2], argv[3], argc > 4 && !strcmp(argv[4], "sockaddr"));
	}
	fprintf(stderr, "usage: %s server SERVICE [sockaddr] | client NODE SERVICE [sockaddr]\n",
		argv[0]);
	return 2;
}
