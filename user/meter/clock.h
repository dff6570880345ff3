/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * clock.h - the live meter's wall clock: the offset that turns the meter's
 * arrival times (CLOCK_MONOTONIC, bpf_ktime_get_ns) into UNIX time. Used by
 * the reporter when an epoch starts (docs/architecture.md "Time").
 */
#ifndef ROCEMETER_CLOCK_H
#define ROCEMETER_CLOCK_H

#include <stdint.h>

/*
 * The environment variable naming a file that holds a signed number of
 * milliseconds added to the wall clock, read at every call: tests step the
 * clock with it without touching the host's (a missing or unreadable file
 * adds nothing). Not for production use.
 */
#define RM_CLOCK_TEST_STEP_ENV "ROCEMETER_TEST_WALLCLOCK_STEP_FILE"

/*
 * CLOCK_REALTIME - CLOCK_MONOTONIC now, in ns (plus the test step above):
 * add it to a monotonic time to get UNIX ns. The two clocks are read as a
 * monotonic-realtime-monotonic sandwich, the tightest of three tries, so
 * that a preemption between the reads does not shift the offset.
 * Thread-safe.
 */
int64_t rm_clock_unix_offset_ns(void);

#endif
