// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_flowlabel.c - `rocemeter flowlabel`: the IPv6 Flow Label that the
 * flow-label program ([FLOWLABEL]) writes for a connection, computed with
 * rm_flowlabel_compute() (flowlabel.h) from the options.
 */
#include <arpa/inet.h>
#include <stdio.h>

#include "common/command.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/params.h"
#include "flowlabel.h"

/* Every option is handled by cmd_flowlabel() by its letter. */
static const struct rm_opt fl_opts[] = {
	RM_OPT("src", 's', "ADDR", RM_OPT_CALL, "IPv6 source address"),
	RM_OPT("dst", 'd', "ADDR", RM_OPT_CALL, "IPv6 destination address"),
	RM_OPT("dqp", 'q', "QPN", RM_OPT_CALL, "BTH destination QP (0..%#llx, decimal or 0x hex)",
	       .hv = { RM_QPN_MAX }),
	RM_OPT("sqp", 'Q', "QPN", RM_OPT_CALL, "DETH source QP (UD SEND opcodes 0x64/0x65)"),
	RM_OPT("hash", 'H', "NAME", RM_OPT_CALL,
	       "literal (default: the Flow Label draft's text taken\nliterally), crc32 (zlib), crc32c, mpeg2"),
	RM_OPT("mix", 'm', NULL, RM_OPT_CALL, "apply the murmur3 finalizer to the 32-bit result"),
	RM_OPT("seed", 'S', "N", RM_OPT_CALL, "32-bit secret XORed into the initial CRC register"),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};

static void fl_usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter flowlabel --src ADDR --dst ADDR --dqp QPN [--sqp QPN]\n"
		   "                           [--hash literal|crc32|crc32c|mpeg2] [--mix] [--seed N]\n"
		   "       rocemeter flowlabel spread -r FILE | -n N -s ADDR -d ADDR [OPTIONS]\n\n"
		   "Print the IPv6 Flow Label that the flow-label program writes into a\n"
		   "RoCEv2 packet from ADDR to ADDR with destination QP QPN: the low 20 bits of a\n"
		   "CRC over {Src_QP || Dst_QP || low 16 bits of src || low 16 bits of dst} when\n"
		   "--sqp is given (UD, DETH present), else {Dst_QP || low16 src || low16 dst}.\n\n"
		   "Options:\n");
	rm_opts_help(f, fl_opts, 19, 6);
	fprintf(f, "\nA computed label of 0 is written as 0x%05x (a zero Flow Label means no label).\n",
		RM_FL_ZERO_SUBSTITUTE);
	fprintf(f, "\n'rocemeter flowlabel spread --help': the paths connections take over ECMP\n"
		   "with and without the label (docs/flowlabel.md \"Spread over ECMP paths\").\n");
}

static int parse_addr6(const char *opt, const char *s, struct in6_addr *a)
{
	struct in_addr a4;

	if (inet_pton(AF_INET6, s, a) == 1)
		return 0;
	if (inet_pton(AF_INET, s, &a4) == 1)
		rm_log_cmd(RM_LOG_ERR, "%s %s: an IPv4 address; Flow Labels exist only in IPv6", opt, s);
	else
		rm_log_cmd(RM_LOG_ERR, "%s '%s': not an IPv6 address", opt, s);
	return -1;
}

static int cmd_flowlabel(int argc, char **argv)
{
	static struct rm_opts_parser parser;
	const struct rm_opt *e;
	struct rm_fl_params p = { .variant = RM_FL_LITERAL };
	struct in6_addr src, dst;
	int have_src = 0, have_dst = 0, have_dqp = 0, have_sqp = 0, c, v;
	uint32_t dqp = 0, sqp = 0, hash, label;
	char err[256];
	uint64_t x;

	/* ":": a missing value is told apart from an unknown option, in our own words. */
	rm_opts_init(&parser, fl_opts, ":");
	optind = 1;
	opterr = 0;
	while ((c = rm_opts_next(&parser, argc, argv, &e)) != -1) {
		switch (c) {
		case 's':
			if (parse_addr6("--src", optarg, &src))
				return RM_EXIT_USAGE;
			have_src = 1;
			break;
		case 'd':
			if (parse_addr6("--dst", optarg, &dst))
				return RM_EXIT_USAGE;
			have_dst = 1;
			break;
		case 'q':
		case 'Q':
			if (rm_opt_uint(c == 'q' ? "--dqp" : "--sqp", optarg, 0, RM_QPN_MAX, &x, err, sizeof(err))) {
				rm_log_cmd(RM_LOG_ERR, "%s (a QPN has 24 bits)", err);
				return RM_EXIT_USAGE;
			}
			if (c == 'q') {
				dqp = (uint32_t)x;
				have_dqp = 1;
			} else {
				sqp = (uint32_t)x;
				have_sqp = 1;
			}
			break;
		case 'H':
			v = rm_flowlabel_variant_from_name(optarg);
			if (v < 0) {
				rm_log_cmd(RM_LOG_ERR, "--hash '%s': use literal, crc32, crc32c or mpeg2", optarg);
				return RM_EXIT_USAGE;
			}
			p.variant = (__u32)v;
			break;
		case 'm':
			p.mix = 1;
			break;
		case 'S':
			if (rm_opt_uint("--seed", optarg, 0, UINT32_MAX, &x, err, sizeof(err))) {
				rm_log_cmd(RM_LOG_ERR, "%s (a 32-bit number)", err);
				return RM_EXIT_USAGE;
			}
			p.seed = (uint32_t)x;
			break;
		case 'h':
			fl_usage(stdout);
			return RM_EXIT_OK;
		case ':':
			rm_log_cmd(RM_LOG_ERR, "option %s needs a value", argv[optind - 1]);
			return RM_EXIT_USAGE;
		default:
			rm_log_cmd(RM_LOG_ERR, "unknown option %s", argv[optind - 1]);
			fl_usage(stderr);
			return RM_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		rm_log_cmd(RM_LOG_ERR, "unexpected argument '%s'", argv[optind]);
		return RM_EXIT_USAGE;
	}
	if (!have_src || !have_dst || !have_dqp) {
		rm_log_cmd(RM_LOG_ERR, "--src, --dst and --dqp are required");
		fl_usage(stderr);
		return RM_EXIT_USAGE;
	}
	label = rm_flowlabel_compute(&p, &src, &dst, have_sqp, sqp, dqp, &hash);
	printf("hash:       0x%08x (%s%s%s)\n", hash, rm_flowlabel_variant_name(p.variant), p.mix ? ", mix" : "",
	       p.seed ? ", seeded" : "");
	printf("flow label: 0x%05x (%u)\n", rm_fl_label_written(label), rm_fl_label_written(label));
	if (!label)
		printf("note: computed label 0: the program writes the substitute 0x%05x instead\n",
		       RM_FL_ZERO_SUBSTITUTE);
	return RM_EXIT_OK;
}

RM_COMMAND(flowlabel, 70, "compute the IPv6 Flow Label of a RoCEv2 connection", cmd_flowlabel);
