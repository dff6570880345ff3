/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * collector_rules.h - validation and epoch tracking of the collector
 * ([SEQOBS] "Collector Processing", with the invariants of "Bounded
 * Sequence Observation Algorithm" and the masks of "Qualification Flags").
 * No sockets, no SQLite: decoded reports go in, verdicts and epoch changes
 * come out through a sink, so every rule is unit-testable.
 *
 * Scope: one struct rm_rsession per IPFIX Transport Session; inside it,
 * per Observation Domain, an epoch-admission high-water ID and the
 * retained epochs, found by epoch ID and checked against their full key
 * (domain, observationPointId, addresses, rdmaDestinationQP,
 * rdmaPartitionKey, VLAN namespace, epoch ID).
 *
 * Limits are finite: max_sessions open sessions, max_epochs retained
 * epochs per session (when full, the oldest closed epoch - final accepted
 * or invalid - is retired first; if none is closed the new epoch is
 * refused and reported as a collector resource drop, never as network
 * loss), inactivity_timeout_ms without a report retires an epoch (0 =
 * never). Every retired epoch leaves with an outcome: complete, incomplete
 * or invalid, and a reason.
 *
 * Times are UNIX milliseconds supplied by the caller.
 */
#ifndef ROCEMETER_COLLECTOR_RULES_H
#define ROCEMETER_COLLECTOR_RULES_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "rocemeter/report.h"

/* Longest epoch reason, with its terminating NUL (longer ones are truncated). */
#define RM_EPOCH_REASON_MAX 240

/* Observation Domains one Transport Session may use: each keeps an
 * epoch-admission high-water ID for the whole session, so their number is
 * bounded; records of a further domain are collector resource drops. */
#define RM_RULES_MAX_DOMAINS 64

struct rm_rules_limits {
	uint32_t max_sessions;          /* open Transport Sessions */
	uint32_t max_epochs;            /* retained epochs per session */
	uint64_t inactivity_timeout_ms; /* 0: never */
};

enum rm_outcome {
	RM_OUTCOME_OPEN = 0,   /* not settled yet: reports still expected */
	RM_OUTCOME_COMPLETE,   /* reports 1..final without gaps, valid final */
	RM_OUTCOME_INCOMPLETE, /* gaps, missing final, session failure, timeout */
	RM_OUTCOME_INVALID,    /* a record broke a rule of the profile */
};

enum rm_epoch_state {
	RM_EPOCH_OPEN = 0, /* accepting larger report IDs */
	RM_EPOCH_FINAL,    /* a valid final record was accepted; closure state retained */
	RM_EPOCH_INVALID,  /* invalidated; later records are ignored */
};

/* What happened to one record (rm_rules_record). */
enum rm_verdict {
	RM_V_ACCEPTED = 0,  /* became the latest report of its epoch */
	RM_V_REPEAT,        /* identical repeat of the latest report ID: ignored */
	RM_V_STALE,         /* smaller report ID: changes nothing */
	RM_V_ORPHAN,        /* unknown epoch ID at or below the high-water: nothing created */
	RM_V_UNSUPPORTED,   /* unknown flag bits: raw record kept, no measurement derived */
	RM_V_INVALID,       /* the record invalidated its epoch */
	RM_V_AFTER_INVALID, /* its epoch is invalid already: ignored */
	RM_V_KEY_CONFLICT,  /* epoch ID retained with a different full key: rejected, epoch invalidated */
	RM_V_RESOURCE_DROP, /* new epoch refused by max_epochs: collector resource drop */
	RM_V_UNBOUND,       /* epoch ID 0: bound to no epoch */
	RM_V__COUNT
};

/*
 * One retained epoch. The sink reads it; only rm_rules_* change it.
 * key holds the record key and, once n_accepted > 0, the latest accepted
 * report (its counters are the epoch's published totals).
 */
struct rm_epoch {
	/*
	 * What retirement, flushes and the store read come first (the first two
	 * cache lines): retiring a cold epoch then reads two lines, not five.
	 */
	uint64_t session_id;
	uint32_t domain; /* Observation Domain ID */
	enum rm_epoch_state state;
	enum rm_outcome outcome;
	uint16_t flags_seen;      /* OR of the flags of accepted reports */
	uint8_t store_row;        /* free for the sink (1: the row exists) */
	uint8_t sink_keeps;       /* set by sink->epoch on a retired epoch: RM_SINK_KEEPS the sink frees it
				       (rm_rules_epoch_free) and its budget charge passes to the sink
				       (rm_rules_set_budget); RM_SINK_CHARGE the rules free it, the charge passes */
	uint8_t dirty, in_closed; /* internal: changed since the last flush; on the closed list */
	uint8_t sink_counted;     /* free for the sink (the metrics: the outcome the epoch was counted with) */
	const char *reason;       /* why incomplete or invalid, at most RM_EPOCH_REASON_MAX - 1 characters;
				       "" when complete or open; never NULL; owned by the rules */
	uint64_t first_seen_ms, last_seen_ms, retired_ms; /* collector clock; retired_ms 0 while retained */
	int64_t store_id;                                 /* free for the sink (the SQLite row) */
	uint32_t store_slot;                              /* free for the sink (its place in a write queue) */
	uint32_t dirty_slot;                              /* internal: index in the session's dirty array while dirty */
	/* internal: intrusive lists (no allocation per epoch) */
	struct rm_rsession *sess;
	struct rm_epoch *lru_prev, *lru_next;       /* every retained epoch, least recently reported first */
	struct rm_epoch *closed_prev, *closed_next; /* final or invalid epochs, oldest closure first */

	uint64_t n_accepted;      /* reports accepted */
	uint64_t first_report_id; /* first accepted report ID, 0: none */
	uint64_t missing_initial; /* report IDs 1..first-1 never accepted */
	uint64_t missing_reports; /* all report IDs below the latest never accepted (incl. initial) */
	uint64_t gaps;            /* gap ranges (the initial one included) */
	uint64_t repeats;         /* identical repeats ignored */
	uint64_t stale;           /* smaller report IDs ignored */
	uint64_t unsupported;     /* records with unknown flag bits (raw kept) */
	uint64_t ignored;         /* records after invalidation */
	struct rm_report key;     /* key fields + latest accepted report */
};

/* e->sink_keeps, set by sink->epoch on a retired epoch (struct rm_rules_sink). */
enum { RM_SINK_KEEPS = 1, RM_SINK_CHARGE = 2 };

struct rm_rules_sink {
	/*
	 * An epoch changed (called by rm_rules_flush for each changed epoch) or
	 * is retired (retired_ms != 0, outcome settled; e->dirty says whether
	 * it changed since the last rm_rules_flush; e is freed afterwards,
	 * unless the sink sets e->sink_keeps to RM_SINK_KEEPS: then it is the
	 * sink's, detached from the session (e->sess is not to be used), to be
	 * freed with rm_rules_epoch_free, and keeps its RM_BUDGET_EPOCH_BYTES
	 * charge, which the sink returns when it frees it; RM_SINK_CHARGE: the
	 * sink copied what it needs, e is freed at once, the charge passes to
	 * the sink all the same, to be returned when the copy is written).
	 */
	void (*epoch)(void *arg, struct rm_epoch *e);
	/* A collector resource drop (admission refused by a limit). */
	void (*drop)(void *arg, uint64_t session_id, uint32_t domain, uint64_t epoch_id, const char *detail);
	/* One log line (invalid epochs, refused admissions). May be NULL. */
	void (*log)(void *arg, const char *line);
	/*
	 * A new epoch does not fit the budget, even after the oldest closed
	 * epoch was retired: free what the sink keeps (write it) if it can.
	 * 0 if it freed something (the rules try again), -1 if not. May be NULL.
	 */
	int (*room)(void *arg);
};

struct rm_rules;
struct rm_rsession;

/* Rules engine with the given limits; sink functions are called with arg. NULL on ENOMEM. */
struct rm_rules *rm_rules_new(const struct rm_rules_limits *lim, const struct rm_rules_sink *sink, void *arg);

struct rm_budget;
/*
 * Charge every retained epoch RM_BUDGET_EPOCH_BYTES to b (budget.h), from
 * creation to retirement. Set before the first session. A new epoch that
 * does not fit first retires the session's oldest closed epoch (as
 * max_epochs does); if none is closed it is refused: verdict
 * RM_V_RESOURCE_DROP, reported through the budget's callback (not
 * sink->drop).
 */
void rm_rules_set_budget(struct rm_rules *r, struct rm_budget *b);
struct rm_budget_share;
/*
 * Charge the session's retained epochs to sh, a share of the rules' budget
 * (budget.h) that its Templates may also use, instead of a share of its own
 * (the default). Before its first record; sh must outlive the session. A
 * new epoch beyond the share retires the session's oldest closed epoch, or
 * is refused as above: the other sessions keep their room. NULL: its own.
 */
void rm_rules_session_set_share(struct rm_rsession *s, struct rm_budget_share *sh);
/*
 * A report of domain became its epoch's latest (verdict accepted): prev is
 * the epoch's previous accepted report, NULL for its first. Called with the
 * sink's arg, before the epoch changes.
 */
typedef void (*rm_rules_accepted_fn)(void *arg, uint32_t domain, const struct rm_report *r,
				     const struct rm_report *prev);
/* Call fn for every accepted report (NULL: none, the default). Set before the first session. */
void rm_rules_set_accepted(struct rm_rules *r, rm_rules_accepted_fn fn);
/* Free; every session must be closed first. */
void rm_rules_free(struct rm_rules *r);
/* Free a retired epoch the sink kept (sink_keeps). NULL is a no-op. */
void rm_rules_epoch_free(struct rm_epoch *e);

/* A new Transport Session (fresh high-water IDs). NULL if max_sessions are open. */
struct rm_rsession *rm_rules_session_open(struct rm_rules *r, uint64_t session_id);
/* Session end: retire every epoch (open ones incomplete with reason) and free the session. */
void rm_rules_session_close(struct rm_rsession *s, const char *reason, uint64_t now_ms);
/* Open sessions. */
uint32_t rm_rules_sessions(const struct rm_rules *r);

/*
 * Apply one decoded Data Record of Observation Domain domain. err (may be
 * NULL) receives a one-line explanation for any verdict but ACCEPTED: a
 * verdict, not a failure of the call.
 */
enum rm_verdict rm_rules_record(struct rm_rsession *s, uint32_t domain, const struct rm_report *rep, uint64_t now_ms,
				char *err, size_t errlen);

/* Hand every epoch changed since the last flush to sink->epoch. */
void rm_rules_flush(struct rm_rsession *s);
/* Retire epochs without a report for inactivity_timeout_ms. */
void rm_rules_tick(struct rm_rsession *s, uint64_t now_ms);

/*
 * The record-level checks: 0 valid, 1 unsupported qualification (unknown
 * flag bits 0xFFC0), -1 invalid (field range, flags, arithmetic relation,
 * flowEndMilliseconds before flowStartMilliseconds); err gets the reason.
 * Between reports of one epoch (rm_rules_record), a larger report ID is
 * also invalid when a total decreases, an immutable field changes or
 * flowEndMilliseconds goes back.
 */
int rm_rules_check_record(const struct rm_report *r, char *err, size_t errlen);

/* Retained epoch with that ID, or NULL. */
struct rm_epoch *rm_rules_find(struct rm_rsession *s, uint32_t domain, uint64_t epoch_id);
/* Epoch-admission high-water ID of a domain; 0 if none yet. */
uint64_t rm_rules_high_water(struct rm_rsession *s, uint32_t domain);
/* Retained epochs of the session. */
uint32_t rm_rules_retained(const struct rm_rsession *s);
/* Per-verdict record counts of the session. */
const uint64_t *rm_rules_verdict_counts(const struct rm_rsession *s);

const char *rm_outcome_name(enum rm_outcome o);
const char *rm_verdict_name(enum rm_verdict v);
/* 1 if a record with this verdict must/should be kept raw. */
int rm_verdict_keeps_raw(enum rm_verdict v);

#endif /* ROCEMETER_COLLECTOR_RULES_H */
