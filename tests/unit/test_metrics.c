// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_metrics.c - the Prometheus exposition writer (user/common/metrics.h)
 * against the rules of the text format (version 0.0.4): HELP and TYPE
 * lines, the escapes of HELP text ('\\' and newline) and of label values
 * ('\\', '"' and newline), metric names, the integer value written exactly,
 * and the listen addresses of --metrics. Expected texts are written from
 * the format's description, not from the code. The server against slow
 * clients: half-sent requests from one address do not keep a scrape from
 * another one waiting.
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

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

static void render_one(void *arg, FILE *out)
{
	fputs("up 1\n", out);
}

/* A TCP connection from src (an address of lo's 127/8) to 127.0.0.1:port; the socket. */
static int connect_from(const char *src, unsigned int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET }, to = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, src, &a.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	to.sin_port = htons((uint16_t)port);
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	return fd;
}

/* 1 while the server keeps fd open (nothing to read, no EOF), 0 once it closed it. */
static int still_open(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

#define SLOW_CLIENTS 40

/*
 * 40 half-sent requests from 127.0.0.2 (the request line and one header, no
 * blank line), then a scrape from 127.0.0.1: it is answered 200 with the
 * rendered text while the slow connections the server admitted are still
 * open, i.e. not because their idle timeout freed a slot (before: 16 slots for
 * all clients, the scrape waited in the listen queue until the slow ones timed
 * out). The scrape's own wait is bounded by that timeout, never measured.
 */
static void slow_clients_do_not_block_a_scrape(void **state)
{
	char err[256], buf[4096];
	int slow[SLOW_CLIENTS], fd, open_now = 0;
	struct timeval tv = { .tv_sec = RM_METRICS_CONNECTION_TIMEOUT_S };
	struct rm_metrics_server *s = rm_metrics_start("127.0.0.1:0", render_one, NULL, err, sizeof(err));
	const char *half = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
	const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	size_t got = 0;
	ssize_t n;

	assert_non_null(s);
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		slow[i] = connect_from("127.0.0.2", rm_metrics_port(s));
		assert_int_equal(send(slow[i], half, strlen(half), 0), (ssize_t)strlen(half));
	}
	fd = connect_from("127.0.0.1", rm_metrics_port(s));
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	while (got < sizeof(buf) - 1 && (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	for (int i = 0; i < SLOW_CLIENTS; i++)
		open_now += still_open(slow[i]);
	assert_true(!strncmp(buf, "HTTP/1.1 200", 12));
	assert_non_null(strstr(buf, "\r\n\r\nup 1\n"));
	/* Some admitted, none timed out yet; the rest refused at once (the per-address limit). */
	assert_int_equal(open_now, RM_METRICS_PER_ADDRESS);
	close(fd);
	for (int i = 0; i < SLOW_CLIENTS; i++)
		close(slow[i]);
	rm_metrics_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(help_and_type),
		cmocka_unit_test(samples),
		cmocka_unit_test(names),
		cmocka_unit_test(listen_addresses),
		cmocka_unit_test(slow_clients_do_not_block_a_scrape),
	};

	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
