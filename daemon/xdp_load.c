/* SPDX-License-Identifier: Apache-2.0 */
/* xdp_load.c - load, attach, pin and map falcon_xdp (xdp_load.h). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "falcon_xdp.skel.h"
#include "log.h"
#include "xdp_load.h"

#define DIR_ENTRIES_MAX 64u /* entries removed from a stale pin directory, at most */

int fc_xdp_instance_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!n || n >= FC_XDP_INSTANCE_MAX || name[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

int fc_xdp_find_if(const struct sockaddr *addr, char *ifname, unsigned *ifindex)
{
	struct ifaddrs *all, *i;
	int rc = -ENODEV;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (getifaddrs(&all) < 0)
		return -errno;
	for (i = all; i; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr;

		if (!a || a->sa_family != addr->sa_family)
			continue;
		if (a->sa_family == AF_INET ?
		    memcmp(&((const struct sockaddr_in *)a)->sin_addr,
			   &((const struct sockaddr_in *)addr)->sin_addr, 4) :
		    memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			   &((const struct sockaddr_in6 *)addr)->sin6_addr, 16))
			continue;
		snprintf(ifname, IF_NAMESIZE, "%s", i->ifa_name);
		*ifindex = if_nametoindex(ifname);
		rc = *ifindex ? 0 : -ENODEV;
		break;
	}
	freeifaddrs(all);
	return rc;
}

static void why_set(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void why_set(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* libbpf's own messages: debug lines (the caller logs the one line that matters) */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	if (fc_log_level < FC_LOG_DEBUG || level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = 0;
	fc_log(FC_LOG_DEBUG, "libbpf: %s", line);
	return 0;
}

static int if_mtu(const char *ifname, unsigned *mtu)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0)
		rc = -errno;
	else
		*mtu = (unsigned)ifr.ifr_mtu;
	close(fd);
	return rc;
}

/* bpffs at FC_XDP_BPFFS, mounted if it is not. */
static int bpffs_ready(char *why, size_t wl)
{
	struct statfs st;

	if (statfs(FC_XDP_BPFFS, &st) == 0 && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", FC_XDP_BPFFS, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0) {
		int e = errno;

		why_set(why, wl, "cannot mount bpffs at %s: %s", FC_XDP_BPFFS, strerror(e));
		return -e;
	}
	LOG_I("xdp: mounted bpffs at %s", FC_XDP_BPFFS);
	return 0;
}

/* Remove what a falcond of this instance that did not stop cleanly left in dir. */
static int pins_clean(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];
	unsigned n = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) && n++ < DIR_ENTRIES_MAX) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) == 0)
			LOG_W("xdp: removed stale pin %s", path);
	}
	closedir(d);
	return 0;
}

static int need_map(struct fc_xdp_prog *p, const char *name, struct bpf_map **m, char *why,
		    size_t wl)
{
	*m = bpf_object__find_map_by_name(p->skel->obj, name);
	if (!*m) {
		why_set(why, wl, "the XDP object has no map %s (bpf/falcon_xdp.bpf.c too old)",
			name);
		return -ENOENT;
	}
	return 0;
}

static int attach(struct fc_xdp_prog *p, char *why, size_t wl)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_DRV_MODE);
	int fd = bpf_program__fd(p->skel->progs.falcon_xdp_rx), e;

	p->link_fd = bpf_link_create(fd, (int)p->ifindex, BPF_XDP, &lo);
	if (p->link_fd >= 0) {
		p->mode = "native";
		return 0;
	}
	e = errno;
	if (e == EOPNOTSUPP)
		why_set(why, wl, "%s has no native XDP (driver without XDP support)", p->ifname);
	else if (e == ERANGE)
		why_set(why, wl, "%s's MTU %u is above what its driver takes with a single-buffer "
			"XDP program (veth: about 3500 bytes)", p->ifname, p->if_mtu);
	else if (e == EBUSY || e == EEXIST)
		why_set(why, wl, "another XDP program is attached to %s", p->ifname);
	else
		why_set(why, wl, "attach to %s: %s", p->ifname, strerror(e));
	return -e;
}

