/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the RDMA responder: peer bytes that become memory writes. A responder (the RDMA
 * layer over a transaction engine) has one RC connection and QP, receive buffers posted,
 * and registered memory laid out between guard regions:
 *
 *   [guard][RW: remote read/write/atomic][guard][RO: remote read only][guard][RECV][guard]
 *
 * The input is a sequence of records, each turned into one Falcon packet from the peer
 * (next PSN and RSN of its window, so the packet is new and in order):
 *   op(1) key(1) off(2) len(2) flags(1) payload(len, at most what is left)
 * op picks WRITE Only / SEND Only / READ Request / CmpSwap / FetchAdd / masked atomics,
 * or raw bytes as the whole RDMA payload; key picks the RW key, the RO key, or 4 input
 * bytes; off moves the virtual address around the region (below and past it too); flags
 * corrupt the QP number or the sequence number. The responder answers, its output is
 * drained, timers run. After every input: every guard byte and every RO byte is as it
 * was (only RW and RECV may change), and the engine is freed without leaks (ASan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdma.h"
#include "wire_falcon.h"
#include "wire_rdma.h"

#define REG 4096u
#define GUARD 512u
#define IOVA 0x100000ull
#define MEMSZ (4 * REG + 5 * GUARD)
#define RW_OFF GUARD
#define RO_OFF (GUARD + REG + GUARD)
#define RECV_OFF (RO_OFF + REG + GUARD)
#define PAT_GUARD 0xA5
#define MTU 1024u

static uint32_t rand_state;

static uint32_t key_rand(void *ctx)
{
	(void)ctx;
	rand_state = rand_state * 1664525u + 1013904223u;
	return rand_state;
}

static void fill_expected(uint8_t *m)
{
	memset(m, PAT_GUARD, MEMSZ);
	for (uint32_t i = 0; i < REG; i++) {
		m[RW_OFF + i] = (uint8_t)i;
		m[RO_OFF + i] = (uint8_t)(i * 3 + 1);
		m[RECV_OFF + i] = 0;
	}
}

static int in_region(size_t i, size_t off)
{
	return i >= off && i < off + REG;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t mem[MEMSZ], want[MEMSZ], out[MTU + 256], pkt[MTU + 256];
	struct fc_txn_engine_cfg ec;
	struct fc_rdma_cfg rc;
	struct fc_txn_conn_cfg cc;
	struct fc_rdma_qp_init qi;
	struct fc_mr_keys rw, ro, rv;
	struct fc_txn_engine *e;
	struct fc_mr_table *mrs;
	struct fc_rdma *d;
	struct fc_txn *t;
	uint32_t pd, cq, qpn, psn[2] = { 1000, 5000 }, rsn = 0, sn = 0;
	uint64_t now = 1000;
	size_t i = 0;

	rand_state = 1;
	fill_expected(want);
	memcpy(mem, want, sizeof(mem));
	fc_txn_engine_cfg_default(&ec);
	ec.max_conns = 2;
	ec.mtu_bytes = MTU + FC_RDMA_HDR_MAX;
	fc_rdma_cfg_default(&rc);
	rc.mtu_bytes = MTU;
	rc.max_conns = 2;
	rc.max_qps = rc.max_cqs = rc.max_srqs = rc.max_ahs = 4;
	e = fc_txn_engine_new(&ec);
	mrs = fc_mr_table_new(8, 2, key_rand, NULL);
	if (!e || !mrs)
		abort();
	d = fc_rdma_new(&rc, e, mrs);
	if (!d || fc_pd_alloc(mrs, &pd) ||
	    fc_mr_reg(mrs, pd, mem + RW_OFF, IOVA + RW_OFF, REG, FC_MR_ACCESS_ALL, &rw) ||
	    fc_mr_reg(mrs, pd, mem + RO_OFF, IOVA + RO_OFF, REG, FC_MR_REMOTE_READ, &ro) ||
	    fc_mr_reg(mrs, pd, mem + RECV_OFF, IOVA + RECV_OFF, REG, FC_MR_LOCAL_WRITE, &rv) ||
	    fc_rdma_cq_create(d, 64, &cq))
		abort();
	fc_txn_conn_cfg_default(&cc);
	cc.pdl.local_cid = 7;
	cc.pdl.remote_cid = 9;
	cc.pdl.tx_psn[0] = cc.pdl.rx_psn[0] = psn[0];
	cc.pdl.tx_psn[1] = cc.pdl.rx_psn[1] = psn[1];
	t = fc_rdma_conn_open(d, &cc);
	fc_rdma_qp_init_default(&qi);
	qi.pd = pd;
	qi.send_cq = qi.recv_cq = cq;
	qi.conn = t;
	if (!t || fc_rdma_qp_create(d, &qi, &qpn))
		abort();
	{
		struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_INIT };

		if (fc_rdma_qp_modify(d, qpn, &at))
			abort();
		at.state = FC_RDMA_QPS_RTR;
		at.remote_qpn = 0x42;
		if (fc_rdma_qp_modify(d, qpn, &at))
			abort();
		at.state = FC_RDMA_QPS_RTS;
		if (fc_rdma_qp_modify(d, qpn, &at))
			abort();
	}
	for (uint32_t k = 0; k < 4; k++) { /* receive buffers for SENDs */
		struct fc_sge s = { .addr = IOVA + RECV_OFF + k * (REG / 4), .len = REG / 4,
				    .lkey = rv.lkey };
		struct fc_rdma_recv_wr r = { .wr_id = k, .num_sge = 1, .sgl = &s };

		if (fc_rdma_post_recv(d, qpn, &r))
			abort();
	}

	for (int rec = 0; rec < 64 && i + 7 <= size; rec++) {
		uint8_t op = data[i], key = data[i + 1], flags = data[i + 6];
		uint16_t off = (uint16_t)(data[i + 2] | data[i + 3] << 8);
		uint32_t len = (uint32_t)(data[i + 4] | data[i + 5] << 8) % (MTU + 1);
		struct fc_rdma_hdrs h = {0};
		struct fc_falcon_pkt f = {0};
		const uint8_t *pl;
		uint64_t base = (key & 4) ? IOVA + RO_OFF : IOVA + RW_OFF;
		int n, type;

		i += 7;
		if (len > size - i)
			len = (uint32_t)(size - i);
		pl = data + i;
		i += len;
		h.dqp = (flags & 1) ? (uint32_t)off << 8 : qpn;
		h.sn = (flags & 2) ? (uint32_t)key << 4 : sn;
		h.reth.va = h.atomic.va = base + off - 1024; /* below, inside and past it */
		h.reth.rkey = h.atomic.rkey = (key & 3) == 0 ? rw.rkey : (key & 3) == 1 ? ro.rkey :
			(key & 3) == 2 ? rw.rkey ^ (uint32_t)(off << 8) : rv.rkey;
		h.atomic.swap_add = (uint64_t)off * 0x100000001ull;
		h.atomic.compare = (uint64_t)key;
		h.atomic.swap_add_mask = h.atomic.compare_mask = ~0ull;
		switch (op % 8) {
		case 0:
			h.opcode = FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_WRITE_ONLY);
			h.reth.len = len;
			break;
		case 1:
			h.opcode = FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_SEND_ONLY);
			h.rmsn = (flags & 4) ? off : 1 + (sn & 3);
			break;
		case 2:
			h.opcode = FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_READ_REQ);
			h.reth.len = len;
			len = 0;
			break;
		case 3:
			h.opcode = FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_CMP_SWAP);
			len = 0;
			break;
		case 4:
			h.opcode = FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_FETCH_ADD);
			len = 0;
			break;
		case 5:
			h.opcode = FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_MASKED_CMP_SWAP);
			len = 0;
			break;
		case 6:
			h.opcode = FC_RDMA_OPCODE(FC_RDMA_CLASS_RC, FC_RDMA_MASKED_FETCH_ADD);
			len = 0;
			break;
		default:
			h.opcode = 0xFF; /* raw: the record's bytes are the RDMA payload */
			break;
		}
		if (h.opcode == 0xFF) {
			n = (int)len;
			memcpy(pkt, pl, len);
			type = (flags & 8) ? FC_PKT_PULL_REQ : FC_PKT_PUSH_DATA;
		} else {
			n = fc_rdma_encode(&h, pl, len, pkt, sizeof(pkt));
			if (n < 0)
				continue; /* the encoder refuses it: nothing to send */
			type = fc_rdma_opcode_falcon_type(h.opcode);
		}
		f.type = (uint8_t)type;
		f.cid = 7;
		f.proto = FC_PROTO_RDMA;
		f.rdbpsn = 5000;
		f.rrbpsn = 1000;
		f.psn = type == FC_PKT_PULL_REQ ? psn[0]++ : psn[1]++;
		f.rsn = rsn++;
		f.payload = pkt;
		f.payload_len = (size_t)n;
		f.req_len = type == FC_PKT_PUSH_DATA ? (uint16_t)n : (uint16_t)(h.reth.len + 64);
		n = fc_falcon_encode(&f, out, sizeof(out));
		if (n < 0)
			continue;
		sn++;
		fc_rdma_rx(d, out, (size_t)n, now, now);
		for (int k = 0; k < 64 && fc_rdma_poll_tx(d, now, out, sizeof(out), NULL) > 0; k++)
			; /* answers to nobody */
		now += 50000;
		if (fc_rdma_next_deadline(d) <= now)
			fc_rdma_on_timer(d, now);
		{
			struct fc_rdma_wc wc[8];

			while (fc_rdma_poll_cq(d, cq, wc, 8) > 0)
				;
		}
	}
	/* peer bytes may change RW (remote write and atomic) and RECV (SEND); nothing else */
	for (size_t k = 0; k < MEMSZ; k++)
		if (!in_region(k, RW_OFF) && !in_region(k, RECV_OFF) && mem[k] != want[k])
			abort();
	fc_rdma_free(d);
	fc_txn_engine_free(e);
	fc_mr_table_free(mrs);
	return 0;
}
