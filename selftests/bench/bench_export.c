// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_export.c - export throughput over TLS 1.3 on loopback (target in
 * docs/benchmarks.md: at least 1,000,000 records/s on one core). Prints figures, never
 * asserts them.
 *
 * The exporter process (producer + transport thread) is pinned to CPU 0, a
 * forked sink (rm_tls_server_ctx, reads and discards) to CPU 1 when there is
 * one. The producer submits prepared reports in batches of 256 (retrying
 * after sched_yield when the queue is full); the clock runs from the first
 * submission to the end of rm_exporter_flush. Also measured: the transport
 * thread's CPU time (process CPU minus the producer thread's), and the same
 * run over plain TCP for reference.
 *
 *   bench_export [RECORDS]      default 2,000,000
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "common/config.h"
#include "export/export.h"
#include "common/tls.h"

static char pki[64];

static double now_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu >= sysconf(_SC_NPROCESSORS_ONLN))
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void tls_files(struct rm_tls_settings *t, const char *name, const char *peer)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->ca, sizeof(t->ca), "%s/ca.pem", pki);
	snprintf(t->cert, sizeof(t->cert), "%s/%s.pem", pki, name);
	snprintf(t->key, sizeof(t->key), "%s/%s.key", pki, name);
	snprintf(t->peer_names[0], sizeof(t->peer_names[0]), "%s", peer);
	t->n_peer_names = 1;
}

/* Sink: one connection, read and discard; the byte count goes to fd out. */
static void sink(int ls, int plain, int out)
{
	struct rm_tls_settings t;
	char err[1024], buf[65536];
	unsigned long long total = 0;
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	int fd;
	ssize_t n;

	pin(1);
	if (!plain) {
		tls_files(&t, "collector", "exporter.rocemeter.test");
		ctx = rm_tls_server_ctx(&t, err, sizeof(err));
		if (!ctx) {
			fprintf(stderr, "sink: %s\n", err);
			_exit(1);
		}
	}
	fd = accept(ls, NULL, NULL);
	if (fd < 0)
		_exit(1);
	if (!plain) {
		ssl = SSL_new(ctx);
		SSL_set_fd(ssl, fd);
		if (SSL_accept(ssl) != 1 || rm_tls_authorize_peer(ssl, &t, err, sizeof(err))) {
			fprintf(stderr, "sink: handshake refused\n");
			_exit(1);
		}
	}
	for (;;) {
		n = plain ? read(fd, buf, sizeof(buf)) : SSL_read(ssl, buf, sizeof(buf));
		if (n <= 0)
			break;
		total += (unsigned long long)n;
	}
	if (write(out, &total, sizeof(total)) != sizeof(total))
		_exit(1);
	_exit(0);
}

static void fill(struct rm_report *r, uint64_t k)
{
	memset(r, 0, sizeof(*r));
	r->family = k % 4 == 3 ? 6 : 4;
	r->observation_point_id = 1;
	r->src[0] = 10;
	r->src[3] = (uint8_t)k;
	r->dst[0] = 10;
	r->dst[3] = 1;
	r->dest_qp = (uint32_t)(k & 0xffffff);
	r->pkey = 0xffff;
	r->flow_start_ms = 1700000000000ULL + k;
	r->flow_end_ms = r->flow_start_ms + 100;
	r->epoch_id = k + 1;
	r->report_id = 1;
	r->window = 1024;
	r->flags = 0x21;
	r->requests = 1000 + k;
	r->skipped = 5;
	r->filled = 3;
	r->expired = 1;
	r->abandoned = 1;
}

