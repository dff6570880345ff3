// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_collect.c - ingest rate of `rocemeter collect`: Data Records
 * received, decoded, validated ([SEQOBS] "Collector Processing") and
 * committed to SQLite, per second, by the collector's single thread.
 *
 * The collector runs as its own process (build/rocemeter collect) on
 * loopback; this program is the exporter: it encodes valid reports with the
 * project's IPFIX encoder (user/export/ipfix.c) and sends them over TLS 1.3 with
 * mutual authentication (certificates from scripts/gen-certs), then once
 * more over plain TCP (stated as such). The clock runs from the first Data
 * Message written to the moment the collector has committed the end of the
 * session (sessions.ended_ms set); the collector's CPU time (user and
 * system, start-up and shutdown included) is printed apart: on a shared
 * machine it varies less than the clock. Figures are printed, never
 * asserted.
 *
 * Workloads: E epochs x R reports, sent round by round (report r of every
 * epoch, then report r + 1; the last one final), one session:
 *   1,000 x 1,000   few epochs, many reports each
 *   90,000 x 10     many epochs, a few reports each
 *   95,000 x 1      one (final) report per epoch
 *   500,000 x 1     sustained: one report per epoch for a longer session,
 *                   the collector at --max-epochs 100000 and
 *                   --inactivity-timeout-ms 1000: every tenth epoch's
 *                   report is not final (the epoch stays open and is
 *                   retired as incomplete by the inactivity timeout or the
 *                   session's end), the others settle as complete and are
 *                   retired to make room (max_epochs) or at the end; so
 *                   epochs are written while retained, then retired, many
 *                   transactions long
 * After each run every record's outcome is checked in the database: each
 * epoch complete with reports 1..R, the counters of its report R (as
 * fill() makes them), retired; in the sustained workload the tenth
 * epochs incomplete with their one report, retired; the session's accepted
 * count equal to the records sent. A run that fails the check stops the program (exit 1)
 * instead of printing a figure.
 *
 * Usage: bench_collect [RECORDS EPOCHS [sustained]]   (run from the
 * repository root; without arguments, the four workloads above).
 * RM_BENCH_COLLECTOR=PATH runs that collector binary instead of
 * build/rocemeter (to alternate an old and a new build in one session).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "common/config.h"
#include "export/ipfix.h"
#include "rocemeter/seqobs.h"
#include "common/tls.h"

/* The collector under test: build/rocemeter, or $RM_BENCH_COLLECTOR. */
static const char *collector_bin = "build/rocemeter";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &l);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int file_contains(const char *path, const char *s)
{
	char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, s) != NULL;
}

/*
 * Every record's outcome (first principles: fill() below): each of the
 * nepochs epochs of session 1 complete, final, reports 1..rounds without
 * gap, requests 5 + 2R, skipped = filled = R, repeated 1, flowEnd start + R,
 * retired. Returns the epochs that pass, or -1 on a database error.
 */
static long long outcomes_checked(const char *db, uint64_t rounds)
{
	sqlite3 *d;
	sqlite3_stmt *q;
	long long r = -1;

	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(d);
		return -1;
	}
	if (sqlite3_prepare_v2(
		    d,
		    "SELECT count(*) FROM epochs WHERE session_id = 1 AND outcome = 'complete' AND state = 'final'"
		    " AND first_report_id = 1 AND last_report_id = ?1 AND reports_accepted = ?1"
		    " AND missing_reports = 0 AND gaps = 0 AND requests = 5 + 2 * ?1 AND skipped = ?1"
		    " AND filled = ?1 AND expired = 0 AND abandoned = 0 AND pending = 0 AND repeated = 1"
		    " AND unclassified_late = 0 AND window = 1024 AND flow_start_ms = 1700000000000"
		    " AND flow_end_ms = 1700000000000 + ?1 AND retired_ms IS NOT NULL",
		    -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(q, 1, (sqlite3_int64)rounds);
		if (sqlite3_step(q) == SQLITE_ROW)
			r = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
	}
	sqlite3_close(d);
	return r;
}

