// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_store_tables.c - every stored table of user/store/columns.h against
 * what is made from it and what is shipped: docs/clickhouse/single.sql
 * (compiled in) is the output of its generator; each table of a SQLite
 * database the store creates has the table's columns, declarations and
 * key; each of single.sql has its ClickHouse columns, types, engine and
 * order; one row of every table written through the SQLite store's calls
 * reads back column for column as written here by hand; one row of every
 * ClickHouse table in RowBinary decodes, by single.sql's types, to the
 * same values. A column added to a table and not to the shipped DDL (or to
 * these rows) fails.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <glib.h>
#include <sqlite3.h>

#include "store/clickhouse/chstore.h"
#include "store/clickhouse/clickhouse.h"
#include "store/clickhouse/ddl.h"
#include "store/columns.h"
#include "store/sqlite/store.h"
#include "store/store_rows.h"

#define T0 1700000000000ULL

/* ---------------- the shipped DDL ---------------- */

static void test_single_sql_is_generated(void **state)
{
	char *made = rm_ch_ddl_single();

	assert_string_equal(rm_ch_single_sql, made);
	g_free(made);
}

/* The statement of table in sql (from "CREATE TABLE IF NOT EXISTS table (" to its ';'), or NULL. */
static char *statement(const char *sql, const char *table)
{
	char head[128];
	const char *p, *end;

	snprintf(head, sizeof(head), "CREATE TABLE IF NOT EXISTS %s (", table);
	p = strstr(sql, head);
	if (!p)
		return NULL;
	end = strchr(p, ';');
	return end ? g_strndup(p, (size_t)(end - p)) : NULL;
}

/* The "name Type" pairs of a statement's column list, in order, into names and types; their number. */
static int ddl_columns(const char *stmt, char names[][64], char types[][64], int max)
{
	const char *p = strchr(stmt, '(') + 1, *end = strstr(p, ") ENGINE");
	int n = 0;

	assert_non_null(end);
	while (p < end) {
		int used = 0;

		while (p < end && strchr(" \n,", *p))
			p++;
		if (p >= end)
			break;
		assert_true(n < max);
		assert_int_equal(sscanf(p, "%63[a-z_] %63[A-Za-z0-9()]%n", names[n], types[n], &used), 2);
		p += used;
		n++;
	}
	return n;
}

/*
 * Every table ClickHouse keeps, in single.sql: collector_id, the table's
 * ClickHouse columns in order with their types (Nullable unless never
 * NULL), version where rows change; the engine, partition and order.
 */
static void test_clickhouse_tables(void **state)
{
	int seen = 0;

	for (unsigned i = 0; i < rm_n_stored_tables; i++) {
		const struct rm_stored_table *t = rm_stored_tables[i];
		char names[64][64], types[64][64], want[160];
		char *stmt = statement(rm_ch_single_sql, t->name);
		int n, k = 0;

		if (!t->ch_order) {
			assert_null(stmt);
			continue;
		}
		assert_non_null(stmt);
		seen++;
		n = ddl_columns(stmt, names, types, 64);
		assert_string_equal(names[k], "collector_id");
		assert_string_equal(types[k++], "String");
		for (unsigned c = 0; c < t->n_cols; c++) {
			if (!t->cols[c].clickhouse)
				continue;
			snprintf(want, sizeof(want), t->cols[c].null == RM_COL_NN ? "%s" : "Nullable(%s)",
				 t->cols[c].clickhouse);
			assert_true(k < n);
			assert_string_equal(names[k], t->cols[c].name);
			assert_string_equal(types[k++], want);
		}
		if (t->ch_versioned) {
			assert_string_equal(names[k], "version");
			assert_string_equal(types[k++], "UInt64");
		}
		assert_int_equal(k, n);
		snprintf(want, sizeof(want), ") ENGINE = %s\n",
			 t->ch_versioned ? "ReplacingMergeTree(version)" : "MergeTree");
		assert_non_null(strstr(stmt, want));
		snprintf(want, sizeof(want), "\nORDER BY (%s)", t->ch_order);
		assert_non_null(strstr(stmt, want));
		if (t->ch_partition) {
			snprintf(want, sizeof(want), "PARTITION BY toYYYYMMDD(toDateTime(intDiv(%s, 1000)))",
				 t->ch_partition);
			assert_non_null(strstr(stmt, want));
		} else {
			assert_null(strstr(stmt, "PARTITION BY"));
		}
		g_free(stmt);
	}
	assert_int_equal(seen, 8); /* runs, sessions, epochs, raw_records, drops, connections, run_limits, names */
}

