// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_collector_rules.c - user/rules/collector_rules.c against [SEQOBS]
 * "Collector Processing": record checks (ranges, flags, the arithmetic
 * relations of "Bounded Sequence Observation Algorithm"), report ordering,
 * epoch keys, the admission high-water, limits and outcomes. Reports are
 * crafted by hand; expected values come from [SEQOBS]'s rules and its
 * verification examples, not from the code under test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rules/collector_rules.h"
#include "rocemeter/seqobs.h"

#define MAXREC 64

/* What the sink saw. */
static struct rm_epoch retired[MAXREC];
static char retired_reason[MAXREC][RM_EPOCH_REASON_MAX]; /* the rules free the reason after the call */
static int n_retired;
static int n_changed;
static struct {
	uint64_t session, epoch;
	uint32_t domain;
} drops[MAXREC];
static int n_drops;
static int n_logs;

static void on_epoch(void *arg, struct rm_epoch *e)
{
	if (e->retired_ms) {
		assert_true(n_retired < MAXREC);
		snprintf(retired_reason[n_retired], RM_EPOCH_REASON_MAX, "%s", e->reason);
		retired[n_retired] = *e;
		retired[n_retired].reason = retired_reason[n_retired];
		n_retired++;
	} else {
		n_changed++;
	}
}

static void on_drop(void *arg, uint64_t session_id, uint32_t domain, uint64_t epoch_id, const char *detail)
{
	assert_true(n_drops < MAXREC);
	drops[n_drops].session = session_id;
	drops[n_drops].domain = domain;
	drops[n_drops].epoch = epoch_id;
	n_drops++;
}

static void on_log(void *arg, const char *line)
{
	n_logs++;
}

static const struct rm_rules_sink sink = { on_epoch, on_drop, on_log, NULL };

struct fx {
	struct rm_rules *rules;
	struct rm_rsession *s;
};

static struct fx *fx_new(uint32_t max_sessions, uint32_t max_epochs, uint64_t timeout)
{
	struct rm_rules_limits lim = { max_sessions, max_epochs, timeout };
	struct fx *f = calloc(1, sizeof(*f));

	n_retired = n_changed = n_drops = n_logs = 0;
	f->rules = rm_rules_new(&lim, &sink, NULL);
	assert_non_null(f->rules);
	f->s = rm_rules_session_open(f->rules, 1);
	assert_non_null(f->s);
	return f;
}

static void fx_free(struct fx *f)
{
	if (f->s)
		rm_rules_session_close(f->s, "test end", 999999);
	rm_rules_free(f->rules);
	free(f);
}

/*
 * [SEQOBS] "Verification Examples", example 1 (W=4, PSNs 100,102,101,103,102):
 * requests=5, skipped=1, filled=1, repeated=1, everything else 0.
 */
static struct rm_report rep(uint64_t epoch, uint64_t report)
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
	r.flags = RM_FLAG_GENERATION_UNVERIFIED;
	r.requests = 5;
	r.skipped = 1;
	r.filled = 1;
	r.repeated = 1;
	return r;
}

/* The same epoch later: more requests, one more skipped-and-filled position. */
static struct rm_report grow(struct rm_report r, uint64_t report)
{
	r.report_id = report;
	r.requests += 2;
	r.skipped += 1;
	r.filled += 1;
	r.flow_end_ms += 100;
	return r;
}

/* Final version of r (seed example 3 closing: abandoned=pending, pending=0). */
static struct rm_report finalize(struct rm_report r, uint64_t report)
{
	r.report_id = report;
	r.abandoned += r.pending;
	r.pending = 0;
	r.flags |= RM_FLAG_FINAL_EPOCH;
	return r;
}

static enum rm_verdict feed(struct fx *f, uint32_t domain, const struct rm_report *r)
{
	char why[256];

	return rm_rules_record(f->s, domain, r, 1000, why, sizeof(why));
}

static const struct rm_epoch *find_retired(uint64_t epoch)
{
	for (int i = 0; i < n_retired; i++)
		if (retired[i].key.epoch_id == epoch)
			return &retired[i];
	return NULL;
}

/* ---------------- record checks ---------------- */

static void test_check_seed_examples_valid(void **state)
{
	char why[256];
	struct rm_report r = rep(1, 1);

	/* Example 1. */
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	/* Example 2 (100,99,100): requests=3, unclassifiedLate=1, repeated=1. */
	memset(&r.skipped, 0, sizeof(r) - offsetof(struct rm_report, skipped));
	r.requests = 3, r.unclassified_late = 1, r.repeated = 1;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	/* Example 3 (100,102,106): skipped=4, expired=1, pending=3; closing: abandoned=3, pending=0. */
	r = rep(1, 1);
	r.requests = 3, r.skipped = 4, r.expired = 1, r.pending = 3, r.filled = 0, r.repeated = 0;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	r = finalize(r, 2);
	assert_int_equal(r.abandoned, 3);
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	/* A final record may carry closure reasons. */
	r.flags |= RM_FLAG_SERIAL_DISCONTINUITY | RM_FLAG_PROFILE_VIOLATION;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	/* W bounds 1 and 2^22 are legal. */
	r = rep(1, 1);
	r.window = 4194304;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	r.window = 1, r.skipped = 0, r.filled = 0; /* W=1: no pending positions exist */
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
}

