// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * meter.bpf.c - the XDP meter: RoCEv2 parsing, classification ([SEQOBS]
 * "Applicability and Provisioning"), provisioning lookup, per-context
 * bounded sequence observation (include/rocemeter/seqobs.h) under the
 * context's spin lock, and epoch events on a ring buffer.
 *
 * Programs:
 *   rocemeter_xdp       attached to the interface (or run by replay with
 *                       BPF_PROG_TEST_RUN); XDP_PASS, or XDP_DROP in mirror
 *                       mode.
 *   rocemeter_xdp_vlan  the same, device-bound (namespace = vlan in native
 *                       mode): it also reads the VLAN tag a NIC or veth
 *                       took into the packet metadata, with the kfunc
 *                       bpf_xdp_metadata_rx_vlan_tag. The loader loads one
 *                       of the two; a device-bound program cannot be
 *                       test-run, so replay uses rocemeter_xdp.
 *   rocemeter_ctl       never attached: userspace runs it with
 *                       BPF_PROG_TEST_RUN on a struct rm_ctl to close or
 *                       snapshot a context under the same lock as the
 *                       datapath (docs/architecture.md "Every closure is atomic").
 *
 * What happens to each frame: docs/meter.md.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "rocemeter/bench.h"
#include "rocemeter/meter.h"
#include "parse.h"
#include "mirror.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load. */
const volatile __u32 rm_window_words = 16; /* ring words of a pool window (its value also holds the summaries and B) */

/* Benchmarks only (rocemeter loads 0): stop after a stage, extra work per
 * request; see enum rm_bench_cut in rocemeter/bench.h. Constants at load. */
const volatile __u32 rm_bench_cut = RM_CUT_NONE;
const volatile __u32 rm_bench_flags = 0;

/* Runtime configuration; the loader writes it through the skeleton. */
struct rm_config rm_cfg = { .window = 1024 };

/* Replay only: the parse verdict (enum rm_parse_verdict) of the last frame. */
__u32 rm_replay_verdict;

/* Raised by every unattributed frame while rm_cfg.unattributed_is_loss: an
 * epoch started under an older value (rm_ctx.capture_gen) is stale. */
__u32 rm_capture_gen;

/* The VLAN tag of the packet metadata (kernel 6.8 or later); -EOPNOTSUPP or
 * -ENODATA when the driver has none. Device-bound programs only. */
extern int bpf_xdp_metadata_rx_vlan_tag(const struct xdp_md *ctx, __be16 *vlan_proto, __u16 *vlan_tci) __ksym __weak;

#define RM_EEXIST 17 /* errno EEXIST: bpf_map_update_elem(BPF_NOEXIST) found the key */

/* contexts: rm_ctx_key -> rm_ctx (lock, engine state with its inline window),
 * allocated as contexts appear. max_entries = max_contexts. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rm_ctx_key);
	__type(value, struct rm_ctx);
} contexts SEC(".maps");

/* windows: the window pool, slot -> a pool window (seqobs.h): rm_window_words
 * ring words of SEEN bits, their summaries and the base B,
 * RM_POOL_VALUE_WORDS(rm_window_words) words. A slot is owned by at most one
 * context (rm_ctx seq.win while rm_seq_pooled()) and touched only under its lock,
 * or by the CPU that cleans it after the context gave it up; a free slot is
 * zero. Value size and max_entries (the pool's size, [meter] max_windows)
 * set at load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, RM_POOL_VALUE_WORDS(16) * sizeof(__u64));
} windows SEC(".maps");

/* free_slots: queue of free `windows` slots; the loader fills it, the
 * programs pop a slot before taking a context's lock and push it back
 * cleaned after releasing it. */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 65536);
	__uint(value_size, sizeof(__u32));
} free_slots SEC(".maps");

/* provision: rm_prov_key -> rm_prov_val; exact keys and wildcards. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct rm_prov_key);
	__type(value, struct rm_prov_val);
} provision SEC(".maps");

/* violations: rm_ctx_key -> rm_violation, the connections a profile
 * violation disabled, with or without a context; written by the XDP program,
 * removed by `rocemeter reenable` and reloads (rocemeter_ctl). max_entries =
 * [meter] max_violations, set at load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rm_ctx_key);
	__type(value, struct rm_violation);
} violations SEC(".maps");

/* viol_state: 0 -> rm_viol_state, the fail-safe of a full `violations`
 * map; set by the XDP program, cleared by `rocemeter reenable --all`. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_viol_state);
} viol_state SEC(".maps");

/* events: struct rm_event records (epoch starts and datapath closures). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* stats: 0 -> per-CPU counters indexed by enum rm_stat (RM_STATS in rocemeter/meter.h). */
struct rm_stats {
	__u64 v[RM_STAT__COUNT];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_stats);
} stats SEC(".maps");

/* This CPU's statistics (map `stats`). */
static __always_inline struct rm_stats *cpu_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stats, &zero);
}

/* obs_points: observation point (rm_ctx_key obs) -> its capture generation. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RM_OBS_MAX + 1);
	__type(key, __u32);
	__type(value, struct rm_obs_point);
} obs_points SEC(".maps");

/* One request for locked(): inputs, then what happened. */
struct rm_request {
	__u64 now;
	__u32 psn;
	__u32 gen; /* rm_capture_gen read before the lock */
	__s32 r;   /* ACT_METER: the engine's enum rm_seq_result, or < 0 */
	__u8 act;  /* enum action */
	__u8 late_violation;
	__u8 final_try; /* no window again: close with stateExhaustion */
	__u8 started, closed, exhausted;
	__u8 cause; /* a violation's (enum rm_violation_cause) */
	__u8 spare; /* engine_step(): a spare window was popped for it */
};

/* scratch: per-CPU room for snapshots copied under the lock (the stack is small). */
struct rm_scratch {
	struct rm_seq_counters start;
	struct rm_seq_counters final;
	struct rm_window_scratch clear; /* the engine's, used under a context's lock or on a released window */
	struct rm_request rq;           /* the request in hand (engine_step()) */
	struct rm_pkt pkt;              /* its headers */
	struct rm_ctx_key key;          /* its context key */
	__u8 init[sizeof(struct rm_ctx)] __attribute__((aligned(8))); /* a zeroed rm_ctx (no lock in per-CPU BTF) */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_scratch);
} scratch SEC(".maps");

static __always_inline void emit(struct rm_stats *stats, __u32 type, const struct rm_ctx_key *key,
				 const struct rm_seq_counters *snap)
{
	struct rm_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		stats->v[RM_STAT_RINGBUF_DROPS]++;
		return;
	}
	ev->type = type;
	ev->_pad = 0;
	__builtin_memcpy(&ev->key, key, sizeof(*key));
	__builtin_memcpy(&ev->snap, snap, sizeof(*snap));
	bpf_ringbuf_submit(ev, 0);
}

