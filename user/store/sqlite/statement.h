/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * statement.h - a SQLite statement as the files of the SQLite store
 * (user/store/sqlite/) run it: a prepared one stepped and reset, a one-off
 * one with its parameters, a scalar query, a script; SQLite's result codes
 * as -errno. Calls SQLite only.
 */
#ifndef ROCEMETER_SQ_STATEMENT_H
#define ROCEMETER_SQ_STATEMENT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* Step a prepared statement and reset it (bindings kept). 0 (done or a row) or -1. */
int rm_sq_step_reset(sqlite3_stmt *q);
/* The first column of the first row of sql as an integer; -1 on error. */
int64_t rm_sq_scalar(sqlite3 *db, const char *sql);
/* Run sql with parameters bound by fmt ("i" int64_t, "s" text or NULL, in order). Rows changed, or -1. */
int64_t rm_sq_exec_args(sqlite3 *db, const char *sql, const char *fmt, ...);
/* Bind s as text to parameter i, or NULL when s is NULL. */
void rm_sq_bind_text_or_null(sqlite3_stmt *q, int i, const char *s);
/* An SQLite result code as -errno: -ENOMEM, -EBUSY (busy, locked), -ENOSPC, -EROFS, -EACCES, else -EIO. */
int rm_sq_errno(int rc);
/* Run the statements of sql (sqlite3_exec). 0, or -errno (rm_sq_errno) with SQLite's message in err. */
int rm_sq_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);

#endif /* ROCEMETER_SQ_STATEMENT_H */