static void test_check_ranges(void **state)
{
	char why[256];
	struct rm_report r;

	r = rep(1, 1), r.dest_qp = 0x01000123;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "upper 8 bits"));
	r = rep(1, 1), r.dest_qp = 0x00ffffff;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	r = rep(1, 1), r.window = 0;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "rdmaSequenceWindow 0"));
	r = rep(1, 1), r.window = 4194305;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	r = rep(1, 0);
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	r = rep(0, 1);
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
}

static void test_check_flags(void **state)
{
	char why[256];
	struct rm_report r;

	/* Closure reasons only in final records. */
	r = rep(1, 1), r.flags |= RM_FLAG_CAPTURE_DISCONTINUITY;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	r = rep(1, 1), r.flags |= RM_FLAG_STATE_EXHAUSTION;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	/* Final records: pending 0. Non-final: abandoned 0. */
	r = rep(1, 1), r.skipped = 2, r.pending = 1, r.flags |= RM_FLAG_FINAL_EPOCH;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	r = rep(1, 1), r.skipped = 2, r.abandoned = 1;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	/* Unknown bits 0xFFC0: unsupported qualification, even when otherwise valid. */
	for (uint32_t bit = 0x0040; bit <= 0x8000; bit <<= 1) {
		r = rep(1, 1), r.flags |= (uint16_t)bit;
		assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 1);
	}
}

static void test_check_arithmetic(void **state)
{
	char why[256];
	struct rm_report r;

	/* skipped = filled + expired + abandoned + pending */
	r = rep(1, 1), r.skipped = 2;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	r = rep(1, 1), r.skipped = 3, r.expired = 1, r.pending = 1; /* 1+1+0+1 = 3 */
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	/* overflowing sums do not pass */
	r = rep(1, 1), r.skipped = 0, r.filled = 0, r.expired = UINT64_MAX, r.pending = 1;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	/* 0 <= pending <= W - 1 */
	r = rep(1, 1), r.skipped = 1 + 4, r.pending = 4; /* W = 4 */
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	r = rep(1, 1), r.skipped = 1 + 3, r.pending = 3;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	/* repeated + unclassifiedLate + filled <= requests - 1 */
	r = rep(1, 1), r.requests = 2; /* 1 + 0 + 1 = 2 > 1 */
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	r = rep(1, 1), r.requests = 3;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), 0);
	r = rep(1, 1), r.requests = 0, r.skipped = r.filled = r.repeated = 0;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	r = rep(1, 1), r.unclassified_late = UINT64_MAX, r.requests = UINT64_MAX;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
}

/* ---------------- ordering and outcomes ---------------- */

static void test_complete_epoch(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r2 = grow(r1, 2), r3 = finalize(grow(r2, 3), 3);

	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r3), RM_V_ACCEPTED);
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	assert_non_null(e);
	assert_int_equal(e->state, RM_EPOCH_FINAL);
	assert_int_equal(e->outcome, RM_OUTCOME_COMPLETE);
	rm_rules_flush(f->s);
	assert_int_equal(n_changed, 1); /* one epoch changed since the start */
	rm_rules_session_close(f->s, "peer closed", 2000);
	f->s = NULL;
	assert_int_equal(n_retired, 1);
	assert_int_equal(retired[0].outcome, RM_OUTCOME_COMPLETE);
	assert_int_equal(retired[0].key.report_id, 3);
	assert_int_equal(retired[0].key.requests, 9);
	assert_int_equal(retired[0].first_report_id, 1);
	assert_int_equal(retired[0].missing_reports, 0);
	assert_int_equal(retired[0].retired_ms, 2000);
	fx_free(f);
}

