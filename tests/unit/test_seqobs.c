// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_seqobs.c - the engine (include/rocemeter/seqobs.h) against [SEQOBS]:
 * every verification example verbatim, each transition row on its own,
 * boundaries of d and W, PSN wrap. (The counter-exhaustion path is in
 * test_seqobs_limit.c, built with a lowered RM_COUNTER_MAX.)
 * Expected values come from [SEQOBS]'s text, not from the engine.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rocemeter/seqobs.h"
#include "seqpool.h"

struct ctx {
	struct rm_seq_state st;
	struct rm_pool pool; /* one window: enough for one context */
	struct rm_seq_counters snap;
	uint32_t w;
	struct rm_seq_counters closed; /* last final snapshot from a restart */
	int restarts;
};

static void ctx_init(struct ctx *c, uint32_t w)
{
	memset(c, 0, sizeof(*c));
	c->w = w;
	rm_pool_init(&c->pool, RM_WINDOW_WORDS(w), 1);
}

/* The counters now (rm_seq_snapshot()). */
static const struct rm_seq_counters *cur(struct ctx *c)
{
	rm_seq_snapshot(&c->st, &c->snap);
	return &c->snap;
}

static void ctx_free(struct ctx *c)
{
	assert_null(c->pool.bug);
	rm_pool_free(&c->pool);
}

static int feed(struct ctx *c, uint32_t psn)
{
	int exhausted;
	int r = rm_pool_observe(&c->pool, &c->st, c->w, psn, 1000 + c->st.requests, &c->closed, &exhausted);

	assert_true(r > 0);
	if (r == RM_SEQ_RESTARTED)
		c->restarts++;
	return r;
}

/* The invariants of [SEQOBS] that hold at every snapshot. */
static void check_invariants(const struct rm_seq_counters *k, int final)
{
	assert_true(k->skipped == k->filled + k->expired + k->abandoned + k->pending);
	assert_true(k->pending <= k->window - 1);
	assert_true(k->repeated + k->unclassified_late + k->filled <= k->requests - 1);
	if (final)
		assert_int_equal(k->pending, 0);
	else
		assert_int_equal(k->abandoned, 0);
}

#define EXPECT(k, req, skp, fil, exp, aba, pen, rep, late)        \
	do {                                                      \
		assert_int_equal((k)->requests, (req));           \
		assert_int_equal((k)->skipped, (skp));            \
		assert_int_equal((k)->filled, (fil));             \
		assert_int_equal((k)->expired, (exp));            \
		assert_int_equal((k)->abandoned, (aba));          \
		assert_int_equal((k)->pending, (pen));            \
		assert_int_equal((k)->repeated, (rep));           \
		assert_int_equal((k)->unclassified_late, (late)); \
	} while (0)

static void feed_all(struct ctx *c, const uint32_t *psn, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		feed(c, psn[i]);
		check_invariants(cur(c), 0);
	}
}

/* "With W=4 and PSNs 100,102,101,103,102: requests=5, skipped=1, filled=1,
 * repeated=1, pending=expired=abandoned=unclassifiedLate=0." */
static void seed_example_1(void **s)
{
	struct ctx c;
	const uint32_t p[] = { 100, 102, 101, 103, 102 };

	ctx_init(&c, 4);
	feed_all(&c, p, 5);
	EXPECT(cur(&c), 5, 1, 1, 0, 0, 0, 1, 0);
	ctx_free(&c);
}

/* "With W=4 and PSNs 100,99,100 ... requests=3, unclassifiedLate=1,
 * repeated=1, skipped=filled=pending=0." */
static void seed_example_2(void **s)
{
	struct ctx c;
	const uint32_t p[] = { 100, 99, 100 };

	ctx_init(&c, 4);
	feed_all(&c, p, 3);
	EXPECT(cur(&c), 3, 0, 0, 0, 0, 0, 1, 1);
	ctx_free(&c);
}

