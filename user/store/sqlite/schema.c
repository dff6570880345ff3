// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * schema.c - the SQLite store's tables, statements and the epochs view (columns.h),
 * and the conversion of a database of an earlier layout.
 */
#include <glib.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "store_impl.h"

/* The column declarations of epoch_rows and sessions: " id INTEGER PRIMARY KEY, session_id INTEGER, ..." */
#define DECL_(NAME, column, sqlite, ch, null, write, kind, field, read) DECL_##write(column, sqlite)
#define DECL_ID(column, sqlite)                                         " " #column " " sqlite
#define DECL_ONCE(column, sqlite)                                       ", " #column " " sqlite
#define DECL_UPD(column, sqlite)                                        ", " #column " " sqlite
#define DECL_KEEP(column, sqlite)                                       ", " #column " " sqlite
#define EPOCH_ROWS_DECL                                                 RM_EPOCH_COLUMNS(DECL_)
#define SESSIONS_DECL                                                   RM_SESSION_COLUMNS(DECL_)

const char rm_sq_schema[] =
	"CREATE TABLE IF NOT EXISTS runs ("
	" id INTEGER PRIMARY KEY, started_ms INTEGER, stopped_ms INTEGER, listen TEXT, transport TEXT,"
	" max_sessions INTEGER, max_epochs INTEGER, max_raw_records INTEGER, inactivity_timeout_ms INTEGER,"
	" pen INTEGER);"
	"CREATE TABLE IF NOT EXISTS sessions (" SESSIONS_DECL ");"
	"CREATE TABLE IF NOT EXISTS epoch_rows (" EPOCH_ROWS_DECL ");"
	"CREATE TABLE IF NOT EXISTS epoch_archive ("
	" id INTEGER PRIMARY KEY, first_id INTEGER, last_id INTEGER, data TEXT, retained INTEGER DEFAULT 0,"
	" base TEXT);"
	"CREATE TABLE IF NOT EXISTS epoch_retired (first_id INTEGER PRIMARY KEY, last_id INTEGER, retired_ms INTEGER);"
	"CREATE TABLE IF NOT EXISTS raw_records ("
	" id INTEGER PRIMARY KEY, session_id INTEGER, received_ms INTEGER, domain INTEGER,"
	" template_id INTEGER, epoch_id INTEGER, report_id INTEGER, flags INTEGER, verdict TEXT,"
	" reason TEXT, record BLOB, template BLOB);"
	"CREATE TABLE IF NOT EXISTS drops ("
	" session_id INTEGER, kind TEXT, count INTEGER, first_ms INTEGER, last_ms INTEGER, last_detail TEXT,"
	" PRIMARY KEY(session_id, kind));"
	/* Refused connections and the limits of each run (docs/collector.md "What is stored"). */
	"CREATE TABLE IF NOT EXISTS connections ("
	" minute_ms INTEGER, source TEXT, outcome TEXT, count INTEGER, first_ms INTEGER, last_ms INTEGER,"
	" last_detail TEXT, PRIMARY KEY(minute_ms, source, outcome));"
	"CREATE TABLE IF NOT EXISTS run_limits ("
	" run_id INTEGER, name TEXT, value INTEGER, PRIMARY KEY(run_id, name));"
	/* Names bound to their exporter: "" for plain TCP (docs/collector.md "What is stored"). */
	"CREATE TABLE IF NOT EXISTS observation_points ("
	" domain INTEGER, observation_point_id INTEGER, name TEXT NOT NULL, updated_ms INTEGER,"
	" peer_name TEXT NOT NULL, peer_subject TEXT NOT NULL,"
	" PRIMARY KEY(peer_name, peer_subject, domain, observation_point_id));";

/*
 * Epoch statements share their parameter numbers: ?1 the row ID, ?2.. the
 * columns in EPOCH_COLUMNS order (EC_x + 1). The insert's "?" take them in
 * order.
 */
#define PARAM_(NAME, column, sqlite, ch, null, write, kind, field, read) PARAM_##write
#define PARAM_ID                                                         "?"
#define PARAM_ONCE                                                       ",?"
#define PARAM_UPD                                                        ",?"
#define PARAM_KEEP                                                       ",?"
#define EPOCH_PARAMS                                                     RM_EPOCH_COLUMNS(PARAM_)
#define SESSION_PARAMS                                                   RM_SESSION_COLUMNS(PARAM_)