static void test_gap_keeps_total(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r4 = grow(grow(grow(r1, 2), 3), 4), r5 = finalize(grow(r4, 5), 5);

	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r4), RM_V_ACCEPTED); /* 2 and 3 missing */
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	assert_int_equal(e->gaps, 1);
	assert_int_equal(e->missing_reports, 2);
	/* The cumulative total is that of report 4 itself, not split over 2..3. */
	assert_int_equal(e->key.requests, 5 + 3 * 2);
	assert_int_equal(e->key.report_id, 4);
	assert_int_equal(e->state, RM_EPOCH_OPEN);
	assert_int_equal(feed(f, 0, &r5), RM_V_ACCEPTED);
	assert_int_equal(e->outcome, RM_OUTCOME_INCOMPLETE);
	assert_non_null(strstr(e->reason, "2 reports missing in 1 gaps"));
	fx_free(f);
	assert_int_equal(n_retired, 1);
	assert_int_equal(retired[0].outcome, RM_OUTCOME_INCOMPLETE);
	assert_int_equal(retired[0].key.requests, 5 + 4 * 2);
}

static void test_first_id_above_one(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r3 = rep(9, 3), r4 = finalize(grow(r3, 4), 4);

	assert_int_equal(feed(f, 0, &r3), RM_V_ACCEPTED);
	struct rm_epoch *e = rm_rules_find(f->s, 0, 9);
	assert_int_equal(e->missing_initial, 2);
	assert_int_equal(e->missing_reports, 2);
	assert_int_equal(feed(f, 0, &r4), RM_V_ACCEPTED);
	assert_int_equal(e->outcome, RM_OUTCOME_INCOMPLETE);
	assert_non_null(strstr(e->reason, "missing initial reports 1..2"));
	fx_free(f);
}

static void test_repeat_and_conflict(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r2 = grow(r1, 2), r2b = r2;

	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2), RM_V_REPEAT);
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	assert_int_equal(e->repeats, 1);
	assert_int_equal(e->state, RM_EPOCH_OPEN);
	r2b.flow_end_ms += 1; /* any decoded difference counts */
	assert_int_equal(feed(f, 0, &r2b), RM_V_INVALID);
	assert_int_equal(e->state, RM_EPOCH_INVALID);
	assert_int_equal(e->outcome, RM_OUTCOME_INVALID);
	assert_non_null(strstr(e->reason, "different content"));
	assert_int_equal(n_logs, 1); /* one log line per invalid epoch */
	/* Later records change nothing. */
	struct rm_report r3 = grow(r2, 3);
	assert_int_equal(feed(f, 0, &r3), RM_V_AFTER_INVALID);
	assert_int_equal(e->key.report_id, 2);
	fx_free(f);
	assert_int_equal(retired[0].outcome, RM_OUTCOME_INVALID);
}

static void test_stale(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r2 = grow(r1, 2), r3 = grow(r2, 3);

	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r3), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2), RM_V_STALE);
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	assert_int_equal(e->key.report_id, 3);
	assert_int_equal(e->key.requests, r3.requests);
	assert_int_equal(e->stale, 1);
	/* A stale record does not fill the gap it would have covered. */
	assert_int_equal(e->missing_reports, 1);
	/* Even a stale record with decreasing counters changes nothing. */
	struct rm_report old = r1;
	old.requests = 1, old.repeated = 0, old.filled = 0, old.skipped = 0;
	assert_int_equal(feed(f, 0, &old), RM_V_STALE);
	assert_int_equal(e->state, RM_EPOCH_OPEN);
	fx_free(f);
}

/*
 * [SEQOBS]: "A smaller report ID is stale and MUST NOT modify already
 * published values" - also when the stale record breaks a record-level rule
 * on its own (closure reason in a non-final record, broken arithmetic): the
 * epoch keeps its state and outcome, open or complete.
 */
static void test_stale_invalid_changes_nothing(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r2 = grow(r1, 2), r3 = grow(r2, 3);
	struct rm_report bad1 = r1, bad2 = r2;

	bad1.flags |= RM_FLAG_SERIAL_DISCONTINUITY; /* reason bit without finalEpoch */
	bad2.skipped += 7;                          /* skipped != filled + expired + abandoned + pending */
	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r3), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &bad2), RM_V_STALE);
	assert_int_equal(feed(f, 0, &bad1), RM_V_STALE);
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	assert_int_equal(e->state, RM_EPOCH_OPEN);
	assert_int_equal(e->outcome, RM_OUTCOME_OPEN);
	assert_int_equal(e->key.report_id, 3);
	assert_int_equal(e->key.requests, r3.requests);
	assert_int_equal(e->stale, 2);
	fx_free(f);

	/* After an accepted final record the outcome stays complete. */
	f = fx_new(4, 16, 0);
	struct rm_report r2f = finalize(grow(r1, 2), 2);
	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2f), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &bad1), RM_V_STALE);
	e = rm_rules_find(f->s, 0, 5);
	assert_int_equal(e->state, RM_EPOCH_FINAL);
	assert_int_equal(e->outcome, RM_OUTCOME_COMPLETE);
	fx_free(f);
	assert_int_equal(retired[0].outcome, RM_OUTCOME_COMPLETE);
}

