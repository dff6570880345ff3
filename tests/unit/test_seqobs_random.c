// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_seqobs_random.c - randomized differential test of the sequence
 * observation engine (include/rocemeter/seqobs.h) against a deliberately
 * simple model written here from the text of [SEQOBS] ("Bounded Sequence
 * Observation Algorithm", "Per-Request Transitions" and the invariants
 * below the table).
 *
 * The model shares no code with the engine: it keeps S and H as 64-bit
 * extended positions (offset by a few multiples of M, so they never equal
 * the engine's), and the SEEN and PENDING positions as two explicit sorted
 * arrays of extended positions. No bitmap, no ring arithmetic. It applies
 * every row of the transition table literally, expires pending positions
 * below the new L one by one, abandons the pending set on closure and, on
 * a serial discontinuity (u = M/2 or d > W), closes the old epoch and
 * counts p once, in the new epoch.
 *
 * After every request all counters, the result kind and (on restart) the
 * final snapshot of model and engine are compared, and [SEQOBS]'s
 * invariants are checked on the engine's state. Each stream ends with
 * rm_seq_close() on both sides and a comparison of the final snapshots.
 *
 * Families (one cmocka test each, 100,064 streams in all): "walk" (random
 * walks with small W: in order, gaps, d = W - 1/W/W + 1, beyond W,
 * reordered, duplicated, late, 2^23 and 2^23 +- 1 away, wraps, mid-stream
 * closure), "reorder" (in-order runs with losses, local shuffles and
 * duplicates), "serial" (wrap around 2^24, the ambiguous distance 2^23),
 * "wchange" (the configured W changes mid-stream) and "large" (W up to
 * 2^22, short streams). W includes 1, 2, 3, 63, 64, 65, 100, 1024, 2^22.
 * The window starts zeroed (as BPF array maps are) and its ring is sometimes
 * larger than needed; after every request of a small window, the engine's
 * window invariant is checked: no bit outside [L, H], summaries exact.
 * Each family also asserts that it reached every transition row.
 *
 * Streams come from a deterministic PRNG with one seed per stream; a
 * failure prints the family, the stream seed, W and the PSN sequence.
 * Replay one stream with its trace:
 *   RM_SEQOBS_REPLAY=family:0xSEED build/tests/unit/test_seqobs_random
 * Explore other streams (default base seed is fixed):
 *   RM_SEQOBS_SEED=12345 build/tests/unit/test_seqobs_random
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rocemeter/seqobs.h"
#include "seqpool.h"

/* ------------------------------------------------------------------ */
/* Constants of [SEQOBS], written out here rather than taken from the engine. */

#define M            ((uint64_t)1 << 24)
#define HALF         ((uint64_t)1 << 23)
#define WMAX         ((uint32_t)1 << 22)
#define FLAG_FINAL   0x0001u
#define FLAG_CAPTURE 0x0004u
#define FLAG_STATE   0x0008u
#define FLAG_SERIAL  0x0010u
/* The model's extended positions start this far above the PSN. */
#define MODEL_BASE (7 * M)

enum { R_STARTED = 1, R_ACCOUNTED = 2, R_RESTARTED = 3 };

/* ------------------------------------------------------------------ */
/* PRNG: splitmix64 for seeding, xorshift64* for the streams. */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct rng {
	uint64_t s;
};

static void rng_seed(struct rng *r, uint64_t seed)
{
	uint64_t x = seed;

	r->s = splitmix64(&x);
	if (r->s == 0)
		r->s = 1;
}

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, n), n >= 1 (the tiny modulo bias does not matter here). */
static uint64_t rnd(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

/* Uniform in [lo, hi] */
static uint64_t rnd_range(struct rng *r, uint64_t lo, uint64_t hi)
{
	return lo + rnd(r, hi - lo + 1);
}

/* ------------------------------------------------------------------ */
/* A sorted set of extended positions: v[lo..n) strictly increasing. */

struct pset {
	uint64_t *v;
	size_t lo, n, cap;
};

static size_t pset_size(const struct pset *s)
{
	return s->n - s->lo;
}

/* First index i in [lo, n) with v[i] >= x, or n. */
static size_t pset_lower(const struct pset *s, uint64_t x)
{
	size_t a = s->lo, b = s->n;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (s->v[m] < x)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

static int pset_has(const struct pset *s, uint64_t x)
{
	size_t i = pset_lower(s, x);

	return i < s->n && s->v[i] == x;
}

static void pset_reserve_one(struct pset *s)
{
	if (s->n < s->cap)
		return;
	if (s->lo > 0) {
		memmove(s->v, s->v + s->lo, pset_size(s) * sizeof(uint64_t));
		s->n -= s->lo;
		s->lo = 0;
		if (s->n < s->cap)
			return;
	}
	s->cap = s->cap ? s->cap * 2 : 64;
	s->v = realloc(s->v, s->cap * sizeof(uint64_t));
	if (!s->v) {
		fprintf(stderr, "out of memory\n");
		abort();
	}
}

/* Insert x; returns 0 if it was already there. */
static int pset_add(struct pset *s, uint64_t x)
{
	size_t i;

	if (s->n > s->lo && s->v[s->n - 1] < x) { /* common case: append */
		pset_reserve_one(s);
		s->v[s->n++] = x;
		return 1;
	}
	i = pset_lower(s, x);
	if (i < s->n && s->v[i] == x)
		return 0;
	pset_reserve_one(s);
	i = pset_lower(s, x); /* reserve may have moved the elements */
	memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof(uint64_t));
	s->v[i] = x;
	s->n++;
	return 1;
}

/* Remove x; returns 0 if it was not there. */
static int pset_del(struct pset *s, uint64_t x)
{
	size_t i = pset_lower(s, x);

	if (i >= s->n || s->v[i] != x)
		return 0;
	if (i == s->lo) {
		s->lo++;
	} else {
		memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof(uint64_t));
		s->n--;
	}
	return 1;
}

/* Remove every element below x; returns how many were removed. */
static uint64_t pset_del_below(struct pset *s, uint64_t x)
{
	size_t i = pset_lower(s, x);
	uint64_t k = i - s->lo;

	s->lo = i;
	return k;
}

static void pset_clear(struct pset *s)
{
	s->lo = s->n = 0;
}

