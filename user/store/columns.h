/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * columns.h - every table the stores keep, one table of columns each: the
 * one list from which both stores' DDL (the SQLite schema; the ClickHouse
 * schema of docs/clickhouse/single.sql, and cluster.sql from it), their
 * statements, the rows they write (SQLite binds, ClickHouse RowBinary) and
 * the readers of `report` are made, by loops over the records below
 * (columns.c). tests/unit/test_store_columns.c and test_store_tables.c
 * check the shipped DDL, a database the store creates and the rows written
 * against it.
 *
 * One row per column, in the table's order:
 *   X(NAME, column, sqlite, clickhouse, null, write, kind, field, read)
 *   NAME        the column's name in C (epochs: EC_NAME in the SQLite store,
 *               RM_ER_NAME for the readers)
 *   column      its name in both stores
 *   sqlite      its declaration in the SQLite table; NULL: not in SQLite's
 *   clickhouse  its ClickHouse type, Nullable() around it unless null is
 *               NN; NULL: not in ClickHouse's. ClickHouse's tables add
 *               collector_id before the columns and, where rows change
 *               (ch_versioned), version: last in the DDL, after the ID in
 *               an INSERT (last in a table without an ID)
 *   null        NN never NULL; MEAS NULL while the table's measurement
 *               field is 0 (epochs: no accepted report; raw records: no
 *               report); ZERO NULL while the value is 0 (retired_ms: the
 *               epoch is retained); OPT NULL when the text or octets are
 *   write       ID the row's ID (SQLite: 0 lets SQLite choose it); ONCE
 *               written with the row's first version only (SQLite: not in an
 *               update); UPD written with every version; KEEP written with
 *               every version unless NULL (the SQLite update keeps the stored
 *               value); ADD a delta row's count, added to the stored one
 *   kind        U64 an unsigned integer field of 1, 2, 4 or 8 octets (IPFIX
 *               unsigned64, UNIX ms), UInt64; U8 the same, UInt8 in
 *               ClickHouse; ADDR 16 octets of an address as inet_ntop text
 *               (the table's family field says which); STATE, OUTCOME the
 *               enum's name; TEXT a string (const char *); BYTES octets with
 *               their length (struct rm_col_bytes; SQLite binds them as its
 *               declaration says, BLOB or TEXT)
 *   field       the member of the table's row struct the value is in
 *   read        R read by `report` (store_read.h), N not
 * Integers are stored in SQLite's signed 64 bits with the same bits as
 * unsigned64 (values above 2^63 - 1 look negative in SQL).
 */
#ifndef ROCEMETER_STORE_COLUMNS_H
#define ROCEMETER_STORE_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#include "rules/collector_rules.h"

/* runs (struct rm_run_row): one row per `collect` start, its limits; written again at its stop. */
#define RM_RUN_COLUMNS(X)                                                                                  \
	X(ID, id, "INTEGER PRIMARY KEY", "UInt64", NN, ID, U64, id, N)                                     \
	X(STARTED, started_ms, "INTEGER", "UInt64", NN, ONCE, U64, started_ms, N)                          \
	X(STOPPED, stopped_ms, "INTEGER", "UInt64", ZERO, UPD, U64, stopped_ms, N)                         \
	X(LISTEN, listen, "TEXT", "String", OPT, ONCE, TEXT, listen, N)                                    \
	X(TRANSPORT, transport, "TEXT", "String", OPT, ONCE, TEXT, transport, N)                           \
	X(MAX_SESSIONS, max_sessions, "INTEGER", "UInt64", NN, ONCE, U64, max_sessions, N)                 \
	X(MAX_EPOCHS, max_epochs, "INTEGER", "UInt64", NN, ONCE, U64, max_epochs, N)                       \
	X(MAX_RAW, max_raw_records, "INTEGER", "UInt64", NN, ONCE, U64, max_raw_records, N)                \
	X(INACTIVITY, inactivity_timeout_ms, "INTEGER", "UInt64", NN, ONCE, U64, inactivity_timeout_ms, N) \
	X(PEN, pen, "INTEGER", "UInt64", NN, ONCE, U64, pen, N)

/* sessions (struct rm_sess_row, store_rows.h): one row per Transport Session. */
#define RM_SESSION_COLUMNS(X)                                                                                         \
	X(ID, id, "INTEGER PRIMARY KEY", "UInt64", NN, ID, U64, id, N)                                                \
	X(RUN, run_id, "INTEGER", "UInt64", NN, ONCE, U64, run_id, N)                                                 \
	X(PEER, peer, "TEXT", "String", OPT, ONCE, TEXT, peer, N)                                                     \
	X(SUBJECT, peer_subject, "TEXT", "String", OPT, KEEP, TEXT, subject, N)                                       \
	X(TRANSPORT, transport, "TEXT", "String", OPT, ONCE, TEXT, transport, N)                                      \
	X(STARTED, started_ms, "INTEGER", "UInt64", NN, ONCE, U64, started_ms, N)                                     \
	X(ENDED, ended_ms, "INTEGER", "UInt64", ZERO, UPD, U64, ended_ms, N)                                          \
	X(REASON, end_reason, "TEXT", "String", OPT, UPD, TEXT, reason, N)                                            \
	X(MESSAGES, messages, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, c.messages, N)                             \
	X(RECORDS, records, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, c.records, N)                                \
	X(OCTETS, octets, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, c.octets, N)                                   \
	X(REJECTED, rejected, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, c.rejected, N)                             \
	X(ACCEPTED, accepted, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_ACCEPTED], N)                \
	X(REPEATS, repeats, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_REPEAT], N)                    \
	X(STALE, stale, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_STALE], N)                         \
	X(ORPHANS, orphans, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_ORPHAN], N)                    \
	X(UNSUPPORTED, unsupported, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_UNSUPPORTED], N)       \
	X(INVALID, invalid, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_INVALID], N)                   \
	X(AFTER_INVALID, after_invalid, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_AFTER_INVALID], N) \
	X(KEY_CONFLICTS, key_conflicts, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_KEY_CONFLICT], N)  \
	X(RESOURCE_DROPS, resource_drops, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_RESOURCE_DROP],  \
	  N)                                                                                                          \
	X(UNBOUND, unbound, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, verdicts[RM_V_UNBOUND], N)                   \
	X(SEQ_GAPS, seq_gaps, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, c.seq_gaps, N)                             \
	X(SEQ_MISSING, seq_missing, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, c.seq_missing, N)                    \
	X(TIME_BACKWARDS, export_time_backwards, "INTEGER DEFAULT 0", "UInt64", NN, UPD, U64, c.time_backwards, N)    \
	X(PEER_NAME, peer_name, "TEXT", "String", OPT, UPD, TEXT, peer_name, N)

