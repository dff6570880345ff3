// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_connections.c - `rocemeter connections FILE...` and `connections
 * --live IFACE`: parse the options, run the connection census over capture
 * files (census_run.h) or at an interface's tc ingress for a while
 * (census/census.h), print the table and the [provision] lines, or JSON
 * (census/connections.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "census/census.h"
#include "census/connections.h"
#include "census_run.h"
#include "common/command.h"
#include "common/config.h"
#include "common/jsonw.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/params.h"
#include "common/signals.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

/* What the command line says. */
struct connections_args {
	const char *live, *config, *encapsulation;
	uint32_t seconds, max_connections;
	int has_seconds, provision_only, json;
};

enum { O_SECONDS = 1 };

#define C struct connections_args
static const struct rm_opt connections_opts[] = {
	RM_OPT("live", 'l', "IFACE", RM_OPT_ARG,
	       "count at the tc ingress of IFACE instead of reading captures (root; SIGINT or SIGTERM ends "
	       "the count early)",
	       RM_OPT_AT(C, live)),
	RM_OPT("seconds", 's', "N", RM_OPT_CALL, "with --live: count for N seconds, 1..%llu (default %llu)",
	       .id = O_SECONDS, .hv = { RM_CENSUS_SECONDS_MAX, RM_CENSUS_SECONDS_DEFAULT }),
	RM_OPT("max-connections", 'm', "N", RM_OPT_UINT,
	       "connection keys counted at most, %llu..%llu (default %llu; beyond: not_counted_table_full)",
	       RM_OPT_AT(C, max_connections), .lo = RM_CENSUS_MAX_CONNECTIONS_MIN, .hi = RM_CENSUS_MAX_CONNECTIONS_MAX,
	       .hv = { RM_CENSUS_MAX_CONNECTIONS_MIN, RM_CENSUS_MAX_CONNECTIONS_MAX,
		       RM_CENSUS_MAX_CONNECTIONS_DEFAULT }),
	RM_OPT("provision-only", 'p', NULL, RM_OPT_FLAG,
	       "print only the [provision] section (a file that --config of attach and replay reads)",
	       RM_OPT_AT(C, provision_only)),
	RM_OPT("json", 'j', NULL, RM_OPT_FLAG, "one JSON object (docs/json.md \"connections\")", RM_OPT_AT(C, json)),
	RM_CENSUS_CAPTURE_OPTS(C, config, encapsulation),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};
#undef C

static void usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter connections [OPTIONS] PCAP...\n"
		   "       rocemeter connections --live IFACE [--seconds N] [OPTIONS]\n\n"
		   "List the RoCEv2 connections seen in capture files (pcap or pcapng,\n"
		   "Ethernet), or at the tc ingress of IFACE for N seconds: per key (source,\n"
		   "destination, destination QP, P_Key, VLAN IDs) the packets by opcode class,\n"
		   "the opcodes, and whether the sequence observation profile can cover it\n"
		   "(only SEND and RDMA WRITE requests) or why not; then a [provision] section\n"
		   "with one ready 'connection = SRC DST QPN PKEY' line per eligible\n"
		   "connection and a comment line per excluded one.\n\n"
		   "Options:\n");
	rm_opts_help(f, connections_opts, 29, 6);
	fprintf(f, "\n"
		   "Exit status: 0 ok, 1 a capture could not be read or the census could not\n"
		   "be loaded or attached, 2 usage error.\n");
}

/* --seconds N: the value, and that it was given (it needs --live). */
static int connections_option(void *target, const struct rm_opt *e, const char *value)
{
	struct connections_args *a = target;
	char err[256];
	uint64_t v;

	if (rm_opt_uint("--seconds", value, 1, RM_CENSUS_SECONDS_MAX, &v, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	a->seconds = (uint32_t)v;
	a->has_seconds = 1;
	return 0;
}

static const struct rm_cmd_opts connections_cmd = {
	.t = connections_opts, .usage = usage, .usage_on_error = 1, .call = connections_option
};

/*
 * "# observation point N: id ID [NAME] KIND [SOURCE] session S" per mirror session of the census, then
 * "# unknown mirror session: KIND [SOURCE] session S: N frames, not counted (...)" per session no line names.
 */
static void print_points(FILE *f, const struct rm_census_result *res, const struct rm_capture_settings *c)
{
	char key[96];

	for (int i = 0; i < res->n_points; i++) {
		const struct rm_census_point *p = &res->points[i];

		fprintf(f, "# observation point %u: id %llu %s %s\n", p->obs, (unsigned long long)p->id,
			p->obs <= c->n_points ? c->points[p->obs - 1].name : "(derived)",
			rm_capture_key_text(&p->key, key, sizeof(key)));
	}
	for (int i = 0; i < res->n_unknown; i++)
		fprintf(f,
			"# unknown mirror session: %s: %llu frames, not counted (no observation_point line names it)\n",
			rm_capture_key_text(&res->unknown[i].key, key, sizeof(key)),
			(unsigned long long)res->unknown[i].frames);
}

static int cmd_connections(int argc, char **argv)
{
	static struct rm_config_file cfg; /* large: static */
	struct connections_args a = { .seconds = RM_CENSUS_SECONDS_DEFAULT,
				      .max_connections = RM_CENSUS_MAX_CONNECTIONS_DEFAULT };
	struct rm_census_result res;
	int64_t frames_read = -1;
	char err[512];
	int rc;

	rc = rm_opts_parse(&connections_cmd, argc, argv, &a);
	if (rc >= 0)
		return rc;
	if (a.json && a.provision_only) {
		rm_log_cmd(RM_LOG_ERR, "--json and --provision-only exclude each other");
		return RM_EXIT_USAGE;
	}
	if (a.live && optind < argc) {
		rm_log_cmd(RM_LOG_ERR, "--live reads no capture file");
		return RM_EXIT_USAGE;
	}
	if (!a.live && a.has_seconds) {
		rm_log_cmd(RM_LOG_ERR, "--seconds needs --live IFACE");
		return RM_EXIT_USAGE;
	}
	if (!a.live && optind >= argc) {
		rm_log_cmd(RM_LOG_ERR, "no capture file given (or --live IFACE)");
		usage(stderr);
		return RM_EXIT_USAGE;
	}

	if (rm_census_capture_setup(&cfg, a.config, a.encapsulation, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	if (a.live) {
		rm_signals_handle(on_signal, 0);
		rc = rm_census_live(a.live, a.max_connections, a.seconds, &stop_requested, &res, err, sizeof(err));
	} else {
		uint64_t n = 0;

		rc = rm_census_captures(argv + optind, argc - optind, a.max_connections, isatty(STDERR_FILENO), &res,
					&n, err, sizeof(err));
		frames_read = (int64_t)n;
		if (!rc && rm_census_plain_hint(&res, n, &cfg.capture))
			rm_log_cmd(RM_LOG_NOTICE, "%s", rm_census_plain_hint(&res, n, &cfg.capture));
	}
	if (rc) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	if (a.json) {
		json_t *o = json_object();

		rm_conn_set_json(o, &res, frames_read);
		rc = rm_json_write(stdout, o);
	} else {
		if (!a.provision_only)
			print_points(stdout, &res, &cfg.capture);
		rm_conn_write_text(stdout, &res, frames_read,
				   a.provision_only ? RM_CONN_PROVISION : RM_CONN_TABLE | RM_CONN_PROVISION);
	}
	rm_census_result_free(&res);
	if (rc || fflush(stdout) || ferror(stdout)) {
		rm_log_cmd(RM_LOG_ERR, "standard output: %s", strerror(errno ? errno : EIO));
		return RM_EXIT_FAIL;
	}
	return RM_EXIT_OK;
}

RM_COMMAND(connections, 45, "list the RoCEv2 connections of captures or an interface as [provision] lines",
	   cmd_connections);
