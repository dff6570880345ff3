/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * log.h - the one log of the rocemeter binary: every line on stderr of the
 * daemons (attach, collect), of the modules they run (export, flow label)
 * and of the subcommands goes through here, with a level, and libbpf's
 * messages too. Used by every folder; main.c sets it up.
 */
#ifndef ROCEMETER_LOG_H
#define ROCEMETER_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* Levels, most severe first; the values are syslog priorities (journald). */
enum rm_log_level {
	RM_LOG_ERR = 3,
	RM_LOG_WARNING = 4,
	RM_LOG_NOTICE = 5, /* the default threshold: what the daemons always said */
	RM_LOG_INFO = 6,
	RM_LOG_DEBUG = 7,
};

/* A structured field of a log line (KEY=value under journald; not printed on stderr). */
struct rm_log_field {
	const char *key;   /* upper case, as journald wants: "IFNAME", "SESSION" */
	const char *value;
};

/*
 * Lines at the threshold or more severe are written; the others are
 * dropped. Default RM_LOG_NOTICE. Not thread-safe: set it before threads
 * start.
 */
void rm_log_set_level(enum rm_log_level level);
enum rm_log_level rm_log_level(void);

/*
 * The prefix of rm_log() lines: "rocemeter" (default) gives "rocemeter: ...".
 * The string must outlive the logging (a literal).
 */
void rm_log_set_ident(const char *ident);

/*
 * The running subcommand's name ("attach"), for rm_log_cmd(); main.c sets it
 * before it runs the subcommand. The string must outlive the logging.
 */
void rm_log_set_command(const char *name);

/*
 * One line "IDENT: message\n" on stderr, written at once (lines of several
 * threads do not mix). fmt carries no trailing newline. Thread-safe.
 */
void rm_log(enum rm_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rm_vlog(enum rm_log_level level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* rm_log() with structured fields (n of them) that a journald sink will carry. */
void rm_log_fields(enum rm_log_level level, const struct rm_log_field *fields, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * A subcommand's own line, "rocemeter COMMAND: message\n" (a usage error,
 * the one line that says why it failed); "rocemeter: message" when no
 * command is set. Thread-safe.
 */
void rm_log_cmd(enum rm_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Route libbpf's messages through the log one level lower: its warnings
 * at RM_LOG_NOTICE, its info and debug lines at RM_LOG_DEBUG, written as
 * libbpf formats them ("libbpf: ..."). With ROCEMETER_LIBBPF_DEBUG set in
 * the environment every libbpf line is written (the verifier log).
 */
void rm_log_route_libbpf(void);

#endif /* ROCEMETER_LOG_H */
