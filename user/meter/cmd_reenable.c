// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_reenable.c - `rocemeter reenable IFACE CONNECTION...|--all`: meter
 * again connections that a profile violation disabled on IFACE (the
 * explicit reprovisioning of [SEQOBS] "Applicability and Provisioning"),
 * through the pins of the running attachment (violations.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/command.h"
#include "common/config.h"
#include "common/log.h"
#include "common/params.h"
#include "common/paths.h"
#include "violations.h"

#define CONNECTION_WORDS 4 /* SRC DST QPN|any PKEY|any */

static const struct rm_opt reenable_opts[] = {
	RM_OPT("all", 'a', NULL, RM_OPT_FLAG, "every disabled connection, and leave the fail-safe", .off = 0,
	       .size = sizeof(int)),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter reenable IFACE SRC DST QPN|any PKEY|any [SRC DST QPN|any PKEY|any ...]\n"
		   "       rocemeter reenable IFACE --all\n\n"
		   "Meter again connections of IFACE that a profile violation (an RDMA READ, an\n"
		   "atomic, a malformed or foreign-transport request) disabled: their next request\n"
		   "starts a fresh epoch, if they are provisioned. A connection is given as a\n"
		   "[provision] line is (any: every QP or P_Key; VLAN IDs: any); each must match a\n"
		   "disabled connection, else nothing changes. --all re-enables every one and\n"
		   "leaves the fail-safe of a full violations map. `rocemeter status IFACE` lists\n"
		   "them. A SIGHUP reload re-enables only connections whose provisioning changed.\n\n"
		   "Options:\n");
	rm_opts_help(f, reenable_opts, 14, 6);
	fprintf(f, "\n"
		   "Exit status: 0 done; 1 not attached, or a connection matches no disabled one;\n"
		   "2 usage.\n");
}

/* "+": options only before IFACE, so that nothing in a pattern is taken for one. The target: int all. */
static const struct rm_cmd_opts reenable_cmd = {
	.t = reenable_opts, .prefix = "+", .usage = usage, .usage_on_error = 1
};

/*
 * The words after IFACE, CONNECTION_WORDS per connection (a quoted line
 * counts as its words) into *out, *n. 0, or -1 after printing why.
 */
static int parse_patterns(int argc, char **argv, struct rm_provision **out, int *n)
{
	char *words[256], *copy[64], *save, line[512], err[256];
	int nw = 0, rc = -1;

	*out = NULL;
	*n = 0;
	for (int i = 0; i < argc && i < 64; i++) {
		char *t;

		copy[i] = strdup(argv[i]);
		for (t = copy[i] ? strtok_r(copy[i], " \t", &save) : NULL; t && nw < 256;
		     t = strtok_r(NULL, " \t", &save))
			words[nw++] = t;
	}
	if (argc > 64 || nw == 0 || nw % CONNECTION_WORDS) {
		rm_log_cmd(RM_LOG_ERR, "give each connection as SRC DST QPN|any PKEY|any (%d words), or --all",
			   CONNECTION_WORDS);
		goto out;
	}
	*out = calloc((size_t)(nw / CONNECTION_WORDS), sizeof(**out));
	if (!*out)
		goto out;
	for (int i = 0; i < nw; i += CONNECTION_WORDS) {
		snprintf(line, sizeof(line), "%s %s %s %s", words[i], words[i + 1], words[i + 2], words[i + 3]);
		if (rm_parse_connection(line, &(*out)[(*n)++], err, sizeof(err))) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			goto out;
		}
	}
	rc = 0;
out:
	for (int i = 0; i < argc && i < 64; i++)
		free(copy[i]);
	return rc;
}

static void print_done(const char *ifname, const struct rm_ctx_key *keys, size_t n)
{
	char buf[160];

	printf("re-enabled %zu connection%s on %s\n", n, n == 1 ? "" : "s", ifname);
	for (size_t i = 0; i < n; i++) {
		rm_violations_format_key(&keys[i], buf, sizeof(buf));
		printf("  %s\n", buf);
	}
}

static int cmd_reenable(int argc, char **argv)
{
	struct rm_violations_fds f;
	struct rm_provision *pat = NULL;
	struct rm_ctx_key *done = NULL;
	size_t ndone = 0;
	int all = 0, npat = 0, unmatched, was_fail_safe = 0, e, rc;
	const char *ifname;
	struct rm_ifkey k;
	char err[512];

	rc = rm_opts_parse(&reenable_cmd, argc, argv, &all);
	if (rc >= 0)
		return rc;
	rc = RM_EXIT_OK;
	if (optind >= argc) {
		rm_log_cmd(RM_LOG_ERR, "give an interface");
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	ifname = argv[optind++];
	if (optind < argc && (!strcmp(argv[optind], "--all") || !strcmp(argv[optind], "-a"))) {
		all = 1;
		optind++;
	}
	if (all && optind < argc) {
		rm_log_cmd(RM_LOG_ERR, "--all re-enables every connection: give no connection with it");
		return RM_EXIT_USAGE;
	}
	if (!all && optind >= argc) {
		rm_log_cmd(RM_LOG_ERR, "give the connections to re-enable, or --all");
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (!all && parse_patterns(argc - optind, argv + optind, &pat, &npat)) {
		free(pat);
		return RM_EXIT_USAGE;
	}
	e = rm_ifkey_by_name(ifname, &k, err, sizeof(err));
	if (e == -ENODEV) {
		rm_log_cmd(RM_LOG_ERR, "the meter is not attached to %s (no such interface)", ifname);
		free(pat);
		return RM_EXIT_FAIL;
	}
	if (e) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		free(pat);
		return RM_EXIT_USAGE;
	}
	if (rm_violations_open_pinned(&k, &f, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		free(pat);
		return RM_EXIT_FAIL;
	}
	if (all)
		e = rm_violations_reenable_all(&f, &was_fail_safe, &done, &ndone);
	else
		e = rm_violations_reenable_matching(&f, pat, npat, &unmatched, &done, &ndone);
	if (e) {
		rm_log_cmd(RM_LOG_ERR, "%s: cannot re-enable: %s", ifname, strerror(-e));
		rc = RM_EXIT_FAIL;
	} else if (!all && unmatched >= 0) {
		rm_log_cmd(RM_LOG_ERR, "no disabled connection on %s matches connection %d; nothing re-enabled", ifname,
			   unmatched + 1);
		rc = RM_EXIT_FAIL;
	} else {
		print_done(ifname, done, ndone);
		if (was_fail_safe)
			printf("left the fail-safe: new connections are metered again\n");
	}
	free(done);
	free(pat);
	rm_violations_close(&f);
	return rc;
}

RM_COMMAND(reenable, 25, "meter again connections a profile violation disabled", cmd_reenable);
