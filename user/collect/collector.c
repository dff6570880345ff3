// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * collector.c - the server of `rocemeter collect` (cmd_collect.c): its
 * start, the poll() loop (rm_collector_step: every connection's turn, then
 * new connections, the batch's commit, the timers) and its stop. The
 * connections are in accept.c and session.c, the refused ones in
 * refusals.c, the batch in batch.c, the metrics in collector_metrics.c.
 * See collector.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "collector_int.h"
#include "common/log.h"

/* Timers (handshake, message, session, epochs) and connection counts are looked at this often. */
#define TICK_MS 1000

/* A ready connection's turn: its handshake, or its session's Messages. */
static void serve(struct conn *c)
{
	if (c->handshaking)
		rm_accept_handshake(c);
	else
		rm_session_data(c);
}

/* Free the connections that ended in this pass; the others keep their accept order. */
static void reap(struct rm_collector *s)
{
	size_t j = 0;

	for (size_t i = 0; i < s->nconns; i++) {
		if (s->conns[i]->closing)
			rm_session_free(s->conns[i]);
		else
			s->conns[j++] = s->conns[i];
	}
	s->nconns = j;
}

/* Timers: handshakes, incomplete Messages, silent sessions, epochs; then the connection counts. */
static void tick(struct rm_collector *s, uint64_t t, uint64_t mono)
{
	const struct rm_collect_settings *cs = s->cs;
	char r[600], how[200];

	rm_collector_batch_begin(s);
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];

		if (c->closing)
			continue;
		if (c->handshaking) {
			if (mono - c->accepted_mono >= cs->handshake_timeout_ms) {
				snprintf(how, sizeof(how),
					 "no authorised peer after %" PRIu64 " ms (handshake_timeout_ms %" PRIu64 ")",
					 mono - c->accepted_mono, cs->handshake_timeout_ms);
				rm_refusals_add(c, CO_HANDSHAKE_TIMEOUT, how);
			}
			continue;
		}
		if (c->msg_start_mono && mono - c->msg_start_mono >= cs->message_timeout_ms) {
			snprintf(how, sizeof(how), "timed out (message_timeout_ms %" PRIu64 ")",
				 cs->message_timeout_ms);
			rm_session_eof_reason(c, how, r, sizeof(r));
			rm_session_end(c, r);
			continue;
		}
		if (cs->session_timeout_ms && mono - c->last_rx_mono >= cs->session_timeout_ms) {
			snprintf(r, sizeof(r), "no data for %" PRIu64 " ms (session_timeout_ms %" PRIu64 ")",
				 mono - c->last_rx_mono, cs->session_timeout_ms);
			rm_session_end(c, r);
			continue;
		}
		if (c->rs) {
			rm_rules_tick(c->rs, t);
			rm_rules_flush(c->rs);
		}
	}
	rm_refusals_minute(s, t);
	rm_refusals_flush(s);
	rm_collector_batch_commit(s);
	rm_journal_tick(s->journal);
}

/* Every limit of the run, by its configuration key, for `report --limits`. */
static void store_limits(struct rm_collector *s)
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
		{ "max_observation_points", cs->max_observation_points },
		{ "max_handshakes", cs->max_handshakes },
		{ "max_handshakes_per_source", cs->max_handshakes_per_source },
		{ "handshake_timeout_ms", cs->handshake_timeout_ms },
		{ "session_timeout_ms", cs->session_timeout_ms },
		{ "message_timeout_ms", cs->message_timeout_ms },
		{ "dead_peer_timeout_ms", cs->dead_peer_timeout_ms },
		{ "max_raw_bytes", cs->max_raw_bytes },
		{ "max_raw_bytes_per_session", cs->max_raw_bytes_per_session },
		{ "max_memory_bytes", cs->max_memory_bytes },
		{ "max_memory_bytes_per_session", rm_collect_memory_share(cs) },
	};

	rm_collector_batch_begin(s);
	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++)
		rm_collector_store_check(s, rm_backend_run_limit(s->store, s->run_id, lim[i].name, lim[i].value),
					 "run limits");
	rm_collector_batch_commit(s);
}

