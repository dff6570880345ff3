// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* meter.c - load, configure and drive the XDP meter (see meter.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "common/map_iter.h"
#include "meter.h"
#include "meter.skel.h"
#include "provision.h"

#define STAT_NAME_(suffix, name, group, desc) [RM_STAT_##suffix] = name,
static const char *const stat_names[RM_STAT__COUNT] = { RM_STATS(STAT_NAME_) };
#undef STAT_NAME_

const char *rm_stat_name(int stat)
{
	return stat >= 0 && stat < RM_STAT__COUNT && stat_names[stat] ? stat_names[stat] : "?";
}

/* Not in Debian 12's UAPI headers (kernel 6.3). */
#ifndef BPF_F_XDP_DEV_BOUND_ONLY
#define BPF_F_XDP_DEV_BOUND_ONLY (1U << 6)
#endif

#define STAT_GROUP_(suffix, name, group, desc) [RM_STAT_##suffix] = RM_STAT_GROUP_##group,
static const int stat_group[RM_STAT__COUNT] = { RM_STATS(STAT_GROUP_) };
#undef STAT_GROUP_
#define GROUP_METRIC_(group, metric, help) [RM_STAT_GROUP_##group] = "rocemeter_meter_" metric "_total",
static const char *const group_metric[RM_STAT_GROUP__COUNT] = { RM_STAT_GROUPS(GROUP_METRIC_) };
#undef GROUP_METRIC_
#define GROUP_HELP_(group, metric, help) [RM_STAT_GROUP_##group] = help,
static const char *const group_help[RM_STAT_GROUP__COUNT] = { RM_STAT_GROUPS(GROUP_HELP_) };
#undef GROUP_HELP_

const struct rm_metric_row *rm_meter_stat_rows(size_t *n)
{
	static struct rm_metric_row rows[RM_STAT__COUNT];
	static size_t nrows;

	if (!nrows) { /* the same every time: a race writes the same values */
		size_t k = 0;

		for (int g = 0; g < RM_STAT_GROUP__COUNT; g++) {
			int members = 0;

			for (int i = 0; i < RM_STAT__COUNT; i++)
				members += stat_group[i] == g;
			for (int i = 0; i < RM_STAT__COUNT; i++) {
				if (stat_group[i] != g)
					continue;
				rows[k++] = (struct rm_metric_row){ stat_names[i],
								    RM_METRIC_COUNTER,
								    group_metric[g],
								    members > 1 ? "cause" : NULL,
								    stat_names[i],
								    group_help[g],
								    (size_t)i * sizeof(uint64_t) };
			}
		}
		nrows = k;
	}
	*n = nrows;
	return rows;
}

uint64_t rm_meter_pool_window_bytes(uint32_t window)
{
	return (uint64_t)RM_POOL_VALUE_WORDS(RM_WINDOW_WORDS(window)) * sizeof(__u64);
}

uint32_t rm_meter_pool_windows(const struct rm_meter_settings *s)
{
	uint64_t n, fit;

	if (s->max_windows)
		return s->max_windows;
	if (s->window <= RM_INLINE_BITS)
		return 1;
	n = s->max_contexts / 16;
	if (n < 64)
		n = 64;
	fit = RM_WINDOW_POOL_BUDGET / rm_meter_pool_window_bytes(s->window);
	if (n > fit)
		n = fit;
	if (n > s->max_contexts)
		n = s->max_contexts;
	return n ? (uint32_t)n : 1;
}

int rm_meter_map_fits(int fd, size_t key_size, size_t value_size)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.key_size == key_size && info.value_size == value_size;
}

int rm_meter_read_pool(int windows_fd, struct rm_pool_info *out)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info), words;

	if (bpf_obj_get_info_by_fd(windows_fd, &info, &len))
		return -errno;
	words = info.value_size / sizeof(__u64);
	memset(out, 0, sizeof(*out));
	out->windows = info.max_entries;
	out->bytes = info.value_size;
	for (__u32 nw = 1; nw <= RM_WINDOW_WORDS_MAX; nw++)
		if (RM_POOL_VALUE_WORDS(nw) == words) {
			out->positions = nw * 64;
			break;
		}
	return 0;
}

/* [capture] as load-time constants: plain frames only leave the plain parser. */
static void capture_rodata(struct rm_meter *m, struct meter *sk, const struct rm_capture_settings *c)
{
	m->capture = c && c->encap != RM_ENCAP_PLAIN ? c : NULL;
	if (!m->capture)
		return;
	sk->rodata->rm_capture_encap = c->encap;
	sk->rodata->rm_capture_vxlan_port = c->vxlan_port;
	sk->rodata->rm_capture_rspan_vlan = c->rspan_vlan;
	sk->rodata->rm_capture_auto = c->auto_sessions ? 1 : 0;
	sk->bss->rm_auto_next = (__u32)c->n_points;
}

