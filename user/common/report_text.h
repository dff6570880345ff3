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
 * The state of a report's epoch in words: "open" (no finalEpoch), else
 * "closed" and the closure reason when a reason bit is set: "closed:
 * profile violation", "closed: capture discontinuity", "closed: state
 * exhaustion (evicted)", "closed: serial discontinuity".
 */
const char *rm_report_state_text(uint16_t flags);

/*
 * The closure reason a report's flags give, in words: "profile violation",
 * "capture discontinuity", "state exhaustion (evicted)" or "serial
 * discontinuity" (the first set, in that order); NULL when no
 * closure-reason bit is set (an idle closure, the end of the input, a
 * shutdown: [SEQOBS] has no flag for these).
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
