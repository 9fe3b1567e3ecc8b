/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_xdp_parse.c - bpf/falcon_xdp.bpf.c under BPF_PROG_TEST_RUN.
 *
 * The integrity checks of spec 9.2.2.1 and the parser. Every fixture states its verdict
 * and the exact counter deltas (every counter not listed must not move), and the output
 * packet must equal the input (nothing here reaches a path that writes). Fixtures come
 * from tests/bpf/pktbuild.h; their CID (PKT_CID) names no connection (falcon_conns is
 * empty), so a packet that passes every integrity check is dropped as an unknown CID.
 * The fast path behind the CID lookup: test_xdp_fast.c. Frames shorter than an Ethernet
 * header cannot be tried: BPF_PROG_TEST_RUN (kernel 6.18) refuses them with EINVAL. A load failure is a test failure
 * with libbpf's log printed, never a skip.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "falcon/xdp_stats.h"
#include "falcon_xdp.skel.h"
#include "pktbuild.h"
#include "xdp_counters.h"

#define OTHER_PORT 4791u

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level > LIBBPF_WARN)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Open, set the port, load (which runs the verifier). NULL after printing why. */
static struct falcon_xdp *load_xdp(uint16_t port)
{
	struct falcon_xdp *skel = falcon_xdp__open();
	int err;

	if (!skel) {
		fprintf(stderr, "falcon_xdp__open: %s\n", strerror(errno));
		return NULL;
	}
	skel->rodata->falcon_port = port;
	err = falcon_xdp__load(skel);
	if (err) {
		fprintf(stderr, "falcon_xdp__load: %s\n", strerror(-err));
		falcon_xdp__destroy(skel);
		return NULL;
	}
	return skel;
}

static int setup(void **state)
{
	*state = load_xdp(FC_UDP_PORT_DEFAULT);
	return 0; /* each test asserts the load worked, so a failure fails every test */
}

static int teardown(void **state)
{
	falcon_xdp__destroy(*state);
	return 0;
}

static struct falcon_xdp *skel_of(void **state)
{
	if (!*state)
		fail_msg("BPF program failed to load (libbpf log above)");
	return *state;
}

static void read_counters(struct falcon_xdp *skel, uint64_t out[FC_XDP_CNT_MAX])
{
	xdp_counters_read(bpf_map__fd(skel->maps.falcon_counters), out);
}

/* Run frame (len bytes) once and check: verdict, output == input, each counter in
 * inc[] up by one, every other counter unchanged. */
static void run_frame(struct falcon_xdp *skel, const uint8_t *frame, size_t len, int verdict,
		      const uint32_t *inc, size_t ninc, const char *what)
{
	uint8_t out[PKT_MAX + 64];
	uint64_t before[FC_XDP_CNT_MAX], after[FC_XDP_CNT_MAX], want[FC_XDP_CNT_MAX] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (uint32_t)len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);
	size_t i;
	int err;

	assert_true(len <= PKT_MAX);
	for (i = 0; i < ninc; i++)
		want[inc[i]]++;
	read_counters(skel, before);
	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.falcon_xdp_rx), &opts);
	if (err)
		fail_msg("%s: BPF_PROG_TEST_RUN: %s", what, strerror(-err));
	read_counters(skel, after);

	if ((int)opts.retval != verdict)
		fail_msg("%s: verdict %u, want %d", what, opts.retval, verdict);
	if (opts.data_size_out != len || memcmp(frame, out, len) != 0)
		fail_msg("%s: packet modified (%u bytes out, %zu in)", what, opts.data_size_out,
			 len);
	xdp_counters_check(before, after, want, what);
}

