/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * budget.h - the collector's memory budget (docs/collector.md "Memory
 * budget"; [SEQOBS] "Collector Processing": finite resource limits). One
 * counter of bytes, charged at fixed, documented costs per object by the
 * collector (handshake slots, Transport Sessions), the collector rules
 * (retained epochs) and the IPFIX decoder (Templates). What one Transport
 * Session holds itself (its retained epochs and Templates) is charged to
 * its share as well (max_memory_bytes_per_session), so that one exporter
 * cannot take the whole budget from the others. No I/O: a refusal goes to
 * a callback, which stores it as a collector resource drop.
 * Not thread-safe: the collector's loop is its only user.
 */
#ifndef ROCEMETER_BUDGET_H
#define ROCEMETER_BUDGET_H

#include <stdint.h>

#include "common/limits.h" /* RM_BUDGET_HANDSHAKE_BYTES, RM_BUDGET_SESSION_BYTES */

/*
 * Bytes charged per object: upper bounds of what each holds, allocator and
 * table overhead included (docs/collector.md lists the same numbers; the
 * struct sizes are checked against them at compile time).
 */
/* RM_BUDGET_HANDSHAKE_BYTES and RM_BUDGET_SESSION_BYTES: user/common/limits.h (the configuration checks them). */
#define RM_BUDGET_EPOCH_BYTES    1024u /* per retained epoch: struct rm_epoch, hash and list entries */
#define RM_BUDGET_TEMPLATE_BYTES 512u  /* per Template, plus the octets of its Template Record */

struct rm_budget;

/*
 * A Transport Session's share of a budget: bytes charged to it and to the
 * budget, at most the budget's share limit (rm_budget_set_share_limit) in
 * the share. Embedded in its owner (no allocation); zeroed or
 * rm_budget_share_init() before use; every byte given back before the
 * budget is freed.
 */
struct rm_budget_share {
	struct rm_budget *budget; /* NULL: unlimited */
	uint64_t used;            /* bytes charged to this share */
};

/*
 * Called once per refusal: what ("epoch", "Template", "session"), the bytes
 * that did not fit, and sh: the share that was at its limit, or NULL when the
 * budget as a whole had no room.
 */
typedef void (*rm_budget_refused_fn)(void *arg, const char *what, uint64_t bytes, const struct rm_budget_share *sh);

/* A budget of limit bytes; refused (may be NULL) is called with arg. NULL on ENOMEM. */
struct rm_budget *rm_budget_new(uint64_t limit, rm_budget_refused_fn refused, void *arg);
void rm_budget_free(struct rm_budget *b);

/*
 * Charge bytes if used + bytes <= limit: 0. Otherwise -1, nothing charged,
 * no callback (the caller may free something and try again). A NULL budget
 * is unlimited: always 0.
 */
int rm_budget_try(struct rm_budget *b, uint64_t bytes);
/* A refusal of what (bytes that did not fit): counted, and given to the callback. NULL: nothing. */
void rm_budget_refuse(struct rm_budget *b, const char *what, uint64_t bytes);
/* rm_budget_try(), and rm_budget_refuse() when it fails: 0 or -1. */
int rm_budget_take(struct rm_budget *b, uint64_t bytes, const char *what);
/* Return bytes charged before (never more than are in use). NULL: nothing. */
void rm_budget_give(struct rm_budget *b, uint64_t bytes);

/*
 * The most one share may hold (bytes; max_memory_bytes_per_session). The
 * default, until set, is the budget's whole limit (no share is smaller).
 */
void rm_budget_set_share_limit(struct rm_budget *b, uint64_t limit);
uint64_t rm_budget_share_limit(const struct rm_budget *b);

/* A share of b (NULL: unlimited), nothing charged. */
void rm_budget_share_init(struct rm_budget_share *sh, struct rm_budget *b);
/*
 * Charge bytes to the share and its budget if both have room: 0. Otherwise
 * -1, nothing charged, no callback. A NULL share, or one of a NULL budget:
 * always 0.
 */
int rm_budget_share_try(struct rm_budget_share *sh, uint64_t bytes);
/* The share itself has no room for bytes more (its budget may have): 1, else 0. NULL: 0. */
int rm_budget_share_full(const struct rm_budget_share *sh, uint64_t bytes);
/* A refusal of what for sh (the share at its limit, or else the budget): counted, given to the callback. */
void rm_budget_share_refuse(struct rm_budget_share *sh, const char *what, uint64_t bytes);
/* rm_budget_share_try(), and rm_budget_share_refuse() when it fails: 0 or -1. */
int rm_budget_share_take(struct rm_budget_share *sh, uint64_t bytes, const char *what);
/* Return bytes charged with rm_budget_share_try() to the share and the budget. */
void rm_budget_share_give(struct rm_budget_share *sh, uint64_t bytes);
/*
 * The share lets go of bytes that stay charged to the budget: an object
 * that leaves its session (a retired epoch the store keeps until its write,
 * which gives the bytes back with rm_budget_give()).
 */
void rm_budget_share_pass(struct rm_budget_share *sh, uint64_t bytes);

uint64_t rm_budget_limit(const struct rm_budget *b);
uint64_t rm_budget_used(const struct rm_budget *b);
/* Refusals since rm_budget_new(). */
uint64_t rm_budget_refusals(const struct rm_budget *b);

#endif /* ROCEMETER_BUDGET_H */
