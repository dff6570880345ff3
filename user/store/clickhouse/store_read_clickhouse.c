// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store_read_clickhouse.c - report's reads (store_read.h) from the fleet
 * store in ClickHouse (docs/fleet.md, docs/clickhouse/): the tables of every
 * collector, one server or a cluster's Distributed tables alike. Rows that
 * change are read at their latest version with argMax over a tuple of the
 * columns (a tuple keeps NULLs, which aggregate functions would skip), and
 * filtered after that aggregation, so that a filter never sees an older
 * version of a row. Results are read as TabSeparated.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse.h"
#include "store/columns.h"
#include "store/store_read.h"
#include "store/store_rows.h"

struct ch_reader {
	struct rm_store_reader base;
	struct rm_ch *ch;
};

static struct rm_store_reader *chr_open(const struct rm_store_spec *spec, char *err, size_t errlen)
{
	struct ch_reader *r = calloc(1, sizeof(*r));
	struct rm_ch_result res = { 0 };
	char sql[256];
	int rc;

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->ch = rm_ch_open(&spec->ch, err, errlen);
	if (!r->ch) {
		free(r);
		return NULL;
	}
	/*
	 * A database without the schema (or no database): say how to make one, not
	 * ClickHouse's "Table DB.runs doesn't exist". No database selected: it may not exist.
	 */
	snprintf(sql, sizeof(sql), "SELECT count() FROM system.tables WHERE database = '%s' AND name = 'runs'",
		 spec->ch.database); /* letters, digits and '_' (rm_ch_parse_url) */
	rc = rm_ch_query(r->ch, sql, NULL, 0, "", &res, err, errlen);
	if (!rc && strtoul(res.data, NULL, 10) == 0) {
		snprintf(err, errlen,
			 "%s database %s: not a rocemeter store (no table runs): run 'rocemeter collect --store-init "
			 "--store clickhouse:%s?database=%s'",
			 spec->ch.base, spec->ch.database, spec->ch.base, spec->ch.database);
		rc = -ENOENT;
	}
	rm_ch_result_free(&res);
	if (rc) {
		rm_ch_close(r->ch);
		free(r);
		return NULL;
	}
	return &r->base;
}

static void chr_close(struct rm_store_reader *base)
{
	struct ch_reader *r = (struct ch_reader *)base;

	rm_ch_close(r->ch);
	free(r);
}

/*
 * Split one TabSeparated row off *p into at most max fields, unescaped in
 * place (\t \n \\ and the others of ClickHouse's TSV escaping); a field
 * "\N" is NULL. Returns the number of fields, 0 at the end.
 */
static int tsv_row(char **p, char **field, int max)
{
	static const char from[] = "tnrbf0'\\", to[] = "\t\n\r\b\f\0'\\";
	char *s = *p, *out, end;
	int n = 0;

	if (!*s)
		return 0;
	for (;;) {
		char *start = s;
		int null = s[0] == '\\' && s[1] == 'N' && (s[2] == '\t' || s[2] == '\n' || !s[2]);

		for (out = s; *s && *s != '\t' && *s != '\n'; s++) {
			const char *k;

			if (*s == '\\' && s[1]) {
				k = strchr(from, s[1]);
				*out++ = k ? to[k - from] : s[1];
				s++;
			} else {
				*out++ = *s;
			}
		}
		end = *s;
		if (*s)
			s++;
		*out = 0;
		if (n < max)
			field[n++] = null ? NULL : start;
		if (end != '\t')
			break;
	}
	*p = s;
	return n;
}

static uint64_t u64(const char *s)
{
	return s ? strtoull(s, NULL, 10) : 0;
}

/* sql as TabSeparated; the caller frees out. */
static int select_tsv(struct ch_reader *r, const char *sql, struct rm_ch_result *out, char *err, size_t errlen)
{
	char full[16384 + 64];

	if ((size_t)snprintf(full, sizeof(full), "%s FORMAT TabSeparated", sql) >= sizeof(full)) {
		snprintf(err, errlen, "query too long");
		return -E2BIG;
	}
	return rm_ch_query(r->ch, full, NULL, 0, NULL, out, err, errlen);
}

