/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falcon-dump - the fields of every Falcon packet of a pcap file, read by the project's own
 * decoders (fc_psp_decode, fc_falcon_decode, fc_rdma_decode), under the
 * field names of the Wireshark dissector (tools/wireshark/falcon.lua), so that the two can
 * be compared field by field (tests/e2e/test_dissector.sh).
 *
 *   falcon-dump [-p PORT]... FILE.pcap
 *       One line per UDP datagram to or from one of the PORTs (default 7470):
 *         frame=N name=value name=value ...
 *       N counts every record of the file from 1 (tshark's frame.number). Integers are
 *       decimal, byte strings lowercase hex. Fields a decoder does not read (reserved
 *       bits, payload bytes) are not printed; a decoder's error is printed as
 *       LAYER.error=ECODE (falcon_psp, falcon, falcon_rdma) and ends the line's layers.
 *       pcap link types: Ethernet (1) and raw IP (101; a 14-byte Ethernet header is put in
 *       front for fc_outer_decode). Exit 0, or 1 on an unreadable file.
 *
 *   falcon-dump forge FILE.pcap PORT [MUTANTS SEED]
 *       Writes hand-made packets (Ethernet, IPv4, UDP to PORT) to FILE: well-formed ones of
 *       every Falcon packet type and several RDMA opcodes, one encrypted, and malformed
 *       ones (truncated, reserved type, wrong version, inconsistent lengths, ...), then
 *       MUTANTS copies of the well-formed ones with random bits flipped (and some cut
 *       short; xorshift from SEED). Prints one line per frame: "N FIELD=ECODE what" for a
 *       malformed one (FIELD is the dissector's error field that must say ECODE),
 *       "N ok what" for a good one, "N any mutant" for a mutant.
 *
 * pcap files are read whole up to PCAP_MAX_RECORDS records of at most PCAP_SNAP bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "falcon/wire.h"
#include "wire_falcon.h"
#include "wire_outer.h"
#include "wire_rdma.h"

#define PCAP_MAGIC 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define PCAP_SNAP 262144u
#define PCAP_MAX_RECORDS 10000000u
#define LINKTYPE_ETHERNET 1u
#define LINKTYPE_RAW 101u
#define PORTS_MAX 8
#define FALCON_PORT_DEFAULT 7470

struct pcap_file_hdr {
	uint32_t magic;
	uint16_t major, minor;
	int32_t zone;
	uint32_t sigfigs, snaplen, linktype;
};

struct pcap_rec_hdr {
	uint32_t sec, usec, caplen, len;
};

/* ------------------------------------------------------------------------ */
/* printing                                                                   */
/* ------------------------------------------------------------------------ */

static const char *err_code(int err)
{
	switch (-err) {
	case FC_WIRE_ETRUNC: return "ETRUNC";
	case FC_WIRE_EVERSION: return "EVERSION";
	case FC_WIRE_ETYPE: return "ETYPE";
	case FC_WIRE_EPROTO: return "EPROTO";
	case FC_WIRE_ELEN: return "ELEN";
	case FC_WIRE_EFIELD: return "EFIELD";
	case FC_WIRE_ECSUM: return "ECSUM";
	default: return "EOTHER";
	}
}

static void pu(const char *name, uint64_t v) { printf(" %s=%" PRIu64, name, v); }

static void phex(const char *name, const uint8_t *p, size_t n)
{
	printf(" %s=", name);
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

/* ------------------------------------------------------------------------ */
/* one datagram                                                               */
/* ------------------------------------------------------------------------ */

static void dump_rdma(const uint8_t *p, size_t len, int ftype)
{
	struct fc_rdma_hdrs h;
	int rc = fc_rdma_decode(p, len, ftype, &h);

	if (rc < 0) {
		printf(" falcon_rdma.error=%s", err_code(rc));
		return;
	}
	pu("falcon_rdma.opcode", h.opcode);
	pu("falcon_rdma.se", h.se);
	pu("falcon_rdma.pad", h.pad);
	pu("falcon_rdma.version", FC_RDMA_VERSION); /* checked by the decoder */
	pu("falcon_rdma.ce", h.ce);
	pu("falcon_rdma.ackreq", h.ackreq);
	pu("falcon_rdma.dqp", h.dqp);
	pu("falcon_rdma.sn", h.sn);
	if (h.eths & FC_ETH_XRCETH)
		pu("falcon_rdma.xrceth.srq", h.xrc_srq);
	if (h.eths & FC_ETH_RETH) {
		pu("falcon_rdma.reth.va", h.reth.va);
		pu("falcon_rdma.reth.rkey", h.reth.rkey);
		pu("falcon_rdma.reth.len", h.reth.len);
	}
	if (h.eths & FC_ETH_DETH) {
		pu("falcon_rdma.deth.qkey", h.deth.qkey);
		pu("falcon_rdma.deth.src_qp", h.deth.src_qp);
	}
	if (h.eths & FC_ETH_ATOMIC) { /* the masks of h are the decoder's, not the wire's */
		pu("falcon_rdma.atomiceth.va", h.atomic.va);
		pu("falcon_rdma.atomiceth.rkey", h.atomic.rkey);
		pu("falcon_rdma.atomiceth.swap_add", h.atomic.swap_add);
		pu("falcon_rdma.atomiceth.compare", h.atomic.compare);
	}
	if (h.eths & FC_ETH_MASKED_ATOMIC) {
		pu("falcon_rdma.maskedatomiceth.va", h.atomic.va);
		pu("falcon_rdma.maskedatomiceth.rkey", h.atomic.rkey);
		pu("falcon_rdma.maskedatomiceth.swap_add", h.atomic.swap_add);
		pu("falcon_rdma.maskedatomiceth.swap_add_mask", h.atomic.swap_add_mask);
		pu("falcon_rdma.maskedatomiceth.compare", h.atomic.compare);
		pu("falcon_rdma.maskedatomiceth.compare_mask", h.atomic.compare_mask);
	}
	if (h.eths & FC_ETH_ATOMIC_ACK)
		pu("falcon_rdma.atomicacketh.orig", h.atomic_orig);
	if (h.eths & FC_ETH_SETH)
		pu("falcon_rdma.seth.rmsn", h.rmsn);
	if (h.eths & FC_ETH_OETH)
		pu("falcon_rdma.oeth.offset", h.offset);
	if (h.eths & FC_ETH_STETH) {
		pu("falcon_rdma.steth.va", h.steth.va);
		pu("falcon_rdma.steth.lkey", h.steth.lkey);
	}
	if (h.eths & FC_ETH_IMMDT)
		pu("falcon_rdma.immdt", h.imm);
	if (h.eths & FC_ETH_IETH)
		pu("falcon_rdma.ieth.rkey", h.inv_rkey);
	pu("falcon_rdma.payload_len", h.payload_len);
}

static void dump_falcon(const uint8_t *p, size_t len)
{
	struct fc_falcon_pkt f;
	int rc = fc_falcon_decode(p, len, &f);

	if (rc < 0) {
		printf(" falcon.error=%s", err_code(rc));
		return;
	}
	pu("falcon.version", FALCON_VERSION); /* checked by the decoder */
	pu("falcon.cid", f.cid);
	pu("falcon.pkt_type", f.type);
	pu("falcon.rdbpsn", f.rdbpsn);
	pu("falcon.rrbpsn", f.rrbpsn);
	if (fc_falcon_type_has_base(f.type)) { /* spec 7.2 */
		pu("falcon.dest_fn", f.dest_fn);
		pu("falcon.proto", f.proto);
		pu("falcon.ar", f.ar);
		pu("falcon.psn", f.psn);
		pu("falcon.rsn", f.rsn);
	} else { /* spec 7.7.1, 7.8 */
		pu("falcon.t1_ts", f.t1_ts);
		pu("falcon.t2_ts", f.t2_ts);
		pu("falcon.hops", f.hops);
		pu("falcon.rxbuf", f.rxbuf);
		pu("falcon.ecn", f.ecn);
		pu(f.type == FC_PKT_NACK ? "falcon.nack_rue" : "falcon.rue", f.rue);
	}
	switch (f.type) {
	case FC_PKT_PULL_REQ:
	case FC_PKT_PUSH_DATA:
		pu("falcon.req_len", f.req_len);
		break;
	case FC_PKT_RESYNC:
		pu("falcon.resync_code", f.resync_code);
		pu("falcon.resync_pkt_type", f.resync_pkt_type);
		pu("falcon.vendor", f.vendor);
		break;
	case FC_PKT_BACK:
		pu("falcon.own", f.own);
		break;
	case FC_PKT_EACK: /* x[1] = bits 127:64, x[0] = bits 63:0 */
		pu("falcon.own", f.own);
		pu("falcon.eack.data_ack_hi", f.data_ack[1]);
		pu("falcon.eack.data_ack_lo", f.data_ack[0]);
		pu("falcon.eack.data_rx_hi", f.data_rx[1]);
		pu("falcon.eack.data_rx_lo", f.data_rx[0]);
		pu("falcon.eack.req_bitmap", f.req_bitmap);
		break;
	case FC_PKT_NACK:
		pu("falcon.nack_psn", f.nack_psn);
		pu("falcon.nack_code", f.nack_code);
		pu("falcon.rnr_timeout", f.rnr_timeout);
		pu("falcon.window", f.window);
		pu("falcon.ulp_nack_code", f.ulp_nack_code);
		break;
	default:
		break;
	}
	if (!fc_falcon_type_has_payload(f.type))
		return;
	pu("falcon.payload_len", f.payload_len);
	if (f.payload_len && f.proto == FC_PROTO_RDMA)
		dump_rdma(f.payload, f.payload_len, (int)f.type);
}

/* The UDP payload: PSP header, Falcon packet, ICV. */
static void dump_psp(const uint8_t *p, size_t len)
{
	struct fc_psp_info h;
	size_t off, n;
	int rc = fc_psp_decode(p, len, &h, &off, &n);

	if (rc < 0) {
		printf(" falcon_psp.error=%s", err_code(rc));
		return;
	}
	pu("falcon_psp.next_hdr", h.next_hdr);
	pu("falcon_psp.hdr_ext_len", h.hdr_ext_len);
	pu("falcon_psp.crypt_off", h.crypt_off);
	pu("falcon_psp.s", h.s);
	pu("falcon_psp.d", h.d);
	pu("falcon_psp.version", h.version);
	pu("falcon_psp.v", h.has_vc);
	pu("falcon_psp.one", 1); /* checked by the decoder */
	pu("falcon_psp.spi", h.spi);
	pu("falcon_psp.spi.key_phase", h.spi >> 31);
	pu("falcon_psp.spi.key_id", h.spi & 0x7FFFFFFFu);
	pu("falcon_psp.iv", h.iv);
	if (h.has_vc)
		pu("falcon_psp.vc", h.vc);
	if (h.hdr_len > FC_PSP_HDR_LEN + (h.has_vc ? FC_PSP_VC_LEN : 0u)) {
		size_t from = FC_PSP_HDR_LEN + (h.has_vc ? FC_PSP_VC_LEN : 0u);

		phex("falcon_psp.hdr_ext", p + from, h.hdr_len - from);
	}
	if (h.icv_len)
		phex("falcon_psp.icv", p + len - h.icv_len, h.icv_len);
	if (h.version == FC_PSP_VER_NULL || h.version == FC_PSP_VER_AES_GMAC_128 ||
	    h.version == FC_PSP_VER_AES_GMAC_256) {
		dump_falcon(p + off, n); /* nothing encrypted */
		return;
	}
	/* encrypted from the crypt offset on (spec 7.1): word 0 is clear with offset 1 */
	pu("falcon_psp.encrypted_len", n - (size_t)h.crypt_off * 4);
	if (h.crypt_off >= 1) {
		pu("falcon.version", fc_hdr_version(p + off));
		pu("falcon.cid", fc_hdr_cid(p + off));
		if (fc_hdr_version(p + off) != FALCON_VERSION)
			printf(" falcon.error=EVERSION");
	}
}

/* The UDP header of a frame (Ethernet, up to 2 tags, IPv4 or IPv6): its offset, or 0 if
 * the frame is not UDP (or is cut before the UDP header). */
static size_t udp_off(const uint8_t *f, size_t len)
{
	size_t off = 12, l4;
	uint16_t type;

	for (int tags = 0;; tags++) {
		if (len < off + 2)
			return 0;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
		if ((type != FC_ETH_P_8021Q && type != FC_ETH_P_8021AD) || tags == FC_OUTER_VLAN_MAX)
			break;
		off += 4;
	}
	off += 2;
	if (type == FC_ETH_P_IPV4 && len >= off + 20 && f[off + 9] == FC_IPPROTO_UDP)
		l4 = off + (size_t)(f[off] & 0xF) * 4;
	else if (type == FC_ETH_P_IPV6 && len >= off + 40 && f[off + 6] == FC_IPPROTO_UDP)
		l4 = off + 40;
	else
		return 0;
	return len >= l4 + 8 ? l4 : 0;
}

/* One frame: a datagram to or from a Falcon port gets a line, its UDP payload (as the UDP
 * length field gives it, cut to the bytes captured) decoded from the PSP header on. */
static void dump_frame(unsigned long n, const uint8_t *f, size_t len, const uint16_t *ports,
		       int nports)
{
	size_t l4 = udp_off(f, len), ulen;
	uint16_t sport, dport;
	int mine = 0;

	if (!l4)
		return;
	sport = (uint16_t)(f[l4] << 8 | f[l4 + 1]);
	dport = (uint16_t)(f[l4 + 2] << 8 | f[l4 + 3]);
	for (int i = 0; i < nports; i++)
		mine |= ports[i] == sport || ports[i] == dport;
	if (!mine)
		return;
	ulen = (size_t)(f[l4 + 4] << 8 | f[l4 + 5]);
	if (ulen <= 8)
		return; /* no payload, or a broken UDP header: Wireshark hands it to no dissector */
	ulen -= 8;
	if (ulen > len - l4 - 8)
		ulen = len - l4 - 8;
	printf("frame=%lu", n);
	dump_psp(f + l4 + 8, ulen);
	putchar('\n');
}

static int cmd_dump(const char *path, const uint16_t *ports, int nports)
{
	static uint8_t frame[14 + PCAP_SNAP];
	struct pcap_file_hdr fh;
	struct pcap_rec_hdr rh;
	unsigned long n = 0;
	FILE *f = fopen(path, "rb");

	if (!f) {
		perror(path);
		return 1;
	}
	if (fread(&fh, sizeof(fh), 1, f) != 1 ||
	    (fh.magic != PCAP_MAGIC && fh.magic != PCAP_MAGIC_NS) ||
	    (fh.linktype != LINKTYPE_ETHERNET && fh.linktype != LINKTYPE_RAW)) {
		fprintf(stderr, "falcon-dump: %s: not a pcap file of Ethernet or raw IP\n", path);
		fclose(f);
		return 1;
	}
	while (n < PCAP_MAX_RECORDS && fread(&rh, sizeof(rh), 1, f) == 1) {
		size_t at = fh.linktype == LINKTYPE_RAW ? 14 : 0;

		n++;
		if (rh.caplen > PCAP_SNAP || fread(frame + at, rh.caplen, 1, f) != 1) {
			if (rh.caplen == 0)
				continue;
			fprintf(stderr, "falcon-dump: %s: record %lu is bad\n", path, n);
			fclose(f);
			return 1;
		}
		if (at) { /* raw IP: an Ethernet header in front, its type from the version */
			memset(frame, 0, 12);
			frame[12] = (frame[14] >> 4) == 6 ? 0x86 : 0x08;
			frame[13] = (frame[14] >> 4) == 6 ? 0xDD : 0x00;
		}
		dump_frame(n, frame, rh.caplen + at, ports, nports);
	}
	fclose(f);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* forge: hand-made packets                                                   */
/* ------------------------------------------------------------------------ */

static FILE *forge_f;
static unsigned forge_n;
static uint16_t forge_port;

/* the well-formed datagrams, kept as seeds of the mutants */
#define SEEDS_MAX 64
static struct {
	uint8_t b[1024];
	size_t len;
} seeds[SEEDS_MAX];
static unsigned nseeds;

/* One Ethernet + IPv4 + UDP frame around payload (len bytes) to forge_port. */
static void forge_emit(const uint8_t *payload, size_t len, const char *expect, const char *what)
{
	static uint8_t fr[14 + 20 + 8 + 9000];
	struct pcap_rec_hdr rh;
	size_t tot = 14 + 20 + 8 + len;
	uint8_t *ip = fr + 14, *udp = ip + 20;
	uint16_t c;

	if (len > 9000)
		exit(2);
	memset(fr, 0, 42);
	memcpy(fr, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00", 14);
	ip[0] = 0x45;
	ip[2] = (uint8_t)((20 + 8 + len) >> 8);
	ip[3] = (uint8_t)(20 + 8 + len);
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = FC_IPPROTO_UDP;
	memcpy(ip + 12, "\x7f\0\0\x01\x7f\0\0\x02", 8);
	c = fc_inet_csum_fold(fc_inet_csum_add(0, ip, 20));
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	udp[0] = (uint8_t)(forge_port >> 8); /* from the port too: either direction */
	udp[1] = (uint8_t)forge_port;
	udp[2] = (uint8_t)(forge_port >> 8);
	udp[3] = (uint8_t)forge_port;
	udp[4] = (uint8_t)((8 + len) >> 8);
	udp[5] = (uint8_t)(8 + len);
	memcpy(udp + 8, payload, len);
	if (fc_outer_set_udp_csum(fr, tot))
		exit(2);
	rh = (struct pcap_rec_hdr){ 1700000000u, forge_n, (uint32_t)tot, (uint32_t)tot };
	if (fwrite(&rh, sizeof(rh), 1, forge_f) != 1 || fwrite(fr, tot, 1, forge_f) != 1) {
		perror("forge");
		exit(1);
	}
	printf("%u %s %s\n", ++forge_n, expect, what);
	if (!strcmp(expect, "ok") && nseeds < SEEDS_MAX && len <= sizeof(seeds[0].b)) {
		memcpy(seeds[nseeds].b, payload, len);
		seeds[nseeds++].len = len;
	}
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* n mutants of the seeds: 1 to 4 bytes changed, a quarter of them also cut short; the
 * decoders and the dissector must agree on whichever is broken */
static void forge_mutants(unsigned n, uint64_t seed)
{
	uint8_t b[1024];

	seed |= 1;
	for (unsigned i = 0; i < n && nseeds; i++) {
		unsigned k = (unsigned)(xorshift(&seed) % nseeds), flips = 1 + xorshift(&seed) % 4;
		size_t len = seeds[k].len;

		memcpy(b, seeds[k].b, len);
		for (unsigned j = 0; j < flips; j++) {
			/* mostly in the headers, where the fields are */
			size_t at = xorshift(&seed) % (len < 96 ? len : 96);

			b[at] ^= (uint8_t)(1u << (xorshift(&seed) % 8));
		}
		if (xorshift(&seed) % 4 == 0)
			len = xorshift(&seed) % len;
		forge_emit(b, len, "any", "mutant");
	}
}

/* PSP header (version ver) + falcon bytes + ICV (0x5A bytes) when ver has one. */
static size_t forge_psp(uint8_t *out, uint8_t ver, const uint8_t *falcon, size_t n)
{
	struct fc_psp_info h = { .next_hdr = FC_PSP_NEXT_HDR_FALCON,
				 .crypt_off = FC_PSP_CRYPT_OFF_FALCON, .version = ver,
				 .spi = 0x80010002u, .iv = 1234567890123ull };
	size_t icv = fc_psp_icv_len(ver);

	if (fc_psp_encode(&h, out, FC_PSP_HDR_LEN) != FC_PSP_HDR_LEN)
		exit(2);
	memcpy(out + FC_PSP_HDR_LEN, falcon, n);
	memset(out + FC_PSP_HDR_LEN + n, 0x5A, icv);
	return FC_PSP_HDR_LEN + n + icv;
}

static uint8_t fbuf[8192], pbuf[9000];

/* A NULL-PSP datagram around the Falcon packet f (its payload in rdma, rlen bytes). */
static size_t forge_falcon(struct fc_falcon_pkt *f, const uint8_t *rdma, size_t rlen)
{
	int n;

	f->payload = rdma;
	f->payload_len = rlen;
	n = fc_falcon_encode(f, fbuf, sizeof(fbuf));
	if (n < 0) {
		fprintf(stderr, "forge: falcon encode %d\n", n);
		exit(2);
	}
	return forge_psp(pbuf, FC_PSP_VER_NULL, fbuf, (size_t)n);
}

static struct fc_falcon_pkt base_pkt(enum fc_pkt_type t)
{
	return (struct fc_falcon_pkt){ .type = t, .cid = 0x123456, .dest_fn = 0xABCDEF,
				       .proto = FC_PROTO_RDMA, .ar = true, .rdbpsn = 100,
				       .rrbpsn = 200, .psn = 101, .rsn = 7 };
}

/* RDMA headers of opcode with payload_len bytes of 0xC3 into r; returns the length. */
static size_t forge_rdma(uint8_t *r, uint8_t opcode, size_t payload_len)
{
	uint8_t data[64];
	struct fc_rdma_hdrs h = {
		.opcode = opcode, .se = true, .ackreq = true, .dqp = 0x000BCD, .sn = 42,
		.xrc_srq = 0x77, .reth = { 0x7F0000001000ull, 0x1111, (uint32_t)payload_len },
		.deth = { 0x11223344u, 0x000321 },
		.atomic = { 0x7F0000002000ull, 0x2222, 5, 0xF0F0, 9, 0xFFFF },
		.atomic_orig = 0x0123456789ABCDEFull, .rmsn = 3, .offset = 4096,
		.steth = { 0x7F0000003000ull, 0x3333 }, .imm = 0xDEADBEEF, .inv_rkey = 0x4444,
	};
	int n;

	memset(data, 0xC3, sizeof(data));
	n = fc_rdma_encode(&h, data, payload_len, r, 256);

	if (n < 0) {
		fprintf(stderr, "forge: rdma encode 0x%02x %d\n", opcode, n);
		exit(2);
	}
	return (size_t)n;
}

static int cmd_forge(const char *path, uint16_t port, unsigned mutants, uint64_t seed)
{
	struct pcap_file_hdr fh = { PCAP_MAGIC, 2, 4, 0, 0, PCAP_SNAP, LINKTYPE_ETHERNET };
	static const struct {
		uint8_t opcode;
		enum fc_pkt_type type;
		size_t len;
	} ops[] = {
		{ 0x0A, FC_PKT_PUSH_DATA, 7 },  { 0x0B, FC_PKT_PUSH_DATA, 8 },
		{ 0x05, FC_PKT_PUSH_DATA, 5 },  { 0x17, FC_PKT_PUSH_DATA, 4 },
		{ 0x0C, FC_PKT_PULL_REQ, 0 },   { 0x10, FC_PKT_PULL_DATA, 13 },
		{ 0x13, FC_PKT_PULL_REQ, 0 },   { 0x19, FC_PKT_PULL_REQ, 0 },
		{ 0x12, FC_PKT_PULL_DATA, 0 },  { 0x65, FC_PKT_PUSH_DATA, 6 },
		{ 0xAB, FC_PKT_PUSH_DATA, 12 }, { 0xB8, FC_PKT_PULL_REQ, 0 },
	};
	uint8_t r[512] = { 0 };
	struct fc_falcon_pkt f;
	size_t n, rl;

	forge_port = port;
	if (!(forge_f = fopen(path, "wb")) || fwrite(&fh, sizeof(fh), 1, forge_f) != 1) {
		perror(path);
		return 1;
	}
	/* well-formed: every Falcon type, RDMA opcodes of every ETH */
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		char what[64];

		f = base_pkt(ops[i].type);
		if (ops[i].type == FC_PKT_PULL_REQ)
			f.req_len = 32;
		rl = forge_rdma(r, ops[i].opcode, ops[i].len);
		n = forge_falcon(&f, r, rl);
		snprintf(what, sizeof(what), "RDMA %s", fc_rdma_opcode_name(ops[i].opcode));
		forge_emit(pbuf, n, "ok", what);
	}
	f = base_pkt(FC_PKT_RESYNC);
	f.resync_code = FC_RESYNC_TARGET_CIE;
	f.resync_pkt_type = FC_PKT_PUSH_DATA;
	f.vendor = 0xCAFE;
	forge_emit(pbuf, forge_falcon(&f, NULL, 0), "ok", "Resync");
	f = (struct fc_falcon_pkt){ .type = FC_PKT_BACK, .cid = 9, .rdbpsn = 5, .rrbpsn = 6,
				    .t1_ts = 0xFFFFFFF0u, .t2_ts = 3, .hops = 2, .rxbuf = 17,
				    .ecn = 0x2AAA, .rue = 0x3FFFFF, .own = FC_OWN_DATA };
	forge_emit(pbuf, forge_falcon(&f, NULL, 0), "ok", "BACK");
	f.type = FC_PKT_EACK;
	f.data_ack[0] = 0x8000000000000001ull;
	f.data_ack[1] = 0x00000000000000F0ull;
	f.data_rx[0] = 0xFFull;
	f.data_rx[1] = 1ull << 63;
	f.req_bitmap = 0x5555AAAA5555AAAAull;
	forge_emit(pbuf, forge_falcon(&f, NULL, 0), "ok", "EACK");
	f = (struct fc_falcon_pkt){ .type = FC_PKT_NACK, .cid = 10, .rdbpsn = 1, .rrbpsn = 2,
				    .t1_ts = 77, .t2_ts = 78, .rue = 0xFFFFFF, .nack_psn = 1234,
				    .nack_code = FC_NACK_RNR, .rnr_timeout = 14,
				    .window = FC_NACK_W_REQ, .ulp_nack_code = 2 };
	forge_emit(pbuf, forge_falcon(&f, NULL, 0), "ok", "NACK");
	/* an NVMe Push Data: Falcon payload not dissected as RDMA */
	f = base_pkt(FC_PKT_PUSH_DATA);
	f.proto = FC_PROTO_NVME;
	forge_emit(pbuf, forge_falcon(&f, (const uint8_t *)"nvme", 4), "ok", "NVMe Push Data");
	/* encrypted (AES-GCM-256): word 0 clear, the rest opaque, ICV */
	f = base_pkt(FC_PKT_PUSH_DATA);
	n = forge_falcon(&f, r, forge_rdma(r, 0x0A, 8));
	n = forge_psp(pbuf, FC_PSP_VER_AES_GCM_256, fbuf, n - FC_PSP_HDR_LEN);
	forge_emit(pbuf, n, "ok", "encrypted AES-GCM-256");
	/* GMAC: authenticated only, the Falcon header is clear, then the ICV */
	n = forge_psp(pbuf, FC_PSP_VER_AES_GMAC_256, fbuf, 28 + 36);
	forge_emit(pbuf, n, "ok", "AES-GMAC-256, Falcon in the clear");

	/* PSP with a virtualization cookie, and with a longer header (extension bytes) */
	{
		struct fc_psp_info h = { .next_hdr = FC_PSP_NEXT_HDR_FALCON, .crypt_off = 1,
					 .version = FC_PSP_VER_NULL, .has_vc = true,
					 .vc = 0x0102030405060708ull, .spi = 7, .iv = 99 };
		int hl;

		f = (struct fc_falcon_pkt){ .type = FC_PKT_BACK, .cid = 3 };
		n = forge_falcon(&f, NULL, 0) - FC_PSP_HDR_LEN;
		hl = fc_psp_encode(&h, pbuf, sizeof(pbuf));
		memcpy(pbuf + hl, fbuf, n);
		forge_emit(pbuf, (size_t)hl + n, "ok", "PSP with a virtualization cookie");
		h.has_vc = false;
		h.vc = 0;
		h.hdr_ext_len = 3;
		hl = fc_psp_encode(&h, pbuf, sizeof(pbuf));
		memcpy(pbuf + hl, fbuf, n);
		forge_emit(pbuf, (size_t)hl + n, "ok", "PSP header of 32 bytes (extension)");
	}
	/* a Pull Data without payload (complete in error, spec 8.5.3.5): no RDMA headers */
	f = base_pkt(FC_PKT_PULL_DATA);
	forge_emit(pbuf, forge_falcon(&f, NULL, 0), "ok", "Pull Data without payload");

	/* ---- malformed: PSP (fc_psp_decode order) ---- */
	f = base_pkt(FC_PKT_PUSH_DATA);
	rl = forge_rdma(r, 0x0A, 8);
	n = forge_falcon(&f, r, rl);
	forge_emit(pbuf, 10, "falcon_psp.error=ETRUNC", "PSP header cut at 10 bytes");
	pbuf[0] = 17;
	forge_emit(pbuf, n, "falcon_psp.error=EPROTO", "PSP next header 17");
	pbuf[0] = FC_PSP_NEXT_HDR_FALCON;
	pbuf[3] &= (uint8_t)~FC_PSP_ONE_BIT;
	forge_emit(pbuf, n, "falcon_psp.error=EFIELD", "PSP always-1 bit clear");
	pbuf[3] = (uint8_t)(FC_PUT(FC_PSP_VER, 5) | FC_PSP_ONE_BIT);
	forge_emit(pbuf, n, "falcon_psp.error=EVERSION", "PSP version 5");
	pbuf[3] = (uint8_t)(FC_PUT(FC_PSP_VER, FC_PSP_VER_NULL) | FC_PSP_ONE_BIT);
	pbuf[1] = 0;
	forge_emit(pbuf, n, "falcon_psp.error=EFIELD", "PSP hdr ext len 0");
	pbuf[1] = 3;
	forge_emit(pbuf, 30, "falcon_psp.error=ETRUNC", "PSP hdr ext len 3 in 30 bytes");
	pbuf[1] = 1;
	pbuf[2] = 63;
	forge_emit(pbuf, n, "falcon_psp.error=ELEN", "PSP crypt offset 63 past the packet");
	pbuf[2] = 1;
	n = forge_psp(pbuf, FC_PSP_VER_AES_GCM_256, fbuf, 2);
	forge_emit(pbuf, FC_PSP_HDR_LEN + 10, "falcon_psp.error=ETRUNC",
		   "encrypted PSP shorter than its ICV");

	/* ---- malformed: Falcon (fc_falcon_decode order) ---- */
	f = base_pkt(FC_PKT_PUSH_DATA);
	rl = forge_rdma(r, 0x0A, 8);
	n = forge_falcon(&f, r, rl);
	forge_emit(pbuf, FC_PSP_HDR_LEN + 6, "falcon.error=ETRUNC", "Falcon header of 6 bytes");
	pbuf[2] = 0; /* crypt offset 0: an empty Falcon packet passes PSP */
	forge_emit(pbuf, FC_PSP_HDR_LEN, "falcon.error=ETRUNC", "PSP without a Falcon packet");
	pbuf[2] = FC_PSP_CRYPT_OFF_FALCON;
	pbuf[FC_PSP_HDR_LEN] = (uint8_t)((pbuf[FC_PSP_HDR_LEN] & 0x0F) | 0x20);
	forge_emit(pbuf, n, "falcon.error=EVERSION", "Falcon version 2");
	pbuf[FC_PSP_HDR_LEN] = (uint8_t)((pbuf[FC_PSP_HDR_LEN] & 0x0F) | 0x10);
	pbuf[FC_PSP_HDR_LEN + 7] = (uint8_t)((pbuf[FC_PSP_HDR_LEN + 7] & 0xE1) | 0x1 << 1);
	forge_emit(pbuf, n, "falcon.error=ETYPE", "Falcon reserved packet type 0x1");
	pbuf[FC_PSP_HDR_LEN + 7] = (uint8_t)((pbuf[FC_PSP_HDR_LEN + 7] & 0xE1) | 0xF << 1);
	forge_emit(pbuf, n, "falcon.error=ETYPE", "Falcon reserved packet type 0xF");
	pbuf[FC_PSP_HDR_LEN + 7] = (uint8_t)((pbuf[FC_PSP_HDR_LEN + 7] & 0xE1) | FC_PKT_PUSH_DATA << 1);
	forge_emit(pbuf, FC_PSP_HDR_LEN + 20, "falcon.error=ETRUNC", "Push Data header cut at 20");
	pbuf[FC_PSP_HDR_LEN + 7] &= 0x1F; /* protocol type 0 */
	forge_emit(pbuf, n, "falcon.error=EPROTO", "Falcon protocol type 0");
	pbuf[FC_PSP_HDR_LEN + 7] |= (uint8_t)(FC_PROTO_RDMA << 5);
	pbuf[FC_PSP_HDR_LEN + 25] ^= 0x01; /* request length off by one */
	forge_emit(pbuf, n, "falcon.error=ELEN", "Push Data request length != payload");
	f = base_pkt(FC_PKT_RESYNC);
	f.resync_code = FC_RESYNC_TXN_TIMEOUT;
	n = forge_falcon(&f, NULL, 0);
	pbuf[FC_PSP_HDR_LEN + 24] = 0;
	forge_emit(pbuf, n, "falcon.error=EFIELD", "Resync code 0");
	f = (struct fc_falcon_pkt){ .type = FC_PKT_NACK, .cid = 1, .nack_code = FC_NACK_CIE };
	n = forge_falcon(&f, NULL, 0);
	pbuf[FC_PSP_HDR_LEN + 36] = 3;
	forge_emit(pbuf, n, "falcon.error=EFIELD", "NACK code 3");
	f = (struct fc_falcon_pkt){ .type = FC_PKT_BACK, .cid = 1 };
	n = forge_falcon(&f, NULL, 0);
	memset(pbuf + n, 0, 4);
	forge_emit(pbuf, n + 4, "falcon.error=ELEN", "BACK with 4 bytes after its header");
	f = (struct fc_falcon_pkt){ .type = FC_PKT_EACK, .cid = 1 };
	n = forge_falcon(&f, NULL, 0);
	forge_emit(pbuf, n - 8, "falcon.error=ETRUNC", "EACK cut at 64 bytes");
	f = base_pkt(FC_PKT_PUSH_DATA);
	n = forge_falcon(&f, r, forge_rdma(r, 0x0A, 8));
	n = forge_psp(pbuf, FC_PSP_VER_AES_GCM_256, fbuf, n - FC_PSP_HDR_LEN);
	pbuf[FC_PSP_HDR_LEN] = 0x03;
	forge_emit(pbuf, n, "falcon.error=EVERSION", "encrypted, clear word 0 says version 0");

	/* ---- malformed: RDMA (fc_rdma_decode order) ---- */
	f = base_pkt(FC_PKT_PUSH_DATA);
	rl = forge_rdma(r, 0x0A, 8);
	forge_emit(pbuf, forge_falcon(&f, r, 8), "falcon_rdma.error=ETRUNC", "RBTH of 8 bytes");
	r[1] = (uint8_t)((r[1] & 0xF0) | 2);
	forge_emit(pbuf, forge_falcon(&f, r, rl), "falcon_rdma.error=EVERSION", "RBTH version 2");
	r[1] = (uint8_t)((r[1] & 0xF0) | FC_RDMA_VERSION);
	r[0] = 0x11;
	forge_emit(pbuf, forge_falcon(&f, r, rl), "falcon_rdma.error=ETYPE",
		   "RDMA reserved opcode 0x11");
	r[0] = 0x0C;
	forge_emit(pbuf, forge_falcon(&f, r, rl), "falcon_rdma.error=ETYPE",
		   "READ Request in a Push Data");
	r[0] = 0x0A;
	forge_emit(pbuf, forge_falcon(&f, r, 20), "falcon_rdma.error=ETRUNC",
		   "WRITE Only cut inside its RETH");
	forge_emit(pbuf, forge_falcon(&f, r, rl - 2), "falcon_rdma.error=ELEN",
		   "RDMA packet not a multiple of 4 bytes");
	r[1] = (uint8_t)(r[1] | FC_PUT(FC_RBTH_PAD, 3));
	forge_emit(pbuf, forge_falcon(&f, r, 28), "falcon_rdma.error=ELEN",
		   "pad 3 with no byte after the headers");
	r[1] = (uint8_t)(r[1] & ~FC_PUT(FC_RBTH_PAD, 3));
	forge_emit(pbuf, forge_falcon(&f, r, rl + 4), "falcon_rdma.error=ELEN",
		   "WRITE Only RETH length != payload");
	f = base_pkt(FC_PKT_PULL_REQ);
	rl = forge_rdma(r, 0x0C, 0);
	memset(r + rl, 0, 4);
	forge_emit(pbuf, forge_falcon(&f, r, rl + 4), "falcon_rdma.error=ELEN",
		   "READ Request with a payload");
	forge_mutants(mutants, seed);
	fclose(forge_f);
	return 0;
}

int main(int argc, char **argv)
{
	uint16_t ports[PORTS_MAX];
	int nports = 0, i = 1;

	if ((argc == 4 || argc == 6) && !strcmp(argv[1], "forge"))
		return cmd_forge(argv[2], (uint16_t)atoi(argv[3]),
				 argc == 6 ? (unsigned)atoi(argv[4]) : 0,
				 argc == 6 ? strtoull(argv[5], NULL, 0) : 1);
	while (i + 1 < argc && !strcmp(argv[i], "-p") && nports < PORTS_MAX) {
		ports[nports++] = (uint16_t)atoi(argv[i + 1]);
		i += 2;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: falcon-dump [-p PORT]... FILE.pcap\n"
				"       falcon-dump forge FILE.pcap PORT [MUTANTS SEED]\n");
		return 2;
	}
	if (!nports)
		ports[nports++] = FALCON_PORT_DEFAULT;
	return cmd_dump(argv[i], ports, nports);
}
