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

static struct rm_window_scratch g_scratch; /* the engine's scratch for a window clear */

#if RM_COUNTER_MAX != 200
#error "build with -DRM_COUNTER_MAX=200"
#endif

static __u64 win[RM_WINDOW_VALUE_WORDS(1)]; /* one ring word (W = 4) and its summaries */

/* requests reaches the limit: the next request closes (finalEpoch alone) and starts afresh. */
static void requests_limit(void **s)
{
	struct rm_seq_state st = { 0 };
	struct rm_seq_counters fin = { 0 };

	for (uint32_t i = 0; i < 200; i++)
		assert_int_equal(rm_seq_observe(&st, win, 1, 4, 5000, i, &fin, &g_scratch), i ? RM_SEQ_ACCOUNTED : RM_SEQ_STARTED);
	assert_int_equal(st.c.requests, 200);
	assert_int_equal(st.c.repeated, 199);
	assert_int_equal(rm_seq_observe(&st, win, 1, 4, 5000, 999, &fin, &g_scratch), RM_SEQ_RESTARTED);
	assert_int_equal(fin.flags, RM_FLAG_FINAL_EPOCH);
	assert_int_equal(fin.requests, 200);
	assert_int_equal(st.c.requests, 1);
	assert_int_equal(st.c.repeated, 0);
	assert_int_equal(st.c.first_ns, 999);
}

/* H - S + W would pass the limit: close before the position could wrap. */
static void position_limit(void **s)
{
	struct rm_seq_state st = { 0 };
	struct rm_seq_counters fin = { 0 };
	uint32_t p = 16777200; /* near the PSN wrap: extended positions keep growing */
	int r;

	rm_seq_observe(&st, win, 1, 4, p, 0, &fin, &g_scratch);
	for (uint32_t i = 1; i <= 49; i++) {
		p = (p + 4) & RM_PSN_MASK;
		r = rm_seq_observe(&st, win, 1, 4, p, i, &fin, &g_scratch);
		assert_int_equal(r, RM_SEQ_ACCOUNTED);
	}
	assert_int_equal(st.high - st.start, 196); /* 196 + 4 = 200: still allowed */
	p = (p + 4) & RM_PSN_MASK;
	assert_int_equal(rm_seq_observe(&st, win, 1, 4, p, 50, &fin, &g_scratch), RM_SEQ_ACCOUNTED);
	assert_int_equal(st.high - st.start, 200);
	p = (p + 1) & RM_PSN_MASK;
	assert_int_equal(rm_seq_observe(&st, win, 1, 4, p, 51, &fin, &g_scratch), RM_SEQ_RESTARTED);
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
