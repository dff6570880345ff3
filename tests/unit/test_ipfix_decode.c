// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_ipfix_decode.c - the collector's IPFIX decoder (user/rules/ipfix_decode.c)
 * on hand-written Messages: Template and Options Template withdrawals
 * ([RFC7011] 8.1), the Flow Keys a Data Template needs before its records
 * are used ([SEQOBS] "Export Profile and Template"), and the Message
 * header's Sequence Number and Export Time ([RFC7011] 3.1). Octets are
 * written out here from RFC 7011 and the profile table of [SEQOBS], never
 * produced by rocemeter's encoder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rules/ipfix_decode.h"

#define PEN     32473u
#define TID     256 /* the Data Template */
#define OTID    260 /* the Flow Keys Options Template */
#define REC_LEN 120 /* [SEQOBS]: an IPv4 Data Record of the profile is 120 octets */
/* Flow Keys of the IPv4 Template below: fields 1-5 and 8 (observationPointId, the
 * addresses, QP, P_Key, epoch ID), never the report ID (field 9). */
#define V4_KEYS 0x9Full

/* What the sink saw. */
static int n_records, n_rejects, n_notes;
static char last_reject[300], notes[2048];

static void on_record(void *arg, uint32_t domain, uint16_t tid, const struct rm_report *r, const uint8_t *raw,
		      size_t len)
{
	n_records++;
}

static void on_reject(void *arg, uint32_t domain, uint16_t tid, const uint8_t *raw, size_t len, const char *reason)
{
	n_rejects++;
	snprintf(last_reject, sizeof(last_reject), "%s", reason);
}

static void on_note(void *arg, uint32_t domain, const char *msg)
{
	size_t used = strlen(notes);

	n_notes++;
	snprintf(notes + used, sizeof(notes) - used, "%s\n", msg);
}

static const struct rm_ipfix_sink sink = { .record = on_record, .reject = on_reject, .note = on_note };

static void reset_sink(void)
{
	n_records = n_rejects = n_notes = 0;
	last_reject[0] = notes[0] = 0;
}

/* ---------------- a Message builder ---------------- */

struct msg {
	uint8_t b[4096];
	size_t len, set_at;
};

static void put(struct msg *m, uint64_t v, int octets)
{
	for (int i = octets - 1; i >= 0; i--)
		m->b[m->len++] = (uint8_t)(v >> (8 * i));
}

/* Message header ([RFC7011] 3.1); the length is set by done(). */
static void begin(struct msg *m, uint32_t export_time, uint32_t seq, uint32_t domain)
{
	m->len = 0;
	put(m, 10, 2);
	put(m, 0, 2);
	put(m, export_time, 4);
	put(m, seq, 4);
	put(m, domain, 4);
}

static void set_begin(struct msg *m, uint16_t set_id)
{
	m->set_at = m->len;
	put(m, set_id, 2);
	put(m, 0, 2);
}

static void set_end(struct msg *m)
{
	uint16_t l = (uint16_t)(m->len - m->set_at);

	m->b[m->set_at + 2] = (uint8_t)(l >> 8);
	m->b[m->set_at + 3] = (uint8_t)l;
}

static size_t done(struct msg *m)
{
	m->b[2] = (uint8_t)(m->len >> 8);
	m->b[3] = (uint8_t)m->len;
	return m->len;
}

static void field(struct msg *m, int enterprise, uint16_t ie, uint16_t len)
{
	put(m, enterprise ? 0x8000u | ie : ie, 2);
	put(m, len, 2);
	if (enterprise)
		put(m, PEN, 4);
}

