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
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/command.h"
#include "common/config.h"
#include "common/jsonw.h"
#include "common/report_text.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/timefmt.h"
#include "rocemeter/ipfix_ie.h"
#include "rocemeter/seqobs.h"
#include "store.h"

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
	C_OUTCOME, C_REASON, C_FIRST_SEEN, C_LAST_SEEN, C_RETIRED, C_FAMILY
};

static const char epoch_sql[] =
	"SELECT session_id, domain, observation_point_id, src, dst, dest_qp, pkey, has_vlan_ns, vlan_outer,"
	" vlan_inner, epoch_id, window, flags_seen, flow_start_ms, flow_end_ms, first_report_id, last_report_id,"
	" reports_accepted, missing_initial, missing_reports, gaps, repeats, stale, unsupported, ignored,"
	" requests, skipped, filled, expired, abandoned, pending, repeated, unclassified_late, state, outcome,"
	" reason, first_seen_ms, last_seen_ms, retired_ms, family FROM epochs"
	" WHERE (?1 IS NULL OR outcome = ?1)"
	" AND (?2 IS NULL OR coalesce(flow_end_ms, last_seen_ms) >= ?2)"
	" AND (?3 IS NULL OR coalesce(flow_start_ms, first_seen_ms) <= ?3)"
	" AND (?4 IS NULL OR (src = ?4 AND dst = ?5 AND dest_qp = ?6 AND (?7 IS NULL OR pkey = ?7)))"
	" ORDER BY id";

/* Every stored integer is unsigned (IPFIX unsigned64 kept in SQLite's signed int64 with the same bits). */
#define I64(q, c) ((unsigned long long)sqlite3_column_int64(q, c))
#define TXT(q, c) ((const char *)sqlite3_column_text(q, c))
#define ISNULL(q, c) (sqlite3_column_type(q, c) == SQLITE_NULL)

static void epoch_text(FILE *f, sqlite3_stmt *q)
{
	char fl[160], t0[RM_TIME_TEXT_LEN], t1[RM_TIME_TEXT_LEN];
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
			"requests; W %llu; flow %s .. %s",
			I64(q, C_REQ), I64(q, C_SKIP), I64(q, C_FILL), I64(q, C_EXP), I64(q, C_ABAN), I64(q, C_PEND),
			I64(q, C_REP), I64(q, C_LATE), I64(q, C_WINDOW), rm_time_format(I64(q, C_START), t0, sizeof(t0)),
			rm_time_format(I64(q, C_END), t1, sizeof(t1)));
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

/* The IE name of a row of RM_IPFIX_IES. */
#define IE(stem) rm_pf_name(RM_PF_##stem)

