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
static void written(struct rm_store *st)
{
	GHashTableIter it;
	gpointer v;

	for (guint i = 0; i < st->epochs->len; i++) {
		struct rm_epoch *e = g_ptr_array_index(st->epochs, i);

		if (!e) /* packed, in a chunk */
			continue;
		if (e->sink_keeps) {
			rm_rules_epoch_free(e);
			rm_budget_give(st->budget, RM_BUDGET_EPOCH_BYTES); /* the charge the rules passed on */
		} else {
			/* packed by this transaction (rm_sq_attempt_pack), or written as a row */
			e->store_row = rm_sq_attempt_packed(st, e) ? ROW_PACKED : ROW_TABLE;
			e->store_slot = 0;
		}
	}
	g_ptr_array_set_size(st->epochs, 0);
	st->epochs_seen = 0;
	st->kept = 0;
	rm_sq_chunks_written(st);
	g_hash_table_iter_init(&it, st->sessions);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct rm_sess_row *s = v;

		s->dirty = 0;
		if (s->ended_ms)
			g_hash_table_iter_remove(&it);
	}
	st->sessions_dirty = 0;
	st->raw_rows += st->raw->len;
	g_ptr_array_set_size(st->raw, 0); /* frees the rows */
	rm_budget_give(st->budget, st->raw_bytes);
	st->raw_bytes = 0;
	g_hash_table_remove_all(st->drops);
	g_hash_table_remove_all(st->conns);
	g_array_set_size(st->limits, 0); /* frees the names */
	g_array_set_size(st->points, 0);
	g_array_set_size(st->lost, 0);
	g_array_set_size(st->retire, 0);
	g_array_set_size(st->ranges, 0);
	st->stop_run = 0;
}

/* Write everything that waits in one transaction. 0, or -1 with the transaction rolled back and everything kept. */
static int flush(struct rm_store *st)
{
	GHashTableIter it;
	gpointer v;
	uint64_t now = rm_clock_wall_ms();

	st->last_flush_ms = rm_clock_mono_ms();
	if (!rm_sq_waiting(st))
		return 0;
	/* The queue's packable epochs into chunks of this attempt (first: fail undoes them), then the rows of the rest. */
	if (rm_sq_attempt_pack(st) < 0 || rm_sq_step_reset(st->q[Q_BEGIN]) < 0)
		goto fail;
	g_hash_table_iter_init(&it, st->sessions);
	while (st->sessions_dirty && g_hash_table_iter_next(&it, NULL, &v))
		if (((struct rm_sess_row *)v)->dirty && rm_sq_write_session(st, v) < 0)
			goto fail;
	for (guint i = 0; i < st->epochs->len; i++) {
		struct rm_epoch *e = g_ptr_array_index(st->epochs, i);

		if (e && !rm_sq_attempt_packed(st, e) && rm_sq_write_epoch(st, e) < 0)
			goto fail;
	}
	if (rm_sq_archive_write(st) < 0)
		goto fail;
	for (guint i = 0; i < st->retire->len; i++) {
		const struct retire_only *r = &g_array_index(st->retire, struct retire_only, i);

		sqlite3_bind_int64(st->q[Q_EPOCH_RETIRE], 1, r->id);
		sqlite3_bind_int64(st->q[Q_EPOCH_RETIRE], 2, (int64_t)r->retired_ms);
		if (rm_sq_step_reset(st->q[Q_EPOCH_RETIRE]) < 0)
			goto fail;
	}
	for (guint i = 0; i < st->ranges->len; i++) {
		const struct retire_range *r = &g_array_index(st->ranges, struct retire_range, i);

		sqlite3_bind_int64(st->q[Q_RETIRED], 1, r->first);
		sqlite3_bind_int64(st->q[Q_RETIRED], 2, r->last);
		sqlite3_bind_int64(st->q[Q_RETIRED], 3, (int64_t)r->retired_ms);
		if (rm_sq_step_reset(st->q[Q_RETIRED]) < 0)
			goto fail;
	}
	for (guint i = 0; i < st->lost->len; i++)
		if (rm_sq_write_lost(st, g_array_index(st->lost, int64_t, i), now) < 0)
			goto fail;
	for (guint i = 0; i < st->raw->len; i++)
		if (rm_sq_write_raw(st, g_ptr_array_index(st->raw, i)) < 0)
			goto fail;
	g_hash_table_iter_init(&it, st->drops);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (rm_sq_write_drop(st, v) < 0)
			goto fail;
	g_hash_table_iter_init(&it, st->conns);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (rm_sq_write_conn(st, v) < 0)
			goto fail;
	for (guint i = 0; i < st->limits->len; i++)
		if (rm_sq_write_limit(st, &g_array_index(st->limits, struct limit_row, i)) < 0)
			goto fail;
	for (guint i = 0; i < st->points->len; i++)
		if (rm_sq_write_point(st, &g_array_index(st->points, struct point_row, i)) < 0)
			goto fail;
	if (st->stop_run) {
		sqlite3_bind_int64(st->q[Q_RUN_STOP], 1, st->stop_run);
		sqlite3_bind_int64(st->q[Q_RUN_STOP], 2, (int64_t)st->stop_ms);
		if (rm_sq_step_reset(st->q[Q_RUN_STOP]) < 0)
			goto fail;
	}
	if (rm_sq_step_reset(st->q[Q_COMMIT]) < 0)
		goto fail;
	written(st);
	return 0;
fail: /* the chunks packed before stay for the next attempt, the queue too */
	rm_sq_attempt_undo(st);
	snprintf(st->down_why, sizeof(st->down_why), "%s", sqlite3_errmsg(st->db));
	if (!sqlite3_get_autocommit(st->db))
		rm_sq_step_reset(st->q[Q_ROLLBACK]);
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
static void checkpoint(struct rm_store *st, int idle)
{
	int limit = idle ? RM_STORE_WAL_IDLE_PAGES : RM_STORE_WAL_CHECKPOINT_PAGES;

	if (st->wal_pages < limit)
		return;
	if (sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) == SQLITE_OK)
		st->wal_pages = 0;
}

