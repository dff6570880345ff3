// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_summary.c - the per-connection summary of `report` (see
 * report_summary.h): a GLib hash table from the key to its row, the sort,
 * and the row as JSON and as text.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "common/jsonw.h"
#include "common/safe_text.h"
#include "report_summary.h"
#include "report_table.h"
#include "rocemeter/ipfix_ie.h"
#include "common/sort.h"

#define U(e, c)   ((e)->u[RM_ER_##c])
#define T(e, c)   ((e)->t[RM_ER_##c])
#define NUL(e, c) ((e)->null[RM_ER_##c])

static guint key_hash(gconstpointer p)
{
	const unsigned char *b = p;
	size_t n = rm_conn_key_len(p);
	guint h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	return rm_conn_key_len(a) == rm_conn_key_len(b) && !memcmp(a, b, rm_conn_key_len(a));
}

void *rm_conn_index_new(void)
{
	return g_hash_table_new_full(key_hash, key_equal, g_free, NULL);
}

size_t rm_conn_key_len(const struct rm_conn_key *k)
{
	return offsetof(struct rm_conn_key, addrs) + k->len;
}

static void exporter_free(gpointer p)
{
	struct rm_exporter *x = p;

	g_free(x->peer_name);
	g_free(x->peer_subject);
	g_free(x);
}

void *rm_exporter_index_new(void)
{
	return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, exporter_free);
}

const struct rm_exporter *rm_exporter_of(void *index, const struct rm_epoch_read *e)
{
	const char *n = e->peer_name ? e->peer_name : "", *s = e->peer_subject ? e->peer_subject : "";
	/* length-prefixed, so no subject (which holds '/') can spell another identity */
	char *k = g_strdup_printf("%zu:%s%zu:%s", strlen(n), n, strlen(s), s);
	struct rm_exporter *x = g_hash_table_lookup(index, k);

	if (x) {
		g_free(k);
		return x;
	}
	x = g_new(struct rm_exporter, 1);
	x->peer_name = g_strdup(n);
	x->peer_subject = g_strdup(s);
	x->number = g_hash_table_size(index) + 1;
	g_hash_table_insert(index, k, x);
	return x;
}

const char *rm_exporter_label(const struct rm_exporter *x)
{
	return x->peer_name[0] ? x->peer_name : x->peer_subject[0] ? x->peer_subject : "-";
}

void rm_conn_key_of(const struct rm_epoch_read *e, int with_domain, uint64_t exporter, struct rm_conn_key *k)
{
	const char *src = T(e, SRC) ? T(e, SRC) : "", *dst = T(e, DST) ? T(e, DST) : "";
	size_t ls = strnlen(src, 47), ld = strnlen(dst, 47);

	memset(k, 0, offsetof(struct rm_conn_key, addrs));
	k->n[0] = with_domain ? U(e, DOMAIN) : 0;
	k->n[1] = U(e, OBS);
	k->n[2] = U(e, QP);
	k->n[3] = U(e, PKEY);
	k->n[4] = U(e, HAS_VLAN);
	k->n[5] = U(e, VLAN0);
	k->n[6] = U(e, VLAN1);
	k->n[7] = exporter;
	memcpy(k->addrs, src, ls);
	k->addrs[ls] = '\0';
	memcpy(k->addrs + ls + 1, dst, ld);
	k->addrs[ls + 1 + ld] = '\0';
	k->len = ls + ld + 2;
}

int rm_summary_init(struct rm_summary *s)
{
	*s = (struct rm_summary){ 0 };
	s->index = rm_conn_index_new();
	s->exporters = rm_exporter_index_new();
	return s->index && s->exporters ? 0 : -ENOMEM;
}

void rm_summary_free(struct rm_summary *s)
{
	if (s->index)
		g_hash_table_destroy(s->index);
	if (s->exporters)
		g_hash_table_destroy(s->exporters);
	free(s->rows);
	*s = (struct rm_summary){ 0 };
}

static void add_sat(uint64_t *sum, uint64_t v)
{
	*sum = *sum > UINT64_MAX - v ? UINT64_MAX : *sum + v;
}

static struct rm_summary_row *row_of(struct rm_summary *s, const struct rm_epoch_read *e)
{
	struct rm_conn_key key;
	gpointer at;
	struct rm_summary_row *r;
	const struct rm_exporter *x = rm_exporter_of(s->exporters, e);

