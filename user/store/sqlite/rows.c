// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rows.c - the rows of one transaction: a row of any table of columns.h
 * bound to its statement by a loop over the table's columns, an epoch's
 * row inserted or updated, and which epochs are written packed (flush.c
 * calls them).
 */
#include <arpa/inet.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "store_impl.h"

/*
 * Column c of row to parameter i by its kind and NULL rule: an ID of 0 as
 * NULL (SQLite chooses the row's ID); texts of the row are bound without a
 * copy (they live until the statement is stepped), an address's text with
 * one.
 */
static void bind_col(sqlite3_stmt *q, int i, const struct rm_stored_table *t, const struct rm_column *c,
		     const void *row)
{
	char buf[INET6_ADDRSTRLEN];
	const char *s;

	if (c->null != RM_COL_NN && rm_col_is_null(t, c, row)) {
		sqlite3_bind_null(q, i);
		return;
	}
	switch (c->kind) {
	case RM_COL_U64:
	case RM_COL_U8: {
		uint64_t v = rm_col_u64(c, row);

		if (c->write == RM_COL_ID && !v)
			sqlite3_bind_null(q, i);
		else
			sqlite3_bind_int64(q, i, (int64_t)v);
		return;
	}
	case RM_COL_BYTES: {
		struct rm_col_bytes b = rm_col_bytes(c, row);

		if (!strncmp(c->sqlite, "TEXT", 4))
			sqlite3_bind_text(q, i, b.p, (int)b.len, SQLITE_STATIC);
		else
			sqlite3_bind_blob(q, i, b.p, (int)b.len, SQLITE_STATIC);
		return;
	}
	case RM_COL_ADDR:
		s = rm_col_string(t, c, row, buf, sizeof(buf));
		sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
		return;
	default:
		s = rm_col_string(t, c, row, buf, sizeof(buf));
		sqlite3_bind_text(q, i, s ? s : "", -1, SQLITE_STATIC);
	}
}

void rm_sq_bind_row(sqlite3_stmt *q, const struct rm_stored_table *t, const void *row, int update)
{
	int i = 0;

	for (unsigned c = 0; c < t->n_cols; c++) {
		const struct rm_column *col = &t->cols[c];

		if (!col->sqlite)
			continue;
		i++;
		if (update && (col->write == RM_COL_ONCE || col->write == RM_COL_ADD))
			continue; /* not in the update (rm_sq_update_sql) */
		bind_col(q, i, t, col, row);
	}
}

int rm_sq_write_row(struct rm_store *store, int q, const void *row)
{
	rm_sq_bind_row(store->q[q], rm_sq_query_table(q), row, q == Q_EPOCH_UPDATE || q == Q_RUN_STOP);
	return rm_sq_step_reset(store->q[q]);
}

/*
 * Written packed (epoch_archive) rather than as a row: an epoch retired or
 * settled at its first write. A settled epoch changes afterwards only by
 * the counts of ignored records (repeats, stale, ...) or by invalidation;
 * then it gets a row, which replaces its packed copy in the view. Packed
 * in ID order: one queued before epochs packed since (an open epoch
 * retired after later ones were packed at their retirement) gets a row.
 */
static int packs_above(const struct rm_epoch *e, int64_t max)
{
	return e->store_row == ROW_NONE && (e->retired_ms || e->state != RM_EPOCH_OPEN) && e->store_id > max;
}

int rm_sq_packs(const struct rm_store *store, const struct rm_epoch *e)
{
	return packs_above(e, store->packed_max);
}

int rm_sq_attempt_packed(const struct rm_store *store, const struct rm_epoch *e)
{
	return packs_above(e, store->attempt_packed_max);
}

/* A row in epoch_rows: inserted, or its columns written with every version updated. */
int rm_sq_write_epoch(struct rm_store *store, const struct rm_epoch *e)
{
	return rm_sq_write_row(store, e->store_row == ROW_TABLE ? Q_EPOCH_UPDATE : Q_EPOCH_INSERT, e);
}

int rm_sq_write_lost(struct rm_store *store, int64_t id, uint64_t now_ms)
{
	sqlite3_stmt *q = store->q[Q_EPOCH_LOST];

	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int64(q, 2, (int64_t)now_ms);
	sqlite3_bind_text(q, 3,
			  "collector resource drop: its outcome could not be stored while the database was "
			  "unavailable",
			  -1, SQLITE_STATIC);
	return rm_sq_step_reset(q);
}
