// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * columns.c - the stored tables of columns.h as records the stores walk:
 * each table's columns with their field in its row struct (store_rows.h),
 * the tables' keys and engines, and the values of a column in a row.
 * Calls the C library only (tests/lib/store_ddl links it alone).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "columns.h"
#include "store_rows.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

#define ROW struct rm_run_row
static const struct rm_column run_cols[] = { RM_RUN_COLUMNS(RM_COLUMN) };
#undef ROW
#define ROW struct rm_sess_row
static const struct rm_column session_cols[] = { RM_SESSION_COLUMNS(RM_COLUMN) };
#undef ROW
#define ROW struct rm_raw_row
static const struct rm_column raw_cols[] = { RM_RAW_COLUMNS(RM_COLUMN) };
#undef ROW
#define ROW struct rm_drop_row
static const struct rm_column drop_cols[] = { RM_DROP_COLUMNS(RM_COLUMN) };
#undef ROW
#define ROW struct rm_conn_row
static const struct rm_column conn_cols[] = { RM_CONN_COLUMNS(RM_COLUMN) };
#undef ROW
#define ROW struct rm_limit_row
static const struct rm_column limit_cols[] = { RM_LIMIT_COLUMNS(RM_COLUMN) };
#undef ROW
#define ROW struct rm_point_row
static const struct rm_column point_cols[] = { RM_POINT_COLUMNS(RM_COLUMN) };
#undef ROW
#define ROW struct rm_archive_row
static const struct rm_column archive_cols[] = { RM_ARCHIVE_COLUMNS(RM_COLUMN) };
#undef ROW
#define ROW struct rm_retired_row
static const struct rm_column retired_cols[] = { RM_RETIRED_COLUMNS(RM_COLUMN) };
#undef ROW

const struct rm_stored_table rm_stored_runs = {
	.row_size = sizeof(struct rm_run_row),
	.name = "runs",
	.sqlite_name = "runs",
	.cols = run_cols,
	.n_cols = N_OF(run_cols),
	.ch_order = "collector_id, id",
	.ch_partition = "started_ms",
	.ch_versioned = 1,
};

const struct rm_stored_table rm_stored_sessions = {
	.row_size = sizeof(struct rm_sess_row),
	.name = "sessions",
	.sqlite_name = "sessions",
	.cols = session_cols,
	.n_cols = N_OF(session_cols),
	.sqlite_conflict = RM_SQ_UPSERT,
	.ch_order = "collector_id, id",
	.ch_partition = "started_ms",
	.ch_versioned = 1,
};

const struct rm_stored_table rm_stored_epochs = {
	.row_size = sizeof(struct rm_epoch),
	.name = "epochs",
	.sqlite_name = "epoch_rows",
	.cols = rm_epoch_columns,
	.n_cols = N_OF(rm_epoch_columns),
	.ch_order = "collector_id, id",
	.ch_partition = "first_seen_ms",
	.ch_versioned = 1,
	.meas_size = sizeof(((struct rm_epoch *)0)->n_accepted),
	.meas_offset = offsetof(struct rm_epoch, n_accepted),
	.family_offset = offsetof(struct rm_epoch, key.family),
};

const struct rm_stored_table rm_stored_raw = {
	.row_size = sizeof(struct rm_raw_row),
	.name = "raw_records",
	.sqlite_name = "raw_records",
	.cols = raw_cols,
	.n_cols = N_OF(raw_cols),
	.ch_order = "collector_id, id",
	.ch_partition = "received_ms",
	.meas_size = sizeof(((struct rm_raw_row *)0)->has_report),
	.meas_offset = offsetof(struct rm_raw_row, has_report),
};

const struct rm_stored_table rm_stored_drops = {
	.row_size = sizeof(struct rm_drop_row),
	.name = "drops",
	.sqlite_name = "drops",
	.cols = drop_cols,
	.n_cols = N_OF(drop_cols),
	.sqlite_key = "session_id, kind",
	.sqlite_conflict = RM_SQ_UPSERT,
	.ch_order = "collector_id, session_id, kind",
	.ch_partition = "first_ms",
};