static void run_pkt(struct falcon_xdp *skel, const struct pkt *p, int verdict, const uint32_t *inc,
		    size_t ninc, const char *what)
{
	assert_false(p->overflow);
	run_frame(skel, p->b, p->len, verdict, inc, ninc, what);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static uint32_t cnt_ip(int ipv6)
{
	return ipv6 ? FC_XDP_CNT_FALCON_IPV6 : FC_XDP_CNT_FALCON_IPV4;
}

static void expect_not_falcon(struct falcon_xdp *skel, const struct pkt *p, const char *what)
{
	const uint32_t inc[] = { FC_XDP_CNT_RX, FC_XDP_CNT_NOT_FALCON };

	run_pkt(skel, p, XDP_PASS, inc, N_OF(inc), what);
}

/* Passed every integrity check, counted by type, then dropped: no connection has its CID. */
static void expect_valid(struct falcon_xdp *skel, const struct pkt *p, int ipv6, uint32_t type,
			 const char *what)
{
	const uint32_t inc[] = { FC_XDP_CNT_RX, cnt_ip(ipv6), FC_XDP_CNT_FALCON_OK,
				 FC_XDP_CNT_PKT_TYPE_0 + type, FC_XDP_CNT_REJECT,
				 FC_XDP_CNT_REJECT_UNKNOWN_CID };

	run_pkt(skel, p, XDP_DROP, inc, N_OF(inc), what);
}

static void expect_encrypted(struct falcon_xdp *skel, const struct pkt *p, int ipv6,
			     const char *what)
{
	const uint32_t inc[] = { FC_XDP_CNT_RX, cnt_ip(ipv6), FC_XDP_CNT_FALCON_OK,
				 FC_XDP_CNT_ENCRYPTED, FC_XDP_CNT_REJECT,
				 FC_XDP_CNT_REJECT_UNKNOWN_CID };

	run_pkt(skel, p, XDP_DROP, inc, N_OF(inc), what);
}

static void expect_drop(struct falcon_xdp *skel, const struct pkt *p, int ipv6, uint32_t reason,
			const char *what)
{
	const uint32_t inc[] = { FC_XDP_CNT_RX, cnt_ip(ipv6), FC_XDP_CNT_DROP, reason };

	run_pkt(skel, p, XDP_DROP, inc, N_OF(inc), what);
}

/* The seven packet types of spec 7.2 - 7.8 (values written by hand). */
static const uint8_t all_types[] = { 0x0, 0x3, 0x5, 0x6, 0x8, 0x9, 0xA };

/* ------------------------------------------------------------------------ */

static void test_load_info(void **state)
{
	struct falcon_xdp *skel = skel_of(state);
	struct bpf_prog_info info;
	uint32_t info_len = sizeof(info);

	memset(&info, 0, sizeof(info));
	assert_int_equal(bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.falcon_xdp_rx), &info,
						&info_len), 0);
	printf("falcon_xdp_rx: %u instructions verified, %u xlated, %u bytes jited\n",
	       info.verified_insns, info.xlated_prog_len / 8, info.jited_prog_len);
	assert_true(info.verified_insns > 0);
	/* budget: the fast path must stay far below the 1M-instruction verifier limit */
	assert_true(info.verified_insns < 100000);
}

/* A BACK over IPv4 written out byte by byte from the spec tables; the builder must
 * produce exactly these bytes and the program must read packet type 9 from them. */
static void test_back_layout(void **state)
{
	static const uint8_t want[] = {
		/* Ethernet: dst, src, type IPv4 */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
		/* IPv4: IHL 5, len 76, id 0x1234, DF, TTL 64, UDP, csum, 10.0.0.1 -> .2 */
		0x45, 0x00, 0x00, 0x4c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x6b,
		0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
		/* UDP: 0xabcd -> 1000, len 56, csum */
		0xab, 0xcd, 0x03, 0xe8, 0x00, 0x38, 0x19, 0x4e,
		/* PSP: next 252, ext len 1, crypt off 1, ver 0xF | V 0 | 1, SPI 0x42, IV */
		0xfc, 0x01, 0x01, 0x3d, 0x00, 0x00, 0x00, 0x42,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		/* BACK (7.7.1): version 1 | CID 0xabcdef; word 1 = type 1001b in columns
		 * 27-30 = 0x00000012; then 6 filler words */
		0x10, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x12,
		0x02, 0x02, 0x02, 0x02, 0x03, 0x03, 0x03, 0x03, 0x04, 0x04, 0x04, 0x04,
		0x05, 0x05, 0x05, 0x05, 0x06, 0x06, 0x06, 0x06, 0x07, 0x07, 0x07, 0x07,
	};
	struct falcon_xdp *skel = skel_of(state);
	struct pkt_spec s = pkt_spec_default(PKT_T_BACK);
	const uint32_t inc[] = { FC_XDP_CNT_RX, FC_XDP_CNT_FALCON_IPV4, FC_XDP_CNT_FALCON_OK,
				 FC_XDP_CNT_PKT_TYPE_0 + 9, FC_XDP_CNT_REJECT,
				 FC_XDP_CNT_REJECT_UNKNOWN_CID };
	uint32_t w01[2];
	struct pkt p;

	pkt_build(&p, &s);
	assert_int_equal(p.len, sizeof(want));
	assert_memory_equal(p.b, want, sizeof(want));
	run_frame(skel, want, sizeof(want), XDP_DROP, inc, N_OF(inc), "BACK literal");
	/* and the wire.h accessors read the same fields (from an aligned copy) */
	assert_int_equal(p.falcon_off, 14 + 20 + 8 + 16);
	memcpy(w01, want + p.falcon_off, sizeof(w01));
	assert_int_equal(fc_hdr_pkt_type(w01), 9);
	assert_int_equal(fc_hdr_version(w01), 1);
	assert_int_equal(fc_hdr_cid(w01), 0xABCDEF);
}

