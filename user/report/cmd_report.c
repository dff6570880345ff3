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
 *
 * The store is read through store_read.h (SQLite or ClickHouse); this file
 * parses the options and prints: the default text is a table
 * (report_table.h) beside the full prose of --verbose, the sequence health
 * comes from common/health.h and --summary from report_summary.h. When a
 * ClickHouse store holds more than one collector, every epoch and every
 * --limits block names its collector (docs/fleet.md "report across the
 * fleet").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "common/clock.h"
#include "common/command.h"
#include "common/config.h"
#include "common/health.h"
#include "common/jsonw.h"
#include "common/report_text.h"
#include "common/safe_text.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/params.h"
#include "common/paths.h"
#include "common/timefmt.h"
#include "rocemeter/ipfix_ie.h"
#include "rocemeter/seqobs.h"
#include "report_html.h"
#include "report_select.h"
#include "report_summary.h"
#include "report_table.h"
#include "store/store_read.h"
#include "store/store_spec.h"

/* The qualifications in words: rm_flags_to_text(), "none" when no bit is set. */
static void flag_text(unsigned flags, char *buf, size_t len)
{
	rm_flags_to_text((uint16_t)flags, buf, len);
	if (!buf[0])
		snprintf(buf, len, "none");
}

/* The columns of an epoch (store_read.h) and their NULL test. */
#define I64(q, c)    ((unsigned long long)(q)->u[RM_ER_##c])
#define TXT(q, c)    ((q)->t[RM_ER_##c])
#define ISNULL(q, c) ((q)->null[RM_ER_##c])

/* " | exporter: NAME at ADDR:PORT (certificate SUBJECT)": who sent the epoch's Transport Session. */
static void exporter_text(FILE *f, const struct rm_epoch_read *q)
{
	char t[1024];

	if (!q->peer) {
		fprintf(f, " | exporter: not recorded");
		return;
	}
	fprintf(f, " | exporter: ");
	if (q->peer_name)
		fprintf(f, "%s at ", rm_text_escape(q->peer_name, t, sizeof(t)));
	fprintf(f, "%s", rm_text_escape(q->peer, t, sizeof(t)));
	if (q->peer_subject)
		fprintf(f, " (certificate %s)", rm_text_escape(q->peer_subject, t, sizeof(t)));
	else
		fprintf(f, " (plain TCP, unauthenticated)");
}

static void epoch_text(FILE *f, const struct rm_epoch_read *q, int show_collector)
{
	char fl[260], t0[RM_TIME_TEXT_LEN], t1[RM_TIME_TEXT_LEN];
	int meas = !ISNULL(q, REQ);

	if (show_collector)
		fprintf(f, "collector %s ", q->collector_id);
	fprintf(f, "session %llu domain %llu epoch %llu: %s", I64(q, SESSION), I64(q, DOMAIN), I64(q, EPOCH),
		TXT(q, OUTCOME));
	if (!strcmp(TXT(q, OUTCOME), "open") || ISNULL(q, RETIRED))
		fprintf(f, " (%s, retained)", TXT(q, STATE));
	if (TXT(q, REASON) && TXT(q, REASON)[0])
		fprintf(f, " (%s)", TXT(q, REASON));
	fprintf(f, " | key: observation point %llu", I64(q, OBS));
	if (q->obs_name) /* escaped: a name an older store kept before the rule (safe_text.h) */
		fprintf(f, " (%s)", rm_text_escape(q->obs_name, fl, sizeof(fl)));
	fprintf(f, ", %s -> %s, dest QP 0x%06llx, P_Key 0x%04llx", TXT(q, SRC), TXT(q, DST), I64(q, QP), I64(q, PKEY));
	if (I64(q, HAS_VLAN))
		fprintf(f, ", VLAN %llu/%llu", I64(q, VLAN0), I64(q, VLAN1));
	if (meas) {
		fprintf(f,
			" | observed: %llu requests; %llu skipped positions (%llu filled later, %llu expired, "
			"%llu abandoned at closure, %llu pending); %llu repeated PSNs; %llu unclassified late "
			"requests; W %llu; flow %s .. %s",
			I64(q, REQ), I64(q, SKIP), I64(q, FILL), I64(q, EXP), I64(q, ABAN), I64(q, PEND), I64(q, REP),
			I64(q, LATE), I64(q, WINDOW), rm_time_format(I64(q, START), t0, sizeof(t0)),
			rm_time_format(I64(q, END), t1, sizeof(t1)));
	} else {
		fprintf(f, " | observed: no accepted report (no measurement)");
	}
	flag_text((unsigned)I64(q, FLAGS_SEEN), fl, sizeof(fl));
	fprintf(f, " | qualifications: %s", fl);
	if (I64(q, UNSUP))
		fprintf(f, ", %llu records with unsupported qualifications (kept raw, not used)", I64(q, UNSUP));
	if (I64(q, ACCEPTED))
		fprintf(f,
			" | report coverage: reports %llu..%llu, %llu accepted, %llu missing (%llu initial) in %llu "
			"gaps",
			I64(q, FIRST), I64(q, LAST), I64(q, ACCEPTED), I64(q, MISSING), I64(q, MISS_INIT),
			I64(q, GAPS));
	else
		fprintf(f, " | report coverage: none");
	if (I64(q, REPEATS) || I64(q, STALE) || I64(q, IGNORED))
		fprintf(f, "; ignored: %llu identical repeats, %llu stale, %llu after invalidation", I64(q, REPEATS),
			I64(q, STALE), I64(q, IGNORED));
	exporter_text(f, q);
	fputc('\n', f);
}

/* The IE name of a row of RM_IPFIX_IES. */
#define IE(stem) rm_pf_name(RM_PF_##stem)

/* The exporter of the epoch's Transport Session (docs/json.md "report": exporter). */
static json_t *exporter_json(const struct rm_epoch_read *q)
{
	json_t *x = json_object();

	json_object_set_new(x, "peer", rm_json_text(q->peer));
	json_object_set_new(x, "peer_name", rm_json_text(q->peer_name));
	json_object_set_new(x, "peer_subject", rm_json_text(q->peer_subject));
	return x;
}

/* One epoch as a JSON object (docs/json.md "report"). */
static json_t *epoch_json(const struct rm_epoch_read *q, int show_collector)
{
	unsigned flags = (unsigned)I64(q, FLAGS_SEEN);
	int six = I64(q, FAMILY) == 6;
	json_t *o = json_object(), *k = json_object(), *m, *ql = json_object(), *c = json_object();

	if (show_collector)
		json_object_set_new(o, "collector_id", rm_json_text(q->collector_id));
	json_object_set_new(o, "session_id", rm_json_u64(I64(q, SESSION)));
	json_object_set_new(o, "observationDomainId", rm_json_u64(I64(q, DOMAIN)));
	json_object_set_new(o, IE(RDMA_SEQUENCE_EPOCH_ID), rm_json_u64(I64(q, EPOCH)));
	json_object_set_new(o, "outcome", rm_json_text(TXT(q, OUTCOME)));
	json_object_set_new(o, "state", rm_json_text(TXT(q, STATE)));
	json_object_set_new(o, "retained", json_boolean(ISNULL(q, RETIRED)));
	json_object_set_new(o, "reason", rm_json_text(TXT(q, REASON)));
	json_object_set_new(o, "observation_point_name", q->obs_name ? rm_json_text(q->obs_name) : json_null());
	json_object_set_new(k, IE(OBSERVATION_POINT_ID), rm_json_u64(I64(q, OBS)));
	json_object_set_new(k, six ? IE(SOURCE_IPV6_ADDRESS) : IE(SOURCE_IPV4_ADDRESS), rm_json_text(TXT(q, SRC)));
	json_object_set_new(k, six ? IE(DESTINATION_IPV6_ADDRESS) : IE(DESTINATION_IPV4_ADDRESS),
			    rm_json_text(TXT(q, DST)));
	json_object_set_new(k, IE(RDMA_DESTINATION_QP), rm_json_u64(I64(q, QP)));
	json_object_set_new(k, IE(RDMA_PARTITION_KEY), rm_json_u64(I64(q, PKEY)));
	if (I64(q, HAS_VLAN)) {
		json_object_set_new(k, IE(VLAN_ID), rm_json_u64(I64(q, VLAN0)));
		json_object_set_new(k, IE(DOT1Q_CUSTOMER_VLAN_ID), rm_json_u64(I64(q, VLAN1)));
	}
	json_object_set_new(o, "key", k);
	if (!ISNULL(q, REQ)) {
		m = json_object();
		json_object_set_new(m, IE(REQUEST_PACKET_TOTAL_COUNT), rm_json_u64(I64(q, REQ)));
		json_object_set_new(m, IE(SKIPPED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, SKIP)));
		json_object_set_new(m, IE(FILLED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, FILL)));
		json_object_set_new(m, IE(EXPIRED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, EXP)));
		json_object_set_new(m, IE(ABANDONED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, ABAN)));
		json_object_set_new(m, IE(PENDING_PSN_COUNT), rm_json_u64(I64(q, PEND)));
		json_object_set_new(m, IE(REPEATED_PSN_TOTAL_COUNT), rm_json_u64(I64(q, REP)));
		json_object_set_new(m, IE(UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT), rm_json_u64(I64(q, LATE)));
		json_object_set_new(m, IE(RDMA_SEQUENCE_WINDOW), rm_json_u64(I64(q, WINDOW)));
		json_object_set_new(m, IE(FLOW_START_MILLISECONDS), rm_json_u64(I64(q, START)));
		json_object_set_new(m, IE(FLOW_END_MILLISECONDS), rm_json_u64(I64(q, END)));
	} else {
		m = json_null();
	}
	json_object_set_new(o, "observed", m);
	json_object_set_new(ql, IE(RDMA_SEQUENCE_FLAGS), json_integer(flags));
	json_object_set_new(ql, "flag_names", rm_json_flag_names((uint16_t)flags));
	json_object_set_new(ql, "unsupported_records", rm_json_u64(I64(q, UNSUP)));
	json_object_set_new(o, "qualifications", ql);
	json_object_set_new(c, "first_report_id", rm_json_u64(I64(q, FIRST)));
	json_object_set_new(c, "last_report_id", rm_json_u64(I64(q, LAST)));
	json_object_set_new(c, "accepted", rm_json_u64(I64(q, ACCEPTED)));
	json_object_set_new(c, "missing_initial", rm_json_u64(I64(q, MISS_INIT)));
	json_object_set_new(c, "missing_reports", rm_json_u64(I64(q, MISSING)));
	json_object_set_new(c, "gaps", rm_json_u64(I64(q, GAPS)));
	json_object_set_new(c, "identical_repeats", rm_json_u64(I64(q, REPEATS)));
	json_object_set_new(c, "stale", rm_json_u64(I64(q, STALE)));
	json_object_set_new(c, "ignored_after_invalid", rm_json_u64(I64(q, IGNORED)));
	json_object_set_new(o, "coverage", c);
	json_object_set_new(o, "first_seen_ms", rm_json_u64(I64(q, FIRST_SEEN)));
	json_object_set_new(o, "last_seen_ms", rm_json_u64(I64(q, LAST_SEEN)));
	json_object_set_new(o, "retired_ms", ISNULL(q, RETIRED) ? json_null() : rm_json_u64(I64(q, RETIRED)));
	json_object_set_new(o, "exporter", exporter_json(q));
	return o;
}

