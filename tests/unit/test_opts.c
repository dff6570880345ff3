// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_opts.c - what user/common/ gives every subcommand:
 *   - numbers (opts.h): decimal or 0x hex, never octal, no sign or blanks,
 *     in a range; an option's message names it and the range; the
 *     configuration file reads its integers by the same rule
 *     (docs/configuration.md "Syntax and errors");
 *   - command-line overrides of a loaded configuration (config.h);
 *   - paths (paths.h) and their environment overrides;
 *   - the log (log.h): prefixes, the default threshold, levels;
 *   - option tables (params.h): getopt's arrays, typed values, a key's
 *     range shared with its option, the help's layout.
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
#include <sys/stat.h>
#include <cmocka.h>

#include "common/config.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/params.h"
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
	static const char *const bad[] = {
		"", "-1", "+1", " 1", "1 ", "1e3", "0b1", "0x", "0x-1", "0x 1", "64k", "one", "18446744073709551616"
	};

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

/* Pins and run files are keyed by network namespace and ifindex, never by the name (docs/service.md). */
static void paths(void **state)
{
	struct rm_ifkey k = { .netns = 4026531840ull, .ifindex = 7, .ifname = "eth1" };
	char buf[256];

	unsetenv("ROCEMETER_BPFFS");
	unsetenv("ROCEMETER_RUNDIR");
	assert_path(rm_paths_netns_dir(k.netns, buf, sizeof(buf)), buf, "/sys/fs/bpf/rocemeter/4026531840");
	assert_path(rm_paths_pin_dir(&k, buf, sizeof(buf)), buf, "/sys/fs/bpf/rocemeter/4026531840/7");
	assert_path(rm_paths_pin(&k, "fl_stats", buf, sizeof(buf)), buf, "/sys/fs/bpf/rocemeter/4026531840/7/fl_stats");
	assert_path(rm_paths_run_file(&k, RM_RUN_PID, buf, sizeof(buf)), buf, "/run/rocemeter/4026531840-7.pid");
	setenv("ROCEMETER_BPFFS", "/tmp/bpf", 1);
	setenv("ROCEMETER_RUNDIR", "/tmp/run", 1);
	assert_path(rm_paths_pin(&k, "contexts", buf, sizeof(buf)), buf, "/tmp/bpf/rocemeter/4026531840/7/contexts");
	assert_path(rm_paths_run_file(&k, RM_RUN_STATS, buf, sizeof(buf)), buf, "/tmp/run/4026531840-7.stats");
	setenv("ROCEMETER_BPFFS", "", 1); /* empty: the default */
	assert_path(rm_paths_pin_dir(&k, buf, sizeof(buf)), buf, "/sys/fs/bpf/rocemeter/4026531840/7");
	assert_int_equal(rm_paths_pin_dir(&k, buf, 10), -ENAMETOOLONG);
	unsetenv("ROCEMETER_BPFFS");
	unsetenv("ROCEMETER_RUNDIR");
}