const struct rm_stored_table rm_stored_conns = {
	.row_size = sizeof(struct rm_conn_row),
	.name = "connections",
	.sqlite_name = "connections",
	.cols = conn_cols,
	.n_cols = N_OF(conn_cols),
	.sqlite_key = "minute_ms, source, outcome",
	.sqlite_conflict = RM_SQ_UPSERT,
	.ch_order = "collector_id, minute_ms, source, outcome",
	.ch_partition = "minute_ms",
};

const struct rm_stored_table rm_stored_limits = {
	.row_size = sizeof(struct rm_limit_row),
	.name = "run_limits",
	.sqlite_name = "run_limits",
	.cols = limit_cols,
	.n_cols = N_OF(limit_cols),
	.sqlite_key = "run_id, name",
	.sqlite_conflict = RM_SQ_REPLACE,
	.ch_order = "collector_id, run_id, seq",
};

const struct rm_stored_table rm_stored_points = {
	.row_size = sizeof(struct rm_point_row),
	.name = "observation_points",
	.sqlite_name = "observation_points",
	.cols = point_cols,
	.n_cols = N_OF(point_cols),
	.sqlite_key = "peer_name, peer_subject, domain, observation_point_id",
	.sqlite_conflict = RM_SQ_REPLACE,
	.ch_order = "collector_id, peer_name, peer_subject, domain, observation_point_id",
	.ch_versioned = 1,
};

const struct rm_stored_table rm_stored_archive = {
	.row_size = sizeof(struct rm_archive_row),
	.name = "epoch_archive",
	.sqlite_name = "epoch_archive",
	.cols = archive_cols,
	.n_cols = N_OF(archive_cols),
};

const struct rm_stored_table rm_stored_retired = {
	.row_size = sizeof(struct rm_retired_row),
	.name = "epoch_retired",
	.sqlite_name = "epoch_retired",
	.cols = retired_cols,
	.n_cols = N_OF(retired_cols),
};

const struct rm_stored_table *const rm_stored_tables[] = {
	&rm_stored_runs, &rm_stored_sessions, &rm_stored_epochs, &rm_stored_archive, &rm_stored_retired,
	&rm_stored_raw,  &rm_stored_drops,    &rm_stored_conns,  &rm_stored_limits,  &rm_stored_points,
};
const unsigned rm_n_stored_tables = N_OF(rm_stored_tables);

_Static_assert(N_OF(rm_epoch_columns) <= 64 && N_OF(session_cols) <= 64, "a bit per column (rm_stored_null_cols)");

void rm_col_set(const struct rm_column *c, void *row, uint64_t u, const char *s)
{
	uint8_t *p = (uint8_t *)row + c->offset;

	if (c->kind == RM_COL_TEXT) {
		memcpy(p, &s, sizeof(s));
		return;
	}
	switch (c->size) {
	case 1:
		*p = (uint8_t)u;
		break;
	case 2:
		*(uint16_t *)(void *)p = (uint16_t)u;
		break;
	case 4:
		*(uint32_t *)(void *)p = (uint32_t)u;
		break;
	default:
		*(uint64_t *)(void *)p = u;
	}
}

const struct rm_column *rm_stored_column(const struct rm_stored_table *t, const char *name, int sqlite)
{
	for (unsigned i = 0; i < t->n_cols; i++)
		if ((sqlite ? t->cols[i].sqlite : t->cols[i].clickhouse) && !strcmp(t->cols[i].name, name))
			return &t->cols[i];
	return NULL;
}

uint64_t rm_stored_nulls(const struct rm_stored_table *t, const void *row)
{
	uint64_t m = 0;

	for (unsigned i = 0; i < t->n_cols && i < 64; i++)
		if (t->cols[i].null != RM_COL_NN && rm_col_is_null(t, &t->cols[i], row))
			m |= 1ULL << i;
	return m;
}

uint64_t rm_stored_null_cols(const struct rm_stored_table *t, enum rm_col_null null)
{
	uint64_t m = 0;

	for (unsigned i = 0; i < t->n_cols && i < 64; i++)
		if (t->cols[i].null == null)
			m |= 1ULL << i;
	return m;
}

int rm_stored_id_col(const struct rm_stored_table *t)
{
	for (unsigned i = 0; i < t->n_cols; i++)
		if (t->cols[i].write == RM_COL_ID)
			return (int)i;
	return -1;
}