static void pset_free(struct pset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------------------ */
/* The model, row by row from [SEQOBS]. */

struct mcount {
	uint64_t requests, skipped, filled, expired, abandoned, repeated, late;
	uint64_t pending;
	uint64_t first_ns, last_ns;
	uint32_t window, epoch_gen;
	uint16_t flags;
};

struct model {
	int active;
	uint64_t S, H;
	uint32_t W;
	uint64_t requests, skipped, filled, expired, abandoned, repeated, late;
	uint64_t first_ns, last_ns;
	uint32_t epoch_gen;
	struct pset seen, pending;
	int pooled;      /* the tier rule below says: the epoch holds a pool window */
	const char *bug; /* set when the model finds itself inconsistent */
};

/*
 * The tiers, as docs/meter.md "Memory" states them (not how seqobs.h does
 * it): an epoch holds a pool window from the request that leaves a PENDING
 * position more than 63 positions below the new H (that request is
 * accounted with the window; without one the epoch closes with
 * stateExhaustion and the request starts a new epoch), until no position
 * is pending or the epoch closes. What each transition did, for the
 * families' coverage checks:
 */
struct tiers {
	uint64_t take, exhaust, back_fill, back_expire, back_close;
};
static struct tiers g_tiers;

static uint64_t model_L(const struct model *m)
{
	/* L = max(S, H - W + 1); H >= MODEL_BASE > W, so no underflow. */
	uint64_t l = m->H - m->W + 1;

	return l > m->S ? l : m->S;
}

static void model_snapshot(const struct model *m, uint16_t flags, struct mcount *o)
{
	o->requests = m->requests;
	o->skipped = m->skipped;
	o->filled = m->filled;
	o->expired = m->expired;
	o->abandoned = m->abandoned;
	o->repeated = m->repeated;
	o->late = m->late;
	o->pending = pset_size(&m->pending);
	o->first_ns = m->first_ns;
	o->last_ns = m->last_ns;
	o->window = m->W;
	o->epoch_gen = m->epoch_gen;
	o->flags = flags;
}

/* "On closure, add the number of pending positions to abandoned and clear pending." */
static int model_close(struct model *m, uint16_t reason, struct mcount *out)
{
	if (!m->active)
		return 0;
	if (m->pooled)
		g_tiers.back_close++;
	m->pooled = 0;
	m->abandoned += pset_size(&m->pending);
	pset_clear(&m->pending);
	pset_clear(&m->seen);
	m->active = 0;
	model_snapshot(m, FLAG_FINAL | reason, out);
	return 1;
}

/* "No active epoch: Set S=H=p; retain only p as SEEN; requests=1; all other counters=0." */
static void model_start(struct model *m, uint32_t W, uint32_t p, uint64_t now)
{
	m->active = 1;
	m->W = W;
	m->S = m->H = MODEL_BASE + p;
	pset_clear(&m->seen);
	pset_clear(&m->pending);
	pset_add(&m->seen, m->S);
	m->requests = 1;
	m->skipped = m->filled = m->expired = m->abandoned = m->repeated = m->late = 0;
	m->first_ns = m->last_ns = now;
	m->epoch_gen++;
	m->pooled = 0;
}

/* The retained interval [L, H] holds exactly one label per position. */
static void model_selfcheck(struct model *m)
{
	uint64_t L = model_L(m);

	if (pset_size(&m->seen) + pset_size(&m->pending) != m->H - L + 1)
		m->bug = "model: labels do not cover [L, H] exactly";
	else if (pset_size(&m->seen) && m->seen.v[m->seen.lo] < L)
		m->bug = "model: SEEN label below L";
	else if (pset_size(&m->pending) && m->pending.v[m->pending.lo] < L)
		m->bug = "model: PENDING label below L";
	else if (!pset_has(&m->seen, m->H))
		m->bug = "model: H not SEEN";
}

/*
 * A forward advance to H' = H + d leaves a PENDING position retained below
 * H' - 63: a new one (H + 1 < H' - 63), or an old one in [L', H' - 64].
 */
static int model_needs_window(const struct model *m, uint64_t d)
{
	uint64_t H2 = m->H + d, L2 = H2 + 1 >= m->S + m->W ? H2 + 1 - m->W : m->S;
	size_t i = pset_lower(&m->pending, L2);

	if (d > 64)
		return 1;
	return i < m->pending.n && m->pending.v[i] + 63 < H2;
}

/* avail: the pool has a window for this context; *exhausted: closed for want of one. */
static int model_observe(struct model *m, uint32_t W, uint32_t p, uint64_t now, struct mcount *closed, int avail,
			 int *exhausted)
{
	uint64_t u;
	int64_t d;

	*exhausted = 0;
	if (!m->active) {
		model_start(m, W, p, now);
		return R_STARTED;
	}
	u = ((uint64_t)p + M - m->H % M) % M;
	d = u < HALF ? (int64_t)u : (int64_t)u - (int64_t)M;
	if (u == HALF || d > (int64_t)m->W) {
		/* "Close with serialDiscontinuity; start fresh state with p;
		 * do not account p to the old epoch." */
		model_close(m, FLAG_SERIAL, closed);
		model_start(m, W, p, now);
		return R_RESTARTED;
	}
	if (d >= 1 && !m->pooled && model_needs_window(m, (uint64_t)d)) {
		if (!avail) {
			/* stateExhaustion: the epoch closes as it was, p starts anew */
			model_close(m, FLAG_STATE, closed);
			model_start(m, W, p, now);
			g_tiers.exhaust++;
			*exhausted = 1;
			return R_RESTARTED;
		}
		m->pooled = 1;
		g_tiers.take++;
	}
	m->requests++;
	m->last_ns = now;
	if (d >= 1) {
		/* "add H+1 through H+d-1 as PENDING and add d-1 to skipped;
		 * advance H by d; mark H SEEN; expire each pending position
		 * below new L once." */
		for (uint64_t q = m->H + 1; q <= m->H + (uint64_t)d - 1; q++)
			if (!pset_add(&m->pending, q) || pset_has(&m->seen, q))
				m->bug = "model: new position already labeled";
		m->skipped += (uint64_t)d - 1;
		m->H += (uint64_t)d;
		pset_add(&m->seen, m->H);
		uint64_t L = model_L(m);

		m->expired += pset_del_below(&m->pending, L);
		pset_del_below(&m->seen, L); /* no longer retained */
		if (m->pooled && !pset_size(&m->pending)) {
			m->pooled = 0;
			g_tiers.back_expire++;
		}
	} else {
		uint64_t q = m->H - (uint64_t)(-d);

		if (q < model_L(m)) {
			m->late++;
		} else if (pset_has(&m->pending, q)) {
			pset_del(&m->pending, q);
			pset_add(&m->seen, q);
			m->filled++;
			if (m->pooled && !pset_size(&m->pending)) {
				m->pooled = 0;
				g_tiers.back_fill++;
			}
		} else if (pset_has(&m->seen, q)) {
			m->repeated++;
		} else {
			m->bug = "model: retained position neither SEEN nor PENDING";
		}
	}
	model_selfcheck(m);
	return R_ACCOUNTED;
}

/* ------------------------------------------------------------------ */
/* What a family exercised, summed over the final snapshots of its epochs. */

struct stats {
	uint64_t streams, requests, started, restarted, closes;
	uint64_t skipped, filled, expired, abandoned, repeated, late;
	uint64_t max_pending;
};

static struct stats g_stats;

static void stats_epoch(const struct mcount *k)
{
	g_stats.skipped += k->skipped;
	g_stats.filled += k->filled;
	g_stats.expired += k->expired;
	g_stats.abandoned += k->abandoned;
	g_stats.repeated += k->repeated;
	g_stats.late += k->late;
}

/* ------------------------------------------------------------------ */
/* One stream: engine and model side by side. */

struct stream {
	const char *family;
	uint64_t seed;
	struct rng r;
	/* engine */
	struct rm_seq_state st;
	struct rm_pool *pool; /* its windows: own (own_pool), or shared by several streams */
	struct rm_pool own_pool;
	int others_pooled; /* windows the model's other contexts hold (shared pool) */
	int block_pm;      /* per mille of requests for which the pool looks empty */
	/* model */
	struct model m;
	/* the requests so far, for the failure message */
	uint32_t *psn, *wins;
	size_t n, cap;
	int varying_w; /* the W argument changes within the stream */
	uint32_t w0;
	uint64_t now;
	int verbose;
	char why[512];
};

/*
 * A stream with a pool of its own (shared == NULL: one window, enough for
 * one context; in a fifth of the streams it looks empty for some requests,
 * so that epochs close with stateExhaustion), or on a shared pool.
 */
static void stream_init_pool(struct stream *s, const char *family, uint64_t seed, uint32_t nwords, int verbose,
			     struct rm_pool *shared)
{
	memset(s, 0, sizeof(*s));
	s->family = family;
	s->seed = seed;
	s->verbose = verbose;
	rng_seed(&s->r, seed);
	if (shared) {
		s->pool = shared;
	} else {
		rm_pool_init(&s->own_pool, nwords, 1);
		s->pool = &s->own_pool;
		if (rnd(&s->r, 5) == 0)
			s->block_pm = (int)(const uint32_t[]){ 1000, 500, 100 }[rnd(&s->r, 3)];
	}
	s->now = 1000 + rnd(&s->r, 1000);
}

static void stream_init(struct stream *s, const char *family, uint64_t seed, uint32_t nwords, int verbose)
{
	stream_init_pool(s, family, seed, nwords, verbose, NULL);
}

static void stream_free(struct stream *s)
{
	if (s->pool == &s->own_pool)
		rm_pool_free(&s->own_pool);
	free(s->psn);
	free(s->wins);
	pset_free(&s->m.seen);
	pset_free(&s->m.pending);
}

static void stream_report(struct stream *s)
{
	fprintf(stderr, "# MISMATCH family=%s seed=0x%016llx W=%u%s nwords=%u: %s\n", s->family,
		(unsigned long long)s->seed, s->w0, s->varying_w ? " (varying, see W@ below)" : "", s->pool->nwords,
		s->why);
	fprintf(stderr, "# replay: RM_SEQOBS_REPLAY=%s:0x%016llx build/tests/unit/test_seqobs_random\n", s->family,
		(unsigned long long)s->seed);
	fprintf(stderr, "# PSNs (%zu):", s->n);
	for (size_t i = 0; i < s->n; i++) {
		if (s->varying_w && (i == 0 || s->wins[i] != s->wins[i - 1]))
			fprintf(stderr, " W@%u", s->wins[i]);
		fprintf(stderr, " %u", s->psn[i]);
	}
	fprintf(stderr, "\n");
}

#define CMP(field_e, field_m, name)                                                                   \
	do {                                                                                          \
		if ((uint64_t)(e)->field_e != (uint64_t)(m)->field_m) {                               \
			snprintf(s->why, sizeof(s->why), "%s: %s engine=%llu model=%llu", what, name, \
				 (unsigned long long)(e)->field_e, (unsigned long long)(m)->field_m); \
			return 0;                                                                     \
		}                                                                                     \
	} while (0)

static int cmp_counters(struct stream *s, const char *what, const struct rm_seq_counters *e, const struct mcount *m)
{
	CMP(requests, requests, "requests");
	CMP(skipped, skipped, "skipped");
	CMP(filled, filled, "filled");
	CMP(expired, expired, "expired");
	CMP(abandoned, abandoned, "abandoned");
	CMP(pending, pending, "pending");
	CMP(repeated, repeated, "repeated");
	CMP(unclassified_late, late, "unclassified_late");
	CMP(window, window, "window");
	CMP(epoch_gen, epoch_gen, "epoch_gen");
	CMP(first_ns, first_ns, "first_ns");
	CMP(last_ns, last_ns, "last_ns");
	CMP(flags, flags, "flags");
	return 1;
}

/* The seed's invariants on the engine's own numbers. */
static int check_invariants(struct stream *s, const char *what, const struct rm_seq_counters *k, int final)
{
	const char *bad = NULL;

	if (k->skipped != k->filled + k->expired + k->abandoned + k->pending)
		bad = "skipped != filled + expired + abandoned + pending";
	else if (k->window < 1 || k->window > WMAX)
		bad = "W outside 1..2^22";
	else if (k->pending > k->window - 1)
		bad = "pending > W - 1";
	else if (k->requests < 1 || k->repeated + k->unclassified_late + k->filled > k->requests - 1)
		bad = "repeated + unclassifiedLate + filled > requests - 1";
	else if (final && k->pending != 0)
		bad = "pending != 0 in a final snapshot";
	else if (!final && k->abandoned != 0)
		bad = "abandoned != 0 while active";
	else if (final && !(k->flags & FLAG_FINAL))
		bad = "final snapshot without finalEpoch";
	else if (!final && k->flags != 0)
		bad = "flags set while active";
	if (bad) {
		snprintf(s->why, sizeof(s->why), "%s: invariant violated: %s", what, bad);
		return 0;
	}
	return 1;
}

static void trace(struct stream *s, uint32_t w, uint32_t p, int r)
{
	struct rm_seq_counters now, *k = &now;

	rm_seq_snapshot(&s->st, &now);

	printf("# W=%u psn=%u -> %s req=%llu skp=%llu fil=%llu exp=%llu aba=%llu pen=%u rep=%llu late=%llu\n", w, p,
	       r == R_STARTED     ? "started"
	       : r == R_ACCOUNTED ? "accounted"
	       : r == R_RESTARTED ? "restarted"
				  : "error",
	       (unsigned long long)k->requests, (unsigned long long)k->skipped, (unsigned long long)k->filled,
	       (unsigned long long)k->expired, (unsigned long long)k->abandoned, k->pending,
	       (unsigned long long)k->repeated, (unsigned long long)k->unclassified_late);
}

/* Feed one request to both sides and compare; 0 on mismatch (s->why says what). */

/*
 * The window's own invariant (seqobs.h), against the model's SEEN set, and
 * the tier against the model's rule. Inline: bit k is 1 exactly for the
 * positions H - 63 + k that are SEEN or below L. Pooled: the ring has a bit
 * exactly for the SEEN positions of [max(L, B), H], the retained positions
 * below B are SEEN, and the two summary levels mark exactly the non-zero
 * words (checked for pool windows of up to 32 ring words). The pool holds
 * the windows the models say are taken, and every window it got back was
 * zero (seqpool.h).
 */
static int check_window(struct stream *s, const char *what)
{
	const struct rm_seq_state *st = &s->st;
	const struct model *m = &s->m;
	int pooled = rm_seq_pooled(st);
	uint64_t L, H, off;

	if (s->pool->bug) {
		snprintf(s->why, sizeof(s->why), "%s: pool: %s", what, s->pool->bug);
		return 0;
	}
	if (pooled != m->pooled) {
		snprintf(s->why, sizeof(s->why), "%s: tier engine=%s model=%s", what, pooled ? "pooled" : "inline",
			 m->pooled ? "pooled" : "inline");
		return 0;
	}
	if (s->pool->nfree != s->pool->n - (uint32_t)s->others_pooled - (uint32_t)m->pooled) {
		snprintf(s->why, sizeof(s->why), "%s: %u windows free in a pool of %u, the models hold %d", what,
			 s->pool->nfree, s->pool->n, s->others_pooled + m->pooled);
		return 0;
	}
	if (!rm_seq_active(st))
		return 1;
	L = rm_seq_low(st);
	H = st->high;
	off = m->H - H; /* model position = engine position + off */
	if (!pooled) {
		for (uint32_t k = 0; k < 64; k++) {
			uint64_t q = H - 63 + k;
			int want = H + k < 63 || q < L || pset_has(&m->seen, q + off);

			if ((int)((st->win >> k) & 1) != want) {
				snprintf(s->why, sizeof(s->why), "%s: inline bit %u (position H-%u) is %d, not %d",
					 what, k, 63 - k, (int)((st->win >> k) & 1), want);
				return 0;
			}
		}
		return 1;
	}
	{
		const __u64 *win = rm_pool_window(s->pool, (uint32_t)st->win);
		uint32_t nw = s->pool->nwords, n1 = RM_SUM1_WORDS(nw), n2 = RM_SUM2_WORDS(nw);
		uint64_t set = 0, seen = 0, b, from;

		if (!win) {
			snprintf(s->why, sizeof(s->why), "%s: pooled state names slot %u of %u", what,
				 (uint32_t)st->win, s->pool->n);
			return 0;
		}
		if (nw > 32)
			return 1;
		b = win[RM_POOL_BASE_WORD(nw)];
		for (uint32_t j = 0; j < nw; j++) {
			set += rm_popcount64(win[j]);
			if (!!(win[nw + j / 64] >> (j % 64) & 1) != (win[j] != 0)) {
				snprintf(s->why, sizeof(s->why), "%s: level-1 summary bit %u wrong", what, j);
				return 0;
			}
		}
		for (uint32_t k = 0; k < n1; k++)
			if (!!(win[nw + n1 + k / 64] >> (k % 64) & 1) != (win[nw + k] != 0) || n2 == 0) {
				snprintf(s->why, sizeof(s->why), "%s: level-2 summary bit %u wrong", what, k);
				return 0;
			}
		for (uint64_t q = L; q <= H && q < b; q++)
			if (!pset_has(&m->seen, q + off)) {
				snprintf(s->why, sizeof(s->why), "%s: position H-%llu below the base is not SEEN", what,
					 (unsigned long long)(H - q));
				return 0;
			}
		from = L > b ? L : b;
		for (uint64_t q = from; q <= H; q++) {
			int bit = (win[(q / 64) % nw] >> (q % 64)) & 1;

			seen += bit;
			if (bit != pset_has(&m->seen, q + off)) {
				snprintf(s->why, sizeof(s->why), "%s: ring bit of H-%llu is %d", what,
					 (unsigned long long)(H - q), bit);
				return 0;
			}
		}
		if (seen != set) {
			snprintf(s->why, sizeof(s->why),
				 "%s: %llu bits set in the ring, %llu of them in [max(L, B), H]", what,
				 (unsigned long long)set, (unsigned long long)seen);
			return 0;
		}
	}
	return 1;
}

static int step(struct stream *s, uint32_t w, uint32_t psn)
{
	struct rm_seq_counters eclosed, enow;
	struct mcount mclosed, mnow;
	int re, rm, ex_e, ex_m, avail;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->psn = realloc(s->psn, s->cap * sizeof(uint32_t));
		s->wins = realloc(s->wins, s->cap * sizeof(uint32_t));
		assert_non_null(s->psn);
		assert_non_null(s->wins);
	}
	s->psn[s->n] = psn;
	s->wins[s->n] = w;
	s->n++;
	s->now += rnd(&s->r, 3); /* equal arrival times happen too */

	memset(&eclosed, 0xee, sizeof(eclosed));
	s->pool->blocked = s->block_pm && (int)rnd(&s->r, 1000) < s->block_pm;
	avail = !s->pool->blocked && s->pool->n > (uint32_t)s->others_pooled;
	re = rm_pool_observe(s->pool, &s->st, w, psn, s->now, &eclosed, &ex_e);
	rm = model_observe(&s->m, w, psn, s->now, &mclosed, avail, &ex_m);
	if (s->verbose)
		trace(s, w, psn, re);
	if (s->m.bug) {
		snprintf(s->why, sizeof(s->why), "request %zu: %s", s->n, s->m.bug);
		return 0;
	}
	if (re != rm) {
		snprintf(s->why, sizeof(s->why),
			 "request %zu: result engine=%d model=%d (1 started, 2 accounted, 3 restarted)", s->n, re, rm);
		return 0;
	}
	if (ex_e != ex_m) {
		snprintf(s->why, sizeof(s->why), "request %zu: stateExhaustion engine=%d model=%d", s->n, ex_e, ex_m);
		return 0;
	}
	if (!rm_seq_active(&s->st)) {
		snprintf(s->why, sizeof(s->why), "request %zu: engine has no open epoch", s->n);
		return 0;
	}
	char what[64];

	g_stats.requests++;
	g_stats.started += re == R_STARTED;
	g_stats.restarted += re == R_RESTARTED;
	if (re == R_RESTARTED)
		stats_epoch(&mclosed);
	rm_seq_snapshot(&s->st, &enow);
	if (enow.pending > g_stats.max_pending)
		g_stats.max_pending = enow.pending;
	if (re == R_RESTARTED) {
		snprintf(what, sizeof(what), "request %zu final snapshot", s->n);
		if (!cmp_counters(s, what, &eclosed, &mclosed) || !check_invariants(s, what, &eclosed, 1))
			return 0;
	}
	snprintf(what, sizeof(what), "request %zu", s->n);
	model_snapshot(&s->m, 0, &mnow);
	if (!cmp_counters(s, what, &enow, &mnow) || !check_invariants(s, what, &enow, 0))
		return 0;
	/* H mod M is the highest PSN (seqobs.h's documented state). */
	if ((s->st.high & (M - 1)) != (s->m.H & (M - 1))) {
		snprintf(s->why, sizeof(s->why), "request %zu: H mod M engine=%llu model=%llu", s->n,
			 (unsigned long long)(s->st.high & (M - 1)), (unsigned long long)(s->m.H & (M - 1)));
		return 0;
	}
	return check_window(s, what);
}

