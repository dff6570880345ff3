/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ipfix_ie.h - the IPFIX mapping of the profile ([SEQOBS] "Export Profile
 * and Template", "Information Element Definitions", "IANA Considerations").
 *
 * Standard IEs keep their IANA numbers. rdmaDestinationQP, rdmaPartitionKey
 * (draft-lin-opsawg-ipfix-rocev2) and the twelve new IEs have no IANA
 * numbers; they are exported as enterprise-specific IEs (enterprise bit set)
 * under a PEN, default 32473 (RFC 5612, documentation), with the element
 * numbers below. These numbers are fixed for this project; docs/rocemeter-ie.xml
 * is the same mapping as a libfixbuf element file (tests/unit/test_ie_model.py
 * checks it against RM_IPFIX_IES).
 *
 * RM_IPFIX_IES(X) is the profile's information model: the IPFIX encoder
 * (user/export/ipfix.c), the collector's decoder (user/rules/ipfix_decode.c)
 * and the JSON Lines writer and parser (user/common/report_json.c) expand it.
 */
#ifndef ROCEMETER_IPFIX_IE_H
#define ROCEMETER_IPFIX_IE_H

#include "report.h"

#define RM_IPFIX_VERSION     10
#define RM_IPFIX_PORT_TCP    4739
#define RM_IPFIX_PORT_TLS    4740
#define RM_IPFIX_DEFAULT_PEN 32473u

/* IANA standard Information Elements used by the profile, and the Flow Keys Options Template's. */
#define IE_VLAN_ID                  58 /* namespace key, outer VLAN (namespace = vlan) */
#define IE_INTERFACE_NAME           82 /* string: an observation point's NAME (Options Template 261) */
#define IE_SOURCE_IPV4_ADDRESS      8
#define IE_DESTINATION_IPV4_ADDRESS 12
#define IE_SOURCE_IPV6_ADDRESS      27
#define IE_DESTINATION_IPV6_ADDRESS 28
#define IE_OBSERVATION_POINT_ID     138
#define IE_TEMPLATE_ID              145
#define IE_FLOW_START_MILLISECONDS  152
#define IE_FLOW_END_MILLISECONDS    153
#define IE_FLOW_KEY_INDICATOR       173
#define IE_DOT1Q_CUSTOMER_VLAN_ID   245 /* namespace key, inner VLAN (namespace = vlan) */

/*
 * IANA standard Information Elements of the Reliability Options Template
 * (RFC 7011 section 4.3 "Exporting Process Reliability Statistics",
 * docs/ipfix-mapping.md "What an earlier Transport Session delivered").
 */
#define IE_EXPORTED_OCTET_TOTAL_COUNT       40
#define IE_EXPORTED_MESSAGE_TOTAL_COUNT     41
#define IE_EXPORTED_FLOW_RECORD_TOTAL_COUNT 42
#define IE_EXPORTER_IPV6_ADDRESS            131
#define IE_EXPORTER_TRANSPORT_PORT          217

/* Enterprise-specific elements under the configured PEN (types and semantics: RM_IPFIX_IES). */
#define RM_IE_RDMA_DESTINATION_QP                  1
#define RM_IE_RDMA_PARTITION_KEY                   2
#define RM_IE_RDMA_SEQUENCE_EPOCH_ID               3
#define RM_IE_RDMA_SEQUENCE_REPORT_ID              4
#define RM_IE_RDMA_SEQUENCE_WINDOW                 5
#define RM_IE_RDMA_SEQUENCE_FLAGS                  6
#define RM_IE_SKIPPED_PSN_TOTAL_COUNT              7
#define RM_IE_FILLED_PSN_TOTAL_COUNT               8
#define RM_IE_EXPIRED_PSN_TOTAL_COUNT              9
#define RM_IE_ABANDONED_PSN_TOTAL_COUNT            10
#define RM_IE_PENDING_PSN_COUNT                    11
#define RM_IE_REPEATED_PSN_TOTAL_COUNT             12
#define RM_IE_REQUEST_PACKET_TOTAL_COUNT           13
#define RM_IE_UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT 14

/* The pen column of RM_IPFIX_IES: RM_IE_<pen> is 1 for enterprise-specific, and the number's name. */
#define RM_IE_IANA              0
#define RM_IE_PEN               1
#define RM_IE_NUMBER_IANA(stem) IE_##stem
#define RM_IE_NUMBER_PEN(stem)  RM_IE_##stem
#define RM_IE_NUMBER(stem, pen) RM_IE_NUMBER_##pen(stem)

/* Which Data Templates carry an element: its in column (see RM_IPFIX_IES). */
enum rm_ie_in {
	RM_IE_IN_ALL,  /* every Data Template */
	RM_IE_IN_IPV4, /* the IPv4 Templates (address family fixed per Template) */
	RM_IE_IN_IPV6, /* the IPv6 Templates */
	RM_IE_IN_VLAN, /* only the Templates with the VLAN namespace keys (namespace = vlan) */
};

/* Abstract data types (RFC 7012) the profile uses; RM_IE_T_<type column>. */
enum rm_ie_type {
	RM_IE_T_unsigned16,
	RM_IE_T_unsigned32,
	RM_IE_T_unsigned64,
	RM_IE_T_dateTimeMilliseconds, /* unsigned64 UNIX ms on the wire */
	RM_IE_T_ipv4Address,          /* octets in network order */
	RM_IE_T_ipv6Address,
};

/* 1 for the address types (octets kept in network order), 0 for the unsigned integers (host order). */
#define RM_IE_TYPE_IS_ADDRESS(t) ((t) == RM_IE_T_ipv4Address || (t) == RM_IE_T_ipv6Address)

/*
 * The profile's Information Elements ([SEQOBS] "Profile Fields in Example
 * Order", "Information Element Definitions"), one row each, in Template
 * order; the IPv4 and IPv6 address rows share their slot (a Template has
 * one family) and the VLAN rows appear only with namespace = vlan.
 *
 *   X(stem, name, pen, type, octets, semantics, units, key, in, member)
 *   stem       RM_PF_<stem> is the row's index (enum rm_pf); the element
 *              number is IE_<stem> (IANA) or RM_IE_<stem> (PEN), above
 *   name       the IE name (IANA registry; [SEQOBS] for the new ones)
 *   pen        IANA: a standard element; PEN: enterprise-specific, under
 *              the configured PEN (RM_IE_NUMBER(stem, pen) is the number)
 *   type       abstract data type (enum rm_ie_type RM_IE_T_<type>)
 *   octets     the full-length encoding, the only one exported and accepted
 *   semantics  data type semantics (RFC 7012; "default" where IANA has none)
 *   units      units ("none" where the registry has none)
 *   key        1: a Flow Key, part of the record key; 0: not
 *   in         RM_IE_IN_<in>: which Data Templates carry it
 *   member     the struct rm_report field (include/rocemeter/report.h)
 * Adding an element: its number above, one row here, one field in
 * struct rm_report, one record in docs/rocemeter-ie.xml if enterprise.
 */
#define RM_IPFIX_IES(X)                                                                                               \
	X(OBSERVATION_POINT_ID, "observationPointId", IANA, unsigned64, 8, identifier, none, 1, ALL,                  \
	  observation_point_id)                                                                                       \
	X(SOURCE_IPV4_ADDRESS, "sourceIPv4Address", IANA, ipv4Address, 4, default, none, 1, IPV4, src)                \
	X(DESTINATION_IPV4_ADDRESS, "destinationIPv4Address", IANA, ipv4Address, 4, default, none, 1, IPV4, dst)      \
	X(SOURCE_IPV6_ADDRESS, "sourceIPv6Address", IANA, ipv6Address, 16, default, none, 1, IPV6, src)               \
	X(DESTINATION_IPV6_ADDRESS, "destinationIPv6Address", IANA, ipv6Address, 16, default, none, 1, IPV6, dst)     \
	X(VLAN_ID, "vlanId", IANA, unsigned16, 2, identifier, none, 1, VLAN, vlan[0])                                 \
	X(DOT1Q_CUSTOMER_VLAN_ID, "dot1qCustomerVlanId", IANA, unsigned16, 2, identifier, none, 1, VLAN, vlan[1])     \
	X(RDMA_DESTINATION_QP, "rdmaDestinationQP", PEN, unsigned32, 4, identifier, none, 1, ALL, dest_qp)            \
	X(RDMA_PARTITION_KEY, "rdmaPartitionKey", PEN, unsigned16, 2, identifier, none, 1, ALL, pkey)                 \
	X(FLOW_START_MILLISECONDS, "flowStartMilliseconds", IANA, dateTimeMilliseconds, 8, default, milliseconds, 0,  \
	  ALL, flow_start_ms)                                                                                         \
	X(FLOW_END_MILLISECONDS, "flowEndMilliseconds", IANA, dateTimeMilliseconds, 8, default, milliseconds, 0, ALL, \
	  flow_end_ms)                                                                                                \
	X(RDMA_SEQUENCE_EPOCH_ID, "rdmaSequenceEpochId", PEN, unsigned64, 8, identifier, none, 1, ALL, epoch_id)      \
	X(RDMA_SEQUENCE_REPORT_ID, "rdmaSequenceReportId", PEN, unsigned64, 8, identifier, none, 0, ALL, report_id)   \
	X(RDMA_SEQUENCE_WINDOW, "rdmaSequenceWindow", PEN, unsigned32, 4, quantity, none, 0, ALL, window)             \
	X(RDMA_SEQUENCE_FLAGS, "rdmaSequenceFlags", PEN, unsigned16, 2, flags, none, 0, ALL, flags)                   \
	X(SKIPPED_PSN_TOTAL_COUNT, "skippedPsnTotalCount", PEN, unsigned64, 8, totalCounter, none, 0, ALL, skipped)   \
	X(FILLED_PSN_TOTAL_COUNT, "filledPsnTotalCount", PEN, unsigned64, 8, totalCounter, none, 0, ALL, filled)      \
	X(EXPIRED_PSN_TOTAL_COUNT, "expiredPsnTotalCount", PEN, unsigned64, 8, totalCounter, none, 0, ALL, expired)   \
	X(ABANDONED_PSN_TOTAL_COUNT, "abandonedPsnTotalCount", PEN, unsigned64, 8, totalCounter, none, 0, ALL,        \
	  abandoned)                                                                                                  \
	X(PENDING_PSN_COUNT, "pendingPsnCount", PEN, unsigned32, 4, quantity, none, 0, ALL, pending)                  \
	X(REPEATED_PSN_TOTAL_COUNT, "repeatedPsnTotalCount", PEN, unsigned64, 8, totalCounter, packets, 0, ALL,       \
	  repeated)                                                                                                   \
	X(REQUEST_PACKET_TOTAL_COUNT, "requestPacketTotalCount", PEN, unsigned64, 8, totalCounter, packets, 0, ALL,   \
	  requests)                                                                                                   \
	X(UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT, "unclassifiedLatePacketTotalCount", PEN, unsigned64, 8, totalCounter, \
	  packets, 0, ALL, unclassified_late)

/* Every consumer copies an integer (2, 4 or 8 octets) from or into a member of
 * its size, an address from or into a member at least as long. */
#define RM_IE_MEMBER_SIZE_(member) sizeof(((struct rm_report *)0)->member)
#define RM_IE_FITS_(stem, name, pen, type, octets, sem, units, key, in, member)             \
	_Static_assert(RM_IE_TYPE_IS_ADDRESS(RM_IE_T_##type)                                \
			       ? (octets) <= RM_IE_MEMBER_SIZE_(member)                     \
			       : (octets) == RM_IE_MEMBER_SIZE_(member) &&                  \
					 ((octets) == 2 || (octets) == 4 || (octets) == 8), \
		       name ": its octets do not fit struct rm_report." #member);
RM_IPFIX_IES(RM_IE_FITS_)
#undef RM_IE_FITS_
#undef RM_IE_MEMBER_SIZE_

/* Row indices of RM_IPFIX_IES. */
#define RM_PF_ENUM_(stem, ...) RM_PF_##stem,
enum rm_pf {
	RM_IPFIX_IES(RM_PF_ENUM_) RM_PF__COUNT,
};
#undef RM_PF_ENUM_

/* The IE name of row f (a string literal), or NULL for an index out of the table. */
static inline const char *rm_pf_name(enum rm_pf f)
{
	switch (f) {
#define RM_PF_NAME_(stem, name, ...) \
	case RM_PF_##stem:           \
		return name;
		RM_IPFIX_IES(RM_PF_NAME_)
#undef RM_PF_NAME_
	default:
		return NULL;
	}
}

/* Template IDs (no Template ID is reserved by the profile; these are ours). */
#define RM_TID_IPV4        256
#define RM_TID_IPV6        257
#define RM_TID_IPV4_VLAN   258 /* namespace = vlan */
#define RM_TID_IPV6_VLAN   259
#define RM_TID_FLOW_KEYS   260 /* Options Template: scope templateId, flowKeyIndicator */
#define RM_TID_RELIABILITY 261 /* Options Template: what an earlier Transport Session delivered (below) */
#define RM_TID_OBS_POINTS  262 /* Options Template: scope observationPointId, interfaceName (the point's NAME) */

/*
 * rocemeter's own extension (docs/ipfix-mapping.md "What an earlier
 * Transport Session delivered"): in the Transport Session after one that
 * died, the exporter sends, right after its Templates Message, a Message
 * with the Options Template RM_TID_RELIABILITY and one Options Data Record
 * per earlier session that died:
 *   scope exporterIPv6Address(131, 16 octets; an IPv4 address IPv4-mapped)
 *         exporterTransportPort(217, 2): the exporter's end of the dead
 *         session's TCP connection, as the collector saw it as its peer;
 *   flowStartMilliseconds(152), flowEndMilliseconds(153): when that session
 *         was established and when it died (UNIX ms, the exporter's clock);
 *   exportedMessageTotalCount(41), exportedFlowRecordTotalCount(42),
 *   exportedOctetTotalCount(40): of what that session sent, the IPFIX
 *         Messages the collector's kernel acknowledged entirely (TCP), their
 *         Data Records of the profile's Data Templates (Options Data Records
 *         not counted) and their octets (Message lengths, before TLS).
 * Other collectors ignore an Options Template they do not know.
 */
#define RM_RELIABILITY_TEMPLATE_LEN 34 /* Options Template Record: 6 + 7 * 4 */
#define RM_RELIABILITY_RECORD_LEN   58 /* 16 + 2 + 5 * 8 */

/* One Reliability Options Data Record, host order. */
struct rm_ipfix_reliability {
	uint8_t exporter_addr[16]; /* network order; IPv4 as ::ffff:a.b.c.d */
	uint16_t exporter_port;
	uint64_t started_ms, ended_ms;
	uint64_t messages, records, octets;
};

/* Data Record lengths with full-length encodings ([SEQOBS]). */
#define RM_RECORD_LEN_IPV4 120
#define RM_RECORD_LEN_IPV6 144

#endif /* ROCEMETER_IPFIX_IE_H */
