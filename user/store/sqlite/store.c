// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store.c - the collector's SQLite database: open (lock, pragmas, schema, statements,
 * next row IDs), close (a last transaction, what could not be stored), the
 * store's state for the collector.
 * See store.h; store_impl.h is what the files of sqlite/ share.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "rules/budget.h"
#include "common/log.h"
#include "store_impl.h"

sqlite3 *rm_store_db(struct rm_store *st)
{
	return st->db;
}

const char *rm_store_error(struct rm_store *st)
{
	return sqlite3_errmsg(st->db);
}

int rm_store_unavailable(const struct rm_store *st)
{
	return st->down;
}

uint64_t rm_store_database_drops(const struct rm_store *st)
{
	return st->database_drops;
}

void rm_store_set_budget(struct rm_store *st, struct rm_budget *b)
{
	st->budget = b;
}

void rm_store_set_raw_limit(struct rm_store *st, uint32_t max_raw_records)
{
	st->raw_limit = max_raw_records;
}

void rm_store_close(struct rm_store *st)
{
	if (!st)
		return;
	if (st->db && !st->readonly && st->epochs) {
		rm_sq_attempt(st);
		rm_sq_log_drops(st);
		if (rm_sq_waiting(st))
			rm_log(RM_LOG_ERR,
			       "database unavailable at exit (%s): %u epoch rows, %u sessions, %u raw records and %u "
			       "drop counts could not be stored",
			       st->down_why, st->epochs->len + st->packed_retired, st->sessions_dirty, st->raw->len,
			       g_hash_table_size(st->drops));
	}
	for (int i = 0; i < Q__N; i++)
		sqlite3_finalize(st->q[i]);
	sqlite3_close(st->db);
	rm_sq_chunks_free(st);
	rm_sq_base_clear(st);
	if (st->lock_fd >= 0)
		close(st->lock_fd); /* after SQLite closed its own descriptors: a close drops this process's locks */
	if (st->epochs) {
		for (guint i = 0; i < st->epochs->len; i++) {
			struct rm_epoch *e = g_ptr_array_index(st->epochs, i);

			if (!e) /* packed */
				continue;
			if (e->sink_keeps) {
				rm_rules_epoch_free(e);
				rm_budget_give(st->budget, RM_BUDGET_EPOCH_BYTES);
			} else {
				e->store_slot = 0;
			}
		}
		g_ptr_array_free(st->epochs, TRUE);
	}
	if (st->raw)
		g_ptr_array_free(st->raw, TRUE);
	rm_budget_give(st->budget, st->raw_bytes);
	rm_sq_tmpl_put(st->last_tmpl);
	if (st->sessions)
		g_hash_table_destroy(st->sessions);
	if (st->drops)
		g_hash_table_destroy(st->drops);
	if (st->conns)
		g_hash_table_destroy(st->conns);
	if (st->limits)
		g_array_free(st->limits, TRUE);
	if (st->points)
		g_array_free(st->points, TRUE);
	if (st->lost)
		g_array_free(st->lost, TRUE);
	if (st->retire)
		g_array_free(st->retire, TRUE);
	if (st->ranges)
		g_array_free(st->ranges, TRUE);
	free(st);
}

struct rm_store *rm_store_open(const char *path, int readonly, char *err, size_t errlen)
{
	struct rm_store *st = calloc(1, sizeof(*st));
	char *msg = NULL, pragmas[200];

