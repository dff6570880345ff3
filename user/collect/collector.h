/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * collector.h - `rocemeter collect`: the IPFIX collector server ([SEQOBS],
 * "Collector Processing", "Security Considerations").
 *
 * One thread, one poll() loop: several exporters at once, each TCP
 * connection its own Transport Session (fresh Templates, fresh epoch
 * high-water IDs). TLS 1.3 with mutual authentication and explicitly
 * authorised peers (user/common/tls.h); plain TCP only when configured explicitly,
 * with a warning. IPFIX Messages split across reads are reassembled. Each
 * Message is decoded (ipfix_decode.h) and validated (collector_rules.h);
 * the complete Messages at hand (of every readable session in one poll()
 * round, at most 64 Messages or 20 ms of work) form a batch, after which
 * the store (backend.h: SQLite, store.h, or ClickHouse) may write: it
 * defers and groups the writes, one
 * transaction about every second and at each session end, never in the
 * middle of a Message. An epoch changed by several Messages is written
 * once, with its latest state. A failed transaction keeps everything
 * queued and is retried; the collector acknowledges nothing to the
 * exporter (IPFIX has no acknowledgement), and a crash loses at most the
 * writes not yet committed (about the last second), never part of a
 * Message. Stored content, verdicts and counters are the same as with one
 * transaction per Message (row IDs included).
 * A framing error, a truncated Message at EOF or a TLS failure ends only
 * that session, with its reason logged and stored.
 *
 * On a hostile network (docs/collector.md "Collector limits"): a TLS
 * connection is a handshake, without session state or sessions row, until
 * its peer is authorised; handshakes have their own pool (max_handshakes,
 * per source, a timeout) in which a new connection evicts the oldest idle
 * one; connections that never become sessions are counted per minute and
 * source. Sessions end on TCP keepalive / TCP_USER_TIMEOUT, on silence
 * (session_timeout_ms) and on an incomplete Message (message_timeout_ms).
 * Each session is read for a bounded number of octets per loop turn.
 * Memory for sessions, epochs and Templates comes from one budget
 * (budget.h); raw records are bounded in octets, per session and in all.
 *
 * The command owns the signals and the loop (rm_collector_run is this):
 *
 *     if (rm_collector_start(cs, &spec, pen, &c) == 0) {
 *             while (!stop && rm_collector_step(c) == 0)
 *                     ;                   (poll(); a signal ends the wait early)
 *             rm_collector_stop(c);
 *     }
 *
 * collector.c is the loop, accept.c the listener and the handshakes,
 * session.c the Transport Sessions, collector_metrics.c the metrics; the
 * leaves they share are batch.c (the batch), refusals.c (the refused
 * connections) and store_check.c (a store call's result).
 * One collector per process, run by one thread; the metrics server's
 * thread reads it under the metrics lock.
 */
#ifndef ROCEMETER_COLLECTOR_H
#define ROCEMETER_COLLECTOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/*
 * The collector's counters since it started: one list for the metrics
 * (`collect --metrics`, docs/metrics.md) and docs/json.md.
 * X(member, type, metric, label, value, help): the metric is
 * rocemeter_collector_<metric> (_total for counters) with label=value when
 * label is not NULL; rows of one metric are adjacent, the first gives HELP.
 * The records_* rows follow enum rm_verdict (collector_rules.h), then
 * undecodable. Adding a counter: one row here, counted where it happens
 * (accept.c, session.c) or read when rendered (collector_metrics.c).
 */
#define RM_COLLECTOR_STATS(X)                                                                                     \
	X(sessions_accepted, COUNTER, "sessions", "outcome", "accepted",                                          \
	  "Transport Sessions by admission: accepted, or refused by max_sessions")                                \
	X(sessions_refused, COUNTER, "sessions", "outcome", "refused", NULL)                                      \
	X(sessions_open, GAUGE, "sessions_open", NULL, NULL, "Transport Sessions open now")                       \
	X(messages, COUNTER, "messages", NULL, NULL, "IPFIX Messages received")                                   \
	X(received_bytes, COUNTER, "received_bytes", NULL, NULL, "IPFIX octets received")                         \
	X(records_accepted, COUNTER, "records", "outcome", "accepted",                                            \
	  "Data Records by the outcome of the collector rules (docs/json.md), undecodable: not bound")            \
	X(records_repeat, COUNTER, "records", "outcome", "repeat", NULL)                                          \
	X(records_stale, COUNTER, "records", "outcome", "stale", NULL)                                            \
	X(records_orphan, COUNTER, "records", "outcome", "orphan", NULL)                                          \
	X(records_unsupported, COUNTER, "records", "outcome", "unsupported", NULL)                                \
	X(records_invalid, COUNTER, "records", "outcome", "invalid", NULL)                                        \
	X(records_after_invalid, COUNTER, "records", "outcome", "after-invalid", NULL)                            \
	X(records_key_conflict, COUNTER, "records", "outcome", "key-conflict", NULL)                              \
	X(records_resource_drop, COUNTER, "records", "outcome", "resource-drop", NULL)                            \
	X(records_unbound, COUNTER, "records", "outcome", "unbound", NULL)                                        \
	X(records_undecodable, COUNTER, "records", "outcome", "undecodable", NULL)                                \
	X(epochs_complete, COUNTER, "epochs", "outcome", "complete",                                              \
	  "epochs settled, by outcome: when the final report is accepted, the epoch invalidated, or an open "     \
	  "epoch retired")                                                                                        \
	X(epochs_incomplete, COUNTER, "epochs", "outcome", "incomplete", NULL)                                    \
	X(epochs_invalid, COUNTER, "epochs", "outcome", "invalid", NULL)                                          \
	X(epochs_invalidated_after_final, COUNTER, "epochs_invalidated_after_final", NULL, NULL,                  \
	  "epochs settled complete or incomplete that a later record invalidated (counted in epochs_total once)") \
	X(epochs_retained, GAUGE, "epochs_retained", NULL, NULL, "epochs retained now (reports expected)")        \
	X(drops_session_limit, COUNTER, "resource_drops", "limit", "session-limit",                               \
	  "collector resource drops by limit (refusals of the collector, never network loss)")                    \
	X(drops_epoch_admission, COUNTER, "resource_drops", "limit", "epoch-admission", NULL)                     \
	X(drops_raw_record_limit, COUNTER, "resource_drops", "limit", "raw-record-limit", NULL)                   \
	X(drops_raw_byte_limit, COUNTER, "resource_drops", "limit", "raw-byte-limit", NULL)                       \
	X(drops_memory_budget, COUNTER, "resource_drops", "limit", "memory-budget", NULL)                         \
	X(drops_database, COUNTER, "resource_drops", "limit", "database", NULL)                                   \
	X(drops_store, COUNTER, "resource_drops", "limit", "store", NULL)                                         \
	X(drops_unread_at_crash, COUNTER, "resource_drops", "limit", "unread-at-crash", NULL)                     \
	X(refused_handshake_failed, COUNTER, "refused_connections", "outcome", "handshake-failed",                \
	  "connections that never became Transport Sessions, by outcome (docs/collector.md)")                     \
	X(refused_handshake_timeout, COUNTER, "refused_connections", "outcome", "handshake-timeout", NULL)        \
	X(refused_handshake_evicted, COUNTER, "refused_connections", "outcome", "handshake-evicted", NULL)        \
	X(refused_not_authorised, COUNTER, "refused_connections", "outcome", "not-authorised", NULL)              \
	X(refused_session_limit, COUNTER, "refused_connections", "outcome", "session-limit", NULL)                \
	X(refused_memory_budget, COUNTER, "refused_connections", "outcome", "memory-budget", NULL)                \
	X(database_unavailable, GAUGE, "database_unavailable", NULL, NULL,                                        \
	  "1 while the database cannot be written (writes wait in memory and are retried)")                       \
	X(store_unavailable, GAUGE, "store_unavailable", NULL, NULL,                                              \
	  "1 while the ClickHouse store cannot be written (rows wait in its buffer and are retried)")             \
	X(store_buffer_bytes, GAUGE, "store_buffer_bytes", NULL, NULL,                                            \
	  "octets of rows waiting in the ClickHouse store's buffer (0 with SQLite)")                              \
	X(store_buffer_capacity_bytes, GAUGE, "store_buffer_capacity_bytes", NULL, NULL,                          \
	  "octets of rows the ClickHouse store's buffer holds at most: store_buffer_bytes (0 with SQLite)")       \
	X(sequence_gaps, COUNTER, "sequence_gaps", NULL, NULL,                                                    \
	  "IPFIX Messages whose Sequence Number was not the expected one")                                        \
	X(sequence_missing_records, COUNTER, "sequence_missing_records", NULL, NULL,                              \
	  "Data Records that forward Sequence Number gaps skipped")                                               \
	X(export_time_backwards, COUNTER, "export_time_backwards", NULL, NULL,                                    \
	  "IPFIX Messages whose Export Time is earlier than the previous one of their domain")                    \
	X(reports_beyond_point_limit, COUNTER, "reports_beyond_point_limit", NULL, NULL,                          \
	  "accepted reports of observation points beyond the first 1024: in no per-point sequence counter")

struct rm_collector_stats {
#define RM_COLLECTOR_STAT_MEMBER_(member, type, metric, label, value, help) uint64_t member;
	RM_COLLECTOR_STATS(RM_COLLECTOR_STAT_MEMBER_)
#undef RM_COLLECTOR_STAT_MEMBER_
};

struct rm_store_spec;
struct rm_collector;

/*
 * Start the collector with settings cs (listen "ADDR:PORT", "[V6]:PORT" or
 * ":PORT"; tls; limits; collector_id, store_buffer_bytes and
 * store_spool_dir for a ClickHouse store), writing to the store spec
 * (store_spec.h), and enterprise IEs under pen: the TLS context, the
 * memory budget, the store and its run row, the listening socket, with
 * cs->metrics set the metrics server (RM_COLLECTOR_STATS and per-session
 * series), then READY to systemd. cs and spec stay the caller's and must
 * outlive the collector. Returns 0 with *out set, the metrics server's
 * lock held (common/metrics.h: the step lets go of it only while it waits
 * in poll()); else *out NULL, everything undone, the message logged
 * (user/common/log.h) and 1 on a setup error or 2 on a configuration
 * error (the store refused for a reason no retry mends,
 * RM_BACKEND_REFUSED).
 */
int rm_collector_start(const struct rm_collect_settings *cs, const struct rm_store_spec *spec, uint32_t pen,
		       struct rm_collector **out);

/*
 * One pass of the loop: wait in poll() until a connection is readable, a
 * new one arrives or the next tick (once a second) is due, not at all
 * while a session has data left from its last turn; a signal ends the wait
 * early (EINTR: install handlers without SA_RESTART). Then every ready
 * connection's bounded turn (handshake or Messages), up to 64 new
 * connections, the batch's commit when no session has more, the timers
 * when a tick is due (handshake, message and session timeouts, epoch
 * inactivity, refused connections' counts), and the ended connections
 * freed. Returns 0, or -1 when the loop cannot go on (out of memory, poll()
 * failed; logged): stop as on SIGTERM.
 */
int rm_collector_step(struct rm_collector *s);

/*
 * Tell systemd STOPPING, end every open session and retire its epochs as
 * incomplete ("collector shutdown"), close the handshakes, write what is
 * queued and the run's stop, log "stopped", then stop the metrics server,
 * close the listener and the store, and free s.
 */
void rm_collector_stop(struct rm_collector *s);

/*
 * rm_collector_start, rm_collector_step until *stop becomes nonzero
 * (SIGINT/SIGTERM handlers set it) or the step fails, rm_collector_stop.
 * Returns rm_collector_start's status, else 0.
 */
int rm_collector_run(const struct rm_collect_settings *cs, const struct rm_store_spec *spec, uint32_t pen,
		     volatile sig_atomic_t *stop);

#endif /* ROCEMETER_COLLECTOR_H */
