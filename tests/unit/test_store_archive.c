// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_store_archive.c - the packed form of settled epochs (epoch_archive,
 * docs/collector.md "What is stored"), byte for byte: the chunk's base as
 * a JSON array of the view's columns, each epoch as an object of the
 * columns that differ from it (key: the column's letter, a for id to P
 * for retired_ms) or as the full array when it is NULL where the base is
 * not; and every column read back through the epochs view (with two open
 * epochs written as rows of epoch_rows). Expected texts are written out by
 * hand from that definition.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sqlite3.h>
#include <cmocka.h>

#include "rules/collector_rules.h"
#include "rules/pool.h"
#include "store/sqlite/store.h"

#define T0 1700000000000ULL

struct fixture {
	char dir[64], db[96];
	struct rm_store *st;
	struct rm_pool *pool;         /* retired epochs: the store frees them (rm_rules_epoch_free) */
	struct rm_epoch *settled[16]; /* retained epochs: ours */
	struct rm_epoch *done[16];    /* retired, stored and not kept by the store (packed at retirement): ours */
	int n_done;
	int n_settled;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct rm_rules_limits lim = { 8, 100000, 0 };
	char err[256];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/rm-store-archive.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/c.db", f->dir);
	f->st = rm_store_open(f->db, 0, err, sizeof(err));
	assert_non_null(f->st);
	assert_true(rm_store_run_start(f->st, "test", "tcp", &lim, 1000, 0, 1000) > 0);
	f->pool = rm_pool_new(sizeof(struct rm_epoch));
	assert_non_null(f->pool);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	rm_store_close(f->st);
	for (int i = 0; i < f->n_done; i++)
		rm_rules_epoch_free(f->done[i]);
	for (int i = 0; i < f->n_settled; i++) {
		free((char *)f->settled[i]->reason);
		free(f->settled[i]);
	}
	rm_pool_release(f->pool);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/*
 * An epoch of session 1 with the defaults below (IPv4 192.0.2.1 -> 192.0.2.2,
 * two reports accepted, final and complete, retired at T0 + 1000); retired
 * ones from the rules' kind of memory, as the store frees them.
 */
static struct rm_epoch *epoch(struct fixture *f, int retired)
{
	struct rm_epoch *e;
	struct rm_report *k;

