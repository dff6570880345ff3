// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * collector.c - `rocemeter collect`: TLS/TCP server, one poll() loop, each
 * connection one IPFIX Transport Session. See collector.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "collector_rules.h"
#include "common/command.h"
#include "ipfix_decode.h"
#include "rocemeter/ipfix_ie.h"
#include "store.h"
#include "common/tls.h"

#define BUF_CAP (RM_IPFIX_MAX_MSG + 65536)
#define HANDSHAKE_TIMEOUT_MS 10000
/*
 * Batch bounds: Messages processed under one open transaction are committed
 * together once this many have been processed, once the batch is this old,
 * or when the poll() round ends (before the loop blocks again), whichever
 * comes first.
 */
#define BATCH_MAX_MESSAGES 64
#define BATCH_MAX_MS 20

struct server;

struct conn {
	struct server *srv;
	int fd;
	SSL *ssl;           /* NULL with plain TCP */
	int handshaking;
	int want_write;
	int closing;        /* ended; free after the loop pass */
	char peer[INET6_ADDRSTRLEN + 8];
	int64_t session_id;
	uint64_t started_ms;
	struct rm_rsession *rs;
	struct rm_ipfix_session *dec;
	uint8_t *buf;
	size_t len;
	uint64_t messages, records, octets, rejected;
	uint64_t now_ms;    /* time of the Message being processed */
};

