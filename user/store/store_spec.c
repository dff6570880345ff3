// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store_spec.c - --store sqlite:FILE|clickhouse:URL, --db, the credentials
 * and CA files: one store for `collect` and `report`.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store_spec.h"

static int set(const char *s)
{
	return s && s[0];
}

int rm_store_spec_resolve(const char *store, const char *db, const char *credentials, const char *ca,
			  struct rm_store_spec *spec, char *err, size_t errlen)
{
	memset(spec, 0, sizeof(*spec));
	if (!set(store) && !set(db)) {
		snprintf(err, errlen, "no store: --store sqlite:FILE|clickhouse:URL (or --db FILE) is required");
		return -EINVAL;
	}
	if (set(store) && !strncmp(store, "sqlite:", 7)) {
		if (!store[7]) {
			snprintf(err, errlen, "--store '%s': sqlite:FILE needs a file", store);
			return -EINVAL;
		}
		if (set(db) && strcmp(db, store + 7)) {
			snprintf(err, errlen, "--db '%s' and --store '%s' name different stores", db, store);
			return -EINVAL;
		}
		db = store + 7;
	} else if (set(store) && !strncmp(store, "clickhouse:", 11)) {
		int rc;

		if (set(db)) {
			snprintf(err, errlen, "--db '%s' and --store '%s' name different stores", db, store);
			return -EINVAL;
		}
		spec->kind = RM_STORE_CLICKHOUSE;
		rc = rm_ch_parse_url(store, &spec->ch, err, errlen);
		if (rc)
			return rc;
		if (set(credentials) && (rc = rm_ch_load_credentials(credentials, &spec->ch, err, errlen)))
			return rc;
		if (set(ca)) {
			if (strncmp(spec->ch.base, "https:", 6)) {
				snprintf(err, errlen, "--store-ca '%s': the store URL is not https", ca);
				return -EINVAL;
			}
			if (access(ca, R_OK)) {
				rc = -errno;
				snprintf(err, errlen, "--store-ca %s: %s", ca, strerror(errno));
				return rc;
			}
			if (strlen(ca) >= sizeof(spec->ch.ca_file)) {
				snprintf(err, errlen, "--store-ca '%s': path too long", ca);
				return -EINVAL;
			}
			snprintf(spec->ch.ca_file, sizeof(spec->ch.ca_file), "%s", ca);
		}
		return 0;
	} else if (set(store)) {
		snprintf(err, errlen, "--store '%s' is not sqlite:FILE or clickhouse:URL", store);
		return -EINVAL;
	}
	if (set(credentials) || set(ca)) {
		snprintf(err, errlen, "--store-credentials and --store-ca are for a clickhouse: store");
		return -EINVAL;
	}
	if (strlen(db) >= sizeof(spec->path)) {
		snprintf(err, errlen, "store file '%s': path too long", db);
		return -EINVAL;
	}
	spec->kind = RM_STORE_SQLITE;
	snprintf(spec->path, sizeof(spec->path), "%s", db);
	return 0;
}