/*
 * epochs (struct rm_epoch, rules/collector_rules.h): one row per epoch,
 * written again at every change of its state. SQLite: epoch_rows and the
 * view epochs over it and the packed tables below (sqlite/store_impl.h).
 */
#define RM_EPOCH_COLUMNS(X)  RM_EPOCH_COLUMNS_WITH(RM_COL_CALL_, X)
#define RM_COL_CALL_(X, ...) X(__VA_ARGS__)
#define RM_EPOCH_COLUMNS_WITH(Y, A)                                                                      \
	Y(A, ID, id, "INTEGER PRIMARY KEY", "UInt64", NN, ID, U64, store_id, N)                          \
	Y(A, SESSION, session_id, "INTEGER", "UInt64", NN, ONCE, U64, session_id, R)                     \
	Y(A, DOMAIN, domain, "INTEGER", "UInt64", NN, ONCE, U64, domain, R)                              \
	Y(A, OBS, observation_point_id, "INTEGER", "UInt64", NN, ONCE, U64, key.observation_point_id, R) \
	Y(A, FAMILY, family, "INTEGER", "UInt8", NN, ONCE, U8, key.family, R)                            \
	Y(A, SRC, src, "TEXT", "String", NN, ONCE, ADDR, key.src, R)                                     \
	Y(A, DST, dst, "TEXT", "String", NN, ONCE, ADDR, key.dst, R)                                     \
	Y(A, QP, dest_qp, "INTEGER", "UInt64", NN, ONCE, U64, key.dest_qp, R)                            \
	Y(A, PKEY, pkey, "INTEGER", "UInt64", NN, ONCE, U64, key.pkey, R)                                \
	Y(A, HAS_VLAN, has_vlan_ns, "INTEGER", "UInt8", NN, ONCE, U8, key.has_vlan_ns, R)                \
	Y(A, VLAN0, vlan_outer, "INTEGER", "UInt64", NN, ONCE, U64, key.vlan[0], R)                      \
	Y(A, VLAN1, vlan_inner, "INTEGER", "UInt64", NN, ONCE, U64, key.vlan[1], R)                      \
	Y(A, EPOCH, epoch_id, "INTEGER", "UInt64", NN, ONCE, U64, key.epoch_id, R)                       \
	Y(A, WINDOW, window, "INTEGER", "UInt64", MEAS, UPD, U64, key.window, R)                         \
	Y(A, FLAGS, flags, "INTEGER", "UInt64", MEAS, UPD, U64, key.flags, N)                            \
	Y(A, FLAGS_SEEN, flags_seen, "INTEGER", "UInt64", NN, UPD, U64, flags_seen, R)                   \
	Y(A, START, flow_start_ms, "INTEGER", "UInt64", MEAS, UPD, U64, key.flow_start_ms, R)            \
	Y(A, END, flow_end_ms, "INTEGER", "UInt64", MEAS, UPD, U64, key.flow_end_ms, R)                  \
	Y(A, FIRST, first_report_id, "INTEGER", "UInt64", MEAS, UPD, U64, first_report_id, R)            \
	Y(A, LAST, last_report_id, "INTEGER", "UInt64", MEAS, UPD, U64, key.report_id, R)                \
	Y(A, ACCEPTED, reports_accepted, "INTEGER", "UInt64", NN, UPD, U64, n_accepted, R)               \
	Y(A, MISS_INIT, missing_initial, "INTEGER", "UInt64", NN, UPD, U64, missing_initial, R)          \
	Y(A, MISSING, missing_reports, "INTEGER", "UInt64", NN, UPD, U64, missing_reports, R)            \
	Y(A, GAPS, gaps, "INTEGER", "UInt64", NN, UPD, U64, gaps, R)                                     \
	Y(A, REPEATS, repeats, "INTEGER", "UInt64", NN, UPD, U64, repeats, R)                            \
	Y(A, STALE, stale, "INTEGER", "UInt64", NN, UPD, U64, stale, R)                                  \
	Y(A, UNSUP, unsupported, "INTEGER", "UInt64", NN, UPD, U64, unsupported, R)                      \
	Y(A, IGNORED, ignored, "INTEGER", "UInt64", NN, UPD, U64, ignored, R)                            \
	Y(A, REQ, requests, "INTEGER", "UInt64", MEAS, UPD, U64, key.requests, R)                        \
	Y(A, SKIP, skipped, "INTEGER", "UInt64", MEAS, UPD, U64, key.skipped, R)                         \
	Y(A, FILL, filled, "INTEGER", "UInt64", MEAS, UPD, U64, key.filled, R)                           \
	Y(A, EXP, expired, "INTEGER", "UInt64", MEAS, UPD, U64, key.expired, R)                          \
	Y(A, ABAN, abandoned, "INTEGER", "UInt64", MEAS, UPD, U64, key.abandoned, R)                     \
	Y(A, PEND, pending, "INTEGER", "UInt64", MEAS, UPD, U64, key.pending, R)                         \
	Y(A, REP, repeated, "INTEGER", "UInt64", MEAS, UPD, U64, key.repeated, R)                        \
	Y(A, LATE, unclassified_late, "INTEGER", "UInt64", MEAS, UPD, U64, key.unclassified_late, R)     \
	Y(A, STATE, state, "TEXT", "String", NN, UPD, STATE, state, R)                                   \
	Y(A, OUTCOME, outcome, "TEXT", "String", NN, UPD, OUTCOME, outcome, R)                           \
	Y(A, REASON, reason, "TEXT", "String", OPT, UPD, TEXT, reason, R)                                \
	Y(A, FIRST_SEEN, first_seen_ms, "INTEGER", "UInt64", NN, ONCE, U64, first_seen_ms, R)            \
	Y(A, LAST_SEEN, last_seen_ms, "INTEGER", "UInt64", NN, UPD, U64, last_seen_ms, R)                \
	Y(A, RETIRED, retired_ms, "INTEGER", "UInt64", ZERO, UPD, U64, retired_ms, R)