/*
 * A session written again (its end, a peer's subject) updates its row: the
 * columns written with every version (UPD), and a KEEP column unless the
 * new value is NULL. KEEP columns come before UPD ones (columns.h): the
 * first of the list has no comma.
 */
#define SET_(NAME, column, sqlite, ch, null, write, kind, field, read) SET_##write(column)
#define SET_ID(column)
#define SET_ONCE(column)
#define SET_KEEP(column) " " #column " = coalesce(excluded." #column ", " #column ")"
#define SET_UPD(column)  ", " #column " = excluded." #column
#define SESSION_SET      RM_SESSION_COLUMNS(SET_)

const char *const rm_sq_queries[Q__N] = {
	[Q_EPOCH_INSERT] = "INSERT INTO epoch_rows (" EPOCH_COLUMNS ") VALUES (" EPOCH_PARAMS ")",
	/* Q_EPOCH_UPDATE: made at open (rm_sq_epoch_update_sql), its parameters numbered by column */
	/* An epoch whose outcome could not be kept while the database was unavailable. */
	[Q_EPOCH_LOST] = "UPDATE epoch_rows SET retired_ms = ?2,"
			 " outcome = CASE WHEN state = 'open' THEN 'incomplete' ELSE outcome END,"
			 " reason = CASE WHEN state = 'open' THEN ?3 ELSE reason END"
			 " WHERE id = ?1 AND retired_ms IS NULL",
	/* A settled epoch whose row is up to date: its retirement sets only retired_ms. */
	[Q_EPOCH_RETIRE] = "UPDATE epoch_rows SET retired_ms = ?2 WHERE id = ?1",
	[Q_ARCHIVE] = "INSERT INTO epoch_archive (first_id, last_id, data, retained, base) VALUES (?1, ?2, ?3, ?4, ?5)",
	[Q_RETIRED] = "INSERT INTO epoch_retired (first_id, last_id, retired_ms) VALUES (?1, ?2, ?3)",
	[Q_SESSION] = "INSERT INTO sessions (" RM_SESSION_COLUMN_NAMES ") VALUES (" SESSION_PARAMS ")"
		      " ON CONFLICT(id) DO UPDATE SET" SESSION_SET,
	[Q_RAW] = "INSERT INTO raw_records (session_id, received_ms, domain, template_id, epoch_id, report_id,"
		  " flags, verdict, reason, record, template) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
	[Q_DROP] = "INSERT INTO drops (session_id, kind, count, first_ms, last_ms, last_detail)"
		   " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(session_id, kind) DO UPDATE SET"
		   " count = count + ?3, last_ms = ?5, last_detail = ?6",
	[Q_CONNECTIONS] = "INSERT INTO connections (minute_ms, source, outcome, count, first_ms, last_ms, last_detail)"
			  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(minute_ms, source, outcome) DO UPDATE SET"
			  " count = count + ?4, last_ms = ?6, last_detail = ?7",
	[Q_RUN_LIMIT] = "INSERT OR REPLACE INTO run_limits (run_id, name, value) VALUES (?1, ?2, ?3)",
	[Q_OBS_POINT] = "INSERT OR REPLACE INTO observation_points (domain, observation_point_id, name, updated_ms,"
			" peer_name, peer_subject) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[Q_RUN_STOP] = "UPDATE runs SET stopped_ms = ?2 WHERE id = ?1",
	[Q_BEGIN] = "BEGIN IMMEDIATE",
	[Q_COMMIT] = "COMMIT",
	[Q_ROLLBACK] = "ROLLBACK",
};

/*
 * The update of an epoch's row, its columns written with every version:
 * "UPDATE epoch_rows SET window=?14, ..., retired_ms=?42 WHERE id=?1 AND ?2
 * IS NULL". Owned by the caller (g_free).
 */
