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
#include "common/metrics.h"
#include "ipfix_decode.h"
#include "rocemeter/ipfix_ie.h"
#include "budget.h"
#include "store/backend.h"
#include "store/store_spec.h"
#include "common/tls.h"

#define BUF_CAP (RM_IPFIX_MAX_MSG + 65536)
/*
 * Work per loop turn (docs/collector.md "Fairness and shutdown"): octets
 * read from one session, then the next session's turn; connections
 * accepted. A turn is bounded, so SIGTERM is seen after at most one.
 */
#define TURN_OCTETS 262144
#define TURN_ACCEPTS 64
/* Timers (handshake, message, session, epochs) and connection counts are looked at this often. */
#define TICK_MS 1000
/* docs/collector.md "What is stored": sources with a `connections` row of their own per minute. */
#define CONN_SOURCES_PER_MINUTE 64
#define MINUTE_MS 60000
/*
 * Batch bounds: the store may write (store.h: when its flush is due) after
 * this many Messages, once the batch is this old, or when the poll() round
 * ends (before the loop blocks again), whichever comes first; never in the
 * middle of a Message.
 */
#define BATCH_MAX_MESSAGES 64
#define BATCH_MAX_MS 20

/* Why a connection never became a Transport Session: the outcome column of `connections`. */
#define CONN_OUTCOMES(X)                                                                  \
	X(HANDSHAKE_FAILED, "handshake-failed")   /* not TLS 1.3, bad certificate, closed */ \
	X(HANDSHAKE_TIMEOUT, "handshake-timeout") /* handshake_timeout_ms */                 \
	X(HANDSHAKE_EVICTED, "handshake-evicted") /* max_handshakes(_per_source) */          \
	X(NOT_AUTHORISED, "not-authorised")       /* valid chain, name not a peer_name */    \
	X(SESSION_LIMIT, "session-limit")         /* max_sessions */                         \
	X(MEMORY_BUDGET, "memory-budget")         /* max_memory_bytes */

enum conn_outcome {
#define OUTCOME_ENUM_(name, text) CO_##name,
	CONN_OUTCOMES(OUTCOME_ENUM_)
#undef OUTCOME_ENUM_
};

static const char *const outcome_names[] = {
#define OUTCOME_NAME_(name, text) [CO_##name] = text,
	CONN_OUTCOMES(OUTCOME_NAME_)
#undef OUTCOME_NAME_
};

struct server;

/*
 * One accepted connection: first a handshake (handshaking: no session row,
 * no buffer, no Transport Session state), then, once admitted, a Transport
 * Session (session_id != 0).
 */
struct conn {
	struct server *srv;
	int fd;
	SSL *ssl;           /* NULL with plain TCP */
	int handshaking;    /* in the handshake pool */
	int heard;          /* handshake: an octet has arrived */
	int tls_up;         /* the handshake completed: close_notify on close */
	int admitted;       /* charged RM_BUDGET_SESSION_BYTES */
	int want_write;
	int more;           /* its turn ended with data perhaps left: serve it without waiting for poll() */
	int closing;        /* ended; free after the loop pass */
	char peer[INET6_ADDRSTRLEN + 8];
	char source[INET6_ADDRSTRLEN]; /* the peer's address, without the port */
	int64_t session_id;
	uint64_t started_ms;     /* accept(), UNIX ms */
	uint64_t accepted_mono;  /* accept(), CLOCK_MONOTONIC ms */
	uint64_t last_rx_mono;   /* last octet received */
	uint64_t msg_start_mono; /* first octet of the incomplete Message in buf; 0: none */
	struct rm_rsession *rs;
	struct rm_ipfix_session *dec;
	uint8_t *buf;
	size_t len;
	uint64_t messages, records, octets, rejected;
	uint64_t raw_bytes; /* raw record octets this session stored */
	uint64_t now_ms;    /* time of the Message being processed */
};

/* Refused connections of one outcome and source in the current minute. */
struct conn_count {
	char source[INET6_ADDRSTRLEN];
	enum conn_outcome outcome;
	uint64_t count, unflushed, first_ms, last_ms;
	char detail[200];
};

struct server {
	const struct rm_collect_settings *cs;
	uint32_t pen;
	SSL_CTX *ctx;
	int lfd;
	struct rm_backend *st;
	struct rm_rules *rules;
	struct rm_budget *budget;
	int64_t run_id;
	struct conn **conns; /* in accept order */
	size_t nconns;
	uint32_t handshakes; /* conns in the handshake, not closing */
	uint32_t sessions;   /* admitted conns, not closing */
	struct conn *cur;    /* the session whose Message is being decoded: budget refusals are its drops */
	uint64_t raw_bytes;  /* raw record octets in the database */
	int store_failed;
	uint64_t budget_logged_mono;
	/* Refused connections, counted per minute, flushed once per tick. */
	uint64_t minute_ms;
	GHashTable *conn_counts;    /* "outcome source" -> struct conn_count */
	GHashTable *minute_sources; /* sources with rows of their own this minute */
	/*
	 * The open batch: Messages processed since the last commit and when
	 * the batch began (CLOCK_MONOTONIC ms). The store defers and groups
	 * the writes itself (store.h); a commit is where it may write them.
	 */
	int in_batch;
	uint32_t batch_messages;
	uint64_t batch_start_ms;
	struct rm_collector_stats stats;   /* RM_COLLECTOR_STATS; the gauges and the store's drops are read when rendered */
	struct rm_metrics_server *metrics; /* NULL: no --metrics */
};

