// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rows.c - the ClickHouse store's rows in RowBinary: the INSERT of each table,
 * the encoders, an epoch's row from the column table (columns.h) and a
 * session's row.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chstore_impl.h"
#include "store/columns.h"
#include "common/limits.h"
#include "common/log.h"

/* One INSERT per table; the column lists name the order in which rows are serialized below. */
const char *const rm_chs_inserts[T__N] = {
	[T_RUNS] = "INSERT INTO runs (collector_id, id, version, started_ms, stopped_ms, listen, transport,"
		   " max_sessions, max_epochs, max_raw_records, inactivity_timeout_ms, pen) FORMAT RowBinary",
	[T_SESSIONS] =
		"INSERT INTO sessions (collector_id, id, version" RM_SESSION_COLUMN_NAMES_AFTER_ID ") FORMAT RowBinary",
	[T_EPOCHS] =
		"INSERT INTO epochs (collector_id, id, version" RM_EPOCH_COLUMN_NAMES_AFTER_ID ") FORMAT RowBinary",
	[T_RAW] = "INSERT INTO raw_records (collector_id, id, session_id, received_ms, domain, template_id, epoch_id,"
		  " report_id, flags, verdict, reason, record, template) FORMAT RowBinary",
	[T_DROPS] = "INSERT INTO drops (collector_id, session_id, kind, count, first_ms, last_ms, last_detail)"
		    " FORMAT RowBinary",
	[T_CONNS] = "INSERT INTO connections (collector_id, minute_ms, source, outcome, count, first_ms, last_ms,"
		    " last_detail) FORMAT RowBinary",
	[T_LIMITS] = "INSERT INTO run_limits (collector_id, run_id, name, value, seq) FORMAT RowBinary",
	[T_POINTS] = "INSERT INTO observation_points (collector_id, peer_name, peer_subject, domain,"
		     " observation_point_id, name, updated_ms, version) FORMAT RowBinary",
};

const char *const rm_chs_table_names[T__N] = {
	[T_RUNS] = "runs",   [T_SESSIONS] = "sessions", [T_EPOCHS] = "epochs",     [T_RAW] = "raw_records",
	[T_DROPS] = "drops", [T_CONNS] = "connections", [T_LIMITS] = "run_limits", [T_POINTS] = "observation_points",
};

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

static void ipv4_text(const uint8_t *a, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
}

static void addr_text(const struct rm_report *r, const uint8_t *a, char *buf, size_t len)
{
	if (r->family != 6)
		ipv4_text(a, buf, len);
	else if (!inet_ntop(AF_INET6, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static const char *state_name(enum rm_epoch_state s)
{
	return s == RM_EPOCH_OPEN ? "open" : s == RM_EPOCH_FINAL ? "final" : "invalid";
}

/*
 * One column of an epoch's row (columns.h) in RowBinary, by its kind and
 * NULL rule; the ID goes before the version, by hand.
 */
#define ROW_(NAME, column, sqlite, ch, null, write, kind, field, read) ROW_##write(kind##_##null, field)
#define ROW_ID(kn, f)
#define ROW_ONCE(kn, f) ROW_##kn(f)
#define ROW_UPD(kn, f)  ROW_##kn(f)
#define ROW_U64_NN(f)   rm_chs_put_u64(out, (uint64_t)e->f);
#define ROW_U64_MEAS(f) rm_chs_put_nu64(out, none, e->f);
#define ROW_U64_ZERO(f) rm_chs_put_nu64(out, !e->f, e->f);
#define ROW_U8_NN(f)    rm_chs_put_u8(out, e->f);
#define ROW_ADDR_NN(f)                                        \
	{                                                     \
		char text[INET6_ADDRSTRLEN];                  \
		addr_text(&e->key, e->f, text, sizeof(text)); \
		rm_chs_put_str(out, text);                    \
	}
#define ROW_STATE_NN(f)   rm_chs_put_str(out, state_name(e->f));
#define ROW_OUTCOME_NN(f) rm_chs_put_str(out, rm_outcome_name(e->f));
#define ROW_TEXT_OPT(f)   rm_chs_put_nstr(out, e->f);

void rm_chstore_epoch_row(GByteArray *out, const char *collector_id, const struct rm_epoch *e, uint64_t version)
{
	int none = !e->n_accepted; /* no accepted report: no measurement (NULL) */

	rm_chs_put_str(out, collector_id);
	rm_chs_put_u64(out, (uint64_t)e->store_id);
	rm_chs_put_u64(out, version);
	RM_EPOCH_COLUMNS(ROW_)
}

/* One column of a session's row after its ID (columns.h) in RowBinary, by its kind and NULL rule. */
#define SROW_(NAME, column, sqlite, ch, null, write, kind, field, read) SROW_##write(kind##_##null, field)
#define SROW_ID(kn, f)
#define SROW_ONCE(kn, f) SROW_##kn(f)
#define SROW_UPD(kn, f)  SROW_##kn(f)
#define SROW_KEEP(kn, f) SROW_##kn(f)
#define SROW_U64_NN(f)   rm_chs_put_u64(b, (uint64_t)s->f);
#define SROW_U64_ZERO(f) rm_chs_put_nu64(b, !s->f, s->f);
#define SROW_TEXT_OPT(f) rm_chs_put_nstr(b, s->f);

void rm_chs_session_row(struct rm_chstore *chs, GByteArray *b, const struct rm_sess_row *s)
{
	rm_chs_put_str(b, chs->id);
	rm_chs_put_u64(b, (uint64_t)s->id);
	rm_chs_put_u64(b, rm_chs_version_next(&chs->version));
	RM_SESSION_COLUMNS(SROW_)
}