/* Close on both sides (closure reason given) and compare the final snapshots. */
static int close_both(struct stream *s, uint16_t reason)
{
	struct rm_seq_counters efin;
	struct mcount mfin;
	uint64_t pending_before = pset_size(&s->m.pending);
	uint64_t abandoned_before = s->m.abandoned;
	int ce = rm_pool_close(s->pool, &s->st, reason, &efin);
	int cm = model_close(&s->m, reason, &mfin);
	char what[64];

	snprintf(what, sizeof(what), "close after request %zu", s->n);
	if (ce != cm) {
		snprintf(s->why, sizeof(s->why), "%s: rm_seq_close returned %d, model %d", what, ce, cm);
		return 0;
	}
	if (!ce)
		return 1;
	if (mfin.pending != 0 || mfin.abandoned != abandoned_before + pending_before) {
		snprintf(s->why, sizeof(s->why), "%s: model closure arithmetic", what);
		return 0;
	}
	g_stats.closes++;
	stats_epoch(&mfin);
	if (!cmp_counters(s, what, &efin, &mfin) || !check_invariants(s, what, &efin, 1))
		return 0;
	if (rm_seq_active(&s->st)) {
		snprintf(s->why, sizeof(s->why), "%s: engine still active", what);
		return 0;
	}
	return check_window(s, what);
}

