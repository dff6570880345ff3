// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_check_config.c - `rocemeter check-config FILE`: validate a
 * configuration file as `attach` and `collect` would read it, without
 * touching an interface or a socket: every section parsed (config.c), the
 * TLS settings of [export] and [collect] turned into real TLS contexts
 * (tls.c: files readable, key matching its certificate, not encrypted, CA
 * loadable, peer names given). Exit 0 when the file would be accepted, 2
 * with one line naming the file, key and value when not. The units run it
 * before a reload (docs/service.md).
 */
#include <stdio.h>
#include <string.h>

#include <openssl/ssl.h>

#include "command.h"
#include "config.h"
#include "log.h"
#include "params.h"
#include "tls.h"

static const struct rm_opt check_opts[] = {
	RM_OPT("quiet", 'q', NULL, RM_OPT_FLAG, "no summary line when the file is accepted", .off = 0,
	       .size = sizeof(int)),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter check-config [--quiet] FILE\n\n"
		   "Check a configuration file as `rocemeter attach` and `rocemeter collect`\n"
		   "read it: every section and key, and for [export] and [collect] the TLS\n"
		   "files (readable, key matching the certificate, not encrypted, CA loadable)\n"
		   "and the peer names. [collect] must be complete on its own (store, or db,\n"
		   "and cert, key, ca and peer_name unless transport = tcp), as\n"
		   "rocemeter-collect.service reads it without options; db and store together\n"
		   "are refused. Nothing is attached, opened or listened on (a clickhouse:\n"
		   "store is not contacted, its credentials file not read).\n\n"
		   "Exit status: 0 the file is accepted, 2 it is refused (the reason on\n"
		   "stderr, naming the file, key and value).\n\n");
	rm_opts_help(f, check_opts, 16, 6);
}

/* The target: int quiet. */
static const struct rm_cmd_opts check_cmd = { .t = check_opts, .usage = usage, .usage_on_error = 1 };

/* A TLS context from s, as the exporter (server = 0) or the collector (1) makes it. */
static int check_tls(const char *path, const char *section, const struct rm_tls_settings *s, int server)
{
	char err[1024];
	SSL_CTX *ctx;

	if (s->plain_tcp)
		return 0;
	ctx = server ? rm_tls_server_ctx(s, err, sizeof(err)) : rm_tls_client_ctx(s, err, sizeof(err));
	if (!ctx) {
		rm_log_cmd(RM_LOG_ERR, "%s: [%s] %s", path, section, err);
		return -1;
	}
	SSL_CTX_free(ctx);
	return 0;
}

static int cmd_check_config(int argc, char **argv)
{
	static struct rm_config_file cfg; /* large: static */
	const char *path;
	char err[1024];
	int quiet = 0, rc;

	rc = rm_opts_parse(&check_cmd, argc, argv, &quiet);
	if (rc >= 0)
		return rc;
	if (optind != argc - 1) {
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	path = argv[optind];
	rm_config_defaults(&cfg);
	if (rm_config_load(path, &cfg, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	if (cfg.export.enabled && check_tls(path, "export", &cfg.export.tls, 0))
		return RM_EXIT_USAGE;
	if (cfg.sections & RM_CONFIG_EXPORT && !cfg.export.enabled && cfg.export.tls.n_peer_names)
		rm_log_cmd(RM_LOG_WARNING, "%s: [export] has no collector: reports are printed, not exported", path);
	if (cfg.sections & RM_CONFIG_COLLECT) {
		if (rm_collect_store_check(&cfg.collect, err, sizeof(err))) {
			rm_log_cmd(RM_LOG_ERR, "%s: [collect] %s", path, err);
			return RM_EXIT_USAGE;
		}
		/* the memory budget: checked by rm_config_load() at its line */
		if (check_tls(path, "collect", &cfg.collect.tls, 1))
			return RM_EXIT_USAGE;
	}
	if (cfg.export.enabled && cfg.export.tls.plain_tcp)
		rm_log_cmd(RM_LOG_WARNING, "%s: [export] transport = tcp: reports go unauthenticated and unencrypted",
			   path);
	if (cfg.sections & RM_CONFIG_COLLECT && cfg.collect.tls.plain_tcp)
		rm_log_cmd(RM_LOG_WARNING,
			   "%s: [collect] transport = tcp: sessions are neither authenticated nor "
			   "confidential",
			   path);
	if (!quiet) {
		/* What each command would read: a collector-only file has no meter part. */
		const char *sep = "";

		printf("%s: accepted: ", path);
		if (!(cfg.sections & RM_CONFIG_COLLECT) ||
		    cfg.sections & (RM_CONFIG_METER | RM_CONFIG_PROVISION | RM_CONFIG_EXPORT)) {
			printf("[meter] window %u, max_contexts %u%s; %d connection line%s", cfg.meter.window,
			       cfg.meter.max_contexts, cfg.meter.provision_all ? ", provision_all" : "",
			       cfg.n_provision, cfg.n_provision == 1 ? "" : "s");
			sep = "; ";
		}
		if (cfg.export.enabled)
			printf("; [export] to %s port %u over %s", cfg.export.collector, cfg.export.port,
			       cfg.export.tls.plain_tcp ? "plain TCP" : "TLS 1.3");
		if (cfg.sections & RM_CONFIG_COLLECT)
			printf("%s[collect] on %s into %s over %s", sep, cfg.collect.listen,
			       rm_collect_store_name(&cfg.collect),
			       cfg.collect.tls.plain_tcp ? "plain TCP" : "TLS 1.3");
		printf("\n");
	}
	return RM_EXIT_OK;
}

RM_COMMAND_NAMED(check_config, "check-config", 80,
		 "check a configuration file as attach and collect would read it (exit 0 or 2)", cmd_check_config);