/* ---------------- a SQLite database the store makes ---------------- */

struct fixture {
	char dir[64], db[96];
	struct rm_store *store;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_store_tables.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/t.db", f->dir);
	f->store = rm_store_open(f->db, 0, err, sizeof(err));
	assert_non_null(f->store);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	rm_store_close(f->store);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	free(f);
	return system(cmd);
}

/* The key columns of table t as SQLite reports them (pk order), joined by ", ". */
static void sqlite_key(sqlite3 *db, const char *table, char *buf, size_t len)
{
	char sql[128];
	const char *cols[16] = { 0 };
	sqlite3_stmt *q;
	size_t n = 0;

	snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", table);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	while (sqlite3_step(q) == SQLITE_ROW) {
		int pk = sqlite3_column_int(q, 5);

		if (pk > 0 && pk <= 16)
			cols[pk - 1] = g_strdup((const char *)sqlite3_column_text(q, 1));
	}
	sqlite3_finalize(q);
	buf[0] = '\0';
	for (int i = 0; i < 16 && cols[i]; i++) {
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", cols[i]);
		g_free((char *)cols[i]);
	}
}

/* Every table SQLite keeps: its columns in order with their declarations, and its key. */
static void test_sqlite_tables(void **state)
{
	struct fixture *f = *state;
	sqlite3 *db = (sqlite3 *)rm_store_db(f->store);

	for (unsigned i = 0; i < rm_n_stored_tables; i++) {
		const struct rm_stored_table *t = rm_stored_tables[i];
		char sql[128], key[256];
		sqlite3_stmt *q;
		unsigned c = 0;
		int id = -1;

		assert_non_null(t->sqlite_name);
		snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", t->sqlite_name);
		assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
		while (sqlite3_step(q) == SQLITE_ROW) {
			const char *name = (const char *)sqlite3_column_text(q, 1);
			const char *type = (const char *)sqlite3_column_text(q, 2);
			const char *dflt = (const char *)sqlite3_column_text(q, 4);
			char decl[128];

			while (c < t->n_cols && !t->cols[c].sqlite)
				c++;
			assert_true(c < t->n_cols);
			if (t->cols[c].write == RM_COL_ID)
				id = (int)c;
			snprintf(decl, sizeof(decl), "%s%s%s%s%s", type, sqlite3_column_int(q, 3) ? " NOT NULL" : "",
				 sqlite3_column_int(q, 5) && !t->sqlite_key ? " PRIMARY KEY" : "",
				 dflt ? " DEFAULT " : "", dflt ? dflt : "");
			assert_string_equal(name, t->cols[c].name);
			assert_string_equal(decl, t->cols[c].sqlite);
			c++;
		}
		sqlite3_finalize(q);
		while (c < t->n_cols && !t->cols[c].sqlite)
			c++;
		assert_int_equal(c, t->n_cols);
		sqlite_key(db, t->sqlite_name, key, sizeof(key));
		assert_string_equal(key, t->sqlite_key ? t->sqlite_key : id >= 0 ? t->cols[id].name : "");
	}
}

/* ---------------- rows written and read back ---------------- */

/* A value as these tests write it: a decimal integer, a text, x'..' octets that are not text, NULL. */
static void put_value(GString *g, int type, int64_t i, const uint8_t *p, size_t len)
{
	int text = 1;

	if (type == SQLITE_NULL) {
		g_string_append(g, "NULL");
		return;
	}
	if (type == SQLITE_INTEGER) {
		g_string_append_printf(g, "%" G_GUINT64_FORMAT, (guint64)i);
		return;
	}
	for (size_t k = 0; k < len; k++)
		text &= p[k] >= 0x20 && p[k] < 0x7f;
	if (text && type != SQLITE_BLOB) {
		g_string_append_len(g, (const char *)p, (gssize)len);
		return;
	}
	g_string_append(g, "x'");
	for (size_t k = 0; k < len; k++)
		g_string_append_printf(g, "%02x", p[k]);
	g_string_append(g, "'");
}

