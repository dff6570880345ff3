// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store_read_sqlite.c - report's reads (store_read.h) from the collector's
 * SQLite database (store.h), opened read-only without the collector's lock.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store.h"
#include "store/store_read.h"

struct sqlite_reader {
	struct rm_store_reader base;
	struct rm_store *st;
	char path[256];
};

static struct rm_store_reader *sq_open(const struct rm_store_spec *spec, char *err, size_t errlen)
{
	struct sqlite_reader *r = calloc(1, sizeof(*r));
	sqlite3_stmt *q = NULL;
	struct stat sb = { 0 };

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* SQLite opens a directory and fails at the first read ("disk I/O error"): say what collect says. */
	if (stat(spec->path, &sb) || S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "%s: %s", spec->path, strerror(S_ISDIR(sb.st_mode) ? EISDIR : errno));
		free(r);
		return NULL;
	}
	r->st = rm_store_open(spec->path, 1, err, errlen);
	if (!r->st) {
		free(r);
		return NULL;
	}
	/* A file the collector never initialised (empty, or another database): how to make it a store. */
	if (sqlite3_prepare_v2(rm_store_db(r->st), "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'",
			       -1, &q, NULL) != SQLITE_OK ||
	    sqlite3_step(q) != SQLITE_ROW) {
		snprintf(err, errlen,
			 "%s: not a rocemeter store (no table runs): run 'rocemeter collect --store-init --store "
			 "sqlite:%s'",
			 spec->path, spec->path);
		sqlite3_finalize(q);
		rm_store_close(r->st);
		free(r);
		return NULL;
	}
	sqlite3_finalize(q);
	snprintf(r->path, sizeof(r->path), "%s", spec->path);
	return &r->base;
}

static void sq_close(struct rm_store_reader *base)
{
	struct sqlite_reader *r = (struct sqlite_reader *)base;

	rm_store_close(r->st);
	free(r);
}

static int sq_collectors(struct rm_store_reader *base, char ***ids, size_t *n, char *err, size_t errlen)
{
	*ids = NULL;
	*n = 0;
	return 0;
}

/* Every stored integer is unsigned (IPFIX unsigned64 kept in SQLite's signed int64 with the same bits). */
#define I64(q, c) ((uint64_t)sqlite3_column_int64(q, c))
#define TXT(q, c) ((const char *)sqlite3_column_text(q, c))

/* Whether table has the column (a store of an earlier layout, opened read-only, may not). */
static int has_column(sqlite3 *db, const char *table, const char *column)
{
	char sql[160];
	sqlite3_stmt *q;

	snprintf(sql, sizeof(sql), "SELECT %s FROM %s LIMIT 0", column, table);
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return 0;
	sqlite3_finalize(q);
	return 1;
}

static int sq_epochs(struct rm_store_reader *base, const struct rm_read_filter *f,
		     int (*fn)(void *arg, const struct rm_epoch_read *e), void *arg, char *err, size_t errlen)
{
	const char *const *cols = rm_epoch_read_names;
	const char *kinds = rm_epoch_read_kinds;
	struct sqlite_reader *r = (struct sqlite_reader *)base;
	sqlite3 *db = rm_store_db(r->st);
	char sql[2048];
	size_t n = 0;
	sqlite3_stmt *q;
	int rc, stop = 0;

	n += (size_t)snprintf(sql + n, sizeof(sql) - n, "SELECT");
	for (int c = 0; c < RM_ER__N; c++)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s e.%s", c ? "," : "", cols[c]);
	/* The exporter from its session's row; a store older than the column peer_name has none. */
	n += (size_t)snprintf(sql + n, sizeof(sql) - n, ", s.peer, s.peer_subject, %s",
			      has_column(db, "sessions", "peer_name") ? "s.peer_name" : "NULL");
	snprintf(sql + n, sizeof(sql) - n, "%s",
		 " FROM epochs e LEFT JOIN sessions s ON s.id = e.session_id"
		 " WHERE (?1 IS NULL OR outcome = ?1)"
		 " AND (?2 IS NULL OR coalesce(flow_end_ms, last_seen_ms) >= ?2)"
		 " AND (?3 IS NULL OR coalesce(flow_start_ms, first_seen_ms) <= ?3)"
		 " AND (?4 IS NULL OR (src = ?4 AND dst = ?5 AND dest_qp = ?6 AND (?7 IS NULL OR pkey = ?7)))"
		 " ORDER BY e.id");
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", r->path, sqlite3_errmsg(db));
		return -EIO;
	}
	if (f->outcome)
		sqlite3_bind_text(q, 1, f->outcome, -1, SQLITE_STATIC);
	/* Stored times are unsigned 64-bit in SQLite's signed integers: the same bits. */
	if (f->has_since)
		sqlite3_bind_int64(q, 2, (sqlite3_int64)f->since);
	if (f->has_until)
		sqlite3_bind_int64(q, 3, (sqlite3_int64)f->until);
	if (f->src) {
		sqlite3_bind_text(q, 4, f->src, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 5, f->dst, -1, SQLITE_STATIC);
		sqlite3_bind_int64(q, 6, (sqlite3_int64)f->qp);
		if (f->pkey >= 0)
			sqlite3_bind_int64(q, 7, f->pkey);
	}
	while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct rm_epoch_read e = { 0 };

		for (int c = 0; c < RM_ER__N; c++) {
			e.null[c] = sqlite3_column_type(q, c) == SQLITE_NULL;
			if (kinds[c] == 'T')
				e.t[c] = TXT(q, c);
			else
				e.u[c] = I64(q, c);
		}
		e.peer = TXT(q, RM_ER__N);
		e.peer_subject = TXT(q, RM_ER__N + 1);
		e.peer_name = TXT(q, RM_ER__N + 2);
		stop = fn(arg, &e);
	}
	if (!stop && rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		sqlite3_finalize(q);
		return -EIO;
	}
	sqlite3_finalize(q);
	return stop;
}

