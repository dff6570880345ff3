/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * backend.h - the collector's store interface: the session loop
 * (collector.c) writes through it and does not know which store is behind
 * it. Two implementations: the local SQLite database (store.c, the
 * default) and a ClickHouse server or cluster (chstore.c, docs/fleet.md).
 * One ops table each; the calls and their contracts are those of store.h
 * (deferred writes, written by commit/flush, never blocking on a remote
 * server). Not thread-safe: one thread uses a backend.
 */
#ifndef ROCEMETER_BACKEND_H
#define ROCEMETER_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rules/collector_rules.h"
#include "store/sqlite/store.h"

/* Every call of store.h with the store as an opaque pointer. */
struct rm_backend_ops {
	const char *name;      /* "sqlite", "clickhouse" */
	const char *drop_kind; /* kind of the drops the store itself counts: "database", "store" */
	void (*close)(void *st);
	const char *(*error)(void *st);
	int (*begin)(void *st);
	int (*commit)(void *st);
	int (*flush)(void *st);
	int (*unavailable)(const void *st);
	uint64_t (*drops)(const void *st);
	int64_t (*run_start)(void *st, const char *listen, const char *transport, const struct rm_rules_limits *lim,
			     uint32_t max_raw_records, uint32_t pen, uint64_t now_ms);
	int (*run_stop)(void *st, int64_t run_id, uint64_t now_ms);
	int64_t (*session_start)(void *st, int64_t run_id, const char *peer, const char *transport, uint64_t now_ms);
	int (*session_peer)(void *st, int64_t session_id, const char *subject, const char *name);
	int (*session_end)(void *st, int64_t session_id, const char *reason, uint64_t now_ms,
			   const struct rm_session_counts *c);
	int (*epoch)(void *st, struct rm_epoch *e);
	int (*raw)(void *st, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		   const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		   size_t tmpl_len, uint64_t now_ms);
	int (*drop)(void *st, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms);
	int (*connections)(void *st, uint64_t minute_ms, const char *source, const char *outcome, uint64_t count,
			   uint64_t first_ms, uint64_t last_ms, const char *detail);
	int (*run_limit)(void *st, int64_t run_id, const char *name, uint64_t value);
	uint64_t (*raw_bytes)(void *st);
	/* Optional (NULL: the store keeps nothing charged to the budget): rm_store_set_budget, rm_store_make_room. */
	void (*set_budget)(void *st, struct rm_budget *b);
	int (*make_room)(void *st);
	/* Optional: records counted as unread-at-crash by the store itself (ClickHouse's sender). */
	uint64_t (*acked_drops)(void *st);
	/* Optional (NULL: no buffer): octets of rows waiting to be written, and the most that may wait. */
	uint64_t (*buffer_bytes)(void *st);
	uint64_t (*buffer_capacity)(void *st);
	/* Optional (NULL: none): the collector ID every row carries. */
	const char *(*collector_id)(void *st);
	/*
	 * Optional: rm_store_session_counts (NULL: open sessions' rows show no
	 * counts); rm_store_transactions and rm_store_session_lost, both or none
	 * (NULL: the store keeps no received-Messages journal).
	 */
	int (*session_counts)(void *st, int64_t session_id, const struct rm_session_counts *c);
	uint64_t (*transactions)(const void *st);
	int (*session_lost)(void *st, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost);
	/*
	 * Optional (NULL: transactions): the number of the last transaction
	 * begun, so that what is queued now is durable once transactions()
	 * exceeds it (ClickHouse: batches handed over vs. inserted).
	 */
	uint64_t (*handed)(const void *st);
	/* Optional (NULL: DATABASE.received for SQLite): the journal's directory. 0, or -1 (too long). */
	int (*journal_dir)(void *st, char *buf, size_t len);
	/* Optional: rm_store_session_acked (NULL: the store does not match Reliability records). */
	int (*session_acked)(void *st, const struct rm_store_acked *a, uint64_t now_ms,
			     struct rm_store_acked_result *res);
	/* Optional (NULL: not kept): rm_store_observation_point, an observation point's name. */
	int (*observation_point)(void *st, const struct rm_store_point *p, uint64_t now_ms);
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
	void *st;
};