/* The kernel's rule for interface names (dev_valid_name): nothing that climbs out of a directory. */
static void interface_names(void **state)
{
	static const char *const good[] = { "eth1", "br-rdma", "a", "x23456789012345", "en.p1" };
	static const char *const bad[] = { "",       ".",          "..",    "../../x",         "a/b",
					   "eth0:1", "with space", "tab\t", "x234567890123456" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(rm_ifname_valid(good[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(rm_ifname_valid(bad[i]));
	assert_false(rm_ifname_valid(NULL));
}

/* A key names the namespace by its inode (as stat(1) shows it) and the interface by its index. */
static void interface_keys(void **state)
{
	struct rm_ifkey k;
	struct stat st;
	char err[128];

	assert_int_equal(stat("/proc/self/ns/net", &st), 0);
	assert_int_equal(rm_ifkey_by_name("lo", &k, err, sizeof(err)), 0);
	assert_int_equal(k.netns, (uint64_t)st.st_ino);
	assert_int_equal(k.ifindex, 1); /* loopback is the first interface of every namespace */
	assert_string_equal(k.ifname, "lo");
	assert_int_equal(rm_ifkey_by_name("../../x", &k, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'../../x' is not a valid interface name");
	assert_int_equal(rm_ifkey_by_name("rmnosuchif0", &k, err, sizeof(err)), -ENODEV);
	assert_string_equal(err, "no interface 'rmnosuchif0'");
	assert_int_equal(rm_ifkey_by_index(1, &k), 0);
	assert_string_equal(k.ifname, "lo");
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

/* 1700000000 s after the epoch is 2023-11-14T22:13:20Z (date -u -d @1700000000). */
static uint64_t t_real = 1700000000123ull, t_mono = 5000;
#define STAMP "2023-11-14T22:13:20.123Z"

static void log_levels(void **state)
{
	char out[1024];

	rm_log_set_test_clock(&t_real, &t_mono);
	/* The default shows what the daemons always said (up to notice); a
	 * daemon's line has a UTC timestamp and its level, a subcommand's not. */
	assert_int_equal(rm_log_level(), RM_LOG_NOTICE);
	capture_stderr(log_some, out, sizeof(out));
	assert_string_equal(out, STAMP " err rocemeter: e 1\n" STAMP " warning rocemeter: w\n" STAMP
				       " notice rocemeter: n\nrocemeter: usage\n");
	rm_log_set_command("attach");
	rm_log_set_level(RM_LOG_DEBUG);
	capture_stderr(log_some, out, sizeof(out));
	assert_string_equal(out, STAMP " err rocemeter: e 1\n" STAMP " warning rocemeter: w\n" STAMP
				       " notice rocemeter: n\n" STAMP " info rocemeter: i\n" STAMP
				       " debug rocemeter: d\nrocemeter attach: usage\n");
	rm_log_set_ident("rocemeter collect");
	rm_log_set_level(RM_LOG_ERR);
	capture_stderr(log_some, out, sizeof(out));
	assert_string_equal(out, STAMP " err rocemeter collect: e 1\nrocemeter attach: usage\n");
	rm_log_set_ident("rocemeter");
	rm_log_set_command(NULL);
	rm_log_set_level(RM_LOG_NOTICE);
	rm_log_set_test_clock(NULL, NULL);
}

/* --log-level takes journald's names (and their numbers). */
static void log_level_names(void **state)
{
	static const char *const names[] = { "err", "warning", "notice", "info", "debug" };
	enum rm_log_level l;

	for (int i = 0; i < 5; i++) {
		assert_int_equal(rm_log_level_from_name(names[i], &l), 0);
		assert_int_equal(l, RM_LOG_ERR + i);
		assert_string_equal(rm_log_level_name(l), names[i]);
	}
	assert_int_equal(rm_log_level_from_name("7", &l), 0);
	assert_int_equal(l, RM_LOG_DEBUG);
	assert_int_equal(rm_log_level_from_name("error", &l), 0);
	assert_int_equal(l, RM_LOG_ERR);
	assert_int_equal(rm_log_level_from_name("loud", &l), -EINVAL);
	assert_int_equal(rm_log_level_from_name("8", &l), -EINVAL);
}

#define EMFILE_LINE STAMP " err rocemeter: accept: Too many open files"

static void accept_emfile_1000(void)
{
	for (int i = 0; i < 1000; i++)
		rm_log(RM_LOG_ERR, "accept: Too many open files");
}

static void accept_emfile_once(void)
{
	rm_log(RM_LOG_ERR, "accept: Too many open files");
}

static void other_lines(void)
{
	rm_log(RM_LOG_WARNING, "export: connect to 192.0.2.1 port 4740: Connection refused");
	for (int i = 0; i < 8; i++)
		rm_log(RM_LOG_NOTICE, "session ended");
}

/*
 * At most RM_LOG_BURST (5) identical error lines per RM_LOG_WINDOW_MS (10 s,
 * from the first of them); the first line after the window counts what was
 * held back. Other texts and notices are not held back.
 */
static void log_rate_limit(void **state)
{
	char out[8192], expect[8192] = "";

	assert_int_equal(RM_LOG_BURST, 5);
	assert_int_equal(RM_LOG_WINDOW_MS, 10000);
	rm_log_set_test_clock(&t_real, &t_mono);
	capture_stderr(accept_emfile_1000, out, sizeof(out));
	for (int i = 0; i < 5; i++)
		strcat(expect, EMFILE_LINE "\n");
	assert_string_equal(out, expect);

	t_mono += 9999; /* still the same window */
	capture_stderr(accept_emfile_once, out, sizeof(out));
	assert_string_equal(out, "");
	capture_stderr(other_lines, out, sizeof(out));
	strcpy(expect, STAMP " warning rocemeter: export: connect to 192.0.2.1 port 4740: Connection refused\n");
	for (int i = 0; i < 8; i++)
		strcat(expect, STAMP " notice rocemeter: session ended\n");
	assert_string_equal(out, expect);

	t_mono += 1; /* the window has passed: 995 + 1 were held back */
	capture_stderr(accept_emfile_once, out, sizeof(out));
	assert_string_equal(out, EMFILE_LINE " (996 identical messages suppressed before this one)\n");
	rm_log_set_test_clock(NULL, NULL);
}

/* A small command: its target and its table. */
struct t_args {
	int flag;
	const char *file;
	char name[8];
	uint32_t n;
	struct rm_collect_settings cs;
};

static const struct rm_opt t_opts[] = {
	RM_OPT("flag", 'f', NULL, RM_OPT_FLAG, "a flag", RM_OPT_AT(struct t_args, flag)),
	RM_OPT("file", 0, "FILE", RM_OPT_ARG, "a file,\nsecond line", RM_OPT_AT(struct t_args, file)),
	RM_OPT_HEADING("\nHeading:\n"),
	RM_OPT("name", 'n', "NAME", RM_OPT_STR, "cut to fit", RM_OPT_AT(struct t_args, name)),
	RM_OPT("number", 'N', "N", RM_OPT_UINT, "in %llu..%llu", RM_OPT_AT(struct t_args, n), .lo = 1, .hi = 10,
	       .hv = { 1, 10 }),
	RM_OPT("a-very-long-option", 0, "VALUE", RM_OPT_CALL, "after two spaces"),
	RM_OPT("connection", 'c', "SRC,DST", RM_OPT_CALL, "\non the next line"),
	{ 0 },
};

/* getopt's arrays: letters with ':' when they take a value, 256 + index for long-only options. */
static void option_tables(void **state)
{
	struct rm_opts_parser p;

	assert_int_equal(rm_opts_init(&p, t_opts, "+"), 0);
	assert_string_equal(p.shortopts, "+fn:N:c:");
	assert_int_equal(p.n, 6);
	assert_string_equal(p.longopts[1].name, "file");
	assert_int_equal(p.longopts[1].has_arg, required_argument);
	assert_int_equal(p.longopts[1].val, 256 + 1);
	assert_int_equal(p.longopts[0].has_arg, no_argument);
	assert_int_equal(p.longopts[0].val, 'f');
	assert_null(p.longopts[6].name);
}

static void option_values(void **state)
{
	struct t_args a = { 0 };
	struct rm_opt key = { .name = "max-sessions", .kind = RM_OPT_KEY, .section = "collect", .key = "max_sessions" };
	char err[128];

	assert_int_equal(rm_opt_apply(&t_opts[0], NULL, &a, err, sizeof(err)), 0);
	assert_int_equal(a.flag, 1);
	assert_int_equal(rm_opt_apply(&t_opts[1], "/x", &a, err, sizeof(err)), 0);
	assert_string_equal(a.file, "/x");
	assert_int_equal(rm_opt_apply(&t_opts[3], "0123456789", &a, err, sizeof(err)), 0);
	assert_string_equal(a.name, "0123456"); /* a command-line string is cut to fit */
	assert_int_equal(rm_opt_apply(&t_opts[4], "0xa", &a, err, sizeof(err)), 0);
	assert_int_equal(a.n, 10);
	assert_int_equal(rm_opt_apply(&t_opts[4], "11", &a, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--number: '11' is not an integer in 1..10");
	assert_int_equal(a.n, 10);
	/* An option that names a key has the key's range ([collect] max_sessions, limits.h) and place. */
	assert_int_equal(rm_opt_apply(&key, "0", &a.cs, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--max-sessions: '0' is not an integer in 1..65536");
	assert_int_equal(rm_opt_apply(&key, "12", &a.cs, err, sizeof(err)), 0);
	assert_int_equal(a.cs.max_sessions, 12);
	assert_null(rm_config_key("collect", "nosuch"));
	assert_null(rm_config_key("nosuch", "window"));
	assert_non_null(rm_config_key("meter", "window"));
}

/* The layout every command's --help has: letters, a column, continuation lines, headings. */
static void option_help(void **state)
{
	const char *expect = "  -f, --flag       a flag\n"
			     "      --file FILE  a file,\n"
			     "                   second line\n"
			     "\nHeading:\n"
			     "  -n, --name NAME  cut to fit\n"
			     "  -N, --number N   in 1..10\n"
			     "      --a-very-long-option VALUE  after two spaces\n"
			     "  -c, --connection SRC,DST\n"
			     "                   on the next line\n";
	char out[1024] = { 0 };
	FILE *f = fmemopen(out, sizeof(out) - 1, "w");

	assert_non_null(f);
	rm_opts_help(f, t_opts, 19, 6);
	fclose(f);
	assert_string_equal(out, expect);
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
		cmocka_unit_test(interface_names),
		cmocka_unit_test(interface_keys),
		cmocka_unit_test(log_levels),
		cmocka_unit_test(log_level_names),
		cmocka_unit_test(log_rate_limit),
		cmocka_unit_test(option_tables),
		cmocka_unit_test(option_values),
		cmocka_unit_test(option_help),
	};

	return cmocka_run_group_tests_name("opts", tests, NULL, NULL);
}
