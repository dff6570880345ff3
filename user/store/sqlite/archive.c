// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * archive.c - the packed form of settled epochs (epoch_archive): each epoch as the
 * columns that differ from its chunk's first one, in JSON built without printf.
 * tests/unit/test_store_archive.c checks it byte for byte.
 */
#include <arpa/inet.h>
#include <glib.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"

static int buf_reserve(struct rm_store *st, size_t more)
{
	if (st->arc_len + more <= st->arc_cap)
		return 0;
	size_t cap = st->arc_cap ? st->arc_cap : 1 << 16;

	while (cap < st->arc_len + more)
		cap *= 2;
	char *p = realloc(st->arc, cap);

	if (!p)
		return -1;
	st->arc = p;
	st->arc_cap = cap;
	return 0;
}

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				  "8081828384858687888990919293949596979899";

/* u < 10^8 in decimal, without leading zeros: 32-bit divisions, two digits each. */
static char *put_u27(char *p, uint32_t u)
{
	unsigned n = u < 10         ? 1
		     : u < 100      ? 2
		     : u < 1000     ? 3
		     : u < 10000    ? 4
		     : u < 100000   ? 5
		     : u < 1000000  ? 6
		     : u < 10000000 ? 7
				    : 8;
	char *t = p + n;

	while (u >= 100) {
		uint32_t d = u % 100;

		u /= 100;
		t -= 2;
		memcpy(t, digit_pairs + 2 * d, 2);
	}
	if (u >= 10)
		memcpy(t - 2, digit_pairs + 2 * u, 2);
	else
		t[-1] = (char)('0' + u);
	return p + n;
}

/* u < 10^8 as exactly 8 digits (leading zeros): two independent halves of four. */
static char *put_8digits(char *p, uint32_t u)
{
	uint32_t hi = u / 10000, lo = u % 10000;

	memcpy(p, digit_pairs + 2 * (hi / 100), 2);
	memcpy(p + 2, digit_pairs + 2 * (hi % 100), 2);
	memcpy(p + 4, digit_pairs + 2 * (lo / 100), 2);
	memcpy(p + 6, digit_pairs + 2 * (lo % 100), 2);
	return p + 8;
}

/*
 * Decimal (every epoch has some integers to write, many of them times of 13
 * digits): in groups of 8 digits, each written with 32-bit divisions.
 */
static char *put_i64(char *p, int64_t x)
{
	uint64_t u = x < 0 ? -(uint64_t)x : (uint64_t)x;

	if (x < 0)
		*p++ = '-';
	if (u < 100000000)
		return put_u27(p, (uint32_t)u);
	if (u < 10000000000000000ULL) {
		p = put_u27(p, (uint32_t)(u / 100000000));
		return put_8digits(p, (uint32_t)(u % 100000000));
	}
	p = put_u27(p, (uint32_t)(u / 10000000000000000ULL));
	p = put_8digits(p, (uint32_t)(u / 100000000 % 100000000));
	return put_8digits(p, (uint32_t)(u % 100000000));
}

/* A JSON string (RFC 8259): quotes, backslashes and control characters escaped. */
static char *put_str(char *p, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	*p++ = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			*p++ = '\\';
			*p++ = (char)c;
		} else if (c < 0x20) {
			memcpy(p, "\\u00", 4);
			p[4] = hex[c >> 4];
			p[5] = hex[c & 15];
			p += 6;
		} else {
			*p++ = (char)c;
		}
	}
	*p++ = '"';
	return p;
}

/* Column c of an epoch, not NULL, in JSON; src and dst: its address texts. */
static char *put_column(char *p, const struct rm_epoch *e, int c, const char *src, const char *dst)
{
	switch (c) {
#define X(col, f) \
	case col: \
		return put_i64(p, (int64_t)e->f);
		EPOCH_INT_COLUMNS(X)
#undef X
	case EC_SRC:
		return put_str(p, src);
	case EC_DST:
		return put_str(p, dst);
	case EC_STATE:
		return put_str(p, rm_sq_state_name(e->state));
	case EC_OUTCOME:
		return put_str(p, rm_outcome_name(e->outcome));
	default:
		return put_str(p, e->reason);
	}
}

/* All columns as a JSON array, [v0,v1,...]; nulls: the NULL ones (rm_sq_epoch_nulls). */
static char *put_columns(char *p, const struct rm_epoch *e, uint64_t nulls, const char *src, const char *dst)
{
	*p++ = '[';
	for (int c = 0; c < EC__N; c++) {
		if (c)
			*p++ = ',';
		if (nulls & COL(c)) {
			memcpy(p, "null", 4);
			p += 4;
		} else {
			p = put_column(p, e, c, src, dst);
		}
	}
	*p++ = ']';
	return p;
}

void rm_sq_base_clear(struct rm_store *st)
{
	g_free(st->arc_base_reason);
	st->arc_base_reason = NULL;
	st->arc_base_len = 0;
}

