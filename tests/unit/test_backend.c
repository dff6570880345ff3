// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_backend.c - the collector's store interface (user/collect/backend.h):
 * the store chosen by its spec ("sqlite:FILE", a plain FILE,
 * "clickhouse:URL"), the errors for a bad spec, and that writes through the
 * interface reach the SQLite file (read back with SQLite itself).
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

#include "collect/backend.h"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_backend.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static int64_t scalar(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	int64_t v = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return v;
}

static void test_sqlite_specs(void **state)
{
	char spec[128], err[512];
	struct rm_backend *b;

	snprintf(spec, sizeof(spec), "sqlite:%s/a.db", dir);
	b = rm_backend_open(spec, NULL, NULL, err, sizeof(err));
	assert_non_null(b);
	assert_string_equal(b->ops->name, "sqlite");
	assert_string_equal(b->ops->drop_kind, "database");
	rm_backend_close(b);
	/* a plain file name is SQLite (today's --db FILE), also with a ':' after a '/' */
	snprintf(spec, sizeof(spec), "%s/b:c.db", dir);
	b = rm_backend_open(spec, NULL, NULL, err, sizeof(err));
	assert_non_null(b);
	assert_string_equal(b->ops->name, "sqlite");
	rm_backend_close(b);
}

static void test_bad_specs(void **state)
{
	char err[512] = "";

	assert_null(rm_backend_open("sqlite:", NULL, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "sqlite:FILE needs a file name"));
	assert_null(rm_backend_open("mysql://db/x", NULL, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "unknown type 'mysql'"));
	assert_non_null(strstr(err, "store 'mysql://db/x'"));
}

/* Writes through the interface are SQLite rows once flushed. */
static void test_sqlite_writes(void **state)
{
	struct rm_rules_limits lim = { .max_sessions = 4, .max_epochs = 8, .inactivity_timeout_ms = 0 };
	struct rm_session_counts c = { .messages = 3, .records = 7, .octets = 900 };
	char spec[160], path[128], err[512];
	struct rm_backend *b;
	int64_t run, sid;

	snprintf(path, sizeof(path), "%s/w.db", dir);
	snprintf(spec, sizeof(spec), "sqlite:%s", path);
	b = rm_backend_open(spec, NULL, NULL, err, sizeof(err));
	assert_non_null(b);
	run = rm_backend_run_start(b, "127.0.0.1:4739", "tls", &lim, 10, 32473, 1700000000000ull);
	assert_true(run > 0);
	sid = rm_backend_session_start(b, run, "127.0.0.1:5000", "tls", 1700000000001ull);
	assert_true(sid > 0);
	assert_int_equal(rm_backend_session_peer(b, sid, "CN=exporter"), 0);
	assert_int_equal(rm_backend_drop(b, sid, "epoch-admission", "refused", 1700000000002ull), 0);
	assert_int_equal(rm_backend_drop(b, sid, "epoch-admission", "refused again", 1700000000003ull), 0);
	assert_int_equal(rm_backend_run_limit(b, run, "max_sessions", 4), 0);
	assert_int_equal(rm_backend_session_end(b, sid, "peer closed", 1700000000004ull, &c), 0);
	assert_int_equal(rm_backend_flush(b), 0);
	assert_int_equal(rm_backend_unavailable(b), 0);
	assert_int_equal(rm_backend_drops(b), 0);
	rm_backend_close(b);

	assert_int_equal(scalar(path, "SELECT count(*) FROM runs"), 1);
	assert_int_equal(scalar(path, "SELECT records FROM sessions WHERE peer_subject = 'CN=exporter'"), 7);
	assert_int_equal(scalar(path, "SELECT ended_ms FROM sessions"), 1700000000004ll);
	assert_int_equal(scalar(path, "SELECT count FROM drops WHERE kind = 'epoch-admission'"), 2);
	assert_int_equal(scalar(path, "SELECT value FROM run_limits WHERE name = 'max_sessions'"), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sqlite_specs),
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_sqlite_writes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
