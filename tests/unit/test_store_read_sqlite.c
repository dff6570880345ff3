// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_store_read_sqlite.c - report's SQLite reader (rm_store_reader_epochs,
 * store_read.h) against the epochs view (docs/collector.md "What is
 * stored"), row by row: a store written through the store API with every
 * outcome, state, closure reason (flags_seen), NULL measurement, address
 * family, escaped and non-ASCII reason, and every packing case - packed
 * and retired at its first write, packed and retained then retired by a
 * range of epoch_retired, packed and retained for good, packed then
 * changed (a row of epoch_rows replaces the copy), open rows updated and
 * retired, chunks whose base is NULL where an epoch is not and the other
 * way round, several chunks, and a restart whose recovery retires the
 * rest - then read by the reader and by "SELECT ... FROM epochs WHERE
 * <report's filter in SQL> ORDER BY id", for every filter of report.
 * The view is SQLite's JSON functions over the stored text: independent
 * of the reader's C decoding.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <glib.h>
#include <sqlite3.h>
#include <cmocka.h>

#include "rules/collector_rules.h"
#include "rules/pool.h"
#include "store/sqlite/store.h"
#include "store/store_read.h"

#define T0       1700000000000ULL
#define N_EPOCHS 12000

struct fixture {
	char dir[64], db[96];
	struct rm_store *st;
	struct rm_pool *pool;
	GPtrArray *retained; /* struct rm_epoch *: stored, not retired; ours */
	GPtrArray *done;     /* struct rm_epoch *: stored retired and not kept by the store; ours */
	uint64_t rnd;
};

static uint32_t rnd(struct fixture *f, uint32_t n)
{
	f->rnd ^= f->rnd << 13;
	f->rnd ^= f->rnd >> 7;
	f->rnd ^= f->rnd << 17;
	return (uint32_t)(f->rnd % n);
}

static struct rm_store *open_rw(struct fixture *f, uint64_t now_ms)
{
	struct rm_rules_limits lim = { 8, 100000, 0 };
	char err[256];
	struct rm_store *st = rm_store_open(f->db, 0, err, sizeof(err));

	assert_non_null(st);
	assert_true(rm_store_run_start(st, "test", "tcp", &lim, 1000, 0, now_ms) > 0);
	return st;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/rm-store-read.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/c.db", f->dir);
	f->st = open_rw(f, T0);
	f->pool = rm_pool_new(sizeof(struct rm_epoch));
	assert_non_null(f->pool);
	f->retained = g_ptr_array_new();
	f->done = g_ptr_array_new();
	f->rnd = 0x9e3779b97f4a7c15ULL;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	rm_store_close(f->st);
	for (guint i = 0; i < f->retained->len; i++)
		rm_rules_epoch_free(g_ptr_array_index(f->retained, i));
	g_ptr_array_free(f->retained, TRUE);
	for (guint i = 0; i < f->done->len; i++)
		rm_rules_epoch_free(g_ptr_array_index(f->done, i));
	g_ptr_array_free(f->done, TRUE);
	rm_pool_release(f->pool);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static const char *const reasons[] = {
	"",
	"final report 7 received; 2 reports missing",
	"session ended; no accepted report",
	"inactivity timeout without a final report (last report 3)",
	"bad \"q\" \\ x\ty\001 caf\xc3\xa9 /",
	"closure-reason flags 0x0004 in a non-final record",
};
static const char *const v4[] = { "192.0.2.1", "192.0.2.2", "198.51.100.20" };
static const char *const v6[] = { "2001:db8::1", "2001:db8::2", "fe80::1" };
/* flags_seen: finalEpoch alone and with each closure reason, none, a profile violation */
static const uint16_t flags[] = { 0x01, 0x03, 0x05, 0x09, 0x11, 0x21, 0x00, 0x02 };

static void set_addrs(struct rm_epoch *e, int family, const char *src, const char *dst)
{
	e->key.family = (uint8_t)family;
	memset(e->key.src, 0, sizeof(e->key.src));
	memset(e->key.dst, 0, sizeof(e->key.dst));
	assert_int_equal(inet_pton(family == 6 ? AF_INET6 : AF_INET, src, e->key.src), 1);
	assert_int_equal(inet_pton(family == 6 ? AF_INET6 : AF_INET, dst, e->key.dst), 1);
}

/* Epoch i, drawn from the tables above; runs of similar epochs, as a chunk of one exporter has. */
static struct rm_epoch *epoch(struct fixture *f, uint64_t i)
{
	struct rm_epoch *e = rm_pool_alloc(f->pool);
	struct rm_report *k;
	int fam = rnd(f, 4) ? 4 : 6;

	assert_non_null(e);
	memset(e, 0, sizeof(*e));
	k = &e->key;
	e->session_id = 1 + rnd(f, 3);
	e->domain = rnd(f, 2) ? 5 : 0;
	k->observation_point_id = rnd(f, 3);
	set_addrs(e, fam, (fam == 4 ? v4 : v6)[rnd(f, 3)], (fam == 4 ? v4 : v6)[rnd(f, 3)]);
	k->dest_qp = 0x100 + rnd(f, 4);
	k->pkey = rnd(f, 2) ? 0xffff : 0x8001;
	k->has_vlan_ns = (uint8_t)rnd(f, 2);
	k->vlan[0] = k->has_vlan_ns ? 100 : 0;
	k->vlan[1] = rnd(f, 5) ? 0 : 7;
	k->epoch_id = i;
	k->window = 1024;
	k->flags = flags[rnd(f, 8)];
	e->flags_seen = k->flags;
	k->flow_start_ms = T0 + i * 10;
	k->flow_end_ms = k->flow_start_ms + rnd(f, 50);
	e->first_report_id = 1;
	k->report_id = 1 + rnd(f, 5);
	e->n_accepted = k->report_id;
	k->requests = rnd(f, 1000);
	k->skipped = rnd(f, 3);
	k->filled = rnd(f, 2);
	k->expired = rnd(f, 4) ? 0 : 1;
	k->abandoned = rnd(f, 4) ? 0 : 2;
	k->pending = rnd(f, 6) ? 0 : 1;
	k->repeated = rnd(f, 5) ? 0 : 3;
	k->unclassified_late = rnd(f, 9) ? 0 : 1;
	if (!rnd(f, 50)) /* above 2^63 - 1: stored as negative int64 */
		k->requests = UINT64_MAX - rnd(f, 3);
	e->missing_reports = rnd(f, 7) ? 0 : 10000000000ULL;
	e->state = RM_EPOCH_FINAL;
	e->outcome = rnd(f, 3) ? RM_OUTCOME_COMPLETE : RM_OUTCOME_INCOMPLETE;
	if (!rnd(f, 6)) {
		e->state = RM_EPOCH_INVALID;
		e->outcome = RM_OUTCOME_INVALID;
	}
	e->reason = strdup(reasons[e->outcome == RM_OUTCOME_COMPLETE ? 0 : 1 + rnd(f, 5)]);
	assert_non_null(e->reason);
	if (!rnd(f, 8)) { /* no accepted report: the measurement columns NULL */
		e->n_accepted = 0;
		e->first_report_id = 0;
		e->flags_seen = 0;
		e->state = RM_EPOCH_OPEN;
		e->outcome = RM_OUTCOME_INCOMPLETE;
	}
	e->first_seen_ms = k->flow_start_ms + 1;
	e->last_seen_ms = k->flow_end_ms + 2;
	return e;
}

static void store(struct fixture *f, struct rm_epoch *e)
{
	assert_int_equal(rm_store_epoch(f->st, e), 0);
}

/*
 * Epochs first..last, each one of: packed and retired at once; packed and
 * retained (some retired later in runs, some changed, some never); open,
 * written as a row, updated, sometimes retired.
 */
static void write_epochs(struct fixture *f, uint64_t first, uint64_t last)
{
	for (uint64_t i = first; i <= last; i++) {
		struct rm_epoch *e = epoch(f, i);
		uint32_t how = rnd(f, 10);

		if (how < 5 || e->state == RM_EPOCH_OPEN) { /* retired at its first write */
			e->retired_ms = T0 + i * 10 + 1000;
			store(f, e);
			if (e->sink_keeps !=
			    RM_SINK_KEEPS) /* the store keeps (and frees) it, or it is ours: as the rules do */
				g_ptr_array_add(f->done, e);
		} else if (how < 8) { /* settled and retained: packed, retired_ms NULL */
			store(f, e);
			g_ptr_array_add(f->retained, e);
		} else { /* open: a row */
			e->state = RM_EPOCH_OPEN;
			e->outcome = RM_OUTCOME_OPEN;
			free((char *)e->reason);
			e->reason = strdup("");
			store(f, e);
			g_ptr_array_add(f->retained, e);
		}
		if (i % 2000 == 0) /* a chunk each */
			assert_int_equal(rm_store_flush(f->st), 0);
	}
	assert_int_equal(rm_store_flush(f->st), 0);
}

/* The retained epochs change: some retired (ranges, or row updates), some changed after they were packed. */
static void change_retained(struct fixture *f, uint64_t now_ms)
{
	GPtrArray *keep = g_ptr_array_new();

	for (guint i = 0; i < f->retained->len; i++) {
		struct rm_epoch *e = g_ptr_array_index(f->retained, i);
		uint32_t how = rnd(f, 4);

		if (how == 0) { /* stays as it is */
			g_ptr_array_add(keep, e);
			continue;
		}
		if (how == 1 || e->state == RM_EPOCH_OPEN) { /* changed: a packed copy gives way to a row */
			e->dirty = 1;
			e->key.requests += 1;
			e->last_seen_ms += 5;
			if (e->state == RM_EPOCH_OPEN && rnd(f, 2)) {
				e->state = RM_EPOCH_FINAL;
				e->outcome = RM_OUTCOME_COMPLETE;
			}
			store(f, e);
			e->dirty = 0;
			if (rnd(f, 2)) {
				g_ptr_array_add(keep, e);
				continue;
			}
		}
		if (e->state == RM_EPOCH_OPEN) { /* as the rules retire an open epoch */
			e->outcome = RM_OUTCOME_INCOMPLETE;
			free((char *)e->reason);
			e->reason = strdup(reasons[3]);
		}
		e->retired_ms = now_ms + (i / 64) * 7; /* runs of one time: ranges */
		store(f, e);
		if (e->sink_keeps != RM_SINK_KEEPS)
			g_ptr_array_add(f->done, e);
	}
	g_ptr_array_free(f->retained, TRUE);
	f->retained = keep;
	assert_int_equal(rm_store_flush(f->st), 0);
}

static void row_text(GString *g, int c, int null, uint64_t u, const char *t)
{
	g_string_append(g, c ? "," : "");
	if (null)
		g_string_append(g, "null");
	else if (rm_epoch_read_kinds[c] == 'T')
		g_string_append_printf(g, "\"%s\"", t);
	else
		g_string_append_printf(g, "%" G_GUINT64_FORMAT, u);
}

static int collect_row(void *arg, const struct rm_epoch_read *e)
{
	GPtrArray *rows = arg;
	GString *g = g_string_new(NULL);

	assert_null(e->collector_id);
	for (int c = 0; c < RM_ER__N; c++) {
		if (e->null[c]) {
			assert_int_equal(e->u[c], 0);
			assert_null(e->t[c]);
		}
		row_text(g, c, e->null[c], e->u[c], e->t[c]);
	}
	g_ptr_array_add(rows, g_string_free(g, FALSE));
	return 0;
}

/* The view's rows through report's filter written in SQL, as collect_row writes them. */
static GPtrArray *view_rows(struct fixture *f, const struct rm_read_filter *rf)
{
	GPtrArray *rows = g_ptr_array_new_with_free_func(g_free);
	GString *sql = g_string_new("SELECT");
	sqlite3 *db;
	sqlite3_stmt *q;

	assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	for (int c = 0; c < RM_ER__N; c++)
		g_string_append_printf(sql, "%s %s", c ? "," : "", rm_epoch_read_names[c]);
	g_string_append(sql,
			" FROM epochs"
			" WHERE (?1 IS NULL OR outcome = ?1)"
			" AND (?2 IS NULL OR coalesce(flow_end_ms, last_seen_ms) >= ?2)"
			" AND (?3 IS NULL OR coalesce(flow_start_ms, first_seen_ms) <= ?3)"
			" AND (?4 IS NULL OR (src = ?4 AND dst = ?5 AND dest_qp = ?6 AND (?7 IS NULL OR pkey = ?7)))"
			" ORDER BY id");
	assert_int_equal(sqlite3_prepare_v2(db, sql->str, -1, &q, NULL), SQLITE_OK);
	if (rf->outcome)
		sqlite3_bind_text(q, 1, rf->outcome, -1, SQLITE_STATIC);
	if (rf->has_since)
		sqlite3_bind_int64(q, 2, (sqlite3_int64)rf->since);
	if (rf->has_until)
		sqlite3_bind_int64(q, 3, (sqlite3_int64)rf->until);
	if (rf->src) {
		sqlite3_bind_text(q, 4, rf->src, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 5, rf->dst, -1, SQLITE_STATIC);
		sqlite3_bind_int64(q, 6, (sqlite3_int64)rf->qp);
		if (rf->pkey >= 0)
			sqlite3_bind_int64(q, 7, rf->pkey);
	}
	while (sqlite3_step(q) == SQLITE_ROW) {
		GString *g = g_string_new(NULL);

		for (int c = 0; c < RM_ER__N; c++) {
			int t = sqlite3_column_type(q, c);

			assert_true(t == SQLITE_NULL ||
				    t == (rm_epoch_read_kinds[c] == 'T' ? SQLITE_TEXT : SQLITE_INTEGER));
			row_text(g, c, t == SQLITE_NULL, (uint64_t)sqlite3_column_int64(q, c),
				 (const char *)sqlite3_column_text(q, c));
		}
		g_ptr_array_add(rows, g_string_free(g, FALSE));
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
	g_string_free(sql, TRUE);
	return rows;
}

static size_t compare(struct fixture *f, const struct rm_read_filter *rf)
{
	struct rm_store_spec spec = { .kind = RM_STORE_SQLITE };
	GPtrArray *want = view_rows(f, rf), *got = g_ptr_array_new_with_free_func(g_free);
	char err[256] = "";
	struct rm_store_reader *r;
	size_t n = want->len;

	snprintf(spec.path, sizeof(spec.path), "%s", f->db);
	r = rm_store_reader_open(&spec, err, sizeof(err));
	if (!r)
		fail_msg("%s", err);
	assert_int_equal(rm_store_reader_epochs(r, rf, collect_row, got, err, sizeof(err)), 0);
	rm_store_reader_close(r);
	for (guint i = 0; i < want->len && i < got->len; i++)
		if (strcmp(want->pdata[i], got->pdata[i]))
			fail_msg("row %u:\n view   %s\n reader %s", i, (char *)want->pdata[i], (char *)got->pdata[i]);
	assert_int_equal(got->len, want->len);
	g_ptr_array_free(want, TRUE);
	g_ptr_array_free(got, TRUE);
	return n;
}

/* Every filter of report, each compared with the view; the unfiltered read holds all epochs. */
static void compare_filters(struct fixture *f, size_t all, int open_left)
{
	static const char *const outcomes[] = { "complete", "incomplete", "invalid", "open" };
	struct rm_read_filter rf = { .pkey = -1 };
	size_t n, sum = 0;

	assert_int_equal(compare(f, &rf), all);
	for (int i = 0; i < 4; i++) {
		rf.outcome = outcomes[i];
		n = compare(f, &rf);
		assert_true(n > 0 || (i == 3 && !open_left));
		sum += n;
	}
	assert_int_equal(sum, all);
	rf.outcome = NULL;
	rf.has_since = 1;
	rf.since = T0 + 30000;
	n = compare(f, &rf);
	rf.has_until = 1;
	rf.until = T0 + 60000;
	assert_true(compare(f, &rf) < n);
	rf.has_since = 0;
	assert_true(compare(f, &rf) > 0);
	rf.has_until = 0;
	rf.src = "192.0.2.1";
	rf.dst = "192.0.2.2";
	rf.qp = 0x101;
	n = compare(f, &rf);
	assert_true(n > 0 && n < all);
	rf.pkey = 0x8001;
	assert_true(compare(f, &rf) < n);
	rf.src = "2001:db8::1";
	rf.dst = "fe80::1";
	assert_true(compare(f, &rf) > 0);
	rf.outcome = "invalid";
	rf.has_since = 1;
	compare(f, &rf);
	rf.src = "192.0.2.9"; /* no such connection */
	assert_int_equal(compare(f, &rf), 0);
}

static int count_rows(struct fixture *f, const char *sql)
{
	sqlite3_stmt *q;
	int n;

	assert_int_equal(sqlite3_prepare_v2(rm_store_db(f->st), sql, -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	n = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	return n;
}

static void test_reader_equals_view(void **state)
{
	struct fixture *f = *state;

	write_epochs(f, 1, N_EPOCHS / 2);
	change_retained(f, T0 + 500000);
	write_epochs(f, N_EPOCHS / 2 + 1, N_EPOCHS);
	change_retained(f, T0 + 600000);
	/* every packing case is there */
	assert_true(count_rows(f, "SELECT count(*) FROM epoch_archive") >= 3);
	assert_true(count_rows(f, "SELECT count(*) FROM epoch_retired") > 10);
	assert_true(count_rows(f, "SELECT count(*) FROM epoch_rows WHERE state = 'open' AND retired_ms IS NULL") > 0);
	assert_true(count_rows(f, "SELECT count(*) FROM epoch_rows WHERE state != 'open'") > 0);
	assert_true(count_rows(f, "SELECT count(*) FROM epochs WHERE retired_ms IS NULL AND state != 'open'") > 0);
	assert_true(count_rows(f, "SELECT count(*) FROM epochs WHERE requests IS NULL") > 0);
	assert_true(count_rows(f, "SELECT count(*) FROM epochs WHERE requests < 0") > 0);
	assert_true(count_rows(f, "SELECT count(*) FROM epoch_archive a, json_each(a.data) j WHERE j.type = 'array'") >
		    0);
	assert_int_equal(count_rows(f, "SELECT count(*) FROM epochs"), N_EPOCHS);
	compare_filters(f, N_EPOCHS, 1);

	/* A restart: the recovery retires what the earlier run left open or retained. */
	rm_store_close(f->st);
	f->st = open_rw(f, T0 + 900000);
	assert_int_equal(count_rows(f, "SELECT count(*) FROM epochs WHERE retired_ms IS NULL"), 0);
	assert_true(count_rows(f, "SELECT count(*) FROM epochs WHERE reason LIKE '%collector restarted%'") > 0);
	compare_filters(f, N_EPOCHS, 0);
}

/* A callback that stops the read: its value is returned, no row after it. */
static int stop_at_3(void *arg, const struct rm_epoch_read *e)
{
	return ++*(int *)arg == 3 ? 42 : 0;
}

static void test_reader_stops(void **state)
{
	struct fixture *f = *state;
	struct rm_store_spec spec = { .kind = RM_STORE_SQLITE };
	struct rm_read_filter rf = { .pkey = -1 };
	struct rm_store_reader *r;
	char err[256];
	int n = 0;

	write_epochs(f, 1, 100);
	snprintf(spec.path, sizeof(spec.path), "%s", f->db);
	r = rm_store_reader_open(&spec, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(rm_store_reader_epochs(r, &rf, stop_at_3, &n, err, sizeof(err)), 42);
	assert_int_equal(n, 3);
	rm_store_reader_close(r);
}

static void exec_sql(struct fixture *f, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(rm_store_db(f->st), sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg);
}

/* Chunks out of ID order (no collect writes them): read through the view, still equal to it. */
static void test_chunks_out_of_order(void **state)
{
	struct fixture *f = *state;

	write_epochs(f, 1, 6000);
	assert_true(count_rows(f, "SELECT count(*) FROM epoch_archive") >= 3);
	/* the first chunk's range moved past the others': its IDs are outside it, read as the view reads them */
	exec_sql(f, "UPDATE epoch_archive SET first_id = first_id + 100000, last_id = last_id + 100000"
		    " WHERE id = (SELECT min(id) FROM epoch_archive)");
	assert_int_equal(compare(f, &(struct rm_read_filter){ .pkey = -1 }), 6000);
	assert_true(compare(f, &(struct rm_read_filter){ .pkey = -1, .outcome = "invalid" }) > 0);
}

/* A chunk whose data is NULL holds no epoch, as for the view (json_each of NULL). */
static void test_null_chunk(void **state)
{
	struct fixture *f = *state;

	write_epochs(f, 1, 3000);
	exec_sql(f, "UPDATE epoch_archive SET data = NULL WHERE id = (SELECT min(id) FROM epoch_archive)");
	assert_true(compare(f, &(struct rm_read_filter){ .pkey = -1 }) < 3000);
}

/* A database of another layout (epoch_archive without base, its own view): read through its view. */
static void test_other_layout(void **state)
{
	struct fixture *f = *state;

	write_epochs(f, 1, 3000);
	exec_sql(f, "CREATE TABLE old_epochs AS SELECT * FROM epochs ORDER BY id; DROP VIEW epochs;"
		    " ALTER TABLE epoch_archive DROP COLUMN base; UPDATE old_epochs SET requests = 7;"
		    " CREATE VIEW epochs AS SELECT * FROM old_epochs");
	assert_int_equal(compare(f, &(struct rm_read_filter){ .pkey = -1 }), 3000);
	assert_int_equal(count_rows(f, "SELECT count(*) FROM epochs WHERE requests = 7"), 3000);
}

/* The error for a chunk that is not the packed form: names its row, reads nothing of it. */
static void assert_bad_chunk(struct fixture *f, const char *data)
{
	struct rm_store_spec spec = { .kind = RM_STORE_SQLITE };
	struct rm_read_filter rf = { .pkey = -1 };
	GPtrArray *got = g_ptr_array_new_with_free_func(g_free);
	struct rm_store_reader *r;
	sqlite3_stmt *q;
	char err[256] = "", want[64];
	int64_t id;

	id = count_rows(f, "SELECT max(id) FROM epoch_archive");
	assert_int_equal(sqlite3_prepare_v2(rm_store_db(f->st), "UPDATE epoch_archive SET data = ?1 WHERE id = ?2", -1,
					    &q, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(q, 1, data, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, id);
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	sqlite3_finalize(q);
	snprintf(spec.path, sizeof(spec.path), "%s", f->db);
	r = rm_store_reader_open(&spec, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(rm_store_reader_epochs(r, &rf, collect_row, got, err, sizeof(err)), -EIO);
	snprintf(want, sizeof(want), "epoch_archive row %lld: ", (long long)id);
	if (!strstr(err, want))
		fail_msg("data %s: error \"%s\"", data, err);
	rm_store_reader_close(r);
	g_ptr_array_free(got, TRUE);
}

static void test_bad_chunks(void **state)
{
	struct fixture *f = *state;
	static const char *const bad[] = {
		"[{\"a\":999999}]",               /* an ID outside the chunk's range */
		"[{\"x\":1.5}]",                  /* a real */
		"[{\"x\":true}]",                 /* true */
		"[{\"x\":[1]}]",                  /* a nested value */
		"[{\"x\":99999999999999999999}]", /* beyond int64 */
		"[{\"M\":\"cut}]",                /* a cut text */
		"[{\"M\":\"a\\qb\"}]",            /* an unknown escape */
		"[{}",                            /* no end */
		"[{},]",                          /* a trailing comma */
		"[7]",                            /* neither an object nor an array */
		"{}",                             /* not an array */
		"[{\"e\":\"x\"}]",                /* a text where an integer is */
	};

	write_epochs(f, 1, 3000);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_bad_chunk(f, bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reader_equals_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chunks_out_of_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_chunk, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
