/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * store.h - the collector's SQLite database ([SEQOBS] "Collector
 * Processing": stored outcomes, raw records, finite limits shown to the
 * operator). WAL journal with synchronous=NORMAL: a committed transaction
 * survives a crash of the process; after a power loss or an operating
 * system crash the database is consistent but may have lost the last
 * transactions committed before it (those not yet checkpointed or synced).
 *
 * Writes are deferred: every rm_store_* write call only records what is to
 * be written (epoch rows by reference to the live epoch, sessions, raw
 * records, drop counts, refused connections, run limits) and rm_store_commit() writes all of it in one
 * transaction - when RM_STORE_FLUSH_MS have passed since the last one, or
 * RM_STORE_FLUSH_EPOCHS retired epochs or RM_STORE_FLUSH_RAW_BYTES of raw
 * records wait, or when forced (the collector forces one at each session
 * end). The collector calls it only between IPFIX Messages
 * (collector.h), so a transaction never holds part of a Message; an epoch
 * changed many times between two transactions is written once. Row IDs are
 * assigned in memory, in the order rows are first handed in (so a row ID
 * never depends on when the write succeeds), from the largest ID stored.
 *
 * Database errors never lose state silently. A failed transaction (busy or
 * locked by another process past RM_STORE_BUSY_MS, disk full, I/O error)
 * is rolled back and everything stays queued; the store retries with
 * exponential backoff (RM_STORE_RETRY_MIN_MS doubling to
 * RM_STORE_RETRY_MAX_MS) and logs once when the database becomes
 * unavailable, every RM_STORE_REMIND_MS while it stays so, and once when it
 * is writable again. While it is unavailable, what waits in memory is
 * bounded: at most RM_STORE_MAX_KEPT_EPOCHS retired epochs,
 * RM_STORE_MAX_RAW_BYTES of raw records and RM_STORE_MAX_CONN_ROWS rows of
 * refused connections; beyond, a retired epoch's outcome, a raw record or a
 * count of refused connections is not kept and is counted as a collector resource drop
 * of kind "database" (the count is written once the database is back; an
 * epoch row left behind is then marked incomplete with that reason).
 * Live (retained) epochs and sessions are always kept: they are in memory
 * anyway.
 *
 * One collector per database: rm_store_open (read-write) takes an
 * exclusive lock on the file (flock) and refuses a database in use. At a
 * run's start (rm_store_run_start), sessions that a previous run left open
 * - it was killed or crashed - are ended and their epochs retired: open
 * ones become incomplete ("collector restarted"), settled ones keep their
 * outcome.
 *
 * Tables (created when missing; a database of the earlier layout with
 * epoch_keys + epoch_state is converted at open):
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
 * All times are UNIX milliseconds. IPFIX unsigned64 values (IDs, counters)
 * are stored as SQLite's signed 64-bit integers with the same bits: read
 * them back as unsigned (values above 2^63 - 1 look negative in SQL).
 *
 * Not thread-safe: one thread uses a store.
 */
#ifndef ROCEMETER_STORE_H
#define ROCEMETER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "rules/collector_rules.h"

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
/* Commit what waits (forced, one attempt), log what could not be stored, close. NULL is a no-op. */
void rm_store_close(struct rm_store *st);
/* Last SQLite error message. */
const char *rm_store_error(struct rm_store *st);
/*
 * The store logs through user/common/log.h: the database unavailable, still
 * unavailable (every RM_STORE_REMIND_MS), writable again, the recovery at a
 * run's start, what could not be stored at close.
 */

/*
 * Transactions. rm_store_begin is kept for the callers' structure and does
 * nothing. rm_store_commit(st) writes what waits if a flush is due (see
 * above), rm_store_flush(st) whatever the time (but not before the retry
 * time while the database is unavailable). Both return 0 when
 * everything is written or still waits (the database is unavailable and
 * the state is kept for a retry), -1 on out of memory.
 */
int rm_store_begin(struct rm_store *st);
int rm_store_commit(struct rm_store *st);
int rm_store_flush(struct rm_store *st);
/* 1 while the last transaction failed and the store waits to retry. */
int rm_store_unavailable(const struct rm_store *st);
/* Collector resource drops of kind "database" since the store was opened (epoch outcomes, raw records, counts). */
uint64_t rm_store_database_drops(const struct rm_store *st);

/*
 * A collector run and its limits; ends the sessions of earlier runs left
 * open and retires their epochs (see above). Written at once (not
 * deferred). Returns the run ID or -1 (rm_store_error).
 */
int64_t rm_store_run_start(struct rm_store *st, const char *listen, const char *transport,
			   const struct rm_rules_limits *lim, uint32_t max_raw_records, uint32_t pen, uint64_t now_ms);
