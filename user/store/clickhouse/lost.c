// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * lost.c - the ClickHouse store's part of the collector's received-Messages
 * journal (user/collect/journal.h; docs/collector.md "After a crash"): which
 * hand-overs ClickHouse took (the journal's files of ended sessions go once
 * the batch with their end is inserted), the journal's directory beside the
 * spool, and at a run's start the records a killed run had read and
 * ClickHouse never got: a collector resource drop "collector-crash" of
 * their session, as the SQLite store's lost.c counts them.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chstore_impl.h"
#include "common/log.h"

uint64_t rm_chs_transactions(const void *p)
{
	struct rm_chstore *cs = (struct rm_chstore *)p;
	uint64_t v;

	pthread_mutex_lock(&cs->mu);
	v = cs->inserted_seq;
	pthread_mutex_unlock(&cs->mu);
	return v;
}

uint64_t rm_chs_handed(const void *p)
{
	return ((const struct rm_chstore *)p)->handed;
}

int rm_chs_journal_dir(void *p, char *buf, size_t len)
{
	struct rm_chstore *cs = p;
	size_t n = strlen(cs->spool_path);

	/* SPOOL_DIR/ID.TAG.spool -> SPOOL_DIR/ID.TAG.received: one journal per collector ID and store */
	if (n < 6 || (size_t)snprintf(buf, len, "%.*s.received", (int)(n - 6), cs->spool_path) >= len)
		return -1;
	return 0;
}

/* The latest version of session id: 1 with its records + rejected and resource_drops, 0 none, -1 no answer. */
static int committed(struct rm_ch *ch, const char *qid, int64_t id, uint64_t *read, char *err, size_t errlen)
{
	struct rm_ch_result r = { 0 };
	char *sql = g_strdup_printf("SELECT count(), argMax(records + rejected, version) FROM sessions"
				    " WHERE collector_id = %s AND id = %" PRId64 " FORMAT TabSeparated",
				    qid, id);
	int rc = rm_ch_query(ch, sql, NULL, 0, NULL, &r, err, errlen);
	char *q;
	uint64_t n;

	g_free(sql);
	if (rc < 0)
		return -1;
	n = r.data ? strtoull(r.data, &q, 10) : 0;
	*read = n && r.data ? strtoull(q, NULL, 10) : 0;
	rm_ch_result_free(&r);
	return n ? 1 : 0;
}

/* A new version of the stored row of l: the counts read, resource_drops + lost. */
static int rewrite(struct rm_chstore *cs, struct rm_ch *ch, const char *qid, const struct rm_store_lost_session *l,
		   uint64_t lost, char *err, size_t errlen)
{
	char *sql = g_strdup_printf(
		"INSERT INTO sessions (collector_id, id, version, run_id, peer, peer_subject, transport, started_ms,"
		" ended_ms, end_reason, messages, records, octets, rejected, accepted, repeats, stale, orphans,"
		" unsupported, invalid, after_invalid, key_conflicts, resource_drops, unbound, seq_gaps, seq_missing,"
		" export_time_backwards) SELECT collector_id, id, %" PRIu64 ", run_id, peer, peer_subject, transport,"
		" started_ms, ended_ms, end_reason, %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", accepted,"
		" repeats, stale, orphans, unsupported, invalid, after_invalid, key_conflicts, resource_drops + "
		"%" PRIu64 ", unbound, seq_gaps, seq_missing, export_time_backwards FROM sessions FINAL"
		" WHERE collector_id = %s AND id = %" PRId64,
		rm_chs_next_version(cs), l->messages, l->records, l->octets, l->rejected, lost, qid, l->id);
	int rc = rm_ch_query(ch, sql, NULL, 0, NULL, NULL, err, errlen);

	g_free(sql);
	return rc;
}

