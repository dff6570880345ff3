/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * store_spec.h - which store `collect` writes and `report` reads: the value
 * of --store (sqlite:FILE or clickhouse:URL; --db FILE is sqlite:FILE),
 * with the ClickHouse credentials file and CA file (docs/fleet.md).
 */
#ifndef ROCEMETER_STORE_SPEC_H
#define ROCEMETER_STORE_SPEC_H

#include <stddef.h>

#include "store/clickhouse/clickhouse.h"

enum rm_store_kind { RM_STORE_SQLITE, RM_STORE_CLICKHOUSE };

struct rm_store_spec {
	enum rm_store_kind kind;
	char path[256];       /* RM_STORE_SQLITE: the database file */
	struct rm_ch_conf ch; /* RM_STORE_CLICKHOUSE: URL, database, credentials, CA */
};

/*
 * Resolve the store from the settings of a command (each may be NULL or
 * ""): store "sqlite:FILE" or "clickhouse:URL"; db FILE (the older --db,
 * the same as sqlite:FILE; both given must agree); credentials, a file of
 * "user=" and "password=" lines (clickhouse only, read here); ca, a PEM
 * file of CA certificates for https (clickhouse only). what names the
 * options in messages (e.g. "--store"). 0, or -EINVAL / -errno with err:
 * no store given, an unknown scheme, a bad URL, --db and --store naming
 * different stores, a credentials or CA file for sqlite, an unreadable
 * credentials file.
 */
int rm_store_spec_resolve(const char *store, const char *db, const char *credentials, const char *ca,
			  struct rm_store_spec *spec, char *err, size_t errlen);

#endif /* ROCEMETER_STORE_SPEC_H */
