/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * store_impl.h - what the files of the SQLite store (user/store/sqlite/)
 * share: struct rm_store, the rows waiting for a transaction, the epoch
 * columns' indexes (columns.h) and statements, and the functions one file
 * calls in another. Not for use outside sqlite/: the interface is store.h.
 */
#ifndef ROCEMETER_STORE_IMPL_H
#define ROCEMETER_STORE_IMPL_H

#include <arpa/inet.h>
#include <glib.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "statement.h"
#include "store.h"
#include "store/columns.h"
#include "store/store_rows.h"

/*
 * An epoch's columns (columns.h rm_stored_epochs), in the order of the
 * epochs view (that of the earlier layout's view of the same name); EC_*
 * are their indexes, and parameter EC_x + 1 of the epoch statements.
 */
enum {
#define X(NAME, column, sqlite, ch, null, write, kind, field, read) EC_##NAME,
	RM_EPOCH_COLUMNS(X)
#undef X
		EC__N
};
/* Column c's bit in a set of columns (NULL ones, changed ones). */
#define COL(c) (1ULL << (c))

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

enum {
	Q_EPOCH_INSERT, /* the statements of a table (schema.c): its insert ... */
	Q_EPOCH_UPDATE, /* ... or its update */
	Q_EPOCH_LOST,
	Q_EPOCH_RETIRE,
	Q_ARCHIVE,
	Q_RETIRED,
	Q_SESSION,
	Q_RAW,
	Q_DROP,
	Q_CONNECTIONS,
	Q_RUN_LIMIT,
	Q_OBS_POINT,
	Q_RUN_STOP,
	Q_BEGIN,
	Q_COMMIT,
	Q_ROLLBACK,
	Q__N
};

/* A Template's octets shared by the raw records that carry it. */
struct tmpl_copy {
	unsigned int refs;
	size_t len;
	uint8_t data[];
};

/* A raw record waiting: its row (verdict a static name; reason, record and Template owned here). */
struct raw_row {
	struct rm_raw_row row; /* reason, record and template: the three below */
	char *reason;
	struct tmpl_copy *tmpl;
	uint8_t rec[];
};

/* The retirement of a settled epoch whose row is up to date. */
struct retire_only {
	int64_t id;
	uint64_t retired_ms;
};

/*
 * A packed chunk closed (its JSON array complete) that waits for the next
 * transaction: one epoch_archive row. data is the builder's buffer of cap
 * octets (reused for later chunks once written); base the chunk's base column.
 */
struct arc_chunk {
	int64_t first, last; /* first_id, last_id: the row IDs of its first and last epoch */
	uint32_t retained;   /* of its epochs, those packed before their retirement */
	char *data;
	size_t len, cap;
	size_t base_len;
	char base[];
};

/* e->store_row: 0 nothing written, ROW_TABLE a row in epoch_rows, ROW_PACKED a copy in epoch_archive only. */
enum { ROW_NONE = 0, ROW_TABLE = 1, ROW_PACKED = 2 };

/* One column value of a packed epoch: an integer (SQLite's signed 64 bits, same bits as unsigned64), text, or NULL. */
struct val {
	enum { V_NULL, V_INT, V_TEXT } t;
	int64_t i;
	const char *s;
};

/* Bound of one packed epoch in JSON: 21 octets per integer and separator, 6 per character of text (\\u00XX), keys. */
#define ARC_ENTRY_MAX (8 + EC__N * 26 + 6 * (2 * INET6_ADDRSTRLEN + RM_EPOCH_REASON_MAX + 32))
/* The builder's buffer: a chunk closes at RM_STORE_ARCHIVE_CHUNK octets, so one more epoch and the ']' fit. */
#define RM_STORE_ARCHIVE_CAP   (RM_STORE_ARCHIVE_CHUNK + ARC_ENTRY_MAX + 4)
#define RM_STORE_ARCHIVE_SPARE 4 /* builder buffers kept for reuse after a commit */
_Static_assert(sizeof(ARC_KEYS) - 1 >= EC__N, "a key letter per epoch column");
_Static_assert(EC__N <= 64, "a bit per epoch column (rm_sq_archive_add)");

struct rm_store {
	sqlite3 *db;
	sqlite3_stmt *q[Q__N];
	int readonly;
	int lock_fd;
	uint32_t raw_limit;
	uint64_t raw_rows; /* rows in the database */
	int64_t next_session, next_epoch;

