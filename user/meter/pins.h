/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pins.h - the meter's pins and the interface's lock (where they are:
 * user/common/paths.h):
 *   BPFFS/rocemeter/IFNAME/            pinned maps (bpftool map dump pinned ...)
 *   RUNDIR/IFNAME.lock                 flock()ed by the daemon: one attachment per interface
 *   RUNDIR/IFNAME.pid, IFNAME.stats    the daemon's PID (for detach) and counters (for status)
 */
#ifndef ROCEMETER_PINS_H
#define ROCEMETER_PINS_H

#include <stddef.h>

/* The meter's pinned map names (kernel map names, <= 15 characters). */
#define RM_PIN_MAPS "contexts", "windows", "provision", "stats", "events", "free_slots", "violations", "viol_state"
/* The pinned control program (rocemeter_ctl), run by `reenable` from another process. */
#define RM_PIN_CTL "ctl"

/* 1 if the meter's maps are pinned for ifname (a live daemon's or stale ones), else 0. */
int rm_pin_meter_exists(const char *ifname);

/* Remove the meter's pins, maps and control program (and the directory when it is empty). */
void rm_pin_remove_meter(const char *ifname);

/* Remove the daemon's PID and stats files (call only while holding the lock). */
void rm_pin_remove_run_files(const char *ifname);

/* Take the interface's lock without waiting: fd >= 0, or -1 (held by pid in *holder if known). */
int rm_lock_interface(const char *ifname, int *holder);

/* Release the lock taken by rm_lock_interface() and remove its file. */
void rm_unlock_interface(const char *ifname, int fd);

#endif