/* One epoch as a JSON object (docs/json.md "report"). */
static json_t *epoch_json(sqlite3_stmt *q)
{
	unsigned flags = (unsigned)I64(q, C_FLAGS_SEEN);
	int six = I64(q, C_FAMILY) == 6;
	json_t *o = json_object(), *k = json_object(), *m, *ql = json_object(), *c = json_object();

	json_object_set_new(o, "session_id", rm_json_u64(I64(q, C_SESSION)));
	json_object_set_new(o, "observationDomainId", rm_json_u64(I64(q, C_DOMAIN)));
	json_object_set_new(o, IE(RDMA_SEQUENCE_EPOCH_ID), rm_json_u64(I64(q, C_EPOCH)));
	json_object_set_new(o, "outcome", rm_json_text(TXT(q, C_OUTCOME)));
	json_object_set_new(o, "state", rm_json_text(TXT(q, C_STATE)));
	json_object_set_new(o, "retained", json_boolean(ISNULL(q, C_RETIRED)));
	json_object_set_new(o, "reason", rm_json_text(TXT(q, C_REASON)));
	json_object_set_new(k, IE(OBSERVATION_POINT_ID), rm_json_u64(I64(q, C_OBS)));
	json_object_set_new(k, six ? IE(SOURCE_IPV6_ADDRESS) : IE(SOURCE_IPV4_ADDRESS), rm_json_text(TXT(q, C_SRC)));
	json_object_set_new(k, six ? IE(DESTINATION_IPV6_ADDRESS) : IE(DESTINATION_IPV4_ADDRESS),
			    rm_json_text(TXT(q, C_DST)));
	json_object_set_new(k, IE(RDMA_DESTINATION_QP), rm_json_u64(I64(q, C_QP)));
	json_object_set_new(k, IE(RDMA_PARTITION_KEY), rm_json_u64(I64(q, C_PKEY)));
	if (I64(q, C_HAS_VLAN)) {
		json_object_set_new(k, IE(VLAN_ID), rm_json_u64(I64(q, C_VLAN0)));
		json_object_set_new(k, IE(DOT1Q_CUSTOMER_VLAN_ID), rm_json_u64(I64(q, C_VLAN1)));
	}
	json_object_set_new(o, "key", k);
	if (!ISNULL(q, C_REQ)) {
		m = json_object();
		json_object_set_new(m, IE(REQUEST_PACKET_TOTAL_COUNT), rm_json_u64(I64(q, C_REQ)));
		json_object_set_new(m, IE(SKIPPED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, C_SKIP)));
		json_object_set_new(m, IE(FILLED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, C_FILL)));
		json_object_set_new(m, IE(EXPIRED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, C_EXP)));
		json_object_set_new(m, IE(ABANDONED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, C_ABAN)));
		json_object_set_new(m, IE(PENDING_PSN_COUNT), rm_json_u64(I64(q, C_PEND)));
		json_object_set_new(m, IE(REPEATED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, C_REP)));
		json_object_set_new(m, IE(UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT), rm_json_u64(I64(q, C_LATE)));
		json_object_set_new(m, IE(RDMA_SEQUENCE_WINDOW), rm_json_u64(I64(q, C_WINDOW)));
		json_object_set_new(m, IE(FLOW_START_MILLISECONDS), rm_json_u64(I64(q, C_START)));
		json_object_set_new(m, IE(FLOW_END_MILLISECONDS), rm_json_u64(I64(q, C_END)));
	} else {
		m = json_null();
	}
	json_object_set_new(o, "observed", m);
	json_object_set_new(ql, IE(RDMA_SEQUENCE_FLAGS), json_integer(flags));
	json_object_set_new(ql, "flag_names", rm_json_flag_names((uint16_t)flags));
	json_object_set_new(ql, "unsupported_records", rm_json_u64(I64(q, C_UNSUP)));
	json_object_set_new(o, "qualifications", ql);
	json_object_set_new(c, "first_report_id", rm_json_u64(I64(q, C_FIRST)));
	json_object_set_new(c, "last_report_id", rm_json_u64(I64(q, C_LAST)));
	json_object_set_new(c, "accepted", rm_json_u64(I64(q, C_ACCEPTED)));
	json_object_set_new(c, "missing_initial", rm_json_u64(I64(q, C_MISS_INIT)));
	json_object_set_new(c, "missing_reports", rm_json_u64(I64(q, C_MISSING)));
	json_object_set_new(c, "gaps", rm_json_u64(I64(q, C_GAPS)));
	json_object_set_new(c, "identical_repeats", rm_json_u64(I64(q, C_REPEATS)));
	json_object_set_new(c, "stale", rm_json_u64(I64(q, C_STALE)));
	json_object_set_new(c, "ignored_after_invalid", rm_json_u64(I64(q, C_IGNORED)));
	json_object_set_new(o, "coverage", c);
	json_object_set_new(o, "first_seen_ms", rm_json_u64(I64(q, C_FIRST_SEEN)));
	json_object_set_new(o, "last_seen_ms", rm_json_u64(I64(q, C_LAST_SEEN)));
	json_object_set_new(o, "retired_ms", ISNULL(q, C_RETIRED) ? json_null() : rm_json_u64(I64(q, C_RETIRED)));
	return o;
}

