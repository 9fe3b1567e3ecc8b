/* SPDX-License-Identifier: Apache-2.0 */
/* sim_io.c - the simulator's link as a node backend (sim_io.h). */
#include <errno.h>
#include <string.h>

#include "sim_icv.h"
#include "sim_io.h"

void sim_peer_addr(uint32_t ep, struct fc_peer_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->len = sizeof(ep);
	memcpy(a->bytes, &ep, sizeof(ep));
}

static unsigned io_tx_alloc(void *io, struct fc_frame *f, unsigned n)
{
	struct sim_node *s = io;

	if (!n || s->tx_given || !s->tx_buf)
		return 0; /* the sim takes one packet per poll_tx call */
	s->tx_given = 1;
	f[0] = (struct fc_frame){ .buf = s->tx_buf, .cap = s->tx_cap };
	return 1;
}

static unsigned io_tx_send(void *io, struct fc_frame *f, unsigned n)
{
	struct sim_node *s = io;

	if (n != 1 || f[0].buf != s->tx_buf || !f[0].peer || f[0].peer->len != sizeof(uint32_t))
		return 0;
	memcpy(&s->tx_dst, f[0].peer->bytes, sizeof(s->tx_dst));
	s->tx_len = f[0].len;
	s->tx_sent = 1;
	return 1;
}

static void io_tx_return(void *io, struct fc_frame *f, unsigned n)
{
	(void)io;
	(void)f;
	(void)n;
}

const struct fc_io_ops sim_io_ops = {
	.name = "sim", .tx_alloc = io_tx_alloc, .tx_send = io_tx_send, .tx_return = io_tx_return,
};

static int icv_seal(void *ctx, struct fc_frame *f, uint32_t len)
{
	(void)ctx;
	f->len = (uint32_t)sim_icv_seal(f->buf, (int)len);
	return 0;
}

static int icv_open(void *ctx, struct fc_frame *f)
{
	int n = sim_icv_open(f->buf, f->len);

	(void)ctx;
	if (n < 0)
		return -EBADMSG;
	f->len = (uint32_t)n;
	return 0;
}

const struct fc_encap_ops sim_icv_encap = {
	.headroom = 0, .tailroom = SIM_ICV_LEN, .seal = icv_seal, .open = icv_open,
};

static int stopped(const struct sim_node *s) { return s->stop && *s->stop; }

static int ep_on_packet(void *ctx, uint64_t now, const uint8_t *data, uint32_t len,
			const struct sim_pkt_info *info)
{
	struct sim_node *s = ctx;
	struct fc_peer_addr from;
	struct fc_frame f;

	if (len > sizeof(s->rx_buf))
		return -EMSGSIZE;
	if (s->rx_hook && len >= s->trailer &&
	    (!s->trailer || sim_icv_open(data, len) >= 0)) { /* intact packets only */
		int v = s->rx_hook(s->hook_ctx, now, data, len - s->trailer);

		if (v == SIM_IO_FAIL)
			return -EPROTO;
		if (v == SIM_IO_DROP)
			return stopped(s) ? -EPROTO : 0;
	}
	/* the wire's copy: the node may open (decrypt) a frame in place */
	memcpy(s->rx_buf, data, len);
	sim_peer_addr(info->src, &from);
	f = (struct fc_frame){ .buf = s->rx_buf, .len = len, .cap = sizeof(s->rx_buf),
			       .peer = &from,
			       .meta = { .tx_ns = info->meta, .now_ns = now } };
	fc_node_rx_batch(s->node, &f, 1);
	return stopped(s) ? -EPROTO : 0;
}

static uint64_t ep_next_deadline(void *ctx)
{
	struct sim_node *s = ctx;

	return fc_node_next_deadline(s->node);
}

static int ep_on_timer(void *ctx, uint64_t now)
{
	struct sim_node *s = ctx;

	fc_node_on_timer(s->node, now);
	return stopped(s) ? -EPROTO : 0;
}

static int ep_poll_tx(void *ctx, uint64_t now, uint8_t *buf, uint32_t cap,
		      struct sim_pkt_info *info)
{
	struct sim_node *s = ctx;

	for (;;) {
		int v = SIM_IO_PASS;

		s->tx_buf = buf;
		s->tx_cap = cap;
		s->tx_given = s->tx_sent = 0;
		fc_node_poll_tx(s->node, now, 1);
		s->tx_buf = NULL;
		if (stopped(s))
			return -EPROTO;
		if (!s->tx_sent) {
			if (!s->held_len)
				return 0;
			/* the held packet goes when nothing else does */
			memcpy(buf, s->held, s->held_len);
			s->tx_len = s->held_len;
			s->tx_dst = s->held_dst;
			s->held_len = 0;
			break;
		}
		if (s->tx_hook && s->tx_len >= s->trailer)
			v = s->tx_hook(s->hook_ctx, now, buf, s->tx_len - s->trailer);
		if (v == SIM_IO_FAIL)
			return -EPROTO;
		if (v == SIM_IO_DROP)
			continue;
		if (v == SIM_IO_HOLD && !s->held_len && s->tx_len <= sizeof(s->held)) {
			memcpy(s->held, buf, s->tx_len);
			s->held_len = s->tx_len;
			s->held_dst = s->tx_dst;
			continue;
		}
		break; /* with one held already, a second goes now */
	}
	info->dst = s->tx_dst;
	info->meta = now; /* the PSP IV: transmit time */
	return (int)s->tx_len;
}

const struct sim_endpoint_ops sim_node_ep_ops = {
	.on_packet = ep_on_packet, .next_deadline = ep_next_deadline, .on_timer = ep_on_timer,
	.poll_tx = ep_poll_tx,
};
