/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * meter.h - the userspace side of the XDP meter (bpf/meter.bpf.c): load
 * and configure the BPF object, provision connections, run the control
 * program, replay frames, read statistics and contexts. Used by `attach`,
 * `replay` and `status`.
 */
#ifndef ROCEMETER_USER_METER_H
#define ROCEMETER_USER_METER_H

#include <stdint.h>
#include <stdio.h>

#include "common/config.h"
#include "common/metrics.h"
#include "rocemeter/meter.h"

struct meter; /* the libbpf skeleton */

struct rm_meter {
	struct meter *skel;
	uint32_t window;       /* W for new epochs */
	uint32_t window_words; /* ring words of a pool window (>= W / 64) */
	uint32_t max_contexts;
	uint32_t pool_windows; /* windows in the pool (rm_meter_pool_windows()) */
	int dev_bound;         /* xdp_fd is rocemeter_xdp_vlan, bound to one device */
	int xdp_fd, ctl_fd;
	int replay_fd; /* replay only: rocemeter_replay, the batch program */
	int contexts_fd, windows_fd, provision_fd, stats_fd, events_fd, free_slots_fd;
	int violations_fd, viol_state_fd;
	int mirror_sessions_fd, mirror_unknown_fd;
	/* observationPointId of each rm_ctx_key obs: 0 unknown yet (mirror_sessions = auto) */
	uint64_t obs_ids[RM_OBS_MAX + 1];
	const struct rm_capture_settings *capture; /* NULL: plain frames only */
};

struct rm_meter_load_opts {
	int replay;            /* arrival times from rm_meter_replay_frame(), not the kernel clock */
	int dev_bound_ifindex; /* > 0: load the device-bound XDP program for this interface, which
				* also reads VLAN tags from the packet metadata (namespace = vlan,
				* native XDP; it cannot be test-run, so never with replay) */
	int replay_batch;      /* replay: load the batch program rocemeter_replay instead of rocemeter_xdp
				* (rm_meter_replay_run(); one verification of the meter instead of two) */
	/* [capture]: the encapsulations to take off and the observation_point
	 * lines (mirror sessions); NULL or plain only: the plain parser. Kept
	 * by the meter: it must outlive it. */
	const struct rm_capture_settings *capture;
	/* Benchmarks only (selftests/bench/bench_meter.c): enum rm_bench_cut and
	 * RM_BENCH_* flags of rocemeter/bench.h; 0 for the whole meter. */
	uint32_t bench_cut, bench_flags;
};

/*
 * Open, size and load the meter. s gives W, max_contexts, max_windows,
 * max_violations, namespace, provision_all, idle_timeout_ms,
 * unattributed_is_loss. Fills the free-slot queue of the window pool.
 * Returns 0, or -1 with a reason in err.
 */
int rm_meter_load_ex(struct rm_meter *m, const struct rm_meter_settings *s, const struct rm_meter_load_opts *o,
		     char *err, size_t errlen);

/*
 * The window pool of settings s ([meter] max_windows, docs/configuration.md):
 * windows of RM_WINDOW_WORDS(W) ring words, for the epochs whose PENDING
 * positions reach further back than the inline window (63 positions behind
 * the highest). max_windows if set; else automatic: max_contexts / 16, at
 * least 64, at most what RM_WINDOW_POOL_BUDGET bytes hold and at most
 * max_contexts; 1 (never used) when W <= 64. Always >= 1.
 */
uint32_t rm_meter_pool_windows(const struct rm_meter_settings *s);

/* Bytes of one pool window for W (ring, summaries, base). */
uint64_t rm_meter_pool_window_bytes(uint32_t window);

/* The window pool of a loaded meter, from its `windows` map (a pin). */
struct rm_pool_info {
	uint32_t windows;   /* the pool's size (max_entries) */
	uint32_t positions; /* ring positions of a window (>= W) */
	uint64_t bytes;     /* bytes of one window */
};

/* Read the pool's shape from the windows map fd. Returns 0 or -errno. */
int rm_meter_read_pool(int windows_fd, struct rm_pool_info *out);

