// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * collector_rules.c - validation and epoch tracking ([SEQOBS] "Collector
 * Processing"). See collector_rules.h.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "budget.h"
#include "collector_rules.h"
#include "pool.h"
#include "rocemeter/seqobs.h"

/* The reason of an epoch without one (complete or open): not on the heap. */
static const char no_reason[] = "";

struct rm_rules {
	struct rm_rules_limits lim;
	struct rm_rules_sink sink;
	void *arg;
	uint32_t sessions;
	struct rm_budget *budget;      /* NULL: epochs are bounded by max_epochs only */
	struct rm_pool *epochs;        /* where every struct rm_epoch lives (pool.h) */
	rm_rules_accepted_fn accepted; /* NULL: none */
};

struct domain_state {
	uint32_t domain;
	uint64_t high_water; /* epoch-admission high-water ID; 0: none yet (IDs are nonzero) */
};

/*
 * The retained epochs of a session by epoch ID: open addressing with
 * linear probing, the epoch ID inline beside the pointer (a lookup reads
 * one cache line of the table, not the epoch, until the ID matches), at
 * most half full, backward-shift deletion (no tombstones). The home slot
 * (ehome) depends on the epoch ID only: epochs of several domains with one ID
 * share a probe run and are told apart by e->domain.
 */
struct eslot {
	uint64_t epoch_id; /* 0: empty (epoch IDs are nonzero) */
	struct rm_epoch *e;
};

struct etable {
	struct eslot *slot;
	uint32_t bits; /* 1 << bits slots */
	uint32_t n;
};

/* An epoch list threaded through the epochs (prev/next fields chosen by the macros below). */
struct elist {
	struct rm_epoch *head, *tail;
};

struct rm_rsession {
	struct rm_rules *rules;
	uint64_t id;
	GHashTable *domains;              /* uint32 domain -> struct domain_state */
	struct domain_state *last_domain; /* the domain of the last admission (most sessions use one) */
	struct etable epochs;
	struct elist lru;    /* every retained epoch, least recently reported first */
	struct elist closed; /* final or invalid epochs, oldest closure first */
	struct rm_epoch **dirty;
	uint32_t n_dirty, dirty_cap;
	uint64_t verdicts[RM_V__COUNT];
	struct rm_budget_share own;    /* its share of the rules' budget, unless rm_rules_session_set_share */
	struct rm_budget_share *share; /* what its retained epochs are charged to */
	int closing;                   /* rm_rules_session_close is retiring every epoch */
};

#define ETABLE_MIN_BITS 10

/*
 * Home slot: blocks of ETABLE_RUN consecutive epoch IDs (exporters number
 * epochs upwards) take consecutive slots, so a burst of new epochs, and
 * their retirement in the same order, read the table a cache line after
 * the other instead of a line at random per epoch; the blocks are spread
 * by a multiplicative (Fibonacci) hash of the block number.
 */
#define ETABLE_RUN_BITS 4

static inline uint32_t ehome(const struct etable *t, uint64_t epoch_id)
{
	uint32_t block = (uint32_t)(((epoch_id >> ETABLE_RUN_BITS) * 0x9e3779b97f4a7c15ULL) >>
				    (64 - (t->bits - ETABLE_RUN_BITS)));

	return block << ETABLE_RUN_BITS | (uint32_t)(epoch_id & ((1u << ETABLE_RUN_BITS) - 1));
}

static size_t etable_bytes(uint32_t bits)
{
	return ((size_t)1 << bits) * sizeof(struct eslot);
}

/* The slots are zeroes mapped and faulted in at once (pool.h): a table that grows is written throughout. */
static int etable_init(struct etable *t)
{
	t->bits = ETABLE_MIN_BITS;
	t->n = 0;
	t->slot = rm_pool_map(etable_bytes(t->bits));
	return t->slot ? 0 : -1;
}

static struct rm_epoch *etable_find(const struct etable *t, uint32_t domain, uint64_t epoch_id)
{
	uint32_t mask = (1u << t->bits) - 1;

	for (uint32_t i = ehome(t, epoch_id);; i = (i + 1) & mask) {
		const struct eslot *sl = &t->slot[i];

		if (!sl->epoch_id)
			return NULL;
		if (sl->epoch_id == epoch_id && sl->e->domain == domain)
			return sl->e;
	}
}