/* A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; records end in CRLF. */
static void csv_field(FILE *f, const char *s, int last)
{
	if (s && strpbrk(s, ",\"\r\n")) {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else if (s) {
		fputs(s, f);
	}
	fputs(last ? "\r\n" : ",", f);
}

/* The CSV columns: the JSON object's keys flattened (docs/json.md "report"). */
static const char *const csv_columns[] = {
	"session_id", "observationDomainId", "rdmaSequenceEpochId", "outcome", "state", "retained", "reason",
	"observationPointId", "sourceIPv4Address", "sourceIPv6Address", "destinationIPv4Address",
	"destinationIPv6Address", "rdmaDestinationQP", "rdmaPartitionKey", "vlanId", "dot1qCustomerVlanId",
	"requestPacketTotalCount", "skippedPsnTotalCount", "filledPsnTotalCount", "expiredPsnTotalCount",
	"abandonedPsnTotalCount", "pendingPsnCount", "repeatedPsnTotalCount", "unclassifiedLatePacketTotalCount",
	"rdmaSequenceWindow", "flowStartMilliseconds", "flowEndMilliseconds", "rdmaSequenceFlags", "flag_names",
	"unsupported_records", "first_report_id", "last_report_id", "accepted", "missing_initial",
	"missing_reports", "gaps", "identical_repeats", "stale", "ignored_after_invalid", "first_seen_ms",
	"last_seen_ms", "retired_ms",
};
#define N_CSV (sizeof(csv_columns) / sizeof(csv_columns[0]))

/* The value of a column in the epoch's JSON object (one level of nesting), or NULL. */
static json_t *find_key(json_t *o, const char *name)
{
	const char *k;
	json_t *v, *inner;

	if ((v = json_object_get(o, name)))
		return v;
	json_object_foreach(o, k, v)
		if (json_is_object(v) && (inner = json_object_get(v, name)))
			return inner;
	return NULL;
}

static void csv_header(FILE *f)
{
	for (size_t i = 0; i < N_CSV; i++)
		csv_field(f, csv_columns[i], i == N_CSV - 1);
}

/* One CSV record of an epoch's JSON object: flag names joined by '|', null and absent keys empty. */
static void epoch_csv(FILE *f, json_t *o)
{
	for (size_t i = 0; i < N_CSV; i++) {
		json_t *v = find_key(o, csv_columns[i]);
		char *text = NULL;
		int last = i == N_CSV - 1;

		if (json_is_string(v)) {
			csv_field(f, json_string_value(v), last);
			continue;
		}
		if (json_is_array(v)) {
			char buf[200] = "";
			size_t j;
			json_t *e;

			json_array_foreach(v, j, e)
				snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", j ? "|" : "",
					 json_string_value(e));
			csv_field(f, buf, last);
			continue;
		}
		if (v && !json_is_null(v)) {
			/* through the JSON writer, so that numbers above 2^63 - 1 stay exact */
			size_t len = 0;
			FILE *m = open_memstream(&text, &len);

			if (m) {
				rm_json_write(m, json_incref(v));
				fclose(m);
				text[strcspn(text, "\n")] = 0;
			}
		}
		csv_field(f, text ? text : "", last);
		free(text);
	}
}

/*
 * Limits of the run beyond the runs table's columns (run_limits, absent
 * before those limits existed): as text, or into the JSON object l.
 */
