// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store.c - the collector's SQLite database: deferred writes, one
 * transaction per flush, retry after database errors, crash recovery at a
 * run's start. See store.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "collect/budget.h"
#include "common/log.h"
#include "store.h"
#include "store/columns.h"
#include "store/store_rows.h"

/*
 * An epoch's columns (columns.h), in the order of the epochs view (that of
 * the earlier layout's view of the same name); EC_* are their indexes, and
 * parameter EC_x + 1 of the epoch statements.
 */
#define EPOCH_COLUMNS          RM_EPOCH_COLUMN_NAMES
#define EPOCH_COLUMNS_AFTER_ID RM_EPOCH_COLUMN_NAMES_AFTER_ID

enum {
#define X(NAME, column, sqlite, ch, null, write, kind, field, read) EC_##NAME,
	RM_EPOCH_COLUMNS(X)
#undef X
		EC__N
};

/*
 * Epochs live in three tables, read together through the view epochs:
 *   epoch_rows     one row per epoch written while open, updated in place
 *                  until retired; also an epoch changed after it was
 *                  packed while retained (the row then replaces the packed
 *                  copy);
 *   epoch_archive  epochs settled (final or invalid) or retired at their
 *                  first write, packed: one row per transaction chunk,
 *                  written once. base is a JSON array of the EC_* columns
 *                  of the chunk's first epoch; data a JSON array with one
 *                  element per epoch: an object of the columns that differ
 *                  from base (key: the column's letter in ARC_KEYS, value
 *                  never null), or, when the epoch is NULL where base is
 *                  not (and in chunks of earlier versions), the array of
 *                  all its columns; retained counts the epochs of the chunk
 *                  written before their retirement (retired_ms null);
 *   epoch_retired  the retirement times of those: ranges of row IDs
 *                  (first_id..last_id) retired at one time.
 * A settled epoch stays retained (closure state) until a limit, the
 * inactivity timeout or its session's end retires it, and rarely changes
 * after: so most epochs are written once, packed, and their retirement
 * costs a share of one range; a row each costs several times more. The
 * epochs of a chunk share most columns (session, addresses, times to the
 * millisecond, outcome): packed as differences, an epoch takes some 40
 * octets instead of some 200.
 */
#define ARC_KEYS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

