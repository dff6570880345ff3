// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ipfix.c - IPFIX message encoding of reports (RFC 7011; [SEQOBS] "Export
 * Profile and Template"). The Data Templates are built once from the
 * profile's information model (RM_IPFIX_IES in rocemeter/ipfix_ie.h); the
 * same rows drive the Template Records, the Flow Keys and the Data Records,
 * so they cannot disagree.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/capture_settings.h"
#include "ipfix.h"

#define SET_ID_TEMPLATE         2
#define SET_ID_OPTIONS_TEMPLATE 3

struct profile_field {
	uint16_t ie;
	uint8_t enterprise;
	uint8_t type; /* enum rm_ie_type */
	uint16_t len;
	uint16_t off;
	uint8_t key; /* a Flow Key */
	uint8_t in;  /* enum rm_ie_in: which Templates carry it */
};

#define FIELD_(stem, name, pen, type, octets, sem, units, key, in, member) \
	{ RM_IE_NUMBER(stem, pen),                                         \
	  RM_IE_##pen,                                                     \
	  RM_IE_T_##type,                                                  \
	  octets,                                                          \
	  offsetof(struct rm_report, member),                              \
	  key,                                                             \
	  RM_IE_IN_##in },
static const struct profile_field profile[] = { RM_IPFIX_IES(FIELD_) };
#undef FIELD_

/* The IPv4 Template with the VLAN keys is the longest: every row but the IPv6 addresses. */
#define IN_V4_(stem, name, pen, type, octets, sem, units, key, in, member) +(RM_IE_IN_##in != RM_IE_IN_IPV6)
_Static_assert((0 RM_IPFIX_IES(IN_V4_)) == RM_IPFIX_MAX_FIELDS, "field table size");
#undef IN_V4_

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
	return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	return put32(p + 4, (uint32_t)v);
}

static void build(struct rm_ipfix_template *t, int v6, int vlan_ns)
{
	uint16_t n = 0, len = 0;
	size_t i;

	memset(t, 0, sizeof(*t));
	t->tid = v6 ? (vlan_ns ? RM_TID_IPV6_VLAN : RM_TID_IPV6) : (vlan_ns ? RM_TID_IPV4_VLAN : RM_TID_IPV4);
	for (i = 0; i < sizeof(profile) / sizeof(profile[0]); i++) {
		const struct profile_field *p = &profile[i];
		struct rm_ipfix_field *f = &t->f[n];

		if ((p->in == RM_IE_IN_VLAN && !vlan_ns) || (p->in == RM_IE_IN_IPV4 && v6) ||
		    (p->in == RM_IE_IN_IPV6 && !v6))
			continue;
		f->ie = p->ie;
		f->enterprise = p->enterprise;
		f->kind = p->type;
		f->off = p->off;
		f->len = p->len;
		if (p->key)
			t->flow_keys |= 1ULL << n; /* bit n marks the (n+1)-th field */
		len += f->len;
		n++;
	}
	t->nfields = n;
	t->record_len = len;
}

void rm_ipfix_init(struct rm_ipfix_encoder *e, uint32_t pen, uint32_t observation_domain, int vlan_ns)
{
	memset(e, 0, sizeof(*e));
	e->pen = pen;
	e->domain = observation_domain;
	e->vlan_ns = !!vlan_ns;
	build(&e->tmpl[0], 0, e->vlan_ns);
	build(&e->tmpl[1], 1, e->vlan_ns);
}

void rm_ipfix_reset(struct rm_ipfix_encoder *e)
{
	e->sequence = 0;
}

static const struct rm_ipfix_template *tmpl_of(const struct rm_ipfix_encoder *e, int family)
{
	if (family == 4)
		return &e->tmpl[0];
	if (family == 6)
		return &e->tmpl[1];
	return NULL;
}

size_t rm_ipfix_template_record_len(const struct rm_ipfix_encoder *e, int family)
{
	const struct rm_ipfix_template *t = tmpl_of(e, family);
	size_t len = 4;
	int i;

	if (!t)
		return 0;
	for (i = 0; i < t->nfields; i++)
		len += t->f[i].enterprise ? 8 : 4;
	return len;
}

