// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * export.c - IPFIX export transport thread (TCP + TLS 1.3); see export.h.
 *
 * Queue: a ring of s->queue_records reports allocated at start. Producers
 * (rm_exporter_submit) append at `tail` under the mutex; the thread encodes
 * straight from the slots in [head, tail) without holding the mutex (no
 * producer touches them) and advances `head` under the mutex once the
 * message is written. Ending a session empties the ring (head = tail).
 *
 * Records in flight: for every Data Message written, the thread remembers
 * where it ends in the TCP stream (octets handed to the kernel, TLS
 * records included) and how many records it carries, and forgets it once
 * the collector's kernel has acknowledged those octets (TCP_INFO
 * tcpi_bytes_acked, counted from the connection's establishment). When the
 * session dies, the records of the Messages not (entirely) acknowledged
 * are counted as lost_in_flight: the collector never received them whole.
 * What the collector's kernel did acknowledge of a session that died
 * (Messages, their records and octets) is reported in the next session,
 * right after its Templates, as Reliability Options Data Records
 * (rocemeter/ipfix_ie.h RM_TID_RELIABILITY): the collector counts what it
 * never read of it. A report stays pending until the Message that carries
 * it is acknowledged; at most RELIABILITY_PENDING wait (the oldest goes).
 *
 * Waiting: the thread sleeps in poll() on its socket and an eventfd. A
 * producer writes the eventfd only when the thread is idle-waiting for data;
 * stop always writes it. SIGPIPE and all other signals are blocked in the
 * thread (a write to a closed socket then fails with EPIPE instead).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/clock.h"
#include "common/errmsg.h"
#include "common/log.h"
#include "export.h"
#include "ipfix.h"
#include "common/tls.h"

#define BACKOFF_MIN_MS         100
#define BACKOFF_MAX_MS         30000
#define BACKOFF_RESET_AFTER_MS 10000 /* a session this long resets the backoff */
#define ESTABLISH_TIMEOUT_MS   10000 /* connect + handshake */
#define TCP_USER_TIMEOUT_MS    60000 /* unacknowledged data: the collector is gone */
#define RELIABILITY_PENDING    16    /* reports of dead sessions waiting for a session that delivers them */

struct rm_exporter {
	struct rm_export_settings s;
	int vlan_ns;
	SSL_CTX *ctx; /* NULL with transport = tcp */
	pthread_t thread;
	int wake_fd; /* eventfd */

	pthread_mutex_t mu;
	pthread_cond_t drained; /* head == tail */
	struct rm_report *ring;
	uint64_t cap, head, tail; /* producer: tail, consumer: head (indices, not wrapped) */
	uint64_t session;         /* current session number, 0 while none (atomic reads) */
	uint64_t session_count;   /* sessions established so far */
	int idle_waiting;         /* the thread sleeps until data arrives */
	int stopping;
	uint64_t stop_deadline_ms; /* monotonic */
	struct rm_export_stats stats;
	char last_error[1400];

	/* Thread-only state. */
	struct rm_ipfix_encoder enc;
	uint8_t *buf; /* one IPFIX Message */
	unsigned int seed;
	struct flight *flight; /* Messages written and not yet acknowledged, oldest first */
	size_t fl_first, fl_n, fl_cap;
	uint64_t s_messages, s_records, s_octets;              /* written in the current session */
	struct rm_ipfix_reliability pend[RELIABILITY_PENDING]; /* dead sessions not yet reported */
	size_t n_pend, pend_sent; /* pend_sent: the first ones, written in this session ... */
	uint64_t pend_end;        /* ... in the Message that ends here in the stream */
};

/* One connection: fd, and ssl unless plain TCP. */
struct conn {
	int fd;
	SSL *ssl;
	char peer[600];         /* "HOST port P (ADDR)" for messages */
	uint64_t written;       /* plain TCP: octets handed to the kernel */
	uint64_t acked_base;    /* tcpi_bytes_acked when the connection was established */
	uint8_t local_addr[16]; /* our end of the connection (IPv4-mapped for IPv4), network order */
	uint16_t local_port;
	uint64_t started_ms; /* UNIX ms: connected */
};

/* A Message in flight: where it ends in the TCP stream, its Data Records and its octets (IPFIX). */
struct flight {
	uint64_t end;
	uint64_t records;
	uint64_t octets;
};

/* IO_ABORT: stop deadline passed in the middle of a message (no close_notify). */
enum { IO_WAKE = 1, IO_OK = 0, IO_FAIL = -1, IO_STOP = -2, IO_ABORT = -3 };

/* Log a failure on stderr and keep it for rm_exporter_last_error(). */
static void fail_log(struct rm_exporter *x, const char *err)
{
	rm_log(RM_LOG_WARNING, "export: %s", err);
	pthread_mutex_lock(&x->mu);
	snprintf(x->last_error, sizeof(x->last_error), "%s", err);
	pthread_mutex_unlock(&x->mu);
}

static void drain_wake(struct rm_exporter *x)
{
	uint64_t v;

	while (read(x->wake_fd, &v, sizeof(v)) == sizeof(v))
		;
}

