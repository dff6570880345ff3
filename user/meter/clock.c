// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* clock.c - the monotonic-to-UNIX offset of the live meter (see clock.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"

static int64_t ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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
		int64_t m1 = ns_of(CLOCK_MONOTONIC), rt = ns_of(CLOCK_REALTIME), m2 = ns_of(CLOCK_MONOTONIC);

		if (m2 - m1 < best_gap) {
			best_gap = m2 - m1;
			best = rt - (m1 + (m2 - m1) / 2);
		}
	}
	return best + test_step_ns();
}