/* epoch_rows' column declarations: " id INTEGER PRIMARY KEY, session_id INTEGER, ..." */
#define DECL_(NAME, column, sqlite, ch, null, write, kind, field, read) DECL_##write(column, sqlite)
#define DECL_ID(column, sqlite)                                         " " #column " " sqlite
#define DECL_ONCE(column, sqlite)                                       ", " #column " " sqlite
#define DECL_UPD(column, sqlite)                                        ", " #column " " sqlite
#define EPOCH_ROWS_DECL                                                 RM_EPOCH_COLUMNS(DECL_)

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS runs ("
	" id INTEGER PRIMARY KEY, started_ms INTEGER, stopped_ms INTEGER, listen TEXT, transport TEXT,"
	" max_sessions INTEGER, max_epochs INTEGER, max_raw_records INTEGER, inactivity_timeout_ms INTEGER,"
	" pen INTEGER);"
	"CREATE TABLE IF NOT EXISTS sessions ("
	" id INTEGER PRIMARY KEY, run_id INTEGER, peer TEXT, peer_subject TEXT, transport TEXT,"
	" started_ms INTEGER, ended_ms INTEGER, end_reason TEXT, messages INTEGER DEFAULT 0,"
	" records INTEGER DEFAULT 0, octets INTEGER DEFAULT 0, rejected INTEGER DEFAULT 0,"
	" accepted INTEGER DEFAULT 0, repeats INTEGER DEFAULT 0, stale INTEGER DEFAULT 0,"
	" orphans INTEGER DEFAULT 0, unsupported INTEGER DEFAULT 0, invalid INTEGER DEFAULT 0,"
	" after_invalid INTEGER DEFAULT 0, key_conflicts INTEGER DEFAULT 0, resource_drops INTEGER DEFAULT 0,"
	" unbound INTEGER DEFAULT 0, seq_gaps INTEGER DEFAULT 0, seq_missing INTEGER DEFAULT 0,"
	" export_time_backwards INTEGER DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS epoch_rows (" EPOCH_ROWS_DECL ");"
	"CREATE TABLE IF NOT EXISTS epoch_archive ("
	" id INTEGER PRIMARY KEY, first_id INTEGER, last_id INTEGER, data TEXT, retained INTEGER DEFAULT 0,"
	" base TEXT);"
	"CREATE TABLE IF NOT EXISTS epoch_retired (first_id INTEGER PRIMARY KEY, last_id INTEGER, retired_ms INTEGER);"
	"CREATE TABLE IF NOT EXISTS raw_records ("
	" id INTEGER PRIMARY KEY, session_id INTEGER, received_ms INTEGER, domain INTEGER,"
	" template_id INTEGER, epoch_id INTEGER, report_id INTEGER, flags INTEGER, verdict TEXT,"
	" reason TEXT, record BLOB, template BLOB);"
	"CREATE TABLE IF NOT EXISTS drops ("
	" session_id INTEGER, kind TEXT, count INTEGER, first_ms INTEGER, last_ms INTEGER, last_detail TEXT,"
	" PRIMARY KEY(session_id, kind));"
	/* Refused connections and the limits of each run (docs/collector.md "What is stored"). */
	"CREATE TABLE IF NOT EXISTS connections ("
	" minute_ms INTEGER, source TEXT, outcome TEXT, count INTEGER, first_ms INTEGER, last_ms INTEGER,"
	" last_detail TEXT, PRIMARY KEY(minute_ms, source, outcome));"
	"CREATE TABLE IF NOT EXISTS run_limits ("
	" run_id INTEGER, name TEXT, value INTEGER, PRIMARY KEY(run_id, name));";

enum {
	Q_EPOCH_INSERT,
	Q_EPOCH_UPDATE,
	Q_EPOCH_LOST,
	Q_EPOCH_RETIRE,
	Q_ARCHIVE,
	Q_RETIRED,
	Q_SESSION,
	Q_RAW,
	Q_DROP,
	Q_CONNECTIONS,
	Q_RUN_LIMIT,
	Q_RUN_STOP,
	Q_BEGIN,
	Q_COMMIT,
	Q_ROLLBACK,
	Q__N
};

/*
 * Epoch statements share their parameter numbers: ?1 the row ID, ?2.. the
 * columns in EPOCH_COLUMNS order (EC_x + 1). The insert's "?" take them in
 * order.
 */
#define PARAM_(NAME, column, sqlite, ch, null, write, kind, field, read) PARAM_##write
#define PARAM_ID                                                         "?"
#define PARAM_ONCE                                                       ",?"
#define PARAM_UPD                                                        ",?"
#define EPOCH_PARAMS                                                     RM_EPOCH_COLUMNS(PARAM_)

static const char *const queries[Q__N] = {
	[Q_EPOCH_INSERT] = "INSERT INTO epoch_rows (" EPOCH_COLUMNS ") VALUES (" EPOCH_PARAMS ")",
	/* Q_EPOCH_UPDATE: made at open (epoch_update_sql), its parameters numbered by column */
	/* An epoch whose outcome could not be kept while the database was unavailable. */
	[Q_EPOCH_LOST] = "UPDATE epoch_rows SET retired_ms = ?2,"
			 " outcome = CASE WHEN state = 'open' THEN 'incomplete' ELSE outcome END,"
			 " reason = CASE WHEN state = 'open' THEN ?3 ELSE reason END"
			 " WHERE id = ?1 AND retired_ms IS NULL",
	/* A settled epoch whose row is up to date: its retirement sets only retired_ms. */
	[Q_EPOCH_RETIRE] = "UPDATE epoch_rows SET retired_ms = ?2 WHERE id = ?1",
	[Q_ARCHIVE] = "INSERT INTO epoch_archive (first_id, last_id, data, retained, base) VALUES (?1, ?2, ?3, ?4, ?5)",
	[Q_RETIRED] = "INSERT INTO epoch_retired (first_id, last_id, retired_ms) VALUES (?1, ?2, ?3)",
	[Q_SESSION] =
		"INSERT INTO sessions (id, run_id, peer, peer_subject, transport, started_ms, ended_ms, end_reason,"
		" messages, records, octets, rejected, accepted, repeats, stale, orphans, unsupported, invalid,"
		" after_invalid, key_conflicts, resource_drops, unbound, seq_gaps, seq_missing, export_time_backwards)"
		" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25)"
		" ON CONFLICT(id) DO UPDATE SET peer_subject = coalesce(excluded.peer_subject, peer_subject),"
		" ended_ms = excluded.ended_ms, end_reason = excluded.end_reason, messages = excluded.messages,"
		" records = excluded.records, octets = excluded.octets, rejected = excluded.rejected,"
		" accepted = excluded.accepted, repeats = excluded.repeats, stale = excluded.stale,"
		" orphans = excluded.orphans, unsupported = excluded.unsupported, invalid = excluded.invalid,"
		" after_invalid = excluded.after_invalid, key_conflicts = excluded.key_conflicts,"
		" resource_drops = excluded.resource_drops, unbound = excluded.unbound, seq_gaps = excluded.seq_gaps,"
		" seq_missing = excluded.seq_missing, export_time_backwards = excluded.export_time_backwards",
	[Q_RAW] = "INSERT INTO raw_records (session_id, received_ms, domain, template_id, epoch_id, report_id,"
		  " flags, verdict, reason, record, template) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
	[Q_DROP] = "INSERT INTO drops (session_id, kind, count, first_ms, last_ms, last_detail)"
		   " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(session_id, kind) DO UPDATE SET"
		   " count = count + ?3, last_ms = ?5, last_detail = ?6",
	[Q_CONNECTIONS] = "INSERT INTO connections (minute_ms, source, outcome, count, first_ms, last_ms, last_detail)"
			  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(minute_ms, source, outcome) DO UPDATE SET"
			  " count = count + ?4, last_ms = ?6, last_detail = ?7",
	[Q_RUN_LIMIT] = "INSERT OR REPLACE INTO run_limits (run_id, name, value) VALUES (?1, ?2, ?3)",
	[Q_RUN_STOP] = "UPDATE runs SET stopped_ms = ?2 WHERE id = ?1",
	[Q_BEGIN] = "BEGIN IMMEDIATE",
	[Q_COMMIT] = "COMMIT",
	[Q_ROLLBACK] = "ROLLBACK",
};

/*
 * The update of an epoch's row, its columns written with every version:
 * "UPDATE epoch_rows SET window=?14, ..., retired_ms=?42 WHERE id=?1 AND ?2
 * IS NULL". Owned by the caller (g_free).
 */
static char *epoch_update_sql(void)
{
	static const struct {
		const char *name;
		int every; /* written with every version (UPD) */
	} cols[] = {
#define UPD_(NAME, column, sqlite, ch, null, write, kind, field, read) { #column, UPD_##write },
#define UPD_ID                                                         0
#define UPD_ONCE                                                       0
#define UPD_UPD                                                        1
		RM_EPOCH_COLUMNS(UPD_)
#undef UPD_
	};
	GString *g = g_string_new("UPDATE epoch_rows SET");
	int first = 1;

	for (int c = 0; c < EC__N; c++) {
		if (!cols[c].every)
			continue;
		g_string_append_printf(g, "%s %s=?%d", first ? "" : ",", cols[c].name, c + 1);
		first = 0;
	}
	g_string_append(g, " WHERE id=?1 AND ?2 IS NULL");
	return g_string_free(g, FALSE);
}

/* A Template's octets shared by the raw records that carry it. */
struct tmpl_copy {
	unsigned int refs;
	size_t len;
	uint8_t data[];
};

struct raw_row {
	int64_t session_id;
	uint64_t received_ms, epoch_id, report_id;
	uint32_t domain;
	uint16_t tid, flags;
	uint8_t has_report;
	const char *verdict; /* a static name */
	char *reason;
	struct tmpl_copy *tmpl;
	size_t len;
	uint8_t rec[];
};

/* Refused connections of one minute, source and outcome, added to their row. */
struct conn_row {
	uint64_t minute_ms, count, first_ms, last_ms;
	char *source, *outcome, *detail;
};

/* One limit of a run (run_limits). */
struct limit_row {
	int64_t run_id;
	uint64_t value;
	char *name;
};

/* The retirement of a settled epoch whose row is up to date. */
struct retire_only {
	int64_t id;
	uint64_t retired_ms;
};

/* Packed epochs first..last retired at retired_ms (epoch_retired). */
struct retire_range {
	int64_t first, last;
	uint64_t retired_ms;
};

/* e->store_row: 0 nothing written, ROW_TABLE a row in epoch_rows, ROW_PACKED a copy in epoch_archive only. */
enum { ROW_NONE = 0, ROW_TABLE = 1, ROW_PACKED = 2 };

/* One column value of an epoch: an integer (SQLite's signed 64 bits, same bits as unsigned64), text, or NULL. */
struct val {
	enum { V_NULL, V_INT, V_TEXT } t;
	int64_t i;
	const char *s;
};

/* Bound of one packed epoch in JSON: 21 octets per integer and separator, 6 per character of text (\\u00XX), keys. */
#define ARC_ENTRY_MAX (8 + EC__N * 26 + 6 * (2 * INET6_ADDRSTRLEN + RM_EPOCH_REASON_MAX + 32))
_Static_assert(sizeof(ARC_KEYS) - 1 >= EC__N, "a key letter per epoch column");
_Static_assert(EC__N <= 64, "a bit per epoch column (archive_add)");

struct rm_store {
	sqlite3 *db;
	sqlite3_stmt *q[Q__N];
	int readonly;
	int lock_fd;
	uint32_t raw_limit;
	uint64_t raw_rows; /* rows in the database */
	int64_t next_session, next_epoch;

	/* What waits for the next transaction. */
	GPtrArray *epochs;    /* struct rm_epoch *; e->store_slot = index + 1 */
	uint32_t kept;        /* of them retired, owned here */
	GHashTable *sessions; /* int64 id -> struct rm_sess_row */
	uint32_t sessions_dirty;
	GPtrArray *raw; /* struct raw_row * */
	size_t raw_bytes;
	struct tmpl_copy *last_tmpl;
	GHashTable *drops; /* "session/kind" -> struct rm_drop_row */
	GHashTable *conns; /* "minute/outcome/source" -> struct conn_row */
	GArray *limits;    /* struct limit_row */
	GArray *lost;      /* int64 row IDs of epochs whose outcome was not kept */
	GArray *retire;    /* struct retire_only: settled epochs whose rows need only retired_ms */
	GArray *ranges;    /* struct retire_range: packed epochs whose copies need only retired_ms */
	char *arc;         /* the epoch_archive chunk being built (JSON) */
	size_t arc_len, arc_cap;
	int64_t arc_first, arc_last;
	uint32_t arc_retained; /* of the chunk's epochs, those not retired */
	/* The chunk's first epoch (its base): what the next epochs are compared with. */
	int64_t arc_base_int[EC__N]; /* EPOCH_INT_COLUMNS as written; EC_STATE, EC_OUTCOME: the enums */
	uint64_t arc_base_nulls;     /* its NULL columns (epoch_nulls) */
	char *arc_base_reason;       /* owned (g_strdup) */
	uint8_t arc_base_family, arc_base_src[16], arc_base_dst[16];                   /* its addresses as octets ... */
	char arc_base_src_text[INET6_ADDRSTRLEN], arc_base_dst_text[INET6_ADDRSTRLEN]; /* ... and as texts */
	char arc_base_json[ARC_ENTRY_MAX];                                             /* the base column */
	size_t arc_base_len;
	int64_t stop_run; /* runs row to mark stopped, 0: none */
	uint64_t stop_ms;

	/* Health. */
	uint64_t last_flush_ms; /* CLOCK_MONOTONIC */
	int down;               /* the last transaction failed */
	uint64_t down_since_ms, retry_at_ms, backoff_ms, last_remind_ms;
	uint64_t down_drops;     /* "database" drops since the database became unavailable */
	uint64_t database_drops; /* "database" drops since the store was opened */
	char down_why[200];
	int wal_pages;
	struct rm_budget *budget; /* charged for kept epochs and raw records waiting (NULL: none) */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

sqlite3 *rm_store_db(struct rm_store *st)
{
	return st->db;
}

const char *rm_store_error(struct rm_store *st)
{
	return sqlite3_errmsg(st->db);
}

int rm_store_unavailable(const struct rm_store *st)
{
	return st->down;
}

uint64_t rm_store_database_drops(const struct rm_store *st)
{
	return st->database_drops;
}

void rm_store_set_budget(struct rm_store *st, struct rm_budget *b)
{
	st->budget = b;
}

void rm_store_set_raw_limit(struct rm_store *st, uint32_t max_raw_records)
{
	st->raw_limit = max_raw_records;
}

/* ---------------- what waits ---------------- */

static void tmpl_put(struct tmpl_copy *t)
{
	if (t && --t->refs == 0)
		free(t);
}

static void raw_free(gpointer p)
{
	struct raw_row *r = p;

	free(r->reason);
	tmpl_put(r->tmpl);
	free(r);
}

static void conn_row_free(gpointer p)
{
	struct conn_row *c = p;

	free(c->source);
	free(c->outcome);
	free(c->detail);
	free(c);
}

static void limit_row_clear(gpointer p)
{
	free(((struct limit_row *)p)->name);
}

static int waiting(const struct rm_store *st)
{
	return st->epochs->len || st->sessions_dirty || st->raw->len || g_hash_table_size(st->drops) ||
	       g_hash_table_size(st->conns) || st->limits->len || st->lost->len || st->retire->len || st->ranges->len ||
	       st->stop_run;
}

static int count_drop(struct rm_store *st, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	return rm_drop_rows_count(st->drops, session_id, kind, detail, now_ms);
}

/* A record (or an epoch's outcome) the database could not take: a collector resource drop. */
static void database_drop(struct rm_store *st, int64_t session_id, const char *detail)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	count_drop(st, session_id, "database", detail, (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
	st->down_drops++;
	st->database_drops++;
}

/* ---------------- statements ---------------- */

static int step_reset(sqlite3_stmt *q)
{
	int rc = sqlite3_step(q);

	/* Bindings are not cleared: every statement binds all its parameters each time. */
	sqlite3_reset(q);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

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

static void addr_text(const struct rm_report *r, const uint8_t *a, char *buf, size_t len)
{
	if (r->family != 6)
		ipv4_text(a, buf);
	else if (!inet_ntop(AF_INET6, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static const char *state_name(enum rm_epoch_state s)
{
	return s == RM_EPOCH_OPEN ? "open" : s == RM_EPOCH_FINAL ? "final" : "invalid";
}

/*
 * The integer columns of an epoch's row and the fields they come from
 * (columns.h, kinds U64 and U8): X(EC_x, field); the others (EC_SRC,
 * EC_DST, EC_STATE, EC_OUTCOME, EC_REASON) are texts.
 */
#define INT_(NAME, column, sqlite, ch, null, write, kind, field, read) INT_##kind(EC_##NAME, field)
#define INT_U64(c, f)                                                  X(c, f)
#define INT_U8(c, f)                                                   X(c, f)
#define INT_ADDR(c, f)
#define INT_STATE(c, f)
#define INT_OUTCOME(c, f)
#define INT_TEXT(c, f)
#define EPOCH_INT_COLUMNS(X) RM_EPOCH_COLUMNS(INT_)

#define COL(c) (1ULL << (c))
/* The columns of the latest accepted report (null MEAS): NULL without one (no measurement). */
#define MEAS_(NAME, column, sqlite, ch, null, write, kind, field, read) MEAS_##null(EC_##NAME)
#define MEAS_MEAS(c)                                                    | COL(c)
#define MEAS_NN(c)
#define MEAS_RET(c)
#define MEAS_OPT(c)
#define EC_MEASUREMENT (0 RM_EPOCH_COLUMNS(MEAS_))

/* An epoch's NULL columns, a bit each: the measurement without an accepted report, retired_ms while retained. */
static uint64_t epoch_nulls(const struct rm_epoch *e)
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
	v[EC_STATE] = (struct val){ V_TEXT, 0, state_name(e->state) };
	v[EC_OUTCOME] = (struct val){ V_TEXT, 0, rm_outcome_name(e->outcome) };
	v[EC_REASON] = (struct val){ V_TEXT, 0, e->reason };
	for (uint64_t n = epoch_nulls(e); n; n &= n - 1)
		v[__builtin_ctzll(n)].t = V_NULL;
}

/* The columns of an epoch's row; src and dst hold the address texts (INET6_ADDRSTRLEN). */
static void epoch_values(const struct rm_epoch *e, struct val v[EC__N], char *src, char *dst)
{
	epoch_fields(e, v);
	addr_text(&e->key, e->key.src, src, INET6_ADDRSTRLEN);
	addr_text(&e->key, e->key.dst, dst, INET6_ADDRSTRLEN);
	v[EC_SRC].s = src;
	v[EC_DST].s = dst;
}

/*
 * Written packed (epoch_archive) rather than as a row: an epoch retired or
 * settled at its first write. A settled epoch changes afterwards only by
 * the counts of ignored records (repeats, stale, ...) or by invalidation;
 * then it gets a row, which replaces its packed copy in the view.
 */
static int packs(const struct rm_epoch *e)
{
	return e->store_row == ROW_NONE && (e->retired_ms || e->state != RM_EPOCH_OPEN);
}

/* A row in epoch_rows: inserted, or its state columns updated (the key columns are written once). */
static int write_epoch(struct rm_store *st, const struct rm_epoch *e)
{
	int fresh = e->store_row != ROW_TABLE;
	sqlite3_stmt *q = st->q[fresh ? Q_EPOCH_INSERT : Q_EPOCH_UPDATE];
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
	return step_reset(q);
}

/* ---------------- the packed archive ---------------- */

static int buf_reserve(struct rm_store *st, size_t more)
{
	if (st->arc_len + more <= st->arc_cap)
		return 0;
	size_t cap = st->arc_cap ? st->arc_cap : 1 << 16;

	while (cap < st->arc_len + more)
		cap *= 2;
	char *p = realloc(st->arc, cap);

	if (!p)
		return -1;
	st->arc = p;
	st->arc_cap = cap;
	return 0;
}

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				  "8081828384858687888990919293949596979899";

/* u < 10^8 in decimal, without leading zeros: 32-bit divisions, two digits each. */
static char *put_u27(char *p, uint32_t u)
{
	unsigned n = u < 10         ? 1
		     : u < 100      ? 2
		     : u < 1000     ? 3
		     : u < 10000    ? 4
		     : u < 100000   ? 5
		     : u < 1000000  ? 6
		     : u < 10000000 ? 7
				    : 8;
	char *t = p + n;

	while (u >= 100) {
		uint32_t d = u % 100;

		u /= 100;
		t -= 2;
		memcpy(t, digit_pairs + 2 * d, 2);
	}
	if (u >= 10)
		memcpy(t - 2, digit_pairs + 2 * u, 2);
	else
		t[-1] = (char)('0' + u);
	return p + n;
}

/* u < 10^8 as exactly 8 digits (leading zeros): two independent halves of four. */
static char *put_8digits(char *p, uint32_t u)
{
	uint32_t hi = u / 10000, lo = u % 10000;

	memcpy(p, digit_pairs + 2 * (hi / 100), 2);
	memcpy(p + 2, digit_pairs + 2 * (hi % 100), 2);
	memcpy(p + 4, digit_pairs + 2 * (lo / 100), 2);
	memcpy(p + 6, digit_pairs + 2 * (lo % 100), 2);
	return p + 8;
}

/*
 * Decimal (every epoch has some integers to write, many of them times of 13
 * digits): in groups of 8 digits, each written with 32-bit divisions.
 */
static char *put_i64(char *p, int64_t x)
{
	uint64_t u = x < 0 ? -(uint64_t)x : (uint64_t)x;

	if (x < 0)
		*p++ = '-';
	if (u < 100000000)
		return put_u27(p, (uint32_t)u);
	if (u < 10000000000000000ULL) {
		p = put_u27(p, (uint32_t)(u / 100000000));
		return put_8digits(p, (uint32_t)(u % 100000000));
	}
	p = put_u27(p, (uint32_t)(u / 10000000000000000ULL));
	p = put_8digits(p, (uint32_t)(u / 100000000 % 100000000));
	return put_8digits(p, (uint32_t)(u % 100000000));
}

/* A JSON string (RFC 8259): quotes, backslashes and control characters escaped. */
static char *put_str(char *p, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	*p++ = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			*p++ = '\\';
			*p++ = (char)c;
		} else if (c < 0x20) {
			memcpy(p, "\\u00", 4);
			p[4] = hex[c >> 4];
			p[5] = hex[c & 15];
			p += 6;
		} else {
			*p++ = (char)c;
		}
	}
	*p++ = '"';
	return p;
}

/* Column c of an epoch, not NULL, in JSON; src and dst: its address texts. */
static char *put_column(char *p, const struct rm_epoch *e, int c, const char *src, const char *dst)
{
	switch (c) {
#define X(col, f) \
	case col: \
		return put_i64(p, (int64_t)e->f);
		EPOCH_INT_COLUMNS(X)
#undef X
	case EC_SRC:
		return put_str(p, src);
	case EC_DST:
		return put_str(p, dst);
	case EC_STATE:
		return put_str(p, state_name(e->state));
	case EC_OUTCOME:
		return put_str(p, rm_outcome_name(e->outcome));
	default:
		return put_str(p, e->reason);
	}
}

/* All columns as a JSON array, [v0,v1,...]; nulls: the NULL ones (epoch_nulls). */
static char *put_columns(char *p, const struct rm_epoch *e, uint64_t nulls, const char *src, const char *dst)
{
	*p++ = '[';
	for (int c = 0; c < EC__N; c++) {
		if (c)
			*p++ = ',';
		if (nulls & COL(c)) {
			memcpy(p, "null", 4);
			p += 4;
		} else {
			p = put_column(p, e, c, src, dst);
		}
	}
	*p++ = ']';
	return p;
}

static void base_clear(struct rm_store *st)
{
	g_free(st->arc_base_reason);
	st->arc_base_reason = NULL;
	st->arc_base_len = 0;
}

/* The chunk's first epoch becomes its base (reason copied, its JSON array kept for the row). */
static void base_set(struct rm_store *st, const struct rm_epoch *e)
{
	int64_t *b = st->arc_base_int;

	base_clear(st);
#define X(c, f) b[c] = (int64_t)e->f;
	EPOCH_INT_COLUMNS(X)
#undef X
	b[EC_STATE] = e->state;
	b[EC_OUTCOME] = e->outcome;
	st->arc_base_nulls = epoch_nulls(e);
	st->arc_base_reason = g_strdup(e->reason);
	st->arc_base_family = e->key.family;
	memcpy(st->arc_base_src, e->key.src, sizeof(st->arc_base_src));
	memcpy(st->arc_base_dst, e->key.dst, sizeof(st->arc_base_dst));
	addr_text(&e->key, e->key.src, st->arc_base_src_text, sizeof(st->arc_base_src_text));
	addr_text(&e->key, e->key.dst, st->arc_base_dst_text, sizeof(st->arc_base_dst_text));
	st->arc_base_len = (size_t)(put_columns(st->arc_base_json, e, st->arc_base_nulls, st->arc_base_src_text,
						st->arc_base_dst_text) -
				    st->arc_base_json);
}

/*
 * Append an epoch to the archive chunk: the columns that differ from the
 * chunk's base as an object ({"a":1,...}), or all of them as an array when
 * it is NULL where the base is not (an object cannot say "NULL here").
 * Compared field by field with the base's values (state and outcome by
 * their enums, the reason's text only when its first character matches);
 * a value is formatted only when it is written. An address is written as
 * text only when its octets or family differ from the base's (the same
 * octets and family give the same text), which in a chunk of one exporter
 * is almost never.
 */
static int archive_add(struct rm_store *st, const struct rm_epoch *e)
{
	char src_text[INET6_ADDRSTRLEN], dst_text[INET6_ADDRSTRLEN];
	const char *src = st->arc_base_src_text, *dst = st->arc_base_dst_text;
	const int64_t *b = st->arc_base_int;
	const char *reason = e->reason, *base_reason;
	uint64_t nulls, diff = 0; /* bit c: column c differs from the base */
	char *p;

	if (buf_reserve(st, ARC_ENTRY_MAX + 2) < 0)
		return -1;
	if (st->arc_len == 0)
		base_set(st, e);
	base_reason = st->arc_base_reason;
	nulls = epoch_nulls(e);
#define X(c, f) diff |= (uint64_t)((int64_t)e->f != b[c]) << (c);
	EPOCH_INT_COLUMNS(X)
#undef X
	diff |= (uint64_t)((int64_t)e->state != b[EC_STATE]) << EC_STATE;
	diff |= (uint64_t)((int64_t)e->outcome != b[EC_OUTCOME]) << EC_OUTCOME;
	if (reason[0] != base_reason[0] || (reason[0] && strcmp(reason, base_reason)))
		diff |= COL(EC_REASON);
	if (st->arc_base_family != e->key.family || memcmp(st->arc_base_src, e->key.src, 16)) {
		diff |= COL(EC_SRC);
		addr_text(&e->key, e->key.src, src_text, sizeof(src_text));
		src = src_text;
	}
	if (st->arc_base_family != e->key.family || memcmp(st->arc_base_dst, e->key.dst, 16)) {
		diff |= COL(EC_DST);
		addr_text(&e->key, e->key.dst, dst_text, sizeof(dst_text));
		dst = dst_text;
	}
	/* NULL in both: the same; a value where the base is NULL: different. */
	diff = (diff & ~(nulls | st->arc_base_nulls)) | (st->arc_base_nulls & ~nulls);
	p = st->arc + st->arc_len;
	*p++ = st->arc_len == 0 ? '[' : ',';
	if (nulls & ~st->arc_base_nulls) {
		p = put_columns(p, e, nulls, src, dst);
	} else {
		char sep = '{';

		for (; diff; diff &= diff - 1) {
			int c = __builtin_ctzll(diff);

			*p++ = sep;
			*p++ = '"';
			*p++ = ARC_KEYS[c];
			*p++ = '"';
			*p++ = ':';
			p = put_column(p, e, c, src, dst);
			sep = ',';
		}
		if (sep == '{')
			*p++ = '{';
		*p++ = '}';
	}
	st->arc_len = (size_t)(p - st->arc);
	st->arc_retained += !e->retired_ms;
	if (!st->arc_first)
		st->arc_first = e->store_id;
	st->arc_last = e->store_id;
	return 0;
}

/* Write the archive chunk (one epoch_archive row). */
static int archive_write(struct rm_store *st)
{
	sqlite3_stmt *q = st->q[Q_ARCHIVE];
	int rc;

	if (!st->arc_len)
		return 0;
	if (buf_reserve(st, 1) < 0)
		return -1;
	st->arc[st->arc_len++] = ']';
	sqlite3_bind_int64(q, 1, st->arc_first);
	sqlite3_bind_int64(q, 2, st->arc_last);
	sqlite3_bind_text(q, 3, st->arc, (int)st->arc_len, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, st->arc_retained);
	sqlite3_bind_text(q, 5, st->arc_base_json, (int)st->arc_base_len, SQLITE_STATIC);
	rc = step_reset(q);
	st->arc_len = 0;
	st->arc_first = st->arc_last = 0;
	st->arc_retained = 0;
	return rc;
}

static void bind_text_or_null(sqlite3_stmt *q, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, i);
}

static int write_session(struct rm_store *st, const struct rm_sess_row *s)
{
	sqlite3_stmt *q = st->q[Q_SESSION];
	const uint64_t *v = s->verdicts;
	const uint64_t vals[] = { s->c.messages,         s->c.records,    s->c.octets,           s->c.rejected,
				  v[RM_V_ACCEPTED],      v[RM_V_REPEAT],  v[RM_V_STALE],         v[RM_V_ORPHAN],
				  v[RM_V_UNSUPPORTED],   v[RM_V_INVALID], v[RM_V_AFTER_INVALID], v[RM_V_KEY_CONFLICT],
				  v[RM_V_RESOURCE_DROP], v[RM_V_UNBOUND], s->c.seq_gaps,         s->c.seq_missing,
				  s->c.time_backwards };

	sqlite3_bind_int64(q, 1, s->id);
	sqlite3_bind_int64(q, 2, s->run_id);
	bind_text_or_null(q, 3, s->peer);
	bind_text_or_null(q, 4, s->subject);
	bind_text_or_null(q, 5, s->transport);
	sqlite3_bind_int64(q, 6, (int64_t)s->started_ms);
	if (s->ended_ms)
		sqlite3_bind_int64(q, 7, (int64_t)s->ended_ms);
	else
		sqlite3_bind_null(q, 7);
	bind_text_or_null(q, 8, s->reason);
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		sqlite3_bind_int64(q, 9 + (int)i, (int64_t)vals[i]);
	return step_reset(q);
}

static int write_raw(struct rm_store *st, const struct raw_row *r)
{
	sqlite3_stmt *q = st->q[Q_RAW];

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
	return step_reset(q);
}

static int write_drop(struct rm_store *st, const struct rm_drop_row *d)
{
	sqlite3_stmt *q = st->q[Q_DROP];

	sqlite3_bind_int64(q, 1, d->session_id);
	sqlite3_bind_text(q, 2, d->kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, (int64_t)d->count);
	sqlite3_bind_int64(q, 4, (int64_t)d->first_ms);
	sqlite3_bind_int64(q, 5, (int64_t)d->last_ms);
	sqlite3_bind_text(q, 6, d->detail, -1, SQLITE_STATIC);
	return step_reset(q);
}

static int write_conn(struct rm_store *st, const struct conn_row *c)
{
	sqlite3_stmt *q = st->q[Q_CONNECTIONS];

	sqlite3_bind_int64(q, 1, (int64_t)c->minute_ms);
	sqlite3_bind_text(q, 2, c->source, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, c->outcome, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, (int64_t)c->count);
	sqlite3_bind_int64(q, 5, (int64_t)c->first_ms);
	sqlite3_bind_int64(q, 6, (int64_t)c->last_ms);
	sqlite3_bind_text(q, 7, c->detail, -1, SQLITE_STATIC);
	return step_reset(q);
}

static int write_limit(struct rm_store *st, const struct limit_row *l)
{
	sqlite3_stmt *q = st->q[Q_RUN_LIMIT];

	sqlite3_bind_int64(q, 1, l->run_id);
	sqlite3_bind_text(q, 2, l->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, (int64_t)l->value);
	return step_reset(q);
}

static int write_lost(struct rm_store *st, int64_t id, uint64_t now_ms)
{
	sqlite3_stmt *q = st->q[Q_EPOCH_LOST];

	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int64(q, 2, (int64_t)now_ms);
	sqlite3_bind_text(q, 3,
			  "collector resource drop: its outcome could not be stored while the database was "
			  "unavailable",
			  -1, SQLITE_STATIC);
	return step_reset(q);
}

/* ---------------- one transaction ---------------- */

static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* What waits, once its transaction is committed. */
static void written(struct rm_store *st)
{
	GHashTableIter it;
	gpointer v;

	for (guint i = 0; i < st->epochs->len; i++) {
		struct rm_epoch *e = g_ptr_array_index(st->epochs, i);

		if (e->sink_keeps) {
			rm_rules_epoch_free(e);
			rm_budget_give(st->budget, RM_BUDGET_EPOCH_BYTES); /* the charge the rules passed on */
		} else {
			e->store_row = packs(e) ? ROW_PACKED : ROW_TABLE;
			e->store_slot = 0;
		}
	}
	g_ptr_array_set_size(st->epochs, 0);
	st->kept = 0;
	g_hash_table_iter_init(&it, st->sessions);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct rm_sess_row *s = v;

		s->dirty = 0;
		if (s->ended_ms)
			g_hash_table_iter_remove(&it);
	}
	st->sessions_dirty = 0;
	st->raw_rows += st->raw->len;
	g_ptr_array_set_size(st->raw, 0); /* frees the rows */
	rm_budget_give(st->budget, st->raw_bytes);
	st->raw_bytes = 0;
	g_hash_table_remove_all(st->drops);
	g_hash_table_remove_all(st->conns);
	g_array_set_size(st->limits, 0); /* frees the names */
	g_array_set_size(st->lost, 0);
	g_array_set_size(st->retire, 0);
	g_array_set_size(st->ranges, 0);
	st->stop_run = 0;
}

/* Write everything that waits in one transaction. 0, or -1 with the transaction rolled back and everything kept. */
static int flush(struct rm_store *st)
{
	GHashTableIter it;
	gpointer v;
	uint64_t now = real_ms();

	st->last_flush_ms = mono_ms();
	if (!waiting(st))
		return 0;
	if (step_reset(st->q[Q_BEGIN]) < 0)
		goto fail;
	g_hash_table_iter_init(&it, st->sessions);
	while (st->sessions_dirty && g_hash_table_iter_next(&it, NULL, &v))
		if (((struct rm_sess_row *)v)->dirty && write_session(st, v) < 0)
			goto fail;
	for (guint i = 0; i < st->epochs->len; i++) {
		struct rm_epoch *e = g_ptr_array_index(st->epochs, i);

		if (packs(e)) {
			if (archive_add(st, e) < 0 || (st->arc_len >= RM_STORE_ARCHIVE_CHUNK && archive_write(st) < 0))
				goto fail;
		} else if (write_epoch(st, e) < 0) {
			goto fail;
		}
	}
	if (archive_write(st) < 0)
		goto fail;
	for (guint i = 0; i < st->retire->len; i++) {
		const struct retire_only *r = &g_array_index(st->retire, struct retire_only, i);

		sqlite3_bind_int64(st->q[Q_EPOCH_RETIRE], 1, r->id);
		sqlite3_bind_int64(st->q[Q_EPOCH_RETIRE], 2, (int64_t)r->retired_ms);
		if (step_reset(st->q[Q_EPOCH_RETIRE]) < 0)
			goto fail;
	}
	for (guint i = 0; i < st->ranges->len; i++) {
		const struct retire_range *r = &g_array_index(st->ranges, struct retire_range, i);

		sqlite3_bind_int64(st->q[Q_RETIRED], 1, r->first);
		sqlite3_bind_int64(st->q[Q_RETIRED], 2, r->last);
		sqlite3_bind_int64(st->q[Q_RETIRED], 3, (int64_t)r->retired_ms);
		if (step_reset(st->q[Q_RETIRED]) < 0)
			goto fail;
	}
	for (guint i = 0; i < st->lost->len; i++)
		if (write_lost(st, g_array_index(st->lost, int64_t, i), now) < 0)
			goto fail;
	for (guint i = 0; i < st->raw->len; i++)
		if (write_raw(st, g_ptr_array_index(st->raw, i)) < 0)
			goto fail;
	g_hash_table_iter_init(&it, st->drops);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (write_drop(st, v) < 0)
			goto fail;
	g_hash_table_iter_init(&it, st->conns);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (write_conn(st, v) < 0)
			goto fail;
	for (guint i = 0; i < st->limits->len; i++)
		if (write_limit(st, &g_array_index(st->limits, struct limit_row, i)) < 0)
			goto fail;
	if (st->stop_run) {
		sqlite3_bind_int64(st->q[Q_RUN_STOP], 1, st->stop_run);
		sqlite3_bind_int64(st->q[Q_RUN_STOP], 2, (int64_t)st->stop_ms);
		if (step_reset(st->q[Q_RUN_STOP]) < 0)
			goto fail;
	}
	if (step_reset(st->q[Q_COMMIT]) < 0)
		goto fail;
	written(st);
	return 0;
fail:
	st->arc_len = 0;
	st->arc_first = st->arc_last = 0;
	st->arc_retained = 0;
	snprintf(st->down_why, sizeof(st->down_why), "%s", sqlite3_errmsg(st->db));
	if (!sqlite3_get_autocommit(st->db))
		step_reset(st->q[Q_ROLLBACK]);
	return -1;
}

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	((struct rm_store *)arg)->wal_pages = pages;
	return SQLITE_OK;
}

/*
 * Checkpoints are ours (wal_autocheckpoint = 0): the WAL is copied back into
 * the database when it reaches RM_STORE_WAL_CHECKPOINT_PAGES, or
 * RM_STORE_WAL_IDLE_PAGES when nothing waits, not in the middle of a burst.
 */
static void checkpoint(struct rm_store *st, int idle)
{
	int limit = idle ? RM_STORE_WAL_IDLE_PAGES : RM_STORE_WAL_CHECKPOINT_PAGES;

	if (st->wal_pages < limit)
		return;
	if (sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) == SQLITE_OK)
		st->wal_pages = 0;
}

