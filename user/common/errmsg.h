/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* errmsg.h - formatting an error message into a caller's buffer. */
#ifndef ROCEMETER_ERRMSG_H
#define ROCEMETER_ERRMSG_H

#include <stddef.h>

/* printf into buf (len bytes, always terminated); does nothing if buf is NULL or len 0. */
void rm_errf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
