/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * chstore_impl.h - what the files of the ClickHouse store
 * (user/store/clickhouse/) share: struct rm_chstore (the collector's thread's
 * part, and the part shared with the sender under mu), batches, and the
 * functions one file calls in another. Not for use outside clickhouse/: the
 * interface is chstore.h.
 */
#ifndef ROCEMETER_CHSTORE_IMPL_H
#define ROCEMETER_CHSTORE_IMPL_H

#include <glib.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "chstore.h"
#include "common/clock.h"
#include "rules/budget.h"
#include "store/columns.h"
#include "store/store_rows.h"
#include "version.h"

/* The tables, in the order of a spool file's batch (T_POINTS last: a spool of version 1 or 2 has none). */
enum table { T_RUNS, T_SESSIONS, T_EPOCHS, T_RAW, T_DROPS, T_CONNS, T_LIMITS, T_POINTS, T__N };

/* An exporter's Reliability record waiting for the sender (backend.h struct rm_store_acked, copied). */
struct acked_req {
	char peer[80], peer_alt[80], subject[256];
	int64_t reporting_id;
	uint64_t records, ended_ms, now_ms;
	uint64_t unread_max; /* rm_store_acked unread_max */
	struct acked_req *next;
};

/* Rows handed to the sender together. */
struct batch {
	GByteArray *body[T__N];
	uint8_t sent[T__N];
	uint32_t retired, raw, conns; /* epoch outcomes, raw records, counts of refused connections in it */
	size_t bytes;
	int from_spool; /* read from the spool file at the start */
	uint64_t seq;   /* the hand-over's number (1, 2, ...; 0: from the spool) */
	struct batch *next;
};

struct rm_chstore {
	struct rm_ch_conf conf;
	char id[RM_CHSTORE_COLLECTOR_ID_MAX + 1];
	char err[4096];
	uint64_t bound;

	/* The collector's thread. */
	struct batch *cur;
	GPtrArray *live; /* struct rm_epoch * changed since they were last serialized; e->store_slot = index + 1;
				 a retired one among them is the store's (sink_keeps): its row is in ClickHouse already */
	struct rm_budget *budget; /* the kept retired epochs' charges (RM_BUDGET_EPOCH_BYTES each); NULL: none */
	GHashTable *sessions;     /* int64 id -> struct rm_sess_row */
	GHashTable *drops;        /* "session/kind" -> struct rm_drop_row */
	int64_t next_run, next_session, next_epoch, next_raw;
	uint64_t limit_seq;
	struct rm_chs_version version; /* the rows' versions */
	uint64_t last_handoff_ms;
	uint32_t raw_limit;
	uint64_t raw_rows, raw_bytes;
	uint64_t store_drops;
	uint64_t drops_logged_ms, drops_unlogged; /* the last "store drops" log line, the drops since */
	GHashTable *drops_unlogged_by_session;    /* int64 session ID -> uint64 drops since that line */
	char drops_last[200];                     /* the last drop's detail */
	uint64_t drops_last_ms;                   /* CLOCK_MONOTONIC of the last drop */
	uint64_t last_heartbeat_ms;
	char store_name[700]; /* "BASE?database=DB": the store a spool file belongs to */
	char spool_dir[512];
	char spool_path[640]; /* spool_dir/ID.TAG.spool, TAG from store_name (chstore.h) */
	int recovered;
	int points_kept;           /* the store has observation_points (checked at the start): names are written */
	uint64_t sessions_started; /* in this run */
	uint64_t handed;           /* batches handed over to the sender in this run */
	struct rm_run_row run;     /* this run's runs row; its listen and transport are owned here */

	/* Shared with the sender, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch *head, **tail; /* the queue */
	struct batch *inflight;     /* batches the sender is inserting */
	uint64_t queued_bytes;      /* octets in the queue and in flight */
	uint64_t inserted_rows;
	uint64_t inserted_seq;   /* the largest seq of a batch ClickHouse took (batches go in order) */
	struct acked_req *acked; /* Reliability records to match, newest first */
	uint64_t acked_drops;    /* records counted as unread-at-crash by the sender */
	int down;                /* the last INSERT failed */
	int reached;             /* ClickHouse answered in this run (a query at the start or an INSERT) */
	unsigned spool_left;     /* batches of the spool file not inserted yet: the file is removed at 0 */
	int stopping;            /* close: insert what waits until stop_at_ms, then end */
	/* what the spool file read at the start holds, in the words of the logs */
	char spool_what[200];
	uint64_t stop_at_ms;
	pthread_t thread;
	int thread_up;
};

/* rows.c */
/* The tables of columns.h by enum table. */
extern const struct rm_stored_table *const rm_chs_tables[T__N];
/* "INSERT INTO t (the columns in the order rows are serialized: collector_id, ..., version) FORMAT RowBinary"; g_free it. */
char *rm_chs_insert_sql(const struct rm_stored_table *t);
/* Insert one row of t at once (rm_chs_put_row's). 0, or rm_ch_query's negative errno with err. */
int rm_chs_insert_row(struct rm_ch *ch, const struct rm_stored_table *t, const char *collector_id, uint64_t version,
		      const void *row, char *err, size_t errlen);
/* A row of t (its struct: columns.h) in RowBinary with the collector ID and version (if t has one), appended to b. */
void rm_chs_put_row(GByteArray *b, const struct rm_stored_table *t, const char *collector_id, uint64_t version,
		    const void *row);
