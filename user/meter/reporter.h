/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * reporter.h - turn epoch snapshots from the meter into reports (struct
 * rm_report) for one Transport Session and Observation Domain: allocate
 * rdmaSequenceEpochId / rdmaSequenceReportId at serialization (user/export/ids.c),
 * qualify with generationUnverified, convert times to UNIX milliseconds,
 * and hand each report to a sink (JSON Lines, IPFIX file, exporter, text).
 * Also walks the open contexts for periodic and closing reports.
 * Used by `replay` and `attach` ([SEQOBS] "Identity and Epoch Lifecycle",
 * "Export Profile and Template"; docs/architecture.md "Every closure is atomic", "IDs belong to the exporter").
 */
#ifndef ROCEMETER_REPORTER_H
#define ROCEMETER_REPORTER_H

#include <stdint.h>

#include "export/ids.h"
#include "meter.h"
#include "rocemeter/report.h"

/* Takes one report: returns 0, or -1 if it was not serialized (its IDs are given back). */
typedef int (*rm_report_sink)(void *arg, const struct rm_report *r);

struct ring_buffer;

/* When rm_reporter_tick() reports and sweeps (rm_reporter_set_schedule()). */
struct rm_schedule {
	uint64_t report_interval_ns; /* non-final reports of changed epochs; 0: finals only */
	uint64_t idle_timeout_ns;    /* the sweep closes epochs silent longer; 0: never */
	uint64_t next_report_ns;     /* 0: not started */
	uint64_t next_second_ns;     /* 0: not started */
};

/*
 * Observation points with sequence counters of their own: the reports'
 * observationPointId values (the interface's, and those of the mirror
 * sessions it carries), at most this many: an attachment has no more.
 */
#define RM_REPORTER_MAX_POINTS 256

/*
 * The sequence counters of one observation point, over every epoch's
 * snapshots (rm_reporter_snapshot(): each adds what its epoch counts beyond
 * the epoch's previous snapshot, whether or not the sink takes the report;
 * one whose IDs would wrap is counted with the epoch's next, if any).
 */
struct rm_seq_point {
	uint64_t observation_point_id;
	unsigned int obs;       /* its contexts' rm_ctx_key obs (0: the attachment's own) */
	struct rm_seq_totals t; /* RM_SEQ_TOTALS (rocemeter/report.h) */
};

/* Per open epoch: its time offset and what its last report carried (reporter.c). */
struct rm_epoch_times;

struct rm_reporter {
	struct rm_meter *meter;
	struct rm_ids *ids;
	uint64_t observation_point_id;
	int vlan_ns;             /* Templates carry the VLAN namespace keys */
	int generation_verified; /* 1: do not set generationUnverified */
	int capture_clock;       /* 1: meter times are UNIX ns (replay); 0: CLOCK_MONOTONIC (live) */
	struct rm_epoch_times *times;
	rm_report_sink sink;
	void *sink_arg;
	uint64_t reports; /* reports handed to the sink */
	uint64_t final_reports;
	uint64_t id_exhausted;       /* reports not made: an ID would wrap */
	uint64_t not_serialized;     /* reports the sink refused (IDs given back) */
	struct ring_buffer *rb;      /* the meter's events, after rm_reporter_open_events() */
	struct rm_seq_point *points; /* RM_REPORTER_MAX_POINTS; the first is observation_point_id's */
	size_t npoints;
	struct rm_schedule sched;
};

/*
 * capture_clock: 1 if the meter's times are capture timestamps in UNIX ns
 * (replay), 0 if they are CLOCK_MONOTONIC (live): then each epoch's times
 * are converted with the monotonic-to-UNIX offset of its start
 * (rm_clock_unix_offset_ns() when its start event is read), so that a
 * wall-clock step changes neither flowStartMilliseconds nor the epoch's
 * duration; epochs that start after the step carry the new wall time.
 * Returns 0, or -1 if out of memory.
 */
int rm_reporter_init(struct rm_reporter *r, struct rm_meter *m, uint64_t observation_point_id, int vlan_ns,
		     int generation_verified, int capture_clock, rm_report_sink sink, void *sink_arg);
/* Frees the IDs, the epochs' times and the event ring buffer. */
void rm_reporter_free(struct rm_reporter *r);

