/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report_text.h - one report as a human-readable line (replay, attach without export). */
#ifndef ROCEMETER_REPORT_TEXT_H
#define ROCEMETER_REPORT_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "rocemeter/report.h"

/* "SRC > DST qp 0x.. pkey 0x.. epoch E report R [final,...] requests=.. skipped=.. ..." */
void rm_report_write_text(FILE *f, const struct rm_report *r);

/* Names of the set rdmaSequenceFlags bits, comma-separated, into buf ("" if none). */
void rm_flags_to_text(uint16_t flags, char *buf, size_t len);

#endif
