/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report_text.h - one report as a human-readable line (replay, attach without export). */
#ifndef ROCEMETER_REPORT_TEXT_H
#define ROCEMETER_REPORT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rocemeter/report.h"

/*
 * One report as a line, times in ISO-8601 UTC, the epoch's state and
 * closure reason in words (rm_report_state_text()), its sequence health
 * (health.h) in parentheses. Compact (wide = 0), for a terminal: the end
 * time to the second, requests and the counters that are not 0:
 *   "2026-06-17T08:20:12 SRC > DST qp 0x00002b e1 r2 closed (seen late) req=10 skip=1 fill=1"
 * Wide: every field of the report:
 *   "SRC > DST qp 0x.. pkey 0x.. observation point N [vlan A/B] epoch E report R
 *    START .. END W n STATE (HEALTH) [flag names] requests=.. skipped=.. ... unclassified_late=.."
 */
void rm_report_write_text(FILE *f, const struct rm_report *r, int wide);

/*
 * The closure reasons of a final report ([SEQOBS] "Defined Masks": the
 * bits of RM_FLAG_REASON_MASK), each one an operator acts on (a disabled
 * connection, an interrupted capture such as mirror loss, a full context
 * table, a PSN jump), in the order of precedence when several are set:
 * X(suffix, words, head). RM_FLAG_<suffix> is its mask, rm_flag_name() of
 * it its key (JSON, CSV, report --reason), words the text's, head the
 * column of report --summary. An idle closure, the end of a capture and a
 * shutdown have no flag: they are no closure reason.
 */
#define RM_CLOSURE_REASONS(X)                                             \
	X(PROFILE_VIOLATION, "profile violation", "VIOLATION")            \
	X(CAPTURE_DISCONTINUITY, "capture discontinuity", "CAPTURE DISC") \
	X(STATE_EXHAUSTION, "state exhaustion (evicted)", "EVICTED")      \
	X(SERIAL_DISCONTINUITY, "serial discontinuity", "SERIAL DISC")

enum rm_closure {
#define RM_CLOSURE_ENUM_(suffix, words, head) RM_CLOSURE_##suffix,
	RM_CLOSURE_REASONS(RM_CLOSURE_ENUM_)
#undef RM_CLOSURE_ENUM_
		RM_CLOSURE__N
};

/* A closure reason's flag mask, key ("captureDiscontinuity"), words and --summary column; 0 or NULL out of range. */
uint16_t rm_closure_mask(enum rm_closure c);
const char *rm_closure_key(enum rm_closure c);
const char *rm_closure_words(enum rm_closure c);
const char *rm_closure_head(enum rm_closure c);

/* The first closure reason of flags in the table's order, or -1 when flags hold none. */
int rm_closure_of(uint16_t flags);

/* The closure reason whose key is name (rm_closure_key(), ASCII case ignored), or -1. */
int rm_closure_by_key(const char *name);

/*
 * The state of a report's epoch in words: "open" (no finalEpoch), else
 * "closed" and the closure reason when a reason bit is set: "closed:
 * profile violation", "closed: capture discontinuity", "closed: state
 * exhaustion (evicted)", "closed: serial discontinuity".
 */
const char *rm_report_state_text(uint16_t flags);

/*
 * The closure reason a report's flags give, in words (rm_closure_words()
 * of rm_closure_of()); NULL when no closure-reason bit is set (an idle
 * closure, the end of the input, a shutdown: [SEQOBS] has no flag for
 * these).
 */
const char *rm_closure_reason_text(uint16_t flags);

/*
 * The set rdmaSequenceFlags bits, comma-separated, into buf (len bytes,
 * always terminated; "" if none): each defined bit by its name (RM_FLAGS in
 * rocemeter/seqobs.h), lowest first, then all unassigned bits together as
 * one more item, their mask as in [SEQOBS]'s table: "0x" and four lowercase
 * hex digits. 0x00e1 gives "finalEpoch,generationUnverified,0x00c0". The
 * longest text (0xffff) is 113 bytes with the NUL.
 */
void rm_flags_to_text(uint16_t flags, char *buf, size_t len);

/* The name of one defined rdmaSequenceFlags mask ("finalEpoch"), NULL for any other value. */
const char *rm_flag_name(uint16_t mask);

#endif
