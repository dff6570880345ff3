// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_html.c - `rocemeter report --format html`: one pass over the
 * epochs report selects, kept compact in memory, then aggregated into time
 * buckets per observation point, the top connections (their timelines and
 * a heatmap of positions never seen) and the collector's own figures; all
 * of it as one JSON document (jansson) inside the page of report_html.page,
 * with D3 (Debian's libjs-d3) inlined so that the file opens offline.
 */
#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/health.h"
#include "common/jsonw.h"
#include "common/safe_text.h"
#include "common/report_text.h"
#include "common/timefmt.h"
#include "report_html.h"
#include "report_summary.h"
#include "report_table.h"
#include "rocemeter/seqobs.h"
#include "common/sort.h"

/* The page (HTML, CSS and the drawing code), compiled in: mk/report.mk names it as a prerequisite. */
extern const char rm_html_page[] __attribute__((visibility("hidden")));
__asm__(".pushsection .rodata\n"
	".balign 16\n"
	".globl rm_html_page\n"
	".hidden rm_html_page\n"
	"rm_html_page:\n"
	".incbin \"user/report/report_html.page\"\n"
	".byte 0\n"
	".popsection\n");

#define U(e, c)      ((e)->u[RM_ER_##c])
#define T(e, c)      ((e)->t[RM_ER_##c])
#define ISNULL(e, c) ((e)->null[RM_ER_##c])

/* Beside the kinds of health.h (0: clean): an epoch without an accepted report, no measurement. */
#define H_NO_MEAS RM_HEALTH_BIT(RM_HEALTH__N)

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* The health of an epoch (common/health.h), or H_NO_MEAS. */
static unsigned epoch_health(const struct rm_epoch_read *e)
{
	struct rm_health_counters c = rm_table_health(e);

	return ISNULL(e, REQ) ? H_NO_MEAS : rm_health_of(&c);
}

static const char *const outcome_names[] = { "complete", "incomplete", "invalid", "open", "other" };
#define N_OUTCOME 5

/*
 * How an epoch ended: still open, a final record without a closure reason,
 * a final record with each closure reason of common/report_text.h (its
 * first in that table's order: C_REASON + enum rm_closure), or retired
 * without a final record.
 */
enum { C_OPEN, C_CLOSED, C_REASON, C_NO_FINAL = C_REASON + RM_CLOSURE__N, N_CLOSURE };

static unsigned outcome_index(const char *s)
{
	for (unsigned i = 0; i < N_OUTCOME - 1; i++)
		if (s && !strcmp(s, outcome_names[i]))
			return i;
	return N_OUTCOME - 1;
}

static unsigned closure_index(const struct rm_epoch_read *e, unsigned outcome)
{
	uint16_t flags = (uint16_t)U(e, FLAGS_SEEN);
	int c = rm_closure_of(flags);

	if (!(flags & RM_FLAG_FINAL_EPOCH))
		return outcome == 3 ? C_OPEN : C_NO_FINAL;
	return c < 0 ? C_CLOSED : C_REASON + (unsigned)c;
}

static const char *closure_name(unsigned i)
{
	if (i == C_OPEN)
		return "open (no final record yet)";
	if (i == C_NO_FINAL)
		return "retired without a final record";
	if (i == C_CLOSED)
		return rm_report_state_text(RM_FLAG_FINAL_EPOCH);
	return rm_report_state_text(RM_FLAG_FINAL_EPOCH | rm_closure_mask((enum rm_closure)(i - C_REASON)));
}

/* The closure reasons of an epoch's flags, as bits 1u << enum rm_closure (an epoch may carry two). */
static unsigned closure_bits(const struct rm_epoch_read *e)
{
	unsigned bits = 0;

	for (int c = 0; c < RM_CLOSURE__N; c++)
		if (U(e, FLAGS_SEEN) & rm_closure_mask((enum rm_closure)c))
			bits |= 1u << c;
	return bits;
}

/* One epoch as the page needs it. */
struct h_epoch {
	uint64_t start, end; /* flowStart..flowEnd, or first..last seen without a measurement */
	uint64_t t;          /* where it is counted in time: flowEnd, or last seen */
	uint64_t never, filled, repeated, late, requests, missing, epoch_id;
	uint32_t conn;
	uint8_t health, closure, outcome;
	uint8_t reasons; /* closure_bits() */
};

/* One connection at one observation point: the record key without the epoch. */
struct h_conn {
	uint64_t obs, qp, pkey, vlan0, vlan1;
	int has_vlan;
	char *src, *dst;
	char *name;                         /* the observation point's name (rm_html_opts obs_name), NULL: none known */
	const struct rm_exporter *exporter; /* whose epochs (h_ctx exporters) */
	uint64_t epochs, requests, never, expired, abandoned, filled, repeated, late, pending, not_clean;
	uint64_t outcomes[N_OUTCOME];
	uint64_t closures[RM_CLOSURE__N], closed; /* epochs closed with each closure reason; with any, once */
	int rank;                                 /* place among the shown connections, -1: not shown */
	uint64_t ordinal;                         /* epochs met so far in the timeline pass */
};

struct h_totals {
	uint64_t epochs, measured, requests, never, expired, abandoned, filled, repeated, late, pending, skipped;
	uint64_t kinds[RM_HEALTH__N + 1]; /* measured epochs: clean, then with each kind of health.h */
	uint64_t outcomes[N_OUTCOME], closures[N_CLOSURE];
	/* what the collector knows */
	uint64_t no_meas, gaps, missing, missing_initial, with_gaps, repeats, stale, ignored, unsupported;
};

struct h_ctx {
	struct h_epoch *ep;
	size_t n, cap;
	struct h_conn *conn;
	size_t n_conn, cap_conn;
	GHashTable *by_key;    /* struct rm_conn_key (without the domain) -> conn index + 1 */
	GHashTable *exporters; /* the exporter identities met (rm_exporter_index_new()) */
	GHashTable *reasons;   /* "outcome\treason" -> count */
	struct h_totals tot;
	uint64_t t_min, t_max, x_min, x_max;
	json_t *limits;
	int oom;
	const struct rm_html_opts *opts; /* obs_name: the observation points' names */
};

/* An unsigned value for the page: a JSON number while JavaScript holds it exactly, else decimal text. */
static json_t *num(uint64_t v)
{
	char buf[24];

	if (v <= (1ULL << 53))
		return json_integer((json_int_t)v);
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return json_string(buf);
}

static void set(json_t *o, const char *k, json_t *v)
{
	json_object_set_new(o, k, v);
}

static int find_conn(struct h_ctx *c, const struct rm_epoch_read *e, uint32_t *idx)
{
	struct rm_conn_key key;
	gpointer v;
	struct h_conn *n;
	const char *name;
	const struct rm_exporter *x = rm_exporter_of(c->exporters, e);

	rm_conn_key_of(e, 0, x->number, &key);
	v = g_hash_table_lookup(c->by_key, &key);
	if (v) {
		*idx = (uint32_t)(GPOINTER_TO_SIZE(v) - 1);
		return 0;
	}
	if (c->n_conn == c->cap_conn) {
		size_t cap = c->cap_conn ? 2 * c->cap_conn : 256;
		void *p = realloc(c->conn, cap * sizeof(*c->conn));

		if (!p)
			return -ENOMEM;
		c->conn = p;
		c->cap_conn = cap;
	}
	n = &c->conn[c->n_conn];
	memset(n, 0, sizeof(*n));
	n->obs = U(e, OBS);
	n->qp = U(e, QP);
	n->pkey = U(e, PKEY);
	n->has_vlan = U(e, HAS_VLAN) != 0;
	n->vlan0 = U(e, VLAN0);
	n->vlan1 = U(e, VLAN1);
	n->src = strdup(T(e, SRC) ? T(e, SRC) : "");
	n->dst = strdup(T(e, DST) ? T(e, DST) : "");
	n->rank = -1;
	n->exporter = x;
	if (c->opts->obs_name && (name = c->opts->obs_name(c->opts->obs_name_arg, e))) {
		size_t cap = 4 * strlen(name) + 1; /* escaped as the text report does (safe_text.h) */

		if (!(n->name = malloc(cap)))
			return -ENOMEM;
		rm_text_escape(name, n->name, cap);
	}
	if (!n->src || !n->dst)
		return -ENOMEM;
	g_hash_table_insert(c->by_key, g_memdup2(&key, (guint)rm_conn_key_len(&key)), GSIZE_TO_POINTER(c->n_conn + 1));
	*idx = (uint32_t)c->n_conn++;
	return 0;
}

/* The collector's side of an epoch: coverage, ignored records, outcome reasons. */
static void count_collector(struct h_ctx *c, const struct rm_epoch_read *e, unsigned outcome)
{
	struct h_totals *t = &c->tot;
	char key[300];
	gpointer v, old;
	size_t lo, lr;

	t->gaps = sat_add(t->gaps, U(e, GAPS));
	t->missing = sat_add(t->missing, U(e, MISSING));
	t->missing_initial = sat_add(t->missing_initial, U(e, MISS_INIT));
	t->with_gaps += U(e, MISSING) != 0;
	t->repeats = sat_add(t->repeats, U(e, REPEATS));
	t->stale = sat_add(t->stale, U(e, STALE));
	t->ignored = sat_add(t->ignored, U(e, IGNORED));
	t->unsupported = sat_add(t->unsupported, U(e, UNSUP));
	if (!T(e, REASON) || !T(e, REASON)[0])
		return;
	/* "outcome\treason", without printf or a copy once the key is known (once per epoch with a reason) */
	lo = strlen(outcome_names[outcome]);
	lr = strnlen(T(e, REASON), sizeof(key) - lo - 2);
	memcpy(key, outcome_names[outcome], lo);
	key[lo] = '\t';
	memcpy(key + lo + 1, T(e, REASON), lr);
	key[lo + 1 + lr] = '\0';
	if (g_hash_table_lookup_extended(c->reasons, key, &old, &v)) {
		g_hash_table_steal(c->reasons, old);
		g_hash_table_insert(c->reasons, old, GSIZE_TO_POINTER(GPOINTER_TO_SIZE(v) + 1));
	} else {
		g_hash_table_insert(c->reasons, g_strdup(key), GSIZE_TO_POINTER(1));
	}
}

/* The sequence counters of a measured epoch, into its connection and the totals. */
static void count_sequence(struct h_ctx *c, const struct rm_epoch_read *e, struct h_conn *n, struct h_epoch *x)
{
	struct h_totals *t = &c->tot;

	x->never = sat_add(U(e, EXP), U(e, ABAN));
	x->filled = U(e, FILL);
	x->repeated = U(e, REP);
	x->late = U(e, LATE);
	x->requests = U(e, REQ);
	n->requests = sat_add(n->requests, x->requests);
	n->never = sat_add(n->never, x->never);
	n->expired = sat_add(n->expired, U(e, EXP));
	n->abandoned = sat_add(n->abandoned, U(e, ABAN));
	n->filled = sat_add(n->filled, x->filled);
	n->repeated = sat_add(n->repeated, x->repeated);
	n->late = sat_add(n->late, x->late);
	n->pending = sat_add(n->pending, U(e, PEND));
	n->not_clean += x->health != 0;
	t->measured++;
	t->requests = sat_add(t->requests, x->requests);
	t->never = sat_add(t->never, x->never);
	t->expired = sat_add(t->expired, U(e, EXP));
	t->abandoned = sat_add(t->abandoned, U(e, ABAN));
	t->filled = sat_add(t->filled, x->filled);
	t->repeated = sat_add(t->repeated, x->repeated);
	t->late = sat_add(t->late, x->late);
	t->pending = sat_add(t->pending, U(e, PEND));
	t->skipped = sat_add(t->skipped, U(e, SKIP));
	t->kinds[0] += x->health == 0;
	for (unsigned k = 0; k < RM_HEALTH__N; k++)
		t->kinds[k + 1] += (x->health & RM_HEALTH_BIT(k)) != 0;
}

static int take_epoch(void *arg, const struct rm_epoch_read *e)
{
	struct h_ctx *c = arg;
	struct h_epoch *x;
	struct h_conn *n;
	uint32_t idx;

	if (c->opts->select) { /* --observation-point, --reason: by the name of the epoch's point */
		struct rm_epoch_read named = *e;

		named.obs_name = c->opts->obs_name ? c->opts->obs_name(c->opts->obs_name_arg, e) : NULL;
		if (!rm_select_epoch(c->opts->select, &named))
			return 0;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 4096;
		void *p = realloc(c->ep, cap * sizeof(*c->ep));

		if (!p)
			goto oom;
		c->ep = p;
		c->cap = cap;
	}
	if (find_conn(c, e, &idx))
		goto oom;
	x = &c->ep[c->n++];
	memset(x, 0, sizeof(*x));
	n = &c->conn[idx];
	x->conn = idx;
	x->epoch_id = U(e, EPOCH);
	x->health = (uint8_t)epoch_health(e);
	x->outcome = (uint8_t)outcome_index(T(e, OUTCOME));
	x->closure = (uint8_t)closure_index(e, x->outcome);
	x->reasons = (uint8_t)closure_bits(e);
	x->missing = U(e, MISSING);
	for (int k = 0; k < RM_CLOSURE__N; k++)
		n->closures[k] += (x->reasons >> k) & 1;
	n->closed += x->reasons != 0;
	if (ISNULL(e, REQ)) {
		x->start = U(e, FIRST_SEEN);
		x->end = x->t = U(e, LAST_SEEN);
		c->tot.no_meas++;
	} else {
		x->start = U(e, START);
		x->end = x->t = U(e, END);
		count_sequence(c, e, n, x);
	}
	n->epochs++;
	n->outcomes[x->outcome]++;
	c->tot.epochs++;
	c->tot.outcomes[x->outcome]++;
	c->tot.closures[x->closure]++;
	count_collector(c, e, x->outcome);
	if (c->n == 1 || x->t < c->t_min)
		c->t_min = x->t;
	if (c->n == 1 || x->t > c->t_max)
		c->t_max = x->t;
	if (c->n == 1 || x->start < c->x_min)
		c->x_min = x->start;
	if (c->n == 1 || x->end > c->x_max)
		c->x_max = x->end;
	return 0;
oom:
	c->oom = 1;
	return -ENOMEM;
}

/* The bucket width: the first of these (then days doubling) that keeps at most RM_HTML_BUCKETS_MAX buckets. */
static uint64_t bucket_width(uint64_t t_min, uint64_t t_max)
{
	static const uint64_t ladder[] = { 1000,    2000,    5000,     10000,    15000,    30000,
					   60000,   120000,  300000,   600000,   900000,   1800000,
					   3600000, 7200000, 10800000, 21600000, 43200000, 86400000 };
	uint64_t w = 0;

	for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++) {
		w = ladder[i];
		if ((t_max / w - t_min / w) < RM_HTML_BUCKETS_MAX)
			return w;
	}
	while ((t_max / w - t_min / w) >= RM_HTML_BUCKETS_MAX && w < UINT64_MAX / 2)
		w *= 2;
	return w;
}

