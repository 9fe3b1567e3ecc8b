/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the rate update engine: arbitrary CC event records (unpacked from the input, so
 * every field is within its wire width, as from the queue) run through Swift and PLB
 * for a few connections, with the result fed back as the next event's state, as the
 * PDL does. Every result must fit its field widths and keep the windows in range.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rue.h"
#include "rue_queue.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fc_rue *r;
	static struct fc_rue_cfg cfg;
	struct fc_cc_result res, state[4];
	uint32_t now = 0;

	if (!r) {
		fc_rue_cfg_default(&cfg);
		cfg.plb_enable = 1;
		r = fc_rue_new(&cfg, 16);
		if (!r)
			abort();
	}
	memset(state, 0, sizeof(state));
	for (size_t off = 0; off + 64 <= size; off += 64) {
		struct fc_cc_event ev;
		uint32_t c;

		fc_cc_event_unpack(data + off, &ev);
		c = ev.cid & 3;
		ev.cid = c;
		if (off) { /* carry the previous result's state, as the PDL does */
			ev.fcwnd_fp = state[c].fcwnd_fp ? state[c].fcwnd_fp : ev.fcwnd_fp;
			ev.ncwnd = state[c].ncwnd ? state[c].ncwnd : ev.ncwnd;
			ev.fabric_window_time_marker_ts = state[c].fabric_window_time_marker_ts;
			ev.nic_window_time_marker_ts = state[c].nic_window_time_marker_ts;
			ev.delay_state_ts = state[c].delay_state_ts;
			ev.rtt_state_ts = state[c].rtt_state_ts;
			ev.cc_opaque = state[c].cc_opaque;
		}
		now += data[off] * 97u;
		if (fc_rue_process(r, &ev, now & FC_TS24_MASK, &res) < 0)
			continue;
		if (!fc_cc_result_fits(&res) || res.fcwnd_fp > 256 * FC_CWND_ONE ||
		    res.fcwnd_fp < 10 || res.ncwnd < 1 || res.ncwnd > 256 || res.cid != c)
			abort();
		state[c] = res;
	}
	return 0;
}
