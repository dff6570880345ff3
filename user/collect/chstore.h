/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * chstore.h - the collector's ClickHouse store (`collect --store
 * clickhouse:URL`, docs/fleet.md "Writing", docs/collector.md): the calls
 * of store.h behind the store interface (backend.h), rows in the tables of
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
 * ends what an earlier run of this collector left open (as store.h's
 * recovery). When ClickHouse does not answer then, IDs continue from the
 * current time in ms times 2^20 (larger than any counted ID), and the
 * recovery waits for the next start.
 *
 * Close (SIGTERM): what waits is handed over and the sender gets at most
 * RM_CHSTORE_CLOSE_WAIT_MS to insert it; what is still unsent then is
 * logged and counted as "store" drops (epoch outcomes, raw records,
 * counts). A kill -9 loses what was buffered (at most about a second of
 * rows while ClickHouse answers, the buffer while it does not).
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

#include "backend.h"
#include "clickhouse.h"

#define RM_CHSTORE_FLUSH_MS         1000        /* hand the batch to the sender at most this often ... */
#define RM_CHSTORE_FLUSH_BYTES      (4u << 20)  /* ... or when this many octets of rows wait */
#define RM_CHSTORE_RETRY_MIN_MS     100         /* backoff after a failed INSERT ... */
#define RM_CHSTORE_RETRY_MAX_MS     5000        /* ... doubling up to this */
#define RM_CHSTORE_REMIND_MS        60000       /* log line while ClickHouse stays unavailable */
#define RM_CHSTORE_CLOSE_WAIT_MS    5000        /* at close: time the sender gets for what waits */
#define RM_CHSTORE_SEND_MAX_BYTES   (64u << 20) /* octets of rows in one round of INSERTs */
#define RM_CHSTORE_CONNECT_MS       2000        /* the sender's connect timeout */
#define RM_CHSTORE_REQUEST_MS       10000       /* the sender's timeout per INSERT */
#define RM_CHSTORE_BUFFER_DEFAULT   (64u << 20) /* buffer_bytes by default (store_buffer_bytes) */
#define RM_CHSTORE_COLLECTOR_ID_MAX 64          /* octets of a collector ID */

struct rm_chstore;

/*
 * A ClickHouse store for the server of conf (clickhouse.h) with rows of
 * collector_id (NULL: the default, rm_chstore_default_id) and at most
 * buffer_bytes of rows waiting (0: RM_CHSTORE_BUFFER_DEFAULT). Starts the
 * sender thread; contacts no server (run_start does). NULL with err.
 */
struct rm_chstore *rm_chstore_open(const struct rm_ch_conf *conf, const char *collector_id, uint64_t buffer_bytes,
				   char *err, size_t errlen);

/*
 * The default collector ID: the host name (gethostname), cut at
 * RM_CHSTORE_COLLECTOR_ID_MAX octets. 0, or -errno with err.
 */
int rm_chstore_default_id(char *buf, size_t len, char *err, size_t errlen);

/*
 * A collector ID is 1..RM_CHSTORE_COLLECTOR_ID_MAX octets of letters,
 * digits, '.', '-', '_' and ':'. 0, or -EINVAL with err naming it.
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

/* Octets of rows waiting (batch and queue). */
uint64_t rm_chstore_waiting(struct rm_chstore *cs);

#endif /* ROCEMETER_CHSTORE_H */