/* The observation_point lines into mirror_sessions: line i is obs i + 1. */
static int capture_sessions(struct rm_meter *m, char *err, size_t errlen)
{
	const struct rm_capture_settings *c = m->capture;

	for (int i = 0; c && i < c->n_points; i++) {
		struct rm_mirror_session v;
		struct rm_mirror_key k;

		rm_capture_session_entry(c, i, &k, &v);
		m->obs_ids[i + 1] = v.id;
		if (bpf_map_update_elem(m->mirror_sessions_fd, &k, &v, BPF_NOEXIST)) {
			snprintf(err, errlen, "cannot add observation point %s: %s", c->points[i].name,
				 strerror(errno));
			return -1;
		}
	}
	return 0;
}

uint64_t rm_meter_obs_id(struct rm_meter *m, unsigned int obs, uint64_t own_id)
{
	struct rm_mirror_key k;
	struct rm_mirror_session v;
	struct rm_map_iter it;

	if (!obs)
		return own_id;
	if (obs > RM_OBS_MAX)
		return 0;
	if (m->obs_ids[obs] || m->mirror_sessions_fd <= 0)
		return m->obs_ids[obs];
	it = rm_map_iter_start(m->mirror_sessions_fd, &k);
	while (rm_map_iter_next(&it)) {
		if (bpf_map_lookup_elem(m->mirror_sessions_fd, &k, &v) == 0 && v.obs == obs) {
			m->obs_ids[obs] = rm_capture_auto_id(&k);
			break;
		}
	}
	return m->obs_ids[obs];
}

const char *rm_meter_obs_name(const struct rm_meter *m, unsigned int obs)
{
	if (!obs)
		return "";
	if (m->capture && obs <= (unsigned int)m->capture->n_points)
		return m->capture->points[obs - 1].name;
	return "";
}

int rm_meter_load(struct rm_meter *m, const struct rm_meter_settings *s, int replay, char *err, size_t errlen)
{
	struct rm_meter_load_opts o = { .replay = replay };

	return rm_meter_load_ex(m, s, &o, err, errlen);
}