/* [SEQOBS] "Profile Fields in Example Order", IPv4: a Template Record of 19 fields. */
static void v4_template(struct msg *m, uint16_t tid)
{
	put(m, tid, 2);
	put(m, 19, 2);
	field(m, 0, 138, 8);                  /* observationPointId */
	field(m, 0, 8, 4);                    /* sourceIPv4Address */
	field(m, 0, 12, 4);                   /* destinationIPv4Address */
	field(m, 1, 1, 4);                    /* rdmaDestinationQP */
	field(m, 1, 2, 2);                    /* rdmaPartitionKey */
	field(m, 0, 152, 8);                  /* flowStartMilliseconds */
	field(m, 0, 153, 8);                  /* flowEndMilliseconds */
	for (uint16_t ie = 3; ie <= 14; ie++) /* rdmaSequenceEpochId .. unclassifiedLatePacketTotalCount */
		field(m, 1, ie, ie == 5 || ie == 11 ? 4 : ie == 6 ? 2 : 8);
}

/* The Flow Keys Options Template ([RFC7011] 4.4: scope templateId, flowKeyIndicator). */
static void flow_keys_options_template(struct msg *m)
{
	put(m, OTID, 2);
	put(m, 2, 2);
	put(m, 1, 2);
	field(m, 0, 145, 2);
	field(m, 0, 173, 8);
}

/* One valid IPv4 record of epoch 1: [SEQOBS] "Verification Examples", example 1 (requests 5, skipped 1, filled 1, repeated 1). */
static void v4_record(struct msg *m, uint64_t report_id)
{
	size_t at = m->len;

	put(m, 7, 8);
	put(m, 0xc0000201, 4);
	put(m, 0xc0000202, 4);
	put(m, 0x123, 4);
	put(m, 0xffff, 2);
	put(m, 1700000000000ull, 8);
	put(m, 1700000000500ull, 8);
	put(m, 1, 8);         /* epoch */
	put(m, report_id, 8); /* report */
	put(m, 4, 4);         /* window */
	put(m, 0x20, 2);      /* generationUnverified */
	put(m, 1, 8);         /* skipped */
	put(m, 1, 8);         /* filled */
	put(m, 0, 8);         /* expired */
	put(m, 0, 8);         /* abandoned */
	put(m, 0, 4);         /* pending */
	put(m, 1, 8);         /* repeated */
	put(m, 5, 8);         /* requests */
	put(m, 0, 8);         /* unclassified late */
	assert_int_equal(m->len - at, REC_LEN);
}

static int feed(struct rm_ipfix_session *s, struct msg *m)
{
	char err[200];

	return rm_ipfix_message(s, m->b, done(m), &sink, NULL, err, sizeof(err));
}

/* Templates Message: the Data Template, the Flow Keys Options Template and, if keys, its record. */
static void templates(struct msg *m, uint32_t seq, int keys)
{
	begin(m, 1700000000, seq, 0);
	set_begin(m, 2);
	v4_template(m, TID);
	set_end(m);
	set_begin(m, 3);
	flow_keys_options_template(m);
	set_end(m);
	if (keys) {
		set_begin(m, OTID);
		put(m, TID, 2);
		put(m, V4_KEYS, 8);
		set_end(m);
	}
}

static void data(struct msg *m, uint32_t export_time, uint32_t seq, int n, uint64_t first_report)
{
	begin(m, export_time, seq, 0);
	set_begin(m, TID);
	for (int i = 0; i < n; i++)
		v4_record(m, first_report + (uint64_t)i);
	set_end(m);
}

/* ---------------- Flow Keys ---------------- */

/*
 * [SEQOBS] "Export Profile and Template": the exporter MUST advertise the
 * Flow Keys; the collector MUST validate required keys. A Data Template
 * whose Flow Keys were never advertised is refused: its Data Records are
 * rejected with that reason (kept raw), none is delivered as a report.
 * Once the Flow Keys arrive, the records are used.
 */
static void test_flow_keys_never_advertised(void **state)
{
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	struct msg m;

	reset_sink();
	templates(&m, 0, 0);
	assert_int_equal(feed(s, &m), 0);
	data(&m, 1700000000, 0, 2, 1);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(n_records, 0);
	assert_int_equal(n_rejects, 2);
	assert_non_null(strstr(last_reject, "Flow Keys"));

	/* The Flow Keys record arrives: the Template is usable from then on. */
	begin(&m, 1700000000, 2, 0);
	set_begin(&m, OTID);
	put(&m, TID, 2);
	put(&m, V4_KEYS, 8);
	set_end(&m);
	assert_int_equal(feed(s, &m), 0);
	data(&m, 1700000000, 3, 1, 3);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(n_records, 1);
	assert_int_equal(n_rejects, 2);
	rm_ipfix_session_free(s);
}

