// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chstore.c - the collector's ClickHouse store: rows serialized on the
 * collector's thread, inserted by a sender thread. See chstore.h.
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

#include "chstore.h"
#include "store/columns.h"
#include "store/store_rows.h"
#include "common/limits.h"
#include "common/log.h"

enum table { T_RUNS, T_SESSIONS, T_EPOCHS, T_RAW, T_DROPS, T_CONNS, T_LIMITS, T__N };

/* One INSERT per table; the column lists name the order in which rows are serialized below. */
static const char *const inserts[T__N] = {
	[T_RUNS] = "INSERT INTO runs (collector_id, id, version, started_ms, stopped_ms, listen, transport,"
		   " max_sessions, max_epochs, max_raw_records, inactivity_timeout_ms, pen) FORMAT RowBinary",
	[T_SESSIONS] = "INSERT INTO sessions (collector_id, id, version, run_id, peer, peer_subject, transport,"
		       " started_ms, ended_ms, end_reason, messages, records, octets, rejected, accepted, repeats,"
		       " stale, orphans, unsupported, invalid, after_invalid, key_conflicts, resource_drops, unbound,"
		       " seq_gaps, seq_missing, export_time_backwards) FORMAT RowBinary",
	[T_EPOCHS] =
		"INSERT INTO epochs (collector_id, id, version" RM_EPOCH_COLUMN_NAMES_AFTER_ID ") FORMAT RowBinary",
	[T_RAW] = "INSERT INTO raw_records (collector_id, id, session_id, received_ms, domain, template_id, epoch_id,"
		  " report_id, flags, verdict, reason, record, template) FORMAT RowBinary",
	[T_DROPS] = "INSERT INTO drops (collector_id, session_id, kind, count, first_ms, last_ms, last_detail)"
		    " FORMAT RowBinary",
	[T_CONNS] = "INSERT INTO connections (collector_id, minute_ms, source, outcome, count, first_ms, last_ms,"
		    " last_detail) FORMAT RowBinary",
	[T_LIMITS] = "INSERT INTO run_limits (collector_id, run_id, name, value, seq) FORMAT RowBinary",
};

static const char *const table_names[T__N] = {
	[T_RUNS] = "runs",   [T_SESSIONS] = "sessions", [T_EPOCHS] = "epochs",     [T_RAW] = "raw_records",
	[T_DROPS] = "drops", [T_CONNS] = "connections", [T_LIMITS] = "run_limits",
};

/* Rows handed to the sender together. */
struct batch {
	GByteArray *body[T__N];
	uint8_t sent[T__N];
	uint32_t retired, raw, conns; /* epoch outcomes, raw records, counts of refused connections in it */
	size_t bytes;
	int from_spool; /* read from the spool file at the start */
	struct batch *next;
};

struct rm_chstore {
	struct rm_ch_conf conf;
	char id[RM_CHSTORE_COLLECTOR_ID_MAX + 1];
	char err[4096];
	uint64_t bound;

	/* The collector's thread. */
	struct batch *cur;
	GPtrArray *live;      /* struct rm_epoch * changed since they were last serialized; e->store_slot = index + 1 */
	GHashTable *sessions; /* int64 id -> struct rm_sess_row */
	GHashTable *drops;    /* "session/kind" -> struct rm_drop_row */
	int64_t next_run, next_session, next_epoch, next_raw, run_id;
	uint64_t limit_seq;
	uint64_t last_version;
	uint64_t last_handoff_ms;
	uint32_t raw_limit;
	uint64_t raw_rows, raw_bytes;
	uint64_t store_drops;
	uint64_t drops_logged_ms, drops_unlogged; /* the last "store drops" log line, the drops since */
	GHashTable *drops_unlogged_by_session;    /* int64 session ID -> uint64 drops since that line */
	char drops_last[200];                     /* the last drop's detail */
	uint64_t last_heartbeat_ms;
	char store_name[700]; /* "BASE?database=DB": the store a spool file belongs to */
	char spool_dir[512];
	char spool_path[640]; /* spool_dir/ID.TAG.spool, TAG from store_name (chstore.h) */
	int recovered;
	uint64_t sessions_started; /* in this run */
	struct {
		uint64_t started_ms, stopped_ms;
		char *listen, *transport;
		struct rm_rules_limits lim;
		uint32_t max_raw_records, pen;
	} run;

