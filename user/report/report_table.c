// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_table.c - report's text tables and the default epoch line (see
 * report_table.h). The line keeps [SEQOBS]'s separation: the outcome is
 * report coverage, the SEQUENCE column what the PSN sequence showed; the
 * full prose (qualifications, coverage, ignored records) is --verbose.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/health.h"
#include "common/report_text.h"
#include "common/safe_text.h"
#include "common/timefmt.h"
#include "report_table.h"

static void pad(FILE *f, int n)
{
	static const char blanks[] = "                                ";

	for (; n > 0; n -= (int)sizeof(blanks) - 1)
		fwrite(blanks, 1, n < (int)sizeof(blanks) - 1 ? (size_t)n : sizeof(blanks) - 1, f);
}

/* One row (cells NULL: the header) at the widths of t->cols, one space between columns, no trailing blank. */
static void table_row(const struct rm_table *t, const char *const *cells)
{
	for (size_t i = 0; i < t->n; i++) {
		const char *s = cells ? cells[i] : t->cols[i].head;
		int n = t->cols[i].width - (int)rm_text_columns(s);

		if (i)
			fputc(' ', t->f);
		if (t->cols[i].right)
			pad(t->f, n);
		fputs(s, t->f);
		if (!t->cols[i].right && i < t->n - 1)
			pad(t->f, n);
	}
	fputc('\n', t->f);
}

/* The widths from the rows held back, then the header and those rows: from here on rows go straight out. */
static void table_flush(struct rm_table *t)
{
	if (t->printed || !t->n)
		return;
	for (size_t i = 0; i < t->n; i++) {
		int w = (int)rm_text_columns(t->cols[i].head);

		if (t->cols[i].width < w)
			t->cols[i].width = w;
		for (size_t r = 0; r < t->n_rows; r++)
			if (t->cols[i].width < (w = (int)rm_text_columns(t->held[r * t->n + i])))
				t->cols[i].width = w;
	}
	table_row(t, NULL);
	for (size_t r = 0; r < t->n_rows; r++)
		table_row(t, (const char *const *)t->held + r * t->n);
	for (size_t k = 0; k < t->n_rows * t->n; k++)
		free(t->held[k]);
	free(t->held);
	t->held = NULL;
	t->n_rows = 0;
	t->printed = 1;
}

void rm_table_init(struct rm_table *t, FILE *f)
{
	memset(t, 0, sizeof(*t));
	t->f = f;
}

void rm_table_add(struct rm_table *t, const struct rm_table_col *cols, size_t n, const char *const *cells)
{
	char *row[RM_TABLE_MAX_COLS] = { NULL };
	size_t k = 0;

	if (!t->n) {
		t->n = n < RM_TABLE_MAX_COLS ? n : RM_TABLE_MAX_COLS;
		memcpy(t->cols, cols, t->n * sizeof(*cols));
	}
	for (; k < t->n; k++) { /* escaped: a name an older store kept before the rule (safe_text.h) */
		size_t cap = 4 * strlen(cells[k]) + 1;

		if (!(row[k] = malloc(cap)))
			break;
		rm_text_escape(cells[k], row[k], cap);
	}
	if (k == t->n && !t->printed && !t->held)
		t->held = malloc(RM_TABLE_LOOKAHEAD * t->n * sizeof(*t->held));
	if (k == t->n && !t->printed && t->held) {
		memcpy(t->held + t->n_rows++ * t->n, row, t->n * sizeof(*row));
		if (t->n_rows == RM_TABLE_LOOKAHEAD)
			table_flush(t);
		return;
	}
	table_flush(t); /* out of memory: the widths so far */
	if (k == t->n)
		table_row(t, (const char *const *)row);
	while (k)
		free(row[--k]);
}

void rm_table_end(struct rm_table *t)
{
	table_flush(t);
}

const char *rm_table_count(unsigned long long v, char *buf)
{
	if (!v)
		return "-";
	snprintf(buf, 24, "%llu", v);
	return buf;
}