static void wake(struct rm_exporter *x)
{
	uint64_t one = 1;

	if (write(x->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is already nonzero, the thread will wake. */
	}
}

static int stopping(struct rm_exporter *x, uint64_t *deadline)
{
	int s;

	pthread_mutex_lock(&x->mu);
	s = x->stopping;
	if (deadline)
		*deadline = x->stop_deadline_ms;
	pthread_mutex_unlock(&x->mu);
	return s;
}

/*
 * Wait for `events` on fd until the absolute monotonic deadline (0: none).
 * While stopping, the stop deadline bounds the wait too; stop_now: return
 * IO_STOP as soon as a stop is requested (connection set-up, backoff).
 * Returns IO_OK when fd is ready, IO_WAKE when the eventfd fired and
 * on_wake is set (the caller re-checks its state), IO_FAIL on timeout (err
 * set), IO_STOP when stopping and past the stop deadline (or stop_now).
 */
static int wait_fd(struct rm_exporter *x, int fd, short events, uint64_t deadline, int stop_now, int on_wake,
		   const char *what, char *err, size_t errlen)
{
	for (;;) {
		struct pollfd p[2] = { { .fd = x->wake_fd, .events = POLLIN }, { .fd = fd, .events = events } };
		uint64_t stop_at, t = rm_clock_mono_ms(), end = deadline;
		int timeout, r;

		if (stopping(x, &stop_at)) {
			if (stop_now || t >= stop_at)
				return IO_STOP;
			if (!end || stop_at < end)
				end = stop_at;
		}
		if (end && t >= end) {
			rm_errf(err, errlen, "%s: timed out", what);
			return IO_FAIL;
		}
		timeout = end ? (int)(end - t) : -1;
		r = poll(p, fd >= 0 ? 2 : 1, timeout);
		if (r < 0 && errno != EINTR) {
			rm_errf(err, errlen, "%s: poll: %s", what, strerror(errno));
			return IO_FAIL;
		}
		if (r > 0 && fd >= 0 && p[1].revents)
			return IO_OK;
		if (r > 0 && (p[0].revents & POLLIN)) {
			drain_wake(x);
			if (on_wake)
				return IO_WAKE;
		}
	}
}

static void conn_close(struct conn *c, int graceful, struct rm_exporter *x)
{
	if (c->ssl) {
		if (graceful) {
			/* Send close_notify; do not wait for the peer's. */
			int r = SSL_shutdown(c->ssl);

			if (r < 0 && SSL_get_error(c->ssl, r) == SSL_ERROR_WANT_WRITE &&
			    wait_fd(x, c->fd, POLLOUT, rm_clock_mono_ms() + 1000, 0, 0, "close_notify", NULL, 0) ==
				    IO_OK)
				SSL_shutdown(c->ssl);
		}
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0) {
		if (graceful) {
			/*
			 * Closing with unread input (e.g. session tickets) would send an
			 * RST, and the collector could lose data it has not read yet: end
			 * our direction, then discard input until its FIN (bounded wait).
			 */
			uint64_t end = rm_clock_mono_ms() + 2000;
			char scratch[4096];

			shutdown(c->fd, SHUT_WR);
			while (wait_fd(x, c->fd, POLLIN, end, 0, 0, "close", NULL, 0) == IO_OK &&
			       recv(c->fd, scratch, sizeof(scratch), MSG_DONTWAIT) > 0)
				;
		}
		close(c->fd);
		c->fd = -1;
	}
}

/* Reason of a failed SSL call: the error queue, the verification result, errno. */
static void ssl_reason(SSL *ssl, int r, const char *what, char *err, size_t errlen)
{
	int e = SSL_get_error(ssl, r);
	long vr = SSL_get_verify_result(ssl);
	char q[512];
	size_t off;

	rm_tls_errors(what, q, sizeof(q));
	rm_errf(err, errlen, "%s", q);
	off = strlen(err);
	if (vr != X509_V_OK && off + 1 < errlen) {
		char subj[1400];

		/* A refused name: say which names the certificate carries and which are authorised. */
		if (vr == X509_V_ERR_HOSTNAME_MISMATCH && rm_tls_name_mismatch(ssl, subj, sizeof(subj)))
			rm_errf(err + off, errlen - off, "; %s: collector %s", X509_verify_cert_error_string(vr), subj);
		else {
			rm_tls_peer_subject(ssl, subj, sizeof(subj));
			rm_errf(err + off, errlen - off, "; collector certificate %s: %s", subj,
				X509_verify_cert_error_string(vr));
		}
		off = strlen(err);
	}
	if (off + 1 < errlen) {
		if (e == SSL_ERROR_SYSCALL)
			rm_errf(err + off, errlen - off, "; %s", errno ? strerror(errno) : "connection closed by peer");
		else if (e == SSL_ERROR_ZERO_RETURN)
			rm_errf(err + off, errlen - off, "; collector sent close_notify");
	}
}

/*
 * struct tcp_info of the kernel (include/uapi/linux/tcp.h) beyond the part
 * glibc's header declares (which ends with tcpi_total_retrans): the fields
 * up to tcpi_bytes_acked (Linux 4.1).
 */
struct tcp_info_acked {
	struct tcp_info base;
	uint64_t pacing_rate, max_pacing_rate;
	uint64_t bytes_acked;
};

/* Octets of the stream the peer's kernel acknowledged (SYN included). 0, or -1 if unknown. */
static int tcp_bytes_acked(int fd, uint64_t *acked)
{
	struct tcp_info_acked ti;
	socklen_t tl = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) < 0 || tl < sizeof(ti))
		return -1;
	*acked = ti.bytes_acked;
	return 0;
}

