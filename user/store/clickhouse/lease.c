// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * lease.c - the collector ID's lease: at a run's start the IDs after the stored
 * ones, whether a running collector holds the ID, what an earlier run left
 * open ended; the runs row written at each heartbeat.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chstore_impl.h"
#include "common/limits.h"
#include "common/log.h"

/* One query's first line of TSV values as unsigned integers; -1 when ClickHouse does not answer. */
static int query_u64(struct rm_ch *ch, const char *sql, uint64_t *v, int n, char *err, size_t errlen)
{
	struct rm_ch_result r = { 0 };
	char *p;
	int rc = rm_ch_query(ch, sql, NULL, 0, NULL, &r, err, errlen);

	if (rc < 0)
		return rc;
	p = r.data;
	for (int i = 0; i < n; i++) {
		v[i] = p ? strtoull(p, &p, 10) : 0;
		while (p && (*p == '\t' || *p == '\n'))
			p++;
	}
	rm_ch_result_free(&r);
	return 0;
}

/*
 * Sessions and epochs an earlier run of this collector left open (it was
 * killed): ended and retired now, as backend.h's run_start, by rows with a
 * larger version. Which rows is decided on each row's latest version
 * (argMax over a plain UInt8), and FINAL is filtered by key columns only:
 * a filter on ended_ms or retired_ms next to FINAL may be applied before
 * the versions collapse and pick up an older one.
 */
static int recover(struct rm_chstore *chs, struct rm_ch *ch, const char *qid, uint64_t now_ms, char *err, size_t errlen)
{
	static const char cause[] = "session ended: collector restarted (the run that received it ended without "
				    "closing its session)";
	char *ver = g_strdup_printf("%" PRIu64, rm_chs_version_next(&chs->version));
	char *now = g_strdup_printf("toNullable(toUInt64(%" PRIu64 "))", now_ms);
	char *reason = g_strdup_printf(
		"if(state = 'open', toNullable(if(reports_accepted = 0, concat('%s', '; no accepted report'),"
		" concat('%s', ' without a final report (last report ', toString(assumeNotNull(last_report_id)), ')',"
		" if(missing_reports > 0, concat('; ', toString(missing_reports), ' reports missing'), '')))), reason)",
		cause, cause);
	char *where[2];
	const struct rm_chstore_set ended[] = {
		{ "version", ver },
		{ "ended_ms", now },
		{ "end_reason", "toNullable('collector restarted: the run that held this session ended without closing "
				"it')" },
	};
	const struct rm_chstore_set retired[] = {
		{ "version", ver },
		{ "outcome", "if(state = 'open', 'incomplete', outcome)" },
		{ "reason", reason },
		{ "retired_ms", now },
	};
	char *sql[3];
	int rc = 0;

	where[0] = g_strdup_printf("collector_id = %s AND id GLOBAL IN (SELECT id FROM sessions WHERE collector_id = %s"
				   " GROUP BY id HAVING argMax(isNull(ended_ms), version))",
				   qid, qid);
	where[1] = g_strdup_printf("collector_id = %s AND id GLOBAL IN (SELECT id FROM epochs WHERE collector_id = %s"
				   " GROUP BY id HAVING argMax(isNull(retired_ms), version))",
				   qid, qid);
	sql[0] = rm_chstore_copy_sql(&rm_stored_sessions, ended, G_N_ELEMENTS(ended), where[0]);
	sql[1] = rm_chstore_copy_sql(&rm_stored_epochs, retired, G_N_ELEMENTS(retired), where[1]);
	sql[2] = NULL;
	for (int i = 0; sql[i] && !rc; i++)
		rc = rm_ch_query(ch, sql[i], NULL, 0, NULL, NULL, err, errlen);
	for (int i = 0; sql[i]; i++)
		g_free(sql[i]);
	g_free(where[0]);
	g_free(where[1]);
	g_free(ver);
	g_free(now);
	g_free(reason);
	return rc;
}

/*
 * Is the latest run of this collector ID held by a running collector
 * (chstore.h)? 0 no (stopped, or silent for RM_CHSTORE_LIVE_MS), 1 yes
 * (chs->err says which run), -1 ClickHouse did not answer (err).
 */
