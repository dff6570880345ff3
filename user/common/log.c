// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* log.c - levels, prefixes, the stderr and journal sinks and the rate limit of the log (see log.h). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include <bpf/libbpf.h>
#include <systemd/sd-journal.h>

#include "clock.h"
#include "log.h"

#define MAX_DEFAULT_FIELDS 4
#define MAX_CALL_FIELDS    8
#define RATE_SLOTS         32

static enum rm_log_level threshold = RM_LOG_NOTICE;
static const char *const program = "rocemeter";
static const char *ident = "rocemeter";
static const char *command;
static char default_fields[MAX_DEFAULT_FIELDS][160];
static int n_default_fields;
static const uint64_t *test_realtime_ms, *test_monotonic_ms;

static pthread_once_t sink_once = PTHREAD_ONCE_INIT;
static int journal; /* 1: sd_journal_sendv(); decided once */
static pthread_mutex_t rate_mu = PTHREAD_MUTEX_INITIALIZER;

/* One text seen recently at error or warning level. */
static struct rate_slot {
	int used;
	uint64_t hash;
	uint64_t window_start_ms;
	uint64_t last_ms;
	unsigned int in_window;   /* lines written in the current window */
	unsigned long suppressed; /* since the last written line */
} rate[RATE_SLOTS];

static const char *const level_names[] = { [RM_LOG_ERR] = "err",
					   [RM_LOG_WARNING] = "warning",
					   [RM_LOG_NOTICE] = "notice",
					   [RM_LOG_INFO] = "info",
					   [RM_LOG_DEBUG] = "debug" };

void rm_log_set_level(enum rm_log_level level)
{
	threshold = level;
}

enum rm_log_level rm_log_level(void)
{
	return threshold;
}

const char *rm_log_level_name(enum rm_log_level level)
{
	return level >= RM_LOG_ERR && level <= RM_LOG_DEBUG ? level_names[level] : "?";
}

int rm_log_level_from_name(const char *name, enum rm_log_level *out)
{
	if (!name)
		return -EINVAL;
	for (int l = RM_LOG_ERR; l <= RM_LOG_DEBUG; l++) {
		char num[2] = { (char)('0' + l), 0 };

		if (!strcasecmp(name, level_names[l]) || !strcmp(name, num)) {
			*out = (enum rm_log_level)l;
			return 0;
		}
	}
	if (!strcasecmp(name, "error")) {
		*out = RM_LOG_ERR;
		return 0;
	}
	if (!strcasecmp(name, "warn")) {
		*out = RM_LOG_WARNING;
		return 0;
	}
	return -EINVAL;
}

void rm_log_set_ident(const char *s)
{
	ident = s;
}

void rm_log_set_command(const char *name)
{
	command = name;
}

void rm_log_set_field(const char *key, const char *value)
{
	for (int i = 0; i < n_default_fields; i++) {
		size_t n = strlen(key);

		if (!strncmp(default_fields[i], key, n) && default_fields[i][n] == '=') {
			snprintf(default_fields[i], sizeof(default_fields[i]), "%s=%s", key, value);
			return;
		}
	}
	if (n_default_fields < MAX_DEFAULT_FIELDS)
		snprintf(default_fields[n_default_fields++], sizeof(default_fields[0]), "%s=%s", key, value);
}

void rm_log_set_test_clock(const uint64_t *realtime_ms, const uint64_t *monotonic_ms)
{
	test_realtime_ms = realtime_ms;
	test_monotonic_ms = monotonic_ms;
}

static uint64_t clock_ms(clockid_t id)
{
	if (id == CLOCK_REALTIME)
		return test_realtime_ms ? *test_realtime_ms : rm_clock_wall_ms();
	return test_monotonic_ms ? *test_monotonic_ms : rm_clock_mono_ms();
}

/* systemd's rule (JOURNAL_STREAM=DEV:INODE of the stream it gave us): is stderr that stream? */
static void decide_sink(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat sb;

	journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &sb) == 0 &&
		  (unsigned long long)sb.st_dev == dev && (unsigned long long)sb.st_ino == ino;
}

int rm_log_to_journal(void)
{
	pthread_once(&sink_once, decide_sink);
	return journal;
}

static uint64_t text_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/*
 * The rate limit of one error or warning text: 1 to write it (with *suppressed
 * lines held back before it), 0 to hold it back. At most RM_LOG_BURST lines
 * of one text per window of RM_LOG_WINDOW_MS, which starts at its first line.
 */
static int rate_pass(const char *text, unsigned long *suppressed)
{
	uint64_t h = text_hash(text), now = clock_ms(CLOCK_MONOTONIC);
	struct rate_slot *slot = NULL, *oldest = NULL;
	int pass;

	*suppressed = 0;
	pthread_mutex_lock(&rate_mu);
	for (int i = 0; i < RATE_SLOTS && !slot; i++) {
		if (rate[i].used && rate[i].hash == h)
			slot = &rate[i];
		else if (!oldest || !rate[i].used || (oldest->used && rate[i].last_ms < oldest->last_ms))
			oldest = oldest && !oldest->used ? oldest : &rate[i];
	}
	if (!slot) {
		slot = oldest; /* a text not seen lately takes a free or the least recently used slot */
		memset(slot, 0, sizeof(*slot));
		slot->used = 1;
		slot->hash = h;
		slot->window_start_ms = now;
	}
	if (now - slot->window_start_ms >= RM_LOG_WINDOW_MS) {
		slot->window_start_ms = now;
		slot->in_window = 0;
	}
	slot->last_ms = now;
	pass = slot->in_window < RM_LOG_BURST;
	if (pass) {
		slot->in_window++;
		*suppressed = slot->suppressed;
		slot->suppressed = 0;
	} else {
		slot->suppressed++;
	}
	pthread_mutex_unlock(&rate_mu);
	return pass;
}

