/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * meter_metrics.h - what `rocemeter attach --metrics` serves (docs/metrics.md):
 * the meter's statistics and contexts read from its maps, the daemon's
 * counters, the sequence counters of its observation point and the
 * exporter's, every series labelled with the interface.
 * The daemon (daemon.c) renders it on the metrics server's thread.
 */
#ifndef ROCEMETER_METER_METRICS_H
#define ROCEMETER_METER_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "daemon.h"
#include "export/export.h"
#include "meter.h"
#include "reporter.h"

/* What one scrape shows; the daemon publishes the counters under the server's lock. */
struct rm_meter_metrics_view {
	const char *ifname;
	const struct rm_meter *meter; /* its maps are read at the scrape */
	const struct rm_daemon_stats *daemon;
	const struct rm_export_stats *export; /* NULL: the daemon does not export */
	uint64_t session;                     /* current Transport Session, 0: none */
	uint32_t max_connections;             /* per-connection series for at most this many contexts */
	const struct rm_seq_point *points;    /* the sequence counters per observation point (reporter.h) */
	size_t npoints;
};

/* The exposition of v to f (text format 0.0.4, HELP and TYPE lines). */
void rm_meter_metrics_write(FILE *f, const struct rm_meter_metrics_view *v);

/* The rows of RM_DAEMON_STATS over struct rm_daemon_stats; n gets their number. */
const struct rm_metric_row *rm_daemon_stat_rows(size_t *n);

#endif