/* The records_* counter of each verdict (RM_COLLECTOR_STATS follows enum rm_verdict). */
static uint64_t *verdict_counter(struct server *s, enum rm_verdict v)
{
	_Static_assert(offsetof(struct rm_collector_stats, records_unbound) -
			       offsetof(struct rm_collector_stats, records_accepted) ==
		       (RM_V_UNBOUND - RM_V_ACCEPTED) * sizeof(uint64_t),
		       "the records_* rows of RM_COLLECTOR_STATS follow enum rm_verdict");
	return &s->stats.records_accepted + (v < RM_V__COUNT ? v : RM_V__COUNT);
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
		rm_log(RM_LOG_ERR, "%s error (%s): %s", s->st->ops->drop_kind, what, rm_backend_error(s->st));
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
	store_check(s, rm_backend_begin(s->st), "begin");
}

/*
 * End the batch: the only place the store may write, so a committed
 * transaction never holds half of a Message.
 */
static void batch_commit(struct server *s)
{
	store_check(s, rm_backend_commit(s->st), "commit");
	s->batch_messages = 0;
	s->in_batch = 0;
}

/* ---------------- refused connections ---------------- */

/* Write the counts not yet written (in the open batch). */
static void flush_connections(struct server *s)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, s->conn_counts);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct conn_count *n = v;

		if (!n->unflushed)
			continue;
		batch_begin(s);
		store_check(s,
			    rm_backend_connections(s->st, s->minute_ms, n->source, outcome_names[n->outcome], n->unflushed,
						 n->first_ms, n->last_ms, n->detail),
			    "connections");
		n->unflushed = 0;
	}
}

/* A new minute: write the last one's counts, start empty. */
static void connections_minute(struct server *s, uint64_t t)
{
	uint64_t minute = t / MINUTE_MS * MINUTE_MS;

	if (minute == s->minute_ms)
		return;
	flush_connections(s);
	g_hash_table_remove_all(s->conn_counts);
	g_hash_table_remove_all(s->minute_sources);
	s->minute_ms = minute;
}

/*
 * Count a connection that will not be a Transport Session, per minute,
 * source and outcome; the first of each in a minute is logged. Sources
 * beyond CONN_SOURCES_PER_MINUTE in a minute are counted as "other", so
 * the rows and log lines of a minute are bounded whatever the sources.
 */
/* The metric counter of a refused connection's outcome (RM_COLLECTOR_STATS refused_*). */
static uint64_t *refused_counter(struct server *s, enum conn_outcome o)
{
	switch (o) {
	case CO_HANDSHAKE_FAILED:
		return &s->stats.refused_handshake_failed;
	case CO_HANDSHAKE_TIMEOUT:
		return &s->stats.refused_handshake_timeout;
	case CO_HANDSHAKE_EVICTED:
		return &s->stats.refused_handshake_evicted;
	case CO_NOT_AUTHORISED:
		return &s->stats.refused_not_authorised;
	case CO_SESSION_LIMIT:
		return &s->stats.refused_session_limit;
	case CO_MEMORY_BUDGET:
		break;
	}
	return &s->stats.refused_memory_budget;
}

static void count_connection(struct server *s, const struct conn *c, enum conn_outcome o, const char *detail)
{
	uint64_t t = now_ms();
	const char *src = c->source;
	char key[INET6_ADDRSTRLEN + 32];
	struct conn_count *n;

	connections_minute(s, t);
	if (!g_hash_table_contains(s->minute_sources, src)) {
		if (g_hash_table_size(s->minute_sources) < CONN_SOURCES_PER_MINUTE)
			g_hash_table_add(s->minute_sources, g_strdup(src));
		else
			src = "other";
	}
	snprintf(key, sizeof(key), "%s %s", outcome_names[o], src);
	n = g_hash_table_lookup(s->conn_counts, key);
	if (!n) {
		n = g_new0(struct conn_count, 1);
		snprintf(n->source, sizeof(n->source), "%s", src);
		n->outcome = o;
		n->first_ms = t;
		g_hash_table_insert(s->conn_counts, g_strdup(key), n);
		rm_log(RM_LOG_WARNING, "connection from %s refused (%s): %s; more of these from %s this minute are only counted",
		       c->peer, outcome_names[o], detail, src);
	}
	n->count++;
	(*refused_counter(s, o))++;
	n->unflushed++;
	n->last_ms = t;
	snprintf(n->detail, sizeof(n->detail), "%s", detail);
}

/* A connection that is not admitted (or will not be): counted, closed after the loop pass. */
static void refuse_conn(struct conn *c, enum conn_outcome o, const char *detail)
{
	struct server *s = c->srv;

	if (c->closing)
		return;
	c->closing = 1;
	if (c->handshaking) {
		c->handshaking = 0;
		s->handshakes--;
	}
	count_connection(s, c, o, detail);
	if (c->ssl && c->tls_up)
		SSL_shutdown(c->ssl); /* best effort, non-blocking */
}

