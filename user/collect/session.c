// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * session.c - one Transport Session per authorised connection
 * (collector_int.h): admission, reading (bounded per turn), framing and
 * decoding (ipfix_decode.h), the collector rules (collector_rules.h), raw
 * records within their limits, the memory budget's drops, and the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector_int.h"
#include "common/log.h"
#include "rocemeter/ipfix_ie.h"

#define BUF_CAP (RM_IPFIX_MAX_MSG + 65536)
/*
 * Octets read from one session per loop turn (docs/collector.md "Fairness
 * and shutdown"), then the next session's turn. A turn is bounded, so
 * SIGTERM is seen after at most one.
 */
#define TURN_OCTETS 262144
/*
 * Batch bounds: the store may write (store.h: when its flush is due) after
 * this many Messages, once the batch is this old, or when the poll() round
 * ends (before the loop blocks again), whichever comes first; never in the
 * middle of a Message.
 */
#define BATCH_MAX_MESSAGES 64
#define BATCH_MAX_MS       20

/* The records_* counter of each verdict (RM_COLLECTOR_STATS follows enum rm_verdict). */
static uint64_t *verdict_counter(struct rm_collector *s, enum rm_verdict v)
{
	_Static_assert(offsetof(struct rm_collector_stats, records_unbound) -
				       offsetof(struct rm_collector_stats, records_accepted) ==
			       (RM_V_UNBOUND - RM_V_ACCEPTED) * sizeof(uint64_t),
		       "the records_* rows of RM_COLLECTOR_STATS follow enum rm_verdict");
	return &s->stats.records_accepted + (v < RM_V__COUNT ? v : RM_V__COUNT);
}

/* ---------------- memory budget and raw octets ---------------- */

/* The budget refused something: a collector resource drop of the session at hand (0: none yet). */
void rm_session_budget_refused(void *arg, const char *what, uint64_t bytes, const struct rm_budget_share *sh)
{
	struct rm_collector *s = arg;
	int64_t sid = s->cur ? s->cur->session_id : 0;
	uint64_t mono = rm_clock_mono_ms();
	char d[200];

	if (sh) /* the session at its share: the others keep their room */
		snprintf(d, sizeof(d),
			 "%s of %" PRIu64 " bytes refused: max_memory_bytes_per_session %" PRIu64 ", %" PRIu64
			 " in use by this session",
			 what, bytes, rm_budget_share_limit(s->budget), sh->used);
	else
		snprintf(d, sizeof(d),
			 "%s of %" PRIu64 " bytes refused: max_memory_bytes %" PRIu64 ", %" PRIu64 " in use", what,
			 bytes, rm_budget_limit(s->budget), rm_budget_used(s->budget));
	rm_collector_batch_begin(s);
	s->stats.drops_memory_budget++;
	rm_collector_store_check(s, rm_backend_drop(s->store, sid, "memory-budget", d, rm_clock_wall_ms()), "drop");
	if (!s->budget_logged_mono || mono - s->budget_logged_mono >= MINUTE_MS) {
		rm_log(RM_LOG_WARNING,
		       "session %" PRId64 ": %s (collector resource drop; more this minute are only counted)", sid, d);
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
	struct rm_collector *s = c->srv;
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
		rm_collector_store_check(s, rm_backend_drop(s->store, c->session_id, "raw-byte-limit", d, c->now_ms),
					 "drop");
		return;
	}
	db_drops = rm_backend_drops(s->store);
	rc = rm_backend_raw(s->store, c->session_id, domain, tid, r, verdict, reason, raw, len, t, tl, c->now_ms);
	if (rc == 0 && rm_backend_drops(s->store) == db_drops) /* else a "database" drop, counted by the store */
		s->stats.drops_raw_record_limit++;
	rm_collector_store_check(s, rc, "raw record");
	if (rc == 1) {
		c->raw_bytes += bytes;
		s->raw_bytes += bytes;
	}
}

/* ---------------- sinks ---------------- */

/*
 * Epochs by outcome when the outcome is settled, not when the epoch
 * leaves: a final report accepted (complete, or incomplete with gaps), an
 * invalidation, or the retirement of an open epoch (incomplete). A settled
 * epoch that a later record invalidates is counted once more, apart.
 */
