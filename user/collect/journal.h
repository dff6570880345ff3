/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * journal.h - the collector's received-Messages journal (docs/collector.md
 * "After a crash"): every octet a Transport Session reads is appended to
 * its file before it is decoded, so that after kill -9 or a crash the next
 * start counts the records read and never committed as a collector
 * resource drop of their session (SQLite and ClickHouse stores). One file per open session, bounded by
 * rotation; used by session.c and collector.c, one thread.
 */
#ifndef ROCEMETER_COLLECT_JOURNAL_H
#define ROCEMETER_COLLECT_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

struct conn;
struct rm_backend;
struct rm_journal;

/*
 * A session's file is rewritten (its Templates, then the octets not yet
 * decoded) once it holds this many octets, at a Message boundary.
 */
#define RM_JOURNAL_ROTATE_BYTES (4u << 20)

/*
 * The journal of store in the directory dir (made when missing, with its
 * parent): DATABASE.received for SQLite, STORE_SPOOL_DIR/COLLECTOR_ID.TAG.received
 * for ClickHouse (backend.h journal_dir). NULL with err "" when the store
 * keeps no journal; NULL with err set on failure.
 */
struct rm_journal *rm_journal_open(const char *dir, struct rm_backend *store, uint32_t pen, char *err, size_t errlen);
/* Close the files; a session's file stays until its end is committed (the next start reads it). NULL: no-op. */
void rm_journal_close(struct rm_journal *j);
/*
 * At the start, after the run's row: every file an earlier run left is
 * read, its records compared with its committed sessions row
 * (rm_backend_session_lost) and removed. Logs what was lost. 0, or -1 if
 * some file had to be kept (the database refused).
 */
int rm_journal_recover(struct rm_journal *j, uint64_t now_ms);
/* A session was admitted: its file (c->jfd). A failure is logged; the session goes on without. */
void rm_journal_session_start(struct rm_journal *j, struct conn *c);
/* Octets just read by session c, before they are decoded. */
void rm_journal_append(struct conn *c, const uint8_t *buf, size_t n);
/*
 * A Message of c was decoded: the store's row of c gets its counts, so that
 * the next transaction says which records it covers. A transaction the
 * store writes in the middle of a Message (its memory bounds) covers part
 * of it; a crash before the next one counts that Message's records as lost
 * (at most one Message counted too many, none too few).
 */
void rm_journal_counted(struct conn *c);
/* Between Messages: rotate c's file when it is due (c->buf holds the octets not yet decoded). */
void rm_journal_rotate_due(struct conn *c);
/*
 * Session c ended; its end was queued when the store had committed gen
 * transactions (rm_backend_transactions): its file goes once a later
 * transaction is committed.
 */
void rm_journal_session_end(struct conn *c, uint64_t gen);
/* Remove the files of ended sessions whose end is committed now. */
void rm_journal_tick(struct rm_journal *j);

#endif /* ROCEMETER_COLLECT_JOURNAL_H */
