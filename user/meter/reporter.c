// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* reporter.c - snapshots to reports (see reporter.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <glib.h>

#include "common/clock.h"
#include "common/map_iter.h"
#include "reporter.h"
#include "common/sort.h"

/*
 * What the reporter keeps of a context's open epoch: the offset its times
 * are converted with, fixed when the epoch starts (flowStartMilliseconds is
 * immutable within an epoch, [SEQOBS] "Collector Processing"), and the
 * requests its last non-final report carried (a periodic report is due
 * only if that changed). One entry per context key; an entry of an older
 * generation is stale (its final was lost) and is replaced.
 */
struct epoch_time {
	struct rm_ctx_key key; /* the hash table's key points here */
	uint32_t gen;
	int reported;
	uint64_t reported_requests;
	int64_t offset_ns;         /* meter time + offset_ns = UNIX ns */
	struct rm_seq_totals last; /* the counters of the epoch's last snapshot, in r->points */
};

struct rm_epoch_times {
	GHashTable *t;
};

static guint key_hash(gconstpointer p)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < sizeof(struct rm_ctx_key); i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, sizeof(struct rm_ctx_key)) == 0;
}

static void norm_key(struct rm_ctx_key *k, const struct rm_ctx_key *key)
{
	*k = *key;
}

/* The offset for an epoch starting now: 0 on capture time (already UNIX). */
static int64_t offset_now(const struct rm_reporter *r)
{
	return r->capture_clock ? 0 : rm_clock_unix_offset_ns();
}

/* Start (or restart) the entry of key's epoch gen with the offset of now. */
static struct epoch_time *epoch_start(struct rm_reporter *r, const struct rm_ctx_key *key, uint32_t gen)
{
	struct rm_ctx_key k;
	struct epoch_time *e;

	norm_key(&k, key);
	e = g_hash_table_lookup(r->times->t, &k);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		e->key = k;
		g_hash_table_insert(r->times->t, &e->key, e);
	} else if (e->gen != gen) {
		memset(&e->last, 0, sizeof(e->last));
	}
	/* The start event of an epoch already snapshotted keeps its last counters: they are in r->points. */
	e->gen = gen;
	e->reported = 0;
	e->reported_requests = 0;
	e->offset_ns = offset_now(r);
	return e;
}

static struct epoch_time *epoch_find(const struct rm_reporter *r, const struct rm_ctx_key *key, uint32_t gen)
{
	struct rm_ctx_key k;
	struct epoch_time *e;

	norm_key(&k, key);
	e = g_hash_table_lookup(r->times->t, &k);
	return e && e->gen == gen ? e : NULL;
}

static void epoch_forget(struct rm_reporter *r, const struct rm_ctx_key *key)
{
	struct rm_ctx_key k;

	norm_key(&k, key);
	g_hash_table_remove(r->times->t, &k);
}

int rm_reporter_init(struct rm_reporter *r, struct rm_meter *m, uint64_t observation_point_id, int vlan_ns,
		     int generation_verified, int capture_clock, rm_report_sink sink, void *sink_arg)
{
	memset(r, 0, sizeof(*r));
	r->ids = rm_ids_new();
	r->times = calloc(1, sizeof(*r->times));
	r->points = calloc(RM_REPORTER_MAX_POINTS, sizeof(*r->points));
	if (!r->ids || !r->times || !r->points) {
		rm_reporter_free(r);
		return -1;
	}
	r->times->t = g_hash_table_new_full(key_hash, key_equal, NULL, free);
	r->meter = m;
	r->observation_point_id = observation_point_id;
	r->points[0].observation_point_id = observation_point_id; /* its series exist before the first report */
	r->npoints = 1;
	r->vlan_ns = vlan_ns;
	r->generation_verified = generation_verified;
	r->capture_clock = capture_clock;
	r->sink = sink;
	r->sink_arg = sink_arg;
	return 0;
}

void rm_reporter_free(struct rm_reporter *r)
{
	ring_buffer__free(r->rb);
	r->rb = NULL;
	rm_ids_free(r->ids);
	r->ids = NULL;
	free(r->points);
	r->points = NULL;
	if (r->times) {
		if (r->times->t)
			g_hash_table_destroy(r->times->t);
		free(r->times);
		r->times = NULL;
	}
}

