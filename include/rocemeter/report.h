/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report.h - one report ([SEQOBS] "Export Profile and Template"): an atomic
 * snapshot of one epoch with its full key and exporter-allocated IDs, in
 * host order, times already in UNIX milliseconds. Userspace only: replay's
 * JSON writer, the IPFIX encoder and the collector's decoder all use it.
 */
#ifndef ROCEMETER_REPORT_H
#define ROCEMETER_REPORT_H

#include <stdint.h>

struct rm_report {
	uint64_t observation_point_id; /* observationPointId */
	uint8_t family;                /* 4 or 6: which Template */
	uint8_t src[16];               /* sourceIPv4Address (first 4 bytes) / sourceIPv6Address, network order */
	uint8_t dst[16];               /* destinationIPv4Address / destinationIPv6Address, network order */
	uint16_t vlan[2];              /* namespace keys when namespace = vlan (outer, inner), else 0 */
	uint8_t has_vlan_ns;           /* 1: the Template carries the VLAN namespace keys */
	uint32_t dest_qp;              /* rdmaDestinationQP, upper 8 bits zero */
	uint16_t pkey;                 /* rdmaPartitionKey */
	uint64_t flow_start_ms;        /* flowStartMilliseconds, UNIX ms */
	uint64_t flow_end_ms;          /* flowEndMilliseconds, UNIX ms */
	uint64_t epoch_id;             /* rdmaSequenceEpochId, nonzero */
	uint64_t report_id;            /* rdmaSequenceReportId, from 1 */
	uint32_t window;               /* rdmaSequenceWindow, 1..4194304 */
	uint16_t flags;                /* rdmaSequenceFlags (RM_FLAG_*) */
	uint64_t skipped;              /* skippedPsnTotalCount */
	uint64_t filled;               /* filledPsnTotalCount */
	uint64_t expired;              /* expiredPsnTotalCount */
	uint64_t abandoned;            /* abandonedPsnTotalCount */
	uint32_t pending;              /* pendingPsnCount */
	uint64_t repeated;             /* repeatedPsnTotalCount */
	uint64_t requests;             /* requestPacketTotalCount */
	uint64_t unclassified_late;    /* unclassifiedLatePacketTotalCount */
};

#endif /* ROCEMETER_REPORT_H */
