-- SPDX-License-Identifier: Apache-2.0
--
-- falcon.lua - Wireshark / tshark dissector for falcon's packets (Lua, Wireshark >= 4.0):
--
--   UDP (Falcon data ports, preference falcon.udp_ports, default 7470)
--     | PSP header          falcon_psp.*   docs/wire.md section 2
--     | Falcon header       falcon.*       Falcon spec section 7, docs/wire.md section 3
--     | RDMA headers        falcon_rdma.*  RDMA spec section 8, docs/wire.md section 5
--     | payload, pad | PSP ICV
--
-- With PSP version NULL (0xF) and the GMAC versions (2, 3) the Falcon header travels in
-- the clear and is dissected whole; with an encrypting version (0, 1, 0xC) only the bytes
-- before the crypt offset are (version and CID: crypt offset 1), the rest is shown as the
-- encrypted payload, then the 16-byte ICV.
--
-- The checks and their order are those of the project's decoders (docs/wire.md section 6:
-- fc_psp_decode, fc_falcon_decode, fc_rdma_decode); the first failing check of a layer is
-- reported as expert info (group malformed, severity error) and in the field
-- falcon_psp.error / falcon.error / falcon_rdma.error with the decoder's code name
-- (ETRUNC, EVERSION, ETYPE, EPROTO, ELEN, EFIELD). tests/e2e/test_dissector.sh compares
-- every field this file shows with what the project's decoders read (tools/falcon-dump.c).
--
-- Use:  tshark -X lua_script:tools/wireshark/falcon.lua -r cap.pcap
--       (or install it into a Lua plugin folder, see README; -o falcon.udp_ports:N,M)

-- Registered once per Wireshark: a copy in a plugin folder (make install, the
-- falcon-wireshark package) and this file again with -X lua_script would otherwise make
-- Wireshark refuse the second ("two protocols with the same description").
-- Wireshark gives each plugin file its own environment, so the test is whether the
-- first copy's dissector is registered already.
if Dissector.get("falcon_psp") then
	return
end

local p_psp = Proto("falcon_psp", "PSP (Falcon encapsulation)")
local p_fal = Proto("falcon", "Falcon")
local p_rdma = Proto("falcon_rdma", "RDMA over Falcon")

local band, rshift = bit32.band, bit32.rshift

local FALCON_PORT_DEFAULT = 7470 -- falcond --port default
local PSP_HDR_LEN, PSP_ICV_LEN, PSP_NEXT_HDR_FALCON = 16, 16, 252

-- ---------------------------------------------------------------------------------------
-- code tables (include/falcon/wire.h)
-- ---------------------------------------------------------------------------------------
local psp_versions = {
	[0x0] = "AES-GCM-128", [0x1] = "AES-GCM-256", [0x2] = "AES-GMAC-128",
	[0x3] = "AES-GMAC-256", [0xC] = "ChaCha20-Poly1305 (falcon)",
	[0xF] = "NULL (falcon: no encryption, no ICV)",
}
local PSP_VER_NULL = 0xF
-- versions whose payload is not encrypted (authenticated only, or nothing)
local psp_clear = { [0x2] = true, [0x3] = true, [0xF] = true }

local pkt_types = {
	[0x0] = "Pull Request", [0x3] = "Pull Data", [0x5] = "Push Data", [0x6] = "Resync",
	[0x8] = "NACK", [0x9] = "BACK", [0xA] = "EACK",
}
local PKT_PULL_REQ, PKT_PULL_DATA, PKT_PUSH_DATA, PKT_RESYNC = 0x0, 0x3, 0x5, 0x6
local PKT_NACK, PKT_BACK, PKT_EACK = 0x8, 0x9, 0xA
-- spec 7.2 - 7.8: header bytes of each type (fc_pkt_hdr_len)
local pkt_hdr_len = {
	[PKT_PULL_REQ] = 32, [PKT_PULL_DATA] = 24, [PKT_PUSH_DATA] = 28, [PKT_RESYNC] = 32,
	[PKT_NACK] = 40, [PKT_BACK] = 32, [PKT_EACK] = 72,
}
local has_base = { [PKT_PULL_REQ] = true, [PKT_PULL_DATA] = true, [PKT_PUSH_DATA] = true,
	[PKT_RESYNC] = true }
local has_payload = { [PKT_PULL_REQ] = true, [PKT_PULL_DATA] = true, [PKT_PUSH_DATA] = true }

local proto_types = { [2] = "RDMA", [3] = "NVMe" }
local PROTO_RDMA = 2

local resync_codes = {
	[1] = "Target ULP complete in error", [2] = "Local xLR flow",
	[3] = "Packet retransmission exhausted", [4] = "Transaction timed out",
	[5] = "Remote xLR flow", [6] = "Target ULP non-recoverable error",
	[7] = "Target ULP invalid CID",
}
local nack_codes = {
	[1] = "Insufficient receiver resources", [2] = "ULP receiver not ready (RNR)",
	[4] = "xLR drop", [6] = "ULP complete in error (CIE)",
	[7] = "ULP non-recoverable error (NRE)", [8] = "Invalid CID",
}
local nack_windows = { [0] = "data window", [1] = "request window" }
-- RNR NACK timeout codes (spec 7.8, the InfiniBand RNR timer table; fc_rnr_timeout_10us)
local rnr_timeouts = {}
for code, ms in ipairs({ "0.01", "0.02", "0.03", "0.04", "0.06", "0.08", "0.12", "0.16",
	"0.24", "0.32", "0.48", "0.64", "0.96", "1.28", "1.92", "2.56", "3.84", "5.12", "7.68",
	"10.24", "15.36", "20.48", "30.72", "40.96", "61.44", "81.92", "122.88", "163.84",
	"245.76", "327.68", "491.52" }) do
	rnr_timeouts[code] = ms .. " ms"
end
rnr_timeouts[0] = "655.36 ms"