int rm_reporter_open_events(struct rm_reporter *r)
{
	r->rb = ring_buffer__new(r->meter->events_fd, rm_reporter_on_event, r, NULL);
	return r->rb ? 0 : -errno;
}

int rm_reporter_drain(struct rm_reporter *r)
{
	return r->rb ? ring_buffer__consume(r->rb) : 0;
}

int rm_reporter_poll(struct rm_reporter *r, int timeout_ms)
{
	return r->rb ? ring_buffer__poll(r->rb, timeout_ms) : -EINVAL;
}

static uint64_t to_unix_ms(uint64_t ns, int64_t offset_ns)
{
	/* Modular addition: right for a negative offset, and for capture times
	 * past 2262 (offset 0), which a signed sum would not be. */
	return (ns + (uint64_t)offset_ns) / 1000000u;
}

/*
 * Add what report rep counts beyond its epoch's last snapshot (e's) to its
 * observation point's counters. Without an entry (out of memory) nothing
 * is known of the epoch's past: nothing is added.
 */
static void count_snapshot(struct rm_reporter *r, struct epoch_time *e, const struct rm_report *rep, unsigned int obs)
{
	size_t i = 0;

	if (!e)
		return;
	while (i < r->npoints && r->points[i].observation_point_id != rep->observation_point_id)
		i++;
	if (i == r->npoints) {
		if (i == RM_REPORTER_MAX_POINTS)
			return;
		r->points[r->npoints].obs = obs;
		r->points[r->npoints++].observation_point_id = rep->observation_point_id;
	}
	rm_seq_totals_advance(&r->points[i].t, &e->last, rep);
}

void rm_reporter_snapshot(struct rm_reporter *r, const struct rm_ctx_key *key, const struct rm_seq_counters *s,
			  int final)
{
	struct epoch_time *e = epoch_find(r, key, s->epoch_gen);
	struct rm_report rep;
	int64_t offset_ns;

	/* No entry: the start event was lost or not read yet; the offset of now
	 * is the best left (it differs from the start's only by a clock step). */
	if (!e)
		e = epoch_start(r, key, s->epoch_gen);
	offset_ns = e ? e->offset_ns : offset_now(r);
	memset(&rep, 0, sizeof(rep));
	if (rm_ids_assign(r->ids, key, s->epoch_gen, final, &rep.epoch_id, &rep.report_id)) {
		r->id_exhausted++;
		if (final)
			epoch_forget(r, key);
		return;
	}
	rep.observation_point_id =
		key->obs ? rm_meter_obs_id(r->meter, key->obs, r->observation_point_id) : r->observation_point_id;
	rep.family = key->family;
	memcpy(rep.src, key->src, 16);
	memcpy(rep.dst, key->dst, 16);
	rep.has_vlan_ns = (uint8_t)r->vlan_ns;
	rep.vlan[0] = key->vlan[0];
	rep.vlan[1] = key->vlan[1];
	rep.dest_qp = key->dest_qp;
	rep.pkey = key->pkey;
	/* One offset per epoch: a wall-clock step moves neither flowStart nor
	 * the epoch's duration (docs/architecture.md "Time"). */
	rep.flow_start_ms = to_unix_ms(s->first_ns, offset_ns);
	rep.flow_end_ms = to_unix_ms(s->last_ns, offset_ns);
	rep.window = s->window;
	/* Closure bits only in final reports (the engine sets them only on closure). */
	rep.flags = (uint16_t)(final ? (s->flags | RM_FLAG_FINAL_EPOCH) : 0);
	if (!r->generation_verified)
		rep.flags |= RM_FLAG_GENERATION_UNVERIFIED;
	rep.skipped = s->skipped;
	rep.filled = s->filled;
	rep.expired = s->expired;
	rep.abandoned = s->abandoned;
	rep.pending = s->pending;
	rep.repeated = s->repeated;
	rep.requests = s->requests;
	rep.unclassified_late = s->unclassified_late;
	/* What the meter observed, whether or not the sink takes the report. */
	count_snapshot(r, e, &rep, key->obs);
	if (r->sink(r->sink_arg, &rep)) {
		rm_ids_unassign(r->ids, key, s->epoch_gen, final, rep.epoch_id, rep.report_id);
		r->not_serialized++;
		if (final)
			epoch_forget(r, key);
		return;
	}
	r->reports++;
	if (final) {
		r->final_reports++;
		epoch_forget(r, key);
	} else if (e) {
		e->reported = 1;
		e->reported_requests = s->requests;
	}

	/* Impending report-ID exhaustion ([SEQOBS]: the ID MUST NOT wrap): when
	 * only the final's ID is left, close the epoch now, under its lock. */
	if (!final && rep.report_id >= rm_ids_limit(r->ids) - 1) {
		struct rm_ctl c;

		memset(&c, 0, sizeof(c));
		c.op = RM_CTL_CLOSE;
		c.key = *key;
		if (rm_meter_ctl(r->meter, &c) == 0 && c.status == RM_CTL_OK && c.snap.epoch_gen == s->epoch_gen)
			rm_reporter_snapshot(r, key, &c.snap, 1);
	}
}