/* Octets handed to the kernel on this connection (with TLS: the socket BIO's, handshake included). */
static uint64_t conn_written(const struct conn *c)
{
	return c->ssl ? (uint64_t)BIO_number_written(SSL_get_wbio(c->ssl)) : c->written;
}

/* Octets of what this program wrote that the peer acknowledged; UINT64_MAX if unknown. */
static uint64_t conn_acked(const struct conn *c)
{
	uint64_t a;

	if (tcp_bytes_acked(c->fd, &a) < 0)
		return UINT64_MAX;
	return a - c->acked_base;
}

/* Forget the Messages the peer acknowledged entirely. */
static void flight_prune(struct rm_exporter *x, uint64_t acked)
{
	while (x->fl_n && x->flight[x->fl_first].end <= acked) {
		x->fl_first = (x->fl_first + 1) % x->fl_cap;
		x->fl_n--;
	}
}

/*
 * A Message of octets octets with records Data Records was written
 * entirely: counted in the session, then prune by what the peer acknowledged.
 */
static void flight_add(struct rm_exporter *x, const struct conn *c, uint64_t records, uint64_t octets)
{
	x->s_messages++;
	x->s_records += records;
	x->s_octets += octets;
	if (x->fl_n == x->fl_cap) {
		size_t cap = x->fl_cap ? x->fl_cap * 2 : 256;
		struct flight *f = malloc(cap * sizeof(*f));

		if (!f)
			return; /* not tracked: counted as delivered */
		for (size_t i = 0; i < x->fl_n; i++)
			f[i] = x->flight[(x->fl_first + i) % x->fl_cap];
		free(x->flight);
		x->flight = f;
		x->fl_cap = cap;
		x->fl_first = 0;
	}
	x->flight[(x->fl_first + x->fl_n) % x->fl_cap] = (struct flight){ conn_written(c), records, octets };
	x->fl_n++;
	flight_prune(x, conn_acked(c));
}

/*
 * The session ended: the records of the Messages the peer had not
 * acknowledged entirely. Forgets every Message. Returns the records and,
 * in *messages and *octets, their Messages and octets; *acked the octets
 * of the stream acknowledged (UINT64_MAX if unknown: nothing counted).
 */
static uint64_t flight_lost(struct rm_exporter *x, const struct conn *c, uint64_t *messages, uint64_t *octets,
			    uint64_t *acked)
{
	uint64_t lost = 0;

	*acked = conn_acked(c);
	*messages = *octets = 0;
	if (*acked != UINT64_MAX)
		flight_prune(x, *acked);
	for (size_t i = 0; *acked != UINT64_MAX && i < x->fl_n; i++) {
		const struct flight *f = &x->flight[(x->fl_first + i) % x->fl_cap];

		lost += f->records;
		*octets += f->octets;
		(*messages)++;
	}
	x->fl_first = x->fl_n = 0;
	return lost;
}

/* Our end of the connection, for the Reliability record of this session if it dies. */
static void conn_local(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	memset(c->local_addr, 0, sizeof(c->local_addr));
	c->local_port = 0;
	c->started_ms = rm_clock_wall_ms();
	if (getsockname(c->fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;

		c->local_addr[10] = c->local_addr[11] = 0xff;
		memcpy(c->local_addr + 12, &a->sin_addr, 4);
		c->local_port = ntohs(a->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;

		memcpy(c->local_addr, &a->sin6_addr, 16);
		c->local_port = ntohs(a->sin6_port);
	}
}

static int set_sockopts(int fd)
{
	int one = 1, ka_idle = 30, ka_intvl = 10, ka_cnt = 3;
	unsigned int uto = TCP_USER_TIMEOUT_MS;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) |
	       setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) |
	       setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &ka_idle, sizeof(ka_idle)) |
	       setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &ka_intvl, sizeof(ka_intvl)) |
	       setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &ka_cnt, sizeof(ka_cnt)) |
	       setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto));
}

