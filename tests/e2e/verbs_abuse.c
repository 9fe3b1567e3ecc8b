/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verbs_abuse - a verbs program that misbehaves, run under falcon-run by
 * tests/e2e/test_verbs.sh: each mistake gets the error or completion status a verbs
 * device gives, and nothing crashes. Written to libibverbs only (built against
 * rdma-core's headers and library; falcon's libibverbs.so.1 takes their place at run
 * time). One process, two contexts: FALCON_SOCKET is set to daemon A's socket, then to
 * B's, before each ibv_open_device, so one program holds both ends of an RC connection.
 *
 *   verbs_abuse SOCK_A SOCK_B
 * And one thing done right: a UD datagram answered through ibv_create_ah_from_wc.
 * Exit 0 when every case behaved; each case prints one line.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failed;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failed = 1;
}

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	union ibv_gid gid;
	char buf[4096];
};

static struct ibv_context *open_on(const char *sock)
{
	struct ibv_device **l;
	struct ibv_context *c;
	int n;

	setenv("FALCON_SOCKET", sock, 1);
	l = ibv_get_device_list(&n);
	if (!l || n < 1) {
		fprintf(stderr, "no device at %s\n", sock);
		exit(2);
	}
	c = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	if (!c) {
		perror("ibv_open_device");
		exit(2);
	}
	return c;
}

static void side_init(struct side *s, const char *sock, int cqe, int send_wr)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = (uint32_t)send_wr, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 }, .sq_sig_all = 1 };

	s->ctx = open_on(sock);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, cqe, NULL, NULL, 0);
	a.send_cq = a.recv_cq = s->cq;
	s->qp = s->pd && s->cq ? ibv_create_qp(s->pd, &a) : NULL;
	s->mr = s->pd ? ibv_reg_mr(s->pd, s->buf, sizeof(s->buf), IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) : NULL;
	if (!s->qp || !s->mr || ibv_query_gid(s->ctx, 1, 0, &s->gid)) {
		perror("side_init");
		exit(2);
	}
}

/* What a program should do before ibv_close_device (as with rdma-core, closing does not
 * free the objects a program left: a sanitizer build counts them as leaks). */
static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
}

static int to_rts(struct side *s, const union ibv_gid *gid, uint32_t qpn, uint8_t timeout)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = qpn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .grh = { .dgid = *gid, .hop_limit = 1 }, .port_num = 1 } };
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = timeout, .retry_cnt = 1,
				  .rnr_retry = 1, .max_rd_atomic = 1 };
	return ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Wait up to 10 s for one completion; its status, or -1. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	for (int i = 0; i < 100000; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n)
			return (int)wc->status;
		usleep(100);
	}
	return -1;
}

static int post(struct side *s, enum ibv_wr_opcode op, uint32_t lkey, uint32_t rkey,
		uint64_t raddr, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = raddr, .rkey = rkey } }, *bad;

	return ibv_post_send(s->qp, &wr, &bad);
}

static enum ibv_qp_state state_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) ? (enum ibv_qp_state)-1 : a.qp_state;
}

/* An async event of type t within 5 s. */
static int async_event(struct ibv_context *ctx, enum ibv_event_type t)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	for (int i = 0; i < 50; i++) {
		if (poll(&p, 1, 100) == 1 && !ibv_get_async_event(ctx, &ev)) {
			int ok = ev.event_type == t;

			ibv_ack_async_event(&ev);
			if (ok)
				return 1;
		}
	}
	return 0;
}

static void connect_pair(struct side *a, struct side *b, uint8_t timeout)
{
	if (to_rts(a, &b->gid, b->qp->qp_num, timeout) || to_rts(b, &a->gid, a->qp->qp_num, timeout)) {
		perror("modify_qp");
		exit(2);
	}
}