static void valid_all_types(void **state, int ipv6, int nvlan, unsigned opt_len)
{
	struct falcon_xdp *skel = skel_of(state);
	char what[96];
	size_t i;
	struct pkt p;

	for (i = 0; i < N_OF(all_types); i++) {
		struct pkt_spec s = pkt_spec_default(all_types[i]);

		s.ipv6 = ipv6;
		s.nvlan = nvlan;
		s.ip4_opt_len = opt_len;
		pkt_build(&p, &s);
		snprintf(what, sizeof(what), "type %u ipv%d vlans %d opts %u", all_types[i],
			 ipv6 ? 6 : 4, nvlan, opt_len);
		expect_valid(skel, &p, ipv6, all_types[i], what);
	}
}

static void test_valid_ipv4(void **state)
{
	valid_all_types(state, 0, 0, 0);
}

static void test_valid_ipv6(void **state)
{
	valid_all_types(state, 1, 0, 0);
}

static void test_valid_vlan(void **state)
{
	valid_all_types(state, 0, 1, 0);
	valid_all_types(state, 1, 1, 0);
	valid_all_types(state, 0, 2, 0); /* 802.1ad + 802.1Q */
	valid_all_types(state, 1, 2, 0);
}

static void test_valid_ipv4_options(void **state)
{
	valid_all_types(state, 0, 0, 4);
	valid_all_types(state, 0, 0, 20);
	valid_all_types(state, 0, 0, 40); /* IHL 15 */
	valid_all_types(state, 0, 2, 40);
}

/* Payload after the header, the PSP virtualization cookie, L2 padding after the IP packet. */
static void test_valid_variants(void **state)
{
	struct falcon_xdp *skel = skel_of(state);
	struct pkt_spec s;
	struct pkt p;
	int ipv6;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		s = pkt_spec_default(PKT_T_PUSH_DATA);
		s.ipv6 = ipv6;
		s.payload_len = 100;
		pkt_build(&p, &s);
		expect_valid(skel, &p, ipv6, 5, "push data + 100 bytes payload");

		s = pkt_spec_default(PKT_T_EACK);
		s.ipv6 = ipv6;
		s.psp_vc = 1; /* hdr_ext_len 2 */
		pkt_build(&p, &s);
		assert_int_equal(p.b[p.psp_off + 1], 2);
		expect_valid(skel, &p, ipv6, 10, "EACK with PSP VC");

		s = pkt_spec_default(PKT_T_PULL_DATA);
		s.ipv6 = ipv6;
		pkt_build(&p, &s);
		pkt_fill(&p, 6, 0); /* Ethernet padding beyond the IP length: not ours */
		expect_valid(skel, &p, ipv6, 3, "pull data + L2 padding");
	}
}

