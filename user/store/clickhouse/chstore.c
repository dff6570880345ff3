// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chstore.c - the collector's ClickHouse store: the calls of the store interface
 * (backend.h) on the collector's thread, open and close. Rows are serialized
 * on this thread (rows.c, batch.c) and inserted by the sender thread
 * (sender.c). See chstore.h;
 * chstore_impl.h is what the files of clickhouse/ share.
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

/* ---------------- the calls of backend.h ---------------- */

static const char *ch_error(void *p)
{
	struct rm_chstore *chs = p;

	return chs->err;
}

static int ch_begin(void *p)
{
	return 0;
}

static int ch_commit(void *p)
{
	struct rm_chstore *chs = p;
	uint64_t m = rm_clock_mono_ms();

	if (chs->run.id && !chs->run.stopped_ms && m - chs->last_heartbeat_ms >= RM_CHSTORE_HEARTBEAT_MS) {
		rm_chs_run_row(chs); /* the heartbeat: this collector ID is in use (chstore.h) */
		chs->last_heartbeat_ms = m;
	}
	if (chs->drops_unlogged && m - chs->drops_logged_ms >= RM_CHSTORE_DROP_LOG_MS)
		rm_chs_log_drops(chs);
	/* A batch of a quarter of the bound goes at once: the sender drains the buffer while it is filled,
	 * instead of a bound's worth of rows waiting for the next second (drops in a healthy store). */
	if (rm_clock_mono_ms() - chs->last_handoff_ms < RM_CHSTORE_FLUSH_MS &&
	    rm_chs_batch_size(chs->cur) < MIN(RM_CHSTORE_FLUSH_BYTES, chs->bound / 4))
		return 0;
	return rm_chs_handoff(chs);
}

static int ch_flush(void *p)
{
	return rm_chs_handoff(p);
}

static int ch_unavailable(const void *p)
{
	struct rm_chstore *chs = (struct rm_chstore *)p;
	int d;

	pthread_mutex_lock(&chs->mu);
	d = chs->down;
	pthread_mutex_unlock(&chs->mu);
	return d;
}

static uint64_t ch_drops(const void *p)
{
	return ((const struct rm_chstore *)p)->store_drops;
}

static int64_t ch_run_start(void *p, const char *listen, const char *transport, const struct rm_rules_limits *lim,
			    uint32_t max_raw_records, uint32_t pen, uint64_t now_ms)
{
	struct rm_chstore *chs = p;

	if (rm_chs_start_ids(chs, now_ms) == RM_BACKEND_REFUSED)
		return RM_BACKEND_REFUSED;
	chs->raw_limit = max_raw_records;
	chs->run = rm_run_row_of(strdup(listen ? listen : ""), strdup(transport ? transport : ""), lim, max_raw_records,
				 pen, now_ms);
	chs->run.id = chs->next_run++;
	if (!chs->run.listen || !chs->run.transport) {
		snprintf(chs->err, sizeof(chs->err), "out of memory");
		return -1;
	}
	rm_chs_run_row(chs);
	chs->last_heartbeat_ms = rm_clock_mono_ms();
	return chs->run.id;
}

static int ch_run_stop(void *p, int64_t run_id, uint64_t now_ms)
{
	struct rm_chstore *chs = p;

	chs->run.stopped_ms = now_ms ? now_ms : 1;
	rm_chs_run_row(chs);
	return 0;
}

static struct rm_sess_row *sess_get(struct rm_chstore *chs, int64_t id)
{
	return rm_sess_rows_get(chs->sessions, id, NULL);
}

static int64_t ch_session_start(void *p, int64_t run_id, const char *peer, const char *transport, uint64_t now_ms)
{
	struct rm_chstore *chs = p;
	int64_t id = chs->next_session;
	struct rm_sess_row *s = sess_get(chs, id);

	if (!s)
		return -1;
	chs->next_session++;
	chs->sessions_started++;
	return rm_sess_row_start(s, run_id, peer, transport, now_ms) ? -1 : id;
}

static int ch_session_peer(void *p, int64_t session_id, const char *subject, const char *name)
{
	struct rm_sess_row *s = sess_get(p, session_id);

	return s ? rm_sess_row_peer(s, subject, name) : -1;
}

