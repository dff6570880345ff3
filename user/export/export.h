/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * export.h - the Exporting Process's transport: IPFIX over TCP with mutually
 * authenticated TLS 1.3 ([SEQOBS] "Export Profile and Template": TCP
 * binding, "reconnection creates a new session and new epochs"; "Security
 * Considerations"; docs/architecture.md "IDs belong to the exporter").
 *
 * The transport runs in its own thread, so a slow or absent collector never
 * blocks the caller (the datapath's event loop). The thread:
 *   1. resolves s->collector (getaddrinfo: names, IPv4 and IPv6 addresses)
 *      and connects to s->port, trying each address;
 *   2. does the TLS 1.3 handshake (tls.h) and the explicit peer authorisation,
 *      then waits up to 4 RTT + 100 ms (at most 2 s) for the collector's
 *      first record: an alert (the collector refused our certificate) fails
 *      the attempt, a ticket or silence counts as acceptance;
 *   3. sends the Templates message first in every Transport Session
 *      (Sequence Number back to 0), then publishes the session number;
 *   4. drains the bounded queue, as few IPFIX Messages as possible (each at
 *      most 65535 octets), Export Time = current UNIX seconds;
 *   5. on any failure (connect, handshake, authorisation, write, peer close)
 *      logs the reason on stderr ("rocemeter: export: ..."), ends the session
 *      (records still queued for it are counted as dropped_session_lost and
 *      never resent: their epoch and report IDs belong to that session;
 *      records already written whose Messages the collector's kernel had
 *      not acknowledged are counted as lost_in_flight), and
 *      reconnects with bounded exponential backoff: 100 ms doubling to 30 s,
 *      each delay drawn uniformly from [delay/2, delay]; the delay falls back
 *      to 100 ms after a session that lasted at least 10 s.
 * The caller polls rm_exporter_session(): when it changes, it resets its ID
 * allocation (ids.h) and starts fresh metering state for every context.
 *
 * Thread safety: every function may be called from any thread, except that
 * rm_exporter_stop() must be the last call.
 */
#ifndef ROCEMETER_USER_EXPORT_H
#define ROCEMETER_USER_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/metrics.h"
#include "rocemeter/report.h"

struct rm_exporter;

/*
 * The exporter's counters, one list: X(member, type, metric, cause, help)
 *   member  the uint64_t field of struct rm_export_stats, and its key in
 *           the daemon's JSON (`status --json` "export", docs/json.md)
 *   type    COUNTER (only grows) or GAUGE
 *   metric  rocemeter_export_<metric> (counters: _total appended); rows of
 *           one metric are adjacent and told apart by cause
 *   cause   the value of the label cause, or NULL
 *   help    the metric's HELP (the first row of a metric gives it)
 * Adding a counter: one row here, counted in export.c.
 */
#define RM_EXPORT_STATS(X)                                                                                 \
	X(sessions, COUNTER, "sessions", NULL, "Transport Sessions established (Templates sent)")          \
	X(reconnects, COUNTER, "reconnects", NULL, "Transport Sessions established after the first")       \
	X(connect_failures, COUNTER, "connect_failures", NULL,                                             \
	  "session attempts that failed: resolve, connect, handshake, authorisation")                      \
	X(sessions_lost, COUNTER, "sessions_lost", NULL,                                                   \
	  "established sessions that ended on an error or a peer close")                                   \
	X(records_sent, COUNTER, "records_sent", NULL, "Data Records written to the session")              \
	X(lost_in_flight, COUNTER, "records_lost_in_flight", NULL,                                         \
	  "of records_sent: in Messages the collector had not acknowledged (TCP) when their session died") \
	X(messages_sent, COUNTER, "messages_sent", NULL, "IPFIX Messages written, Templates included")     \
	X(bytes_sent, COUNTER, "sent_bytes", NULL, "IPFIX octets written, before TLS")                     \
	X(dropped_queue_full, COUNTER, "records_dropped", "queue_full",                                    \
	  "reports not exported, by cause (queue_full, no_session, session_lost, invalid, at_stop)")       \
	X(dropped_no_session, COUNTER, "records_dropped", "no_session", NULL)                              \
	X(dropped_session_lost, COUNTER, "records_dropped", "session_lost", NULL)                          \
	X(dropped_invalid, COUNTER, "records_dropped", "invalid", NULL)                                    \
	X(dropped_at_stop, COUNTER, "records_dropped", "at_stop", NULL)                                    \
	X(queued, GAUGE, "queued_records", NULL, "records in the send queue now")                          \
	X(queue_capacity, GAUGE, "queue_capacity_records", NULL, "bound of the send queue (queue_records)")

/* What each member counts: RM_EXPORT_STATS. */
struct rm_export_stats {
#define RM_EXPORT_STAT_MEMBER_(member, type, metric, cause, help) uint64_t member;
	RM_EXPORT_STATS(RM_EXPORT_STAT_MEMBER_)
#undef RM_EXPORT_STAT_MEMBER_
};

/* The rows of RM_EXPORT_STATS over struct rm_export_stats (metrics.h); n gets their number. */
const struct rm_metric_row *rm_export_stat_rows(size_t *n);

/*
 * Validate *s (copied) and start the transport thread. vlan_ns: 1 when the
 * Templates carry the VLAN namespace keys (namespace = vlan).
 * Refuses (NULL, reason in err) when: export is not enabled, no collector,
 * queue_records is 0; with TLS (transport = tls, the default): ca, cert or
 * key missing or unreadable (the message names the key and file), a key
 * that does not match its certificate, no peer_name. transport = tcp is
 * accepted only because it was set explicitly, with a warning on stderr.
 * s->port 0 means 4740 (TLS) or 4739 (tcp). The queue (s->queue_records
 * reports) is allocated here, once: memory never grows afterwards.
 * capture: its observation_point lines' IDs and NAMEs follow the Templates
 * at every session start (Options Template 261, rm_ipfix_points_msg());
 * NULL or no lines: nothing more is sent.
 */
struct rm_capture_settings;
struct rm_exporter *rm_exporter_start(const struct rm_export_settings *s, int vlan_ns,
				      const struct rm_capture_settings *capture, char *err, size_t errlen);

/*
 * Number of the current established Transport Session: 1 for the first,
 * +1 for every new session (first connect or reconnect); 0 while none is
 * established. Lock-free.
 */
uint64_t rm_exporter_session(struct rm_exporter *x);

/*
 * Queue n reports (epoch and report IDs assigned by the caller for
 * `session`). Never blocks on the network and never allocates. All or
 * nothing: returns 0 when all n are queued; otherwise counts all n as
 * dropped (no_session when none is established or session is 0,
 * session_lost when `session` is not the current one, queue_full when the
 * queue lacks room for n, invalid when a report's family is not 4 or 6)
 * and returns -1. n = 0 returns 0.
 */
int rm_exporter_submit(struct rm_exporter *x, uint64_t session, const struct rm_report *r, size_t n);

/*
 * Wait up to timeout_ms (< 0: no limit) until the queue is empty: every
 * record queued before is written, or counted as dropped because its session
 * ended. Returns 0 when empty, -1 on timeout.
 */
int rm_exporter_flush(struct rm_exporter *x, int timeout_ms);

/*
 * Stop: keep sending what is queued for at most flush_timeout_ms (the rest
 * is counted as dropped_at_stop), send the TLS close_notify (SSL_shutdown),
 * close the connection, join the thread and free everything. NULL is a no-op.
 */
void rm_exporter_stop(struct rm_exporter *x, int flush_timeout_ms);

/* The same, and the final counters (after the thread ended) into *final. */
void rm_exporter_stop_stats(struct rm_exporter *x, int flush_timeout_ms, struct rm_export_stats *final);

/* A consistent copy of the counters. */
void rm_exporter_stats(struct rm_exporter *x, struct rm_export_stats *out);

/* The reason of the last failure ("" if none), for status output. */
void rm_exporter_last_error(struct rm_exporter *x, char *buf, size_t len);

#endif /* ROCEMETER_USER_EXPORT_H */