/* RowBinary UInt64 (little-endian) appended to b. */
void rm_chs_put_u64(GByteArray *b, uint64_t v);
/* RowBinary UInt8 appended to b. */
void rm_chs_put_u8(GByteArray *b, uint8_t v);
/* RowBinary String of len octets appended to b (LEB128 length, then the octets). */
void rm_chs_put_bytes(GByteArray *b, const void *p, size_t len);
/* RowBinary String of a C string appended to b. */
void rm_chs_put_str(GByteArray *b, const char *s);
/* RowBinary Nullable(UInt64): NULL if null, else v. */
void rm_chs_put_nu64(GByteArray *b, int null, uint64_t v);
/* RowBinary Nullable(String): NULL if s is. */
void rm_chs_put_nstr(GByteArray *b, const char *s);

/* batch.c */
/* An empty batch; NULL on out of memory. */
struct batch *rm_chs_batch_new(void);
/* Free a batch (NULL: nothing). */
void rm_chs_batch_free(struct batch *b);
/* The octets of a batch's rows. */
size_t rm_chs_batch_size(const struct batch *b);
/* Octets in the queue and in flight (takes mu). */
uint64_t rm_chs_queued(struct rm_chstore *chs);
/* 1 if the batch being built, the queue and more octets fit in the buffer's bound (chs->bound), else 0. */
int rm_chs_room(struct rm_chstore *chs, size_t more);
/* Serialize what changed (live epochs, sessions, drops) into the batch being built and queue it. 0 or -1. */
int rm_chs_handoff(struct rm_chstore *chs);

/* drops.c */
/* Count a collector resource drop of kind for a session. 0 or -1. */
int rm_chs_count_drop(struct rm_chstore *chs, int64_t session_id, const char *kind, const char *detail, uint64_t now);
/* Log the store drops since the last such line, per session, and count anew. */
void rm_chs_log_drops(struct rm_chstore *chs);
/* A row the buffer could not take: a drop of kind "store", logged at most every RM_CHSTORE_DROP_LOG_MS. */
void rm_chs_store_drop(struct rm_chstore *chs, int64_t session_id, const char *detail);

/* sender.c */
/* The order the tables of a group are inserted in: sessions last. */
extern const int rm_chs_send_order[T__N];
/* The sender thread (arg: the store): inserts the queued batches, retries with backoff while ClickHouse is down. */
void *rm_chs_sender(void *arg);
/* Every unsent table of group, in table order; 0, or the first failure's rm_ch_query result with err. */
int rm_chs_send_group(struct rm_chstore *chs, struct rm_ch *ch, struct batch *group, char *err, size_t errlen);

/* spool.c */
/* The spool directory is this user's and writable by nobody else, or missing: 0; else -EPERM or -errno, err. */
int rm_chs_spool_dir_check(const char *dir, char *err, size_t errlen);
/*
 * Make the spool directory when it is missing, with its missing parents
 * (mode 0700), as a collector started by hand outside the unit's
 * StateDirectory needs it: the received-Messages journal lives there from
 * the start, the spool at a stop. Said at info level when made; one that
 * cannot be made is left to what needs it (their messages name it).
 */
void rm_chs_spool_dir_make(const char *dir);
/*
 * Write the batches of lists (in flight, queued) to the spool file, whole or
 * absent; skip_run leaves out the run's own rows. 0 or -errno with err; *what: the counts in words.
 */
int rm_chs_spool_write(struct rm_chstore *chs, struct batch *const lists[2], int skip_run, char *what, size_t whatlen,
		       char *err, size_t errlen);
/* Log the spool files of this collector ID for other stores, and of the first version: not sent here. */
void rm_chs_spool_others(struct rm_chstore *chs);
/* What an earlier run spooled, sent or queued: 1 sent or no spool, 0 queued, RM_BACKEND_REFUSED (chs->err). */
int rm_chs_spool_send(struct rm_chstore *chs, struct rm_ch *ch);

/* lost.c: the received-Messages journal's calls (backend.h session_lost, transactions, handed, journal_dir). */
int rm_chs_session_lost(void *p, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost);
uint64_t rm_chs_transactions(const void *p);
uint64_t rm_chs_handed(const void *p);
int rm_chs_journal_dir(void *p, char *buf, size_t len);
/* backend.h session_acked: queued for the sender (2). */
int rm_chs_session_acked(void *p, const struct rm_store_acked *a, uint64_t now_ms, struct rm_store_acked_result *res);
/* The sender: match the queued Reliability records (takes and gives back mu around ClickHouse's answers). */
void rm_chs_acked_process(struct rm_chstore *chs, struct rm_ch *ch);
/* backend.h acked_drops. */
uint64_t rm_chs_acked_drops(void *p);

/* lease.c */
/*
 * The exchange at a run's start: the spool, whether the ID is in use, IDs after
 * the stored ones, what an earlier run left open ended. 0, or RM_BACKEND_REFUSED with chs->err.
 */
int rm_chs_start_ids(struct rm_chstore *chs, uint64_t now_ms);
/* The runs row, whole, replacing one still waiting: at the start, at each heartbeat, at the stop. */
void rm_chs_run_row(struct rm_chstore *chs);

#endif /* ROCEMETER_CHSTORE_IMPL_H */