	/* Shared with the sender, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch *head, **tail; /* the queue */
	struct batch *inflight;     /* batches the sender is inserting */
	uint64_t queued_bytes;      /* octets in the queue and in flight */
	uint64_t inserted_rows;
	int down;            /* the last INSERT failed */
	int reached;         /* ClickHouse answered in this run (a query at the start or an INSERT) */
	unsigned spool_left; /* batches of the spool file not inserted yet: the file is removed at 0 */
	int stopping;        /* close: insert what waits until stop_at_ms, then end */
	/* what the spool file read at the start holds, in the words of the logs */
	char spool_what[200];
	uint64_t stop_at_ms;
	pthread_t thread;
	int thread_up;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t next_version(struct rm_chstore *cs)
{
	uint64_t v = real_us();

	if (v <= cs->last_version)
		v = cs->last_version + 1;
	cs->last_version = v;
	return v;
}

/* ---------------- RowBinary ---------------- */

static void put_u64(GByteArray *b, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	g_byte_array_append(b, le, 8);
}

static void put_u8(GByteArray *b, uint8_t v)
{
	g_byte_array_append(b, &v, 1);
}

/* String: the length as unsigned LEB128, then the octets. */
static void put_bytes(GByteArray *b, const void *p, size_t len)
{
	uint8_t v[10];
	size_t n = 0, l = len;

	do {
		v[n] = (uint8_t)(l & 0x7f);
		l >>= 7;
		if (l)
			v[n] |= 0x80;
		n++;
	} while (l);
	g_byte_array_append(b, v, (guint)n);
	if (len)
		g_byte_array_append(b, p, (guint)len);
}

static void put_str(GByteArray *b, const char *s)
{
	put_bytes(b, s ? s : "", s ? strlen(s) : 0);
}

/* Nullable: a byte 1 for NULL, else 0 and the value. */
static void put_nu64(GByteArray *b, int null, uint64_t v)
{
	put_u8(b, null ? 1 : 0);
	if (!null)
		put_u64(b, v);
}

static void put_nstr(GByteArray *b, const char *s)
{
	put_u8(b, s ? 0 : 1);
	if (s)
		put_str(b, s);
}

/* ---------------- rows ---------------- */

static void ipv4_text(const uint8_t *a, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
}

static void addr_text(const struct rm_report *r, const uint8_t *a, char *buf, size_t len)
{
	if (r->family != 6)
		ipv4_text(a, buf, len);
	else if (!inet_ntop(AF_INET6, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static const char *state_name(enum rm_epoch_state s)
{
	return s == RM_EPOCH_OPEN ? "open" : s == RM_EPOCH_FINAL ? "final" : "invalid";
}

/*
 * One column of an epoch's row (columns.h) in RowBinary, by its kind and
 * NULL rule; the ID goes before the version, by hand.
 */
#define ROW_(NAME, column, sqlite, ch, null, write, kind, field, read) ROW_##write(kind##_##null, field)
#define ROW_ID(kn, f)
#define ROW_ONCE(kn, f) ROW_##kn(f)
#define ROW_UPD(kn, f)  ROW_##kn(f)
#define ROW_U64_NN(f)   put_u64(out, (uint64_t)e->f);
#define ROW_U64_MEAS(f) put_nu64(out, none, e->f);
#define ROW_U64_RET(f)  put_nu64(out, !e->f, e->f);
#define ROW_U8_NN(f)    put_u8(out, e->f);
#define ROW_ADDR_NN(f)                                        \
	{                                                     \
		char text[INET6_ADDRSTRLEN];                  \
		addr_text(&e->key, e->f, text, sizeof(text)); \
		put_str(out, text);                           \
	}
#define ROW_STATE_NN(f)   put_str(out, state_name(e->f));
#define ROW_OUTCOME_NN(f) put_str(out, rm_outcome_name(e->f));
#define ROW_TEXT_OPT(f)   put_nstr(out, e->f);

void rm_chstore_epoch_row(GByteArray *out, const char *collector_id, const struct rm_epoch *e, uint64_t version)
{
	int none = !e->n_accepted; /* no accepted report: no measurement (NULL) */

	put_str(out, collector_id);
	put_u64(out, (uint64_t)e->store_id);
	put_u64(out, version);
	RM_EPOCH_COLUMNS(ROW_)
}

static void session_row(struct rm_chstore *cs, GByteArray *b, const struct rm_sess_row *s)
{
	const uint64_t *v = s->verdicts;
	const uint64_t vals[] = { s->c.messages,         s->c.records,    s->c.octets,           s->c.rejected,
				  v[RM_V_ACCEPTED],      v[RM_V_REPEAT],  v[RM_V_STALE],         v[RM_V_ORPHAN],
				  v[RM_V_UNSUPPORTED],   v[RM_V_INVALID], v[RM_V_AFTER_INVALID], v[RM_V_KEY_CONFLICT],
				  v[RM_V_RESOURCE_DROP], v[RM_V_UNBOUND], s->c.seq_gaps,         s->c.seq_missing,
				  s->c.time_backwards };

	put_str(b, cs->id);
	put_u64(b, (uint64_t)s->id);
	put_u64(b, next_version(cs));
	put_u64(b, (uint64_t)s->run_id);
	put_nstr(b, s->peer);
	put_nstr(b, s->subject);
	put_nstr(b, s->transport);
	put_u64(b, s->started_ms);
	put_nu64(b, !s->ended_ms, s->ended_ms);
	put_nstr(b, s->reason);
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		put_u64(b, vals[i]);
}

/* ---------------- batches and the queue ---------------- */

static struct batch *batch_new(void)
{
	struct batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	for (int t = 0; t < T__N; t++)
		b->body[t] = g_byte_array_new();
	return b;
}

static void batch_free(struct batch *b)
{
	if (!b)
		return;
	for (int t = 0; t < T__N; t++)
		g_byte_array_free(b->body[t], TRUE);
	free(b);
}

static size_t batch_size(const struct batch *b)
{
	size_t n = 0;

	for (int t = 0; t < T__N; t++)
		n += b->body[t]->len;
	return n;
}

static uint64_t queued(struct rm_chstore *cs)
{
	uint64_t q;

	pthread_mutex_lock(&cs->mu);
	q = cs->queued_bytes;
	pthread_mutex_unlock(&cs->mu);
	return q;
}

/* Room for more octets of rows that may be dropped (the bound of chstore.h). */
static int room(struct rm_chstore *cs, size_t more)
{
	return batch_size(cs->cur) + more + queued(cs) <= cs->bound;
}

/* ---------------- drops ---------------- */

static int count_drop(struct rm_chstore *cs, int64_t session_id, const char *kind, const char *detail, uint64_t now)
{
	return rm_drop_rows_count(cs->drops, session_id, kind, detail, now);
}

static gint by_session(gconstpointer a, gconstpointer b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The line for the "store" drops since the last one: their count, per
 * session (8 named at most), and the last one's detail. Every drop is in
 * exactly one such line.
 */
static void log_drops(struct rm_chstore *cs)
{
	GList *ids, *l;
	GString *per;
	unsigned named = 0;

	if (!cs->drops_unlogged)
		return;
	per = g_string_new(NULL);
	ids = g_list_sort(g_hash_table_get_keys(cs->drops_unlogged_by_session), by_session);
	for (l = ids; l; l = l->next, named++) {
		const uint64_t *n = g_hash_table_lookup(cs->drops_unlogged_by_session, l->data);

		if (named == 8) {
			g_string_append_printf(per, ", %u more sessions", g_list_length(l));
			break;
		}
		if (*(const int64_t *)l->data)
			g_string_append_printf(per, "%ssession %" PRId64 ": %" PRIu64, named ? ", " : "",
					       *(const int64_t *)l->data, *n);
		else
			g_string_append_printf(per, "%srefused connections: %" PRIu64, named ? ", " : "", *n);
	}
	g_list_free(ids);
	rm_log(RM_LOG_WARNING,
	       "ClickHouse store: %" PRIu64 " store drop%s since the last line (%s); last: %s (collector "
	       "resource drops of kind store; the buffer holds %" PRIu64 " octets: store_buffer_bytes)",
	       cs->drops_unlogged, cs->drops_unlogged == 1 ? "" : "s", per->str, cs->drops_last, cs->bound);
	g_string_free(per, TRUE);
	g_hash_table_remove_all(cs->drops_unlogged_by_session);
	cs->drops_unlogged = 0;
	cs->drops_logged_ms = mono_ms();
}

/* Something the buffer could not take: a "store" drop, in a log line at most every RM_CHSTORE_DROP_LOG_MS. */
static void store_drop(struct rm_chstore *cs, int64_t session_id, const char *detail)
{
	uint64_t *n = g_hash_table_lookup(cs->drops_unlogged_by_session, &session_id);

	count_drop(cs, session_id, "store", detail, real_us() / 1000);
	cs->store_drops++;
	cs->drops_unlogged++;
	if (!n) {
		int64_t *k = g_new(int64_t, 1);

		*k = session_id;
		n = g_new0(uint64_t, 1);
		g_hash_table_insert(cs->drops_unlogged_by_session, k, n);
	}
	(*n)++;
	snprintf(cs->drops_last, sizeof(cs->drops_last), "%s", detail);
	if (!cs->drops_logged_ms || mono_ms() - cs->drops_logged_ms >= RM_CHSTORE_DROP_LOG_MS)
		log_drops(cs);
}

/* ---------------- hand-over ---------------- */

static void serialize_sessions(struct rm_chstore *cs)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, cs->sessions);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct rm_sess_row *s = v;

		if (!s->dirty)
			continue;
		session_row(cs, cs->cur->body[T_SESSIONS], s);
		s->dirty = 0;
		if (s->ended_ms)
			g_hash_table_iter_remove(&it);
	}
}

static void serialize_drops(struct rm_chstore *cs)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, cs->drops);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct rm_drop_row *d = v;
		GByteArray *b = cs->cur->body[T_DROPS];

		if (!d->count)
			continue;
		put_str(b, cs->id);
		put_u64(b, (uint64_t)d->session_id);
		put_str(b, d->kind);
		put_u64(b, d->count);
		put_u64(b, d->first_ms);
		put_u64(b, d->last_ms);
		put_nstr(b, d->detail);
		g_hash_table_iter_remove(&it);
	}
}

/* Live epochs' latest states, while there is room; the others stay waiting. */
static void serialize_live(struct rm_chstore *cs)
{
	guint kept = 0;

	for (guint i = 0; i < cs->live->len; i++) {
		struct rm_epoch *e = cs->live->pdata[i];

		if (!e)
			continue;
		if (!room(cs, 512)) {
			cs->live->pdata[kept++] = e;
			e->store_slot = kept;
			continue;
		}
		rm_chstore_epoch_row(cs->cur->body[T_EPOCHS], cs->id, e, next_version(cs));
		e->store_slot = 0;
	}
	g_ptr_array_set_size(cs->live, kept);
}

