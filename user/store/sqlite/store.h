/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * store.h - the collector's SQLite database: the calls of the store
 * interface (backend.h, where each call's contract is) for a local file,
 * and what is this store's own. WAL journal with synchronous=NORMAL: a
 * committed transaction survives a crash of the process; after a power loss
 * or an operating system crash the database is consistent but may have
 * lost the last transactions committed before it (those not yet
 * checkpointed or synced).
 *
 * When a write is due: rm_store_commit() writes everything that waits
 * (epoch rows by reference to the live epoch, sessions, raw records, drop
 * counts, refused connections, run limits) in one transaction when
 * RM_STORE_FLUSH_MS have passed since the last one, or
 * RM_STORE_FLUSH_EPOCHS retired epochs or RM_STORE_FLUSH_RAW_BYTES of raw
 * records wait, or when forced (the collector forces one at each session
 * end).
 *
 * What a failure does. A failed transaction (busy or locked by another
 * process past RM_STORE_BUSY_MS, disk full, I/O error) is rolled back and
 * everything stays queued; the store retries with exponential backoff
 * (RM_STORE_RETRY_MIN_MS doubling to RM_STORE_RETRY_MAX_MS) and logs once
 * when the database becomes unavailable, every RM_STORE_REMIND_MS while it
 * stays so, and once when it is writable again. While it is unavailable,
 * what waits in memory is bounded: at most RM_STORE_MAX_KEPT_EPOCHS retired
 * epochs, RM_STORE_MAX_RAW_BYTES of raw records and RM_STORE_MAX_CONN_ROWS
 * rows of refused connections; beyond, a retired epoch's outcome, a raw
 * record or a count of refused connections is not kept and is counted as a
 * collector resource drop of kind "database" (the count is written once the
 * database is back; an epoch row left behind is then marked incomplete with
 * that reason). Live (retained) epochs and sessions are always kept: they
 * are in memory anyway.
 *
 * One collector per database: rm_store_open (read-write) takes an
 * exclusive lock on the file (flock) and refuses a database in use.
 *
 * Tables (created when missing, their columns those of user/store/columns.h,
 * a column added since added to an older database's table; a database of
 * the earlier layout with epoch_keys + epoch_state is converted at open):
 *   runs        one row per `rocemeter collect` start: listen address,
 *               transport, the limits in force
 *   sessions    one row per admitted Transport Session: peer, times, end
 *               reason, message/record counts, verdicts, IPFIX header
 *               anomalies (Sequence Number gaps, records the forward gaps
 *               skipped, Export Time going back)
 *   epochs      (a view) one row per epoch: full key, outcome and reason,
 *               state, qualification flags, report coverage (first/last
 *               report ID, missing reports, gaps), latest accepted counters
 *               (NULL when no report was accepted), times. It reads three
 *               tables: epoch_rows, one row per epoch written while it was
 *               open (updated in place until retired) or changed after it
 *               was packed; epoch_archive, the epochs settled or retired at
 *               their first write, packed (JSON, each epoch as its
 *               differences from the chunk's first, written once); and
 *               epoch_retired, the retirement times of packed epochs
 *               written before it, as ranges of IDs
 *   raw_records records kept raw (unsupported qualifications, invalid,
 *               orphan, unbound and undecodable records), at most
 *               max_raw_records rows in the database
 *   drops       collector resource drops, one row per session and kind
 *               with a count (never network loss); session 0: connections
 *               refused before they were sessions
 *   connections connections that never became a Transport Session, counted
 *               per minute, source address and outcome
 *   run_limits  every limit of a run by name
 *   observation_points  the names exporters give their observation points
 * IPFIX unsigned64 values (IDs, counters) are stored as SQLite's signed
 * 64-bit integers with the same bits: read them back as unsigned (values
 * above 2^63 - 1 look negative in SQL).
 */
#ifndef ROCEMETER_STORE_H
#define ROCEMETER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "store/backend.h"

#define RM_STORE_FLUSH_MS             1000        /* at most this long between transactions */
#define RM_STORE_FLUSH_EPOCHS         65536       /* or this many epoch rows waiting */
#define RM_STORE_FLUSH_RAW_BYTES      (4u << 20)  /* or this many octets of raw records waiting */
#define RM_STORE_ARCHIVE_CHUNK        (1u << 20)  /* JSON octets of packed epochs per epoch_archive row */
#define RM_STORE_BUSY_MS              200         /* wait for another process's write lock, per attempt */
#define RM_STORE_RETRY_MIN_MS         100         /* backoff after a failed transaction ... */
#define RM_STORE_RETRY_MAX_MS         5000        /* ... doubling up to this */
#define RM_STORE_REMIND_MS            60000       /* log line while the database stays unavailable */
#define RM_STORE_DROP_LOG_MS          10000       /* at most one "database" drops line this often */
#define RM_STORE_MAX_KEPT_EPOCHS      100000      /* retired epochs waiting in memory while unavailable */
#define RM_STORE_MAX_RETIREMENTS      1000000     /* settled epochs' retirement times waiting (16 octets each) */
#define RM_STORE_MAX_RAW_BYTES        (16u << 20) /* raw record octets (with their Templates) waiting */
#define RM_STORE_MAX_CONN_ROWS        10000       /* rows of refused connections waiting while unavailable */
#define RM_STORE_CACHE_KIB            65536       /* SQLite page cache */
#define RM_STORE_WAL_CHECKPOINT_PAGES 16384       /* checkpoint when the WAL is this long (64 MiB) ... */
#define RM_STORE_WAL_IDLE_PAGES       1024        /* ... or this long and nothing waits to be written */

struct rm_store;

/*
 * Open (create) the database at path; readonly opens without creating or
 * converting, and without the lock. NULL with err on failure (a read-write
 * open also fails when another process holds the database's lock).
 */
struct rm_store *rm_store_open(const char *path, int readonly, char *err, size_t errlen);
/*
 * The calls of backend.h (rm_backend_sqlite: each its contract there), on
 * a store opened read-write. SQLite's own: rm_store_close commits what
 * waits (forced, one attempt); rm_store_error is sqlite3_errmsg();
 * rm_store_commit writes when due (above); rm_store_epoch packs a retired
 * epoch never written at once (e->sink_keeps RM_SINK_CHARGE: the store
 * holds its budget charge until the commit), and keeps other retired
 * epochs, and all while the database is unavailable (RM_SINK_KEEPS), until
 * written; rm_store_set_budget charges a raw record waiting its octets
 * (record, reason, Template, bookkeeping). The store logs through
 * user/common/log.h: the database unavailable, still unavailable (every
 * RM_STORE_REMIND_MS), writable again, the recovery at a run's start, what
 * could not be stored at close.
 */
void rm_store_close(struct rm_store *store);
const char *rm_store_error(struct rm_store *store);
int rm_store_begin(struct rm_store *store);
int rm_store_commit(struct rm_store *store);
int rm_store_flush(struct rm_store *store);
int rm_store_unavailable(const struct rm_store *store);
/* backend.h drops: the drops of kind "database" (epoch outcomes, raw records, counts). */
uint64_t rm_store_database_drops(const struct rm_store *store);
int64_t rm_store_run_start(struct rm_store *store, const char *listen, const char *transport,
			   const struct rm_rules_limits *lim, uint32_t max_raw_records, uint32_t pen, uint64_t now_ms);
int rm_store_run_stop(struct rm_store *store, int64_t run_id, uint64_t now_ms);
int64_t rm_store_session_start(struct rm_store *store, int64_t run_id, const char *peer, const char *transport,
			       uint64_t now_ms);
int rm_store_session_peer(struct rm_store *store, int64_t session_id, const char *subject, const char *name);
int rm_store_session_end(struct rm_store *store, int64_t session_id, const char *reason, uint64_t now_ms,
			 const struct rm_session_counts *c);
int rm_store_session_counts(struct rm_store *store, int64_t session_id, const struct rm_session_counts *c);
uint64_t rm_store_transactions(const struct rm_store *store);
int rm_store_session_lost(struct rm_store *store, const struct rm_store_lost_session *l, uint64_t now_ms,
			  uint64_t *lost);
int rm_store_session_acked(struct rm_store *store, const struct rm_store_acked *a, uint64_t now_ms,
			   struct rm_store_acked_result *res);
int rm_store_epoch(struct rm_store *store, struct rm_epoch *e);
int rm_store_raw(struct rm_store *store, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		 const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		 size_t tmpl_len, uint64_t now_ms);
int rm_store_drop(struct rm_store *store, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms);
void rm_store_set_budget(struct rm_store *store, struct rm_budget *b);
int rm_store_make_room(struct rm_store *store);
int rm_store_connections(struct rm_store *store, uint64_t minute_ms, const char *source, const char *outcome,
			 uint64_t count, uint64_t first_ms, uint64_t last_ms, const char *detail);
int rm_store_run_limit(struct rm_store *store, int64_t run_id, const char *name, uint64_t value);
int rm_store_observation_point(struct rm_store *store, const struct rm_store_point *p, uint64_t now_ms);
/* backend.h raw_bytes: the raw records in the database, not those still waiting. */
uint64_t rm_store_raw_bytes(struct rm_store *store);

/* Raw record bound (set from the run's limits by rm_store_run_start; 100000 until then). */
void rm_store_set_raw_limit(struct rm_store *store, uint32_t max_raw_records);
/* The sqlite3 handle, for read-only queries (report). */
struct sqlite3 *rm_store_db(struct rm_store *store);

#endif /* ROCEMETER_STORE_H */