struct h_grid {
	uint64_t w, first; /* bucket width (ms) and the first bucket's index (its start / w) */
	size_t nb;
};

static size_t bucket_of(const struct h_grid *g, uint64_t t)
{
	return (size_t)(t / g->w - g->first);
}

static int cmp_conn(const void *pa, const void *pb, void *arg)
{
	const struct h_conn *conns = arg, *a = &conns[*(const size_t *)pa], *b = &conns[*(const size_t *)pb];
	/* as --summary: never seen, epochs closed with a reason, the other kinds, requests, most first, then the key */
	const uint64_t ka[] = { a->never, a->closed, a->pending, a->filled, a->repeated, a->late, a->requests },
		       kb[] = { b->never, b->closed, b->pending, b->filled, b->repeated, b->late, b->requests };
	int r;

	for (size_t i = 0; i < sizeof(ka) / sizeof(ka[0]); i++)
		if (ka[i] != kb[i])
			return ka[i] < kb[i] ? 1 : -1;
	if ((r = strcmp(a->src, b->src)) || (r = strcmp(a->dst, b->dst)))
		return r;
	if (a->qp != b->qp)
		return a->qp < b->qp ? -1 : 1;
	if (a->obs != b->obs)
		return a->obs < b->obs ? -1 : 1;
	return a->pkey < b->pkey ? -1 : a->pkey > b->pkey;
}

