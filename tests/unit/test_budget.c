// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_budget.c - the collector's memory budget (user/rules/budget.c) and
 * its two users without sockets or SQLite: the collector rules (retained
 * epochs) and the IPFIX decoder (Templates). Expected values come from the
 * charges documented in docs/collector.md ("Memory budget": 1024 bytes per
 * retained epoch, 512 bytes plus its octets per Template) and from the
 * rules stated there (the oldest closed epoch makes room first; a refusal
 * is reported once, as a budget refusal, never as an admission drop).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rules/budget.h"
#include "rules/collector_rules.h"
#include "rules/ipfix_decode.h"
#include "rocemeter/seqobs.h"

/* docs/collector.md "Memory budget" */
#define EPOCH_BYTES    1024u
#define TEMPLATE_BYTES 512u

/* What the budget's callback saw. */
static int n_refused;
static char refused_what[32];
static uint64_t refused_bytes;
static const struct rm_budget_share *refused_share; /* the share at its limit, NULL: the budget */

static void on_refused(void *arg, const char *what, uint64_t bytes, const struct rm_budget_share *sh)
{
	n_refused++;
	snprintf(refused_what, sizeof(refused_what), "%s", what);
	refused_bytes = bytes;
	refused_share = sh;
}

static struct rm_budget *budget(uint64_t limit)
{
	struct rm_budget *b = rm_budget_new(limit, on_refused, NULL);

	assert_non_null(b);
	n_refused = 0;
	refused_what[0] = 0;
	return b;
}

static void test_documented_charges(void **state)
{
	assert_int_equal(RM_BUDGET_EPOCH_BYTES, EPOCH_BYTES);
	assert_int_equal(RM_BUDGET_TEMPLATE_BYTES, TEMPLATE_BYTES);
	assert_int_equal(RM_BUDGET_SESSION_BYTES, 262144);
	assert_int_equal(RM_BUDGET_HANDSHAKE_BYTES, 65536);
}

static void test_take_give(void **state)
{
	struct rm_budget *b = budget(1000);

	assert_int_equal(rm_budget_take(b, 600, "x"), 0);
	assert_int_equal(rm_budget_take(b, 401, "epoch"), -1); /* 1001 > 1000 */
	assert_int_equal(n_refused, 1);
	assert_string_equal(refused_what, "epoch");
	assert_int_equal(refused_bytes, 401);
	assert_int_equal(rm_budget_used(b), 600);
	assert_int_equal(rm_budget_take(b, 400, "x"), 0); /* exactly full */
	assert_int_equal(rm_budget_try(b, 1), -1);        /* try: no callback */
	assert_int_equal(n_refused, 1);
	assert_int_equal(rm_budget_refusals(b), 1);
	rm_budget_give(b, 1000);
	assert_int_equal(rm_budget_used(b), 0);
	rm_budget_give(b, 5); /* never below zero */
	assert_int_equal(rm_budget_used(b), 0);
	/* NULL is unlimited */
	assert_int_equal(rm_budget_take(NULL, UINT64_MAX, "x"), 0);
	rm_budget_free(b);
}

/* ---------------- retained epochs ---------------- */

static int n_sink_drops, n_retired;
static char last_retired_reason[240];
static uint64_t last_retired_epoch;

static void on_epoch(void *arg, struct rm_epoch *e)
{
	if (e->retired_ms) {
		n_retired++;
		last_retired_epoch = e->key.epoch_id;
		snprintf(last_retired_reason, sizeof(last_retired_reason), "%s", e->reason);
	}
}

static void on_drop(void *arg, uint64_t session_id, uint32_t domain, uint64_t epoch_id, const char *detail)
{
	n_sink_drops++;
}

static const struct rm_rules_sink sink = { on_epoch, on_drop, NULL, NULL };

/* [SEQOBS] "Verification Examples", example 1 (W=4, PSNs 100,102,101,103,102). */
static struct rm_report rep(uint64_t epoch, uint64_t report, int final)
{
	struct rm_report r;