static void test_decrease_and_immutables(void **state)
{
	static const struct {
		const char *what;
		int field;
	} cases[] = { { "requestPacketTotalCount decreased", 0 },
		      { "skippedPsnTotalCount decreased", 1 },
		      { "rdmaSequenceWindow changed", 2 },
		      { "generationUnverified", 3 },
		      { "flowStartMilliseconds changed", 4 },
		      { "repeatedPsnTotalCount decreased", 5 },
		      { "unclassifiedLatePacketTotalCount decreased", 6 },
		      { "expiredPsnTotalCount decreased", 7 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fx *f = fx_new(4, 16, 0);
		struct rm_report r1 = rep(5, 1), r2 = grow(r1, 2);

		r1.expired = 1, r1.skipped += 1, r1.unclassified_late = 1, r1.requests += 1;
		r2 = grow(r1, 2);
		switch (cases[i].field) {
		case 0:
			r2 = r1, r2.report_id = 2, r2.requests -= 1;
			break;
		case 1:
			r2.skipped = 1, r2.filled = 0;
			break;
		case 2:
			r2.window = 8;
			break;
		case 3:
			r2.flags &= (uint16_t)~RM_FLAG_GENERATION_UNVERIFIED;
			break;
		case 4:
			r2.flow_start_ms -= 1;
			break;
		case 5:
			r2.repeated = 0;
			break;
		case 6:
			r2.unclassified_late = 0;
			break;
		case 7:
			r2.expired = 0, r2.skipped -= 1;
			break;
		}
		char why[256];
		assert_int_equal(rm_rules_check_record(&r2, why, sizeof(why)), 0); /* valid on its own */
		assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
		assert_int_equal(feed(f, 0, &r2), RM_V_INVALID);
		struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
		assert_int_equal(e->outcome, RM_OUTCOME_INVALID);
		assert_non_null(strstr(e->reason, cases[i].what));
		assert_int_equal(e->key.report_id, 1); /* published values unchanged */
		fx_free(f);
	}
}

/*
 * [SEQOBS] "Export Profile and Template": flowStartMilliseconds and
 * flowEndMilliseconds are the first and last accounted packet arrival times,
 * so the last arrival is never before the first: a record with
 * flowEnd < flowStart breaks a record rule and invalidates its epoch
 * (flowEnd == flowStart: one request, valid).
 */
static void test_flow_end_before_start(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r = rep(5, 1), one = rep(6, 1);
	char why[256];

	r.flow_end_ms = r.flow_start_ms - 1;
	assert_int_equal(rm_rules_check_record(&r, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "flowEndMilliseconds"));
	assert_int_equal(feed(f, 0, &r), RM_V_INVALID);
	assert_int_equal(rm_rules_find(f->s, 0, 5)->outcome, RM_OUTCOME_INVALID);
	assert_non_null(strstr(rm_rules_find(f->s, 0, 5)->reason, "flowEndMilliseconds"));

	one.flow_end_ms = one.flow_start_ms;
	assert_int_equal(rm_rules_check_record(&one, why, sizeof(why)), 0);
	assert_int_equal(feed(f, 0, &one), RM_V_ACCEPTED);
	fx_free(f);
}

/*
 * The last accounted arrival of one epoch never moves back between its
 * cumulative reports: a larger report ID whose flowEnd is earlier than the
 * latest accepted one is not processed ([SEQOBS] "Collector Processing":
 * only a consistent larger report is processed) and invalidates the epoch;
 * an unchanged flowEnd (no request between two reports) is valid.
 */
static void test_flow_end_backwards(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r2 = grow(r1, 2), r3 = grow(r2, 3), same = r1;

	r3.flow_end_ms = r2.flow_end_ms - 1;
	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r3), RM_V_INVALID);
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	assert_int_equal(e->outcome, RM_OUTCOME_INVALID);
	assert_non_null(strstr(e->reason, "flowEndMilliseconds"));
	assert_int_equal(e->key.report_id, 2); /* published values unchanged */
	fx_free(f);

	f = fx_new(4, 16, 0);
	same.report_id = 2; /* a report without a new request: same counters, same flowEnd */
	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &same), RM_V_ACCEPTED);
	fx_free(f);
}

static void test_after_final(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r2 = finalize(grow(r1, 2), 2), r3 = grow(r2, 3);

	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2), RM_V_REPEAT); /* identical final: ignored */
	assert_int_equal(feed(f, 0, &r1), RM_V_STALE);
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	assert_int_equal(e->outcome, RM_OUTCOME_COMPLETE);
	assert_int_equal(feed(f, 0, &r3), RM_V_INVALID); /* extends after final */
	assert_int_equal(e->outcome, RM_OUTCOME_INVALID);
	assert_non_null(strstr(e->reason, "after its final report 2"));
	fx_free(f);

	/* A non-final record with the final's ID conflicts too. */
	f = fx_new(4, 16, 0);
	r2 = finalize(grow(r1, 2), 2);
	struct rm_report r2nf = grow(r1, 2);
	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2nf), RM_V_INVALID);
	fx_free(f);
}