/* raw_records (struct rm_raw_row): records kept raw, written once; MEAS: NULL without a report. */
#define RM_RAW_COLUMNS(X)                                                               \
	X(ID, id, "INTEGER PRIMARY KEY", "UInt64", NN, ID, U64, id, N)                  \
	X(SESSION, session_id, "INTEGER", "UInt64", NN, ONCE, U64, session_id, N)       \
	X(RECEIVED, received_ms, "INTEGER", "UInt64", NN, ONCE, U64, received_ms, N)    \
	X(DOMAIN, domain, "INTEGER", "UInt64", NN, ONCE, U64, domain, N)                \
	X(TEMPLATE_ID, template_id, "INTEGER", "UInt64", NN, ONCE, U64, template_id, N) \
	X(EPOCH, epoch_id, "INTEGER", "UInt64", MEAS, ONCE, U64, epoch_id, N)           \
	X(REPORT, report_id, "INTEGER", "UInt64", MEAS, ONCE, U64, report_id, N)        \
	X(FLAGS, flags, "INTEGER", "UInt64", MEAS, ONCE, U64, flags, N)                 \
	X(VERDICT, verdict, "TEXT", "String", NN, ONCE, TEXT, verdict, N)               \
	X(REASON, reason, "TEXT", "String", NN, ONCE, TEXT, reason, N)                  \
	X(RECORD, record, "BLOB", "String", NN, ONCE, BYTES, record, N)                 \
	X(TEMPLATE, template, "BLOB", "String", OPT, ONCE, BYTES, template, N)

