/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ddl.h - the fleet store's schema on one ClickHouse server made from the
 * tables of user/store/columns.h: the text of docs/clickhouse/single.sql
 * (tests/lib/store_ddl writes it; scripts/clickhouse-cluster-ddl makes
 * cluster.sql from it; clickhouse.c compiles both in).
 */
#ifndef ROCEMETER_CH_DDL_H
#define ROCEMETER_CH_DDL_H

#include <glib.h>

struct rm_stored_table;

/* single.sql's text: its comment, then a CREATE TABLE IF NOT EXISTS per table ClickHouse keeps. g_free it. */
char *rm_ch_ddl_single(void);
/* Append t's statement as single.sql holds it (a blank line, CREATE TABLE IF NOT EXISTS ...;). */
void rm_ch_ddl_table(GString *g, const struct rm_stored_table *t);

#endif /* ROCEMETER_CH_DDL_H */