static void test_unsupported_flags(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r2 = grow(r1, 2), r3 = finalize(grow(r2, 3), 3);

	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	r2.flags |= 0x0100;
	assert_int_equal(feed(f, 0, &r2), RM_V_UNSUPPORTED);
	assert_true(rm_verdict_keeps_raw(RM_V_UNSUPPORTED));
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	/* No measurement derived: published totals still those of report 1. */
	assert_int_equal(e->key.report_id, 1);
	assert_int_equal(e->key.requests, r1.requests);
	assert_int_equal(e->unsupported, 1);
	assert_int_equal(feed(f, 0, &r3), RM_V_ACCEPTED);
	/* Report 2 was not usable: a gap, so not complete. */
	assert_int_equal(e->outcome, RM_OUTCOME_INCOMPLETE);
	fx_free(f);

	/* An unsupported first record creates a context without measurements. */
	f = fx_new(4, 16, 0);
	r1.flags |= 0x8000;
	assert_int_equal(feed(f, 0, &r1), RM_V_UNSUPPORTED);
	e = rm_rules_find(f->s, 0, 5);
	assert_non_null(e);
	assert_int_equal(e->n_accepted, 0);
	assert_int_equal(rm_rules_high_water(f->s, 0), 5);
	rm_rules_session_close(f->s, "peer closed", 5);
	f->s = NULL;
	assert_int_equal(retired[0].outcome, RM_OUTCOME_INCOMPLETE);
	assert_non_null(strstr(retired[0].reason, "no accepted report"));
	fx_free(f);
}

/*
 * Unknown flag bits do not suspend the report-ID rules ([SEQOBS]): different
 * decoded content for the latest report ID invalidates the epoch, and after
 * an accepted final record an extending record invalidates it. The raw
 * record is kept either way (INVALID keeps raw); no measurement is taken.
 */
static void test_unsupported_conflict_or_extension(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r2 = grow(r1, 2), r1u = r1;

	r1u.flags |= 0x0200;
	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r1u), RM_V_INVALID);
	assert_true(rm_verdict_keeps_raw(RM_V_INVALID));
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	assert_int_equal(e->outcome, RM_OUTCOME_INVALID);
	assert_int_equal(e->key.report_id, 1);
	assert_int_equal(e->key.requests, r1.requests);
	fx_free(f);

	f = fx_new(4, 16, 0);
	struct rm_report r2f = finalize(r2, 2), r3u = grow(r2, 3);
	r3u.flags |= 0x0400;
	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r2f), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &r3u), RM_V_INVALID);
	e = rm_rules_find(f->s, 0, 5);
	assert_int_equal(e->outcome, RM_OUTCOME_INVALID);
	assert_int_equal(e->key.report_id, 2);
	fx_free(f);
}

static void test_invalid_first_record(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), r2 = grow(rep(5, 1), 2);

	r1.window = 0;
	assert_int_equal(feed(f, 0, &r1), RM_V_INVALID);
	struct rm_epoch *e = rm_rules_find(f->s, 0, 5);
	assert_non_null(e);
	assert_int_equal(e->outcome, RM_OUTCOME_INVALID);
	assert_non_null(strstr(e->reason, "rdmaSequenceWindow 0"));
	assert_int_equal(feed(f, 0, &r2), RM_V_AFTER_INVALID);
	fx_free(f);
	assert_int_equal(retired[0].outcome, RM_OUTCOME_INVALID);
}

static void test_key_identity(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report r1 = rep(5, 1), other = grow(r1, 2);

	assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
	other.dest_qp = 0x000124;
	assert_int_equal(feed(f, 0, &other), RM_V_KEY_CONFLICT);
	assert_int_equal(rm_rules_find(f->s, 0, 5)->outcome, RM_OUTCOME_INVALID);
	fx_free(f);

	/* Each key part matters. */
	for (int i = 0; i < 6; i++) {
		f = fx_new(4, 16, 0);
		other = grow(r1, 2);
		switch (i) {
		case 0:
			other.observation_point_id = 8;
			break;
		case 1:
			other.src[3] = 9;
			break;
		case 2:
			other.dst[3] = 9;
			break;
		case 3:
			other.pkey = 0x8001;
			break;
		case 4:
			other.has_vlan_ns = 1, other.vlan[0] = 10;
			break;
		case 5:
			other.family = 6;
			break;
		}
		assert_int_equal(feed(f, 0, &r1), RM_V_ACCEPTED);
		assert_int_equal(feed(f, 0, &other), RM_V_KEY_CONFLICT);
		fx_free(f);
	}

	/* The same epoch ID in two Observation Domains: two epochs. */
	f = fx_new(4, 16, 0);
	assert_int_equal(feed(f, 1, &r1), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 2, &r1), RM_V_ACCEPTED);
	assert_int_equal(rm_rules_retained(f->s), 2);
	fx_free(f);
}

