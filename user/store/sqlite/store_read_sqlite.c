// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store_read_sqlite.c - report's reads (store_read.h) from the collector's
 * SQLite database (store.h), opened read-only without the collector's lock.
 */
#include <errno.h>
#include <glib.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store_impl.h"
#include "store/store_read.h"

struct sqlite_reader {
	struct rm_store_reader base;
	struct rm_store *store;
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
	r->store = rm_store_open(spec->path, 1, err, errlen);
	if (!r->store) {
		free(r);
		return NULL;
	}
	/* A file the collector never initialised (empty, or another database): how to make it a store. */
	if (sqlite3_prepare_v2(rm_store_db(r->store),
			       "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'", -1, &q,
			       NULL) != SQLITE_OK ||
	    sqlite3_step(q) != SQLITE_ROW) {
		snprintf(err, errlen,
			 "%s: not a rocemeter store (no table runs): run 'rocemeter collect --store-init --store "
			 "sqlite:%s'",
			 spec->path, spec->path);
		sqlite3_finalize(q);
		rm_store_close(r->store);
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

	rm_store_close(r->store);
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

/* A Transport Session's exporter, from its sessions row: peer, peer_subject, peer_name (NULL: not stored). */
struct exporter {
	char *peer, *subject, *name;
};

static void exporter_free(gpointer p)
{
	struct exporter *x = p;

	free(x->peer);
	free(x->subject);
	free(x->name);
	free(x);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/*
 * The exporters of the stored sessions by session ID (gint64 keys), read
 * once per report instead of a join per epoch; a store older than the
 * column peer_name has none. NULL on ENOMEM or without a sessions table.
 */
static GHashTable *load_exporters(sqlite3 *db)
{
	GHashTable *h;
	sqlite3_stmt *q;
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT id, peer, peer_subject, %s FROM sessions",
		 has_column(db, "sessions", "peer_name") ? "peer_name" : "NULL");
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return NULL;
	h = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, exporter_free);
	while (sqlite3_step(q) == SQLITE_ROW) {
		gint64 *k = g_new(gint64, 1);
		struct exporter *x = calloc(1, sizeof(*x));

		if (!x) {
			g_free(k);
			break;
		}
		*k = sqlite3_column_int64(q, 0);
		x->peer = dup_or_null(TXT(q, 1));
		x->subject = dup_or_null(TXT(q, 2));
		x->name = dup_or_null(TXT(q, 3));
		g_hash_table_replace(h, k, x);
	}
	sqlite3_finalize(q);
	return h;
}

/* report's callback and filter, and the exporters to name (load_exporters(), may be NULL). */
struct emit {
	const struct rm_read_filter *f;
	GHashTable *exporters;
	int (*fn)(void *arg, const struct rm_epoch_read *e);
	void *arg;
};

static int passes(const struct rm_read_filter *f, const struct rm_epoch_read *e);

/* An epoch to report's callback if it passes the filter, with its session's exporter: fn's result, or 0. */
static int emit(const struct emit *m, struct rm_epoch_read *e)
{
	if (!passes(m->f, e))
		return 0;
	if (m->exporters && !e->null[RM_ER_SESSION]) {
		gint64 k = (gint64)e->u[RM_ER_SESSION];
		const struct exporter *x = g_hash_table_lookup(m->exporters, &k);

		if (x) {
			e->peer = x->peer;
			e->peer_subject = x->subject;
			e->peer_name = x->name;
		}
	}
	return m->fn(m->arg, e);
}

/* report's filter (store_read.h) on an epoch's columns, as SQL compares them (integers as signed 64 bits). */
static int passes(const struct rm_read_filter *f, const struct rm_epoch_read *e)
{
	if (f->outcome && (e->null[RM_ER_OUTCOME] || strcmp(e->t[RM_ER_OUTCOME], f->outcome)))
		return 0;
	if (f->has_since) { /* coalesce(flow_end_ms, last_seen_ms) >= since */
		int c = e->null[RM_ER_END] ? RM_ER_LAST_SEEN : RM_ER_END;

		if (e->null[c] || (int64_t)e->u[c] < (int64_t)f->since)
			return 0;
	}
	if (f->has_until) { /* coalesce(flow_start_ms, first_seen_ms) <= until */
		int c = e->null[RM_ER_START] ? RM_ER_FIRST_SEEN : RM_ER_START;

		if (e->null[c] || (int64_t)e->u[c] > (int64_t)f->until)
			return 0;
	}
	if (f->src && (e->null[RM_ER_SRC] || e->null[RM_ER_DST] || e->null[RM_ER_QP] ||
		       strcmp(e->t[RM_ER_SRC], f->src) || strcmp(e->t[RM_ER_DST], f->dst) || e->u[RM_ER_QP] != f->qp ||
		       (f->pkey >= 0 && (e->null[RM_ER_PKEY] || (int64_t)e->u[RM_ER_PKEY] != f->pkey))))
		return 0;
	return 1;
}

/* The columns report reads, from a statement's columns first.. (SELECT of rm_epoch_read_names). */
static void from_stmt(sqlite3_stmt *q, int first, struct rm_epoch_read *e)
{
	for (int c = 0; c < RM_ER__N; c++) {
		e->null[c] = sqlite3_column_type(q, first + c) == SQLITE_NULL;
		e->t[c] = NULL;
		e->u[c] = 0;
		if (rm_epoch_read_kinds[c] == 'T')
			e->t[c] = TXT(q, first + c);
		else
			e->u[c] = I64(q, first + c);
	}
}

/* "SELECT [id, ]<the columns report reads> FROM " from */
static void select_sql(char *sql, size_t len, int with_id, const char *from)
{
	size_t n = (size_t)snprintf(sql, len, "SELECT%s", with_id ? " id," : "");

	for (int c = 0; c < RM_ER__N; c++)
		n += (size_t)snprintf(sql + n, len - n, "%s %s", c ? "," : "", rm_epoch_read_names[c]);
	snprintf(sql + n, len - n, " FROM %s", from);
}

/* Where each column report reads is among the EC_* columns of a packed epoch. */
static const int read_ec[RM_ER__N] = {
#define RM_ER_EC(name, column, kind) EC_##name,
	RM_EPOCH_READ_COLUMNS(RM_ER_EC)
#undef RM_ER_EC
};

/* The packed epochs in ID order: epoch_archive's chunks read back (archive.c), their retirement times. */
struct packed {
	sqlite3_stmt *chunks;
	struct rm_sq_unpack u;
	int in_chunk;
	int64_t chunk, first, last, prev; /* the chunk's row ID and IDs; the last epoch's ID */
	struct rm_retired_row *ranges;    /* epoch_retired by first_id */
	size_t n_ranges, at;
	const struct val *v; /* the current epoch (u.cur) ... */
	struct val retired;  /* ... and its retirement time */
	int64_t id;
	sqlite3 *db;
	sqlite3_blob *blob; /* the chunk's data, read into one buffer for all chunks (no copy of SQLite's) */
	char *data;
	size_t data_cap;
};

/* The data of chunk p->chunk into p->data: its length, or -1 (SQLite error), -ENOMEM. */
static long chunk_data(struct packed *p)
{
	int n;

	if (sqlite3_column_int(p->chunks, 4)) { /* data IS NULL: no epoch */
		if (!p->data && !(p->data = malloc(p->data_cap = 64)))
			return -ENOMEM;
		memcpy(p->data, "[]", 2);
		return 2;
	}
	if ((p->blob ? sqlite3_blob_reopen(p->blob, p->chunk)
		     : sqlite3_blob_open(p->db, "main", "epoch_archive", "data", p->chunk, 0, &p->blob)) != SQLITE_OK)
		return -1;
	n = sqlite3_blob_bytes(p->blob);
	if ((size_t)n + 1 > p->data_cap) {
		char *d = realloc(p->data, (size_t)n + 1);

		if (!d)
			return -ENOMEM;
		p->data = d;
		p->data_cap = (size_t)n + 1;
	}
	return sqlite3_blob_read(p->blob, p->data, n, 0) == SQLITE_OK ? n : -1;
}

/*
 * The next packed epoch into p->v: 1, 0 at the end, negative with err
 * (a chunk that is not the packed form, IDs out of their chunk's order).
 * retired_ms NULL as packed is taken from epoch_retired as the view does:
 * the range with the largest first_id at most the ID, if it reaches it.
 */
static int packed_next(struct packed *p, char *err, size_t errlen)
{
	long len;
	int rc;

	for (;;) {
		if (!p->in_chunk) {
			rc = sqlite3_step(p->chunks);
			if (rc == SQLITE_DONE)
				return 0;
			if (rc != SQLITE_ROW)
				return -EIO;
			p->chunk = sqlite3_column_int64(p->chunks, 0);
			p->first = sqlite3_column_int64(p->chunks, 1);
			p->last = sqlite3_column_int64(p->chunks, 2);
			len = chunk_data(p);
			if (len < 0)
				return len == -ENOMEM ? -ENOMEM : -EIO;
			rc = rm_sq_unpack_start(&p->u, TXT(p->chunks, 3), (size_t)sqlite3_column_bytes(p->chunks, 3),
						p->data, (size_t)len);
			if (rc == -ENOMEM)
				return rc;
			if (rc < 0)
				goto bad;
			p->in_chunk = 1;
		}
		rc = rm_sq_unpack_next(&p->u);
		p->v = p->u.cur;
		if (rc < 0)
			goto bad;
		if (rc == 0) {
			p->in_chunk = 0;
			continue;
		}
		if (p->v[EC_ID].t != V_INT || p->v[EC_ID].i <= p->prev || p->v[EC_ID].i < p->first ||
		    p->v[EC_ID].i > p->last)
			goto bad;
		p->id = p->prev = p->v[EC_ID].i;
		p->retired = p->v[EC_RETIRED];
		if (p->retired.t == V_NULL) {
			while (p->at + 1 < p->n_ranges && p->ranges[p->at + 1].first <= p->id)
				p->at++;
			if (p->at < p->n_ranges && p->ranges[p->at].first <= p->id && p->ranges[p->at].last >= p->id)
				p->retired = (struct val){ V_INT, (int64_t)p->ranges[p->at].retired_ms, NULL };
		}
		return 1;
	}
bad:
	snprintf(err, errlen,
		 "epoch_archive row %lld: not the packed form of epochs %lld..%lld in order (SELECT * FROM epochs "
		 "reads it with SQLite's JSON functions)",
		 (long long)p->chunk, (long long)p->first, (long long)p->last);
	return -EIO;
}

/* A packed epoch as report reads it; -EIO for a column of the wrong kind. */
static int from_packed(const struct packed *p, struct rm_epoch_read *e)
{
	for (int c = 0; c < RM_ER__N; c++) {
		const struct val *x = read_ec[c] == EC_RETIRED ? &p->retired : &p->v[read_ec[c]];

		e->null[c] = x->t == V_NULL;
		e->t[c] = NULL;
		e->u[c] = 0;
		if (x->t == V_NULL)
			continue;
		if ((x->t == V_TEXT) != (rm_epoch_read_kinds[c] == 'T'))
			return -EIO;
		if (x->t == V_TEXT)
			e->t[c] = x->s;
		else
			e->u[c] = (uint64_t)x->i;
	}
	return 0;
}

static int load_ranges(sqlite3 *db, struct packed *p)
{
	sqlite3_stmt *q;
	size_t cap = 0;

	if (sqlite3_prepare_v2(db, "SELECT first_id, last_id, retired_ms FROM epoch_retired ORDER BY first_id", -1, &q,
			       NULL) != SQLITE_OK)
		return -EIO;
	while (sqlite3_step(q) == SQLITE_ROW) {
		if (p->n_ranges == cap) {
			struct rm_retired_row *r = realloc(p->ranges, (cap = cap ? 2 * cap : 256) * sizeof(*r));

			if (!r) {
				sqlite3_finalize(q);
				return -ENOMEM;
			}
			p->ranges = r;
		}
		p->ranges[p->n_ranges++] =
			(struct rm_retired_row){ sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
						 (uint64_t)sqlite3_column_int64(q, 2) };
	}
	return sqlite3_finalize(q) == SQLITE_OK ? 0 : -EIO;
}

/*
 * The view epochs (schema.c) read in C: the rows of epoch_rows and the
 * packed epochs merged by ID; a packed copy written before its retirement
 * gives way to a row of the same ID. The same rows, values and order as
 * "SELECT ... FROM epochs ORDER BY id" (tests/unit/test_store_read_sqlite.c).
 */
static int read_merged(sqlite3 *db, const struct emit *m, int *no_tables, char *err, size_t errlen)
{
	struct packed p = { .prev = INT64_MIN, .db = db };
	sqlite3_stmt *rows = NULL;
	char sql[2048];
	int rc, have_row, have_packed, stop = 0;

	select_sql(sql, sizeof(sql), 1, "epoch_rows ORDER BY id");
	/* a table or column of this layout missing (a database no collect of this version opened): *no_tables */
	if (sqlite3_prepare_v2(db, sql, -1, &rows, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT id, first_id, last_id, base, data IS NULL FROM epoch_archive ORDER BY id",
			       -1, &p.chunks, NULL) != SQLITE_OK) {
		*no_tables = 1;
		rc = 0;
		goto out;
	}
	rc = load_ranges(db, &p);
	if (rc == -EIO)
		*no_tables = 1;
	if (rc)
		goto out;
	have_row = sqlite3_step(rows);
	have_packed = packed_next(&p, err, errlen);
	while (!stop && have_packed >= 0 && (have_row == SQLITE_ROW || have_packed == 1)) {
		struct rm_epoch_read e = { 0 };
		int64_t rid = have_row == SQLITE_ROW ? sqlite3_column_int64(rows, 0) : INT64_MAX;

		if (have_packed == 1 && (have_row != SQLITE_ROW || p.id < rid)) {
			if (from_packed(&p, &e) < 0) {
				have_packed = -EIO;
				snprintf(err, errlen, "epoch_archive row %lld: epoch %lld: a column of the wrong kind",
					 (long long)p.chunk, (long long)p.id);
				break;
			}
			stop = emit(m, &e);
			have_packed = packed_next(&p, err, errlen);
			continue;
		}
		if (have_packed == 1 && p.id == rid && p.v[EC_RETIRED].t == V_NULL) /* written again since */
			have_packed = packed_next(&p, err, errlen);
		from_stmt(rows, 1, &e);
		stop = emit(m, &e);
		have_row = sqlite3_step(rows);
	}
	if (!stop && have_packed < 0)
		rc = have_packed;
	else if (!stop && have_row != SQLITE_DONE && have_row != SQLITE_ROW)
		rc = -EIO;
out:
	if (rc == -EIO && !*err)
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
	else if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	sqlite3_finalize(rows);
	sqlite3_finalize(p.chunks);
	sqlite3_blob_close(p.blob);
	free(p.data);
	free(p.u.buf);
	free(p.ranges);
	return stop ? stop : rc;
}

/* The view, for a database whose chunks overlap (not written by this version): the same rows, slower. */
static int read_view(sqlite3 *db, const struct emit *m, char *err, size_t errlen)
{
	char sql[2048];
	sqlite3_stmt *q;
	int rc, stop = 0;

	select_sql(sql, sizeof(sql), 0, "epochs ORDER BY id");
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		return -EIO;
	}
	while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct rm_epoch_read e = { 0 };

