/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * store_rows.h - the rows both stores (SQLite: store.c, ClickHouse:
 * chstore.c) keep in memory between two writes: a Transport Session's
 * sessions row and the collector resource drops counted per session and
 * kind ([SEQOBS] "Collector Processing": drops are never network loss).
 * One implementation of the bookkeeping; each store writes the rows its own
 * way and decides when a row leaves the table. Not thread-safe.
 */
#ifndef ROCEMETER_STORE_ROWS_H
#define ROCEMETER_STORE_ROWS_H

#include <stdint.h>
#include <glib.h>

#include "store/backend.h"

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

/* Collector resource drops of one session and kind since the store last wrote them. */
struct rm_drop_row {
	int64_t session_id;
	uint64_t count, first_ms, last_ms; /* first and last drop, UNIX ms */
	char *detail;                      /* the last drop's detail */
	char kind[];                       /* "database", "store", "memory-budget", ... */
};

/* The table of drop rows: "SESSION/KIND" -> struct rm_drop_row, freed with it. */
GHashTable *rm_drop_rows_new(void);
/* Count one drop of kind for session_id at now_ms with its detail. 0 or -1 (out of memory). */
int rm_drop_rows_count(GHashTable *t, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms);

#endif /* ROCEMETER_STORE_ROWS_H */