/* rm_meter_load_ex() with .replay = replay and no device binding. */
int rm_meter_load(struct rm_meter *m, const struct rm_meter_settings *s, int replay, char *err, size_t errlen);

/* Add the provisioning lines; returns 0 or -1 with a reason in err. */
int rm_meter_provision(struct rm_meter *m, const struct rm_provision *p, int n, int generation_verified, char *err,
		       size_t errlen);

/*
 * Run one control request (struct rm_ctl, see rocemeter/meter.h) through the
 * program rocemeter_ctl under the context's lock. Returns 0 (c->status, an
 * enum rm_ctl_status, holds the outcome) or -errno if the run itself failed.
 */
int rm_meter_ctl(struct rm_meter *m, struct rm_ctl *c);

/* rm_meter_ctl() on a control program's fd (an attachment's pin, see `reenable`). */
int rm_meter_ctl_fd(int ctl_fd, struct rm_ctl *c);

/*
 * Replay: run one captured frame (caplen bytes captured of wirelen on the
 * wire, captured at ts_ns UNIX nanoseconds) through rocemeter_xdp with
 * BPF_PROG_TEST_RUN. Returns the frame's parse verdict (enum
 * rm_parse_verdict of bpf/parse.h, >= 0) or -errno.
 */
int rm_meter_replay_frame(struct rm_meter *m, const void *frame, uint32_t caplen, uint32_t wirelen, uint64_t ts_ns);

/*
 * Replay: one run of the batch program rocemeter_replay over recs, len
 * bytes holding n frames with their struct rm_batch_rec, the first frame's
 * at the end (rocemeter/meter.h; len <= RM_BATCH_BYTES, n <= RM_BATCH_MAX),
 * each frame metered by the code of rocemeter_xdp. *done: frames metered, from the first; their verdicts
 * (enum rm_parse_verdict) in verdicts[0 .. *done - 1]. A run stops early at
 * the end of a tail-call chain (33 frames), or before a frame whose copy is
 * shortened (RM_BATCH_SHORT) when the parser needs more of it (*whole set):
 * the caller runs that frame whole with rm_meter_replay_frame(), then the
 * rest.
 * Returns 0, or -errno.
 */
int rm_meter_replay_run(struct rm_meter *m, const void *recs, uint32_t len, uint32_t n, uint32_t *done,
			uint8_t *verdicts, int *whole);

/*
 * Sum the per-CPU statistics into out[RM_STAT__COUNT]. A map pinned by
 * another build (a different number of statistics) is read by its own
 * value size: the statistics both know are filled, the others are 0.
 * Returns 0 or -errno.
 */
int rm_meter_read_stats(int stats_fd, uint64_t out[RM_STAT__COUNT]);

/*
 * 1 if the map behind fd has these key and value sizes (the structs of this
 * build), 0 if not (pinned by another rocemeter version: a lookup would
 * write past the caller's buffer) or if the kernel does not say.
 */
int rm_meter_map_fits(int fd, size_t key_size, size_t value_size);

/* Name of a statistic (RM_STATS in rocemeter/meter.h), e.g. "malformed_udp". */
const char *rm_stat_name(int stat);

/*
 * The statistics as metric rows (common/metrics.h) over the array that
 * rm_meter_read_stats() fills, grouped by metric (RM_STAT_GROUPS): a
 * group of several statistics tells them apart by the label cause.
 */
const struct rm_metric_row *rm_meter_stat_rows(size_t *n);

/*
 * The observationPointId of a context key's obs: 0 is the attachment's
 * (own_id); an observation_point line's ID; with mirror_sessions = auto the
 * ID derived from the session the datapath gave it (rm_capture_auto_id()),
 * read from the mirror_sessions map once. 0 if unknown.
 */
uint64_t rm_meter_obs_id(struct rm_meter *m, unsigned int obs, uint64_t own_id);

/*
 * The name of a context key's obs: its observation_point line's NAME; ""
 * for obs 0 (the attachment's own) and for a derived one (mirror_sessions =
 * auto). Reads only the configuration: safe from any thread.
 */
const char *rm_meter_obs_name(const struct rm_meter *m, unsigned int obs);

void rm_meter_unload(struct rm_meter *m);

#endif
