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

sqlite3 *rm_store_db(struct rm_store *store)
{
	return store->db;
}

const char *rm_store_error(struct rm_store *store)
{
	return sqlite3_errmsg(store->db);
}

int rm_store_unavailable(const struct rm_store *store)
{
	return store->down;
}

uint64_t rm_store_database_drops(const struct rm_store *store)
{
	return store->database_drops;
}

void rm_store_set_budget(struct rm_store *store, struct rm_budget *b)
{
	store->budget = b;
}

void rm_store_set_raw_limit(struct rm_store *store, uint32_t max_raw_records)
{
	store->raw_limit = max_raw_records;
}

void rm_store_close(struct rm_store *store)
{
	if (!store)
		return;
	if (store->db && !store->readonly && store->epochs) {
		rm_sq_attempt(store);
		rm_sq_log_drops(store);
		if (rm_sq_waiting(store))
			rm_log(RM_LOG_ERR,
			       "database unavailable at exit (%s): %u epoch rows, %u sessions, %u raw records and %u "
			       "drop counts could not be stored",
			       store->down_why, store->epochs->len + store->packed_retired, store->sessions_dirty,
			       store->raw->len, g_hash_table_size(store->drops));
	}
	for (int i = 0; i < Q__N; i++)
		sqlite3_finalize(store->q[i]);
	sqlite3_close(store->db);
	rm_sq_chunks_free(store);
	rm_sq_base_clear(store);
	if (store->lock_fd >= 0)
		close(store->lock_fd); /* after SQLite closed its own descriptors: a close drops this process's locks */
	if (store->epochs) {
		for (guint i = 0; i < store->epochs->len; i++) {
			struct rm_epoch *e = g_ptr_array_index(store->epochs, i);

			if (!e) /* packed */
				continue;
			if (e->sink_keeps) {
				rm_rules_epoch_free(e);
				rm_budget_give(store->budget, RM_BUDGET_EPOCH_BYTES);
			} else {
				e->store_slot = 0;
			}
		}
		g_ptr_array_free(store->epochs, TRUE);
	}
	if (store->raw)
		g_ptr_array_free(store->raw, TRUE);
	rm_budget_give(store->budget, store->raw_bytes);
	rm_sq_tmpl_put(store->last_tmpl);
	if (store->sessions)
		g_hash_table_destroy(store->sessions);
	if (store->drops)
		g_hash_table_destroy(store->drops);
	if (store->conns)
		g_hash_table_destroy(store->conns);
	if (store->limits)
		g_array_free(store->limits, TRUE);
	if (store->points)
		g_array_free(store->points, TRUE);
	if (store->lost)
		g_array_free(store->lost, TRUE);
	if (store->retire)
		g_array_free(store->retire, TRUE);
	if (store->ranges)
		g_array_free(store->ranges, TRUE);
	free(store);
}

/*
 * A read-write open: the pragmas, the tables (an earlier layout converted,
 * columns added since), the view, the statements. 0, or -errno with err.
 */
static int schema(struct rm_store *store, char *err, size_t errlen)
{
	char pragmas[200], *tables = rm_sq_schema_sql();
	int rc;

	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;"
		 " PRAGMA cache_size=-%u;",
		 RM_STORE_CACHE_KIB);
	sqlite3_busy_timeout(store->db, 5000);
	rc = rm_sq_exec(store->db, pragmas, err, errlen);
	if (!rc)
		rc = rm_sq_convert_epochs(store->db, err, errlen);
	if (!rc)
		rc = rm_sq_bind_points(store->db, err, errlen);
	if (!rc)
		rc = rm_sq_exec(store->db, tables, err, errlen);
	if (!rc)
		rc = rm_sq_add_columns(store->db, err, errlen);
	if (!rc)
		rc = rm_sq_create_view(store->db, err, errlen);
	g_free(tables);
	if (rc)
		return rc;
	sqlite3_busy_timeout(store->db, RM_STORE_BUSY_MS);
	for (int i = 0; i < Q__N && !rc; i++) {
		char *sql = rm_sq_query_sql(i);

		rc = sqlite3_prepare_v3(store->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &store->q[i], NULL);
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "%s", sqlite3_errmsg(store->db));
			rc = rm_sq_errno(rc);
		}
		g_free(sql);
	}
	return rc;
}

struct rm_store *rm_store_open(const char *path, int readonly, char *err, size_t errlen)
{
	struct rm_store *store = calloc(1, sizeof(*store));
	char why[400];

	if (!store) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	store->lock_fd = -1;
	store->readonly = readonly;
	/* No global memory statistics: they take a mutex on every allocation (refused, harmlessly, once SQLite is initialised). */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	store->raw_limit = 100000;
	if (!readonly) {
		store->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (store->lock_fd < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			rm_store_close(store);
			return NULL;
		}
		if (flock(store->lock_fd, LOCK_EX | LOCK_NB) < 0) {
			snprintf(err, errlen, "%s: %s", path,
				 errno == EWOULDBLOCK
					 ? "in use by another rocemeter collect (one collector per database)"
					 : strerror(errno));
			rm_store_close(store);
			return NULL;
		}
	}
	if (sqlite3_open_v2(path, &store->db,
			    (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
				    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, store->db ? sqlite3_errmsg(store->db) : "cannot open");
		rm_store_close(store);
		return NULL;
	}
	sqlite3_busy_timeout(store->db, readonly ? 5000 : RM_STORE_BUSY_MS);
	if (readonly)
		return store;
	store->epochs = g_ptr_array_new();
	store->chunks = g_ptr_array_new();
	store->spare = g_ptr_array_new();
	store->raw = g_ptr_array_new_with_free_func(rm_sq_raw_free);
	store->sessions = rm_sess_rows_new();
	store->drops = rm_drop_rows_new();
	store->conns = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, rm_sq_conn_row_free);
	store->limits = g_array_new(FALSE, FALSE, sizeof(struct rm_limit_row));
	g_array_set_clear_func(store->limits, rm_sq_limit_row_clear);
	store->points = g_array_new(FALSE, FALSE, sizeof(struct rm_point_row));
	g_array_set_clear_func(store->points, rm_sq_point_row_clear);
	store->lost = g_array_new(FALSE, FALSE, sizeof(int64_t));
	store->retire = g_array_new(FALSE, FALSE, sizeof(struct retire_only));
	store->ranges = g_array_new(FALSE, FALSE, sizeof(struct rm_retired_row));
	if (schema(store, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		rm_store_close(store);
		return NULL;
	}
	store->raw_rows = (uint64_t)rm_sq_scalar(store->db, "SELECT count(*) FROM raw_records");
	store->next_session = rm_sq_scalar(store->db, "SELECT coalesce(max(id), 0) + 1 FROM sessions");
	store->next_epoch = rm_sq_scalar(store->db, "SELECT max(coalesce((SELECT max(id) FROM epoch_rows), 0),"
						    " coalesce((SELECT max(last_id) FROM epoch_archive), 0)) + 1");
	sqlite3_wal_hook(store->db, rm_sq_wal_hook, store);
	store->last_flush_ms = rm_clock_mono_ms();
	return store;
}

uint64_t rm_store_raw_bytes(struct rm_store *store)
{
	int64_t n = rm_sq_scalar(
		store->db, "SELECT coalesce(sum(length(record) + coalesce(length(template), 0)), 0) FROM raw_records");

	return n > 0 ? (uint64_t)n : 0;
}