static int pin_all(struct fc_xdp_prog *p, char *why, size_t wl)
{
	struct bpf_map *m;
	char path[256];
	int rc;

	if ((rc = bpffs_ready(why, wl)))
		return rc;
	if ((mkdir(FC_XDP_PIN_ROOT, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(p->pin_dir, 0700) < 0 && errno != EEXIST)) {
		rc = -errno;
		why_set(why, wl, "mkdir %s: %s", p->pin_dir, strerror(-rc));
		return rc;
	}
	if ((rc = pins_clean(p->pin_dir))) {
		why_set(why, wl, "%s: %s", p->pin_dir, strerror(-rc));
		return rc;
	}
	bpf_object__for_each_map(m, p->skel->obj) {
		if (bpf_map__is_internal(m))
			continue; /* .rodata and friends: nothing to share */
		snprintf(path, sizeof(path), "%s/%s", p->pin_dir, bpf_map__name(m));
		if ((rc = bpf_map__pin(m, path))) {
			why_set(why, wl, "pin %s: %s", path, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static int map_conns(struct fc_xdp_prog *p, struct bpf_map *m, char *why, size_t wl)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t bytes = (size_t)p->conns_n * sizeof(struct fc_xdp_conn);

	if (bpf_map__value_size(m) != sizeof(struct fc_xdp_conn)) {
		why_set(why, wl, "falcon_conns values are %u bytes, falcond's struct fc_xdp_conn "
			"%zu: the object and falcond were built from different headers",
			bpf_map__value_size(m), sizeof(struct fc_xdp_conn));
		return -EPROTO;
	}
	p->conns_map_bytes = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
	p->conns = mmap(NULL, p->conns_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(m), 0);
	if (p->conns == MAP_FAILED) {
		int e = errno;

		p->conns = NULL;
		why_set(why, wl, "mmap falcon_conns: %s (created without BPF_F_MMAPABLE?)",
			strerror(e));
		return -e;
	}
	return 0;
}

int fc_xdp_load(const struct fc_xdp_load_cfg *cfg, struct fc_xdp_prog **out, char *why,
		size_t wl)
{
	struct bpf_map *conns, *conn_cnt, *cnt, *xsks;
	struct bpf_prog_info info = { 0 };
	__u32 ilen = sizeof(info);
	struct fc_xdp_prog *p;
	int rc;

	why_set(why, wl, "%s", "");
	if (!cfg->listen || !cfg->max_conns || !fc_xdp_instance_ok(cfg->instance)) {
		why_set(why, wl, "bad configuration (instance '%s')",
			cfg->instance ? cfg->instance : "");
		return -EINVAL;
	}
	if (!(p = calloc(1, sizeof(*p))))
		return -ENOMEM;
	p->link_fd = -1;
	snprintf(p->pin_dir, sizeof(p->pin_dir), "%s/%s", FC_XDP_PIN_ROOT, cfg->instance);
	libbpf_set_print(libbpf_print);
	if ((rc = fc_xdp_find_if(cfg->listen, p->ifname, &p->ifindex))) {
		why_set(why, wl, "no interface has the listen address (%s)", strerror(-rc));
		goto fail;
	}
	if ((rc = if_mtu(p->ifname, &p->if_mtu))) {
		why_set(why, wl, "MTU of %s: %s", p->ifname, strerror(-rc));
		goto fail;
	}
	if (!(p->skel = falcon_xdp__open())) {
		rc = -errno;
		why_set(why, wl, "open the XDP object: %s", strerror(-rc));
		goto fail;
	}
	p->skel->rodata->falcon_port = cfg->data_port;
	if ((rc = need_map(p, "falcon_conns", &conns, why, wl)) ||
	    (rc = need_map(p, "falcon_conn_counters", &conn_cnt, why, wl)) ||
	    (rc = need_map(p, "falcon_counters", &cnt, why, wl)) ||
	    (rc = need_map(p, "falcon_xsks", &xsks, why, wl)))
		goto fail;
	p->conns_n = cfg->max_conns;
	if ((rc = bpf_map__set_max_entries(conns, p->conns_n)) ||
	    (rc = bpf_map__set_max_entries(conn_cnt, p->conns_n))) {
		why_set(why, wl, "size falcon_conns: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = falcon_xdp__load(p->skel))) {
		why_set(why, wl, "load the XDP program: %s%s", strerror(-rc),
			rc == -EPERM ? " (needs CAP_BPF, CAP_NET_ADMIN: run as root)" : "");
		goto fail;
	}
	p->conns_fd = bpf_map__fd(conns);
	p->conn_counters_fd = bpf_map__fd(conn_cnt);
	p->counters_fd = bpf_map__fd(cnt);
	p->xsks_fd = bpf_map__fd(xsks);
	if ((rc = map_conns(p, conns, why, wl)) || (rc = attach(p, why, wl)))
		goto fail;
	if (bpf_obj_get_info_by_fd(bpf_program__fd(p->skel->progs.falcon_xdp_rx), &info, &ilen) == 0)
		p->prog_id = info.id;
	if ((rc = pin_all(p, why, wl)))
		goto fail;
	*out = p;
	return 0;
fail:
	fc_xdp_unload(p);
	return rc;
}

void fc_xdp_unload(struct fc_xdp_prog *p)
{
	struct bpf_map *m;

	if (!p)
		return;
	if (p->conns)
		munmap(p->conns, p->conns_map_bytes);
	if (p->skel) {
		bpf_object__for_each_map(m, p->skel->obj) {
			if (bpf_map__is_pinned(m))
				bpf_map__unpin(m, NULL);
		}
		if (p->pin_dir[0] && rmdir(p->pin_dir) == 0)
			rmdir(FC_XDP_PIN_ROOT); /* each only if empty: another instance may run */
	}
	if (p->link_fd >= 0)
		close(p->link_fd); /* detaches */
	falcon_xdp__destroy(p->skel);
	free(p);
}
