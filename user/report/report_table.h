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

/* One column: its header, its least width (0: as its header and cells need), right-aligned or not. */
struct rm_table_col {
	const char *head;
	int width;
	int right;
};

/* Rows held back to size the columns: the widths fit these; a longer cell later widens its row only. */
#define RM_TABLE_LOOKAHEAD 1024
#define RM_TABLE_MAX_COLS  24

/*
 * A table being printed: a header, then rows, each column padded to the
 * widest of its header and its cells in the first RM_TABLE_LOOKAHEAD rows
 * (in characters: UTF-8 code points), numbers right-aligned, one space
 * between columns, the last left-aligned column as long as its text. Every
 * cell is escaped (safe_text.h rm_text_escape()): no control character,
 * bidirectional override or invalid UTF-8 reaches the terminal.
 */
struct rm_table {
	FILE *f;
	struct rm_table_col cols[RM_TABLE_MAX_COLS];
	size_t n;      /* columns, 0 before the first row */
	char **held;   /* n_rows * n escaped cells not printed yet */
	size_t n_rows; /* rows held back */
	int printed;   /* the header is out: the widths are fixed */
};

/* An empty table printed to f. */
void rm_table_init(struct rm_table *t, FILE *f);

/*
 * One row of n cells (n <= RM_TABLE_MAX_COLS); the first row's cols are the
 * table's. Out of memory, the rows so far are printed at their widths.
 */
void rm_table_add(struct rm_table *t, const struct rm_table_col *cols, size_t n, const char *const *cells);

/* Print what is held back (the header only when a row was added) and free it. */
void rm_table_end(struct rm_table *t);

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
 * The default text of `report`: one row per epoch into t, after a header
 * (FLOW END to the second, SESSION: the epoch's Transport Session, in which
 * EPOCH counts from 1, EPOCH, OUTCOME, OP: the observation point and its
 * name when known, CONNECTION, REQUESTS, SEQUENCE: the health with its
 * counts, then the closure reason when a closure-reason flag was seen).
 * With collector_width > 0 a COLLECTOR column at least that wide comes
 * first.
 */
void rm_table_epoch(struct rm_table *t, const struct rm_epoch_read *e, int collector_width);

#endif /* ROCEMETER_REPORT_TABLE_H */