static void to_journal(enum rm_log_level level, const char *msg, const struct rm_log_field *fields, size_t n)
{
	struct iovec iov[4 + MAX_DEFAULT_FIELDS + MAX_CALL_FIELDS];
	char m[2200], prio[16], cmd[64], call[MAX_CALL_FIELDS][300];
	int k = 0;

	snprintf(m, sizeof(m), "MESSAGE=%s", msg);
	snprintf(prio, sizeof(prio), "PRIORITY=%d", (int)level);
	iov[k++] = (struct iovec){ m, strlen(m) };
	iov[k++] = (struct iovec){ prio, strlen(prio) };
	iov[k++] = (struct iovec){ (char *)"SYSLOG_IDENTIFIER=rocemeter", strlen("SYSLOG_IDENTIFIER=rocemeter") };
	if (command) {
		snprintf(cmd, sizeof(cmd), "ROCEMETER_COMMAND=%s", command);
		iov[k++] = (struct iovec){ cmd, strlen(cmd) };
	}
	for (int i = 0; i < n_default_fields; i++)
		iov[k++] = (struct iovec){ default_fields[i], strlen(default_fields[i]) };
	for (size_t i = 0; i < n && i < MAX_CALL_FIELDS; i++) {
		snprintf(call[i], sizeof(call[i]), "%s=%s", fields[i].key, fields[i].value ? fields[i].value : "");
		iov[k++] = (struct iovec){ call[i], strlen(call[i]) };
	}
	if (sd_journal_sendv(iov, k) < 0)
		fprintf(stderr, "<%d>%s\n", (int)level, msg); /* the stream still reaches the journal */
}

/*
 * The one sink: "TIME LEVEL PREFIX: message\n" on stderr in one write, so
 * that the exporter's thread and the main loop never interleave within a
 * line, or one journal entry. A subcommand's line (cmd) has neither
 * time nor level: it is the one line a person reads after a command failed.
 */
static void emit(enum rm_log_level level, int cmd, const struct rm_log_field *fields, size_t n, const char *fmt,
		 va_list ap)
{
	char msg[2048], line[2200], stamp[40];
	unsigned long suppressed = 0;
	size_t len;

	if (level > threshold)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (level <= RM_LOG_WARNING && !rate_pass(msg, &suppressed))
		return;
	if (suppressed) {
		len = strlen(msg);
		snprintf(msg + len, sizeof(msg) - len, " (%lu identical messages suppressed before this one)",
			 suppressed);
	}
	if (rm_log_to_journal()) {
		to_journal(level, msg, fields, n);
		return;
	}
	if (cmd && command) {
		snprintf(line, sizeof(line), "%s %s: %s\n", program, command, msg);
	} else if (cmd) {
		snprintf(line, sizeof(line), "%s: %s\n", ident, msg);
	} else {
		uint64_t now = clock_ms(CLOCK_REALTIME);
		time_t secs = (time_t)(now / 1000);
		struct tm tm;

		gmtime_r(&secs, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(line, sizeof(line), "%s.%03uZ %s %s: %s\n", stamp, (unsigned)(now % 1000),
			 rm_log_level_name(level), ident, msg);
	}
	len = strlen(line);
	if (line[len - 1] != '\n')
		line[len - 1] = '\n'; /* cut an overlong line, keep its newline */
	fputs(line, stderr);
}

void rm_vlog(enum rm_log_level level, const char *fmt, va_list ap)
{
	emit(level, 0, NULL, 0, fmt, ap);
}

void rm_log(enum rm_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(level, 0, NULL, 0, fmt, ap);
	va_end(ap);
}

void rm_log_fields(enum rm_log_level level, const struct rm_log_field *fields, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(level, 0, fields, n, fmt, ap);
	va_end(ap);
}

void rm_log_cmd(enum rm_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(level, 1, NULL, 0, fmt, ap);
	va_end(ap);
}

static int libbpf_line(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	enum rm_log_level level = lvl == LIBBPF_WARN ? RM_LOG_NOTICE : RM_LOG_DEBUG;
	char buf[8192];
	size_t n;

	/* The verifier's log of a refused program: pages nobody asked for, unless debugging. */
	if (strstr(fmt, "BEGIN PROG LOAD LOG"))
		level = RM_LOG_DEBUG;
	if (level > threshold && !getenv("ROCEMETER_LIBBPF_DEBUG"))
		return 0;
	/* libbpf's lines carry their own "libbpf: " and newline. */
	if (!rm_log_to_journal())
		return vfprintf(stderr, fmt, ap);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	to_journal(level, buf, NULL, 0);
	return 0;
}

void rm_log_route_libbpf(void)
{
	libbpf_set_print(libbpf_line);
}
