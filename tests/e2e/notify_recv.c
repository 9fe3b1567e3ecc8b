/* SPDX-License-Identifier: Apache-2.0 */
/*
 * notify_recv - stands in for systemd's notification socket in tests: binds a datagram
 * socket at PATH and prints every message it receives (its lines joined by " | "), one
 * per output line, for SECONDS seconds or until a message contains STOPPING=1.
 *   notify_recv PATH SECONDS
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct timespec t0, t;
	int fd, ms;

	if (argc != 3 || strlen(argv[1]) >= sizeof(un.sun_path)) {
		fprintf(stderr, "usage: notify_recv PATH SECONDS\n");
		return 2;
	}
	ms = atoi(argv[2]) * 1000;
	strcpy(un.sun_path, argv[1]);
	unlink(argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
		perror("notify_recv");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char buf[1024];
		ssize_t n;
		int left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, left) <= 0)
			break;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = 0;
		for (char *c = buf; *c; c++)
			if (*c == '\n')
				*c = '|';
		printf("%s\n", buf);
		if (strstr(buf, "STOPPING=1"))
			break;
	}
	unlink(argv[1]);
	return 0;
}