/*
 * drops (struct rm_drop_row, store_rows.h): collector resource drops per
 * session and kind, as delta rows (the count since the last write).
 */
#define RM_DROP_COLUMNS(X)                                                        \
	X(SESSION, session_id, "INTEGER", "UInt64", NN, ONCE, U64, session_id, N) \
	X(KIND, kind, "TEXT", "String", NN, ONCE, TEXT, kind, N)                  \
	X(COUNT, count, "INTEGER", "UInt64", NN, ADD, U64, count, N)              \
	X(FIRST, first_ms, "INTEGER", "UInt64", NN, ONCE, U64, first_ms, N)       \
	X(LAST, last_ms, "INTEGER", "UInt64", NN, UPD, U64, last_ms, N)           \
	X(DETAIL, last_detail, "TEXT", "String", OPT, UPD, TEXT, detail, N)

/* connections (struct rm_conn_row): refused connections per minute, source and outcome, as delta rows. */
#define RM_CONN_COLUMNS(X)                                                     \
	X(MINUTE, minute_ms, "INTEGER", "UInt64", NN, ONCE, U64, minute_ms, N) \
	X(SOURCE, source, "TEXT", "String", NN, ONCE, TEXT, source, N)         \
	X(OUTCOME, outcome, "TEXT", "String", NN, ONCE, TEXT, outcome, N)      \
	X(COUNT, count, "INTEGER", "UInt64", NN, ADD, U64, count, N)           \
	X(FIRST, first_ms, "INTEGER", "UInt64", NN, ONCE, U64, first_ms, N)    \
	X(LAST, last_ms, "INTEGER", "UInt64", NN, UPD, U64, last_ms, N)        \
	X(DETAIL, last_detail, "TEXT", "String", OPT, UPD, TEXT, detail, N)