int rm_store_run_stop(struct rm_store *st, int64_t run_id, uint64_t now_ms);

/* A new Transport Session (connection accepted); returns its ID (> 0) or -1 (out of memory). */
int64_t rm_store_session_start(struct rm_store *st, int64_t run_id, const char *peer, const char *transport,
			       uint64_t now_ms);
/* The authorised peer's certificate subject and the authorised peer name it matched (NULL: none). */
int rm_store_session_peer(struct rm_store *st, int64_t session_id, const char *subject, const char *name);

struct rm_session_counts {
	uint64_t messages, records, octets, rejected;   /* rejected: octets runs the decoder could not bind */
	const uint64_t *verdicts;                       /* RM_V__COUNT counts, or NULL */
	uint64_t seq_gaps, seq_missing, time_backwards; /* IPFIX header anomalies (ipfix_decode.h) */
};
int rm_store_session_end(struct rm_store *st, int64_t session_id, const char *reason, uint64_t now_ms,
			 const struct rm_session_counts *c);

/*
 * The counts of an open session so far (c->verdicts copied when set): its
 * row is written again by the next transaction, so that a committed row
 * says how many of the session's records that transaction covers (the
 * received-Messages journal compares them after a crash). 0 or -1.
 */
int rm_store_session_counts(struct rm_store *st, int64_t session_id, const struct rm_session_counts *c);
/* Transactions committed since the store was opened: what waited before the count grew is written. */
uint64_t rm_store_transactions(const struct rm_store *st);

/*
 * A session of a run that ended without writing it all (killed, or
 * crashed), as its received-Messages journal gives it: ID, run, peer,
 * transport, start, and what the collector had read (Messages, records
 * decoded, records rejected, octets of whole Messages) plus the octets of
 * an incomplete last Message.
 */
struct rm_store_lost_session {
	int64_t id, run_id;
	const char *peer, *transport, *subject; /* subject: "" for plain TCP */
	uint64_t started_ms;
	uint64_t messages, records, rejected, octets, partial_octets;
};
/*
 * At a run's start, after rm_store_run_start: the records of l that the
 * database does not hold (read minus the committed row's records and
 * rejected) become a collector resource drop of kind "collector-crash" of
 * the session, its row made when it was never written (ended now_ms) and
 * its counts set to what was read; written at once. *lost is that number
 * of records. 0, or -1 (the database refused: the journal is kept).
 */
int rm_store_session_lost(struct rm_store *st, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost);

/*
 * What an exporter says an earlier Transport Session of its delivered
 * (a Reliability record, rocemeter/ipfix_ie.h RM_TID_RELIABILITY): the
 * session's peer text as the collector writes it ("ADDR:PORT" or
 * "[ADDR]:PORT"; peer_alt another spelling of it or NULL), the authorised
 * subject of the session that reports it ("" for plain TCP), that
 * session's ID (the earlier one has a smaller ID), and the counts.
 */
struct rm_store_acked {
	const char *peer, *peer_alt, *subject;
	int64_t reporting_id;
	uint64_t records, ended_ms; /* Data Records acknowledged; when it died (UNIX ms, 0 unknown) */
	uint64_t unread_max;        /* the most records it can have left unread (octets the collector's
				       kernel and buffers hold, one a record); 0: RM_STORE_UNREAD_MAX */
};
/* The outcome: the session matched, the records it had read (records + rejected), what it never read. */
struct rm_store_acked_result {
	int64_t id;
	uint64_t read, lost;
	const char *why; /* no match: why (static text) */
	int bad;         /* not matched because the claim is impossible (rm_store_acked_unread()): a bad record */
};

/*
 * The most Data Records a Transport Session can have had acknowledged by
 * the collector's kernel and never read when the collector gives no bound
 * (rm_store_acked unread_max 0): what one TCP receive buffer can hold
 * (SO_RCVBUF and tcp_rmem are C ints: at most 2^31 - 1 octets), at least
 * one octet a record.
 */
#define RM_STORE_UNREAD_MAX 2147483647ull

/*
 * The records of claim (Data Records an exporter says a session delivered)
 * that session never read, having read read, into *lost. NULL, or why the
 * claim is impossible (more than max never read, 0: RM_STORE_UNREAD_MAX;
 * *lost 0): for both stores, so that no claim makes a count larger than a
 * session could have lost (docs/collector.md "Records the collector never read").
 */