static void count_settled(struct rm_collector *s, struct rm_epoch *e)
{
	if (e->state == RM_EPOCH_OPEN && !e->retired_ms)
		return;
	if (!e->sink_counted) {
		if (e->outcome == RM_OUTCOME_COMPLETE)
			s->stats.epochs_complete++;
		else if (e->outcome == RM_OUTCOME_INVALID)
			s->stats.epochs_invalid++;
		else
			s->stats.epochs_incomplete++;
		e->sink_counted = (uint8_t)e->outcome;
	} else if (e->outcome == RM_OUTCOME_INVALID && e->sink_counted != RM_OUTCOME_INVALID) {
		s->stats.epochs_invalidated_after_final++;
		e->sink_counted = RM_OUTCOME_INVALID;
	}
}

/* An epoch changed or is retired: the store writes its latest state with the next transaction. */
static void rules_epoch(void *arg, struct rm_epoch *e)
{
	struct rm_collector *s = arg;

	count_settled(s, e);
	rm_collector_store_check(s, rm_backend_epoch(s->store, e), "epoch");
}

/* The budget is full: the retired epochs waiting for the store's write give their charges back. */
static int rules_room(void *arg)
{
	return rm_backend_make_room(((struct rm_collector *)arg)->store);
}

static void rules_drop(void *arg, uint64_t session_id, uint32_t domain, uint64_t epoch_id, const char *detail)
{
	struct rm_collector *s = arg;

	s->stats.drops_epoch_admission++;
	rm_collector_store_check(
		s, rm_backend_drop(s->store, (int64_t)session_id, "epoch-admission", detail, rm_clock_wall_ms()),
		"drop");
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

const struct rm_rules_sink rm_session_rules_sink = { rules_epoch, rules_drop, rules_log, rules_room };

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
		rm_log(RM_LOG_WARNING,
		       "session %" PRId64 ": more rejections (counted, kept raw within the raw record limits)",
		       c->session_id);
}

/*
 * The decoder's notes are caused by the exporter (a withdrawal per Message
 * is valid IPFIX): the first NOTES_LOGGED of a session are logged, then at
 * most one a minute with the count of those only counted since.
 */
#define NOTES_LOGGED 10
static void dec_note(void *arg, uint32_t domain, const char *msg)
{
	struct conn *c = arg;
	uint64_t mono = rm_clock_mono_ms();

	if (++c->notes > NOTES_LOGGED && mono - c->note_mono < MINUTE_MS) {
		c->notes_held++;
		return;
	}
	c->note_mono = mono;
	if (c->notes_held)
		rm_log(RM_LOG_NOTICE, "session %" PRId64 " domain %u: %s (and %" PRIu64 " more notes not logged)",
		       c->session_id, domain, msg, c->notes_held);
	else
		rm_log(RM_LOG_NOTICE, "session %" PRId64 " domain %u: %s%s", c->session_id, domain, msg,
		       c->notes == NOTES_LOGGED ? " (more notes of this session: at most one a minute)" : "");
	c->notes_held = 0;
}

/*
 * The exporter reports what an earlier Transport Session of its delivered
 * (rocemeter/ipfix_ie.h RM_TID_RELIABILITY): the records the collector's
 * kernel acknowledged and this collector never read (it was killed, or
 * crashed) become a collector resource drop "unread-at-crash" of that
 * session. Only a session of the same authorised peer can be spoken of.
 */
#define RELIABILITY_MAX 16                /* records handled per session: what rocemeter's exporter sends at most */
#define TLS_RECORD_MAX  (16384 + 256 + 5) /* a TLS 1.3 record read but not yet decrypted (RFC 8446 5.2) */

/*
 * The most Data Records a session can have had acknowledged by this
 * host's kernel and never read, an octet a record: the largest receive
 * buffer TCP autotuning gives a socket (net.ipv4.tcp_rmem's maximum, read
 * now: the collector sets no SO_RCVBUF), the session's buffer (BUF_CAP)
 * and one TLS record. 0 (the store's 2^31 - 1) when tcp_rmem cannot be read.
 */