/* The exporter identity of a row: "exporter" (rm_exporter_label(), escaped as the names are), peer_name, peer_subject (null: none). */
static void set_exporter(json_t *o, const struct rm_exporter *x)
{
	char label[4 * 256 + 1];

	set(o, "exporter", rm_json_text(rm_text_escape(rm_exporter_label(x), label, sizeof(label))));
	set(o, "peer_name", rm_json_text(x->peer_name[0] ? x->peer_name : NULL));
	set(o, "peer_subject", rm_json_text(x->peer_subject[0] ? x->peer_subject : NULL));
}

/* A series of nb counters as a JSON array. */
static json_t *series(const uint64_t *v, size_t nb)
{
	json_t *a = json_array();

	for (size_t i = 0; i < nb; i++)
		json_array_append_new(a, num(v[i]));
	return a;
}

/* Epochs by closure reason: an object of every reason's key (rm_closure_key()). */
static json_t *closures_json(const uint64_t *v)
{
	json_t *o = json_object();

	for (int k = 0; k < RM_CLOSURE__N; k++)
		set(o, rm_closure_key((enum rm_closure)k), num(v[k]));
	return o;
}

static json_t *conn_json(const struct h_conn *n)
{
	json_t *o = json_object(), *oc = json_object();
	char qp[16];

	snprintf(qp, sizeof(qp), "0x%06" PRIx64, n->qp);
	set(o, "observationPointId", num(n->obs));
	set(o, "observation_point_name", rm_json_text(n->name));
	set_exporter(o, n->exporter);
	set(o, "src", rm_json_text(n->src));
	set(o, "dst", rm_json_text(n->dst));
	set(o, "rdmaDestinationQP", json_string(qp));
	set(o, "rdmaPartitionKey", num(n->pkey));
	if (n->has_vlan) {
		set(o, "vlanId", num(n->vlan0));
		set(o, "dot1qCustomerVlanId", num(n->vlan1));
	}
	set(o, "epochs", num(n->epochs));
	set(o, "not_clean", num(n->not_clean));
	set(o, "requests", num(n->requests));
	set(o, "never_seen", num(n->never));
	set(o, "expired", num(n->expired));
	set(o, "abandoned", num(n->abandoned));
	set(o, "seen_late", num(n->filled));
	set(o, "repeated", num(n->repeated));
	set(o, "unclassified_late", num(n->late));
	set(o, "pending", num(n->pending));
	for (unsigned i = 0; i < N_OUTCOME; i++)
		if (n->outcomes[i])
			set(oc, outcome_names[i], num(n->outcomes[i]));
	set(o, "outcomes", oc);
	set(o, "closures", closures_json(n->closures));
	return o;
}