/* ---------------- memory budget and raw octets ---------------- */

/* The budget refused something: a collector resource drop of the session at hand (0: none yet). */
static void budget_refused(void *arg, const char *what, uint64_t bytes)
{
	struct server *s = arg;
	int64_t sid = s->cur ? s->cur->session_id : 0;
	uint64_t mono = mono_ms();
	char d[200];

	snprintf(d, sizeof(d), "%s of %" PRIu64 " bytes refused: max_memory_bytes %" PRIu64 ", %" PRIu64 " in use", what,
		 bytes, rm_budget_limit(s->budget), rm_budget_used(s->budget));
	batch_begin(s);
	s->stats.drops_memory_budget++;
	store_check(s, rm_backend_drop(s->st, sid, "memory-budget", d, now_ms()), "drop");
	if (!s->budget_logged_mono || mono - s->budget_logged_mono >= MINUTE_MS) {
		rm_log(RM_LOG_WARNING, "session %" PRId64 ": %s (collector resource drop; more this minute are only counted)",
		       sid, d);
		s->budget_logged_mono = mono;
	}
}

/*
 * Keep a record raw if its octets (record and Template) fit the session's
 * share and the database's bound (docs/collector.md "Raw records"); else a
 * collector resource drop.
 */
static void keep_raw(struct conn *c, uint32_t domain, uint16_t tid, const struct rm_report *r, const char *verdict,
		     const char *reason, const uint8_t *raw, size_t len, const uint8_t *t, size_t tl)
{
	struct server *s = c->srv;
	const struct rm_collect_settings *cs = s->cs;
	uint64_t bytes = (uint64_t)len + tl, db_drops;
	int rc;

	if (c->raw_bytes + bytes > cs->max_raw_bytes_per_session || s->raw_bytes + bytes > cs->max_raw_bytes) {
		char d[200];
		int share = c->raw_bytes + bytes > cs->max_raw_bytes_per_session;

		snprintf(d, sizeof(d), "raw record not kept (%s, %" PRIu64 " octets): %s %" PRIu64 " reached", verdict,
			 bytes, share ? "max_raw_bytes_per_session" : "max_raw_bytes",
			 share ? cs->max_raw_bytes_per_session : cs->max_raw_bytes);
		s->stats.drops_raw_byte_limit++;
		store_check(s, rm_backend_drop(s->st, c->session_id, "raw-byte-limit", d, c->now_ms), "drop");
		return;
	}
	db_drops = rm_backend_drops(s->st);
	rc = rm_backend_raw(s->st, c->session_id, domain, tid, r, verdict, reason, raw, len, t, tl, c->now_ms);
	if (rc == 0 && rm_backend_drops(s->st) == db_drops) /* else a "database" drop, counted by the store */
		s->stats.drops_raw_record_limit++;
	store_check(s, rc, "raw record");
	if (rc == 1) {
		c->raw_bytes += bytes;
		s->raw_bytes += bytes;
	}
}

/* ---------------- sinks ---------------- */

/* An epoch changed or is retired: the store writes its latest state with the next transaction. */
static void rules_epoch(void *arg, struct rm_epoch *e)
{
	struct server *s = arg;

	if (e->retired_ms) {
		if (e->outcome == RM_OUTCOME_COMPLETE)
			s->stats.epochs_complete++;
		else if (e->outcome == RM_OUTCOME_INVALID)
			s->stats.epochs_invalid++;
		else
			s->stats.epochs_incomplete++;
	}
	store_check(s, rm_backend_epoch(s->st, e), "epoch");
}

/* The budget is full: the retired epochs waiting for the store's write give their charges back. */
static int rules_room(void *arg)
{
	return rm_backend_make_room(((struct server *)arg)->st);
}

static void rules_drop(void *arg, uint64_t session_id, uint32_t domain, uint64_t epoch_id, const char *detail)
{
	struct server *s = arg;

	s->stats.drops_epoch_admission++;
	store_check(s, rm_backend_drop(s->st, (int64_t)session_id, "epoch-admission", detail, now_ms()), "drop");
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
	(*verdict_counter(c->srv, v))++;
	if (rm_verdict_keeps_raw(v)) {
		size_t tl = 0;
		const uint8_t *t = rm_ipfix_template_bytes(c->dec, domain, tid, &tl);

		keep_raw(c, domain, tid, r, rm_verdict_name(v), why, raw, len, t, tl);
	}
}

