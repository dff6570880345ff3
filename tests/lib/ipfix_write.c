// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ipfix_write - test helper: reads reports as JSON Lines on stdin (see
 * user/common/report_json.h) and writes an IPFIX file (a sequence of IPFIX
 * Messages, as a collector reads from TCP) with the project's encoder:
 * the templates message, then Data messages of at most --per-msg reports.
 *
 *   ipfix_write [--pen N] [--domain N] [--vlan] [--per-msg N] [--time SECONDS] OUT
 *
 * Exit 0 ok, 1 on I/O or encoding failure, 2 on bad usage or input (the
 * line number and the parser's reason go to stderr).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/ipfix.h"
#include "common/report_json.h"

static uint32_t num(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s || v > UINT32_MAX) {
		fprintf(stderr, "ipfix_write: bad %s \"%s\"\n", what, s);
		exit(2);
	}
	return (uint32_t)v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pen", required_argument, NULL, 'p' },  { "domain", required_argument, NULL, 'd' },
		{ "vlan", no_argument, NULL, 'v' },       { "per-msg", required_argument, NULL, 'n' },
		{ "time", required_argument, NULL, 't' }, { NULL, 0, NULL, 0 },
	};
	uint32_t pen = RM_IPFIX_DEFAULT_PEN, domain = 1, when = 1700000000;
	size_t per_msg = 1000000, n = 0, cap = 0, done = 0, len;
	struct rm_report *reports = NULL;
	struct rm_ipfix_encoder enc;
	static uint8_t buf[RM_IPFIX_MSG_MAX];
	char *line = NULL, err[256];
	size_t linecap = 0;
	int vlan = 0, c, lineno = 0;
	FILE *out;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pen = num(optarg, "--pen");
			break;
		case 'd':
			domain = num(optarg, "--domain");
			break;
		case 'v':
			vlan = 1;
			break;
		case 'n':
			per_msg = num(optarg, "--per-msg");
			break;
		case 't':
			when = num(optarg, "--time");
			break;
		default:
			return 2;
		}
	}
	if (optind != argc - 1 || per_msg == 0) {
		fprintf(stderr, "usage: ipfix_write [--pen N] [--domain N] [--vlan] [--per-msg N>0] [--time S] OUT\n");
		return 2;
	}
	while (getline(&line, &linecap, stdin) > 0) {
		lineno++;
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			reports = realloc(reports, cap * sizeof(*reports));
			if (!reports) {
				perror("ipfix_write");
				return 1;
			}
		}
		if (rm_report_parse_json(line, &reports[n], err, sizeof(err))) {
			fprintf(stderr, "ipfix_write: stdin line %d: %s\n", lineno, err);
			return 2;
		}
		n++;
	}
	free(line);

	out = fopen(argv[optind], "wb");
	if (!out) {
		fprintf(stderr, "ipfix_write: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	rm_ipfix_init(&enc, pen, domain, vlan);
	len = rm_ipfix_templates_msg(&enc, when, buf, sizeof(buf));
	if (!len || fwrite(buf, 1, len, out) != len)
		goto fail;
	while (done < n) {
		size_t used, k = n - done < per_msg ? n - done : per_msg;

		len = rm_ipfix_data_msg(&enc, when, reports + done, k, &used, buf, sizeof(buf));
		if (!len) {
			fprintf(stderr, "ipfix_write: report %zu: %s\n", done + 1, strerror(errno));
			fclose(out);
			return 1;
		}
		if (fwrite(buf, 1, len, out) != len)
			goto fail;
		done += used;
	}
	free(reports);
	if (fclose(out) == 0)
		return 0;
	out = NULL;
fail:
	fprintf(stderr, "ipfix_write: writing %s failed\n", argv[optind]);
	if (out)
		fclose(out);
	return 1;
}
