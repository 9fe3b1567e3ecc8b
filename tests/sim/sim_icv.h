/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_icv.h - an integrity trailer standing in for the PSP ICV in simulations: a sender
 * seals each packet with an FNV-1a hash of its bytes; the receiver opens it and drops
 * what a corrupting link changed, as a failed ICV check would (spec 9.2.2.1).
 */
#ifndef FC_SIM_ICV_H
#define FC_SIM_ICV_H

#include <stdint.h>
#include <string.h>

#include "sim.h"

#define SIM_ICV_LEN 8u

/* Append the trailer to the n bytes in buf (room for SIM_ICV_LEN more is the caller's);
 * returns the sealed length. */
static inline int sim_icv_seal(uint8_t *buf, int n)
{
	uint64_t t = sim_fnv1a(SIM_FNV_OFFSET, buf, (size_t)n);

	memcpy(buf + n, &t, SIM_ICV_LEN);
	return n + (int)SIM_ICV_LEN;
}

/* Length of the packet inside a sealed one, or -1 when the trailer does not match. */
static inline int sim_icv_open(const uint8_t *data, uint32_t len)
{
	uint64_t t;

	if (len < SIM_ICV_LEN)
		return -1;
	memcpy(&t, data + len - SIM_ICV_LEN, SIM_ICV_LEN);
	return t == sim_fnv1a(SIM_FNV_OFFSET, data, len - SIM_ICV_LEN) ? (int)(len - SIM_ICV_LEN) : -1;
}

#endif