/* The first row of sql as "column=value; ..." (put_value's values). */
static char *sqlite_row(sqlite3 *db, const char *sql)
{
	GString *g = g_string_new(NULL);
	sqlite3_stmt *q;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	for (int c = 0; c < sqlite3_column_count(q); c++) {
		int type = sqlite3_column_type(q, c);
		const void *p = type == SQLITE_BLOB ? sqlite3_column_blob(q, c) : sqlite3_column_text(q, c);

		g_string_append_printf(g, "%s%s=", c ? "; " : "", sqlite3_column_name(q, c));
		put_value(g, type, sqlite3_column_int64(q, c), p, (size_t)sqlite3_column_bytes(q, c));
	}
	sqlite3_finalize(q);
	return g_string_free(g, FALSE);
}

static void assert_row(sqlite3 *db, const char *sql, const char *want)
{
	char *got = sqlite_row(db, sql);

	assert_string_equal(got, want);
	g_free(got);
}

static const uint64_t verdicts[RM_V__COUNT] = { 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 };

/* One row of each table through the SQLite store's calls, read back as written here. */
static void test_sqlite_rows(void **state)
{
	struct fixture *f = *state;
	sqlite3 *db = (sqlite3 *)rm_store_db(f->store);
	struct rm_rules_limits lim = { .max_sessions = 3, .max_epochs = 4, .inactivity_timeout_ms = 5000 };
	struct rm_session_counts counts = { .messages = 7,
					    .records = 8,
					    .octets = 9,
					    .rejected = 1,
					    .verdicts = verdicts,
					    .seq_gaps = 2,
					    .seq_missing = 3,
					    .time_backwards = 4 };
	struct rm_report r = { .epoch_id = 11, .report_id = 12, .flags = 0x20 };
	struct rm_store_point pt = { .peer_name = "x", .peer_subject = "CN=x", .domain = 5, .id = 77, .name = "eth1" };
	const uint8_t rec[] = { 1, 2 }, tmpl[] = { 3 };
	int64_t run = rm_store_run_start(f->store, "127.0.0.1:4740", "tls", &lim, 6, 32473, T0);
	int64_t sid = rm_store_session_start(f->store, run, "192.0.2.1:5000", "tls", T0 + 1);

	assert_int_equal(run, 1);
	assert_int_equal(sid, 1);
	assert_int_equal(rm_store_session_peer(f->store, sid, "CN=x", "x"), 0);
	assert_int_equal(rm_store_session_end(f->store, sid, "closed", T0 + 2, &counts), 0);
	assert_int_equal(rm_store_raw(f->store, sid, 5, 256, &r, "unsupported", "why", rec, 2, tmpl, 1, T0 + 3), 1);
	assert_int_equal(rm_store_raw(f->store, sid, 6, 257, NULL, "undecodable", NULL, rec, 1, NULL, 0, T0 + 4), 1);
	assert_int_equal(rm_store_drop(f->store, sid, "memory-budget", "d1", T0 + 5), 0);
	assert_int_equal(rm_store_drop(f->store, sid, "memory-budget", "d2", T0 + 6), 0);
	assert_int_equal(
		rm_store_connections(f->store, T0 - 60000, "198.51.100.1", "refused", 3, T0 - 50, T0 - 40, "c"), 0);
	assert_int_equal(rm_store_run_limit(f->store, run, "max_sessions", 3), 0);
	assert_int_equal(rm_store_observation_point(f->store, &pt, T0 + 7), 0);
	assert_int_equal(rm_store_run_stop(f->store, run, T0 + 8), 0);
	assert_int_equal(rm_store_flush(f->store), 0);
	assert_int_equal(rm_store_unavailable(f->store), 0);

	assert_row(db, "SELECT * FROM runs",
		   "id=1; started_ms=1700000000000; stopped_ms=1700000000008; listen=127.0.0.1:4740; transport=tls; "
		   "max_sessions=3; max_epochs=4; max_raw_records=6; inactivity_timeout_ms=5000; pen=32473");
	assert_row(db, "SELECT * FROM sessions",
		   "id=1; run_id=1; peer=192.0.2.1:5000; peer_subject=CN=x; transport=tls; started_ms=1700000000001; "
		   "ended_ms=1700000000002; end_reason=closed; messages=7; records=8; octets=9; rejected=1; "
		   "accepted=10; repeats=11; stale=12; orphans=13; unsupported=14; invalid=15; after_invalid=16; "
		   "key_conflicts=17; resource_drops=18; unbound=19; seq_gaps=2; seq_missing=3; "
		   "export_time_backwards=4; peer_name=x");
	assert_row(db, "SELECT * FROM raw_records WHERE id = 1",
		   "id=1; session_id=1; received_ms=1700000000003; domain=5; template_id=256; epoch_id=11; "
		   "report_id=12; flags=32; verdict=unsupported; reason=why; record=x'0102'; template=x'03'");
	assert_row(db, "SELECT * FROM raw_records WHERE id = 2",
		   "id=2; session_id=1; received_ms=1700000000004; domain=6; template_id=257; epoch_id=NULL; "
		   "report_id=NULL; flags=NULL; verdict=undecodable; reason=; record=x'01'; template=NULL");
	assert_row(db, "SELECT * FROM drops",
		   "session_id=1; kind=memory-budget; count=2; first_ms=1700000000005; last_ms=1700000000006; "
		   "last_detail=d2");
	assert_row(db, "SELECT * FROM connections",
		   "minute_ms=1699999940000; source=198.51.100.1; outcome=refused; count=3; first_ms=1699999999950; "
		   "last_ms=1699999999960; last_detail=c");
	assert_row(db, "SELECT * FROM run_limits", "run_id=1; name=max_sessions; value=3");
	assert_row(db, "SELECT * FROM observation_points",
		   "domain=5; observation_point_id=77; name=eth1; updated_ms=1700000000007; peer_name=x; "
		   "peer_subject=CN=x");
}

