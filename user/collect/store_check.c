// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store_check.c - the collector's check of a store call (collector_int.h):
 * the first failure is logged, the later ones are the store's to count
 * (its drops). Every file of user/collect/ that calls the store checks
 * its result here.
 */
#include "collector_int.h"
#include "common/log.h"

void rm_collector_store_check(struct rm_collector *s, int rc, const char *what)
{
	if (rc < 0 && !s->store_failed) {
		rm_log(RM_LOG_ERR, "%s error (%s): %s", s->store->ops->drop_kind, what, rm_backend_error(s->store));
		s->store_failed = 1;
	}
}