/* Bad lkey, then (a fresh pair) bad rkey: error completions, the QP in ERR. */
static void bad_keys(const char *sa, const char *sb)
{
	struct side a, b;
	struct ibv_wc wc;
	int st;

	side_init(&a, sa, 16, 16);
	side_init(&b, sb, 16, 16);
	connect_pair(&a, &b, 14);
	check(post(&a, IBV_WR_RDMA_WRITE, a.mr->lkey, b.mr->rkey, (uintptr_t)b.buf, 64) == 0 &&
	      wait_wc(a.cq, &wc) == IBV_WC_SUCCESS, "a good WRITE completes SUCCESS");
	st = post(&a, IBV_WR_RDMA_WRITE, a.mr->lkey + 77, b.mr->rkey, (uintptr_t)b.buf, 64) ? -2 :
	     wait_wc(a.cq, &wc);
	printf("  bad lkey: %s (%d), QP state %d\n", st >= 0 ? ibv_wc_status_str(st) : "-", st,
	       state_of(a.qp));
	check(st == IBV_WC_LOC_PROT_ERR && state_of(a.qp) == IBV_QPS_ERR,
	      "bad lkey: LOC_PROT_ERR, the QP in the error state");
	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	a.qp = b.qp = NULL;

	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC, .send_cq = a.cq, .recv_cq = a.cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1 };
	a.qp = ibv_create_qp(a.pd, &ia);
	ia.send_cq = ia.recv_cq = b.cq;
	b.qp = ibv_create_qp(b.pd, &ia);
	connect_pair(&a, &b, 14);
	st = post(&a, IBV_WR_RDMA_WRITE, a.mr->lkey, b.mr->rkey ^ 0x1000, (uintptr_t)b.buf, 64) ?
	     -2 : wait_wc(a.cq, &wc);
	printf("  bad rkey: %s (%d)\n", st >= 0 ? ibv_wc_status_str(st) : "-", st);
	check(st == IBV_WC_REM_ACCESS_ERR, "bad rkey: REM_ACCESS_ERR");
	side_close(&a);
	side_close(&b);
}

/* Post on a RESET QP: EINVAL from ibv_post_send, bad_wr at the WR; receives too. */
static void reset_post(const char *sa)
{
	struct side a;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad = NULL;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad = NULL;
	int rc, rrc;

	side_init(&a, sa, 16, 16);
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 8, .lkey = a.mr->lkey };
	rc = ibv_post_send(a.qp, &wr, &bad);
	rrc = ibv_post_recv(a.qp, &rwr, &rbad);
	printf("  post_send on RESET: %d (%s), post_recv: %d\n", rc, strerror(rc), rrc);
	check(rc == EINVAL && bad == &wr && rrc == EINVAL && rbad == &rwr,
	      "post on a RESET QP: EINVAL, bad_wr names the WR");
	side_close(&a);
}

/* A CQ far too small for what two QPs post: poll_cq fails, CQ_ERR and QP_FATAL events,
 * the QPs in ERR. */
static void cq_too_small(const char *sa, const char *sb)
{
	struct side a, b;
	struct ibv_wc wc[64];
	int n = 0, posted = 0, err = 0;

	side_init(&a, sa, 1, 4096);
	side_init(&b, sb, 16, 16);
	connect_pair(&a, &b, 14);
	/* more than the CQ can hold, whatever room it has beyond its size: the send queue
	 * takes them as the daemon consumes them (ENOMEM meanwhile) */
	for (int i = 0; i < 200000 && posted < 12000; i++) {
		if (!post(&a, IBV_WR_RDMA_WRITE, a.mr->lkey, b.mr->rkey, (uintptr_t)b.buf, 8))
			posted++;
		else
			usleep(100);
	}
	for (int i = 0; i < 200 && !err; i++) {
		usleep(20000);
		if (i < 2)
			continue;
		int r = ibv_poll_cq(a.cq, 64, wc);

		if (r < 0)
			err = r;
		else
			n += r;
		if (n > 12000)
			break;
	}
	printf("  posted %d WRITEs, all signaled, on a 1-entry CQ: %d polled, then poll_cq %d\n",
	       posted, n, err);
	check(err < 0, "CQ too small: ibv_poll_cq fails (the CQ overflowed)");
	check(async_event(a.ctx, IBV_EVENT_CQ_ERR), "CQ too small: IBV_EVENT_CQ_ERR");
	check(state_of(a.qp) == IBV_QPS_ERR, "CQ too small: its QP in the error state");
	side_close(&a);
	side_close(&b);
}

