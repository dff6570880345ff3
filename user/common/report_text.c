// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_text.c - reports as text lines (see report_text.h). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <string.h>

#include "report_text.h"
#include "rocemeter/seqobs.h"

const char *rm_flag_name(uint16_t mask)
{
	switch (mask) {
#define FLAG_NAME_(suffix, m, name, meaning) case m: return name;
	RM_FLAGS(FLAG_NAME_)
#undef FLAG_NAME_
	default:
		return NULL;
	}
}

void rm_flags_to_text(uint16_t flags, char *buf, size_t len)
{
	uint16_t unknown = flags & ~RM_FLAG_DEFINED_MASK;
	size_t off = 0;

	if (len)
		buf[0] = 0;
	for (unsigned bit = 0; bit < 16; bit++) {
		uint16_t mask = (uint16_t)(1u << bit);

		if ((flags & mask) && rm_flag_name(mask))
			off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s", off ? "," : "",
						rm_flag_name(mask));
	}
	if (unknown)
		snprintf(buf + off, off < len ? len - off : 0, "%s0x%04x", off ? "," : "", unknown);
}

void rm_report_write_text(FILE *f, const struct rm_report *r)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], flags[160];
	int af = r->family == 6 ? AF_INET6 : AF_INET;

	inet_ntop(af, r->src, src, sizeof(src));
	inet_ntop(af, r->dst, dst, sizeof(dst));
	rm_flags_to_text(r->flags, flags, sizeof(flags));
	fprintf(f,
		"%s > %s qp 0x%06" PRIx32 " pkey 0x%04" PRIx16 " epoch %" PRIu64 " report %" PRIu64 " W %" PRIu32
		" [%s] requests=%" PRIu64 " skipped=%" PRIu64 " filled=%" PRIu64 " expired=%" PRIu64
		" abandoned=%" PRIu64 " pending=%" PRIu32 " repeated=%" PRIu64 " unclassified_late=%" PRIu64 "\n",
		src, dst, r->dest_qp, r->pkey, r->epoch_id, r->report_id, r->window, flags, r->requests, r->skipped,
		r->filled, r->expired, r->abandoned, r->pending, r->repeated, r->unclassified_late);
}
