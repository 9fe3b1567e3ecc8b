/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz window.h against the reference model: the input is a sequence of operations
 * (mark received with or without ACK, ULP ack, advance, check, take OWN) on PSNs around
 * the window, starting near the 2^32 wrap. Any disagreement with the model aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "falcon/window.h"
#include "window_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fc_win w;
	static struct model m;
	uint32_t size_w;

	if (size < 1)
		return 0;
	size_w = (data[0] & 1) ? FC_DATA_WIN : FC_REQ_WIN;
	memset(&m, 0, sizeof(m));
	m.start = m.base = 0xFFFFFFFFu - (data[0] >> 1);
	m.size = size_w;
	fc_win_init(&w, size_w, m.base);
	for (size_t i = 1; i + 1 < size && m.base - m.start < MODEL_SPAN; i += 2) {
		uint8_t op = data[i];
		uint32_t psn = m.base + data[i + 1] - 32; /* old, in window and beyond */
		__u64 rx[2], ack[2];

		switch (op & 7) {
		case 0: case 1: case 2:
			if ((int)fc_win_mark_rx(&w, psn, op & 8) != model_mark(&m, psn, (op & 8) != 0))
				abort();
			break;
		case 3:
			if (fc_win_check(&w, psn) != (fc_win_classify(m.base, size_w, psn) != FC_WIN_NEW ?
						     fc_win_classify(m.base, size_w, psn) :
						     m.rx[psn - m.start] ? FC_WIN_DUP : FC_WIN_NEW))
				abort();
			break;
		case 4: case 5:
			if (fc_win_mark_ack(&w, psn) != model_ack(&m, psn))
				abort();
			break;
		case 6:
			if (fc_win_advance(&w) != model_advance(&m))
				abort();
			break;
		default:
			if (fc_win_own_take(&w) != m.own)
				abort();
			m.own = 0;
			if (fc_win_snapshot(&w, rx, ack) != m.base)
				abort();
			for (uint32_t j = 0; j < size_w; j++)
				if (((rx[j / 64] >> (j % 64)) & 1) != m.rx[m.base + j - m.start] ||
				    ((ack[j / 64] >> (j % 64)) & 1) != m.ack[m.base + j - m.start])
					abort();
			break;
		}
	}
	return 0;
}