/* Put e under epoch_id (its key's: the growth passes the slot's copy and reads no epoch). */
static void etable_put(struct etable *t, uint64_t epoch_id, struct rm_epoch *e)
{
	uint32_t mask = (1u << t->bits) - 1, i = ehome(t, epoch_id);

	while (t->slot[i].epoch_id)
		i = (i + 1) & mask;
	t->slot[i].epoch_id = epoch_id;
	t->slot[i].e = e;
	t->n++;
}

/* Room for one more at most half full: 0, or -1 (out of memory; the table is unchanged). */
static int etable_reserve(struct etable *t)
{
	struct etable big;
	uint32_t old = 1u << t->bits;

	if ((t->n + 1) * 2 <= old)
		return 0;
	big.bits = t->bits + 1;
	big.n = 0;
	big.slot = rm_pool_map(etable_bytes(big.bits));
	if (!big.slot)
		return -1;
	for (uint32_t i = 0; i < old; i++)
		if (t->slot[i].epoch_id)
			etable_put(&big, t->slot[i].epoch_id, t->slot[i].e);
	rm_pool_unmap(t->slot, etable_bytes(t->bits));
	*t = big;
	return 0;
}

static void etable_remove(struct etable *t, const struct rm_epoch *e)
{
	uint32_t mask = (1u << t->bits) - 1, i = ehome(t, e->key.epoch_id), j;

	while (t->slot[i].e != e)
		i = (i + 1) & mask;
	/* Backward shift: move later entries of the run into the hole unless that would put one before its home. */
	for (j = (i + 1) & mask; t->slot[j].epoch_id; j = (j + 1) & mask) {
		uint32_t h = ehome(t, t->slot[j].epoch_id);

		if (((j - h) & mask) >= ((j - i) & mask)) {
			t->slot[i] = t->slot[j];
			i = j;
		}
	}
	t->slot[i].epoch_id = 0;
	t->slot[i].e = NULL;
	t->n--;
}

#define ELIST_PUSH_TAIL(l, e, prev, next)      \
	do {                                   \
		(e)->prev = (l)->tail;         \
		(e)->next = NULL;              \
		if ((l)->tail)                 \
			(l)->tail->next = (e); \
		else                           \
			(l)->head = (e);       \
		(l)->tail = (e);               \
	} while (0)

#define ELIST_UNLINK(l, e, prev, next)               \
	do {                                         \
		if ((e)->prev)                       \
			(e)->prev->next = (e)->next; \
		else                                 \
			(l)->head = (e)->next;       \
		if ((e)->next)                       \
			(e)->next->prev = (e)->prev; \
		else                                 \
			(l)->tail = (e)->prev;       \
		(e)->prev = (e)->next = NULL;        \
	} while (0)

const char *rm_outcome_name(enum rm_outcome o)
{
	switch (o) {
	case RM_OUTCOME_OPEN:
		return "open";
	case RM_OUTCOME_COMPLETE:
		return "complete";
	case RM_OUTCOME_INCOMPLETE:
		return "incomplete";
	case RM_OUTCOME_INVALID:
		return "invalid";
	}
	return "?";
}

const char *rm_verdict_name(enum rm_verdict v)
{
	static const char *n[RM_V__COUNT] = {
		[RM_V_ACCEPTED] = "accepted",
		[RM_V_REPEAT] = "repeat",
		[RM_V_STALE] = "stale",
		[RM_V_ORPHAN] = "orphan",
		[RM_V_UNSUPPORTED] = "unsupported",
		[RM_V_INVALID] = "invalid",
		[RM_V_AFTER_INVALID] = "after-invalid",
		[RM_V_KEY_CONFLICT] = "key-conflict",
		[RM_V_RESOURCE_DROP] = "resource-drop",
		[RM_V_UNBOUND] = "unbound",
	};
	return (unsigned)v < RM_V__COUNT ? n[v] : "?";
}

int rm_verdict_keeps_raw(enum rm_verdict v)
{
	return v == RM_V_UNSUPPORTED || v == RM_V_INVALID || v == RM_V_KEY_CONFLICT || v == RM_V_UNBOUND ||
	       v == RM_V_ORPHAN;
}

struct rm_rules *rm_rules_new(const struct rm_rules_limits *lim, const struct rm_rules_sink *sink, void *arg)
{
	struct rm_rules *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->epochs = rm_pool_new(sizeof(struct rm_epoch));
	if (!r->epochs) {
		free(r);
		return NULL;
	}
	r->lim = *lim;
	r->sink = *sink;
	r->arg = arg;
	return r;
}

