// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * recover.c - runs and crash recovery: at a run's start, the sessions and epochs an
 * earlier run left open are ended and retired (store.h).
 */
#include <glib.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>

#include "common/log.h"
#include "store_impl.h"

/*
 * Sessions that an earlier run left open (it was killed, or crashed): a
 * session failure for [SEQOBS] ("Collector Processing": a session failure
 * without finalEpoch leaves the epoch incomplete). The reason mirrors the
 * rules engine's retirement text.
 */
static int recover(struct rm_store *store, uint64_t now_ms, int64_t *n_sessions, int64_t *n_open, int64_t *n_settled)
{
	static const char cause[] = "session ended: collector restarted (the run that received it ended without "
				    "closing its session)";
	int64_t packed;
	GString *sql = g_string_new(NULL);

	*n_sessions = rm_sq_exec_args(
		store->db, "UPDATE sessions SET ended_ms = ?1, end_reason = ?2 WHERE ended_ms IS NULL", "is",
		(int64_t)now_ms, "collector restarted: the run that held this session ended without closing it");
	*n_open = rm_sq_exec_args(
		store->db,
		"UPDATE epoch_rows SET retired_ms = ?1, outcome = 'incomplete', reason = CASE"
		" WHEN coalesce(reports_accepted, 0) = 0 THEN ?2 || '; no accepted report'"
		" ELSE ?2 || ' without a final report (last report ' || last_report_id || ')' ||"
		" CASE WHEN missing_reports > 0 THEN '; ' || missing_reports || ' reports missing' ELSE '' END"
		" END WHERE retired_ms IS NULL AND state = 'open'",
		"is", (int64_t)now_ms, cause);
	*n_settled = rm_sq_exec_args(store->db, "UPDATE epoch_rows SET retired_ms = ?1 WHERE retired_ms IS NULL", "i",
				     (int64_t)now_ms);
	/* Packed copies written before their retirement (only settled epochs are), in chunks with retained > 0. */
	g_string_append(
		sql, "INSERT INTO epoch_retired (first_id, last_id, retired_ms) SELECT p.id, p.id, ?1 FROM (SELECT ");
	rm_sq_packed_col(sql, EC_ID);
	g_string_append(sql, " AS id FROM epoch_archive a, json_each(a.data) j WHERE a.retained > 0 AND ");
	rm_sq_packed_col(sql, EC_RETIRED);
	g_string_append(sql, " IS NULL) p WHERE NOT EXISTS (SELECT 1 FROM epoch_rows o WHERE o.id = p.id) AND ");
	rm_sq_retirement_of(sql, "p.id");
	g_string_append(sql, " IS NULL ORDER BY p.id");
	packed = rm_sq_exec_args(store->db, sql->str, "i", (int64_t)now_ms);
	g_string_free(sql, TRUE);
	if (packed < 0 ||
	    rm_sq_exec_args(store->db, "UPDATE epoch_archive SET retained = 0 WHERE retained > 0", "") < 0)
		return -1;
	*n_settled += packed;
	return *n_sessions < 0 || *n_open < 0 || *n_settled < 0 ? -1 : 0;
}

/* The runs row of a new run (its ID SQLite's). 0 or -1. */
static int insert_run(sqlite3 *db, const struct rm_run_row *run)
{
	char *sql = rm_sq_insert_sql(&rm_stored_runs);
	sqlite3_stmt *q;
	int rc = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK) {
		rm_sq_bind_row(q, &rm_stored_runs, run, 0);
		rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -1;
		sqlite3_finalize(q);
	}
	g_free(sql);
	return rc;
}

int64_t rm_store_run_start(struct rm_store *store, const char *listen, const char *transport,
			   const struct rm_rules_limits *lim, uint32_t max_raw_records, uint32_t pen, uint64_t now_ms)
{
	struct rm_run_row run = rm_run_row_of(listen, transport, lim, max_raw_records, pen, now_ms);
	int64_t id = -1, ns = 0, no = 0, nd = 0;

	store->raw_limit = max_raw_records;
	/* At start, another process's write lock may be waited for longer than in the loop. */
	sqlite3_busy_timeout(store->db, 5000);
	if (sqlite3_exec(store->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	if (recover(store, now_ms, &ns, &no, &nd) < 0 || insert_run(store->db, &run) < 0) {
		sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
		goto out;
	}
	id = sqlite3_last_insert_rowid(store->db);
	if (sqlite3_exec(store->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
		id = -1;
		goto out;
	}
	if (ns > 0 || no > 0 || nd > 0)
		rm_log(RM_LOG_NOTICE,
		       "collector restarted: an earlier run ended without closing %" PRId64 " sessions; they are "
		       "ended now, %" PRId64 " open epochs retired as incomplete (collector restarted), %" PRId64
		       " settled epochs retired with their outcome",
		       ns, no, nd);
out:
	sqlite3_busy_timeout(store->db, RM_STORE_BUSY_MS);
	return id;
}

int rm_store_run_stop(struct rm_store *store, int64_t run_id, uint64_t now_ms)
{
	store->stop_run = run_id;
	store->stop_ms = now_ms;
	return 0;
}