	/* What waits for the next transaction. */
	GPtrArray *epochs;       /* struct rm_epoch * or NULL (packed since); e->store_slot = index + 1 */
	uint32_t epochs_seen;    /* epochs[0 .. epochs_seen - 1]: packed, or not packable when rm_sq_pack_upto passed */
	uint32_t kept;           /* of them retired, owned here */
	uint32_t packed_retired; /* retired epochs packed at their retirement (freed), in chunks not yet written */
	GPtrArray *chunks;       /* struct arc_chunk *: packed chunks closed, not yet written (g_free) */
	GPtrArray *spare;        /* char * of RM_STORE_ARCHIVE_CAP octets: builder buffers written, for reuse */
	int64_t packed_max;      /* the largest row ID packed by this store: an epoch of a lower ID gets a row */
	uint32_t attempt_chunks; /* store->chunks->len before the transaction being tried packed the queue */
	int64_t attempt_packed_max; /* packed_max before it: what it packed is above */
	GHashTable *sessions;       /* int64 id -> struct rm_sess_row */
	uint32_t sessions_dirty;
	GPtrArray *raw; /* struct raw_row * */
	size_t raw_bytes;
	struct tmpl_copy *last_tmpl;
	GHashTable *drops; /* "session/kind" -> struct rm_drop_row */
	GHashTable *conns; /* "minute/outcome/source" -> struct rm_conn_row */
	GArray *limits;    /* struct rm_limit_row */
	GArray *points;    /* struct rm_point_row */
	GArray *lost;      /* int64 row IDs of epochs whose outcome was not kept */
	GArray *retire;    /* struct retire_only: settled epochs whose rows need only retired_ms */
	GArray *ranges;    /* struct rm_retired_row: packed epochs whose copies need only retired_ms */
	char *arc;         /* the epoch_archive chunk being built (JSON); kept across failed transactions */
	size_t arc_len, arc_cap;
	int64_t arc_first, arc_last;
	uint32_t arc_retained; /* of the chunk's epochs, those not retired */
	/* The chunk's first epoch (its base): what the next epochs are compared with. */
	int64_t arc_base_int[EC__N]; /* its integer columns as written; EC_STATE, EC_OUTCOME: the enums */
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
	uint64_t down_drops;      /* "database" drops since the database became unavailable */
	uint64_t database_drops;  /* "database" drops since the store was opened */
	uint64_t drops_unlogged;  /* "database" drops in no log line yet (rm_sq_log_drops) */
	uint64_t drops_logged_ms; /* CLOCK_MONOTONIC of that line, 0: none yet */
	char drops_last[200];     /* the last drop's detail */
	uint64_t transactions;    /* committed since the store was opened */
	char down_why[200];
	int wal_pages;
	struct rm_budget *budget; /* charged for kept epochs and raw records rm_sq_waiting (NULL: none) */
};

/* schema.c: every error as a line in err, returning 0 or -errno (rm_sq_errno). */
/* Every table of columns.h SQLite keeps, created when missing (CREATE TABLE IF NOT EXISTS ...); g_free it. */
char *rm_sq_schema_sql(void);
/*
 * The insert of a row of t (its conflict clause: columns.h), and its update
 * by ID (the columns written with every version); parameter N is t's N-th
 * SQLite column (rm_sq_bind_row). g_free them.
 */
char *rm_sq_insert_sql(const struct rm_stored_table *t);
char *rm_sq_update_sql(const struct rm_stored_table *t);
/* The statement prepared at open for Q_* (g_free it), and the table whose row it writes (NULL: none). */
char *rm_sq_query_sql(int q);
const struct rm_stored_table *rm_sq_query_table(int q);
/* Append column c of a packed epoch as SQL (j: its json_each row, a: its epoch_archive row). */
void rm_sq_packed_col(GString *g, int c);
/* Append the retirement time of the packed epoch whose row ID is the SQL expression id, or NULL. */
void rm_sq_retirement_of(GString *g, const char *id);
/* Convert a database of the earlier layout (epoch_keys + epoch_state). 0 or -errno with err. */
int rm_sq_convert_epochs(sqlite3 *db, char *err, size_t errlen);
/* (Re)create the view epochs over epoch_rows and epoch_archive. 0 or -errno with err. */
int rm_sq_create_view(sqlite3 *db, char *err, size_t errlen);
/* Add to every table the columns of columns.h it lacks (a database of an earlier version). 0 or -errno with err. */
int rm_sq_add_columns(sqlite3 *db, char *err, size_t errlen);
/*
 * Drop an observation_points table of the earlier layout (names keyed by
 * domain and ID only, bound to no exporter: any exporter could have written
 * them); exporters send their names again at each Transport Session start.
 * 0 or -errno with err.
 */
int rm_sq_bind_points(sqlite3 *db, char *err, size_t errlen);

/* queue.c */
/* Drop a reference to a Template copy (NULL: nothing). */
void rm_sq_tmpl_put(struct tmpl_copy *t);
/* Free a struct raw_row (GPtrArray free function). */
void rm_sq_raw_free(gpointer p);
/* Free a struct rm_conn_row (GHashTable value free function). */
void rm_sq_conn_row_free(gpointer p);
/* Clear a struct rm_limit_row (GArray clear function). */
void rm_sq_limit_row_clear(gpointer p);
/* Clear a struct rm_point_row (GArray clear function). */
void rm_sq_point_row_clear(gpointer p);
/* 1 if anything waits for the next transaction. */
int rm_sq_waiting(const struct rm_store *store);
/* Log the "database" drops not yet logged (one line; nothing if none). queue.c. */
void rm_sq_log_drops(struct rm_store *store);