struct server {
	const struct rm_collect_settings *cs;
	uint32_t pen;
	SSL_CTX *ctx;
	int lfd;
	struct rm_store *st;
	struct rm_rules *rules;
	int64_t run_id;
	struct conn **conns;
	size_t nconns;
	int store_failed;
	/*
	 * The open batch: Messages processed since the last commit and when
	 * the batch began (CLOCK_MONOTONIC ms). The store defers and groups
	 * the writes itself (store.h); a commit is where it may write them.
	 */
	int in_batch;
	uint32_t batch_messages;
	uint64_t batch_start_ms;
};

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
	va_list ap;

	fputs("rocemeter collect: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void store_check(struct server *s, int rc, const char *what)
{
	if (rc < 0 && !s->store_failed) {
		logmsg("database error (%s): %s", what, rm_store_error(s->st));
		s->store_failed = 1;
	}
}

/* Open the batch's transaction if none is open. */
static void batch_begin(struct server *s)
{
	if (!s->in_batch) {
		s->in_batch = 1;
		s->batch_start_ms = mono_ms();
	}
	store_check(s, rm_store_begin(s->st), "begin");
}

/*
 * End the batch: the only place the store may write, so a committed
 * transaction never holds half of a Message.
 */
static void batch_commit(struct server *s)
{
	store_check(s, rm_store_commit(s->st), "commit");
	s->batch_messages = 0;
	s->in_batch = 0;
}

/* ---------------- sinks ---------------- */

/* An epoch changed or is retired: the store writes its latest state with the next transaction. */
static void rules_epoch(void *arg, struct rm_epoch *e)
{
	struct server *s = arg;

	store_check(s, rm_store_epoch(s->st, e), "epoch");
}

static void rules_drop(void *arg, uint64_t session_id, uint32_t domain, uint64_t epoch_id, const char *detail)
{
	struct server *s = arg;

	store_check(s, rm_store_drop(s->st, (int64_t)session_id, "epoch-admission", detail, now_ms()), "drop");
}

static void rules_log(void *arg, const char *line)
{
	logmsg("%s", line);
}

/* The store's own lines: database unavailable / writable again, recovery at start (rate-limited there). */
static void store_log(void *arg, const char *line)
{
	logmsg("%s", line);
}

static void dec_record(void *arg, uint32_t domain, uint16_t tid, const struct rm_report *r, const uint8_t *raw,
		       size_t len)
{
	struct conn *c = arg;
	char why[300];
	enum rm_verdict v;

	c->records++;
	v = rm_rules_record(c->rs, domain, r, c->now_ms, why, sizeof(why));
	if (rm_verdict_keeps_raw(v)) {
		size_t tl = 0;
		const uint8_t *t = rm_ipfix_template_bytes(c->dec, domain, tid, &tl);

		store_check(c->srv, rm_store_raw(c->srv->st, c->session_id, domain, tid, r, rm_verdict_name(v), why, raw,
						 len, t, tl, c->now_ms),
			    "raw record");
	}
}

static void dec_reject(void *arg, uint32_t domain, uint16_t tid, const uint8_t *raw, size_t len, const char *reason)
{
	struct conn *c = arg;
	size_t tl = 0;
	const uint8_t *t = tid ? rm_ipfix_template_bytes(c->dec, domain, tid, &tl) : NULL;

	c->rejected++;
	store_check(c->srv, rm_store_raw(c->srv->st, c->session_id, domain, tid, NULL, "undecodable", reason, raw, len,
					 t, tl, c->now_ms),
		    "raw record");
	if (c->rejected <= 10)
		logmsg("session %" PRId64 ": rejected: %s", c->session_id, reason);
	else if (c->rejected == 11)
		logmsg("session %" PRId64 ": more rejections (counted, kept raw up to max_raw_records)", c->session_id);
}

static void dec_note(void *arg, uint32_t domain, const char *msg)
{
	struct conn *c = arg;

	logmsg("session %" PRId64 " domain %u: %s", c->session_id, domain, msg);
}

static const struct rm_ipfix_sink dec_sink = { dec_record, dec_reject, dec_note };

/* ---------------- sessions ---------------- */

static void end_session(struct conn *c, const char *reason)
{
	struct server *s = c->srv;
	uint64_t t = now_ms();
	char er[400];
	struct rm_session_counts cnt = {
		.messages = c->messages, .records = c->records, .octets = c->octets, .rejected = c->rejected
	};

	if (c->closing)
		return;
	c->closing = 1;
	snprintf(er, sizeof(er), "session ended: %s", reason);
	batch_begin(s);
	if (c->dec) {
		const struct rm_ipfix_counts *h = rm_ipfix_counts(c->dec);

		cnt.seq_gaps = h->seq_gaps;
		cnt.seq_missing = h->seq_missing;
		cnt.time_backwards = h->time_backwards;
	}
	if (c->rs) {
		cnt.verdicts = rm_rules_verdict_counts(c->rs);
		/* The counts are read before close frees them. */
		store_check(s, rm_store_session_end(s->st, c->session_id, reason, t, &cnt), "session end");
		rm_rules_session_close(c->rs, er, t);
		c->rs = NULL;
	} else {
		store_check(s, rm_store_session_end(s->st, c->session_id, reason, t, &cnt), "session end");
	}
	batch_commit(s);
	store_check(s, rm_store_flush(s->st), "commit"); /* a session's end and its epochs' outcomes: at once */
	logmsg("session %" PRId64 " from %s ended: %s (%" PRIu64 " messages, %" PRIu64 " records, %" PRIu64
	       " rejected)",
	       c->session_id, c->peer, reason, c->messages, c->records, c->rejected);
	if (c->ssl && !c->handshaking)
		SSL_shutdown(c->ssl); /* best effort, non-blocking */
}

static void free_conn(struct conn *c)
{
	if (c->ssl)
		SSL_free(c->ssl);
	if (c->fd >= 0)
		close(c->fd);
	rm_ipfix_session_free(c->dec);
	free(c->buf);
	free(c);
}

/* Decode every complete Message in the buffer; 0, or -1 if the session ended. */
static int process_buffer(struct conn *c)
{
	struct server *s = c->srv;
	size_t off = 0;
	char err[300];

	for (;;) {
		long m = rm_ipfix_frame(c->buf + off, c->len - off, err, sizeof(err));

		if (m < 0) {
			char r[400];

			snprintf(r, sizeof(r), "IPFIX framing error after %" PRIu64 " messages: %s", c->messages, err);
			end_session(c, r);
			return -1;
		}
		if (m == 0)
			break;
		c->now_ms = now_ms();
		c->messages++;
		c->octets += (uint64_t)m;
		batch_begin(s);
		int rc = rm_ipfix_message(c->dec, c->buf + off, (size_t)m, &dec_sink, c, err, sizeof(err));

		rm_rules_flush(c->rs);
		s->batch_messages++;
		if (rc < 0) {
			end_session(c, err); /* commits the batch with this Message */
			return -1;
		}
		off += (size_t)m;
		if (s->batch_messages >= BATCH_MAX_MESSAGES || mono_ms() - s->batch_start_ms >= BATCH_MAX_MS)
			batch_commit(s);
	}
	if (off) {
		memmove(c->buf, c->buf + off, c->len - off);
		c->len -= off;
	}
	return 0;
}

static void eof_reason(struct conn *c, const char *how, char *buf, size_t len)
{
	if (c->len == 0) {
		snprintf(buf, len, "%s", how);
	} else if (c->len < 4) {
		snprintf(buf, len, "truncated IPFIX message: %s after %zu octets of a message header", how, c->len);
	} else {
		snprintf(buf, len, "truncated IPFIX message: %s after %zu of %u octets", how, c->len,
			 (unsigned)(c->buf[2] << 8 | c->buf[3]));
	}
}

static int authorise(struct conn *c)
{
	struct server *s = c->srv;
	char err[512], subj[256];

	if (rm_tls_authorize_peer(c->ssl, &s->cs->tls, err, sizeof(err)) < 0) {
		char r[600];

		snprintf(r, sizeof(r), "peer not authorised: %s", err);
		end_session(c, r);
		return -1;
	}
	rm_tls_peer_subject(c->ssl, subj, sizeof(subj));
	store_check(s, rm_store_session_peer(s->st, c->session_id, subj), "session peer");
	logmsg("session %" PRId64 " from %s: TLS 1.3 peer %s authorised", c->session_id, c->peer, subj);
	return 0;
}

static void on_readable(struct conn *c)
{
	char r[600], e[400];

	c->want_write = 0;
	if (c->ssl && c->handshaking) {
		int rc = SSL_accept(c->ssl);

		if (rc == 1) {
			c->handshaking = 0;
			if (authorise(c) < 0)
				return;
		} else {
			int err = SSL_get_error(c->ssl, rc);

			if (err == SSL_ERROR_WANT_READ)
				return;
			if (err == SSL_ERROR_WANT_WRITE) {
				c->want_write = 1;
				return;
			}
			snprintf(r, sizeof(r), "TLS handshake failed: %s",
				 rm_tls_errors(err == SSL_ERROR_SYSCALL ? "connection closed" : "", e, sizeof(e)));
			end_session(c, r);
			return;
		}
	}
	for (;;) {
		ssize_t n;

		if (c->ssl) {
			n = SSL_read(c->ssl, c->buf + c->len, (int)(BUF_CAP - c->len));
			if (n <= 0) {
				int err = SSL_get_error(c->ssl, (int)n);

				if (err == SSL_ERROR_WANT_READ)
					return;
				if (err == SSL_ERROR_WANT_WRITE) {
					c->want_write = 1;
					return;
				}
				if (err == SSL_ERROR_ZERO_RETURN) {
					eof_reason(c, "peer closed the session", r, sizeof(r));
				} else {
					char how[500];

					snprintf(how, sizeof(how), "session failed (%s)",
						 rm_tls_errors(err == SSL_ERROR_SYSCALL ? "connection lost" : "TLS error", e,
							       sizeof(e)));
					eof_reason(c, how, r, sizeof(r));
				}
				end_session(c, r);
				return;
			}
		} else {
			n = recv(c->fd, c->buf + c->len, BUF_CAP - c->len, 0);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
					return;
				snprintf(e, sizeof(e), "session failed (%s)", strerror(errno));
				eof_reason(c, e, r, sizeof(r));
				end_session(c, r);
				return;
			}
			if (n == 0) {
				eof_reason(c, "peer closed the connection", r, sizeof(r));
				end_session(c, r);
				return;
			}
		}
		c->len += (size_t)n;
		if (process_buffer(c) < 0)
			return;
	}
}

