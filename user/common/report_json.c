// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_json.c - struct rm_report <-> JSON Lines (names = [SEQOBS] IE
 * names). The writer and the parser both follow the profile's information
 * model (RM_IPFIX_IES in rocemeter/ipfix_ie.h), both through jansson.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <jansson.h>

#include "errmsg.h"
#include "jsonw.h"
#include "report_json.h"
#include "rocemeter/ipfix_ie.h"

struct jfield {
	const char *name;
	uint8_t type; /* enum rm_ie_type */
	uint8_t len;  /* octets of the value (addresses: 4 or 16) */
	uint8_t in;   /* enum rm_ie_in */
	uint16_t off; /* in struct rm_report */
};

#define JFIELD_(stem, name, pen, type, octets, sem, units, key, in, member) \
	{ name, RM_IE_T_##type, octets, RM_IE_IN_##in, offsetof(struct rm_report, member) },
static const struct jfield fields[] = { RM_IPFIX_IES(JFIELD_) };
#undef JFIELD_
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static int is_vlan(const struct jfield *f)
{
	return f->in == RM_IE_IN_VLAN;
}

/* The IPv6 row of an IPv4 address row (the same member), or NULL. */
static const struct jfield *ipv6_twin(const struct jfield *f)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].in == RM_IE_IN_IPV6 && fields[i].off == f->off)
			return &fields[i];
	return NULL;
}

int rm_report_write_json(FILE *f, const struct rm_report *r)
{
	json_t *o = json_object();

	if (r->family == 4 || r->family == 6)
		rm_json_set_report(o, r);
	return rm_json_write(f, o);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rm_verrf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static const struct jfield *lookup(const char *name)
{
	size_t i;

	for (i = 0; i < NFIELDS; i++)
		if (strcmp(fields[i].name, name) == 0)
			return &fields[i];
	return NULL;
}

int rm_report_parse_json(const char *text, struct rm_report *r, char *err, size_t errlen)
{
	uint8_t *base = (uint8_t *)r;
	int seen[NFIELDS] = { 0 };
	int family = 0, rc = -1, vlan_keys;
	json_error_t jerr;
	const char *name;
	json_t *root, *val, *flag_names = NULL;
	size_t i;

	memset(r, 0, sizeof(*r));
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fail(err, errlen, "JSON error at column %d: %s", jerr.column, jerr.text);
	if (!json_is_object(root)) {
		fail(err, errlen, "not a JSON object");
		goto out;
	}
	json_object_foreach(root, name, val)
	{
		const struct jfield *j = lookup(name);
		json_int_t x;
		uint64_t max;

		if (!strcmp(name, "flag_names")) {
			flag_names = val; /* checked against rdmaSequenceFlags below */
			continue;
		}
		if (!j) {
			fail(err, errlen, "unknown key \"%s\"", name);
			goto out;
		}
		seen[j - fields] = 1;
		if (RM_IE_TYPE_IS_ADDRESS(j->type)) {
			int v6 = j->in == RM_IE_IN_IPV6, fam = v6 ? 6 : 4;

			if (family && family != fam) {
				fail(err, errlen, "\"%s\": IPv4 and IPv6 addresses mixed", name);
				goto out;
			}
			family = fam;
			if (!json_is_string(val) ||
			    inet_pton(v6 ? AF_INET6 : AF_INET, json_string_value(val), base + j->off) != 1) {
				fail(err, errlen, "\"%s\": not an IPv%d address string", name, fam);
				goto out;
			}
			continue;
		}
		if (!json_is_integer(val)) {
			fail(err, errlen, "\"%s\": not an integer", name);
			goto out;
		}
		x = json_integer_value(val);
		max = j->len == 8 ? UINT64_MAX : j->len == 4 ? UINT32_MAX : UINT16_MAX;
		if (x < 0 || (uint64_t)x > max) {
			fail(err, errlen, "\"%s\": %" JSON_INTEGER_FORMAT " out of range 0..%" PRIu64, name, x, max);
			goto out;
		}
		switch (j->len) {
		case 2: {
			uint16_t v = x;
			memcpy(base + j->off, &v, 2);
			break;
		}
		case 4: {
			uint32_t v = x;
			memcpy(base + j->off, &v, 4);
			break;
		}
		default: { /* 8 */
			uint64_t v = x;
			memcpy(base + j->off, &v, 8);
			break;
		}
		}
		if (is_vlan(j))
			r->has_vlan_ns = 1;
	}
	/* Every row but the namespace keys; an address of either family (named by its IPv4 row). */
	for (i = 0; i < NFIELDS; i++) {
		const struct jfield *six = fields[i].in == RM_IE_IN_IPV4 ? ipv6_twin(&fields[i]) : NULL;

		if (is_vlan(&fields[i]) || fields[i].in == RM_IE_IN_IPV6)
			continue;
		if (!seen[i] && !(six && seen[six - fields])) {
			fail(err, errlen, "missing key \"%s\"%s%s", fields[i].name, six ? " or " : "",
			     six ? six->name : "");
			goto out;
		}
	}
	for (i = 0, vlan_keys = 0; i < NFIELDS; i++)
		vlan_keys += is_vlan(&fields[i]) && seen[i];
	if (vlan_keys == 1) {
		fail(err, errlen, "vlanId and dot1qCustomerVlanId go together");
		goto out;
	}
	if (flag_names) {
		json_t *want = rm_json_flag_names(r->flags);

		if (!json_equal(flag_names, want)) {
			json_decref(want);
			fail(err, errlen, "\"flag_names\" does not name the bits of rdmaSequenceFlags");
			goto out;
		}
		json_decref(want);
	}
	r->family = family;
	rc = 0;
out:
	json_decref(root);
	return rc;
}
