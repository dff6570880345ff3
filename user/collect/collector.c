// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * collector.c - the server of `rocemeter collect` (cmd_collect.c): TLS/TCP,
 * one poll() loop, each connection one IPFIX Transport Session. See
 * collector.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "collector.h"
#include "collector_rules.h"
#include "common/log.h"
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
	 * The open batch (in_batch: a transaction is open): Messages processed
	 * since the last commit, when the batch began (CLOCK_MONOTONIC ms), and the epochs with a row
	 * already whose latest state is written once, just before the commit
	 * (struct rm_epoch * set; a retired epoch is written at once and leaves).
	 */
	int in_batch;
	uint32_t batch_messages;
	uint64_t batch_start_ms;
	GHashTable *pending;
};

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
		rm_log(RM_LOG_ERR, "database error (%s): %s", what, rm_store_error(s->st));
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
 * Write the latest state of every pending epoch, then commit: the only way
 * the collector commits, so a committed transaction never holds half of a
 * Message (an epoch row behind the raw records or drops of its Messages).
 */
static void batch_commit(struct server *s)
{
	GHashTableIter it;
	gpointer e;

	g_hash_table_iter_init(&it, s->pending);
	while (g_hash_table_iter_next(&it, &e, NULL))
		store_check(s, rm_store_epoch(s->st, e), "epoch");
	g_hash_table_remove_all(s->pending);
	store_check(s, rm_store_commit(s->st), "commit");
	s->batch_messages = 0;
	s->in_batch = 0;
}

/* ---------------- sinks ---------------- */

/*
 * An epoch changed or is retired. A new epoch gets its rows at once (row IDs
 * keep the order of the flushes); a changed one only joins the pending set,
 * written at the commit; a retired one is written now (it is freed next).
 */
static void rules_epoch(void *arg, struct rm_epoch *e)
{
	struct server *s = arg;

	if (e->store_id && !e->retired_ms) {
		g_hash_table_add(s->pending, e);
		return;
	}
	if (e->retired_ms)
		g_hash_table_remove(s->pending, e);
	store_check(s, rm_store_epoch(s->st, e), "epoch");
}

static void rules_drop(void *arg, uint64_t session_id, uint32_t domain, uint64_t epoch_id, const char *detail)
{
	struct server *s = arg;

	store_check(s, rm_store_drop(s->st, (int64_t)session_id, "epoch-admission", detail, now_ms()), "drop");
}

static void rules_log(void *arg, const char *line)
{
	unsigned long long session, epoch;
	unsigned int domain;
	char sid[24], eid[24];
	struct rm_log_field f[] = { { "SESSION", sid }, { "EPOCH_ID", eid } };
	int n = sscanf(line, "session %llu domain %u epoch %llu", &session, &domain, &epoch);

	/* The rules name the session and epoch in words; journald gets them as fields too. */
	snprintf(sid, sizeof(sid), "%llu", n >= 1 ? session : 0);
	snprintf(eid, sizeof(eid), "%llu", n == 3 ? epoch : 0);
	rm_log_fields(RM_LOG_NOTICE, f, n == 3 ? 2 : n >= 1 ? 1 : 0, "%s", line);
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
		rm_log(RM_LOG_WARNING, "session %" PRId64 ": rejected: %s", c->session_id, reason);
	else if (c->rejected == 11)
		rm_log(RM_LOG_WARNING, "session %" PRId64 ": more rejections (counted, kept raw up to max_raw_records)", c->session_id);
}

static void dec_note(void *arg, uint32_t domain, const char *msg)
{
	struct conn *c = arg;

	rm_log(RM_LOG_NOTICE, "session %" PRId64 " domain %u: %s", c->session_id, domain, msg);
}

static const struct rm_ipfix_sink dec_sink = { dec_record, dec_reject, dec_note };

/* ---------------- sessions ---------------- */