/* ---------------- listening ---------------- */

static int split_listen(const char *listen, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon;

	if (listen[0] == '[') {
		const char *end = strchr(listen, ']');

		if (!end || end[1] != ':')
			return -1;
		snprintf(host, hlen, "%.*s", (int)(end - listen - 1), listen + 1);
		colon = end + 1;
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			return -1;
		snprintf(host, hlen, "%.*s", (int)(colon - listen), listen);
	}
	snprintf(port, plen, "%s", colon + 1);
	return port[0] ? 0 : -1;
}

static int open_listener(const char *addr)
{
	char host[256], port[32];
	struct addrinfo hints = { 0 }, *res, *ai;
	int fd = -1, one = 1, zero = 0, rc;

	if (split_listen(addr, host, sizeof(host), port, sizeof(port)) < 0) {
		logmsg("listen address '%s' is not ADDR:PORT, [IPV6]:PORT or :PORT", addr);
		return -1;
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc) {
		logmsg("listen address '%s': %s", addr, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0)
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		logmsg("cannot listen on %s: %s", addr, strerror(errno));
	freeaddrinfo(res);
	return fd;
}

static void peer_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?", port[8] = "?";

	getnameinfo((const struct sockaddr *)ss, sizeof(*ss), host, sizeof(host), port, sizeof(port),
		    NI_NUMERICHOST | NI_NUMERICSERV);
	if (ss->ss_family == AF_INET6)
		snprintf(buf, len, "[%s]:%s", host, port);
	else
		snprintf(buf, len, "%s:%s", host, port);
}