/* Provisioned? provision_all, or a line in one of the RM_PROV_FORMS forms. */
static __always_inline int provisioned(const struct rm_ctx_key *k)
{
	struct rm_prov_key pk;

	if (rm_cfg.provision_all)
		return 1;
#pragma unroll
	for (__u8 form = 0; form < RM_PROV_FORMS; form++) {
		rm_prov_probe(&pk, k, form);
		if (bpf_map_lookup_elem(&provision, &pk))
			return 1;
	}
	return 0;
}

/* A provisioning line names k's destination QP (any P_Key or its own). */
static __always_inline int provisioned_qp(const struct rm_ctx_key *k)
{
	struct rm_prov_key pk;

	rm_prov_probe(&pk, k, 0);
	if (bpf_map_lookup_elem(&provision, &pk))
		return 1;
	rm_prov_probe(&pk, k, RM_PROV_ANY_PKEY);
	return bpf_map_lookup_elem(&provision, &pk) != NULL;
}

/*
 * Extended headers + pad + ICRC that must fit after the BTH of an RC
 * request ([IBPKT] "Operation -> Extended Header"), for every RC request
 * opcode: a request too short for its own headers is malformed.
 */
static __always_inline __u32 rc_request_trailer(__u8 opcode, __u8 padcnt)
{
	return rm_opcode_rc_request_ext_len(opcode) + padcnt + RM_ICRC_LEN;
}

/* The statistic of a parse verdict (RM_PARSE_VERDICTS); -1 for none (cannot happen). */
static __always_inline int verdict_stat(int verdict)
{
#define RM_VERDICT_STAT_(suffix, stat, fl_stat) \
	case RM_PARSE_##suffix:                 \
		return RM_STAT_##stat;
	switch (verdict) {
		/* clang-format off */
		RM_PARSE_VERDICTS(RM_VERDICT_STAT_)
		/* clang-format on */
	default:
		return -1;
	}
#undef RM_VERDICT_STAT_
}

/* The epoch of ctx was open when an unattributed frame arrived. */
static __always_inline int stale(const struct rm_ctx *ctx, __u32 gen)
{
	return rm_seq_active(&ctx->seq) && ctx->capture_gen != gen;
}

/* Close ctx's open epoch under its lock: reason, and captureDiscontinuity if
 * it is stale. 1 if an epoch was closed into *out; a pool window it gives
 * back is named in *w (window_done() after unlocking). */
static __always_inline int close_epoch(struct rm_ctx *ctx, struct rm_seq_win *w, __u16 reason, __u32 gen,
				       struct rm_seq_counters *out)
{
	if (stale(ctx, gen))
		reason |= RM_FLAG_CAPTURE_DISCONTINUITY;
	return rm_seq_close(&ctx->seq, w, reason, out) > 0;
}

/* No pool window at hand (a closure reads none). */
static __always_inline void window_none(struct rm_seq_win *w)
{
	__builtin_memset(w, 0, sizeof(*w));
}

/*
 * Before taking ctx's lock (no helper call under it): the pool window the
 * request may need, into *w. A pooled context's own window, by the slot read
 * without the lock (the engine checks it under the lock); for an inline
 * context a spare popped from the pool, when the engine says it may need one
 * (always with `force`). Returns 1 if a spare was popped (window_done()
 * gives it back if unused), 0 otherwise.
 */
static __always_inline int window_prepare(struct rm_ctx *ctx, struct rm_seq_win *w, __u32 psn, int force)
{
	__u32 slot;

	window_none(w);
	if (rm_seq_pooled(&ctx->seq)) {
		slot = (__u32)ctx->seq.win;
		w->slot = slot;
		w->pool = bpf_map_lookup_elem(&windows, &slot);
		return 0;
	}
	if (!force && !rm_seq_may_need_window(&ctx->seq, psn))
		return 0;
	if (bpf_map_pop_elem(&free_slots, &slot))
		return 0; /* the pool is empty */
	w->slot = slot;
	w->pool = bpf_map_lookup_elem(&windows, &slot);
	return 1;
}

/*
 * Clean a pool window a context gave up and put it back in the pool. A
 * global function: the verifier checks it once, not at every caller.
 */
__noinline int rm_window_clean(__u32 slot, __u64 lo, __u64 hi)
{
	__u32 zero = 0;
	struct rm_scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
	__u64 *pw = bpf_map_lookup_elem(&windows, &slot);

	if (!pw || !sc)
		return -1;
	if (rm_window_release(pw, rm_window_words, lo, hi, &sc->clear))
		return -1;
	bpf_map_push_elem(&free_slots, &slot, 0);
	return 0;
}

/*
 * After unlocking: clean and give back the window the context released,
 * give back an unused spare, count a window taken.
 */
static __always_inline void window_done(struct rm_seq_win *w, int spare, struct rm_stats *stats)
{
	__u32 slot = w->slot;

	if (w->release)
		rm_window_clean(w->release_slot, w->release_lo, w->release_hi);
	if (w->took && stats)
		stats->v[RM_STAT_POOL_TAKEN]++;
	if (spare && !w->took)
		bpf_map_push_elem(&free_slots, &slot, 0);
}

/*
 * A frame that may have carried a request but names no connection: an
 * unclassifiable capture fault ([SEQOBS] "Applicability and Provisioning":
 * it "closes all contexts that may be affected"). With unattributed_is_loss,
 * every open epoch becomes stale.
 */
static __always_inline void unattributed(struct rm_stats *stats, __u32 obs)
{
	struct rm_obs_point *op = obs ? bpf_map_lookup_elem(&obs_points, &obs) : NULL;

	stats->v[RM_STAT_UNATTRIBUTED]++;
	if (!rm_cfg.unattributed_is_loss)
		return;
	if (op) /* a mirrored frame: only the epochs its observation point saw */
		__sync_fetch_and_add(&op->gen, 1);
	else
		__sync_fetch_and_add(&rm_capture_gen, 1);
}

/*
 * The capture generation of observation point obs: rm_capture_gen (a fault
 * of the whole capture) plus the point's own (its mirror session's gaps).
 * Both only grow, so the sum changes when either does; an epoch started
 * under another sum is stale.
 */
static __always_inline __u32 capture_gen(__u32 obs)
{
	struct rm_obs_point *op;

	if (!obs)
		return rm_capture_gen;
	op = bpf_map_lookup_elem(&obs_points, &obs);
	return rm_capture_gen + (op ? op->gen : 0);
}

static __always_inline int mirror_reordered(struct rm_mirror_session *s)
{
	__sync_fetch_and_add(&s->reordered, 1);
	return -1;
}

