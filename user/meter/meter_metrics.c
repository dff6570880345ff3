// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* meter_metrics.c - the metrics of `attach` (see meter_metrics.h). */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "common/map_iter.h"
#include "meter_metrics.h"

#define DAEMON_ROW_(member, type, metric, label, value, help) \
	{ #member,                                            \
	  RM_METRIC_##type,                                   \
	  "rocemeter_meter_" metric RM_METRIC_SUFFIX_##type,  \
	  label,                                              \
	  value,                                              \
	  help,                                               \
	  offsetof(struct rm_daemon_stats, member) },
static const struct rm_metric_row daemon_rows[] = { RM_DAEMON_STATS(DAEMON_ROW_) };
#undef DAEMON_ROW_

const struct rm_metric_row *rm_daemon_stat_rows(size_t *n)
{
	*n = sizeof(daemon_rows) / sizeof(daemon_rows[0]);
	return daemon_rows;
}

struct ctx_entry {
	struct rm_ctx_key key;
	struct rm_seq_counters c; /* rm_seq_snapshot() of the context */
};

/* Per-connection counters: the open epoch's, labelled with its record key. */
#define CONN_SERIES(X)                                                                                \
	X(requests, COUNTER, "requests", "requestPacketTotalCount of the connection's current epoch") \
	X(skipped, COUNTER, "skipped_positions", "skippedPsnTotalCount of the current epoch")         \
	X(filled, COUNTER, "filled_positions", "filledPsnTotalCount of the current epoch")            \
	X(expired, COUNTER, "expired_positions", "expiredPsnTotalCount of the current epoch")         \
	X(repeated, COUNTER, "repeated_psns", "repeatedPsnTotalCount of the current epoch")           \
	X(unclassified_late, COUNTER, "unclassified_late_requests",                                   \
	  "unclassifiedLatePacketTotalCount of the current epoch")                                    \
	X(pending, GAUGE, "pending_positions", "pendingPsnCount of the current epoch")

/*
 * The observationPointId of a context key's obs, as the scrape knows it:
 * the reporter's point of that obs (published under the server's lock), else
 * its observation_point line's; 0 while a derived one has no report yet.
 */
static uint64_t obs_id(const struct rm_meter_metrics_view *v, unsigned int obs)
{
	for (size_t i = 0; v->points && i < v->npoints; i++)
		if (v->points[i].obs == obs)
			return v->points[i].observation_point_id;
	if (obs && v->meter->capture && obs <= (unsigned int)v->meter->capture->n_points)
		return v->meter->capture->points[obs - 1].id;
	return 0;
}

static void connections(FILE *f, const struct rm_meter_metrics_view *v, const struct ctx_entry *c, size_t n,
			uint64_t total)
{
	const struct rm_metric_label base = { "interface", v->ifname };

#define CONN_FAMILY_(field, type, metric, help)                                                                     \
	rm_metrics_family(f, "rocemeter_meter_connection_" metric RM_METRIC_SUFFIX_##type, RM_METRIC_##type, help); \
	for (size_t i = 0; i < n; i++) {                                                                            \
		char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], qp[12], pkey[8], op[24];                         \
		int af = c[i].key.family == 6 ? AF_INET6 : AF_INET;                                                 \
		struct rm_metric_label l[] = { base,                                                                \
					       { "source", src },                                                   \
					       { "destination", dst },                                              \
					       { "qp", qp },                                                        \
					       { "pkey", pkey },                                                    \
					       { "observation_point", op },                                         \
					       { "observation_point_name",                                          \
						 rm_meter_obs_name(v->meter, c[i].key.obs) } };                     \
		inet_ntop(af, c[i].key.src, src, sizeof(src));                                                      \
		inet_ntop(af, c[i].key.dst, dst, sizeof(dst));                                                      \
		snprintf(qp, sizeof(qp), "0x%06x", c[i].key.dest_qp);                                               \
		snprintf(pkey, sizeof(pkey), "0x%04x", c[i].key.pkey);                                              \
		snprintf(op, sizeof(op), "%llu", (unsigned long long)obs_id(v, c[i].key.obs));                      \
		rm_metrics_sample(f, "rocemeter_meter_connection_" metric RM_METRIC_SUFFIX_##type, l, 7,            \
				  c[i].c.field);                                                                    \
	}
	CONN_SERIES(CONN_FAMILY_)
#undef CONN_FAMILY_
	rm_metrics_family(f, "rocemeter_meter_connections_not_shown", RM_METRIC_GAUGE,
			  "contexts without per-connection series (beyond metrics_connections)");
	rm_metrics_sample(f, "rocemeter_meter_connections_not_shown", &base, 1, total - n);
}