/* Try a transaction now; the health bookkeeping and its log lines. */
static void attempt(struct rm_store *st)
{
	uint64_t t;
	unsigned n_epochs = st->epochs->len, n_raw = st->raw->len;

	if (flush(st) == 0) {
		if (st->down) {
			rm_log(RM_LOG_NOTICE,
			       "database writable again after %" PRIu64 " ms; wrote %u epoch rows and %u raw records "
			       "that waited; %" PRIu64 " records or outcomes could not be kept meanwhile (collector "
			       "resource drops of kind 'database')",
			       mono_ms() - st->down_since_ms, n_epochs, n_raw, st->down_drops);
			st->down = 0;
		}
		checkpoint(st, 0);
		return;
	}
	t = mono_ms();
	if (!st->down) {
		st->down = 1;
		st->down_since_ms = st->last_remind_ms = t;
		st->backoff_ms = RM_STORE_RETRY_MIN_MS;
		st->down_drops = 0;
		rm_log(RM_LOG_ERR,
		       "database unavailable (%s): %u epoch rows, %u sessions and %u raw records wait in memory; "
		       "retrying every %u..%u ms",
		       st->down_why, n_epochs, g_hash_table_size(st->sessions), n_raw, RM_STORE_RETRY_MIN_MS,
		       RM_STORE_RETRY_MAX_MS);
	} else {
		st->backoff_ms =
			st->backoff_ms * 2 > RM_STORE_RETRY_MAX_MS ? RM_STORE_RETRY_MAX_MS : st->backoff_ms * 2;
		if (t - st->last_remind_ms >= RM_STORE_REMIND_MS) {
			st->last_remind_ms = t;
			rm_log(RM_LOG_WARNING,
			       "database still unavailable after %" PRIu64 " s (%s): %u epoch rows and %u raw records "
			       "wait; %" PRIu64 " records or outcomes could not be kept so far",
			       (t - st->down_since_ms) / 1000, st->down_why, n_epochs, n_raw, st->down_drops);
		}
	}
	st->retry_at_ms = t + st->backoff_ms;
}

