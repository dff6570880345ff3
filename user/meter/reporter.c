// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* reporter.c - snapshots to reports (see reporter.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "reporter.h"

int rm_reporter_init(struct rm_reporter *r, struct rm_meter *m, uint64_t observation_point_id, int vlan_ns,
		     int generation_verified, int64_t time_offset_ns, rm_report_sink sink, void *sink_arg)
{
	memset(r, 0, sizeof(*r));
	r->ids = rm_ids_new();
	if (!r->ids)
		return -1;
	r->meter = m;
	r->observation_point_id = observation_point_id;
	r->vlan_ns = vlan_ns;
	r->generation_verified = generation_verified;
	r->time_offset_ns = time_offset_ns;
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

static uint64_t to_unix_ms(const struct rm_reporter *r, uint64_t ns)
{
	return (uint64_t)((int64_t)ns + r->time_offset_ns) / 1000000u;
}

void rm_reporter_snapshot(struct rm_reporter *r, const struct rm_ctx_key *key, const struct rm_seq_counters *s,
			  int final)
{
	struct rm_report rep;

	memset(&rep, 0, sizeof(rep));
	if (rm_ids_assign(r->ids, key, s->epoch_gen, final, &rep.epoch_id, &rep.report_id)) {
		r->id_exhausted++;
		return;
	}
	rep.observation_point_id = r->observation_point_id;
	rep.family = key->family;
	memcpy(rep.src, key->src, 16);
	memcpy(rep.dst, key->dst, 16);
	rep.has_vlan_ns = (uint8_t)r->vlan_ns;
	rep.vlan[0] = key->vlan[0];
	rep.vlan[1] = key->vlan[1];
	rep.dest_qp = key->dest_qp;
	rep.pkey = key->pkey;
	rep.flow_start_ms = to_unix_ms(r, s->first_ns);
	rep.flow_end_ms = to_unix_ms(r, s->last_ns);
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
	if (r->sink(r->sink_arg, &rep)) {
		rm_ids_unassign(r->ids, key, s->epoch_gen, final, rep.epoch_id, rep.report_id);
		r->not_serialized++;
		return;
	}
	r->reports++;
	if (final)
		r->final_reports++;

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

int rm_reporter_walk(struct rm_reporter *r, enum rm_ctl_op op, uint16_t reason, uint64_t idle_before_ns)
{
	struct rm_meter *m = r->meter;
	struct rm_ctx_key key, next, *prev = NULL;
	struct open_ctx *open = NULL;
	size_t n = 0, cap = 0;
	struct rm_ctl c;
	int e, count = 0;

	/* Collect the open epochs first: the walk must not depend on hash order. */
	while (bpf_map_get_next_key(m->contexts_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		memset(&c, 0, sizeof(c));
		c.op = RM_CTL_SNAPSHOT;
		c.key = key;
		e = rm_meter_ctl(m, &c);
		if (e)
			goto out;
		if (c.status != RM_CTL_OK)
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
	qsort(open, n, sizeof(*open), by_first_arrival);
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
	struct rm_ctx_key key, next, *prev = NULL;
	struct victim *v = NULL;
	size_t cnt = 0, cap = 0;
	struct rm_ctx val;
	int evicted = 0;

	while (bpf_map_get_next_key(m->contexts_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem_flags(m->contexts_fd, &key, &val, BPF_F_LOCK) || val.disabled || val.dead)
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
		v[cnt].order = val.seq.active ? val.seq.c.last_ns + 1 : 0;
		cnt++;
	}
	qsort(v, cnt, sizeof(*v), by_order);
	for (size_t i = 0; i < cnt && (unsigned int)evicted < n; i++) {
		struct rm_ctl c;

		memset(&c, 0, sizeof(c));
		c.op = RM_CTL_EVICT;
		c.key = v[i].key;
		if (rm_meter_ctl(m, &c))
			break;
		if (c.status == RM_CTL_OK)
			rm_reporter_snapshot(r, &v[i].key, &c.snap, 1);
		if (c.status == RM_CTL_OK || c.status == RM_CTL_NO_EPOCH)
			evicted++;
	}
	free(v);
	return evicted;
}

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull

void rm_reporter_set_schedule(struct rm_reporter *r, uint64_t report_interval_ms, uint64_t idle_timeout_ms,
			      int capture_clock)
{
	r->sched.report_interval_ns = report_interval_ms * NS_PER_MS;
	r->sched.idle_timeout_ns = idle_timeout_ms * NS_PER_MS;
	r->sched.capture_clock = capture_clock;
}

int rm_reporter_tick(struct rm_reporter *r, uint64_t now_ns)
{
	struct rm_schedule *s = &r->sched;
	int bits = 0;

	if (s->report_interval_ns) {
		if (!s->next_report_ns)
			s->next_report_ns = now_ns - now_ns % NS_PER_MS + s->report_interval_ns;
		while (now_ns >= s->next_report_ns) {
			rm_reporter_drain(r);
			rm_reporter_walk(r, RM_CTL_SNAPSHOT, 0, 0);
			if (s->capture_clock)
				s->next_report_ns += s->report_interval_ns;
			else
				s->next_report_ns = now_ns + s->report_interval_ns;
		}
	}
	if (now_ns >= s->next_second_ns) {
		if (s->idle_timeout_ns && now_ns > s->idle_timeout_ns) {
			rm_reporter_drain(r);
			rm_reporter_walk(r, RM_CTL_CLOSE_IDLE, 0, now_ns - s->idle_timeout_ns);
		}
		s->next_second_ns = now_ns + NS_PER_S;
		bits |= RM_TICK_SECOND;
	}
	return bits;
}