/* "With W=4 and PSNs 100,102,106: skipped=4, expired=1, pending=3. Closing
 * produces abandoned=3 and pending=0. A later packet cannot fill the closed
 * result." */
static void seed_example_3(void **s)
{
	struct ctx c;
	struct rm_seq_counters fin = { 0 };
	const uint32_t p[] = { 100, 102, 106 };

	ctx_init(&c, 4);
	feed_all(&c, p, 3);
	EXPECT(cur(&c), 3, 4, 0, 1, 0, 3, 0, 0);
	assert_int_equal(rm_pool_close(&c.pool, &c.st, 0, &fin), 1);
	EXPECT(&fin, 3, 4, 0, 1, 3, 0, 0, 0);
	assert_int_equal(fin.flags, RM_FLAG_FINAL_EPOCH);
	check_invariants(&fin, 1);
	/* A later packet starts a new epoch; the closed result is unchanged. */
	assert_int_equal(feed(&c, 105), RM_SEQ_STARTED);
	EXPECT(&fin, 3, 4, 0, 1, 3, 0, 0, 0);
	EXPECT(cur(&c), 1, 0, 0, 0, 0, 0, 0, 0);
	assert_int_equal(cur(&c)->epoch_gen, 2);
	ctx_free(&c);
}

/* "PSNs 16777214,16777215,0,1 advance continuously with no skipped positions." */
static void seed_example_wrap(void **s)
{
	struct ctx c;
	const uint32_t p[] = { 16777214, 16777215, 0, 1 };

	ctx_init(&c, 4);
	feed_all(&c, p, 4);
	EXPECT(cur(&c), 4, 0, 0, 0, 0, 0, 0, 0);
	assert_int_equal(c.restarts, 0);
	ctx_free(&c);
}

/* "A jump of 2^23 closes as ambiguous." Forward and backward are the same
 * residue; both directions close with serialDiscontinuity and count the
 * request once, in the new epoch. */
static void jump_half(uint32_t first, uint32_t second)
{
	struct ctx c;

	ctx_init(&c, 1024);
	feed(&c, first);
	feed(&c, first + 1);
	assert_int_equal(feed(&c, second), RM_SEQ_RESTARTED);
	assert_int_equal(c.closed.flags, RM_FLAG_FINAL_EPOCH | RM_FLAG_SERIAL_DISCONTINUITY);
	EXPECT(&c.closed, 2, 0, 0, 0, 0, 0, 0, 0);
	EXPECT(cur(&c), 1, 0, 0, 0, 0, 0, 0, 0);
	assert_int_equal(c.st.high & RM_PSN_MASK, second & RM_PSN_MASK);
	ctx_free(&c);
}

static void seed_example_half_forward(void **s)
{
	jump_half(1000, 1001 + (1u << 23));
}

static void seed_example_half_backward(void **s)
{
	jump_half(9000000, (9000001 - (1u << 23)) & RM_PSN_MASK);
}

/* "With W=1, any forward advance greater than one starts a fresh epoch; no
 * pending positions exist." */
static void seed_example_w1(void **s)
{
	struct ctx c;

	ctx_init(&c, 1);
	feed(&c, 10);
	feed(&c, 11);
	EXPECT(cur(&c), 2, 0, 0, 0, 0, 0, 0, 0);
	assert_int_equal(feed(&c, 13), RM_SEQ_RESTARTED);
	assert_int_equal(c.closed.flags, RM_FLAG_FINAL_EPOCH | RM_FLAG_SERIAL_DISCONTINUITY);
	EXPECT(&c.closed, 2, 0, 0, 0, 0, 0, 0, 0);
	EXPECT(cur(&c), 1, 0, 0, 0, 0, 0, 0, 0);
	feed(&c, 13); /* repeat of H */
	feed(&c, 12); /* before L = H */
	EXPECT(cur(&c), 3, 0, 0, 0, 0, 0, 1, 1);
	ctx_free(&c);
}

