// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_collect.c - `rocemeter collect`: the [collect] section of --config,
 * overridden by the options, then the collector (collector.h) until
 * SIGINT/SIGTERM. SIGHUP, SIGUSR1 and SIGUSR2 are ignored (blocked from
 * the first instruction, so that none can kill it while it starts).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "store/clickhouse/chstore.h"
#include "store/clickhouse/clickhouse.h"
#include "collector.h"
#include "common/command.h"
#include "common/signals.h"
#include "common/config.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/params.h"
#include "common/tls.h"
#include "rocemeter/ipfix_ie.h"
#include "store/sqlite/store.h"
#include "store/store_spec.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = 1;
}

/* What collect reads: [collect] (the file's, the options over it) and what only the command line says. */
struct collect_args {
	struct rm_collect_settings cs; /* first: the section's settings of the RM_OPT_KEY entries */
	const char *config, *cluster;
	int store_init;
	uint64_t pen;
};
_Static_assert(offsetof(struct collect_args, cs) == 0, "RM_OPT_KEY: the settings at offset 0 of the target");

#define A struct collect_args
/* Every option in --help order; their target is struct collect_args. */
static const struct rm_opt collect_opts[] = {
	RM_OPT("listen", 'l', "ADDR:PORT", RM_OPT_KEY,
	       "address to listen on, e.g. 127.0.0.1:%llu, [::1]:%llu, :%llu (default [::]:%llu)", .section = "collect",
	       .key = "listen", .hv = { RM_IPFIX_PORT_TLS, RM_IPFIX_PORT_TLS, RM_IPFIX_PORT_TLS, RM_IPFIX_PORT_TLS }),
	RM_OPT("store", 'S', "STORE", RM_OPT_STR,
	       "where epochs are stored: sqlite:FILE (SQLite, created when missing) or "
	       "clickhouse:http[s]://HOST[:PORT][/?database=DB] (ClickHouse's HTTP interface, PORT 8123, https "
	       "8443 when not given; docs/fleet.md)",
	       RM_OPT_AT(A, cs.store), .fit = 1, RM_OPT_CLEARS(A, cs.db)),
	RM_OPT("db", 'd', "FILE", RM_OPT_STR, "the same as --store sqlite:FILE", RM_OPT_AT(A, cs.db),
	       RM_OPT_CLEARS(A, cs.store)),
	RM_OPT("store-credentials", 0, "FILE", RM_OPT_STR,
	       "ClickHouse user and password: lines user=NAME and password=SECRET (never on the command line; "
	       "mode 600: refused when group or others may read)",
	       RM_OPT_AT(A, cs.store_credentials)),
	RM_OPT("store-ca", 0, "FILE", RM_OPT_STR, "CA certificates (PEM) for clickhouse:https://",
	       RM_OPT_AT(A, cs.store_ca)),
	RM_OPT("store-init", 0, NULL, RM_OPT_FLAG, "create the store's tables (idempotent) and exit",
	       RM_OPT_AT(A, store_init)),
	RM_OPT("cluster", 0, "NAME", RM_OPT_ARG,
	       "with --store-init, clickhouse: local tables and Distributed tables over the cluster NAME of the "
	       "server's remote_servers; run on every server",
	       RM_OPT_AT(A, cluster)),
	RM_OPT("collector-id", 0, "ID", RM_OPT_KEY,
	       "clickhouse: the collector_id of every row written (letters, digits, . - _ :, at most 64; default "
	       "the host name)",
	       .section = "collect", .key = "collector_id"),
	RM_OPT("store-buffer-bytes", 0, "N", RM_OPT_KEY,
	       "clickhouse: rows waiting to be inserted, at most N octets; beyond, store drops (default %llu)",
	       .section = "collect", .key = "store_buffer_bytes", .hv = { RM_STORE_BUFFER_BYTES_DEFAULT }),
	RM_OPT("store-spool-dir", 0, "DIR", RM_OPT_KEY,
	       "clickhouse: rows still unsent at a stop go to DIR/COLLECTOR_ID.TAG.spool (TAG: the store), "
	       "sent at the next start with that store; DIR the collector user's, mode 0700 "
	       "(default " RM_STORE_SPOOL_DIR_DEFAULT ")",
	       .section = "collect", .key = "store_spool_dir"),
	RM_OPT("config", 'c', "FILE", RM_OPT_ARG, "configuration file (INI), section [collect]", RM_OPT_AT(A, config),
	       .early = 1),
	RM_OPT("cert", 0, "FILE", RM_OPT_STR, "own certificate chain, PEM", RM_OPT_AT(A, cs.tls.cert)),
	RM_OPT("key", 0, "FILE", RM_OPT_STR, "own private key, PEM", RM_OPT_AT(A, cs.tls.key)),
	RM_OPT("ca", 0, "FILE", RM_OPT_STR, "CA certificates that sign exporter certificates", RM_OPT_AT(A, cs.tls.ca)),
	RM_OPT("peer-name", 0, "NAME", RM_OPT_LIST,
	       "authorised exporter name (DNS SAN or CN); repeat for several exporters",
	       RM_OPT_LIST_AT(A, cs.tls.peer_names, cs.tls.n_peer_names)),
	RM_OPT("plain-tcp", 0, NULL, RM_OPT_FLAG, "no TLS (unauthenticated, not confidential: tests only)",
	       RM_OPT_AT(A, cs.tls.plain_tcp)),
	RM_OPT("max-sessions", 0, "N", RM_OPT_KEY, "open Transport Sessions (default %llu)", .section = "collect",
	       .key = "max_sessions", .hv = { RM_MAX_SESSIONS_DEFAULT }),
	RM_OPT("max-epochs", 0, "N", RM_OPT_KEY, "retained epochs per session (default %llu)", .section = "collect",
	       .key = "max_epochs", .hv = { RM_MAX_EPOCHS_DEFAULT }),
	RM_OPT("max-raw-records", 0, "N", RM_OPT_KEY, "raw records kept in the database (default %llu)",
	       .section = "collect", .key = "max_raw_records", .hv = { RM_MAX_RAW_RECORDS_DEFAULT }),
	RM_OPT("inactivity-timeout-ms", 0, "MS", RM_OPT_KEY,
	       "retire an epoch without reports for MS (default %llu; 0 = never)", .section = "collect",
	       .key = "inactivity_timeout_ms", .hv = { RM_INACTIVITY_TIMEOUT_MS_DEFAULT }),
	RM_OPT("pen", 0, "N", RM_OPT_UINT,
	       "Private Enterprise Number of the profile's enterprise-specific IEs (default %llu)", RM_OPT_AT(A, pen),
	       .lo = RM_PEN_MIN, .hi = RM_PEN_MAX, .hv = { RM_IPFIX_DEFAULT_PEN }),
	RM_OPT("metrics", 0, "ADDR:PORT", RM_OPT_STR,
	       "serve Prometheus metrics on http://ADDR:PORT/metrics (default off; PORT 0: any free port)",
	       RM_OPT_AT(A, cs.metrics)),
	RM_OPT("log-level", 0, "LEVEL", RM_OPT_LOG_LEVEL, "err, warning, notice (default), info or debug"),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this help"),
	RM_OPT_HEADING("\nLimits on a hostile network (docs/collector.md):\n"),
	RM_OPT("max-handshakes", 0, "N", RM_OPT_KEY,
	       "connections in the TLS handshake (default %llu); a new one evicts the oldest idle one",
	       .section = "collect", .key = "max_handshakes", .hv = { RM_MAX_HANDSHAKES_DEFAULT }),
	RM_OPT("max-handshakes-per-source", 0, "N", RM_OPT_KEY, "of them from one address (default %llu)",
	       .section = "collect", .key = "max_handshakes_per_source",
	       .hv = { RM_MAX_HANDSHAKES_PER_SOURCE_DEFAULT }),
	RM_OPT("handshake-timeout-ms", 0, "MS", RM_OPT_KEY, "accept to authorised peer (default %llu)",
	       .section = "collect", .key = "handshake_timeout_ms", .hv = { RM_HANDSHAKE_TIMEOUT_MS_DEFAULT }),
	RM_OPT("session-timeout-ms", 0, "MS", RM_OPT_KEY,
	       "end a session without an octet for MS (default %llu; 0 = never)", .section = "collect",
	       .key = "session_timeout_ms", .hv = { RM_SESSION_TIMEOUT_MS_DEFAULT }),
	RM_OPT("message-timeout-ms", 0, "MS", RM_OPT_KEY,
	       "end a session whose IPFIX Message is not complete MS after its first octet (default %llu)",
	       .section = "collect", .key = "message_timeout_ms", .hv = { RM_MESSAGE_TIMEOUT_MS_DEFAULT }),
	RM_OPT("dead-peer-timeout-ms", 0, "MS", RM_OPT_KEY,
	       "TCP keepalive and TCP_USER_TIMEOUT: reset a connection silent for MS (default %llu)",
	       .section = "collect", .key = "dead_peer_timeout_ms", .hv = { RM_DEAD_PEER_TIMEOUT_MS_DEFAULT }),
	RM_OPT("max-raw-bytes", 0, "N", RM_OPT_KEY,
	       "octets of raw records (record + Template) in the database (default %llu)", .section = "collect",
	       .key = "max_raw_bytes", .hv = { RM_MAX_RAW_BYTES_DEFAULT }),
	RM_OPT("max-raw-bytes-per-session", 0, "N", RM_OPT_KEY, "the same per session (default %llu)",
	       .section = "collect", .key = "max_raw_bytes_per_session",
	       .hv = { RM_MAX_RAW_BYTES_PER_SESSION_DEFAULT }),
	RM_OPT("max-memory-bytes", 0, "N", RM_OPT_KEY,
	       "memory budget for handshakes, sessions, epochs and Templates (default %llu)", .section = "collect",
	       .key = "max_memory_bytes", .hv = { RM_MAX_MEMORY_BYTES_DEFAULT }),
	RM_OPT("max-memory-bytes-per-session", 0, "N", RM_OPT_KEY,
	       "of it one session's epochs and Templates may hold (default 0: max_memory_bytes / %llu)",
	       .section = "collect", .key = "max_memory_bytes_per_session", .hv = { RM_MEMORY_SHARE_DIVISOR }),
	{ 0 },
};
#undef A

