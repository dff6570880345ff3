// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* errmsg.c - see errmsg.h. */
#include <stdarg.h>
#include <stdio.h>

#include "errmsg.h"

void rm_errf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rm_verrf(buf, len, fmt, ap);
	va_end(ap);
}

void rm_verrf(char *buf, size_t len, const char *fmt, va_list ap)
{
	if (buf && len)
		vsnprintf(buf, len, fmt, ap);
}