-- RDMA opcodes (RDMA spec 8.1.3; docs/wire.md 5.1): [7:5] class, [4:0] operation
local rdma_ops = {
	[0x00] = "SEND_FIRST", [0x01] = "SEND_MIDDLE", [0x02] = "SEND_LAST",
	[0x03] = "SEND_LAST_IMM", [0x04] = "SEND_ONLY", [0x05] = "SEND_ONLY_IMM",
	[0x06] = "WRITE_FIRST", [0x07] = "WRITE_MIDDLE", [0x08] = "WRITE_LAST",
	[0x09] = "WRITE_LAST_IMM", [0x0A] = "WRITE_ONLY", [0x0B] = "WRITE_ONLY_IMM",
	[0x0C] = "READ_REQ", [0x0D] = "READ_RESP_FIRST", [0x0E] = "READ_RESP_MIDDLE",
	[0x0F] = "READ_RESP_LAST", [0x10] = "READ_RESP_ONLY", [0x12] = "ATOMIC_RESP",
	[0x13] = "CMP_SWAP", [0x14] = "FETCH_ADD", [0x16] = "SEND_LAST_INV",
	[0x17] = "SEND_ONLY_INV", [0x18] = "MASKED_CMP_SWAP", [0x19] = "MASKED_FETCH_ADD",
}
local CLASS_RC, CLASS_UD, CLASS_XRC = 0x0, 0x3, 0x5

-- the extended transport headers in wire order (docs/wire.md 5), with their sizes
local XRCETH, RETH, DETH, ATOMIC, MASKED, ATOMIC_ACK = 1, 2, 3, 4, 5, 6
local SETH, OETH, STETH, IMMDT, IETH = 7, 8, 9, 10, 11
local eth_len = { 4, 16, 8, 28, 44, 8, 4, 4, 12, 4, 4 }
local eth_names = { "XRCETH", "RETH", "DETH", "AtomicETH", "MaskedAtomicETH", "AtomicAckETH",
	"SETH", "OETH", "STETH", "ImmDt", "IETH" }

-- fc_rdma_opcode_eths(): the ETHs an opcode carries (a set: eth -> true), nil if the
-- opcode is reserved. Requests carry AtomicETH, responses AtomicAckETH (DESIGN.md).
local function opcode_eths(opcode)
	local cls, op = rshift(opcode, 5), band(opcode, 0x1F)
	local s = {}
	if cls == CLASS_UD then
		if op == 0x04 then return { [DETH] = true } end
		if op == 0x05 then return { [DETH] = true, [IMMDT] = true } end
		return nil
	end
	if cls == CLASS_XRC then
		s[XRCETH] = true
	elseif cls ~= CLASS_RC then
		return nil
	end
	local function with(...)
		for _, e in ipairs({ ... }) do s[e] = true end
		return s
	end
	if op <= 0x02 or op == 0x04 then return with(SETH, OETH) end
	if op == 0x03 or op == 0x05 then return with(SETH, OETH, IMMDT) end
	if op >= 0x06 and op <= 0x08 or op == 0x0A then return with(RETH) end
	if op == 0x09 or op == 0x0B then return with(RETH, SETH, IMMDT) end
	if op == 0x0C then return with(RETH, SETH, STETH) end
	-- responses carry no XRCETH (docs/wire.md 5.1)
	if op >= 0x0D and op <= 0x10 then return { [STETH] = true } end
	if op == 0x12 then return { [ATOMIC_ACK] = true, [STETH] = true } end
	if op == 0x13 or op == 0x14 then return with(ATOMIC, SETH, STETH) end
	if op == 0x18 or op == 0x19 then return with(MASKED, SETH, STETH) end
	if op == 0x16 or op == 0x17 then return with(SETH, OETH, IETH) end
	return nil
end

-- fc_rdma_opcode_falcon_type(): the Falcon packet type that carries an opcode
local function opcode_falcon_type(opcode)
	local op = band(opcode, 0x1F)
	if op == 0x0C or op == 0x13 or op == 0x14 or op == 0x18 or op == 0x19 then
		return PKT_PULL_REQ
	end
	if op >= 0x0D and op <= 0x10 or op == 0x12 then return PKT_PULL_DATA end
	return PKT_PUSH_DATA
end

local rdma_opcodes = {}
for op, name in pairs(rdma_ops) do
	rdma_opcodes[op] = "RC_" .. name
	if opcode_eths(0xA0 + op) then rdma_opcodes[0xA0 + op] = "XRC_" .. name end
end
rdma_opcodes[0x64] = "UD_SEND_ONLY"
rdma_opcodes[0x65] = "UD_SEND_ONLY_IMM"