	if (retired) {
		e = rm_pool_alloc(f->pool);
	} else {
		e = malloc(sizeof(*e));
		f->settled[f->n_settled++] = e;
	}
	assert_non_null(e);
	memset(e, 0, sizeof(*e));
	k = &e->key;
	e->session_id = 1;
	e->domain = 5;
	k->observation_point_id = 7;
	k->family = 4;
	assert_int_equal(inet_pton(AF_INET, "192.0.2.1", k->src), 1);
	assert_int_equal(inet_pton(AF_INET, "192.0.2.2", k->dst), 1);
	k->dest_qp = 291;
	k->pkey = 65535;
	k->has_vlan_ns = 1;
	k->vlan[0] = 100;
	k->epoch_id = 10;
	k->window = 4;
	k->flags = 3;
	e->flags_seen = 3;
	k->flow_start_ms = T0;
	k->flow_end_ms = T0 + 500;
	e->first_report_id = 1;
	k->report_id = 2;
	e->n_accepted = 2;
	k->requests = 5;
	k->skipped = 1;
	k->filled = 1;
	k->repeated = 1;
	e->state = RM_EPOCH_FINAL;
	e->outcome = RM_OUTCOME_COMPLETE;
	e->reason = strdup("");
	e->first_seen_ms = T0 + 100;
	e->last_seen_ms = T0 + 600;
	e->retired_ms = retired ? T0 + 1000 : 0;
	return e;
}

/* The second chunk's epochs: session 2, domain 0, observation point 0, no VLAN namespace. */
static void in_session_2(struct rm_epoch *e, uint64_t epoch_id)
{
	e->session_id = 2;
	e->domain = 0;
	e->key.observation_point_id = 0;
	e->key.has_vlan_ns = 0;
	e->key.vlan[0] = 0;
	e->key.epoch_id = epoch_id;
}

static void set_reason(struct rm_epoch *e, const char *reason)
{
	free((char *)e->reason);
	e->reason = strdup(reason);
	assert_non_null(e->reason);
}

static void set_addrs(struct rm_epoch *e, int family, const char *src, const char *dst)
{
	e->key.family = (uint8_t)family;
	memset(e->key.src, 0, sizeof(e->key.src));
	memset(e->key.dst, 0, sizeof(e->key.dst));
	assert_int_equal(inet_pton(family == 6 ? AF_INET6 : AF_INET, src, e->key.src), 1);
	assert_int_equal(inet_pton(family == 6 ? AF_INET6 : AF_INET, dst, e->key.dst), 1);
}

/* No accepted report: the measurement columns are NULL. */
static void no_report(struct rm_epoch *e)
{
	e->n_accepted = 0;
	e->first_report_id = 0;
	e->flags_seen = 0;
	e->state = RM_EPOCH_OPEN;
	e->outcome = RM_OUTCOME_INCOMPLETE;
}

static void store(struct fixture *f, struct rm_epoch *e)
{
	assert_int_equal(rm_store_epoch(f->st, e), 0);
	for (int i = 0; i < f->n_settled; i++)
		if (f->settled[i] == e)
			return;                                /* ours (malloc), freed at teardown */
	if (e->retired_ms && e->sink_keeps != RM_SINK_KEEPS) { /* the rules free it: here, at teardown */
		assert_true(f->n_done < (int)(sizeof(f->done) / sizeof(f->done[0])));
		f->done[f->n_done++] = e;
	}
}

/* The epoch_archive row of first_id: its columns as they are stored. */
static void assert_chunk(struct fixture *f, int64_t first, int64_t last, int64_t retained, const char *base,
			 const char *data)
{
	sqlite3_stmt *q;

	assert_int_equal(
		sqlite3_prepare_v2(rm_store_db(f->st),
				   "SELECT last_id, retained, base, data FROM epoch_archive WHERE first_id = ?", -1, &q,
				   NULL),
		SQLITE_OK);
	sqlite3_bind_int64(q, 1, first);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(q, 0), last);
	assert_int_equal(sqlite3_column_int64(q, 1), retained);
	assert_string_equal((const char *)sqlite3_column_text(q, 2), base);
	assert_string_equal((const char *)sqlite3_column_text(q, 3), data);
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	sqlite3_finalize(q);
}

/*
 * The view's rows, each as "v,v,...": integers in decimal, texts between
 * double quotes as they are (no escaping), NULL as null; then each must
 * be an integer or a text as stored, never a real.
 */