/* PSP version != NULL: only version + CID are read; ciphertext type bits are ignored. */
static void test_encrypted(void **state)
{
	static const uint8_t vers[] = { 0x0, 0x1, 0x2, 0x3, 0xC };
	struct falcon_xdp *skel = skel_of(state);
	char what[96];
	struct pkt_spec s;
	struct pkt p;
	size_t i, rem, min;
	int ipv6;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		for (i = 0; i < N_OF(vers); i++) {
			s = pkt_spec_default(PKT_T_PUSH_DATA);
			s.ipv6 = ipv6;
			s.psp_ver = vers[i];
			s.nvlan = (int)(i % 3);
			pkt_build(&p, &s);
			/* scrambled word 1 (0x4a ^ 0xa5 = 0xef) reads as reserved type 7:
			 * the program must not look at it */
			assert_int_equal(p.b[p.falcon_off + 7], 0xEF);
			snprintf(what, sizeof(what), "encrypted psp ver %u ipv%d", vers[i],
				 ipv6 ? 6 : 4);
			expect_encrypted(skel, &p, ipv6, what);
		}
		s = pkt_spec_default(PKT_T_BACK);
		s.ipv6 = ipv6;
		s.psp_ver = 1;
		s.psp_vc = 1;
		pkt_build(&p, &s);
		expect_encrypted(skel, &p, ipv6, "encrypted with VC");

		s.falcon_ver = 2; /* version is cleartext: still checked */
		pkt_build(&p, &s);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_VERSION, "encrypted version 2");

		/* shortest: 24-byte base header + 16-byte ICV after the PSP header */
		s = pkt_spec_default(PKT_T_PULL_DATA);
		s.ipv6 = ipv6;
		s.psp_ver = 1;
		pkt_build(&p, &s);
		min = p.falcon_off + 24 + 16;
		assert_int_equal(p.len, min);
		expect_encrypted(skel, &p, ipv6, "encrypted minimum");
		for (rem = 0; rem < 40; rem++) {
			pkt_build(&p, &s);
			pkt_truncate_consistent(&p, p.falcon_off + rem);
			snprintf(what, sizeof(what), "encrypted, %zu bytes after PSP ipv%d", rem,
				 ipv6 ? 6 : 4);
			expect_drop(skel, &p, ipv6,
				    rem < 4 ? FC_XDP_CNT_DROP_FALCON_TRUNC : FC_XDP_CNT_DROP_HDR_LEN,
				    what);
		}
	}
}

/* Frames that end before the UDP destination port is known: not Falcon, passed. */
static void test_truncated_before_port(void **state)
{
	struct falcon_xdp *skel = skel_of(state);
	char what[96];
	struct pkt_spec s;
	struct pkt p;
	size_t cut, end;
	int ipv6, nvlan;

	/* From the bare Ethernet header (14 bytes: BPF_PROG_TEST_RUN refuses shorter
	 * frames) through VLAN tags, IP header (with options) and UDP header,
	 * cut at every byte, with 0, 1 and 2 tags */
	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		for (nvlan = 0; nvlan <= 2; nvlan++) {
			s = pkt_spec_default(PKT_T_PULL_REQ);
			s.ipv6 = ipv6;
			s.nvlan = nvlan;
			s.ip4_opt_len = 8;
			pkt_build(&p, &s);
			end = p.l4_off + 8;
			for (cut = 14; cut < end; cut++) {
				struct pkt q = p;

				q.len = cut;
				snprintf(what, sizeof(what), "ipv%d vlans %d cut at %zu of %zu",
					 ipv6 ? 6 : 4, nvlan, cut, end);
				expect_not_falcon(skel, &q, what);
			}
		}
	}
}

/* Frames cut after the UDP header: the IP/UDP lengths claim more than was received
 * (spec 9.2.2.1, UDP length vs bytes received) -> drop. */
static void test_cut_after_port(void **state)
{
	struct falcon_xdp *skel = skel_of(state);
	char what[96];
	struct pkt p;
	size_t i, cut;
	int ipv6;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		for (i = 0; i < N_OF(all_types); i++) {
			struct pkt_spec s = pkt_spec_default(all_types[i]);

			s.ipv6 = ipv6;
			s.nvlan = 1;
			pkt_build(&p, &s);
			for (cut = p.l4_off + 8; cut < p.len; cut++) {
				struct pkt q = p;

				q.len = cut;
				snprintf(what, sizeof(what), "type %u ipv%d cut at %zu of %zu",
					 all_types[i], ipv6 ? 6 : 4, cut, p.len);
				expect_drop(skel, &q, ipv6, FC_XDP_CNT_DROP_LEN, what);
			}
		}
	}
}

