/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_table.h - report's text tables: a header and rows of columns, each
 * padded to a width (numbers right-aligned), the last one as long as its
 * text; the default epoch line (one row per epoch) on it. Used by
 * cmd_report.c, report_summary.c and report_html.c.
 */
#ifndef ROCEMETER_REPORT_TABLE_H
#define ROCEMETER_REPORT_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "common/health.h"
#include "store/store_read.h"

/* One column: its header, its width (a longer cell widens its row only), right-aligned or not. */
struct rm_table_col {
	const char *head;
	int width;
	int right;
};

/*
 * One row (cells NULL: the header line) of n columns, one space between
 * them, no trailing blank, '\n' at the end.
 */
void rm_table_row(FILE *f, const struct rm_table_col *cols, size_t n, const char *const *cells);

/* A count as a table cell: "-" for 0, else the number. buf holds 24 bytes. */
const char *rm_table_count(unsigned long long v, char *buf);

/*
 * The connection of an epoch as report's tables show it, in the form
 * --connection takes: "SRC,DST,0xQP", then ",0xPKEY" when the P_Key is not
 * the default 0xffff, and " vlan A/B" with the VLAN namespace keys. Returns
 * buf.
 */
char *rm_table_connection(const char *src, const char *dst, unsigned long long qp, unsigned long long pkey,
			  int has_vlan, unsigned long long vlan0, unsigned long long vlan1, char *buf, size_t len);

/* The observation point as a cell: "POINT", "DOMAIN/POINT" when the Observation Domain is not 0. */
char *rm_table_point(unsigned long long domain, unsigned long long point, char *buf, size_t len);

/*
 * The counters of an epoch's latest accepted report that its sequence health
 * is read from (health.h); all 0 for an epoch without one (check
 * e->null[RM_ER_REQ] first: it has no sequence to show).
 */
struct rm_health_counters rm_table_health(const struct rm_epoch_read *e);

/*
 * The default text of `report`: one row per epoch, with a header before the
 * first (FLOW END to the second, EPOCH, OUTCOME, OP, CONNECTION, REQUESTS,
 * SEQUENCE: the health with its counts, then the closure reason when a
 * closure-reason flag was seen; the session is in --verbose and JSON). With
 * collector_width > 0 a COLLECTOR column that wide comes first.
 * *header_done is set once the header is printed.
 */
void rm_table_epoch(FILE *f, const struct rm_epoch_read *e, int collector_width, int *header_done);

#endif /* ROCEMETER_REPORT_TABLE_H */