/* The peer is a child process killed after connecting: the next SEND fails (a flush or
 * retries exceeded), QP_FATAL comes. */
static void peer_gone(const char *sa, const char *sb)
{
	int p2c[2], c2p[2];
	struct side a;
	struct ibv_wc wc;
	pid_t pid;

	if (pipe(p2c) || pipe(c2p))
		exit(2);
	side_init(&a, sa, 16, 16);
	pid = fork();
	if (pid == 0) {
		struct side b;
		struct { union ibv_gid gid; uint32_t qpn; } me, peer;

		side_init(&b, sb, 16, 16);
		me.gid = b.gid;
		me.qpn = b.qp->qp_num;
		if (write(c2p[1], &me, sizeof(me)) != sizeof(me) ||
		    read(p2c[0], &peer, sizeof(peer)) != sizeof(peer) ||
		    to_rts(&b, &peer.gid, peer.qpn, 10))
			_exit(2);
		if (write(c2p[1], &me, 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	struct { union ibv_gid gid; uint32_t qpn; } me = { a.gid, a.qp->qp_num }, peer;
	if (read(c2p[0], &peer, sizeof(peer)) != sizeof(peer) ||
	    write(p2c[1], &me, sizeof(me)) != sizeof(me) || to_rts(&a, &peer.gid, peer.qpn, 10) ||
	    read(c2p[0], &me, 1) != 1) {
		kill(pid, SIGKILL);
		check(0, "peer gone: set up");
		return;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	usleep(300000);
	int st = post(&a, IBV_WR_SEND, a.mr->lkey, 0, 0, 64) ? -2 : wait_wc(a.cq, &wc);

	printf("  SEND to a killed peer: %s (%d)\n", st >= 0 ? ibv_wc_status_str(st) : "-", st);
	check(st == IBV_WC_WR_FLUSH_ERR || st == IBV_WC_RETRY_EXC_ERR || st == IBV_WC_REM_OP_ERR ||
	      st == IBV_WC_REM_ABORT_ERR, "peer gone: the SEND completes in error");
	check(async_event(a.ctx, IBV_EVENT_QP_FATAL) || state_of(a.qp) == IBV_QPS_ERR,
	      "peer gone: the QP in the error state");
	side_close(&a);
}

/* A UD QP on one side. */
static struct ibv_qp *ud_qp(struct side *s, const char *sock)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };
	struct ibv_qp *qp;

	s->ctx = open_on(sock);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0);
	s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf), IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = ia.recv_cq = s->cq;
	qp = s->qp = ibv_create_qp(s->pd, &ia);
	if (!qp || !s->mr || ibv_query_gid(s->ctx, 1, 0, &s->gid) ||
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return NULL;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return NULL;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? NULL : qp;
}

static int ud_send(struct ibv_qp *qp, struct side *s, struct ibv_ah *ah, uint32_t qpn)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf + 2048, .length = 64, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = 0x11111111 } }, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static int ud_recv(struct ibv_qp *qp, struct side *s)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = 40 + 64, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* Not misbehaving: a UD datagram answered through ibv_create_ah_from_wc, with the GRH's
 * 40 bytes counted as on a device. */