int rm_store_begin(struct rm_store *st)
{
	return 0;
}

int rm_store_commit(struct rm_store *st)
{
	uint64_t t = mono_ms();

	if (st->readonly)
		return 0;
	if (st->down) {
		if (t >= st->retry_at_ms)
			attempt(st);
		return 0;
	}
	if (!waiting(st)) {
		if (t - st->last_flush_ms >= RM_STORE_FLUSH_MS)
			checkpoint(st, 1);
		return 0;
	}
	if (t - st->last_flush_ms >= RM_STORE_FLUSH_MS || st->kept >= RM_STORE_FLUSH_EPOCHS ||
	    st->raw_bytes >= RM_STORE_FLUSH_RAW_BYTES)
		attempt(st);
	return 0;
}

int rm_store_flush(struct rm_store *st)
{
	if (!st->readonly && (!st->down || mono_ms() >= st->retry_at_ms))
		attempt(st);
	return 0;
}

/* ---------------- writes (deferred) ---------------- */

int rm_store_make_room(struct rm_store *st)
{
	if (st->readonly || st->down || (!st->kept && !st->raw->len))
		return -1;
	attempt(st);
	return st->down ? -1 : 0;
}

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
	if (e->retired_ms && !e->store_slot && st->kept >= RM_STORE_MAX_KEPT_EPOCHS) {
		if (!st->down)
			attempt(st); /* makes room unless the database is unavailable */
		if (st->down) {
			char d[200];

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
	if (!e->store_slot) {
		g_ptr_array_add(st->epochs, e);
		e->store_slot = st->epochs->len;
	}
	if (e->retired_ms && !e->sink_keeps) {
		e->sink_keeps = 1;
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

int rm_store_session_peer(struct rm_store *st, int64_t session_id, const char *subject)
{
	struct rm_sess_row *s = session_row(st, session_id);

	return s ? rm_sess_row_peer(s, subject) : -1;
}

int rm_store_session_end(struct rm_store *st, int64_t session_id, const char *reason, uint64_t now_ms,
			 const struct rm_session_counts *c)
{
	struct rm_sess_row *s = session_row(st, session_id);

	return s ? rm_sess_row_end(s, reason, now_ms, c) : -1;
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
			attempt(st);
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
			attempt(st); /* the raw records waiting give their charges back */
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
				raw_free(row);
				rm_budget_give(st->budget, cost);
				return -1;
			}
			t->refs = 1; /* last_tmpl's reference */
			t->len = tmpl_len;
			memcpy(t->data, tmpl, tmpl_len);
			tmpl_put(st->last_tmpl);
			st->last_tmpl = t;
		}
		row->tmpl = st->last_tmpl;
		row->tmpl->refs++;
	}
	g_ptr_array_add(st->raw, row);
	st->raw_bytes += cost;
	return 1;
}

