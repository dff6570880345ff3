/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * opts.h - numbers an operator types: command-line option values (every
 * subcommand) and configuration values (config.c) are read by the same
 * rule: decimal or 0x hexadecimal, never octal, no sign, no blanks; and
 * put into a field of the size a table gives (rm_opt_put_uint()).
 */
#ifndef ROCEMETER_OPTS_H
#define ROCEMETER_OPTS_H

#include <stddef.h>
#include <stdint.h>

/*
 * text as an unsigned integer in [min, max]: decimal digits ("010" is ten),
 * or 0x / 0X and hexadecimal digits. Returns 0 and sets *out, or -EINVAL
 * (not such a number, or out of range; *out untouched).
 */
int rm_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/*
 * rm_parse_uint() for the value of option name ("--window"). On failure
 * writes "NAME: 'TEXT' is not an integer in MIN..MAX" (decimal bounds) to
 * err and returns -EINVAL.
 */
int rm_opt_uint(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out, char *err,
		size_t errlen);

/*
 * v into the unsigned integer of size bytes (8, 4 or 2) at dst, as option
 * tables (params.h) and configuration key tables (config.c) place their
 * values; v is in the field's range (checked before). Another size: nothing.
 */
void rm_opt_put_uint(void *dst, size_t size, uint64_t v);

#endif /* ROCEMETER_OPTS_H */
