/* SPDX-License-Identifier: Apache-2.0 */
/*
 * router_ctl - loads, steers and reads the test router's XDP chaos program
 * (tests/bpf/falcon_router.bpf.c). Everything lives pinned under one bpffs directory, so
 * each command is a separate run and the test script needs no process of ours to stay.
 *
 *   router_ctl attach PIN NETNS IF_A IF_B [seed=S] [KEY=VALUE...]
 *        load with the seed, attach (native XDP, bpf_link) to IF_A and IF_B inside NETNS,
 *        fill the duplication devmap with each port twice, pin maps and links under PIN
 *   router_ctl set PIN KEY=VALUE...
 *        drop_ppm, dup_ppm, port, port2: rates and ports, applied from the next packet;
 *        drop_budget, dup_budget: drop / duplicate exactly the next N target packets
 *   router_ctl wait PIN drop_budget|dup_budget TIMEOUT_MS
 *        until that budget is spent (exit 0), or 1 after TIMEOUT_MS
 *   router_ctl stats PIN [-j]     counters (summed over CPUs) and the configuration
 *   router_ctl get PIN COUNTER    one counter's value alone (for scripts)
 *   router_ctl detach PIN         unpin all (the links detach with their last pin)
 *
 * Fields of the configuration are single aligned words stored and loaded atomically
 * through an mmap of the BPF_F_MMAPABLE map: a budget the program is counting down is
 * never overwritten by a write of another field. Exit status 0 on success, 1 on a
 * failure (said on stderr), 2 on bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "falcon_router.skel.h"
#include "bpf/falcon_router.h"

#define WAIT_STEP_MS 5

static int usage(void)
{
	fprintf(stderr,
		"usage: router_ctl attach PIN NETNS IF_A IF_B [seed=S] [KEY=VALUE...]\n"
		"       router_ctl set PIN KEY=VALUE...   (drop_ppm dup_ppm port port2 drop_budget dup_budget)\n"
		"       router_ctl wait PIN drop_budget|dup_budget TIMEOUT_MS\n"
		"       router_ctl stats PIN [-j]\n"
		"       router_ctl get PIN COUNTER\n"
		"       router_ctl detach PIN\n");
	return 2;
}

static int pin_path(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Parse an unsigned decimal into *out, at most max. 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The configuration map, mapped. NULL and errno on failure. */
static struct fc_router_cfg *cfg_map(const char *dir)
{
	char path[PATH_MAX];
	void *p;
	int fd;