/*
 * A CSV field (RFC 4180), records end in CRLF. Text is escaped first
 * (rm_text_escape(): no control character, override or invalid UTF-8 reaches
 * the file); a field that starts with = + - @ TAB or CR gets a ' before it
 * (OWASP "CSV Injection": a spreadsheet reads it as text, not a formula) and is
 * quoted, as is one that holds a comma or a quote.
 */
static void csv_field(FILE *f, const char *s, int last)
{
	char small[256];
	size_t cap = s ? 4 * strlen(s) + 1 : 1;
	char *text = !s ? NULL : cap <= sizeof(small) ? small : malloc(cap);
	int formula = s && s[0] && strchr("=+-@\t\r", s[0]);

	if (text)
		rm_text_escape(s, text, cap);
	if (text && (formula || strpbrk(text, ",\""))) {
		fputs(formula ? "\"'" : "\"", f);
		for (const char *c = text; *c; c++) {
			if (*c == '"')
				fputc('"', f);
			fputc(*c, f);
		}
		fputc('"', f);
	} else if (text) {
		fputs(text, f);
	}
	if (text != small)
		free(text);
	fputs(last ? "\r\n" : ",", f);
}

/* The CSV columns: the JSON object's keys flattened (docs/json.md "report"). */
static const char *const csv_columns[] = {
	"session_id",
	"observationDomainId",
	"rdmaSequenceEpochId",
	"outcome",
	"state",
	"retained",
	"reason",
	"observationPointId",
	"observation_point_name",
	"sourceIPv4Address",
	"sourceIPv6Address",
	"destinationIPv4Address",
	"destinationIPv6Address",
	"rdmaDestinationQP",
	"rdmaPartitionKey",
	"vlanId",
	"dot1qCustomerVlanId",
	"requestPacketTotalCount",
	"skippedPsnTotalCount",
	"filledPsnTotalCount",
	"expiredPsnTotalCount",
	"abandonedPsnTotalCount",
	"pendingPsnCount",
	"repeatedPsnTotalCount",
	"unclassifiedLatePacketTotalCount",
	"rdmaSequenceWindow",
	"flowStartMilliseconds",
	"flowEndMilliseconds",
	"rdmaSequenceFlags",
	"flag_names",
	"unsupported_records",
	"first_report_id",
	"last_report_id",
	"accepted",
	"missing_initial",
	"missing_reports",
	"gaps",
	"identical_repeats",
	"stale",
	"ignored_after_invalid",
	"first_seen_ms",
	"last_seen_ms",
	"retired_ms",
	"peer",
	"peer_name",
	"peer_subject",
};
#define N_CSV (sizeof(csv_columns) / sizeof(csv_columns[0]))