/* UDP length that disagrees with the IP length (frame complete). */
static void test_length_mismatch(void **state)
{
	struct falcon_xdp *skel = skel_of(state);
	struct pkt_spec s;
	struct pkt p;
	uint32_t ulen;
	int ipv6;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		s = pkt_spec_default(PKT_T_PULL_DATA);
		s.ipv6 = ipv6;
		pkt_build(&p, &s);
		ulen = pkt_rd16(p.b + p.l4_off + 4);
		assert_int_equal(ulen, p.len - p.l4_off);

		pkt_wr16(p.b + p.l4_off + 4, ulen - 1);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_LEN, "udp len - 1");
		pkt_wr16(p.b + p.l4_off + 4, ulen + 1);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_LEN, "udp len + 1");
		pkt_wr16(p.b + p.l4_off + 4, 0);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_LEN, "udp len 0");

		/* IP says 4 bytes after its header, UDP says 4 too: shorter than UDP's own 8 */
		pkt_build(&p, &s);
		if (ipv6)
			pkt_wr16(p.b + p.l3_off + 4, 4);
		else
			pkt_wr16(p.b + p.l3_off + 2, 20 + 4);
		pkt_wr16(p.b + p.l4_off + 4, 4);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_LEN, "udp len 4 == ip payload");

		/* IP length one byte past the frame */
		pkt_build(&p, &s);
		pkt_fill(&p, 1, 0);
		pkt_finish(&p);
		p.len--;
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_LEN, "ip length past frame");
	}
	/* IPv4 total length smaller than the header */
	s = pkt_spec_default(PKT_T_PULL_DATA);
	pkt_build(&p, &s);
	pkt_wr16(p.b + p.l3_off + 2, 16);
	expect_drop(skel, &p, 0, FC_XDP_CNT_DROP_LEN, "ipv4 tot_len < ihl");
}

/* Well-formed IP/UDP whose payload ends inside the PSP header. */
static void test_psp_truncated(void **state)
{
	struct falcon_xdp *skel = skel_of(state);
	char what[96];
	struct pkt_spec s;
	struct pkt p;
	size_t rem;
	int ipv6, vc;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		for (vc = 0; vc <= 1; vc++) {
			for (rem = 0; rem < 16u + 8u * (unsigned)vc; rem++) {
				s = pkt_spec_default(PKT_T_BACK);
				s.ipv6 = ipv6;
				s.psp_vc = vc;
				pkt_build(&p, &s);
				pkt_truncate_consistent(&p, p.psp_off + rem);
				snprintf(what, sizeof(what), "psp vc %d, %zu bytes ipv%d", vc, rem,
					 ipv6 ? 6 : 4);
				expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_PSP_TRUNC, what);
			}
		}
	}
	/* hdr_ext_len 255: a 2048-byte PSP header in a short packet */
	s = pkt_spec_default(PKT_T_EACK);
	pkt_build(&p, &s);
	p.b[p.psp_off + 1] = 255;
	pkt_finish(&p);
	expect_drop(skel, &p, 0, FC_XDP_CNT_DROP_PSP_TRUNC, "psp ext len 255");
}

