/* SPDX-License-Identifier: Apache-2.0 */
/* fault.c - seeded fault injection between the node and its I/O backend (fault.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"

#define PPM 1000000u

struct held_rx {
	struct fc_frame f;
	struct fc_peer_addr peer;
	uint8_t bytes[FC_FAULT_FRAME_BYTES];
};

struct fc_fault {
	struct fc_fault_cfg cfg;
	const struct fc_io_ops *inner;
	void *ictx;
	uint64_t rng;
	struct fc_frame tx_held[FC_FAULT_HOLD_MAX];
	unsigned ntx_held;
	struct held_rx rx_held[FC_FAULT_HOLD_MAX]; /* copies released into the next batch */
	unsigned nrx_held;
	struct held_rx rx_out[FC_FAULT_HOLD_MAX];  /* the copies handed out in this batch */
	struct fc_fault_stats st;
};

static uint64_t next(struct fc_fault *f)
{
	/* xorshift64* */
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return f->rng * 0x2545F4914F6CDD1Dull;
}

static int hit(struct fc_fault *f, uint32_t ppm)
{
	return ppm && (next(f) % PPM) < ppm;
}

static void corrupt(struct fc_fault *f, struct fc_frame *fr)
{
	uint64_t r = next(f);

	if (fr->len)
		fr->buf[(r >> 8) % fr->len] ^= (uint8_t)(1u << (r & 7));
}

/* ---- parsing ---- */

static int parse_value(const char *v, size_t n, uint32_t *ppm)
{
	char tmp[32], *end;
	double x;

	if (!n || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, v, n);
	tmp[n] = 0;
	x = strtod(tmp, &end);
	if (end == tmp || x < 0)
		return -EINVAL;
	if (!strcmp(end, "%"))
		x *= PPM / 100.0;
	else if (!strcmp(end, "ppm"))
		;
	else if (!*end)
		x *= PPM;
	else
		return -EINVAL;
	if (x > PPM)
		return -EINVAL;
	*ppm = (uint32_t)(x + 0.5);
	return 0;
}

int fc_fault_parse_dir(const char *s, struct fc_fault_dir *out)
{
	struct fc_fault_dir d = { 0 };

	if (!s || !out)
		return -EINVAL;
	while (*s) {
		const char *eq = strchr(s, '='), *end = strchr(s, ',');
		uint32_t *dst;
		size_t klen;

		if (!end)
			end = s + strlen(s);
		if (!eq || eq > end)
			return -EINVAL;
		klen = (size_t)(eq - s);
		if (klen == 4 && !strncmp(s, "drop", 4))
			dst = &d.drop_ppm;
		else if (klen == 3 && !strncmp(s, "dup", 3))
			dst = &d.dup_ppm;
		else if (klen == 7 && !strncmp(s, "reorder", 7))
			dst = &d.reorder_ppm;
		else if (klen == 7 && !strncmp(s, "corrupt", 7))
			dst = &d.corrupt_ppm;
		else
			return -EINVAL;
		if (parse_value(eq + 1, (size_t)(end - eq - 1), dst))
			return -EINVAL;
		s = *end ? end + 1 : end;
	}
	*out = d;
	return 0;
}

/* ---- transmit: an io_ops over the inner backend ---- */

static unsigned f_tx_alloc(void *io, struct fc_frame *fr, unsigned n)
{
	struct fc_fault *f = io;

	return f->inner->tx_alloc(f->ictx, fr, n);
}

static void f_tx_return(void *io, struct fc_frame *fr, unsigned n)
{
	struct fc_fault *f = io;

	f->inner->tx_return(f->ictx, fr, n);
}

/* Send the held frames (after what has just been sent: that is the reordering). */
void fc_fault_flush_tx(struct fc_fault *f)
{
	if (f && f->ntx_held) {
		unsigned n = f->ntx_held;

		f->ntx_held = 0;
		f->inner->tx_send(f->ictx, f->tx_held, n);
	}
}

/* What the node sees as taken: frames lost "on the wire" or held count as sent; of the
 * frames the backend got, the duplicates are ours and do not count. */