/* The value of a column in the epoch's JSON object (one level of nesting), or NULL. */
static json_t *find_key(json_t *o, const char *name)
{
	const char *k;
	json_t *v, *inner;

	if ((v = json_object_get(o, name)))
		return v;
	json_object_foreach(o, k, v) if (json_is_object(v) && (inner = json_object_get(v, name))) return inner;
	return NULL;
}

/* The CSV columns of --summary: its JSON object's keys flattened (docs/json.md "report summary"). */
static const char *const csv_summary_columns[] = {
	"observationDomainId",
	"observationPointId",
	"sourceIPv4Address",
	"sourceIPv6Address",
	"destinationIPv4Address",
	"destinationIPv6Address",
	"rdmaDestinationQP",
	"rdmaPartitionKey",
	"vlanId",
	"dot1qCustomerVlanId",
	"epochs",
	"epochs_not_clean",
	"epochs_without_measurement",
	"complete",
	"incomplete",
	"invalid",
	"open",
	"requestPacketTotalCount",
	"skippedPsnTotalCount",
	"filledPsnTotalCount",
	"expiredPsnTotalCount",
	"abandonedPsnTotalCount",
	"pendingPsnCount",
	"repeatedPsnTotalCount",
	"unclassifiedLatePacketTotalCount",
	"never_seen",
	"pending",
	"seen_late",
	"repeated",
	"unclassified_late",
	"profileViolation",
	"captureDiscontinuity",
	"stateExhaustion",
	"serialDiscontinuity",
	"first_flow_start_ms",
	"last_flow_end_ms",
	"observation_point_name",
	"peer_name",
	"peer_subject",
};
#define N_CSV_SUMMARY (sizeof(csv_summary_columns) / sizeof(csv_summary_columns[0]))

/* One CSV table: its columns (collector_id first when shown). */
struct csv_table {
	const char *const *columns;
	size_t n;
};
static const struct csv_table csv_epochs = { csv_columns, N_CSV }, csv_summary = { csv_summary_columns, N_CSV_SUMMARY };

static void csv_header(FILE *f, const struct csv_table *t, int show_collector)
{
	if (show_collector)
		csv_field(f, "collector_id", 0);
	for (size_t i = 0; i < t->n; i++)
		csv_field(f, t->columns[i], i == t->n - 1);
}

