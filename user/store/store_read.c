// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store_read.c - the read interface of `report` (store_read.h): dispatch to
 * the store's implementation.
 */
#include "store_read.h"

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