void rm_rules_free(struct rm_rules *r)
{
	if (!r)
		return;
	rm_pool_release(r->epochs); /* freed with the last epoch a store still keeps */
	free(r);
}

uint32_t rm_rules_sessions(const struct rm_rules *r)
{
	return r->sessions;
}

static void logf_(struct rm_rsession *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct rm_rsession *s, const char *fmt, ...)
{
	char buf[400];
	va_list ap;

	if (!s->rules->sink.log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s->rules->sink.log(s->rules->arg, buf);
}

struct rm_rsession *rm_rules_session_open(struct rm_rules *r, uint64_t session_id)
{
	struct rm_rsession *s;

	if (r->sessions >= r->lim.max_sessions)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->rules = r;
	s->id = session_id;
	rm_budget_share_init(&s->own, r->budget);
	s->share = &s->own;
	s->domains = g_hash_table_new_full(g_int_hash, g_int_equal, NULL, free);
	if (etable_init(&s->epochs) < 0) {
		g_hash_table_destroy(s->domains);
		free(s);
		return NULL;
	}
	r->sessions++;
	return s;
}

uint32_t rm_rules_retained(const struct rm_rsession *s)
{
	return s->epochs.n;
}

const uint64_t *rm_rules_verdict_counts(const struct rm_rsession *s)
{
	return s->verdicts;
}

struct rm_epoch *rm_rules_find(struct rm_rsession *s, uint32_t domain, uint64_t epoch_id)
{
	return epoch_id ? etable_find(&s->epochs, domain, epoch_id) : NULL;
}

uint64_t rm_rules_high_water(struct rm_rsession *s, uint32_t domain)
{
	struct domain_state *d = g_hash_table_lookup(s->domains, &domain);

	return d ? d->high_water : 0;
}

/* ------------------------------------------------------------------ */
/* Record-level checks ([SEQOBS]: ranges, flags, arithmetic relations). */

int rm_rules_check_record(const struct rm_report *r, char *err, size_t errlen)
{
	unsigned __int128 sum;

	if (r->flags & ~RM_FLAG_DEFINED_MASK) {
		rm_errf(err, errlen, "unknown rdmaSequenceFlags bits 0x%04x (unsupported qualification)",
			r->flags & ~RM_FLAG_DEFINED_MASK);
		return 1;
	}
	if (r->epoch_id == 0) {
		rm_errf(err, errlen, "rdmaSequenceEpochId 0 (epoch IDs are nonzero)");
		return -1;
	}
	if (r->report_id == 0) {
		rm_errf(err, errlen, "rdmaSequenceReportId 0 (report IDs start at one)");
		return -1;
	}
	if (r->dest_qp & 0xff000000u) {
		rm_errf(err, errlen, "rdmaDestinationQP 0x%08x has nonzero upper 8 bits", r->dest_qp);
		return -1;
	}
	if (r->flow_end_ms < r->flow_start_ms) {
		/* [SEQOBS] "Export Profile and Template": first and last accounted arrival times. */
		rm_errf(err, errlen, "flowEndMilliseconds %" PRIu64 " is before flowStartMilliseconds %" PRIu64,
			r->flow_end_ms, r->flow_start_ms);
		return -1;
	}
	if (r->window < 1 || r->window > RM_WINDOW_MAX) {
		rm_errf(err, errlen, "rdmaSequenceWindow %u outside 1..4194304", r->window);
		return -1;
	}
	if ((r->flags & RM_FLAG_REASON_MASK) && !(r->flags & RM_FLAG_FINAL_EPOCH)) {
		rm_errf(err, errlen, "closure-reason flags 0x%04x in a non-final record",
			r->flags & RM_FLAG_REASON_MASK);
		return -1;
	}
	if ((r->flags & RM_FLAG_FINAL_EPOCH) && r->pending != 0) {
		rm_errf(err, errlen, "final record with pendingPsnCount %u (must be 0)", r->pending);
		return -1;
	}
	if (!(r->flags & RM_FLAG_FINAL_EPOCH) && r->abandoned != 0) {
		rm_errf(err, errlen, "non-final record with abandonedPsnTotalCount %" PRIu64 " (must be 0)",
			r->abandoned);
		return -1;
	}
	sum = (unsigned __int128)r->filled + r->expired + r->abandoned + r->pending;
	if (sum != r->skipped) {
		rm_errf(err, errlen,
			"skipped %" PRIu64 " != filled %" PRIu64 " + expired %" PRIu64 " + abandoned %" PRIu64
			" + pending %u",
			r->skipped, r->filled, r->expired, r->abandoned, r->pending);
		return -1;
	}
	if (r->pending > r->window - 1) {
		rm_errf(err, errlen, "pendingPsnCount %u > W - 1 = %u", r->pending, r->window - 1);
		return -1;
	}
	sum = (unsigned __int128)r->repeated + r->unclassified_late + r->filled + 1;
	if (sum > r->requests) {
		rm_errf(err, errlen,
			"repeated %" PRIu64 " + unclassifiedLate %" PRIu64 " + filled %" PRIu64 " > requests %" PRIu64
			" - 1",
			r->repeated, r->unclassified_late, r->filled, r->requests);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */

static int same_key(const struct rm_epoch *e, uint32_t domain, const struct rm_report *r)
{
	const struct rm_report *k = &e->key;

	return e->domain == domain && k->observation_point_id == r->observation_point_id && k->family == r->family &&
	       !memcmp(k->src, r->src, 16) && !memcmp(k->dst, r->dst, 16) && k->dest_qp == r->dest_qp &&
	       k->pkey == r->pkey && k->has_vlan_ns == r->has_vlan_ns && k->vlan[0] == r->vlan[0] &&
	       k->vlan[1] == r->vlan[1] && k->epoch_id == r->epoch_id;
}

/* Same decoded content, field by field (padding never compared). */
static int same_content(const struct rm_report *a, const struct rm_report *b)
{
	return a->flow_start_ms == b->flow_start_ms && a->flow_end_ms == b->flow_end_ms &&
	       a->report_id == b->report_id && a->window == b->window && a->flags == b->flags &&
	       a->skipped == b->skipped && a->filled == b->filled && a->expired == b->expired &&
	       a->abandoned == b->abandoned && a->pending == b->pending && a->repeated == b->repeated &&
	       a->requests == b->requests && a->unclassified_late == b->unclassified_late;
}

static void mark_dirty(struct rm_epoch *e)
{
	struct rm_rsession *s = e->sess;

	if (e->dirty)
		return;
	if (s->n_dirty == s->dirty_cap) {
		uint32_t cap = s->dirty_cap ? s->dirty_cap * 2 : 1024;
		struct rm_epoch **d = realloc(s->dirty, cap * sizeof(*d));

		if (!d)
			abort(); /* as glib does on ENOMEM */
		s->dirty = d;
		s->dirty_cap = cap;
	}
	e->dirty = 1;
	e->dirty_slot = s->n_dirty;
	s->dirty[s->n_dirty++] = e;
}

/* Off the dirty array in O(1): the last entry takes its place. */
static void unmark_dirty(struct rm_epoch *e)
{
	struct rm_rsession *s = e->sess;
	struct rm_epoch *last = s->dirty[--s->n_dirty];

	s->dirty[e->dirty_slot] = last;
	last->dirty_slot = e->dirty_slot;
	e->dirty = 0;
}

static void push_closed(struct rm_epoch *e)
{
	if (!e->in_closed) {
		e->in_closed = 1;
		ELIST_PUSH_TAIL(&e->sess->closed, e, closed_prev, closed_next);
	}
}

/* The reason of a settled epoch (NULL: none); a copy on the heap only when there is one. */
static void set_reason(struct rm_epoch *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_reason(struct rm_epoch *e, const char *fmt, ...)
{
	char buf[RM_EPOCH_REASON_MAX];
	va_list ap;

	if (e->reason != no_reason)
		free((char *)e->reason);
	e->reason = no_reason;
	if (!fmt)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	e->reason = strdup(buf);
	if (!e->reason)
		abort(); /* as glib does on ENOMEM */
}

static void describe_gaps(const struct rm_epoch *e, char *buf, size_t n)
{
	size_t used = 0;

	buf[0] = 0;
	if (e->missing_initial)
		used += (size_t)snprintf(buf, n, "missing initial reports 1..%" PRIu64, e->missing_initial);
	if (used < n && e->missing_reports > e->missing_initial)
		snprintf(buf + used, n - used, "%s%" PRIu64 " reports missing in %" PRIu64 " gaps", used ? "; " : "",
			 e->missing_reports - e->missing_initial, e->gaps - (e->missing_initial ? 1 : 0));
}

/* Outcome of a final epoch ([SEQOBS]: complete = reports 1..final without gaps). */
static void settle_final(struct rm_epoch *e)
{
	char g[160];

	if (e->missing_reports == 0) {
		e->outcome = RM_OUTCOME_COMPLETE;
		set_reason(e, NULL);
	} else {
		describe_gaps(e, g, sizeof(g));
		e->outcome = RM_OUTCOME_INCOMPLETE;
		set_reason(e, "final report %" PRIu64 " received; %s", e->key.report_id, g);
	}
}

static void invalidate(struct rm_epoch *e, const char *reason);

/* A record that breaks a record rule (reason) invalidates its epoch. */
static enum rm_verdict invalid_record(struct rm_epoch *e, const struct rm_report *r, const char *reason, char *err,
				      size_t errlen)
{
	char b[300];

	rm_errf(b, sizeof(b), "report %" PRIu64 ": %s", r->report_id, reason);
	invalidate(e, b);
	rm_errf(err, errlen, "%s", b);
	return RM_V_INVALID;
}

static void invalidate(struct rm_epoch *e, const char *reason)
{
	if (e->state == RM_EPOCH_INVALID)
		return;
	e->state = RM_EPOCH_INVALID;
	e->outcome = RM_OUTCOME_INVALID;
	set_reason(e, "%s", reason);
	push_closed(e);
	mark_dirty(e);
	logf_(e->sess, "session %" PRIu64 " domain %u epoch %" PRIu64 " invalid: %s", e->sess->id, e->domain,
	      e->key.epoch_id, reason);
}

static void retire(struct rm_epoch *e, const char *cause, uint64_t now_ms)
{
	struct rm_rsession *s = e->sess;

	if (e->state == RM_EPOCH_OPEN) {
		char g[160];

		describe_gaps(e, g, sizeof(g));
		e->outcome = RM_OUTCOME_INCOMPLETE;
		if (e->n_accepted == 0)
			set_reason(e, "%s; no accepted report%s", cause,
				   e->unsupported ? " (only unsupported qualifications)" : "");
		else
			set_reason(e, "%s without a final report (last report %" PRIu64 ")%s%s", cause,
				   e->key.report_id, g[0] ? "; " : "", g);
	}
	e->retired_ms = now_ms ? now_ms : 1;
	s->rules->sink.epoch(s->rules->arg, e); /* e->dirty still says whether it changed since the last flush */
	if (e->dirty)
		unmark_dirty(e);
	if (!s->closing) { /* a closing session drops its table and lists whole */
		ELIST_UNLINK(&s->lru, e, lru_prev, lru_next);
		if (e->in_closed)
			ELIST_UNLINK(&s->closed, e, closed_prev, closed_next);
		etable_remove(&s->epochs, e);
	}
	/* A kept epoch keeps its charge until the sink's write, no longer the session's: the sink returns it
	 * (docs/collector.md "Memory budget"). */
	if (e->sink_keeps)
		rm_budget_share_pass(s->share, RM_BUDGET_EPOCH_BYTES);
	else
		rm_budget_share_give(s->share, RM_BUDGET_EPOCH_BYTES);
	if (e->sink_keeps != RM_SINK_KEEPS)
		rm_rules_epoch_free(e);
}

void rm_rules_epoch_free(struct rm_epoch *e)
{
	if (!e)
		return;
	if (e->reason != no_reason)
		free((char *)e->reason);
	rm_pool_free(e);
}

static void touch(struct rm_epoch *e, uint64_t now_ms)
{
	struct elist *l = &e->sess->lru;

	e->last_seen_ms = now_ms;
	if (l->tail == e)
		return;
	ELIST_UNLINK(l, e, lru_prev, lru_next);
	ELIST_PUSH_TAIL(l, e, lru_prev, lru_next);
}

static void accept_report(struct rm_epoch *e, const struct rm_report *r)
{
	uint64_t prev = e->n_accepted ? e->key.report_id : 0;
	const struct rm_rules *rules = e->sess->rules;

	if (rules->accepted)
		rules->accepted(rules->arg, e->domain, r, e->n_accepted ? &e->key : NULL);
	if (!e->n_accepted) {
		e->first_report_id = r->report_id;
		e->missing_initial = r->report_id - 1;
	}
	if (r->report_id - prev > 1) {
		e->gaps++;
		e->missing_reports += r->report_id - prev - 1;
	}
	e->key = *r;
	e->n_accepted++;
	e->flags_seen |= r->flags;
	if (r->flags & RM_FLAG_FINAL_EPOCH) {
		e->state = RM_EPOCH_FINAL;
		settle_final(e);
		push_closed(e);
	}
	mark_dirty(e);
}

#define CMP_TOTAL(field, name)                                                                                         \
	if (r->field < k->field) {                                                                                     \
		rm_errf(reason, sizeof(reason), "report %" PRIu64 ": " name " decreased from %" PRIu64 " to %" PRIu64, \
			r->report_id, (uint64_t)k->field, (uint64_t)r->field);                                         \
		goto bad;                                                                                              \
	}

/* Report ordering for a retained epoch with at least one accepted report. */
static enum rm_verdict order(struct rm_epoch *e, const struct rm_report *r, char *err, size_t errlen)
{
	const struct rm_report *k = &e->key;
	char reason[240];

	if (r->report_id < k->report_id) {
		e->stale++;
		mark_dirty(e);
		rm_errf(err, errlen, "report %" PRIu64 " is older than the latest report %" PRIu64 " (stale)",
			r->report_id, k->report_id);
		return RM_V_STALE;
	}
	if (r->report_id == k->report_id) {
		if (same_content(k, r)) {
			e->repeats++;
			mark_dirty(e);
			rm_errf(err, errlen, "identical repeat of report %" PRIu64, r->report_id);
			return RM_V_REPEAT;
		}
		rm_errf(reason, sizeof(reason), "report %" PRIu64 " received again with different content",
			r->report_id);
		goto bad;
	}
	if (e->state == RM_EPOCH_FINAL) {
		rm_errf(reason, sizeof(reason), "report %" PRIu64 " extends the epoch after its final report %" PRIu64,
			r->report_id, k->report_id);
		goto bad;
	}
	if (r->window != k->window) {
		rm_errf(reason, sizeof(reason), "report %" PRIu64 ": rdmaSequenceWindow changed from %u to %u",
			r->report_id, k->window, r->window);
		goto bad;
	}
	if ((r->flags ^ k->flags) & RM_FLAG_GENERATION_UNVERIFIED) {
		rm_errf(reason, sizeof(reason), "report %" PRIu64 ": generationUnverified changed within the epoch",
			r->report_id);
		goto bad;
	}
	if (r->flow_start_ms != k->flow_start_ms) {
		rm_errf(reason, sizeof(reason),
			"report %" PRIu64 ": flowStartMilliseconds changed from %" PRIu64 " to %" PRIu64, r->report_id,
			k->flow_start_ms, r->flow_start_ms);
		goto bad;
	}
	if (r->flow_end_ms < k->flow_end_ms) {
		/* The last accounted arrival of a cumulative snapshot never moves back. */
		rm_errf(reason, sizeof(reason),
			"report %" PRIu64 ": flowEndMilliseconds went back from %" PRIu64 " to %" PRIu64, r->report_id,
			k->flow_end_ms, r->flow_end_ms);
		goto bad;
	}
	CMP_TOTAL(skipped, "skippedPsnTotalCount")
	CMP_TOTAL(filled, "filledPsnTotalCount")
	CMP_TOTAL(expired, "expiredPsnTotalCount")
	CMP_TOTAL(abandoned, "abandonedPsnTotalCount")
	CMP_TOTAL(repeated, "repeatedPsnTotalCount")
	CMP_TOTAL(requests, "requestPacketTotalCount")
	CMP_TOTAL(unclassified_late, "unclassifiedLatePacketTotalCount")
	accept_report(e, r);
	return RM_V_ACCEPTED;
bad:
	invalidate(e, reason);
	rm_errf(err, errlen, "%s", reason);
	return RM_V_INVALID;
}

/* Make room for one more epoch: retire the oldest closed one. 0 if room. */
static int make_room(struct rm_rsession *s, uint64_t now_ms)
{
	if (s->epochs.n < s->rules->lim.max_epochs)
		return 0;
	if (!s->closed.head)
		return -1;
	retire(s->closed.head, "retired to make room (max_epochs)", now_ms);
	return 0;
}

void rm_rules_set_budget(struct rm_rules *r, struct rm_budget *b)
{
	r->budget = b;
}

void rm_rules_session_set_share(struct rm_rsession *s, struct rm_budget_share *sh)
{
	s->share = sh ? sh : &s->own;
}

void rm_rules_set_accepted(struct rm_rules *r, rm_rules_accepted_fn fn)
{
	r->accepted = fn;
}

/*
 * Charge a new epoch to the session's share of the memory budget; the oldest
 * closed epoch makes room if it must, and the sink's kept epochs when the
 * budget as a whole is full. 0 or -1 (refused).
 */
static int budget_epoch(struct rm_rsession *s, uint64_t now_ms)
{
	struct rm_budget_share *sh = s->share;

	if (rm_budget_share_try(sh, RM_BUDGET_EPOCH_BYTES) == 0)
		return 0;
	if (s->closed.head) {
		retire(s->closed.head,
		       rm_budget_share_full(sh, RM_BUDGET_EPOCH_BYTES)
			       ? "retired to make room (max_memory_bytes_per_session)"
			       : "retired to make room (max_memory_bytes)",
		       now_ms);
		if (rm_budget_share_try(sh, RM_BUDGET_EPOCH_BYTES) == 0)
			return 0;
	}
	/* Retired epochs the sink keeps until its write still hold their charges: it may free them now. */
	if (!rm_budget_share_full(sh, RM_BUDGET_EPOCH_BYTES) && s->rules->sink.room &&
	    s->rules->sink.room(s->rules->arg) == 0 && rm_budget_share_try(sh, RM_BUDGET_EPOCH_BYTES) == 0)
		return 0;
	rm_budget_share_refuse(sh, "epoch", RM_BUDGET_EPOCH_BYTES);
	return -1;
}

static enum rm_verdict record(struct rm_rsession *s, uint32_t domain, const struct rm_report *r, uint64_t now_ms,
			      char *err, size_t errlen)
{
	char reason[240];
	int chk;
	struct rm_epoch *e;
	struct domain_state *d;

	if (r->epoch_id == 0) {
		rm_errf(err, errlen, "rdmaSequenceEpochId 0: the record binds to no epoch");
		return RM_V_UNBOUND;
	}
	chk = rm_rules_check_record(r, reason, sizeof(reason));
	e = rm_rules_find(s, domain, r->epoch_id);
	if (e) {
		if (!same_key(e, domain, r)) {
			invalidate(e, "its epoch ID was received with a different record key");
			rm_errf(err, errlen, "epoch ID %" PRIu64 " is retained with a different record key",
				r->epoch_id);
			return RM_V_KEY_CONFLICT;
		}
		touch(e, now_ms);
		if (chk > 0 && e->n_accepted > 0 && e->state != RM_EPOCH_INVALID &&
		    (r->report_id == e->key.report_id ||
		     (e->state == RM_EPOCH_FINAL && r->report_id > e->key.report_id))) {
			/* Unknown flags do not suspend the report-ID rules: a conflict or an extension after the final. */
			char b[300];

			rm_errf(b, sizeof(b), "report %" PRIu64 " (unknown flag bits 0x%04x) %s", r->report_id,
				r->flags & ~RM_FLAG_DEFINED_MASK,
				r->report_id == e->key.report_id ? "received again with different content"
								 : "extends the epoch after its final report");
			invalidate(e, b);
			rm_errf(err, errlen, "%s", b);
			return RM_V_INVALID;
		}
		if (chk > 0) {
			e->unsupported++;
			mark_dirty(e);
			rm_errf(err, errlen, "report %" PRIu64 ": %s", r->report_id, reason);
			return RM_V_UNSUPPORTED;
		}
		if (e->state == RM_EPOCH_INVALID) {
			e->ignored++;
			mark_dirty(e);
			rm_errf(err, errlen, "epoch %" PRIu64 " is invalid already", r->epoch_id);
			return RM_V_AFTER_INVALID;
		}
		/* A smaller report ID is stale and changes nothing, even when it breaks a record rule. */
		if (e->n_accepted > 0 && r->report_id < e->key.report_id)
			return order(e, r, err, errlen);
		if (chk < 0)
			return invalid_record(e, r, reason, err, errlen);
		if (e->n_accepted == 0) {
			accept_report(e, r);
			return RM_V_ACCEPTED;
		}
		return order(e, r, err, errlen);
	}

	/* Unknown epoch ID: admission against the high-water. */
	d = s->last_domain && s->last_domain->domain == domain ? s->last_domain
							       : g_hash_table_lookup(s->domains, &domain);
	if (!d && g_hash_table_size(s->domains) >= RM_RULES_MAX_DOMAINS) {
		rm_errf(err, errlen,
			"Observation Domain %" PRIu32 ": the session already uses %u domains (collector limit)", domain,
			RM_RULES_MAX_DOMAINS);
		s->rules->sink.drop(s->rules->arg, s->id, domain, r->epoch_id, "domain limit");
		return RM_V_RESOURCE_DROP;
	}
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d) {
			rm_errf(err, errlen, "out of memory");
			s->rules->sink.drop(s->rules->arg, s->id, domain, r->epoch_id, "out of memory");
			return RM_V_RESOURCE_DROP;
		}
		d->domain = domain;
		g_hash_table_insert(s->domains, &d->domain, d);
	}
	s->last_domain = d;
	if (r->epoch_id <= d->high_water) {
		rm_errf(err, errlen,
			"epoch %" PRIu64 " is not retained and not above the high-water ID %" PRIu64 " (orphan)",
			r->epoch_id, d->high_water);
		return RM_V_ORPHAN;
	}
	d->high_water = r->epoch_id;
	if (make_room(s, now_ms) < 0 || etable_reserve(&s->epochs) < 0 || !(e = rm_pool_alloc(s->rules->epochs))) {
		char b[200];

		rm_errf(b, sizeof(b), "epoch %" PRIu64 " refused: max_epochs %u retained epochs in this session",
			r->epoch_id, s->rules->lim.max_epochs);
		s->rules->sink.drop(s->rules->arg, s->id, domain, r->epoch_id, b);
		logf_(s, "session %" PRIu64 " domain %u: %s (collector resource drop)", s->id, domain, b);
		rm_errf(err, errlen, "%s", b);
		return RM_V_RESOURCE_DROP;
	}
	if (budget_epoch(s, now_ms) < 0) {
		rm_pool_free(e);
		rm_errf(err, errlen, "epoch %" PRIu64 " refused: memory budget (%s)", r->epoch_id,
			rm_budget_share_full(s->share, RM_BUDGET_EPOCH_BYTES) ? "max_memory_bytes_per_session"
									      : "max_memory_bytes");
		return RM_V_RESOURCE_DROP;
	}
	/* Every field but the report copied in: cheaper than clearing all of it first. */
	memset(e, 0, offsetof(struct rm_epoch, key));
	memset((char *)e + offsetof(struct rm_epoch, key) + sizeof(e->key), 0,
	       sizeof(*e) - offsetof(struct rm_epoch, key) - sizeof(e->key));
	e->reason = no_reason;
	e->sess = s;
	e->session_id = s->id;
	e->domain = domain;
	e->key = *r;
	e->first_seen_ms = e->last_seen_ms = now_ms;
	etable_put(&s->epochs, e->key.epoch_id, e);
	ELIST_PUSH_TAIL(&s->lru, e, lru_prev, lru_next);
	mark_dirty(e);
	if (chk > 0) {
		e->unsupported = 1;
		rm_errf(err, errlen, "report %" PRIu64 ": %s", r->report_id, reason);
		return RM_V_UNSUPPORTED;
	}
	if (chk < 0)
		return invalid_record(e, r, reason, err, errlen);
	accept_report(e, r);
	return RM_V_ACCEPTED;
}

enum rm_verdict rm_rules_record(struct rm_rsession *s, uint32_t domain, const struct rm_report *rep, uint64_t now_ms,
				char *err, size_t errlen)
{
	enum rm_verdict v;

	if (err && errlen)
		err[0] = 0;
	v = record(s, domain, rep, now_ms, err, errlen);
	s->verdicts[v]++;
	return v;
}

void rm_rules_flush(struct rm_rsession *s)
{
	for (uint32_t i = 0; i < s->n_dirty; i++) {
		struct rm_epoch *e = s->dirty[i];

		e->dirty = 0;
		s->rules->sink.epoch(s->rules->arg, e);
	}
	s->n_dirty = 0;
}

void rm_rules_tick(struct rm_rsession *s, uint64_t now_ms)
{
	uint64_t t = s->rules->lim.inactivity_timeout_ms;

	if (!t)
		return;
	while (s->lru.head) {
		struct rm_epoch *e = s->lru.head;

		if (e->last_seen_ms + t > now_ms)
			break;
		retire(e, "inactivity timeout", now_ms);
	}
}

void rm_rules_session_close(struct rm_rsession *s, const char *reason, uint64_t now_ms)
{
	if (!s)
		return;
	rm_rules_flush(s);
	s->closing = 1;
	for (struct rm_epoch *e = s->lru.head, *next; e; e = next) {
		next = e->lru_next;
		retire(e, reason, now_ms);
	}
	rm_pool_unmap(s->epochs.slot, etable_bytes(s->epochs.bits));
	g_hash_table_destroy(s->domains);
	free(s->dirty);
	s->rules->sessions--;
	free(s);
}