/* rows.c */
/*
 * Bind row, a row of t, to q's parameters (rm_sq_insert_sql's numbering):
 * every SQLite column, or with update only the ID and the columns an
 * update writes.
 */
void rm_sq_bind_row(sqlite3_stmt *q, const struct rm_stored_table *t, const void *row, int update);
/* Write row with statement q (Q_*, a table's: rm_sq_query_table). 0 or -1 (SQLite error). */
int rm_sq_write_row(struct rm_store *store, int q, const void *row);
/*
 * 1 if the epoch is written packed (epoch_archive) rather than as a row:
 * never written, retired or settled, and of an ID above every one packed
 * (chunks stay in ID order, each after the one before: store_read_sqlite.c).
 */
int rm_sq_packs(const struct rm_store *store, const struct rm_epoch *e);
/* 1 if the queued epoch was packed by the transaction being tried (rm_sq_attempt_pack), not written as a row. */
int rm_sq_attempt_packed(const struct rm_store *store, const struct rm_epoch *e);
/* Insert or update an epoch's row in epoch_rows. 0 or -1 (SQLite error). */
int rm_sq_write_epoch(struct rm_store *store, const struct rm_epoch *e);
/* Mark the row of an epoch whose outcome was not kept (retired, incomplete if open). 0 or -1. */
int rm_sq_write_lost(struct rm_store *store, int64_t id, uint64_t now_ms);

/* archive.c */
/* Forget the base of the chunk being built. */
void rm_sq_base_clear(struct rm_store *store);
/* Append an epoch to the chunk being built (store->arc). 0 or -1 (out of memory). */
int rm_sq_archive_add(struct rm_store *store, const struct rm_epoch *e);
/*
 * Pack e (rm_sq_packs) into the chunk being built, closing the chunk at
 * RM_STORE_ARCHIVE_CHUNK octets: from here on the copy waits in store->chunks
 * or store->arc, kept across failed transactions, until a commit. 0 or -1 (out of memory).
 */
int rm_sq_pack(struct rm_store *store, const struct rm_epoch *e);
/*
 * Pack, in queue order, the packable epochs waiting in store->epochs[0 .. n - 1]
 * not looked at yet, and take them out of the queue (slot NULL, store_row
 * ROW_PACKED; a retired one the store kept is freed, its charge returned). 0 or -1.
 */
int rm_sq_pack_upto(struct rm_store *store, uint32_t n);
/*
 * For a transaction: close the chunk being built (what was packed before
 * waits on), then pack the packable epochs still queued into chunks of this
 * attempt only, leaving them queued. 0 or -1 (out of memory).
 */
int rm_sq_attempt_pack(struct rm_store *store);
/* The transaction failed: drop the chunks of the attempt (the epochs stay queued, packed again at the next). */
void rm_sq_attempt_undo(struct rm_store *store);
/* Insert every waiting chunk (the one being built closed first), one epoch_archive row each. 0 or -1. */
int rm_sq_archive_write(struct rm_store *store);
/* After a commit: the waiting chunks written, their buffers kept for reuse (up to a few). */
void rm_sq_chunks_written(struct rm_store *store);
/* At close: free the chunks, spare buffers and the builder's buffer. */
void rm_sq_chunks_free(struct rm_store *store);

/*
 * Reading a chunk back (one epoch_archive row), each epoch as the epochs
 * view gives its columns (rm_sq_create_view), retired_ms as packed (NULL
 * for a copy written before its retirement: epoch_retired has it).
 */
struct rm_sq_unpack {
	struct val base[EC__N]; /* the chunk's base column */
	struct val cur[EC__N];  /* the current epoch */
	uint64_t changed;       /* the columns where cur is not base */
	char *buf, *texts;      /* owned: the texts of the base, then of the current epoch */
	size_t cap;
	const char *p, *end; /* in data */
	int first, done;
};
/*
 * Start reading the chunk of base (NULL: all NULL) and data, of their
 * lengths; both must outlive the reading. 0, -EINVAL (not the packed form),
 * -ENOMEM. u zeroed before the first call; free(u->buf) after the last.
 */
int rm_sq_unpack_start(struct rm_sq_unpack *u, const char *base, size_t base_len, const char *data, size_t data_len);
/*
 * The next epoch of the chunk into u->cur by EC_* (texts valid until the
 * next call): 1, 0 at the end, -EINVAL when malformed (a real, true, a
 * nested value, an integer beyond int64, a cut text).
 */
int rm_sq_unpack_next(struct rm_sq_unpack *u);

/* flush.c */
/* sqlite3_wal_hook callback: records the WAL's length for checkpoints. */
int rm_sq_wal_hook(void *arg, sqlite3 *db, const char *name, int pages);
/* Try a transaction of what waits now; on failure the store is unavailable and retries later (logged). */
void rm_sq_attempt(struct rm_store *store);

#endif /* ROCEMETER_STORE_IMPL_H */
