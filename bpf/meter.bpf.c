// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * meter.bpf.c - the XDP meter: RoCEv2 parsing, classification (seed 000
 * "Applicability and Provisioning"), provisioning lookup, per-context
 * bounded sequence observation (include/rocemeter/seqobs.h) under the
 * context's spin lock, and epoch events on a ring buffer.
 *
 * Programs:
 *   rocemeter_xdp  attached to the interface (or run by replay with
 *                  BPF_PROG_TEST_RUN); XDP_PASS, or XDP_DROP in mirror mode.
 *   rocemeter_ctl  never attached: userspace runs it with BPF_PROG_TEST_RUN
 *                  on a struct rm_ctl to close or snapshot a context under
 *                  the same lock as the datapath (DESIGN.md decision 4).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "rocemeter/common.h"
#include "parse.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load. */
const volatile __u32 rm_window_words = 16; /* ring words per context (the value also holds the summaries) */

/* Runtime configuration; the loader writes it through the skeleton. */
struct rm_config rm_cfg = { .window = 1024 };

/* Replay only: the parse verdict (enum rm_parse_verdict) of the last frame. */
__u32 rm_replay_verdict;

/* contexts: rm_ctx_key -> rm_ctx (lock, slot, engine state). max_entries = max_contexts. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rm_ctx_key);
	__type(value, struct rm_ctx);
} contexts SEC(".maps");

/* windows: slot -> the context's window (seqobs.h): rm_window_words ring words
 * of SEEN bits and their summaries, RM_WINDOW_VALUE_WORDS(rm_window_words) words.
 * Touched only under the owning context's lock. Value size set at load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, RM_WINDOW_VALUE_WORDS(16) * sizeof(__u64));
} windows SEC(".maps");

/* free_slots: queue of unused `windows` slots; the loader fills it. */
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

/* events: struct rm_event records (epoch starts and datapath closures). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* stats: per-CPU counters indexed by enum rm_stat. */
struct rm_stats {
	__u64 v[RM_STAT__COUNT];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_stats);
} stats SEC(".maps");

/* scratch: per-CPU room for snapshots copied under the lock (the stack is small). */
struct rm_scratch {
	struct rm_seq_counters start;
	struct rm_seq_counters final;
	struct rm_window_scratch clear; /* the engine's, used under a context's lock */
	__u8 init[sizeof(struct rm_ctx)] __attribute__((aligned(8))); /* a zeroed rm_ctx (no lock in per-CPU BTF) */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_scratch);
} scratch SEC(".maps");

static __always_inline void emit(struct rm_stats *st, __u32 type, const struct rm_ctx_key *key,
				 const struct rm_seq_counters *snap)
{
	struct rm_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		st->v[RM_STAT_RINGBUF_DROPS]++;
		return;
	}
	ev->type = type;
	ev->_pad = 0;
	__builtin_memcpy(&ev->key, key, sizeof(*key));
	__builtin_memcpy(&ev->snap, snap, sizeof(*snap));
	bpf_ringbuf_submit(ev, 0);
}

/* Provisioned? Exact key, then the wildcards, then provision_all. */
static __always_inline int provisioned(const struct rm_ctx_key *k)
{
	struct rm_prov_key pk = {};

	if (rm_cfg.provision_all)
		return 1;
	__builtin_memcpy(pk.src, k->src, 16);
	__builtin_memcpy(pk.dst, k->dst, 16);
	pk.family = k->family;
	pk.dest_qp = k->dest_qp;
	pk.pkey = k->pkey;
	if (bpf_map_lookup_elem(&provision, &pk))
		return 1;
	pk.wildcard = RM_PROV_ANY_QP;
	pk.dest_qp = 0;
	if (bpf_map_lookup_elem(&provision, &pk))
		return 1;
	pk.wildcard = RM_PROV_ANY_PKEY;
	pk.dest_qp = k->dest_qp;
	pk.pkey = 0;
	if (bpf_map_lookup_elem(&provision, &pk))
		return 1;
	pk.wildcard = RM_PROV_ANY_QP | RM_PROV_ANY_PKEY;
	pk.dest_qp = 0;
	return bpf_map_lookup_elem(&provision, &pk) != NULL;
}

/*
 * Extended headers + pad + ICRC that must fit after the BTH of an RC
 * request (seed 001, "Operation -> Extended Header"), for every RC request
 * opcode: a request too short for its own headers is malformed.
 */
static __always_inline __u32 rc_request_trailer(__u8 opcode, __u8 padcnt)
{
	return rm_opcode_rc_request_ext_len(opcode) + padcnt + RM_ICRC_LEN;
}