/* An open session's counts so far: its row is written again (a new version), as SQLite's is. */
static int ch_session_counts(void *p, int64_t session_id, const struct rm_session_counts *c)
{
	struct rm_chstore *chs = p;
	struct rm_sess_row *s = g_hash_table_lookup(chs->sessions, &session_id);

	if (!s || s->ended_ms)
		return s ? 0 : -1;
	s->dirty = 1;
	s->c = *c;
	if (c->verdicts)
		memcpy(s->verdicts, c->verdicts, sizeof(s->verdicts));
	s->c.verdicts = NULL;
	return 0;
}

static int ch_session_end(void *p, int64_t session_id, const char *reason, uint64_t now_ms,
			  const struct rm_session_counts *c)
{
	struct rm_sess_row *s = sess_get(p, session_id);

	return s ? rm_sess_row_end(s, reason, now_ms, c) : -1;
}

/*
 * A live epoch waits by reference (serialized at the hand-over, once
 * however often it changed); a retired one is serialized now (the rules
 * free it after this call), or dropped when the buffer is full.
 */
static int ch_epoch(void *p, struct rm_epoch *e)
{
	struct rm_chstore *chs = p;

	if (!e->store_id)
		e->store_id = chs->next_epoch++;
	if (!e->retired_ms) {
		if (!e->store_slot) {
			g_ptr_array_add(chs->live, e);
			e->store_slot = chs->live->len;
		}
		return 0;
	}
	if (!rm_chs_room(chs, 512) && e->store_row) {
		/* Its row is in ClickHouse: the retirement waits as a live epoch does, never a drop (a drop
		 * counts an epoch not stored); the store frees it once written (serialize_live). */
		e->sink_keeps = 1;
		if (!e->store_slot) {
			g_ptr_array_add(chs->live, e);
			e->store_slot = chs->live->len;
		}
		return 0;
	}
	if (e->store_slot) {
		chs->live->pdata[e->store_slot - 1] = NULL;
		e->store_slot = 0;
	}
	if (!rm_chs_room(chs, 512)) {
		char d[200];

		snprintf(d, sizeof(d), "epoch %" PRIu64 " (%s) not stored: ClickHouse store buffer full",
			 e->key.epoch_id, rm_outcome_name(e->outcome));
		rm_chs_store_drop(chs, (int64_t)e->session_id, d);
		return 0;
	}
	rm_chstore_epoch_row(chs->cur->body[T_EPOCHS], chs->id, e, rm_chs_version_next(&chs->version));
	chs->cur->retired++;
	return 0;
}

static int ch_raw(void *p, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		  const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		  size_t tmpl_len, uint64_t now_ms)
{
	struct rm_chstore *chs = p;
	struct rm_raw_row row =
		rm_raw_row_of(session_id, domain, tid, r, verdict, reason, raw, len, tmpl, tmpl_len, now_ms);

	if (chs->raw_rows >= chs->raw_limit) {
		char d[160];

		snprintf(d, sizeof(d), "raw record not kept (%s): max_raw_records %u reached", verdict, chs->raw_limit);
		return rm_chs_count_drop(chs, session_id, "raw-record-limit", d, now_ms) < 0 ? -1 : 0;
	}
	if (!rm_chs_room(chs, len + tmpl_len + 256)) {
		char d[200];

		snprintf(d, sizeof(d), "raw record not kept (%s): ClickHouse store buffer full", verdict);
		rm_chs_store_drop(chs, session_id, d);
		return 0;
	}
	row.id = chs->next_raw++;
	rm_chs_put_row(chs->cur->body[T_RAW], &rm_stored_raw, chs->id, 0, &row);
	chs->cur->raw++;
	chs->raw_rows++;
	chs->raw_bytes += len + (tmpl ? tmpl_len : 0);
	return 1;
}

static int ch_drop(void *p, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	return rm_chs_count_drop(p, session_id, kind, detail, now_ms);
}

static int ch_connections(void *p, uint64_t minute_ms, const char *source, const char *outcome, uint64_t count,
			  uint64_t first_ms, uint64_t last_ms, const char *detail)
{
	struct rm_chstore *chs = p;
	struct rm_conn_row row = { .minute_ms = minute_ms,
				   .count = count,
				   .first_ms = first_ms,
				   .last_ms = last_ms,
				   .source = source,
				   .outcome = outcome,
				   .detail = detail };

	if (!rm_chs_room(chs, 512)) {
		char d[200];

		snprintf(d, sizeof(d),
			 "%" PRIu64 " refused connections (%s) from %s not stored: ClickHouse store "
			 "buffer full",
			 count, outcome, source);
		rm_chs_store_drop(chs, 0, d);
		return 0;
	}
	rm_chs_put_row(chs->cur->body[T_CONNS], &rm_stored_conns, chs->id, 0, &row);
	chs->cur->conns++;
	return 0;
}

