/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "wire_err.h"

const char *fc_wire_strerror(int err)
{
	static const char *const names[FC_WIRE_ERR_END - FC_WIRE_ETRUNC] = {
		[FC_WIRE_ETRUNC - FC_WIRE_ETRUNC] = "truncated packet",
		[FC_WIRE_EVERSION - FC_WIRE_ETRUNC] = "unsupported version",
		[FC_WIRE_ETYPE - FC_WIRE_ETRUNC] = "reserved or unknown packet type or opcode",
		[FC_WIRE_EPROTO - FC_WIRE_ETRUNC] = "not a falcon packet",
		[FC_WIRE_ELEN - FC_WIRE_ETRUNC] = "length field disagrees with packet",
		[FC_WIRE_EFIELD - FC_WIRE_ETRUNC] = "reserved or invalid field value",
		[FC_WIRE_ECSUM - FC_WIRE_ETRUNC] = "checksum mismatch",
		[FC_WIRE_ENOSPC - FC_WIRE_ETRUNC] = "output buffer too small",
		[FC_WIRE_EINVAL - FC_WIRE_ETRUNC] = "value does not fit its field",
	};
	int e = abs(err);

	if (e >= FC_WIRE_ETRUNC && e < FC_WIRE_ERR_END)
		return names[e - FC_WIRE_ETRUNC];
	return strerror(e);
}