static void on_accept(struct server *s)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		const char *transport = s->ctx ? "tls" : "tcp";
		char peer[INET6_ADDRSTRLEN + 8];
		int64_t id;
		struct conn *c;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
				logmsg("accept: %s", strerror(errno));
			return;
		}
		peer_text(&ss, peer, sizeof(peer));
		batch_begin(s);
		id = rm_store_session_start(s->st, s->run_id, peer, transport, now_ms());
		store_check(s, id < 0 ? -1 : 0, "session start");
		if (s->nconns >= s->cs->max_sessions || rm_rules_sessions(s->rules) >= s->cs->max_sessions) {
			char r[160];
			struct rm_session_counts cnt = { 0 };

			snprintf(r, sizeof(r), "refused: max_sessions %u sessions open", s->cs->max_sessions);
			store_check(s, rm_store_drop(s->st, id, "session-limit", r, now_ms()), "drop");
			store_check(s, rm_store_session_end(s->st, id, r, now_ms(), &cnt), "session end");
			batch_commit(s);
			logmsg("session %" PRId64 " from %s %s (collector resource drop)", id, peer, r);
			close(fd);
			continue;
		}
		batch_commit(s);
		c = calloc(1, sizeof(*c));
		struct conn **nc = realloc(s->conns, (s->nconns + 1) * sizeof(*nc));
		if (!c || !nc || !(c->buf = malloc(BUF_CAP)) || !(c->dec = rm_ipfix_session_new(s->pen)) ||
		    !(c->rs = rm_rules_session_open(s->rules, (uint64_t)id))) {
			logmsg("session %" PRId64 " from %s: out of memory", id, peer);
			if (nc)
				s->conns = nc;
			if (c) {
				c->fd = fd;
				free_conn(c);
			} else {
				close(fd);
			}
			continue;
		}
		s->conns = nc;
		c->srv = s;
		c->fd = fd;
		c->session_id = id;
		c->started_ms = now_ms();
		snprintf(c->peer, sizeof(c->peer), "%s", peer);
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (s->ctx) {
			c->ssl = SSL_new(s->ctx);
			if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
				logmsg("session %" PRId64 ": cannot set up TLS", id);
				rm_rules_session_close(c->rs, "session ended: TLS setup failed", now_ms());
				free_conn(c);
				continue;
			}
			SSL_set_accept_state(c->ssl);
			c->handshaking = 1;
		}
		s->conns[s->nconns++] = c;
		logmsg("session %" PRId64 " from %s started (%s)", id, peer,
		       s->ctx ? "TLS 1.3 handshake" : "plain TCP, unauthenticated");
	}
}

static void reap(struct server *s)
{
	size_t j = 0;

	for (size_t i = 0; i < s->nconns; i++) {
		if (s->conns[i]->closing)
			free_conn(s->conns[i]);
		else
			s->conns[j++] = s->conns[i];
	}
	s->nconns = j;
}

