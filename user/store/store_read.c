// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store_read.c - the read interface of `report` (store_read.h): dispatch to
 * the store's implementation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_read.h"

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

struct rm_store_reader *rm_store_reader_open(const struct rm_store_spec *spec, char *err, size_t errlen)
{
	const struct rm_store_reader_ops *ops =
		spec->kind == RM_STORE_CLICKHOUSE ? &rm_store_reader_clickhouse : &rm_store_reader_sqlite;
	struct rm_store_reader *r = ops->open(spec, err, errlen);

	if (r)
		r->ops = ops;
	return r;
}

void rm_store_reader_close(struct rm_store_reader *r)
{
	if (r)
		r->ops->close(r);
}

int rm_store_reader_collectors(struct rm_store_reader *r, char ***ids, size_t *n, char *err, size_t errlen)
{
	return r->ops->collectors(r, ids, n, err, errlen);
}

int rm_store_reader_epochs(struct rm_store_reader *r, const struct rm_read_filter *f,
			   int (*fn)(void *arg, const struct rm_epoch_read *e), void *arg, char *err, size_t errlen)
{
	return r->ops->epochs(r, f, fn, arg, err, errlen);
}

int rm_store_reader_limits(struct rm_store_reader *r, const char *collector_id,
			   int (*fn)(void *arg, const struct rm_limits_read *l), void *arg, char *err, size_t errlen)
{
	return r->ops->limits(r, collector_id, fn, arg, err, errlen);
}

int rm_store_reader_points(struct rm_store_reader *r, rm_store_point_fn *fn, void *arg, char *err, size_t errlen)
{
	return r->ops->points ? r->ops->points(r, fn, arg, err, errlen) : 0;
}

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