/* One epoch of a timeline: [start, end, health, closure, outcome, never, seen late, repeated, late, requests, epoch]. */
static json_t *timeline_item(const struct h_epoch *x)
{
	json_t *a = json_array();

	json_array_append_new(a, num(x->start));
	json_array_append_new(a, num(x->end));
	json_array_append_new(a, json_integer(x->health));
	json_array_append_new(a, json_integer(x->closure));
	json_array_append_new(a, json_integer(x->outcome));
	json_array_append_new(a, num(x->never));
	json_array_append_new(a, num(x->filled));
	json_array_append_new(a, num(x->repeated));
	json_array_append_new(a, num(x->late));
	json_array_append_new(a, num(x->requests));
	json_array_append_new(a, num(x->epoch_id));
	return a;
}

/*
 * The top connections (by positions never seen, then pending, seen late,
 * repeated, unclassified late, requests): each with its totals, its heatmap row (positions never
 * seen per bucket) and its timeline (its last RM_HTML_TIMELINE_MAX epochs).
 */
static json_t *connections_json(struct h_ctx *c, const struct h_grid *g, unsigned top)
{
	size_t *order = malloc((c->n_conn + 1) * sizeof(*order)), shown;
	json_t *rows = json_array(), *o = json_object();
	uint64_t *heat;
	json_t **tl;

	for (size_t i = 0; order && i < c->n_conn; i++)
		order[i] = i;
	if (order)
		g_qsort_with_data(order, (gint)c->n_conn, sizeof(*order), cmp_conn, c->conn);
	shown = c->n_conn < top ? c->n_conn : top;
	heat = calloc(shown * g->nb + 1, sizeof(*heat));
	tl = calloc(shown + 1, sizeof(*tl));
	if (!order || !heat || !tl) {
		c->oom = 1;
		shown = 0;
	}
	for (size_t r = 0; r < shown; r++) {
		c->conn[order[r]].rank = (int)r;
		tl[r] = json_array();
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct h_epoch *x = &c->ep[i];
		struct h_conn *n = &c->conn[x->conn];

		if (n->rank < 0)
			continue;
		heat[(size_t)n->rank * g->nb + bucket_of(g, x->t)] += x->never;
		if (n->ordinal++ + RM_HTML_TIMELINE_MAX >= n->epochs)
			json_array_append_new(tl[n->rank], timeline_item(x));
	}
	for (size_t r = 0; r < shown; r++) {
		json_t *row = conn_json(&c->conn[order[r]]);

		set(row, "heat", series(heat + r * g->nb, g->nb));
		set(row, "timeline", tl[r]);
		json_array_append_new(rows, row);
	}
	set(o, "total", num(c->n_conn));
	set(o, "shown", num(shown));
	set(o, "timeline_max", num(RM_HTML_TIMELINE_MAX));
	set(o, "rows", rows);
	free(order);
	free(heat);
	free(tl);
	return o;
}