static int chr_collectors(struct rm_store_reader *base, char ***ids, size_t *n, char *err, size_t errlen)
{
	struct ch_reader *r = (struct ch_reader *)base;
	struct rm_ch_result res = { 0 };
	char *p, *f[1];
	int rc;

	*ids = NULL;
	*n = 0;
	rc = select_tsv(r,
			"SELECT DISTINCT collector_id FROM (SELECT collector_id FROM runs UNION ALL"
			" SELECT collector_id FROM sessions) ORDER BY collector_id",
			&res, err, errlen);
	for (p = res.data; !rc && tsv_row(&p, f, 1) == 1;) {
		char **v = realloc(*ids, (*n + 1) * sizeof(**ids));

		if (!v || !((*ids = v)[*n] = strdup(f[0] ? f[0] : ""))) {
			snprintf(err, errlen, "out of memory");
			rc = -ENOMEM;
			break;
		}
		(*n)++;
	}
	rm_ch_result_free(&res);
	return rc;
}

/* Append to a query buffer; -E2BIG when it does not fit. */
static int add(char *buf, size_t len, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int add(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= len - *n)
		return -E2BIG;
	*n += (size_t)k;
	return 0;
}

static int add_quoted(char *buf, size_t len, size_t *n, const char *s)
{
	char q[1024];

	if (rm_ch_quote(s, q, sizeof(q)))
		return -E2BIG;
	return add(buf, len, n, "%s", q);
}

/*
 * The latest version of every row of a versioned table (runs, sessions,
 * epochs) as a subquery: "SELECT collector_id, id, C1, ... FROM (...)"
 * with the n columns cols (kinds[c]: 'U' integer, 'T' text), restricted to
 * one collector when collector_id is set. argMax over one tuple picks all
 * columns of the same version. The tuple holds no Nullable: NULLs travel as
 * a bit mask beside the values and are restored after the aggregation
 * (aggregate functions skip NULLs, and 18.16 sends the state of a tuple
 * with Nullable elements between shards wrongly).
 */
static int add_latest(char *sql, size_t len, size_t *n, const char *table, const char *const *cols, const char *kinds,
		      int ncols, const char *collector_id)
{
	int rc = 0, c;

	rc |= add(sql, len, n, "SELECT collector_id, id");
	for (c = 0; c < ncols; c++)
		rc |= add(sql, len, n, ", if(bitAnd(tupleElement(t, %d), %llu) = 0, tupleElement(t, %d), NULL) AS `%s`",
			  ncols + 1, 1ull << c, c + 1, cols[c]);
	rc |= add(sql, len, n, " FROM (SELECT collector_id, id, argMax(tuple(");
	for (c = 0; c < ncols; c++)
		rc |= add(sql, len, n, "ifNull(`%s`, %s), ", cols[c], kinds[c] == 'T' ? "''" : "0");
	for (c = 0; c < ncols; c++)
		rc |= add(sql, len, n, "%sbitShiftLeft(toUInt64(isNull(`%s`)), %d)", c ? " + " : "", cols[c], c);
	rc |= add(sql, len, n, "), version) AS t FROM %s", table);
	if (collector_id) {
		rc |= add(sql, len, n, " WHERE collector_id = ");
		rc |= add_quoted(sql, len, n, collector_id);
	}
	rc |= add(sql, len, n, " GROUP BY collector_id, id)");
	return rc;
}

