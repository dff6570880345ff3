// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* version.c - the version clock of the ClickHouse store's rows (version.h): the leaf its files call. */
#include "common/clock.h"
#include "version.h"

uint64_t rm_chs_version_next(struct rm_chs_version *v)
{
	uint64_t now = rm_clock_wall_us();

	if (now <= v->last)
		now = v->last + 1;
	v->last = now;
	return now;
}