/* One CSV record of a JSON object (collector_id first when shown): flag names joined by '|', null and absent keys empty. */
static void csv_record(FILE *f, const struct csv_table *t, json_t *o, int show_collector)
{
	if (show_collector)
		csv_field(f, json_string_value(json_object_get(o, "collector_id")), 0);
	for (size_t i = 0; i < t->n; i++) {
		json_t *v = find_key(o, t->columns[i]);
		char *text = NULL;
		int last = i == t->n - 1;

		if (json_is_string(v)) { /* a number above 2^63 - 1 as its digits, not the JSON writer's mark */
			const char *digits = rm_json_u64_digits(v);

			csv_field(f, digits ? digits : json_string_value(v), last);
			continue;
		}
		if (json_is_array(v)) {
			char buf[200] = "";
			size_t j;
			json_t *e;

			json_array_foreach(v, j, e) snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
							     j ? "|" : "", json_string_value(e));
			csv_field(f, buf, last);
			continue;
		}
		if (json_is_integer(v) || json_is_boolean(v)) { /* as the JSON writer prints them (jansson's format) */
			char n[32];

			if (json_is_integer(v))
				snprintf(n, sizeof(n), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			csv_field(f, json_is_integer(v) ? n : json_is_true(v) ? "true" : "false", last);
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

/* Names with counts: as text lines, or as keys of the JSON object o. */
static void show_named(const struct rm_named_u64 *v, size_t n, json_t *o)
{
	for (size_t i = 0; i < n; i++) {
		if (o)
			json_object_set_new(o, v[i].name, rm_json_u64(v[i].value));
		else
			printf("  %-21s %llu\n", v[i].name, (unsigned long long)v[i].value);
	}
}

struct limits_ctx {
	int json;
	int show_collector;
};

/*
 * The last run's limits (and the limits beyond the runs table's columns,
 * from run_limits), the connections that never became Transport Sessions
 * by outcome (docs/collector.md "What is stored") and the collector
 * resource drops by kind: as text, or one JSON object.
 */
static int show_limits(void *arg, const struct rm_limits_read *l)
{
	const struct limits_ctx *ctx = arg;
	json_t *o, *lim, *r, *drops;

	if (ctx->json) {
		o = json_object();
		lim = json_object();
		if (ctx->show_collector)
			json_object_set_new(o, "collector_id", rm_json_text(l->collector_id));
		json_object_set_new(o, "run", rm_json_u64(l->run_id));
		json_object_set_new(o, "started_ms", rm_json_u64(l->started_ms));
		json_object_set_new(o, "listen", rm_json_text(l->listen));
		json_object_set_new(o, "transport", rm_json_text(l->transport));
		json_object_set_new(lim, "max_sessions", rm_json_u64(l->max_sessions));
		json_object_set_new(lim, "max_epochs_per_session", rm_json_u64(l->max_epochs));
		json_object_set_new(lim, "max_raw_records", rm_json_u64(l->max_raw_records));
		json_object_set_new(lim, "inactivity_timeout_ms", rm_json_u64(l->inactivity_timeout_ms));
		json_object_set_new(o, "limits", lim);
		json_object_set_new(o, "pen", rm_json_u64(l->pen));
		json_object_set_new(o, "raw_records_stored", rm_json_u64(l->raw_records_stored));
		show_named(l->limits, l->n_limits, lim);
		r = json_object();
		show_named(l->refused, l->n_refused, r);
		json_object_set_new(o, "refused_connections", r);
		drops = json_object();
		show_named(l->drops, l->n_drops, drops);
		json_object_set_new(o, "drops", drops);
		return rm_json_write(stdout, o) ? -EIO : 0;
	}
	char t[RM_TIME_TEXT_LEN];

	if (ctx->show_collector)
		printf("collector %s\n", l->collector_id);
	printf("collector run %llu (%s on %s, PEN %llu, started %s)\n", (unsigned long long)l->run_id, l->transport,
	       l->listen, (unsigned long long)l->pen, rm_time_format(l->started_ms, t, sizeof(t)));
	printf("  max_sessions          %llu open Transport Sessions\n", (unsigned long long)l->max_sessions);
	printf("  max_epochs            %llu retained epochs per session\n", (unsigned long long)l->max_epochs);
	printf("  max_raw_records       %llu raw records (%llu stored)\n", (unsigned long long)l->max_raw_records,
	       (unsigned long long)l->raw_records_stored);
	printf("  inactivity_timeout_ms %llu%s\n", (unsigned long long)l->inactivity_timeout_ms,
	       l->inactivity_timeout_ms ? "" : " (never)");
	show_named(l->limits, l->n_limits, NULL);
	printf("connections that never became sessions (per source and minute in table connections):\n");
	show_named(l->refused, l->n_refused, NULL);
	if (!l->n_refused)
		printf("  none\n");
	printf("collector resource drops (refusals by these limits, not network loss):\n");
	show_named(l->drops, l->n_drops, NULL);
	if (!l->n_drops)
		printf("  none\n");
	return 0;
}

enum { FMT_TEXT, FMT_JSON, FMT_CSV, FMT_HTML };

/* What the command line says. */
struct report_args {
	const char *db_path, *store, *credentials, *ca, *conn, *output;
	const char *config;         /* --config: the collector's configuration, read for its store */
	const char *point, *reason; /* --observation-point, --reason: into select (check_args()) */
	struct rm_select select;
	int format, limits, verbose, anomalies, summary;
	uint64_t top; /* --summary: at most this many rows, 0: all; html: the connections shown */
	struct rm_read_filter filter;
	uint64_t now; /* UNIX ms: --since and --until durations count back from it */
};

enum { O_FORMAT = 1, O_JSON, O_SINCE, O_UNTIL };

#define R struct report_args
static const struct rm_opt report_opts[] = {
	RM_OPT("store", 'S', "STORE", RM_OPT_ARG,
	       "the store 'rocemeter collect' writes: sqlite:FILE or clickhouse:http[s]://HOST[:PORT][/?database=DB] "
	       "(every collector of the fleet; docs/fleet.md)",
	       RM_OPT_AT(R, store)),
	RM_OPT("db", 'd', "FILE", RM_OPT_ARG, "the same as --store sqlite:FILE", RM_OPT_AT(R, db_path)),
	RM_OPT("store-credentials", 0, "FILE", RM_OPT_ARG,
	       "ClickHouse user and password: lines user=NAME and password=SECRET (never on the command line; "
	       "mode 600: refused when group or others may read)",
	       RM_OPT_AT(R, credentials)),
	RM_OPT("store-ca", 0, "FILE", RM_OPT_ARG, "CA certificates (PEM) for clickhouse:https://", RM_OPT_AT(R, ca)),
	RM_OPT("config", 0, "FILE", RM_OPT_ARG,
	       "the collector's configuration: the store of its [collect] section (store or db, store_credentials, "
	       "store_ca; the options above override them); read when given, or when neither --store nor --db is "
	       "(default " RM_COLLECT_CONF ", the package's)",
	       RM_OPT_AT(R, config)),
	RM_OPT("format", 'f', "F", RM_OPT_CALL,
	       "text (default), json, csv or html (one page with charts, written to --output; needs D3 from "
	       "Debian's package libjs-d3)",
	       .id = O_FORMAT),
	RM_OPT("output", 'O', "FILE", RM_OPT_ARG, "where --format html writes its page ('-': standard output)",
	       RM_OPT_AT(R, output)),
	RM_OPT("json", 'j', NULL, RM_OPT_CALL, "the same as --format json", .id = O_JSON),
	RM_OPT("outcome", 'o', "X", RM_OPT_ARG, "only epochs with outcome X: complete, incomplete, invalid or open",
	       RM_OPT_AT(R, filter.outcome)),
	RM_OPT("since", 's', "T", RM_OPT_CALL, "only epochs whose flow ends at or after T", .id = O_SINCE),
	RM_OPT("until", 'u', "T", RM_OPT_CALL,
	       "only epochs whose flow starts at or before T\nT: ISO-8601 UTC (2026-11-30T09:15:00Z), a date (UTC "
	       "midnight), UNIX milliseconds, or a duration before now (90s, 15m, 2h, 7d); an epoch without an "
	       "accepted "
	       "report is placed by when the collector saw it",
	       .id = O_UNTIL),
	RM_OPT("connection", 'c', "SRC,DST,QP[,PKEY]", RM_OPT_ARG,
	       "\nonly epochs of that connection (record key: addresses, rdmaDestinationQP, rdmaPartitionKey)",
	       RM_OPT_AT(R, conn)),
	RM_OPT("collector", 0, "ID", RM_OPT_ARG, "only what the collector ID stored (ClickHouse)",
	       RM_OPT_AT(R, filter.collector_id)),
	RM_OPT("observation-point", 0, "ID|NAME", RM_OPT_ARG,
	       "only epochs of that observation point: [DOMAIN/]ID as the OP column shows it, or the name its "
	       "exporter gave it (a point the store does not know: exit 2, the known ones listed)",
	       RM_OPT_AT(R, point)),
	RM_OPT("reason", 0, "NAME", RM_OPT_ARG,
	       "only epochs whose final report carried the closure reason NAME: profileViolation, "
	       "captureDiscontinuity (mirror loss is one cause), stateExhaustion or serialDiscontinuity",
	       RM_OPT_AT(R, reason)),
	RM_OPT("anomalies", 'a', NULL, RM_OPT_FLAG,
	       "only epochs whose sequence is not clean (positions never seen, pending or seen late, repeated PSNs, "
	       "unclassified late requests; an epoch without an accepted report has no sequence to show) or that "
	       "closed with a closure reason (--reason)",
	       RM_OPT_AT(R, anomalies)),
	RM_OPT("summary", 0, NULL, RM_OPT_FLAG,
	       "one line per connection and observation point over the epochs selected: epochs, requests, each "
	       "counter, the epochs closed with each closure reason that occurs, outcomes; most positions never "
	       "seen first, then most epochs closed with a reason",
	       RM_OPT_AT(R, summary)),
	RM_OPT("top", 0, "N", RM_OPT_UINT,
	       "with --summary: the first N lines only; with --format html: the connections shown (default 25)",
	       RM_OPT_AT(R, top), .lo = 1, .hi = UINT32_MAX),
	RM_OPT("verbose", 'v', NULL, RM_OPT_FLAG,
	       "text: every field of each epoch in words (the default is a table); with --summary the columns "
	       "skipped, expired and abandoned too",
	       RM_OPT_AT(R, verbose)),
	RM_OPT("limits", 'l', NULL, RM_OPT_FLAG,
	       "the limits of the last collector run and the collector resource drops they caused (ClickHouse: of "
	       "each "
	       "collector)",
	       RM_OPT_AT(R, limits)),
	RM_OPT_HEADING("\n"
		       "When a ClickHouse store holds more than one collector, every epoch and every\n"
		       "--limits block names its collector (text: a first column COLLECTOR, --verbose:\n"
		       "'collector ID', json and csv: the key collector_id); session IDs are per\n"
		       "collector. --summary sums a connection's epochs across the collectors.\n"),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this help"),
	{ 0 },
};
#undef R

static void report_usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter report [--store STORE | --config FILE] [--format text|json|csv]\n"
		   "                        [--outcome X] [--since T] [--until T] [--collector ID]\n"
		   "                        [--connection SRC,DST,QP[,PKEY]] [--observation-point ID|NAME]\n"
		   "                        [--reason NAME] [--anomalies] [--verbose] [--summary [--top N]]\n"
		   "                        [--limits]\n"
		   "       rocemeter report [--store STORE] --format html --output FILE [--top N] [filters]\n"
		   "\n"
		   "Show the epochs stored by 'rocemeter collect', one line per epoch (json: one\n"
		   "JSON object per line, docs/json.md; csv: a header and one record per epoch).\n"
		   "Each epoch's outcome (report coverage: complete, incomplete, invalid, open)\n"
		   "stands beside its sequence health: clean, or the kinds of positions its PSN\n"
		   "sequence had (never seen: expired or abandoned at closure; pending; seen late:\n"
		   "filled) and its repeated PSNs and unclassified late requests. These counters\n"
		   "describe sequence positions: an expired position is not proof of a lost\n"
		   "packet, a repeated PSN not proof of a retransmission, a filled position not\n"
		   "proof of reordering. The default text is a table (a header, one line per\n"
		   "epoch: 132 columns for IPv4 connections with up to two kinds); --verbose\n"
		   "prints the prose that keeps apart the observed counters, the metering\n"
		   "qualifications (rdmaSequenceFlags), the report coverage (gaps) and the\n"
		   "outcome's reason. SESSION is the epoch's Transport Session (EPOCH starts at 1\n"
		   "in each).\n"
		   "Times are ISO-8601 UTC in text; 0 is '-' in the summary's columns.\n"
		   "\n"
		   "Without --store or --db, report reads the store the collector's configuration\n"
		   "names: the [collect] section of " RM_COLLECT_CONF " (the file\n"
		   "rocemeter-collect.service reads), or of --config FILE.\n"
		   "\n"
		   "--format html writes one self-contained page that opens offline: per\n"
		   "observation point over time, the top connections, a timeline per connection,\n"
		   "a heatmap of positions never seen and, apart, what the collector knows\n"
		   "(report gaps, invalid epochs, resource drops). It inlines D3 from Debian's\n"
		   "package libjs-d3 (" RM_HTML_D3_PATH ",\n"
		   "or the file ROCEMETER_D3_JS names).\n"
		   "\n");
	rm_opts_help(f, report_opts, 25, 6);
	fprintf(f, "\n"
		   "Exit status: 0 ok (also nothing to report: no epoch matches, or --limits on a store\n"
		   "without a collector run), 1 the store cannot be read (missing, not initialised,\n"
		   "ClickHouse unreachable or refusing; html: D3 or the output file), 2 usage error\n"
		   "(also no store and no configuration, --observation-point of a point the store\n"
		   "does not know, --reason of an unknown name: the known ones listed).\n");
}

/* --format, --json, --since, --until. */
static int report_option(void *target, const struct rm_opt *e, const char *value)
{
	struct report_args *a = target;
	struct rm_read_filter *filter = &a->filter;
	char err[512];

	switch (e->id) {
	case O_JSON:
		a->format = FMT_JSON;
		return 0;
	case O_FORMAT:
		if (!strcmp(value, "text"))
			a->format = FMT_TEXT;
		else if (!strcmp(value, "json"))
			a->format = FMT_JSON;
		else if (!strcmp(value, "csv"))
			a->format = FMT_CSV;
		else if (!strcmp(value, "html"))
			a->format = FMT_HTML;
		else {
			rm_log_cmd(RM_LOG_ERR, "--format: '%s' is not text, json, csv or html", value);
			return RM_EXIT_USAGE;
		}
		return 0;
	default:
		if (rm_time_parse(e->id == O_SINCE ? "--since" : "--until", value, a->now,
				  e->id == O_SINCE ? &filter->since : &filter->until, err, sizeof(err))) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_USAGE;
		}
		*(e->id == O_SINCE ? &filter->has_since : &filter->has_until) = 1;
		return 0;
	}
}

