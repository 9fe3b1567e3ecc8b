/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the packet delivery sublayer's receive path: the input is a script of steps
 * (packets from a hostile peer, submissions, ULP acks/nacks, timer firings) run against
 * one PDL. Whatever arrives, the PDL must not crash, must release every submitted packet
 * at most once, and must keep its outstanding count consistent with what it released.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pdl.h"

#define MAXSUB 512

static int released[MAXSUB];
static struct fc_pdl *P;

static int deliver(void *ctx, const struct fc_pdl_rx_pkt *pkt, struct fc_pdl_nack *nack)
{
	(void)ctx;
	if (pkt->len && !pkt->payload)
		abort();
	if (pkt->psn % 7 == 3) { /* refuse some, with an invalid code now and then */
		nack->code = (uint8_t)(pkt->psn % 11);
		nack->rnr_timeout = (uint8_t)(pkt->rsn & 0x3F);
		return 1;
	}
	return 0;
}

static void tx_done(void *ctx, uint64_t cookie, uint32_t rsn, enum fc_tx_status st, uint8_t code)
{
	(void)ctx;
	(void)rsn;
	(void)st;
	(void)code;
	if (cookie >= MAXSUB || released[cookie]++)
		abort(); /* released twice, or something never submitted */
}

static const struct fc_pdl_ops ops = { .deliver = deliver, .tx_done = tx_done };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t payload[256], out[4096];
	struct fc_pdl_cfg cfg;
	uint64_t now = 1000;
	size_t i = 0;
	unsigned nsub = 0;

	fc_pdl_cfg_default(&cfg);
	cfg.local_cid = 1;
	cfg.remote_cid = 2;
	cfg.max_retx = 2;
	cfg.tx_psn[0] = cfg.rx_psn[0] = 0xFFFFFFF0u; /* wrap inside the run */
	cfg.tx_psn[1] = cfg.rx_psn[1] = 0xFFFFFF80u;
	memset(released, 0, sizeof(released));
	P = fc_pdl_new(&cfg, NULL, &ops, NULL);
	if (!P)
		abort();
	while (i + 2 <= size) {
		uint8_t op = data[i], len = data[i + 1];
		const uint8_t *arg = data + i + 2;
		size_t avail = size - i - 2;

		if (len > avail)
			len = (uint8_t)avail;
		i += 2 + (size_t)len;
		now += (uint64_t)(op >> 3) * 997;
		switch (op & 7) {
		case 0: case 1: case 2: /* a packet from the peer */
			fc_pdl_rx(P, arg, len, now - 500, now);
			break;
		case 3: { /* the ULP submits */
			struct fc_pdl_tx_req r = { .type = (uint8_t)(len % 3 == 0 ? FC_PKT_PULL_REQ :
						   len % 3 == 1 ? FC_PKT_PUSH_DATA : FC_PKT_PULL_DATA),
						   .rsn = nsub, .payload = payload, .len = len,
						   .cookie = nsub };
			if (nsub < MAXSUB && fc_pdl_submit(P, &r) == 0)
				nsub++;
			break;
		}
		case 4: { /* ULP ack or nack of a PSN near the base */
			uint32_t psn = fc_pdl_rx_state(P)->data.base + (len & 0x7F);
			if (op & 0x80)
				fc_pdl_ulp_nack(P, (len & 1) ? FC_WIN_REQ : FC_WIN_DATA, psn,
						(uint8_t)(op >> 3), len & 0x1F, 0, now);
			else
				fc_pdl_ulp_ack(P, psn, now);
			break;
		}
		case 5: /* time passes to the next deadline */
			if (fc_pdl_next_deadline(P) != UINT64_MAX && fc_pdl_next_deadline(P) > now)
				now = fc_pdl_next_deadline(P);
			fc_pdl_on_timer(P, now);
			break;
		default: /* transmit whatever may go */
			for (int k = 0; k < 64 && fc_pdl_poll_tx(P, now, out, sizeof(out)) > 0; k++)
				;
			break;
		}
	}
	unsigned rel = 0;
	for (unsigned k = 0; k < nsub; k++)
		rel += (unsigned)released[k];
	if (rel + fc_pdl_outstanding(P, FC_WIN_REQ) + fc_pdl_outstanding(P, FC_WIN_DATA) != nsub)
		abort(); /* every submitted packet is either outstanding or released once */
	fc_pdl_free(P);
	return 0;
}
