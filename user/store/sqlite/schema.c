// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * schema.c - the SQLite store's tables and statements, made from the tables
 * of columns.h, the epochs view, and what an earlier layout needs at open
 * (its epochs converted, columns added since, its observation points'
 * table dropped).
 */
#include <errno.h>
#include <glib.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "store_impl.h"

/* Append the names of t's SQLite columns (without its ID: skip_id) joined by ", " (the first after lead). */
static void add_names(GString *g, const struct rm_stored_table *t, const char *lead, int skip_id)
{
	const char *sep = lead;

	for (unsigned i = 0; i < t->n_cols; i++) {
		if (!t->cols[i].sqlite || (skip_id && t->cols[i].write == RM_COL_ID))
			continue;
		g_string_append_printf(g, "%s%s", sep, t->cols[i].name);
		sep = ", ";
	}
}

/*
 * "CREATE TABLE IF NOT EXISTS NAME ( col DECL, ..., PRIMARY KEY(...));"
 * for every table SQLite keeps, in the order of columns.h's rm_stored_tables.
 */
char *rm_sq_schema_sql(void)
{
	GString *g = g_string_new(NULL);

	for (unsigned i = 0; i < rm_n_stored_tables; i++) {
		const struct rm_stored_table *t = rm_stored_tables[i];
		const char *sep = " ";

		if (!t->sqlite_name)
			continue;
		g_string_append_printf(g, "CREATE TABLE IF NOT EXISTS %s (", t->sqlite_name);
		for (unsigned c = 0; c < t->n_cols; c++) {
			if (!t->cols[c].sqlite)
				continue;
			g_string_append_printf(g, "%s%s %s", sep, t->cols[c].name, t->cols[c].sqlite);
			sep = ", ";
		}
		if (t->sqlite_key)
			g_string_append_printf(g, ", PRIMARY KEY(%s)", t->sqlite_key);
		g_string_append(g, ");");
	}
	return g_string_free(g, FALSE);
}

/*
 * The SET of an upsert (RM_SQ_UPSERT): a row whose key is stored keeps its
 * ONCE columns, adds ADD ones, sets UPD ones and KEEP ones unless NULL.
 */
static void add_upsert(GString *g, const struct rm_stored_table *t)
{
	int id = rm_stored_id_col(t);
	const char *sep = " ";

	g_string_append_printf(g, " ON CONFLICT(%s) DO UPDATE SET", t->sqlite_key ? t->sqlite_key : t->cols[id].name);
	for (unsigned i = 0; i < t->n_cols; i++) {
		const char *name = t->cols[i].name;

		if (!t->cols[i].sqlite)
			continue;
		if (t->cols[i].write == RM_COL_ADD)
			g_string_append_printf(g, "%s%s = %s + excluded.%s", sep, name, name, name);
		else if (t->cols[i].write == RM_COL_KEEP)
			g_string_append_printf(g, "%s%s = coalesce(excluded.%s, %s)", sep, name, name, name);
		else if (t->cols[i].write == RM_COL_UPD)
			g_string_append_printf(g, "%s%s = excluded.%s", sep, name, name);
		else
			continue;
		sep = ", ";
	}
}

/*
 * The insert of a row of t: "INSERT [OR REPLACE] INTO NAME (c1, ...)
 * VALUES (?1, ...)" with t's conflict clause; parameter N is t's N-th
 * SQLite column (rm_sq_bind_row). Owned by the caller (g_free).
 */
char *rm_sq_insert_sql(const struct rm_stored_table *t)
{
	GString *g = g_string_new(NULL);
	int n = 0;

	g_string_append_printf(g, "INSERT %sINTO %s (", t->sqlite_conflict == RM_SQ_REPLACE ? "OR REPLACE " : "",
			       t->sqlite_name);
	add_names(g, t, "", 0);
	g_string_append(g, ") VALUES (");
	for (unsigned i = 0; i < t->n_cols; i++)
		if (t->cols[i].sqlite)
			g_string_append_printf(g, "%s?%d", n ? ", " : "", n + 1), n++;
	g_string_append(g, ")");
	if (t->sqlite_conflict == RM_SQ_UPSERT)
		add_upsert(g, t);
	return g_string_free(g, FALSE);
}

/*
 * The update of a row of t by its ID, the columns written with every
 * version: "UPDATE NAME SET c=?N, ... WHERE id=?1" (a KEEP column keeps
 * its value for NULL), parameters as rm_sq_insert_sql's. g_free it.
 */
