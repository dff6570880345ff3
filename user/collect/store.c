// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store.c - the collector's SQLite database. See store.h.
 */
#include <arpa/inet.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS runs ("
	" id INTEGER PRIMARY KEY, started_ms INTEGER, stopped_ms INTEGER, listen TEXT, transport TEXT,"
	" max_sessions INTEGER, max_epochs INTEGER, max_raw_records INTEGER, inactivity_timeout_ms INTEGER,"
	" pen INTEGER);"
	"CREATE TABLE IF NOT EXISTS sessions ("
	" id INTEGER PRIMARY KEY, run_id INTEGER, peer TEXT, peer_subject TEXT, transport TEXT,"
	" started_ms INTEGER, ended_ms INTEGER, end_reason TEXT, messages INTEGER DEFAULT 0,"
	" records INTEGER DEFAULT 0, octets INTEGER DEFAULT 0, rejected INTEGER DEFAULT 0,"
	" accepted INTEGER DEFAULT 0, repeats INTEGER DEFAULT 0, stale INTEGER DEFAULT 0,"
	" orphans INTEGER DEFAULT 0, unsupported INTEGER DEFAULT 0, invalid INTEGER DEFAULT 0,"
	" after_invalid INTEGER DEFAULT 0, key_conflicts INTEGER DEFAULT 0, resource_drops INTEGER DEFAULT 0,"
	" unbound INTEGER DEFAULT 0);"
	/* Epochs: the key (written once) apart from the state (rewritten per commit), joined by the view. */
	"CREATE TABLE IF NOT EXISTS epoch_keys ("
	" id INTEGER PRIMARY KEY, session_id INTEGER, domain INTEGER, observation_point_id INTEGER,"
	" family INTEGER, src TEXT, dst TEXT, dest_qp INTEGER, pkey INTEGER, has_vlan_ns INTEGER,"
	" vlan_outer INTEGER, vlan_inner INTEGER, epoch_id INTEGER, first_seen_ms INTEGER);"
	"CREATE INDEX IF NOT EXISTS epoch_keys_by_key ON epoch_keys(session_id, domain, epoch_id);"
	"CREATE TABLE IF NOT EXISTS epoch_state ("
	" id INTEGER PRIMARY KEY, window INTEGER, flags INTEGER, flags_seen INTEGER, flow_start_ms INTEGER,"
	" flow_end_ms INTEGER, first_report_id INTEGER, last_report_id INTEGER, reports_accepted INTEGER,"
	" missing_initial INTEGER, missing_reports INTEGER, gaps INTEGER, repeats INTEGER, stale INTEGER,"
	" unsupported INTEGER, ignored INTEGER, requests INTEGER, skipped INTEGER, filled INTEGER,"
	" expired INTEGER, abandoned INTEGER, pending INTEGER, repeated INTEGER, unclassified_late INTEGER,"
	" state TEXT, outcome TEXT, reason TEXT, last_seen_ms INTEGER, retired_ms INTEGER);"
	"CREATE VIEW IF NOT EXISTS epochs AS SELECT k.id AS id, session_id, domain, observation_point_id, family,"
	" src, dst, dest_qp, pkey, has_vlan_ns, vlan_outer, vlan_inner, epoch_id, window, flags, flags_seen,"
	" flow_start_ms, flow_end_ms, first_report_id, last_report_id, reports_accepted, missing_initial,"
	" missing_reports, gaps, repeats, stale, unsupported, ignored, requests, skipped, filled, expired,"
	" abandoned, pending, repeated, unclassified_late, state, outcome, reason, first_seen_ms, last_seen_ms,"
	" retired_ms FROM epoch_keys k JOIN epoch_state s ON s.id = k.id;"
	"CREATE TABLE IF NOT EXISTS raw_records ("
	" id INTEGER PRIMARY KEY, session_id INTEGER, received_ms INTEGER, domain INTEGER,"
	" template_id INTEGER, epoch_id INTEGER, report_id INTEGER, flags INTEGER, verdict TEXT,"
	" reason TEXT, record BLOB, template BLOB);"
	"CREATE TABLE IF NOT EXISTS drops ("
	" session_id INTEGER, kind TEXT, count INTEGER, first_ms INTEGER, last_ms INTEGER, last_detail TEXT,"
	" PRIMARY KEY(session_id, kind));";

