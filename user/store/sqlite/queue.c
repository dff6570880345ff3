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

/* A text of a row the queue owns (the rows of store_rows.h point to const texts). */
static void free_text(const char *s)
{
	free((char *)s);
}

void rm_sq_conn_row_free(gpointer p)
{
	struct rm_conn_row *c = p;

	free_text(c->source);
	free_text(c->outcome);
	free_text(c->detail);
	free(c);
}

void rm_sq_limit_row_clear(gpointer p)
{
	free_text(((struct rm_limit_row *)p)->name);
}

void rm_sq_point_row_clear(gpointer p)
{
	struct rm_point_row *r = p;

	free_text(r->name);
	free_text(r->peer_name);
	free_text(r->peer_subject);
}

int rm_sq_waiting(const struct rm_store *store)
{
	return store->epochs->len || store->chunks->len || store->arc_len || store->sessions_dirty || store->raw->len ||
	       g_hash_table_size(store->drops) || g_hash_table_size(store->conns) || store->limits->len ||
	       store->points->len || store->lost->len || store->retire->len || store->ranges->len || store->stop_run;
}

static int count_drop(struct rm_store *store, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	return rm_drop_rows_count(store->drops, session_id, kind, detail, now_ms);
}

/*
 * The "database" drops not yet in a log line: one line for them, with the
 * last one's detail, and the time of it. Every such drop is in exactly one
 * line (this one, or the "writable again" and exit lines for the rest).
 */
void rm_sq_log_drops(struct rm_store *store)
{
	if (!store->drops_unlogged)
		return;
	rm_log(RM_LOG_WARNING,
	       "database unavailable: %" PRIu64 " epoch outcome%s and records not kept since the last line (collector "
	       "resource drops of kind database: at most %u retired epochs, %u MiB of raw records and %u rows of "
	       "refused connections wait); last: %s",
	       store->drops_unlogged, store->drops_unlogged == 1 ? "" : "s", RM_STORE_MAX_KEPT_EPOCHS,
	       RM_STORE_MAX_RAW_BYTES >> 20, RM_STORE_MAX_CONN_ROWS, store->drops_last);
	store->drops_unlogged = 0;
	store->drops_logged_ms = rm_clock_mono_ms();
}

/* A record (or an epoch's outcome) the database could not take: a collector resource drop, logged at
 * once and then at most every RM_STORE_DROP_LOG_MS while drops go on. */
static void database_drop(struct rm_store *store, int64_t session_id, const char *detail)
{
	count_drop(store, session_id, "database", detail, rm_clock_wall_ms());
	store->down_drops++;
	store->database_drops++;
	store->drops_unlogged++;
	snprintf(store->drops_last, sizeof(store->drops_last), "%s", detail);
	if (!store->drops_logged_ms || rm_clock_mono_ms() - store->drops_logged_ms >= RM_STORE_DROP_LOG_MS)
		rm_sq_log_drops(store);
}

/* ---------------- writes (deferred) ---------------- */

/* The retirement of a written epoch: its row's retired_ms, or a range of packed copies (extended when it can). */
static void retire_only(struct rm_store *store, int64_t id, int row, uint64_t retired_ms)
{
	if (row == ROW_PACKED) {
		struct rm_retired_row *last = store->ranges->len ? &g_array_index(store->ranges, struct rm_retired_row,
										  store->ranges->len - 1)
								 : NULL;
		struct rm_retired_row r = { id, id, retired_ms };

		if (last && last->retired_ms == retired_ms && last->last + 1 == id)
			last->last = id;
		else if (last && last->retired_ms == retired_ms && last->first - 1 == id)
			last->first = id;
		else
			g_array_append_val(store->ranges, r);
	} else {
		struct retire_only r = { id, retired_ms };

		g_array_append_val(store->retire, r);
	}
}

