/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * census_run.h - the connection census over capture files (`rocemeter
 * connections FILE...`): every frame, in file order, through the census
 * program (user/census/census.h) with BPF_PROG_TEST_RUN, read with libpcap
 * (capture.h).
 */
#ifndef ROCEMETER_CENSUS_RUN_H
#define ROCEMETER_CENSUS_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "census/census.h"

/*
 * Check every file first (capture.h: nothing is counted from a file set
 * with a bad file), then run the frames of files[0..nfiles-1] through a
 * census with a table of max_connections keys; frames shorter than an
 * Ethernet header are read but not run (the kernel runs no program on
 * them). progress: a progress line on stderr, for a terminal. Returns 0
 * with *res (rm_census_result_free()) and *frames_read filled, or -1 with
 * one message in err.
 */
int rm_census_captures(char *const *files, int nfiles, uint32_t max_connections, int progress,
		       struct rm_census_result *res, uint64_t *frames_read, char *err, size_t errlen);

#endif
