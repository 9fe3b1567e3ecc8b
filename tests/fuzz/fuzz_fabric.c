/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target of the libfabric provider's API (fabric/, issue 25): the provider is
 * compiled into this process with libfalcon-client and called through libfabric's own
 * inline fi_* wrappers, against a real falcond (--io udp, --security none on 127.0.0.1,
 * started once, killed with this process). One RDM endpoint, its CQs, AV (holding the
 * endpoint's own address: operations go to itself) and a registered buffer are opened once;
 * each input is a sequence of up to FF_OPS_MAX calls whose every argument comes from the
 * input: lengths, counts, flags, fi_addr values, keys, remote addresses, tags, datatypes and
 * ops, iov arrays, NULL where a pointer belongs; counters and endpoint options too. Pointers are NULL or valid memory (a wild
 * pointer is the caller's crash in any provider); addresses given to fi_av_insert are
 * garbage and removed at once, so nothing is ever sent to a daemon that does not exist.
 * What must hold: no crash, no sanitizer report, no hang (each input's CQ drain is
 * bounded), and the endpoint still sends to itself after every input.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ffi.h"

#ifndef FUZZ_FALCOND
#define FUZZ_FALCOND "build/daemon/falcond"
#endif
#define FF_OPS_MAX 48
#define FF_BUF 65536u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
struct fi_provider *fi_prov_ini(void);

#define REQUIRE(c) do { if (!(c)) { fprintf(stderr, "fuzz_fabric: %s\n", #c); abort(); } } while (0)

static struct fi_provider *prov;
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *txcq, *rxcq;
static struct fid_ep *ep;
static struct fid_mr *mr;
static fi_addr_t self_fa;
static uint8_t *buf;          /* FF_BUF bytes, registered (mr) */
static uint8_t scratch[FF_BUF];
static pid_t daemon_pid;

/* ---- the input as arguments ---- */

struct rd {
	const uint8_t *p;
	size_t n;
};

static uint64_t rd_bytes(struct rd *r, size_t k)
{
	uint64_t v = 0;

	for (size_t i = 0; i < k; i++) {
		v = v << 8 | (r->n ? *r->p : 0);
		if (r->n) {
			r->p++;
			r->n--;
		}
	}
	return v;
}
static uint8_t u8(struct rd *r) { return (uint8_t)rd_bytes(r, 1); }
static uint32_t u32(struct rd *r) { return (uint32_t)rd_bytes(r, 4); }
static uint64_t u64(struct rd *r) { return rd_bytes(r, 8); }

/* a length: small, near a limit, or anything */
static size_t len_of(struct rd *r)
{
	static const size_t edges[] = { 0, 1, 8, 4095, 4096, 4097, 65535, 65536, 65537,
					1u << 20, (size_t)1 << 31, SIZE_MAX };
	uint8_t k = u8(r);

	if (k < 128)
		return k;
	if (k < 200)
		return edges[k % (sizeof(edges) / sizeof(edges[0]))];
	return (size_t)u64(r);
}

/* a buffer for len bytes: NULL, the registered one, or scratch (len capped to fit) */
static void *buf_of(struct rd *r, size_t *len)
{
	uint8_t k = u8(r) % 4;

	if (k == 0)
		return NULL;
	if (*len > FF_BUF && k != 3)
		*len = FF_BUF;
	if (*len > FF_BUF)
		return NULL; /* a length beyond memory that exists: the provider must refuse it */
	return k == 1 ? buf : scratch;
}

static void *desc_of(struct rd *r)
{
	return u8(r) & 1 ? fi_mr_desc(mr) : NULL;
}

static fi_addr_t fa_of(struct rd *r)
{
	switch (u8(r) % 5) {
	case 0: return self_fa;
	case 1: return FI_ADDR_UNSPEC;
	case 2: return FI_ADDR_NOTAVAIL;
	case 3: return u8(r);
	default: return u64(r);
	}
}

static uint64_t flags_of(struct rd *r)
{
	static const uint64_t common[] = { 0, FI_COMPLETION, FI_INJECT, FI_REMOTE_CQ_DATA, FI_PEEK,
					   FI_CLAIM, FI_DISCARD, FI_PEEK | FI_CLAIM,
					   FI_INJECT | FI_COMPLETION, FI_MORE, FI_MULTI_RECV };
	uint8_t k = u8(r);

	return k < 200 ? common[k % (sizeof(common) / sizeof(common[0]))] : u64(r);
}

static uint64_t raddr_of(struct rd *r)
{
	return u8(r) & 1 ? (uint64_t)(uintptr_t)buf + u32(r) % (FF_BUF + 64) : u64(r);
}

static uint64_t key_of(struct rd *r)
{
	return u8(r) & 1 ? fi_mr_key(mr) : u64(r);
}

static void *ctx_of(struct rd *r)
{
	return (void *)(uintptr_t)u8(r); /* contexts are the caller's: never dereferenced */
}

/* up to 6 iovs over the buffers (count may exceed the array: then the array is NULL) */
static size_t iov_of(struct rd *r, struct iovec *iov, void **desc, struct iovec **out)
{
	size_t count = u8(r) % 8;

	*out = count > 6 || (count && !(u8(r) % 8)) ? NULL : iov;
	for (size_t i = 0; i < count && i < 6; i++) {
		size_t l = len_of(r);

		iov[i].iov_base = buf_of(r, &l);
		iov[i].iov_len = l;
		desc[i] = desc_of(r);
	}
	return count;
}

/* ---- the calls ---- */

static void do_msg(struct rd *r, uint8_t what)
{
	struct iovec iov[6], *iv;
	void *desc[6];
	size_t len = len_of(r), count;
	void *b = buf_of(r, &len);
	fi_addr_t fa = fa_of(r);
	uint64_t tag = u64(r), ign = u64(r), data = u64(r);
	struct fi_msg m;
	struct fi_msg_tagged tm;

	switch (what % 14) {
	case 0: fi_send(ep, b, len, desc_of(r), fa, ctx_of(r)); break;
	case 1: fi_recv(ep, b, len, desc_of(r), fa, ctx_of(r)); break;
	case 2: fi_tsend(ep, b, len, desc_of(r), fa, tag, ctx_of(r)); break;
	case 3: fi_trecv(ep, b, len, desc_of(r), fa, tag, ign, ctx_of(r)); break;
	case 4: fi_inject(ep, b, len, fa); break;
	case 5: fi_tinject(ep, b, len, fa, tag); break;
	case 6: fi_senddata(ep, b, len, desc_of(r), data, fa, ctx_of(r)); break;
	case 7: fi_injectdata(ep, b, len, data, fa); break;
	case 8: fi_tsenddata(ep, b, len, desc_of(r), data, fa, tag, ctx_of(r)); break;
	case 9:
		count = iov_of(r, iov, desc, &iv);
		fi_sendv(ep, iv, desc, count, fa, ctx_of(r));
		break;
	case 10:
		count = iov_of(r, iov, desc, &iv);
		fi_recvv(ep, iv, desc, count, fa, ctx_of(r));
		break;
	case 11:
	case 12:
		m = (struct fi_msg){ .desc = desc, .addr = fa, .context = ctx_of(r), .data = data };
		m.iov_count = iov_of(r, iov, desc, &iv);
		m.msg_iov = iv;
		if (what % 14 == 11)
			fi_sendmsg(ep, u8(r) & 1 ? &m : NULL, flags_of(r));
		else
			fi_recvmsg(ep, u8(r) & 1 ? &m : NULL, flags_of(r));
		break;
	default:
		tm = (struct fi_msg_tagged){ .desc = desc, .addr = fa, .context = ctx_of(r),
					     .data = data, .tag = tag, .ignore = ign };
		tm.iov_count = iov_of(r, iov, desc, &iv);
		tm.msg_iov = iv;
		if (u8(r) & 1)
			fi_tsendmsg(ep, u8(r) & 1 ? &tm : NULL, flags_of(r));
		else
			fi_trecvmsg(ep, u8(r) & 1 ? &tm : NULL, flags_of(r));
		break;
	}
}

static void do_rma(struct rd *r, uint8_t what)
{
	struct iovec iov[6], *iv;
	void *desc[6];
	size_t len = len_of(r);
	void *b = buf_of(r, &len);
	fi_addr_t fa = fa_of(r);
	uint64_t ra = raddr_of(r), key = key_of(r), data = u64(r);
	struct fi_rma_iov riov[2] = { { ra, len, key }, { ra, len, key } };
	struct fi_msg_rma m;

	switch (what % 8) {
	case 0: fi_read(ep, b, len, desc_of(r), fa, ra, key, ctx_of(r)); break;
	case 1: fi_write(ep, b, len, desc_of(r), fa, ra, key, ctx_of(r)); break;
	case 2: fi_inject_write(ep, b, len, fa, ra, key); break;
	case 3: fi_writedata(ep, b, len, desc_of(r), data, fa, ra, key, ctx_of(r)); break;
	case 4: fi_inject_writedata(ep, b, len, data, fa, ra, key); break;
	case 5: {
		size_t count = iov_of(r, iov, desc, &iv);

		if (u8(r) & 1)
			fi_readv(ep, iv, desc, count, fa, ra, key, ctx_of(r));
		else
			fi_writev(ep, iv, desc, count, fa, ra, key, ctx_of(r));
		break;
	}
	default:
		m = (struct fi_msg_rma){ .desc = desc, .addr = fa, .context = ctx_of(r), .data = data };
		m.iov_count = iov_of(r, iov, desc, &iv);
		m.msg_iov = iv;
		m.rma_iov_count = u8(r) % 3;
		m.rma_iov = u8(r) % 4 ? riov : NULL;
		if (what % 8 == 6)
			fi_readmsg(ep, u8(r) & 1 ? &m : NULL, flags_of(r));
		else
			fi_writemsg(ep, u8(r) & 1 ? &m : NULL, flags_of(r));
		break;
	}
}

static void do_atomic(struct rd *r, uint8_t what)
{
	/* operands from the input, results into scratch */
	static uint64_t op_buf[256], cmp_buf[256]; /* 64 of the widest type */
	size_t count = u8(r) % 66;
	void *b = u8(r) % 5 ? op_buf : NULL, *c = u8(r) % 5 ? cmp_buf : NULL;
	void *res = u8(r) % 5 ? scratch : NULL;
	fi_addr_t fa = fa_of(r);
	uint64_t ra = raddr_of(r), key = key_of(r);
	enum fi_datatype dt = (enum fi_datatype)(u8(r) % 20);
	enum fi_op aop = (enum fi_op)(u8(r) % 22);
	struct fi_ioc ioc = { b, count }, cioc = { c, count }, rioc = { res, count };
	struct fi_rma_ioc rma = { ra, count, key };
	struct fi_msg_atomic m = { .msg_iov = u8(r) % 4 ? &ioc : NULL, .iov_count = u8(r) % 3,
				   .addr = fa, .rma_iov = u8(r) % 4 ? &rma : NULL,
				   .rma_iov_count = u8(r) % 3, .datatype = dt, .op = aop,
				   .context = ctx_of(r) };
	size_t vc = 0;

	if (count > 64)
		count = SIZE_MAX; /* beyond what the buffers hold: must be refused */
	for (size_t i = 0; i < 8; i++)
		op_buf[i] = cmp_buf[i] = u64(r);
	ioc.count = cioc.count = rioc.count = count;
	switch (what % 10) {
	case 0: fi_atomic(ep, b, count, desc_of(r), fa, ra, key, dt, aop, ctx_of(r)); break;
	case 1: fi_inject_atomic(ep, b, count, fa, ra, key, dt, aop); break;
	case 2: fi_fetch_atomic(ep, b, count, desc_of(r), res, desc_of(r), fa, ra, key, dt, aop,
				ctx_of(r)); break;
	case 3: fi_compare_atomic(ep, b, count, desc_of(r), c, desc_of(r), res, desc_of(r), fa, ra,
				  key, dt, aop, ctx_of(r)); break;
	case 4: fi_atomicmsg(ep, u8(r) & 1 ? &m : NULL, flags_of(r)); break;
	case 5: fi_fetch_atomicmsg(ep, u8(r) & 1 ? &m : NULL, u8(r) & 1 ? &rioc : NULL, NULL,
				   u8(r) % 3, flags_of(r)); break;
	case 6: fi_compare_atomicmsg(ep, u8(r) & 1 ? &m : NULL, u8(r) & 1 ? &cioc : NULL, NULL,
				     u8(r) % 3, u8(r) & 1 ? &rioc : NULL, NULL, u8(r) % 3,
				     flags_of(r)); break;
	case 7: fi_atomicvalid(ep, dt, aop, u8(r) & 1 ? &vc : NULL); break;
	case 8: fi_fetch_atomicvalid(ep, dt, aop, u8(r) & 1 ? &vc : NULL); break;
	default: {
		struct fi_atomic_attr aa;

		fi_query_atomic(domain, dt, aop, u8(r) & 1 ? &aa : NULL, flags_of(r));
		fi_compare_atomicvalid(ep, dt, aop, u8(r) & 1 ? &vc : NULL);
		break;
	}
	}
}

static void do_av(struct rd *r, uint8_t what)
{
	uint8_t addrs[4][64];
	fi_addr_t fas[4] = { FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL,
			     FI_ADDR_NOTAVAIL };
	size_t count = u8(r) % 5, len = len_of(r);
	char str[128];

	for (size_t i = 0; i < 4; i++)
		for (size_t j = 0; j < 64; j++)
			addrs[i][j] = u8(r);
	switch (what % 5) {
	case 0: {
		int n = fi_av_insert(av, u8(r) % 4 ? addrs : NULL, count, u8(r) % 4 ? fas : NULL,
				     flags_of(r), NULL);

		/* garbage that went in comes out again: nothing is ever sent there */
		for (size_t i = 0; n > 0 && i < count; i++)
			if (fas[i] != FI_ADDR_NOTAVAIL && fas[i] != self_fa)
				fi_av_remove(av, &fas[i], 1, 0);
		break;
	}
	case 1:
		if (len > sizeof(addrs[0]))
			len = sizeof(addrs[0]);
		fi_av_lookup(av, fa_of(r), u8(r) & 1 ? addrs[0] : NULL, u8(r) & 1 ? &len : NULL);
		break;
	case 2:
		if (len > sizeof(str))
			len = sizeof(str);
		fi_av_straddr(av, u8(r) & 1 ? addrs[0] : NULL, u8(r) & 1 ? str : NULL,
			      u8(r) & 1 ? &len : NULL);
		break;
	case 3: {
		fi_addr_t fa = fa_of(r);

		if (fa != self_fa)
			fi_av_remove(av, u8(r) & 1 ? &fa : NULL, u8(r) % 3, flags_of(r));
		break;
	}
	default:
		if (len > sizeof(addrs[0]))
			len = sizeof(addrs[0]);
		fi_getname(&ep->fid, u8(r) & 1 ? addrs[0] : NULL, u8(r) & 1 ? &len : NULL);
		break;
	}
}

static void do_cq(struct rd *r, uint8_t what)
{
	struct fi_cq_tagged_entry e[16];
	struct fi_cq_err_entry err;
	fi_addr_t src[16];
	struct fid_cq *cq = u8(r) & 1 ? txcq : rxcq;
	size_t count = u8(r) % 18;
	void *out = count > 16 ? NULL : e;

	switch (what % 6) {
	case 0: fi_cq_read(cq, u8(r) % 4 ? out : NULL, count); break;
	case 1: fi_cq_readfrom(cq, u8(r) % 4 ? out : NULL, count, u8(r) & 1 ? src : NULL); break;
	case 2: fi_cq_readerr(cq, u8(r) % 4 ? &err : NULL, flags_of(r)); break;
	case 3: fi_cq_sread(cq, u8(r) % 4 ? out : NULL, count, NULL, 0); break;
	case 4: {
		struct fid *fids[3] = { &txcq->fid, &rxcq->fid, NULL };

		fi_trywait(fabric, u8(r) % 4 ? fids : NULL, u8(r) % 4);
		break;
	}
	default:
		fi_cancel(&ep->fid, ctx_of(r));
		break;
	}
}

static void do_objects(struct rd *r, uint8_t what)
{
	switch (what % 8) {
	case 6: {
		struct fi_cntr_attr a = { .events = u8(r) % 2, .wait_obj = u8(r) % 6,
					  .flags = flags_of(r) };
		struct fid_cntr *c = NULL;

		if (fi_cntr_open(domain, u8(r) % 4 ? &a : NULL, u8(r) % 4 ? &c : NULL, NULL) || !c)
			break;
		fi_cntr_add(c, u64(r));
		fi_cntr_adderr(c, u64(r));
		fi_cntr_read(c);
		fi_cntr_wait(c, u64(r), 0);
		fi_close(&c->fid);
		break;
	}
	case 7: {
		size_t v = len_of(r), l = u8(r) % 16;

		fi_setopt(&ep->fid, u8(r) % 3, (int)(u8(r) % 4), u8(r) & 1 ? &v : NULL, l);
		fi_getopt(&ep->fid, u8(r) % 3, (int)(u8(r) % 4), u8(r) & 1 ? &v : NULL,
			  u8(r) & 1 ? &l : NULL);
		break;
	}
	case 0: {
		struct fid_mr *m = NULL;
		size_t len = len_of(r);
		void *b = buf_of(r, &len);

		if (!fi_mr_reg(domain, b, len, u64(r), u64(r), u64(r), flags_of(r), u8(r) & 1 ? &m : NULL,
			       NULL) && m)
			fi_close(&m->fid);
		break;
	}
	case 1: {
		struct fi_eq_attr a = { .size = u32(r) % 70000, .wait_obj = u8(r) % 6,
					.flags = flags_of(r) };
		struct fid_eq *eq = NULL;
		uint8_t b[300];
		uint32_t ev;

		if (fi_eq_open(fabric, u8(r) & 1 ? &a : NULL, u8(r) & 1 ? &eq : NULL, NULL) || !eq)
			break;
		fi_eq_write(eq, u32(r), u8(r) & 1 ? b : NULL, len_of(r) % 300, flags_of(r));
		fi_eq_read(eq, &ev, u8(r) & 1 ? b : NULL, len_of(r) % 300, flags_of(r));
		fi_close(&eq->fid);
		break;
	}
	case 2: {
		struct fi_cq_attr a = { .size = u32(r) % 70000, .format = u8(r) % 6,
					.wait_obj = u8(r) % 6, .flags = flags_of(r) };
		struct fid_cq *cq = NULL;

		if (!fi_cq_open(domain, u8(r) & 1 ? &a : NULL, u8(r) & 1 ? &cq : NULL, NULL) && cq)
			fi_close(&cq->fid);
		break;
	}
	case 3: {
		uint64_t f = u64(r);

		fi_control(&ep->fid, u8(r) & 1 ? FI_SETOPSFLAG : FI_GETOPSFLAG, u8(r) & 1 ? &f : NULL);
		fi_control(&ep->fid, (int)u32(r), NULL);
		break;
	}
	case 4: {
		struct fi_av_attr a = { .type = u8(r) % 4, .flags = flags_of(r), .count = u32(r) };
		struct fid_av *v = NULL;

		if (!fi_av_open(domain, u8(r) & 1 ? &a : NULL, u8(r) & 1 ? &v : NULL, NULL) && v)
			fi_close(&v->fid);
		break;
	}
	default: {
		struct fi_info *h = fi_allocinfo(), *got = NULL;

		if (!h)
			break;
		h->caps = u64(r);
		h->mode = u64(r);
		h->addr_format = u8(r) % 20;
		h->ep_attr->type = u8(r) % 6;
		h->domain_attr->mr_mode = (int)u32(r);
		h->domain_attr->threading = u8(r) % 8;
		h->tx_attr->msg_order = u64(r);
		h->rx_attr->msg_order = u64(r);
		h->tx_attr->caps = u64(r);
		h->rx_attr->caps = u64(r);
		h->domain_attr->caps = u64(r);
		h->domain_attr->av_type = u8(r) % 4;
		if (!prov->getinfo(FI_VERSION(1, u8(r) % 20), NULL, NULL, u8(r) & 1 ? FI_SOURCE : 0,
				   u8(r) & 1 ? h : NULL, &got))
			fi_freeinfo(got);
		fi_freeinfo(h);
		break;
	}
	}
}

/* ---- setup, once ---- */

static char dir[] = "/tmp/fuzz_fabric.XXXXXX";

/* at exit: the daemon stopped, its runtime directory removed */
static void stop_daemon(void)
{
	char cmd[96];

	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		(void)0; /* litter in /tmp at worst */
}

static void start_daemon(void)
{
	static char sock[128], port[16], cmport[16];
	unsigned base = 30000u + (unsigned)getpid() % 20000u;

	REQUIRE(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/falcond.sock", dir);
	snprintf(port, sizeof(port), "%u", base);
	snprintf(cmport, sizeof(cmport), "%u", base + 1);
	daemon_pid = fork();
	REQUIRE(daemon_pid >= 0);
	if (daemon_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(FUZZ_FALCOND, "falcond", "--io", "udp", "--security", "none", "--listen",
		      "127.0.0.1", "--port", port, "--cm-port", cmport, "--runtime-dir", dir,
		      "--log-level", "error", (char *)NULL);
		_exit(127);
	}
	atexit(stop_daemon);
	for (int i = 0; i < 200; i++) {
		struct stat st;

		if (!stat(sock, &st))
			break;
		usleep(25000);
	}
	setenv("FALCON_SOCKET", sock, 1);
	snprintf(sock, sizeof(sock), "127.0.0.1:%s", cmport);
	setenv("FI_FALCON_ADDR", sock, 1);
	setenv("FI_LOG_LEVEL", "none", 1);
}

/* the endpoint still carries a message to itself (bounded: a full queue left by the input
 * may refuse it, which is not an error) */
static void self_check(void)
{
	static uint8_t out[8] = "falcon!", in[8];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	if (fi_recv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, in) ||
	    fi_send(ep, out, sizeof(out), NULL, self_fa, out))
		return;
	for (int i = 0, done = 0; i < 20000 && done < 2; i++) {
		struct fid_cq *cq = i & 1 ? txcq : rxcq;
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == -FI_EAVAIL)
			fi_cq_readerr(cq, &err, 0);
		else if (n == 1 && (e.op_context == out || e.op_context == in))
			done++;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct fi_info *hints;
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD, .size = 4096 };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	uint8_t name[64];
	size_t len = sizeof(name);

	(void)argc;
	(void)argv;
	start_daemon();
	prov = fi_prov_ini();
	hints = fi_allocinfo();
	REQUIRE(hints);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
	REQUIRE(prov->getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info) == 0);
	fi_freeinfo(hints);
	REQUIRE(prov->fabric(info->fabric_attr, &fabric, NULL) == 0);
	REQUIRE(fi_domain(fabric, info, &domain, NULL) == 0);
	REQUIRE(fi_cq_open(domain, &cqa, &txcq, NULL) == 0);
	REQUIRE(fi_cq_open(domain, &cqa, &rxcq, NULL) == 0);
	REQUIRE(fi_av_open(domain, &ava, &av, NULL) == 0);
	REQUIRE(fi_endpoint(domain, info, &ep, NULL) == 0);
	REQUIRE(fi_ep_bind(ep, &av->fid, 0) == 0);
	REQUIRE(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT) == 0);
	REQUIRE(fi_ep_bind(ep, &rxcq->fid, FI_RECV) == 0);
	REQUIRE(fi_enable(ep) == 0);
	REQUIRE(fi_getname(&ep->fid, name, &len) == 0);
	REQUIRE(fi_av_insert(av, name, 1, &self_fa, 0, NULL) == 1);
	buf = calloc(1, FF_BUF);
	REQUIRE(buf);
	REQUIRE(fi_mr_reg(domain, buf, FF_BUF, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ |
			  FI_WRITE | FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rd r = { data, size };
	struct fi_cq_tagged_entry e[16];
	struct fi_cq_err_entry err;

	for (int i = 0; i < FF_OPS_MAX && r.n; i++) {
		uint8_t what = u8(&r);

		switch (what % 6) {
		case 0: do_msg(&r, what / 6); break;
		case 1: do_rma(&r, what / 6); break;
		case 2: do_atomic(&r, what / 6); break;
		case 3: do_av(&r, what / 6); break;
		case 4: do_cq(&r, what / 6); break;
		default: do_objects(&r, what / 6); break;
		}
	}
	/* bounded drain: what completes now, errors included */
	for (int i = 0; i < 64; i++) {
		ssize_t a = fi_cq_read(txcq, e, 16), b = fi_cq_read(rxcq, e, 16);

		if (a == -FI_EAVAIL)
			fi_cq_readerr(txcq, &err, 0);
		if (b == -FI_EAVAIL)
			fi_cq_readerr(rxcq, &err, 0);
		if (a == -FI_EAGAIN && b == -FI_EAGAIN)
			break;
	}
	self_check();
	return 0;
}