static const struct rm_cmd_opts report_cmd = {
	.t = report_opts, .usage = report_usage, .usage_on_error = 1, .call = report_option
};

/* The connection filter "SRC,DST,QP[,PKEY]". 0, or -EINVAL with err. */
static int parse_connection(const char *text, char *src, char *dst, size_t len, uint64_t *qp, int64_t *pkey, char *err,
			    size_t errlen)
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

struct epochs_ctx {
	int format;
	int show_collector;
	int collector_width; /* text table: the COLLECTOR column, 0 without */
	int verbose, anomalies;
	const struct rm_select *select; /* --observation-point, --reason */
	struct rm_table table;          /* text: the epochs' table */
	struct rm_summary *summary;     /* --summary: add the epochs here */
	int no_memory;                  /* --summary could not add one */
	GHashTable *names;              /* name_key() -> the observation point's name (names_add()) */
};

/*
 * The key of an observation point's name in epochs_ctx names: the collector,
 * the exporter identity that sent the name (authorised peer name, certificate
 * subject; NULL as "") and the point. The texts are length-prefixed, so no
 * subject (which holds '/') can spell another exporter's key.
 */
static char *name_key(const char *collector_id, const char *peer_name, const char *peer_subject, uint64_t domain,
		      uint64_t id)
{
	const char *c = collector_id ? collector_id : "", *n = peer_name ? peer_name : "",
		   *s = peer_subject ? peer_subject : "";

	return g_strdup_printf("%zu:%s%zu:%s%zu:%s/%" PRIu64 "/%" PRIu64, strlen(c), c, strlen(n), n, strlen(s), s,
			       domain, id);
}

