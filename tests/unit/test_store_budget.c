// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_store_budget.c - what the store holds for its next transaction is
 * charged to the memory budget (docs/collector.md "Memory budget"): a
 * retired epoch waiting to be written keeps its 1024 bytes, raw records
 * their octets, until the transaction that writes them. The rules, the
 * store and the budget wired as `rocemeter collect` wires them, on a
 * SQLite file; "unavailable" is another connection holding the write lock
 * (BEGIN EXCLUSIVE), as another process would. Expected values: the
 * documented charges times the objects fed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include <cmocka.h>

#include "rules/budget.h"
#include "rules/collector_rules.h"
#include "store/sqlite/store.h"
#include "rocemeter/seqobs.h"

#define EPOCH_BYTES 1024u /* docs/collector.md "Memory budget": per retained epoch */

struct fixture {
	char dir[64], db[96];
	struct rm_store *st;
	struct rm_budget *b;
	struct rm_rules *rules;
	sqlite3 *locker;
	int refusals;
	int kept_whole; /* retired epochs the store kept whole (RM_SINK_KEEPS) */
};

static void on_epoch(void *arg, struct rm_epoch *e)
{
	struct fixture *f = arg;

	assert_int_equal(rm_store_epoch(f->st, e), 0);
	f->kept_whole += e->retired_ms && e->sink_keeps == RM_SINK_KEEPS;
}

static void on_drop(void *arg, uint64_t session_id, uint32_t domain, uint64_t epoch_id, const char *detail)
{
}

static void on_refused(void *arg, const char *what, uint64_t bytes, const struct rm_budget_share *sh)
{
	((struct fixture *)arg)->refusals++;
}

/* As `rocemeter collect` wires it: a full budget asks the store to write what it keeps. */
static int on_room(void *arg)
{
	return rm_store_make_room(((struct fixture *)arg)->st);
}

static const struct rm_rules_sink sink = { on_epoch, on_drop, NULL, on_room };

static struct rm_report rep(uint64_t epoch, int final)
{
	struct rm_report r;

	memset(&r, 0, sizeof(r));
	r.observation_point_id = 7;
	r.family = 4;
	r.src[0] = 192, r.src[1] = 0, r.src[2] = 2, r.src[3] = 1;
	r.dst[0] = 192, r.dst[1] = 0, r.dst[2] = 2, r.dst[3] = 2;
	r.dest_qp = 0x000123;
	r.pkey = 0xffff;
	r.flow_start_ms = 1700000000000ULL;
	r.flow_end_ms = 1700000000500ULL;
	r.epoch_id = epoch;
	r.report_id = 1;
	r.window = 4;
	r.flags = RM_FLAG_GENERATION_UNVERIFIED | (final ? RM_FLAG_FINAL_EPOCH : 0);
	r.requests = 5;
	r.skipped = 1;
	r.filled = 1;
	r.repeated = 1;
	return r;
}

