/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * backend.h - the collector's store interface and its contract: the session
 * loop (user/collect/) writes through it and does not know which store is
 * behind it. Two implementations, one ops table each: the local SQLite
 * database (sqlite/store.h, the default) and a ClickHouse server or cluster
 * (clickhouse/chstore.h, docs/fleet.md); their headers add only what is
 * their own (when a write is due, what a failure does, their limits).
 *
 * What every store does ([SEQOBS] "Collector Processing": stored outcomes,
 * raw records, finite limits shown to the operator):
 *   - Writes are deferred. A write call records what is to be written and
 *     returns; commit writes all of it when the store's schedule says so,
 *     flush at once. An epoch changed many times between two writes is
 *     written once, with its latest state.
 *   - The collector calls commit and flush only between IPFIX Messages, so
 *     that a write never holds part of a Message (make_room is the one
 *     exception: docs/collector.md "Memory").
 *   - A failure of the store (a busy or full database, a server that does
 *     not answer) loses nothing silently: what waits stays queued and is
 *     retried, within bounds; what does not fit is counted as a collector
 *     resource drop of kind ops->drop_kind, never network loss.
 *   - Row IDs are given in memory, in the order rows are first handed in,
 *     after the largest ID stored: an ID never depends on when a write
 *     succeeds.
 * Threads: every call on the thread that opened the store (the collector's
 * loop); a store is not thread-safe (a ClickHouse store's sender thread is
 * its own business). IDs, counters and times are IPFIX unsigned64 values
 * and UNIX milliseconds.
 */
#ifndef ROCEMETER_BACKEND_H
#define ROCEMETER_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rules/collector_rules.h"

/* ---------------- the types the calls take ---------------- */

/* A Transport Session's counts, at its end or so far (session_end, session_counts). */
struct rm_session_counts {
	uint64_t messages, records, octets, rejected;   /* rejected: octets runs the decoder could not bind */
	const uint64_t *verdicts;                       /* RM_V__COUNT counts, or NULL */
	uint64_t seq_gaps, seq_missing, time_backwards; /* IPFIX header anomalies (ipfix_decode.h) */
};

/*
 * A session of a run that ended without writing it all (killed, or
 * crashed), as its received-Messages journal gives it (session_lost): ID,
 * run, peer, transport, start, and what the collector had read (Messages,
 * records decoded, records rejected, octets of whole Messages) plus the
 * octets of an incomplete last Message.
 */
struct rm_store_lost_session {
	int64_t id, run_id;
	const char *peer, *transport, *subject; /* subject: "" for plain TCP */
	uint64_t started_ms;
	uint64_t messages, records, rejected, octets, partial_octets;
};

/*
 * What an exporter says an earlier Transport Session of its delivered
 * (a Reliability record, rocemeter/ipfix_ie.h RM_TID_RELIABILITY;
 * session_acked): the session's peer text as the collector writes it
 * ("ADDR:PORT" or "[ADDR]:PORT"; peer_alt another spelling of it or NULL),
 * the authorised subject of the session that reports it ("" for plain
 * TCP), that session's ID (the earlier one has a smaller ID), and the
 * counts.
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

struct rm_budget;

/* ---------------- the calls ---------------- */

/*
 * A store's implementation of the calls, store the opaque pointer its open
 * returned. Optional calls may be NULL: the wrappers below say what then.
 */
