/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * violations.h - the connections a profile violation disabled ([SEQOBS]
 * "Applicability and Provisioning": until explicitly reprovisioned), as the
 * XDP meter keeps them: map `violations`, contexts with `violated` set (when
 * the map was full), and the fail-safe of map `viol_state`. List them,
 * re-enable one, leave the fail-safe: for `status` and `reenable` (through
 * the pins of another process's attachment) and for the daemon's reload
 * (through its own meter). Changes go through the control program, under
 * each context's lock.
 */
#ifndef ROCEMETER_VIOLATIONS_H
#define ROCEMETER_VIOLATIONS_H

#include <stddef.h>

#include "common/paths.h"
#include "meter.h"

/* The maps and the control program of one attachment. */
struct rm_violations_fds {
	int violations_fd, viol_state_fd, contexts_fd, ctl_fd;
	int own; /* opened by rm_violations_open_pinned(): rm_violations_close() closes them */
};

/* One disabled connection. */
struct rm_violation_entry {
	struct rm_ctx_key key;
	struct rm_violation v; /* zero (but for opcode 0) if only a context holds it */
	int in_map;            /* in map `violations` (else only its context holds it) */
};

/* The fds of a loaded meter (not owned). */
void rm_violations_fds_of(const struct rm_meter *m, struct rm_violations_fds *f);

/*
 * The pins of k's attachment (user/common/paths.h). Returns 0, or -errno
 * with "the meter is not attached to IFACE (no PIN)" or the failing pin in
 * err.
 */
int rm_violations_open_pinned(const struct rm_ifkey *k, struct rm_violations_fds *f, char *err, size_t errlen);
void rm_violations_close(struct rm_violations_fds *f);

/*
 * Every disabled-by-violation connection once, from the map and from
 * contexts, in key order: *out (free() it), *n. Returns 0 or -errno.
 */
int rm_violations_list(const struct rm_violations_fds *f, struct rm_violation_entry **out, size_t *n);

/*
 * Re-enable key: forget its violation (map and context); metered again from
 * its next request, in a fresh epoch, if it is provisioned. Returns 1 if
 * there was a violation to forget, 0 if not, -errno if the control program
 * could not run.
 */
int rm_violations_reenable(const struct rm_violations_fds *f, const struct rm_ctx_key *key);

/*
 * `reenable IFACE CONNECTION...`: re-enable every violated connection that
 * one of the patterns covers (provisioning-line syntax: provision.h
 * rm_prov_line_covers()). If a pattern covers none, nothing is re-enabled
 * and *unmatched is its index; else *unmatched is -1. The re-enabled keys
 * go to *done (free() it), *ndone. Returns 0 or -errno.
 */
int rm_violations_reenable_matching(const struct rm_violations_fds *f, const struct rm_provision *pat, int npat,
				    int *unmatched, struct rm_ctx_key **done, size_t *ndone);

/*
 * `reenable IFACE --all`: re-enable every violated connection and leave the
 * fail-safe (*was_fail_safe: it was engaged). Keys as above. 0 or -errno.
 */
int rm_violations_reenable_all(const struct rm_violations_fds *f, int *was_fail_safe, struct rm_ctx_key **done,
			       size_t *ndone);

/* "SRC > DST qp 0x000123 pkey 0xffff[ vlan 100/7]" into buf. */
void rm_violations_format_key(const struct rm_ctx_key *k, char *buf, size_t len);

/*
 * What a violation was, for people: "RDMA READ Request (opcode 0x0c) at
 * PSN 17, unsupported" (the opcode's name from include/rocemeter/bth.h
 * when it has one), or that only its context holds it.
 */
void rm_violations_describe(const struct rm_violation_entry *e, char *buf, size_t len);

/* The disabled connections the daemon logged (rm_violations_log_new()). */
struct rm_violations_logged;
struct rm_violations_logged *rm_violations_logged_new(void);    /* NULL on ENOMEM */
void rm_violations_logged_free(struct rm_violations_logged *l); /* NULL is a no-op */

/*
 * One warning line (user/common/log.h, journald fields CONNECTION,
 * VIOLATION, OPCODE, OPCODE_NAME, PSN) for each connection of f a
 * violation disabled that l has not logged yet, naming the opcode
 * ("RDMA READ Request"); then l holds every disabled connection, so a
 * re-enabled one that is violated again is logged again. ifname names the
 * interface in the line's `reenable` hint. Returns the number of lines,
 * or -errno (l unchanged).
 */
int rm_violations_log_new(const struct rm_violations_fds *f, struct rm_violations_logged *l, const char *ifname);

/* The name of an enum rm_violation_cause: "unsupported", "malformed", "foreign", or "?". */
const char *rm_violation_cause_name(int cause);

/* 1 if the fail-safe is engaged, 0 if not, -errno. */
int rm_violations_fail_safe(const struct rm_violations_fds *f);

/* Leave the fail-safe: new connections are metered again. 0 or -errno. */
int rm_violations_clear_fail_safe(const struct rm_violations_fds *f);

#endif
