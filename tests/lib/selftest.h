/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * selftest.h - what the C selftests share besides frames: a test program
 * that needs root (BPF_PROG_TEST_RUN, maps, pins) skips as a whole with a
 * reason when run without it, in TAP ("1..0 # SKIP reason"), which
 * scripts/run-tests counts as one skipped test.
 */
#ifndef ROCEMETER_SELFTEST_H
#define ROCEMETER_SELFTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Exit 0 with a TAP skip line unless the process runs as root; `what` names the need. */
static inline void rm_selftest_require_root(const char *what)
{
	if (geteuid() == 0)
		return;
	printf("1..0 # SKIP needs root (%s)\n", what);
	exit(0);
}

#endif