/* Where it listens and stores, and every limit: the two lines of the start. */
static void log_start(const struct rm_collector *s, const struct rm_store_spec *spec)
{
	const struct rm_collect_settings *cs = s->cs;
	char store_desc[1400];

	if (spec->kind == RM_STORE_SQLITE)
		snprintf(store_desc, sizeof(store_desc), "database %s", spec->path);
	else
		snprintf(store_desc, sizeof(store_desc),
			 "ClickHouse store %s database %s, collector ID %s, store_buffer_bytes %" PRIu64
			 ", store_spool_dir %s",
			 spec->ch.base, spec->ch.database, rm_backend_collector_id(s->store),
			 rm_backend_buffer_capacity(s->store), cs->store_spool_dir);
	rm_log(RM_LOG_NOTICE,
	       "listening on %s (%s), %s; limits: max_sessions %u, max_epochs %u per session, "
	       "max_raw_records %u, inactivity_timeout_ms %" PRIu64 ", %u Templates and %u Observation Domains "
	       "per session; PEN %u",
	       cs->listen, s->ctx ? "TLS 1.3, mutual authentication" : "plain TCP", store_desc, cs->max_sessions,
	       cs->max_epochs, cs->max_raw_records, cs->inactivity_timeout_ms, RM_IPFIX_MAX_TEMPLATES,
	       RM_RULES_MAX_DOMAINS, s->pen);
	rm_log(RM_LOG_NOTICE,
	       "limits: max_handshakes %u (%u per source), handshake_timeout_ms %" PRIu64
	       ", session_timeout_ms %" PRIu64 ", message_timeout_ms %" PRIu64 ", dead_peer_timeout_ms %" PRIu64
	       "; max_raw_bytes %" PRIu64 " (%" PRIu64 " per session, %" PRIu64 " stored); max_memory_bytes %" PRIu64
	       " (%" PRIu64 " per session; bytes per handshake slot %u, session %u, epoch %u, Template %u + its "
	       "octets)",
	       cs->max_handshakes, cs->max_handshakes_per_source, cs->handshake_timeout_ms, cs->session_timeout_ms,
	       cs->message_timeout_ms, cs->dead_peer_timeout_ms, cs->max_raw_bytes, cs->max_raw_bytes_per_session,
	       s->raw_bytes, cs->max_memory_bytes, rm_collect_memory_share(cs), RM_BUDGET_HANDSHAKE_BYTES,
	       RM_BUDGET_SESSION_BYTES, RM_BUDGET_EPOCH_BYTES, RM_BUDGET_TEMPLATE_BYTES);
}

/* Undo what rm_collector_start set up, any part of it, and free s. */
static void collector_free(struct rm_collector *s)
{
	if (s->metrics) {
		rm_metrics_unlock(s->metrics);
		rm_metrics_stop(s->metrics);
	}
	free(s->pfd);
	free(s->conns);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->rules)
		rm_rules_free(s->rules);
	if (s->conn_counts)
		g_hash_table_destroy(s->conn_counts);
	if (s->minute_sources)
		g_hash_table_destroy(s->minute_sources);
	rm_journal_close(s->journal);
	rm_backend_close(s->store);
	rm_seq_points_free(s->points);
	rm_budget_free(s->budget);
	if (s->ctx)
		SSL_CTX_free(s->ctx);
	free(s);
}

int rm_collector_start(const struct rm_collect_settings *cs, const struct rm_store_spec *spec, uint32_t pen,
		       struct rm_collector **out)
{
	struct rm_collector *s = calloc(1, sizeof(*s));
	struct rm_rules_limits lim = { cs->max_sessions, cs->max_epochs, cs->inactivity_timeout_ms };
	uint64_t reserve = (uint64_t)cs->max_handshakes * RM_BUDGET_HANDSHAKE_BYTES;
	char err[512];
	int ret = 1;