/* Feed epochs first..first+n-1 (one report each) to a session; returns how many were accepted. */
static int feed(struct rm_rsession *s, uint64_t first, int n, int final)
{
	int accepted = 0;

	for (int i = 0; i < n; i++) {
		struct rm_report r = rep(first + (uint64_t)i, final);
		char why[256];

		accepted += rm_rules_record(s, 0, &r, 1000, why, sizeof(why)) == RM_V_ACCEPTED;
	}
	rm_rules_flush(s);
	return accepted;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct rm_rules_limits lim = { 8, 100000, 0 };
	char err[256];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/rm-store-budget.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/c.db", f->dir);
	f->st = rm_store_open(f->db, 0, err, sizeof(err));
	assert_non_null(f->st);
	assert_true(rm_store_run_start(f->st, "test", "tcp", &lim, 1000, 0, 1000) > 0);
	f->b = rm_budget_new(20 * EPOCH_BYTES, on_refused, f);
	f->rules = rm_rules_new(&lim, &sink, f);
	assert_non_null(f->b);
	assert_non_null(f->rules);
	rm_rules_set_budget(f->rules, f->b);
	rm_store_set_budget(f->st, f->b);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	if (f->locker)
		sqlite3_close(f->locker);
	rm_store_close(f->st);
	rm_rules_free(f->rules);
	rm_budget_free(f->b);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* Another connection takes the write lock: the store's transactions fail (busy) until unlock(). */
static void lock(struct fixture *f)
{
	assert_int_equal(sqlite3_open(f->db, &f->locker), SQLITE_OK);
	assert_int_equal(sqlite3_exec(f->locker, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
}

static void unlock(struct fixture *f)
{
	assert_int_equal(sqlite3_exec(f->locker, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(f->locker);
	f->locker = NULL;
}

/*
 * The database unavailable: 10 settled epochs retired by their session's
 * end wait in the store, charged; a new session then holds only the 10
 * epochs that still fit (20 x 1024 in all), the other 10 are refused as
 * budget refusals. Once written, the charges come back.
 */
static void test_epochs_waiting_for_the_database_are_charged(void **state)
{
	struct fixture *f = *state;
	struct rm_rsession *s1 = rm_rules_session_open(f->rules, 1), *s2;

	lock(f);
	assert_int_equal(feed(s1, 1, 10, 1), 10);
	rm_rules_session_close(s1, "session ended: test", 2000);
	rm_store_flush(f->st);
	assert_true(rm_store_unavailable(f->st));
	assert_int_equal(rm_budget_used(f->b), 10 * EPOCH_BYTES); /* retired, waiting: still charged */

	s2 = rm_rules_session_open(f->rules, 2);
	assert_int_equal(feed(s2, 1, 20, 0), 10);
	assert_int_equal(f->refusals, 10);
	assert_true(rm_budget_used(f->b) <= rm_budget_limit(f->b));

	unlock(f);
	usleep((RM_STORE_RETRY_MIN_MS + 50) * 1000);
	rm_store_flush(f->st);
	assert_false(rm_store_unavailable(f->st));
	assert_int_equal(rm_budget_used(f->b), 10 * EPOCH_BYTES); /* session 2's retained epochs only */
	rm_rules_session_close(s2, "session ended: test", 3000);
	rm_store_flush(f->st);
	assert_int_equal(rm_budget_used(f->b), 0);
}

static int64_t scalar(const char *db, const char *sql)
{
	sqlite3 *d;
	sqlite3_stmt *q;
	int64_t v = -1;

	assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &q, NULL), SQLITE_OK);
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(d);
	return v;
}

/*
 * Settled epochs retired before their first write are packed at their
 * retirement and freed at once (not kept whole until the transaction), their
 * charges held until written; the packed copies survive a failed
 * transaction and are written, once, by the next: each with its retirement
 * time inline (no epoch_retired range, none retained), as when they were
 * kept whole and packed at the transaction.
 */
static void test_retired_epochs_are_packed_at_retirement(void **state)
{
	struct fixture *f = *state;
	struct rm_rsession *s = rm_rules_session_open(f->rules, 1);

	lock(f);
	assert_int_equal(feed(s, 1, 10, 1), 10);
	rm_rules_session_close(s, "session ended: test", 2000);
	assert_int_equal(f->kept_whole, 0);
	assert_int_equal(rm_budget_used(f->b), 10 * EPOCH_BYTES);
	rm_store_flush(f->st);
	assert_true(rm_store_unavailable(f->st));
	unlock(f);
	usleep((RM_STORE_RETRY_MIN_MS + 50) * 1000);
	rm_store_flush(f->st);
	assert_false(rm_store_unavailable(f->st));
	assert_int_equal(rm_budget_used(f->b), 0);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM epochs WHERE outcome = 'complete' AND retired_ms = 2000"
				       " AND epoch_id BETWEEN 1 AND 10 AND requests = 5"),
			 10);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM epochs"), 10);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM epoch_archive"), 1);
	assert_int_equal(scalar(f->db, "SELECT sum(retained) FROM epoch_archive"), 0);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM epoch_retired"), 0);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM epoch_rows"), 0);
}

