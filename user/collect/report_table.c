// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_table.c - report's text tables and the default epoch line (see
 * report_table.h). The line keeps [SEQOBS]'s separation: the outcome is
 * report coverage, the SEQUENCE column what the PSN sequence showed; the
 * full prose (qualifications, coverage, ignored records) is --verbose.
 */
#include <stdio.h>
#include <string.h>

#include "common/health.h"
#include "common/report_text.h"
#include "common/timefmt.h"
#include "report_table.h"

void rm_table_row(FILE *f, const struct rm_table_col *cols, size_t n, const char *const *cells)
{
	for (size_t i = 0; i < n; i++) {
		const char *s = cells ? cells[i] : cols[i].head;
		int last = i == n - 1;

		if (i)
			fputc(' ', f);
		if (last && !cols[i].right)
			fputs(s, f);
		else
			fprintf(f, cols[i].right ? "%*s" : "%-*s", cols[i].width, s);
	}
	fputc('\n', f);
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

/* The columns of the epoch line; widths fit IPv4 connections and counts below 10^8. */
static const struct rm_table_col epoch_cols[] = {
	{ "COLLECTOR", 0, 0 }, { "FLOW END", 19, 0 },   { "EPOCH", 5, 1 },    { "OUTCOME", 10, 0 },
	{ "OP", 2, 1 },        { "CONNECTION", 28, 0 }, { "REQUESTS", 8, 1 }, { "SEQUENCE", 0, 0 },
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

void rm_table_epoch(FILE *f, const struct rm_epoch_read *e, int collector_width, int *header_done)
{
	struct rm_table_col cols[N_EPOCH_COLS];
	char end[RM_TIME_TEXT_LEN] = "-", epoch[24], op[128], conn[160], req[24] = "-", seq[200];
	const char *cells[N_EPOCH_COLS] = {
		e->collector_id ? e->collector_id : "", end, epoch, T(e, OUTCOME), op, conn, req, seq
	};
	size_t skip = collector_width > 0 ? 0 : 1;

	memcpy(cols, epoch_cols, sizeof(cols));
	cols[0].width = collector_width;
	if (!NUL(e, REQ)) {
		rm_time_format(U(e, END), end, sizeof(end));
		end[strlen(end) - 5] = 0; /* to the second: without ".mmmZ" */
		snprintf(req, sizeof(req), "%llu", U(e, REQ));
	}
	snprintf(epoch, sizeof(epoch), "%llu", U(e, EPOCH));
	rm_table_point(U(e, DOMAIN), U(e, OBS), op, sizeof(op));
	if (e->obs_name) /* the observation point's name beside its ID */
		snprintf(op + strlen(op), sizeof(op) - strlen(op), " %s", e->obs_name);
	rm_table_connection(T(e, SRC), T(e, DST), U(e, QP), U(e, PKEY), (int)U(e, HAS_VLAN), U(e, VLAN0), U(e, VLAN1),
			    conn, sizeof(conn));
	sequence_cell(e, seq, sizeof(seq));
	if (!*header_done) {
		rm_table_row(f, cols + skip, N_EPOCH_COLS - skip, NULL);
		*header_done = 1;
	}
	rm_table_row(f, cols + skip, N_EPOCH_COLS - skip, cells + skip);
}
