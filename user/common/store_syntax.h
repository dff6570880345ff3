/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * store_syntax.h - the syntax of a ClickHouse store URL and of a collector
 * ID (docs/fleet.md), pure string checks without a network: one
 * implementation for the configuration loader (check-config and collect
 * alike) and the collector's ClickHouse client (user/store/clickhouse/clickhouse.c).
 */
#ifndef ROCEMETER_STORE_SYNTAX_H
#define ROCEMETER_STORE_SYNTAX_H

#include <stddef.h>

#define RM_COLLECTOR_ID_MAX    64   /* octets of a collector ID */
#define RM_CH_HTTP_PORT        8123 /* a URL without a port: ClickHouse's HTTP ports */
#define RM_CH_HTTPS_PORT       8443
#define RM_CH_DEFAULT_DATABASE "default"

/*
 * Parse "[clickhouse:]http[s]://HOST[:PORT][/][?database=DB]": HOST a name,
 * an IPv4 address or [IPv6]; PORT 1..65535, none is RM_CH_HTTP_PORT (http)
 * or RM_CH_HTTPS_PORT (https); DB letters, digits and '_' (none:
 * RM_CH_DEFAULT_DATABASE). A user or password in the URL is refused
 * (credentials come from a file). base gets "http[s]://HOST:PORT/", database
 * the name (either may be NULL). 0, or -EINVAL with err: the URL in quotes
 * and the reason, without a prefix (callers name the key or option).
 */
int rm_store_url_parse(const char *url, char *base, size_t baselen, char *database, size_t dblen, char *err,
		       size_t errlen);

/*
 * A collector ID is 1..RM_COLLECTOR_ID_MAX octets of letters, digits,
 * '.', '-', '_' and ':'. 0, or -EINVAL with err "collector_id: 'ID' is not ...".
 */
int rm_collector_id_check(const char *id, char *err, size_t errlen);

#endif /* ROCEMETER_STORE_SYNTAX_H */