static void dec_reject(void *arg, uint32_t domain, uint16_t tid, const uint8_t *raw, size_t len, const char *reason)
{
	struct conn *c = arg;
	size_t tl = 0;
	const uint8_t *t = tid ? rm_ipfix_template_bytes(c->dec, domain, tid, &tl) : NULL;

	c->rejected++;
	c->srv->stats.records_undecodable++;
	keep_raw(c, domain, tid, NULL, "undecodable", reason, raw, len, t, tl);
	if (c->rejected <= 10)
		rm_log(RM_LOG_WARNING, "session %" PRId64 ": rejected: %s", c->session_id, reason);
	else if (c->rejected == 11)
		rm_log(RM_LOG_WARNING, "session %" PRId64 ": more rejections (counted, kept raw within the raw record limits)",
		       c->session_id);
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
	struct rm_session_counts cnt = {
		.messages = c->messages, .records = c->records, .octets = c->octets, .rejected = c->rejected
	};

	if (c->closing)
		return;
	c->closing = 1;
	s->sessions--;
	snprintf(er, sizeof(er), "session ended: %s", reason);
	batch_begin(s);
	if (c->dec) {
		const struct rm_ipfix_counts *h = rm_ipfix_counts(c->dec);

		cnt.seq_gaps = h->seq_gaps;
		cnt.seq_missing = h->seq_missing;
		cnt.time_backwards = h->time_backwards;
		s->stats.sequence_gaps += h->seq_gaps;
		s->stats.sequence_missing_records += h->seq_missing;
		s->stats.export_time_backwards += h->time_backwards;
	}
	if (c->rs) {
		cnt.verdicts = rm_rules_verdict_counts(c->rs);
		/* The counts are read before close frees them. */
		store_check(s, rm_backend_session_end(s->st, c->session_id, reason, t, &cnt), "session end");
		rm_rules_session_close(c->rs, er, t);
		c->rs = NULL;
	} else {
		store_check(s, rm_backend_session_end(s->st, c->session_id, reason, t, &cnt), "session end");
	}
	batch_commit(s);
	store_check(s, rm_backend_flush(s->st), "commit"); /* a session's end and its epochs' outcomes: at once */
	{
		char sid[24];
		struct rm_log_field f[] = { { "SESSION", sid }, { "PEER", c->peer } };

		snprintf(sid, sizeof(sid), "%" PRId64, c->session_id);
		rm_log_fields(RM_LOG_NOTICE, f, 2,
			      "session %" PRId64 " from %s ended: %s (%" PRIu64 " messages, %" PRIu64
			      " records, %" PRIu64 " rejected)",
			      c->session_id, c->peer, reason, c->messages, c->records, c->rejected);
	}
	if (c->ssl && c->tls_up)
		SSL_shutdown(c->ssl); /* best effort, non-blocking */
}

static void free_conn(struct conn *c)
{
	if (c->ssl)
		SSL_free(c->ssl);
	if (c->fd >= 0)
		close(c->fd);
	rm_ipfix_session_free(c->dec);
	if (c->admitted)
		rm_budget_give(c->srv->budget, RM_BUDGET_SESSION_BYTES);
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
		s->stats.messages++;
		s->stats.received_bytes += (uint64_t)m;
		batch_begin(s);
		s->cur = c;
		int rc = rm_ipfix_message(c->dec, c->buf + off, (size_t)m, &dec_sink, c, err, sizeof(err));

		rm_rules_flush(c->rs);
		s->cur = NULL;
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
	/* The message-assembly timer runs from the first octet of the incomplete Message. */
	if (!c->len)
		c->msg_start_mono = 0;
	else if (off || !c->msg_start_mono)
		c->msg_start_mono = mono_ms();
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

/*
 * Make an authenticated connection (or a plain TCP one) a Transport
 * Session: a slot of max_sessions, its memory, its sessions row. 0, or -1
 * if refused (counted, closed after the loop pass).
 */
static int admit(struct conn *c)
{
	struct server *s = c->srv;
	const char *transport = c->ssl ? "tls" : "tcp";
	char d[200], subj[256] = "";
	int64_t id;

	if (s->sessions >= s->cs->max_sessions || rm_rules_sessions(s->rules) >= s->cs->max_sessions) {
		snprintf(d, sizeof(d), "refused: max_sessions %u sessions open", s->cs->max_sessions);
		batch_begin(s);
		s->stats.sessions_refused++;
		s->stats.drops_session_limit++;
		store_check(s, rm_backend_drop(s->st, 0, "session-limit", d, now_ms()), "drop");
		refuse_conn(c, CO_SESSION_LIMIT, d);
		return -1;
	}
	s->cur = NULL;
	if (rm_budget_take(s->budget, RM_BUDGET_SESSION_BYTES, "session") < 0) {
		snprintf(d, sizeof(d), "refused: max_memory_bytes %" PRIu64 " in use", s->cs->max_memory_bytes);
		refuse_conn(c, CO_MEMORY_BUDGET, d);
		return -1;
	}
	c->admitted = 1;
	s->sessions++;
	s->stats.sessions_accepted++;
	batch_begin(s);
	id = rm_backend_session_start(s->st, s->run_id, c->peer, transport, c->started_ms);
	store_check(s, id < 0 ? -1 : 0, "session start");
	c->session_id = id;
	if (c->ssl) {
		rm_tls_peer_subject(c->ssl, subj, sizeof(subj));
		store_check(s, rm_backend_session_peer(s->st, id, subj), "session peer");
	}
	c->last_rx_mono = mono_ms();
	if (!(c->buf = malloc(BUF_CAP)) || !(c->dec = rm_ipfix_session_new(s->pen)) ||
	    !(c->rs = rm_rules_session_open(s->rules, (uint64_t)id))) {
		rm_log(RM_LOG_ERR, "session %" PRId64 " from %s: out of memory", id, c->peer);
		end_session(c, "out of memory");
		return -1;
	}
	rm_ipfix_session_set_budget(c->dec, s->budget);
	{
		char sid[24];
		struct rm_log_field f[] = { { "SESSION", sid }, { "PEER", c->peer } };

		snprintf(sid, sizeof(sid), "%" PRId64, id);
		if (c->ssl)
			rm_log_fields(RM_LOG_NOTICE, f, 2, "session %" PRId64 " from %s: TLS 1.3 peer %s authorised",
				      id, c->peer, subj);
		else
			rm_log_fields(RM_LOG_NOTICE, f, 2,
				      "session %" PRId64 " from %s started (plain TCP, unauthenticated)", id, c->peer);
	}
	return 0;
}

static void on_data(struct conn *c);

/* A connection in the handshake: go on with it; authorised and admitted, it reads at once. */
static void on_handshake(struct conn *c)
{
	struct server *s = c->srv;
	char r[600], e[400];
	int rc, err;

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
			refuse_conn(c, CO_NOT_AUTHORISED, r);
			return;
		}
		if (admit(c) == 0)
			on_data(c);
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
		refuse_conn(c, CO_NOT_AUTHORISED, r);
		return;
	}
	snprintf(r, sizeof(r), "TLS handshake failed: %s",
		 rm_tls_errors(err == SSL_ERROR_SYSCALL ? "connection closed" : "", e, sizeof(e)));
	refuse_conn(c, CO_HANDSHAKE_FAILED, r);
}

