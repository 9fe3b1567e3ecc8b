/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target of falcond's client API: a real daemon (node, CM, API and admin
 * sockets, libev loop) runs in this process; each input is a client session. The input
 * is cut into messages (2 bytes of length, then the bytes; a length with bit 15 set also
 * passes a sealed memfd along), which are sent on a fresh SOCK_SEQPACKET connection to
 * the API socket; the loop runs after each so the daemon decodes and answers. The first
 * message is a valid HELLO when the input's first byte is even, so that most inputs get
 * past the handshake. What must hold: no crash, no sanitizer report, and the daemon keeps
 * serving (a second client's ALLOC_PD succeeds after every session) and holds no more
 * descriptors after a session than before it.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "falcon/api.h"
#include "falcond.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
	       socklen_t tolen);

/* CONNECT, MODIFY_QP and CREATE_AH carry a peer address from the input, and the CM sends
 * its REQ there: this target's sendto (it takes the place of libc's) lets datagrams go to
 * loopback only and drops the rest as a lossy network would. */
ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
	       socklen_t tolen)
{
	static ssize_t (*real)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	int local = !to;

	if (to && to->sa_family == AF_INET && tolen >= sizeof(struct sockaddr_in))
		local = (ntohl(((const struct sockaddr_in *)(const void *)to)->sin_addr.s_addr) >> 24) == 127;
	else if (to && to->sa_family == AF_INET6 && tolen >= sizeof(struct sockaddr_in6))
		local = IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)(const void *)to)->sin6_addr);
	if (!local)
		return (ssize_t)len;
	if (!real)
		real = (ssize_t (*)(int, const void *, size_t, int, const struct sockaddr *,
				    socklen_t))dlsym(RTLD_NEXT, "sendto");
	return real(fd, buf, len, flags, to, tolen);
}
int falcond_start(struct fd_daemon *d);

static struct fd_daemon d;
static char dir[64];

#define REQUIRE(c) do { if (!(c)) { fprintf(stderr, "fuzz_api: %s\n", #c); abort(); } } while (0)

static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void print_fds(void)
{
	for (int fd = 0; fd < 4096; fd++) {
		char path[64], target[256];
		ssize_t n;

		if (fcntl(fd, F_GETFD) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = 0;
		fprintf(stderr, "  fd %d -> %s\n", fd, target);
	}
}

static void run_loop(void)
{
	for (int i = 0; i < 4; i++)
		ev_run(d.loop, EVRUN_NOWAIT);
}

static int connect_api(void)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	snprintf(un.sun_path, sizeof(un.sun_path), "%s", d.cfg.api_path);
	REQUIRE(fd >= 0 && connect(fd, (struct sockaddr *)&un, sizeof(un)) == 0);
	run_loop(); /* the daemon accepts */
	return fd;
}

static void send_msg(int fd, const void *buf, size_t len, int pass_fd)
{
	(void)fc_api_send(fd, buf, len, &pass_fd, pass_fd >= 0, MSG_DONTWAIT);
	run_loop();
}

/* Read and drop the replies (closing descriptors they carry). Returns the last status. */
static int drain(int fd)
{
	int last = 1;

	for (int i = 0; i < 64; i++) {
		uint8_t buf[FC_API_MSG_MAX];
		union {
			struct cmsghdr c;
			char room[CMSG_SPACE(sizeof(int) * 4)];
		} cm;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.room,
				    .msg_controllen = sizeof(cm.room) };
		ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n <= 0)
			break;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
				int x;

				memcpy(&x, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
				close(x);
			}
		if ((size_t)n >= sizeof(struct fc_api_hdr))
			last = ((struct fc_api_hdr *)buf)->status;
	}
	return last;
}

static void hello(int fd)
{
	uint8_t buf[sizeof(struct fc_api_hdr) + sizeof(struct fc_api_hello)];
	struct fc_api_hdr *h = (void *)buf;
	struct fc_api_hello *b = (void *)(h + 1);
	int ev = eventfd(0, EFD_CLOEXEC);

	*h = (struct fc_api_hdr){ .hdr_size = sizeof(*h), .version = FC_API_VERSION,
				  .type = FC_API_HELLO, .len = sizeof(buf), .seq = 1 };
	*b = (struct fc_api_hello){ .client_version = FC_API_VERSION };
	send_msg(fd, buf, sizeof(buf), ev);
	close(ev);
}

static void cleanup(void)
{
	unlink(d.cfg.api_path);
	unlink(d.cfg.admin_path);
	rmdir(dir);
}

static void init(void)
{
	snprintf(dir, sizeof(dir), "/tmp/falcon-fuzz-api.%d", (int)getpid());
	mkdir(dir, 0700);
	memset(&d, 0, sizeof(d));
	fd_cfg_default(&d.cfg);
	snprintf(d.cfg.api_path, sizeof(d.cfg.api_path), "%s/api.sock", dir);
	snprintf(d.cfg.admin_path, sizeof(d.cfg.admin_path), "%s/admin.sock", dir);
	d.cfg.data_port = 0; /* any free port */
	d.cfg.cm_port = 0;
	d.cfg.cm_retry_ms = 1;
	d.cfg.cm_retries = 2;
	d.cfg.security = FD_SEC_NONE; /* no identity key here */
	fc_log_level = FC_LOG_ERR;
	d.loop = ev_default_loop(EVFLAG_AUTO);
	d.start_ns = fd_now_ns();
	REQUIRE(falcond_start(&d) == 0);
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	int fd, mfd = -1, fds_before;
	size_t off = 1;

	if (!ready) {
		init();
		ready = 1;
	}
	if (!size)
		return 0;
	/* counted anew for each session: between two inputs libFuzzer itself may open
	 * descriptors (the pipes to llvm-symbolizer when it names a NEW_FUNC) */
	fds_before = count_fds();
	fd = connect_api();
	if (!(data[0] & 1))
		hello(fd);
	for (int k = 0; k < 16 && off + 2 <= size; k++) {
		uint16_t len = (uint16_t)(data[off] | data[off + 1] << 8);
		int pass = len & 0x8000;

		off += 2;
		len &= 0x7FFF;
		if (len > size - off)
			len = (uint16_t)(size - off);
		if (pass && mfd < 0) {
			mfd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
			REQUIRE(mfd >= 0 && ftruncate(mfd, 1 << 20) == 0);
			if (data[0] & 2)
				fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
		}
		send_msg(fd, data + off, len, pass ? mfd : -1);
		drain(fd);
		off += len;
	}
	close(fd);
	if (mfd >= 0)
		close(mfd);
	run_loop(); /* the daemon sees the disconnect and releases everything */
	/* another client is served */
	fd = connect_api();
	hello(fd);
	REQUIRE(drain(fd) == 0);
	{
		struct fc_api_hdr h = { .hdr_size = sizeof(h), .version = FC_API_VERSION,
					.type = FC_API_ALLOC_PD, .len = sizeof(h), .seq = 2 };

		send_msg(fd, &h, sizeof(h), -1);
		REQUIRE(drain(fd) == 0);
	}
	close(fd);
	run_loop();
	REQUIRE(fd_api_nclients(d.api) == 0);
	/* a session leaves no descriptor behind in the daemon */
	if (count_fds() != fds_before) {
		fprintf(stderr, "fuzz_api: %d descriptors before the session, %d after:\n",
			fds_before, count_fds());
		print_fds();
		abort();
	}
	return 0;
}
