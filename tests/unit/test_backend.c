// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_backend.c - the collector's store interface (user/store/backend.h):
 * the store chosen by its spec (store_spec.h: sqlite:FILE, clickhouse:URL),
 * writes through the interface reaching the SQLite file (read back with
 * SQLite itself), and what the ClickHouse store needs no server for: an
 * epoch's row in RowBinary (expected bytes built here from ClickHouse's
 * RowBinary format: UInt64 little-endian, String as LEB128 length and
 * octets, Nullable as a 0/1 prefix) and the collector ID rule.
 */
#include <errno.h>
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

#include "store/backend.h"
#include "store/clickhouse/chstore.h"
#include "store/store_spec.h"

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

static struct rm_backend *open_spec(const char *store, char *err, size_t errlen)
{
	static struct rm_store_spec spec;

	if (rm_store_spec_resolve(store, NULL, NULL, NULL, &spec, err, errlen) < 0)
		return NULL;
	return rm_backend_open(&spec, "unit-test", 0, NULL, err, errlen);
}

static void test_specs(void **state)
{
	char spec[128], err[512];
	struct rm_backend *b;

	snprintf(spec, sizeof(spec), "sqlite:%s/a.db", dir);
	b = open_spec(spec, err, sizeof(err));
	assert_non_null(b);
	assert_string_equal(b->ops->name, "sqlite");
	assert_string_equal(b->ops->drop_kind, "database");
	rm_backend_close(b);
	/* a ClickHouse store contacts no server before run_start: nothing waits, nothing dropped */
	b = open_spec("clickhouse:http://127.0.0.1:9/?database=x", err, sizeof(err));
	assert_non_null(b);
	assert_string_equal(b->ops->name, "clickhouse");
	assert_string_equal(b->ops->drop_kind, "store");
	assert_int_equal(rm_backend_drops(b), 0);
	assert_int_equal(rm_backend_flush(b), 0);
	rm_backend_close(b);
	/* a collector ID against the rule: refused at open, nothing started */
	{
		static struct rm_store_spec chs;

		assert_int_equal(rm_store_spec_resolve("clickhouse:http://127.0.0.1:9/", NULL, NULL, NULL, &chs, err,
						       sizeof(err)),
				 0);
		assert_null(rm_backend_open(&chs, "bad id", 0, NULL, err, sizeof(err)));
		assert_non_null(strstr(err, "ClickHouse store: collector_id: 'bad id'"));
	}
	/* an unwritable SQLite path: the error names the database */
	b = open_spec("sqlite:/nonexistent-dir/x.db", err, sizeof(err));
	assert_null(b);
	assert_non_null(strstr(err, "database: "));
}

static void test_collector_id(void **state)
{
	char err[256], id[80];

	assert_int_equal(rm_chstore_check_id("host-1.example.net:a_b", err, sizeof(err)), 0);
	memset(id, 'a', 64);
	id[64] = 0;
	assert_int_equal(rm_chstore_check_id(id, err, sizeof(err)), 0);
	id[64] = 'a';
	id[65] = 0;
	assert_int_equal(rm_chstore_check_id(id, err, sizeof(err)), -EINVAL);
	assert_int_equal(rm_chstore_check_id("", err, sizeof(err)), -EINVAL);
	assert_int_equal(rm_chstore_check_id("a b", err, sizeof(err)), -EINVAL);
	assert_int_equal(rm_chstore_check_id("x'y", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "collector_id: 'x'y'"));
	/* the default is the host name */
	assert_int_equal(rm_chstore_default_id(id, sizeof(id), err, sizeof(err)), 0);
	{
		char host[256];

		gethostname(host, sizeof(host));
		host[64] = 0;
		assert_string_equal(id, host);
	}
}

/* ClickHouse RowBinary, from its format description. */
static void u64le(GByteArray *b, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		uint8_t o = (uint8_t)(v >> (8 * i));

		g_byte_array_append(b, &o, 1);
	}
}

static void u8(GByteArray *b, uint8_t v)
{
	g_byte_array_append(b, &v, 1);
}

static void str(GByteArray *b, const char *s)
{
	u8(b, (uint8_t)strlen(s)); /* lengths below 128: one LEB128 octet */
	g_byte_array_append(b, (const guint8 *)s, (guint)strlen(s));
}