/* Resolve and connect (non-blocking), trying every address. */
static int tcp_connect(struct rm_exporter *x, struct conn *c, uint64_t deadline, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char port[8], addr[128];
	int r, rc = IO_FAIL;

	snprintf(port, sizeof(port), "%u", x->s.port);
	r = getaddrinfo(x->s.collector, port, &hints, &res);
	if (r) {
		rm_errf(err, errlen, "resolve %s: %s", x->s.collector, gai_strerror(r));
		return IO_FAIL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd, soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, sizeof(addr), NULL, 0, NI_NUMERICHOST))
			snprintf(addr, sizeof(addr), "?");
		snprintf(c->peer, sizeof(c->peer), "%s port %s (%s)", x->s.collector, port, addr);
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			rm_errf(err, errlen, "connect to %s: socket: %s", c->peer, strerror(errno));
			continue;
		}
		set_sockopts(fd);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			if (errno != EINPROGRESS) {
				rm_errf(err, errlen, "connect to %s: %s", c->peer, strerror(errno));
				close(fd);
				continue;
			}
			r = wait_fd(x, fd, POLLOUT, deadline, 1, 0, "connect", err, errlen);
			if (r != IO_OK) {
				close(fd);
				if (r == IO_STOP) {
					rc = IO_STOP;
					break;
				}
				continue;
			}
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
				soerr = errno;
			if (soerr) {
				rm_errf(err, errlen, "connect to %s: %s", c->peer, strerror(soerr));
				close(fd);
				continue;
			}
		}
		c->fd = fd;
		c->written = 0;
		conn_local(c);
		if (tcp_bytes_acked(fd, &c->acked_base) < 0)
			c->acked_base = 0;
		rc = IO_OK;
		break;
	}
	freeaddrinfo(res);
	return rc;
}

/*
 * TLS 1.3: the client completes its handshake before the server has checked
 * the client certificate; a refusal arrives as an alert afterwards. Wait a
 * little (4 RTT + 100 ms, at most 2 s) for the server's first record: an
 * alert fails the attempt, anything else (a session ticket) or silence
 * counts as acceptance.
 */
static int await_acceptance(struct rm_exporter *x, struct conn *c, char *err, size_t errlen)
{
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);
	uint64_t wait = 100;
	uint8_t scratch[512];
	char what[700];
	int r, e;

	if (!getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl))
		wait += 4 * (uint64_t)ti.tcpi_rtt / 1000;
	if (wait > 2000)
		wait = 2000;
	r = wait_fd(x, c->fd, POLLIN, rm_clock_mono_ms() + wait, 1, 0, "acceptance", err, errlen);
	if (r == IO_STOP) {
		conn_close(c, 0, x);
		return r;
	}
	if (r != IO_OK)
		return IO_OK; /* silence */
	ERR_clear_error();
	errno = 0;
	r = SSL_read(c->ssl, scratch, sizeof(scratch));
	e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_NONE || e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return IO_OK;
	snprintf(what, sizeof(what), "collector %s refused the session", c->peer);
	ssl_reason(c->ssl, r, what, err, errlen);
	conn_close(c, 0, x);
	return IO_FAIL;
}

/* Connect, handshake, authorise, wait for the collector's acceptance. */
static int establish(struct rm_exporter *x, struct conn *c, char *err, size_t errlen)
{
	uint64_t deadline = rm_clock_mono_ms() + ESTABLISH_TIMEOUT_MS;
	char what[700];
	int r;

	c->fd = -1;
	c->ssl = NULL;
	r = tcp_connect(x, c, deadline, err, errlen);
	if (r != IO_OK || !x->ctx)
		return r;
	ERR_clear_error();
	c->ssl = SSL_new(x->ctx);
	if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) {
		rm_tls_errors("TLS setup", err, errlen);
		conn_close(c, 0, x);
		return IO_FAIL;
	}
	if (rm_tls_client_setup(c->ssl, &x->s.tls, err, errlen)) {
		conn_close(c, 0, x);
		return IO_FAIL;
	}
	for (;;) {
		int e;

		ERR_clear_error();
		errno = 0;
		r = SSL_connect(c->ssl);
		if (r == 1)
			break;
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			r = wait_fd(x, c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, 1, 0,
				    "TLS handshake", err, errlen);
			if (r != IO_OK) {
				conn_close(c, 0, x);
				return r;
			}
			continue;
		}
		snprintf(what, sizeof(what), "TLS handshake with %s refused", c->peer);
		ssl_reason(c->ssl, r, what, err, errlen);
		conn_close(c, 0, x);
		return IO_FAIL;
	}
	if (SSL_version(c->ssl) != TLS1_3_VERSION) {
		rm_errf(err, errlen, "TLS handshake with %s: negotiated %s, not TLS 1.3", c->peer,
			SSL_get_version(c->ssl));
		conn_close(c, 0, x);
		return IO_FAIL;
	}
	if (rm_tls_authorize_peer(c->ssl, &x->s.tls, what, sizeof(what))) {
		rm_errf(err, errlen, "collector %s not authorised: %s", c->peer, what);
		conn_close(c, 0, x);
		return IO_FAIL;
	}
	return await_acceptance(x, c, err, errlen);
}

