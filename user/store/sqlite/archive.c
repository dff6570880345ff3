// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * archive.c - the packed form of settled epochs (epoch_archive): each epoch as the
 * columns that differ from its chunk's first one, in JSON built without printf.
 * tests/unit/test_store_archive.c checks it byte for byte.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <glib.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "rules/budget.h"
#include "store_impl.h"

/* The builder's buffer, of RM_STORE_ARCHIVE_CAP octets: a spare one (pages touched already) or a new one. */
static int buf_ready(struct rm_store *store)
{
	if (store->arc)
		return 0;
	store->arc = store->spare && store->spare->len ? g_ptr_array_steal_index(store->spare, store->spare->len - 1)
						       : malloc(RM_STORE_ARCHIVE_CAP);
	store->arc_cap = RM_STORE_ARCHIVE_CAP;
	return store->arc ? 0 : -1;
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

/* 1 if column c of an epoch is an integer (columns.h kinds U64, U8). */
static inline int is_int(int c)
{
	return rm_epoch_columns[c].kind <= RM_COL_U8;
}

/* An epoch's NULL columns, a bit each (rm_stored_nulls, unrolled over the records). */
static inline uint64_t epoch_nulls(const struct rm_epoch *e)
{
	uint64_t m = 0;

#pragma GCC unroll 64
	for (int c = 0; c < EC__N; c++)
		if (rm_epoch_columns[c].null != RM_COL_NN)
			m |= (uint64_t)rm_col_is_null(&rm_stored_epochs, &rm_epoch_columns[c], e) << c;
	return m;
}

/* Column c of an epoch, not NULL, in JSON; src and dst: its address texts. */
static inline __attribute__((always_inline)) char *put_column(char *p, const struct rm_epoch *e, int c, const char *src,
							      const char *dst)
{
	if (is_int(c))
		return put_i64(p, (int64_t)rm_col_u64(&rm_epoch_columns[c], e));
	if (c == EC_SRC || c == EC_DST)
		return put_str(p, c == EC_SRC ? src : dst);
	return put_str(p, rm_col_string(&rm_stored_epochs, &rm_epoch_columns[c], e, NULL, 0));
}

/* All columns as a JSON array, [v0,v1,...]; nulls: the NULL ones (epoch_nulls). */
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

void rm_sq_base_clear(struct rm_store *store)
{
	g_free(store->arc_base_reason);
	store->arc_base_reason = NULL;
	store->arc_base_len = 0;
}

/* The chunk's first epoch becomes its base (reason copied, its JSON array kept for the row). */
static void base_set(struct rm_store *store, const struct rm_epoch *e)
{
	int64_t *b = store->arc_base_int;

	rm_sq_base_clear(store);
#pragma GCC unroll 64
	for (int c = 0; c < EC__N; c++)
		if (is_int(c))
			b[c] = (int64_t)rm_col_u64(&rm_epoch_columns[c], e);
	b[EC_STATE] = e->state;
	b[EC_OUTCOME] = e->outcome;
	store->arc_base_nulls = epoch_nulls(e);
	store->arc_base_reason = g_strdup(e->reason);
	store->arc_base_family = e->key.family;
	memcpy(store->arc_base_src, e->key.src, sizeof(store->arc_base_src));
	memcpy(store->arc_base_dst, e->key.dst, sizeof(store->arc_base_dst));
	rm_store_addr_text(e->key.family, e->key.src, store->arc_base_src_text, sizeof(store->arc_base_src_text));
	rm_store_addr_text(e->key.family, e->key.dst, store->arc_base_dst_text, sizeof(store->arc_base_dst_text));
	store->arc_base_len = (size_t)(put_columns(store->arc_base_json, e, store->arc_base_nulls,
						   store->arc_base_src_text, store->arc_base_dst_text) -
				       store->arc_base_json);
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
int rm_sq_archive_add(struct rm_store *store, const struct rm_epoch *e)
{
	char src_text[INET6_ADDRSTRLEN], dst_text[INET6_ADDRSTRLEN];
	const char *src = store->arc_base_src_text, *dst = store->arc_base_dst_text;
	const int64_t *b = store->arc_base_int;
	const char *reason = e->reason, *base_reason;
	uint64_t nulls, diff = 0; /* bit c: column c differs from the base */
	char *p;

	if (buf_ready(store) < 0)
		return -1;
	if (store->arc_len == 0)
		base_set(store, e);
	base_reason = store->arc_base_reason;
	nulls = epoch_nulls(e);
#pragma GCC unroll 64
	for (int c = 0; c < EC__N; c++)
		if (is_int(c))
			diff |= (uint64_t)((int64_t)rm_col_u64(&rm_epoch_columns[c], e) != b[c]) << c;
	diff |= (uint64_t)((int64_t)e->state != b[EC_STATE]) << EC_STATE;
	diff |= (uint64_t)((int64_t)e->outcome != b[EC_OUTCOME]) << EC_OUTCOME;
	if (reason[0] != base_reason[0] || (reason[0] && strcmp(reason, base_reason)))
		diff |= COL(EC_REASON);
	if (store->arc_base_family != e->key.family || memcmp(store->arc_base_src, e->key.src, 16)) {
		diff |= COL(EC_SRC);
		rm_store_addr_text(e->key.family, e->key.src, src_text, sizeof(src_text));
		src = src_text;
	}
	if (store->arc_base_family != e->key.family || memcmp(store->arc_base_dst, e->key.dst, 16)) {
		diff |= COL(EC_DST);
		rm_store_addr_text(e->key.family, e->key.dst, dst_text, sizeof(dst_text));
		dst = dst_text;
	}
	/* NULL in both: the same; a value where the base is NULL: different. */
	diff = (diff & ~(nulls | store->arc_base_nulls)) | (store->arc_base_nulls & ~nulls);
	p = store->arc + store->arc_len;
	*p++ = store->arc_len == 0 ? '[' : ',';
	if (nulls & ~store->arc_base_nulls) {
		p = put_columns(p, e, nulls, src, dst);
	} else {
		char sep = '{';

#pragma GCC unroll 64
		for (int c = 0; c < EC__N; c++) {
			if (!(diff & COL(c)))
				continue;
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
	store->arc_len = (size_t)(p - store->arc);
	store->arc_retained += !e->retired_ms;
	if (!store->arc_first)
		store->arc_first = e->store_id;
	store->arc_last = e->store_id;
	return 0;
}

/* Close the chunk being built: it waits in store->chunks with its base, store->arc starts the next one. */
static int chunk_close(struct rm_store *store)
{
	struct arc_chunk *c;

	if (!store->arc_len)
		return 0;
	c = g_try_malloc(sizeof(*c) + store->arc_base_len);
	if (!c)
		return -1;
	store->arc[store->arc_len++] = ']'; /* room: RM_STORE_ARCHIVE_CAP */
	c->first = store->arc_first;
	c->last = store->arc_last;
	c->retained = store->arc_retained;
	c->data = store->arc;
	c->len = store->arc_len;
	c->cap = store->arc_cap;
	c->base_len = store->arc_base_len;
	memcpy(c->base, store->arc_base_json, store->arc_base_len);
	g_ptr_array_add(store->chunks, c);
	store->arc = NULL;
	store->arc_cap = 0;
	store->arc_len = 0;
	store->arc_first = store->arc_last = 0;
	store->arc_retained = 0;
	return 0;
}

int rm_sq_pack(struct rm_store *store, const struct rm_epoch *e)
{
	if (rm_sq_archive_add(store, e) < 0)
		return -1;
	store->packed_max = e->store_id;
	return store->arc_len >= RM_STORE_ARCHIVE_CHUNK ? chunk_close(store) : 0;
}

int rm_sq_pack_upto(struct rm_store *store, uint32_t n)
{
	for (; store->epochs_seen < n; store->epochs_seen++) {
		struct rm_epoch *e = g_ptr_array_index(store->epochs, store->epochs_seen);

		if (!e || !rm_sq_packs(store, e))
			continue;
		if (rm_sq_pack(store, e) < 0)
			return -1;
		store->epochs->pdata[store->epochs_seen] = NULL;
		e->store_slot = 0;
		e->store_row = ROW_PACKED;
		if (e->sink_keeps) { /* retired: its copy waits packed (and keeps the charge), the epoch is not needed */
			rm_rules_epoch_free(e);
			store->kept--;
			store->packed_retired++;
		}
	}
	return 0;
}

int rm_sq_attempt_pack(struct rm_store *store)
{
	store->attempt_chunks = UINT32_MAX; /* nothing of this attempt to undo yet */
	store->attempt_packed_max = store->packed_max;
	if (chunk_close(store) < 0)
		return -1;
	store->attempt_chunks = store->chunks->len;
	for (guint i = 0; i < store->epochs->len; i++) {
		struct rm_epoch *e = g_ptr_array_index(store->epochs, i);

		if (e && rm_sq_packs(store, e) && rm_sq_pack(store, e) < 0)
			return -1;
	}
	return 0;
}

void rm_sq_attempt_undo(struct rm_store *store)
{
	if (store->attempt_chunks == UINT32_MAX) /* the chunk being built is what was packed before */
		return;
	while (store->chunks->len > store->attempt_chunks) {
		struct arc_chunk *c = g_ptr_array_steal_index(store->chunks, store->chunks->len - 1);

		free(c->data);
		g_free(c);
	}
	store->arc_len = 0;
	store->arc_first = store->arc_last = 0;
	store->arc_retained = 0;
	store->packed_max = store->attempt_packed_max;
}

int rm_sq_archive_write(struct rm_store *store)
{
	if (chunk_close(store) < 0)
		return -1;
	for (guint i = 0; i < store->chunks->len; i++) {
		const struct arc_chunk *c = g_ptr_array_index(store->chunks, i);
		struct rm_archive_row row = { .first = c->first,
					      .last = c->last,
					      .retained = c->retained,
					      .data = { c->data, c->len },
					      .base = { c->base, c->base_len } };

		if (rm_sq_write_row(store, Q_ARCHIVE, &row) < 0)
			return -1;
	}
	return 0;
}

void rm_sq_chunks_written(struct rm_store *store)
{
	for (guint i = 0; i < store->chunks->len; i++) {
		struct arc_chunk *c = g_ptr_array_index(store->chunks, i);

		if (store->spare->len < RM_STORE_ARCHIVE_SPARE)
			g_ptr_array_add(store->spare, c->data);
		else
			free(c->data);
		g_free(c);
	}
	g_ptr_array_set_size(store->chunks, 0);
	rm_budget_give(store->budget, (uint64_t)store->packed_retired * RM_BUDGET_EPOCH_BYTES); /* their charges */
	store->packed_retired = 0;
}

void rm_sq_chunks_free(struct rm_store *store)
{
	if (store->chunks) {
		for (guint i = 0; i < store->chunks->len; i++) {
			struct arc_chunk *c = g_ptr_array_index(store->chunks, i);

			free(c->data);
			g_free(c);
		}
		g_ptr_array_free(store->chunks, TRUE);
		store->chunks = NULL;
	}
	if (store->spare) {
		for (guint i = 0; i < store->spare->len; i++)
			free(g_ptr_array_index(store->spare, i));
		g_ptr_array_free(store->spare, TRUE);
		store->spare = NULL;
	}
	free(store->arc);
	store->arc = NULL;
	rm_budget_give(store->budget, (uint64_t)store->packed_retired * RM_BUDGET_EPOCH_BYTES); /* not written */
	store->packed_retired = 0;
}

/* ---------------- reading back: the inverse of the above ---------------- */

/*
 * The packed form as rm_sq_archive_add writes it, read without SQLite's
 * JSON functions, to the values the epochs view gives (rm_sq_create_view):
 * integers (int64), texts (RFC 8259 strings: any escape, \uXXXX as UTF-8),
 * null. Whitespace between tokens is skipped (chunks written by other
 * versions or by hand). Anything else - a real number, true/false, a
 * nested value, an integer beyond int64 - is malformed: the view would
 * give a REAL or a JSON text there, which no stored epoch has.
 */
static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int hex4(const char *p, const char *end, unsigned *u)
{
	*u = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
			     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
						    : 16u;

		if (d == 16)
			return -1;
		*u = *u << 4 | d;
	}
	return 0;
}

static char *put_utf8(char *o, unsigned u)
{
	if (u < 0x80) {
		*o++ = (char)u;
	} else if (u < 0x800) {
		*o++ = (char)(0xc0 | u >> 6);
		*o++ = (char)(0x80 | (u & 0x3f));
	} else if (u < 0x10000) {
		*o++ = (char)(0xe0 | u >> 12);
		*o++ = (char)(0x80 | (u >> 6 & 0x3f));
		*o++ = (char)(0x80 | (u & 0x3f));
	} else {
		*o++ = (char)(0xf0 | u >> 18);
		*o++ = (char)(0x80 | (u >> 12 & 0x3f));
		*o++ = (char)(0x80 | (u >> 6 & 0x3f));
		*o++ = (char)(0x80 | (u & 0x3f));
	}
	return o;
}

/* A string at p (its opening quote) unescaped into *o (NUL-terminated, *o moved past it). After it, or NULL. */
static const char *get_str(const char *p, const char *end, char **o)
{
	char *w = *o;

	for (p++; p < end && *p != '"'; p++) {
		unsigned u, lo;

		if (*p != '\\') {
			*w++ = *p;
			continue;
		}
		if (++p >= end)
			return NULL;
		switch (*p) {
		case '"':
		case '\\':
		case '/':
			*w++ = *p;
			break;
		case 'b':
			*w++ = '\b';
			break;
		case 'f':
			*w++ = '\f';
			break;
		case 'n':
			*w++ = '\n';
			break;
		case 'r':
			*w++ = '\r';
			break;
		case 't':
			*w++ = '\t';
			break;
		case 'u':
			if (hex4(p + 1, end, &u) < 0)
				return NULL;
			p += 4;
			if (u >= 0xd800 && u < 0xdc00 && end - p > 6 && p[1] == '\\' && p[2] == 'u' &&
			    !hex4(p + 3, end, &lo) && lo >= 0xdc00 && lo < 0xe000) {
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			}
			w = put_utf8(w, u);
			break;
		default:
			return NULL;
		}
	}
	if (p >= end)
		return NULL;
	*w++ = '\0';
	*o = w;
	return p + 1;
}

/* A value at p into *v (texts written at *o). After it, or NULL when malformed. */
static const char *get_value(const char *p, const char *end, struct val *v, char **o)
{
	if (p >= end)
		return NULL;
	if (*p == '"') {
		v->t = V_TEXT;
		v->s = *o;
		return get_str(p, end, o);
	}
	if (end - p >= 4 && !memcmp(p, "null", 4)) {
		v->t = V_NULL;
		return p + 4;
	}
	int neg = *p == '-';
	uint64_t u = 0;
	const char *d = p + neg;

	if (d >= end || *d < '0' || *d > '9')
		return NULL;
	for (; d < end && *d >= '0' && *d <= '9'; d++) {
		unsigned digit = (unsigned)(*d - '0');

		if (u > (UINT64_MAX - digit) / 10)
			return NULL;
		u = u * 10 + digit;
	}
	if (d < end && (*d == '.' || *d == 'e' || *d == 'E'))
		return NULL;
	if (u > (uint64_t)INT64_MAX + neg)
		return NULL;
	v->t = V_INT;
	v->i = neg ? (int64_t)(0 - u) : (int64_t)u;
	return d;
}

/* An array of column values at p into v[0..EC__N-1] (missing ones NULL, extra ones read and dropped). */
static const char *get_columns(const char *p, const char *end, struct val *v, char **o)
{
	struct val extra;
	int c = 0;

	for (int i = 0; i < EC__N; i++)
		v[i].t = V_NULL;
	p = ws(p + 1, end);
	if (p < end && *p == ']')
		return p + 1;
	for (;; c++) {
		p = get_value(ws(p, end), end, c < EC__N ? &v[c] : &extra, o);
		p = p ? ws(p, end) : NULL;
		if (!p || p >= end)
			return NULL;
		if (*p == ']')
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

/* The column of a key letter (ARC_KEYS), or -1 (a key the view does not read). */
static int key_column(char k)
{
	const char *c = memchr(ARC_KEYS, k, EC__N);

	return k && c ? (int)(c - ARC_KEYS) : -1;
}

/* An object of the columns that differ from the base at p: into v, already the base's values; *changed: their bits. */
static const char *get_diff(const char *p, const char *end, struct val *v, uint64_t *changed, char **o)
{
	p = ws(p + 1, end);
	if (p < end && *p == '}')
		return p + 1;
	for (;;) {
		struct val x;
		int c;

		if (p >= end || *p != '"' || end - p < 3 || p[2] != '"')
			return NULL; /* every key is one letter */
		c = key_column(p[1]);
		p = ws(p + 3, end);
		if (p >= end || *p != ':')
			return NULL;
		p = get_value(ws(p + 1, end), end, &x, o);
		if (!p)
			return NULL;
		if (c >= 0 && x.t != V_NULL) { /* the view: coalesce(the object's value, the base's) */
			v[c] = x;
			*changed |= COL(c);
		}
		p = ws(p, end);
		if (p >= end)
			return NULL;
		if (*p == '}')
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = ws(p, end);
	}
}

int rm_sq_unpack_start(struct rm_sq_unpack *u, const char *base, size_t base_len, const char *data, size_t data_len)
{
	/* Texts unescaped are never longer than in JSON: one octet per JSON octet and a NUL per value. */
	size_t need = base_len + data_len + 2 * EC__N + 2;
	const char *p;
	char *o;

	if (need > u->cap) {
		char *b = realloc(u->buf, need);

		if (!b)
			return -ENOMEM;
		u->buf = b;
		u->cap = need;
	}
	o = u->buf;
	u->p = data;
	u->end = data + data_len;
	u->first = 1;
	u->done = 0;
	if (!base) {
		for (int i = 0; i < EC__N; i++)
			u->base[i].t = V_NULL;
	} else {
		p = ws(base, base + base_len);
		if (p >= base + base_len || *p != '[' || !get_columns(p, base + base_len, u->base, &o))
			return -EINVAL;
	}
	u->texts = o;
	memcpy(u->cur, u->base, sizeof(u->cur));
	u->changed = 0;
	p = ws(u->p, u->end);
	if (p >= u->end || *p != '[')
		return -EINVAL;
	u->p = p + 1;
	return 0;
}

int rm_sq_unpack_next(struct rm_sq_unpack *u)
{
	struct val *v = u->cur;
	const char *p = ws(u->p, u->end), *end = u->end;
	char *o = u->texts;

	if (u->done)
		return 0;
	if (u->first && p < end && *p == ']') {
		u->done = 1;
		return 0;
	}
	if (p < end && *p == '[') {
		p = get_columns(p, end, v, &o);
		u->changed = ~0ULL;
	} else if (p < end && *p == '{') {
		/* the base again where the epoch before differed from it: a copy of the few columns that did */
		if (u->changed == ~0ULL) {
			memcpy(v, u->base, sizeof(u->base));
		} else {
			for (uint64_t c = u->changed; c; c &= c - 1)
				v[__builtin_ctzll(c)] = u->base[__builtin_ctzll(c)];
		}
		u->changed = 0;
		p = get_diff(p, end, v, &u->changed, &o);
	} else {
		return -EINVAL;
	}
	p = p ? ws(p, end) : NULL;
	if (!p || p >= end || (*p != ',' && *p != ']'))
		return -EINVAL;
	u->done = *p == ']';
	u->p = p + 1;
	u->first = 0;
	return 1;
}
