// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * queue.c - the SQLite store's deferred writes: what every rm_store_* write call
 * records for the next transaction (epochs by reference, sessions, raw records,
 * drops, refused connections, run limits), bounded while the database is
 * unavailable.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "rules/budget.h"
#include "store_impl.h"

/* ---------------- what waits ---------------- */

void rm_sq_tmpl_put(struct tmpl_copy *t)
{
	if (t && --t->refs == 0)
		free(t);
}

void rm_sq_raw_free(gpointer p)
{
	struct raw_row *r = p;

	free(r->reason);
	rm_sq_tmpl_put(r->tmpl);
	free(r);
}

void rm_sq_conn_row_free(gpointer p)
{
	struct conn_row *c = p;

	free(c->source);
	free(c->outcome);
	free(c->detail);
	free(c);
}

void rm_sq_limit_row_clear(gpointer p)
{
	free(((struct limit_row *)p)->name);
}

void rm_sq_point_row_clear(gpointer p)
{
	struct point_row *r = p;

	free(r->name);
	free(r->peer_name);
	free(r->peer_subject);
}

int rm_sq_waiting(const struct rm_store *st)
{
	return st->epochs->len || st->chunks->len || st->arc_len || st->sessions_dirty || st->raw->len ||
	       g_hash_table_size(st->drops) || g_hash_table_size(st->conns) || st->limits->len || st->points->len ||
	       st->lost->len || st->retire->len || st->ranges->len || st->stop_run;
}

static int count_drop(struct rm_store *st, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	return rm_drop_rows_count(st->drops, session_id, kind, detail, now_ms);
}

/*
 * The "database" drops not yet in a log line: one line for them, with the
 * last one's detail, and the time of it. Every such drop is in exactly one
 * line (this one, or the "writable again" and exit lines for the rest).
 */
void rm_sq_log_drops(struct rm_store *st)
{
	if (!st->drops_unlogged)
		return;
	rm_log(RM_LOG_WARNING,
	       "database unavailable: %" PRIu64 " epoch outcome%s and records not kept since the last line (collector "
	       "resource drops of kind database: at most %u retired epochs, %u MiB of raw records and %u rows of "
	       "refused connections wait); last: %s",
	       st->drops_unlogged, st->drops_unlogged == 1 ? "" : "s", RM_STORE_MAX_KEPT_EPOCHS,
	       RM_STORE_MAX_RAW_BYTES >> 20, RM_STORE_MAX_CONN_ROWS, st->drops_last);
	st->drops_unlogged = 0;
	st->drops_logged_ms = rm_clock_mono_ms();
}

/* A record (or an epoch's outcome) the database could not take: a collector resource drop, logged at
 * once and then at most every RM_STORE_DROP_LOG_MS while drops go on. */
static void database_drop(struct rm_store *st, int64_t session_id, const char *detail)
{
	count_drop(st, session_id, "database", detail, rm_clock_wall_ms());
	st->down_drops++;
	st->database_drops++;
	st->drops_unlogged++;
	snprintf(st->drops_last, sizeof(st->drops_last), "%s", detail);
	if (!st->drops_logged_ms || rm_clock_mono_ms() - st->drops_logged_ms >= RM_STORE_DROP_LOG_MS)
		rm_sq_log_drops(st);
}

/* ---------------- writes (deferred) ---------------- */

/* The retirement of a written epoch: its row's retired_ms, or a range of packed copies (extended when it can). */
static void retire_only(struct rm_store *st, int64_t id, int row, uint64_t retired_ms)
{
	if (row == ROW_PACKED) {
		struct retire_range *last =
			st->ranges->len ? &g_array_index(st->ranges, struct retire_range, st->ranges->len - 1) : NULL;
		struct retire_range r = { id, id, retired_ms };

		if (last && last->retired_ms == retired_ms && last->last + 1 == id)
			last->last = id;
		else if (last && last->retired_ms == retired_ms && last->first - 1 == id)
			last->first = id;
		else
			g_array_append_val(st->ranges, r);
	} else {
		struct retire_only r = { id, retired_ms };

		g_array_append_val(st->retire, r);
	}
}

