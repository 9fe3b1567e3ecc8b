/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The window.h vectors run inside a BPF program under BPF_PROG_TEST_RUN, step by step,
 * next to the same step run natively on a userspace copy: the verifier accepts the shared
 * code, and both worlds give the expected value at every step.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "window_vec.skel.h"
#include "window_vectors.h"

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void test_vectors_in_bpf(void **state)
{
	struct window_vec *skel;
	struct fc_rx_state *native = calloc(1, sizeof(*native));
	int prog_fd;
	size_t i;

	(void)state;
	assert_non_null(native);
	libbpf_set_print(print_libbpf);
	skel = window_vec__open_and_load();
	if (!skel)
		fail_msg("loading window_vec.bpf.o failed: %s", strerror(errno));
	prog_fd = bpf_program__fd(skel->progs.window_vec_step);

	for (i = 0; i < FC_WVEC_COUNT; i++) {
		unsigned char in[64] = {0}, out[64] = {0};
		uint64_t got_bpf, got_native;
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = sizeof(in),
			    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

		memcpy(in, &fc_wvec_all[i], sizeof(fc_wvec_all[i]));
		assert_int_equal(bpf_prog_test_run_opts(prog_fd, &opts), 0);
		assert_int_equal(opts.retval, 3 /* XDP_TX */);
		memcpy(&got_bpf, out, sizeof(got_bpf));
		got_native = fc_wvec_exec(native, &fc_wvec_all[i]);
		if (got_bpf != fc_wvec_all[i].expect || got_native != got_bpf)
			fail_msg("step %zu (op %u win %u a %u): bpf %#llx native %#llx want %#llx", i,
				 fc_wvec_all[i].op, fc_wvec_all[i].win, fc_wvec_all[i].a,
				 (unsigned long long)got_bpf, (unsigned long long)got_native,
				 (unsigned long long)fc_wvec_all[i].expect);
	}

	/* the BPF map's final window state equals the native one, slot for slot */
	struct fc_rx_state *mapped = calloc(1, sizeof(*mapped));
	uint32_t key = 0;
	assert_non_null(mapped);
	assert_int_equal(bpf_map__lookup_elem(skel->maps.wvec_state, &key, sizeof(key), mapped,
					      sizeof(*mapped), 0), 0);
	assert_int_equal(mapped->req.base, native->req.base);
	assert_int_equal(mapped->data.base, native->data.base);
	assert_memory_equal(mapped->req.slot, native->req.slot, 2 * FC_REQ_WIN * sizeof(__u64));
	assert_memory_equal(mapped->data.slot, native->data.slot, 2 * FC_DATA_WIN * sizeof(__u64));
	free(mapped);
	free(native);
	window_vec__destroy(skel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_in_bpf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