/* An open epoch with an accepted report: its row in epoch_rows, every column. */
static void test_sqlite_epoch_row(void **state)
{
	struct fixture *f = *state;
	sqlite3 *db = (sqlite3 *)rm_store_db(f->store);
	struct rm_rules_limits lim = { 1, 1, 0 };
	struct rm_epoch e = {
		.session_id = 1,
		.domain = 2,
		.state = RM_EPOCH_OPEN,
		.outcome = RM_OUTCOME_OPEN,
		.flags_seen = 3,
		.reason = "",
		.first_seen_ms = T0,
		.last_seen_ms = T0 + 9,
		.n_accepted = 4,
		.first_report_id = 5,
		.missing_initial = 6,
		.missing_reports = 7,
		.gaps = 8,
		.repeats = 9,
		.stale = 10,
		.unsupported = 11,
		.ignored = 12,
		.key = { .observation_point_id = 13,
			 .family = 6,
			 .src = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 },
			 .dst = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 },
			 .vlan = { 14, 15 },
			 .has_vlan_ns = 1,
			 .dest_qp = 16,
			 .pkey = 17,
			 .flow_start_ms = T0 + 1,
			 .flow_end_ms = T0 + 2,
			 .epoch_id = 18,
			 .report_id = 19,
			 .window = 20,
			 .flags = 21,
			 .skipped = 22,
			 .filled = 23,
			 .expired = 24,
			 .abandoned = 25,
			 .pending = 26,
			 .repeated = 27,
			 .requests = 28,
			 .unclassified_late = 29 },
	};

	assert_true(rm_store_run_start(f->store, "l", "tcp", &lim, 1, 0, T0) > 0);
	assert_int_equal(rm_store_epoch(f->store, &e), 0);
	assert_int_equal(rm_store_flush(f->store), 0);
	assert_row(
		db, "SELECT * FROM epoch_rows",
		"id=1; session_id=1; domain=2; observation_point_id=13; family=6; src=2001:db8::1; dst=2001:db8::2; "
		"dest_qp=16; pkey=17; has_vlan_ns=1; vlan_outer=14; vlan_inner=15; epoch_id=18; window=20; flags=21; "
		"flags_seen=3; flow_start_ms=1700000000001; flow_end_ms=1700000000002; first_report_id=5; "
		"last_report_id=19; reports_accepted=4; missing_initial=6; missing_reports=7; gaps=8; repeats=9; "
		"stale=10; unsupported=11; ignored=12; requests=28; skipped=22; filled=23; expired=24; abandoned=25; "
		"pending=26; repeated=27; unclassified_late=29; state=open; outcome=open; reason=; "
		"first_seen_ms=1700000000000; last_seen_ms=1700000000009; retired_ms=NULL");
	/* a new version: the columns written with every version change, those written once do not */
	e.session_id = 99;
	e.key.requests = 30;
	e.n_accepted = 0;
	e.dirty = 1;
	assert_int_equal(rm_store_epoch(f->store, &e), 0);
	assert_int_equal(rm_store_flush(f->store), 0);
	assert_row(db, "SELECT session_id, window, reports_accepted, requests, retired_ms FROM epoch_rows",
		   "session_id=1; window=NULL; reports_accepted=0; requests=NULL; retired_ms=NULL");
}