extern const struct rm_backend_ops rm_backend_sqlite;     /* store.c */
extern const struct rm_backend_ops rm_backend_clickhouse; /* chstore.c */

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

/* The calls, by name: see store.h for each contract. */
static inline const char *rm_backend_error(struct rm_backend *b)
{
	return b->ops->error(b->st);
}
static inline int rm_backend_begin(struct rm_backend *b)
{
	return b->ops->begin(b->st);
}
static inline int rm_backend_commit(struct rm_backend *b)
{
	return b->ops->commit(b->st);
}
static inline int rm_backend_flush(struct rm_backend *b)
{
	return b->ops->flush(b->st);
}
static inline int rm_backend_unavailable(const struct rm_backend *b)
{
	return b->ops->unavailable(b->st);
}
/* Drops the store counted itself (kind b->ops->drop_kind) since it was opened. */
static inline uint64_t rm_backend_drops(const struct rm_backend *b)
{
	return b->ops->drops(b->st);
}
static inline int64_t rm_backend_run_start(struct rm_backend *b, const char *listen, const char *transport,
					   const struct rm_rules_limits *lim, uint32_t max_raw_records, uint32_t pen,
					   uint64_t now_ms)
{
	return b->ops->run_start(b->st, listen, transport, lim, max_raw_records, pen, now_ms);
}
static inline int rm_backend_run_stop(struct rm_backend *b, int64_t run_id, uint64_t now_ms)
{
	return b->ops->run_stop(b->st, run_id, now_ms);
}
static inline int64_t rm_backend_session_start(struct rm_backend *b, int64_t run_id, const char *peer,
					       const char *transport, uint64_t now_ms)
{
	return b->ops->session_start(b->st, run_id, peer, transport, now_ms);
}
static inline int rm_backend_session_peer(struct rm_backend *b, int64_t session_id, const char *subject,
					  const char *name)
{
	return b->ops->session_peer(b->st, session_id, subject, name);
}
static inline int rm_backend_session_end(struct rm_backend *b, int64_t session_id, const char *reason, uint64_t now_ms,
					 const struct rm_session_counts *c)
{
	return b->ops->session_end(b->st, session_id, reason, now_ms, c);
}
static inline void rm_backend_set_budget(struct rm_backend *b, struct rm_budget *budget)
{
	if (b->ops->set_budget)
		b->ops->set_budget(b->st, budget);
}
/* The budget is full: 0 if the store returned charges (by writing what waits), -1 if not. */
static inline int rm_backend_make_room(struct rm_backend *b)
{
	return b->ops->make_room ? b->ops->make_room(b->st) : -1;
}
static inline int rm_backend_epoch(struct rm_backend *b, struct rm_epoch *e)
{
	return b->ops->epoch(b->st, e);
}
static inline int rm_backend_raw(struct rm_backend *b, int64_t session_id, uint32_t domain, uint16_t tid,
				 const struct rm_report *r, const char *verdict, const char *reason, const uint8_t *raw,
				 size_t len, const uint8_t *tmpl, size_t tmpl_len, uint64_t now_ms)
{
	return b->ops->raw(b->st, session_id, domain, tid, r, verdict, reason, raw, len, tmpl, tmpl_len, now_ms);
}
static inline int rm_backend_drop(struct rm_backend *b, int64_t session_id, const char *kind, const char *detail,
				  uint64_t now_ms)
{
	return b->ops->drop(b->st, session_id, kind, detail, now_ms);
}
static inline int rm_backend_connections(struct rm_backend *b, uint64_t minute_ms, const char *source,
					 const char *outcome, uint64_t count, uint64_t first_ms, uint64_t last_ms,
					 const char *detail)
{
	return b->ops->connections(b->st, minute_ms, source, outcome, count, first_ms, last_ms, detail);
}
static inline int rm_backend_run_limit(struct rm_backend *b, int64_t run_id, const char *name, uint64_t value)
{
	return b->ops->run_limit(b->st, run_id, name, value);
}
/* An observation point's name and its exporter (the exporter's Options Template 262); 0 when the store keeps none. */
static inline int rm_backend_observation_point(struct rm_backend *b, const struct rm_store_point *p, uint64_t now_ms)
{
	return b->ops->observation_point ? b->ops->observation_point(b->st, p, now_ms) : 0;
}
static inline uint64_t rm_backend_raw_bytes(struct rm_backend *b)
{
	return b->ops->raw_bytes(b->st);
}
/* Octets of rows waiting in the store's buffer, and its capacity; 0 for a store without one. */
static inline uint64_t rm_backend_buffer_bytes(struct rm_backend *b)
{
	return b->ops->buffer_bytes ? b->ops->buffer_bytes(b->st) : 0;
}
static inline uint64_t rm_backend_buffer_capacity(struct rm_backend *b)
{
	return b->ops->buffer_capacity ? b->ops->buffer_capacity(b->st) : 0;
}
/* The collector ID of the store's rows; "" for a store without one. */
static inline const char *rm_backend_collector_id(struct rm_backend *b)
{
	return b->ops->collector_id ? b->ops->collector_id(b->st) : "";
}