static void tick(struct server *s, uint64_t t)
{
	batch_begin(s);
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];

		if (c->closing)
			continue;
		if (c->handshaking && t - c->started_ms > HANDSHAKE_TIMEOUT_MS) {
			end_session(c, "TLS handshake timeout");
			continue;
		}
		if (c->rs) {
			rm_rules_tick(c->rs, t);
			rm_rules_flush(c->rs);
		}
	}
	batch_commit(s);
}

int rm_collector_run(const struct rm_collect_settings *cs, uint32_t pen, volatile sig_atomic_t *stop)
{
	struct server srv = { .cs = cs, .pen = pen, .lfd = -1 };
	struct rm_rules_limits lim = { cs->max_sessions, cs->max_epochs, cs->inactivity_timeout_ms };
	struct rm_rules_sink rsink = { rules_epoch, rules_drop, rules_log };
	char err[512];
	struct pollfd *pfd = NULL;
	uint64_t last_tick = 0;
	int ret = 1;

	if (cs->tls.plain_tcp) {
		logmsg("WARNING: plain TCP transport: sessions are neither authenticated nor confidential "
		       "(seed 000 requires TLS 1.3 with mutual authentication)");
	} else {
		srv.ctx = rm_tls_server_ctx(&cs->tls, err, sizeof(err));
		if (!srv.ctx) {
			logmsg("TLS: %s", err);
			return 1;
		}
	}
	srv.st = rm_store_open(cs->db, 0, err, sizeof(err));
	if (!srv.st) {
		logmsg("database: %s", err);
		goto out;
	}
	rm_store_set_log(srv.st, store_log, NULL);
	srv.rules = rm_rules_new(&lim, &rsink, &srv);
	if (!srv.rules)
		goto out;
	srv.lfd = open_listener(cs->listen);
	if (srv.lfd < 0)
		goto out;
	srv.run_id = rm_store_run_start(srv.st, cs->listen, srv.ctx ? "tls" : "tcp", &lim, cs->max_raw_records, pen,
					now_ms());
	if (srv.run_id < 0) {
		logmsg("database: %s", rm_store_error(srv.st));
		goto out;
	}
	logmsg("listening on %s (%s), database %s; limits: max_sessions %u, max_epochs %u per session, "
	       "max_raw_records %u, inactivity_timeout_ms %" PRIu64 ", %u Templates and %u Observation Domains "
	       "per session; PEN %u",
	       cs->listen, srv.ctx ? "TLS 1.3, mutual authentication" : "plain TCP", cs->db, cs->max_sessions,
	       cs->max_epochs, cs->max_raw_records, cs->inactivity_timeout_ms, RM_IPFIX_MAX_TEMPLATES,
	       RM_RULES_MAX_DOMAINS, pen);

	while (!*stop) {
		size_t n = srv.nconns + 1;
		struct pollfd *np = realloc(pfd, n * sizeof(*np));

		if (!np) {
			logmsg("out of memory");
			break;
		}
		pfd = np;
		pfd[0].fd = srv.lfd;
		pfd[0].events = POLLIN;
		for (size_t i = 0; i < srv.nconns; i++) {
			pfd[i + 1].fd = srv.conns[i]->fd;
			pfd[i + 1].events = (short)(POLLIN | (srv.conns[i]->want_write ? POLLOUT : 0));
			pfd[i + 1].revents = 0;
		}
		int rc = poll(pfd, n, 1000);

		if (rc < 0 && errno != EINTR) {
			logmsg("poll: %s", strerror(errno));
			break;
		}
		if (rc > 0) {
			size_t nc = srv.nconns; /* accept() below may grow the array */

			for (size_t i = 0; i < nc; i++)
				if (pfd[i + 1].revents)
					on_readable(srv.conns[i]);
			batch_commit(&srv); /* the round's Messages, before poll() blocks */
			if (pfd[0].revents & POLLIN)
				on_accept(&srv);
		}
		uint64_t t = now_ms();

		if (t - last_tick >= 1000) {
			tick(&srv, t);
			last_tick = t;
		}
		reap(&srv);
	}
	ret = 0;
	for (size_t i = 0; i < srv.nconns; i++)
		end_session(srv.conns[i], "collector shutdown");
	reap(&srv);
	rm_store_run_stop(srv.st, srv.run_id, now_ms());
	logmsg("stopped");
out:
	free(pfd);
	free(srv.conns);
	if (srv.lfd >= 0)
		close(srv.lfd);
	if (srv.rules)
		rm_rules_free(srv.rules);
	rm_store_close(srv.st);
	if (srv.ctx)
		SSL_CTX_free(srv.ctx);
	return ret;
}