/*
 * A GRE sequence number of session s: one past the highest
 * is in order; further ahead is mirror loss (a gap); at or up to
 * RM_MIRROR_REORDER_MAX behind it is reordering (or a duplicate) in the
 * mirror path, counted and metered; further behind, the sender restarted:
 * a gap too, and the sequence starts there (docs/deployment.md "Mirror
 * loss"). Returns 1 for a gap, -1 for reordering, 0 in order.
 */
static __always_inline int mirror_sequence(struct rm_mirror_session *s, __u32 seq)
{
	__u64 old, next = 1ull << 32 | seq;
	int r = -1;

	/* A few tries: another CPU changed the state meanwhile (one session's
	 * frames normally arrive on one CPU). Losing them all counts the frame
	 * as reordered, never as a gap. */
	for (int i = 0; i < 4; i++) {
		__s32 d;

		old = s->seq_state;
		d = (__s32)(seq - (__u32)old);
		if (!(old >> 32) || d == 1)
			r = 0;
		else if (d > 1 || d < -RM_MIRROR_REORDER_MAX)
			r = d > 1 ? d - 1 : 1;
		else
			return mirror_reordered(s);
		if (__sync_val_compare_and_swap(&s->seq_state, old, next) == old)
			break;
		r = -1;
	}
	if (r < 0)
		return mirror_reordered(s);
	if (r > 0) {
		__sync_fetch_and_add(&s->gaps, 1);
		__sync_fetch_and_add(&s->lost, (__u64)r);
		return 1;
	}
	return 0;
}

/*
 * The observation point of a frame the parser read (rm_capture_encap set),
 * into pkt->obs and returned: 0 for a plain frame when plain frames are accepted; a mirrored frame's
 * from its session's line, after the session's sequence check (a gap makes
 * that point's open epochs stale). -1: not metered (a session no line
 * names, counted per session; a plain frame when only mirrors are).
 * A global function: verified once, and only when mirrors are accepted.
 */
__noinline int rm_mirror_point(struct xdp_md *xdp, struct rm_pkt *pkt)
{
	void *data = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	__u32 obs;
	struct rm_stats *stats = cpu_stats();
	struct rm_mirror_session *s;
	struct rm_obs_point *op;
	struct rm_mirror_key mk;

	if (!pkt)
		return -1;
	if (pkt->mirror == RM_MIRROR_NONE && (rm_capture_encap & RM_ENCAP_PLAIN))
		return 0;
	if (!stats)
		return -1;
	if (pkt->mirror == RM_MIRROR_NONE) {
		if (rm_capture_encap & RM_ENCAP_PLAIN)
			return 0;
		stats->v[RM_STAT_UNKNOWN_MIRROR]++;
		return -1;
	}
	stats->v[RM_STAT_MIRROR_FRAMES]++;
	if (rm_mirror_key_of(data, data_end, pkt, &mk))
		return -1;
	s = rm_mirror_session_of(&mk);
	if (!s) {
		stats->v[RM_STAT_UNKNOWN_MIRROR]++;
		rm_mirror_unknown_count(&mk);
		return -1;
	}
	__sync_fetch_and_add(&s->frames, 1);
	s->last_ns = rm_cfg.use_replay_clock ? rm_cfg.replay_now_ns : bpf_ktime_get_coarse_ns();
	obs = s->obs;
	if (pkt->truncated) {
		stats->v[RM_STAT_TRUNCATED_MIRROR]++;
		s->truncated++; /* a per-session hint; the statistic is exact */
	}
	if (pkt->has_seq && (pkt->encap & (RM_ENCAP_ERSPAN2 | RM_ENCAP_ERSPAN3))) {
		int seq = mirror_sequence(s, pkt->gre_seq);

		if (seq > 0) {
			stats->v[RM_STAT_MIRROR_GAPS]++;
			op = bpf_map_lookup_elem(&obs_points, &obs);
			if (op)
				__sync_fetch_and_add(&op->gen, 1);
		} else if (seq < 0) {
			stats->v[RM_STAT_MIRROR_REORDERED]++;
		}
	}
	pkt->obs = (__u8)obs;
	return (int)pkt->obs;
}

/* The parser stopped before a BTH, at something that may hide one: an
 * unsupported header, or UDP to 4791 in a form not metered (a first
 * fragment whose BTH is in the next one). */
static __always_inline int may_hide_request(const struct rm_pkt *pkt)
{
	return pkt->stop == RM_PARSE_UNSUP_ENCAP || (pkt->irregular && pkt->rocev2_port);
}

/* Record key's violation (the first one is kept). 0, or -1: the map is full. */
static __always_inline int record_violation(const struct rm_ctx_key *key, const struct rm_pkt *pkt, __u8 cause,
					    __u64 now)
{
	struct rm_violation v = { .first_ns = now, .opcode = pkt->opcode, .cause = cause, .psn = pkt->psn };
	long e = bpf_map_update_elem(&violations, key, &v, BPF_NOEXIST);

	return e == 0 || e == -RM_EEXIST ? 0 : -1;
}

/* A violation that neither `violations` nor a context can hold: the
 * connection it disabled cannot be known later, so no new one is metered. */
static __always_inline void engage_fail_safe(struct rm_stats *stats, __u64 now)
{
	__u32 zero = 0;
	struct rm_viol_state *vs = bpf_map_lookup_elem(&viol_state, &zero);

	stats->v[RM_STAT_VIOLATIONS_UNRECORDED]++;
	if (vs && !vs->fail_safe) {
		vs->since_ns = now;
		vs->fail_safe = 1;
	}
}

static __always_inline int fail_safe_engaged(void)
{
	__u32 zero = 0;
	struct rm_viol_state *vs = bpf_map_lookup_elem(&viol_state, &zero);

	return vs && vs->fail_safe;
}

/* A new context for key; NULL if the table is full. */
static __always_inline struct rm_ctx *new_context(const struct rm_ctx_key *key, struct rm_scratch *sc)
{
	__builtin_memset(sc->init, 0, sizeof(sc->init));
	bpf_map_update_elem(&contexts, key, sc->init, BPF_NOEXIST); /* may lose a race, or find the table full */
	return bpf_map_lookup_elem(&contexts, key);
}

/*
 * The VLAN IDs of the key (namespace = vlan): the tag of the packet metadata
 * first (the outermost, taken off by the NIC or veth; device-bound program
 * only), then the inline ones. A priority tag (VLAN ID 0) names no VLAN, so
 * a priority-tagged frame keys like an untagged one. Returns -1 when the
 * key cannot hold the frame's namespace: more than RM_VLAN_DEPTH_MAX VLAN
 * IDs, or a tag of a TPID that is not metered.
 */
static __always_inline int vlan_key(struct xdp_md *xdp, const int dev_bound, const struct rm_pkt *pkt,
				    struct rm_ctx_key *key, struct rm_stats *stats)
{
	__u16 meta = 0;