static int ch_run_limit(void *p, int64_t run_id, const char *name, uint64_t value)
{
	struct rm_chstore *chs = p;
	struct rm_limit_row row = { .run_id = run_id, .value = value, .seq = chs->limit_seq++, .name = name };

	rm_chs_put_row(chs->cur->body[T_LIMITS], &rm_stored_limits, chs->id, 0, &row);
	return 0;
}

/*
 * An observation point's name and its exporter (observation_points, a
 * ReplacingMergeTree: the latest version per collector, exporter identity,
 * domain and ID). Not kept by a store made before that table (the start
 * said so: points_kept 0); a name the buffer cannot take is a store drop.
 */
static int ch_observation_point(void *p, const struct rm_store_point *pt, uint64_t now_ms)
{
	struct rm_chstore *chs = p;
	const char *pn = pt->peer_name ? pt->peer_name : "", *ps = pt->peer_subject ? pt->peer_subject : "";
	struct rm_point_row row = { .domain = pt->domain,
				    .id = pt->id,
				    .updated_ms = now_ms,
				    .name = pt->name,
				    .peer_name = pn,
				    .peer_subject = ps };

	if (!chs->points_kept)
		return 0;
	if (!rm_chs_room(chs, 64 + strlen(chs->id) + strlen(pn) + strlen(ps) + strlen(pt->name))) {
		char d[200];

		snprintf(d, sizeof(d),
			 "the name of observation point %" PRIu64
			 " (domain %u) not stored: ClickHouse store buffer full",
			 pt->id, pt->domain);
		rm_chs_store_drop(chs, 0, d);
		return 0;
	}
	rm_chs_put_row(chs->cur->body[T_POINTS], &rm_stored_points, chs->id, rm_chs_version_next(&chs->version), &row);
	return 0;
}

static uint64_t ch_raw_bytes(void *p)
{
	return ((struct rm_chstore *)p)->raw_bytes;
}

uint64_t rm_chstore_waiting(struct rm_chstore *chs)
{
	return rm_chs_batch_size(chs->cur) + rm_chs_queued(chs);
}

static uint64_t ch_buffer_bytes(void *p)
{
	return rm_chstore_waiting(p);
}

static uint64_t ch_buffer_capacity(void *p)
{
	return ((struct rm_chstore *)p)->bound;
}

static void ch_set_budget(void *p, struct rm_budget *b)
{
	((struct rm_chstore *)p)->budget = b;
}

/*
 * At close, after the last hand-over: a kept retirement that never found
 * room is a "store" drop (its row stays in ClickHouse without it), freed.
 */
static void drop_kept(struct rm_chstore *chs)
{
	for (guint i = 0; i < chs->live->len; i++) {
		struct rm_epoch *e = chs->live->pdata[i];
		char d[200];

		if (!e)
			continue;
		e->store_slot = 0;
		if (!e->sink_keeps)
			continue;
		snprintf(d, sizeof(d),
			 "epoch %" PRIu64 " (%s): its retirement not stored: ClickHouse store buffer full",
			 e->key.epoch_id, rm_outcome_name(e->outcome));
		rm_chs_store_drop(chs, (int64_t)e->session_id, d);
		rm_rules_epoch_free(e);
		rm_budget_give(chs->budget, RM_BUDGET_EPOCH_BYTES);
	}
	g_ptr_array_set_size(chs->live, 0);
}

static const char *ch_collector_id(void *p)
{
	return ((struct rm_chstore *)p)->id;
}

/* ---------------- open, close ---------------- */

