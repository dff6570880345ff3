// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rows.c - the rows of one transaction: an epoch's column values (columns.h) and
 * the statements that write each kind of row (flush.c calls them).
 */
#include <arpa/inet.h>
#include <sqlite3.h>
#include <stdio.h>

#include "store_impl.h"

/* Dotted IPv4 without printf (it is on the path of every epoch). */
static void ipv4_text(const uint8_t *a, char *buf)
{
	for (int i = 0; i < 4; i++) {
		unsigned v = a[i];

		if (v >= 100)
			*buf++ = (char)('0' + v / 100);
		if (v >= 10)
			*buf++ = (char)('0' + v / 10 % 10);
		*buf++ = (char)('0' + v % 10);
		*buf++ = i < 3 ? '.' : '\0';
	}
}

void rm_sq_addr_text(const struct rm_report *r, const uint8_t *a, char *buf, size_t len)
{
	if (r->family != 6)
		ipv4_text(a, buf);
	else if (!inet_ntop(AF_INET6, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

const char *rm_sq_state_name(enum rm_epoch_state s)
{
	return s == RM_EPOCH_OPEN ? "open" : s == RM_EPOCH_FINAL ? "final" : "invalid";
}

/* An epoch's NULL columns, a bit each: the measurement without an accepted report, retired_ms while retained. */
uint64_t rm_sq_epoch_nulls(const struct rm_epoch *e)
{
	return (e->n_accepted ? 0 : EC_MEASUREMENT) | (e->retired_ms ? 0 : COL(EC_RETIRED));
}

/*
 * The columns of an epoch's row from its fields; the address columns are
 * texts still to be written (s NULL): epoch_values writes them.
 */
static void epoch_fields(const struct rm_epoch *e, struct val v[EC__N])
{
#define X(c, f) v[c] = (struct val){ V_INT, (int64_t)e->f, NULL };
	EPOCH_INT_COLUMNS(X)
#undef X
	v[EC_SRC] = v[EC_DST] = (struct val){ V_TEXT, 0, NULL };
	v[EC_STATE] = (struct val){ V_TEXT, 0, rm_sq_state_name(e->state) };
	v[EC_OUTCOME] = (struct val){ V_TEXT, 0, rm_outcome_name(e->outcome) };
	v[EC_REASON] = (struct val){ V_TEXT, 0, e->reason };
	for (uint64_t n = rm_sq_epoch_nulls(e); n; n &= n - 1)
		v[__builtin_ctzll(n)].t = V_NULL;
}

/* The columns of an epoch's row; src and dst hold the address texts (INET6_ADDRSTRLEN). */
static void epoch_values(const struct rm_epoch *e, struct val v[EC__N], char *src, char *dst)
{
	epoch_fields(e, v);
	rm_sq_addr_text(&e->key, e->key.src, src, INET6_ADDRSTRLEN);
	rm_sq_addr_text(&e->key, e->key.dst, dst, INET6_ADDRSTRLEN);
	v[EC_SRC].s = src;
	v[EC_DST].s = dst;
}

/*
 * Written packed (epoch_archive) rather than as a row: an epoch retired or
 * settled at its first write. A settled epoch changes afterwards only by
 * the counts of ignored records (repeats, stale, ...) or by invalidation;
 * then it gets a row, which replaces its packed copy in the view. Packed
 * in ID order: one queued before epochs packed since (an open epoch
 * retired after later ones were packed at their retirement) gets a row.
 */
static int packs_above(const struct rm_epoch *e, int64_t max)
{
	return e->store_row == ROW_NONE && (e->retired_ms || e->state != RM_EPOCH_OPEN) && e->store_id > max;
}

int rm_sq_packs(const struct rm_store *store, const struct rm_epoch *e)
{
	return packs_above(e, store->packed_max);
}

int rm_sq_attempt_packed(const struct rm_store *store, const struct rm_epoch *e)
{
	return packs_above(e, store->attempt_packed_max);
}

/* A row in epoch_rows: inserted, or its state columns updated (the key columns are written once). */
int rm_sq_write_epoch(struct rm_store *store, const struct rm_epoch *e)
{
	int fresh = e->store_row != ROW_TABLE;
	sqlite3_stmt *q = store->q[fresh ? Q_EPOCH_INSERT : Q_EPOCH_UPDATE];
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	struct val v[EC__N];

	epoch_values(e, v, src, dst);
	if (!fresh)
		v[EC_SESSION].t = V_NULL; /* the update's "?2 IS NULL" */
	for (int c = 0; c < EC__N; c++) {
		if (!fresh && c > EC_ID && c < EC_WINDOW && c != EC_SESSION)
			continue;
		if (v[c].t == V_INT)
			sqlite3_bind_int64(q, c + 1, v[c].i);
		else if (v[c].t == V_TEXT)
			sqlite3_bind_text(q, c + 1, v[c].s, -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(q, c + 1);
	}
	return rm_sq_step_reset(q);
}

/* One column of a session's row (columns.h), bound to parameter i + 1 by its kind and NULL rule. */
#define BIND_(NAME, column, sqlite, ch, null, write, kind, field, read) BIND_##kind##_##null(field)
#define BIND_U64_NN(f)                                                  sqlite3_bind_int64(q, ++i, (int64_t)s->f);
#define BIND_U64_ZERO(f)                                   \
	if (s->f)                                          \
		sqlite3_bind_int64(q, ++i, (int64_t)s->f); \
	else                                               \
		sqlite3_bind_null(q, ++i);
#define BIND_TEXT_OPT(f) rm_sq_bind_text_or_null(q, ++i, s->f);

int rm_sq_write_session(struct rm_store *store, const struct rm_sess_row *s)
{
	sqlite3_stmt *q = store->q[Q_SESSION];
	int i = 0;

	RM_SESSION_COLUMNS(BIND_)
	return rm_sq_step_reset(q);
}

int rm_sq_write_raw(struct rm_store *store, const struct raw_row *r)
{
	sqlite3_stmt *q = store->q[Q_RAW];

	sqlite3_bind_int64(q, 1, r->session_id);
	sqlite3_bind_int64(q, 2, (int64_t)r->received_ms);
	sqlite3_bind_int64(q, 3, r->domain);
	sqlite3_bind_int(q, 4, r->tid);
	if (r->has_report) {
		sqlite3_bind_int64(q, 5, (int64_t)r->epoch_id);
		sqlite3_bind_int64(q, 6, (int64_t)r->report_id);
		sqlite3_bind_int(q, 7, r->flags);
	} else {
		sqlite3_bind_null(q, 5);
		sqlite3_bind_null(q, 6);
		sqlite3_bind_null(q, 7);
	}
	sqlite3_bind_text(q, 8, r->verdict, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 9, r->reason, -1, SQLITE_STATIC);
	sqlite3_bind_blob(q, 10, r->rec, (int)r->len, SQLITE_STATIC);
	if (r->tmpl)
		sqlite3_bind_blob(q, 11, r->tmpl->data, (int)r->tmpl->len, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, 11);
	return rm_sq_step_reset(q);
}

int rm_sq_write_drop(struct rm_store *store, const struct rm_drop_row *d)
{
	sqlite3_stmt *q = store->q[Q_DROP];

	sqlite3_bind_int64(q, 1, d->session_id);
	sqlite3_bind_text(q, 2, d->kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, (int64_t)d->count);
	sqlite3_bind_int64(q, 4, (int64_t)d->first_ms);
	sqlite3_bind_int64(q, 5, (int64_t)d->last_ms);
	sqlite3_bind_text(q, 6, d->detail, -1, SQLITE_STATIC);
	return rm_sq_step_reset(q);
}

int rm_sq_write_conn(struct rm_store *store, const struct conn_row *c)
{
	sqlite3_stmt *q = store->q[Q_CONNECTIONS];

	sqlite3_bind_int64(q, 1, (int64_t)c->minute_ms);
	sqlite3_bind_text(q, 2, c->source, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, c->outcome, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, (int64_t)c->count);
	sqlite3_bind_int64(q, 5, (int64_t)c->first_ms);
	sqlite3_bind_int64(q, 6, (int64_t)c->last_ms);
	sqlite3_bind_text(q, 7, c->detail, -1, SQLITE_STATIC);
	return rm_sq_step_reset(q);
}

int rm_sq_write_limit(struct rm_store *store, const struct limit_row *l)
{
	sqlite3_stmt *q = store->q[Q_RUN_LIMIT];

	sqlite3_bind_int64(q, 1, l->run_id);
	sqlite3_bind_text(q, 2, l->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, (int64_t)l->value);
	return rm_sq_step_reset(q);
}

int rm_sq_write_point(struct rm_store *store, const struct point_row *p)
{
	sqlite3_stmt *q = store->q[Q_OBS_POINT];

	sqlite3_bind_int64(q, 1, (int64_t)p->domain);
	sqlite3_bind_int64(q, 2, (int64_t)p->id);
	sqlite3_bind_text(q, 3, p->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, (int64_t)p->now_ms);
	sqlite3_bind_text(q, 5, p->peer_name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 6, p->peer_subject, -1, SQLITE_STATIC);
	return rm_sq_step_reset(q);
}

int rm_sq_write_lost(struct rm_store *store, int64_t id, uint64_t now_ms)
{
	sqlite3_stmt *q = store->q[Q_EPOCH_LOST];

	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int64(q, 2, (int64_t)now_ms);
	sqlite3_bind_text(q, 3,
			  "collector resource drop: its outcome could not be stored while the database was "
			  "unavailable",
			  -1, SQLITE_STATIC);
	return rm_sq_step_reset(q);
}