int rm_store_epoch(struct rm_store *store, struct rm_epoch *e)
{
	if (!e->store_id)
		e->store_id = store->next_epoch++;
	if (e->retired_ms && e->store_row && !e->store_slot && !e->dirty && e->state != RM_EPOCH_OPEN &&
	    store->retire->len + store->ranges->len < RM_STORE_MAX_RETIREMENTS) {
		/* Settled and written as it is: it needs only its retirement time, the epoch is not kept. */
		retire_only(store, e->store_id, e->store_row, e->retired_ms);
		return 0;
	}
	/* The bound holds for every retired epoch, also one whose earlier state waits already (store_slot). */
	if (e->retired_ms && !e->sink_keeps && store->kept + store->packed_retired >= RM_STORE_MAX_KEPT_EPOCHS) {
		if (!store->down)
			rm_sq_attempt(store); /* makes room unless the database is unavailable */
		if (store->down) {
			char d[200];

			if (e->store_slot) { /* its earlier state is not written either: out of the queue */
				struct rm_epoch *last = g_ptr_array_index(store->epochs, store->epochs->len - 1);

				if (last) /* NULL: packed since */
					last->store_slot = e->store_slot;
				g_ptr_array_remove_index_fast(store->epochs, e->store_slot - 1);
				if (store->epochs_seen > store->epochs->len)
					store->epochs_seen = store->epochs->len;
				e->store_slot = 0;
			}
			snprintf(d, sizeof(d), "epoch %" PRIu64 " (%s) not stored: database unavailable",
				 e->key.epoch_id, rm_outcome_name(e->outcome));
			database_drop(store, (int64_t)e->session_id, d);
			if (e->store_row == ROW_PACKED) /* settled: the copy keeps its outcome, and is retired */
				retire_only(store, e->store_id, ROW_PACKED, e->retired_ms);
			else if (e->store_row)
				g_array_append_val(store->lost, e->store_id);
			return 0;
		}
	}
	if (e->retired_ms && !store->down && rm_sq_packs(store, e)) {
		/*
		 * Retired, never written: packed now, with the packable epochs queued
		 * before it (queue order is ID order), and not kept, so the rules
		 * free it at once and their pool hands the same, still cached, memory
		 * out next. Not while the database is unavailable: then retired epochs
		 * wait whole, within RM_STORE_MAX_KEPT_EPOCHS (docs/collector.md).
		 */
		if (rm_sq_pack_upto(store, e->store_slot ? e->store_slot - 1 : store->epochs->len) < 0 ||
		    rm_sq_pack(store, e) < 0)
			return -1;
		if (e->store_slot) {
			store->epochs->pdata[e->store_slot - 1] = NULL;
			store->epochs_seen = e->store_slot;
			e->store_slot = 0;
		}
		e->store_row = ROW_PACKED;
		e->sink_keeps = RM_SINK_CHARGE; /* its charge stays until the copy is written */
		store->packed_retired++;
		return 0;
	}
	if (!e->store_slot) {
		g_ptr_array_add(store->epochs, e);
		e->store_slot = store->epochs->len;
	}
	if (e->retired_ms && !e->sink_keeps) {
		e->sink_keeps = RM_SINK_KEEPS;
		store->kept++;
	}
	return 0;
}

static struct rm_sess_row *session_row(struct rm_store *store, int64_t id)
{
	int was_clean;
	struct rm_sess_row *s = rm_sess_rows_get(store->sessions, id, &was_clean);

	if (s && was_clean)
		store->sessions_dirty++;
	return s;
}

int64_t rm_store_session_start(struct rm_store *store, int64_t run_id, const char *peer, const char *transport,
			       uint64_t now_ms)
{
	int64_t id = store->next_session;
	struct rm_sess_row *s = session_row(store, id);

	if (!s)
		return -1;
	store->next_session++;
	return rm_sess_row_start(s, run_id, peer, transport, now_ms) ? -1 : id;
}

int rm_store_session_peer(struct rm_store *store, int64_t session_id, const char *subject, const char *name)
{
	struct rm_sess_row *s = session_row(store, session_id);

	return s ? rm_sess_row_peer(s, subject, name) : -1;
}

int rm_store_session_end(struct rm_store *store, int64_t session_id, const char *reason, uint64_t now_ms,
			 const struct rm_session_counts *c)
{
	struct rm_sess_row *s = session_row(store, session_id);

	return s ? rm_sess_row_end(s, reason, now_ms, c) : -1;
}

int rm_store_session_counts(struct rm_store *store, int64_t session_id, const struct rm_session_counts *c)
{
	struct rm_sess_row *s = g_hash_table_lookup(store->sessions, &session_id);

	if (!s || s->ended_ms) /* not this run's open session: nothing to add to */
		return s ? 0 : -1;
	if (!s->dirty) {
		s->dirty = 1;
		store->sessions_dirty++;
	}
	s->c = *c;
	if (c->verdicts)
		memcpy(s->verdicts, c->verdicts, sizeof(s->verdicts));
	s->c.verdicts = NULL;
	return 0;
}

int rm_store_drop(struct rm_store *store, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	return count_drop(store, session_id, kind, detail, now_ms);
}