-- ---------------------------------------------------------------------------------------
-- fields
-- ---------------------------------------------------------------------------------------
local F = {}
local function fld(proto_fields, key, f)
	F[key] = f
	proto_fields[#proto_fields + 1] = f
end

local psp_f, fal_f, rdma_f = {}, {}, {}

-- PSP header (docs/wire.md section 2)
fld(psp_f, "next_hdr", ProtoField.uint8("falcon_psp.next_hdr", "Next Header", base.DEC))
fld(psp_f, "hdr_ext_len", ProtoField.uint8("falcon_psp.hdr_ext_len", "Hdr Ext Len", base.DEC))
fld(psp_f, "psp_rsvd", ProtoField.uint8("falcon_psp.reserved", "Reserved", base.HEX, nil, 0xC0))
fld(psp_f, "crypt_off", ProtoField.uint8("falcon_psp.crypt_off", "Crypt Offset (4-byte units)",
	base.DEC, nil, 0x3F))
fld(psp_f, "s", ProtoField.uint8("falcon_psp.s", "S (sample)", base.DEC, nil, 0x80))
fld(psp_f, "d", ProtoField.uint8("falcon_psp.d", "D (drop)", base.DEC, nil, 0x40))
fld(psp_f, "psp_version", ProtoField.uint8("falcon_psp.version", "Version", base.HEX,
	psp_versions, 0x3C))
fld(psp_f, "v", ProtoField.uint8("falcon_psp.v", "V (virtualization cookie present)", base.DEC,
	nil, 0x02))
fld(psp_f, "one", ProtoField.uint8("falcon_psp.one", "Always 1", base.DEC, nil, 0x01))
fld(psp_f, "spi", ProtoField.uint32("falcon_psp.spi", "SPI", base.HEX))
fld(psp_f, "key_phase", ProtoField.uint32("falcon_psp.spi.key_phase", "Key Phase", base.DEC,
	nil, 0x80000000))
fld(psp_f, "key_id", ProtoField.uint32("falcon_psp.spi.key_id", "Key ID", base.HEX, nil,
	0x7FFFFFFF))
fld(psp_f, "iv", ProtoField.uint64("falcon_psp.iv", "IV (transmit time, ns)", base.DEC))
fld(psp_f, "vc", ProtoField.uint64("falcon_psp.vc", "Virtualization Cookie", base.HEX))
fld(psp_f, "hdr_ext", ProtoField.bytes("falcon_psp.hdr_ext", "Header extension"))
fld(psp_f, "encrypted", ProtoField.bytes("falcon_psp.encrypted", "Encrypted payload"))
fld(psp_f, "encrypted_len", ProtoField.uint32("falcon_psp.encrypted_len",
	"Encrypted payload length", base.DEC))
fld(psp_f, "icv", ProtoField.bytes("falcon_psp.icv", "ICV"))
fld(psp_f, "psp_error", ProtoField.string("falcon_psp.error", "Decode error"))

-- Falcon header (docs/wire.md section 3)
fld(fal_f, "version", ProtoField.uint32("falcon.version", "Version", base.DEC, nil, 0xF0000000))
fld(fal_f, "w0_rsvd", ProtoField.uint32("falcon.w0_reserved", "Reserved", base.HEX, nil,
	0x0F000000))
fld(fal_f, "cid", ProtoField.uint32("falcon.cid", "Destination CID", base.HEX, nil, 0x00FFFFFF))
fld(fal_f, "dest_fn", ProtoField.uint32("falcon.dest_fn", "Destination Function", base.HEX, nil,
	0xFFFFFF00))
fld(fal_f, "proto", ProtoField.uint32("falcon.proto", "Protocol Type", base.DEC, proto_types,
	0x000000E0))
fld(fal_f, "ack_w1_rsvd", ProtoField.uint32("falcon.w1_reserved", "Reserved", base.HEX, nil,
	0xFFFFFFE0))
fld(fal_f, "pkt_type", ProtoField.uint32("falcon.pkt_type", "Packet Type", base.HEX, pkt_types,
	0x0000001E))
fld(fal_f, "ar", ProtoField.uint32("falcon.ar", "AR (ACK requested)", base.DEC, nil, 0x1))
fld(fal_f, "ack_w1_r", ProtoField.uint32("falcon.w1_r", "R (reserved)", base.DEC, nil, 0x1))
fld(fal_f, "rdbpsn", ProtoField.uint32("falcon.rdbpsn", "Receiver Data Window Base PSN",
	base.DEC))
fld(fal_f, "rrbpsn", ProtoField.uint32("falcon.rrbpsn", "Receiver Request Window Base PSN",
	base.DEC))
fld(fal_f, "psn", ProtoField.uint32("falcon.psn", "PSN", base.DEC))
fld(fal_f, "rsn", ProtoField.uint32("falcon.rsn", "RSN", base.DEC))
fld(fal_f, "req_len", ProtoField.uint16("falcon.req_len", "Request Length", base.DEC))
fld(fal_f, "rsvd16", ProtoField.uint16("falcon.reserved16", "Reserved", base.HEX))
fld(fal_f, "rsvd32", ProtoField.uint32("falcon.reserved32", "Reserved", base.HEX))
fld(fal_f, "resync_code", ProtoField.uint32("falcon.resync_code", "Resync Code", base.HEX,
	resync_codes, 0xFF000000))
fld(fal_f, "resync_pkt_type", ProtoField.uint32("falcon.resync_pkt_type", "Resync Packet Type",
	base.HEX, pkt_types, 0x00F00000))
fld(fal_f, "resync_rsvd", ProtoField.uint32("falcon.resync_reserved", "Reserved", base.HEX, nil,
	0x000FFFFF))
fld(fal_f, "vendor", ProtoField.uint32("falcon.vendor", "Vendor Defined", base.HEX))
fld(fal_f, "t1_ts", ProtoField.uint32("falcon.t1_ts", "t1 (131.072 ns units)", base.DEC))
fld(fal_f, "t2_ts", ProtoField.uint32("falcon.t2_ts", "t2 (131.072 ns units)", base.DEC))
fld(fal_f, "hops", ProtoField.uint32("falcon.hops", "Forward Hop Count", base.DEC, nil,
	0xF0000000))
fld(fal_f, "rxbuf", ProtoField.uint32("falcon.rxbuf", "Rx Buffer Occupancy", base.DEC, nil,
	0x0F800000))
fld(fal_f, "ecn", ProtoField.uint32("falcon.ecn", "ECN Rx Packet Count", base.DEC, nil,
	0x007FFE00))
fld(fal_f, "cc_rsvd", ProtoField.uint32("falcon.cc_reserved", "Reserved", base.HEX, nil,
	0x000001FF))
fld(fal_f, "w7_rsvd", ProtoField.uint32("falcon.w7_reserved", "Reserved", base.HEX, nil,
	0xFF000000))
fld(fal_f, "rue", ProtoField.uint32("falcon.rue", "RUE Info (22 bits)", base.HEX, nil,
	0x00FFFFFC))
fld(fal_f, "own", ProtoField.uint32("falcon.own", "OWN (out-of-window drop)", base.HEX, {
	[0] = "none", [1] = "request window", [2] = "data window", [3] = "both windows" }, 0x3))
fld(fal_f, "nack_rue", ProtoField.uint32("falcon.nack_rue", "RUE Info (24 bits)", base.HEX, nil,
	0x00FFFFFF))
fld(fal_f, "data_ack_hi", ProtoField.uint64("falcon.eack.data_ack_hi",
	"Data-ack bitmap, bits 127:64", base.HEX))
fld(fal_f, "data_ack_lo", ProtoField.uint64("falcon.eack.data_ack_lo",
	"Data-ack bitmap, bits 63:0", base.HEX))
fld(fal_f, "data_rx_hi", ProtoField.uint64("falcon.eack.data_rx_hi",
	"Data-rx bitmap, bits 127:64", base.HEX))
fld(fal_f, "data_rx_lo", ProtoField.uint64("falcon.eack.data_rx_lo",
	"Data-rx bitmap, bits 63:0", base.HEX))
fld(fal_f, "req_bitmap", ProtoField.uint64("falcon.eack.req_bitmap", "Req bitmap, bits 63:0",
	base.HEX))
fld(fal_f, "nack_psn", ProtoField.uint32("falcon.nack_psn", "NACK PSN", base.DEC))
fld(fal_f, "nack_code", ProtoField.uint32("falcon.nack_code", "NACK Code", base.HEX, nack_codes,
	0xFF000000))
fld(fal_f, "nack_rsvd", ProtoField.uint32("falcon.nack_reserved", "Reserved", base.HEX, nil,
	0x00C0FF00))
fld(fal_f, "rnr_timeout", ProtoField.uint32("falcon.rnr_timeout", "RNR NACK Timeout (code)",
	base.DEC, rnr_timeouts, 0x003E0000))
fld(fal_f, "window", ProtoField.uint32("falcon.window", "W (window)", base.DEC, nack_windows,
	0x00010000))
fld(fal_f, "ulp_nack_code", ProtoField.uint32("falcon.ulp_nack_code", "ULP NACK Code", base.HEX,
	nil, 0x000000FF))
fld(fal_f, "payload_len", ProtoField.uint32("falcon.payload_len", "Payload length", base.DEC))
fld(fal_f, "payload", ProtoField.bytes("falcon.payload", "Payload"))
fld(fal_f, "error", ProtoField.string("falcon.error", "Decode error"))

-- RDMA over Falcon (docs/wire.md section 5)
fld(rdma_f, "opcode", ProtoField.uint8("falcon_rdma.opcode", "Opcode", base.HEX, rdma_opcodes))
fld(rdma_f, "se", ProtoField.uint8("falcon_rdma.se", "SE (solicited event)", base.DEC, nil, 0x80))
fld(rdma_f, "r", ProtoField.uint8("falcon_rdma.r", "R (reserved)", base.DEC, nil, 0x40))
fld(rdma_f, "pad", ProtoField.uint8("falcon_rdma.pad", "Pad", base.DEC, nil, 0x30))
fld(rdma_f, "rversion", ProtoField.uint8("falcon_rdma.version", "Version", base.DEC, nil, 0x0F))
fld(rdma_f, "ce", ProtoField.uint8("falcon_rdma.ce", "CE (complete in error)", base.DEC, nil,
	0x80))
fld(rdma_f, "ackreq", ProtoField.uint8("falcon_rdma.ackreq", "A (AckReq)", base.DEC, nil, 0x40))
fld(rdma_f, "b2_rsvd", ProtoField.uint8("falcon_rdma.reserved2", "Reserved", base.HEX, nil, 0x3F))
fld(rdma_f, "b3_rsvd", ProtoField.uint8("falcon_rdma.reserved3", "Reserved", base.HEX))
fld(rdma_f, "dqp_rsvd", ProtoField.uint32("falcon_rdma.dqp_reserved", "Reserved", base.HEX, nil,
	0xFF000000))
fld(rdma_f, "dqp", ProtoField.uint32("falcon_rdma.dqp", "Destination QP", base.HEX, nil,
	0x00FFFFFF))
fld(rdma_f, "sn", ProtoField.uint32("falcon_rdma.sn", "Sequence Number (SN)", base.DEC))
fld(rdma_f, "xrc_srq", ProtoField.uint32("falcon_rdma.xrceth.srq", "XRC SRQ", base.HEX, nil,
	0x00FFFFFF))
fld(rdma_f, "reth_va", ProtoField.uint64("falcon_rdma.reth.va", "Virtual Address", base.HEX))
fld(rdma_f, "reth_rkey", ProtoField.uint32("falcon_rdma.reth.rkey", "R_Key", base.HEX))
fld(rdma_f, "reth_len", ProtoField.uint32("falcon_rdma.reth.len", "DMA Length", base.DEC))
fld(rdma_f, "deth_qkey", ProtoField.uint32("falcon_rdma.deth.qkey", "Q_Key", base.HEX))
fld(rdma_f, "deth_src_qp", ProtoField.uint32("falcon_rdma.deth.src_qp", "Source QP", base.HEX,
	nil, 0x00FFFFFF))
fld(rdma_f, "at_va", ProtoField.uint64("falcon_rdma.atomiceth.va", "Virtual Address", base.HEX))
fld(rdma_f, "at_rkey", ProtoField.uint32("falcon_rdma.atomiceth.rkey", "R_Key", base.HEX))
fld(rdma_f, "at_swap_add", ProtoField.uint64("falcon_rdma.atomiceth.swap_add",
	"Swap (or Add) Data", base.HEX))
fld(rdma_f, "at_compare", ProtoField.uint64("falcon_rdma.atomiceth.compare", "Compare Data",
	base.HEX))
fld(rdma_f, "ma_va", ProtoField.uint64("falcon_rdma.maskedatomiceth.va", "Virtual Address",
	base.HEX))
fld(rdma_f, "ma_rkey", ProtoField.uint32("falcon_rdma.maskedatomiceth.rkey", "R_Key", base.HEX))
fld(rdma_f, "ma_swap_add", ProtoField.uint64("falcon_rdma.maskedatomiceth.swap_add",
	"Swap (or Add) Data", base.HEX))
fld(rdma_f, "ma_swap_add_mask", ProtoField.uint64("falcon_rdma.maskedatomiceth.swap_add_mask",
	"Swap (or Add) Mask", base.HEX))
fld(rdma_f, "ma_compare", ProtoField.uint64("falcon_rdma.maskedatomiceth.compare",
	"Compare Data", base.HEX))
fld(rdma_f, "ma_compare_mask", ProtoField.uint64("falcon_rdma.maskedatomiceth.compare_mask",
	"Compare Mask", base.HEX))
fld(rdma_f, "orig", ProtoField.uint64("falcon_rdma.atomicacketh.orig", "Original Remote Data",
	base.HEX))
fld(rdma_f, "rmsn", ProtoField.uint32("falcon_rdma.seth.rmsn", "RMSN", base.DEC))
fld(rdma_f, "offset", ProtoField.uint32("falcon_rdma.oeth.offset", "Message Offset", base.DEC))
fld(rdma_f, "steth_va", ProtoField.uint64("falcon_rdma.steth.va", "Sink Virtual Address",
	base.HEX))
fld(rdma_f, "steth_lkey", ProtoField.uint32("falcon_rdma.steth.lkey", "L_Key", base.HEX))
fld(rdma_f, "imm", ProtoField.uint32("falcon_rdma.immdt", "Immediate Data", base.HEX))
fld(rdma_f, "inv_rkey", ProtoField.uint32("falcon_rdma.ieth.rkey", "R_Key to invalidate",
	base.HEX))
fld(rdma_f, "rpayload_len", ProtoField.uint32("falcon_rdma.payload_len", "Payload length",
	base.DEC))
fld(rdma_f, "rpayload", ProtoField.bytes("falcon_rdma.payload", "Payload"))
fld(rdma_f, "pad_bytes", ProtoField.bytes("falcon_rdma.pad_bytes", "Pad"))
fld(rdma_f, "rerror", ProtoField.string("falcon_rdma.error", "Decode error"))

p_psp.fields = psp_f
p_fal.fields = fal_f
p_rdma.fields = rdma_f

-- expert info: one per decoder error code (docs/wire.md section 6), and the notes
local E = {
	ETRUNC = ProtoExpert.new("falcon.expert.truncated", "Truncated",
		expert.group.MALFORMED, expert.severity.ERROR),
	EVERSION = ProtoExpert.new("falcon.expert.bad_version", "Bad version",
		expert.group.MALFORMED, expert.severity.ERROR),
	ETYPE = ProtoExpert.new("falcon.expert.reserved_type", "Reserved packet type or opcode",
		expert.group.MALFORMED, expert.severity.ERROR),
	EPROTO = ProtoExpert.new("falcon.expert.not_falcon", "Not Falcon",
		expert.group.MALFORMED, expert.severity.ERROR),
	ELEN = ProtoExpert.new("falcon.expert.bad_length", "Inconsistent lengths",
		expert.group.MALFORMED, expert.severity.ERROR),
	EFIELD = ProtoExpert.new("falcon.expert.bad_field", "Reserved or invalid field value",
		expert.group.MALFORMED, expert.severity.ERROR),
	rsvd = ProtoExpert.new("falcon.expert.reserved_set", "Reserved bits set",
		expert.group.PROTOCOL, expert.severity.WARN),
	encrypted = ProtoExpert.new("falcon.expert.encrypted",
		"Encrypted past the crypt offset", expert.group.SECURITY, expert.severity.CHAT),
}
p_fal.experts = { E.ETRUNC, E.EVERSION, E.ETYPE, E.EPROTO, E.ELEN, E.EFIELD, E.rsvd,
	E.encrypted }

p_fal.prefs.udp_ports = Pref.range("Falcon data UDP ports", tostring(FALCON_PORT_DEFAULT),
	"UDP ports of Falcon over PSP (falcond --port), e.g. 7470 or 7470,20000-20003", 65535)

-- ---------------------------------------------------------------------------------------
-- helpers
-- ---------------------------------------------------------------------------------------

-- report the first failing check of a layer: expert info + the error field
local function fail(tree, errfield, code, msg)
	local it = tree:add(F[errfield], code)
	it:set_generated()
	it:add_proto_expert_info(E[code], msg .. " (" .. code .. ")")
	return code
end

local function rsvd_check(item, value)
	if value ~= 0 then item:add_proto_expert_info(E.rsvd) end
end

local function u32(tvb, off) return tvb(off, 4):uint() end

-- ---------------------------------------------------------------------------------------
-- RDMA over Falcon (fc_rdma_decode; RDMA spec 8.2, 8.3)
-- ---------------------------------------------------------------------------------------
local function rdma_eth(tvb, off, eth, tree)
	local t = tree:add(tvb(off, eth_len[eth]), eth_names[eth])
	if eth == XRCETH then
		t:add(F.xrc_srq, tvb(off, 4))
	elseif eth == RETH then -- 8.3.1
		t:add(F.reth_va, tvb(off, 8))
		t:add(F.reth_rkey, tvb(off + 8, 4))
		t:add(F.reth_len, tvb(off + 12, 4))
	elseif eth == DETH then -- 8.3.10
		t:add(F.deth_qkey, tvb(off, 4))
		t:add(F.deth_src_qp, tvb(off + 4, 4))
	elseif eth == ATOMIC then -- 8.3.6
		t:add(F.at_va, tvb(off, 8))
		t:add(F.at_rkey, tvb(off + 8, 4))
		t:add(F.at_swap_add, tvb(off + 12, 8))
		t:add(F.at_compare, tvb(off + 20, 8))
	elseif eth == MASKED then -- RFC 7306 figure 4 after VA and R_Key
		t:add(F.ma_va, tvb(off, 8))
		t:add(F.ma_rkey, tvb(off + 8, 4))
		t:add(F.ma_swap_add, tvb(off + 12, 8))
		t:add(F.ma_swap_add_mask, tvb(off + 20, 8))
		t:add(F.ma_compare, tvb(off + 28, 8))
		t:add(F.ma_compare_mask, tvb(off + 36, 8))
	elseif eth == ATOMIC_ACK then -- 8.3.7
		t:add(F.orig, tvb(off, 8))
	elseif eth == SETH then -- 8.3.2
		t:add(F.rmsn, tvb(off, 4))
	elseif eth == OETH then -- 8.3.3
		t:add(F.offset, tvb(off, 4))
	elseif eth == STETH then -- 8.3.4
		t:add(F.steth_va, tvb(off, 8))
		t:add(F.steth_lkey, tvb(off + 8, 4))
	elseif eth == IMMDT then -- 8.3.5
		t:add(F.imm, tvb(off, 4))
	elseif eth == IETH then -- 8.3.8
		t:add(F.inv_rkey, tvb(off, 4))
	end
end

-- tvb: the Falcon payload (RBTH first), ftype: the Falcon packet type carrying it.
-- Returns a short text for the Info column.
local function dissect_rdma(tvb, pinfo, tree, ftype)
	local n = tvb:len()
	local t = tree:add(p_rdma, tvb())
	if n < 12 then
		fail(t, "rerror", "ETRUNC", string.format("%d bytes, the RBTH needs 12", n))
		return "RDMA truncated"
	end
	local opcode, b1 = tvb(0, 1):uint(), tvb(1, 1):uint()
	local rb = t:add(tvb(0, 12), "RBTH")
	rb:add(F.opcode, tvb(0, 1))
	rb:add(F.se, tvb(1, 1))
	rsvd_check(rb:add(F.r, tvb(1, 1)), band(b1, 0x40))
	rb:add(F.pad, tvb(1, 1))
	rb:add(F.rversion, tvb(1, 1))
	rb:add(F.ce, tvb(2, 1))
	rb:add(F.ackreq, tvb(2, 1))
	rsvd_check(rb:add(F.b2_rsvd, tvb(2, 1)), band(tvb(2, 1):uint(), 0x3F))
	rsvd_check(rb:add(F.b3_rsvd, tvb(3, 1)), tvb(3, 1):uint())
	rsvd_check(rb:add(F.dqp_rsvd, tvb(4, 4)), tvb(4, 1):uint())
	rb:add(F.dqp, tvb(4, 4))
	rb:add(F.sn, tvb(8, 4))
	local name = rdma_opcodes[opcode] or string.format("opcode 0x%02x", opcode)
	t:append_text(", " .. name)
	local info = string.format("%s QP=0x%06x SN=%u", name, band(u32(tvb, 4), 0xFFFFFF),
		u32(tvb, 8))

	if band(b1, 0x0F) ~= 1 then
		fail(t, "rerror", "EVERSION", string.format("RBTH version %d, not 1", band(b1, 0x0F)))
		return info
	end
	local eths = opcode_eths(opcode)
	if not eths then
		fail(t, "rerror", "ETYPE", string.format("reserved opcode 0x%02x", opcode))
		return info
	end
	if opcode_falcon_type(opcode) ~= ftype then
		fail(t, "rerror", "ETYPE", string.format("%s does not travel in a %s", name,
			pkt_types[ftype]))
		return info
	end
	local hdr_len = 12
	for e = XRCETH, IETH do
		if eths[e] then hdr_len = hdr_len + eth_len[e] end
	end
	if n < hdr_len then
		fail(t, "rerror", "ETRUNC", string.format("%d bytes, RBTH and ETHs need %d", n,
			hdr_len))
		return info
	end
	local off = 12
	for e = XRCETH, IETH do
		if eths[e] then
			rdma_eth(tvb, off, e, t)
			off = off + eth_len[e]
		end
	end
	-- the length rules (docs/wire.md 6.2, 5)
	local rest, pad = n - hdr_len, rshift(band(b1, 0x30), 4)
	local op = band(opcode, 0x1F)
	local payload_ok = opcode_falcon_type(opcode) ~= PKT_PULL_REQ and op ~= 0x12
	if n % 4 ~= 0 then
		fail(t, "rerror", "ELEN", string.format("%d bytes, not a multiple of 4", n))
	elseif pad > rest then
		fail(t, "rerror", "ELEN", string.format("pad %d > %d bytes after the headers", pad,
			rest))
	elseif rest > 0 and not payload_ok then
		fail(t, "rerror", "ELEN", string.format("%d payload bytes on %s", rest, name))
	elseif (op == 0x0A or op == 0x0B) and
		u32(tvb, 12 + (eths[XRCETH] and 4 or 0) + 12) ~= rest - pad then
		fail(t, "rerror", "ELEN", string.format("RETH length %u, payload %d bytes",
			u32(tvb, 12 + (eths[XRCETH] and 4 or 0) + 12), rest - pad))
	else
		t:add(F.rpayload_len, rest - pad):set_generated()
		if rest - pad > 0 then t:add(F.rpayload, tvb(hdr_len, rest - pad)) end
		if pad > 0 then t:add(F.pad_bytes, tvb(n - pad, pad)) end
	end
	return info
end

-- ---------------------------------------------------------------------------------------
-- Falcon (fc_falcon_decode; spec 7.2 - 7.8)
-- ---------------------------------------------------------------------------------------

-- words 2-7 of BACK / EACK / NACK (spec 7.7.1, 7.8)
local function ack_words(tvb, t, nack)
	t:add(F.rdbpsn, tvb(8, 4))
	t:add(F.rrbpsn, tvb(12, 4))
	t:add(F.t1_ts, tvb(16, 4))
	t:add(F.t2_ts, tvb(20, 4))
	t:add(F.hops, tvb(24, 4))
	t:add(F.rxbuf, tvb(24, 4))
	t:add(F.ecn, tvb(24, 4))
	rsvd_check(t:add(F.cc_rsvd, tvb(24, 4)), band(u32(tvb, 24), 0x1FF))
	rsvd_check(t:add(F.w7_rsvd, tvb(28, 4)), band(u32(tvb, 28), 0xFF000000))
	if nack then
		t:add(F.nack_rue, tvb(28, 4))
	else
		t:add(F.rue, tvb(28, 4))
		t:add(F.own, tvb(28, 4))
	end
end

-- tvb: one Falcon packet (after the PSP header, before the ICV)
local function dissect_falcon(tvb, pinfo, tree)
	local n = tvb:len()
	local t = tree:add(p_fal, tvb())
	if n < 8 then
		fail(t, "error", "ETRUNC", string.format("%d bytes, a Falcon header needs 8", n))
		return "Falcon truncated"
	end
	local w0, w1 = u32(tvb, 0), u32(tvb, 4)
	local version, cid = rshift(w0, 28), band(w0, 0xFFFFFF)
	t:add(F.version, tvb(0, 4))
	rsvd_check(t:add(F.w0_rsvd, tvb(0, 4)), band(w0, 0x0F000000))
	t:add(F.cid, tvb(0, 4))
	if version ~= 1 then
		fail(t, "error", "EVERSION", string.format("Falcon version %d, not 1", version))
		return string.format("Falcon version %d", version)
	end
	local ftype = rshift(band(w1, 0x1E), 1)
	local tname = pkt_types[ftype]
	if not tname then
		t:add(F.pkt_type, tvb(4, 4))
		fail(t, "error", "ETYPE", string.format("reserved packet type 0x%x", ftype))
		return string.format("reserved type 0x%x", ftype)
	end
	t:append_text(", " .. tname)
	local info = string.format("%s CID=0x%06x", tname, cid)
	local hlen = pkt_hdr_len[ftype]
	if n < hlen then
		t:add(F.pkt_type, tvb(4, 4))
		fail(t, "error", "ETRUNC", string.format("%d bytes, the %s header needs %d", n,
			tname, hlen))
		return info
	end
	local err
	if has_base[ftype] then -- spec 7.2
		t:add(F.dest_fn, tvb(4, 4))
		t:add(F.proto, tvb(4, 4))
		t:add(F.pkt_type, tvb(4, 4))
		t:add(F.ar, tvb(4, 4))
		t:add(F.rdbpsn, tvb(8, 4))
		t:add(F.rrbpsn, tvb(12, 4))
		t:add(F.psn, tvb(16, 4))
		t:add(F.rsn, tvb(20, 4))
		info = info .. string.format(" PSN=%u RSN=%u", u32(tvb, 16), u32(tvb, 20))
		local proto = rshift(band(w1, 0xE0), 5)
		if not proto_types[proto] then
			err = fail(t, "error", "EPROTO", string.format("reserved protocol type %d",
				proto))
		end
	else -- BACK, EACK, NACK: w1 has only the packet type (7.7.1)
		rsvd_check(t:add(F.ack_w1_rsvd, tvb(4, 4)), band(w1, 0xFFFFFFE0))
		t:add(F.pkt_type, tvb(4, 4))
		rsvd_check(t:add(F.ack_w1_r, tvb(4, 4)), band(w1, 1))
		ack_words(tvb, t, ftype == PKT_NACK)
		info = info .. string.format(" RDBPSN=%u RRBPSN=%u", u32(tvb, 8), u32(tvb, 12))
	end

	if not err and ftype == PKT_PULL_REQ then -- spec 7.3
		t:add(F.req_len, tvb(24, 2))
		rsvd_check(t:add(F.rsvd16, tvb(26, 2)), tvb(26, 2):uint())
		rsvd_check(t:add(F.rsvd32, tvb(28, 4)), u32(tvb, 28))
	elseif not err and ftype == PKT_PUSH_DATA then -- spec 7.5
		t:add(F.req_len, tvb(24, 2))
		rsvd_check(t:add(F.rsvd16, tvb(26, 2)), tvb(26, 2):uint())
	elseif not err and ftype == PKT_RESYNC then -- spec 7.6
		local w6 = u32(tvb, 24)
		t:add(F.resync_code, tvb(24, 4))
		t:add(F.resync_pkt_type, tvb(24, 4))
		rsvd_check(t:add(F.resync_rsvd, tvb(24, 4)), band(w6, 0xFFFFF))
		t:add(F.vendor, tvb(28, 4))
		local code = rshift(w6, 24)
		info = info .. " " .. (resync_codes[code] or "reserved code")
		if not resync_codes[code] then
			err = fail(t, "error", "EFIELD", string.format("reserved resync code 0x%02x",
				code))
		end
	elseif ftype == PKT_EACK then -- spec 7.7.2
		local b = t:add(tvb(32, 40), "Bitmaps")
		b:add(F.data_ack_hi, tvb(32, 8))
		b:add(F.data_ack_lo, tvb(40, 8))
		b:add(F.data_rx_hi, tvb(48, 8))
		b:add(F.data_rx_lo, tvb(56, 8))
		b:add(F.req_bitmap, tvb(64, 8))
	elseif ftype == PKT_NACK then -- spec 7.8
		local w9 = u32(tvb, 36)
		t:add(F.nack_psn, tvb(32, 4))
		t:add(F.nack_code, tvb(36, 4))
		rsvd_check(t:add(F.nack_rsvd, tvb(36, 4)), band(w9, 0x00C0FF00))
		t:add(F.rnr_timeout, tvb(36, 4))
		t:add(F.window, tvb(36, 4))
		t:add(F.ulp_nack_code, tvb(36, 4))
		local code = rshift(w9, 24)
		info = info .. string.format(" NACK PSN=%u %s", u32(tvb, 32),
			nack_codes[code] or "reserved code")
		if not nack_codes[code] then
			err = fail(t, "error", "EFIELD", string.format("reserved NACK code 0x%02x", code))
		end
	end
	if err then return info end

	-- check 7: lengths
	local plen = n - hlen
	if ftype == PKT_PUSH_DATA and tvb(24, 2):uint() ~= plen then
		fail(t, "error", "ELEN", string.format("request length %u, payload %d bytes",
			tvb(24, 2):uint(), plen))
		return info
	end
	if not has_payload[ftype] then
		if plen ~= 0 then
			fail(t, "error", "ELEN", string.format("%d bytes after the %d-byte %s header",
				plen, hlen, tname))
		end
		return info
	end
	t:add(F.payload_len, plen):set_generated()
	if plen == 0 then return info end
	if rshift(band(w1, 0xE0), 5) == PROTO_RDMA then
		return info .. " " .. dissect_rdma(tvb(hlen, plen):tvb(), pinfo, tree, ftype)
	end
	t:add(F.payload, tvb(hlen, plen))
	return info
end

-- ---------------------------------------------------------------------------------------
-- PSP (fc_psp_decode; docs/wire.md 2, 6.3)
-- ---------------------------------------------------------------------------------------
function p_psp.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	pinfo.cols.protocol = "Falcon"
	local t = tree:add(p_psp, tvb(0, math.min(len, PSP_HDR_LEN)))
	if len < PSP_HDR_LEN then
		fail(t, "psp_error", "ETRUNC", string.format("%d bytes, the PSP header needs 16", len))
		pinfo.cols.info = "PSP truncated"
		return len
	end
	local b3 = tvb(3, 1):uint()
	t:add(F.next_hdr, tvb(0, 1))
	t:add(F.hdr_ext_len, tvb(1, 1))
	rsvd_check(t:add(F.psp_rsvd, tvb(2, 1)), band(tvb(2, 1):uint(), 0xC0))
	t:add(F.crypt_off, tvb(2, 1))
	t:add(F.s, tvb(3, 1))
	t:add(F.d, tvb(3, 1))
	t:add(F.psp_version, tvb(3, 1))
	t:add(F.v, tvb(3, 1))
	t:add(F.one, tvb(3, 1))
	local spi = t:add(F.spi, tvb(4, 4))
	spi:add(F.key_phase, tvb(4, 4))
	spi:add(F.key_id, tvb(4, 4))
	t:add(F.iv, tvb(8, 8))

	local next_hdr, ext = tvb(0, 1):uint(), tvb(1, 1):uint()
	local version, vbit = rshift(band(b3, 0x3C), 2), rshift(band(b3, 0x02), 1)
	local code, msg
	if next_hdr ~= PSP_NEXT_HDR_FALCON then
		code, msg = "EPROTO", string.format("next header %d, not %d (Falcon)", next_hdr,
			PSP_NEXT_HDR_FALCON)
	elseif band(b3, 1) == 0 then
		code, msg = "EFIELD", "the always-1 bit is 0"
	elseif not psp_versions[version] then
		code, msg = "EVERSION", string.format("PSP version 0x%x", version)
	elseif ext < 1 + vbit then
		code, msg = "EFIELD", string.format("hdr ext len %d < %d", ext, 1 + vbit)
	end
	if code then
		fail(t, "psp_error", code, msg)
		pinfo.cols.info = "PSP " .. msg
		return len
	end
	local hdr_len, icv = 8 + 8 * ext, (version == PSP_VER_NULL) and 0 or PSP_ICV_LEN
	if len < hdr_len or len - hdr_len < icv then
		fail(t, "psp_error", "ETRUNC", string.format(
			"%d bytes, header %d + ICV %d", len, hdr_len, icv))
		pinfo.cols.info = "PSP truncated"
		return len
	end
	t:set_len(hdr_len)
	local payload, crypt = len - hdr_len - icv, band(tvb(2, 1):uint(), 0x3F)
	if crypt * 4 > payload then
		fail(t, "psp_error", "ELEN", string.format("crypt offset %d words past the %d-byte "
			.. "Falcon packet", crypt, payload))
		pinfo.cols.info = "PSP crypt offset past the packet"
		return len
	end
	if vbit == 1 then t:add(F.vc, tvb(16, 8)) end
	local ext_from = PSP_HDR_LEN + 8 * vbit
	if hdr_len > ext_from then t:add(F.hdr_ext, tvb(ext_from, hdr_len - ext_from)) end

	local info
	if psp_clear[version] then
		info = dissect_falcon(tvb(hdr_len, payload):tvb(), pinfo, tree)
	else
		-- encrypted past the crypt offset: the clear part is Falcon word 0 (spec 7.1)
		local clear = crypt * 4
		local ft = tree:add(p_fal, tvb(hdr_len, clear))
		info = "encrypted"
		if clear >= 4 then
			local w0 = u32(tvb, hdr_len)
			ft:add(F.version, tvb(hdr_len, 4))
			rsvd_check(ft:add(F.w0_rsvd, tvb(hdr_len, 4)), band(w0, 0x0F000000))
			ft:add(F.cid, tvb(hdr_len, 4))
			info = string.format("encrypted CID=0x%06x", band(w0, 0xFFFFFF))
			if rshift(w0, 28) ~= 1 then
				fail(ft, "error", "EVERSION", string.format("Falcon version %d, not 1",
					rshift(w0, 28)))
			end
		end
		if payload > clear then
			t:add(F.encrypted, tvb(hdr_len + clear, payload - clear))
		end
		t:add(F.encrypted_len, payload - clear):set_generated()
		t:add_proto_expert_info(E.encrypted)
		pinfo.cols.protocol = "Falcon/PSP"
	end
	if icv > 0 then t:add(F.icv, tvb(len - icv, icv)) end
	pinfo.cols.info = info
	return len
end

-- the data ports: registered on udp.port (replacing another protocol's claim on them, so
-- that a datagram between two Falcon ports is Falcon whichever port UDP tries first),
-- moved when the preference changes
local udp_table = DissectorTable.get("udp.port")
local cur_ports = p_fal.prefs.udp_ports
udp_table:add(cur_ports, p_psp)
function p_fal.prefs_changed()
	if p_fal.prefs.udp_ports ~= cur_ports then
		udp_table:remove(cur_ports, p_psp)
		cur_ports = p_fal.prefs.udp_ports
		udp_table:add(cur_ports, p_psp)
	end
end