/* A session's turn: read at most TURN_OCTETS, decoding every complete Message. */
static void on_data(struct conn *c)
{
	char r[600], e[400];
	size_t left = TURN_OCTETS;

	c->want_write = 0;
	c->more = 0;
	while (left > 0) {
		size_t room = BUF_CAP - c->len < left ? BUF_CAP - c->len : left;
		ssize_t n;

		errno = 0;
		if (c->ssl) {
			ERR_clear_error();
			n = SSL_read(c->ssl, c->buf + c->len, (int)room);
			if (n <= 0) {
				int en = errno, err = SSL_get_error(c->ssl, (int)n);

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

					if (err == SSL_ERROR_SYSCALL && n < 0 && en)
						snprintf(e, sizeof(e), "connection lost: %s", strerror(en));
					else
						rm_tls_errors(err == SSL_ERROR_SYSCALL ? "connection lost" : "TLS error", e,
							      sizeof(e));
					snprintf(how, sizeof(how), "session failed (%s)", e);
					eof_reason(c, how, r, sizeof(r));
				}
				end_session(c, r);
				return;
			}
		} else {
			n = recv(c->fd, c->buf + c->len, room, 0);
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
		left -= (size_t)n;
		c->last_rx_mono = mono_ms();
		if (process_buffer(c) < 0)
			return;
	}
	c->more = 1;
}

static void serve(struct conn *c)
{
	if (c->handshaking)
		on_handshake(c);
	else
		on_data(c);
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

/*
 * Listen on addr. defer_s > 0: TCP_DEFER_ACCEPT, the kernel hands over a
 * connection only once its first octets arrive (or after defer_s): a TLS
 * client speaks first, so connections that send nothing stay in the
 * kernel's SYN queue instead of taking handshake slots.
 */
static int open_listener(const char *addr, int defer_s)
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
static struct conn *victim(struct server *s, const char *source)
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

static uint32_t handshakes_from(struct server *s, const char *source)
{
	uint32_t n = 0;

	for (size_t i = 0; i < s->nconns; i++)
		n += s->conns[i]->handshaking && !s->conns[i]->closing && !strcmp(s->conns[i]->source, source);
	return n;
}

/* Make room in the handshake pool for a connection from source. */
static void handshake_room(struct server *s, const char *source)
{
	const struct rm_collect_settings *cs = s->cs;
	char d[200];
	struct conn *v;

	if (handshakes_from(s, source) >= cs->max_handshakes_per_source && (v = victim(s, source))) {
		snprintf(d, sizeof(d), "evicted by a newer connection from %s (max_handshakes_per_source %u)", source,
			 cs->max_handshakes_per_source);
		refuse_conn(v, CO_HANDSHAKE_EVICTED, d);
	}
	if (s->handshakes >= cs->max_handshakes && (v = victim(s, NULL))) {
		snprintf(d, sizeof(d), "evicted by a newer connection (max_handshakes %u)", cs->max_handshakes);
		refuse_conn(v, CO_HANDSHAKE_EVICTED, d);
	}
}

/*
 * Accept up to TURN_ACCEPTS connections. With TLS a connection joins the
 * handshake pool (no session yet); with plain TCP it is admitted at once.
 */
static void on_accept(struct server *s)
{
	for (int k = 0; k < TURN_ACCEPTS; k++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c, **nc;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
				rm_log(RM_LOG_ERR, "accept: %s", strerror(errno));
			return;
		}
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
		peer_text(&ss, c->peer, sizeof(c->peer), c->source, sizeof(c->source));
		c->started_ms = now_ms();
		c->accepted_mono = mono_ms();
		set_socket_options(fd, s->cs->dead_peer_timeout_ms);
		if (!s->ctx) {
			s->conns[s->nconns++] = c;
			admit(c);
			continue;
		}
		handshake_room(s, c->source);
		c->ssl = SSL_new(s->ctx);
		if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
			rm_log(RM_LOG_ERR, "connection from %s: cannot set up TLS", c->peer);
			free_conn(c);
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

/* Timers: handshakes, incomplete Messages, silent sessions, epochs; then the connection counts. */
static void tick(struct server *s, uint64_t t, uint64_t mono)
{
	const struct rm_collect_settings *cs = s->cs;
	char r[600], how[200];

	batch_begin(s);
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];

		if (c->closing)
			continue;
		if (c->handshaking) {
			if (mono - c->accepted_mono >= cs->handshake_timeout_ms) {
				snprintf(how, sizeof(how), "no authorised peer after %" PRIu64 " ms (handshake_timeout_ms %" PRIu64 ")",
					 mono - c->accepted_mono, cs->handshake_timeout_ms);
				refuse_conn(c, CO_HANDSHAKE_TIMEOUT, how);
			}
			continue;
		}
		if (c->msg_start_mono && mono - c->msg_start_mono >= cs->message_timeout_ms) {
			snprintf(how, sizeof(how), "timed out (message_timeout_ms %" PRIu64 ")", cs->message_timeout_ms);
			eof_reason(c, how, r, sizeof(r));
			end_session(c, r);
			continue;
		}
		if (cs->session_timeout_ms && mono - c->last_rx_mono >= cs->session_timeout_ms) {
			snprintf(r, sizeof(r), "no data for %" PRIu64 " ms (session_timeout_ms %" PRIu64 ")",
				 mono - c->last_rx_mono, cs->session_timeout_ms);
			end_session(c, r);
			continue;
		}
		if (c->rs) {
			rm_rules_tick(c->rs, t);
			rm_rules_flush(c->rs);
		}
	}
	connections_minute(s, t);
	flush_connections(s);
	batch_commit(s);
}

