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
#include "common/params.h"
#include "flowlabel.h"

/* What the options say: the connection and the hash. */
struct fl_args {
	struct in6_addr src, dst;
	uint32_t dqp, sqp;
	int has_sqp; /* --sqp given: UD, a DETH */
	struct rm_fl_params p;
};

#define A struct fl_args
static const struct rm_opt fl_opts[] = {
	RM_OPT("src", 's', "ADDR", RM_OPT_ADDR, "IPv6 source address", RM_OPT_AT(A, src), .family = 6,
	       .note = "Flow Labels exist only in IPv6", .required = 1),
	RM_OPT("dst", 'd', "ADDR", RM_OPT_ADDR, "IPv6 destination address", RM_OPT_AT(A, dst), .family = 6,
	       .note = "Flow Labels exist only in IPv6", .required = 1),
	RM_OPT("dqp", 'q', "QPN", RM_OPT_UINT, "BTH destination QP (0..%#llx, decimal or 0x hex)", RM_OPT_AT(A, dqp),
	       .lo = 0, .hi = RM_QPN_MAX, .note = "a QPN has 24 bits", .required = 1, .hv = { RM_QPN_MAX }),
	RM_OPT("sqp", 'Q', "QPN", RM_OPT_UINT, "DETH source QP (UD SEND opcodes 0x64/0x65)", RM_OPT_AT(A, sqp), .lo = 0,
	       .hi = RM_QPN_MAX, .note = "a QPN has 24 bits", RM_OPT_SEEN(A, has_sqp)),
	RM_OPT("hash", 'H', "NAME", RM_OPT_ENUM,
	       "literal (default: the Flow Label draft's text taken literally), crc32 (zlib), crc32c, mpeg2",
	       RM_OPT_AT(A, p.variant), .names = rm_flowlabel_variant_names),
	RM_OPT("mix", 'm', NULL, RM_OPT_FLAG, "apply the murmur3 finalizer to the 32-bit result", RM_OPT_AT(A, p.mix)),
	RM_OPT("seed", 'S', "N", RM_OPT_UINT, "32-bit secret XORed into the initial CRC register", RM_OPT_AT(A, p.seed),
	       .lo = 0, .hi = UINT32_MAX, .note = "a 32-bit number"),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};
#undef A

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

/* ":": a missing value is told apart from an unknown option, in our own words. */
static const struct rm_cmd_opts fl_cmd = {
	.t = fl_opts, .prefix = ":", .usage = fl_usage, .usage_on_error = 1, .positional = 1
};

static int cmd_flowlabel(int argc, char **argv)
{
	struct fl_args a = { .p = { .variant = RM_FL_LITERAL } };
	uint32_t hash, label;
	int rc;

	rc = rm_opts_parse(&fl_cmd, argc, argv, &a);
	if (rc >= 0)
		return rc;
	label = rm_flowlabel_compute(&a.p, &a.src, &a.dst, a.has_sqp, a.sqp, a.dqp, &hash);
	printf("hash:       0x%08x (%s%s%s)\n", hash, rm_flowlabel_variant_name(a.p.variant), a.p.mix ? ", mix" : "",
	       a.p.seed ? ", seeded" : "");
	printf("flow label: 0x%05x (%u)\n", rm_fl_label_written(label), rm_fl_label_written(label));
	if (!label)
		printf("note: computed label 0: the program writes the substitute 0x%05x instead\n",
		       RM_FL_ZERO_SUBSTITUTE);
	return RM_EXIT_OK;
}

RM_COMMAND(flowlabel, 70, "compute the IPv6 Flow Label of a RoCEv2 connection", cmd_flowlabel);
