/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pins.h - the meter's pins, its lock, its liveness and its PID file (where
 * they are: user/common/paths.h; what they mean for operators: docs/service.md
 * "Pins, locks and liveness"). Used by the daemon, `status` and `detach`.
 *   BPFFS/rocemeter/NETNS/IFINDEX/   pinned maps (bpftool map dump pinned ...) and the
 *                                    meter's XDP program (xdp_prog); the directory is
 *                                    flock()ed by the daemon for its whole life
 *   RUNDIR/NETNS-IFINDEX.pid         "PID STARTTIME": the daemon, provable (for detach)
 *   RUNDIR/NETNS-IFINDEX.stats       the daemon's counters (for status)
 * The lock lives on bpffs, not under RUNDIR: every mount namespace that
 * sees the pins sees the lock. Whether a meter is live is asked of the kernel
 * (rm_pin_meter_live()), never read from RUNDIR.
 */
#ifndef ROCEMETER_PINS_H
#define ROCEMETER_PINS_H

#include <stddef.h>
#include <stdint.h>

#include "common/paths.h"

/* The meter's pinned map names (kernel map names, <= 15 characters). */
#define RM_PIN_MAPS                                                                                      \
	"contexts", "windows", "provision", "stats", "events", "free_slots", "violations", "viol_state", \
		"mirror_sessions", "mirror_unknown"
/* The pinned control program (rocemeter_ctl), run by `reenable` from another process. */
#define RM_PIN_CTL "ctl"
/* The meter's XDP program, pinned beside its maps: liveness compares its ID with the interface's. */
#define RM_PIN_PROG "xdp_prog"

/* 1 if the meter's maps are pinned for k (a live daemon's or stale ones), else 0. */
int rm_pin_meter_exists(const struct rm_ifkey *k);

/*
 * Remove the meter's pins (maps, control program and XDP program), and the
 * interface's and the namespace's directories when they are then empty.
 */
void rm_pin_remove_meter(const struct rm_ifkey *k);

/* Remove the daemon's PID and stats files (call only while holding the lock). */
void rm_pin_remove_run_files(const struct rm_ifkey *k);

/*
 * Take k's lock without waiting: flock() on the pin directory, which
 * create = 1 makes first (rm_paths_prepare_pins()). Returns the fd, -EBUSY
 * when another process holds it, -ENOENT (create = 0) when there is no
 * directory, or another -errno with the reason in err.
 */
int rm_pin_lock(const struct rm_ifkey *k, int create, char *err, size_t errlen);

/* Release a lock of rm_pin_lock() (the fd is closed; the directory stays). */
void rm_pin_unlock(int fd);

/*
 * Ask the kernel whether the meter pinned for k is attached: the XDP
 * program on k->ifindex (native, generic or offloaded) is the pinned
 * RM_PIN_PROG. Call it in k's network namespace. Returns 1 (live, *prog_id
 * set), 0 (not attached: the pins are stale unless a daemon holds the lock
 * while starting or stopping), or -errno (the interface is gone: -ENODEV).
 */
int rm_pin_meter_live(const struct rm_ifkey *k, uint32_t *prog_id);

/*
 * The XDP program attached to ifindex in any mode: 1 with its ID, name
 * ("" when the kernel does not tell us: CAP_SYS_ADMIN is needed) and mode
 * ("native", "generic", "offload"), 0 if none, -errno.
 */
int rm_xdp_attached(uint32_t ifindex, uint32_t *prog_id, char *name, size_t namelen, const char **mode);

/* Write RUNDIR/NETNS-IFINDEX.pid for this process ("PID STARTTIME\n"). 0 or -errno. */
int rm_pin_write_pid(const struct rm_ifkey *k);

/*
 * The daemon of k, proved: the PID file names a process that runs the same
 * executable as this one (/proc/PID/exe) and that started at the recorded
 * time (/proc/PID/stat), so a reused PID is never taken for the meter.
 * Returns the PID (> 0), 0 when there is no PID file, or -ESRCH / -EPERM
 * with the reason in err ("process 123 runs /usr/bin/sleep, not rocemeter").
 */
int rm_pin_meter_pid(const struct rm_ifkey *k, char *err, size_t errlen);

/*
 * Start time of process pid (clock ticks after boot, /proc/PID/stat field
 * 22); 0 if there is no such process or it has exited (a zombie).
 */
uint64_t rm_proc_start_time(int pid);

#endif
