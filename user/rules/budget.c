// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * budget.c - the collector's memory budget. See budget.h.
 */
#include <stdlib.h>

#include "budget.h"
#include "collector_rules.h"
#include "common/limits.h"

/* The epoch's charge covers the struct, its reason (on the heap when it has one),
 * their allocator headers, and its entries in the session's hash table and dirty
 * array and in the store's write queue. */
_Static_assert(sizeof(struct rm_epoch) + RM_EPOCH_REASON_MAX + 2 * 16 + 3 * 40 <= RM_BUDGET_EPOCH_BYTES,
	       "RM_BUDGET_EPOCH_BYTES (and docs/collector.md) below the size of a retained epoch");

_Static_assert(RM_MAX_MEMORY_BYTES_MIN == RM_BUDGET_HANDSHAKE_BYTES + RM_BUDGET_SESSION_BYTES,
	       "the smallest max_memory_bytes holds one handshake slot and one session");

struct rm_budget {
	uint64_t limit, used, refusals;
	uint64_t share_limit; /* the most one share holds */
	rm_budget_refused_fn refused;
	void *arg;
};

struct rm_budget *rm_budget_new(uint64_t limit, rm_budget_refused_fn refused, void *arg)
{
	struct rm_budget *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->limit = limit;
	b->share_limit = limit;
	b->refused = refused;
	b->arg = arg;
	return b;
}

void rm_budget_free(struct rm_budget *b)
{
	free(b);
}

int rm_budget_try(struct rm_budget *b, uint64_t bytes)
{
	if (!b)
		return 0;
	if (bytes > b->limit - b->used)
		return -1;
	b->used += bytes;
	return 0;
}

void rm_budget_refuse(struct rm_budget *b, const char *what, uint64_t bytes)
{
	if (!b)
		return;
	b->refusals++;
	if (b->refused)
		b->refused(b->arg, what, bytes, NULL);
}

int rm_budget_take(struct rm_budget *b, uint64_t bytes, const char *what)
{
	if (rm_budget_try(b, bytes) == 0)
		return 0;
	rm_budget_refuse(b, what, bytes);
	return -1;
}

void rm_budget_give(struct rm_budget *b, uint64_t bytes)
{
	if (b)
		b->used -= bytes < b->used ? bytes : b->used;
}

uint64_t rm_budget_limit(const struct rm_budget *b)
{
	return b ? b->limit : UINT64_MAX;
}

uint64_t rm_budget_used(const struct rm_budget *b)
{
	return b ? b->used : 0;
}

uint64_t rm_budget_refusals(const struct rm_budget *b)
{
	return b ? b->refusals : 0;
}

void rm_budget_set_share_limit(struct rm_budget *b, uint64_t limit)
{
	if (b)
		b->share_limit = limit;
}

uint64_t rm_budget_share_limit(const struct rm_budget *b)
{
	return b ? b->share_limit : UINT64_MAX;
}

void rm_budget_share_init(struct rm_budget_share *sh, struct rm_budget *b)
{
	sh->budget = b;
	sh->used = 0;
}

int rm_budget_share_full(const struct rm_budget_share *sh, uint64_t bytes)
{
	if (!sh || !sh->budget)
		return 0;
	return bytes > sh->budget->share_limit || sh->used > sh->budget->share_limit - bytes;
}

int rm_budget_share_try(struct rm_budget_share *sh, uint64_t bytes)
{
	if (!sh || !sh->budget)
		return 0;
	if (rm_budget_share_full(sh, bytes) || rm_budget_try(sh->budget, bytes) < 0)
		return -1;
	sh->used += bytes;
	return 0;
}

void rm_budget_share_refuse(struct rm_budget_share *sh, const char *what, uint64_t bytes)
{
	struct rm_budget *b = sh ? sh->budget : NULL;

	if (!b)
		return;
	b->refusals++;
	if (b->refused)
		b->refused(b->arg, what, bytes, rm_budget_share_full(sh, bytes) ? sh : NULL);
}

int rm_budget_share_take(struct rm_budget_share *sh, uint64_t bytes, const char *what)
{
	if (rm_budget_share_try(sh, bytes) == 0)
		return 0;
	rm_budget_share_refuse(sh, what, bytes);
	return -1;
}

void rm_budget_share_pass(struct rm_budget_share *sh, uint64_t bytes)
{
	if (sh && sh->budget)
		sh->used -= bytes < sh->used ? bytes : sh->used;
}

void rm_budget_share_give(struct rm_budget_share *sh, uint64_t bytes)
{
	if (!sh || !sh->budget)
		return;
	rm_budget_share_pass(sh, bytes);
	rm_budget_give(sh->budget, bytes);
}