int rm_store_raw(struct rm_store *store, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		 const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		 size_t tmpl_len, uint64_t now_ms)
{
	struct raw_row *row;
	size_t cost = sizeof(*row) + len + (reason ? strlen(reason) : 0);
	int share = tmpl && store->last_tmpl && store->last_tmpl->len == tmpl_len &&
		    !memcmp(store->last_tmpl->data, tmpl, tmpl_len);

	if (store->raw_rows + store->raw->len >= store->raw_limit) {
		char d[160];

		snprintf(d, sizeof(d), "raw record not kept (%s): max_raw_records %u reached", verdict,
			 store->raw_limit);
		return count_drop(store, session_id, "raw-record-limit", d, now_ms) < 0 ? -1 : 0;
	}
	if (tmpl && !share)
		cost += sizeof(struct tmpl_copy) + tmpl_len;
	if (store->raw_bytes + cost > RM_STORE_MAX_RAW_BYTES) {
		if (!store->down)
			rm_sq_attempt(store);
		if (store->raw_bytes + cost > RM_STORE_MAX_RAW_BYTES) {
			char d[200];

			snprintf(d, sizeof(d), "raw record not kept (%s): database unavailable, %u octets wait",
				 verdict, (unsigned)store->raw_bytes);
			database_drop(store, session_id, d);
			return 0;
		}
		share = 0;
	}
	if (rm_budget_try(store->budget, cost) < 0) {
		if (!store->down && store->raw->len)
			rm_sq_attempt(store); /* the raw records waiting give their charges back */
		if (rm_budget_take(store->budget, cost, "raw record") < 0)
			return 0; /* counted by the budget's callback */
	}
	row = malloc(sizeof(*row) + len);
	if (!row) {
		rm_budget_give(store->budget, cost);
		return -1;
	}
	memset(row, 0, sizeof(*row));
	row->row = rm_raw_row_of(session_id, domain, tid, r, verdict, NULL, row->rec, len, NULL, 0, now_ms);
	row->row.reason = row->reason = strdup(reason ? reason : "");
	memcpy(row->rec, raw, len);
	if (tmpl) {
		if (!share) {
			struct tmpl_copy *t = malloc(sizeof(*t) + tmpl_len);

			if (!t) {
				rm_sq_raw_free(row);
				rm_budget_give(store->budget, cost);
				return -1;
			}
			t->refs = 1; /* last_tmpl's reference */
			t->len = tmpl_len;
			memcpy(t->data, tmpl, tmpl_len);
			rm_sq_tmpl_put(store->last_tmpl);
			store->last_tmpl = t;
		}
		row->tmpl = store->last_tmpl;
		row->tmpl->refs++;
		row->row.template = (struct rm_col_bytes){ row->tmpl->data, row->tmpl->len };
	}
	g_ptr_array_add(store->raw, row);
	store->raw_bytes += cost;
	return 1;
}

/* ---------------- refused connections, run limits, raw octets ---------------- */

int rm_store_connections(struct rm_store *store, uint64_t minute_ms, const char *source, const char *outcome,
			 uint64_t count, uint64_t first_ms, uint64_t last_ms, const char *detail)
{
	char *key = g_strdup_printf("%" PRIu64 "/%s/%s", minute_ms, outcome, source);
	struct rm_conn_row *c = g_hash_table_lookup(store->conns, key);

	if (!c && g_hash_table_size(store->conns) >= RM_STORE_MAX_CONN_ROWS) {
		char d[200];

		g_free(key);
		snprintf(d, sizeof(d), "%" PRIu64 " refused connections (%s from %s) not counted: database unavailable",
			 count, outcome, source);
		database_drop(store, 0, d);
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
		g_hash_table_insert(store->conns, key, c);
	} else {
		g_free(key);
	}
	c->count += count;
	c->last_ms = last_ms;
	free_text(c->detail);
	c->detail = strdup(detail ? detail : "");
	return c->detail ? 0 : -1;
}

int rm_store_observation_point(struct rm_store *store, const struct rm_store_point *p, uint64_t now_ms)
{
	struct rm_point_row r = { .domain = p->domain,
				  .id = p->id,
				  .updated_ms = now_ms,
				  .name = strdup(p->name),
				  .peer_name = strdup(p->peer_name ? p->peer_name : ""),
				  .peer_subject = strdup(p->peer_subject ? p->peer_subject : "") };

	if (!r.name || !r.peer_name || !r.peer_subject) {
		rm_sq_point_row_clear(&r);
		return -1;
	}
	g_array_append_val(store->points, r);
	return 0;
}

int rm_store_run_limit(struct rm_store *store, int64_t run_id, const char *name, uint64_t value)
{
	struct rm_limit_row l = { .run_id = run_id, .value = value, .name = strdup(name) };

	if (!l.name)
		return -1;
	g_array_append_val(store->limits, l);
	return 0;
}
