/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * census.h - the userspace side of the connection census
 * (bpf/census.bpf.c): load it to run captured frames through it
 * (BPF_PROG_TEST_RUN, `connections FILE...`), attach it at the tc ingress
 * hook of an interface for a while (`connections --live`) or for the
 * daemon's life with its maps pinned (`attach --census`, read by `status
 * --connections`), and read what it counted, summed over CPUs.
 *
 * Attachment: clsact qdisc, ingress, a tc filter with handle
 * RM_CENSUS_TC_HANDLE and priority RM_CENSUS_TC_PRIO (before the
 * flow-label program's: the census passes every frame on to the next
 * filter); it persists after the process exits until rm_census_detach().
 * Pins: census and census_stats in the interface's pin directory,
 * BPFFS/rocemeter/NETNS/IFINDEX/ (user/common/paths.h), beside the meter's;
 * an interface is named by its key (struct rm_ifkey), as everywhere else.
 *
 * Errors: functions taking (err, errlen) write one line there on failure.
 */
#ifndef ROCEMETER_USER_CENSUS_H
#define ROCEMETER_USER_CENSUS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/capture_settings.h"
#include "common/paths.h"
#include "rocemeter/census.h"
#include "rocemeter/meter.h"

#define RM_CENSUS_PIN_MAP   "census"
#define RM_CENSUS_PIN_STATS "census_stats"
#define RM_CENSUS_TC_HANDLE 0x524e /* "RN" */
#define RM_CENSUS_TC_PRIO   0xf0   /* before the flow-label program (0xf1) */

struct census; /* the generated skeleton (build/census.skel.h) */

/* A loaded census: its own (skel) or the pinned maps of an attachment (skel NULL). */
struct rm_census {
	struct census *skel;
	int map_fd, stats_fd; /* maps `census` and `census_stats` */
	int live;             /* 1: times on the kernel's monotonic clock (tc); 0: capture UNIX ns */
	int ifindex;          /* attached by this process at tc ingress of ifindex; 0: not */
};

/* One connection key and what was counted for it, summed over CPUs. */
struct rm_census_entry {
	struct rm_ctx_key key;  /* vlan[] always filled: outer first */
	struct rm_census_val v; /* first_ns and last_ns in UNIX ns (live times converted) */
};

/* A mirror session of a census and the observation point its keys carry. */
struct rm_census_point {
	struct rm_mirror_key key;
	uint8_t obs;
	uint64_t id; /* the line's observationPointId, or derived (rm_capture_auto_id()) */
};

/* A mirror session no observation_point line names (mirror_sessions = table): its frames, not counted. */
struct rm_census_unknown {
	struct rm_mirror_key key;
	uint64_t frames;
};

struct rm_census_result {
	struct rm_census_entry *entries; /* sorted by family, addresses, QP, P_Key, VLANs */
	size_t n;
	struct rm_census_point points[RM_OBS_MAX]; /* the mirror sessions (keys' obs), rm_census_points() */
	int n_points;
	/* map `mirror_unknown` (bpf/mirror.h) of a census this process loaded; none for pinned maps */
	struct rm_census_unknown unknown[RM_MIRROR_UNKNOWN_MAX];
	int n_unknown;
	uint64_t stats[RM_CENSUS_STAT__COUNT]; /* enum rm_census_stat, summed over CPUs */
};

/*
 * Open and load the census for BPF_PROG_TEST_RUN, its table holding
 * max_connections keys (1..RM_CENSUS_MAX_CONNECTIONS_MAX). Returns 0, or
 * -1 with err.
 */
int rm_census_load(struct rm_census *c, uint32_t max_connections, char *err, size_t errlen);

/*
 * The [capture] settings of the censuses this process loads from now on:
 * the encapsulations the parser takes off, and the observation_point lines
 * whose sessions give a key its obs (0: plain, or a session no line names).
 * NULL or plain only: the plain parser. c must outlive those censuses.
 */
void rm_census_set_capture(const struct rm_capture_settings *c);

/* The census's mirror sessions (lines and derived ones) into out[0..max-1]; their number. */
int rm_census_points(const struct rm_census *c, struct rm_census_point *out, int max);

/*
 * Run one captured frame (caplen bytes captured of wirelen on the wire,
 * stamped ts_ns UNIX ns, caplen >= 14) through the census. Returns 0 or
 * -errno.
 */
int rm_census_run_frame(struct rm_census *c, const void *frame, uint32_t caplen, uint32_t wirelen, uint64_t ts_ns);

/*
 * Load the census with a table of max_connections keys and attach it at
 * the tc ingress hook of interface k (k->ifname names it in messages).
 * pin: also pin its maps in k's pin directory, which is made when missing
 * (then c is closed on return: the filter and the pins hold the census);
 * else c keeps the skeleton, for rm_census_read(). Refuses a second census
 * on the interface (-EEXIST). Returns 0, or -errno with err.
 */
int rm_census_attach(struct rm_census *c, const struct rm_ifkey *k, uint32_t max_connections, int pin, char *err,
		     size_t errlen);

/*
 * Remove the census filter of k's tc ingress (when the interface still
 * exists: k->ifname is not empty) and its pins; the pin directory and the
 * namespace's directory only if empty. Returns 0 if something was removed,
 * 1 if no census was there (err set), or -errno with err.
 */
int rm_census_detach(const struct rm_ifkey *k, char *err, size_t errlen);

/* 1 if census maps are pinned for k (a daemon's, live or stale), else 0. */
int rm_census_pinned(const struct rm_ifkey *k);

/* Open the pinned maps of an `attach --census` on k. 0, 1 if none are pinned, or -errno with err. */
int rm_census_open_pinned(struct rm_census *c, const struct rm_ifkey *k, char *err, size_t errlen);

/*
 * rm_census_attach() of interface ifname (in the current network
 * namespace) without pins, then wait until seconds have passed or
 * *stop is set (a signal handler's flag; checked every 100 ms), read the
 * census into *res and detach. Returns 0, or -1 with err (then nothing is
 * attached any more).
 */
int rm_census_live(const char *ifname, uint32_t max_connections, uint32_t seconds, volatile sig_atomic_t *stop,
		   struct rm_census_result *res, char *err, size_t errlen);

/* Read every entry and the statistics into *res (rm_census_result_free()). 0 or -errno. */
int rm_census_read(const struct rm_census *c, struct rm_census_result *res);

void rm_census_result_free(struct rm_census_result *res);

/* Close the maps and the skeleton; does not detach what rm_census_attach() attached. */
void rm_census_close(struct rm_census *c);

#endif /* ROCEMETER_USER_CENSUS_H */
