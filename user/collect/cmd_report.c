// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_report.c - `rocemeter report`: the epochs stored by `rocemeter
 * collect`, one line (or one JSON object) per epoch, and the collector's
 * limits ([SEQOBS] "Collector Processing").
 *
 * Wording follows [SEQOBS]: what the network did is shown as observed
 * sequence positions (expired positions are not lost packets, repeated
 * PSNs are not retransmissions, filled positions are not reorderings);
 * metering qualifications (flags), report coverage (gaps) and collector
 * resource drops are shown apart from it.
 */
#include <getopt.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "common/command.h"
#include "common/report_text.h"
#include "common/log.h"
#include "rocemeter/seqobs.h"
#include "store.h"

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* The qualifications in words: rm_flags_to_text(), "none" when no bit is set. */
static void flag_text(unsigned flags, char *buf, size_t len)
{
	rm_flags_to_text((uint16_t)flags, buf, len);
	if (!buf[0])
		snprintf(buf, len, "none");
}

/* Column order of the epoch query. */
enum {
	C_SESSION, C_DOMAIN, C_OBS, C_SRC, C_DST, C_QP, C_PKEY, C_HAS_VLAN, C_VLAN0, C_VLAN1, C_EPOCH, C_WINDOW,
	C_FLAGS_SEEN, C_START, C_END, C_FIRST, C_LAST, C_ACCEPTED, C_MISS_INIT, C_MISSING, C_GAPS, C_REPEATS,
	C_STALE, C_UNSUP, C_IGNORED, C_REQ, C_SKIP, C_FILL, C_EXP, C_ABAN, C_PEND, C_REP, C_LATE, C_STATE,
	C_OUTCOME, C_REASON, C_FIRST_SEEN, C_LAST_SEEN, C_RETIRED
};

static const char epoch_sql[] =
	"SELECT session_id, domain, observation_point_id, src, dst, dest_qp, pkey, has_vlan_ns, vlan_outer,"
	" vlan_inner, epoch_id, window, flags_seen, flow_start_ms, flow_end_ms, first_report_id, last_report_id,"
	" reports_accepted, missing_initial, missing_reports, gaps, repeats, stale, unsupported, ignored,"
	" requests, skipped, filled, expired, abandoned, pending, repeated, unclassified_late, state, outcome,"
	" reason, first_seen_ms, last_seen_ms, retired_ms FROM epochs"
	" WHERE ?1 IS NULL OR outcome = ?1 ORDER BY id";

/* Every stored integer is unsigned (IPFIX unsigned64 kept in SQLite's signed int64 with the same bits). */
#define I64(q, c) ((unsigned long long)sqlite3_column_int64(q, c))
#define TXT(q, c) ((const char *)sqlite3_column_text(q, c))
#define ISNULL(q, c) (sqlite3_column_type(q, c) == SQLITE_NULL)

static void epoch_text(FILE *f, sqlite3_stmt *q)
{
	char fl[160];
	int meas = !ISNULL(q, C_REQ);

	fprintf(f, "session %llu domain %llu epoch %llu: %s", I64(q, C_SESSION), I64(q, C_DOMAIN), I64(q, C_EPOCH),
		TXT(q, C_OUTCOME));
	if (!strcmp(TXT(q, C_OUTCOME), "open") || ISNULL(q, C_RETIRED))
		fprintf(f, " (%s, retained)", TXT(q, C_STATE));
	if (TXT(q, C_REASON) && TXT(q, C_REASON)[0])
		fprintf(f, " (%s)", TXT(q, C_REASON));
	fprintf(f, " | key: observation point %llu, %s -> %s, dest QP 0x%06llx, P_Key 0x%04llx", I64(q, C_OBS),
		TXT(q, C_SRC), TXT(q, C_DST), I64(q, C_QP), I64(q, C_PKEY));
	if (I64(q, C_HAS_VLAN))
		fprintf(f, ", VLAN %llu/%llu", I64(q, C_VLAN0), I64(q, C_VLAN1));
	if (meas) {
		fprintf(f,
			" | observed: %llu requests; %llu skipped positions (%llu filled later, %llu expired, "
			"%llu abandoned at closure, %llu pending); %llu repeated PSNs; %llu unclassified late "
			"requests; W %llu; flow %llu..%llu ms",
			I64(q, C_REQ), I64(q, C_SKIP), I64(q, C_FILL), I64(q, C_EXP), I64(q, C_ABAN), I64(q, C_PEND),
			I64(q, C_REP), I64(q, C_LATE), I64(q, C_WINDOW), I64(q, C_START), I64(q, C_END));
	} else {
		fprintf(f, " | observed: no accepted report (no measurement)");
	}
	flag_text((unsigned)I64(q, C_FLAGS_SEEN), fl, sizeof(fl));
	fprintf(f, " | qualifications: %s", fl);
	if (I64(q, C_UNSUP))
		fprintf(f, ", %llu records with unsupported qualifications (kept raw, not used)", I64(q, C_UNSUP));
	if (I64(q, C_ACCEPTED))
		fprintf(f, " | report coverage: reports %llu..%llu, %llu accepted, %llu missing (%llu initial) in %llu gaps",
			I64(q, C_FIRST), I64(q, C_LAST), I64(q, C_ACCEPTED), I64(q, C_MISSING), I64(q, C_MISS_INIT),
			I64(q, C_GAPS));
	else
		fprintf(f, " | report coverage: none");
	if (I64(q, C_REPEATS) || I64(q, C_STALE) || I64(q, C_IGNORED))
		fprintf(f, "; ignored: %llu identical repeats, %llu stale, %llu after invalidation", I64(q, C_REPEATS),
			I64(q, C_STALE), I64(q, C_IGNORED));
	fputc('\n', f);
}

static void epoch_json(FILE *f, sqlite3_stmt *q)
{
	unsigned flags = (unsigned)I64(q, C_FLAGS_SEEN);
	int first = 1;

	fprintf(f, "{\"session\":%llu,\"domain\":%llu,\"epoch_id\":%llu,\"outcome\":", I64(q, C_SESSION),
		I64(q, C_DOMAIN), I64(q, C_EPOCH));
	json_str(f, TXT(q, C_OUTCOME));
	fprintf(f, ",\"state\":");
	json_str(f, TXT(q, C_STATE));
	fprintf(f, ",\"retained\":%s,\"reason\":", ISNULL(q, C_RETIRED) ? "true" : "false");
	json_str(f, TXT(q, C_REASON));
	fprintf(f, ",\"key\":{\"observation_point_id\":%llu,\"src\":", I64(q, C_OBS));
	json_str(f, TXT(q, C_SRC));
	fprintf(f, ",\"dst\":");
	json_str(f, TXT(q, C_DST));
	fprintf(f, ",\"dest_qp\":%llu,\"pkey\":%llu,\"vlan\":", I64(q, C_QP), I64(q, C_PKEY));
	if (I64(q, C_HAS_VLAN))
		fprintf(f, "[%llu,%llu]}", I64(q, C_VLAN0), I64(q, C_VLAN1));
	else
		fprintf(f, "null}");
	if (!ISNULL(q, C_REQ))
		fprintf(f,
			",\"observed\":{\"requests\":%llu,\"skipped_positions\":%llu,\"filled_positions\":%llu,"
			"\"expired_positions\":%llu,\"abandoned_positions\":%llu,\"pending_positions\":%llu,"
			"\"repeated_psns\":%llu,\"unclassified_late_requests\":%llu,\"window\":%llu,"
			"\"flow_start_ms\":%llu,\"flow_end_ms\":%llu}",
			I64(q, C_REQ), I64(q, C_SKIP), I64(q, C_FILL), I64(q, C_EXP), I64(q, C_ABAN), I64(q, C_PEND),
			I64(q, C_REP), I64(q, C_LATE), I64(q, C_WINDOW), I64(q, C_START), I64(q, C_END));
	else
		fprintf(f, ",\"observed\":null");
	fprintf(f, ",\"qualifications\":{\"flags\":%u,\"names\":[", flags);
	for (unsigned bit = 0; bit < 16; bit++)
		if ((flags & (1u << bit)) && rm_flag_name((uint16_t)(1u << bit))) {
			fprintf(f, "%s\"%s\"", first ? "" : ",", rm_flag_name((uint16_t)(1u << bit)));
			first = 0;
		}
	fprintf(f, "],\"unknown_bits\":%u,\"unsupported_records\":%llu}", flags & ~RM_FLAG_DEFINED_MASK,
		I64(q, C_UNSUP));
	fprintf(f,
		",\"coverage\":{\"first_report_id\":%llu,\"last_report_id\":%llu,\"accepted\":%llu,"
		"\"missing_initial\":%llu,\"missing_reports\":%llu,\"gaps\":%llu,\"identical_repeats\":%llu,"
		"\"stale\":%llu,\"ignored_after_invalid\":%llu}",
		I64(q, C_FIRST), I64(q, C_LAST), I64(q, C_ACCEPTED), I64(q, C_MISS_INIT), I64(q, C_MISSING),
		I64(q, C_GAPS), I64(q, C_REPEATS), I64(q, C_STALE), I64(q, C_IGNORED));
	fprintf(f, ",\"first_seen_ms\":%llu,\"last_seen_ms\":%llu,\"retired_ms\":", I64(q, C_FIRST_SEEN),
		I64(q, C_LAST_SEEN));
	if (ISNULL(q, C_RETIRED))
		fprintf(f, "null}\n");
	else
		fprintf(f, "%llu}\n", I64(q, C_RETIRED));
}

/* Limits of the run beyond the runs table's columns (run_limits, absent before those limits existed). */
static void show_run_limits(sqlite3 *db, sqlite3_int64 run_id, int json)
{
	sqlite3_stmt *q;

	if (sqlite3_prepare_v2(db,
			       "SELECT name, value FROM run_limits WHERE run_id = ?1 AND name NOT IN ('max_sessions',"
			       " 'max_epochs', 'max_raw_records', 'inactivity_timeout_ms') ORDER BY rowid",
			       -1, &q, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(q, 1, run_id);
	while (sqlite3_step(q) == SQLITE_ROW) {
		if (json) {
			printf(",");
			json_str(stdout, TXT(q, 0));
			printf(":%llu", I64(q, 1));
		} else {
			printf("  %-21s %llu\n", TXT(q, 0), I64(q, 1));
		}
	}
	sqlite3_finalize(q);
}

/* Connections that never became Transport Sessions, by outcome (docs/collector.md "What is stored"). */
static void show_refused_connections(sqlite3 *db, int json)
{
	sqlite3_stmt *q;
	int n = 0;

	if (json)
		printf(",\"refused_connections\":{");
	else
		printf("connections that never became sessions (per source and minute in table connections):\n");
	if (sqlite3_prepare_v2(db, "SELECT outcome, sum(count) FROM connections GROUP BY outcome ORDER BY outcome", -1,
			       &q, NULL) == SQLITE_OK) {
		while (sqlite3_step(q) == SQLITE_ROW) {
			if (json) {
				printf("%s", n ? "," : "");
				json_str(stdout, TXT(q, 0));
				printf(":%llu", I64(q, 1));
			} else {
				printf("  %-21s %llu\n", TXT(q, 0), I64(q, 1));
			}
			n++;
		}
		sqlite3_finalize(q);
	}
	if (json)
		printf("}");
	else if (!n)
		printf("  none\n");
}

static int show_limits(sqlite3 *db, int json)
{
	sqlite3_stmt *q;
	sqlite3_int64 run_id;
	unsigned long long pen, raw_stored;
	int rc = RM_EXIT_OK;

	if (sqlite3_prepare_v2(db,
			       "SELECT id, started_ms, stopped_ms, listen, transport, max_sessions, max_epochs,"
			       " max_raw_records, inactivity_timeout_ms, pen, (SELECT count(*) FROM raw_records)"
			       " FROM runs ORDER BY id DESC LIMIT 1",
			       -1, &q, NULL) != SQLITE_OK) {
		rm_log_cmd(RM_LOG_ERR, "%s", sqlite3_errmsg(db));
		return RM_EXIT_FAIL;
	}
	if (sqlite3_step(q) != SQLITE_ROW) {
		rm_log_cmd(RM_LOG_ERR, "no collector run recorded in this database");
		sqlite3_finalize(q);
		return RM_EXIT_FAIL;
	}
	if (json) {
		printf("{\"run\":%llu,\"started_ms\":%llu,\"listen\":", I64(q, 0), I64(q, 1));
		json_str(stdout, TXT(q, 3));
		printf(",\"transport\":");
		json_str(stdout, TXT(q, 4));
		printf(",\"limits\":{\"max_sessions\":%llu,\"max_epochs_per_session\":%llu,\"max_raw_records\":%llu,"
		       "\"inactivity_timeout_ms\":%llu",
		       I64(q, 5), I64(q, 6), I64(q, 7), I64(q, 8));
	} else {
		printf("collector run %llu (%s on %s, PEN %llu)\n", I64(q, 0), TXT(q, 4), TXT(q, 3), I64(q, 9));
		printf("  max_sessions          %llu open Transport Sessions\n", I64(q, 5));
		printf("  max_epochs            %llu retained epochs per session\n", I64(q, 6));
		printf("  max_raw_records       %llu raw records (%llu stored)\n", I64(q, 7), I64(q, 10));
		printf("  inactivity_timeout_ms %llu%s\n", I64(q, 8), I64(q, 8) ? "" : " (never)");
	}
	run_id = sqlite3_column_int64(q, 0);
	pen = I64(q, 9);
	raw_stored = I64(q, 10);
	sqlite3_finalize(q);
	show_run_limits(db, run_id, json);
	if (json)
		printf("},\"pen\":%llu,\"raw_records_stored\":%llu", pen, raw_stored);
	show_refused_connections(db, json);
	if (json)
		printf(",\"drops\":{");
	else
		printf("collector resource drops (refusals by these limits, not network loss):\n");
	if (sqlite3_prepare_v2(db, "SELECT kind, sum(count) FROM drops GROUP BY kind ORDER BY kind", -1, &q, NULL) !=
	    SQLITE_OK) {
		rm_log_cmd(RM_LOG_ERR, "%s", sqlite3_errmsg(db));
		return RM_EXIT_FAIL;
	}
	int n = 0;

	while (sqlite3_step(q) == SQLITE_ROW) {
		if (json) {
			printf("%s", n ? "," : "");
			json_str(stdout, TXT(q, 0));
			printf(":%llu", I64(q, 1));
		} else {
			printf("  %-21s %llu\n", TXT(q, 0), I64(q, 1));
		}
		n++;
	}
	if (json)
		printf("}}\n");
	else if (!n)
		printf("  none\n");
	sqlite3_finalize(q);
	return rc;
}

static void report_usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter report --db FILE [--json] [--outcome complete|incomplete|invalid|open] [--limits]\n"
		   "\n"
		   "Show the epochs stored by 'rocemeter collect', one line per epoch (--json: one\n"
		   "JSON object per line). Each line keeps apart what was observed in the PSN\n"
		   "sequence (positions skipped, filled later, expired, abandoned at closure,\n"
		   "pending; repeated PSNs; unclassified late requests), the metering\n"
		   "qualifications (rdmaSequenceFlags), the report coverage (gaps) and the outcome\n"
		   "with its reason. These counters describe sequence positions: an expired\n"
		   "position is not proof of a lost packet, a repeated PSN not proof of a\n"
		   "retransmission, a filled position not proof of reordering.\n"
		   "\n"
		   "  -d, --db FILE       the collector's SQLite database\n"
		   "  -j, --json          JSON Lines output\n"
		   "  -o, --outcome X     only epochs with outcome X\n"
		   "  -l, --limits        the limits of the last collector run and the collector\n"
		   "                      resource drops they caused\n"
		   "  -h, --help          this help\n");
}

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = { { "db", required_argument, NULL, 'd' }, { "json", no_argument, NULL, 'j' },
					      { "outcome", required_argument, NULL, 'o' },
					      { "limits", no_argument, NULL, 'l' }, { "help", no_argument, NULL, 'h' },
					      { 0 } };
	const char *db_path = NULL, *outcome = NULL;
	int json = 0, limits = 0, o, rc = RM_EXIT_OK;
	struct rm_store *st;
	char err[512];
	sqlite3_stmt *q;

	optind = 1;
	while ((o = getopt_long(argc, argv, "d:jo:lh", opts, NULL)) != -1) {
		switch (o) {
		case 'd': db_path = optarg; break;
		case 'j': json = 1; break;
		case 'o': outcome = optarg; break;
		case 'l': limits = 1; break;
		case 'h': report_usage(stdout); return RM_EXIT_OK;
		default: report_usage(stderr); return RM_EXIT_USAGE;
		}
	}
	if (!db_path || optind < argc) {
		report_usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (outcome && strcmp(outcome, "complete") && strcmp(outcome, "incomplete") && strcmp(outcome, "invalid") &&
	    strcmp(outcome, "open")) {
		rm_log_cmd(RM_LOG_ERR, "--outcome must be complete, incomplete, invalid or open");
		return RM_EXIT_USAGE;
	}
	st = rm_store_open(db_path, 1, err, sizeof(err));
	if (!st) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	if (limits) {
		rc = show_limits(rm_store_db(st), json);
		rm_store_close(st);
		return rc;
	}
	if (sqlite3_prepare_v2(rm_store_db(st), epoch_sql, -1, &q, NULL) != SQLITE_OK) {
		rm_log_cmd(RM_LOG_ERR, "%s: %s", db_path, rm_store_error(st));
		rm_store_close(st);
		return RM_EXIT_FAIL;
	}
	if (outcome)
		sqlite3_bind_text(q, 1, outcome, -1, SQLITE_STATIC);
	int r;

	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		if (json)
			epoch_json(stdout, q);
		else
			epoch_text(stdout, q);
	}
	if (r != SQLITE_DONE) {
		rm_log_cmd(RM_LOG_ERR, "%s", rm_store_error(st));
		rc = RM_EXIT_FAIL;
	}
	sqlite3_finalize(q);
	rm_store_close(st);
	return rc;
}

RM_COMMAND(report, 65, "show the epochs stored by the collector and its limits", cmd_report);
