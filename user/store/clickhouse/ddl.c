// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ddl.c - docs/clickhouse/single.sql made from the tables of columns.h
 * (ddl.h): each table's columns with their ClickHouse types, collector_id
 * first and version last where rows change, its engine, partition and
 * order. Calls columns.c and GLib only.
 */
#include <glib.h>
#include <string.h>

#include "ddl.h"
#include "store/columns.h"

static const char header[] =
	"-- rocemeter's fleet store on one ClickHouse server (docs/fleet.md \"Schema\").\n"
	"-- Written by tests/lib/store_ddl from the tables of user/store/columns.h: edit those.\n"
	"-- The tables of the collector's SQLite store (user/store/sqlite/store.h), each row\n"
	"-- with the ID of the collector that wrote it (session and row IDs are per\n"
	"-- collector). All times are UNIX milliseconds (UInt64); IDs and counters are\n"
	"-- IPFIX unsigned64. Accepted by clickhouse-server 18.16 (Debian 12) and\n"
	"-- current releases. `rocemeter collect --store-init --store clickhouse:URL`\n"
	"-- runs these statements in the URL's database; by hand:\n"
	"--   clickhouse-client --database DB --multiquery < single.sql\n"
	"-- Columns: collector_id, then those of the table in columns.h (the SQLite\n"
	"-- table's, but observation_points: the exporter's identity first), then\n"
	"-- version where rows change (a run's stop, a session's end, an epoch's\n"
	"-- latest state): such a row is written again with a larger version and\n"
	"-- ReplacingMergeTree keeps the latest; readers use FINAL or argMax(column,\n"
	"-- version). drops and connections take delta rows (counts added since the\n"
	"-- last write), summed by readers.\n"
	"-- TTL (ClickHouse 19.6 and later): append to a table, e.g. for 90 days,\n"
	"--   ALTER TABLE epochs MODIFY TTL toDateTime(intDiv(first_seen_ms, 1000)) + INTERVAL 90 DAY;\n";

/* The width of a line of columns (4 spaces of indent included). */
#define LINE_MAX_COLS 112

/* Append "name Type" to the line being filled (a new line when it would pass LINE_MAX_COLS). */
static void add_column(GString *g, size_t *line, const char *name, const char *type, int nullable)
{
	GString *col = g_string_new(NULL);

	g_string_append_printf(col, nullable ? "%s Nullable(%s)" : "%s %s", name, type);
	if (*line == g->len) {
		g_string_append(g, "    ");
	} else if (g->len - *line + 2 + col->len + 1 > LINE_MAX_COLS) {
		g_string_append(g, ",\n    ");
		*line = g->len - 4;
	} else {
		g_string_append(g, ", ");
	}
	g_string_append(g, col->str);
	g_string_free(col, TRUE);
}

void rm_ch_ddl_table(GString *g, const struct rm_stored_table *t)
{
	size_t line;

	g_string_append_printf(g, "\nCREATE TABLE IF NOT EXISTS %s (\n", t->name);
	line = g->len;
	add_column(g, &line, "collector_id", "String", 0);
	for (unsigned i = 0; i < t->n_cols; i++)
		if (t->cols[i].clickhouse)
			add_column(g, &line, t->cols[i].name, t->cols[i].clickhouse, t->cols[i].null != RM_COL_NN);
	g_string_append(g, t->ch_versioned ? ",\n    version UInt64\n) ENGINE = ReplacingMergeTree(version)\n"
					   : "\n) ENGINE = MergeTree\n");
	if (t->ch_partition)
		g_string_append_printf(g, "PARTITION BY toYYYYMMDD(toDateTime(intDiv(%s, 1000)))\n", t->ch_partition);
	g_string_append_printf(g, "ORDER BY (%s);\n", t->ch_order);
}

char *rm_ch_ddl_single(void)
{
	GString *g = g_string_new(header);

	for (unsigned i = 0; i < rm_n_stored_tables; i++)
		if (rm_stored_tables[i]->ch_order)
			rm_ch_ddl_table(g, rm_stored_tables[i]);
	return g_string_free(g, FALSE);
}