/* Give the batch to the sender and start a new one. -1 on out of memory. */
static int handoff(struct rm_chstore *cs)
{
	struct batch *b, *fresh;

	serialize_live(cs);
	serialize_sessions(cs);
	serialize_drops(cs);
	cs->last_handoff_ms = mono_ms();
	b = cs->cur;
	b->bytes = batch_size(b);
	if (!b->bytes)
		return 0;
	fresh = batch_new();
	if (!fresh)
		return -1;
	cs->cur = fresh;
	pthread_mutex_lock(&cs->mu);
	*cs->tail = b;
	cs->tail = &b->next;
	cs->queued_bytes += b->bytes;
	pthread_cond_signal(&cs->cv);
	pthread_mutex_unlock(&cs->mu);
	return 0;
}

/* ---------------- the sender ---------------- */

static int send_table(struct rm_chstore *cs, struct rm_ch *ch, struct batch *group, int t, char *err, size_t errlen)
{
	GByteArray *body = g_byte_array_new();
	int rc;

	for (struct batch *b = group; b; b = b->next)
		if (!b->sent[t])
			g_byte_array_append(body, b->body[t]->data, b->body[t]->len);
	rc = body->len ? rm_ch_query(ch, inserts[t], body->data, body->len, NULL, NULL, err, errlen) : 0;
	g_byte_array_free(body, TRUE);
	if (!rc)
		for (struct batch *b = group; b; b = b->next)
			b->sent[t] = 1;
	return rc;
}

/*
 * Wait backoff ms with mu held (new batches do not shorten it), until the
 * close's deadline at the latest; a close that begins meanwhile ends the
 * wait: what waits gets its attempts before the deadline.
 */
static void backoff_wait(struct rm_chstore *cs, uint64_t backoff)
{
	uint64_t until = mono_ms() + backoff;
	int stopping = cs->stopping;

	if (stopping && cs->stop_at_ms < until)
		until = cs->stop_at_ms;
	while (mono_ms() < until && cs->stopping == stopping) {
		struct timespec ts;
		uint64_t wait = until - mono_ms();

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(wait / 1000);
		ts.tv_nsec += (long)(wait % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&cs->cv, &cs->mu, &ts);
	}
}

static void *sender(void *arg)
{
	struct rm_chstore *cs = arg;
	char err[512];
	struct rm_ch *ch = rm_ch_open(&cs->conf, err, sizeof(err));
	uint64_t backoff = RM_CHSTORE_RETRY_MIN_MS, down_since = 0, last_remind = 0;
	int refused = 0; /* the last failure was a refusal of rm_chstore_refusal_hint */

	if (!ch)
		rm_log(RM_LOG_ERR, "ClickHouse store: %s", err);
	pthread_mutex_lock(&cs->mu);
	for (;;) {
		struct batch *group, **end;
		size_t n = 0;
		int failed = 0;

		while (!cs->head && !cs->stopping)
			pthread_cond_wait(&cs->cv, &cs->mu);
		if (!cs->head || (cs->stopping && mono_ms() >= cs->stop_at_ms))
			break;
		/* Take what is queued, up to RM_CHSTORE_SEND_MAX_BYTES (at least one batch). */
		group = cs->head;
		end = &cs->head;
		while (*end && (end == &cs->head || n + (*end)->bytes <= RM_CHSTORE_SEND_MAX_BYTES)) {
			n += (*end)->bytes;
			end = &(*end)->next;
		}
		cs->head = *end;
		if (!cs->head)
			cs->tail = &cs->head;
		*end = NULL;
		cs->inflight = group;
		pthread_mutex_unlock(&cs->mu);

		for (;;) {
			failed = 0;
			for (int t = 0; t < T__N && !failed; t++) {
				if (!ch)
					ch = rm_ch_open(&cs->conf, err, sizeof(err));
				if (!ch || send_table(cs, ch, group, t, err, sizeof(err)) < 0) {
					failed = 1;
					const char *hint = rm_chstore_refusal_hint(err);

					if (!down_since) {
						rm_log(RM_LOG_ERR,
						       "ClickHouse store unavailable (INSERT INTO %s): %s%s%s; rows "
						       "wait in memory (at most store_buffer_bytes) and are retried",
						       table_names[t], err, hint ? ": refused, " : "",
						       hint ? hint : "");
						down_since = last_remind = mono_ms();
					} else if (mono_ms() - last_remind >= RM_CHSTORE_REMIND_MS ||
						   (hint && !refused)) {
						/* a refusal after an outage: at once, it needs the operator */
						rm_log(hint ? RM_LOG_ERR : RM_LOG_WARNING,
						       "ClickHouse store still unavailable after %" PRIu64 " s: %s%s%s",
						       (mono_ms() - down_since) / 1000, err, hint ? ": refused, " : "",
						       hint ? hint : "");
						last_remind = mono_ms();
					}
					refused = hint != NULL;
				}
			}
			pthread_mutex_lock(&cs->mu);
			cs->down = failed;
			if (!failed || (cs->stopping && mono_ms() >= cs->stop_at_ms))
				break;
			backoff_wait(cs, backoff);
			pthread_mutex_unlock(&cs->mu);
			backoff = backoff * 2 > RM_CHSTORE_RETRY_MAX_MS ? RM_CHSTORE_RETRY_MAX_MS : backoff * 2;
		}
		/* here with mu held */
		if (failed)
			break; /* stopping: what is in flight is counted by close */
		if (down_since) {
			rm_log(RM_LOG_NOTICE, "ClickHouse store available again after %" PRIu64 " s",
			       (mono_ms() - down_since) / 1000);
			down_since = 0;
			refused = 0;
		}
		backoff = RM_CHSTORE_RETRY_MIN_MS;
		cs->inflight = NULL;
		cs->reached = 1;
		while (group) {
			struct batch *next = group->next;

			cs->queued_bytes -= group->bytes;
			if (group->from_spool && cs->spool_left && !--cs->spool_left && unlink(cs->spool_path) == 0)
				rm_log(RM_LOG_NOTICE, "ClickHouse store: the spool %s (%s) sent and removed",
				       cs->spool_path, cs->spool_what);
			batch_free(group);
			group = next;
		}
	}
	pthread_mutex_unlock(&cs->mu);
	rm_ch_close(ch);
	return NULL;
}

/* ---------------- the calls of store.h ---------------- */

static const char *ch_error(void *p)
{
	struct rm_chstore *cs = p;

	return cs->err;
}

static int ch_begin(void *p)
{
	return 0;
}

static void run_row(struct rm_chstore *cs);

static int ch_commit(void *p)
{
	struct rm_chstore *cs = p;
	uint64_t m = mono_ms();

	if (cs->run_id && !cs->run.stopped_ms && m - cs->last_heartbeat_ms >= RM_CHSTORE_HEARTBEAT_MS) {
		run_row(cs); /* the heartbeat: this collector ID is in use (chstore.h) */
		cs->last_heartbeat_ms = m;
	}
	if (cs->drops_unlogged && m - cs->drops_logged_ms >= RM_CHSTORE_DROP_LOG_MS)
		log_drops(cs);
	if (mono_ms() - cs->last_handoff_ms < RM_CHSTORE_FLUSH_MS && batch_size(cs->cur) < RM_CHSTORE_FLUSH_BYTES)
		return 0;
	return handoff(cs);
}

