/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encap_null.c - PSP version NULL around every Falcon packet (encap_null.h).
 */
#include <errno.h>

#include "encap_null.h"
#include "falcon/wire.h"
#include "wire_outer.h"

static int null_seal(void *ctx, struct fc_frame *f, uint32_t len)
{
	struct fc_encap_null *e = ctx;
	uint64_t now = e->now_ns();
	struct fc_psp_info h = {
		.next_hdr = FC_PSP_NEXT_HDR_FALCON,
		.crypt_off = FC_PSP_CRYPT_OFF_FALCON,
		.version = FC_PSP_VER_NULL,
		.iv = now > e->last_iv ? now : e->last_iv + 1, /* strictly increasing */
	};
	int n = fc_psp_encode(&h, f->buf, FC_PSP_HDR_LEN);

	if (n != FC_PSP_HDR_LEN) /* cannot happen: a fixed, valid header */
		return -EINVAL;
	e->last_iv = h.iv;
	f->len = FC_PSP_HDR_LEN + len;
	return 0;
}

static int null_open(void *ctx, struct fc_frame *f)
{
	struct fc_encap_null *e = ctx;
	struct fc_psp_info h;
	size_t off, len;

	if (fc_psp_decode(f->buf, f->len, &h, &off, &len) < 0 || h.version != FC_PSP_VER_NULL) {
		e->rx_bad_hdr++;
		return -EPROTO;
	}
	f->buf += off;
	f->len = (uint32_t)len;
	f->meta.tx_ns = h.iv;
	return 0;
}

const struct fc_encap_ops fc_encap_null_ops = {
	.headroom = FC_PSP_HDR_LEN, .tailroom = 0, .seal = null_seal, .open = null_open,
};