struct rm_backend_ops {
	const char *name;      /* "sqlite", "clickhouse" */
	const char *drop_kind; /* kind of the drops the store itself counts: "database", "store" */
	/*
	 * Write what waits (a last attempt, bounded in time), log what could
	 * not be stored, free the store. NULL is a no-op.
	 */
	void (*close)(void *store);
	/* The text of the last failure (run_start's, a refused write's): valid until the next call. */
	const char *(*error)(void *store);
	/* Kept for the callers' structure: a store's transaction is commit's. 0. */
	int (*begin)(void *store);
	/*
	 * Between two Messages: write what waits if the store's schedule says
	 * a write is due (time, or octets or rows waiting). 0 when written or
	 * still waiting (the store is unavailable: kept for a retry); -1 out of
	 * memory.
	 */
	int (*commit)(void *store);
	/* As commit, whatever the schedule (not before a retry is due while unavailable). 0 or -1. */
	int (*flush)(void *store);
	/* 1 while the last write failed and the store waits to retry, else 0. */
	int (*unavailable)(const void *store);
	/* The drops the store counted itself (kind drop_kind) since it was opened. */
	uint64_t (*drops)(const void *store);
	/*
	 * A collector run starts (listen address, "tls" or "tcp", the rules'
	 * limits, max_raw_records, the PEN): its runs row. Sessions an earlier
	 * run left open (killed, crashed) are ended and their epochs retired:
	 * open ones incomplete ("collector restarted"), settled ones with their
	 * outcome. Blocks (once, before the loop). The run ID (> 0);
	 * RM_BACKEND_REFUSED for a refusal no retry mends (error(): the fix;
	 * the collector exits with status 2); another negative value: a setup
	 * error (error()).
	 */
	int64_t (*run_start)(void *store, const char *listen, const char *transport, const struct rm_rules_limits *lim,
			     uint32_t max_raw_records, uint32_t pen, uint64_t now_ms);
	/* The run stopped at now_ms, written with what waits. 0. */
	int (*run_stop)(void *store, int64_t run_id, uint64_t now_ms);
	/* A Transport Session admitted (peer "ADDR:PORT", "tls" or "tcp"): its ID (> 0), or -1 out of memory. */
	int64_t (*session_start)(void *store, int64_t run_id, const char *peer, const char *transport, uint64_t now_ms);
	/* The authorised peer's certificate subject and the authorised peer name it matched (NULL: none). 0 or -1. */
	int (*session_peer)(void *store, int64_t session_id, const char *subject, const char *name);
	/* The session ended: reason, time (0 is stored as 1), counts (c->verdicts copied when set). 0 or -1. */
	int (*session_end)(void *store, int64_t session_id, const char *reason, uint64_t now_ms,
			   const struct rm_session_counts *c);
	/*
	 * An epoch changed or is retired (the rules' sink, collector_rules.h):
	 * its row, with its latest state, is written with what waits.
	 * e->store_id is its row ID from the first call on. For a retired
	 * epoch the store sets e->sink_keeps as the rules' sink contract says
	 * (it keeps the epoch, or copied it and keeps the budget charge) or
	 * leaves it 0 (written or counted as a drop already). 0, or -1 out of
	 * memory.
	 */
	int (*epoch)(void *store, struct rm_epoch *e);
	/*
	 * Keep a raw record (r NULL when undecodable) with its verdict, reason
	 * and Template, copied. 1 queued; 0 not kept (max_raw_records, the
	 * store's memory bound or the budget: counted as a drop); -1 out of
	 * memory.
	 */
	int (*raw)(void *store, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		   const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		   size_t tmpl_len, uint64_t now_ms);
	/* Count a collector resource drop of kind for a session (session 0: refused connections). 0 or -1. */
	int (*drop)(void *store, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms);
	/*
	 * Refused connections (never Transport Sessions), counted per minute,
	 * source address and outcome (docs/collector.md "What is stored"):
	 * count added to their row, its last time and detail set. 0 (queued,
	 * or counted as a drop when the store's bound is reached), or -1.
	 */
	int (*connections)(void *store, uint64_t minute_ms, const char *source, const char *outcome, uint64_t count,
			   uint64_t first_ms, uint64_t last_ms, const char *detail);
	/* One limit of a run, by its configuration key (run_limits). 0 or -1. */
	int (*run_limit)(void *store, int64_t run_id, const char *name, uint64_t value);
	/* Octets of the raw records stored (record plus its Template, summed), read at a run's start. */
	uint64_t (*raw_bytes)(void *store);
	/*
	 * Optional (NULL: the store keeps nothing charged to the budget).
	 * set_budget: charge what waits to b (budget.h), before the first
	 * session. make_room: the budget is full: write what waits now if that
	 * returns charges; 0 if it did, -1 if not.
	 */
	void (*set_budget)(void *store, struct rm_budget *b);
	int (*make_room)(void *store);
	/* Optional: records counted as unread-at-crash by the store itself (ClickHouse's sender). */
	uint64_t (*acked_drops)(void *store);
	/* Optional (NULL: no buffer): octets of rows waiting to be written, and the most that may wait. */
	uint64_t (*buffer_bytes)(void *store);
	uint64_t (*buffer_capacity)(void *store);
	/* Optional (NULL: none): the collector ID every row carries. */
	const char *(*collector_id)(void *store);
	/*
	 * Optional (NULL: open sessions' rows show no counts): an open
	 * session's counts so far; the next write writes its row again, so
	 * that a written row says how many of the session's records that write
	 * covers (the received-Messages journal compares them after a crash).
	 * A session not open in this run is left alone. 0, or -1 (no such
	 * session).
	 */
	int (*session_counts)(void *store, int64_t session_id, const struct rm_session_counts *c);
	/*
	 * transactions and session_lost: both or none (NULL: the store keeps
	 * no received-Messages journal). transactions: writes completed since
	 * the store was opened; what waited before the count grew is stored.
	 * session_lost, at a run's start after run_start: the records of l the
	 * store does not hold (read minus the stored row's records and
	 * rejected) become a collector resource drop "collector-crash" of the
	 * session, its row made when it was never written (ended now_ms) and
	 * its counts set to what was read; written at once. *lost: that
	 * number. 0, or -1 (the store refused: the journal is kept).
	 */
	uint64_t (*transactions)(const void *store);
	int (*session_lost)(void *store, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost);
	/*
	 * Optional (NULL: transactions): the number of the last write begun,
	 * so that what is queued now is stored once transactions() exceeds it
	 * (ClickHouse: batches handed over vs. inserted).
	 */
	uint64_t (*handed)(const void *store);
	/* Optional (NULL: DATABASE.received for SQLite): the journal's directory. 0, or -1 (too long). */
	int (*journal_dir)(void *store, char *buf, size_t len);
	/*
	 * Optional (NULL: the store does not match Reliability records): match
	 * a with the latest ended session of the same peer and subject before
	 * the reporting one, started before a->ended_ms + 60 s: the
	 * acknowledged records it never read (rm_store_acked_unread) become a
	 * collector resource drop "unread-at-crash" of that session, once. 1
	 * matched (res filled), 0 not (res->why), -1 the store refused, 2
	 * queued (matched later by the store, which logs the outcome).
	 */
	int (*session_acked)(void *store, const struct rm_store_acked *a, uint64_t now_ms,
			     struct rm_store_acked_result *res);
	/*
	 * Optional (NULL: not kept): an observation point's name, one row per
	 * exporter identity, domain and ID with the latest name: a name never
	 * replaces another exporter's (docs/collector.md "What is stored"). 0
	 * or -1.
	 */
	int (*observation_point)(void *store, const struct rm_store_point *p, uint64_t now_ms);
};