static int chr_epochs(struct rm_store_reader *base, const struct rm_read_filter *f,
		      int (*fn)(void *arg, const struct rm_epoch_read *e), void *arg, char *err, size_t errlen)
{
	const char *const *cols = rm_epoch_read_names;
	const char *kinds = rm_epoch_read_kinds;
	struct ch_reader *r = (struct ch_reader *)base;
	struct rm_ch_result res = { 0 };
	static const char *const scols[] = { "peer", "peer_subject", "peer_name" };
	char sql[16384], *p, *fld[RM_ER__N + 4];
	size_t n = 0;
	int rc = 0, stop = 0, c;

	rc |= add(sql, sizeof(sql), &n, "SELECT collector_id");
	for (c = 0; c < RM_ER__N; c++)
		rc |= add(sql, sizeof(sql), &n, ", `%s`", cols[c]);
	rc |= add(sql, sizeof(sql), &n, ", x_peer, x_peer_subject, x_peer_name FROM (");
	rc |= add_latest(sql, sizeof(sql), &n, "epochs", cols, kinds, RM_ER__N, f->collector_id);
	/* The exporter: the latest row of the epoch's session, by (collector_id, session_id). */
	rc |= add(sql, sizeof(sql), &n,
		  ") ANY LEFT JOIN (SELECT collector_id, id AS session_id, peer AS x_peer, peer_subject AS "
		  "x_peer_subject,"
		  " peer_name AS x_peer_name FROM (");
	rc |= add_latest(sql, sizeof(sql), &n, "sessions", scols, "TTT", 3, f->collector_id);
	rc |= add(sql, sizeof(sql), &n, ")) USING (collector_id, session_id) WHERE 1");
	if (f->outcome) {
		rc |= add(sql, sizeof(sql), &n, " AND outcome = ");
		rc |= add_quoted(sql, sizeof(sql), &n, f->outcome);
	}
	if (f->has_since)
		rc |= add(sql, sizeof(sql), &n, " AND coalesce(flow_end_ms, last_seen_ms) >= %llu",
			  (unsigned long long)f->since);
	if (f->has_until)
		rc |= add(sql, sizeof(sql), &n, " AND coalesce(flow_start_ms, first_seen_ms) <= %llu",
			  (unsigned long long)f->until);
	if (f->src) {
		rc |= add(sql, sizeof(sql), &n, " AND src = ");
		rc |= add_quoted(sql, sizeof(sql), &n, f->src);
		rc |= add(sql, sizeof(sql), &n, " AND dst = ");
		rc |= add_quoted(sql, sizeof(sql), &n, f->dst);
		rc |= add(sql, sizeof(sql), &n, " AND dest_qp = %llu", (unsigned long long)f->qp);
		if (f->pkey >= 0)
			rc |= add(sql, sizeof(sql), &n, " AND pkey = %lld", (long long)f->pkey);
	}
	rc |= add(sql, sizeof(sql), &n, " ORDER BY collector_id, id");
	if (rc) {
		snprintf(err, errlen, "query too long");
		return -E2BIG;
	}
	rc = select_tsv(r, sql, &res, err, errlen);
	for (p = res.data; !rc && !stop;) {
		struct rm_epoch_read e = { 0 };
		int k = tsv_row(&p, fld, RM_ER__N + 4);

		if (!k)
			break;
		if (k != RM_ER__N + 4) {
			snprintf(err, errlen, "ClickHouse answered a row of %d columns, not %d", k, RM_ER__N + 4);
			rc = -EPROTO;
			break;
		}
		e.collector_id = fld[0] ? fld[0] : "";
		for (c = 0; c < RM_ER__N; c++) {
			const char *v = fld[c + 1];

			e.null[c] = !v;
			if (kinds[c] == 'T')
				e.t[c] = v;
			else
				e.u[c] = u64(v);
		}
		/* An epoch without a sessions row: the join's defaults, empty strings. */
		e.peer = fld[RM_ER__N + 1] && fld[RM_ER__N + 1][0] ? fld[RM_ER__N + 1] : NULL;
		e.peer_subject = fld[RM_ER__N + 2] && fld[RM_ER__N + 2][0] ? fld[RM_ER__N + 2] : NULL;
		e.peer_name = fld[RM_ER__N + 3] && fld[RM_ER__N + 3][0] ? fld[RM_ER__N + 3] : NULL;
		stop = fn(arg, &e);
	}
	rm_ch_result_free(&res);
	return rc ? rc : stop;
}

/* name/value rows of sql into v. */
static int named_rows(struct ch_reader *r, const char *sql, struct rm_named_u64 **v, size_t *n, char *err,
		      size_t errlen)
{
	struct rm_ch_result res = { 0 };
	char *p, *f[2];
	int rc = select_tsv(r, sql, &res, err, errlen);

	for (p = res.data; !rc && tsv_row(&p, f, 2) == 2;)
		if ((rc = rm_named_u64_push(v, n, f[0], u64(f[1]))))
			snprintf(err, errlen, "out of memory");
	rm_ch_result_free(&res);
	return rc;
}

