/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * daemon.h - the meter daemon that `rocemeter attach` runs: load the meter,
 * provision it, attach it to the interface with an XDP link owned by this
 * process, pin the maps, then drain epoch events, make periodic, idle and
 * final reports and export them (IPFIX over TLS 1.3, user/export/) or print
 * them. The command owns the signals and the loop:
 *
 *     d = rm_daemon_start(&opts, err, sizeof(err));
 *     while (!stop) {
 *             rm_daemon_wait(d, 100);             (the ring buffer; a signal ends it early)
 *             rm_daemon_step(d, reload ? RM_DAEMON_RELOAD : 0);
 *     }
 *     rm_daemon_stop(d, 1);
 *
 * The step reads the kernel's monotonic clock itself: it is the meter's
 * (bpf_ktime_get_ns), so no other clock could be passed in.
 * Logs through user/common/log.h; tells systemd READY, RELOADING, STOPPING.
 * One daemon per process; not thread-safe.
 */
#ifndef ROCEMETER_DAEMON_H
#define ROCEMETER_DAEMON_H

#include <stddef.h>

#include "common/config.h"
#include "common/paths.h"
#include "flowlabel/flowlabel.h"

/*
 * The daemon's own counters: one list for the stats file (RUNDIR/IFNAME.stats,
 * `status --json` "daemon"), and the metrics. X(member, type, metric,
 * label, value, help): member is the JSON key (docs/json.md); the metric
 * is rocemeter_meter_<metric> (_total for counters) with label=value when
 * label is not NULL; rows of one metric are adjacent, the first gives HELP.
 */
#define RM_DAEMON_STATS(X)                                                                                   \
	X(reports, COUNTER, "reports", NULL, NULL, "reports made, non-final and final")                      \
	X(final_reports, COUNTER, "final_reports", NULL, NULL, "final reports made")                         \
	X(reports_not_made_id_exhausted, COUNTER, "reports_not_made_id_exhausted", NULL, NULL,               \
	  "reports not made: an epoch or report ID would wrap")                                              \
	X(closed_for_new_session, COUNTER, "epochs_closed_for_new_session", NULL, NULL,                      \
	  "epochs closed because a new Transport Session started (their finals belong to no session)")       \
	X(closures_profile_violation, COUNTER, "closures", "reason", "profileViolation",                     \
	  "epochs closed, by closure reason (the rdmaSequenceFlags bit; none: finalEpoch alone, e.g. idle, " \
	  "reload, shutdown)")                                                                               \
	X(closures_capture_discontinuity, COUNTER, "closures", "reason", "captureDiscontinuity", NULL)       \
	X(closures_state_exhaustion, COUNTER, "closures", "reason", "stateExhaustion", NULL)                 \
	X(closures_serial_discontinuity, COUNTER, "closures", "reason", "serialDiscontinuity", NULL)         \
	X(closures_none, COUNTER, "closures", "reason", "none", NULL)

struct rm_daemon_stats {
#define RM_DAEMON_STAT_MEMBER_(member, type, metric, label, value, help) uint64_t member;
	RM_DAEMON_STATS(RM_DAEMON_STAT_MEMBER_)
#undef RM_DAEMON_STAT_MEMBER_
};

struct rm_daemon_opts {
	const char *ifname;
	const char *config_path;                   /* read again on reload; NULL: none */
	const struct rm_config_file *cfg;          /* loaded, overrides applied; copied */
	struct rm_config_overrides overrides;      /* applied again on every reload */
	int generic;                               /* XDP in generic (SKB) mode; else native */
	int mirror;                                /* drop frames after metering */
	int json;                                  /* reports as JSON Lines when not exporting */
	int wide;                                  /* text reports: every field (else a compact line) */
	int keep_pins;                             /* leave the map pins on exit */
	int replace_stale;                         /* remove pins a crashed attachment left */
	const struct rm_flowlabel_opts *flowlabel; /* also attach the flow-label program; NULL: no */
	int census;                                /* also attach the connection census at tc ingress, maps
						    * pinned (user/census/census.h); removed at stop */
	const char *metrics;                       /* serve Prometheus metrics on ADDR:PORT; NULL: the
						    * config's [meter] metrics ("" there: off) */
};

struct rm_daemon;

/*
 * Take the interface's lock, load, attach and pin, start the exporter, and
 * tell systemd READY. Returns the daemon, or NULL with the reason in err
 * (one message, possibly of two lines; everything set up is undone).
 */
struct rm_daemon *rm_daemon_start(const struct rm_daemon_opts *o, char *err, size_t errlen);

/*
 * Wait up to timeout_ms for epoch events and report them. Returns >= 0,
 * -EINTR when a signal came, or another -errno when the ring buffer failed
 * (logged: the daemon should stop as on SIGTERM).
 */
int rm_daemon_wait(struct rm_daemon *d, int timeout_ms);

/* rm_daemon_step() flags. */
#define RM_DAEMON_RELOAD 0x1 /* read the configuration file again first (SIGHUP) */

/*
 * The work of one pass, on the kernel's monotonic clock (the meter's): a
 * reload if asked, a new export session closes every open epoch, periodic
 * reports and the idle sweep (rm_reporter_tick()), and once a second
 * eviction, the observation check (capture discontinuity) and the stats
 * file. Returns 0, or -1 when the daemon cannot go on (logged: the XDP link
 * was detached by someone else).
 */
int rm_daemon_step(struct rm_daemon *d, unsigned int flags);

/*
 * graceful: tell systemd STOPPING, detach, close every open epoch with a
 * final report. Then, always: flush and stop the export (with a summary in
 * the log), remove the flow-label program, the census and its pins, the
 * meter's pins (unless keep_pins), the run files and the lock, and free d.
 */
void rm_daemon_stop(struct rm_daemon *d, int graceful);

/*
 * `detach`: ask the daemon of another process to stop with SIGTERM (pid,
 * proved to be k's meter by rm_pin_meter_pid()), and wait up to timeout_ms
 * for its final reports, export and clean-up: until the process is gone and
 * k's lock is free. Returns the lock's fd (now ours, see rm_pin_lock()),
 * -ENOENT when the daemon removed the pin directory (nothing left to lock),
 * or -1 if the signal could not be sent or the daemon did not stop in time.
 */
int rm_daemon_terminate(const struct rm_ifkey *k, int pid, int timeout_ms);

#endif
