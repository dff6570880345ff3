// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_opts.c - what user/common/ gives every subcommand:
 *   - numbers (opts.h): decimal or 0x hex, never octal, no sign or blanks,
 *     in a range; an option's message names it and the range; the
 *     configuration file reads its integers by the same rule
 *     (docs/configuration.md "Syntax and errors");
 *   - command-line overrides of a loaded configuration (config.h);
 *   - paths (paths.h) and their environment overrides;
 *   - the log (log.h): prefixes, the default threshold, levels.
 * Expected values come from the documentation's wording, not from the code.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/config.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/paths.h"

static struct rm_config_file cfg; /* large: static */

static void assert_uint(const char *text, uint64_t min, uint64_t max, uint64_t expected)
{
	uint64_t v = ~expected;

	if (rm_parse_uint(text, min, max, &v))
		fail_msg("'%s' refused in %llu..%llu", text, (unsigned long long)min, (unsigned long long)max);
	assert_int_equal(v, expected);
}

static void assert_refused(const char *text, uint64_t min, uint64_t max)
{
	uint64_t v = 7;

	if (rm_parse_uint(text, min, max, &v) != -EINVAL)
		fail_msg("'%s' accepted in %llu..%llu", text, (unsigned long long)min, (unsigned long long)max);
	assert_int_equal(v, 7); /* untouched */
}

static void decimal_or_hex(void **state)
{
	assert_uint("0", 0, 10, 0);
	assert_uint("4194304", 1, 4194304, 4194304);
	assert_uint("010", 0, 100, 10); /* not octal */
	assert_uint("08", 0, 100, 8);
	assert_uint("0x10", 0, 100, 16);
	assert_uint("0X1f", 0, 100, 31);
	assert_uint("0xffffff", 0, 0xffffff, 0xffffff);
	assert_uint("18446744073709551615", 0, UINT64_MAX, UINT64_MAX);
}