static void collect_usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter collect --store STORE [--listen ADDR:PORT] [OPTIONS]\n"
		   "       rocemeter collect --store-init --store STORE [--cluster NAME]\n"
		   "\n"
		   "Receive IPFIX reports of RoCEv2 sequence observations from one or\n"
		   "more exporters, validate them and store epoch outcomes in the store (SQLite\n"
		   "or ClickHouse, --store). Every TCP connection is its own Transport Session. Stops cleanly on "
		   "SIGINT/SIGTERM:\n"
		   "open epochs are retired as incomplete. SIGHUP, SIGUSR1 and SIGUSR2 are\n"
		   "ignored (a changed configuration needs a restart).\n"
		   "\n"
		   "Options (they override the [collect] section of --config):\n");
	rm_opts_help(f, collect_opts, 29, 6);
	fprintf(f, "\n"
		   "Unauthenticated connections take no session slot and leave no sessions row:\n"
		   "they are counted per source and minute. Limits are logged at startup and\n"
		   "shown by 'rocemeter report --limits'. Refusals because of a limit are stored\n"
		   "as collector resource drops.\n");
}

static const struct rm_cmd_opts collect_cmd = {
	.t = collect_opts, .usage = collect_usage, .usage_on_error = 1, .positional = 1
};

static struct rm_config_file cfg_file; /* large: static */

