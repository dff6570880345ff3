// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_text.c - reports as text lines (see report_text.h). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>

#include "health.h"
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

/* The closure reasons by enum rm_closure (RM_CLOSURE_REASONS). */
static const struct {
	uint16_t mask;
	const char *words, *state, *head;
} closures[RM_CLOSURE__N] = {
#define CLOSURE_ROW_(suffix, words_, head_) \
	{ .mask = RM_FLAG_##suffix, .words = words_, .state = "closed: " words_, .head = head_ },
	RM_CLOSURE_REASONS(CLOSURE_ROW_)
#undef CLOSURE_ROW_
};

uint16_t rm_closure_mask(enum rm_closure c)
{
	return (unsigned)c < RM_CLOSURE__N ? closures[c].mask : 0;
}

const char *rm_closure_key(enum rm_closure c)
{
	return rm_flag_name(rm_closure_mask(c));
}

const char *rm_closure_words(enum rm_closure c)
{
	return (unsigned)c < RM_CLOSURE__N ? closures[c].words : NULL;
}

const char *rm_closure_head(enum rm_closure c)
{
	return (unsigned)c < RM_CLOSURE__N ? closures[c].head : NULL;
}

int rm_closure_of(uint16_t flags)
{
	for (int c = 0; c < RM_CLOSURE__N; c++)
		if (flags & closures[c].mask)
			return c;
	return -1;
}

int rm_closure_by_key(const char *name)
{
	for (int c = 0; c < RM_CLOSURE__N; c++)
		if (name && !strcasecmp(name, rm_closure_key((enum rm_closure)c)))
			return c;
	return -1;
}

const char *rm_closure_reason_text(uint16_t flags)
{
	return rm_closure_words((enum rm_closure)rm_closure_of(flags));
}

const char *rm_report_state_text(uint16_t flags)
{
	int c = rm_closure_of(flags);

	if (!(flags & RM_FLAG_FINAL_EPOCH))
		return "open";
	return c < 0 ? "closed" : closures[c].state;
}

/* The health of a report in words: "clean", "never seen, seen late" (health.h). */
static void health_words(const struct rm_report *r, char *buf, size_t len)
{
	struct rm_health_counters c = {
		.expired = r->expired,
		.abandoned = r->abandoned,
		.pending = r->pending,
		.filled = r->filled,
		.repeated = r->repeated,
		.unclassified_late = r->unclassified_late,
	};

	rm_health_text(rm_health_of(&c), NULL, buf, len);
}

void rm_report_write_text(FILE *f, const struct rm_report *r, int wide)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], flags[160], t0[RM_TIME_TEXT_LEN], t1[RM_TIME_TEXT_LEN];
	char health[128];
	int af = r->family == 6 ? AF_INET6 : AF_INET;

	inet_ntop(af, r->src, src, sizeof(src));
	inet_ntop(af, r->dst, dst, sizeof(dst));
	rm_time_format(r->flow_end_ms, t1, sizeof(t1));
	health_words(r, health, sizeof(health));
	if (!wide) {
		/*
		 * The end time to the second, the key, the state and the closure reason in words, the
		 * health, the requests and the counters that are not 0 (a swapped pair shows skip=1
		 * fill=1, not an open gap).
		 */
		const struct {
			const char *name;
			uint64_t v;
		} counters[] = { { "skip", r->skipped },          { "fill", r->filled },  { "exp", r->expired },
				 { "aban", r->abandoned },        { "pend", r->pending }, { "rep", r->repeated },
				 { "late", r->unclassified_late } };

		t1[19] = 0;
		fprintf(f, "%s %s > %s qp 0x%06" PRIx32 " e%" PRIu64 " r%" PRIu64 " %s (%s) req=%" PRIu64, t1, src, dst,
			r->dest_qp, r->epoch_id, r->report_id, rm_report_state_text(r->flags), health, r->requests);
		for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
			if (counters[i].v)
				fprintf(f, " %s=%" PRIu64, counters[i].name, counters[i].v);
		fputc('\n', f);
		return;
	}
	rm_flags_to_text(r->flags, flags, sizeof(flags));
	rm_time_format(r->flow_start_ms, t0, sizeof(t0));
	fprintf(f, "%s > %s qp 0x%06" PRIx32 " pkey 0x%04" PRIx16 " observation point %" PRIu64, src, dst, r->dest_qp,
		r->pkey, r->observation_point_id);
	if (r->has_vlan_ns)
		fprintf(f, " vlan %u/%u", r->vlan[0], r->vlan[1]);
	fprintf(f,
		" epoch %" PRIu64 " report %" PRIu64 " %s .. %s W %" PRIu32 " %s (%s) [%s] requests=%" PRIu64
		" skipped=%" PRIu64 " filled=%" PRIu64 " expired=%" PRIu64 " abandoned=%" PRIu64 " pending=%" PRIu32
		" repeated=%" PRIu64 " unclassified_late=%" PRIu64 "\n",
		r->epoch_id, r->report_id, t0, t1, r->window, rm_report_state_text(r->flags), health, flags,
		r->requests, r->skipped, r->filled, r->expired, r->abandoned, r->pending, r->repeated,
		r->unclassified_late);
}