/* Every limit of the run, by its configuration key, for `report --limits`. */
static void store_limits(struct server *s)
{
	const struct rm_collect_settings *cs = s->cs;
	const struct {
		const char *name;
		uint64_t value;
	} lim[] = {
		{ "max_sessions", cs->max_sessions },
		{ "max_epochs", cs->max_epochs },
		{ "max_raw_records", cs->max_raw_records },
		{ "inactivity_timeout_ms", cs->inactivity_timeout_ms },
		{ "max_handshakes", cs->max_handshakes },
		{ "max_handshakes_per_source", cs->max_handshakes_per_source },
		{ "handshake_timeout_ms", cs->handshake_timeout_ms },
		{ "session_timeout_ms", cs->session_timeout_ms },
		{ "message_timeout_ms", cs->message_timeout_ms },
		{ "dead_peer_timeout_ms", cs->dead_peer_timeout_ms },
		{ "max_raw_bytes", cs->max_raw_bytes },
		{ "max_raw_bytes_per_session", cs->max_raw_bytes_per_session },
		{ "max_memory_bytes", cs->max_memory_bytes },
	};

	batch_begin(s);
	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++)
		store_check(s, rm_backend_run_limit(s->st, s->run_id, lim[i].name, lim[i].value), "run limits");
	batch_commit(s);
}

#define COLLECTOR_ROW_(member, type, metric, label, value, help)                                                \
	{ #member, RM_METRIC_##type, "rocemeter_collector_" metric RM_METRIC_SUFFIX_##type, label, value, help,  \
	  offsetof(struct rm_collector_stats, member) },
static const struct rm_metric_row collector_rows[] = { RM_COLLECTOR_STATS(COLLECTOR_ROW_) };
#undef COLLECTOR_ROW_

/* Per-session series: X(conn member, metric, help). */
#define SESSION_SERIES(X)                                                                  \
	X(messages, "messages", "IPFIX Messages received in the Transport Session")       \
	X(records, "records", "Data Records received in the Transport Session")           \
	X(octets, "received_bytes", "IPFIX octets received in the Transport Session")     \
	X(rejected, "records_undecodable", "records of the session the decoder could not bind")