/* --store-init: the store's tables (docs/fleet.md "Schema"), then exit. */
static int store_init_run(const struct rm_store_spec *spec, const char *cluster)
{
	char err[768];
	int rc;

	if (spec->kind == RM_STORE_SQLITE) {
		struct rm_store *store = rm_store_open(spec->path, 0, err, sizeof(err));

		if (!store) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_FAIL;
		}
		rm_store_close(store);
		return RM_EXIT_OK;
	}
	struct rm_ch *ch = rm_ch_open(&spec->ch, err, sizeof(err));

	if (!ch) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	rc = rm_ch_create_schema(ch, cluster, err, sizeof(err));
	rm_ch_close(ch);
	if (rc) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	rm_log_cmd(RM_LOG_NOTICE, "schema ready in %s database %s%s%s", spec->ch.base, spec->ch.database,
		   cluster ? ", Distributed tables over cluster " : "", cluster ? cluster : "");
	return RM_EXIT_OK;
}

/* The store, TLS and memory settings as collect can run them (exit 2 when not). -1, or an exit status. */
static int check_settings(struct rm_collect_settings *cs, struct rm_store_spec *spec, const struct collect_args *a)
{
	char err[512];

	if (rm_store_spec_resolve(cs->store, cs->db, cs->store_credentials, cs->store_ca, spec, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	if (a->cluster && (!a->store_init || spec->kind != RM_STORE_CLICKHOUSE)) {
		rm_log_cmd(RM_LOG_ERR, "--cluster goes with --store-init and a clickhouse: store");
		return RM_EXIT_USAGE;
	}
	if (a->store_init)
		return store_init_run(spec, a->cluster);
	if (spec->kind == RM_STORE_SQLITE) {
		snprintf(cs->db, sizeof(cs->db), "%s", spec->path);
	} else if (cs->collector_id[0] && rm_chstore_check_id(cs->collector_id, err, sizeof(err)) < 0) {
		rm_log_cmd(RM_LOG_ERR, "%s", err); /* from the configuration file */
		return RM_EXIT_USAGE;
	}
	if (!cs->tls.plain_tcp && (!cs->tls.cert[0] || !cs->tls.key[0] || !cs->tls.ca[0] || !cs->tls.n_peer_names)) {
		rm_log_cmd(RM_LOG_ERR, "TLS needs --cert, --key, --ca and at least one --peer-name "
				       "(or [collect] in --config); --plain-tcp disables TLS");
		return RM_EXIT_USAGE;
	}
	if (rm_collect_memory_check(cs, err, sizeof(err)) < 0) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}

	/* A TLS setting that cannot work is a configuration error (exit 2, no restart), not a runtime one. */
	if (!cs->tls.plain_tcp) {
		SSL_CTX *ctx = rm_tls_server_ctx(&cs->tls, err, sizeof(err));

		if (!ctx) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_USAGE;
		}
		SSL_CTX_free(ctx);
	}
	return -1;
}