/* rm_store_reader_points()'s call: one name into the table. */
static void names_add(void *arg, const char *collector_id, const char *peer_name, const char *peer_subject,
		      uint32_t domain, uint64_t id, const char *name)
{
	g_hash_table_replace(arg, name_key(collector_id, peer_name, peer_subject, domain, id), g_strdup(name));
}

/* The observation points' names the store holds (names_add()); NULL after the message when it cannot be read. */
static GHashTable *names_load(struct rm_store_reader *reader)
{
	GHashTable *names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	char err[768];

	if (rm_store_reader_points(reader, names_add, names, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		g_hash_table_destroy(names);
		return NULL;
	}
	return names;
}

/*
 * The name the epoch's own exporter (its session's peer_name and peer_subject)
 * gave e's observation point in names (names_load()); NULL: none known, or the
 * epoch's session is not stored. A name from another exporter never counts.
 */
static const char *name_of(void *names, const struct rm_epoch_read *e)
{
	const char *name;
	char *k;

	if (!names || !g_hash_table_size(names) || !e->peer)
		return NULL;
	k = name_key(e->collector_id, e->peer_name, e->peer_subject, e->u[RM_ER_DOMAIN], e->u[RM_ER_OBS]);
	name = g_hash_table_lookup(names, k);
	g_free(k);
	return name;
}

/*
 * 1 if the epoch's sequence is not clean (an epoch without an accepted
 * report has none to show), or its final report carried a closure reason:
 * its observation was cut (mirror loss, a capture discontinuity), its
 * connection disabled or evicted, and what the cut hid is counted nowhere.
 */
static int has_anomaly(const struct rm_epoch_read *e)
{
	struct rm_health_counters c = rm_table_health(e);

	return (!ISNULL(e, REQ) && rm_health_of(&c)) || rm_closure_of((uint16_t)I64(e, FLAGS_SEEN)) >= 0;
}

static int print_epoch(void *arg, const struct rm_epoch_read *in)
{
	struct epochs_ctx *ctx = arg;
	struct rm_epoch_read named = *in, *e = &named;
	json_t *o;

	named.obs_name = name_of(ctx->names, in);
	if (!rm_select_epoch(ctx->select, e) || (ctx->anomalies && !has_anomaly(e)))
		return 0;
	if (ctx->summary && rm_summary_add(ctx->summary, e)) {
		ctx->no_memory = 1;
		return 1;
	}
	if (ctx->summary)
		return 0;
	if (ctx->format == FMT_TEXT) {
		if (ctx->verbose)
			epoch_text(stdout, e, ctx->show_collector);
		else
			rm_table_epoch(&ctx->table, e, ctx->collector_width);
		return 0;
	}
	o = epoch_json(e, ctx->show_collector);
	if (ctx->format == FMT_CSV) {
		csv_record(stdout, &csv_epochs, o, ctx->show_collector);
		json_decref(o);
	} else {
		rm_json_write(stdout, o);
	}
	return 0;
}

/* --observation-point names a point the store knows (rm_select_known()): 0, or the exit status after the message. */
static int point_known(struct rm_store_reader *reader, const struct report_args *a, GHashTable *names)
{
	char err[1400];
	int r = rm_select_known(reader, &a->filter, &a->select, name_of, names, err, sizeof(err));

	if (!r)
		return RM_EXIT_OK;
	rm_log_cmd(RM_LOG_ERR, "%s", err);
	return r == -ENOENT ? RM_EXIT_USAGE : RM_EXIT_FAIL;
}

/* --format html: D3 first (a missing package is said before the store is read), then the page. */
static int report_html(const struct report_args *a, const struct rm_store_spec *spec)
{
	struct rm_html_opts o = { .now_ms = a->now, .top = (unsigned)a->top, .select = &a->select };
	struct rm_store_reader *reader;
	char err[768], label[300];
	size_t len;
	char *d3 = rm_report_html_d3(&len, err, sizeof(err));
	int rc = RM_EXIT_OK;

	if (!d3) {
		rm_log_cmd(RM_LOG_ERR, "--format html: %s", err);
		return RM_EXIT_FAIL;
	}
	snprintf(label, sizeof(label), "%s%s", a->store ? "" : "sqlite:", a->store ? a->store : a->db_path);
	o.store_label = label;
	reader = rm_store_reader_open(spec, err, sizeof(err));
	if (!reader) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		free(d3);
		return RM_EXIT_FAIL;
	}
	o.obs_name = name_of;
	if (!(o.obs_name_arg = names_load(reader))) {
		rc = RM_EXIT_FAIL;
	} else if ((rc = point_known(reader, a, o.obs_name_arg))) {
		; /* said */
	} else if (rm_report_html_write(reader, &a->filter, &o, d3, a->output, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		rc = RM_EXIT_FAIL;
	}
	if (o.obs_name_arg)
		g_hash_table_destroy(o.obs_name_arg);
	rm_store_reader_close(reader);
	free(d3);
	return rc;
}

/* The summary's rows, sorted, the first top (0: all), in the format asked for. */
static void print_summary(struct rm_summary *s, const struct report_args *a)
{
	size_t n = a->top && a->top < s->n ? (size_t)a->top : s->n;
	struct rm_table table;
	struct rm_summary_view view = { .verbose = a->verbose, .with_exporter = rm_summary_exporters(s) > 1 };

	rm_table_init(&table, stdout);
	rm_summary_sort(s);
	view.closures = rm_summary_closures(s, n);
	if (a->format == FMT_CSV)
		csv_header(stdout, &csv_summary, 0);
	for (size_t i = 0; i < n; i++) {
		json_t *o;

		if (a->format == FMT_TEXT) {
			rm_summary_text(&table, &s->rows[i], &view);
			continue;
		}
		o = rm_summary_json(&s->rows[i]);
		if (a->format == FMT_CSV) {
			csv_record(stdout, &csv_summary, o, 0);
			json_decref(o);
		} else {
			rm_json_write(stdout, o);
		}
	}
	rm_table_end(&table);
}

/* The epochs' outcomes --outcome filters on (docs/collector.md "What is stored"). */
static const char *const outcomes[] = { "complete", "incomplete", "invalid", "open" };

static int outcome_known(const char *s)
{
	for (size_t i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++)
		if (!strcmp(s, outcomes[i]))
			return 1;
	return 0;
}

/* Whether a and b name one file: the same st_dev/st_ino (symlinks followed), or, when a does not exist, the same name in the same directory. */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	gchar *da, *db, *na, *nb;
	int same;

	if (!stat(a, &sa))
		return !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	da = g_path_get_dirname(a);
	db = g_path_get_dirname(b);
	na = g_path_get_basename(a);
	nb = g_path_get_basename(b);
	same = !strcmp(na, nb) && !stat(da, &sa) && !stat(db, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	g_free(da);
	g_free(db);
	g_free(na);
	g_free(nb);
	return same;
}

/* The SQLite file (or its -wal, -shm, -journal) that output would overwrite, or NULL ("-": standard output). */
static const char *output_over_store(const char *output, const char *db, char *buf, size_t len)
{
	static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };

	if (!strcmp(output, "-"))
		return NULL;
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(buf, len, "%s%s", db, suffixes[i]);
		if (same_file(output, buf))
			return buf;
	}
	return NULL;
}