/* Write all of buf. IO_ABORT when a stop's deadline passed meanwhile. */
static int conn_write(struct rm_exporter *x, struct conn *c, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	size_t off = 0;

	while (off < len) {
		short ev;
		int r;

		if (c->ssl) {
			ERR_clear_error();
			errno = 0;
			r = SSL_write(c->ssl, buf + off, (int)(len - off));
			if (r > 0) {
				off += (size_t)r;
				continue;
			}
			switch (SSL_get_error(c->ssl, r)) {
			case SSL_ERROR_WANT_WRITE:
				ev = POLLOUT;
				break;
			case SSL_ERROR_WANT_READ:
				ev = POLLIN;
				break;
			default:
				ssl_reason(c->ssl, r, "TLS write to collector failed", err, errlen);
				return IO_FAIL;
			}
		} else {
			ssize_t n = send(c->fd, buf + off, len - off, MSG_NOSIGNAL);

			if (n >= 0) {
				off += (size_t)n;
				c->written += (uint64_t)n;
				continue;
			}
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				rm_errf(err, errlen, "TCP write to collector failed: %s", strerror(errno));
				return IO_FAIL;
			}
			ev = POLLOUT;
		}
		r = wait_fd(x, c->fd, ev, 0, 0, 0, "write", err, errlen);
		if (r == IO_STOP)
			return IO_ABORT;
		if (r != IO_OK)
			return r;
	}
	return IO_OK;
}

/*
 * The socket is readable while idle: consume what the collector sent
 * (post-handshake messages; a collector sends no IPFIX). IO_FAIL when the
 * collector closed the session or an error occurred.
 */
static int conn_check_input(struct conn *c, char *err, size_t errlen)
{
	uint8_t scratch[4096];

	for (;;) {
		int r, e;

		if (!c->ssl) {
			ssize_t n = recv(c->fd, scratch, sizeof(scratch), MSG_DONTWAIT);

			if (n > 0)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
				return IO_OK;
			rm_errf(err, errlen, "collector closed the connection%s%s", n < 0 ? ": " : "",
				n < 0 ? strerror(errno) : "");
			return IO_FAIL;
		}
		ERR_clear_error();
		errno = 0;
		r = SSL_read(c->ssl, scratch, sizeof(scratch));
		if (r > 0)
			continue;
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			return IO_OK;
		if (e == SSL_ERROR_ZERO_RETURN)
			rm_errf(err, errlen, "collector ended the session (close_notify)");
		else
			ssl_reason(c->ssl, r, "collector connection failed", err, errlen);
		return IO_FAIL;
	}
}

/* The Message Header's Export Time: UNIX seconds ([RFC7011] 3.1). */
static uint32_t export_time(void)
{
	return (uint32_t)(rm_clock_wall_ms() / 1000);
}

/*
 * After the Templates: the Reliability records of the earlier sessions that
 * died, one Message (their Options Template first). *len gets its octets (0: none).
 */
static int send_reliability(struct rm_exporter *x, struct conn *c, size_t *len, char *err, size_t errlen)
{
	int r;

	*len = 0;
	x->pend_sent = 0;
	if (!x->n_pend)
		return IO_OK;
	*len = rm_ipfix_reliability_msg(&x->enc, export_time(), x->pend, x->n_pend, x->buf, RM_IPFIX_MSG_MAX);
	if (!*len)
		return IO_OK;
	r = conn_write(x, c, x->buf, *len, err, errlen);
	if (r != IO_OK)
		return r;
	flight_add(x, c, 0, *len);
	x->pend_sent = x->n_pend;
	x->pend_end = conn_written(c);
	return IO_OK;
}

/* Session established: Templates first, then publish the session number. */
static int start_session(struct rm_exporter *x, struct conn *c, char *err, size_t errlen)
{
	size_t len, rlen, plen;
	int r;

	rm_ipfix_reset(&x->enc);
	x->s_messages = x->s_records = x->s_octets = 0;
	x->fl_first = x->fl_n = 0;
	len = rm_ipfix_templates_msg(&x->enc, export_time(), x->buf, RM_IPFIX_MSG_MAX);
	if (!len) {
		rm_errf(err, errlen, "internal error: Templates message does not fit");
		return IO_FAIL;
	}
	r = conn_write(x, c, x->buf, len, err, errlen);
	if (r != IO_OK)
		return r;
	flight_add(x, c, 0, len);
	r = send_reliability(x, c, &rlen, err, errlen);
	if (r != IO_OK)
		return r;
	/* The observation points' names (Options Template 262), when [capture] names any. */
	plen = rm_ipfix_points_msg(&x->enc, export_time(), x->buf, RM_IPFIX_MSG_MAX);
	if (plen) {
		r = conn_write(x, c, x->buf, plen, err, errlen);
		if (r != IO_OK)
			return r;
		flight_add(x, c, 0, plen);
	}
	pthread_mutex_lock(&x->mu);
	x->session_count++;
	__atomic_store_n(&x->session, x->session_count, __ATOMIC_RELEASE);
	x->stats.sessions++;
	if (x->session_count > 1)
		x->stats.reconnects++;
	x->stats.messages_sent += 1 + (rlen ? 1 : 0) + (plen ? 1 : 0);
	x->stats.bytes_sent += len + rlen + plen;
	pthread_mutex_unlock(&x->mu);
	{
		char sid[24];
		struct rm_log_field f[] = { { "SESSION", sid }, { "PEER", c->peer } };

		snprintf(sid, sizeof(sid), "%llu", (unsigned long long)x->session_count);
		rm_log_fields(RM_LOG_NOTICE, f, 2, "export: Transport Session %llu with %s established (%s%s)",
			      (unsigned long long)x->session_count, c->peer,
			      c->ssl ? SSL_get_version(c->ssl) : "plain TCP",
			      c->ssl ? ", mutually authenticated" : ", NOT authenticated or encrypted");
	}
	return IO_OK;
}