/* run_limits (struct rm_limit_row): every limit of a run by its configuration key; seq their order. */
#define RM_LIMIT_COLUMNS(X)                                           \
	X(RUN, run_id, "INTEGER", "UInt64", NN, ONCE, U64, run_id, N) \
	X(NAME, name, "TEXT", "String", NN, ONCE, TEXT, name, N)      \
	X(VALUE, value, "INTEGER", "UInt64", NN, UPD, U64, value, N)  \
	X(SEQ, seq, NULL, "UInt64", NN, ONCE, U64, seq, N)

/*
 * observation_points (struct rm_point_row): an exporter's names of its
 * observation points, one row per exporter identity, domain and ID, the
 * latest name. The exporter's identity comes first in ClickHouse, last in
 * SQLite (whose table came first): listed twice, once for each store.
 */
#define RM_POINT_COLUMNS(X)                                                               \
	X(CH_PEER_NAME, peer_name, NULL, "String", NN, ONCE, TEXT, peer_name, N)          \
	X(CH_PEER_SUBJECT, peer_subject, NULL, "String", NN, ONCE, TEXT, peer_subject, N) \
	X(DOMAIN, domain, "INTEGER", "UInt64", NN, ONCE, U64, domain, N)                  \
	X(ID, observation_point_id, "INTEGER", "UInt64", NN, ONCE, U64, id, N)            \
	X(NAME, name, "TEXT NOT NULL", "String", NN, UPD, TEXT, name, N)                  \
	X(UPDATED, updated_ms, "INTEGER", "UInt64", NN, UPD, U64, updated_ms, N)          \
	X(PEER_NAME, peer_name, "TEXT NOT NULL", NULL, NN, ONCE, TEXT, peer_name, N)      \
	X(PEER_SUBJECT, peer_subject, "TEXT NOT NULL", NULL, NN, ONCE, TEXT, peer_subject, N)

/*
 * epoch_archive (struct rm_archive_row), SQLite only: epochs packed, one
 * row per chunk (sqlite/store_impl.h); data and base are JSON.
 */
#define RM_ARCHIVE_COLUMNS(X)                                                        \
	X(ID, id, "INTEGER PRIMARY KEY", NULL, NN, ID, U64, id, N)                   \
	X(FIRST, first_id, "INTEGER", NULL, NN, ONCE, U64, first, N)                 \
	X(LAST, last_id, "INTEGER", NULL, NN, ONCE, U64, last, N)                    \
	X(DATA, data, "TEXT", NULL, NN, ONCE, BYTES, data, N)                        \
	X(RETAINED, retained, "INTEGER DEFAULT 0", NULL, NN, ONCE, U64, retained, N) \
	X(BASE, base, "TEXT", NULL, NN, ONCE, BYTES, base, N)

/* epoch_retired (struct rm_retired_row), SQLite only: packed epochs first_id..last_id retired at one time. */
#define RM_RETIRED_COLUMNS(X)                                                  \
	X(FIRST, first_id, "INTEGER PRIMARY KEY", NULL, NN, ID, U64, first, N) \
	X(LAST, last_id, "INTEGER", NULL, NN, ONCE, U64, last, N)              \
	X(RETIRED, retired_ms, "INTEGER", NULL, NN, ONCE, U64, retired_ms, N)

/*
 * The columns `report` reads (read R), in their order, as X(NAME, column,
 * U | T): U an integer column (U64, U8), T a text (ADDR, STATE, OUTCOME,
 * TEXT): store_read.h's enum rm_epoch_read_col.
 */
#define RM_EPOCH_READ_COLUMNS(X) RM_EPOCH_COLUMNS_WITH(RM_READ_COL_, X)
#define RM_READ_COL_(X, NAME, column, sqlite, ch, null, write, kind, field, read) \
	RM_READ_COL_##read(X, NAME, column, RM_READ_KIND_##kind)