static void assert_view(struct fixture *f, const char *const *rows, int n)
{
	sqlite3_stmt *q;
	int i = 0;

	assert_int_equal(sqlite3_prepare_v2(rm_store_db(f->st), "SELECT * FROM epochs ORDER BY id", -1, &q, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_column_count(q), 42);
	while (sqlite3_step(q) == SQLITE_ROW) {
		char got[2048];
		size_t len = 0;

		assert_true(i < n);
		for (int c = 0; c < 42; c++) {
			const char *sep = c ? "," : "";

			switch (sqlite3_column_type(q, c)) {
			case SQLITE_INTEGER:
				len += snprintf(got + len, sizeof(got) - len, "%s%lld", sep,
						(long long)sqlite3_column_int64(q, c));
				break;
			case SQLITE_TEXT:
				len += snprintf(got + len, sizeof(got) - len, "%s\"%s\"", sep,
						(const char *)sqlite3_column_text(q, c));
				break;
			case SQLITE_NULL:
				len += snprintf(got + len, sizeof(got) - len, "%snull", sep);
				break;
			default:
				fail_msg("row %d column %d: neither integer, text nor NULL", i, c);
			}
		}
		assert_string_equal(got, rows[i]);
		i++;
	}
	assert_int_equal(i, n);
	sqlite3_finalize(q);
}

/* Chunk 1 of test_packed_epochs_byte_for_byte: epochs 1..7 (base 1), then a flush. */
static void store_chunk_1(struct fixture *f)
{
	struct rm_epoch *e;

	/* Chunk 1. 1: the base (IPv4, retired): its own element is {}. */
	store(f, epoch(f, 1));
	/* 2: another source; integers of 8, 9, 10, 17 and 19 digits, some above 2^63 - 1 (stored as signed 64 bits). */
	e = epoch(f, 1);
	set_addrs(e, 4, "192.0.2.9", "192.0.2.2");
	e->key.epoch_id = 11;
	e->missing_reports = 10000000000000000ULL;
	e->gaps = 99999999;
	e->repeats = 9999999999ULL;
	e->unsupported = 100000000;
	e->stale = 0x8000000000000000ULL;
	e->ignored = UINT64_MAX;
	store(f, e);
	/* 3: invalid, another destination, a reason JSON must escape, retired later. */
	e = epoch(f, 1);
	set_addrs(e, 4, "192.0.2.1", "198.51.100.20");
	e->key.vlan[1] = 7;
	e->key.epoch_id = 12;
	e->state = RM_EPOCH_INVALID;
	e->outcome = RM_OUTCOME_INVALID;
	set_reason(e, "bad \"q\" \\ x\ty\001");
	e->retired_ms = T0 + 2000;
	store(f, e);
	/* 4: IPv6, open and retired without an accepted report: NULL where the base is not (the full array). */
	e = epoch(f, 1);
	set_addrs(e, 6, "2001:db8::1", "2001:db8::2");
	e->key.epoch_id = 13;
	no_report(e);
	set_reason(e, "session ended; no accepted report");
	store(f, e);
	/* 5: IPv6 with every measurement: an object. */
	e = epoch(f, 1);
	set_addrs(e, 6, "2001:db8::1", "2001:db8::2");
	e->key.epoch_id = 14;
	store(f, e);
	/* 6: settled, retained (retired_ms NULL, the base's is not): the full array, addresses as the base's. */
	e = epoch(f, 0);
	e->key.epoch_id = 15;
	e->first_report_id = 2;
	e->missing_initial = 1;
	e->missing_reports = 1;
	e->gaps = 1;
	e->outcome = RM_OUTCOME_INCOMPLETE;
	set_reason(e, "report 1 missing");
	store(f, e);
	/* 7: IPv6 with the octets of the base's IPv4 addresses: other texts. */
	e = epoch(f, 1);
	e->key.family = 6;
	e->key.epoch_id = 16;
	store(f, e);
	assert_int_equal(rm_store_flush(f->st), 0);
}

/* Chunk 2: epochs 8..11 (base 8, session 2), and 12, 13 open rows, then a flush. */
static void store_chunk_2(struct fixture *f)
{
	struct rm_epoch *e;

	/* Chunk 2, base 8: IPv6 without an accepted report (NULLs in the base), session 2. */
	e = epoch(f, 1);
	set_addrs(e, 6, "fe80::1", "fe80::2");
	in_session_2(e, 20);
	no_report(e);
	set_reason(e, "timeout");
	e->retired_ms = T0 + 3000;
	store(f, e);
	/* 9: IPv4 with every measurement: values where the base is NULL. */
	e = epoch(f, 1);
	in_session_2(e, 21);
	e->retired_ms = T0 + 3000;
	store(f, e);
	/* 10: as the base, but final (the same reason in another string). */
	e = epoch(f, 1);
	set_addrs(e, 6, "fe80::1", "fe80::2");
	in_session_2(e, 22);
	no_report(e);
	e->state = RM_EPOCH_FINAL;
	set_reason(e, "timeout");
	e->retired_ms = T0 + 3000;
	store(f, e);
	/* 11: as the base, another reason with the same first character. */
	e = epoch(f, 1);
	set_addrs(e, 6, "fe80::1", "fe80::2");
	in_session_2(e, 23);
	no_report(e);
	set_reason(e, "timed out");
	e->retired_ms = T0 + 3000;
	store(f, e);
	/* 12, 13: open and retained, with and without an accepted report: rows of epoch_rows, not packed. */
	e = epoch(f, 0);
	e->key.epoch_id = 24;
	e->state = RM_EPOCH_OPEN;
	e->outcome = RM_OUTCOME_OPEN;
	store(f, e);
	e = epoch(f, 0);
	e->key.epoch_id = 25;
	no_report(e);
	e->outcome = RM_OUTCOME_OPEN;
	store(f, e);
	assert_int_equal(rm_store_flush(f->st), 0);
}

/* The two epoch_archive rows as they are stored. */
static void assert_chunks(struct fixture *f)
{
	assert_chunk(f, 1, 7, 1,
		     "[1,1,5,7,4,\"192.0.2.1\",\"192.0.2.2\",291,65535,1,100,0,10,4,3,3,1700000000000,1700000000500,"
		     "1,2,2,0,0,0,0,0,0,0,5,1,1,0,0,0,1,0,\"final\",\"complete\",\"\",1700000000100,1700000000600,"
		     "1700000001000]",
		     "[{},"
		     "{\"a\":2,\"f\":\"192.0.2.9\",\"m\":11,\"w\":10000000000000000,\"x\":99999999,"
		     "\"y\":9999999999,\"z\":-9223372036854775808,\"A\":100000000,\"B\":-1},"
		     "{\"a\":3,\"g\":\"198.51.100.20\",\"l\":7,\"m\":12,\"K\":\"invalid\",\"L\":\"invalid\","
		     "\"M\":\"bad \\\"q\\\" \\\\ x\\u0009y\\u0001\",\"P\":1700000002000},"
		     "[4,1,5,7,6,\"2001:db8::1\",\"2001:db8::2\",291,65535,1,100,0,13,null,null,0,null,null,null,null,"
		     "0,0,0,0,0,0,0,0,null,null,null,null,null,null,null,null,\"open\",\"incomplete\","
		     "\"session ended; no accepted report\",1700000000100,1700000000600,1700000001000],"
		     "{\"a\":5,\"e\":6,\"f\":\"2001:db8::1\",\"g\":\"2001:db8::2\",\"m\":14},"
		     "[6,1,5,7,4,\"192.0.2.1\",\"192.0.2.2\",291,65535,1,100,0,15,4,3,3,1700000000000,1700000000500,"
		     "2,2,2,1,1,1,0,0,0,0,5,1,1,0,0,0,1,0,\"final\",\"incomplete\",\"report 1 missing\","
		     "1700000000100,1700000000600,null],"
		     "{\"a\":7,\"e\":6,\"f\":\"c000:201::\",\"g\":\"c000:202::\",\"m\":16}]");
	assert_chunk(f, 8, 11, 0,
		     "[8,2,0,0,6,\"fe80::1\",\"fe80::2\",291,65535,0,0,0,20,null,null,0,null,null,null,null,"
		     "0,0,0,0,0,0,0,0,null,null,null,null,null,null,null,null,\"open\",\"incomplete\",\"timeout\","
		     "1700000000100,1700000000600,1700000003000]",
		     "[{},"
		     "{\"a\":9,\"e\":4,\"f\":\"192.0.2.1\",\"g\":\"192.0.2.2\",\"m\":21,\"n\":4,\"o\":3,\"p\":3,"
		     "\"q\":1700000000000,\"r\":1700000000500,\"s\":1,\"t\":2,\"u\":2,\"C\":5,\"D\":1,\"E\":1,\"F\":0,"
		     "\"G\":0,\"H\":0,\"I\":1,\"J\":0,\"K\":\"final\",\"L\":\"complete\",\"M\":\"\"},"
		     "{\"a\":10,\"m\":22,\"K\":\"final\"},"
		     "{\"a\":11,\"m\":23,\"M\":\"timed out\"}]");
}

/* The epochs view after both chunks: every epoch, packed or a row, as report reads it. */
static const char *const packed_view_rows[] = {
	"1,1,5,7,4,\"192.0.2.1\",\"192.0.2.2\",291,65535,1,100,0,10,4,3,3,1700000000000,1700000000500,"
	"1,2,2,0,0,0,0,0,0,0,5,1,1,0,0,0,1,0,\"final\",\"complete\",\"\",1700000000100,1700000000600,"
	"1700000001000",
	"2,1,5,7,4,\"192.0.2.9\",\"192.0.2.2\",291,65535,1,100,0,11,4,3,3,1700000000000,1700000000500,"
	"1,2,2,0,10000000000000000,99999999,9999999999,-9223372036854775808,100000000,-1,5,1,1,0,0,0,1,0,"
	"\"final\",\"complete\",\"\","
	"1700000000100,1700000000600,1700000001000",
	"3,1,5,7,4,\"192.0.2.1\",\"198.51.100.20\",291,65535,1,100,7,12,4,3,3,1700000000000,1700000000500,"
	"1,2,2,0,0,0,0,0,0,0,5,1,1,0,0,0,1,0,\"invalid\",\"invalid\",\"bad \"q\" \\ x\ty\001\","
	"1700000000100,1700000000600,1700000002000",
	"4,1,5,7,6,\"2001:db8::1\",\"2001:db8::2\",291,65535,1,100,0,13,null,null,0,null,null,null,null,"
	"0,0,0,0,0,0,0,0,null,null,null,null,null,null,null,null,\"open\",\"incomplete\","
	"\"session ended; no accepted report\",1700000000100,1700000000600,1700000001000",
	"5,1,5,7,6,\"2001:db8::1\",\"2001:db8::2\",291,65535,1,100,0,14,4,3,3,1700000000000,1700000000500,"
	"1,2,2,0,0,0,0,0,0,0,5,1,1,0,0,0,1,0,\"final\",\"complete\",\"\",1700000000100,1700000000600,"
	"1700000001000",
	"6,1,5,7,4,\"192.0.2.1\",\"192.0.2.2\",291,65535,1,100,0,15,4,3,3,1700000000000,1700000000500,"
	"2,2,2,1,1,1,0,0,0,0,5,1,1,0,0,0,1,0,\"final\",\"incomplete\",\"report 1 missing\","
	"1700000000100,1700000000600,null",
	"7,1,5,7,6,\"c000:201::\",\"c000:202::\",291,65535,1,100,0,16,4,3,3,1700000000000,1700000000500,"
	"1,2,2,0,0,0,0,0,0,0,5,1,1,0,0,0,1,0,\"final\",\"complete\",\"\",1700000000100,1700000000600,"
	"1700000001000",
	"8,2,0,0,6,\"fe80::1\",\"fe80::2\",291,65535,0,0,0,20,null,null,0,null,null,null,null,"
	"0,0,0,0,0,0,0,0,null,null,null,null,null,null,null,null,\"open\",\"incomplete\",\"timeout\","
	"1700000000100,1700000000600,1700000003000",
	"9,2,0,0,4,\"192.0.2.1\",\"192.0.2.2\",291,65535,0,0,0,21,4,3,3,1700000000000,1700000000500,"
	"1,2,2,0,0,0,0,0,0,0,5,1,1,0,0,0,1,0,\"final\",\"complete\",\"\",1700000000100,1700000000600,"
	"1700000003000",
	"10,2,0,0,6,\"fe80::1\",\"fe80::2\",291,65535,0,0,0,22,null,null,0,null,null,null,null,"
	"0,0,0,0,0,0,0,0,null,null,null,null,null,null,null,null,\"final\",\"incomplete\",\"timeout\","
	"1700000000100,1700000000600,1700000003000",
	"11,2,0,0,6,\"fe80::1\",\"fe80::2\",291,65535,0,0,0,23,null,null,0,null,null,null,null,"
	"0,0,0,0,0,0,0,0,null,null,null,null,null,null,null,null,\"open\",\"incomplete\",\"timed out\","
	"1700000000100,1700000000600,1700000003000",
	"12,1,5,7,4,\"192.0.2.1\",\"192.0.2.2\",291,65535,1,100,0,24,4,3,3,1700000000000,1700000000500,"
	"1,2,2,0,0,0,0,0,0,0,5,1,1,0,0,0,1,0,\"open\",\"open\",\"\",1700000000100,1700000000600,null",
	"13,1,5,7,4,\"192.0.2.1\",\"192.0.2.2\",291,65535,1,100,0,25,null,null,0,null,null,null,null,"
	"0,0,0,0,0,0,0,0,null,null,null,null,null,null,null,null,\"open\",\"open\",\"\","
	"1700000000100,1700000000600,null",
};

static void test_packed_epochs_byte_for_byte(void **state)
{
	struct fixture *f = *state;

	store_chunk_1(f);
	store_chunk_2(f);
	assert_chunks(f);
	assert_view(f, packed_view_rows, (int)(sizeof(packed_view_rows) / sizeof(packed_view_rows[0])));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_packed_epochs_byte_for_byte, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