static void test_psp_bad_fields(void **state)
{
	struct falcon_xdp *skel = skel_of(state);
	struct pkt_spec s;
	struct pkt p;
	int ipv6;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		s = pkt_spec_default(PKT_T_PUSH_DATA);
		s.ipv6 = ipv6;

		pkt_build(&p, &s);
		p.b[p.psp_off] = FC_IPPROTO_UDP;
		pkt_finish(&p);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_PSP_NEXT_HDR, "psp next header 17");
		p.b[p.psp_off] = 4; /* IPv4: tunnel mode, not supported */
		pkt_finish(&p);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_PSP_NEXT_HDR, "psp next header 4");

		pkt_build(&p, &s);
		p.b[p.psp_off + 3] &= 0xFE;
		pkt_finish(&p);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_PSP_ONE_BIT, "psp one bit 0");

		pkt_build(&p, &s);
		p.b[p.psp_off + 1] = 0;
		pkt_finish(&p);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_PSP_EXT_LEN, "psp ext len 0");

		pkt_build(&p, &s);
		p.b[p.psp_off + 3] |= 0x02; /* V = 1 without room for the cookie */
		pkt_finish(&p);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_PSP_EXT_LEN, "psp V=1, ext len 1");

		/* hdr_ext_len 2 without V: 8 more header bytes are skipped, so the Falcon
		 * header is read 8 bytes later, inside the real one (words 2-3 = 0x02.., 0x03..):
		 * version 0 */
		pkt_build(&p, &s);
		p.b[p.psp_off + 1] = 2;
		pkt_finish(&p);
		expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_VERSION, "psp ext len 2, V=0");
	}
}

/* Falcon header shorter than its fixed part (8 bytes) or than its type's length. */
static void test_falcon_truncated(void **state)
{
	struct falcon_xdp *skel = skel_of(state);
	char what[96];
	struct pkt p;
	size_t i, rem, hlen;
	int ipv6;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		for (i = 0; i < N_OF(all_types); i++) {
			struct pkt_spec s = pkt_spec_default(all_types[i]);

			s.ipv6 = ipv6;
			hlen = pkt_falcon_hdr_len(all_types[i]);
			for (rem = 0; rem < hlen; rem++) {
				pkt_build(&p, &s);
				pkt_truncate_consistent(&p, p.falcon_off + rem);
				snprintf(what, sizeof(what), "type %u, %zu of %zu header bytes ipv%d",
					 all_types[i], rem, hlen, ipv6 ? 6 : 4);
				expect_drop(skel, &p, ipv6,
					    rem < 8 ? FC_XDP_CNT_DROP_FALCON_TRUNC
						    : FC_XDP_CNT_DROP_HDR_LEN,
					    what);
			}
			pkt_build(&p, &s);
			assert_int_equal(p.len, p.falcon_off + hlen);
			snprintf(what, sizeof(what), "type %u, exactly %zu header bytes",
				 all_types[i], hlen);
			expect_valid(skel, &p, ipv6, all_types[i], what);
		}
	}
}

static void test_falcon_bad_version(void **state)
{
	static const uint8_t vers[] = { 0, 2, 3, 15 };
	struct falcon_xdp *skel = skel_of(state);
	char what[96];
	struct pkt p;
	size_t i;
	int ipv6;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		for (i = 0; i < N_OF(vers); i++) {
			struct pkt_spec s = pkt_spec_default(all_types[i]);

			s.ipv6 = ipv6;
			s.falcon_ver = vers[i];
			pkt_build(&p, &s);
			snprintf(what, sizeof(what), "falcon version %u ipv%d", vers[i],
				 ipv6 ? 6 : 4);
			expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_VERSION, what);
		}
	}
}

static void test_reserved_types(void **state)
{
	static const uint8_t rsvd[] = { 0x1, 0x2, 0x4, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF };
	struct falcon_xdp *skel = skel_of(state);
	char what[96];
	struct pkt p;
	size_t i;
	int ipv6;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		for (i = 0; i < N_OF(rsvd); i++) {
			struct pkt_spec s = pkt_spec_default(rsvd[i]);

			s.ipv6 = ipv6;
			s.payload_len = 64; /* long enough for any header */
			pkt_build(&p, &s);
			snprintf(what, sizeof(what), "reserved type %u ipv%d", rsvd[i],
				 ipv6 ? 6 : 4);
			expect_drop(skel, &p, ipv6, FC_XDP_CNT_DROP_PKT_TYPE, what);
		}
	}
}