struct h_obs {
	const char *name;                   /* the first of its connections' names (h_conn name) */
	const struct rm_exporter *exporter; /* whose point (h_conn exporter) */
	uint64_t id, never, filled, repeated, late, requests, epochs;
	uint64_t closures[RM_CLOSURE__N]; /* epochs closed with each closure reason */
	uint64_t *s; /* OBS_SERIES series of nb buckets: requests, never, seen late, repeated, late, closures */
};

/* The series of a point: 5 of the sequence (measured epochs), then the epochs closed with each reason. */
#define OBS_SERIES (5 + RM_CLOSURE__N)

static int cmp_obs(const void *pa, const void *pb)
{
	const struct h_obs *a = pa, *b = pb;

	if (a->never != b->never)
		return a->never < b->never ? 1 : -1;
	if (a->requests != b->requests)
		return a->requests < b->requests ? 1 : -1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->exporter->number < b->exporter->number ? -1 : a->exporter->number > b->exporter->number;
}

static json_t *obs_json(const struct h_obs *p, size_t nb)
{
	static const char *const names[] = { "requests", "never_seen", "seen_late", "repeated", "unclassified_late" };
	json_t *o = json_object(), *s = json_object(), *cs = json_object();

	set(o, "observationPointId", num(p->id));
	set(o, "observation_point_name", rm_json_text(p->name));
	set_exporter(o, p->exporter);
	set(o, "epochs", num(p->epochs));
	set(o, "requests", num(p->requests));
	set(o, "never_seen", num(p->never));
	set(o, "seen_late", num(p->filled));
	set(o, "repeated", num(p->repeated));
	set(o, "unclassified_late", num(p->late));
	set(o, "closures", closures_json(p->closures));
	for (size_t k = 0; k < 5; k++)
		set(s, names[k], series(p->s + k * nb, nb));
	for (int k = 0; k < RM_CLOSURE__N; k++)
		set(cs, rm_closure_key((enum rm_closure)k), series(p->s + (5 + (size_t)k) * nb, nb));
	set(s, "closures", cs);
	set(o, "series", s);
	return o;
}

