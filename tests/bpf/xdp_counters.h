/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xdp_counters.h - the XDP program's global counters as the BPF tests read and check
 * them (falcon_counters, include/falcon/xdp_stats.h): one reader and one delta check for
 * every test program, not a copy each. Include after <cmocka.h> and <bpf/bpf.h>.
 */
#ifndef FC_TEST_XDP_COUNTERS_H
#define FC_TEST_XDP_COUNTERS_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "falcon/xdp_stats.h"

/* Every counter of the per-CPU map fd, summed over the possible CPUs. */
static inline void xdp_counters_read(int fd, uint64_t out[FC_XDP_CNT_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	uint32_t k;

	assert_true(ncpu > 0);
	vals = calloc((size_t)ncpu, sizeof(*vals));
	assert_non_null(vals);
	for (k = 0; k < FC_XDP_CNT_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals)) {
			free(vals);
			fail_msg("lookup of counter %u: %s", k, strerror(errno));
		}
		out[k] = 0;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
}

/* Fails (naming the counter) unless every counter moved from before to after by want. */
static inline void xdp_counters_check(const uint64_t before[FC_XDP_CNT_MAX],
				      const uint64_t after[FC_XDP_CNT_MAX],
				      const uint64_t want[FC_XDP_CNT_MAX], const char *what)
{
	for (unsigned i = 0; i < FC_XDP_CNT_MAX; i++) {
		if (after[i] - before[i] != want[i])
			fail_msg("%s: counter %s moved by %llu, want %llu", what,
				 fc_xdp_cnt_name(i), (unsigned long long)(after[i] - before[i]),
				 (unsigned long long)want[i]);
	}
}

#endif