static int run(int plain, uint64_t records)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct rm_export_settings s;
	struct rm_export_stats st;
	struct rm_exporter *x;
	static struct rm_report batch[1024];
	char err[1024];
	int ls, p[2], status;
	pid_t child;
	uint64_t done = 0, session, retries = 0;
	unsigned long long received = 0;
	double t0, t1, cpu0, cpu1, self0, self1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1) ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) || pipe(p)) {
		perror("bench_export: sink socket");
		return 1;
	}
	child = fork();
	if (child == 0) {
		close(p[0]);
		sink(ls, plain, p[1]);
	}
	close(ls);
	close(p[1]);

	memset(&s, 0, sizeof(s));
	s.enabled = 1;
	snprintf(s.collector, sizeof(s.collector), "127.0.0.1");
	s.port = ntohs(sa.sin_port);
	s.pen = 32473;
	s.queue_records = 65536;
	tls_files(&s.tls, "exporter", "collector.rocemeter.test");
	s.tls.plain_tcp = plain;
	x = rm_exporter_start(&s, 0, NULL, err, sizeof(err));
	if (!x) {
		fprintf(stderr, "bench_export: %s\n", err);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}
	for (size_t i = 0; i < 1024; i++)
		fill(&batch[i], i);
	t0 = now_s(CLOCK_MONOTONIC);
	while (!(session = rm_exporter_session(x)) && now_s(CLOCK_MONOTONIC) - t0 < 10)
		usleep(1000);
	if (!session) {
		fprintf(stderr, "bench_export: no session\n");
		rm_exporter_stop(x, 0);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}
	t0 = now_s(CLOCK_MONOTONIC);
	cpu0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	self0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	while (done < records) {
		size_t n = records - done < 256 ? (size_t)(records - done) : 256;

		if (rm_exporter_submit(x, session, &batch[done % 1024 <= 768 ? done % 1024 : 0], n) == 0) {
			done += n;
		} else {
			retries++;
			sched_yield();
		}
	}
	rm_exporter_flush(x, -1);
	t1 = now_s(CLOCK_MONOTONIC);
	cpu1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	self1 = now_s(CLOCK_THREAD_CPUTIME_ID);
	rm_exporter_stop_stats(x, 5000, &st);
	if (read(p[0], &received, sizeof(received)) != sizeof(received))
		received = 0;
	close(p[0]);
	waitpid(child, &status, 0);

	{
		double wall = t1 - t0, thread_cpu = (cpu1 - cpu0) - (self1 - self0);

		printf("export over %s, loopback, exporter process on CPU 0, sink on CPU 1:\n",
		       plain ? "plain TCP (reference)" : "TLS 1.3");
		printf("  %llu records in %.3f s: %.0f records/s, %.1f MB/s of IPFIX, %llu messages "
		       "(%.0f records/message)\n",
		       (unsigned long long)st.records_sent, wall, (double)st.records_sent / wall,
		       (double)st.bytes_sent / wall / 1e6, (unsigned long long)st.messages_sent,
		       (double)st.records_sent / (double)(st.messages_sent ? st.messages_sent : 1));
		printf("  transport thread CPU %.3f s (%.0f records per CPU-second), producer CPU %.3f s, "
		       "full-queue retries %llu\n",
		       thread_cpu, thread_cpu > 0 ? (double)st.records_sent / thread_cpu : 0.0, self1 - self0,
		       (unsigned long long)retries);
		printf("  sink received %llu octets of %llu sent (%s)\n", received, (unsigned long long)st.bytes_sent,
		       received == st.bytes_sent ? "complete" : "INCOMPLETE");
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t records = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000000;
	char cmd[256];
	int rc;

	snprintf(pki, sizeof(pki), "/tmp/rm-bench-export-XXXXXX");
	if (!mkdtemp(pki) || (snprintf(cmd, sizeof(cmd), "scripts/gen-certs %s 2>/dev/null", pki), system(cmd))) {
		fprintf(stderr, "bench_export: cannot make certificates (run from the source tree)\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	pin(0);
	rc = run(0, records) | run(1, records);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", pki);
	if (system(cmd))
		fprintf(stderr, "bench_export: cannot remove %s\n", pki);
	return rc;
}
