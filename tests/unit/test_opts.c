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

#include <arpa/inet.h>

#include "common/command.h"
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

/* A command with the other kinds: names, addresses, lists, refusals of too long, operands. */
struct k_args {
	struct rm_collect_settings cs; /* first: the RM_OPT_KEY entries' settings */
	uint32_t hash;
	struct in6_addr a6;
	struct in_addr a4;
	char names[3][8];
	int n_names;
	char one[6], other[6];
	int has_a4;
	const char *config, *file, *second;
	uint16_t port;
};

static const char *const k_hashes[] = { "literal", "crc32", "crc32c", "mpeg2", NULL };

static const struct rm_opt k_opts[] = {
	RM_OPT("hash", 'H', "NAME", RM_OPT_ENUM, "a name", RM_OPT_AT(struct k_args, hash), .names = k_hashes),
	RM_OPT("src", 's', "ADDR", RM_OPT_ADDR, "IPv6", RM_OPT_AT(struct k_args, a6), .family = 6,
	       .note = "Flow Labels exist only in IPv6", .required = 1),
	RM_OPT("v4", 0, "ADDR", RM_OPT_ADDR, "IPv4", RM_OPT_AT(struct k_args, a4), .family = 4,
	       RM_OPT_SEEN(struct k_args, has_a4)),
	RM_OPT("name", 'n', "NAME", RM_OPT_LIST, "repeat", RM_OPT_LIST_AT(struct k_args, names, n_names)),
	RM_OPT("one", 0, "X", RM_OPT_STR, "whole", RM_OPT_AT(struct k_args, one), .fit = 1,
	       RM_OPT_CLEARS(struct k_args, other)),
	RM_OPT("other", 0, "X", RM_OPT_STR, "cut", RM_OPT_AT(struct k_args, other), RM_OPT_CLEARS(struct k_args, one)),
	RM_OPT("port", 'p', "N", RM_OPT_UINT, "a port", RM_OPT_AT(struct k_args, port), .lo = 1, .hi = 65535,
	       .note = "a port has 16 bits", .required = 1),
	RM_OPT("listen", 'l', "ADDR:PORT", RM_OPT_KEY, "a key", .section = "collect", .key = "listen"),
	RM_OPT("collector-id", 0, "ID", RM_OPT_KEY, "a key", .section = "collect", .key = "collector_id"),
	RM_OPT("store-spool-dir", 0, "DIR", RM_OPT_KEY, "a key", .section = "collect", .key = "store_spool_dir"),
	RM_OPT("config", 'c', "FILE", RM_OPT_ARG, "read first", RM_OPT_AT(struct k_args, config), .early = 1),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	RM_OPT_OPERAND("FILE", struct k_args, file, .required = 1),
	RM_OPT_OPERAND("SECOND", struct k_args, second),
	{ 0 },
};

static const struct rm_opt *k_opt(const char *name)
{
	for (const struct rm_opt *e = k_opts; e->kind != RM_OPT_END; e++)
		if (e->name && !strcmp(e->name, name))
			return e;
	fail_msg("no option %s", name);
	return NULL;
}

static struct k_args k; /* large: static */