/* Per observation point of each exporter: totals and the sequence counters per time bucket (measured epochs only). */
static json_t *observation_points_json(struct h_ctx *c, const struct h_grid *g)
{
	/* "point/exporter number" -> row + 1; at[connection] its row */
	GHashTable *idx = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	size_t *at = calloc(c->n_conn + 1, sizeof(*at));
	struct h_obs *p = NULL;
	size_t np = 0;
	json_t *rows = json_array(), *o = json_object();

	if (!at)
		c->oom = 1;
	for (size_t i = 0; at && i < c->n_conn; i++) {
		char *k = g_strdup_printf("%" PRIu64 "/%" PRIu64, c->conn[i].obs, c->conn[i].exporter->number);
		gpointer v = g_hash_table_lookup(idx, k);
		struct h_obs *q;

		if (!v) {
			void *m = realloc(p, (np + 1) * sizeof(*p));

			if (!m) {
				g_free(k);
				c->oom = 1;
				break;
			}
			p = m;
			memset(&p[np], 0, sizeof(*p));
			p[np].id = c->conn[i].obs;
			p[np].exporter = c->conn[i].exporter;
			g_hash_table_insert(idx, k, GSIZE_TO_POINTER(++np));
			v = GSIZE_TO_POINTER(np);
		} else {
			g_free(k);
		}
		at[i] = GPOINTER_TO_SIZE(v) - 1;
		q = &p[at[i]];
		if (!q->name)
			q->name = c->conn[i].name;
		q->epochs += c->conn[i].epochs;
		q->requests = sat_add(q->requests, c->conn[i].requests);
		q->never = sat_add(q->never, c->conn[i].never);
		q->filled = sat_add(q->filled, c->conn[i].filled);
		q->repeated = sat_add(q->repeated, c->conn[i].repeated);
		q->late = sat_add(q->late, c->conn[i].late);
		for (int k = 0; k < RM_CLOSURE__N; k++)
			q->closures[k] += c->conn[i].closures[k];
	}
	for (size_t i = 0; i < np; i++)
		if (!(p[i].s = calloc(OBS_SERIES * g->nb + 1, sizeof(uint64_t))))
			c->oom = 1;
	for (size_t i = 0; !c->oom && i < c->n; i++) {
		const struct h_epoch *x = &c->ep[i];
		struct h_obs *q = &p[at[x->conn]];
		size_t b = bucket_of(g, x->t);
		const uint64_t v[] = { x->requests, x->never, x->filled, x->repeated, x->late };

		for (int k = 0; k < RM_CLOSURE__N; k++)
			q->s[(5 + (size_t)k) * g->nb + b] += (x->reasons >> k) & 1;
		if (x->health & H_NO_MEAS)
			continue;
		for (size_t k = 0; k < 5; k++)
			q->s[k * g->nb + b] = sat_add(q->s[k * g->nb + b], v[k]);
	}
	free(at);
	/* the series are indexed by ID above: sort only now */
	rm_sort(p, np, sizeof(*p), cmp_obs);
	for (size_t i = 0; i < np; i++) {
		if (i < RM_HTML_OBS_POINTS_MAX && !c->oom)
			json_array_append_new(rows, obs_json(&p[i], g->nb));
		free(p[i].s);
	}
	set(o, "total", num(np));
	set(o, "shown", num(np < RM_HTML_OBS_POINTS_MAX ? np : RM_HTML_OBS_POINTS_MAX));
	set(o, "rows", rows);
	free(p);
	g_hash_table_destroy(idx);
	return o;
}

static json_t *totals_json(const struct h_totals *t)
{
	json_t *o = json_object(), *k = json_object(), *oc = json_object(), *cl = json_array();

	set(o, "epochs", num(t->epochs));
	set(o, "measured", num(t->measured));
	set(o, "requests", num(t->requests));
	set(o, "never_seen", num(t->never));
	set(o, "expired", num(t->expired));
	set(o, "abandoned", num(t->abandoned));
	set(o, "seen_late", num(t->filled));
	set(o, "repeated", num(t->repeated));
	set(o, "unclassified_late", num(t->late));
	set(o, "pending", num(t->pending));
	set(o, "skipped", num(t->skipped));
	set(k, "clean", num(t->kinds[0]));
	for (unsigned i = 0; i < RM_HEALTH__N; i++)
		set(k, rm_health_key((enum rm_health_kind)i), num(t->kinds[i + 1]));
	set(o, "epochs_by_kind", k);
	for (unsigned i = 0; i < N_OUTCOME; i++)
		set(oc, outcome_names[i], num(t->outcomes[i]));
	set(o, "outcomes", oc);
	for (unsigned i = 0; i < N_CLOSURE; i++) {
		json_t *e = json_object();

		set(e, "name", json_string(closure_name(i)));
		/* a closure reason's key (rm_closure_key()), null for the other ways of ending */
		set(e, "key",
		    i >= C_REASON && i < C_NO_FINAL ? json_string(rm_closure_key((enum rm_closure)(i - C_REASON)))
						    : json_null());
		set(e, "epochs", num(t->closures[i]));
		json_array_append_new(cl, e);
	}
	set(o, "closures", cl);
	return o;
}

static gint cmp_reason(gconstpointer a, gconstpointer b)
{
	return strcmp(a, b);
}

/* What the collector knows, apart from the sequence: outcomes, coverage, reasons, series, the last runs. */
static json_t *collector_json(struct h_ctx *c, const struct h_grid *g)
{
	const struct h_totals *t = &c->tot;
	json_t *o = json_object(), *rs = json_array(), *s = json_object();
	GList *keys = g_list_sort(g_hash_table_get_keys(c->reasons), cmp_reason);
	uint64_t *v = calloc(3 * g->nb + 1, sizeof(*v));

	set(o, "epochs_without_measurement", num(t->no_meas));
	set(o, "invalid_epochs", num(t->outcomes[2]));
	set(o, "incomplete_epochs", num(t->outcomes[1]));
	set(o, "epochs_with_report_gaps", num(t->with_gaps));
	set(o, "report_gaps", num(t->gaps));
	set(o, "missing_reports", num(t->missing));
	set(o, "missing_initial", num(t->missing_initial));
	set(o, "identical_repeats", num(t->repeats));
	set(o, "stale", num(t->stale));
	set(o, "ignored_after_invalid", num(t->ignored));
	set(o, "unsupported_records", num(t->unsupported));
	for (GList *l = keys; l; l = l->next) {
		const char *k = l->data, *tab = strchr(k, '\t');
		json_t *r = json_object();

		set(r, "outcome", json_stringn(k, (size_t)(tab - k)));
		set(r, "reason", rm_json_text(tab + 1));
		set(r, "epochs", num(GPOINTER_TO_SIZE(g_hash_table_lookup(c->reasons, k))));
		json_array_append_new(rs, r);
	}
	g_list_free(keys);
	set(o, "reasons", rs);
	for (size_t i = 0; v && i < c->n; i++) {
		size_t b = bucket_of(g, c->ep[i].t);

		v[b] += c->ep[i].outcome == 2;
		v[g->nb + b] += c->ep[i].missing != 0;
		v[2 * g->nb + b] += c->ep[i].health & H_NO_MEAS ? 1 : 0;
	}
	if (v) {
		set(s, "invalid_epochs", series(v, g->nb));
		set(s, "epochs_with_report_gaps", series(v + g->nb, g->nb));
		set(s, "epochs_without_measurement", series(v + 2 * g->nb, g->nb));
	}
	set(o, "series", s);
	set(o, "runs", json_incref(c->limits));
	free(v);
	return o;
}