/* Try a transaction now; the health bookkeeping and its log lines. */
void rm_sq_attempt(struct rm_store *st)
{
	uint64_t t;
	unsigned n_epochs = st->epochs->len, n_raw = st->raw->len;

	if (flush(st) == 0) {
		st->transactions++;
		rm_sq_log_drops(st);
		if (st->down) {
			rm_log(RM_LOG_NOTICE,
			       "database writable again after %" PRIu64 " ms; wrote %u epoch rows and %u raw records "
			       "that waited; %" PRIu64 " records or outcomes could not be kept meanwhile (collector "
			       "resource drops of kind 'database')",
			       rm_clock_mono_ms() - st->down_since_ms, n_epochs, n_raw, st->down_drops);
			st->down = 0;
		}
		checkpoint(st, 0);
		return;
	}
	t = rm_clock_mono_ms();
	if (!st->down) {
		st->down = 1;
		st->down_since_ms = st->last_remind_ms = t;
		st->backoff_ms = RM_STORE_RETRY_MIN_MS;
		st->down_drops = 0;
		rm_log(RM_LOG_ERR,
		       "database unavailable (%s): %u epoch rows, %u sessions and %u raw records wait in memory; "
		       "retrying every %u..%u ms",
		       st->down_why, n_epochs, g_hash_table_size(st->sessions), n_raw, RM_STORE_RETRY_MIN_MS,
		       RM_STORE_RETRY_MAX_MS);
	} else {
		st->backoff_ms =
			st->backoff_ms * 2 > RM_STORE_RETRY_MAX_MS ? RM_STORE_RETRY_MAX_MS : st->backoff_ms * 2;
		if (t - st->last_remind_ms >= RM_STORE_REMIND_MS) {
			st->last_remind_ms = t;
			rm_log(RM_LOG_WARNING,
			       "database still unavailable after %" PRIu64 " s (%s): %u epoch rows and %u raw records "
			       "wait; %" PRIu64 " records or outcomes could not be kept so far",
			       (t - st->down_since_ms) / 1000, st->down_why, n_epochs, n_raw, st->down_drops);
		}
	}
	st->retry_at_ms = t + st->backoff_ms;
}

int rm_store_begin(struct rm_store *st)
{
	return 0;
}

int rm_store_commit(struct rm_store *st)
{
	uint64_t t = rm_clock_mono_ms();

	if (st->readonly)
		return 0;
	if (st->drops_unlogged && t - st->drops_logged_ms >= RM_STORE_DROP_LOG_MS)
		rm_sq_log_drops(st); /* due, also without a further drop */
	if (st->down) {
		if (t >= st->retry_at_ms)
			rm_sq_attempt(st);
		return 0;
	}
	if (!rm_sq_waiting(st)) {
		if (t - st->last_flush_ms >= RM_STORE_FLUSH_MS)
			checkpoint(st, 1);
		return 0;
	}
	if (t - st->last_flush_ms >= RM_STORE_FLUSH_MS || st->kept + st->packed_retired >= RM_STORE_FLUSH_EPOCHS ||
	    st->raw_bytes >= RM_STORE_FLUSH_RAW_BYTES)
		rm_sq_attempt(st);
	return 0;
}

int rm_store_flush(struct rm_store *st)
{
	if (!st->readonly && (!st->down || rm_clock_mono_ms() >= st->retry_at_ms))
		rm_sq_attempt(st);
	return 0;
}

uint64_t rm_store_transactions(const struct rm_store *st)
{
	return st->transactions;
}

int rm_store_make_room(struct rm_store *st)
{
	if (st->readonly || st->down || (!st->kept && !st->packed_retired && !st->raw->len))
		return -1;
	rm_sq_attempt(st);
	return st->down ? -1 : 0;
}