int rm_store_epoch(struct rm_store *st, struct rm_epoch *e)
{
	if (!e->store_id)
		e->store_id = st->next_epoch++;
	if (e->retired_ms && e->store_row && !e->store_slot && !e->dirty && e->state != RM_EPOCH_OPEN &&
	    st->retire->len + st->ranges->len < RM_STORE_MAX_RETIREMENTS) {
		/* Settled and written as it is: it needs only its retirement time, the epoch is not kept. */
		retire_only(st, e->store_id, e->store_row, e->retired_ms);
		return 0;
	}
	/* The bound holds for every retired epoch, also one whose earlier state waits already (store_slot). */
	if (e->retired_ms && !e->sink_keeps && st->kept + st->packed_retired >= RM_STORE_MAX_KEPT_EPOCHS) {
		if (!st->down)
			rm_sq_attempt(st); /* makes room unless the database is unavailable */
		if (st->down) {
			char d[200];

			if (e->store_slot) { /* its earlier state is not written either: out of the queue */
				struct rm_epoch *last = g_ptr_array_index(st->epochs, st->epochs->len - 1);

				if (last) /* NULL: packed since */
					last->store_slot = e->store_slot;
				g_ptr_array_remove_index_fast(st->epochs, e->store_slot - 1);
				if (st->epochs_seen > st->epochs->len)
					st->epochs_seen = st->epochs->len;
				e->store_slot = 0;
			}
			snprintf(d, sizeof(d), "epoch %" PRIu64 " (%s) not stored: database unavailable",
				 e->key.epoch_id, rm_outcome_name(e->outcome));
			database_drop(st, (int64_t)e->session_id, d);
			if (e->store_row == ROW_PACKED) /* settled: the copy keeps its outcome, and is retired */
				retire_only(st, e->store_id, ROW_PACKED, e->retired_ms);
			else if (e->store_row)
				g_array_append_val(st->lost, e->store_id);
			return 0;
		}
	}
	if (e->retired_ms && !st->down && rm_sq_packs(st, e)) {
		/*
		 * Retired, never written: packed now, with the packable epochs queued
		 * before it (queue order is ID order), and not kept, so the rules
		 * free it at once and their pool hands the same, still cached, memory
		 * out next. Not while the database is unavailable: then retired epochs
		 * wait whole, within RM_STORE_MAX_KEPT_EPOCHS (docs/collector.md).
		 */
		if (rm_sq_pack_upto(st, e->store_slot ? e->store_slot - 1 : st->epochs->len) < 0 ||
		    rm_sq_pack(st, e) < 0)
			return -1;
		if (e->store_slot) {
			st->epochs->pdata[e->store_slot - 1] = NULL;
			st->epochs_seen = e->store_slot;
			e->store_slot = 0;
		}
		e->store_row = ROW_PACKED;
		e->sink_keeps = RM_SINK_CHARGE; /* its charge stays until the copy is written */
		st->packed_retired++;
		return 0;
	}
	if (!e->store_slot) {
		g_ptr_array_add(st->epochs, e);
		e->store_slot = st->epochs->len;
	}
	if (e->retired_ms && !e->sink_keeps) {
		e->sink_keeps = RM_SINK_KEEPS;
		st->kept++;
	}
	return 0;
}

static struct rm_sess_row *session_row(struct rm_store *st, int64_t id)
{
	int was_clean;
	struct rm_sess_row *s = rm_sess_rows_get(st->sessions, id, &was_clean);

	if (s && was_clean)
		st->sessions_dirty++;
	return s;
}

int64_t rm_store_session_start(struct rm_store *st, int64_t run_id, const char *peer, const char *transport,
			       uint64_t now_ms)
{
	int64_t id = st->next_session;
	struct rm_sess_row *s = session_row(st, id);

	if (!s)
		return -1;
	st->next_session++;
	return rm_sess_row_start(s, run_id, peer, transport, now_ms) ? -1 : id;
}

int rm_store_session_peer(struct rm_store *st, int64_t session_id, const char *subject, const char *name)
{
	struct rm_sess_row *s = session_row(st, session_id);

	return s ? rm_sess_row_peer(s, subject, name) : -1;
}

int rm_store_session_end(struct rm_store *st, int64_t session_id, const char *reason, uint64_t now_ms,
			 const struct rm_session_counts *c)
{
	struct rm_sess_row *s = session_row(st, session_id);

	return s ? rm_sess_row_end(s, reason, now_ms, c) : -1;
}

int rm_store_session_counts(struct rm_store *st, int64_t session_id, const struct rm_session_counts *c)
{
	struct rm_sess_row *s = g_hash_table_lookup(st->sessions, &session_id);

	if (!s || s->ended_ms) /* not this run's open session: nothing to add to */
		return s ? 0 : -1;
	if (!s->dirty) {
		s->dirty = 1;
		st->sessions_dirty++;
	}
	s->c = *c;
	if (c->verdicts)
		memcpy(s->verdicts, c->verdicts, sizeof(s->verdicts));
	s->c.verdicts = NULL;
	return 0;
}

int rm_store_drop(struct rm_store *st, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	return count_drop(st, session_id, kind, detail, now_ms);
}

