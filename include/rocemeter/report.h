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

#include "seqobs.h"

/* Sizes of the companion's arrays: NAK codes 0..4 ([IBPKT] AETH), enum rm_nak_seq_psn. */
#define RM_REPORT_NAK_CODES     5
#define RM_REPORT_NAK_SEQ_KINDS 3

/* How the responses and CNPs of a request stream were paired with it (the requester's QP). */
enum rm_pairing {
	RM_PAIRING_NONE = 0,        /* not paired: no co-observed response or CNP counted */
	RM_PAIRING_PROVISIONED = 1, /* a provisioning line names the requester's QP */
	RM_PAIRING_LEARNED = 2,     /* learned from the wire (responses following this stream's PSNs) */
	RM_PAIRING_CM = 3,          /* RDMA CM REQ/REP named both QPs */
};

/* Where the PSN of a PSN-sequence-error NAK lies in the epoch when it arrives. */
enum rm_nak_seq_psn {
	RM_NAK_SEQ_NEVER_SEEN = 0, /* not retained as SEEN or PENDING (docs/meter.md "Co-observed counts") */
	RM_NAK_SEQ_PENDING = 1,    /* a PENDING position */
	RM_NAK_SEQ_SEEN = 2,       /* a SEEN position */
};

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

	/* The companion record (docs/ipfix-mapping.md "Companion record"): what
	 * the profile's 19 fields do not carry, beside them and never changing
	 * them. Cumulative over the epoch, like the profile's totals. */
	uint8_t has_companion;      /* 1: a companion record goes with this report */
	uint8_t pairing;            /* how responses were paired with this request stream: enum rm_pairing */
	uint32_t fill_distance_max; /* largest H - q at which a PENDING q was filled; 0: none, < W */
	/* filled positions by fill distance (RM_FILL_BUCKETS); their sum is filled */
	uint64_t fill_hist[RM_FILL_BUCKET_COUNT];
	uint64_t ecn_ce;                               /* requests with ECN CE in their IP header */
	uint64_t cnps;                                 /* CNPs toward the requester */
	uint64_t acks;                                 /* ACK responses (AETH syndrome ACK) */
	uint64_t rnr_naks;                             /* RNR NAK responses */
	uint64_t naks[RM_REPORT_NAK_CODES];            /* NAK responses by NAK code 0..4 ([IBPKT] AETH) */
	uint64_t nak_seq_psn[RM_REPORT_NAK_SEQ_KINDS]; /* code-0 NAKs by their PSN: enum rm_nak_seq_psn */
	uint64_t timeout_shapes;                       /* repeated requests with no NAK since the previous request */
};

/*
 * The counters of a report that add up across epochs: the daemons'
 * sequence counters per observation point (docs/metrics.md "Sequence
 * counters"). X(member, metric, help): member is the field of struct
 * rm_report, metric the name after rocemeter_meter_ or
 * rocemeter_collector_ (counters: _total appended). They count sequence
 * positions, not network events: an expired position is not a lost packet.
 */
#define RM_SEQ_TOTALS(X)                                                                                 \
	X(requests, "requests", "requests accounted to epochs (requestPacketTotalCount)")                \
	X(skipped, "skipped_positions", "positions that became PENDING (skippedPsnTotalCount)")          \
	X(filled, "filled_positions", "PENDING positions made SEEN (filledPsnTotalCount)")               \
	X(expired, "expired_positions", "PENDING positions that left the window (expiredPsnTotalCount)") \
	X(abandoned, "abandoned_positions", "PENDING positions at closure (abandonedPsnTotalCount)")     \
	X(repeated, "repeated_psns", "requests whose PSN was already SEEN (repeatedPsnTotalCount)")      \
	X(unclassified_late, "unclassified_late_requests",                                               \
	  "requests older than the window (unclassifiedLatePacketTotalCount)")

/* Sums of RM_SEQ_TOTALS over epochs. */
struct rm_seq_totals {
#define RM_SEQ_TOTAL_MEMBER_(member, metric, help) uint64_t member;
	RM_SEQ_TOTALS(RM_SEQ_TOTAL_MEMBER_)
#undef RM_SEQ_TOTAL_MEMBER_
};

/* The RM_SEQ_TOTALS fields of report r into *t. */
static inline void rm_seq_totals_of(struct rm_seq_totals *t, const struct rm_report *r)
{
#define RM_SEQ_TOTAL_COPY_(member, metric, help) t->member = r->member;
	RM_SEQ_TOTALS(RM_SEQ_TOTAL_COPY_)
#undef RM_SEQ_TOTAL_COPY_
}

/*
 * Add to *sum what report r of an epoch counts beyond *last, the totals
 * of the epoch's previous report (all 0 before its first), and make *last
 * r's. A total of one epoch never decreases ([SEQOBS] "Collector
 * Processing"), so the sum never goes back when an epoch closes and a new
 * one starts from 0; a field that did go back adds 0 (and *last keeps
 * the larger value).
 */
static inline void rm_seq_totals_advance(struct rm_seq_totals *sum, struct rm_seq_totals *last,
					 const struct rm_report *r)
{
#define RM_SEQ_TOTAL_ADD_(member, metric, help)          \
	if (r->member > last->member) {                  \
		sum->member += r->member - last->member; \
		last->member = r->member;                \
	}
	RM_SEQ_TOTALS(RM_SEQ_TOTAL_ADD_)
#undef RM_SEQ_TOTAL_ADD_
}

#endif /* ROCEMETER_REPORT_H */