	if (dev_bound) {
		__be16 proto;
		__u16 tci;

		if (bpf_xdp_metadata_rx_vlan_tag(xdp, &proto, &tci) == 0) {
			stats->v[RM_STAT_VLAN_METADATA]++;
			meta = tci & RM_VLAN_VID_MASK;
		}
	}
	if (pkt->odd_tpid)
		return -1;
	if (meta) {
		if (pkt->nvid >= RM_VLAN_DEPTH_MAX)
			return -1;
		key->vlan[0] = meta;
		key->vlan[1] = pkt->vlan[0];
	} else {
		if (pkt->nvid > RM_VLAN_DEPTH_MAX)
			return -1;
		key->vlan[0] = pkt->vlan[0];
		key->vlan[1] = pkt->vlan[1];
	}
	return 0;
}

/* The parser, verified once (see RM_PARSE_GLOBAL). */
RM_PARSE_GLOBAL(rm_parse_meter, struct xdp_md)

/* What a request does to its connection. */
enum action {
	ACT_METER = 0,  /* an eligible request: account it */
	ACT_UNOBSERVED, /* one the meter could not observe: close with captureDiscontinuity */
	ACT_VIOLATION,  /* unsupported, malformed or foreign: close with profileViolation, disable */
};

/* Where a request ended: locked()'s outcomes, and find_context()'s. */
enum outcome {
	O_DONE = 0,
	O_NO_CONTEXT,  /* no context holds it: none could be made, or it is being evicted */
	O_DISABLED,    /* not metered: nothing done */
	O_NEED_WINDOW, /* the engine needs a pool window w did not give: nothing done */
	O_COUNTED,     /* not metered, and counted: nothing more to do */
};

/* The context's lock; the benchmark's per-CPU comparison (RM_BENCH_NO_LOCK,
 * never in rocemeter) runs without it, as a context owned by one CPU would. */
static __always_inline void ctx_lock(struct rm_ctx *ctx)
{
	if (!(rm_bench_flags & RM_BENCH_NO_LOCK))
		bpf_spin_lock(&ctx->lock);
}

static __always_inline void ctx_unlock(struct rm_ctx *ctx)
{
	if (!(rm_bench_flags & RM_BENCH_NO_LOCK))
		bpf_spin_unlock(&ctx->lock);
}

/*
 * What the request does to ctx, under its lock: the dead and disabled
 * checks, the closure of a stale or idle epoch, then the engine (ACT_METER)
 * or the closure of the action. Snapshots go to sc->final and sc->start.
 * No helper call in here: w holds the pool windows looked up before.
 */
static __noinline int locked(struct rm_ctx *ctx, struct rm_scratch *sc, struct rm_seq_win *w)
{
	struct rm_request *rq = &sc->rq;
	__u64 now = rq->now;
	__u32 gen = rq->gen;
	int r;

	rq->started = rq->closed = rq->exhausted = 0;
	rq->r = 0;
	ctx_lock(ctx);
	if (rm_ctx_flag(ctx, RM_CTX_DEAD)) {
		ctx_unlock(ctx);
		return O_NO_CONTEXT; /* evicted while we looked it up */
	}
	if (rq->late_violation)
		ctx->seq.s_flags |= RM_CTX_VIOLATED | RM_CTX_DISABLED;
	if (rm_ctx_flag(ctx, RM_CTX_DISABLED)) {
		ctx_unlock(ctx);
		return O_DISABLED;
	}
	if (rq->act == ACT_METER) {
		/* A stale epoch, or idle expiration ([SEQOBS] "Identity and Epoch
		 * Lifecycle"), decided here when traffic resumes so that no request
		 * joins an epoch that should have closed. */
		if (stale(ctx, gen) || (rm_cfg.idle_timeout_ns && rm_seq_active(&ctx->seq) && now > ctx->seq.last_ns &&
					now - ctx->seq.last_ns > rm_cfg.idle_timeout_ns))
			rq->closed = close_epoch(ctx, w, 0, gen, &sc->final);
		r = rm_seq_observe(&ctx->seq, w, rm_window_words, rm_cfg.window, rq->psn, now, &sc->final, &sc->clear);
		if (r == RM_SEQ_NEED_WINDOW) {
			if (!rq->final_try) {
				ctx_unlock(ctx);
				return O_NEED_WINDOW;
			}
			r = rm_seq_exhausted(&ctx->seq, w, rm_cfg.window, rq->psn, now, &sc->final);
			rq->exhausted = 1;
		}
		if (r == RM_SEQ_STARTED || r == RM_SEQ_RESTARTED) {
			ctx->capture_gen = gen;
			rm_seq_snapshot(&ctx->seq, &sc->start);
			rq->started = 1;
			rq->closed |= r == RM_SEQ_RESTARTED;
		}
		rq->r = r;
	} else if (rq->act == ACT_UNOBSERVED) {
		rq->closed = close_epoch(ctx, w, RM_FLAG_CAPTURE_DISCONTINUITY, gen, &sc->final);
	} else {
		rq->closed = close_epoch(ctx, w, RM_FLAG_PROFILE_VIOLATION, gen, &sc->final);
		ctx->seq.s_flags |= RM_CTX_VIOLATED | RM_CTX_DISABLED;
	}
	ctx_unlock(ctx);
	return O_DONE;
}

/* meter() in rocemeter_replay: the frame's copy is shorter than what was captured. */
__u8 rm_batch_short;

/*
 * meter()'s answer in rocemeter_replay when the parser ran out of a frame's
 * shortened copy: nothing was counted, run the frame whole.
 */
#define RM_BATCH_AGAIN 0x10000

/* parse_frame()'s and classify()'s answers besides a verdict or an action. */
#define FRAME_DONE  (-1) /* counted, nothing to meter */
#define FRAME_AGAIN (-2) /* replay's batch: run the frame whole (RM_BATCH_AGAIN) */

/*
 * Parse the frame into *pkt and count it with its verdict's statistic.
 * Returns the verdict (enum rm_parse_verdict) of a frame whose BTH was read,
 * FRAME_DONE for one without (an unattributed frame if it may hide a
 * request), FRAME_AGAIN when a shortened copy cannot give the verdict.
 */
