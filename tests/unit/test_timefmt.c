// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_timefmt.c - ISO-8601 UTC times (user/common/timefmt.h): what text
 * outputs print and what `report --since/--until` accept. Expected values
 * were computed with Python's datetime (an independent calendar), e.g.
 * datetime.fromtimestamp(1781684412.361, timezone.utc).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/timefmt.h"

static void assert_format(uint64_t ms, const char *want)
{
	char buf[RM_TIME_TEXT_LEN];

	assert_string_equal(rm_time_format(ms, buf, sizeof(buf)), want);
}

static void format(void **state)
{
	assert_format(0, "1970-01-01T00:00:00.000Z");
	assert_format(1781684412361ull, "2026-06-17T08:20:12.361Z");
	assert_format(951868799999ull, "2000-02-29T23:59:59.999Z"); /* a leap day of a century */
	assert_format(4102444800000ull, "2100-01-01T00:00:00.000Z");
}

static void assert_parse(const char *text, uint64_t want)
{
	char err[256];
	uint64_t ms = 1;

	if (rm_time_parse("--since", text, 10000000000000ull, &ms, err, sizeof(err)))
		fail_msg("'%s' refused: %s", text, err);
	assert_int_equal(ms, want);
}

static void assert_refused(const char *text)
{
	char err[256], want[64];
	uint64_t ms = 1;

	assert_int_equal(rm_time_parse("--until", text, 10000000000000ull, &ms, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "--until: '%s' is not a time", text);
	assert_memory_equal(err, want, strlen(want));
	assert_int_equal(ms, 1);
}

static void parse(void **state)
{
	assert_parse("2026-06-17T08:20:12.361Z", 1781684412361ull);
	assert_parse("2026-06-17T08:20:12Z", 1781684412000ull);
	assert_parse("2026-06-17 08:20:12.3", 1781684412300ull);
	assert_parse("2026-06-17T08:20Z", 1781684400000ull);
	assert_parse("2026-06-17", 1781654400000ull);
	assert_parse("2000-02-29T23:59:59.999", 951868799999ull);
	assert_parse("1781684412361", 1781684412361ull);
	assert_parse("0", 0);
	/* durations before now (now = 10^13 ms) */
	assert_parse("90s", 10000000000000ull - 90000);
	assert_parse("15m", 10000000000000ull - 900000);
	assert_parse("2h", 10000000000000ull - 7200000);
	assert_parse("7d", 10000000000000ull - 604800000);
	assert_refused("");
	assert_refused("yesterday");
	assert_refused("2026-02-29"); /* not a leap year */
	assert_refused("2026-13-01");
	assert_refused("2026-06-17T24:00Z");
	assert_refused("2026-06-17T08:20:12+02:00"); /* UTC only */
	assert_refused("-5m");
	assert_refused("0x10");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(format),
		cmocka_unit_test(parse),
	};

	return cmocka_run_group_tests_name("timefmt", tests, NULL, NULL);
}