static void end_session(struct conn *c, const char *reason)
{
	struct server *s = c->srv;
	uint64_t t = now_ms();
	char er[400];
	struct rm_session_counts cnt = { c->messages, c->records, c->octets, c->rejected, NULL };

	if (c->closing)
		return;
	c->closing = 1;
	snprintf(er, sizeof(er), "session ended: %s", reason);
	batch_begin(s);
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
	{
		char sid[24];
		struct rm_log_field f[] = { { "SESSION", sid }, { "PEER", c->peer } };

		snprintf(sid, sizeof(sid), "%" PRId64, c->session_id);
		rm_log_fields(RM_LOG_NOTICE, f, 2,
			      "session %" PRId64 " from %s ended: %s (%" PRIu64 " messages, %" PRIu64
			      " records, %" PRIu64 " rejected)",
			      c->session_id, c->peer, reason, c->messages, c->records, c->rejected);
	}
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
	{
		char sid[24];
		struct rm_log_field f[] = { { "SESSION", sid }, { "PEER", c->peer } };

		snprintf(sid, sizeof(sid), "%" PRId64, c->session_id);
		rm_log_fields(RM_LOG_NOTICE, f, 2, "session %" PRId64 " from %s: TLS 1.3 peer %s authorised",
			      c->session_id, c->peer, subj);
	}
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
			if (rm_tls_name_mismatch(c->ssl, e, sizeof(e))) {
				ERR_clear_error(); /* the queue says "certificate verify failed"; the names say why */
				snprintf(r, sizeof(r), "TLS handshake failed: exporter not authorised: %s", e);
			} else
				snprintf(r, sizeof(r), "TLS handshake failed: %s",
					 rm_tls_errors(err == SSL_ERROR_SYSCALL ? "connection closed" : "", e,
						       sizeof(e)));
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
		rm_log(RM_LOG_ERR, "listen address '%s' is not ADDR:PORT, [IPV6]:PORT or :PORT", addr);
		return -1;
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc) {
		rm_log(RM_LOG_ERR, "listen address '%s': %s", addr, gai_strerror(rc));
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
		rm_log(RM_LOG_ERR, "cannot listen on %s: %s", addr, strerror(errno));
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
				rm_log(RM_LOG_ERR, "accept: %s", strerror(errno));
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
			rm_log(RM_LOG_WARNING, "session %" PRId64 " from %s %s (collector resource drop)", id, peer, r);
			close(fd);
			continue;
		}
		batch_commit(s);
		c = calloc(1, sizeof(*c));
		struct conn **nc = realloc(s->conns, (s->nconns + 1) * sizeof(*nc));
		if (!c || !nc || !(c->buf = malloc(BUF_CAP)) || !(c->dec = rm_ipfix_session_new(s->pen)) ||
		    !(c->rs = rm_rules_session_open(s->rules, (uint64_t)id))) {
			rm_log(RM_LOG_ERR, "session %" PRId64 " from %s: out of memory", id, peer);
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
				rm_log(RM_LOG_ERR, "session %" PRId64 ": cannot set up TLS", id);
				rm_rules_session_close(c->rs, "session ended: TLS setup failed", now_ms());
				free_conn(c);
				continue;
			}
			SSL_set_accept_state(c->ssl);
			c->handshaking = 1;
		}
		s->conns[s->nconns++] = c;
		{
			char sid[24];
			struct rm_log_field f[] = { { "SESSION", sid }, { "PEER", peer } };

			snprintf(sid, sizeof(sid), "%" PRId64, id);
			rm_log_fields(RM_LOG_NOTICE, f, 2, "session %" PRId64 " from %s started (%s)", id, peer,
				      s->ctx ? "TLS 1.3 handshake" : "plain TCP, unauthenticated");
		}
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
		rm_log(RM_LOG_WARNING, "WARNING: plain TCP transport: sessions are neither authenticated nor confidential "
		       "(the RoCEv2 sequence observation profile requires TLS 1.3 with mutual authentication)");
	} else {
		srv.ctx = rm_tls_server_ctx(&cs->tls, err, sizeof(err));
		if (!srv.ctx) {
			rm_log(RM_LOG_ERR, "TLS: %s", err);
			return 1;
		}
	}
	srv.st = rm_store_open(cs->db, 0, err, sizeof(err));
	if (!srv.st) {
		rm_log(RM_LOG_ERR, "database: %s", err);
		goto out;
	}
	srv.rules = rm_rules_new(&lim, &rsink, &srv);
	srv.pending = g_hash_table_new(g_direct_hash, g_direct_equal);
	if (!srv.rules)
		goto out;
	srv.lfd = open_listener(cs->listen);
	if (srv.lfd < 0)
		goto out;
	srv.run_id = rm_store_run_start(srv.st, cs->listen, srv.ctx ? "tls" : "tcp", &lim, cs->max_raw_records, pen,
					now_ms());
	if (srv.run_id < 0) {
		rm_log(RM_LOG_ERR, "database: %s", rm_store_error(srv.st));
		goto out;
	}
	rm_log(RM_LOG_NOTICE, "listening on %s (%s), database %s; limits: max_sessions %u, max_epochs %u per session, "
	       "max_raw_records %u, inactivity_timeout_ms %" PRIu64 ", %u Templates and %u Observation Domains "
	       "per session; PEN %u",
	       cs->listen, srv.ctx ? "TLS 1.3, mutual authentication" : "plain TCP", cs->db, cs->max_sessions,
	       cs->max_epochs, cs->max_raw_records, cs->inactivity_timeout_ms, RM_IPFIX_MAX_TEMPLATES,
	       RM_RULES_MAX_DOMAINS, pen);
	sd_notify(0, "READY=1"); /* rocemeter-collect.service is Type=notify: listening now */

	while (!*stop) {
		size_t n = srv.nconns + 1;
		struct pollfd *np = realloc(pfd, n * sizeof(*np));

		if (!np) {
			rm_log(RM_LOG_ERR, "out of memory");
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
			rm_log(RM_LOG_ERR, "poll: %s", strerror(errno));
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
	sd_notify(0, "STOPPING=1");
	for (size_t i = 0; i < srv.nconns; i++)
		end_session(srv.conns[i], "collector shutdown");
	reap(&srv);
	rm_store_run_stop(srv.st, srv.run_id, now_ms());
	rm_log(RM_LOG_NOTICE, "stopped");
out:
	free(pfd);
	free(srv.conns);
	if (srv.lfd >= 0)
		close(srv.lfd);
	if (srv.rules)
		rm_rules_free(srv.rules);
	if (srv.pending)
		g_hash_table_destroy(srv.pending);
	rm_store_close(srv.st);
	if (srv.ctx)
		SSL_CTX_free(srv.ctx);
	return ret;
}