/* GET /metrics, on the server's thread; the loop holds the lock except in poll(). */
static void render_metrics(void *arg, FILE *f)
{
	struct server *s = arg;
	struct rm_collector_stats st = s->stats;

	st.sessions_open = 0;
	st.epochs_retained = 0;
	if (s->st->ops == &rm_backend_sqlite) {
		st.drops_database = rm_backend_drops(s->st);
		st.database_unavailable = (uint64_t)rm_backend_unavailable(s->st);
	} else {
		st.drops_store = rm_backend_drops(s->st);
		st.store_unavailable = (uint64_t)rm_backend_unavailable(s->st);
	}
	st.store_buffer_bytes = rm_backend_buffer_bytes(s->st);
	st.store_buffer_capacity_bytes = rm_backend_buffer_capacity(s->st);
	for (size_t i = 0; i < s->nconns; i++) {
		if (s->conns[i]->closing)
			continue;
		st.sessions_open++;
		if (s->conns[i]->rs)
			st.epochs_retained += rm_rules_retained(s->conns[i]->rs);
		if (s->conns[i]->dec) { /* an ended session's counts are in s->stats */
			const struct rm_ipfix_counts *h = rm_ipfix_counts(s->conns[i]->dec);

			st.sequence_gaps += h->seq_gaps;
			st.sequence_missing_records += h->seq_missing;
			st.export_time_backwards += h->time_backwards;
		}
	}
	rm_metrics_rows(f, collector_rows, sizeof(collector_rows) / sizeof(collector_rows[0]), &st, NULL, 0);
#define SESSION_FAMILY_(member, metric, help)                                                             \
	rm_metrics_family(f, "rocemeter_collector_session_" metric "_total", RM_METRIC_COUNTER, help);    \
	for (size_t i = 0; i < s->nconns; i++) {                                                          \
		const struct conn *c = s->conns[i];                                                       \
		char id[24];                                                                              \
		const struct rm_metric_label l[] = { { "session", id }, { "peer", c->peer } };            \
		if (c->closing)                                                                           \
			continue;                                                                         \
		snprintf(id, sizeof(id), "%" PRId64, c->session_id);                                      \
		rm_metrics_sample(f, "rocemeter_collector_session_" metric "_total", l, 2, c->member);    \
	}
	SESSION_SERIES(SESSION_FAMILY_)
#undef SESSION_FAMILY_
}