/* ---------------- withdrawals ---------------- */

/*
 * [RFC7011] 8.1: an Options Template Withdrawal Record is a Template ID and
 * a Field Count of 0 (4 octets, no Scope Field Count) in an Options
 * Template Set. After it, the withdrawn Options Template is unknown: an
 * Options Data Set that uses it is rejected, and its records change nothing.
 */
static void test_options_template_withdrawal(void **state)
{
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	struct msg m;

	reset_sink();
	templates(&m, 0, 1);
	assert_int_equal(feed(s, &m), 0);
	begin(&m, 1700000000, 1, 0);
	set_begin(&m, 3);
	put(&m, OTID, 2);
	put(&m, 0, 2);
	set_end(&m); /* set length 8 */
	assert_int_equal(feed(s, &m), 0);
	assert_non_null(strstr(notes, "Options Template 260 withdrawn"));

	/* Flow Keys through the withdrawn Options Template that would make Template 256 unusable. */
	begin(&m, 1700000000, 1, 0);
	set_begin(&m, OTID);
	put(&m, TID, 2);
	put(&m, 0x1ffull, 8); /* flags the report ID as a key */
	set_end(&m);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(n_rejects, 1);
	assert_non_null(strstr(last_reject, "unknown Template 260"));
	data(&m, 1700000000, 1, 1, 1);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(n_records, 1); /* the Data Template kept its validated Flow Keys */
	rm_ipfix_session_free(s);
}

/* The All Options Templates Withdrawal (Template ID 3, [RFC7011] 8.1) withdraws every Options Template of the domain. */
static void test_all_options_templates_withdrawal(void **state)
{
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	struct msg m;

	reset_sink();
	templates(&m, 0, 1);
	assert_int_equal(feed(s, &m), 0);
	begin(&m, 1700000000, 1, 0);
	set_begin(&m, 3);
	put(&m, 3, 2);
	put(&m, 0, 2);
	set_end(&m);
	assert_int_equal(feed(s, &m), 0);
	assert_non_null(strstr(notes, "all Options Templates withdrawn"));
	begin(&m, 1700000000, 1, 0);
	set_begin(&m, OTID);
	put(&m, TID, 2);
	put(&m, V4_KEYS, 8);
	set_end(&m);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(n_rejects, 1);
	assert_non_null(strstr(last_reject, "unknown Template 260"));
	rm_ipfix_session_free(s);
}

/* ---------------- Sequence Number and Export Time ---------------- */

/*
 * [RFC7011] 3.1 (with erratum 4396): the Sequence Number is the number of
 * Data Records (Options Data Records included) sent in the session from
 * the domain before this Message. The Templates Message above carries one
 * Flow Keys record, so the first Data Message is expected at 1, one of 3
 * records then leads to 4. A Message at 10 skips 6 records: one gap, 6
 * missing; a Message at 5 after 12 expected goes back: one more gap,
 * nothing missing. A gap is logged (a note), counted, and never ends the
 * session or drops the Message's records.
 */
static void test_sequence_gaps(void **state)
{
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	const struct rm_ipfix_counts *c = rm_ipfix_counts(s);
	struct msg m;

	reset_sink();
	templates(&m, 0, 1);
	assert_int_equal(feed(s, &m), 0);
	data(&m, 1700000000, 1, 3, 1);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(c->seq_gaps, 0);
	data(&m, 1700000000, 10, 2, 4); /* expected 4 */
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(c->seq_gaps, 1);
	assert_int_equal(c->seq_missing, 6);
	assert_non_null(strstr(notes, "Sequence Number 10"));
	data(&m, 1700000000, 5, 1, 6); /* expected 12 */
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(c->seq_gaps, 2);
	assert_int_equal(c->seq_missing, 6);
	data(&m, 1700000000, 6, 1, 7); /* expected 6 again */
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(c->seq_gaps, 2);
	assert_int_equal(n_records, 7);
	rm_ipfix_session_free(s);
}