static void test_wrong_port(void **state)
{
	static const uint16_t ports[] = { 999, 1001, 0, 0xE803 /* 1000 byte-swapped */, 4791 };
	struct falcon_xdp *skel = skel_of(state);
	char what[96];
	struct pkt p;
	size_t i;
	int ipv6;

	for (ipv6 = 0; ipv6 <= 1; ipv6++) {
		for (i = 0; i < N_OF(ports); i++) {
			struct pkt_spec s = pkt_spec_default(PKT_T_PUSH_DATA);

			s.ipv6 = ipv6;
			s.dport = ports[i];
			pkt_build(&p, &s);
			snprintf(what, sizeof(what), "udp dport %u ipv%d", ports[i], ipv6 ? 6 : 4);
			expect_not_falcon(skel, &p, what);
		}
		/* source port 1000 does not make it Falcon */
		pkt_init(&p);
		pkt_l2(&p, 0, ipv6 ? 0x86DD : 0x0800);
		if (ipv6)
			pkt_ipv6(&p, FC_IPPROTO_UDP);
		else
			pkt_ipv4(&p, 0, FC_IPPROTO_UDP);
		pkt_udp(&p, 1000, 53);
		pkt_fill(&p, 40, 0);
		pkt_finish(&p);
		expect_not_falcon(skel, &p, "udp sport 1000");
	}
}

static void test_non_ip(void **state)
{
	struct falcon_xdp *skel = skel_of(state);
	struct pkt_spec s;
	struct pkt p;

	pkt_init(&p);
	pkt_eth(&p, 0x0806); /* ARP request */
	pkt_fill(&p, 28, 0x01);
	expect_not_falcon(skel, &p, "ARP");

	pkt_init(&p);
	pkt_eth(&p, 0x88CC); /* LLDP */
	pkt_fill(&p, 46, 0x02);
	expect_not_falcon(skel, &p, "LLDP");

	pkt_init(&p);
	pkt_l2(&p, 1, 0x0806);
	pkt_fill(&p, 28, 0x01);
	expect_not_falcon(skel, &p, "ARP behind VLAN");

	/* three tags: beyond the two the program skips, even with Falcon inside */
	s = pkt_spec_default(PKT_T_PUSH_DATA);
	s.nvlan = 3;
	pkt_build(&p, &s);
	expect_not_falcon(skel, &p, "three VLAN tags");

	/* TCP to port 1000 */
	pkt_init(&p);
	pkt_eth(&p, 0x0800);
	pkt_ipv4(&p, 0, 6);
	pkt_fill(&p, 20, 0);
	pkt_wr16(p.b + p.l3_off + 20 + 2, 1000);
	pkt_finish(&p);
	expect_not_falcon(skel, &p, "TCP to 1000");

	pkt_init(&p);
	pkt_eth(&p, 0x86DD);
	pkt_ipv6(&p, 6);
	pkt_fill(&p, 20, 0);
	pkt_wr16(p.b + p.l3_off + 40 + 2, 1000);
	pkt_finish(&p);
	expect_not_falcon(skel, &p, "TCP over IPv6 to 1000");

	/* IPv6 hop-by-hop header before UDP to 1000: extension headers are not parsed */
	pkt_init(&p);
	pkt_eth(&p, 0x86DD);
	pkt_ipv6(&p, 0);
	pkt_fill(&p, 8, 0);
	p.b[p.len - 8] = FC_IPPROTO_UDP;     /* next header */
	p.b[p.len - 6] = 1;                  /* PadN, 4 bytes */
	p.b[p.len - 5] = 4;
	pkt_udp(&p, PKT_SPORT, 1000);
	pkt_psp(&p, 252, PKT_PSP_NULL, 0);
	pkt_falcon(&p, 1, PKT_T_BACK, 0);
	pkt_finish(&p);
	expect_not_falcon(skel, &p, "IPv6 hop-by-hop");

	/* IP version field disagreeing with the ethertype, IHL < 5 */
	s = pkt_spec_default(PKT_T_PUSH_DATA);
	pkt_build(&p, &s);
	p.b[p.l3_off] = 0x65;
	pkt_finish(&p);
	expect_not_falcon(skel, &p, "IPv4 ethertype, version 6");
	p.b[p.l3_off] = 0x44;
	expect_not_falcon(skel, &p, "IPv4 IHL 4");
	s.ipv6 = 1;
	pkt_build(&p, &s);
	p.b[p.l3_off] = 0x45;
	expect_not_falcon(skel, &p, "IPv6 ethertype, version 4");
}

