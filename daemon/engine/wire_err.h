/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_err.h - error codes of the packet codecs (wire_falcon, wire_rdma, wire_outer).
 *
 * Decoders and encoders return a non-negative length on success and the negative of one
 * of these codes on failure. The codes start above the errno range so that a caller that
 * mixes them with -errno values can still tell them apart; fc_wire_strerror() names both.
 */
#ifndef FC_WIRE_ERR_H
#define FC_WIRE_ERR_H

enum fc_wire_err {
	FC_WIRE_ETRUNC = 4096, /* buffer ends before the header (or a header it announces) */
	FC_WIRE_EVERSION,      /* version field is not one we speak */
	FC_WIRE_ETYPE,         /* reserved or unknown packet type / opcode */
	FC_WIRE_EPROTO,        /* not ours: other ethertype, IP protocol, UDP port, next header,
	                          or a reserved Falcon protocol type */
	FC_WIRE_ELEN,          /* a length field disagrees with the buffer or another field */
	FC_WIRE_EFIELD,        /* a field holds a reserved or impossible value */
	FC_WIRE_ECSUM,         /* IPv4 header or UDP checksum mismatch */
	FC_WIRE_ENOSPC,        /* encode: output buffer too small */
	FC_WIRE_EINVAL,        /* encode: a value does not fit its field or the packet type */
	FC_WIRE_ERR_END,
};

/* Human-readable name of err (negative or positive; fc_wire_err or errno). Never NULL. */
const char *fc_wire_strerror(int err);

#endif
