// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_seqobs_limit.c - checked arithmetic ([SEQOBS]: "MUST close and
 * restart before overflow rather than wrap a cumulative counter"), reached
 * with RM_COUNTER_MAX lowered to 200 at build time (mk/core.mk).
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

#if RM_COUNTER_MAX != 200
#error "build with -DRM_COUNTER_MAX=200"
#endif

/* One request with W = 4 (the inline window holds it: no pool window needed). */
static int observe(struct rm_seq_state *st, uint32_t psn, uint64_t now, struct rm_seq_counters *fin)
{
	struct rm_seq_win w = { 0 };
	static struct rm_window_scratch sc;

	return rm_seq_observe(st, &w, 1, 4, psn, now, fin, &sc);
}

static struct rm_seq_counters counters(const struct rm_seq_state *st)
{
	struct rm_seq_counters c;

	rm_seq_snapshot(st, &c);
	return c;
}

/* requests reaches the limit: the next request closes (finalEpoch alone) and starts afresh. */
static void requests_limit(void **s)
{
	struct rm_seq_state st = { 0 };
	struct rm_seq_counters fin = { 0 };

	for (uint32_t i = 0; i < 200; i++)
		assert_int_equal(observe(&st, 5000, i, &fin), i ? RM_SEQ_ACCOUNTED : RM_SEQ_STARTED);
	assert_int_equal(counters(&st).requests, 200);
	assert_int_equal(counters(&st).repeated, 199);
	assert_int_equal(observe(&st, 5000, 999, &fin), RM_SEQ_RESTARTED);
	assert_int_equal(fin.flags, RM_FLAG_FINAL_EPOCH);
	assert_int_equal(fin.requests, 200);
	assert_int_equal(counters(&st).requests, 1);
	assert_int_equal(counters(&st).repeated, 0);
	assert_int_equal(counters(&st).first_ns, 999);
}

/* H - S + W would pass the limit: close before the position could wrap. */
static void position_limit(void **s)
{
	struct rm_seq_state st = { 0 };
	struct rm_seq_counters fin = { 0 };
	uint32_t p = 16777200; /* near the PSN wrap: extended positions keep growing */
	int r;

	observe(&st, p, 0, &fin);
	for (uint32_t i = 1; i <= 49; i++) {
		p = (p + 4) & RM_PSN_MASK;
		r = observe(&st, p, i, &fin);
		assert_int_equal(r, RM_SEQ_ACCOUNTED);
	}
	assert_int_equal(st.high - rm_seq_s(&st), 196); /* 196 + 4 = 200: still allowed */
	p = (p + 4) & RM_PSN_MASK;
	assert_int_equal(observe(&st, p, 50, &fin), RM_SEQ_ACCOUNTED);
	assert_int_equal(st.high - rm_seq_s(&st), 200);
	p = (p + 1) & RM_PSN_MASK;
	assert_int_equal(observe(&st, p, 51, &fin), RM_SEQ_RESTARTED);
	assert_int_equal(fin.flags, RM_FLAG_FINAL_EPOCH);
	assert_int_equal(fin.skipped, 150);
	assert_int_equal(fin.skipped, fin.expired + fin.abandoned);
	assert_int_equal(fin.abandoned, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(requests_limit),
		cmocka_unit_test(position_limit),
	};

	return cmocka_run_group_tests_name("seqobs_limit", tests, NULL, NULL);
}