	memset(&r, 0, sizeof(r));
	r.observation_point_id = 7;
	r.family = 4;
	r.src[0] = 192, r.src[1] = 0, r.src[2] = 2, r.src[3] = 1;
	r.dst[0] = 192, r.dst[1] = 0, r.dst[2] = 2, r.dst[3] = 2;
	r.dest_qp = 0x000123;
	r.pkey = 0xffff;
	r.flow_start_ms = 1700000000000ULL;
	r.flow_end_ms = 1700000000500ULL;
	r.epoch_id = epoch;
	r.report_id = report;
	r.window = 4;
	r.flags = RM_FLAG_GENERATION_UNVERIFIED | (final ? RM_FLAG_FINAL_EPOCH : 0);
	r.requests = 5;
	r.skipped = 1;
	r.filled = 1;
	r.repeated = 1;
	return r;
}

static enum rm_verdict feed(struct rm_rsession *s, uint64_t epoch, uint64_t report, int final)
{
	struct rm_report r = rep(epoch, report, final);
	char why[256];

	return rm_rules_record(s, 0, &r, 1000, why, sizeof(why));
}

static void test_epochs_within_budget(void **state)
{
	struct rm_rules_limits lim = { 4, 100, 0 };
	struct rm_budget *b = budget(3 * EPOCH_BYTES);
	struct rm_rules *rules = rm_rules_new(&lim, &sink, NULL);
	struct rm_rsession *s;

	assert_non_null(rules);
	rm_rules_set_budget(rules, b);
	s = rm_rules_session_open(rules, 1);
	n_sink_drops = n_retired = 0;
	for (uint64_t e = 1; e <= 3; e++)
		assert_int_equal(feed(s, e, 1, 0), RM_V_ACCEPTED);
	assert_int_equal(rm_budget_used(b), 3 * EPOCH_BYTES);
	/* a fourth open epoch does not fit, and no epoch is closed */
	assert_int_equal(feed(s, 4, 1, 0), RM_V_RESOURCE_DROP);
	assert_int_equal(n_refused, 1);
	assert_string_equal(refused_what, "epoch");
	assert_int_equal(refused_bytes, EPOCH_BYTES);
	assert_int_equal(n_sink_drops, 0); /* reported once, by the budget */
	assert_null(rm_rules_find(s, 0, 4));
	assert_int_equal(rm_rules_retained(s), 3);
	/* epoch 1 closes; epoch 5 then fits by retiring it (the oldest closed epoch) */
	assert_int_equal(feed(s, 1, 2, 1), RM_V_ACCEPTED);
	assert_int_equal(feed(s, 5, 1, 0), RM_V_ACCEPTED);
	assert_int_equal(n_refused, 1);
	assert_int_equal(n_retired, 1);
	assert_int_equal(last_retired_epoch, 1);
	assert_null(rm_rules_find(s, 0, 1));
	assert_int_equal(rm_budget_used(b), 3 * EPOCH_BYTES);
	/* every retired epoch gives its bytes back */
	rm_rules_session_close(s, "test end", 2000);
	assert_int_equal(rm_budget_used(b), 0);
	rm_rules_free(rules);
	rm_budget_free(b);
}

/* ---------------- Templates ---------------- */

static int n_rejects;
static char last_reject[300];

static void on_record(void *arg, uint32_t domain, uint16_t tid, const struct rm_report *r, const uint8_t *raw,
		      size_t len)
{
}

static void on_reject(void *arg, uint32_t domain, uint16_t tid, const uint8_t *raw, size_t len, const char *reason)
{
	n_rejects++;
	snprintf(last_reject, sizeof(last_reject), "%s", reason);
}

static const struct rm_ipfix_sink dsink = { .record = on_record, .reject = on_reject };

static size_t put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return 2;
}

/*
 * An IPFIX Message (RFC 7011, 3.1) with one Template Set: a Template Record
 * tid with nfields Field Specifiers (octetDeltaCount, 8 octets each), or a
 * withdrawal (nfields 0). Returns the Message length; the Template Record
 * is 4 + 4 * nfields octets.
 */
