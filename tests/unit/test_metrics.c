// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_metrics.c - the Prometheus exposition writer (user/common/metrics.h)
 * against the rules of the text format (version 0.0.4): HELP and TYPE
 * lines, the escapes of HELP text ('\\' and newline) and of label values
 * ('\\', '"' and newline), metric names, the integer value written exactly,
 * and the listen addresses of --metrics. Expected texts are written from
 * the format's description, not from the code.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/metrics.h"

/* What fn writes to a memory stream, as a string (caller frees). */
static char *written(void (*fn)(FILE *f))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fn(f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void family_lines(FILE *f)
{
	rm_metrics_family(f, "rocemeter_meter_frames_total", RM_METRIC_COUNTER, "frames seen");
	rm_metrics_family(f, "rocemeter_export_session", RM_METRIC_GAUGE, "a\\b\nc \"quoted\"");
}

static void help_and_type(void **state)
{
	char *s = written(family_lines);

	/* HELP escapes backslash and newline only; a double quote stays as it is. */
	assert_string_equal(s, "# HELP rocemeter_meter_frames_total frames seen\n"
			       "# TYPE rocemeter_meter_frames_total counter\n"
			       "# HELP rocemeter_export_session a\\\\b\\nc \"quoted\"\n"
			       "# TYPE rocemeter_export_session gauge\n");
	free(s);
}

static void sample_lines(FILE *f)
{
	const struct rm_metric_label two[] = { { "interface", "eth1" }, { "cause", "not_rocev2" } };
	const struct rm_metric_label odd[] = { { "peer", "C:\\dir \"x\"\nend" } };
	const struct rm_metric_label empty[] = { { "interface", "eth1" }, { "observation_point_name", "" } };
	const struct rm_metric_label none[] = { { "observation_point_name", "" } };

	rm_metrics_sample(f, "rocemeter_meter_frames_total", NULL, 0, 0);
	rm_metrics_sample(f, "rocemeter_meter_parsed_frames_total", two, 2, 42);
	rm_metrics_sample(f, "rocemeter_collector_sessions", odd, 1, UINT64_MAX);
	rm_metrics_sample(f, "rocemeter_meter_requests_total", empty, 2, 7);
	rm_metrics_sample(f, "rocemeter_meter_requests_total", none, 1, 8);
}

static void samples(void **state)
{
	char *s = written(sample_lines);

	assert_string_equal(s, "rocemeter_meter_frames_total 0\n"
			       "rocemeter_meter_parsed_frames_total{interface=\"eth1\",cause=\"not_rocev2\"} 42\n"
			       "rocemeter_collector_sessions{peer=\"C:\\\\dir \\\"x\\\"\\nend\"} 18446744073709551615\n"
			       "rocemeter_meter_requests_total{interface=\"eth1\"} 7\n"
			       "rocemeter_meter_requests_total 8\n");
	free(s);
}

static void names(void **state)
{
	assert_true(rm_metrics_name_ok("rocemeter_meter_frames_total"));
	assert_true(rm_metrics_name_ok("a:b_c9"));
	assert_true(rm_metrics_name_ok("_x"));
	assert_false(rm_metrics_name_ok(""));
	assert_false(rm_metrics_name_ok("9lives"));
	assert_false(rm_metrics_name_ok("rocemeter-frames"));
	assert_false(rm_metrics_name_ok("frames total"));
}

static void assert_listen(const char *text, const char *host, unsigned int port)
{
	char h[64], err[128];
	unsigned int p = 1;

	if (rm_metrics_parse_listen("--metrics", text, h, sizeof(h), &p, err, sizeof(err)))
		fail_msg("'%s' refused: %s", text, err);
	assert_string_equal(h, host);
	assert_int_equal(p, port);
}

static void assert_listen_refused(const char *text)
{
	char h[64], err[128], want[128];
	unsigned int p = 1;

	assert_int_equal(rm_metrics_parse_listen("--metrics", text, h, sizeof(h), &p, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "--metrics: '%s' is not ADDR:PORT, [IPV6]:PORT or :PORT", text);
	assert_string_equal(err, want);
}

static void listen_addresses(void **state)
{
	assert_listen("127.0.0.1:9464", "127.0.0.1", 9464);
	assert_listen("[::1]:0", "::1", 0);
	assert_listen(":9100", "", 9100);
	assert_listen("localhost:65535", "localhost", 65535);
	assert_listen_refused("::1:9100"); /* an IPv6 address needs brackets */
	assert_listen_refused("127.0.0.1");
	assert_listen_refused("127.0.0.1:");
	assert_listen_refused("127.0.0.1:65536");
	assert_listen_refused("127.0.0.1:-1");
	assert_listen_refused("[::1]9100");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(help_and_type),
		cmocka_unit_test(samples),
		cmocka_unit_test(names),
		cmocka_unit_test(listen_addresses),
	};

	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
