// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * statement.c - a SQLite statement as the SQLite store's files run it
 * (statement.h): the leaf every file of user/store/sqlite/ calls.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "statement.h"

int rm_sq_step_reset(sqlite3_stmt *q)
{
	int rc = sqlite3_step(q);

	/* Bindings are not cleared: every statement binds all its parameters each time. */
	sqlite3_reset(q);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

int64_t rm_sq_scalar(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

int64_t rm_sq_exec_args(sqlite3 *db, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *q;
	va_list ap;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	va_start(ap, fmt);
	for (int i = 0; fmt[i]; i++) {
		if (fmt[i] == 'i')
			sqlite3_bind_int64(q, i + 1, va_arg(ap, int64_t));
		else
			rm_sq_bind_text_or_null(q, i + 1, va_arg(ap, const char *));
	}
	va_end(ap);
	rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? sqlite3_changes(db) : -1;
}

void rm_sq_bind_text_or_null(sqlite3_stmt *q, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, i);
}

int rm_sq_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	default:
		return -EIO;
	}
}

int rm_sq_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	return rm_sq_errno(rc);
}