int rm_reporter_on_event(void *ctx, void *data, size_t size)
{
	struct rm_reporter *r = ctx;
	const struct rm_event *ev = data;

	if (size < sizeof(*ev))
		return 0;
	if (ev->type == RM_EV_EPOCH_FINAL)
		rm_reporter_snapshot(r, &ev->key, &ev->snap, 1);
	else if (ev->type == RM_EV_EPOCH_START)
		epoch_start(r, &ev->key, ev->snap.epoch_gen);
	return 0;
}

struct open_ctx {
	struct rm_ctx_key key;
	uint64_t first_ns;
};

static int by_first_arrival(const void *a, const void *b)
{
	const struct open_ctx *x = a, *y = b;

	if (x->first_ns != y->first_ns)
		return x->first_ns < y->first_ns ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* The epoch's last non-final report carried these counters already. */
static int unchanged(const struct rm_reporter *r, const struct rm_ctx_key *key, const struct rm_seq_counters *snap)
{
	const struct epoch_time *e = epoch_find(r, key, snap->epoch_gen);

	/* Every change of the counters is an accounted request. */
	return e && e->reported && e->reported_requests == snap->requests;
}

int rm_reporter_walk(struct rm_reporter *r, enum rm_ctl_op op, uint16_t reason, uint64_t idle_before_ns)
{
	struct rm_meter *m = r->meter;
	struct rm_ctx_key key;
	struct rm_map_iter it = rm_map_iter_start(m->contexts_fd, &key);
	struct open_ctx *open = NULL;
	size_t n = 0, cap = 0;
	struct rm_ctl c;
	int e, count = 0;

	/* Collect the open epochs first: the walk must not depend on hash order. */
	while (rm_map_iter_next(&it)) {
		memset(&c, 0, sizeof(c));
		c.op = RM_CTL_SNAPSHOT;
		c.key = key;
		e = rm_meter_ctl(m, &c);
		if (e)
			goto out;
		if (c.status != RM_CTL_OK)
			continue;
		if (op == RM_CTL_SNAPSHOT && unchanged(r, &key, &c.snap))
			continue;
		if (n == cap) {
			struct open_ctx *t = realloc(open, (cap = cap ? cap * 2 : 64) * sizeof(*open));

			if (!t) {
				e = -ENOMEM;
				goto out;
			}
			open = t;
		}
		open[n].key = key;
		open[n].first_ns = c.snap.first_ns;
		n++;
	}
	rm_sort(open, n, sizeof(*open), by_first_arrival);
	for (size_t i = 0; i < n; i++) {
		memset(&c, 0, sizeof(c));
		c.op = op;
		c.reason = reason;
		c.idle_before_ns = idle_before_ns;
		c.key = open[i].key;
		e = rm_meter_ctl(m, &c);
		if (e)
			goto out;
		if (c.status != RM_CTL_OK)
			continue; /* not idle, or closed meanwhile by the datapath (its final came as an event) */
		rm_reporter_snapshot(r, &open[i].key, &c.snap, op != RM_CTL_SNAPSHOT);
		count++;
	}
	e = count;
out:
	free(open);
	return e;
}

struct victim {
	struct rm_ctx_key key;
	uint64_t order; /* closed contexts first (0), then by last arrival */
};

static int by_order(const void *a, const void *b)
{
	const struct victim *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

int rm_reporter_evict(struct rm_reporter *r, unsigned int n)
{
	struct rm_meter *m = r->meter;
	struct rm_ctx_key key;
	struct rm_map_iter it = rm_map_iter_start(m->contexts_fd, &key);
	struct victim *v = NULL;
	size_t cnt = 0, cap = 0;
	struct rm_ctx val;
	int evicted = 0;

	while (rm_map_iter_next(&it)) {
		if (bpf_map_lookup_elem_flags(m->contexts_fd, &key, &val, BPF_F_LOCK) ||
		    rm_ctx_flag(&val, RM_CTX_DISABLED | RM_CTX_DEAD))
			continue;
		if (cnt == cap) {
			struct victim *t = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof(*v));

			if (!t) {
				free(v);
				return -ENOMEM;
			}
			v = t;
		}
		v[cnt].key = key;
		v[cnt].order = rm_seq_active(&val.seq) ? val.seq.last_ns + 1 : 0;
		cnt++;
	}
	rm_sort(v, cnt, sizeof(*v), by_order);
	for (size_t i = 0; i < cnt && (unsigned int)evicted < n; i++) {
		struct rm_ctl c;

		memset(&c, 0, sizeof(c));
		c.op = RM_CTL_EVICT;
		c.key = v[i].key;
		if (rm_meter_ctl(m, &c))
			break;
		if (c.status == RM_CTL_OK)
			rm_reporter_snapshot(r, &v[i].key, &c.snap, 1);
		if (c.status == RM_CTL_OK || c.status == RM_CTL_NO_EPOCH) {
			epoch_forget(r, &v[i].key);
			evicted++;
		}
	}
	free(v);
	return evicted;
}

#define NS_PER_MS 1000000ull
#define NS_PER_S  1000000000ull

void rm_reporter_set_schedule(struct rm_reporter *r, uint64_t report_interval_ms, uint64_t idle_timeout_ms)
{
	r->sched.report_interval_ns = report_interval_ms * NS_PER_MS;
	r->sched.idle_timeout_ns = idle_timeout_ms * NS_PER_MS;
}

/* a + b, or UINT64_MAX if that does not fit. */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int rm_reporter_tick(struct rm_reporter *r, uint64_t now_ns)
{
	struct rm_schedule *s = &r->sched;
	int bits = 0;

	if (s->report_interval_ns) {
		if (!s->next_report_ns)
			s->next_report_ns = add_sat(now_ns - now_ns % NS_PER_MS, s->report_interval_ns);
		if (now_ns >= s->next_report_ns) {
			uint64_t due = s->next_report_ns;

			rm_reporter_drain(r);
			/* Idle expiry as of the boundary first: an epoch silent for
			 * longer than the timeout gets its final, not one more
			 * non-final report. */
			if (s->idle_timeout_ns && due > s->idle_timeout_ns)
				rm_reporter_walk(r, RM_CTL_CLOSE_IDLE, 0, due - s->idle_timeout_ns);
			rm_reporter_walk(r, RM_CTL_SNAPSHOT, 0, 0);
			/* On capture time the boundaries after `due` up to now see
			 * no request (a tick comes before every frame): nothing is
			 * due on them; skip to the first boundary after now, on the
			 * grid. Live, a late tick does not make up reports either:
			 * the next boundary is one interval after now. */
			if (r->capture_clock) {
				uint64_t passed = now_ns - due - (now_ns - due) % s->report_interval_ns;

				s->next_report_ns = add_sat(due, add_sat(passed, s->report_interval_ns));
			} else {
				s->next_report_ns = add_sat(now_ns, s->report_interval_ns);
			}
		}
	}
	if (now_ns >= s->next_second_ns) {
		if (s->idle_timeout_ns && now_ns > s->idle_timeout_ns) {
			rm_reporter_drain(r);
			rm_reporter_walk(r, RM_CTL_CLOSE_IDLE, 0, now_ns - s->idle_timeout_ns);
		}
		s->next_second_ns = add_sat(now_ns, NS_PER_S);
		bits |= RM_TICK_SECOND;
	}
	return bits;
}