#define RM_READ_COL_R(X, NAME, column, kind) RM_READ_CALL_(X, NAME, column, kind)
#define RM_READ_COL_N(X, NAME, column, kind)
#define RM_READ_CALL_(X, NAME, column, kind) X(NAME, column, kind)
#define RM_READ_KIND_U64                     U
#define RM_READ_KIND_U8                      U
#define RM_READ_KIND_ADDR                    T
#define RM_READ_KIND_STATE                   T
#define RM_READ_KIND_OUTCOME                 T
#define RM_READ_KIND_TEXT                    T

/* ---------------- the records the code walks (columns.c) ---------------- */

enum rm_col_null { RM_COL_NN, RM_COL_MEAS, RM_COL_ZERO, RM_COL_OPT };
enum rm_col_write { RM_COL_ID, RM_COL_ONCE, RM_COL_UPD, RM_COL_KEEP, RM_COL_ADD };
enum rm_col_kind { RM_COL_U64, RM_COL_U8, RM_COL_ADDR, RM_COL_STATE, RM_COL_OUTCOME, RM_COL_TEXT, RM_COL_BYTES };

/* The value of a BYTES column. */
struct rm_col_bytes {
	const void *p; /* NULL: none (an OPT column is NULL) */
	size_t len;
};

/* One row of a table above. */
struct rm_column {
	const char *name;
	const char *sqlite;     /* NULL: not in SQLite's table */
	const char *clickhouse; /* NULL: not in ClickHouse's */
	uint8_t null;           /* enum rm_col_null */
	uint8_t write;          /* enum rm_col_write */
	uint8_t kind;           /* enum rm_col_kind */
	uint8_t read;           /* read by report */
	uint16_t offset, size;  /* the field in the table's row struct */
};

/* What an INSERT into SQLite does with a row whose key is stored already. */
enum rm_sq_conflict {
	RM_SQ_FAIL,    /* nothing (the insert fails): rows are new, or updated by the ID */
	RM_SQ_REPLACE, /* INSERT OR REPLACE: the new row replaces the stored one */
	RM_SQ_UPSERT,  /* ON CONFLICT(key) DO UPDATE: ONCE columns kept, ADD added, UPD and KEEP set */
};

struct rm_stored_table {
	const char *name;        /* ClickHouse's table, and SQLite's unless sqlite_name says otherwise */
	const char *sqlite_name; /* SQLite's table; NULL: not in SQLite */
	const struct rm_column *cols;
	unsigned n_cols;
	const char *sqlite_key;   /* SQLite: PRIMARY KEY(...) besides an ID column, NULL: none */
	uint8_t sqlite_conflict;  /* enum rm_sq_conflict */
	const char *ch_order;     /* ClickHouse: ORDER BY (...); NULL: not in ClickHouse */
	const char *ch_partition; /* the column by whose day ClickHouse partitions, NULL: none */
	uint8_t ch_versioned;     /* rows change: a version column, ReplacingMergeTree(version) */
	uint8_t meas_size;        /* MEAS columns: the field that is 0 when they are NULL ... */
	uint16_t meas_offset;
	uint16_t family_offset; /* ADDR columns: the octet of the row's address family (4 or 6) */
	uint16_t row_size;      /* sizeof the row struct */
};

/* The tables, and every one in the order of the DDL (SQLite's schema, docs/clickhouse/single.sql). */
extern const struct rm_stored_table rm_stored_runs, rm_stored_sessions, rm_stored_epochs, rm_stored_raw,
	rm_stored_drops, rm_stored_conns, rm_stored_limits, rm_stored_points, rm_stored_archive, rm_stored_retired;
extern const struct rm_stored_table *const rm_stored_tables[];
extern const unsigned rm_n_stored_tables;

