// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * seq_points.c - the collector's sequence counters per observation point
 * (Observation Domain, observationPointId): requests and positions of every
 * kind of the accepted reports, added up across epochs and sessions for
 * `collect --metrics` (collector_metrics.c). Bounded: RM_COLLECTOR_MAX_POINTS
 * points, allocated with the first; the reports of further points are only
 * counted. The loop thread writes, a scrape reads under the metrics lock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector_int.h"

struct point_key {
	uint32_t domain;
	uint64_t observation_point;
};

struct rm_seq_points {
	GHashTable *index;      /* struct point_key * -> index + 1 */
	struct point_key *keys; /* RM_COLLECTOR_MAX_POINTS of each, n used */
	struct rm_seq_totals *totals;
	struct rm_metric_label *labels; /* 2 per point: observation_domain, observation_point */
	char (*text)[2][24];            /* the labels' values */
	size_t n;
	size_t last; /* index + 1 of the last point found: a session's reports are mostly of one point */
};

static guint point_hash(gconstpointer p)
{
	const struct point_key *k = p;

	return (guint)(k->domain * 2654435761u) ^ (guint)(k->observation_point ^ (k->observation_point >> 32));
}

static gboolean point_equal(gconstpointer a, gconstpointer b)
{
	const struct point_key *x = a, *y = b;

	return x->domain == y->domain && x->observation_point == y->observation_point;
}

void rm_seq_points_free(struct rm_seq_points *p)
{
	if (!p)
		return;
	if (p->index)
		g_hash_table_destroy(p->index);
	free(p->keys);
	free(p->totals);
	free(p->labels);
	free(p->text);
	free(p);
}

static struct rm_seq_points *points_new(void)
{
	struct rm_seq_points *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->index = g_hash_table_new(point_hash, point_equal);
	p->keys = calloc(RM_COLLECTOR_MAX_POINTS, sizeof(*p->keys));
	p->totals = calloc(RM_COLLECTOR_MAX_POINTS, sizeof(*p->totals));
	p->labels = calloc(2 * RM_COLLECTOR_MAX_POINTS, sizeof(*p->labels));
	p->text = calloc(RM_COLLECTOR_MAX_POINTS, sizeof(*p->text));
	if (!p->keys || !p->totals || !p->labels || !p->text) {
		rm_seq_points_free(p);
		return NULL;
	}
	return p;
}

/* The totals of (domain, observation point), a new point if there is room; NULL if none. */
static struct rm_seq_totals *point(struct rm_collector *s, uint32_t domain, uint64_t observation_point)
{
	struct rm_seq_points *p = s->points;
	struct point_key k = { domain, observation_point };
	size_t i;

	if (!p && !(p = s->points = points_new()))
		return NULL;
	if (p->last && point_equal(&p->keys[p->last - 1], &k))
		return &p->totals[p->last - 1];
	i = GPOINTER_TO_SIZE(g_hash_table_lookup(p->index, &k));
	if (i) {
		p->last = i;
		return &p->totals[i - 1];
	}
	if (p->n == RM_COLLECTOR_MAX_POINTS)
		return NULL;
	i = p->n++;
	p->keys[i] = k;
	snprintf(p->text[i][0], sizeof(p->text[i][0]), "%" PRIu32, domain);
	snprintf(p->text[i][1], sizeof(p->text[i][1]), "%" PRIu64, observation_point);
	p->labels[2 * i] = (struct rm_metric_label){ "observation_domain", p->text[i][0] };
	p->labels[2 * i + 1] = (struct rm_metric_label){ "observation_point", p->text[i][1] };
	g_hash_table_insert(p->index, &p->keys[i], GSIZE_TO_POINTER(i + 1));
	p->last = i + 1;
	return &p->totals[i];
}

void rm_seq_points_accepted(void *arg, uint32_t domain, const struct rm_report *r, const struct rm_report *prev)
{
	struct rm_collector *s = arg;
	struct rm_seq_totals *t = point(s, domain, r->observation_point_id);
	struct rm_seq_totals last = { 0 };

	if (!t) {
		s->stats.reports_beyond_point_limit++;
		return;
	}
	if (prev)
		rm_seq_totals_of(&last, prev);
	rm_seq_totals_advance(t, &last, r);
}

void rm_seq_points_write(FILE *f, const struct rm_seq_points *p)
{
	static const char where[] = ", per observation point, from the reports the collector accepted";

	if (p)
		rm_metrics_seq_totals(f, "collector", where, p->totals, p->n, p->labels, 2);
	else
		rm_metrics_seq_totals(f, "collector", where, NULL, 0, NULL, 2);
}
