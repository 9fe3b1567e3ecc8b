/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xdp_load.h - falcond's BPF loader (DESIGN.md, "What the daemon does": BPF loader): the
 * falcon_xdp skeleton opened with its load-time knobs, loaded, attached in native mode
 * to the interface that owns the listen address, its maps pinned for falconctl and
 * bpftool, falcon_conns mapped into falcond for the node.
 *
 *   fc_xdp_load: getifaddrs -> interface; skeleton open, rodata falcon_port, falcon_conns
 *     max_entries = max_conns; load; bpf_link (XDP_FLAGS_DRV_MODE); bpffs mounted at
 *     /sys/fs/bpf if it is not; stale pins of the instance removed, every map pinned
 *     under /sys/fs/bpf/falcon/<instance>/<map>; falcon_conns mmap'd.
 *   fc_xdp_unload: unmap, unpin (and the instance directory), detach (close the link).
 *
 * The program is attached through a BPF link held by falcond, never pinned: a falcond that
 * dies detaches it (the kernel closes the link); only its map pins can outlive it, and the
 * next start of the same instance removes them. Native mode only: generic (SKB) XDP runs
 * after the kernel has built an skb, which is the cost the fast path is there to avoid,
 * so where the driver has no XDP the caller falls back to the UDP backend instead.
 */
#ifndef FC_XDP_LOAD_H
#define FC_XDP_LOAD_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "falcon/xdp_conn.h"

#define FC_XDP_BPFFS "/sys/fs/bpf"
#define FC_XDP_PIN_ROOT FC_XDP_BPFFS "/falcon"
#define FC_XDP_INSTANCE_MAX 32u /* bytes of an instance name, NUL included */

struct falcon_xdp;

struct fc_xdp_load_cfg {
	const struct sockaddr *listen; /* the data address: its interface gets the program */
	socklen_t listen_len;
	uint16_t data_port;            /* rodata falcon_port */
	uint32_t max_conns;            /* falcon_conns entries (node slots) */
	const char *instance;          /* pin directory name (fc_xdp_instance_ok) */
};

struct fc_xdp_prog {
	struct falcon_xdp *skel;
	int link_fd;                   /* the attachment; closing it detaches */
	char ifname[IF_NAMESIZE];
	unsigned ifindex;
	unsigned if_mtu;               /* the interface's MTU (IP bytes) */
	uint32_t prog_id;
	const char *mode;              /* "native" */
	char pin_dir[128];             /* FC_XDP_PIN_ROOT/<instance> */
	struct fc_xdp_conn *conns;     /* falcon_conns, mapped: conns_n entries */
	uint32_t conns_n;
	size_t conns_map_bytes;
	int conns_fd, conn_counters_fd, counters_fd, xsks_fd; /* map fds (owned by skel) */
};

/* Is name a usable instance name: 1..FC_XDP_INSTANCE_MAX-1 bytes of [A-Za-z0-9_-], not
 * starting with '-'. */
int fc_xdp_instance_ok(const char *name);

/* The interface that owns addr (an AF_INET / AF_INET6 address; the port is ignored).
 * Returns 0 with ifname (IF_NAMESIZE bytes) and *ifindex, -ENODEV (no interface has it),
 * -EAFNOSUPPORT, or the errno of getifaddrs. */
int fc_xdp_find_if(const struct sockaddr *addr, char *ifname, unsigned *ifindex);

/* Load, attach and pin (see above). Returns 0 and *out, or -errno with the reason in why
 * (one line, no newline, for the caller's one log line):
 * -EINVAL (bad cfg or instance), -ENODEV (no interface owns the address), -EOPNOTSUPP
 * (the driver has no native XDP), -ERANGE (the interface's MTU is above what XDP without
 * multi-buffer takes, e.g. veth above ~3500 bytes), -EBUSY (another XDP program is
 * attached there), -ENOENT (the object lacks a map falcond needs), -EPERM (no
 * CAP_BPF / CAP_NET_ADMIN / CAP_SYS_ADMIN), or what libbpf reports. Nothing is left
 * attached, pinned or mapped on failure. */
int fc_xdp_load(const struct fc_xdp_load_cfg *cfg, struct fc_xdp_prog **out, char *why,
		size_t why_len);

/* Unmap, unpin, detach, free. NULL is a no-op. */
void fc_xdp_unload(struct fc_xdp_prog *p);

#endif
