/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * reporter.h - turn epoch snapshots from the meter into reports (struct
 * rm_report) for one Transport Session and Observation Domain: allocate
 * rdmaSequenceEpochId / rdmaSequenceReportId at serialization (user/export/ids.c),
 * qualify with generationUnverified, convert times to UNIX milliseconds,
 * and hand each report to a sink (JSON Lines, IPFIX file, exporter, text).
 * Also walks the open contexts for periodic and closing reports.
 * Used by `replay` and `attach` (seed 000 "Identity and Epoch Lifecycle",
 * "Export Profile and Template"; DESIGN.md decisions 4 and 5).
 */
#ifndef ROCEMETER_REPORTER_H
#define ROCEMETER_REPORTER_H

#include <stdint.h>

#include "export/ids.h"
#include "meter.h"
#include "rocemeter/report.h"

/* Takes one report: returns 0, or -1 if it was not serialized (its IDs are given back). */
typedef int (*rm_report_sink)(void *arg, const struct rm_report *r);

struct rm_reporter {
	struct rm_meter *meter;
	struct rm_ids *ids;
	uint64_t observation_point_id;
	int vlan_ns;              /* Templates carry the VLAN namespace keys */
	int generation_verified;  /* 1: do not set generationUnverified */
	int64_t time_offset_ns;   /* added to meter times to get UNIX ns (0 in replay) */
	rm_report_sink sink;
	void *sink_arg;
	uint64_t reports;         /* reports handed to the sink */
	uint64_t final_reports;
	uint64_t id_exhausted;    /* reports not made: an ID would wrap */
	uint64_t not_serialized;  /* reports the sink refused (IDs given back) */
};

/* 0, or -1 if out of memory. */
int rm_reporter_init(struct rm_reporter *r, struct rm_meter *m, uint64_t observation_point_id, int vlan_ns,
		     int generation_verified, int64_t time_offset_ns, rm_report_sink sink, void *sink_arg);
void rm_reporter_free(struct rm_reporter *r);

/* One snapshot of context key; final = the snapshot is the epoch's final one. */
void rm_reporter_snapshot(struct rm_reporter *r, const struct rm_ctx_key *key, const struct rm_seq_counters *snap,
			  int final);

/*
 * Handle a ring-buffer record (struct rm_event) from the meter: a final
 * snapshot becomes a final report; an epoch start needs no report.
 * Signature fits libbpf's ring_buffer_sample_fn (ctx = the reporter).
 */
int rm_reporter_on_event(void *ctx, void *data, size_t size);

/*
 * For every context with an open epoch, in the order of first arrival, run
 * one control operation under the context's lock and report the result:
 *   RM_CTL_SNAPSHOT    a non-final report;
 *   RM_CTL_CLOSE       close with the closure bits `reason` (finalEpoch is
 *                      always set), final report;
 *   RM_CTL_CLOSE_IDLE  close (finalEpoch alone) only epochs whose last
 *                      request is older than idle_before_ns (meter clock).
 * Returns the number of reports, or -errno.
 */
int rm_reporter_walk(struct rm_reporter *r, enum rm_ctl_op op, uint16_t reason, uint64_t idle_before_ns);

/*
 * Resource eviction (seed 000 "stateExhaustion"; config eviction = oldest):
 * remove up to n contexts to make room in a full table, closed ones first,
 * then those idle the longest; never a connection disabled by a profile
 * violation (evicting it would re-enable metering). An open epoch closes
 * with stateExhaustion and its final snapshot is reported.
 * Returns the number of contexts evicted, or -errno.
 */
int rm_reporter_evict(struct rm_reporter *r, unsigned int n);

#endif