/* Row "No active epoch"; PSN 0 is a valid first PSN. */
static void row_first_request_psn0(void **s)
{
	struct ctx c;

	ctx_init(&c, 8);
	assert_int_equal(feed(&c, 0), RM_SEQ_STARTED);
	EXPECT(cur(&c), 1, 0, 0, 0, 0, 0, 0, 0);
	assert_int_equal(rm_seq_s(&c.st), 0);
	assert_int_equal(c.st.high, 0);
	assert_int_equal(cur(&c)->window, 8);
	feed(&c, 1);
	feed(&c, 0);
	EXPECT(cur(&c), 3, 0, 0, 0, 0, 0, 1, 0);
	/* 16777215 is before S = 0: unclassified, not a wrap to the far end. */
	feed(&c, 16777215);
	EXPECT(cur(&c), 4, 0, 0, 0, 0, 0, 1, 1);
	ctx_free(&c);
}

/* Row "1<=d<=W" at its edges: d = W is accounted, d = W + 1 closes. */
static void row_forward_edges(void **s)
{
	struct ctx c;

	ctx_init(&c, 16);
	feed(&c, 500);
	assert_int_equal(feed(&c, 516), RM_SEQ_ACCOUNTED); /* d = W */
	EXPECT(cur(&c), 2, 15, 0, 0, 0, 15, 0, 0);
	assert_int_equal(feed(&c, 533), RM_SEQ_RESTARTED); /* d = W + 1 */
	EXPECT(&c.closed, 2, 15, 0, 0, 15, 0, 0, 0);
	assert_int_equal(c.closed.flags, RM_FLAG_FINAL_EPOCH | RM_FLAG_SERIAL_DISCONTINUITY);
	check_invariants(&c.closed, 1);
	ctx_free(&c);
}

/* Rows "d<=0 onto PENDING" (filled once), "onto SEEN" (repeated),
 * "before L" (unclassifiedLate, state unchanged). */
static void row_backward(void **s)
{
	struct ctx c;

	ctx_init(&c, 8);
	feed(&c, 100);
	feed(&c, 105); /* 101..104 pending */
	EXPECT(cur(&c), 2, 4, 0, 0, 0, 4, 0, 0);
	feed(&c, 103); /* fill */
	feed(&c, 103); /* now SEEN: repeated */
	EXPECT(cur(&c), 4, 4, 1, 0, 0, 3, 1, 0);
	feed(&c, 110); /* L = 103: 101, 102 expire; 106..109 pending */
	EXPECT(cur(&c), 5, 8, 1, 2, 0, 5, 1, 0);
	feed(&c, 101); /* before L: late, no fill */
	feed(&c, 102);
	EXPECT(cur(&c), 7, 8, 1, 2, 0, 5, 1, 2);
	assert_int_equal(c.st.high, 110);
	feed(&c, 104); /* still retained and pending */
	EXPECT(cur(&c), 8, 8, 2, 2, 0, 4, 1, 2);
	ctx_free(&c);
}

/* W = 2^22: jumps of W - 1 and W are accounted, with expiry of whole windows. */
static void big_window_jumps(void **s)
{
	struct ctx c;
	const uint32_t w = RM_WINDOW_MAX;

	ctx_init(&c, w);
	feed(&c, 7);
	feed(&c, 7 + (w - 1)); /* d = W - 1 */
	EXPECT(cur(&c), 2, w - 2, 0, 0, 0, w - 2, 0, 0);
	feed(&c, 7 + (w - 1) + w); /* d = W: everything before H+1 leaves */
	EXPECT(cur(&c), 3, (w - 2) + (w - 1), 0, w - 2, 0, w - 1, 0, 0);
	check_invariants(cur(&c), 0);
	feed(&c, 7 + (w - 1)); /* old H, now before L = 7 + W: late */
	EXPECT(cur(&c), 4, (w - 2) + (w - 1), 0, w - 2, 0, w - 1, 0, 1);
	feed(&c, 7 + w);               /* L itself: retained and pending */
	feed(&c, 7 + (w - 1) + w - 1); /* H - 1: pending */
	EXPECT(cur(&c), 6, (w - 2) + (w - 1), 2, w - 2, 0, w - 3, 0, 1);
	ctx_free(&c);
}