/* ---------------- RowBinary rows ---------------- */

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/*
 * A RowBinary row of table decoded by the types of its statement in
 * single.sql, in the order of an INSERT (collector_id, the columns,
 * version after id where there is one), as "column=value; ...". NULL when
 * the octets do not hold exactly one row of those types.
 */
static char *rowbinary_row(const char *table, const uint8_t *p, size_t len)
{
	char names[64][64], types[64][64], *stmt = statement(rm_ch_single_sql, table);
	int n = ddl_columns(stmt, names, types, 64), order[64], k = 0, has_id = 0, versioned;
	GString *g = g_string_new(NULL);
	const uint8_t *end = p + len;

	g_free(stmt);
	versioned = !strcmp(names[n - 1], "version");
	for (int i = 0; i < n; i++)
		has_id |= !strcmp(names[i], "id");
	for (int i = 0; i < n; i++) {
		if (i == n - 1 && versioned && has_id)
			continue;
		order[k++] = i;
		if (!strcmp(names[i], "id") && versioned)
			order[k++] = n - 1; /* version, after the ID */
	}
	for (int j = 0; j < k; j++) {
		const char *type = types[order[j]];
		int nullable = !strncmp(type, "Nullable(", 9);

		g_string_append_printf(g, "%s%s=", j ? "; " : "", names[order[j]]);
		if (nullable) {
			if (p >= end)
				goto bad;
			type += 9;
			if (*p++) {
				g_string_append(g, "NULL");
				continue;
			}
		}
		if (!strncmp(type, "UInt64", 6)) {
			if (end - p < 8)
				goto bad;
			put_value(g, SQLITE_INTEGER, (int64_t)le64(p), NULL, 0);
			p += 8;
		} else if (!strncmp(type, "UInt8", 5)) {
			if (p >= end)
				goto bad;
			put_value(g, SQLITE_INTEGER, *p++, NULL, 0);
		} else {
			uint64_t l = 0;
			int shift = 0;

			do {
				if (p >= end || shift > 63)
					goto bad;
				l |= (uint64_t)(*p & 0x7f) << shift;
				shift += 7;
			} while (*p++ & 0x80);
			if ((uint64_t)(end - p) < l)
				goto bad;
			put_value(g, SQLITE_TEXT, 0, p, (size_t)l);
			p += l;
		}
	}
	if (p == end)
		return g_string_free(g, FALSE);
bad:
	g_string_free(g, TRUE);
	return NULL;
}

static void assert_rowbinary(const struct rm_stored_table *t, const void *row, const char *want)
{
	GByteArray *b = g_byte_array_new();
	char *got;

	rm_chstore_row(b, t, "c1", row, 42);
	got = rowbinary_row(t->name, b->data, b->len);
	assert_non_null(got);
	assert_string_equal(got, want);
	g_free(got);
	g_byte_array_free(b, TRUE);
}

