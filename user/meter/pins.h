/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pins.h - where an attachment lives on the system:
 *   /sys/fs/bpf/rocemeter/IFNAME/      pinned maps (bpftool map dump pinned ...)
 *   /run/rocemeter/IFNAME.lock         flock()ed by the daemon: one attachment per interface
 *   /run/rocemeter/IFNAME.pid          the daemon's PID (for detach)
 *   /run/rocemeter/IFNAME.stats        the daemon's userspace counters (JSON, for status)
 * ROCEMETER_BPFFS and ROCEMETER_RUNDIR override the two roots (tests).
 */
#ifndef ROCEMETER_PINS_H
#define ROCEMETER_PINS_H

#include <stddef.h>

/* The meter's pinned map names (kernel map names, <= 15 characters). */
#define RM_PIN_MAPS "contexts", "windows", "provision", "stats", "events", "free_slots"

/* Paths for interface ifname; each returns 0, or -1 if ifname is too long. */
int rm_pin_dir(const char *ifname, char *buf, size_t len);
int rm_pin_path(const char *ifname, const char *name, char *buf, size_t len);
int rm_run_path(const char *ifname, const char *suffix, char *buf, size_t len);

/* Make sure bpffs is mounted at the pin root's parent and the directories exist. 0 or -errno. */
int rm_pin_prepare(const char *ifname);

/* Remove the meter's pins (and the directory when it is empty). */
void rm_pin_remove_meter(const char *ifname);

/* Take the interface's lock without waiting: fd >= 0, or -1 (held by pid in *holder if known). */
int rm_lock_interface(const char *ifname, int *holder);

/* Release the lock taken by rm_lock_interface() and remove its file. */
void rm_unlock_interface(const char *ifname, int fd);

#endif