/* Runs at the end of a stream: final close, report, free. Returns 1 if all matched. */
static int stream_finish(struct stream *s, int ok)
{
	if (ok)
		ok = close_both(s, 0);
	if (!ok)
		stream_report(s);
	stream_free(s);
	return ok;
}

/* ------------------------------------------------------------------ */
/* Stream families. */

static const uint32_t W_LIST[] = { 1, 2, 3, 63, 64, 65, 100, 1024 };
#define N_W_LIST (sizeof(W_LIST) / sizeof(W_LIST[0]))

static uint32_t pick_small_w(struct rng *r)
{
	if (rnd(r, 10) < 7)
		return W_LIST[rnd(r, N_W_LIST)];
	return (uint32_t)rnd_range(r, 1, 300);
}

static uint32_t pick_start(struct rng *r, uint32_t w)
{
	switch (rnd(r, 10)) {
	case 0:
	case 1:
		return 0;
	case 2:
	case 3:
		/* near 16777215: the first window wraps */
		return (uint32_t)((M - 1 - rnd(r, (uint64_t)w + 8)) & (M - 1));
	case 4:
		return (uint32_t)((HALF - 1 - rnd(r, 4)) & (M - 1));
	default:
		return (uint32_t)rnd(r, M);
	}
}

#define PSN(x) ((uint32_t)((uint64_t)(x) & (M - 1)))

