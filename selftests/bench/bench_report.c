// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_report.c - read rate of `rocemeter report` from SQLite
 * (docs/benchmarks.md "Reading the store"): epochs per second over a store
 * of EPOCHS stored epochs (default 1,000,000), next to the baseline, a
 * SELECT of as many rows and the same columns (the 34 report reads, same
 * values) from a plain SQLite table in the same run.
 *
 * The store is written through the store API (user/store/sqlite/store.h),
 * as the collector writes it: 64 connections of one session, epochs
 * settled and retained, then retired 10,000 at a time (packed in
 * epoch_archive, their retirement in epoch_retired), one epoch in 20 with
 * positions never seen, seen late or repeated, one in 50 incomplete, the
 * last 1,000 open (rows of epoch_rows). The plain table is filled from the
 * store's reader (store_read.h), then checked to hold every epoch.
 *
 * Timed (wall clock, output to /dev/null, one warm-up run of the reader
 * first so both read from the page cache):
 *   plain table        in this process: SELECT every row, each column read
 *   reader             in this process: rm_store_reader_epochs, a callback
 *                      that reads every column
 *   report text, --json, --format csv, --summary, --anomalies, --format
 *   html               build/rocemeter report as a child process
 *   SELECT count(*) FROM epochs   in this process (the view, sqlite3 users),
 *                      with RM_BENCH_COUNT=1 (some 30 us of CPU per epoch)
 * Each as two lines, "LABEL, CPU: ..." (user + system time of the work: on
 * a shared machine it varies less than the clock) and "LABEL, wall: ...",
 * "N epochs/s (R x the plain table)"; figures, never asserted. Usage: bench_report [EPOCHS]   (run from the repository root
 * after make; RM_BENCH_ROCEMETER=PATH runs another build of rocemeter;
 * RM_BENCH_KEEP=1 keeps build/bench/report.db and report-plain.db).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "rules/collector_rules.h"
#include "rules/pool.h"
#include "store/sqlite/store.h"
#include "store/store_read.h"

#define T0     1764547200000ULL /* 2025-12-01T00:00:00Z */
#define CONNS  64
#define BATCH  10000
#define OPEN_N 1000

extern char **environ;

static double now_s(void)
{
	return (double)rm_clock_mono_ns() / 1e9;
}

/* A measurement: wall clock and CPU time (user + system) of the work, seconds; wall < 0: failed. */
struct took {
	double wall, cpu;
};

static double cpu_of(const struct rusage *u)
{
	return (double)(u->ru_utime.tv_sec + u->ru_stime.tv_sec) +
	       (double)(u->ru_utime.tv_usec + u->ru_stime.tv_usec) / 1e6;
}

static double self_cpu(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return cpu_of(&u);
}

static struct rm_epoch *epoch(struct rm_pool *pool, uint64_t i)
{
	struct rm_epoch *e = rm_pool_alloc(pool);
	struct rm_report *k = &e->key;
	unsigned c = (unsigned)(i % CONNS);

	memset(e, 0, sizeof(*e));
	e->session_id = 1;
	e->domain = 1;
	k->observation_point_id = 1 + c % 2;
	k->family = 4;
	k->src[0] = 10, k->src[1] = 0, k->src[2] = 0, k->src[3] = (uint8_t)(1 + c);
	k->dst[0] = 10, k->dst[1] = 0, k->dst[2] = 1, k->dst[3] = (uint8_t)(1 + c);
	k->dest_qp = 0x100 + c;
	k->pkey = 0xffff;
	k->epoch_id = i / CONNS;
	k->window = 1024;
	k->flags = 0x01;
	e->flags_seen = 0x01;
	k->flow_start_ms = T0 + i * 10;
	k->flow_end_ms = k->flow_start_ms + 9;
	e->first_report_id = 1;
	k->report_id = 3;
	e->n_accepted = 3;
	k->requests = 1000 + i % 97;
	if (i % 20 == 7) {
		k->skipped = 3;
		k->filled = 1;
		k->expired = 1;
		k->abandoned = 1;
		k->repeated = 1;
	}
	e->state = RM_EPOCH_FINAL;
	e->outcome = RM_OUTCOME_COMPLETE;
	e->reason = strdup("");
	if (i % 50 == 3) {
		e->outcome = RM_OUTCOME_INCOMPLETE;
		e->missing_reports = e->gaps = 1;
		free((char *)e->reason);
		e->reason = strdup("final report 3 received; 1 report missing");
	}
	e->first_seen_ms = k->flow_start_ms + 20;
	e->last_seen_ms = k->flow_end_ms + 20;
	return e;
}

