/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * status.h - what `rocemeter status` reads of an interface's meter, once,
 * into one struct: the statistics and the contexts of the pinned maps
 * (atomic snapshots with BPF_F_LOCK), the window pool, the mirror sessions,
 * the connections a profile violation disabled, whether the kernel still
 * runs the meter, and the daemon's counters; the census of `attach
 * --census`; the other network namespaces with pins. cmd_status.c prints
 * the struct as text and as JSON. Reads only: stops and changes nothing.
 */
#ifndef ROCEMETER_STATUS_H
#define ROCEMETER_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "census/census.h"
#include "common/paths.h"
#include "meter.h"
#include "violations.h"

/* One context: its key and an atomic copy of its value (BPF_F_LOCK). */
struct rm_status_ctx {
	struct rm_ctx_key key;
	struct rm_ctx val;
};

/* One mirror session of map `mirror_sessions` (its name NUL-terminated). */
struct rm_status_mirror {
	struct rm_mirror_key key;
	struct rm_mirror_session v;
};

/* One session of map `mirror_unknown`: a session no [capture] line names, and its frames. */
struct rm_status_unknown {
	struct rm_mirror_key key;
	uint64_t frames;
};

/*
 * What status reads of one interface's pins. A part that could not be read
 * has its have_ flag 0; nothing past the statistics map is read when it is
 * not pinned (attached 0).
 */
struct rm_status {
	char dir[512];  /* the pin directory */
	int attached;   /* the statistics map is pinned: the rest was read */
	int have_stats; /* stats was read */
	uint64_t stats[RM_STAT__COUNT];
	int have_contexts;         /* the contexts map is pinned, with this build's layout */
	struct rm_status_ctx *ctx; /* its contexts in map order, n of them */
	size_t n;
	uint64_t pooled; /* contexts with a pool window */
	int have_pool;   /* pool was read (map `windows`) */
	struct rm_pool_info pool;
	int have_violations;             /* the violations were listed */
	int fail_safe;                   /* the fail-safe of a full violations map is engaged */
	struct rm_violation_entry *viol; /* the disabled connections, n_viol of them */
	size_t n_viol;
	int have_mirror;                 /* map `mirror_sessions` is pinned, with this build's layout */
	struct rm_status_mirror *mirror; /* its sessions in map order, n_mirror of them */
	size_t n_mirror;
	struct rm_status_unknown *unknown; /* map `mirror_unknown` in map order, n_unknown (none if unpinned) */
	size_t n_unknown;
	const char *state; /* "live", "busy" (a daemon starting or stopping holds the pins) or "stale" */
	uint32_t prog_id;  /* the attached XDP program, if live (or unpinned) */
	int unpinned_pid;  /* not attached: the proved daemon that still meters without its pins, else 0 */
	json_t *daemon;    /* the daemon's stats file (docs/json.md "daemon"; not read when stale), or NULL */
	int fl_pinned;     /* not attached: the flow-label program's statistics are pinned */
};

/*
 * Read k's pins once into *status: the statistics, contexts, window pool,
 * mirror sessions, violations, the kernel's state and the daemon's counters.
 * Warnings (maps of another version, out of memory) go to the log.
 * rm_status_free() releases what it holds.
 */
void rm_status_read(const struct rm_ifkey *k, struct rm_status *status);

/* Free what rm_status_read() allocated. */
void rm_status_free(struct rm_status *status);

/*
 * The connection census that `attach --census` pinned for k, into *res
 * (rm_census_result_free()). Returns 0; 1 when there is no census; or
 * -errno with one line in err naming label (the interface's name or index).
 */
int rm_status_census(const struct rm_ifkey *k, const char *label, struct rm_census_result *res, char *err,
		     size_t errlen);

/*
 * The other network namespaces with pins on this bpffs, one call of fn per
 * namespace, from inside it (the caller's namespace is entered again
 * after each); path is "" when no process or name holds the namespace (it
 * is not entered). Returns the largest of fn's results, 0 with none. A
 * namespace that cannot be entered is logged and skipped; failing to
 * return to the caller's namespace exits the process (RM_EXIT_FAIL).
 */
int rm_status_other_netns(int (*fn)(uint64_t netns, const char *path, void *arg), void *arg);

#endif /* ROCEMETER_STATUS_H */