/* The checks of the command line beyond the option table. 0, or RM_EXIT_USAGE after the message. */
static int check_args(struct report_args *a, struct rm_store_spec *spec, char *src, char *dst, size_t len)
{
	struct rm_read_filter *filter = &a->filter;
	char err[768];

	if (rm_store_spec_resolve(a->store, a->db_path, a->credentials, a->ca, spec, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	if (filter->collector_id && spec->kind != RM_STORE_CLICKHOUSE) {
		rm_log_cmd(RM_LOG_ERR,
			   "--collector: a SQLite store holds one collector; it is for a clickhouse: store");
		return RM_EXIT_USAGE;
	}
	if (filter->outcome && !outcome_known(filter->outcome)) {
		size_t n = 0;

		for (size_t i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++)
			n += (size_t)snprintf(err + n, sizeof(err) - n, "%s%s", i ? ", " : "", outcomes[i]);
		/* -o reads as "output" to many: name the option that writes a file */
		rm_log_cmd(RM_LOG_ERR, "--outcome (-o) takes one of %s, not '%s'; to write a file use --output (-O)",
			   err, filter->outcome);
		return RM_EXIT_USAGE;
	}
	rm_select_init(&a->select);
	if (a->point)
		rm_select_point(&a->select, a->point);
	if (a->reason && rm_select_reason(&a->select, a->reason, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	if (a->conn) {
		if (parse_connection(a->conn, src, dst, len, &filter->qp, &filter->pkey, err, sizeof(err))) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_USAGE;
		}
		filter->src = src;
		filter->dst = dst;
	}
	if (a->limits && (a->format == FMT_CSV || a->format == FMT_HTML)) {
		rm_log_cmd(RM_LOG_ERR,
			   "--limits is text or json (the HTML page has the limits in its collector panel)");
		return RM_EXIT_USAGE;
	}
	if ((a->format == FMT_HTML) != (a->output != NULL)) {
		rm_log_cmd(RM_LOG_ERR,
			   a->output ? "--output is for --format html" : "--format html needs --output FILE");
		return RM_EXIT_USAGE;
	}
	if (a->output && spec->kind == RM_STORE_SQLITE && output_over_store(a->output, spec->path, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "--output %s is the store's file %s: name another file", a->output, err);
		return RM_EXIT_USAGE;
	}
	if (a->format == FMT_HTML && (a->summary || a->anomalies || a->verbose)) {
		rm_log_cmd(RM_LOG_ERR, "--format html draws every selected epoch: not with --%s",
			   a->summary     ? "summary"
			   : a->anomalies ? "anomalies"
					  : "verbose");
		return RM_EXIT_USAGE;
	}
	if (a->limits && (a->summary || a->anomalies || a->point || a->reason)) {
		rm_log_cmd(RM_LOG_ERR, "--limits shows the collector's limits: not with --%s",
			   a->summary     ? "summary"
			   : a->anomalies ? "anomalies"
			   : a->point     ? "observation-point"
					  : "reason");
		return RM_EXIT_USAGE;
	}
	if (a->top && !a->summary && a->format != FMT_HTML) {
		rm_log_cmd(RM_LOG_ERR, "--top counts the lines of --summary: use them together");
		return RM_EXIT_USAGE;
	}
	return 0;
}

/* The epochs (or their summary) that pass the filters. RM_EXIT_OK or RM_EXIT_FAIL after the message. */
static int show_epochs(struct rm_store_reader *reader, const struct report_args *a, int show_collector,
		       int collector_width)
{
	struct epochs_ctx ec = { .format = a->format,
				 .show_collector = show_collector,
				 .collector_width = collector_width,
				 .verbose = a->verbose,
				 .anomalies = a->anomalies,
				 .select = &a->select };
	struct rm_summary summary;
	char err[768];
	int rc = RM_EXIT_OK;

	if (!(ec.names = names_load(reader)))
		return RM_EXIT_FAIL;
	if ((rc = point_known(reader, a, ec.names))) {
		g_hash_table_destroy(ec.names);
		return rc;
	}
	if (a->summary) {
		if (rm_summary_init(&summary)) {
			rm_log_cmd(RM_LOG_ERR, "--summary: %s", strerror(ENOMEM));
			g_hash_table_destroy(ec.names);
			return RM_EXIT_FAIL;
		}
		ec.summary = &summary;
	} else if (a->format == FMT_CSV) {
		csv_header(stdout, &csv_epochs, show_collector);
	}
	rm_table_init(&ec.table, stdout);
	int r = rm_store_reader_epochs(reader, &a->filter, print_epoch, &ec, err, sizeof(err));

	rm_table_end(&ec.table);
	g_hash_table_destroy(ec.names);
	if (ec.no_memory) {
		rm_log_cmd(RM_LOG_ERR, "--summary: %s", strerror(ENOMEM));
		rc = RM_EXIT_FAIL;
	} else if (r) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		rc = RM_EXIT_FAIL;
	} else if (a->summary) {
		print_summary(&summary, a);
	}
	if (a->summary)
		rm_summary_free(&summary);
	return rc;
}

/*
 * The store of the collector's configuration: --config FILE, else the
 * package's (rm_paths_collect_conf()) when neither --store nor --db is
 * given; its [collect] store (or db), store_credentials and store_ca where
 * the command line gives none. 0, or RM_EXIT_USAGE after the message.
 */
static int store_from_config(struct report_args *a)
{
	static struct rm_config_file cfg; /* large: static; a's texts point into it */
	const char *path = a->config ? a->config : rm_paths_collect_conf();
	const struct rm_collect_settings *cs = &cfg.collect;
	char err[768];

	if (!a->config && (a->store || a->db_path))
		return 0;
	if (!a->config && access(path, F_OK) < 0) {
		rm_log_cmd(
			RM_LOG_ERR,
			"no store: give --store STORE (or --db FILE), or --config FILE, the collector's configuration "
			"(%s: %s)",
			path, strerror(errno));
		return RM_EXIT_USAGE;
	}
	rm_config_defaults(&cfg);
	if (rm_config_load(path, &cfg, err, sizeof(err)) < 0) {
		rm_log_cmd(RM_LOG_ERR, "--config: %s", err);
		return RM_EXIT_USAGE;
	}
	if (!a->store && !a->db_path) {
		if (rm_collect_store_check(cs, err, sizeof(err)) < 0) {
			rm_log_cmd(RM_LOG_ERR, "--config: %s: [collect] %s", path, err);
			return RM_EXIT_USAGE;
		}
		if (cs->store[0])
			a->store = cs->store;
		else
			a->db_path = cs->db;
	}
	if (!a->credentials && cs->store_credentials[0])
		a->credentials = cs->store_credentials;
	if (!a->ca && cs->store_ca[0])
		a->ca = cs->store_ca;
	return 0;
}

static int cmd_report(int argc, char **argv)
{
	struct report_args a = { .format = FMT_TEXT, .filter = { .pkey = -1 }, .now = rm_clock_wall_ms() };
	struct rm_read_filter *filter = &a.filter;
	int format, rc;
	char err[768], src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	static struct rm_store_spec spec; /* large: static */
	struct rm_store_reader *reader;
	char **ids = NULL;
	size_t n_ids = 0;
	int show_collector, collector_width = 0;

	rc = rm_opts_parse(&report_cmd, argc, argv, &a);
	if (rc >= 0)
		return rc;
	rc = RM_EXIT_OK;
	format = a.format;
	if (optind < argc) {
		report_usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (store_from_config(&a))
		return RM_EXIT_USAGE;
	if (check_args(&a, &spec, src, dst, sizeof(src)))
		return RM_EXIT_USAGE;
	if (format == FMT_HTML)
		return report_html(&a, &spec);
	reader = rm_store_reader_open(&spec, err, sizeof(err));
	if (!reader) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	/* The collector is shown when the store holds several, whatever the filters (a stable format). */
	if (rm_store_reader_collectors(reader, &ids, &n_ids, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		rm_store_reader_close(reader);
		return RM_EXIT_FAIL;
	}
	show_collector = n_ids > 1;
	for (size_t i = 0; i < n_ids; i++) {
		if (show_collector && (int)strlen(ids[i]) > collector_width)
			collector_width = (int)strlen(ids[i]);
		free(ids[i]);
	}
	free(ids);
	if (show_collector && collector_width < (int)strlen("COLLECTOR"))
		collector_width = (int)strlen("COLLECTOR");
	if (a.limits) {
		struct limits_ctx lc = { format == FMT_JSON, show_collector };

		int r = rm_store_reader_limits(reader, filter->collector_id, show_limits, &lc, err, sizeof(err));

		if (r == -ENOENT) {
			/* nothing to report, as an epoch listing that matches nothing: text says so, JSON has no line */
			if (format == FMT_TEXT)
				printf("%s\n", err);
		} else if (r) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			rc = RM_EXIT_FAIL;
		}
	} else {
		rc = show_epochs(reader, &a, show_collector, collector_width);
	}
	rm_store_reader_close(reader);
	if (fflush(stdout) || ferror(stdout)) {
		rm_log_cmd(RM_LOG_ERR, "standard output: write error");
		rc = RM_EXIT_FAIL;
	}
	return rc;
}

RM_COMMAND(report, 65, "show the epochs stored by the collector and its limits", cmd_report);