static void ud_answer(const char *sa, const char *sb)
{
	static struct side a, b;
	struct ibv_qp *qa = ud_qp(&a, sa), *qb = ud_qp(&b, sb);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah, *back;
	struct ibv_wc wc;
	int st;

	if (!qa || !qb) {
		check(0, "UD QPs");
		return;
	}
	aa.grh.dgid = b.gid;
	memset(b.buf + 2048, 0x5a, 64);
	memset(a.buf + 2048, 0xa5, 64);
	ah = ibv_create_ah(a.pd, &aa);
	check(ah && !ud_recv(qb, &b) && !ud_recv(qa, &a) && !ud_send(qa, &a, ah, qb->qp_num) &&
	      wait_wc(a.cq, &wc) == IBV_WC_SUCCESS, "UD: a datagram to the peer's GID and QP");
	st = wait_wc(b.cq, &wc);
	check(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && (wc.wc_flags & IBV_WC_GRH) &&
	      wc.byte_len == 40 + 64 && wc.src_qp == qa->qp_num && b.buf[40] == (char)0xa5,
	      "UD: received after the GRH's 40 bytes, byte_len 104, src_qp the sender");
	back = st == IBV_WC_SUCCESS ? ibv_create_ah_from_wc(b.pd, &wc, (struct ibv_grh *)b.buf, 1) : NULL;
	check(back && !ud_send(qb, &b, back, wc.src_qp) && wait_wc(b.cq, &wc) == IBV_WC_SUCCESS &&
	      wait_wc(a.cq, &wc) == IBV_WC_SUCCESS && a.buf[40] == 0x5a,
	      "UD: answered through ibv_create_ah_from_wc");
	if (ah)
		ibv_destroy_ah(ah);
	if (back)
		ibv_destroy_ah(back);
	side_close(&a);
	side_close(&b);
}

/* What falcon lacks: refused as a device without the capability, no crash. */
static void lacking(const char *sa)
{
	struct side a;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RAW_PACKET, .cap = { .max_send_wr = 1 } };
	struct ibv_cq_init_attr_ex cx = { .cqe = 4 };
	struct ibv_device_attr_ex dx;
	struct ibv_mw *mw;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_cq_ex *cq;

	side_init(&a, sa, 16, 16);
	errno = 0;
	mw = ibv_alloc_mw(a.pd, IBV_MW_TYPE_1);
	check(!mw && errno == EOPNOTSUPP, "memory windows: ibv_alloc_mw NULL, EOPNOTSUPP");
	errno = 0;
	mr = ibv_reg_mr(a.pd, a.buf, sizeof(a.buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	check(!mr && errno == EOPNOTSUPP, "ODP: ibv_reg_mr(ON_DEMAND) NULL, EOPNOTSUPP");
	check(!ibv_query_device_ex(a.ctx, NULL, &dx) && !dx.odp_caps.general_caps &&
	      !dx.orig_attr.max_mw, "ibv_query_device_ex: no ODP caps, max_mw 0");
	ia.send_cq = ia.recv_cq = a.cq;
	errno = 0;
	qp = ibv_create_qp(a.pd, &ia);
	check(!qp && errno == EOPNOTSUPP, "raw packet QP: NULL, EOPNOTSUPP");
	ia.qp_type = IBV_QPT_UC;
	errno = 0;
	qp = ibv_create_qp(a.pd, &ia);
	check(!qp && errno == EOPNOTSUPP, "UC QP: NULL, EOPNOTSUPP");
	errno = 0;
	cq = ibv_create_cq_ex(a.ctx, &cx);
	check(!cq && errno == EOPNOTSUPP, "extended CQ: NULL, EOPNOTSUPP");
	check(ibv_fork_init() == 0, "ibv_fork_init: 0");
	side_close(&a);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: verbs_abuse SOCK_A SOCK_B\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	reset_post(argv[1]);
	bad_keys(argv[1], argv[2]);
	lacking(argv[1]);
	ud_answer(argv[1], argv[2]);
	cq_too_small(argv[1], argv[2]);
	peer_gone(argv[1], argv[2]);
	return failed;
}