static void show_run_limits(sqlite3 *db, sqlite3_int64 run_id, json_t *l)
{
	sqlite3_stmt *q;

	if (sqlite3_prepare_v2(db,
			       "SELECT name, value FROM run_limits WHERE run_id = ?1 AND name NOT IN ('max_sessions',"
			       " 'max_epochs', 'max_raw_records', 'inactivity_timeout_ms') ORDER BY rowid",
			       -1, &q, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(q, 1, run_id);
	while (sqlite3_step(q) == SQLITE_ROW) {
		if (l)
			json_object_set_new(l, TXT(q, 0), rm_json_u64(I64(q, 1)));
		else
			printf("  %-21s %llu\n", TXT(q, 0), I64(q, 1));
	}
	sqlite3_finalize(q);
}

/*
 * Connections that never became Transport Sessions, by outcome
 * (docs/collector.md "What is stored"): as text, or as the key
 * "refused_connections" of the JSON object o.
 */
static void show_refused_connections(sqlite3 *db, json_t *o)
{
	sqlite3_stmt *q;
	json_t *r = o ? json_object() : NULL;
	int n = 0;

	if (!o)
		printf("connections that never became sessions (per source and minute in table connections):\n");
	if (sqlite3_prepare_v2(db, "SELECT outcome, sum(count) FROM connections GROUP BY outcome ORDER BY outcome", -1,
			       &q, NULL) == SQLITE_OK) {
		while (sqlite3_step(q) == SQLITE_ROW) {
			if (r)
				json_object_set_new(r, TXT(q, 0), rm_json_u64(I64(q, 1)));
			else
				printf("  %-21s %llu\n", TXT(q, 0), I64(q, 1));
			n++;
		}
		sqlite3_finalize(q);
	}
	if (r)
		json_object_set_new(o, "refused_connections", r);
	else if (!n)
		printf("  none\n");
}

static int show_limits(sqlite3 *db, int json)
{
	json_t *o = NULL, *l = NULL, *drops = NULL;
	sqlite3_stmt *q;
	sqlite3_int64 run_id;
	int n = 0;

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
	run_id = sqlite3_column_int64(q, 0);
	if (json) {
		o = json_object();
		l = json_object();
		json_object_set_new(o, "run", rm_json_u64(I64(q, 0)));
		json_object_set_new(o, "started_ms", rm_json_u64(I64(q, 1)));
		json_object_set_new(o, "listen", rm_json_text(TXT(q, 3)));
		json_object_set_new(o, "transport", rm_json_text(TXT(q, 4)));
		json_object_set_new(l, "max_sessions", rm_json_u64(I64(q, 5)));
		json_object_set_new(l, "max_epochs_per_session", rm_json_u64(I64(q, 6)));
		json_object_set_new(l, "max_raw_records", rm_json_u64(I64(q, 7)));
		json_object_set_new(l, "inactivity_timeout_ms", rm_json_u64(I64(q, 8)));
		json_object_set_new(o, "limits", l);
		json_object_set_new(o, "pen", rm_json_u64(I64(q, 9)));
		json_object_set_new(o, "raw_records_stored", rm_json_u64(I64(q, 10)));
	} else {
		char t[RM_TIME_TEXT_LEN];

		printf("collector run %llu (%s on %s, PEN %llu, started %s)\n", I64(q, 0), TXT(q, 4), TXT(q, 3), I64(q, 9),
		       rm_time_format(I64(q, 1), t, sizeof(t)));
		printf("  max_sessions          %llu open Transport Sessions\n", I64(q, 5));
		printf("  max_epochs            %llu retained epochs per session\n", I64(q, 6));
		printf("  max_raw_records       %llu raw records (%llu stored)\n", I64(q, 7), I64(q, 10));
		printf("  inactivity_timeout_ms %llu%s\n", I64(q, 8), I64(q, 8) ? "" : " (never)");
	}
	sqlite3_finalize(q);
	show_run_limits(db, run_id, l);
	show_refused_connections(db, o);
	if (json) {
		drops = json_object();
		json_object_set_new(o, "drops", drops);
	} else {
		printf("collector resource drops (refusals by these limits, not network loss):\n");
	}
	if (sqlite3_prepare_v2(db, "SELECT kind, sum(count) FROM drops GROUP BY kind ORDER BY kind", -1, &q, NULL) !=
	    SQLITE_OK) {
		rm_log_cmd(RM_LOG_ERR, "%s", sqlite3_errmsg(db));
		json_decref(o);
		return RM_EXIT_FAIL;
	}
	while (sqlite3_step(q) == SQLITE_ROW) {
		if (json)
			json_object_set_new(drops, TXT(q, 0), rm_json_u64(I64(q, 1)));
		else
			printf("  %-21s %llu\n", TXT(q, 0), I64(q, 1));
		n++;
	}
	sqlite3_finalize(q);
	if (json)
		return rm_json_write(stdout, o) ? RM_EXIT_FAIL : RM_EXIT_OK;
	if (!n)
		printf("  none\n");
	return RM_EXIT_OK;
}

static void report_usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter report --db FILE [--format text|json|csv] [--outcome X] [--since T] [--until T]\n"
		   "                        [--connection SRC,DST,QP[,PKEY]] [--limits]\n"
		   "\n"
		   "Show the epochs stored by 'rocemeter collect', one line per epoch (json: one\n"
		   "JSON object per line, docs/json.md; csv: a header and one record per epoch).\n"
		   "Each line keeps apart what was observed in the PSN sequence (positions\n"
		   "skipped, filled later, expired, abandoned at closure, pending; repeated PSNs;\n"
		   "unclassified late requests), the metering qualifications (rdmaSequenceFlags),\n"
		   "the report coverage (gaps) and the outcome with its reason. These counters\n"
		   "describe sequence positions: an expired position is not proof of a lost\n"
		   "packet, a repeated PSN not proof of a retransmission, a filled position not\n"
		   "proof of reordering. Times are ISO-8601 UTC in text.\n"
		   "\n"
		   "  -d, --db FILE          the collector's SQLite database\n"
		   "  -f, --format F         text (default), json or csv\n"
		   "  -j, --json             the same as --format json\n"
		   "  -o, --outcome X        only epochs with outcome X: complete, incomplete,\n"
		   "                         invalid or open\n"
		   "  -s, --since T          only epochs whose flow ends at or after T\n"
		   "  -u, --until T          only epochs whose flow starts at or before T\n"
		   "                         T: ISO-8601 UTC (2026-11-30T09:15:00Z), a date (UTC\n"
		   "                         midnight), UNIX milliseconds, or a duration before\n"
		   "                         now (90s, 15m, 2h, 7d); an epoch without an accepted\n"
		   "                         report is placed by when the collector saw it\n"
		   "  -c, --connection SRC,DST,QP[,PKEY]\n"
		   "                         only epochs of that connection (record key: addresses,\n"
		   "                         rdmaDestinationQP, rdmaPartitionKey)\n"
		   "  -l, --limits           the limits of the last collector run and the collector\n"
		   "                         resource drops they caused\n"
		   "  -h, --help             this help\n"
		   "\n"
		   "Exit status: 0 ok, 1 the database cannot be read, 2 usage error.\n");
}

