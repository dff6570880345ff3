// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rows.c - the ClickHouse store's rows in RowBinary: the INSERT of each table
 * and a row of any table, by loops over its columns (columns.h); the
 * encoders.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "chstore_impl.h"

/* The tables by enum table (the order of a spool file's batch). */
const struct rm_stored_table *const rm_chs_tables[T__N] = {
	[T_RUNS] = &rm_stored_runs,     [T_SESSIONS] = &rm_stored_sessions, [T_EPOCHS] = &rm_stored_epochs,
	[T_RAW] = &rm_stored_raw,       [T_DROPS] = &rm_stored_drops,       [T_CONNS] = &rm_stored_conns,
	[T_LIMITS] = &rm_stored_limits, [T_POINTS] = &rm_stored_points,
};

/* The expression of column name in a copy: set's, else the column itself. */
static const char *copy_expr(const char *name, const struct rm_chstore_set *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(set[i].column, name))
			return set[i].expr;
	return name;
}

/*
 * The columns of t's rows as written (columns.h): collector_id, t's
 * ClickHouse columns in order, and for a versioned table version after
 * the ID (last in a table without one); each as set gives it (n of them).
 */
static void add_columns(GString *g, const struct rm_stored_table *t, const struct rm_chstore_set *set, size_t n)
{
	int id = rm_stored_id_col(t);

	g_string_append(g, copy_expr("collector_id", set, n));
	for (unsigned i = 0; i < t->n_cols; i++) {
		if (!t->cols[i].clickhouse)
			continue;
		g_string_append_printf(g, ", %s", copy_expr(t->cols[i].name, set, n));
		if (t->ch_versioned && (int)i == id)
			g_string_append_printf(g, ", %s", copy_expr("version", set, n));
	}
	if (t->ch_versioned && id < 0)
		g_string_append_printf(g, ", %s", copy_expr("version", set, n));
}

char *rm_chs_insert_sql(const struct rm_stored_table *t)
{
	GString *g = g_string_new(NULL);

	g_string_append_printf(g, "INSERT INTO %s (", t->name);
	add_columns(g, t, NULL, 0);
	g_string_append(g, ") FORMAT RowBinary");
	return g_string_free(g, FALSE);
}

char *rm_chstore_copy_sql(const struct rm_stored_table *t, const struct rm_chstore_set *set, size_t n,
			  const char *where)
{
	GString *g = g_string_new(NULL);

	g_string_append_printf(g, "INSERT INTO %s (", t->name);
	add_columns(g, t, NULL, 0);
	g_string_append(g, ") SELECT ");
	add_columns(g, t, set, n);
	g_string_append_printf(g, " FROM %s FINAL WHERE %s", t->name, where);
	return g_string_free(g, FALSE);
}

/* ---------------- RowBinary ---------------- */

void rm_chs_put_u64(GByteArray *b, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	g_byte_array_append(b, le, 8);
}

void rm_chs_put_u8(GByteArray *b, uint8_t v)
{
	g_byte_array_append(b, &v, 1);
}

/* String: the length as unsigned LEB128, then the octets. */
void rm_chs_put_bytes(GByteArray *b, const void *p, size_t len)
{
	uint8_t v[10];
	size_t n = 0, l = len;

	do {
		v[n] = (uint8_t)(l & 0x7f);
		l >>= 7;
		if (l)
			v[n] |= 0x80;
		n++;
	} while (l);
	g_byte_array_append(b, v, (guint)n);
	if (len)
		g_byte_array_append(b, p, (guint)len);
}

void rm_chs_put_str(GByteArray *b, const char *s)
{
	rm_chs_put_bytes(b, s ? s : "", s ? strlen(s) : 0);
}

/* Nullable: a byte 1 for NULL, else 0 and the value. */
void rm_chs_put_nu64(GByteArray *b, int null, uint64_t v)
{
	rm_chs_put_u8(b, null ? 1 : 0);
	if (!null)
		rm_chs_put_u64(b, v);
}

void rm_chs_put_nstr(GByteArray *b, const char *s)
{
	rm_chs_put_u8(b, s ? 0 : 1);
	if (s)
		rm_chs_put_str(b, s);
}

/* ---------------- rows ---------------- */

/* Column c of row in RowBinary, by its kind and NULL rule. */
static void put_col(GByteArray *b, const struct rm_stored_table *t, const struct rm_column *c, const void *row)
{
	int null = c->null != RM_COL_NN && rm_col_is_null(t, c, row);
	char buf[INET6_ADDRSTRLEN];

	switch (c->kind) {
	case RM_COL_U64:
		if (c->null == RM_COL_NN)
			rm_chs_put_u64(b, rm_col_u64(c, row));
		else
			rm_chs_put_nu64(b, null, null ? 0 : rm_col_u64(c, row));
		return;
	case RM_COL_U8:
		rm_chs_put_u8(b, (uint8_t)rm_col_u64(c, row));
		return;
	case RM_COL_BYTES: {
		struct rm_col_bytes v = rm_col_bytes(c, row);

		if (c->null != RM_COL_NN)
			rm_chs_put_u8(b, null ? 1 : 0);
		if (!null)
			rm_chs_put_bytes(b, v.p, v.len);
		return;
	}
	default:
		if (c->null == RM_COL_NN)
			rm_chs_put_str(b, rm_col_string(t, c, row, buf, sizeof(buf)));
		else
			rm_chs_put_nstr(b, null ? NULL : rm_col_string(t, c, row, buf, sizeof(buf)));
	}
}

void rm_chs_put_row(GByteArray *b, const struct rm_stored_table *t, const char *collector_id, uint64_t version,
		    const void *row)
{
	int id = rm_stored_id_col(t);

	rm_chs_put_str(b, collector_id);
	for (unsigned i = 0; i < t->n_cols; i++) {
		if (!t->cols[i].clickhouse)
			continue;
		put_col(b, t, &t->cols[i], row);
		if (t->ch_versioned && (int)i == id)
			rm_chs_put_u64(b, version);
	}
	if (t->ch_versioned && id < 0)
		rm_chs_put_u64(b, version);
}

void rm_chstore_row(GByteArray *out, const struct rm_stored_table *t, const char *collector_id, const void *row,
		    uint64_t version)
{
	rm_chs_put_row(out, t, collector_id, version, row);
}

void rm_chstore_epoch_row(GByteArray *out, const char *collector_id, const struct rm_epoch *e, uint64_t version)
{
	rm_chs_put_row(out, &rm_stored_epochs, collector_id, version, e);
}

int rm_chs_insert_row(struct rm_ch *ch, const struct rm_stored_table *t, const char *collector_id, uint64_t version,
		      const void *row, char *err, size_t errlen)
{
	GByteArray *b = g_byte_array_new();
	char *insert = rm_chs_insert_sql(t);
	int rc;

	rm_chs_put_row(b, t, collector_id, version, row);
	rc = rm_ch_query(ch, insert, b->data, b->len, NULL, NULL, err, errlen);
	g_byte_array_free(b, TRUE);
	g_free(insert);
	return rc;
}
