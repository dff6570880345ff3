/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * version.h - the version clock of the ClickHouse store's rows: every row
 * of a table that changes (runs, sessions, epochs, observation_points)
 * carries version, the UNIX time in microseconds when it was serialized,
 * strictly increasing per clock, so that ReplacingMergeTree and argMax keep
 * the latest state (chstore.h "Versions"). One thread uses a clock.
 */
#ifndef ROCEMETER_CHS_VERSION_H
#define ROCEMETER_CHS_VERSION_H

#include <stdint.h>

struct rm_chs_version {
	uint64_t last; /* the last version given, 0: none yet */
};

/* The version of the next row written: the wall clock in microseconds, larger than the last one. */
uint64_t rm_chs_version_next(struct rm_chs_version *v);

#endif /* ROCEMETER_CHS_VERSION_H */