/*
 * The sustained workload's open epochs (fill(): every tenth, its one report
 * not final): incomplete with that report, a reason, retired. Returns how
 * many pass, or -1 on a database error.
 */
static long long open_ones_checked(const char *db)
{
	sqlite3 *d;
	sqlite3_stmt *q;
	long long r = -1;

	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(d);
		return -1;
	}
	if (sqlite3_prepare_v2(
		    d,
		    "SELECT count(*) FROM epochs WHERE session_id = 1 AND outcome = 'incomplete'"
		    " AND state = 'open' AND epoch_id % 10 = 0 AND first_report_id = 1 AND last_report_id = 1"
		    " AND reports_accepted = 1 AND requests = 7 AND reason <> '' AND retired_ms IS NOT NULL",
		    -1, &q, NULL) == SQLITE_OK) {
		if (sqlite3_step(q) == SQLITE_ROW)
			r = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
	}
	sqlite3_close(d);
	return r;
}

/* Session 1's end as committed by the collector: accepted records, or -1 while open. */
static long long session_done(const char *db)
{
	sqlite3 *d;
	sqlite3_stmt *q;
	long long r = -1;

	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(d);
		return -1;
	}
	if (sqlite3_prepare_v2(d, "SELECT accepted FROM sessions WHERE id=1 AND ended_ms IS NOT NULL", -1, &q, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(q) == SQLITE_ROW)
			r = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
	}
	sqlite3_close(d);
	return r;
}

static void fill(struct rm_report *r, uint64_t epoch, uint64_t rid, int final)
{
	memset(r, 0, sizeof(*r));
	r->observation_point_id = 1;
	r->family = 4;
	r->src[0] = 10, r->src[3] = 1;
	r->dst[0] = 10, r->dst[3] = 2;
	r->dest_qp = (uint32_t)(epoch & 0xffffff);
	r->pkey = 0xffff;
	r->flow_start_ms = 1700000000000ULL;
	r->flow_end_ms = 1700000000000ULL + rid;
	r->epoch_id = epoch;
	r->report_id = rid;
	r->window = 1024;
	r->flags = RM_FLAG_GENERATION_UNVERIFIED | (final ? RM_FLAG_FINAL_EPOCH : 0);
	r->requests = 5 + 2 * rid;
	r->skipped = rid;
	r->filled = rid;
	r->repeated = 1;
}