/* One row of each ClickHouse table, decoded by single.sql's types. */
static void test_clickhouse_rows(void **state)
{
	struct rm_run_row run = { .id = 1,
				  .started_ms = T0,
				  .listen = "127.0.0.1:4740",
				  .transport = NULL,
				  .max_sessions = 3,
				  .max_epochs = 4,
				  .max_raw_records = 6,
				  .inactivity_timeout_ms = 5000,
				  .pen = 32473 };
	struct rm_sess_row s = { .id = 2,
				 .run_id = 1,
				 .peer = "192.0.2.1:5000",
				 .subject = NULL,
				 .transport = "tls",
				 .reason = "closed",
				 .peer_name = "x",
				 .started_ms = T0 + 1,
				 .ended_ms = T0 + 2,
				 .c = { .messages = 7,
					.records = 8,
					.octets = 9,
					.rejected = 1,
					.seq_gaps = 2,
					.seq_missing = 3,
					.time_backwards = 4 } };
	const uint8_t rec[] = { 1, 2 };
	struct rm_raw_row raw = { .id = 3,
				  .session_id = 2,
				  .received_ms = T0 + 3,
				  .domain = 5,
				  .template_id = 256,
				  .has_report = 0,
				  .epoch_id = 11,
				  .verdict = "undecodable",
				  .reason = "why",
				  .record = { rec, 2 },
				  .template = { NULL, 0 } };
	struct rm_drop_row d = rm_drop_row_of(2, "store", NULL, T0 + 5);
	struct rm_conn_row conn = { .minute_ms = T0 - 60000,
				    .count = 3,
				    .first_ms = T0 - 50,
				    .last_ms = T0 - 40,
				    .source = "198.51.100.1",
				    .outcome = "refused",
				    .detail = "c" };
	struct rm_limit_row limit = { .run_id = 1, .value = 3, .seq = 0, .name = "max_sessions" };
	struct rm_point_row pt = {
		.domain = 5, .id = 77, .updated_ms = T0 + 7, .name = "eth1", .peer_name = "x", .peer_subject = ""
	};

	memcpy(s.verdicts, verdicts, sizeof(verdicts));
	assert_rowbinary(&rm_stored_runs, &run,
			 "collector_id=c1; id=1; version=42; started_ms=1700000000000; stopped_ms=NULL; "
			 "listen=127.0.0.1:4740; transport=NULL; max_sessions=3; max_epochs=4; max_raw_records=6; "
			 "inactivity_timeout_ms=5000; pen=32473");
	assert_rowbinary(
		&rm_stored_sessions, &s,
		"collector_id=c1; id=2; version=42; run_id=1; peer=192.0.2.1:5000; peer_subject=NULL; "
		"transport=tls; started_ms=1700000000001; ended_ms=1700000000002; end_reason=closed; "
		"messages=7; records=8; octets=9; rejected=1; accepted=10; repeats=11; stale=12; orphans=13; "
		"unsupported=14; invalid=15; after_invalid=16; key_conflicts=17; resource_drops=18; unbound=19; "
		"seq_gaps=2; seq_missing=3; export_time_backwards=4; peer_name=x");
	assert_rowbinary(&rm_stored_raw, &raw,
			 "collector_id=c1; id=3; session_id=2; received_ms=1700000000003; domain=5; template_id=256; "
			 "epoch_id=NULL; report_id=NULL; flags=NULL; verdict=undecodable; reason=why; "
			 "record=x'0102'; template=NULL");
	assert_rowbinary(&rm_stored_drops, &d,
			 "collector_id=c1; session_id=2; kind=store; count=1; first_ms=1700000000005; "
			 "last_ms=1700000000005; last_detail=NULL");
	assert_rowbinary(&rm_stored_conns, &conn,
			 "collector_id=c1; minute_ms=1699999940000; source=198.51.100.1; outcome=refused; count=3; "
			 "first_ms=1699999999950; last_ms=1699999999960; last_detail=c");
	assert_rowbinary(&rm_stored_limits, &limit, "collector_id=c1; run_id=1; name=max_sessions; value=3; seq=0");
	assert_rowbinary(&rm_stored_points, &pt,
			 "collector_id=c1; peer_name=x; peer_subject=; domain=5; observation_point_id=77; name=eth1; "
			 "updated_ms=1700000000007; version=42");
}

