// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_export.c - the export transport (user/common/tls.c, user/export/export.c).
 *
 * Without arguments: cmocka unit tests. Configuration refusals ([SEQOBS],
 * "Security Considerations": TLS 1.3, mutual authentication, explicitly
 * authorised peers), and in-process handshakes between rm_tls_client_ctx and
 * rm_tls_server_ctx over a memory BIO pair with the certificates of
 * scripts/gen-certs, whose expected outcomes follow from how each
 * certificate was made (name, CA, key usage), not from the code.
 *
 * Helper modes for selftests/system/test_export.py (openssl s_server/s_client and socat
 * are the independent peers there):
 *   test_export --drive CONFIG.ini      exporter driven by commands on stdin
 *   test_export --serve CONFIG.ini PORT [OUT]
 *                                       one-connection TLS server on 127.0.0.1
 *                                       with rm_tls_server_ctx ([collect])
 * Driver commands (one per line, answers on stdout):
 *   wait-session MS       wait for an established session other than the last
 *                         seen one -> "session N" or "session 0" on timeout
 *   wait-no-session MS    wait until no session is established -> "no-session"
 *                         (or "session N" on timeout)
 *   submit N              N synthetic reports (report_fill) for the current
 *                         session, one submit per report -> "submitted OK FAILED"
 *   submit-session S N    the same with an explicit session number
 *   flush MS              -> "flush RC"
 *   stats                 -> "stats key=value ..."
 *   sleep MS
 *   stop MS               rm_exporter_stop, then final stats; exits
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/config.h"
#include "export/export.h"
#include "common/tls.h"

/* ---- synthetic reports, the formula selftests/system/test_export.py restates ---- */

static void report_fill(struct rm_report *r, uint64_t k)
{
	uint64_t open;

	memset(r, 0, sizeof(*r));
	r->family = k % 3 == 2 ? 6 : 4;
	r->observation_point_id = 1000 + k % 5;
	if (r->family == 4) {
		uint8_t s[4] = { 10, 0, (uint8_t)(k >> 8), (uint8_t)k }, d[4] = { 192, 0, 2, (uint8_t)(k % 250 + 1) };

		memcpy(r->src, s, 4);
		memcpy(r->dst, d, 4);
	} else {
		uint8_t s[16] = { 0x20, 0x01, 0x0d, 0xb8 }, d[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1 };

		s[12] = (uint8_t)(k >> 24);
		s[13] = (uint8_t)(k >> 16);
		s[14] = (uint8_t)(k >> 8);
		s[15] = (uint8_t)k;
		d[15] = 1;
		memcpy(r->src, s, 16);
		memcpy(r->dst, d, 16);
	}
	r->dest_qp = (uint32_t)((k * 7919) & 0xffffff);
	r->pkey = (uint16_t)(0x8000 | (k & 0x7fff));
	r->flow_start_ms = 1700000000000ULL + k * 10;
	r->flow_end_ms = r->flow_start_ms + 5000;
	r->epoch_id = k + 1;
	r->report_id = 1 + k % 3;
	r->window = 1024;
	r->flags = 0x0020 | (k % 4 == 0 ? 0x0001 : 0);
	r->requests = 100 + k;
	r->skipped = 10 + k % 10;
	r->filled = k % 3;
	r->expired = k % 2;
	open = r->skipped - r->filled - r->expired;
	if (r->flags & 0x0001)
		r->abandoned = open;
	else
		r->pending = (uint32_t)open;
	r->repeated = k % 4;
	r->unclassified_late = k % 5;
}

/* ---- helpers ---- */

static char pki[64];

static void pki_make(void)
{
	char cmd[512];

	if (pki[0])
		return;
	snprintf(pki, sizeof(pki), "/tmp/rm-test-export-XXXXXX");
	if (!mkdtemp(pki)) {
		fprintf(stderr, "mkdtemp failed\n");
		exit(1);
	}
	snprintf(cmd, sizeof(cmd), "scripts/gen-certs %s 2>/dev/null", pki);
	if (system(cmd) != 0) {
		fprintf(stderr, "scripts/gen-certs failed (run from the source tree)\n");
		exit(1);
	}
}

