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
	struct rm_chstore *chs = (struct rm_chstore *)p;
	uint64_t v;

	pthread_mutex_lock(&chs->mu);
	v = chs->inserted_seq;
	pthread_mutex_unlock(&chs->mu);
	return v;
}

uint64_t rm_chs_handed(const void *p)
{
	return ((const struct rm_chstore *)p)->handed;
}

int rm_chs_journal_dir(void *p, char *buf, size_t len)
{
	struct rm_chstore *chs = p;
	size_t n = strlen(chs->spool_path);

	/* SPOOL_DIR/ID.TAG.spool -> SPOOL_DIR/ID.TAG.received: one journal per collector ID and store */
	if (n < 6 || (size_t)snprintf(buf, len, "%.*s.received", (int)(n - 6), chs->spool_path) >= len)
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

/* A new version of session id's stored row (the session matched where): its columns of set, the rest as stored. */
static int rewrite(struct rm_ch *ch, const char *qid, int64_t id, const struct rm_chstore_set *set, size_t n, char *err,
		   size_t errlen)
{
	char *where = g_strdup_printf("collector_id = %s AND id = %" PRId64, qid, id);
	char *sql = rm_chstore_copy_sql(&rm_stored_sessions, set, n, where);
	int rc = rm_ch_query(ch, sql, NULL, 0, NULL, NULL, err, errlen);

	g_free(where);
	g_free(sql);
	return rc;
}

/* A new version of the stored row of l: the counts read, resource_drops + lost. */
static int rewrite_lost(struct rm_chstore *chs, struct rm_ch *ch, const char *qid,
			const struct rm_store_lost_session *l, uint64_t lost, char *err, size_t errlen)
{
	char v[5][32], drops[48];
	const struct rm_chstore_set set[] = {
		{ "version", v[0] }, { "messages", v[1] }, { "records", v[2] },
		{ "octets", v[3] },  { "rejected", v[4] }, { "resource_drops", drops },
	};

	snprintf(v[0], sizeof(v[0]), "%" PRIu64, rm_chs_version_next(&chs->version));
	snprintf(v[1], sizeof(v[1]), "%" PRIu64, l->messages);
	snprintf(v[2], sizeof(v[2]), "%" PRIu64, l->records);
	snprintf(v[3], sizeof(v[3]), "%" PRIu64, l->octets);
	snprintf(v[4], sizeof(v[4]), "%" PRIu64, l->rejected);
	snprintf(drops, sizeof(drops), "resource_drops + %" PRIu64, lost);
	return rewrite(ch, qid, l->id, set, G_N_ELEMENTS(set), err, errlen);
}

/* The row of a session that was never written, from the journal. */
static int insert_row(struct rm_chstore *chs, struct rm_ch *ch, const struct rm_store_lost_session *l, uint64_t lost,
		      uint64_t now_ms, char *err, size_t errlen)
{
	struct rm_sess_row s;
	int rc = -1;

	if (rm_sess_row_lost(&s, l, lost, now_ms) == 0)
		rc = rm_chs_insert_row(ch, &rm_stored_sessions, chs->id, rm_chs_version_next(&chs->version), &s, err,
				       errlen);
	rm_sess_row_clear(&s);
	return rc;
}

static int insert_drop(struct rm_chstore *chs, struct rm_ch *ch, const struct rm_store_lost_session *l, uint64_t lost,
		       uint64_t now_ms, char *err, size_t errlen)
{
	char detail[300];
	struct rm_drop_row d;

	snprintf(detail, sizeof(detail),
		 "%" PRIu64 " records read and not committed when the collector ended without closing the session "
		 "(%" PRIu64 " records and %" PRIu64 " rejected read)%s",
		 lost, l->records, l->rejected, l->partial_octets ? "; and the octets of an incomplete Message" : "");
	d = rm_drop_row_of(l->id, "collector-crash", detail, now_ms);
	d.count = lost;
	return rm_chs_insert_row(ch, &rm_stored_drops, chs->id, 0, &d, err, errlen);
}

int rm_chs_session_lost(void *p, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost)
{
	struct rm_chstore *chs = p;
	struct rm_ch_conf conf = chs->conf;
	char qid[2 * RM_CHSTORE_COLLECTOR_ID_MAX + 8];
	struct rm_ch *ch;
	uint64_t read = 0, have_read = l->records + l->rejected;
	int have, rc = -1;

	*lost = 0;
	conf.timeout_ms = RM_CHSTORE_REQUEST_MS;
	conf.connect_timeout_ms = RM_CHSTORE_CONNECT_MS;
	ch = rm_ch_open(&conf, chs->err, sizeof(chs->err));
	if (!ch)
		return -1;
	rm_ch_quote(chs->id, qid, sizeof(qid));
	have = committed(ch, qid, l->id, &read, chs->err, sizeof(chs->err));
	if (have < 0)
		goto out;
	*lost = have_read > read ? have_read - read : 0;
	rc = 0;
	if (have && !*lost)
		goto out; /* everything read is stored */
	rc = have ? rewrite_lost(chs, ch, qid, l, *lost, chs->err, sizeof(chs->err))
		  : insert_row(chs, ch, l, *lost, now_ms, chs->err, sizeof(chs->err));
	if (rc == 0 && *lost)
		rc = insert_drop(chs, ch, l, *lost, now_ms, chs->err, sizeof(chs->err));
	if (l->id >= chs->next_session)
		chs->next_session = l->id + 1; /* IDs continue after the largest stored */
out:
	rm_ch_close(ch);
	if (rc < 0)
		*lost = 0;
	return rc < 0 ? -1 : 0;
}

/* ---------------- an exporter's Reliability record (rocemeter/ipfix_ie.h RM_TID_RELIABILITY) ---------------- */

int rm_chs_session_acked(void *p, const struct rm_store_acked *a, uint64_t now_ms, struct rm_store_acked_result *res)
{
	struct rm_chstore *chs = p;
	struct acked_req *r = calloc(1, sizeof(*r));

	*res = (struct rm_store_acked_result){ .why = "out of memory" };
	if (!r)
		return 0;
	snprintf(r->peer, sizeof(r->peer), "%s", a->peer);
	snprintf(r->peer_alt, sizeof(r->peer_alt), "%s", a->peer_alt ? a->peer_alt : a->peer);
	snprintf(r->subject, sizeof(r->subject), "%s", a->subject);
	r->reporting_id = a->reporting_id;
	r->records = a->records;
	r->unread_max = a->unread_max;
	r->ended_ms = a->ended_ms;
	r->now_ms = now_ms;
	pthread_mutex_lock(&chs->mu);
	r->next = chs->acked;
	chs->acked = r;
	pthread_cond_signal(&chs->cv);
	pthread_mutex_unlock(&chs->mu);
	res->why = NULL;
	return 2;
}

uint64_t rm_chs_acked_drops(void *p)
{
	struct rm_chstore *chs = p;
	uint64_t v;

	pthread_mutex_lock(&chs->mu);
	v = chs->acked_drops;
	pthread_mutex_unlock(&chs->mu);
	return v;
}

/*
 * The latest version of the session r may speak of (as the SQLite store's
 * acked_match): v = id, records + rejected, open (1), started_ms, version.
 * 1 found, 0 none, -1 no answer.
 */
static int acked_match(struct rm_ch *ch, const char *qid, const struct acked_req *r, uint64_t v[5], char *err,
		       size_t errlen)
{
	char qp[200], qa[200], qs[600], *sql;
	struct rm_ch_result res = { 0 };
	char *p;
	int rc;

	rm_ch_quote(r->peer, qp, sizeof(qp));
	rm_ch_quote(r->peer_alt, qa, sizeof(qa));
	rm_ch_quote(r->subject, qs, sizeof(qs));
	sql = g_strdup_printf(
		"SELECT id, argMax(records + rejected, version), argMax(isNull(ended_ms), version),"
		" argMax(started_ms, version), max(version) FROM sessions WHERE collector_id = %s AND id < %" PRId64
		" GROUP BY id HAVING argMax(ifNull(peer, ''), version) IN (%s, %s) AND"
		" argMax(ifNull(peer_subject, ''), version) = %s ORDER BY id DESC LIMIT 1 FORMAT TabSeparated",
		qid, r->reporting_id, qp, qa, qs);
	rc = rm_ch_query(ch, sql, NULL, 0, NULL, &res, err, errlen);
	g_free(sql);
	if (rc < 0)
		return -1;
	p = res.data;
	rc = p && *p ? 1 : 0;
	for (int i = 0; i < 5; i++) {
		v[i] = p ? strtoull(p, &p, 10) : 0;
		while (p && (*p == '\t' || *p == '\n'))
			p++;
	}
	rm_ch_result_free(&res);
	return rc;
}

/* One record: matched, counted and logged. why: the reason it was not counted, or NULL. */
static const char *acked_one(struct rm_chstore *chs, struct rm_ch *ch, const char *qid, const struct acked_req *r,
			     int64_t *id, uint64_t *read, uint64_t *lost, char *err, size_t errlen)
{
	uint64_t v[5], n = 0;
	char detail[300], *sql;
	struct rm_drop_row d;
	const char *why;
	struct rm_ch_result res = { 0 };
	int rc = ch ? acked_match(ch, qid, r, v, err, errlen) : -1;

	if (rc < 0)
		return err[0] ? err : "ClickHouse did not answer";
	if (rc == 0)
		return "no earlier session of this exporter from that address and port";
	*id = (int64_t)v[0];
	*read = v[1];
	if (v[2])
		return "that session is still open";
	if (r->ended_ms && v[3] > r->ended_ms + 60000)
		return "that session started after the one reported had ended";
	sql = g_strdup_printf("SELECT count() FROM drops WHERE collector_id = %s AND session_id = %" PRId64
			      " AND kind = 'unread-at-crash' FORMAT TabSeparated",
			      qid, *id);
	rc = rm_ch_query(ch, sql, NULL, 0, NULL, &res, err, errlen);
	g_free(sql);
	if (rc == 0 && res.data)
		n = strtoull(res.data, NULL, 10);
	rm_ch_result_free(&res);
	if (rc < 0)
		return err;
	if (n)
		return "that session was reported before";
	why = rm_store_acked_unread(r->records, *read, r->unread_max, lost);
	if (why)
		return why;
	if (!*lost)
		return NULL;
	snprintf(detail, sizeof(detail),
		 "%" PRIu64 " records the collector's kernel acknowledged and the collector never read (the exporter's "
		 "next session reported %" PRIu64 " acknowledged; %" PRIu64 " read)",
		 *lost, r->records, *read);
	d = rm_drop_row_of(*id, "unread-at-crash", detail, r->now_ms);
	d.count = *lost;
	rc = rm_chs_insert_row(ch, &rm_stored_drops, chs->id, 0, &d, err, errlen);
	if (rc == 0) {
		/* the sender's thread: a version of its own, after the stored one */
		char ver[32], drops[48];
		const struct rm_chstore_set set[] = { { "version", ver }, { "resource_drops", drops } };

		snprintf(ver, sizeof(ver), "%" PRIu64, rm_clock_wall_us() > v[4] ? rm_clock_wall_us() : v[4] + 1);
		snprintf(drops, sizeof(drops), "resource_drops + %" PRIu64, *lost);
		rc = rewrite(ch, qid, *id, set, G_N_ELEMENTS(set), err, errlen);
	}
	return rc < 0 ? err : NULL;
}

void rm_chs_acked_process(struct rm_chstore *chs, struct rm_ch *ch)
{
	char qid[2 * RM_CHSTORE_COLLECTOR_ID_MAX + 8];
	struct acked_req *r = chs->acked;

	chs->acked = NULL;
	pthread_mutex_unlock(&chs->mu);
	rm_ch_quote(chs->id, qid, sizeof(qid));
	while (r) {
		struct acked_req *next = r->next;
		char err[512] = "";
		int64_t id = 0;
		uint64_t read = 0, lost = 0;
		const char *why = acked_one(chs, ch, qid, r, &id, &read, &lost, err, sizeof(err));

		if (why)
			rm_log(RM_LOG_NOTICE,
			       "session %" PRId64
			       ": its exporter reports an earlier session from %s that delivered %" PRIu64
			       " records; not counted: %s",
			       r->reporting_id, r->peer, r->records, why);
		else
			rm_log(RM_LOG_WARNING,
			       "session %" PRId64 ": its exporter reports that session %" PRId64
			       " from %s delivered %" PRIu64 " records; %" PRIu64 " were read: %" PRIu64
			       " never read (collector resource drop 'unread-at-crash')",
			       r->reporting_id, id, r->peer, r->records, read, lost);
		if (!why) {
			pthread_mutex_lock(&chs->mu);
			chs->acked_drops += lost;
			pthread_mutex_unlock(&chs->mu);
		}
		free(r);
		r = next;
	}
	pthread_mutex_lock(&chs->mu);
}