/* n epochs as the collector writes them; the last OPEN_N open and retained. */
static int write_store(const char *db, uint64_t n)
{
	struct rm_rules_limits lim = { 16, 100000, 0 };
	struct rm_pool *pool = rm_pool_new(sizeof(struct rm_epoch));
	struct rm_epoch **batch = calloc(BATCH, sizeof(*batch));
	char err[256];
	struct rm_store *st = rm_store_open(db, 0, err, sizeof(err));

	if (!st || !pool || !batch || rm_store_run_start(st, "bench", "tls", &lim, 1000, 0, T0) < 0) {
		fprintf(stderr, "bench_report: %s: %s\n", db, st ? rm_store_error(st) : err);
		return -1;
	}
	for (uint64_t i = 0; i < n; i += BATCH) {
		uint64_t m = n - i < BATCH ? n - i : BATCH;

		for (uint64_t j = 0; j < m; j++) {
			batch[j] = epoch(pool, i + j);
			if (i + j >= n - OPEN_N) {
				batch[j]->state = RM_EPOCH_OPEN;
				batch[j]->outcome = RM_OUTCOME_OPEN;
			}
			rm_store_epoch(st, batch[j]);
		}
		rm_store_flush(st);
		for (uint64_t j = 0; j < m; j++) {
			if (batch[j]->state == RM_EPOCH_OPEN) {
				rm_rules_epoch_free(batch[j]);
				continue;
			}
			batch[j]->retired_ms = T0 + (i + m) * 10 + 5000;
			rm_store_epoch(st, batch[j]);
		}
		rm_store_flush(st);
	}
	rm_store_close(st);
	free(batch);
	rm_pool_release(pool);
	return 0;
}

struct plain {
	sqlite3_stmt *ins;
	uint64_t rows, sum;
};

static int to_plain(void *arg, const struct rm_epoch_read *e)
{
	struct plain *p = arg;

	for (int c = 0; c < RM_ER__N; c++) {
		if (e->null[c])
			sqlite3_bind_null(p->ins, c + 1);
		else if (rm_epoch_read_kinds[c] == 'T')
			sqlite3_bind_text(p->ins, c + 1, e->t[c], -1, SQLITE_STATIC);
		else
			sqlite3_bind_int64(p->ins, c + 1, (sqlite3_int64)e->u[c]);
	}
	p->rows++;
	return sqlite3_step(p->ins) == SQLITE_DONE && sqlite3_reset(p->ins) == SQLITE_OK ? 0 : -1;
}

/* Reads every column, as report's printers do. */
static int touch(void *arg, const struct rm_epoch_read *e)
{
	struct plain *p = arg;

	for (int c = 0; c < RM_ER__N; c++)
		p->sum += rm_epoch_read_kinds[c] == 'T' ? (e->t[c] ? (uint64_t)e->t[c][0] : 0) : e->u[c];
	p->rows++;
	return 0;
}

static struct rm_store_reader *reader(const char *db)
{
	struct rm_store_spec spec = { .kind = RM_STORE_SQLITE };
	char err[256];
	struct rm_store_reader *r;

	snprintf(spec.path, sizeof(spec.path), "%s", db);
	r = rm_store_reader_open(&spec, err, sizeof(err));
	if (!r)
		fprintf(stderr, "bench_report: %s\n", err);
	return r;
}

