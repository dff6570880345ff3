/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics.h - Prometheus metrics of the daemons: the text exposition
 * format (version 0.0.4) written to a FILE, and the HTTP server (GNU
 * libmicrohttpd, its own thread) that serves it on /metrics. `attach`
 * (user/meter/daemon.c) and `collect` (user/collect/collector_metrics.c) each
 * render their own content; docs/metrics.md lists the metrics.
 */
#ifndef ROCEMETER_METRICS_H
#define ROCEMETER_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum rm_metric_type {
	RM_METRIC_COUNTER, /* name ends in _total; only grows while the process runs */
	RM_METRIC_GAUGE,
};

/* For X-macro tables: the name suffix of a type, and the label of a row that has a value for it. */
#define RM_METRIC_SUFFIX_COUNTER         "_total"
#define RM_METRIC_SUFFIX_GAUGE           ""
#define RM_METRIC_LABEL_IF(value, label) ((value) ? (label) : NULL)

struct rm_metric_label {
	const char *name;  /* [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" */
	const char *value; /* any UTF-8 text; escaped when written */
};

/* 1 if name is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), else 0. */
int rm_metrics_name_ok(const char *name);

/*
 * "# HELP NAME HELP\n# TYPE NAME counter|gauge\n": once per metric, before
 * its samples. In help, '\\' and newline are escaped ("\\\\", "\\n").
 */
void rm_metrics_family(FILE *f, const char *name, enum rm_metric_type type, const char *help);

/*
 * One sample "NAME{L1="V1",...} VALUE\n" (no braces without labels). A
 * label whose value is NULL or "" is left out: in Prometheus an empty label
 * is the same series as none. In label values '\\', '"' and newline are escaped. value is written exactly
 * (a decimal integer).
 */
void rm_metrics_sample(FILE *f, const char *name, const struct rm_metric_label *labels, size_t n, uint64_t value);

/*
 * A table of counters kept as uint64_t members of one struct (or one
 * array): each row is one JSON key (docs/json.md) and one sample. The
 * daemons' X-macro tables (RM_EXPORT_STATS, RM_COLLECTOR_STATS, ...)
 * expand into rows, so a counter is added in one place and appears in
 * JSON and in the metrics alike.
 */
struct rm_metric_row {
	const char *key; /* snake_case JSON key */
	enum rm_metric_type type;
	const char *metric;      /* full name ("rocemeter_export_records_sent_total"); rows of one metric adjacent */
	const char *label;       /* the label that tells rows of one metric apart ("cause"), or NULL */
	const char *label_value; /* its value in this row */
	const char *help;        /* the metric's HELP (read from its first row) */
	size_t offset;           /* of the row's uint64_t in the values */
};

/*
 * The samples of rows[0..n-1] with their values read at values + offset,
 * each with the base labels (nbase of them, e.g. interface) first, then
 * the row's own label; HELP and TYPE before the first row of each metric.
 */
void rm_metrics_rows(FILE *f, const struct rm_metric_row *rows, size_t n, const void *values,
		     const struct rm_metric_label *base, size_t nbase);

struct rm_seq_totals;

/*
 * The sequence counters of RM_SEQ_TOTALS (include/rocemeter/report.h) for
 * n series: one counter rocemeter_<prefix>_<metric>_total per row of the
 * table, series i with the values t[i] and the labels labels[i * nlabels]
 * .. labels[i * nlabels + nlabels - 1] (at most 8). Each HELP is the
 * row's, then help_suffix (", per observation point, from ..."). n = 0
 * writes the HELP and TYPE lines alone.
 */
void rm_metrics_seq_totals(FILE *f, const char *prefix, const char *help_suffix, const struct rm_seq_totals *t,
			   size_t n, const struct rm_metric_label *labels, size_t nlabels);

/*
 * rocemeter_build_info{version="..."} 1: the binary's version
 * (user/common/version.h), as an info metric (a gauge of value 1 whose
 * labels say what it is).
 */
void rm_metrics_build_info(FILE *f);

/*
 * What a server answers on GET /metrics: write the exposition to out.
 * Called on the server's thread with the server's lock held
 * (rm_metrics_lock()), so that it may read what the owner changes only
 * under that lock.
 */
typedef void (*rm_metrics_render_fn)(void *arg, FILE *out);

struct rm_metrics_server;

/*
 * The HTTP server's limits against slow or idle clients (docs/metrics.md
 * "Slow clients"): connections in all, connections from one address (more
 * are closed at once), and the seconds a connection may stay silent, in
 * the middle of its request or between two, before it is closed.
 */
#define RM_METRICS_CONNECTIONS          64u
#define RM_METRICS_PER_ADDRESS          4u
#define RM_METRICS_CONNECTION_TIMEOUT_S 5u

/*
 * Listen on listen ("ADDR:PORT", "[IPV6]:PORT" or ":PORT" for every
 * address; PORT 0 picks a free port, see rm_metrics_port()) and serve
 * GET /metrics with render(arg, out), Content-Type
 * "text/plain; version=0.0.4; charset=utf-8"; every other path is 404,
 * every other method 405. The server's thread takes no process signal
 * (they stay the caller's). Returns the server, or NULL with the reason in
 * err ("metrics: cannot listen on ADDR:PORT: ...").
 */
struct rm_metrics_server *rm_metrics_start(const char *listen, rm_metrics_render_fn render, void *arg, char *err,
					   size_t errlen);

/* The TCP port the server listens on (the one picked for PORT 0). */
unsigned int rm_metrics_port(const struct rm_metrics_server *s);

/*
 * The owner takes the lock around changes that render() reads, so that a
 * scrape sees them whole. NULL (metrics off) is a no-op. Not recursive.
 */
void rm_metrics_lock(struct rm_metrics_server *s);
void rm_metrics_unlock(struct rm_metrics_server *s);

/* Stop serving (waits for a scrape in progress) and free s. NULL is a no-op. */
void rm_metrics_stop(struct rm_metrics_server *s);

/*
 * The listen address "ADDR:PORT", "[IPV6]:PORT" or ":PORT" into host
 * (empty for every address) and port (0..65535). Returns 0, or -EINVAL
 * with "NAME: 'TEXT' is not ADDR:PORT, [IPV6]:PORT or :PORT" in err
 * (name: the option or key that gave it).
 */
int rm_metrics_parse_listen(const char *name, const char *text, char *host, size_t hostlen, unsigned int *port,
			    char *err, size_t errlen);

#endif /* ROCEMETER_METRICS_H */
