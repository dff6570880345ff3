// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * accept.c - the collector's connections before they are Transport Sessions
 * (collector_int.h): the listening socket, accept(), the handshake pool
 * (max_handshakes, per source, eviction), the TLS handshake and the peer's
 * authorisation. The connections it refuses are counted by refusals.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector_int.h"
#include "common/log.h"

/*
 * Connections accepted per loop turn (docs/collector.md "Fairness and
 * shutdown"): a turn is bounded, so SIGTERM is seen after at most one.
 */
#define TURN_ACCEPTS 64

/* A connection in the handshake: go on with it; authorised and admitted, it reads at once. */
void rm_accept_handshake(struct conn *c)
{
	struct rm_collector *s = c->srv;
	char r[600], e[400];
	int rc, err;
	long vr;

	c->want_write = 0;
	ERR_clear_error();
	rc = SSL_accept(c->ssl);
	if (!SSL_in_before(c->ssl))
		c->heard = 1;
	if (rc == 1) {
		c->handshaking = 0;
		s->handshakes--;
		c->tls_up = 1;
		if (rm_tls_authorize_peer(c->ssl, &s->cs->tls, e, sizeof(e)) < 0) {
			snprintf(r, sizeof(r), "peer not authorised: %s", e);
			rm_refusals_add(c, CO_NOT_AUTHORISED, r);
			return;
		}
		if (rm_session_admit(c) == 0)
			rm_session_data(c);
		return;
	}
	err = SSL_get_error(c->ssl, rc);
	if (err == SSL_ERROR_WANT_READ)
		return;
	if (err == SSL_ERROR_WANT_WRITE) {
		c->want_write = 1;
		return;
	}
	if (rm_tls_name_mismatch(c->ssl, e, sizeof(e))) {
		/* A valid chain whose names are not authorised: the error queue says only
		 * "certificate verify failed"; the names say why. */
		ERR_clear_error();
		snprintf(r, sizeof(r), "TLS handshake failed: exporter not authorised: %s", e);
		rm_refusals_add(c, CO_NOT_AUTHORISED, r);
		return;
	}
	vr = SSL_get_verify_result(c->ssl);
	if (vr != X509_V_OK) {
		/* The error queue says only "certificate verify failed"; the verification says why. */
		ERR_clear_error();
		snprintf(r, sizeof(r), "TLS handshake failed: exporter certificate refused: %s",
			 X509_verify_cert_error_string(vr));
	} else {
		snprintf(r, sizeof(r), "TLS handshake failed: %s",
			 rm_tls_errors(err == SSL_ERROR_SYSCALL ? "connection closed" : "", e, sizeof(e)));
	}
	rm_refusals_add(c, CO_HANDSHAKE_FAILED, r);
}

/* ---------------- listening and accepting ---------------- */

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

/*
 * Listen on addr. defer_s > 0: TCP_DEFER_ACCEPT, the kernel hands over a
 * connection only once its first octets arrive (or after defer_s): a TLS
 * client speaks first, so connections that send nothing stay in the
 * kernel's SYN queue instead of taking handshake slots.
 */
int rm_accept_listen(const char *addr, int defer_s)
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
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) {
			if (defer_s > 0)
				setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof(defer_s));
			break;
		}
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		rm_log(RM_LOG_ERR, "cannot listen on %s: %s", addr, strerror(errno));
	freeaddrinfo(res);
	return fd;
}

/* "ADDR:PORT" or "[ADDR]:PORT" into peer, ADDR alone into source. */
static void peer_text(const struct sockaddr_storage *ss, char *peer, size_t plen, char *source, size_t slen)
{
	char host[INET6_ADDRSTRLEN] = "?", port[8] = "?";

	getnameinfo((const struct sockaddr *)ss, sizeof(*ss), host, sizeof(host), port, sizeof(port),
		    NI_NUMERICHOST | NI_NUMERICSERV);
	if (ss->ss_family == AF_INET6)
		snprintf(peer, plen, "[%s]:%s", host, port);
	else
		snprintf(peer, plen, "%s:%s", host, port);
	snprintf(source, slen, "%s", host);
}

/*
 * Dead peers (docs/collector.md "Dead and frozen sessions"): keepalive
 * probes after T/2 of silence, then every T/8, and TCP_USER_TIMEOUT T, so
 * the kernel resets a connection unacknowledged for T. Seconds for the
 * keepalive times, at least one.
 */
static void set_socket_options(int fd, uint64_t dead_peer_ms)
{
	int one = 1, idle = (int)((dead_peer_ms / 2 + 999) / 1000), intvl = (int)(dead_peer_ms / 8 / 1000), cnt = 4;
	unsigned int user_timeout = (unsigned int)dead_peer_ms;

	if (intvl < 1)
		intvl = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

/* A handshake has received an octet (possibly still unread in the socket). */
static int heard(struct conn *c)
{
	char b;

	if (!c->heard && recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
		c->heard = 1;
	return c->heard;
}

/*
 * The handshake a new connection evicts, among those from source (NULL:
 * all): the oldest that has not sent an octet, else the oldest. An
 * exporter's ClientHello follows its connect() at once, so idle
 * connections go first and an exporter's handshake survives a flood of them.
 */
static struct conn *victim(struct rm_collector *s, const char *source)
{
	struct conn *oldest = NULL;

	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];

		if (!c->handshaking || c->closing || (source && strcmp(c->source, source)))
			continue;
		if (!heard(c))
			return c; /* conns are in accept order: the first is the oldest */
		if (!oldest)
			oldest = c;
	}
	return oldest;
}