	if (!st) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	st->lock_fd = -1;
	st->readonly = readonly;
	/* No global memory statistics: they take a mutex on every allocation (refused, harmlessly, once SQLite is initialised). */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	st->raw_limit = 100000;
	if (!readonly) {
		st->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (st->lock_fd < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			rm_store_close(st);
			return NULL;
		}
		if (flock(st->lock_fd, LOCK_EX | LOCK_NB) < 0) {
			snprintf(err, errlen, "%s: %s", path,
				 errno == EWOULDBLOCK
					 ? "in use by another rocemeter collect (one collector per database)"
					 : strerror(errno));
			rm_store_close(st);
			return NULL;
		}
	}
	if (sqlite3_open_v2(path, &st->db,
			    (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
				    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, st->db ? sqlite3_errmsg(st->db) : "cannot open");
		rm_store_close(st);
		return NULL;
	}
	sqlite3_busy_timeout(st->db, readonly ? 5000 : RM_STORE_BUSY_MS);
	if (readonly)
		return st;
	st->epochs = g_ptr_array_new();
	st->chunks = g_ptr_array_new();
	st->spare = g_ptr_array_new();
	st->raw = g_ptr_array_new_with_free_func(rm_sq_raw_free);
	st->sessions = rm_sess_rows_new();
	st->drops = rm_drop_rows_new();
	st->conns = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, rm_sq_conn_row_free);
	st->limits = g_array_new(FALSE, FALSE, sizeof(struct limit_row));
	g_array_set_clear_func(st->limits, rm_sq_limit_row_clear);
	st->points = g_array_new(FALSE, FALSE, sizeof(struct point_row));
	g_array_set_clear_func(st->points, rm_sq_point_row_clear);
	st->lost = g_array_new(FALSE, FALSE, sizeof(int64_t));
	st->retire = g_array_new(FALSE, FALSE, sizeof(struct retire_only));
	st->ranges = g_array_new(FALSE, FALSE, sizeof(struct retire_range));
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;"
		 " PRAGMA cache_size=-%u;",
		 RM_STORE_CACHE_KIB);
	sqlite3_busy_timeout(st->db, 5000);
	if (sqlite3_exec(st->db, pragmas, NULL, NULL, &msg) != SQLITE_OK ||
	    rm_sq_convert_epochs(st, &msg) != SQLITE_OK || rm_sq_bind_points(st, &msg) != SQLITE_OK ||
	    sqlite3_exec(st->db, rm_sq_schema, NULL, NULL, &msg) != SQLITE_OK ||
	    rm_sq_add_column(st, "sessions", "seq_gaps", "INTEGER DEFAULT 0", &msg) != SQLITE_OK ||
	    rm_sq_add_column(st, "sessions", "seq_missing", "INTEGER DEFAULT 0", &msg) != SQLITE_OK ||
	    rm_sq_add_column(st, "sessions", "export_time_backwards", "INTEGER DEFAULT 0", &msg) != SQLITE_OK ||
	    rm_sq_add_column(st, "sessions", "peer_name", "TEXT", &msg) != SQLITE_OK ||
	    rm_sq_add_column(st, "epoch_archive", "retained", "INTEGER DEFAULT 0", &msg) != SQLITE_OK ||
	    rm_sq_add_column(st, "epoch_archive", "base", "TEXT", &msg) != SQLITE_OK ||
	    rm_sq_create_view(st, &msg) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errmsg(st->db));
		sqlite3_free(msg);
		rm_store_close(st);
		return NULL;
	}
	sqlite3_busy_timeout(st->db, RM_STORE_BUSY_MS);
	for (int i = 0; i < Q__N; i++) {
		char *made = i == Q_EPOCH_UPDATE ? rm_sq_epoch_update_sql() : NULL;
		int rc = sqlite3_prepare_v3(st->db, made ? made : rm_sq_queries[i], -1, SQLITE_PREPARE_PERSISTENT,
					    &st->q[i], NULL);

		g_free(made);
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(st->db));
			rm_store_close(st);
			return NULL;
		}
	}
	st->raw_rows = (uint64_t)rm_sq_scalar(st->db, "SELECT count(*) FROM raw_records");
	st->next_session = rm_sq_scalar(st->db, "SELECT coalesce(max(id), 0) + 1 FROM sessions");
	st->next_epoch = rm_sq_scalar(st->db, "SELECT max(coalesce((SELECT max(id) FROM epoch_rows), 0),"
					      " coalesce((SELECT max(last_id) FROM epoch_archive), 0)) + 1");
	sqlite3_wal_hook(st->db, rm_sq_wal_hook, st);
	st->last_flush_ms = rm_clock_mono_ms();
	return st;
}

uint64_t rm_store_raw_bytes(struct rm_store *st)
{
	int64_t n = rm_sq_scalar(
		st->db, "SELECT coalesce(sum(length(record) + coalesce(length(template), 0)), 0) FROM raw_records");

	return n > 0 ? (uint64_t)n : 0;
}