char *rm_sq_update_sql(const struct rm_stored_table *t)
{
	GString *g = g_string_new(NULL);
	const char *sep = " ";
	int n = 0, id = 0;

	g_string_append_printf(g, "UPDATE %s SET", t->sqlite_name);
	for (unsigned i = 0; i < t->n_cols; i++) {
		const struct rm_column *c = &t->cols[i];

		if (!c->sqlite)
			continue;
		n++;
		if (c->write == RM_COL_ID)
			id = n;
		if (c->write == RM_COL_UPD)
			g_string_append_printf(g, "%s%s=?%d", sep, c->name, n);
		else if (c->write == RM_COL_KEEP)
			g_string_append_printf(g, "%s%s=coalesce(?%d, %s)", sep, c->name, n, c->name);
		else
			continue;
		sep = ",";
	}
	g_string_append_printf(g, " WHERE %s=?%d", t->cols[rm_stored_id_col(t)].name, id);
	return g_string_free(g, FALSE);
}

/* The statements of tables, by Q_*: an insert (or upsert) or an update. */
static const struct {
	const struct rm_stored_table *table;
	int update;
} table_queries[Q__N] = {
	[Q_EPOCH_INSERT] = { &rm_stored_epochs, 0 }, [Q_EPOCH_UPDATE] = { &rm_stored_epochs, 1 },
	[Q_ARCHIVE] = { &rm_stored_archive, 0 },     [Q_RETIRED] = { &rm_stored_retired, 0 },
	[Q_SESSION] = { &rm_stored_sessions, 0 },    [Q_RAW] = { &rm_stored_raw, 0 },
	[Q_DROP] = { &rm_stored_drops, 0 },          [Q_CONNECTIONS] = { &rm_stored_conns, 0 },
	[Q_RUN_LIMIT] = { &rm_stored_limits, 0 },    [Q_OBS_POINT] = { &rm_stored_points, 0 },
	[Q_RUN_STOP] = { &rm_stored_runs, 1 },
};

/* The other statements: queries of some columns, and the transaction's. */
static const char *const fixed_queries[Q__N] = {
	/* An epoch whose outcome could not be kept while the database was unavailable. */
	[Q_EPOCH_LOST] = "UPDATE epoch_rows SET retired_ms = ?2,"
			 " outcome = CASE WHEN state = 'open' THEN 'incomplete' ELSE outcome END,"
			 " reason = CASE WHEN state = 'open' THEN ?3 ELSE reason END"
			 " WHERE id = ?1 AND retired_ms IS NULL",
	/* A settled epoch whose row is up to date: its retirement sets only retired_ms. */
	[Q_EPOCH_RETIRE] = "UPDATE epoch_rows SET retired_ms = ?2 WHERE id = ?1",
	[Q_BEGIN] = "BEGIN IMMEDIATE",
	[Q_COMMIT] = "COMMIT",
	[Q_ROLLBACK] = "ROLLBACK",
};

const struct rm_stored_table *rm_sq_query_table(int q)
{
	return table_queries[q].table;
}

char *rm_sq_query_sql(int q)
{
	if (!table_queries[q].table)
		return g_strdup(fixed_queries[q]);
	return table_queries[q].update ? rm_sq_update_sql(table_queries[q].table)
				       : rm_sq_insert_sql(table_queries[q].table);
}

/* Column c of a packed epoch, in SQL (j: its json_each row, a: its epoch_archive row). */
void rm_sq_packed_col(GString *g, int c)
{
	g_string_append_printf(g,
			       "CASE WHEN j.type = 'array' THEN json_extract(j.value, '$[%d]') ELSE coalesce("
			       "json_extract(j.value, '$.%c'), json_extract(a.base, '$[%d]')) END",
			       c, ARC_KEYS[c], c);
}

/* The retirement time, from epoch_retired, of the packed epoch whose row ID is the SQL expression id; or NULL. */
void rm_sq_retirement_of(GString *g, const char *id)
{
	g_string_append_printf(g,
			       "(SELECT CASE WHEN r.last_id >= %s THEN r.retired_ms END FROM epoch_retired r"
			       " WHERE r.first_id <= %s ORDER BY r.first_id DESC LIMIT 1)",
			       id, id);
}

