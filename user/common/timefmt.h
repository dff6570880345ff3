/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * timefmt.h - times as operators read and type them: ISO-8601 in UTC with
 * milliseconds for every time a text output prints (report, replay and
 * attach text lines), and the time arguments of `report --since/--until`.
 */
#ifndef ROCEMETER_TIMEFMT_H
#define ROCEMETER_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* RM_TIME_TEXT_LEN bytes hold any rm_time_format() text with its NUL. */
#define RM_TIME_TEXT_LEN 32

/*
 * UNIX milliseconds ms as "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC, proleptic
 * Gregorian) into buf (len >= RM_TIME_TEXT_LEN); years past 9999 are
 * written with more digits. Returns buf.
 */
char *rm_time_format(uint64_t ms, char *buf, size_t len);

/*
 * A time argument into UNIX milliseconds:
 *   "2026-11-30T09:15:00Z", "2026-11-30T09:15:00.250Z", "2026-11-30T09:15Z"
 *       ISO-8601 in UTC (the 'Z' may be left out; a space may stand for 'T');
 *   "2026-11-30"  midnight UTC of that day;
 *   "1781684412361"  UNIX milliseconds;
 *   "90s", "15m", "2h", "7d"  that long before now_ms.
 * Returns 0, or -EINVAL with "NAME: 'TEXT' is not ..." in err.
 */
int rm_time_parse(const char *name, const char *text, uint64_t now_ms, uint64_t *ms, char *err, size_t errlen);

#endif /* ROCEMETER_TIMEFMT_H */
