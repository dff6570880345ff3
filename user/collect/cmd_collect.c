// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_collect.c - `rocemeter collect`: the [collect] section of --config,
 * overridden by the options, then the collector (collector.h) until
 * SIGINT/SIGTERM. SIGHUP, SIGUSR1 and SIGUSR2 are ignored (blocked from
 * the first instruction, so that none can kill it while it starts).
 */
#include <getopt.h>
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
#include "common/opts.h"
#include "common/tls.h"
#include "rocemeter/ipfix_ie.h"
#include "store/sqlite/store.h"
#include "store/store_spec.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = 1;
}

static void collect_usage(FILE *f)
{
	fprintf(f,
		"Usage: rocemeter collect --store STORE [--listen ADDR:PORT] [OPTIONS]\n"
		"       rocemeter collect --store-init --store STORE [--cluster NAME]\n"
		"\n"
		"Receive IPFIX reports of RoCEv2 sequence observations from one or\n"
		"more exporters, validate them and store epoch outcomes in the store (SQLite\n"
		"or ClickHouse, --store). Every TCP connection is its own Transport Session. Stops cleanly on SIGINT/SIGTERM:\n"
		"open epochs are retired as incomplete. SIGHUP, SIGUSR1 and SIGUSR2 are\n"
		"ignored (a changed configuration needs a restart).\n"
		"\n"
		"Options (they override the [collect] section of --config):\n"
		"  -l, --listen ADDR:PORT     address to listen on, e.g. 127.0.0.1:%d,\n"
		"                             [::1]:%d, :%d (default [::]:%d)\n"
		"  -S, --store STORE          where epochs are stored: sqlite:FILE (SQLite,\n"
		"                             created when missing) or\n"
		"                             clickhouse:http[s]://HOST[:PORT][/?database=DB]\n"
		"                             (ClickHouse's HTTP interface, PORT 8123, https\n"
		"                             8443 when not given; docs/fleet.md)\n"
		"  -d, --db FILE              the same as --store sqlite:FILE\n"
		"      --store-credentials FILE  ClickHouse user and password: lines user=NAME\n"
		"                             and password=SECRET (never on the command line;\n"
		"                             mode 600: refused when group or others may read)\n"
		"      --store-ca FILE        CA certificates (PEM) for clickhouse:https://\n"
		"      --store-init           create the store's tables (idempotent) and exit\n"
		"      --cluster NAME         with --store-init, clickhouse: local tables and\n"
		"                             Distributed tables over the cluster NAME of the\n"
		"                             server's remote_servers; run on every server\n"
		"      --collector-id ID      clickhouse: the collector_id of every row written\n"
		"                             (letters, digits, . - _ :, at most 64; default\n"
		"                             the host name)\n"
		"      --store-buffer-bytes N clickhouse: rows waiting to be inserted, at most\n"
		"                             N octets; beyond, store drops (default %llu)\n"
		"      --store-spool-dir DIR  clickhouse: rows still unsent at a stop go to\n"
		"                             DIR/COLLECTOR_ID.TAG.spool (TAG: the store),\n"
		"                             sent at the next start with that store; DIR\n"
		"                             the collector user's, mode 0700\n"
		"                             (default %s)\n"
		"  -c, --config FILE          configuration file (INI), section [collect]\n"
		"      --cert FILE            own certificate chain, PEM\n"
		"      --key FILE             own private key, PEM\n"
		"      --ca FILE              CA certificates that sign exporter certificates\n"
		"      --peer-name NAME       authorised exporter name (DNS SAN or CN);\n"
		"                             repeat for several exporters\n"
		"      --plain-tcp            no TLS (unauthenticated, not confidential: tests only)\n"
		"      --max-sessions N       open Transport Sessions (default %u)\n"
		"      --max-epochs N         retained epochs per session (default %u)\n"
		"      --max-raw-records N    raw records kept in the database (default %u)\n"
		"      --inactivity-timeout-ms MS  retire an epoch without reports for MS\n"
		"                             (default %u; 0 = never)\n"
		"      --pen N                Private Enterprise Number of the profile's\n"
		"                             enterprise-specific IEs (default %u)\n"
		"      --metrics ADDR:PORT    serve Prometheus metrics on http://ADDR:PORT/metrics\n"
		"                             (default off; PORT 0: any free port)\n"
		"      --log-level LEVEL      err, warning, notice (default), info or debug\n"
		"  -h, --help                 this help\n"
		"\n"
		"Limits on a hostile network (docs/collector.md):\n"
		"      --max-handshakes N     connections in the TLS handshake (default %u);\n"
		"                             a new one evicts the oldest idle one\n"
		"      --max-handshakes-per-source N  of them from one address (default %u)\n"
		"      --handshake-timeout-ms MS  accept to authorised peer (default %u)\n"
		"      --session-timeout-ms MS  end a session without an octet for MS\n"
		"                             (default %u; 0 = never)\n"
		"      --message-timeout-ms MS  end a session whose IPFIX Message is not\n"
		"                             complete MS after its first octet (default %u)\n"
		"      --dead-peer-timeout-ms MS  TCP keepalive and TCP_USER_TIMEOUT: reset\n"
		"                             a connection silent for MS (default %u)\n"
		"      --max-raw-bytes N      octets of raw records (record + Template) in the\n"
		"                             database (default %llu)\n"
		"      --max-raw-bytes-per-session N  the same per session (default %llu)\n"
		"      --max-memory-bytes N   memory budget for handshakes, sessions, epochs\n"
		"                             and Templates (default %llu)\n"
		"\n"
		"Unauthenticated connections take no session slot and leave no sessions row:\n"
		"they are counted per source and minute. Limits are logged at startup and\n"
		"shown by 'rocemeter report --limits'. Refusals because of a limit are stored\n"
		"as collector resource drops.\n",
		RM_IPFIX_PORT_TLS, RM_IPFIX_PORT_TLS, RM_IPFIX_PORT_TLS, RM_IPFIX_PORT_TLS,
		(unsigned long long)RM_STORE_BUFFER_BYTES_DEFAULT, RM_STORE_SPOOL_DIR_DEFAULT, RM_MAX_SESSIONS_DEFAULT,
		RM_MAX_EPOCHS_DEFAULT, RM_MAX_RAW_RECORDS_DEFAULT, RM_INACTIVITY_TIMEOUT_MS_DEFAULT,
		RM_IPFIX_DEFAULT_PEN, RM_MAX_HANDSHAKES_DEFAULT, RM_MAX_HANDSHAKES_PER_SOURCE_DEFAULT,
		RM_HANDSHAKE_TIMEOUT_MS_DEFAULT, RM_SESSION_TIMEOUT_MS_DEFAULT, RM_MESSAGE_TIMEOUT_MS_DEFAULT,
		RM_DEAD_PEER_TIMEOUT_MS_DEFAULT, (unsigned long long)RM_MAX_RAW_BYTES_DEFAULT,
		(unsigned long long)RM_MAX_RAW_BYTES_PER_SESSION_DEFAULT, (unsigned long long)RM_MAX_MEMORY_BYTES_DEFAULT);
}