int rm_store_raw(struct rm_store *st, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		 const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		 size_t tmpl_len, uint64_t now_ms)
{
	struct raw_row *row;
	size_t cost = sizeof(*row) + len + (reason ? strlen(reason) : 0);
	int share =
		tmpl && st->last_tmpl && st->last_tmpl->len == tmpl_len && !memcmp(st->last_tmpl->data, tmpl, tmpl_len);

	if (st->raw_rows + st->raw->len >= st->raw_limit) {
		char d[160];

		snprintf(d, sizeof(d), "raw record not kept (%s): max_raw_records %u reached", verdict, st->raw_limit);
		return count_drop(st, session_id, "raw-record-limit", d, now_ms) < 0 ? -1 : 0;
	}
	if (tmpl && !share)
		cost += sizeof(struct tmpl_copy) + tmpl_len;
	if (st->raw_bytes + cost > RM_STORE_MAX_RAW_BYTES) {
		if (!st->down)
			rm_sq_attempt(st);
		if (st->raw_bytes + cost > RM_STORE_MAX_RAW_BYTES) {
			char d[200];

			snprintf(d, sizeof(d), "raw record not kept (%s): database unavailable, %u octets wait",
				 verdict, (unsigned)st->raw_bytes);
			database_drop(st, session_id, d);
			return 0;
		}
		share = 0;
	}
	if (rm_budget_try(st->budget, cost) < 0) {
		if (!st->down && st->raw->len)
			rm_sq_attempt(st); /* the raw records waiting give their charges back */
		if (rm_budget_take(st->budget, cost, "raw record") < 0)
			return 0; /* counted by the budget's callback */
	}
	row = malloc(sizeof(*row) + len);
	if (!row) {
		rm_budget_give(st->budget, cost);
		return -1;
	}
	memset(row, 0, sizeof(*row));
	row->session_id = session_id;
	row->received_ms = now_ms;
	row->domain = domain;
	row->tid = tid;
	if (r) {
		row->has_report = 1;
		row->epoch_id = r->epoch_id;
		row->report_id = r->report_id;
		row->flags = r->flags;
	}
	row->verdict = verdict;
	row->reason = strdup(reason ? reason : "");
	row->len = len;
	memcpy(row->rec, raw, len);
	if (tmpl) {
		if (!share) {
			struct tmpl_copy *t = malloc(sizeof(*t) + tmpl_len);

			if (!t) {
				rm_sq_raw_free(row);
				rm_budget_give(st->budget, cost);
				return -1;
			}
			t->refs = 1; /* last_tmpl's reference */
			t->len = tmpl_len;
			memcpy(t->data, tmpl, tmpl_len);
			rm_sq_tmpl_put(st->last_tmpl);
			st->last_tmpl = t;
		}
		row->tmpl = st->last_tmpl;
		row->tmpl->refs++;
	}
	g_ptr_array_add(st->raw, row);
	st->raw_bytes += cost;
	return 1;
}

/* ---------------- refused connections, run limits, raw octets ---------------- */

int rm_store_connections(struct rm_store *st, uint64_t minute_ms, const char *source, const char *outcome,
			 uint64_t count, uint64_t first_ms, uint64_t last_ms, const char *detail)
{
	char *key = g_strdup_printf("%" PRIu64 "/%s/%s", minute_ms, outcome, source);
	struct conn_row *c = g_hash_table_lookup(st->conns, key);

	if (!c && g_hash_table_size(st->conns) >= RM_STORE_MAX_CONN_ROWS) {
		char d[200];

		g_free(key);
		snprintf(d, sizeof(d), "%" PRIu64 " refused connections (%s from %s) not counted: database unavailable",
			 count, outcome, source);
		database_drop(st, 0, d);
		return 0;
	}
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c || !(c->source = strdup(source)) || !(c->outcome = strdup(outcome))) {
			if (c)
				rm_sq_conn_row_free(c);
			g_free(key);
			return -1;
		}
		c->minute_ms = minute_ms;
		c->first_ms = first_ms;
		g_hash_table_insert(st->conns, key, c);
	} else {
		g_free(key);
	}
	c->count += count;
	c->last_ms = last_ms;
	free(c->detail);
	c->detail = strdup(detail ? detail : "");
	return c->detail ? 0 : -1;
}

int rm_store_observation_point(struct rm_store *st, const struct rm_store_point *p, uint64_t now_ms)
{
	struct point_row r = { p->domain,
			       p->id,
			       now_ms,
			       strdup(p->name),
			       strdup(p->peer_name ? p->peer_name : ""),
			       strdup(p->peer_subject ? p->peer_subject : "") };

	if (!r.name || !r.peer_name || !r.peer_subject) {
		rm_sq_point_row_clear(&r);
		return -1;
	}
	g_array_append_val(st->points, r);
	return 0;
}

int rm_store_run_limit(struct rm_store *st, int64_t run_id, const char *name, uint64_t value)
{
	struct limit_row l = { run_id, value, strdup(name) };

	if (!l.name)
		return -1;
	g_array_append_val(st->limits, l);
	return 0;
}