	if (pin_path(path, sizeof(path), dir, "cfg") < 0) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = bpf_obj_get(path);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* Apply one KEY=VALUE to the mapped configuration. 0 or -EINVAL. */
static int cfg_set(struct fc_router_cfg *c, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t klen;
	uint64_t v;

	if (!eq)
		return -EINVAL;
	klen = (size_t)(eq - kv);
#define KEY(name) (klen == sizeof(name) - 1 && !strncmp(kv, name, klen))
	if (KEY("drop_ppm") || KEY("dup_ppm")) {
		if (parse_u64(eq + 1, FC_RTR_PPM, &v) < 0)
			return -EINVAL;
		__atomic_store_n(KEY("drop_ppm") ? &c->drop_ppm : &c->dup_ppm, (uint32_t)v,
				 __ATOMIC_RELEASE);
	} else if (KEY("port") || KEY("port2")) {
		if (parse_u64(eq + 1, 65535, &v) < 0)
			return -EINVAL;
		__atomic_store_n(KEY("port") ? &c->port : &c->port2, (uint16_t)v, __ATOMIC_RELEASE);
	} else if (KEY("drop_budget") || KEY("dup_budget")) {
		if (parse_u64(eq + 1, INT64_MAX, &v) < 0)
			return -EINVAL;
		__atomic_store_n(KEY("drop_budget") ? &c->drop_budget : &c->dup_budget, (int64_t)v,
				 __ATOMIC_RELEASE);
	} else {
		return -EINVAL;
	}
#undef KEY
	return 0;
}

static int set_all(struct fc_router_cfg *c, int n, char **kv)
{
	for (int i = 0; i < n; i++) {
		if (cfg_set(c, kv[i]) < 0) {
			fprintf(stderr, "router_ctl: bad setting '%s'\n", kv[i]);
			return -EINVAL;
		}
	}
	return 0;
}

/* Move this process into network namespace /run/netns/NAME (ip netns add's). 0 or
 * -errno (-ENOENT: no such namespace). */
static int enter_netns(const char *name)
{
	char path[PATH_MAX];
	int fd, rc;

	if (snprintf(path, sizeof(path), "/run/netns/%s", name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = setns(fd, CLONE_NEWNET) ? -errno : 0;
	close(fd);
	return rc;
}

static int cmd_attach(int argc, char **argv)
{
	const char *dir = argv[0], *ns = argv[1], *ifs[2] = { argv[2], argv[3] };
	struct falcon_router *skel;
	struct fc_router_cfg *c;
	char path[PATH_MAX];
	uint64_t seed = 1;
	int first_kv = 4, rc = -1;

	if (argc > 4 && !strncmp(argv[4], "seed=", 5)) {
		if (parse_u64(argv[4] + 5, UINT64_MAX, &seed) < 0)
			return usage();
		first_kv = 5;
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "router_ctl: mkdir %s: %s\n", dir, strerror(errno));
		return 1;
	}
	rc = enter_netns(ns);
	if (rc < 0) {
		fprintf(stderr, "router_ctl: netns %s: %s\n", ns, strerror(-rc));
		return 1;
	}
	rc = -1;
	skel = falcon_router__open();
	if (!skel) {
		fprintf(stderr, "router_ctl: open: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->router_seed = seed;
	if (falcon_router__load(skel)) {
		fprintf(stderr, "router_ctl: load: %s\n", strerror(errno));
		goto out;
	}
	/* each port twice: the broadcast that excludes the ingress port sends two copies
	 * out of the other one */
	for (uint32_t k = 0; k < 4; k++) {
		uint32_t ifindex = if_nametoindex(ifs[k / 2]);

		if (!ifindex || bpf_map__update_elem(skel->maps.falcon_router_ports, &k, sizeof(k),
						     &ifindex, sizeof(ifindex), BPF_ANY)) {
			fprintf(stderr, "router_ctl: devmap entry %s: %s\n", ifs[k / 2],
				strerror(errno));
			goto out;
		}
	}
	if (pin_path(path, sizeof(path), dir, "cfg") < 0 ||
	    bpf_map__pin(skel->maps.falcon_router_cfg, path) ||
	    pin_path(path, sizeof(path), dir, "counters") < 0 ||
	    bpf_map__pin(skel->maps.falcon_router_counters, path) ||
	    pin_path(path, sizeof(path), dir, "ports") < 0 ||
	    bpf_map__pin(skel->maps.falcon_router_ports, path)) {
		fprintf(stderr, "router_ctl: pin maps under %s: %s\n", dir, strerror(errno));
		goto out;
	}
	c = cfg_map(dir);
	if (!c) {
		fprintf(stderr, "router_ctl: map cfg: %s\n", strerror(errno));
		goto out;
	}
	rc = set_all(c, argc - first_kv, argv + first_kv);
	munmap(c, (size_t)sysconf(_SC_PAGESIZE));
	if (rc < 0)
		goto out;
	rc = -1;
	for (int i = 0; i < 2; i++) {
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_DRV_MODE);
		char name[IF_NAMESIZE + 8];
		int ifindex = (int)if_nametoindex(ifs[i]), lfd;

		lfd = ifindex ? bpf_link_create(bpf_program__fd(skel->progs.falcon_router), ifindex,
						BPF_XDP, &lo) : -ENODEV;
		if (lfd < 0) {
			fprintf(stderr, "router_ctl: attach native XDP to %s: %s\n", ifs[i],
				strerror(-lfd));
			goto out;
		}
		snprintf(name, sizeof(name), "link_%s", ifs[i]);
		if (pin_path(path, sizeof(path), dir, name) < 0 || bpf_obj_pin(lfd, path)) {
			fprintf(stderr, "router_ctl: pin %s: %s\n", path, strerror(errno));
			close(lfd);
			goto out;
		}
		close(lfd);
	}
	rc = 0;
out:
	falcon_router__destroy(skel); /* the pins keep maps and links */
	return rc ? 1 : 0;
}

static int cmd_wait(const char *dir, const char *which, const char *ms_s)
{
	struct fc_router_cfg *c = cfg_map(dir);
	uint64_t ms;
	__s64 *b;

	if (!c) {
		fprintf(stderr, "router_ctl: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (parse_u64(ms_s, 3600000, &ms) < 0 ||
	    (strcmp(which, "drop_budget") && strcmp(which, "dup_budget")))
		return usage();
	b = !strcmp(which, "drop_budget") ? &c->drop_budget : &c->dup_budget;
	for (uint64_t waited = 0; waited <= ms; waited += WAIT_STEP_MS) { /* bounded by ms */
		if (__atomic_load_n(b, __ATOMIC_ACQUIRE) <= 0)
			return 0;
		nanosleep(&(struct timespec){ 0, WAIT_STEP_MS * 1000000L }, NULL);
	}
	fprintf(stderr, "router_ctl: %s still %lld after %llu ms\n", which,
		(long long)__atomic_load_n(b, __ATOMIC_ACQUIRE), (unsigned long long)ms);
	return 1;
}

/* Every counter summed over the CPUs into sum[]. 0 or -errno. */
static int read_counters(const char *dir, uint64_t sum[FC_RTR_CNT_MAX])
{
	char path[PATH_MAX];
	int ncpu = libbpf_num_possible_cpus(), fd, rc = 0;
	uint64_t *v;

	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	if (pin_path(path, sizeof(path), dir, "counters") < 0)
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v) {
		close(fd);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < FC_RTR_CNT_MAX && !rc; k++) {
		sum[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, v)) {
			rc = -errno;
			break;
		}
		for (int i = 0; i < ncpu; i++)
			sum[k] += v[i];
	}
	free(v);
	close(fd);
	return rc;
}

static int cmd_stats(const char *dir, int json, const char *one)
{
	uint64_t sum[FC_RTR_CNT_MAX];
	struct fc_router_cfg *c = cfg_map(dir);
	int rc;

	if (!c) {
		fprintf(stderr, "router_ctl: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	rc = read_counters(dir, sum);
	if (rc < 0) {
		fprintf(stderr, "router_ctl: counters: %s\n", strerror(-rc));
		return 1;
	}
	int64_t drop_b = __atomic_load_n(&c->drop_budget, __ATOMIC_ACQUIRE);
	int64_t dup_b = __atomic_load_n(&c->dup_budget, __ATOMIC_ACQUIRE);

	/* a budget spent by CPUs racing at 1 ends below 0: nothing is left */
	drop_b = drop_b < 0 ? 0 : drop_b;
	dup_b = dup_b < 0 ? 0 : dup_b;
	if (one) {
		for (unsigned i = 0; i < FC_RTR_CNT_MAX; i++) {
			if (!strcmp(one, fc_router_cnt_name(i))) {
				printf("%llu\n", (unsigned long long)sum[i]);
				return 0;
			}
		}
		fprintf(stderr, "router_ctl: no counter '%s'\n", one);
		return 2;
	}
	if (json) {
		printf("{\"counters\":{");
		for (unsigned i = 0; i < FC_RTR_CNT_MAX; i++)
			printf("%s\"%s\":%llu", i ? "," : "", fc_router_cnt_name(i),
			       (unsigned long long)sum[i]);
		printf("},\"config\":{\"drop_ppm\":%u,\"dup_ppm\":%u,\"port\":%u,\"port2\":%u,"
		       "\"drop_budget\":%lld,\"dup_budget\":%lld}}\n",
		       c->drop_ppm, c->dup_ppm, c->port, c->port2, (long long)drop_b,
		       (long long)dup_b);
		return 0;
	}
	printf("config: drop %u ppm, dup %u ppm, port %u, port2 %u, budgets drop %lld dup %lld\n",
	       c->drop_ppm, c->dup_ppm, c->port, c->port2, (long long)drop_b, (long long)dup_b);
	for (unsigned i = 0; i < FC_RTR_CNT_MAX; i++)
		printf("  %-14s %llu\n", fc_router_cnt_name(i), (unsigned long long)sum[i]);
	return 0;
}

/* Remove every pin under dir (links, named link_IFNAME, and maps), then dir. The links
 * detach from their interfaces with their last reference. 0 or 1. */
static int cmd_detach(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);
	int rc = 0, n = 0;

	if (!d)
		return errno == ENOENT ? 0 : 1;
	while ((e = readdir(d)) && n++ < 64) { /* we pin 5 files */
		if (e->d_name[0] == '.')
			continue;
		if (pin_path(path, sizeof(path), dir, e->d_name) < 0 || unlink(path)) {
			fprintf(stderr, "router_ctl: unlink %s: %s\n", path, strerror(errno));
			rc = 1;
		}
	}
	closedir(d);
	if (rmdir(dir)) {
		fprintf(stderr, "router_ctl: rmdir %s: %s\n", dir, strerror(errno));
		rc = 1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct fc_router_cfg *c;
	int rc;

	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "attach") && argc >= 6)
		return cmd_attach(argc - 2, argv + 2);
	if (!strcmp(argv[1], "set") && argc >= 4) {
		c = cfg_map(argv[2]);
		if (!c) {
			fprintf(stderr, "router_ctl: %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		rc = set_all(c, argc - 3, argv + 3);
		return rc < 0 ? 2 : 0;
	}
	if (!strcmp(argv[1], "wait") && argc == 5)
		return cmd_wait(argv[2], argv[3], argv[4]);
	if (!strcmp(argv[1], "stats"))
		return cmd_stats(argv[2], argc > 3 && !strcmp(argv[3], "-j"), NULL);
	if (!strcmp(argv[1], "get") && argc == 4)
		return cmd_stats(argv[2], 0, argv[3]);
	if (!strcmp(argv[1], "detach"))
		return cmd_detach(argv[2]);
	return usage();
}
