// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * read_result.c - what a reader of store_read.h hands `report`: the columns
 * of an epoch as report reads them (names and kinds), a run's limits and
 * the named counts both readers fill. The leaf both readers call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_read.h"
#include "store_rows.h"

const char *const rm_epoch_read_names[RM_ER__N] = {
#define NAME(name, column, kind) #column,
	RM_EPOCH_READ_COLUMNS(NAME)
#undef NAME
};

const char rm_epoch_read_kinds[RM_ER__N + 1] = {
#define KIND(name, column, kind) #kind[0],
	RM_EPOCH_READ_COLUMNS(KIND)
#undef KIND
};

static void free_named(struct rm_named_u64 *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

void rm_limits_read_free(struct rm_limits_read *l)
{
	if (!l)
		return;
	free(l->collector_id);
	free(l->listen);
	free(l->transport);
	free_named(l->limits, l->n_limits);
	free_named(l->refused, l->n_refused);
	free_named(l->drops, l->n_drops);
	*l = (struct rm_limits_read){ 0 };
}

int rm_named_u64_push(struct rm_named_u64 **v, size_t *n, const char *name, uint64_t value)
{
	struct rm_named_u64 *nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n].name = strdup(name ? name : "");
	nv[*n].value = value;
	if (!nv[*n].name)
		return -ENOMEM;
	(*n)++;
	return 0;
}

int rm_limits_read_run(struct rm_limits_read *l, const struct rm_run_row *run)
{
	l->run_id = (uint64_t)run->id;
	l->started_ms = run->started_ms;
	l->max_sessions = run->max_sessions;
	l->max_epochs = run->max_epochs;
	l->max_raw_records = run->max_raw_records;
	l->inactivity_timeout_ms = run->inactivity_timeout_ms;
	l->pen = run->pen;
	l->listen = run->listen ? strdup(run->listen) : NULL;
	l->transport = run->transport ? strdup(run->transport) : NULL;
	return (run->listen && !l->listen) || (run->transport && !l->transport) ? -ENOMEM : 0;
}
