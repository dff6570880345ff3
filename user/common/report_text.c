// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_text.c - reports as text lines (see report_text.h). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <string.h>

#include "report_text.h"
#include "rocemeter/seqobs.h"

void rm_flags_to_text(uint16_t flags, char *buf, size_t len)
{
	static const struct {
		uint16_t mask;
		const char *name;
	} names[] = {
		{ RM_FLAG_FINAL_EPOCH, "finalEpoch" },
		{ RM_FLAG_PROFILE_VIOLATION, "profileViolation" },
		{ RM_FLAG_CAPTURE_DISCONTINUITY, "captureDiscontinuity" },
		{ RM_FLAG_STATE_EXHAUSTION, "stateExhaustion" },
		{ RM_FLAG_SERIAL_DISCONTINUITY, "serialDiscontinuity" },
		{ RM_FLAG_GENERATION_UNVERIFIED, "generationUnverified" },
	};
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & names[i].mask)
			off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s", off ? "," : "",
						names[i].name);
	if (flags & ~RM_FLAG_DEFINED_MASK)
		snprintf(buf + off, off < len ? len - off : 0, "%sunknown(0x%04x)", off ? "," : "",
			 flags & ~RM_FLAG_DEFINED_MASK);
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