size_t rm_ipfix_data_record_len(const struct rm_ipfix_encoder *e, int family)
{
	const struct rm_ipfix_template *t = tmpl_of(e, family);

	return t ? t->record_len : 0;
}

static uint8_t *put_header(uint8_t *p, uint16_t len, uint32_t export_time, uint32_t seq, uint32_t domain)
{
	p = put16(p, RM_IPFIX_VERSION);
	p = put16(p, len);
	p = put32(p, export_time);
	p = put32(p, seq);
	return put32(p, domain);
}

size_t rm_ipfix_templates_msg(struct rm_ipfix_encoder *e, uint32_t export_time, uint8_t *buf, size_t cap)
{
	size_t total = RM_IPFIX_MSG_HDR_LEN + RM_IPFIX_SET_HDR_LEN;
	uint8_t *p = buf + RM_IPFIX_MSG_HDR_LEN, *set;
	int k, i;

	for (k = 0; k < 2; k++)
		total += rm_ipfix_template_record_len(e, k ? 6 : 4);
	total += RM_IPFIX_SET_HDR_LEN + RM_IPFIX_FLOWKEYS_TEMPLATE_LEN;
	total += RM_IPFIX_SET_HDR_LEN + 2 * RM_IPFIX_FLOWKEYS_RECORD_LEN;
	if (cap < total)
		return 0;

	/* Template Set: both Data Templates. */
	set = p;
	p += RM_IPFIX_SET_HDR_LEN;
	for (k = 0; k < 2; k++) {
		const struct rm_ipfix_template *t = &e->tmpl[k];

		p = put16(p, t->tid);
		p = put16(p, t->nfields);
		for (i = 0; i < t->nfields; i++) {
			const struct rm_ipfix_field *f = &t->f[i];

			p = put16(p, f->ie | (f->enterprise ? 0x8000 : 0));
			p = put16(p, f->len);
			if (f->enterprise)
				p = put32(p, e->pen);
		}
	}
	put16(set, SET_ID_TEMPLATE);
	put16(set + 2, p - set);

	/* Options Template Set: Flow Keys (scope templateId, field flowKeyIndicator). */
	set = p;
	p = put16(p, SET_ID_OPTIONS_TEMPLATE);
	p = put16(p, RM_IPFIX_SET_HDR_LEN + RM_IPFIX_FLOWKEYS_TEMPLATE_LEN);
	p = put16(p, RM_TID_FLOW_KEYS);
	p = put16(p, 2); /* Field Count */
	p = put16(p, 1); /* Scope Field Count */
	p = put16(p, IE_TEMPLATE_ID);
	p = put16(p, 2);
	p = put16(p, IE_FLOW_KEY_INDICATOR);
	p = put16(p, 8);

	/* Options Data Set: one Flow Keys record per Data Template. */
	p = put16(p, RM_TID_FLOW_KEYS);
	p = put16(p, RM_IPFIX_SET_HDR_LEN + 2 * RM_IPFIX_FLOWKEYS_RECORD_LEN);
	for (k = 0; k < 2; k++) {
		p = put16(p, e->tmpl[k].tid);
		p = put64(p, e->tmpl[k].flow_keys);
	}

	put_header(buf, total, export_time, e->sequence, e->domain);
	e->sequence += 2; /* the two Options Data Records */
	return total;
}

/* Every observation_point line fits: its NAME whole in the field, every line a record. */
_Static_assert(RM_OBS_NAME_LEN <= RM_IPFIX_POINT_NAME_LEN, "an observation point's NAME is cut on the wire");
_Static_assert(RM_OBS_MAX <= RM_IPFIX_MAX_POINTS, "observation_point lines without a name record");