static json_t *named_json(const struct rm_named_u64 *v, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; i < n; i++)
		set(o, v[i].name, num(v[i].value));
	return o;
}

/* A collector's last run (report --limits), for the collector's panel. */
static int take_limits(void *arg, const struct rm_limits_read *l)
{
	struct h_ctx *c = arg;
	json_t *o = json_object(), *lim = named_json(l->limits, l->n_limits);

	if (l->collector_id)
		set(o, "collector_id", rm_json_text(l->collector_id));
	set(o, "run", num(l->run_id));
	set(o, "started_ms", num(l->started_ms));
	set(o, "listen", rm_json_text(l->listen));
	set(o, "transport", rm_json_text(l->transport));
	set(lim, "max_sessions", num(l->max_sessions));
	set(lim, "max_epochs_per_session", num(l->max_epochs));
	set(lim, "max_raw_records", num(l->max_raw_records));
	set(lim, "inactivity_timeout_ms", num(l->inactivity_timeout_ms));
	set(o, "limits", lim);
	set(o, "raw_records_stored", num(l->raw_records_stored));
	set(o, "refused_connections", named_json(l->refused, l->n_refused));
	set(o, "drops", named_json(l->drops, l->n_drops));
	json_array_append_new(c->limits, o);
	return 0;
}

static json_t *filter_json(const struct rm_read_filter *f, const struct rm_select *sel)
{
	json_t *o = json_object();
	char t[RM_TIME_TEXT_LEN];

	if (f->outcome)
		set(o, "outcome", rm_json_text(f->outcome));
	if (f->has_since)
		set(o, "since", json_string(rm_time_format(f->since, t, sizeof(t))));
	if (f->has_until)
		set(o, "until", json_string(rm_time_format(f->until, t, sizeof(t))));
	if (f->src) {
		char text[160];

		snprintf(text, sizeof(text), "%s -> %s, dest QP 0x%06" PRIx64, f->src, f->dst, f->qp);
		if (f->pkey >= 0)
			snprintf(text + strlen(text), sizeof(text) - strlen(text), ", P_Key 0x%04" PRIx64,
				 (uint64_t)f->pkey);
		set(o, "connection", json_string(text));
	}
	if (f->collector_id)
		set(o, "collector", rm_json_text(f->collector_id));
	if (sel && sel->point)
		set(o, "observation point", rm_json_text(sel->point));
	if (sel && sel->reason >= 0)
		set(o, "closure reason", json_string(rm_closure_key((enum rm_closure)sel->reason)));
	return o;
}

/* The kinds of health.h for the page: their bits, keys and words, then no measurement. */
static json_t *health_json(void)
{
	json_t *a = json_array();

	for (unsigned i = 0; i <= RM_HEALTH__N; i++) {
		json_t *o = json_object();

		set(o, "bit", json_integer(RM_HEALTH_BIT(i)));
		set(o, "key", json_string(i < RM_HEALTH__N ? rm_health_key((enum rm_health_kind)i) : "no_measurement"));
		set(o, "words",
		    json_string(i < RM_HEALTH__N ? rm_health_words((enum rm_health_kind)i) : "no measurement"));
		json_array_append_new(a, o);
	}
	return a;
}