/* name/value rows of a query into v; a query that cannot be prepared (a table of an older layout) reads nothing. */
static int named_rows(sqlite3 *db, const char *sql, int64_t bind, struct rm_named_u64 **v, size_t *n)
{
	sqlite3_stmt *q;
	int rc = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return 0;
	if (bind >= 0)
		sqlite3_bind_int64(q, 1, bind);
	while (!rc && sqlite3_step(q) == SQLITE_ROW)
		rc = rm_named_u64_push(v, n, TXT(q, 0), I64(q, 1));
	sqlite3_finalize(q);
	return rc;
}

static int sq_limits(struct rm_store_reader *base, const char *collector_id,
		     int (*fn)(void *arg, const struct rm_limits_read *l), void *arg, char *err, size_t errlen)
{
	struct sqlite_reader *r = (struct sqlite_reader *)base;
	sqlite3 *db = rm_store_db(r->st);
	struct rm_limits_read l = { 0 };
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(db,
			       "SELECT id, started_ms, stopped_ms, listen, transport, max_sessions, max_epochs,"
			       " max_raw_records, inactivity_timeout_ms, pen, (SELECT count(*) FROM raw_records)"
			       " FROM runs ORDER BY id DESC LIMIT 1",
			       -1, &q, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		return -EIO;
	}
	if (sqlite3_step(q) != SQLITE_ROW) {
		snprintf(err, errlen, "no collector run recorded");
		sqlite3_finalize(q);
		return -ENOENT;
	}
	l.run_id = I64(q, 0);
	l.started_ms = I64(q, 1);
	l.listen = TXT(q, 3) ? strdup(TXT(q, 3)) : NULL;
	l.transport = TXT(q, 4) ? strdup(TXT(q, 4)) : NULL;
	l.max_sessions = I64(q, 5);
	l.max_epochs = I64(q, 6);
	l.max_raw_records = I64(q, 7);
	l.inactivity_timeout_ms = I64(q, 8);
	l.pen = I64(q, 9);
	l.raw_records_stored = I64(q, 10);
	sqlite3_finalize(q);
	rc = named_rows(db,
			"SELECT name, value FROM run_limits WHERE run_id = ?1 AND name NOT IN ('max_sessions',"
			" 'max_epochs', 'max_raw_records', 'inactivity_timeout_ms') ORDER BY rowid",
			(int64_t)l.run_id, &l.limits, &l.n_limits);
	if (!rc)
		rc = named_rows(db, "SELECT outcome, sum(count) FROM connections GROUP BY outcome ORDER BY outcome", -1,
				&l.refused, &l.n_refused);
	if (!rc) {
		if (sqlite3_prepare_v2(db, "SELECT kind, sum(count) FROM drops GROUP BY kind ORDER BY kind", -1, &q,
				       NULL) != SQLITE_OK) {
			snprintf(err, errlen, "%s", sqlite3_errmsg(db));
			rm_limits_read_free(&l);
			return -EIO;
		}
		while (!rc && sqlite3_step(q) == SQLITE_ROW)
			rc = rm_named_u64_push(&l.drops, &l.n_drops, TXT(q, 0), I64(q, 1));
		sqlite3_finalize(q);
	}
	if (rc) {
		snprintf(err, errlen, "out of memory");
		rm_limits_read_free(&l);
		return rc;
	}
	rc = fn(arg, &l);
	rm_limits_read_free(&l);
	return rc;
}

/* observation_points; a database of an older layout has no such table: no names. */
static int sq_points(struct rm_store_reader *base,
		     void (*fn)(void *arg, const char *collector_id, uint32_t domain, uint64_t id, const char *name),
		     void *arg, char *err, size_t errlen)
{
	struct sqlite_reader *r = (struct sqlite_reader *)base;
	sqlite3_stmt *q;

	if (sqlite3_prepare_v2(rm_store_db(r->st), "SELECT domain, observation_point_id, name FROM observation_points",
			       -1, &q, NULL) != SQLITE_OK)
		return 0;
	while (sqlite3_step(q) == SQLITE_ROW)
		fn(arg, NULL, (uint32_t)I64(q, 0), I64(q, 1), TXT(q, 2) ? TXT(q, 2) : "");
	sqlite3_finalize(q);
	return 0;
}

const struct rm_store_reader_ops rm_store_reader_sqlite = {
	.open = sq_open,
	.close = sq_close,
	.collectors = sq_collectors,
	.epochs = sq_epochs,
	.limits = sq_limits,
	.points = sq_points,
};