/* ---------------- runs, recovery ---------------- */

static int64_t scalar(struct rm_store *st, const char *sql)
{
	sqlite3_stmt *q;
	int64_t v = -1;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

/* One-off statement with text/integer arguments described by fmt: 'i' int64, 's' text. Changes, or -1. */
static int64_t exec_args(struct rm_store *st, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *q;
	va_list ap;
	int rc;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	va_start(ap, fmt);
	for (int i = 0; fmt[i]; i++) {
		if (fmt[i] == 'i')
			sqlite3_bind_int64(q, i + 1, va_arg(ap, int64_t));
		else
			bind_text_or_null(q, i + 1, va_arg(ap, const char *));
	}
	va_end(ap);
	rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? sqlite3_changes(st->db) : -1;
}

/* Column c of a packed epoch, in SQL (j: its json_each row, a: its epoch_archive row). */
static void packed_col(GString *g, int c)
{
	g_string_append_printf(g,
			       "CASE WHEN j.type = 'array' THEN json_extract(j.value, '$[%d]') ELSE coalesce("
			       "json_extract(j.value, '$.%c'), json_extract(a.base, '$[%d]')) END",
			       c, ARC_KEYS[c], c);
}

/* The retirement time, from epoch_retired, of the packed epoch whose row ID is the SQL expression id; or NULL. */
static void retirement_of(GString *g, const char *id)
{
	g_string_append_printf(g,
			       "(SELECT CASE WHEN r.last_id >= %s THEN r.retired_ms END FROM epoch_retired r"
			       " WHERE r.first_id <= %s ORDER BY r.first_id DESC LIMIT 1)",
			       id, id);
}

/*
 * Sessions that an earlier run left open (it was killed, or crashed): a
 * session failure for [SEQOBS] ("Collector Processing": a session failure
 * without finalEpoch leaves the epoch incomplete). The reason mirrors the
 * rules engine's retirement text.
 */
static int recover(struct rm_store *st, uint64_t now_ms, int64_t *n_sessions, int64_t *n_open, int64_t *n_settled)
{
	static const char cause[] = "session ended: collector restarted (the run that received it ended without "
				    "closing its session)";
	int64_t packed;
	GString *sql = g_string_new(NULL);

	*n_sessions = exec_args(st, "UPDATE sessions SET ended_ms = ?1, end_reason = ?2 WHERE ended_ms IS NULL", "is",
				(int64_t)now_ms,
				"collector restarted: the run that held this session ended without closing it");
	*n_open = exec_args(
		st,
		"UPDATE epoch_rows SET retired_ms = ?1, outcome = 'incomplete', reason = CASE"
		" WHEN coalesce(reports_accepted, 0) = 0 THEN ?2 || '; no accepted report'"
		" ELSE ?2 || ' without a final report (last report ' || last_report_id || ')' ||"
		" CASE WHEN missing_reports > 0 THEN '; ' || missing_reports || ' reports missing' ELSE '' END"
		" END WHERE retired_ms IS NULL AND state = 'open'",
		"is", (int64_t)now_ms, cause);
	*n_settled =
		exec_args(st, "UPDATE epoch_rows SET retired_ms = ?1 WHERE retired_ms IS NULL", "i", (int64_t)now_ms);
	/* Packed copies written before their retirement (only settled epochs are), in chunks with retained > 0. */
	g_string_append(
		sql, "INSERT INTO epoch_retired (first_id, last_id, retired_ms) SELECT p.id, p.id, ?1 FROM (SELECT ");
	packed_col(sql, EC_ID);
	g_string_append(sql, " AS id FROM epoch_archive a, json_each(a.data) j WHERE a.retained > 0 AND ");
	packed_col(sql, EC_RETIRED);
	g_string_append(sql, " IS NULL) p WHERE NOT EXISTS (SELECT 1 FROM epoch_rows o WHERE o.id = p.id) AND ");
	retirement_of(sql, "p.id");
	g_string_append(sql, " IS NULL ORDER BY p.id");
	packed = exec_args(st, sql->str, "i", (int64_t)now_ms);
	g_string_free(sql, TRUE);
	if (packed < 0 || exec_args(st, "UPDATE epoch_archive SET retained = 0 WHERE retained > 0", "") < 0)
		return -1;
	*n_settled += packed;
	return *n_sessions < 0 || *n_open < 0 || *n_settled < 0 ? -1 : 0;
}

int64_t rm_store_run_start(struct rm_store *st, const char *listen, const char *transport,
			   const struct rm_rules_limits *lim, uint32_t max_raw_records, uint32_t pen, uint64_t now_ms)
{
	int64_t id = -1, ns = 0, no = 0, nd = 0;

	st->raw_limit = max_raw_records;
	/* At start, another process's write lock may be waited for longer than in the loop. */
	sqlite3_busy_timeout(st->db, 5000);
	if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	if (recover(st, now_ms, &ns, &no, &nd) < 0 ||
	    exec_args(st,
		      "INSERT INTO runs (started_ms, listen, transport, max_sessions, max_epochs, max_raw_records,"
		      " inactivity_timeout_ms, pen) VALUES (?,?,?,?,?,?,?,?)",
		      "issiiiii", (int64_t)now_ms, listen, transport, (int64_t)lim->max_sessions,
		      (int64_t)lim->max_epochs, (int64_t)max_raw_records, (int64_t)lim->inactivity_timeout_ms,
		      (int64_t)pen) < 0) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		goto out;
	}
	id = sqlite3_last_insert_rowid(st->db);
	if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		id = -1;
		goto out;
	}
	if (ns > 0 || no > 0 || nd > 0)
		rm_log(RM_LOG_NOTICE,
		       "collector restarted: an earlier run ended without closing %" PRId64 " sessions; they are "
		       "ended now, %" PRId64 " open epochs retired as incomplete (collector restarted), %" PRId64
		       " settled epochs retired with their outcome",
		       ns, no, nd);