/* The plain table: the report's columns, same values, in a database of its own. */
static int write_plain(const char *db, const char *plain_db)
{
	GString *sql = g_string_new("CREATE TABLE plain (");
	struct rm_read_filter all = { .pkey = -1 };
	struct plain p = { 0 };
	struct rm_store_reader *r = reader(db);
	char err[256];
	sqlite3 *pdb;
	int rc;

	if (!r || sqlite3_open(plain_db, &pdb) != SQLITE_OK)
		return -1;
	for (int c = 0; c < RM_ER__N; c++)
		g_string_append_printf(sql, "%s%s %s", c ? ", " : "id INTEGER PRIMARY KEY, ", rm_epoch_read_names[c],
				       rm_epoch_read_kinds[c] == 'T' ? "TEXT" : "INTEGER");
	g_string_append(sql, ")");
	rc = sqlite3_exec(pdb, "PRAGMA journal_mode = WAL; BEGIN", NULL, NULL, NULL) ||
	     sqlite3_exec(pdb, sql->str, NULL, NULL, NULL);
	g_string_assign(sql, "INSERT INTO plain VALUES (NULL");
	for (int c = 0; c < RM_ER__N; c++)
		g_string_append(sql, ", ?");
	g_string_append(sql, ")");
	if (!rc)
		rc = sqlite3_prepare_v2(pdb, sql->str, -1, &p.ins, NULL);
	if (!rc)
		rc = rm_store_reader_epochs(r, &all, to_plain, &p, err, sizeof(err));
	sqlite3_finalize(p.ins);
	if (!rc)
		rc = sqlite3_exec(pdb, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(pdb);
	rm_store_reader_close(r);
	g_string_free(sql, TRUE);
	return rc ? -1 : (int)(p.rows > 0);
}

static struct took time_plain(const char *plain_db, uint64_t *rows)
{
	GString *sql = g_string_new("SELECT");
	struct plain p = { 0 };
	struct took t = { -1, 0 };
	sqlite3_stmt *q;
	sqlite3 *pdb;

	for (int c = 0; c < RM_ER__N; c++)
		g_string_append_printf(sql, "%s %s", c ? "," : "", rm_epoch_read_names[c]);
	g_string_append(sql, " FROM plain ORDER BY id");
	if (sqlite3_open_v2(plain_db, &pdb, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(pdb, sql->str, -1, &q, NULL) != SQLITE_OK)
		return t;
	t = (struct took){ now_s(), self_cpu() };
	while (sqlite3_step(q) == SQLITE_ROW) {
		for (int c = 0; c < RM_ER__N; c++)
			p.sum += rm_epoch_read_kinds[c] == 'T'
					 ? (sqlite3_column_text(q, c) ? sqlite3_column_text(q, c)[0] : 0)
					 : (uint64_t)sqlite3_column_int64(q, c);
		p.rows++;
	}
	t = (struct took){ now_s() - t.wall, self_cpu() - t.cpu };
	sqlite3_finalize(q);
	sqlite3_close(pdb);
	g_string_free(sql, TRUE);
	*rows = p.rows;
	return t;
}

static struct took time_reader(const char *db, uint64_t *rows)
{
	struct rm_read_filter all = { .pkey = -1 };
	struct plain p = { 0 };
	struct rm_store_reader *r = reader(db);
	char err[256];
	struct took t = { now_s(), self_cpu() };

	if (!r || rm_store_reader_epochs(r, &all, touch, &p, err, sizeof(err))) {
		fprintf(stderr, "bench_report: reader: %s\n", r ? err : "cannot open");
		return (struct took){ -1, 0 };
	}
	t = (struct took){ now_s() - t.wall, self_cpu() - t.cpu };
	rm_store_reader_close(r);
	*rows = p.rows;
	return t;
}

/* build/rocemeter report --store sqlite:DB ARGS..., standard output to /dev/null: its wall clock and CPU time. */
static struct took time_report(const char *db, const char *const *args)
{
	struct took fail = { -1, 0 };
	struct rusage u;
	const char *exe = getenv("RM_BENCH_ROCEMETER") ? getenv("RM_BENCH_ROCEMETER") : "build/rocemeter";
	char store[300];
	char *argv[16];
	int n = 0, status;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	double t;

	snprintf(store, sizeof(store), "sqlite:%s", db);
	argv[n++] = (char *)exe;
	argv[n++] = "report";
	argv[n++] = "--store";
	argv[n++] = store;
	for (; *args && n < 15; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	t = now_s();
	if (posix_spawn(&pid, exe, &fa, NULL, argv, environ) || wait4(pid, &status, 0, &u) != pid) {
		posix_spawn_file_actions_destroy(&fa);
		return fail;
	}
	t = now_s() - t;
	posix_spawn_file_actions_destroy(&fa);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench_report: %s report ... exited with status %d\n", exe, status);
		return fail;
	}
	return (struct took){ t, cpu_of(&u) };
}

static struct took time_count(const char *db, uint64_t *count)
{
	struct took t = { -1, 0 };
	sqlite3 *d;
	sqlite3_stmt *q;

	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(d, "SELECT count(*) FROM epochs", -1, &q, NULL) != SQLITE_OK)
		return t;
	t = (struct took){ now_s(), self_cpu() };
	*count = sqlite3_step(q) == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(q, 0) : 0;
	t = (struct took){ now_s() - t.wall, self_cpu() - t.cpu };
	sqlite3_finalize(q);
	sqlite3_close(d);
	return t;
}

/*
 * Two lines: CPU time (the figure to compare on a shared machine) and wall
 * clock, each as epochs/s and as a multiple of the plain table's.
 */
static void line(const char *label, uint64_t n, struct took t, struct took base)
{
	if (t.wall < 0) {
		printf("%s: failed\n", label);
		return;
	}
	printf("%s, CPU: %.3f s, %.0f epochs/s (%.2f x the plain table)\n", label, t.cpu, (double)n / t.cpu,
	       base.cpu / t.cpu);
	printf("%s, wall: %.3f s, %.0f epochs/s (%.2f x the plain table)\n", label, t.wall, (double)n / t.wall,
	       base.wall / t.wall);
}

int main(int argc, char **argv)
{
	static const char *const t_text[] = { NULL }, *const t_json[] = { "--json", NULL },
				 *const t_csv[] = { "--format", "csv", NULL }, *const t_sum[] = { "--summary", NULL },
				 *const t_anom[] = { "--anomalies", NULL },
				 *const t_html[] = { "--format", "html", "--output", "build/bench/report.html", NULL };
	static const struct {
		const char *label;
		const char *const *args;
	} modes[] = {
		{ "report (text)", t_text },   { "report --json", t_json },      { "report --format csv", t_csv },
		{ "report --summary", t_sum }, { "report --anomalies", t_anom }, { "report --format html", t_html },
	};
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000, rows = 0, prow = 0, cnt = 0;
	const char *db = "build/bench/report.db", *plain_db = "build/bench/report-plain.db";
	struct took base, rd;
	double t;

	if (access("build/rocemeter", X_OK) || n < 2 * OPEN_N) {
		fprintf(stderr, "usage: bench_report [EPOCHS >= %d]   (from the repository root, after make)\n",
			2 * OPEN_N);
		return 2;
	}
	if (system("mkdir -p build/bench && rm -f build/bench/report.db* build/bench/report-plain.db*"))
		return 1;
	t = now_s();
	if (write_store(db, n) < 0)
		return 1;
	printf("store written through the store API: %" PRIu64 " epochs in %.1f s (%.0f epochs/s)\n", n, now_s() - t,
	       (double)n / (now_s() - t));
	if (write_plain(db, plain_db) <= 0 || time_reader(db, &rows).wall < 0)
		return 1;
	base = time_plain(plain_db, &prow);
	rd = time_reader(db, &rows);
	if (base.wall <= 0 || rd.wall < 0 || rows != n || prow != n) {
		fprintf(stderr, "bench_report: read %" PRIu64 " epochs, %" PRIu64 " plain rows, not %" PRIu64 "\n",
			rows, prow, n);
		return 1;
	}
	printf("%" PRIu64 " epochs, SQLite %s; wall clock, output to /dev/null:\n", n, sqlite3_libversion());
	line("plain table SELECT (baseline)", n, base, base);
	line("store reader (rm_store_reader_epochs)", n, rd, base);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		line(modes[i].label, n, time_report(db, modes[i].args), base);
	/* the view: minutes for a million packed epochs, so on request only */
	if (getenv("RM_BENCH_COUNT")) {
		rd = time_count(db, &cnt);
		if (cnt != n)
			fprintf(stderr, "bench_report: SELECT count(*) FROM epochs gave %" PRIu64 "\n", cnt);
		line("SELECT count(*) FROM epochs (the view)", n, rd, base);
	}
	if (getenv("RM_BENCH_KEEP"))
		return 0;
	return system("rm -f build/bench/report.db* build/bench/report-plain.db* build/bench/report.html") ? 1 : 0;
}