/* Refused connections and the limits of each run (docs/collector.md "What is stored"). */
static const char schema_limits[] =
	"CREATE TABLE IF NOT EXISTS connections ("
	" minute_ms INTEGER, source TEXT, outcome TEXT, count INTEGER, first_ms INTEGER, last_ms INTEGER,"
	" last_detail TEXT, PRIMARY KEY(minute_ms, source, outcome));"
	"CREATE TABLE IF NOT EXISTS run_limits ("
	" run_id INTEGER, name TEXT, value INTEGER, PRIMARY KEY(run_id, name));";

enum {
	Q_KEY_INSERT, Q_STATE_INSERT, Q_STATE_UPDATE, Q_RAW, Q_DROP, Q_BEGIN, Q_COMMIT, Q__N
};

static const char *const queries[Q__N] = {
	[Q_KEY_INSERT] =
		"INSERT INTO epoch_keys (session_id, domain, observation_point_id, family, src, dst, dest_qp, pkey,"
		" has_vlan_ns, vlan_outer, vlan_inner, epoch_id, first_seen_ms) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,"
		"?10,?11,?12,?13)",
	[Q_STATE_INSERT] =
		"INSERT INTO epoch_state (window, flags, flags_seen, flow_start_ms, flow_end_ms, first_report_id,"
		" last_report_id, reports_accepted, missing_initial, missing_reports, gaps, repeats, stale,"
		" unsupported, ignored, requests, skipped, filled, expired, abandoned, pending, repeated,"
		" unclassified_late, state, outcome, reason, last_seen_ms, retired_ms, id) VALUES (?1,?2,?3,?4,?5,"
		"?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29)",
	[Q_STATE_UPDATE] =
		"UPDATE epoch_state SET window=?1, flags=?2, flags_seen=?3, flow_start_ms=?4, flow_end_ms=?5,"
		" first_report_id=?6, last_report_id=?7, reports_accepted=?8, missing_initial=?9,"
		" missing_reports=?10, gaps=?11, repeats=?12, stale=?13, unsupported=?14, ignored=?15,"
		" requests=?16, skipped=?17, filled=?18, expired=?19, abandoned=?20, pending=?21, repeated=?22,"
		" unclassified_late=?23, state=?24, outcome=?25, reason=?26, last_seen_ms=?27, retired_ms=?28"
		" WHERE id=?29",
	[Q_RAW] = "INSERT INTO raw_records (session_id, received_ms, domain, template_id, epoch_id, report_id,"
		  " flags, verdict, reason, record, template) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
	[Q_DROP] = "INSERT INTO drops (session_id, kind, count, first_ms, last_ms, last_detail)"
		   " VALUES (?1, ?2, 1, ?3, ?3, ?4) ON CONFLICT(session_id, kind) DO UPDATE SET"
		   " count = count + 1, last_ms = ?3, last_detail = ?4",
	[Q_BEGIN] = "BEGIN",
	[Q_COMMIT] = "COMMIT",
};

struct rm_store {
	sqlite3 *db;
	sqlite3_stmt *q[Q__N];
	uint32_t raw_limit;
	uint64_t raw_rows;
	int in_tx;
};

sqlite3 *rm_store_db(struct rm_store *st)
{
	return st->db;
}

const char *rm_store_error(struct rm_store *st)
{
	return sqlite3_errmsg(st->db);
}

void rm_store_close(struct rm_store *st)
{
	if (!st)
		return;
	for (int i = 0; i < Q__N; i++)
		sqlite3_finalize(st->q[i]);
	sqlite3_close(st->db);
	free(st);
}

struct rm_store *rm_store_open(const char *path, int readonly, char *err, size_t errlen)
{
	struct rm_store *st = calloc(1, sizeof(*st));
	char *msg = NULL;
	sqlite3_stmt *q;