/*
 * Next PSN of a random walk around a front f (the generator's own idea of
 * the newest PSN; it does not look at the engine). recent[] holds the last
 * PSNs sent, for duplicates.
 */
struct walk {
	uint64_t f; /* front, kept modulo M when used */
	uint32_t recent[32];
	unsigned nrecent;
};

static uint32_t walk_next(struct rng *r, struct walk *g, uint32_t w)
{
	uint64_t k = rnd(r, 1000);
	uint64_t p;

	if (k < 380) { /* in order */
		p = ++g->f;
	} else if (k < 500) { /* forward gap, d in 2..W */
		g->f += rnd_range(r, 1, w > 1 ? w : 1);
		p = g->f;
	} else if (k < 540) { /* edges: d = W - 1, W, W + 1 */
		g->f += (uint64_t)w - 1 + rnd(r, 3);
		p = g->f;
	} else if (k < 560) { /* beyond W */
		g->f += (uint64_t)w + 1 + rnd(r, 3 * (uint64_t)w + 100);
		p = g->f;
	} else if (k < 720) { /* reordered / late within about a window */
		p = g->f + M - rnd(r, (uint64_t)w + 3);
	} else if (k < 850) { /* duplicate of a recent PSN */
		p = g->nrecent ? g->recent[rnd(r, g->nrecent < 32 ? g->nrecent : 32)] : g->f;
	} else if (k < 900) { /* very late */
		p = g->f + M - rnd_range(r, w, HALF - 1);
	} else if (k < 915) { /* exactly 2^23 away */
		p = g->f + HALF;
		if (rnd(r, 2))
			g->f = p;
	} else if (k < 930) { /* just inside the serial boundary on either side */
		p = g->f + (rnd(r, 2) ? HALF - 1 : HALF + 1);
	} else if (k < 940) { /* anywhere */
		p = rnd(r, M);
		if (rnd(r, 2))
			g->f = p;
	} else if (k < 960) { /* back to the start of the ring, then onward */
		g->f = rnd(r, 2) ? 0 : M - 1 - rnd(r, 4);
		p = g->f;
	} else { /* in order after a short burst */
		p = ++g->f;
	}
	g->f &= M - 1;
	g->recent[g->nrecent++ % 32] = PSN(p);
	return PSN(p);
}