static __always_inline int parse_frame(struct xdp_md *xdp, const int batch, struct rm_pkt *pkt, struct rm_stats *stats)
{
	__u32 frame_len;
	int verdict, stat;

	if (rm_cfg.use_replay_clock && rm_cfg.replay_wire_len)
		frame_len = rm_cfg.replay_wire_len; /* the capture's wire length */
	else
		frame_len = bpf_xdp_get_buff_len(xdp);
	verdict = rm_parse_meter(xdp, frame_len, pkt);
	/* A shortened copy gives the whole frame's verdict when the parser read
	 * the BTH, or stopped for a reason other than the copy's end. */
	if (batch && rm_batch_short && !pkt->bth_ok &&
	    (verdict == RM_PARSE_BAD_ETH || verdict == RM_PARSE_BAD_IP || verdict == RM_PARSE_BAD_UDP ||
	     verdict == RM_PARSE_BAD_BTH || verdict == RM_PARSE_BAD_MIRROR))
		return FRAME_AGAIN;
	stats->v[RM_STAT_FRAMES]++;
	if (rm_cfg.use_replay_clock)
		rm_replay_verdict = verdict;
	stat = verdict_stat(verdict);
	if (stat < 0 || stat >= RM_STAT__COUNT)
		return FRAME_DONE;
	stats->v[stat]++;
	if (rm_capture_encap) {
		if (rm_bench_cut == RM_CUT_HEADERS || rm_mirror_point(xdp, pkt) < 0)
			return FRAME_DONE;
	}
	if (!pkt->bth_ok) {
		if (may_hide_request(pkt))
			unattributed(stats, pkt->obs);
		return FRAME_DONE;
	}
	return verdict;
}

/*
 * Classification ([SEQOBS] "Applicability and Provisioning") of a frame
 * whose BTH was read; a frame in a form not metered (verdict !=
 * RM_PARSE_OK) is still classified. Returns what the request does to its
 * connection (enum action; a violation's cause in *cause), or FRAME_DONE
 * for a frame that is no request (counted).
 */
static __always_inline int classify(const struct rm_pkt *pkt, int verdict, struct rm_stats *stats, __u8 *cause)
{
	*cause = 0;
	if (pkt->opcode == RM_OPCODE_CNP) {
		stats->v[RM_STAT_CNP]++;
		return FRAME_DONE;
	}
	if (rm_opcode_is_rc_response(pkt->opcode)) {
		stats->v[RM_STAT_RESPONSES]++;
		return FRAME_DONE;
	}
	if (rm_opcode_transport(pkt->opcode) != RM_TRANSPORT_RC) {
		stats->v[RM_STAT_OTHER_TRANSPORT]++;
		*cause = RM_VIOLATION_FOREIGN;
		return ACT_VIOLATION;
	}
	if (verdict == RM_PARSE_BAD_UDP) {
		*cause = RM_VIOLATION_MALFORMED;
		return ACT_VIOLATION;
	}
	if (verdict != RM_PARSE_OK && !rm_opcode_is_rc_send_or_write(pkt->opcode)) {
		/* The opcode before the frame form: an unsupported request read
		 * in a form not metered is still observed ([SEQOBS]
		 * "Applicability and Provisioning"): it disables the connection. */
		*cause = RM_VIOLATION_UNSUPPORTED;
		return ACT_VIOLATION;
	}
	if (verdict != RM_PARSE_OK)
		return ACT_UNOBSERVED;
	if (pkt->tver != 0 || rc_request_trailer(pkt->opcode, pkt->padcnt) > pkt->bth_payload) {
		stats->v[RM_STAT_MALFORMED_BTH]++;
		*cause = RM_VIOLATION_MALFORMED;
		return ACT_VIOLATION;
	}
	if (!rm_opcode_is_rc_send_or_write(pkt->opcode)) {
		*cause = RM_VIOLATION_UNSUPPORTED;
		return ACT_VIOLATION;
	}
	return ACT_METER;
}

/*
 * The request's context key from its headers, into *key: addresses,
 * destination QP, P_Key, and the VLAN IDs with namespace = vlan. 0, or -1
 * when no key can hold the frame (counted as unattributed unless it is a
 * foreign request).
 */
static __always_inline int context_key(struct xdp_md *xdp, const int dev_bound, const struct rm_pkt *pkt, int foreign,
				       struct rm_ctx_key *key, struct rm_stats *stats)
{
	void *data = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	__u8 *src, *dst;

	__builtin_memset(key, 0, sizeof(*key));
	key->family = pkt->family;
	src = (__u8 *)data + (pkt->src_off & RM_PKT_OFF_MASK);
	dst = (__u8 *)data + (pkt->dst_off & RM_PKT_OFF_MASK);
	if (pkt->family == 4) {
		if ((void *)(src + 4) > data_end || (void *)(dst + 4) > data_end)
			return -1;
		__builtin_memcpy(key->src, src, 4);
		__builtin_memcpy(key->dst, dst, 4);
	} else {
		if ((void *)(src + 16) > data_end || (void *)(dst + 16) > data_end)
			return -1;
		__builtin_memcpy(key->src, src, 16);
		__builtin_memcpy(key->dst, dst, 16);
	}
	key->dest_qp = pkt->dest_qp;
	key->pkey = pkt->pkey;
	key->obs = pkt->obs;
	if (rm_cfg.ns_mode == RM_NS_VLAN && vlan_key(xdp, dev_bound, pkt, key, stats)) {
		if (!foreign)
			unattributed(stats, pkt->obs);
		return -1;
	}
	return 0;
}

/*
 * The arrival time, on the coarse monotonic clock (docs/meter.md "Clock"):
 * its tick suffices for flowEnd and the idle timeout, and it costs a few ns
 * where bpf_ktime_get_ns costs 25-30; an epoch's first request reads the
 * fine one (engine_step()). Replay: the capture's time.
 */
static __always_inline __u64 arrival_time(void)
{
	return rm_cfg.use_replay_clock ? rm_cfg.replay_now_ns : bpf_ktime_get_coarse_ns();
}

/*
 * The request's context: the existing one, or a new one for a connection
 * that is provisioned, not disabled and not refused by the fail-safe
 * (*late_violation = 1 if another CPU recorded a violation of it since the
 * first lookup). Returns 0 with *ctxp, O_NO_CONTEXT when no context can
 * hold the request (the table is full, or an unobserved request finds no
 * epoch to close), or O_COUNTED when the request is not metered (counted).
 */
static __always_inline int find_context(const struct rm_ctx_key *key, int act, int foreign, struct rm_scratch *sc,
					struct rm_stats *stats, struct rm_ctx **ctxp, int *late_violation)
{
	struct rm_ctx *ctx;