static int id_in_use(struct rm_chstore *chs, struct rm_ch *ch, const char *qid, char *err, size_t errlen)
{
	char *sql = g_strdup_printf("SELECT id, argMax(isNull(stopped_ms), version), max(version) FROM runs"
				    " WHERE collector_id = %s GROUP BY id ORDER BY id DESC LIMIT 1 FORMAT TabSeparated",
				    qid);
	uint64_t v[3], w[3], age_ms, until;
	int rc = query_u64(ch, sql, v, 3, err, errlen);

	if (rc < 0 || !v[0] || !v[1])
		goto out;
	age_ms = rm_clock_wall_us() > v[2] ? (rm_clock_wall_us() - v[2]) / 1000 : 0;
	if (age_ms >= RM_CHSTORE_LIVE_MS)
		goto out;
	/* Written lately: alive if it writes again before RM_CHSTORE_LIVE_MS passed since (a clock ahead: at most that). */
	until = rm_clock_mono_ms() + (RM_CHSTORE_LIVE_MS - age_ms);
	while (rm_clock_mono_ms() < until) {
		usleep(RM_CHSTORE_WATCH_POLL_MS * 1000);
		if (query_u64(ch, sql, w, 3, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		if (w[0] == v[0] && w[2] == v[2])
			continue;
		if (w[1]) {
			char when[64];
			time_t t = (time_t)(w[2] / 1000000);
			struct tm tm;

			gmtime_r(&t, &tm);
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
			snprintf(chs->err, sizeof(chs->err),
				 "collector ID %s is in use by a running collector (run %" PRIu64
				 ", last written %s): give each collector its own --collector-id",
				 chs->id, w[0], when);
			rc = 1;
		}
		goto out;
	}
out:
	g_free(sql);
	return rc;
}

/*
 * Does the store have the table observation_points (a store made before the
 * names were kept has not)? Sets chs->points_kept; logs when it has not, or
 * when ClickHouse did not answer (names are not written in this run then:
 * an INSERT into a missing table would hold up every other row).
 */
static void points_table(struct rm_chstore *chs, struct rm_ch *ch)
{
	char err[512] = "";
	uint64_t n = 0;

	chs->points_kept = ch &&
			   query_u64(ch,
				     "SELECT count() FROM system.tables WHERE database = currentDatabase()"
				     " AND name = 'observation_points' FORMAT TabSeparated",
				     &n, 1, err, sizeof(err)) == 0 &&
			   n > 0;
	if (chs->points_kept)
		return;
	if (!ch || *err)
		rm_log(RM_LOG_WARNING,
		       "ClickHouse store: could not check for the table observation_points (%s): the observation "
		       "points' names are not stored in this run (report shows their IDs)",
		       *err ? err : "no connection");
	else
		rm_log(RM_LOG_WARNING,
		       "ClickHouse store: no table observation_points (a store made by an earlier version): the "
		       "observation points' names are not stored; run `rocemeter collect --store-init` with this "
		       "--store to add it");
}

/*
 * IDs after the largest ones of this collector, and what an earlier run
 * left open ended: one blocking exchange at a run's start (before the
 * loop): the spool first, then whether the ID is in use. When ClickHouse
 * does not answer (or the spool waits), IDs from the clock (chstore.h).
 * 0, or RM_BACKEND_REFUSED with chs->err.
 */
int rm_chs_start_ids(struct rm_chstore *chs, uint64_t now_ms)
{
	char err[512] = "", qid[2 * RM_CHSTORE_COLLECTOR_ID_MAX + 8], *sql;
	struct rm_ch_conf conf = chs->conf;
	struct rm_ch *ch;
	uint64_t v[6] = { 0 };
	int rc, spooled;

	conf.timeout_ms = RM_CHSTORE_REQUEST_MS;
	conf.connect_timeout_ms = RM_CHSTORE_CONNECT_MS;
	rm_chs_spool_dir_make(chs->spool_dir);
	if (rm_chs_spool_dir_check(chs->spool_dir, chs->err, sizeof(chs->err)) < 0)
		return RM_BACKEND_REFUSED;
	rm_chs_spool_others(chs);
	ch = rm_ch_open(&conf, err, sizeof(err));
	rm_ch_quote(chs->id, qid, sizeof(qid));
	spooled = rm_chs_spool_send(chs, ch);
	if (spooled == RM_BACKEND_REFUSED) {
		rm_ch_close(ch);
		return RM_BACKEND_REFUSED;
	}
	rc = ch ? id_in_use(chs, ch, qid, err, sizeof(err)) : -1;
	if (rc >= 0) {
		pthread_mutex_lock(&chs->mu);
		chs->reached = 1;
		pthread_mutex_unlock(&chs->mu);
	}
	if (rc == 1) {
		rm_ch_close(ch);
		return RM_BACKEND_REFUSED;
	}
	if (rc == 0) {
		sql = g_strdup_printf("SELECT (SELECT max(id) FROM runs WHERE collector_id = %s),"
				      " (SELECT max(id) FROM sessions WHERE collector_id = %s),"
				      " (SELECT max(id) FROM epochs WHERE collector_id = %s),"
				      " (SELECT max(id) FROM raw_records WHERE collector_id = %s),"
				      " (SELECT count() FROM raw_records WHERE collector_id = %s),"
				      " (SELECT sum(length(record) + length(ifNull(template, ''))) FROM raw_records"
				      " WHERE collector_id = %s) FORMAT TabSeparated",
				      qid, qid, qid, qid, qid, qid);
		rc = query_u64(ch, sql, v, 6, err, sizeof(err));
		g_free(sql);
	}
	if (rc < 0 && ch && rm_chstore_refusal_hint(err)) {
		snprintf(chs->err, sizeof(chs->err), "ClickHouse store: %s: refused, %s", err,
			 rm_chstore_refusal_hint(err));
		rm_ch_close(ch);
		return RM_BACKEND_REFUSED;
	}
	if (rc == 0 && !spooled) {
		rc = -1;
		snprintf(err, sizeof(err), "the spool of an earlier run waits");
	}
	points_table(chs, rc == 0 ? ch : NULL);
	if (rc == 0 && (rc = recover(chs, ch, qid, now_ms, err, sizeof(err))) == 0) {
		chs->next_run = (int64_t)v[0] + 1;
		chs->next_session = (int64_t)v[1] + 1;
		chs->next_epoch = (int64_t)v[2] + 1;
		chs->next_raw = (int64_t)v[3] + 1;
		chs->raw_rows = v[4];
		chs->raw_bytes = v[5];
		chs->recovered = 1;
	} else {
		int64_t base = (int64_t)(now_ms << 20);

		rm_log(RM_LOG_WARNING,
		       "ClickHouse store: %s; IDs continue from the clock (%" PRId64 "), sessions an earlier run left "
		       "open are ended at the next start that reaches ClickHouse",
		       err, base);
		chs->next_run = chs->next_session = chs->next_epoch = chs->next_raw = base;
	}
	rm_ch_close(ch);
	return 0;
}

/*
 * The runs row, whole (ReplacingMergeTree keeps whole rows): at the start,
 * at each heartbeat, and with stopped_ms at the stop. A new one replaces
 * the one still waiting in the batch or the queue (only the latest version
 * counts), so that an outage does not fill the buffer with heartbeats; a
 * row the sender holds in flight stays (at most one more). Runs rows of
 * the spool (earlier runs) are not touched.
 */
void rm_chs_run_row(struct rm_chstore *chs)
{
	GByteArray *b = chs->cur->body[T_RUNS];

	g_byte_array_set_size(b, 0);
	pthread_mutex_lock(&chs->mu);
	for (struct batch *q = chs->head; q; q = q->next) {
		size_t n = q->body[T_RUNS]->len;

		if (q->from_spool || !n)
			continue;
		g_byte_array_set_size(q->body[T_RUNS], 0);
		q->bytes -= n;
		chs->queued_bytes -= n;
	}
	pthread_mutex_unlock(&chs->mu);

	rm_chs_put_row(b, &rm_stored_runs, chs->id, rm_chs_version_next(&chs->version), &chs->run);
}
