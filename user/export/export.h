/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * export.h - the Exporting Process's transport: IPFIX over TCP with mutually
 * authenticated TLS 1.3 (seed 000, "Export Profile and Template": TCP
 * binding, "reconnection creates a new session and new epochs"; "Security
 * Considerations"; DESIGN.md decision 5).
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
#include "rocemeter/report.h"

struct rm_exporter;

struct rm_export_stats {
	uint64_t sessions;             /* Transport Sessions established (templates sent) */
	uint64_t reconnects;           /* sessions established after the first */
	uint64_t connect_failures;     /* attempts that failed: resolve, connect, handshake, authorisation */
	uint64_t sessions_lost;        /* established sessions that ended on an error or peer close */
	uint64_t records_sent;         /* Data Records written to the session (handed to TCP) */
	uint64_t lost_in_flight;       /* of records_sent: in Messages the collector had not acknowledged
					* (TCP) when their session died */
	uint64_t messages_sent;        /* IPFIX Messages written, Templates messages included */
	uint64_t bytes_sent;           /* IPFIX octets written, before TLS */
	uint64_t dropped_queue_full;   /* submitted while the queue had no room */
	uint64_t dropped_no_session;   /* submitted while no session was established */
	uint64_t dropped_session_lost; /* queued or submitted for a session that had ended */
	uint64_t dropped_invalid;      /* family not 4 or 6 */
	uint64_t dropped_at_stop;      /* still queued when the stop's flush timeout passed */
	uint64_t queued;               /* records in the queue now */
	uint64_t queue_capacity;       /* s->queue_records */
};

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
 */
struct rm_exporter *rm_exporter_start(const struct rm_export_settings *s, int vlan_ns, char *err,
				      size_t errlen);

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
