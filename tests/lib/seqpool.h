/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * seqpool.h - the host tests' owner of the engine's windows
 * (include/rocemeter/seqobs.h): a pool of windows and the caller protocol
 * of rm_seq_observe() that bpf/meter.bpf.c follows (the state's own pool
 * window, else a spare on RM_SEQ_NEED_WINDOW, else rm_seq_exhausted();
 * a released window cleaned and given back). A pool can be made to look
 * empty (`blocked`) to reach the exhaustion path. Every window given back
 * must be zero again: rm_pool_put() checks it.
 */
#ifndef ROCEMETER_TESTS_SEQPOOL_H
#define ROCEMETER_TESTS_SEQPOOL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rocemeter/seqobs.h"

struct rm_pool {
	uint32_t nwords; /* ring words of a window */
	uint32_t n;      /* windows */
	uint32_t nfree;
	uint32_t *free; /* free slots, a stack */
	__u64 **win;    /* n windows of RM_POOL_VALUE_WORDS(nwords) words */
	int blocked;    /* look empty: no spare is handed out */
	uint64_t taken, released, exhausted;
	const char *bug; /* a window given back not zero, a slot given back twice */
	struct rm_window_scratch sc;
};

/* A pool of n windows of nwords ring words (n may be 0). */
static inline void rm_pool_init(struct rm_pool *p, uint32_t nwords, uint32_t n)
{
	memset(p, 0, sizeof(*p));
	p->nwords = nwords;
	p->n = n;
	p->free = calloc(n ? n : 1, sizeof(uint32_t));
	p->win = calloc(n ? n : 1, sizeof(__u64 *));
	if (!p->free || !p->win)
		abort();
	for (uint32_t i = 0; i < n; i++) {
		p->win[i] = calloc(RM_POOL_VALUE_WORDS(nwords), sizeof(__u64)); /* zeroed, as BPF array maps are */
		if (!p->win[i])
			abort();
		p->free[p->nfree++] = n - 1 - i;
	}
}

static inline void rm_pool_free(struct rm_pool *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		free(p->win[i]);
	free(p->win);
	free(p->free);
	memset(p, 0, sizeof(*p));
}

/* The window of slot, or NULL. */
static inline __u64 *rm_pool_window(const struct rm_pool *p, uint32_t slot)
{
	return slot < p->n ? p->win[slot] : NULL;
}

/* Give a window back: it must be all zero, and not free already. */
static inline void rm_pool_put(struct rm_pool *p, uint32_t slot)
{
	if (slot >= p->n || p->nfree >= p->n) {
		p->bug = "a slot given back that the pool does not lack";
		return;
	}
	for (uint32_t i = 0; i < p->nfree; i++)
		if (p->free[i] == slot)
			p->bug = "a slot given back twice";
	for (uint32_t i = 0; i < RM_POOL_VALUE_WORDS(p->nwords); i++)
		if (p->win[slot][i])
			p->bug = "a window given back to the pool is not zero";
	p->free[p->nfree++] = slot;
}

/* After the engine: clean and give back what it released, give back an unused spare. */
static inline void rm_pool_done(struct rm_pool *p, struct rm_seq_win *w, int spare)
{
	if (w->release) {
		__u64 *pw = rm_pool_window(p, w->release_slot);

		if (!pw || rm_window_release(pw, p->nwords, w->release_lo, w->release_hi, &p->sc))
			p->bug = "rm_window_release failed";
		p->released++;
		rm_pool_put(p, w->release_slot);
	}
	if (w->took)
		p->taken++;
	if (spare && !w->took)
		rm_pool_put(p, w->slot);
}

/*
 * rm_seq_observe() as its BPF caller does it. *exhausted is set when the
 * epoch closed with stateExhaustion for want of a window (RM_SEQ_RESTARTED).
 */
static inline int rm_pool_observe(struct rm_pool *p, struct rm_seq_state *st, uint32_t window, uint32_t psn,
				  uint64_t now, struct rm_seq_counters *closed, int *exhausted)
{
	struct rm_seq_win w;
	int r, spare = 0;

	*exhausted = 0;
	memset(&w, 0, sizeof(w));
	if (rm_seq_pooled(st)) {
		w.slot = (uint32_t)st->win;
		w.pool = rm_pool_window(p, w.slot);
	}
	r = rm_seq_observe(st, &w, p->nwords, window, psn, now, closed, &p->sc);
	if (r == RM_SEQ_NEED_WINDOW) {
		if (rm_seq_pooled(st)) {
			p->bug = "a pooled state asked for a window it was given";
			return -1;
		}
		if (!p->blocked && p->nfree) {
			w.slot = p->free[--p->nfree];
			w.pool = p->win[w.slot];
			spare = 1;
			r = rm_seq_observe(st, &w, p->nwords, window, psn, now, closed, &p->sc);
			if (r == RM_SEQ_NEED_WINDOW)
				p->bug = "the engine asked again for a window it was given";
		} else {
			r = rm_seq_exhausted(st, &w, window, psn, now, closed);
			p->exhausted++;
			*exhausted = 1;
		}
	}
	rm_pool_done(p, &w, spare);
	return r;
}

/* rm_seq_close() as its caller does it. */
static inline int rm_pool_close(struct rm_pool *p, struct rm_seq_state *st, uint16_t reason,
				struct rm_seq_counters *out)
{
	struct rm_seq_win w;
	int r;

	memset(&w, 0, sizeof(w));
	r = rm_seq_close(st, &w, reason, out);
	rm_pool_done(p, &w, 0);
	return r;
}

#endif