static unsigned f_tx_send(void *io, struct fc_frame *fr, unsigned n)
{
	struct fc_fault *f = io;
	const struct fc_fault_dir *d = &f->cfg.tx;
	struct fc_frame out[2 * FC_NODE_BATCH_MAX];
	unsigned k = 0, kept = 0, ndup = 0, sent = 0;

	for (unsigned i = 0; i < n; i++) {
		if (k + 2 > sizeof(out) / sizeof(out[0])) { /* more than a batch: pass it on */
			sent += f->inner->tx_send(f->ictx, out, k);
			k = 0;
		}
		if (hit(f, d->drop_ppm)) {
			f->st.tx_drop++;
			f->inner->tx_return(f->ictx, &fr[i], 1);
			kept++;
			continue;
		}
		if (hit(f, d->corrupt_ppm)) {
			f->st.tx_corrupt++;
			corrupt(f, &fr[i]);
		}
		if (hit(f, d->dup_ppm)) {
			struct fc_frame dup;

			if (f->inner->tx_alloc(f->ictx, &dup, 1) == 1) {
				if (dup.cap >= fr[i].len) {
					memcpy(dup.buf, fr[i].buf, fr[i].len);
					dup.len = fr[i].len;
					dup.peer = fr[i].peer;
					out[k++] = dup;
					ndup++;
					f->st.tx_dup++;
				} else {
					f->inner->tx_return(f->ictx, &dup, 1);
				}
			}
		}
		if (f->ntx_held < FC_FAULT_HOLD_MAX && hit(f, d->reorder_ppm)) {
			f->tx_held[f->ntx_held++] = fr[i];
			f->st.tx_reorder++;
			kept++;
			continue;
		}
		out[k++] = fr[i];
	}
	if (k)
		sent += f->inner->tx_send(f->ictx, out, k);
	/* the node's batch went out: frames held before it may go now, behind it */
	if (f->ntx_held && hit(f, PPM / 2))
		fc_fault_flush_tx(f);
	sent = sent > ndup ? sent - ndup : 0;
	return kept + sent > n ? n : kept + sent;
}

static uint16_t f_peer_port(void *io, const struct fc_peer_addr *a)
{
	struct fc_fault *f = io;

	return f->inner->peer_port ? f->inner->peer_port(f->ictx, a) : 0;
}

const struct fc_io_ops fc_fault_ops = {
	.name = "fault",
	.tx_alloc = f_tx_alloc,
	.tx_send = f_tx_send,
	.tx_return = f_tx_return,
	.peer_port = f_peer_port,
};

/* ---- receive ---- */

unsigned fc_fault_rx(struct fc_fault *f, struct fc_frame *fr, unsigned n, unsigned cap)
{
	const struct fc_fault_dir *d = &f->cfg.rx;
	unsigned k = 0, released = f->nrx_held;

	/* last batch's held copies move to rx_out: they go behind this batch's frames */
	if (released) {
		memcpy(f->rx_out, f->rx_held, sizeof(f->rx_held[0]) * released);
		f->nrx_held = 0;
	}
	for (unsigned i = 0; i < n; i++) {
		struct fc_frame x = fr[i];

		if (hit(f, d->drop_ppm)) {
			f->st.rx_drop++;
			continue;
		}
		if (hit(f, d->corrupt_ppm)) {
			f->st.rx_corrupt++;
			corrupt(f, &x);
		}
		if (x.len <= FC_FAULT_FRAME_BYTES && f->nrx_held < FC_FAULT_HOLD_MAX &&
		    hit(f, d->reorder_ppm)) {
			struct held_rx *h = &f->rx_held[f->nrx_held++];

			memcpy(h->bytes, x.buf, x.len);
			h->f = x;
			if (x.peer) {
				h->peer = *x.peer;
			}
			f->st.rx_reorder++;
			continue;
		}
		fr[k++] = x;
		if (k < cap && hit(f, d->dup_ppm)) {
			fr[k++] = x;
			f->st.rx_dup++;
		}
	}
	for (unsigned i = 0; i < released && k < cap; i++) {
		struct held_rx *h = &f->rx_out[i];

		h->f.buf = h->bytes;
		h->f.peer = h->f.peer ? &h->peer : NULL;
		fr[k++] = h->f;
	}
	return k;
}

/* ---- life ---- */

struct fc_fault *fc_fault_new(const struct fc_fault_cfg *cfg, const struct fc_io_ops *inner,
			      void *inner_ctx)
{
	struct fc_fault *f;
	const struct fc_fault_dir *d[2] = { &cfg->tx, &cfg->rx };

	if (!cfg || !inner) {
		errno = EINVAL;
		return NULL;
	}
	for (int i = 0; i < 2; i++)
		if (d[i]->drop_ppm > PPM || d[i]->dup_ppm > PPM || d[i]->reorder_ppm > PPM ||
		    d[i]->corrupt_ppm > PPM) {
			errno = EINVAL;
			return NULL;
		}
	f = calloc(1, sizeof(*f));
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->cfg = *cfg;
	f->inner = inner;
	f->ictx = inner_ctx;
	f->rng = cfg->seed ? cfg->seed : 0x9E3779B97F4A7C15ull;
	return f;
}

void fc_fault_free(struct fc_fault *f)
{
	if (!f)
		return;
	fc_fault_flush_tx(f);
	free(f);
}

const struct fc_fault_stats *fc_fault_stats(const struct fc_fault *f)
{
	return &f->st;
}