/* IPv4 fragments are left to the kernel (Falcon never fragments). */
static void test_ipv4_fragment(void **state)
{
	static const uint16_t frags[] = { 0x2000 /* MF, first */, 0x0010 /* offset 128, last */,
					  0x2010 /* MF + offset */, 0x6000 /* DF + MF */ };
	struct falcon_xdp *skel = skel_of(state);
	const uint32_t inc[] = { FC_XDP_CNT_RX, FC_XDP_CNT_NOT_FALCON, FC_XDP_CNT_IPV4_FRAG };
	struct pkt_spec s = pkt_spec_default(PKT_T_PUSH_DATA);
	char what[64];
	struct pkt p;
	size_t i;

	for (i = 0; i < N_OF(frags); i++) {
		pkt_build(&p, &s);
		pkt_ipv4_set_frag(&p, frags[i]);
		snprintf(what, sizeof(what), "ipv4 frag_off 0x%04x", frags[i]);
		run_pkt(skel, &p, XDP_PASS, inc, N_OF(inc), what);
	}
	/* DF alone, and the reserved flag, are not fragmentation */
	pkt_build(&p, &s);
	pkt_ipv4_set_frag(&p, 0x0000);
	expect_valid(skel, &p, 0, 5, "no DF");
	pkt_ipv4_set_frag(&p, 0x8000);
	expect_valid(skel, &p, 0, 5, "reserved flag");
}

/* falcon_port is a load-time knob: a second instance on another port. */
static void test_port_knob(void **state)
{
	struct falcon_xdp *skel = skel_of(state), *other;
	struct pkt_spec s = pkt_spec_default(PKT_T_BACK);
	struct pkt dflt, moved;

	pkt_build(&dflt, &s);
	s.dport = OTHER_PORT;
	pkt_build(&moved, &s);

	other = load_xdp(OTHER_PORT);
	if (!other)
		fail_msg("second instance failed to load (libbpf log above)");
	expect_not_falcon(other, &dflt, "port 1000 on a port-4791 instance");
	expect_valid(other, &moved, 0, 9, "port 4791 on a port-4791 instance");
	expect_not_falcon(skel, &moved, "port 4791 on the default instance");
	expect_valid(skel, &dflt, 0, 9, "port 1000 on the default instance");
	falcon_xdp__destroy(other);
}

static void test_counter_names(void **state)
{
	unsigned i, j;

	(void)state;
	for (i = 0; i < FC_XDP_CNT_MAX; i++) {
		assert_non_null(fc_xdp_cnt_name(i));
		for (j = 0; j < i; j++)
			assert_string_not_equal(fc_xdp_cnt_name(i), fc_xdp_cnt_name(j));
	}
	assert_null(fc_xdp_cnt_name(FC_XDP_CNT_MAX));
	assert_string_equal(fc_xdp_cnt_name(FC_XDP_CNT_PKT_TYPE_0 + 9), "pkt_back");
	assert_string_equal(fc_xdp_cnt_name(FC_XDP_CNT_DUP_ACKED), "dup_acked");
	assert_string_equal(fc_xdp_cnt_name(FC_XDP_CNT_REJECT_OOW), "reject_oow");
	assert_int_equal(FC_XDP_CNT_PKT_TYPE_LAST - FC_XDP_CNT_PKT_TYPE_0, 15);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_load_info),
		T(test_back_layout),
		T(test_valid_ipv4),
		T(test_valid_ipv6),
		T(test_valid_vlan),
		T(test_valid_ipv4_options),
		T(test_valid_variants),
		T(test_encrypted),
		T(test_truncated_before_port),
		T(test_cut_after_port),
		T(test_length_mismatch),
		T(test_psp_truncated),
		T(test_psp_bad_fields),
		T(test_falcon_truncated),
		T(test_falcon_bad_version),
		T(test_reserved_types),
		T(test_wrong_port),
		T(test_non_ip),
		T(test_ipv4_fragment),
		T(test_port_knob),
		cmocka_unit_test(test_counter_names),
	};

	libbpf_set_print(print_libbpf);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
