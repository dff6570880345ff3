// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * collector_metrics.c - what `rocemeter collect --metrics` serves
 * (docs/metrics.md): RM_COLLECTOR_STATS, the sequence counters per
 * observation point (seq_points.c), the build and the per-session series,
 * rendered on the metrics server's thread (collector_int.h).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "collector_int.h"

#define COLLECTOR_ROW_(member, type, metric, label, value, help) \
	{ #member,                                               \
	  RM_METRIC_##type,                                      \
	  "rocemeter_collector_" metric RM_METRIC_SUFFIX_##type, \
	  label,                                                 \
	  value,                                                 \
	  help,                                                  \
	  offsetof(struct rm_collector_stats, member) },
static const struct rm_metric_row collector_rows[] = { RM_COLLECTOR_STATS(COLLECTOR_ROW_) };
#undef COLLECTOR_ROW_

/* Per-session series: X(conn member, metric, help). */
#define SESSION_SERIES(X)                                                             \
	X(messages, "messages", "IPFIX Messages received in the Transport Session")   \
	X(records, "records", "Data Records received in the Transport Session")       \
	X(octets, "received_bytes", "IPFIX octets received in the Transport Session") \
	X(rejected, "records_undecodable", "records of the session the decoder could not bind")

/* GET /metrics, on the server's thread; the loop holds the lock except in poll(). */
void rm_collector_render_metrics(void *arg, FILE *f)
{
	struct rm_collector *s = arg;
	struct rm_collector_stats stats = s->stats;

	stats.sessions_open = 0;
	stats.epochs_retained = 0;
	if (s->store->ops == &rm_backend_sqlite) {
		stats.drops_database = rm_backend_drops(s->store);
		stats.database_unavailable = (uint64_t)rm_backend_unavailable(s->store);
	} else {
		stats.drops_store = rm_backend_drops(s->store);
		stats.store_unavailable = (uint64_t)rm_backend_unavailable(s->store);
	}
	/* counted by the store's own thread (ClickHouse) */
	stats.drops_unread_at_crash += rm_backend_acked_drops(s->store);
	stats.store_buffer_bytes = rm_backend_buffer_bytes(s->store);
	stats.store_buffer_capacity_bytes = rm_backend_buffer_capacity(s->store);
	for (size_t i = 0; i < s->nconns; i++) {
		if (s->conns[i]->closing)
			continue;
		stats.sessions_open++;
		if (s->conns[i]->rs)
			stats.epochs_retained += rm_rules_retained(s->conns[i]->rs);
		if (s->conns[i]->dec) { /* an ended session's counts are in s->stats */
			const struct rm_ipfix_counts *h = rm_ipfix_counts(s->conns[i]->dec);

			stats.sequence_gaps += h->seq_gaps;
			stats.sequence_missing_records += h->seq_missing;
			stats.export_time_backwards += h->time_backwards;
		}
	}
	rm_metrics_rows(f, collector_rows, sizeof(collector_rows) / sizeof(collector_rows[0]), &stats, NULL, 0);
	rm_seq_points_write(f, s->points);
	rm_metrics_build_info(f);
#define SESSION_FAMILY_(member, metric, help)                                                          \
	rm_metrics_family(f, "rocemeter_collector_session_" metric "_total", RM_METRIC_COUNTER, help); \
	for (size_t i = 0; i < s->nconns; i++) {                                                       \
		const struct conn *c = s->conns[i];                                                    \
		char id[24];                                                                           \
		const struct rm_metric_label l[] = { { "session", id }, { "peer", c->peer } };         \
		if (c->closing)                                                                        \
			continue;                                                                      \
		snprintf(id, sizeof(id), "%" PRId64, c->session_id);                                   \
		rm_metrics_sample(f, "rocemeter_collector_session_" metric "_total", l, 2, c->member); \
	}
	SESSION_SERIES(SESSION_FAMILY_)
#undef SESSION_FAMILY_
}
