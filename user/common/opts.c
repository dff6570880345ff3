// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* opts.c - numbers of options and configuration values (see opts.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "errmsg.h"
#include "opts.h"

static int is_digit(char c, int base)
{
	return (c >= '0' && c <= '9') || (base == 16 && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
}

int rm_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *s = text;
	unsigned long long x;
	char *end;
	int base = 10;

	if (!s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		base = 16;
	}
	/* strtoull itself would take blanks, a sign, and (base 0) octal. */
	if (!is_digit(*s, base))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, base);
	if (errno || *end || x < min || x > max)
		return -EINVAL;
	*out = x;
	return 0;
}

int rm_opt_uint(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	if (rm_parse_uint(text, min, max, out) == 0)
		return 0;
	rm_errf(err, errlen, "%s: '%s' is not an integer in %" PRIu64 "..%" PRIu64, name, text ? text : "", min, max);
	return -EINVAL;
}

void rm_opt_put_uint(void *dst, size_t size, uint64_t v)
{
	if (size == sizeof(uint64_t))
		*(uint64_t *)dst = v;
	else if (size == sizeof(uint32_t))
		*(uint32_t *)dst = (uint32_t)v;
	else if (size == sizeof(uint16_t))
		*(uint16_t *)dst = (uint16_t)v;
}