static uint32_t handshakes_from(struct rm_collector *s, const char *source)
{
	uint32_t n = 0;

	for (size_t i = 0; i < s->nconns; i++)
		n += s->conns[i]->handshaking && !s->conns[i]->closing && !strcmp(s->conns[i]->source, source);
	return n;
}

/* Make room in the handshake pool for a connection from source. */
static void handshake_room(struct rm_collector *s, const char *source)
{
	const struct rm_collect_settings *cs = s->cs;
	char d[200];
	struct conn *v;

	if (handshakes_from(s, source) >= cs->max_handshakes_per_source && (v = victim(s, source))) {
		snprintf(d, sizeof(d), "evicted by a newer connection from %s (max_handshakes_per_source %u)", source,
			 cs->max_handshakes_per_source);
		rm_refusals_add(v, CO_HANDSHAKE_EVICTED, d);
	}
	if (s->handshakes >= cs->max_handshakes && (v = victim(s, NULL))) {
		snprintf(d, sizeof(d), "evicted by a newer connection (max_handshakes %u)", cs->max_handshakes);
		rm_refusals_add(v, CO_HANDSHAKE_EVICTED, d);
	}
}

/*
 * accept() failed for want of descriptors or memory (EMFILE, ENFILE,
 * ENOBUFS, ENOMEM): the pending connections stay in the listen queue, so
 * the listener would be readable at once again and the loop would spin.
 * It rests ACCEPT_BACKOFF_MIN_MS, doubling to ACCEPT_BACKOFF_MAX_MS while
 * it fails; counted, logged once a minute.
 */
#define ACCEPT_BACKOFF_MIN_MS 50
#define ACCEPT_BACKOFF_MAX_MS 1000
static void accept_failed(struct rm_collector *s, int err)
{
	uint64_t mono = rm_clock_mono_ms();

	s->accept_backoff_ms = !s->accept_backoff_ms                              ? ACCEPT_BACKOFF_MIN_MS
			       : s->accept_backoff_ms * 2 > ACCEPT_BACKOFF_MAX_MS ? ACCEPT_BACKOFF_MAX_MS
										  : s->accept_backoff_ms * 2;
	s->accept_resume_mono = mono + s->accept_backoff_ms;
	s->accept_failures++;
	if (!s->accept_logged_mono || mono - s->accept_logged_mono >= MINUTE_MS) {
		rm_log(RM_LOG_ERR,
		       "accept: %s (%" PRIu64 " failures so far); new connections wait in the listen queue, "
		       "accepted again after %u..%u ms%s",
		       strerror(err), s->accept_failures, ACCEPT_BACKOFF_MIN_MS, ACCEPT_BACKOFF_MAX_MS,
		       err == EMFILE ? ": raise the collector's open-file limit (LimitNOFILE=) above max_sessions "
				       "x 2 + max_handshakes"
				     : "");
		s->accept_logged_mono = mono;
	}
}

/*
 * Accept up to TURN_ACCEPTS connections. With TLS a connection joins the
 * handshake pool (no session yet); with plain TCP it is admitted at once.
 */
void rm_accept_conn(struct rm_collector *s)
{
	for (int k = 0; k < TURN_ACCEPTS; k++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c, **nc;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
				accept_failed(s, errno);
			return;
		}
		s->accept_backoff_ms = 0;
		c = calloc(1, sizeof(*c));
		nc = realloc(s->conns, (s->nconns + 1) * sizeof(*nc));
		if (nc)
			s->conns = nc;
		if (!c || !nc) {
			rm_log(RM_LOG_ERR, "accept: out of memory");
			free(c);
			close(fd);
			continue;
		}
		c->srv = s;
		c->fd = fd;
		c->jfd = -1;
		peer_text(&ss, c->peer, sizeof(c->peer), c->source, sizeof(c->source));
		c->started_ms = rm_clock_wall_ms();
		c->accepted_mono = rm_clock_mono_ms();
		set_socket_options(fd, s->cs->dead_peer_timeout_ms);
		if (!s->ctx) {
			s->conns[s->nconns++] = c;
			rm_session_admit(c);
			continue;
		}
		handshake_room(s, c->source);
		c->ssl = SSL_new(s->ctx);
		if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
			rm_log(RM_LOG_ERR, "connection from %s: cannot set up TLS", c->peer);
			rm_session_free(c);
			continue;
		}
		SSL_set_accept_state(c->ssl);
		c->handshaking = 1;
		s->handshakes++;
		s->conns[s->nconns++] = c;
		{
			struct rm_log_field f[] = { { "PEER", c->peer } };

			rm_log_fields(RM_LOG_INFO, f, 1, "connection from %s: TLS 1.3 handshake", c->peer);
		}
	}
}