	*out = NULL;
	if (!s) {
		rm_log(RM_LOG_ERR, "out of memory");
		return 1;
	}
	s->cs = cs;
	s->pen = pen;
	s->lfd = -1;
	if (cs->tls.plain_tcp) {
		rm_log(RM_LOG_WARNING,
		       "WARNING: plain TCP transport: sessions are neither authenticated nor confidential "
		       "(the RoCEv2 sequence observation profile requires TLS 1.3 with mutual authentication)");
	} else {
		s->ctx = rm_tls_server_ctx(&cs->tls, err, sizeof(err));
		if (!s->ctx) {
			rm_log(RM_LOG_ERR, "TLS: %s", err);
			goto out;
		}
	}
	s->budget = rm_budget_new(cs->max_memory_bytes, rm_session_budget_refused, s);
	rm_budget_set_share_limit(s->budget, rm_collect_memory_share(cs));
	if (!s->budget || rm_collect_memory_check(cs, err, sizeof(err)) < 0 || rm_budget_try(s->budget, reserve) < 0) {
		rm_log(RM_LOG_ERR, "%s", s->budget ? err : "out of memory");
		goto out;
	}
	s->store =
		rm_backend_open(spec, cs->collector_id, cs->store_buffer_bytes, cs->store_spool_dir, err, sizeof(err));
	if (!s->store) {
		rm_log(RM_LOG_ERR, "%s", err);
		goto out;
	}
	s->rules = rm_rules_new(&lim, &rm_session_rules_sink, s);
	s->conn_counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	s->minute_sources = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	if (!s->rules)
		goto out;
	rm_rules_set_budget(s->rules, s->budget);
	rm_rules_set_accepted(s->rules, rm_seq_points_accepted);
	rm_backend_set_budget(s->store, s->budget);
	s->lfd = rm_accept_listen(cs->listen, s->ctx ? (int)((cs->handshake_timeout_ms + 999) / 1000) : 0);
	if (s->lfd < 0)
		goto out;
	s->run_id = rm_backend_run_start(s->store, cs->listen, s->ctx ? "tls" : "tcp", &lim, cs->max_raw_records, pen,
					 rm_clock_wall_ms());
	if (s->run_id == RM_BACKEND_REFUSED) {
		rm_log(RM_LOG_ERR, "%s", rm_backend_error(s->store));
		ret = 2; /* a configuration error: a restart cannot mend it */
		goto out;
	}
	if (s->run_id < 0) {
		rm_log(RM_LOG_ERR, "%s: %s", s->store->ops->drop_kind, rm_backend_error(s->store));
		goto out;
	}
	if (rm_backend_has_journal(s->store)) {
		char jdir[300];

		if (rm_backend_journal_dir(s->store, spec->path, jdir, sizeof(jdir)) < 0) {
			rm_log(RM_LOG_ERR, "received-Messages journal: its directory's name is too long");
			goto out;
		}
		s->journal = rm_journal_open(jdir, s->store, pen, err, sizeof(err));
		if (!s->journal && err[0] && spec->kind == RM_STORE_SQLITE) {
			rm_log(RM_LOG_ERR, "%s", err);
			goto out;
		}
		if (!s->journal && err[0]) /* ClickHouse: the spool directory's parent may be missing */
			rm_log(RM_LOG_ERR,
			       "%s: what the collector reads is not protected against a crash (kill -9 loses what "
			       "was read and not inserted without a count)",
			       err);
		rm_journal_recover(s->journal, rm_clock_wall_ms());
	}
	store_limits(s);
	s->raw_bytes = rm_backend_raw_bytes(s->store);
	log_start(s, spec);