/* The connection filter "SRC,DST,QP[,PKEY]". 0, or -EINVAL with err. */
static int parse_connection(const char *text, char *src, char *dst, size_t len, uint64_t *qp, int64_t *pkey,
			    char *err, size_t errlen)
{
	char buf[512], *parts[5] = { 0 }, *save = NULL, *tok;
	uint8_t a[16], b[16];
	int n = 0, fa, fb;
	uint64_t v;

	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, ",", &save); tok && n < 5; tok = strtok_r(NULL, ",", &save))
		parts[n++] = tok;
	if (n < 3 || n > 4)
		goto bad;
	fa = rm_parse_addr(parts[0], a);
	fb = rm_parse_addr(parts[1], b);
	if (fa < 0 || fa != fb || rm_parse_uint(parts[2], 0, RM_QPN_MAX, qp))
		goto bad;
	/* The collector stores addresses in inet_ntop form: compare in that form. */
	inet_ntop(fa == 6 ? AF_INET6 : AF_INET, a, src, (socklen_t)len);
	inet_ntop(fa == 6 ? AF_INET6 : AF_INET, b, dst, (socklen_t)len);
	*pkey = -1;
	if (n == 4) {
		if (rm_parse_uint(parts[3], 0, RM_PKEY_MAX, &v))
			goto bad;
		*pkey = (int64_t)v;
	}
	return 0;
bad:
	snprintf(err, errlen,
		 "--connection: '%s' is not SRC,DST,QP[,PKEY] (two addresses of one family, QP 0..0xffffff, "
		 "P_Key 0..0xffff)",
		 text);
	return -EINVAL;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