static void ch_close(void *p)
{
	struct rm_chstore *chs = p;
	int joined = 1, waits = 0;

	if (!chs)
		return;
	if (chs->thread_up) {
		struct timespec ts;

		rm_chs_handoff(chs);
		drop_kept(chs);
		pthread_mutex_lock(&chs->mu);
		chs->stopping = 1;
		chs->stop_at_ms = rm_clock_mono_ms() + RM_CHSTORE_CLOSE_WAIT_MS;
		pthread_cond_broadcast(&chs->cv);
		pthread_mutex_unlock(&chs->mu);
		/* An INSERT under way ends within its own timeout. */
		ts = rm_clock_wall_deadline(((RM_CHSTORE_CLOSE_WAIT_MS + RM_CHSTORE_REQUEST_MS) / 1000 + 1) * 1000);
		joined = pthread_timedjoin_np(chs->thread, NULL, &ts) == 0;
		pthread_mutex_lock(&chs->mu);
		waits = chs->inflight || chs->head;
		pthread_mutex_unlock(&chs->mu);
	}
	rm_chs_log_drops(chs);
	if (waits) {
		struct batch *lists[2];
		char err[800], what[200];
		int rc, skip_run;

		pthread_mutex_lock(&chs->mu);
		lists[0] = chs->inflight;
		lists[1] = chs->head;
		/* a run that never reached ClickHouse and received no session: its runs and limits rows are not kept */
		skip_run = !chs->reached && !chs->sessions_started;
		rc = rm_chs_spool_write(chs, lists, skip_run, what, sizeof(what), err, sizeof(err));
		pthread_mutex_unlock(&chs->mu);
		if (rc == 0 && *what) {
			rm_log(RM_LOG_NOTICE,
			       "ClickHouse store: not sent within %u ms at close, spooled to %s (sent at the next "
			       "start of collector ID %s with this store): %s",
			       RM_CHSTORE_CLOSE_WAIT_MS, chs->spool_path, chs->id, what);
		} else if (rc == 0 && skip_run) {
			rm_log(RM_LOG_NOTICE,
			       "ClickHouse store: this run never reached ClickHouse and received no session: its runs "
			       "row is not spooled");
		} else if (rc < 0) {
			uint64_t lost = 0;

			for (int q = 0; q < 2; q++)
				for (const struct batch *b = lists[q]; b; b = b->next)
					lost += (b->sent[T_EPOCHS] ? 0 : b->retired) + (b->sent[T_RAW] ? 0 : b->raw) +
						(b->sent[T_CONNS] ? 0 : b->conns);
			chs->store_drops += lost;
			rm_log(RM_LOG_ERR,
			       "ClickHouse store: not sent within %u ms at close and not spooled (collector resource "
			       "drops of kind store): %s; spool: %s",
			       RM_CHSTORE_CLOSE_WAIT_MS, what, err);
		}
	}
	if (chs->thread_up)
		rm_log(RM_LOG_INFO, "ClickHouse store closed: %" PRIu64 " store drops", chs->store_drops);
	if (!joined)
		return; /* the sender still holds the store: leave it to the process's exit */
	for (int q = 0; q < 2; q++) {
		struct batch *b = q ? chs->head : chs->inflight;

		while (b) {
			struct batch *next = b->next;

			rm_chs_batch_free(b);
			b = next;
		}
	}
	rm_chs_batch_free(chs->cur);
	drop_kept(chs);
	g_ptr_array_free(chs->live, TRUE);
	g_hash_table_destroy(chs->sessions);
	g_hash_table_destroy(chs->drops);
	g_hash_table_destroy(chs->drops_unlogged_by_session);
	pthread_mutex_destroy(&chs->mu);
	pthread_cond_destroy(&chs->cv);
	free((char *)chs->run.listen);
	free((char *)chs->run.transport);
	free(chs);
}

int rm_chstore_check_id(const char *id, char *err, size_t errlen)
{
	return rm_collector_id_check(id, err, errlen);
}

int rm_chstore_default_id(char *buf, size_t len, char *err, size_t errlen)
{
	char host[256];

	if (gethostname(host, sizeof(host)) < 0) {
		int e = errno;

		snprintf(err, errlen, "collector_id: the host name: %s", strerror(e));
		return -e;
	}
	host[sizeof(host) - 1] = '\0';
	if (strlen(host) > RM_CHSTORE_COLLECTOR_ID_MAX)
		host[RM_CHSTORE_COLLECTOR_ID_MAX] = '\0';
	snprintf(buf, len, "%s", host);
	return rm_chstore_check_id(buf, err, errlen);
}

