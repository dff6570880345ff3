// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * lost.c - the records a killed or crashed run had read and not committed,
 * as the collector's received-Messages journal gives them at the next
 * start: a collector resource drop of their session (store.h,
 * rm_store_session_lost).
 */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>

#include "store_impl.h"

/* The committed row of session id: 1 with its records and rejected, 0 when there is none, -1 on error. */
static int committed(struct rm_store *store, int64_t id, uint64_t *records, uint64_t *rejected)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(store->db,
			       "SELECT coalesce(records, 0), coalesce(rejected, 0) FROM sessions WHERE id = ?1", -1, &q,
			       NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(q, 1, id);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*records = (uint64_t)sqlite3_column_int64(q, 0);
		*rejected = (uint64_t)sqlite3_column_int64(q, 1);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* The row of a session the crashed run never wrote: the journal's counts, lost records as resource drops. 0 or -1. */
static int insert_lost(struct rm_store *store, const struct rm_store_lost_session *l, uint64_t lost, uint64_t now_ms)
{
	struct rm_sess_row s;
	int rc = rm_sess_row_lost(&s, l, lost, now_ms);

	if (!rc)
		rc = rm_sq_write_row(store, Q_SESSION, &s);
	rm_sess_row_clear(&s);
	return rc;
}

/* count drops of kind of a session, added to its row of drops. 0 or -1. */
static int write_drop(struct rm_store *store, int64_t session_id, const char *kind, uint64_t count, const char *detail,
		      uint64_t now_ms)
{
	struct rm_drop_row d = rm_drop_row_of(session_id, kind, detail, now_ms);

	d.count = count;
	return rm_sq_write_row(store, Q_DROP, &d);
}

/* The statements of one lost session, in the open transaction. 0 or -1. */
static int write_lost(struct rm_store *store, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost)
{
	uint64_t records = 0, rejected = 0, read = l->records + l->rejected;
	int have = committed(store, l->id, &records, &rejected);
	char detail[300];

	if (have < 0)
		return -1;
	*lost = read > records + rejected ? read - (records + rejected) : 0;
	if (have && !*lost && !l->partial_octets)
		return 0; /* everything read is stored: the row stays as written */
	if (!have && insert_lost(store, l, *lost, now_ms) < 0)
		return -1;
	if (have && rm_sq_exec_args(store->db,
				    "UPDATE sessions SET messages = ?2, records = ?3, rejected = ?4, octets = ?5,"
				    " resource_drops = coalesce(resource_drops, 0) + ?6 WHERE id = ?1",
				    "iiiiii", l->id, (int64_t)l->messages, (int64_t)l->records, (int64_t)l->rejected,
				    (int64_t)l->octets, (int64_t)*lost) < 0)
		return -1;
	snprintf(detail, sizeof(detail),
		 "%" PRIu64 " records read and not committed when the collector ended without closing the session "
		 "(%" PRIu64 " records and %" PRIu64 " rejected read, %" PRIu64 " committed)%s",
		 *lost, l->records, l->rejected, records + rejected,
		 l->partial_octets ? "; and the octets of an incomplete Message" : "");
	if (!*lost && l->partial_octets)
		return 0;
	return write_drop(store, l->id, "collector-crash", *lost, detail, now_ms);
}

int rm_store_session_lost(struct rm_store *store, const struct rm_store_lost_session *l, uint64_t now_ms,
			  uint64_t *lost)
{
	*lost = 0;
	if (sqlite3_exec(store->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	if (write_lost(store, l, now_ms, lost) < 0 ||
	    sqlite3_exec(store->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
		*lost = 0;
		return -1;
	}
	if (l->id >= store->next_session)
		store->next_session = l->id + 1; /* IDs continue after the largest stored */
	return 0;
}

/* The latest session a may speak of: 1 found (res->id, res->read, *ended, *started), 0 none, -1 error. */
static int acked_match(struct rm_store *store, const struct rm_store_acked *a, struct rm_store_acked_result *res,
		       int64_t *ended, int64_t *started)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(
		    store->db,
		    "SELECT id, coalesce(records, 0) + coalesce(rejected, 0), coalesce(ended_ms, 0), started_ms"
		    " FROM sessions WHERE peer IN (?1, ?2) AND coalesce(peer_subject, '') = ?3 AND id < ?4"
		    " ORDER BY id DESC LIMIT 1",
		    -1, &q, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(q, 1, a->peer, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, a->peer_alt ? a->peer_alt : a->peer, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, a->subject, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, a->reporting_id);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		res->id = sqlite3_column_int64(q, 0);
		res->read = (uint64_t)sqlite3_column_int64(q, 1);
		*ended = sqlite3_column_int64(q, 2);
		*started = sqlite3_column_int64(q, 3);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* 1 when session id already has an unread-at-crash drop, 0 when not, -1 on error. */
static int acked_before(struct rm_store *store, int64_t id)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(store->db, "SELECT 1 FROM drops WHERE session_id = ?1 AND kind = 'unread-at-crash'", -1,
			       &q, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(q, 1, id);
	rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* The statements of a matched session, in the open transaction. 0 or -1. */
static int write_acked(struct rm_store *store, const struct rm_store_acked *a, uint64_t now_ms,
		       const struct rm_store_acked_result *res)
{
	char detail[300];

	snprintf(detail, sizeof(detail),
		 "%" PRIu64 " records the collector's kernel acknowledged and the collector never read (the exporter's "
		 "next session reported %" PRIu64 " acknowledged; %" PRIu64 " read)",
		 res->lost, a->records, res->read);
	if (write_drop(store, res->id, "unread-at-crash", res->lost, detail, now_ms) < 0 ||
	    rm_sq_exec_args(store->db,
			    "UPDATE sessions SET resource_drops = coalesce(resource_drops, 0) + ?2 WHERE id = ?1", "ii",
			    res->id, (int64_t)res->lost) < 0)
		return -1;
	return 0;
}

/* May the record speak of the session matched? 1 yes, 0 no (res->why), -1 error. */
static int acked_check(struct rm_store *store, const struct rm_store_acked *a, struct rm_store_acked_result *res,
		       int64_t ended, int64_t started)
{
	int before;

	if (!ended || g_hash_table_contains(store->sessions, &res->id)) {
		res->why = "that session is still open";
		return 0;
	}
	if (a->ended_ms && (uint64_t)started > a->ended_ms + 60000) {
		res->why = "that session started after the one reported had ended";
		return 0;
	}
	before = acked_before(store, res->id);
	if (before > 0)
		res->why = "that session was reported before";
	return before < 0 ? -1 : !before;
}

int rm_store_session_acked(struct rm_store *store, const struct rm_store_acked *a, uint64_t now_ms,
			   struct rm_store_acked_result *res)
{
	int64_t ended = 0, started = 0;
	int rc;

	*res = (struct rm_store_acked_result){ 0 };
	if (sqlite3_exec(store->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	rc = acked_match(store, a, res, &ended, &started);
	if (rc > 0)
		rc = acked_check(store, a, res, ended, started);
	else if (rc == 0)
		res->why = "no earlier session of this exporter from that address and port";
	if (rc > 0 && (res->why = rm_store_acked_unread(a->records, res->read, a->unread_max, &res->lost))) {
		res->bad = 1;
		rc = 0;
	}
	if (rc > 0 && res->lost && write_acked(store, a, now_ms, res) < 0)
		rc = -1;
	if (rc < 0 || sqlite3_exec(store->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	return rc;
}