	*late_violation = 0;
	ctx = bpf_map_lookup_elem(&contexts, key);
	*ctxp = ctx;
	if (ctx)
		return 0;
	/* A UC, RD, UD or XRC request names an RC connection only when that one is
	 * known: it has a context, or a line provisions its QP (QP 1 of
	 * connection management is UD, under any-QP lines too). */
	if (foreign && !(provisioned(key) && provisioned_qp(key)))
		return O_COUNTED;
	if (!provisioned(key)) {
		stats->v[RM_STAT_NOT_PROVISIONED]++;
		return O_COUNTED;
	}
	if (bpf_map_lookup_elem(&violations, key)) {
		stats->v[RM_STAT_DISABLED]++;
		return O_COUNTED;
	}
	if (act == ACT_UNOBSERVED)
		return O_NO_CONTEXT;
	if (act == ACT_METER && fail_safe_engaged()) {
		stats->v[RM_STAT_FAIL_SAFE_REFUSED]++;
		return O_COUNTED;
	}
	/* A violation gets a context too when there is room (status and
	 * replay list disabled contexts); `violations` holds it anyway. */
	ctx = new_context(key, sc);
	*ctxp = ctx;
	if (!ctx)
		return O_NO_CONTEXT;
	/* A violation recorded by another CPU since the lookup above. */
	*late_violation = act == ACT_METER && bpf_map_lookup_elem(&violations, key) != NULL;
	return 0;
}

/*
 * The engine step: the request in sc->rq, the pool window it may need
 * prepared, locked(), the window given back; once more when locked() needs
 * a window the first look did not give. Returns locked()'s outcome; sc->rq
 * says what happened.
 */
static __always_inline int engine_step(struct rm_ctx *ctx, struct rm_scratch *sc, struct rm_stats *stats, int act,
				       int late_violation, __u32 psn, __u64 now, const int batch)
{
	struct rm_request *rq = &sc->rq;
	struct rm_seq_win w;
	int o;

	/* A request that will most likely start an epoch (none is open: read
	 * without the lock) takes the fine clock: flowStart keeps the order of
	 * first arrivals that the reports are serialized in. */
	if (act == ACT_METER && !rm_cfg.use_replay_clock && !rm_seq_active(&ctx->seq))
		now = bpf_ktime_get_ns();
	rq->late_violation = late_violation;
	rq->psn = psn;
	rq->now = now;
	rq->gen = capture_gen(sc->key.obs);
	rq->spare = 0;
	if (act == ACT_METER)
		rq->spare = window_prepare(ctx, &w, psn, 0);
	else
		window_none(&w); /* a closure needs no window */
	/* Replay runs on one CPU: nothing changes the context between the
	 * first look and the lock, the first look foresees exactly (one try,
	 * and one verification of the engine). */
	rq->final_try = batch;
	o = locked(ctx, sc, &w);
	window_done(&w, rq->spare, stats);
	if (!batch && o == O_NEED_WINDOW) {
		/* Another CPU changed the context since the first look, or the
		 * engine needs a spare the first look did not foresee: once more,
		 * then stateExhaustion (pool empty, or still no window). */
		rq->spare = window_prepare(ctx, &w, psn, 1);
		rq->final_try = 1;
		o = locked(ctx, sc, &w);
		window_done(&w, rq->spare, stats);
	}
	return o;
}

/*
 * The request's own statistic (enum action), where the request ended: in
 * its context (held), or without one (no context could be made, or it was
 * being evicted). A violation is recorded; if `violations` is full and no
 * context holds it, the fail-safe engages.
 */
static __always_inline void count_request(struct rm_stats *stats, int act, int held, const struct rm_ctx_key *key,
					  const struct rm_pkt *pkt, __u8 cause, __u64 now)
{
	if (act == ACT_METER) {
		stats->v[held ? RM_STAT_ELIGIBLE : RM_STAT_TABLE_FULL]++;
	} else if (act == ACT_UNOBSERVED) {
		stats->v[RM_STAT_UNOBSERVED]++;
	} else {
		stats->v[RM_STAT_VIOLATIONS]++;
		/* A held violation stays in its context if the map is full (a
		 * violated context is never evicted while the map lacks it). */
		if (record_violation(key, pkt, cause, now) && !held)
			engage_fail_safe(stats, now);
	}
}

/*
 * The statistics of a request that reached its context or found none
 * (outcome o: locked()'s, or O_NO_CONTEXT), and the events of the epochs it
 * closed and started (sc->rq, snapshots in sc->final and sc->start).
 */
static __always_inline void count_outcome(struct rm_stats *stats, struct rm_scratch *sc, const struct rm_ctx_key *key,
					  const struct rm_pkt *pkt, int o)
{
	struct rm_request *rq = &sc->rq;
	int act = rq->act;
	__u8 cause = rq->cause;
	__u64 now = rq->now;

	if (o == O_NO_CONTEXT) {
		count_request(stats, act, 0, key, pkt, cause, now);
		return;
	}
	if (o == O_DISABLED) {
		stats->v[RM_STAT_DISABLED]++;
		return;
	}
	if (act == ACT_METER && rq->r < 0)
		return; /* inconsistent configuration; nothing changed */
	count_request(stats, act, 1, key, pkt, cause, now);
	if (rq->exhausted)
		stats->v[RM_STAT_POOL_EXHAUSTED]++;
	if (rq->closed) {
		stats->v[RM_STAT_EPOCHS_CLOSED]++;
		emit(stats, RM_EV_EPOCH_FINAL, key, &sc->final);
	}
	if (rq->started) {
		stats->v[RM_STAT_EPOCHS_STARTED]++;
		emit(stats, RM_EV_EPOCH_START, key, &sc->start);
	} else if (rm_bench_flags & RM_BENCH_EMIT_EACH) {
		emit(stats, RM_EV_EPOCH_START, key, &sc->final);
	}
}

/*
 * The body of both XDP programs and of replay's batch; dev_bound and batch
 * are constants per program. One step after the other, each with the
 * benchmark's cut after it (enum rm_bench_cut): classify, key and arrival
 * time, the context, the engine under the context's lock, the statistics
 * and events. No flag lives across the engine step but what the
 * statistics read: the verifier walks the engine once per distinct state.
 */