static inline const char *rm_store_acked_unread(uint64_t claim, uint64_t read, uint64_t max, uint64_t *lost)
{
	*lost = claim > read ? claim - read : 0;
	if (*lost <= (max ? max : RM_STORE_UNREAD_MAX))
		return NULL;
	*lost = 0;
	return "it claims more records never read than the collector's receive buffers can hold (tcp_rmem's "
	       "maximum, the session's buffer and a TLS record, an octet a record)";
}
/*
 * Match a with the latest ended session of the same peer and subject
 * before the reporting one, that started before a->ended_ms + 60 s: the
 * acknowledged records it never read (a->records minus its records and
 * rejected) become a collector resource drop of kind "unread-at-crash" of
 * that session (once: a session already counted is not counted again),
 * written at once. 1 matched (res filled), 0 not matched (res->why), -1
 * the database refused.
 */
int rm_store_session_acked(struct rm_store *st, const struct rm_store_acked *a, uint64_t now_ms,
			   struct rm_store_acked_result *res);

/*
 * An epoch changed or is retired: its row is written (inserted, or updated
 * with the latest state) by the next transaction. A retired epoch never
 * written is packed at once and freed by the rules (e->sink_keeps
 * RM_SINK_CHARGE: the store holds its budget charge until the commit);
 * other retired epochs, and all while the database is unavailable, are
 * kept by the store (RM_SINK_KEEPS) until written. e->store_id is its row
 * ID from the first call on. 0 or -1 (out of memory).
 */
int rm_store_epoch(struct rm_store *st, struct rm_epoch *e);

/*
 * Keep a raw record (r may be NULL when undecodable): copied, written by
 * the next transaction. Returns 1 if queued, 0 if refused by
 * max_raw_records or by the memory bound while the database is unavailable
 * (recorded as a drop), -1 on out of memory.
 */
int rm_store_raw(struct rm_store *st, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		 const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		 size_t tmpl_len, uint64_t now_ms);

/* Count a collector resource drop of kind for a session (added to its row by the next transaction). 0 or -1. */
int rm_store_drop(struct rm_store *st, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms);

struct rm_budget;
/*
 * Charge what waits for the next transaction to b (budget.h; NULL: no
 * budget): a retired epoch the store keeps holds the RM_BUDGET_EPOCH_BYTES
 * its retained epoch was charged (the rules pass the charge on with
 * sink_keeps) until it is written; a raw record waiting is charged its
 * octets (record, reason, Template, bookkeeping) when queued, refused past
 * the budget (rm_budget_take: the budget's callback counts it) unless
 * writing what waits makes room. Set before the first session.
 */
void rm_store_set_budget(struct rm_store *st, struct rm_budget *b);
/*
 * The budget is full (the rules' sink->room): write what waits now, if
 * retired epochs or raw records hold charges and the database is
 * available, in the middle of a Message if it must. 0 if charges were
 * returned, -1 if not.
 */
int rm_store_make_room(struct rm_store *st);

/* Raw record bound (set from the run's limits). */
void rm_store_set_raw_limit(struct rm_store *st, uint32_t max_raw_records);

/*
 * Refused connections (never Transport Sessions), counted per minute,
 * source address and outcome (docs/collector.md "What is stored"): the
 * next transaction adds count to the row (minute_ms, source, outcome),
 * created when missing, and sets its last time and detail. 0 (queued, or
 * counted as a "database" drop beyond RM_STORE_MAX_CONN_ROWS rows waiting)
 * or -1 (out of memory).
 */
int rm_store_connections(struct rm_store *st, uint64_t minute_ms, const char *source, const char *outcome,
			 uint64_t count, uint64_t first_ms, uint64_t last_ms, const char *detail);
/* One limit of a run, by its configuration key (run_limits), written by the next transaction. 0 or -1. */
int rm_store_run_limit(struct rm_store *st, int64_t run_id, const char *name, uint64_t value);

/*
 * An observation point's name as an exporter sent it (Options Template 262:
 * observationPointId, interfaceName in UTF-8), bound to that exporter: the
 * identity of the Transport Session it came in, as its sessions row keeps
 * it (peer_name, peer_subject; NULL over plain TCP, stored as "").
 */
struct rm_store_point {
	const char *peer_name;    /* the authorised peer name the certificate matched, or NULL */
	const char *peer_subject; /* the certificate's subject and SANs (rm_tls_peer_subject()), or NULL */
	uint32_t domain;          /* Observation Domain ID */
	uint64_t id;              /* observationPointId */
	const char *name;
};

/*
 * Store p, written by the next transaction (observation_points: one row per
 * exporter identity, domain and ID, the latest name, when): a name never
 * replaces another exporter's (docs/collector.md "What is stored"). 0 or -1.
 */
int rm_store_observation_point(struct rm_store *st, const struct rm_store_point *p, uint64_t now_ms);
/* Octets of the raw records in the database (not those still waiting): record plus its Template, summed. */
uint64_t rm_store_raw_bytes(struct rm_store *st);

/* The sqlite3 handle, for read-only queries (report). */
struct sqlite3 *rm_store_db(struct rm_store *st);

#endif /* ROCEMETER_STORE_H */