static const __u8 verdict_stat[] = {
	[RM_PARSE_OK] = RM_STAT_ROCEV2,
	[RM_PARSE_NOT_ROCEV2] = RM_STAT_NOT_ROCEV2,
	[RM_PARSE_ROCEV1] = RM_STAT_ROCEV1,
	[RM_PARSE_FRAGMENT] = RM_STAT_IP_FRAGMENT,
	[RM_PARSE_UNSUP_ENCAP] = RM_STAT_UNSUP_ENCAP,
	[RM_PARSE_BAD_ETH] = RM_STAT_MALFORMED_ETH,
	[RM_PARSE_BAD_IP] = RM_STAT_MALFORMED_IP,
	[RM_PARSE_BAD_UDP] = RM_STAT_MALFORMED_UDP,
	[RM_PARSE_BAD_BTH] = RM_STAT_MALFORMED_BTH,
};

SEC("xdp.frags")
int rocemeter_xdp(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	__u32 zero = 0, pass = rm_cfg.mirror ? XDP_DROP : XDP_PASS;
	struct rm_stats *st = bpf_map_lookup_elem(&stats, &zero);
	struct rm_scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
	struct rm_pkt pkt;
	struct rm_ctx_key key;
	struct rm_ctx *ctx;
	__u64 *win, now;
	__u32 frame_len;
	int verdict, eligible, started = 0, closed = 0, r;

	if (!st || !sc)
		return XDP_PASS;
	st->v[RM_STAT_FRAMES]++;
	frame_len = bpf_xdp_get_buff_len(xdp);
	if (rm_cfg.use_replay_clock && rm_cfg.replay_wire_len)
		frame_len = rm_cfg.replay_wire_len;
	verdict = rm_parse_len(data, data_end, frame_len, &pkt);
	if (rm_cfg.use_replay_clock)
		rm_replay_verdict = verdict;
	if (verdict < 0 || verdict >= (int)(sizeof(verdict_stat) / sizeof(verdict_stat[0])))
		return pass;
	st->v[verdict_stat[verdict]]++;
	if (verdict != RM_PARSE_OK)
		return pass;

	/* Classification: only RC requests reach a context. */
	if (rm_opcode_transport(pkt.opcode) != RM_TRANSPORT_RC) {
		st->v[pkt.opcode == RM_OPCODE_CNP ? RM_STAT_CNP : RM_STAT_OTHER_TRANSPORT]++;
		return pass;
	}
	if (rm_opcode_is_rc_response(pkt.opcode)) {
		st->v[RM_STAT_RESPONSES]++;
		return pass;
	}
	eligible = rm_opcode_is_rc_send_or_write(pkt.opcode);
	if (pkt.tver != 0 || rc_request_trailer(pkt.opcode, rm_bth_padcnt(pkt.bth)) > pkt.bth_payload) {
		st->v[RM_STAT_MALFORMED_BTH]++;
		eligible = 0; /* a malformed request is a profile violation */
	}

	__builtin_memset(&key, 0, sizeof(key));
	key.family = pkt.family;
	if (pkt.family == 4) {
		if ((void *)(pkt.src + 4) > data_end || (void *)(pkt.dst + 4) > data_end)
			return pass;
		__builtin_memcpy(key.src, pkt.src, 4);
		__builtin_memcpy(key.dst, pkt.dst, 4);
	} else {
		if ((void *)(pkt.src + 16) > data_end || (void *)(pkt.dst + 16) > data_end)
			return pass;
		__builtin_memcpy(key.src, pkt.src, 16);
		__builtin_memcpy(key.dst, pkt.dst, 16);
	}
	key.dest_qp = pkt.dest_qp;
	key.pkey = pkt.pkey;
	if (rm_cfg.ns_mode == RM_NS_VLAN) {
		key.vlan[0] = pkt.vlan[0];
		key.vlan[1] = pkt.vlan[1];
	}

	ctx = bpf_map_lookup_elem(&contexts, &key);
	if (!ctx) {
		__u32 slot;

		if (!provisioned(&key)) {
			st->v[RM_STAT_NOT_PROVISIONED]++;
			return pass;
		}
		if (bpf_map_pop_elem(&free_slots, &slot)) {
			st->v[RM_STAT_TABLE_FULL]++;
			return pass;
		}
		__builtin_memset(sc->init, 0, sizeof(sc->init));
		((struct rm_ctx *)sc->init)->slot = slot;
		if (bpf_map_update_elem(&contexts, &key, sc->init, BPF_NOEXIST))
			bpf_map_push_elem(&free_slots, &slot, 0); /* lost a race, or the table is full */
		ctx = bpf_map_lookup_elem(&contexts, &key);
		if (!ctx) {
			st->v[RM_STAT_TABLE_FULL]++;
			return pass;
		}
	}
	win = bpf_map_lookup_elem(&windows, &ctx->slot);
	if (!win)
		return pass;
	now = rm_cfg.use_replay_clock ? rm_cfg.replay_now_ns : bpf_ktime_get_ns();

	bpf_spin_lock(&ctx->lock);
	if (ctx->dead) {
		/* Evicted while we looked it up: no context for this request. */
		bpf_spin_unlock(&ctx->lock);
		st->v[RM_STAT_TABLE_FULL]++;
		return pass;
	}
	if (ctx->disabled) {
		bpf_spin_unlock(&ctx->lock);
		st->v[RM_STAT_DISABLED]++;
		return pass;
	}
	if (eligible) {
		/* Idle expiration (seed 000 "Identity and Epoch Lifecycle"), decided
		 * here when traffic resumes so that no request joins an expired epoch. */
		if (rm_cfg.idle_timeout_ns && ctx->seq.active && now > ctx->seq.c.last_ns &&
		    now - ctx->seq.c.last_ns > rm_cfg.idle_timeout_ns)
			closed = rm_seq_close(&ctx->seq, win, rm_window_words, 0, &sc->final, &sc->clear) > 0;
		r = rm_seq_observe(&ctx->seq, win, rm_window_words, rm_cfg.window, pkt.psn, now, &sc->final, &sc->clear);
		if (r == RM_SEQ_STARTED || r == RM_SEQ_RESTARTED) {
			sc->start = ctx->seq.c;
			started = 1;
			closed |= r == RM_SEQ_RESTARTED;
		}
	} else {
		closed = rm_seq_close(&ctx->seq, win, rm_window_words, RM_FLAG_PROFILE_VIOLATION, &sc->final,
				      &sc->clear) > 0;
		ctx->disabled = 1;
		r = 0;
	}
	bpf_spin_unlock(&ctx->lock);

	if (eligible && r < 0)
		return pass; /* inconsistent configuration; nothing changed */
	if (eligible)
		st->v[RM_STAT_ELIGIBLE]++;
	else
		st->v[RM_STAT_VIOLATIONS]++;
	if (closed) {
		st->v[RM_STAT_EPOCHS_CLOSED]++;
		emit(st, RM_EV_EPOCH_FINAL, &key, &sc->final);
	}
	if (started) {
		st->v[RM_STAT_EPOCHS_STARTED]++;
		emit(st, RM_EV_EPOCH_START, &key, &sc->start);
	}
	return pass;
}

