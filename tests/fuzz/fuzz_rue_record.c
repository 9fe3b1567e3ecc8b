/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target of the CC event / result records (daemon/engine/rue_queue.c,
 * spec 10.6.2).
 *
 * Input: up to 64 bytes (shorter inputs are zero-padded, the rest is ignored), read as
 * an event record and as a result record. Each is unpacked, packed again and must give
 * back the input with its reserved bits cleared (the masks are written out here from
 * the spec tables, not taken from the module); the struct must fit its field widths and
 * unpack again to the same struct. Anything else abort()s.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rue_queue.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(c)                                                                         \
	do {                                                                               \
		if (!(c))                                                                  \
			abort();                                                           \
	} while (0)

/* Clear record bits [from, to] (MSB-first numbering: bit n = 0x80 >> n % 8 of byte n/8). */
static void clear_bits(uint8_t *rec, unsigned from, unsigned to)
{
	unsigned n;

	for (n = from; n <= to; n++)
		rec[n / 8] &= (uint8_t)~(0x80u >> (n % 8));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t in[FC_RUE_REC_BYTES] = { 0 }, want[FC_RUE_REC_BYTES], out[FC_RUE_REC_BYTES];
	struct fc_cc_event ev, ev2;
	struct fc_cc_result r, r2;

	memcpy(in, data, size < sizeof(in) ? size : sizeof(in));

	/* event: reserved 255..262 and 404..510 (10.6.2.1) */
	memcpy(want, in, sizeof(want));
	clear_bits(want, 255, 262);
	clear_bits(want, 404, 510);
	fc_cc_event_unpack(in, &ev);
	REQUIRE(fc_cc_event_fits(&ev));
	fc_cc_event_pack(&ev, out);
	REQUIRE(memcmp(out, want, sizeof(out)) == 0);
	fc_cc_event_unpack(out, &ev2);
	REQUIRE(memcmp(&ev, &ev2, sizeof(ev)) == 0); /* unpack zero-fills padding too */

	/* result: padding 248..510 (10.6.2.2 + 4 bits up to 64 bytes, gen at 511) */
	memcpy(want, in, sizeof(want));
	clear_bits(want, 248, 510);
	fc_cc_result_unpack(in, &r);
	REQUIRE(fc_cc_result_fits(&r));
	fc_cc_result_pack(&r, out);
	REQUIRE(memcmp(out, want, sizeof(out)) == 0);
	fc_cc_result_unpack(out, &r2);
	REQUIRE(memcmp(&r, &r2, sizeof(r)) == 0);
	return 0;
}
