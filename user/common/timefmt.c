// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* timefmt.c - ISO-8601 UTC times in and out (see timefmt.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "errmsg.h"
#include "timefmt.h"

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian): H. Hinnant's days_from_civil. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;

	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

char *rm_time_format(uint64_t ms, char *buf, size_t len)
{
	uint64_t s = ms / 1000, days = s / 86400, sod = s % 86400;
	int64_t y;
	unsigned m, d;

	civil_from_days((int64_t)days, &y, &m, &d);
	snprintf(buf, len, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u.%03uZ", y, m, d, (unsigned)(sod / 3600),
		 (unsigned)(sod / 60 % 60), (unsigned)(sod % 60), (unsigned)(ms % 1000));
	return buf;
}

static int is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* "YYYY-MM-DD[(T| )HH:MM[:SS[.fff]]][Z]" -> ms; 0 or -1. */
static int parse_iso(const char *t, uint64_t *ms)
{
	static const unsigned mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	unsigned y, mo, d, h = 0, mi = 0, s = 0, frac = 0;
	int n = 0, fd = 0;

	if (sscanf(t, "%4u-%2u-%2u%n", &y, &mo, &d, &n) != 3 || n != 10)
		return -1;
	t += n;
	if (*t == 'T' || *t == ' ') {
		if (sscanf(t + 1, "%2u:%2u%n", &h, &mi, &n) != 2 || n != 5)
			return -1;
		t += 1 + n;
		if (*t == ':') {
			if (sscanf(t + 1, "%2u%n", &s, &n) != 1 || n != 2)
				return -1;
			t += 3;
			if (*t == '.') {
				for (t++; *t >= '0' && *t <= '9'; t++, fd++)
					if (fd < 3)
						frac = frac * 10 + (unsigned)(*t - '0');
				if (!fd)
					return -1;
				for (int k = fd; k < 3; k++)
					frac *= 10;
			}
		}
	}
	if (*t == 'Z')
		t++;
	if (*t || y < 1970 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59 ||
	    d > mdays[mo - 1] + (mo == 2 && is_leap(y)))
		return -1;
	*ms = ((uint64_t)days_from_civil(y, mo, d) * 86400 + h * 3600u + mi * 60u + s) * 1000 + frac;
	return 0;
}

static int all_digits(const char *t, size_t n)
{
	if (!n || n > 19)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (t[i] < '0' || t[i] > '9')
			return 0;
	return 1;
}

int rm_time_parse(const char *name, const char *text, uint64_t now_ms, uint64_t *ms, char *err, size_t errlen)
{
	size_t n = text ? strlen(text) : 0;
	uint64_t v;

	if (all_digits(text, n)) { /* UNIX ms, decimal */
		sscanf(text, "%" SCNu64, ms);
		return 0;
	}
	if (n > 1 && strchr("smhd", text[n - 1]) && all_digits(text, n - 1)) {
		uint64_t unit = text[n - 1] == 's'   ? 1000
				: text[n - 1] == 'm' ? 60000
				: text[n - 1] == 'h' ? 3600000
						     : 86400000;

		sscanf(text, "%" SCNu64, &v);
		*ms = v <= now_ms / unit ? now_ms - v * unit : 0;
		return 0;
	}
	if (n && parse_iso(text, ms) == 0)
		return 0;
	rm_errf(err, errlen,
		"%s: '%s' is not a time: give ISO-8601 UTC (2026-11-30T09:15:00Z), a date, UNIX milliseconds or "
		"a duration before now (90s, 15m, 2h, 7d)",
		name, text ? text : "");
	return -EINVAL;
}
