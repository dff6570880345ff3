// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ipfix.c - IPFIX message encoding of reports (RFC 7011; seed 000 "Export
 * Profile and Template"). The Data Templates are built once from the
 * profile's field list below; the same list drives the Template Records,
 * the Flow Keys and the Data Records, so they cannot disagree.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "ipfix.h"

#define SET_ID_TEMPLATE 2
#define SET_ID_OPTIONS_TEMPLATE 3

enum field_kind { K_U16, K_U32, K_U64, K_SRC, K_DST, K_VLAN0, K_VLAN1 };

struct profile_field {
	uint16_t ie;
	uint8_t enterprise;
	uint8_t kind;
	uint16_t off;
	uint8_t key;      /* a Flow Key */
	uint8_t vlan_only; /* namespace key, only with vlan_ns */
};

#define STD(ie, kind, field, key) { ie, 0, kind, offsetof(struct rm_report, field), key, 0 }
#define ENT(ie, kind, field, key) { ie, 1, kind, offsetof(struct rm_report, field), key, 0 }

/*
 * The profile's fields in the seed's example order. The IE numbers of the
 * address fields are family-specific (IPv4 number here, IPv6 in build()).
 */
static const struct profile_field profile[] = {
	STD(IE_OBSERVATION_POINT_ID, K_U64, observation_point_id, 1),
	STD(IE_SOURCE_IPV4_ADDRESS, K_SRC, src, 1),
	STD(IE_DESTINATION_IPV4_ADDRESS, K_DST, dst, 1),
	{ IE_VLAN_ID, 0, K_VLAN0, offsetof(struct rm_report, vlan), 1, 1 },
	{ IE_DOT1Q_CUSTOMER_VLAN_ID, 0, K_VLAN1, offsetof(struct rm_report, vlan), 1, 1 },
	ENT(RM_IE_RDMA_DESTINATION_QP, K_U32, dest_qp, 1),
	ENT(RM_IE_RDMA_PARTITION_KEY, K_U16, pkey, 1),
	STD(IE_FLOW_START_MILLISECONDS, K_U64, flow_start_ms, 0),
	STD(IE_FLOW_END_MILLISECONDS, K_U64, flow_end_ms, 0),
	ENT(RM_IE_RDMA_SEQUENCE_EPOCH_ID, K_U64, epoch_id, 1),
	ENT(RM_IE_RDMA_SEQUENCE_REPORT_ID, K_U64, report_id, 0),
	ENT(RM_IE_RDMA_SEQUENCE_WINDOW, K_U32, window, 0),
	ENT(RM_IE_RDMA_SEQUENCE_FLAGS, K_U16, flags, 0),
	ENT(RM_IE_SKIPPED_PSN_TOTAL_COUNT, K_U64, skipped, 0),
	ENT(RM_IE_FILLED_PSN_TOTAL_COUNT, K_U64, filled, 0),
	ENT(RM_IE_EXPIRED_PSN_TOTAL_COUNT, K_U64, expired, 0),
	ENT(RM_IE_ABANDONED_PSN_TOTAL_COUNT, K_U64, abandoned, 0),
	ENT(RM_IE_PENDING_PSN_COUNT, K_U32, pending, 0),
	ENT(RM_IE_REPEATED_PSN_TOTAL_COUNT, K_U64, repeated, 0),
	ENT(RM_IE_REQUEST_PACKET_TOTAL_COUNT, K_U64, requests, 0),
	ENT(RM_IE_UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT, K_U64, unclassified_late, 0),
};

_Static_assert(sizeof(profile) / sizeof(profile[0]) == RM_IPFIX_MAX_FIELDS, "field table size");

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

static uint16_t kind_len(uint8_t kind, int v6)
{
	switch (kind) {
	case K_U16: case K_VLAN0: case K_VLAN1: return 2;
	case K_U32: return 4;
	case K_U64: return 8;
	default: return v6 ? 16 : 4; /* K_SRC, K_DST */
	}
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

		if (p->vlan_only && !vlan_ns)
			continue;
		f->ie = p->ie;
		if (v6 && p->kind == K_SRC)
			f->ie = IE_SOURCE_IPV6_ADDRESS;
		if (v6 && p->kind == K_DST)
			f->ie = IE_DESTINATION_IPV6_ADDRESS;
		f->enterprise = p->enterprise;
		f->kind = p->kind;
		f->off = p->off;
		f->len = kind_len(p->kind, v6);
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
		case K_U16:
			memcpy(&v16, base + f->off, 2);
			p = put16(p, v16);
			break;
		case K_U32:
			memcpy(&v32, base + f->off, 4);
			p = put32(p, v32);
			break;
		case K_U64:
			memcpy(&v64, base + f->off, 8);
			p = put64(p, v64);
			break;
		case K_VLAN0:
			p = put16(p, r->vlan[0]);
			break;
		case K_VLAN1:
			p = put16(p, r->vlan[1]);
			break;
		default: /* K_SRC, K_DST: network order already */
			memcpy(p, base + f->off, f->len);
			p += f->len;
			break;
		}
	}
	return p;
}

size_t rm_ipfix_data_msg(struct rm_ipfix_encoder *e, uint32_t export_time, const struct rm_report *r,
			 size_t n, size_t *used, uint8_t *buf, size_t cap)
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