/* End the current session: whatever is queued for it is lost. */
static void end_session(struct rm_exporter *x, int lost)
{
	pthread_mutex_lock(&x->mu);
	__atomic_store_n(&x->session, 0, __ATOMIC_RELEASE);
	if (lost) {
		x->stats.sessions_lost++;
		x->stats.dropped_session_lost += x->tail - x->head;
	} else {
		x->stats.dropped_at_stop += x->tail - x->head;
	}
	x->head = x->tail;
	pthread_cond_broadcast(&x->drained);
	pthread_mutex_unlock(&x->mu);
}

/*
 * The session served by c ended with rc: the Reliability records it
 * delivered are done with; if it died (IO_FAIL), its records not
 * acknowledged are lost in flight, and what was acknowledged is reported
 * in the next session. msg: the log line of a lost session.
 */
static void session_over(struct rm_exporter *x, struct conn *c, int rc, const char *err, char *msg, size_t msglen)
{
	uint64_t nm, no, acked, lost = flight_lost(x, c, &nm, &no, &acked);
	struct rm_ipfix_reliability *p;

	if (x->pend_sent && acked != UINT64_MAX && acked >= x->pend_end) {
		memmove(x->pend, x->pend + x->pend_sent, (x->n_pend - x->pend_sent) * sizeof(x->pend[0]));
		x->n_pend -= x->pend_sent;
	}
	x->pend_sent = 0;
	if (rc != IO_FAIL)
		return;
	pthread_mutex_lock(&x->mu);
	x->stats.lost_in_flight += lost;
	pthread_mutex_unlock(&x->mu);
	if (acked == UINT64_MAX) {
		snprintf(msg, msglen,
			 "Transport Session %llu lost: %s; what the collector acknowledged is unknown (TCP_INFO)",
			 (unsigned long long)x->session_count, err);
		return;
	}
	if (x->n_pend == RELIABILITY_PENDING) {
		rm_log(RM_LOG_WARNING,
		       "export: %d dead Transport Sessions wait to be reported; the oldest is forgotten",
		       RELIABILITY_PENDING);
		memmove(x->pend, x->pend + 1, (RELIABILITY_PENDING - 1) * sizeof(x->pend[0]));
		x->n_pend--;
	}
	p = &x->pend[x->n_pend++];
	memcpy(p->exporter_addr, c->local_addr, sizeof(p->exporter_addr));
	p->exporter_port = c->local_port;
	p->started_ms = c->started_ms;
	p->ended_ms = rm_clock_wall_ms();
	p->messages = x->s_messages - nm;
	p->records = x->s_records - lost;
	p->octets = x->s_octets - no;
	snprintf(msg, msglen,
		 "Transport Session %llu lost: %s; %llu records in %llu messages were sent but not acknowledged by "
		 "the collector (lost in flight); %llu records in %llu messages were acknowledged (reported in the "
		 "next session)",
		 (unsigned long long)x->session_count, err, (unsigned long long)lost, (unsigned long long)nm,
		 (unsigned long long)p->records, (unsigned long long)p->messages);
}

/* Send queued records until the session fails (IO_FAIL) or a stop ends it (IO_STOP). */
static int serve(struct rm_exporter *x, struct conn *c, char *err, size_t errlen)
{
	for (;;) {
		const struct rm_report *r;
		uint64_t head, avail;
		size_t len, used = 0;
		int rc;

		pthread_mutex_lock(&x->mu);
		while (x->head == x->tail && !x->stopping) {
			x->idle_waiting = 1;
			pthread_mutex_unlock(&x->mu);
			rc = wait_fd(x, c->fd, POLLIN, 0, 0, 1, "idle", err, errlen);
			if (rc == IO_OK)
				rc = conn_check_input(c, err, errlen);
			pthread_mutex_lock(&x->mu);
			x->idle_waiting = 0;
			if (rc == IO_FAIL) {
				pthread_mutex_unlock(&x->mu);
				return IO_FAIL;
			}
		}
		if (x->head == x->tail || (x->stopping && rm_clock_mono_ms() >= x->stop_deadline_ms)) {
			pthread_mutex_unlock(&x->mu);
			return IO_STOP;
		}
		head = x->head;
		avail = x->tail - head;
		pthread_mutex_unlock(&x->mu);

		/* Slots [head, tail) are ours until head advances; encode the contiguous run. */
		r = &x->ring[head % x->cap];
		if (avail > x->cap - head % x->cap)
			avail = x->cap - head % x->cap;
		len = rm_ipfix_data_msg(&x->enc, export_time(), r, avail, &used, x->buf, RM_IPFIX_MSG_MAX);
		if (!len || !used) {
			/* Cannot happen: submit checked the family. Drop one, never loop. */
			pthread_mutex_lock(&x->mu);
			x->head++;
			x->stats.dropped_invalid++;
			if (x->head == x->tail)
				pthread_cond_broadcast(&x->drained);
			pthread_mutex_unlock(&x->mu);
			continue;
		}
		rc = conn_write(x, c, x->buf, len, err, errlen);
		if (rc != IO_OK)
			return rc;
		flight_add(x, c, used, len);
		pthread_mutex_lock(&x->mu);
		x->head += used;
		x->stats.records_sent += used;
		x->stats.messages_sent++;
		x->stats.bytes_sent += len;
		if (x->head == x->tail)
			pthread_cond_broadcast(&x->drained);
		pthread_mutex_unlock(&x->mu);
	}
}