/* An integer column's value in row (U64, U8; a field of 1, 2, 4 or 8 octets, unsigned). */
static inline uint64_t rm_col_u64(const struct rm_column *c, const void *row)
{
	const uint8_t *p = (const uint8_t *)row + c->offset;

	switch (c->size) {
	case 1:
		return *p;
	case 2:
		return *(const uint16_t *)(const void *)p;
	case 4:
		return *(const uint32_t *)(const void *)p;
	default:
		return *(const uint64_t *)(const void *)p;
	}
}

/* A TEXT column's string in row (NULL when the field is). */
static inline const char *rm_col_text(const struct rm_column *c, const void *row)
{
	return *(const char *const *)(const void *)((const uint8_t *)row + c->offset);
}

/* A BYTES column's octets in row. */
static inline struct rm_col_bytes rm_col_bytes(const struct rm_column *c, const void *row)
{
	return *(const struct rm_col_bytes *)(const void *)((const uint8_t *)row + c->offset);
}

/* An enum column's value in row (STATE, OUTCOME). */
static inline int rm_col_enum(const struct rm_column *c, const void *row)
{
	return *(const int *)(const void *)((const uint8_t *)row + c->offset);
}

/* 1 if column c of row, a row of t, is NULL in both stores (its null rule), else 0. */
static inline int rm_col_is_null(const struct rm_stored_table *t, const struct rm_column *c, const void *row)
{
	switch (c->null) {
	case RM_COL_MEAS: {
		const struct rm_column meas = { .offset = t->meas_offset, .size = t->meas_size };

		return rm_col_u64(&meas, row) == 0;
	}
	case RM_COL_ZERO:
		return rm_col_u64(c, row) == 0;
	case RM_COL_OPT:
		return c->kind == RM_COL_BYTES ? rm_col_bytes(c, row).p == NULL : rm_col_text(c, row) == NULL;
	default:
		return 0;
	}
}

#define RM_COL_READ_R 1
#define RM_COL_READ_N 0
/* One row of a table above as a record of its columns; ROW names the table's row struct. */
#define RM_COLUMN(NAME, column, sqlite_decl, clickhouse_type, null_rule, write_rule, kind_of, field, read_by) \
	{ .name = #column,                                                                                    \
	  .sqlite = sqlite_decl,                                                                              \
	  .clickhouse = clickhouse_type,                                                                      \
	  .null = RM_COL_##null_rule,                                                                         \
	  .write = RM_COL_##write_rule,                                                                       \
	  .kind = RM_COL_##kind_of,                                                                           \
	  .read = RM_COL_READ_##read_by,                                                                      \
	  .offset = (uint16_t)offsetof(ROW, field),                                                           \
	  .size = (uint16_t)sizeof(((ROW *)0)->field) },

/*
 * The epochs' records (rm_stored_epochs.cols), visible to every file that
 * includes this one: a loop over them on the path of every epoch (the
 * SQLite store's packing) is unrolled by the compiler (#pragma GCC unroll),
 * each column a load at a constant offset, as fast as code written column
 * by column.
 */
#define ROW struct rm_epoch
static const struct rm_column rm_epoch_columns[] = { RM_EPOCH_COLUMNS(RM_COLUMN) };
#undef ROW

/* Set column c of row from a value read back: an integer u (U64, U8) or a text s (TEXT: the pointer, not a copy). */
void rm_col_set(const struct rm_column *c, void *row, uint64_t u, const char *s);

/* The NULL columns of row, a row of t, a bit each by index (t has at most 64 columns). */
uint64_t rm_stored_nulls(const struct rm_stored_table *t, const void *row);
/* The column of t named name (in the store whose declaration is set: sqlite 1 SQLite, 0 ClickHouse), or NULL. */
const struct rm_column *rm_stored_column(const struct rm_stored_table *t, const char *name, int sqlite);
/* The columns of t whose null rule is null, a bit each by index (t has at most 64 columns). */
uint64_t rm_stored_null_cols(const struct rm_stored_table *t, enum rm_col_null null);
/* The index of t's ID column, or -1 (none). */
int rm_stored_id_col(const struct rm_stored_table *t);

#endif /* ROCEMETER_STORE_COLUMNS_H */