/* Run sql, and on failure ROLLBACK an open transaction. 0 or -errno with err. */
static int exec_or_rollback(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
	int rc = rm_sq_exec(db, sql, err, errlen);

	if (rc < 0 && !sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * The earlier layout kept an epoch in two tables (epoch_keys, epoch_state)
 * read through a view named epochs: move the rows into the epochs table,
 * IDs unchanged.
 */
int rm_sq_convert_epochs(sqlite3 *db, char *err, size_t errlen)
{
	GString *move = g_string_new("INSERT INTO epoch_rows (");
	char *schema;
	int rc;

	if (rm_sq_scalar(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'epoch_keys'") <= 0) {
		g_string_free(move, TRUE);
		return 0;
	}
	add_names(move, &rm_stored_epochs, "", 0);
	g_string_append(move, ") SELECT k.id");
	add_names(move, &rm_stored_epochs, ", ", 1);
	g_string_append(move, " FROM epoch_keys k JOIN epoch_state s ON s.id = k.id ORDER BY k.id;"
			      "DROP TABLE epoch_state; DROP TABLE epoch_keys; COMMIT;");
	schema = rm_sq_schema_sql();
	rc = exec_or_rollback(db, "BEGIN IMMEDIATE; DROP VIEW IF EXISTS epochs;", err, errlen);
	if (!rc)
		rc = exec_or_rollback(db, schema, err, errlen);
	if (!rc)
		rc = exec_or_rollback(db, move->str, err, errlen);
	g_free(schema);
	g_string_free(move, TRUE);
	return rc;
}

/*
 * The view epochs: epoch_rows and, unpacked, epoch_archive, with the same
 * columns. A packed copy written before its retirement takes its retired_ms
 * from epoch_retired, and gives way to a row of the same ID (written when
 * the epoch changed after it was packed). Recreated at every read-write
 * open, so a database of an earlier version reads its new tables.
 */
int rm_sq_create_view(sqlite3 *db, char *err, size_t errlen)
{
	GString *sql = g_string_new("DROP VIEW IF EXISTS epochs; CREATE VIEW epochs AS SELECT ");
	GString *id = g_string_new(NULL);
	int rc;

	add_names(sql, &rm_stored_epochs, "", 0);
	g_string_append(sql, " FROM epoch_rows UNION ALL SELECT ");
	rm_sq_packed_col(id, EC_ID);
	for (int c = 0; c < EC__N; c++) {
		g_string_append(sql, c ? ", " : "");
		if (c == EC_RETIRED) {
			g_string_append(sql, "coalesce(");
			rm_sq_packed_col(sql, c);
			g_string_append(sql, ", ");
			rm_sq_retirement_of(sql, id->str);
			g_string_append(sql, ")");
		} else {
			rm_sq_packed_col(sql, c);
		}
		g_string_append_printf(sql, " AS %s", rm_stored_epochs.cols[c].name);
	}
	g_string_append(sql, " FROM epoch_archive a, json_each(a.data) j WHERE ");
	rm_sq_packed_col(sql, EC_RETIRED);
	g_string_append_printf(sql, " IS NOT NULL OR NOT EXISTS (SELECT 1 FROM epoch_rows o WHERE o.id = %s)", id->str);
	rc = rm_sq_exec(db, sql->str, err, errlen);
	g_string_free(sql, TRUE);
	g_string_free(id, TRUE);
	return rc;
}

/*
 * A table of a database an earlier version made lacks the columns added
 * since (sessions' seq_gaps, seq_missing, export_time_backwards and
 * peer_name; epoch_archive's retained and base): each column of columns.h a
 * table lacks is added with its declaration.
 */
int rm_sq_add_columns(sqlite3 *db, char *err, size_t errlen)
{
	for (unsigned i = 0; i < rm_n_stored_tables; i++) {
		const struct rm_stored_table *t = rm_stored_tables[i];

		for (unsigned c = 0; t->sqlite_name && c < t->n_cols; c++) {
			char sql[200];
			sqlite3_stmt *q;
			int rc;

			if (!t->cols[c].sqlite)
				continue;
			snprintf(sql, sizeof(sql), "SELECT %s FROM %s LIMIT 0", t->cols[c].name, t->sqlite_name);
			if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK) {
				sqlite3_finalize(q);
				continue;
			}
			snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", t->sqlite_name, t->cols[c].name,
				 t->cols[c].sqlite);
			rc = rm_sq_exec(db, sql, err, errlen);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int rm_sq_bind_points(sqlite3 *db, char *err, size_t errlen)
{
	sqlite3_stmt *q;

	if (rm_sq_scalar(
		    db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'observation_points'") <= 0)
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT peer_subject FROM observation_points LIMIT 0", -1, &q, NULL) == SQLITE_OK) {
		sqlite3_finalize(q);
		return 0;
	}
	return rm_sq_exec(db, "DROP TABLE observation_points", err, errlen);
}