/* The whole document the page draws from. */
static json_t *page_json(struct h_ctx *c, const struct rm_read_filter *f, const struct rm_html_opts *o)
{
	json_t *d = json_object(), *b = json_object();
	struct h_grid g = { .w = 1000, .first = 0, .nb = 1 };
	char t[RM_TIME_TEXT_LEN];

	if (c->n) {
		g.w = bucket_width(c->t_min, c->t_max);
		g.first = c->t_min / g.w;
		g.nb = (size_t)(c->t_max / g.w - g.first + 1);
	}
	set(d, "version", json_integer(1));
	set(d, "generated", json_string(rm_time_format(o->now_ms, t, sizeof(t))));
	set(d, "store", rm_json_text(o->store_label));
	set(d, "filters", filter_json(f, o->select));
	set(d, "health_kinds", health_json());
	set(b, "width_ms", num(g.w));
	set(b, "first_ms", num(g.first * g.w));
	set(b, "count", num(c->n ? g.nb : 0));
	set(b, "max", num(RM_HTML_BUCKETS_MAX));
	set(d, "buckets", b);
	set(d, "range", c->n ? json_pack("[oo]", num(c->x_min), num(c->x_max)) : json_null());
	set(d, "totals", totals_json(&c->tot));
	set(d, "observation_points", observation_points_json(c, &g));
	set(d, "exporters", num(g_hash_table_size(c->exporters)));
	set(d, "connections", connections_json(c, &g, o->top ? o->top : RM_HTML_TOP_DEFAULT));
	set(d, "collector", collector_json(c, &g));
	return d;
}

char *rm_report_html_d3(size_t *len, char *err, size_t errlen)
{
	const char *path = getenv("ROCEMETER_D3_JS");
	gchar *text = NULL;
	gsize n = 0;
	GError *ge = NULL;

	if (!path || !path[0])
		path = RM_HTML_D3_PATH;
	if (!g_file_get_contents(path, &text, &n, &ge)) {
		snprintf(err, errlen,
			 "%s: %s (the HTML report inlines D3 from Debian's package libjs-d3: apt-get install libjs-d3)",
			 path, ge ? ge->message : "cannot be read");
		g_clear_error(&ge);
		return NULL;
	}
	if (strstr(text, "</script") || strstr(text, "</SCRIPT")) {
		snprintf(err, errlen, "%s: holds '</script' and cannot be inlined into the page", path);
		g_free(text);
		return NULL;
	}
	*len = n;
	return text;
}

/* The page: the template with D3 and the data at its two markers; '<' in the JSON as \u003c. */
static int write_page(FILE *f, const char *d3, const char *data)
{
	const char *d3_at = strstr(rm_html_page, "@@D3@@"), *data_at = strstr(rm_html_page, "@@DATA@@");

	if (!d3_at || !data_at || data_at < d3_at)
		return -EINVAL;
	fwrite(rm_html_page, 1, (size_t)(d3_at - rm_html_page), f);
	fputs(d3, f);
	fwrite(d3_at + 6, 1, (size_t)(data_at - d3_at - 6), f);
	for (const char *p = data; *p; p++) {
		if (*p == '<')
			fputs("\\u003c", f);
		else
			fputc(*p, f);
	}
	fputs(data_at + 8, f);
	return ferror(f) ? -EIO : 0;
}

static void ctx_free(struct h_ctx *c)
{
	for (size_t i = 0; i < c->n_conn; i++) {
		free(c->conn[i].src);
		free(c->conn[i].dst);
		free(c->conn[i].name);
	}
	free(c->conn);
	free(c->ep);
	if (c->by_key)
		g_hash_table_destroy(c->by_key);
	if (c->exporters)
		g_hash_table_destroy(c->exporters);
	if (c->reasons)
		g_hash_table_destroy(c->reasons);
	json_decref(c->limits);
}

/* Write text to path through a temporary file renamed over it ("-": standard output). */
static int write_file(const char *path, const char *d3, const char *data, char *err, size_t errlen)
{
	gchar *tmp = g_strdup_printf("%s.tmp.%ld", path, (long)getpid());
	FILE *f = strcmp(path, "-") ? fopen(tmp, "w") : stdout;
	int rc;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno)); /* the name the operator gave, not tmp */
		g_free(tmp);
		return rc;
	}
	rc = write_page(f, d3, data);
	if (f == stdout) {
		rc = rc || fflush(f) ? -EIO : 0;
	} else {
		if (fclose(f))
			rc = -EIO;
		if (!rc && rename(tmp, path))
			rc = -errno;
		if (rc)
			unlink(tmp);
	}
	if (rc)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	g_free(tmp);
	return rc;
}

int rm_report_html_write(struct rm_store_reader *r, const struct rm_read_filter *f, const struct rm_html_opts *o,
			 const char *d3, const char *path, char *err, size_t errlen)
{
	struct h_ctx c = { .opts = o };
	json_t *doc;
	char *data;
	int rc;

	c.by_key = rm_conn_index_new();
	c.exporters = rm_exporter_index_new();
	c.reasons = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	c.limits = json_array();
	rc = rm_store_reader_epochs(r, f, take_epoch, &c, err, errlen);
	if (!rc || c.oom) {
		rc = c.oom ? -ENOMEM : 0;
		if (rc)
			snprintf(err, errlen, "out of memory after %zu epochs", c.n);
	}
	if (!rc) {
		rc = rm_store_reader_limits(r, f->collector_id, take_limits, &c, err, errlen);
		if (rc == -ENOENT)
			rc = 0;
	}
	if (rc) {
		ctx_free(&c);
		return rc;
	}
	doc = page_json(&c, f, o);
	data = c.oom ? NULL : json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	ctx_free(&c);
	if (!data) {
		snprintf(err, errlen, "out of memory building the page's data");
		return -ENOMEM;
	}
	rc = write_file(path, d3, data, err, errlen);
	free(data);
	return rc;
}
