// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_store_columns.c - the tables of an epoch's and a session's columns
 * (user/store/columns.h) against what is written elsewhere: the epochs and
 * sessions tables of the shipped DDL (docs/clickhouse/single.sql and
 * cluster.sql, compiled in), the epoch_rows, sessions tables and epochs view of
 * a SQLite database the store creates, and the columns `report` reads. A
 * column added in one place and not the others fails.
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
#include <sqlite3.h>

#include "store/clickhouse/clickhouse.h"
#include "store/columns.h"
#include "store/sqlite/store.h"
#include "store/store_read.h"

struct col {
	const char *name, *sqlite, *clickhouse;
	int nullable, read;
};

#define NN   0
#define KEEP 0
#define MEAS 1
#define ZERO 1
#define OPT  1
#define R    1
#define N    0
static const struct col cols[] = {
#define X(NAME, column, sqlite, ch, null, write, kind, field, read) { #column, sqlite, ch, null, read },
	RM_EPOCH_COLUMNS(X)
};
#define N_COLS (sizeof(cols) / sizeof(cols[0]))
static const struct col sess[] = { RM_SESSION_COLUMNS(X)
#undef X
};
#define N_SESS (sizeof(sess) / sizeof(sess[0]))

/* The ClickHouse type the DDL must give column c: Nullable() unless never NULL. */
static void ch_type(const struct col *c, char *buf, size_t len)
{
	if (c->nullable)
		snprintf(buf, len, "Nullable(%s)", c->clickhouse);
	else
		snprintf(buf, len, "%s", c->clickhouse);
}

/*
 * The column definitions "name Type" of CREATE TABLE IF NOT EXISTS table
 * in sql, in their order; returns their number.
 */
static int ddl_columns(const char *sql, const char *table, char names[][64], char types[][64], int max)
{
	char head[128];
	const char *p, *end;
	int n = 0;

	snprintf(head, sizeof(head), "CREATE TABLE IF NOT EXISTS %s (", table);
	p = strstr(sql, head);
	assert_non_null(p);
	p += strlen(head);
	end = strstr(p, ") ENGINE");
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

/* A table of a DDL: collector_id, the n columns of c in order with their types, version. */
static void assert_ddl_matches(const char *sql, const char *table, const struct col *c, size_t n_c)
{
	char names[64][64], types[64][64], want[64];
	int n = ddl_columns(sql, table, names, types, 64);

	assert_int_equal(n, n_c + 2);
	assert_string_equal(names[0], "collector_id");
	assert_string_equal(types[0], "String");
	for (size_t i = 0; i < n_c; i++) {
		ch_type(&c[i], want, sizeof(want));
		assert_string_equal(names[i + 1], c[i].name);
		assert_string_equal(types[i + 1], want);
	}
	assert_string_equal(names[n_c + 1], "version");
	assert_string_equal(types[n_c + 1], "UInt64");
}

static void test_clickhouse_ddl(void **state)
{
	assert_ddl_matches(rm_ch_single_sql, "epochs", cols, N_COLS);
	assert_ddl_matches(rm_ch_cluster_sql, "epochs_local", cols, N_COLS);
	assert_ddl_matches(rm_ch_single_sql, "sessions", sess, N_SESS);
	assert_ddl_matches(rm_ch_cluster_sql, "sessions_local", sess, N_SESS);
}

/* PRAGMA table_info of table: the n names of c in order, and their declarations when types is set. */
static void assert_sqlite_matches(sqlite3 *db, const char *table, const struct col *c, size_t n, int types)
{
	char sql[128];
	sqlite3_stmt *q;
	size_t i = 0;

	snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", table);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(q, 1);
		const char *type = (const char *)sqlite3_column_text(q, 2);
		const char *dflt = (const char *)sqlite3_column_text(q, 4);
		char decl[128];

		assert_true(i < n);
		assert_string_equal(name, c[i].name);
		if (types) {
			snprintf(decl, sizeof(decl), "%s%s%s%s", type, sqlite3_column_int(q, 5) ? " PRIMARY KEY" : "",
				 dflt ? " DEFAULT " : "", dflt ? dflt : "");
			assert_string_equal(decl, c[i].sqlite);
		}
		i++;
	}
	sqlite3_finalize(q);
	assert_int_equal(i, n);
}

static void test_sqlite_schema(void **state)
{
	char dir[] = "/tmp/test_store_columns.XXXXXX", path[128], err[256] = "";
	struct rm_store *st;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.db", dir);
	st = rm_store_open(path, 0, err, sizeof(err));
	assert_non_null(st);
	assert_sqlite_matches((sqlite3 *)rm_store_db(st), "epoch_rows", cols, N_COLS, 1);
	assert_sqlite_matches((sqlite3 *)rm_store_db(st), "epochs", cols, N_COLS, 0);
	assert_sqlite_matches((sqlite3 *)rm_store_db(st), "sessions", sess, N_SESS, 1);
	rm_store_close(st);
	unlink(path);
	snprintf(path, sizeof(path), "%s/c.db-wal", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/c.db-shm", dir);
	unlink(path);
	rmdir(dir);
}

/* report reads the columns marked read, in the table's order, with their kinds. */
static void test_read_columns(void **state)
{
	int k = 0;

	for (size_t i = 0; i < N_COLS; i++) {
		if (!cols[i].read)
			continue;
		assert_true(k < RM_ER__N);
		assert_string_equal(rm_epoch_read_names[k], cols[i].name);
		assert_int_equal(rm_epoch_read_kinds[k], strcmp(cols[i].sqlite, "TEXT") ? 'U' : 'T');
		k++;
	}
	assert_int_equal(k, RM_ER__N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clickhouse_ddl),
		cmocka_unit_test(test_sqlite_schema),
		cmocka_unit_test(test_read_columns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