static __always_inline int meter(struct xdp_md *xdp, const int dev_bound, const int batch)
{
	__u32 zero = 0, pass = rm_cfg.mirror ? XDP_DROP : XDP_PASS;
	struct rm_stats *stats = cpu_stats();
	struct rm_scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
	struct rm_pkt *pkt;
	struct rm_ctx_key *key;
	struct rm_ctx *ctx = NULL;
	int verdict, act, late_violation, o;
	__u8 cause;
	__u64 now;

	if (!stats || !sc)
		return XDP_PASS;
	pkt = &sc->pkt; /* in map memory: the stack is needed by the engine's calls */
	key = &sc->key;
	if (rm_bench_cut == RM_CUT_PERCPU) {
		stats->v[RM_STAT_FRAMES]++;
		return pass;
	}

	verdict = parse_frame(xdp, batch, pkt, stats);
	if (verdict == FRAME_AGAIN)
		return RM_BATCH_AGAIN;
	if (verdict < 0)
		return pass;
	act = classify(pkt, verdict, stats, &cause);
	if (act < 0 || rm_bench_cut == RM_CUT_PARSE)
		return pass;

	if (context_key(xdp, dev_bound, pkt, cause == RM_VIOLATION_FOREIGN, key, stats))
		return pass;
	now = arrival_time();
	if (rm_bench_cut == RM_CUT_KEY)
		return pass;

	o = find_context(key, act, cause == RM_VIOLATION_FOREIGN, sc, stats, &ctx, &late_violation);
	if (o == O_COUNTED || rm_bench_cut == RM_CUT_CONTEXT)
		return pass;

	/* What count_outcome() reads, in map memory: no constant of the
	 * paths before (the action, the cause) lives across the engine step,
	 * so the verifier walks locked() once, not once per path. */
	sc->rq.act = act;
	sc->rq.cause = cause;
	sc->rq.now = now;
	if (!o && ctx)
		o = engine_step(ctx, sc, stats, act, late_violation, pkt->psn, now, batch);
	if (rm_bench_cut == RM_CUT_ENGINE)
		return pass;

	count_outcome(stats, sc, key, pkt, o);
	return pass;
}

SEC("xdp.frags")
int rocemeter_xdp(struct xdp_md *xdp)
{
	return meter(xdp, 0, 0);
}

SEC("xdp.frags")
int rocemeter_xdp_vlan(struct xdp_md *xdp)
{
	return meter(xdp, 1, 0);
}

/* rocemeter_replay: the frames of the batch (userspace sets it), the
 * frames run so far (userspace zeroes it), the verdict of each. */
__u32 rm_batch_n;
__u32 rm_batch_done;
__u8 rm_batch_verdict[RM_BATCH_MAX];
/* The frame in hand: its copy's length, its start's offset from the
 * buffer's (globals, not locals: meter() needs the stack). */
__u32 rm_batch_len, rm_batch_off;
__u8 rm_batch_again; /* the run stopped before a frame to run whole */

/* replay_next: 0 -> rocemeter_replay itself (the loader puts it there). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} replay_next SEC(".maps");

/*
 * Replay's batch (never attached): one BPF_PROG_TEST_RUN runs the
 * captured frames of a batch through meter(), the code of rocemeter_xdp,
 * one after the other (docs/meter.md "Replay"). The buffer holds, from its
 * end backwards, each frame's first rec.len bytes followed by its struct
 * rm_batch_rec: the first frame's record ends the buffer. Each run of this
 * program meters the frame whose record ends the packet: it reads the
 * record, cuts it off the tail, moves the head to the frame's start (so the
 * frame is the packet, its copy's end the packet's end), runs meter() with
 * the record's clock and wire length, then moves the head back to the
 * buffer's start, cuts the frame off the tail and tail-calls itself. The
 * tail only shrinks (growing it would zero what it uncovers) and no loop
 * goes round meter(): the verifier checks it once. A tail-call chain is at
 * most 33 long, so a batch may take several runs. It stops before a frame
 * whose shortened copy cannot give its verdict (RM_BATCH_AGAIN): userspace
 * runs that one whole, then the rest (rm_batch_done says where).
 */
SEC("xdp")
int rocemeter_replay(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	__u32 i = rm_batch_done, size = (__u32)((long)data_end - (long)data), zero = 0;
	struct rm_batch_rec rec;

	if (i >= rm_batch_n || i >= RM_BATCH_MAX)
		return XDP_PASS;
	if (size < sizeof(rec) + RM_BATCH_FRAME_MIN || bpf_xdp_load_bytes(xdp, size - sizeof(rec), &rec, sizeof(rec)))
		return XDP_ABORTED;
	size -= sizeof(rec);
	if (rec.len < RM_BATCH_FRAME_MIN || rec.len > size)
		return XDP_ABORTED;
	rm_batch_len = rec.len;
	rm_batch_off = size - rec.len;
	rm_cfg.replay_now_ns = rec.ts_ns;
	rm_cfg.replay_wire_len = rec.wire_len;
	rm_batch_short = rec.flags & RM_BATCH_SHORT;
	if (bpf_xdp_adjust_tail(xdp, -(int)sizeof(rec)) || bpf_xdp_adjust_head(xdp, (int)rm_batch_off))
		return XDP_ABORTED;
	if (meter(xdp, 0, 1) == RM_BATCH_AGAIN) {
		rm_batch_again = 1;
		return XDP_PASS;
	}
	i = rm_batch_done;
	if (i >= RM_BATCH_MAX)
		return XDP_ABORTED;
	rm_batch_verdict[i] = (__u8)rm_replay_verdict;
	rm_batch_done = ++i;
	if (i >= rm_batch_n)
		return XDP_PASS;
	if (bpf_xdp_adjust_head(xdp, -(int)rm_batch_off) || bpf_xdp_adjust_tail(xdp, -(int)rm_batch_len))
		return XDP_ABORTED;
	bpf_tail_call(xdp, &replay_next, zero);
	return XDP_PASS; /* the chain's end: userspace runs the rest */
}

/*
 * rocemeter_ctl's operations (enum rm_ctl_op), one helper each:
 * rocemeter_ctl() reads the request c (status RM_CTL_OK when a helper is
 * called), finds the key's context ctx and calls the helper of c->op. gen
 * is the capture generation of the key's observation point. A closure
 * gives the context's pool window back after unlocking (window_done()).
 */

/* RM_CTL_CLEAR_FAIL_SAFE: leave the violations fail-safe. */
static __always_inline void ctl_clear_fail_safe(void)
{
	__u32 zero = 0;
	struct rm_viol_state *vs = bpf_map_lookup_elem(&viol_state, &zero);

	if (vs) {
		vs->fail_safe = 0;
		vs->since_ns = 0;
	}
}

/* RM_CTL_CLOSE: close the open epoch with the request's reason; snapshot -> c->snap. */
static __always_inline void ctl_close(struct rm_ctl *c, struct rm_ctx *ctx, __u32 gen, struct rm_stats *stats)
{
	struct rm_seq_win w;

	window_none(&w); /* closures read no window; a released one is cleaned after unlocking */
	bpf_spin_lock(&ctx->lock);
	if (!close_epoch(ctx, &w, c->reason & RM_FLAG_REASON_MASK, gen, &c->snap))
		c->status = RM_CTL_NO_EPOCH;
	bpf_spin_unlock(&ctx->lock);
	window_done(&w, 0, stats);
}

/* RM_CTL_SNAPSHOT: copy the state without changing it. */
static __always_inline void ctl_snapshot(struct rm_ctl *c, struct rm_ctx *ctx)
{
	bpf_spin_lock(&ctx->lock);
	rm_seq_snapshot(&ctx->seq, &c->snap);
	if (!rm_seq_active(&ctx->seq))
		c->status = RM_CTL_NO_EPOCH;
	bpf_spin_unlock(&ctx->lock);
}

