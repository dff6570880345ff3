/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * chstore.h - the collector's ClickHouse store (`collect --store
 * clickhouse:URL`, docs/fleet.md "Writing", docs/collector.md): the calls
 * of the store interface (backend.h, each call's contract), rows in the tables of
 * docs/clickhouse/single.sql and cluster.sql, each with the collector ID.
 *
 * The session loop never waits for ClickHouse. Its calls serialize rows
 * (RowBinary) into a batch in memory; a commit hands the batch to a sender
 * thread at most every RM_CHSTORE_FLUSH_MS (or when RM_CHSTORE_FLUSH_BYTES
 * wait; a flush hands it over at once). The sender inserts everything
 * queued, one INSERT per table, and retries a failed INSERT with backoff
 * (RM_CHSTORE_RETRY_MIN_MS doubling to RM_CHSTORE_RETRY_MAX_MS), logging
 * once when ClickHouse becomes unavailable, every RM_CHSTORE_REMIND_MS
 * while it stays so and once when it takes rows again.
 *
 * Bounded: the batch and the queue together hold at most buffer_bytes of
 * rows. Beyond, a retired epoch's outcome, a raw record or a count of
 * refused connections is not kept: a collector resource drop of kind
 * "store", counted per session and written to `drops` once ClickHouse
 * takes rows again. Live (retained) epochs are never dropped: they are in
 * memory anyway; their latest state is serialized when there is room.
 * Sessions, runs, limits and drop counts are always kept (one small row
 * each per commit).
 *
 * Versions: every row of runs, sessions and epochs carries version = the
 * UNIX time in microseconds when it was serialized, made strictly
 * increasing per process, so the latest state wins in ReplacingMergeTree
 * (also after a restart, as long as the clock does not go back by more
 * than the run lasted).
 *
 * IDs: at a run's start the store reads the largest run, session, epoch
 * and raw record IDs of its collector ID and continues after them; it also
 * ends what an earlier run of this collector left open (as backend.h's
 * run_start says). When ClickHouse does not answer then, IDs continue from the
 * current time in ms times 2^20 (larger than any counted ID), and the
 * recovery waits for the next start.
 *
 * Close (SIGTERM): what waits is handed over and the sender gets at most
 * RM_CHSTORE_CLOSE_WAIT_MS to insert it; what is still unsent then is
 * written to the spool file SPOOL_DIR/COLLECTOR_ID.TAG.spool as one batch
 * (rename of a complete file made with O_EXCL | O_NOFOLLOW), TAG the first
 * RM_CHSTORE_SPOOL_TAG_LEN hexadecimal digits of the SHA-256 of
 * "BASE?database=DB" (the store; the file's header holds it too). The next
 * run_start of this collector ID and store sends it before anything else,
 * then removes it; spools of other stores are kept and logged, not sent.
 * A run that never reached ClickHouse and started no session spools none
 * of its own runs and run_limits rows. run_start refuses a spool directory
 * not owned by the effective user or writable by group or others
 * (RM_BACKEND_REFUSED). Only what cannot be spooled (no directory, no
 * space) is logged and counted as "store" drops (epoch outcomes, raw
 * records, counts). A kill -9 loses what was buffered (at
 * most about a second of rows while ClickHouse answers, the buffer while
 * it does not).
 *
 * One writer per collector ID: the runs row is written again every
 * RM_CHSTORE_HEARTBEAT_MS (a heartbeat: a newer version), replacing the
 * runs row still waiting in the batch or the queue (one in flight may stay). run_start reads
 * the latest run of its collector ID: not stopped and last written less
 * than RM_CHSTORE_LIVE_MS ago, it watches that run for at most the rest of
 * RM_CHSTORE_LIVE_MS; a newer heartbeat means a running collector holds the
 * ID and run_start refuses (RM_BACKEND_REFUSED); none means it died.
 *
 * Refusals: a refusal that no retry mends (rm_chstore_refusal_hint: the
 * credentials, the database or its tables) makes run_start return
 * RM_BACKEND_REFUSED with the fix in the error; an unreachable server is an
 * outage (IDs from the clock, rows wait). At run time every refusal is
 * retried; one of credentials is logged as an error naming the cause.
 *
 * Drops are logged at most every RM_CHSTORE_DROP_LOG_MS, each line with
 * the count since the previous one per session; a line is due once the
 * interval passed (checked at every commit, and at close).
 *
 * Delivery: an INSERT that timed out after ClickHouse had written it is
 * sent again: rows of runs, sessions and epochs then collapse by version;
 * raw records, drops and connections (counts added per row) may be
 * duplicated. One thread uses a store; the sender is internal.
 */
#ifndef ROCEMETER_CHSTORE_H
#define ROCEMETER_CHSTORE_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "store/backend.h"
#include "clickhouse.h"

#define RM_CHSTORE_FLUSH_MS         1000        /* hand the batch to the sender at most this often ... */
#define RM_CHSTORE_FLUSH_BYTES      (4u << 20)  /* ... or when this many octets of rows wait */
#define RM_CHSTORE_RETRY_MIN_MS     100         /* backoff after a failed INSERT (no answer: always) ... */
#define RM_CHSTORE_RETRY_MAX_MS     5000        /* ... doubling up to this */
#define RM_CHSTORE_REMIND_MS        60000       /* log line while ClickHouse stays unavailable */
#define RM_CHSTORE_CLOSE_WAIT_MS    5000        /* at close: time the sender gets for what waits */
#define RM_CHSTORE_SEND_MAX_BYTES   (64u << 20) /* octets of rows in one round of INSERTs */
#define RM_CHSTORE_CONNECT_MS       2000        /* the sender's connect timeout */
#define RM_CHSTORE_REQUEST_MS       10000       /* the sender's timeout per INSERT */
#define RM_CHSTORE_BUFFER_DEFAULT   (64u << 20) /* buffer_bytes by default (store_buffer_bytes) */
#define RM_CHSTORE_COLLECTOR_ID_MAX 64          /* octets of a collector ID: RM_COLLECTOR_ID_MAX */
#define RM_CHSTORE_HEARTBEAT_MS     2000        /* the runs row written again this often */
/* A run written within this may be running: run_start watches it. */
#define RM_CHSTORE_LIVE_MS       (3 * RM_CHSTORE_HEARTBEAT_MS)
#define RM_CHSTORE_WATCH_POLL_MS 500   /* run_start's re-reads while it watches such a run */
#define RM_CHSTORE_DROP_LOG_MS   10000 /* at most one "store drops" log line this often */
#define RM_CHSTORE_SPOOL_TAG_LEN 12    /* hexadecimal digits of the store's tag in a spool file's name */

struct rm_chstore;

/*
 * A ClickHouse store for the server of conf (clickhouse.h) with rows of
 * collector_id (NULL: the default, rm_chstore_default_id), at most
 * buffer_bytes of rows waiting (0: RM_CHSTORE_BUFFER_DEFAULT) and its spool
 * file in spool_dir (NULL or "": RM_STORE_SPOOL_DIR_DEFAULT; created, mode
 * 0700, at close when missing, its parent not). Starts the sender thread;
 * contacts no server (run_start does). NULL with err.
 */
struct rm_chstore *rm_chstore_open(const struct rm_ch_conf *conf, const char *collector_id, uint64_t buffer_bytes,
				   const char *spool_dir, char *err, size_t errlen);

/*
 * Is err (an error of rm_ch_query: "BASE: HTTP N: Code: C. ...") a refusal
 * that no retry mends? The fix to make as a phrase, else NULL: HTTP 401 or
 * 403 and ClickHouse codes 192-194, 497 and 516 (user, password,
 * privileges: check store_credentials); 291 (the user's allow_databases
 * lacks the database); 164 (a readonly user); codes 81 and 60 (unknown
 * database, missing table: run `rocemeter collect --store-init`).
 */
const char *rm_chstore_refusal_hint(const char *err);

/*
 * The default collector ID: the host name (gethostname), cut at
 * RM_CHSTORE_COLLECTOR_ID_MAX octets. 0, or -errno with err.
 */
int rm_chstore_default_id(char *buf, size_t len, char *err, size_t errlen);

/*
 * A collector ID is 1..RM_CHSTORE_COLLECTOR_ID_MAX octets of letters,
 * digits, '.', '-', '_' and ':' (rm_collector_id_check of
 * common/store_syntax.h, which the configuration loader uses too). 0, or
 * -EINVAL with err naming it.
 */
int rm_chstore_check_id(const char *id, char *err, size_t errlen);

/*
 * The RowBinary row of an epoch (the columns of `epochs` in the order of
 * the store's INSERT: collector_id, id, version, session_id, ... as
 * docs/clickhouse/single.sql), appended to out. Measurement columns are
 * NULL while no report was accepted, retired_ms while retained, as in the
 * SQLite store. For the tests.
 */
void rm_chstore_epoch_row(GByteArray *out, const char *collector_id, const struct rm_epoch *e, uint64_t version);
/*
 * The RowBinary row of any table of columns.h (row: its struct,
 * store_rows.h) as the store's batches hold it: collector_id, the table's
 * ClickHouse columns in order, version after the ID where rows change (last
 * in a table without an ID). Appended to out. For the tests.
 */
struct rm_stored_table;
void rm_chstore_row(GByteArray *out, const struct rm_stored_table *t, const char *collector_id, const void *row,
		    uint64_t version);

/* A column of a row written again and the expression that gives it (rm_chstore_copy_sql). */
struct rm_chstore_set {
	const char *column, *expr;
};
/*
 * "INSERT INTO t (its columns as rm_chstore_row) SELECT ... FROM t FINAL
 * WHERE where": the rows of t where selects written again (the recovery at
 * a run's start, the crash accounting), each column as stored but those of
 * set (n of them; version among them for a versioned table). g_free it.
 */
char *rm_chstore_copy_sql(const struct rm_stored_table *t, const struct rm_chstore_set *set, size_t n,
			  const char *where);

/* Octets of rows waiting (batch and queue); the collector's thread (or while it waits for the metrics lock). */
uint64_t rm_chstore_waiting(struct rm_chstore *chs);

#endif /* ROCEMETER_CHSTORE_H */
