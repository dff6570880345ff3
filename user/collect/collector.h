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
 * round, at most 64 Messages or 20 ms of work) are committed to SQLite
 * (store.h) in one transaction, a Message always whole. An epoch changed by
 * several of them is written once, with its latest state, just before the
 * commit. A report counts as accepted once its transaction is committed;
 * the collector acknowledges nothing to the exporter before (IPFIX has no
 * acknowledgement), and a crash loses only the uncommitted batch, never
 * part of a Message. Stored content, verdicts and counters are the same as
 * with one transaction per Message (row IDs included).
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
 */
#ifndef ROCEMETER_COLLECTOR_H
#define ROCEMETER_COLLECTOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/*
 * Run the collector with settings cs (listen "ADDR:PORT", "[V6]:PORT" or
 * ":PORT"; db; tls; limits) and enterprise IEs under pen, until *stop
 * becomes nonzero (SIGINT/SIGTERM handlers set it); then every open
 * session is ended and its epochs retired as incomplete ("collector
 * shutdown"). Logs through user/common/log.h. Returns 0, or 1 on a setup
 * error (message logged).
 */
int rm_collector_run(const struct rm_collect_settings *cs, uint32_t pen, volatile sig_atomic_t *stop);

/*
 * The memory budget must hold the handshake reservation (max_handshakes x
 * RM_BUDGET_HANDSHAKE_BYTES) and one session: 0, or -EINVAL with a
 * one-line reason naming max_memory_bytes in err.
 */
int rm_collect_memory_check(const struct rm_collect_settings *cs, char *err, size_t errlen);

#endif /* ROCEMETER_COLLECTOR_H */
