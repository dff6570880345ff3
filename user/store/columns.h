/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * columns.h - the columns of a stored epoch and of a stored session, one
 * table each for both stores: the SQLite schema, statements, binds and packed
 * form (sqlite/), the ClickHouse INSERTs and RowBinary rows (clickhouse/rows.c),
 * the readers of `report` (store_read.h); tests/unit/test_store_columns.c
 * checks the DDL of docs/clickhouse/single.sql and cluster.sql against them.
 */
#ifndef ROCEMETER_STORE_COLUMNS_H
#define ROCEMETER_STORE_COLUMNS_H

/*
 * X(NAME, column, sqlite, clickhouse, null, write, kind, field, read), one
 * row per column of the epochs table (SQLite: epoch_rows and the epochs
 * view; ClickHouse: epochs, which adds collector_id before and version
 * after these), in their order:
 *   NAME        the column's index: EC_NAME in the SQLite store, RM_ER_NAME
 *               for the readers
 *   column      its name in both stores
 *   sqlite      its declaration in epoch_rows (sessions)
 *   clickhouse  its ClickHouse type; Nullable() around it unless null is NN
 *   null        NN never NULL; MEAS NULL without an accepted report (no
 *               measurement); ZERO NULL while the value is 0 (retired_ms:
 *               the epoch is retained); OPT NULL when the text is (no reason)
 *   write       ID the row's ID; ONCE written with the row's first version
 *               only (SQLite: not in the update); UPD written with every
 *               version; KEEP written with every version unless NULL (the
 *               SQLite update keeps the stored value; only before UPD ones)
 *   kind        U64 an unsigned integer (IPFIX unsigned64, UNIX ms); U8 one
 *               octet in ClickHouse (UInt8), an integer in SQLite; ADDR an
 *               address as inet_ntop text (field: its 16 octets, the key's
 *               family says which); STATE, OUTCOME the enum's name; TEXT a
 *               string
 *   field       where the value comes from in struct rm_epoch
 *               (rules/collector_rules.h); for sessions in struct
 *               rm_sess_row (store_rows.h)
 *   read        R read by `report` (store_read.h), N not
 * RM_EPOCH_COLUMNS(X) calls X with these; RM_EPOCH_COLUMNS_WITH(Y, A) calls
 * Y(A, NAME, ...), for a filter Y that passes some rows on to A.
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

/*
 * The columns of the sessions table, as the epochs' (X has the same
 * arguments; kind U64 or TEXT, read N): SQLite's sessions; ClickHouse's
 * sessions adds collector_id before and version after the ID.
 */
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
 * The column names joined by ", ", as one string literal: "id, session_id,
 * ..., retired_ms" (RM_EPOCH_COLUMN_NAMES), and the same without the ID,
 * each name after ", " (RM_EPOCH_COLUMN_NAMES_AFTER_ID); the same of the
 * sessions (RM_SESSION_COLUMN_NAMES...).
 */
#define RM_COL_NAME_(NAME, column, sqlite, ch, null, write, kind, field, read)     RM_COL_NAME_##write(column)
#define RM_COL_NAME_ID(column)                                                     #column
#define RM_COL_NAME_ONCE(column)                                                   ", " #column
#define RM_COL_NAME_UPD(column)                                                    ", " #column
#define RM_COL_NAME_KEEP(column)                                                   ", " #column
#define RM_COL_AFTER_ID_(NAME, column, sqlite, ch, null, write, kind, field, read) RM_COL_AFTER_ID_##write(column)
#define RM_COL_AFTER_ID_ID(column)
#define RM_COL_AFTER_ID_ONCE(column)     ", " #column
#define RM_COL_AFTER_ID_UPD(column)      ", " #column
#define RM_COL_AFTER_ID_KEEP(column)     ", " #column
#define RM_EPOCH_COLUMN_NAMES            RM_EPOCH_COLUMNS(RM_COL_NAME_)
#define RM_EPOCH_COLUMN_NAMES_AFTER_ID   RM_EPOCH_COLUMNS(RM_COL_AFTER_ID_)
#define RM_SESSION_COLUMN_NAMES          RM_SESSION_COLUMNS(RM_COL_NAME_)
#define RM_SESSION_COLUMN_NAMES_AFTER_ID RM_SESSION_COLUMNS(RM_COL_AFTER_ID_)

/*
 * The columns `report` reads (read R), as X(NAME, column, U | T): U an
 * integer column (U64, U8), T a text (ADDR, STATE, OUTCOME, TEXT).
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

#endif /* ROCEMETER_STORE_COLUMNS_H */