static uint64_t unread_max(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_rmem", "r");
	unsigned long long lo, def, hi;
	uint64_t v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu %llu", &lo, &def, &hi) == 3 && hi <= INT32_MAX)
		v = hi + BUF_CAP + TLS_RECORD_MAX;
	fclose(f);
	return v;
}
static void dec_reliability(void *arg, uint32_t domain, const struct rm_ipfix_reliability *r)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct conn *c = arg;
	struct rm_collector *s = c->srv;
	char a4[INET_ADDRSTRLEN], a6[INET6_ADDRSTRLEN], peer[80], alt[80], subj[256] = "";
	struct rm_store_acked a = { .peer = peer,
				    .subject = subj,
				    .reporting_id = c->session_id,
				    .records = r->records,
				    .ended_ms = r->ended_ms };
	struct rm_store_acked_result res;
	int rc;

	if (c->reliability++ >= RELIABILITY_MAX) {
		if (c->reliability == RELIABILITY_MAX + 1)
			rm_log(RM_LOG_WARNING,
			       "session %" PRId64 ": more than %d Reliability records; the rest are ignored",
			       c->session_id, RELIABILITY_MAX);
		return;
	}
	a.unread_max = unread_max();
	inet_ntop(AF_INET6, r->exporter_addr, a6, sizeof(a6));
	snprintf(alt, sizeof(alt), "[%s]:%u", a6, r->exporter_port);
	if (!memcmp(r->exporter_addr, mapped, sizeof(mapped))) {
		inet_ntop(AF_INET, r->exporter_addr + 12, a4, sizeof(a4));
		snprintf(peer, sizeof(peer), "%s:%u", a4, r->exporter_port);
		a.peer_alt = alt;
	} else {
		snprintf(peer, sizeof(peer), "%s", alt);
	}
	if (c->ssl)
		rm_tls_peer_subject(c->ssl, subj, sizeof(subj));
	rc = rm_backend_session_acked(s->store, &a, rm_clock_wall_ms(), &res);
	if (rc == 2) {
		rm_log(RM_LOG_NOTICE,
		       "session %" PRId64 ": its exporter reports an earlier session from %s that delivered %" PRIu64
		       " records: matched by the store",
		       c->session_id, peer, r->records);
	} else if (rc > 0) {
		s->stats.drops_unread_at_crash += res.lost;
		rm_log(RM_LOG_WARNING,
		       "session %" PRId64 ": its exporter reports that session %" PRId64 " from %s delivered %" PRIu64
		       " records (%" PRIu64 " Messages acknowledged); %" PRIu64 " were read: %" PRIu64
		       " never read (collector resource drop 'unread-at-crash')",
		       c->session_id, res.id, peer, r->records, r->messages, res.read, res.lost);
	} else if (rc == 0 && res.bad) {
		/* An impossible claim is a bad record of this session, never a count (a forged one). */
		c->rejected++;
		s->stats.records_undecodable++;
		rm_log(RM_LOG_WARNING,
		       "session %" PRId64 ": rejected: a Reliability record says session %" PRId64
		       " from %s delivered %" PRIu64 " records, %" PRIu64 " read: %s",
		       c->session_id, res.id, peer, r->records, res.read, res.why);
	} else {
		rm_log(RM_LOG_NOTICE,
		       "session %" PRId64 ": its exporter reports an earlier session from %s that delivered %" PRIu64
		       " records; not counted: %s",
		       c->session_id, peer, r->records, rc < 0 ? rm_backend_error(s->store) : res.why);
	}
}

/* The exporter's identity as its sessions row keeps it: certificate subject and SANs, the authorised name. */
struct peer_identity {
	char subject[256], name[256];
	const char *s, *n; /* subject, name; NULL: none (plain TCP; no authorised name matched) */
};

static void peer_identity(const struct conn *c, struct peer_identity *p)
{
	p->s = p->n = NULL;
	if (!c->ssl)
		return;
	rm_tls_peer_subject(c->ssl, p->subject, sizeof(p->subject));
	p->s = p->subject;
	if (!rm_tls_authorized_name(c->ssl, &c->srv->cs->tls, p->name, sizeof(p->name)))
		p->n = p->name;
}

/*
 * An observation point's name (Options Template 262): stored per exporter
 * identity and Observation Domain for `report`, so that no other exporter
 * can rename this exporter's points.
 */