int rm_meter_load_ex(struct rm_meter *m, const struct rm_meter_settings *s, const struct rm_meter_load_opts *o,
		     char *err, size_t errlen)
{
	struct bpf_program *xdp;
	struct meter *sk;
	int e, replay = o->replay;

	memset(m, 0, sizeof(*m));
	m->replay_fd = -1;
	rm_log_route_libbpf(); /* also for programs without our main.c: tests, benchmarks */
	if (s->window < 1 || s->window > RM_WINDOW_MAX) {
		snprintf(err, errlen, "window %u is outside 1..%u", s->window, RM_WINDOW_MAX);
		return -1;
	}
	sk = meter__open();
	if (!sk) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		return -1;
	}
	m->skel = sk;
	m->window = s->window;
	m->window_words = RM_WINDOW_WORDS(s->window);
	m->max_contexts = s->max_contexts;
	m->pool_windows = rm_meter_pool_windows(s);
	sk->rodata->rm_window_words = m->window_words;
	sk->rodata->rm_bench_cut = o->bench_cut;
	sk->rodata->rm_bench_flags = o->bench_flags;
	sk->data->rm_cfg.window = s->window;
	sk->data->rm_cfg.ns_mode = s->namespace_vlan ? RM_NS_VLAN : RM_NS_NONE;
	sk->data->rm_cfg.provision_all = s->provision_all ? 1 : 0;
	sk->data->rm_cfg.use_replay_clock = replay ? 1 : 0;
	sk->data->rm_cfg.idle_timeout_ns = s->idle_timeout_ms * 1000000ull;
	sk->data->rm_cfg.unattributed_is_loss = s->unattributed_is_loss ? 1 : 0;
	capture_rodata(m, sk, o->capture);
	if (bpf_map__set_value_size(sk->maps.windows, RM_POOL_VALUE_WORDS(m->window_words) * sizeof(__u64)) ||
	    bpf_map__set_max_entries(sk->maps.windows, m->pool_windows) ||
	    bpf_map__set_max_entries(sk->maps.contexts, s->max_contexts) ||
	    bpf_map__set_max_entries(sk->maps.free_slots, m->pool_windows) ||
	    bpf_map__set_max_entries(sk->maps.violations, s->max_violations ? s->max_violations : 1)) {
		snprintf(err, errlen, "cannot size the maps for %u contexts and %u violations", s->max_contexts,
			 s->max_violations);
		goto fail;
	}
	/* One XDP program is loaded: the device-bound one reads VLAN tags from
	 * the packet metadata, and can only run attached to that device. */
	if (o->dev_bound_ifindex > 0) {
		xdp = sk->progs.rocemeter_xdp_vlan;
		bpf_program__set_ifindex(xdp, (__u32)o->dev_bound_ifindex);
		if (bpf_program__set_flags(xdp, bpf_program__flags(xdp) | BPF_F_XDP_DEV_BOUND_ONLY) ||
		    bpf_program__set_autoload(sk->progs.rocemeter_xdp, false)) {
			snprintf(err, errlen, "cannot make the XDP program device-bound");
			goto fail;
		}
	} else if (replay && o->replay_batch) {
		xdp = sk->progs.rocemeter_replay;
		bpf_program__set_autoload(sk->progs.rocemeter_xdp_vlan, false);
		bpf_program__set_autoload(sk->progs.rocemeter_xdp, false);
	} else {
		xdp = sk->progs.rocemeter_xdp;
		bpf_program__set_autoload(sk->progs.rocemeter_xdp_vlan, false);
	}
	/* Replay's batch program: only when asked (it costs a verification). */
	bpf_program__set_autoload(sk->progs.rocemeter_replay, replay && o->replay_batch);
	e = meter__load(sk);
	if (e == -ENOMEM || e == -E2BIG) {
		snprintf(err, errlen,
			 "cannot allocate the maps: the window pool needs %llu MiB (max_windows %u x %llu bytes for "
			 "W %u); lower max_windows",
			 (unsigned long long)(m->pool_windows * rm_meter_pool_window_bytes(s->window) >> 20),
			 m->pool_windows, (unsigned long long)rm_meter_pool_window_bytes(s->window), s->window);
		goto fail;
	}
	if (e && o->dev_bound_ifindex > 0) {
		snprintf(err, errlen,
			 "the kernel refused the device-bound XDP program that reads VLAN tags from the packet "
			 "metadata (%s; kernel 6.8 or later); use namespace = none, or --mode generic with the "
			 "NIC's receive VLAN offload off (ethtool -K IFACE rxvlan off)",
			 strerror(-e));
		goto fail;
	}
	if (e) {
		snprintf(err, errlen,
			 "the kernel refused the BPF program (%s); run with ROCEMETER_LIBBPF_DEBUG=1 for the verifier "
			 "log",
			 strerror(-e));
		goto fail;
	}
	m->dev_bound = o->dev_bound_ifindex > 0;
	m->xdp_fd = xdp == sk->progs.rocemeter_replay ? -1 : bpf_program__fd(xdp);
	m->ctl_fd = bpf_program__fd(sk->progs.rocemeter_ctl);
	m->contexts_fd = bpf_map__fd(sk->maps.contexts);
	m->windows_fd = bpf_map__fd(sk->maps.windows);
	m->provision_fd = bpf_map__fd(sk->maps.provision);
	m->stats_fd = bpf_map__fd(sk->maps.stats);
	m->events_fd = bpf_map__fd(sk->maps.events);
	m->free_slots_fd = bpf_map__fd(sk->maps.free_slots);
	m->violations_fd = bpf_map__fd(sk->maps.violations);
	m->viol_state_fd = bpf_map__fd(sk->maps.viol_state);
	if (replay && o->replay_batch) {
		__u32 zero = 0;

		m->replay_fd = bpf_program__fd(sk->progs.rocemeter_replay);
		/* the batch program continues the batch by tail-calling itself */
		if (bpf_map_update_elem(bpf_map__fd(sk->maps.replay_next), &zero, &m->replay_fd, BPF_ANY)) {
			snprintf(err, errlen, "cannot set up the replay batch program: %s", strerror(errno));
			goto fail;
		}
	}
	m->mirror_sessions_fd = bpf_map__fd(sk->maps.mirror_sessions);
	m->mirror_unknown_fd = bpf_map__fd(sk->maps.mirror_unknown);
	if (capture_sessions(m, err, errlen))
		goto fail;
	for (__u32 slot = 0; slot < m->pool_windows; slot++) {
		if (bpf_map_update_elem(m->free_slots_fd, NULL, &slot, BPF_ANY)) {
			snprintf(err, errlen, "cannot fill the free-slot queue: %s", strerror(errno));
			goto fail;
		}
	}
	return 0;