	rm_conn_key_of(e, 1, x->number, &key);
	at = g_hash_table_lookup(s->index, &key);
	if (at)
		return &s->rows[GPOINTER_TO_SIZE(at) - 1];
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct rm_summary_row *rows = realloc(s->rows, cap * sizeof(*rows));

		if (!rows)
			return NULL;
		s->rows = rows;
		s->cap = cap;
	}
	r = &s->rows[s->n++];
	*r = (struct rm_summary_row){
		.domain = U(e, DOMAIN),
		.point = U(e, OBS),
		.qp = U(e, QP),
		.pkey = U(e, PKEY),
		.vlan = { U(e, VLAN0), U(e, VLAN1) },
		.exporter = x,
		.family = (int)U(e, FAMILY),
		.has_vlan = (int)U(e, HAS_VLAN),
	};
	snprintf(r->src, sizeof(r->src), "%s", T(e, SRC));
	snprintf(r->name, sizeof(r->name), "%s", e->obs_name ? e->obs_name : "");
	snprintf(r->dst, sizeof(r->dst), "%s", T(e, DST));
	g_hash_table_insert(s->index, g_memdup2(&key, (guint)rm_conn_key_len(&key)), GSIZE_TO_POINTER(s->n));
	return r;
}

int rm_summary_add(struct rm_summary *s, const struct rm_epoch_read *e)
{
	struct rm_summary_row *r = row_of(s, e);
	struct rm_health_counters c;

	if (!r)
		return -ENOMEM;
	r->epochs++;
	for (int o = 0; o < RM_SUMMARY_OUTCOMES; o++)
		if (!strcmp(T(e, OUTCOME), rm_outcome_name((enum rm_outcome)o)))
			r->outcomes[o]++;
	for (int k = 0; k < RM_CLOSURE__N; k++)
		r->closures[k] += (U(e, FLAGS_SEEN) & rm_closure_mask((enum rm_closure)k)) != 0;
	if (rm_closure_of((uint16_t)U(e, FLAGS_SEEN)) >= 0)
		r->closed++;
	if (NUL(e, REQ)) {
		r->unmeasured++;
		return 0;
	}
	add_sat(&r->requests, U(e, REQ));
	add_sat(&r->skipped, U(e, SKIP));
	add_sat(&r->filled, U(e, FILL));
	add_sat(&r->expired, U(e, EXP));
	add_sat(&r->abandoned, U(e, ABAN));
	add_sat(&r->pending, U(e, PEND));
	add_sat(&r->repeated, U(e, REP));
	add_sat(&r->unclassified_late, U(e, LATE));
	c = rm_table_health(e);
	if (rm_health_of(&c))
		r->not_clean++;
	if (!r->first_start_ms || U(e, START) < r->first_start_ms)
		r->first_start_ms = U(e, START);
	if (U(e, END) > r->last_end_ms)
		r->last_end_ms = U(e, END);
	return 0;
}

struct rm_health_counters rm_summary_counters(const struct rm_summary_row *r)
{
	return (struct rm_health_counters){ .expired = r->expired,
					    .abandoned = r->abandoned,
					    .pending = r->pending,
					    .filled = r->filled,
					    .repeated = r->repeated,
					    .unclassified_late = r->unclassified_late };
}

