/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * errmsg.h - the one writer of an error message into a caller's buffer:
 * a function that can fail for a reason a person reads takes (char *err,
 * size_t errlen), returns 0 or -errno, and writes one line naming the
 * file, key or option and the value with rm_errf() (docs/architecture.md
 * "Errors").
 */
#ifndef ROCEMETER_ERRMSG_H
#define ROCEMETER_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>

/* printf into buf (len bytes, always terminated); does nothing if buf is NULL or len 0. */
void rm_errf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* rm_errf() with the arguments of a function's own "..." (a helper that formats and fails). */
void rm_verrf(char *buf, size_t len, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

#endif