int rm_collector_run(const struct rm_collect_settings *cs, const struct rm_store_spec *spec, uint32_t pen,
		     volatile sig_atomic_t *stop)
{
	struct server srv = { .cs = cs, .pen = pen, .lfd = -1 };
	struct rm_rules_limits lim = { cs->max_sessions, cs->max_epochs, cs->inactivity_timeout_ms };
	struct rm_rules_sink rsink = { rules_epoch, rules_drop, rules_log, rules_room };
	uint64_t reserve = (uint64_t)cs->max_handshakes * RM_BUDGET_HANDSHAKE_BYTES;
	char err[512];
	struct pollfd *pfd = NULL;
	uint64_t last_tick = 0;
	char store_desc[1400];
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
	srv.budget = rm_budget_new(cs->max_memory_bytes, budget_refused, &srv);
	if (!srv.budget || rm_collect_memory_check(cs, err, sizeof(err)) < 0 || rm_budget_try(srv.budget, reserve) < 0) {
		rm_log(RM_LOG_ERR, "%s", srv.budget ? err : "out of memory");
		goto out;
	}
	srv.st = rm_backend_open(spec, cs->collector_id, cs->store_buffer_bytes, cs->store_spool_dir, err, sizeof(err));
	if (!srv.st) {
		rm_log(RM_LOG_ERR, "%s", err);
		goto out;
	}
	srv.rules = rm_rules_new(&lim, &rsink, &srv);
	srv.conn_counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	srv.minute_sources = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	if (!srv.rules)
		goto out;
	rm_rules_set_budget(srv.rules, srv.budget);
	rm_backend_set_budget(srv.st, srv.budget);
	srv.lfd = open_listener(cs->listen, srv.ctx ? (int)((cs->handshake_timeout_ms + 999) / 1000) : 0);
	if (srv.lfd < 0)
		goto out;
	srv.run_id = rm_backend_run_start(srv.st, cs->listen, srv.ctx ? "tls" : "tcp", &lim, cs->max_raw_records, pen,
					now_ms());
	if (srv.run_id == RM_BACKEND_REFUSED) {
		rm_log(RM_LOG_ERR, "%s", rm_backend_error(srv.st));
		ret = 2; /* a configuration error: a restart cannot mend it */
		goto out;
	}
	if (srv.run_id < 0) {
		rm_log(RM_LOG_ERR, "%s: %s", srv.st->ops->drop_kind, rm_backend_error(srv.st));
		goto out;
	}
	store_limits(&srv);
	srv.raw_bytes = rm_backend_raw_bytes(srv.st);
	if (spec->kind == RM_STORE_SQLITE)
		snprintf(store_desc, sizeof(store_desc), "database %s", spec->path);
	else
		snprintf(store_desc, sizeof(store_desc),
			 "ClickHouse store %s database %s, collector ID %s, store_buffer_bytes %" PRIu64
			 ", store_spool_dir %s",
			 spec->ch.base, spec->ch.database, rm_backend_collector_id(srv.st),
			 rm_backend_buffer_capacity(srv.st), cs->store_spool_dir);
	rm_log(RM_LOG_NOTICE, "listening on %s (%s), %s; limits: max_sessions %u, max_epochs %u per session, "
	       "max_raw_records %u, inactivity_timeout_ms %" PRIu64 ", %u Templates and %u Observation Domains "
	       "per session; PEN %u",
	       cs->listen, srv.ctx ? "TLS 1.3, mutual authentication" : "plain TCP", store_desc,
	       cs->max_sessions,
	       cs->max_epochs, cs->max_raw_records, cs->inactivity_timeout_ms, RM_IPFIX_MAX_TEMPLATES,
	       RM_RULES_MAX_DOMAINS, pen);
	rm_log(RM_LOG_NOTICE, "limits: max_handshakes %u (%u per source), handshake_timeout_ms %" PRIu64
	       ", session_timeout_ms %" PRIu64 ", message_timeout_ms %" PRIu64 ", dead_peer_timeout_ms %" PRIu64
	       "; max_raw_bytes %" PRIu64 " (%" PRIu64 " per session, %" PRIu64 " stored); max_memory_bytes %" PRIu64
	       " (bytes per handshake slot %u, session %u, epoch %u, Template %u + its octets)",
	       cs->max_handshakes, cs->max_handshakes_per_source, cs->handshake_timeout_ms, cs->session_timeout_ms,
	       cs->message_timeout_ms, cs->dead_peer_timeout_ms, cs->max_raw_bytes, cs->max_raw_bytes_per_session,
	       srv.raw_bytes, cs->max_memory_bytes, RM_BUDGET_HANDSHAKE_BYTES, RM_BUDGET_SESSION_BYTES,
	       RM_BUDGET_EPOCH_BYTES, RM_BUDGET_TEMPLATE_BYTES);

	if (cs->metrics[0]) {
		srv.metrics = rm_metrics_start(cs->metrics, render_metrics, &srv, err, sizeof(err));
		if (!srv.metrics) {
			rm_log(RM_LOG_ERR, "%s", err);
			goto out;
		}
		rm_log(RM_LOG_NOTICE, "metrics: serving /metrics on %s (port %u)", cs->metrics,
		       rm_metrics_port(srv.metrics));
	}
	sd_notify(0, "READY=1"); /* rocemeter-collect.service is Type=notify: listening (and serving metrics) now */
	rm_metrics_lock(srv.metrics);
	while (!*stop) {
		size_t n = srv.nconns + 1, nc = srv.nconns; /* accept() below may grow the array */
		struct pollfd *np = realloc(pfd, n * sizeof(*np));
		int more = 0, timeout, rc;
		uint64_t mono;

		if (!np) {
			rm_log(RM_LOG_ERR, "out of memory");
			break;
		}
		pfd = np;
		pfd[0].fd = srv.lfd;
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		for (size_t i = 0; i < nc; i++) {
			pfd[i + 1].fd = srv.conns[i]->fd;
			pfd[i + 1].events = (short)(POLLIN | (srv.conns[i]->want_write ? POLLOUT : 0));
			pfd[i + 1].revents = 0;
			more |= srv.conns[i]->more;
		}
		mono = mono_ms();
		timeout = more ? 0 : last_tick + TICK_MS > mono ? (int)(last_tick + TICK_MS - mono) : 0;
		rm_metrics_unlock(srv.metrics); /* a scrape reads the server while it waits */
		rc = poll(pfd, n, timeout);
		rm_metrics_lock(srv.metrics);
		if (rc < 0 && errno != EINTR) {
			rm_log(RM_LOG_ERR, "poll: %s", strerror(errno));
			break;
		}
		/* Each connection's turn, bounded; then new connections. */
		for (size_t i = 0; i < nc; i++) {
			struct conn *c = srv.conns[i];

			if (!c->closing && ((rc > 0 && pfd[i + 1].revents) || c->more))
				serve(c);
		}
		if (rc > 0 && (pfd[0].revents & POLLIN))
			on_accept(&srv);
		/*
		 * The round's Messages before poll() blocks; while sessions have
		 * more, the batch bounds of process_buffer() decide.
		 */
		more = 0;
		for (size_t i = 0; i < srv.nconns; i++)
			more |= srv.conns[i]->more && !srv.conns[i]->closing;
		if (!more)
			batch_commit(&srv);
		mono = mono_ms();
		if (mono - last_tick >= TICK_MS) {
			tick(&srv, now_ms(), mono);
			last_tick = mono;
		}
		reap(&srv);
	}
	ret = 0;
	sd_notify(0, "STOPPING=1");
	for (size_t i = 0; i < srv.nconns; i++) {
		struct conn *c = srv.conns[i];

		if (c->handshaking) {
			c->closing = 1;
			c->handshaking = 0;
			srv.handshakes--;
		} else {
			end_session(c, "collector shutdown");
		}
	}
	flush_connections(&srv);
	batch_commit(&srv);
	reap(&srv);
	rm_backend_run_stop(srv.st, srv.run_id, now_ms());
	rm_log(RM_LOG_NOTICE, "stopped");
out:
	if (srv.metrics) {
		rm_metrics_unlock(srv.metrics);
		rm_metrics_stop(srv.metrics);
	}
	free(pfd);
	free(srv.conns);
	if (srv.lfd >= 0)
		close(srv.lfd);
	if (srv.rules)
		rm_rules_free(srv.rules);
	if (srv.conn_counts)
		g_hash_table_destroy(srv.conn_counts);
	if (srv.minute_sources)
		g_hash_table_destroy(srv.minute_sources);
	rm_backend_close(srv.st);
	rm_budget_free(srv.budget);
	if (srv.ctx)
		SSL_CTX_free(srv.ctx);
	return ret;
}
