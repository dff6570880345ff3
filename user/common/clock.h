/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * clock.h - the one clock module: every read of a clock in userspace goes
 * through here, and each name says which clock it reads. *_mono_* is
 * CLOCK_MONOTONIC (intervals, deadlines, timeouts: never goes back, never
 * exported as absolute time); *_wall_* is CLOCK_REALTIME (UNIX time, for what
 * is stored, exported or shown). The live meter's monotonic-to-UNIX offset is
 * here too (docs/architecture.md "Time"). All functions are thread-safe.
 */
#ifndef ROCEMETER_CLOCK_H
#define ROCEMETER_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in ns / ms. */
uint64_t rm_clock_mono_ns(void);
uint64_t rm_clock_mono_ms(void);

/* CLOCK_REALTIME now: UNIX time in ns / us / ms. */
uint64_t rm_clock_wall_ns(void);
uint64_t rm_clock_wall_us(void);
uint64_t rm_clock_wall_ms(void);

/*
 * The CLOCK_REALTIME time ms milliseconds from now, as the absolute deadline
 * of pthread_cond_timedwait() and pthread_timedjoin_np() (which measure on
 * CLOCK_REALTIME unless told otherwise).
 */
struct timespec rm_clock_wall_deadline(uint64_t ms);

/*
 * The environment variable naming a file that holds a signed number of
 * milliseconds added to the wall clock, read at every call of
 * rm_clock_unix_offset_ns(): tests step the meter's clock with it without
 * touching the host's (a missing or unreadable file adds nothing). Not for
 * production use.
 */
#define RM_CLOCK_TEST_STEP_ENV "ROCEMETER_TEST_WALLCLOCK_STEP_FILE"

/*
 * CLOCK_REALTIME - CLOCK_MONOTONIC now, in ns (plus the test step above):
 * add it to a monotonic time (bpf_ktime_get_ns, bpf_ktime_get_coarse_ns) to
 * get UNIX ns. The two clocks are read as a monotonic-realtime-monotonic
 * sandwich, the tightest of three tries, so that a preemption between the
 * reads does not shift the offset.
 */
int64_t rm_clock_unix_offset_ns(void);

#endif
