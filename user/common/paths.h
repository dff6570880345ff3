/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * paths.h - where rocemeter lives on the file system; the meter daemon,
 * `status`, `detach` and the flow-label program all ask here:
 *   BPFFS/rocemeter/IFNAME/          the pins of one interface: the meter's
 *                                    maps (contexts, windows, ...) and the
 *                                    flow-label program's fl_stats
 *   RUNDIR/IFNAME.lock               flock()ed by the daemon: one attachment per interface
 *   RUNDIR/IFNAME.pid                the daemon's PID (for detach)
 *   RUNDIR/IFNAME.stats              the daemon's userspace counters (JSON, for status)
 * BPFFS is /sys/fs/bpf unless ROCEMETER_BPFFS names another directory,
 * RUNDIR /run/rocemeter unless ROCEMETER_RUNDIR does (tests, containers).
 */
#ifndef ROCEMETER_PATHS_H
#define ROCEMETER_PATHS_H

#include <stddef.h>

/* Suffixes of the files under RUNDIR. */
#define RM_RUN_LOCK "lock"
#define RM_RUN_PID "pid"
#define RM_RUN_STATS "stats"

/* The two roots, from the environment or the defaults; never NULL. */
const char *rm_paths_bpffs(void);
const char *rm_paths_rundir(void);

/*
 * BPFFS/rocemeter/IFNAME, BPFFS/rocemeter/IFNAME/NAME and RUNDIR/IFNAME.SUFFIX
 * into buf (len bytes). Each returns 0, or -ENAMETOOLONG.
 */
int rm_paths_pin_dir(const char *ifname, char *buf, size_t len);
int rm_paths_pin(const char *ifname, const char *name, char *buf, size_t len);
int rm_paths_run_file(const char *ifname, const char *suffix, char *buf, size_t len);

/*
 * Make BPFFS/rocemeter/IFNAME ready for pins: when BPFFS is a directory
 * of another file system, mount a bpffs there; then create the two
 * directories (mode 0700) if missing. Returns 0, or -errno with a reason
 * in err ("cannot mount bpffs at ...", "cannot create ...").
 */
int rm_paths_prepare_pins(const char *ifname, char *err, size_t errlen);

/* Create RUNDIR (mode 0755) if missing. 0 or -errno. */
int rm_paths_prepare_rundir(void);

#endif /* ROCEMETER_PATHS_H */
