// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jsonw.c - the JSON values of the vocabulary and the writer (see jsonw.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "report_text.h"
#include "rocemeter/ipfix_ie.h"

/* A string no text of ours starts with: rm_json_text() replaces control bytes. */
#define U64_MARK         "\x01u64:"
#define U64_MARK_ESCAPED "\"\\u0001u64:"

json_t *rm_json_u64(uint64_t v)
{
	char buf[32];

	if (v <= INT64_MAX)
		return json_integer((json_int_t)v);
	snprintf(buf, sizeof(buf), U64_MARK "%" PRIu64, v);
	return json_string(buf);
}

const char *rm_json_u64_digits(const json_t *v)
{
	const char *s = json_string_value(v);

	return s && !strncmp(s, U64_MARK, strlen(U64_MARK)) ? s + strlen(U64_MARK) : NULL;
}

json_t *rm_json_text(const char *s)
{
	json_t *v;
	char *copy;

	if (!s)
		return json_null();
	if (s[0] != '\x01' && (v = json_string(s)))
		return v;
	/* Not UTF-8 (a peer's text), or the marker's first byte: keep ASCII. */
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80 || *p == '\x01')
			*p = '?';
	v = json_string(copy);
	free(copy);
	return v;
}

json_t *rm_json_addr(int family, const uint8_t *addr)
{
	char buf[INET6_ADDRSTRLEN];

	if (!inet_ntop(family == 6 ? AF_INET6 : AF_INET, addr, buf, sizeof(buf)))
		return json_null();
	return json_string(buf);
}

json_t *rm_json_flag_names(uint16_t flags)
{
	char text[160], *save = NULL, *tok;
	json_t *a = json_array();

	rm_flags_to_text(flags, text, sizeof(text));
	for (tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		json_array_append_new(a, json_string(tok));
	return a;
}

struct jrow {
	const char *name;
	uint8_t type; /* enum rm_ie_type */
	uint8_t len;
	uint8_t in;   /* enum rm_ie_in */
	uint16_t off; /* in struct rm_report */
};

#define JROW_(stem, name, pen, type, octets, sem, units, key, in, member) \
	{ name, RM_IE_T_##type, octets, RM_IE_IN_##in, offsetof(struct rm_report, member) },
static const struct jrow rows[] = { RM_IPFIX_IES(JROW_) };
#undef JROW_

void rm_json_set_report(json_t *obj, const struct rm_report *r)
{
	const uint8_t *base = (const uint8_t *)r;
	enum rm_ie_in other = r->family == 6 ? RM_IE_IN_IPV4 : RM_IE_IN_IPV6;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct jrow *j = &rows[i];
		uint16_t v16;
		uint32_t v32;
		uint64_t v64;

		if ((j->in == RM_IE_IN_VLAN && !r->has_vlan_ns) || j->in == other)
			continue;
		if (RM_IE_TYPE_IS_ADDRESS(j->type)) {
			json_object_set_new(obj, j->name, rm_json_addr(r->family, base + j->off));
			continue;
		}
		switch (j->len) {
		case 2:
			memcpy(&v16, base + j->off, 2);
			v64 = v16;
			break;
		case 4:
			memcpy(&v32, base + j->off, 4);
			v64 = v32;
			break;
		default:
			memcpy(&v64, base + j->off, 8);
			break;
		}
		json_object_set_new(obj, j->name, rm_json_u64(v64));
		if (j->off == offsetof(struct rm_report, flags))
			json_object_set_new(obj, "flag_names", rm_json_flag_names(r->flags));
	}
}

void rm_json_set_rows(json_t *obj, const struct rm_metric_row *rows, size_t n, const void *values)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		memcpy(&v, (const uint8_t *)values + rows[i].offset, sizeof(v));
		json_object_set_new(obj, rows[i].key, rm_json_u64(v));
	}
}

int rm_json_write(FILE *f, json_t *v)
{
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY) : NULL;
	const char *p;
	int rc = 0;

	json_decref(v);
	if (!text)
		return -EIO;
	/* Unmark the large unsigned numbers: "\u0001u64:DIGITS" -> DIGITS. */
	for (p = text; *p;) {
		const char *m = strstr(p, U64_MARK_ESCAPED);

		if (!m) {
			fputs(p, f);
			break;
		}
		fwrite(p, 1, (size_t)(m - p), f);
		m += strlen(U64_MARK_ESCAPED);
		while (*m >= '0' && *m <= '9')
			fputc(*m++, f);
		p = *m == '"' ? m + 1 : m;
	}
	fputc('\n', f);
	free(text);
	if (ferror(f))
		rc = -EIO;
	return rc;
}