static uint64_t base_seed(void)
{
	const char *e = getenv("RM_SEQOBS_SEED");

	return e ? strtoull(e, NULL, 0) : 0x5eed000bd5eed000ULL;
}

/* Returns 1 and sets *seed when RM_SEQOBS_REPLAY names this family. */
static int replay_of(const char *family, uint64_t *seed, int *other)
{
	const char *e = getenv("RM_SEQOBS_REPLAY");
	size_t n = strlen(family);

	*other = 0;
	if (!e)
		return 0;
	if (strncmp(e, family, n) != 0 || e[n] != ':') {
		*other = 1;
		return 0;
	}
	*seed = strtoull(e + n + 1, NULL, 0);
	return 1;
}

static uint64_t stream_seed(uint64_t family_id, uint64_t i)
{
	uint64_t x = base_seed() ^ (family_id << 56) ^ (i * 0x100000001b3ULL);

	return splitmix64(&x);
}

typedef int (*stream_fn)(uint64_t seed, int verbose);

static void run_family(const char *family, uint64_t family_id, uint64_t count, stream_fn fn)
{
	uint64_t seed;
	int other;
	uint64_t failed = 0;

	if (replay_of(family, &seed, &other)) {
		assert_true(fn(seed, 1));
		return;
	}
	if (other)
		skip();
	memset(&g_stats, 0, sizeof(g_stats));
	memset(&g_tiers, 0, sizeof(g_tiers));
	g_stats.streams = count;
	for (uint64_t i = 0; i < count; i++) {
		if (!fn(stream_seed(family_id, i), 0) && ++failed >= 3)
			break; /* a few replayable examples are enough */
	}
	if (failed)
		fail_msg("%llu stream(s) of family %s disagree (see MISMATCH lines above)", (unsigned long long)failed,
			 family);
	printf("# %s: %llu streams, %llu requests, %llu started, %llu restarted, %llu closed; "
	       "skipped %llu filled %llu expired %llu abandoned %llu repeated %llu late %llu; max pending %llu\n",
	       family, (unsigned long long)g_stats.streams, (unsigned long long)g_stats.requests,
	       (unsigned long long)g_stats.started, (unsigned long long)g_stats.restarted,
	       (unsigned long long)g_stats.closes, (unsigned long long)g_stats.skipped,
	       (unsigned long long)g_stats.filled, (unsigned long long)g_stats.expired,
	       (unsigned long long)g_stats.abandoned, (unsigned long long)g_stats.repeated,
	       (unsigned long long)g_stats.late, (unsigned long long)g_stats.max_pending);
	/* A generator that stopped producing some transition would make the
	 * comparison vacuous for it: every family must reach every row. */
	assert_true(g_stats.restarted > 0);
	assert_true(g_stats.skipped > 0);
	assert_true(g_stats.filled > 0);
	assert_true(g_stats.expired > 0);
	assert_true(g_stats.abandoned > 0);
	assert_true(g_stats.repeated > 0);
	assert_true(g_stats.late > 0);
	/* ... and every transition between the tiers */
	printf("# %s tiers: window taken %llu, given back when the last pending position was filled %llu, "
	       "expired %llu, at closure %llu; closed for want of a window %llu\n",
	       family, (unsigned long long)g_tiers.take, (unsigned long long)g_tiers.back_fill,
	       (unsigned long long)g_tiers.back_expire, (unsigned long long)g_tiers.back_close,
	       (unsigned long long)g_tiers.exhaust);
	assert_true(g_tiers.take > 0);
	assert_true(g_tiers.back_close > 0);
	assert_true(g_tiers.exhaust > 0);
	if (!strcmp(family, "tiers")) {
		assert_true(g_tiers.back_fill > 0);
		assert_true(g_tiers.back_expire > 0);
	}
}

/* Family "walk": random walks with small W, occasional closure in the middle. */
static int stream_walk(uint64_t seed, int verbose)
{
	struct stream s;
	struct rng r0;
	uint32_t w, len, nwords;
	struct walk g = { 0 };
	int ok = 1;

	rng_seed(&r0, seed ^ 0x77);
	w = pick_small_w(&r0);
	nwords = RM_WINDOW_WORDS(w) + (uint32_t)(rnd(&r0, 4) == 0 ? rnd_range(&r0, 1, 3) : 0);
	stream_init(&s, "walk", seed, nwords, verbose);
	s.w0 = w;
	len = (uint32_t)(rnd(&r0, 8) == 0 ? rnd_range(&r0, 1, 6) : rnd_range(&r0, 10, 160));
	g.f = pick_start(&r0, w);
	g.recent[g.nrecent++] = (uint32_t)g.f;
	for (uint32_t i = 0; ok && i < len; i++) {
		uint32_t p = i == 0 ? (uint32_t)g.f : walk_next(&s.r, &g, w);

		ok = step(&s, w, p);
		if (ok && rnd(&s.r, 200) == 0) /* e.g. a capture fault */
			ok = close_both(&s, FLAG_CAPTURE);
	}
	return stream_finish(&s, ok);
}

/*
 * Family "reorder": an in-order run with losses, then local displacement
 * (each packet swapped with one up to k places later) and duplicates.
 */
static int stream_reorder(uint64_t seed, int verbose)
{
	struct stream s;
	struct rng r0;
	uint32_t w, len, k, start, *seq, n = 0;
	uint32_t loss_pm, dup_pm;
	int ok = 1;

	rng_seed(&r0, seed ^ 0x99);
	w = pick_small_w(&r0);
	stream_init(&s, "reorder", seed, RM_WINDOW_WORDS(w), verbose);
	s.w0 = w;
	len = (uint32_t)rnd_range(&r0, 5, 200);
	start = pick_start(&r0, w);
	loss_pm = (uint32_t)(const uint32_t[]){ 0, 20, 100, 400 }[rnd(&r0, 4)];
	dup_pm = (uint32_t)(const uint32_t[]){ 0, 30, 150 }[rnd(&r0, 3)];
	k = (uint32_t)rnd_range(&r0, 1, w + 4 < 40 ? w + 4 : 40);
	seq = malloc(2 * (size_t)len * sizeof(uint32_t));
	assert_non_null(seq);
	for (uint32_t i = 0, psn = start; n < len; psn = PSN(psn + 1)) {
		if (i++ > 0 && rnd(&r0, 1000) < loss_pm)
			continue; /* lost before the meter */
		seq[n++] = psn;
	}
	for (uint32_t i = 1; i < n; i++) { /* keep the first packet first: S is the start */
		uint32_t j = i + (uint32_t)rnd(&r0, k + 1);

		if (j < n) {
			uint32_t t = seq[i];

			seq[i] = seq[j];
			seq[j] = t;
		}
	}
	for (uint32_t i = 0; ok && i < n; i++) {
		ok = step(&s, w, seq[i]);
		if (ok && rnd(&r0, 1000) < dup_pm)
			ok = step(&s, w, seq[i - (uint32_t)rnd(&r0, i + 1 < 5 ? i + 1 : 5)]);
	}
	free(seq);
	return stream_finish(&s, ok);
}