out:
	sqlite3_busy_timeout(st->db, RM_STORE_BUSY_MS);
	return id;
}

int rm_store_run_stop(struct rm_store *st, int64_t run_id, uint64_t now_ms)
{
	st->stop_run = run_id;
	st->stop_ms = now_ms;
	return 0;
}

/* ---------------- open, close ---------------- */

/*
 * The earlier layout kept an epoch in two tables (epoch_keys, epoch_state)
 * read through a view named epochs: move the rows into the epochs table,
 * IDs unchanged.
 */
static int convert_epochs(struct rm_store *st, char **msg)
{
	int rc;

	if (scalar(st, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'epoch_keys'") <= 0)
		return SQLITE_OK;
	rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE; DROP VIEW IF EXISTS epochs;", NULL, NULL, msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db, schema, NULL, NULL, msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db,
				  "INSERT INTO epoch_rows (" EPOCH_COLUMNS ") SELECT k.id," EPOCH_COLUMNS_AFTER_ID
				  " FROM epoch_keys k JOIN epoch_state s ON s.id = k.id ORDER BY k.id;"
				  "DROP TABLE epoch_state; DROP TABLE epoch_keys; COMMIT;",
				  NULL, NULL, msg);
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * The view epochs: epoch_rows and, unpacked, epoch_archive, with the same
 * columns. A packed copy written before its retirement takes its retired_ms
 * from epoch_retired, and gives way to a row of the same ID (written when
 * the epoch changed after it was packed). Recreated at every read-write
 * open, so a database of an earlier version reads its new tables.
 */
static int create_view(struct rm_store *st, char **msg)
{
	static const char cols[] = EPOCH_COLUMNS;
	GString *sql = g_string_new("DROP VIEW IF EXISTS epochs; CREATE VIEW epochs AS SELECT " EPOCH_COLUMNS
				    " FROM epoch_rows UNION ALL SELECT ");
	GString *id = g_string_new(NULL);
	const char *p = cols;
	int rc;

	packed_col(id, EC_ID);
	for (int c = 0; c < EC__N; c++) {
		size_t n = strcspn(p, ",");

		while (*p == ' ')
			p++, n--;
		g_string_append(sql, c ? ", " : "");
		if (c == EC_RETIRED) {
			g_string_append(sql, "coalesce(");
			packed_col(sql, c);
			g_string_append(sql, ", ");
			retirement_of(sql, id->str);
			g_string_append(sql, ")");
		} else {
			packed_col(sql, c);
		}
		g_string_append_printf(sql, " AS %.*s", (int)n, p);
		p += n + (p[n] == ',');
	}
	g_string_append(sql, " FROM epoch_archive a, json_each(a.data) j WHERE ");
	packed_col(sql, EC_RETIRED);
	g_string_append_printf(sql, " IS NOT NULL OR NOT EXISTS (SELECT 1 FROM epoch_rows o WHERE o.id = %s)", id->str);
	rc = sqlite3_exec(st->db, sql->str, NULL, NULL, msg);
	g_string_free(sql, TRUE);
	g_string_free(id, TRUE);
	return rc;
}

static int add_column(struct rm_store *st, const char *table, const char *column, const char *decl, char **msg)
{
	char sql[200];
	sqlite3_stmt *q;

	snprintf(sql, sizeof(sql), "SELECT %s FROM %s LIMIT 0", column, table);
	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) == SQLITE_OK) {
		sqlite3_finalize(q);
		return SQLITE_OK;
	}
	snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", table, column, decl);
	return sqlite3_exec(st->db, sql, NULL, NULL, msg);
}