/* RM_CTL_REPROVISION: after a reload, metered iff provisioned now and not violated. */
static __always_inline void ctl_reprovision(struct rm_ctx *ctx, const struct rm_ctx_key *key)
{
	int prov = provisioned(key); /* map lookups: not under the lock */

	bpf_spin_lock(&ctx->lock);
	if (!prov || rm_ctx_flag(ctx, RM_CTX_VIOLATED))
		ctx->seq.s_flags |= RM_CTX_DISABLED;
	else
		ctx->seq.s_flags &= ~RM_CTX_DISABLED;
	bpf_spin_unlock(&ctx->lock);
}

/* RM_CTL_CLOSE_IDLE: close (finalEpoch alone) only if the last request is older than c->idle_before_ns. */
static __always_inline void ctl_close_idle(struct rm_ctl *c, struct rm_ctx *ctx, __u32 gen, struct rm_stats *stats)
{
	struct rm_seq_win w;

	window_none(&w);
	bpf_spin_lock(&ctx->lock);
	if (!rm_seq_active(&ctx->seq))
		c->status = RM_CTL_NO_EPOCH;
	else if (ctx->seq.last_ns >= c->idle_before_ns)
		c->status = RM_CTL_NOT_IDLE;
	else
		close_epoch(ctx, &w, 0, gen, &c->snap);
	bpf_spin_unlock(&ctx->lock);
	window_done(&w, 0, stats);
}

/* RM_CTL_EVICT: close with stateExhaustion, remove the context (its slot is freed). */
static __always_inline void ctl_evict(struct rm_ctl *c, struct rm_ctx *ctx, const struct rm_ctx_key *key, __u32 gen,
				      struct rm_stats *stats)
{
	int in_map = bpf_map_lookup_elem(&violations, key) != NULL;
	struct rm_seq_win w;

	window_none(&w);
	bpf_spin_lock(&ctx->lock);
	if (rm_ctx_flag(ctx, RM_CTX_VIOLATED) && !in_map) {
		/* The context alone holds the violation (the map was full):
		 * evicting it would re-enable the connection. */
		bpf_spin_unlock(&ctx->lock);
		c->status = RM_CTL_FAILED;
		return;
	}
	if (!close_epoch(ctx, &w, RM_FLAG_STATE_EXHAUSTION, gen, &c->snap))
		c->status = RM_CTL_NO_EPOCH;
	ctx->seq.s_flags |= RM_CTX_DEAD;
	bpf_spin_unlock(&ctx->lock);
	window_done(&w, 0, stats);
	if (bpf_map_delete_elem(&contexts, key) == 0 && stats)
		stats->v[RM_STAT_EVICTIONS]++;
}

/* RM_CTL_REENABLE of a key with a context: forget the context's violation too (forgot: the map's was
 * forgotten); metered iff provisioned. */
static __always_inline void ctl_reenable(struct rm_ctl *c, struct rm_ctx *ctx, const struct rm_ctx_key *key, int forgot)
{
	int prov = provisioned(key); /* map lookups: not under the lock */

	bpf_spin_lock(&ctx->lock);
	if (!forgot && !rm_ctx_flag(ctx, RM_CTX_VIOLATED))
		c->status = RM_CTL_NOT_VIOLATED;
	ctx->seq.s_flags &= ~(RM_CTX_VIOLATED | RM_CTX_DISABLED);
	if (!prov)
		ctx->seq.s_flags |= RM_CTX_DISABLED;
	bpf_spin_unlock(&ctx->lock);
}

/* RM_CTL_CLOSE_STALE: close with captureDiscontinuity only an epoch open before the last unattributed frame. */
static __always_inline void ctl_close_stale(struct rm_ctl *c, struct rm_ctx *ctx, __u32 gen, struct rm_stats *stats)
{
	struct rm_seq_win w;

	window_none(&w);
	bpf_spin_lock(&ctx->lock);
	if (!rm_seq_active(&ctx->seq))
		c->status = RM_CTL_NO_EPOCH;
	else if (!stale(ctx, gen))
		c->status = RM_CTL_NOT_IDLE;
	else
		close_epoch(ctx, &w, RM_FLAG_CAPTURE_DISCONTINUITY, gen, &c->snap);
	bpf_spin_unlock(&ctx->lock);
	window_done(&w, 0, stats);
}

/*
 * The control program: the request is the frame's data (struct rm_ctl),
 * its result written back into it. The fail-safe needs no key; every other
 * operation finds the key's context first (a re-enable forgets the key's
 * violation before, with or without a context), then runs its helper.
 */
SEC("xdp")
int rocemeter_ctl(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	struct rm_ctl *c = data;
	struct rm_ctx_key key;
	struct rm_ctx *ctx;
	struct rm_stats *stats;
	__u32 zero = 0, gen;
	int forgot = 0;

	if ((void *)(c + 1) > data_end)
		return XDP_ABORTED;
	c->status = RM_CTL_OK;
	if (c->op == RM_CTL_CLEAR_FAIL_SAFE) {
		ctl_clear_fail_safe();
		return XDP_PASS;
	}
	__builtin_memcpy(&key, &c->key, sizeof(key));
	gen = capture_gen(key.obs);
	if (c->op == RM_CTL_REENABLE)
		forgot = bpf_map_delete_elem(&violations, &key) == 0;
	ctx = bpf_map_lookup_elem(&contexts, &key);
	if (!ctx) {
		c->status = c->op == RM_CTL_REENABLE ? (forgot ? RM_CTL_OK : RM_CTL_NOT_VIOLATED) : RM_CTL_NO_CONTEXT;
		return XDP_PASS;
	}
	if (!bpf_map_lookup_elem(&scratch, &zero)) {
		c->status = RM_CTL_FAILED;
		return XDP_PASS;
	}
	stats = cpu_stats();
	switch (c->op) {
	case RM_CTL_CLOSE:
		ctl_close(c, ctx, gen, stats);
		break;
	case RM_CTL_SNAPSHOT:
		ctl_snapshot(c, ctx);
		break;
	case RM_CTL_REPROVISION:
		ctl_reprovision(ctx, &key);
		break;
	case RM_CTL_CLOSE_IDLE:
		ctl_close_idle(c, ctx, gen, stats);
		break;
	case RM_CTL_EVICT:
		ctl_evict(c, ctx, &key, gen, stats);
		break;
	case RM_CTL_REENABLE:
		ctl_reenable(c, ctx, &key, forgot);
		break;
	case RM_CTL_CLOSE_STALE:
		ctl_close_stale(c, ctx, gen, stats);
		break;
	default:
		c->status = RM_CTL_FAILED;
	}
	return XDP_PASS;
}
