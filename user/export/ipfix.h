/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ipfix.h - IPFIX (RFC 7011) encoding of rocemeter reports for one
 * Transport Session and Observation Domain ([SEQOBS] "Export Profile and
 * Template"; field numbers and Template IDs in include/rocemeter/ipfix_ie.h;
 * the full mapping is docs/ipfix-mapping.md).
 *
 * The encoder only writes bytes into caller buffers; the transport (TCP +
 * TLS 1.3) sends them. Per session: rm_ipfix_reset(), then one
 * rm_ipfix_templates_msg() before any data, then rm_ipfix_data_msg() as
 * often as needed. Every multi-octet value on the wire is in network order.
 *
 * Data Templates (fields in [SEQOBS]'s example order, full-length encodings):
 *   observationPointId(138) src(8|27) dst(12|28) [vlanId(58)
 *   dot1qCustomerVlanId(245)] then the fourteen enterprise-specific IEs
 *   (enterprise bit + PEN) with flowStartMilliseconds(152) and
 *   flowEndMilliseconds(153) after rdmaPartitionKey.
 *
 * Sequence Number: the number of Data Records sent earlier in the session
 * and Observation Domain, modulo 2^32. Template and Options Template Records
 * never count; the Options Data Records of the Flow Keys advertisement are
 * Data Records (RFC 7011, section 3.1) and do count: after the templates
 * message the next Data message carries Sequence Number 2.
 */
#ifndef ROCEMETER_USER_IPFIX_H
#define ROCEMETER_USER_IPFIX_H

#include <stddef.h>
#include <stdint.h>

#include "rocemeter/ipfix_ie.h"
#include "rocemeter/report.h"

#define RM_IPFIX_MSG_HDR_LEN 16
#define RM_IPFIX_SET_HDR_LEN 4
#define RM_IPFIX_MSG_MAX     65535

/*
 * Template Record lengths (header 4 + 4 per IANA field + 8 per enterprise
 * field): 4 + 5*4 + 14*8 = 136; with the VLAN namespace keys 144. The same
 * for IPv4 and IPv6 (only field lengths differ).
 */
#define RM_IPFIX_TEMPLATE_RECORD_LEN      136
#define RM_IPFIX_TEMPLATE_RECORD_LEN_VLAN 144
/* Flow Keys Options Template Record: 6 + 2*4 = 14; its Options Data Record: 2 + 8 = 10. */
#define RM_IPFIX_FLOWKEYS_TEMPLATE_LEN 14
#define RM_IPFIX_FLOWKEYS_RECORD_LEN   10
/* flowKeyIndicator values: fields 1,2,3,4,5,8 (no VLAN) / 1..7,10 (VLAN). */
#define RM_IPFIX_FLOWKEYS      0x9fULL
#define RM_IPFIX_FLOWKEYS_VLAN 0x27fULL

#define RM_IPFIX_MAX_FIELDS 21

/*
 * Observation point names (Options Template 261, docs/ipfix-mapping.md):
 * scope observationPointId (138, 8 octets), field interfaceName (82, a
 * string of 64 octets: the NAME in UTF-8, NUL-padded). Template Record 6 +
 * 2*4 = 14, its Options Data Record 8 + 64 = 72.
 */
#define RM_IPFIX_POINTS_TEMPLATE_LEN 14
#define RM_IPFIX_POINT_NAME_LEN      64
#define RM_IPFIX_POINTS_RECORD_LEN   (8 + RM_IPFIX_POINT_NAME_LEN)
#define RM_IPFIX_MAX_POINTS          255 /* observation_point lines of an attachment (RM_OBS_MAX) */

/* One named observation point: its observationPointId and NAME (NUL-terminated). */
struct rm_ipfix_point {
	uint64_t id;
	char name[RM_IPFIX_POINT_NAME_LEN];
};

/* One Field Specifier of a Data Template, with where its value comes from. */
struct rm_ipfix_field {
	uint16_t ie;        /* Information Element number (without the enterprise bit) */
	uint16_t len;       /* octets on the wire */
	uint8_t enterprise; /* 1: enterprise-specific, PEN follows */
	uint8_t kind;       /* enum rm_ie_type of the value (internal) */
	uint16_t off;       /* offset in struct rm_report (internal) */
};

struct rm_ipfix_template {
	uint16_t tid; /* Template ID */
	uint16_t nfields;
	uint16_t record_len; /* Data Record octets */
	uint64_t flow_keys;  /* flowKeyIndicator */
	struct rm_ipfix_field f[RM_IPFIX_MAX_FIELDS];
};

struct rm_ipfix_encoder {
	uint32_t pen;                                      /* Private Enterprise Number of the enterprise IEs */
	uint32_t domain;                                   /* Observation Domain ID */
	int vlan_ns;                                       /* 1: Templates carry vlanId and dot1qCustomerVlanId */
	uint32_t sequence;                                 /* Data Records sent so far in the session (mod 2^32) */
	struct rm_ipfix_template tmpl[2];                  /* [0] IPv4, [1] IPv6 */
	struct rm_ipfix_point points[RM_IPFIX_MAX_POINTS]; /* rm_ipfix_add_point(), npoints of them */
	size_t npoints;
};

/* Set up an encoder (Sequence Number 0). vlan_ns: 0 or 1. */
void rm_ipfix_init(struct rm_ipfix_encoder *e, uint32_t pen, uint32_t observation_domain, int vlan_ns);

/* New Transport Session: Sequence Number back to 0. */
void rm_ipfix_reset(struct rm_ipfix_encoder *e);

/*
 * The session-start message: Template Set (IPv4 and IPv6 Data Templates),
 * Options Template Set (Flow Keys: scope templateId, field flowKeyIndicator)
 * and an Options Data Set with one Flow Keys record per Data Template.
 * export_time: UNIX seconds. Returns bytes written (334 without, 350 with
 * VLAN namespace), or 0 if cap is too small (nothing changed).
 */
size_t rm_ipfix_templates_msg(struct rm_ipfix_encoder *e, uint32_t export_time, uint8_t *buf, size_t cap);

/*
 * Name observation point id (nonzero) for rm_ipfix_points_msg(): name is
 * cut at RM_IPFIX_POINT_NAME_LEN - 1 octets. 0, or -1 when
 * RM_IPFIX_MAX_POINTS are named already.
 */
int rm_ipfix_add_point(struct rm_ipfix_encoder *e, uint64_t id, const char *name);

struct rm_capture_settings;
/* Every observation_point line of c (NULL: none) by rm_ipfix_add_point(): its ID and NAME. */
void rm_ipfix_add_points(struct rm_ipfix_encoder *e, const struct rm_capture_settings *c);

/*
 * The observation points' names, after the templates message of a session:
 * an Options Template Set (Template 261: scope observationPointId, field
 * interfaceName) and an Options Data Set with one record per point of
 * rm_ipfix_add_point(). Its records are Data Records: the Sequence Number
 * advances by their count. Returns bytes written (16 + 18 + 4 + 72 per
 * point), or 0 with nothing changed when no point is named or cap is too small.
 */
size_t rm_ipfix_points_msg(struct rm_ipfix_encoder *e, uint32_t export_time, uint8_t *buf, size_t cap);

/*
 * One Data message with as many of the n reports (in order) as fit in
 * min(cap, 65535) octets; one Data Set per run of reports of the same
 * family. Header Sequence Number = e->sequence, which then advances by the
 * records written. *used = reports consumed. Returns bytes written, or 0
 * with *used = 0 and errno set: EINVAL when r[0].family is not 4 or 6
 * (a later bad report just ends the message before it), ENOSPC when not even
 * one record fits, ENODATA when n is 0. r->has_vlan_ns is not consulted:
 * the encoder's vlan_ns decides whether r->vlan is exported.
 */
size_t rm_ipfix_data_msg(struct rm_ipfix_encoder *e, uint32_t export_time, const struct rm_report *r, size_t n,
			 size_t *used, uint8_t *buf, size_t cap);

/*
 * The Message that reports earlier Transport Sessions that died
 * (rocemeter's extension, ipfix_ie.h RM_TID_RELIABILITY): the Reliability
 * Options Template Set, then one Options Data Set of the n records r. Sent
 * after the Templates Message; the n records count in the Sequence Number.
 * Returns bytes written (16 + 38 + 4 + 58 n), or 0 if n is 0 or it does not
 * fit in min(cap, 65535) (nothing changed).
 */
size_t rm_ipfix_reliability_msg(struct rm_ipfix_encoder *e, uint32_t export_time, const struct rm_ipfix_reliability *r,
				size_t n, uint8_t *buf, size_t cap);

/* Template Record length in octets for family 4 or 6 (136, or 144 with VLAN keys); 0 if family is bad. */
size_t rm_ipfix_template_record_len(const struct rm_ipfix_encoder *e, int family);

/* Data Record length in octets for family 4 or 6 (120/144, 124/148 with VLAN keys); 0 if family is bad. */
size_t rm_ipfix_data_record_len(const struct rm_ipfix_encoder *e, int family);

#endif /* ROCEMETER_USER_IPFIX_H */