static size_t template_msg(uint8_t *m, uint16_t tid, uint16_t nfields)
{
	size_t n = 16, set = 16;

	memset(m, 0, 16);
	n += put16(m + n, 2); /* Template Set */
	n += 2;               /* set length, below */
	n += put16(m + n, tid);
	n += put16(m + n, nfields);
	for (uint16_t i = 0; i < nfields; i++) {
		n += put16(m + n, 1);
		n += put16(m + n, 8);
	}
	put16(m, 10);
	put16(m + 2, (uint16_t)n);
	put16(m + set + 2, (uint16_t)(n - set));
	return n;
}

static void message(struct rm_ipfix_session *d, const uint8_t *m, size_t len)
{
	char err[300];

	assert_int_equal(rm_ipfix_message(d, m, len, &dsink, NULL, err, sizeof(err)), 0);
}

static void test_templates_within_budget(void **state)
{
	uint8_t m[1024];
	size_t tl;
	/* room for Template 256 of 3 fields (16 octets), not for a second one */
	struct rm_budget *b = budget(TEMPLATE_BYTES + 16 + TEMPLATE_BYTES);
	struct rm_ipfix_session *d = rm_ipfix_session_new(32473);

	assert_non_null(d);
	rm_ipfix_session_set_budget(d, b);
	n_rejects = 0;
	message(d, m, template_msg(m, 256, 3));
	assert_int_equal(rm_budget_used(b), TEMPLATE_BYTES + 16);
	assert_non_null(rm_ipfix_template_bytes(d, 0, 256, &tl));
	assert_int_equal(tl, 16);
	message(d, m, template_msg(m, 257, 1)); /* 512 + 8 > what is left */
	assert_int_equal(n_refused, 1);
	assert_string_equal(refused_what, "Template");
	assert_int_equal(refused_bytes, TEMPLATE_BYTES + 8);
	assert_int_equal(n_rejects, 1);
	assert_non_null(strstr(last_reject, "memory budget"));
	assert_null(rm_ipfix_template_bytes(d, 0, 257, &tl));
	/* withdrawing 256 gives its bytes back; then 257 fits */
	message(d, m, template_msg(m, 256, 0));
	assert_int_equal(rm_budget_used(b), 0);
	message(d, m, template_msg(m, 257, 1));
	assert_int_equal(rm_budget_used(b), TEMPLATE_BYTES + 8);
	/* a redefinition that does not fit withdraws the old definition too */
	message(d, m, template_msg(m, 257, 200));
	assert_int_equal(n_refused, 2);
	assert_null(rm_ipfix_template_bytes(d, 0, 257, &tl));
	assert_int_equal(rm_budget_used(b), 0);
	/* freeing the session gives everything back */
	message(d, m, template_msg(m, 258, 2));
	assert_int_equal(rm_budget_used(b), TEMPLATE_BYTES + 12);
	rm_ipfix_session_free(d);
	assert_int_equal(rm_budget_used(b), 0);
	rm_budget_free(b);
}

/* ---------------- each session's share (max_memory_bytes_per_session) ---------------- */

#define MIB (1024u * 1024u)

/*
 * One exporter against the whole budget: in a 64 MiB budget one session sends
 * 100,000 open epochs. With a share of a quarter (the default of
 * max_memory_bytes_per_session) it keeps floor(16 MiB / 1024) = 16384 of
 * them, the other 83,616 are refused as its own share's refusals, and 10
 * other sessions are still admitted (262144 bytes each, as the collector
 * charges a session) with 1000 epochs each. Without shares it took
 * (64 MiB - 262144) / 1024 = 65280 epochs and the budget was full.
 */
