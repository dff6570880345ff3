/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ipfix_ie.h - the IPFIX mapping of the profile (seed 000, "Export Profile
 * and Template", "Information Element Definitions", "IANA Considerations").
 *
 * Standard IEs keep their IANA numbers. rdmaDestinationQP, rdmaPartitionKey
 * (draft-lin-opsawg-ipfix-rocev2) and the twelve new IEs have no IANA
 * numbers; they are exported as enterprise-specific IEs (enterprise bit set)
 * under a PEN, default 32473 (RFC 5612, documentation), with the element
 * numbers below. These numbers are fixed for this project; docs/rocemeter-ie.xml
 * is the same mapping as a libfixbuf element file.
 */
#ifndef ROCEMETER_IPFIX_IE_H
#define ROCEMETER_IPFIX_IE_H

#define RM_IPFIX_VERSION 10
#define RM_IPFIX_PORT_TCP 4739
#define RM_IPFIX_PORT_TLS 4740
#define RM_IPFIX_DEFAULT_PEN 32473u

/* IANA standard Information Elements used by the profile. */
#define IE_VLAN_ID                   58  /* namespace key, outer VLAN (namespace = vlan) */
#define IE_SOURCE_IPV4_ADDRESS        8
#define IE_DESTINATION_IPV4_ADDRESS  12
#define IE_SOURCE_IPV6_ADDRESS       27
#define IE_DESTINATION_IPV6_ADDRESS  28
#define IE_OBSERVATION_POINT_ID     138
#define IE_TEMPLATE_ID              145
#define IE_FLOW_START_MILLISECONDS  152
#define IE_FLOW_END_MILLISECONDS    153
#define IE_FLOW_KEY_INDICATOR       173
#define IE_DOT1Q_CUSTOMER_VLAN_ID   245 /* namespace key, inner VLAN (namespace = vlan) */

/* Enterprise-specific elements under the configured PEN. */
#define RM_IE_RDMA_DESTINATION_QP             1  /* unsigned32, identifier */
#define RM_IE_RDMA_PARTITION_KEY              2  /* unsigned16, identifier */
#define RM_IE_RDMA_SEQUENCE_EPOCH_ID          3  /* unsigned64, identifier */
#define RM_IE_RDMA_SEQUENCE_REPORT_ID         4  /* unsigned64, identifier */
#define RM_IE_RDMA_SEQUENCE_WINDOW            5  /* unsigned32, quantity */
#define RM_IE_RDMA_SEQUENCE_FLAGS             6  /* unsigned16, flags */
#define RM_IE_SKIPPED_PSN_TOTAL_COUNT         7  /* unsigned64, totalCounter */
#define RM_IE_FILLED_PSN_TOTAL_COUNT          8  /* unsigned64, totalCounter */
#define RM_IE_EXPIRED_PSN_TOTAL_COUNT         9  /* unsigned64, totalCounter */
#define RM_IE_ABANDONED_PSN_TOTAL_COUNT      10  /* unsigned64, totalCounter */
#define RM_IE_PENDING_PSN_COUNT              11  /* unsigned32, quantity */
#define RM_IE_REPEATED_PSN_TOTAL_COUNT       12  /* unsigned64, totalCounter, packets */
#define RM_IE_REQUEST_PACKET_TOTAL_COUNT     13  /* unsigned64, totalCounter, packets */
#define RM_IE_UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT 14 /* unsigned64, totalCounter, packets */

/* Template IDs (no Template ID is reserved by the profile; these are ours). */
#define RM_TID_IPV4          256
#define RM_TID_IPV6          257
#define RM_TID_IPV4_VLAN     258 /* namespace = vlan */
#define RM_TID_IPV6_VLAN     259
#define RM_TID_FLOW_KEYS     260 /* Options Template: scope templateId, flowKeyIndicator */

/* Data Record lengths with full-length encodings (seed 000). */
#define RM_RECORD_LEN_IPV4 120
#define RM_RECORD_LEN_IPV6 144

#endif /* ROCEMETER_IPFIX_IE_H */
