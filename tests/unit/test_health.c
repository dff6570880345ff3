// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_health.c - the sequence health of an epoch (user/common/health.h) on
 * the counters of [SEQOBS] "Verification Examples", whose values are the
 * specification's own: which kinds each example shows, and the words.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/health.h"

static void assert_text(const struct rm_health_counters *c, int counts, const char *want)
{
	char buf[160];
	size_t n = rm_health_text(rm_health_of(c), counts ? c : NULL, buf, sizeof(buf));

	assert_string_equal(buf, want);
	assert_int_equal(n, strlen(want));
}

/* W=4, PSNs 100,102,101,103,102: skipped=1, filled=1, repeated=1, the rest 0. */
static void example_swap_and_repeat(void **state)
{
	struct rm_health_counters c = { .filled = 1, .repeated = 1 };

	assert_int_equal(rm_health_of(&c), RM_HEALTH_BIT(RM_HEALTH_SEEN_LATE) | RM_HEALTH_BIT(RM_HEALTH_REPEATED));
	assert_text(&c, 0, "seen late, repeated");
	assert_text(&c, 1, "seen late 1, repeated 1");
}

/* W=4, PSNs 100,99,100: unclassifiedLate=1, repeated=1. */
static void example_before_start(void **state)
{
	struct rm_health_counters c = { .repeated = 1, .unclassified_late = 1 };

	assert_int_equal(rm_health_of(&c),
			 RM_HEALTH_BIT(RM_HEALTH_REPEATED) | RM_HEALTH_BIT(RM_HEALTH_UNCLASSIFIED_LATE));
	assert_text(&c, 1, "repeated 1, unclassified late 1");
}

/* W=4, PSNs 100,102,106: skipped=4, expired=1, pending=3; closing gives abandoned=3, pending=0. */
static void example_expiry_then_closure(void **state)
{
	struct rm_health_counters open = { .expired = 1, .pending = 3 }, closed = { .expired = 1, .abandoned = 3 };

	assert_int_equal(rm_health_of(&open), RM_HEALTH_BIT(RM_HEALTH_NEVER_SEEN) | RM_HEALTH_BIT(RM_HEALTH_PENDING));
	assert_text(&open, 1, "never seen 1, pending 3");
	assert_int_equal(rm_health_count(&closed, RM_HEALTH_NEVER_SEEN), 4);
	assert_int_equal(rm_health_of(&closed), RM_HEALTH_BIT(RM_HEALTH_NEVER_SEEN));
	assert_text(&closed, 1, "never seen 4");
}

/* PSNs 16777214,16777215,0,1 advance continuously with no skipped positions: clean. */
static void example_wrap_is_clean(void **state)
{
	struct rm_health_counters c = { 0 };

	assert_int_equal(rm_health_of(&c), 0);
	assert_text(&c, 1, "clean");
	assert_text(&c, 0, "clean");
}

/* Sums over many epochs saturate instead of wrapping; a short buffer is cut, the length still told. */
static void limits(void **state)
{
	struct rm_health_counters c = { .expired = UINT64_MAX - 1, .abandoned = 5 };
	char buf[8];

	assert_true(rm_health_count(&c, RM_HEALTH_NEVER_SEEN) == UINT64_MAX);
	assert_int_equal(rm_health_text(rm_health_of(&c), &c, buf, sizeof(buf)),
			 strlen("never seen 18446744073709551615"));
	assert_string_equal(buf, "never s");
}

/* Keys and words: one per kind, keys without blanks (JSON, CSV). */
static void names(void **state)
{
	for (int k = 0; k < RM_HEALTH__N; k++) {
		assert_non_null(rm_health_key(k));
		assert_null(strchr(rm_health_key(k), ' '));
		assert_non_null(rm_health_words(k));
		assert_non_null(rm_health_meaning(k));
	}
	assert_null(rm_health_key(RM_HEALTH__N));
	assert_string_equal(rm_health_key(RM_HEALTH_NEVER_SEEN), "never_seen");
	assert_string_equal(rm_health_words(RM_HEALTH_UNCLASSIFIED_LATE), "unclassified late");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(example_swap_and_repeat),
		cmocka_unit_test(example_before_start),
		cmocka_unit_test(example_expiry_then_closure),
		cmocka_unit_test(example_wrap_is_clean),
		cmocka_unit_test(limits),
		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
