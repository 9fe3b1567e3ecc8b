/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the transaction sublayer with a hostile peer: the input is a script of steps
 * (arbitrary Falcon packets for our connection, ULP pushes and pulls, answers to the
 * requests the peer's packets produced, timer firings). Whatever arrives: no crash,
 * every transaction of ours completes at most once, every request is answered at most
 * once, and once the connection is torn down the engine holds no resources.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "txn.h"

#define MAXT 256
static uint8_t completed[MAXT];
static uint32_t pending[64];
static unsigned npending;

static void on_complete(void *ctx, struct fc_txn *t, const struct fc_txn_cmpl *c)
{
	(void)ctx;
	(void)t;
	if (c->cookie >= MAXT || completed[c->cookie]++)
		abort(); /* completed twice, or never submitted */
	if (c->len && !c->data)
		abort();
}

static void on_request(void *ctx, struct fc_txn *t, const struct fc_txn_req *r)
{
	(void)ctx;
	(void)t;
	if (r->len && !r->data)
		abort();
	if (npending < 64)
		pending[npending++] = r->rsn; /* answered by a later step */
}

static const struct fc_txn_ops ops = { .complete = on_complete, .request = on_request };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t payload[4096], out[8192];
	struct fc_txn_engine_cfg ec;
	struct fc_txn_conn_cfg cc;
	struct fc_txn_engine *e;
	struct fc_txn *t;
	struct fc_txn *from;
	uint64_t now = 1000, ncookie = 0;
	size_t i = 0;

	fc_txn_engine_cfg_default(&ec);
	ec.max_conns = 2;
	for (int r = 0; r < FC_TXN_RES_COUNT; r++) /* small pools: fast runs, and full ones */
		ec.cap[r] = r == FC_TXN_REQ_BUF_TX || r == FC_TXN_DATA_BUF_TX ||
			    r == FC_TXN_REQ_BUF_RX || r == FC_TXN_NET_BUF_RX ? 256 : 32;
	fc_txn_conn_cfg_default(&cc);
	cc.pdl.local_cid = 1;
	cc.pdl.remote_cid = 2;
	cc.pdl.max_retx = 2;
	cc.pdl.ordered = size & 1;
	e = fc_txn_engine_new(&ec);
	if (!e)
		abort();
	t = fc_txn_conn_new(e, &cc, &ops, NULL);
	if (!t)
		abort();
	memset(completed, 0, sizeof(completed));
	npending = 0;
	while (i + 2 <= size) {
		uint8_t op = data[i];
		uint16_t len = data[i + 1];
		const uint8_t *arg = data + i + 2;
		size_t avail = size - i - 2;

		if (len > avail)
			len = (uint16_t)avail;
		i += 2 + (size_t)len;
		now += (uint64_t)(op >> 3) * 1013;
		switch (op & 7) {
		case 0: case 1: case 2: { /* a packet from the peer, our CID forced */
			uint8_t pkt[512];

			memcpy(pkt, arg, len);
			if (len >= 4) {
				pkt[1] = 0;
				pkt[2] = 0;
				pkt[3] = 1;
			}
			fc_txn_engine_rx(e, pkt, len, now - 700, now);
			break;
		}
		case 3: /* the ULP starts a transaction */
			if (ncookie < MAXT) {
				int rc = (op & 0x80) ? fc_txn_push(t, payload, len, ncookie, now, NULL)
						     : fc_txn_pull(t, payload, len % 64, len, ncookie, now, NULL);
				if (rc == 0 || rc == FC_TXN_REJECTED)
					ncookie++;
			}
			break;
		case 4: /* answer a request */
			if (npending) {
				uint32_t rsn = pending[--npending];

				switch (op >> 5) {
				case 0: fc_txn_rnr(t, rsn, op & 0x1F, now); break;
				case 1: fc_txn_nack(t, rsn, (uint8_t)(op >> 3), 0, now); break;
				default:
					if (fc_txn_accept(t, rsn, now) == 0)
						fc_txn_pull_data(t, rsn, payload, len, now);
				}
			}
			break;
		case 5: /* time passes */
			if (fc_txn_engine_next_deadline(e) != UINT64_MAX &&
			    fc_txn_engine_next_deadline(e) > now)
				now = fc_txn_engine_next_deadline(e);
			fc_txn_engine_on_timer(e, now);
			break;
		default: /* transmit what may go */
			for (int k = 0; k < 64 &&
			     fc_txn_engine_poll_tx(e, now, out, sizeof(out), &from) > 0; k++)
				;
			break;
		}
	}
	fc_txn_conn_free(t);
	for (int r = 0; r < FC_TXN_RES_COUNT; r++)
		if (fc_txn_engine_used(e, (enum fc_txn_res)r))
			abort(); /* a torn-down connection left resources behind */
	fc_txn_engine_free(e);
	return 0;
}