/*
 * The columns of t but its ID (cols[], kinds[]: 'U' integer, 'T' text, of
 * at most max) for add_latest; their number.
 */
static int latest_columns(const struct rm_stored_table *t, const char **cols, char *kinds, int max)
{
	int n = 0;

	for (unsigned c = 0; c < t->n_cols && n < max; c++) {
		if (!t->cols[c].clickhouse || t->cols[c].write == RM_COL_ID)
			continue;
		cols[n] = t->cols[c].name;
		kinds[n++] = t->cols[c].kind == RM_COL_TEXT ? 'T' : 'U';
	}
	kinds[n] = '\0';
	return n;
}

/* A row of t from TSV fields f in t's order of ClickHouse columns (texts pointing into f). */
static void row_from_fields(char **f, const struct rm_stored_table *t, void *row)
{
	int i = 0;

	for (unsigned c = 0; c < t->n_cols; c++) {
		if (!t->cols[c].clickhouse)
			continue;
		rm_col_set(&t->cols[c], row, u64(f[i]), f[i]);
		i++;
	}
}

/*
 * The limits of one collector's last run (f: collector_id, then the row of
 * runs), its run_limits, refused connections, drops.
 */
static int collector_limits(struct ch_reader *r, char **f, struct rm_limits_read *l, char *err, size_t errlen)
{
	char sql[1024], q[600];
	struct rm_ch_result res = { 0 };
	struct rm_run_row run = { 0 };
	char *p, *c[1];
	int rc;

	row_from_fields(f + 1, &rm_stored_runs, &run);
	l->collector_id = strdup(f[0] ? f[0] : "");
	if (rm_limits_read_run(l, &run) || !l->collector_id) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (rm_ch_quote(l->collector_id, q, sizeof(q))) {
		snprintf(err, errlen, "collector ID too long");
		return -E2BIG;
	}
	snprintf(sql, sizeof(sql), "SELECT count() FROM raw_records WHERE collector_id = %s", q);
	rc = select_tsv(r, sql, &res, err, errlen);
	p = res.data;
	if (!rc && tsv_row(&p, c, 1) == 1)
		l->raw_records_stored = u64(c[0]);
	rm_ch_result_free(&res);
	if (rc)
		return rc;
	snprintf(sql, sizeof(sql),
		 "SELECT name, value FROM run_limits WHERE collector_id = %s AND run_id = %llu AND name NOT IN"
		 " ('max_sessions', 'max_epochs', 'max_raw_records', 'inactivity_timeout_ms') ORDER BY seq",
		 q, (unsigned long long)l->run_id);
	rc = named_rows(r, sql, &l->limits, &l->n_limits, err, errlen);
	if (rc)
		return rc;
	snprintf(
		sql, sizeof(sql),
		"SELECT outcome, sum(count) FROM connections WHERE collector_id = %s GROUP BY outcome ORDER BY outcome",
		q);
	rc = named_rows(r, sql, &l->refused, &l->n_refused, err, errlen);
	if (rc)
		return rc;
	snprintf(sql, sizeof(sql),
		 "SELECT kind, sum(count) FROM drops WHERE collector_id = %s GROUP BY kind ORDER BY kind", q);
	return named_rows(r, sql, &l->drops, &l->n_drops, err, errlen);
}

