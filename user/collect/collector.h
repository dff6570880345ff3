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
 */
#ifndef ROCEMETER_COLLECTOR_H
#define ROCEMETER_COLLECTOR_H

#include <signal.h>
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

#endif /* ROCEMETER_COLLECTOR_H */