/*
 * Read the meter's ring buffer (closures the datapath made) from now on:
 * rm_reporter_drain() and rm_reporter_poll() hand its final snapshots to
 * rm_reporter_on_event(). Returns 0, or -errno.
 */
int rm_reporter_open_events(struct rm_reporter *r);

/* Report what is in the ring buffer now, without waiting. 0 or -errno. */
int rm_reporter_drain(struct rm_reporter *r);

/* Wait up to timeout_ms for events and report them. >= 0, or -errno (-EINTR: a signal came). */
int rm_reporter_poll(struct rm_reporter *r, int timeout_ms);

/* One snapshot of context key; final = the snapshot is the epoch's final one. */
void rm_reporter_snapshot(struct rm_reporter *r, const struct rm_ctx_key *key, const struct rm_seq_counters *snap,
			  int final);

/*
 * Handle a ring-buffer record (struct rm_event) from the meter: a final
 * snapshot becomes a final report; an epoch start fixes the epoch's time
 * offset (no report).
 * Signature fits libbpf's ring_buffer_sample_fn (ctx = the reporter).
 */
int rm_reporter_on_event(void *ctx, void *data, size_t size);

/*
 * For every context with an open epoch, in the order of first arrival, run
 * one control operation under the context's lock and report the result:
 *   RM_CTL_SNAPSHOT    a non-final report, only of an epoch that counted a
 *                      request since its last report (or has none yet);
 *   RM_CTL_CLOSE       close with the closure bits `reason` (finalEpoch is
 *                      always set), final report;
 *   RM_CTL_CLOSE_IDLE  close (finalEpoch alone) only epochs whose last
 *                      request is older than idle_before_ns (meter clock).
 * Returns the number of reports, or -errno.
 */
int rm_reporter_walk(struct rm_reporter *r, enum rm_ctl_op op, uint16_t reason, uint64_t idle_before_ns);

/*
 * Resource eviction ([SEQOBS] "stateExhaustion"; config eviction = oldest):
 * remove up to n contexts to make room in a full table, closed ones first,
 * then those idle the longest; never a connection disabled by a profile
 * violation (evicting it would re-enable metering). An open epoch closes
 * with stateExhaustion and its final snapshot is reported.
 * Returns the number of contexts evicted, or -errno.
 */
int rm_reporter_evict(struct rm_reporter *r, unsigned int n);

/*
 * The schedule of rm_reporter_tick(), in ms as configured: non-final
 * reports on boundaries report_interval_ms apart (0: none), epochs closed
 * by the idle sweep after idle_timeout_ms of silence (0: never). May be
 * called again (a reload): the next boundary stays where it was.
 */
void rm_reporter_set_schedule(struct rm_reporter *r, uint64_t report_interval_ms, uint64_t idle_timeout_ms);

/* rm_reporter_tick() found a new second of its clock: time for once-a-second work. */
#define RM_TICK_SECOND 0x1

/*
 * Periodic reports and the idle sweep, for `attach` (now_ns: the kernel's
 * monotonic clock, the meter's; called on every pass of the loop) and
 * `replay` (now_ns: the capture clock of the next frame, before it is run;
 * never decreasing). The ring buffer is drained before every walk, so that
 * the datapath's finals come first. docs/architecture.md "Time":
 *   - Boundaries one interval apart, the first one interval after the
 *     first tick's millisecond. When now reaches the next boundary b:
 *     first epochs silent for longer than idle_timeout at b close
 *     (finalEpoch, RM_CTL_CLOSE_IDLE walk); then every open epoch that
 *     counted a request since its last report gets a non-final report
 *     (RM_CTL_SNAPSHOT walk); an unchanged epoch gets none. The boundaries
 *     after b up to now come before any new request, so nothing is due on
 *     them: the next boundary is the first one after now (capture time:
 *     on the grid of the first; live: one interval after now). So a gap
 *     of any length costs one walk, and every epoch has at most one
 *     non-final report per request plus its final.
 *   - Once a second of the clock (the first tick included), epochs whose
 *     last request is more than idle_timeout older than now close with
 *     finalEpoch (RM_CTL_CLOSE_IDLE walk), and RM_TICK_SECOND is returned.
 * Returns RM_TICK_* bits.
 */
int rm_reporter_tick(struct rm_reporter *r, uint64_t now_ns);

#endif