/* Family "serial": wrap around 2^24 and the ambiguous distance 2^23. */
static int stream_serial(uint64_t seed, int verbose)
{
	struct stream s;
	struct rng r0;
	uint32_t w, len;
	uint64_t f;
	int ok = 1;

	rng_seed(&r0, seed ^ 0x55);
	w = W_LIST[rnd(&r0, N_W_LIST)];
	stream_init(&s, "serial", seed, RM_WINDOW_WORDS(w), verbose);
	s.w0 = w;
	len = (uint32_t)rnd_range(&r0, 2, 60);
	switch (rnd(&r0, 4)) {
	case 0:
		f = 0;
		break;
	case 1:
		f = M - 1;
		break;
	case 2:
		f = M - 1 - rnd(&r0, (uint64_t)w + 2);
		break;
	default:
		f = HALF - rnd(&r0, 3);
		break;
	}
	for (uint32_t i = 0; ok && i < len; i++) {
		uint64_t p;

		switch (i == 0 ? 99 : rnd(&r0, 12)) {
		case 0:
			p = f + HALF;
			f = p;
			break; /* ambiguous forward */
		case 1:
			p = f + M - HALF;
			break; /* ambiguous, same residue */
		case 2:
			p = f + HALF - 1;
			break; /* forward by 2^23 - 1 (> W) */
		case 3:
			p = f + HALF + 1;
			break; /* backward by 2^23 - 1: late */
		case 4:
			f += w;
			p = f;
			break; /* d = W */
		case 5:
			f += (uint64_t)w + 1;
			p = f;
			break; /* d = W + 1 */
		case 6:
			p = f + M - rnd(&r0, (uint64_t)w + 2);
			break;
		case 7:
			f += rnd_range(&r0, 1, w);
			p = f;
			break;
		default:
			p = ++f;
			break;
		}
		f &= M - 1;
		ok = step(&s, w, PSN(p));
	}
	return stream_finish(&s, ok);
}

/* Family "large": W up to 2^22, short streams, jumps up to and beyond W. */
static int stream_large(uint64_t seed, int verbose)
{
	static const uint32_t LW[] = { 1u << 22, (1u << 22) - 1, (1u << 21) + 1, 1u << 20, 100000 };
	struct stream s;
	struct rng r0;
	uint32_t w, len;
	uint64_t f;
	int ok = 1;

	rng_seed(&r0, seed ^ 0x33);
	w = LW[rnd(&r0, 5)];
	stream_init(&s, "large", seed, RM_WINDOW_WORDS(WMAX), verbose);
	s.w0 = w;
	len = (uint32_t)rnd_range(&r0, 5, 30);
	f = pick_start(&r0, w);
	for (uint32_t i = 0; ok && i < len; i++) {
		uint64_t p;

		switch (i == 0 ? 99 : rnd(&r0, 12)) {
		case 0:
			f += rnd_range(&r0, 1, w);
			p = f;
			break;
		case 1:
			f += w - rnd(&r0, 2);
			p = f;
			break; /* d = W - 1, W */
		case 2:
			f += (uint64_t)w + 1 + rnd(&r0, 1000);
			p = f;
			break;
		case 3:
			p = f + M - rnd(&r0, (uint64_t)w + 64);
			break; /* back, around L */
		case 4:
			p = f + M - ((uint64_t)w - 1 - rnd(&r0, 2));
			break; /* exactly at L or L+1 */
		case 5:
			p = f + M - rnd(&r0, 64);
			break;
		case 6:
			p = f + HALF;
			break;
		case 7:
			f += rnd_range(&r0, 1, 200);
			p = f;
			break;
		default:
			p = ++f;
			break;
		}
		f &= M - 1;
		ok = step(&s, w, PSN(p));
		if (ok && i + 1 < len && rnd(&r0, 20) == 0)
			ok = close_both(&s, FLAG_CAPTURE);
	}
	return stream_finish(&s, ok);
}

/* Family "wchange": the configured W changes mid-stream; an open epoch keeps its own. */
static int stream_wchange(uint64_t seed, int verbose)
{
	struct stream s;
	struct rng r0;
	uint32_t w, len;
	struct walk g = { 0 };
	int ok = 1;

	rng_seed(&r0, seed ^ 0x11);
	w = W_LIST[rnd(&r0, N_W_LIST)];
	stream_init(&s, "wchange", seed, RM_WINDOW_WORDS(1024), verbose);
	s.w0 = w;
	s.varying_w = 1;
	len = (uint32_t)rnd_range(&r0, 10, 150);
	g.f = pick_start(&r0, w);
	for (uint32_t i = 0; ok && i < len; i++) {
		uint32_t p;

		if (rnd(&r0, 10) == 0)
			w = W_LIST[rnd(&r0, N_W_LIST)];
		p = i == 0 ? (uint32_t)g.f : walk_next(&s.r, &g, w);
		ok = step(&s, w, p);
		if (ok && rnd(&r0, 50) == 0)
			ok = close_both(&s, FLAG_CAPTURE);
	}
	return stream_finish(&s, ok);
}

/*
 * Family "shared": 2 to 6 connections, interleaved, share a pool of 0 to 3
 * windows, so that a window one gives back is the next one's, and the pool
 * runs out while others hold its windows. One stream per connection, on
 * the same pool; each model is told whether the pool has a window left by
 * the other models' tiers, not by the engine.
 */