/* Requests and positions of every kind per observation point, over every epoch's snapshots. */
static void sequence_totals(FILE *f, const struct rm_meter_metrics_view *v)
{
	static const char where[] = ", per observation point, over every epoch (final and periodic snapshots)";
	size_t n = v->points ? v->npoints : 0;
	struct rm_seq_totals *t = calloc(n ? n : 1, sizeof(*t));
	struct rm_metric_label *l = calloc(n ? 3 * n : 1, sizeof(*l));
	char(*op)[24] = calloc(n ? n : 1, sizeof(*op));

	if (!t || !l || !op)
		n = 0; /* the HELP and TYPE lines alone */
	for (size_t i = 0; i < n; i++) {
		t[i] = v->points[i].t;
		snprintf(op[i], sizeof(op[i]), "%llu", (unsigned long long)v->points[i].observation_point_id);
		l[3 * i] = (struct rm_metric_label){ "interface", v->ifname };
		l[3 * i + 1] = (struct rm_metric_label){ "observation_point", op[i] };
		l[3 * i + 2] = (struct rm_metric_label){ "observation_point_name",
							 rm_meter_obs_name(v->meter, v->points[i].obs) };
	}
	rm_metrics_seq_totals(f, "meter", where, t, n, l, 3);
	free(t);
	free(l);
	free(op);
}

void rm_meter_metrics_write(FILE *f, const struct rm_meter_metrics_view *v)
{
	const struct rm_metric_label ifl = { "interface", v->ifname };
	uint64_t stats[RM_STAT__COUNT] = { 0 };
	uint64_t open = 0, closed = 0, disabled = 0, total = 0;
	struct rm_ctx_key key;
	struct rm_map_iter it = rm_map_iter_start(v->meter->contexts_fd, &key);
	struct ctx_entry *conn = NULL;
	size_t n, nconn = 0;
	struct rm_ctx val;
	const struct rm_metric_row *rows;

	if (v->max_connections)
		conn = calloc(v->max_connections, sizeof(*conn));
	rm_meter_read_stats(v->meter->stats_fd, stats);
	rows = rm_meter_stat_rows(&n);
	rm_metrics_rows(f, rows, n, stats, &ifl, 1);

	/* Contexts by state: atomic snapshots, as `status` reads them. */
	while (rm_map_iter_next(&it)) {
		if (bpf_map_lookup_elem_flags(v->meter->contexts_fd, &key, &val, BPF_F_LOCK))
			continue; /* removed meanwhile */
		total++;
		if (rm_ctx_flag(&val, RM_CTX_DISABLED))
			disabled++;
		else if (rm_seq_active(&val.seq))
			open++;
		else
			closed++;
		if (conn && nconn < v->max_connections && rm_seq_active(&val.seq) &&
		    !rm_ctx_flag(&val, RM_CTX_DISABLED)) {
			conn[nconn].key = key;
			rm_seq_snapshot(&val.seq, &conn[nconn++].c);
		}
	}
	rm_metrics_family(f, "rocemeter_meter_contexts", RM_METRIC_GAUGE,
			  "contexts by state: open (an epoch is open), closed, disabled (profile violation, or no "
			  "longer provisioned)");
	{
		const struct rm_metric_label lo[] = { ifl, { "state", "open" } }, lc[] = { ifl, { "state", "closed" } },
					     ld[] = { ifl, { "state", "disabled" } };

		rm_metrics_sample(f, "rocemeter_meter_contexts", lo, 2, open);
		rm_metrics_sample(f, "rocemeter_meter_contexts", lc, 2, closed);
		rm_metrics_sample(f, "rocemeter_meter_contexts", ld, 2, disabled);
	}
	rm_metrics_family(f, "rocemeter_meter_context_capacity", RM_METRIC_GAUGE, "max_contexts: the table's size");
	rm_metrics_sample(f, "rocemeter_meter_context_capacity", &ifl, 1, v->meter->max_contexts);

	rows = rm_daemon_stat_rows(&n);
	rm_metrics_rows(f, rows, n, v->daemon, &ifl, 1);
	sequence_totals(f, v);
	rm_metrics_build_info(f);

	rm_metrics_family(f, "rocemeter_export_session_up", RM_METRIC_GAUGE,
			  "1 while a Transport Session to the collector is established");
	rm_metrics_sample(f, "rocemeter_export_session_up", &ifl, 1, v->session ? 1 : 0);
	if (v->export) {
		char session[24];
		const struct rm_metric_label sl[] = { ifl, { "session", session } };

		/* An info metric: the number is a label, not a value to add up or plot. */
		rm_metrics_family(f, "rocemeter_export_session_info", RM_METRIC_GAUGE,
				  "the current Transport Session: its number (1 the first) in the label session; "
				  "absent while none");
		snprintf(session, sizeof(session), "%llu", (unsigned long long)v->session);
		if (v->session)
			rm_metrics_sample(f, "rocemeter_export_session_info", sl, 2, 1);
		rows = rm_export_stat_rows(&n);
		rm_metrics_rows(f, rows, n, v->export, &ifl, 1);
	}
	if (conn) {
		connections(f, v, conn, nconn, total);
		free(conn);
	}
}