/* The row of a session that was never written, from the journal. */
static int insert_row(struct rm_chstore *cs, struct rm_ch *ch, const struct rm_store_lost_session *l, uint64_t lost,
		      uint64_t now_ms, char *err, size_t errlen)
{
	struct rm_sess_row s = { .id = l->id, .run_id = l->run_id, .started_ms = l->started_ms };
	struct rm_session_counts c = {
		.messages = l->messages, .records = l->records, .octets = l->octets, .rejected = l->rejected
	};
	GByteArray *b = g_byte_array_new();
	int rc = -1;

	if (rm_sess_row_start(&s, l->run_id, l->peer, l->transport, l->started_ms) == 0 &&
	    (!l->subject || !*l->subject || rm_sess_row_peer(&s, l->subject) == 0) &&
	    rm_sess_row_end(&s, "collector restarted: the run that held this session ended before writing it", now_ms,
			    &c) == 0) {
		s.verdicts[RM_V_RESOURCE_DROP] = lost;
		rm_chs_session_row(cs, b, &s);
		rc = rm_ch_query(ch, rm_chs_inserts[T_SESSIONS], b->data, b->len, NULL, NULL, err, errlen);
	}
	g_byte_array_free(b, TRUE);
	free(s.peer);
	free(s.subject);
	free(s.transport);
	free(s.reason);
	return rc;
}

static int insert_drop(struct rm_chstore *cs, struct rm_ch *ch, const char *qid, const struct rm_store_lost_session *l,
		       uint64_t lost, uint64_t now_ms, char *err, size_t errlen)
{
	char detail[300], qd[700], *sql;
	int rc;

	snprintf(detail, sizeof(detail),
		 "%" PRIu64 " records read and not committed when the collector ended without closing the session "
		 "(%" PRIu64 " records and %" PRIu64 " rejected read)%s",
		 lost, l->records, l->rejected, l->partial_octets ? "; and the octets of an incomplete Message" : "");
	rm_ch_quote(detail, qd, sizeof(qd));
	sql = g_strdup_printf(
		"INSERT INTO drops (collector_id, session_id, kind, count, first_ms, last_ms, last_detail)"
		" VALUES (%s, %" PRId64 ", 'collector-crash', %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %s)",
		qid, l->id, lost, now_ms, now_ms, qd);
	rc = rm_ch_query(ch, sql, NULL, 0, NULL, NULL, err, errlen);
	g_free(sql);
	return rc;
}

int rm_chs_session_lost(void *p, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost)
{
	struct rm_chstore *cs = p;
	struct rm_ch_conf conf = cs->conf;
	char qid[2 * RM_CHSTORE_COLLECTOR_ID_MAX + 8];
	struct rm_ch *ch;
	uint64_t read = 0, have_read = l->records + l->rejected;
	int have, rc = -1;

	*lost = 0;
	conf.timeout_ms = RM_CHSTORE_REQUEST_MS;
	conf.connect_timeout_ms = RM_CHSTORE_CONNECT_MS;
	ch = rm_ch_open(&conf, cs->err, sizeof(cs->err));
	if (!ch)
		return -1;
	rm_ch_quote(cs->id, qid, sizeof(qid));
	have = committed(ch, qid, l->id, &read, cs->err, sizeof(cs->err));
	if (have < 0)
		goto out;
	*lost = have_read > read ? have_read - read : 0;
	rc = 0;
	if (have && !*lost)
		goto out; /* everything read is stored */
	rc = have ? rewrite(cs, ch, qid, l, *lost, cs->err, sizeof(cs->err))
		  : insert_row(cs, ch, l, *lost, now_ms, cs->err, sizeof(cs->err));
	if (rc == 0 && *lost)
		rc = insert_drop(cs, ch, qid, l, *lost, now_ms, cs->err, sizeof(cs->err));
	if (l->id >= cs->next_session)
		cs->next_session = l->id + 1; /* IDs continue after the largest stored */
out:
	rm_ch_close(ch);
	if (rc < 0)
		*lost = 0;
	return rc < 0 ? -1 : 0;
}