/* The counter is modulo 2^32: 2^32 - 1 plus two records is 1, no gap. */
static void test_sequence_wraps(void **state)
{
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	const struct rm_ipfix_counts *c = rm_ipfix_counts(s);
	struct msg m;

	reset_sink();
	templates(&m, 0xfffffffeu, 1);
	assert_int_equal(feed(s, &m), 0);
	data(&m, 1700000000, 0xffffffffu, 2, 1);
	assert_int_equal(feed(s, &m), 0);
	data(&m, 1700000000, 1, 1, 3);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(c->seq_gaps, 0);
	rm_ipfix_session_free(s);
}

/* Export Time earlier than the previous Message's of the domain: logged and counted; equal is fine. */
static void test_export_time_backwards(void **state)
{
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	const struct rm_ipfix_counts *c = rm_ipfix_counts(s);
	struct msg m;

	reset_sink();
	templates(&m, 0, 1);
	assert_int_equal(feed(s, &m), 0);
	data(&m, 1700000100, 1, 1, 1);
	assert_int_equal(feed(s, &m), 0);
	data(&m, 1700000100, 2, 1, 2);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(c->time_backwards, 0);
	data(&m, 1700000099, 3, 1, 3);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(c->time_backwards, 1);
	assert_non_null(strstr(notes, "Export Time"));
	assert_int_equal(n_records, 3);
	rm_ipfix_session_free(s);
}

/* Logging is bounded: after the first 10 anomalies of a session, one line says the rest are only counted. */
static void test_anomaly_notes_rate_limited(void **state)
{
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	const struct rm_ipfix_counts *c = rm_ipfix_counts(s);
	struct msg m;

	reset_sink();
	templates(&m, 0, 1);
	assert_int_equal(feed(s, &m), 0);
	for (int i = 0; i < 100; i++) {
		data(&m, 1700000000, 1000u * (uint32_t)(i + 1), 1, (uint64_t)i + 1);
		assert_int_equal(feed(s, &m), 0);
	}
	assert_int_equal(c->seq_gaps, 100);
	assert_int_equal(n_notes, 11);
	rm_ipfix_session_free(s);
}

/* ---------------- rocemeter's Reliability record (ipfix_ie.h RM_TID_RELIABILITY) ---------------- */

static struct rm_ipfix_reliability got_rel[4];
static int n_rel;

static void on_reliability(void *arg, uint32_t domain, const struct rm_ipfix_reliability *r)
{
	if (n_rel < 4)
		got_rel[n_rel] = *r;
	n_rel++;
}

static const struct rm_ipfix_sink rel_sink = {
	.record = on_record, .reject = on_reject, .note = on_note, .reliability = on_reliability
};

/*
 * An Options Template of RFC 7011's IANA elements, written here from
 * docs/ipfix-mapping.md "What an earlier Transport Session delivered":
 * scope exporterIPv6Address(131, 16) exporterTransportPort(217, 2); then
 * flowStartMilliseconds(152), flowEndMilliseconds(153),
 * exportedMessageTotalCount(41), exportedFlowRecordTotalCount(42),
 * exportedOctetTotalCount(40), 8 octets each. scope: its Scope Field Count.
 */
static void reliability_template(struct msg *m, uint16_t tid, uint16_t scope)
{
	static const uint16_t f[7][2] = { { 131, 16 }, { 217, 2 }, { 152, 8 }, { 153, 8 },
					  { 41, 8 },   { 42, 8 },  { 40, 8 } };

	set_begin(m, 3);
	put(m, tid, 2);
	put(m, 7, 2);
	put(m, scope, 2);
	for (int i = 0; i < 7; i++)
		field(m, 0, f[i][0], f[i][1]);
	set_end(m);
}