static struct rm_config_file cfg_file; /* large: static */

/* --store-init: the store's tables (docs/fleet.md "Schema"), then exit. */
static int store_init_run(const struct rm_store_spec *spec, const char *cluster)
{
	char err[768];
	int rc;

	if (spec->kind == RM_STORE_SQLITE) {
		struct rm_store *st = rm_store_open(spec->path, 0, err, sizeof(err));

		if (!st) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_FAIL;
		}
		rm_store_close(st);
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

static int cmd_collect(int argc, char **argv)
{
	enum { O_CERT = 256, O_KEY, O_CA, O_PEER, O_PLAIN, O_MAXS, O_MAXE, O_MAXR, O_INACT, O_PEN, O_MAXH, O_MAXHS,
	       O_HST, O_SESST, O_MSGT, O_DEADT, O_RAWB, O_RAWBS, O_MEM,
	       O_METRICS, O_LOG, O_STORE_CRED, O_STORE_CA, O_STORE_INIT, O_CLUSTER, O_COLLECTOR_ID, O_STORE_BUF,
	       O_STORE_SPOOL };
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' }, { "db", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' }, { "cert", required_argument, NULL, O_CERT },
		{ "key", required_argument, NULL, O_KEY }, { "ca", required_argument, NULL, O_CA },
		{ "peer-name", required_argument, NULL, O_PEER }, { "plain-tcp", no_argument, NULL, O_PLAIN },
		{ "max-sessions", required_argument, NULL, O_MAXS }, { "max-epochs", required_argument, NULL, O_MAXE },
		{ "max-raw-records", required_argument, NULL, O_MAXR },
		{ "inactivity-timeout-ms", required_argument, NULL, O_INACT }, { "pen", required_argument, NULL, O_PEN },
		{ "max-handshakes", required_argument, NULL, O_MAXH },
		{ "max-handshakes-per-source", required_argument, NULL, O_MAXHS },
		{ "handshake-timeout-ms", required_argument, NULL, O_HST },
		{ "session-timeout-ms", required_argument, NULL, O_SESST },
		{ "message-timeout-ms", required_argument, NULL, O_MSGT },
		{ "dead-peer-timeout-ms", required_argument, NULL, O_DEADT },
		{ "max-raw-bytes", required_argument, NULL, O_RAWB },
		{ "max-raw-bytes-per-session", required_argument, NULL, O_RAWBS },
		{ "max-memory-bytes", required_argument, NULL, O_MEM },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "log-level", required_argument, NULL, O_LOG },
		{ "store", required_argument, NULL, 'S' },
		{ "store-credentials", required_argument, NULL, O_STORE_CRED },
		{ "store-ca", required_argument, NULL, O_STORE_CA },
		{ "store-init", no_argument, NULL, O_STORE_INIT },
		{ "cluster", required_argument, NULL, O_CLUSTER },
		{ "collector-id", required_argument, NULL, O_COLLECTOR_ID },
		{ "store-buffer-bytes", required_argument, NULL, O_STORE_BUF },
		{ "store-spool-dir", required_argument, NULL, O_STORE_SPOOL },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct rm_collect_settings *cs = &cfg_file.collect;
	const char *config = NULL, *cluster = NULL;
	static struct rm_store_spec spec; /* large: static */
	int store_init = 0;
	char err[512];
	uint64_t v, pen = RM_IPFIX_DEFAULT_PEN;
	int o, n_peer_cli = 0;
	enum rm_log_level level;
	sigset_t sigs;
	char host[256];
	uint16_t port;

	rm_signals_block(&sigs);

	rm_log_set_ident("rocemeter collect"); /* the collector's log lines name the command */
	/* First pass: --config and --help, so that command-line options override the file. */
	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "l:d:S:c:h", opts, NULL)) != -1) {
		if (o == 'c')
			config = optarg;
		else if (o == 'h') {
			collect_usage(stdout);
			return RM_EXIT_OK;
		}
	}
	rm_config_defaults(&cfg_file);
	if (config && rm_config_load(config, &cfg_file, err, sizeof(err)) < 0) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	optind = 1;
	opterr = 1;
	while ((o = getopt_long(argc, argv, "l:d:S:c:h", opts, NULL)) != -1) {
		switch (o) {
		case 'l':
			if (rm_parse_listen(optarg, host, sizeof(host), &port, err, sizeof(err))) {
				rm_log_cmd(RM_LOG_ERR, "--listen: %s", err);
				return RM_EXIT_USAGE;
			}
			snprintf(cs->listen, sizeof(cs->listen), "%s", optarg);
			break;
		case 'd':
			snprintf(cs->db, sizeof(cs->db), "%s", optarg);
			cs->store[0] = 0; /* the command line's --db replaces the file's store */
			break;
		case 'S':
			if (strlen(optarg) >= sizeof(cs->store)) {
				rm_log_cmd(RM_LOG_ERR, "--store: value too long");
				return RM_EXIT_USAGE;
			}
			snprintf(cs->store, sizeof(cs->store), "%s", optarg);
			cs->db[0] = 0; /* the command line's store replaces the file's db */
			break;
		case O_STORE_CRED: snprintf(cs->store_credentials, sizeof(cs->store_credentials), "%s", optarg); break;
		case O_STORE_CA: snprintf(cs->store_ca, sizeof(cs->store_ca), "%s", optarg); break;
		case O_STORE_SPOOL:
			if (!*optarg || strlen(optarg) >= sizeof(cs->store_spool_dir)) {
				rm_log_cmd(RM_LOG_ERR, "--store-spool-dir: value empty or too long");
				return RM_EXIT_USAGE;
			}
			snprintf(cs->store_spool_dir, sizeof(cs->store_spool_dir), "%s", optarg);
			break;
		case O_STORE_INIT: store_init = 1; break;
		case O_CLUSTER: cluster = optarg; break;
		case O_COLLECTOR_ID:
			if (rm_chstore_check_id(optarg, err, sizeof(err)) < 0) {
				rm_log_cmd(RM_LOG_ERR, "--%s", err);
				return RM_EXIT_USAGE;
			}
			snprintf(cs->collector_id, sizeof(cs->collector_id), "%s", optarg);
			break;
		case 'c': break;
		case O_CERT: snprintf(cs->tls.cert, sizeof(cs->tls.cert), "%s", optarg); break;
		case O_KEY: snprintf(cs->tls.key, sizeof(cs->tls.key), "%s", optarg); break;
		case O_CA: snprintf(cs->tls.ca, sizeof(cs->tls.ca), "%s", optarg); break;
		case O_PEER:
			if (n_peer_cli == 0)
				cs->tls.n_peer_names = 0; /* the command line replaces the file's list */
			if (cs->tls.n_peer_names >= RM_MAX_PEER_NAMES) {
				rm_log_cmd(RM_LOG_ERR, "at most %d --peer-name", RM_MAX_PEER_NAMES);
				return RM_EXIT_USAGE;
			}
			snprintf(cs->tls.peer_names[cs->tls.n_peer_names++], sizeof(cs->tls.peer_names[0]), "%s",
				 optarg);
			n_peer_cli++;
			break;
		case O_PLAIN: cs->tls.plain_tcp = 1; break;
		case O_METRICS: snprintf(cs->metrics, sizeof(cs->metrics), "%s", optarg); break;
		case O_MAXS:
			if (rm_opt_uint("--max-sessions", optarg, RM_MAX_SESSIONS_MIN, RM_MAX_SESSIONS_MAX, &v, err,
					sizeof(err)))
				goto bad_value;
			cs->max_sessions = (uint32_t)v;
			break;
		case O_MAXE:
			if (rm_opt_uint("--max-epochs", optarg, RM_MAX_EPOCHS_MIN, RM_MAX_EPOCHS_MAX, &v, err,
					sizeof(err)))
				goto bad_value;
			cs->max_epochs = (uint32_t)v;
			break;
		case O_MAXR:
			if (rm_opt_uint("--max-raw-records", optarg, 0, RM_MAX_RAW_RECORDS_MAX, &v, err, sizeof(err)))
				goto bad_value;
			cs->max_raw_records = (uint32_t)v;
			break;
		case O_INACT:
			if (rm_opt_uint("--inactivity-timeout-ms", optarg, 0, RM_INACTIVITY_TIMEOUT_MS_MAX, &v, err,
					sizeof(err)))
				goto bad_value;
			cs->inactivity_timeout_ms = v;
			break;
		case O_PEN:
			if (rm_opt_uint("--pen", optarg, RM_PEN_MIN, RM_PEN_MAX, &pen, err, sizeof(err)))
				goto bad_value;
			break;
/* A [collect] number: the option's range is the key's (limits.h). */
#define NUM_OPT(code, name, lo, hi, field)                                    \
		case code:                                                    \
			if (rm_opt_uint(name, optarg, lo, hi, &v, err, sizeof(err))) \
				goto bad_value;                               \
			field = v;                                            \
			break;
		NUM_OPT(O_MAXH, "--max-handshakes", RM_MAX_HANDSHAKES_MIN, RM_MAX_HANDSHAKES_MAX, cs->max_handshakes)
		NUM_OPT(O_MAXHS, "--max-handshakes-per-source", RM_MAX_HANDSHAKES_MIN, RM_MAX_HANDSHAKES_MAX,
			cs->max_handshakes_per_source)
		NUM_OPT(O_HST, "--handshake-timeout-ms", RM_HANDSHAKE_TIMEOUT_MS_MIN, RM_HANDSHAKE_TIMEOUT_MS_MAX,
			cs->handshake_timeout_ms)
		NUM_OPT(O_SESST, "--session-timeout-ms", 0, RM_SESSION_TIMEOUT_MS_MAX, cs->session_timeout_ms)
		NUM_OPT(O_MSGT, "--message-timeout-ms", RM_MESSAGE_TIMEOUT_MS_MIN, RM_MESSAGE_TIMEOUT_MS_MAX,
			cs->message_timeout_ms)
		NUM_OPT(O_DEADT, "--dead-peer-timeout-ms", RM_DEAD_PEER_TIMEOUT_MS_MIN, RM_DEAD_PEER_TIMEOUT_MS_MAX,
			cs->dead_peer_timeout_ms)
		NUM_OPT(O_RAWB, "--max-raw-bytes", 0, RM_MAX_RAW_BYTES_MAX, cs->max_raw_bytes)
		NUM_OPT(O_RAWBS, "--max-raw-bytes-per-session", 0, RM_MAX_RAW_BYTES_MAX, cs->max_raw_bytes_per_session)
		NUM_OPT(O_MEM, "--max-memory-bytes", RM_MAX_MEMORY_BYTES_MIN, RM_MAX_MEMORY_BYTES_MAX,
			cs->max_memory_bytes)
		NUM_OPT(O_STORE_BUF, "--store-buffer-bytes", RM_STORE_BUFFER_BYTES_MIN, RM_STORE_BUFFER_BYTES_MAX,
			cs->store_buffer_bytes)
#undef NUM_OPT
		case O_LOG:
			if (rm_log_level_from_name(optarg, &level)) {
				rm_log_cmd(RM_LOG_ERR, "--log-level: '%s' is not err, warning, notice, info or debug",
					   optarg);
				return RM_EXIT_USAGE;
			}
			rm_log_set_level(level);
			break;
		default:
			collect_usage(stderr);
			return RM_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		rm_log_cmd(RM_LOG_ERR, "unexpected argument '%s'", argv[optind]);
		return RM_EXIT_USAGE;
	}
	if (rm_store_spec_resolve(cs->store, cs->db, cs->store_credentials, cs->store_ca, &spec, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	if (cluster && (!store_init || spec.kind != RM_STORE_CLICKHOUSE)) {
		rm_log_cmd(RM_LOG_ERR, "--cluster goes with --store-init and a clickhouse: store");
		return RM_EXIT_USAGE;
	}
	if (store_init)
		return store_init_run(&spec, cluster);
	if (spec.kind == RM_STORE_SQLITE) {
		snprintf(cs->db, sizeof(cs->db), "%s", spec.path);
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

	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	stop_flag = 0;
	/* What arrived while starting is acted on now: a stop stops, the others are dropped. */
	sigprocmask(SIG_UNBLOCK, &sigs, NULL);
	switch (rm_collector_run(cs, &spec, (uint32_t)pen, &stop_flag)) {
	case 0: return RM_EXIT_OK;
	case 2: return RM_EXIT_USAGE; /* the store refused: credentials, database, collector ID (docs/fleet.md) */
	default: return RM_EXIT_FAIL;
	}

bad_value:
	rm_log_cmd(RM_LOG_ERR, "%s", err);
	return RM_EXIT_USAGE;
}

RM_COMMAND(collect, 60, "receive IPFIX reports over TLS 1.3, validate, store (SQLite or ClickHouse)", cmd_collect);