void rm_store_close(struct rm_store *st)
{
	if (!st)
		return;
	if (st->db && !st->readonly && st->epochs) {
		attempt(st);
		if (waiting(st))
			rm_log(RM_LOG_ERR,
			       "database unavailable at exit (%s): %u epoch rows, %u sessions, %u raw records and %u "
			       "drop counts could not be stored",
			       st->down_why, st->epochs->len, st->sessions_dirty, st->raw->len,
			       g_hash_table_size(st->drops));
	}
	for (int i = 0; i < Q__N; i++)
		sqlite3_finalize(st->q[i]);
	sqlite3_close(st->db);
	free(st->arc);
	base_clear(st);
	if (st->lock_fd >= 0)
		close(st->lock_fd); /* after SQLite closed its own descriptors: a close drops this process's locks */
	if (st->epochs) {
		for (guint i = 0; i < st->epochs->len; i++) {
			struct rm_epoch *e = g_ptr_array_index(st->epochs, i);

			if (e->sink_keeps) {
				rm_rules_epoch_free(e);
				rm_budget_give(st->budget, RM_BUDGET_EPOCH_BYTES);
			} else {
				e->store_slot = 0;
			}
		}
		g_ptr_array_free(st->epochs, TRUE);
	}
	if (st->raw)
		g_ptr_array_free(st->raw, TRUE);
	rm_budget_give(st->budget, st->raw_bytes);
	tmpl_put(st->last_tmpl);
	if (st->sessions)
		g_hash_table_destroy(st->sessions);
	if (st->drops)
		g_hash_table_destroy(st->drops);
	if (st->conns)
		g_hash_table_destroy(st->conns);
	if (st->limits)
		g_array_free(st->limits, TRUE);
	if (st->lost)
		g_array_free(st->lost, TRUE);
	if (st->retire)
		g_array_free(st->retire, TRUE);
	if (st->ranges)
		g_array_free(st->ranges, TRUE);
	free(st);
}

