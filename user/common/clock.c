// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* clock.c - the clocks of userspace by name, and the meter's monotonic-to-UNIX offset (see clock.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"

static uint64_t ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t rm_clock_mono_ns(void)
{
	return ns_of(CLOCK_MONOTONIC);
}

uint64_t rm_clock_mono_ms(void)
{
	return ns_of(CLOCK_MONOTONIC) / 1000000;
}

uint64_t rm_clock_wall_ns(void)
{
	return ns_of(CLOCK_REALTIME);
}

uint64_t rm_clock_wall_us(void)
{
	return ns_of(CLOCK_REALTIME) / 1000;
}

uint64_t rm_clock_wall_ms(void)
{
	return ns_of(CLOCK_REALTIME) / 1000000;
}

struct timespec rm_clock_wall_deadline(uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* The test step (RM_CLOCK_TEST_STEP_ENV), in ns; 0 without one. */
static int64_t test_step_ns(void)
{
	const char *path = getenv(RM_CLOCK_TEST_STEP_ENV);
	int64_t ms = 0;
	FILE *f;

	if (!path || !*path || !(f = fopen(path, "r")))
		return 0;
	if (fscanf(f, "%" SCNd64, &ms) != 1)
		ms = 0;
	fclose(f);
	return ms * 1000000;
}

int64_t rm_clock_unix_offset_ns(void)
{
	int64_t best = 0, best_gap = INT64_MAX;

	for (int i = 0; i < 3; i++) {
		int64_t m1 = (int64_t)rm_clock_mono_ns(), rt = (int64_t)rm_clock_wall_ns(),
			m2 = (int64_t)rm_clock_mono_ns();

		if (m2 - m1 < best_gap) {
			best_gap = m2 - m1;
			best = rt - (m1 + (m2 - m1) / 2);
		}
	}
	return best + test_step_ns();
}
