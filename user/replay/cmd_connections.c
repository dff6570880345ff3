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
#include <getopt.h>
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

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rocemeter connections [OPTIONS] PCAP...\n"
		"       rocemeter connections --live IFACE [--seconds N] [OPTIONS]\n\n"
		"List the RoCEv2 connections seen in capture files (pcap or pcapng,\n"
		"Ethernet), or at the tc ingress of IFACE for N seconds: per key (source,\n"
		"destination, destination QP, P_Key, VLAN IDs) the packets by opcode class,\n"
		"the opcodes, and whether the sequence observation profile can cover it\n"
		"(only SEND and RDMA WRITE requests) or why not; then a [provision] section\n"
		"with one ready 'connection = SRC DST QPN PKEY' line per eligible\n"
		"connection and a comment line per excluded one.\n\n"
		"Options:\n"
		"  -l, --live IFACE           count at the tc ingress of IFACE instead of\n"
		"                             reading captures (root; SIGINT or SIGTERM ends\n"
		"                             the count early)\n"
		"  -s, --seconds N            with --live: count for N seconds, 1..%u\n"
		"                             (default %u)\n"
		"  -m, --max-connections N    connection keys counted at most, %u..%u\n"
		"                             (default %u; beyond: not_counted_table_full)\n"
		"  -p, --provision-only       print only the [provision] section (a file\n"
		"                             that --config of attach and replay reads)\n"
		"  -j, --json                 one JSON object (docs/json.md \"connections\")\n"
		"  -c, --config FILE          the [capture] section of FILE: the mirror\n"
		"                             encapsulations to take off, and observation_point\n"
		"                             lines (a key's obs N is line N's; printed first)\n"
		"  -e, --encapsulation LIST   mirror encapsulations to take off, over [capture]:\n"
		"                             plain, erspan (erspan1, erspan2, erspan3), vxlan,\n"
		"                             rspan, comma separated, or auto (all); sessions no\n"
		"                             line names get observation points of their own\n"
		"  -h, --help                 this text\n\n"
		"Exit status: 0 ok, 1 a capture could not be read or the census could not\n"
		"be loaded or attached, 2 usage error.\n",
		RM_CENSUS_SECONDS_MAX, RM_CENSUS_SECONDS_DEFAULT, RM_CENSUS_MAX_CONNECTIONS_MIN,
		RM_CENSUS_MAX_CONNECTIONS_MAX, RM_CENSUS_MAX_CONNECTIONS_DEFAULT);
}

