/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * paths.h - where rocemeter lives on the file system; the meter daemon,
 * `status`, `detach` and the flow-label program all ask here. An interface
 * is known by its network namespace and its ifindex (struct rm_ifkey), never
 * by its name alone: names repeat across namespaces and change on rename.
 *   BPFFS/rocemeter/NETNS/IFINDEX/     the pins of one interface: the meter's
 *                                      maps (contexts, windows, ...) and the
 *                                      flow-label program's fl_stats; the
 *                                      directory is also the daemon's lock
 *                                      (flock, see user/meter/pins.h)
 *   RUNDIR/NETNS-IFINDEX.pid           the daemon's PID and start time (for detach)
 *   RUNDIR/NETNS-IFINDEX.stats         the daemon's userspace counters (JSON, for status)
 * NETNS is the inode number of the network namespace (stat -L -c %i
 * /proc/self/ns/net), IFINDEX the interface's index in it, both decimal.
 * BPFFS is /sys/fs/bpf unless ROCEMETER_BPFFS names another directory,
 * RUNDIR /run/rocemeter unless ROCEMETER_RUNDIR does (tests, containers).
 * docs/service.md "Pins, locks and liveness" states the layout for operators.
 */
#ifndef ROCEMETER_PATHS_H
#define ROCEMETER_PATHS_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

/* Suffixes of the files under RUNDIR. */
#define RM_RUN_PID   "pid"
#define RM_RUN_STATS "stats"

/* One interface: the key of its pins and run files. */
struct rm_ifkey {
	uint64_t netns;           /* inode of the network namespace */
	uint32_t ifindex;         /* index in that namespace, > 0 */
	char ifname[IF_NAMESIZE]; /* its name when the key was made (informative) */
};

/* The two roots, from the environment or the defaults; never NULL. */
const char *rm_paths_bpffs(void);
const char *rm_paths_rundir(void);

/* Where the build installs the configuration (the Makefile's SYSCONFDIR, passed by mk/common.mk). */
#ifndef RM_SYSCONFDIR
#define RM_SYSCONFDIR "/etc"
#endif
/* The collector's configuration as rocemeter-collect.service reads it (the package's). */
#define RM_COLLECT_CONF RM_SYSCONFDIR "/rocemeter/collect.conf"

/*
 * RM_COLLECT_CONF, with the directory ROCEMETER_SYSCONFDIR names in place
 * of RM_SYSCONFDIR when it is set (tests, containers): `report`'s default
 * --config. Never NULL (a static buffer).
 */
const char *rm_paths_collect_conf(void);

/*
 * 1 if name is a valid Linux interface name (1..15 bytes, not "." or "..",
 * no '/', ':' or white space), else 0. Nothing else may reach a path.
 */
int rm_ifname_valid(const char *name);

/* Inode of the calling thread's network namespace, or 0 (errno set). */
uint64_t rm_paths_netns(void);

/*
 * The key of interface ifname in the current network namespace. Returns 0,
 * -EINVAL (not a valid name) or -ENODEV (no such interface), with a message
 * naming the interface in err.
 */
int rm_ifkey_by_name(const char *ifname, struct rm_ifkey *k, char *err, size_t errlen);

/*
 * The key of ifindex in the current network namespace; ifname is its
 * current name, or "" when no interface has that index any more. 0, or
 * -errno when the namespace cannot be read.
 */
int rm_ifkey_by_index(uint32_t ifindex, struct rm_ifkey *k);

/*
 * BPFFS/rocemeter/NETNS (every interface of a namespace),
 * BPFFS/rocemeter/NETNS/IFINDEX, BPFFS/rocemeter/NETNS/IFINDEX/NAME and
 * RUNDIR/NETNS-IFINDEX.SUFFIX into buf (len bytes). Each returns 0, or
 * -ENAMETOOLONG.
 */
int rm_paths_netns_dir(uint64_t netns, char *buf, size_t len);
int rm_paths_pin_dir(const struct rm_ifkey *k, char *buf, size_t len);
int rm_paths_pin(const struct rm_ifkey *k, const char *name, char *buf, size_t len);
int rm_paths_run_file(const struct rm_ifkey *k, const char *suffix, char *buf, size_t len);

/*
 * Make BPFFS/rocemeter/NETNS/IFINDEX ready for pins: when BPFFS is a
 * directory of another file system, mount a bpffs there; then create the
 * three directories (mode 0700) if missing. Returns 0, or -errno with a
 * reason in err ("cannot mount bpffs at ...", "cannot create ...: Read-only
 * file system").
 */
int rm_paths_prepare_pins(const struct rm_ifkey *k, char *err, size_t errlen);

/* Create RUNDIR (mode 0755) if missing. 0 or -errno. */
int rm_paths_prepare_rundir(void);

#endif /* ROCEMETER_PATHS_H */