static int cmd_collect(int argc, char **argv)
{
	static struct collect_args a;     /* large: static */
	static struct rm_store_spec spec; /* large: static */
	struct rm_collect_settings *cs = &a.cs;
	char err[512];
	sigset_t sigs;
	int rc;

	rm_signals_block(&sigs);

	rm_log_set_ident("rocemeter collect"); /* the collector's log lines name the command */
	memset(&a, 0, sizeof(a));
	a.pen = RM_IPFIX_DEFAULT_PEN;
	rc = rm_opts_early(&collect_cmd, argc, argv, &a); /* --config first: the other options override it */
	if (rc >= 0)
		return rc;
	rm_config_defaults(&cfg_file);
	if (a.config && rm_config_load(a.config, &cfg_file, err, sizeof(err)) < 0) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	a.cs = cfg_file.collect;
	rc = rm_opts_parse(&collect_cmd, argc, argv, &a);
	if (rc < 0)
		rc = check_settings(cs, &spec, &a);
	if (rc >= 0)
		return rc;

	rm_signals_handle(on_signal, RM_SIGNALS_IGNORE_REST);
	stop_flag = 0;
	/* What arrived while starting is acted on now: a stop stops, the others are dropped. */
	sigprocmask(SIG_UNBLOCK, &sigs, NULL);
	switch (rm_collector_run(cs, &spec, (uint32_t)a.pen, &stop_flag)) {
	case 0:
		return RM_EXIT_OK;
	case 2:
		return RM_EXIT_USAGE; /* the store refused: credentials, database, collector ID (docs/fleet.md) */
	default:
		return RM_EXIT_FAIL;
	}
}

RM_COMMAND(collect, 60, "receive IPFIX reports over TLS 1.3, validate, store (SQLite or ClickHouse)", cmd_collect);
