/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * store.h - the collector's SQLite database ([SEQOBS] "Collector
 * Processing": stored outcomes, raw records, finite limits shown to the
 * operator). WAL journal with synchronous=NORMAL: a committed transaction
 * survives a crash of the process; after a power loss or an operating
 * system crash the database is consistent but may have lost the last
 * transactions committed before it (those not yet checkpointed or synced).
 * The collector writes one transaction per batch of whole IPFIX Messages
 * (collector.h), so an accepted report is committed before the batch ends.
 *
 * Tables (created when missing; docs in README.md "Collector database"):
 *   runs        one row per `rocemeter collect` start: listen address,
 *               transport, the limits in force
 *   sessions    one row per admitted Transport Session:
 *               peer, times, end reason, message/record counts, verdicts
 *   epochs      (view of epoch_keys + epoch_state) one row per epoch: full key, outcome and reason, state,
 *               qualification flags, report coverage (first/last report ID,
 *               missing reports, gaps), latest accepted counters (NULL when
 *               no report was accepted), times
 *   raw_records records kept raw (unsupported qualifications, invalid,
 *               orphan, unbound and undecodable records), at most
 *               max_raw_records rows in the database
 *   drops       collector resource drops, one row per session and kind
 *               with a count (never network loss); session 0: connections
 *               refused before they were sessions
 *   connections connections that never became a Transport Session, counted
 *               per minute, source address and outcome
 *   run_limits  every limit of a run by name
 * All times are UNIX milliseconds. IPFIX unsigned64 values (IDs, counters)
 * are stored as SQLite's signed 64-bit integers with the same bits: read
 * them back as unsigned (values above 2^63 - 1 look negative in SQL).
 */
#ifndef ROCEMETER_STORE_H
#define ROCEMETER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "collector_rules.h"

struct rm_store;

/* Open (create) the database at path; readonly opens without creating. NULL with err on failure. */
struct rm_store *rm_store_open(const char *path, int readonly, char *err, size_t errlen);
void rm_store_close(struct rm_store *st);
/* Last SQLite error message. */
const char *rm_store_error(struct rm_store *st);

/* Transactions: 0 or -1. */
int rm_store_begin(struct rm_store *st);
int rm_store_commit(struct rm_store *st);

/* A collector run and its limits; returns the run ID or -1. */
int64_t rm_store_run_start(struct rm_store *st, const char *listen, const char *transport,
			   const struct rm_rules_limits *lim, uint32_t max_raw_records, uint32_t pen,
			   uint64_t now_ms);
int rm_store_run_stop(struct rm_store *st, int64_t run_id, uint64_t now_ms);

/* A new Transport Session (connection accepted); returns its ID or -1. */
int64_t rm_store_session_start(struct rm_store *st, int64_t run_id, const char *peer, const char *transport,
			       uint64_t now_ms);
/* The authorised peer's certificate subject. */
int rm_store_session_peer(struct rm_store *st, int64_t session_id, const char *subject);

struct rm_session_counts {
	uint64_t messages, records, octets, rejected; /* rejected: octets runs the decoder could not bind */
	const uint64_t *verdicts;                     /* RM_V__COUNT counts, or NULL */
};
int rm_store_session_end(struct rm_store *st, int64_t session_id, const char *reason, uint64_t now_ms,
			 const struct rm_session_counts *c);

/* Insert or update an epoch row (e->store_id holds the row ID afterwards). 0 or -1. */
int rm_store_epoch(struct rm_store *st, struct rm_epoch *e);

/*
 * Keep a raw record (r may be NULL when undecodable). Returns 1 if stored,
 * 0 if refused by max_raw_records (recorded as a drop), -1 on error.
 */
int rm_store_raw(struct rm_store *st, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		 const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		 size_t tmpl_len, uint64_t now_ms);

/* Count a collector resource drop of kind for a session (upsert). 0 or -1. */
int rm_store_drop(struct rm_store *st, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms);

/* Raw record bound (set from the run's limits). */
void rm_store_set_raw_limit(struct rm_store *st, uint32_t max_raw_records);

/*
 * Refused connections (never Transport Sessions), counted per minute,
 * source address and outcome (docs/collector.md "What is stored"): adds
 * count to the row (minute_ms, source, outcome), created when missing,
 * and sets its last time and detail. 0 or -1.
 */
int rm_store_connections(struct rm_store *st, uint64_t minute_ms, const char *source, const char *outcome,
			 uint64_t count, uint64_t first_ms, uint64_t last_ms, const char *detail);
/* One limit of a run, by its configuration key (run_limits). 0 or -1. */
int rm_store_run_limit(struct rm_store *st, int64_t run_id, const char *name, uint64_t value);
/* Octets of the raw records in the database: record plus its Template, summed. */
uint64_t rm_store_raw_bytes(struct rm_store *st);

/* The sqlite3 handle, for read-only queries (report). */
struct sqlite3 *rm_store_db(struct rm_store *st);

#endif /* ROCEMETER_STORE_H */