static void pki_remove(void)
{
	char cmd[300];

	if (!pki[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", pki);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", pki);
}

/* TLS settings with certificate NAME, peer names given as a NULL-ended list. */
static void tls_set(struct rm_tls_settings *t, const char *name, ...)
{
	va_list ap;
	const char *p;

	memset(t, 0, sizeof(*t));
	snprintf(t->ca, sizeof(t->ca), "%s/ca.pem", pki);
	snprintf(t->cert, sizeof(t->cert), "%s/%s.pem", pki, name);
	snprintf(t->key, sizeof(t->key), "%s/%s.key", pki, name);
	va_start(ap, name);
	while ((p = va_arg(ap, const char *)) && t->n_peer_names < RM_MAX_PEER_NAMES)
		snprintf(t->peer_names[t->n_peer_names++], sizeof(t->peer_names[0]), "%s", p);
	va_end(ap);
}

static void export_set(struct rm_export_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->enabled = 1;
	snprintf(s->collector, sizeof(s->collector), "127.0.0.1");
	s->port = 9; /* discard: nobody listens in the unit tests */
	s->pen = 32473;
	s->queue_records = 16;
	tls_set(&s->tls, "exporter", "collector.rocemeter.test", NULL);
}

static void expect_refusal(const struct rm_export_settings *s, const char *needle1, const char *needle2)
{
	char err[1024] = "";
	struct rm_exporter *x = rm_exporter_start(s, 0, NULL, err, sizeof(err));

	if (x)
		rm_exporter_stop(x, 0);
	assert_null(x);
	if (!strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
		fail_msg("error '%s' does not name '%s' / '%s'", err, needle1, needle2 ? needle2 : "");
}

/* ---- configuration refusals ---- */

static void test_refuse_without_client_credentials(void **state)
{
	struct rm_export_settings s;

	export_set(&s);
	s.tls.cert[0] = '\0';
	expect_refusal(&s, "cert", "transport = tls");
	export_set(&s);
	s.tls.key[0] = '\0';
	expect_refusal(&s, "key", NULL);
	export_set(&s);
	s.tls.ca[0] = '\0';
	expect_refusal(&s, "ca", NULL);
	export_set(&s);
	s.tls.n_peer_names = 0;
	expect_refusal(&s, "peer_name", NULL);
}

static void test_refuse_missing_files(void **state)
{
	struct rm_export_settings s;

	export_set(&s);
	snprintf(s.tls.cert, sizeof(s.tls.cert), "%s/absent.pem", pki);
	expect_refusal(&s, s.tls.cert, "No such file");
	export_set(&s);
	snprintf(s.tls.ca, sizeof(s.tls.ca), "%s/absent-ca.pem", pki);
	expect_refusal(&s, s.tls.ca, NULL);
	export_set(&s);
	snprintf(s.tls.key, sizeof(s.tls.key), "%s/absent.key", pki);
	expect_refusal(&s, s.tls.key, NULL);
	/* A key that belongs to another certificate. */
	export_set(&s);
	snprintf(s.tls.key, sizeof(s.tls.key), "%s/collector.key", pki);
	expect_refusal(&s, "does not match", s.tls.key);
	/* A certificate file that is not PEM. */
	export_set(&s);
	snprintf(s.tls.cert, sizeof(s.tls.cert), "%s/collector.key", pki);
	expect_refusal(&s, "cert file", s.tls.cert);
}

static void test_refuse_other_settings(void **state)
{
	struct rm_export_settings s;

	export_set(&s);
	s.enabled = 0;
	expect_refusal(&s, "[export]", NULL);
	export_set(&s);
	s.collector[0] = '\0';
	expect_refusal(&s, "collector", NULL);
	export_set(&s);
	s.queue_records = 0;
	expect_refusal(&s, "queue_records", NULL);
}

/* No session: submit never blocks, counts, and stop returns. */
static void test_no_session_counts(void **state)
{
	struct rm_export_settings s;
	struct rm_export_stats st;
	struct rm_report r[3];
	char err[512];
	struct rm_exporter *x;

	export_set(&s);
	s.tls.plain_tcp = 1; /* explicit: accepted with a warning */
	x = rm_exporter_start(&s, 0, NULL, err, sizeof(err));
	assert_non_null(x);
	for (int i = 0; i < 3; i++)
		report_fill(&r[i], (uint64_t)i);
	assert_int_equal(rm_exporter_session(x), 0);
	assert_int_equal(rm_exporter_submit(x, 0, r, 3), -1);
	assert_int_equal(rm_exporter_submit(x, 1, r, 2), -1);
	r[1].family = 5;
	assert_int_equal(rm_exporter_submit(x, 1, r, 3), -1);
	assert_int_equal(rm_exporter_submit(x, 1, r, 0), 0);
	assert_int_equal(rm_exporter_flush(x, 0), 0);
	rm_exporter_stats(x, &st);
	assert_int_equal(st.dropped_no_session, 5);
	assert_int_equal(st.dropped_invalid, 3);
	assert_int_equal(st.records_sent, 0);
	assert_int_equal(st.sessions, 0);
	assert_int_equal(st.queue_capacity, 16);
	rm_exporter_stop(x, 100);
}

/* ---- in-process handshakes over a memory BIO pair ---- */

/*
 * Handshake a client of ctx_c with a server of ctx_s. Returns 1 if both
 * sides completed; *c_ok / *s_ok: each side's completion. The SSLs are
 * returned for authorisation checks (caller frees).
 */
static int handshake(SSL_CTX *cc, SSL_CTX *sc, const struct rm_tls_settings *ct, SSL **cp, SSL **sp, int *c_ok,
		     int *s_ok)
{
	SSL *c = SSL_new(cc), *s = SSL_new(sc);
	BIO *bc, *bs;
	int cdone = 0, sdone = 0, cfail = 0, sfail = 0;

	assert_non_null(c);
	assert_non_null(s);
	assert_int_equal(BIO_new_bio_pair(&bc, 0, &bs, 0), 1);
	SSL_set_bio(c, bc, bc);
	SSL_set_bio(s, bs, bs);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	if (ct)
		assert_int_equal(rm_tls_client_setup(c, ct, NULL, 0), 0);
	for (int i = 0; i < 100 && !(cfail || sfail) && !(cdone && sdone); i++) {
		int r;

		if (!cdone && !cfail) {
			r = SSL_do_handshake(c);
			if (r == 1)
				cdone = 1;
			else if (SSL_get_error(c, r) != SSL_ERROR_WANT_READ)
				cfail = 1;
		}
		if (!sdone && !sfail) {
			r = SSL_do_handshake(s);
			if (r == 1)
				sdone = 1;
			else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ)
				sfail = 1;
		}
	}
	/* TLS 1.3: the client finishes before the server has checked its certificate. */
	if (cdone && sfail)
		cdone = 0;
	ERR_clear_error();
	*cp = c;
	*sp = s;
	*c_ok = cdone;
	*s_ok = sdone;
	return cdone && sdone;
}

struct hs_case {
	const char *client_cert;
	const char *server_cert;
	const char *client_peer; /* the name the client authorises */
	const char *server_peer; /* the name the server authorises */
	int client_max_tls12;    /* client limited to TLS 1.2 (a plain OpenSSL context) */
	int expect_ok;
	const char *expect_why; /* substring of the failing side's verify error */
};

static void run_case(const struct hs_case *k)
{
	struct rm_tls_settings ct, st;
	SSL_CTX *cc, *sc;
	SSL *c, *s;
	int cok, sok, ok;
	char err[1024];

	tls_set(&ct, k->client_cert, k->client_peer, NULL);
	tls_set(&st, k->server_cert, k->server_peer, NULL);
	if (!strncmp(k->client_cert, "untrusted", 9))
		snprintf(ct.ca, sizeof(ct.ca), "%s/ca.pem", pki); /* trusts the right CA, presents an untrusted chain */
	sc = rm_tls_server_ctx(&st, err, sizeof(err));
	if (!sc)
		fail_msg("server ctx: %s", err);
	if (k->client_max_tls12) {
		cc = SSL_CTX_new(TLS_client_method());
		assert_non_null(cc);
		SSL_CTX_set_max_proto_version(cc, TLS1_2_VERSION);
		assert_int_equal(SSL_CTX_use_certificate_chain_file(cc, ct.cert), 1);
		assert_int_equal(SSL_CTX_use_PrivateKey_file(cc, ct.key, SSL_FILETYPE_PEM), 1);
		SSL_CTX_set_verify(cc, SSL_VERIFY_NONE, NULL);
	} else {
		cc = rm_tls_client_ctx(&ct, err, sizeof(err));
		if (!cc)
			fail_msg("client ctx: %s", err);
	}
	ok = handshake(cc, sc, k->client_max_tls12 ? NULL : &ct, &c, &s, &cok, &sok);
	if (k->expect_ok) {
		if (!ok)
			fail_msg("%s -> %s: handshake failed (client %d server %d, verify c=%s s=%s)", k->client_cert,
				 k->server_cert, cok, sok, X509_verify_cert_error_string(SSL_get_verify_result(c)),
				 X509_verify_cert_error_string(SSL_get_verify_result(s)));
		assert_string_equal(SSL_get_version(c), "TLSv1.3");
		assert_int_equal(rm_tls_authorize_peer(c, &ct, err, sizeof(err)), 0);
		assert_int_equal(rm_tls_authorize_peer(s, &st, err, sizeof(err)), 0);
	} else {
		const char *why_c = X509_verify_cert_error_string(SSL_get_verify_result(c));
		const char *why_s = X509_verify_cert_error_string(SSL_get_verify_result(s));

		if (ok)
			fail_msg("%s -> %s: handshake succeeded, expected a refusal", k->client_cert, k->server_cert);
		if (k->expect_why && !strstr(why_c, k->expect_why) && !strstr(why_s, k->expect_why))
			fail_msg("%s -> %s: reasons '%s' / '%s', expected '%s'", k->client_cert, k->server_cert, why_c,
				 why_s, k->expect_why);
		/* Whatever completed must not pass authorisation either. */
		if (cok)
			assert_int_equal(rm_tls_authorize_peer(c, &ct, err, sizeof(err)) == 0 && sok, 0);
	}
	SSL_free(c);
	SSL_free(s);
	SSL_CTX_free(cc);
	SSL_CTX_free(sc);
}

static void test_handshake_authorised(void **state)
{
	static const struct hs_case ok[] = {
		{ "exporter", "collector", "collector.rocemeter.test", "exporter.rocemeter.test", 0, 1, NULL },
		/* Case-insensitive DNS match. */
		{ "exporter", "collector", "Collector.Rocemeter.TEST", "exporter.rocemeter.test", 0, 1, NULL },
		/* A peer name that is an address matches the IP SAN. */
		{ "exporter", "collector", "127.0.0.1", "exporter.rocemeter.test", 0, 1, NULL },
		{ "exporter", "collector", "::1", "exporter.rocemeter.test", 0, 1, NULL },
		/* No SAN at all: the subject CN is the name. */
		{ "exporter", "nosan", "collector.rocemeter.test", "exporter.rocemeter.test", 0, 1, NULL },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		run_case(&ok[i]);
}

static void test_handshake_refused(void **state)
{
	static const struct hs_case bad[] = {
		/* Collector certificate with a name the exporter does not authorise. */
		{ "exporter", "wrongname", "collector.rocemeter.test", "exporter.rocemeter.test", 0, 0,
		  "hostname mismatch" },
		/* Exporter does not authorise the name the collector's certificate carries. */
		{ "exporter", "collector", "other.rocemeter.test", "exporter.rocemeter.test", 0, 0,
		  "hostname mismatch" },
		/* The collector does not authorise the exporter's name. */
		{ "exporter", "collector", "collector.rocemeter.test", "other.rocemeter.test", 0, 0,
		  "hostname mismatch" },
		/* A valid chain whose name is not authorised, as a client. */
		{ "wrongname", "collector", "collector.rocemeter.test", "exporter.rocemeter.test", 0, 0,
		  "hostname mismatch" },
		/* Collector certificate from a CA the exporter does not trust. */
		{ "exporter", "untrusted", "collector.rocemeter.test", "exporter.rocemeter.test", 0, 0,
		  "local issuer" },
		/* Client certificate from an untrusted CA. */
		{ "untrusted", "collector", "collector.rocemeter.test", "exporter.rocemeter.test", 0, 0,
		  "local issuer" },
		/* The collector's certificate as a client: EKU serverAuth only. */
		{ "collector", "collector", "collector.rocemeter.test", "collector.rocemeter.test", 0, 0,
		  "unsuitable certificate purpose" },
		/* A TLS 1.2 client. */
		{ "exporter", "collector", "collector.rocemeter.test", "exporter.rocemeter.test", 1, 0, NULL },
		/* A wildcard is never matched: "*.rocemeter.test" is not authorised by name. */
		{ "exporter", "collector", "*.rocemeter.test", "exporter.rocemeter.test", 0, 0, "hostname mismatch" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		run_case(&bad[i]);
}

static void test_server_ctx_refusals(void **state)
{
	struct rm_tls_settings t;
	char err[1024];
	SSL_CTX *c;

	tls_set(&t, "collector", NULL);
	c = rm_tls_server_ctx(&t, err, sizeof(err));
	SSL_CTX_free(c);
	assert_null(c);
	assert_non_null(strstr(err, "peer_name"));
	tls_set(&t, "collector", "exporter.rocemeter.test", NULL);
	t.plain_tcp = 1;
	c = rm_tls_server_ctx(&t, err, sizeof(err));
	SSL_CTX_free(c);
	assert_null(c);
	tls_set(&t, "collector", "exporter.rocemeter.test", "", NULL);
	c = rm_tls_server_ctx(&t, err, sizeof(err));
	SSL_CTX_free(c);
	assert_null(c);
	assert_non_null(strstr(err, "peer_name 2 is empty"));
}

/* ---- helper modes ---- */

static int load_config(const char *path, struct rm_config_file *cfg)
{
	char err[1024];

	rm_config_defaults(cfg);
	if (rm_config_load(path, cfg, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static void print_stats(const char *tag, struct rm_exporter *x, const struct rm_export_stats *given)
{
	struct rm_export_stats st;

	if (given)
		st = *given;
	else
		rm_exporter_stats(x, &st);
	printf("%s sessions=%llu reconnects=%llu connect_failures=%llu sessions_lost=%llu records_sent=%llu "
	       "lost_in_flight=%llu messages_sent=%llu bytes_sent=%llu dropped_queue_full=%llu dropped_no_session=%llu "
	       "dropped_session_lost=%llu dropped_invalid=%llu dropped_at_stop=%llu queued=%llu "
	       "queue_capacity=%llu\n",
	       tag, (unsigned long long)st.sessions, (unsigned long long)st.reconnects,
	       (unsigned long long)st.connect_failures, (unsigned long long)st.sessions_lost,
	       (unsigned long long)st.records_sent, (unsigned long long)st.lost_in_flight,
	       (unsigned long long)st.messages_sent, (unsigned long long)st.bytes_sent,
	       (unsigned long long)st.dropped_queue_full, (unsigned long long)st.dropped_no_session,
	       (unsigned long long)st.dropped_session_lost, (unsigned long long)st.dropped_invalid,
	       (unsigned long long)st.dropped_at_stop, (unsigned long long)st.queued,
	       (unsigned long long)st.queue_capacity);
}

static int drive(const char *config)
{
	static struct rm_config_file cfg;
	struct rm_exporter *x;
	char err[1024], line[256];
	uint64_t k = 0, seen = 0;

	if (load_config(config, &cfg))
		return 2;
	x = rm_exporter_start(&cfg.export, cfg.meter.namespace_vlan, &cfg.capture, err, sizeof(err));
	if (!x) {
		fprintf(stderr, "%s\n", err);
		printf("refused\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("started\n");
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long a = 0, b = 0;

		if (sscanf(line, "wait-session %llu", &a) == 1) {
			struct timespec t0, t;
			uint64_t sn = 0;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (;;) {
				sn = rm_exporter_session(x);
				if (sn && sn != seen)
					break;
				clock_gettime(CLOCK_MONOTONIC, &t);
				/* Signed: tv_nsec may be smaller than at the start. */
				if ((int64_t)(t.tv_sec - t0.tv_sec) * 1000 +
					    (int64_t)(t.tv_nsec - t0.tv_nsec) / 1000000 >=
				    (int64_t)a) {
					sn = 0;
					break;
				}
				usleep(5000);
			}
			if (sn)
				seen = sn;
			printf("session %llu\n", (unsigned long long)sn);
		} else if (sscanf(line, "wait-no-session %llu", &a) == 1) {
			uint64_t sn = rm_exporter_session(x);

			for (unsigned long long t = 0; sn && t < a; t += 5) {
				usleep(5000);
				sn = rm_exporter_session(x);
			}
			if (sn)
				printf("session %llu\n", (unsigned long long)sn);
			else
				printf("no-session\n");
		} else if (sscanf(line, "submit-session %llu %llu", &a, &b) == 2 ||
			   (sscanf(line, "submit %llu", &b) == 1 && (a = rm_exporter_session(x), 1))) {
			unsigned long long okc = 0, failc = 0;

			for (unsigned long long i = 0; i < b; i++) {
				struct rm_report r;

				report_fill(&r, k++);
				if (rm_exporter_submit(x, a, &r, 1) == 0)
					okc++;
				else
					failc++;
			}
			printf("submitted %llu %llu\n", okc, failc);
		} else if (sscanf(line, "flush %llu", &a) == 1) {
			printf("flush %d\n", rm_exporter_flush(x, (int)a));
		} else if (!strncmp(line, "stats", 5)) {
			print_stats("stats", x, NULL);
		} else if (sscanf(line, "sleep %llu", &a) == 1) {
			usleep((useconds_t)(a * 1000));
			printf("slept\n");
		} else if (sscanf(line, "stop %llu", &a) == 1) {
			break;
		} else {
			printf("unknown command\n");
		}
	}
	{
		struct rm_export_stats st;
		unsigned long long a = 2000;

		sscanf(line, "stop %llu", &a);
		rm_exporter_stop_stats(x, (int)a, &st);
		print_stats("final", NULL, &st);
	}
	return 0;
}

/* One connection: handshake, authorise, then copy the stream to out. */
static int serve(const char *config, int port, const char *out)
{
	static struct rm_config_file cfg;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char err[1024], subj[512];
	SSL_CTX *ctx;
	SSL *ssl;
	FILE *f = NULL;
	int ls, fd, one = 1, r;
	unsigned long long total = 0;

	if (load_config(config, &cfg))
		return 2;
	ctx = rm_tls_server_ctx(&cfg.collect.tls, err, sizeof(err));
	if (!ctx) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		perror("listen");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("listening\n");
	fd = accept(ls, NULL, NULL);
	if (fd < 0) {
		perror("accept");
		return 1;
	}
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	r = SSL_accept(ssl);
	if (r != 1) {
		long vr = SSL_get_verify_result(ssl);

		rm_tls_errors("handshake", err, sizeof(err));
		printf("refused: %s; %s\n", err, X509_verify_cert_error_string(vr));
		SSL_free(ssl);
		close(fd);
		return 0;
	}
	if (rm_tls_authorize_peer(ssl, &cfg.collect.tls, err, sizeof(err))) {
		printf("refused: %s\n", err);
		SSL_free(ssl);
		close(fd);
		return 0;
	}
	rm_tls_peer_subject(ssl, subj, sizeof(subj));
	printf("authorised %s %s\n", SSL_get_version(ssl), subj);
	if (out)
		f = fopen(out, "wb");
	for (;;) {
		char buf[16384];

		r = SSL_read(ssl, buf, sizeof(buf));
		if (r <= 0)
			break;
		total += (unsigned long long)r;
		if (f)
			fwrite(buf, 1, (size_t)r, f);
	}
	printf("closed %llu %s\n", total, SSL_get_error(ssl, r) == SSL_ERROR_ZERO_RETURN ? "close_notify" : "eof");
	if (f)
		fclose(f);
	SSL_free(ssl);
	close(fd);
	close(ls);
	SSL_CTX_free(ctx);
	return 0;
}

static int setup(void **state)
{
	pki_make();
	return 0;
}

static int teardown(void **state)
{
	pki_remove();
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refuse_without_client_credentials),
		cmocka_unit_test(test_refuse_missing_files),
		cmocka_unit_test(test_refuse_other_settings),
		cmocka_unit_test(test_no_session_counts),
		cmocka_unit_test(test_handshake_authorised),
		cmocka_unit_test(test_handshake_refused),
		cmocka_unit_test(test_server_ctx_refusals),
	};

	if (argc == 3 && !strcmp(argv[1], "--drive"))
		return drive(argv[2]);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "--serve"))
		return serve(argv[2], atoi(argv[3]), argc == 5 ? argv[4] : NULL);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--drive CONFIG | --serve CONFIG PORT [OUT]]\n", argv[0]);
		return 2;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