static void dec_point(void *arg, uint32_t domain, uint64_t observation_point_id, const char *name)
{
	struct conn *c = arg;
	struct peer_identity id;
	struct rm_store_point p = { .domain = domain, .id = observation_point_id, .name = name };

	peer_identity(c, &id);
	p.peer_name = id.n;
	p.peer_subject = id.s;
	rm_collector_store_check(c->srv, rm_backend_observation_point(c->srv->store, &p, rm_clock_wall_ms()),
				 "observation point");
}

static const struct rm_ipfix_sink dec_sink = {
	.record = dec_record, .reject = dec_reject, .note = dec_note, .reliability = dec_reliability, .point = dec_point
};

/* ---------------- sessions ---------------- */

void rm_session_end(struct conn *c, const char *reason)
{
	struct rm_collector *s = c->srv;
	uint64_t t = rm_clock_wall_ms(), jgen;
	char er[400];
	struct rm_session_counts cnt = {
		.messages = c->messages, .records = c->records, .octets = c->octets, .rejected = c->rejected
	};

	if (c->closing)
		return;
	c->closing = 1;
	s->sessions--;
	snprintf(er, sizeof(er), "session ended: %s", reason);
	rm_collector_batch_begin(s);
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
		rm_collector_store_check(s, rm_backend_session_end(s->store, c->session_id, reason, t, &cnt),
					 "session end");
		rm_rules_session_close(c->rs, er, t);
		c->rs = NULL;
	} else {
		rm_collector_store_check(s, rm_backend_session_end(s->store, c->session_id, reason, t, &cnt),
					 "session end");
	}
	jgen = rm_backend_handed(s->store);
	rm_collector_batch_commit(s);
	rm_collector_store_check(s, rm_backend_flush(s->store),
				 "commit"); /* a session's end and its epochs' outcomes: at once */
	rm_journal_session_end(c, jgen);
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

void rm_session_free(struct conn *c)
{
	if (c->jfd >= 0)
		close(c->jfd);
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
	struct rm_collector *s = c->srv;
	size_t off = 0;
	char err[300];

	for (;;) {
		long m = rm_ipfix_frame(c->buf + off, c->len - off, err, sizeof(err));

		if (m < 0) {
			char r[400];

			snprintf(r, sizeof(r), "IPFIX framing error after %" PRIu64 " messages: %s", c->messages, err);
			rm_session_end(c, r);
			return -1;
		}
		if (m == 0)
			break;
		c->now_ms = rm_clock_wall_ms();
		c->messages++;
		c->octets += (uint64_t)m;
		s->stats.messages++;
		s->stats.received_bytes += (uint64_t)m;
		rm_collector_batch_begin(s);
		s->cur = c;
		int rc = rm_ipfix_message(c->dec, c->buf + off, (size_t)m, &dec_sink, c, err, sizeof(err));

		rm_rules_flush(c->rs);
		rm_journal_counted(c);
		s->cur = NULL;
		s->batch_messages++;
		if (rc < 0) {
			rm_session_end(c, err); /* commits the batch with this Message */
			return -1;
		}
		off += (size_t)m;
		if (s->batch_messages >= BATCH_MAX_MESSAGES || rm_clock_mono_ms() - s->batch_start_ms >= BATCH_MAX_MS)
			rm_collector_batch_commit(s);
	}
	if (off) {
		memmove(c->buf, c->buf + off, c->len - off);
		c->len -= off;
		rm_journal_rotate_due(c);
	}
	/* The message-assembly timer runs from the first octet of the incomplete Message. */
	if (!c->len)
		c->msg_start_mono = 0;
	else if (off || !c->msg_start_mono)
		c->msg_start_mono = rm_clock_mono_ms();
	return 0;
}