/* -1, 0, 1 as a > b, a == b, a < b: larger first. */
static int larger_first(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int smaller_first(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

uint64_t rm_summary_closed(const struct rm_summary_row *r)
{
	return r->closed;
}

static int by_health(const void *pa, const void *pb)
{
	const struct rm_summary_row *a = pa, *b = pb;
	struct rm_health_counters ca = rm_summary_counters(a), cb = rm_summary_counters(b);
	int d;

	for (int k = 0; k < RM_HEALTH__N; k++) {
		if ((d = larger_first(rm_health_count(&ca, (enum rm_health_kind)k),
				      rm_health_count(&cb, (enum rm_health_kind)k))))
			return d;
		if (k == RM_HEALTH_NEVER_SEEN && (d = larger_first(a->closed, b->closed)))
			return d;
	}
	if ((d = larger_first(a->requests, b->requests)) || (d = smaller_first(a->domain, b->domain)) ||
	    (d = smaller_first(a->point, b->point)) || (d = strcmp(a->src, b->src)) || (d = strcmp(a->dst, b->dst)) ||
	    (d = smaller_first(a->qp, b->qp)) || (d = smaller_first(a->pkey, b->pkey)) ||
	    (d = smaller_first((uint64_t)a->has_vlan, (uint64_t)b->has_vlan)) ||
	    (d = smaller_first(a->vlan[0], b->vlan[0])) || (d = smaller_first(a->vlan[1], b->vlan[1])))
		return d;
	return smaller_first(a->exporter->number, b->exporter->number);
}

void rm_summary_sort(struct rm_summary *s)
{
	rm_sort(s->rows, s->n, sizeof(s->rows[0]), by_health);
}

#define IE(stem) rm_pf_name(RM_PF_##stem)

/* The outcomes in the order they are printed, complete first, as docs/json.md lists them. */
static const enum rm_outcome outcome_order[RM_SUMMARY_OUTCOMES] = { RM_OUTCOME_COMPLETE, RM_OUTCOME_INCOMPLETE,
								    RM_OUTCOME_INVALID, RM_OUTCOME_OPEN };

json_t *rm_summary_json(const struct rm_summary_row *r)
{
	json_t *o = json_object(), *k = json_object(), *out = json_object(), *t = json_object(), *h = json_object();
	json_t *x = json_object(), *cl = json_object();
	struct rm_health_counters c = rm_summary_counters(r);
	int six = r->family == 6;

	json_object_set_new(o, "observationDomainId", rm_json_u64(r->domain));
	/* the exporter identity the row is of (null: plain TCP), as the epochs' "exporter" names it */
	json_object_set_new(x, "peer_name", rm_json_text(r->exporter->peer_name[0] ? r->exporter->peer_name : NULL));
	json_object_set_new(x, "peer_subject",
			    rm_json_text(r->exporter->peer_subject[0] ? r->exporter->peer_subject : NULL));
	json_object_set_new(o, "exporter", x);
	json_object_set_new(k, IE(OBSERVATION_POINT_ID), rm_json_u64(r->point));
	json_object_set_new(k, six ? IE(SOURCE_IPV6_ADDRESS) : IE(SOURCE_IPV4_ADDRESS), rm_json_text(r->src));
	json_object_set_new(k, six ? IE(DESTINATION_IPV6_ADDRESS) : IE(DESTINATION_IPV4_ADDRESS), rm_json_text(r->dst));
	json_object_set_new(k, IE(RDMA_DESTINATION_QP), rm_json_u64(r->qp));
	json_object_set_new(k, IE(RDMA_PARTITION_KEY), rm_json_u64(r->pkey));
	if (r->has_vlan) {
		json_object_set_new(k, IE(VLAN_ID), rm_json_u64(r->vlan[0]));
		json_object_set_new(k, IE(DOT1Q_CUSTOMER_VLAN_ID), rm_json_u64(r->vlan[1]));
	}
	json_object_set_new(o, "key", k);
	json_object_set_new(o, "observation_point_name", rm_json_text(r->name[0] ? r->name : NULL));
	json_object_set_new(o, "epochs", rm_json_u64(r->epochs));
	json_object_set_new(o, "epochs_not_clean", rm_json_u64(r->not_clean));
	json_object_set_new(o, "epochs_without_measurement", rm_json_u64(r->unmeasured));
	for (size_t i = 0; i < RM_SUMMARY_OUTCOMES; i++)
		json_object_set_new(out, rm_outcome_name(outcome_order[i]), rm_json_u64(r->outcomes[outcome_order[i]]));
	json_object_set_new(o, "outcomes", out);
	json_object_set_new(t, IE(REQUEST_PACKET_TOTAL_COUNT), rm_json_u64(r->requests));
	json_object_set_new(t, IE(SKIPPED_PSN_TOTAL_COUNT), rm_json_u64(r->skipped));
	json_object_set_new(t, IE(FILLED_PSN_TOTAL_COUNT), rm_json_u64(r->filled));
	json_object_set_new(t, IE(EXPIRED_PSN_TOTAL_COUNT), rm_json_u64(r->expired));
	json_object_set_new(t, IE(ABANDONED_PSN_TOTAL_COUNT), rm_json_u64(r->abandoned));
	json_object_set_new(t, IE(PENDING_PSN_COUNT), rm_json_u64(r->pending));
	json_object_set_new(t, IE(REPEATED_PSN_TOTAL_COUNT), rm_json_u64(r->repeated));
	json_object_set_new(t, IE(UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT), rm_json_u64(r->unclassified_late));
	json_object_set_new(o, "totals", t);
	for (int i = 0; i < RM_HEALTH__N; i++)
		json_object_set_new(h, rm_health_key((enum rm_health_kind)i),
				    rm_json_u64(rm_health_count(&c, (enum rm_health_kind)i)));
	json_object_set_new(o, "health", h);
	for (int i = 0; i < RM_CLOSURE__N; i++)
		json_object_set_new(cl, rm_closure_key((enum rm_closure)i), rm_json_u64(r->closures[i]));
	json_object_set_new(o, "closures", cl);
	json_object_set_new(o, "first_flow_start_ms", r->first_start_ms ? rm_json_u64(r->first_start_ms) : json_null());
	json_object_set_new(o, "last_flow_end_ms", r->first_start_ms ? rm_json_u64(r->last_end_ms) : json_null());
	return o;
}

/* What a column of the summary shows. */
enum summary_cell {
	CELL_EXPORTER, /* rm_exporter_label() */
	CELL_OP,       /* the point, then its name */
	CELL_CONN,     /* rm_table_connection() */
	CELL_NUMBER,   /* the uint64_t at .at of the row, always a number */
	CELL_COUNT,    /* the uint64_t at .at of the row, "-" for 0 */
	CELL_NEVER,    /* positions never seen (health.h) */
	CELL_CLOSURE,  /* closures[.at] */
	CELL_OUTCOMES, /* outcomes_cell() */
};

/* When a column is shown. */
enum summary_show { SHOW_ALWAYS, SHOW_VERBOSE, SHOW_EXPORTER, SHOW_CLOSURE };

/* The summary's columns in order, each as wide as its header and cells (rm_table_add()). */
static const struct summary_col {
	struct rm_table_col col;
	enum summary_cell cell;
	enum summary_show show;
	size_t at; /* CELL_NUMBER, CELL_COUNT: offsetof the row's field; CELL_CLOSURE: enum rm_closure */
} summary_cols[] = {
#define ROW_AT(field) offsetof(struct rm_summary_row, field)
	{ { "EXPORTER", 0, 0 }, CELL_EXPORTER, SHOW_EXPORTER, 0 },
	{ { "OP", 0, 1 }, CELL_OP, SHOW_ALWAYS, 0 },
	{ { "CONNECTION", 0, 0 }, CELL_CONN, SHOW_ALWAYS, 0 },
	{ { "EPOCHS", 0, 1 }, CELL_NUMBER, SHOW_ALWAYS, ROW_AT(epochs) },
	{ { "REQUESTS", 0, 1 }, CELL_NUMBER, SHOW_ALWAYS, ROW_AT(requests) },
	{ { "NEVER SEEN", 0, 1 }, CELL_NEVER, SHOW_ALWAYS, 0 },
	{ { "SKIPPED", 0, 1 }, CELL_COUNT, SHOW_VERBOSE, ROW_AT(skipped) },
	{ { "EXPIRED", 0, 1 }, CELL_COUNT, SHOW_VERBOSE, ROW_AT(expired) },
	{ { "ABANDONED", 0, 1 }, CELL_COUNT, SHOW_VERBOSE, ROW_AT(abandoned) },
	{ { "PENDING", 0, 1 }, CELL_COUNT, SHOW_ALWAYS, ROW_AT(pending) },
	{ { "SEEN LATE", 0, 1 }, CELL_COUNT, SHOW_ALWAYS, ROW_AT(filled) },
	{ { "REPEATED", 0, 1 }, CELL_COUNT, SHOW_ALWAYS, ROW_AT(repeated) },
	{ { "UNCL LATE", 0, 1 }, CELL_COUNT, SHOW_ALWAYS, ROW_AT(unclassified_late) },
#define CLOSURE_COL_(suffix, words, head) { { head, 0, 1 }, CELL_CLOSURE, SHOW_CLOSURE, RM_CLOSURE_##suffix },
	RM_CLOSURE_REASONS(CLOSURE_COL_)
#undef CLOSURE_COL_
		{ { "NOT COMPLETE", 0, 0 }, CELL_OUTCOMES, SHOW_ALWAYS, 0 },
#undef ROW_AT
};
#define N_SUMMARY_COLS (sizeof(summary_cols) / sizeof(summary_cols[0]))
_Static_assert(N_SUMMARY_COLS <= RM_TABLE_MAX_COLS, "the summary's columns fit a table");

/* The epochs not complete by outcome ("1 incomplete, 2 open"), "-" when every epoch is complete. */
static void outcomes_cell(const struct rm_summary_row *r, char *buf, size_t len)
{
	size_t off = 0;

	snprintf(buf, len, "-");
	for (size_t i = 1; i < RM_SUMMARY_OUTCOMES; i++)
		if (r->outcomes[outcome_order[i]] && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%llu %s", off ? ", " : "",
						(unsigned long long)r->outcomes[outcome_order[i]],
						rm_outcome_name(outcome_order[i]));
}

static int col_shown(const struct summary_col *c, const struct rm_summary_view *v)
{
	switch (c->show) {
	case SHOW_VERBOSE:
		return v->verbose;
	case SHOW_EXPORTER:
		return v->with_exporter;
	case SHOW_CLOSURE:
		return (v->closures >> c->at) & 1;
	default:
		return 1;
	}
}

void rm_summary_text(struct rm_table *t, const struct rm_summary_row *r, const struct rm_summary_view *v)
{
	struct rm_table_col cols[N_SUMMARY_COLS];
	char op[48 + sizeof(r->name)], conn[160], n[N_SUMMARY_COLS][24], outcomes[160], exporter[4 * 256 + 1];
	struct rm_health_counters c = rm_summary_counters(r);
	const char *cells[N_SUMMARY_COLS];
	size_t m = 0;

	rm_text_escape(rm_exporter_label(r->exporter), exporter, sizeof(exporter));
	rm_table_point(r->domain, r->point, op, sizeof(op));
	if (r->name[0]) /* the observation point's name beside its ID, as the epochs' table shows it */
		snprintf(op + strlen(op), sizeof(op) - strlen(op), " %s", r->name);
	rm_table_connection(r->src, r->dst, r->qp, r->pkey, r->has_vlan, r->vlan[0], r->vlan[1], conn, sizeof(conn));
	outcomes_cell(r, outcomes, sizeof(outcomes));
	for (size_t i = 0; i < N_SUMMARY_COLS; i++) {
		const struct summary_col *k = &summary_cols[i];
		const uint64_t *at = (const uint64_t *)((const char *)r + k->at);

		if (!col_shown(k, v))
			continue;
		cols[m] = k->col;
		switch (k->cell) {
		case CELL_EXPORTER:
			cells[m] = exporter;
			break;
		case CELL_OP:
			cells[m] = op;
			break;
		case CELL_CONN:
			cells[m] = conn;
			break;
		case CELL_NUMBER:
			snprintf(n[i], sizeof(n[i]), "%llu", (unsigned long long)*at);
			cells[m] = n[i];
			break;
		case CELL_COUNT:
			cells[m] = rm_table_count(*at, n[i]);
			break;
		case CELL_NEVER:
			cells[m] = rm_table_count(rm_health_count(&c, RM_HEALTH_NEVER_SEEN), n[i]);
			break;
		case CELL_CLOSURE:
			cells[m] = rm_table_count(r->closures[k->at], n[i]);
			break;
		case CELL_OUTCOMES:
			cells[m] = outcomes;
			break;
		}
		m++;
	}
	rm_table_add(t, cols, m, cells);
}

unsigned rm_summary_closures(const struct rm_summary *s, size_t n)
{
	unsigned bits = 0;

	for (size_t i = 0; i < n && i < s->n; i++)
		for (int k = 0; k < RM_CLOSURE__N; k++)
			if (s->rows[i].closures[k])
				bits |= 1u << k;
	return bits;
}

size_t rm_summary_exporters(const struct rm_summary *s)
{
	return g_hash_table_size(s->exporters);
}