int rm_ipfix_add_point(struct rm_ipfix_encoder *e, uint64_t id, const char *name)
{
	struct rm_ipfix_point *pt;

	if (e->npoints >= RM_IPFIX_MAX_POINTS)
		return -1;
	pt = &e->points[e->npoints++];
	memset(pt, 0, sizeof(*pt));
	pt->id = id;
	snprintf(pt->name, sizeof(pt->name), "%s", name ? name : "");
	return 0;
}

void rm_ipfix_add_points(struct rm_ipfix_encoder *e, const struct rm_capture_settings *c)
{
	for (int i = 0; c && i < c->n_points; i++)
		rm_ipfix_add_point(e, c->points[i].id, c->points[i].name);
}

size_t rm_ipfix_points_msg(struct rm_ipfix_encoder *e, uint32_t export_time, uint8_t *buf, size_t cap)
{
	size_t total = RM_IPFIX_MSG_HDR_LEN + RM_IPFIX_SET_HDR_LEN + RM_IPFIX_POINTS_TEMPLATE_LEN +
		       RM_IPFIX_SET_HDR_LEN + e->npoints * RM_IPFIX_POINTS_RECORD_LEN;
	uint8_t *p = buf + RM_IPFIX_MSG_HDR_LEN;

	if (!e->npoints || cap < total)
		return 0;
	/* Options Template Set: scope observationPointId, field interfaceName (the NAME). */
	p = put16(p, SET_ID_OPTIONS_TEMPLATE);
	p = put16(p, RM_IPFIX_SET_HDR_LEN + RM_IPFIX_POINTS_TEMPLATE_LEN);
	p = put16(p, RM_TID_OBS_POINTS);
	p = put16(p, 2); /* Field Count */
	p = put16(p, 1); /* Scope Field Count */
	p = put16(p, IE_OBSERVATION_POINT_ID);
	p = put16(p, 8);
	p = put16(p, IE_INTERFACE_NAME);
	p = put16(p, RM_IPFIX_POINT_NAME_LEN);
	/* Options Data Set: one record per named point. */
	p = put16(p, RM_TID_OBS_POINTS);
	p = put16(p, (uint16_t)(RM_IPFIX_SET_HDR_LEN + e->npoints * RM_IPFIX_POINTS_RECORD_LEN));
	for (size_t i = 0; i < e->npoints; i++) {
		p = put64(p, e->points[i].id);
		memcpy(p, e->points[i].name, RM_IPFIX_POINT_NAME_LEN); /* NUL-padded */
		p += RM_IPFIX_POINT_NAME_LEN;
	}
	put_header(buf, total, export_time, e->sequence, e->domain);
	e->sequence += (uint32_t)e->npoints;
	return total;
}

static uint8_t *put_record(uint8_t *p, const struct rm_ipfix_template *t, const struct rm_report *r)
{
	const uint8_t *base = (const uint8_t *)r;
	int i;

	for (i = 0; i < t->nfields; i++) {
		const struct rm_ipfix_field *f = &t->f[i];
		uint16_t v16;
		uint32_t v32;
		uint64_t v64;

		switch (f->kind) {
		case RM_IE_T_unsigned16:
			memcpy(&v16, base + f->off, 2);
			p = put16(p, v16);
			break;
		case RM_IE_T_unsigned32:
			memcpy(&v32, base + f->off, 4);
			p = put32(p, v32);
			break;
		case RM_IE_T_unsigned64:
		case RM_IE_T_dateTimeMilliseconds:
			memcpy(&v64, base + f->off, 8);
			p = put64(p, v64);
			break;
		default: /* addresses: network order already */
			memcpy(p, base + f->off, f->len);
			p += f->len;
			break;
		}
	}
	return p;
}

