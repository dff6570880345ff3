/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * store_rows.h - the rows of the stored tables as C structs, one per table
 * of columns.h (whose field column names the member), and the bookkeeping
 * both stores (SQLite: store.c, ClickHouse: chstore.c) share for the rows
 * they keep in memory between two writes: a Transport Session's sessions
 * row and the collector resource drops counted per session and kind
 * ([SEQOBS] "Collector Processing": drops are never network loss). Each
 * store writes the rows its own way and decides when a row leaves the
 * table. Not thread-safe.
 */
#ifndef ROCEMETER_STORE_ROWS_H
#define ROCEMETER_STORE_ROWS_H

#include <stdint.h>
#include <glib.h>

#include "store/backend.h"
#include "store/columns.h"

/* A collector run (runs): its start, stop (0: running) and the limits in force. */
struct rm_run_row {
	int64_t id;
	uint64_t started_ms, stopped_ms;
	const char *listen, *transport;
	uint64_t max_sessions, max_epochs, max_raw_records, inactivity_timeout_ms, pen;
};

/* A raw record (raw_records); has_report 0: undecodable, its report's columns NULL. */
struct rm_raw_row {
	int64_t id, session_id;
	uint64_t received_ms, epoch_id, report_id;
	uint32_t domain;
	uint16_t template_id, flags;
	uint8_t has_report;
	const char *verdict, *reason;
	struct rm_col_bytes record, template; /* template.p NULL: none */
};

/* The runs row of the stores' run_start call (backend.h); id 0: the store gives it. */
struct rm_run_row rm_run_row_of(const char *listen, const char *transport, const struct rm_rules_limits *lim,
				uint32_t max_raw_records, uint32_t pen, uint64_t now_ms);

/*
 * The row of a raw record of the stores' raw call (backend.h): its fields
 * point to the arguments (id 0: the store gives it).
 */
struct rm_raw_row rm_raw_row_of(int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
				const char *verdict, const char *reason, const uint8_t *raw, size_t len,
				const uint8_t *tmpl, size_t tmpl_len, uint64_t now_ms);

/* Refused connections of one minute, source and outcome (connections): counts since the last write. */
struct rm_conn_row {
	uint64_t minute_ms, count, first_ms, last_ms;
	const char *source, *outcome, *detail;
};

/* One limit of a run (run_limits); seq its place among the run's limits (ClickHouse). */
struct rm_limit_row {
	int64_t run_id;
	uint64_t value, seq;
	const char *name;
};

/* An observation point's name and its exporter (observation_points; "" for a NULL identity). */
struct rm_point_row {
	uint32_t domain;
	uint64_t id, updated_ms;
	const char *name, *peer_name, *peer_subject;
};

/* A chunk of packed epochs (epoch_archive, SQLite): IDs first..last, JSON data and base. */
struct rm_archive_row {
	int64_t id, first, last;
	uint32_t retained; /* of its epochs, those packed before their retirement */
	struct rm_col_bytes data, base;
};

/* Packed epochs first..last retired at retired_ms (epoch_retired, SQLite). */
struct rm_retired_row {
	int64_t first, last;
	uint64_t retired_ms;
};

/* A sessions row, kept while its session is open and until its end is written. */
struct rm_sess_row {
	int64_t id, run_id;
	char *peer, *subject, *transport, *reason;
	char *peer_name;               /* the authorised peer name the certificate matched; NULL over plain TCP */
	uint64_t started_ms, ended_ms; /* UNIX ms; ended_ms 0 while open */
	struct rm_session_counts c;    /* c.verdicts is NULL: the counts are in verdicts */
	uint64_t verdicts[RM_V__COUNT];
	uint8_t dirty; /* changed since the store last wrote it */
};

/* The table of sessions rows: int64 ID -> struct rm_sess_row, freed with it. */
GHashTable *rm_sess_rows_new(void);
/*
 * Session id's row (made when missing), marked dirty; *was_clean (may be
 * NULL) is set to 1 when it was not dirty before, else 0. NULL when out of
 * memory.
 */
struct rm_sess_row *rm_sess_rows_get(GHashTable *t, int64_t id, int *was_clean);
/* Fill a new row: run, peer address text, transport ("tls", "tcp"), start. 0 or -1 (out of memory). */
int rm_sess_row_start(struct rm_sess_row *s, int64_t run_id, const char *peer, const char *transport, uint64_t now_ms);
/* The authorised peer's certificate subject, and the authorised peer name it matched (NULL: none). 0 or -1. */
int rm_sess_row_peer(struct rm_sess_row *s, const char *subject, const char *name);
/* The end: time (0 is stored as 1: ended), reason, counts (c->verdicts copied when set). 0 or -1. */
int rm_sess_row_end(struct rm_sess_row *s, const char *reason, uint64_t now_ms, const struct rm_session_counts *c);
/*
 * The row of a session a crashed run never wrote, from its journal (l):
 * started, ended now_ms with the collector's restart as its reason, its
 * counts what was read, lost records as resource drops. s zeroed first;
 * free its texts with rm_sess_row_clear. 0 or -1 (out of memory).
 */
int rm_sess_row_lost(struct rm_sess_row *s, const struct rm_store_lost_session *l, uint64_t lost, uint64_t now_ms);
/* Free the texts of a row not in a table. */
void rm_sess_row_clear(struct rm_sess_row *s);

/* Collector resource drops of one session and kind since the store last wrote them (drops). */
struct rm_drop_row {
	int64_t session_id;
	uint64_t count, first_ms, last_ms; /* first and last drop, UNIX ms */
	char *detail;                      /* the last drop's detail */
	char *kind;                        /* "database", "store", "memory-budget", ... */
};

/* A drop row of one drop, not kept in a table (written at once): its fields point to the arguments. */
struct rm_drop_row rm_drop_row_of(int64_t session_id, const char *kind, const char *detail, uint64_t now_ms);
/* The table of drop rows: "SESSION/KIND" -> struct rm_drop_row, freed with it. */
GHashTable *rm_drop_rows_new(void);
/* Count one drop of kind for session_id at now_ms with its detail. 0 or -1 (out of memory). */
int rm_drop_rows_count(GHashTable *t, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms);

/*
 * A text column's value as stored (ADDR as text into buf, of at least
 * INET6_ADDRSTRLEN octets; STATE, OUTCOME their names; TEXT the string,
 * NULL when it is).
 */
const char *rm_col_string(const struct rm_stored_table *t, const struct rm_column *c, const void *row, char *buf,
			  size_t len);

/* An address as stored (ADDR): dotted IPv4 when family is not 6, else inet_ntop, into buf of len. */
void rm_store_addr_text(uint8_t family, const uint8_t *a, char *buf, size_t len);
/* The stored name of an epoch state: open, final, invalid. */
const char *rm_store_state_name(enum rm_epoch_state s);

#endif /* ROCEMETER_STORE_ROWS_H */