static void not_numbers(void **state)
{
	static const char *const bad[] = { "", "-1", "+1", " 1", "1 ", "1e3", "0b1", "0x", "0x-1", "0x 1",
					   "64k", "one", "18446744073709551616" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_refused(bad[i], 0, UINT64_MAX);
	assert_int_equal(rm_parse_uint(NULL, 0, 1, &(uint64_t){ 0 }), -EINVAL);
}

static void ranges(void **state)
{
	assert_refused("0", 1, 4194304);
	assert_refused("4194305", 1, 4194304);
	assert_refused("0x1000000", 0, 0xffffff);
	assert_uint("1", 1, 1, 1);
}

static void option_message(void **state)
{
	char err[128];
	uint64_t v = 5;

	assert_int_equal(rm_opt_uint("--window", "0", 1, 4194304, &v, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--window: '0' is not an integer in 1..4194304");
	assert_int_equal(v, 5);
	assert_int_equal(rm_opt_uint("--pen", "0x7e59", 1, UINT32_MAX, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 32345);
	assert_int_equal(rm_opt_uint("--seed", "-1", 0, UINT32_MAX, &v, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--seed: '-1' is not an integer in 0..4294967295");
}

/* docs/configuration.md: "Integers are decimal or 0x hexadecimal". */
static void config_reads_numbers_alike(void **state)
{
	char path[] = "/tmp/rm-test-opts-XXXXXX", err[512];
	const char *text = "[meter]\nwindow = 010\nmax_contexts = 0x100\n[collect]\nmax_sessions = 08\n";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	rm_config_defaults(&cfg);
	assert_int_equal(rm_config_load(path, &cfg, err, sizeof(err)), 0);
	unlink(path);
	assert_int_equal(cfg.meter.window, 10);
	assert_int_equal(cfg.meter.max_contexts, 256);
	assert_int_equal(cfg.collect.max_sessions, 8);
}

static void overrides(void **state)
{
	struct rm_config_overrides o;

	rm_config_defaults(&cfg);
	cfg.meter.window = 64;
	cfg.export.report_interval_ms = 500;
	rm_config_overrides_init(&o);
	rm_config_apply_overrides(&cfg, &o); /* nothing given: the file's values stay */
	assert_int_equal(cfg.meter.window, 64);
	assert_int_equal(cfg.meter.max_contexts, 65536);
	assert_int_equal(cfg.meter.provision_all, 0);
	assert_int_equal(cfg.export.report_interval_ms, 500);

	o.window = 4096;
	o.max_contexts = 10;
	o.provision_all = 1;
	o.has_report_interval = 1;
	o.report_interval_ms = 0; /* 0 is a value: finals only */
	rm_config_apply_overrides(&cfg, &o);
	assert_int_equal(cfg.meter.window, 4096);
	assert_int_equal(cfg.meter.max_contexts, 10);
	assert_int_equal(cfg.meter.provision_all, 1);
	assert_int_equal(cfg.export.report_interval_ms, 0);
}

static void assert_path(int rc, const char *got, const char *expected)
{
	assert_int_equal(rc, 0);
	assert_string_equal(got, expected);
}

static void paths(void **state)
{
	char buf[256];

	unsetenv("ROCEMETER_BPFFS");
	unsetenv("ROCEMETER_RUNDIR");
	assert_path(rm_paths_pin_dir("eth1", buf, sizeof(buf)), buf, "/sys/fs/bpf/rocemeter/eth1");
	assert_path(rm_paths_pin("eth1", "fl_stats", buf, sizeof(buf)), buf, "/sys/fs/bpf/rocemeter/eth1/fl_stats");
	assert_path(rm_paths_run_file("eth1", RM_RUN_LOCK, buf, sizeof(buf)), buf, "/run/rocemeter/eth1.lock");
	setenv("ROCEMETER_BPFFS", "/tmp/bpf", 1);
	setenv("ROCEMETER_RUNDIR", "/tmp/run", 1);
	assert_path(rm_paths_pin("eth1", "contexts", buf, sizeof(buf)), buf, "/tmp/bpf/rocemeter/eth1/contexts");
	assert_path(rm_paths_run_file("eth1", RM_RUN_PID, buf, sizeof(buf)), buf, "/tmp/run/eth1.pid");
	setenv("ROCEMETER_BPFFS", "", 1); /* empty: the default */
	assert_path(rm_paths_pin_dir("eth1", buf, sizeof(buf)), buf, "/sys/fs/bpf/rocemeter/eth1");
	assert_int_equal(rm_paths_pin_dir("eth1", buf, 10), -ENAMETOOLONG);
	unsetenv("ROCEMETER_BPFFS");
	unsetenv("ROCEMETER_RUNDIR");
}

/* Run fn with stderr going to a file; the file's text into out. */
static void capture_stderr(void (*fn)(void), char *out, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, len - 1, tmp);
	out[n] = 0;
	fclose(tmp);
}

static void log_some(void)
{
	rm_log(RM_LOG_ERR, "e %d", 1);
	rm_log(RM_LOG_WARNING, "w");
	rm_log(RM_LOG_NOTICE, "n");
	rm_log(RM_LOG_INFO, "i");
	rm_log(RM_LOG_DEBUG, "d");
	rm_log_cmd(RM_LOG_ERR, "usage");
}

static void log_levels(void **state)
{
	char out[1024];

	/* The default shows what the daemons always said (up to notice). */
	assert_int_equal(rm_log_level(), RM_LOG_NOTICE);
	capture_stderr(log_some, out, sizeof(out));
	assert_string_equal(out, "rocemeter: e 1\nrocemeter: w\nrocemeter: n\nrocemeter: usage\n");
	rm_log_set_command("attach");
	rm_log_set_level(RM_LOG_DEBUG);
	capture_stderr(log_some, out, sizeof(out));
	assert_string_equal(out, "rocemeter: e 1\nrocemeter: w\nrocemeter: n\nrocemeter: i\nrocemeter: d\n"
				 "rocemeter attach: usage\n");
	rm_log_set_ident("rocemeter collect");
	rm_log_set_level(RM_LOG_ERR);
	capture_stderr(log_some, out, sizeof(out));
	assert_string_equal(out, "rocemeter collect: e 1\nrocemeter attach: usage\n");
	rm_log_set_ident("rocemeter");
	rm_log_set_command(NULL);
	rm_log_set_level(RM_LOG_NOTICE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decimal_or_hex),
		cmocka_unit_test(not_numbers),
		cmocka_unit_test(ranges),
		cmocka_unit_test(option_message),
		cmocka_unit_test(config_reads_numbers_alike),
		cmocka_unit_test(overrides),
		cmocka_unit_test(paths),
		cmocka_unit_test(log_levels),
	};

	return cmocka_run_group_tests_name("opts", tests, NULL, NULL);
}
