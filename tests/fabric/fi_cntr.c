/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fi_cntr - counters (fi_cntr(3)) on the falcon provider (RDM); before issue 25 fi_cntr_open
 * was -FI_ENOSYS (fabtests' fi_cntr_test ran nothing, fi_rdm_cntr_pingpong failed).
 *   ops       fi_cntr_set / add / seterr / adderr / read / readerr; FI_GETWAIT gives an fd;
 *             fi_cntr_wait below the threshold times out (-FI_ETIMEDOUT)
 *   counting  counters bound with FI_SEND | FI_WRITE on A and FI_RECV on B (beside the CQs):
 *             5 messages raise A's to 5 and B's to 5 (fi_cntr_wait sleeps until they do),
 *             an RDMA WRITE raises A's to 6, a WRITE with a bad key raises its error count
 */
#include "fitest.h"

static struct fid_cntr *cntr_new(struct fit *t)
{
	struct fi_cntr_attr a = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *c = NULL;
	int r = fi_cntr_open(t->domain, &a, &c, NULL);

	if (r)
		fit_die("fi_cntr_open", r);
	return c;
}

static void ops(struct fit *t)
{
	struct fid_cntr *c = cntr_new(t);
	int fd = -1;

	CHECK(fi_cntr_set(c, 7) == 0 && fi_cntr_add(c, 3) == 0 && fi_cntr_read(c) == 10,
	      "set 7, add 3: %" PRIu64, fi_cntr_read(c));
	CHECK(fi_cntr_seterr(c, 2) == 0 && fi_cntr_adderr(c, 1) == 0 && fi_cntr_readerr(c) == 3,
	      "seterr 2, adderr 1: %" PRIu64, fi_cntr_readerr(c));
	CHECK(fi_control(&c->fid, FI_GETWAIT, &fd) == 0 && fd >= 0, "FI_GETWAIT");
	CHECK(fi_cntr_wait(c, 11, 100) == -FI_ETIMEDOUT, "fi_cntr_wait below its threshold");
	CHECK(fi_cntr_wait(c, 10, 100) == 0, "fi_cntr_wait at its threshold");
	fi_close(&c->fid);
}

static void run(struct fit *t)
{
	static uint8_t target[64], buf[64];
	struct fi_cq_tagged_entry e;
	struct fid_cntr *c = cntr_new(t);
	struct fid_mr *mr = NULL;
	uint64_t addr, key;

	ops(t);
	t->cntr = c;
	CHECK(fi_ep_bind(t->ep, &c->fid, t->role ? FI_RECV : FI_SEND | FI_WRITE) == 0,
	      "binding the counter");
	if (t->role) {
		if (fi_mr_reg(t->domain, target, sizeof(target), FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL))
			fit_die("fi_mr_reg", -EINVAL);
		addr = (uint64_t)(uintptr_t)target;
		key = fi_mr_key(mr);
		fit_put(t, &addr, sizeof(addr));
		fit_put(t, &key, sizeof(key));
		for (int i = 0; i < 5; i++)
			CHECK(fi_recv(t->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL) == 0, "fi_recv");
		fit_sync(t);
		CHECK(fi_cntr_wait(c, 5, FIT_WAIT_MS) == 0, "B's receive counter: %" PRIu64,
		      fi_cntr_read(c));
		while (fi_cq_read(t->rxcq, &e, 1) == 1)
			;
		fit_sync(t);
		fi_close(&mr->fid);
	} else {
		fit_get(t, &addr, sizeof(addr));
		fit_get(t, &key, sizeof(key));
		fit_sync(t);
		for (int i = 0; i < 5; i++)
			CHECK(fi_send(t->ep, buf, 8, NULL, t->peer, NULL) == 0, "fi_send");
		CHECK(fi_cntr_wait(c, 5, FIT_WAIT_MS) == 0, "A's send counter: %" PRIu64,
		      fi_cntr_read(c));
		CHECK(fi_write(t->ep, buf, 8, NULL, t->peer, addr, key, NULL) == 0, "fi_write");
		CHECK(fi_cntr_wait(c, 6, FIT_WAIT_MS) == 0, "A's counter after a WRITE: %" PRIu64,
		      fi_cntr_read(c));
		CHECK(fi_write(t->ep, buf, 8, NULL, t->peer, addr, key + 99, NULL) == 0, "a bad WRITE");
		CHECK(fi_cntr_wait(c, 7, FIT_WAIT_MS) == -FI_EAVAIL && fi_cntr_readerr(c) == 1,
		      "the bad WRITE's error count: %" PRIu64, fi_cntr_readerr(c));
		for (int i = 0; i < 20; i++) {
			struct fi_cq_err_entry err;
			ssize_t r = fi_cq_read(t->txcq, &e, 1);

			if (r == -FI_EAVAIL)
				fi_cq_readerr(t->txcq, &err, 0);
			else if (r != 1)
				break;
		}
		fit_sync(t);
	}
	/* the counter stays bound until the endpoint closes: fit_close closes it after */
}

int main(int argc, char **argv)
{
	return fit_run("fi_cntr", argc, argv, FI_MSG | FI_RMA, run);
}