/* ---------------- the subcommand ---------------- */

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = 1;
}

static void collect_usage(FILE *f)
{
	fprintf(f,
		"Usage: rocemeter collect --db FILE [--listen ADDR:PORT] [OPTIONS]\n"
		"\n"
		"Receive IPFIX reports of RoCEv2 sequence observations (seed 000) from one or\n"
		"more exporters, validate them and store epoch outcomes in SQLite. Every TCP\n"
		"connection is its own Transport Session. Stops cleanly on SIGINT/SIGTERM:\n"
		"open epochs are retired as incomplete.\n"
		"\n"
		"Options (they override the [collect] section of --config):\n"
		"  -l, --listen ADDR:PORT     address to listen on, e.g. 127.0.0.1:4740,\n"
		"                             [::1]:4740, :4740 (default [::]:4740)\n"
		"  -d, --db FILE              SQLite database (created when missing)\n"
		"  -c, --config FILE          configuration file (INI), section [collect]\n"
		"      --cert FILE            own certificate chain, PEM\n"
		"      --key FILE             own private key, PEM\n"
		"      --ca FILE              CA certificates that sign exporter certificates\n"
		"      --peer-name NAME       authorised exporter name (DNS SAN or CN);\n"
		"                             repeat for several exporters\n"
		"      --plain-tcp            no TLS (unauthenticated, not confidential: tests only)\n"
		"      --max-sessions N       open Transport Sessions (default 64)\n"
		"      --max-epochs N         retained epochs per session (default 100000)\n"
		"      --max-raw-records N    raw records kept in the database (default 100000)\n"
		"      --inactivity-timeout-ms MS  retire an epoch without reports for MS\n"
		"                             (default 600000; 0 = never)\n"
		"      --pen N                Private Enterprise Number of the profile's\n"
		"                             enterprise-specific IEs (default 32473)\n"
		"  -h, --help                 this help\n"
		"\n"
		"Limits are logged at startup and shown by 'rocemeter report --limits'.\n"
		"Refusals because of a limit are stored as collector resource drops.\n");
}

static int parse_uint(const char *opt, const char *v, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 0);
	if (!*v || *v == '-' || *end || errno || x > max) {
		fprintf(stderr, "rocemeter collect: %s: '%s' is not a number in 0..%" PRIu64 "\n", opt, v, max);
		return -1;
	}
	*out = x;
	return 0;
}

static struct rm_config_file cfg_file; /* large: static */