static void *exporter_thread(void *arg)
{
	struct rm_exporter *x = arg;
	uint64_t backoff = BACKOFF_MIN_MS;
	char err[1024], msg[1400];

	while (!stopping(x, NULL)) {
		struct conn c = { .fd = -1 };
		uint64_t started, delay;
		int rc;

		err[0] = '\0';
		rc = establish(x, &c, err, sizeof(err));
		if (rc == IO_OK)
			rc = start_session(x, &c, err, sizeof(err));
		if (rc == IO_OK) {
			/* Established: serve until failure or stop. */
			started = rm_clock_mono_ms();
			rc = serve(x, &c, err, sizeof(err));
			session_over(x, &c, rc, err, msg, sizeof(msg));
			end_session(x, rc == IO_FAIL);
			conn_close(&c, rc == IO_STOP, x);
			if (rc != IO_FAIL)
				break;
			fail_log(x, msg);
			if (rm_clock_mono_ms() - started >= BACKOFF_RESET_AFTER_MS)
				backoff = BACKOFF_MIN_MS;
		} else {
			conn_close(&c, 0, x);
			if (rc != IO_FAIL)
				break;
			pthread_mutex_lock(&x->mu);
			x->stats.connect_failures++;
			pthread_mutex_unlock(&x->mu);
			fail_log(x, err[0] ? err : "connection failed");
		}
		/* Bounded exponential backoff with jitter, cut short by a stop. */
		delay = backoff / 2 + (uint64_t)rand_r(&x->seed) % (backoff / 2 + 1);
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
		if (wait_fd(x, -1, 0, rm_clock_mono_ms() + delay, 1, 0, "backoff", NULL, 0) == IO_STOP)
			break;
	}
	end_session(x, 0);
	return NULL;
}