static void test_high_water_orphans(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report e5 = rep(5, 1), e3 = rep(3, 1), e6 = rep(6, 1), e4 = rep(4, 1);

	assert_int_equal(feed(f, 0, &e5), RM_V_ACCEPTED);
	assert_int_equal(rm_rules_high_water(f->s, 0), 5);
	assert_int_equal(feed(f, 0, &e3), RM_V_ORPHAN); /* unknown, below the high-water */
	assert_null(rm_rules_find(f->s, 0, 3));
	assert_int_equal(feed(f, 0, &e5), RM_V_REPEAT); /* known: found by ID first */
	assert_int_equal(feed(f, 0, &e6), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &e4), RM_V_ORPHAN);
	assert_int_equal(rm_rules_retained(f->s), 2);
	/* Other domains have their own high-water. */
	assert_int_equal(feed(f, 3, &e4), RM_V_ACCEPTED);
	assert_int_equal(rm_rules_high_water(f->s, 3), 4);
	fx_free(f);

	/* A new Transport Session clears the high-water: the same IDs are new epochs. */
	f = fx_new(4, 16, 0);
	assert_int_equal(feed(f, 0, &e6), RM_V_ACCEPTED);
	rm_rules_session_close(f->s, "peer closed", 10);
	f->s = rm_rules_session_open(f->rules, 2);
	assert_int_equal(rm_rules_high_water(f->s, 0), 0);
	assert_int_equal(feed(f, 0, &e5), RM_V_ACCEPTED);
	fx_free(f);
}

static void test_max_epochs(void **state)
{
	struct fx *f = fx_new(4, 2, 0);
	struct rm_report a = rep(1, 1), b = rep(2, 1), c = rep(3, 1), c2 = grow(c, 2), d = rep(4, 1);

	assert_int_equal(feed(f, 0, &a), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &b), RM_V_ACCEPTED);
	/* Both open: refused, a collector resource drop, high-water still advances. */
	assert_int_equal(feed(f, 0, &c), RM_V_RESOURCE_DROP);
	assert_int_equal(n_drops, 1);
	assert_int_equal(drops[0].epoch, 3);
	assert_int_equal(drops[0].session, 1);
	assert_int_equal(rm_rules_high_water(f->s, 0), 3);
	assert_int_equal(feed(f, 0, &c2), RM_V_ORPHAN);
	assert_int_equal(rm_rules_retained(f->s), 2);
	/* A closed (final) epoch is retired to make room. */
	struct rm_report af = finalize(grow(a, 2), 2);
	assert_int_equal(feed(f, 0, &af), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &d), RM_V_ACCEPTED);
	assert_int_equal(n_retired, 1);
	assert_int_equal(retired[0].key.epoch_id, 1);
	assert_int_equal(retired[0].outcome, RM_OUTCOME_COMPLETE);
	/* Once retired, its ID is an orphan: nothing is reopened. */
	assert_int_equal(feed(f, 0, &af), RM_V_ORPHAN);
	fx_free(f);
}

/* A session keeps one high-water ID per Observation Domain for its whole
 * life, so the number of domains is bounded ([SEQOBS]: finite limits): a
 * record of one domain more is a collector resource drop, counted as such. */
static void test_max_domains(void **state)
{
	struct fx *f = fx_new(4, 1000, 0);

	for (uint32_t dom = 0; dom < RM_RULES_MAX_DOMAINS; dom++) {
		struct rm_report r = rep(dom + 1, 1);

		assert_int_equal(feed(f, dom, &r), RM_V_ACCEPTED);
	}
	struct rm_report extra = rep(1000, 1), again = rep(1, 1);

	assert_int_equal(feed(f, RM_RULES_MAX_DOMAINS, &extra), RM_V_RESOURCE_DROP);
	assert_int_equal(n_drops, 1);
	assert_int_equal(drops[0].epoch, 1000);
	/* The known domains go on as before. */
	assert_int_equal(feed(f, 0, &again), RM_V_REPEAT);
	fx_free(f);
}

static void test_max_sessions(void **state)
{
	struct fx *f = fx_new(2, 4, 0);
	struct rm_rsession *s2 = rm_rules_session_open(f->rules, 2);

	assert_non_null(s2);
	assert_null(rm_rules_session_open(f->rules, 3));
	assert_int_equal(rm_rules_sessions(f->rules), 2);
	rm_rules_session_close(s2, "done", 1);
	s2 = rm_rules_session_open(f->rules, 4);
	assert_non_null(s2);
	rm_rules_session_close(s2, "done", 1);
	fx_free(f);
}

