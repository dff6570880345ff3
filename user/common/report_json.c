// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_json.c - struct rm_report <-> JSON Lines (names = seed 000 IE
 * names). One table of (name, type, offset) serves the writer and the
 * parser; parsing uses jansson.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <jansson.h>

#include "report_json.h"

enum jkind { J_U16, J_U32, J_U64, J_SRC, J_DST, J_VLAN0, J_VLAN1 };

struct jfield {
	const char *name;
	const char *name6; /* IPv6 name of address fields */
	uint8_t kind;
	uint16_t off;
};

#define F(n, k, m) { n, NULL, k, offsetof(struct rm_report, m) }

static const struct jfield fields[] = {
	F("observationPointId", J_U64, observation_point_id),
	{ "sourceIPv4Address", "sourceIPv6Address", J_SRC, offsetof(struct rm_report, src) },
	{ "destinationIPv4Address", "destinationIPv6Address", J_DST, offsetof(struct rm_report, dst) },
	F("vlanId", J_VLAN0, vlan),
	F("dot1qCustomerVlanId", J_VLAN1, vlan),
	F("rdmaDestinationQP", J_U32, dest_qp),
	F("rdmaPartitionKey", J_U16, pkey),
	F("flowStartMilliseconds", J_U64, flow_start_ms),
	F("flowEndMilliseconds", J_U64, flow_end_ms),
	F("rdmaSequenceEpochId", J_U64, epoch_id),
	F("rdmaSequenceReportId", J_U64, report_id),
	F("rdmaSequenceWindow", J_U32, window),
	F("rdmaSequenceFlags", J_U16, flags),
	F("skippedPsnTotalCount", J_U64, skipped),
	F("filledPsnTotalCount", J_U64, filled),
	F("expiredPsnTotalCount", J_U64, expired),
	F("abandonedPsnTotalCount", J_U64, abandoned),
	F("pendingPsnCount", J_U32, pending),
	F("repeatedPsnTotalCount", J_U64, repeated),
	F("requestPacketTotalCount", J_U64, requests),
	F("unclassifiedLatePacketTotalCount", J_U64, unclassified_late),
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static int is_vlan(const struct jfield *f)
{
	return f->kind == J_VLAN0 || f->kind == J_VLAN1;
}

void rm_report_write_json(FILE *f, const struct rm_report *r)
{
	const uint8_t *base = (const uint8_t *)r;
	char addr[INET6_ADDRSTRLEN];
	int af = r->family == 6 ? AF_INET6 : AF_INET;
	const char *sep = "";
	size_t i;

	if (r->family != 4 && r->family != 6) {
		fputs("{}\n", f);
		return;
	}
	fputc('{', f);
	for (i = 0; i < NFIELDS; i++) {
		const struct jfield *j = &fields[i];
		uint16_t v16;
		uint32_t v32;
		uint64_t v64;

		if (is_vlan(j) && !r->has_vlan_ns)
			continue;
		fprintf(f, "%s\"%s\":", sep, r->family == 6 && j->name6 ? j->name6 : j->name);
		sep = ",";
		switch (j->kind) {
		case J_U16:
			memcpy(&v16, base + j->off, 2);
			fprintf(f, "%u", (unsigned)v16);
			break;
		case J_U32:
			memcpy(&v32, base + j->off, 4);
			fprintf(f, "%" PRIu32, v32);
			break;
		case J_U64:
			memcpy(&v64, base + j->off, 8);
			fprintf(f, "%" PRIu64, v64);
			break;
		case J_VLAN0:
		case J_VLAN1:
			fprintf(f, "%u", (unsigned)r->vlan[j->kind == J_VLAN1]);
			break;
		default:
			inet_ntop(af, base + j->off, addr, sizeof(addr));
			fprintf(f, "\"%s\"", addr);
			break;
		}
	}
	fputs("}\n", f);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static const struct jfield *lookup(const char *name, int *v6)
{
	size_t i;

	for (i = 0; i < NFIELDS; i++) {
		if (strcmp(fields[i].name, name) == 0) {
			*v6 = 0;
			return &fields[i];
		}
		if (fields[i].name6 && strcmp(fields[i].name6, name) == 0) {
			*v6 = 1;
			return &fields[i];
		}
	}
	return NULL;
}

int rm_report_parse_json(const char *text, struct rm_report *r, char *err, size_t errlen)
{
	uint8_t *base = (uint8_t *)r;
	int seen[NFIELDS] = { 0 };
	int family = 0, rc = -1, vlan_keys;
	json_error_t jerr;
	const char *name;
	json_t *root, *val;
	size_t i;

	memset(r, 0, sizeof(*r));
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fail(err, errlen, "JSON error at column %d: %s", jerr.column, jerr.text);
	if (!json_is_object(root)) {
		fail(err, errlen, "not a JSON object");
		goto out;
	}
	json_object_foreach(root, name, val) {
		int v6 = 0;
		const struct jfield *j = lookup(name, &v6);
		json_int_t x;
		uint64_t max;

		if (!j) {
			fail(err, errlen, "unknown key \"%s\"", name);
			goto out;
		}
		seen[j - fields] = 1;
		if (j->kind == J_SRC || j->kind == J_DST) {
			int fam = v6 ? 6 : 4;

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
		max = j->kind == J_U64 ? UINT64_MAX : j->kind == J_U32 ? UINT32_MAX : UINT16_MAX;
		if (x < 0 || (uint64_t)x > max) {
			fail(err, errlen, "\"%s\": %" JSON_INTEGER_FORMAT " out of range 0..%" PRIu64, name, x, max);
			goto out;
		}
		switch (j->kind) {
		case J_U16: {
			uint16_t v = x;
			memcpy(base + j->off, &v, 2);
			break;
		}
		case J_U32: {
			uint32_t v = x;
			memcpy(base + j->off, &v, 4);
			break;
		}
		case J_U64: {
			uint64_t v = x;
			memcpy(base + j->off, &v, 8);
			break;
		}
		default:
			r->vlan[j->kind == J_VLAN1] = x;
			r->has_vlan_ns = 1;
			break;
		}
	}
	for (i = 0; i < NFIELDS; i++) {
		if (!seen[i] && !is_vlan(&fields[i])) {
			fail(err, errlen, "missing key \"%s\"%s%s", fields[i].name,
			     fields[i].name6 ? " or " : "", fields[i].name6 ? fields[i].name6 : "");
			goto out;
		}
	}
	for (i = 0, vlan_keys = 0; i < NFIELDS; i++)
		vlan_keys += is_vlan(&fields[i]) && seen[i];
	if (vlan_keys == 1) {
		fail(err, errlen, "vlanId and dot1qCustomerVlanId go together");
		goto out;
	}
	r->family = family;
	rc = 0;
out:
	json_decref(root);
	return rc;
}