/*
 * run_start's result for a refusal that no retry mends (a configuration
 * error: exit status 2); the error names the fix. Any other negative
 * result is a setup error.
 */
#define RM_BACKEND_REFUSED (-2)

/* A store and its implementation. */
struct rm_backend {
	const struct rm_backend_ops *ops;
	void *store;
};

extern const struct rm_backend_ops rm_backend_sqlite;     /* backend.c over sqlite/store.h */
extern const struct rm_backend_ops rm_backend_clickhouse; /* clickhouse/chstore.c */

/*
 * Open the store of spec (store_spec.h) for writing: the SQLite database
 * (created when missing) or a ClickHouse store (chstore.h) whose rows
 * carry collector_id (NULL or "": the host name, docs/fleet.md "Collector
 * ID") with at most buffer_bytes of rows waiting (0: the default) and its
 * unsent rows spooled at close into spool_dir (NULL or "": the default).
 * NULL with err on failure: "database: PATH: why" (SQLite) or "ClickHouse
 * store: why".
 */
struct rm_store_spec;
struct rm_backend *rm_backend_open(const struct rm_store_spec *spec, const char *collector_id, uint64_t buffer_bytes,
				   const char *spool_dir, char *err, size_t errlen);
/* Close the store (its close: what waits is written or counted) and free b. NULL is a no-op. */
void rm_backend_close(struct rm_backend *b);