static int chr_limits(struct rm_store_reader *base, const char *collector_id,
		      int (*fn)(void *arg, const struct rm_limits_read *l), void *arg, char *err, size_t errlen)
{
	const char *run_cols[32];
	char run_kinds[33];
	int ncols = latest_columns(&rm_stored_runs, run_cols, run_kinds, 32);
	struct ch_reader *r = (struct ch_reader *)base;
	struct rm_ch_result res = { 0 };
	char sql[4096], *p, *f[34];
	size_t n = 0;
	int rc = 0, rows = 0;

	/* collector_id, id, then the columns: as row_from_fields reads them (the ID first in runs) */
	rc |= add(sql, sizeof(sql), &n, "SELECT * FROM (");
	rc |= add_latest(sql, sizeof(sql), &n, "runs", run_cols, run_kinds, ncols, collector_id);
	rc |= add(sql, sizeof(sql), &n, ") ORDER BY collector_id, id DESC LIMIT 1 BY collector_id");
	if (rc) {
		snprintf(err, errlen, "query too long");
		return -E2BIG;
	}
	rc = select_tsv(r, sql, &res, err, errlen);
	for (p = res.data; !rc && tsv_row(&p, f, ncols + 2) == ncols + 2; rows++) {
		struct rm_limits_read l = { 0 };

		rc = collector_limits(r, f, &l, err, errlen);
		if (!rc)
			rc = fn(arg, &l);
		rm_limits_read_free(&l);
	}
	rm_ch_result_free(&res);
	if (!rc && !rows) {
		snprintf(err, errlen, "no collector run recorded%s%s", collector_id ? " for collector " : "",
			 collector_id ? collector_id : "");
		return -ENOENT;
	}
	return rc;
}

/*
 * Every row of observation_points at its latest version: collector_id and
 * its columns in order (*fields in all), the columns written once (the
 * row's key) as they are, the others by argMax over the version.
 */
static int select_latest_points(struct ch_reader *r, struct rm_ch_result *res, int *fields, char *err, size_t errlen)
{
	const struct rm_stored_table *t = &rm_stored_points;
	char sql[1024];
	size_t n = 0;
	int rc = 0;

	*fields = 1;
	rc |= add(sql, sizeof(sql), &n, "SELECT collector_id");
	for (unsigned c = 0; c < t->n_cols; c++) {
		if (!t->cols[c].clickhouse)
			continue;
		(*fields)++;
		if (t->cols[c].write == RM_COL_ONCE)
			rc |= add(sql, sizeof(sql), &n, ", %s", t->cols[c].name);
		else
			rc |= add(sql, sizeof(sql), &n, ", argMax(%s, version)", t->cols[c].name);
	}
	rc |= add(sql, sizeof(sql), &n, " FROM %s GROUP BY collector_id", t->name);
	for (unsigned c = 0; c < t->n_cols; c++)
		if (t->cols[c].clickhouse && t->cols[c].write == RM_COL_ONCE)
			rc |= add(sql, sizeof(sql), &n, ", %s", t->cols[c].name);
	if (rc) {
		snprintf(err, errlen, "query too long");
		return -E2BIG;
	}
	return select_tsv(r, sql, res, err, errlen);
}

/*
 * observation_points at their latest version per collector, exporter
 * identity, domain and ID; a store made before that table has none: no
 * names (as an old SQLite database).
 */
static int chr_points(struct rm_store_reader *base, rm_store_point_fn *fn, void *arg, char *err, size_t errlen)
{
	struct ch_reader *r = (struct ch_reader *)base;
	struct rm_ch_result res = { 0 };
	char *p, *f[16];
	int fields, rc = select_tsv(r,
				    "SELECT count() FROM system.tables WHERE database = currentDatabase()"
				    " AND name = 'observation_points'",
				    &res, err, errlen);

	p = res.data;
	if (!rc && (tsv_row(&p, f, 1) != 1 || !u64(f[0]))) {
		rm_ch_result_free(&res);
		return 0;
	}
	rm_ch_result_free(&res);
	if (rc)
		return rc;
	rc = select_latest_points(r, &res, &fields, err, errlen);
	for (p = res.data; !rc && tsv_row(&p, f, 16) == fields;) {
		struct rm_point_row row = { 0 };

		row_from_fields(f + 1, &rm_stored_points, &row);
		fn(arg, f[0] ? f[0] : "", row.peer_name ? row.peer_name : "", row.peer_subject ? row.peer_subject : "",
		   row.domain, row.id, row.name ? row.name : "");
	}
	rm_ch_result_free(&res);
	return rc;
}

const struct rm_store_reader_ops rm_store_reader_clickhouse = {
	.open = chr_open,
	.close = chr_close,
	.collectors = chr_collectors,
	.epochs = chr_epochs,
	.limits = chr_limits,
	.points = chr_points,
};