enum { FMT_TEXT, FMT_JSON, FMT_CSV };

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },	       { "json", no_argument, NULL, 'j' },
		{ "outcome", required_argument, NULL, 'o' },   { "limits", no_argument, NULL, 'l' },
		{ "format", required_argument, NULL, 'f' },    { "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },     { "connection", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },	       { 0 }
	};
	const char *db_path = NULL, *outcome = NULL, *conn = NULL;
	int format = FMT_TEXT, limits = 0, o, rc = RM_EXIT_OK, has_since = 0, has_until = 0;
	char err[512], src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	uint64_t since = 0, until = 0, qp = 0, now = wall_ms();
	int64_t pkey = -1;
	struct rm_store *st;
	sqlite3_stmt *q;

	optind = 1;
	while ((o = getopt_long(argc, argv, "d:jo:lf:s:u:c:h", opts, NULL)) != -1) {
		switch (o) {
		case 'd': db_path = optarg; break;
		case 'j': format = FMT_JSON; break;
		case 'o': outcome = optarg; break;
		case 'l': limits = 1; break;
		case 'c': conn = optarg; break;
		case 'f':
			if (!strcmp(optarg, "text"))
				format = FMT_TEXT;
			else if (!strcmp(optarg, "json"))
				format = FMT_JSON;
			else if (!strcmp(optarg, "csv"))
				format = FMT_CSV;
			else {
				rm_log_cmd(RM_LOG_ERR, "--format: '%s' is not text, json or csv", optarg);
				return RM_EXIT_USAGE;
			}
			break;
		case 's':
		case 'u':
			if (rm_time_parse(o == 's' ? "--since" : "--until", optarg, now, o == 's' ? &since : &until, err,
					  sizeof(err))) {
				rm_log_cmd(RM_LOG_ERR, "%s", err);
				return RM_EXIT_USAGE;
			}
			*(o == 's' ? &has_since : &has_until) = 1;
			break;
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
	if (conn && parse_connection(conn, src, dst, sizeof(src), &qp, &pkey, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	if (limits && format == FMT_CSV) {
		rm_log_cmd(RM_LOG_ERR, "--limits is text or json");
		return RM_EXIT_USAGE;
	}
	st = rm_store_open(db_path, 1, err, sizeof(err));
	if (!st) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	if (limits) {
		rc = show_limits(rm_store_db(st), format == FMT_JSON);
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
	/* Stored times are unsigned 64-bit in SQLite's signed integers: the same bits. */
	if (has_since)
		sqlite3_bind_int64(q, 2, (sqlite3_int64)since);
	if (has_until)
		sqlite3_bind_int64(q, 3, (sqlite3_int64)until);
	if (conn) {
		sqlite3_bind_text(q, 4, src, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 5, dst, -1, SQLITE_STATIC);
		sqlite3_bind_int64(q, 6, (sqlite3_int64)qp);
		if (pkey >= 0)
			sqlite3_bind_int64(q, 7, pkey);
	}
	if (format == FMT_CSV)
		csv_header(stdout);
	int r;

	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		if (format == FMT_TEXT) {
			epoch_text(stdout, q);
		} else {
			json_t *e = epoch_json(q);

			if (format == FMT_CSV) {
				epoch_csv(stdout, e);
				json_decref(e);
			} else {
				rm_json_write(stdout, e);
			}
		}
	}
	if (r != SQLITE_DONE) {
		rm_log_cmd(RM_LOG_ERR, "%s", rm_store_error(st));
		rc = RM_EXIT_FAIL;
	}
	sqlite3_finalize(q);
	rm_store_close(st);
	if (fflush(stdout) || ferror(stdout)) {
		rm_log_cmd(RM_LOG_ERR, "standard output: write error");
		rc = RM_EXIT_FAIL;
	}
	return rc;
}

RM_COMMAND(report, 65, "show the epochs stored by the collector and its limits", cmd_report);