/* Windows whose W is not a multiple of 64: the ring has spare bits. */
static void odd_window(void **s)
{
	struct ctx c;

	ctx_init(&c, 100);
	feed(&c, 0);
	for (uint32_t p = 2; p < 1000; p += 2)
		feed(&c, p); /* every odd position pending */
	/* positions 1..997 odd: 499 skipped; retained [899, 998] has 50 odd */
	EXPECT(cur(&c), 500, 499, 0, 449, 0, 50, 0, 0);
	feed(&c, 899); /* L = 899: oldest retained, pending */
	feed(&c, 897); /* before L */
	EXPECT(cur(&c), 502, 499, 1, 449, 0, 49, 0, 1);
	ctx_free(&c);
}

/* One request at a given arrival time. */
static int observe_at(struct ctx *c, uint32_t psn, uint64_t now)
{
	int exhausted;

	return rm_pool_observe(&c->pool, &c->st, c->w, psn, now, &c->closed, &exhausted);
}

/* Bad arguments change nothing. */
static void bad_window(void **s)
{
	struct ctx c;

	ctx_init(&c, 64);
	{
		struct rm_seq_win w = { .pool = c.pool.win[0] };

		assert_true(rm_seq_observe(&c.st, &w, c.pool.nwords, 65, 1, 0, NULL, &c.pool.sc) < 0);
		assert_true(rm_seq_observe(&c.st, &w, c.pool.nwords, 0, 1, 0, NULL, &c.pool.sc) < 0);
	}
	assert_int_equal(rm_seq_active(&c.st), 0);
	ctx_free(&c);
}

/*
 * Arrival times that go backwards (live: two CPUs read the clock, the later
 * reader takes the lock first) never move the last arrival back: [SEQOBS]
 * "Export Profile and Template" makes flowStart/flowEnd the first and last
 * accounted arrival, so last >= first always.
 */
static void arrival_time_never_goes_back(void **s)
{
	struct ctx c;

	ctx_init(&c, 8);
	assert_int_equal(observe_at(&c, 10, 5000), RM_SEQ_STARTED);
	assert_int_equal(observe_at(&c, 11, 4000), RM_SEQ_ACCOUNTED);
	assert_int_equal(cur(&c)->first_ns, 5000);
	assert_int_equal(cur(&c)->last_ns, 5000);
	assert_int_equal(observe_at(&c, 12, 7000), RM_SEQ_ACCOUNTED);
	assert_int_equal(observe_at(&c, 11, 1), RM_SEQ_ACCOUNTED);
	assert_int_equal(cur(&c)->last_ns, 7000);
	assert_int_equal(cur(&c)->requests, 4);
	ctx_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(seed_example_1),
		cmocka_unit_test(seed_example_2),
		cmocka_unit_test(seed_example_3),
		cmocka_unit_test(seed_example_wrap),
		cmocka_unit_test(seed_example_half_forward),
		cmocka_unit_test(seed_example_half_backward),
		cmocka_unit_test(seed_example_w1),
		cmocka_unit_test(row_first_request_psn0),
		cmocka_unit_test(row_forward_edges),
		cmocka_unit_test(row_backward),
		cmocka_unit_test(big_window_jumps),
		cmocka_unit_test(odd_window),
		cmocka_unit_test(bad_window),
		cmocka_unit_test(arrival_time_never_goes_back),
	};

	return cmocka_run_group_tests_name("seqobs", tests, NULL, NULL);
}