/* The store can tell what a crash lost of what was read (store.h rm_store_session_lost). */
static inline int rm_backend_has_journal(const struct rm_backend *b)
{
	return b->ops->session_lost != NULL;
}
/* An open session's counts so far: the next transaction writes them with its rows (0 for a store without). */
static inline int rm_backend_session_counts(struct rm_backend *b, int64_t session_id, const struct rm_session_counts *c)
{
	return b->ops->session_counts ? b->ops->session_counts(b->st, session_id, c) : 0;
}
/* Transactions committed since the store was opened (0 for a store without a journal). */
static inline uint64_t rm_backend_transactions(const struct rm_backend *b)
{
	return b->ops->transactions ? b->ops->transactions(b->st) : 0;
}
/* The journal's directory: the store's journal_dir, else db_path.received (SQLite). 0 or -1 (too long). */
static inline int rm_backend_journal_dir(struct rm_backend *b, const char *db_path, char *buf, size_t len)
{
	if (b->ops->journal_dir)
		return b->ops->journal_dir(b->st, buf, len);
	return (size_t)snprintf(buf, len, "%s.received", db_path) >= len ? -1 : 0;
}
/* What is queued now is durable once rm_backend_transactions exceeds this. */
static inline uint64_t rm_backend_handed(const struct rm_backend *b)
{
	return b->ops->handed ? b->ops->handed(b->st) : rm_backend_transactions(b);
}
/* What a crash lost of session l (store.h rm_store_session_lost); -1 for a store without. */
static inline int rm_backend_session_lost(struct rm_backend *b, const struct rm_store_lost_session *l, uint64_t now_ms,
					  uint64_t *lost)
{
	return b->ops->session_lost ? b->ops->session_lost(b->st, l, now_ms, lost) : -1;
}

/*
 * An exporter's Reliability record of an earlier session (store.h
 * rm_store_session_acked): 1 matched, 0 not (res->why), -1 refused, 2
 * queued (ClickHouse: matched by its sender thread, which logs the outcome).
 */
static inline int rm_backend_session_acked(struct rm_backend *b, const struct rm_store_acked *a, uint64_t now_ms,
					   struct rm_store_acked_result *res)
{
	if (!b->ops->session_acked) {
		*res = (struct rm_store_acked_result){ .why = "this store does not match Reliability records" };
		return 0;
	}
	return b->ops->session_acked(b->st, a, now_ms, res);
}

#endif /* ROCEMETER_BACKEND_H */