	if (cs->metrics[0]) {
		s->metrics = rm_metrics_start(cs->metrics, rm_collector_render_metrics, s, err, sizeof(err));
		if (!s->metrics) {
			rm_log(RM_LOG_ERR, "%s", err);
			goto out;
		}
		rm_log(RM_LOG_NOTICE, "metrics: serving /metrics on %s (port %u)", cs->metrics,
		       rm_metrics_port(s->metrics));
	}
	sd_notify(0, "READY=1"); /* rocemeter-collect.service is Type=notify: listening (and serving metrics) now */
	rm_metrics_lock(s->metrics);
	*out = s;
	return 0;
out:
	collector_free(s);
	return ret;
}

int rm_collector_step(struct rm_collector *s)
{
	size_t n = s->nconns + 1, nc = s->nconns; /* accept() below may grow the array */
	struct pollfd *np = realloc(s->pfd, n * sizeof(*np));
	struct pollfd *pfd;
	int more = 0, timeout, rc;
	uint64_t mono;

	if (!np) {
		rm_log(RM_LOG_ERR, "out of memory");
		return -1;
	}
	pfd = s->pfd = np;
	mono = rm_clock_mono_ms();
	pfd[0].fd = mono < s->accept_resume_mono ? -1 : s->lfd; /* accept() failed: the listener rests */
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	for (size_t i = 0; i < nc; i++) {
		pfd[i + 1].fd = s->conns[i]->fd;
		pfd[i + 1].events = (short)(POLLIN | (s->conns[i]->want_write ? POLLOUT : 0));
		pfd[i + 1].revents = 0;
		more |= s->conns[i]->more;
	}
	mono = rm_clock_mono_ms();
	timeout = more ? 0 : s->last_tick + TICK_MS > mono ? (int)(s->last_tick + TICK_MS - mono) : 0;
	if (pfd[0].fd < 0 && s->accept_resume_mono > mono && (int)(s->accept_resume_mono - mono) < timeout)
		timeout = (int)(s->accept_resume_mono - mono);
	rm_metrics_unlock(s->metrics); /* a scrape reads the server while it waits */
	rc = poll(pfd, n, timeout);
	rm_metrics_lock(s->metrics);
	if (rc < 0 && errno != EINTR) {
		rm_log(RM_LOG_ERR, "poll: %s", strerror(errno));
		return -1;
	}
	/* Each connection's turn, bounded; then new connections. */
	for (size_t i = 0; i < nc; i++) {
		struct conn *c = s->conns[i];

		if (!c->closing && ((rc > 0 && pfd[i + 1].revents) || c->more))
			serve(c);
	}
	if (rc > 0 && (pfd[0].revents & POLLIN))
		rm_accept_conn(s);
	/*
	 * The round's Messages before poll() blocks; while sessions have
	 * more, the batch bounds of process_buffer() (session.c) decide.
	 */
	more = 0;
	for (size_t i = 0; i < s->nconns; i++)
		more |= s->conns[i]->more && !s->conns[i]->closing;
	if (!more)
		rm_collector_batch_commit(s);
	mono = rm_clock_mono_ms();
	if (mono - s->last_tick >= TICK_MS) {
		tick(s, rm_clock_wall_ms(), mono);
		s->last_tick = mono;
	}
	reap(s);
	return 0;
}

void rm_collector_stop(struct rm_collector *s)
{
	sd_notify(0, "STOPPING=1");
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];

		if (c->handshaking) {
			c->closing = 1;
			c->handshaking = 0;
			s->handshakes--;
		} else {
			rm_session_end(c, "collector shutdown");
		}
	}
	rm_refusals_flush(s);
	rm_collector_batch_commit(s);
	reap(s);
	rm_backend_run_stop(s->store, s->run_id, rm_clock_wall_ms());
	rm_log(RM_LOG_NOTICE, "stopped");
	collector_free(s);
}

int rm_collector_run(const struct rm_collect_settings *cs, const struct rm_store_spec *spec, uint32_t pen,
		     volatile sig_atomic_t *stop)
{
	struct rm_collector *s;
	int ret = rm_collector_start(cs, spec, pen, &s);

	if (ret)
		return ret;
	while (!*stop)
		if (rm_collector_step(s) < 0)
			break;
	rm_collector_stop(s);
	return 0;
}