static void nnull(GByteArray *b)
{
	u8(b, 1);
}

static void nu64(GByteArray *b, uint64_t v)
{
	u8(b, 0);
	u64le(b, v);
}

/*
 * The epoch row in the writer's column order (docs/clickhouse/single.sql,
 * the INSERT's list): a retained epoch without an accepted report (its
 * measurement columns NULL, retired_ms NULL, as SQLite stores them), then
 * the same epoch with a report accepted and retired.
 */
static void test_epoch_row(void **state)
{
	struct rm_epoch e = { 0 };
	GByteArray *got = g_byte_array_new(), *want = g_byte_array_new();
	struct rm_report *k = &e.key;

	e.reason = ""; /* never NULL (collector_rules.h) */
	e.store_id = 42;
	e.session_id = 3;
	e.domain = 9;
	k->observation_point_id = 7;
	k->family = 4;
	memcpy(k->src, (uint8_t[]){ 192, 0, 2, 1 }, 4);
	memcpy(k->dst, (uint8_t[]){ 10, 20, 30, 255 }, 4);
	k->dest_qp = 0x123;
	k->pkey = 0xFFFF;
	k->epoch_id = 0xFFFFFFFFFFFFFFFEull;
	k->window = 4;
	e.flags_seen = 0;
	e.first_seen_ms = 1700000000001ull;
	e.last_seen_ms = 1700000000002ull;
	e.state = RM_EPOCH_OPEN;
	e.outcome = RM_OUTCOME_OPEN;
	rm_chstore_epoch_row(got, "c1", &e, 0x0102030405060708ull);

	str(want, "c1");
	u64le(want, 42);
	u64le(want, 0x0102030405060708ull);
	u64le(want, 3);
	u64le(want, 9);
	u64le(want, 7);
	u8(want, 4);
	str(want, "192.0.2.1");
	str(want, "10.20.30.255");
	u64le(want, 0x123);
	u64le(want, 0xFFFF);
	u8(want, 0);
	u64le(want, 0);
	u64le(want, 0);
	u64le(want, 0xFFFFFFFFFFFFFFFEull);
	nnull(want);                /* window */
	nnull(want);                /* flags */
	u64le(want, 0);             /* flags_seen */
	nnull(want);                /* flow_start_ms */
	nnull(want);                /* flow_end_ms */
	nnull(want);                /* first_report_id */
	nnull(want);                /* last_report_id */
	for (int i = 0; i < 8; i++) /* reports_accepted .. ignored */
		u64le(want, 0);
	for (int i = 0; i < 8; i++) /* requests .. unclassified_late */
		nnull(want);
	str(want, "open");
	str(want, "open");
	u8(want, 0);
	str(want, ""); /* reason: "" as in SQLite */
	u64le(want, 1700000000001ull);
	u64le(want, 1700000000002ull);
	nnull(want); /* retired_ms */
	assert_int_equal(got->len, want->len);
	assert_memory_equal(got->data, want->data, want->len);

	/* accepted report 2 (final), retired complete */
	g_byte_array_set_size(got, 0);
	g_byte_array_set_size(want, 0);
	e.n_accepted = 2;
	e.first_report_id = 1;
	k->report_id = 2;
	k->flags = 0x21;
	e.flags_seen = 0x21;
	k->flow_start_ms = 1700000000000ull;
	k->flow_end_ms = 1700000000600ull;
	k->requests = 7;
	k->skipped = 2;
	k->filled = 2;
	k->repeated = 1;
	e.state = RM_EPOCH_FINAL;
	e.outcome = RM_OUTCOME_COMPLETE;
	e.retired_ms = 1700000000003ull;
	rm_chstore_epoch_row(got, "c1", &e, 5);
	str(want, "c1");
	u64le(want, 42);
	u64le(want, 5);
	u64le(want, 3);
	u64le(want, 9);
	u64le(want, 7);
	u8(want, 4);
	str(want, "192.0.2.1");
	str(want, "10.20.30.255");
	u64le(want, 0x123);
	u64le(want, 0xFFFF);
	u8(want, 0);
	u64le(want, 0);
	u64le(want, 0);
	u64le(want, 0xFFFFFFFFFFFFFFFEull);
	nu64(want, 4);
	nu64(want, 0x21);
	u64le(want, 0x21);
	nu64(want, 1700000000000ull);
	nu64(want, 1700000000600ull);
	nu64(want, 1);
	nu64(want, 2);
	u64le(want, 2);             /* reports_accepted */
	for (int i = 0; i < 7; i++) /* missing_initial .. ignored */
		u64le(want, 0);
	nu64(want, 7); /* requests */
	nu64(want, 2); /* skipped */
	nu64(want, 2); /* filled */
	nu64(want, 0); /* expired */
	nu64(want, 0); /* abandoned */
	nu64(want, 0); /* pending */
	nu64(want, 1); /* repeated */
	nu64(want, 0); /* unclassified_late */
	str(want, "final");
	str(want, "complete");
	u8(want, 0);
	str(want, "");
	u64le(want, 1700000000001ull);
	u64le(want, 1700000000002ull);
	nu64(want, 1700000000003ull);
	assert_int_equal(got->len, want->len);
	assert_memory_equal(got->data, want->data, want->len);
	g_byte_array_free(got, TRUE);
	g_byte_array_free(want, TRUE);
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
	b = open_spec(spec, err, sizeof(err));
	assert_non_null(b);
	run = rm_backend_run_start(b, "127.0.0.1:4739", "tls", &lim, 10, 32473, 1700000000000ull);
	assert_true(run > 0);
	sid = rm_backend_session_start(b, run, "127.0.0.1:5000", "tls", 1700000000001ull);
	assert_true(sid > 0);
	assert_int_equal(rm_backend_session_peer(b, sid, "CN=exporter", "exporter.test"), 0);
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

/*
 * Which refusals no retry mends: ClickHouse's error codes (its
 * src/Common/ErrorCodes.cpp: 192 UNKNOWN_USER, 193 WRONG_PASSWORD, 194
 * REQUIRED_PASSWORD, 497 ACCESS_DENIED, 516 AUTHENTICATION_FAILED, 81
 * UNKNOWN_DATABASE, 60 UNKNOWN_TABLE) and HTTP 401/403 (RFC 9110); a
 * transport error, a server error (HTTP 500, code 241 MEMORY_LIMIT_EXCEEDED)
 * or a timeout is an outage.
 */
static void test_refusal_hint(void **state)
{
	static const struct {
		const char *err;
		const char *fix; /* a word of the hint, NULL: none */
	} cases[] = {
		{ "http://h:8123/: HTTP 516: Code: 516. DB::Exception: default: Authentication failed",
		  "store_credentials" },
		{ "http://h:8123/: HTTP 500: Code: 193, e.displayText() = DB::Exception: Wrong password",
		  "store_credentials" },
		{ "http://h:8123/: HTTP 500: Code: 192, e.displayText() = DB::Exception: Unknown user x",
		  "store_credentials" },
		{ "http://h:8123/: HTTP 500: Code: 194, e.displayText() = DB::Exception: Password required",
		  "store_credentials" },
		{ "http://h:8123/: HTTP 403: Code: 497. DB::Exception: x: Not enough privileges", "store_credentials" },
		{ "http://h:8123/: HTTP 401: Unauthorized", "store_credentials" },
		{ "http://h:8123/: HTTP 404: Code: 81, e.displayText() = DB::Exception: Database nosuch doesn't exist",
		  "--store-init" },
		{ "http://h:8123/: HTTP 404: Code: 60, e.displayText() = DB::Exception: Table e.runs doesn't exist",
		  "--store-init" },
		{ "http://h:8123/: Couldn't connect to server", NULL },
		{ "http://h:8123/: Timeout was reached", NULL },
		{ "http://h:8123/: HTTP 500: Code: 241. DB::Exception: Memory limit exceeded", NULL },
		{ "http://h:8123/: HTTP 500: Code: 1600. DB::Exception: x", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *h = rm_chstore_refusal_hint(cases[i].err);

		if (!cases[i].fix)
			assert_null(h);
		else
			assert_non_null(strstr(h ? h : "", cases[i].fix));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_specs),        cmocka_unit_test(test_sqlite_writes),
		cmocka_unit_test(test_collector_id), cmocka_unit_test(test_epoch_row),
		cmocka_unit_test(test_refusal_hint),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
