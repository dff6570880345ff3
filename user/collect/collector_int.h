/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * collector_int.h - what the collector's files share, private to them: the
 * server (struct rm_collector), its connections, the refused connections'
 * outcomes, the clocks, and the calls from one file into another. The
 * public API is collector.h.
 */
#ifndef ROCEMETER_COLLECTOR_INT_H
#define ROCEMETER_COLLECTOR_INT_H

#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <glib.h>

#include "collector.h"
#include "journal.h"
#include "rules/collector_rules.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/tls.h"
#include "rules/ipfix_decode.h"
#include "rules/budget.h"
#include "store/backend.h"
#include "store/store_spec.h"

#define MINUTE_MS 60000

/* Observation points (Observation Domain, observationPointId) with sequence counters of their own (seq_points.c). */
#define RM_COLLECTOR_MAX_POINTS 1024

/* Why a connection never became a Transport Session: the outcome column of `connections`. */
#define CONN_OUTCOMES(X)                                                                     \
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

struct rm_collector;

/*
 * One accepted connection: first a handshake (handshaking: no session row,
 * no buffer, no Transport Session state), then, once admitted, a Transport
 * Session (session_id != 0).
 */
struct conn {
	struct rm_collector *srv;
	int fd;
	SSL *ssl;        /* NULL with plain TCP */
	int handshaking; /* in the handshake pool */
	int heard;       /* handshake: an octet has arrived */
	int tls_up;      /* the handshake completed: close_notify on close */
	int admitted;    /* charged RM_BUDGET_SESSION_BYTES */
	int want_write;
	int more;    /* its turn ended with data perhaps left: serve it without waiting for poll() */
	int closing; /* ended; free after the loop pass */
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
	uint64_t raw_bytes;  /* raw record octets this session stored */
	uint64_t now_ms;     /* time of the Message being processed */
	uint64_t notes;      /* the decoder's notes (Template withdrawn, unusable): the first logged, then a minute's */
	uint64_t note_mono;  /* the last note logged */
	uint64_t notes_held; /* notes since, only counted */
	struct rm_budget_share share; /* its epochs' and Templates' part of the budget (max_memory_bytes_per_session) */
	int jfd;                      /* its received-Messages journal file (journal.h), -1: none */
	uint64_t jbytes;              /* octets received into that file */
	uint32_t reliability; /* Reliability records of the exporter handled (at most RELIABILITY_MAX, session.c) */
};

struct rm_collector {
	const struct rm_collect_settings *cs;
	uint32_t pen;
	SSL_CTX *ctx;
	int lfd;
	struct rm_backend *store;
	struct rm_journal *journal; /* journal.h; NULL: the store keeps none */
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
	/* accept() out of descriptors or memory: the listener rests until then (CLOCK_MONOTONIC ms). */
	uint64_t accept_resume_mono, accept_logged_mono, accept_failures;
	uint32_t accept_backoff_ms;
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
	struct rm_collector_stats
		stats; /* RM_COLLECTOR_STATS; the gauges and the store's drops are read when rendered */
	struct rm_metrics_server *metrics; /* NULL: no --metrics */
	struct rm_seq_points *points;      /* the sequence counters per observation point; NULL until the first */
	/* The loop (collector.c): one pollfd per connection after the listener's, the last tick (CLOCK_MONOTONIC ms). */
	struct pollfd *pfd;
	uint64_t last_tick;
};

/* store_check.c: every store call's result. */

/* Log a failed store call (rc < 0, what: the call) once, for the first failure. */
void rm_collector_store_check(struct rm_collector *s, int rc, const char *what);

/* batch.c: the batch, the only place the store may write (never in the middle of a Message). */

/* Open the batch's transaction if none is open. */
void rm_collector_batch_begin(struct rm_collector *s);
/* End the batch: the store may write. */
void rm_collector_batch_commit(struct rm_collector *s);

/* refusals.c: the connections that never become Transport Sessions, counted per minute and source. */

/* A connection that is not admitted (or will not be): counted, closed after the loop pass. */
void rm_refusals_add(struct conn *c, enum conn_outcome o, const char *detail);
/* Write the refused connections' counts not yet written (in the open batch). */
void rm_refusals_flush(struct rm_collector *s);
/* At t (UNIX ms) in a new minute: write the last one's counts, start empty. */
void rm_refusals_minute(struct rm_collector *s, uint64_t t);

/* accept.c: the listener and the handshakes. */

/*
 * Listen on addr ("ADDR:PORT", "[V6]:PORT", ":PORT"), non-blocking; defer_s
 * > 0 sets TCP_DEFER_ACCEPT. The fd, or -1 (logged).
 */
int rm_accept_listen(const char *addr, int defer_s);
/* Accept a bounded number of connections: handshakes with TLS, sessions at once with plain TCP. */
void rm_accept_conn(struct rm_collector *s);
/* A connection in the handshake: go on with it; authorised and admitted, it reads at once. */
void rm_accept_handshake(struct conn *c);

/* session.c: Transport Sessions. */

/* The rules' sink (collector_rules.h), its arg the server. */
extern const struct rm_rules_sink rm_session_rules_sink;
/* The budget's refusals (budget.h), its arg the server: drops of the session at hand. */
void rm_session_budget_refused(void *arg, const char *what, uint64_t bytes, const struct rm_budget_share *sh);
/* Make a connection a Transport Session. 0, or -1 if refused (counted, closed after the loop pass). */
int rm_session_admit(struct conn *c);
/* A session's turn: read a bounded number of octets, decoding every complete Message. */
void rm_session_data(struct conn *c);
/* End a Transport Session for reason: its row, its epochs retired, written at once. */
void rm_session_end(struct conn *c, const char *reason);
/* Close and free a connection of any state. */
void rm_session_free(struct conn *c);
/* The end reason of a session ended how, naming an incomplete Message in its buffer. */
void rm_session_eof_reason(struct conn *c, const char *how, char *buf, size_t len);

/* seq_points.c: the sequence counters per observation point. */

struct rm_seq_points;
/*
 * The rules accepted report r of domain (rm_rules_set_accepted(), arg the
 * server), prev its epoch's previous one (NULL: none): add the difference.
 */
void rm_seq_points_accepted(void *arg, uint32_t domain, const struct rm_report *r, const struct rm_report *prev);
/* Their counters (rm_metrics_seq_totals(), labels observation_domain and observation_point); p may be NULL. */
void rm_seq_points_write(FILE *f, const struct rm_seq_points *p);
/* NULL is a no-op. */
void rm_seq_points_free(struct rm_seq_points *p);

/* collector_metrics.c */

/* GET /metrics (common/metrics.h), arg the server, on the server's thread; the loop holds the lock except in poll(). */
void rm_collector_render_metrics(void *arg, FILE *f);

#endif /* ROCEMETER_COLLECTOR_INT_H */
