// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store_ddl - build helper: prints docs/clickhouse/single.sql as the tables
 * of user/store/columns.h make it (user/store/clickhouse/ddl.h). mk/store.mk
 * writes the file with it; tests/unit/test_store_tables.c checks that the
 * shipped file is its output. No options; exit 0, or 1 if stdout fails.
 */
#include <glib.h>
#include <stdio.h>

#include "store/clickhouse/ddl.h"

int main(void)
{
	char *sql = rm_ch_ddl_single();
	int bad = fputs(sql, stdout) == EOF || fflush(stdout) == EOF;

	g_free(sql);
	return bad;
}
