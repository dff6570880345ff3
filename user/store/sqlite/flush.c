// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * flush.c - the SQLite store's transactions: when one is due, writing everything
 * that waits in one, retries with backoff while the database is unavailable,
 * WAL checkpoints.
 */
#include <glib.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <time.h>

#include "rules/budget.h"
#include "common/log.h"
#include "store_impl.h"

/* What waits, once its transaction is committed. */
static void written(struct rm_store *store)
{
	GHashTableIter it;
	gpointer v;

	for (guint i = 0; i < store->epochs->len; i++) {
		struct rm_epoch *e = g_ptr_array_index(store->epochs, i);

		if (!e) /* packed, in a chunk */
			continue;
		if (e->sink_keeps) {
			rm_rules_epoch_free(e);
			rm_budget_give(store->budget, RM_BUDGET_EPOCH_BYTES); /* the charge the rules passed on */
		} else {
			/* packed by this transaction (rm_sq_attempt_pack), or written as a row */
			e->store_row = rm_sq_attempt_packed(store, e) ? ROW_PACKED : ROW_TABLE;
			e->store_slot = 0;
		}
	}
	g_ptr_array_set_size(store->epochs, 0);
	store->epochs_seen = 0;
	store->kept = 0;
	rm_sq_chunks_written(store);
	g_hash_table_iter_init(&it, store->sessions);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct rm_sess_row *s = v;

		s->dirty = 0;
		if (s->ended_ms)
			g_hash_table_iter_remove(&it);
	}
	store->sessions_dirty = 0;
	store->raw_rows += store->raw->len;
	g_ptr_array_set_size(store->raw, 0); /* frees the rows */
	rm_budget_give(store->budget, store->raw_bytes);
	store->raw_bytes = 0;
	g_hash_table_remove_all(store->drops);
	g_hash_table_remove_all(store->conns);
	g_array_set_size(store->limits, 0); /* frees the names */
	g_array_set_size(store->points, 0);
	g_array_set_size(store->lost, 0);
	g_array_set_size(store->retire, 0);
	g_array_set_size(store->ranges, 0);
	store->stop_run = 0;
}

/* Write everything that waits in one transaction. 0, or -1 with the transaction rolled back and everything kept. */
static int flush(struct rm_store *store)
{
	GHashTableIter it;
	gpointer v;
	uint64_t now = rm_clock_wall_ms();

	store->last_flush_ms = rm_clock_mono_ms();
	if (!rm_sq_waiting(store))
		return 0;
	/* The queue's packable epochs into chunks of this attempt (first: fail undoes them), then the rows of the rest. */
	if (rm_sq_attempt_pack(store) < 0 || rm_sq_step_reset(store->q[Q_BEGIN]) < 0)
		goto fail;
	g_hash_table_iter_init(&it, store->sessions);
	while (store->sessions_dirty && g_hash_table_iter_next(&it, NULL, &v))
		if (((struct rm_sess_row *)v)->dirty && rm_sq_write_row(store, Q_SESSION, v) < 0)
			goto fail;
	for (guint i = 0; i < store->epochs->len; i++) {
		struct rm_epoch *e = g_ptr_array_index(store->epochs, i);

		if (e && !rm_sq_attempt_packed(store, e) && rm_sq_write_epoch(store, e) < 0)
			goto fail;
	}
	if (rm_sq_archive_write(store) < 0)
		goto fail;
	for (guint i = 0; i < store->retire->len; i++) {
		const struct retire_only *r = &g_array_index(store->retire, struct retire_only, i);

		sqlite3_bind_int64(store->q[Q_EPOCH_RETIRE], 1, r->id);
		sqlite3_bind_int64(store->q[Q_EPOCH_RETIRE], 2, (int64_t)r->retired_ms);
		if (rm_sq_step_reset(store->q[Q_EPOCH_RETIRE]) < 0)
			goto fail;
	}
	for (guint i = 0; i < store->ranges->len; i++) {
		if (rm_sq_write_row(store, Q_RETIRED, &g_array_index(store->ranges, struct rm_retired_row, i)) < 0)
			goto fail;
	}
	for (guint i = 0; i < store->lost->len; i++)
		if (rm_sq_write_lost(store, g_array_index(store->lost, int64_t, i), now) < 0)
			goto fail;
	for (guint i = 0; i < store->raw->len; i++)
		if (rm_sq_write_row(store, Q_RAW, &((struct raw_row *)g_ptr_array_index(store->raw, i))->row) < 0)
			goto fail;
	g_hash_table_iter_init(&it, store->drops);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (rm_sq_write_row(store, Q_DROP, v) < 0)
			goto fail;
	g_hash_table_iter_init(&it, store->conns);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (rm_sq_write_row(store, Q_CONNECTIONS, v) < 0)
			goto fail;
	for (guint i = 0; i < store->limits->len; i++)
		if (rm_sq_write_row(store, Q_RUN_LIMIT, &g_array_index(store->limits, struct rm_limit_row, i)) < 0)
			goto fail;
	for (guint i = 0; i < store->points->len; i++)
		if (rm_sq_write_row(store, Q_OBS_POINT, &g_array_index(store->points, struct rm_point_row, i)) < 0)
			goto fail;
	if (store->stop_run) {
		struct rm_run_row run = { .id = store->stop_run, .stopped_ms = store->stop_ms };

		if (rm_sq_write_row(store, Q_RUN_STOP, &run) < 0)
			goto fail;
	}
	if (rm_sq_step_reset(store->q[Q_COMMIT]) < 0)
		goto fail;
	written(store);
	return 0;
fail: /* the chunks packed before stay for the next attempt, the queue too */
	rm_sq_attempt_undo(store);
	snprintf(store->down_why, sizeof(store->down_why), "%s", sqlite3_errmsg(store->db));
	if (!sqlite3_get_autocommit(store->db))
		rm_sq_step_reset(store->q[Q_ROLLBACK]);
	return -1;
}