static int ch_flush(void *p)
{
	return handoff(p);
}

static int ch_unavailable(const void *p)
{
	struct rm_chstore *cs = (struct rm_chstore *)p;
	int d;

	pthread_mutex_lock(&cs->mu);
	d = cs->down;
	pthread_mutex_unlock(&cs->mu);
	return d;
}

static uint64_t ch_drops(const void *p)
{
	return ((const struct rm_chstore *)p)->store_drops;
}

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
 * killed): ended and retired now, as store.h's recovery, by rows with a
 * larger version. Which rows is decided on each row's latest version
 * (argMax over a plain UInt8), and FINAL is filtered by key columns only:
 * a filter on ended_ms or retired_ms next to FINAL may be applied before
 * the versions collapse and pick up an older one.
 */
static int recover(struct rm_chstore *cs, struct rm_ch *ch, const char *qid, uint64_t now_ms, char *err, size_t errlen)
{
	static const char cause[] = "session ended: collector restarted (the run that received it ended without "
				    "closing its session)";
	uint64_t ver = next_version(cs);
	char *sql[3];
	int rc = 0;

	sql[0] = g_strdup_printf(
		"INSERT INTO sessions (collector_id, id, version, run_id, peer, peer_subject, transport, started_ms,"
		" ended_ms, end_reason, messages, records, octets, rejected, accepted, repeats, stale, orphans,"
		" unsupported, invalid, after_invalid, key_conflicts, resource_drops, unbound, seq_gaps, seq_missing,"
		" export_time_backwards) SELECT collector_id, id, %" PRIu64 ", run_id, peer, peer_subject, transport,"
		" started_ms, toNullable(toUInt64(%" PRIu64
		")), toNullable('collector restarted: the run that held this"
		" session ended without closing it'), messages, records, octets, rejected, accepted, repeats, stale,"
		" orphans, unsupported, invalid, after_invalid, key_conflicts, resource_drops, unbound, seq_gaps,"
		" seq_missing, export_time_backwards FROM sessions FINAL WHERE collector_id = %s AND id GLOBAL IN"
		" (SELECT id FROM sessions WHERE collector_id = %s GROUP BY id HAVING argMax(isNull(ended_ms), "
		"version))",
		ver, now_ms, qid, qid);
	sql[1] = g_strdup_printf(
		"%.*s SELECT collector_id, id, %" PRIu64 ", session_id, domain, observation_point_id,"
		" family, src, dst, dest_qp, pkey, has_vlan_ns, vlan_outer, vlan_inner, epoch_id, window, flags,"
		" flags_seen, flow_start_ms, flow_end_ms, first_report_id, last_report_id, reports_accepted,"
		" missing_initial, missing_reports, gaps, repeats, stale, unsupported, ignored, requests, skipped,"
		" filled, expired, abandoned, pending, repeated, unclassified_late, state,"
		" if(state = 'open', 'incomplete', outcome),"
		" if(state = 'open', toNullable(if(reports_accepted = 0, concat('%s', '; no accepted report'),"
		" concat('%s', ' without a final report (last report ', toString(assumeNotNull(last_report_id)), ')',"
		" if(missing_reports > 0, concat('; ', toString(missing_reports), ' reports missing'), '')))), reason),"
		" first_seen_ms, last_seen_ms, toNullable(toUInt64(%" PRIu64 "))"
		" FROM epochs FINAL WHERE collector_id = %s AND id GLOBAL IN"
		" (SELECT id FROM epochs WHERE collector_id = %s GROUP BY id HAVING argMax(isNull(retired_ms), "
		"version))",
		(int)(strlen(inserts[T_EPOCHS]) - strlen(" FORMAT RowBinary")), inserts[T_EPOCHS], ver, cause, cause,
		now_ms, qid, qid);
	sql[2] = NULL;
	for (int i = 0; sql[i] && !rc; i++)
		rc = rm_ch_query(ch, sql[i], NULL, 0, NULL, NULL, err, errlen);
	for (int i = 0; sql[i]; i++)
		g_free(sql[i]);
	return rc;
}

const char *rm_chstore_refusal_hint(const char *err)
{
	const char *h = strstr(err, "HTTP "), *c = strstr(err, "Code: ");
	long status = h ? strtol(h + 5, NULL, 10) : 0, code = c ? strtol(c + 6, NULL, 10) : 0;

	if (status == 401 || status == 403 || (code >= 192 && code <= 194) || code == 497 || code == 516)
		return "check store_credentials (--store-credentials: user=NAME and password=SECRET of a ClickHouse "
		       "user with the privileges of docs/fleet.md)";
	if (code == 81 || code == 60)
		return "the database or its tables are missing: run `rocemeter collect --store-init` with this --store";
	if (code == 291)
		return "the user of store_credentials may not use this database (its allow_databases): check the "
		       "store URL's ?database= or the user's allow_databases (docs/fleet.md)";
	if (code == 164)
		return "the user of store_credentials is readonly (such as the report user): give collect the writer "
		       "user of docs/fleet.md";
	return NULL;
}

/* ---------------- the spool file ---------------- */

static const char spool_magic_v1[8] = { 'R', 'M', 'S', 'P', 'O', 'O', 'L', '1' };
static const char spool_magic[8] = { 'R', 'M', 'S', 'P', 'O', 'O', 'L', '2' };