static void test_one_session_cannot_take_all(void **state)
{
	struct rm_rules_limits lim = { 16, 200000, 0 };
	struct rm_budget *b = budget(64 * MIB);
	struct rm_rules *rules = rm_rules_new(&lim, &sink, NULL);
	struct rm_rsession *hog, *other[10];
	uint64_t accepted = 0, refused = 0;
	int share_refusals = 0;

	assert_non_null(rules);
	rm_budget_set_share_limit(b, 64 * MIB / 4);
	assert_int_equal(rm_budget_share_limit(b), 16 * MIB);
	rm_rules_set_budget(rules, b);
	assert_int_equal(rm_budget_take(b, RM_BUDGET_SESSION_BYTES, "session"), 0);
	hog = rm_rules_session_open(rules, 1);
	n_sink_drops = 0;
	for (uint64_t e = 1; e <= 100000; e++) {
		enum rm_verdict v = feed(hog, e, 1, 0);

		if (v == RM_V_ACCEPTED) {
			accepted++;
		} else {
			assert_int_equal(v, RM_V_RESOURCE_DROP);
			refused++;
			share_refusals += refused_share != NULL;
		}
	}
	assert_int_equal(accepted, 16384);
	assert_int_equal(refused, 83616);
	assert_int_equal(n_refused, 83616);
	assert_int_equal(share_refusals, 83616); /* each refused by the session's share, not the budget */
	assert_int_equal(n_sink_drops, 0);
	assert_int_equal(rm_rules_retained(hog), 16384);
	assert_int_equal(rm_budget_used(b), RM_BUDGET_SESSION_BYTES + 16384ull * EPOCH_BYTES);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(rm_budget_take(b, RM_BUDGET_SESSION_BYTES, "session"), 0);
		other[i] = rm_rules_session_open(rules, 2 + (uint64_t)i);
		for (uint64_t e = 1; e <= 1000; e++)
			assert_int_equal(feed(other[i], e, 1, 0), RM_V_ACCEPTED);
	}
	assert_int_equal(n_refused, 83616);
	/* the hog's closed epochs make room in its own share: a final report, then a new epoch fits */
	assert_int_equal(feed(hog, 1, 2, 1), RM_V_ACCEPTED);
	assert_int_equal(feed(hog, 100001, 1, 0), RM_V_ACCEPTED);
	assert_null(rm_rules_find(hog, 0, 1));
	rm_rules_session_close(hog, "test end", 2000);
	for (int i = 0; i < 10; i++)
		rm_rules_session_close(other[i], "test end", 2000);
	assert_int_equal(rm_budget_used(b), 11ull * RM_BUDGET_SESSION_BYTES);
	rm_rules_free(rules);
	rm_budget_free(b);
}

/*
 * 256 large Templates of one session (8000 fields: a Template Record of
 * 4 + 4 x 8000 octets, charged 512 + 32004) in an 8 MiB budget with a share
 * of 2 MiB: floor(2097152 / 32516) = 64 fit, 192 are refused by the share,
 * and the next session's Templates and epochs, charged to one share of its
 * own (the decoder's and the rules' together), still fit.
 */
