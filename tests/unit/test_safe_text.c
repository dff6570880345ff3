// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_safe_text.c - the rule for names from outside and their escaping
 * (user/common/safe_text.h). The UTF-8 vectors are RFC 3629's (section 3's
 * table, section 10's overlong '/') and Markus Kuhn's UTF-8 decoder stress
 * test (boundary, surrogate and impossible octets); the characters refused
 * are Unicode's C0/C1 controls (General Category Cc) and the explicit
 * directional embeddings, overrides and isolates (UAX #9 table 1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/safe_text.h"

#define WHY(lit) rm_text_invalid(lit, sizeof(lit) - 1)

static void accepted(void **state)
{
	assert_null(WHY(""));
	assert_null(WHY("leaf1-eth1 spine/2 =x"));
	assert_null(WHY("\x7e"));             /* U+007E, the last printable ASCII */
	assert_null(WHY("\xc2\xa0"));         /* U+00A0, the first after C1 */
	assert_null(WHY("\xcf\x86\xcf\x8d")); /* Greek */
	assert_null(WHY("\xe2\x80\xa9"));     /* U+2029 (not a bidi override) */
	assert_null(WHY("\xe2\x80\xaf"));     /* U+202F, after the overrides */
	assert_null(WHY("\xe2\x81\xaa"));     /* U+206A, after the isolates */
	assert_null(WHY("\xed\x9f\xbf"));     /* U+D7FF, before the surrogates */
	assert_null(WHY("\xee\x80\x80"));     /* U+E000, after them */
	assert_null(WHY("\xf0\x9f\x98\x80")); /* U+1F600 */
	assert_null(WHY("\xf4\x8f\xbf\xbf")); /* U+10FFFF, the last code point */
}

static void refused(void **state)
{
	assert_string_equal(WHY("a\x1b[31m"), "a control character");
	assert_string_equal(WHY("a\x09"), "a control character");
	assert_string_equal(WHY("\x7f"), "a control character");
	assert_string_equal(WHY("\0"), "a control character");
	assert_string_equal(WHY("\xc2\x80"), "a control character");          /* U+0080 */
	assert_string_equal(WHY("\xc2\x9b"), "a control character");          /* U+009B CSI */
	assert_string_equal(WHY("\xc2\x9f"), "a control character");          /* U+009F */
	assert_string_equal(WHY("\xe2\x80\xaa"), "a bidirectional override"); /* U+202A LRE */
	assert_string_equal(WHY("\xe2\x80\xae"), "a bidirectional override"); /* U+202E RLO */
	assert_string_equal(WHY("\xe2\x81\xa6"), "a bidirectional override"); /* U+2066 LRI */
	assert_string_equal(WHY("\xe2\x81\xa9"), "a bidirectional override"); /* U+2069 PDI */
	assert_string_equal(WHY("\x80"), "not valid UTF-8");                  /* a lone continuation octet */
	assert_string_equal(WHY("\xc0\xaf"), "not valid UTF-8");              /* overlong '/' */
	assert_string_equal(WHY("\xe0\x80\xaf"), "not valid UTF-8");          /* overlong '/' */
	assert_string_equal(WHY("\xf0\x80\x80\xaf"), "not valid UTF-8");      /* overlong '/' */
	assert_string_equal(WHY("\xed\xa0\x80"), "not valid UTF-8");          /* U+D800 */
	assert_string_equal(WHY("\xed\xbf\xbf"), "not valid UTF-8");          /* U+DFFF */
	assert_string_equal(WHY("\xf4\x90\x80\x80"), "not valid UTF-8");      /* U+110000 */
	assert_string_equal(WHY("\xfe"), "not valid UTF-8");
	assert_string_equal(WHY("\xff"), "not valid UTF-8");
	assert_string_equal(WHY("\xe2\x80"), "not valid UTF-8");     /* cut short */
	assert_string_equal(WHY("\xe2\x28\xa1"), "not valid UTF-8"); /* a bad continuation */
}

static void escaped(void **state)
{
	char out[64];

	assert_string_equal(rm_text_escape("leaf-a", out, sizeof(out)), "leaf-a");
	assert_string_equal(rm_text_escape(NULL, out, sizeof(out)), "");
	assert_string_equal(rm_text_escape("a\x1b[2Jb", out, sizeof(out)), "a\\x1B[2Jb");
	assert_string_equal(rm_text_escape("\x7f\\", out, sizeof(out)), "\\x7F\\\\");
	assert_string_equal(rm_text_escape("\xc2\x9b"
					   "1m",
					   out, sizeof(out)),
			    "\\u009B1m");
	assert_string_equal(rm_text_escape("x\xe2\x80\xaeyz", out, sizeof(out)), "x\\u202Eyz");
	assert_string_equal(rm_text_escape("\xff\xc0\xaf", out, sizeof(out)), "\\xFF\\xC0\\xAF");
	assert_string_equal(rm_text_escape("\xcf\x86\xf0\x9f\x98\x80", out, sizeof(out)), "\xcf\x86\xf0\x9f\x98\x80");
	/* cut before an escape or a sequence, never inside one */
	assert_string_equal(rm_text_escape("ab\x1b", out, 6), "ab");
	assert_string_equal(rm_text_escape("ab\xcf\x86", out, 4), "ab");
	assert_string_equal(rm_text_escape("abc", out, 1), "");
}

static void columns(void **state)
{
	assert_int_equal(rm_text_columns(""), 0);
	assert_int_equal(rm_text_columns("leaf"), 4);
	assert_int_equal(rm_text_columns("\xcf\x86\xcf\x8d\xce\xbb"), 3);
	assert_int_equal(rm_text_columns("a\xf0\x9f\x98\x80"), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(accepted),
		cmocka_unit_test(refused),
		cmocka_unit_test(escaped),
		cmocka_unit_test(columns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