static int put_le(FILE *f, uint64_t v, int n)
{
	uint8_t le[8];

	for (int i = 0; i < n; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	return fwrite(le, 1, (size_t)n, f) == (size_t)n ? 0 : -1;
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * The spool directory may hold rows that the next start sends with this
 * collector's credentials: it must be this user's and writable by nobody
 * else (as OpenSSH's checks of ~/.ssh). Missing is fine (created at close,
 * mode 0700). 0, or -EPERM / -errno with err naming it, its owner or mode
 * and the fix.
 */
static int spool_dir_check(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(dir, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "store_spool_dir %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "store_spool_dir %s: not a directory (a symbolic link is not followed)", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "store_spool_dir %s: owned by uid %u, not by the collector's user (uid %u): chown it, or "
			 "use a directory of the collector's user",
			 dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & 022) {
		snprintf(err, errlen,
			 "store_spool_dir %s: mode %04o: writable by group or others, who could plant the rows sent "
			 "at the next start: chmod 700 %s",
			 dir, (unsigned)(st.st_mode & 07777), dir);
		return -EPERM;
	}
	return 0;
}

/* Does table t of batch b go to the spool? Unsent rows; not the run's own runs and limits rows when skip_run. */
static int spool_table(const struct batch *b, int t, int skip_run)
{
	if (b->sent[t] || !b->body[t]->len)
		return 0;
	return !(skip_run && !b->from_spool && (t == T_RUNS || t == T_LIMITS));
}

/*
 * The unsent tables of batches (the inflight group, then the queue) into
 * cs->spool_path as ONE batch (the rows of each table in their order; so a
 * spool written again and again does not grow by batches): the magic, the
 * store's name (u32 LE length, octets), then 'B', retired, raw, conns (u32
 * LE) and per table its length (u64 LE) and rows. skip_run: leave out the
 * run's own runs and limits rows (a run that never reached ClickHouse and
 * received no session). Written to a temporary name created anew
 * (O_EXCL after removing a stale one, O_NOFOLLOW), synced and renamed:
 * the file is whole or absent. *what gets the counts in words. 0 (also
 * when there is nothing to write: no file, *what empty), or -errno with err.
 */
static int spool_write(struct rm_chstore *cs, struct batch *const lists[2], int skip_run, char *what, size_t whatlen,
		       char *err, size_t errlen)
{
	char tmp[sizeof(cs->spool_path) + 8];
	uint64_t len[T__N] = { 0 }, retired = 0, raw = 0, conns = 0, total = 0;
	FILE *f;
	int fd, rc = 0;

	*what = '\0';
	for (int q = 0; q < 2; q++)
		for (const struct batch *b = lists[q]; b; b = b->next) {
			for (int t = 0; t < T__N; t++)
				if (spool_table(b, t, skip_run))
					len[t] += b->body[t]->len;
			retired += b->sent[T_EPOCHS] ? 0 : b->retired;
			raw += b->sent[T_RAW] ? 0 : b->raw;
			conns += b->sent[T_CONNS] ? 0 : b->conns;
		}
	for (int t = 0; t < T__N; t++)
		total += len[t];
	if (!total)
		return 0;
	snprintf(what, whatlen,
		 "%" PRIu64 " epoch outcomes, %" PRIu64 " raw records, %" PRIu64 " counts of refused connections, "
		 "%" PRIu64 " octets of rows in all",
		 retired, raw, conns, total);
	if (mkdir(cs->spool_dir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", cs->spool_dir, strerror(-rc));
		return rc;
	}
	if ((rc = spool_dir_check(cs->spool_dir, err, errlen)) < 0)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s.tmp", cs->spool_path);
	if (unlink(tmp) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		return rc;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "wb"))) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	errno = 0;
	if (fwrite(spool_magic, 1, sizeof(spool_magic), f) != sizeof(spool_magic) ||
	    put_le(f, strlen(cs->store_name), 4) ||
	    fwrite(cs->store_name, 1, strlen(cs->store_name), f) != strlen(cs->store_name))
		rc = -1;
	if (!rc)
		rc = fputc('B', f) == EOF || put_le(f, retired, 4) || put_le(f, raw, 4) || put_le(f, conns, 4);
	for (int t = 0; t < T__N && !rc; t++) {
		rc = put_le(f, len[t], 8);
		for (int q = 0; q < 2 && !rc; q++)
			for (const struct batch *b = lists[q]; b && !rc; b = b->next)
				if (spool_table(b, t, skip_run) &&
				    fwrite(b->body[t]->data, 1, b->body[t]->len, f) != b->body[t]->len)
					rc = -1;
	}
	if (!rc && (fflush(f) || fsync(fileno(f))))
		rc = -1;
	if (rc) {
		rc = -(errno ? errno : EIO);
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
	}
	if (fclose(f) && !rc) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
	}
	if (!rc && rename(tmp, cs->spool_path) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", cs->spool_path, strerror(-rc));
	}
	if (rc)
		unlink(tmp);
	return rc;
}

/*
 * The store a spool file's contents belong to: after the magic of this
 * version, its name into store; "" for a file of the first version (no
 * name). Returns the offset of the first batch, or 0 when data is not a
 * spool file.
 */
static size_t spool_header(const char *data, size_t len, char *store, size_t storelen)
{
	uint64_t n;

	*store = '\0';
	if (len >= sizeof(spool_magic_v1) && !memcmp(data, spool_magic_v1, sizeof(spool_magic_v1)))
		return sizeof(spool_magic_v1);
	if (len < sizeof(spool_magic) + 4 || memcmp(data, spool_magic, sizeof(spool_magic)))
		return 0;
	n = get_le((const uint8_t *)data + sizeof(spool_magic), 4);
	if (n > len - sizeof(spool_magic) - 4 || n >= storelen)
		return 0;
	memcpy(store, data + sizeof(spool_magic) + 4, n);
	store[n] = '\0';
	return sizeof(spool_magic) + 4 + n;
}

/*
 * The batches of the spool file (from_spool set), in order, into *out;
 * *n their number. 0 (also when there is no file: *out NULL), or -1 when
 * the file cannot be read or is malformed (err says why).
 */
static int spool_read(struct rm_chstore *cs, struct batch **out, unsigned *n, char *err, size_t errlen)
{
	gchar *data = NULL;
	gsize len = 0, off;
	GError *gerr = NULL;
	struct batch **tail = out;
	char store[sizeof(cs->store_name)];

	*out = NULL;
	*n = 0;
	if (access(cs->spool_path, F_OK) < 0)
		return 0;
	if (!g_file_get_contents(cs->spool_path, &data, &len, &gerr)) {
		snprintf(err, errlen, "%s", gerr->message);
		g_error_free(gerr);
		return -1;
	}
	off = spool_header(data, len, store, sizeof(store));
	if (!off)
		goto bad;
	if (*store && strcmp(store, cs->store_name)) {
		snprintf(err, errlen, "%s: rows of the store %.300s, not of %.300s", cs->spool_path, store,
			 cs->store_name);
		g_free(data);
		return -1;
	}
	while (off < len) {
		const uint8_t *p = (const uint8_t *)data;
		struct batch *b;

		if (p[off] != 'B' || len - off < 13)
			goto bad;
		b = batch_new();
		if (!b)
			goto bad;
		b->from_spool = 1;
		b->retired = (uint32_t)get_le(p + off + 1, 4);
		b->raw = (uint32_t)get_le(p + off + 5, 4);
		b->conns = (uint32_t)get_le(p + off + 9, 4);
		off += 13;
		*tail = b;
		tail = &b->next;
		(*n)++;
		for (int t = 0; t < T__N; t++) {
			uint64_t l;

			if (len - off < 8)
				goto bad;
			l = get_le(p + off, 8);
			off += 8;
			if (l > len - off)
				goto bad;
			g_byte_array_append(b->body[t], p + off, (guint)l);
			b->sent[t] = !l;
			off += l;
		}
		b->bytes = batch_size(b);
	}
	g_free(data);
	return 0;
bad:
	snprintf(err, errlen, "%s: not a spool file of this version, or cut short", cs->spool_path);
	g_free(data);
	while (*out) {
		struct batch *next = (*out)->next;

		batch_free(*out);
		*out = next;
	}
	*n = 0;
	return -1;
}

/*
 * Spool files of this collector ID for other stores (another URL or
 * database: other names, chstore.h), and one of the first version (no
 * store named): not sent here, logged with their store and what to do.
 */