	if (!st) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	st->raw_limit = 100000;
	if (sqlite3_open_v2(path, &st->db, (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, st->db ? sqlite3_errmsg(st->db) : "cannot open");
		rm_store_close(st);
		return NULL;
	}
	sqlite3_busy_timeout(st->db, 5000);
	if (readonly)
		return st;
	if (sqlite3_exec(st->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, &msg) != SQLITE_OK ||
	    sqlite3_exec(st->db, schema, NULL, NULL, &msg) != SQLITE_OK ||
	    sqlite3_exec(st->db, schema_limits, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errmsg(st->db));
		sqlite3_free(msg);
		rm_store_close(st);
		return NULL;
	}
	for (int i = 0; i < Q__N; i++) {
		if (sqlite3_prepare_v3(st->db, queries[i], -1, SQLITE_PREPARE_PERSISTENT, &st->q[i], NULL) != SQLITE_OK) {
			snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(st->db));
			rm_store_close(st);
			return NULL;
		}
	}
	if (sqlite3_prepare_v2(st->db, "SELECT count(*) FROM raw_records", -1, &q, NULL) == SQLITE_OK) {
		if (sqlite3_step(q) == SQLITE_ROW)
			st->raw_rows = (uint64_t)sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
	}
	return st;
}

void rm_store_set_raw_limit(struct rm_store *st, uint32_t max_raw_records)
{
	st->raw_limit = max_raw_records;
}

