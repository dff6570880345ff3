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
static int committed(struct rm_store *st, int64_t id, uint64_t *records, uint64_t *rejected)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(st->db, "SELECT coalesce(records, 0), coalesce(rejected, 0) FROM sessions WHERE id = ?1",
			       -1, &q, NULL) != SQLITE_OK)
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

/* The statements of one lost session, in the open transaction. 0 or -1. */
static int write_lost(struct rm_store *st, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost)
{
	uint64_t records = 0, rejected = 0, read = l->records + l->rejected;
	int have = committed(st, l->id, &records, &rejected);
	char detail[300];

	if (have < 0)
		return -1;
	*lost = read > records + rejected ? read - (records + rejected) : 0;
	if (have && !*lost && !l->partial_octets)
		return 0; /* everything read is stored: the row stays as written */
	if (!have &&
	    rm_sq_exec_args(st,
			    "INSERT INTO sessions (id, run_id, peer, transport, started_ms, ended_ms, end_reason)"
			    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			    "iissiis", l->id, l->run_id, l->peer, l->transport, (int64_t)l->started_ms, (int64_t)now_ms,
			    "collector restarted: the run that held this session ended before writing it") < 0)
		return -1;
	if (rm_sq_exec_args(st,
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
	return rm_sq_exec_args(st,
			       "INSERT INTO drops (session_id, kind, count, first_ms, last_ms, last_detail)"
			       " VALUES (?1, 'collector-crash', ?2, ?3, ?3, ?4) ON CONFLICT(session_id, kind) DO UPDATE"
			       " SET count = count + excluded.count, last_ms = excluded.last_ms,"
			       " last_detail = excluded.last_detail",
			       "iiis", l->id, (int64_t)*lost, (int64_t)now_ms, detail) < 0
		       ? -1
		       : 0;
}

int rm_store_session_lost(struct rm_store *st, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost)
{
	*lost = 0;
	if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	if (write_lost(st, l, now_ms, lost) < 0 || sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		*lost = 0;
		return -1;
	}
	if (l->id >= st->next_session)
		st->next_session = l->id + 1; /* IDs continue after the largest stored */
	return 0;
}
