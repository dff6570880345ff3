// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_text.c - reports as text lines (see report_text.h). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <string.h>

#include "report_text.h"
#include "timefmt.h"
#include "rocemeter/seqobs.h"

const char *rm_flag_name(uint16_t mask)
{
	switch (mask) {
#define FLAG_NAME_(suffix, m, name, meaning) \
	case m:                              \
		return name;
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

const char *rm_report_state_text(uint16_t flags)
{
	if (!(flags & RM_FLAG_FINAL_EPOCH))
		return "open";
	if (flags & RM_FLAG_PROFILE_VIOLATION)
		return "closed: profile violation";
	if (flags & RM_FLAG_CAPTURE_DISCONTINUITY)
		return "closed: capture discontinuity";
	if (flags & RM_FLAG_STATE_EXHAUSTION)
		return "closed: state exhaustion (evicted)";
	if (flags & RM_FLAG_SERIAL_DISCONTINUITY)
		return "closed: serial discontinuity";
	return "closed";
}

void rm_report_write_text(FILE *f, const struct rm_report *r, int wide)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], flags[160], t0[RM_TIME_TEXT_LEN], t1[RM_TIME_TEXT_LEN];
	int af = r->family == 6 ? AF_INET6 : AF_INET;

	inet_ntop(af, r->src, src, sizeof(src));
	inet_ntop(af, r->dst, dst, sizeof(dst));
	rm_time_format(r->flow_end_ms, t1, sizeof(t1));
	if (!wide) {
		/*
		 * The end time to the second, the key, the state in words, the counters that are not 0
		 * most often, and the losses: positions expired from the window or abandoned at closure.
		 */
		t1[19] = 0;
		fprintf(f,
			"%s %s > %s qp 0x%06" PRIx32 " e%" PRIu64 " r%" PRIu64 " %s req=%" PRIu64 " skip=%" PRIu64
			" exp=%" PRIu64 " aban=%" PRIu64 " rep=%" PRIu64 " late=%" PRIu64 "\n",
			t1, src, dst, r->dest_qp, r->epoch_id, r->report_id, rm_report_state_text(r->flags),
			r->requests, r->skipped, r->expired, r->abandoned, r->repeated, r->unclassified_late);
		return;
	}
	rm_flags_to_text(r->flags, flags, sizeof(flags));
	rm_time_format(r->flow_start_ms, t0, sizeof(t0));
	fprintf(f, "%s > %s qp 0x%06" PRIx32 " pkey 0x%04" PRIx16 " observation point %" PRIu64, src, dst, r->dest_qp,
		r->pkey, r->observation_point_id);
	if (r->has_vlan_ns)
		fprintf(f, " vlan %u/%u", r->vlan[0], r->vlan[1]);
	fprintf(f,
		" epoch %" PRIu64 " report %" PRIu64 " %s .. %s W %" PRIu32 " %s [%s] requests=%" PRIu64
		" skipped=%" PRIu64 " filled=%" PRIu64 " expired=%" PRIu64 " abandoned=%" PRIu64 " pending=%" PRIu32
		" repeated=%" PRIu64 " unclassified_late=%" PRIu64 "\n",
		r->epoch_id, r->report_id, t0, t1, r->window, rm_report_state_text(r->flags), flags, r->requests,
		r->skipped, r->filled, r->expired, r->abandoned, r->pending, r->repeated, r->unclassified_late);
}
