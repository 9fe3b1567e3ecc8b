/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target of the JSON reader (daemon/jread.c) and of the Prometheus renderer
 * over what it reads (daemon/prom.c): any bytes parse or are refused without a fault,
 * and any tree renders, each document in turn in each of the four places (status,
 * stats, peers, conns). The text made must be NUL-terminated at its length.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jread.h"
#include "prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *p = buf, *text;
	struct fc_jv *v;
	size_t len;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	v = fc_jparse(&p);
	for (int place = 0; v && place < 4; place++) {
		const struct fc_jv *d[4] = { NULL };

		d[place] = v;
		if (fc_prom_render(d[0], d[1], d[2], d[3], &text, &len) == 0) {
			if (strlen(text) != len)
				abort();
			free(text);
		}
	}
	fc_jfree(v);
	free(buf);
	return 0;
}
