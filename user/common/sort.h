/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sort.h - the one call of qsort(3) in userspace. qsort's base must point
 * to an array even when nmemb is 0 (glibc declares it nonnull): an empty
 * list that was never allocated (base NULL) is undefined behaviour, which
 * UBSan reports (`replay` at a report with no open context did so).
 * rm_sort() sorts only what has two elements or more.
 */
#ifndef ROCEMETER_SORT_H
#define ROCEMETER_SORT_H

#include <stdlib.h>

/* qsort(base, n, size, cmp) for n >= 2; nothing for 0 or 1 (base may then be NULL). */
static inline void rm_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

#endif