static void spool_others(struct rm_chstore *cs)
{
	GDir *d = g_dir_open(cs->spool_dir, 0, NULL);
	const char *name, *mine = strrchr(cs->spool_path, '/') + 1;
	size_t idlen = strlen(cs->id);

	if (!d)
		return;
	while ((name = g_dir_read_name(d))) {
		char path[sizeof(cs->spool_path) + 256], store[sizeof(cs->store_name)];
		gchar *data = NULL;
		gsize len = 0;

		const char *rest = name + idlen + 1; /* "spool" (the first version) or "TAG.spool" */

		if (strncmp(name, cs->id, idlen) || name[idlen] != '.' || !strcmp(name, mine) ||
		    (strcmp(rest, "spool") && (strlen(rest) != RM_CHSTORE_SPOOL_TAG_LEN + 6 ||
					       strcmp(rest + RM_CHSTORE_SPOOL_TAG_LEN, ".spool") ||
					       strspn(rest, "0123456789abcdef") != RM_CHSTORE_SPOOL_TAG_LEN)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", cs->spool_dir, name);
		if (!g_file_get_contents(path, &data, &len, NULL))
			continue;
		if (!spool_header(data, len, store, sizeof(store)))
			rm_log(RM_LOG_WARNING, "ClickHouse store: %s is not a spool file of this version: not sent",
			       path);
		else if (!*store)
			rm_log(RM_LOG_WARNING,
			       "ClickHouse store: the spool %s of an earlier version names no store: not sent; if its "
			       "rows belong to this store (%s), rename it to %s and start collect again; else remove "
			       "it",
			       path, cs->store_name, cs->spool_path);
		else
			rm_log(RM_LOG_WARNING,
			       "ClickHouse store: the spool %s holds rows of another store (%s): not sent here; to "
			       "send "
			       "them, run collect once with --store clickhouse:%s, the same --collector-id and "
			       "--store-spool-dir (and that store's credentials); or remove the file to give them up",
			       path, store, store);
		g_free(data);
	}
	g_dir_close(d);
}

/* Every unsent table of group, in table order; 0, or the first failure's rm_ch_query result with err. */
static int send_group(struct rm_chstore *cs, struct rm_ch *ch, struct batch *group, char *err, size_t errlen)
{
	int rc = 0;

	for (int t = 0; t < T__N && !rc; t++)
		rc = send_table(cs, ch, group, t, err, errlen);
	return rc;
}

/*
 * What an earlier run of this collector ID spooled at its stop: sent now,
 * before the IDs are read (they continue after the spooled ones), and the
 * file removed. Not sent: queued first for the sender, which removes the
 * file once it inserted them. 1 sent or no spool, 0 queued, RM_BACKEND_REFUSED
 * (cs->err) when ClickHouse refuses for a reason no retry mends.
 */
static int spool_send(struct rm_chstore *cs, struct rm_ch *ch)
{
	char err[1600];
	struct batch *group, *last;
	uint64_t retired = 0, raw = 0, conns = 0, total = 0;
	unsigned n;
	int rc;

	if (spool_read(cs, &group, &n, err, sizeof(err)) < 0) {
		char bad[sizeof(cs->spool_path) + 8];

		snprintf(bad, sizeof(bad), "%s.bad", cs->spool_path);
		rename(cs->spool_path, bad);
		rm_log(RM_LOG_ERR, "ClickHouse store: spool %s; kept as %s, not sent", err, bad);
		return 1;
	}
	if (!group)
		return 1;
	/* the words of spool_write's line at the close that wrote the file */
	for (struct batch *b = group; b; b = b->next) {
		retired += b->retired;
		raw += b->raw;
		conns += b->conns;
		total += b->bytes;
	}
	snprintf(cs->spool_what, sizeof(cs->spool_what),
		 "%" PRIu64 " epoch outcomes, %" PRIu64 " raw records, %" PRIu64 " counts of refused connections, "
		 "%" PRIu64 " octets of rows in all",
		 retired, raw, conns, total);
	rc = ch ? send_group(cs, ch, group, err, sizeof(err)) : -1;
	if (rc == 0) {
		unlink(cs->spool_path);
		rm_log(RM_LOG_NOTICE, "ClickHouse store: the spool %s (%s) sent and removed", cs->spool_path,
		       cs->spool_what);
		while (group) {
			struct batch *next = group->next;

			batch_free(group);
			group = next;
		}
		return 1;
	}
	if (ch && rm_chstore_refusal_hint(err)) {
		snprintf(cs->err, sizeof(cs->err), "ClickHouse store: sending the spool %s: %s: refused, %s",
			 cs->spool_path, err, rm_chstore_refusal_hint(err));
		while (group) {
			struct batch *next = group->next;

			batch_free(group);
			group = next;
		}
		return RM_BACKEND_REFUSED;
	}
	for (last = group; last->next; last = last->next)
		;
	pthread_mutex_lock(&cs->mu);
	last->next = cs->head;
	if (!cs->head)
		cs->tail = &last->next;
	cs->head = group;
	for (struct batch *b = group; b; b = b->next)
		cs->queued_bytes += b->bytes;
	cs->spool_left = n;
	pthread_cond_signal(&cs->cv);
	pthread_mutex_unlock(&cs->mu);
	rm_log(RM_LOG_WARNING, "ClickHouse store: the spool %s (%s) waits: %s", cs->spool_path, cs->spool_what,
	       ch ? err : "no connection");
	return 0;
}

/*
 * Is the latest run of this collector ID held by a running collector
 * (chstore.h)? 0 no (stopped, or silent for RM_CHSTORE_LIVE_MS), 1 yes
 * (cs->err says which run), -1 ClickHouse did not answer (err).
 */
static int id_in_use(struct rm_chstore *cs, struct rm_ch *ch, const char *qid, char *err, size_t errlen)
{
	char *sql = g_strdup_printf("SELECT id, argMax(isNull(stopped_ms), version), max(version) FROM runs"
				    " WHERE collector_id = %s GROUP BY id ORDER BY id DESC LIMIT 1 FORMAT TabSeparated",
				    qid);
	uint64_t v[3], w[3], age_ms, until;
	int rc = query_u64(ch, sql, v, 3, err, errlen);

	if (rc < 0 || !v[0] || !v[1])
		goto out;
	age_ms = real_us() > v[2] ? (real_us() - v[2]) / 1000 : 0;
	if (age_ms >= RM_CHSTORE_LIVE_MS)
		goto out;
	/* Written lately: alive if it writes again before RM_CHSTORE_LIVE_MS passed since (a clock ahead: at most that). */
	until = mono_ms() + (RM_CHSTORE_LIVE_MS - age_ms);
	while (mono_ms() < until) {
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
			snprintf(cs->err, sizeof(cs->err),
				 "collector ID %s is in use by a running collector (run %" PRIu64
				 ", last written %s): give each collector its own --collector-id",
				 cs->id, w[0], when);
			rc = 1;
		}
		goto out;
	}
out:
	g_free(sql);
	return rc;
}

/*
 * IDs after the largest ones of this collector, and what an earlier run
 * left open ended: one blocking exchange at a run's start (before the
 * loop): the spool first, then whether the ID is in use. When ClickHouse
 * does not answer (or the spool waits), IDs from the clock (chstore.h).
 * 0, or RM_BACKEND_REFUSED with cs->err.
 */
static int start_ids(struct rm_chstore *cs, uint64_t now_ms)
{
	char err[512] = "", qid[2 * RM_CHSTORE_COLLECTOR_ID_MAX + 8], *sql;
	struct rm_ch_conf conf = cs->conf;
	struct rm_ch *ch;
	uint64_t v[6] = { 0 };
	int rc, spooled;

	conf.timeout_ms = RM_CHSTORE_REQUEST_MS;
	conf.connect_timeout_ms = RM_CHSTORE_CONNECT_MS;
	if (spool_dir_check(cs->spool_dir, cs->err, sizeof(cs->err)) < 0)
		return RM_BACKEND_REFUSED;
	spool_others(cs);
	ch = rm_ch_open(&conf, err, sizeof(err));
	rm_ch_quote(cs->id, qid, sizeof(qid));
	spooled = spool_send(cs, ch);
	if (spooled == RM_BACKEND_REFUSED) {
		rm_ch_close(ch);
		return RM_BACKEND_REFUSED;
	}
	rc = ch ? id_in_use(cs, ch, qid, err, sizeof(err)) : -1;
	if (rc >= 0) {
		pthread_mutex_lock(&cs->mu);
		cs->reached = 1;
		pthread_mutex_unlock(&cs->mu);
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
		snprintf(cs->err, sizeof(cs->err), "ClickHouse store: %s: refused, %s", err,
			 rm_chstore_refusal_hint(err));
		rm_ch_close(ch);
		return RM_BACKEND_REFUSED;
	}
	if (rc == 0 && !spooled) {
		rc = -1;
		snprintf(err, sizeof(err), "the spool of an earlier run waits");
	}
	if (rc == 0 && (rc = recover(cs, ch, qid, now_ms, err, sizeof(err))) == 0) {
		cs->next_run = (int64_t)v[0] + 1;
		cs->next_session = (int64_t)v[1] + 1;
		cs->next_epoch = (int64_t)v[2] + 1;
		cs->next_raw = (int64_t)v[3] + 1;
		cs->raw_rows = v[4];
		cs->raw_bytes = v[5];
		cs->recovered = 1;
	} else {
		int64_t base = (int64_t)(now_ms << 20);

		rm_log(RM_LOG_WARNING,
		       "ClickHouse store: %s; IDs continue from the clock (%" PRId64 "), sessions an earlier run left "
		       "open are ended at the next start that reaches ClickHouse",
		       err, base);
		cs->next_run = cs->next_session = cs->next_epoch = cs->next_raw = base;
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
static void run_row(struct rm_chstore *cs)
{
	GByteArray *b = cs->cur->body[T_RUNS];

	g_byte_array_set_size(b, 0);
	pthread_mutex_lock(&cs->mu);
	for (struct batch *q = cs->head; q; q = q->next) {
		size_t n = q->body[T_RUNS]->len;

		if (q->from_spool || !n)
			continue;
		g_byte_array_set_size(q->body[T_RUNS], 0);
		q->bytes -= n;
		cs->queued_bytes -= n;
	}
	pthread_mutex_unlock(&cs->mu);

	put_str(b, cs->id);
	put_u64(b, (uint64_t)cs->run_id);
	put_u64(b, next_version(cs));
	put_u64(b, cs->run.started_ms);
	put_nu64(b, !cs->run.stopped_ms, cs->run.stopped_ms);
	put_nstr(b, cs->run.listen);
	put_nstr(b, cs->run.transport);
	put_u64(b, cs->run.lim.max_sessions);
	put_u64(b, cs->run.lim.max_epochs);
	put_u64(b, cs->run.max_raw_records);
	put_u64(b, cs->run.lim.inactivity_timeout_ms);
	put_u64(b, cs->run.pen);
}

static int64_t ch_run_start(void *p, const char *listen, const char *transport, const struct rm_rules_limits *lim,
			    uint32_t max_raw_records, uint32_t pen, uint64_t now_ms)
{
	struct rm_chstore *cs = p;

	if (start_ids(cs, now_ms) == RM_BACKEND_REFUSED)
		return RM_BACKEND_REFUSED;
	cs->raw_limit = max_raw_records;
	cs->run_id = cs->next_run++;
	cs->run.started_ms = now_ms;
	cs->run.listen = strdup(listen ? listen : "");
	cs->run.transport = strdup(transport ? transport : "");
	cs->run.lim = *lim;
	cs->run.max_raw_records = max_raw_records;
	cs->run.pen = pen;
	if (!cs->run.listen || !cs->run.transport) {
		snprintf(cs->err, sizeof(cs->err), "out of memory");
		return -1;
	}
	run_row(cs);
	cs->last_heartbeat_ms = mono_ms();
	return cs->run_id;
}

static int ch_run_stop(void *p, int64_t run_id, uint64_t now_ms)
{
	struct rm_chstore *cs = p;

	cs->run.stopped_ms = now_ms ? now_ms : 1;
	run_row(cs);
	return 0;
}

static struct rm_sess_row *sess_get(struct rm_chstore *cs, int64_t id)
{
	return rm_sess_rows_get(cs->sessions, id, NULL);
}

static int64_t ch_session_start(void *p, int64_t run_id, const char *peer, const char *transport, uint64_t now_ms)
{
	struct rm_chstore *cs = p;
	int64_t id = cs->next_session;
	struct rm_sess_row *s = sess_get(cs, id);

	if (!s)
		return -1;
	cs->next_session++;
	cs->sessions_started++;
	return rm_sess_row_start(s, run_id, peer, transport, now_ms) ? -1 : id;
}

static int ch_session_peer(void *p, int64_t session_id, const char *subject)
{
	struct rm_sess_row *s = sess_get(p, session_id);

	return s ? rm_sess_row_peer(s, subject) : -1;
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
	struct rm_chstore *cs = p;

	if (!e->store_id)
		e->store_id = cs->next_epoch++;
	if (!e->retired_ms) {
		if (!e->store_slot) {
			g_ptr_array_add(cs->live, e);
			e->store_slot = cs->live->len;
		}
		return 0;
	}
	if (e->store_slot) {
		cs->live->pdata[e->store_slot - 1] = NULL;
		e->store_slot = 0;
	}
	if (!room(cs, 512)) {
		char d[200];

		snprintf(d, sizeof(d), "epoch %" PRIu64 " (%s) not stored: ClickHouse store buffer full",
			 e->key.epoch_id, rm_outcome_name(e->outcome));
		store_drop(cs, (int64_t)e->session_id, d);
		return 0;
	}
	rm_chstore_epoch_row(cs->cur->body[T_EPOCHS], cs->id, e, next_version(cs));
	cs->cur->retired++;
	return 0;
}

static int ch_raw(void *p, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		  const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		  size_t tmpl_len, uint64_t now_ms)
{
	struct rm_chstore *cs = p;
	GByteArray *b = cs->cur->body[T_RAW];

	if (cs->raw_rows >= cs->raw_limit) {
		char d[160];

		snprintf(d, sizeof(d), "raw record not kept (%s): max_raw_records %u reached", verdict, cs->raw_limit);
		return count_drop(cs, session_id, "raw-record-limit", d, now_ms) < 0 ? -1 : 0;
	}
	if (!room(cs, len + tmpl_len + 256)) {
		char d[200];

		snprintf(d, sizeof(d), "raw record not kept (%s): ClickHouse store buffer full", verdict);
		store_drop(cs, session_id, d);
		return 0;
	}
	put_str(b, cs->id);
	put_u64(b, (uint64_t)cs->next_raw++);
	put_u64(b, (uint64_t)session_id);
	put_u64(b, now_ms);
	put_u64(b, domain);
	put_u64(b, tid);
	put_nu64(b, !r, r ? r->epoch_id : 0);
	put_nu64(b, !r, r ? r->report_id : 0);
	put_nu64(b, !r, r ? r->flags : 0);
	put_str(b, verdict);
	put_str(b, reason ? reason : "");
	put_bytes(b, raw, len);
	put_u8(b, tmpl ? 0 : 1);
	if (tmpl)
		put_bytes(b, tmpl, tmpl_len);
	cs->cur->raw++;
	cs->raw_rows++;
	cs->raw_bytes += len + (tmpl ? tmpl_len : 0);
	return 1;
}

static int ch_drop(void *p, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	return count_drop(p, session_id, kind, detail, now_ms);
}

static int ch_connections(void *p, uint64_t minute_ms, const char *source, const char *outcome, uint64_t count,
			  uint64_t first_ms, uint64_t last_ms, const char *detail)
{
	struct rm_chstore *cs = p;
	GByteArray *b = cs->cur->body[T_CONNS];

	if (!room(cs, 512)) {
		char d[200];

		snprintf(d, sizeof(d),
			 "%" PRIu64 " refused connections (%s) from %s not stored: ClickHouse store "
			 "buffer full",
			 count, outcome, source);
		store_drop(cs, 0, d);
		return 0;
	}
	put_str(b, cs->id);
	put_u64(b, minute_ms);
	put_str(b, source);
	put_str(b, outcome);
	put_u64(b, count);
	put_u64(b, first_ms);
	put_u64(b, last_ms);
	put_nstr(b, detail);
	cs->cur->conns++;
	return 0;
}

static int ch_run_limit(void *p, int64_t run_id, const char *name, uint64_t value)
{
	struct rm_chstore *cs = p;
	GByteArray *b = cs->cur->body[T_LIMITS];

	put_str(b, cs->id);
	put_u64(b, (uint64_t)run_id);
	put_str(b, name);
	put_u64(b, value);
	put_u64(b, cs->limit_seq++);
	return 0;
}

static uint64_t ch_raw_bytes(void *p)
{
	return ((struct rm_chstore *)p)->raw_bytes;
}

uint64_t rm_chstore_waiting(struct rm_chstore *cs)
{
	return batch_size(cs->cur) + queued(cs);
}

static uint64_t ch_buffer_bytes(void *p)
{
	return rm_chstore_waiting(p);
}

static uint64_t ch_buffer_capacity(void *p)
{
	return ((struct rm_chstore *)p)->bound;
}

static const char *ch_collector_id(void *p)
{
	return ((struct rm_chstore *)p)->id;
}

/* ---------------- open, close ---------------- */

static void ch_close(void *p)
{
	struct rm_chstore *cs = p;
	int joined = 1, waits = 0;

	if (!cs)
		return;
	if (cs->thread_up) {
		struct timespec ts;

		handoff(cs);
		pthread_mutex_lock(&cs->mu);
		cs->stopping = 1;
		cs->stop_at_ms = mono_ms() + RM_CHSTORE_CLOSE_WAIT_MS;
		pthread_cond_broadcast(&cs->cv);
		pthread_mutex_unlock(&cs->mu);
		/* An INSERT under way ends within its own timeout. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (RM_CHSTORE_CLOSE_WAIT_MS + RM_CHSTORE_REQUEST_MS) / 1000 + 1;
		joined = pthread_timedjoin_np(cs->thread, NULL, &ts) == 0;
		pthread_mutex_lock(&cs->mu);
		waits = cs->inflight || cs->head;
		pthread_mutex_unlock(&cs->mu);
	}
	log_drops(cs);
	if (waits) {
		struct batch *lists[2];
		char err[800], what[200];
		int rc, skip_run;

		pthread_mutex_lock(&cs->mu);
		lists[0] = cs->inflight;
		lists[1] = cs->head;
		/* a run that never reached ClickHouse and received no session: its runs and limits rows are not kept */
		skip_run = !cs->reached && !cs->sessions_started;
		rc = spool_write(cs, lists, skip_run, what, sizeof(what), err, sizeof(err));
		pthread_mutex_unlock(&cs->mu);
		if (rc == 0 && *what) {
			rm_log(RM_LOG_NOTICE,
			       "ClickHouse store: not sent within %u ms at close, spooled to %s (sent at the next "
			       "start of collector ID %s with this store): %s",
			       RM_CHSTORE_CLOSE_WAIT_MS, cs->spool_path, cs->id, what);
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
			cs->store_drops += lost;
			rm_log(RM_LOG_ERR,
			       "ClickHouse store: not sent within %u ms at close and not spooled (collector resource "
			       "drops of kind store): %s; spool: %s",
			       RM_CHSTORE_CLOSE_WAIT_MS, what, err);
		}
	}
	if (cs->thread_up)
		rm_log(RM_LOG_INFO, "ClickHouse store closed: %" PRIu64 " store drops", cs->store_drops);
	if (!joined)
		return; /* the sender still holds the store: leave it to the process's exit */
	for (int q = 0; q < 2; q++) {
		struct batch *b = q ? cs->head : cs->inflight;

		while (b) {
			struct batch *next = b->next;

			batch_free(b);
			b = next;
		}
	}
	batch_free(cs->cur);
	for (guint i = 0; i < cs->live->len; i++)
		if (cs->live->pdata[i])
			((struct rm_epoch *)cs->live->pdata[i])->store_slot = 0;
	g_ptr_array_free(cs->live, TRUE);
	g_hash_table_destroy(cs->sessions);
	g_hash_table_destroy(cs->drops);
	g_hash_table_destroy(cs->drops_unlogged_by_session);
	pthread_mutex_destroy(&cs->mu);
	pthread_cond_destroy(&cs->cv);
	free(cs->run.listen);
	free(cs->run.transport);
	free(cs);
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
	struct rm_chstore *cs = calloc(1, sizeof(*cs));

	if (!cs) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	cs->conf = *conf;
	cs->conf.connect_timeout_ms = RM_CHSTORE_CONNECT_MS;
	cs->conf.timeout_ms = RM_CHSTORE_REQUEST_MS;
	/*
	 * An INSERT into a Distributed table returns once every shard has its
	 * rows, not when they are queued on the receiving server: a collector
	 * restarted at once then sees its largest IDs (docs/fleet.md "Writing").
	 * Tables that are not Distributed ignore the setting.
	 */
	snprintf(cs->conf.settings, sizeof(cs->conf.settings), "insert_distributed_sync=1");
	cs->bound = buffer_bytes ? buffer_bytes : RM_CHSTORE_BUFFER_DEFAULT;
	cs->cur = batch_new();
	cs->live = g_ptr_array_new();
	cs->sessions = rm_sess_rows_new();
	cs->drops = rm_drop_rows_new();
	cs->drops_unlogged_by_session = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	cs->tail = &cs->head;
	cs->last_handoff_ms = mono_ms();
	pthread_mutex_init(&cs->mu, NULL);
	pthread_cond_init(&cs->cv, NULL);
	if (!cs->cur) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (collector_id && *collector_id) {
		if (rm_chstore_check_id(collector_id, err, errlen) < 0)
			goto fail;
		snprintf(cs->id, sizeof(cs->id), "%s", collector_id);
	} else if (rm_chstore_default_id(cs->id, sizeof(cs->id), err, errlen) < 0) {
		goto fail;
	}
	if (!spool_dir || !*spool_dir)
		spool_dir = RM_STORE_SPOOL_DIR_DEFAULT;
	snprintf(cs->store_name, sizeof(cs->store_name), "%s?database=%s", conf->base, conf->database);
	{
		/* the spool belongs to its store: ID.TAG.spool, TAG the start of SHA-256 over the store's name */
		gchar *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, cs->store_name, -1);
		size_t n = (size_t)snprintf(cs->spool_path, sizeof(cs->spool_path), "%s/%s.%.*s.spool", spool_dir,
					    cs->id, RM_CHSTORE_SPOOL_TAG_LEN, sum);

		g_free(sum);
		if (n >= sizeof(cs->spool_path) - 8 || strlen(spool_dir) >= sizeof(cs->spool_dir)) {
			snprintf(err, errlen, "store_spool_dir: '%s' is too long", spool_dir);
			goto fail;
		}
		snprintf(cs->spool_dir, sizeof(cs->spool_dir), "%s", spool_dir);
	}
	if (pthread_create(&cs->thread, NULL, sender, cs) != 0) {
		snprintf(err, errlen, "the sender thread: %s", strerror(errno));
		goto fail;
	}
	cs->thread_up = 1;
	return cs;
fail:
	ch_close(cs);
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
	.epoch = ch_epoch,
	.raw = ch_raw,
	.drop = ch_drop,
	.connections = ch_connections,
	.run_limit = ch_run_limit,
	.raw_bytes = ch_raw_bytes,
	.buffer_bytes = ch_buffer_bytes,
	.buffer_capacity = ch_buffer_capacity,
	.collector_id = ch_collector_id,
};