struct rm_store *rm_store_open(const char *path, int readonly, char *err, size_t errlen)
{
	struct rm_store *st = calloc(1, sizeof(*st));
	char *msg = NULL, pragmas[200];

	if (!st) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	st->lock_fd = -1;
	st->readonly = readonly;
	/* No global memory statistics: they take a mutex on every allocation (refused, harmlessly, once SQLite is initialised). */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	st->raw_limit = 100000;
	if (!readonly) {
		st->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (st->lock_fd < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			rm_store_close(st);
			return NULL;
		}
		if (flock(st->lock_fd, LOCK_EX | LOCK_NB) < 0) {
			snprintf(err, errlen, "%s: %s", path,
				 errno == EWOULDBLOCK
					 ? "in use by another rocemeter collect (one collector per database)"
					 : strerror(errno));
			rm_store_close(st);
			return NULL;
		}
	}
	if (sqlite3_open_v2(path, &st->db,
			    (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
				    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, st->db ? sqlite3_errmsg(st->db) : "cannot open");
		rm_store_close(st);
		return NULL;
	}
	sqlite3_busy_timeout(st->db, readonly ? 5000 : RM_STORE_BUSY_MS);
	if (readonly)
		return st;
	st->epochs = g_ptr_array_new();
	st->raw = g_ptr_array_new_with_free_func(raw_free);
	st->sessions = rm_sess_rows_new();
	st->drops = rm_drop_rows_new();
	st->conns = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, conn_row_free);
	st->limits = g_array_new(FALSE, FALSE, sizeof(struct limit_row));
	g_array_set_clear_func(st->limits, limit_row_clear);
	st->lost = g_array_new(FALSE, FALSE, sizeof(int64_t));
	st->retire = g_array_new(FALSE, FALSE, sizeof(struct retire_only));
	st->ranges = g_array_new(FALSE, FALSE, sizeof(struct retire_range));
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;"
		 " PRAGMA cache_size=-%u;",
		 RM_STORE_CACHE_KIB);
	sqlite3_busy_timeout(st->db, 5000);
	if (sqlite3_exec(st->db, pragmas, NULL, NULL, &msg) != SQLITE_OK || convert_epochs(st, &msg) != SQLITE_OK ||
	    sqlite3_exec(st->db, schema, NULL, NULL, &msg) != SQLITE_OK ||
	    add_column(st, "sessions", "seq_gaps", "INTEGER DEFAULT 0", &msg) != SQLITE_OK ||
	    add_column(st, "sessions", "seq_missing", "INTEGER DEFAULT 0", &msg) != SQLITE_OK ||
	    add_column(st, "sessions", "export_time_backwards", "INTEGER DEFAULT 0", &msg) != SQLITE_OK ||
	    add_column(st, "epoch_archive", "retained", "INTEGER DEFAULT 0", &msg) != SQLITE_OK ||
	    add_column(st, "epoch_archive", "base", "TEXT", &msg) != SQLITE_OK || create_view(st, &msg) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errmsg(st->db));
		sqlite3_free(msg);
		rm_store_close(st);
		return NULL;
	}
	sqlite3_busy_timeout(st->db, RM_STORE_BUSY_MS);
	for (int i = 0; i < Q__N; i++) {
		char *made = i == Q_EPOCH_UPDATE ? epoch_update_sql() : NULL;
		int rc = sqlite3_prepare_v3(st->db, made ? made : queries[i], -1, SQLITE_PREPARE_PERSISTENT, &st->q[i],
					    NULL);

		g_free(made);
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(st->db));
			rm_store_close(st);
			return NULL;
		}
	}
	st->raw_rows = (uint64_t)scalar(st, "SELECT count(*) FROM raw_records");
	st->next_session = scalar(st, "SELECT coalesce(max(id), 0) + 1 FROM sessions");
	st->next_epoch = scalar(st, "SELECT max(coalesce((SELECT max(id) FROM epoch_rows), 0),"
				    " coalesce((SELECT max(last_id) FROM epoch_archive), 0)) + 1");
	sqlite3_wal_hook(st->db, wal_hook, st);
	st->last_flush_ms = mono_ms();
	return st;
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
				conn_row_free(c);
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

int rm_store_run_limit(struct rm_store *st, int64_t run_id, const char *name, uint64_t value)
{
	struct limit_row l = { run_id, value, strdup(name) };

	if (!l.name)
		return -1;
	g_array_append_val(st->limits, l);
	return 0;
}

uint64_t rm_store_raw_bytes(struct rm_store *st)
{
	int64_t n =
		scalar(st, "SELECT coalesce(sum(length(record) + coalesce(length(template), 0)), 0) FROM raw_records");

	return n > 0 ? (uint64_t)n : 0;
}