struct rm_exporter *rm_exporter_start(const struct rm_export_settings *s, int vlan_ns,
				      const struct rm_capture_settings *capture, char *err, size_t errlen)
{
	struct rm_exporter *x;
	sigset_t all, old;
	char tlserr[1024];
	int r;

	if (!s->enabled) {
		rm_errf(err, errlen, "export: no [export] section with collector = HOST");
		return NULL;
	}
	if (!s->collector[0]) {
		rm_errf(err, errlen, "export: no collector configured (collector = HOST)");
		return NULL;
	}
	if (!s->queue_records) {
		rm_errf(err, errlen, "export: queue_records must be at least 1");
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		rm_errf(err, errlen, "export: out of memory");
		return NULL;
	}
	x->s = *s;
	x->vlan_ns = vlan_ns ? 1 : 0;
	x->wake_fd = -1;
	if (!x->s.port)
		x->s.port = s->tls.plain_tcp ? RM_IPFIX_PORT_TCP : RM_IPFIX_PORT_TLS;
	if (s->tls.plain_tcp) {
		rm_log(RM_LOG_WARNING,
		       "export: WARNING: transport = tcp: reports to %s go unauthenticated "
		       "and unencrypted; the RoCEv2 sequence observation profile requires mutually authenticated TLS "
		       "1.3",
		       s->collector);
	} else {
		x->ctx = rm_tls_client_ctx(&s->tls, tlserr, sizeof(tlserr));
		if (!x->ctx) {
			rm_errf(err, errlen, "export: TLS is on (transport = tls): %s", tlserr);
			goto fail;
		}
	}
	x->cap = s->queue_records;
	x->ring = calloc(x->cap, sizeof(*x->ring));
	x->buf = malloc(RM_IPFIX_MSG_MAX);
	if (!x->ring || !x->buf) {
		rm_errf(err, errlen, "export: cannot allocate a queue of %llu records", (unsigned long long)x->cap);
		goto fail;
	}
	x->stats.queue_capacity = x->cap;
	x->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (x->wake_fd < 0) {
		rm_errf(err, errlen, "export: eventfd: %s", strerror(errno));
		goto fail;
	}
	rm_ipfix_init(&x->enc, s->pen, s->observation_domain, x->vlan_ns);
	rm_ipfix_add_points(&x->enc, capture);
	x->seed = (unsigned int)(rm_clock_mono_ms() ^ (uint64_t)getpid() ^ (uintptr_t)x);
	pthread_mutex_init(&x->mu, NULL);
	pthread_cond_init(&x->drained, NULL);
	/* The thread gets no signals: SIGPIPE becomes EPIPE, the others go to the caller. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&x->thread, NULL, exporter_thread, x);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		rm_errf(err, errlen, "export: cannot start the thread: %s", strerror(r));
		pthread_cond_destroy(&x->drained);
		pthread_mutex_destroy(&x->mu);
		goto fail;
	}
	return x;
fail:
	if (x->wake_fd >= 0)
		close(x->wake_fd);
	SSL_CTX_free(x->ctx);
	free(x->ring);
	free(x->buf);
	free(x);
	return NULL;
}

uint64_t rm_exporter_session(struct rm_exporter *x)
{
	return __atomic_load_n(&x->session, __ATOMIC_ACQUIRE);
}

int rm_exporter_submit(struct rm_exporter *x, uint64_t session, const struct rm_report *r, size_t n)
{
	uint64_t *counter = NULL, at;
	size_t first;
	int wake_it;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (r[i].family != 4 && r[i].family != 6) {
			pthread_mutex_lock(&x->mu);
			x->stats.dropped_invalid += n;
			pthread_mutex_unlock(&x->mu);
			return -1;
		}
	pthread_mutex_lock(&x->mu);
	if (!x->session || !session)
		counter = &x->stats.dropped_no_session;
	else if (session != x->session)
		counter = &x->stats.dropped_session_lost;
	else if (n > x->cap - (x->tail - x->head))
		counter = &x->stats.dropped_queue_full;
	if (counter) {
		*counter += n;
		pthread_mutex_unlock(&x->mu);
		return -1;
	}
	at = x->tail % x->cap;
	first = n < x->cap - at ? n : (size_t)(x->cap - at);
	memcpy(&x->ring[at], r, first * sizeof(*r));
	if (first < n)
		memcpy(&x->ring[0], r + first, (n - first) * sizeof(*r));
	x->tail += n;
	wake_it = x->idle_waiting;
	x->idle_waiting = 0;
	pthread_mutex_unlock(&x->mu);
	if (wake_it)
		wake(x);
	return 0;
}

int rm_exporter_flush(struct rm_exporter *x, int timeout_ms)
{
	struct timespec ts = rm_clock_wall_deadline(timeout_ms >= 0 ? (uint64_t)timeout_ms : 0);
	int rc = 0;

	pthread_mutex_lock(&x->mu);
	while (x->head != x->tail && rc == 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&x->drained, &x->mu);
		else
			rc = pthread_cond_timedwait(&x->drained, &x->mu, &ts);
	}
	rc = x->head == x->tail ? 0 : -1;
	pthread_mutex_unlock(&x->mu);
	return rc;
}

void rm_exporter_stop(struct rm_exporter *x, int flush_timeout_ms)
{
	rm_exporter_stop_stats(x, flush_timeout_ms, NULL);
}

void rm_exporter_stop_stats(struct rm_exporter *x, int flush_timeout_ms, struct rm_export_stats *final)
{
	if (!x)
		return;
	pthread_mutex_lock(&x->mu);
	x->stopping = 1;
	x->stop_deadline_ms = rm_clock_mono_ms() + (flush_timeout_ms > 0 ? (uint64_t)flush_timeout_ms : 0);
	pthread_mutex_unlock(&x->mu);
	wake(x);
	pthread_join(x->thread, NULL);
	if (final)
		rm_exporter_stats(x, final);
	pthread_cond_destroy(&x->drained);
	pthread_mutex_destroy(&x->mu);
	close(x->wake_fd);
	SSL_CTX_free(x->ctx);
	free(x->ring);
	free(x->buf);
	free(x->flight);
	free(x);
}

void rm_exporter_stats(struct rm_exporter *x, struct rm_export_stats *out)
{
	pthread_mutex_lock(&x->mu);
	*out = x->stats;
	out->queued = x->tail - x->head;
	pthread_mutex_unlock(&x->mu);
}

#define EXPORT_ROW_(member, type, metric, cause, help)        \
	{ #member,                                            \
	  RM_METRIC_##type,                                   \
	  "rocemeter_export_" metric RM_METRIC_SUFFIX_##type, \
	  RM_METRIC_LABEL_IF(cause, "cause"),                 \
	  cause,                                              \
	  help,                                               \
	  offsetof(struct rm_export_stats, member) },
static const struct rm_metric_row export_rows[] = { RM_EXPORT_STATS(EXPORT_ROW_) };
#undef EXPORT_ROW_

const struct rm_metric_row *rm_export_stat_rows(size_t *n)
{
	*n = sizeof(export_rows) / sizeof(export_rows[0]);
	return export_rows;
}

void rm_exporter_last_error(struct rm_exporter *x, char *buf, size_t len)
{
	if (!len)
		return;
	pthread_mutex_lock(&x->mu);
	snprintf(buf, len, "%s", x->last_error);
	pthread_mutex_unlock(&x->mu);
}