/* The calls, by name: each is the ops call of the same name (its contract above). */
static inline const char *rm_backend_error(struct rm_backend *b)
{
	return b->ops->error(b->store);
}
static inline int rm_backend_begin(struct rm_backend *b)
{
	return b->ops->begin(b->store);
}
static inline int rm_backend_commit(struct rm_backend *b)
{
	return b->ops->commit(b->store);
}
static inline int rm_backend_flush(struct rm_backend *b)
{
	return b->ops->flush(b->store);
}
static inline int rm_backend_unavailable(const struct rm_backend *b)
{
	return b->ops->unavailable(b->store);
}
static inline uint64_t rm_backend_drops(const struct rm_backend *b)
{
	return b->ops->drops(b->store);
}
static inline int64_t rm_backend_run_start(struct rm_backend *b, const char *listen, const char *transport,
					   const struct rm_rules_limits *lim, uint32_t max_raw_records, uint32_t pen,
					   uint64_t now_ms)
{
	return b->ops->run_start(b->store, listen, transport, lim, max_raw_records, pen, now_ms);
}
static inline int rm_backend_run_stop(struct rm_backend *b, int64_t run_id, uint64_t now_ms)
{
	return b->ops->run_stop(b->store, run_id, now_ms);
}
static inline int64_t rm_backend_session_start(struct rm_backend *b, int64_t run_id, const char *peer,
					       const char *transport, uint64_t now_ms)
{
	return b->ops->session_start(b->store, run_id, peer, transport, now_ms);
}
static inline int rm_backend_session_peer(struct rm_backend *b, int64_t session_id, const char *subject,
					  const char *name)
{
	return b->ops->session_peer(b->store, session_id, subject, name);
}
static inline int rm_backend_session_end(struct rm_backend *b, int64_t session_id, const char *reason, uint64_t now_ms,
					 const struct rm_session_counts *c)
{
	return b->ops->session_end(b->store, session_id, reason, now_ms, c);
}
/* No set_budget: nothing is charged. */
static inline void rm_backend_set_budget(struct rm_backend *b, struct rm_budget *budget)
{
	if (b->ops->set_budget)
		b->ops->set_budget(b->store, budget);
}
/* No make_room: -1 (no charge returned). */
static inline int rm_backend_make_room(struct rm_backend *b)
{
	return b->ops->make_room ? b->ops->make_room(b->store) : -1;
}
static inline int rm_backend_epoch(struct rm_backend *b, struct rm_epoch *e)
{
	return b->ops->epoch(b->store, e);
}
static inline int rm_backend_raw(struct rm_backend *b, int64_t session_id, uint32_t domain, uint16_t tid,
				 const struct rm_report *r, const char *verdict, const char *reason, const uint8_t *raw,
				 size_t len, const uint8_t *tmpl, size_t tmpl_len, uint64_t now_ms)
{
	return b->ops->raw(b->store, session_id, domain, tid, r, verdict, reason, raw, len, tmpl, tmpl_len, now_ms);
}
static inline int rm_backend_drop(struct rm_backend *b, int64_t session_id, const char *kind, const char *detail,
				  uint64_t now_ms)
{
	return b->ops->drop(b->store, session_id, kind, detail, now_ms);
}
static inline int rm_backend_connections(struct rm_backend *b, uint64_t minute_ms, const char *source,
					 const char *outcome, uint64_t count, uint64_t first_ms, uint64_t last_ms,
					 const char *detail)
{
	return b->ops->connections(b->store, minute_ms, source, outcome, count, first_ms, last_ms, detail);
}
static inline int rm_backend_run_limit(struct rm_backend *b, int64_t run_id, const char *name, uint64_t value)
{
	return b->ops->run_limit(b->store, run_id, name, value);
}
/* No observation_point: 0 (not kept). */
static inline int rm_backend_observation_point(struct rm_backend *b, const struct rm_store_point *p, uint64_t now_ms)
{
	return b->ops->observation_point ? b->ops->observation_point(b->store, p, now_ms) : 0;
}
static inline uint64_t rm_backend_raw_bytes(struct rm_backend *b)
{
	return b->ops->raw_bytes(b->store);
}
/* No buffer: 0 and 0. */
static inline uint64_t rm_backend_buffer_bytes(struct rm_backend *b)
{
	return b->ops->buffer_bytes ? b->ops->buffer_bytes(b->store) : 0;
}
static inline uint64_t rm_backend_buffer_capacity(struct rm_backend *b)
{
	return b->ops->buffer_capacity ? b->ops->buffer_capacity(b->store) : 0;
}
/* No collector ID: "". */
static inline const char *rm_backend_collector_id(struct rm_backend *b)
{
	return b->ops->collector_id ? b->ops->collector_id(b->store) : "";
}

