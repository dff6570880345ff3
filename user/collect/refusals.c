// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * refusals.c - the connections that never become Transport Sessions
 * (collector_int.h): each refused one is closed and counted per minute,
 * source and outcome, and the counts are written to the store's
 * `connections` rows in the open batch. Called by accept.c (handshakes),
 * session.c (admission) and collector.c (timeouts, the minute's flush).
 */
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

#include "collector_int.h"
#include "common/log.h"

/* docs/collector.md "What is stored": sources with a `connections` row of their own per minute. */
#define CONN_SOURCES_PER_MINUTE 64

static const char *const outcome_names[] = {
#define OUTCOME_NAME_(name, text) [CO_##name] = text,
	CONN_OUTCOMES(OUTCOME_NAME_)
#undef OUTCOME_NAME_
};

/* Refused connections of one outcome and source in the current minute. */
struct conn_count {
	char source[INET6_ADDRSTRLEN];
	enum conn_outcome outcome;
	uint64_t count, unflushed, first_ms, last_ms;
	char detail[200];
};

/* Write the counts not yet written (in the open batch). */
void rm_refusals_flush(struct rm_collector *s)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, s->conn_counts);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct conn_count *n = v;

		if (!n->unflushed)
			continue;
		rm_collector_batch_begin(s);
		rm_collector_store_check(s,
					 rm_backend_connections(s->store, s->minute_ms, n->source,
								outcome_names[n->outcome], n->unflushed, n->first_ms,
								n->last_ms, n->detail),
					 "connections");
		n->unflushed = 0;
	}
}

/* A new minute: write the last one's counts, start empty. */
void rm_refusals_minute(struct rm_collector *s, uint64_t t)
{
	uint64_t minute = t / MINUTE_MS * MINUTE_MS;

	if (minute == s->minute_ms)
		return;
	rm_refusals_flush(s);
	g_hash_table_remove_all(s->conn_counts);
	g_hash_table_remove_all(s->minute_sources);
	s->minute_ms = minute;
}

/* The metric counter of a refused connection's outcome (RM_COLLECTOR_STATS refused_*). */
static uint64_t *refused_counter(struct rm_collector *s, enum conn_outcome o)
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

/*
 * Count a connection that will not be a Transport Session, per minute,
 * source and outcome; the first of each in a minute is logged. Sources
 * beyond CONN_SOURCES_PER_MINUTE in a minute are counted as "other", so
 * the rows and log lines of a minute are bounded whatever the sources.
 */
static void count_connection(struct rm_collector *s, const struct conn *c, enum conn_outcome o, const char *detail)
{
	uint64_t t = rm_clock_wall_ms();
	const char *src = c->source;
	char key[INET6_ADDRSTRLEN + 32];
	struct conn_count *n;

	rm_refusals_minute(s, t);
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
		rm_log(RM_LOG_WARNING,
		       "connection from %s refused (%s): %s; more of these from %s this minute are only counted",
		       c->peer, outcome_names[o], detail, src);
	}
	n->count++;
	(*refused_counter(s, o))++;
	n->unflushed++;
	n->last_ms = t;
	snprintf(n->detail, sizeof(n->detail), "%s", detail);
}

/* A connection that is not admitted (or will not be): counted, closed after the loop pass. */
void rm_refusals_add(struct conn *c, enum conn_outcome o, const char *detail)
{
	struct rm_collector *s = c->srv;

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