static void assert_refusal(const char *name, const char *value, const char *expect)
{
	char err[256] = "";

	assert_int_equal(rm_opt_apply(k_opt(name), value, &k, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, expect);
}

static void assert_taken(const char *name, const char *value)
{
	char err[256] = "";

	if (rm_opt_apply(k_opt(name), value, &k, err, sizeof(err)))
		fail_msg("--%s '%s' refused: %s", name, value, err);
}

/* One of a list of names: its index; a refusal names them all. */
static void option_enum(void **state)
{
	memset(&k, 0, sizeof(k));
	assert_taken("hash", "crc32c");
	assert_int_equal(k.hash, 2);
	assert_taken("hash", "literal");
	assert_int_equal(k.hash, 0);
	assert_refusal("hash", "md5", "--hash 'md5': use literal, crc32, crc32c or mpeg2");
	assert_refusal("hash", "CRC32", "--hash 'CRC32': use literal, crc32, crc32c or mpeg2");
	assert_int_equal(k.hash, 0);
}

/* An address of one family, in network order (inet_pton's); the other family's is told apart. */
static void option_addresses(void **state)
{
	static const uint8_t a6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t a4[4] = { 192, 0, 2, 7 };

	memset(&k, 0, sizeof(k));
	assert_taken("src", "2001:db8::1");
	assert_memory_equal(&k.a6, a6, 16);
	assert_refusal("src", "192.0.2.1", "--src 192.0.2.1: an IPv4 address; Flow Labels exist only in IPv6");
	assert_refusal("src", "nonsense", "--src 'nonsense': not an IPv6 address");
	assert_refusal("src", "", "--src '': not an IPv6 address");
	assert_int_equal(k.has_a4, 0);
	assert_refusal("v4", "::1", "--v4 ::1: an IPv6 address");
	assert_int_equal(k.has_a4, 0); /* a refused value is not seen */
	assert_taken("v4", "192.0.2.7");
	assert_memory_equal(&k.a4, a4, 4);
	assert_int_equal(k.has_a4, 1);
}

/* A list: one more entry each time (cut to fit), at most as many as the array holds. */
static void option_list(void **state)
{
	memset(&k, 0, sizeof(k));
	assert_taken("name", "a");
	assert_taken("name", "0123456789");
	assert_taken("name", "c");
	assert_int_equal(k.n_names, 3);
	assert_string_equal(k.names[0], "a");
	assert_string_equal(k.names[1], "0123456");
	assert_string_equal(k.names[2], "c");
	assert_refusal("name", "d", "at most 3 --name");
	assert_int_equal(k.n_names, 3);
}

/* A string refused when it does not fit, and two options of which the last given wins. */
static void option_strings(void **state)
{
	memset(&k, 0, sizeof(k));
	assert_taken("other", "0123456789");
	assert_string_equal(k.other, "01234");
	assert_refusal("one", "012345", "--one: value too long");
	assert_string_equal(k.other, "01234"); /* a refused value clears nothing */
	assert_taken("one", "01234");
	assert_string_equal(k.one, "01234");
	assert_string_equal(k.other, "");
	assert_taken("other", "x");
	assert_string_equal(k.one, "");
	assert_refusal("port", "0x10000", "--port: '0x10000' is not an integer in 1..65535 (a port has 16 bits)");
}

/* An option that names a key is read by the key's rule (docs/configuration.md "[collect]"). */
static void option_key_rules(void **state)
{
	char host[300];

	memset(&k, 0, sizeof(k));
	assert_taken("listen", "[::1]:4740");
	assert_string_equal(k.cs.listen, "[::1]:4740");
	assert_refusal("listen", "127.0.0.1:70000",
		       "--listen: '127.0.0.1:70000' is not ADDR:PORT, [IPV6]:PORT or :PORT with PORT in 1..65535");
	/* a host name of 252 octets and a port: more than the key holds, refused rather than cut */
	memset(host, 'h', 252);
	strcpy(host + 252, ":4740");
	assert_int_equal(rm_opt_apply(k_opt("listen"), host, &k, (char[256]){ 0 }, 256), -EINVAL);
	assert_string_equal(k.cs.listen, "[::1]:4740");
	assert_taken("collector-id", "c-1.a_b:2");
	assert_string_equal(k.cs.collector_id, "c-1.a_b:2");
	assert_refusal("collector-id", "bad id",
		       "--collector_id: 'bad id' is not 1..64 letters, digits, '.', '-', '_' or ':'");
	assert_taken("store-spool-dir", "/var/tmp/spool");
	assert_string_equal(k.cs.store_spool_dir, "/var/tmp/spool");
	assert_refusal("store-spool-dir", "", "--store-spool-dir: value empty or too long");
}

static void k_usage(FILE *f)
{
	fputs("USAGE\n", f);
}

static int k_argc;
static char **k_argv;
static int k_rc;
static const struct rm_cmd_opts k_cmd = {
	.t = k_opts, .prefix = ":", .usage = k_usage, .usage_on_error = 1, .positional = 1
};

static void k_parse(void)
{
	k_rc = rm_opts_parse(&k_cmd, k_argc, k_argv, &k);
}

/* rm_opts_parse() over argv (NULL-terminated): its status, and stderr's text into out. */
static int parse_args(char **argv, char *out, size_t len)
{
	for (k_argc = 0; argv[k_argc]; k_argc++)
		;
	k_argv = argv;
	memset(&k, 0, sizeof(k));
	capture_stderr(k_parse, out, len);
	return k_rc;
}

/*
 * A command line as a whole (params.h rm_opts_parse()): the required
 * entries, the operands, getopt's complaints in our words; a list given on
 * the command line replaces the one the target held.
 */
static void option_command_lines(void **state)
{
	char out[512];

	assert_int_equal(parse_args((char *[]){ "x", "-s", "::1", "-p", "1", "f", "g", NULL }, out, sizeof(out)), -1);
	assert_string_equal(out, "");
	assert_string_equal(k.file, "f");
	assert_string_equal(k.second, "g");
	assert_int_equal(parse_args((char *[]){ "x", "-s", "::1", "f", NULL }, out, sizeof(out)), RM_EXIT_USAGE);
	assert_string_equal(out, "rocemeter: --src, --port and FILE are required\nUSAGE\n");
	assert_int_equal(parse_args((char *[]){ "x", "-p", "1", NULL }, out, sizeof(out)), RM_EXIT_USAGE);
	assert_string_equal(out, "rocemeter: --src, --port and FILE are required\nUSAGE\n");
	assert_int_equal(parse_args((char *[]){ "x", "-s", "::1", "-p", "1", "f", "g", "h", NULL }, out, sizeof(out)),
			 RM_EXIT_USAGE);
	assert_string_equal(out, "rocemeter: unexpected argument 'h'\n");
	assert_int_equal(parse_args((char *[]){ "x", "-s", NULL }, out, sizeof(out)), RM_EXIT_USAGE);
	assert_string_equal(out, "rocemeter: option -s needs a value\n");
	assert_int_equal(parse_args((char *[]){ "x", "--bogus", NULL }, out, sizeof(out)), RM_EXIT_USAGE);
	assert_string_equal(out, "rocemeter: unknown option --bogus\nUSAGE\n");
	assert_int_equal(parse_args((char *[]){ "x", "-p", "0", NULL }, out, sizeof(out)), RM_EXIT_USAGE);
	assert_string_equal(out, "rocemeter: --port: '0' is not an integer in 1..65535 (a port has 16 bits)\n");

	/* the first --name of a command line empties the list the target held (a file's) */
	k_argv = (char *[]){ "x", "-s", "::1", "-p", "1", "-n", "a", "f", NULL };
	k_argc = 8;
	memset(&k, 0, sizeof(k));
	strcpy(k.names[0], "file");
	k.n_names = 1;
	capture_stderr(k_parse, out, sizeof(out));
	assert_int_equal(k_rc, -1);
	assert_int_equal(k.n_names, 1);
	assert_string_equal(k.names[0], "a");
}

/* The early pass: only the entries marked early, nothing refused; --help anywhere. */
static void option_early(void **state)
{
	char *argv[] = { "x", "--bogus", "-p", "0", "-c", "a.conf", NULL };

	memset(&k, 0, sizeof(k));
	assert_int_equal(rm_opts_early(&k_cmd, 6, argv, &k), -1);
	assert_string_equal(k.config, "a.conf");
	assert_int_equal(k.port, 0);
}

/* Help is wrapped at print time: lines of at most RM_OPTS_HELP_WIDTH (80) columns; operands are not listed. */
static void option_help_wrapped(void **state)
{
	static const struct rm_opt t[] = {
		RM_OPT("long", 'l', "N", RM_OPT_UINT,
		       "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen",
		       .size = 1),
		RM_OPT("x", 0, NULL, RM_OPT_FLAG, "a\nb c", .size = 1),
		RM_OPT_OPERAND("FILE", struct k_args, file),
		{ 0 },
	};
	const char *expect = "  -l, --long N     one two three four five six seven eight nine ten eleven\n"
			     "                   twelve thirteen fourteen fifteen\n"
			     "      --x          a\n"
			     "                   b c\n";
	char out[512] = { 0 };
	FILE *f = fmemopen(out, sizeof(out) - 1, "w");

	assert_non_null(f);
	rm_opts_help(f, t, 19, 6);
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
		cmocka_unit_test(option_enum),
		cmocka_unit_test(option_addresses),
		cmocka_unit_test(option_list),
		cmocka_unit_test(option_strings),
		cmocka_unit_test(option_key_rules),
		cmocka_unit_test(option_command_lines),
		cmocka_unit_test(option_early),
		cmocka_unit_test(option_help_wrapped),
	};

	return cmocka_run_group_tests_name("opts", tests, NULL, NULL);
}