/*
 * The columns of table in single.sql in the order of an INSERT (version
 * after id where there is one), joined by ", ", each as set gives it
 * ("column=expression" pairs, n of them) or itself.
 */
static void insert_columns(GString *g, const char *table, const char *const *set, size_t n)
{
	char names[64][64], types[64][64], *stmt = statement(rm_ch_single_sql, table);
	int k = ddl_columns(stmt, names, types, 64), versioned = !strcmp(names[k - 1], "version");

	g_free(stmt);
	for (int i = 0; i < k - versioned; i++) {
		const char *expr = names[i];

		for (size_t j = 0; j < n; j++)
			if (!strncmp(set[j], names[i], strlen(names[i])) && set[j][strlen(names[i])] == '=')
				expr = set[j] + strlen(names[i]) + 1;
		g_string_append_printf(g, "%s%s", i ? ", " : "", expr);
		if (versioned && !strcmp(names[i], "id"))
			g_string_append_printf(g, ", %s", n ? set[0] + strlen("version=") : "version");
	}
}

/*
 * The rows the ClickHouse store writes again (recovery, crash accounting)
 * copy every column of single.sql's table but those it sets: a column the
 * copy left out would lose its value in the latest version.
 */
static void test_clickhouse_copies_every_column(void **state)
{
	static const char *const set[] = { "version=7", "resource_drops=resource_drops + 1" };
	const struct rm_chstore_set chs_set[] = { { "version", "7" }, { "resource_drops", "resource_drops + 1" } };
	char *sql = rm_chstore_copy_sql(&rm_stored_sessions, chs_set, 2, "id = 1");
	GString *want = g_string_new("INSERT INTO sessions (");

	insert_columns(want, "sessions", NULL, 0);
	g_string_append(want, ") SELECT ");
	insert_columns(want, "sessions", set, 2);
	g_string_append(want, " FROM sessions FINAL WHERE id = 1");
	assert_non_null(strstr(want->str, "peer_name) SELECT"));
	assert_string_equal(sql, want->str);
	g_free(sql);
	g_string_free(want, TRUE);
}

/*
 * A column added to a table and nowhere else: the DDL made from it is not
 * the shipped one, and its rows no longer decode by the shipped types.
 */
static void test_a_column_added_in_one_place_only_fails(void **state)
{
	struct rm_column cols[64];
	struct rm_stored_table t = rm_stored_drops;
	struct rm_drop_row d = rm_drop_row_of(2, "store", "x", T0);
	GString *ddl = g_string_new(NULL);
	char *shipped = statement(rm_ch_single_sql, "drops");
	GByteArray *b = g_byte_array_new();
	char *row;

	memcpy(cols, t.cols, t.n_cols * sizeof(cols[0]));
	cols[t.n_cols] = cols[2]; /* count, again, as "extra" */
	cols[t.n_cols].name = "extra";
	t.cols = cols;
	t.n_cols++;
	rm_ch_ddl_table(ddl, &t);
	assert_non_null(strstr(ddl->str, "extra UInt64"));
	assert_null(strstr(shipped, "extra"));
	assert_null(strstr(rm_ch_single_sql, ddl->str));
	rm_chstore_row(b, &t, "c1", &d, 0);
	assert_null(rowbinary_row("drops", b->data, b->len));
	g_byte_array_set_size(b, 0);
	rm_chstore_row(b, &rm_stored_drops, "c1", &d, 0); /* the table as shipped: one row exactly */
	row = rowbinary_row("drops", b->data, b->len);
	assert_non_null(row);
	g_free(row);
	g_byte_array_free(b, TRUE);
	g_string_free(ddl, TRUE);
	g_free(shipped);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_sql_is_generated),
		cmocka_unit_test(test_clickhouse_tables),
		cmocka_unit_test_setup_teardown(test_sqlite_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sqlite_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sqlite_epoch_row, setup, teardown),
		cmocka_unit_test(test_clickhouse_rows),
		cmocka_unit_test(test_clickhouse_copies_every_column),
		cmocka_unit_test(test_a_column_added_in_one_place_only_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