fail:
	meter__destroy(sk);
	m->skel = NULL;
	return -1;
}

int rm_meter_provision(struct rm_meter *m, const struct rm_provision *p, int n, int generation_verified, char *err,
		       size_t errlen)
{
	for (int i = 0; i < n; i++) {
		struct rm_prov_key k;
		struct rm_prov_val v = { .generation_verified = generation_verified ? 1 : 0 };

		rm_prov_key_of(&p[i], &k);
		if (bpf_map_update_elem(m->provision_fd, &k, &v, BPF_ANY)) {
			snprintf(err, errlen, "cannot add provisioning line %d: %s", i + 1, strerror(errno));
			return -1;
		}
	}
	return 0;
}

int rm_meter_ctl_fd(int ctl_fd, struct rm_ctl *c)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = c, .data_size_in = sizeof(*c), .data_out = c,
		    .data_size_out = sizeof(*c), .repeat = 1);

	if (bpf_prog_test_run_opts(ctl_fd, &o))
		return -errno;
	return 0;
}

int rm_meter_ctl(struct rm_meter *m, struct rm_ctl *c)
{
	return rm_meter_ctl_fd(m->ctl_fd, c);
}

/*
 * BPF_PROG_TEST_RUN takes an XDP frame of at most one page plus
 * MAX_SKB_FRAGS (17) pages of fragments, about 72 KiB; a longer one fails
 * with ENOMEM. Captures hold longer frames (GRO/GSO, BIG TCP). The program
 * reads headers only from the linear part (the first page) and takes every
 * length from the wire length (rm_cfg.replay_wire_len), so running the
 * first 64 KiB of a longer frame gives the same verdict and the same state.
 */
#define RM_REPLAY_RUN_MAX 65536u

int rm_meter_replay_frame(struct rm_meter *m, const void *frame, uint32_t caplen, uint32_t wirelen, uint64_t ts_ns)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame,
		    .data_size_in = caplen < RM_REPLAY_RUN_MAX ? caplen : RM_REPLAY_RUN_MAX, .repeat = 1);

	m->skel->data->rm_cfg.replay_now_ns = ts_ns;
	m->skel->data->rm_cfg.replay_wire_len = wirelen;
	if (bpf_prog_test_run_opts(m->xdp_fd, &o))
		return -errno;
	return (int)m->skel->bss->rm_replay_verdict;
}

int rm_meter_replay_run(struct rm_meter *m, const void *recs, uint32_t len, uint32_t n, uint32_t *done,
			uint8_t *verdicts, int *whole)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = recs, .data_size_in = len, .repeat = 1);
	struct meter__bss *bss = m->skel->bss;

	if (n > RM_BATCH_MAX || len > RM_BATCH_BYTES)
		return -EINVAL;
	bss->rm_batch_n = n;
	bss->rm_batch_done = 0;
	bss->rm_batch_again = 0;
	if (bpf_prog_test_run_opts(m->replay_fd, &o))
		return -errno;
	if (o.retval != XDP_PASS || bss->rm_batch_done > n)
		return -EPROTO;
	*done = bss->rm_batch_done;
	*whole = bss->rm_batch_again && *done < n;
	memcpy(verdicts, bss->rm_batch_verdict, *done);
	return 0;
}

int rm_meter_read_stats(int stats_fd, uint64_t out[RM_STAT__COUNT])
{
	int ncpu = libbpf_num_possible_cpus();
	struct bpf_map_info info = { 0 };
	__u32 zero = 0, len = sizeof(info), n, stride;
	uint64_t *vals;

	if (ncpu <= 0)
		return -EINVAL;
	/* The pinned map may come from another build with more or fewer
	 * statistics: read its own value size, use the ones both know. */
	if (bpf_obj_get_info_by_fd(stats_fd, &info, &len))
		return -errno;
	stride = (info.value_size + 7) / 8; /* per-CPU values are 8-byte aligned */
	n = info.value_size / 8 < RM_STAT__COUNT ? info.value_size / 8 : RM_STAT__COUNT;
	vals = calloc((size_t)ncpu, (size_t)stride * 8);
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(stats_fd, &zero, vals)) {
		int e = -errno;

		free(vals);
		return e;
	}
	memset(out, 0, sizeof(uint64_t) * RM_STAT__COUNT);
	for (int c = 0; c < ncpu; c++)
		for (__u32 i = 0; i < n; i++)
			out[i] += vals[(size_t)c * stride + i];
	free(vals);
	return 0;
}

void rm_meter_unload(struct rm_meter *m)
{
	if (m->skel)
		meter__destroy(m->skel);
	m->skel = NULL;
}