static void reliability_counts(struct msg *m, uint16_t port, uint64_t messages, uint64_t records, uint64_t octets)
{
	put(m, 0, 8); /* ::ffff:192.0.2.9 */
	put(m, 0xffff, 4);
	put(m, 0xc0000209, 4);
	put(m, port, 2);
	put(m, 1700000000000ull, 8);
	put(m, 1700000009000ull, 8);
	put(m, messages, 8);
	put(m, records, 8);
	put(m, octets, 8);
}

static void reliability_record(struct msg *m, uint16_t port, uint64_t records)
{
	reliability_counts(m, port, 77, records, 123456);
}

/*
 * The record is bound by its fields, not its Template ID: delivered through
 * sink->reliability with its values, never rejected, counted in the Sequence
 * Number as every Options Data Record; the same fields with another scope
 * count bind nothing (ignored as any unknown Options Data Record is).
 */
static void test_reliability_record(void **state)
{
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	const struct rm_ipfix_counts *c = rm_ipfix_counts(s);
	char err[200];
	struct msg m;

	reset_sink();
	n_rel = 0;
	begin(&m, 1700000000, 0, 0);
	reliability_template(&m, 300, 2);
	reliability_template(&m, 301, 1);
	set_begin(&m, 300);
	reliability_record(&m, 40001, 25000);
	reliability_record(&m, 40002, 7);
	set_end(&m);
	set_begin(&m, 301);
	reliability_record(&m, 40003, 9);
	set_end(&m);
	assert_int_equal(rm_ipfix_message(s, m.b, done(&m), &rel_sink, NULL, err, sizeof(err)), 0);
	assert_int_equal(n_rejects, 0);
	assert_int_equal(n_records, 0);
	assert_int_equal(n_rel, 2);
	assert_int_equal(got_rel[0].exporter_addr[10], 0xff);
	assert_int_equal(got_rel[0].exporter_addr[12], 192);
	assert_int_equal(got_rel[0].exporter_addr[15], 9);
	assert_int_equal(got_rel[0].exporter_port, 40001);
	assert_int_equal(got_rel[0].started_ms, 1700000000000ull);
	assert_int_equal(got_rel[0].ended_ms, 1700000009000ull);
	assert_int_equal(got_rel[0].messages, 77);
	assert_int_equal(got_rel[0].records, 25000);
	assert_int_equal(got_rel[0].octets, 123456);
	assert_int_equal(got_rel[1].exporter_port, 40002);
	assert_int_equal(got_rel[1].records, 7);
	/* Three Options Data Records: the next Message's Sequence Number is 3. */
	begin(&m, 1700000000, 3, 0);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(c->seq_gaps, 0);
	/* A sink without the callback ignores the records. */
	reset_sink();
	begin(&m, 1700000000, 3, 0);
	set_begin(&m, 300);
	reliability_record(&m, 40004, 1);
	set_end(&m);
	assert_int_equal(feed(s, &m), 0);
	assert_int_equal(n_rejects, 0);
	assert_int_equal(n_rel, 2);
	rm_ipfix_session_free(s);
}

/*
 * A forged Reliability record (2^64 - 1 records was once stored
 * as resource_drops = -1) is rejected, never delivered: a count above
 * 2^63 - 1, more Messages than 16 octets each or more Data Records than one
 * octet each in the octets claimed. The limits themselves are accepted:
 * 10 Messages and 840 records in 1000 octets (10 x 16 + 840 = 1000).
 */
static void test_reliability_record_impossible_counts(void **state)
{
	static const uint64_t bad[][3] = {
		{ 77, UINT64_MAX, 123456 },
		{ UINT64_MAX, 1, UINT64_MAX },
		{ 1, 1ull << 63, UINT64_MAX },
		{ 63, 1, 1000 },
		{ 10, 841, 1000 },
	};
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	char err[200];
	struct msg m;

	reset_sink();
	n_rel = 0;
	begin(&m, 1700000000, 0, 0);
	reliability_template(&m, 300, 2);
	set_begin(&m, 300);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		reliability_counts(&m, (uint16_t)(40001 + i), bad[i][0], bad[i][1], bad[i][2]);
	reliability_counts(&m, 40100, 10, 840, 1000);
	set_end(&m);
	assert_int_equal(rm_ipfix_message(s, m.b, done(&m), &rel_sink, NULL, err, sizeof(err)), 0);
	assert_int_equal(n_rejects, 5);
	assert_non_null(strstr(last_reject, "claims 10 Messages, 841 Data Records in 1000 octets"));
	assert_int_equal(n_rel, 1);
	assert_int_equal(got_rel[0].exporter_port, 40100);
	assert_int_equal(got_rel[0].records, 840);
	rm_ipfix_session_free(s);
}