struct rm_chstore *rm_chstore_open(const struct rm_ch_conf *conf, const char *collector_id, uint64_t buffer_bytes,
				   const char *spool_dir, char *err, size_t errlen)
{
	struct rm_chstore *chs = calloc(1, sizeof(*chs));

	if (!chs) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	chs->conf = *conf;
	chs->conf.connect_timeout_ms = RM_CHSTORE_CONNECT_MS;
	chs->conf.timeout_ms = RM_CHSTORE_REQUEST_MS;
	/*
	 * An INSERT into a Distributed table returns once every shard has its
	 * rows, not when they are queued on the receiving server: a collector
	 * restarted at once then sees its largest IDs (docs/fleet.md "Writing").
	 * Tables that are not Distributed ignore the setting.
	 */
	snprintf(chs->conf.settings, sizeof(chs->conf.settings), "insert_distributed_sync=1");
	chs->bound = buffer_bytes ? buffer_bytes : RM_CHSTORE_BUFFER_DEFAULT;
	chs->cur = rm_chs_batch_new();
	chs->live = g_ptr_array_new();
	chs->sessions = rm_sess_rows_new();
	chs->drops = rm_drop_rows_new();
	chs->drops_unlogged_by_session = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	chs->tail = &chs->head;
	chs->last_handoff_ms = rm_clock_mono_ms();
	pthread_mutex_init(&chs->mu, NULL);
	pthread_cond_init(&chs->cv, NULL);
	if (!chs->cur) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (collector_id && *collector_id) {
		if (rm_chstore_check_id(collector_id, err, errlen) < 0)
			goto fail;
		snprintf(chs->id, sizeof(chs->id), "%s", collector_id);
	} else if (rm_chstore_default_id(chs->id, sizeof(chs->id), err, errlen) < 0) {
		goto fail;
	}
	if (!spool_dir || !*spool_dir)
		spool_dir = RM_STORE_SPOOL_DIR_DEFAULT;
	snprintf(chs->store_name, sizeof(chs->store_name), "%s?database=%s", conf->base, conf->database);
	{
		/* the spool belongs to its store: ID.TAG.spool, TAG the start of SHA-256 over the store's name */
		gchar *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, chs->store_name, -1);
		size_t n = (size_t)snprintf(chs->spool_path, sizeof(chs->spool_path), "%s/%s.%.*s.spool", spool_dir,
					    chs->id, RM_CHSTORE_SPOOL_TAG_LEN, sum);

		g_free(sum);
		if (n >= sizeof(chs->spool_path) - 8 || strlen(spool_dir) >= sizeof(chs->spool_dir)) {
			snprintf(err, errlen, "store_spool_dir: '%s' is too long", spool_dir);
			goto fail;
		}
		snprintf(chs->spool_dir, sizeof(chs->spool_dir), "%s", spool_dir);
	}
	if (pthread_create(&chs->thread, NULL, rm_chs_sender, chs) != 0) {
		snprintf(err, errlen, "the sender thread: %s", strerror(errno));
		goto fail;
	}
	chs->thread_up = 1;
	return chs;
fail:
	ch_close(chs);
	return NULL;
}

const struct rm_backend_ops rm_backend_clickhouse = {
	.name = "clickhouse",
	.drop_kind = "store",
	.close = ch_close,
	.error = ch_error,
	.begin = ch_begin,
	.commit = ch_commit,
	.flush = ch_flush,
	.unavailable = ch_unavailable,
	.drops = ch_drops,
	.run_start = ch_run_start,
	.run_stop = ch_run_stop,
	.session_start = ch_session_start,
	.session_peer = ch_session_peer,
	.session_end = ch_session_end,
	.session_counts = ch_session_counts,
	.epoch = ch_epoch,
	.raw = ch_raw,
	.drop = ch_drop,
	.connections = ch_connections,
	.run_limit = ch_run_limit,
	.observation_point = ch_observation_point,
	.raw_bytes = ch_raw_bytes,
	.buffer_bytes = ch_buffer_bytes,
	.buffer_capacity = ch_buffer_capacity,
	.set_budget = ch_set_budget,
	.collector_id = ch_collector_id,
	.transactions = rm_chs_transactions,
	.handed = rm_chs_handed,
	.session_lost = rm_chs_session_lost,
	.journal_dir = rm_chs_journal_dir,
	.session_acked = rm_chs_session_acked,
	.acked_drops = rm_chs_acked_drops,
};