void rm_session_eof_reason(struct conn *c, const char *how, char *buf, size_t len)
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
int rm_session_admit(struct conn *c)
{
	struct rm_collector *s = c->srv;
	const char *transport = c->ssl ? "tls" : "tcp";
	struct peer_identity p;
	char d[200];
	int64_t id;

	if (s->sessions >= s->cs->max_sessions || rm_rules_sessions(s->rules) >= s->cs->max_sessions) {
		snprintf(d, sizeof(d), "refused: max_sessions %u sessions open", s->cs->max_sessions);
		rm_collector_batch_begin(s);
		s->stats.sessions_refused++;
		s->stats.drops_session_limit++;
		rm_collector_store_check(s, rm_backend_drop(s->store, 0, "session-limit", d, rm_clock_wall_ms()),
					 "drop");
		rm_refusals_add(c, CO_SESSION_LIMIT, d);
		return -1;
	}
	s->cur = NULL;
	if (rm_budget_take(s->budget, RM_BUDGET_SESSION_BYTES, "session") < 0) {
		snprintf(d, sizeof(d), "refused: max_memory_bytes %" PRIu64 " in use", s->cs->max_memory_bytes);
		rm_refusals_add(c, CO_MEMORY_BUDGET, d);
		return -1;
	}
	c->admitted = 1;
	s->sessions++;
	s->stats.sessions_accepted++;
	rm_collector_batch_begin(s);
	id = rm_backend_session_start(s->store, s->run_id, c->peer, transport, c->started_ms);
	rm_collector_store_check(s, id < 0 ? -1 : 0, "session start");
	c->session_id = id;
	peer_identity(c, &p);
	if (c->ssl)
		rm_collector_store_check(s, rm_backend_session_peer(s->store, id, p.s, p.n), "session peer");
	c->last_rx_mono = rm_clock_mono_ms();
	if (!(c->buf = malloc(BUF_CAP)) || !(c->dec = rm_ipfix_session_new(s->pen)) ||
	    !(c->rs = rm_rules_session_open(s->rules, (uint64_t)id))) {
		rm_log(RM_LOG_ERR, "session %" PRId64 " from %s: out of memory", id, c->peer);
		rm_session_end(c, "out of memory");
		return -1;
	}
	rm_budget_share_init(&c->share, s->budget);
	rm_ipfix_session_set_share(c->dec, &c->share);
	rm_ipfix_session_set_max_points(c->dec, s->cs->max_observation_points);
	rm_rules_session_set_share(c->rs, &c->share);
	rm_journal_session_start(s->journal, c);
	{
		char sid[24];
		struct rm_log_field f[] = { { "SESSION", sid }, { "PEER", c->peer } };

		snprintf(sid, sizeof(sid), "%" PRId64, id);
		if (c->ssl)
			rm_log_fields(RM_LOG_NOTICE, f, 2, "session %" PRId64 " from %s: TLS 1.3 peer %s authorised",
				      id, c->peer, p.subject);
		else
			rm_log_fields(RM_LOG_NOTICE, f, 2,
				      "session %" PRId64 " from %s started (plain TCP, unauthenticated)", id, c->peer);
	}
	return 0;
}

/* A session's turn: read at most TURN_OCTETS, decoding every complete Message. */
void rm_session_data(struct conn *c)
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
					rm_session_eof_reason(c, "peer closed the session", r, sizeof(r));
				} else {
					char how[500];

					if (err == SSL_ERROR_SYSCALL && n < 0 && en)
						snprintf(e, sizeof(e), "connection lost: %s", strerror(en));
					else
						rm_tls_errors(err == SSL_ERROR_SYSCALL ? "connection lost"
										       : "TLS error",
							      e, sizeof(e));
					snprintf(how, sizeof(how), "session failed (%s)", e);
					rm_session_eof_reason(c, how, r, sizeof(r));
				}
				rm_session_end(c, r);
				return;
			}
		} else {
			n = recv(c->fd, c->buf + c->len, room, 0);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
					return;
				snprintf(e, sizeof(e), "session failed (%s)", strerror(errno));
				rm_session_eof_reason(c, e, r, sizeof(r));
				rm_session_end(c, r);
				return;
			}
			if (n == 0) {
				rm_session_eof_reason(c, "peer closed the connection", r, sizeof(r));
				rm_session_end(c, r);
				return;
			}
		}
		rm_journal_append(c, c->buf + c->len, (size_t)n); /* before decoding: a crash loses nothing uncounted */
		c->len += (size_t)n;
		left -= (size_t)n;
		c->last_rx_mono = rm_clock_mono_ms();
		if (process_buffer(c) < 0)
			return;
	}
	c->more = 1;
}