static int stream_shared(uint64_t seed, int verbose)
{
	static const uint32_t SW[] = { 65, 100, 128, 300, 1024 };
	struct stream s[6];
	struct walk g[6];
	struct rm_pool pool;
	struct rng r0;
	uint32_t w, k, len;
	int ok = 1;

	rng_seed(&r0, seed ^ 0x66);
	k = (uint32_t)rnd_range(&r0, 2, 6);
	w = SW[rnd(&r0, 5)];
	rm_pool_init(&pool, RM_WINDOW_WORDS(w), (uint32_t)rnd(&r0, 4));
	for (uint32_t i = 0; i < k; i++) {
		stream_init_pool(&s[i], "shared", seed, RM_WINDOW_WORDS(w), verbose, &pool);
		rng_seed(&s[i].r, seed + i);
		s[i].w0 = w;
		memset(&g[i], 0, sizeof(g[i]));
		g[i].f = pick_start(&r0, w);
		g[i].recent[g[i].nrecent++] = (uint32_t)g[i].f;
	}
	len = (uint32_t)rnd_range(&r0, 40, 400);
	for (uint32_t n = 0; ok && n < len; n++) {
		uint32_t i = (uint32_t)rnd(&r0, k), p;
		int held = 0;

		for (uint32_t j = 0; j < k; j++)
			held += j != i && s[j].m.pooled;
		s[i].others_pooled = held;
		p = s[i].n == 0 ? (uint32_t)g[i].f : walk_next(&s[i].r, &g[i], w);
		ok = step(&s[i], w, p);
		if (ok && rnd(&r0, 100) == 0)
			ok = close_both(&s[i], FLAG_CAPTURE);
		if (!ok)
			stream_report(&s[i]);
	}
	for (uint32_t i = 0; i < k; i++) {
		int held = 0;

		for (uint32_t j = 0; j < k; j++)
			held += j != i && s[j].m.pooled;
		s[i].others_pooled = held;
		if (ok)
			ok = close_both(&s[i], 0);
		if (!ok && i + 1 == k)
			stream_report(&s[i]);
		stream_free(&s[i]);
	}
	if (ok && pool.nfree != pool.n)
		ok = 0, fprintf(stderr, "# MISMATCH family=shared seed=0x%016llx: %u of %u windows back in the pool\n",
				(unsigned long long)seed, pool.nfree, pool.n);
	rm_pool_free(&pool);
	return ok;
}

/*
 * Family "tiers": what moves an epoch between its tiers. In-order runs
 * with losses (a gap), the lost positions filled later (a retransmission:
 * the window goes back when the last one is filled) or left to expire
 * (runs longer than W: back when the last one leaves), jumps of 65..W
 * (taken at once), duplicates and late requests, W from 65 to 1024.
 */
static int stream_tiers(uint64_t seed, int verbose)
{
	static const uint32_t TW[] = { 65, 66, 100, 128, 300, 1024 };
	struct stream s;
	struct rng r0;
	uint32_t w, len, lost[64], nlost = 0;
	uint64_t f;
	int ok = 1;

	rng_seed(&r0, seed ^ 0x44);
	w = TW[rnd(&r0, 6)];
	stream_init(&s, "tiers", seed, RM_WINDOW_WORDS(w), verbose);
	s.w0 = w;
	len = (uint32_t)rnd_range(&r0, 20, 120);
	f = pick_start(&r0, w);
	ok = step(&s, w, PSN(f));
	for (uint32_t i = 0; ok && i < len; i++) {
		uint64_t k = rnd(&r0, 100), d;

		if (k < 55) { /* in order */
			ok = step(&s, w, PSN(++f));
		} else if (k < 65) { /* a loss: the next PSN(s) go missing */
			d = rnd_range(&r0, 2, 4);
			for (uint64_t q = 1; q < d && nlost < 64; q++)
				lost[nlost++] = PSN(f + q);
			f += d;
			ok = step(&s, w, PSN(f));
		} else if (k < 75) { /* a retransmission fills the oldest loss */
			if (nlost) {
				ok = step(&s, w, lost[0]);
				memmove(lost, lost + 1, --nlost * sizeof(lost[0]));
			}
		} else if (k < 81 && w > 66) {
			/* every loss filled, one more lost, found again only after
			 * 64 .. W - 2 more requests: the window is taken, then given
			 * back by the fill */
			for (uint32_t q = 0; ok && q < nlost; q++)
				ok = step(&s, w, lost[q]);
			nlost = 0;
			f += 2;
			lost[0] = PSN(f - 1);
			for (uint64_t q = rnd_range(&r0, 64, w - 2); ok && q; q--)
				ok = step(&s, w, PSN(f++));
			if (ok)
				ok = step(&s, w, lost[0]);
			f--;
		} else if (k < 83) { /* a run longer than W: every loss expires */
			for (uint32_t q = 0; ok && q < w + 2; q++)
				ok = step(&s, w, PSN(++f));
			nlost = 0;
		} else if (k < 90) { /* a jump past the inline window */
			f += rnd_range(&r0, 65 < w ? 65 : w, w);
			nlost = 0;
			ok = step(&s, w, PSN(f));
		} else if (k < 96) { /* a duplicate */
			ok = step(&s, w, PSN(f - rnd(&r0, 3)));
		} else { /* late */
			ok = step(&s, w, PSN(f - w - rnd(&r0, 5)));
		}
	}
	return stream_finish(&s, ok);
}

#define N_TIERS   800
#define N_SHARED  5000
#define N_WALK    60000
#define N_REORDER 25000
#define N_SERIAL  10000
#define N_WCHANGE 5000
#define N_LARGE   64

static void family_walk(void **st)
{
	run_family("walk", 1, N_WALK, stream_walk);
}

static void family_reorder(void **st)
{
	run_family("reorder", 2, N_REORDER, stream_reorder);
}

static void family_serial(void **st)
{
	run_family("serial", 3, N_SERIAL, stream_serial);
}

static void family_wchange(void **st)
{
	run_family("wchange", 4, N_WCHANGE, stream_wchange);
}

static void family_large(void **st)
{
	run_family("large", 5, N_LARGE, stream_large);
}

static void family_tiers(void **st)
{
	run_family("tiers", 7, N_TIERS, stream_tiers);
}

static void family_shared(void **st)
{
	run_family("shared", 6, N_SHARED, stream_shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(family_walk),    cmocka_unit_test(family_reorder), cmocka_unit_test(family_serial),
		cmocka_unit_test(family_wchange), cmocka_unit_test(family_large),   cmocka_unit_test(family_tiers),
		cmocka_unit_test(family_shared),
	};

	return cmocka_run_group_tests_name("seqobs_random", tests, NULL, NULL);
}