/* The chunk's first epoch becomes its base (reason copied, its JSON array kept for the row). */
static void base_set(struct rm_store *st, const struct rm_epoch *e)
{
	int64_t *b = st->arc_base_int;

	rm_sq_base_clear(st);
#define X(c, f) b[c] = (int64_t)e->f;
	EPOCH_INT_COLUMNS(X)
#undef X
	b[EC_STATE] = e->state;
	b[EC_OUTCOME] = e->outcome;
	st->arc_base_nulls = rm_sq_epoch_nulls(e);
	st->arc_base_reason = g_strdup(e->reason);
	st->arc_base_family = e->key.family;
	memcpy(st->arc_base_src, e->key.src, sizeof(st->arc_base_src));
	memcpy(st->arc_base_dst, e->key.dst, sizeof(st->arc_base_dst));
	rm_sq_addr_text(&e->key, e->key.src, st->arc_base_src_text, sizeof(st->arc_base_src_text));
	rm_sq_addr_text(&e->key, e->key.dst, st->arc_base_dst_text, sizeof(st->arc_base_dst_text));
	st->arc_base_len = (size_t)(put_columns(st->arc_base_json, e, st->arc_base_nulls, st->arc_base_src_text,
						st->arc_base_dst_text) -
				    st->arc_base_json);
}

/*
 * Append an epoch to the archive chunk: the columns that differ from the
 * chunk's base as an object ({"a":1,...}), or all of them as an array when
 * it is NULL where the base is not (an object cannot say "NULL here").
 * Compared field by field with the base's values (state and outcome by
 * their enums, the reason's text only when its first character matches);
 * a value is formatted only when it is written. An address is written as
 * text only when its octets or family differ from the base's (the same
 * octets and family give the same text), which in a chunk of one exporter
 * is almost never.
 */
int rm_sq_archive_add(struct rm_store *st, const struct rm_epoch *e)
{
	char src_text[INET6_ADDRSTRLEN], dst_text[INET6_ADDRSTRLEN];
	const char *src = st->arc_base_src_text, *dst = st->arc_base_dst_text;
	const int64_t *b = st->arc_base_int;
	const char *reason = e->reason, *base_reason;
	uint64_t nulls, diff = 0; /* bit c: column c differs from the base */
	char *p;

	if (buf_reserve(st, ARC_ENTRY_MAX + 2) < 0)
		return -1;
	if (st->arc_len == 0)
		base_set(st, e);
	base_reason = st->arc_base_reason;
	nulls = rm_sq_epoch_nulls(e);
#define X(c, f) diff |= (uint64_t)((int64_t)e->f != b[c]) << (c);
	EPOCH_INT_COLUMNS(X)
#undef X
	diff |= (uint64_t)((int64_t)e->state != b[EC_STATE]) << EC_STATE;
	diff |= (uint64_t)((int64_t)e->outcome != b[EC_OUTCOME]) << EC_OUTCOME;
	if (reason[0] != base_reason[0] || (reason[0] && strcmp(reason, base_reason)))
		diff |= COL(EC_REASON);
	if (st->arc_base_family != e->key.family || memcmp(st->arc_base_src, e->key.src, 16)) {
		diff |= COL(EC_SRC);
		rm_sq_addr_text(&e->key, e->key.src, src_text, sizeof(src_text));
		src = src_text;
	}
	if (st->arc_base_family != e->key.family || memcmp(st->arc_base_dst, e->key.dst, 16)) {
		diff |= COL(EC_DST);
		rm_sq_addr_text(&e->key, e->key.dst, dst_text, sizeof(dst_text));
		dst = dst_text;
	}
	/* NULL in both: the same; a value where the base is NULL: different. */
	diff = (diff & ~(nulls | st->arc_base_nulls)) | (st->arc_base_nulls & ~nulls);
	p = st->arc + st->arc_len;
	*p++ = st->arc_len == 0 ? '[' : ',';
	if (nulls & ~st->arc_base_nulls) {
		p = put_columns(p, e, nulls, src, dst);
	} else {
		char sep = '{';

		for (; diff; diff &= diff - 1) {
			int c = __builtin_ctzll(diff);

			*p++ = sep;
			*p++ = '"';
			*p++ = ARC_KEYS[c];
			*p++ = '"';
			*p++ = ':';
			p = put_column(p, e, c, src, dst);
			sep = ',';
		}
		if (sep == '{')
			*p++ = '{';
		*p++ = '}';
	}
	st->arc_len = (size_t)(p - st->arc);
	st->arc_retained += !e->retired_ms;
	if (!st->arc_first)
		st->arc_first = e->store_id;
	st->arc_last = e->store_id;
	return 0;
}

/* Write the archive chunk (one epoch_archive row). */
int rm_sq_archive_write(struct rm_store *st)
{
	sqlite3_stmt *q = st->q[Q_ARCHIVE];
	int rc;

	if (!st->arc_len)
		return 0;
	if (buf_reserve(st, 1) < 0)
		return -1;
	st->arc[st->arc_len++] = ']';
	sqlite3_bind_int64(q, 1, st->arc_first);
	sqlite3_bind_int64(q, 2, st->arc_last);
	sqlite3_bind_text(q, 3, st->arc, (int)st->arc_len, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, st->arc_retained);
	sqlite3_bind_text(q, 5, st->arc_base_json, (int)st->arc_base_len, SQLITE_STATIC);
	rc = rm_sq_step_reset(q);
	st->arc_len = 0;
	st->arc_first = st->arc_last = 0;
	st->arc_retained = 0;
	return rc;
}