char *rm_sq_epoch_update_sql(void)
{
	static const struct {
		const char *name;
		int every; /* written with every version (UPD) */
	} cols[] = {
#define UPD_(NAME, column, sqlite, ch, null, write, kind, field, read) { #column, UPD_##write },
#define UPD_ID                                                         0
#define UPD_ONCE                                                       0
#define UPD_UPD                                                        1
		RM_EPOCH_COLUMNS(UPD_)
#undef UPD_
	};
	GString *g = g_string_new("UPDATE epoch_rows SET");
	int first = 1;

	for (int c = 0; c < EC__N; c++) {
		if (!cols[c].every)
			continue;
		g_string_append_printf(g, "%s %s=?%d", first ? "" : ",", cols[c].name, c + 1);
		first = 0;
	}
	g_string_append(g, " WHERE id=?1 AND ?2 IS NULL");
	return g_string_free(g, FALSE);
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

/*
 * The earlier layout kept an epoch in two tables (epoch_keys, epoch_state)
 * read through a view named epochs: move the rows into the epochs table,
 * IDs unchanged.
 */
int rm_sq_convert_epochs(struct rm_store *store, char **msg)
{
	int rc;

	if (rm_sq_scalar(store->db,
			 "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'epoch_keys'") <= 0)
		return SQLITE_OK;
	rc = sqlite3_exec(store->db, "BEGIN IMMEDIATE; DROP VIEW IF EXISTS epochs;", NULL, NULL, msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(store->db, rm_sq_schema, NULL, NULL, msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(store->db,
				  "INSERT INTO epoch_rows (" EPOCH_COLUMNS ") SELECT k.id" EPOCH_COLUMNS_AFTER_ID
				  " FROM epoch_keys k JOIN epoch_state s ON s.id = k.id ORDER BY k.id;"
				  "DROP TABLE epoch_state; DROP TABLE epoch_keys; COMMIT;",
				  NULL, NULL, msg);
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(store->db))
		sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * The view epochs: epoch_rows and, unpacked, epoch_archive, with the same
 * columns. A packed copy written before its retirement takes its retired_ms
 * from epoch_retired, and gives way to a row of the same ID (written when
 * the epoch changed after it was packed). Recreated at every read-write
 * open, so a database of an earlier version reads its new tables.
 */
int rm_sq_create_view(struct rm_store *store, char **msg)
{
	static const char cols[] = EPOCH_COLUMNS;
	GString *sql = g_string_new("DROP VIEW IF EXISTS epochs; CREATE VIEW epochs AS SELECT " EPOCH_COLUMNS
				    " FROM epoch_rows UNION ALL SELECT ");
	GString *id = g_string_new(NULL);
	const char *p = cols;
	int rc;

	rm_sq_packed_col(id, EC_ID);
	for (int c = 0; c < EC__N; c++) {
		size_t n = strcspn(p, ",");

		while (*p == ' ')
			p++, n--;
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
		g_string_append_printf(sql, " AS %.*s", (int)n, p);
		p += n + (p[n] == ',');
	}
	g_string_append(sql, " FROM epoch_archive a, json_each(a.data) j WHERE ");
	rm_sq_packed_col(sql, EC_RETIRED);
	g_string_append_printf(sql, " IS NOT NULL OR NOT EXISTS (SELECT 1 FROM epoch_rows o WHERE o.id = %s)", id->str);
	rc = sqlite3_exec(store->db, sql->str, NULL, NULL, msg);
	g_string_free(sql, TRUE);
	g_string_free(id, TRUE);
	return rc;
}

int rm_sq_add_column(struct rm_store *store, const char *table, const char *column, const char *decl, char **msg)
{
	char sql[200];
	sqlite3_stmt *q;

	snprintf(sql, sizeof(sql), "SELECT %s FROM %s LIMIT 0", column, table);
	if (sqlite3_prepare_v2(store->db, sql, -1, &q, NULL) == SQLITE_OK) {
		sqlite3_finalize(q);
		return SQLITE_OK;
	}
	snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", table, column, decl);
	return sqlite3_exec(store->db, sql, NULL, NULL, msg);
}

int rm_sq_bind_points(struct rm_store *store, char **msg)
{
	sqlite3_stmt *q;

	if (rm_sq_scalar(store->db,
			 "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'observation_points'") <=
	    0)
		return SQLITE_OK;
	if (sqlite3_prepare_v2(store->db, "SELECT peer_subject FROM observation_points LIMIT 0", -1, &q, NULL) ==
	    SQLITE_OK) {
		sqlite3_finalize(q);
		return SQLITE_OK;
	}
	return sqlite3_exec(store->db, "DROP TABLE observation_points", NULL, NULL, msg);
}