char *rm_table_connection(const char *src, const char *dst, unsigned long long qp, unsigned long long pkey,
			  int has_vlan, unsigned long long vlan0, unsigned long long vlan1, char *buf, size_t len)
{
	int off = snprintf(buf, len, "%s,%s,0x%llx", src, dst, qp);

	if (pkey != 0xffff && off >= 0 && (size_t)off < len)
		off += snprintf(buf + off, len - (size_t)off, ",0x%04llx", pkey);
	if (has_vlan && off >= 0 && (size_t)off < len)
		snprintf(buf + off, len - (size_t)off, " vlan %llu/%llu", vlan0, vlan1);
	return buf;
}

char *rm_table_point(unsigned long long domain, unsigned long long point, char *buf, size_t len)
{
	if (domain)
		snprintf(buf, len, "%llu/%llu", domain, point);
	else
		snprintf(buf, len, "%llu", point);
	return buf;
}

/* The columns of the epoch line: each as wide as its header and its cells (rm_table_add()). */
static const struct rm_table_col epoch_cols[] = {
	{ "COLLECTOR", 0, 0 }, { "FLOW END", 0, 0 },   { "SESSION", 0, 1 },  { "EPOCH", 0, 1 },    { "OUTCOME", 0, 0 },
	{ "OP", 0, 1 },        { "CONNECTION", 0, 0 }, { "REQUESTS", 0, 1 }, { "SEQUENCE", 0, 0 },
};
#define N_EPOCH_COLS (sizeof(epoch_cols) / sizeof(epoch_cols[0]))

#define U(e, c)   ((unsigned long long)(e)->u[RM_ER_##c])
#define T(e, c)   ((e)->t[RM_ER_##c])
#define NUL(e, c) ((e)->null[RM_ER_##c])

struct rm_health_counters rm_table_health(const struct rm_epoch_read *e)
{
	return (struct rm_health_counters){
		.expired = U(e, EXP),
		.abandoned = U(e, ABAN),
		.pending = U(e, PEND),
		.filled = U(e, FILL),
		.repeated = U(e, REP),
		.unclassified_late = U(e, LATE),
	};
}

/* The SEQUENCE cell: the health with counts, then the closure reason a final report gave. */
static void sequence_cell(const struct rm_epoch_read *e, char *buf, size_t len)
{
	struct rm_health_counters c = rm_table_health(e);
	const char *why = rm_closure_reason_text((uint16_t)U(e, FLAGS_SEEN));
	size_t off;

	if (NUL(e, REQ)) {
		snprintf(buf, len, "no measurement");
		return;
	}
	off = rm_health_text(rm_health_of(&c), &c, buf, len);
	if (why && off < len)
		snprintf(buf + off, len - off, "; closed: %s", why);
}

void rm_table_epoch(struct rm_table *t, const struct rm_epoch_read *e, int collector_width)
{
	struct rm_table_col cols[N_EPOCH_COLS];
	char end[RM_TIME_TEXT_LEN] = "-", session[24], epoch[24], op[128], conn[160], req[24] = "-", seq[200];
	const char *cells[N_EPOCH_COLS] = {
		e->collector_id ? e->collector_id : "", end, session, epoch, T(e, OUTCOME), op, conn, req, seq
	};
	size_t skip = collector_width > 0 ? 0 : 1;

	memcpy(cols, epoch_cols, sizeof(cols));
	cols[0].width = collector_width;
	if (!NUL(e, REQ)) {
		rm_time_format(U(e, END), end, sizeof(end));
		end[strlen(end) - 5] = 0; /* to the second: without ".mmmZ" */
		snprintf(req, sizeof(req), "%llu", U(e, REQ));
	}
	snprintf(session, sizeof(session), "%llu", U(e, SESSION));
	snprintf(epoch, sizeof(epoch), "%llu", U(e, EPOCH));
	rm_table_point(U(e, DOMAIN), U(e, OBS), op, sizeof(op));
	if (e->obs_name) /* the observation point's name beside its ID */
		snprintf(op + strlen(op), sizeof(op) - strlen(op), " %s", e->obs_name);
	rm_table_connection(T(e, SRC), T(e, DST), U(e, QP), U(e, PKEY), (int)U(e, HAS_VLAN), U(e, VLAN0), U(e, VLAN1),
			    conn, sizeof(conn));
	sequence_cell(e, seq, sizeof(seq));
	rm_table_add(t, cols + skip, N_EPOCH_COLS - skip, cells + skip);
}