int rm_sq_wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	((struct rm_store *)arg)->wal_pages = pages;
	return SQLITE_OK;
}

/*
 * Checkpoints are ours (wal_autocheckpoint = 0): the WAL is copied back into
 * the database when it reaches RM_STORE_WAL_CHECKPOINT_PAGES, or
 * RM_STORE_WAL_IDLE_PAGES when nothing waits, not in the middle of a burst.
 */
static void checkpoint(struct rm_store *store, int idle)
{
	int limit = idle ? RM_STORE_WAL_IDLE_PAGES : RM_STORE_WAL_CHECKPOINT_PAGES;

	if (store->wal_pages < limit)
		return;
	if (sqlite3_wal_checkpoint_v2(store->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) == SQLITE_OK)
		store->wal_pages = 0;
}

/* Try a transaction now; the health bookkeeping and its log lines. */
void rm_sq_attempt(struct rm_store *store)
{
	uint64_t t;
	unsigned n_epochs = store->epochs->len, n_raw = store->raw->len;

	if (flush(store) == 0) {
		store->transactions++;
		rm_sq_log_drops(store);
		if (store->down) {
			rm_log(RM_LOG_NOTICE,
			       "database writable again after %" PRIu64 " ms; wrote %u epoch rows and %u raw records "
			       "that waited; %" PRIu64 " records or outcomes could not be kept meanwhile (collector "
			       "resource drops of kind 'database')",
			       rm_clock_mono_ms() - store->down_since_ms, n_epochs, n_raw, store->down_drops);
			store->down = 0;
		}
		checkpoint(store, 0);
		return;
	}
	t = rm_clock_mono_ms();
	if (!store->down) {
		store->down = 1;
		store->down_since_ms = store->last_remind_ms = t;
		store->backoff_ms = RM_STORE_RETRY_MIN_MS;
		store->down_drops = 0;
		rm_log(RM_LOG_ERR,
		       "database unavailable (%s): %u epoch rows, %u sessions and %u raw records wait in memory; "
		       "retrying every %u..%u ms",
		       store->down_why, n_epochs, g_hash_table_size(store->sessions), n_raw, RM_STORE_RETRY_MIN_MS,
		       RM_STORE_RETRY_MAX_MS);
	} else {
		store->backoff_ms =
			store->backoff_ms * 2 > RM_STORE_RETRY_MAX_MS ? RM_STORE_RETRY_MAX_MS : store->backoff_ms * 2;
		if (t - store->last_remind_ms >= RM_STORE_REMIND_MS) {
			store->last_remind_ms = t;
			rm_log(RM_LOG_WARNING,
			       "database still unavailable after %" PRIu64 " s (%s): %u epoch rows and %u raw records "
			       "wait; %" PRIu64 " records or outcomes could not be kept so far",
			       (t - store->down_since_ms) / 1000, store->down_why, n_epochs, n_raw, store->down_drops);
		}
	}
	store->retry_at_ms = t + store->backoff_ms;
}

int rm_store_begin(struct rm_store *store)
{
	return 0;
}

int rm_store_commit(struct rm_store *store)
{
	uint64_t t = rm_clock_mono_ms();

	if (store->readonly)
		return 0;
	if (store->drops_unlogged && t - store->drops_logged_ms >= RM_STORE_DROP_LOG_MS)
		rm_sq_log_drops(store); /* due, also without a further drop */
	if (store->down) {
		if (t >= store->retry_at_ms)
			rm_sq_attempt(store);
		return 0;
	}
	if (!rm_sq_waiting(store)) {
		if (t - store->last_flush_ms >= RM_STORE_FLUSH_MS)
			checkpoint(store, 1);
		return 0;
	}
	if (t - store->last_flush_ms >= RM_STORE_FLUSH_MS ||
	    store->kept + store->packed_retired >= RM_STORE_FLUSH_EPOCHS ||
	    store->raw_bytes >= RM_STORE_FLUSH_RAW_BYTES)
		rm_sq_attempt(store);
	return 0;
}

int rm_store_flush(struct rm_store *store)
{
	if (!store->readonly && (!store->down || rm_clock_mono_ms() >= store->retry_at_ms))
		rm_sq_attempt(store);
	return 0;
}

uint64_t rm_store_transactions(const struct rm_store *store)
{
	return store->transactions;
}

int rm_store_make_room(struct rm_store *store)
{
	if (store->readonly || store->down || (!store->kept && !store->packed_retired && !store->raw->len))
		return -1;
	rm_sq_attempt(store);
	return store->down ? -1 : 0;
}