/*
 * An open epoch queued first, settled ones after it, all retired before a
 * transaction: whichever order they retire in, the chunks stay in ID
 * order, each after the one before (what report's reader merges by,
 * store_read_sqlite.c), and every epoch is stored once with its outcome.
 */
static void test_packed_chunks_stay_in_id_order(void **state)
{
	struct fixture *f = *state;
	struct rm_rules_limits lim = { 8, 10, 0 }; /* max_epochs 10, no budget: no transaction in between */
	struct rm_rules *rules = rm_rules_new(&lim, &sink, f);
	struct rm_rsession *s = rm_rules_session_open(rules, 1);

	assert_int_equal(feed(s, 1, 1, 0), 1);                  /* open, queued first */
	assert_int_equal(feed(s, 2, 25, 1), 25);                /* settled: max_epochs retires the oldest closed ones */
	rm_rules_session_close(s, "session ended: test", 2000); /* then the open one, and the rest */
	rm_store_flush(f->st);
	rm_rules_free(rules);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM epochs WHERE retired_ms IS NOT NULL"), 26);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM epochs WHERE outcome = 'complete' AND epoch_id BETWEEN 2 "
				       "AND 26"),
			 25);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM epochs WHERE outcome = 'incomplete' AND epoch_id = 1"), 1);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM epoch_rows WHERE epoch_id = 1"),
			 1); /* below those packed */
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM (SELECT first_id, last_id, lag(last_id) OVER (ORDER BY id)"
				       " AS prev FROM epoch_archive) WHERE last_id < first_id OR prev >= first_id"),
			 0);
}

/*
 * The database available, the budget full of settled epochs: each new
 * epoch retires the oldest closed one (docs/collector.md "Memory budget"),
 * and the store writes what waits rather than let the retired epochs hold
 * the budget (the rules' sink->room): every epoch is accepted, none
 * refused.
 */
static void test_full_budget_with_the_database_available(void **state)
{
	struct fixture *f = *state;
	struct rm_rsession *s = rm_rules_session_open(f->rules, 1);

	assert_int_equal(feed(s, 1, 20, 1), 20);
	rm_store_flush(f->st);
	assert_int_equal(feed(s, 21, 30, 1), 30);
	assert_int_equal(f->refusals, 0);
	assert_int_equal(rm_rules_retained(s), 20);
	assert_true(rm_budget_used(f->b) <= rm_budget_limit(f->b));
	rm_rules_session_close(s, "session ended: test", 2000);
	rm_store_flush(f->st);
	assert_int_equal(rm_budget_used(f->b), 0);
}

/* Raw records waiting for the database are charged their octets: the budget refuses them past it. */
static void test_raw_records_waiting_are_charged(void **state)
{
	struct fixture *f = *state;
	static uint8_t rec[1000];
	int kept = 0;

	lock(f);
	assert_int_equal(rm_store_drop(f->st, 1, "test", "something to write", 1000), 0);
	rm_store_flush(f->st);
	assert_true(rm_store_unavailable(f->st));
	for (int i = 0; i < 40; i++)
		kept += rm_store_raw(f->st, 1, 0, 256, NULL, "invalid", "test", rec, sizeof(rec), NULL, 0, 1000) == 1;
	/* 20 x 1024 = 20480 bytes hold at most 20 records of 1000 octets plus their bookkeeping. */
	assert_true(kept > 0 && kept < 21);
	assert_int_equal(f->refusals, 40 - kept);
	assert_true(rm_budget_used(f->b) <= rm_budget_limit(f->b));
	unlock(f);
	usleep((RM_STORE_RETRY_MIN_MS + 50) * 1000);
	rm_store_flush(f->st);
	assert_false(rm_store_unavailable(f->st));
	assert_int_equal(rm_budget_used(f->b), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_epochs_waiting_for_the_database_are_charged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_budget_with_the_database_available, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retired_epochs_are_packed_at_retirement, setup, teardown),
		cmocka_unit_test_setup_teardown(test_packed_chunks_stay_in_id_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_records_waiting_are_charged, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