static int step_reset(struct rm_store *st, sqlite3_stmt *q)
{
	int rc = sqlite3_step(q);

	/* Bindings are not cleared: every statement binds all its parameters each time. */
	sqlite3_reset(q);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

int rm_store_begin(struct rm_store *st)
{
	if (st->in_tx)
		return 0;
	if (step_reset(st, st->q[Q_BEGIN]) < 0)
		return -1;
	st->in_tx = 1;
	return 0;
}

int rm_store_commit(struct rm_store *st)
{
	if (!st->in_tx)
		return 0;
	st->in_tx = 0;
	return step_reset(st, st->q[Q_COMMIT]);
}

/* One-off statement with text/integer arguments described by fmt: 'i' int64, 's' text. */
static int64_t exec_args(struct rm_store *st, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *q;
	va_list ap;
	int rc;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	va_start(ap, fmt);
	for (int i = 0; fmt[i]; i++) {
		if (fmt[i] == 'i')
			sqlite3_bind_int64(q, i + 1, va_arg(ap, int64_t));
		else {
			const char *s = va_arg(ap, const char *);

			if (s)
				sqlite3_bind_text(q, i + 1, s, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(q, i + 1);
		}
	}
	va_end(ap);
	rc = sqlite3_step(q);
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE)
		return -1;
	return sqlite3_last_insert_rowid(st->db);
}

int64_t rm_store_run_start(struct rm_store *st, const char *listen, const char *transport,
			   const struct rm_rules_limits *lim, uint32_t max_raw_records, uint32_t pen,
			   uint64_t now_ms)
{
	st->raw_limit = max_raw_records;
	return exec_args(st,
			 "INSERT INTO runs (started_ms, listen, transport, max_sessions, max_epochs, max_raw_records,"
			 " inactivity_timeout_ms, pen) VALUES (?,?,?,?,?,?,?,?)",
			 "issiiiii", (int64_t)now_ms, listen, transport, (int64_t)lim->max_sessions,
			 (int64_t)lim->max_epochs, (int64_t)max_raw_records, (int64_t)lim->inactivity_timeout_ms,
			 (int64_t)pen);
}

int rm_store_run_stop(struct rm_store *st, int64_t run_id, uint64_t now_ms)
{
	return exec_args(st, "UPDATE runs SET stopped_ms=? WHERE id=?", "ii", (int64_t)now_ms, run_id) < 0 ? -1 : 0;
}

int64_t rm_store_session_start(struct rm_store *st, int64_t run_id, const char *peer, const char *transport,
			       uint64_t now_ms)
{
	return exec_args(st, "INSERT INTO sessions (run_id, peer, transport, started_ms) VALUES (?,?,?,?)", "issi",
			 run_id, peer, transport, (int64_t)now_ms);
}

int rm_store_session_peer(struct rm_store *st, int64_t session_id, const char *subject)
{
	return exec_args(st, "UPDATE sessions SET peer_subject=? WHERE id=?", "si", subject, session_id) < 0 ? -1 : 0;
}

int rm_store_session_end(struct rm_store *st, int64_t session_id, const char *reason, uint64_t now_ms,
			 const struct rm_session_counts *c)
{
	static const uint64_t zero[RM_V__COUNT];
	const uint64_t *v = c->verdicts ? c->verdicts : zero;

	return exec_args(st,
			 "UPDATE sessions SET ended_ms=?, end_reason=?, messages=?, records=?, octets=?, rejected=?,"
			 " accepted=?, repeats=?, stale=?, orphans=?, unsupported=?, invalid=?, after_invalid=?,"
			 " key_conflicts=?, resource_drops=?, unbound=? WHERE id=?",
			 "isiiiiiiiiiiiiiii", (int64_t)now_ms, reason, (int64_t)c->messages, (int64_t)c->records,
			 (int64_t)c->octets, (int64_t)c->rejected, (int64_t)v[RM_V_ACCEPTED], (int64_t)v[RM_V_REPEAT],
			 (int64_t)v[RM_V_STALE], (int64_t)v[RM_V_ORPHAN], (int64_t)v[RM_V_UNSUPPORTED],
			 (int64_t)v[RM_V_INVALID], (int64_t)v[RM_V_AFTER_INVALID], (int64_t)v[RM_V_KEY_CONFLICT],
			 (int64_t)v[RM_V_RESOURCE_DROP], (int64_t)v[RM_V_UNBOUND], session_id) < 0
		       ? -1
		       : 0;
}

static void addr_text(const struct rm_report *r, const uint8_t *a, char *buf, size_t len)
{
	if (!inet_ntop(r->family == 6 ? AF_INET6 : AF_INET, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static const char *state_name(enum rm_epoch_state s)
{
	return s == RM_EPOCH_OPEN ? "open" : s == RM_EPOCH_FINAL ? "final" : "invalid";
}

int rm_store_epoch(struct rm_store *st, struct rm_epoch *e)
{
	const struct rm_report *k = &e->key;
	sqlite3_stmt *q;
	int fresh = !e->store_id;

	if (fresh) {
		char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

		q = st->q[Q_KEY_INSERT];
		addr_text(k, k->src, src, sizeof(src));
		addr_text(k, k->dst, dst, sizeof(dst));
		sqlite3_bind_int64(q, 1, (int64_t)e->session_id);
		sqlite3_bind_int64(q, 2, e->domain);
		sqlite3_bind_int64(q, 3, (int64_t)k->observation_point_id);
		sqlite3_bind_int(q, 4, k->family);
		sqlite3_bind_text(q, 5, src, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(q, 6, dst, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(q, 7, k->dest_qp);
		sqlite3_bind_int(q, 8, k->pkey);
		sqlite3_bind_int(q, 9, k->has_vlan_ns);
		sqlite3_bind_int(q, 10, k->vlan[0]);
		sqlite3_bind_int(q, 11, k->vlan[1]);
		sqlite3_bind_int64(q, 12, (int64_t)k->epoch_id);
		sqlite3_bind_int64(q, 13, (int64_t)e->first_seen_ms);
		if (step_reset(st, q) < 0)
			return -1;
		e->store_id = sqlite3_last_insert_rowid(st->db);
	}
	q = st->q[fresh ? Q_STATE_INSERT : Q_STATE_UPDATE];
	if (e->n_accepted > 0) {
		sqlite3_bind_int64(q, 1, k->window);
		sqlite3_bind_int(q, 2, k->flags);
		sqlite3_bind_int64(q, 4, (int64_t)k->flow_start_ms);
		sqlite3_bind_int64(q, 5, (int64_t)k->flow_end_ms);
		sqlite3_bind_int64(q, 6, (int64_t)e->first_report_id);
		sqlite3_bind_int64(q, 7, (int64_t)k->report_id);
		sqlite3_bind_int64(q, 16, (int64_t)k->requests);
		sqlite3_bind_int64(q, 17, (int64_t)k->skipped);
		sqlite3_bind_int64(q, 18, (int64_t)k->filled);
		sqlite3_bind_int64(q, 19, (int64_t)k->expired);
		sqlite3_bind_int64(q, 20, (int64_t)k->abandoned);
		sqlite3_bind_int64(q, 21, k->pending);
		sqlite3_bind_int64(q, 22, (int64_t)k->repeated);
		sqlite3_bind_int64(q, 23, (int64_t)k->unclassified_late);
	} else { /* no accepted report: no measurement (NULL) */
		static const int cols[] = { 1, 2, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23 };

		for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
			sqlite3_bind_null(q, cols[i]);
	}
	sqlite3_bind_int(q, 3, e->flags_seen);
	sqlite3_bind_int64(q, 8, (int64_t)e->n_accepted);
	sqlite3_bind_int64(q, 9, (int64_t)e->missing_initial);
	sqlite3_bind_int64(q, 10, (int64_t)e->missing_reports);
	sqlite3_bind_int64(q, 11, (int64_t)e->gaps);
	sqlite3_bind_int64(q, 12, (int64_t)e->repeats);
	sqlite3_bind_int64(q, 13, (int64_t)e->stale);
	sqlite3_bind_int64(q, 14, (int64_t)e->unsupported);
	sqlite3_bind_int64(q, 15, (int64_t)e->ignored);
	sqlite3_bind_text(q, 24, state_name(e->state), -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 25, rm_outcome_name(e->outcome), -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 26, e->reason, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 27, (int64_t)e->last_seen_ms);
	if (e->retired_ms)
		sqlite3_bind_int64(q, 28, (int64_t)e->retired_ms);
	else
		sqlite3_bind_null(q, 28);
	sqlite3_bind_int64(q, 29, e->store_id);
	return step_reset(st, q);
}

int rm_store_drop(struct rm_store *st, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	sqlite3_stmt *q = st->q[Q_DROP];

	sqlite3_bind_int64(q, 1, session_id);
	sqlite3_bind_text(q, 2, kind, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 3, (int64_t)now_ms);
	sqlite3_bind_text(q, 4, detail, -1, SQLITE_TRANSIENT);
	return step_reset(st, q);
}

int rm_store_raw(struct rm_store *st, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		 const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		 size_t tmpl_len, uint64_t now_ms)
{
	sqlite3_stmt *q = st->q[Q_RAW];

	if (st->raw_rows >= st->raw_limit) {
		char d[160];

		snprintf(d, sizeof(d), "raw record not kept (%s): max_raw_records %u reached", verdict, st->raw_limit);
		return rm_store_drop(st, session_id, "raw-record-limit", d, now_ms) < 0 ? -1 : 0;
	}
	sqlite3_bind_int64(q, 1, session_id);
	sqlite3_bind_int64(q, 2, (int64_t)now_ms);
	sqlite3_bind_int64(q, 3, domain);
	sqlite3_bind_int(q, 4, tid);
	if (r) {
		sqlite3_bind_int64(q, 5, (int64_t)r->epoch_id);
		sqlite3_bind_int64(q, 6, (int64_t)r->report_id);
		sqlite3_bind_int(q, 7, r->flags);
	} else {
		sqlite3_bind_null(q, 5);
		sqlite3_bind_null(q, 6);
		sqlite3_bind_null(q, 7);
	}
	sqlite3_bind_text(q, 8, verdict, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 9, reason, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob(q, 10, raw, (int)len, SQLITE_TRANSIENT);
	if (tmpl)
		sqlite3_bind_blob(q, 11, tmpl, (int)tmpl_len, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, 11);
	if (step_reset(st, q) < 0)
		return -1;
	st->raw_rows++;
	return 1;
}

/* ---------------- refused connections, run limits, raw octets ---------------- */

int rm_store_connections(struct rm_store *st, uint64_t minute_ms, const char *source, const char *outcome,
			 uint64_t count, uint64_t first_ms, uint64_t last_ms, const char *detail)
{
	return exec_args(st,
			 "INSERT INTO connections (minute_ms, source, outcome, count, first_ms, last_ms, last_detail)"
			 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(minute_ms, source, outcome) DO UPDATE SET"
			 " count = count + ?4, last_ms = ?6, last_detail = ?7",
			 "issiiis", (int64_t)minute_ms, source, outcome, (int64_t)count, (int64_t)first_ms,
			 (int64_t)last_ms, detail) < 0
		       ? -1
		       : 0;
}

int rm_store_run_limit(struct rm_store *st, int64_t run_id, const char *name, uint64_t value)
{
	return exec_args(st, "INSERT OR REPLACE INTO run_limits (run_id, name, value) VALUES (?, ?, ?)", "isi", run_id,
			 name, (int64_t)value) < 0
		       ? -1
		       : 0;
}

uint64_t rm_store_raw_bytes(struct rm_store *st)
{
	sqlite3_stmt *q;
	uint64_t n = 0;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT coalesce(sum(length(record) + coalesce(length(template), 0)), 0) FROM raw_records",
			       -1, &q, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(q) == SQLITE_ROW)
		n = (uint64_t)sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return n;
}