static void test_inactivity(void **state)
{
	struct fx *f = fx_new(4, 16, 1000);
	struct rm_report a = rep(1, 1), b = rep(2, 1);
	char why[128];

	assert_int_equal(rm_rules_record(f->s, 0, &a, 5000, why, sizeof(why)), RM_V_ACCEPTED);
	assert_int_equal(rm_rules_record(f->s, 0, &b, 5500, why, sizeof(why)), RM_V_ACCEPTED);
	rm_rules_tick(f->s, 5999);
	assert_int_equal(n_retired, 0);
	rm_rules_tick(f->s, 6000);
	assert_int_equal(n_retired, 1);
	assert_int_equal(retired[0].key.epoch_id, 1);
	assert_int_equal(retired[0].outcome, RM_OUTCOME_INCOMPLETE);
	assert_non_null(strstr(retired[0].reason, "inactivity timeout"));
	/* Silence is not a final report; the high-water is kept: 1 is now an orphan. */
	assert_int_equal(rm_rules_record(f->s, 0, &a, 6001, why, sizeof(why)), RM_V_ORPHAN);
	rm_rules_tick(f->s, 6500);
	assert_int_equal(n_retired, 2);
	fx_free(f);
}

static void test_session_end_outcomes(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report a = rep(1, 1), af = finalize(grow(a, 2), 2), b = rep(2, 1), c = rep(3, 1);

	c.requests = 0;
	assert_int_equal(feed(f, 0, &a), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &af), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &b), RM_V_ACCEPTED);
	assert_int_equal(feed(f, 0, &c), RM_V_INVALID);
	rm_rules_session_close(f->s, "session failed: connection reset", 77);
	f->s = NULL;
	assert_int_equal(n_retired, 3);
	assert_int_equal(find_retired(1)->outcome, RM_OUTCOME_COMPLETE);
	assert_int_equal(find_retired(2)->outcome, RM_OUTCOME_INCOMPLETE);
	assert_non_null(strstr(find_retired(2)->reason, "session failed: connection reset"));
	assert_int_equal(find_retired(3)->outcome, RM_OUTCOME_INVALID);
	assert_int_equal(find_retired(2)->retired_ms, 77);
	fx_free(f);
}

static void test_unbound(void **state)
{
	struct fx *f = fx_new(4, 16, 0);
	struct rm_report z = rep(0, 1);

	assert_int_equal(feed(f, 0, &z), RM_V_UNBOUND);
	assert_int_equal(rm_rules_retained(f->s), 0);
	assert_int_equal(rm_rules_high_water(f->s, 0), 0);
	assert_int_equal(rm_rules_verdict_counts(f->s)[RM_V_UNBOUND], 1);
	fx_free(f);
}

/*
 * Many epochs against a model of [SEQOBS] "Collector Processing"'s
 * bookkeeping: three domains that reuse the same epoch IDs, IDs that are
 * consecutive, spaced by powers of two (k << 20: one home slot for every
 * one of them in a table indexed by the low bits) or sparse, a final
 * report for two epochs in three (closed: retired first, oldest closure
 * first, when max_epochs is reached), repeats that move an epoch to the
 * end of the inactivity order. Checks after every step: the retained count,
 * every retained epoch found with its own key, every retired one gone, and
 * which epochs each inactivity sweep retires.
 */
#define MANY_MAX 700
#define MANY_N   60000

struct many_model {
	uint32_t domain[MANY_N];
	uint64_t id[MANY_N];
	uint8_t alive[MANY_N], closed[MANY_N];
	uint64_t closed_seq[MANY_N], seen[MANY_N];
	uint32_t n, retained;
	uint64_t retired_by_sink;
};

static struct many_model *many;

static void many_epoch(void *arg, struct rm_epoch *e)
{
	if (e->retired_ms)
		many->retired_by_sink++;
}

static void many_drop(void *arg, uint64_t session_id, uint32_t domain, uint64_t epoch_id, const char *detail)
{
	fail_msg("unexpected drop of epoch %llu", (unsigned long long)epoch_id);
}

static const struct rm_rules_sink many_sink = { many_epoch, many_drop, NULL, NULL };

/* The model's choice when max_epochs is reached: the closed epoch closed first. */
static void many_make_room(void)
{
	uint32_t oldest = UINT32_MAX;

	if (many->retained < MANY_MAX)
		return;
	for (uint32_t i = 0; i < many->n; i++)
		if (many->alive[i] && many->closed[i] &&
		    (oldest == UINT32_MAX || many->closed_seq[i] < many->closed_seq[oldest]))
			oldest = i;
	assert_true(oldest != UINT32_MAX);
	many->alive[oldest] = 0;
	many->retained--;
}