static void test_templates_and_epochs_share(void **state)
{
	static uint8_t m[40000];
	struct rm_rules_limits lim = { 4, 100, 0 };
	struct rm_budget *b = budget(8 * MIB);
	struct rm_rules *rules = rm_rules_new(&lim, &sink, NULL);
	struct rm_budget_share sh1, sh2;
	struct rm_ipfix_session *d1 = rm_ipfix_session_new(32473), *d2 = rm_ipfix_session_new(32473);
	struct rm_rsession *s2;
	const uint64_t big = TEMPLATE_BYTES + 4 + 4 * 8000;
	size_t tl;
	int share_refusals = 0;

	assert_non_null(rules);
	assert_non_null(d1);
	assert_non_null(d2);
	rm_budget_set_share_limit(b, 2 * MIB);
	rm_rules_set_budget(rules, b);
	rm_budget_share_init(&sh1, b);
	rm_budget_share_init(&sh2, b);
	rm_ipfix_session_set_share(d1, &sh1);
	rm_ipfix_session_set_share(d2, &sh2);
	n_rejects = 0;
	for (uint16_t t = 256; t < 512; t++) {
		int before = n_refused;

		message(d1, m, template_msg(m, t, 8000));
		if (n_refused > before)
			share_refusals += refused_share == &sh1;
	}
	assert_int_equal(sh1.used, 64 * big);
	assert_int_equal(n_refused, 192);
	assert_int_equal(share_refusals, 192);
	assert_int_equal(n_rejects, 192);
	assert_non_null(strstr(last_reject, "max_memory_bytes_per_session"));
	assert_non_null(rm_ipfix_template_bytes(d1, 0, 319, &tl));
	assert_null(rm_ipfix_template_bytes(d1, 0, 320, &tl));
	/* the second session: Templates and epochs against its own share */
	s2 = rm_rules_session_open(rules, 2);
	rm_rules_session_set_share(s2, &sh2);
	message(d2, m, template_msg(m, 256, 8000));
	assert_non_null(rm_ipfix_template_bytes(d2, 0, 256, &tl));
	for (uint64_t e = 1; e <= 10; e++)
		assert_int_equal(feed(s2, e, 1, 0), RM_V_ACCEPTED);
	assert_int_equal(sh2.used, big + 10 * EPOCH_BYTES);
	assert_int_equal(rm_budget_used(b), 65 * big + 10 * EPOCH_BYTES);
	assert_int_equal(n_refused, 192);
	/* what each gives back leaves its share and the budget */
	rm_rules_session_close(s2, "test end", 2000);
	assert_int_equal(sh2.used, big);
	rm_ipfix_session_free(d2);
	rm_ipfix_session_free(d1);
	assert_int_equal(sh1.used, 0);
	assert_int_equal(sh2.used, 0);
	assert_int_equal(rm_budget_used(b), 0);
	rm_rules_free(rules);
	rm_budget_free(b);
}

/* A share is at most the share limit, and never more than the budget has: refused by the budget then. */
static void test_share_and_budget_limits(void **state)
{
	struct rm_budget *b = budget(1000);
	struct rm_budget_share a, c;

	rm_budget_set_share_limit(b, 600);
	rm_budget_share_init(&a, b);
	rm_budget_share_init(&c, b);
	assert_int_equal(rm_budget_share_take(&a, 600, "x"), 0);
	assert_int_equal(rm_budget_share_take(&a, 1, "epoch"), -1); /* the share is full */
	assert_ptr_equal(refused_share, &a);
	assert_int_equal(rm_budget_share_full(&a, 1), 1);
	assert_int_equal(rm_budget_share_take(&c, 401, "epoch"), -1); /* the budget is full (600 + 401 > 1000) */
	assert_null(refused_share);
	assert_int_equal(rm_budget_share_full(&c, 401), 0);
	assert_int_equal(rm_budget_share_take(&c, 400, "x"), 0);
	assert_int_equal(n_refused, 2);
	assert_int_equal(rm_budget_refusals(b), 2);
	/* pass: the share lets go, the budget keeps the bytes (an epoch the store keeps until its write) */
	rm_budget_share_pass(&a, 100);
	assert_int_equal(a.used, 500);
	assert_int_equal(rm_budget_used(b), 1000);
	rm_budget_give(b, 100);
	rm_budget_share_give(&a, 500);
	rm_budget_share_give(&c, 400);
	assert_int_equal(rm_budget_used(b), 0);
	/* a share of no budget is unlimited */
	rm_budget_share_init(&a, NULL);
	assert_int_equal(rm_budget_share_take(&a, UINT64_MAX, "x"), 0);
	rm_budget_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_documented_charges),          cmocka_unit_test(test_take_give),
		cmocka_unit_test(test_epochs_within_budget),        cmocka_unit_test(test_templates_within_budget),
		cmocka_unit_test(test_one_session_cannot_take_all), cmocka_unit_test(test_templates_and_epochs_share),
		cmocka_unit_test(test_share_and_budget_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