/* The store can tell what a crash lost of what was read (session_lost). */
static inline int rm_backend_has_journal(const struct rm_backend *b)
{
	return b->ops->session_lost != NULL;
}
/* No session_counts: 0 (nothing written). */
static inline int rm_backend_session_counts(struct rm_backend *b, int64_t session_id, const struct rm_session_counts *c)
{
	return b->ops->session_counts ? b->ops->session_counts(b->store, session_id, c) : 0;
}
/* No journal: 0. */
static inline uint64_t rm_backend_transactions(const struct rm_backend *b)
{
	return b->ops->transactions ? b->ops->transactions(b->store) : 0;
}
/* The journal's directory: the store's journal_dir, else db_path.received (SQLite). 0 or -1 (too long). */
static inline int rm_backend_journal_dir(struct rm_backend *b, const char *db_path, char *buf, size_t len)
{
	if (b->ops->journal_dir)
		return b->ops->journal_dir(b->store, buf, len);
	return (size_t)snprintf(buf, len, "%s.received", db_path) >= len ? -1 : 0;
}
/* What is queued now is stored once rm_backend_transactions exceeds this. */
static inline uint64_t rm_backend_handed(const struct rm_backend *b)
{
	return b->ops->handed ? b->ops->handed(b->store) : rm_backend_transactions(b);
}
/* No acked_drops: 0. */
static inline uint64_t rm_backend_acked_drops(struct rm_backend *b)
{
	return b->ops->acked_drops ? b->ops->acked_drops(b->store) : 0;
}
/* No journal: -1. */
static inline int rm_backend_session_lost(struct rm_backend *b, const struct rm_store_lost_session *l, uint64_t now_ms,
					  uint64_t *lost)
{
	return b->ops->session_lost ? b->ops->session_lost(b->store, l, now_ms, lost) : -1;
}
/* No session_acked: 0 with res->why saying so. */
static inline int rm_backend_session_acked(struct rm_backend *b, const struct rm_store_acked *a, uint64_t now_ms,
					   struct rm_store_acked_result *res)
{
	if (!b->ops->session_acked) {
		*res = (struct rm_store_acked_result){ .why = "this store does not match Reliability records" };
		return 0;
	}
	return b->ops->session_acked(b->store, a, now_ms, res);
}

#endif /* ROCEMETER_BACKEND_H */
