/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report_text.h - one report as a human-readable line (replay, attach without export). */
#ifndef ROCEMETER_REPORT_TEXT_H
#define ROCEMETER_REPORT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rocemeter/report.h"

/* "SRC > DST qp 0x.. pkey 0x.. epoch E report R [final,...] requests=.. skipped=.. ..." */
void rm_report_write_text(FILE *f, const struct rm_report *r);

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
