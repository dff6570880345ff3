/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * log.h - the one log of the rocemeter binary: every line of the daemons
 * (attach, collect), of the modules they run (export, flow label) and of the
 * subcommands goes through here, with a level, and libbpf's messages too.
 * Used by every folder; main.c sets it up.
 *
 * Two sinks, chosen once per process: when stderr is the journal (systemd
 * sets JOURNAL_STREAM to its device and inode), each line is one journal
 * entry with PRIORITY, SYSLOG_IDENTIFIER=rocemeter, ROCEMETER_COMMAND and
 * the structured fields (IFACE, SESSION, EPOCH_ID, PEER) sent through
 * libsystemd's sd_journal_sendv(); otherwise a line on stderr,
 * "2025-06-01T12:00:00.123Z warning rocemeter: message" (UTC, the level in
 * journald's words). A subcommand's own line (rm_log_cmd()) carries neither.
 *
 * Repeated identical errors and warnings are rate-limited: at most
 * RM_LOG_BURST lines with the same text in RM_LOG_WINDOW_MS; the next one
 * after the window says how many were suppressed. docs/service.md "Logging".
 */
#ifndef ROCEMETER_LOG_H
#define ROCEMETER_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Levels, most severe first; the values are syslog priorities (journald). */
enum rm_log_level {
	RM_LOG_ERR = 3,
	RM_LOG_WARNING = 4,
	RM_LOG_NOTICE = 5, /* the default threshold: what the daemons always said */
	RM_LOG_INFO = 6,
	RM_LOG_DEBUG = 7,
};

/* Rate limit of identical error and warning lines (see above). */
#define RM_LOG_BURST     5
#define RM_LOG_WINDOW_MS 10000

/* A structured field of a log line (KEY=value under journald; not printed on stderr). */
struct rm_log_field {
	const char *key; /* upper case, as journald wants: "IFNAME", "SESSION" */
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
 * A level by its journald name: "err", "warning", "notice", "info",
 * "debug" (also "error" and "warn"), or its number 3..7. 0 and *out set,
 * or -EINVAL. The text of --log-level.
 */
int rm_log_level_from_name(const char *name, enum rm_log_level *out);

/* "err", "warning", ... */
const char *rm_log_level_name(enum rm_log_level level);

/*
 * A field that every later line carries under journald (IFACE of the
 * attach daemon). At most 4; key and value are copied. Not thread-safe:
 * set it before threads start.
 */
void rm_log_set_field(const char *key, const char *value);

/* 1 when the lines go to the journal (see above), else 0. */
int rm_log_to_journal(void);

/*
 * Tests: read the wall clock (timestamps) and the monotonic clock (rate
 * limit), both in ms, from *realtime_ms and *monotonic_ms instead of the
 * system; NULL, NULL restores the system clocks.
 */
void rm_log_set_test_clock(const uint64_t *realtime_ms, const uint64_t *monotonic_ms);

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
 * One line "TIME LEVEL IDENT: message\n" on stderr (or one journal entry),
 * written at once (lines of several threads do not mix). fmt carries no
 * trailing newline. Thread-safe.
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
 * libbpf formats them ("libbpf: ..."). The verifier's log of a refused
 * program is a debug line too: shown with --log-level debug, or with
 * ROCEMETER_LIBBPF_DEBUG set in the environment (every libbpf line).
 */
void rm_log_route_libbpf(void);

#endif /* ROCEMETER_LOG_H */
