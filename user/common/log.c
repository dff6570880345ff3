// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* log.c - levels, prefixes and the stderr sink of the log (see log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <bpf/libbpf.h>

#include "log.h"

static enum rm_log_level threshold = RM_LOG_NOTICE;
static const char *const program = "rocemeter";
static const char *ident = "rocemeter";
static const char *command;

void rm_log_set_level(enum rm_log_level level)
{
	threshold = level;
}

enum rm_log_level rm_log_level(void)
{
	return threshold;
}

void rm_log_set_ident(const char *s)
{
	ident = s;
}

void rm_log_set_command(const char *name)
{
	command = name;
}

/*
 * The one sink: "PREFIX[ COMMAND]: message\n" in one write, so that the
 * exporter's thread and the main loop never interleave within a line.
 * Fields are for journald; stderr shows the message alone.
 */
static void emit(enum rm_log_level level, const char *cmd, const struct rm_log_field *fields, size_t n,
		 const char *fmt, va_list ap)
{
	char line[2048];
	int len;

	(void)fields;
	(void)n;
	if (level > threshold)
		return;
	len = cmd ? snprintf(line, sizeof(line), "%s %s: ", program, cmd) : snprintf(line, sizeof(line), "%s: ", ident);
	if (len < 0)
		return;
	if ((size_t)len < sizeof(line))
		len += vsnprintf(line + len, sizeof(line) - (size_t)len, fmt, ap);
	if ((size_t)len >= sizeof(line) - 1)
		len = (int)sizeof(line) - 2; /* cut an overlong line, keep its newline */
	line[len++] = '\n';
	line[len] = 0;
	fputs(line, stderr);
}

void rm_vlog(enum rm_log_level level, const char *fmt, va_list ap)
{
	emit(level, NULL, NULL, 0, fmt, ap);
}

void rm_log(enum rm_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(level, NULL, NULL, 0, fmt, ap);
	va_end(ap);
}

void rm_log_fields(enum rm_log_level level, const struct rm_log_field *fields, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(level, NULL, fields, n, fmt, ap);
	va_end(ap);
}

void rm_log_cmd(enum rm_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (command)
		emit(level, command, NULL, 0, fmt, ap);
	else
		emit(level, NULL, NULL, 0, fmt, ap);
	va_end(ap);
}

static int libbpf_line(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	enum rm_log_level level = lvl == LIBBPF_WARN ? RM_LOG_NOTICE : RM_LOG_DEBUG;

	/* libbpf's lines carry their own "libbpf: " and newline: written as they are. */
	if (level <= threshold || getenv("ROCEMETER_LIBBPF_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

void rm_log_route_libbpf(void)
{
	libbpf_set_print(libbpf_line);
}