/* What the names sink saw: (domain, observationPointId, name) of each name given. */
static int n_points;
static struct {
	uint32_t domain;
	uint64_t id;
	char name[64];
} got_point[8];

static void on_point(void *arg, uint32_t domain, uint64_t id, const char *name)
{
	if (n_points < 8) {
		got_point[n_points].domain = domain;
		got_point[n_points].id = id;
		snprintf(got_point[n_points].name, sizeof(got_point[n_points].name), "%s", name);
	}
	n_points++;
}

static const struct rm_ipfix_sink point_sink = { .record = on_record, .reject = on_reject, .point = on_point };

/* One Message in domain: Template 262 (scope observationPointId 138/8, interfaceName 82/64) and a record. */
static void point_msg(struct msg *m, uint32_t domain, uint32_t seq, uint64_t id, const char *name)
{
	begin(m, 1700000000, seq, domain);
	set_begin(m, 3);
	put(m, 262, 2);
	put(m, 2, 2);
	put(m, 1, 2);
	field(m, 0, 138, 8);
	field(m, 0, 82, 64);
	set_end(m);
	set_begin(m, 262);
	put(m, id, 8);
	memset(m->b + m->len, 0, 64);
	memcpy(m->b + m->len, name, strlen(name));
	m->len += 64;
	set_end(m);
}

/*
 * max_observation_points (trial: 200,000 distinct names in one session were
 * all stored): at most 2 distinct (Observation Domain, observationPointId)
 * pairs; the same ID in another domain is another point, so rejected; a
 * name again for an admitted point is given.
 */
static void test_observation_points_bounded(void **state)
{
	static const struct {
		uint32_t domain;
		uint64_t id;
		const char *name;
		int given;
	} in[] = {
		{ 0, 1, "a", 1 }, { 0, 2, "b", 1 }, { 1, 1, "c", 0 }, { 0, 3, "d", 0 }, { 0, 1, "a2", 1 },
	};
	struct rm_ipfix_session *s = rm_ipfix_session_new(PEN);
	uint32_t seq[2] = { 0, 0 };
	char err[200];
	struct msg m;

	reset_sink();
	n_points = 0;
	rm_ipfix_session_set_max_points(s, 2);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		point_msg(&m, in[i].domain, seq[in[i].domain]++, in[i].id, in[i].name);
		assert_int_equal(rm_ipfix_message(s, m.b, done(&m), &point_sink, NULL, err, sizeof(err)), 0);
	}
	assert_int_equal(n_rejects, 2);
	assert_string_equal(last_reject, "Options Template 262: observation point 3 beyond max_observation_points 2 "
					 "distinct names in this Transport Session");
	assert_int_equal(n_points, 3);
	assert_true(got_point[1].domain == 0 && got_point[1].id == 2 && !strcmp(got_point[1].name, "b"));
	assert_true(got_point[2].domain == 0 && got_point[2].id == 1 && !strcmp(got_point[2].name, "a2"));
	rm_ipfix_session_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flow_keys_never_advertised),
		cmocka_unit_test(test_options_template_withdrawal),
		cmocka_unit_test(test_all_options_templates_withdrawal),
		cmocka_unit_test(test_sequence_gaps),
		cmocka_unit_test(test_sequence_wraps),
		cmocka_unit_test(test_export_time_backwards),
		cmocka_unit_test(test_anomaly_notes_rate_limited),
		cmocka_unit_test(test_reliability_record),
		cmocka_unit_test(test_reliability_record_impossible_counts),
		cmocka_unit_test(test_observation_points_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