size_t rm_ipfix_data_msg(struct rm_ipfix_encoder *e, uint32_t export_time, const struct rm_report *r, size_t n,
			 size_t *used, uint8_t *buf, size_t cap)
{
	size_t limit = cap < RM_IPFIX_MSG_MAX ? cap : RM_IPFIX_MSG_MAX;
	size_t off = RM_IPFIX_MSG_HDR_LEN, i = 0;
	uint32_t records = 0;

	*used = 0;
	if (n == 0) {
		errno = ENODATA;
		return 0;
	}
	if (!tmpl_of(e, r[0].family)) {
		errno = EINVAL;
		return 0;
	}
	while (i < n) {
		const struct rm_ipfix_template *t = tmpl_of(e, r[i].family);
		size_t set = off;

		if (!t || off + RM_IPFIX_SET_HDR_LEN + t->record_len > limit)
			break;
		off += RM_IPFIX_SET_HDR_LEN;
		while (i < n && tmpl_of(e, r[i].family) == t && off + t->record_len <= limit) {
			put_record(buf + off, t, &r[i]);
			off += t->record_len;
			i++;
			records++;
		}
		put16(buf + set, t->tid);
		put16(buf + set + 2, off - set);
	}
	if (records == 0) {
		errno = ENOSPC;
		return 0;
	}
	put_header(buf, off, export_time, e->sequence, e->domain);
	e->sequence += records;
	*used = i;
	return off;
}

/* The Reliability Options Template's Field Specifiers (ipfix_ie.h), scope first. */
static const uint16_t reliability_fields[][2] = {
	{ IE_EXPORTER_IPV6_ADDRESS, 16 },       { IE_EXPORTER_TRANSPORT_PORT, 2 },
	{ IE_FLOW_START_MILLISECONDS, 8 },      { IE_FLOW_END_MILLISECONDS, 8 },
	{ IE_EXPORTED_MESSAGE_TOTAL_COUNT, 8 }, { IE_EXPORTED_FLOW_RECORD_TOTAL_COUNT, 8 },
	{ IE_EXPORTED_OCTET_TOTAL_COUNT, 8 },
};
#define RELIABILITY_SCOPE 2

size_t rm_ipfix_reliability_msg(struct rm_ipfix_encoder *e, uint32_t export_time, const struct rm_ipfix_reliability *r,
				size_t n, uint8_t *buf, size_t cap)
{
	size_t total = RM_IPFIX_MSG_HDR_LEN + RM_IPFIX_SET_HDR_LEN + RM_RELIABILITY_TEMPLATE_LEN +
		       RM_IPFIX_SET_HDR_LEN + n * RM_RELIABILITY_RECORD_LEN;
	size_t nf = sizeof(reliability_fields) / sizeof(reliability_fields[0]);
	uint8_t *p = buf + RM_IPFIX_MSG_HDR_LEN;

	_Static_assert(6 + sizeof(reliability_fields) / sizeof(reliability_fields[0]) * 4 ==
			       RM_RELIABILITY_TEMPLATE_LEN,
		       "RM_RELIABILITY_TEMPLATE_LEN");
	if (!n || total > cap || total > RM_IPFIX_MSG_MAX)
		return 0;
	p = put16(p, SET_ID_OPTIONS_TEMPLATE);
	p = put16(p, RM_IPFIX_SET_HDR_LEN + RM_RELIABILITY_TEMPLATE_LEN);
	p = put16(p, RM_TID_RELIABILITY);
	p = put16(p, (uint16_t)nf);
	p = put16(p, RELIABILITY_SCOPE);
	for (size_t i = 0; i < nf; i++) {
		p = put16(p, reliability_fields[i][0]);
		p = put16(p, reliability_fields[i][1]);
	}
	p = put16(p, RM_TID_RELIABILITY);
	p = put16(p, (uint16_t)(RM_IPFIX_SET_HDR_LEN + n * RM_RELIABILITY_RECORD_LEN));
	for (size_t i = 0; i < n; i++) {
		memcpy(p, r[i].exporter_addr, 16);
		p = put16(p + 16, r[i].exporter_port);
		p = put64(p, r[i].started_ms);
		p = put64(p, r[i].ended_ms);
		p = put64(p, r[i].messages);
		p = put64(p, r[i].records);
		p = put64(p, r[i].octets);
	}
	put_header(buf, (uint16_t)total, export_time, e->sequence, e->domain);
	e->sequence += (uint32_t)n; /* Options Data Records count (RFC 7011, section 3.1) */
	return total;
}