static int send_all(SSL *ssl, int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = ssl ? SSL_write(ssl, b, (int)n) : write(fd, b, n);

		if (w <= 0) {
			if (!ssl && errno == EINTR)
				continue;
			return -1;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One workload over TLS (tls) or plain TCP; sustained: see the file comment. 0, or -1 (nothing printed). */
static int run(const char *dir, int tls, uint64_t nrec, uint64_t nepochs, int sustained)
{
	char db[512], logp[512], listen_s[64], port_s[16], err[512];
	char cert[512], key[512], ca[512];
	int port = free_port();
	pid_t pid;
	struct rm_tls_settings ts = { 0 };
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	int fd;
	static uint8_t buf[RM_IPFIX_MSG_MAX];
	struct rm_ipfix_encoder enc;
	struct rm_report *batch;
	double t0, t1, cpu;
	long long acc;
	struct rusage ru;

	snprintf(db, sizeof(db), "%s/%s.db", dir, tls ? "tls" : "tcp");
	snprintf(logp, sizeof(logp), "%s/%s.log", dir, tls ? "tls" : "tcp");
	snprintf(listen_s, sizeof(listen_s), "127.0.0.1:%d", port);
	snprintf(port_s, sizeof(port_s), "%d", port);
	snprintf(cert, sizeof(cert), "%s/collector.pem", dir);
	snprintf(key, sizeof(key), "%s/collector.key", dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);

	unlink(logp); /* the last run's "listening on" must not be mistaken for this one's */
	unlink(db);
	pid = fork();
	if (pid == 0) {
		int lfd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		const char *args[32] = { "rocemeter", "collect", "--listen", listen_s, "--db", db }, **a = args + 6;

		dup2(lfd, 2);
		if (tls) {
			const char *t[] = { "--cert", cert, "--key",       key,
					    "--ca",   ca,   "--peer-name", "exporter.rocemeter.test" };

			memcpy(a, t, sizeof(t));
			a += sizeof(t) / sizeof(t[0]);
		} else {
			*a++ = "--plain-tcp";
		}
		*a++ = "--max-epochs";
		*a++ = sustained ? "100000" : "1000000";
		if (sustained) {
			*a++ = "--inactivity-timeout-ms";
			*a++ = "1000";
		}
		*a = NULL;
		execv(collector_bin, (char *const *)args);
		_exit(127);
	}
	for (int i = 0; i < 1000 && !file_contains(logp, "listening on"); i++)
		usleep(10000);
	if (!file_contains(logp, "listening on")) {
		fprintf(stderr, "bench_collect: the collector did not start (see %s)\n", logp);
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return -1;
	}

	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("bench_collect: connect");
		return -1;
	}
	if (tls) {
		snprintf(ts.ca, sizeof(ts.ca), "%s/ca.pem", dir);
		snprintf(ts.cert, sizeof(ts.cert), "%s/exporter.pem", dir);
		snprintf(ts.key, sizeof(ts.key), "%s/exporter.key", dir);
		snprintf(ts.peer_names[0], sizeof(ts.peer_names[0]), "collector.rocemeter.test");
		ts.n_peer_names = 1;
		ctx = rm_tls_client_ctx(&ts, err, sizeof(err));
		if (!ctx) {
			fprintf(stderr, "bench_collect: TLS: %s\n", err);
			return -1;
		}
		ssl = SSL_new(ctx);
		SSL_set_fd(ssl, fd);
		rm_tls_client_setup(ssl, &ts, err, sizeof(err));
		if (SSL_connect(ssl) != 1) {
			fprintf(stderr, "bench_collect: %s\n", rm_tls_errors("TLS handshake", err, sizeof(err)));
			return -1;
		}
	}
	rm_ipfix_init(&enc, RM_IPFIX_DEFAULT_PEN, 0, 0);
	size_t n = rm_ipfix_templates_msg(&enc, 1700000000, buf, sizeof(buf));

	send_all(ssl, fd, buf, n);
	batch = calloc(1024, sizeof(*batch));
	uint64_t rounds = (nrec + nepochs - 1) / nepochs, sent = 0;

	t0 = now_s();
	for (uint64_t i = 0; i < nrec;) {
		size_t k = 0, used;

		for (; k < 1024 && i + k < nrec; k++) {
			uint64_t j = i + k;
			uint64_t rid = 1 + j / nepochs;

			uint64_t epoch = 1 + j % nepochs;

			fill(&batch[k], epoch, rid, rid == rounds && !(sustained && epoch % 10 == 0));
		}
		for (size_t off = 0; off < k; off += used) {
			n = rm_ipfix_data_msg(&enc, 1700000000, batch + off, k - off, &used, buf, sizeof(buf));
			if (!n || send_all(ssl, fd, buf, n) < 0) {
				fprintf(stderr, "bench_collect: send failed\n");
				return -1;
			}
			sent += used;
		}
		i += k;
	}
	if (ssl)
		SSL_shutdown(ssl);
	else
		shutdown(fd, SHUT_WR);
	while ((acc = session_done(db)) < 0)
		usleep(2000);
	t1 = now_s();
	kill(pid, SIGTERM);
	wait4(pid, NULL, 0, &ru);
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	      (double)ru.ru_stime.tv_usec / 1e6;
	long long ok = outcomes_checked(db, rounds), n_open = sustained ? open_ones_checked(db) : 0;
	uint64_t want_open = sustained ? nepochs / 10 : 0;
	if (ssl)
		SSL_free(ssl);
	if (ctx)
		SSL_CTX_free(ctx);
	close(fd);
	free(batch);
	if (acc != (long long)sent || ok != (long long)(nepochs - want_open) || n_open != (long long)want_open) {
		fprintf(stderr,
			"bench_collect: outcome check failed: %lld of %llu records accepted, %lld of %llu epochs "
			"complete and %lld of %llu incomplete with the expected counters (database %s kept)\n",
			acc, (unsigned long long)sent, ok, (unsigned long long)(nepochs - want_open), n_open,
			(unsigned long long)want_open, db);
		return -1;
	}
	printf("collector ingest, %s, %s%llu epochs x %llu reports%s, loopback, one collector thread: %llu records "
	       "in %.3f s = %.0f records/s validated and stored; outcomes checked: %lld of %llu epochs complete "
	       "with reports 1..%llu, %lld of %llu incomplete\n",
	       tls ? "TLS 1.3 (mutual authentication)" : "plain TCP (no TLS)", sustained ? "sustained, " : "",
	       (unsigned long long)nepochs, (unsigned long long)rounds,
	       sustained ? " (every tenth not final; max_epochs 100000, inactivity timeout 1 s)" : "",
	       (unsigned long long)sent, t1 - t0, (double)sent / (t1 - t0), ok,
	       (unsigned long long)(nepochs - want_open), (unsigned long long)rounds, n_open,
	       (unsigned long long)want_open);
	/* The collector's own CPU time (user + system, wait4): what one core spends, whatever else the machine runs. */
	printf("collector CPU, %s, %s%llu epochs x %llu reports: %.3f s for %llu records = %.0f records/s of one "
	       "core's "
	       "time (start-up and shutdown included)\n",
	       tls ? "TLS 1.3 (mutual authentication)" : "plain TCP (no TLS)", sustained ? "sustained, " : "",
	       (unsigned long long)nepochs, (unsigned long long)rounds, cpu, (unsigned long long)sent,
	       (double)sent / cpu);
	unlink(db);
	return 0;
}

int main(int argc, char **argv)
{
	/* epochs, reports, sustained */
	static const uint64_t workloads[][3] = {
		{ 1000, 1000, 0 }, { 90000, 10, 0 }, { 95000, 1, 0 }, { 500000, 1, 1 }
	};
	char dir[] = "/tmp/rm-bench-collect.XXXXXX", cmd[600];
	int rc = 0;

	signal(SIGPIPE, SIG_IGN);
	if (getenv("RM_BENCH_COLLECTOR") && *getenv("RM_BENCH_COLLECTOR"))
		collector_bin = getenv("RM_BENCH_COLLECTOR");
	if (access(collector_bin, X_OK) || access("scripts/gen-certs", X_OK)) {
		fprintf(stderr, "bench_collect: run from the repository root after make\n");
		return 1;
	}
	if (argc != 1 && argc != 3 && !(argc == 4 && !strcmp(argv[3], "sustained"))) {
		fprintf(stderr, "usage: bench_collect [RECORDS EPOCHS [sustained]]\n");
		return 1;
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(cmd, sizeof(cmd), "scripts/gen-certs %s >/dev/null 2>&1", dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "bench_collect: scripts/gen-certs failed\n");
		return 1;
	}
	if (argc >= 3) {
		uint64_t nrec = strtoull(argv[1], NULL, 0), nepochs = strtoull(argv[2], NULL, 0);
		int sus = argc == 4;

		rc = !nrec || !nepochs || nrec % nepochs || run(dir, 1, nrec, nepochs, sus) ||
		     run(dir, 0, nrec, nepochs, sus);
	}
	for (size_t i = 0; argc == 1 && !rc && i < sizeof(workloads) / sizeof(workloads[0]); i++) {
		uint64_t ne = workloads[i][0], nrec = workloads[i][0] * workloads[i][1];

		rc = run(dir, 1, nrec, ne, (int)workloads[i][2]) || run(dir, 0, nrec, ne, (int)workloads[i][2]);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_collect: could not remove %s\n", dir);
	return rc ? 1 : 0;
}