static void test_many_epochs_against_model(void **state)
{
	struct rm_rules_limits lim = { 1, MANY_MAX, 50 };
	struct rm_rules *rules = rm_rules_new(&lim, &many_sink, NULL);
	struct rm_rsession *s;
	uint64_t next_id[3] = { 1, 1, 1 }, seq = 0, now = 1000;
	char why[256];

	many = calloc(1, sizeof(*many));
	assert_non_null(many);
	s = rm_rules_session_open(rules, 9);
	for (uint32_t i = 0; i < MANY_N; i++) {
		uint32_t d = i % 3;
		uint64_t id;
		struct rm_report r;

		/* domain 0 consecutive, domain 1 the same IDs k << 20, domain 2 sparse (gaps of 1..97) */
		if (d == 0)
			id = next_id[0]++;
		else if (d == 1)
			id = (next_id[1]++) << 20;
		else
			id = next_id[2] += 1 + (i * 2654435761u) % 97;
		r = rep(id, 1);
		r.dest_qp = (uint32_t)(id & 0xffffff);
		if (i % 3 != 2)
			r = finalize(r, 1);
		many_make_room();
		many->domain[i] = d + 100;
		many->id[i] = id;
		many->alive[i] = 1;
		many->closed[i] = (r.flags & RM_FLAG_FINAL_EPOCH) != 0;
		many->closed_seq[i] = seq++;
		many->seen[i] = now;
		many->n++;
		many->retained++;
		assert_int_equal(rm_rules_record(s, d + 100, &r, now, why, sizeof(why)), RM_V_ACCEPTED);
		/* every 7th step, a repeat of an earlier retained epoch (moves it to the end of the LRU) */
		if (i % 7 == 6) {
			uint32_t j = (uint32_t)((i * 40503u) % (i + 1));

			if (many->alive[j]) {
				struct rm_report again = rep(many->id[j], 1);

				again.dest_qp = (uint32_t)(many->id[j] & 0xffffff);
				if (many->closed[j])
					again = finalize(again, 1);
				assert_int_equal(rm_rules_record(s, many->domain[j], &again, now, why, sizeof(why)),
						 RM_V_REPEAT);
				many->seen[j] = now;
			}
		}
		if (i % 500 == 499) {
			now += 30;
			/* inactivity sweep: everything not seen within the last 50 ms */
			rm_rules_tick(s, now);
			for (uint32_t j = 0; j < many->n; j++)
				if (many->alive[j] && many->seen[j] + 50 <= now) {
					many->alive[j] = 0;
					many->retained--;
				}
		}
		assert_int_equal(rm_rules_retained(s), many->retained);
		if (i % 97 == 0 || i == MANY_N - 1)
			for (uint32_t j = 0; j < many->n; j++) {
				struct rm_epoch *e = rm_rules_find(s, many->domain[j], many->id[j]);

				if (!many->alive[j]) {
					assert_null(e);
					continue;
				}
				assert_non_null(e);
				assert_int_equal(e->domain, many->domain[j]);
				assert_int_equal(e->key.epoch_id, many->id[j]);
			}
	}
	assert_int_equal(many->retired_by_sink, many->n - many->retained);
	rm_rules_session_close(s, "test end", now);
	assert_int_equal(many->retired_by_sink, many->n);
	rm_rules_free(rules);
	free(many);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_seed_examples_valid),
		cmocka_unit_test(test_check_ranges),
		cmocka_unit_test(test_check_flags),
		cmocka_unit_test(test_check_arithmetic),
		cmocka_unit_test(test_complete_epoch),
		cmocka_unit_test(test_gap_keeps_total),
		cmocka_unit_test(test_first_id_above_one),
		cmocka_unit_test(test_repeat_and_conflict),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_stale_invalid_changes_nothing),
		cmocka_unit_test(test_decrease_and_immutables),
		cmocka_unit_test(test_after_final),
		cmocka_unit_test(test_flow_end_before_start),
		cmocka_unit_test(test_flow_end_backwards),
		cmocka_unit_test(test_unsupported_flags),
		cmocka_unit_test(test_unsupported_conflict_or_extension),
		cmocka_unit_test(test_invalid_first_record),
		cmocka_unit_test(test_key_identity),
		cmocka_unit_test(test_high_water_orphans),
		cmocka_unit_test(test_max_epochs),
		cmocka_unit_test(test_max_domains),
		cmocka_unit_test(test_max_sessions),
		cmocka_unit_test(test_inactivity),
		cmocka_unit_test(test_session_end_outcomes),
		cmocka_unit_test(test_unbound),
		cmocka_unit_test(test_many_epochs_against_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