SEC("xdp")
int rocemeter_ctl(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	struct rm_ctl *c = data;
	struct rm_ctx_key key;
	struct rm_ctx *ctx;
	struct rm_scratch *sc;
	__u64 *win;
	__u32 zero = 0;
	int prov = 0;

	if ((void *)(c + 1) > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(&key, &c->key, sizeof(key));
	ctx = bpf_map_lookup_elem(&contexts, &key);
	if (!ctx) {
		c->status = RM_CTL_NO_CONTEXT;
		return XDP_PASS;
	}
	win = bpf_map_lookup_elem(&windows, &ctx->slot);
	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!win || !sc) {
		c->status = RM_CTL_FAILED;
		return XDP_PASS;
	}
	c->status = RM_CTL_OK;
	if (c->op == RM_CTL_EVICT) {
		struct rm_stats *st = bpf_map_lookup_elem(&stats, &zero);
		__u32 slot = ctx->slot;

		bpf_spin_lock(&ctx->lock);
		if (rm_seq_close(&ctx->seq, win, rm_window_words, RM_FLAG_STATE_EXHAUSTION, &c->snap, &sc->clear) <= 0)
			c->status = RM_CTL_NO_EPOCH;
		ctx->dead = 1;
		bpf_spin_unlock(&ctx->lock);
		if (bpf_map_delete_elem(&contexts, &key) == 0) {
			bpf_map_push_elem(&free_slots, &slot, 0);
			if (st)
				st->v[RM_STAT_EVICTIONS]++;
		}
		return XDP_PASS;
	}
	if (c->op == RM_CTL_REPROVISION)
		prov = provisioned(&key); /* map lookups: not under the lock */
	bpf_spin_lock(&ctx->lock);
	switch (c->op) {
	case RM_CTL_CLOSE:
		if (rm_seq_close(&ctx->seq, win, rm_window_words, c->reason & RM_FLAG_REASON_MASK, &c->snap, &sc->clear) <=
		    0)
			c->status = RM_CTL_NO_EPOCH;
		break;
	case RM_CTL_CLOSE_IDLE:
		if (!ctx->seq.active)
			c->status = RM_CTL_NO_EPOCH;
		else if (ctx->seq.c.last_ns >= c->idle_before_ns)
			c->status = RM_CTL_NOT_IDLE;
		else
			rm_seq_close(&ctx->seq, win, rm_window_words, 0, &c->snap, &sc->clear);
		break;
	case RM_CTL_SNAPSHOT:
		c->snap = ctx->seq.c;
		if (!ctx->seq.active)
			c->status = RM_CTL_NO_EPOCH;
		break;
	case RM_CTL_REPROVISION:
		ctx->disabled = !prov;
		break;
	default:
		c->status = RM_CTL_FAILED;
	}
	bpf_spin_unlock(&ctx->lock);
	return XDP_PASS;
}