/* --config's [capture] and --encapsulation for the census; 0 or -1 (said). */
static int capture_setup(struct rm_config_file *cfg, const char *config, const char *encapsulation)
{
	char err[512];

	rm_config_defaults(cfg);
	if (config && rm_config_load(config, cfg, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return -1;
	}
	if (encapsulation && rm_capture_override(&cfg->capture, encapsulation, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "--encapsulation %s: %s", encapsulation, err);
		return -1;
	}
	rm_census_set_capture(&cfg->capture);
	return 0;
}

/* "# observation point N: id ID [NAME] KIND [SOURCE] session S" per mirror session of the census. */
static void print_points(FILE *f, const struct rm_census_result *res, const struct rm_capture_settings *c)
{
	for (int i = 0; i < res->n_points; i++) {
		const struct rm_census_point *p = &res->points[i];
		char src[INET6_ADDRSTRLEN] = "";

		if (p->key.kind == RM_MIRROR_ERSPAN)
			inet_ntop(p->key.family == 6 ? AF_INET6 : AF_INET, p->key.src, src, sizeof(src));
		fprintf(f, "# observation point %u: id %llu %s %s%s%s session %u\n", p->obs, (unsigned long long)p->id,
			p->obs <= c->n_points ? c->points[p->obs - 1].name : "(derived)",
			rm_capture_kind_name(p->key.kind), src[0] ? " " : "", src, p->key.session);
	}
}

static int cmd_connections(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "live", required_argument, 0, 'l' },
		{ "seconds", required_argument, 0, 's' },
		{ "max-connections", required_argument, 0, 'm' },
		{ "provision-only", no_argument, 0, 'p' },
		{ "json", no_argument, 0, 'j' },
		{ "config", required_argument, 0, 'c' },
		{ "encapsulation", required_argument, 0, 'e' },
		{ "help", no_argument, 0, 'h' },
		{ 0 },
	};
	uint32_t max_connections = RM_CENSUS_MAX_CONNECTIONS_DEFAULT, seconds = RM_CENSUS_SECONDS_DEFAULT;
	struct rm_census_result res;
	const char *live = NULL, *config = NULL, *encapsulation = NULL;
	static struct rm_config_file cfg; /* large: static */
	int json = 0, provision_only = 0, has_seconds = 0, opt, rc;
	int64_t frames_read = -1;
	char err[512];
	uint64_t v;

	while ((opt = getopt_long(argc, argv, "l:s:m:pjhc:e:", opts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			live = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'e':
			encapsulation = optarg;
			break;
		case 'p':
			provision_only = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 's':
			if (rm_opt_uint("--seconds", optarg, 1, RM_CENSUS_SECONDS_MAX, &v, err, sizeof(err)))
				goto bad_value;
			seconds = (uint32_t)v;
			has_seconds = 1;
			break;
		case 'm':
			if (rm_opt_uint("--max-connections", optarg, RM_CENSUS_MAX_CONNECTIONS_MIN,
					RM_CENSUS_MAX_CONNECTIONS_MAX, &v, err, sizeof(err)))
				goto bad_value;
			max_connections = (uint32_t)v;
			break;
		case 'h':
			usage(stdout);
			return RM_EXIT_OK;
		default:
			usage(stderr);
			return RM_EXIT_USAGE;
		}
	}
	if (json && provision_only) {
		rm_log_cmd(RM_LOG_ERR, "--json and --provision-only exclude each other");
		return RM_EXIT_USAGE;
	}
	if (live && optind < argc) {
		rm_log_cmd(RM_LOG_ERR, "--live reads no capture file");
		return RM_EXIT_USAGE;
	}
	if (!live && has_seconds) {
		rm_log_cmd(RM_LOG_ERR, "--seconds needs --live IFACE");
		return RM_EXIT_USAGE;
	}
	if (!live && optind >= argc) {
		rm_log_cmd(RM_LOG_ERR, "no capture file given (or --live IFACE)");
		usage(stderr);
		return RM_EXIT_USAGE;
	}

	if (capture_setup(&cfg, config, encapsulation))
		return RM_EXIT_USAGE;
	if (live) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		rc = rm_census_live(live, max_connections, seconds, &stop_requested, &res, err, sizeof(err));
	} else {
		uint64_t n = 0;

		rc = rm_census_captures(argv + optind, argc - optind, max_connections, isatty(STDERR_FILENO), &res, &n,
					err, sizeof(err));
		frames_read = (int64_t)n;
	}
	if (rc) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	if (json) {
		json_t *o = json_object();

		rm_conn_set_json(o, &res, frames_read);
		rc = rm_json_write(stdout, o);
	} else {
		if (!provision_only)
			print_points(stdout, &res, &cfg.capture);
		rm_conn_write_text(stdout, &res, frames_read,
				   provision_only ? RM_CONN_PROVISION : RM_CONN_TABLE | RM_CONN_PROVISION);
	}
	rm_census_result_free(&res);
	if (rc || fflush(stdout) || ferror(stdout)) {
		rm_log_cmd(RM_LOG_ERR, "standard output: %s", strerror(errno ? errno : EIO));
		return RM_EXIT_FAIL;
	}
	return RM_EXIT_OK;

bad_value:
	rm_log_cmd(RM_LOG_ERR, "%s", err);
	return RM_EXIT_USAGE;
}

RM_COMMAND(connections, 45, "list the RoCEv2 connections of captures or an interface as [provision] lines",
	   cmd_connections);