		from_stmt(q, 0, &e);
		stop = emit(m, &e);
	}
	if (!stop && rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		sqlite3_finalize(q);
		return -EIO;
	}
	sqlite3_finalize(q);
	return stop;
}

static int sq_epochs(struct rm_store_reader *base, const struct rm_read_filter *f,
		     int (*fn)(void *arg, const struct rm_epoch_read *e), void *arg, char *err, size_t errlen)
{
	struct sqlite_reader *r = (struct sqlite_reader *)base;
	sqlite3 *db = rm_store_db(r->store);
	struct emit m = { .f = f, .exporters = load_exporters(db), .fn = fn, .arg = arg };
	int64_t overlaps;
	int rc;

	err[0] = '\0';
	/*
	 * Chunks in ID order, each after the one before (as rm_sq_archive_add
	 * writes them): merged in C; else, or without this layout's tables, the view.
	 */
	overlaps =
		rm_sq_scalar(rm_store_db(r->store), "SELECT count(*) FROM (SELECT first_id, last_id, lag(last_id) OVER"
						    " (ORDER BY id) AS prev FROM epoch_archive)"
						    " WHERE last_id < first_id OR prev >= first_id");
	if (overlaps == 0) {
		int no_tables = 0;

		rc = read_merged(db, &m, &no_tables, err, errlen);
		if (!no_tables)
			goto out;
		err[0] = '\0';
	}
	rc = read_view(db, &m, err, errlen);
out:
	if (m.exporters)
		g_hash_table_destroy(m.exporters);
	return rc;
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

/* "SELECT <t's SQLite columns>[, extra] FROM <t>[ rest]" into sql. */
static void select_table(char *sql, size_t len, const struct rm_stored_table *t, const char *extra, const char *rest)
{
	size_t n = (size_t)snprintf(sql, len, "SELECT");
	const char *sep = " ";

	for (unsigned c = 0; c < t->n_cols; c++) {
		if (!t->cols[c].sqlite)
			continue;
		n += (size_t)snprintf(sql + n, len - n, "%s%s", sep, t->cols[c].name);
		sep = ", ";
	}
	snprintf(sql + n, len - n, "%s%s FROM %s%s", extra ? ", " : "", extra ? extra : "", t->sqlite_name,
		 rest ? rest : "");
}

/* A row of t from q's columns in select_table's order (texts valid until q is stepped again). */
static void row_from_stmt(sqlite3_stmt *q, const struct rm_stored_table *t, void *row)
{
	int i = 0;

	for (unsigned c = 0; c < t->n_cols; c++) {
		if (!t->cols[c].sqlite)
			continue;
		if (t->cols[c].kind == RM_COL_TEXT)
			rm_col_set(&t->cols[c], row, 0, TXT(q, i));
		else
			rm_col_set(&t->cols[c], row, I64(q, i), NULL);
		i++;
	}
}

static int sq_limits(struct rm_store_reader *base, const char *collector_id,
		     int (*fn)(void *arg, const struct rm_limits_read *l), void *arg, char *err, size_t errlen)
{
	struct sqlite_reader *r = (struct sqlite_reader *)base;
	sqlite3 *db = rm_store_db(r->store);
	struct rm_limits_read l = { 0 };
	struct rm_run_row run = { 0 };
	char sql[1024];
	sqlite3_stmt *q;
	int rc;

	select_table(sql, sizeof(sql), &rm_stored_runs, "(SELECT count(*) FROM raw_records)",
		     " ORDER BY id DESC LIMIT 1");
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		return -EIO;
	}
	if (sqlite3_step(q) != SQLITE_ROW) {
		snprintf(err, errlen, "no collector run recorded");
		sqlite3_finalize(q);
		return -ENOENT;
	}
	row_from_stmt(q, &rm_stored_runs, &run);
	rc = rm_limits_read_run(&l, &run);
	l.raw_records_stored = I64(q, sqlite3_column_count(q) - 1);
	sqlite3_finalize(q);
	if (!rc)
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

/*
 * observation_points; a database of an older layout has no such table, or
 * one without the exporter's identity (until its first read-write open
 * drops it): no names.
 */
static int sq_points(struct rm_store_reader *base, rm_store_point_fn *fn, void *arg, char *err, size_t errlen)
{
	struct sqlite_reader *r = (struct sqlite_reader *)base;
	char sql[512];
	sqlite3_stmt *q;

	select_table(sql, sizeof(sql), &rm_stored_points, NULL, NULL);
	if (sqlite3_prepare_v2(rm_store_db(r->store), sql, -1, &q, NULL) != SQLITE_OK)
		return 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		struct rm_point_row p = { 0 };

		row_from_stmt(q, &rm_stored_points, &p);
		fn(arg, NULL, p.peer_name ? p.peer_name : "", p.peer_subject ? p.peer_subject : "", p.domain, p.id,
		   p.name ? p.name : "");
	}
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