static int cmd_collect(int argc, char **argv)
{
	enum { O_CERT = 256, O_KEY, O_CA, O_PEER, O_PLAIN, O_MAXS, O_MAXE, O_MAXR, O_INACT, O_PEN };
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' }, { "db", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' }, { "cert", required_argument, NULL, O_CERT },
		{ "key", required_argument, NULL, O_KEY }, { "ca", required_argument, NULL, O_CA },
		{ "peer-name", required_argument, NULL, O_PEER }, { "plain-tcp", no_argument, NULL, O_PLAIN },
		{ "max-sessions", required_argument, NULL, O_MAXS }, { "max-epochs", required_argument, NULL, O_MAXE },
		{ "max-raw-records", required_argument, NULL, O_MAXR },
		{ "inactivity-timeout-ms", required_argument, NULL, O_INACT }, { "pen", required_argument, NULL, O_PEN },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct rm_collect_settings *cs = &cfg_file.collect;
	const char *config = NULL;
	char err[512];
	uint64_t v, pen = RM_IPFIX_DEFAULT_PEN;
	int o, n_peer_cli = 0;

	/* First pass: --config and --help, so that command-line options override the file. */
	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "l:d:c:h", opts, NULL)) != -1) {
		if (o == 'c')
			config = optarg;
		else if (o == 'h') {
			collect_usage(stdout);
			return RM_EXIT_OK;
		}
	}
	rm_config_defaults(&cfg_file);
	if (config && rm_config_load(config, &cfg_file, err, sizeof(err)) < 0) {
		fprintf(stderr, "rocemeter collect: %s\n", err);
		return RM_EXIT_USAGE;
	}
	optind = 1;
	opterr = 1;
	while ((o = getopt_long(argc, argv, "l:d:c:h", opts, NULL)) != -1) {
		switch (o) {
		case 'l': snprintf(cs->listen, sizeof(cs->listen), "%s", optarg); break;
		case 'd': snprintf(cs->db, sizeof(cs->db), "%s", optarg); break;
		case 'c': break;
		case O_CERT: snprintf(cs->tls.cert, sizeof(cs->tls.cert), "%s", optarg); break;
		case O_KEY: snprintf(cs->tls.key, sizeof(cs->tls.key), "%s", optarg); break;
		case O_CA: snprintf(cs->tls.ca, sizeof(cs->tls.ca), "%s", optarg); break;
		case O_PEER:
			if (n_peer_cli == 0)
				cs->tls.n_peer_names = 0; /* the command line replaces the file's list */
			if (cs->tls.n_peer_names >= RM_MAX_PEER_NAMES) {
				fprintf(stderr, "rocemeter collect: at most %d --peer-name\n", RM_MAX_PEER_NAMES);
				return RM_EXIT_USAGE;
			}
			snprintf(cs->tls.peer_names[cs->tls.n_peer_names++], sizeof(cs->tls.peer_names[0]), "%s",
				 optarg);
			n_peer_cli++;
			break;
		case O_PLAIN: cs->tls.plain_tcp = 1; break;
		case O_MAXS:
			if (parse_uint("--max-sessions", optarg, 65536, &v) < 0 || v == 0)
				return RM_EXIT_USAGE;
			cs->max_sessions = (uint32_t)v;
			break;
		case O_MAXE:
			if (parse_uint("--max-epochs", optarg, 100000000, &v) < 0 || v == 0)
				return RM_EXIT_USAGE;
			cs->max_epochs = (uint32_t)v;
			break;
		case O_MAXR:
			if (parse_uint("--max-raw-records", optarg, 100000000, &v) < 0)
				return RM_EXIT_USAGE;
			cs->max_raw_records = (uint32_t)v;
			break;
		case O_INACT:
			if (parse_uint("--inactivity-timeout-ms", optarg, 86400000ULL * 365, &v) < 0)
				return RM_EXIT_USAGE;
			cs->inactivity_timeout_ms = v;
			break;
		case O_PEN:
			if (parse_uint("--pen", optarg, UINT32_MAX, &pen) < 0 || pen == 0)
				return RM_EXIT_USAGE;
			break;
		default:
			collect_usage(stderr);
			return RM_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rocemeter collect: unexpected argument '%s'\n", argv[optind]);
		return RM_EXIT_USAGE;
	}
	if (!cs->db[0]) {
		fprintf(stderr, "rocemeter collect: --db FILE is required\n");
		collect_usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (!cs->tls.plain_tcp && (!cs->tls.cert[0] || !cs->tls.key[0] || !cs->tls.ca[0] || !cs->tls.n_peer_names)) {
		fprintf(stderr, "rocemeter collect: TLS needs --cert, --key, --ca and at least one --peer-name "
				"(or [collect] in --config); --plain-tcp disables TLS\n");
		return RM_EXIT_USAGE;
	}

	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	stop_flag = 0;
	return rm_collector_run(cs, (uint32_t)pen, &stop_flag) ? RM_EXIT_FAIL : RM_EXIT_OK;
}

RM_COMMAND(collect, 60, "receive IPFIX reports over TLS 1.3, validate, store in SQLite", cmd_collect);
